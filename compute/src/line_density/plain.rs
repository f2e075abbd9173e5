//! The line-density stage on plain memory, beside its mirror (`line_density`): every segment
//! of a dispatch bucketed by bands of rows that stay in a core's cache and walked there with the
//! mirror's own walk (`line_density_all`, what the CPU runner runs for a dispatch); two weights
//! in one pass (`two_weights`); straight lines cut into their pieces and drawn in one pass
//! (`straight`). Each equals the mirror's invocation per segment, count for count (tested).

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use rayon::prelude::*;

use super::mirror::{Params, Walk, to_pixels};
use crate::io::{DensityImage, StraightInput, point};
use crate::words::Words;

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

/// One task's segments grouped by band: `short[b]` are drawn whole by band `b` from the table
/// of [`ShortLines`], the others are `walked`.
struct Bucketed {
    walked: Walked,
    short: Vec<Vec<u32>>,
}

/// Segments walked by band: `records[starts[b]..starts[b + 1]]` (packed pixel ends, with
/// `weights` alongside) are walked by band `b`, and `long`, crossing more bands than a record is
/// copied to, by every band over its own rows.
struct Walked {
    records: Vec<u64>,
    weights: Vec<u32>,
    starts: Vec<usize>,
    long: Vec<(u64, u32)>,
}

impl Walked {
    /// Segments (pixel ends and weight) grouped by the bands they touch; those wholly outside
    /// the image dropped.
    fn by_band(segments: impl Iterator<Item = ([i32; 4], u32)>, p: &Params, bands: Bands) -> Self {
        let (w_px, h_px) = (p.width as i32, p.height as i32);
        let shift = bands.rows.trailing_zeros();
        let band_range = |r: u64| {
            let [_, y0, _, y1] = unpack(r);
            ((y0.min(y1).max(0) as u32 >> shift) as usize, (y0.max(y1).min(h_px - 1) as u32 >> shift) as usize)
        };
        let mut sizes = vec![0usize; bands.count];
        let (mut kept, mut long) = (Vec::new(), Vec::new());
        for (ends @ [x0, y0, x1, y1], weight) in segments {
            if (x0 < 0 && x1 < 0) || (y0 < 0 && y1 < 0) || (x0 >= w_px && x1 >= w_px) || (y0 >= h_px && y1 >= h_px) {
                continue;
            }
            let record = pack(ends);
            let (b0, b1) = band_range(record);
            if b1 - b0 >= MAX_BANDS_PER_SEGMENT as usize {
                long.push((record, weight));
                continue;
            }
            for size in &mut sizes[b0..=b1] {
                *size += 1;
            }
            kept.push((record, weight));
        }
        let mut starts = Vec::with_capacity(bands.count + 1);
        let mut total = 0;
        for size in sizes {
            starts.push(total);
            total += size;
        }
        starts.push(total);
        let mut next = starts.clone();
        let (mut records, mut weights) = (vec![0u64; total], vec![0u32; total]);
        for &(record, weight) in &kept {
            let (b0, b1) = band_range(record);
            for slot in &mut next[b0..=b1] {
                records[*slot] = record;
                weights[*slot] = weight;
                *slot += 1;
            }
        }
        Self { records, weights, starts, long }
    }

    /// Walks band `b`'s segments and every long one over the rows `band`.
    fn draw(&self, b: usize, band: (i32, i32), p: &Params, counts: &Words, sums: &Words) {
        for k in self.starts[b]..self.starts[b + 1] {
            walk_rows(unpack(self.records[k]), band, p, self.weights[k], counts, sums);
        }
        for &(record, w) in &self.long {
            walk_rows(unpack(record), band, p, w, counts, sums);
        }
    }
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

impl Bands {
    /// The bands of an image of `p`, and the table of [`ShortLines`] where `table` allows it and
    /// it fits; without it a band's counts (and sums where weighted) stay in a core's L2 cache.
    fn of(p: &Params, table: bool) -> (Self, Option<std::sync::Arc<ShortLines>>) {
        let tabled_rows = band_rows(p.width, 4, ShortLines::BAND_BYTES);
        let tile_cols = p.width.div_ceil(4) as usize;
        let tabled = table && ShortLines::fits(tabled_rows, tile_cols);
        let rows =
            if tabled { tabled_rows } else { band_rows(p.width, if p.has_weight != 0 { 12 } else { 4 }, 512 << 10) };
        let count = p.height.div_ceil(rows) as usize;
        (Self { rows, count, tabled, tile_cols }, tabled.then(|| ShortLines::for_width(p.width)))
    }

