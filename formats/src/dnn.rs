//! Chrome trace profiles of DNN training (PyTorch Kineto, JAX, PerfFlowAspect) as the engine's
//! [`Training`] model: which lanes are devices, what each operator is, how files of several
//! ranks form one run.
//!
//! - Kineto: a file per rank (`distributedInfo.rank`); GPU lanes are pid = device, tid =
//!   stream, operators the `kernel`, `gpu_memcpy` and `gpu_memset` slices; NCCL kernels carry
//!   `Collective name`, `In msg nelems`, `dtype` and, for point-to-point, `Src Rank`/`Dst Rank`;
//!   steps are the `ProfilerStep#N` annotations.
//! - JAX: lanes of processes named `/device:GPU:N` (or TPU) with threads `XLA Ops` (operators)
//!   and `Steps`; on the CPU backend every device's ops share host threads and the device is
//!   the op's `device_ordinal` argument; `collective-permute` with `source_target_pairs` is
//!   the pipeline's send and receive.
//! - Anything else (PerfFlowAspect): a device per process, its outermost slices as operators.

use std::path::{Path, PathBuf};

use exaviz_model::source::SourceError;
use exaviz_model::training::{Builder, Class, RawOp, Training, classify};
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

use crate::chrome::{ChromeTrace, Slice, is_comm_call};

/// One file of a run: its trace and its name for messages.
pub struct Part {
    pub trace: ChromeTrace,
    pub input: String,
}

fn arg<'a>(s: &'a Slice, key: &str) -> Option<&'a Value> {
    s.args.as_deref().and_then(|a| a.get(key))
}

/// A number from an argument written as a number or (JAX) as a string.
fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite() && *x >= 0.0)
}

fn small(v: Option<&Value>) -> Option<u32> {
    num(v).filter(|x| x.fract() == 0.0 && *x < 1e9).map(|x| x as u32)
}

fn dtype_bytes(d: &str) -> u64 {
    let d = d.to_ascii_lowercase();
    if d.contains("double") || d.contains("64") {
        8
    } else if d.contains("half") || d.contains("16") {
        2
    } else if d.contains("int8") || d.contains("byte") || d.contains("bool") {
        1
    } else {
        4
    }
}

/// `source_target_pairs={{0,1},{1,2}}` anywhere in a string argument.
fn permute_pairs(s: &Slice) -> Vec<(u32, u32)> {
    let Some(Value::Object(m)) = s.args.as_deref() else { return Vec::new() };
    for v in m.values() {
        let Some(text) = v.as_str() else { continue };
        let Some(at) = text.find("source_target_pairs={") else { continue };
        let rest = &text[at + "source_target_pairs={".len()..];
        let body = &rest[..rest.find("}}").map_or(rest.len(), |e| e + 1)];
        return body
            .split('}')
            .filter_map(|p| {
                let p = p.trim_start_matches([',', '{', ' ']);
                let (a, b) = p.split_once(',')?;
                Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
            })
            .take(1 << 16)
            .collect();
    }
    Vec::new()
}

/// The rank a Kineto file declares, checked against the others: `(rank, world size)`.
pub(crate) fn rank_of(part: &Part, index: usize) -> Result<(u32, Option<u64>), SourceError> {
    let Some(info) = &part.trace.distributed else { return Ok((index as u32, None)) };
    let rank = small(info.get("rank"))
        .ok_or_else(|| SourceError::invalid(&part.input, "distributedInfo has no rank (a whole number)"))?;
    Ok((rank, info.get("world_size").and_then(Value::as_u64)))
}

/// The operator of slice `s` on a device of global rank `rank`.
fn raw_op(t: &ChromeTrace, s: &Slice, rank: u32, t0: i64) -> RawOp {
    let name = t.names[s.name as usize].clone();
    let collective = arg(s, "Collective name").and_then(Value::as_str);
    let mut class = classify(&name, collective);
    let mut peer_rank = None;
    if matches!(class, Class::Send | Class::Recv) {
        let pairs = permute_pairs(s);
        if !pairs.is_empty() {
            // A permute sends where this device is a source and receives where it is only a target.
            if let Some(&(_, to)) = pairs.iter().find(|p| p.0 == rank) {
                class = Class::Send;
                peer_rank = Some(to);
            } else if let Some(&(from, _)) = pairs.iter().find(|p| p.1 == rank) {
                class = Class::Recv;
                peer_rank = Some(from);
            }
        } else {
            let key = if class == Class::Send { "Dst Rank" } else { "Src Rank" };
            peer_rank = small(arg(s, key));
        }
    }
    let elems = num(arg(s, "In msg nelems")).unwrap_or(0.0) as u64;
    let bytes = elems.saturating_mul(arg(s, "dtype").and_then(Value::as_str).map_or(4, dtype_bytes));
    let start = since(s.start_ns, t0);
    RawOp {
        name,
        class,
        start,
        end: start.saturating_add(s.dur_ns.max(0) as u64),
        flops: num(arg(s, "flops")).unwrap_or(0.0) as f32,
        bytes,
        peer_rank,
    }
}

const GPU_CATS: [&str; 3] = ["kernel", "gpu_memcpy", "gpu_memset"];

/// Nanoseconds from `t0` (at or before `ns`), as the training model's ticks before it rebases
/// them on its first operator. Order-preserving for any `t0`, so that a run streamed file by
/// file can count from `i64::MIN` before its first time is known.
fn since(ns: i64, t0: i64) -> u64 {
    ns.wrapping_sub(t0) as u64
}

/// The training model of one or more files of one run (one clock).
pub fn training(parts: &[Part]) -> Result<Training, SourceError> {
    let t0 = parts.iter().flat_map(|p| p.trace.slices.iter().map(|s| s.start_ns)).min().unwrap_or(0);
    let mut run = RunModel::new(parts.len(), t0);
    for p in parts {
        run.add(p)?;
    }
    run.finish()
}

/// The training model of a run, built a file at a time (the files of a run streamed into a
/// store are read once and dropped).
pub struct RunModel {
    b: Builder,
    files: usize,
    t0: i64,
    ranks: HashMap<u32, String>,
    world: Option<(u64, String)>,
    sources: Vec<&'static str>,
    inputs: Vec<String>,
}

impl RunModel {
    /// A run of `files` files whose times count from `t0` (at or before every slice; the model
    /// rebases them on its first operator).
    pub fn new(files: usize, t0: i64) -> Self {
        Self {
            b: Builder::default(),
            files,
            t0,
            ranks: HashMap::default(),
            world: None,
            sources: Vec::new(),
            inputs: Vec::new(),
        }
    }

