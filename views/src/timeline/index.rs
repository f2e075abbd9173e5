//! What a timeline keeps of one trace between pictures: each location's intervals in the order
//! of the innermost-state walk, the states' colour slots, the messages by send time.

use exaviz_analysis::summary::Wait;
use exaviz_model::Trace;
use rayon::prelude::*;

use super::counters::CounterIndex;
use super::options::{LEVELS, TimelineOptions};
use super::tracks::{self, Tracks};
use crate::plot::CATEGORICAL;
use crate::trace::span;

/// States with their own colour; the rest share the last colour as "other".
const NAMED_STATES: usize = CATEGORICAL.len() - 1;

/// Intervals of each location sorted by (start, depth): `order[ranges[l]]`, and for each the
/// interval under it on the stack of [`ByLocation::innermost`]'s walk (`parent`, a position in
/// `order`; `NO_PARENT` at the bottom), so that a walk can start at any time without replaying
/// the location's earlier intervals.
pub(super) struct ByLocation {
    pub(super) order: Vec<u32>,
    pub(super) ranges: Vec<std::ops::Range<usize>>,
    parent: Vec<u32>,
    /// Start, end and kind of the interval at each position of `order`: a walk over one
    /// location's intervals reads them in a row, where the trace's columns hold each location's
    /// intervals far apart (a store's rows are sorted by start over every location).
    start: Vec<u64>,
    end: Vec<u64>,
    kind: Vec<u32>,
}

const NO_PARENT: u32 = u32::MAX;

impl ByLocation {
    pub(super) fn new(t: &Trace, locations: usize) -> Self {
        let i = &t.intervals;
        // Counted by location and placed (a stable counting sort: linear, where a comparison
        // sort of every interval cost more than the rest of a window read from disk), then
        // each location's sorted by (start, depth): already sorted by start in a store's rows.
        let mut first = vec![0usize; locations + 1];
        for &l in &i.location {
            if let Some(c) = first.get_mut(l as usize + 1).filter(|_| (l as usize) < locations) {
                *c += 1;
            }
        }
        for l in 0..locations {
            first[l + 1] += first[l];
        }
        let mut order = vec![0u32; first[locations]];
        let mut next = first.clone();
        for (k, &l) in i.location.iter().enumerate() {
            if let Some(at) = next.get_mut(l as usize).filter(|_| (l as usize) < locations) {
                order[*at] = k as u32;
                *at += 1;
            }
        }
        let ranges: Vec<std::ops::Range<usize>> = (0..locations).map(|l| first[l]..first[l + 1]).collect();
        let key = |&k: &u32| (i.start[k as usize], i.depth[k as usize]);
        parts_mut(&mut order, &ranges)
            .into_par_iter()
            .with_min_len(256)
            .filter(|(_, run)| !run.is_sorted_by_key(key))
            .for_each(|(_, run)| run.sort_by_key(key));
        let start: Vec<u64> = order.par_iter().map(|&k| i.start[k as usize]).collect();
        let end: Vec<u64> = order.par_iter().map(|&k| i.end[k as usize]).collect();
        let kind: Vec<u32> = order.par_iter().map(|&k| i.kind[k as usize]).collect();
        let parent = parents(&start, &end, &ranges);
        Self { order, ranges, parent, start, end, kind }
    }

    /// Location `l`'s intervals, sorted by (start, depth).
    pub(super) fn rows(&self, l: usize) -> &[u32] {
        self.ranges.get(l).map_or(&[], |r| &self.order[r.clone()])
    }

    /// The stack of the walk after the interval at position `p` of `order` was pushed, bottom
    /// first: `p` and the intervals under it.
    fn stack_at(&self, p: usize) -> Vec<usize> {
        let mut stack = vec![p];
        let mut q = self.parent[p];
        while q != NO_PARENT {
            stack.push(q as usize);
            q = self.parent[q as usize];
        }
        stack.reverse();
        stack
    }

    /// Calls `f(start, end, kind)` for the innermost state of location `l` over time: nested
    /// intervals hide their parents.
    pub(super) fn innermost(&self, l: usize, f: impl FnMut(u64, u64, u32)) {
        self.innermost_in(l, (0, u64::MAX), f);
    }

