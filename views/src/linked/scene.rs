//! The linked view's picture: the ring, the node selector and the time slicer placed side by side, and how gestures on them change the shared state.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::dims::{DimFilter, selected_nodes};
use exaviz_model::selection::group::BundleGroup;
use exaviz_render::{Anchor, ColorMap, Scene};

use crate::parcoords::{ParcoordsOptions, parcoords_axis_at, parcoords_scene};
use crate::ring::{RingOptions, ring_address_at, ring_bundles_in, ring_node_at, ring_scene, ring_unzoom};
use crate::themeriver::{ThemeRiverOptions, themeriver_scene, themeriver_tick_at};
use crate::{BACKGROUND, TEXT_DIM, ViewError};

/// The smallest picture the three panels fit in.
pub const MIN_SIZE: (u32, u32) = (800, 480);

/// A press and release closer than this (pixels) is a click, not a drag.
const CLICK: f32 = 4.0;

/// The state the three views share (the last three show in the ring only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Linked {
    pub node: Option<u32>,
    pub select: Option<DimFilter>,
    pub time_slice: Option<(u64, u64)>,
    /// The ring's group filter: the brushed bundles.
    pub group: Option<BundleGroup>,
    /// The node whose message the ring tracks.
    pub track: Option<u32>,
    /// The ring's zoom rectangle, in the unzoomed ring panel's pixels.
    pub zoom: Option<[f32; 4]>,
}

#[derive(Clone, Copy, Debug)]
pub struct LinkedOptions {
    pub width: u32,
    pub height: u32,
    /// The ring's options (order, blocks, bundling, colours); its size and filters are set from
    /// the panel and from `state`.
    pub ring: RingOptions,
    pub colormap: ColorMap,
    pub state: Linked,
}

/// Which view a panel holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    Ring,
    Parcoords,
    River,
}

/// The panels' rectangles `[x, y, width, height]` in a `width x height` picture: the ring on the
/// left (55% of the width), the node selector above the time slicer on the right.
pub fn panels(width: u32, height: u32) -> [(Panel, [u32; 4]); 3] {
    let ring_w = width * 11 / 20;
    let right = width - ring_w;
    let top = height / 2;
    [
        (Panel::Ring, [0, 0, ring_w, height]),
        (Panel::Parcoords, [ring_w, 0, right, top]),
        (Panel::River, [ring_w, top, right, height - top]),
    ]
}

/// The panel under picture point `p`, and `p` in that panel's pixels.
pub fn panel_at(width: u32, height: u32, p: [f32; 2]) -> Option<(Panel, [u32; 4], [f32; 2])> {
    panels(width, height).into_iter().find_map(|(panel, r)| {
        let q = [p[0] - r[0] as f32, p[1] - r[1] as f32];
        let inside = q[0] >= 0.0 && q[1] >= 0.0 && q[0] < r[2] as f32 && q[1] < r[3] as f32;
        inside.then_some((panel, r, q))
    })
}

impl LinkedOptions {
    fn ring_options(&self, [_, _, w, h]: [u32; 4]) -> RingOptions {
        let s = self.state;
        RingOptions {
            width: w,
            height: h,
            time_slice: s.time_slice,
            node: s.node,
            select: s.select,
            group: s.group,
            track: s.track,
            zoom: s.zoom,
            ..self.ring
        }
    }

    fn parcoords_options(&self, [_, _, w, h]: [u32; 4]) -> ParcoordsOptions {
        let s = self.state;
        ParcoordsOptions {
            width: w,
            height: h,
            colormap: self.colormap,
            time_slice: s.time_slice,
            node: s.node,
            select: s.select,
        }
    }

    fn river_options(&self, [_, _, w, h]: [u32; 4]) -> ThemeRiverOptions {
        let s = self.state;
        ThemeRiverOptions { width: w, height: h, time_slice: s.time_slice, node: s.node, select: s.select }
    }
}

