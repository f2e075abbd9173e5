//! CPU mirror of `location_features.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::Words;

/// Mirror of the WGSL `Params` (20 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub locations: u32,
    pub bins: u32,
    pub slots: u32,
    pub bin_quanta: u32,
    pub reps: u32,
    pub states: u32,
    pub tile_bins: u32,
    pub shift: u32,
    pub digit_pass: u32,
    pub of_mad: u32,
    pub _pad0: u32,
    /// `interval_features`' window `[t0, t1)` as (low, high) words, its ticks per quantum and
    /// the regions of the slot table.
    pub t0: [u32; 2],
    pub t1: [u32; 2],
    pub quantum: u32,
    pub kinds: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<Params>() == 80);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// One invocation of `location_features`: interval `i`'s time added to each bin it overlaps.
pub fn location_features(i: u32, params: &Params, spans: &Words, features: &Words) {
    if i >= params.n {
        return;
    }
    let at = 4 * i as usize;
    let (l, a, end_q, slot) = (
        spans[at].load(Relaxed),
        spans[at + 1].load(Relaxed),
        spans[at + 2].load(Relaxed),
        spans[at + 3].load(Relaxed),
    );
    let end = params.bins * params.bin_quanta;
    let b = end_q.min(end);
    if l >= params.locations || slot >= params.slots || a >= b {
        return;
    }
    add_span(params, features, l, (a, b), slot);
}

/// The shader's `add_span`: quanta `[a, b)` of location `l` in `slot` added to each bin they
/// overlap (`a < b`).
fn add_span(p: &Params, features: &Words, l: u32, (a, b): (u32, u32), slot: u32) {
    let w = p.bin_quanta;
    let row = l * p.bins;
    for bin in a / w..=(b - 1) / w {
        let (lo, hi) = (a.max(bin * w), b.min((bin + 1) * w));
        features[((row + bin) * p.slots + slot) as usize].fetch_add(hi - lo, Relaxed);
    }
}

/// One invocation of `location_distances`: location `l`'s nearest representative and its L1
/// distance.
pub fn location_distances(l: u32, params: &Params, features_in: &Words, reps: &Words, nearest: &Words) {
    if l >= params.n {
        return;
    }
    let d = params.bins * params.slots;
    let (mut best, mut best_d) = (0u32, u32::MAX);
    for r in 0..params.reps {
        let mut sum = 0u32;
        for k in 0..d {
            let x = features_in[(l * d + k) as usize].load(Relaxed);
            let y = reps[(r * d + k) as usize].load(Relaxed);
            sum = sum.wrapping_add(x.max(y) - x.min(y));
        }
        if sum < best_d {
            best_d = sum;
            best = r;
        }
    }
    nearest[2 * l as usize].store(best, Relaxed);
    nearest[2 * l as usize + 1].store(best_d, Relaxed);
}

