//! CPU mirror of `timeline_pixels.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::{Words, unorm8, word};

/// Mirror of the WGSL `Params` (16 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub width: u32,
    pub height: u32,
    pub locations: u32,
    pub t0: [u32; 2],
    pub t1: [u32; 2],
    pub px_per_tick: f32,
    pub spans: u32,
    pub runs: u32,
    pub stride: u32,
    pub opacity: f32,
    pub additive: u32,
    pub kinds: u32,
    pub stacked: u32,
    pub bytes: [u32; 2],
    pub tag: u32,
    pub has_tag: u32,
    pub senders: [u32; 2],
    pub receivers: [u32; 2],
}
const _: () = assert!(size_of::<Params>() == 96);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }

    /// Location `l`'s class in the layout `table` (its row centre and runs): `bits` (8, 16 or
    /// 32) a location, packed from the low bits of each word.
    fn class_of(&self, table: &Words, l: u32) -> u32 {
        let bits = word(table, self.kinds as usize).clamp(8, 32);
        let per = 32 / bits;
        let packed = word(table, (self.kinds + 2 + l / per) as usize);
        if per == 1 { packed } else { (packed >> ((l % per) * bits)) & ((1 << bits) - 1) }
    }

    fn table_classes(&self, table: &Words) -> usize {
        let per = 32 / word(table, self.kinds as usize).clamp(8, 32);
        (self.kinds + 2 + self.locations.div_ceil(per)) as usize
    }

    fn table_centres(&self, table: &Words) -> usize {
        self.table_classes(table) + word(table, self.kinds as usize + 1) as usize + 1
    }

    fn table_rows(&self, table: &Words) -> usize {
        self.table_centres(table) + word(table, self.kinds as usize + 1) as usize
    }

    fn table_entries(&self, table: &Words) -> usize {
        self.table_rows(table) + 2 * self.height as usize
    }
}

/// Colour slots of the states.
pub const SLOTS: u32 = 8;
/// No run (a pixel row without states).
pub const NONE: u32 = u32::MAX;
/// Added to a pixel row's run in the layout where the run is a summary track's: the shares of
/// every location stacked up its rows as they are, the part without a state left empty.
pub const SUMMARY_RUN: u32 = 1 << 31;
/// The level of the rows showing the innermost state.
pub const INNERMOST: u32 = u32::MAX;
/// Line counts ranked one by one; beyond, they share the last bin.
pub const RANKED: u32 = 1 << 16;
/// One location's row covering one whole column, in fixed point (before its weight).
pub const ONE: f32 = 16_777_216.0;
const GRADIENT_STEPS: f32 = 16.0;
const LIMIT: f32 = 16384.0;

fn pair(w: &Words, i: usize) -> [u32; 2] {
    [word(w, 2 * i), word(w, 2 * i + 1)]
}

fn less64(a: [u32; 2], b: [u32; 2]) -> bool {
    a[1] < b[1] || (a[1] == b[1] && a[0] < b[0])
}

fn sub64(a: [u32; 2], b: [u32; 2]) -> [u32; 2] {
    let borrow = u32::from(a[0] < b[0]);
    [a[0].wrapping_sub(b[0]), a[1].wrapping_sub(b[1]).wrapping_sub(borrow)]
}

fn to_f32(v: [u32; 2]) -> f32 {
    v[1] as f32 * 4_294_967_296.0 + v[0] as f32
}

fn x_of(p: &Params, t: [u32; 2]) -> f32 {
    if less64(t, p.t0) {
        return -to_f32(sub64(p.t0, t)) * p.px_per_tick;
    }
    to_f32(sub64(t, p.t0)) * p.px_per_tick
}

fn fixed(part: f32, weight: u32) -> u32 {
    (part * weight as f32 + 0.5) as u32
}

fn cover(p: &Params, acc: &Words, run: u32, xa: f32, xb: f32, s: u32, weight: u32) {
    let w = p.width;
    let ca = xa.floor() as u32;
    let cb = (xb.ceil() as u32).min(w);
    let base = run * w * SLOTS + s;
    let part = |c: u32| (xb.min(c as f32 + 1.0) - xa.max(c as f32)).max(0.0);
    if cb <= ca + 2 {
        for c in ca..cb {
            acc[(base + c * SLOTS) as usize].fetch_add(fixed(part(c), weight), Relaxed);
        }
        return;
    }
    acc[(base + ca * SLOTS) as usize].fetch_add(fixed(part(ca), weight), Relaxed);
    acc[(base + (cb - 1) * SLOTS) as usize].fetch_add(fixed(part(cb - 1), weight), Relaxed);
    let diff = p.runs * w * SLOTS;
    acc[(diff + base + (ca + 1) * SLOTS) as usize].fetch_add(weight, Relaxed);
    acc[(diff + base + (cb - 1) * SLOTS) as usize].fetch_sub(weight, Relaxed);
}

