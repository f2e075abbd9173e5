//! CPU mirror of `bin_heatmap.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use exaviz_model::bins::scaled_key;

use crate::StageError;
use crate::words::Words;

/// Mirror of the WGSL `Params` (16 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub cols: u32,
    pub rows: u32,
    pub has_weight: u32,
    pub x_mode: u32,
    pub x_t0_lo: u32,
    pub x_t0_hi: u32,
    pub x_shift: u32,
    pub x_width: u32,
    pub y_mode: u32,
    pub y_t0_lo: u32,
    pub y_t0_hi: u32,
    pub y_shift: u32,
    pub y_width: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}
const _: () = assert!(size_of::<Params>() == 64);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

const INVALID: u32 = 0xffff_ffff;

fn time_key(lo: u32, hi: u32, t0_lo: u32, t0_hi: u32, shift: u32, width: u32) -> u32 {
    if hi < t0_hi || (hi == t0_hi && lo < t0_lo) {
        return INVALID;
    }
    let borrow = u32::from(lo < t0_lo);
    let r_lo = lo.wrapping_sub(t0_lo);
    let r_hi = hi - t0_hi - borrow;
    let q = if shift == 0 {
        if r_hi != 0 {
            return INVALID;
        }
        r_lo
    } else if shift < 32 {
        if (r_hi >> shift) != 0 {
            return INVALID;
        }
        (r_lo >> shift) | (r_hi << (32 - shift))
    } else {
        r_hi >> (shift - 32)
    };
    q / width
}

fn axis_key(p: &Params, keys_is_x: bool, keys: &Words, i: u32) -> u32 {
    let i = i as usize;
    let (mode, t0_lo, t0_hi, shift, width, extent) = if keys_is_x {
        (p.x_mode, p.x_t0_lo, p.x_t0_hi, p.x_shift, p.x_width, p.cols)
    } else {
        (p.y_mode, p.y_t0_lo, p.y_t0_hi, p.y_shift, p.y_width, p.rows)
    };
    if mode == 0 {
        return keys[i].load(Relaxed);
    }
    if mode == 2 {
        return scaled_key(f32::from_bits(keys[i].load(Relaxed)), f32::from_bits(t0_lo), f32::from_bits(t0_hi), extent);
    }
    time_key(keys[2 * i].load(Relaxed), keys[2 * i + 1].load(Relaxed), t0_lo, t0_hi, shift, width)
}

/// One invocation of `bin_heatmap`.
pub fn bin_heatmap(
    i: u32,
    params: &Params,
    x_keys: &Words,
    y_keys: &Words,
    weights: &Words,
    counts: &Words,
    sums: &Words,
) {
    if i >= params.n {
        return;
    }
    let x = axis_key(params, true, x_keys, i);
    let y = axis_key(params, false, y_keys, i);
    if x >= params.cols || y >= params.rows {
        return;
    }
    let cell = (y * params.cols + x) as usize;
    counts[cell].fetch_add(1, Relaxed);
    // Unweighted, the sums are the counts: the host takes them from the counts.
    if params.has_weight == 0 {
        return;
    }
    let w = weights[i as usize].load(Relaxed);
    let old = sums[2 * cell].fetch_add(w, Relaxed);
    if old > 0xffff_ffff - w {
        sums[2 * cell + 1].fetch_add(1, Relaxed);
    }
}