    /// Runs `draw(b, (y_lo, y_hi))` for every band `b` and its rows, in parallel.
    fn each(&self, height: u32, draw: impl Fn(usize, (i32, i32)) + Sync + Send) {
        let rows = |b: usize| {
            let y_lo = b as i32 * self.rows as i32;
            (y_lo, (y_lo + self.rows as i32).min(height as i32))
        };
        if self.tabled {
            // A band's short segments reach into the next band: bands of one parity at a time.
            for parity in [0, 1] {
                (0..self.count).into_par_iter().filter(|b| b % 2 == parity).for_each(|b| draw(b, rows(b)));
            }
        } else {
            (0..self.count).into_par_iter().for_each(|b| draw(b, rows(b)));
        }
    }
}

/// Buckets segments `range` by the bands they touch.
fn bucket(range: std::ops::Range<usize>, p: &Params, bands: Bands, segments: &[u32], weights: &Words) -> Bucketed {
    let (w_px, h_px) = (p.width as i32, p.height as i32);
    let shift = bands.rows.trailing_zeros();
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
    let weighted = p.has_weight != 0;
    let rest = rest.into_iter().map(|(i, ends)| (ends, if weighted { weights[i].load(Relaxed) } else { 1 }));
    Bucketed { walked: Walked::by_band(rest, p, bands), short }
}

/// The whole dispatch at once, with the same result as running [`line_density`](super::mirror::line_density) for every
/// invocation (integer sums commute), but arranged for a CPU: segments are bucketed by horizontal
/// band of the image, then each band is drawn by one task with plain loads and stores, its pixels
/// staying in cache. Unweighted short segments are drawn from a table ([`ShortLines`]); segments
/// crossing many bands are walked by every band over its own rows ([`walk_rows`]).
pub fn line_density_all(p: &Params, segments: &[u32], weights: &Words, counts: &Words, sums: &Words) {
    let (bands, table) = Bands::of(p, p.has_weight == 0);
    let n = p.n as usize;
    let buckets: Vec<Bucketed> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| bucket(c * CHUNK..((c + 1) * CHUNK).min(n), p, bands, segments, weights))
        .collect();
    bands.each(p.height, |b, band| {
        for chunk in &buckets {
            chunk.walked.draw(b, band, p, counts, sums);
        }
        if let Some(table) = &table {
            table.draw(buckets.iter().map(|chunk| chunk.short[b].as_slice()), (band.0, bands.rows), p, counts, None);
        }
    });
}

/// Two weighted densities of the same segments in one pass: the counts, and the sums of weights
/// `a` and of weights `b`, each as one weighted [`line_density_all`] gives them, but every
/// segment bucketed and walked once ([`TwoWeights`]).
pub fn two_weights(p: &Params, segments: &[[f32; 4]], a: &[u32], b: &[u32], counts: &Words, sums: [&Words; 2]) {
    let n = segments.len().min(a.len()).min(b.len());
    TwoWeights::bucket(p, &segments[..n]).walk(p, a, b, false, counts, sums);
}

/// Segments bucketed by band with their index in place of a weight, to be walked with two
/// weights each ([`TwoWeights::walk`]) as often as the weights change: the bucketing depends
/// on the segments and the image only.
pub struct TwoWeights {
    bands: Bands,
    walked: Vec<Walked>,
}

