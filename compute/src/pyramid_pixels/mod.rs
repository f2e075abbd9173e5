//! The timeline's plot pixels of a window too large to read, made on the device from the
//! trace's pyramid kept there: the state tiles of the level that resolves the plot's rows, the
//! message lines at the finest blocks and bins, each location's own tiles (for rows drawn apart)
//! and every location's total per state (the summary track). Each kept column is uploaded once
//! under its owner; a picture sends its rows' table and a uniform, and leaves its composed
//! pixels on the device for the renderer, as [`crate::timeline_pixels`] does for rows (whose
//! ranking and composing kernels it shares). Shader: `pyramid_pixels.wgsl` beside this file; CPU
//! mirror: [`mirror`].
//!
//! The picture follows the CPU path of the timeline's overview (`exaviz_views`) in `f32` where
//! that path sums in `f64`: a pixel's colour may differ by a unit or two of 255, and a line
//! count whose expected value lies on a rounding edge by one.

pub mod mirror;

use super::timeline_pixels::{self as tp, Layout, Look, NONE, Pixels, SLOTS, SUMMARY_RUN};
use super::{Kernel, Owner, Recording, Runner, StageError, check_binding};
pub use mirror::{OWN, Params, SUMMARY};

/// A grid of time bins: bin `k` is `[t0 + k * bin_ticks, t0 + (k + 1) * bin_ticks)`, `bins` of
/// them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub t0: u64,
    pub bin_ticks: u64,
    pub bins: u32,
}

impl Grid {
    /// Where the pixel columns of a plot `width` wide over `window` fall in the grid: the bin of
    /// the window's start, how far into it, and the bins per pixel.
    fn place(&self, window: (u64, u64), width: u32) -> (i32, f32, f32) {
        let cell = self.bin_ticks.max(1) as f64;
        let at = (window.0 as f64 - self.t0 as f64) / cell;
        let k0 = at.floor().clamp(f64::from(i32::MIN), f64::from(i32::MAX));
        let ppx = (window.1 - window.0) as f64 / f64::from(width.max(1)) / cell;
        (k0 as i32, (at - k0) as f32, ppx as f32)
    }
}

/// Ticks `[block][state][bin]` of rank blocks of `block` ranks on `grid`.
#[derive(Clone, Copy, Debug)]
pub struct BlockTicks<'a> {
    pub block: u32,
    pub blocks: u32,
    pub grid: Grid,
    pub ticks: &'a [u64],
}

/// Message lines `[bin][block]` through blocks of `block` ranks, on the finest grid.
#[derive(Clone, Copy, Debug)]
pub struct LineCells<'a> {
    pub block: u32,
    pub blocks: u32,
    pub counts: &'a [u64],
    pub gradient: &'a [u64],
}

/// Per-location tiles `[location][state][bin]` in units of `unit` ticks.
#[derive(Clone, Copy, Debug)]
pub struct OwnTiles<'a> {
    pub grid: Grid,
    pub unit: u64,
    pub words: &'a [u32],
    pub owner: &'a Owner,
}

/// What a picture is made from, kept on a device under `owner` (the pyramid) while it lives.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    pub ranks: u32,
    pub states: u32,
    /// The level the states are drawn from.
    pub level: BlockTicks<'a>,
    /// The finest grid, every location's ticks per state on it (`[state][bin]`), and the lines.
    pub fine: Grid,
    pub totals: &'a [u64],
    /// What keeps the totals (they are not the pyramid's own words).
    pub totals_owner: &'a Owner,
    pub lines: LineCells<'a>,
    pub tiles: Option<OwnTiles<'a>>,
    pub owner: &'a Owner,
}

/// A run of pixel rows drawing the same: ranks `[lo, hi)`, from their own tiles (one rank) or
/// as the summary track of every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub lo: u32,
    pub hi: u32,
    pub own: bool,
    pub summary: bool,
}

/// The rows of a plot: per pixel row, its run (`None`: nothing drawn).
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    pub of_row: Vec<Option<Run>>,
}

