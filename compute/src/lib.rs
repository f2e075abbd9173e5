//! The compute stages of exaviz, and the backends that run them: each stage a folder holding
//! its recording (`mod.rs`), its WGSL kernel (`NAME.wgsl`, validated with naga when this crate
//! builds and listed in [`shaders`] by `build.rs`), and the kernel's CPU mirror (`mirror.rs`,
//! read like the shader, atomics and all), with a fast path in plain memory where the CPU
//! needs one (`plain.rs`); [`gpu`] the wgpu device and the choice of backend.
//!
//! Compute stages as recorded work.
//!
//! A stage records a [`Recording`]: allocations, uploads, dispatches of named kernels and
//! downloads over buffer handles. One recording is executed either by the [`gpu_runner`] (wgpu
//! compute passes) or by the [`cpu`] runner (the Rust mirrors of the same kernels), so one test can
//! run both on the same commands and compare what they download.
//!
//! Inputs larger than one storage binding are split into chunks by the stage when it records
//! (see [`chunks`]); both runners see the same chunks.

use std::borrow::Cow;

pub mod bin_heatmap;
pub mod bspline;
pub mod cpu;
pub mod curve_density;
pub mod force_layout;
pub mod gpu;
pub mod gpu_runner;
pub mod held;
pub mod io;
pub mod kde_bundle;
pub mod line_density;
pub mod location_features;
pub mod matrix_cells;
pub mod pool;
pub mod pyramid_pixels;
pub mod reduce;
pub mod shaders;
pub mod timeline_pixels;
pub mod timestamps;
pub mod words;

pub use bin_heatmap::{AxisKey, HeatmapGrid, HeatmapInput};
pub use bspline::ControlPolygons;
pub use gpu::{Backend, BackendChoice, GpuContext, GpuError, PassTiming};
pub use held::DeviceWords;
pub use kde_bundle::{BundleInput, BundleParams, Bundled};
pub use line_density::{DensityImage, DensityInput};
pub use reduce::{ColumnStats, Histogram};
pub use timestamps::{PassTimer, TimedPass};
pub use wgpu;

impl crate::Backend {
    /// A runner for recorded compute work on this backend.
    pub fn runner(&self) -> Box<dyn Runner + '_> {
        match self {
            Self::Gpu(ctx) => Box::new(gpu_runner::GpuRunner::new(ctx)),
            Self::Cpu => Box::new(cpu::CpuRunner::default()),
        }
    }
}

/// Invocations per workgroup of every kernel (`@workgroup_size(256)` in the WGSL).
pub const WORKGROUP: u32 = 256;
/// Workgroups per dispatch dimension (WebGPU's minimum limit, lavapipe's too).
pub const MAX_GROUPS_PER_DIM: u32 = 65_535;

/// A compute kernel: one WGSL entry point and its CPU mirror function of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    BinHeatmap,
    LineDensity,
    ReduceU32,
    ReduceF32,
    HistogramU32,
    HistogramF32,
    KdeInit,
    KdeSplat,
    KdeBlurX,
    KdeBlurY,
    KdeGradient,
    KdeAdvect,
    BsplineEval,
    ForceLayout,
    LocationFeatures,
    LocationDistances,
    TileFeatures,
    GroupHistogram,
    GroupSelect,
    GroupDeviants,
    PackGroups,
    HideLocations,
    IntervalFeatures,
    StateCover,
    StatePrefix,
    MessageLines,
    MessageLinesFiltered,
    ToneHistogram,
    ToneRanks,
    TimelineCompose,
    PyramidCover,
    PyramidLines,
    CurvePieces,
    CurveCompose,
    MatrixBin,
    MatrixBinTagged,
    MatrixRange,
    MatrixColour,
}

impl Kernel {
    pub fn shader(self) -> shaders::Shader {
        match self {
            Self::BinHeatmap => shaders::BIN_HEATMAP,
            Self::LineDensity => shaders::LINE_DENSITY,
            Self::BsplineEval => shaders::BSPLINE,
            Self::ForceLayout => shaders::FORCE_LAYOUT,
            Self::LocationFeatures
            | Self::LocationDistances
            | Self::TileFeatures
            | Self::GroupHistogram
            | Self::GroupSelect
            | Self::GroupDeviants
            | Self::PackGroups
            | Self::HideLocations
            | Self::IntervalFeatures => shaders::LOCATION_FEATURES,
            Self::StateCover
            | Self::StatePrefix
            | Self::MessageLines
            | Self::MessageLinesFiltered
            | Self::ToneHistogram
            | Self::ToneRanks
            | Self::TimelineCompose => shaders::TIMELINE_PIXELS,
            Self::PyramidCover | Self::PyramidLines => shaders::PYRAMID_PIXELS,
            Self::CurvePieces | Self::CurveCompose => shaders::CURVE_DENSITY,
            Self::MatrixBin | Self::MatrixBinTagged | Self::MatrixRange | Self::MatrixColour => shaders::MATRIX_CELLS,
            Self::KdeInit | Self::KdeSplat | Self::KdeBlurX | Self::KdeBlurY | Self::KdeGradient | Self::KdeAdvect => {
                shaders::KDE_BUNDLE
            }
            _ => shaders::REDUCE,
        }
    }

