//! The GPU runner: executes a [`Recording`] with wgpu compute passes.

use std::collections::HashMap;

use super::{BufId, Command, Kernel, Outputs, Recording, Runner, StageError, workgroups};
use crate::gpu::{GpuContext, GpuError};
use crate::held::{DeviceWords, GpuWords};
use crate::pool::{Pool, Use};
use crate::timestamps;

pub struct GpuRunner<'c> {
    ctx: &'c GpuContext,
}

/// A buffer of one run: the pooled buffer and the bytes of it the recording uses.
struct Held {
    buffer: wgpu::Buffer,
    bytes: u64,
    /// Words kept on the device between runs (not the pool's; never written).
    kept: bool,
}

impl Held {
    fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: 0,
            size: std::num::NonZeroU64::new(self.bytes),
        })
    }
}

impl<'c> GpuRunner<'c> {
    pub fn new(ctx: &'c GpuContext) -> Self {
        Self { ctx }
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.ctx.pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take(&self, usage: Use, bytes: u64) -> (wgpu::Buffer, bool) {
        self.pool().take(&self.ctx.device, usage, bytes, self.ctx.limits.max_buffer_size)
    }

    fn pipeline(&self, kernel: Kernel) -> wgpu::ComputePipeline {
        let mut cache = self.ctx.kernels.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .entry((kernel.shader().name, kernel.entry_point()))
            .or_insert_with(|| {
                let shader = kernel.shader();
                let module = self.ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(shader.name),
                    source: wgpu::ShaderSource::Wgsl(shader.source.into()),
                });
                self.ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(kernel.entry_point()),
                    layout: None,
                    module: &module,
                    entry_point: Some(kernel.entry_point()),
                    compilation_options: Default::default(),
                    cache: None,
                })
            })
            .clone()
    }

    /// The words of `held`, copied through a kept read-back buffer.
    fn read_back(&self, held: &Held) -> Result<Vec<u32>, GpuError> {
        let device = &self.ctx.device;
        let (staging, _) = self.take(Use::ReadBack, held.bytes);
        let mut enc = device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&held.buffer, 0, &staging, 0, held.bytes);
        self.ctx.queue.submit([enc.finish()]);
        self.ctx.traffic.read(held.bytes);
        let words = read_mapped_bytes(device, &staging, held.bytes);
        self.pool().give(Use::ReadBack, staging);
        words
    }
}

pub use crate::held::read_mapped;
use crate::held::read_mapped_bytes;

impl Runner for GpuRunner<'_> {
    fn max_binding_bytes(&self) -> u64 {
        self.ctx.max_binding_bytes()
    }

    fn name(&self) -> &'static str {
        "gpu"
    }

    fn run_keeping(&mut self, recording: &Recording<'_>) -> Result<Outputs, StageError> {
        let device = &self.ctx.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut run = Run::new(self);
        let result = recording.commands.iter().try_fold(Outputs::default(), |mut out, cmd| {
            if let Command::Keep { buf } = cmd {
                out.kept.push(run.keep(*buf)?);
            } else if let Some(words) = run.command(cmd)? {
                out.downloads.push(words);
            }
            Ok(out)
        });
        run.collect_timings();
        run.flush();
        run.finish();
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = validation.or(oom) {
            return Err(GpuError::Wgpu(e.to_string()).into());
        }
        result
    }
}

