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
//!
//! - Rows grouped by behaviour (as [`crate::rows`] groups the rows of a window): where the
//!   locations outnumber the plot's pixel rows, each location's features in the window come from
//!   the pyramid's per-location tiles ([`LocationTiles`]: its time per state in a few dozen bins
//!   over the trace), the groups are drawn as bands from the state tiles of their locations, and
//!   each location that stands out of its group gets a row of its own, drawn from its own tiles
//!   (at their coarser time bins).

use exaviz_compute::location_features::tiles::{self, TileInput};
use exaviz_compute::timeline_pixels::Pixels;
use exaviz_compute::{Backend, DensityImage};
use exaviz_model::Trace;
use exaviz_model::dataset::{Cells, CellsAsk, Dataset, NO_SLOT, OutOfCore};
use exaviz_model::pyramid::{Level, Lines, LocationTiles, Pyramid, Shape};
use exaviz_render::Scene;
use rayon::prelude::*;
use std::sync::Arc;

use super::axis::{RowAxis, rows_counted, rows_title, track_axis};
use super::collectives::Joins;
use super::counters::{self, CounterIndex, Track};
use super::density::GRADIENT_STEPS;
use super::index::{Legend, slots_by};
use super::options::{Rows, StateMode, SummaryTrack, TimelineOptions, margin};
use super::pick::{LineCounts, band_click};
use super::scene::{
    AUTO_LOCATIONS_PER_ROW, CounterLayer, DEVIANT_PX, Layers, Plotted, behaviour_heights, compose, most_opened,
    rows_counted_thousands, rows_of, summary_px, timeline_plot,
};
use super::states::stacked_runs;
use super::tracks::{SLOT_GAP_PX, Tracks};
use crate::ViewError;
use crate::contract;
use crate::contract::{Pick, Picker};
use crate::legend::format_value;
use crate::plot::{CATEGORICAL, Plot};
use crate::rows::{Behaviour, FeatureSource};
use crate::trace::window_in;
use exaviz_model::selection::Parts;

// The pyramid's gradient weights are the timeline's.
const _: () = assert!(exaviz_model::pyramid::LINE_STEPS as f32 == GRADIENT_STEPS);
// A summary column of cells holds a share per colour slot.
const _: () = assert!(exaviz_model::dataset::SUMMARY_SLOTS == CATEGORICAL.len());

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

/// State ticks of location `l` inside each column of `columns` (cells of `tiles`, as
/// [`Grid::columns`] holds the state tiles'), per state.
fn own_ticks(tiles: &LocationTiles, states: u32, l: u32, cells: &[(u32, f64)], mut add: impl FnMut(u32, f64)) {
    for s in 0..states {
        for &(bin, share) in cells {
            let v = tiles.at(l, s, states, bin);
            if v > 0 {
                add(s, v as f64 * share);
            }
        }
    }
}

/// The cells of `tiles` each plot column covers, with the share of each inside it.
fn own_columns(shape: &Shape, tiles: &LocationTiles, p: Plot, window: (u64, u64)) -> Vec<Vec<(u32, f64)>> {
    let per_px = (window.1 - window.0) as f64 / f64::from(p.w);
    (0..p.w)
        .map(|c| {
            let a = window.0 as f64 + f64::from(c) * per_px;
            cover(a, a + per_px, shape.t0 as f64, tiles.bin_ticks as f64, tiles.bins)
        })
        .collect()
}

/// A location's own tiles with the cells of each plot column.
type OwnTiles<'a> = Option<(&'a LocationTiles, &'a [Vec<(u32, f64)>])>;

/// State colours of every plot pixel from the pyramid's state tiles, as [`super::states::state_pixels`]
/// makes them from rows; the rows marked in `own` from their location's own tiles (`own_tiles`,
/// with the cells of its columns).
fn pyramid_states(
    grid: &Grid<'_>,
    p: Plot,
    per_px: f64,
    slot: &[usize],
    mode: StateMode,
    (own, own_tiles): (&[bool], OwnTiles<'_>),
) -> Vec<Option<[f32; 4]>> {
    let n = grid.shape.ranks;
    let keys: Vec<(u32, u32, bool)> =
        grid.rows.iter().zip(own.iter().chain(std::iter::repeat(&false))).map(|(&(lo, hi), &o)| (lo, hi, o)).collect();
    stacked_runs(&keys, p.w as usize, 0..p.w as usize, mode, |&(lo, hi, o)| {
        let mut cov = vec![[0f32; CATEGORICAL.len()]; p.w as usize];
        if o && let Some((tiles, columns)) = own_tiles {
            for (c, cells) in cov.iter_mut().zip(columns) {
                own_ticks(tiles, grid.shape.states, lo, cells, |s, ticks| {
                    c[slot[s as usize]] += (ticks / per_px) as f32
                });
            }
            return (cov, 1.0);
        }
        let blocks = block_cover(lo, hi, grid.level.block, n);
        for (col, c) in cov.iter_mut().enumerate() {
            grid.ticks(col, &blocks, |s, ticks| {
                // In pixels of one rank's row, as the rows give it.
                c[slot[s as usize]] += (ticks / per_px) as f32;
            });
        }
        (cov, 1.0 / (hi - lo).max(1) as f32)
    })
}

/// The summary track's shares from the state tiles: per column, the share of all `n`
/// locations' time in each colour slot.
fn summary_shares(grid: &Grid<'_>, p: Plot, per_px: f64, slot: &[usize]) -> Vec<[f32; CATEGORICAL.len()]> {
    let (n, states) = (grid.shape.ranks, grid.shape.states);
    (0..p.w as usize)
        .map(|col| {
            let mut c = [0f32; CATEGORICAL.len()];
            for &(bin, wt) in &grid.columns[col] {
                for st in 0..states {
                    let v = grid.level.total_ticks(st, states, bin);
                    if v > 0 {
                        c[slot[st as usize]] += (v as f64 * wt / per_px / f64::from(n.max(1))) as f32;
                    }
                }
            }
            c
        })
        .collect()
}

/// The features of every location of a pyramid over a window from its per-location tiles, as
/// [`crate::rows::features`] sums them from rows: per window bin and colour slot, the time in
/// quanta (each tile's ticks spread evenly over its bin). The sample that chooses the groups'
/// representatives is summed on the host; every location's distance to them where the backend
/// runs, the tiles kept there.
struct TileSource<'a> {
    input: TileInput<'a>,
    table: tiles::Table,
}

