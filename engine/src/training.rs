//! Parallel DNN training as the enhanced Marey's graph (Wei et al., 2024) reads it: devices in
//! pipeline stages, each running a sequence of operators (forward and backward computation,
//! collectives, point-to-point sends and receives) grouped into training steps; and the
//! analyses of the paper on that model: timestamp alignment, the rules that flag slow devices,
//! unbalanced stages and stragglers, and the per-step breakdown of the training overview.
//!
//! Sources (Kineto, JAX and PerfFlowAspect profiles, the `gen:training` generator) fill a
//! [`Builder`]; [`Builder::finish`] orders everything and derives what the files leave out
//! (stages from the send/receive graph, steps from the operators' repetition).

use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// What an operator does, from its name and arguments ([`classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Class {
    Forward = 0,
    Backward = 1,
    /// Computation that is neither (optimizer steps, copies, element-wise kernels).
    Compute = 2,
    AllReduce = 3,
    AllGather = 4,
    ReduceScatter = 5,
    Broadcast = 6,
    AllToAll = 7,
    Send = 8,
    Recv = 9,
}

/// The four groups the view colours by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    Computation,
    Collective,
    Send,
    Recv,
}

impl Class {
    pub const ALL: [Class; 10] = [
        Class::Forward,
        Class::Backward,
        Class::Compute,
        Class::AllReduce,
        Class::AllGather,
        Class::ReduceScatter,
        Class::Broadcast,
        Class::AllToAll,
        Class::Send,
        Class::Recv,
    ];

    pub fn from_u8(v: u8) -> Class {
        Class::ALL.get(v as usize).copied().unwrap_or(Class::Compute)
    }

    pub fn label(self) -> &'static str {
        match self {
            Class::Forward => "forward",
            Class::Backward => "backward",
            Class::Compute => "other computation",
            Class::AllReduce => "all-reduce",
            Class::AllGather => "all-gather",
            Class::ReduceScatter => "reduce-scatter",
            Class::Broadcast => "broadcast",
            Class::AllToAll => "all-to-all",
            Class::Send => "send",
            Class::Recv => "receive",
        }
    }

    pub fn group(self) -> Group {
        match self {
            Class::Forward | Class::Backward | Class::Compute => Group::Computation,
            Class::Send => Group::Send,
            Class::Recv => Group::Recv,
            _ => Group::Collective,
        }
    }

    pub fn is_compute(self) -> bool {
        self.group() == Group::Computation
    }
}

/// Classifies an operator by its name (kernel, XLA op, NCCL kernel) and, where the profile has
/// it, Kineto's `Collective name` argument.
pub fn classify(name: &str, collective: Option<&str>) -> Class {
    let by = |s: &str| -> Option<Class> {
        let l: String = s.to_ascii_lowercase().chars().filter(|c| !matches!(c, '-' | '_' | ' ')).collect();
        let has = |w: &str| l.contains(w);
        if has("allreduce") {
            Some(Class::AllReduce)
        } else if has("allgather") {
            Some(Class::AllGather)
        } else if has("reducescatter") {
            Some(Class::ReduceScatter)
        } else if has("alltoall") {
            Some(Class::AllToAll)
        // A bare "broadcast" in an XLA name is an element-wise op, not a collective.
        } else if has("broadcast") && (has("nccl") || collective.is_some()) {
            Some(Class::Broadcast)
        } else if has("recv") || has("receive") {
            Some(Class::Recv)
        } else if has("send") || has("collectivepermute") || has("ppermute") {
            Some(Class::Send)
        } else {
            None
        }
    };
    if let Some(c) = collective.and_then(by) {
        return c;
    }
    if let Some(c) = by(name) {
        return c;
    }
    let l = name.to_ascii_lowercase();
    if l.contains("backward") || l.contains("bwd") || l.contains("grad") || l.starts_with("transpose(") {
        Class::Backward
    } else if l.contains("optimizer")
        || l.contains("adam")
        || l.contains("sgd")
        || l.contains("memcpy")
        || l.contains("memset")
    {
        Class::Compute
    } else {
        Class::Forward
    }
}

/// One device (a GPU, a TPU core, a process): its row in the view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    /// Global rank (Kineto's `distributedInfo.rank`, JAX's device id).
    pub rank: u32,
    /// Pipeline stage, from 0.
    pub stage: u32,
    /// Peak memory in bytes where the profile records it, else 0.
    pub memory: u64,
    /// The host it ran on, where the profile says (Kineto's `host_name`); empty where unknown.
    pub host: String,
}

