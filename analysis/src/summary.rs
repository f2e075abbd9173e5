//! The numbers of an area of a trace (a time window over a range of locations): where the time
//! goes per region (Perfetto's area selection, Vampir's function summary), who sends how much to
//! whom, collectives by operation, counters, and the time receivers wait for late senders
//! (Scalasca's late-sender wait state).

use std::collections::HashMap;

use exaviz_model::Trace;
use exaviz_model::selection::Area;
use rayon::prelude::*;
use serde::Serialize;

use crate::window::window_asked;

/// One region's time in the area, seconds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RegionRow {
    pub name: String,
    /// Intervals overlapping the area.
    pub count: u64,
    /// Their time inside the area, nested regions included.
    pub total_s: f64,
    /// Their time inside the area less that of the regions nested in them.
    pub self_s: f64,
    pub mean_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// Self time over the area's time (window times the locations that hold intervals in it).
    pub share: f64,
}

/// Messages from one location to another sent in the area.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairRow {
    pub source: u32,
    pub destination: u32,
    pub count: u64,
    pub bytes: u64,
    /// Mean time from send to receive, seconds (messages with a receive).
    pub mean_latency_s: f64,
}

/// Collectives of one operation in the area.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CollectiveRow {
    pub name: String,
    /// Participations (one per location taking part).
    pub count: u64,
    pub total_s: f64,
    pub bytes: u64,
}

/// A metric's samples in the area.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CounterRow {
    pub name: String,
    pub samples: u64,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

/// Late-sender waiting of one location or region.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WaitRow {
    pub name: String,
    /// Receives (or waits) that began before their message was sent.
    pub count: u64,
    pub late_sender_s: f64,
}

/// Late-receiver waiting of one location or region.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LateReceiverRow {
    pub name: String,
    /// Blocking sends that returned only after their receive began, begun before it.
    pub count: u64,
    pub late_receiver_s: f64,
}

/// Instants of one name and scope in the area.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct InstantRow {
    pub name: String,
    /// `thread`, `process` or `global`.
    pub scope: String,
    pub count: u64,
}

/// Everything [`summarize`] reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    /// Seconds since the trace's start.
    pub from_s: f64,
    pub to_s: f64,
    pub locations: Vec<String>,
    /// By self time, largest first.
    pub regions: Vec<RegionRow>,
    pub messages: u64,
    pub bytes: u64,
    /// By bytes, largest first; at most `top`.
    pub pairs: Vec<PairRow>,
    pub collectives: Vec<CollectiveRow>,
    pub counters: Vec<CounterRow>,
    /// Instant events in the area (a global one in every area that holds its time), most first.
    pub instants: Vec<InstantRow>,
    /// Late-sender time per receiving location, largest first.
    pub waits_by_location: Vec<WaitRow>,
    /// Late-sender time per region the receiver waited in.
    pub waits_by_region: Vec<WaitRow>,
    /// Late-receiver time per sending location, largest first.
    pub late_receivers_by_location: Vec<LateReceiverRow>,
    /// Late-receiver time per region the sender waited in.
    pub late_receivers_by_region: Vec<LateReceiverRow>,
    /// The regions whose delays caused the waiting of the area's rows (Scalasca's delay
    /// analysis, [`crate::critical_path::causes`]), largest cost first; filled by [`summarize_asked`].
    pub root_causes: Vec<crate::critical_path::CauseRow>,
    /// Where the area's rows are one process: the run's critical path were that process to
    /// work as its peers' median in each step (`--what-if`); filled by the window's panel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<crate::critical_path::WhatIf>,
}

/// Whether a region is a blocking send (MPI's sends other than the immediate ones).
fn blocking_send(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("mpi_") && n.contains("send") && !n.starts_with("mpi_i")
}

/// Whether a region is where a receiver blocks for a message (MPI's receives and waits).
fn receives(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("mpi_") && (n.contains("recv") || n.contains("wait"))
}