impl Rows {
    /// The compose kernel's layout (each pixel row's run and how far up it the row is) and the
    /// pyramid kernels' table (each state's colour slot, then the runs).
    fn tables(&self, slot_of_state: &[u32]) -> (Layout, Vec<u32>) {
        let mut rows = Vec::with_capacity(self.of_row.len());
        let mut table: Vec<u32> = slot_of_state.to_vec();
        let mut runs = 0u32;
        let mut r = 0;
        while r < self.of_row.len() {
            let height = self.of_row[r..].iter().take_while(|k| **k == self.of_row[r]).count();
            let run = match self.of_row[r] {
                Some(run) if run.hi > run.lo => {
                    let flags = (u32::from(run.own) * OWN) | (u32::from(run.summary) * SUMMARY);
                    table.extend([run.lo, run.hi, flags, r as u32, height as u32]);
                    runs += 1;
                    (runs - 1) + if run.summary { SUMMARY_RUN } else { 0 }
                }
                _ => NONE,
            };
            rows.extend((0..height).map(|row| (run, 1.0 - (row as f32 + 0.5) / height as f32)));
            r += height;
        }
        let layout = Layout::of_rows(&rows, runs);
        (layout, table)
    }
}

/// Colour slot per state (`SLOTS - 1` at most: the last gathers the rest).
pub fn look_slots(slot_of_state: &[usize]) -> Vec<u32> {
    slot_of_state.iter().map(|&s| (s as u32).min(SLOTS - 1)).collect()
}

fn words64(v: &[u64]) -> &[u32] {
    bytemuck::cast_slice(v)
}

fn params(src: &Source<'_>, look: &Look, runs: u32) -> Params {
    let place = |g: &Grid| g.place(look.window, look.width);
    let (k0, frac0, ppx) = place(&src.level.grid);
    let (fine_k0, fine_frac0, fine_ppx) = place(&src.fine);
    let tiles = src.tiles.map(|t| (place(&t.grid), t.grid.bins, t.unit));
    let ((tile_k0, tile_frac0, tile_ppx), tile_bins, unit) = tiles.unwrap_or(((0, 0.0, 0.0), 0, 1));
    Params {
        n: runs * look.width,
        width: look.width,
        height: look.height,
        runs,
        ranks: src.ranks,
        states: src.states,
        block: src.level.block.max(1),
        blocks: src.level.blocks,
        bins: src.level.grid.bins,
        k0,
        frac0,
        ppx,
        per_px: ((look.window.1 - look.window.0) as f64 / f64::from(look.width.max(1))) as f32,
        unit: unit as f32,
        fine_bins: src.fine.bins,
        fine_k0,
        fine_frac0,
        fine_ppx,
        line_block: src.lines.block.max(1),
        line_blocks: src.lines.blocks,
        tile_bins,
        tile_k0,
        tile_frac0,
        tile_ppx,
        ..Params::default()
    }
}

fn check(src: &Source<'_>, rows: &Rows, look: &Look, slot_of_state: &[u32]) -> Result<(), StageError> {
    let bad = |what: &str| Err(StageError::Input(format!("pyramid pixels: {what}")));
    let (s, l) = (src.states as usize, &src.level);
    if look.width == 0 || look.height == 0 || rows.of_row.len() != look.height as usize {
        return bad("the rows are not of this plot");
    }
    if look.window.1 <= look.window.0 {
        return bad("an empty window");
    }
    if slot_of_state.len() != s || l.ticks.len() != l.blocks as usize * s * l.grid.bins as usize {
        return bad("the level's tiles differ from its shape");
    }
    let fine = src.fine.bins as usize;
    let cells = fine * src.lines.blocks as usize;
    if src.totals.len() != s * fine || src.lines.counts.len() != cells || src.lines.gradient.len() != cells {
        return bad("the totals or lines differ from the finest grid");
    }
    if let Some(t) = &src.tiles
        && t.words.len() != src.ranks as usize * s * t.grid.bins as usize
    {
        return bad("the locations' tiles differ from their shape");
    }
    let most = rows.of_row.iter().flatten().map(|r| r.hi).max().unwrap_or(0);
    let own = rows.of_row.iter().flatten().any(|r| r.own);
    if most > src.ranks || (own && src.tiles.is_none()) {
        return bad("a row of ranks the pyramid lacks");
    }
    Ok(())
}