    /// The next file of the run: its rank checked against the others', its devices and
    /// operators added.
    pub fn add(&mut self, p: &Part) -> Result<(), SourceError> {
        let (rank, w) = rank_of(p, self.inputs.len())?;
        if let Some(other) = self.ranks.insert(rank, p.input.clone()) {
            return Err(SourceError::invalid(
                &p.input,
                format!("inconsistent ranks across files: {other} is also rank {rank}"),
            ));
        }
        if let Some(w) = w {
            match &self.world {
                Some((ow, of)) if *ow != w => {
                    return Err(SourceError::invalid(
                        &p.input,
                        format!("inconsistent ranks across files: world size {w} here, {ow} in {of}"),
                    ));
                }
                _ => self.world = Some((w, p.input.clone())),
            }
            if u64::from(rank) >= w {
                return Err(SourceError::invalid(&p.input, format!("rank {rank} is not below the world size {w}")));
            }
        }
        self.inputs.push(p.input.clone());
        let (b, t0, t) = (&mut self.b, self.t0, &p.trace);
        let cat = |s: &Slice| t.names[s.cat as usize].as_str();
        let kineto = t.slices.iter().any(|s| GPU_CATS.contains(&cat(s)));
        let process_of = crate::chrome::process_names(t);
        let jax_lanes: Vec<bool> = t
            .lanes
            .iter()
            .map(|l| {
                process_of.get(l.pid.as_str()).is_some_and(|n| n.starts_with("/device:"))
                    && l.thread.contains("XLA Ops")
            })
            .collect();
        let ordinal = t.slices.iter().any(|s| arg(s, "device_ordinal").is_some());
        let cpu_ops = t.slices.iter().any(|s| cat(s) == "cpu_op");
        let before = b.device_count();
        let source = if kineto {
            kineto_devices(b, t, rank, self.files, t0);
            "Kineto"
        } else if cpu_ops {
            kineto_cpu_device(b, t, rank, t0);
            "Kineto (CPU)"
        } else if jax_lanes.iter().any(|&x| x) || ordinal {
            jax_devices(b, t, &jax_lanes, rank, t0);
            "JAX"
        } else {
            process_devices(b, t, t0);
            "PerfFlowAspect"
        };
        if !self.sources.contains(&source) {
            self.sources.push(source);
        }
        if let Some(host) = t.host.as_deref().filter(|h| !h.is_empty()) {
            for d in before..b.device_count() {
                b.host(d, host);
            }
        }
        // Peak memory from counters of allocated memory (Kineto's `Total Allocated`).
        for c in &t.counters {
            let name = t.names[c.name as usize].to_ascii_lowercase();
            if name.contains("allocated") {
                let pid = &t.lanes[c.lane as usize].pid;
                if let Some(d) = b.find(&format!("{pid}@{rank}")) {
                    b.memory(d, c.value as u64);
                }
            }
        }
        Ok(())
    }

    /// The model, or why there is none (named by the run's files: the first four, and how many
    /// more).
    pub fn finish(mut self) -> Result<Training, SourceError> {
        let mut what = self.inputs.iter().take(4).cloned().collect::<Vec<_>>().join(", ");
        if self.inputs.len() > 4 {
            what.push_str(&format!(" and {} more files", self.inputs.len() - 4));
        }
        self.sources.sort_unstable();
        self.b.source = self.sources.join(" + ");
        self.b.finish().map_err(|m| SourceError::invalid(what, m))
    }
}

/// The communication calls on each CPU lane, sorted by start: (start, end, name, slice index).
fn comm_calls(t: &ChromeTrace) -> HashMap<u32, Vec<(i64, i64, u32, usize)>> {
    let mut by_lane: HashMap<u32, Vec<(i64, i64, u32, usize)>> = HashMap::default();
    for (k, s) in t.slices.iter().enumerate() {
        if is_comm_call(&t.names[s.name as usize]) {
            by_lane.entry(s.lane).or_default().push((s.start_ns, s.start_ns + s.dur_ns.max(0), s.name, k));
        }
    }
    for v in by_lane.values_mut() {
        v.sort_unstable();
    }
    by_lane
}

/// The CPU call that launched a GPU kernel: the innermost communication call around its launch
/// (found by `correlation`), as its class and its slice. NCCL runs all-to-all and other
/// collectives with `SendRecv` kernels; the call (`nccl:all_to_all`) says what they are, and its
/// `Input Dims` how many bytes they move.
fn launched_by<'t>(
    t: &'t ChromeTrace,
    s: &Slice,
    launches: &HashMap<i64, (u32, i64, i64)>,
    calls: &HashMap<u32, Vec<(i64, i64, u32, usize)>>,
) -> Option<(Class, &'t Slice)> {
    let corr = s.correlation?;
    let &(lane, start, end) = launches.get(&corr)?;
    let list = calls.get(&lane)?;
    let upto = list.partition_point(|c| c.0 <= start);
    // The innermost enclosing call: the latest start among those that still cover the launch.
    let c = list[..upto].iter().rev().take(64).find(|c| c.1 >= end)?;
    Some((classify(&t.names[c.2 as usize], None), &t.slices[c.3]))
}

