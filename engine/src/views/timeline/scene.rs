//! The `timeline` view (Brendel et al. §III-A): one row per process, time along x; states as coloured
//! bars, messages as lines from their send to their receive.
//!
//! It always aggregates per pixel, so it scales to millions of intervals and messages: a pixel
//! of a row takes the mix of the states that cover it, weighted by the time each covers (the
//! innermost state of nested regions); messages go through the line-density stage on the
//! backend, one count per pixel, drawn brighter where more lines cross. Where there are more
//! processes than pixel rows, a pixel row gathers several processes.

use rayon::prelude::*;

use std::sync::Arc;

use crate::Backend;
use crate::layout::routes::{EndpointHierarchy, Grid};
use crate::model::{Dataset, Trace};
use crate::render::{Anchor, Raster, Scene};
use crate::selection::{Folded, Parts, Search, Selection};
use crate::stages::bspline::{Curve, MAX_CTRL};
use crate::stages::kde_bundle::UnitFrame;
use crate::stages::{self, BundleInput, BundleParams, ControlPolygons, DensityInput};
use crate::views::trace::Home;

use super::counters::{self, CounterChoice, CounterIndex, Track};
use super::tracks::{self, Slot, Tracks};
use crate::summary::Wait;

use crate::views::contract::{self, Pick, Picker};
use crate::views::legend::format_value;
use crate::views::plot::{CATEGORICAL, Mix, Plot, Tick, axes, direction_colour, direction_legend, nice_ticks};
use crate::views::trace::{span, window_in};
use crate::views::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

// The pyramid is drawn with the scene's own pieces.
#[path = "pyramid.rs"]
pub(super) mod pyramid;

#[derive(Clone, Copy, Debug)]
pub struct TimelineOptions {
    pub width: u32,
    pub height: u32,
    /// Time window in seconds since the trace's start (`None`: the whole trace). Zooming is
    /// choosing a window.
    pub window_s: Option<(f64, f64)>,
    /// How message lines are bundled.
    pub bundle: TimelineBundle,
    /// How overlapping message lines combine.
    pub mix: Mix,
    /// How a pixel shows the states it covers.
    pub states: StateMode,
    /// Opacity of the densest message pixels (0: messages hidden, 1: opaque); the others are
    /// more transparent by their rank among the message pixels (histogram equalisation).
    pub message_opacity: f32,
    /// Region names searched for: their intervals are lit and the rest dimmed.
    pub search: Option<Search>,
    /// Which counter series are drawn as tracks under the rows.
    pub counters: CounterChoice,
    /// Whether the late-sender waiting of receives is drawn over dimmed states.
    pub waits: bool,
    /// Whether locations without events get a track.
    pub show_empty: bool,
    /// The groups of tracks drawn collapsed.
    pub folded: Option<Folded>,
    /// Whether a row shows only its location's innermost state, rather than a band per
    /// nesting level where the row is tall enough.
    pub innermost: bool,
    /// Whether the critical path ([`crate::whyslow`]) is outlined over the rows.
    pub critical_path: bool,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        Self {
            width: 1024,
            height: 768,
            window_s: None,
            bundle: TimelineBundle::None,
            mix: Mix::Alpha,
            states: StateMode::Dominant,
            message_opacity: DEFAULT_MESSAGE_OPACITY,
            search: None,
            counters: CounterChoice::Auto,
            waits: false,
            show_empty: false,
            folded: None,
            innermost: false,
            critical_path: false,
        }
    }
}

/// The message layer's opacity where it is densest, by default: the states show through.
pub const DEFAULT_MESSAGE_OPACITY: f32 = 0.6;

/// How a pixel shows the states of the time and the processes it covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateMode {
    /// The state covering most of the pixel.
    #[default]
    Dominant,
    /// The states' shares stacked up each process row, in the legend's order from the bottom
    /// (a row one pixel high shows the state at the middle of its stack).
    Stacked,
}

/// Bundling of the timeline's message lines.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum TimelineBundle {
    /// Straight lines from send to receive.
    #[default]
    None,
    /// This engine's image-space KDE bundling (stage `kde_bundle`).
    Kde(BundleParams),
    /// Brendel et al.'s hierarchical bundling: each process's send and receive events clustered with
    /// mean shift, the cluster centres clustered again (three levels), degree-2 B-splines
    /// routed through the hierarchy with strength `beta`.
    Hierarchical { beta: f32 },
    /// Brendel et al.'s grid-based bundling: endpoint clusters as above, then shortest paths with
    /// diagonals over a grid, degree-2 B-splines with strength `beta`.
    Grid { beta: f32 },
}

impl TimelineBundle {
    fn label(&self) -> &'static str {
        match self {
            Self::None => "",
            Self::Kde(_) => ", KDE bundled",
            Self::Hierarchical { .. } => ", hierarchical bundles",
            Self::Grid { .. } => ", grid bundles",
        }
    }
}

/// Mean-shift bandwidths of the three hierarchy levels, as shares of the plot: per process along
/// time, then the centres in 2-D.
const LEVEL_BANDWIDTHS: [f32; 3] = [1.0 / 40.0, 1.0 / 10.0, 1.0 / 4.0];
/// Grid columns of the grid-based bundling (fewer on very tall plots).
const GRID_COLUMNS: u32 = 32;

const MARGIN: [u32; 4] = [80, 48, 200, 52];
/// States with their own colour; the rest share the last colour as "other".
const NAMED_STATES: usize = CATEGORICAL.len() - 1;

