//! The dependency graph of a run: what each location did (its innermost regions, and where it
//! waited) and the edges by which one location's progress waited on another's.
//!
//! Edges come from the columnar model as it is, for every format alike:
//! - a message, send → receive (MPI point-to-point, a pipeline's send/receive pair, a Chrome
//!   trace's flow; a flow from a host thread to a GPU stream is a kernel's launch); and, where
//!   a blocking send waited for its receive to begin (a late receiver), the receive call's
//!   start → the send call's end;
//! - a collective, the last participant's entry → every other participant's exit (the
//!   instances matched by operation and count on each location, split where they share no
//!   moment);
//! - a synchronisation call on a host thread (`cudaStreamSynchronize`, ...) → the last kernel
//!   that ended within it on a GPU stream of the same process;
//! - work handed to another thread of the process and waited for: c10d's call → gloo's span
//!   and back; a backward pass run by PyTorch's autograd thread while the thread that asked for
//!   it is blocked, from the caller's last work before the pass → the pass, and from the pass's
//!   end → the caller's return.
//!
//! An edge binds (the destination waited for it) where the destination spent the whole time
//! from the send to the arrival waiting: in a waiting region (a receive, a wait, a collective,
//! a synchronisation) or, on a GPU stream, idle. Only binding edges are kept: the walk and the
//! delay analysis need no other.

use exaviz_model::training::{Class, Group, Training};
use exaviz_model::{LocationKind, Trace};
use rayon::prelude::*;

/// What an edge is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// A point-to-point message.
    Message,
    /// A host thread's launch of a GPU kernel.
    Launch,
    /// The last entry into a collective, to a participant's exit.
    Collective,
    /// A kernel's end, to the host's synchronisation call that waited for it.
    Sync,
}

impl EdgeKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Launch => "kernel launch",
            Self::Collective => "collective",
            Self::Sync => "synchronisation",
        }
    }
}

/// One binding edge: `src` at `sent` let `dst` go on at `arrived`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub kind: EdgeKind,
    pub src: u32,
    pub sent: u64,
    pub dst: u32,
    pub arrived: u64,
}

/// A stretch of one region on a location, innermost: nested regions cut their parents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: u64,
    pub end: u64,
    pub region: u32,
}

/// What every location did: its innermost pieces and its waiting stretches, both in time order.
#[derive(Clone, Debug, Default)]
pub struct Lanes {
    pub pieces: Vec<Vec<Piece>>,
    /// Maximal stretches of waiting: waiting regions back to back and, on a GPU stream, idle.
    pub stretches: Vec<Vec<(u64, u64)>>,
    /// Per region: whether time in it is waiting.
    pub waiting: Vec<bool>,
    /// Per location its process (the name before its last ` / `), an index into `processes`.
    pub process: Vec<u32>,
    pub processes: Vec<String>,
    pub kind: Vec<LocationKind>,
}

/// Whether time in a region is spent waiting on others: MPI's calls, receives, waits,
/// synchronisations, barriers, collectives, NCCL's kernels and calls.
pub fn is_waiting(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("mpi_")
        || n.starts_with("nccl")
        || n.starts_with("rccl")
        || n.contains("recv")
        || n.contains("wait")
        || n.contains("synchron")
        || n.contains("barrier")
        || collective_key(name).is_some()
}

/// The operation a collective region performs, lower case without separators
/// (`MPI_Allreduce`, `gloo:all_reduce`, `ncclKernel_AllReduce_RING_LL_Sum_float` are all
/// `allreduce`); `None` for a region that is not one.
pub fn collective_key(name: &str) -> Option<&'static str> {
    // c10d's operators and NCCL's host calls only queue the work (their thread goes on): not
    // where anyone waits.
    if name.starts_with("c10d::") || name.starts_with("nccl:") {
        return None;
    }
    let n: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    // NCCL's point-to-point kernels, grouped as an all-to-all's are, run together on all ranks.
    if (n.starts_with("ncclkernel") || n.starts_with("nccldevkernel")) && n.contains("sendrecv") {
        return Some("sendrecv");
    }
    const OPS: [&str; 9] =
        ["allreduce", "allgather", "alltoall", "reducescatter", "barrier", "bcast", "broadcast", "scatter", "gather"];
    OPS.into_iter()
        .find(|op| n.contains(op))
        .or_else(|| (n == "mpireduce" || n.ends_with("kernelreduce")).then_some("reduce"))
}

/// Whether a host call waits for a GPU's work (`cudaStreamSynchronize`, `hipDeviceSynchronize`,
/// `cudaEventSynchronize`).
pub fn is_sync(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    (n.starts_with("cuda") || n.starts_with("hip")) && n.contains("synchronize")
}

/// Whether a region only marks the profiler's own span or a step (Kineto's `PyTorch Profiler
/// (0)`, `ProfilerStep#3`): no work of its own, its time outside its children untraced.
pub fn is_profiler(name: &str) -> bool {
    name.starts_with("PyTorch Profiler") || name.starts_with("ProfilerStep#")
}

/// A location's process: its name before the last ` / ` (the whole name where none); a GPU
/// stream named under its device (Nsight Systems' `P / GPU 0 NAME / stream 7`) is P's.
pub(crate) fn process_name(name: &str) -> &str {
    let p = name.rsplit_once(" / ").map_or(name, |(p, _)| p);
    match p.rsplit_once(" / ") {
        Some((q, device)) if device.starts_with("GPU ") => q,
        _ => p,
    }
}