/// Where a summary finds the rows it reads: every row of the trace ([`EveryRow`]), or an index
/// that finds a window's rows without a pass over the trace (the timeline's).
pub trait RowSource: Sync {
    /// The intervals of location `l` overlapping `[from, to)`.
    fn intervals(&self, t: &Trace, l: usize, window: (u64, u64)) -> Vec<usize>;
    /// The messages that may be sent or received in `[from, to)` (more may come; each is
    /// checked).
    fn messages(&self, t: &Trace, window: (u64, u64)) -> Vec<usize>;
    /// The longest time from a send to its receive.
    fn max_latency(&self) -> u64;
    /// The trace's first tick (a pass over every row unless the source keeps it).
    fn first_tick(&self, t: &Trace) -> u64 {
        t.span().map_or(0, |s| s.0)
    }
}

/// Whether an interval from `start` to `end` lies in the window `(from, to)`: one with time in
/// it, or one of no duration (an instant) at any tick of it, its ends included, as Perfetto
/// counts an instant at a window's edge.
pub fn overlaps(start: u64, end: u64, (from, to): (u64, u64)) -> bool {
    if start == end { from <= start && start <= to } else { end > from && start < to }
}

/// Every row of a trace, intervals grouped by location once.
pub struct EveryRow {
    by_location: Vec<Vec<usize>>,
}

impl EveryRow {
    pub fn new(t: &Trace) -> Self {
        let i = &t.intervals;
        let mut by_location = vec![Vec::new(); t.locations.name.len()];
        for k in 0..i.start.len() {
            if let Some(v) = by_location.get_mut(i.location[k] as usize) {
                v.push(k);
            }
        }
        Self { by_location }
    }
}

impl RowSource for EveryRow {
    fn intervals(&self, t: &Trace, l: usize, (from, to): (u64, u64)) -> Vec<usize> {
        let i = &t.intervals;
        let rows = self.by_location.get(l).map_or(&[][..], Vec::as_slice);
        rows.iter().copied().filter(|&k| overlaps(i.start[k], i.end[k], (from, to))).collect()
    }

    fn messages(&self, t: &Trace, _: (u64, u64)) -> Vec<usize> {
        (0..t.messages.source.len()).collect()
    }

    fn max_latency(&self) -> u64 {
        u64::MAX / 4
    }
}

/// The numbers of `area` of `t`; `top` pairs at most.
pub fn summarize(t: &Trace, area: Area, top: usize) -> Summary {
    summarize_from(t, area, top, &EveryRow::new(t))
}

/// What `exaviz summary` and Python's `Trace.summary` ask for: a time window in seconds since
/// the trace's start (default: all of it) and rows `A-B` or `A` (default: all).
#[derive(Clone, Debug, Default)]
pub struct AreaAsked<'a> {
    pub from_s: Option<f64>,
    pub to_s: Option<f64>,
    pub ranks: Option<&'a str>,
    /// Most communicating pairs listed (by bytes).
    pub top: usize,
}

/// The numbers of the area `asked` of `dataset` (its rows read from the store for the window
/// where they are on disk), with the root causes of the waiting in it; `Err` says in one line
/// what is wrong with the question.
pub fn summarize_asked(dataset: &exaviz_model::dataset::Dataset, asked: &AreaAsked) -> Result<Summary, String> {
    let (from, to, _) = window_asked(dataset, asked.from_s, asked.to_s)?;
    let rows_of_window = dataset.window_rows((from, to))?;
    let t = &rows_of_window.trace;
    let (first, last) = area_rows(asked.ranks, t.locations.name.len())?;
    let area = Area { from, to, first, last };
    let (mut s, causes) = rayon::join(
        || summarize(t, area, asked.top),
        || {
            let g = crate::critical_path::Graph::with_training(t, rows_of_window.training.as_deref());
            crate::critical_path::causes::root_causes_in(t, &g, (area.from, area.to), area.first..=area.last)
        },
    );
    s.root_causes = causes;
    Ok(s)
}

/// Rows `A-B` or `A` of `n` (all where `None`).
fn area_rows(spec: Option<&str>, n: usize) -> Result<(u32, u32), String> {
    let last = n.saturating_sub(1) as u32;
    let Some(spec) = spec else { return Ok((0, last)) };
    let number = |s: &str| -> Result<u32, String> {
        s.trim().parse::<u32>().map_err(|_| format!("--ranks {spec}: '{s}' is not a row number (A-B or A)"))
    };
    let (a, b) = match spec.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(spec)?, number(spec)?),
    };
    if a > b || b > last {
        return Err(format!("--ranks {spec}: the trace has rows 0-{last}, and A may not exceed B"));
    }
    Ok((a, b))
}