/// Operators, grouped by device in device order and by start within a device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ops {
    pub device: Vec<u32>,
    pub name: Vec<u32>,
    pub class: Vec<u8>,
    /// Nanoseconds from the trace's first operator.
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// Floating-point operations (0 where unknown).
    pub flops: Vec<f32>,
    /// Bytes a communication operator moves (0 where unknown).
    pub bytes: Vec<u64>,
    /// The other device of a send or receive, else `u32::MAX`.
    pub peer: Vec<u32>,
    /// How many operators of the same name came before this one on its device: the same
    /// operator on another device has the same `(name, nth)` (the Marey "train").
    pub nth: Vec<u32>,
    /// A send's receive and a receive's send (matched by source, destination and order), else
    /// `u32::MAX`.
    pub pair: Vec<u32>,
    /// `(name, nth)` numbered densely: the operator's identity across devices.
    pub instance: Vec<u32>,
}

impl Ops {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    pub fn class(&self, i: usize) -> Class {
        Class::from_u8(self.class[i])
    }
}

/// A training step: its label and span (nanoseconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub label: String,
    pub start: u64,
    pub end: u64,
}

/// A training run's operators on its devices.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Training {
    /// Ordered by stage, then rank.
    pub devices: Vec<Device>,
    pub stages: u32,
    pub ops: Ops,
    /// Operators of device `d` are `first[d]..first[d + 1]`.
    pub first: Vec<u32>,
    pub names: Vec<String>,
    pub steps: Vec<Step>,
    /// How many distinct [`Ops::instance`] values there are.
    pub instances: u32,
    /// Where the profile came from ("Kineto", "JAX", "PerfFlowAspect", "generator").
    pub source: String,
    /// Whether any operator has FLOPs.
    pub has_flops: bool,
    /// Where the pipeline stages came from: "sends" (the direction of the first send between
    /// two devices), "HLO pairs" (XLA's collective-permute pairs), "the source" (a generator),
    /// "--stages" (the user), or "none" (one stage: nothing tells them apart).
    pub stages_from: String,
}

impl Training {
    /// Whether every index the model holds points where it should (a model read back from a
    /// store's file is checked before any view indexes with it).
    pub fn check(&self) -> Result<(), String> {
        let o = &self.ops;
        let n = o.start.len();
        let columns = [
            o.device.len(),
            o.name.len(),
            o.class.len(),
            o.end.len(),
            o.flops.len(),
            o.bytes.len(),
            o.peer.len(),
            o.nth.len(),
            o.pair.len(),
            o.instance.len(),
        ];
        if columns.iter().any(|&c| c != n) {
            return Err(format!("operator columns of {columns:?} rows where the starts have {n}"));
        }
        let devices = self.devices.len() as u32;
        if self.first.len() != self.devices.len() + 1
            || self.first.first().is_some_and(|&f| f != 0)
            || self.first.last().is_some_and(|&l| l as usize != n)
            || self.first.windows(2).any(|w| w[0] > w[1])
        {
            return Err("the devices' first operators do not cover the operators in order".into());
        }
        let names = self.names.len() as u32;
        let in_range = |v: &[u32], max: u32| v.iter().all(|&x| x < max || x == u32::MAX);
        if !o.device.iter().all(|&d| d < devices)
            || !o.name.iter().all(|&k| k < names)
            || !in_range(&o.peer, devices)
            || !in_range(&o.pair, n as u32)
        {
            return Err("an operator names a device, name, peer or pair that does not exist".into());
        }
        if self.devices.iter().any(|d| d.stage >= self.stages.max(1)) {
            return Err(format!("a device's stage is past the {} stages", self.stages));
        }
        Ok(())
    }

    /// The run with the stages the user gives: stage `k` holds the devices whose rank lies in
    /// `ranges[k]` (inclusive). A device in no range is an error naming it.
    pub fn restaged(&self, ranges: &[(u32, u32)]) -> Result<Training, String> {
        let mut b = Builder { source: self.source.clone(), ..Default::default() };
        for (d, dev) in self.devices.iter().enumerate() {
            let stage = ranges.iter().position(|&(a, z)| (a..=z).contains(&dev.rank)).ok_or_else(|| {
                let rank = format!("rank {}", dev.rank);
                let who = if dev.name == rank { rank } else { format!("{} ({rank})", dev.name) };
                format!("--stages: {who} is in none of the stages given")
            })?;
            let k = b.device_keyed(dev.name.clone(), dev.rank, Some(stage as u32), format!("{d}"));
            b.memory(k, dev.memory);
            for i in self.ops_of(d) {
                let o = &self.ops;
                let peer = o.peer[i];
                b.op(
                    k,
                    RawOp {
                        name: self.names[o.name[i] as usize].clone(),
                        class: o.class(i),
                        start: o.start[i],
                        end: o.end[i],
                        flops: o.flops[i],
                        bytes: o.bytes[i],
                        peer_rank: self.devices.get(peer as usize).map(|p| p.rank),
                    },
                );
            }
        }
        for s in &self.steps {
            b.step(s.label.clone(), s.start, s.end);
        }
        let mut t = b.finish()?;
        t.stages_from = "--stages".into();
        Ok(t)
    }

    pub fn ops_of(&self, d: usize) -> std::ops::Range<usize> {
        self.first[d] as usize..self.first[d + 1] as usize
    }

