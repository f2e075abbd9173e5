// Stage (c): reductions of one column (min, max, sum, histogram), for u32 and f32 columns.
// CPU mirror: mirror.rs beside this file (keep the two in sync).
//
// u32: min and max by atomicMin/atomicMax, the sum exactly in 64 bits (low word, carry into high).
// f32: min and max exactly through an order-preserving map of the bits to u32; the sum as one
// partial per workgroup, reduced in a fixed tree order (the host adds the partials in f64).
// NaN values are ignored by every f32 reduction.

struct Params {
    n: u32,
    // reduce_f32: index of this chunk's first workgroup partial.
    partial_offset: u32,
    // histograms: bin count, and the lower bound (u32 bits or f32 bits).
    bins: u32,
    lo_bits: u32,
    // histogram_u32: bin width in value units; histogram_f32: bins / (hi - lo) as f32 bits.
    scale_bits: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> values_u32: array<u32>;
@group(0) @binding(2) var<storage, read> values_f32: array<f32>;
// reduce_u32: [min, max, sum_lo, sum_hi]; reduce_f32: [min key, max key].
@group(0) @binding(3) var<storage, read_write> acc: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> partials: array<f32>;
@group(0) @binding(5) var<storage, read_write> hist: array<atomic<u32>>;

var<workgroup> scratch: array<f32, 256>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// Order-preserving map of f32 bits onto u32 (negative values reversed below positive ones).
fn f32_key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x80000000u) != 0u) { return ~b; }
    return b | 0x80000000u;
}

// Each workgroup reduces its 256 values in workgroup memory first, then one invocation merges
// the result into `acc`: one global atomic per workgroup instead of one per value.
var<workgroup> wg_min: atomic<u32>;
var<workgroup> wg_max: atomic<u32>;
var<workgroup> wg_lo: atomic<u32>;
var<workgroup> wg_hi: atomic<u32>;

// Adds (lo, hi) into the 64-bit pair acc[2], acc[3].
fn add_u64(lo: u32, hi: u32) {
    let old = atomicAdd(&acc[2], lo);
    var carry = hi;
    if (old > 0xffffffffu - lo) { carry += 1u; }
    if (carry != 0u) { atomicAdd(&acc[3], carry); }
}

@compute @workgroup_size(256)
fn reduce_u32(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if (lid == 0u) {
        atomicStore(&wg_min, 0xffffffffu);
        atomicStore(&wg_max, 0u);
        atomicStore(&wg_lo, 0u);
        atomicStore(&wg_hi, 0u);
    }
    workgroupBarrier();
    let i = index(gid, nwg);
    if (i < params.n) {
        let v = values_u32[i];
        atomicMin(&wg_min, v);
        atomicMax(&wg_max, v);
        let old = atomicAdd(&wg_lo, v);
        if (old > 0xffffffffu - v) {
            atomicAdd(&wg_hi, 1u);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        atomicMin(&acc[0], atomicLoad(&wg_min));
        atomicMax(&acc[1], atomicLoad(&wg_max));
        add_u64(atomicLoad(&wg_lo), atomicLoad(&wg_hi));
    }
}

@compute @workgroup_size(256)
fn reduce_f32(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = index(gid, nwg);
    var v = 0.0;
    if (i < params.n) {
        let x = values_f32[i];
        if (x == x) {
            v = x;
            let k = f32_key(x);
            atomicMin(&acc[0], k);
            atomicMax(&acc[1], k);
        }
    }
    scratch[lid] = v;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride = stride >> 1u) {
        if (lid < stride) {
            scratch[lid] = scratch[lid] + scratch[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        partials[params.partial_offset + wid.x + wid.y * nwg.x] = scratch[0];
    }
}

// Histograms of up to LOCAL_BINS bins count in workgroup memory and merge once per workgroup;
// larger ones count straight into `hist`.
const LOCAL_BINS: u32 = 1024u;
var<workgroup> wg_hist: array<atomic<u32>, 1024>;

fn histogram_begin(lid: u32) {
    if (params.bins <= LOCAL_BINS) {
        for (var b = lid; b < params.bins; b += 256u) {
            atomicStore(&wg_hist[b], 0u);
        }
    }
    workgroupBarrier();
}

fn histogram_add(bin: u32) {
    if (params.bins <= LOCAL_BINS) {
        atomicAdd(&wg_hist[bin], 1u);
    } else {
        atomicAdd(&hist[bin], 1u);
    }
}

fn histogram_end(lid: u32) {
    workgroupBarrier();
    if (params.bins <= LOCAL_BINS) {
        for (var b = lid; b < params.bins; b += 256u) {
            let c = atomicLoad(&wg_hist[b]);
            if (c != 0u) { atomicAdd(&hist[b], c); }
        }
    }
}

fn histogram_u32_bin(i: u32) -> u32 {
    if (i >= params.n) { return 0xffffffffu; }
    let v = values_u32[i];
    if (v < params.lo_bits) { return 0xffffffffu; }
    let bin = (v - params.lo_bits) / params.scale_bits;
    if (bin >= params.bins) { return 0xffffffffu; }
    return bin;
}

fn histogram_f32_bin(i: u32) -> u32 {
    if (i >= params.n) { return 0xffffffffu; }
    let v = values_f32[i];
    let lo = bitcast<f32>(params.lo_bits);
    let scale = bitcast<f32>(params.scale_bits);
    // NaN fails this test, so it is skipped.
    if (!(v >= lo)) { return 0xffffffffu; }
    let t = floor((v - lo) * scale);
    if (t >= f32(params.bins)) { return 0xffffffffu; }
    return u32(t);
}

@compute @workgroup_size(256)
fn histogram_u32(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    histogram_begin(lid);
    let bin = histogram_u32_bin(index(gid, nwg));
    if (bin != 0xffffffffu) { histogram_add(bin); }
    histogram_end(lid);
}

@compute @workgroup_size(256)
fn histogram_f32(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    histogram_begin(lid);
    let bin = histogram_f32_bin(index(gid, nwg));
    if (bin != 0xffffffffu) { histogram_add(bin); }
    histogram_end(lid);
}