/// The three panels placed in one scene, each clipped to its place.
pub fn linked_scene(dataset: &Dataset, backend: &Backend, opts: &LinkedOptions) -> Result<Scene, ViewError> {
    let topo = crate::torus::topology(dataset, "the linked view needs")?;
    let (w, h) = (opts.width, opts.height);
    if w < MIN_SIZE.0 || h < MIN_SIZE.1 {
        return Err(ViewError::Unsupported(format!(
            "{w}x{h} is too small for the linked view (at least {}x{})",
            MIN_SIZE.0, MIN_SIZE.1
        )));
    }
    let chosen = selected_nodes(topo, opts.state.node, opts.state.select.as_ref()).map_err(ViewError::Unsupported)?;
    if let (Some(v), Some(f), Some(true)) = (opts.state.node, opts.state.select, chosen.map(|c| c.is_empty())) {
        return Err(ViewError::Unsupported(format!(
            "node {v} {:?} is outside the selection {}; the linked view shows a node within it",
            topo.coord(v as usize),
            f.describe()
        )));
    }
    let mut out = Scene::new(w, h, BACKGROUND);
    let all = panels(w, h);
    for (panel, r) in all {
        let scene = match panel {
            Panel::Ring => ring_scene(dataset, backend, &opts.ring_options(r))?,
            Panel::Parcoords => parcoords_scene(dataset, backend, &opts.parcoords_options(r))?,
            Panel::River => match themeriver_scene(dataset, backend, &opts.river_options(r)) {
                Ok(scene) => scene,
                // Counters without times (one snapshot): the panel says so; the others still link.
                Err(ViewError::Unsupported(why)) if dataset.trace.link_counters.time.is_empty() => {
                    let mut scene = Scene::new(r[2], r[3], BACKGROUND);
                    let at = [r[2] as f32 / 2.0, r[3] as f32 / 2.0];
                    scene.text(&format!("No time slicer: {why}"), at, 12.0, Anchor::Centre, TEXT_DIM);
                    scene
                }
                Err(e) => return Err(e),
            },
        };
        out.place(&scene, [r[0] as f32, r[1] as f32]);
    }
    // Thin dividers between the panels.
    let line = [70.0 / 255.0, 74.0 / 255.0, 84.0 / 255.0, 1.0];
    let [_, _, ring_w, _] = all[0].1;
    let [_, top, _, _] = all[2].1;
    let (ring_w, top) = (ring_w as f32, top as f32);
    out.rect([ring_w, 0.0], [ring_w + 1.0, h as f32], line, false);
    out.rect([ring_w, top], [w as f32, top + 1.0], line, false);
    Ok(out)
}

/// Applies a press at `from` and a release at `to` (picture pixels) to the shared state.
/// Returns whether the state changed.
///
/// - Ring: a click on a node on the circle (or just outside the address rings) picks it; a click
///   on the picked node drops it, a click off the ring drops it and the group. A picked node
///   outside the selection ends the selection. A click on an address ring selects that ring's
///   coordinate there (the dimension-value filter), or frees the dimension when that coordinate
///   alone was selected. A drag brushes bundles: the group becomes the bundles (block pairs)
///   whose drawn curves cross the rectangle.
/// - Node selector: a drag along an axis selects the coordinates it spans on that dimension
///   (replacing that dimension's range); a click on an axis selects one coordinate, or frees the
///   dimension when that coordinate alone was selected; a click away from the axes ends the
///   selection. A selection that leaves out the picked node drops the node.
/// - Time slicer: a drag across time sets the slice (whole bins); a click ends it.
pub fn gesture(dataset: &Dataset, opts: &mut LinkedOptions, from: [f32; 2], to: [f32; 2]) -> bool {
    let Some(topo) = dataset.topology.as_ref() else { return false };
    let Some((panel, r, a)) = panel_at(opts.width, opts.height, from) else { return false };
    let b = [to[0] - r[0] as f32, to[1] - r[1] as f32];
    let click = (b[0] - a[0]).hypot(b[1] - a[1]) < CLICK;
    let before = opts.state;
    let ring = opts.ring_options(r);
    let s = &mut opts.state;
    match panel {
        Panel::Ring if click => {
            if let Some((d, v)) = ring_address_at(topo, &ring, a) {
                let c = topo.coord(v as usize)[d];
                let mut f = s.select.unwrap_or_else(DimFilter::empty);
                choose(&mut f, topo.dims(), d, (c, c), true);
                set_selection(topo, s, f);
            } else {
                let picked = ring_node_at(topo, &ring, a);
                s.node = if picked == s.node { None } else { picked };
                if picked.is_none() {
                    s.group = None;
                }
                if let (Some(v), Some(f)) = (s.node, s.select)
                    && !f.matches(topo.coord(v as usize))
                {
                    s.select = None;
                }
            }
        }
        Panel::Ring => {
            // The bundles are found on the CPU path, which draws the same curves as a GPU's.
            let brushed = ring_bundles_in(dataset, &Backend::Cpu, &ring, [a[0], a[1], b[0], b[1]]);
            if let Ok(group) = brushed {
                s.group = group;
            }
        }
        Panel::Parcoords => {
            let mut f = s.select.unwrap_or_else(DimFilter::empty);
            match parcoords_axis_at(topo, r[2], r[3], a) {
                None if click => f = DimFilter::empty(),
                None => {}
                Some((d, c)) => {
                    let lo = c as u32;
                    // The release's height on the same axis, wherever the pointer went sideways.
                    let hi = parcoords_axis_at(topo, r[2], r[3], [a[0], b[1]]).map_or(lo, |(_, c)| c as u32);
                    choose(&mut f, topo.dims(), d, (lo, hi), click);
                }
            }
            set_selection(topo, s, f);
        }
        Panel::River => {
            let ta = themeriver_tick_at(dataset, r[2], r[3], a);
            let tb = themeriver_tick_at(dataset, r[2], r[3], [b[0], a[1]]);
            match (ta, tb) {
                (Some(_), _) if click => s.time_slice = None,
                (Some(ta), Some(tb)) if ta != tb => s.time_slice = Some((ta.min(tb), ta.max(tb))),
                _ => {}
            }
        }
    }
    opts.state != before
}