    /// [`Self::innermost`] over the window `[t0, t1]` only, clipped to it: the walk starts from
    /// the stack at `t0` (the last interval begun before it and those under it) and stops after
    /// the last interval begun by `t1`, so its cost follows the intervals in the window, not
    /// the location's whole trace.
    pub(super) fn innermost_in(&self, l: usize, (t0, t1): (u64, u64), mut f: impl FnMut(u64, u64, u32)) {
        let Some((open, begun)) = self.window_positions(l, (t0, t1)) else { return };
        // Positions in `order` on the stack, as the whole walk would have them before the window.
        let mut stack = open;
        let mut cursor = t0;
        let mut f = |a: u64, b: u64, k: u32| {
            let b = b.min(t1);
            if a < b {
                f(a, b, k);
            }
        };
        let emit_until = |stack: &mut Vec<usize>, cursor: &mut u64, until: u64, f: &mut dyn FnMut(u64, u64, u32)| {
            while let Some(&top) = stack.last() {
                let end = self.end[top].min(until);
                if end > *cursor {
                    f(*cursor, end, self.kind[top]);
                    *cursor = end;
                }
                if self.end[top] <= until {
                    stack.pop();
                } else {
                    break;
                }
            }
        };
        for p in begun {
            emit_until(&mut stack, &mut cursor, self.start[p], &mut f);
            if cursor >= t1 {
                return;
            }
            cursor = cursor.max(self.start[p]);
            stack.push(p);
        }
        emit_until(&mut stack, &mut cursor, t1, &mut f);
    }

    /// Calls `f(row)` for every interval of location `l`, at any depth, that overlaps the
    /// window `[t0, t1]`: those open at `t0` (on the walk's stack there) and those begun in it.
    pub(super) fn overlapping(&self, l: usize, (t0, t1): (u64, u64), mut f: impl FnMut(usize)) {
        let Some((open, begun)) = self.window_positions(l, (t0, t1)) else { return };
        let open = open.into_iter().filter(|&p| self.end[p] > t0);
        open.chain(begun).for_each(|p| f(self.order[p] as usize));
    }

    /// Location `l`'s intervals around the window `[t0, t1]`, as positions in `order`: the
    /// walk's stack just before the window (bottom first; those still open at `t0` among
    /// them) and the positions of the intervals begun in it.
    fn window_positions(&self, l: usize, (t0, t1): (u64, u64)) -> Option<(Vec<usize>, std::ops::Range<usize>)> {
        let range = self.ranges.get(l).cloned()?;
        let starts = &self.start[range.clone()];
        let first = starts.partition_point(|&s| s < t0);
        let last = first + starts[first..].partition_point(|&s| s <= t1);
        let stack = if first > 0 { self.stack_at(range.start + first - 1) } else { Vec::new() };
        Some((stack, range.start + first..range.start + last))
    }

    #[cfg(test)]
    pub(super) fn innermost_replayed(&self, t: &Trace, l: usize, mut f: impl FnMut(u64, u64, u32)) {
        let i = &t.intervals;
        let mut stack: Vec<usize> = Vec::new();
        let mut cursor = 0u64;
        let emit_until = |stack: &mut Vec<usize>, cursor: &mut u64, until: u64, f: &mut dyn FnMut(u64, u64, u32)| {
            while let Some(&top) = stack.last() {
                let end = i.end[top].min(until);
                if end > *cursor {
                    f(*cursor, end, i.kind[top]);
                    *cursor = end;
                }
                if i.end[top] <= until {
                    stack.pop();
                } else {
                    break;
                }
            }
        };
        for &k in &self.order[self.ranges[l].clone()] {
            let k = k as usize;
            emit_until(&mut stack, &mut cursor, i.start[k], &mut f);
            cursor = cursor.max(i.start[k]);
            stack.push(k);
        }
        emit_until(&mut stack, &mut cursor, u64::MAX, &mut f);
    }
}