impl TwoWeights {
    /// `segments` bucketed for an image of `p`'s size.
    pub fn bucket(p: &Params, segments: &[[f32; 4]]) -> Self {
        let bands = {
            let rows = band_rows(p.width, 20, 512 << 10);
            Bands { rows, count: p.height.div_ceil(rows) as usize, tabled: false, tile_cols: 0 }
        };
        let n = segments.len();
        let walked = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let range = c * CHUNK..((c + 1) * CHUNK).min(n);
                Walked::by_band(range.map(|i| (to_pixels(segments[i]), i as u32)), p, bands)
            })
            .collect();
        Self { bands, walked }
    }

    /// Walks every segment `i`, adding `a[i]` to `sums[0]` and `b[i]` to `sums[1]` of each pixel
    /// it covers and counting it there; with `skip_zero`, a segment whose two weights are zero is
    /// not walked (nor counted). `p` is the image the segments were bucketed for.
    pub fn walk(&self, p: &Params, a: &[u32], b: &[u32], skip_zero: bool, counts: &Words, sums: [&Words; 2]) {
        let walk = |record: u64, i: u32, band: (i32, i32)| {
            let (wa, wb) = (a[i as usize], b[i as usize]);
            if skip_zero && wa == 0 && wb == 0 {
                return;
            }
            visit_rows(unpack(record), band, p, |px| {
                add_owned(px, wa, true, counts, sums[0]);
                add_weight(px, wb, sums[1]);
            });
        };
        self.bands.each(p.height, |k, band| {
            for w in &self.walked {
                for j in w.starts[k]..w.starts[k + 1] {
                    walk(w.records[j], w.weights[j], band);
                }
                for &(record, i) in &w.long {
                    walk(record, i, band);
                }
            }
        });
    }
}

/// One task's pieces of straight lines grouped by band, as [`Bucketed`] groups segments:
/// `short[k][b]` the short pieces `k` drawn by band `b` from the table, the others `walked`.
struct Cut {
    walked: Walked,
    short: Vec<Vec<Vec<u32>>>,
    /// By band, the pixels of lines drawn as dots (every piece in that one pixel).
    dots: Vec<Vec<u32>>,
}

/// Cuts `lines` into the pieces of [`crate::line_density::piece`] and buckets them by
/// the bands they touch.
fn cut(lines: &[[f32; 4]], weights: &[u32], p: &Params, bands: Bands) -> Cut {
    let (w_px, h_px) = (p.width as i32, p.height as i32);
    let pieces = weights.len();
    let shift = bands.rows.trailing_zeros();
    let each = lines.len() / (4 * bands.count.max(1));
    let mut short: Vec<Vec<Vec<u32>>> = (0..if bands.tabled { pieces } else { 0 })
        .map(|_| (0..bands.count).map(|_| Vec::with_capacity(each)).collect())
        .collect();
    let mut rest: Vec<([i32; 4], u32)> = Vec::new();
    let mut dots: Vec<Vec<u32>> = vec![Vec::new(); bands.count];
    // The points between pieces, `k / pieces` along each line: piece `k` runs from point `k`
    // to point `k + 1`, as in `piece`.
    let along: Vec<f32> = (0..=pieces).map(|k| k as f32 / pieces as f32).collect();
    let mut points = vec![[[0i32; 2]; BLOCK]; pieces + 1];
    for block in lines.chunks(BLOCK) {
        // Every point's pixel, in straight-line code over a block (NaN padding).
        for (pts, &f) in points.iter_mut().zip(&along) {
            let mut xy = [f32::NAN; 2 * BLOCK];
            for (v, l) in xy.chunks_exact_mut(2).zip(block) {
                v.copy_from_slice(&point(l, f));
            }
            for (pair, four) in pts.chunks_exact_mut(2).zip(xy.chunks_exact(4)) {
                let [x0, y0, x1, y1] = to_pixels([four[0], four[1], four[2], four[3]]);
                pair[0] = [x0, y0];
                pair[1] = [x1, y1];
            }
        }
        // A line whose every point is one pixel of the image is a dot: that pixel gains every
        // piece's count and weight at once.
        let mut dot = [false; BLOCK];
        for (j, d) in dot.iter_mut().enumerate().take(block.len()) {
            let [x, y] = points[0][j];
            *d = (x as u32) < p.width && (y as u32) < p.height && points.iter().all(|q| q[j] == [x, y]);
        }
        for (k, &weight) in weights.iter().enumerate() {
            let (a, b) = (&points[k], &points[k + 1]);
            let ends: [[i32; 4]; BLOCK] = std::array::from_fn(|j| [a[j][0], a[j][1], b[j][0], b[j][1]]);
            // As in `bucket`: a block's short pieces found in straight-line code.
            let mut found = [(u32::MAX, 0); BLOCK];
            if bands.tabled {
                for (f, &e) in found.iter_mut().zip(&ends) {
                    *f = ShortLines::bucket(e, shift, bands.tile_cols, (w_px, h_px));
                }
            }
            for j in (0..block.len()).filter(|&j| !dot[j]) {
                match found[j] {
                    (u32::MAX, _) => rest.push((ends[j], weight)),
                    (b, record) => short[k][b as usize].push(record),
                }
            }
        }
        for j in (0..block.len()).filter(|&j| dot[j]) {
            let [x, y] = points[0][j];
            dots[(y as u32 >> shift) as usize].push(y as u32 * p.width + x as u32);
        }
    }
    Cut { walked: Walked::by_band(rest.into_iter(), p, bands), short, dots }
}

