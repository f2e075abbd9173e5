//! CPU mirror of `kde_bundle.wgsl` (keep the two in sync).

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use crate::StageError;
use crate::words::Words;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub samples: u32,
    pub grid: u32,
    pub radius: u32,
    pub step: f32,
    pub smoothing: f32,
    pub splat_next: u32,
    pub _pad1: u32,
}

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
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

/// Read access to a grid of words: a runner's buffer, or [`PairedWords`] in plain memory (the
/// gradient, as [`advect_group`] reads it on either path).
pub(super) trait WordGrid: Sync {
    fn word(&self, i: usize) -> u32;

    /// Per lane, the words of the cells `(x0, y0)`, `(x1, y0)`, `(x0, y1)` and `(x1, y1)` of a
    /// `grid`-wide grid, where `x1` is `min(x0 + 1, grid - 1)`.
    #[inline(always)]
    fn corners(&self, grid: u32, x0: &[u32; LANES], y0: &[u32; LANES], y1: &[u32; LANES]) -> [[u32; LANES]; 4] {
        let x1 = lanes(|l| (x0[l] + 1).min(grid - 1));
        let at = |xs: &[u32; LANES], ys: &[u32; LANES]| lanes(|l| self.word((ys[l] * grid + xs[l]) as usize));
        [at(x0, y0), at(&x1, y0), at(x0, y1), at(&x1, y1)]
    }
}

/// A grid of words whose every cell also holds, in its high half, the word of the cell to its
/// right (the last column its own word): [`WordGrid::corners`] in two loads per lane, not four.
pub(super) struct PairedWords<'a>(pub &'a [u64]);

impl PairedWords<'_> {
    /// The pair of a cell whose word is `word` and whose right-hand neighbour's is `right`.
    pub(super) fn pair(word: u32, right: u32) -> u64 {
        u64::from(word) | (u64::from(right) << 32)
    }
}

impl WordGrid for PairedWords<'_> {
    #[inline(always)]
    fn word(&self, i: usize) -> u32 {
        self.0[i] as u32
    }

    #[inline(always)]
    fn corners(&self, grid: u32, x0: &[u32; LANES], y0: &[u32; LANES], y1: &[u32; LANES]) -> [[u32; LANES]; 4] {
        let top: [u64; LANES] = lanes(|l| self.0[(y0[l] * grid + x0[l]) as usize]);
        let bottom: [u64; LANES] = lanes(|l| self.0[(y1[l] * grid + x0[l]) as usize]);
        [
            lanes(|l| top[l] as u32),
            lanes(|l| (top[l] >> 32) as u32),
            lanes(|l| bottom[l] as u32),
            lanes(|l| (bottom[l] >> 32) as u32),
        ]
    }
}

impl WordGrid for Words {
    #[inline(always)]
    fn word(&self, i: usize) -> u32 {
        self[i].load(Relaxed)
    }
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
    for k in 0..params.samples {
        store_point(points, (e * params.samples + k) as usize, init_point(ep, k, params.samples));
    }
}

/// Point `k` of `samples` of the straight edge `ep` (`kde_init`'s formula; the last point is the
/// end itself).
pub(super) fn init_point(ep: [f32; 4], k: u32, samples: u32) -> V2 {
    if k + 1 == samples {
        return [ep[2], ep[3]];
    }
    let t = k as f32 / (samples - 1) as f32;
    [ep[0] + (ep[2] - ep[0]) * t, ep[1] + (ep[3] - ep[1]) * t]
}

/// The cell of a point; `clamp` then truncation equals the shader's `floor` then `clamp` (the
/// clamped value is never negative) and avoids a libm call per point.
fn cell_of(params: &Params, p: V2) -> (u32, u32) {
    let g = params.grid as f32;
    let c = |v: f32| (v * g).clamp(0.0, g - 1.0) as u32;
    (c(p[0]), c(p[1]))
}

/// A cell of a task's own density grid: `u32` where no cell can overflow it (a third less memory
/// traffic than `u64`, whose grids fall out of a core's L2 cache sooner), else `u64`.
pub(super) trait Cell: Copy + Default + Send + Sync {
    fn add(&mut self, w: u32);
    fn get(self) -> u64;
}

impl Cell for u32 {
    fn add(&mut self, w: u32) {
        *self = self.wrapping_add(w);
    }
    fn get(self) -> u64 {
        u64::from(self)
    }
}

impl Cell for u64 {
    fn add(&mut self, w: u32) {
        *self = self.wrapping_add(u64::from(w));
    }
    fn get(self) -> u64 {
        self
    }
}

