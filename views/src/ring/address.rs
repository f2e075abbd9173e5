//! TorusTrafficND's address rings (each node's coordinates, one ring per dimension) and
//! dimension names.

use exaviz_render::{Blend, Scene};

use super::{Circle, ring_band};

/// TorusTrafficND's address rings: ring `d` (inner to outer) shows every node's coordinate in
/// dimension `d`, brighter for lower values. Each ring is drawn as radial strokes about a pixel
/// apart (square ends, whatever the node count); where a stroke covers several nodes it shows
/// their mean. Returns the outer radius.
/// With a node filter, only that node's address is drawn: one wider stroke per ring.
pub(super) fn address_rings(
    scene: &mut Scene,
    topo: &exaviz_model::Topology,
    pos: &[u32],
    circle: &Circle,
    only: Option<&[u32]>,
) -> f32 {
    let (band, gap) = ring_band(circle);
    let n = circle.n;
    let mut r = circle.radius + 4.0;
    let mut at_pos = vec![0u32; n];
    for d in 0..topo.dims() {
        for (node, &p) in pos.iter().enumerate() {
            at_pos[p as usize] = topo.coord(node)[d];
        }
        let extent = f64::from(topo.extents[d].max(2) - 1);
        let strokes = (std::f32::consts::TAU * (r + band) * 1.25).ceil() as usize;
        let stroke_w = std::f32::consts::TAU * (r + band) / strokes as f32 + 0.35;
        for k in 0..strokes {
            let (lo, hi) = (k * n / strokes, ((k + 1) * n / strokes).max(k * n / strokes + 1));
            let mean = if n <= strokes {
                f64::from(at_pos[(((k as f64 + 0.5) * n as f64 / strokes as f64 + 0.5) as usize) % n])
            } else {
                at_pos[lo..hi.min(n)].iter().map(|&v| f64::from(v)).sum::<f64>() / (hi.min(n) - lo) as f64
            };
            let v = 0.92 - 0.74 * (mean / extent) as f32;
            let colour = if only.is_some() { [0.17, 0.18, 0.21, 1.0] } else { [v, v, v * 1.02, 1.0] };
            let t = (k as f32 + 0.5) * n as f32 / strokes as f32;
            let (p0, p1) = (circle.at_f(t, r + stroke_w / 2.0), circle.at_f(t, r + band - stroke_w / 2.0));
            scene.segment(Blend::Alpha, p0, p1, stroke_w, colour, false);
        }
        // The filtered nodes' addresses alone: a stroke at least 4 pixels wide per ring.
        for &node in only.unwrap_or_default() {
            let v = 0.92 - 0.74 * (f64::from(topo.coord(node as usize)[d]) / extent) as f32;
            let t = pos[node as usize] as f32;
            let w = stroke_w.max(4.0);
            let (p0, p1) = (circle.at_f(t, r + 0.5), circle.at_f(t, r + band - 0.5));
            scene.segment(Blend::Alpha, p0, p1, w, [v, v, v * 1.02, 1.0], false);
        }
        r += band + gap;
    }
    r - gap
}