/// Kineto: a device per GPU pid with kernels; steps from `ProfilerStep#N`.
fn kineto_devices(b: &mut Builder, t: &ChromeTrace, rank: u32, files: usize, t0: i64) {
    // Kernel launches by correlation id: the CPU lane and time of each runtime call.
    let mut launches: HashMap<i64, (u32, i64, i64)> = HashMap::default();
    for s in &t.slices {
        let c = t.names[s.cat as usize].as_str();
        if (c == "cuda_runtime" || c == "cuda_driver" || c == "hip_runtime")
            && let Some(corr) = s.correlation
        {
            launches.insert(corr, (s.lane, s.start_ns, s.start_ns + s.dur_ns.max(0)));
        }
    }
    let calls = comm_calls(t);
    let mut dev_of: HashMap<&str, usize> = HashMap::default();
    let gpus: Vec<&str> = {
        let mut v: Vec<&str> = t
            .slices
            .iter()
            .filter(|s| GPU_CATS.contains(&t.names[s.cat as usize].as_str()))
            .map(|s| t.lanes[s.lane as usize].pid.as_str())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    for pid in &gpus {
        // One GPU per rank is the rank; several in one file are numbered after it.
        let r = if gpus.len() == 1 || files > 1 { rank } else { rank * 1000 + pid.parse::<u32>().unwrap_or(0) };
        let label = t.lanes.iter().find(|l| l.pid == *pid && !l.labels.is_empty()).map_or("GPU", |l| l.labels.as_str());
        let name = if label.contains(pid) { format!("rank {rank} {label}") } else { format!("rank {rank} GPU {pid}") };
        dev_of.insert(pid, b.device_keyed(name, r, None, format!("{pid}@{rank}")));
    }
    for s in &t.slices {
        let lane = &t.lanes[s.lane as usize];
        let c = t.names[s.cat as usize].as_str();
        if GPU_CATS.contains(&c) {
            if let Some(&d) = dev_of.get(lane.pid.as_str()) {
                let r = b.rank(d);
                let mut op = raw_op(t, s, r, t0);
                let name = op.name.to_ascii_lowercase();
                if name.contains("nccl")
                    && let Some((class, call)) = launched_by(t, s, &launches, &calls)
                {
                    // Bytes where the kernel does not say: the launching call's input tensor.
                    if op.bytes == 0 {
                        op.bytes = input_bytes(call);
                    }
                    if arg(s, "Collective name").is_none()
                        && !matches!(class, Class::Forward | Class::Backward | Class::Compute)
                    {
                        if class != op.class {
                            op.peer_rank = None;
                        }
                        op.class = class;
                    }
                }
                b.op(d, op);
            }
        } else if t.names[s.name as usize].starts_with("ProfilerStep#") {
            let start = since(s.start_ns, t0);
            b.step(t.names[s.name as usize].replace("ProfilerStep#", "step "), start, start + s.dur_ns.max(0) as u64);
        }
    }
}

/// A number of the c10d call's `Concrete Inputs` at `index` (PyTorch records scalars there:
/// `c10d::send(tensors, group, dst, tag)`).
fn concrete(s: &Slice, index: usize) -> Option<u32> {
    let v = arg(s, "Concrete Inputs")?.as_array()?.get(index)?;
    small(Some(v))
}

/// Bytes of the tensors of `Input Dims` and `Input type` (the first tensor argument).
fn input_bytes(s: &Slice) -> u64 {
    let Some(Value::Array(dims)) = arg(s, "Input Dims") else { return 0 };
    let types = arg(s, "Input type").and_then(Value::as_array);
    for (i, d) in dims.iter().enumerate() {
        // A tensor's shape, or a list of them (TensorList): the first.
        let shape = match d.as_array() {
            Some(a) if a.first().is_some_and(Value::is_array) => a[0].as_array(),
            Some(a) => Some(a),
            None => None,
        };
        let Some(shape) = shape.filter(|a| !a.is_empty()) else { continue };
        let elems = shape.iter().try_fold(1u64, |acc, x| acc.checked_mul(x.as_u64()?));
        let ty = types.and_then(|t| t.get(i)).and_then(Value::as_str).unwrap_or("float");
        let ty = if ty.contains("List") || ty.is_empty() { "float" } else { ty };
        return elems.unwrap_or(0).saturating_mul(dtype_bytes(ty));
    }
    0
}

/// Kineto of a CPU-only job (gloo): the rank's process is its device. Operators: the
/// outermost `cpu_op` slices of its busiest thread (computation), and the communication
/// library's own spans (`gloo:send`, `gloo:all_reduce`: the time the transfer took, on any
/// thread); a send's or receive's peer is the `dst`/`src` of the c10d call that issued it.
/// Kineto's own lanes (`Spans`, `Traces`) are not devices.
fn kineto_cpu_device(b: &mut Builder, t: &ChromeTrace, rank: u32, t0: i64) {
    let cat = |s: &Slice| t.names[s.cat as usize].as_str();
    let name = |s: &Slice| t.names[s.name as usize].as_str();
    let mut per_lane: HashMap<u32, usize> = HashMap::default();
    for s in t.slices.iter().filter(|s| cat(s) == "cpu_op") {
        *per_lane.entry(s.lane).or_default() += 1;
    }
    let Some((&main, _)) = per_lane.iter().max_by_key(|(l, n)| (**n, std::cmp::Reverse(**l))) else { return };
    let pid = t.lanes[main as usize].pid.clone();
    let device = b.device_keyed(format!("rank {rank}"), rank, None, format!("{pid}@{rank}"));
    // Library spans exist (gloo:*, nccl:*): they are the transfers; else the c10d calls are.
    let library = |n: &str| n.starts_with("gloo:") || n.starts_with("nccl:") || n.starts_with("mpi:");
    let has_library = t.slices.iter().any(|s| library(name(s)) && t.lanes[s.lane as usize].pid == pid);
    // The c10d point-to-point calls by start, for the peers of the library's spans.
    let mut p2p: Vec<(i64, bool, Option<u32>)> = t
        .slices
        .iter()
        .filter(|s| t.lanes[s.lane as usize].pid == pid && name(s).starts_with("c10d::"))
        .filter_map(|s| {
            let n = name(s);
            let send = n.contains("send");
            (send || n.contains("recv")).then(|| (s.start_ns, send, concrete(s, 2)))
        })
        .collect();
    p2p.sort_unstable_by_key(|c| c.0);
    let mut order: Vec<&Slice> = t.slices.iter().filter(|s| t.lanes[s.lane as usize].pid == pid).collect();
    order.sort_by_key(|s| (s.lane, s.start_ns, std::cmp::Reverse(s.dur_ns)));
    // The main thread's operators' starts, for the annotations that hold none.
    let mut op_starts: Vec<i64> =
        t.slices.iter().filter(|s| s.lane == main && cat(s) == "cpu_op").map(|s| s.start_ns).collect();
    op_starts.sort_unstable();
    let mut open: Vec<i64> = Vec::new();
    let mut lane = u32::MAX;
    for s in order {
        let n = name(s);
        let start = since(s.start_ns, t0);
        if n.starts_with("ProfilerStep#") {
            b.step(n.replace("ProfilerStep#", "step "), start, start + s.dur_ns.max(0) as u64);
            continue;
        }
        let comm = if has_library { library(n) } else { n.starts_with("c10d::") };
        if comm {
            let mut op = raw_op(t, s, rank, t0);
            op.bytes = op.bytes.max(input_bytes(s));
            if matches!(op.class, Class::Send | Class::Recv) && op.peer_rank.is_none() {
                let send = op.class == Class::Send;
                let at = p2p.partition_point(|c| c.0 <= s.start_ns);
                op.peer_rank = p2p[..at].iter().rev().find(|c| c.1 == send).and_then(|c| c.2);
            }
            b.op(device, op);
            continue;
        }
        let annotation = cat(s) == "user_annotation";
        if s.lane != main || !(annotation || cat(s) == "cpu_op") {
            continue;
        }
        if s.lane != lane {
            (lane, open) = (s.lane, Vec::new());
        }
        while open.last().is_some_and(|&e| e <= s.start_ns) {
            open.pop();
        }
        if annotation {
            // The user's own work (`record_function` around a sleep, a data loader's wait, work
            // in Python): an annotation on the main thread outside every operator that holds
            // none is computation of its own, as the path and the stragglers count it.
            let end = s.start_ns + s.dur_ns.max(0);
            let k = op_starts.partition_point(|&x| x < s.start_ns);
            if open.is_empty() && s.dur_ns > 0 && op_starts.get(k).is_none_or(|&x| x >= end) {
                let mut op = raw_op(t, s, rank, t0);
                (op.class, op.bytes) = (Class::Compute, 0);
                b.op(device, op);
            }
            continue;
        }
        let depth = open.len();
        open.push(s.start_ns + s.dur_ns.max(0));
        if depth == 0 && !is_comm_call(n) && n != "record_param_comms" {
            let mut op = raw_op(t, s, rank, t0);
            op.bytes = 0;
            b.op(device, op);
        }
    }
}

/// JAX: device lanes `/device:*` / `XLA Ops`, or `device_ordinal` on host threads; steps from
/// the `Steps` threads.
fn jax_devices(b: &mut Builder, t: &ChromeTrace, jax_lanes: &[bool], file_rank: u32, t0: i64) {
    let mut dev_of: HashMap<String, usize> = HashMap::default();
    let process_of = crate::chrome::process_names(t);
    for s in &t.slices {
        let lane = &t.lanes[s.lane as usize];
        let start = since(s.start_ns, t0);
        if lane.thread == "Steps" {
            // Each device's Steps lane repeats the step: the model merges them by label.
            b.step(format!("step {}", t.names[s.name as usize]), start, start + s.dur_ns.max(0) as u64);
            continue;
        }
        let key = if jax_lanes[s.lane as usize] {
            process_of.get(lane.pid.as_str()).copied().unwrap_or_default().to_string()
        } else if let Some(o) = small(arg(s, "device_ordinal")) {
            format!("/device:CPU:{o}")
        } else {
            continue;
        };
        let d = *dev_of.entry(key.clone()).or_insert_with(|| {
            let rank = key.rsplit(':').next().and_then(|n| n.parse().ok()).unwrap_or(0);
            // Counters of a device's pid find it by `pid@file rank`.
            let counter_key =
                if jax_lanes[s.lane as usize] { format!("{}@{file_rank}", lane.pid) } else { key.clone() };
            b.device_keyed(key.trim_start_matches('/').to_string(), rank, None, counter_key)
        });
        let r = b.rank(d);
        let op = raw_op(t, s, r, t0);
        // A device inside a pipeline both sends (to the next) and receives (from the one before)
        // in one collective-permute: the receive is an operator of its own.
        let from = permute_pairs(s).iter().find(|p| p.1 == r).map(|p| p.0);
        if op.class == Class::Send
            && let Some(from) = from
        {
            b.op(d, RawOp { class: Class::Recv, peer_rank: Some(from), ..op.clone() });
        }
        b.op(d, op);
    }
}

pub use super::HloPairs;

/// Reads the HLO text modules under `dir` (down to four folders deep): files named
/// `module_NNNN.NAME.*.txt`; the optimized module where XLA wrote several.
pub fn hlo_pairs(dir: &Path) -> HloPairs {
    let files = files_under(dir, 4096, &|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        n.starts_with("module_") && n.ends_with(".txt") && !n.contains("buffer-assignment")
    });
    let mut out = HloPairs::default();
    for f in files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(module) = name.split('.').nth(1) else { continue };
        let Ok(meta) = std::fs::metadata(&f) else { continue };
        if meta.len() > 64 << 20 {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        for line in text.lines() {
            let Some(at) = line.find("source_target_pairs={") else { continue };
            if !line.contains("collective-permute") {
                continue;
            }
            let lhs = line.split(" = ").next().unwrap_or("").trim().trim_start_matches("ROOT ").trim();
            let op = lhs.trim_start_matches('%').to_string();
            let rest = &line[at..];
            let pairs = &rest[..rest.find("}}").map_or(rest.len(), |e| e + 2)];
            out.insert((module.to_string(), op), pairs.to_string());
        }
    }
    out
}