/// The parts `ranges` of `v` (disjoint, in any order), each with its start, to be worked on
/// side by side; empty ranges are left out.
pub(super) fn parts_mut<'a, T>(v: &'a mut [T], ranges: &[std::ops::Range<usize>]) -> Vec<(usize, &'a mut [T])> {
    let mut parts = Vec::with_capacity(ranges.len());
    let mut rest = v;
    let mut at = 0;
    let mut sorted: Vec<&std::ops::Range<usize>> = ranges.iter().filter(|r| !r.is_empty()).collect();
    sorted.sort_unstable_by_key(|r| r.start);
    for r in sorted {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
        let (mine, tail) = tail.split_at_mut(r.len());
        parts.push((r.start, mine));
        rest = tail;
        at = r.end;
    }
    parts
}

/// For each position of `order`, the position under it on the stack of the innermost-state walk
/// of its location (the walk pops an interval when a later one starts at or after its end),
/// computed per location in parallel.
fn parents(starts: &[u64], ends: &[u64], ranges: &[std::ops::Range<usize>]) -> Vec<u32> {
    let mut parent = vec![NO_PARENT; starts.len()];
    parts_mut(&mut parent, ranges).into_par_iter().for_each(|(start, out)| {
        let mut stack: Vec<usize> = Vec::new();
        for (q, slot) in out.iter_mut().enumerate() {
            let p = start + q;
            let begin = starts[p];
            while stack.last().is_some_and(|&top| ends[top] <= begin) {
                stack.pop();
            }
            *slot = stack.last().map_or(NO_PARENT, |&top| top as u32);
            stack.push(p);
        }
    });
    parent
}

/// Colour slot of every kind: the states covering the most time first.
pub(super) fn state_slots(t: &Trace, by: &ByLocation, locations: usize) -> (Vec<usize>, Legend) {
    let kinds = t.region_names.len().max(t.intervals.kind.iter().map(|&k| k as usize + 1).max().unwrap_or(0));
    // A window of a larger trace ranks its states as the pictures of the whole trace do (where
    // its pyramid counts every kind apart), so colours stay as the window pans and zooms.
    if let Some(whole) = t.state_ticks_of_whole.as_ref().filter(|w| w.len() >= kinds) {
        return slots_by(&t.region_names, &whole[..kinds]);
    }
    let totals = (0..locations)
        .into_par_iter()
        .fold(
            || vec![0u64; kinds],
            |mut acc, l| {
                by.innermost(l, |a, b, k| acc[k as usize] += b - a);
                acc
            },
        )
        .reduce(|| vec![0u64; kinds], |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect());
    slots_by(&t.region_names, &totals)
}

/// Colour slot of every kind, and the legend (kinds named by `names`), from each kind's ticks:
/// the most first.
pub(super) fn slots_by(names: &[String], totals: &[u64]) -> (Vec<usize>, Legend) {
    let kinds = totals.len();
    let mut ranked: Vec<usize> = (0..kinds).filter(|&k| totals[k] > 0).collect();
    ranked.sort_by_key(|&k| std::cmp::Reverse(totals[k]));
    let mut slot = vec![NAMED_STATES; kinds];
    let mut legend = Vec::new();
    for (s, &k) in ranked.iter().take(NAMED_STATES).enumerate() {
        slot[k] = s;
        legend.push((s, names.get(k).cloned().unwrap_or_else(|| format!("state {k}"))));
    }
    if ranked.len() > NAMED_STATES {
        legend.push((NAMED_STATES, format!("{} other states", ranked.len() - NAMED_STATES)));
    }
    (slot, legend)
}

/// Colour slot and name of each state in the legend.
pub(super) type Legend = Vec<(usize, String)>;