    /// Devices of each stage, in order.
    pub fn stage_devices(&self) -> Vec<std::ops::Range<usize>> {
        let mut out = vec![0..0; self.stages as usize];
        for (s, r) in out.iter_mut().enumerate() {
            let a = self.devices.partition_point(|d| d.stage < s as u32);
            let b = self.devices.partition_point(|d| d.stage <= s as u32);
            *r = a..b;
        }
        out
    }

    /// The first and last nanosecond of any operator.
    pub fn span(&self) -> (u64, u64) {
        let a = self.ops.start.iter().copied().min().unwrap_or(0);
        let b = self.ops.end.iter().copied().max().unwrap_or(a);
        (a, b.max(a))
    }
}

/// One operator as a source reads it.
#[derive(Clone, Debug)]
pub struct RawOp {
    pub name: String,
    pub class: Class,
    pub start: u64,
    pub end: u64,
    pub flops: f32,
    pub bytes: u64,
    /// The peer's rank for sends and receives.
    pub peer_rank: Option<u32>,
}

/// An operator as the builder keeps it: its name interned (a run of a thousand ranks repeats a
/// few hundred kernel names millions of times).
#[derive(Clone, Copy)]
struct Op {
    name: u32,
    class: Class,
    start: u64,
    end: u64,
    flops: f32,
    bytes: u64,
    peer_rank: Option<u32>,
}

/// Collects devices and operators in any order.
#[derive(Default)]
pub struct Builder {
    devices: Vec<(Device, Option<u32>, Vec<Op>)>,
    names: Vec<String>,
    name_of: HashMap<String, u32>,
    keys: HashMap<String, usize>,
    steps: Vec<Step>,
    pub source: String,
}

impl Builder {
    /// Adds a device; `stage` where the source knows it (else from the send/receive graph).
    pub fn device(&mut self, name: String, rank: u32, stage: Option<u32>) -> usize {
        self.devices.push((Device { name, rank, stage: 0, memory: 0, host: String::new() }, stage, Vec::new()));
        self.devices.len() - 1
    }

    /// [`Builder::device`] under a key the source finds it by again ([`Builder::find`]).
    pub fn device_keyed(&mut self, name: String, rank: u32, stage: Option<u32>, key: String) -> usize {
        let d = self.device(name, rank, stage);
        self.keys.insert(key, d);
        d
    }

    /// Says which host `device` ran on.
    pub fn host(&mut self, device: usize, host: &str) {
        if let Some(d) = self.devices.get_mut(device) {
            d.0.host = host.to_string();
        }
    }

    pub fn find(&self, key: &str) -> Option<usize> {
        self.keys.get(key).copied()
    }

    pub fn rank(&self, device: usize) -> u32 {
        self.devices[device].0.rank
    }

    pub fn op(&mut self, device: usize, op: RawOp) {
        let name = match self.name_of.get(op.name.as_str()) {
            Some(&k) => k,
            None => {
                let k = self.names.len() as u32;
                self.name_of.insert(op.name.clone(), k);
                self.names.push(op.name);
                k
            }
        };
        let RawOp { class, start, end, flops, bytes, peer_rank, .. } = op;
        self.devices[device].2.push(Op { name, class, start, end, flops, bytes, peer_rank });
    }

    pub fn memory(&mut self, device: usize, bytes: u64) {
        let m = &mut self.devices[device].0.memory;
        *m = (*m).max(bytes);
    }

