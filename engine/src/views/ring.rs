//! The `ring` view (seeds 001 and 004): torus nodes ordered along a sequential or Hilbert curve
//! and placed on a circle; links drawn as chords curving towards the centre, coloured and
//! weighted by traffic that stage (a) aggregates per link, or coloured by how their blocks relate;
//! bundled by the KDE stage or along seed 004's Hilbert blocks (B-spline stage); one address ring
//! per dimension outside the circle (seed 004 §V-A.3); block boundaries and numbers; a legend.

use std::collections::HashMap;

use crate::Backend;
use crate::layout::blocks::{Blocks, Relation};
use crate::layout::order::{Ordering, order_nodes, positions};
use crate::model::Dataset;
use crate::render::{Anchor, Blend, ColorMap, Scale, Scene};
use crate::stages::bspline::Curve;
use crate::stages::kde_bundle::UnitFrame;
use crate::stages::line_density::DensityInput;
use crate::stages::{self, AxisKey, BundleInput, BundleParams, HeatmapInput};

use super::group::{BundleGroup, clip_segment};
use super::legend::{color_bar, color_bar_of, format_value};
use super::select::{DimFilter, selected_nodes};
use super::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

/// How the ring's chords are bundled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RingBundle {
    /// Plain curves towards the centre.
    None,
    /// Image-space KDE bundling (stage `kde_bundle`).
    Kde(BundleParams),
    /// Seed 004's block-based bundling: channels between two blocks through their group's centre.
    Blocks { beta: f32 },
    /// Holten's hierarchical bundling along the Hilbert block tree.
    Hierarchical { beta: f32 },
}

/// What a chord's colour shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelColour {
    /// Traffic through the colour map (colour bar).
    Traffic,
    /// How its blocks relate: within a block, neighbouring blocks, further apart (seed 004 Fig. 8a).
    Relation,
}

#[derive(Clone, Copy, Debug)]
pub struct RingOptions {
    pub width: u32,
    pub height: u32,
    pub order: Ordering,
    pub colormap: ColorMap,
    pub bundle: RingBundle,
    /// Hilbert blocks: `None` picks 8 or 4 where they divide the ring (else no blocks).
    pub blocks: Option<u32>,
    pub colour: ChannelColour,
    /// One ring per dimension outside the circle, brighter for lower coordinates.
    pub address_rings: bool,
    /// Seed 004's traffic marks: a disc on each channel with traffic, towards its main sender.
    pub traffic_marks: bool,
    /// Only the traffic sent in `[from, to)` (trace ticks); chords' opacity then follows their
    /// traffic in the slice and silent chords are drawn grey (seed 001 Figs. 14 and 16).
    pub time_slice: Option<(u64, u64)>,
    /// Node filter (seed 004 §V-B.2): only this node's channels, their marks, and its address.
    pub node: Option<u32>,
    /// Dimension-value filter (seed 001 Fig. 10, seed 004 §V-B.2): only the channels of nodes
    /// with these coordinates, and their addresses; with `node`, their intersection.
    pub select: Option<DimFilter>,
    /// Group filter (seed 004 §V-B.2): only the channels of these bundles (pairs of blocks).
    pub group: Option<BundleGroup>,
    /// Message tracking (seed 001 Fig. 13): the hops of the message node `track` sent first
    /// (the messages tagged with it), coloured by the step they were sent at, over the other
    /// channels in grey.
    pub track: Option<u32>,
    /// Zoom into this rectangle `[x0, y0, x1, y1]` of the unzoomed picture (pixels): it is
    /// scaled to fill the plot; labels and legend keep their size.
    pub zoom: Option<[f32; 4]>,
}

impl Default for RingOptions {
    fn default() -> Self {
        Self {
            width: 1024,
            height: 768,
            order: Ordering::Hilbert,
            colormap: ColorMap::Viridis,
            bundle: RingBundle::None,
            blocks: None,
            colour: ChannelColour::Traffic,
            address_rings: true,
            traffic_marks: true,
            time_slice: None,
            node: None,
            select: None,
            group: None,
            track: None,
            zoom: None,
        }
    }
}

/// Chord colours by block relation: Okabe and Ito's palette (safe for colour-blind readers), with
/// seed 004's purple within blocks and earth-yellow between neighbours.
pub const RELATION_COLOURS: [([f32; 4], &str); 5] = [
    ([0.80, 0.47, 0.65, 0.6], "same block"),
    ([0.90, 0.62, 0.0, 0.6], "next blocks"),
    ([0.34, 0.71, 0.91, 0.6], "2 blocks apart"),
    ([0.0, 0.62, 0.45, 0.6], "3 blocks apart"),
    ([0.94, 0.89, 0.26, 0.6], "4+ blocks apart"),
];

fn relation_colour(r: Relation) -> [f32; 4] {
    let k = match r {
        Relation::Intra => 0,
        Relation::Adjacent => 1,
        Relation::Remote(d) => (d as usize).min(4),
    };
    RELATION_COLOURS[k].0
}

/// Traffic per directed link, summed over all link-counter samples by stage (a) on `backend`.
pub fn link_traffic(dataset: &Dataset, backend: &Backend) -> Result<Vec<u64>, ViewError> {
    link_traffic_in(dataset, backend, None)
}

