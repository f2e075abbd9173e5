//! The GPU runner: executes a [`Recording`] with wgpu compute passes.

use std::collections::HashMap;

use wgpu::util::DeviceExt;

use super::{BufId, Command, Kernel, Recording, Runner, StageError, workgroups};
use crate::gpu::{GpuContext, GpuError};

pub struct GpuRunner<'c> {
    ctx: &'c GpuContext,
}

impl<'c> GpuRunner<'c> {
    pub fn new(ctx: &'c GpuContext) -> Self {
        Self { ctx }
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

    fn read_back(&self, buf: &wgpu::Buffer) -> Result<Vec<u32>, GpuError> {
        let device = &self.ctx.device;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("exaviz.stage.readback"),
            size: buf.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buf, 0, &staging, 0, buf.size());
        self.ctx.queue.submit([enc.finish()]);
        read_mapped(device, &staging)
    }
}

/// Maps a MAP_READ buffer, waits, and copies its words out.
pub fn read_mapped(device: &wgpu::Device, staging: &wgpu::Buffer) -> Result<Vec<u32>, GpuError> {
    let slice = staging.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| GpuError::Wgpu(e.to_string()))?;
    rx.recv().map_err(|e| GpuError::Map(e.to_string()))?.map_err(|e| GpuError::Map(e.to_string()))?;
    let words = {
        let view = slice.get_mapped_range().map_err(|e| GpuError::Map(e.to_string()))?;
        bytemuck::cast_slice::<u8, u32>(&view).to_vec()
    };
    staging.unmap();
    Ok(words)
}

impl Runner for GpuRunner<'_> {
    fn max_binding_bytes(&self) -> u64 {
        self.ctx.max_binding_bytes()
    }

    fn name(&self) -> &'static str {
        "gpu"
    }

    fn run(&mut self, recording: &Recording<'_>) -> Result<Vec<Vec<u32>>, StageError> {
        let device = &self.ctx.device;
        let queue = &self.ctx.queue;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut bufs: HashMap<BufId, wgpu::Buffer> = HashMap::new();
        let mut downloads = Vec::new();
        let mut encoder: Option<wgpu::CommandEncoder> = None;
        let flush = |encoder: &mut Option<wgpu::CommandEncoder>| {
            if let Some(enc) = encoder.take() {
                queue.submit([enc.finish()]);
            }
        };
        let mut failure = None;
        for cmd in &recording.commands {
            match cmd {
                Command::Alloc { buf, words, label } => {
                    let b = device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(label),
                        size: words * 4,
                        usage: wgpu::BufferUsages::STORAGE
                            | wgpu::BufferUsages::COPY_DST
                            | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    });
                    bufs.insert(*buf, b);
                }
                Command::Clear { buf } => {
                    let b = bufs.get(buf).ok_or_else(|| missing(*buf))?;
                    encoder
                        .get_or_insert_with(|| device.create_command_encoder(&Default::default()))
                        .clear_buffer(b, 0, None);
                }
                Command::Upload { buf, data } => {
                    // A write lands before the next submit: submit recorded dispatches first so a
                    // later chunk does not overwrite the data an earlier dispatch reads.
                    flush(&mut encoder);
                    let b = bufs.get(buf).ok_or_else(|| missing(*buf))?;
                    if (data.len() as u64) * 4 > b.size() {
                        failure =
                            Some(StageError::Input(format!("upload of {} words into {} bytes", data.len(), b.size())));
                        break;
                    }
                    if !data.is_empty() {
                        queue.write_buffer(b, 0, bytemuck::cast_slice(data));
                    }
                }
                Command::Dispatch { kernel, elements, params, bindings } => {
                    let pipeline = self.pipeline(*kernel);
                    let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("exaviz.stage.params"),
                        contents: bytemuck::cast_slice(params),
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                    let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
                    for (binding, id) in bindings {
                        let b = bufs.get(id).ok_or_else(|| missing(*id))?;
                        entries.push(wgpu::BindGroupEntry { binding: *binding, resource: b.as_entire_binding() });
                    }
                    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some(kernel.entry_point()),
                        layout: &pipeline.get_bind_group_layout(0),
                        entries: &entries,
                    });
                    let enc = encoder.get_or_insert_with(|| device.create_command_encoder(&Default::default()));
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(kernel.entry_point()),
                        timestamp_writes: None,
                    });
                    pass.set_pipeline(&pipeline);
                    pass.set_bind_group(0, &group, &[]);
                    let (x, y) = workgroups(*elements);
                    pass.dispatch_workgroups(x, y, 1);
                }
                Command::Download { buf } => {
                    flush(&mut encoder);
                    let b = bufs.get(buf).ok_or_else(|| missing(*buf))?;
                    downloads.push(self.read_back(b)?);
                }
            }
        }
        flush(&mut encoder);
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = validation.or(oom) {
            return Err(GpuError::Wgpu(e.to_string()).into());
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(downloads),
        }
    }
}

fn missing(buf: BufId) -> StageError {
    StageError::Input(format!("buffer {buf:?} used before it was allocated"))
}