    pub fn entry_point(self) -> &'static str {
        match self {
            Self::BinHeatmap => "bin_heatmap",
            Self::LineDensity => "line_density",
            Self::ReduceU32 => "reduce_u32",
            Self::ReduceF32 => "reduce_f32",
            Self::HistogramU32 => "histogram_u32",
            Self::HistogramF32 => "histogram_f32",
            Self::KdeInit => "kde_init",
            Self::KdeSplat => "kde_splat",
            Self::KdeBlurX => "kde_blur_x",
            Self::KdeBlurY => "kde_blur_y",
            Self::KdeGradient => "kde_gradient",
            Self::KdeAdvect => "kde_advect",
            Self::BsplineEval => "bspline_eval",
            Self::ForceLayout => "force_layout",
            Self::LocationFeatures => "location_features",
            Self::LocationDistances => "location_distances",
            Self::TileFeatures => "tile_features",
            Self::GroupHistogram => "group_histogram",
            Self::GroupSelect => "group_select",
            Self::GroupDeviants => "group_deviants",
            Self::PackGroups => "pack_groups",
            Self::HideLocations => "hide_locations",
            Self::IntervalFeatures => "interval_features",
            Self::StateCover => "state_cover",
            Self::StatePrefix => "state_prefix",
            Self::MessageLines => "message_lines",
            Self::MessageLinesFiltered => "message_lines_filtered",
            Self::ToneHistogram => "tone_histogram",
            Self::ToneRanks => "tone_ranks",
            Self::TimelineCompose => "timeline_compose",
            Self::PyramidCover => "pyramid_cover",
            Self::PyramidLines => "pyramid_lines",
            Self::CurvePieces => "curve_pieces",
            Self::CurveCompose => "curve_compose",
            Self::MatrixBin => "matrix_bin",
            Self::MatrixBinTagged => "matrix_bin_tagged",
            Self::MatrixRange => "matrix_range",
            Self::MatrixColour => "matrix_colour",
        }
    }
}

/// A buffer handle within one recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufId(pub u32);

/// What holds columns that do not change while it lives (a dataset behind an `Arc`): the key
/// under which a GPU device keeps their words between runs, and what keeps them alive meanwhile.
pub type Owner = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// One recorded command. Buffers hold 32-bit words; `u64`, `f32` and vector columns are viewed
/// as words with `bytemuck` (no per-element conversion).
#[derive(Debug)]
pub enum Command<'a> {
    /// A zero-filled storage buffer of `words` 32-bit words.
    Alloc { buf: BufId, words: u64, label: &'static str },
    /// Sets every word of a buffer to zero.
    Clear { buf: BufId },
    /// Overwrites the start of a buffer. With an [`Owner`], `data` is borrowed from it and the
    /// same while it lives: a GPU runner keeps the words on the device, and a later upload of
    /// the same words of the same owner binds them again instead of moving them (the kernel
    /// must only read them).
    Upload { buf: BufId, data: Cow<'a, [u32]>, kept: Option<Owner> },
    /// Runs a kernel over `elements` invocations with a uniform of `params` words and storage
    /// bindings `(binding index, buffer)`.
    Dispatch { kernel: Kernel, elements: u32, params: Vec<u32>, bindings: Vec<(u32, BufId)> },
    /// Reads a buffer back; downloads are returned in recording order.
    Download { buf: BufId },
    /// Leaves a buffer where the recording ran ([`DeviceWords`]), for the renderer or a later
    /// recording; kept buffers are returned in recording order.
    Keep { buf: BufId },
}

impl Command<'_> {
    /// The buffers a command touches.
    pub fn buffers(&self) -> Vec<BufId> {
        match self {
            Self::Alloc { buf, .. }
            | Self::Clear { buf }
            | Self::Upload { buf, .. }
            | Self::Download { buf }
            | Self::Keep { buf } => {
                vec![*buf]
            }
            Self::Dispatch { bindings, .. } => bindings.iter().map(|(_, b)| *b).collect(),
        }
    }
}

/// A list of commands over buffer handles.
#[derive(Debug, Default)]
pub struct Recording<'a> {
    pub commands: Vec<Command<'a>>,
    next: u32,
}

impl<'a> Recording<'a> {
    pub fn alloc(&mut self, words: u64, label: &'static str) -> BufId {
        let buf = BufId(self.next);
        self.next += 1;
        self.commands.push(Command::Alloc { buf, words: words.max(1), label });
        buf
    }

    pub fn clear(&mut self, buf: BufId) {
        self.commands.push(Command::Clear { buf });
    }

