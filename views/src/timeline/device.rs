//! The timeline's plot made on the GPU from the trace's columns kept there: the
//! `timeline_pixels` stage draws the states and message lines of a window and composes them on
//! the device, and the renderer copies the result into its raster there. A trace held in memory
//! uploads its columns (each location's innermost pieces, the intervals, the messages) once, at
//! its first picture; a gesture then sends the window, the look and, where the rows changed,
//! the layout table. The summary track is one more run, of every location shown, whose shares
//! are stacked as they are. A window of a store read from disk is drawn from the chunks of the
//! store's rows kept around it ([`super::ring`]). What the device path does not draw yet
//! (bundled lines, a search's or the waits' highlights) stays on the CPU path, whose picture it
//! matches within a unit or two of 255 a channel.

use std::sync::{Arc, Mutex, OnceLock};

use exaviz_compute::Backend;
use exaviz_compute::timeline_pixels::{self as stage, Columns, INNERMOST, Layout, Look, NONE, Run, SUMMARY_RUN};
use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;

use super::index::TimelineIndex;
use super::options::{StateMode, TimelineBundle, TimelineOptions};
use super::pieces::Pieces;
use super::ring::Ring;
use super::tracks::Tracks;
use crate::ViewError;
use crate::plot::{Mix, Plot};

/// What the device path keeps per trace in its index: the pieces, and the last layout table
/// (an equal table is the same `Arc`, found on the device without an upload).
#[derive(Default)]
pub(super) struct DeviceKept {
    pieces: OnceLock<Pieces>,
    layout: Mutex<Option<Layout>>,
}

/// Whether the picture `opts` asks for of `d` is drawn on the device: a GPU backend, the whole
/// trace in memory or a window of a store whose chunks the device keeps
/// ([`windows_on_device`]), straight lines, no search or waits drawn.
pub(super) fn draws_on_device(backend: &Backend, d: &Dataset, opts: &TimelineOptions) -> bool {
    backend.is_gpu()
        && (d.trace.span_of_whole.is_none() || windows_on_device(backend, d))
        && matches!(opts.bundle, TimelineBundle::None)
        && opts.search.is_none()
        && !opts.waits
        && std::env::var_os("EXAVIZ_TIMELINE_ON_HOST").is_none()
        && (opts.messages.is_none_or(|f| !f.reads_sizes_or_tags()) || binds_nine(backend))
}

/// Whether a kernel may bind nine storage buffers (the filtered message lines; WebGPU's
/// minimum is eight, which GL adapters may keep to).
fn binds_nine(backend: &Backend) -> bool {
    matches!(backend, Backend::Gpu(ctx) if ctx.limits.max_storage_buffers_per_shader_stage >= 9)
}

/// Bytes the device keeps of `t` for its timeline: the messages' ticks, ends, sizes and tags
/// (32 each, the last two where a filter reads them), the intervals' (28 each) and about as many
/// innermost pieces (24 each).
fn resident_bytes(t: &Trace) -> u64 {
    t.messages.source.len() as u64 * 32 + t.intervals.start.len() as u64 * (28 + 24)
}

/// Whether windows of `t` are drawn from its rows kept on `backend`'s device rather than from
/// its index: on a GPU whose kernels do not share the CPU's cores (on lavapipe the index is
/// faster), where the columns fit the device's resident budget. `EXAVIZ_GPU_ROWS=1` asks for it
/// on any GPU adapter (to measure what gestures move on lavapipe), `=0` never.
pub(super) fn rows_on_device(backend: &Backend, t: &Trace) -> bool {
    let Backend::Gpu(ctx) = backend else { return false };
    crate::kept::rows_wanted(backend) && t.span_of_whole.is_none() && resident_bytes(t) <= ctx.resident_budget()
}

/// Whether windows of the store `d`'s rows were read from are drawn on `backend`'s device from
/// chunks kept there ([`super::ring`]): where rows are kept on the device ([`crate::kept::rows_wanted`]), for
/// a store on this machine (a server's rows would cost a round trip a chunk).
pub(super) fn windows_on_device(backend: &Backend, d: &Dataset) -> bool {
    d.trace.span_of_whole.is_some()
        && d.window_of.as_ref().is_some_and(|o| !o.rows.remote())
        && crate::kept::rows_wanted(backend)
}

/// The summary track of a picture drawn on the device: its plot and the locations it counts.
pub(super) struct SummaryRun<'a> {
    pub(super) plot: Plot,
    pub(super) shown: &'a [usize],
}