impl FeatureSource for TileSource<'_> {
    fn of(&self, l: usize) -> std::borrow::Cow<'_, [u32]> {
        std::borrow::Cow::Owned(tiles::row(&self.input, &self.table, l as u32))
    }

    fn nearest(&self, reps: &[u32], backend: &Backend) -> Result<Vec<(u32, u32)>, exaviz_compute::StageError> {
        tiles::nearest(&mut *backend.runner(), &self.input, reps)
    }

    /// On the backend's device, whence only each location's group, the statistics and those
    /// that stand out come back.
    fn assign(
        &self,
        reps: &[u32],
        least: &[u32],
        shown: &[u32],
        backend: &Backend,
    ) -> Result<exaviz_compute::location_features::groups::Assigned, exaviz_compute::StageError> {
        let hidden = crate::rows::hidden_from(shown, self.input.tiles.locations as usize);
        let a = tiles::assign(&mut *backend.runner(), &self.input, reps, (least, hidden))?;
        Ok(crate::rows::in_shown_order(a, shown))
    }
}

/// The locations of `pyr` grouped by behaviour over `window` where `opts` ask for it (by
/// default where they outnumber the plot's `rows` pixel rows [`AUTO_LOCATIONS_PER_ROW`] to one)
/// and the pyramid keeps per-location tiles: on `backend` where the overview is drawn on its
/// device, else on the CPU.
fn overview_behaviour(
    pyr: &Arc<Pyramid>,
    opts: &TimelineOptions,
    slot: &[usize],
    rows: u32,
    window: (u64, u64),
    backend: &Backend,
) -> Result<Option<Behaviour>, ViewError> {
    let Some(tiles) = super::pyramid_device::kept(pyr).tiles.clone() else { return Ok(None) };
    let n = pyr.shape.ranks as usize;
    let grouped = match opts.rows {
        Rows::Index => false,
        Rows::Behaviour => true,
        Rows::Auto => n > AUTO_LOCATIONS_PER_ROW * rows as usize,
    };
    if !grouped || n == 0 {
        return Ok(None);
    }
    let slots = slot.iter().map(|&s| s as u32 + 1).max().unwrap_or(1).min(CATEGORICAL.len() as u32);
    crate::rows::timed(|| {
        let slot_of_state: Vec<u32> =
            (0..pyr.shape.states as usize).map(|s| slot.get(s).map_or(u32::MAX, |&v| v as u32)).collect();
        let input = TileInput { tiles: &tiles, slot_of_state: &slot_of_state, slots, window, bins: crate::rows::BINS };
        let features = TileSource { table: input.table(), input };
        let shown: Vec<u32> = (0..n as u32).collect();
        let most = (rows / DEVIANT_PX / 3).max(1) as usize;
        // Where the overview is drawn: on lavapipe's shared cores the CPU sums the tiles faster.
        let on = if super::pyramid_device::draws_on_device(backend) { backend } else { &Backend::Cpu };
        let mut b = crate::rows::group(&features, &shown, most, on)?;
        if let Some(l) = opts.opened {
            b.open(l, most_opened(rows));
        }
        Ok(Some(b))
    })
}

/// Per pixel row of a plot `h` high, the ranks it draws and whether from their location's own
/// tiles, for `tracks` placed from `b`: a band's rows share its locations in order, in at most
/// [`super::states::BAND_SAMPLE`] runs of rows (each run the ranks from its first to its last),
/// a location with a track of its own is drawn from its own tiles where a block of the state
/// tiles holds more than it (`fine_block`).
fn grouped_rows(tracks: &Tracks, h: u32, fine_block: u32) -> (Vec<(u32, u32)>, Vec<bool>) {
    let (mut rows, mut own) = (vec![(0u32, 0u32); h as usize], vec![false; h as usize]);
    for k in 0..tracks.count() {
        let px = tracks.track_pixels(k);
        let members: Vec<u32> = tracks.locations(k).map(|l| l as u32).collect();
        let (Some(&first), height) = (members.first(), px.len()) else { continue };
        if tracks.band(k).is_none() {
            for r in px.filter(|&r| r < h) {
                rows[r as usize] = (first, first + 1);
                own[r as usize] = fine_block > 1;
            }
            continue;
        }
        // At most BAND_SAMPLE distinct runs of rows, each its share of the band's ranks (the
        // band's members do alike by construction, as the rows' path draws a band from a
        // sample of them): rows of a run are computed once.
        let chunks = height.clamp(1, super::states::BAND_SAMPLE);
        for (i, r) in px.enumerate().filter(|&(_, r)| r < h) {
            let c = i * chunks / height;
            let a = (c * members.len() / chunks).min(members.len() - 1);
            let e = ((c + 1) * members.len() / chunks).clamp(a + 1, members.len());
            rows[r as usize] = (members[a], members[e - 1] + 1);
        }
    }
    (rows, own)
}