/// Whether every point of every edge, each adding its edge's weight to one cell, sums below 2^32.
fn fits_u32(params: &Params, weights: &Words) -> bool {
    let n = params.n as usize;
    let total: u64 = weights[..n.min(weights.len())].iter().map(|w| u64::from(w.load(Relaxed))).sum();
    sums_fit_u32(total, params.samples)
}

/// Whether `samples` points of edges weighing `total` in all sum below 2^32 in any one cell.
pub(super) fn sums_fit_u32(total: u64, samples: u32) -> bool {
    total.saturating_mul(u64::from(samples)) <= u64::from(u32::MAX)
}

/// How many tasks, each with its own density grid, splat `points` points: one per thread, and
/// at most one per 16,384 points (each task's grid is zeroed and summed whatever it holds).
pub(super) fn splat_tasks(points: usize) -> usize {
    rayon::current_num_threads().clamp(1, points.div_ceil(1 << 14).max(1))
}

/// Splats one edge's points into a task's own grid (the shader's `splat_point`, without atomics).
fn splat_edge<T: Cell>(params: &Params, pts: &[V2], w: u32, grid: &mut [T]) {
    for p in pts {
        if p[0].is_nan() || p[1].is_nan() {
            continue;
        }
        let (cx, cy) = cell_of(params, *p);
        grid[(cy * params.grid + cx) as usize].add(w);
    }
}

/// Runs `edges(range, grid)` over every edge, each rayon task with a range and its own grid, then
/// adds the grids into `splat` (low and high words, as the shader's carry leaves them). Integer
/// additions commute, so the words equal one atomic add per point in any order, without
/// contended atomics.
fn with_task_grids<T: Cell>(params: &Params, splat: &Words, edges: impl Fn(Range<usize>, &mut [T]) + Sync) {
    let n = params.n as usize;
    let cells = params.grid as usize * params.grid as usize;
    let tasks = splat_tasks(n * params.samples as usize);
    let per = n.div_ceil(tasks).max(1);
    let grids: Vec<Vec<T>> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let mut grid = vec![T::default(); cells];
            edges((t * per).min(n)..((t + 1) * per).min(n), &mut grid);
            grid
        })
        .collect();
    // Blocks of cells: the grids' sums first (a loop that vectorises), then every cell updated
    // without a branch, as most are empty and a test per cell mispredicts.
    const BLOCK: usize = 4096;
    (0..cells.div_ceil(BLOCK)).into_par_iter().for_each_init(
        || vec![0u64; BLOCK],
        |add, b| {
            let range = b * BLOCK..((b + 1) * BLOCK).min(cells);
            let add = &mut add[..range.len()];
            add.fill(0);
            for g in &grids {
                for (a, &v) in add.iter_mut().zip(&g[range.clone()]) {
                    *a = a.wrapping_add(v.get());
                }
            }
            for (c, &a) in range.zip(add.iter()) {
                let old = u64::from(splat[2 * c].load(Relaxed)) | (u64::from(splat[2 * c + 1].load(Relaxed)) << 32);
                let new = old.wrapping_add(a);
                splat[2 * c].store(new as u32, Relaxed);
                splat[2 * c + 1].store((new >> 32) as u32, Relaxed);
            }
        },
    );
}

fn splat_all<T: Cell>(params: &Params, points: &Words, weights: &Words, splat: &Words) {
    let s = params.samples as usize;
    with_task_grids::<T>(params, splat, |edges, grid| {
        for e in edges {
            let mut pts = [[0f32; 2]; MAX_SAMPLES];
            for (k, slot) in pts.iter_mut().enumerate().take(s) {
                *slot = load_point(points, e * s + k);
            }
            splat_edge(params, &pts[..s], weights[e].load(Relaxed), grid);
        }
    });
}

/// All invocations of `kde_splat` (points `0..n * samples`).
pub fn kde_splat_all(params: &Params, points: &Words, weights: &Words, splat: &Words) {
    if fits_u32(params, weights) {
        splat_all::<u32>(params, points, weights, splat);
    } else {
        splat_all::<u64>(params, points, weights, splat);
    }
}

