//! Words a recording leaves where it ran ([`crate::Recording::keep`]): on a GPU device, for the
//! renderer or the next stage to bind there without reading them back; on the CPU runner, in
//! memory. Reading them back is possible (a tooltip's few words, a test) and counted.

use std::sync::Arc;

use crate::gpu::{Backend, GpuError, Traffic};

/// Words kept where the recording ran.
#[derive(Clone)]
pub enum DeviceWords {
    /// A storage buffer of a GPU device (`COPY_SRC`, so the renderer can copy it into a texture).
    Gpu(GpuWords),
    /// The CPU runner's words.
    Host(Arc<Vec<u32>>),
}

/// A storage buffer kept on its device, with what reading it back needs.
#[derive(Clone)]
pub struct GpuWords {
    pub buffer: wgpu::Buffer,
    /// Words of the buffer that hold the result (the buffer may be larger).
    pub words: u64,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) traffic: Arc<Traffic>,
}

impl std::fmt::Debug for DeviceWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Gpu(g) => write!(f, "DeviceWords::Gpu({} words)", g.words),
            Self::Host(w) => write!(f, "DeviceWords::Host({} words)", w.len()),
        }
    }
}

/// The same words: the same buffer, or the same memory.
impl PartialEq for DeviceWords {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Gpu(a), Self::Gpu(b)) => a.buffer == b.buffer && a.words == b.words,
            (Self::Host(a), Self::Host(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl DeviceWords {
    /// How many words.
    pub fn len(&self) -> u64 {
        match self {
            Self::Gpu(g) => g.words,
            Self::Host(w) => w.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the words are on a GPU device.
    pub fn on_device(&self) -> bool {
        matches!(self, Self::Gpu(_))
    }

    /// Words `range` (cut to the words held), read back from a device where they are there.
    pub fn read(&self, range: std::ops::Range<u64>) -> Result<Vec<u32>, GpuError> {
        Ok(self.read_within(range, None)?.unwrap_or_default())
    }

    /// [`DeviceWords::read`], or `None` where the device has not given them within `limit`
    /// (its queue busy with a computation): what a tooltip on the window's thread reads.
    pub fn read_within(
        &self,
        range: std::ops::Range<u64>,
        limit: Option<std::time::Duration>,
    ) -> Result<Option<Vec<u32>>, GpuError> {
        let range = range.start.min(self.len())..range.end.min(self.len());
        if range.is_empty() {
            return Ok(Some(Vec::new()));
        }
        match self {
            Self::Host(w) => Ok(Some(w[range.start as usize..range.end as usize].to_vec())),
            Self::Gpu(g) => {
                let bytes = (range.end - range.start) * 4;
                let staging = g.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("exaviz.held.readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut enc = g.device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&g.buffer, range.start * 4, &staging, 0, bytes);
                g.queue.submit([enc.finish()]);
                g.traffic.read(bytes);
                read_mapped_within(&g.device, &staging, bytes, limit)
            }
        }
    }

    /// Every word.
    pub fn read_all(&self) -> Result<Vec<u32>, GpuError> {
        self.read(0..self.len())
    }
}

impl Backend {
    /// `words` kept where this backend draws: uploaded once to a GPU device (counted), for the
    /// renderer to copy on the device at every picture; in memory on the CPU.
    pub fn keep_words(&self, words: Vec<u32>) -> DeviceWords {
        match self {
            Self::Gpu(ctx) => {
                let bytes = (words.len() as u64 * 4).max(4);
                let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("exaviz.kept"),
                    size: bytes,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                if !words.is_empty() {
                    ctx.queue.write_buffer(&buffer, 0, bytemuck::cast_slice(&words));
                    ctx.traffic.upload(words.len() as u64 * 4);
                }
                DeviceWords::Gpu(GpuWords {
                    buffer,
                    words: words.len() as u64,
                    device: ctx.device.clone(),
                    queue: ctx.queue.clone(),
                    traffic: ctx.traffic.clone(),
                })
            }
            Self::Cpu => DeviceWords::Host(std::sync::Arc::new(words)),
        }
    }
}

/// Maps a MAP_READ buffer, waits, and copies its words out.
pub fn read_mapped(device: &wgpu::Device, staging: &wgpu::Buffer) -> Result<Vec<u32>, GpuError> {
    read_mapped_bytes(device, staging, staging.size())
}

/// Maps the first `bytes` of a MAP_READ buffer, waits, and copies their words out.
pub(crate) fn read_mapped_bytes(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    bytes: u64,
) -> Result<Vec<u32>, GpuError> {
    read_mapped_within(device, staging, bytes, None)?.ok_or_else(|| GpuError::Map("not mapped".into()))
}

/// The first `bytes` of a MAP_READ buffer, once mapped; `None` where that takes longer than
/// `limit` (the buffer is left to the device).
fn read_mapped_within(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    bytes: u64,
    limit: Option<std::time::Duration>,
) -> Result<Option<Vec<u32>>, GpuError> {
    let started = std::time::Instant::now();
    let slice = staging.slice(..bytes);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    // Polled, never waited on: a wait holds a lock of the device that presenting a window's
    // frame takes exclusively, so a window sharing the device would freeze for as long as the
    // computation before the read runs. Polls 20 µs apart at first, at most 1 ms apart.
    let mut pause = std::time::Duration::from_micros(20);
    let mapped = loop {
        device.poll(wgpu::PollType::Poll).map_err(|e| GpuError::Wgpu(e.to_string()))?;
        match rx.try_recv() {
            Ok(r) => break r,
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                if limit.is_some_and(|l| started.elapsed() > l) {
                    return Ok(None);
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(GpuError::Map(e.to_string())),
        }
    };
    mapped.map_err(|e| GpuError::Map(e.to_string()))?;
    let words = {
        let view = slice.get_mapped_range().map_err(|e| GpuError::Map(e.to_string()))?;
        bytemuck::cast_slice::<u8, u32>(&view).to_vec()
    };
    staging.unmap();
    Ok(Some(words))
}