/// The span columns of `state_cover` (bindings 1 to 5).
pub struct Spans<'a> {
    pub starts: &'a Words,
    pub ends: &'a Words,
    pub locs: &'a Words,
    pub kinds: &'a Words,
    pub depths: &'a Words,
}

/// One invocation of `state_cover`: span `i`'s time added to the runs its location is drawn on.
pub fn state_cover(i: u32, p: &Params, spans: &Spans<'_>, table: &Words, acc: &Words) {
    if i >= p.n {
        return;
    }
    let i = i as usize;
    let l = word(spans.locs, i);
    if l >= p.locations {
        return;
    }
    let depth = if p.spans == 1 { word(spans.depths, i) } else { INNERMOST };
    let mut a = pair(spans.starts, i);
    if less64(a, p.t0) {
        a = p.t0;
    }
    let mut b = pair(spans.ends, i);
    if less64(p.t1, b) {
        b = p.t1;
    }
    if !less64(a, b) {
        return;
    }
    let xa = to_f32(sub64(a, p.t0)) * p.px_per_tick;
    let xb = (to_f32(sub64(b, p.t0)) * p.px_per_tick).min(p.width as f32);
    // The shader's `!(xa < xb)`.
    if xa.partial_cmp(&xb) != Some(std::cmp::Ordering::Less) {
        return;
    }
    let kind = word(spans.kinds, i);
    let slot = if kind < p.kinds { word(table, kind as usize).min(SLOTS - 1) } else { SLOTS - 1 };
    let (classes, class) = (p.table_classes(table), p.class_of(table, l) as usize);
    let (first, last) = (word(table, classes + class), word(table, classes + class + 1));
    let entries = p.table_entries(table);
    for e in first..last {
        let at = entries + 4 * e as usize;
        if word(table, at + 1) == depth && word(table, at) < p.runs {
            cover(p, acc, word(table, at), xa, xb, slot, word(table, at + 2));
        }
    }
}

/// One invocation of `state_prefix`: run `i / SLOTS`'s whole-column differences of slot
/// `i % SLOTS` summed into its coverage.
pub fn state_prefix(i: u32, p: &Params, acc: &Words) {
    if i >= p.n {
        return;
    }
    let (run, s, w) = (i / SLOTS, i % SLOTS, p.width);
    let diff = (p.runs * w * SLOTS) as usize;
    let mut running = 0u32;
    for c in 0..w {
        let at = ((run * w + c) * SLOTS + s) as usize;
        running = running.wrapping_add(acc[diff + at].load(Relaxed));
        acc[at].store(acc[at].load(Relaxed).wrapping_add(running), Relaxed);
    }
}

fn to_pixel(v: f32) -> i32 {
    if v.is_nan() {
        return -LIMIT as i32;
    }
    v.clamp(-LIMIT, LIMIT).floor() as i32
}

