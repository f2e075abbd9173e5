// Image-space, density-based edge bundling (KDE edge bundling, Hurter et al. 2012; its GPU form,
// CUBu, van der Zwan et al. 2016). Every edge is a polyline of `samples` points in the unit
// square; one iteration is: splat every point into a density grid, blur it with a kernel of the
// current radius, take the density gradient at every cell centre, move each inner point along the
// (bilinearly interpolated) gradient, smooth, and resample by arc length. Endpoints never move.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    n: u32,            // edges in this chunk (kde_init, kde_splat: points = n * samples)
    samples: u32,      // points per edge, 2..=MAX_SAMPLES
    grid: u32,         // density grid side in cells
    radius: u32,       // kernel radius in cells
    step: f32,         // distance a point moves per iteration, in unit-square units
    smoothing: f32,    // Laplacian smoothing weight, 0..1
    splat_next: u32,   // kde_advect: 1 to splat the new points for the next iteration
    _pad1: u32,
}

const MAX_SAMPLES: u32 = 32u;

@group(0) @binding(0) var<uniform> params: Params;
// kde_init: x0, y0, x1, y1 per edge.
@group(0) @binding(1) var<storage, read> endpoints: array<vec4<f32>>;
// Polylines: `samples` points per edge.
@group(0) @binding(2) var<storage, read_write> points: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> weights: array<u32>;
// Splatted weight per cell, two words (low, high).
@group(0) @binding(4) var<storage, read_write> splat: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> blur_in: array<f32>;
@group(0) @binding(6) var<storage, read_write> blur_out: array<f32>;
// Density gradient direction per cell (pack2x16snorm), read by kde_advect.
@group(0) @binding(7) var<storage, read> gradient: array<u32>;
@group(0) @binding(8) var<storage, read_write> gradient_out: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn kde_init(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(gid, nwg);
    if (e >= params.n) { return; }
    let ep = endpoints[e];
    let last = f32(params.samples - 1u);
    for (var k = 0u; k + 1u < params.samples; k++) {
        let t = f32(k) / last;
        points[e * params.samples + k] = vec2<f32>(ep.x + (ep.z - ep.x) * t, ep.y + (ep.w - ep.y) * t);
    }
    // The end point exactly, not by interpolation.
    points[e * params.samples + params.samples - 1u] = ep.zw;
}

fn cell_of(p: vec2<f32>) -> vec2<u32> {
    let g = f32(params.grid);
    let c = clamp(floor(p * g), vec2<f32>(0.0), vec2<f32>(g - 1.0));
    return vec2<u32>(c);
}

fn splat_point(p: vec2<f32>, w: u32) {
    if (p.x != p.x || p.y != p.y) { return; }
    let c = cell_of(p);
    let cell = c.y * params.grid + c.x;
    let old = atomicAdd(&splat[2u * cell], w);
    if (old > 0xffffffffu - w) {
        atomicAdd(&splat[2u * cell + 1u], 1u);
    }
}

// The first iteration's splat; later ones happen in kde_advect.
@compute @workgroup_size(256)
fn kde_splat(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n * params.samples) { return; }
    splat_point(points[i], weights[i / params.samples]);
}

// Epanechnikov-shaped kernel weight at offset d (cells) for radius r.
fn kernel(d: i32, r: u32) -> f32 {
    let x = f32(d) / (f32(r) + 1.0);
    return 1.0 - x * x;
}

// Horizontal pass: from the splatted u64 weights to f32.
@compute @workgroup_size(256)
fn kde_blur_x(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    let g = params.grid;
    if (i >= g * g) { return; }
    let x = i32(i % g);
    let row = i - u32(x);
    let r = i32(params.radius);
    var acc = 0.0;
    for (var d = -r; d <= r; d++) {
        let xx = x + d;
        if (xx >= 0 && xx < i32(g)) {
            let c = row + u32(xx);
            let v = f32(atomicLoad(&splat[2u * c])) + f32(atomicLoad(&splat[2u * c + 1u])) * 4294967296.0;
            acc += kernel(d, params.radius) * v;
        }
    }
    blur_out[i] = acc;
}

// Vertical pass: f32 to f32.
@compute @workgroup_size(256)
fn kde_blur_y(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    let g = params.grid;
    if (i >= g * g) { return; }
    let x = i % g;
    let y = i32(i / g);
    let r = i32(params.radius);
    var acc = 0.0;
    for (var d = -r; d <= r; d++) {
        let yy = y + d;
        if (yy >= 0 && yy < i32(g)) {
            acc += kernel(d, params.radius) * blur_in[u32(yy) * g + x];
        }
    }
    blur_out[i] = acc;
}

