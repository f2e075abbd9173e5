//! The overview of a window too large to read, made on the GPU from the trace's pyramid kept
//! there (`exaviz_compute::pyramid_pixels`): the level's state tiles, the finest lines, each
//! location's own tiles and every location's totals go up once per pyramid; a gesture sends the
//! rows' table and a uniform, and the composed pixels stay on the device for the renderer. The
//! same picture as the CPU's overview within a unit or two of 255 a channel (the CPU sums in
//! `f64`, the device in `f32`).

use std::sync::{Arc, Mutex, PoisonError, Weak};

use exaviz_compute::location_features::tiles::Tiles;
use exaviz_compute::pyramid_pixels::{self as stage, BlockTicks, Grid, LineCells, OwnTiles, Rows, Run, Source};
use exaviz_compute::timeline_pixels::Pixels;
use exaviz_compute::{Backend, Owner, StageError};
use exaviz_model::pyramid::{Level, Lines, Pyramid};

use super::options::TimelineOptions;
use crate::ViewError;
use crate::plot::Plot;

/// What a pyramid's pictures keep besides the pyramid: its per-location tiles quantised for
/// the kernels, and every location's ticks per state and finest bin.
pub(super) struct Kept {
    pub tiles: Option<Arc<Tiles>>,
    totals: Vec<u64>,
}

/// `pyr`'s [`Kept`], made once and kept while the pyramid lives (on a GPU device its words are
/// kept under this `Arc` and the tiles').
pub(super) fn kept(pyr: &Arc<Pyramid>) -> Arc<Kept> {
    type All = Vec<(Weak<Pyramid>, Arc<Kept>)>;
    static KEPT: Mutex<All> = Mutex::new(Vec::new());
    let mut all = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    all.retain(|(w, _)| w.strong_count() > 0);
    if let Some((_, k)) = all.iter().find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(pyr))) {
        return k.clone();
    }
    let s = &pyr.shape;
    let tiles = pyr
        .locations
        .as_ref()
        .and_then(|t| Tiles::quantise((s.ranks, s.states, t.bins), (s.t0, t.bin_ticks), &t.ticks).map(Arc::new));
    // The level's own totals (summed once there, as the summary track's shares read them).
    let totals = pyr.levels.first().map_or_else(Vec::new, |l| {
        (0..s.states).flat_map(|st| (0..l.state_bins).map(move |b| l.total_ticks(st, s.states, b))).collect()
    });
    let k = Arc::new(Kept { tiles, totals });
    all.push((Arc::downgrade(pyr), k.clone()));
    k
}

/// Whether overviews are drawn on `backend`'s device, as windows of a trace in memory are drawn
/// from its rows kept there ([`super::device::rows_on_device`]): on a GPU whose kernels do not
/// share the CPU's cores (on lavapipe the CPU composes the overview faster and uploads it);
/// `EXAVIZ_GPU_ROWS=1` asks for it on any GPU adapter (to measure what gestures move on
/// lavapipe), `=0` never, and `EXAVIZ_TIMELINE_ON_HOST` keeps every picture on the CPU.
pub(super) fn draws_on_device(backend: &Backend) -> bool {
    let Backend::Gpu(ctx) = backend else { return false };
    let wanted = match std::env::var("EXAVIZ_GPU_ROWS").ok().as_deref().map(str::trim) {
        Some("1") => true,
        Some("0") => false,
        _ => !ctx.on_cpu_cores(),
    };
    wanted && std::env::var_os("EXAVIZ_TIMELINE_ON_HOST").is_none()
}

/// What each pixel row of a plot draws: the summary track's rows (`summary`, in plot rows),
/// else its ranks `rows[y]` (from their own tiles where `own[y]`).
fn runs_of(n: u32, rows: &[(u32, u32)], own: &[bool], summary: Option<std::ops::Range<u32>>) -> Rows {
    let of_row = rows
        .iter()
        .enumerate()
        .map(|(y, &(lo, hi))| {
            if summary.as_ref().is_some_and(|s| s.contains(&(y as u32))) {
                return Some(Run { lo: 0, hi: n, own: false, summary: true });
            }
            (hi > lo).then(|| Run { lo, hi, own: own.get(y).copied().unwrap_or(false), summary: false })
        })
        .collect();
    Rows { of_row }
}

/// The plot `p` over `window` of `pyr`, its states from `level`, made on `backend`'s device;
/// `None` where the device cannot hold what it needs (the caller draws on the host).
#[allow(clippy::too_many_arguments)]
pub(super) fn overview_pixels(
    pyr: &Arc<Pyramid>,
    (level, lines): (&Level, &Lines),
    (p, window): (Plot, (u64, u64)),
    slot: &[usize],
    (rows, own): (&[(u32, u32)], &[bool]),
    summary: Option<Plot>,
    opts: &TimelineOptions,
    backend: &Backend,
) -> Result<Option<Pixels>, ViewError> {
    let s = &pyr.shape;
    let Some(fine) = pyr.levels.first().filter(|l| l.state_bins == lines.bins) else { return Ok(None) };
    let kept = kept(pyr);
    let owner: Owner = pyr.clone();
    let kept_owner: Owner = kept.clone();
    let tiles_owner: Option<Owner> = kept.tiles.clone().map(|t| t as Owner);
    let grid = |l: &Level| Grid { t0: s.t0, bin_ticks: l.state_bin_ticks, bins: l.state_bins };
    let src = Source {
        ranks: s.ranks,
        states: s.states,
        level: BlockTicks { block: level.block, blocks: level.blocks, grid: grid(level), ticks: &level.ticks },
        fine: grid(fine),
        totals: &kept.totals,
        totals_owner: &kept_owner,
        lines: LineCells { block: s.block, blocks: lines.blocks, counts: &lines.counts, gradient: &lines.gradient },
        tiles: kept.tiles.as_ref().zip(tiles_owner.as_ref()).map(|(t, owner)| OwnTiles {
            grid: Grid { t0: t.t0, bin_ticks: t.bin_ticks, bins: t.bins },
            unit: t.unit,
            words: &t.words,
            owner,
        }),
        owner: &owner,
    };
    let summary_rows = summary.map(|sp| sp.y0 - p.y0..sp.y0 - p.y0 + sp.h);
    let rows = runs_of(s.ranks, rows, own, summary_rows);
    // The pyramid sums every message: no filter.
    let look = super::device::look_of(opts, (p, window), Default::default());
    let slots: Vec<u32> = stage::look_slots(slot);
    let mut runner = backend.runner();
    match stage::run(runner.as_mut(), &src, &rows, &look, &slots) {
        Ok(pixels) => Ok(Some(pixels)),
        Err(StageError::TooLarge { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
