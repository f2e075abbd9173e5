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

/// Width of the legend column on the right and height of the title band, in pixels.
const LEGEND_W: f32 = 150.0;
const TOP: f32 = 64.0;

/// Undirected chords (both directions of a link share one chord and add their traffic), light
/// traffic first so heavy chords are drawn on top, and the colour scale over their traffic.
struct Chords {
    list: Vec<((u32, u32), u64)>,
    max: u64,
    scale: Scale,
}

impl Chords {
    fn new(topo: &crate::model::Topology, traffic: &[u64]) -> Self {
        let mut map: HashMap<(u32, u32), u64> = HashMap::with_capacity(topo.link_count() / 2 + 1);
        for (l, &t) in traffic.iter().enumerate() {
            let (s, d) = (topo.links.source[l], topo.links.destination[l]);
            *map.entry((s.min(d), s.max(d))).or_default() += t;
        }
        let mut list: Vec<((u32, u32), u64)> = map.into_iter().collect();
        list.sort_unstable_by_key(|&(k, t)| (t, k));
        let max = list.last().map_or(0, |c| c.1);
        let min_positive = list.iter().map(|c| c.1).find(|&t| t > 0).unwrap_or(0);
        Self { list, max, scale: Scale::auto(min_positive.max(1) as f64, max.max(1) as f64) }
    }

    /// Colour and width of a chord carrying `t`.
    fn style(&self, map: ColorMap, t: u64) -> ([f32; 4], f32) {
        if self.max == 0 {
            ([0.55, 0.6, 0.7, 0.35], 0.8)
        } else if t == 0 {
            ([0.4, 0.42, 0.48, 0.25], 0.6)
        } else {
            let s = self.scale.normalise(t as f64);
            let mut c = map.sample(s);
            c[3] = 0.35 + 0.6 * s;
            (c, 0.7 + 2.3 * s)
        }
    }
}

/// Where the circle is: centre, radius, and node count.
struct Circle {
    cx: f32,
    cy: f32,
    radius: f32,
    n: usize,
}

impl Circle {
    fn at(&self, p: u32, r: f32) -> [f32; 2] {
        let a = std::f32::consts::TAU * p as f32 / self.n as f32 - std::f32::consts::FRAC_PI_2;
        [self.cx + r * a.cos(), self.cy + r * a.sin()]
    }

    /// A chord as a quadratic curve pulled towards the centre: (start, control, end).
    fn curve(&self, pa: u32, pb: u32) -> ([f32; 2], [f32; 2], [f32; 2]) {
        let (p0, p2) = (self.at(pa, self.radius), self.at(pb, self.radius));
        let mid = [(p0[0] + p2[0]) / 2.0, (p0[1] + p2[1]) / 2.0];
        (p0, [self.cx + (mid[0] - self.cx) * 0.35, self.cy + (mid[1] - self.cy) * 0.35], p2)
    }
}