/// [`summarize`] reading the rows `rows` finds.
pub fn summarize_from(t: &Trace, area: Area, top: usize, rows: &dyn RowSource) -> Summary {
    let tps = t.ticks_per_second.max(1) as f64;
    let secs = |ticks: u64| ticks as f64 / tps;
    let start = rows.first_tick(t);
    let located = area.last.min(t.locations.name.len().saturating_sub(1) as u32);
    let locations: Vec<String> =
        (area.first..=located).filter_map(|l| t.locations.name.get(l as usize).cloned()).collect();
    let messages = rows.messages(t, (area.from, area.to));
    let (regions, waits_by_location, waits_by_region, busy) = regions_and_waits(t, area, rows, &messages);
    // Over the rows that hold anything in the area: an empty row (a thread HPCToolkit kept no
    // sample of, a location of counters only) has no time to share out.
    let area_s = secs(area.to.saturating_sub(area.from)) * busy.max(1) as f64;
    let mut regions: Vec<RegionRow> = regions
        .into_iter()
        .filter(|(_, r)| r.count > 0)
        .map(|(kind, r)| RegionRow {
            name: t.region_names.get(kind as usize).cloned().unwrap_or_else(|| format!("region {kind}")),
            count: r.count,
            total_s: secs(r.total),
            self_s: secs(r.own),
            mean_s: secs(r.total) / r.count as f64,
            min_s: secs(r.min),
            max_s: secs(r.max),
            share: if area_s > 0.0 { secs(r.own) / area_s } else { 0.0 },
        })
        .collect();
    regions.sort_by(|a, b| b.self_s.total_cmp(&a.self_s).then_with(|| a.name.cmp(&b.name)));
    let late = late_receivers(t, area, rows, &messages);
    let (messages, bytes, pairs) = pairs_in(t, area, top, &messages);
    let wait_rows = |m: HashMap<String, (u64, u64)>| {
        let mut v: Vec<WaitRow> =
            m.into_iter().map(|(name, (count, ticks))| WaitRow { name, count, late_sender_s: secs(ticks) }).collect();
        v.sort_by(|a, b| b.late_sender_s.total_cmp(&a.late_sender_s).then_with(|| a.name.cmp(&b.name)));
        v
    };
    let late_rows = |m: HashMap<String, (u64, u64)>| {
        let mut v: Vec<LateReceiverRow> = m
            .into_iter()
            .map(|(name, (count, ticks))| LateReceiverRow { name, count, late_receiver_s: secs(ticks) })
            .collect();
        v.sort_by(|a, b| b.late_receiver_s.total_cmp(&a.late_receiver_s).then_with(|| a.name.cmp(&b.name)));
        v
    };
    Summary {
        from_s: secs(area.from.saturating_sub(start)),
        to_s: secs(area.to.saturating_sub(start)),
        locations,
        regions,
        messages,
        bytes,
        pairs,
        collectives: collectives_in(t, area),
        counters: counters_in(t, area),
        instants: instants_in(t, area),
        waits_by_location: wait_rows(waits_by_location),
        waits_by_region: wait_rows(waits_by_region),
        late_receivers_by_location: late_rows(late.0),
        late_receivers_by_region: late_rows(late.1),
        root_causes: Vec::new(),
        what_if: None,
    }
}

