//! Pictures kept where they were drawn: on a GPU device, a texture a window presents (moved and
//! magnified as gestures ask, with its overlays) without reading it back; on the CPU, pixels.
//! Reading a kept texture back (a screenshot, a PNG, the CPU's presenter) happens once, counted.

use std::sync::{Arc, OnceLock};

use exaviz_compute::gpu::{GpuContext, GpuError, Traffic};

use super::image::Image;

/// A picture drawn into a texture of a GPU device, kept there.
#[derive(Clone)]
pub struct DeviceImage {
    pub texture: wgpu::Texture,
    pub width: u32,
    pub height: u32,
    device: wgpu::Device,
    queue: wgpu::Queue,
    traffic: Arc<Traffic>,
    /// The pixels, once read back.
    read: Arc<OnceLock<Image>>,
}

impl std::fmt::Debug for DeviceImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceImage({}x{})", self.width, self.height)
    }
}

/// The same texture.
impl PartialEq for DeviceImage {
    fn eq(&self, other: &Self) -> bool {
        self.texture == other.texture
    }
}

impl DeviceImage {
    pub(crate) fn new(ctx: &GpuContext, texture: wgpu::Texture) -> Self {
        Self {
            width: texture.width(),
            height: texture.height(),
            texture,
            device: ctx.device.clone(),
            queue: ctx.queue.clone(),
            traffic: ctx.traffic.clone(),
            read: Arc::default(),
        }
    }

    /// Whether the texture is of `ctx`'s device (a presenter of another device reads it back).
    pub fn on(&self, ctx: &GpuContext) -> bool {
        self.device == ctx.device
    }

    /// The pixels, read back from the device the first time they are asked for.
    pub fn image(&self) -> Result<&Image, GpuError> {
        if let Some(image) = self.read.get() {
            return Ok(image);
        }
        let image = self.read_back()?;
        Ok(self.read.get_or_init(|| image))
    }

    fn read_back(&self) -> Result<Image, GpuError> {
        let (w, h) = (self.width, self.height);
        let row = (w * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("exaviz.kept.readback"),
            size: u64::from(row) * u64::from(h),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_texture_to_buffer(
            self.texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &staging,
                layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(row), rows_per_image: Some(h) },
            },
            wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        );
        self.queue.submit([enc.finish()]);
        self.traffic.read(staging.size());
        let words = exaviz_compute::gpu_runner::read_mapped(&self.device, &staging)?;
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        let mut pixels = vec![0u8; w as usize * h as usize * 4];
        for (y, dst) in pixels.chunks_mut(w as usize * 4).enumerate() {
            dst.copy_from_slice(&bytes[y * row as usize..][..w as usize * 4]);
        }
        Ok(Image { width: w, height: h, pixels })
    }
}

/// A picture as drawn: kept on a GPU device, or pixels in memory.
#[derive(Clone, Debug)]
pub enum Rendered {
    Device(DeviceImage),
    Host(Image),
}

impl Rendered {
    /// The pixels (read back once from a device).
    pub fn image(&self) -> Result<&Image, GpuError> {
        match self {
            Self::Device(d) => d.image(),
            Self::Host(image) => Ok(image),
        }
    }

    pub fn size(&self) -> (u32, u32) {
        match self {
            Self::Device(d) => (d.width, d.height),
            Self::Host(image) => (image.width, image.height),
        }
    }
}
