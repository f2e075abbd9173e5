//! CPU mirror of `curve_density.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::line_density::mirror::{Walk, to_pixel};
use crate::words::{Words, add64, unorm8, word};

/// Mirror of the WGSL `Params` (12 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub width: u32,
    pub height: u32,
    /// 0: strokes blended over one another, 1: added.
    pub additive: u32,
    /// Samples of a curve less one.
    pub last: f32,
    pub stride: u32,
    /// Points of the colour table.
    pub table: u32,
    pub curves: u32,
    pub background: [f32; 4],
}
const _: () = assert!(size_of::<Params>() == 48);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// Fixed-point scale of the weights.
pub const INK_SCALE: f32 = 1_048_576.0;

fn float(w: &Words, i: usize) -> f32 {
    f32::from_bits(word(w, i))
}

fn weight_of(v: f32) -> u32 {
    (v + 0.5).floor().min(4_294_967_040.0) as u32
}

/// What `curve_pieces` reads: the kept segments and pieces, the window's curves' opacities and
/// the curves' values.
pub struct Pieces<'a> {
    pub segments: &'a Words,
    pub pieces: &'a Words,
    pub alphas: &'a Words,
    pub values: &'a Words,
}

/// One invocation of `curve_pieces`: piece `i`'s two weights, and its walk where it lays ink.
pub fn curve_pieces(i: u32, p: &Params, input: &Pieces<'_>, ink: &Words, tint: &Words) {
    if i >= p.n {
        return;
    }
    let at = 4 * i as usize;
    let curve = word(input.pieces, at);
    if curve >= p.curves {
        return;
    }
    let c = curve as usize;
    let (alpha, v0, v1) = (float(input.alphas, c), float(input.values, 2 * c), float(input.values, 2 * c + 1));
    let pixels = word(input.pieces, at + 2).max(1);
    let mut per_pixel = alpha * float(input.pieces, at + 1) / pixels as f32;
    if p.additive == 0 {
        per_pixel = -(1.0 - per_pixel.min(0.95)).ln();
    }
    let weight = (per_pixel * INK_SCALE + 0.5).floor();
    // The shader's `!(weight >= 1.0)`: NaN too.
    if weight.partial_cmp(&1.0).is_none_or(|o| o == std::cmp::Ordering::Less) {
        return;
    }
    let share = float(input.pieces, at + 3) / p.last;
    let value = (v0 + (v1 - v0) * share).clamp(0.0, 1.0);
    let (a, b) = (weight_of(weight), weight_of(weight * value));
    let s = |k: usize| float(input.segments, at + k);
    let ends = [to_pixel(s(0)), to_pixel(s(1)), to_pixel(s(2)), to_pixel(s(3))];
    let [x, y, x1, y1] = ends;
    let (w_px, h_px) = (p.width as i32, p.height as i32);
    if (x < 0 && x1 < 0) || (y < 0 && y1 < 0) || (x >= w_px && x1 >= w_px) || (y >= h_px && y1 >= h_px) {
        return;
    }
    let mut walk = Walk::new(ends);
    loop {
        let (x, y) = (walk.x, walk.y);
        if x >= 0 && y >= 0 && x < w_px && y < h_px {
            let px = (y as u32 * p.width + x as u32) as usize;
            add64(ink, px, a);
            add64(tint, px, b);
        }
        if walk.done() {
            break;
        }
        walk.step();
    }
}

fn sum64(sums: &Words, p: usize) -> f32 {
    word(sums, 2 * p + 1) as f32 * 4_294_967_296.0 + word(sums, 2 * p) as f32
}

/// One invocation of `curve_compose`: pixel `k`'s colour as straight RGBA8, red in the low byte.
pub fn curve_compose(k: u32, p: &Params, (ink, tint): (&Words, &Words), table: &Words, out: &Words) {
    if k >= p.width * p.height {
        return;
    }
    let (x, y) = (k % p.width, k / p.width);
    let i = sum64(ink, k as usize);
    let mut packed = 0;
    if i > 0.0 {
        let amount = i / INK_SCALE;
        let last = p.table.max(1) - 1;
        let t = (sum64(tint, k as usize) / i).clamp(0.0, 1.0) * last as f32;
        let lo = (t.floor() as u32).min(last);
        let hi = (lo + 1).min(last);
        let f = t - lo as f32;
        let c = [0, 1, 2].map(|ch| {
            let (a, b) = (float(table, 4 * lo as usize + ch), float(table, 4 * hi as usize + ch));
            a + (b - a) * f
        });
        packed = if p.additive != 0 {
            let bg = p.background;
            [0, 1, 2].iter().fold(255 << 24, |w, &ch| w | (unorm8(bg[ch] + c[ch] * amount) << (8 * ch)))
        } else {
            unorm8(c[0]) | (unorm8(c[1]) << 8) | (unorm8(c[2]) << 16) | (unorm8(1.0 - (-amount).exp()) << 24)
        };
    }
    out[(y * p.stride + x) as usize].store(packed, Relaxed);
}
