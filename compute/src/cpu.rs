//! The CPU runner: executes a [`Recording`] with the Rust mirrors of the WGSL kernels (each
//! stage's `mirror.rs`, beside its shader).
//!
//! Buffers are `Vec<AtomicU32>`, so a mirror reads like its shader: `atomicAdd(&counts[c], 1u)`
//! becomes `counts[c].fetch_add(1, Relaxed)`. Each invocation runs as one rayon task item;
//! workgroup-level kernels (the f32 reduction) run one workgroup per item, in the shader's order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use rayon::prelude::*;

pub use crate::words::Words;

use super::{BufId, Command, Kernel, Outputs, Recording, Runner, StageError, workgroups};
use crate::bin_heatmap::mirror::{self as bin_heatmap, bin_heatmap};
use crate::curve_density::mirror as curves;
use crate::line_density::mirror as line_density;
use crate::line_density::plain as line_density_plain;
use crate::location_features::mirror as location_features;
use crate::matrix_cells::mirror as matrix;
use crate::pyramid_pixels::mirror as pyramid_pixels;
use crate::reduce::mirror::{self as reduce, histogram_f32, histogram_u32, reduce_f32, reduce_u32};
use crate::timeline_pixels::mirror as timeline;
use crate::{bspline::mirror as bspline, force_layout::mirror as force_layout, kde_bundle::mirror as kde_bundle};

/// The default binding limit of the CPU runner: the same as lavapipe's, so CPU and GPU runs of
/// the same input record the same chunks.
pub const DEFAULT_MAX_BINDING: u64 = 128 << 20;

#[derive(Debug)]
pub struct CpuRunner {
    pub max_binding_bytes: u64,
}

impl Default for CpuRunner {
    fn default() -> Self {
        Self { max_binding_bytes: DEFAULT_MAX_BINDING }
    }
}

fn zeroed(words: u64) -> Vec<AtomicU32> {
    (0..words).map(|_| AtomicU32::new(0)).collect()
}

/// Runs `body(i)` for each invocation index `0..elements`.
fn for_each_invocation(elements: u32, body: impl Fn(u32) + Sync + Send) {
    (0..elements).into_par_iter().with_min_len(4096).for_each(body);
}

/// Runs `body(wg)` for each workgroup of a dispatch over `elements` invocations (for kernels
/// that cooperate through workgroup memory).
fn for_each_workgroup(elements: u32, body: impl Fn(u32) + Sync + Send) {
    let (x, y) = workgroups(elements);
    (0..x * y).into_par_iter().with_min_len(16).for_each(body);
}

impl Runner for CpuRunner {
    fn max_binding_bytes(&self) -> u64 {
        self.max_binding_bytes
    }

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn plain_memory(&self) -> bool {
        true
    }

    fn run_keeping(&mut self, recording: &Recording<'_>) -> Result<Outputs, StageError> {
        // The whole recording runs on one of rayon's threads: every parallel loop inside then
        // starts from a worker, not by handing a job across threads and sleeping until it ends
        // (two context switches per dispatch, which small dispatches notice).
        rayon::scope(|_| run_recording(recording))
    }
}

/// Binding indices a kernel only reads and can take as plain words: an upload into such a buffer
/// is not copied before the dispatch (see `run_recording`).
fn plain_inputs(kernel: Kernel) -> &'static [u32] {
    match kernel {
        Kernel::LineDensity => &[1],
        _ => &[],
    }
}

/// Copies a pending upload into its buffer.
fn settle(bufs: &HashMap<BufId, Vec<AtomicU32>>, pending: &mut HashMap<BufId, &[u32]>, buf: BufId) {
    if let (Some(data), Some(b)) = (pending.remove(&buf), bufs.get(&buf)) {
        b.par_iter().zip(data.par_iter()).for_each(|(dst, &v)| dst.store(v, Relaxed));
    }
}

