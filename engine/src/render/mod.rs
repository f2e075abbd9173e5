//! The instanced renderer: a [`Scene`] of primitives (segments, rectangles, discs, glyphs) in
//! blend layers, drawn by the GPU renderer ([`gpu`]) into an offscreen texture or a window
//! surface, or by its CPU mirror ([`cpu`]) where no adapter exists. Both compute the same
//! analytic coverage per pixel (see `shaders/wgsl/render.wgsl`).

pub mod colormap;
pub mod cpu;
pub mod gpu;
pub mod image;
pub mod raster;
pub mod text;
pub mod tone;

pub use colormap::{ColorMap, Scale};
pub use image::{Image, write_atomic, write_png_atomic};
pub use raster::{Raster, RasterData, Shade};
pub use text::{Anchor, TextAtlas};
pub use tone::ToneMap;

/// One primitive, 64 bytes. Keep in sync with `InstanceIn` in `shaders/wgsl/render.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Instance {
    /// Segment start, rectangle min corner, disc centre, glyph top-left.
    pub a: [f32; 2],
    /// Segment end, rectangle max corner, glyph bottom-right (unused by discs).
    pub b: [f32; 2],
    /// Glyph: atlas texel of the top-left corner.
    pub uv_a: [f32; 2],
    pub uv_b: [f32; 2],
    /// Straight (not premultiplied) RGBA in 0..1.
    pub color: [f32; 4],
    /// Segment width or disc radius, in screen pixels.
    pub width: f32,
    /// `KIND_*`, optionally `| FLAG_SCREEN`.
    pub kind: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<Instance>() == 64);

pub const KIND_SEGMENT: u32 = 0;
pub const KIND_RECT: u32 = 1;
pub const KIND_DISC: u32 = 2;
pub const KIND_GLYPH: u32 = 3;
/// Placed in screen pixels: not moved by pan and zoom (legends, titles, labels).
pub const FLAG_SCREEN: u32 = 256;

/// How a layer's instances combine with what is below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Blend {
    /// Porter–Duff "over".
    Alpha,
    /// Colours add up (dense bundles brighten).
    Additive,
}

/// Instances drawn with one blend mode, in order, over the layer's raster if it has one.
#[derive(Clone, Debug)]
pub struct Layer {
    pub blend: Blend,
    /// A grid drawn as one textured quad ("over"), before the instances.
    pub raster: Option<Box<Raster>>,
    pub instances: Vec<Instance>,
}

/// Scene → screen transform (pan and zoom); screen-space instances ignore it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub scale: f32,
    pub offset: [f32; 2],
}

impl Default for View {
    fn default() -> Self {
        Self { scale: 1.0, offset: [0.0, 0.0] }
    }
}

impl View {
    /// Zooms by `factor` keeping the screen point `at` fixed.
    pub fn zoom_at(&mut self, factor: f32, at: [f32; 2]) {
        let factor = factor.clamp(0.01, 100.0);
        self.offset[0] = at[0] - (at[0] - self.offset[0]) * factor;
        self.offset[1] = at[1] - (at[1] - self.offset[1]) * factor;
        self.scale *= factor;
    }
}

/// Everything one picture needs: size, background, layers and the glyph atlas they use.
#[derive(Clone, Debug)]
pub struct Scene {
    pub width: u32,
    pub height: u32,
    /// Opaque background, RGB in 0..1.
    pub background: [f32; 3],
    pub layers: Vec<Layer>,
    pub atlas: TextAtlas,
}

impl Scene {
    pub fn new(width: u32, height: u32, background: [f32; 3]) -> Self {
        Self { width, height, background, layers: Vec::new(), atlas: TextAtlas::new() }
    }

    /// The current top layer if it has this blend mode, else a new one.
    pub fn layer(&mut self, blend: Blend) -> &mut Vec<Instance> {
        if self.layers.last().is_none_or(|l| l.blend != blend) {
            self.layers.push(Layer { blend, raster: None, instances: Vec::new() });
        }
        &mut self.layers.last_mut().expect("just pushed").instances
    }

    /// Adds a raster layer: `raster` over what is drawn so far, under what is drawn after.
    pub fn raster(&mut self, raster: Raster) {
        self.layers.push(Layer { blend: Blend::Alpha, raster: Some(Box::new(raster)), instances: Vec::new() });
    }

    pub fn instance_count(&self) -> usize {
        self.layers.iter().map(|l| l.instances.len()).sum()
    }

    pub fn segment(&mut self, blend: Blend, a: [f32; 2], b: [f32; 2], width: f32, color: [f32; 4], screen: bool) {
        let kind = KIND_SEGMENT | if screen { FLAG_SCREEN } else { 0 };
        self.layer(blend).push(Instance { a, b, color, width, kind, ..Instance::zeroed() });
    }

    pub fn rect(&mut self, min: [f32; 2], max: [f32; 2], color: [f32; 4], screen: bool) {
        let kind = KIND_RECT | if screen { FLAG_SCREEN } else { 0 };
        self.layer(Blend::Alpha).push(Instance { a: min, b: max, color, kind, ..Instance::zeroed() });
    }

    pub fn disc(&mut self, centre: [f32; 2], radius: f32, color: [f32; 4], screen: bool) {
        let kind = KIND_DISC | if screen { FLAG_SCREEN } else { 0 };
        self.layer(Blend::Alpha).push(Instance { a: centre, width: radius, color, kind, ..Instance::zeroed() });
    }

    /// Screen-space text; returns its advance width in pixels.
    pub fn text(&mut self, text: &str, at: [f32; 2], size_px: f32, anchor: Anchor, color: [f32; 4]) -> f32 {
        let (glyphs, width) = self.atlas.layout(text, at, size_px, anchor);
        let layer = self.layer(Blend::Alpha);
        for g in glyphs {
            layer.push(Instance {
                a: g.min,
                b: g.max,
                uv_a: g.uv,
                color,
                kind: KIND_GLYPH | FLAG_SCREEN,
                ..Instance::zeroed()
            });
        }
        width
    }

    /// Straight-alpha RGBA8 of the background.
    pub fn background_rgba8(&self) -> [u8; 4] {
        let c = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        [c(self.background[0]), c(self.background[1]), c(self.background[2]), 255]
    }
}

use bytemuck::Zeroable;

/// Renders a scene to RGBA8 on the backend given: the GPU renderer, or its CPU mirror.
pub fn render_scene(backend: &crate::Backend, scene: &Scene, view: View) -> Result<Image, crate::GpuError> {
    match backend {
        crate::Backend::Gpu(ctx) => gpu::GpuRenderer::new(&ctx.device).render_to_image(ctx, scene, view),
        crate::Backend::Cpu => Ok(cpu::render(scene, view)),
    }
}