/// The intervals of each location, by start (outer before inner).
pub fn rows_by_location(t: &Trace) -> Vec<Vec<usize>> {
    let i = &t.intervals;
    let mut by: Vec<Vec<usize>> = vec![Vec::new(); t.locations.name.len()];
    for k in 0..i.start.len() {
        if let Some(v) = by.get_mut(i.location[k] as usize)
            && i.end[k] >= i.start[k]
        {
            v.push(k);
        }
    }
    by.par_iter_mut().for_each(|v| v.sort_unstable_by_key(|&k| (i.start[k], std::cmp::Reverse(i.end[k]), i.depth[k])));
    by
}

/// A row of calls a reader split off its thread's row (Nsight Systems' OS runtime calls, on
/// `THREAD · OS runtime`): the thread's location, where one is named so.
const SUB_ROW: &str = " · ";

/// [`rows_by_location`], with the rows of a thread's sub-row (its OS runtime calls, which nest
/// within its CUDA calls) on the thread's own: one thread, one lane of work, so that the path
/// walks through its calls of both kinds. The sub-row's location is left with none.
pub fn rows_by_thread(t: &Trace) -> Vec<Vec<usize>> {
    let mut by = rows_by_location(t);
    let names = &t.locations.name;
    if !names.iter().any(|n| n.contains(SUB_ROW)) {
        return by;
    }
    let index: std::collections::HashMap<&str, usize> =
        names.iter().enumerate().map(|(l, n)| (n.as_str(), l)).collect();
    let i = &t.intervals;
    for (l, n) in names.iter().enumerate() {
        let Some(&owner) = n.rsplit_once(SUB_ROW).and_then(|(thread, _)| index.get(thread)) else { continue };
        if owner == l || by[l].is_empty() {
            continue;
        }
        let moved = std::mem::take(&mut by[l]);
        by[owner].extend(moved);
        by[owner].sort_unstable_by_key(|&k| (i.start[k], std::cmp::Reverse(i.end[k]), i.depth[k]));
    }
    by
}

/// The innermost pieces of `rows` (sorted as [`rows_by_location`] sorts them): a child cuts
/// its parent; a child reaching past its parent's end ends the parent where it begins.
pub(crate) fn pieces_of(t: &Trace, rows: &[usize], skip: &[bool]) -> Vec<Piece> {
    let i = &t.intervals;
    let mut out = Vec::with_capacity(rows.len() * 2);
    let mut stack: Vec<(u64, u32)> = Vec::new();
    let mut at = 0u64;
    let emit = |out: &mut Vec<Piece>, start: u64, end: u64, region: u32| {
        if end > start {
            out.push(Piece { start, end, region });
        }
    };
    for &k in rows {
        if skip.get(i.kind[k] as usize).copied().unwrap_or(false) {
            continue;
        }
        let (s, e) = (i.start[k], i.end[k]);
        while let Some(&(end, region)) = stack.last() {
            if end > s {
                break;
            }
            emit(&mut out, at, end, region);
            at = at.max(end);
            stack.pop();
        }
        if let Some(&(_, region)) = stack.last() {
            emit(&mut out, at, s, region);
        }
        at = at.max(s);
        // A region reaching past the end of the one it began in (gloo's receive begun within
        // c10d's call) is not cut: the other's rest is its.
        while stack.last().is_some_and(|&(pe, _)| pe < e) {
            stack.pop();
        }
        let end = stack.last().map_or(e, |&(pe, _)| e.min(pe));
        stack.push((end, i.kind[k]));
    }
    while let Some((end, region)) = stack.pop() {
        emit(&mut out, at, end, region);
        at = at.max(end);
    }
    out
}

/// The waiting stretches of `pieces`: waiting pieces back to back, and, where `idle_since` is
/// given (a GPU stream, idle from the run's start until its first work), gaps.
fn stretches_of(pieces: &[Piece], waiting: &[bool], idle_since: Option<u64>) -> Vec<(u64, u64)> {
    let idle_waits = idle_since.is_some();
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut last_end: Option<u64> = idle_since;
    for p in pieces {
        if idle_waits && let Some(e) = last_end.filter(|&e| e < p.start) {
            push_stretch(&mut out, e, p.start);
        }
        if waiting.get(p.region as usize).copied().unwrap_or(false) {
            push_stretch(&mut out, p.start, p.end);
        }
        last_end = Some(p.end);
    }
    out
}

fn push_stretch(out: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    match out.last_mut() {
        Some(last) if last.1 >= a => last.1 = last.1.max(b),
        _ => out.push((a, b)),
    }
}

impl Lanes {
    pub fn new(t: &Trace) -> Self {
        let rows = rows_by_thread(t);
        Self::from_rows(t, &rows)
    }

