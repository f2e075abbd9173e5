//! CPU mirror of `line_density.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::Words;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub width: u32,
    pub height: u32,
    pub has_weight: u32,
}

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// Guard band; see `LIMIT` in the shader.
pub(super) const LIMIT: f32 = 16_384.0;

pub(crate) fn to_pixel(v: f32) -> i32 {
    if v.is_nan() {
        return -LIMIT as i32;
    }
    // `floor` without a libm call (no SSE4.1 on the baseline target): clamped values are exact
    // in `i32`, and truncation rounds negatives up, so step those down.
    let v = v.clamp(-LIMIT, LIMIT);
    let t = v as i32;
    if (t as f32) > v { t - 1 } else { t }
}

/// [`to_pixel`] of four values at once, written so that it compiles to a few vector
/// instructions (bucketing spent most of its time converting). `max` returns its other operand
/// where one is NaN, so NaN becomes `-LIMIT`. Adding 1.5 * 2^23 rounds a clamped value to the
/// nearest integer, which then sits in the low bits of the sum; where that rounded up, one is
/// taken off.
pub(super) fn to_pixels(v: [f32; 4]) -> [i32; 4] {
    const MAGIC: f32 = 12_582_912.0;
    // Not `clamp`: that keeps NaN, and NaN must become `-LIMIT`.
    #[expect(clippy::manual_clamp, reason = "max maps NaN to -LIMIT, clamp would keep it")]
    let c = v.map(|x| x.max(-LIMIT).min(LIMIT));
    let m = c.map(|x| x + MAGIC);
    let mut out = [0i32; 4];
    for k in 0..4 {
        let nearest = (m[k].to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
        out[k] = nearest - i32::from((m[k] - MAGIC) > c[k]);
    }
    out
}

/// One invocation of `line_density`.
pub fn line_density(i: u32, params: &Params, segments: &[u32], weights: &Words, counts: &Words, sums: &Words) {
    if i >= params.n {
        return;
    }
    let s = |k: usize| f32::from_bits(segments[4 * i as usize + k]);
    let x = to_pixel(s(0));
    let y = to_pixel(s(1));
    let x1 = to_pixel(s(2));
    let y1 = to_pixel(s(3));
    let w_px = params.width as i32;
    let h_px = params.height as i32;
    if (x < 0 && x1 < 0) || (y < 0 && y1 < 0) || (x >= w_px && x1 >= w_px) || (y >= h_px && y1 >= h_px) {
        return;
    }
    let mut w = 1u32;
    if params.has_weight != 0 {
        w = weights[i as usize].load(Relaxed);
    }
    walk_shared([x, y, x1, y1], w, params, counts, sums);
}

/// The walk of one invocation of [`line_density`] from pixel ends, with atomic adds (other
/// invocations may share its pixels).
fn walk_shared([x, y, x1, y1]: [i32; 4], w: u32, params: &Params, counts: &Words, sums: &Words) {
    let (w_px, h_px) = (params.width as i32, params.height as i32);
    let mut walk = Walk::new([x, y, x1, y1]);
    loop {
        let (x, y) = (walk.x, walk.y);
        if x >= 0 && y >= 0 && x < w_px && y < h_px {
            let p = (y as u32 * params.width + x as u32) as usize;
            counts[p].fetch_add(1, Relaxed);
            if params.has_weight != 0 {
                let old = sums[2 * p].fetch_add(w, Relaxed);
                if old > 0xffff_ffff - w {
                    sums[2 * p + 1].fetch_add(1, Relaxed);
                }
            }
        }
        if walk.done() {
            break;
        }
        walk.step();
    }
}

/// The shader's walk (Zingl's all-octant Bresenham): `max(|dx|, |dy|) + 1` pixels from the
/// first endpoint to the second, every step moving along the major axis.
pub(crate) struct Walk {
    pub(crate) x: i32,
    pub(crate) y: i32,
    x1: i32,
    y1: i32,
    dx: i32,
    dy: i32,
    sx: i32,
    sy: i32,
    err: i32,
}

impl Walk {
    pub(crate) fn new([x, y, x1, y1]: [i32; 4]) -> Self {
        let (dx, dy) = ((x1 - x).abs(), -(y1 - y).abs());
        let (sx, sy) = (if x < x1 { 1 } else { -1 }, if y < y1 { 1 } else { -1 });
        Self { x, y, x1, y1, dx, dy, sx, sy, err: dx + dy }
    }

    pub(crate) fn done(&self) -> bool {
        self.x == self.x1 && self.y == self.y1
    }

    #[inline(always)]
    pub(crate) fn step(&mut self) {
        let e2 = 2 * self.err;
        let (mx, my) = (e2 >= self.dy, e2 <= self.dx);
        self.err += if mx { self.dy } else { 0 } + if my { self.dx } else { 0 };
        self.x += if mx { self.sx } else { 0 };
        self.y += if my { self.sy } else { 0 };
    }
}
