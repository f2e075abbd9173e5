//! The GPU renderer: one instanced draw per layer, into an offscreen texture (then an [`Image`],
//! in tiles when the picture exceeds the device's texture size) or into a window surface.

use std::collections::HashMap;

use exaviz_compute::gpu::{GpuContext, GpuError};
use wgpu::util::DeviceExt;

use super::raster::{Raster, RasterData, TABLE, ToneParams, colour_table};
use super::text::ATLAS_SIZE;
use super::{Blend, Image, Instance, Scene, View};

/// Uniforms of `render.wgsl` (`Globals`, 32 bytes). Keep in sync.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Globals {
    viewport: [f32; 2],
    scale: f32,
    _pad0: f32,
    offset: [f32; 2],
    origin: [f32; 2],
}
const _: () = assert!(size_of::<Globals>() == 32);

/// Uniforms of `raster.wgsl` (`RasterGlobals`, 80 bytes). Keep in sync.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct RasterGlobals {
    viewport: [f32; 2],
    scale: f32,
    screen: u32,
    offset: [f32; 2],
    origin: [f32; 2],
    rect: [f32; 4],
    size: [u32; 2],
    /// 0: colours; else the tone kind plus one.
    mode: u32,
    opacity: f32,
    max_value: f32,
    _pad: [f32; 3],
}
const _: () = assert!(size_of::<RasterGlobals>() == 80);

/// Offscreen format: linear 8-bit RGBA, matching the CPU renderer's arithmetic.
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

pub struct GpuRenderer {
    module: wgpu::ShaderModule,
    bind_layout: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
    pipelines: HashMap<(wgpu::TextureFormat, Blend), wgpu::RenderPipeline>,
    /// The glyphs of every scene drawn so far, in one atlas kept on the device: a scene's glyphs
    /// are found there (rasterised and uploaded where new), so a picture uploads only the
    /// glyphs no picture before it used.
    atlas: Option<(wgpu::Texture, super::TextAtlas)>,
    raster_module: wgpu::ShaderModule,
    raster_bind_layout: wgpu::BindGroupLayout,
    raster_layout: wgpu::PipelineLayout,
    raster_pipelines: HashMap<wgpu::TextureFormat, wgpu::RenderPipeline>,
    /// The instances of the last pictures, in chunks kept on the device.
    chunks: InstanceChunks,
    /// The cells of the last pictures' rasters made on the host, kept on the device by content.
    rasters: KeptRasters,
    /// Render passes recorded with timestamps (`bench-interact --timings`), read once submitted.
    timed: Vec<exaviz_compute::TimedPass>,
}

/// Instances kept on the device in chunks cut where their content says (after an instance
/// whose hash ends in five zero bits, 32 instances on average, from 8 to 256), so that a
/// picture that shares most of its instances with the one before (a pan: the same labels and
/// legend, new tick labels) uploads only the chunks it changed: an inserted or removed instance
/// changes the chunk it falls in, not those after it.
#[derive(Default)]
struct InstanceChunks {
    kept: HashMap<u64, (wgpu::Buffer, u64)>,
    /// Pictures drawn so far (a chunk unused for [`KEPT_PICTURES`] of them goes).
    drawn: u64,
}

/// Pictures a chunk of instances is kept for after its last use (a gesture draws two: the
/// preview and the picture), within [`KEPT_CHUNK_BYTES`].
const KEPT_PICTURES: u64 = 64;
/// Bytes of instance chunks kept at most (the least recently used go first).
const KEPT_CHUNK_BYTES: u64 = 8 << 20;

fn instance_hash(i: &Instance) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytemuck::bytes_of(i).hash(&mut h);
    h.finish()
}

