// Stage: the timeline's plot pixels of a window too large to read, made on the device from the
// trace's pyramid kept there (the state tiles of one level, the message lines of the finest, the
// per-location tiles and every location's total per state). Per run of pixel rows drawing the
// same ranks and per pixel column: the time of each colour slot in the pixel (`pyramid_cover`,
// in the coverage of `timeline_pixels.wgsl`, whose kernels then rank the lines and compose the
// pixels), and the whole message lines through it (`pyramid_lines`). Each pixel column covers
// cells of a grid of time bins: the first bin `k0`, how far into it the window starts (`frac0`)
// and the bins per pixel (`ppx`), so only the rows' table changes between pictures.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    // runs * width
    n: u32,
    width: u32,
    height: u32,
    runs: u32,
    ranks: u32,
    states: u32,
    _pad0: u32,
    _pad1: u32,
    // The states' level: ranks per block, blocks, time bins, and its grid.
    block: u32,
    blocks: u32,
    bins: u32,
    k0: i32,
    frac0: f32,
    ppx: f32,
    // Ticks per pixel, and per unit of the per-location tiles.
    per_px: f32,
    unit: f32,
    // The finest level's grid (the totals' and the lines').
    fine_bins: u32,
    fine_k0: i32,
    fine_frac0: f32,
    fine_ppx: f32,
    // The lines: ranks per block and blocks.
    line_block: u32,
    line_blocks: u32,
    _pad2: u32,
    _pad3: u32,
    // The per-location tiles' grid.
    tile_bins: u32,
    tile_k0: i32,
    tile_frac0: f32,
    tile_ppx: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
// The level's ticks: [block][state][bin], as (low, high) words.
@group(0) @binding(1) var<storage, read> level: array<vec2<u32>>;
// Every location's ticks per state and fine bin: [state][bin].
@group(0) @binding(2) var<storage, read> totals: array<vec2<u32>>;
// The per-location tiles: [location][state][bin], in units of `unit` ticks.
@group(0) @binding(3) var<storage, read> tiles: array<u32>;
// The lines through each (fine bin, line block): [bin][block].
@group(0) @binding(4) var<storage, read> line_counts: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> line_gradient: array<vec2<u32>>;
// [colour slot per state: states][per run: first rank, end rank, flags (1: drawn from its own
// tiles, 2: the summary track), first pixel row, pixel rows]
@group(0) @binding(6) var<storage, read> table: array<u32>;
// Coverage per (run, column, slot), in 2^-24 of a row's column (timeline_pixels' layout).
@group(0) @binding(7) var<storage, read_write> acc: array<u32>;
@group(0) @binding(8) var<storage, read_write> counts: array<u32>;
// Per pixel the 64-bit sum of the lines' direction weights, as (low, high) words.
@group(0) @binding(9) var<storage, read_write> sums: array<u32>;

const SLOTS: u32 = 8u;
const ONE: f32 = 16777216.0;
const OWN: u32 = 1u;
const SUMMARY: u32 = 2u;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn to_f32(v: vec2<u32>) -> f32 {
    return f32(v.y) * 4294967296.0 + f32(v.x);
}

fn run_word(run: u32, k: u32) -> u32 {
    return table[params.states + 5u * run + k];
}

// The share of rank block `b` (of `block` ranks, of `ranks`) inside ranks [lo, hi).
fn block_share(b: u32, block: u32, lo: u32, hi: u32) -> f32 {
    let a = b * block;
    let e = min(a + block, params.ranks);
    let inside = min(hi, e) - max(lo, a);
    return f32(inside) / f32(max(e - a, 1u));
}

