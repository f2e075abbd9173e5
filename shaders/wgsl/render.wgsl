// Instanced renderer: one instance per primitive (segment, rectangle, disc, glyph), drawn as a
// screen-aligned or segment-aligned quad whose fragment computes analytic coverage.
// CPU mirror: engine/src/render/cpu.rs (keep the coverage formulas in sync).
// Instance layout: engine/src/render/gpu_types.rs `Instance` (64 bytes).

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
    } else {
        p = mix(a, b, c);
    }
    var out: VsOut;
    out.position = vec4<f32>(p.x / globals.viewport.x * 2.0 - 1.0, 1.0 - p.y / globals.viewport.y * 2.0, 0.0, 1.0);
    out.a = a;
    out.b = b;
    out.uv_a = inst.uv_a;
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
    } else {
        let texel = vec2<i32>(in.uv_a + floor(p - in.a));
        cov = textureLoad(atlas, texel, 0).r;
    }
    let alpha = in.color.a * cov;
    // Premultiplied output: the blend state decides between "over" and additive mixing.
    return vec4<f32>(in.color.rgb * alpha, alpha);
}