/// The layout table of a plot `p`: what each pixel row shows (`of_row`: its locations and
/// level), each location's row centre on `rows`, the region ids' colour slots; the summary
/// track's rows one more run, of the locations it counts, flagged [`SUMMARY_RUN`].
fn layout(
    index: &TimelineIndex,
    p: Plot,
    of_row: &[(Vec<usize>, Option<u32>)],
    rows: &Tracks,
    summary: Option<&SummaryRun<'_>>,
) -> Layout {
    let n = index.by.ranges.len();
    let centres: Vec<f32> = (0..n)
        .map(|l| {
            let r = rows.pixels(l);
            (r.start + r.end) as f32 / 2.0
        })
        .collect();
    let mut runs: Vec<Run> = Vec::new();
    let mut row_runs = Vec::with_capacity(p.h as usize);
    let mut r = 0;
    while r < of_row.len() {
        let height = of_row[r..].iter().take_while(|k| **k == of_row[r]).count();
        let (locs, level) = &of_row[r];
        let run = if locs.is_empty() {
            NONE
        } else {
            runs.push(Run { locations: locs.iter().map(|&l| l as u32).collect(), level: level.unwrap_or(INNERMOST) });
            runs.len() as u32 - 1
        };
        for row in 0..height {
            row_runs.push((run, 1.0 - (row as f32 + 0.5) / height as f32));
        }
        r += height;
    }
    if let Some(s) = summary.filter(|s| !s.shown.is_empty()) {
        runs.push(Run { locations: s.shown.iter().map(|&l| l as u32).collect(), level: INNERMOST });
        let run = (runs.len() as u32 - 1) | SUMMARY_RUN;
        let from = s.plot.y0.saturating_sub(p.y0) as usize;
        for (k, row) in row_runs.iter_mut().skip(from).take(s.plot.h as usize).enumerate() {
            // As the host's track: shares stacked from the bottom, each row at its centre.
            *row = (run, 1.0 - (k as f32 + 0.5) / s.plot.h as f32);
        }
    }
    let slots: Vec<u32> = index.slot.iter().map(|&s| s as u32).collect();
    Layout::new(&slots, &centres, &row_runs, &runs)
}

/// The window's plot pixels composed on the device (see the module's description): from the
/// columns of the trace in memory kept under its index, or for a window read from a store, from
/// the chunks of the store's rows that `ring` keeps around it (a ring of this picture's own
/// where none is given).
pub(super) fn device_pixels(
    d: &Dataset,
    (backend, ring): (&Backend, Option<&Ring>),
    index: &Arc<TimelineIndex>,
    (p, window): (Plot, (u64, u64)),
    of_row: &[(Vec<usize>, Option<u32>)],
    (rows, summary): (&Tracks, Option<&SummaryRun<'_>>),
    opts: &TimelineOptions,
) -> Result<stage::Pixels, ViewError> {
    let t = &d.trace;
    let kept = &index.device;
    let own = Ring::default();
    let ring = ring.unwrap_or(&own);
    let windowed = d.window_of.as_ref().filter(|_| t.span_of_whole.is_some());
    let fresh = layout(index, p, of_row, rows, summary);
    let layout = {
        let mut last = match windowed {
            Some(_) => &ring.layout,
            None => &kept.layout,
        }
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
        match last.as_ref() {
            Some(l) if *l == fresh => l.clone(),
            _ => {
                *last = Some(fresh.clone());
                fresh
            }
        }
    };
    let filter = crate::trace::stage_filter(opts.messages.as_ref());
    let look = look_of(opts, (p, window), filter);
    if let Some(whole) = windowed {
        let Backend::Gpu(ctx) = backend else { return Err(ViewError::Unsupported("no GPU".into())) };
        let cover = ring.cover(whole, window, t.locations.name.len(), ctx.resident_budget() / 2)?;
        let owners: Vec<exaviz_compute::Owner> = cover.iter().map(|c| Arc::clone(c) as exaviz_compute::Owner).collect();
        let parts: Vec<Columns<'_>> =
            cover.iter().zip(&owners).enumerate().flat_map(|(k, (c, owner))| c.columns(k == 0, owner)).collect();
        return Ok(stage::run_parts(backend.runner().as_mut(), &parts, &layout, &look)?);
    }
    let pieces = kept.pieces.get_or_init(|| Pieces::new(index));
    let owner: exaviz_compute::Owner = index.clone();
    let columns = super::pieces::columns(pieces.columns(), (&t.intervals, &t.messages), &owner);
    Ok(stage::run(backend.runner().as_mut(), &columns, &layout, &look)?)
}

/// How a plot `p` over `window` is drawn on the device: the states' mode, the lines' opacity and
/// mix as `opts` ask, the messages `filter` keeps.
pub(super) fn look_of(opts: &TimelineOptions, (p, window): (Plot, (u64, u64)), filter: stage::Filter) -> Look {
    Look {
        width: p.w,
        height: p.h,
        window,
        stacked: opts.states == StateMode::Stacked,
        opacity: opts.message_opacity,
        additive: opts.mix == Mix::Additive,
        filter,
    }
}