/// [`crate::line_density::straight`] on the CPU: every line cut into its pieces and
/// bucketed by band once, then each band drawn by one task: walked pieces over its rows, lines
/// within one pixel as dots, short pieces from the table of [`ShortLines`] one piece index at
/// a time, so that its tiles add one weight to the sums. The same pixels as the recorded
/// passes over each piece, so the same counts and sums.
pub fn straight(input: &StraightInput<'_>) -> DensityImage {
    let (width, height) = (input.width, input.height);
    let pixels = width as usize * height as usize;
    let p = Params { n: 0, width, height, has_weight: 1 };
    let (bands, table) = Bands::of(&p, true);
    let (pieces, weight) = (input.weights.len() as u32, input.weights.iter().map(|&w| u64::from(w)).sum::<u64>());
    if pieces == 0 {
        return DensityImage { width, height, counts: vec![0; pixels], sums: vec![0; pixels] };
    }
    let counts: Vec<AtomicU32> = (0..pixels).map(|_| AtomicU32::new(0)).collect();
    let sums: Vec<AtomicU32> = (0..2 * pixels).map(|_| AtomicU32::new(0)).collect();
    let per = (CHUNK / pieces as usize).max(1);
    let cuts: Vec<Cut> = input.lines.par_chunks(per).map(|part| cut(part, input.weights, &p, bands)).collect();
    bands.each(height, |b, band| {
        for c in &cuts {
            c.walked.draw(b, band, &p, &counts, &sums);
            for &px in &c.dots[b] {
                let c = &counts[px as usize];
                c.store(c.load(Relaxed).wrapping_add(pieces), Relaxed);
                add_wide(&sums, px as usize, weight);
            }
        }
        if let Some(table) = &table {
            for (k, &weight) in input.weights.iter().enumerate() {
                let lists = cuts.iter().map(|c| c.short[k][b].as_slice());
                table.draw(lists, (band.0, bands.rows), &p, &counts, Some((&sums, weight)));
            }
        }
    });
    let counts: Vec<u32> = counts.into_iter().map(AtomicU32::into_inner).collect();
    let sums: Vec<u32> = sums.into_iter().map(AtomicU32::into_inner).collect();
    DensityImage { width, height, counts, sums: crate::words_to_u64(&sums) }
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
    /// With `sums` (the words of 64-bit sums and a weight), every pixel drawn also adds the
    /// weight to its sum.
    fn draw<'a>(
        &self,
        lists: impl Iterator<Item = &'a [u32]>,
        (y_lo, rows): (i32, u32),
        p: &Params,
        counts: &Words,
        sums: Option<(&Words, u32)>,
    ) {
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
            let at = (y_lo as usize + y) * width;
            let row = &counts[at..][..width];
            for (cells, tile) in row.chunks(4).zip(tile_row.chunks_exact(16)) {
                for (c, &add) in cells.iter().zip(&tile[sub..sub + 4]) {
                    c.store(c.load(Relaxed).wrapping_add(add), Relaxed);
                }
            }
            if let Some((sums, weight)) = sums.filter(|&(_, w)| w > 0) {
                let row = &sums[2 * at..][..2 * width];
                for (cells, tile) in row.chunks(8).zip(tile_row.chunks_exact(16)) {
                    for (c, &add) in cells.chunks_exact(2).zip(&tile[sub..sub + 4]) {
                        if add > 0 {
                            add_wide(c, 0, u64::from(weight) * u64::from(add));
                        }
                    }
                }
            }
        }
    }
}

