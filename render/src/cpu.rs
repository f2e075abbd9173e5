//! CPU mirror of the instanced renderer (`render.wgsl`): the same quads, the same
//! coverage formulas at pixel centres, the same premultiplied blending, quantised to 8 bits
//! after every blend as an RGBA8 render target is. Rows are split into bands drawn in parallel;
//! within a band instances are drawn in order, so the result does not depend on threads.

use rayon::prelude::*;

use super::raster::{Raster, ToneParams, colour_table};
use super::text::ATLAS_SIZE;
use super::{
    Blend, FLAG_SCREEN, Image, Instance, KIND_DISC, KIND_GLYPH, KIND_QUAD, KIND_RECT, KIND_SEGMENT, KIND_TRIANGLE,
    SAMPLES, Scene, View,
};

/// A raster layer ready to draw: its colour table and tone parameters computed once.
struct RasterPrep<'a> {
    raster: std::borrow::Cow<'a, Raster>,
    table: Vec<[u8; 4]>,
    tone: Option<ToneParams>,
    view: View,
    origin: [f32; 2],
}

impl<'a> RasterPrep<'a> {
    fn new(raster: &'a Raster, view: View, origin: [f32; 2]) -> Self {
        let map = match &raster.data {
            super::RasterData::Values { shade, .. } => shade.map,
            _ => super::ColorMap::Viridis,
        };
        // Cells kept on a device are read back once.
        let raster = raster.on_host();
        let tone = raster.tone_params();
        Self { raster, table: colour_table(map), tone, view, origin }
    }

