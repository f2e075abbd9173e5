// Per-location features of a time window: for every location, the time each of its colour
// slots covers in each of the window's time bins; and every location's distance to the nearest
// of a few representative feature vectors. They group rows by behaviour (views/src/rows.rs).
// CPU mirror: mirror.rs beside this file (keep the two in sync).
//
// Times arrive as u32 quanta from the window's start (the recording converts them); a bin is
// `bin_quanta` quanta wide, so an interval adds at most that much to a (location, bin, slot)
// cell per bin it overlaps.

// interval_features' window: [t0, t1) as (low, high) words, ticks per quantum, regions.
struct Window {
    t0: vec2<u32>,
    t1: vec2<u32>,
    quantum: u32,
    kinds: u32,
    _pad0: u32,
    _pad1: u32,
}

struct Params {
    n: u32,            // intervals in this chunk, locations (location_distances) or locations x bins (tile_features)
    locations: u32,
    bins: u32,
    slots: u32,
    bin_quanta: u32,
    reps: u32,         // representatives (location_distances)
    states: u32,       // states of the tiles (tile_features)
    tile_bins: u32,    // time bins of the tiles (tile_features)
    shift: u32,        // fraction bits of the weights (tile_features)
    digit_pass: u32,         // 0: the high 16 bits of a value, 1: the low (group_histogram, group_select)
    of_mad: u32,       // 0: the distances' median, 1: their deviations' (group_histogram, group_select)
    _pad0: u32,
    window: Window,    // interval_features
}

@group(0) @binding(0) var<uniform> params: Params;
// Per interval: location, first quantum, end quantum (exclusive), slot.
@group(0) @binding(1) var<storage, read> spans: array<vec4<u32>>;
// locations x bins x slots, row-major.
@group(0) @binding(2) var<storage, read_write> features: array<atomic<u32>>;
// reps x bins x slots, row-major.
@group(0) @binding(3) var<storage, read> reps: array<u32>;
// Per location: the nearest representative and the L1 distance to it.
@group(0) @binding(4) var<storage, read_write> nearest: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> features_in: array<u32>;
// Per location, state and tile bin: its time in units of the tiles (tile_features).
@group(0) @binding(6) var<storage, read> tiles: array<u32>;
// Per group: a 65,536-bin histogram of a digit of its members' values.
@group(0) @binding(8) var<storage, read_write> hist: array<atomic<u32>>;
// Per group, GROUP_WORDS words: members, the median's high digit, the rank left within it, the
// median distance, the median deviation from it, the least distance past the floor.
@group(0) @binding(9) var<storage, read_write> stats: array<u32>;
// The count of candidates, then per candidate its location and distance.
@group(0) @binding(10) var<storage, read_write> candidates: array<atomic<u32>>;
// Each location's group, four bits each, eight to a word.
@group(0) @binding(11) var<storage, read_write> packed: array<u32>;
// One bit per location: whether it is grouped (hide_locations).
@group(0) @binding(12) var<storage, read> shown_mask: array<u32>;
// An interval's location, start and end ticks (as (low, high) words) and region, kept on the
// device, and each region's colour slot (interval_features).
@group(0) @binding(13) var<storage, read> iv_location: array<u32>;
@group(0) @binding(14) var<storage, read> iv_start: array<vec2<u32>>;
@group(0) @binding(15) var<storage, read> iv_end: array<vec2<u32>>;
@group(0) @binding(16) var<storage, read> iv_kind: array<u32>;
@group(0) @binding(17) var<storage, read> slot_of_kind: array<u32>;
// tile_features' table: per state its colour slot (>= slots: none), then per window bin the
// first of its entries (bins + 1 words), then the entries: a tile bin and its weight.
@group(0) @binding(7) var<storage, read> tile_table: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// Quanta [a, b) of location l in `slot` added to each bin they overlap (a < b).
fn add_span(l: u32, a: u32, b: u32, slot: u32) {
    let w = params.bin_quanta;
    let row = l * params.bins;
    for (var bin = a / w; bin <= (b - 1u) / w; bin++) {
        let lo = max(a, bin * w);
        let hi = min(b, (bin + 1u) * w);
        atomicAdd(&features[(row + bin) * params.slots + slot], hi - lo);
    }
}

@compute @workgroup_size(256)
fn location_features(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let s = spans[i];
    let l = s.x;
    let slot = s.w;
    let end = params.bins * params.bin_quanta;
    let a = s.y;
    let b = min(s.z, end);
    if (l >= params.locations || slot >= params.slots || a >= b) { return; }
    add_span(l, a, b, slot);
}

