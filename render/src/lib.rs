//! The instanced renderer: a [`Scene`] of primitives (segments, rectangles, discs, glyphs and
//! the triangles of stroked paths) in blend layers, drawn by the GPU renderer ([`gpu`]) into an offscreen texture or a window
//! surface, or by its CPU mirror ([`cpu`]) where no adapter exists. Both compute the same
//! analytic coverage per pixel (see `render.wgsl` beside [`gpu`]).
//!
//! Beside it, what turns a model into geometry before a view composes a scene: layouts
//! ([`layout`]: orderings and embeddings of a torus, hierarchies, the routing of message
//! lines), edge bundling ([`bundling`], over the compute stages), colour maps and tone maps,
//! text, PNG output and the tiles of a powerwall ([`wall`]). It knows no view, no file format
//! and no window.

pub mod bundling;
pub mod colormap;
pub mod cpu;
pub mod gpu;
pub mod image;
pub mod kept;
pub mod layout;
pub mod outline;
pub mod raster;
pub mod shaders;
pub mod stroke;
pub mod text;
pub mod tone;
pub mod wall;

pub use colormap::{ColorMap, Scale};
pub use image::{Image, png_bytes, write_atomic, write_png_atomic};
pub use kept::{DeviceImage, Rendered};
pub use outline::{Outline, OutlineEntry, OutlineRow};
pub use raster::{Raster, RasterData, Shade};
pub use text::{Anchor, TextAtlas};
pub use tone::ToneMap;

/// One primitive, 64 bytes. Keep in sync with `InstanceIn` in `render.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Instance {
    /// Segment start, rectangle min corner, disc centre, glyph top-left, triangle corner.
    pub a: [f32; 2],
    /// Segment end, rectangle max corner, glyph bottom-right, triangle corner (unused by discs).
    pub b: [f32; 2],
    /// Glyph: atlas texel of the top-left corner. Triangle, quadrilateral: the third corner.
    pub uv_a: [f32; 2],
    /// Quadrilateral: the fourth corner.
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
/// One triangle of a tessellated path ([`Scene::stroke`]): its coverage is the share of
/// [`SAMPLES`] points per pixel inside it, with ties on an edge going to exactly one of the two
/// triangles that share it, so the triangles of a path add up to the path's coverage once.
pub const KIND_TRIANGLE: u32 = 4;
/// A convex quadrilateral of a tessellated path (corners `a`, `b`, `uv_a`, `uv_b` in order),
/// covered as a triangle is.
pub const KIND_QUAD: u32 = 5;
/// Sample points per pixel of triangles (an n-rooks pattern: every row and column used once).
pub const SAMPLES: u32 = 16;
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
    /// Only pixels inside this rectangle `[x0, y0, x1, y1]` (scene pixels, moved by pan and
    /// zoom like the scene) are drawn: a placed panel stays inside its place.
    pub clip: Option<[f32; 4]>,
    /// Stroked paths ([`Scene::stroke`]): a layer with paths has no instances of its own; its
    /// paths are tessellated into triangles when it is drawn.
    pub paths: Option<Box<stroke::Paths>>,
}

impl Layer {
    /// What both renderers draw of this layer under `view`: its instances, or its paths'
    /// triangles.
    pub fn drawn(&self, view: View) -> std::borrow::Cow<'_, [Instance]> {
        match &self.paths {
            Some(paths) => std::borrow::Cow::Owned(paths.triangles(view)),
            None => std::borrow::Cow::Borrowed(&self.instances),
        }
    }

    /// The layer's clip as whole target pixels `[x0, y0, x1, y1]` (exclusive ends) under `view`,
    /// for a target of `size` at `origin` in the picture; `None` draws everywhere. Both
    /// renderers clip with this one rectangle.
    pub fn clip_pixels(&self, view: View, origin: [u32; 2], size: [u32; 2]) -> Option<[u32; 4]> {
        let [x0, y0, x1, y1] = self.clip?;
        let t = |v: f32, o: f32, k: usize| (v * view.scale + view.offset[k] - o).round();
        let (ox, oy) = (origin[0] as f32, origin[1] as f32);
        let c = |v: f32, max: u32| v.clamp(0.0, max as f32) as u32;
        let (a, b) = (c(t(x0, ox, 0), size[0]), c(t(x1, ox, 0), size[0]));
        let (d, e) = (c(t(y0, oy, 1), size[1]), c(t(y1, oy, 1), size[1]));
        Some([a, d, b.max(a), e.max(d)])
    }
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
    /// Every text drawn, with the box its glyphs cover `[x0, y0, x1, y1]` (picture pixels, as
    /// drawn unzoomed): what tests of legends and labels check for overlaps.
    pub labels: Vec<Label>,
    /// What the picture shows, for programs ([`Outline`]): its rows and legend by name.
    pub outline: Outline,
}

