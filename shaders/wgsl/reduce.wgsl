// Stage (c): reductions of one column (min, max, sum, histogram), for u32 and f32 columns.
// CPU mirror: engine/src/stages/cpu/reduce.rs (keep the two in sync).
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

@compute @workgroup_size(256)
fn reduce_u32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let v = values_u32[i];
    atomicMin(&acc[0], v);
    atomicMax(&acc[1], v);
    let old = atomicAdd(&acc[2], v);
    if (old > 0xffffffffu - v) {
        atomicAdd(&acc[3], 1u);
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

@compute @workgroup_size(256)
fn histogram_u32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let v = values_u32[i];
    if (v < params.lo_bits) { return; }
    let bin = (v - params.lo_bits) / params.scale_bits;
    if (bin >= params.bins) { return; }
    atomicAdd(&hist[bin], 1u);
}

@compute @workgroup_size(256)
fn histogram_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let v = values_f32[i];
    let lo = bitcast<f32>(params.lo_bits);
    let scale = bitcast<f32>(params.scale_bits);
    // NaN fails this test, so it is skipped.
    if (!(v >= lo)) { return; }
    let t = floor((v - lo) * scale);
    if (t >= f32(params.bins)) { return; }
    atomicAdd(&hist[u32(t)], 1u);
}
