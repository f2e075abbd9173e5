//! CPU mirror of `reduce.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::reduce::f32_key;
use crate::words::{WG, Words};

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub partial_offset: u32,
    pub bins: u32,
    pub lo_bits: u32,
    pub scale_bits: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// Adds (lo, hi) into the 64-bit pair acc[2], acc[3].
fn add_u64(acc: &Words, lo: u32, hi: u32) {
    let old = acc[2].fetch_add(lo, Relaxed);
    let mut carry = hi;
    if old > 0xffff_ffff - lo {
        carry += 1;
    }
    if carry != 0 {
        acc[3].fetch_add(carry, Relaxed);
    }
}

/// One whole workgroup `wg` of `reduce_u32`: local min, max and carried sum, then one merge.
pub fn reduce_u32(wg: u32, params: &Params, values_u32: &Words, acc: &Words) {
    let (mut wg_min, mut wg_max, mut wg_lo, mut wg_hi) = (u32::MAX, 0u32, 0u32, 0u32);
    for lid in 0..WG {
        let i = wg * WG + lid;
        if i < params.n {
            let v = values_u32[i as usize].load(Relaxed);
            wg_min = wg_min.min(v);
            wg_max = wg_max.max(v);
            let old = wg_lo;
            wg_lo = wg_lo.wrapping_add(v);
            if old > 0xffff_ffff - v {
                wg_hi += 1;
            }
        }
    }
    acc[0].fetch_min(wg_min, Relaxed);
    acc[1].fetch_max(wg_max, Relaxed);
    add_u64(acc, wg_lo, wg_hi);
}

/// One whole workgroup `wg` of `reduce_f32`: the same loads and the same tree of additions.
pub fn reduce_f32(wg: u32, params: &Params, values_f32: &Words, acc: &Words, partials: &Words) {
    let mut scratch = [0f32; WG as usize];
    for (lid, slot) in scratch.iter_mut().enumerate() {
        let i = wg * WG + lid as u32;
        let mut v = 0.0;
        if i < params.n {
            let x = f32::from_bits(values_f32[i as usize].load(Relaxed));
            if !x.is_nan() {
                v = x;
                let k = f32_key(x);
                acc[0].fetch_min(k, Relaxed);
                acc[1].fetch_max(k, Relaxed);
            }
        }
        *slot = v;
    }
    let mut stride = WG as usize / 2;
    while stride > 0 {
        for lid in 0..stride {
            scratch[lid] += scratch[lid + stride];
        }
        stride >>= 1;
    }
    partials[(params.partial_offset + wg) as usize].store(scratch[0].to_bits(), Relaxed);
}

/// Bins of up to this count are counted per workgroup first (as in the shader).
const LOCAL_BINS: u32 = 1024;

fn histogram_u32_bin(i: u32, params: &Params, values_u32: &Words) -> Option<u32> {
    if i >= params.n {
        return None;
    }
    let v = values_u32[i as usize].load(Relaxed);
    if v < params.lo_bits {
        return None;
    }
    let bin = (v - params.lo_bits) / params.scale_bits;
    (bin < params.bins).then_some(bin)
}

fn histogram_f32_bin(i: u32, params: &Params, values_f32: &Words) -> Option<u32> {
    if i >= params.n {
        return None;
    }
    let v = f32::from_bits(values_f32[i as usize].load(Relaxed));
    let lo = f32::from_bits(params.lo_bits);
    let scale = f32::from_bits(params.scale_bits);
    // The shader's `!(v >= lo)`: NaN is skipped too.
    if v.is_nan() || v < lo {
        return None;
    }
    let t = ((v - lo) * scale).floor();
    (t < params.bins as f32).then_some(t as u32)
}

/// One whole workgroup of a histogram kernel, with the shader's local-then-merge counting.
fn histogram_workgroup(wg: u32, params: &Params, hist: &Words, bin_of: impl Fn(u32) -> Option<u32>) {
    if params.bins <= LOCAL_BINS {
        let mut wg_hist = [0u32; LOCAL_BINS as usize];
        for lid in 0..WG {
            if let Some(bin) = bin_of(wg * WG + lid) {
                wg_hist[bin as usize] += 1;
            }
        }
        for (b, &c) in wg_hist[..params.bins as usize].iter().enumerate() {
            if c != 0 {
                hist[b].fetch_add(c, Relaxed);
            }
        }
    } else {
        for lid in 0..WG {
            if let Some(bin) = bin_of(wg * WG + lid) {
                hist[bin as usize].fetch_add(1, Relaxed);
            }
        }
    }
}

pub fn histogram_u32(wg: u32, params: &Params, values_u32: &Words, hist: &Words) {
    histogram_workgroup(wg, params, hist, |i| histogram_u32_bin(i, params, values_u32));
}

pub fn histogram_f32(wg: u32, params: &Params, values_f32: &Words, hist: &Words) {
    histogram_workgroup(wg, params, hist, |i| histogram_f32_bin(i, params, values_f32));
}