/// [`link_traffic`] over the samples with `from <= time < to` only, where a slice is given.
pub fn link_traffic_in(dataset: &Dataset, backend: &Backend, slice: Option<(u64, u64)>) -> Result<Vec<u64>, ViewError> {
    let topo = dataset.topology.as_ref().ok_or_else(|| ViewError::Unsupported("no topology".into()))?;
    let all = &dataset.trace.link_counters;
    let sliced;
    let lc = match slice {
        None => all,
        Some((from, to)) => {
            let keep: Vec<usize> = (0..all.time.len()).filter(|&i| (from..to).contains(&all.time[i])).collect();
            sliced = crate::model::Counters {
                entity: keep.iter().map(|&i| all.entity[i]).collect(),
                time: keep.iter().map(|&i| all.time[i]).collect(),
                value: keep.iter().map(|&i| all.value[i]).collect(),
            };
            &sliced
        }
    };
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
pub(crate) const LEGEND_W: f32 = 150.0;
pub(crate) const TOP: f32 = 64.0;

/// Undirected chords (both directions of a link share one chord and add their traffic), light
/// traffic first so heavy chords are drawn on top, and the colour scale over their traffic.
pub(crate) struct Chords {
    pub(crate) list: Vec<((u32, u32), u64)>,
    /// Per chord of `list`, the part of its traffic sent from its lower node to its higher.
    pub(crate) upward: Vec<u64>,
    pub(crate) max: u64,
    pub(crate) scale: Scale,
}

impl Chords {
    pub(crate) fn new(topo: &crate::model::Topology, traffic: &[u64]) -> Self {
        let mut map: HashMap<(u32, u32), (u64, u64)> = HashMap::with_capacity(topo.link_count() / 2 + 1);
        for (l, &t) in traffic.iter().enumerate() {
            let (s, d) = (topo.links.source[l], topo.links.destination[l]);
            let entry = map.entry((s.min(d), s.max(d))).or_default();
            entry.0 += t;
            entry.1 += if s < d { t } else { 0 };
        }
        let mut both: Vec<((u32, u32), (u64, u64))> = map.into_iter().collect();
        both.sort_unstable_by_key(|&(k, (t, _))| (t, k));
        let upward = both.iter().map(|c| c.1.1).collect();
        let list: Vec<((u32, u32), u64)> = both.into_iter().map(|(k, (t, _))| (k, t)).collect();
        let mut chords = Self { list, upward, max: 0, scale: Scale::auto(1.0, 1.0) };
        chords.rescale();
        chords
    }

    /// Sets `max` and the colour scale from `list` (sorted by traffic).
    fn rescale(&mut self) {
        self.max = self.list.last().map_or(0, |c| c.1);
        let min_positive = self.list.iter().map(|c| c.1).find(|&t| t > 0).unwrap_or(0);
        self.scale = Scale::auto(min_positive.max(1) as f64, self.max.max(1) as f64);
    }

    /// Keeps the chords between nodes `a < b` for which `keep(a, b)`; the scale follows them.
    pub(crate) fn retain(&mut self, keep: impl Fn(u32, u32) -> bool) {
        let (list, upward): (Vec<_>, Vec<_>) =
            self.list.iter().zip(&self.upward).filter(|(c, _)| keep(c.0.0, c.0.1)).map(|(c, u)| (*c, *u)).unzip();
        (self.list, self.upward) = (list, upward);
        self.rescale();
    }

    /// Colour and width of a chord carrying `t`.
    pub(crate) fn style(&self, map: ColorMap, t: u64) -> ([f32; 4], f32) {
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

/// Where the circle is: centre, radius, node count, and the zoom factor it was drawn at.
pub(crate) struct Circle {
    pub(crate) cx: f32,
    pub(crate) cy: f32,
    pub(crate) radius: f32,
    pub(crate) n: usize,
    pub(crate) zoom: f32,
}

impl Circle {
    pub(crate) fn at(&self, p: u32, r: f32) -> [f32; 2] {
        self.at_f(p as f32, r)
    }

    /// A point at ring position `p` (fractional between nodes) and radius `r` in pixels.
    pub(crate) fn at_f(&self, p: f32, r: f32) -> [f32; 2] {
        let a = std::f32::consts::TAU * p / self.n as f32 - std::f32::consts::FRAC_PI_2;
        [self.cx + r * a.cos(), self.cy + r * a.sin()]
    }

    /// A chord as a quadratic curve pulled towards the centre: (start, control, end).
    pub(crate) fn curve(&self, pa: u32, pb: u32) -> ([f32; 2], [f32; 2], [f32; 2]) {
        let (p0, p2) = (self.at(pa, self.radius), self.at(pb, self.radius));
        let mid = [(p0[0] + p2[0]) / 2.0, (p0[1] + p2[1]) / 2.0];
        (p0, [self.cx + (mid[0] - self.cx) * 0.35, self.cy + (mid[1] - self.cy) * 0.35], p2)
    }
}

/// The chords' polylines in screen pixels: flattened curves, or bundled.
fn polylines(
    circle: &Circle,
    pos: &[u32],
    chords: &Chords,
    bundle: RingBundle,
    blocks: Option<&Blocks>,
    backend: &Backend,
) -> Result<Vec<Vec<[f32; 2]>>, ViewError> {
    let ends = chords.list.iter().map(|&((a, b), _)| (pos[a as usize], pos[b as usize]));
    let place = |p: f32, r: f32| circle.at_f(p, circle.radius * r);
    let (polygons, beta) = match bundle {
        RingBundle::None => return Ok(plain_curves(circle, ends, chords.list.len())),
        RingBundle::Kde(params) => return kde_curves(circle, ends, chords, &params, backend),
        RingBundle::Blocks { beta } | RingBundle::Hierarchical { beta } => {
            let blocks = blocks.ok_or_else(|| {
                ViewError::Unsupported(format!("block bundling needs Hilbert blocks; {} nodes have none", circle.n))
            })?;
            if matches!(bundle, RingBundle::Blocks { .. }) {
                (blocks.group_polygons(&ends.collect::<Vec<_>>(), &place), beta)
            } else {
                let mut polygons = stages::ControlPolygons::new();
                for (a, b) in ends {
                    polygons.push(blocks.tree_polygon(a, b, &place));
                }
                (polygons, beta)
            }
        }
    };
    let curve =
        Curve { samples: if chords.list.len() > 200_000 { 12 } else { 24 }, beta: beta.clamp(0.0, 1.0), degree: 3 };
    let bundled = stages::bspline::run(backend.runner().as_mut(), &polygons, curve)?;
    Ok((0..bundled.len()).map(|e| bundled.edge(e).to_vec()).collect())
}

/// Quadratic curves pulled towards the centre.
fn plain_curves(circle: &Circle, ends: impl Iterator<Item = (u32, u32)>, count: usize) -> Vec<Vec<[f32; 2]>> {
    let detail = if count > 200_000 { 4 } else { 10 };
    ends.map(|(a, b)| flatten(circle.curve(a, b), detail)).collect()
}

/// A quadratic curve as `detail` straight pieces.
pub(crate) fn flatten((p0, p1, p2): ([f32; 2], [f32; 2], [f32; 2]), detail: u32) -> Vec<[f32; 2]> {
    (0..=detail)
        .map(|k| {
            let u = k as f32 / detail as f32;
            let v = 1.0 - u;
            [v * v * p0[0] + 2.0 * v * u * p1[0] + u * u * p2[0], v * v * p0[1] + 2.0 * v * u * p1[1] + u * u * p2[1]]
        })
        .collect()
}

/// Chords bundled by the KDE stage; heavier links pull harder (weight 1 + 999 * traffic / max).
fn kde_curves(
    circle: &Circle,
    ends: impl Iterator<Item = (u32, u32)>,
    chords: &Chords,
    params: &BundleParams,
    backend: &Backend,
) -> Result<Vec<Vec<[f32; 2]>>, ViewError> {
    let ends: Vec<[f32; 4]> = ends
        .map(|(a, b)| {
            let (p0, p2) = (circle.at(a, circle.radius), circle.at(b, circle.radius));
            [p0[0], p0[1], p2[0], p2[1]]
        })
        .collect();
    let frame = UnitFrame::fit(&ends);
    let unit: Vec<[f32; 4]> = ends.iter().map(|&e| frame.edge_to_unit(e)).collect();
    let weights: Vec<u32> =
        chords.list.iter().map(|&(_, t)| 1 + (999.0 * t as f64 / chords.max.max(1) as f64).round() as u32).collect();
    let bundled = stages::kde_bundle::run(
        backend.runner().as_mut(),
        &BundleInput { edges: &unit, weights: Some(&weights) },
        params,
    )?;
    Ok((0..unit.len()).map(|e| bundled.edge(e).iter().map(|&p| frame.from_unit(p)).collect()).collect())
}

/// The blocks of `opts` over `n` nodes.
fn resolve_blocks(opts: &RingOptions, n: usize) -> Result<Option<Blocks>, ViewError> {
    let n = u32::try_from(n).map_err(|_| ViewError::Unsupported(format!("{n} nodes are too many for a ring")))?;
    match opts.blocks {
        None => Ok(Blocks::auto(n)),
        Some(m) => Blocks::new(n, m).map(Some).map_err(|e| ViewError::Unsupported(format!("--blocks {m}: {e}"))),
    }
}

/// Width of one address ring and the gap between rings, in pixels (scaled with the zoom).
fn ring_band(circle: &Circle) -> (f32, f32) {
    ((circle.radius / circle.zoom * 0.025).clamp(2.5, 7.0) * circle.zoom, 1.5 * circle.zoom)
}

/// The plot's rectangle `[x0, y0, x1, y1]`: left of the legend, below the title.
fn plot_rect(opts: &RingOptions) -> [f32; 4] {
    [0.0, TOP, opts.width as f32 - LEGEND_W, opts.height as f32]
}

/// Most a zoom may magnify (or shrink, inversely).
const MAX_ZOOM: f32 = 1000.0;

/// The zoom of `opts` as a scale `s` and offset `o`: an unzoomed picture point `p` is drawn at
/// `p * s + o`. The zoom rectangle's centre goes to the plot's centre, and the rectangle fills
/// the plot in one direction.
fn zoom_transform(opts: &RingOptions) -> Result<(f32, [f32; 2]), ViewError> {
    let Some([x0, y0, x1, y1]) = opts.zoom else { return Ok((1.0, [0.0, 0.0])) };
    let [px0, py0, px1, py1] = plot_rect(opts);
    let (rw, rh) = ((x1 - x0).abs(), (y1 - y0).abs());
    let s = ((px1 - px0) / rw).min((py1 - py0) / rh);
    if !(rw >= 4.0 && rh >= 4.0 && s.is_finite() && (1.0 / MAX_ZOOM..=MAX_ZOOM).contains(&s)) {
        return Err(ViewError::Unsupported(format!(
            "zoom rectangle {x0},{y0},{x1},{y1} must be at least 4x4 pixels and magnify at most {MAX_ZOOM} times"
        )));
    }
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    Ok((s, [(px0 + px1) / 2.0 - cx * s, (py0 + py1) / 2.0 - cy * s]))
}

/// Whether `opts`' zoom rectangle is one [`ring_scene`] accepts.
pub fn zoom_is_valid(opts: &RingOptions) -> bool {
    zoom_transform(opts).is_ok()
}

/// The unzoomed picture point drawn at `q` under `opts`' zoom (for zooming further in).
pub fn ring_unzoom(opts: &RingOptions, q: [f32; 2]) -> [f32; 2] {
    let (s, o) = zoom_transform(opts).unwrap_or((1.0, [0.0, 0.0]));
    [(q[0] - o[0]) / s, (q[1] - o[1]) / s]
}

/// The circle of an `n`-node ring in a picture of `opts`' size, and the outer radius of the
/// address rings around it, both zoomed.
fn place_circle(n: usize, dims: usize, opts: &RingOptions) -> Result<(Circle, f32), ViewError> {
    let (w, h) = (opts.width as f32, opts.height as f32);
    let mut circle = Circle { cx: (w - LEGEND_W) / 2.0, cy: TOP + (h - TOP) / 2.0 - 8.0, radius: 1.0, n, zoom: 1.0 };
    let outer = (w - LEGEND_W).min(h - TOP) / 2.0 - 30.0;
    let (band, gap) = ring_band(&Circle { radius: outer, ..circle });
    let rings = if opts.address_rings { dims as f32 * (band + gap) + 4.0 } else { 0.0 };
    circle.radius = (outer - rings).max(8.0);
    let (s, o) = zoom_transform(opts)?;
    let zoomed = Circle { cx: circle.cx * s + o[0], cy: circle.cy * s + o[1], radius: circle.radius * s, n, zoom: s };
    Ok((zoomed, outer * s))
}

/// Picking: the node whose place on the ring (or address rings) is nearest to the picture point
/// `p`, if `p` lies on the ring's band, from a little inside the circle to just outside the
/// address rings.
pub fn ring_node_at(topo: &crate::model::Topology, opts: &RingOptions, p: [f32; 2]) -> Option<u32> {
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

/// Picking on the address rings (seed 004 §V-B.2's dimension-value filter): the dimension of the
/// address ring under the picture point `p` (0 the innermost) and the node at that place, if `p`
/// lies on one.
pub fn ring_address_at(topo: &crate::model::Topology, opts: &RingOptions, p: [f32; 2]) -> Option<(usize, u32)> {
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

/// Above this many chords (coloured by traffic), the chords' curves are aggregated by the
/// line-density stage and drawn as a density image instead of one by one: the 16^5 torus has
/// 5.2 million chords, far more than the disc has pixels.
pub const DENSE_CHORDS: usize = 100_000;

/// Whether the chords are drawn as a density image.
fn is_dense(chords: &Chords, opts: &RingOptions) -> bool {
    chords.list.len() > DENSE_CHORDS && opts.colour == ChannelColour::Traffic
}

/// The chords' curves through the line-density stage over the circle's bounding square (within
/// `view`, the visible plot, when zoomed), each segment weighted by its chord's traffic: each
/// pixel coloured by the mean traffic of the chords through it (or `grey` for all), and more
/// opaque where more chords cross.
fn chord_density(
    scene: &mut Scene,
    ring: &Prepared,
    view: Option<[f32; 4]>,
    map: ColorMap,
    grey: Option<[f32; 4]>,
    backend: &Backend,
) -> Result<(), ViewError> {
    let (chords, circle) = (&ring.chords, &ring.circle);
    let mut origin = [(circle.cx - circle.radius).floor() - 2.0, (circle.cy - circle.radius).floor() - 2.0];
    let side = (2.0 * circle.radius).ceil() as u32 + 5;
    let (mut width, mut height) = (side, side);
    if let Some([x0, y0, x1, y1]) = view {
        let end = [origin[0] + width as f32, origin[1] + height as f32];
        origin = [origin[0].max(x0.floor()), origin[1].max(y0.floor())];
        width = (end[0].min(x1.ceil()) - origin[0]).max(1.0) as u32;
        height = (end[1].min(y1.ceil()) - origin[1]).max(1.0) as u32;
    }
    let clip = [-2.0, -2.0, width as f32 + 2.0, height as f32 + 2.0];
    let count: usize = ring.lines.iter().map(|l| l.len().saturating_sub(1)).sum();
    let (mut segments, mut weights) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for (&(_, t), line) in chords.list.iter().zip(&ring.lines) {
        for seg in line.windows(2) {
            let (a, b) =
                ([seg[0][0] - origin[0], seg[0][1] - origin[1]], [seg[1][0] - origin[0], seg[1][1] - origin[1]]);
            // Zoomed, curves reach far outside the image: only their visible parts are walked.
            let Some((a, b)) = (if view.is_some() { clip_segment(a, b, clip) } else { Some((a, b)) }) else {
                continue;
            };
            segments.push([a[0], a[1], b[0], b[1]]);
            weights.push(u32::try_from(t).unwrap_or(u32::MAX));
        }
    }
    let input = DensityInput { segments: &segments, weights: Some(&weights), width, height };
    let image = stages::line_density::run(backend.runner().as_mut(), &input)?;
    let colour = |mean: f64| match grey {
        Some(g) => g,
        None if chords.max == 0 => [0.55, 0.6, 0.7, 1.0],
        None => map.sample(chords.scale.normalise(mean)),
    };
    super::density::mean_value_pixels(scene, &image, origin, colour);
    Ok(())
}

/// What the ring draws, computed before drawing; shared by [`ring_scene`] and picking.
pub(crate) struct Prepared<'a> {
    pub(crate) topo: &'a crate::model::Topology,
    pub(crate) blocks: Option<Blocks>,
    /// The node and dimension-value filters' nodes.
    pub(crate) selected: Option<Vec<u32>>,
    /// Ring position of each node.
    pub(crate) pos: Vec<u32>,
    pub(crate) chords: Chords,
    pub(crate) circle: Circle,
    /// Per chord of `chords`, its curve in picture pixels.
    pub(crate) lines: Vec<Vec<[f32; 2]>>,
    /// Width factor of chords, below 1 where they would cover the disc many times over.
    pub(crate) thin: f32,
}

/// Checks `opts` against the dataset, filters the chords and computes their curves.
pub(crate) fn prepare<'a>(
    dataset: &'a Dataset,
    backend: &Backend,
    opts: &RingOptions,
) -> Result<Prepared<'a>, ViewError> {
    let topo = super::torus(dataset, "the ring view needs")?;
    let n = topo.node_count();
    let blocks = resolve_blocks(opts, n)?;
    if opts.colour == ChannelColour::Relation && blocks.is_none() {
        return Err(ViewError::Unsupported(format!("colouring by block relation needs blocks; {n} nodes have none")));
    }
    let selected = selected_nodes(topo, opts.node, opts.select.as_ref()).map_err(ViewError::Unsupported)?;
    super::check_slice(opts.time_slice)?;
    let (circle, _) = place_circle(n, topo.dims(), opts)?;
    let traffic = link_traffic_in(dataset, backend, opts.time_slice)?;
    let pos = positions(&order_nodes(topo, opts.order));
    let mut chords = Chords::new(topo, &traffic);
    if let Some(nodes) = &selected {
        let mut keep = vec![false; n];
        for &v in nodes {
            keep[v as usize] = true;
        }
        chords.retain(|a, b| keep[a as usize] || keep[b as usize]);
    }
    if let Some(group) = &opts.group {
        let b = blocks.as_ref().ok_or_else(|| {
            ViewError::Unsupported(format!("the group filter needs Hilbert blocks; {n} nodes have none"))
        })?;
        if let Some(m) = group.max_block().filter(|&m| m >= b.count()) {
            return Err(ViewError::Unsupported(format!(
                "group {} names block {}, but the ring has {} blocks",
                group.describe(),
                m + 1,
                b.count()
            )));
        }
        chords.retain(|x, y| group.contains(b.of(pos[x as usize]), b.of(pos[y as usize])));
    }

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
    let lines = polylines(&circle, &pos, &chords, opts.bundle, blocks.as_ref(), backend)?;
    Ok(Prepared { topo, blocks, selected, pos, chords, circle, lines, thin })
}

/// Group brushing: the bundles (block pairs) of the chords whose curves, as `opts` draws them,
/// cross the picture rectangle `[x0, y0, x1, y1]`; `None` without blocks or where none cross.
/// The group filter of `opts` is left out, so a new brush replaces the group.
pub fn ring_bundles_in(
    dataset: &Dataset,
    backend: &Backend,
    opts: &RingOptions,
    [x0, y0, x1, y1]: [f32; 4],
) -> Result<Option<BundleGroup>, ViewError> {
    let ring = prepare(dataset, backend, &RingOptions { group: None, ..*opts })?;
    let Some(blocks) = &ring.blocks else { return Ok(None) };
    let rect = [x0.min(x1), y0.min(y1), x0.max(x1), y0.max(y1)];
    let mut group = BundleGroup::default();
    for (&((a, b), _), line) in ring.chords.list.iter().zip(&ring.lines) {
        if line.windows(2).any(|s| clip_segment(s[0], s[1], rect).is_some()) {
            group.insert(blocks.of(ring.pos[a as usize]), blocks.of(ring.pos[b as usize]));
        }
    }
    Ok((!group.is_empty()).then_some(group))
}

/// Builds the ring scene.
pub fn ring_scene(dataset: &Dataset, backend: &Backend, opts: &RingOptions) -> Result<Scene, ViewError> {
    let ring = prepare(dataset, backend, opts)?;
    let hops = match opts.track {
        Some(origin) => Some(super::track::hops(dataset, origin)?),
        None => None,
    };
    let (topo, chords, circle, pos) = (ring.topo, &ring.chords, &ring.circle, &ring.pos);
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let dense = is_dense(chords, opts);
    // Tracking a message, the other channels are context, in grey.
    let context = [0.4, 0.42, 0.48, 0.22];
    if dense {
        let view = opts.zoom.map(|_| plot_rect(opts));
        chord_density(&mut scene, &ring, view, opts.colormap, hops.as_ref().map(|_| [0.26, 0.27, 0.31, 1.0]), backend)?;
    }
    for (&((a, b), t), line) in chords.list.iter().zip(&ring.lines).filter(|_| !dense) {
        let (mut color, width) = chords.style(opts.colormap, t);
        if opts.time_slice.is_some() && t > 0 {
            // Opacity proportional to the chord's traffic in the slice (seed 001 Fig. 14).
            color[3] = 0.12 + 0.88 * (t as f32 / chords.max as f32);
        }
        if let (ChannelColour::Relation, Some(blocks)) = (opts.colour, &ring.blocks) {
            color = relation_colour(blocks.relation(pos[a as usize], pos[b as usize]));
        }
        if hops.is_some() {
            color = context;
        }
        for seg in line.windows(2) {
            scene.segment(Blend::Alpha, seg[0], seg[1], width * ring.thin, color, false);
        }
    }
    let marks = if opts.traffic_marks && hops.is_none() {
        traffic_marks(&mut scene, chords, &ring.lines, circle)
    } else {
        None
    };
    let track = hops.as_ref().map(|h| super::track::draw(&mut scene, h, circle, pos, opts.colormap));
    let rim = if opts.address_rings {
        address_rings(&mut scene, topo, pos, circle, ring.selected.as_deref())
    } else {
        circle.radius + 4.0 * circle.zoom
    };
    if let Some(blocks) = &ring.blocks {
        block_marks(&mut scene, blocks, circle, rim);
    } else {
        for k in 0..4 {
            let p = (circle.n as u32 * k) / 4;
            let q = circle.at(p, rim + 13.0);
            scene.text(&format!("{p}"), [q[0], q[1] + 4.0], 11.0, Anchor::Centre, TEXT_DIM);
        }
    }
    if let Some(t) = &track {
        super::track::label_ends(&mut scene, t, circle, rim);
    }
    decorate(&mut scene, dataset, &ring, opts, Decor { marks, track });
    Ok(scene)
}

/// Most traffic marks drawn (the heaviest channels'); more would cover the disc.
const MAX_MARKS: usize = 50_000;
/// Colour of traffic marks (Okabe and Ito's vermillion) and of their outline.
const MARK_COLOUR: [f32; 4] = [0.84, 0.37, 0.0, 0.9];
const MARK_OUTLINE: [f32; 4] = [0.07, 0.08, 0.1, 0.9];

/// Radius of the largest traffic mark on a circle of `radius` with marks of `relative` sizes
/// (traffic over the largest's): at most 2.8% of the radius, and small enough that all marks
/// together cover at most 15% of the disc.
fn largest_mark(radius: f32, relative: f64) -> f32 {
    let fit = f64::from(radius) * (0.15 / relative.max(1.0)).sqrt();
    (fit as f32).min(radius * 0.028).clamp(1.5, 10.0)
}

/// Where the mark of channel `a`-`b` (a < b, its line running from `a` to `b`) sits along the
/// line, when `a` sends `up` of its `t` packets: 10% of the way from the main sender for one-way
/// traffic, 50% for balanced, plus a fixed jitter of at most ±3% per channel.
fn mark_fraction(a: u32, b: u32, up: u64, t: u64) -> f32 {
    let share = up.max(t - up) as f32 / t as f32;
    let jitter = ((a.wrapping_mul(2_654_435_761) ^ b.wrapping_mul(40_503)) % 1000) as f32 / 1000.0 - 0.5;
    let u = 0.5 - 0.8 * (share - 0.5) + 0.06 * jitter;
    if up * 2 >= t { u } else { 1.0 - u }
}

/// The point at fraction `u` of a polyline's length.
fn along(line: &[[f32; 2]], u: f32) -> [f32; 2] {
    let len: f32 = line.windows(2).map(|s| (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1])).sum();
    let mut left = u.clamp(0.0, 1.0) * len;
    for s in line.windows(2) {
        let l = (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1]);
        if left <= l && l > 0.0 {
            let f = left / l;
            return [s[0][0] + f * (s[1][0] - s[0][0]), s[0][1] + f * (s[1][1] - s[0][1])];
        }
        left -= l;
    }
    line.last().copied().unwrap_or([0.0, 0.0])
}

