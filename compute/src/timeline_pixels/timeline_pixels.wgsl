// Stage: the timeline's plot pixels made on the device from columns kept there. The states
// each pixel row covers (innermost pieces, or the intervals of one nesting level) are summed per
// pixel column and colour slot in fixed point, the message lines of the window are drawn with
// Bresenham's walk into counts and direction sums, the line counts are ranked (histogram
// equalisation), and every pixel is composed into straight RGBA8, which the renderer copies into
// its raster texture on the device. Only the window, the plot's size and a layout table (what
// each row shows, where each location's row is) change from one picture to the next.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    // Elements of this dispatch: spans, messages, runs * SLOTS or pixels.
    n: u32,
    width: u32,
    height: u32,
    locations: u32,
    // The window [t0, t1] in ticks, as (low, high) words.
    t0: vec2<u32>,
    t1: vec2<u32>,
    // Plot pixels per tick.
    px_per_tick: f32,
    // state_cover: 0 the innermost pieces (the rows without levels), 1 intervals by depth.
    spans: u32,
    // Runs of pixel rows showing the same locations and level.
    runs: u32,
    // Words per row of the composed picture.
    stride: u32,
    opacity: f32,
    // 0: lines over each other; 1: lines added.
    additive: u32,
    // Entries of the kind -> colour slot table at the layout table's start.
    kinds: u32,
    // 0: the dominant state of a pixel; 1: the states' shares stacked up the run's rows.
    stacked: u32,
    // The messages drawn: sizes in [bytes.x, bytes.y], the tag `tag` where `has_tag` is 1,
    // senders in [senders.x, senders.y], receivers in [receivers.x, receivers.y].
    bytes: vec2<u32>,
    tag: u32,
    has_tag: u32,
    senders: vec2<u32>,
    receivers: vec2<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> starts: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> ends: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> locs: array<u32>;
@group(0) @binding(4) var<storage, read> kinds: array<u32>;
@group(0) @binding(5) var<storage, read> depths: array<u32>;
// The layout: [slot per kind: kinds][first entry per location: locations + 1]
// [row centre per location (f32 bits): locations][per pixel row: run (NONE: none), up (f32 bits)]
// [entries: run, level (INNERMOST: the innermost state), weight, 0].
@group(0) @binding(6) var<storage, read> table: array<u32>;
// Coverage per (run, column, slot), then the whole-column differences in the same order.
@group(0) @binding(7) var<storage, read_write> acc: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read> send: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read> recv: array<vec2<u32>>;
@group(0) @binding(10) var<storage, read> src: array<u32>;
@group(0) @binding(11) var<storage, read> dst: array<u32>;
@group(0) @binding(12) var<storage, read_write> counts: array<atomic<u32>>;
// Per pixel the 64-bit sum of the pieces' direction weights, as (low, high) words.
@group(0) @binding(13) var<storage, read_write> sums: array<atomic<u32>>;
// Pixels per line count (the last bin: that count or more).
@group(0) @binding(14) var<storage, read_write> hist: array<atomic<u32>>;
// The highest line count, the pixels with lines, and the counts at the quantiles 0, 1/2 and 1
// of those pixels.
@group(0) @binding(15) var<storage, read_write> stats: array<atomic<u32>>;
// Per line count, its rank among the pixels with lines (0 to 1).
@group(0) @binding(16) var<storage, read_write> ranks: array<f32>;
@group(0) @binding(17) var<storage, read_write> out: array<u32>;
@group(0) @binding(18) var<storage, read> sizes: array<u32>;
@group(0) @binding(19) var<storage, read> tags: array<u32>;

const SLOTS: u32 = 8u;
const NONE: u32 = 0xffffffffu;
const INNERMOST: u32 = 0xffffffffu;
// Added to a pixel row's run where the run is a summary track's.
const SUMMARY_RUN: u32 = 0x80000000u;
// Line counts ranked one by one; beyond, they share the last bin.
const RANKED: u32 = 65536u;
// One location's row covering one whole column, in fixed point (before its weight).
const ONE: f32 = 16777216.0;
const GRADIENT_STEPS: f32 = 16.0;
const LIMIT: f32 = 16384.0;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn less64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

// a - b for a >= b.
fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let borrow = select(0u, 1u, a.x < b.x);
    return vec2<u32>(a.x - b.x, a.y - b.y - borrow);
}

fn to_f32(v: vec2<u32>) -> f32 {
    return f32(v.y) * 4294967296.0 + f32(v.x);
}

// Plot x of a tick (left of the plot: negative).
fn x_of(t: vec2<u32>) -> f32 {
    if (less64(t, params.t0)) {
        return -to_f32(sub64(params.t0, t)) * params.px_per_tick;
    }
    return to_f32(sub64(t, params.t0)) * params.px_per_tick;
}

