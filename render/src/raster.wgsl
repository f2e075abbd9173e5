// Raster layer: a grid of cells drawn as one quad; each fragment finds its cell and shades it.
// Colour grids hold straight-alpha RGBA8; value grids hold f32 values, tone-mapped here (linear,
// log, histogram-equalised through 256 quantiles) and looked up in a 256-entry colour table.
// CPU mirror: render/src/raster.rs (`cell_at`, `shade_cell`, `tone_of`, `lut_index`) and
// render/src/cpu.rs (`RasterPrep::draw_row`); keep the arithmetic in the same order.
// Uniform layout: render/src/gpu.rs `RasterGlobals` (80 bytes).

struct RasterGlobals {
    viewport: vec2<f32>,  // target size in pixels
    scale: f32,           // scene -> screen zoom
    screen: u32,          // 1: the rect is in screen pixels (not moved by pan and zoom)
    offset: vec2<f32>,    // scene -> screen translation (pixels)
    origin: vec2<f32>,    // top-left of this target within the whole picture (tiles)
    rect: vec4<f32>,      // x0, y0, x1, y1 of the grid
    size: vec2<u32>,      // cells across and down
    mode: u32,            // 0: colours, otherwise a tone kind + 1
    opacity: f32,
    max_value: f32,
    _pad0: f32,
    _pad1: f32,
    _pad2: f32,
}

@group(0) @binding(0) var<uniform> g: RasterGlobals;
@group(0) @binding(1) var cells: texture_2d<f32>;
@group(0) @binding(2) var table: texture_2d<f32>;      // 256 x 1 RGBA8 colours
@group(0) @binding(3) var quantiles: texture_2d<f32>;  // 256 x 1 R32Float

const TONE_LINEAR: u32 = 0u;
const TONE_LOG: u32 = 1u;
const TABLE: u32 = 256u;
const MIN_POSITIVE: f32 = 1.17549435e-38;

struct VsOut {
    @builtin(position) position: vec4<f32>,
}

fn to_screen(p: vec2<f32>) -> vec2<f32> {
    if (g.screen != 0u) { return p - g.origin; }
    return p * g.scale + g.offset - g.origin;
}

@vertex
fn vs_main(@builtin(vertex_index) vid: u32) -> VsOut {
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(0.0, 1.0),
        vec2<f32>(0.0, 1.0), vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 1.0),
    );
    let c = corners[vid];
    let a = to_screen(g.rect.xy);
    let b = to_screen(g.rect.zw);
    // One pixel more on every side: the fragment decides which pixels a cell covers.
    let p = mix(min(a, b) - 1.0, max(a, b) + 1.0, c);
    var out: VsOut;
    out.position = vec4<f32>(p.x / g.viewport.x * 2.0 - 1.0, 1.0 - p.y / g.viewport.y * 2.0, 0.0, 1.0);
    return out;
}

fn tone(v: f32) -> f32 {
    let kind = g.mode - 1u;
    if (kind == TONE_LINEAR) { return v / max(g.max_value, MIN_POSITIVE); }
    if (kind == TONE_LOG) { return log(1.0 + v) / max(log(1.0 + g.max_value), MIN_POSITIVE); }
    // The share of the quantiles at or below v.
    var lo = 0u;
    var hi = TABLE;
    while (lo < hi) {
        let mid = (lo + hi) / 2u;
        if (textureLoad(quantiles, vec2<i32>(i32(mid), 0), 0).r <= v) { lo = mid + 1u; } else { hi = mid; }
    }
    return f32(lo) / f32(TABLE);
}

fn lut_index(t: f32) -> u32 {
    var u = clamp(t, 0.0, 1.0);
    if (t != t) { u = 0.0; }
    return u32(floor(u * f32(TABLE - 1u) + 0.5));
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let p = in.position.xy + g.origin;
    var q = p;
    if (g.screen == 0u) { q = (p - g.offset) / g.scale; }
    let fx = (q.x - g.rect.x) / (g.rect.z - g.rect.x) * f32(g.size.x);
    let fy = (q.y - g.rect.y) / (g.rect.w - g.rect.y) * f32(g.size.y);
    if (!(fx >= 0.0 && fy >= 0.0 && fx < f32(g.size.x) && fy < f32(g.size.y))) {
        return vec4<f32>(0.0);
    }
    let cell = vec2<i32>(i32(min(u32(floor(fx)), g.size.x - 1u)), i32(min(u32(floor(fy)), g.size.y - 1u)));
    let texel = textureLoad(cells, cell, 0);
    var colour: vec4<f32>;
    if (g.mode == 0u) {
        colour = texel;
    } else {
        let v = texel.r;
        if (!(v > 0.0)) { return vec4<f32>(0.0); }
        let c = textureLoad(table, vec2<i32>(i32(lut_index(tone(v))), 0), 0);
        colour = vec4<f32>(c.rgb, g.opacity);
    }
    // Premultiplied "over".
    return vec4<f32>(colour.rgb * colour.a, colour.a);
}
