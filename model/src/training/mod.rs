//! Parallel DNN training as the enhanced Marey's graph (Wei et al., 2024) reads it: devices in
//! pipeline stages, each running a sequence of operators (forward and backward computation,
//! collectives, point-to-point sends and receives) grouped into training steps.
//!
//! Sources (Kineto, JAX and PerfFlowAspect profiles, the `gen:training` generator) fill a
//! [`Builder`]; [`Builder::finish`] orders everything and derives what the files leave out
//! (stages from the send/receive graph, steps from the operators' repetition). The paper's
//! analyses of the model (alignment, rules, breakdown) are `exaviz_analysis::training`.

use serde::{Deserialize, Serialize};

mod builder;

pub use builder::Builder;

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
        let mut b = Builder::default();
        b.source = self.source.clone();
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