    pub fn step(&mut self, label: String, start: u64, end: u64) {
        self.steps.push(Step { label, start, end: end.max(start) });
    }

    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The model: devices ordered by stage and rank, operators by start, times from the first
    /// operator, stages and steps derived where the source had none. `Err` where there is no
    /// device with an operator.
    pub fn finish(mut self) -> Result<Training, String> {
        self.devices.retain(|d| !d.2.is_empty());
        if self.devices.is_empty() {
            return Err("has no device lanes with operators (GPU kernels, XLA ops or process slices)".into());
        }
        let rank_index: HashMap<u32, usize> = self.devices.iter().enumerate().map(|(i, d)| (d.0.rank, i)).collect();
        let given = self.devices.iter().all(|d| d.1.is_some());
        let stages = derive_stages(&self.devices, &rank_index);
        for (d, s) in self.devices.iter_mut().zip(&stages) {
            d.0.stage = *s;
        }
        self.devices.sort_by_key(|d| (d.0.stage, d.0.rank));
        let rank_to_dev: HashMap<u32, u32> =
            self.devices.iter().enumerate().map(|(i, d)| (d.0.rank, i as u32)).collect();
        let t0 = self.devices.iter().flat_map(|d| d.2.iter().map(|o| o.start)).min().unwrap_or(0);
        let mut t = Training { source: self.source, ..Default::default() };
        // Names numbered in order of first use, devices in their order.
        let mut final_name = vec![u32::MAX; self.names.len()];
        t.first.push(0);
        for (di, (dev, _, mut ops)) in self.devices.into_iter().enumerate() {
            ops.sort_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
            let mut seen: HashMap<u32, u32> = HashMap::default();
            for o in ops {
                let k = o.name as usize;
                if final_name[k] == u32::MAX {
                    final_name[k] = t.names.len() as u32;
                    t.names.push(std::mem::take(&mut self.names[k]));
                }
                let name = final_name[k];
                let nth = seen.entry(name).or_insert(0);
                let p = &mut t.ops;
                p.device.push(di as u32);
                p.name.push(name);
                p.class.push(o.class as u8);
                p.start.push(o.start - t0);
                p.end.push(o.end.max(o.start) - t0);
                p.flops.push(o.flops);
                t.has_flops |= o.flops > 0.0;
                p.bytes.push(o.bytes);
                p.peer.push(o.peer_rank.and_then(|r| rank_to_dev.get(&r).copied()).unwrap_or(u32::MAX));
                p.nth.push(*nth);
                *nth += 1;
            }
            t.first.push(t.ops.len() as u32);
            t.devices.push(dev);
        }
        t.stages = t.devices.iter().map(|d| d.stage + 1).max().unwrap_or(1);
        t.stages_from = if given {
            "the source".into()
        } else if t.stages > 1 {
            "sends".into()
        } else {
            "none".into()
        };
        pair_sends(&mut t.ops);
        let mut inst: HashMap<(u32, u32), u32> = HashMap::default();
        t.ops.instance = (0..t.ops.len())
            .map(|i| {
                let next = inst.len() as u32;
                *inst.entry((t.ops.name[i], t.ops.nth[i])).or_insert(next)
            })
            .collect();
        t.instances = inst.len() as u32;
        t.steps = if self.steps.is_empty() {
            steps_by_repetition(&t)
        } else {
            // Files of several ranks each mark the step on their clock: one step per label,
            // from its earliest start to its latest end.
            let mut by: HashMap<String, usize> = HashMap::default();
            let mut s: Vec<Step> = Vec::new();
            for x in self.steps {
                let (a, e) = (x.start.saturating_sub(t0), x.end.saturating_sub(t0));
                match by.get(&x.label) {
                    Some(&k) => {
                        s[k].start = s[k].start.min(a);
                        s[k].end = s[k].end.max(e);
                    }
                    None => {
                        by.insert(x.label.clone(), s.len());
                        s.push(Step { label: x.label, start: a, end: e });
                    }
                }
            }
            s.sort_by_key(|x| x.start);
            s
        };
        Ok(t)
    }
}

/// Matches the k-th send from `a` to `b` with the k-th receive on `b` from `a`.
fn pair_sends(ops: &mut Ops) {
    ops.pair = vec![u32::MAX; ops.len()];
    let mut sends: HashMap<(u32, u32), Vec<u32>> = HashMap::default();
    let mut recvs: HashMap<(u32, u32), Vec<u32>> = HashMap::default();
    for i in 0..ops.len() {
        let (d, p) = (ops.device[i], ops.peer[i]);
        if p == u32::MAX {
            continue;
        }
        match ops.class(i) {
            Class::Send => sends.entry((d, p)).or_default().push(i as u32),
            Class::Recv => recvs.entry((p, d)).or_default().push(i as u32),
            _ => {}
        }
    }
    for (k, s) in sends {
        let Some(r) = recvs.get(&k) else { continue };
        for (&a, &b) in s.iter().zip(r) {
            ops.pair[a as usize] = b;
            ops.pair[b as usize] = a;
        }
    }
}