/// Scalasca's late receiver: a blocking send that returned only after its receive began (a
/// synchronous send, or a rendezvous for a large message) and began before that receive waited
/// from its start to the receive's start. Per sending location and per send region, for the
/// messages sent in `area` from its locations.
fn late_receivers(t: &Trace, area: Area, rows: &dyn RowSource, messages: &[usize]) -> (Waits, Waits) {
    let i = &t.intervals;
    let n = t.locations.name.len();
    let send_kind: Vec<bool> = t.region_names.iter().map(|n| blocking_send(n)).collect();
    let recv_kind: Vec<bool> = t.region_names.iter().map(|n| receives(n)).collect();
    // Per location, its sends in the area and its receives up to the latest receive of a
    // message sent in it, by start.
    let reach = area.to.saturating_add(rows.max_latency()).saturating_add(1);
    let of_kind = |l: usize, window: (u64, u64), kind: &[bool]| -> Vec<usize> {
        let mut v = rows.intervals(t, l, window);
        v.retain(|&k| kind.get(i.kind[k] as usize) == Some(&true));
        v
    };
    let (mut sends, mut recvs): (Vec<Vec<usize>>, Vec<Vec<usize>>) = (0..n)
        .into_par_iter()
        .map(|l| {
            let sends = if area.holds(l as u32) { of_kind(l, (area.from, area.to), &send_kind) } else { Vec::new() };
            (sends, of_kind(l, (area.from, reach), &recv_kind))
        })
        .unzip();
    for v in sends.iter_mut().chain(recvs.iter_mut()) {
        v.sort_by_key(|&k| (i.start[k], i.end[k]));
    }
    // The interval of `rows` holding `at`: the last one begun by it and not ended before it.
    let holding = |rows: &[usize], at: u64| {
        let upto = rows.partition_point(|&r| i.start[r] <= at);
        rows[..upto].iter().rev().copied().find(|&r| i.end[r] >= at)
    };
    let m = &t.messages;
    let (mut by_loc, mut by_region): (Waits, Waits) = (HashMap::new(), HashMap::new());
    let mut seen = std::collections::HashSet::new();
    for &k in messages {
        let (s, d, sent, recv) = (m.source[k], m.destination[k], m.send_time[k], m.recv_time[k]);
        if recv == u64::MAX || !area.holds(s) || sent < area.from || sent >= area.to || d as usize >= n {
            continue;
        }
        let (Some(a), Some(b)) = (holding(&sends[s as usize], sent), holding(&recvs[d as usize], recv)) else {
            continue;
        };
        // Late: the send began before the receive and lasted past its start.
        if i.start[a] < i.start[b] && i.end[a] > i.start[b] && seen.insert(a) {
            add_wait(t, (&mut by_loc, &mut by_region), a, area.clip(i.start[a], i.start[b]));
        }
    }
    (by_loc, by_region)
}

#[derive(Default)]
struct Acc {
    count: u64,
    total: u64,
    own: u64,
    min: u64,
    max: u64,
}

type Waits = HashMap<String, (u64, u64)>;

/// Per region kind its intervals' time in the area, and the late-sender waits per location and
/// region.
fn regions_and_waits(
    t: &Trace,
    area: Area,
    rows: &dyn RowSource,
    messages: &[usize],
) -> (HashMap<u32, Acc>, Waits, Waits, usize) {
    let i = &t.intervals;
    let n = t.locations.name.len();
    let mut by_location: Vec<Vec<usize>> = (0..n)
        .into_par_iter()
        .map(|l| if area.holds(l as u32) { rows.intervals(t, l, (area.from, area.to)) } else { Vec::new() })
        .collect();
    let mut acc: HashMap<u32, Acc> = HashMap::new();
    // Self time: each interval's clipped time less its children's, by a stack per location.
    for rows in &mut by_location {
        rows.sort_by_key(|&k| (i.start[k], std::cmp::Reverse(i.end[k]), i.depth[k]));
        let mut stack: Vec<(usize, u64)> = Vec::new();
        let mut own: Vec<(usize, u64)> = Vec::with_capacity(rows.len());
        for &k in rows.iter() {
            while stack.last().is_some_and(|&(p, _)| i.end[p] <= i.start[k]) {
                let (p, o) = stack.pop().expect("non-empty");
                own.push((p, o));
            }
            let clipped = area.clip(i.start[k], i.end[k]);
            if let Some(parent) = stack.last_mut() {
                parent.1 = parent.1.saturating_sub(clipped);
            }
            stack.push((k, clipped));
        }
        own.append(&mut stack);
        for (k, o) in own {
            let clipped = area.clip(i.start[k], i.end[k]);
            let a = acc.entry(i.kind[k]).or_insert(Acc { min: u64::MAX, ..Acc::default() });
            a.count += 1;
            a.total += clipped;
            a.own += o;
            a.min = a.min.min(clipped);
            a.max = a.max.max(clipped);
        }
    }
    let (by_loc, by_region) = late_senders(t, area, &by_location, messages);
    let busy = by_location.iter().filter(|rows| !rows.is_empty()).count();
    (acc, by_loc, by_region, busy)
}