fn advect_splat_all<T: Cell>(params: &Params, points: &Words, gradient: &Words, weights: &Words, splat: &Words) {
    let s = params.samples as usize;
    with_task_grids::<T>(params, splat, |edges, grid| {
        let lanes_end = edges.start + edges.len() / LANES * LANES;
        let mut scratch = LaneScratch::new();
        for e0 in (edges.start..lanes_end).step_by(LANES) {
            let pts = kde_advect_lanes(e0, params, points, gradient, &mut scratch);
            let w: [u32; LANES] = lanes(|l| weights[e0 + l].load(Relaxed));
            splat_lanes(params, &pts[..s], &w, grid);
        }
        for (e, w) in weights.iter().enumerate().take(edges.end).skip(lanes_end) {
            let pts = kde_advect(e as u32, params, points, gradient);
            splat_edge(params, &pts[..s], w.load(Relaxed), grid);
        }
    });
}

/// All invocations of `kde_advect`; with `params.splat_next`, each edge's new points are splatted
/// as the shader does.
pub fn kde_advect_all(params: &Params, points: &Words, gradient: &Words, weights: &Words, splat: &Words) {
    if params.splat_next == 0 {
        let n = params.n as usize;
        (0..n.div_ceil(LANES)).into_par_iter().with_min_len(128).for_each_init(LaneScratch::new, |scratch, group| {
            let e0 = group * LANES;
            if e0 + LANES <= n {
                kde_advect_lanes(e0, params, points, gradient, scratch);
            } else {
                for e in e0..n {
                    kde_advect(e as u32, params, points, gradient);
                }
            }
        });
    } else if fits_u32(params, weights) {
        advect_splat_all::<u32>(params, points, gradient, weights, splat);
    } else {
        advect_splat_all::<u64>(params, points, gradient, weights, splat);
    }
}

fn kernel(d: i32, r: u32) -> f32 {
    let x = d as f32 / (r as f32 + 1.0);
    1.0 - x * x
}

/// The kernel's taps `d = -r..=r`, evaluated as the shader does.
pub(super) fn taps(r: u32) -> Vec<f32> {
    (-(r as i32)..=r as i32).map(|d| kernel(d, r)).collect()
}

/// All invocations of `kde_blur_x`, one row per task. Each output cell sums its taps in the
/// shader's order (d ascending, from 0.0); a tap outside the grid adds +0.0 instead of being
/// skipped, which leaves the sum unchanged, so the floats equal the shader's.
pub fn kde_blur_x_all(params: &Params, splat: &Words, blur_out: &Words) {
    let (g, r) = (params.grid as usize, params.radius as usize);
    let w = taps(params.radius);
    (0..g).into_par_iter().for_each_init(
        || (vec![0f32; g + 2 * r], vec![0f32; g]),
        |(row, acc), y| {
            for x in 0..g {
                let c = y * g + x;
                row[r + x] = density_f32(
                    u64::from(splat[2 * c].load(Relaxed)) | (u64::from(splat[2 * c + 1].load(Relaxed)) << 32),
                );
            }
            blur_x_row(&w, row, acc);
            for (x, &a) in acc.iter().enumerate() {
                store_f32(blur_out, y * g + x, a);
            }
        },
    );
}

/// A cell's splatted density as `kde_blur_x` reads it: low word plus high word times 2^32.
#[inline(always)]
pub(super) fn density_f32(v: u64) -> f32 {
    v as u32 as f32 + (v >> 32) as u32 as f32 * 4_294_967_296.0
}

/// One row of `kde_blur_x`: `row` is the input padded with `taps.len() / 2` zeros each side,
/// `out` the row's outputs, each summing its taps in the shader's order from 0.0.
pub(super) fn blur_x_row(taps: &[f32], row: &[f32], out: &mut [f32]) {
    let g = out.len();
    out.fill(0.0);
    for (d, &k) in taps.iter().enumerate() {
        for (a, &v) in out.iter_mut().zip(&row[d..d + g]) {
            *a += k * v;
        }
    }
}

/// All invocations of `kde_blur_y`, one row of outputs per task (taps in the shader's order).
pub fn kde_blur_y_all(params: &Params, blur_in: &Words, blur_out: &Words) {
    let g = params.grid as usize;
    let w = taps(params.radius);
    let input = plain_f32(&blur_in[..g * g]);
    (0..g).into_par_iter().for_each_init(
        || vec![0f32; g],
        |acc, y| {
            blur_y_row(&w, &input, y, acc);
            for (x, &a) in acc.iter().enumerate() {
                store_f32(blur_out, y * g + x, a);
            }
        },
    );
}