/// What a timeline keeps between pictures of one trace: intervals by location, state colours
/// and legend, the time span, and messages in order of sending, so that a new time window
/// (zoom, pan) starts from them instead of sorting the trace again.
pub struct TimelineIndex {
    pub(super) by: ByLocation,
    pub(super) slot: Vec<usize>,
    pub(super) legend: Legend,
    pub(super) span: Option<(u64, u64)>,
    /// Message rows by send time.
    by_send: Vec<u32>,
    /// The longest send-to-receive time, so a window's messages are a range of `by_send`.
    max_latency: u64,
    /// Collective operations by end time: first start, last end, lowest and highest location.
    pub(super) collectives: Vec<(u64, u64, u32, u32)>,
    /// The counter series, sorted by time.
    pub(super) counters: CounterIndex,
    /// The instants (intervals of no duration) by time: time, location, region.
    pub(super) instants: Vec<(u64, u32, u32)>,
    /// The global instants on no row, by time: time, region.
    pub(super) global_instants: Vec<(u64, u32)>,
    /// The trace's late-sender waits, found when first drawn.
    waits: std::sync::OnceLock<Vec<Wait>>,
    /// Per location, whether it has any event (else its track is hidden).
    pub(super) busy: Vec<bool>,
    /// Per location, its deepest nesting level (0: nothing nested), at most `LEVELS - 1`, found
    /// when first drawn in bands.
    depth: std::sync::OnceLock<Vec<u32>>,
    /// What drawing on the device keeps (the innermost pieces, the last layout).
    pub(super) device: super::device::DeviceKept,
}

impl TimelineIndex {
    /// The index of `t`; the rows of one window of a larger trace keep every location's track.
    pub fn new(t: &Trace) -> Self {
        Self::with_tracks(t, t.span_of_whole.is_some())
    }

    /// The index of `t`, keeping every location's track at `every_track` (else a location
    /// without any event has none).
    pub fn with_tracks(t: &Trace, every_track: bool) -> Self {
        let n = t.locations.name.len();
        let by = ByLocation::new(t, n);
        let (slot, legend) = state_slots(t, &by, n);
        let m = &t.messages;
        let mut by_send: Vec<u32> = (0..m.source.len() as u32).collect();
        by_send.par_sort_unstable_by_key(|&i| m.send_time[i as usize]);
        let max_latency = (0..m.source.len())
            .into_par_iter()
            .filter(|&i| m.recv_time[i] != u64::MAX)
            .map(|i| m.recv_time[i].saturating_sub(m.send_time[i]))
            .max()
            .unwrap_or(0);
        let collectives = collective_operations(t, n);
        let counters = CounterIndex::new(t);
        let instants = super::instants::instants_of(t);
        let global_instants = super::instants::global_of(t);
        let waits = std::sync::OnceLock::new();
        // The rows of a trace also drawn from a pyramid (a window of a store, a large trace held
        // in memory with its index) keep every location's track, as the pyramid's pictures do: a
        // location idle in the rows is not hidden, so the tracks stay in place as the window
        // pans and zooms between the pyramid and the rows.
        let busy = if every_track { vec![true; n] } else { tracks::busy(t) };
        let depth = std::sync::OnceLock::new();
        let device = Default::default();
        Self {
            by,
            slot,
            legend,
            span: span(t),
            by_send,
            max_latency,
            collectives,
            counters,
            instants,
            global_instants,
            waits,
            busy,
            depth,
            device,
        }
    }

    /// Per location of `t` (the trace this index is of), its deepest nesting level of intervals
    /// with a duration.
    pub(super) fn depths(&self, t: &Trace) -> &[u32] {
        self.depth.get_or_init(|| {
            (0..self.by.ranges.len())
                .into_par_iter()
                .map(|l| {
                    // Instants (no duration) are chevrons, not a band of their own.
                    let i = &t.intervals;
                    let timed = self.by.rows(l).iter().map(|&k| k as usize).filter(|&k| i.end[k] > i.start[k]);
                    let deepest = timed.map(|k| i.depth[k]).max();
                    deepest.unwrap_or(0).min(LEVELS - 1)
                })
                .collect()
        })
    }

    /// The trace's first and last tick.
    pub fn span(&self) -> Option<(u64, u64)> {
        self.span
    }

    /// The late-sender waits of `t` (the trace this index is of), sorted by start.
    pub(super) fn waits(&self, t: &Trace) -> &[Wait] {
        self.waits.get_or_init(|| exaviz_analysis::summary::late_sender_waits(t))
    }

