// Stage (a): heatmap binning. Each element (a message, a link event) maps to one cell of a
// rows x cols grid; the cell's count and 64-bit weight sum are incremented atomically.
// CPU mirror: mirror.rs beside this file (keep the two in sync).
//
// An axis key is either an id (one u32 word per element, used as is) or a time (two u32 words
// per element, the low and high halves of a u64 tick count), binned exactly in integers:
//   bin = u32((t - t0) >> shift) / width,
// skipped when t < t0, when (t - t0) >> shift does not fit in 32 bits, or when bin >= extent;
// or a coordinate (one f32 word per element), binned as Datashader's canvas maps a point:
//   f = (v - lo) * scale, bin = min(u32(f), extent - 1) where 0 <= f <= extent,
// skipped elsewhere (and where v is NaN). lo and scale travel as the bits of t0_lo and t0_hi.

struct Params {
    n: u32,            // elements in this chunk
    cols: u32,         // x extent
    rows: u32,         // y extent
    has_weight: u32,   // 0: every element weighs 1
    x_mode: u32,       // 0 id, 1 time, 2 coordinate
    x_t0_lo: u32,
    x_t0_hi: u32,
    x_shift: u32,
    x_width: u32,
    y_mode: u32,
    y_t0_lo: u32,
    y_t0_hi: u32,
    y_shift: u32,
    y_width: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x_keys: array<u32>;
@group(0) @binding(2) var<storage, read> y_keys: array<u32>;
@group(0) @binding(3) var<storage, read> weights: array<u32>;
@group(0) @binding(4) var<storage, read_write> counts: array<atomic<u32>>;
// Two words per cell: low, high (the little-endian layout of a u64).
@group(0) @binding(5) var<storage, read_write> sums: array<atomic<u32>>;

const INVALID: u32 = 0xffffffffu;

// (t - t0) >> shift as u32, or INVALID when t < t0 or the result needs more than 32 bits.
fn time_key(lo: u32, hi: u32, t0_lo: u32, t0_hi: u32, shift: u32, width: u32) -> u32 {
    if (hi < t0_hi || (hi == t0_hi && lo < t0_lo)) {
        return INVALID;
    }
    let borrow = select(0u, 1u, lo < t0_lo);
    let r_lo = lo - t0_lo;
    let r_hi = hi - t0_hi - borrow;
    var q: u32;
    if (shift == 0u) {
        if (r_hi != 0u) { return INVALID; }
        q = r_lo;
    } else if (shift < 32u) {
        if ((r_hi >> shift) != 0u) { return INVALID; }
        q = (r_lo >> shift) | (r_hi << (32u - shift));
    } else {
        q = r_hi >> (shift - 32u);
    }
    return q / width;
}

// The bin of coordinate `v`, or INVALID outside [lo, lo + extent / scale].
fn scaled_key(v: f32, lo: f32, scale: f32, extent: u32) -> u32 {
    let f = (v - lo) * scale;
    if (!(f >= 0.0 && f <= f32(extent))) { return INVALID; }
    return min(u32(f), extent - 1u);
}

fn axis_key(mode: u32, keys_is_x: bool, i: u32) -> u32 {
    if (keys_is_x) {
        if (mode == 0u) { return x_keys[i]; }
        if (mode == 2u) {
            return scaled_key(bitcast<f32>(x_keys[i]), bitcast<f32>(params.x_t0_lo), bitcast<f32>(params.x_t0_hi), params.cols);
        }
        return time_key(x_keys[2u * i], x_keys[2u * i + 1u], params.x_t0_lo, params.x_t0_hi, params.x_shift, params.x_width);
    }
    if (mode == 0u) { return y_keys[i]; }
    if (mode == 2u) {
        return scaled_key(bitcast<f32>(y_keys[i]), bitcast<f32>(params.y_t0_lo), bitcast<f32>(params.y_t0_hi), params.rows);
    }
    return time_key(y_keys[2u * i], y_keys[2u * i + 1u], params.y_t0_lo, params.y_t0_hi, params.y_shift, params.y_width);
}

@compute @workgroup_size(256)
fn bin_heatmap(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    let x = axis_key(params.x_mode, true, i);
    let y = axis_key(params.y_mode, false, i);
    if (x >= params.cols || y >= params.rows) { return; }
    let cell = y * params.cols + x;
    atomicAdd(&counts[cell], 1u);
    // Unweighted, the sums are the counts: the host takes them from the counts.
    if (params.has_weight == 0u) { return; }
    let w = weights[i];
    let old = atomicAdd(&sums[2u * cell], w);
    if (old > 0xffffffffu - w) {
        atomicAdd(&sums[2u * cell + 1u], 1u);
    }
}