/// Scalasca's late sender: a receive (or wait) that began before its message was sent waited
/// from its start to the send (to its own end at most); a wait completing several messages
/// waited for the latest of them. Per receiving location and per region.
fn late_senders(t: &Trace, area: Area, by_location: &[Vec<usize>], messages: &[usize]) -> (Waits, Waits) {
    let i = &t.intervals;
    let (mut by_loc, mut by_region): (Waits, Waits) = (HashMap::new(), HashMap::new());
    for (r, send) in waited_until(t, area, by_location, messages.iter().copied()) {
        let waited = area.clip(i.start[r], send);
        if waited > 0 {
            add_wait(t, (&mut by_loc, &mut by_region), r, waited);
        }
    }
    (by_loc, by_region)
}

/// Counts a wait of `ticks` in interval `k` for its location and its region.
fn add_wait(t: &Trace, (by_loc, by_region): (&mut Waits, &mut Waits), k: usize, ticks: u64) {
    let i = &t.intervals;
    let loc = t.locations.name.get(i.location[k] as usize).cloned().unwrap_or_default();
    let region = t.region_names.get(i.kind[k] as usize).cloned().unwrap_or_default();
    for (map, key) in [(by_loc, loc), (by_region, region)] {
        let e = map.entry(key).or_insert((0, 0));
        e.0 += 1;
        e.1 += ticks;
    }
}

/// One late-sender wait: the receiving location, the ticks from the receive's start to the
/// send it waited for, and the receive's nesting depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    pub location: u32,
    pub from: u64,
    pub to: u64,
    pub depth: u32,
}

/// Every late-sender wait of the trace ([`late_senders`]'s definition), sorted by start.
pub fn late_sender_waits(t: &Trace) -> Vec<Wait> {
    let i = &t.intervals;
    let whole = Area { from: 0, to: u64::MAX, first: 0, last: u32::MAX };
    let by_location = EveryRow::new(t).by_location;
    let mut waits: Vec<Wait> = waited_until(t, whole, &by_location, 0..t.messages.source.len())
        .into_iter()
        .filter(|&(r, send)| send > i.start[r])
        .map(|(r, send)| Wait { location: i.location[r], from: i.start[r], to: send, depth: i.depth[r] })
        .collect();
    waits.sort_unstable_by_key(|w| (w.from, w.location, w.to));
    waits
}

/// Per receive interval (row) of `by_location` that began before a message it received in
/// `area` was sent: the latest such send (at most the interval's end).
fn waited_until(
    t: &Trace,
    area: Area,
    by_location: &[Vec<usize>],
    messages: impl Iterator<Item = usize>,
) -> HashMap<usize, u64> {
    let i = &t.intervals;
    let is_receive: Vec<bool> = t.region_names.iter().map(|n| receives(n)).collect();
    // Per location, its receive intervals sorted by start.
    let recv_rows: Vec<Vec<usize>> = by_location
        .iter()
        .map(|rows| {
            let mut v: Vec<usize> =
                rows.iter().copied().filter(|&k| is_receive.get(i.kind[k] as usize) == Some(&true)).collect();
            v.sort_by_key(|&k| (i.start[k], i.end[k]));
            v
        })
        .collect();
    let m = &t.messages;
    let mut latest: HashMap<usize, u64> = HashMap::new();
    for k in messages {
        let (d, recv) = (m.destination[k], m.recv_time[k]);
        if recv == u64::MAX || !area.holds(d) || recv < area.from || recv >= area.to {
            continue;
        }
        let Some(rows) = recv_rows.get(d as usize) else { continue };
        // The innermost receive interval holding the receive: the last one starting by it.
        let upto = rows.partition_point(|&r| i.start[r] <= recv);
        let Some(&r) = rows[..upto].iter().rev().find(|&&r| i.end[r] >= recv) else { continue };
        let send = m.send_time[k].min(i.end[r]);
        if send > i.start[r] {
            let e = latest.entry(r).or_insert(0);
            *e = (*e).max(send);
        }
    }
    latest
}