    /// The tracks of `t` (the trace this index is of) as `opts` ask.
    pub fn tracks(&self, t: &Trace, opts: &TimelineOptions) -> Tracks {
        Tracks::new(t, &self.busy, opts.show_empty, opts.folded)
    }

    /// The trace's counter series.
    pub fn counters(&self) -> &CounterIndex {
        &self.counters
    }

    /// Rows of the messages that may be visible in `[t0, t1]`: sent by `t1`, and late enough
    /// to arrive after `t0`.
    pub(super) fn candidates(&self, t: &Trace, (t0, t1): (u64, u64)) -> &[u32] {
        let send = &t.messages.send_time;
        let a = self.by_send.partition_point(|&i| send[i as usize] < t0.saturating_sub(self.max_latency));
        let b = self.by_send.partition_point(|&i| send[i as usize] <= t1);
        &self.by_send[a..b.max(a)]
    }

    /// The innermost state of location `l` at time `at` (or its state at nesting level `level`):
    /// its kind, start and end.
    pub(super) fn state_at(&self, t: &Trace, l: usize, at: u64, level: Option<u32>) -> Option<(u32, u64, u64)> {
        let i = &t.intervals;
        let range = self.by.ranges.get(l)?.clone();
        let upto = self.by.start[range.clone()].partition_point(|&s| s <= at);
        if upto == 0 {
            return None;
        }
        // Every interval begun by `at` and not yet ended is on the walk's stack there.
        self.by
            .stack_at(range.start + upto - 1)
            .into_iter()
            .map(|p| self.by.order[p] as usize)
            .filter(|&k| i.end[k] > at && level.is_none_or(|d| i.depth[k] == d))
            .max_by_key(|&k| (i.depth[k], i.start[k]))
            .map(|k| (i.kind[k], i.start[k], i.end[k]))
    }
}

/// An area's statistics read through the index: the intervals of a window by location, the
/// messages by send time, instead of a pass over the trace.
impl exaviz_analysis::summary::RowSource for TimelineIndex {
    fn intervals(&self, t: &Trace, l: usize, window: (u64, u64)) -> Vec<usize> {
        let i = &t.intervals;
        let mut v = Vec::new();
        self.by.overlapping(l, window, |k| {
            if i.end[k] > window.0 && i.start[k] < window.1 {
                v.push(k);
            }
        });
        v
    }

    fn messages(&self, t: &Trace, window: (u64, u64)) -> Vec<usize> {
        self.candidates(t, window).iter().map(|&k| k as usize).collect()
    }

    fn max_latency(&self) -> u64 {
        self.max_latency
    }

    fn first_tick(&self, _: &Trace) -> u64 {
        self.span.map_or(0, |s| s.0)
    }
}

/// The operations of the trace's collectives: participants' rows grouped where they are of the
/// same operation and overlap in time (every participant is inside it until the last arrives).
/// Sorted by end time: (first start, last end, lowest location, highest location).
fn collective_operations(t: &Trace, n: usize) -> Vec<(u64, u64, u32, u32)> {
    let c = &t.collectives;
    let mut rows: Vec<usize> = (0..c.location.len()).filter(|&k| (c.location[k] as usize) < n).collect();
    rows.par_sort_unstable_by_key(|&k| (c.op[k], c.end[k], c.location[k]));
    let mut ops: Vec<(u32, u64, u64, u64, u32, u32)> = Vec::new();
    for k in rows {
        let (op, a, b, l) = (c.op[k], c.start[k], c.end[k], c.location[k]);
        match ops.last_mut() {
            // Same operation while this participant started before the earliest end so far.
            Some(g) if g.0 == op && a <= g.3 => {
                g.1 = g.1.min(a);
                g.2 = g.2.max(b);
                g.4 = g.4.min(l);
                g.5 = g.5.max(l);
            }
            _ => ops.push((op, a, b, b, l, l)),
        }
    }
    let mut out: Vec<(u64, u64, u32, u32)> = ops.into_iter().map(|g| (g.1, g.2, g.4, g.5)).collect();
    out.par_sort_unstable_by_key(|o| o.1);
    out
}
