//! The sendrecv view's picture and its curves.

use exaviz_compute::Backend;
use exaviz_compute::bspline::Curve;
use exaviz_model::dataset::Dataset;
use exaviz_render::layout::routes::yx_diagonal_route;
use exaviz_render::{Anchor, Blend, ColorMap, Scale, Scene};

use crate::legend::color_bar_of;
use crate::pairs::{CurveCache, CurveOptions, CurveStyle, Pair, PairPick, draw_curves, opacity_legend};
use crate::plot::{Plot, nice_ticks};
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

/// Grid size (the paper's: it divides the process counts 16, 256 and 1,024).
pub const GRID: u32 = 8;
/// Most processes the view draws one by one; a trace with more is drawn in blocks of ranks.
pub use crate::pairs::MAX_PROCESSES;
const SAMPLES: u32 = 24;
const MARGIN: [u32; 4] = [70, 60, 250, 40];

/// Control polygon of the curve from sender `a` to receiver `b` of `n` processes in plot `p`.
fn polygon(a: usize, b: usize, n: usize, p: Plot) -> Vec<[f32; 2]> {
    let (x0, y0, w, h) = (p.x0 as f32, p.y0 as f32, p.w as f32, p.h as f32);
    let row_y = |i: usize| y0 + (i as f32 + 0.5) / n as f32 * h;
    let grid_row = |i: usize| (i as u64 * u64::from(GRID) / n as u64) as u32;
    let node = |(c, r): (u32, u32)| [x0 + (c as f32 + 0.5) / GRID as f32 * w, y0 + (r as f32 + 0.5) / GRID as f32 * h];
    let mut out = vec![[x0, row_y(a)]];
    out.extend(yx_diagonal_route(grid_row(a), grid_row(b), GRID).into_iter().map(node));
    out.push([x0 + w, row_y(b)]);
    out
}

/// Colour of the sender `f` of the way down the ranks: viridis' dark end vanishes on the
/// background, so senders take its upper 85%.
fn sender_colour_at(map: ColorMap, f: f32) -> [f32; 3] {
    let c = map.sample(0.15 + 0.85 * f);
    [c[0], c[1], c[2]]
}

/// The sender/receiver diagram as a scene, and its curves for picking.
pub fn sendrecv_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &CurveOptions,
    window_s: Option<(f64, f64)>,
    cache: &CurveCache,
) -> Result<(Scene, PairPick), ViewError> {
    let (nodes, pairs) = crate::pairs::pairs_in(dataset, backend, "sendrecv", MAX_PROCESSES, window_s)?;
    let n = nodes.count;
    let p = Plot::inside(opts.width, opts.height, MARGIN).ok_or_else(|| {
        ViewError::Unsupported(format!(
            "picture {}x{} too small for a sender/receiver diagram",
            opts.width, opts.height
        ))
    })?;
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let map = ColorMap::Viridis;
    let mut curves = None;
    if !pairs.is_empty() {
        let curve = Curve { samples: SAMPLES, beta: opts.beta.clamp(0.0, 1.0), degree: 2 };
        let bundled = cache.curves(backend, n, (opts.width, opts.height), curve, &pairs, |a, b| polygon(a, b, n, p))?;
        let last = (n - 1).max(1) as f32;
        let value = |pair: &Pair, _: f32| pair.0 as f32 / last;
        let style = CurveStyle { mix: opts.mix, width: 1.2, value, map: |f: f32| sender_colour_at(map, f) };
        draw_curves(&mut scene, backend, &bundled, &pairs, &style, Some(cache))?;
        curves = Some(bundled);
    }
    // Process columns: a thin bar per side, ranks ticked.
    let (x0, y0, w, h) = (p.x0 as f32, p.y0 as f32, p.w as f32, p.h as f32);
    for (x, side) in [(x0, "senders"), (x0 + w, "receivers")] {
        scene.rect([x - 2.0, y0], [x + 2.0, y0 + h], [0.45, 0.47, 0.52, 1.0], true);
        scene.text(side, [x, y0 - 12.0], 13.0, Anchor::Centre, TEXT);
    }
    for (_, v) in nice_ticks(0.0, (n - 1) as f64, 8).into_iter().filter(|(_, v)| v.fract() == 0.0) {
        let y = y0 + (v as f32 + 0.5) / n as f32 * h;
        scene.segment(Blend::Alpha, [x0 - 8.0, y], [x0 - 2.0, y], 1.0, TEXT_DIM, true);
        let label = nodes.label(v as usize);
        scene.text(&label, [x0 - 10.0, y + 4.0], 11.0, Anchor::Right, TEXT_DIM);
        scene.segment(Blend::Alpha, [x0 + w + 2.0, y], [x0 + w + 8.0, y], 1.0, TEXT_DIM, true);
        scene.text(&label, [x0 + w + 10.0, y + 4.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    scene.text("rank", [x0 - 10.0, y0 + h + 18.0], 11.0, Anchor::Right, TEXT_DIM);
    nodes.title(&mut scene, ("Sender/receiver diagram", dataset), pairs.len(), opts.width, 26.0);
    let lx = x0 + w + 70.0;
    let sender_map = Scale { lo: 0.0, hi: ((n - 1).max(1) * nodes.block) as f64, log: false };
    let bar = |f: f32| {
        let c = sender_colour_at(map, f);
        [c[0], c[1], c[2], 1.0]
    };
    // The legend column shrinks its bar to fit short pictures and leaves out the notes on
    // routing where they would not fit.
    let bar_h = ((opts.height as f32 - y0 - 24.0 - 140.0) * 0.6).clamp(40.0, 160.0);
    color_bar_of(&mut scene, bar, sender_map, "sender rank", [lx, y0 + 24.0, 16.0, bar_h]);
    let max = pairs.last().map_or(1, |q| q.2);
    let oy = y0 + 24.0 + bar_h + 46.0;
    opacity_legend(&mut scene, lx, oy, max, opts.mix);
    if oy + 126.0 <= opts.height as f32 - 4.0 {
        let routing = format!("routes: {GRID}x{GRID} grid, YX routing");
        scene.text(&routing, [lx, oy + 110.0], 11.0, Anchor::Left, TEXT_DIM);
        scene.text(&format!("bundling strength β = {:.2}", opts.beta), [lx, oy + 126.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    nodes.footnote(&mut scene);
    Ok((scene, PairPick { nodes, pairs, curves }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polygons_run_from_left_to_right_through_the_grid() {
        let p = Plot { x0: 0, y0: 0, w: 800, h: 800 };
        let q = polygon(0, 15, 16, p);
        // Sender, 8 grid nodes, receiver.
        assert_eq!(q.len(), 10);
        assert_eq!(q[0], [0.0, 25.0]);
        assert_eq!(q[9], [800.0, 775.0]);
        // Far apart: all diagonal.
        for w in q[1..9].windows(2) {
            assert!((w[1][0] - w[0][0] - 100.0).abs() < 1e-3 && (w[1][1] - w[0][1] - 100.0).abs() < 1e-3);
        }
    }
}
