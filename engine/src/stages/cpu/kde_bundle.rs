//! CPU mirror of `shaders/wgsl/kde_bundle.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use super::Words;
use crate::stages::StageError;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub samples: u32,
    pub grid: u32,
    pub radius: u32,
    pub step: f32,
    pub smoothing: f32,
    pub _pad0: u32,
    pub _pad1: u32,
}

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        super::params_from_words(words)
    }
}

pub const MAX_SAMPLES: usize = 32;

type V2 = [f32; 2];

fn load_f32(w: &Words, i: usize) -> f32 {
    f32::from_bits(w[i].load(Relaxed))
}

fn store_f32(w: &Words, i: usize, v: f32) {
    w[i].store(v.to_bits(), Relaxed);
}

fn load_point(points: &Words, i: usize) -> V2 {
    [load_f32(points, 2 * i), load_f32(points, 2 * i + 1)]
}

fn store_point(points: &Words, i: usize, p: V2) {
    store_f32(points, 2 * i, p[0]);
    store_f32(points, 2 * i + 1, p[1]);
}

pub fn kde_init(e: u32, params: &Params, endpoints: &Words, points: &Words) {
    if e >= params.n {
        return;
    }
    let ep = [0, 1, 2, 3].map(|k| load_f32(endpoints, 4 * e as usize + k));
    let last = (params.samples - 1) as f32;
    for k in 0..params.samples - 1 {
        let t = k as f32 / last;
        let p = [ep[0] + (ep[2] - ep[0]) * t, ep[1] + (ep[3] - ep[1]) * t];
        store_point(points, (e * params.samples + k) as usize, p);
    }
    store_point(points, (e * params.samples + params.samples - 1) as usize, [ep[2], ep[3]]);
}

fn cell_of(params: &Params, p: V2) -> (u32, u32) {
    let g = params.grid as f32;
    let c = |v: f32| (v * g).floor().clamp(0.0, g - 1.0) as u32;
    (c(p[0]), c(p[1]))
}

pub fn kde_splat(i: u32, params: &Params, points: &Words, weights: &Words, splat: &Words) {
    if i >= params.n * params.samples {
        return;
    }
    let p = load_point(points, i as usize);
    if p[0].is_nan() || p[1].is_nan() {
        return;
    }
    let (cx, cy) = cell_of(params, p);
    let cell = (cy * params.grid + cx) as usize;
    let w = weights[(i / params.samples) as usize].load(Relaxed);
    let old = splat[2 * cell].fetch_add(w, Relaxed);
    if old > 0xffff_ffff - w {
        splat[2 * cell + 1].fetch_add(1, Relaxed);
    }
}

fn kernel(d: i32, r: u32) -> f32 {
    let x = d as f32 / (r as f32 + 1.0);
    1.0 - x * x
}

pub fn kde_blur_x(i: u32, params: &Params, splat: &Words, blur_out: &Words) {
    let g = params.grid;
    if i >= g * g {
        return;
    }
    let x = (i % g) as i32;
    let row = i - x as u32;
    let r = params.radius as i32;
    let mut acc = 0.0f32;
    for d in -r..=r {
        let xx = x + d;
        if xx >= 0 && xx < g as i32 {
            let c = (row + xx as u32) as usize;
            let v = splat[2 * c].load(Relaxed) as f32 + splat[2 * c + 1].load(Relaxed) as f32 * 4_294_967_296.0;
            acc += kernel(d, params.radius) * v;
        }
    }
    store_f32(blur_out, i as usize, acc);
}

pub fn kde_blur_y(i: u32, params: &Params, blur_in: &Words, blur_out: &Words) {
    let g = params.grid;
    if i >= g * g {
        return;
    }
    let x = i % g;
    let y = (i / g) as i32;
    let r = params.radius as i32;
    let mut acc = 0.0f32;
    for d in -r..=r {
        let yy = y + d;
        if yy >= 0 && yy < g as i32 {
            acc += kernel(d, params.radius) * load_f32(blur_in, (yy as u32 * g + x) as usize);
        }
    }
    store_f32(blur_out, i as usize, acc);
}