fn walk(p: &Params, s: [f32; 4], weight: u32, counts: &Words, sums: &Words) {
    let (mut x, mut y, x1, y1) = (to_pixel(s[0]), to_pixel(s[1]), to_pixel(s[2]), to_pixel(s[3]));
    let (w_px, h_px) = (p.width as i32, p.height as i32);
    if (x < 0 && x1 < 0) || (y < 0 && y1 < 0) || (x >= w_px && x1 >= w_px) || (y >= h_px && y1 >= h_px) {
        return;
    }
    let dx = (x1 - x).abs();
    let dy = -(y1 - y).abs();
    let sx = if x < x1 { 1 } else { -1 };
    let sy = if y < y1 { 1 } else { -1 };
    let mut err = dx + dy;
    loop {
        if x >= 0 && y >= 0 && x < w_px && y < h_px {
            let at = (y as u32 * p.width + x as u32) as usize;
            counts[at].fetch_add(1, Relaxed);
            if weight != 0 {
                let old = sums[2 * at].fetch_add(weight, Relaxed);
                if old > u32::MAX - weight {
                    sums[2 * at + 1].fetch_add(1, Relaxed);
                }
            }
        }
        if x == x1 && y == y1 {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}

/// The message columns of `message_lines` (bindings 8 to 11).
pub struct Lines<'a> {
    pub send: &'a Words,
    pub recv: &'a Words,
    pub src: &'a Words,
    pub dst: &'a Words,
}

/// One invocation of `message_lines`: message `i`'s line in three weighted pieces, when the
/// window shows it and the filter keeps its ends.
pub fn message_lines(i: u32, p: &Params, m: &Lines<'_>, table: &Words, counts: &Words, sums: &Words) {
    if i >= p.n {
        return;
    }
    message_line(i as usize, p, m, table, counts, sums);
}

/// One invocation of `message_lines_filtered`: [`message_lines`] of a message whose size and
/// tag (`sizes`, `tags`: bindings 18 and 19) the filter keeps too.
pub fn message_lines_filtered(
    i: u32,
    p: &Params,
    (m, sizes, tags): (&Lines<'_>, &Words, &Words),
    table: &Words,
    counts: &Words,
    sums: &Words,
) {
    if i >= p.n {
        return;
    }
    let b = word(sizes, i as usize);
    if b < p.bytes[0] || b > p.bytes[1] || (p.has_tag == 1 && word(tags, i as usize) != p.tag) {
        return;
    }
    message_line(i as usize, p, m, table, counts, sums);
}

/// The shader's `message_line`: message `i`'s line, when the window shows it and the filter
/// keeps its ends.
fn message_line(i: usize, p: &Params, m: &Lines<'_>, table: &Words, counts: &Words, sums: &Words) {
    let (s, d) = (word(m.src, i), word(m.dst, i));
    if s >= p.locations || d >= p.locations {
        return;
    }
    if s < p.senders[0] || s > p.senders[1] || d < p.receivers[0] || d > p.receivers[1] {
        return;
    }
    let (a, b) = (pair(m.send, i), pair(m.recv, i));
    if less64(p.t1, a) || less64(b, p.t0) || b == [u32::MAX; 2] {
        return;
    }
    let centres = p.table_centres(table);
    let line = [
        x_of(p, a),
        f32::from_bits(word(table, centres + p.class_of(table, s) as usize)),
        x_of(p, b),
        f32::from_bits(word(table, centres + p.class_of(table, d) as usize)),
    ];
    let point = |f: f32| [line[0] + (line[2] - line[0]) * f, line[1] + (line[3] - line[1]) * f];
    for k in 0..3u32 {
        let (a, b) = (point(k as f32 / 3.0), point((k + 1) as f32 / 3.0));
        walk(p, [a[0], a[1], b[0], b[1]], 8 * k, counts, sums);
    }
}

/// One invocation of `tone_histogram`: pixel `i`'s line count into its bin.
pub fn tone_histogram(i: u32, p: &Params, counts: &Words, hist: &Words, stats: &Words) {
    if i >= p.n {
        return;
    }
    let c = word(counts, i as usize);
    if c == 0 {
        return;
    }
    hist[c.min(RANKED) as usize].fetch_add(1, Relaxed);
    stats[0].fetch_max(c, Relaxed);
    stats[1].fetch_add(1, Relaxed);
}

/// The one workgroup of `tone_ranks`, its 256 invocations in the shader's order: each count's
/// rank from the histogram's running sum.
pub fn tone_ranks(p: &Params, hist: &Words, stats: &Words, ranks: &Words) {
    let bins = p.n.min(RANKED + 1);
    let per = bins.div_ceil(256);
    let range = |t: u32| {
        let from = (t * per).min(bins);
        from..(from + per).min(bins)
    };
    let mut partial = [0u32; 256];
    for (t, v) in partial.iter_mut().enumerate() {
        *v = range(t as u32).map(|c| word(hist, c as usize)).fold(0u32, u32::wrapping_add);
    }
    let mut run = 0u32;
    for v in partial.iter_mut() {
        let x = *v;
        *v = run;
        run = run.wrapping_add(x);
    }
    let pixels = word(stats, 1);
    let n = pixels as f32;
    let at = if pixels > 0 {
        let last = (pixels - 1) as f32;
        [0, (last * 0.5 + 0.5).floor() as u32, pixels - 1]
    } else {
        [0; 3]
    };
    for (t, &start) in partial.iter().enumerate() {
        let mut below = start;
        for c in range(t as u32) {
            let upto = below.wrapping_add(word(hist, c as usize));
            let rank = if n > 0.0 { (below.wrapping_add(upto) as f32 / 2.0 / n).clamp(0.0, 1.0) } else { 0.0 };
            ranks[c as usize].store(rank.to_bits(), Relaxed);
            for (q, &k) in at.iter().enumerate() {
                if below <= k && k < upto {
                    let v = if c == RANKED && q == 2 { word(stats, 0) } else { c };
                    stats[2 + q].store(v, Relaxed);
                }
            }
            below = upto;
        }
    }
}

/// The state colours, as the shader's `categorical`.
pub const CATEGORICAL: [[f32; 3]; 8] = [
    [0.902, 0.624, 0.0],
    [0.337, 0.706, 0.914],
    [0.0, 0.620, 0.451],
    [0.941, 0.894, 0.259],
    [0.0, 0.447, 0.698],
    [0.835, 0.369, 0.0],
    [0.800, 0.475, 0.655],
    [0.75, 0.75, 0.75],
];
const BACKGROUND: [f32; 3] = [0.067, 0.075, 0.094];

/// What `timeline_compose` reads besides the layout.
pub struct Composed<'a> {
    pub acc: &'a Words,
    pub counts: &'a Words,
    pub sums: &'a Words,
    pub stats: &'a Words,
    pub ranks: &'a Words,
}

/// One invocation of `timeline_compose`: pixel `k`'s state and lines as RGBA8.
pub fn timeline_compose(k: u32, p: &Params, table: &Words, i: &Composed<'_>, out: &Words) {
    if k >= p.n {
        return;
    }
    let w = p.width;
    let (x, y) = (k % w, k / w);
    let rows = p.table_rows(table);
    let at = word(table, rows + 2 * y as usize);
    let summary = at != NONE && at >= SUMMARY_RUN;
    let run = if summary { at - SUMMARY_RUN } else { at };
    let mut state: Option<[f32; 4]> = None;
    if run < p.runs {
        let mut c = [0f32; SLOTS as usize];
        let mut total = 0.0;
        for (s, v) in c.iter_mut().enumerate() {
            *v = word(i.acc, ((run * w + x) * SLOTS) as usize + s) as f32 / ONE;
            total += *v;
        }
        if total > 0.0 && summary {
            let up = f32::from_bits(word(table, rows + 2 * y as usize + 1));
            let mut below = 0.0;
            state = (0..c.len())
                .find(|&s| {
                    below += c[s];
                    c[s] > 0.0 && below > up
                })
                .map(|s| {
                    let rgb = CATEGORICAL[s].map(|v| v * 0.72);
                    [rgb[0], rgb[1], rgb[2], 1.0]
                });
        } else if total > 0.0 {
            let slot = if p.stacked == 0 {
                (1..c.len()).fold(0, |best, s| if c[s] > c[best] { s } else { best })
            } else {
                let up = f32::from_bits(word(table, rows + 2 * y as usize + 1));
                let mut below = 0.0;
                (0..c.len())
                    .find(|&s| {
                        below += c[s] / total;
                        c[s] > 0.0 && below > up
                    })
                    .unwrap_or_else(|| (0..c.len()).rfind(|&s| c[s] > 0.0).unwrap_or(0))
            };
            let rgb = CATEGORICAL[slot].map(|v| v * 0.72);
            state = Some([rgb[0], rgb[1], rgb[2], total.min(1.0)]);
        }
    }
    let n = word(i.counts, k as usize);
    let mut colour = state;
    if n != 0 && p.opacity > 0.0 {
        let sum = word(i.sums, 2 * k as usize + 1) as f32 * 4_294_967_296.0 + word(i.sums, 2 * k as usize) as f32;
        let share = (sum / GRADIENT_STEPS / n as f32).clamp(0.0, 1.0);
        let (a0, b0) = ([0.7f32, 0.95, 1.0], [1.0f32, 0.85, 0.35]);
        let line = [0, 1, 2].map(|ch| a0[ch] + (b0[ch] - a0[ch]) * share);
        let under = state.map_or(BACKGROUND, |s| [s[0] * s[3], s[1] * s[3], s[2] * s[3]]);
        let rgb = if p.additive != 0 {
            let log_max = (word(i.stats, 0) as f32 + 1.0).ln();
            let ln2 = 2f32.ln();
            let gain = 0.25 + 1.05 * ((n as f32 + 1.0).ln() - ln2).max(0.0) / (log_max - ln2).max(1e-9);
            [0, 1, 2].map(|ch| (under[ch] * 0.5 + line[ch] * (gain * p.opacity)).min(1.0))
        } else {
            let a = p.opacity * (0.2 + 0.8 * f32::from_bits(word(i.ranks, n.min(RANKED) as usize)));
            [0, 1, 2].map(|ch| under[ch] + (line[ch] - under[ch]) * a)
        };
        colour = Some([rgb[0], rgb[1], rgb[2], 1.0]);
    }
    let packed = colour.map_or(0, |c| unorm8(c[0]) | (unorm8(c[1]) << 8) | (unorm8(c[2]) << 16) | (unorm8(c[3]) << 24));
    out[(y * p.stride + x) as usize].store(packed, Relaxed);
}
