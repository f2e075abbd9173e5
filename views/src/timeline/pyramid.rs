//! The timeline of a window too large to read, drawn from the trace's pyramid: the same picture
//! as from the rows, at the resolution of the pyramid's cells.
//!
//! - States: a pixel takes the ticks of each state in the rank blocks and time bins it overlaps,
//!   each cell weighted by the share of it inside the pixel (ticks spread evenly over a cell),
//!   coloured and shaded as the rows would be.
//! - Messages: from the pyramid's [`Lines`], the lines crossing each (time bin, rank block): a
//!   pixel sums the bins it overlaps (weighted by the share of each inside it) and averages the
//!   blocks of its row (weighted likewise), then counts whole lines as the rows would.
//!
//! (The message cube is too coarse in time for this: 128 bins over the trace, against 2,048 for
//! the lines; a timeline drawn from it smeared every iteration's messages over several.)

use exaviz_compute::DensityImage;
use exaviz_model::dataset::{Dataset, OutOfCore};
use exaviz_model::pyramid::{Level, Lines, Pyramid, Shape};
use exaviz_render::Scene;
use rayon::prelude::*;

use super::axis::{row_ticks, rows_counted, rows_title};
use super::collectives::Joins;
use super::counters::{self, CounterIndex, Track};
use super::density::GRADIENT_STEPS;
use super::index::{Legend, slots_by};
use super::options::{StateMode, TimelineOptions};
use super::scene::{CounterLayer, Layers, compose, rows_of, timeline_plot};
use super::states::stacked_runs;
use crate::ViewError;
use crate::contract;
use crate::contract::{Pick, Picker};
use crate::legend::format_value;
use crate::plot::{CATEGORICAL, Plot};
use crate::trace::window_in;

// The pyramid's gradient weights are the timeline's.
const _: () = assert!(exaviz_model::pyramid::LINE_STEPS as f32 == GRADIENT_STEPS);

/// The note where the critical path is asked for on a picture drawn from the pyramid: the path
/// needs the rows.
pub(super) const OVERVIEW_CRITICAL_NOTE: &str =
    "critical path: zoom in until the rows are read (exaviz critical-path walks the whole store)";

/// Ranks `[lo, hi)` drawn on each pixel row of a plot `h` rows high (`lo == hi`: a gap row).
fn row_ranks(n: usize, h: u32) -> Vec<(u32, u32)> {
    let mut out = vec![(u32::MAX, 0u32); h as usize];
    for l in 0..n {
        for r in rows_of(l, n, h) {
            let e = &mut out[r as usize];
            e.0 = e.0.min(l as u32);
            e.1 = e.1.max(l as u32 + 1);
        }
    }
    out.into_iter().map(|(a, b)| if a == u32::MAX { (0, 0) } else { (a, b) }).collect()
}

/// Cells `[origin + k * cell, origin + (k + 1) * cell)`, `k < cells`, that `[a, b)` overlaps,
/// with the share of each cell inside it.
fn cover(a: f64, b: f64, origin: f64, cell: f64, cells: u32) -> Vec<(u32, f64)> {
    if b <= a || cells == 0 {
        return Vec::new();
    }
    let first = ((a - origin) / cell).floor().max(0.0) as i64;
    let last = (((b - origin) / cell).ceil() as i64 - 1).min(i64::from(cells) - 1);
    (first..=last)
        .filter_map(|k| {
            let (ca, cb) = (origin + k as f64 * cell, origin + (k + 1) as f64 * cell);
            let inside = b.min(cb) - a.max(ca);
            (inside > 0.0).then_some((k as u32, inside / cell))
        })
        .collect()
}

/// Rank blocks of `block` ranks (of `n`) that ranks `[lo, hi)` overlap, with the share of each
/// block's ranks inside.
fn block_cover(lo: u32, hi: u32, block: u32, n: u32) -> Vec<(u32, f64)> {
    if hi <= lo {
        return Vec::new();
    }
    (lo / block..=(hi - 1) / block)
        .map(|b| {
            let (a, e) = (b * block, ((b + 1) * block).min(n));
            let inside = hi.min(e) - lo.max(a);
            (b, f64::from(inside) / f64::from((e - a).max(1)))
        })
        .collect()
}