/// Gives each JAX operator that `pairs` knows (by `hlo_module` and `hlo_op`) its
/// `source_target_pairs`, as the profile's XPlane metadata would; how many got them.
fn attach_hlo_pairs(parts: &mut [Part], pairs: &HloPairs) -> usize {
    let mut n = 0;
    for p in parts {
        for s in &mut p.trace.slices {
            let Some(Value::Object(m)) = s.args.as_deref_mut() else { continue };
            let (Some(module), Some(op)) =
                (m.get("hlo_module").and_then(Value::as_str), m.get("hlo_op").and_then(Value::as_str))
            else {
                continue;
            };
            if let Some(text) = pairs.get(&(module.to_string(), op.to_string())) {
                m.insert("source_target_pairs".into(), Value::String(text.clone()));
                n += 1;
            }
        }
    }
    n
}

/// Any other trace: a device per process; its operators are the slices of the outermost
/// nesting level that holds at least eight on their thread (a `main` around everything is
/// not an operator), or of the deepest level where none does.
fn process_devices(b: &mut Builder, t: &ChromeTrace, t0: i64) {
    let mut order: Vec<usize> = (0..t.slices.len()).collect();
    order.sort_by_key(|&i| (t.slices[i].lane, t.slices[i].start_ns, std::cmp::Reverse(t.slices[i].dur_ns)));
    let mut depth = vec![0u32; t.slices.len()];
    let mut counts: HashMap<(u32, u32), u32> = HashMap::default();
    let (mut lane, mut open): (u32, Vec<i64>) = (u32::MAX, Vec::new());
    for &i in &order {
        let s = &t.slices[i];
        if s.lane != lane {
            (lane, open) = (s.lane, Vec::new());
        }
        while open.last().is_some_and(|&e| e <= s.start_ns) {
            open.pop();
        }
        depth[i] = open.len().min(64) as u32;
        *counts.entry((s.lane, depth[i])).or_default() += 1;
        open.push(s.start_ns + s.dur_ns.max(0));
    }
    let level = |lane: u32| -> u32 {
        (0..=64)
            .find(|&d| counts.get(&(lane, d)).is_some_and(|&c| c >= 8))
            .unwrap_or_else(|| (0..=64).rev().find(|&d| counts.contains_key(&(lane, d))).unwrap_or(0))
    };
    let mut levels: HashMap<u32, u32> = HashMap::default();
    let mut dev_of: HashMap<&str, usize> = HashMap::default();
    for i in order {
        let s = &t.slices[i];
        let want = *levels.entry(s.lane).or_insert_with(|| level(s.lane));
        if depth[i] != want {
            continue;
        }
        let pid = t.lanes[s.lane as usize].pid.as_str();
        let d = *dev_of.entry(pid).or_insert_with(|| {
            let rank = pid.parse().unwrap_or(b.device_count() as u32);
            b.device_keyed(format!("process {pid}"), rank, None, format!("{pid}@p"))
        });
        let r = b.rank(d);
        let mut op = raw_op(t, s, r, t0);
        // A process's functions are no model's forward pass unless their names say so.
        let named = op.name.to_ascii_lowercase();
        if op.class == Class::Forward && !(named.contains("forward") || named.contains("fwd")) {
            op.class = Class::Compute;
        }
        b.op(d, op);
    }
}

/// Chrome trace files under `dir` (`.json`, `.json.gz`, `.pfw`; down to four folders deep,
/// as JAX writes `plugins/profile/RUN/HOST.trace.json.gz`), sorted.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    files_under(dir, 1 << 16, &|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        n.ends_with(".json") || n.ends_with(".json.gz") || n.ends_with(".pfw")
    })
}

