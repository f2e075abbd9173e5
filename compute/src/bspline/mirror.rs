//! CPU mirror of `bspline.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::Words;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub samples: u32,
    pub beta: f32,
    pub degree: u32,
}

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

const MAX_CTRL: usize = crate::bspline::MAX_CTRL;

type V2 = [f32; 2];

fn load(w: &Words, i: usize) -> V2 {
    [f32::from_bits(w[2 * i].load(Relaxed)), f32::from_bits(w[2 * i + 1].load(Relaxed))]
}

fn store(w: &Words, i: usize, p: V2) {
    w[2 * i].store(p[0].to_bits(), Relaxed);
    w[2 * i + 1].store(p[1].to_bits(), Relaxed);
}

fn knot(i: i32, m: i32, p: i32) -> f32 {
    (i - p).clamp(0, m - p) as f32
}

pub fn bspline_eval(e: u32, params: &Params, ctrl: &Words, offsets: &Words, points: &Words) {
    if e >= params.n {
        return;
    }
    let first = offsets[e as usize].load(Relaxed) as usize;
    let m = (offsets[e as usize + 1].load(Relaxed) as usize - first).min(MAX_CTRL) as i32;
    let s = params.samples as usize;
    let out = e as usize * s;
    let a = load(ctrl, first);
    let b = load(ctrl, first + m.max(1) as usize - 1);
    if m < 2 {
        for j in 0..s {
            store(points, out + j, a);
        }
        return;
    }
    let mut c = [[0f32; 2]; MAX_CTRL];
    for (i, slot) in c.iter_mut().enumerate().take(m as usize) {
        let t = i as f32 / (m - 1) as f32;
        let q = load(ctrl, first + i);
        *slot = [0, 1].map(|k| params.beta * q[k] + (1.0 - params.beta) * (a[k] + (b[k] - a[k]) * t));
    }
    let p = (params.degree as i32).min(m - 1);
    let top = (m - p) as f32;
    store(points, out, a);
    store(points, out + s - 1, b);
    for j in 1..s - 1 {
        let u = top * j as f32 / (s - 1) as f32;
        let k = (u.floor() as i32 + p).clamp(p, m - 1);
        let mut d = [[0f32; 2]; 4];
        for q in 0..=p {
            d[q as usize] = c[(q + k - p) as usize];
        }
        for r in 1..=p {
            for q in (r..=p).rev() {
                let lo = knot(q + k - p, m, p);
                let hi = knot(q + 1 + k - r, m, p);
                let alpha = if hi > lo { (u - lo) / (hi - lo) } else { 0.0 };
                let (prev, cur) = (d[q as usize - 1], d[q as usize]);
                d[q as usize] = [0, 1].map(|k| (1.0 - alpha) * prev[k] + alpha * cur[k]);
            }
        }
        store(points, out + j, d[p as usize]);
    }
}