/// Per pixel of a row, its whole lines and their gradient sums.
type WholeLines = (Vec<u32>, Vec<u64>);

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
    // Runs of rows drawing the same ranks (a band's) are computed once.
    let mut runs: Vec<((u32, u32), usize)> = Vec::new();
    for &r in grid.rows {
        match runs.last_mut() {
            Some((last, k)) if *last == r => *k += 1,
            _ => runs.push((r, 1)),
        }
    }
    // Each run's whole lines (counts, gradient sums) and how many rows it spans.
    let rows: Vec<(WholeLines, usize)> = runs
        .par_iter()
        .map(|&((lo, hi), repeat)| {
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
            (whole_lines(&c, &g), repeat)
        })
        .collect();
    let (mut counts, mut sums) = (Vec::with_capacity(w * grid.rows.len()), Vec::with_capacity(w * grid.rows.len()));
    for ((c, s), repeat) in rows {
        for _ in 0..repeat {
            counts.extend_from_slice(&c);
            sums.extend_from_slice(&s);
        }
    }
    DensityImage { width: p.w, height: p.h, counts, sums }
}

/// The line over a picture of `t` from the pyramid whose rows are grouped by `b`: how many
/// locations the summary track (where `summary`) counts, how many stand apart.
fn grouped_note(t: &Trace, b: &Behaviour, summary: bool) -> String {
    let apart = match b.deviants.len() {
        0 => String::new(),
        k => format!("; {k} apart"),
    };
    let what = if summary { "summary" } else { "grouped" };
    format!("{what}: {}{apart}", rows_counted_thousands(t, t.locations.name.len()))
}

/// The pixel rows of a picture drawn from the pyramid.
struct Laid {
    /// The summary track's plot, where one is drawn.
    summary: Option<Plot>,
    /// Per pixel row, the ranks drawn on it, and whether from their own tiles.
    rows: Vec<(u32, u32)>,
    own: Vec<bool>,
    /// The tracks, where rows are grouped by behaviour.
    tracks: Option<Tracks>,
}

/// The rows of a picture of `t` from `pyr` on plot `p`: one rank or a run of ranks per pixel
/// row in the trace's order, or, grouped by `behaviour`, the summary track on top and the bands
/// and the rows of their own below it.
fn laid_out(t: &Trace, pyr: &Pyramid, opts: &TimelineOptions, p: Plot, behaviour: Option<&Behaviour>) -> Laid {
    let n = t.locations.name.len();
    let Some(b) = behaviour else {
        return Laid { summary: None, rows: row_ranks(n, p.h), own: vec![false; p.h as usize], tracks: None };
    };
    let summary = match opts.summary {
        SummaryTrack::Auto | SummaryTrack::On => (p.h >= 2 * summary_px(p.h)).then(|| Plot { h: summary_px(p.h), ..p }),
        SummaryTrack::Off => None,
    };
    let mut r = Tracks::behaviour(t, &vec![true; n], true, b);
    let top = summary.map_or(0, |s| s.h + SLOT_GAP_PX);
    let heights = behaviour_heights(&r, b, p.h.saturating_sub(top));
    r.place_below(top, p.h, &heights, &[]);
    let (rows, own) = grouped_rows(&r, p.h, pyr.levels[0].block);
    Laid { summary, rows, own, tracks: Some(r) }
}

/// The level the state tiles of a picture `p` over `ticks` are drawn from, for its pixel rows
/// `rows` (those drawn from their own tiles marked in `own`): where the rows are grouped, a
/// band's pixel row gathers the ranks of its share of the band, and the coarsest level whose
/// blocks still resolve the narrowest of them serves; else the coarsest that resolves the plot.
fn states_level<'p>(
    pyr: &'p Pyramid,
    grouped: bool,
    (rows, own): (&[(u32, u32)], &[bool]),
    p: Plot,
    ticks: u64,
) -> &'p Level {
    if !grouped {
        return pyr.level_for(p.h, p.w, ticks);
    }
    let narrowest = rows.iter().zip(own).filter(|(r, o)| !**o && r.1 > r.0).map(|(r, _)| r.1 - r.0).min();
    match narrowest {
        Some(span) => pyr.level_for((pyr.shape.ranks / span).max(1), p.w, ticks),
        None => &pyr.levels[0],
    }
}

/// The timeline of `dataset`, kept on disk as `ooc`, from its pyramid, and what its tooltips
/// read; rows grouped by behaviour on `backend`.
pub(crate) fn overview_scene(
    dataset: &Dataset,
    ooc: &OutOfCore,
    opts: &TimelineOptions,
    counter_index: std::sync::Arc<CounterIndex>,
    backend: &Backend,
) -> Result<(Scene, OverviewPick), ViewError> {
    overview_or_cells(dataset, ooc, opts, counter_index, backend, None)
}