impl InstanceChunks {
    /// `all` in chunks (ranges of `all`, each with its buffer), uploading the chunks not kept.
    fn buffers(&mut self, ctx: &GpuContext, all: &[Instance]) -> Vec<(std::ops::Range<u32>, wgpu::Buffer)> {
        self.drawn += 1;
        let mut out = Vec::new();
        let mut from = 0usize;
        let mut key = 0xcbf2_9ce4_8422_2325u64;
        for (k, i) in all.iter().enumerate() {
            let h = instance_hash(i);
            key = (key ^ h).wrapping_mul(0x0100_0000_01b3).rotate_left(5);
            let len = k + 1 - from;
            if (h & 31 == 0 && len >= 8) || len == 256 || k + 1 == all.len() {
                let chunk = &all[from..=k];
                let whole = key ^ (len as u64);
                let drawn = self.drawn;
                let (buffer, used) = self.kept.entry(whole).or_insert_with(|| {
                    ctx.traffic.upload(size_of_val(chunk) as u64);
                    let buffer = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("exaviz.render.instances"),
                        contents: bytemuck::cast_slice(chunk),
                        usage: wgpu::BufferUsages::VERTEX,
                    });
                    (buffer, drawn)
                });
                *used = drawn;
                out.push((from as u32..k as u32 + 1, buffer.clone()));
                from = k + 1;
                key = 0xcbf2_9ce4_8422_2325;
            }
        }
        evict(&mut self.kept, (self.drawn, None), (KEPT_PICTURES, KEPT_CHUNK_BYTES), wgpu::Buffer::size);
        out
    }
}

/// The textures of rasters whose cells were made on the host, kept on the device by their
/// content (format, size and cells), so that a picture drawn again with the same cells (a pan or
/// a zoom of a chord diagram's density, moved by the view, not redrawn) uploads none of them.
#[derive(Default)]
struct KeptRasters {
    kept: HashMap<u64, (wgpu::Texture, u64)>,
    /// Rasters drawn so far (a texture unused for [`KEPT_RASTERS`] of them goes).
    drawn: u64,
}

/// Rasters a kept texture outlives its last use by (a gesture draws two pictures, each a few
/// rasters), within [`KEPT_RASTER_BYTES`].
const KEPT_RASTERS: u64 = 32;
/// Bytes of raster textures kept at most (the least recently used go first).
const KEPT_RASTER_BYTES: u64 = 96 << 20;

/// Drops from `kept` (each entry with the draw it was last used in) what no draw of the last
/// `most_draws` used, then the least recently used while the rest hold more than `most_bytes`
/// (`size` bytes each), never `spare`, the entry just used.
fn evict<T>(
    kept: &mut HashMap<u64, (T, u64)>,
    (drawn, spare): (u64, Option<u64>),
    (most_draws, most_bytes): (u64, u64),
    size: impl Fn(&T) -> u64,
) {
    kept.retain(|_, (_, used)| drawn - *used < most_draws);
    let mut bytes: u64 = kept.values().map(|(t, _)| size(t)).sum();
    while bytes > most_bytes {
        let Some((&oldest, _)) = kept.iter().filter(|(k, _)| Some(**k) != spare).min_by_key(|(_, (_, used))| *used)
        else {
            break;
        };
        if let Some((t, _)) = kept.remove(&oldest) {
            bytes -= size(&t);
        }
    }
}

/// A key of `cells` in `format` of `dims`: SipHash of 256 KiB blocks, in parallel, then of the
/// blocks' hashes (two different pictures share one with odds of 2^-64).
fn cells_key(format: wgpu::TextureFormat, dims: (u32, u32), cells: &[u8]) -> u64 {
    use rayon::prelude::*;
    use std::hash::{Hash, Hasher};
    let blocks: Vec<u64> = cells
        .par_chunks(256 << 10)
        .map(|b| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            b.hash(&mut h);
            h.finish()
        })
        .collect();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (format!("{format:?}"), dims, cells.len(), blocks).hash(&mut h);
    h.finish()
}

