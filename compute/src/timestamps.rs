//! Timestamps of the passes outside the compute runner (the renderer's), read back into the
//! device's timings ([`GpuContext::time_passes`]).

use crate::gpu::GpuContext;
use crate::held::read_mapped_bytes;

/// A query set for the timestamps of `passes` passes (two each: start and end).
pub(crate) fn query_set(ctx: &GpuContext, passes: u32) -> wgpu::QuerySet {
    ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some("exaviz.pass-timestamps"),
        ty: wgpu::QueryType::Timestamp,
        count: 2 * passes,
    })
}

/// Records into `encoder` the copy of the first `passes` passes' timestamps of `set` into a
/// buffer to map: read it with [`read`] once submitted.
pub(crate) fn resolve(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    set: &wgpu::QuerySet,
    passes: u32,
) -> wgpu::Buffer {
    let bytes = u64::from(passes) * 16;
    let buffer = |usage, label| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage,
            mapped_at_creation: false,
        })
    };
    let resolved = buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, "exaviz.timestamps");
    let staging = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, "exaviz.timestamps.read");
    encoder.resolve_query_set(set, 0..2 * passes, &resolved, 0);
    encoder.copy_buffer_to_buffer(&resolved, 0, &staging, 0, bytes);
    staging
}

/// Adds `passes` (kernel, bytes bound) to `ctx`'s timings with their device time, read from
/// `staging` ([`resolve`]) once its commands were submitted (the reads are the instrument's
/// own: not counted as the engine's traffic).
pub(crate) fn read(ctx: &GpuContext, staging: &wgpu::Buffer, passes: &[(&'static str, u64)]) {
    let Ok(words) = read_mapped_bytes(&ctx.device, staging, passes.len() as u64 * 16) else { return };
    let period = f64::from(ctx.queue.get_timestamp_period());
    for (&(kernel, bound), w) in passes.iter().zip(words.chunks_exact(4)) {
        let (start, end) = (u64::from(w[0]) | u64::from(w[1]) << 32, u64::from(w[2]) | u64::from(w[3]) << 32);
        ctx.add_timing(kernel, bound, (end.saturating_sub(start) as f64 * period) as u64);
    }
}

/// The timestamps of one pass at its start and end ([`PassTimer::new`]).
pub struct PassTimer {
    set: wgpu::QuerySet,
    pass: (&'static str, u64),
}

impl PassTimer {
    /// A timer of one pass recorded outside the compute runner (the renderer's), named `kernel`
    /// and binding `bytes`, where `ctx` times passes ([`GpuContext::time_passes`]).
    pub fn new(ctx: &GpuContext, kernel: &'static str, bytes: u64) -> Option<Self> {
        ctx.timing().then(|| Self { set: query_set(ctx, 1), pass: (kernel, bytes) })
    }

    /// What a render pass writes its timestamps with.
    pub fn render_writes(&self) -> wgpu::RenderPassTimestampWrites<'_> {
        wgpu::RenderPassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// Records the copy of the timestamps into `encoder`, after the pass: read them with
    /// [`TimedPass::read`] once it is submitted.
    pub fn resolve(self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder) -> TimedPass {
        TimedPass { staging: resolve(device, encoder, &self.set, 1), pass: self.pass }
    }
}

/// A pass whose timestamps are on their way back ([`PassTimer::resolve`]).
pub struct TimedPass {
    staging: wgpu::Buffer,
    pass: (&'static str, u64),
}

impl TimedPass {
    /// Adds the pass to `ctx`'s timings, once its commands were submitted.
    pub fn read(self, ctx: &GpuContext) {
        read(ctx, &self.staging, &[self.pass]);
    }
}