/// Messages sent in the area from its locations: count, bytes, and the `top` pairs by bytes.
fn pairs_in(t: &Trace, area: Area, top: usize, messages: &[usize]) -> (u64, u64, Vec<PairRow>) {
    let m = &t.messages;
    let mut pairs: HashMap<(u32, u32), (u64, u64, u64, u64)> = HashMap::new();
    let (mut count, mut bytes) = (0u64, 0u64);
    for &k in messages {
        let send = m.send_time[k];
        if !area.holds(m.source[k]) || send < area.from || send >= area.to {
            continue;
        }
        count += 1;
        bytes += u64::from(m.bytes[k]);
        let e = pairs.entry((m.source[k], m.destination[k])).or_insert((0, 0, 0, 0));
        e.0 += 1;
        e.1 += u64::from(m.bytes[k]);
        if m.recv_time[k] != u64::MAX {
            e.2 += m.recv_time[k].saturating_sub(send);
            e.3 += 1;
        }
    }
    let tps = t.ticks_per_second.max(1) as f64;
    let mut rows: Vec<PairRow> = pairs
        .into_iter()
        .map(|((source, destination), (n, b, latency, received))| PairRow {
            source,
            destination,
            count: n,
            bytes: b,
            mean_latency_s: if received > 0 { latency as f64 / received as f64 / tps } else { 0.0 },
        })
        .collect();
    rows.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.count.cmp(&a.count))
            .then((a.source, a.destination).cmp(&(b.source, b.destination)))
    });
    rows.truncate(top);
    (count, bytes, rows)
}

/// Collective participations overlapping the area, per operation.
fn collectives_in(t: &Trace, area: Area) -> Vec<CollectiveRow> {
    let c = &t.collectives;
    let mut ops: HashMap<u32, (u64, u64, u64)> = HashMap::new();
    for k in 0..c.location.len() {
        if !area.holds(c.location[k]) || c.end[k] <= area.from || c.start[k] >= area.to {
            continue;
        }
        let e = ops.entry(c.op[k]).or_insert((0, 0, 0));
        e.0 += 1;
        e.1 += area.clip(c.start[k], c.end[k].max(c.start[k] + 1));
        e.2 += u64::from(c.bytes[k]);
    }
    let tps = t.ticks_per_second.max(1) as f64;
    let mut rows: Vec<CollectiveRow> = ops
        .into_iter()
        .map(|(op, (count, ticks, bytes))| CollectiveRow {
            name: t.collective_names.get(op as usize).cloned().unwrap_or_else(|| format!("collective {op}")),
            count,
            total_s: ticks as f64 / tps,
            bytes,
        })
        .collect();
    rows.sort_by(|a, b| b.total_s.total_cmp(&a.total_s).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Instant events in the area, per name and scope: those of its rows at a tick of its window
/// (its edges included, as [`overlaps`] counts them), and the global ones on no row.
fn instants_in(t: &Trace, area: Area) -> Vec<InstantRow> {
    let i = &t.instants;
    let mut by: HashMap<(u32, exaviz_model::InstantScope), u64> = HashMap::new();
    for k in 0..i.len() {
        let row = i.location[k];
        if (row != exaviz_model::NO_ROW && !area.holds(row)) || !overlaps(i.time[k], i.time[k], (area.from, area.to)) {
            continue;
        }
        *by.entry((i.name[k], i.scope[k])).or_default() += 1;
    }
    let mut rows: Vec<InstantRow> = by
        .into_iter()
        .map(|((name, scope), count)| InstantRow {
            name: t.region_names.get(name as usize).cloned().unwrap_or_else(|| format!("region {name}")),
            scope: scope.label().to_string(),
            count,
        })
        .collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| (&a.name, &a.scope).cmp(&(&b.name, &b.scope))));
    rows
}