    pub fn from_rows(t: &Trace, rows: &[Vec<usize>]) -> Self {
        let waiting: Vec<bool> = t.region_names.iter().map(|n| is_waiting(n)).collect();
        // A Chrome trace's lanes are untyped: its GPU streams are the lanes named `stream N`.
        let kind: Vec<LocationKind> = (0..t.locations.name.len())
            .map(|l| match t.locations.kind_of(l) {
                LocationKind::Unknown
                    if t.locations.name[l].rsplit(" / ").next().is_some_and(|n| n.starts_with("stream ")) =>
                {
                    LocationKind::GpuStream
                }
                k => k,
            })
            .collect();
        let skip: Vec<bool> = t.region_names.iter().map(|n| is_profiler(n)).collect();
        let run_start = t.span().map_or(0, |s| s.0);
        let pieces: Vec<Vec<Piece>> = rows.par_iter().map(|r| pieces_of(t, r, &skip)).collect();
        let stretches = pieces
            .par_iter()
            .enumerate()
            .map(|(l, p)| stretches_of(p, &waiting, (kind[l] == LocationKind::GpuStream).then_some(run_start)))
            .collect();
        let mut processes: Vec<String> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let process = t
            .locations
            .name
            .iter()
            .map(|n| {
                let p = process_name(n);
                *index.entry(p.to_string()).or_insert_with(|| {
                    processes.push(p.to_string());
                    processes.len() as u32 - 1
                })
            })
            .collect();
        Self { pieces, stretches, waiting, process, processes, kind }
    }

    /// The process of a training model's device: the one named as the device, or named after
    /// it (`rank 3 python` for the device `rank 3`), as the profile's reader names both.
    pub fn process_of_device(&self, device: &str) -> Option<u32> {
        let prefix = format!("{device} ");
        self.processes.iter().position(|p| p == device || p.starts_with(&prefix)).map(|p| p as u32)
    }

    /// The innermost piece of `loc` holding the time `at`.
    pub fn piece_at(&self, loc: u32, at: u64) -> Option<Piece> {
        let p = self.pieces.get(loc as usize)?;
        let k = p.partition_point(|x| x.end <= at);
        p.get(k).copied().filter(|x| x.start <= at)
    }

    /// The waiting stretch of `loc` holding the time `at`.
    pub fn stretch_at(&self, loc: u32, at: u64) -> Option<(u64, u64)> {
        let s = self.stretches.get(loc as usize)?;
        let k = s.partition_point(|&(a, _)| a <= at);
        s[..k].last().copied().filter(|&(_, b)| b >= at)
    }

    /// Where the work `loc` did up to `at` began: the end of its last waiting stretch before
    /// `at`, or its first piece's start.
    pub fn busy_since(&self, loc: u32, at: u64) -> u64 {
        let l = loc as usize;
        let first = self.pieces.get(l).and_then(|p| p.first()).map_or(at, |p| p.start.min(at));
        let Some(s) = self.stretches.get(l) else { return first };
        let k = s.partition_point(|&(_, b)| b <= at);
        s[..k].last().map_or(first, |&(_, b)| b)
    }

    /// The region of the last piece of `loc` that ends at or before `at`, and of the first that
    /// begins at or after `to`: the regions around untraced time `[at, to)`.
    pub fn regions_around(&self, loc: u32, at: u64, to: u64) -> (Option<u32>, Option<u32>) {
        let Some(p) = self.pieces.get(loc as usize) else { return (None, None) };
        let before = p[..p.partition_point(|x| x.start < at)].iter().rev().find(|x| x.end <= at).map(|x| x.region);
        let after = p.get(p.partition_point(|x| x.start < to)).map(|x| x.region);
        (before, after)
    }

    /// Calls `f(region, ticks)` for the time of `loc` in `[from, to)`, by innermost region
    /// (`None`: in none).
    pub fn each_region(&self, loc: u32, (from, to): (u64, u64), mut f: impl FnMut(Option<u32>, u64)) {
        let Some(p) = self.pieces.get(loc as usize) else {
            f(None, to.saturating_sub(from));
            return;
        };
        let mut at = from;
        let first = p.partition_point(|x| x.end <= from);
        for x in &p[first..] {
            if x.start >= to || at >= to {
                break;
            }
            if x.start > at {
                f(None, x.start - at);
                at = x.start;
            }
            let end = x.end.min(to);
            if end > at {
                f(Some(x.region), end - at);
                at = end;
            }
        }
        if to > at {
            f(None, to - at);
        }
    }

    /// The share of its own time in `window` (from its first piece's start to its last one's
    /// end, clipped to the window) that `loc` spent in pieces of work.
    pub fn busy_share(&self, loc: u32, (from, to): (u64, u64)) -> f64 {
        let Some(p) = self.pieces.get(loc as usize) else { return 0.0 };
        let first = p.partition_point(|x| x.end <= from);
        let (mut busy, mut lo, mut hi) = (0u64, u64::MAX, 0u64);
        for x in p[first..].iter().take_while(|x| x.start < to) {
            let (a, b) = (x.start.max(from), x.end.min(to));
            busy += b.saturating_sub(a);
            lo = lo.min(a);
            hi = hi.max(b);
        }
        if hi <= lo { 0.0 } else { busy as f64 / (hi - lo) as f64 }
    }

    /// The end of the last piece of `loc` ending by `by`.
    pub fn last_end(&self, loc: u32, by: u64) -> Option<u64> {
        let p = self.pieces.get(loc as usize)?;
        let k = p.partition_point(|x| x.start < by);
        p[..k].last().map(|x| x.end.min(by))
    }

    /// The first piece's start of `loc` at or after `from`.
    pub fn first_start(&self, loc: u32, from: u64) -> Option<u64> {
        let p = self.pieces.get(loc as usize)?;
        let k = p.partition_point(|x| x.end <= from);
        p.get(k).map(|x| x.start.max(from))
    }