/// The composed plot of `look` from `src` with `rows` (see the module's description); the
/// states in colour slots `slot_of_state` ([`look_slots`]). The look's filter is not applied:
/// the pyramid sums every message.
pub fn run(
    runner: &mut dyn Runner,
    src: &Source<'_>,
    rows: &Rows,
    look: &Look,
    slot_of_state: &[u32],
) -> Result<Pixels, StageError> {
    check(src, rows, look, slot_of_state)?;
    let (layout, table) = rows.tables(slot_of_state);
    let max = runner.max_binding_bytes();
    let (w, h) = (look.width, look.height);
    let pixels = u64::from(w) * u64::from(h);
    let acc_words = 2 * u64::from(layout.runs.max(1)) * u64::from(w) * u64::from(SLOTS);
    check_binding("timeline coverage", acc_words * 4, max)?;
    check_binding("timeline sums", pixels * 8, max)?;
    check_binding("pyramid level", src.level.ticks.len() as u64 * 8, max)?;
    check_binding("pyramid lines", src.lines.counts.len() as u64 * 8, max)?;
    let p = params(src, look, layout.runs);
    let uniform = bytemuck::cast_slice::<Params, u32>(&[p]).to_vec();
    let mut rec = Recording::default();
    let kept = |rec: &mut Recording<'_>, label, len: usize| rec.alloc(len as u64, label);
    let level = kept(&mut rec, "pyramid.level", 2 * src.level.ticks.len());
    rec.upload_kept(level, words64(src.level.ticks), src.owner);
    let totals = kept(&mut rec, "pyramid.totals", 2 * src.totals.len());
    rec.upload_kept(totals, words64(src.totals), src.totals_owner);
    let tiles = match &src.tiles {
        Some(t) => {
            check_binding("location tiles", t.words.len() as u64 * 4, max)?;
            let b = kept(&mut rec, "pyramid.tiles", t.words.len());
            rec.upload_kept(b, t.words, t.owner);
            b
        }
        None => kept(&mut rec, "pyramid.tiles", 1),
    };
    let lines = kept(&mut rec, "pyramid.line_counts", 2 * src.lines.counts.len());
    rec.upload_kept(lines, words64(src.lines.counts), src.owner);
    let gradient = kept(&mut rec, "pyramid.line_gradient", 2 * src.lines.gradient.len());
    rec.upload_kept(gradient, words64(src.lines.gradient), src.owner);
    let runs = rec.alloc(table.len() as u64, "pyramid.runs");
    rec.upload(runs, table);
    let acc = rec.alloc(acc_words, "timeline.coverage");
    let counts = rec.alloc(pixels, "timeline.counts");
    let sums = rec.alloc(2 * pixels, "timeline.sums");
    let n = p.n;
    rec.dispatch(
        Kernel::PyramidCover,
        n,
        uniform.clone(),
        vec![(1, level), (2, totals), (3, tiles), (6, runs), (7, acc)],
    );
    if look.opacity > 0.0 {
        let bindings = vec![(4, lines), (5, gradient), (6, runs), (8, counts), (9, sums)];
        rec.dispatch(Kernel::PyramidLines, n, uniform, bindings);
    }
    let table = rec.alloc(layout.words.len() as u64, "timeline.table");
    rec.upload(table, layout.words.to_vec());
    tp::record_compose(&mut rec, [table, acc, counts, sums], &tp::base_params(&layout, look));
    tp::pixels_of(runner.run_keeping(&rec)?, w)
}