/// The shader's `round_shift`: `v / 2^shift` rounded to nearest (halves up), saturated to 32
/// bits.
pub fn round_shift(v: u64, shift: u32) -> u32 {
    let x = match shift {
        0 => v,
        1..=63 => match v.checked_add(1u64 << (shift - 1)) {
            Some(x) => x >> shift,
            None => return u32::MAX,
        },
        _ => 0,
    };
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The features of location `l` in window bin `j`, per colour slot (the first `slots` of the
/// eight): the shader's `tile_features` over any word source (`tile` reads a tile word, `table`
/// a table word).
pub fn tile_cell(l: u32, j: u32, p: &Params, tile: impl Fn(usize) -> u32, table: impl Fn(usize) -> u32) -> [u32; 8] {
    let mut acc = [0u64; 8];
    let offsets = p.states as usize;
    let entries = offsets + p.bins as usize + 1;
    let (first, last) = (table(offsets + j as usize), table(offsets + j as usize + 1));
    for s in 0..p.states {
        let sl = table(s as usize);
        if sl >= p.slots || sl >= 8 {
            continue;
        }
        let row = ((l * p.states + s) * p.tile_bins) as usize;
        let mut sum = acc[sl as usize];
        for e in first..last {
            let k = table(entries + 2 * e as usize);
            if k < p.tile_bins {
                let w = table(entries + 2 * e as usize + 1);
                sum = sum.wrapping_add(u64::from(tile(row + k as usize)) * u64::from(w));
            }
        }
        acc[sl as usize] = sum;
    }
    acc.map(|v| round_shift(v, p.shift))
}

/// One invocation of `tile_features`: location `i / bins`'s features in window bin `i % bins`.
pub fn tile_features(i: u32, params: &Params, tiles: &Words, table: &Words, features: &Words) {
    if i >= params.n || params.bins == 0 {
        return;
    }
    let (l, j) = (i / params.bins, i % params.bins);
    let cell = tile_cell(l, j, params, |k| tiles[k].load(Relaxed), |k| table[k].load(Relaxed));
    let out = ((l * params.bins + j) * params.slots) as usize;
    for (sl, v) in cell.iter().enumerate().take(params.slots.min(8) as usize) {
        features[out + sl].store(*v, Relaxed);
    }
}

/// Words per group in the statistics of `group_select`.
pub const GROUP_WORDS: u32 = 8;
const DIGITS: u32 = 1 << 16;
/// A location stands out beyond its group's median distance and this many thousandths of its
/// median deviation (5 robust standard deviations of 1.4826 each).
pub const DEVIANT_PER_MILLE: u32 = 7413;

/// Whether distance `x` stands out of a group whose median distance is `m` and median
/// deviation `mad`, and reaches `least` (the group's floor): the shader's test, in integers.
pub fn stands_out(x: u32, m: u32, mad: u32, least: u32) -> bool {
    x >= least && 1000 * u64::from(m) + u64::from(DEVIANT_PER_MILLE) * u64::from(mad) < 1000 * u64::from(x)
}

/// The buffers of the group statistics' kernels (bindings 4, 8 to 11).
pub struct Groups<'a> {
    pub nearest: &'a Words,
    pub hist: &'a Words,
    pub stats: &'a Words,
    pub candidates: &'a Words,
    pub packed: &'a Words,
}

fn group_value(l: u32, p: &Params, g: &Groups<'_>) -> (u32, u32) {
    let (group, mut v) = (g.nearest[2 * l as usize].load(Relaxed), g.nearest[2 * l as usize + 1].load(Relaxed));
    if p.of_mad == 1 && group < p.reps {
        let m = g.stats[(group * GROUP_WORDS + 3) as usize].load(Relaxed);
        v = v.abs_diff(m);
    }
    (group, v)
}

/// One invocation of `group_histogram`: location `l`'s value's digit counted in its group.
pub fn group_histogram(l: u32, p: &Params, g: &Groups<'_>) {
    if l >= p.n {
        return;
    }
    let (group, v) = group_value(l, p, g);
    if group >= p.reps {
        return;
    }
    let mut digit = v >> 16;
    if p.digit_pass == 1 {
        if v >> 16 != g.stats[(group * GROUP_WORDS + 1) as usize].load(Relaxed) {
            return;
        }
        digit = v & 0xffff;
    }
    g.hist[(group * DIGITS + digit) as usize].fetch_add(1, Relaxed);
}

/// One workgroup of `group_select`: the digit of group `group`'s histogram holding its lower
/// median (the shader sums 256 digits an invocation first; the same digit).
pub fn group_select(group: u32, p: &Params, g: &Groups<'_>) {
    if group >= p.reps {
        return;
    }
    let (base, at) = ((group * DIGITS) as usize, (group * GROUP_WORDS) as usize);
    let hist = |d: u32| g.hist[base + d as usize].load(Relaxed);
    let set = |k: u32, v: u32| g.stats[at + k as usize].store(v, Relaxed);
    let rank = if p.digit_pass == 0 {
        let count = (0..DIGITS).map(hist).fold(0u32, u32::wrapping_add);
        set(0, count);
        if count == 0 {
            set(1, 0);
            set(2, 0);
            set(3 + p.of_mad, 0);
            return;
        }
        (count - 1) / 2
    } else {
        if g.stats[at].load(Relaxed) == 0 {
            return;
        }
        g.stats[at + 2].load(Relaxed)
    };
    let (mut below, mut digit) = (0u32, 0u32);
    for d in 0..DIGITS {
        let c = hist(d);
        if below.wrapping_add(c) > rank {
            digit = d;
            break;
        }
        below = below.wrapping_add(c);
    }
    if p.digit_pass == 0 {
        set(1, digit);
        set(2, rank - below);
    } else {
        set(3 + p.of_mad, (g.stats[at + 1].load(Relaxed) << 16) | digit);
    }
}

/// One invocation of `group_deviants`: location `l` listed where it stands out of its group.
pub fn group_deviants(l: u32, p: &Params, g: &Groups<'_>) {
    if l >= p.n {
        return;
    }
    let (group, x) = (g.nearest[2 * l as usize].load(Relaxed), g.nearest[2 * l as usize + 1].load(Relaxed));
    if group >= p.reps {
        return;
    }
    let at = (group * GROUP_WORDS) as usize;
    let word = |k: usize| g.stats[at + k].load(Relaxed);
    if stands_out(x, word(3), word(4), word(5)) {
        let k = g.candidates[0].fetch_add(1, Relaxed) as usize;
        g.candidates[1 + 2 * k].store(l, Relaxed);
        g.candidates[2 + 2 * k].store(x, Relaxed);
    }
}

/// One invocation of `pack_groups`: the groups of locations `8w` to `8w + 7`, four bits each.
pub fn pack_groups(w: u32, p: &Params, g: &Groups<'_>) {
    if w >= p.n.div_ceil(8) {
        return;
    }
    let mut word = 0u32;
    for j in 0..8 {
        let l = 8 * w + j;
        if l < p.n {
            word |= g.nearest[2 * l as usize].load(Relaxed).min(15) << (4 * j);
        }
    }
    g.packed[w as usize].store(word, Relaxed);
}

/// One invocation of `hide_locations`: location `l` left out of every group where `mask` (a bit
/// a location) does not show it.
pub fn hide_locations(l: u32, p: &Params, nearest: &Words, mask: &Words) {
    if l >= p.n {
        return;
    }
    if (mask[(l / 32) as usize].load(Relaxed) >> (l % 32)) & 1 == 0 {
        nearest[2 * l as usize].store(u32::MAX, Relaxed);
        nearest[2 * l as usize + 1].store(0, Relaxed);
    }
}

/// The columns `interval_features` reads (bindings 13 to 17).
pub struct IntervalColumns<'a> {
    pub location: &'a Words,
    pub start: &'a Words,
    pub end: &'a Words,
    pub kind: &'a Words,
    pub slot_of_kind: &'a Words,
}