/// Stages: given ones where every device has one, else each device's depth in the graph of
/// sends (a device that receives from stage `s` is in `s + 1`); devices joined by no send are
/// stage 0. Stage numbers are made consecutive.
fn derive_stages(devices: &[(Device, Option<u32>, Vec<Op>)], rank_index: &HashMap<u32, usize>) -> Vec<u32> {
    if devices.iter().all(|d| d.1.is_some()) {
        return compact(devices.iter().map(|d| d.1.unwrap_or(0)).collect());
    }
    let n = devices.len();
    // Activations flow forward first and gradients back later: the earliest send between two
    // devices gives the direction of their edge.
    let mut first: HashMap<(usize, usize), u64> = HashMap::default();
    for (i, d) in devices.iter().enumerate() {
        for o in &d.2 {
            let Some(&j) = o.peer_rank.and_then(|r| rank_index.get(&r)) else { continue };
            let (a, b) = match o.class {
                Class::Send => (i, j),
                Class::Recv => (j, i),
                _ => continue,
            };
            if a != b {
                let e = first.entry((a, b)).or_insert(u64::MAX);
                *e = (*e).min(o.start);
            }
        }
    }
    let mut to: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (&(a, b), &at) in &first {
        if first.get(&(b, a)).is_none_or(|&back| at < back || (at == back && a < b)) {
            to[a].push(b);
        }
    }
    // A ring (a cyclic permutation, as JAX's pipelines write `ppermute` with
    // `perm = [(i, (i + 1) % n)]`): one stage per device in ring order, from the first device.
    if let Some(ring) = ring_order(&to) {
        let mut stage = vec![0u32; n];
        for (k, &d) in ring.iter().enumerate() {
            stage[d] = k as u32;
        }
        return stage;
    }
    // Longest-path depth by relaxation, bounded by n rounds (a cycle — a ring of sends — stops
    // growing there and stays as it is).
    let mut depth = vec![0u32; n];
    for _ in 0..n.min(64) {
        let mut changed = false;
        for a in 0..n {
            for &b in &to[a] {
                if depth[b] < depth[a] + 1 && depth[a] + 1 < n as u32 {
                    depth[b] = depth[a] + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    compact(depth)
}

/// The devices in ring order from device 0 where the edges `to` form one cycle through every
/// device (each sends to exactly one and receives from exactly one); `None` otherwise.
fn ring_order(to: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = to.len();
    if n < 3 || to.iter().any(|t| t.len() != 1) {
        return None;
    }
    let mut order = vec![0usize];
    let mut seen = vec![false; n];
    seen[0] = true;
    let mut at = 0;
    loop {
        let next = to[at][0];
        if next == 0 {
            break;
        }
        if seen[next] {
            return None;
        }
        seen[next] = true;
        order.push(next);
        at = next;
    }
    (order.len() == n).then_some(order)
}

fn compact(stages: Vec<u32>) -> Vec<u32> {
    let mut used: Vec<u32> = stages.clone();
    used.sort_unstable();
    used.dedup();
    stages.iter().map(|s| used.partition_point(|u| u < s) as u32).collect()
}

/// Steps from the repetition of operators where the profile marks none: the first device's
/// first operator name starts a step each time it recurs (one step over everything when it
/// does not).
fn steps_by_repetition(t: &Training) -> Vec<Step> {
    let (a, b) = t.span();
    let r = t.ops_of(0);
    let Some(first) = r.clone().next().map(|i| t.ops.name[i]) else { return Vec::new() };
    let starts: Vec<u64> = r.filter(|&i| t.ops.name[i] == first).map(|i| t.ops.start[i]).collect();
    if starts.len() < 2 {
        return vec![Step { label: "whole trace".into(), start: a, end: b }];
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(b);
        out.push(Step { label: format!("step {}", k + 1), start: if k == 0 { a } else { s }, end: e });
    }
    out
}

/// Which timestamp alignment to apply (the paper's §5.2.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Align {
    /// As recorded.
    None,
    /// Within each stage on the first all-reduce.
    Stage,
    /// Within stages, then between consecutive stages on the first send/receive pair.
    #[default]
    Full,
}

/// The shift (ns) added to each device's times. A collective or a send/receive pair completes
/// on every participant at one moment, so alignment puts the ends of the chosen operators
/// together (their starts differ by the waiting the view is there to show).
pub fn offsets(t: &Training, align: Align) -> Vec<i64> {
    let mut off = vec![0i64; t.devices.len()];
    if align == Align::None {
        return off;
    }
    let first_of = |d: usize, pred: &dyn Fn(usize) -> bool| t.ops_of(d).find(|&i| pred(i));
    let stages = t.stage_devices();
    for range in &stages {
        let ends: Vec<(usize, u64)> = range
            .clone()
            .filter_map(|d| first_of(d, &|i| t.ops.class(i) == Class::AllReduce).map(|i| (d, t.ops.end[i])))
            .collect();
        let Some(&(_, reference)) = ends.first() else { continue };
        for (d, e) in ends {
            off[d] = reference as i64 - e as i64;
        }
    }
    if align == Align::Full {
        for (s, devices) in stages.iter().enumerate().skip(1) {
            // The first receive on this stage from a device of an earlier stage, and that
            // device's first send to the receiver.
            let pair = devices.clone().find_map(|d| {
                let r = first_of(d, &|i| {
                    t.ops.class(i) == Class::Recv
                        && (t.ops.peer[i] as usize) < t.devices.len()
                        && t.devices[t.ops.peer[i] as usize].stage < s as u32
                })?;
                let p = t.ops.peer[r] as usize;
                let snd = first_of(p, &|i| t.ops.class(i) == Class::Send && t.ops.peer[i] as usize == d)?;
                Some((d, r, p, snd))
            });
            let Some((d, r, p, snd)) = pair else { continue };
            let shift = (t.ops.end[snd] as i64 + off[p]) - (t.ops.end[r] as i64 + off[d]);
            for x in devices.clone() {
                off[x] += shift;
            }
        }
    }
    off
}

/// The paper's rules (§5.2.4) and the straggler test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A device's FLOPS (FLOPs per second of computation) 20% or more below the devices' mean.
    SlowDevice,
    /// A stage's FLOPs per device (its lower median device's) 20% or more above the stages' mean.
    HeavyStage,
    /// A device that starts the collectives it shares with others last, by more than half of
    /// their median duration, in at least half of them, and computes over 10% longer than its
    /// stage's median device (one late only from waiting on a slow device upstream is not).
    Straggler,
}

/// What a rule found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub rule: Rule,
    pub device: Option<u32>,
    pub stage: Option<u32>,
    /// The measured value and the mean it is compared with.
    pub value: f64,
    pub mean: f64,
    pub message: String,
}

/// Thresholds of the rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// FLOPS below (1 - this) x mean flags a device (0.2).
    pub slow: f64,
    /// Stage FLOPs above (1 + this) x mean flags a stage (0.2).
    pub heavy: f64,
    /// A late start beyond this share of the collective's median duration counts (0.5).
    pub late: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self { slow: 0.2, heavy: 0.2, late: 0.5 }
    }
}