/// Row `y` of `kde_blur_y` over the grid `input` (rows of `out.len()` cells) into `out`.
pub(super) fn blur_y_row(taps: &[f32], input: &[f32], y: usize, out: &mut [f32]) {
    let (g, r) = (out.len(), taps.len() / 2);
    out.fill(0.0);
    for (d, &k) in taps.iter().enumerate() {
        let yy = (y + d) as isize - r as isize;
        if yy < 0 || yy >= g as isize {
            continue; // adds +0.0 in the shader's terms: skipped there too
        }
        for (a, &v) in out.iter_mut().zip(&input[yy as usize * g..(yy as usize + 1) * g]) {
            *a += k * v;
        }
    }
}

fn mix(a: f32, b: f32, t: f32) -> f32 {
    a * (1.0 - t) + b * t
}

/// The words of a buffer as floats, copied out in parallel (each a separate atomic load).
fn plain_f32(words: &Words) -> Vec<f32> {
    let mut out = vec![0f32; words.len()];
    out.par_chunks_mut(1 << 12).zip(words.par_chunks(1 << 12)).for_each(|(dst, src)| {
        for (d, w) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(w.load(Relaxed));
        }
    });
    out
}

/// All invocations of `kde_gradient`, one row per task (the shader's formula per cell, the same
/// operations in the same order). The grid is copied out of the buffer first, so the per-cell
/// loop runs on plain slices and vectorises.
pub fn kde_gradient_all(params: &Params, blur_in: &Words, gradient_out: &Words) {
    let g = params.grid as usize;
    let input = plain_f32(&blur_in[..g * g]);
    (0..g).into_par_iter().for_each_init(
        || (vec![0f32; g + 2], vec![0u32; g]),
        |(mid, out), y| {
            gradient_row(&input, y, mid, out);
            for (x, &v) in out.iter().enumerate() {
                gradient_out[y * g + x].store(v, Relaxed);
            }
        },
    );
}

/// Row `y` of `kde_gradient` over the grid `input` (rows of `out.len()` cells) into `out`; `mid`
/// is working space of `out.len() + 2` cells.
pub(super) fn gradient_row(input: &[f32], y: usize, mid: &mut [f32], out: &mut [u32]) {
    let g = out.len();
    let row = |y: usize| &input[y * g..(y + 1) * g];
    // `mid` is padded by one clamped cell each side: `mid[x]` is the cell left of `x`.
    mid[1..=g].copy_from_slice(row(y));
    (mid[0], mid[g + 1]) = (mid[1], mid[g]);
    let (up, down) = (row((y + 1).min(g - 1)), row(y.max(1) - 1));
    for x in 0..g {
        let gx = mid[x + 2] - mid[x];
        let gy = up[x] - down[x];
        let len = (gx * gx + gy * gy).sqrt();
        let dir = if len > 0.0 { [gx / len, gy / len] } else { [0.0, 0.0] };
        out[x] = pack2x16snorm(dir);
    }
}

/// WGSL's `pack2x16snorm`: each component to `floor(0.5 + 32767 * clamp(v, -1, 1))`, first in the
/// low half.
fn pack2x16snorm(v: V2) -> u32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    let h = |x: f32| {
        let v = 0.5 + 32767.0 * x.clamp(-1.0, 1.0);
        // floor without a conversion: `v + MAGIC` rounds v to an integer r (|v| < 2^22), whose
        // two's complement is the low bits of the sum's mantissa; one less where r > v. Plain
        // float and integer operations, so a loop of these vectorises.
        let m = v + MAGIC;
        let r = m - MAGIC;
        let bits = m.to_bits().wrapping_sub(u32::from(r > v));
        bits & 0xffff
    };
    h(v[0]) | (h(v[1]) << 16)
}

/// The two signed 16-bit halves of a packed direction, as floats (exact).
fn halves(w: u32) -> V2 {
    [f32::from(w as u16 as i16), f32::from((w >> 16) as u16 as i16)]
}

/// The packed directions are interpolated as integers and scaled once (pack never writes -32768,
/// so this is `unpack2x16snorm` of each corner, mixed, up to rounding): no division per corner.
fn sample_gradient(params: &Params, gradient: &Words, p: V2) -> V2 {
    let g = params.grid as f32;
    let q = [(p[0] * g - 0.5).clamp(0.0, g - 1.0), (p[1] * g - 0.5).clamp(0.0, g - 1.0)];
    // q >= 0, so truncation is the shader's floor.
    let c0 = [q[0] as u32, q[1] as u32];
    let c1 = [(c0[0] + 1).min(params.grid - 1), (c0[1] + 1).min(params.grid - 1)];
    let f = [q[0] - c0[0] as f32, q[1] - c0[1] as f32];
    let gi = params.grid;
    let at = |x: u32, y: u32| halves(gradient[(y * gi + x) as usize].load(Relaxed));
    let (a, b, c, d) = (at(c0[0], c0[1]), at(c1[0], c0[1]), at(c0[0], c1[1]), at(c1[0], c1[1]));
    [0, 1].map(|k| mix(mix(a[k], b[k], f[0]), mix(c[k], d[k], f[0]), f[1]) * (1.0 / 32767.0))
}

