// Instanced renderer: one instance per primitive (segment, rectangle, disc, glyph, triangle of a
// stroked path), drawn as a screen-aligned or segment-aligned quad whose fragment computes
// analytic coverage (triangles: the share of 16 sample points inside).
// CPU mirror: render/src/cpu.rs (keep the coverage formulas in sync).
// Instance layout: render/src/lib.rs `Instance` (64 bytes).

struct Globals {
    viewport: vec2<f32>,  // target size in pixels
    scale: f32,           // scene -> screen zoom
    _pad0: f32,
    offset: vec2<f32>,    // scene -> screen translation (pixels)
    origin: vec2<f32>,    // top-left of this target within the whole picture (tiles)
}

@group(0) @binding(0) var<uniform> globals: Globals;
@group(0) @binding(1) var atlas: texture_2d<f32>;

const KIND_SEGMENT: u32 = 0u;
const KIND_RECT: u32 = 1u;
const KIND_DISC: u32 = 2u;
const KIND_GLYPH: u32 = 3u;
const KIND_TRIANGLE: u32 = 4u;
const KIND_QUAD: u32 = 5u;
const SAMPLES: u32 = 16u;
// Set on instances placed in screen pixels (legends, labels): not moved by pan and zoom.
const FLAG_SCREEN: u32 = 256u;

struct InstanceIn {
    @location(0) a: vec2<f32>,
    @location(1) b: vec2<f32>,
    @location(2) uv_a: vec2<f32>,
    @location(3) uv_b: vec2<f32>,
    @location(4) color: vec4<f32>,
    @location(5) width: f32,
    @location(6) kind: u32,
}

struct VsOut {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) a: vec2<f32>,
    @location(1) @interpolate(flat) b: vec2<f32>,
    @location(2) @interpolate(flat) uv_a: vec2<f32>,
    @location(3) @interpolate(flat) color: vec4<f32>,
    @location(4) @interpolate(flat) width: f32,
    @location(5) @interpolate(flat) kind: u32,
    // Quadrilateral: the fourth corner (screen); triangle: the third again.
    @location(6) @interpolate(flat) d: vec2<f32>,
}

fn to_screen(p: vec2<f32>, flags: u32) -> vec2<f32> {
    if ((flags & FLAG_SCREEN) != 0u) { return p - globals.origin; }
    return p * globals.scale + globals.offset - globals.origin;
}

@vertex
fn vs_main(@builtin(vertex_index) vid: u32, inst: InstanceIn) -> VsOut {
    // Two triangles: corners (0,0) (1,0) (0,1) (0,1) (1,0) (1,1).
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(0.0, 1.0),
        vec2<f32>(0.0, 1.0), vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 1.0),
    );
    let c = corners[vid];
    let kind = inst.kind & 255u;
    let a = to_screen(inst.a, inst.kind);
    var b = inst.b;
    if (kind != KIND_DISC) { b = to_screen(inst.b, inst.kind); }
    var p: vec2<f32>;
    if (kind == KIND_SEGMENT) {
        let r = max(inst.width, 1.0) * 0.5 + 1.0;
        let d = b - a;
        let len = length(d);
        var dir = vec2<f32>(1.0, 0.0);
        if (len > 0.0) { dir = d / len; }
        let n = vec2<f32>(-dir.y, dir.x);
        let along = mix(a - dir * r, b + dir * r, c.x);
        p = along + n * r * (c.y * 2.0 - 1.0);
    } else if (kind == KIND_DISC) {
        let r = inst.width + 1.0;
        p = a + (c * 2.0 - 1.0) * r;
    } else if (kind == KIND_RECT) {
        p = mix(a - 1.0, b + 1.0, c);
    } else if (kind == KIND_TRIANGLE || kind == KIND_QUAD) {
        let t = to_screen(inst.uv_a, inst.kind);
        var u = t;
        if (kind == KIND_QUAD) { u = to_screen(inst.uv_b, inst.kind); }
        p = mix(min(min(a, b), min(t, u)) - 1.0, max(max(a, b), max(t, u)) + 1.0, c);
    } else {
        p = mix(a, b, c);
    }
    var out: VsOut;
    out.position = vec4<f32>(p.x / globals.viewport.x * 2.0 - 1.0, 1.0 - p.y / globals.viewport.y * 2.0, 0.0, 1.0);
    out.a = a;
    out.b = b;
    out.uv_a = inst.uv_a;
    out.d = vec2<f32>(0.0, 0.0);
    if (kind == KIND_TRIANGLE || kind == KIND_QUAD) {
        out.uv_a = to_screen(inst.uv_a, inst.kind);
        out.d = out.uv_a;
    }
    if (kind == KIND_QUAD) { out.d = to_screen(inst.uv_b, inst.kind); }
    out.color = inst.color;
    out.width = inst.width;
    out.kind = kind;
    return out;
}

