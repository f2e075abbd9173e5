// Curves drawn as a density where their pieces are kept: per piece of a curve, the ink its
// stroke would lay on each pixel it crosses (the curve's opacity times width times the piece's
// length over the pixels it walks, or its `-ln(1 - a)` where strokes blend over one another) and
// that ink times the curve's value there, walked with Bresenham's integer algorithm into two
// 64-bit sums per pixel (`curve_pieces`); then every pixel coloured from its ink's mean value
// through a colour table, straight RGBA8 rows for the renderer (`curve_compose`). The pieces and
// their segments stay on the device, and the curves' values while they stay the same; a window
// sends each curve's opacity.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    n: u32,
    width: u32,
    height: u32,
    // 0: strokes blended over one another, 1: added.
    additive: u32,
    // Samples of a curve less one (a piece's place along it over this is its share).
    last: f32,
    stride: u32,
    table: u32,
    curves: u32,
    background: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
// x0, y0, x1, y1 in pixels (y down), pixel centres.
@group(0) @binding(1) var<storage, read> segments: array<vec4<f32>>;
// Per piece: its curve, its length (f32 bits), the pixels it walks, its place along the curve
// (samples, f32 bits).
@group(0) @binding(2) var<storage, read> pieces: array<vec4<u32>>;
// Per curve: its opacity times width (0: not drawn).
@group(0) @binding(3) var<storage, read> alphas: array<f32>;
@group(0) @binding(4) var<storage, read_write> ink: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> tint: array<atomic<u32>>;
// The colour map sampled at `params.table` points from 0 to 1: rgb and 1.
@group(0) @binding(6) var<storage, read> table: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> out: array<u32>;
// Per curve: its value at its start and at its end.
@group(0) @binding(8) var<storage, read> values: array<vec2<f32>>;

// Fixed-point scale of the weights (the sums are exact integers).
const INK_SCALE: f32 = 1048576.0;
// See `LIMIT` in line_density.wgsl: the guard band bounding every walk.
const LIMIT: f32 = 16384.0;

fn to_pixel(v: f32) -> i32 {
    if (v != v) { return i32(-LIMIT); }
    return i32(floor(clamp(v, -LIMIT, LIMIT)));
}

// Adds w to pixel p's 64-bit sums of ink and of tint (low word first).
fn add_ink(p: u32, w: u32) {
    let old = atomicAdd(&ink[2u * p], w);
    if (old > 0xffffffffu - w) {
        atomicAdd(&ink[2u * p + 1u], 1u);
    }
}

fn add_tint(p: u32, w: u32) {
    let old = atomicAdd(&tint[2u * p], w);
    if (old > 0xffffffffu - w) {
        atomicAdd(&tint[2u * p + 1u], 1u);
    }
}

fn weight_of(v: f32) -> u32 {
    return u32(min(floor(v + 0.5), 4294967040.0));
}

// One invocation per piece: its two weights, and its walk where it lays any ink.
@compute @workgroup_size(256)
fn curve_pieces(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    let piece = pieces[i];
    if (piece.x >= params.curves) { return; }
    let pixels = max(piece.z, 1u);
    var per_pixel = alphas[piece.x] * bitcast<f32>(piece.y) / f32(pixels);
    if (params.additive == 0u) {
        per_pixel = -log(1.0 - min(per_pixel, 0.95));
    }
    let weight = floor(per_pixel * INK_SCALE + 0.5);
    if (!(weight >= 1.0)) { return; }
    let share = bitcast<f32>(piece.w) / params.last;
    let ends = values[piece.x];
    let value = clamp(ends.x + (ends.y - ends.x) * share, 0.0, 1.0);
    let a = weight_of(weight);
    let b = weight_of(weight * value);
    let s = segments[i];
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
            add_ink(p, a);
            add_tint(p, b);
        }
        if (x == x1 && y == y1) { break; }
        let e2 = 2 * err;
        if (e2 >= dy) { err += dy; x += sx; }
        if (e2 <= dx) { err += dx; y += sy; }
    }
}

fn ink_at(p: u32) -> f32 {
    return f32(atomicLoad(&ink[2u * p + 1u])) * 4294967296.0 + f32(atomicLoad(&ink[2u * p]));
}

fn tint_at(p: u32) -> f32 {
    return f32(atomicLoad(&tint[2u * p + 1u])) * 4294967296.0 + f32(atomicLoad(&tint[2u * p]));
}

fn unorm8(v: f32) -> u32 {
    return u32(clamp(v, 0.0, 1.0) * 255.0 + 0.5);
}

// One invocation per pixel: the colour of its ink's mean value, added to the background or
// covering `1 - exp(-ink)` of it.
@compute @workgroup_size(256)
fn curve_compose(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 256u;
    if (k >= params.width * params.height) { return; }
    let x = k % params.width;
    let y = k / params.width;
    let i = ink_at(k);
    var packed = 0u;
    if (i > 0.0) {
        let amount = i / INK_SCALE;
        let t = clamp(tint_at(k) / i, 0.0, 1.0) * f32(params.table - 1u);
        let lo = min(u32(floor(t)), params.table - 1u);
        let hi = min(lo + 1u, params.table - 1u);
        let c = mix(table[lo].xyz, table[hi].xyz, t - f32(lo));
        if (params.additive != 0u) {
            let bg = params.background.xyz;
            packed = unorm8(bg.x + c.x * amount) | (unorm8(bg.y + c.y * amount) << 8u)
                | (unorm8(bg.z + c.z * amount) << 16u) | (255u << 24u);
        } else {
            packed = unorm8(c.x) | (unorm8(c.y) << 8u) | (unorm8(c.z) << 16u) | (unorm8(1.0 - exp(-amount)) << 24u);
        }
    }
    out[y * params.stride + x] = packed;
}
