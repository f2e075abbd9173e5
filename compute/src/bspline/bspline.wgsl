// Hierarchical edge bundling's curve stage (Holten 2006): each edge's control polygon (the path
// through a hierarchy) is straightened by the bundling strength beta and evaluated as a clamped
// uniform B-spline of degree min(degree, points - 1) at `samples` parameters, endpoints exact.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    n: u32,          // edges in this chunk
    samples: u32,    // output points per edge, 2..=32
    beta: f32,       // bundling strength: 1 follows the hierarchy, 0 is the straight line
    degree: u32,     // 1..=3 (Brendel et al. uses 2, Holten 3)
}

const MAX_CTRL: u32 = 64u;

@group(0) @binding(0) var<uniform> params: Params;
// Control points of every edge of the chunk, back to back.
@group(0) @binding(1) var<storage, read> ctrl: array<vec2<f32>>;
// Edge e's control points are ctrl[offsets[e] .. offsets[e + 1]] (at least 2, at most MAX_CTRL).
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> points: array<vec2<f32>>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// Knot i of the clamped uniform knot vector for m control points and degree p.
fn knot(i: i32, m: i32, p: i32) -> f32 {
    return f32(clamp(i - p, 0, m - p));
}

@compute @workgroup_size(256)
fn bspline_eval(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(gid, nwg);
    if (e >= params.n) { return; }
    let first = offsets[e];
    let m = i32(min(offsets[e + 1u] - first, MAX_CTRL));
    let s = params.samples;
    let out = e * s;
    let a = ctrl[first];
    let b = ctrl[first + u32(m) - 1u];
    if (m < 2) {
        for (var j = 0u; j < s; j++) { points[out + j] = a; }
        return;
    }
    // Straightened control points, Holten's Eq. 1.
    var c: array<vec2<f32>, 64>;
    for (var i = 0; i < m; i++) {
        let t = f32(i) / f32(m - 1);
        c[i] = params.beta * ctrl[first + u32(i)] + (1.0 - params.beta) * (a + (b - a) * t);
    }
    let p = min(i32(params.degree), m - 1);
    let top = f32(m - p);
    points[out] = a;
    points[out + s - 1u] = b;
    for (var j = 1u; j + 1u < s; j++) {
        let u = top * f32(j) / f32(s - 1u);
        // Knot span k with knot(k) <= u < knot(k + 1), k in [p, m - 1].
        let k = clamp(i32(floor(u)) + p, p, m - 1);
        var d: array<vec2<f32>, 4>;
        for (var q = 0; q <= p; q++) { d[q] = c[q + k - p]; }
        for (var r = 1; r <= p; r++) {
            for (var q = p; q >= r; q--) {
                let lo = knot(q + k - p, m, p);
                let hi = knot(q + 1 + k - r, m, p);
                var alpha = 0.0;
                if (hi > lo) { alpha = (u - lo) / (hi - lo); }
                d[q] = (1.0 - alpha) * d[q - 1] + alpha * d[q];
            }
        }
        points[out + j] = d[p];
    }
}
