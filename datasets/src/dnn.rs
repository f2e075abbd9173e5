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

use exaviz_engine::training::{Builder, Class, RawOp, Training, classify};
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

use crate::SourceError;
use crate::chrome::{ChromeTrace, Slice};

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
fn rank_of(part: &Part, index: usize) -> Result<(u32, Option<u64>), SourceError> {
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
    let start = (s.start_ns - t0).max(0) as u64;
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

/// The training model of one or more files of one run (one clock).
pub fn training(parts: &[Part]) -> Result<Training, SourceError> {
    let what = parts.iter().map(|p| p.input.as_str()).collect::<Vec<_>>().join(", ");
    let mut ranks: HashMap<u32, &str> = HashMap::default();
    let mut world: Option<(u64, &str)> = None;
    let mut declared = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let (rank, w) = rank_of(p, i)?;
        if let Some(other) = ranks.insert(rank, &p.input) {
            return Err(SourceError::invalid(
                &p.input,
                format!("inconsistent ranks across files: {other} is also rank {rank}"),
            ));
        }
        if let Some(w) = w {
            match world {
                Some((ow, of)) if ow != w => {
                    return Err(SourceError::invalid(
                        &p.input,
                        format!("inconsistent ranks across files: world size {w} here, {ow} in {of}"),
                    ));
                }
                _ => world = Some((w, &p.input)),
            }
            if u64::from(rank) >= w {
                return Err(SourceError::invalid(&p.input, format!("rank {rank} is not below the world size {w}")));
            }
        }
        declared.push(rank);
    }
    let t0 = parts.iter().flat_map(|p| p.trace.slices.iter().map(|s| s.start_ns)).min().unwrap_or(0);
    let mut b = Builder::default();
    let mut sources = Vec::new();
    for (p, &rank) in parts.iter().zip(&declared) {
        let t = &p.trace;
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
        if kineto {
            sources.push("Kineto");
            kineto_devices(&mut b, t, rank, parts.len(), t0);
        } else if jax_lanes.iter().any(|&x| x) || ordinal {
            sources.push("JAX");
            jax_devices(&mut b, t, &jax_lanes, rank, t0);
        } else {
            sources.push("PerfFlowAspect");
            process_devices(&mut b, t, t0);
        }
        // Peak memory from counters (`memory.*`, Kineto's `Total Allocated`).
        for c in &t.counters {
            let name = t.names[c.name as usize].to_ascii_lowercase();
            if name.starts_with("memory") || name.contains("allocated") {
                let pid = &t.lanes[c.lane as usize].pid;
                if let Some(d) = b.find(&format!("{pid}@{rank}")) {
                    b.memory(d, c.value as u64);
                }
            }
        }
    }
    sources.sort_unstable();
    sources.dedup();
    b.source = sources.join(" + ");
    b.finish().map_err(|m| SourceError::invalid(what, m))
}

/// Kineto: a device per GPU pid with kernels; steps from `ProfilerStep#N`.
fn kineto_devices(b: &mut Builder, t: &ChromeTrace, rank: u32, files: usize, t0: i64) {
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
                b.op(d, raw_op(t, s, r, t0));
            }
        } else if t.names[s.name as usize].starts_with("ProfilerStep#") {
            let start = (s.start_ns - t0).max(0) as u64;
            b.step(t.names[s.name as usize].replace("ProfilerStep#", "step "), start, start + s.dur_ns.max(0) as u64);
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
        let start = (s.start_ns - t0).max(0) as u64;
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
        b.op(d, raw_op(t, s, r, t0));
    }
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
        b.op(d, raw_op(t, s, r, t0));
    }
}

/// Chrome trace files under `dir` (`.json`, `.json.gz`, `.pfw`; down to four folders deep,
/// as JAX writes `plugins/profile/RUN/HOST.trace.json.gz`), sorted.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    fn walk(d: &Path, depth: u32, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && depth < 4 {
                walk(&p, depth + 1, out);
            } else {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if n.ends_with(".json") || n.ends_with(".json.gz") || n.ends_with(".pfw") {
                    out.push(p);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out);
    out.sort();
    out.truncate(1 << 16);
    out
}

/// Several files as one trace for the other views: lanes named after their file's rank (one
/// file as it is).
pub fn merge(parts: &[Part]) -> std::borrow::Cow<'_, ChromeTrace> {
    if let [one] = parts {
        return std::borrow::Cow::Borrowed(&one.trace);
    }
    let mut out = ChromeTrace::default();
    let mut name_of: HashMap<String, u32> = HashMap::default();
    for (i, p) in parts.iter().enumerate() {
        let t = &p.trace;
        let rank = rank_of(p, i).map_or(i as u32, |r| r.0);
        let lane0 = out.lanes.len() as u32;
        for l in &t.lanes {
            let mut l = l.clone();
            l.pid = format!("rank {rank}: {}", l.pid);
            if !l.process.is_empty() {
                l.process = format!("rank {rank} {}", l.process);
            }
            out.lanes.push(l);
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
                args: None,
            })
            .collect();
        out.slices.extend(slices);
        out.unmatched += t.unmatched;
        out.events += t.events;
    }
    std::borrow::Cow::Owned(out)
}

/// Opens a run: one file, a folder of files or a comma-separated list, as a dataset with its
/// training model (or without, with the reason, where no device lanes are found).
pub fn open(input: &str, paths: &[PathBuf]) -> Result<exaviz_engine::model::Dataset, SourceError> {
    if paths.is_empty() {
        return Err(SourceError::invalid(input, "holds no Chrome trace files (.json, .json.gz, .pfw)"));
    }
    let mut parts = Vec::new();
    for p in paths {
        parts.push(Part { trace: crate::chrome::read(p)?, input: p.display().to_string() });
    }
    let unmatched: u64 = parts.iter().map(|p| p.trace.unmatched).sum();
    if unmatched > 0 {
        // As Perfetto does: counted, the rest of the trace kept.
        eprintln!("warning: {input}: {unmatched} B or E events without their partner were left out");
    }
    let mut d = crate::chrome::dataset(&merge(&parts), input);
    match training(&parts) {
        Ok(t) => d.training = Some(std::sync::Arc::new(t)),
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

    /// The real Kineto trace with bytes flipped (values, names, ranks, peers, nesting): the
    /// training model or a one-line error, never a panic.
    #[test]
    fn mutated_kineto_profiles_never_panic() {
        let Some(path) = crate::chrome::tests::shared("kineto/sampled_rank-0.json.gz") else { return };
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
