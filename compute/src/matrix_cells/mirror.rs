//! CPU mirror of `matrix_cells.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::{Words, add64, unorm8, word};

/// Mirror of the WGSL `Params` (12 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    /// Cells a side.
    pub cells: u32,
    /// Ranks the slot table names.
    pub ranks: u32,
    /// 1: a cell's value is its bytes, 0: its messages.
    pub by_bytes: u32,
    /// The window of send ticks, `[from, to)`, low word first.
    pub from: [u32; 2],
    pub to: [u32; 2],
    /// `matrix_range`: 0 the high words, 1 the low words.
    pub phase: u32,
    pub stride: u32,
    /// Points of the colour table.
    pub table: u32,
    /// The messages drawn: a tag (where `has_tag`), sizes, senders and receivers in ranges
    /// (both ends in).
    pub has_tag: u32,
    pub bytes: [u32; 2],
    pub senders: [u32; 2],
    pub receivers: [u32; 2],
    pub tag: u32,
    pub pad: u32,
}
const _: () = assert!(size_of::<Params>() == 80);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// What `matrix_bin` reads: the kept messages and the ranks' slots.
pub struct Messages<'a> {
    pub send: &'a Words,
    pub source: &'a Words,
    pub destination: &'a Words,
    pub bytes: &'a Words,
    pub slot: &'a Words,
}

/// One invocation of `matrix_bin_tagged`: message `i`, where of the filter's tag, as
/// [`matrix_bin`] counts it.
pub fn matrix_bin_tagged(i: u32, p: &Params, m: &Messages<'_>, tags: &Words, grid: (&Words, &Words, &Words)) {
    if i >= p.n || (p.has_tag != 0 && word(tags, i as usize) != p.tag) {
        return;
    }
    matrix_bin(i, p, m, grid);
}

/// One invocation of `matrix_bin`: message `i`, where sent in the window and drawn, counted in
/// its cell.
pub fn matrix_bin(i: u32, p: &Params, m: &Messages<'_>, (counts, sums, stats): (&Words, &Words, &Words)) {
    if i >= p.n {
        return;
    }
    let i = i as usize;
    let sent = u64::from(word(m.send, 2 * i)) | (u64::from(word(m.send, 2 * i + 1)) << 32);
    let from = u64::from(p.from[0]) | (u64::from(p.from[1]) << 32);
    let to = u64::from(p.to[0]) | (u64::from(p.to[1]) << 32);
    if sent < from || sent >= to {
        return;
    }
    let (a, b, w) = (word(m.source, i), word(m.destination, i), word(m.bytes, i));
    let within = |v: u32, r: [u32; 2]| r[0] <= v && v <= r[1];
    if !within(w, p.bytes) || !within(a, p.senders) || !within(b, p.receivers) {
        return;
    }
    stats[0].fetch_add(1, Relaxed);
    if a >= p.ranks || b >= p.ranks {
        return;
    }
    let (r, c) = (word(m.slot, a as usize), word(m.slot, b as usize));
    if r >= p.cells || c >= p.cells {
        return;
    }
    let k = (r * p.cells + c) as usize;
    counts[k].fetch_add(1, Relaxed);
    add64(sums, k, w);
}

/// Cell `k`'s value: its bytes or its messages, high word then low.
fn value_of(k: usize, p: &Params, counts: &Words, sums: &Words) -> (u32, u32) {
    if p.by_bytes != 0 { (word(sums, 2 * k + 1), word(sums, 2 * k)) } else { (0, word(counts, k)) }
}

/// One invocation of `matrix_range`: cell `k`'s value towards the largest and the least.
pub fn matrix_range(k: u32, p: &Params, (counts, sums, stats): (&Words, &Words, &Words)) {
    if k >= p.n {
        return;
    }
    let v = value_of(k as usize, p, counts, sums);
    if v == (0, 0) {
        return;
    }
    if p.phase == 0 {
        stats[1].fetch_max(v.0, Relaxed);
        stats[3].fetch_min(v.0, Relaxed);
    } else {
        if v.0 == word(stats, 1) {
            stats[2].fetch_max(v.1, Relaxed);
        }
        if v.0 == word(stats, 3) {
            stats[4].fetch_min(v.1, Relaxed);
        }
    }
}

fn wide(hi: u32, lo: u32) -> f32 {
    hi as f32 * 4_294_967_296.0 + lo as f32
}

/// One invocation of `matrix_colour`: cell `k` coloured into `out`.
pub fn matrix_colour(
    k: u32,
    p: &Params,
    (counts, sums, stats): (&Words, &Words, &Words),
    colours: &Words,
    out: &Words,
) {
    if k >= p.n || p.cells == 0 || p.table == 0 {
        return;
    }
    let (row, col) = (k / p.cells, k % p.cells);
    let v = value_of(k as usize, p, counts, sums);
    let mut packed = 0;
    if v != (0, 0) {
        let hi = wide(word(stats, 1), word(stats, 2));
        let lo = wide(word(stats, 3), word(stats, 4));
        let x = wide(v.0, v.1);
        let mut t = 1.0f32;
        if lo > 0.0 && hi / lo > 100.0 {
            let (l, h) = (lo.ln(), hi.ln());
            if h > l {
                t = (x.ln() - l) / (h - l);
            }
        } else if hi > 0.0 {
            t = x / hi;
        }
        let s = t.clamp(0.0, 1.0) * (p.table - 1) as f32;
        let a = (s.floor() as u32).min(p.table - 1);
        let b = (a + 1).min(p.table - 1);
        let f = s - a as f32;
        let c = |ch: usize| {
            let (u, w) = (
                f32::from_bits(word(colours, 4 * a as usize + ch)),
                f32::from_bits(word(colours, 4 * b as usize + ch)),
            );
            u + (w - u) * f
        };
        packed = unorm8(c(0)) | (unorm8(c(1)) << 8) | (unorm8(c(2)) << 16) | (unorm8(c(3)) << 24);
    }
    out[(row * p.stride + col) as usize].store(packed, Relaxed);
}
