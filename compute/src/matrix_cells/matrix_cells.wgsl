// The communication matrix's cells made where the messages are kept: every message sent in the
// window and drawn (its size, sender, receiver and tag as the filter asks) adds one to its cell (its sender's and its receiver's slots) and its bytes to the
// cell's 64-bit sum (`matrix_bin`); the least and the largest non-zero value found exactly in
// two passes over the cells, high words then low (`matrix_range`); every cell coloured through
// a colour table on the scale the host's matrix takes from them (logarithmic where the largest
// is over 100 times the least, else linear from 0), straight RGBA8 rows for the renderer
// (`matrix_colour`). The messages stay on the device; a window sends its ticks.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    n: u32,
    // Cells a side.
    cells: u32,
    // Ranks the slot table names.
    ranks: u32,
    // 1: a cell's value is its bytes, 0: its messages.
    by_bytes: u32,
    // The window of send ticks, [from, to), low word first.
    from_lo: u32,
    from_hi: u32,
    to_lo: u32,
    to_hi: u32,
    // `matrix_range`: 0 the high words, 1 the low words.
    phase: u32,
    stride: u32,
    // Points of the colour table.
    table: u32,
    // The messages drawn: a tag (where `has_tag`), sizes, senders and receivers in ranges (both
    // ends in).
    has_tag: u32,
    bytes_lo: u32,
    bytes_hi: u32,
    senders_lo: u32,
    senders_hi: u32,
    receivers_lo: u32,
    receivers_hi: u32,
    tag: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> send: array<u32>;
@group(0) @binding(2) var<storage, read> source: array<u32>;
@group(0) @binding(3) var<storage, read> destination: array<u32>;
@group(0) @binding(4) var<storage, read> bytes: array<u32>;
// Per rank, its slot on each side (past the cells: not drawn).
@group(0) @binding(5) var<storage, read> slot: array<u32>;
@group(0) @binding(6) var<storage, read_write> counts: array<atomic<u32>>;
// Per cell, its bytes: low word, high word.
@group(0) @binding(7) var<storage, read_write> sums: array<atomic<u32>>;
// Messages in the window; the largest value's high and low words; the least non-zero one's.
@group(0) @binding(8) var<storage, read_write> stats: array<atomic<u32>>;
// The colour map sampled at `params.table` points from 0 to 1: rgba.
@group(0) @binding(9) var<storage, read> colours: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> out: array<u32>;
// The messages' tags (`matrix_bin_tagged` alone: a ninth storage binding).
@group(0) @binding(11) var<storage, read> tags: array<u32>;

// Whether tick (lo, hi) is at or after (a_lo, a_hi).
fn at_or_after(lo: u32, hi: u32, a_lo: u32, a_hi: u32) -> bool {
    return hi > a_hi || (hi == a_hi && lo >= a_lo);
}

// Message i counted into its cell where it is sent in the window and drawn.
fn bin_message(i: u32) {
    let lo = send[2u * i];
    let hi = send[2u * i + 1u];
    if (!at_or_after(lo, hi, params.from_lo, params.from_hi) || at_or_after(lo, hi, params.to_lo, params.to_hi)) {
        return;
    }
    let a = source[i];
    let b = destination[i];
    let w = bytes[i];
    if (w < params.bytes_lo || w > params.bytes_hi || a < params.senders_lo || a > params.senders_hi
        || b < params.receivers_lo || b > params.receivers_hi) {
        return;
    }
    atomicAdd(&stats[0], 1u);
    if (a >= params.ranks || b >= params.ranks) { return; }
    let r = slot[a];
    let c = slot[b];
    if (r >= params.cells || c >= params.cells) { return; }
    let k = r * params.cells + c;
    atomicAdd(&counts[k], 1u);
    let old = atomicAdd(&sums[2u * k], w);
    if (old > 0xffffffffu - w) {
        atomicAdd(&sums[2u * k + 1u], 1u);
    }
}

@compute @workgroup_size(256)
fn matrix_bin(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    bin_message(i);
}

@compute @workgroup_size(256)
fn matrix_bin_tagged(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    if (params.has_tag != 0u && tags[i] != params.tag) { return; }
    bin_message(i);
}

// Cell k's value: its bytes or its messages, high word then low.
fn value_of(k: u32) -> vec2<u32> {
    if (params.by_bytes != 0u) {
        return vec2<u32>(atomicLoad(&sums[2u * k + 1u]), atomicLoad(&sums[2u * k]));
    }
    return vec2<u32>(0u, atomicLoad(&counts[k]));
}

@compute @workgroup_size(256)
fn matrix_range(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 256u;
    if (k >= params.n) { return; }
    let v = value_of(k);
    if (v.x == 0u && v.y == 0u) { return; }
    if (params.phase == 0u) {
        atomicMax(&stats[1], v.x);
        atomicMin(&stats[3], v.x);
    } else {
        if (v.x == atomicLoad(&stats[1])) { atomicMax(&stats[2], v.y); }
        if (v.x == atomicLoad(&stats[3])) { atomicMin(&stats[4], v.y); }
    }
}

fn wide(hi: u32, lo: u32) -> f32 {
    return f32(hi) * 4294967296.0 + f32(lo);
}

fn unorm8(v: f32) -> u32 {
    return u32(clamp(v, 0.0, 1.0) * 255.0 + 0.5);
}

@compute @workgroup_size(256)
fn matrix_colour(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 256u;
    if (k >= params.n) { return; }
    let row = k / params.cells;
    let col = k % params.cells;
    let v = value_of(k);
    var packed = 0u;
    if (v.x != 0u || v.y != 0u) {
        let hi = wide(atomicLoad(&stats[1]), atomicLoad(&stats[2]));
        let lo = wide(atomicLoad(&stats[3]), atomicLoad(&stats[4]));
        let x = wide(v.x, v.y);
        var t = 1.0;
        if (lo > 0.0 && hi / lo > 100.0) {
            let l = log(lo);
            let h = log(hi);
            if (h > l) { t = (log(x) - l) / (h - l); }
        } else if (hi > 0.0) {
            t = x / hi;
        }
        let s = clamp(t, 0.0, 1.0) * f32(params.table - 1u);
        let a = min(u32(floor(s)), params.table - 1u);
        let b = min(a + 1u, params.table - 1u);
        let c = mix(colours[a], colours[b], s - f32(a));
        packed = unorm8(c.x) | (unorm8(c.y) << 8u) | (unorm8(c.z) << 16u) | (unorm8(c.w) << 24u);
    }
    out[row * params.stride + col] = packed;
}