/// Intervals of each location sorted by (start, depth): `order[ranges[l]]`, and for each the
/// interval under it on the stack of [`ByLocation::innermost`]'s walk (`parent`, a position in
/// `order`; `NO_PARENT` at the bottom), so that a walk can start at any time without replaying
/// the location's earlier intervals.
pub(super) struct ByLocation {
    order: Vec<u32>,
    ranges: Vec<std::ops::Range<usize>>,
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
    fn rows(&self, l: usize) -> &[u32] {
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
    fn innermost(&self, l: usize, f: impl FnMut(u64, u64, u32)) {
        self.innermost_in(l, (0, u64::MAX), f);
    }

    /// [`Self::innermost`] over the window `[t0, t1]` only, clipped to it: the walk starts from
    /// the stack at `t0` (the last interval begun before it and those under it) and stops after
    /// the last interval begun by `t1`, so its cost follows the intervals in the window, not
    /// the location's whole trace.
    fn innermost_in(&self, l: usize, (t0, t1): (u64, u64), mut f: impl FnMut(u64, u64, u32)) {
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
    fn innermost_replayed(&self, t: &Trace, l: usize, mut f: impl FnMut(u64, u64, u32)) {
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
fn parts_mut<'a, T>(v: &'a mut [T], ranges: &[std::ops::Range<usize>]) -> Vec<(usize, &'a mut [T])> {
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
fn state_slots(t: &Trace, by: &ByLocation, locations: usize) -> (Vec<usize>, Legend) {
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

/// Which pixel rows location `l` of `n` covers in a plot `h` rows high.
pub(super) fn rows_of(l: usize, n: usize, h: u32) -> std::ops::Range<u32> {
    let a = (l as u64 * u64::from(h) / n as u64) as u32;
    let b = ((l as u64 + 1) * u64::from(h) / n as u64) as u32;
    // Thick rows keep a one-pixel gap between processes.
    let b = if b - a >= 4 { b - 1 } else { b.max(a + 1) };
    a..b.min(h)
}

/// Colour slot and name of each state in the legend.
type Legend = Vec<(usize, String)>;

/// RGBA of every plot pixel from the states (row-major, `None`: no state): per pixel the
/// dominant state, or the states' shares stacked up the rows of each process (`mode`); the
/// opacity is the share of the pixel's time covered by a state.
fn state_pixels(
    t: &Trace,
    p: Plot,
    window: (u64, u64),
    of_row: &[(Vec<usize>, Option<u32>)],
    index: &TimelineIndex,
    mode: StateMode,
    columns: std::ops::Range<usize>,
) -> Vec<Option<[f32; 4]>> {
    let (by, slot) = (&index.by, &index.slot);
    let (t0, t1) = window;
    let per_px = (t1 - t0) as f64 / f64::from(p.w);
    let i = &t.intervals;
    // Only the states in the columns' time are walked, from two columns before them to two
    // after: a state cut at the walk's edge is then counted in the columns as the whole
    // window's walk counts it (at most its end column in part, the others whole).
    let w = p.w as usize;
    let walked = columns.start.saturating_sub(2)..(columns.end + 2).min(w);
    let walk = if walked.start == 0 && walked.end == w {
        window
    } else {
        let at = |c: usize| t0.saturating_add((c as f64 * per_px) as u64);
        (at(walked.start), at(walked.end).saturating_add(1).min(t1))
    };
    let (skip, len) = (columns.start - walked.start, columns.len());
    stacked_runs(of_row, w, columns, mode, |(locs, level)| {
        let mut cov = Coverage::over(walked.clone());
        let mut add = |a: u64, b: u64, k: u32| {
            let (a, b) = (a.max(t0), b.min(t1));
            if a < b {
                cov.add((a - t0) as f64 / per_px, (b - t0) as f64 / per_px, slot[k as usize]);
            }
        };
        for &l in locs {
            match level {
                None => by.innermost_in(l, walk, &mut add),
                // The intervals at this level, nested ones beside it hidden by the band below.
                Some(d) => by.overlapping(l, walk, |k| {
                    if i.depth[k] == *d {
                        add(i.start[k], i.end[k], i.kind[k]);
                    }
                }),
            }
        }
        let mut cov = cov.finish();
        cov.drain(..skip);
        cov.truncate(len);
        (cov, 1.0 / locs.len().max(1) as f32)
    })
}

/// How much of each pixel column of a row each colour slot covers: intervals added in column
/// units `[xa, xb)`, over the columns `[from, to)` (an interval reaching beyond them is cut at
/// their edges, so the columns two or more inside an edge are counted as a whole row's are).
/// Columns an interval covers whole are counted once at each end of the run of them and summed
/// at the end, so a state across the whole window costs two additions, not one per column: a
/// row of many processes at a deep zoom is mostly such states.
struct Coverage {
    /// The first column, as a column unit.
    from: f64,
    cov: Vec<[f32; CATEGORICAL.len()]>,
    whole: Vec<[f32; CATEGORICAL.len()]>,
}

impl Coverage {
    fn over(columns: std::ops::Range<usize>) -> Self {
        let n = columns.len();
        Self {
            from: columns.start as f64,
            cov: vec![[0f32; CATEGORICAL.len()]; n],
            whole: vec![[0f32; CATEGORICAL.len()]; n + 1],
        }
    }

    /// Adds `[xa, xb)` (0 <= xa < xb <= the row's width) in slot `s`.
    fn add(&mut self, xa: f64, xb: f64, s: usize) {
        // Whole columns away: exact, as the columns' units are below 2^52.
        let (xa, xb) = ((xa - self.from).max(0.0), (xb - self.from).min(self.cov.len() as f64));
        if xa >= xb {
            return;
        }
        let (ca, cb) = (xa.floor() as u32, (xb.ceil() as u32).min(self.cov.len() as u32));
        let part = |c: u32| (xb.min(f64::from(c) + 1.0) - xa.max(f64::from(c))).max(0.0) as f32;
        if cb <= ca + 2 {
            for c in ca..cb {
                self.cov[c as usize][s] += part(c);
            }
            return;
        }
        // The first and last columns in part, the ones between whole.
        self.cov[ca as usize][s] += part(ca);
        self.cov[cb as usize - 1][s] += part(cb - 1);
        self.whole[ca as usize + 1][s] += 1.0;
        self.whole[cb as usize - 1][s] -= 1.0;
    }

    fn finish(mut self) -> Vec<[f32; CATEGORICAL.len()]> {
        let mut run = [0f32; CATEGORICAL.len()];
        for (c, w) in self.cov.iter_mut().zip(&self.whole) {
            for s in 0..run.len() {
                run[s] += w[s];
                c[s] += run[s];
            }
        }
        self.cov
    }
}

/// Most nesting levels a row is cut into.
const LEVELS: u32 = 8;
/// Least height of a nesting level's band, in pixels.
const LEVEL_PX: u32 = 6;

/// What each pixel row of the plot shows: its locations (several where there are more locations
/// than rows) and, given each location's deepest level (`depth`), the nesting level of the band
/// it is in where its location has a row of its own tall enough for a band per level (the
/// outermost on top; `None`: the innermost state).
fn row_contents(t: &Trace, p: Plot, tracks: &Tracks, depth: Option<&[u32]>) -> Vec<(Vec<usize>, Option<u32>)> {
    let mut of_row: Vec<(Vec<usize>, Option<u32>)> = vec![(Vec::new(), None); p.h as usize];
    for l in 0..t.locations.name.len() {
        for r in tracks.pixels(l) {
            of_row[r as usize].0.push(l);
        }
    }
    let Some(depth) = depth else { return of_row };
    for (l, &d) in depth.iter().enumerate() {
        let rows = tracks.pixels(l);
        let (r0, h) = (rows.start, rows.end.saturating_sub(rows.start));
        let alone = rows.clone().all(|r| of_row[r as usize].0.len() == 1);
        if d == 0 || !alone || h < (d + 1) * LEVEL_PX {
            continue;
        }
        for r in rows {
            of_row[r as usize].1 = Some((r - r0) * (d + 1) / h);
        }
    }
    of_row
}

/// State colours of every pixel of rows `width` pixels wide, row-major, from
/// `coverage(what a row shows)`: per pixel column of `columns` the states' cover in pixels of
/// one process's row, and one over the processes on the row. Rows showing the same (runs of them, where
/// processes are taller than a row) share one coverage, stacked over the run's rows in
/// [`StateMode::Stacked`]. Each run writes its own rows of the picture, in `columns` only (the
/// others `None`).
fn stacked_runs<K: PartialEq + Sync>(
    rows: &[K],
    width: usize,
    columns: std::ops::Range<usize>,
    mode: StateMode,
    coverage: impl Fn(&K) -> (Vec<[f32; CATEGORICAL.len()]>, f32) + Sync,
) -> Vec<Option<[f32; 4]>> {
    let mut out = vec![None; rows.len() * width];
    // The pixels of each run of rows.
    let mut runs = Vec::new();
    let mut r = 0;
    while r < rows.len() {
        let height = rows[r..].iter().take_while(|k| **k == rows[r]).count();
        runs.push(r * width..(r + height) * width);
        r += height;
    }
    parts_mut(&mut out, &runs).into_par_iter().for_each(|(at, run)| {
        let (cov, share) = coverage(&rows[at / width]);
        let height = run.len() / width;
        for (row, pixels) in run.chunks_mut(width).enumerate() {
            // Stacked: how far up the run this row's centre is.
            let up = 1.0 - (row as f32 + 0.5) / height as f32;
            for (px, c) in pixels[columns.clone()].iter_mut().zip(&cov) {
                *px = cover_colour(c, share, mode, up);
            }
        }
    });
    out
}

/// The colour of a pixel whose states cover `c` (per colour slot, in pixels of one process's
/// row; `share`: one over the processes drawn on the row), by `mode` (`up`: how far up its
/// process's rows the pixel is, for stacking). `None`: no state.
fn cover_colour(c: &[f32; CATEGORICAL.len()], share: f32, mode: StateMode, up: f32) -> Option<[f32; 4]> {
    let total: f32 = c.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let s = match mode {
        StateMode::Dominant => (0..c.len()).fold(0, |best, s| if c[s] > c[best] { s } else { best }),
        StateMode::Stacked => {
            let mut below = 0.0;
            (0..c.len())
                .find(|&s| {
                    below += c[s] / total;
                    c[s] > 0.0 && below > up
                })
                .unwrap_or_else(|| (0..c.len()).rfind(|&s| c[s] > 0.0).unwrap_or(0))
        }
    };
    // States a little darker than their legend swatches, so that message lines stand out on them.
    let rgb = CATEGORICAL[s].map(|v| v * 0.72);
    Some([rgb[0], rgb[1], rgb[2], (total * share).min(1.0)])
}

/// What a timeline keeps between pictures of one trace: intervals by location, state colours
/// and legend, the time span, and messages in order of sending, so that a new time window
/// (zoom, pan) starts from them instead of sorting the trace again.
pub struct TimelineIndex {
    by: ByLocation,
    slot: Vec<usize>,
    legend: Legend,
    span: Option<(u64, u64)>,
    /// Message rows by send time.
    by_send: Vec<u32>,
    /// The longest send-to-receive time, so a window's messages are a range of `by_send`.
    max_latency: u64,
    /// Collective operations by end time: first start, last end, lowest and highest location.
    collectives: Vec<(u64, u64, u32, u32)>,
    /// The counter series, sorted by time.
    counters: CounterIndex,
    /// The trace's late-sender waits, found when first drawn.
    waits: std::sync::OnceLock<Vec<Wait>>,
    /// Per location, whether it has any event (else its track is hidden).
    busy: Vec<bool>,
    /// Per location, its deepest nesting level (0: nothing nested), at most `LEVELS - 1`, found
    /// when first drawn in bands.
    depth: std::sync::OnceLock<Vec<u32>>,
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
        let waits = std::sync::OnceLock::new();
        // The rows of a trace also drawn from a pyramid (a window of a store, a large trace held
        // in memory with its index) keep every location's track, as the pyramid's pictures do: a
        // location idle in the rows is not hidden, so the tracks stay in place as the window
        // pans and zooms between the pyramid and the rows.
        let busy = if every_track { vec![true; n] } else { tracks::busy(t) };
        let depth = std::sync::OnceLock::new();
        Self { by, slot, legend, span: span(t), by_send, max_latency, collectives, counters, waits, busy, depth }
    }

    /// Per location of `t` (the trace this index is of), its deepest nesting level.
    fn depths(&self, t: &Trace) -> &[u32] {
        self.depth.get_or_init(|| {
            (0..self.by.ranges.len())
                .into_par_iter()
                .map(|l| {
                    let deepest = self.by.rows(l).iter().map(|&k| t.intervals.depth[k as usize]).max();
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
    fn waits(&self, t: &Trace) -> &[Wait] {
        self.waits.get_or_init(|| crate::summary::late_sender_waits(t))
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
    fn candidates(&self, t: &Trace, (t0, t1): (u64, u64)) -> &[u32] {
        let send = &t.messages.send_time;
        let a = self.by_send.partition_point(|&i| send[i as usize] < t0.saturating_sub(self.max_latency));
        let b = self.by_send.partition_point(|&i| send[i as usize] <= t1);
        &self.by_send[a..b.max(a)]
    }

    /// The innermost state of location `l` at time `at` (or its state at nesting level `level`):
    /// its kind, start and end.
    fn state_at(&self, t: &Trace, l: usize, at: u64, level: Option<u32>) -> Option<(u32, u64, u64)> {
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
impl crate::summary::RowSource for TimelineIndex {
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

/// Gradient weight of a piece of a message line at `t` along it (0: sender, 1: receiver).
const GRADIENT_STEPS: f32 = 16.0;
/// Bundled messages per density pass (bounds the memory of their curves and segments).
const MESSAGES_PER_PASS: usize = 1 << 18;

/// Message lines in plot pixels, through the line-density stage on the backend, each line cut
/// into pieces weighted by their position from sender (0) to receiver (16): per pixel, `counts`
/// is the number of lines and `sums / 16` how much of them is receiver end. Bundled as `bundle`
/// says. Straight lines beside those `kept` are drawn only where the kept picture lacks them.
#[allow(clippy::too_many_arguments, reason = "the window's lines, where they go, and what was drawn before")]
fn message_density(
    t: &Trace,
    backend: &Backend,
    p: Plot,
    window: (u64, u64),
    tracks: &Tracks,
    bundle: &TimelineBundle,
    index: &TimelineIndex,
    kept: Option<(&KeptLines, TraceKey)>,
) -> Result<(stages::DensityImage, Vec<u32>), ViewError> {
    let (t0, t1) = window;
    let m = &t.messages;
    let n = t.locations.name.len();
    let scale = f64::from(p.w) / (t1 - t0) as f64;
    let x = |time: u64| ((time as f64 - t0 as f64) * scale) as f32;
    // Each location's row centre, once (a window's lines read it twice each).
    let centre: Vec<f32> = (0..n)
        .map(|l| {
            let r = tracks.pixels(l);
            (r.start + r.end) as f32 / 2.0
        })
        .collect();
    let y = |l: u32| centre[l as usize];
    let shown = |i: usize| {
        m.send_time[i] <= t1
            && m.recv_time[i] >= t0
            && m.recv_time[i] != u64::MAX
            && (m.source[i] as usize) < n
            && (m.destination[i] as usize) < n
    };
    // Straight lines beside the last picture's: only those through the columns it lacks are drawn.
    let kept = kept.filter(|_| matches!(bundle, TimelineBundle::None)).map(|(k, key)| (k, (key, centre.clone())));
    let beside = kept.as_ref().and_then(|(k, key)| k.beside(key, p, window));
    let (lo, hi) = beside.as_ref().map_or((f32::MIN, f32::MAX), Beside::reach);
    let line = |i: usize| [x(m.send_time[i]), y(m.source[i]), x(m.recv_time[i]), y(m.destination[i])];
    let drawn = |l: &[f32; 4]| l[0].max(l[2]) >= lo && l[0].min(l[2]) < hi;
    let candidates = index.candidates(t, window);
    // In row order, as the density and bundling stages always saw them.
    let (visible, lines): (Vec<u32>, Vec<[f32; 4]>) = if candidates.is_sorted() {
        // Rows in send order already (a window read from disk, a million of them): the visible
        // rows and their lines in one pass, in parts joined once.
        let parts: Vec<(Vec<u32>, Vec<[f32; 4]>)> = candidates
            .par_chunks(VISIBLE_PART)
            .map(|part| {
                let rows: Vec<u32> = part.iter().copied().filter(|&i| shown(i as usize)).collect();
                let lines = rows.iter().map(|&i| line(i as usize)).filter(drawn).collect();
                (rows, lines)
            })
            .collect();
        let mut visible = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
        let mut lines = Vec::with_capacity(visible.capacity());
        for (rows, part) in parts {
            visible.extend_from_slice(&rows);
            lines.extend_from_slice(&part);
        }
        (visible, lines)
    } else {
        let mut visible: Vec<u32> = candidates.par_iter().copied().filter(|&i| shown(i as usize)).collect();
        if !visible.is_sorted() {
            sort_distinct(&mut visible);
        }
        let lines = visible.par_iter().map(|&i| line(i as usize)).filter(drawn).collect();
        (visible, lines)
    };
    let ends = |k: usize| [m.source[visible[k] as usize], m.destination[visible[k] as usize]];
    let router = Router::new(bundle, &lines, ends, n, p);
    if let TimelineBundle::None = bundle {
        let mut image = straight_density(backend, &lines, p)?;
        if let Some(b) = beside {
            b.fill(&mut image);
        }
        if let Some((k, key)) = kept {
            k.keep(key, p, window, image.clone());
        }
        return Ok((image, visible));
    }
    let pixels = (p.w * p.h) as usize;
    let mut total = stages::DensityImage { width: p.w, height: p.h, counts: vec![0; pixels], sums: vec![0; pixels] };
    // Bundled lines in parts, which bounds the memory of their curves.
    for (c, part) in lines.chunks(MESSAGES_PER_PASS).enumerate() {
        let polylines = match bundle {
            TimelineBundle::None => unreachable!("straight lines are drawn above"),
            TimelineBundle::Kde(params) => {
                let frame = UnitFrame::fit(part);
                let unit: Vec<[f32; 4]> = part.iter().map(|&e| frame.edge_to_unit(e)).collect();
                let mut b = stages::kde_bundle::run(
                    backend.runner().as_mut(),
                    &BundleInput { edges: &unit, weights: None },
                    params,
                )?;
                b.points.iter_mut().for_each(|q| *q = frame.from_unit(*q));
                Polylines { samples: b.samples as usize, points: b.points }
            }
            TimelineBundle::Hierarchical { beta } | TimelineBundle::Grid { beta } => {
                let router = router.as_ref().expect("a router for routed bundles");
                let first = c * MESSAGES_PER_PASS;
                let polygons = router.polygons(part, first);
                let curve = Curve { samples: router.samples, beta: beta.clamp(0.0, 1.0), degree: 2 };
                let b = stages::bspline::run(backend.runner().as_mut(), &polygons, curve)?;
                Polylines { samples: b.samples as usize, points: b.points }
            }
        };
        let (segments, weights) = polylines.pieces();
        let input = DensityInput { segments: &segments, weights: Some(&weights), width: p.w, height: p.h };
        let image = stages::line_density::run(backend.runner().as_mut(), &input)?;
        total.counts.iter_mut().zip(&image.counts).for_each(|(a, b)| *a = a.saturating_add(*b));
        total.sums.iter_mut().zip(&image.sums).for_each(|(a, b)| *a += b);
    }
    Ok((total, visible))
}

/// Distinct `rows` in increasing order, through a bitmap over their range where it is dense
/// enough: linear in the rows and in the range / 64, where a comparison sort of the 668K rows of
/// one window of a 22M-message trace held in memory took about 20 ms.
fn sort_distinct(rows: &mut Vec<u32>) {
    let (lo, hi) = rows.iter().fold((u32::MAX, 0), |(a, b), &r| (a.min(r), b.max(r)));
    if lo > hi {
        return;
    }
    let words = ((hi - lo) as usize / 64) + 1;
    if words > rows.len().saturating_mul(8) {
        // Few rows over a long range: sorting them is cheaper than scanning the range.
        rows.par_sort_unstable();
        return;
    }
    let mut bits = vec![0u64; words];
    for &r in rows.iter() {
        let k = (r - lo) as usize;
        bits[k / 64] |= 1 << (k % 64);
    }
    rows.clear();
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            rows.push(lo + (w * 64) as u32 + x.trailing_zeros());
            x &= x - 1;
        }
    }
}

/// Candidate messages per part of the pass that finds the visible ones.
const VISIBLE_PART: usize = 1 << 16;

/// Which trace's rows a picture drew: its name, its locations, the span of the whole trace
/// where the rows are one window's of it, and else the messages and intervals it holds.
pub type TraceKey = (String, usize, Option<(u64, u64)>, (usize, usize));

/// The key of `dataset`'s trace.
fn trace_key(dataset: &Dataset) -> TraceKey {
    let t = &dataset.trace;
    let held = if t.span_of_whole.is_some() { (0, 0) } else { (t.messages.source.len(), t.intervals.start.len()) };
    (dataset.name.clone(), t.locations.name.len(), t.span_of_whole, held)
}

/// A picture's columns kept with what it was drawn from (`K`), its plot and its window, so
/// that the next picture of the same, in a window panned by whole pixels (every time within
/// [`SHIFT_SLACK`] of a pixel), draws only the columns it uncovers and takes the others from it.
pub struct KeptColumns<K, T> {
    last: std::sync::Mutex<Option<LastColumns<K, T>>>,
    /// How many pictures took columns from the kept one.
    taken: std::sync::atomic::AtomicUsize,
}

impl<K, T> Default for KeptColumns<K, T> {
    fn default() -> Self {
        Self { last: std::sync::Mutex::new(None), taken: Default::default() }
    }
}

/// What [`KeptColumns`] keeps.
pub struct LastColumns<K, T> {
    key: K,
    plot: Plot,
    window: (u64, u64),
    image: T,
}

/// How far (pixels) a line or state edge of the kept picture may lie from where the new picture
/// puts it, at any time of the new window, for the kept columns to be taken: a pan moves a
/// window by seconds, which round to ticks, so the shift is a whole number of pixels only to
/// within ticks per pixel.
pub const SHIFT_SLACK: f64 = 1.0 / 64.0;

/// The message lines' density of the last picture: drawn from the same trace (its key) with the
/// same row centres.
pub type KeptLines = KeptColumns<(TraceKey, Vec<f32>), stages::DensityImage>;

/// The state colours of the last picture: drawn from the same trace (its key) with the same
/// rows' contents, colour slots and mode.
pub type KeptStates = KeptColumns<StatesKey, Vec<Option<[f32; 4]>>>;

/// What the state colours of a picture were drawn from, beside its window and plot.
pub type StatesKey = (TraceKey, Vec<(Vec<usize>, Option<u32>)>, Vec<usize>, StateMode);

/// The last timeline picture's state colours and message lines, kept so that a pan draws only
/// the columns it uncovers.
#[derive(Default)]
pub struct LastPicture {
    states: KeptStates,
    lines: KeptLines,
}

/// A kept picture beside a new window's: its pixels and the whole pixels between them.
struct Beside<T> {
    image: T,
    /// The kept picture's column of the new picture's column 0.
    shift: i64,
}

impl<K: PartialEq, T: Clone> KeptColumns<K, T> {
    /// The kept picture (taken out), where it was drawn from `key` in the plot `p` and `window`
    /// is panned from its window by whole pixels, fewer than the plot's width.
    fn beside(&self, key: &K, p: Plot, window: (u64, u64)) -> Option<Beside<T>> {
        let mut kept = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let last = kept.as_ref().filter(|l| l.key == *key && l.plot == p)?;
        let shift = pixel_shift(last.window, window, p.w)?;
        self.taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Taken rather than copied: the new picture is kept in its place.
        kept.take().map(|last| Beside { image: last.image, shift })
    }

    /// Keeps the picture of `window`.
    fn keep(&self, key: K, plot: Plot, window: (u64, u64), image: T) {
        let last = LastColumns { key, plot, window, image };
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(last);
    }

    /// The window of the kept picture.
    #[cfg(test)]
    fn window(&self) -> Option<(u64, u64)> {
        self.last.lock().unwrap().as_ref().map(|l| l.window)
    }

    /// How many pictures took columns from a kept one.
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The whole pixels by which the picture of `now` lies beside that of `before` in a plot `w`
/// pixels wide (positive: `now` is later, so the kept column `x + shift` is the new column
/// `x`), where every time of `now` lies within [`SHIFT_SLACK`] of that shift in both; `None`
/// where it does not or where no column is shared.
fn pixel_shift(before: (u64, u64), now: (u64, u64), w: u32) -> Option<i64> {
    let scale = |window: (u64, u64)| f64::from(w) / window.1.saturating_sub(window.0).max(1) as f64;
    let (s0, s1) = (scale(before), scale(now));
    let apart = |time: u64| (time as f64 - before.0 as f64) * s0 - (time as f64 - now.0 as f64) * s1;
    let (a, b) = (apart(now.0), apart(now.1));
    let k = a.round();
    let close = (a - k).abs() <= SHIFT_SLACK && (b - k).abs() <= SHIFT_SLACK;
    (close && k.abs() < f64::from(w)).then_some(k as i64)
}

/// The columns of a picture `w` pixels wide that a picture `shift` pixels beside it lacks.
fn uncovered(w: usize, shift: i64) -> std::ops::Range<usize> {
    let s = (shift.unsigned_abs() as usize).min(w);
    if shift >= 0 { w - s..w } else { 0..s }
}

/// Copies into `to` (rows `w` pixels wide) every column that `from`, a picture `shift` pixels
/// beside it, holds.
fn take_columns<T: Copy>(to: &mut [T], from: &[T], w: usize, shift: i64) {
    let s = (shift.unsigned_abs() as usize).min(w);
    let (mine, theirs) = if shift >= 0 { (0..w - s, s..w) } else { (s..w, 0..w - s) };
    for (row, kept) in to.chunks_exact_mut(w).zip(from.chunks_exact(w)) {
        row[mine.clone()].copy_from_slice(&kept[theirs.clone()]);
    }
}

impl Beside<stages::DensityImage> {
    /// The span of x (plot pixels) that a line must reach into to be drawn: the uncovered
    /// columns (a line is drawn in the pixels of the floors of its points) and a pixel each side.
    fn reach(&self) -> (f32, f32) {
        let columns = uncovered(self.image.width as usize, self.shift);
        if columns.is_empty() {
            return (f32::MAX, f32::MIN);
        }
        ((columns.start as f32 - 1.0), (columns.end as f32 + 1.0))
    }

    /// `image` (drawn from the lines through the uncovered columns) with every other column
    /// taken from the kept picture.
    fn fill(&self, image: &mut stages::DensityImage) {
        let w = image.width as usize;
        take_columns(&mut image.counts, &self.image.counts, w, self.shift);
        take_columns(&mut image.sums, &self.image.sums, w, self.shift);
    }
}

/// Straight message lines, each cut into the three pieces [`Polylines::straight`] makes of it
/// (weighted 0, 8 and 16 steps from sender to receiver), through the line-density stage's
/// straight lines: equal to one weighted pass over the pieces, count for count and sum for sum.
fn straight_density(backend: &Backend, lines: &[[f32; 4]], p: Plot) -> Result<stages::DensityImage, ViewError> {
    const PIECES: usize = STRAIGHT_SAMPLES - 1;
    let weights: Vec<u32> = (0..PIECES).map(|k| piece_weight(k, PIECES)).collect();
    let input = stages::line_density::StraightInput { lines, weights: &weights, width: p.w, height: p.h };
    Ok(stages::line_density::straight(backend.runner().as_mut(), &input)?)
}

/// Points of a straight message line (three pieces).
const STRAIGHT_SAMPLES: usize = 4;

/// The gradient weight of piece `k` of `per` along a line (0: at the sender).
fn piece_weight(k: usize, per: usize) -> u32 {
    let f = if per > 1 { k as f32 / (per - 1) as f32 } else { 0.5 };
    (f * GRADIENT_STEPS).round() as u32
}

/// Control polygons of the routed bundlings: the endpoint hierarchy, and the grid if routed on one.
struct Router {
    hierarchy: EndpointHierarchy,
    grid: Option<Grid>,
    samples: u32,
}

impl Router {
    /// `ends(k)`: the sending and receiving process of line `k`.
    fn new(
        bundle: &TimelineBundle,
        lines: &[[f32; 4]],
        ends: impl Fn(usize) -> [u32; 2],
        n: usize,
        p: Plot,
    ) -> Option<Self> {
        let (w, h) = (p.w as f32, p.h as f32);
        let (grid, levels) = match bundle {
            TimelineBundle::Hierarchical { .. } => (None, LEVEL_BANDWIDTHS.len()),
            TimelineBundle::Grid { .. } => {
                // Routes must fit a control polygon with the two endpoints and their clusters.
                let most = (MAX_CTRL - 5) as f32;
                let cols = GRID_COLUMNS.min((most * w / h) as u32).max(1);
                (Some(Grid::over([0.0, 0.0], [w, h], cols)), 1)
            }
            TimelineBundle::None | TimelineBundle::Kde(_) => return None,
        };
        // Endpoints far outside a zoomed window cluster at its sides (bounded work and precision).
        let x = |v: f32| v.clamp(-w, 2.0 * w);
        let events: Vec<[f32; 2]> = lines.iter().flat_map(|l| [[x(l[0]), l[1]], [x(l[2]), l[3]]]).collect();
        let process: Vec<u32> = (0..lines.len()).flat_map(&ends).collect();
        let side = w.max(h);
        let bandwidths = [w * LEVEL_BANDWIDTHS[0], side * LEVEL_BANDWIDTHS[1], side * LEVEL_BANDWIDTHS[2]];
        let hierarchy = EndpointHierarchy::build(&events, &process, n, &bandwidths[..levels]);
        let samples = if grid.is_some() { 24 } else { 16 };
        Some(Self { hierarchy, grid, samples })
    }

    /// Polygons of `part`, the lines from `first` on.
    fn polygons(&self, part: &[[f32; 4]], first: usize) -> ControlPolygons {
        let mut out = ControlPolygons::new();
        let mut buf = Vec::with_capacity(MAX_CTRL);
        for (k, l) in part.iter().enumerate() {
            let e = 2 * (first + k);
            let (a, b) = ([l[0], l[1]], [l[2], l[3]]);
            match &self.grid {
                None => self.hierarchy.hierarchical_polygon(e, a, e + 1, b, &mut buf),
                Some(g) => {
                    let (ca, cb) = (self.hierarchy.endpoint_centre(e), self.hierarchy.endpoint_centre(e + 1));
                    buf.clear();
                    buf.extend([a, ca]);
                    g.route(ca, cb, &mut buf);
                    buf.extend([cb, b]);
                }
            }
            out.push(buf.iter().copied());
        }
        out
    }
}

/// Polylines with the same number of points each.
struct Polylines {
    samples: usize,
    points: Vec<[f32; 2]>,
}

impl Polylines {
    /// Straight lines of `samples` points each (the reference of [`straight_density`]).
    #[cfg(test)]
    fn straight(lines: &[[f32; 4]], samples: usize) -> Self {
        let points = lines
            .iter()
            .flat_map(|l| {
                (0..samples).map(move |k| {
                    let f = k as f32 / (samples - 1) as f32;
                    [l[0] + (l[2] - l[0]) * f, l[1] + (l[3] - l[1]) * f]
                })
            })
            .collect();
        Self { samples, points }
    }

    /// Every piece between consecutive points, weighted by its position along its line.
    fn pieces(&self) -> (Vec<[f32; 4]>, Vec<u32>) {
        let s = self.samples.max(2);
        let per = s - 1;
        let mut segments = Vec::with_capacity(self.points.len() / s * per);
        let mut weights = Vec::with_capacity(segments.capacity());
        for line in self.points.chunks_exact(s) {
            for k in 0..per {
                let (a, b) = (line[k], line[k + 1]);
                segments.push([a[0], a[1], b[0], b[1]]);
                weights.push(piece_weight(k, per));
            }
        }
        (segments, weights)
    }
}

/// The plot rectangle of a timeline `width x height` pixels (`None`: too small), for mapping
/// pointer positions to time in the interactive viewer.
pub fn plot_rect(width: u32, height: u32) -> Option<Plot> {
    Plot::inside(width, height, MARGIN)
}

/// The trace's duration in seconds over intervals and messages (`None`: nothing timed).
pub fn duration_s(t: &Trace) -> Option<f64> {
    span(t).map(|(a, b)| (b - a) as f64 / t.ticks_per_second.max(1) as f64)
}

/// The time window after zooming `window` by `factor` (above 1: in) around the point `at` of the
/// way across it, kept inside `[0, duration]`.
pub fn zoom_window(window: (f64, f64), duration: f64, factor: f64, at: f64) -> (f64, f64) {
    let (a, b) = window;
    let centre = a + at.clamp(0.0, 1.0) * (b - a);
    let span = ((b - a) / factor).clamp(duration * 1e-9, duration);
    clamp_window(centre - at.clamp(0.0, 1.0) * span, span, duration)
}

/// The time window after moving `window` by `share` of its width (positive: later).
pub fn pan_window(window: (f64, f64), duration: f64, share: f64) -> (f64, f64) {
    let span = window.1 - window.0;
    clamp_window(window.0 + share * span, span, duration)
}

fn clamp_window(start: f64, span: f64, duration: f64) -> (f64, f64) {
    let start = start.clamp(0.0, (duration - span).max(0.0));
    (start, start + span)
}

/// The plot rectangle of a timeline picture of `opts`' size.
fn timeline_plot(opts: &TimelineOptions) -> Result<Plot, ViewError> {
    Plot::inside(opts.width, opts.height, MARGIN).ok_or_else(|| {
        ViewError::Unsupported(format!("picture {}x{} too small for a timeline", opts.width, opts.height))
    })
}

/// What a timeline picture is made of, from raw rows or from a pyramid: per plot pixel the
/// state colour and the message lines, the states' legend and the collectives' joins.
struct Layers<'a> {
    states: &'a [Option<[f32; 4]>],
    density: &'a stages::DensityImage,
    legend: &'a [(usize, String)],
    joins: &'a Joins,
    /// A search's matches (where the rows were read) and its line.
    search: Option<(Option<&'a [bool]>, &'a str)>,
    /// The pixels of late-sender waiting, and the line saying how much there is.
    waits: Option<(&'a [bool], &'a str)>,
    /// The counter tracks under the rows.
    counters: CounterLayer<'a>,
    /// The line saying the critical path is outlined.
    critical: Option<&'a str>,
}

/// The counter tracks of a picture: the plot of rows and tracks together (the axes go round
/// it), the series, the tracks drawn and how many series were left out.
struct CounterLayer<'a> {
    outer: Plot,
    index: &'a CounterIndex,
    tracks: &'a [Track],
    hidden: usize,
}

/// Rows at least this tall (pixels) are labelled with their location's name; thinner ones get
/// a few rank numbers.
const NAMED_ROW_PX: u32 = 14;

/// The row axis's ticks on a plot `p` whose row `i` covers `rows(i)` (pixel rows): where the
/// rows are tall enough on average, each row tall enough with its location's name (the part that
/// tells the names apart, fitted to the margin, elided with "…"); else a few rank numbers.
/// `names` is asked for the `n` rows' names only where they are shown.
pub(super) fn row_ticks<'a>(
    n: usize,
    names: impl FnOnce() -> std::borrow::Cow<'a, [String]>,
    p: Plot,
    rows: impl Fn(usize) -> std::ops::Range<u32>,
) -> Vec<Tick> {
    let centre = |i: usize| {
        let r = rows(i);
        (r.start + r.end) as f32 / 2.0 / p.h as f32
    };
    // Rows keep a pixel's gap below them: NAMED_ROW_PX rows with it.
    let tall = |i: usize| rows(i).len() as u32 + 1 >= NAMED_ROW_PX;
    let height: u64 = (0..n).map(|i| rows(i).len() as u64 + 1).sum();
    if n > 0 && height >= n as u64 * u64::from(NAMED_ROW_PX) {
        let width = MARGIN[0] as f32 - 14.0;
        let names = names();
        let mut short = distinct_parts(&names);
        if short.iter().any(|s| crate::render::TextAtlas::measure(s, 11.0) > width) {
            short = without_common_words(&short);
        }
        let named = short.iter().enumerate().filter(|&(i, _)| tall(i));
        return named.map(|(i, s)| (centre(i), crate::views::plot::fit(s, width, 11.0))).collect();
    }
    nice_ticks(0.0, (n.max(1) - 1) as f64, 6)
        .into_iter()
        .filter(|(_, v)| v.fract() == 0.0)
        .map(|(_, v)| (centre(v as usize), format!("{v:.0}")))
        .collect()
}

/// The names without the leading words they all share, where each keeps at least one
/// ("process 108800" and "process 108801" become "108800" and "108801"; the axis says what they
/// are).
fn without_common_words(names: &[String]) -> Vec<String> {
    let words: Vec<Vec<&str>> = names.iter().map(|s| s.split(' ').collect()).collect();
    let Some(shortest) = shortest_of_several(&words) else { return names.to_vec() };
    let lead = shared_lead(&words, shortest, |w, k| w[k]);
    words.iter().map(|w| w[lead..].join(" ")).collect()
}

/// The fewest parts of any of `parts`, where there are at least two lists of at least two parts.
fn shortest_of_several(parts: &[Vec<&str>]) -> Option<usize> {
    let shortest = parts.iter().map(Vec::len).min().unwrap_or(0);
    (parts.len() >= 2 && shortest >= 2).then_some(shortest)
}

/// How many of the first `shortest - 1` parts (`at(list, k)`, counted from either end) all
/// lists share.
fn shared_lead<'a>(parts: &[Vec<&'a str>], shortest: usize, at: impl Fn(&Vec<&'a str>, usize) -> &'a str) -> usize {
    (0..shortest - 1).take_while(|&k| parts.iter().all(|p| at(p, k) == at(&parts[0], k))).count()
}

/// The names without the leading and trailing ` / `-separated parts they all share ("node
/// quartz10 / MPI Rank 0 / Master thread" and "... Rank 1 ..." become "MPI Rank 0" and "MPI Rank
/// 1"); names that share nothing, or a single name, are kept whole.
fn distinct_parts(names: &[String]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = names.iter().map(|s| s.split(" / ").collect()).collect();
    let Some(shortest) = shortest_of_several(&parts) else { return names.to_vec() };
    let lead = shared_lead(&parts, shortest, |p, k| p[k]);
    let trail = shared_lead(&parts, shortest - lead, |p, k| p[p.len() - 1 - k]);
    parts.iter().map(|p| p[lead..p.len() - trail].join(" / ")).collect()
}

/// The timeline scene of `layers` over `window` of the trace's span `full` (ticks, `tps` per
/// second): title, axes, legend, the states and messages as one raster layer, collectives.
fn compose(
    opts: &TimelineOptions,
    p: Plot,
    (window, full, tps): ((u64, u64), (u64, u64), f64),
    (y_ticks, rows_title): (Vec<Tick>, &str),
    (title, axis): (&str, &str),
    layers: &Layers<'_>,
) -> Scene {
    let (states, density) = (layers.states, layers.density);
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    scene.text(&crate::views::plot::fit(title, opts.width as f32 - 24.0, 15.0), [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    let (s0, s1) = ((window.0 - full.0) as f64 / tps, (window.1 - full.0) as f64 / tps);
    let x_ticks = nice_ticks(s0, s1, 6);
    let step = x_ticks.get(1).map_or(1.0, |b| b.1 - x_ticks[0].1);
    let decimals = (-step.log10().floor()).clamp(0.0, 9.0) as usize;
    let x_ticks: Vec<Tick> = x_ticks
        .into_iter()
        .map(|(f, v)| (f, if v.abs() >= 1e4 { format_value(v) } else { format!("{v:.decimals$}") }))
        .collect();
    // The rows' ticks, placed on the plot of rows and tracks the axes go round.
    let outer = layers.counters.outer;
    let y_ticks: Vec<Tick> = y_ticks
        .into_iter()
        .map(|(f, s)| ((p.y0 - outer.y0) as f32 / outer.h as f32 + f * p.h as f32 / outer.h as f32, s))
        .collect();
    axes(&mut scene, outer, &x_ticks, &y_ticks, axis, rows_title);
    let max = density.counts.iter().copied().max().unwrap_or(0);
    let tone = MessageTone::new(&density.counts, opts.message_opacity);
    legend_column(&mut scene, p, layers.legend, &tone, opts.mix, !layers.joins.is_empty());
    let log_max = (f64::from(max) + 1.0).ln();
    let opacity = tone.opacity;
    let mask = layers.search.and_then(|(mask, _)| mask);
    let notes: Vec<&str> =
        [layers.search.map(|s| s.1), layers.waits.map(|w| w.1), layers.critical].into_iter().flatten().collect();
    if !notes.is_empty() {
        // Clear of the row axis's title on the left; the right half is the selected pair's.
        let note = crate::views::plot::fit(&notes.join("; "), p.w as f32 * 0.5 - 32.0, 11.0);
        scene.text(&note, [p.x0 as f32 + 24.0, p.y0 as f32 - 8.0], 11.0, Anchor::Left, TEXT);
    }
    let waits = layers.waits.map(|w| w.0);
    let pixel = |k: usize| -> Option<[f32; 4]> {
        if waits.is_some_and(|w| w[k]) {
            return Some(WAIT_COLOUR);
        }
        // A search lights its matches (their states at full strength) and dims the rest; waits
        // shown dim every state.
        let lit = mask.map(|m| m[k]).or(waits.map(|_| false));
        let state = match lit {
            Some(true) => states[k].map(|s| [s[0] / 0.72, s[1] / 0.72, s[2] / 0.72, 1.0]),
            Some(false) => states[k].map(|s| [s[0], s[1], s[2], s[3] * 0.3]),
            None => states[k],
        };
        let opacity = if lit == Some(false) { opacity * 0.3 } else { opacity };
        let c = density.counts[k];
        if c == 0 || opacity <= 0.0 {
            return state;
        }
        let share = (density.sums[k] as f32 / GRADIENT_STEPS / c as f32).clamp(0.0, 1.0);
        let line = direction_colour(share);
        let under = state.map_or(BACKGROUND, |s| [s[0] * s[3], s[1] * s[3], s[2] * s[3]]);
        if opts.mix == Mix::Additive {
            // Every line adds its colour (the gradient is linear, so the sum is the count times
            // the mean colour), tone-mapped by the log of the count so that the busiest pixel
            // saturates and single lines stay visible.
            let k = additive_gain(c, log_max) * opacity;
            let rgb = [0, 1, 2].map(|ch| (under[ch] * 0.5 + line[ch] * k).min(1.0));
            return Some([rgb[0], rgb[1], rgb[2], 1.0]);
        }
        let a = if lit == Some(false) { tone.alpha(c) * 0.3 } else { tone.alpha(c) };
        Some([
            under[0] + (line[0] - under[0]) * a,
            under[1] + (line[1] - under[1]) * a,
            under[2] + (line[2] - under[2]) * a,
            1.0,
        ])
    };
    let colours: Vec<[u8; 4]> = (0..(p.w * p.h) as usize)
        .into_par_iter()
        .map(|k| pixel(k).map_or([0; 4], |c| c.map(crate::render::unorm8)))
        .collect();
    let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
    scene.raster(Raster::rgba(rect, p.w, p.h, colours));
    draw_collectives(&mut scene, p, layers.joins);
    let c = &layers.counters;
    let below = [8.0, (outer.y0 + outer.h) as f32 + 34.0];
    counters::draw(&mut scene, c.index, c.tracks, c.hidden, below);
    scene
}

/// The row axis's title, from what the locations are: processes (MPI ranks), or threads and
/// streams where the source types or names them so.
pub(super) fn rows_title(t: &Trace) -> &'static str {
    row_words(t).0
}

/// `n` rows counted in the title's words: "processes", "threads" or "threads and streams".
pub(super) fn rows_counted(t: &Trace, n: usize) -> String {
    format!("{n} {}", row_words(t).1)
}

/// What the rows are: the row axis's title and the rows' plural.
fn row_words(t: &Trace) -> (&'static str, &'static str) {
    use crate::model::LocationKind::{CpuThread, GpuStream};
    let l = &t.locations;
    let typed = |kind| l.kind.contains(&kind);
    // Sources that do not type their locations name them ("thread 4037", "stream 7"); every
    // picture asks, so the names are searched in place, not lowered into copies.
    let named = |word: &str| {
        l.name.iter().any(|n| n.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word.as_bytes())))
    };
    let threads = typed(CpuThread) || named("thread ");
    match (threads, typed(GpuStream) || named("stream ")) {
        (_, true) => ("thread / stream", "threads and streams"),
        (true, false) => ("thread", "threads"),
        _ => ("process (rank)", "processes"),
    }
}

/// Late-sender waiting's colour: Okabe & Ito's vermillion at full strength over dimmed states.
const WAIT_COLOUR: [f32; 4] = [0.835, 0.369, 0.0, 1.0];

/// Per plot pixel, whether a late-sender wait of `waits` (sorted by start) covers it (at least a
/// pixel each; in a row cut into nesting levels, in its receive's band: `levels` per pixel row),
/// and the line saying how much waiting the window and the trace hold.
fn wait_mask(
    t: &Trace,
    waits: &[Wait],
    p: Plot,
    window: (u64, u64),
    (tracks, levels): (&Tracks, &[Option<u32>]),
) -> (Vec<bool>, String) {
    let n = t.locations.name.len();
    let mut mask = vec![false; (p.w * p.h) as usize];
    let span = (window.1 - window.0) as f64;
    let x = |tick: u64| (tick.clamp(window.0, window.1) - window.0) as f64 / span * f64::from(p.w);
    let (mut count, mut ticks) = (0usize, 0u64);
    let begun = waits.partition_point(|w| w.from < window.1);
    for w in waits[..begun].iter().filter(|w| w.to > window.0 && (w.location as usize) < n) {
        count += 1;
        ticks += w.to.min(window.1) - w.from.max(window.0);
        let x0 = (x(w.from) as u32).min(p.w - 1);
        let x1 = (x(w.to).ceil() as u32).clamp(x0 + 1, p.w);
        let rows = tracks.pixels(w.location as usize);
        for row in rows.filter(|&r| levels.get(r as usize).copied().flatten().is_none_or(|d| d == w.depth)) {
            let at = (row * p.w) as usize;
            mask[at + x0 as usize..at + x1 as usize].fill(true);
        }
    }
    let tps = t.ticks_per_second.max(1) as f64;
    let total: u64 = waits.iter().map(|w| w.to - w.from).sum();
    let secs = |ticks: u64| {
        let s = ticks as f64 / tps;
        match s {
            s if s >= 1.0 => format!("{s:.3} s"),
            s if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
            s => format!("{:.1} µs", s * 1e6),
        }
    };
    let note = if waits.is_empty() {
        "late senders: none in the trace".to_string()
    } else {
        format!("late senders: {count} waits, {} (of {}, {})", secs(ticks), waits.len(), secs(total))
    };
    (mask, note)
}

/// The tracks of a picture laid out on its plot.
pub(super) struct Placed {
    pub rows: Tracks,
    /// The counter tracks: series, plot, and whether under their location's own row.
    pub counters: Vec<(usize, Plot, bool)>,
    /// How many counter series were left out.
    pub hidden: usize,
    /// Whether rows tall enough are cut into a band per nesting level.
    pub banded: bool,
}

/// The tracks of a timeline of `t` as `opts` ask, on plot `p`: the counter tracks chosen (as
/// many as fit) each under the track of its location, and, where every track can be tall enough
/// for two nesting levels, the tracks' heights following the levels they show (a collapsed group
/// one level), the depths found once then.
pub(super) fn placed(t: &Trace, index: &TimelineIndex, opts: &TimelineOptions, p: Plot) -> Placed {
    let mut rows = index.tracks(t, opts);
    let (wanted, hidden) = counters::heights(p.h, &index.counters.chosen(opts.counters), index.counters.series.len());
    // Each under its location's track; a series whose location has a row of its own (and that row
    // alone) needs no location in its label.
    let (slots, own): (Vec<Slot>, Vec<bool>) = wanted
        .iter()
        .map(|&(s, height)| {
            let l = index.counters.series[s].location as usize;
            let after = rows.anchor(t, l);
            (Slot { after: after.unwrap_or(usize::MAX), height }, after.is_some_and(|k| rows.single(k) == Some(l)))
        })
        .unzip();
    let room = p.h.saturating_sub(slots.iter().map(|s| s.height + counters::GAP_PX).sum());
    let banded = !opts.innermost && rows.count() as u64 * u64::from(2 * LEVEL_PX - 1) < u64::from(room);
    let weights: Vec<u32> = if banded {
        let depth = index.depths(t);
        (0..rows.count()).map(|k| rows.single(k).map_or(1, |l| depth.get(l).map_or(1, |d| d + 1))).collect()
    } else {
        Vec::new()
    };
    let ranges = rows.place(p.h, &weights, &slots);
    let counters = wanted
        .iter()
        .zip(ranges)
        .zip(own)
        .filter(|((_, r), _)| !r.is_empty())
        .map(|((&(s, _), r), own)| (s, Plot { y0: p.y0 + r.start, h: r.end - r.start, ..p }, own))
        .collect();
    Placed { rows, counters, hidden, banded }
}

/// The timeline as a scene (states and messages one raster layer over the plot) and what its
/// tooltips read, from the trace's `index`; `home` is the window drawn when none is asked for.
pub fn timeline_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &TimelineOptions,
    index: &Arc<TimelineIndex>,
    home: Option<Home>,
    kept: Option<&LastPicture>,
) -> Result<(Scene, TimelinePick), ViewError> {
    let t = &dataset.trace;
    let n = t.locations.name.len();
    if n == 0 {
        return Err(ViewError::Unsupported("the timeline needs a trace with processes (locations)".into()));
    }
    let full = index.span.ok_or_else(|| ViewError::Unsupported("the trace has no intervals or messages".into()))?;
    let tps = t.ticks_per_second.max(1) as f64;
    let home = if opts.window_s.is_none() { home } else { None };
    let window = window_in(full, tps, opts.window_s.or(home.as_ref().map(|h| h.window_s)))?;
    let p = timeline_plot(opts)?;
    let Placed { rows, counters: placed, hidden, banded } = placed(t, index, opts, p);
    let counter_tracks = counters::tracks(&index.counters, &placed, window);
    let of_row = row_contents(t, p, &rows, banded.then(|| index.depths(t)));
    let key = kept.map(|_| trace_key(dataset));
    // The states are kept once the picture is composed (moved, not copied).
    let states_kept =
        kept.zip(key.clone()).map(|(k, key)| (&k.states, (key, of_row.clone(), index.slot.clone(), opts.states)));
    let (states, messages) = rayon::join(
        || {
            let w = p.w as usize;
            let beside = states_kept.as_ref().and_then(|(k, key)| k.beside(key, p, window));
            let columns = beside.as_ref().map_or(0..w, |b| uncovered(w, b.shift));
            let mut pixels = state_pixels(t, p, window, &of_row, index, opts.states, columns);
            if let Some(b) = &beside {
                take_columns(&mut pixels, &b.image, w, b.shift);
            }
            pixels
        },
        || message_density(t, backend, p, window, &rows, &opts.bundle, index, kept.map(|k| &k.lines).zip(key)),
    );
    let (density, visible) = messages?;
    let bundled = opts.bundle.label();
    let read = if t.span_of_whole.is_some() { " read for this window" } else { "" };
    let title = format!(
        "Timeline: {} ({}, {} messages{read}{bundled})",
        crate::views::title_name(dataset),
        rows_counted(t, n),
        t.messages.source.len()
    );
    let joins = collective_joins(t, p, window, &rows, index);
    let levels: Vec<Option<u32>> = of_row.iter().map(|r| r.1).collect();
    let found = opts.search.map(|s| super::search::highlight(t, p, window, &s, &rows, &levels));
    let search = found.as_ref().map(|h| (Some(&h.mask[..]), h.note.as_str()));
    let waited = opts.waits.then(|| wait_mask(t, index.waits(t), p, window, (&rows, &levels)));
    let waits = waited.as_ref().map(|(m, note)| (&m[..], note.as_str()));
    let counters = CounterLayer { outer: p, index: &index.counters, tracks: &counter_tracks, hidden };
    let legend = &index.legend;
    let critical = opts.critical_path.then_some(CRITICAL_NOTE);
    let layers =
        Layers { states: &states, density: &density, legend, joins: &joins, search, waits, counters, critical };
    let mut axis = match &home {
        Some(h) => format!("time since trace start (s); {}", h.note),
        None => "time since trace start (s)".into(),
    };
    if rows.hidden > 0 {
        axis.push_str(&format!("; {} empty rows hidden", rows.hidden));
    }
    let rows_title = rows_title(t);
    let y_ticks = row_ticks(rows.count(), || rows.names(t).into(), p, |k| rows.track_pixels(k));
    let scene = compose(opts, p, (window, full, tps), (y_ticks, rows_title), (&title, &axis), &layers);
    if let Some((k, key)) = states_kept {
        k.keep(key, p, window, states);
    }
    let pick = TimelinePick {
        index: index.clone(),
        plot: p,
        window,
        full,
        n,
        counts: density.counts,
        visible,
        tracks: counter_tracks,
        rows,
        levels,
        folded: opts.folded.unwrap_or_default(),
    };
    Ok((scene, pick))
}

/// What the timeline's tooltips read: the plot, the window, the messages drawn and the lines
/// through each pixel.
pub struct TimelinePick {
    index: Arc<TimelineIndex>,
    plot: Plot,
    /// The time window drawn, ticks.
    window: (u64, u64),
    /// The trace's span, ticks (times are shown from its start).
    full: (u64, u64),
    n: usize,
    counts: Vec<u32>,
    /// The rows of the messages drawn.
    visible: Vec<u32>,
    /// The counter tracks drawn.
    tracks: Vec<Track>,
    /// The locations' rows.
    rows: Tracks,
    /// Per pixel row of the plot, the nesting level of its band (`None`: the innermost state).
    levels: Vec<Option<u32>>,
    /// The groups drawn collapsed.
    folded: Folded,
}

/// Most messages searched one by one for the line under the pointer; past it, the tooltip gives
/// the count of lines through the pixel only.
const PICK_MESSAGES: usize = 200_000;
/// Most lines a highlighted pair draws.
const PAIR_LINES: usize = 50_000;

impl TimelinePick {
    fn x_of(&self, time: u64) -> f32 {
        let (t0, t1) = self.window;
        self.plot.x0 as f32 + ((time as f64 - t0 as f64) / (t1 - t0) as f64 * f64::from(self.plot.w)) as f32
    }

    fn y_of(&self, l: u32) -> f32 {
        let r = self.rows.pixels(l as usize);
        self.plot.y0 as f32 + (r.start + r.end) as f32 / 2.0
    }

    /// The drawn message whose line passes nearest to `at`, within 4 pixels.
    fn message_near(&self, t: &Trace, at: [f32; 2]) -> Option<usize> {
        if self.visible.len() > PICK_MESSAGES {
            return None;
        }
        let m = &t.messages;
        let dist = |i: usize| {
            let a = [self.x_of(m.send_time[i]), self.y_of(m.source[i])];
            let b = [self.x_of(m.recv_time[i]), self.y_of(m.destination[i])];
            contract::distance_to_segment(at, a, b)
        };
        self.visible
            .par_iter()
            .map(|&i| (dist(i as usize), i as usize))
            .filter(|(d, _)| *d <= 4.0)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, i)| i)
    }

    /// Over a row's label at height `y`: the row's group, and a click collapsing or opening it.
    fn label_pick(&self, y: f32) -> Option<Pick> {
        let track = self.rows.at_row((y - self.plot.y0 as f32) as u32)?;
        let (group, collapsed) = self.rows.group(track)?;
        let (name, count) = self.rows.group_names.get(group as usize)?;
        let what = if collapsed { "open it" } else { "collapse it to one row" };
        let pick = Pick::new(format!("{name}: {count} rows"), vec![format!("click: {what}")]);
        let folded = Some(self.folded.toggled(group));
        Some(pick.with_click(Parts::FOLDED, Selection { folded, ..Default::default() }))
    }

    fn seconds(&self, t: &Trace, time: u64) -> String {
        format!("{:.6} s", time.saturating_sub(self.full.0) as f64 / t.ticks_per_second.max(1) as f64)
    }
}

impl Picker for TimelinePick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let p = self.plot;
        let t = &dataset.trace;
        let (t0, t1) = self.window;
        if let Some((title, mut lines, time)) = counters::pick(&self.index.counters, &self.tracks, self.window, at) {
            lines.insert(0, format!("at {}", self.seconds(t, time)));
            return Some(Pick::new(title, lines));
        }
        if at[0] < p.x0 as f32 && at[1] >= p.y0 as f32 && at[1] < (p.y0 + p.h) as f32 {
            return self.label_pick(at[1]);
        }
        let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
        let [u, v] = contract::share_in(rect, at)?;
        let time = t0 + ((t1 - t0) as f64 * f64::from(u)) as u64;
        let row = (v * p.h as f32) as u32;
        // The first location on this pixel row's track.
        let track = self.rows.at_row(row)?;
        let l = self.rows.locations(track).next()?;
        let name = t.locations.name.get(l).cloned().unwrap_or_default();
        let mut lines = vec![format!("at {}", self.seconds(t, time))];
        // In a band of one nesting level, the state at that level.
        let level = self.levels.get(row as usize).copied().flatten();
        match self.index.state_at(t, l, time, level) {
            Some((kind, a, b)) => {
                let state = t.region_names.get(kind as usize).cloned().unwrap_or_else(|| format!("state {kind}"));
                lines.push(format!("{state}: {} to {}", self.seconds(t, a), self.seconds(t, b)));
            }
            None => lines.push("no state".into()),
        }
        let k = (row * p.w + ((u * p.w as f32) as u32).min(p.w - 1)) as usize;
        let mut click = None;
        if let Some(i) = self.message_near(t, at) {
            let m = &t.messages;
            lines.push(format!(
                "message {} → {}, {} bytes, tag {}",
                m.source[i], m.destination[i], m.bytes[i], m.tag[i]
            ));
            lines.push(format!(
                "sent {}, received {}",
                self.seconds(t, m.send_time[i]),
                self.seconds(t, m.recv_time[i])
            ));
            lines.push("click: follow it ([ and ] go to its ends, f fits it)".into());
            let pair = Some((m.source[i], m.destination[i]));
            click = Some(Selection { pair, message: Some(i as u32), ..Default::default() });
        } else if let Some(&c) = self.counts.get(k).filter(|&&c| c > 0) {
            lines.push(format!("{c} message lines through this pixel"));
        }
        let pick = Pick::new(format!("rank {l} ({name})"), lines);
        Some(match click {
            Some(s) => pick.with_click(Parts::PAIR | Parts::MESSAGE, s),
            None => pick,
        })
    }

    /// The selected pair's messages in the window, drawn over everything in white, the
    /// followed message thicker in yellow with its ends marked, and the search's current match
    /// framed in white (at least 7 px wide) with a mark above the plot at its time.
    fn overlay(&self, dataset: &Dataset, selection: &Selection, scene: &mut Scene) -> bool {
        let m = &dataset.trace.messages;
        if let Some(found) = selection.found {
            self.frame(scene, found, FOUND, 7.0);
            let (t0, t1) = self.window;
            if found.to > t0 && found.from < t1 {
                let x = (self.x_of(found.from.max(t0)) + self.x_of(found.to.min(t1))) / 2.0;
                let y = self.plot.y0 as f32;
                scene.rect([x - 1.5, y - 8.0], [x + 1.5, y - 1.0], FOUND, true);
            }
        }
        if let Some(i) = selection.message.map(|i| i as usize).filter(|&i| i < m.source.len()) {
            let (a, b) = (
                [self.x_of(m.send_time[i]), self.y_of(m.source[i])],
                [self.x_of(m.recv_time[i]), self.y_of(m.destination[i])],
            );
            let yellow = [0.941, 0.894, 0.259, 1.0];
            scene.segment(crate::render::Blend::Alpha, a, b, 2.5, yellow, false);
            for c in [a, b] {
                scene.rect([c[0] - 3.0, c[1] - 3.0], [c[0] + 3.0, c[1] + 3.0], yellow, true);
            }
        }
        let Some((s, r)) = selection.pair else { return selection.message.is_some() || selection.found.is_some() };
        let of_pair = |&&i: &&u32| m.source[i as usize] == s && m.destination[i as usize] == r;
        for &i in self.visible.iter().filter(of_pair).take(PAIR_LINES) {
            let i = i as usize;
            let (a, b) = ([self.x_of(m.send_time[i]), self.y_of(s)], [self.x_of(m.recv_time[i]), self.y_of(r)]);
            scene.segment(crate::render::Blend::Alpha, a, b, 1.5, [1.0, 1.0, 1.0, 0.9], false);
        }
        let label = format!("highlighted: messages {s} → {r}");
        let at = [self.plot.x0 as f32 + self.plot.w as f32, self.plot.y0 as f32 - 8.0];
        scene.text(&label, at, 11.0, Anchor::Right, TEXT);
        true
    }
}

impl TimelinePick {
    /// Outlines `area` (its time clipped to the window, its rows) in white.
    pub(super) fn outline(&self, scene: &mut Scene, area: crate::summary::Area) {
        self.frame(scene, area, [1.0, 1.0, 1.0, 0.95], 0.0);
    }

    /// A frame 1.5 px thick in `colour` around `area`, at least `least` px wide (centred on it).
    fn frame(&self, scene: &mut Scene, area: crate::summary::Area, colour: [f32; 4], least: f32) {
        let (t0, t1) = self.window;
        if area.to <= t0 || area.from >= t1 || area.first as usize >= self.n {
            return;
        }
        let p = self.plot;
        let (x0, x1) = (self.x_of(area.from.max(t0)), self.x_of(area.to.min(t1)));
        let grow = ((least - (x1 - x0)) / 2.0).max(0.0);
        let (x0, x1) = (x0 - grow, x1 + grow);
        let last = (area.last as usize).min(self.n - 1);
        let drawn: Vec<_> =
            (area.first as usize..=last).map(|l| self.rows.pixels(l)).filter(|r| !r.is_empty()).collect();
        let (Some(top), Some(bottom)) = (drawn.iter().map(|r| r.start).min(), drawn.iter().map(|r| r.end).max()) else {
            return;
        };
        let (y0, y1) = (p.y0 as f32 + top as f32, p.y0 as f32 + bottom as f32);
        let (y0, y1) = if least > 0.0 && y1 - y0 < least { (y0 - 1.5, y1 + 1.5) } else { (y0, y1) };
        for (a, b) in [
            ([x0, y0], [x1, y0 + 1.5]),
            ([x0, y1 - 1.5], [x1, y1]),
            ([x0, y0], [x0 + 1.5, y1]),
            ([x1 - 1.5, y0], [x1, y1]),
        ] {
            scene.rect(a, b, colour, true);
        }
    }
}

/// The critical path's colour: a magenta none of the state colours, the white of the area's
/// outline and the search's match, nor the vermillion of waiting take; told apart from the
/// states by its shape (frames and lines) too.
const CRITICAL: [f32; 4] = [0.95, 0.25, 0.95, 1.0];

/// The note above the plot while the critical path is outlined.
const CRITICAL_NOTE: &str = "critical path outlined in magenta";

impl TimelinePick {
    /// Outlines `path` in [`CRITICAL`]: each stretch on a row framed, each crossing a line
    /// from its source's row at the send to its destination's at the arrival.
    pub(super) fn critical_path(&self, scene: &mut Scene, path: &crate::whyslow::Path) {
        use crate::whyslow::Step;
        let (t0, t1) = self.window;
        let p = self.plot;
        let clamp = |x: f32| x.clamp(p.x0 as f32, (p.x0 + p.w) as f32);
        for s in &path.segments {
            if s.to < t0 || s.from > t1 {
                continue;
            }
            let (x0, x1) = (clamp(self.x_of(s.from.max(t0))), clamp(self.x_of(s.to.min(t1))));
            match s.step {
                Step::On => {
                    let r = self.rows.pixels(s.location as usize);
                    if r.is_empty() {
                        continue;
                    }
                    let (y0, y1) = (p.y0 as f32 + r.start as f32, p.y0 as f32 + r.end as f32);
                    // At least 3 pixels wide, so that a short stretch still shows.
                    let grow = ((3.0 - (x1 - x0)) / 2.0).max(0.0);
                    scene.frame([x0 - grow, y0, x1 + grow, y1], 2.0, CRITICAL, true);
                }
                Step::Edge(_) => {
                    let (a, b) = (self.rows.pixels(s.from_location as usize), self.rows.pixels(s.location as usize));
                    if a.is_empty() || b.is_empty() {
                        continue;
                    }
                    let (ya, yb) = (self.y_of(s.from_location), self.y_of(s.location));
                    scene.segment(crate::render::Blend::Alpha, [x0, ya], [x1, yb], 2.0, CRITICAL, true);
                }
            }
        }
    }
}

/// The search's current match: white, as the area's outline (the matches are lit in their
/// states' colours, any of which a coloured frame could share).
const FOUND: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

/// The area between the picture points `from` and `to` of a timeline whose `rows` fill `p`
/// over `window` (ticks): the time between their x and the locations of the tracks between
/// their y, clamped to the plot; `None` where they are less than 3 pixels apart in x (a click).
pub(super) fn area_between(
    p: Plot,
    window: (u64, u64),
    rows: &Tracks,
    from: [f32; 2],
    to: [f32; 2],
) -> Option<crate::summary::Area> {
    if rows.count() == 0 || (from[0] - to[0]).abs() < 3.0 {
        return None;
    }
    let x = |v: f32| ((v - p.x0 as f32) / p.w as f32).clamp(0.0, 1.0);
    let row = |v: f32| ((v - p.y0 as f32).clamp(0.0, p.h as f32 - 1.0)) as u64;
    let span = (window.1 - window.0) as f64;
    let tick = |f: f32| window.0 + (span * f64::from(f)) as u64;
    let (a, b) = (x(from[0].min(to[0])), x(from[0].max(to[0])));
    let (r0, r1) = (row(from[1].min(to[1])), row(from[1].max(to[1])));
    let (k0, k1) = (rows.at_or_above(r0 as u32)?, rows.at_or_above(r1 as u32)?);
    let first = rows.locations(k0).min()? as u32;
    let last = rows.locations(k1).max()? as u32;
    Some(crate::summary::Area { from: tick(a), to: tick(b).max(tick(a) + 1), first, last: last.max(first) })
}

/// Additive mixing: the sum of `count` lines' colours over their mean colour, after the log tone
/// map (one line 0.25, the busiest pixel 1.3, saturated).
fn additive_gain(count: u32, log_max: f64) -> f32 {
    (0.25 + 1.05 * ((f64::from(count) + 1.0).ln() - 2f64.ln()).max(0.0) / (log_max - 2f64.ln()).max(1e-9)) as f32
}

/// The message layer's opacity by histogram equalisation: a pixel's rank among the pixels that
/// messages cross (the midpoint of its count's run), so that every density level gets an equal
/// share of the opacity range, from a fifth of `opacity` up to `opacity`.
struct MessageTone {
    /// Line counts of the pixels with lines, sorted.
    sorted: Vec<u32>,
    /// [`Self::rank`] of every count up to the highest, where that is at most [`RANKED`]: a
    /// picture looks up each pixel's rank rather than searching `sorted` twice.
    ranks: Vec<f32>,
    opacity: f32,
}

/// Highest count whose rank [`MessageTone`] keeps in a table.
const RANKED: u32 = 1 << 16;

impl MessageTone {
    fn new(counts: &[u32], opacity: f32) -> Self {
        let mut sorted: Vec<u32> = counts.par_iter().copied().filter(|&c| c > 0).collect();
        sorted.par_sort_unstable();
        let opacity = if opacity.is_finite() { opacity.clamp(0.0, 1.0) } else { DEFAULT_MESSAGE_OPACITY };
        let mut tone = Self { sorted, ranks: Vec::new(), opacity };
        if let Some(&max) = tone.sorted.last().filter(|&&m| m <= RANKED) {
            // One sweep: `below` counts the pixels under `c`, `upto` those at most `c`.
            let (sorted, n) = (&tone.sorted, tone.sorted.len());
            let mut below = 0;
            tone.ranks = (0..=max)
                .map(|c| {
                    let mut upto = below;
                    while sorted.get(upto).is_some_and(|&v| v <= c) {
                        upto += 1;
                    }
                    let rank = ((below + upto) as f32 / 2.0 / n as f32).clamp(0.0, 1.0);
                    below = upto;
                    rank
                })
                .collect();
        }
        tone
    }

    /// Rank of `count` among the message pixels, 0 to 1.
    fn rank(&self, count: u32) -> f32 {
        match self.ranks.get(count as usize) {
            Some(&r) => r,
            None => self.searched_rank(count),
        }
    }

    /// [`Self::rank`] by binary search.
    fn searched_rank(&self, count: u32) -> f32 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let below = self.sorted.partition_point(|&c| c < count);
        let upto = self.sorted.partition_point(|&c| c <= count);
        ((below + upto) as f32 / 2.0 / self.sorted.len() as f32).clamp(0.0, 1.0)
    }

    fn alpha(&self, count: u32) -> f32 {
        self.opacity * (0.2 + 0.8 * self.rank(count))
    }

    /// The count at quantile `q` of the message pixels.
    fn quantile(&self, q: f32) -> u32 {
        let k = ((self.sorted.len().saturating_sub(1)) as f32 * q.clamp(0.0, 1.0)).round() as usize;
        self.sorted.get(k).copied().unwrap_or(0)
    }
}

/// Collective operations in a window, as plot pixels: each participant's span (`spans`: row,
/// x0, x1; only where rows are tall enough to show them apart from the states), and one join
/// per operation and pixel column at the operations' end (`x`, top row, bottom row).
struct Joins {
    spans: Vec<(u32, f32, f32)>,
    joins: Vec<(f32, f32, f32)>,
}

impl Joins {
    fn is_empty(&self) -> bool {
        self.joins.is_empty()
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

fn collective_joins(t: &Trace, p: Plot, window: (u64, u64), tracks: &Tracks, index: &TimelineIndex) -> Joins {
    let (t0, t1) = window;
    let n = t.locations.name.len();
    let scale = f64::from(p.w) / (t1 - t0) as f64;
    let x = |time: u64| ((time as f64 - t0 as f64) * scale) as f32;
    let row = |l: u32| tracks.pixels(l as usize);
    let ops = &index.collectives;
    let first = ops.partition_point(|o| o.1 < t0);
    // Per pixel column: the highest and lowest rows joined there.
    let mut columns: Vec<Option<(u32, u32)>> = vec![None; p.w as usize];
    for o in ops[first..].iter().take_while(|o| o.1 <= t1) {
        let c = (x(o.1).floor().max(0.0) as usize).min(p.w as usize - 1);
        let (top, bottom) = (row(o.2).start, row(o.3).end);
        columns[c] = Some(columns[c].map_or((top, bottom), |(a, b)| (a.min(top), b.max(bottom))));
    }
    let joins =
        columns.iter().enumerate().filter_map(|(c, j)| j.map(|(a, b)| (c as f32 + 0.5, a as f32, b as f32))).collect();
    // Spans: a line along the bottom of each participant's row, merged per row where they
    // touch within a pixel.
    let mut spans = Vec::new();
    if (tracks.count() as u32) * 4 <= p.h {
        let c = &t.collectives;
        let mut by_row: Vec<Vec<(f32, f32)>> = vec![Vec::new(); n];
        for k in 0..c.location.len() {
            let l = c.location[k] as usize;
            if l < n && c.end[k] >= t0 && c.start[k] <= t1 {
                by_row[l].push((x(c.start[k].max(t0)), x(c.end[k].min(t1))));
            }
        }
        for (l, mut v) in by_row.into_iter().enumerate() {
            v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            let mut open: Option<(f32, f32)> = None;
            for (a, b) in v {
                open = match open {
                    Some((oa, ob)) if a <= ob + 1.0 => Some((oa, ob.max(b))),
                    Some(done) => {
                        spans.push((row(l as u32).end, done.0, done.1));
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
            }
            if let Some(done) = open {
                spans.push((row(l as u32).end, done.0, done.1));
            }
        }
    }
    Joins { spans, joins }
}

/// Collectives' colour: a light reddish purple, apart from the states' darker colours and the
/// white of a highlighted pair.
const COLLECTIVE: [f32; 4] = [0.96, 0.62, 0.84, 0.95];

fn draw_collectives(scene: &mut Scene, p: Plot, j: &Joins) {
    let (x0, y0) = (p.x0 as f32, p.y0 as f32);
    for &(row_end, a, b) in &j.spans {
        let y = y0 + row_end as f32;
        scene.rect([x0 + a, y - 2.0], [x0 + b.max(a + 1.0), y], COLLECTIVE, false);
    }
    for &(x, top, bottom) in &j.joins {
        let (a, b) = ([x0 + x, y0 + top], [x0 + x, y0 + bottom.max(top + 1.0)]);
        scene.segment(crate::render::Blend::Alpha, a, b, 1.0, COLLECTIVE, false);
    }
}

fn legend_column(
    scene: &mut Scene,
    p: Plot,
    legend: &[(usize, String)],
    tone: &MessageTone,
    mix: Mix,
    collectives: bool,
) {
    let x = (p.x0 + p.w + 20) as f32;
    let mut y = p.y0 as f32 + 8.0;
    scene.text("states", [x, y], 13.0, Anchor::Left, TEXT);
    for (s, name) in legend {
        y += 20.0;
        let c = CATEGORICAL[*s].map(|v| v * 0.72);
        scene.rect([x, y - 10.0], [x + 14.0, y + 2.0], [c[0], c[1], c[2], 1.0], true);
        let short: String = name.chars().take(22).collect();
        scene.text(&short, [x + 20.0, y], 11.0, Anchor::Left, TEXT_DIM);
    }
    if collectives {
        y += 20.0;
        scene.rect([x + 6.0, y - 12.0], [x + 8.0, y + 4.0], COLLECTIVE, true);
        scene.rect([x, y + 2.0], [x + 14.0, y + 4.0], COLLECTIVE, true);
        scene.text("collective", [x + 20.0, y], 11.0, Anchor::Left, TEXT_DIM);
    }
    y += 36.0;
    scene.text("messages per pixel", [x, y], 13.0, Anchor::Left, TEXT);
    y += 10.0;
    // The direction legend needs 30 pixels below its top; nothing is drawn past the picture.
    let bottom = scene.height as f32 - 6.0;
    let max = tone.quantile(1.0);
    if mix == Mix::Additive {
        // Swatches from one line to the busiest pixel, of the gradient's middle colour.
        let mid = direction_colour(0.5);
        let log_max = (f64::from(max.max(1)) + 1.0).ln();
        // Four swatches 24 pixels apart, closer (to 14) where the picture is short.
        let pitch = ((bottom - y - 36.0) / 4.0).clamp(14.0, 24.0);
        let size = (pitch - 4.0).min(16.0);
        let mut last = 0;
        for (k, f) in [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0].into_iter().enumerate() {
            let lines = (f64::from(max.max(1)).powf(f).round() as u32).max(last + 1).min(max.max(1));
            if lines == last {
                continue;
            }
            last = lines;
            let y0 = y + k as f32 * pitch;
            let c = mid.map(|v| (v * additive_gain(lines, log_max) * tone.opacity).min(1.0));
            scene.rect([x, y0], [x + size, y0 + size], [c[0], c[1], c[2], 1.0], true);
            scene.text(&format!("{lines}"), [x + 22.0, y0 + size - 4.0], 11.0, Anchor::Left, TEXT_DIM);
        }
        let note = y + 3.0 * pitch + 32.0;
        scene.text("(colours add, log scale)", [x, note], 11.0, Anchor::Left, TEXT_DIM);
        if note + 32.0 + 30.0 <= bottom {
            direction_legend(scene, x, note + 32.0);
        }
        return;
    }
    // Equalised: equal steps of the ramp hold equal numbers of pixels; labels at the quartiles.
    // The ramp shrinks (to 24 pixels) to leave room for the direction legend below it.
    let steps = ((bottom - y - 78.0) / 4.0).clamp(6.0, 24.0) as usize;
    let ramp = steps as f32 * 4.0;
    for k in 0..steps {
        let q = k as f32 / (steps - 1) as f32;
        let a = tone.opacity * (0.2 + 0.8 * q);
        let y0 = y + k as f32 * 4.0;
        scene.rect([x, y0], [x + 16.0, y0 + 4.0], [1.0, 1.0, 1.0, a], true);
    }
    if max == 0 {
        // No lines: nothing for the direction legend to explain.
        scene.text("(no messages in view)", [x, y + ramp + 18.0], 11.0, Anchor::Left, TEXT_DIM);
        return;
    }
    let mut last = None;
    for q in [0.0f32, 0.5, 1.0] {
        let c = tone.quantile(q);
        if last == Some(c) {
            continue;
        }
        last = Some(c);
        let y0 = y + 8.0 + q * (ramp - 8.0);
        scene.text(&format!("{c}"), [x + 22.0, y0], 11.0, Anchor::Left, TEXT_DIM);
    }
    scene.text("(equalised)", [x, y + ramp + 18.0], 11.0, Anchor::Left, TEXT_DIM);
    let gy = y + ramp + 48.0;
    if gy + 30.0 <= bottom {
        direction_legend(scene, x, gy);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Intervals;

    /// The legend column stays inside the picture at small heights, in both mixes, with and
    /// without messages: every glyph and swatch below the picture's top and above its bottom.
    #[test]
    fn the_legend_column_fits_small_pictures() {
        use crate::render::{FLAG_SCREEN, KIND_GLYPH};
        let legend: Vec<(usize, String)> = (0..7).map(|s| (s, format!("state {s}"))).collect();
        for height in [360u32, 400, 768] {
            for mix in [Mix::Alpha, Mix::Additive] {
                for counts in [vec![0u32; 16], (0..16).collect()] {
                    let mut scene = Scene::new(1024, height, BACKGROUND);
                    let p = Plot::inside(1024, height, MARGIN).expect("a plot");
                    legend_column(&mut scene, p, &legend, &MessageTone::new(&counts, 0.8), mix, true);
                    let bottom = scene
                        .layers
                        .iter()
                        .flat_map(|l| &l.instances)
                        .filter(|i| i.kind & !FLAG_SCREEN == KIND_GLYPH || i.kind & !FLAG_SCREEN == 1)
                        .map(|i| i.b[1])
                        .fold(0.0f32, f32::max);
                    assert!(bottom <= height as f32, "{height} px, {mix:?}: the legend reaches {bottom}");
                }
            }
        }
    }

    #[test]
    fn rows_are_named_by_what_tells_their_names_apart() {
        let names: Vec<String> =
            ["node quartz10 / MPI Rank 0 / Master thread", "node quartz10 / MPI Rank 1 / Master thread"]
                .map(String::from)
                .to_vec();
        assert_eq!(distinct_parts(&names), ["MPI Rank 0", "MPI Rank 1"]);
        let plain: Vec<String> = ["rank 0", "rank 1"].map(String::from).to_vec();
        assert_eq!(distinct_parts(&plain), plain);
        let p = Plot { x0: 80, y0: 48, w: 600, h: 400 };
        let equal = |n: usize| move |i: usize| rows_of(i, n, p.h);
        let named = row_ticks(2, || names[..].into(), p, equal(2));
        assert_eq!(named.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["MPI Rank 0", "MPI Rank 1"]);
        assert!(named[0].0 < named[1].0, "top to bottom");
        let many: Vec<String> = (0..1000).map(|r| format!("rank {r}")).collect();
        assert!(
            row_ticks(1000, || many[..].into(), p, equal(1000)).iter().all(|t| t.1.parse::<u32>().is_ok()),
            "thin rows get numbers"
        );
        // Names too long for the margin lose the words they share: PerfFlowAspect's processes.
        let long: Vec<String> = ["process 108800", "process 108801"].map(String::from).to_vec();
        let ticks = row_ticks(2, || long[..].into(), p, equal(2));
        assert_eq!(ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["108800", "108801"]);
    }

    #[test]
    fn innermost_states_hide_their_parents() {
        let t = Trace {
            intervals: Intervals {
                location: vec![0, 0, 0, 1],
                start: vec![0, 10, 12, 5],
                end: vec![100, 20, 15, 6],
                kind: vec![0, 1, 2, 1],
                depth: vec![0, 1, 2, 0],
            },
            ..Default::default()
        };
        let by = ByLocation::new(&t, 2);
        let mut seen = Vec::new();
        by.innermost(0, |a, b, k| seen.push((a, b, k)));
        assert_eq!(seen, vec![(0, 10, 0), (10, 12, 1), (12, 15, 2), (15, 20, 1), (20, 100, 0)]);
        seen.clear();
        by.innermost_in(0, (11, 16), |a, b, k| seen.push((a, b, k)));
        assert_eq!(seen, vec![(11, 12, 1), (12, 15, 2), (15, 16, 1)]);
        seen.clear();
        by.innermost(1, |a, b, k| seen.push((a, b, k)));
        assert_eq!(seen, vec![(5, 6, 1)]);
    }

    /// A trace's idle location is hidden; in the rows of one window of a larger trace it keeps
    /// its track, as in the pyramid's pictures of the whole trace.
    #[test]
    fn a_window_of_a_larger_trace_keeps_every_track() {
        let mut t = Trace {
            intervals: Intervals {
                location: vec![0, 2],
                start: vec![0, 5],
                end: vec![10, 6],
                kind: vec![0, 0],
                depth: vec![0, 0],
            },
            ..Default::default()
        };
        t.locations.name = ["rank 0", "rank 1", "rank 2"].map(String::from).to_vec();
        let opts = TimelineOptions::default();
        let whole = TimelineIndex::new(&t).tracks(&t, &opts);
        assert_eq!((whole.count(), whole.hidden), (2, 1));
        t.span_of_whole = Some((0, 100));
        let window = TimelineIndex::new(&t).tracks(&t, &opts);
        assert_eq!((window.count(), window.hidden), (3, 0));
    }

    /// A trace's states take their colours by their time in it; the rows of one window of a
    /// larger trace take them by the whole trace's, as its pyramid gives them, where it counts
    /// every kind (else by the window's own).
    #[test]
    fn a_window_of_a_larger_trace_colours_its_states_as_the_whole_trace_does() {
        let mut t = Trace {
            intervals: Intervals {
                location: vec![0, 0],
                start: vec![0, 10],
                end: vec![10, 100],
                kind: vec![0, 1],
                depth: vec![0, 0],
            },
            ..Default::default()
        };
        t.locations.name = vec!["rank 0".into()];
        t.region_names = ["compute", "wait"].map(String::from).to_vec();
        let legend = |t: &Trace| TimelineIndex::new(t).legend.iter().map(|l| l.1.clone()).collect::<Vec<_>>();
        assert_eq!(legend(&t), ["wait", "compute"]);
        t.span_of_whole = Some((0, 1000));
        t.state_ticks_of_whole = Some(vec![900, 100]);
        assert_eq!(legend(&t), ["compute", "wait"]);
        t.state_ticks_of_whole = Some(vec![900]);
        assert_eq!(legend(&t), ["wait", "compute"], "a pyramid that lumps kinds together");
    }

    /// A trace held in memory with an index ranks its states for the rows' pictures as the
    /// index's pictures do, by every interval's time (a parent's included), not by the innermost
    /// states' time, and keeps a track for every location as they do: the legend does not swap,
    /// nor the tracks move, as a zoom moves from the index to the rows.
    #[test]
    fn a_trace_with_an_index_ranks_its_states_and_keeps_its_tracks_as_the_index_does() {
        let mut t = Trace::default();
        // Per pair, "outer" covers 1,000 ticks and "inner" 600 of them: "inner" leads by the
        // innermost states' time (600 against 400), "outer" by every interval's.
        let pairs = (crate::pyramid::INDEX_ROWS / 2 + 1) as u32;
        for k in 0..pairs {
            let (l, at) = (k % 64, u64::from(k / 64) * 1000);
            t.intervals.push(l, at, at + 1000, 0, 0);
            t.intervals.push(l, at, at + 600, 1, 1);
        }
        // And a 65th location without any event.
        t.locations.name = (0..65).map(|l| format!("rank {l}")).collect();
        t.region_names = ["outer", "inner"].map(String::from).to_vec();
        let mut d = Dataset { name: "nested".into(), trace: t, ..Default::default() };
        let legend = |t: &Trace| TimelineIndex::new(t).legend.iter().map(|l| l.1.clone()).collect::<Vec<_>>();
        assert_eq!(legend(&d.trace), ["inner", "outer"], "no index: by the innermost states");
        let tracks = |d: &Dataset| {
            let index = crate::views::timeline::TimelineView::default().index(d);
            index.tracks(&d.trace, &TimelineOptions::default()).count()
        };
        assert_eq!(tracks(&d), 64, "no index: the idle location has no track");
        crate::pyramid::attach_index(&mut d);
        assert!(d.index.is_some());
        assert_eq!(legend(&d.trace), ["outer", "inner"], "as the index's pictures");
        assert_eq!(tracks(&d), 65, "as the index's pictures, where every location is a row");
    }

    /// A small deterministic generator: `next(m)` is below `m`.
    fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        }
    }

    /// Messages among 12 locations over 2^24 ticks, latencies up to 2^17 ticks (some far longer),
    /// a few unreceived, from a small deterministic generator.
    fn random_messages(seed: u64) -> Trace {
        let mut next = xorshift(seed);
        let mut m = crate::model::Messages::default();
        for _ in 0..20_000 {
            let send = next(1 << 24);
            let latency = if next(50) == 0 { next(1 << 23) } else { next(1 << 17) };
            m.source.push(next(12) as u32);
            m.destination.push(next(12) as u32);
            m.send_time.push(send);
            m.recv_time.push(if next(200) == 0 { u64::MAX } else { send + latency });
            m.bytes.push(8);
            m.tag.push(0);
        }
        let locations =
            crate::model::Locations { name: (0..12).map(|l| format!("rank {l}")).collect(), ..Default::default() };
        Trace { messages: m, locations, ticks_per_second: 1 << 20, ..Default::default() }
    }

    /// A window panned by whole pixels draws only the lines through the columns it uncovers and
    /// takes the rest from the last picture: the density equals a fresh picture's count for count
    /// where the shift is exact (2^11 ticks a pixel), and nearly where a pan in seconds rounds
    /// to ticks; windows of another width, or not panned by whole pixels, are drawn afresh.
    #[test]
    fn a_pan_draws_only_the_lines_it_uncovers_and_equals_a_fresh_picture() {
        let t = random_messages(5);
        let d = Dataset { name: "pan".into(), trace: t, ..Default::default() };
        let t = &d.trace;
        let index = TimelineIndex::new(t);
        let opts = TimelineOptions::default();
        let p = Plot { x0: 0, y0: 0, w: 512, h: 96 };
        let rows = placed(t, &index, &opts, p).rows;
        let key = trace_key(&d);
        let draw = |window: (u64, u64), kept: Option<&KeptLines>| {
            let kept = kept.map(|k| (k, key.clone()));
            message_density(t, &Backend::Cpu, p, window, &rows, &TimelineBundle::None, &index, kept).unwrap()
        };
        let kept = KeptLines::default();
        let span = 1u64 << 20;
        let start = 3u64 << 20;
        let (first, _) = draw((start, start + span), Some(&kept));
        assert_eq!(first, draw((start, start + span), None).0, "nothing kept yet: drawn afresh");
        // Whole pixels both ways, far and near, then the same window again.
        for px in [40i64, -40, 1, -300, 511, 0, -511] {
            let from = kept.window().unwrap().0;
            let at = (from as i64 + px * (span as i64 >> 9)) as u64;
            let window = (at, at + span);
            assert_eq!(pixel_shift((from, from + span), window, p.w), Some(px));
            let (panned, visible) = draw(window, Some(&kept));
            let (fresh, fresh_visible) = draw(window, None);
            assert_eq!(visible, fresh_visible);
            assert!(panned.counts.iter().any(|&c| c > 0));
            assert_eq!(panned, fresh, "a pan by {px} pixels");
        }
        // A pan in seconds (a window 1.3 s wide: 1,363,148.8 ticks, 2,662.4 ticks a pixel) rounds
        // to ticks: within a 64th of a pixel, a handful of line ends fall in the next pixel.
        let tps = t.ticks_per_second as f64;
        let mut window_s = (2.0, 3.3);
        draw(window_in((0, 1 << 24), tps, Some(window_s)).unwrap(), Some(&kept));
        for share in [0.125, -0.25, 40.0 / 512.0] {
            let before = kept.window().unwrap();
            window_s = pan_window(window_s, 16.0, share);
            let window = window_in((0, 1 << 24), tps, Some(window_s)).unwrap();
            let shift = pixel_shift(before, window, p.w).expect("a whole-pixel pan");
            assert_eq!(shift, (share * 512.0).round() as i64);
            let (panned, fresh) = (draw(window, Some(&kept)).0, draw(window, None).0);
            let off = panned.counts.iter().zip(&fresh.counts).filter(|(a, b)| a != b).count();
            let lit = fresh.counts.iter().filter(|&&c| c > 0).count();
            assert!(off * 200 <= lit, "{off} of {lit} lit pixels differ after a pan by {shift}");
            let total = |i: &stages::DensityImage| i.counts.iter().map(|&c| u64::from(c)).sum::<u64>();
            assert!(total(&panned).abs_diff(total(&fresh)) * 1000 <= total(&fresh));
        }
        // Not whole pixels, another width, or no shared column: drawn afresh.
        let from = kept.window().unwrap();
        assert_eq!(pixel_shift(from, (from.0 + 1331, from.1 + 1331), p.w), None, "half a pixel");
        assert_eq!(pixel_shift(from, (from.0, from.1 + 2662), p.w), None, "a wider window");
        let apart = (from.1 - from.0) as f64 * 1.5;
        assert_eq!(pixel_shift(from, (from.0 + apart as u64, from.1 + apart as u64), p.w), None, "no shared column");
    }

    /// A pan through the view's kept picture walks the states and draws the lines of the columns
    /// it uncovers only, and takes the rest from the last picture: the picture equals a fresh
    /// one pixel for pixel where the shift is exact (a window of 2^20 ticks over 512 columns),
    /// innermost states and bands per nesting level alike, both ways, with regions nested or
    /// overlapping without nesting.
    #[test]
    fn a_panned_picture_equals_a_fresh_one() {
        let mut t = random_messages(9);
        // Calls on every location over the messages' 2^24 ticks.
        for (l, seed) in (0..12u32).zip(31u64..) {
            // Odd locations: some regions overlap without nesting (a walk's stack then holds
            // regions that ended under ones still open).
            let calls = random_intervals(seed, l % 2 == 1).intervals;
            for k in (0..calls.start.len()).filter(|&k| calls.location[k] == 0) {
                let scale = 1 << 11;
                t.intervals.push(l, calls.start[k] * scale, calls.end[k] * scale, calls.kind[k], calls.depth[k]);
            }
        }
        t.region_names = (0..5).map(|k| format!("state {k}")).collect();
        let d = Dataset { name: "pan".into(), trace: t, ..Default::default() };
        let index = Arc::new(TimelineIndex::new(&d.trace));
        let tps = d.trace.ticks_per_second as f64;
        // The plot of a 792 x 500 picture: 512 columns wide, 2^11 ticks each at 0.5 s a window.
        let (width, height) = (792u32, 500u32);
        assert_eq!(plot_rect(width, height).map(|p| p.w), Some(512));
        for (innermost, rows) in [(true, 12), (false, 2)] {
            let mut t = d.trace.clone();
            t.locations.name.truncate(rows);
            let d = Dataset { trace: t, ..d.clone() };
            let index = if rows == 12 { index.clone() } else { Arc::new(TimelineIndex::new(&d.trace)) };
            let last = LastPicture::default();
            let picture_of = |window_s: (f64, f64), last: Option<&LastPicture>| {
                let opts = TimelineOptions { width, height, window_s: Some(window_s), innermost, ..Default::default() };
                let (scene, _) = timeline_scene(&d, &Backend::Cpu, &opts, &index, None, last).unwrap();
                crate::render::cpu::render(&scene, Default::default()).pixels
            };
            let picture = |from: f64, last: Option<&LastPicture>| picture_of((from, from + 0.5), last);
            let mut from = 3.0;
            assert_eq!(picture(from, Some(&last)), picture(from, None));
            for px in [40.0, -40.0, 1.0, -300.0, 100.0, 0.0] {
                from += px * 0.5 / 512.0;
                let kept = last.states.window().unwrap();
                let window = window_in(index.span().unwrap(), tps, Some((from, from + 0.5))).unwrap();
                assert_eq!(pixel_shift(kept, window, 512), Some(px as i64));
                assert!(picture(from, Some(&last)) == picture(from, None), "{px} pixels, innermost {innermost}");
            }
            assert_eq!((last.states.taken(), last.lines.taken()), (6, 6), "every pan took the kept columns");
            // States of several kinds and lines drawn: many colours in the picture.
            let mut colours: Vec<[u8; 4]> = bytemuck::cast_slice::<u8, [u8; 4]>(&picture(from, None)).to_vec();
            colours.sort_unstable();
            colours.dedup();
            assert!(colours.len() > 50, "{} colours", colours.len());
            // Pans in seconds of a window 0.37 s wide (1,515.5 ticks a pixel) round to ticks:
            // within a 64th of a pixel, a few pixels differ a little.
            let mut window_s = (5.0, 5.37);
            picture_of(window_s, Some(&last));
            for share in [0.125, -0.25, 40.0 / 512.0] {
                window_s = pan_window(window_s, 16.0, share);
                let (panned, fresh) = (picture_of(window_s, Some(&last)), picture_of(window_s, None));
                let off = panned
                    .chunks(4)
                    .zip(fresh.chunks(4))
                    .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 2))
                    .count();
                assert!(off * 500 <= panned.len() / 4, "{off} pixels differ after a pan by {share} of the window");
            }
            assert_eq!((last.states.taken(), last.lines.taken()), (9, 9));
        }
    }

    /// Nested intervals (and, at `tangled`, some that overlap without nesting) on three
    /// locations, from a small deterministic generator.
    fn random_intervals(seed: u64, tangled: bool) -> Trace {
        let mut next = xorshift(seed);
        let mut iv = Intervals::default();
        for l in 0..3u32 {
            // Each location: a tree of calls, depth-first.
            let mut stack: Vec<(u64, u64)> = vec![(0, 10_000)];
            let mut at = 0u64;
            while let Some(&(_, end)) = stack.last() {
                if at >= end || (stack.len() > 1 && next(4) == 0) || stack.len() > 5 {
                    stack.pop();
                    at = at.max(end);
                    continue;
                }
                let a = at + next(20);
                let b = (a + 1 + next(400)).min(end);
                let b = if tangled && next(7) == 0 { b + next(50) } else { b };
                if a >= b {
                    at = end;
                    continue;
                }
                iv.location.push(l);
                iv.start.push(a);
                iv.end.push(b);
                iv.kind.push(next(5) as u32);
                iv.depth.push(stack.len() as u32 - 1);
                stack.push((a, b.min(end)));
                at = a;
            }
        }
        let locations =
            crate::model::Locations { name: (0..3).map(|l| format!("rank {l}")).collect(), ..Default::default() };
        Trace { intervals: iv, locations, ..Default::default() }
    }

    #[test]
    fn a_search_walks_the_same_matches_as_the_index() {
        for (seed, tangled) in [(7, false), (11, false), (13, true), (17, true)] {
            let mut t = random_intervals(seed, tangled);
            t.region_names = (0..5).map(|k| format!("k{k}")).collect();
            let by = ByLocation::new(&t, 3);
            let search = crate::selection::Search::new("K3").unwrap();
            let found = super::super::search::Matches::new(&t, &search);
            assert!(found.total() > 10, "seed {seed}: {} matches", found.total());
            for l in 0..3 {
                for w in [(0, 10_000), (0, 37), (1_234, 1_300), (5_000, 9_999), (3_333, 3_333), (9_000, 20_000)] {
                    let mut want = Vec::new();
                    by.overlapping(l, w, |k| {
                        if t.intervals.kind[k] == 3 {
                            want.push(k);
                        }
                    });
                    let mut got = Vec::new();
                    found.overlapping(&t, l, w, |k| got.push(k));
                    want.sort_unstable();
                    got.sort_unstable();
                    assert_eq!(got, want, "seed {seed} location {l} window {w:?}");
                }
            }
        }
    }

    #[test]
    fn a_window_walk_equals_the_whole_walk_clipped() {
        for (seed, tangled) in [(7, false), (11, false), (13, true), (17, true)] {
            let t = random_intervals(seed, tangled);
            let by = ByLocation::new(&t, 3);
            for l in 0..3 {
                let mut whole = Vec::new();
                by.innermost_replayed(&t, l, |a, b, k| whole.push((a, b, k)));
                assert!(whole.len() > 20, "seed {seed} location {l}: {} spans", whole.len());
                for w in [(0, 10_000), (0, 37), (1_234, 1_300), (5_000, 9_999), (3_333, 3_333), (9_000, 20_000)] {
                    let clipped: Vec<_> =
                        whole.iter().map(|&(a, b, k)| (a.max(w.0), b.min(w.1), k)).filter(|&(a, b, _)| a < b).collect();
                    let mut seen = Vec::new();
                    by.innermost_in(l, w, |a, b, k| seen.push((a.max(w.0), b.min(w.1), k)));
                    seen.retain(|&(a, b, _)| a < b);
                    assert_eq!(seen, clipped, "seed {seed} location {l} window {w:?}");
                }
                // The state under a time is the deepest latest interval holding it.
                let index = TimelineIndex::new(&t);
                let i = &t.intervals;
                for at in (0..10_000).step_by(97) {
                    let scan = (0..i.start.len())
                        .filter(|&k| i.location[k] as usize == l && i.start[k] <= at && i.end[k] > at)
                        .max_by_key(|&k| (i.depth[k], i.start[k]))
                        .map(|k| (i.kind[k], i.start[k], i.end[k]));
                    assert_eq!(index.state_at(&t, l, at, None), scan, "seed {seed} location {l} at {at}");
                }
            }
        }
    }

    /// Rows in increasing order as a comparison sort gives them, dense over their range (the
    /// bitmap) or sparse (the sort).
    #[test]
    fn distinct_rows_come_back_in_order() {
        let mut s = 11u64;
        let mut next = move || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (s >> 33) as u32
        };
        for (range, keep) in [(100_000u32, 2u32), (100_000, 1000), (u32::MAX, 1), (70, 1)] {
            let mut rows: Vec<u32> = (0..20_000u32).map(|k| k * (range / 20_000).max(1) + 3).collect();
            rows.retain(|_| next() % keep == 0);
            rows.push(range - 1);
            rows.sort_unstable();
            rows.dedup();
            let want = rows.clone();
            // Shuffled.
            for i in (1..rows.len()).rev() {
                rows.swap(i, next() as usize % (i + 1));
            }
            super::sort_distinct(&mut rows);
            assert_eq!(rows, want, "range {range}, every {keep}th");
        }
        let mut none: Vec<u32> = Vec::new();
        super::sort_distinct(&mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn zoom_keeps_the_point_under_the_pointer_and_stays_inside() {
        let w = zoom_window((0.0, 100.0), 100.0, 2.0, 0.25);
        assert_eq!(w, (12.5, 62.5));
        // Zooming out past the whole trace stops at it.
        assert_eq!(zoom_window(w, 100.0, 0.1, 0.5), (0.0, 100.0));
        // Panning stops at the ends.
        assert_eq!(pan_window((10.0, 20.0), 100.0, -5.0), (0.0, 10.0));
        assert_eq!(pan_window((10.0, 20.0), 100.0, 0.5), (15.0, 25.0));
        assert_eq!(pan_window((80.0, 100.0), 100.0, 1.0), (80.0, 100.0));
    }

    #[test]
    fn straight_lines_equal_one_weighted_pass_over_their_pieces() {
        let mut state = 11u64;
        let mut rng = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let p = Plot { x0: 0, y0: 0, w: 97, h: 61 };
        // Short and long lines, some leaving the plot, one of zero length.
        let mut lines: Vec<[f32; 4]> = (0..3000)
            .map(|k| {
                let (x, y) = (rng() * 120.0 - 10.0, rng() * 80.0 - 10.0);
                let reach = if k % 3 == 0 { 60.0 } else { 6.0 };
                [x, y, x + (rng() - 0.5) * reach, y + (rng() - 0.5) * reach]
            })
            .collect();
        lines.push([5.0, 5.0, 5.0, 5.0]);
        let split = straight_density(&Backend::Cpu, &lines, p).unwrap();
        let (segments, weights) = Polylines::straight(&lines, STRAIGHT_SAMPLES).pieces();
        let input = DensityInput { segments: &segments, weights: Some(&weights), width: p.w, height: p.h };
        let one = stages::line_density::run(Backend::Cpu.runner().as_mut(), &input).unwrap();
        assert!(one.counts.iter().any(|&c| c > 2));
        assert_eq!(split.counts, one.counts);
        assert_eq!(split.sums, one.sums);
    }

    /// Intervals grouped by location in (start, depth) order, whatever the input's order, as a
    /// comparison sort of (location, start, depth) orders them; ids past the locations dropped.
    #[test]
    fn intervals_are_ordered_by_location_start_and_depth() {
        let mut s = 11u64;
        let mut next = move |m: u64| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (s >> 33) % m
        };
        let n = 20_000;
        let intervals = Intervals {
            location: (0..n).map(|_| next(70) as u32).collect(),
            start: (0..n).map(|_| next(5_000)).collect(),
            end: vec![u64::MAX; n],
            kind: vec![0; n],
            depth: (0..n).map(|_| next(3) as u32).collect(),
        };
        let t = Trace { intervals, ..Trace::default() };
        let i = &t.intervals;
        let by = ByLocation::new(&t, 64);
        let key = |k: u32| (i.location[k as usize], i.start[k as usize], i.depth[k as usize]);
        let mut want: Vec<u32> = (0..n as u32).filter(|&k| i.location[k as usize] < 64).collect();
        want.sort_by_key(|&k| key(k));
        assert_eq!(
            by.order.iter().map(|&k| key(k)).collect::<Vec<_>>(),
            want.iter().map(|&k| key(k)).collect::<Vec<_>>()
        );
        for l in 0..64 {
            assert!(by.rows(l).iter().all(|&k| i.location[k as usize] as usize == l), "location {l}");
        }
        assert!(by.rows(64).is_empty() && by.ranges.len() == 64);
    }

    /// The message tone's table of ranks equals the ranks searched for, present counts or not.
    #[test]
    fn message_ranks_from_the_table_equal_the_searched_ones() {
        let counts: Vec<u32> =
            (0..5_000u32).map(|k| if k % 3 == 0 { 0 } else { (k * 7919) % 97 + (k % 5) * 40 }).collect();
        let tone = MessageTone::new(&counts, 0.8);
        assert_eq!(tone.ranks.len(), *tone.sorted.last().unwrap() as usize + 1);
        for c in 0..=tone.sorted.last().unwrap() + 3 {
            assert_eq!(tone.rank(c).to_bits(), tone.searched_rank(c).to_bits(), "count {c}");
        }
        let high = MessageTone::new(&[1, RANKED + 5, 3], 0.8);
        assert!(high.ranks.is_empty());
        assert_eq!(high.rank(3), 0.5);
    }

    #[test]
    fn rows_cover_the_plot_without_overlap() {
        let rows: Vec<_> = (0..3).map(|l| rows_of(l, 3, 30)).collect();
        assert_eq!(rows, vec![0..9, 10..19, 20..29]);
        assert_eq!(rows_of(999, 1000, 100), 99..100);
    }
}

/// Bundling of the timeline's message lines, as the command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimelineBundleArg {
    /// Straight lines.
    None,
    /// Image-space KDE bundling (this engine's).
    Kde,
    /// Brendel et al.'s hierarchy of mean-shift endpoint clusters, degree-2 B-splines.
    Hierarchical,
    /// Brendel et al.'s grid-based routing with diagonals between endpoint clusters.
    Grid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatesArg {
    /// Each pixel shows the state covering most of its time and processes.
    Dominant,
    /// The states' shares stacked up each process row (rows one pixel high show the middle state).
    Stacked,
    /// The dominant state dimmed, with the late-sender waiting of receives (Scalasca's wait
    /// state: a receive or wait begun before its message was sent) over it in vermillion.
    Waits,
}

/// The timeline's look, shared with the linked MPI view.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct TimelineLook {
    /// Edge bundling of the message lines.
    #[arg(long, value_enum, default_value = "none")]
    pub bundle: TimelineBundleArg,
    /// Bundling strength β of the hierarchical and grid bundling (0 straight, 1 fully bundled).
    #[arg(long, default_value_t = crate::bundling::DEFAULT_BETA, value_parser = crate::views::options::parse_beta)]
    pub beta: f32,
    /// How a pixel shows the states of the time and processes it covers.
    #[arg(long, value_enum, default_value = "dominant")]
    pub states: StatesArg,
    /// Opacity of the densest message pixels, 0 (messages hidden) to 1; the others are fainter by
    /// their rank among message pixels (histogram equalisation).
    #[arg(long, default_value_t = DEFAULT_MESSAGE_OPACITY, value_parser = crate::views::options::parse_opacity)]
    pub message_opacity: f32,
    /// Light the regions (slices) whose names contain NAME, ignoring case, at any depth, dim
    /// the rest and say how many there are; in the window `/` searches and n / N step through
    /// the matches.
    #[arg(long, value_name = "NAME")]
    pub highlight: Option<Search>,
    /// Give locations without any event (interval, message, collective) a row too; by default
    /// they are hidden and counted under the time axis.
    #[arg(long)]
    pub empty_rows: bool,
    /// Draw each group of rows (consecutive locations whose names share their first part, as
    /// a node or a process) collapsed to one row; in the window a click on a row's label
    /// collapses or opens its group.
    #[arg(long)]
    pub collapse: bool,
    /// Draw each row with its location's innermost state only; by default a row tall enough
    /// is cut into a band per nesting level (the outermost region on top), as Perfetto's
    /// slices stack.
    #[arg(long)]
    pub innermost: bool,
    /// Counter tracks under the rows (OTF2 metrics, Chrome counter events): auto (the series
    /// that change, up to six), none, all (as many as fit), or the series whose names contain
    /// NAME. An accumulating counter (energy) is drawn as its rate.
    #[arg(long, default_value = "auto", value_name = "auto|none|all|NAME")]
    pub counters: CounterChoice,
    /// Outline the critical path (as `exaviz critical-path` finds it): its stretches on each
    /// row framed in magenta, joined by lines where it crosses rows through a message, a
    /// collective, a kernel launch or a synchronisation (traces in memory; a store's pictures
    /// drawn from its pyramid do not show it).
    #[arg(long)]
    pub critical_path: bool,
}

impl TimelineLook {
    /// The timeline's options with these choices, `mix` and the time window of `select`.
    pub fn options(&self, mix: Mix, select: &crate::views::options::TraceSelectArgs) -> TimelineOptions {
        let beta = self.beta;
        let bundle = match self.bundle {
            TimelineBundleArg::None => TimelineBundle::None,
            TimelineBundleArg::Kde => TimelineBundle::Kde(BundleParams::default()),
            TimelineBundleArg::Hierarchical => TimelineBundle::Hierarchical { beta },
            TimelineBundleArg::Grid => TimelineBundle::Grid { beta },
        };
        let states = match self.states {
            StatesArg::Dominant => StateMode::Dominant,
            StatesArg::Stacked => StateMode::Stacked,
            StatesArg::Waits => StateMode::Dominant,
        };
        TimelineOptions {
            width: 1024,
            height: 768,
            window_s: select.from.zip(select.to),
            bundle,
            mix,
            states,
            message_opacity: self.message_opacity,
            search: self.highlight,
            counters: self.counters,
            waits: self.states == StatesArg::Waits,
            show_empty: self.empty_rows,
            folded: None,
            innermost: self.innermost,
            critical_path: self.critical_path,
        }
    }
}

#[cfg(test)]
mod coverage_tests {
    use super::*;