/// Colour slots and legend of the pyramid's states, most time first (as [`super::index::state_slots`]).
fn pyramid_slots(p: &Pyramid, names: &[String]) -> (Vec<usize>, Legend) {
    slots_by(names, &p.state_ticks())
}

/// Where a plot's pixels fall in a pyramid: per column the state bins, per row the ranks.
struct Grid<'a> {
    shape: &'a Shape,
    level: &'a Level,
    columns: Vec<Vec<(u32, f64)>>,
    rows: &'a [(u32, u32)],
}

impl<'a> Grid<'a> {
    fn new(shape: &'a Shape, level: &'a Level, p: Plot, window: (u64, u64), rows: &'a [(u32, u32)]) -> Self {
        let per_px = (window.1 - window.0) as f64 / f64::from(p.w);
        let (t0, cell) = (shape.t0 as f64, level.state_bin_ticks as f64);
        let columns = (0..p.w)
            .map(|c| {
                let a = window.0 as f64 + f64::from(c) * per_px;
                cover(a, a + per_px, t0, cell, level.state_bins)
            })
            .collect();
        Self { shape, level, columns, rows }
    }

    /// Per state, the ticks inside the pixel at (`column`, the rank blocks `blocks`).
    fn ticks(&self, column: usize, blocks: &[(u32, f64)], mut add: impl FnMut(u32, f64)) {
        let states = self.shape.states;
        for &(b, wb) in blocks {
            for &(bin, wt) in &self.columns[column] {
                // Only the states the block was in during the bin, in the same order (the sums
                // are unchanged).
                let mut left = self.level.active_states(b, bin, states);
                while left != 0 {
                    let s = left.trailing_zeros();
                    left &= left - 1;
                    let v = self.level.state_ticks(b, s, states, bin);
                    if v > 0 {
                        add(s, v as f64 * wb * wt);
                    }
                }
            }
        }
    }
}

/// State colours of every plot pixel from the pyramid's state tiles, as [`super::states::state_pixels`]
/// makes them from rows.
fn pyramid_states(grid: &Grid<'_>, p: Plot, per_px: f64, slot: &[usize], mode: StateMode) -> Vec<Option<[f32; 4]>> {
    let n = grid.shape.ranks;
    stacked_runs(grid.rows, p.w as usize, 0..p.w as usize, mode, |&(lo, hi)| {
        let blocks = block_cover(lo, hi, grid.level.block, n);
        let cov = (0..p.w as usize)
            .map(|c| {
                let mut cov = [0f32; CATEGORICAL.len()];
                grid.ticks(c, &blocks, |s, ticks| {
                    // In pixels of one rank's row, as the rows give it.
                    cov[slot[s as usize]] += (ticks / per_px) as f32;
                });
                cov
            })
            .collect();
        (cov, 1.0 / (hi - lo).max(1) as f32)
    })
}

/// Whole lines per pixel from expected counts `c` and gradient sums `g`: an expected quarter
/// of a line or more shows as one; the gradient keeps its mean.
fn whole_lines(c: &[f64], g: &[f64]) -> (Vec<u32>, Vec<u64>) {
    let counts: Vec<u32> =
        c.iter().map(|&v| if v >= 0.25 { v.round().clamp(1.0, f64::from(u32::MAX)) as u32 } else { 0 }).collect();
    let sums = counts
        .iter()
        .zip(c.iter().zip(g))
        .map(|(&k, (&v, &g))| if k > 0 { (g / v * f64::from(k)).round() as u64 } else { 0 })
        .collect();
    (counts, sums)
}

