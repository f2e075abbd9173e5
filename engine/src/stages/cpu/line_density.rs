//! CPU mirror of `shaders/wgsl/line_density.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

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
    // `floor` without a libm call (no SSE4.1 on the baseline target): clamped values are exact
    // in `i32`, and truncation rounds negatives up, so step those down.
    let v = v.clamp(-LIMIT, LIMIT);
    let t = v as i32;
    if (t as f32) > v { t - 1 } else { t }
}

/// One invocation of `line_density`.
pub fn line_density(i: u32, params: &Params, segments: &Words, weights: &Words, counts: &Words, sums: &Words) {
    if i >= params.n {
        return;
    }
    let s = |k: usize| f32::from_bits(segments[4 * i as usize + k].load(Relaxed));
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
struct Walk {
    x: i32,
    y: i32,
    x1: i32,
    y1: i32,
    dx: i32,
    dy: i32,
    sx: i32,
    sy: i32,
    err: i32,
}

impl Walk {
    fn new([x, y, x1, y1]: [i32; 4]) -> Self {
        let (dx, dy) = ((x1 - x).abs(), -(y1 - y).abs());
        let (sx, sy) = (if x < x1 { 1 } else { -1 }, if y < y1 { 1 } else { -1 });
        Self { x, y, x1, y1, dx, dy, sx, sy, err: dx + dy }
    }

    fn done(&self) -> bool {
        self.x == self.x1 && self.y == self.y1
    }

    #[inline(always)]
    fn step(&mut self) {
        let e2 = 2 * self.err;
        let (mx, my) = (e2 >= self.dy, e2 <= self.dx);
        self.err += if mx { self.dy } else { 0 } + if my { self.dx } else { 0 };
        self.x += if mx { self.sx } else { 0 };
        self.y += if my { self.sy } else { 0 };
    }
}

/// Rows per band of the tiled CPU pass: a band's counts (and sums), at most 512 KiB, stay in a core's L2
/// cache (512 KiB measured a little faster than 256 KiB: fewer segments drawn in two bands).
/// A power of two, so that bucketing shifts rather than divides.
fn band_rows(width: u32, weighted: bool) -> u32 {
    let bytes_per_row = width.max(1) * if weighted { 12 } else { 4 };
    let rows = ((512 << 10) / bytes_per_row).clamp(1, 1 << 16);
    1 << rows.ilog2()
}

/// A segment crossing more bands than this is walked once with atomics instead of once per band.
const MAX_BANDS_PER_SEGMENT: u32 = 3;

/// Segments per bucketing task.
const CHUNK: usize = 1 << 16;

/// Pixel endpoints packed as four `i16`s (the guard band keeps them in range).
fn pack([x0, y0, x1, y1]: [i32; 4]) -> u64 {
    let h = |v: i32| u64::from(v as i16 as u16);
    h(x0) | h(y0) << 16 | h(x1) << 32 | h(y1) << 48
}

fn unpack(r: u64) -> [i32; 4] {
    let h = |s: u32| i32::from((r >> s) as u16 as i16);
    [h(0), h(16), h(32), h(48)]
}

/// One task's segments grouped by band: `records[starts[b]..starts[b + 1]]` touch band `b`
/// (weights alongside when weighted); `long` lists those left to the per-invocation walk.
struct Bucketed {
    records: Vec<u64>,
    weights: Vec<u32>,
    starts: Vec<usize>,
    long: Vec<u32>,
}

/// Buckets segments `range` by the bands `rows` high that they touch.
fn bucket(
    range: std::ops::Range<usize>,
    p: &Params,
    rows: u32,
    bands: usize,
    segments: &Words,
    weights: &Words,
) -> Bucketed {
    let (w_px, h_px) = (p.width as i32, p.height as i32);
    let shift = rows.trailing_zeros();
    let band_range = |r: u64| {
        let [_, y0, _, y1] = unpack(r);
        ((y0.min(y1).max(0) as u32 >> shift) as usize, (y0.max(y1).min(h_px - 1) as u32 >> shift) as usize)
    };
    let mut kept = Vec::with_capacity(range.len());
    let mut sizes = vec![0usize; bands];
    let mut long = Vec::new();
    for i in range {
        let s = |k: usize| to_pixel(f32::from_bits(segments[4 * i + k].load(Relaxed)));
        let [x0, y0, x1, y1] = [s(0), s(1), s(2), s(3)];
        if (x0 < 0 && x1 < 0) || (y0 < 0 && y1 < 0) || (x0 >= w_px && x1 >= w_px) || (y0 >= h_px && y1 >= h_px) {
            continue;
        }
        let record = pack([x0, y0, x1, y1]);
        let (b0, b1) = band_range(record);
        if b1 - b0 >= MAX_BANDS_PER_SEGMENT as usize {
            long.push(i as u32);
            continue;
        }
        for size in &mut sizes[b0..=b1] {
            *size += 1;
        }
        kept.push((record, i as u32));
    }
    let mut starts = Vec::with_capacity(bands + 1);
    let mut total = 0;
    for size in sizes {
        starts.push(total);
        total += size;
    }
    starts.push(total);
    let mut next = starts.clone();
    let mut records = vec![0u64; total];
    let weighted = p.has_weight != 0;
    let mut ws = vec![0u32; if weighted { total } else { 0 }];
    for &(record, i) in &kept {
        let (b0, b1) = band_range(record);
        for slot in &mut next[b0..=b1] {
            records[*slot] = record;
            if weighted {
                ws[*slot] = weights[i as usize].load(Relaxed);
            }
            *slot += 1;
        }
    }
    Bucketed { records, weights: ws, starts, long }
}

/// The whole dispatch at once, with the same result as running [`line_density`] for every
/// invocation (integer sums commute), but arranged for a CPU: segments are bucketed by horizontal
/// band of the image, then each band is drawn by one task with plain loads and stores, its pixels
/// staying in cache. Segments crossing many bands take the per-invocation path.
pub fn line_density_all(p: &Params, segments: &Words, weights: &Words, counts: &Words, sums: &Words) {
    let rows = band_rows(p.width, p.has_weight != 0);
    let bands = p.height.div_ceil(rows) as usize;
    let n = p.n as usize;
    let buckets: Vec<Bucketed> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| bucket(c * CHUNK..((c + 1) * CHUNK).min(n), p, rows, bands, segments, weights))
        .collect();
    let long: Vec<u32> = buckets.iter().flat_map(|b| b.long.iter().copied()).collect();
    long.par_iter().with_min_len(64).for_each(|&i| line_density(i, p, segments, weights, counts, sums));
    (0..bands).into_par_iter().for_each(|b| {
        let y_lo = b as i32 * rows as i32;
        let band = (y_lo, (y_lo + rows as i32).min(p.height as i32));
        for chunk in &buckets {
            for k in chunk.starts[b]..chunk.starts[b + 1] {
                let w = if p.has_weight != 0 { chunk.weights[k] } else { 1 };
                walk_band(unpack(chunk.records[k]), band, p, w, counts, sums);
            }
        }
    });
}