    pub fn upload(&mut self, buf: BufId, data: impl Into<Cow<'a, [u32]>>) {
        self.commands.push(Command::Upload { buf, data: data.into(), kept: None });
    }

    /// Uploads `data`, words of `owner` that stay the same while it lives: uploaded once to a
    /// GPU device and kept there (see [`Command::Upload`]). Only for buffers kernels read.
    pub fn upload_kept(&mut self, buf: BufId, data: &'a [u32], owner: &Owner) {
        self.commands.push(Command::Upload { buf, data: Cow::Borrowed(data), kept: Some(owner.clone()) });
    }

    /// Uploads `data` kept on the device where `owner` is given, else plainly.
    pub fn upload_maybe_kept(&mut self, buf: BufId, data: &'a [u32], owner: Option<&Owner>) {
        match owner {
            Some(owner) => self.upload_kept(buf, data, owner),
            None => self.upload(buf, data),
        }
    }

    pub fn dispatch(&mut self, kernel: Kernel, elements: u32, params: Vec<u32>, bindings: Vec<(u32, BufId)>) {
        if elements > 0 {
            self.commands.push(Command::Dispatch { kernel, elements, params, bindings });
        }
    }

    pub fn download(&mut self, buf: BufId) {
        self.commands.push(Command::Download { buf });
    }

    /// Leaves `buf` where the recording runs (see [`Command::Keep`]); nothing writes it after.
    pub fn keep(&mut self, buf: BufId) {
        self.commands.push(Command::Keep { buf });
    }
}

/// What a run gives back: the words downloaded and the buffers kept, each in recording order.
#[derive(Debug, Default)]
pub struct Outputs {
    pub downloads: Vec<Vec<u32>>,
    pub kept: Vec<DeviceWords>,
}

/// Workgroup counts `(x, y)` for `elements` invocations: kernels compute their index as
/// `gid.x + gid.y * num_workgroups.x * 256`.
pub fn workgroups(elements: u32) -> (u32, u32) {
    let groups = elements.div_ceil(WORKGROUP).max(1);
    let x = groups.min(MAX_GROUPS_PER_DIM);
    (x, groups.div_ceil(x))
}

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    #[error("{what} needs {bytes} bytes in one binding, more than this device allows ({limit} bytes)")]
    TooLarge { what: &'static str, bytes: u64, limit: u64 },
    #[error("invalid stage input: {0}")]
    Input(String),
}

/// Executes recordings.
pub trait Runner {
    /// The largest storage binding in bytes; stages chunk their inputs to fit.
    fn max_binding_bytes(&self) -> u64;
    /// Runs every command; returns the downloaded buffers in order.
    fn run(&mut self, recording: &Recording<'_>) -> Result<Vec<Vec<u32>>, StageError> {
        Ok(self.run_keeping(recording)?.downloads)
    }
    /// Runs every command; returns the downloaded and the kept buffers, each in order.
    fn run_keeping(&mut self, recording: &Recording<'_>) -> Result<Outputs, StageError>;
    fn name(&self) -> &'static str;
    /// Whether stages may run on the CPU in plain memory instead of running their recording
    /// (the CPU runner: a stage's plain path equals its mirror's run of the recording).
    fn plain_memory(&self) -> bool {
        false
    }
}

/// Splits `n` elements into chunks whose every column fits one binding; `bytes_per_element` is
/// the largest per-element size among the columns bound. A chunk also fits one dispatch.
pub fn chunks(
    n: usize,
    bytes_per_element: u64,
    max_binding_bytes: u64,
) -> impl Iterator<Item = std::ops::Range<usize>> {
    let per_binding = (max_binding_bytes / bytes_per_element.max(1)).max(1);
    let per_dispatch = u64::from(MAX_GROUPS_PER_DIM) * u64::from(MAX_GROUPS_PER_DIM) * u64::from(WORKGROUP);
    let per_chunk = per_binding.min(per_dispatch).min(u64::from(u32::MAX)) as usize;
    (0..n.div_ceil(per_chunk)).map(move |c| c * per_chunk..((c + 1) * per_chunk).min(n))
}

/// Checks an output buffer fits one binding.
pub(crate) fn check_binding(what: &'static str, bytes: u64, limit: u64) -> Result<(), StageError> {
    if bytes > limit {
        return Err(StageError::TooLarge { what, bytes, limit });
    }
    Ok(())
}

/// Reassembles u64 values stored as (low, high) word pairs.
pub(crate) fn words_to_u64(words: &[u32]) -> Vec<u64> {
    words.chunks_exact(2).map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_everything_once() {
        let parts: Vec<_> = chunks(10, 4, 12).collect();
        assert_eq!(parts, vec![0..3, 3..6, 6..9, 9..10]);
        assert_eq!(chunks(0, 4, 12).count(), 0);
    }

    #[test]
    fn workgroups_split_past_one_dimension() {
        assert_eq!(workgroups(1), (1, 1));
        assert_eq!(workgroups(256 * 65_535 + 1), (65_535, 2));
    }
}