/// Message lines per pixel from the pyramid's lines (see the module's notes).
fn lines_density(lines: &Lines, grid: &Grid<'_>, p: Plot) -> DensityImage {
    let (w, n) = (p.w as usize, grid.shape.ranks);
    let rows: Vec<(Vec<u32>, Vec<u64>)> = grid
        .rows
        .par_iter()
        .map(|&(lo, hi)| {
            let blocks = block_cover(lo, hi, grid.shape.block, n);
            let weight: f64 = blocks.iter().map(|b| b.1).sum();
            let (mut c, mut g) = (vec![0f64; w], vec![0f64; w]);
            if weight > 0.0 {
                for (col, bins) in grid.columns.iter().enumerate() {
                    for &(bin, wt) in bins {
                        for &(b, wb) in &blocks {
                            let k = lines.cell(bin, b);
                            let f = wt * wb / weight;
                            c[col] += lines.counts[k] as f64 * f;
                            g[col] += lines.gradient[k] as f64 * f;
                        }
                    }
                }
            }
            whole_lines(&c, &g)
        })
        .collect();
    let (mut counts, mut sums) = (Vec::with_capacity(w * rows.len()), Vec::with_capacity(w * rows.len()));
    for (c, s) in rows {
        counts.extend(c);
        sums.extend(s);
    }
    DensityImage { width: p.w, height: p.h, counts, sums }
}

/// The timeline of `dataset`, kept on disk as `ooc`, from its pyramid, and what its tooltips read.
pub(crate) fn overview_scene(
    dataset: &Dataset,
    ooc: &OutOfCore,
    opts: &TimelineOptions,
    counter_index: std::sync::Arc<CounterIndex>,
) -> Result<(Scene, OverviewPick), ViewError> {
    let t = &dataset.trace;
    let n = t.locations.name.len();
    crate::trace::pyramid_of(ooc, n)?;
    let tps = t.ticks_per_second.max(1) as f64;
    let window = window_in(ooc.span, tps, opts.window_s)?;
    let outer = timeline_plot(opts)?;
    let (p, placed, hidden) = counters::layout(outer, &counter_index.chosen(opts.counters), counter_index.series.len());
    let placed: Vec<_> = placed.into_iter().map(|(s, plot)| (s, plot, false)).collect();
    let tracks = counters::tracks(&counter_index, &placed, window);
    let pyr = &ooc.pyramid;
    let ticks = window.1 - window.0;
    let level = pyr.level_for(p.h, p.w, ticks);
    let rows = row_ranks(n, p.h);
    let grid = Grid::new(&pyr.shape, level, p, window, &rows);
    let (slot, legend) = pyramid_slots(pyr, &t.region_names);
    let per_px = ticks as f64 / f64::from(p.w);
    let lines = pyr.lines.as_ref().ok_or_else(|| {
        ViewError::Unsupported(
            "the store's pyramid has no line counts (an older exaviz wrote it): run exaviz pyramid STORE".into(),
        )
    })?;
    // The lines are at the finest blocks and bins: a grid of its own over level 0.
    let fine = Grid::new(&pyr.shape, &pyr.levels[0], p, window, &rows);
    let (states, density) =
        rayon::join(|| pyramid_states(&grid, p, per_px, &slot, opts.states), || lines_density(lines, &fine, p));
    let cell = format_value(level.state_bin_ticks as f64 / tps * 1e3);
    let title = format!(
        "Timeline: {} ({}, {} messages; pyramid: {} ranks x {cell} ms)",
        crate::title_name(dataset),
        rows_counted(&dataset.trace, n),
        ooc.messages,
        level.block
    );
    let joins = Joins { spans: Vec::new(), joins: Vec::new() };
    let note = opts.search.map(|s| super::search::overview_note(&dataset.trace, &s));
    let search = note.as_deref().map(|n| (None, n));
    let counters = CounterLayer { outer, index: &counter_index, tracks: &tracks, hidden };
    let layers = Layers {
        states: &states,
        density: &density,
        legend: &legend,
        joins: &joins,
        search,
        waits: None,
        counters,
        critical: opts.critical_path.then_some(OVERVIEW_CRITICAL_NOTE),
        summary: None,
    };
    let scene = compose(
        opts,
        p,
        (window, ooc.span, tps),
        (
            row_ticks(n, || dataset.trace.locations.name[..].into(), p, |i| rows_of(i, n, p.h)),
            rows_title(&dataset.trace),
        ),
        (&title, "time since trace start (s)"),
        &layers,
    );
    let names: Vec<String> = (0..pyr.shape.states as usize)
        .map(|s| t.region_names.get(s).cloned().unwrap_or_else(|| format!("state {s}")))
        .collect();
    let level = pyr.levels.iter().position(|l| std::ptr::eq(l, level)).unwrap_or(0);
    let pick = OverviewPick {
        pyramid: ooc.pyramid.clone(),
        level,
        plot: p,
        window,
        full: ooc.span,
        tps,
        rows,
        counts: density.counts,
        names,
        counters: (counter_index, tracks),
    };
    Ok((scene, pick))
}