/// The files under `dir` (down to four folders deep) that `keep` takes, sorted, at most `most`.
fn files_under(dir: &Path, most: usize, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    fn walk(d: &Path, depth: u32, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && depth < 4 {
                walk(&p, depth + 1, keep, out);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, 0, keep, &mut out);
    out.sort();
    out.truncate(most);
    out
}

/// Whether a file holds Chrome trace events, from its first megabyte (decompressed): an
/// object with `traceEvents`, or an array of objects with `ph`. A notes or configuration file
/// in a folder of traces is not one.
pub fn looks_like_trace_file(path: &Path) -> bool {
    let Some(head) = crate::head_of(path, 1 << 20) else { return false };
    let text = String::from_utf8_lossy(&head);
    let first = text.trim_start().chars().next();
    text.contains("\"traceEvents\"") || (first == Some('[') && text.contains("\"ph\""))
}

/// What a run's folder holds: XPlane profiles, Chrome trace files (not those the same run
/// holds again), PyTorch execution traces, and a warning line for each file passed over.
pub struct RunFiles {
    pub xplanes: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    pub graphs: Vec<PathBuf>,
    pub warnings: Vec<String>,
}

/// The rank a trace file's name gives: its last part between dots that is a number (Chakra's
/// `resnet50.3.et`), else the number its name ends in before the first dot (`rank3.et.json.gz`,
/// `dlrm_eg_3.json`).
pub(crate) fn rank_in_name(p: &Path) -> Option<u64> {
    let name = p.file_name()?.to_str()?;
    let stem = name.split('.').next().unwrap_or(name);
    let digits: String =
        stem.chars().rev().take_while(char::is_ascii_digit).collect::<Vec<_>>().into_iter().rev().collect();
    name.split('.').skip(1).filter_map(|s| s.parse().ok()).last().or_else(|| digits.parse().ok())
}

/// `graphs` sorted by the rank their names give (then by name), and the one of rank `rank`
/// (by default the first): an error naming the ranks there are where none is that rank's.
pub(crate) fn graph_of_rank(
    input: &str,
    graphs: &mut [PathBuf],
    rank: Option<u32>,
) -> Result<Option<PathBuf>, SourceError> {
    graphs.sort_by_key(|p| (rank_in_name(p).unwrap_or(u64::MAX), p.clone()));
    let Some(rank) = rank else { return Ok(graphs.first().cloned()) };
    if graphs.is_empty() {
        return Err(SourceError::invalid(input, format!("rank={rank}: the run holds no execution traces")));
    }
    let by_name = graphs.iter().find(|p| rank_in_name(p) == Some(u64::from(rank)));
    // Files without a rank in their names: the rank-th in order.
    let by_order = graphs.iter().all(|p| rank_in_name(p).is_none()).then(|| graphs.get(rank as usize)).flatten();
    by_name.or(by_order).cloned().map(Some).ok_or_else(|| {
        let ranks: Vec<String> = graphs.iter().filter_map(|p| rank_in_name(p)).map(|r| r.to_string()).collect();
        let have =
            if ranks.is_empty() { format!("{} traces", graphs.len()) } else { format!("ranks {}", ranks.join(", ")) };
        SourceError::invalid(input, format!("rank={rank}: no execution trace of that rank here ({have})"))
    })
}

/// The files of the run under `dir` (see [`RunFiles`]).
pub fn run_files(dir: &Path) -> RunFiles {
    let mut warnings = Vec::new();
    let all = files_in(dir);
    // XPlane is what JAX always writes: where a folder holds one, its Chrome traces are the
    // same run again.
    let xplanes = xplanes_in(dir);
    let mut files = Vec::new();
    // PyTorch execution traces beside the profiles: the run's operator graph.
    let mut graphs = Vec::new();
    for p in &all {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if xplanes.iter().any(|x| x.parent() == p.parent()) {
            warnings.push(format!("{}: the same run as the .xplane.pb beside it; read once", p.display()));
            continue;
        }
        let same_run = name == "perfetto_trace.json.gz"
            && all.iter().any(|o| {
                o.parent() == p.parent()
                    && o.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".trace.json.gz"))
            });
        if same_run {
            warnings.push(format!("{}: the same run as the .trace.json.gz beside it; read once", p.display()));
        } else if crate::et::is_et(p) {
            graphs.push(p.clone());
        } else if !looks_like_trace_file(p) {
            warnings.push(format!("{}: holds no trace events (not a Chrome trace file); skipped", p.display()));
        } else {
            files.push(p.clone());
        }
    }
    RunFiles { xplanes, files, graphs, warnings }
}

/// A folder whose profiles disagree on their ranks (several jobs' profiles side by side, as in
/// a collection of samples) holds more than one run: said so, with the profiles to pass one at a
/// time; any other error as it is.
fn of_several_runs(input: &str, e: SourceError, files: &[String]) -> SourceError {
    let text = e.to_string();
    let Some(at) = text.find("inconsistent ranks across files: ") else { return e };
    let why = &text[at + "inconsistent ranks across files: ".len()..];
    /// Profiles named in full; the rest counted.
    const NAMED: usize = 6;
    let more = files.len().saturating_sub(NAMED);
    let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    SourceError::invalid(
        input,
        format!(
            "holds the profiles of more than one run ({why}): pass one run's folder or profile, one of {}{more}",
            files[..files.len().min(NAMED)].join(", ")
        ),
    )
}