/// Adds `v` to the 64-bit sum of pixel `px`, held in two words (plain loads and stores: the
/// caller owns the pixel).
fn add_wide(sums: &Words, px: usize, v: u64) {
    let old = u64::from(sums[2 * px].load(Relaxed)) | u64::from(sums[2 * px + 1].load(Relaxed)) << 32;
    let new = old.wrapping_add(v);
    sums[2 * px].store(new as u32, Relaxed);
    sums[2 * px + 1].store((new >> 32) as u32, Relaxed);
}

/// Adds one segment's weight at pixel `px` (plain loads and stores: the caller owns the pixel).
#[inline(always)]
fn add_owned(px: usize, w: u32, weighted: bool, counts: &Words, sums: &Words) {
    counts[px].store(counts[px].load(Relaxed).wrapping_add(1), Relaxed);
    if weighted {
        add_weight(px, w, sums);
    }
}

/// Adds weight `w` to the 64-bit sum of pixel `px` (plain loads and stores: the caller owns
/// the pixel).
#[inline(always)]
fn add_weight(px: usize, w: u32, sums: &Words) {
    let old = sums[2 * px].load(Relaxed);
    sums[2 * px].store(old.wrapping_add(w), Relaxed);
    if old > 0xffff_ffff - w {
        sums[2 * px + 1].store(sums[2 * px + 1].load(Relaxed).wrapping_add(1), Relaxed);
    }
}

/// The pixels of the walk of [`line_density`] from `ends` that lie on rows `y_lo..y_hi` (the
/// caller owns them) and inside the image, visiting only the steps on those rows: with `A` the
/// major and `B` the minor extent, step `j` is `j` pixels along the major axis and
/// `m(j) = floor((2Bj + A) / 2A)` along the minor one (Zingl's decisions in closed form; the
/// unit tests compare the two). Where `y` is the
/// major axis the band's rows are steps directly; where it is the minor one, the first step
/// reaching `r` rows from the start is `ceil(A(2r - 1) / 2B)`; the image's columns likewise.
/// A segment crossing many bands, or reaching far outside the image, is then drawn by each
/// band in time proportional to its pixels there.
fn walk_rows(ends: [i32; 4], band: (i32, i32), p: &Params, w: u32, counts: &Words, sums: &Words) {
    let weighted = p.has_weight != 0;
    visit_rows(ends, band, p, |px| add_owned(px, w, weighted, counts, sums));
}