/// Seed 004 §V-B.1.a: on every channel with traffic, a disc whose area is proportional to the
/// channel's packets, placed along its curve towards the node that sends most of them: at 10% of
/// the way for one-way traffic, half way for balanced traffic, with a small fixed jitter per
/// channel against overplotting. Returns the largest mark's radius and traffic, for the legend.
fn traffic_marks(scene: &mut Scene, chords: &Chords, lines: &[Vec<[f32; 2]>], circle: &Circle) -> Option<(f32, u64)> {
    if chords.max == 0 {
        return None;
    }
    let first = chords.list.len().saturating_sub(MAX_MARKS);
    let relative: f64 = chords.list[first..].iter().map(|c| c.1 as f64 / chords.max as f64).sum();
    let r_max = largest_mark(circle.radius, relative);
    for (k, (&((a, b), t), line)) in chords.list.iter().zip(lines).enumerate().skip(first) {
        if t == 0 || line.len() < 2 {
            continue;
        }
        let at = along(line, mark_fraction(a, b, chords.upward[k], t));
        let r = (r_max * (t as f32 / chords.max as f32).sqrt()).max(0.9);
        scene.disc(at, r + 0.8, MARK_OUTLINE, false);
        scene.disc(at, r, MARK_COLOUR, false);
    }
    Some((r_max, chords.max))
}

