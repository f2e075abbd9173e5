//! Picking on the ring: the node or address-ring value under a point.

use exaviz_render::layout::order::order_nodes;

use super::{RingOptions, place_circle, ring_band};

/// Picking: the node whose place on the ring (or address rings) is nearest to the picture point
/// `p`, if `p` lies on the ring's band, from a little inside the circle to just outside the
/// address rings.
pub fn ring_node_at(topo: &exaviz_model::Topology, opts: &RingOptions, p: [f32; 2]) -> Option<u32> {
    let n = topo.node_count();
    if n == 0 {
        return None;
    }
    let Ok((circle, outer)) = place_circle(n, topo.dims(), opts) else { return None };
    let (dx, dy) = (p[0] - circle.cx, p[1] - circle.cy);
    let r = dx.hypot(dy);
    if r < circle.radius - 12.0 || r > outer.max(circle.radius) + 8.0 {
        return None;
    }
    // Ring position 0 is at the top, increasing clockwise (see `Circle::at_f`).
    let turn = (dy.atan2(dx) + std::f32::consts::FRAC_PI_2).rem_euclid(std::f32::consts::TAU) / std::f32::consts::TAU;
    let position = (turn * n as f32).round() as usize % n;
    Some(order_nodes(topo, opts.order)[position])
}

/// Picking on the address rings (TorusTrafficND §V-B.2's dimension-value filter): the dimension of the
/// address ring under the picture point `p` (0 the innermost) and the node at that place, if `p`
/// lies on one.
pub fn ring_address_at(topo: &exaviz_model::Topology, opts: &RingOptions, p: [f32; 2]) -> Option<(usize, u32)> {
    let n = topo.node_count();
    if n == 0 || !opts.address_rings {
        return None;
    }
    let Ok((circle, _)) = place_circle(n, topo.dims(), opts) else { return None };
    let (band, gap) = ring_band(&circle);
    let r = (p[0] - circle.cx).hypot(p[1] - circle.cy) - (circle.radius + 4.0 * circle.zoom) + gap / 2.0;
    let d = (r / (band + gap)).floor();
    if r < 0.0 || d >= topo.dims() as f32 {
        return None;
    }
    let node = ring_node_at(topo, opts, p)?;
    Some((d as usize, node))
}