/// Adds one segment's weight at pixel `px` (plain loads and stores: the caller owns the pixel).
#[inline(always)]
fn add_owned(px: usize, w: u32, weighted: bool, counts: &Words, sums: &Words) {
    counts[px].store(counts[px].load(Relaxed).wrapping_add(1), Relaxed);
    if weighted {
        let old = sums[2 * px].load(Relaxed);
        sums[2 * px].store(old.wrapping_add(w), Relaxed);
        if old > 0xffff_ffff - w {
            sums[2 * px + 1].store(sums[2 * px + 1].load(Relaxed).wrapping_add(1), Relaxed);
        }
    }
}

/// The walk of [`line_density`], adding only the pixels with `y_lo <= y < y_hi`; the caller owns
/// those rows. The walk visits `max(|dx|, |dy|) + 1` pixels, every step moving along the major
/// axis; a segment wholly inside the band and the image takes a loop without bounds checks.
fn walk_band(ends: [i32; 4], (y_lo, y_hi): (i32, i32), p: &Params, w: u32, counts: &Words, sums: &Words) {
    let weighted = p.has_weight != 0;
    let w_px = p.width as i32;
    let mut walk = Walk::new(ends);
    let inside = |x: i32, y: i32| x >= 0 && y >= y_lo && x < w_px && y < y_hi;
    if inside(ends[0], ends[1]) && inside(ends[2], ends[3]) {
        // The same pixels as `Walk`, stepped along the major axis only: with `A` the major and
        // `B` the minor extent, pixel `j` is `j` steps along the major axis and
        // `floor((2Bj + A) / 2A)` along the minor one (Zingl's decisions in closed form; the
        // unit test below compares the two). One comparison per pixel instead of two.
        let width = p.width as isize;
        let [x0, y0, x1, y1] = ends;
        let (adx, ady) = ((x1 - x0).abs(), (y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { width } else { -width });
        let (major, minor, along, across) = if adx >= ady { (adx, ady, sx, sy) } else { (ady, adx, sy, sx) };
        let (den, inc) = (2 * major, 2 * minor);
        let mut num = major;
        let mut px = y0 as isize * width + x0 as isize;
        for _ in 0..=major {
            add_owned(px as usize, w, weighted, counts, sums);
            num += inc;
            let carry = num >= den;
            num -= if carry { den } else { 0 };
            px += along + if carry { across } else { 0 };
        }
        return;
    }
    loop {
        let (x, y) = (walk.x, walk.y);
        if inside(x, y) {
            add_owned((y as u32 * p.width + x as u32) as usize, w, weighted, counts, sums);
        }
        // Past the band in the direction of travel: nothing more to add.
        if walk.done() || (walk.sy > 0 && y >= y_hi) || (walk.sy < 0 && y < y_lo) {
            break;
        }
        walk.step();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    fn words(v: &[u32]) -> Vec<AtomicU32> {
        v.iter().map(|&x| AtomicU32::new(x)).collect()
    }

    /// The banded pass adds exactly what one `line_density` invocation per segment adds, for
    /// short and long segments, inside, across and outside the image, weighted or not.
    #[test]
    fn banded_equals_per_invocation() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as u32
        };
        let (width, height) = (300u32, 700u32);
        let mut flat = Vec::new();
        for k in 0..30_000 {
            let (x, y) = ((next() % 400) as f32 - 50.5, (next() % 800) as f32 - 50.25);
            let len = [3.0, 17.0, 90.0, 400.0][k % 4];
            let (ax, ay) = ((next() % 2001) as f32 / 1000.0 - 1.0, (next() % 2001) as f32 / 1000.0 - 1.0);
            flat.extend([x, y, x + ax * len, y + ay * len].map(f32::to_bits));
        }
        flat.extend([f32::NAN, 3.0, 5.0, 5.0, -1e9, 2.0, 1e9, 2.0, 4.5, 4.5, 4.5, 4.5].map(f32::to_bits));
        let n = (flat.len() / 4) as u32;
        let w: Vec<u32> = (0..n).map(|_| next() << 8).collect();
        for has_weight in [0, 1] {
            let p = Params { n, width, height, has_weight };
            let (segments, weights) = (words(&flat), words(&w));
            let pixels = (width * height) as usize;
            let (c1, s1) = (words(&vec![0; pixels]), words(&vec![0; 2 * pixels]));
            let (c2, s2) = (words(&vec![0; pixels]), words(&vec![0; 2 * pixels]));
            for i in 0..n {
                line_density(i, &p, &segments, &weights, &c1, &s1);
            }
            line_density_all(&p, &segments, &weights, &c2, &s2);
            let v = |x: &[AtomicU32]| x.iter().map(|a| a.load(Relaxed)).collect::<Vec<_>>();
            assert!(v(&c1).iter().any(|&c| c > 3));
            assert_eq!(v(&c1), v(&c2), "counts, weighted = {has_weight}");
            assert_eq!(v(&s1), v(&s2), "sums, weighted = {has_weight}");
        }
    }
}