/// Seed 004's address rings: ring `d` (inner to outer) shows every node's coordinate in
/// dimension `d`, brighter for lower values. Each ring is drawn as radial strokes about a pixel
/// apart (square ends, whatever the node count); where a stroke covers several nodes it shows
/// their mean. Returns the outer radius.
/// With a node filter, only that node's address is drawn: one wider stroke per ring.
fn address_rings(
    scene: &mut Scene,
    topo: &crate::model::Topology,
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

/// Block boundaries (radial ticks through the rings) and block numbers outside them.
fn block_marks(scene: &mut Scene, blocks: &Blocks, circle: &Circle, rim: f32) {
    let s = blocks.size();
    for k in 0..blocks.count() {
        let edge = (k * s) as f32 - 0.5;
        scene.segment(
            Blend::Alpha,
            circle.at_f(edge, circle.radius - 3.0),
            circle.at_f(edge, rim + 5.0),
            1.2,
            TEXT_DIM,
            false,
        );
        let q = circle.at_f((k * s) as f32 + s as f32 / 2.0 - 0.5, rim + 13.0);
        scene.text(&format!("{}", k + 1), [q[0], q[1] + 4.0], 11.0, Anchor::Centre, TEXT_DIM);
    }
}

/// What the legend tells beside the chords: traffic marks (largest radius and traffic) and a
/// tracked message.
struct Decor {
    marks: Option<(f32, u64)>,
    track: Option<super::track::Tracked>,
}

/// Nodes, title, subtitle and legends (over an opaque title band and legend column when
/// zoomed, so the zoomed circle does not run under them).
fn decorate(scene: &mut Scene, dataset: &Dataset, ring: &Prepared, opts: &RingOptions, decor: Decor) {
    let (circle, chords, blocks, marks) = (&ring.circle, &ring.chords, ring.blocks.as_ref(), decor.marks);
    let Some(topo) = dataset.topology.as_ref() else { return };
    let (w, h) = (opts.width as f32, opts.height as f32);
    let (legend_w, top) = (LEGEND_W, TOP);
    let n = circle.n;
    let node_r =
        (std::f32::consts::TAU * circle.radius / n as f32 * 0.35).clamp(0.6, 3.0 * circle.zoom.clamp(1.0, 2.0));
    for p in 0..n as u32 {
        scene.disc(circle.at(p, circle.radius), node_r, [0.85, 0.86, 0.9, 0.9], false);
    }
    if opts.zoom.is_some() {
        let bg = [BACKGROUND[0], BACKGROUND[1], BACKGROUND[2], 1.0];
        scene.rect([0.0, 0.0], [w, top], bg, true);
        scene.rect([w - legend_w, top], [w, h], bg, true);
    }
    scene.text(&format!("Torus ring: {}", dataset.name), [16.0, 26.0], 16.0, Anchor::Left, TEXT);
    let unit = super::traffic_unit(dataset);
    scene.text(&subtitle(dataset, topo, ring, opts, decor.track.as_ref()), [16.0, 46.0], 12.0, Anchor::Left, TEXT_DIM);
    let x = w - legend_w + 16.0;
    let mut y = top + 40.0;
    if let Some(t) = &decor.track {
        let bar_h = (h - top - 200.0).clamp(40.0, 240.0);
        let scale = Scale { lo: t.first as f64, hi: t.last as f64, log: false };
        let map = opts.colormap;
        color_bar_of(scene, |a| super::track::age_colour(map, a), scale, "hop sent at\nstep", [x, y, 18.0, bar_h]);
        y += bar_h + 40.0;
        scene.text("other channels", [x + 20.0, y], 11.0, Anchor::Left, TEXT_DIM);
        scene.rect([x, y - 6.0], [x + 14.0, y + 2.0], [0.4, 0.42, 0.48, 1.0], true);
        y += 30.0;
    } else if opts.colour == ChannelColour::Relation {
        scene.text("channels", [x, y - 14.0], 12.0, Anchor::Left, TEXT);
        y += 4.0;
        let kinds = blocks.map_or(2, |b| (b.count() / 2 + 1).min(5) as usize);
        for (colour, label) in &RELATION_COLOURS[..kinds] {
            scene.rect([x, y - 5.0], [x + 14.0, y + 5.0], [colour[0], colour[1], colour[2], 1.0], true);
            scene.text(label, [x + 20.0, y + 4.0], 11.0, Anchor::Left, TEXT_DIM);
            y += 18.0;
        }
        y += 10.0;
    } else if chords.max > 0 {
        let room = if marks.is_some() { 290.0 } else { 200.0 };
        let bar_h = (h - top - room).max(40.0);
        color_bar(scene, opts.colormap, chords.scale, &format!("{unit}\nper link pair"), [x, y, 18.0, bar_h]);
        y += bar_h + 40.0;
        if is_dense(chords, opts) {
            let lines = [
                format!("as density of {}", format_value(chords.list.len() as f64)),
                "chords: the mean".into(),
                "per pixel; opacity".into(),
                "= chords crossing".into(),
            ];
            for (k, line) in lines.iter().enumerate() {
                scene.text(line, [x, y - 8.0 + 13.0 * k as f32], 11.0, Anchor::Left, TEXT_DIM);
            }
            y += 52.0;
        }
    } else {
        scene.text("no traffic recorded", [x, y], 12.0, Anchor::Left, TEXT_DIM);
        y += 30.0;
    }
    if let Some((r_max, most)) = marks.filter(|_| y + 90.0 < h) {
        scene.text("traffic marks", [x, y], 12.0, Anchor::Left, TEXT);
        scene.text("area ∝ packets,", [x, y + 15.0], 11.0, Anchor::Left, TEXT_DIM);
        scene.text("near main sender", [x, y + 28.0], 11.0, Anchor::Left, TEXT_DIM);
        let cy = y + 38.0 + r_max;
        for (k, f) in [1.0f32, 0.25].iter().enumerate() {
            let r = r_max * f.sqrt();
            let cx = x + r_max + k as f32 * 62.0;
            scene.disc([cx, cy], r + 0.8, MARK_OUTLINE, true);
            scene.disc([cx, cy], r, MARK_COLOUR, true);
            let label = format_value(most as f64 * f64::from(*f));
            scene.text(&label, [cx + r_max + 4.0, cy + 4.0], 11.0, Anchor::Left, TEXT_DIM);
        }
        y += 2.0 * r_max + 58.0;
    }
    if opts.address_rings && y + 60.0 < h {
        let letters: Vec<String> = (0..topo.dims()).map(|d| dim_letter(d, topo.dims())).collect();
        scene.text("address rings", [x, y], 12.0, Anchor::Left, TEXT);
        scene.text(&format!("{} (in→out)", letters.join(" ")), [x, y + 16.0], 11.0, Anchor::Left, TEXT_DIM);
        for k in 0..20 {
            let v = 0.92 - 0.74 * k as f32 / 19.0;
            let x0 = x + k as f32 * 5.0;
            scene.rect([x0, y + 24.0], [x0 + 5.0, y + 34.0], [v, v, v * 1.02, 1.0], true);
        }
        scene.text("0", [x, y + 48.0], 11.0, Anchor::Left, TEXT_DIM);
        scene.text("max coordinate", [x + 100.0, y + 48.0], 11.0, Anchor::Right, TEXT_DIM);
    }
}

/// The line under the title: order, blocks, bundling, filters, torus and traffic.
fn subtitle(
    dataset: &Dataset,
    topo: &crate::model::Topology,
    ring: &Prepared,
    opts: &RingOptions,
    track: Option<&super::track::Tracked>,
) -> String {
    let (circle, chords, blocks) = (&ring.circle, &ring.chords, ring.blocks.as_ref());
    // Every link belongs to one chord, so the chords' traffic sums to the links'.
    let total: u64 = chords.list.iter().map(|c| c.1).sum();
    let n = circle.n;
    let dims: Vec<String> = topo.extents.iter().map(u32::to_string).collect();
    let unit = super::traffic_unit(dataset);
    let bundling = match opts.bundle {
        RingBundle::None => String::new(),
        RingBundle::Kde(_) => " · KDE bundled".into(),
        RingBundle::Blocks { beta } => format!(" · block bundled (β {beta:.2})"),
        RingBundle::Hierarchical { beta } => format!(" · hierarchically bundled (β {beta:.2})"),
    };
    let block_text = blocks.map(|b| format!(" · {} blocks", b.count())).unwrap_or_default();
    let mut filters = String::new();
    if let Some(node) = opts.node {
        let coord: Vec<String> = topo.coord(node as usize).iter().map(u32::to_string).collect();
        filters += &format!(" · node {node} [{}] only", coord.join(","));
    }
    if let Some(f) = &opts.select {
        filters += &format!(" · nodes with {}", f.describe());
    }
    if let Some((from, to)) = opts.time_slice {
        filters += &format!(" · time {from} to {to}");
    }
    if let Some(g) = &opts.group {
        filters += &format!(" · bundles {} only", g.describe());
    }
    if let Some(t) = track {
        filters += &format!(" · message of node {}: {} hops", t.origin, t.hops);
    }
    if opts.zoom.is_some() {
        filters += &format!(" · zoom ×{}", format_value(f64::from(circle.zoom)));
    }
    let sub = format!(
        "{} order{block_text}{bundling}{filters} · {} torus · {} nodes · {} links · {} {unit}",
        opts.order.name(),
        dims.join("x"),
        n,
        topo.link_count(),
        format_value(total as f64),
    );
    sub
}

/// Dimension names: Blue Gene's A, B, C, D, E for five dimensions, else X, Y, Z (and d1, d2, ...).
pub(crate) fn dim_letter(d: usize, dims: usize) -> String {
    match dims {
        5 => ["A", "B", "C", "D", "E"][d].into(),
        1..=3 => ["X", "Y", "Z"][d].into(),
        _ => format!("d{}", d + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_marks_sit_towards_the_main_sender() {
        for (a, b) in [(0, 1), (5, 900), (17, 18)] {
            assert!(mark_fraction(a, b, 100, 100) <= 0.13, "one-way from a");
            assert!(mark_fraction(a, b, 0, 100) >= 0.87, "one-way from b");
            assert!((mark_fraction(a, b, 50, 100) - 0.5).abs() <= 0.03, "balanced");
            let (three_quarters, quarter) = (mark_fraction(a, b, 75, 100), mark_fraction(a, b, 25, 100));
            assert!(three_quarters < 0.35 && quarter > 0.65, "{three_quarters} {quarter}");
        }
        let line = [[0.0, 0.0], [10.0, 0.0], [10.0, 30.0]];
        assert_eq!(along(&line, 0.0), [0.0, 0.0]);
        assert_eq!(along(&line, 0.25), [10.0, 0.0]);
        assert_eq!(along(&line, 0.5), [10.0, 10.0]);
        assert_eq!(along(&line, 1.0), [10.0, 30.0]);
    }

    #[test]
    fn marks_shrink_to_cover_at_most_a_fraction_of_the_disc() {
        assert_eq!(largest_mark(300.0, 1.0), 300.0 * 0.028);
        let r = largest_mark(300.0, 2000.0);
        let covered = 2000.0 * r * r / (300.0 * 300.0);
        assert!(covered <= 0.15 + 1e-6 && covered > 0.1, "{covered}");
        assert_eq!(largest_mark(300.0, 1e9), 1.5);
    }
}