fn run_recording(recording: &Recording<'_>) -> Result<Outputs, StageError> {
    {
        let mut bufs: HashMap<BufId, Vec<AtomicU32>> = HashMap::new();
        // Uploads not yet copied into their buffers: a kernel input in `plain_inputs` reads the
        // uploaded words where they are (a copy of, say, 16 MiB of segments per dispatch saved);
        // any other use of the buffer copies them in first.
        let mut pending: HashMap<BufId, &[u32]> = HashMap::new();
        let mut downloads = Vec::new();
        let mut kept = Vec::new();
        let mut last_use = HashMap::new();
        for (index, cmd) in recording.commands.iter().enumerate() {
            for buf in cmd.buffers() {
                last_use.insert(buf, index);
            }
        }
        for (index, cmd) in recording.commands.iter().enumerate() {
            match cmd {
                Command::Alloc { buf, words, .. } => {
                    bufs.insert(*buf, zeroed(*words));
                }
                Command::Clear { buf } => {
                    pending.remove(buf);
                    let b = bufs.get(buf).ok_or_else(|| missing(*buf))?;
                    b.par_iter().for_each(|w| w.store(0, Relaxed));
                }
                Command::Upload { buf, data, .. } => {
                    let b = bufs.get(buf).ok_or_else(|| missing(*buf))?;
                    if data.len() > b.len() {
                        return Err(StageError::Input(format!(
                            "upload of {} words into a buffer of {}",
                            data.len(),
                            b.len()
                        )));
                    }
                    // A shorter upload leaves the rest of an earlier one in place.
                    if pending.get(buf).is_some_and(|old| old.len() > data.len()) {
                        settle(&bufs, &mut pending, *buf);
                    }
                    pending.insert(*buf, data);
                }
                Command::Dispatch { kernel, elements, params, bindings } => {
                    for (binding, id) in bindings {
                        if !plain_inputs(*kernel).contains(binding) {
                            settle(&bufs, &mut pending, *id);
                        }
                    }
                    let plain = |binding: u32| -> Option<&[u32]> {
                        let id = bindings.iter().find(|(b, _)| *b == binding)?.1;
                        pending.get(&id).copied()
                    };
                    let get = |binding: u32| -> Result<&Words, StageError> {
                        let id = bindings
                            .iter()
                            .find(|(b, _)| *b == binding)
                            .map(|(_, id)| *id)
                            .ok_or_else(|| StageError::Input(format!("{kernel:?}: binding {binding} not bound")))?;
                        bufs.get(&id).map(Vec::as_slice).ok_or_else(|| missing(id))
                    };
                    dispatch(*kernel, *elements, params, &get, &plain)?;
                }
                Command::Download { buf } => {
                    settle(&bufs, &mut pending, *buf);
                    // A buffer read back for the last time is moved out and converted in place
                    // (no second copy of, say, every bundled point).
                    if last_use.get(buf) == Some(&index) {
                        let b = bufs.remove(buf).ok_or_else(|| missing(*buf))?;
                        downloads.push(b.into_iter().map(AtomicU32::into_inner).collect());
                    } else {
                        let b = bufs.get(buf).ok_or_else(|| missing(*buf))?;
                        downloads.push(b.iter().map(|w| w.load(Relaxed)).collect());
                    }
                }
                Command::Keep { buf } => {
                    settle(&bufs, &mut pending, *buf);
                    let b = bufs.remove(buf).ok_or_else(|| missing(*buf))?;
                    let words: Vec<u32> = b.into_iter().map(AtomicU32::into_inner).collect();
                    kept.push(crate::held::DeviceWords::Host(std::sync::Arc::new(words)));
                }
            }
        }
        Ok(Outputs { downloads, kept })
    }
}

/// Whole-grid mirrors run every cell: the dispatch must cover exactly the grid.
fn check_cells(kernel: Kernel, n: u32, p: &kde_bundle::Params) -> Result<(), StageError> {
    if n == p.grid * p.grid {
        Ok(())
    } else {
        Err(StageError::Input(format!("{kernel:?}: dispatch of {n} invocations over a {}² grid", p.grid)))
    }
}