/// What the pyramid timeline's tooltips read.
pub struct OverviewPick {
    pyramid: std::sync::Arc<Pyramid>,
    level: usize,
    plot: Plot,
    window: (u64, u64),
    full: (u64, u64),
    tps: f64,
    rows: Vec<(u32, u32)>,
    counts: Vec<u32>,
    names: Vec<String>,
    /// The counter series and the tracks drawn.
    counters: (std::sync::Arc<CounterIndex>, Vec<Track>),
}

impl Picker for OverviewPick {
    fn pick(&self, _: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let seconds = |t: u64| format!("{:.6} s", t.saturating_sub(self.full.0) as f64 / self.tps);
        if let Some((title, mut lines, time)) = counters::pick(&self.counters.0, &self.counters.1, self.window, at) {
            lines.insert(0, format!("at {}", seconds(time)));
            return Some(Pick::new(title, lines));
        }
        let p = self.plot;
        let [u, v] = contract::share_in([p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32], at)?;
        let (col, row) = (((u * p.w as f32) as u32).min(p.w - 1), ((v * p.h as f32) as u32).min(p.h - 1));
        let (lo, hi) = self.rows[row as usize];
        if hi <= lo {
            return None;
        }
        let (t0, t1) = self.window;
        let time = t0 + ((t1 - t0) as f64 * f64::from(u)) as u64;
        let level = &self.pyramid.levels[self.level];
        let one = Plot { x0: 0, y0: 0, w: p.w, h: p.h };
        let grid = Grid::new(&self.pyramid.shape, level, one, self.window, &self.rows);
        let blocks = block_cover(lo, hi, level.block, self.pyramid.shape.ranks);
        let mut ticks = vec![0f64; self.names.len()];
        grid.ticks(col as usize, &blocks, |s, v| ticks[s as usize] += v);
        let total: f64 = ticks.iter().sum();
        let mut lines = vec![format!("at {}", seconds(time))];
        if total > 0.0 {
            let mut order: Vec<usize> = (0..ticks.len()).filter(|&s| ticks[s] > 0.0).collect();
            order.sort_by(|&a, &b| ticks[b].total_cmp(&ticks[a]));
            let shares: Vec<String> =
                order.iter().take(3).map(|&s| format!("{} {:.0}%", self.names[s], ticks[s] / total * 100.0)).collect();
            lines.push(format!("states: {}", shares.join(", ")));
        } else {
            lines.push("no state".into());
        }
        if let Some(&c) = self.counts.get((row * p.w + col) as usize).filter(|&&c| c > 0) {
            lines.push(format!("about {c} message lines through this pixel"));
        }
        lines.push(format!(
            "summed from the pyramid ({} ranks by {} ms a cell): zoom in to read the rows",
            level.block,
            format_value(level.state_bin_ticks as f64 / self.tps * 1e3)
        ));
        let title = if hi - lo == 1 { format!("rank {lo}") } else { format!("ranks {lo}-{}", hi - 1) };
        Some(Pick::new(title, lines))
    }
}