/// [`overview_scene`], its states, message lines and grouping taken from `cells` where given
/// (computed from the window's rows where they lie, [`window_cells`]) rather than the pyramid.
pub(crate) fn overview_or_cells(
    dataset: &Dataset,
    ooc: &OutOfCore,
    opts: &TimelineOptions,
    counter_index: std::sync::Arc<CounterIndex>,
    backend: &Backend,
    cells: Option<&Cells>,
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
    let (slot, legend) = pyramid_slots(pyr, &t.region_names);
    let grouped = grouping(cells, p, || overview_behaviour(pyr, opts, &slot, p.h, window, backend))?;
    let Laid { summary, rows, own, tracks: placed_rows } = laid_out(t, pyr, opts, p, grouped.as_ref());
    let level = states_level(pyr, grouped.is_some(), (&rows, &own), p, ticks);
    let grid = Grid::new(&pyr.shape, level, p, window, &rows);
    let per_px = ticks as f64 / f64::from(p.w);
    let lines = pyr.lines.as_ref().ok_or_else(|| {
        ViewError::Unsupported(
            "the store's pyramid has no line counts (an older exaviz wrote it): run exaviz pyramid STORE".into(),
        )
    })?;
    // The lines are at the finest blocks and bins: a grid of its own over level 0.
    let fine = Grid::new(&pyr.shape, &pyr.levels[0], p, window, &rows);
    let shares = summary.map(|sp| (sp, summary_of(cells, &fine, p, per_px, &slot)));
    let drawn = (pyr, (&grid, &fine), (level, lines), (p, window), &slot[..]);
    let (host, device) = plotted(drawn, (&rows, &own), shares.as_ref(), opts, cells, backend)?;
    let cell = format_value(level.state_bin_ticks as f64 / tps * 1e3);
    // The pyramid sums every message: a filter is drawn only where the window's rows are read.
    let unfiltered = match opts.messages {
        Some(_) => "; every message: zoom in to filter them",
        None => "",
    };
    let title = overview_title(dataset, ooc, cells.map_or(Err(level.block), |c| Ok(c.rows)), &cell, unfiltered);
    let joins = Joins { spans: Vec::new(), joins: Vec::new() };
    // Global instants are few and held with the names: drawn across the rows as from the rows.
    let lit = opts.search.map(|s| crate::search::matching_kinds(t, &s));
    let chevrons = super::instants::across(p, window, &super::instants::global_of(t), &slot, lit.as_deref());
    let note = opts.search.map(|s| super::search::overview_note(&dataset.trace, &s));
    let search = note.as_deref().map(|n| (None, n));
    let counters = CounterLayer { outer, index: &counter_index, tracks: &tracks, hidden };
    let summary_note = grouped.as_ref().map(|b| grouped_note(t, b, shares.is_some()));
    let layers = Layers {
        plotted: Plotted::of(&host, &device),
        legend: &legend,
        joins: &joins,
        instants: &chevrons,
        search,
        waits: None,
        counters,
        critical: opts.critical_path.then_some(OVERVIEW_CRITICAL_NOTE),
        summary: summary_note.as_deref(),
    };
    let (row_axis, placed_rows) = overview_axis(t, placed_rows, p, opts.width, shares.as_ref().map(|s| s.0));
    let mut scene = compose(
        opts,
        p,
        (window, ooc.span, tps),
        (&row_axis, rows_title(&dataset.trace)),
        (&title, "time since trace start (s)"),
        &layers,
    );
    scene.outline.title = title.clone();
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
        own,
        opened: (grouped.as_ref().map(|b| b.opened.clone()).unwrap_or_default(), most_opened(p.h)),
        tracks: placed_rows,
        summary: shares.map(|(sp, shares)| (sp, shares, legend.clone())),
        counts: match (host, device) {
            (Some((_, density)), _) => LineCounts::Host(density.counts),
            (None, Some(pixels)) => LineCounts::Device(pixels.counts),
            (None, None) => LineCounts::Host(Vec::new()),
        },
        names,
        counters: (counter_index, tracks),
        cells: cells.map(|c| CellsPick::new(c, &legend)),
    };
    Ok((scene, pick))
}

/// The summary track's shares per plot column: those the cells were drawn with, else from the
/// pyramid's finest level (every location at once: its bins' totals over the blocks summed once).
fn summary_of(
    cells: Option<&Cells>,
    fine: &Grid<'_>,
    p: Plot,
    per_px: f64,
    slot: &[usize],
) -> Vec<[f32; CATEGORICAL.len()]> {
    match cells {
        Some(c) if c.summary.len() == p.w as usize * CATEGORICAL.len() => {
            c.summary.chunks(CATEGORICAL.len()).map(|s| std::array::from_fn(|k| s[k])).collect()
        }
        _ => summary_shares(fine, p, per_px, slot),
    }
}

/// A plot's states and message lines drawn on the host.
type HostPixels = (Vec<Option<[f32; 4]>>, DensityImage);

/// What a picture from the pyramid is drawn from: the pyramid, its grids of the states' level
/// and of the finest, that level and the lines, the plot and window, the states' colour slots.
type Drawn<'a> =
    (&'a Arc<Pyramid>, (&'a Grid<'a>, &'a Grid<'a>), (&'a Level, &'a Lines), (Plot, (u64, u64)), &'a [usize]);

/// The plot's pixels (the pixel rows `rows`, those marked in `own` from their own tiles, the
/// summary track's shares where drawn): made on the device from the pyramid kept there where
/// the backend is a GPU and no cells are given (and the device holds what it needs), else on the
/// host, from the cells where given.
fn plotted(
    (pyr, (grid, fine), (level, lines), (p, window), slot): Drawn<'_>,
    (rows, own): (&[(u32, u32)], &[bool]),
    shares: Option<&(Plot, Vec<[f32; CATEGORICAL.len()]>)>,
    opts: &TimelineOptions,
    cells: Option<&Cells>,
    backend: &Backend,
) -> Result<(Option<HostPixels>, Option<Pixels>), ViewError> {
    if cells.is_none() && super::pyramid_device::draws_on_device(backend) {
        let summary = shares.map(|s| s.0);
        let made = (level, lines);
        let device =
            super::pyramid_device::overview_pixels(pyr, made, (p, window), slot, (rows, own), summary, opts, backend)?;
        if device.is_some() {
            return Ok((None, device));
        }
    }
    let (mut states, density) = match cells {
        Some(c) => (cell_states(c), cell_density(c)),
        None => pyramid_pixels(pyr, (grid, fine), lines, (p, window), slot, opts.states, own),
    };
    if let Some((sp, shares)) = shares {
        let from = ((sp.y0 - p.y0) * p.w) as usize;
        let pixels = super::states::summary_pixels(shares, sp.h);
        states[from..from + pixels.len()].copy_from_slice(&pixels);
    }
    Ok((Some((states, density)), None))
}