/// A folder of trace files as one run: the Chrome trace files under it (see [`files_in`]),
/// each run read once (a JAX log folder holds one run as `HOST.trace.json.gz` and as
/// `perfetto_trace.json.gz`), files that hold no trace events skipped with a warning.
pub fn open_dir(
    input: &str,
    dir: &Path,
    strict: bool,
    rank: Option<u32>,
    progress: &dyn Fn(u64, u64),
) -> Result<exaviz_model::dataset::Dataset, SourceError> {
    let RunFiles { xplanes, files, mut graphs, mut warnings } = run_files(dir);
    let chosen = graph_of_rank(input, &mut graphs, rank)?;
    let mut parts = Vec::new();
    let mut hlo = hlo_pairs(dir);
    for p in &xplanes {
        let space = crate::xplane::read(p)?;
        hlo.extend(crate::xplane::hlo_pairs(&space));
        parts.push(Part { trace: crate::xplane::to_chrome(&space), input: p.display().to_string() });
    }
    if files.is_empty() && parts.is_empty() {
        // Execution traces alone (one per rank): the run's operator graph, a rank's (the
        // lowest's unless one is asked for).
        let Some(first) = chosen else {
            return Err(SourceError::invalid(input, "holds no trace files (.json, .json.gz, .pfw, .xplane.pb)"));
        };
        let r = crate::et::read_full(&first.display().to_string(), &first)?;
        warnings.extend(r.warnings);
        if graphs.len() > 1 {
            warnings.push(format!(
                "{input}: {} execution traces, one per rank; the operator graph drawn is {} ({}): RUN?rank=N or --rank N draws another",
                graphs.len(),
                rank.map_or_else(|| "the first rank's".to_string(), |r| format!("rank {r}'s")),
                first.display()
            ));
        }
        let opgraph = Some(std::sync::Arc::new(r.graph));
        return Ok(exaviz_model::dataset::Dataset { name: input.to_string(), opgraph, warnings, ..Default::default() });
    }
    let (read, mut left_out) = read_parts(&files, strict, progress)?;
    parts.extend(read);
    warnings.append(&mut left_out);
    // The modules the profile's operators say they ran in (`hlo_module`): only those are read
    // for the run's operator graph.
    let modules: std::collections::HashSet<String> = parts
        .iter()
        .flat_map(|p| &p.trace.slices)
        .filter_map(|s| match s.args.as_deref() {
            Some(Value::Object(m)) => m.get("hlo_module").and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
        .collect();
    // A PyTorch run's execution traces (one per rank): the first rank's graph, its operators
    // named as the profile of the same process names them (by record-function id).
    let et = match chosen {
        Some(first) => {
            let mut r = crate::et::read_full(&first.display().to_string(), &first)?;
            r.graph.profile_names = profile_names(&parts, &r);
            warnings.append(&mut r.warnings);
            Some(r.graph)
        }
        None => None,
    };
    let inputs: Vec<String> = parts.iter().map(|p| p.input.clone()).collect();
    let mut d = open_parts(input, parts, &hlo).map_err(|e| of_several_runs(input, e, &inputs))?;
    if let Some(t) = d.training.as_deref()
        && !modules.is_empty()
        && let Some(mut graph) = matching_module(dir, t, &modules)
    {
        // The execution order from the profile: each operator's first start on any device.
        let mut first: HashMap<&str, u64> = HashMap::default();
        for i in 0..t.ops.len() {
            let e = first.entry(t.names[t.ops.name[i] as usize].as_str()).or_insert(u64::MAX);
            *e = (*e).min(t.ops.start[i]);
        }
        graph.order_by(|name| first.get(name).copied());
        d.opgraph = Some(std::sync::Arc::new(graph));
    }
    if d.opgraph.is_none()
        && let Some(graph) = et
    {
        d.opgraph = Some(std::sync::Arc::new(graph));
    }
    warnings.append(&mut d.warnings);
    d.warnings = warnings;
    Ok(d)
}

/// The names the Kineto profile of an execution trace's process gives its operators (the events
/// whose `Record function id` is the operator's), one per operator (empty where none is found).
fn profile_names(parts: &[Part], et: &crate::et::EtRead) -> Vec<String> {
    let Some(pid) = et.pid.map(|p| p.to_string()) else { return Vec::new() };
    let Some(part) = parts.iter().find(|p| p.trace.lanes.iter().any(|l| l.pid == pid)) else { return Vec::new() };
    let t = &part.trace;
    let names: HashMap<u64, &str> = t
        .slices
        .iter()
        .filter(|s| t.lanes[s.lane as usize].pid == pid)
        .filter_map(|s| Some((arg(s, "Record function id")?.as_u64()?, t.names[s.name as usize].as_str())))
        .collect();
    et.record_ids
        .iter()
        .map(|id| id.and_then(|id| names.get(&id)).map_or_else(String::new, |n| (*n).to_string()))
        .collect()
}

/// The optimized HLO module under `dir` (as `--xla_dump_to` writes it beside a profile), among
/// those named `modules` (`module_NNNN.NAME.*`), whose instructions the run's operators are named
/// after most: the operator graph the strategy view links with the Marey view. `None` where no
/// module names any operator.
fn matching_module(
    dir: &Path,
    t: &exaviz_model::training::Training,
    modules: &std::collections::HashSet<String>,
) -> Option<exaviz_model::opgraph::OpGraph> {
    let files = files_under(dir, 4096, &|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        n.starts_with("module_")
            && n.ends_with("after_optimizations.txt")
            && n.split('.').nth(1).is_some_and(|m| modules.contains(m))
    });
    let names: std::collections::HashSet<&str> = t.names.iter().map(String::as_str).collect();
    let mut best: Option<(usize, exaviz_model::opgraph::OpGraph)> = None;
    for f in files {
        if std::fs::metadata(&f).map_or(true, |m| m.len() > 64 << 20) {
            continue;
        }
        let Ok((g, _)) = crate::hlo::read(&f.display().to_string(), &f) else { continue };
        let hits = g.nodes.iter().filter(|n| names.contains(n.name.as_str())).count();
        if hits > 0 && best.as_ref().is_none_or(|b| hits > b.0) {
            best = Some((hits, g));
        }
    }
    best.map(|(_, g)| g)
}

/// The XPlane profiles under `dir` (down to four folders deep, as JAX writes
/// `plugins/profile/RUN/HOST.xplane.pb`), sorted.
fn xplanes_in(dir: &Path) -> Vec<PathBuf> {
    files_under(dir, 1 << 12, &crate::xplane::is_xplane)
}

/// One XPlane profile as a run, with the HLO pairs it carries.
pub fn open_xplane(input: &str, path: &Path) -> Result<exaviz_model::dataset::Dataset, SourceError> {
    let space = crate::xplane::read(path)?;
    let hlo = crate::xplane::hlo_pairs(&space);
    let part = Part { trace: crate::xplane::to_chrome(&space), input: path.display().to_string() };
    open_parts(input, vec![part], &hlo)
}

/// The lanes of a rank's file named after the rank (`rank 3: PID`, `rank 3 PROCESS`), as a
/// run of several files names them.
pub fn rank_lanes(lanes: &mut [crate::chrome::Lane], rank: u32) {
    for l in lanes {
        l.pid = format!("rank {rank}: {}", l.pid);
        if !l.process.is_empty() {
            l.process = format!("rank {rank} {}", l.process);
        }
    }
}

/// Several files as one trace for the other views: lanes named after their file's rank (one
/// file as it is).
pub fn merge(parts: &[Part]) -> std::borrow::Cow<'_, ChromeTrace> {
    if let [one] = parts {
        return std::borrow::Cow::Borrowed(&one.trace);
    }
    let mut out = ChromeTrace::default();
    let mut name_of: HashMap<String, u32> = HashMap::default();
    // Files without ranks (PerfFlowAspect's, one per process) keep their processes' names
    // where no two files share a process id.
    let mut all: Vec<&str> = Vec::new();
    for p in parts {
        let mut own: Vec<&str> = p.trace.lanes.iter().map(|l| l.pid.as_str()).collect();
        own.sort_unstable();
        own.dedup();
        all.extend(own);
    }
    let per_file = all.len();
    all.sort_unstable();
    all.dedup();
    let ranked = parts.iter().any(|p| p.trace.distributed.is_some()) || all.len() < per_file;
    for (i, p) in parts.iter().enumerate() {
        let t = &p.trace;
        let rank = rank_of(p, i).map_or(i as u32, |r| r.0);
        let lane0 = out.lanes.len() as u32;
        out.lanes.extend(t.lanes.iter().cloned());
        if ranked {
            rank_lanes(&mut out.lanes[lane0 as usize..], rank);
        }
        let mut remap = |n: u32| -> u32 {
            let s = &t.names[n as usize];
            let next = out.names.len() as u32;
            *name_of.entry(s.clone()).or_insert_with(|| {
                out.names.push(s.clone());
                next
            })
        };
        let slices: Vec<Slice> = t
            .slices
            .iter()
            .map(|s| Slice {
                lane: s.lane + lane0,
                name: remap(s.name),
                cat: remap(s.cat),
                start_ns: s.start_ns,
                dur_ns: s.dur_ns,
                correlation: None,
                args: None,
            })
            .collect();
        out.slices.extend(slices);
        // Counters and flows on the merged lanes, as one file keeps them.
        for c in &t.counters {
            let name = remap(c.name);
            if let Some(unit) = t.counter_units.get(&c.name) {
                out.counter_units.insert(name, unit.clone());
            }
            out.counters.push(crate::chrome::CounterSample {
                lane: c.lane + lane0,
                name,
                ts_ns: c.ts_ns,
                value: c.value,
            });
        }
        for i in &t.instants {
            let mark = crate::chrome::Mark { lane: i.mark.lane + lane0, name: remap(i.mark.name), ts_ns: i.mark.ts_ns };
            out.instants.push(crate::chrome::Instant { mark, scope: i.scope, cat: remap(i.cat), args: i.args });
        }
        let mut moved =
            |m: &crate::chrome::Mark| crate::chrome::Mark { lane: m.lane + lane0, name: remap(m.name), ts_ns: m.ts_ns };
        let flows: Vec<crate::chrome::Flow> = t
            .flows
            .iter()
            .map(|f| crate::chrome::Flow { id: f.id.clone(), from: moved(&f.from), to: moved(&f.to) })
            .collect();
        out.flows.extend(flows);
        out.unmatched += t.unmatched;
        out.events += t.events;
    }
    std::borrow::Cow::Owned(out)
}