// Location l's class in the layout table (its row centre and runs): `bits` (8, 16 or 32) a
// location, packed from the low bits of each word.
fn class_of(l: u32) -> u32 {
    let bits = clamp(table[params.kinds], 8u, 32u);
    let per = 32u / bits;
    let held = table[params.kinds + 2u + l / per];
    if (per == 1u) { return held; }
    return (held >> ((l % per) * bits)) & ((1u << bits) - 1u);
}

fn table_classes() -> u32 {
    let per = 32u / clamp(table[params.kinds], 8u, 32u);
    return params.kinds + 2u + (params.locations + per - 1u) / per;
}

fn table_centres() -> u32 {
    return table_classes() + table[params.kinds + 1u] + 1u;
}

fn table_rows() -> u32 {
    return table_centres() + table[params.kinds + 1u];
}

fn table_entries() -> u32 {
    return table_rows() + 2u * params.height;
}

fn fixed(part: f32, weight: u32) -> u32 {
    return u32(part * f32(weight) + 0.5);
}

// Adds [xa, xb) of slot s to a run's columns: the first and last column in part, the whole
// columns between as differences summed by state_prefix.
fn cover(run: u32, xa: f32, xb: f32, s: u32, weight: u32) {
    let w = params.width;
    let ca = u32(floor(xa));
    let cb = min(u32(ceil(xb)), w);
    let base = run * w * SLOTS + s;
    if (cb <= ca + 2u) {
        for (var c = ca; c < cb; c++) {
            let part = max(min(xb, f32(c) + 1.0) - max(xa, f32(c)), 0.0);
            atomicAdd(&acc[base + c * SLOTS], fixed(part, weight));
        }
        return;
    }
    let first = max(min(xb, f32(ca) + 1.0) - max(xa, f32(ca)), 0.0);
    let last = max(min(xb, f32(cb)) - max(xa, f32(cb - 1u)), 0.0);
    atomicAdd(&acc[base + ca * SLOTS], fixed(first, weight));
    atomicAdd(&acc[base + (cb - 1u) * SLOTS], fixed(last, weight));
    let diff = params.runs * w * SLOTS;
    atomicAdd(&acc[diff + base + (ca + 1u) * SLOTS], weight);
    atomicSub(&acc[diff + base + (cb - 1u) * SLOTS], weight);
}

@compute @workgroup_size(256)
fn state_cover(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let l = locs[i];
    if (l >= params.locations) { return; }
    var depth = INNERMOST;
    if (params.spans == 1u) { depth = depths[i]; }
    var a = starts[i];
    if (less64(a, params.t0)) { a = params.t0; }
    var b = ends[i];
    if (less64(params.t1, b)) { b = params.t1; }
    if (!less64(a, b)) { return; }
    let xa = to_f32(sub64(a, params.t0)) * params.px_per_tick;
    let xb = min(to_f32(sub64(b, params.t0)) * params.px_per_tick, f32(params.width));
    if (!(xa < xb)) { return; }
    let kind = kinds[i];
    var slot = SLOTS - 1u;
    if (kind < params.kinds) { slot = min(table[kind], SLOTS - 1u); }
    let of_class = table_classes() + class_of(l);
    let first = table[of_class];
    let last = table[of_class + 1u];
    let entries = table_entries();
    for (var e = first; e < last; e++) {
        let at = entries + 4u * e;
        if (table[at + 1u] == depth && table[at] < params.runs) {
            cover(table[at], xa, xb, slot, table[at + 2u]);
        }
    }
}

// One invocation per (run, slot): the whole-column differences summed along the run's columns
// into its coverage.
@compute @workgroup_size(256)
fn state_prefix(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let run = i / SLOTS;
    let s = i % SLOTS;
    let w = params.width;
    let diff = params.runs * w * SLOTS;
    var running = 0u;
    for (var c = 0u; c < w; c++) {
        let at = (run * w + c) * SLOTS + s;
        running += atomicLoad(&acc[diff + at]);
        atomicStore(&acc[at], atomicLoad(&acc[at]) + running);
    }
}

fn to_pixel(v: f32) -> i32 {
    if (v != v) { return i32(-LIMIT); }
    return i32(floor(clamp(v, -LIMIT, LIMIT)));
}