/// The states and message lines of plot `p` over `window` from the pyramid: the states from
/// `grid` (the rows marked in `own` from their own tiles), the lines from `fine`.
fn pyramid_pixels(
    pyr: &Pyramid,
    (grid, fine): (&Grid<'_>, &Grid<'_>),
    lines: &Lines,
    (p, window): (Plot, (u64, u64)),
    slot: &[usize],
    mode: StateMode,
    own: &[bool],
) -> (Vec<Option<[f32; 4]>>, DensityImage) {
    let per_px = (window.1 - window.0) as f64 / f64::from(p.w);
    let own_cells = pyr.locations.as_ref().map(|tiles| (tiles, own_columns(&pyr.shape, tiles, p, window)));
    let own_tiles = own_cells.as_ref().map(|(tiles, c)| (*tiles, &c[..]));
    rayon::join(|| pyramid_states(grid, p, per_px, slot, mode, (own, own_tiles)), || lines_density(lines, fine, p))
}

/// The title of a picture of `ooc` from the pyramid (with `drawn` its blocks of ranks and
/// `cell` its bins of time) or from cells (`drawn` the rows they were drawn from).
fn overview_title(dataset: &Dataset, ooc: &OutOfCore, drawn: Result<u64, u32>, cell: &str, unfiltered: &str) -> String {
    let drawn = match drawn {
        Ok(rows) => format!("{} rows drawn where they lie", crate::labels::thousands(rows as usize)),
        Err(block) => format!("pyramid: {block} ranks x {cell} ms"),
    };
    let n = dataset.trace.locations.name.len();
    format!(
        "Timeline: {} ({}, {} messages; {drawn}{unfiltered})",
        crate::title_name(dataset),
        rows_counted(&dataset.trace, n),
        ooc.messages,
    )
}

/// The row axis of a picture from the pyramid on plot `p` of a picture `width` wide: of the
/// `placed` tracks where rows are grouped (keeping where their labels are), else of every rank
/// placed alike; the summary track's (`summary`) first.
fn overview_axis(
    t: &Trace,
    placed: Option<Tracks>,
    p: Plot,
    width: u32,
    summary: Option<Plot>,
) -> (RowAxis, Option<Tracks>) {
    let n = t.locations.name.len();
    let left = margin(width)[0] as f32;
    let mut placed_rows = placed;
    let mut row_axis = match &placed_rows {
        Some(r) => track_axis(t, r, p, left),
        None => {
            // A rank or a run of ranks per pixel row: the tracks of every rank, placed alike.
            let mut every = Tracks::every(n);
            every.place(p.h, &[], &[]);
            track_axis(t, &every, p, left)
        }
    };
    if let Some(s) = summary {
        row_axis.summary(p, s, n);
    }
    if let Some(r) = &mut placed_rows {
        r.set_labelled(std::mem::take(&mut row_axis.labelled));
    }
    (row_axis, placed_rows)
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
    /// Per pixel row, whether its location is drawn from its own tiles.
    own: Vec<bool>,
    /// Rows grouped by behaviour: the tracks as placed, and the band opened into its locations
    /// with the most a band opens into.
    tracks: Option<Tracks>,
    opened: (Vec<u32>, usize),
    /// The summary track: its plot, its shares per column and the legend naming the slots.
    summary: Option<(Plot, Vec<[f32; CATEGORICAL.len()]>, Legend)>,
    counts: LineCounts,
    names: Vec<String>,
    /// The counter series and the tracks drawn.
    counters: (std::sync::Arc<CounterIndex>, Vec<Track>),
    /// Where the picture was drawn from cells: what its pixels' tooltips read of them.
    cells: Option<CellsPick>,
}

impl OverviewPick {
    /// Left of the plot at height `y`, over a band's label: what its click does.
    fn label_pick(&self, at: [f32; 2]) -> Option<Pick> {
        let tracks = self.tracks.as_ref()?;
        let super::tracks::LabelAt::Track(k) = tracks.label_at(at[0], at[1] - self.plot.y0 as f32)? else {
            return None;
        };
        let (line, click) = band_click(tracks, &self.opened, k)?;
        let title = tracks.band(k).map_or_else(|| "an opened band's location".to_string(), str::to_string);
        let pick = Pick::new(title, vec![line]);
        Some(match click {
            Some(s) => pick.with_click(Parts::OPENED, s),
            None => pick,
        })
    }
}