fn mix(a: f32, b: f32, t: f32) -> f32 {
    a * (1.0 - t) + b * t
}

fn sample_density(params: &Params, density: &Words, p: V2) -> f32 {
    let g = params.grid as f32;
    let q = [(p[0] * g - 0.5).clamp(0.0, g - 1.0), (p[1] * g - 0.5).clamp(0.0, g - 1.0)];
    let c0 = [q[0].floor() as u32, q[1].floor() as u32];
    let c1 = [(c0[0] + 1).min(params.grid - 1), (c0[1] + 1).min(params.grid - 1)];
    let f = [q[0] - q[0].floor(), q[1] - q[1].floor()];
    let gi = params.grid;
    let at = |x: u32, y: u32| load_f32(density, (y * gi + x) as usize);
    let (a, b, c, d) = (at(c0[0], c0[1]), at(c1[0], c0[1]), at(c0[0], c1[1]), at(c1[0], c1[1]));
    mix(mix(a, b, f[0]), mix(c, d, f[0]), f[1])
}

fn distance(a: V2, b: V2) -> f32 {
    ((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1])).sqrt()
}

#[expect(clippy::needless_range_loop, reason = "indexed loops, as in the shader, keep the mirror diffable by eye")]
pub fn kde_advect(e: u32, params: &Params, points: &Words, density: &Words) {
    if e >= params.n {
        return;
    }
    let s = params.samples as usize;
    let base = e as usize * s;
    let mut p = [[0f32; 2]; MAX_SAMPLES];
    for (k, slot) in p.iter_mut().enumerate().take(s) {
        *slot = load_point(points, base + k);
    }
    let h = 1.0 / params.grid as f32;
    for k in 1..s - 1 {
        let q = p[k];
        let gx = sample_density(params, density, [q[0] + h, q[1]]) - sample_density(params, density, [q[0] - h, q[1]]);
        let gy = sample_density(params, density, [q[0], q[1] + h]) - sample_density(params, density, [q[0], q[1] - h]);
        let len = (gx * gx + gy * gy).sqrt();
        if len > 0.0 {
            let f = params.step / len;
            p[k] = [q[0] + gx * f, q[1] + gy * f];
        }
    }
    let mut sm = [[0f32; 2]; MAX_SAMPLES];
    sm[0] = p[0];
    sm[s - 1] = p[s - 1];
    for k in 1..s - 1 {
        let w = 0.5 * params.smoothing;
        sm[k] = [
            p[k][0] * (1.0 - params.smoothing) + (p[k - 1][0] + p[k + 1][0]) * w,
            p[k][1] * (1.0 - params.smoothing) + (p[k - 1][1] + p[k + 1][1]) * w,
        ];
    }
    let mut total = 0.0f32;
    for k in 1..s {
        total += distance(sm[k - 1], sm[k]);
    }
    store_point(points, base, sm[0]);
    store_point(points, base + s - 1, sm[s - 1]);
    let mut seg = 1usize;
    let mut walked = 0.0f32;
    let mut seg_len = distance(sm[0], sm[1]);
    for j in 1..s - 1 {
        let target_len = total * j as f32 / (s - 1) as f32;
        while seg + 1 < s && walked + seg_len < target_len {
            walked += seg_len;
            seg += 1;
            seg_len = distance(sm[seg - 1], sm[seg]);
        }
        let t = if seg_len > 0.0 { ((target_len - walked) / seg_len).clamp(0.0, 1.0) } else { 0.0 };
        let (a, b) = (sm[seg - 1], sm[seg]);
        store_point(points, base + j, [mix(a[0], b[0], t), mix(a[1], b[1], t)]);
    }
}