// Bresenham's walk of one piece, as line_density.wgsl walks a segment.
fn walk(s: vec4<f32>, weight: u32) {
    var x = to_pixel(s.x);
    var y = to_pixel(s.y);
    let x1 = to_pixel(s.z);
    let y1 = to_pixel(s.w);
    let w_px = i32(params.width);
    let h_px = i32(params.height);
    if ((x < 0 && x1 < 0) || (y < 0 && y1 < 0) || (x >= w_px && x1 >= w_px) || (y >= h_px && y1 >= h_px)) {
        return;
    }
    let dx = abs(x1 - x);
    let dy = -abs(y1 - y);
    let sx = select(-1, 1, x < x1);
    let sy = select(-1, 1, y < y1);
    var err = dx + dy;
    loop {
        if (x >= 0 && y >= 0 && x < w_px && y < h_px) {
            let p = u32(y) * params.width + u32(x);
            atomicAdd(&counts[p], 1u);
            if (weight != 0u) {
                let old = atomicAdd(&sums[2u * p], weight);
                if (old > 0xffffffffu - weight) {
                    atomicAdd(&sums[2u * p + 1u], 1u);
                }
            }
        }
        if (x == x1 && y == y1) { break; }
        let e2 = 2 * err;
        if (e2 >= dy) { err += dy; x += sx; }
        if (e2 <= dx) { err += dx; y += sy; }
    }
}

fn point(l: vec4<f32>, f: f32) -> vec2<f32> {
    return vec2<f32>(l.x + (l.z - l.x) * f, l.y + (l.w - l.y) * f);
}

// Message i's line from sender to receiver, when the window shows it and the filter keeps its
// ends, in three pieces weighted 0, 8 and 16 steps from the sender.
fn message_line(i: u32) {
    let s = src[i];
    let d = dst[i];
    if (s >= params.locations || d >= params.locations) { return; }
    if (s < params.senders.x || s > params.senders.y || d < params.receivers.x || d > params.receivers.y) { return; }
    let a = send[i];
    let b = recv[i];
    if (less64(params.t1, a) || less64(b, params.t0) || (b.x == 0xffffffffu && b.y == 0xffffffffu)) { return; }
    let centres = table_centres();
    let line = vec4<f32>(
        x_of(a), bitcast<f32>(table[centres + class_of(s)]), x_of(b), bitcast<f32>(table[centres + class_of(d)])
    );
    for (var k = 0u; k < 3u; k++) {
        let p = point(line, f32(k) / 3.0);
        let q = point(line, f32(k + 1u) / 3.0);
        walk(vec4<f32>(p.x, p.y, q.x, q.y), 8u * k);
    }
}

// One invocation per message (filtered at most by its ends).
@compute @workgroup_size(256)
fn message_lines(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    message_line(i);
}

// One invocation per message, kept only where its size and tag pass the filter too.
@compute @workgroup_size(256)
fn message_lines_filtered(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let b = sizes[i];
    if (b < params.bytes.x || b > params.bytes.y || (params.has_tag == 1u && tags[i] != params.tag)) { return; }
    message_line(i);
}

@compute @workgroup_size(256)
fn tone_histogram(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let c = atomicLoad(&counts[i]);
    if (c == 0u) { return; }
    atomicAdd(&hist[min(c, RANKED)], 1u);
    atomicMax(&stats[0], c);
    atomicAdd(&stats[1], 1u);
}

var<workgroup> partial: array<u32, 256>;

// One workgroup over the histogram's params.n bins: each line count's rank among the pixels with lines, the midpoint of its run
// ((below + at most) / 2 / pixels), from the histogram's running sum.
@compute @workgroup_size(256)
fn tone_ranks(@builtin(local_invocation_index) t: u32) {
    // params.n: the histogram's bins (RANKED + 1).
    let bins = min(params.n, RANKED + 1u);
    let per = (bins + 255u) / 256u;
    let lo = min(t * per, bins);
    let hi = min(lo + per, bins);
    var sum = 0u;
    for (var c = lo; c < hi; c++) { sum += atomicLoad(&hist[c]); }
    partial[t] = sum;
    workgroupBarrier();
    if (t == 0u) {
        var run = 0u;
        for (var k = 0u; k < 256u; k++) {
            let v = partial[k];
            partial[k] = run;
            run += v;
        }
    }
    workgroupBarrier();
    let pixels = atomicLoad(&stats[1]);
    let n = f32(pixels);
    // The positions of the quantiles among the sorted counts (rounded half up).
    var at = vec3<u32>(0u);
    if (pixels > 0u) {
        let last = f32(pixels - 1u);
        at = vec3<u32>(0u, u32(floor(last * 0.5 + 0.5)), pixels - 1u);
    }
    var below = partial[t];
    for (var c = lo; c < hi; c++) {
        let upto = below + atomicLoad(&hist[c]);
        var rank = 0.0;
        if (n > 0.0) { rank = clamp(f32(below + upto) / 2.0 / n, 0.0, 1.0); }
        ranks[c] = rank;
        for (var q = 0u; q < 3u; q++) {
            if (below <= at[q] && at[q] < upto) {
                // The last bin holds every count from RANKED on: its top is the highest count.
                var v = c;
                if (c == RANKED && q == 2u) { v = atomicLoad(&stats[0]); }
                atomicStore(&stats[2u + q], v);
            }
        }
        below = upto;
    }
}

