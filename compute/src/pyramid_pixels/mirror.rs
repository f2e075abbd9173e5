//! CPU mirror of `pyramid_pixels.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::{Words, word};

/// Mirror of the WGSL `Params` (32 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub width: u32,
    pub height: u32,
    pub runs: u32,
    pub ranks: u32,
    pub states: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub block: u32,
    pub blocks: u32,
    pub bins: u32,
    pub k0: i32,
    pub frac0: f32,
    pub ppx: f32,
    pub per_px: f32,
    pub unit: f32,
    pub fine_bins: u32,
    pub fine_k0: i32,
    pub fine_frac0: f32,
    pub fine_ppx: f32,
    pub line_block: u32,
    pub line_blocks: u32,
    pub _pad2: u32,
    pub _pad3: u32,
    pub tile_bins: u32,
    pub tile_k0: i32,
    pub tile_frac0: f32,
    pub tile_ppx: f32,
}
const _: () = assert!(size_of::<Params>() == 112);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

const SLOTS: usize = 8;
const ONE: f32 = 16_777_216.0;
/// A run drawn from its location's own tiles.
pub const OWN: u32 = 1;
/// The summary track's run.
pub const SUMMARY: u32 = 2;

fn to_f32(w: &Words, i: usize) -> f32 {
    word(w, 2 * i + 1) as f32 * 4_294_967_296.0 + word(w, 2 * i) as f32
}

fn run_word(p: &Params, table: &Words, run: u32, k: u32) -> u32 {
    word(table, (p.states + 5 * run + k) as usize)
}

fn block_share(p: &Params, b: u32, block: u32, lo: u32, hi: u32) -> f32 {
    let a = b * block;
    let e = (a + block).min(p.ranks);
    let inside = hi.min(e) - lo.max(a);
    inside as f32 / e.wrapping_sub(a).max(1) as f32
}

/// The cells `(bin, share)` of a grid (first bin `k0`, `frac0` into it, `ppx` bins a pixel,
/// `bins` in all) that pixel column `col` covers, as the shader's loops visit them.
fn cells(col: u32, k0: i32, frac0: f32, ppx: f32, bins: u32, mut each: impl FnMut(u32, f32)) {
    let a = frac0 + col as f32 * ppx;
    let b = a + ppx;
    for r in a.floor() as i32..b.ceil() as i32 {
        let k = k0 + r;
        let wt = b.min((r + 1) as f32) - a.max(r as f32);
        if k < 0 || k >= bins as i32 || wt <= 0.0 {
            continue;
        }
        each(k as u32, wt);
    }
}

/// The buffers `pyramid_cover` reads (bindings 1, 2, 3 and 6).
pub struct Sources<'a> {
    pub level: &'a Words,
    pub totals: &'a Words,
    pub tiles: &'a Words,
    pub table: &'a Words,
}

/// One invocation of `pyramid_cover`: run `i / width`'s time per colour slot in column
/// `i % width`.
pub fn pyramid_cover(i: u32, p: &Params, src: &Sources<'_>, acc: &Words) {
    if i >= p.n {
        return;
    }
    let (run, col) = (i / p.width, i % p.width);
    let table = src.table;
    let (lo, hi, flags) = (run_word(p, table, run, 0), run_word(p, table, run, 1), run_word(p, table, run, 2));
    if hi <= lo {
        return;
    }
    let mut c = [0f32; SLOTS];
    let mut share = 1.0 / (hi - lo) as f32;
    let slot = |s: u32| (word(table, s as usize) as usize).min(SLOTS - 1);
    if flags & SUMMARY != 0 {
        cells(col, p.fine_k0, p.fine_frac0, p.fine_ppx, p.fine_bins, |k, wt| {
            for s in 0..p.states {
                let v = to_f32(src.totals, (s * p.fine_bins + k) as usize);
                if v > 0.0 {
                    c[slot(s)] += v * wt / p.per_px;
                }
            }
        });
    } else if flags & OWN != 0 {
        share = 1.0;
        for s in 0..p.states {
            let row = (lo * p.states + s) * p.tile_bins;
            cells(col, p.tile_k0, p.tile_frac0, p.tile_ppx, p.tile_bins, |k, wt| {
                let v = word(src.tiles, (row + k) as usize) as f32 * p.unit;
                if v > 0.0 {
                    c[slot(s)] += v * wt / p.per_px;
                }
            });
        }
    } else {
        let mut blk = lo / p.block;
        while blk <= (hi - 1) / p.block && blk < p.blocks {
            let wb = block_share(p, blk, p.block, lo, hi);
            cells(col, p.k0, p.frac0, p.ppx, p.bins, |k, wt| {
                for s in 0..p.states {
                    let v = to_f32(src.level, ((blk * p.states + s) * p.bins + k) as usize);
                    if v > 0.0 {
                        c[slot(s)] += v * wb * wt / p.per_px;
                    }
                }
            });
            blk += 1;
        }
    }
    let out = ((run * p.width + col) as usize) * SLOTS;
    for (s, v) in c.iter().enumerate() {
        acc[out + s].store((v * share * ONE + 0.5).min(4_294_967_040.0) as u32, Relaxed);
    }
}

/// The buffers `pyramid_lines` reads (bindings 4, 5 and 6).
pub struct LineSources<'a> {
    pub counts: &'a Words,
    pub gradient: &'a Words,
    pub table: &'a Words,
}

/// One invocation of `pyramid_lines`: the whole message lines through column `i % width` of
/// run `i / width`'s rows.
pub fn pyramid_lines(i: u32, p: &Params, src: &LineSources<'_>, counts: &Words, sums: &Words) {
    if i >= p.n {
        return;
    }
    let (run, col) = (i / p.width, i % p.width);
    let table = src.table;
    let (lo, hi, flags) = (run_word(p, table, run, 0), run_word(p, table, run, 1), run_word(p, table, run, 2));
    if hi <= lo || flags & SUMMARY != 0 || p.line_block == 0 || p.line_blocks == 0 {
        return;
    }
    let first_block = lo / p.line_block;
    let last = ((hi - 1) / p.line_block).min(p.line_blocks - 1);
    let mut weight = 0.0f32;
    for blk in first_block..=last {
        weight += block_share(p, blk, p.line_block, lo, hi);
    }
    if weight <= 0.0 {
        return;
    }
    let (mut cc, mut gg) = (0.0f32, 0.0f32);
    cells(col, p.fine_k0, p.fine_frac0, p.fine_ppx, p.fine_bins, |k, wt| {
        for blk in first_block..=last {
            let f = wt * block_share(p, blk, p.line_block, lo, hi) / weight;
            let cell = (k * p.line_blocks + blk) as usize;
            cc += to_f32(src.counts, cell) * f;
            gg += to_f32(src.gradient, cell) * f;
        }
    });
    if cc < 0.25 {
        return;
    }
    let whole = (cc + 0.5).floor().max(1.0);
    let sum = (gg / cc * whole + 0.5).floor();
    let high = (sum / 4_294_967_296.0).floor();
    let count = whole.min(4_294_967_040.0) as u32;
    let low = (sum - high * 4_294_967_296.0) as u32;
    let (first, rows) = (run_word(p, table, run, 3), run_word(p, table, run, 4));
    let mut y = first;
    while y < first + rows && y < p.height {
        let k = (y * p.width + col) as usize;
        counts[k].store(count, Relaxed);
        sums[2 * k].store(low, Relaxed);
        sums[2 * k + 1].store(high as u32, Relaxed);
        y += 1;
    }
}