@compute @workgroup_size(256)
fn location_distances(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = index(gid, nwg);
    if (l >= params.n) { return; }
    let d = params.bins * params.slots;
    var best = 0u;
    var best_d = 0xffffffffu;
    for (var r = 0u; r < params.reps; r++) {
        var sum = 0u;
        for (var k = 0u; k < d; k++) {
            let x = features_in[l * d + k];
            let y = reps[r * d + k];
            sum += max(x, y) - min(x, y);
        }
        if (sum < best_d) {
            best_d = sum;
            best = r;
        }
    }
    nearest[l] = vec2<u32>(best, best_d);
}

// a * b as a 64-bit (low, high) pair, from 16-bit halves.
fn mul64(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = p01 + p10;
    let mid_carry = select(0u, 0x10000u, mid < p01);
    let lo = p00 + (mid << 16u);
    let lo_carry = select(0u, 1u, lo < p00);
    return vec2<u32>(lo, a1 * b1 + (mid >> 16u) + mid_carry + lo_carry);
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// v / 2^shift rounded to nearest (halves up), saturated to 32 bits.
fn round_shift(v: vec2<u32>, shift: u32) -> u32 {
    var x = v;
    if (shift > 0u) {
        var half = vec2<u32>(0u, 0u);
        if (shift <= 32u) {
            half.x = 1u << (shift - 1u);
        } else {
            half.y = 1u << (shift - 33u);
        }
        x = add64(x, half);
        if (x.y < v.y) { return 0xffffffffu; }
        if (shift >= 32u) {
            x = vec2<u32>(x.y >> (shift - 32u), 0u);
        } else {
            x = vec2<u32>((x.x >> shift) | (x.y << (32u - shift)), x.y >> shift);
        }
    }
    if (x.y != 0u) { return 0xffffffffu; }
    return x.x;
}

// Invocation (location l, window bin j): per colour slot, the weighted sum of the location's
// tiles over the tile bins the window bin overlaps, in 64 bits, then in quanta.
@compute @workgroup_size(256)
fn tile_features(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let l = i / params.bins;
    let j = i % params.bins;
    var acc: array<vec2<u32>, 8>;
    for (var sl = 0u; sl < 8u; sl++) { acc[sl] = vec2<u32>(0u, 0u); }
    let offsets = params.states;
    let entries = offsets + params.bins + 1u;
    let first = tile_table[offsets + j];
    let last = tile_table[offsets + j + 1u];
    for (var s = 0u; s < params.states; s++) {
        let sl = tile_table[s];
        if (sl >= params.slots || sl >= 8u) { continue; }
        let row = (l * params.states + s) * params.tile_bins;
        var sum = acc[sl];
        for (var e = first; e < last; e++) {
            let k = tile_table[entries + 2u * e];
            if (k < params.tile_bins) {
                sum = add64(sum, mul64(tiles[row + k], tile_table[entries + 2u * e + 1u]));
            }
        }
        acc[sl] = sum;
    }
    let out = (l * params.bins + j) * params.slots;
    for (var sl = 0u; sl < params.slots && sl < 8u; sl++) {
        atomicStore(&features[out + sl], round_shift(acc[sl], params.shift));
    }
}

const GROUP_WORDS: u32 = 8u;
const DIGITS: u32 = 65536u;
// A location stands out beyond its group's median and 7.413 (5 x 1.4826) median deviations.
const DEVIANT_PER_MILLE: u32 = 7413u;

// Location l's group and the value whose median is sought: its distance, or its deviation from
// its group's median distance.
fn group_value(l: u32) -> vec2<u32> {
    let e = nearest[l];
    var v = e.y;
    if (params.of_mad == 1u && e.x < params.reps) {
        let m = stats[e.x * GROUP_WORDS + 3u];
        v = max(v, m) - min(v, m);
    }
    return vec2<u32>(e.x, v);
}

@compute @workgroup_size(256)
fn group_histogram(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = index(gid, nwg);
    if (l >= params.n) { return; }
    let gv = group_value(l);
    let g = gv.x;
    let v = gv.y;
    if (g >= params.reps) { return; }
    var digit = v >> 16u;
    if (params.digit_pass == 1u) {
        if ((v >> 16u) != stats[g * GROUP_WORDS + 1u]) { return; }
        digit = v & 0xffffu;
    }
    atomicAdd(&hist[g * DIGITS + digit], 1u);
}

var<workgroup> partial: array<u32, 256>;

// Workgroup g: the digit of group g's histogram holding its lower median. Each invocation sums
// 256 digits; the first then walks the sums and the digits of the one holding the median (one
// invocation walking all 65,536 digits, with a break, returned a wrong digit on lavapipe).
@compute @workgroup_size(256)
fn group_select(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let g = wid.x;
    if (g >= params.reps) { return; }
    let base = g * DIGITS;
    var s = 0u;
    for (var k = 0u; k < 256u; k++) { s += atomicLoad(&hist[base + t * 256u + k]); }
    partial[t] = s;
    workgroupBarrier();
    if (t != 0u) { return; }
    let at = g * GROUP_WORDS;
    var rank = 0u;
    if (params.digit_pass == 0u) {
        var count = 0u;
        for (var c = 0u; c < 256u; c++) { count += partial[c]; }
        stats[at] = count;
        if (count == 0u) {
            stats[at + 1u] = 0u;
            stats[at + 2u] = 0u;
            stats[at + 3u + params.of_mad] = 0u;
            return;
        }
        rank = (count - 1u) / 2u;
    } else {
        if (stats[at] == 0u) { return; }
        rank = stats[at + 2u];
    }
    var below = 0u;
    var chunk = 0u;
    for (var c = 0u; c < 256u; c++) {
        if (below + partial[c] > rank) {
            chunk = c;
            break;
        }
        below += partial[c];
    }
    var digit = chunk * 256u;
    for (var k = 0u; k < 256u; k++) {
        let n = atomicLoad(&hist[base + chunk * 256u + k]);
        if (below + n > rank) {
            digit = chunk * 256u + k;
            break;
        }
        below += n;
    }
    if (params.digit_pass == 0u) {
        stats[at + 1u] = digit;
        stats[at + 2u] = rank - below;
    } else {
        stats[at + 3u + params.of_mad] = (stats[at + 1u] << 16u) | digit;
    }
}

fn less64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

// Invocation l: location l listed where it stands out of its group.
@compute @workgroup_size(256)
fn group_deviants(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = index(gid, nwg);
    if (l >= params.n) { return; }
    let e = nearest[l];
    if (e.x >= params.reps) { return; }
    let at = e.x * GROUP_WORDS;
    let bound = add64(mul64(1000u, stats[at + 3u]), mul64(DEVIANT_PER_MILLE, stats[at + 4u]));
    if (e.y >= stats[at + 5u] && less64(bound, mul64(1000u, e.y))) {
        let k = atomicAdd(&candidates[0], 1u);
        atomicStore(&candidates[1u + 2u * k], l);
        atomicStore(&candidates[2u + 2u * k], e.y);
    }
}

// Invocation w: the groups of locations 8w to 8w + 7, four bits each.
@compute @workgroup_size(256)
fn pack_groups(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = index(gid, nwg);
    if (w >= (params.n + 7u) / 8u) { return; }
    var word = 0u;
    for (var j = 0u; j < 8u; j++) {
        let l = 8u * w + j;
        if (l < params.n) { word |= min(nearest[l].x, 15u) << (4u * j); }
    }
    packed[w] = word;
}

// Invocation l: location l left out of every group where the mask does not show it.
@compute @workgroup_size(256)
fn hide_locations(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = index(gid, nwg);
    if (l >= params.n) { return; }
    if (((shown_mask[l / 32u] >> (l % 32u)) & 1u) == 0u) {
        nearest[l] = vec2<u32>(0xffffffffu, 0u);
    }
}

fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

// x / q for a quotient below 2^32 (x.y < q), by restoring division a bit at a time.
fn div64(x: vec2<u32>, q: u32) -> u32 {
    var r = x.y;
    var quotient = 0u;
    for (var i = 31i; i >= 0; i--) {
        let carry = r >> 31u;
        r = (r << 1u) | ((x.x >> u32(i)) & 1u);
        if (carry == 1u || r >= q) {
            r = r - q;
            quotient |= 1u << u32(i);
        }
    }
    return quotient;
}

// Ticks t in the window as quanta from its start, at most `end`.
fn to_quanta(t: vec2<u32>, end: u32) -> u32 {
    var c = t;
    if (less64(c, params.window.t0)) { c = params.window.t0; }
    if (less64(params.window.t1, c)) { c = params.window.t1; }
    return min(div64(sub64(c, params.window.t0), params.window.quantum), end);
}

// Invocation i: interval i's time (from the columns kept on the device) added to each bin of
// its location it overlaps, as location_features adds a span's.
@compute @workgroup_size(256)
fn interval_features(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let l = iv_location[i];
    let kind = iv_kind[i];
    if (l >= params.locations || kind >= params.window.kinds) { return; }
    let slot = slot_of_kind[kind];
    let s0 = iv_start[i];
    let e0 = iv_end[i];
    // Outside the window (or empty once clipped): nothing.
    if (!less64(s0, params.window.t1) || !less64(params.window.t0, e0) || slot >= params.slots) { return; }
    let end = params.bins * params.bin_quanta;
    let a = to_quanta(s0, end);
    let b = to_quanta(e0, end);
    if (a >= b) { return; }
    add_span(l, a, b, slot);
}