fn distance(a: V2, b: V2) -> f32 {
    ((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1])).sqrt()
}

#[expect(clippy::needless_range_loop, reason = "indexed loops, as in the shader, keep the mirror diffable by eye")]
/// One invocation of `kde_advect` without its splat; returns the edge's new points.
pub fn kde_advect(e: u32, params: &Params, points: &Words, gradient: &Words) -> [V2; MAX_SAMPLES] {
    let mut out = [[0f32; 2]; MAX_SAMPLES];
    if e >= params.n {
        return out;
    }
    let s = params.samples as usize;
    let base = e as usize * s;
    let mut p = [[0f32; 2]; MAX_SAMPLES];
    for (k, slot) in p.iter_mut().enumerate().take(s) {
        *slot = load_point(points, base + k);
    }
    for k in 1..s - 1 {
        let q = p[k];
        let [gx, gy] = sample_gradient(params, gradient, q);
        p[k] = [q[0] + gx * params.step, q[1] + gy * params.step];
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
    // Segment lengths once; resample at equal arc length, endpoints exact.
    let mut seg_lens = [0f32; MAX_SAMPLES];
    // `walked[k]`: the shader's running sum after k segments (the same additions, in order).
    let mut walked_to = [0f32; MAX_SAMPLES];
    let mut total = 0.0f32;
    for k in 1..s {
        seg_lens[k] = distance(sm[k - 1], sm[k]);
        total += seg_lens[k];
        walked_to[k] = total;
    }
    out[0] = sm[0];
    out[s - 1] = sm[s - 1];
    let spacing = total / (s - 1) as f32;
    // `walked_to[1..s - 1]`, padded to a fixed length with +inf (less than no target), so that
    // the count below is a loop of fixed length, which vectorises.
    let mut bounds = [f32::INFINITY; MAX_SAMPLES];
    bounds[..s - 2].copy_from_slice(&walked_to[1..s - 1]);
    for j in 1..s - 1 {
        let target_len = spacing * j as f32;
        // The shader walks `seg` on while `seg + 1 < s` and `walked + seg_lens[seg] <
        // target_len`, i.e. while `walked_to[seg] < target_len`. The running sums never
        // decrease (and once NaN stay NaN, failing every test), so the segment it stops at is
        // one plus the count of `k < s - 1` with `walked_to[k] < target_len`: counted without a
        // branch, where the walk's exit mispredicts.
        let below = bounds.iter().map(|&w| u32::from(w < target_len)).sum::<u32>();
        let seg = 1 + below as usize;
        let walked = walked_to[seg - 1];
        let seg_len = seg_lens[seg];
        let t = if seg_len > 0.0 { ((target_len - walked) / seg_len).clamp(0.0, 1.0) } else { 0.0 };
        let (a, b) = (sm[seg - 1], sm[seg]);
        out[j] = [mix(a[0], b[0], t), mix(a[1], b[1], t)];
    }
    for (k, p) in out.iter().enumerate().take(s) {
        store_point(points, base + k, *p);
    }
    out
}

/// Edges advected at once by [`advect_group`].
pub(super) const LANES: usize = 8;

/// The running sums counted per resampled point by [`advect_group`] where the window is exact.
const WINDOW: usize = 4;

/// One value per lane (per edge of a group).
pub(super) type Lanes = [f32; LANES];

/// `f` of every lane. Written as loops over lanes of one operation each, the code below compiles
/// to vector instructions; each lane sees the scalar code's operations in the same order, so
/// its floats are the scalar code's, bit for bit (no operation is fused or reordered). A plain
/// loop: `std::array::from_fn` is not always inlined, which leaves a call per lane.
#[inline(always)]
fn lanes<T: Copy + Default>(f: impl Fn(usize) -> T) -> [T; LANES] {
    let mut out = [T::default(); LANES];
    for (l, v) in out.iter_mut().enumerate() {
        *v = f(l);
    }
    out
}

/// [`sample_gradient`] of every lane's point. `as i32 as u32` equals the scalar `as u32` on the
/// clamped values (in `0..grid`, or NaN, which both map to 0) and converts in vector registers.
#[inline(always)]
fn sample_gradient_lanes<G: WordGrid + ?Sized>(params: &Params, gradient: &G, x: &Lanes, y: &Lanes) -> [Lanes; 2] {
    let g = params.grid as f32;
    let gi = params.grid;
    let qx = lanes(|l| (x[l] * g - 0.5).clamp(0.0, g - 1.0));
    let qy = lanes(|l| (y[l] * g - 0.5).clamp(0.0, g - 1.0));
    let c0x: [u32; LANES] = lanes(|l| qx[l] as i32 as u32);
    let c0y: [u32; LANES] = lanes(|l| qy[l] as i32 as u32);
    let c1y: [u32; LANES] = lanes(|l| (c0y[l] + 1).min(gi - 1));
    let fx = lanes(|l| qx[l] - c0x[l] as f32);
    let fy = lanes(|l| qy[l] - c0y[l] as f32);
    let [a, b, c, d] = gradient.corners(gi, &c0x, &c0y, &c1y);
    [bilinear_lanes([&a, &b, &c, &d], 0, &fx, &fy), bilinear_lanes([&a, &b, &c, &d], 16, &fx, &fy)]
}

/// One component (the half at `shift`) of [`sample_gradient_lanes`]' four corners, mixed.
#[inline(always)]
fn bilinear_lanes(corners: [&[u32; LANES]; 4], shift: u32, fx: &Lanes, fy: &Lanes) -> Lanes {
    let half = |w: &[u32; LANES]| lanes(|l| f32::from((w[l] >> shift) as u16 as i16));
    let (a, b, c, d) = (half(corners[0]), half(corners[1]), half(corners[2]), half(corners[3]));
    lanes(|l| mix(mix(a[l], b[l], fx[l]), mix(c[l], d[l], fx[l]), fy[l]) * (1.0 / 32767.0))
}

/// A group's points: `[k][0][l]` and `[k][1][l]` are x and y of point `k` of lane `l`.
pub(super) type LanePoints = [[Lanes; 2]; MAX_SAMPLES];

/// Working arrays of [`advect_group`], allocated once per task rather than zeroed per group
/// (`walked_to[0]`, the distance walked before the first segment, stays 0).
pub(super) struct LaneWork {
    sm: LanePoints,
    seg_lens: [Lanes; MAX_SAMPLES],
    walked_to: [Lanes; MAX_SAMPLES],
}

impl LaneWork {
    pub(super) fn new() -> Box<Self> {
        let (point, lanes) = ([[[0.0; LANES]; 2]; MAX_SAMPLES], [[0.0; LANES]; MAX_SAMPLES]);
        Box::new(Self { sm: point, seg_lens: lanes, walked_to: lanes })
    }
}

/// [`LaneWork`] and a group's points, copied out of the points buffer.
struct LaneScratch {
    p: LanePoints,
    work: Box<LaneWork>,
}

impl LaneScratch {
    fn new() -> Self {
        Self { p: [[[0.0; LANES]; 2]; MAX_SAMPLES], work: LaneWork::new() }
    }
}

/// [`kde_advect`] of the edges `e0..e0 + LANES` (lane `l` is edge `e0 + l`, which must be below
/// `params.n`): [`advect_group`] between a copy out of `points` and back; returns the new points
/// (the first `params.samples` of them; the rest are left from earlier calls).
fn kde_advect_lanes<'a>(
    e0: usize,
    params: &Params,
    points: &Words,
    gradient: &Words,
    scratch: &'a mut LaneScratch,
) -> &'a LanePoints {
    let s = params.samples as usize;
    let p = &mut scratch.p;
    for l in 0..LANES {
        for (k, pk) in p.iter_mut().enumerate().take(s) {
            [pk[0][l], pk[1][l]] = load_point(points, (e0 + l) * s + k);
        }
    }
    advect_group(params, gradient, &mut p[..s], &mut scratch.work);
    for l in 0..LANES {
        for (k, pk) in p.iter().enumerate().take(s) {
            store_point(points, (e0 + l) * s + k, [pk[0][l], pk[1][l]]);
        }
    }
    p
}