/// One run of a recording: the sizes of its buffers, those made so far (on first use, so that
/// a buffer every upload of which is kept on the device is never made), the uniforms of its
/// dispatches and the commands recorded since the last submit.
struct Run<'r, 'c> {
    runner: &'r GpuRunner<'c>,
    sizes: HashMap<BufId, u64>,
    bufs: HashMap<BufId, Held>,
    /// Buffers of the pool set aside during the run (given back at its end, when nothing
    /// recorded can still use them).
    spare: Vec<wgpu::Buffer>,
    uniforms: Vec<wgpu::Buffer>,
    encoder: Option<wgpu::CommandEncoder>,
    /// Where passes are timed: the timestamps' query set and the passes timed in it since it
    /// was last read (kernel, bytes bound).
    timer: Option<(wgpu::QuerySet, Vec<(&'static str, u64)>)>,
}

/// Passes timed in one query set before its timestamps are read.
const TIMED_PASSES: u32 = 256;

impl<'r, 'c> Run<'r, 'c> {
    fn new(runner: &'r GpuRunner<'c>) -> Self {
        Self {
            runner,
            sizes: HashMap::new(),
            bufs: HashMap::new(),
            spare: Vec::new(),
            uniforms: Vec::new(),
            encoder: None,
            timer: runner.ctx.timing().then(|| (timestamps::query_set(runner.ctx, TIMED_PASSES), Vec::new())),
        }
    }

    /// Reads the timestamps of the passes timed since the last read into the context's
    /// timings.
    fn collect_timings(&mut self) {
        let Some((set, passes)) =
            self.timer.as_mut().filter(|(_, p)| !p.is_empty()).map(|(s, p)| (s.clone(), std::mem::take(p)))
        else {
            return;
        };
        let ctx = self.runner.ctx;
        let enc = self.encoder();
        let staging = timestamps::resolve(&ctx.device, enc, &set, passes.len() as u32);
        self.flush();
        timestamps::read(ctx, &staging, &passes);
    }

    fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        let device = &self.runner.ctx.device;
        self.encoder.get_or_insert_with(|| device.create_command_encoder(&Default::default()))
    }

    /// Submits the commands recorded so far.
    fn flush(&mut self) {
        if let Some(enc) = self.encoder.take() {
            self.runner.ctx.queue.submit([enc.finish()]);
        }
    }

    /// Gives the run's buffers back to the pool (those kept on the device stay there).
    fn finish(&mut self) {
        let mut pool = self.runner.pool();
        for (_, held) in self.bufs.drain() {
            if !held.kept {
                pool.give(Use::Storage, held.buffer);
            }
        }
        for b in self.spare.drain(..) {
            pool.give(Use::Storage, b);
        }
        for b in self.uniforms.drain(..) {
            pool.give(Use::Uniform, b);
        }
    }

    /// Sets `buf`'s buffer aside (one of the pool's until the run ends).
    fn drop_buffer(&mut self, buf: BufId) {
        if let Some(old) = self.bufs.remove(&buf)
            && !old.kept
        {
            self.spare.push(old.buffer);
        }
    }

    /// `buf`'s buffer, made zero-filled from the pool on its first use.
    fn held(&mut self, buf: BufId) -> Result<&Held, StageError> {
        if !self.bufs.contains_key(&buf) {
            let bytes = *self.sizes.get(&buf).ok_or_else(|| missing(buf))?;
            let (buffer, reused) = self.runner.take(Use::Storage, bytes);
            if reused {
                // Zero-filled, as a new buffer is: cleared on the device, nothing uploaded.
                self.encoder().clear_buffer(&buffer, 0, Some(bytes));
            }
            self.bufs.insert(buf, Held { buffer, bytes, kept: false });
        }
        self.bufs.get(&buf).ok_or_else(|| missing(buf))
    }

    /// `buf`'s buffer, one of the run's own: a buffer kept on the device is never written.
    fn own(&mut self, buf: BufId) -> Result<&Held, StageError> {
        if self.bufs.get(&buf).is_some_and(|h| h.kept) {
            self.bufs.remove(&buf);
        }
        self.held(buf)
    }

    /// Hands `buf`'s buffer out of the run, left on the device (never given back to the pool).
    fn keep(&mut self, buf: BufId) -> Result<DeviceWords, StageError> {
        if self.bufs.get(&buf).is_some_and(|h| h.kept) {
            return Err(StageError::Input(format!("buffer {buf:?} holds columns kept on the device, not a result")));
        }
        self.held(buf)?;
        self.flush();
        let h = self.bufs.remove(&buf).ok_or_else(|| missing(buf))?;
        let ctx = self.runner.ctx;
        Ok(DeviceWords::Gpu(GpuWords {
            buffer: h.buffer,
            words: h.bytes / 4,
            device: ctx.device.clone(),
            queue: ctx.queue.clone(),
            traffic: ctx.traffic.clone(),
        }))
    }

    /// Carries out one command; a download's words.
    fn command(&mut self, cmd: &Command<'_>) -> Result<Option<Vec<u32>>, StageError> {
        let ctx = self.runner.ctx;
        match cmd {
            Command::Alloc { buf, words, .. } => {
                self.drop_buffer(*buf);
                self.sizes.insert(*buf, words * 4);
            }
            Command::Clear { buf } => {
                let fresh = !self.bufs.contains_key(buf) || self.bufs.get(buf).is_some_and(|h| h.kept);
                let h = self.own(*buf)?;
                let (buffer, bytes) = (h.buffer.clone(), h.bytes);
                if !fresh {
                    self.encoder().clear_buffer(&buffer, 0, Some(bytes));
                }
            }
            Command::Upload { buf, data, kept } => {
                let bytes = data.len() as u64 * 4;
                let room = *self.sizes.get(buf).ok_or_else(|| missing(*buf))?;
                if bytes > room {
                    return Err(StageError::Input(format!("upload of {} words into {room} bytes", data.len())));
                }
                if let Some(owner) = kept {
                    let bound = ctx.resident.lock().unwrap_or_else(std::sync::PoisonError::into_inner).bind(
                        &ctx.device,
                        &ctx.queue,
                        data,
                        owner,
                    );
                    if bound.uploaded {
                        ctx.traffic.upload(bytes);
                    }
                    self.drop_buffer(*buf);
                    self.bufs.insert(*buf, Held { buffer: bound.buffer, bytes: bytes.max(4), kept: true });
                    return Ok(None);
                }
                self.own(*buf)?;
                // A write lands before the next submit: submit recorded dispatches first so a
                // later chunk does not overwrite the data an earlier dispatch reads.
                self.flush();
                let h = self.held(*buf)?;
                if !data.is_empty() {
                    ctx.queue.write_buffer(&h.buffer, 0, bytemuck::cast_slice(data));
                    ctx.traffic.upload(bytes);
                }
            }
            Command::Dispatch { kernel, elements, params, bindings } => {
                self.dispatch(*kernel, *elements, params, bindings)?
            }
            Command::Download { buf } => {
                self.held(*buf)?;
                self.flush();
                let h = self.bufs.get(buf).ok_or_else(|| missing(*buf))?;
                return Ok(Some(self.runner.read_back(h)?));
            }
            Command::Keep { buf } => return Err(StageError::Input(format!("buffer {buf:?} kept out of order"))),
        }
        Ok(None)
    }

    fn dispatch(
        &mut self,
        kernel: Kernel,
        elements: u32,
        params: &[u32],
        bindings: &[(u32, BufId)],
    ) -> Result<(), StageError> {
        let ctx = self.runner.ctx;
        let pipeline = self.runner.pipeline(kernel);
        let (uniform, _) = self.runner.take(Use::Uniform, params.len() as u64 * 4);
        if !params.is_empty() {
            ctx.queue.write_buffer(&uniform, 0, bytemuck::cast_slice(params));
            ctx.traffic.upload(params.len() as u64 * 4);
        }
        for (_, id) in bindings {
            self.held(*id)?;
        }
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        for (binding, id) in bindings {
            let h = self.bufs.get(id).ok_or_else(|| missing(*id))?;
            entries.push(wgpu::BindGroupEntry { binding: *binding, resource: h.binding() });
        }
        let group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(kernel.entry_point()),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        self.uniforms.push(uniform);
        if self.timer.as_ref().is_some_and(|(_, p)| p.len() as u32 == TIMED_PASSES) {
            self.collect_timings();
        }
        let bound = bindings.iter().filter_map(|(_, id)| self.bufs.get(id)).map(|h| h.bytes).sum::<u64>();
        let timed = self.timer.as_mut().map(|(set, passes)| {
            passes.push((kernel.entry_point(), bound));
            (set.clone(), passes.len() as u32 - 1)
        });
        let mut pass = self.encoder().begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(kernel.entry_point()),
            timestamp_writes: timed.as_ref().map(|(set, k)| wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(2 * k),
                end_of_pass_write_index: Some(2 * k + 1),
            }),
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        let (x, y) = workgroups(elements);
        pass.dispatch_workgroups(x, y, 1);
        Ok(())
    }
}

fn missing(buf: BufId) -> StageError {
    StageError::Input(format!("buffer {buf:?} used before it was allocated"))
}
