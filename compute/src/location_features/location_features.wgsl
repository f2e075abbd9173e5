// Per-location features of a time window: for every location, the time each of its colour
// slots covers in each of the window's time bins; and every location's distance to the nearest
// of a few representative feature vectors. They group rows by behaviour (views/src/rows.rs).
// CPU mirror: mirror.rs beside this file (keep the two in sync).
//
// Times arrive as u32 quanta from the window's start (the recording converts them); a bin is
// `bin_quanta` quanta wide, so an interval adds at most that much to a (location, bin, slot)
// cell per bin it overlaps.

struct Params {
    n: u32,            // intervals in this chunk, or locations (location_distances)
    locations: u32,
    bins: u32,
    slots: u32,
    bin_quanta: u32,
    reps: u32,         // representatives (location_distances)
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// Per interval: location, first quantum, end quantum (exclusive), slot.
@group(0) @binding(1) var<storage, read> spans: array<vec4<u32>>;
// locations x bins x slots, row-major.
@group(0) @binding(2) var<storage, read_write> features: array<atomic<u32>>;
// reps x bins x slots, row-major.
@group(0) @binding(3) var<storage, read> reps: array<u32>;
// Per location: the nearest representative and the L1 distance to it.
@group(0) @binding(4) var<storage, read_write> nearest: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> features_in: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn location_features(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let s = spans[i];
    let l = s.x;
    let slot = s.w;
    let end = params.bins * params.bin_quanta;
    let a = s.y;
    let b = min(s.z, end);
    if (l >= params.locations || slot >= params.slots || a >= b) { return; }
    let w = params.bin_quanta;
    let row = l * params.bins;
    for (var bin = a / w; bin <= (b - 1u) / w; bin++) {
        let lo = max(a, bin * w);
        let hi = min(b, (bin + 1u) * w);
        atomicAdd(&features[(row + bin) * params.slots + slot], hi - lo);
    }
}

@compute @workgroup_size(256)
fn location_distances(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = index(gid, nwg);
    if (l >= params.n) { return; }
    let d = params.bins * params.slots;
    var best = 0u;
    var best_d = 0xffffffffu;
    for (var r = 0u; r < params.reps; r++) {
        var sum = 0u;
        for (var k = 0u; k < d; k++) {
            let x = features_in[l * d + k];
            let y = reps[r * d + k];
            sum += max(x, y) - min(x, y);
        }
        if (sum < best_d) {
            best_d = sum;
            best = r;
        }
    }
    nearest[l] = vec2<u32>(best, best_d);
}