/// Per device: computation time (ns) and FLOPs.
pub fn compute_totals(t: &Training) -> Vec<(u64, f64)> {
    (0..t.devices.len())
        .map(|d| {
            t.ops_of(d)
                .filter(|&i| t.ops.class(i).is_compute())
                .fold((0u64, 0f64), |(ns, f), i| (ns + (t.ops.end[i] - t.ops.start[i]), f + t.ops.flops[i] as f64))
        })
        .collect()
}

/// Per device: FLOPS (FLOPs per second of computation), or the computation time (ns) where the
/// profile has no FLOPs; `totals` from [`compute_totals`].
pub fn rates(t: &Training, totals: &[(u64, f64)]) -> Vec<f64> {
    totals
        .iter()
        .map(|&(ns, f)| if t.has_flops { if ns > 0 { f / (ns as f64 * 1e-9) } else { 0.0 } } else { ns as f64 })
        .collect()
}

/// Runs the rules. Without FLOPs in the profile, computation time stands in for them (a slow
/// device then shows as one that computes longer) and the messages say so.
pub fn rules(t: &Training, offsets: &[i64], th: Thresholds) -> Vec<Finding> {
    let mut out = Vec::new();
    let totals = compute_totals(t);
    let n = t.devices.len();
    let name = |d: usize| t.devices[d].name.clone();
    // Slow devices.
    if n >= 2 {
        let rate = rates(t, &totals);
        // Without FLOPs, a slow device computes longer: compare within its stage.
        for range in t.stage_devices() {
            if range.len() < 2 {
                continue;
            }
            let mean = range.clone().map(|d| rate[d]).sum::<f64>() / range.len() as f64;
            for d in range {
                let slow =
                    if t.has_flops { rate[d] < (1.0 - th.slow) * mean } else { rate[d] > (1.0 + th.slow) * mean };
                if slow && mean > 0.0 {
                    let message = if t.has_flops {
                        format!(
                            "{}: {} FLOPS, {:.0}% below the mean of its stage's devices",
                            name(d),
                            si(rate[d]),
                            100.0 * (1.0 - rate[d] / mean)
                        )
                    } else {
                        format!(
                            "{}: computes {:.0}% longer than the mean of its stage's devices (the profile has no FLOPs)",
                            name(d),
                            100.0 * (rate[d] / mean - 1.0)
                        )
                    };
                    out.push(Finding {
                        rule: Rule::SlowDevice,
                        device: Some(d as u32),
                        stage: None,
                        value: rate[d],
                        mean,
                        message,
                    });
                }
            }
        }
    }
    // Heavy stages.
    let stages = t.stage_devices();
    if stages.len() >= 2 {
        // A stage's yardstick is its lower median device, not the mean: one slow device (named
        // by the slow-device and straggler rules) does not make its stage heavy.
        let per: Vec<f64> = stages
            .iter()
            .map(|r| {
                let mut v: Vec<f64> =
                    r.clone().map(|d| if t.has_flops { totals[d].1 } else { totals[d].0 as f64 }).collect();
                v.sort_by(f64::total_cmp);
                v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
            })
            .collect();
        let mean = per.iter().sum::<f64>() / per.len() as f64;
        for (s, &v) in per.iter().enumerate() {
            if mean > 0.0 && v > (1.0 + th.heavy) * mean {
                let what = if t.has_flops { "FLOPs" } else { "computation time (the profile has no FLOPs)" };
                out.push(Finding {
                    rule: Rule::HeavyStage,
                    device: None,
                    stage: Some(s as u32),
                    value: v,
                    mean,
                    message: format!(
                        "stage {s}: {what} of its median device {:.0}% above the mean of stages",
                        100.0 * (v / mean - 1.0)
                    ),
                });
            }
        }
    }
    out.extend(stragglers(t, offsets, th, &totals));
    out
}