/// Opens a run: one file, a folder of files or a comma-separated list, as a dataset with its
/// training model (or without, with the reason, where no device lanes are found).
pub fn open(input: &str, paths: &[PathBuf]) -> Result<exaviz_model::dataset::Dataset, SourceError> {
    open_with(input, paths, &HloPairs::default())
}

/// [`open`], with XLA's collective-permute pairs for JAX operators.
pub fn open_with(
    input: &str,
    paths: &[PathBuf],
    hlo: &HloPairs,
) -> Result<exaviz_model::dataset::Dataset, SourceError> {
    if paths.is_empty() {
        return Err(SourceError::invalid(input, "holds no Chrome trace files (.json, .json.gz, .pfw)"));
    }
    let (parts, left_out) = read_parts(paths, true, &|_, _| {})?;
    debug_assert!(left_out.is_empty());
    open_parts(input, parts, hlo)
}

/// Reads the Chrome trace files of a run in parallel (each file parsed on one core, in order
/// of the paths). Unless `strict`, a file that does not read is left out with a warning line
/// naming it, while the others open; where none reads, the first's error is the run's (no
/// paths, no parts).
/// `progress(bytes of the files read, bytes of all)`.
pub fn read_parts(
    paths: &[PathBuf],
    strict: bool,
    progress: &dyn Fn(u64, u64),
) -> Result<(Vec<Part>, Vec<String>), SourceError> {
    use rayon::prelude::*;
    let sizes: Vec<u64> = paths.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).collect();
    let total = sizes.iter().sum::<u64>();
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let read: Vec<Result<Part, SourceError>> = std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            paths
                .par_iter()
                .zip(&sizes)
                .map_with(tx, |tx, (p, &size)| {
                    let part = crate::chrome::read(p).map(|trace| Part { trace, input: p.display().to_string() });
                    tx.send(size).ok();
                    part
                })
                .collect()
        });
        let mut done = 0;
        for size in rx {
            done += size;
            progress(done, total);
        }
        worker.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
    });
    let (mut parts, mut warnings, mut first_error) = (Vec::new(), Vec::new(), None);
    for r in read {
        match r {
            Ok(p) => parts.push(p),
            Err(e) if strict || paths.len() == 1 => return Err(e),
            Err(e) => {
                warnings.push(format!("{e}; left out of the run (--strict refuses it instead)"));
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if parts.is_empty() => Err(e),
        _ => Ok((parts, warnings)),
    }
}

/// Files already read as one run.
fn open_parts(
    input: &str,
    mut parts: Vec<Part>,
    hlo: &HloPairs,
) -> Result<exaviz_model::dataset::Dataset, SourceError> {
    let from_hlo = !hlo.is_empty() && attach_hlo_pairs(&mut parts, hlo) > 0;
    let unmatched: u64 = parts.iter().map(|p| p.trace.unmatched).sum();
    let mut warnings = Vec::new();
    if unmatched > 0 {
        // As Perfetto does: counted, the rest of the trace kept.
        warnings.push(format!("{input}: {unmatched} B or E events without their partner were left out"));
    }
    for p in &parts {
        warnings.extend(p.trace.repairs.lines(&p.input));
    }
    // The timeline's model and the training model, from the same files, side by side.
    let (mut d, training) = rayon::join(|| crate::chrome::dataset(&merge(&parts), input), || training(&parts));
    d.warnings = warnings;
    match training {
        Ok(mut t) => {
            if from_hlo && t.stages_from == "sends" {
                t.stages_from = "HLO pairs".into();
            }
            d.training = Some(std::sync::Arc::new(t));
        }
        // Several files are one run only as a training run: their errors are the input's.
        Err(e) if parts.len() > 1 => return Err(e),
        Err(_) => {}
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(text: &str) -> Part {
        Part { trace: crate::chrome::parse(text.as_bytes(), "t.json").unwrap(), input: "t.json".into() }
    }

    /// A folder of execution traces alone, one per rank: the lowest rank's graph by default,
    /// `rank=N`'s when asked (said in the warning), a rank not there refused naming those there
    /// are; ranks read from names as numbers, not as text (`rank10` after `rank2`).
    #[test]
    fn a_run_of_execution_traces_draws_the_rank_asked_for() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/torch-et");
        let dir = std::env::temp_dir().join(format!("exaviz-et-ranks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (from, to) in [("rank0.et.json.gz", "rank2.et.json.gz"), ("rank1.et.json.gz", "rank10.et.json.gz")] {
            std::fs::copy(src.join(from), dir.join(to)).unwrap();
        }
        let warning =
            |d: &exaviz_model::dataset::Dataset| d.warnings.iter().find(|w| w.contains("one per rank")).cloned();
        let d = open_dir("run", &dir, false, None, &|_, _| {}).unwrap();
        let w = warning(&d).unwrap();
        assert!(w.contains("the first rank's") && w.contains("rank2.et.json.gz"), "{w}");
        let d = open_dir("run", &dir, false, Some(10), &|_, _| {}).unwrap();
        let w = warning(&d).unwrap();
        assert!(w.contains("rank 10's") && w.contains("rank10.et.json.gz"), "{w}");
        assert!(d.opgraph.is_some());
        let e = open_dir("run", &dir, false, Some(3), &|_, _| {}).unwrap_err().to_string();
        assert_eq!(e, "run: rank=3: no execution trace of that rank here (ranks 2, 10)");
        // Beside the profiles: the ranks' graphs differ, and the one asked for is read.
        let a = open_dir("run", &src, false, Some(0), &|_, _| {}).unwrap();
        let b = open_dir("run", &src, false, Some(1), &|_, _| {}).unwrap();
        assert!(a.opgraph.is_some() && b.opgraph.is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn jax_cpu_backend_devices_come_from_device_ordinal() {
        let p = part(
            r#"[{"ph": "M", "name": "thread_name", "pid": 1, "tid": 5, "args": {"name": "tf_Compute"}},
            {"ph": "X", "name": "dot.1", "pid": 1, "tid": 5, "ts": 0, "dur": 3, "args": {"device_ordinal": "0", "flops": "1000"}},
            {"ph": "X", "name": "dot.1", "pid": 1, "tid": 6, "ts": 1, "dur": 3, "args": {"device_ordinal": "1", "flops": "1000"}},
            {"ph": "X", "name": "collective-permute.2", "pid": 1, "tid": 5, "ts": 4, "dur": 2, "args": {"device_ordinal": "0", "long_name": "collective-permute.2 = f32[8] collective-permute(x), source_target_pairs={{0,1}}"}},
            {"ph": "X", "name": "collective-permute.2", "pid": 1, "tid": 6, "ts": 4, "dur": 2, "args": {"device_ordinal": "1", "long_name": "source_target_pairs={{0,1}}"}}]"#,
        );
        let t = training(&[p]).unwrap();
        assert_eq!(t.source, "JAX");
        assert_eq!(t.devices.len(), 2);
        assert_eq!((t.devices[0].stage, t.devices[1].stage), (0, 1), "the permute makes two stages");
        let classes: Vec<Class> = (0..t.ops.len()).map(|i| t.ops.class(i)).collect();
        assert_eq!(classes, [Class::Forward, Class::Send, Class::Forward, Class::Recv]);
        assert_eq!(t.ops.peer[1], 1);
        assert!(t.has_flops);
    }

    #[test]
    fn inconsistent_ranks_and_empty_traces_are_one_line() {
        let a = || {
            part(
                r#"{"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 0, "dur": 1}]}"#,
            )
        };
        let e = training(&[a(), a()]).err().unwrap().to_string();
        assert!(e.contains("inconsistent ranks across files") && !e.contains('\n'), "{e}");
        let w = part(
            r#"{"distributedInfo": {"rank": 1, "world_size": 4}, "traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 0, "dur": 1}]}"#,
        );
        assert!(training(&[a(), w]).err().unwrap().to_string().contains("world size 4 here, 2 in"));
        let none = part(r#"[{"ph": "i", "name": "mark", "pid": 0, "tid": 0, "ts": 1}]"#);
        assert!(training(&[none]).err().unwrap().to_string().contains("no device lanes"));
    }

    /// A run opened with its files parsed in parallel is the run opened one file after another
    /// (a pool of one thread), on every folder of Chrome traces in `../shared/data`.
    #[test]
    fn the_parallel_reader_gives_the_serial_model() {
        for rel in ["kineto-dlrm-8gpu", "kineto", "perfflow", "rocprofiler-chrome"] {
            let Some(dir) = exaviz_model::testing::shared_data(rel) else { return };
            let open = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let d = pool.install(|| open_dir(rel, &dir, false, None, &|_, _| {}));
                match d {
                    Ok(d) => format!("{:?}", (&d.trace, &d.training, &d.opgraph, &d.warnings)),
                    Err(e) => e.to_string(),
                }
            };
            let serial = open(1);
            assert!(serial.len() > 1000 || rel == "kineto", "{rel}: {serial}");
            assert!(serial == open(4), "{rel}: four threads give another model than one");
        }
    }

    /// A rank file cut short in a run: one warning line naming it, the other ranks open;
    /// `strict` refuses the run instead, naming the file.
    #[test]
    fn a_broken_rank_is_left_out_with_a_warning_unless_strict() {
        let Some(real) = exaviz_model::testing::shared_data("kineto-dlrm-8gpu") else { return };
        let dir = std::env::temp_dir().join(format!("exaviz-broken-rank-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = files_in(&real);
        for (i, f) in files.iter().enumerate() {
            let mut bytes = std::fs::read(f).unwrap();
            if i == 3 {
                bytes.truncate(bytes.len() / 2);
            }
            std::fs::write(dir.join(f.file_name().unwrap()), bytes).unwrap();
        }
        let broken = dir.join(files[3].file_name().unwrap()).display().to_string();
        let d = open_dir("run", &dir, false, None, &|_, _| {}).unwrap();
        let lines: Vec<&String> = d.warnings.iter().filter(|w| w.contains("left out of the run")).collect();
        assert_eq!(lines.len(), 1, "{:?}", d.warnings);
        assert!(lines[0].starts_with(&format!("{broken}: ends too early")), "{}", lines[0]);
        assert_eq!(d.training.as_ref().unwrap().devices.len(), files.len() - 1);
        let e = open_dir("run", &dir, true, None, &|_, _| {}).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{broken}: ends too early")) && !e.contains('\n'), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The real Kineto trace with bytes flipped (values, names, ranks, peers, nesting): the
    /// training model or a one-line error, never a panic.
    #[test]
    fn mutated_kineto_profiles_never_panic() {
        let Some(path) = exaviz_model::testing::shared_data("kineto/sampled_rank-0.json.gz") else { return };
        let gz = std::fs::read(&path).unwrap();
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&gz[..]), &mut plain).unwrap();
        let (mut models, mut errors) = (0, 0);
        let step = plain.len() / 150;
        for i in (0..plain.len()).step_by(step.max(1)) {
            for x in [0x01u8, 0x04, 0x20] {
                let mut b = plain.clone();
                b[i] ^= x;
                let r = std::panic::catch_unwind(|| {
                    let t = crate::chrome::parse(&b[..], "m.json").map_err(|e| e.to_string())?;
                    training(&[Part { trace: t, input: "m.json".into() }])
                        .map(|t| t.ops.len())
                        .map_err(|e| e.to_string())
                });
                match r {
                    Err(_) => panic!("byte {i} ^ {x:#x} panicked"),
                    Ok(Ok(_)) => models += 1,
                    Ok(Err(e)) => {
                        assert!(!e.contains('\n'), "{e}");
                        errors += 1;
                    }
                }
            }
        }
        assert!(models > 100 && errors > 10, "{models} models, {errors} errors");
    }
}
