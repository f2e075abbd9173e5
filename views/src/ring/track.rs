//! Message tracking on the ring (TorusVisND §VI-A, Fig. 13): one message's path across the nodes,
//! hop by hop, coloured by when each hop was sent. In TorusVisND's simulation (Algorithm 1, and
//! `gen:torus-sim`) every node sends one message that walks to a random neighbour at each step;
//! each hop is a message record tagged with the node that sent it first, so the path of node
//! `v`'s message is the records tagged `v`, in the order they were sent.

use exaviz_model::dataset::Dataset;
use exaviz_render::{Anchor, ColorMap, Scene};

use super::{Circle, flatten};
use crate::{TEXT, ViewError};

/// One hop: from node, to node, sent at (trace ticks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub from: u32,
    pub to: u32,
    pub sent: u64,
}

/// More hops than this under one tag is not one message's path.
const MAX_HOPS: usize = 100_000;

/// The hops of the message node `origin` sent first: the message records tagged `origin`, by
/// send time (ties in record order), with their ends as torus nodes.
pub fn hops(dataset: &Dataset, origin: u32) -> Result<Vec<Hop>, ViewError> {
    let topo = crate::torus::topology(dataset, "message tracking needs")?;
    let n = topo.node_count();
    if origin as usize >= n {
        return Err(ViewError::Unsupported(format!(
            "cannot track node {origin}'s message: the torus has nodes 0 to {}",
            n - 1
        )));
    }
    let m = &dataset.trace.messages;
    let node =
        |location: u32| dataset.trace.locations.node.get(location as usize).copied().filter(|&v| (v as usize) < n);
    let mut hops = Vec::new();
    for i in (0..m.tag.len()).filter(|&i| m.tag[i] == origin) {
        if let (Some(from), Some(to)) = (node(m.source[i]), node(m.destination[i])) {
            hops.push(Hop { from, to, sent: m.send_time[i] });
        }
        if hops.len() > MAX_HOPS {
            return Err(ViewError::Unsupported(format!(
                "tag {origin} marks more than {MAX_HOPS} messages between nodes: not one message's path \
                 (gen:torus-sim tags each hop with the node that sent the message first)"
            )));
        }
    }
    if hops.is_empty() {
        return Err(ViewError::Unsupported(format!(
            "no message of node {origin} to track: no message between nodes is tagged {origin} \
             (gen:torus-sim tags each hop with the node that sent the message first)"
        )));
    }
    hops.sort_by_key(|h| h.sent);
    Ok(hops)
}

/// What [`draw`] drew, for labels and the legend.
pub struct Tracked {
    pub origin: u32,
    pub hops: usize,
    /// Ring positions of the first hop's sender and the last hop's receiver.
    pub start: u32,
    pub end: u32,
    /// Send times of the first and last hops.
    pub first: u64,
    pub last: u64,
}

/// The colour of a hop at `age` in `[0, 1]` (0 the first hop): the upper 80% of the colour map,
/// whose darkest end would vanish on the dark background.
pub fn age_colour(map: ColorMap, age: f32) -> [f32; 4] {
    map.sample(0.2 + 0.8 * age.clamp(0.0, 1.0))
}

/// Draws the hops as chords (outlined, later hops over earlier ones) and discs on the first
/// sender and the last receiver.
pub(crate) fn draw(scene: &mut Scene, hops: &[Hop], circle: &Circle, pos: &[u32], map: ColorMap) -> Tracked {
    let (first, last) = (hops[0].sent, hops[hops.len() - 1].sent);
    let age = |t: u64| if last > first { (t - first) as f32 / (last - first) as f32 } else { 1.0 };
    let outline = [0.07, 0.08, 0.1, 0.9];
    for hop in hops {
        let line = flatten(circle.curve(pos[hop.from as usize], pos[hop.to as usize]), 16);
        scene.stroke(exaviz_render::Blend::Alpha, &line, 4.4, |_| outline);
        let colour = age_colour(map, age(hop.sent));
        scene.stroke(exaviz_render::Blend::Alpha, &line, 2.6, |_| colour);
    }
    let (start, end) = (pos[hops[0].from as usize], pos[hops[hops.len() - 1].to as usize]);
    for (p, a) in [(start, 0.0), (end, 1.0)] {
        let at = circle.at(p, circle.radius);
        scene.disc(at, 6.5, [0.95, 0.95, 0.97, 1.0], false);
        scene.disc(at, 5.0, age_colour(map, a), false);
    }
    Tracked { origin: hops[0].from, hops: hops.len(), start, end, first, last }
}

/// "start" and "end" outside the rings (radius `rim`) by the path's ends.
pub(crate) fn label_ends(scene: &mut Scene, t: &Tracked, circle: &Circle, rim: f32) {
    let (at_start, at_end) = (circle.at(t.start, rim + 30.0), circle.at(t.end, rim + 30.0));
    let apart = (at_start[0] - at_end[0]).hypot(at_start[1] - at_end[1]) > 40.0;
    if apart {
        scene.text("start", [at_start[0], at_start[1] + 4.0], 12.0, Anchor::Centre, TEXT);
        scene.text("end", [at_end[0], at_end[1] + 4.0], 12.0, Anchor::Centre, TEXT);
    } else {
        scene.text("start, end", [at_start[0], at_start[1] + 4.0], 12.0, Anchor::Centre, TEXT);
    }
}