    /// The run-length counting of whole columns gives what adding every column's overlap one by
    /// one gives, within float rounding (1e-4 of a column), for short and long intervals.
    #[test]
    fn whole_columns_counted_at_their_ends_equal_column_by_column() {
        let width = 97u32;
        let mut fast = Coverage::over(0..width as usize);
        let mut slow = vec![[0f32; CATEGORICAL.len()]; width as usize];
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for k in 0..2000 {
            let a = next() * f64::from(width);
            let len = if k % 3 == 0 { next() * 2.5 } else { next() * f64::from(width) };
            let b = (a + len).min(f64::from(width));
            if b <= a {
                continue;
            }
            let s = k % CATEGORICAL.len();
            fast.add(a, b, s);
            for c in (a.floor() as u32)..(b.ceil() as u32).min(width) {
                slow[c as usize][s] += (b.min(f64::from(c) + 1.0) - a.max(f64::from(c))).max(0.0) as f32;
            }
        }
        let fast = fast.finish();
        for (c, (f, s)) in fast.iter().zip(&slow).enumerate() {
            for k in 0..CATEGORICAL.len() {
                assert!((f[k] - s[k]).abs() <= 1e-4 * s[k].max(1.0), "column {c} slot {k}: {} against {}", f[k], s[k]);
            }
        }
        assert!(slow.iter().map(|c| c.iter().sum::<f32>()).sum::<f32>() > 10_000.0, "the intervals cover a lot");
    }
}