impl KeptRasters {
    /// The texture of `cells` (`format`, `dims`), uploaded where no kept texture holds them.
    fn view(
        &mut self,
        ctx: &GpuContext,
        format: wgpu::TextureFormat,
        dims: (u32, u32),
        cells: &[u8],
    ) -> wgpu::TextureView {
        self.drawn += 1;
        let key = cells_key(format, dims, cells);
        let drawn = self.drawn;
        let (texture, used) = self.kept.entry(key).or_insert_with(|| {
            ctx.traffic.upload(cells.len() as u64);
            let texture = ctx.device.create_texture_with_data(
                &ctx.queue,
                &wgpu::TextureDescriptor {
                    label: Some("exaviz.raster.cells"),
                    size: wgpu::Extent3d { width: dims.0, height: dims.1, depth_or_array_layers: 1 },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                    view_formats: &[],
                },
                wgpu::util::TextureDataOrder::LayerMajor,
                cells,
            );
            (texture, drawn)
        });
        *used = drawn;
        let view = texture.create_view(&Default::default());
        let size = |t: &wgpu::Texture| {
            let block = t.format().block_copy_size(None).unwrap_or(4);
            u64::from(t.width()) * u64::from(t.height()) * u64::from(block)
        };
        evict(&mut self.kept, (drawn, Some(key)), (KEPT_RASTERS, KEPT_RASTER_BYTES), size);
        view
    }
}

/// A pipeline drawing six vertices per quad from `module`'s `vs_main` and `fs_main` into
/// `format`, blended as `blend` says (premultiplied colours: "over" or added).
fn quad_pipeline(
    device: &wgpu::Device,
    label: &str,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    buffers: &[Option<wgpu::VertexBufferLayout<'_>>],
    format: wgpu::TextureFormat,
    blend: Blend,
) -> wgpu::RenderPipeline {
    let component = wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::One,
        dst_factor: match blend {
            Blend::Alpha => wgpu::BlendFactor::OneMinusSrcAlpha,
            Blend::Additive => wgpu::BlendFactor::One,
        },
        operation: wgpu::BlendOperation::Add,
    };
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some("vs_main"),
            compilation_options: Default::default(),
            buffers,
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: None,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some("fs_main"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format,
                blend: Some(wgpu::BlendState { color: component, alpha: component }),
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// The uniform buffer at binding 0, read by both stages.
fn uniform_entry() -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A texture binding read with `textureLoad` (no sampler).
fn texture_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: false },
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    }
}

/// A 2-D texture with `data` (rows of `width` texels of `format`).
fn texture_with(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    format: wgpu::TextureFormat,
    (width, height): (u32, u32),
    data: &[u8],
) -> wgpu::TextureView {
    device
        .create_texture_with_data(
            queue,
            &wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            },
            wgpu::util::TextureDataOrder::LayerMajor,
            data,
        )
        .create_view(&Default::default())
}

/// The texture of a raster's cells: kept on the device or uploaded ([`KeptRasters`]), or copied
/// on the device from a stage's buffer.
fn cells_view(
    ctx: &GpuContext,
    kept: &mut KeptRasters,
    encoder: &mut wgpu::CommandEncoder,
    raster: &Raster,
) -> wgpu::TextureView {
    let device = &ctx.device;
    let dims = (raster.width, raster.height);
    match &raster.data {
        RasterData::Rgba(p) => kept.view(ctx, wgpu::TextureFormat::Rgba8Unorm, dims, p.as_flattened()),
        RasterData::Values { values, .. } => {
            kept.view(ctx, wgpu::TextureFormat::R32Float, dims, bytemuck::cast_slice(values))
        }
        RasterData::Device { words: exaviz_compute::DeviceWords::Gpu(g), stride } => {
            // Copied on the device from the stage's buffer: nothing crosses the bus.
            let texture = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("exaviz.raster.cells"),
                size: wgpu::Extent3d { width: dims.0, height: dims.1, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba8Unorm,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            encoder.copy_buffer_to_texture(
                wgpu::TexelCopyBufferInfo {
                    buffer: &g.buffer,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(stride * 4),
                        rows_per_image: Some(dims.1),
                    },
                },
                texture.as_image_copy(),
                wgpu::Extent3d { width: dims.0, height: dims.1, depth_or_array_layers: 1 },
            );
            texture.create_view(&Default::default())
        }
        RasterData::Texture(kept) => kept.texture.create_view(&Default::default()),
        RasterData::Device { .. } => {
            let host = raster.on_host();
            let RasterData::Rgba(p) = &host.data else { unreachable!("read as colours") };
            kept.view(ctx, wgpu::TextureFormat::Rgba8Unorm, dims, p.as_flattened())
        }
    }
}