    /// Adds waiting stretches `(location, from, to)` found beside the regions' (a caller's
    /// untraced wait for work it handed to another thread), merged with those there.
    fn add_stretches(&mut self, mut added: Vec<(u32, u64, u64)>) {
        added.sort_unstable();
        for group in added.chunk_by(|a, b| a.0 == b.0) {
            let Some(s) = self.stretches.get_mut(group[0].0 as usize) else { continue };
            s.extend(group.iter().map(|&(_, a, b)| (a, b)));
            s.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(s.len());
            for &(a, b) in s.iter() {
                push_stretch(&mut merged, a, b);
            }
            *s = merged;
        }
    }

    /// Whether `loc` waited all the time from `sent` to `arrived`.
    fn waited(&self, loc: u32, sent: u64, arrived: u64) -> bool {
        self.stretch_at(loc, arrived).is_some_and(|(a, _)| a <= sent)
    }
}

/// The run's binding edges, by destination and arrival: `edges` with `offsets[l]..offsets[l+1]`
/// the edges into location `l`.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub lanes: Lanes,
    pub edges: Vec<Edge>,
    pub offsets: Vec<usize>,
}

impl Graph {
    pub fn new(t: &Trace) -> Self {
        Self::with_training(t, None)
    }

    /// The graph of `t` with, where a training model of the same files is given, its matched
    /// sends and receives and its collectives (grouped by stage, as the model groups them) in
    /// place of those found from the regions' names alone.
    pub fn with_training(t: &Trace, training: Option<&Training>) -> Self {
        let rows = rows_by_thread(t);
        let mut lanes = Lanes::from_rows(t, &rows);
        let mut edges = message_edges(t, &lanes);
        let mut skip = vec![false; t.region_names.len()];
        if let Some(tr) = training {
            edges.extend(training_edges(t, &lanes, &rows, tr, &mut skip));
        }
        edges.extend(collective_edges(t, &rows, &skip));
        edges.extend(sync_edges(t, &lanes, &rows));
        let (handoffs, idle) = handoff_edges(t, &lanes, &rows);
        edges.extend(handoffs);
        edges.extend(autograd_edges(t, &lanes, &rows));
        lanes.add_stretches(idle);
        edges.par_sort_unstable_by_key(|e| (e.dst, e.arrived, e.sent, e.src));
        let n = t.locations.name.len();
        let mut offsets = vec![0usize; n + 1];
        for e in &edges {
            offsets[e.dst as usize + 1] += 1;
        }
        for l in 0..n {
            offsets[l + 1] += offsets[l];
        }
        Self { lanes, edges, offsets }
    }

    /// The edges into `loc`, by arrival.
    pub fn into(&self, loc: u32) -> &[Edge] {
        let l = loc as usize;
        match (self.offsets.get(l), self.offsets.get(l + 1)) {
            (Some(&a), Some(&b)) => &self.edges[a..b],
            _ => &[],
        }
    }
}

/// Messages: the send → the receive where the receiver waited for it; and, where the sender
/// waited in a blocking send until the receive began (a late receiver), the receive call's
/// start → the send call's end.
///
/// The messages are taken grouped by receiver (the receive's side of both tests, in one
/// location's lanes at a time), then by sender (the send's side of the late-receiver test),
/// each copied into its group (read in row order, written to a few thousand places): taken in
/// the order the rows come, each test would jump between every rank's lanes.
fn message_edges(t: &Trace, lanes: &Lanes) -> Vec<Edge> {
    let m = &t.messages;
    let n = t.locations.name.len() as u32;
    let gpu = |l: u32| lanes.kind[l as usize] == LocationKind::GpuStream;
    let rows = (0..m.source.len()).map(|k| Msg {
        src: m.source[k],
        dst: m.destination[k],
        sent: m.send_time[k],
        at: m.recv_time[k],
    });
    let by_dst = Groups::of(
        rows,
        n,
        |x| x.dst,
        |x| x.at != u64::MAX && x.src < n && x.dst < n && x.src != x.dst && x.sent <= x.at,
    );
    // The binding edges, and per message sent from host to host, where its receive call began
    // (in `at`, for the late-receiver test).
    let parts: Vec<(Vec<Edge>, Vec<Msg>)> = by_dst
        .par_blocks()
        .map(|block| {
            let (mut edges, mut began) = (Vec::new(), Vec::new());
            for x in block {
                let kind = if gpu(x.dst) && !gpu(x.src) { EdgeKind::Launch } else { EdgeKind::Message };
                if lanes.waited(x.dst, x.sent, x.at) {
                    edges.push(Edge { kind, src: x.src, sent: x.sent, dst: x.dst, arrived: x.at });
                }
                if kind == EdgeKind::Message
                    && let Some(r) =
                        lanes.piece_at(x.dst, x.at.saturating_sub(1)).or_else(|| lanes.piece_at(x.dst, x.at))
                {
                    began.push(Msg { at: r.start, ..*x });
                }
            }
            (edges, began)
        })
        .collect();
    let mut edges: Vec<Edge> = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    let mut began: Vec<Msg> = Vec::with_capacity(parts.iter().map(|p| p.1.len()).sum());
    for (e, b) in parts {
        edges.extend(e);
        began.extend(b);
    }
    drop(by_dst);
    let by_src = Groups::of(began.iter().copied(), n, |x| x.src, |_| true);
    drop(began);
    let late: Vec<Vec<Edge>> = by_src
        .par_blocks()
        .map(|block| block.iter().filter_map(|x| late_receiver(lanes, (x.src, x.sent), (x.dst, x.at))).collect())
        .collect();
    edges.extend(late.into_iter().flatten());
    edges
}