/// The pixels of [`walk_rows`], each passed to `visit`.
#[inline(always)]
fn visit_rows(ends: [i32; 4], (y_lo, y_hi): (i32, i32), p: &Params, mut visit: impl FnMut(usize)) {
    let [x0, y0, x1, y1] = ends.map(i64::from);
    let (lo, hi) = (i64::from(y_lo.max(0)), i64::from(y_hi.min(p.height as i32)) - 1);
    if lo > hi {
        return;
    }
    let width = i64::from(p.width);
    let (adx, ady) = ((x1 - x0).abs(), (y1 - y0).abs());
    let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
    // The band's rows and the image's columns as offsets from the start in the direction of travel.
    let offsets = |v0: i64, s: i64, (lo, hi): (i64, i64)| if s > 0 { (lo - v0, hi - v0) } else { (v0 - hi, v0 - lo) };
    let (rows, cols) = (offsets(y0, sy, (lo, hi)), offsets(x0, sx, (0, width - 1)));
    let y_major = ady > adx;
    let (major, minor) = if y_major { (ady, adx) } else { (adx, ady) };
    let (along, across) = if y_major { (rows, cols) } else { (cols, rows) };
    // The first step whose minor offset reaches `r`.
    let first = |r: i64| if r <= 0 { 0 } else { (major * (2 * r - 1) + 2 * minor - 1) / (2 * minor) };
    let (j0, j1) = if minor == 0 {
        if across.0 > 0 || across.1 < 0 {
            return;
        }
        (along.0.max(0), along.1.min(major))
    } else {
        (along.0.max(0).max(first(across.0)), along.1.min(major).min(first(across.1 + 1) - 1))
    };
    if j0 > j1 {
        return;
    }
    // Every step from `j0` to `j1` lies on the band's rows and in the image: step through the
    // pixels' addresses with one comparison each.
    let (den, inc) = (2 * major, 2 * minor);
    let start = inc * j0 + major;
    let (m, mut num) = if den == 0 { (0, 0) } else { (start / den, start % den) };
    let (x, y) = if y_major { (x0 + sx * m, y0 + sy * j0) } else { (x0 + sx * j0, y0 + sy * m) };
    debug_assert!(x >= 0 && x < width && y >= lo && y <= hi);
    let (step_x, step_y) = (sx as isize, (sy * width) as isize);
    let (along, across) = if y_major { (step_y, step_x) } else { (step_x, step_y) };
    let mut px = (y * width + x) as isize;
    for _ in j0..=j1 {
        visit(px as usize);
        num += inc;
        let carry = num >= den;
        num -= if carry { den } else { 0 };
        px += along + if carry { across } else { 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::super::mirror::{LIMIT, line_density, to_pixel};
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

    /// A small deterministic generator of 24-bit numbers.
    fn lcg(seed: u64) -> impl FnMut() -> u32 {
        let mut state = seed;
        move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as u32
        }
    }

    /// A segment `len` long in a random direction from a random point in or up to 50 pixels
    /// around a `width x height` image.
    fn segment(next: &mut impl FnMut() -> u32, (width, height): (u32, u32), len: f32) -> [f32; 4] {
        let x = (next() % (width + 100)) as f32 - 50.5;
        let y = (next() % (height + 100)) as f32 - 50.25;
        let (ax, ay) = ((next() % 2001) as f32 / 1000.0 - 1.0, (next() % 2001) as f32 / 1000.0 - 1.0);
        [x, y, x + ax * len, y + ay * len]
    }

    #[test]
    fn banded_equals_per_invocation() {
        let mut next = lcg(7);
        // 300 wide: 16-bit table offsets; 2,000 wide: 32-bit ones; 301 wide: a partial last tile;
        // 9,000 wide: bands too low for the table (walked only).
        for (width, height) in [(300u32, 700u32), (2000, 150), (301, 97), (9000, 60)] {
            let mut flat = Vec::new();
            for k in 0..30_000 {
                let len = [3.0, 17.0, 90.0, 400.0][k % 4];
                flat.extend(segment(&mut next, (width, height), len).map(f32::to_bits));
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

    /// Straight lines cut into pieces in one pass equal the recorded passes, one per piece, and
    /// one weighted run over every piece: on each size of the test above, with pieces short and
    /// long, inside, across and outside the image, lines within one pixel (dots), NaN ends, a
    /// weight of 0, and sums past 32 bits.
    #[test]
    fn straight_lines_in_one_pass_equal_their_recorded_pieces() {
        use crate::line_density as stage;
        use crate::line_density::{DensityInput, piece};
        let mut next = lcg(5);
        for (width, height) in [(300u32, 700u32), (2000, 150), (301, 97), (9000, 60)] {
            let lens = [0.4, 2.0, 12.0, 50.0, 160.0, 1200.0];
            let mut lines: Vec<[f32; 4]> =
                (0..20_000).map(|k| segment(&mut next, (width, height), lens[k % 6])).collect();
            lines.extend([[f32::NAN, 3.0, 5.0, 5.0], [-1e9, 2.0, 1e9, 2.0], [4.5, 4.5, 4.5, 4.5]]);
            // Many lines through one pixel, so that its sum passes 32 bits with the largest weight.
            lines.extend((0..600).map(|k| [10.5, 10.5 + (k % 7) as f32, 14.5, 12.5]));
            for weights in [&[0u32, 8, 16][..], &[7], &[1, 2, 3, 4, 5, 6, 7], &[0, 3_000_000_000]] {
                let input = StraightInput { lines: &lines, weights, width, height };
                let one = straight(&input);
                let recorded = stage::straight_recorded(&mut crate::cpu::CpuRunner::default(), &input).unwrap();
                assert!(one.counts.iter().any(|&c| c > 3));
                assert_eq!(one, recorded, "{width}x{height}, weights {weights:?}");
                let (mut segments, mut ws) = (Vec::new(), Vec::new());
                for l in &lines {
                    for (k, &w) in weights.iter().enumerate() {
                        segments.push(piece(l, k, weights.len()));
                        ws.push(w);
                    }
                }
                let weighted = DensityInput { segments: &segments, weights: Some(&ws), width, height };
                let single = stage::run(&mut crate::cpu::CpuRunner::default(), &weighted).unwrap();
                assert_eq!(one, single, "{width}x{height}, weights {weights:?}");
                if weights[1..].contains(&3_000_000_000) {
                    assert!(one.sums.iter().any(|&s| s > u64::from(u32::MAX)));
                }
            }
        }
    }

    /// Walking a band's rows in closed form visits exactly the pixels of the whole walk that lie
    /// on those rows and in the image: every octant, horizontal, vertical and single-pixel
    /// segments, ends far outside the image, and bands at the image's edges.
    #[test]
    fn a_band_of_rows_equals_the_whole_walk_there() {
        let mut state = 3u64;
        let mut next = move |m: u32| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % u64::from(m)) as i32
        };
        let (width, height) = (90u32, 70u32);
        let p = Params { n: 0, width, height, has_weight: 0 };
        let mut cases = Vec::new();
        for k in 0..4000 {
            let reach = [3, 40, 300, 40_000][k % 4];
            let (x0, y0) = (next(130) - 20, next(110) - 20);
            let (dx, dy) = match k % 7 {
                0 => (0, next(2 * reach as u32 + 1) - reach),
                1 => (next(2 * reach as u32 + 1) - reach, 0),
                2 => (0, 0),
                _ => (next(2 * reach as u32 + 1) - reach, next(2 * reach as u32 + 1) - reach),
            };
            let clamp = |v: i32| v.clamp(-LIMIT as i32, LIMIT as i32);
            cases.push([x0, y0, clamp(x0 + dx), clamp(y0 + dy)]);
        }
        for (k, ends) in cases.into_iter().enumerate() {
            let y_lo = next(height + 20) - 10;
            let band = (y_lo, y_lo + 1 + next([1, 8, 40, 100][k % 4]));
            let counts = words(&vec![0; (width * height) as usize]);
            walk_rows(ends, band, &p, 1, &counts, &[]);
            let mut expected = vec![0u32; (width * height) as usize];
            let mut walk = Walk::new(ends);
            loop {
                let (x, y) = (walk.x, walk.y);
                if x >= 0 && (x as u32) < width && y >= band.0.max(0) && y < band.1.min(height as i32) {
                    expected[(y as u32 * width + x as u32) as usize] += 1;
                }
                if walk.done() {
                    break;
                }
                walk.step();
            }
            let got: Vec<u32> = counts.iter().map(|c| c.load(Relaxed)).collect();
            assert_eq!(got, expected, "{ends:?} on rows {band:?}");
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