/// One text of a scene and the box its glyphs cover.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub text: String,
    pub rect: [f32; 4],
}

impl Scene {
    pub fn new(width: u32, height: u32, background: [f32; 3]) -> Self {
        Self {
            width,
            height,
            background,
            layers: Vec::new(),
            atlas: TextAtlas::new(),
            labels: Vec::new(),
            outline: Outline::default(),
        }
    }

    /// The current top layer if it has this blend mode, else a new one.
    pub fn layer(&mut self, blend: Blend) -> &mut Vec<Instance> {
        if self.layers.last().is_none_or(|l| l.blend != blend || l.clip.is_some() || l.paths.is_some()) {
            self.layers.push(Layer { blend, raster: None, instances: Vec::new(), clip: None, paths: None });
        }
        &mut self.layers.last_mut().expect("just pushed").instances
    }

    /// Draws `other` into this scene with its top-left corner at `origin` (picture pixels), over
    /// what is there and clipped to its own rectangle: multi-panel views are panels of one
    /// scene. Its glyphs move into this scene's atlas.
    pub fn place(&mut self, other: &Scene, origin: [f32; 2]) {
        let glyphs = self.atlas.adopt(&other.atlas);
        let shift = |p: [f32; 2]| [p[0] + origin[0], p[1] + origin[1]];
        for layer in &other.layers {
            let instances = layer
                .instances
                .iter()
                .filter_map(|i| {
                    let mut i = *i;
                    let kind = i.kind & 255;
                    i.a = shift(i.a);
                    if kind != KIND_DISC {
                        i.b = shift(i.b);
                    }
                    if kind == KIND_TRIANGLE || kind == KIND_QUAD {
                        i.uv_a = shift(i.uv_a);
                    }
                    if kind == KIND_QUAD {
                        i.uv_b = shift(i.uv_b);
                    }
                    if kind == KIND_GLYPH {
                        let at = glyphs.get(&(i.uv_a[0] as u32, i.uv_a[1] as u32))?;
                        i.uv_a = [at.0 as f32, at.1 as f32];
                    }
                    Some(i)
                })
                .collect();
            let raster = layer.raster.as_ref().map(|r| {
                let mut r = r.clone();
                let [x0, y0, x1, y1] = r.rect;
                r.rect = [x0 + origin[0], y0 + origin[1], x1 + origin[0], y1 + origin[1]];
                r
            });
            let panel = [origin[0], origin[1], origin[0] + other.width as f32, origin[1] + other.height as f32];
            let clip = match layer.clip {
                None => panel,
                Some([a, b, c, d]) => {
                    let [a, b, c, d] = [a + origin[0], b + origin[1], c + origin[0], d + origin[1]];
                    [a.max(panel[0]), b.max(panel[1]), c.min(panel[2]), d.min(panel[3])]
                }
            };
            let paths = layer.paths.as_ref().map(|p| {
                let mut p = p.clone();
                p.shift(origin);
                p
            });
            self.layers.push(Layer { blend: layer.blend, raster, instances, clip: Some(clip), paths });
        }
        let panel = [origin[0], origin[1], origin[0] + other.width as f32, origin[1] + other.height as f32];
        for l in &other.labels {
            let [a, b, c, d] = l.rect;
            let rect = [a + origin[0], b + origin[1], c + origin[0], d + origin[1]];
            // A panel clips its texts: what falls outside it is not drawn.
            if rect[0] < panel[2] && rect[2] > panel[0] && rect[1] < panel[3] && rect[3] > panel[1] {
                self.labels.push(Label { text: l.text.clone(), rect });
            }
        }
    }

