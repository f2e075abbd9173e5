//! The chord view's picture and its curves.

use exaviz_compute::Backend;
use exaviz_compute::bspline::Curve;
use exaviz_model::dataset::Dataset;
use exaviz_render::{Anchor, Blend, Scene};

use crate::pairs::{CurveCache, CurveOptions, CurveStyle, Pair, PairPick, draw_curves, opacity_legend};
use crate::plot::{direction_colour, direction_legend};
use crate::{BACKGROUND, TEXT_DIM, ViewError};

pub use crate::pairs::MAX_PROCESSES;
const SAMPLES: u32 = 24;

/// Control polygon of the edge from leaf `a` to leaf `b` of `n` on a circle of radius `r`
/// around `c`: up the binary tree over rank blocks to below their common ancestor, then down.
fn polygon(a: usize, b: usize, n: usize, c: [f32; 2], r: f32) -> Vec<[f32; 2]> {
    let height = (n as f64).log2().ceil().max(1.0) as u32;
    // The block of level `h` (0: the leaf itself) containing rank `i`, and its point.
    let point = |i: usize, h: u32| {
        let size = 1usize << h;
        let start = (i / size) * size;
        let end = (start + size).min(n);
        let angle = std::f64::consts::TAU * ((start + end) as f64 / 2.0 - 0.5) / n as f64;
        let radius = f64::from(r) * (1.0 - f64::from(h) / f64::from(height) * 0.85);
        [c[0] + (radius * angle.cos()) as f32, c[1] + (radius * angle.sin()) as f32]
    };
    // Levels below the lowest common ancestor.
    let lca = (0..=height).find(|&h| a >> h == b >> h).unwrap_or(height);
    let mut out: Vec<[f32; 2]> = (0..lca).map(|h| point(a, h)).collect();
    out.extend((0..lca).rev().map(|h| point(b, h)));
    if lca == 0 {
        out = vec![point(a, 0), point(b, 0)];
    }
    out
}

/// The chord diagram as a scene, and its curves for picking.
pub fn chord_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &CurveOptions,
    window_s: Option<(f64, f64)>,
    cache: &CurveCache,
) -> Result<(Scene, PairPick), ViewError> {
    let (nodes, pairs) = crate::pairs::pairs_in(dataset, backend, "chord", MAX_PROCESSES, window_s)?;
    let n = nodes.count;
    let (w, h) = (opts.width as f32, opts.height as f32);
    let legend_w = 190.0;
    let c = [(w - legend_w) / 2.0, h / 2.0 + 16.0];
    let r = ((w - legend_w).min(h - 80.0) / 2.0 - 30.0).max(10.0);
    let curves = if pairs.is_empty() {
        None
    } else {
        let curve = Curve { samples: SAMPLES, beta: opts.beta.clamp(0.0, 1.0), degree: 3 };
        let size = (opts.width, opts.height);
        Some(cache.curves(backend, n, size, curve, &pairs, |a, b| polygon(a, b, n, c, r))?)
    };
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let max = pairs.last().map_or(1, |p| p.2);
    if let Some(curves) = &curves {
        let style =
            CurveStyle { mix: opts.mix, width: 1.2, value: |_: &Pair, share: f32| share, map: direction_colour };
        draw_curves(&mut scene, backend, curves, &pairs, &style, Some(cache))?;
    }
    // Processes as ticks on the circle, a few labelled.
    let step = (n / 16).max(1);
    for i in 0..n {
        let angle = std::f32::consts::TAU * i as f32 / n as f32;
        let (dx, dy) = (angle.cos(), angle.sin());
        let p = [c[0] + dx * (r + 2.0), c[1] + dy * (r + 2.0)];
        let q = [c[0] + dx * (r + 8.0), c[1] + dy * (r + 8.0)];
        scene.segment(Blend::Alpha, p, q, 1.5, TEXT_DIM, true);
        if i % step == 0 {
            let at = [c[0] + dx * (r + 22.0), c[1] + dy * (r + 22.0) + 4.0];
            scene.text(&nodes.label(i), at, 11.0, Anchor::Centre, TEXT_DIM);
        }
    }
    nodes.title(&mut scene, ("Chord diagram", dataset), pairs.len(), opts.width, 28.0);
    legend(&mut scene, w - legend_w + 10.0, 80.0, max, opts);
    nodes.footnote(&mut scene);
    Ok((scene, PairPick { nodes, pairs, curves }))
}

fn legend(scene: &mut Scene, x: f32, y: f32, max: u32, opts: &CurveOptions) {
    direction_legend(scene, x, y + 10.0);
    opacity_legend(scene, x, y + 70.0, max, opts.mix);
    scene.text(&format!("bundling strength β = {:.2}", opts.beta), [x, y + 180.0], 11.0, Anchor::Left, TEXT_DIM);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polygons_climb_to_below_the_common_ancestor() {
        let (c, r) = ([0.0, 0.0], 100.0);
        // Siblings: only the two leaves (their parent is the common ancestor).
        assert_eq!(polygon(0, 1, 8, c, r).len(), 2);
        // 0 and 7 of 8: three levels up and three down.
        let p = polygon(0, 7, 8, c, r);
        assert_eq!(p.len(), 6);
        let radius = |q: [f32; 2]| q[0].hypot(q[1]);
        assert!((radius(p[0]) - 100.0).abs() < 1e-3 && (radius(p[5]) - 100.0).abs() < 1e-3);
        assert!(radius(p[2]) < radius(p[1]) && radius(p[1]) < radius(p[0]));
    }
}
