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

/// [`to_pixel`] of four values at once, written so that it compiles to a few vector
/// instructions (bucketing spent most of its time converting). `max` returns its other operand
/// where one is NaN, so NaN becomes `-LIMIT`. Adding 1.5 * 2^23 rounds a clamped value to the
/// nearest integer, which then sits in the low bits of the sum; where that rounded up, one is
/// taken off.
fn to_pixels(v: [f32; 4]) -> [i32; 4] {
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
fn band_rows(width: u32, bytes_per_pixel: u32, budget: u32) -> u32 {
    let bytes_per_row = width.max(1) * bytes_per_pixel;
    let rows = (budget / bytes_per_row).clamp(1, 1 << 16);
    1 << rows.ilog2()
}

/// A segment crossing more bands than this is walked once with atomics instead of once per band.
const MAX_BANDS_PER_SEGMENT: u32 = 3;

/// Segments bucketed together in straight-line code.
const BLOCK: usize = 8;

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

/// One task's segments grouped by band: `records[starts[b]..starts[b + 1]]` are walked in band
/// `b` (weights alongside when weighted), `short[b]` are drawn whole by band `b` from the table
/// of [`ShortLines`], and `long` lists those left to the per-invocation walk.
struct Bucketed {
    records: Vec<u64>,
    weights: Vec<u32>,
    starts: Vec<usize>,
    short: Vec<Vec<u32>>,
    long: Vec<u32>,
}

/// How one dispatch is cut into bands.
#[derive(Clone, Copy)]
struct Bands {
    rows: u32,
    count: usize,
    /// Whether short segments go to [`Bucketed::short`].
    tabled: bool,
    /// Tiles per row of a band's buffer (see [`ShortLines`]).
    tile_cols: usize,
}

/// Buckets segments `range` by the bands they touch.
fn bucket(range: std::ops::Range<usize>, p: &Params, bands: Bands, segments: &[u32], weights: &Words) -> Bucketed {
    let (w_px, h_px) = (p.width as i32, p.height as i32);
    let shift = bands.rows.trailing_zeros();
    let band_range = |r: u64| {
        let [_, y0, _, y1] = unpack(r);
        ((y0.min(y1).max(0) as u32 >> shift) as usize, (y0.max(y1).min(h_px - 1) as u32 >> shift) as usize)
    };
    let mut kept = Vec::new();
    let mut sizes = vec![0usize; bands.count];
    let mut long = Vec::new();
    let mut short: Vec<Vec<u32>> = vec![Vec::new(); if bands.tabled { bands.count } else { 0 }];
    let each = range.len() / bands.count.max(1) + range.len() / (4 * bands.count.max(1));
    short.iter_mut().for_each(|s| s.reserve(each));
    let ends: &[[f32; 4]] = bytemuck::cast_slice(&segments[4 * range.start..4 * range.end]);
    let mut rest = Vec::new();
    let mut i = range.start;
    for block in ends.chunks(BLOCK) {
        // Short segments of a block are found and recorded in straight-line code over arrays of
        // fixed length, which the compiler turns into vector instructions; the rest go one by
        // one. A last, partial block is padded with NaN segments, which are never short.
        let mut found = [(u32::MAX, 0); BLOCK];
        if bands.tabled {
            let whole: [[f32; 4]; BLOCK] = block.try_into().unwrap_or_else(|_| {
                let mut padded = [[f32::NAN; 4]; BLOCK];
                padded[..block.len()].copy_from_slice(block);
                padded
            });
            for (f, e) in found.iter_mut().zip(whole) {
                *f = ShortLines::bucket(to_pixels(e), shift, bands.tile_cols, (w_px, h_px));
            }
        }
        for (&(b, record), &e) in found.iter().zip(block) {
            if b != u32::MAX {
                short[b as usize].push(record);
            } else {
                rest.push((i, to_pixels(e)));
            }
            i += 1;
        }
    }
    for (i, [x0, y0, x1, y1]) in rest {
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
    let mut starts = Vec::with_capacity(bands.count + 1);
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
    Bucketed { records, weights: ws, starts, short, long }
}

/// The whole dispatch at once, with the same result as running [`line_density`] for every
/// invocation (integer sums commute), but arranged for a CPU: segments are bucketed by horizontal
/// band of the image, then each band is drawn by one task with plain loads and stores, its pixels
/// staying in cache. Unweighted short segments are drawn from a table ([`ShortLines`]); segments
/// crossing many bands take the per-invocation path.
pub fn line_density_all(p: &Params, segments: &[u32], weights: &Words, counts: &Words, sums: &Words) {
    let tabled_rows = band_rows(p.width, 4, ShortLines::BAND_BYTES);
    let tile_cols = p.width.div_ceil(4) as usize;
    let tabled = p.has_weight == 0 && ShortLines::fits(tabled_rows, tile_cols);
    let table = tabled.then(|| ShortLines::for_width(p.width));
    let rows = if table.is_some() {
        tabled_rows
    } else {
        band_rows(p.width, if p.has_weight != 0 { 12 } else { 4 }, 512 << 10)
    };
    let count = p.height.div_ceil(rows) as usize;
    let bands = Bands { rows, count, tabled, tile_cols };
    let n = p.n as usize;
    let buckets: Vec<Bucketed> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| bucket(c * CHUNK..((c + 1) * CHUNK).min(n), p, bands, segments, weights))
        .collect();
    let long: Vec<u32> = buckets.iter().flat_map(|b| b.long.iter().copied()).collect();
    long.par_iter().with_min_len(64).for_each(|&i| line_density(i, p, segments, weights, counts, sums));
    let draw = |b: usize| {
        let y_lo = b as i32 * rows as i32;
        let band = (y_lo, (y_lo + rows as i32).min(p.height as i32));
        for chunk in &buckets {
            for k in chunk.starts[b]..chunk.starts[b + 1] {
                let w = if p.has_weight != 0 { chunk.weights[k] } else { 1 };
                walk_band(unpack(chunk.records[k]), band, p, w, counts, sums);
            }
        }
        if let Some(table) = &table {
            table.draw(buckets.iter().map(|chunk| chunk.short[b].as_slice()), (y_lo, rows), p, counts);
        }
    };
    if table.is_some() {
        // A band's short segments reach into the next band: bands of one parity at a time.
        for parity in [0, 1] {
            (0..count).into_par_iter().filter(|b| b % 2 == parity).for_each(draw);
        }
    } else {
        (0..count).into_par_iter().for_each(draw);
    }
}

/// Longest extent, in pixels along either axis, of a segment drawn from [`ShortLines`].
const SHORT: i32 = 17;

/// Unweighted short segments drawn from a table instead of walked. A band's short segments (those
/// whose top row is in the band) are counted in a private buffer of 4x4-pixel tiles, where a tile
/// is one 64-byte cache line, so a segment touches a few lines rather than one per row. In it, the
/// address of pixel `(x0 + a, y0 + b)` is the address of the tile holding `(x0, y0)` plus an offset
/// that depends only on `(a, b)` and on `x0` and `y0` modulo 4. The table lists, for every extent
/// `(dx, dy)` up to [`SHORT`] and every start within a tile, the offsets of the pixels [`Walk`]
/// visits: drawing a segment is one add per pixel, with no decisions. The buffer is then added to
/// the shared counts. Same pixels as the walk (a unit test compares them), so the same counts.
struct ShortLines {
    /// Row length of the tiled buffer in pixels: the image width rounded up to whole tiles.
    width: usize,
    /// `SHORT + 1` offsets per entry, entries indexed by [`ShortLines::entry`].
    offsets: Offsets,
    /// Pixels per segment, by `entry >> 4`.
    lens: Vec<u8>,
}

/// The table's offsets, in 16 bits where they all fit (images up to about 1,360 pixels wide):
/// half the cache, measured 10-20% faster drawing than 32 bits.
enum Offsets {
    Narrow(Vec<i16>),
    Wide(Vec<i32>),
}

impl ShortLines {
    const SIDE: i32 = 2 * SHORT + 1;
    const STRIDE: usize = SHORT as usize + 1;
    /// Rows below a band that its short segments can reach, in whole tiles.
    const HALO: u32 = (SHORT as u32).next_multiple_of(4);
    /// Bits of a record holding the entry (below them: the tile).
    const ENTRY_BITS: u32 = 15;
    /// Bytes of counts per band.
    const BAND_BYTES: u32 = 256 << 10;

    /// The table for images `width` pixels wide, built once per width.
    fn for_width(width: u32) -> std::sync::Arc<Self> {
        static LAST: std::sync::Mutex<Option<std::sync::Arc<ShortLines>>> = std::sync::Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let wanted = (width as usize).next_multiple_of(4);
        match &*last {
            Some(table) if table.width == wanted => table.clone(),
            _ => {
                let table = std::sync::Arc::new(Self::new(wanted));
                *last = Some(table.clone());
                table
            }
        }
    }

    fn new(width: usize) -> Self {
        let entries = (Self::SIDE * Self::SIDE * 16) as usize;
        let mut offsets = vec![0i32; entries * Self::STRIDE];
        let mut lens = vec![0u8; entries >> 4];
        for dy in -SHORT..=SHORT {
            for dx in -SHORT..=SHORT {
                for start in 0..16 {
                    let (r, s) = (start & 3, start >> 2);
                    let at = Self::entry(dx, dy, r, s) * Self::STRIDE;
                    lens[Self::entry(dx, dy, r, s) >> 4] = (dx.abs().max(dy.abs()) + 1) as u8;
                    let mut walk = Walk::new([r, s, r + dx, s + dy]);
                    for slot in &mut offsets[at..at + Self::STRIDE] {
                        *slot = i32::try_from(Self::address(width, walk.x, walk.y)).unwrap_or(i32::MAX);
                        if walk.done() {
                            break;
                        }
                        walk.step();
                    }
                }
            }
        }
        let narrow: Option<Vec<i16>> = offsets.iter().map(|&o| i16::try_from(o).ok()).collect();
        let offsets = narrow.map_or(Offsets::Wide(offsets), Offsets::Narrow);
        Self { width, offsets, lens }
    }

    /// Whether bands `rows` high (with the [`ShortLines::HALO`] below) and `tile_cols` tiles
    /// wide can be drawn from the table: a band's segments must not reach past the next band,
    /// and a record must hold the index of any tile of a band.
    fn fits(rows: u32, tile_cols: usize) -> bool {
        let tiles = ((rows + Self::HALO) / 4) as usize * tile_cols;
        rows >= Self::HALO && tiles <= 1 << (32 - Self::ENTRY_BITS)
    }

    /// The band and record of a segment with pixel ends `[x0, y0, x1, y1]` if the table takes
    /// it (short, and wholly inside the image), else `u32::MAX` for the band. The record holds the tile of the segment's first pixel in
    /// its band's buffer and its table entry. Without branches, so that blocks of segments vectorise.
    #[inline(always)]
    fn bucket([x0, y0, x1, y1]: [i32; 4], shift: u32, tile_cols: usize, (w_px, h_px): (i32, i32)) -> (u32, u32) {
        let (dx, dy) = (x1 - x0, y1 - y0);
        let short = ((dx + SHORT) as u32 <= 2 * SHORT as u32) & ((dy + SHORT) as u32 <= 2 * SHORT as u32);
        let inside = ((x0 as u32) < w_px as u32)
            & ((x1 as u32) < w_px as u32)
            & ((y0 as u32) < h_px as u32)
            & ((y1 as u32) < h_px as u32);
        // Wrapping: for a segment not taken the record is garbage, and must not overflow.
        let b = (y0.min(y1) as u32) >> shift;
        let y = y0.wrapping_sub((b << shift) as i32);
        let tile = ((y >> 2) as u32).wrapping_mul(tile_cols as u32).wrapping_add((x0 >> 2) as u32);
        let entry = Self::entry(dx, dy, x0 & 3, y & 3) as u32;
        (if short & inside { b } else { u32::MAX }, tile << Self::ENTRY_BITS | entry)
    }

    fn entry(dx: i32, dy: i32, r: i32, s: i32) -> usize {
        ((((dy + SHORT) * Self::SIDE + dx + SHORT) << 4) + (s << 2) + r) as usize
    }

    /// Address of pixel `(x, y)` in a tiled buffer `width` pixels wide, for coordinates relative to
    /// a tile corner (negative ones included: the shifts floor).
    fn address(width: usize, x: i32, y: i32) -> isize {
        (((y >> 2) as isize * (width as isize >> 2) + (x >> 2) as isize) << 4) + (((y & 3) << 2) + (x & 3)) as isize
    }

    /// Adds the pixels of the segments `lists` to `tiles`; whether there were any.
    fn add<'a, T: Copy + Into<i64>>(
        &self,
        offsets: &[T],
        lists: impl Iterator<Item = &'a [u32]>,
        tiles: &mut [u32],
    ) -> bool {
        let mut drawn = false;
        for list in lists {
            for &record in list {
                let base = (record >> Self::ENTRY_BITS) as usize * 16;
                let entry = (record & ((1 << Self::ENTRY_BITS) - 1)) as usize;
                let at = entry * Self::STRIDE;
                for &o in &offsets[at..at + usize::from(self.lens[entry >> 4])] {
                    tiles[base.wrapping_add_signed(o.into() as isize)] += 1;
                }
                drawn = true;
            }
        }
        drawn
    }

    /// Draws the short segments `lists` of the band starting at row `y_lo`, whose rows and the
    /// [`ShortLines::HALO`] rows below them the caller owns.
    fn draw<'a>(&self, lists: impl Iterator<Item = &'a [u32]>, (y_lo, rows): (i32, u32), p: &Params, counts: &Words) {
        let rows = (p.height as i32 - y_lo).min((rows + Self::HALO) as i32) as usize;
        let mut tiles = vec![0u32; self.width * rows.next_multiple_of(4)];
        let drawn = match &self.offsets {
            Offsets::Narrow(offsets) => self.add(offsets, lists, &mut tiles),
            Offsets::Wide(offsets) => self.add(offsets, lists, &mut tiles),
        };
        if !drawn {
            return;
        }
        let width = p.width as usize;
        for (y, tile_row) in (0..rows).zip(tiles.chunks_exact(4 * self.width).flat_map(|t| [t; 4])) {
            let sub = 4 * (y & 3);
            let row = &counts[(y_lo as usize + y) * width..][..width];
            for (cells, tile) in row.chunks(4).zip(tile_row.chunks_exact(16)) {
                for (c, &add) in cells.iter().zip(&tile[sub..sub + 4]) {
                    c.store(c.load(Relaxed).wrapping_add(add), Relaxed);
                }
            }
        }
    }
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
    fn four_conversions_at_once_equal_one_at_a_time() {
        let mut values = vec![f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MAX, f32::MIN];
        values.extend([-LIMIT, LIMIT, -LIMIT - 1.0, LIMIT + 1.0, 1e-30, -1e-30, 16_383.999, -16_383.999]);
        for k in -2000..2000 {
            values.push(k as f32 * 0.25);
            values.push(k as f32 * 8.3 + 0.001);
        }
        for four in values.chunks_exact(4) {
            let four = [four[0], four[1], four[2], four[3]];
            assert_eq!(to_pixels(four), four.map(to_pixel), "{four:?}");
        }
    }

    #[test]
    fn banded_equals_per_invocation() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as u32
        };
        // 300 wide: 16-bit table offsets; 2,000 wide: 32-bit ones; 301 wide: a partial last tile;
        // 9,000 wide: bands too low for the table (walked only).
        for (width, height) in [(300u32, 700u32), (2000, 150), (301, 97), (9000, 60)] {
            let mut flat = Vec::new();
            for k in 0..30_000 {
                let x = (next() % (width + 100)) as f32 - 50.5;
                let y = (next() % (height + 100)) as f32 - 50.25;
                let len = [3.0, 17.0, 90.0, 400.0][k % 4];
                let (ax, ay) = ((next() % 2001) as f32 / 1000.0 - 1.0, (next() % 2001) as f32 / 1000.0 - 1.0);
                flat.extend([x, y, x + ax * len, y + ay * len].map(f32::to_bits));
            }
            // Every extent the table holds, from every start within a tile.
            for dy in -SHORT..=SHORT {
                for dx in -SHORT..=SHORT {
                    let (x, y) = ((next() % (width - 40)) as f32 + 20.5, (next() % (height - 40)) as f32 + 20.5);
                    flat.extend([x, y, x + dx as f32, y + dy as f32].map(f32::to_bits));
                }
            }
            flat.extend([f32::NAN, 3.0, 5.0, 5.0, -1e9, 2.0, 1e9, 2.0, 4.5, 4.5, 4.5, 4.5].map(f32::to_bits));
            let n = (flat.len() / 4) as u32;
            let w: Vec<u32> = (0..n).map(|_| next() << 8).collect();
            for has_weight in [0, 1] {
                let p = Params { n, width, height, has_weight };
                let (segments, weights) = (&flat, words(&w));
                let pixels = (width * height) as usize;
                let (c1, s1) = (words(&vec![0; pixels]), words(&vec![0; 2 * pixels]));
                let (c2, s2) = (words(&vec![0; pixels]), words(&vec![0; 2 * pixels]));
                for i in 0..n {
                    line_density(i, &p, segments, &weights, &c1, &s1);
                }
                line_density_all(&p, segments, &weights, &c2, &s2);
                let v = |x: &[AtomicU32]| x.iter().map(|a| a.load(Relaxed)).collect::<Vec<_>>();
                assert!(v(&c1).iter().any(|&c| c > 3));
                assert_eq!(v(&c1), v(&c2), "counts, {width}x{height}, weighted = {has_weight}");
                assert_eq!(v(&s1), v(&s2), "sums, {width}x{height}, weighted = {has_weight}");
            }
        }
    }

    /// The sizes of the test above take the table, with both widths of offsets, and the walk.
    #[test]
    fn the_test_sizes_reach_every_path() {
        let tabled =
            |width: u32| ShortLines::fits(band_rows(width, 4, ShortLines::BAND_BYTES), width.div_ceil(4) as usize);
        assert!(tabled(300) && tabled(2000) && tabled(301) && !tabled(9000));
        assert!(matches!(ShortLines::new(300).offsets, Offsets::Narrow(_)));
        assert!(matches!(ShortLines::new(2000).offsets, Offsets::Wide(_)));
    }
}