/// A message as the edges' tests read it; `at`, its arrival or where its receive call began.
#[derive(Clone, Copy, Default)]
struct Msg {
    src: u32,
    dst: u32,
    sent: u64,
    at: u64,
}

/// Messages grouped by a location: `rows[offsets[l]..offsets[l + 1]]`, in row order within
/// a group.
struct Groups {
    offsets: Vec<usize>,
    rows: Vec<Msg>,
}

impl Groups {
    /// The messages of `rows` that `keep`, grouped by `key` (below `n`): a counting sort.
    fn of(
        rows: impl Iterator<Item = Msg> + Clone,
        n: u32,
        key: impl Fn(&Msg) -> u32,
        keep: impl Fn(&Msg) -> bool,
    ) -> Self {
        let mut offsets = vec![0usize; n as usize + 1];
        for x in rows.clone().filter(|x| keep(x) && key(x) < n) {
            offsets[key(&x) as usize + 1] += 1;
        }
        for l in 0..n as usize {
            offsets[l + 1] += offsets[l];
        }
        let mut at = offsets.clone();
        let mut out = vec![Msg::default(); offsets[n as usize]];
        for x in rows.filter(|x| keep(x) && key(x) < n) {
            let l = key(&x) as usize;
            out[at[l]] = x;
            at[l] += 1;
        }
        Self { offsets, rows: out }
    }

    /// The rows in blocks of whole groups (about [`BLOCKS`] of them), in parallel.
    fn par_blocks(&self) -> impl IndexedParallelIterator<Item = &[Msg]> + '_ {
        let n = self.offsets.len() - 1;
        let per = n.div_ceil(BLOCKS).max(1);
        (0..n.div_ceil(per)).into_par_iter().map(move |b| {
            let (a, z) = (b * per, ((b + 1) * per).min(n));
            &self.rows[self.offsets[a]..self.offsets[z]]
        })
    }
}

/// Blocks of receivers or senders that the message edges are found in at once.
const BLOCKS: usize = 256;

/// The edge by which a late receiver held its sender: the sender in a waiting piece (a
/// blocking send) from before the receive call began (at `began`) until after; the receive
/// call's start → the send call's end.
fn late_receiver(lanes: &Lanes, (src, sent): (u32, u64), (dst, began): (u32, u64)) -> Option<Edge> {
    let send = lanes.piece_at(src, sent).filter(|p| lanes.waiting.get(p.region as usize).copied().unwrap_or(false))?;
    (send.start < began && began < send.end && lanes.waited(src, began, send.end)).then_some(Edge {
        kind: EdgeKind::Message,
        src: dst,
        sent: began,
        dst: src,
        arrived: send.end,
    })
}

/// One location's part in a collective: where, entry, exit.
type Part = (u32, u64, u64);