fn segment_coverage(p: vec2<f32>, a: vec2<f32>, b: vec2<f32>, width: f32) -> f32 {
    let pa = p - a;
    let ba = b - a;
    let len2 = dot(ba, ba);
    var h = 0.0;
    if (len2 > 0.0) { h = clamp(dot(pa, ba) / len2, 0.0, 1.0); }
    let w = max(width, 1.0);
    let d = length(pa - ba * h) - w * 0.5;
    // Lines thinner than a pixel keep one pixel of coverage and fade instead.
    return clamp(0.5 - d, 0.0, 1.0) * (width / w);
}

fn rect_coverage(p: vec2<f32>, a: vec2<f32>, b: vec2<f32>) -> f32 {
    let cx = clamp(min(p.x - a.x, b.x - p.x) + 0.5, 0.0, 1.0);
    let cy = clamp(min(p.y - a.y, b.y - p.y) + 0.5, 0.0, 1.0);
    return cx * cy;
}

fn disc_coverage(p: vec2<f32>, c: vec2<f32>, r: f32) -> f32 {
    return clamp(r - length(p - c) + 0.5, 0.0, 1.0);
}

// Bit k set where sample k of the pixel with top-left corner `base` is inside the polygon
// (signed area of sign s) by its edge u -> v. The edge is measured from its lexicographically
// smaller end, so the two polygons sharing it compute the very same values; a sample exactly on
// it goes to the polygon on its positive side. Samples: an n-rooks pattern, sample k at
// ((k + 0.5) / 16, ((7k mod 16) + 0.5) / 16) from the corner.
// CPU mirror: `Edge::mask` in render/src/cpu.rs.
fn edge_mask(base: vec2<f32>, u: vec2<f32>, v: vec2<f32>, s: f32) -> u32 {
    var lo = u;
    var hi = v;
    var f = s;
    if (v.x < u.x || (v.x == u.x && v.y < u.y)) {
        lo = v;
        hi = u;
        f = -s;
    }
    let d = hi - lo;
    let e0 = d.x * (base.y - lo.y) - d.y * (base.x - lo.x);
    var m = 0u;
    for (var k = 0u; k < SAMPLES; k = k + 1u) {
        let o = vec2<f32>(f32(k) + 0.5, f32((k * 7u) % SAMPLES) + 0.5) / f32(SAMPLES);
        let e = e0 + (d.x * o.y - d.y * o.x);
        if (f * e > 0.0 || (e == 0.0 && f > 0.0)) { m = m | (1u << k); }
    }
    return m;
}

// Share of the pixel's samples inside the convex polygon of the first n (3 or 4) corners.
// CPU mirror: `polygon_coverage` in render/src/cpu.rs.
fn polygon_coverage(p: vec2<f32>, corners: array<vec2<f32>, 4>, n: u32) -> f32 {
    // A variable, so that it can be indexed at run time.
    var c = corners;
    var area = 0.0;
    for (var i = 0u; i < n; i = i + 1u) {
        let j = (i + 1u) % n;
        area = area + (c[i].x * c[j].y - c[j].x * c[i].y);
    }
    if (area == 0.0) { return 0.0; }
    let s = sign(area);
    let base = floor(p);
    var inside = 0xffffu;
    for (var i = 0u; i < n; i = i + 1u) {
        inside = inside & edge_mask(base, c[i], c[(i + 1u) % n], s);
    }
    return f32(countOneBits(inside)) / f32(SAMPLES);
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let p = in.position.xy;
    var cov = 0.0;
    if (in.kind == KIND_SEGMENT) {
        cov = segment_coverage(p, in.a, in.b, in.width);
    } else if (in.kind == KIND_RECT) {
        cov = rect_coverage(p, in.a, in.b);
    } else if (in.kind == KIND_DISC) {
        cov = disc_coverage(p, in.a, in.width);
    } else if (in.kind == KIND_TRIANGLE) {
        cov = polygon_coverage(p, array<vec2<f32>, 4>(in.a, in.b, in.uv_a, in.d), 3u);
    } else if (in.kind == KIND_QUAD) {
        cov = polygon_coverage(p, array<vec2<f32>, 4>(in.a, in.b, in.uv_a, in.d), 4u);
    } else {
        let texel = vec2<i32>(in.uv_a + floor(p - in.a));
        cov = textureLoad(atlas, texel, 0).r;
    }
    let alpha = in.color.a * cov;
    // Premultiplied output: the blend state decides between "over" and additive mixing.
    return vec4<f32>(in.color.rgb * alpha, alpha);
}