impl Picker for OverviewPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let seconds = |t: u64| format!("{:.6} s", t.saturating_sub(self.full.0) as f64 / self.tps);
        if let Some((title, mut lines, time)) = counters::pick(&self.counters.0, &self.counters.1, self.window, at) {
            lines.insert(0, format!("at {}", seconds(time)));
            return Some(Pick::new(title, lines));
        }
        let (t0, t1) = self.window;
        if let Some((sp, shares, legend)) = &self.summary
            && let Some([u, _]) =
                contract::share_in([sp.x0 as f32, sp.y0 as f32, (sp.x0 + sp.w) as f32, (sp.y0 + sp.h) as f32], at)
        {
            let time = t0 + ((t1 - t0) as f64 * f64::from(u)) as u64;
            let c = &shares[((u * sp.w as f32) as usize).min(shares.len() - 1)];
            let mut lines = vec![format!("at {}", seconds(time))];
            let mut named: Vec<(f32, &str)> =
                legend.iter().map(|(slot, name)| (c[*slot], name.as_str())).filter(|x| x.0 > 0.0).collect();
            named.sort_by(|a, b| b.0.total_cmp(&a.0));
            lines.extend(named.iter().take(8).map(|(share, name)| format!("{name}: {:.1}%", 100.0 * share)));
            let none = 1.0 - c.iter().sum::<f32>();
            lines.push(format!("no state: {:.1}%", 100.0 * none.max(0.0)));
            let n = crate::rows::thousands(self.pyramid.shape.ranks as usize);
            return Some(Pick::new(format!("summary of {n} locations"), lines));
        }
        let p = self.plot;
        if at[0] < p.x0 as f32 && at[1] >= p.y0 as f32 {
            return self.label_pick(at);
        }
        let [u, v] = contract::share_in([p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32], at)?;
        let (col, row) = (((u * p.w as f32) as u32).min(p.w - 1), ((v * p.h as f32) as u32).min(p.h - 1));
        let (lo, hi) = self.rows[row as usize];
        if hi <= lo {
            return None;
        }
        let time = t0 + ((t1 - t0) as f64 * f64::from(u)) as u64;
        let mut lines = vec![format!("at {}", seconds(time))];
        let own = self.own.get(row as usize).copied().unwrap_or(false);
        match &self.cells {
            Some(c) => {
                lines.extend(c.lines((row * p.w + col) as usize, self.counts.get((row * p.w + col) as usize).as_ref()))
            }
            None => lines.extend(self.pyramid_lines(col, row, (lo, hi), own)),
        }
        let track = self.tracks.as_ref().and_then(|r| r.at_row(row).map(|k| (r, k)));
        let band = track.and_then(|(r, k)| r.band(k).map(str::to_string));
        let click = track.and_then(|(r, k)| band_click(r, &self.opened, k));
        let ranks = if hi - lo == 1 { format!("rank {lo}") } else { format!("ranks {lo}-{}", hi - 1) };
        let title = match band {
            Some(b) => {
                lines.push(format!("this pixel row: {ranks}"));
                b
            }
            None if hi - lo == 1 => dataset.trace.locations.name.get(lo as usize).cloned().unwrap_or(ranks),
            None => ranks,
        };
        if let Some((line, _)) = &click {
            lines.push(line.clone());
        }
        let pick = Pick::new(title, lines);
        Some(match click.and_then(|c| c.1) {
            Some(s) => pick.with_click(Parts::OPENED, s),
            None => pick,
        })
    }
}

impl OverviewPick {
    /// A tooltip's lines of pixel (`col`, `row`) drawn from the pyramid: the states of the
    /// ranks `lo..hi` (from their own tiles where `own`), the lines through it, and what the
    /// pixel was summed from.
    fn pyramid_lines(&self, col: u32, row: u32, (lo, hi): (u32, u32), own: bool) -> Vec<String> {
        let p = self.plot;
        let level = &self.pyramid.levels[self.level];
        let one = Plot { x0: 0, y0: 0, w: p.w, h: p.h };
        let grid = Grid::new(&self.pyramid.shape, level, one, self.window, &self.rows);
        let mut ticks = vec![0f64; self.names.len()];
        match self.pyramid.locations.as_ref().filter(|_| own) {
            Some(tiles) => {
                let cells = own_columns(&self.pyramid.shape, tiles, one, self.window);
                own_ticks(tiles, self.pyramid.shape.states, lo, &cells[col as usize], |s, v| ticks[s as usize] += v);
            }
            None => {
                let blocks = block_cover(lo, hi, level.block, self.pyramid.shape.ranks);
                grid.ticks(col as usize, &blocks, |s, v| ticks[s as usize] += v);
            }
        }
        let total: f64 = ticks.iter().sum();
        let mut lines = Vec::new();
        if total > 0.0 {
            let mut order: Vec<usize> = (0..ticks.len()).filter(|&s| ticks[s] > 0.0).collect();
            order.sort_by(|&a, &b| ticks[b].total_cmp(&ticks[a]));
            let shares: Vec<String> =
                order.iter().take(3).map(|&s| format!("{} {:.0}%", self.names[s], ticks[s] / total * 100.0)).collect();
            lines.push(format!("states: {}", shares.join(", ")));
        } else {
            lines.push("no state".into());
        }
        if let Some(c) = self.counts.get((row * p.w + col) as usize).filter(|&c| c > 0) {
            lines.push(format!("about {c} message lines through this pixel"));
        }
        match (own, self.pyramid.locations.as_ref()) {
            (true, Some(tiles)) => lines.push(format!(
                "drawn apart: it differs from the others; from its own tiles ({} ms a cell): zoom in to read the rows",
                format_value(tiles.bin_ticks as f64 / self.tps * 1e3)
            )),
            _ => lines.push(format!(
                "summed from the pyramid ({} ranks by {} ms a cell): zoom in to read the rows",
                level.block,
                format_value(level.state_bin_ticks as f64 / self.tps * 1e3)
            )),
        }
        lines
    }
}