fn categorical(s: u32) -> vec3<f32> {
    switch s {
        case 0u: { return vec3<f32>(0.902, 0.624, 0.0); }
        case 1u: { return vec3<f32>(0.337, 0.706, 0.914); }
        case 2u: { return vec3<f32>(0.0, 0.620, 0.451); }
        case 3u: { return vec3<f32>(0.941, 0.894, 0.259); }
        case 4u: { return vec3<f32>(0.0, 0.447, 0.698); }
        case 5u: { return vec3<f32>(0.835, 0.369, 0.0); }
        case 6u: { return vec3<f32>(0.800, 0.475, 0.655); }
        default: { return vec3<f32>(0.75, 0.75, 0.75); }
    }
}

fn unorm8(v: f32) -> u32 {
    return u32(clamp(v, 0.0, 1.0) * 255.0 + 0.5);
}

// One invocation per plot pixel: its state (the dominant slot, or the stacked shares), the
// message lines over it, packed as RGBA8 (red in the low byte; zero: nothing there).
@compute @workgroup_size(256)
fn timeline_compose(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = index(gid, nwg);
    if (k >= params.n) { return; }
    let w = params.width;
    let x = k % w;
    let y = k / w;
    let rows = table_rows();
    let word = table[rows + 2u * y];
    // A summary track's run: the shares of every location stacked up its rows as they are,
    // the part without a state left empty at the top.
    let summary = word != NONE && word >= SUMMARY_RUN;
    let run = select(word, word - SUMMARY_RUN, summary);
    var has_state = false;
    var state = vec4<f32>(0.0);
    if (run < params.runs) {
        var c: array<f32, 8>;
        var total = 0.0;
        for (var s = 0u; s < SLOTS; s++) {
            c[s] = f32(atomicLoad(&acc[(run * w + x) * SLOTS + s])) / ONE;
            total += c[s];
        }
        if (total > 0.0 && summary) {
            let up = bitcast<f32>(table[rows + 2u * y + 1u]);
            var below = 0.0;
            for (var s = 0u; s < SLOTS; s++) {
                below += c[s];
                if (c[s] > 0.0 && below > up) {
                    has_state = true;
                    state = vec4<f32>(categorical(s) * 0.72, 1.0);
                    break;
                }
            }
        } else if (total > 0.0) {
            var slot = 0u;
            if (params.stacked == 0u) {
                for (var s = 1u; s < SLOTS; s++) {
                    if (c[s] > c[slot]) { slot = s; }
                }
            } else {
                let up = bitcast<f32>(table[rows + 2u * y + 1u]);
                var below = 0.0;
                var found = false;
                for (var s = 0u; s < SLOTS; s++) {
                    below += c[s] / total;
                    if (c[s] > 0.0 && below > up) {
                        slot = s;
                        found = true;
                        break;
                    }
                }
                if (!found) {
                    for (var s = 0u; s < SLOTS; s++) {
                        if (c[s] > 0.0) { slot = s; }
                    }
                }
            }
            has_state = true;
            state = vec4<f32>(categorical(slot) * 0.72, min(total, 1.0));
        }
    }
    let n = atomicLoad(&counts[k]);
    var colour = state;
    if (n != 0u && params.opacity > 0.0) {
        let sum = f32(atomicLoad(&sums[2u * k + 1u])) * 4294967296.0 + f32(atomicLoad(&sums[2u * k]));
        let share = clamp(sum / GRADIENT_STEPS / f32(n), 0.0, 1.0);
        let line = vec3<f32>(0.7, 0.95, 1.0) + (vec3<f32>(1.0, 0.85, 0.35) - vec3<f32>(0.7, 0.95, 1.0)) * share;
        var under = vec3<f32>(0.067, 0.075, 0.094);
        if (has_state) { under = state.rgb * state.a; }
        if (params.additive != 0u) {
            let log_max = log(f32(atomicLoad(&stats[0])) + 1.0);
            let ln2 = log(2.0);
            let gain = 0.25 + 1.05 * max(log(f32(n) + 1.0) - ln2, 0.0) / max(log_max - ln2, 1e-9);
            colour = vec4<f32>(min(under * 0.5 + line * (gain * params.opacity), vec3<f32>(1.0)), 1.0);
        } else {
            let a = params.opacity * (0.2 + 0.8 * ranks[min(n, RANKED)]);
            colour = vec4<f32>(under + (line - under) * a, 1.0);
        }
        has_state = true;
    }
    var packed = 0u;
    if (has_state) {
        packed = unorm8(colour.r) | (unorm8(colour.g) << 8u) | (unorm8(colour.b) << 16u) | (unorm8(colour.a) << 24u);
    }
    out[y * params.stride + x] = packed;
}