/// Coordinates `lo..=hi` chosen on dimension `d` (of `dims`): they replace that dimension's
/// range, except that a click on the one coordinate selected there frees the dimension.
fn choose(f: &mut DimFilter, dims: usize, d: usize, (lo, hi): (u32, u32), click: bool) {
    if click && f.range(d) == Some((lo, lo)) {
        f.remove(d);
    } else {
        f.set(d, dims, lo, hi);
    }
}

/// Sets the selection (none when empty); a selection that leaves out the picked node drops the
/// node.
fn set_selection(topo: &exaviz_model::Topology, s: &mut Linked, f: DimFilter) {
    s.select = (!f.is_empty()).then_some(f);
    if let (Some(v), Some(f)) = (s.node, s.select)
        && !f.matches(topo.coord(v as usize))
    {
        s.node = None;
    }
}

/// Applies a press at `from` and a release at `to` of the zoom button (the right one): a drag on
/// the ring zooms into the rectangle it spans, a click on the ring zooms back out. Returns
/// whether the state changed.
pub fn zoom_gesture(opts: &mut LinkedOptions, from: [f32; 2], to: [f32; 2]) -> bool {
    let Some((Panel::Ring, r, a)) = panel_at(opts.width, opts.height, from) else { return false };
    let b = [to[0] - r[0] as f32, to[1] - r[1] as f32];
    let before = opts.state.zoom;
    if (b[0] - a[0]).hypot(b[1] - a[1]) < CLICK {
        opts.state.zoom = None;
    } else {
        let ring = opts.ring_options(r);
        let (p, q) = (ring_unzoom(&ring, a), ring_unzoom(&ring, b));
        let zoom = [p[0].min(q[0]), p[1].min(q[1]), p[0].max(q[0]), p[1].max(q[1])];
        // A rectangle too thin to zoom into is ignored, as is one past the most magnification.
        let check = RingOptions { zoom: Some(zoom), ..ring };
        if crate::ring::zoom_is_valid(&check) {
            opts.state.zoom = Some(zoom);
        }
    }
    opts.state.zoom != before
}

/// Tracks the message of the picked node (`t` in the window), or stops tracking. Returns whether
/// the state changed.
pub fn toggle_track(opts: &mut LinkedOptions) -> bool {
    let before = opts.state.track;
    opts.state.track = if before.is_some() { None } else { opts.state.node };
    opts.state.track != before
}

/// The shared state in words: `selection B=1-2 (128 nodes); node 37; slice 5 to 10`.
pub fn describe(dataset: &Dataset, state: &Linked) -> String {
    let mut parts = Vec::new();
    if let (Some(f), Some(topo)) = (&state.select, dataset.topology.as_ref()) {
        let count = f.nodes(topo).len();
        parts.push(format!("selection {} ({count} node{})", f.describe(), if count == 1 { "" } else { "s" }));
    }
    if let Some(v) = state.node {
        let coord = dataset.topology.as_ref().map(|t| t.coord(v as usize).to_vec()).unwrap_or_default();
        parts.push(format!("node {v} {coord:?}"));
    }
    if let Some((a, b)) = state.time_slice {
        parts.push(format!("slice {a} to {b}"));
    }
    if let Some(g) = &state.group {
        parts.push(format!("bundles {}", g.describe()));
    }
    if let Some(v) = state.track {
        parts.push(format!("tracking node {v}'s message"));
    }
    if let Some([x0, y0, x1, y1]) = state.zoom {
        parts.push(format!("zoom {x0:.0},{y0:.0},{x1:.0},{y1:.0}"));
    }
    if parts.is_empty() { "nothing selected".into() } else { parts.join("; ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_tile_the_picture() {
        let [(_, ring), (_, pc), (_, river)] = panels(1001, 701);
        assert_eq!(ring[2] + pc[2], 1001);
        assert_eq!(pc[3] + river[3], 701);
        assert_eq!((pc[0], river[0], river[1]), (ring[2], ring[2], pc[3]));
    }
}