/// Runs one dispatch with the mirrors; `get` resolves a binding index to its buffer, and
/// `plain` to the words of a pending upload where the binding is one of [`plain_inputs`].
fn dispatch<'b>(
    kernel: Kernel,
    n: u32,
    params: &[u32],
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
    plain: &dyn Fn(u32) -> Option<&'b [u32]>,
) -> Result<(), StageError> {
    match kernel {
        Kernel::BinHeatmap => {
            let p = bin_heatmap::Params::from_words(params)?;
            let (x, y, w, c, s) = (get(1)?, get(2)?, get(3)?, get(4)?, get(5)?);
            for_each_invocation(n, |i| bin_heatmap(i, &p, x, y, w, c, s));
        }
        Kernel::LineDensity => {
            let p = line_density::Params::from_words(params)?;
            let (seg, w, c, s) = (get(1)?, get(2)?, get(3)?, get(4)?);
            if n != p.n {
                return Err(StageError::Input("line_density: dispatch size differs from n".into()));
            }
            let copied: Vec<u32>;
            let seg = match plain(1) {
                Some(words) => words,
                None => {
                    copied = seg.iter().map(|w| w.load(Relaxed)).collect();
                    &copied
                }
            };
            if seg.len() < 4 * n as usize {
                return Err(StageError::Input("line_density: fewer segments than invocations".into()));
            }
            line_density_plain::line_density_all(&p, seg, w, c, s);
        }
        Kernel::LocationFeatures | Kernel::LocationDistances => features_dispatch(kernel, n, params, get)?,
        Kernel::CurvePieces | Kernel::CurveCompose => curves_dispatch(kernel, n, params, get)?,
        k if MATRIX_KERNELS.contains(&k) => matrix_dispatch(k, n, params, get)?,
        Kernel::ReduceU32 => {
            let p = reduce::Params::from_words(params)?;
            let (v, acc) = (get(1)?, get(3)?);
            for_each_workgroup(n, |wg| reduce_u32(wg, &p, v, acc));
        }
        Kernel::ReduceF32 => {
            let p = reduce::Params::from_words(params)?;
            let (v, acc, partials) = (get(2)?, get(3)?, get(4)?);
            for_each_workgroup(n, |wg| reduce_f32(wg, &p, v, acc, partials));
        }
        Kernel::KdeInit => {
            let p = kde_bundle::Params::from_words(params)?;
            let (ep, pts) = (get(1)?, get(2)?);
            for_each_invocation(n, |e| kde_bundle::kde_init(e, &p, ep, pts));
        }
        Kernel::KdeSplat => {
            let p = kde_bundle::Params::from_words(params)?;
            let (pts, w, splat) = (get(2)?, get(3)?, get(4)?);
            if n != p.n * p.samples {
                return Err(StageError::Input("kde_splat: dispatch size differs from n * samples".into()));
            }
            kde_bundle::kde_splat_all(&p, pts, w, splat);
        }
        Kernel::KdeBlurX => {
            let p = kde_bundle::Params::from_words(params)?;
            let (splat, out) = (get(4)?, get(6)?);
            check_cells(kernel, n, &p)?;
            kde_bundle::kde_blur_x_all(&p, splat, out);
        }
        Kernel::KdeBlurY => {
            let p = kde_bundle::Params::from_words(params)?;
            let (inp, out) = (get(5)?, get(6)?);
            check_cells(kernel, n, &p)?;
            kde_bundle::kde_blur_y_all(&p, inp, out);
        }
        Kernel::KdeGradient => {
            let p = kde_bundle::Params::from_words(params)?;
            let (inp, out) = (get(5)?, get(8)?);
            check_cells(kernel, n, &p)?;
            kde_bundle::kde_gradient_all(&p, inp, out);
        }
        Kernel::KdeAdvect => {
            let p = kde_bundle::Params::from_words(params)?;
            let (pts, gradient) = (get(2)?, get(7)?);
            if n != p.n {
                return Err(StageError::Input("kde_advect: dispatch size differs from n".into()));
            }
            kde_bundle::kde_advect_all(&p, pts, gradient, get(3)?, get(4)?);
        }
        Kernel::BsplineEval => {
            let p = bspline::Params::from_words(params)?;
            let (ctrl, offsets, pts) = (get(1)?, get(2)?, get(3)?);
            for_each_invocation(n, |e| bspline::bspline_eval(e, &p, ctrl, offsets, pts));
        }
        Kernel::ForceLayout => {
            let p = force_layout::Params::from_words(params)?;
            let (pos_in, pos_out, nodes, adj) = (get(1)?, get(2)?, get(3)?, get(4)?);
            for_each_invocation(n, |i| force_layout::force_layout(i, &p, pos_in, pos_out, nodes, adj));
        }
        Kernel::HistogramU32 => {
            let p = reduce::Params::from_words(params)?;
            let (v, h) = (get(1)?, get(5)?);
            for_each_workgroup(n, |wg| histogram_u32(wg, &p, v, h));
        }
        Kernel::HistogramF32 => {
            let p = reduce::Params::from_words(params)?;
            let (v, h) = (get(2)?, get(5)?);
            for_each_workgroup(n, |wg| histogram_f32(wg, &p, v, h));
        }
        // The timeline's and the pyramid's pixels' kernels, and the tiles' and groups'.
        _ => timeline_dispatch(kernel, n, params, get)?,
    }
    Ok(())
}

