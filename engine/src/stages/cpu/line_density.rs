//! CPU mirror of `shaders/wgsl/line_density.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use super::Words;
use crate::stages::StageError;

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
        super::params_from_words(words)
    }
}

/// Guard band; see `LIMIT` in the shader.
const LIMIT: f32 = 16_384.0;

fn to_pixel(v: f32) -> i32 {
    if v.is_nan() {
        return -LIMIT as i32;
    }
    v.clamp(-LIMIT, LIMIT).floor() as i32
}

/// One invocation of `line_density`.
pub fn line_density(i: u32, params: &Params, segments: &Words, weights: &Words, counts: &Words, sums: &Words) {
    if i >= params.n {
        return;
    }
    let s = |k: usize| f32::from_bits(segments[4 * i as usize + k].load(Relaxed));
    let mut x = to_pixel(s(0));
    let mut y = to_pixel(s(1));
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
    let dx = (x1 - x).abs();
    let dy = -(y1 - y).abs();
    let sx = if x < x1 { 1 } else { -1 };
    let sy = if y < y1 { 1 } else { -1 };
    let mut err = dx + dy;
    loop {
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
        if x == x1 && y == y1 {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}
