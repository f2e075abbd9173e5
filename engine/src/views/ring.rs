//! The `ring` view (seeds 001 and 004): torus nodes ordered along a sequential or Hilbert curve
//! and placed on a circle; links drawn as chords curving towards the centre, coloured and
//! weighted by traffic that stage (a) aggregates per link; a legend.

use std::collections::HashMap;

use crate::Backend;
use crate::layout::order::{Ordering, order_nodes, positions};
use crate::model::Dataset;
use crate::render::{Anchor, Blend, ColorMap, Scale, Scene};
use crate::stages::kde_bundle::UnitFrame;
use crate::stages::{self, AxisKey, BundleInput, BundleParams, HeatmapInput};

use super::legend::{color_bar, format_value};
use super::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

#[derive(Clone, Copy, Debug)]
pub struct RingOptions {
    pub width: u32,
    pub height: u32,
    pub order: Ordering,
    pub colormap: ColorMap,
    /// Bundle the chords with the KDE bundling stage (`None`: plain curves).
    pub bundle: Option<BundleParams>,
}

impl Default for RingOptions {
    fn default() -> Self {
        Self { width: 1024, height: 768, order: Ordering::Hilbert, colormap: ColorMap::Viridis, bundle: None }
    }
}

/// Traffic per directed link, summed over all link-counter samples by stage (a) on `backend`.
pub fn link_traffic(dataset: &Dataset, backend: &Backend) -> Result<Vec<u64>, ViewError> {
    let topo = dataset.topology.as_ref().ok_or_else(|| ViewError::Unsupported("no topology".into()))?;
    let lc = &dataset.trace.link_counters;
    let links = topo.link_count() as u32;
    if lc.entity.is_empty() || links == 0 {
        return Ok(vec![0; links as usize]);
    }
    let (t_min, t_max) = lc.time.iter().fold((u64::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let input = HeatmapInput {
        x: AxisKey::time(&lc.time, t_min, t_max, 1),
        y: AxisKey::Id { keys: &lc.entity, extent: links },
        weights: Some(&lc.value),
    };
    let grid = stages::bin_heatmap::run(backend.runner().as_mut(), &input)?;
    Ok(grid.row_sums())
}

/// Builds the ring scene.
pub fn ring_scene(dataset: &Dataset, backend: &Backend, opts: &RingOptions) -> Result<Scene, ViewError> {
    let topo = dataset.topology.as_ref().ok_or_else(|| {
        ViewError::Unsupported("the ring view needs a topology (a Boxfish file or gen:torus-sim)".into())
    })?;
    let n = topo.node_count();
    if n == 0 {
        return Err(ViewError::Unsupported("the topology has no nodes".into()));
    }
    let traffic = link_traffic(dataset, backend)?;
    let order = order_nodes(topo, opts.order);
    let pos = positions(&order);

    // Undirected chords: both directions of a link share one chord and add their traffic.
    let mut chords: HashMap<(u32, u32), u64> = HashMap::with_capacity(topo.link_count() / 2 + 1);
    for (l, &t) in traffic.iter().enumerate() {
        let (s, d) = (topo.links.source[l], topo.links.destination[l]);
        *chords.entry((s.min(d), s.max(d))).or_default() += t;
    }
    let mut chords: Vec<((u32, u32), u64)> = chords.into_iter().collect();
    // Light traffic first, so heavy chords are drawn on top; ties in a fixed order.
    chords.sort_unstable_by_key(|&(k, t)| (t, k));
    let max = chords.last().map_or(0, |c| c.1);
    let min_positive = chords.iter().map(|c| c.1).find(|&t| t > 0).unwrap_or(0);
    let scale = Scale::auto(min_positive.max(1) as f64, max.max(1) as f64);

    let (w, h) = (opts.width as f32, opts.height as f32);
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let legend_w = 150.0;
    let top = 64.0;
    let cx = (w - legend_w) / 2.0;
    let cy = top + (h - top) / 2.0 - 8.0;
    let radius = ((w - legend_w).min(h - top) / 2.0 - 36.0).max(8.0);
    let angle = |p: u32| std::f32::consts::TAU * p as f32 / n as f32 - std::f32::consts::FRAC_PI_2;
    let at = |p: u32, r: f32| [cx + r * angle(p).cos(), cy + r * angle(p).sin()];

    // Chords as quadratic curves pulled towards the centre, flattened into segments.
    let detail = if chords.len() > 200_000 { 4 } else { 10 };
    let style = |t: u64| -> ([f32; 4], f32) {
        if max == 0 {
            ([0.55, 0.6, 0.7, 0.35], 0.8)
        } else if t == 0 {
            ([0.4, 0.42, 0.48, 0.25], 0.6)
        } else {
            let s = scale.normalise(t as f64);
            let mut c = opts.colormap.sample(s);
            c[3] = 0.35 + 0.6 * s;
            (c, 0.7 + 2.3 * s)
        }
    };
    let curve = |a: u32, b: u32| {
        let (p0, p2) = (at(pos[a as usize], radius), at(pos[b as usize], radius));
        let mid = [(p0[0] + p2[0]) / 2.0, (p0[1] + p2[1]) / 2.0];
        (p0, [cx + (mid[0] - cx) * 0.35, cy + (mid[1] - cy) * 0.35], p2)
    };
    // Dense rings would cover the disc many times over: thin every chord so the ink (length x
    // width) stays within three times the disc's area; chords thinner than a pixel fade instead.
    let ink: f64 = chords
        .iter()
        .map(|&((a, b), t)| {
            let (p0, p1, p2) = curve(a, b);
            let len = (p0[0] - p1[0]).hypot(p0[1] - p1[1]) + (p1[0] - p2[0]).hypot(p1[1] - p2[1]);
            f64::from(len * style(t).1)
        })
        .sum();
    let disc = std::f64::consts::PI * f64::from(radius).powi(2);
    let thin = if ink > 3.0 * disc { (3.0 * disc / ink).max(0.15) as f32 } else { 1.0 };
    let polylines: Vec<Vec<[f32; 2]>> = match &opts.bundle {
        None => chords
            .iter()
            .map(|&((a, b), _)| {
                let (p0, p1, p2) = curve(a, b);
                (0..=detail)
                    .map(|k| {
                        let u = k as f32 / detail as f32;
                        let v = 1.0 - u;
                        [
                            v * v * p0[0] + 2.0 * v * u * p1[0] + u * u * p2[0],
                            v * v * p0[1] + 2.0 * v * u * p1[1] + u * u * p2[1],
                        ]
                    })
                    .collect()
            })
            .collect(),
        Some(params) => {
            let ends: Vec<[f32; 4]> = chords
                .iter()
                .map(|&((a, b), _)| {
                    let (p0, p2) = (at(pos[a as usize], radius), at(pos[b as usize], radius));
                    [p0[0], p0[1], p2[0], p2[1]]
                })
                .collect();
            let frame = UnitFrame::fit(&ends);
            let unit: Vec<[f32; 4]> = ends
                .iter()
                .map(|e| {
                    let (a, b) = (frame.to_unit([e[0], e[1]]), frame.to_unit([e[2], e[3]]));
                    [a[0], a[1], b[0], b[1]]
                })
                .collect();
            // Heavier links pull harder: weight 1 + 999 * traffic / max.
            let weights: Vec<u32> =
                chords.iter().map(|&(_, t)| 1 + (999.0 * t as f64 / max.max(1) as f64).round() as u32).collect();
            let bundled = stages::kde_bundle::run(
                backend.runner().as_mut(),
                &BundleInput { edges: &unit, weights: Some(&weights) },
                params,
            )?;
            (0..chords.len()).map(|e| bundled.edge(e).iter().map(|&p| frame.from_unit(p)).collect()).collect()
        }
    };
    for (&(_, t), line) in chords.iter().zip(&polylines) {
        let (color, width) = style(t);
        let width = width * thin;
        for w in line.windows(2) {
            scene.segment(Blend::Alpha, w[0], w[1], width, color, false);
        }
    }
    // Nodes on the circle, and ring positions as ticks.
    let node_r = (std::f32::consts::TAU * radius / n as f32 * 0.35).clamp(0.6, 3.0);
    for p in 0..n as u32 {
        scene.disc(at(p, radius), node_r, [0.85, 0.86, 0.9, 0.9], false);
    }
    for k in 0..4 {
        let p = (n as u32 * k) / 4;
        let q = at(p, radius + 18.0);
        scene.text(&format!("{p}"), [q[0], q[1] + 4.0], 11.0, Anchor::Centre, TEXT_DIM);
    }

    // Title, subtitle and legend.
    let dims: Vec<String> = topo.extents.iter().map(u32::to_string).collect();
    scene.text(&format!("Torus ring: {}", dataset.name), [16.0, 26.0], 16.0, Anchor::Left, TEXT);
    let sub = format!(
        "{} order · {} torus · {} nodes · {} links · {} {}",
        opts.order.name(),
        dims.join("x"),
        n,
        topo.link_count(),
        format_value(traffic.iter().sum::<u64>() as f64),
        if dataset.link_counter_unit.is_empty() { "events" } else { &dataset.link_counter_unit },
    );
    scene.text(&sub, [16.0, 46.0], 12.0, Anchor::Left, TEXT_DIM);
    let unit = if dataset.link_counter_unit.is_empty() { "traffic" } else { &dataset.link_counter_unit };
    if max > 0 {
        color_bar(
            &mut scene,
            opts.colormap,
            scale,
            &format!("{unit}\nper link pair"),
            [w - legend_w + 16.0, top + 40.0, 18.0, (h - top - 120.0).max(40.0)],
        );
    } else {
        scene.text("no traffic recorded", [w - legend_w + 16.0, top + 40.0], 12.0, Anchor::Left, TEXT_DIM);
    }
    Ok(scene)
}