@compute @workgroup_size(256)
fn pyramid_cover(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let run = i / params.width;
    let col = i % params.width;
    let lo = run_word(run, 0u);
    let hi = run_word(run, 1u);
    let flags = run_word(run, 2u);
    if (hi <= lo) { return; }
    var c: array<f32, 8>;
    for (var s = 0u; s < SLOTS; s++) { c[s] = 0.0; }
    var share = 1.0 / f32(hi - lo);
    if ((flags & SUMMARY) != 0u) {
        let a = params.fine_frac0 + f32(col) * params.fine_ppx;
        let b = a + params.fine_ppx;
        for (var r = i32(floor(a)); r < i32(ceil(b)); r++) {
            let k = params.fine_k0 + r;
            let wt = min(b, f32(r + 1)) - max(a, f32(r));
            if (k < 0 || k >= i32(params.fine_bins) || wt <= 0.0) { continue; }
            for (var s = 0u; s < params.states; s++) {
                let v = to_f32(totals[s * params.fine_bins + u32(k)]);
                if (v > 0.0) {
                    let sl = min(table[s], SLOTS - 1u);
                    c[sl] += v * wt / params.per_px;
                }
            }
        }
    } else if ((flags & OWN) != 0u) {
        share = 1.0;
        let a = params.tile_frac0 + f32(col) * params.tile_ppx;
        let b = a + params.tile_ppx;
        for (var s = 0u; s < params.states; s++) {
            let sl = min(table[s], SLOTS - 1u);
            let row = (lo * params.states + s) * params.tile_bins;
            for (var r = i32(floor(a)); r < i32(ceil(b)); r++) {
                let k = params.tile_k0 + r;
                let wt = min(b, f32(r + 1)) - max(a, f32(r));
                if (k < 0 || k >= i32(params.tile_bins) || wt <= 0.0) { continue; }
                let v = f32(tiles[row + u32(k)]) * params.unit;
                if (v > 0.0) {
                    c[sl] += v * wt / params.per_px;
                }
            }
        }
    } else {
        let a = params.frac0 + f32(col) * params.ppx;
        let b = a + params.ppx;
        for (var blk = lo / params.block; blk <= (hi - 1u) / params.block && blk < params.blocks; blk++) {
            let wb = block_share(blk, params.block, lo, hi);
            for (var r = i32(floor(a)); r < i32(ceil(b)); r++) {
                let k = params.k0 + r;
                let wt = min(b, f32(r + 1)) - max(a, f32(r));
                if (k < 0 || k >= i32(params.bins) || wt <= 0.0) { continue; }
                for (var s = 0u; s < params.states; s++) {
                    let v = to_f32(level[(blk * params.states + s) * params.bins + u32(k)]);
                    if (v > 0.0) {
                        let sl = min(table[s], SLOTS - 1u);
                        c[sl] += v * wb * wt / params.per_px;
                    }
                }
            }
        }
    }
    let out = (run * params.width + col) * SLOTS;
    for (var s = 0u; s < SLOTS; s++) {
        acc[out + s] = u32(min(c[s] * share * ONE + 0.5, 4294967040.0));
    }
}

@compute @workgroup_size(256)
fn pyramid_lines(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let run = i / params.width;
    let col = i % params.width;
    let lo = run_word(run, 0u);
    let hi = run_word(run, 1u);
    let flags = run_word(run, 2u);
    if (hi <= lo || (flags & SUMMARY) != 0u) { return; }
    var weight = 0.0;
    let last = min((hi - 1u) / params.line_block, params.line_blocks - 1u);
    for (var blk = lo / params.line_block; blk <= last; blk++) {
        weight += block_share(blk, params.line_block, lo, hi);
    }
    if (weight <= 0.0) { return; }
    var cc = 0.0;
    var gg = 0.0;
    let a = params.fine_frac0 + f32(col) * params.fine_ppx;
    let b = a + params.fine_ppx;
    for (var r = i32(floor(a)); r < i32(ceil(b)); r++) {
        let k = params.fine_k0 + r;
        let wt = min(b, f32(r + 1)) - max(a, f32(r));
        if (k < 0 || k >= i32(params.fine_bins) || wt <= 0.0) { continue; }
        for (var blk = lo / params.line_block; blk <= last; blk++) {
            let f = wt * block_share(blk, params.line_block, lo, hi) / weight;
            let cell = u32(k) * params.line_blocks + blk;
            cc += to_f32(line_counts[cell]) * f;
            gg += to_f32(line_gradient[cell]) * f;
        }
    }
    if (cc < 0.25) { return; }
    let whole = max(floor(cc + 0.5), 1.0);
    let sum = floor(gg / cc * whole + 0.5);
    let high = floor(sum / 4294967296.0);
    let count = u32(min(whole, 4294967040.0));
    let low = u32(sum - high * 4294967296.0);
    let first = run_word(run, 3u);
    let rows = run_word(run, 4u);
    for (var y = first; y < first + rows && y < params.height; y++) {
        let k = y * params.width + col;
        counts[k] = count;
        sums[2u * k] = low;
        sums[2u * k + 1u] = u32(high);
    }
}