/// [`kde_advect`] of a group of `LANES` edges whose `params.samples` points are `p` (in place):
/// the same steps, each on every lane at once.
#[expect(clippy::needless_range_loop, reason = "indexed loops keep the lanes and the scalar code diffable by eye")]
pub(super) fn advect_group<G: WordGrid + ?Sized>(
    params: &Params,
    gradient: &G,
    p: &mut [[Lanes; 2]],
    work: &mut LaneWork,
) {
    let s = params.samples as usize;
    let LaneWork { sm, seg_lens, walked_to } = work;
    for k in 1..s - 1 {
        let [gx, gy] = sample_gradient_lanes(params, gradient, &p[k][0], &p[k][1]);
        let q = p[k];
        p[k] = [lanes(|l| q[0][l] + gx[l] * params.step), lanes(|l| q[1][l] + gy[l] * params.step)];
    }
    (sm[0], sm[s - 1]) = (p[0], p[s - 1]);
    let w = 0.5 * params.smoothing;
    for k in 1..s - 1 {
        for c in 0..2 {
            sm[k][c] = lanes(|l| p[k][c][l] * (1.0 - params.smoothing) + (p[k - 1][c][l] + p[k + 1][c][l]) * w);
        }
    }
    let mut total = [0f32; LANES];
    for k in 1..s {
        let (a, b) = (sm[k - 1], sm[k]);
        seg_lens[k] = lanes(|l| {
            let (dx, dy) = (a[0][l] - b[0][l], a[1][l] - b[1][l]);
            (dx * dx + dy * dy).sqrt()
        });
        total = lanes(|l| total[l] + seg_lens[k][l]);
        walked_to[k] = total;
    }
    // The new points go into `p` (no longer needed): the ends are the smoothed ones (unchanged).
    let spacing = lanes(|l| total[l] / (s - 1) as f32);
    for j in 1..s - 1 {
        let target = lanes(|l| spacing[l] * j as f32);
        // The segment each lane stops at, counted as in `kde_advect`: one plus the count of
        // `k in 1..s - 1` with `walked_to[k] < target`. Points were spaced evenly by the last
        // resampling, so the count is about `j - 1`: only the window `lo..=hi` around it is
        // counted, and every `k < lo` taken as counted, every `k > hi` as not. That is exact
        // where `walked_to[lo - 1] < target` and `!(walked_to[hi + 1] < target)`, as the
        // running sums never decrease and, once NaN, stay NaN (which fails every test): the
        // first makes every earlier sum a number below `target`, the second every later sum
        // NaN or at least `target`. Where a lane fails either, the group counts them all.
        let (lo, hi) = (j.saturating_sub(WINDOW / 2).max(1), (j + WINDOW / 2 - 1).min(s - 2));
        let exact = (lo == 1 || (0..LANES).all(|l| walked_to[lo - 1][l] < target[l]))
            && (hi == s - 2 || !(0..LANES).any(|l| walked_to[hi + 1][l] < target[l]));
        let (lo, hi) = if exact { (lo, hi) } else { (1, s - 2) };
        let mut seg = [lo as u32; LANES];
        for k in lo..=hi {
            for l in 0..LANES {
                seg[l] += u32::from(walked_to[k][l] < target[l]);
            }
        }
        let seg = lanes(|l| seg[l] as usize);
        let walked = lanes(|l| walked_to[seg[l] - 1][l]);
        let seg_len = lanes(|l| seg_lens[seg[l]][l]);
        let t = lanes(|l| if seg_len[l] > 0.0 { ((target[l] - walked[l]) / seg_len[l]).clamp(0.0, 1.0) } else { 0.0 });
        for c in 0..2 {
            p[j][c] = lanes(|l| mix(sm[seg[l] - 1][c][l], sm[seg[l]][c][l], t[l]));
        }
    }
}