/// What the tooltips of a picture drawn from cells read of them: each pixel's state and its
/// cover, and how many rows the cells were drawn from.
pub(crate) struct CellsPick {
    slot: Vec<u8>,
    alpha: Vec<u8>,
    rows: u64,
    /// The name of each colour slot.
    names: Vec<Option<String>>,
}

impl CellsPick {
    fn new(c: &Cells, legend: &super::index::Legend) -> Self {
        let mut names = vec![None; CATEGORICAL.len()];
        for (slot, name) in legend {
            if let Some(n) = names.get_mut(*slot) {
                n.get_or_insert_with(|| name.clone());
            }
        }
        Self { slot: c.slot.clone(), alpha: c.alpha.clone(), rows: c.rows, names }
    }

    /// A tooltip's lines of pixel `k` (`lines`: the message lines through it).
    fn lines(&self, k: usize, lines: Option<&u32>) -> Vec<String> {
        let mut out = Vec::new();
        match self.slot.get(k).filter(|&&s| s != NO_SLOT) {
            Some(&s) => {
                let name = self.names.get(s as usize).cloned().flatten().unwrap_or_else(|| format!("state slot {s}"));
                let cover = f32::from(self.alpha.get(k).copied().unwrap_or(0)) / 255.0 * 100.0;
                out.push(format!("state: {name} (the most time here; states cover {cover:.0}% of it)"));
            }
            None => out.push("no state".into()),
        }
        if let Some(&c) = lines.filter(|&&c| c > 0) {
            out.push(format!("{c} message lines through this pixel"));
        }
        out.push(format!(
            "drawn where the store lies from the window's {} rows, a state and a count a pixel: zoom in to read the rows",
            crate::labels::thousands(self.rows as usize)
        ));
        out
    }
}

/// The grouping of a picture on plot `p`: the one `cells` were drawn with, else `of_pyramid`'s.
fn grouping(
    cells: Option<&Cells>,
    p: Plot,
    of_pyramid: impl FnOnce() -> Result<Option<Behaviour>, ViewError>,
) -> Result<Option<Behaviour>, ViewError> {
    let Some(c) = cells else { return of_pyramid() };
    if (c.width, c.height) != (p.w, p.h) {
        return Err(ViewError::Unsupported(format!(
            "cells of {}x{} pixels for a plot of {}x{}",
            c.width, c.height, p.w, p.h
        )));
    }
    Ok(c.groups.clone().map(|(groups, deviants, opened)| Behaviour { groups, deviants, opened }))
}

/// What a timeline of a window whose rows lie on another machine asks there: the picture of
/// `opts` as cells ([`window_cells`]) where the window holds more rows than the plot has
/// pixels. `None` where `opts` need the rows themselves (a search, a message filter, the
/// critical path, waits, bundling), or the plot has more pixels than a server draws.
pub(crate) fn cells_ask(
    dataset: &Dataset,
    ooc: &OutOfCore,
    opts: &TimelineOptions,
    counter_index: &CounterIndex,
) -> Option<CellsAsk> {
    let needs_rows = opts.search.is_some()
        || opts.messages.is_some_and(|f| !f.is_all())
        || opts.critical_path
        || opts.waits
        || opts.bundle != super::options::TimelineBundle::None;
    if needs_rows {
        return None;
    }
    let tps = dataset.trace.ticks_per_second.max(1) as f64;
    let window = window_in(ooc.span, tps, opts.window_s).ok()?;
    let outer = timeline_plot(opts).ok()?;
    let (p, _, _) = counters::layout(outer, &counter_index.chosen(opts.counters), counter_index.series.len());
    // A picture larger than a server draws (a wall's canvas) reads the rows.
    if u64::from(p.w) * u64::from(p.h) > exaviz_model::dataset::MAX_CELLS {
        return None;
    }
    Some(CellsAsk {
        window,
        plot: [p.x0, p.y0, p.w, p.h],
        rows: match opts.rows {
            Rows::Auto => 0,
            Rows::Index => 1,
            Rows::Behaviour => 2,
        },
        summary: match opts.summary {
            SummaryTrack::Auto => 0,
            SummaryTrack::On => 1,
            SummaryTrack::Off => 2,
        },
        states: match opts.states {
            StateMode::Dominant => 0,
            StateMode::Stacked => 1,
        },
        opened: opts.opened,
        above: u64::from(p.w) * u64::from(p.h),
    })
}

/// The options and plot `ask` names, checked against a trace of `n` locations.
fn asked(ask: &CellsAsk, n: usize) -> Result<(TimelineOptions, Plot), ViewError> {
    let bad = |why: String| Err(ViewError::Unsupported(why));
    let [x0, y0, w, h] = ask.plot;
    if w == 0 || h == 0 || u64::from(w) * u64::from(h) > exaviz_model::dataset::MAX_CELLS {
        return bad(format!("a plot of {w}x{h} pixels"));
    }
    if ask.window.1 < ask.window.0 {
        return bad(format!("window [{}, {}] ends before it starts", ask.window.0, ask.window.1));
    }
    if let Some(l) = ask.opened.filter(|&l| l as usize >= n) {
        return bad(format!("location {l} opened (there are {n})"));
    }
    let opts = TimelineOptions {
        rows: match ask.rows {
            0 => Rows::Auto,
            1 => Rows::Index,
            2 => Rows::Behaviour,
            k => return bad(format!("rows {k}")),
        },
        summary: match ask.summary {
            0 => SummaryTrack::Auto,
            1 => SummaryTrack::On,
            2 => SummaryTrack::Off,
            k => return bad(format!("summary {k}")),
        },
        states: match ask.states {
            0 => StateMode::Dominant,
            1 => StateMode::Stacked,
            k => return bad(format!("states {k}")),
        },
        opened: ask.opened,
        ..TimelineOptions::default()
    };
    Ok((opts, Plot { x0, y0, w, h }))
}

