//! The ring's picture: chords, address rings, blocks, marks and legend in one scene.

use exaviz_compute::Backend;
use exaviz_compute::BundleParams;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::dims::{DimFilter, selected_nodes};
use exaviz_model::selection::group::BundleGroup;
use exaviz_render::layout::blocks::{Blocks, Relation};
use exaviz_render::layout::order::{Ordering, order_nodes, positions};
use exaviz_render::{Anchor, Blend, ColorMap, Scene};

use super::{
    Circle, Decor, address_rings, block_marks, chord_density, decorate, is_dense, place_circle, plot_rect, polylines,
    resolve_blocks, traffic_marks,
};
use crate::torus::clip_segment;
use crate::torus::traffic::{Chords, link_traffic_in};
use crate::{BACKGROUND, TEXT_DIM, ViewError};

/// How the ring's chords are bundled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RingBundle {
    /// Plain curves towards the centre.
    None,
    /// Image-space KDE bundling (stage `kde_bundle`).
    Kde(BundleParams),
    /// TorusTrafficND's block-based bundling: channels between two blocks through their group's centre.
    Blocks { beta: f32 },
    /// Holten's hierarchical bundling along the Hilbert block tree.
    Hierarchical { beta: f32 },
}

/// What a chord's colour shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelColour {
    /// Traffic through the colour map (colour bar).
    Traffic,
    /// How its blocks relate: within a block, neighbouring blocks, further apart (TorusTrafficND Fig. 8a).
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
    /// TorusTrafficND's traffic marks: a disc on each channel with traffic, towards its main sender.
    pub traffic_marks: bool,
    /// Only the traffic sent in `[from, to)` (trace ticks); chords' opacity then follows their
    /// traffic in the slice and silent chords are drawn grey (TorusVisND Figs. 14 and 16).
    pub time_slice: Option<(u64, u64)>,
    /// Node filter (TorusTrafficND §V-B.2): only this node's channels, their marks, and its address.
    pub node: Option<u32>,
    /// Dimension-value filter (TorusVisND Fig. 10, TorusTrafficND §V-B.2): only the channels of nodes
    /// with these coordinates, and their addresses; with `node`, their intersection.
    pub select: Option<DimFilter>,
    /// Group filter (TorusTrafficND §V-B.2): only the channels of these bundles (pairs of blocks).
    pub group: Option<BundleGroup>,
    /// Message tracking (TorusVisND Fig. 13): the hops of the message node `track` sent first
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
/// TorusTrafficND's purple within blocks and earth-yellow between neighbours.
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

/// What the ring draws, computed before drawing; shared by [`ring_scene`] and picking.
pub(crate) struct Prepared<'a> {
    pub(crate) topo: &'a exaviz_model::Topology,
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
    let topo = crate::torus::topology(dataset, "the ring view needs")?;
    let n = topo.node_count();
    let blocks = resolve_blocks(opts, n)?;
    if opts.colour == ChannelColour::Relation && blocks.is_none() {
        return Err(ViewError::Unsupported(format!("colouring by block relation needs blocks; {n} nodes have none")));
    }
    let selected = selected_nodes(topo, opts.node, opts.select.as_ref()).map_err(ViewError::Unsupported)?;
    crate::check_slice(opts.time_slice)?;
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
        Some(origin) => Some(crate::ring::track::hops(dataset, origin)?),
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
            // Opacity proportional to the chord's traffic in the slice (TorusVisND Fig. 14).
            color[3] = 0.12 + 0.88 * (t as f32 / chords.max as f32);
        }
        if let (ChannelColour::Relation, Some(blocks)) = (opts.colour, &ring.blocks) {
            color = relation_colour(blocks.relation(pos[a as usize], pos[b as usize]));
        }
        if hops.is_some() {
            color = context;
        }
        scene.stroke(Blend::Alpha, line, width * ring.thin, |_| color);
    }
    let marks = if opts.traffic_marks && hops.is_none() {
        traffic_marks(&mut scene, chords, &ring.lines, circle)
    } else {
        None
    };
    let track = hops.as_ref().map(|h| crate::ring::track::draw(&mut scene, h, circle, pos, opts.colormap));
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
        crate::ring::track::label_ends(&mut scene, t, circle, rim);
    }
    decorate(&mut scene, dataset, &ring, opts, Decor { marks, track });
    Ok(scene)
}

#[cfg(test)]
mod tests {

    use crate::ring::{along, largest_mark, mark_fraction};

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
