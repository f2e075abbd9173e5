//! The training run's builder: devices and operators added in any order, then ordered, with
//! what the files leave out derived (stages from the send/receive graph, steps from the
//! operators' repetition).

use rustc_hash::FxHashMap as HashMap;

use super::{Class, Device, Ops, RawOp, Step, Training};

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