    /// Adds a raster layer: `raster` over what is drawn so far, under what is drawn after.
    pub fn raster(&mut self, raster: Raster) {
        self.layers.push(Layer {
            blend: Blend::Alpha,
            raster: Some(Box::new(raster)),
            instances: Vec::new(),
            clip: None,
            paths: None,
        });
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

    /// The four sides of `[x0, y0, x1, y1]` as segments `width` pixels wide.
    pub fn frame(&mut self, [x0, y0, x1, y1]: [f32; 4], width: f32, color: [f32; 4], screen: bool) {
        for (a, b) in [([x0, y0], [x1, y0]), ([x0, y1], [x1, y1]), ([x0, y0], [x0, y1]), ([x1, y0], [x1, y1])] {
            self.segment(Blend::Alpha, a, b, width, color, screen);
        }
    }

    pub fn disc(&mut self, centre: [f32; 2], radius: f32, color: [f32; 4], screen: bool) {
        let kind = KIND_DISC | if screen { FLAG_SCREEN } else { 0 };
        self.layer(Blend::Alpha).push(Instance { a: centre, width: radius, color, kind, ..Instance::zeroed() });
    }

    /// Screen-space text; returns its advance width in pixels.
    pub fn text(&mut self, text: &str, at: [f32; 2], size_px: f32, anchor: Anchor, color: [f32; 4]) -> f32 {
        self.text_in(text, at, size_px, anchor, color, true)
    }

    /// Text placed in the scene like the shapes it names: pan and zoom move and scale it with
    /// them (a node's label), where [`Scene::text`] stays put (titles, legends).
    pub fn text_world(&mut self, text: &str, at: [f32; 2], size_px: f32, anchor: Anchor, color: [f32; 4]) -> f32 {
        self.text_in(text, at, size_px, anchor, color, false)
    }

    fn text_in(
        &mut self,
        text: &str,
        at: [f32; 2],
        size_px: f32,
        anchor: Anchor,
        color: [f32; 4],
        screen: bool,
    ) -> f32 {
        let (glyphs, width) = self.atlas.layout(text, at, size_px, anchor);
        let mut rect = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
        for g in &glyphs {
            rect = [rect[0].min(g.min[0]), rect[1].min(g.min[1]), rect[2].max(g.max[0]), rect[3].max(g.max[1])];
        }
        if !glyphs.is_empty() {
            self.labels.push(Label { text: text.to_string(), rect });
        }
        let layer = self.layer(Blend::Alpha);
        for g in glyphs {
            layer.push(Instance {
                a: g.min,
                b: g.max,
                uv_a: g.uv,
                color,
                kind: KIND_GLYPH | if screen { FLAG_SCREEN } else { 0 },
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

/// A colour channel `0..=1` as a byte, rounded to nearest: adding a half and truncating, which
/// equals `round` for a clamped (never negative) value without a call into libm per channel.
pub fn unorm8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// Renders a scene to RGBA8 on the backend given: the GPU renderer, or its CPU mirror.
pub fn render_scene(
    backend: &exaviz_compute::Backend,
    scene: &Scene,
    view: View,
) -> Result<Image, exaviz_compute::GpuError> {
    match backend {
        exaviz_compute::Backend::Gpu(ctx) => {
            ctx.with_kept(|| gpu::GpuRenderer::new(&ctx.device), |r| r.render_to_image(ctx, scene, view))
        }
        exaviz_compute::Backend::Cpu => Ok(cpu::render(scene, view)),
    }
}

/// Renders `scene` where `backend` draws, kept there: into a texture of a GPU device (read back
/// only when asked), or by the CPU renderer. A picture larger than the device's textures is read
/// back in tiles.
pub fn render_kept(
    backend: &exaviz_compute::Backend,
    scene: &Scene,
    view: View,
) -> Result<Rendered, exaviz_compute::GpuError> {
    match backend {
        exaviz_compute::Backend::Gpu(ctx) => {
            let side = ctx.limits.max_texture_dimension_2d;
            if scene.width > side || scene.height > side || scene.width == 0 || scene.height == 0 {
                return render_scene(backend, scene, view).map(Rendered::Host);
            }
            let texture =
                ctx.with_kept(|| gpu::GpuRenderer::new(&ctx.device), |r| r.render_to_texture(ctx, scene, view))?;
            Ok(Rendered::Device(kept::DeviceImage::new(ctx, texture)))
        }
        exaviz_compute::Backend::Cpu => Ok(Rendered::Host(cpu::render(scene, view))),
    }
}

/// Renders the part of the picture at `origin` of `size` pixels (a wall's tile): the same pixels
/// as the whole picture's render there, on either backend.
pub fn render_region(
    backend: &exaviz_compute::Backend,
    scene: &Scene,
    view: View,
    origin: [u32; 2],
    size: [u32; 2],
) -> Result<Image, exaviz_compute::GpuError> {
    match backend {
        exaviz_compute::Backend::Gpu(ctx) => {
            let tile = ctx.limits.max_texture_dimension_2d.clamp(256, 4096);
            ctx.with_kept(
                || gpu::GpuRenderer::new(&ctx.device),
                |r| r.render_region(ctx, scene, view, origin, size, tile),
            )
        }
        exaviz_compute::Backend::Cpu => Ok(cpu::render_region(scene, view, origin, size)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_scene_draws_as_it_does_alone() {
        let mut panel = Scene::new(100, 80, [0.1, 0.1, 0.1]);
        panel.rect([5.0, 5.0], [60.0, 20.5], [0.9, 0.2, 0.1, 1.0], false);
        panel.segment(Blend::Additive, [0.0, 70.0], [95.0, 30.0], 2.0, [0.2, 0.8, 0.3, 0.7], false);
        panel.disc([70.0, 60.0], 6.0, [1.0, 1.0, 1.0, 0.9], false);
        panel.text("panel 42", [10.0, 50.0], 12.0, Anchor::Left, [1.0, 1.0, 0.8, 1.0]);
        panel.raster(Raster::rgba([60.0, 5.0, 92.0, 29.0], 4, 3, (0..12).map(|k| [k * 20, 200, 100, 255]).collect()));
        let mut whole = Scene::new(300, 200, [0.1, 0.1, 0.1]);
        // Something in the whole scene's atlas first, so the panel's glyphs move.
        whole.text("xyz", [200.0, 180.0], 15.0, Anchor::Left, [1.0; 4]);
        whole.place(&panel, [40.0, 30.0]);
        let (alone, placed) = (cpu::render(&panel, View::default()), cpu::render(&whole, View::default()));
        let mut worst = 0;
        for y in 0..80 {
            for x in 0..100 {
                let (a, b) = (alone.pixel(x, y), placed.pixel(x + 40, y + 30));
                worst = worst.max(a.iter().zip(&b).map(|(p, q)| p.abs_diff(*q)).max().unwrap_or(0));
            }
        }
        assert!(worst <= 2, "a placed panel differs by {worst}");
        // Nothing of the panel is drawn outside its place, though its segment runs to x 95 + 40
        // and a disc is placed beyond its right edge.
        let mut spill = Scene::new(100, 80, [0.1, 0.1, 0.1]);
        spill.disc([104.0, 40.0], 10.0, [1.0, 1.0, 1.0, 1.0], false);
        let mut into = Scene::new(300, 200, [0.1, 0.1, 0.1]);
        into.place(&spill, [40.0, 30.0]);
        let out = cpu::render(&into, View::default());
        assert!((140..160).all(|x| out.pixel(x, 70) == out.pixel(299, 199)), "the disc spilled out");
        assert_ne!(out.pixel(139, 70), out.pixel(299, 199), "the disc's part inside is drawn");
        assert!(alone.distinct_colours() > 20);
    }
}