/// Every layer's instances in order, glyphs drawn from where the kept atlas holds them.
fn instances_in_kept_atlas(
    drawn: &[std::borrow::Cow<'_, [Instance]>],
    glyphs: &super::text::GlyphMap,
) -> Vec<Instance> {
    drawn
        .iter()
        .flat_map(|d| d.iter().copied())
        .map(|mut i| {
            if i.kind & 255 == super::KIND_GLYPH
                && let Some(&(x, y)) = glyphs.get(&(i.uv_a[0] as u32, i.uv_a[1] as u32))
            {
                i.uv_a = [x as f32, y as f32];
            }
            i
        })
        .collect()
}

const ATTRIBUTES: [wgpu::VertexAttribute; 7] = wgpu::vertex_attr_array![
    0 => Float32x2, 1 => Float32x2, 2 => Float32x2, 3 => Float32x2, 4 => Float32x4, 5 => Float32, 6 => Uint32
];

impl GpuRenderer {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("exaviz.render"),
            source: wgpu::ShaderSource::Wgsl(crate::shaders::RENDER.source.into()),
        });
        let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("exaviz.render.globals"),
            entries: &[uniform_entry(), texture_entry(1)],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("exaviz.render.layout"),
            bind_group_layouts: &[Some(&bind_layout)],
            immediate_size: 0,
        });
        let raster_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("exaviz.raster"),
            source: wgpu::ShaderSource::Wgsl(crate::shaders::RASTER.source.into()),
        });
        let raster_bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("exaviz.raster.globals"),
            entries: &[uniform_entry(), texture_entry(1), texture_entry(2), texture_entry(3)],
        });
        let raster_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("exaviz.raster.layout"),
            bind_group_layouts: &[Some(&raster_bind_layout)],
            immediate_size: 0,
        });
        Self {
            module,
            bind_layout,
            layout,
            pipelines: HashMap::new(),
            atlas: None,
            raster_module,
            raster_bind_layout,
            raster_layout,
            raster_pipelines: HashMap::new(),
            chunks: InstanceChunks::default(),
            rasters: KeptRasters::default(),
            timed: Vec::new(),
        }
    }

    /// Reads the timestamps of the render passes submitted.
    fn read_timed(&mut self, ctx: &GpuContext) {
        for t in self.timed.drain(..) {
            t.read(ctx);
        }
    }

    fn raster_pipeline(&mut self, device: &wgpu::Device, format: wgpu::TextureFormat) -> wgpu::RenderPipeline {
        let (module, layout) = (&self.raster_module, &self.raster_layout);
        self.raster_pipelines
            .entry(format)
            .or_insert_with(|| quad_pipeline(device, "exaviz.raster", module, layout, &[], format, Blend::Alpha))
            .clone()
    }

    /// The bind group drawing `raster` (its cells, colour table and quantiles uploaded).
    #[allow(clippy::too_many_arguments, reason = "the raster's placement in the target")]
    fn raster_group(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        raster: &Raster,
        tone: Option<&ToneParams>,
        view: View,
        size: [u32; 2],
        origin: [u32; 2],
    ) -> wgpu::BindGroup {
        let (map, opacity) = match &raster.data {
            RasterData::Values { shade, .. } => (shade.map, shade.opacity),
            _ => (super::ColorMap::Viridis, 1.0),
        };
        let globals = RasterGlobals {
            viewport: [size[0] as f32, size[1] as f32],
            scale: view.scale,
            screen: u32::from(raster.screen),
            offset: view.offset,
            origin: [origin[0] as f32, origin[1] as f32],
            rect: raster.rect,
            size: [raster.width, raster.height],
            mode: tone.map_or(0, |t| t.kind + 1),
            opacity,
            max_value: tone.map_or(0.0, |t| t.max),
            _pad: [0.0; 3],
        };
        let (device, queue) = (&ctx.device, &ctx.queue);
        // The cells are counted where they are uploaded (not where a kept texture holds them).
        ctx.traffic.upload(size_of::<RasterGlobals>() as u64 + (TABLE * 4 * 2) as u64);
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("exaviz.raster.globals"),
            contents: bytemuck::bytes_of(&globals),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let cells = cells_view(ctx, &mut self.rasters, encoder, raster);
        let table = colour_table(map);
        let table = texture_with(
            device,
            queue,
            "exaviz.raster.table",
            wgpu::TextureFormat::Rgba8Unorm,
            (TABLE as u32, 1),
            table.as_flattened(),
        );
        let mut quantiles = tone.map(|t| t.quantiles.clone()).unwrap_or_default();
        quantiles.resize(TABLE, 0.0);
        let quantiles = texture_with(
            device,
            queue,
            "exaviz.raster.quantiles",
            wgpu::TextureFormat::R32Float,
            (TABLE as u32, 1),
            bytemuck::cast_slice(&quantiles),
        );
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("exaviz.raster.globals"),
            layout: &self.raster_bind_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&cells) },
                wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(&table) },
                wgpu::BindGroupEntry { binding: 3, resource: wgpu::BindingResource::TextureView(&quantiles) },
            ],
        })
    }

    fn pipeline(&mut self, device: &wgpu::Device, format: wgpu::TextureFormat, blend: Blend) -> wgpu::RenderPipeline {
        let (module, layout) = (&self.module, &self.layout);
        let label = match blend {
            Blend::Alpha => "exaviz.render.alpha",
            Blend::Additive => "exaviz.render.additive",
        };
        let instances = [Some(wgpu::VertexBufferLayout {
            array_stride: size_of::<Instance>() as u64,
            step_mode: wgpu::VertexStepMode::Instance,
            attributes: &ATTRIBUTES,
        })];
        self.pipelines
            .entry((format, blend))
            .or_insert_with(|| quad_pipeline(device, label, module, layout, &instances, format, blend))
            .clone()
    }

    /// The kept atlas holding every glyph of `scene` (those new to it added and uploaded), and
    /// where each of the scene's glyphs is in it (from the scene atlas' texel).
    fn atlas_view(&mut self, ctx: &GpuContext, scene: &Scene) -> (wgpu::TextureView, super::text::GlyphMap) {
        let (device, queue) = (&ctx.device, &ctx.queue);
        let fresh = |text: super::TextAtlas| {
            let tex = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("exaviz.render.atlas"),
                size: wgpu::Extent3d { width: ATLAS_SIZE, height: ATLAS_SIZE, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::R8Unorm,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            (tex, text)
        };
        let kept = self.atlas.get_or_insert_with(|| fresh(super::TextAtlas::new()));
        let mut map = kept.1.adopt(&scene.atlas);
        if map.len() < scene.atlas.glyphs() {
            // The kept atlas is full: a new one, with this scene's glyphs.
            let (tex, mut text) = fresh(super::TextAtlas::new());
            map = text.adopt(&scene.atlas);
            self.atlas = Some((tex, text));
        }
        let (tex, text) = self.atlas.as_mut().expect("an atlas kept");
        if let Some([x0, y0, x1, y1]) = text.take_dirty() {
            let (w, h) = (x1 - x0, y1 - y0);
            let mut texels = Vec::with_capacity((w * h) as usize);
            for y in y0..y1 {
                let row = (y * ATLAS_SIZE + x0) as usize;
                texels.extend_from_slice(&text.pixels[row..row + w as usize]);
            }
            ctx.traffic.upload(texels.len() as u64);
            queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: tex,
                    mip_level: 0,
                    origin: wgpu::Origin3d { x: x0, y: y0, z: 0 },
                    aspect: wgpu::TextureAspect::All,
                },
                &texels,
                wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w), rows_per_image: Some(h) },
                wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
            );
        }
        (tex.create_view(&Default::default()), map)
    }

    /// Records the scene's draws into `target` (cleared to the background first), each layer's
    /// instances under `view` given (a tiled render tessellates its paths once for all tiles).
    /// `size` is the target's size and `origin` its top-left within the whole picture.
    #[allow(clippy::too_many_arguments, reason = "a draw call needs its target, format, size and placement")]
    fn draw_layers(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        scene: &Scene,
        view: View,
        target: &wgpu::TextureView,
        format: wgpu::TextureFormat,
        size: [u32; 2],
        origin: [u32; 2],
        drawn: &[std::borrow::Cow<'_, [Instance]>],
    ) {
        let globals = Globals {
            viewport: [size[0] as f32, size[1] as f32],
            scale: view.scale,
            _pad0: 0.0,
            offset: view.offset,
            origin: [origin[0] as f32, origin[1] as f32],
        };
        let device = &ctx.device;
        ctx.traffic.upload(size_of::<Globals>() as u64);
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("exaviz.render.globals"),
            contents: bytemuck::bytes_of(&globals),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let (atlas, glyphs) = self.atlas_view(ctx, scene);
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("exaviz.render.globals"),
            layout: &self.bind_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&atlas) },
            ],
        });
        let all = instances_in_kept_atlas(drawn, &glyphs);
        let chunks = self.chunks.buffers(ctx, &all);
        let pipelines: Vec<_> = scene.layers.iter().map(|l| self.pipeline(device, format, l.blend)).collect();
        let max_side = device.limits().max_texture_dimension_2d;
        let rasters: Vec<Vec<wgpu::BindGroup>> = scene
            .layers
            .iter()
            .map(|l| {
                let Some(whole) = l.raster.as_deref() else { return Vec::new() };
                let tone = whole.tone_params();
                if whole.width <= max_side && whole.height <= max_side {
                    return vec![self.raster_group(ctx, encoder, whole, tone.as_ref(), view, size, origin)];
                }
                let pieces = whole.split(max_side);
                pieces.iter().map(|r| self.raster_group(ctx, encoder, r, tone.as_ref(), view, size, origin)).collect()
            })
            .collect();
        let raster_pipeline = rasters.iter().any(|r| !r.is_empty()).then(|| self.raster_pipeline(device, format));
        let bg = scene.background_rgba8();
        // Timed where asked: what it binds is at least its instances and its target.
        let bound = all.len() as u64 * size_of::<Instance>() as u64 + u64::from(size[0]) * u64::from(size[1]) * 4;
        let timer = exaviz_compute::PassTimer::new(ctx, "render", bound);
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("exaviz.render.pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color {
                        r: f64::from(bg[0]) / 255.0,
                        g: f64::from(bg[1]) / 255.0,
                        b: f64::from(bg[2]) / 255.0,
                        a: 1.0,
                    }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: timer.as_ref().map(exaviz_compute::PassTimer::render_writes),
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let mut start = 0u32;
        for (((layer, pipeline), raster), drawn) in scene.layers.iter().zip(&pipelines).zip(&rasters).zip(drawn) {
            let [x0, y0, x1, y1] = layer.clip_pixels(view, origin, size).unwrap_or([0, 0, size[0], size[1]]);
            if x1 <= x0 || y1 <= y0 {
                start += drawn.len() as u32;
                continue;
            }
            pass.set_scissor_rect(x0, y0, x1 - x0, y1 - y0);
            if let Some(raster_pipeline) = &raster_pipeline {
                for piece in raster {
                    pass.set_pipeline(raster_pipeline);
                    pass.set_bind_group(0, piece, &[]);
                    pass.draw(0..6, 0..1);
                }
            }
            let end = start + drawn.len() as u32;
            if end > start {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &group, &[]);
                // The layer's instances from each kept chunk holding some of them.
                for (range, buffer) in chunks.iter().filter(|(r, _)| r.start < end && r.end > start) {
                    let (a, b) = (start.max(range.start), end.min(range.end));
                    pass.set_vertex_buffer(0, buffer.slice(..));
                    pass.draw(0..6, a - range.start..b - range.start);
                }
            }
            start = end;
        }
        drop(pass);
        if let Some(t) = timer {
            self.timed.push(t.resolve(device, encoder));
        }
    }

    /// Renders the scene into a texture of the device (no larger than the device allows), kept
    /// there: nothing is read back.
    pub fn render_to_texture(
        &mut self,
        ctx: &GpuContext,
        scene: &Scene,
        view: View,
    ) -> Result<wgpu::Texture, GpuError> {
        let device = &ctx.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("exaviz.render.kept"),
            size: wgpu::Extent3d { width: scene.width, height: scene.height, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: OFFSCREEN_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let target = texture.create_view(&Default::default());
        self.draw_into(ctx, scene, view, &target, OFFSCREEN_FORMAT)?;
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        Ok(texture)
    }

    /// Draws the whole scene into `target` (of `format`, the scene's size: a window's surface
    /// texture), cleared to the scene's background first, and submits it.
    pub fn draw_into(
        &mut self,
        ctx: &GpuContext,
        scene: &Scene,
        view: View,
        target: &wgpu::TextureView,
        format: wgpu::TextureFormat,
    ) -> Result<(), GpuError> {
        let drawn: Vec<_> = scene.layers.iter().map(|l| l.drawn(view)).collect();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let size = [scene.width, scene.height];
        self.draw_layers(ctx, &mut enc, scene, view, target, format, size, [0, 0], &drawn);
        ctx.queue.submit([enc.finish()]);
        self.read_timed(ctx);
        Ok(())
    }

    /// Renders the scene offscreen and reads it back, in tiles no larger than the device allows.
    pub fn render_to_image(&mut self, ctx: &GpuContext, scene: &Scene, view: View) -> Result<Image, GpuError> {
        let tile = ctx.limits.max_texture_dimension_2d.clamp(256, 4096);
        self.render_tiled(ctx, scene, view, tile)
    }

    /// Renders in square tiles of `tile` pixels, each drawn offscreen and copied into place.
    pub fn render_tiled(&mut self, ctx: &GpuContext, scene: &Scene, view: View, tile: u32) -> Result<Image, GpuError> {
        self.render_region(ctx, scene, view, [0, 0], [scene.width, scene.height], tile)
    }

    /// Renders the part of the picture at `origin` of `size` pixels, in square tiles of `tile`
    /// pixels (a wall's tile is the same pixels as the whole picture's there).
    pub fn render_region(
        &mut self,
        ctx: &GpuContext,
        scene: &Scene,
        view: View,
        origin: [u32; 2],
        size: [u32; 2],
        tile: u32,
    ) -> Result<Image, GpuError> {
        let (device, queue) = (&ctx.device, &ctx.queue);
        let tile = tile.max(1);
        let (w, h) = (size[0], size[1]);
        let mut pixels = vec![0u8; w as usize * h as usize * 4];
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let drawn: Vec<_> = scene.layers.iter().map(|l| l.drawn(view)).collect();
        for ty in (0..h).step_by(tile as usize) {
            for tx in (0..w).step_by(tile as usize) {
                let (tw, th) = (tile.min(w - tx), tile.min(h - ty));
                let texture = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("exaviz.render.offscreen"),
                    size: wgpu::Extent3d { width: tw, height: th, depth_or_array_layers: 1 },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: OFFSCREEN_FORMAT,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                });
                let target = texture.create_view(&Default::default());
                let mut enc = device.create_command_encoder(&Default::default());
                let (format, at) = (OFFSCREEN_FORMAT, [origin[0] + tx, origin[1] + ty]);
                self.draw_layers(ctx, &mut enc, scene, view, &target, format, [tw, th], at, &drawn);
                let row = (tw * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
                let staging = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("exaviz.render.readback"),
                    size: u64::from(row) * u64::from(th),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                enc.copy_texture_to_buffer(
                    texture.as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: &staging,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(row),
                            rows_per_image: Some(th),
                        },
                    },
                    wgpu::Extent3d { width: tw, height: th, depth_or_array_layers: 1 },
                );
                queue.submit([enc.finish()]);
                self.read_timed(ctx);
                ctx.traffic.read(staging.size());
                let words = exaviz_compute::gpu_runner::read_mapped(device, &staging)?;
                let bytes: &[u8] = bytemuck::cast_slice(&words);
                for y in 0..th as usize {
                    let src = &bytes[y * row as usize..][..tw as usize * 4];
                    let dst = ((ty as usize + y) * w as usize + tx as usize) * 4;
                    pixels[dst..dst + tw as usize * 4].copy_from_slice(src);
                }
            }
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        Ok(Image { width: w, height: h, pixels })
    }
}
