//! The node selector's picture: the axes, a polyline per node, the legend.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_compute::line_density::DensityInput;
use exaviz_model::Topology;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::dims::{DimFilter, selected_nodes};
use exaviz_render::{Anchor, Blend, ColorMap, Scale, Scene};

use crate::legend::{color_bar, format_value};
use crate::plot::{Plot, nice_ticks};
use crate::torus::traffic::{LEGEND_W, TOP, dim_letter, link_traffic_in, node_traffic};
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParcoordsOptions {
    pub width: u32,
    pub height: u32,
    pub colormap: ColorMap,
    /// Only the traffic sent in `[from, to)` colours the lines.
    pub time_slice: Option<(u64, u64)>,
    pub node: Option<u32>,
    pub select: Option<DimFilter>,
}

impl Default for ParcoordsOptions {
    fn default() -> Self {
        Self { width: 900, height: 560, colormap: ColorMap::Viridis, time_slice: None, node: None, select: None }
    }
}

/// Fixed jitter of node `v` on axis `d`, in `[-0.3, 0.3]` coordinate steps (a hash, so pictures
/// are reproducible).
fn jitter(v: u32, d: usize) -> f32 {
    let mut h = u64::from(v).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (d as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 32;
    ((h & 0xffff) as f32 / 65_535.0 - 0.5) * 0.6
}

const OTHER: [f32; 4] = [0.45, 0.47, 0.52, 0.22];

/// Above this many nodes, polylines are aggregated into a density image rather than drawn one
/// by one (and at most this many selected lines are drawn over it, the busiest).
pub const DENSE_LINES: usize = 20_000;

/// The plot rectangle of a `width x height` parcoords picture.
fn plot_of(width: u32, height: u32) -> Option<Plot> {
    Plot::inside(width, height, [70, TOP as u32 + 30, LEGEND_W as u32 + 30, 40])
}

/// Where the axis of dimension `d` (of `dims`) stands.
fn axis_x(plot: Plot, dims: usize, d: usize) -> f32 {
    let (x0, pw) = (plot.x0 as f32, plot.w as f32);
    if dims == 1 { x0 + pw / 2.0 } else { x0 + pw * d as f32 / (dims - 1) as f32 }
}

/// Brushing: the axis nearest to the picture point `p` (within 16 pixels, and no further than
/// 12 pixels above or below the plot) and the coordinate at `p`'s height, fractional (coordinate
/// `c` spans `[c, c + 1)`), clamped to the axis.
pub fn parcoords_axis_at(topo: &Topology, width: u32, height: u32, p: [f32; 2]) -> Option<(usize, f32)> {
    let plot = plot_of(width, height)?;
    let dims = topo.dims();
    let (y0, ph) = (plot.y0 as f32, plot.h as f32);
    if dims == 0 || p[1] < y0 - 12.0 || p[1] > y0 + ph + 12.0 {
        return None;
    }
    let d = (0..dims)
        .min_by(|&a, &b| (axis_x(plot, dims, a) - p[0]).abs().total_cmp(&(axis_x(plot, dims, b) - p[0]).abs()))?;
    if (axis_x(plot, dims, d) - p[0]).abs() > 16.0 {
        return None;
    }
    let extent = topo.extents[d].max(1) as f32;
    let c = (y0 + ph - p[1]) / ph * extent;
    Some((d, c.clamp(0.0, extent - 1e-3)))
}

pub fn parcoords_scene(dataset: &Dataset, backend: &Backend, opts: &ParcoordsOptions) -> Result<Scene, ViewError> {
    let topo = crate::torus::topology(dataset, "the parcoords view needs")?;
    let (n, dims) = (topo.node_count(), topo.dims());
    crate::check_slice(opts.time_slice)?;
    let selected = selected_nodes(topo, opts.node, opts.select.as_ref()).map_err(ViewError::Unsupported)?;
    let plot = plot_of(opts.width, opts.height)
        .ok_or_else(|| ViewError::Unsupported(format!("{}x{} is too small for this view", opts.width, opts.height)))?;
    let traffic = node_traffic(topo, &link_traffic_in(dataset, backend, opts.time_slice)?);
    let max = traffic.iter().copied().max().unwrap_or(0);
    let min_positive = traffic.iter().copied().filter(|&t| t > 0).min().unwrap_or(0);
    let scale = Scale::auto(min_positive.max(1) as f64, max.max(1) as f64);

    let (x0, y0, ph) = (plot.x0 as f32, plot.y0 as f32, plot.h as f32);
    let axis_x = |d: usize| axis_x(plot, dims, d);
    // Coordinate c of dimension d sits in the middle of its band: extent bands fill the axis.
    let at = |v: u32, d: usize| {
        let c = topo.coord(v as usize)[d] as f32 + 0.5 + jitter(v, d);
        [axis_x(d), y0 + ph - c / topo.extents[d].max(1) as f32 * ph]
    };

    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let mut is_selected = vec![selected.is_none(); n];
    for &v in selected.as_deref().unwrap_or_default() {
        is_selected[v as usize] = true;
    }
    let shown = selected.as_ref().map_or(n, Vec::len);
    let dense = n > DENSE_LINES;
    if dense {
        // Too many lines to draw one by one: every node's polyline goes into a density image
        // (the line-density stage, weighted by traffic), each pixel coloured by the mean traffic
        // of the lines through it and as opaque as the log of their count.
        let to_plot = |p: [f32; 2]| [p[0] - x0, p[1] - y0];
        let mut segments = Vec::with_capacity(n * dims.saturating_sub(1));
        let mut weights = Vec::with_capacity(segments.capacity());
        for v in 0..n as u32 {
            for d in 1..dims {
                let (a, b) = (to_plot(at(v, d - 1)), to_plot(at(v, d)));
                segments.push([a[0], a[1], b[0], b[1]]);
                weights.push(u32::try_from(traffic[v as usize]).unwrap_or(u32::MAX));
            }
        }
        let input = DensityInput { segments: &segments, weights: Some(&weights), width: plot.w, height: plot.h };
        let image = stages::line_density::run(backend.runner().as_mut(), &input)?;
        let colour = |mean: f64| {
            if selected.is_some() {
                [OTHER[0], OTHER[1], OTHER[2], 1.0]
            } else if max == 0 {
                [0.55, 0.6, 0.7, 1.0]
            } else {
                opts.colormap.sample(scale.normalise(mean))
            }
        };
        crate::density::mean_value_pixels(&mut scene, &image, [x0, y0], colour);
    }
    // Light traffic first, so that busy nodes are drawn on top; selected nodes after the rest.
    let mut order: Vec<u32> =
        (0..n as u32).filter(|&v| !dense || (selected.is_some() && is_selected[v as usize])).collect();
    order.sort_by_key(|&v| (is_selected[v as usize], traffic[v as usize], v));
    order.drain(..order.len().saturating_sub(DENSE_LINES));
    let alpha = (60.0 / shown.max(1) as f32).sqrt().clamp(0.08, 0.9);
    for &v in &order {
        let (colour, width) = if !is_selected[v as usize] {
            (OTHER, 0.8)
        } else if max == 0 {
            ([0.55, 0.6, 0.7, alpha], 1.0)
        } else {
            let mut c = opts.colormap.sample(scale.normalise(traffic[v as usize] as f64));
            c[3] = alpha;
            (c, if selected.is_some() { 1.6 } else { 1.0 })
        };
        if dims > 1 {
            let line: Vec<[f32; 2]> = (0..dims).map(|d| at(v, d)).collect();
            scene.stroke(Blend::Alpha, &line, width, |_| colour);
        }
        if dims == 1 {
            scene.disc(at(v, 0), 2.0, colour, false);
        }
    }
    draw_axes(&mut scene, topo, plot, &axis_x);
    decorate(&mut scene, dataset, topo, opts, &selected, (max, scale));
    Ok(scene)
}

/// One vertical axis per dimension with its name, extent and coordinate ticks.
fn draw_axes(scene: &mut Scene, topo: &Topology, plot: Plot, axis_x: &dyn Fn(usize) -> f32) {
    let (y0, ph) = (plot.y0 as f32, plot.h as f32);
    let dims = topo.dims();
    for d in 0..dims {
        let x = axis_x(d).round();
        scene.rect([x - 0.5, y0], [x + 0.5, y0 + ph], [0.75, 0.76, 0.8, 1.0], true);
        let name = format!("{} ({})", dim_letter(d, dims), topo.extents[d]);
        scene.text(&name, [x, y0 - 12.0], 12.0, Anchor::Centre, TEXT);
        let extent = topo.extents[d].max(1);
        let values: Vec<u32> = if extent <= 16 {
            (0..extent).collect()
        } else {
            nice_ticks(0.0, f64::from(extent - 1), 6).into_iter().map(|(_, v)| v as u32).collect()
        };
        for c in values {
            let y = (y0 + ph - (c as f32 + 0.5) / extent as f32 * ph).round();
            scene.rect([x - 4.0, y - 0.5], [x + 4.0, y + 0.5], TEXT_DIM, true);
            scene.text(&c.to_string(), [x - 7.0, y + 4.0], 10.0, Anchor::Right, TEXT_DIM);
        }
    }
}

fn decorate(
    scene: &mut Scene,
    dataset: &Dataset,
    topo: &Topology,
    opts: &ParcoordsOptions,
    selected: &Option<Vec<u32>>,
    (max, scale): (u64, Scale),
) {
    let n = topo.node_count();
    let dims: Vec<String> = topo.extents.iter().map(u32::to_string).collect();
    let mut sub = format!("{} torus · {n} nodes · one line per node, jittered", dims.join("x"));
    if let Some(nodes) = selected {
        let what = match (opts.node, &opts.select) {
            (Some(v), None) => format!("node {v}"),
            (None, Some(f)) => f.describe(),
            (Some(v), Some(f)) => format!("node {v} and {}", f.describe()),
            (None, None) => String::new(),
        };
        sub += &format!(" · selected: {what} ({} nodes)", nodes.len());
    }
    if let Some((from, to)) = opts.time_slice {
        sub += &format!(" · time {from} to {to}");
    }
    let title = format!("Node selector (parallel coordinates): {}", crate::title_name(dataset));
    crate::plot::titles(scene, opts.width as f32, &title, &sub);
    let unit = crate::traffic_unit(dataset);
    let x = opts.width as f32 - LEGEND_W + 16.0;
    let y = TOP + 50.0;
    let bar_h = (opts.height as f32 - y - 120.0).max(40.0);
    if max > 0 {
        color_bar(scene, opts.colormap, scale, &format!("{unit}\non a node's links"), [x, y, 18.0, bar_h]);
    } else {
        scene.text("no traffic recorded", [x, y], 12.0, Anchor::Left, TEXT_DIM);
    }
    if selected.is_some() {
        let ly = y + bar_h + 40.0;
        scene.rect([x, ly - 2.0], [x + 16.0, ly + 1.0], [OTHER[0], OTHER[1], OTHER[2], 1.0], true);
        scene.text("not selected", [x + 22.0, ly + 4.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    let total: u64 = dataset.trace.link_counters.value.iter().map(|&v| u64::from(v)).sum();
    let note = format!("{} {unit} in all", format_value(total as f64));
    scene.text(&note, [x, opts.height as f32 - 16.0], 11.0, Anchor::Left, TEXT_DIM);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_small_fixed_and_varied() {
        let js: Vec<f32> = (0..1000).map(|v| jitter(v, 2)).collect();
        assert!(js.iter().all(|j| j.abs() <= 0.3));
        assert_eq!(js, (0..1000).map(|v| jitter(v, 2)).collect::<Vec<_>>());
        let spread = js.iter().fold(0f32, |m, j| m.max(j.abs()));
        assert!(spread > 0.25, "jitter uses its range: {spread}");
        assert_ne!(jitter(5, 0), jitter(5, 1));
    }

    #[test]
    fn node_traffic_sums_both_ends() {
        let mut topo = exaviz_model::torus::torus(&[3]);
        topo.links = exaviz_model::Links { source: vec![0, 1, 2], destination: vec![1, 2, 0], ..Default::default() };
        assert_eq!(node_traffic(&topo, &[5, 7, 11]), vec![16, 12, 18]);
    }
}