/// One invocation of `interval_features`: interval `i`'s time added to each bin of its location
/// it overlaps (as [`location_features`] adds a span's), its ticks turned into quanta here.
pub fn interval_features(i: u32, p: &Params, c: &IntervalColumns<'_>, features: &Words) {
    if i >= p.n {
        return;
    }
    let i = i as usize;
    let pair = |w: &Words| u64::from(w[2 * i].load(Relaxed)) | (u64::from(w[2 * i + 1].load(Relaxed)) << 32);
    let (l, kind) = (c.location[i].load(Relaxed), c.kind[i].load(Relaxed));
    if l >= p.locations || kind >= p.kinds {
        return;
    }
    let slot = c.slot_of_kind[kind as usize].load(Relaxed);
    let (t0, t1) = (u64::from(p.t0[0]) | (u64::from(p.t0[1]) << 32), u64::from(p.t1[0]) | (u64::from(p.t1[1]) << 32));
    let (s0, e0) = (pair(c.start), pair(c.end));
    if s0 >= t1 || t0 >= e0 || slot >= p.slots || p.quantum == 0 {
        return;
    }
    let end = p.bins * p.bin_quanta;
    let to_q = |t: u64| (((t.clamp(t0, t1) - t0) / u64::from(p.quantum)).min(u64::from(end))) as u32;
    let (a, b) = (to_q(s0), to_q(e0));
    if a >= b {
        return;
    }
    add_span(p, features, l, (a, b), slot);
}