/// The location features' two kernels, as [`dispatch`] runs them.
fn features_dispatch<'b>(
    kernel: Kernel,
    n: u32,
    params: &[u32],
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
) -> Result<(), StageError> {
    let p = location_features::Params::from_words(params)?;
    if kernel == Kernel::LocationFeatures {
        let (spans, features) = (get(1)?, get(2)?);
        for_each_invocation(n, |i| location_features::location_features(i, &p, spans, features));
    } else if kernel == Kernel::IntervalFeatures {
        let c = location_features::IntervalColumns {
            location: get(13)?,
            start: get(14)?,
            end: get(15)?,
            kind: get(16)?,
            slot_of_kind: get(17)?,
        };
        let features = get(2)?;
        for_each_invocation(n, |i| location_features::interval_features(i, &p, &c, features));
    } else if kernel == Kernel::TileFeatures {
        let (tiles, table, features) = (get(6)?, get(7)?, get(2)?);
        for_each_invocation(n, |i| location_features::tile_features(i, &p, tiles, table, features));
    } else if kernel != Kernel::LocationDistances {
        group_dispatch(kernel, n, &p, get)?;
    } else {
        let (fin, reps, out) = (get(5)?, get(3)?, get(4)?);
        for_each_invocation(n, |l| location_features::location_distances(l, &p, fin, reps, out));
    }
    Ok(())
}

/// The group statistics' kernels, as [`dispatch`] runs them (each binds only what it reads).
fn group_dispatch<'b>(
    kernel: Kernel,
    n: u32,
    p: &location_features::Params,
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
) -> Result<(), StageError> {
    let empty: &'b Words = &[];
    let or_empty = |k: u32| get(k).or(Ok::<_, StageError>(empty));
    let g = location_features::Groups {
        nearest: or_empty(4)?,
        hist: or_empty(8)?,
        stats: or_empty(9)?,
        candidates: or_empty(10)?,
        packed: or_empty(11)?,
    };
    match kernel {
        Kernel::GroupHistogram => for_each_invocation(n, |l| location_features::group_histogram(l, p, &g)),
        Kernel::GroupSelect => for_each_workgroup(n, |k| location_features::group_select(k, p, &g)),
        Kernel::GroupDeviants => for_each_invocation(n, |l| location_features::group_deviants(l, p, &g)),
        Kernel::HideLocations => {
            let mask = or_empty(12)?;
            for_each_invocation(n, |l| location_features::hide_locations(l, p, g.nearest, mask));
        }
        _ => for_each_invocation(n, |w| location_features::pack_groups(w, p, &g)),
    }
    Ok(())
}

/// The curve density's two kernels, as [`dispatch`] runs them.
fn curves_dispatch<'b>(
    kernel: Kernel,
    n: u32,
    params: &[u32],
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
) -> Result<(), StageError> {
    let p = curves::Params::from_words(params)?;
    let (ink, tint) = (get(4)?, get(5)?);
    if kernel == Kernel::CurvePieces {
        let input = curves::Pieces { segments: get(1)?, pieces: get(2)?, alphas: get(3)?, values: get(8)? };
        for_each_invocation(n, |i| curves::curve_pieces(i, &p, &input, ink, tint));
    } else {
        let (table, out) = (get(6)?, get(7)?);
        for_each_invocation(n, |k| curves::curve_compose(k, &p, (ink, tint), table, out));
    }
    Ok(())
}

/// The matrix cells' kernels.
const MATRIX_KERNELS: [Kernel; 4] =
    [Kernel::MatrixBin, Kernel::MatrixBinTagged, Kernel::MatrixRange, Kernel::MatrixColour];

/// The matrix cells' kernels, as [`dispatch`] runs them.
fn matrix_dispatch<'b>(
    kernel: Kernel,
    n: u32,
    params: &[u32],
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
) -> Result<(), StageError> {
    let p = matrix::Params::from_words(params)?;
    let grid = (get(6)?, get(7)?, get(8)?);
    match kernel {
        Kernel::MatrixBin | Kernel::MatrixBinTagged => {
            let m = matrix::Messages {
                send: get(1)?,
                source: get(2)?,
                destination: get(3)?,
                bytes: get(4)?,
                slot: get(5)?,
            };
            if kernel == Kernel::MatrixBinTagged {
                let tags = get(11)?;
                for_each_invocation(n, |i| matrix::matrix_bin_tagged(i, &p, &m, tags, grid));
            } else {
                for_each_invocation(n, |i| matrix::matrix_bin(i, &p, &m, grid));
            }
        }
        Kernel::MatrixRange => for_each_invocation(n, |k| matrix::matrix_range(k, &p, grid)),
        _ => {
            let (colours, out) = (get(9)?, get(10)?);
            for_each_invocation(n, |k| matrix::matrix_colour(k, &p, grid, colours, out));
        }
    }
    Ok(())
}