/// The straggler test over every collective shared by two or more devices.
fn stragglers(t: &Training, offsets: &[i64], th: Thresholds, totals: &[(u64, f64)]) -> Vec<Finding> {
    let n = t.devices.len();
    // (stage, name, nth) → (aligned start, duration, device) of each participant.
    type Participants = Vec<(i64, u64, u32)>;
    let mut groups: HashMap<(u32, u32, u32), Participants> = HashMap::default();
    for i in 0..t.ops.len() {
        if t.ops.class(i).group() == Group::Collective {
            let d = t.ops.device[i];
            let s = t.ops.start[i] as i64 + offsets[d as usize];
            groups.entry((t.devices[d as usize].stage, t.ops.name[i], t.ops.nth[i])).or_default().push((
                s,
                t.ops.end[i] - t.ops.start[i],
                d,
            ));
        }
    }
    let mut late = vec![0u32; n];
    let mut shared = vec![0u32; n];
    let mut lateness = vec![0f64; n];
    for g in groups.values_mut() {
        if g.len() < 2 {
            continue;
        }
        g.sort_unstable_by_key(|x| x.0);
        let mut durs: Vec<u64> = g.iter().map(|x| x.1).collect();
        durs.sort_unstable();
        let median = durs[durs.len() / 2] as f64;
        let (last, second) = (g[g.len() - 1], g[g.len() - 2]);
        for x in g.iter() {
            shared[x.2 as usize] += 1;
        }
        let gap = (last.0 - second.0) as f64;
        if gap > th.late * median.max(1.0) {
            late[last.2 as usize] += 1;
            lateness[last.2 as usize] += gap;
        }
    }
    // A device late only because it waited on others (a slow device upstream in its pipeline)
    // computes no longer than its stage's median: the straggler is the one that does.
    let mut median = vec![0u64; n];
    for r in t.stage_devices() {
        let mut v: Vec<u64> = r.clone().map(|d| totals[d].0).collect();
        v.sort_unstable();
        let m = v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0);
        for d in r {
            median[d] = m;
        }
    }
    (0..n)
        .filter(|&d| late[d] > 0 && 2 * late[d] >= shared[d] && totals[d].0 as f64 > 1.1 * median[d] as f64)
        .map(|d| {
            let mean = lateness[d] / late[d] as f64;
            Finding {
                rule: Rule::Straggler,
                device: Some(d as u32),
                stage: None,
                value: late[d] as f64,
                mean: shared[d] as f64,
                message: format!(
                    "{}: straggler, last to start {} of its {} collectives, by {} on average",
                    t.devices[d].name,
                    late[d],
                    shared[d],
                    duration(mean)
                ),
            }
        })
        .collect()
}

/// Per device over `[a, b)`: computation, communication and waiting (ns), adding up to the span:
/// time covered by computation, time covered by communication and not computation, the rest.
pub fn breakdown(t: &Training, offsets: &[i64], a: u64, b: u64) -> Vec<[u64; 3]> {
    breakdown_steps(t, offsets, &[(a, b)]).pop().unwrap_or_default()
}

/// [`breakdown`] for several spans at once: `[span][device]`, each device's operators read once.
pub fn breakdown_steps(t: &Training, offsets: &[i64], spans: &[(u64, u64)]) -> Vec<Vec<[u64; 3]>> {
    use rayon::prelude::*;
    let per_device: Vec<Vec<[u64; 3]>> = (0..t.devices.len())
        .into_par_iter()
        .map(|d| {
            let o = offsets[d];
            let r = t.ops_of(d);
            let longest = r.clone().map(|i| t.ops.end[i] - t.ops.start[i]).max().unwrap_or(0) as i64;
            let starts = &t.ops.start[r.clone()];
            spans
                .iter()
                .map(|&(a, b)| {
                    let lo = starts.partition_point(|&x| (x as i64 + o) < a as i64 - longest);
                    let hi = starts.partition_point(|&x| (x as i64 + o) < b as i64);
                    let iv: Vec<(u64, u64, bool)> = (r.start + lo..r.start + hi.max(lo))
                        .filter_map(|i| {
                            let s = (t.ops.start[i] as i64 + o).max(a as i64) as u64;
                            let e = (t.ops.end[i] as i64 + o).min(b as i64).max(0) as u64;
                            (e > s).then(|| (s, e, t.ops.class(i).is_compute()))
                        })
                        .collect();
                    let (all, comp) = (union(&iv, false), union(&iv, true));
                    [comp, all - comp, (b - a).saturating_sub(all)]
                })
                .collect()
        })
        .collect();
    (0..spans.len()).map(|k| per_device.iter().map(|v| v[k]).collect()).collect()
}

