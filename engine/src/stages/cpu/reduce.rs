//! CPU mirror of `shaders/wgsl/reduce.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use super::{WG, Words};
use crate::stages::StageError;
use crate::stages::reduce::f32_key;

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
        super::params_from_words(words)
    }
}

pub fn reduce_u32(i: u32, params: &Params, values_u32: &Words, acc: &Words) {
    if i >= params.n {
        return;
    }
    let v = values_u32[i as usize].load(Relaxed);
    acc[0].fetch_min(v, Relaxed);
    acc[1].fetch_max(v, Relaxed);
    let old = acc[2].fetch_add(v, Relaxed);
    if old > 0xffff_ffff - v {
        acc[3].fetch_add(1, Relaxed);
    }
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

pub fn histogram_u32(i: u32, params: &Params, values_u32: &Words, hist: &Words) {
    if i >= params.n {
        return;
    }
    let v = values_u32[i as usize].load(Relaxed);
    if v < params.lo_bits {
        return;
    }
    let bin = (v - params.lo_bits) / params.scale_bits;
    if bin >= params.bins {
        return;
    }
    hist[bin as usize].fetch_add(1, Relaxed);
}

pub fn histogram_f32(i: u32, params: &Params, values_f32: &Words, hist: &Words) {
    if i >= params.n {
        return;
    }
    let v = f32::from_bits(values_f32[i as usize].load(Relaxed));
    let lo = f32::from_bits(params.lo_bits);
    let scale = f32::from_bits(params.scale_bits);
    if !(v >= lo) {
        return;
    }
    let t = ((v - lo) * scale).floor();
    if t >= params.bins as f32 {
        return;
    }
    hist[t as u32 as usize].fetch_add(1, Relaxed);
}