/// The chords' polylines in screen pixels: flattened curves, or bundled by the KDE stage.
fn polylines(
    circle: &Circle,
    pos: &[u32],
    chords: &Chords,
    bundle: Option<&BundleParams>,
    backend: &Backend,
) -> Result<Vec<Vec<[f32; 2]>>, ViewError> {
    let ends = chords.list.iter().map(|&((a, b), _)| (pos[a as usize], pos[b as usize]));
    let Some(params) = bundle else {
        let detail = if chords.list.len() > 200_000 { 4 } else { 10 };
        return Ok(ends
            .map(|(a, b)| {
                let (p0, p1, p2) = circle.curve(a, b);
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
            .collect());
    };
    let ends: Vec<[f32; 4]> = ends
        .map(|(a, b)| {
            let (p0, p2) = (circle.at(a, circle.radius), circle.at(b, circle.radius));
            [p0[0], p0[1], p2[0], p2[1]]
        })
        .collect();
    let frame = UnitFrame::fit(&ends);
    let unit: Vec<[f32; 4]> = ends.iter().map(|&e| frame.edge_to_unit(e)).collect();
    // Heavier links pull harder: weight 1 + 999 * traffic / max.
    let weights: Vec<u32> =
        chords.list.iter().map(|&(_, t)| 1 + (999.0 * t as f64 / chords.max.max(1) as f64).round() as u32).collect();
    let bundled = stages::kde_bundle::run(
        backend.runner().as_mut(),
        &BundleInput { edges: &unit, weights: Some(&weights) },
        params,
    )?;
    Ok((0..unit.len()).map(|e| bundled.edge(e).iter().map(|&p| frame.from_unit(p)).collect()).collect())
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
    let pos = positions(&order_nodes(topo, opts.order));
    let chords = Chords::new(topo, &traffic);

    let (w, h) = (opts.width as f32, opts.height as f32);
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let (legend_w, top) = (LEGEND_W, TOP);
    let circle = Circle {
        cx: (w - legend_w) / 2.0,
        cy: top + (h - top) / 2.0 - 8.0,
        radius: ((w - legend_w).min(h - top) / 2.0 - 36.0).max(8.0),
        n,
    };

    // Dense rings would cover the disc many times over: thin every chord so the ink (length x
    // width) stays within three times the disc's area; chords thinner than a pixel fade instead.
    let ink: f64 = chords
        .list
        .iter()
        .map(|&((a, b), t)| {
            let (p0, p1, p2) = circle.curve(pos[a as usize], pos[b as usize]);
            let len = (p0[0] - p1[0]).hypot(p0[1] - p1[1]) + (p1[0] - p2[0]).hypot(p1[1] - p2[1]);
            f64::from(len * chords.style(opts.colormap, t).1)
        })
        .sum();
    let disc = std::f64::consts::PI * f64::from(circle.radius).powi(2);
    let thin = if ink > 3.0 * disc { (3.0 * disc / ink).max(0.15) as f32 } else { 1.0 };
    let lines = polylines(&circle, &pos, &chords, opts.bundle.as_ref(), backend)?;
    for (&(_, t), line) in chords.list.iter().zip(&lines) {
        let (color, width) = chords.style(opts.colormap, t);
        for seg in line.windows(2) {
            scene.segment(Blend::Alpha, seg[0], seg[1], width * thin, color, false);
        }
    }
    decorate(&mut scene, dataset, &circle, &chords, opts, traffic.iter().sum());
    Ok(scene)
}

/// Nodes, ring positions, title, subtitle and legend.
fn decorate(scene: &mut Scene, dataset: &Dataset, circle: &Circle, chords: &Chords, opts: &RingOptions, total: u64) {
    let Some(topo) = dataset.topology.as_ref() else { return };
    let (w, h) = (opts.width as f32, opts.height as f32);
    let (legend_w, top) = (LEGEND_W, TOP);
    let n = circle.n;
    let node_r = (std::f32::consts::TAU * circle.radius / n as f32 * 0.35).clamp(0.6, 3.0);
    for p in 0..n as u32 {
        scene.disc(circle.at(p, circle.radius), node_r, [0.85, 0.86, 0.9, 0.9], false);
    }
    for k in 0..4 {
        let p = (n as u32 * k) / 4;
        let q = circle.at(p, circle.radius + 18.0);
        scene.text(&format!("{p}"), [q[0], q[1] + 4.0], 11.0, Anchor::Centre, TEXT_DIM);
    }
    let dims: Vec<String> = topo.extents.iter().map(u32::to_string).collect();
    scene.text(&format!("Torus ring: {}", dataset.name), [16.0, 26.0], 16.0, Anchor::Left, TEXT);
    let unit = if dataset.link_counter_unit.is_empty() { "traffic" } else { &dataset.link_counter_unit };
    let bundling = if opts.bundle.is_some() { " · KDE bundled" } else { "" };
    let sub = format!(
        "{} order{bundling} · {} torus · {} nodes · {} links · {} {unit}",
        opts.order.name(),
        dims.join("x"),
        n,
        topo.link_count(),
        format_value(total as f64),
    );
    scene.text(&sub, [16.0, 46.0], 12.0, Anchor::Left, TEXT_DIM);
    if chords.max > 0 {
        let bar = [w - legend_w + 16.0, top + 40.0, 18.0, (h - top - 120.0).max(40.0)];
        color_bar(scene, opts.colormap, chords.scale, &format!("{unit}\nper link pair"), bar);
    } else {
        scene.text("no traffic recorded", [w - legend_w + 16.0, top + 40.0], 12.0, Anchor::Left, TEXT_DIM);
    }
}