/// [`splat_edge`] of every lane's points, lane `l` adding `w[l]`.
pub(super) fn splat_lanes<T: Cell>(params: &Params, pts: &[[Lanes; 2]], w: &[u32; LANES], grid: &mut [T]) {
    let g = params.grid as f32;
    for p in pts {
        let cell = |v: &Lanes| -> [u32; LANES] { lanes(|l| (v[l] * g).clamp(0.0, g - 1.0) as i32 as u32) };
        let (cx, cy) = (cell(&p[0]), cell(&p[1]));
        // A NaN point adds 0 to the in-range cell its coordinates convert to (a NaN one to 0):
        // the same as skipping it, without a branch.
        let add: [u32; LANES] = lanes(|l| if p[0][l].is_nan() || p[1][l].is_nan() { 0 } else { w[l] });
        for l in 0..LANES {
            grid[(cy[l] * params.grid + cx[l]) as usize].add(add[l]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    fn words(v: impl IntoIterator<Item = u32>) -> Vec<AtomicU32> {
        v.into_iter().map(AtomicU32::new).collect()
    }

    fn plain(w: &[AtomicU32]) -> Vec<u32> {
        w.iter().map(|v| v.load(Relaxed)).collect()
    }

    /// Advecting edges a group of lanes at a time gives the scalar `kde_advect`'s points and
    /// splat, bit for bit: every sample count's edge cases (2 samples: no interior point; 32:
    /// the most), groups and a remainder, points outside the unit square, NaN points and
    /// zero-length edges, and both splat widths.
    #[test]
    fn lanes_equal_the_scalar_advection() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (samples, even) in [2u32, 3, 7, 16, 32].into_iter().flat_map(|s| [(s, false), (s, true)]) {
            for n in [5u32, 8, 21] {
                let grid = 64;
                let params =
                    Params { n, samples, grid, radius: 3, step: 0.01, smoothing: 0.5, splat_next: 1, _pad1: 0 };
                let mut pts = Vec::new();
                for e in 0..n {
                    let start = [(next() % 1000) as f32 / 800.0 - 0.1, (next() % 1000) as f32 / 800.0 - 0.1];
                    let jitter = (next() % 1000) as f32 / 1000.0;
                    for k in 0..samples {
                        let p = match e % 7 {
                            _ if even => {
                                // Nearly even spacing, as resampling leaves points: the
                                // resampling count's window holds, or (more jitter) fails.
                                let t = (k as f32 + jitter * ((next() % 1000) as f32 / 1000.0 - 0.5)) / samples as f32;
                                [start[0] + 0.3 * t, start[1] + 0.2 * t]
                            }
                            // A zero-length edge: every point the same.
                            3 => start,
                            // NaN points, as a degenerate input leaves them.
                            5 if k == samples / 2 => [f32::NAN, 0.5],
                            _ => [(next() % 1000) as f32 / 800.0 - 0.1, (next() % 1000) as f32 / 800.0 - 0.1],
                        };
                        pts.extend(p.map(f32::to_bits));
                    }
                }
                let gradient = words((0..grid * grid).map(|_| next() as u32));
                for heavy in [false, true] {
                    let weights = words((0..n).map(|e| if heavy { u32::MAX - e } else { 1 + e % 3 }));
                    assert_eq!(fits_u32(&params, &weights), !heavy);
                    let (scalar, lanes) = (words(pts.iter().copied()), words(pts.iter().copied()));
                    for e in 0..n {
                        kde_advect(e, &params, &scalar, &gradient);
                    }
                    let expected_splat = words((0..2 * grid * grid).map(|_| 0));
                    kde_splat_all(&params, &scalar, &weights, &expected_splat);
                    let splat = words((0..2 * grid * grid).map(|_| 0));
                    kde_advect_all(&params, &lanes, &gradient, &weights, &splat);
                    let what = format!("{samples} samples, {n} edges, even {even}, heavy {heavy}");
                    assert_eq!(plain(&lanes), plain(&scalar), "points: {what}");
                    assert_eq!(plain(&splat), plain(&expected_splat), "splat: {what}");
                    assert!(plain(&splat).iter().any(|&w| w != 0), "{what}");
                    // The last iteration's advection, without a splat.
                    let last = Params { splat_next: 0, ..params };
                    let (scalar, lanes) = (words(pts.iter().copied()), words(pts.iter().copied()));
                    for e in 0..n {
                        kde_advect(e, &last, &scalar, &gradient);
                    }
                    kde_advect_all(&last, &lanes, &gradient, &weights, &splat);
                    assert_eq!(plain(&lanes), plain(&scalar), "points, no splat: {what}");
                }
            }
        }
    }

    /// The conversion-free floor equals `floor` by definition, on a sweep of [-1, 1], every
    /// half-integer tie and the ends.
    #[test]
    fn pack2x16snorm_is_the_wgsl_formula() {
        let reference = |x: f32| {
            let v = (0.5 + 32767.0 * x.clamp(-1.0, 1.0)).floor() as i32;
            u32::from(v as i16 as u16)
        };
        let mut xs: Vec<f32> = (-200_000..=200_000).map(|i| i as f32 / 200_000.0).collect();
        xs.extend((-32767..=32767).map(|k| k as f32 / 32767.0));
        xs.extend([-1.0, 1.0, 0.0, -0.0, 2.0, -2.0, f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 1e-9, -1e-9]);
        for &x in &xs {
            assert_eq!(pack2x16snorm([x, -x]), reference(x) | (reference(-x) << 16), "x = {x}");
        }
    }
}
