// One step of the strategy view's force layout (Wei et al., §5.1.1 step 2): operators along the
// execution order, springs to their data neighbours at an expected distance, repulsion that
// keeps a later operator behind an earlier one on the same lane, collisions separated in y (the
// later operator steps aside), every main operator drawn to the central axis and the subordinate
// ones (parameters, constants) above it. An operator never moves left of an operand: each end of a data edge may take at most
// half of the edge's slack over `gap` per step, so both moving at once keeps the order.
// Positions are fixed-point (i32, `pitch` units per column), so every step is integer
// arithmetic and the GPU and its CPU mirror agree exactly.
// CPU mirror: mirror.rs beside this file (keep the two in sync).

struct Params {
    n: u32,          // operators
    window: u32,     // neighbours on each side (in the initial order) tested for collisions
    pitch: i32,      // expected distance between an operand and its user
    gap: i32,        // least distance between an operand and its user
    box_w: i32,      // an operator's extent: closer than this in x and box_h in y collide
    box_h: i32,
    axis: i32,       // the central axis (y)
    row: i32,        // subordinate operators sit at least this far above the axis
    max_move: i32,   // the step's largest move per axis (the temperature)
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// Operator i's neighbours are adj[first .. first + operands + users]: its operands, then its
// users. A main operator lists main neighbours only; a subordinate one lists its users.
struct Node {
    first: u32,
    operands: u32,
    users: u32,
    seq: u32,        // its place in the execution order
    flags: u32,      // bit 0: subordinate
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> pos_in: array<vec2<i32>>;
@group(0) @binding(2) var<storage, read_write> pos_out: array<vec2<i32>>;
@group(0) @binding(3) var<storage, read> nodes: array<Node>;
@group(0) @binding(4) var<storage, read> adj: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn force_layout(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i >= params.n) { return; }
    let p = pos_in[i];
    let node = nodes[i];
    let sub = (node.flags & 1u) != 0u;
    let reach = 4 * params.pitch;
    // Springs to the data neighbours, each term bounded so that sums cannot overflow.
    var spring = 0;
    var lo = p.x;
    var hi = p.x;
    var free_lo = true;
    var free_hi = true;
    let degree = node.operands + node.users;
    for (var k = 0u; k < degree; k++) {
        let q = pos_in[adj[node.first + k]];
        var want = q.x;
        if (!sub) {
            if (k < node.operands) { want = q.x + params.pitch; } else { want = q.x - params.pitch; }
        }
        spring += clamp(want - p.x, -reach, reach);
        if (!sub) {
            if (k < node.operands) {
                let least = p.x - max(p.x - q.x - params.gap, 0) / 2;
                if (free_lo || least > lo) { lo = least; }
                free_lo = false;
            } else {
                let most = p.x + max(q.x - p.x - params.gap, 0) / 2;
                if (free_hi || most < hi) { hi = most; }
                free_hi = false;
            }
        }
    }
    var fx = 0;
    if (degree > 0u) { fx = spring / i32(degree); }
    var fy = 0;
    // Among the neighbours in the initial order: on the same lane and closer than expected, the
    // later operator goes behind the earlier one; colliding, the later one steps aside in y
    // (away from the axis), and only an operator free of collisions is drawn to the axis.
    var collided = false;
    var j0 = 0u;
    if (i > params.window) { j0 = i - params.window; }
    let j1 = min(i + params.window + 1u, params.n);
    for (var j = j0; j < j1; j++) {
        if (j == i) { continue; }
        let q = pos_in[j];
        let d = p - q;
        let ax = abs(d.x);
        let ay = abs(d.y);
        let later = node.seq > nodes[j].seq;
        if (ay < params.box_h && ax < params.pitch) {
            var s = -1;
            if (later) { s = 1; }
            fx += s * (params.pitch - ax) / 2;
        }
        if (ax < params.box_w && ay < params.box_h && later) {
            var s = 1;
            if (d.y < 0 || (d.y == 0 && sub)) { s = -1; }
            fy += s * (params.box_h - ay);
            collided = true;
        }
    }
    // Towards the axis: main operators onto it, subordinate ones one row above it.
    var aim = params.axis;
    if (sub) { aim = params.axis - params.row; }
    if (!collided) { fy += (aim - p.y) / 8; }
    let m = params.max_move;
    var x = p.x + clamp(fx, -m, m);
    var y = p.y + clamp(fy, -m, m);
    if (!free_lo) { x = max(x, lo); }
    if (!free_hi) { x = min(x, hi); }
    if (sub) { y = min(y, params.axis - params.row); } else { y = max(y, params.axis); }
    pos_out[i] = vec2<i32>(x, y);
}