/// The length covered by intervals sorted by start (only computation ones if `only_compute`).
fn union(iv: &[(u64, u64, bool)], only_compute: bool) -> u64 {
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for &(s, e, c) in iv {
        if only_compute && !c {
            continue;
        }
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

/// `1.5 µs`, `2.3 ms`, ...
pub fn duration(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// `3.2 T`, `410 G`, ...
pub fn si(v: f64) -> String {
    for (k, s) in [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= k {
            return format!("{:.1} {s}", v / k);
        }
    }
    format!("{v:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, class: Class, start: u64, end: u64, peer: Option<u32>) -> RawOp {
        RawOp { name: name.into(), class, start, end, flops: 0.0, bytes: 0, peer_rank: peer }
    }

    #[test]
    fn names_classify_as_the_paper_groups_them() {
        assert_eq!(classify("ncclKernel_AllReduce_RING_LL_Sum_float", None), Class::AllReduce);
        assert_eq!(classify("ncclKernel_SendRecv_RING", Some("send")), Class::Send);
        assert_eq!(classify("ncclKernel_SendRecv_RING", Some("recv")), Class::Recv);
        assert_eq!(classify("all-gather.3", None), Class::AllGather);
        assert_eq!(classify("reduce-scatter", None), Class::ReduceScatter);
        assert_eq!(classify("collective-permute-start.1", None), Class::Send);
        assert_eq!(classify("broadcast.7", None), Class::Forward, "XLA's element-wise broadcast");
        assert_eq!(classify("ncclKernel_Broadcast_RING_LL", None), Class::Broadcast);
        assert_eq!(classify("autograd::engine::evaluate_function: MmBackward0", None), Class::Backward);
        assert_eq!(classify("transpose(jvp(dense))", None), Class::Backward);
        assert_eq!(classify("Optimizer.step#SGD.step", None), Class::Compute);
        assert_eq!(classify("volta_sgemm_128x64_nn", None), Class::Forward);
    }

    /// Two stages of two devices: stage from sends, alignment on all-reduce ends and the
    /// first send/receive pair, the straggler found.
    #[test]
    fn stages_alignment_and_rules() {
        let mut b = Builder::default();
        // Ranks 0,1 in stage 0 (send to 2,3), ranks 2,3 in stage 1. Clocks: rank 1 is 50 ahead,
        // rank 3 is 500 ahead; rank 1 computes slowly (a straggler).
        for (rank, skew, slow) in [(0u32, 0u64, 0u64), (1, 50, 300), (2, 0, 0), (3, 500, 0)] {
            let d = b.device(format!("r{rank}"), rank, None);
            let s = 1000 + skew;
            b.op(d, op("fwd", Class::Forward, s, s + 100 + slow, None));
            if rank < 2 {
                b.op(d, op("send", Class::Send, s + 400, s + 500, Some(rank + 2)));
            } else {
                b.op(d, op("recv", Class::Recv, s + 300, s + 500, Some(rank - 2)));
            }
            // The all-reduce ends together (in true time) within a stage.
            b.op(d, op("allreduce", Class::AllReduce, s + 100 + slow, s + 600, None));
        }
        let t = b.finish().unwrap();
        assert_eq!(t.stages, 2);
        assert_eq!(t.devices.iter().map(|d| (d.rank, d.stage)).collect::<Vec<_>>(), [(0, 0), (1, 0), (2, 1), (3, 1)]);
        assert_eq!(offsets(&t, Align::None), [0, 0, 0, 0]);
        assert_eq!(offsets(&t, Align::Stage), [0, -50, 0, -500]);
        let full = offsets(&t, Align::Full);
        assert_eq!(full, [0, -50, 0, -500], "the first pair already ends together");
        let f = rules(&t, &full, Thresholds::default());
        assert!(f.iter().any(|f| f.rule == Rule::Straggler && f.device == Some(1)), "{f:?}");
        assert!(f.iter().any(|f| f.rule == Rule::SlowDevice && f.device == Some(1)), "{f:?}");
        assert!(!f.iter().any(|f| f.device == Some(0)), "{f:?}");
        // The slow device is named; its stage is not called heavy for it.
        assert!(!f.iter().any(|f| f.rule == Rule::HeavyStage), "{f:?}");
        // Breakdown adds up to the span.
        for row in breakdown(&t, &full, 0, 700) {
            assert_eq!(row.iter().sum::<u64>(), 700);
        }
        assert_eq!(breakdown(&t, &full, 0, 700)[0], [100, 500, 100]);
        // One step over everything (no repetition).
        assert_eq!(t.steps.len(), 1);
        assert!(Builder::default().finish().unwrap_err().contains("no device lanes"));
    }

    /// A ring of sends (JAX's `ppermute` with `perm = [(i, (i + 1) % n)]`): one stage per device
    /// in ring order, whatever the order the devices are listed in.
    #[test]
    fn a_ring_of_sends_is_one_stage_per_device_in_ring_order() {
        let mut b = Builder::default();
        let ring = [0u32, 3, 1, 7, 2, 6, 4, 5];
        for rank in 0..8u32 {
            let d = b.device(format!("r{rank}"), rank, None);
            let k = ring.iter().position(|&r| r == rank).unwrap();
            let (next, prev) = (ring[(k + 1) % 8], ring[(k + 7) % 8]);
            b.op(d, op("collective-permute", Class::Send, 100, 200, Some(next)));
            b.op(d, op("collective-permute", Class::Recv, 100, 200, Some(prev)));
        }
        let t = b.finish().unwrap();
        assert_eq!(t.stages, 8);
        for d in &t.devices {
            assert_eq!(d.stage as usize, ring.iter().position(|&r| r == d.rank).unwrap(), "{:?}", t.devices);
        }
    }
}