/// Collective edges: regions named as collectives (and the model's collective rows where no
/// region stands for them), the n-th of an operation on each location matched across
/// locations, split into instances that share a moment (the last entry before the first exit).
fn collective_edges(t: &Trace, rows: &[Vec<usize>], skip: &[bool]) -> Vec<Edge> {
    use std::collections::HashMap;
    let i = &t.intervals;
    let key_of_region: Vec<Option<&'static str>> = t.region_names.iter().map(|n| collective_key(n)).collect();
    let key_of_op: Vec<Option<&'static str>> = t.collective_names.iter().map(|n| collective_key(n)).collect();
    let c = &t.collectives;
    // The root of a rooted operation (broadcast, scatter, reduce, gather) where the model's rows
    // give it, by the location and times of the call.
    let root_of: HashMap<(u32, u64, u64), u32> = (0..c.location.len())
        .filter(|&k| c.root[k] != u32::MAX)
        .map(|k| ((c.location[k], c.start[k], c.end[k]), c.root[k]))
        .collect();
    let mut parts: HashMap<(&'static str, u32), Vec<Part>> = HashMap::new();
    let mut roots: HashMap<(&'static str, u32), u32> = HashMap::new();
    let mut seen: std::collections::HashSet<(u32, u64, u64)> = std::collections::HashSet::new();
    for (l, rows) in rows.iter().enumerate() {
        let mut nth: HashMap<&'static str, u32> = HashMap::new();
        let mut open_until = 0u64;
        for &k in rows {
            let Some(key) = key_of_region.get(i.kind[k] as usize).copied().flatten() else { continue };
            if skip.get(i.kind[k] as usize).copied().unwrap_or(false) {
                continue;
            }
            // A collective inside another (MPI's calls within a library's) is the same one.
            if i.start[k] < open_until {
                continue;
            }
            open_until = i.end[k];
            let n = nth.entry(key).or_insert(0);
            parts.entry((key, *n)).or_default().push((l as u32, i.start[k], i.end[k]));
            if let Some(&r) = root_of.get(&(l as u32, i.start[k], i.end[k])) {
                roots.insert((key, *n), r);
            }
            seen.insert((l as u32, i.start[k], i.end[k]));
            *n += 1;
        }
    }
    let mut nth: HashMap<(u32, &'static str), u32> = HashMap::new();
    let mut order: Vec<usize> = (0..c.location.len()).collect();
    order.sort_unstable_by_key(|&k| (c.location[k], c.start[k]));
    for k in order {
        let (l, a, b) = (c.location[k], c.start[k], c.end[k]);
        if seen.contains(&(l, a, b)) || l as usize >= rows.len() || b < a {
            continue;
        }
        let key = key_of_op.get(c.op[k] as usize).copied().flatten().unwrap_or("collective");
        let n = nth.entry((l, key)).or_insert(0);
        // Numbered after the regions' of that operation, so that the two never meet.
        parts.entry((key, *n + (1 << 30))).or_default().push((l, a, b));
        if c.root[k] != u32::MAX {
            roots.insert((key, *n + (1 << 30)), c.root[k]);
        }
        *n += 1;
    }
    let mut edges = Vec::new();
    for (id, mut g) in parts {
        let (key, root) = (id.0, roots.get(&id).copied());
        g.sort_unstable_by_key(|p| (p.1, p.0));
        let mut from = 0;
        let mut first_exit = u64::MAX;
        for k in 0..=g.len() {
            if k < g.len() && g[k].1 <= first_exit {
                first_exit = first_exit.min(g[k].2);
                continue;
            }
            instance_edges(&g[from..k], (key, root), &mut edges);
            if k < g.len() {
                from = k;
                first_exit = g[k].2;
            }
        }
    }
    edges
}

/// Who waits for whom in one instance of collective `key` (its parts sorted by entry): where
/// the root is known, a broadcast's or scatter's other ranks wait for the root to enter, and a
/// reduce's or gather's root waits for the last to enter (the others go on); otherwise everyone
/// waits for the last to enter.
fn instance_edges(g: &[Part], (key, root): (&str, Option<u32>), edges: &mut Vec<Edge>) {
    let Some(&(last, entered, _)) = g.last() else { return };
    let rooted = root.and_then(|r| g.iter().find(|p| p.0 == r).copied());
    match (key, rooted) {
        ("bcast" | "broadcast" | "scatter", Some((r, sent, _))) => {
            for &(l, _, b) in g.iter().filter(|p| p.0 != r && p.1 < sent && p.2 >= sent) {
                edges.push(Edge { kind: EdgeKind::Collective, src: r, sent, dst: l, arrived: b });
            }
            return;
        }
        ("reduce" | "gather", Some((r, a, b))) => {
            if r != last && a < entered && b >= entered {
                edges.push(Edge { kind: EdgeKind::Collective, src: last, sent: entered, dst: r, arrived: b });
            }
            return;
        }
        _ => {}
    }
    for &(l, a, b) in &g[..g.len() - 1] {
        if l != last && a < entered && b >= entered {
            edges.push(Edge { kind: EdgeKind::Collective, src: last, sent: entered, dst: l, arrived: b });
        }
    }
}

/// A host's synchronisation call waited for the last kernel to end within it on a GPU stream
/// of its process.
fn sync_edges(t: &Trace, lanes: &Lanes, rows: &[Vec<usize>]) -> Vec<Edge> {
    let i = &t.intervals;
    let sync: Vec<bool> = t.region_names.iter().map(|n| is_sync(n)).collect();
    let mut streams: Vec<Vec<u32>> = vec![Vec::new(); lanes.processes.len()];
    for (l, k) in lanes.kind.iter().enumerate() {
        if *k == LocationKind::GpuStream {
            streams[lanes.process[l] as usize].push(l as u32);
        }
    }
    let mut edges = Vec::new();
    for (l, rows) in rows.iter().enumerate() {
        if lanes.kind[l] == LocationKind::GpuStream {
            continue;
        }
        let mine = &streams[lanes.process[l] as usize];
        for &k in rows {
            if !sync.get(i.kind[k] as usize).copied().unwrap_or(false) {
                continue;
            }
            let (a, b) = (i.start[k], i.end[k]);
            let last = mine
                .iter()
                .filter_map(|&s| {
                    let p = &lanes.pieces[s as usize];
                    let upto = p.partition_point(|x| x.end <= b);
                    p[..upto].last().filter(|x| x.end > a).map(|x| (x.end, s))
                })
                .max();
            if let Some((end, s)) = last {
                edges.push(Edge { kind: EdgeKind::Sync, src: s, sent: end, dst: l as u32, arrived: b });
            }
        }
    }
    edges
}

/// Edges of a training model's operators: a send to its matched receive, and each collective
/// (the same operator on the devices of one stage) from its last entry. An operator is found
/// in the trace as the region of its name on its device's process (`rank R`, as the profile's
/// reader names both), the n-th of that name there by start; the regions so found are marked
/// in `skip`, so that collectives are not also matched by name alone.
fn training_edges(t: &Trace, lanes: &Lanes, rows: &[Vec<usize>], tr: &Training, skip: &mut [bool]) -> Vec<Edge> {
    use std::collections::HashMap;
    let i = &t.intervals;
    let ops = &tr.ops;
    let region_of: HashMap<&str, u32> =
        t.region_names.iter().enumerate().map(|(k, n)| (n.as_str(), k as u32)).collect();
    // Per device its process: the one named as the device, or named after it.
    let process_of: Vec<Option<u32>> = tr.devices.iter().map(|d| lanes.process_of_device(&d.name)).collect();
    // The regions the model's communication operators name, and where each occurs per process.
    let mut wanted = vec![false; t.region_names.len()];
    for k in 0..ops.len() {
        if ops.class(k).group() != Group::Computation
            && let Some(&r) = tr.names.get(ops.name[k] as usize).and_then(|n| region_of.get(n.as_str()))
        {
            wanted[r as usize] = true;
        }
    }
    // (process, region) → its occurrences (start, end, location) by start.
    type Sites = HashMap<(u32, u32), Vec<(u64, u64, u32)>>;
    let mut sites: Sites = HashMap::new();
    for (l, rows) in rows.iter().enumerate() {
        for &k in rows {
            if wanted.get(i.kind[k] as usize).copied().unwrap_or(false) {
                sites.entry((lanes.process[l], i.kind[k])).or_default().push((i.start[k], i.end[k], l as u32));
            }
        }
    }
    for v in sites.values_mut() {
        v.sort_unstable();
    }
    let site = |k: usize| -> Option<(u64, u64, u32)> {
        let p = process_of.get(ops.device[k] as usize).copied().flatten()?;
        let r = *region_of.get(tr.names.get(ops.name[k] as usize)?.as_str())?;
        sites.get(&(p, r))?.get(ops.nth[k] as usize).copied()
    };
    let mut edges = Vec::new();
    let mut groups: HashMap<(u32, u32, u32), Vec<Part>> = HashMap::new();
    for k in 0..ops.len() {
        let class = ops.class(k);
        if class == Class::Send && ops.pair[k] != u32::MAX {
            let (Some((sent, _, src)), Some((_, arrived, dst))) = (site(k), site(ops.pair[k] as usize)) else {
                continue;
            };
            if src != dst && sent <= arrived && lanes.waited(dst, sent, arrived) {
                edges.push(Edge { kind: EdgeKind::Message, src, sent, dst, arrived });
            }
        } else if class.group() == Group::Collective {
            let Some((a, b, l)) = site(k) else { continue };
            let stage = tr.devices.get(ops.device[k] as usize).map_or(0, |d| d.stage);
            groups.entry((stage, ops.name[k], ops.nth[k])).or_default().push((l, a, b));
        }
    }
    for mut g in groups.into_values() {
        g.sort_unstable_by_key(|p| (p.1, p.0));
        instance_edges(&g, ("", None), &mut edges);
    }
    for (r, w) in wanted.into_iter().enumerate() {
        skip[r] |= w;
    }
    edges
}

/// The operation a communication call or span names, for pairing a framework's call with the
/// library's span that does its work: `c10d::allreduce_` and `gloo:all_reduce` both `allreduce`.
fn handoff_key(name: &str) -> Option<(bool, String)> {
    let (call, op) = if let Some(op) = name.strip_prefix("c10d::") {
        (true, op)
    } else if let Some(op) = name.strip_prefix("gloo:") {
        (false, op)
    } else {
        return None;
    };
    Some((call, op.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase()))
}

/// Work handed from one host thread to another of its process: c10d's call queues the
/// operation that a gloo thread runs (the n-th call of an operation pairs with the n-th span of
/// it in the process). Where the span runs on another thread, the call's start lets the span
/// begin, and the span's end lets the caller go on where it was idle (untraced) until shortly
/// after it: the caller waited for it.
fn handoff_edges(t: &Trace, lanes: &Lanes, rows: &[Vec<usize>]) -> (Vec<Edge>, Vec<(u32, u64, u64)>) {
    use std::collections::HashMap;
    /// How soon after the span's end the caller must go on to count as having waited for it.
    const RESUMES_WITHIN_NS: f64 = 1e-3;
    let i = &t.intervals;
    let keys: Vec<Option<(bool, String)>> = t.region_names.iter().map(|n| handoff_key(n)).collect();
    if keys.iter().all(Option::is_none) {
        return (Vec::new(), Vec::new());
    }
    // (process, call?, operation) → (start, end, location) by start.
    type Found<'a> = HashMap<(u32, bool, &'a str), Vec<(u64, u64, u32)>>;
    let mut found: Found = HashMap::new();
    for (l, rows) in rows.iter().enumerate() {
        if lanes.kind[l] == LocationKind::GpuStream {
            continue;
        }
        for &k in rows {
            if let Some((call, op)) = &keys[i.kind[k] as usize] {
                found.entry((lanes.process[l], *call, op.as_str())).or_default().push((i.start[k], i.end[k], l as u32));
            }
        }
    }
    let within = (RESUMES_WITHIN_NS * t.ticks_per_second.max(1) as f64) as u64;
    let (mut edges, mut idle) = (Vec::new(), Vec::new());
    for (&(p, call, op), calls) in &found {
        if !call {
            continue;
        }
        let Some(spans) = found.get(&(p, false, op)) else { continue };
        let (mut calls, mut spans) = (calls.clone(), spans.clone());
        calls.sort_unstable();
        spans.sort_unstable();
        for (&(cs, _, a), &(ss, se, b)) in calls.iter().zip(&spans) {
            if a == b || ss < cs {
                continue;
            }
            edges.push(Edge { kind: EdgeKind::Sync, src: a, sent: cs, dst: b, arrived: ss });
            // The caller idle at the span's end, going on soon after.
            let pieces = &lanes.pieces[a as usize];
            let next = pieces.partition_point(|x| x.start < se);
            let is_idle = next == 0 || pieces[next - 1].end <= se;
            if let Some(n) = pieces.get(next).filter(|x| is_idle && x.start - se <= within) {
                edges.push(Edge { kind: EdgeKind::Sync, src: b, sent: se, dst: a, arrived: n.start });
                // Untraced, the caller's time from its last work to its going on was waiting
                // for the span (PyTorch's `work.wait()` records nothing).
                let from = next.checked_sub(1).map_or(cs, |k| pieces[k].end.max(cs));
                if from < se {
                    idle.push((a, from, n.start));
                }
            }
        }
    }
    (edges, idle)
}

/// Whether a region is the autograd engine running one node of a backward pass.
fn is_autograd(name: &str) -> bool {
    name.starts_with("autograd::engine::evaluate_function")
}

/// A backward pass run by PyTorch's autograd thread for a thread of its process blocked in
/// `backward()`: the pass is a run of the worker's rows with gaps under 1 ms, from its first
/// `autograd::engine::evaluate_function` row; the caller is the other host thread of the process that did (almost)
/// nothing of its own through the pass, inside one call (the row that encloses the pass, such
/// as an annotation of the backward step) or idle, having worked until within 1 ms of the
/// pass's start and returning within 1 ms of its end. (On a CPU-only run the calling thread
/// runs the pass itself: no edge.)
/// The caller's last work before the pass lets the pass begin; the pass's end lets the caller
/// return.
fn autograd_edges(t: &Trace, lanes: &Lanes, rows: &[Vec<usize>]) -> Vec<Edge> {
    const GAP_S: f64 = 1e-3;
    let i = &t.intervals;
    let auto: Vec<bool> = t.region_names.iter().map(|n| is_autograd(n)).collect();
    if !auto.iter().any(|&a| a) {
        return Vec::new();
    }
    let skip: Vec<bool> = t.region_names.iter().map(|n| is_profiler(n)).collect();
    let gap = (GAP_S * t.ticks_per_second.max(1) as f64) as u64;
    let host = |l: usize| lanes.kind[l] != LocationKind::GpuStream;
    let mut edges = Vec::new();
    for (w, wrows) in rows.iter().enumerate().filter(|&(l, _)| host(l)) {
        // The passes on `w`: its rows clustered, from the first autograd row of a cluster to
        // the cluster's end (the work that finishes a pass, such as DDP's copies of the
        // reduced gradients, is part of it).
        let mut passes: Vec<(u64, u64, bool)> = Vec::new();
        for &k in wrows.iter().filter(|&&k| !skip[i.kind[k] as usize]) {
            let is_auto = auto[i.kind[k] as usize];
            match passes.last_mut() {
                Some(p) if i.start[k] <= p.1.saturating_add(gap) => {
                    if is_auto && !p.2 {
                        *p = (i.start[k], p.1, true);
                    }
                    p.1 = p.1.max(i.end[k]);
                }
                _ => passes.push((i.start[k], i.end[k], is_auto)),
            }
        }
        for &(a, b, _) in passes.iter().filter(|p| p.2) {
            let caller = (0..rows.len())
                .filter(|&c| c != w && host(c) && lanes.process[c] == lanes.process[w])
                .filter_map(|c| blocked_through(t, lanes, &rows[c], &skip, (a, b), gap).map(|(s, r)| (s, r, c)))
                .max_by_key(|&(s, r, _)| (s, std::cmp::Reverse(r)));
            if let Some((sent, resumed, c)) = caller {
                edges.push(Edge { kind: EdgeKind::Sync, src: c as u32, sent, dst: w as u32, arrived: a });
                edges.push(Edge { kind: EdgeKind::Sync, src: w as u32, sent: b, dst: c as u32, arrived: resumed });
            }
        }
    }
    edges
}

/// Whether the thread of `rows` was blocked through the pass `(a, b)`: inside one row that
/// encloses it (the innermost such, the profiler's own spans aside) or outside every row, its
/// own work within the pass under a tenth of it, its last work before the pass ending within
/// `gap` of the pass's start (it asked for the pass), and returning (the enclosing row's end, or
/// its next work) within `gap` of the pass's end. Gives where its last work before the pass ended
/// and where it returned.
fn blocked_through(
    t: &Trace,
    lanes: &Lanes,
    rows: &[usize],
    skip: &[bool],
    (a, b): (u64, u64),
    gap: u64,
) -> Option<(u64, u64)> {
    let i = &t.intervals;
    // The innermost row enclosing the pass: scanning back by start, the first that does; rows
    // before the last outermost one that begins by `a` cannot.
    let upto = rows.partition_point(|&k| i.start[k] <= a);
    let mut around = None;
    for &k in rows[..upto].iter().rev() {
        if !skip[i.kind[k] as usize] && i.end[k] >= b {
            around = Some(k);
            break;
        }
        if i.depth[k] == 0 {
            break;
        }
    }
    let (region, from, until) = match around {
        Some(k) => (Some(i.kind[k]), i.start[k], i.end[k]),
        None => (None, 0, u64::MAX),
    };
    // Pieces of the thread's own work: not the enclosing row's.
    let l = i.location[*rows.first()?] as usize;
    let pieces = &lanes.pieces[l];
    let own = |x: &&Piece| Some(x.region) != region;
    let first = pieces.partition_point(|x| x.end <= a);
    let mut busy = 0u64;
    for x in pieces[first..].iter().take_while(|x| x.start < b).filter(own) {
        busy += x.end.min(b) - x.start.max(a);
    }
    if busy * 10 > b - a {
        return None;
    }
    let last = pieces[..first].iter().rev().find(own).map(|x| x.end).filter(|&e| e >= from);
    let (before, resumed) = match around {
        Some(_) => (last.unwrap_or(from), until),
        None => (last?, pieces[first..].iter().find(|x| x.start >= b)?.start),
    };
    (before <= a && a - before <= gap && resumed >= b && resumed - b <= gap).then_some((before, resumed))
}
