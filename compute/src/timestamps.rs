//! Timestamps of the passes outside the compute runner (the renderer's), read back into the
//! device's timings ([`GpuContext::time_passes`]).

use crate::gpu::GpuContext;
use crate::held::read_mapped_bytes;

/// The timestamps of one pass at its start and end ([`PassTimer::new`]).
pub struct PassTimer {
    set: wgpu::QuerySet,
    kernel: &'static str,
    bytes: u64,
}

impl PassTimer {
    /// A timer of one pass recorded outside the compute runner (the renderer's), named `kernel`
    /// and binding `bytes`, where `ctx` times passes ([`GpuContext::time_passes`]).
    pub fn new(ctx: &GpuContext, kernel: &'static str, bytes: u64) -> Option<Self> {
        ctx.timing().then(|| Self {
            set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("exaviz.pass-timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            kernel,
            bytes,
        })
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
        let buffer = |usage, label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage,
                mapped_at_creation: false,
            })
        };
        let resolved = buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, "exaviz.timestamps");
        let staging = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, "exaviz.timestamps.read");
        encoder.resolve_query_set(&self.set, 0..2, &resolved, 0);
        encoder.copy_buffer_to_buffer(&resolved, 0, &staging, 0, 16);
        TimedPass { staging, kernel: self.kernel, bytes: self.bytes }
    }
}

/// A pass whose timestamps are on their way back ([`PassTimer::resolve`]).
pub struct TimedPass {
    staging: wgpu::Buffer,
    kernel: &'static str,
    bytes: u64,
}

impl TimedPass {
    /// Adds the pass to `ctx`'s timings, once its commands were submitted.
    pub fn read(self, ctx: &GpuContext) {
        let Ok(w) = read_mapped_bytes(&ctx.device, &self.staging, 16) else { return };
        let (start, end) = (u64::from(w[0]) | u64::from(w[1]) << 32, u64::from(w[2]) | u64::from(w[3]) << 32);
        let ns = end.saturating_sub(start) as f64 * f64::from(ctx.queue.get_timestamp_period());
        ctx.add_timing(self.kernel, self.bytes, ns as u64);
    }
}