/// The pyramid pixels' two kernels, as [`dispatch`] runs them.
fn pyramid_dispatch<'b>(
    kernel: Kernel,
    n: u32,
    params: &[u32],
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
) -> Result<(), StageError> {
    let p = pyramid_pixels::Params::from_words(params)?;
    if kernel == Kernel::PyramidCover {
        let src = pyramid_pixels::Sources { level: get(1)?, totals: get(2)?, tiles: get(3)?, table: get(6)? };
        let acc = get(7)?;
        for_each_invocation(n, |i| pyramid_pixels::pyramid_cover(i, &p, &src, acc));
    } else {
        let src = pyramid_pixels::LineSources { counts: get(4)?, gradient: get(5)?, table: get(6)? };
        let (counts, sums) = (get(8)?, get(9)?);
        for_each_invocation(n, |i| pyramid_pixels::pyramid_lines(i, &p, &src, counts, sums));
    }
    Ok(())
}

/// The timeline pixels' kernels, as [`dispatch`] runs them.
fn timeline_dispatch<'b>(
    kernel: Kernel,
    n: u32,
    params: &[u32],
    get: &dyn Fn(u32) -> Result<&'b Words, StageError>,
) -> Result<(), StageError> {
    if matches!(kernel, Kernel::PyramidCover | Kernel::PyramidLines) {
        return pyramid_dispatch(kernel, n, params, get);
    }
    if matches!(
        kernel,
        Kernel::TileFeatures
            | Kernel::GroupHistogram
            | Kernel::GroupSelect
            | Kernel::GroupDeviants
            | Kernel::PackGroups
    ) {
        return features_dispatch(kernel, n, params, get);
    }
    let p = timeline::Params::from_words(params)?;
    match kernel {
        Kernel::StateCover => {
            let spans =
                timeline::Spans { starts: get(1)?, ends: get(2)?, locs: get(3)?, kinds: get(4)?, depths: get(5)? };
            let (table, acc) = (get(6)?, get(7)?);
            for_each_invocation(n, |i| timeline::state_cover(i, &p, &spans, table, acc));
        }
        Kernel::StatePrefix => {
            let acc = get(7)?;
            for_each_invocation(n, |i| timeline::state_prefix(i, &p, acc));
        }
        Kernel::MessageLines | Kernel::MessageLinesFiltered => {
            let lines = timeline::Lines { send: get(8)?, recv: get(9)?, src: get(10)?, dst: get(11)? };
            let (table, counts, sums) = (get(6)?, get(12)?, get(13)?);
            if kernel == Kernel::MessageLines {
                for_each_invocation(n, |i| timeline::message_lines(i, &p, &lines, table, counts, sums));
            } else {
                let m = (&lines, get(18)?, get(19)?);
                for_each_invocation(n, |i| timeline::message_lines_filtered(i, &p, m, table, counts, sums));
            }
        }
        Kernel::ToneHistogram => {
            let (counts, hist, stats) = (get(12)?, get(14)?, get(15)?);
            for_each_invocation(n, |i| timeline::tone_histogram(i, &p, counts, hist, stats));
        }
        Kernel::ToneRanks => timeline::tone_ranks(&p, get(14)?, get(15)?, get(16)?),
        Kernel::TimelineCompose => {
            let composed =
                timeline::Composed { acc: get(7)?, counts: get(12)?, sums: get(13)?, stats: get(15)?, ranks: get(16)? };
            let (table, out) = (get(6)?, get(17)?);
            for_each_invocation(n, |k| timeline::timeline_compose(k, &p, table, &composed, out));
        }
        other => return Err(StageError::Input(format!("{other:?} is not a kernel of the CPU runner"))),
    }
    Ok(())
}

fn missing(buf: BufId) -> StageError {
    StageError::Input(format!("buffer {buf:?} used before it was allocated"))
}