// Direction of the density gradient at each cell centre (unit length, or zero where the density
// is flat; packed as two 16-bit snorms, which halves the grid that advection reads at random), by central differences (one-sided at the border) of the blurred density in blur_in.
// Advection interpolates these directions bilinearly: between cells that point opposite ways, at
// the crest of a bundle, the interpolated vector is short, so points settle instead of jittering.
@compute @workgroup_size(256)
fn kde_gradient(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    let g = params.grid;
    if (i >= g * g) { return; }
    let x = i % g;
    let y = i / g;
    let gx = blur_in[y * g + min(x + 1u, g - 1u)] - blur_in[y * g + max(x, 1u) - 1u];
    let gy = blur_in[min(y + 1u, g - 1u) * g + x] - blur_in[(max(y, 1u) - 1u) * g + x];
    let len = sqrt(gx * gx + gy * gy);
    var dir = vec2<f32>(0.0);
    if (len > 0.0) { dir = vec2<f32>(gx / len, gy / len); }
    gradient_out[i] = pack2x16snorm(dir);
}

// The two signed 16-bit halves of a packed direction, as floats (exact).
fn halves(w: u32) -> vec2<f32> {
    return vec2<f32>(f32(bitcast<i32>(w << 16u) >> 16u), f32(bitcast<i32>(w) >> 16u));
}

// Gradient direction at a point, bilinear between cell centres, clamped at the border. The packed
// directions are interpolated as integers and scaled once (pack2x16snorm never writes -32768, so
// this is unpack2x16snorm of each corner, mixed, up to rounding).
fn sample_gradient(p: vec2<f32>) -> vec2<f32> {
    let g = f32(params.grid);
    let q = clamp(p * g - 0.5, vec2<f32>(0.0), vec2<f32>(g - 1.0));
    let c0 = vec2<u32>(floor(q));
    let c1 = min(c0 + 1u, vec2<u32>(params.grid - 1u));
    let f = q - floor(q);
    let gi = params.grid;
    let a = halves(gradient[c0.y * gi + c0.x]);
    let b = halves(gradient[c0.y * gi + c1.x]);
    let c = halves(gradient[c1.y * gi + c0.x]);
    let d = halves(gradient[c1.y * gi + c1.x]);
    return mix(mix(a, b, f.x), mix(c, d, f.x), f.y) * (1.0 / 32767.0);
}

@compute @workgroup_size(256)
fn kde_advect(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(gid, nwg);
    if (e >= params.n) { return; }
    let s = params.samples;
    let base = e * s;
    var p: array<vec2<f32>, 32>;
    for (var k = 0u; k < s; k++) {
        p[k] = points[base + k];
    }
    // Move inner points up the density gradient by at most `step`.
    for (var k = 1u; k + 1u < s; k++) {
        let q = p[k];
        p[k] = q + sample_gradient(q) * params.step;
    }
    // Laplacian smoothing (from a copy, so the order of points does not matter).
    var sm: array<vec2<f32>, 32>;
    sm[0] = p[0];
    sm[s - 1u] = p[s - 1u];
    for (var k = 1u; k + 1u < s; k++) {
        sm[k] = p[k] * (1.0 - params.smoothing) + (p[k - 1u] + p[k + 1u]) * (0.5 * params.smoothing);
    }
    // Segment lengths once; resample at equal arc length, endpoints exact.
    var seg_lens: array<f32, 32>;
    var total = 0.0;
    for (var k = 1u; k < s; k++) {
        seg_lens[k] = distance(sm[k - 1u], sm[k]);
        total += seg_lens[k];
    }
    points[base] = sm[0];
    points[base + s - 1u] = sm[s - 1u];
    let spacing = total / f32(s - 1u);
    var seg = 1u;
    var walked = 0.0;
    for (var j = 1u; j + 1u < s; j++) {
        let target_len = spacing * f32(j);
        while (seg + 1u < s && walked + seg_lens[seg] < target_len) {
            walked += seg_lens[seg];
            seg += 1u;
        }
        let seg_len = seg_lens[seg];
        var t = 0.0;
        if (seg_len > 0.0) { t = clamp((target_len - walked) / seg_len, 0.0, 1.0); }
        points[base + j] = mix(sm[seg - 1u], sm[seg], t);
    }
    // The next iteration's density, from the new points (saves reading them again).
    if (params.splat_next != 0u) {
        let w = weights[e];
        for (var k = 0u; k < s; k++) {
            splat_point(points[base + k], w);
        }
    }
}