/// The timeline picture `ask` names of `dataset` (kept on disk: its pyramid places the rows as
/// [`overview_scene`] does), drawn from the rows of the window that `rows` reads
/// ([`Dataset::window_rows`], while the pyramid groups the locations): per plot pixel its state and message lines as the rows draw them,
/// with the grouping of the locations, on the CPU; `None` where the window holds no more rows
/// than `ask.above`. What `exaviz serve` sends for a window too dense to send its rows;
/// [`overview_or_cells`] draws the picture from it.
pub fn window_cells<'a>(
    dataset: &Dataset,
    ask: &CellsAsk,
    rows: impl FnOnce() -> Result<std::borrow::Cow<'a, Dataset>, String> + Send,
) -> Result<Option<Cells>, ViewError> {
    let ooc = dataset.out_of_core.as_ref().ok_or_else(|| ViewError::Unsupported("the store is held whole".into()))?;
    let t = &dataset.trace;
    let n = t.locations.name.len();
    crate::trace::pyramid_of(ooc, n)?;
    let (opts, p) = asked(ask, n)?;
    let pyr = &ooc.pyramid;
    // The rows are read and indexed while the locations are grouped from the pyramid.
    let (placed, read) = rayon::join(
        || -> Result<_, ViewError> {
            let (slot, _) = pyramid_slots(pyr, &t.region_names);
            let grouped = overview_behaviour(pyr, &opts, &slot, p.h, ask.window, &Backend::Cpu)?;
            let laid = laid_out(t, pyr, &opts, p, grouped.as_ref());
            let tracks = laid.tracks.unwrap_or_else(|| {
                let mut every = Tracks::every(n);
                every.place(p.h, &[], &[]);
                every
            });
            Ok((grouped, laid.summary.is_some(), tracks))
        },
        || -> Result<_, ViewError> {
            let rows = rows().map_err(ViewError::Unsupported)?;
            let index = super::index::TimelineIndex::new(&rows.trace);
            Ok((rows, index))
        },
    );
    let ((grouped, summary, tracks), (rows, index)) = (placed?, read?);
    let r = &rows.trace;
    // The statistics bound a window's rows loosely: one that holds fewer than the picture's
    // pixels after all is sent as its rows.
    let rows_read = (r.messages.send_time.len() + r.intervals.start.len()) as u64;
    if rows_read <= ask.above {
        return Ok(None);
    }
    let of_row = super::states::row_contents(r, p, &tracks, None);
    let ((states, density), summary) = rayon::join(
        || {
            rayon::join(
                || super::states::state_pixels(r, p, ask.window, &of_row, &index, opts.states, 0..p.w as usize),
                || {
                    let none = super::options::TimelineBundle::None;
                    super::density::message_density(r, &Backend::Cpu, p, ask.window, &tracks, &none, &index, None, None)
                },
            )
        },
        // The summary track's shares of every location's time, as the rows give them.
        || match summary {
            true => {
                let shown: Vec<usize> = (0..n).filter(|&l| !tracks.pixels(l).is_empty()).collect();
                super::states::summary_shares(p.w, ask.window, &shown, &index).into_iter().flatten().collect()
            }
            false => Vec::new(),
        },
    );
    let (density, _) = density?;
    let (mut slots, mut alpha) = (Vec::with_capacity(states.len()), Vec::with_capacity(states.len()));
    for s in &states {
        let (k, a) = match s {
            Some(c) => {
                let k = super::states::colour_slot(c)
                    .ok_or_else(|| ViewError::Unsupported(format!("a state pixel of a colour no slot has ({c:?})")))?;
                (k as u8, (c[3].clamp(0.0, 1.0) * 255.0).round() as u8)
            }
            None => (NO_SLOT, 0),
        };
        slots.push(k);
        alpha.push(a);
    }
    let shade = density
        .counts
        .iter()
        .zip(&density.sums)
        .map(|(&c, &g)| {
            if c == 0 {
                0
            } else {
                (g as f64 / f64::from(GRADIENT_STEPS) / f64::from(c) * 255.0).round().clamp(0.0, 255.0) as u8
            }
        })
        .collect();
    Ok(Some(Cells {
        width: p.w,
        height: p.h,
        slot: slots,
        alpha,
        lines: density.counts,
        shade,
        groups: grouped.map(|b| (b.groups, b.deviants, b.opened)),
        summary,
        rows: rows_read,
    }))
}

/// The state colours of cells, as [`super::states::state_pixels`] gives them (opacity within
/// half a 255th).
fn cell_states(c: &Cells) -> Vec<Option<[f32; 4]>> {
    c.slot
        .iter()
        .zip(&c.alpha)
        .map(|(&s, &a)| {
            (s != NO_SLOT && (s as usize) < CATEGORICAL.len())
                .then(|| super::states::state_colour(s as usize, f32::from(a) / 255.0))
        })
        .collect()
}

/// The message lines of cells: counts exact, the gradient's sums from their mean shade.
fn cell_density(c: &Cells) -> DensityImage {
    let sums = c
        .lines
        .iter()
        .zip(&c.shade)
        .map(|(&k, &s)| (f64::from(s) / 255.0 * f64::from(GRADIENT_STEPS) * f64::from(k)).round() as u64)
        .collect();
    DensityImage { width: c.width, height: c.height, counts: c.lines.clone(), sums }
}
