// Stage (b): line-density aggregation. Each segment is rasterised with Bresenham's integer
// algorithm (endpoints floored to pixels), adding 1 to the count and its weight to the 64-bit
// weight sum of every pixel it crosses inside the image.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    n: u32,
    width: u32,
    height: u32,
    has_weight: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// x0, y0, x1, y1 in pixels (y down).
@group(0) @binding(1) var<storage, read> segments: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> weights: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> sums: array<atomic<u32>>;

// Coordinates are clamped to this guard band before flooring, which bounds every walk to
// 2 * LIMIT steps (long loops stall software and real GPUs alike). A segment with an endpoint
// beyond it is distorted; layouts clip to the view before this stage. NaN maps to -LIMIT.
const LIMIT: f32 = 16384.0;

fn to_pixel(v: f32) -> i32 {
    if (v != v) { return i32(-LIMIT); }
    return i32(floor(clamp(v, -LIMIT, LIMIT)));
}

@compute @workgroup_size(256)
fn line_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    let s = segments[i];
    var x = to_pixel(s.x);
    var y = to_pixel(s.y);
    let x1 = to_pixel(s.z);
    let y1 = to_pixel(s.w);
    let w_px = i32(params.width);
    let h_px = i32(params.height);
    // Entirely on one outer side of the image: nothing to draw.
    if ((x < 0 && x1 < 0) || (y < 0 && y1 < 0) || (x >= w_px && x1 >= w_px) || (y >= h_px && y1 >= h_px)) {
        return;
    }
    var w = 1u;
    if (params.has_weight != 0u) { w = weights[i]; }
    let dx = abs(x1 - x);
    let dy = -abs(y1 - y);
    let sx = select(-1, 1, x < x1);
    let sy = select(-1, 1, y < y1);
    var err = dx + dy;
    loop {
        if (x >= 0 && y >= 0 && x < w_px && y < h_px) {
            let p = u32(y) * params.width + u32(x);
            atomicAdd(&counts[p], 1u);
            // Unweighted, the sums equal the counts: the host copies them, saving two atomics.
            if (params.has_weight != 0u) {
                let old = atomicAdd(&sums[2u * p], w);
                if (old > 0xffffffffu - w) {
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