    /// Blends the raster "over" row `y` of the target from column `x0` on (`row` holds those
    /// pixels).
    fn draw_row(&self, row: &mut [[f32; 4]], x0: i32, y: i32) {
        for (x, dst) in row.iter_mut().enumerate() {
            let x = x as i32 + x0;
            let p = [x as f32 + 0.5 + self.origin[0], y as f32 + 0.5 + self.origin[1]];
            let Some((cx, cy)) = self.raster.cell_at(p, self.view) else { continue };
            let c = self.raster.shade_cell(cx, cy, &self.table, self.tone.as_ref());
            let alpha = c[3];
            if alpha <= 0.0 {
                continue;
            }
            let src = [c[0] * alpha, c[1] * alpha, c[2] * alpha, alpha];
            for k in 0..4 {
                dst[k] = quantise(src[k] + dst[k] * (1.0 - alpha));
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Prepared {
    kind: u32,
    a: [f32; 2],
    b: [f32; 2],
    /// Glyph: atlas texel. Triangle, quadrilateral: the third corner, on screen.
    uv: [f32; 2],
    /// Quadrilateral: the fourth corner, on screen.
    d: [f32; 2],
    /// Triangle, quadrilateral: its edges (the first three of a triangle).
    edges: [Edge; 4],
    color: [f32; 4],
    width: f32,
    /// Conservative pixel bounds: x0, y0, x1, y1 (exclusive ends), clipped to the target.
    bounds: [i32; 4],
}

fn prepare(inst: &Instance, view: View, origin: [f32; 2], size: [u32; 2]) -> Option<Prepared> {
    let kind = inst.kind & 255;
    let to_screen = |p: [f32; 2]| {
        if inst.kind & FLAG_SCREEN != 0 {
            [p[0] - origin[0], p[1] - origin[1]]
        } else {
            [p[0] * view.scale + view.offset[0] - origin[0], p[1] * view.scale + view.offset[1] - origin[1]]
        }
    };
    let a = to_screen(inst.a);
    let b = if kind == KIND_DISC { inst.b } else { to_screen(inst.b) };
    let polygon = kind == KIND_TRIANGLE || kind == KIND_QUAD;
    let uv = if polygon { to_screen(inst.uv_a) } else { inst.uv_a };
    // A triangle's fourth corner repeats its third: the bounds below stay those of three.
    let d = if kind == KIND_QUAD { to_screen(inst.uv_b) } else { uv };
    let (lo, hi) = match kind {
        KIND_SEGMENT => {
            let r = inst.width.max(1.0) * 0.5 + 1.0;
            ([a[0].min(b[0]) - r, a[1].min(b[1]) - r], [a[0].max(b[0]) + r, a[1].max(b[1]) + r])
        }
        KIND_DISC => {
            let r = inst.width + 1.0;
            ([a[0] - r, a[1] - r], [a[0] + r, a[1] + r])
        }
        KIND_RECT => ([a[0] - 1.0, a[1] - 1.0], [b[0] + 1.0, b[1] + 1.0]),
        KIND_TRIANGLE | KIND_QUAD => (
            [a[0].min(b[0]).min(uv[0]).min(d[0]) - 1.0, a[1].min(b[1]).min(uv[1]).min(d[1]) - 1.0],
            [a[0].max(b[0]).max(uv[0]).max(d[0]) + 1.0, a[1].max(b[1]).max(uv[1]).max(d[1]) + 1.0],
        ),
        _ => (a, b),
    };
    if !(lo[0].is_finite() && lo[1].is_finite() && hi[0].is_finite() && hi[1].is_finite()) {
        return None;
    }
    let edges = if polygon {
        polygon_edges([a, b, uv, d], if kind == KIND_QUAD { 4 } else { 3 })?
    } else {
        [Edge::default(); 4]
    };
    let clip = |v: f32, max: u32| (v.max(-1.0).min(max as f32 + 1.0)) as i32;
    let bounds = [
        clip(lo[0].floor(), size[0]).max(0),
        clip(lo[1].floor(), size[1]).max(0),
        clip(hi[0].ceil() + 1.0, size[0]).min(size[0] as i32),
        clip(hi[1].ceil() + 1.0, size[1]).min(size[1] as i32),
    ];
    (bounds[0] < bounds[2] && bounds[1] < bounds[3]).then_some(Prepared {
        kind,
        a,
        b,
        uv,
        d,
        edges,
        color: inst.color,
        width: inst.width,
        bounds,
    })
}

fn clamp01(v: f32) -> f32 {
    v.clamp(0.0, 1.0)
}

fn segment_coverage(p: [f32; 2], a: [f32; 2], b: [f32; 2], width: f32) -> f32 {
    let pa = [p[0] - a[0], p[1] - a[1]];
    let ba = [b[0] - a[0], b[1] - a[1]];
    let len2 = ba[0] * ba[0] + ba[1] * ba[1];
    let h = if len2 > 0.0 { clamp01((pa[0] * ba[0] + pa[1] * ba[1]) / len2) } else { 0.0 };
    let w = width.max(1.0);
    let d = ((pa[0] - ba[0] * h).powi(2) + (pa[1] - ba[1] * h).powi(2)).sqrt() - w * 0.5;
    clamp01(0.5 - d) * (width / w)
}

fn rect_coverage(p: [f32; 2], a: [f32; 2], b: [f32; 2]) -> f32 {
    let cx = clamp01((p[0] - a[0]).min(b[0] - p[0]) + 0.5);
    let cy = clamp01((p[1] - a[1]).min(b[1] - p[1]) + 0.5);
    cx * cy
}

fn disc_coverage(p: [f32; 2], c: [f32; 2], r: f32) -> f32 {
    clamp01(r - ((p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2)).sqrt() + 0.5)
}

/// One edge of a triangle or quadrilateral, measured from its lexicographically smaller end, so
/// that the two polygons sharing it compute the very same values; `f` (±1) says which side is
/// inside. A sample exactly on the edge goes to the polygon on its positive side, so to exactly
/// one of the two. Mirrors `edge_mask` in render.wgsl.
#[derive(Clone, Copy, Debug, Default)]
struct Edge {
    lo: [f32; 2],
    d: [f32; 2],
    f: f32,
    /// 1 / |d|: the edge function over this is a distance in pixels.
    inv_len: f32,
}

impl Edge {
    /// The edge from `u` to `v` of a polygon whose signed area has sign `s`.
    fn new(u: [f32; 2], v: [f32; 2], s: f32) -> Self {
        let (lo, hi, f) = if v[0] < u[0] || (v[0] == u[0] && v[1] < u[1]) { (v, u, -s) } else { (u, v, s) };
        let d = [hi[0] - lo[0], hi[1] - lo[1]];
        Self { lo, d, f, inv_len: 1.0 / d[0].hypot(d[1]) }
    }

    /// Bit `k` set where sample `k` of the pixel with top-left corner `base` is inside.
    fn mask(&self, base: [f32; 2]) -> u32 {
        let [dx, dy] = self.d;
        let e0 = dx * (base[1] - self.lo[1]) - dy * (base[0] - self.lo[0]);
        // Every sample lies within 0.71 px of the pixel's centre: a centre farther than 0.75 px
        // from the edge has all its samples on one side (the shader tests them one by one and
        // finds the same).
        let centre = self.f * (e0 + (dx * 0.5 - dy * 0.5)) * self.inv_len;
        if centre > 0.75 {
            return (1 << SAMPLES) - 1;
        }
        if centre < -0.75 {
            return 0;
        }
        let mut m = 0;
        for (k, o) in SAMPLE_OFFSETS.iter().enumerate() {
            let e = e0 + (dx * o[1] - dy * o[0]);
            if self.f * e > 0.0 || (e == 0.0 && self.f > 0.0) {
                m |= 1 << k;
            }
        }
        m
    }
}

/// Sample `k` of [`SAMPLES`] in a pixel, from its top-left corner: an n-rooks pattern, every
/// row and column of a 16 x 16 grid used once.
const SAMPLE_OFFSETS: [[f32; 2]; SAMPLES as usize] = {
    let mut o = [[0.0; 2]; SAMPLES as usize];
    let mut k = 0;
    while k < SAMPLES as usize {
        o[k] = [(k as f32 + 0.5) / SAMPLES as f32, (((k * 7) % SAMPLES as usize) as f32 + 0.5) / SAMPLES as f32];
        k += 1;
    }
    o
};

/// The edges of the convex polygon on the first `n` corners of `c`; `None` when it has no area.
fn polygon_edges(c: [[f32; 2]; 4], n: usize) -> Option<[Edge; 4]> {
    // Twice the signed area (shoelace); its sign says which side of each edge is inside.
    let area: f32 = (0..n).map(|i| c[i][0] * c[(i + 1) % n][1] - c[(i + 1) % n][0] * c[i][1]).sum();
    if area == 0.0 || !area.is_finite() {
        return None;
    }
    let mut edges = [Edge::default(); 4];
    for i in 0..n {
        edges[i] = Edge::new(c[i], c[(i + 1) % n], area.signum());
    }
    Some(edges)
}

/// Share of the pixel's samples (pixel centre `p`) inside a triangle or quadrilateral.
fn polygon_coverage(p: [f32; 2], s: &Prepared) -> f32 {
    let base = [p[0].floor(), p[1].floor()];
    let n = if s.kind == KIND_QUAD { 4 } else { 3 };
    let mut inside = (1 << SAMPLES) - 1;
    for e in &s.edges[..n] {
        inside &= e.mask(base);
        if inside == 0 {
            return 0.0;
        }
    }
    inside.count_ones() as f32 / SAMPLES as f32
}

/// The corners of a triangle or quadrilateral, in order.
fn corners(s: &Prepared) -> ([[f32; 2]; 4], usize) {
    ([s.a, s.b, s.uv, s.d], if s.kind == KIND_QUAD { 4 } else { 3 })
}

/// x range (exclusive end) of row `y` a triangle or quadrilateral can touch: its extent within
/// the row's band.
fn polygon_row_span(s: &Prepared, y: i32) -> (i32, i32) {
    let (y0, y1) = (y as f32, y as f32 + 1.0);
    let (c, n) = corners(s);
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for i in 0..n {
        let (u, v) = (c[i], c[(i + 1) % n]);
        let (top, bottom) = (u[1].min(v[1]), u[1].max(v[1]));
        if bottom < y0 || top > y1 {
            continue;
        }
        if bottom - top < 1e-6 {
            (lo, hi) = (lo.min(u[0].min(v[0])), hi.max(u[0].max(v[0])));
            continue;
        }
        for yy in [y0.max(top), y1.min(bottom)] {
            let x = u[0] + (yy - u[1]) * (v[0] - u[0]) / (v[1] - u[1]);
            (lo, hi) = (lo.min(x), hi.max(x));
        }
    }
    if lo > hi {
        return (0, 0);
    }
    ((lo.floor() as i32 - 1).max(s.bounds[0]), (hi.ceil() as i32 + 1).min(s.bounds[2]))
}

/// x range (exclusive end) of row `y` a segment can touch.
fn segment_row_span(s: &Prepared, y: i32) -> (i32, i32) {
    let (a, b) = (s.a, s.b);
    let dy = b[1] - a[1];
    let (mut x0, mut x1) = (s.bounds[0], s.bounds[2]);
    if dy.abs() > 1e-3 {
        let r = s.width.max(1.0) * 0.5 + 1.0;
        let dx = b[0] - a[0];
        let len = (dx * dx + dy * dy).sqrt();
        let at = |yy: f32| a[0] + (yy - a[1]) * dx / dy;
        let (u, v) = (at(y as f32), at(y as f32 + 1.0));
        let half = r * len / dy.abs() + 1.0;
        x0 = x0.max((u.min(v) - half).floor() as i32);
        x1 = x1.min((u.max(v) + half).ceil() as i32 + 1);
    }
    (x0, x1)
}

/// `v` as an 8-bit target stores it, rounded to nearest ([`super::unorm8`]: no call into libm
/// for each channel of each pixel of each layer).
fn quantise(v: f32) -> f32 {
    f32::from(super::unorm8(v)) / 255.0
}

/// A layer ready to draw: blend, raster, instances and its clip in target pixels.
type Shape<'a> = (Blend, Option<RasterPrep<'a>>, Vec<Prepared>, [i32; 4]);
type Shapes<'a> = [Shape<'a>];

fn draw_band(band: &mut [[f32; 4]], y0: i32, width: u32, shapes: &Shapes, atlas: &[u8]) {
    let rows = (band.len() / width as usize) as i32;
    for (blend, raster, list, clip) in shapes {
        if let Some(r) = raster {
            for y in y0.max(clip[1])..(y0 + rows).min(clip[3]) {
                let row = &mut band[(y - y0) as usize * width as usize..][..width as usize];
                r.draw_row(&mut row[clip[0] as usize..clip[2] as usize], clip[0], y);
            }
        }
        for s in list {
            let (ys, ye) = (s.bounds[1].max(y0).max(clip[1]), s.bounds[3].min(y0 + rows).min(clip[3]));
            for y in ys..ye {
                let (xs, xe) = match s.kind {
                    KIND_SEGMENT => segment_row_span(s, y),
                    KIND_TRIANGLE | KIND_QUAD => polygon_row_span(s, y),
                    _ => (s.bounds[0], s.bounds[2]),
                };
                let row = &mut band[((y - y0) as usize * width as usize)..][..width as usize];
                for x in xs.max(clip[0])..xe.min(clip[2]) {
                    let p = [x as f32 + 0.5, y as f32 + 0.5];
                    let cov = match s.kind {
                        KIND_SEGMENT => segment_coverage(p, s.a, s.b, s.width),
                        KIND_RECT => rect_coverage(p, s.a, s.b),
                        KIND_DISC => disc_coverage(p, s.a, s.width),
                        KIND_TRIANGLE | KIND_QUAD => polygon_coverage(p, s),
                        KIND_GLYPH => {
                            if p[0] < s.a[0] || p[1] < s.a[1] || p[0] >= s.b[0] || p[1] >= s.b[1] {
                                continue;
                            }
                            let tx = (s.uv[0] + (p[0] - s.a[0]).floor()) as usize;
                            let ty = (s.uv[1] + (p[1] - s.a[1]).floor()) as usize;
                            f32::from(atlas[ty * ATLAS_SIZE as usize + tx]) / 255.0
                        }
                        _ => 0.0,
                    };
                    if cov <= 0.0 {
                        continue;
                    }
                    let alpha = s.color[3] * cov;
                    let src = [s.color[0] * alpha, s.color[1] * alpha, s.color[2] * alpha, alpha];
                    let dst = &mut row[x as usize];
                    let keep = if *blend == Blend::Alpha { 1.0 - alpha } else { 1.0 };
                    for k in 0..4 {
                        dst[k] = quantise(src[k] + dst[k] * keep);
                    }
                }
            }
        }
    }
}

/// Renders the part of the picture at `origin` of size `size` (a tile, or the whole).
pub fn render_region(scene: &Scene, view: View, origin: [u32; 2], size: [u32; 2]) -> Image {
    let o = [origin[0] as f32, origin[1] as f32];
    let shapes: Vec<Shape> = scene
        .layers
        .iter()
        .map(|l| {
            let raster = l.raster.as_deref().map(|r| RasterPrep::new(r, view, o));
            let clip = l.clip_pixels(view, origin, size).unwrap_or([0, 0, size[0], size[1]]).map(|v| v as i32);
            (l.blend, raster, l.drawn(view).par_iter().filter_map(|i| prepare(i, view, o, size)).collect(), clip)
        })
        .collect();
    let bg = scene.background_rgba8();
    let bgf = [f32::from(bg[0]) / 255.0, f32::from(bg[1]) / 255.0, f32::from(bg[2]) / 255.0, 1.0];
    let mut acc = vec![bgf; size[0] as usize * size[1] as usize];
    const BAND: usize = 16;
    acc.par_chunks_mut(BAND * size[0] as usize)
        .enumerate()
        .for_each(|(i, band)| draw_band(band, (i * BAND) as i32, size[0], &shapes, &scene.atlas.pixels));
    let mut pixels = vec![0u8; acc.len() * 4];
    pixels.par_chunks_mut(4 * 4096).zip(acc.par_chunks(4096)).for_each(|(out, acc)| {
        for (o, p) in out.chunks_exact_mut(4).zip(acc) {
            // Premultiplied colour back to straight colour (divided by alpha; an empty pixel's
            // alpha is floored so that it stays black).
            let a = p[3].max(1e-6);
            let c = super::unorm8;
            o.copy_from_slice(&[c(p[0] / a), c(p[1] / a), c(p[2] / a), c(p[3])]);
        }
    });
    Image { width: size[0], height: size[1], pixels }
}

pub fn render(scene: &Scene, view: View) -> Image {
    render_region(scene, view, [0, 0], [scene.width, scene.height])
}