/// Metric samples in the area, per metric.
fn counters_in(t: &Trace, area: Area) -> Vec<CounterRow> {
    let s = &t.metrics;
    let mut by: HashMap<u32, (u64, f64, f64, f64)> = HashMap::new();
    for k in 0..s.location.len() {
        if !area.holds(s.location[k]) || s.time[k] < area.from || s.time[k] >= area.to {
            continue;
        }
        let v = s.value[k];
        let e = by.entry(s.metric[k]).or_insert((0, f64::MAX, 0.0, f64::MIN));
        e.0 += 1;
        e.1 = e.1.min(v);
        e.2 += v;
        e.3 = e.3.max(v);
    }
    let mut rows: Vec<CounterRow> = by
        .into_iter()
        .map(|(metric, (samples, min, sum, max))| CounterRow {
            name: t.metric_names.get(metric as usize).cloned().unwrap_or_else(|| format!("metric {metric}")),
            samples,
            min,
            mean: sum / samples as f64,
            max,
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked() {
        assert_eq!(area_rows(None, 4).unwrap(), (0, 3));
        assert_eq!(area_rows(Some("1-2"), 4).unwrap(), (1, 2));
        assert_eq!(area_rows(Some("3"), 4).unwrap(), (3, 3));
        assert!(area_rows(Some("2-9"), 4).unwrap_err().contains("rows 0-3"));
        assert!(area_rows(Some("x"), 4).unwrap_err().contains("not a row number"));
    }

    /// Rank 0 computes 0-100 (with a nested kernel 20-50), then sends at 100; rank 1 enters
    /// MPI_Recv at 40 and receives at 110: it waited 60 ticks for the late sender.
    fn trace() -> Trace {
        let mut t = Trace { ticks_per_second: 100, ..Default::default() };
        t.locations.name = vec!["rank 0".into(), "rank 1".into()];
        t.region_names = vec!["compute".into(), "kernel".into(), "MPI_Recv".into(), "MPI_Send".into()];
        for (l, s, e, k, d) in
            [(0, 0, 100, 0, 0), (0, 20, 50, 1, 1), (0, 100, 105, 3, 0), (1, 0, 40, 0, 0), (1, 40, 110, 2, 0)]
        {
            t.intervals.push(l, s, e, k, d);
        }
        t.messages.push((0, 1), (100, 110), 64, 0);
        t
    }

    /// Receives on four ranks, each sent from rank 0 either before the receive began (no wait)
    /// or after it (a late sender, planted): the waits found are the planted ones, and the
    /// summary's totals per rank are their sums.
    #[test]
    fn planted_late_senders_are_found_exactly() {
        let mut t = Trace { ticks_per_second: 1000, ..Default::default() };
        t.locations.name = (0..5).map(|r| format!("rank {r}")).collect();
        t.region_names = vec!["MPI_Recv".into(), "MPI_Send".into()];
        let mut seed = 11u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut planted = Vec::new();
        for k in 0..200u64 {
            let (dest, start) = (1 + (k % 4) as u32, k * 1000);
            let late = next(2) == 1;
            let send = if late { start + 1 + next(400) } else { start.saturating_sub(1 + next(400)) };
            let recv = send.max(start) + 5;
            let end = recv + 1 + next(3);
            for (l, s, e, kind) in [(dest, start, end, 0), (0, send, send + 2, 1)] {
                t.intervals.push(l, s, e, kind, 0);
            }
            t.messages.push((0, dest), (send, recv), 8, 0);
            if late {
                planted.push(Wait { location: dest, from: start, to: send, depth: 0 });
            }
        }
        planted.sort_unstable_by_key(|w| (w.from, w.location, w.to));
        assert!(planted.len() > 50);
        assert_eq!(late_sender_waits(&t), planted);
        let s = summarize(&t, Area { from: 0, to: u64::MAX / 2, first: 0, last: 4 }, 10);
        for rank in 1..5u32 {
            let want: u64 = planted.iter().filter(|w| w.location == rank).map(|w| w.to - w.from).sum();
            let row = s.waits_by_location.iter().find(|w| w.name == format!("rank {rank}")).expect("a row");
            assert!((row.late_sender_s - want as f64 / 1000.0).abs() < 1e-9, "rank {rank}");
        }
    }

    /// Rank 0's synchronous send begins at 10 and returns at 60, after rank 1's receive began at
    /// 40: 30 ticks late receiver. Its second send (eager: returned at 75, before the receive at
    /// 80) and rank 1's send to a receive already waiting are not late receivers.
    #[test]
    fn late_receivers_are_blocking_sends_that_outlast_a_later_receive() {
        let mut t = Trace { ticks_per_second: 10, ..Default::default() };
        t.locations.name = vec!["rank 0".into(), "rank 1".into()];
        t.region_names = vec!["MPI_Ssend".into(), "MPI_Recv".into(), "MPI_Send".into(), "MPI_Isend".into()];
        let rows = [
            (0, 10, 60, 0),
            (1, 40, 62, 1),
            (0, 70, 75, 2),
            (1, 80, 90, 1),
            (0, 100, 130, 1),
            (1, 110, 115, 2),
            (0, 140, 170, 3),
            (1, 150, 175, 1),
        ];
        for (l, s, e, k) in rows {
            t.intervals.push(l, s, e, k, 0);
        }
        for (src, dst, sent, recv) in [(0, 1, 12, 58), (0, 1, 72, 85), (1, 0, 111, 120), (0, 1, 141, 170)] {
            t.messages.push((src, dst), (sent, recv), 8, 0);
        }
        let s = summarize(&t, Area { from: 0, to: 200, first: 0, last: 1 }, 10);
        let by_loc = &s.late_receivers_by_location;
        assert_eq!(by_loc.len(), 1, "{by_loc:?}");
        assert_eq!((by_loc[0].name.as_str(), by_loc[0].count), ("rank 0", 1));
        assert!((by_loc[0].late_receiver_s - 3.0).abs() < 1e-9);
        assert_eq!(s.late_receivers_by_region[0].name, "MPI_Ssend");
        // Outside the area of the send, none.
        let later = summarize(&t, Area { from: 65, to: 200, first: 0, last: 1 }, 10);
        assert!(later.late_receivers_by_location.is_empty());
    }

    #[test]
    fn the_area_says_where_the_time_goes_and_who_waits() {
        let t = trace();
        let s = summarize(&t, Area { from: 0, to: 200, first: 0, last: 1 }, 10);
        let row = |n: &str| s.regions.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("{n}: {:?}", s.regions));
        assert_eq!(row("compute").count, 2);
        assert!((row("compute").total_s - 1.4).abs() < 1e-9, "100 + 40 ticks");
        assert!((row("compute").self_s - 1.1).abs() < 1e-9, "less the nested kernel's 30");
        assert!((row("kernel").self_s - 0.3).abs() < 1e-9);
        assert!((row("MPI_Recv").max_s - 0.7).abs() < 1e-9);
        assert_eq!((s.messages, s.bytes), (1, 64));
        assert_eq!((s.pairs[0].source, s.pairs[0].destination, s.pairs[0].count), (0, 1, 1));
        assert!((s.pairs[0].mean_latency_s - 0.1).abs() < 1e-9);
        assert_eq!(s.waits_by_location.len(), 1);
        assert_eq!(s.waits_by_location[0].name, "rank 1");
        assert!((s.waits_by_location[0].late_sender_s - 0.6).abs() < 1e-9, "{:?}", s.waits_by_location);
        assert_eq!(s.waits_by_region[0].name, "MPI_Recv");
        // A window cuts the times; rank 0 alone has no receives and sends nothing after 100.
        let s = summarize(&t, Area { from: 30, to: 60, first: 0, last: 0 }, 10);
        assert!((row_of(&s, "compute").total_s - 0.3).abs() < 1e-9);
        assert!((row_of(&s, "compute").self_s - 0.1).abs() < 1e-9, "30 less the kernel's 20 inside");
        assert_eq!(s.messages, 0);
        assert!(s.waits_by_location.is_empty());
    }

    /// Instants count by name and scope: a row's where the area holds its row and its time (the
    /// window's edges included), a global one wherever its time is.
    #[test]
    fn instants_are_counted_by_name_and_scope() {
        use exaviz_model::{InstantScope, NO_ROW};
        let mut t = trace();
        t.region_names.push("mark".into());
        let mark = t.region_names.len() as u32 - 1;
        t.instant_categories = vec![String::new()];
        for (row, at, scope) in [
            (0, 30, InstantScope::Thread),
            (0, 60, InstantScope::Thread),
            (1, 50, InstantScope::Process),
            (NO_ROW, 45, InstantScope::Global),
        ] {
            t.instants.push(row, at, mark, scope, 0, 0);
        }
        let counts = |area: Area| -> Vec<(String, u64)> {
            summarize(&t, area, 10).instants.into_iter().map(|r| (r.scope, r.count)).collect()
        };
        let all = counts(Area { from: 30, to: 60, first: 0, last: 1 });
        assert_eq!(all, [("thread".into(), 2), ("global".into(), 1), ("process".into(), 1)]);
        let rank1 = counts(Area { from: 0, to: 200, first: 1, last: 1 });
        assert_eq!(rank1, [("global".into(), 1), ("process".into(), 1)]);
        assert!(counts(Area { from: 61, to: 200, first: 0, last: 1 }).is_empty());
    }

    fn row_of<'a>(s: &'a Summary, n: &str) -> &'a RegionRow {
        s.regions.iter().find(|r| r.name == n).expect(n)
    }
}
