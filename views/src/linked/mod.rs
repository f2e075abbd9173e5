//! The `linked` view: TorusVisND's three linked views of a torus in one picture. The ring (left)
//! shows the channels; the node selector (parallel coordinates, top right) and the time slicer
//! (ThemeRiver, bottom right) choose what the ring shows. All three share one state, a
//! [`Linked`] of node, coordinate selection and time slice, so a choice made in one shows in all:
//! - brushing a range on a parallel-coordinates axis selects those coordinates: the ring keeps
//!   only the selected nodes' channels and addresses, the river shows their streams;
//! - picking a node on the ring highlights its polyline, keeps only its channels and shows its
//!   stream;
//! - brushing a time range on the river sets the slice: the ring's channel opacity follows their
//!   traffic in the slice, silent channels turn grey (Fig. 16), and the polylines are coloured by
//!   the slice's traffic;
//! - on the ring itself: a click on an address ring selects that coordinate (as on an axis), a
//!   drag brushes a group of bundles, the right button zooms into a rectangle, and the picked
//!   node's message can be tracked (TorusVisND Fig. 13).
//!
//! [`gesture`] and [`zoom_gesture`] turn a press and release (in picture pixels) into a change of
//! state, so the window (`exaviz view --view linked`) and tests share one interpretation of the
//! mouse.

mod scene;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};

use crate::ViewError;
use crate::contract;
use crate::contract::{Class, Drawn, Frame, Pick, Picker, Prepared};
use crate::parcoords::AxisPick;
use crate::ring::{RingArgs, RingOptions, ring_node_at};
use crate::themeriver::TickPick;
use crate::torus;

pub use scene::*;

/// The linked view: ring, node selector and time slicer sharing the selection, placed in one
/// scene.
pub struct LinkedView(pub LinkedOptions);

/// The selection as the linked view's state.
pub fn linked_state(sel: &Selection) -> Linked {
    Linked {
        node: sel.node,
        select: sel.dims,
        time_slice: sel.time_slice,
        group: sel.group,
        track: sel.track,
        zoom: sel.zoom,
    }
}

/// The linked view's state as a selection (other parts from `sel`).
pub fn with_linked_state(sel: &Selection, s: &Linked) -> Selection {
    Selection {
        node: s.node,
        dims: s.select,
        time_slice: s.time_slice,
        group: s.group,
        track: s.track,
        zoom: s.zoom,
        ..*sel
    }
}

impl LinkedView {
    fn options(&self, sel: &Selection, f: Frame) -> LinkedOptions {
        LinkedOptions { width: f.width, height: f.height, state: linked_state(sel), ..self.0 }
    }
}

struct LinkedPick {
    frame: Frame,
    traffic: Vec<u64>,
    ring: RingOptions,
}

impl Picker for LinkedPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let topo = dataset.topology.as_ref()?;
        let (panel, r, q) = panel_at(self.frame.width, self.frame.height, at)?;
        let sub = Frame { width: r[2], height: r[3] };
        match panel {
            Panel::Ring => {
                let v = ring_node_at(topo, &RingOptions { width: r[2], height: r[3], ..self.ring }, q)?;
                torus::node_pick(dataset, &self.traffic, v)
            }
            Panel::Parcoords => AxisPick { frame: sub }.pick(dataset, q),
            Panel::River => TickPick { frame: sub }.pick(dataset, q),
        }
    }
}

impl contract::View for LinkedView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        torus::check(d, Self::NAME)
    }

    fn depends_on(&self) -> Parts {
        torus::FILTERS | Parts::GROUP | Parts::TRACK | Parts::ZOOM
    }

    /// Its panels read every drag themselves: none pans.
    fn pans(&self) -> bool {
        false
    }

    /// A press at `from` and release at `to`: a click or brush on an axis, the ring or the
    /// river, as [`scene::gesture`] reads it.
    fn brush(&self, d: &Dataset, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let mut opts = self.options(sel, f);
        gesture(d, &mut opts, from, to).then(|| with_linked_state(sel, &opts.state))
    }

    /// The right button zooms the ring.
    fn zoom_drag(&self, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let mut opts = self.options(sel, f);
        zoom_gesture(&mut opts, from, to).then(|| with_linked_state(sel, &opts.state))
    }

    /// `t` tracks the picked node's message, or stops tracking.
    fn key(&self, _: &Dataset, sel: &Selection, f: Frame, key: &str) -> Option<Selection> {
        let mut opts = self.options(sel, f);
        (key == "t" && toggle_track(&mut opts)).then(|| with_linked_state(sel, &opts.state))
    }

    fn help(&self) -> &'static [&'static str] {
        &[
            "drag on an axis, the ring or the river: select; right drag: zoom the ring",
            "t: track the picked node's message (again: stop)",
        ]
    }

    fn describe(&self, d: &Dataset, sel: &Selection) -> Option<String> {
        Some(describe(d, &linked_state(sel)))
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = self.options(sel, f);
        let scene = linked_scene(d, b, &opts)?;
        let traffic = torus::traffic_per_node(d, b, sel)?;
        let ring = RingOptions {
            time_slice: sel.time_slice,
            node: sel.node,
            select: sel.dims,
            group: sel.group,
            track: sel.track,
            zoom: sel.zoom,
            ..opts.ring
        };
        Ok(Box::new(Drawn { scene, picker: LinkedPick { frame: f, traffic, ring } }))
    }
}

/// `exaviz render --view linked` options: the ring's.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct LinkedArgs {
    #[command(flatten)]
    pub ring: RingArgs,
}

impl Class for LinkedView {
    const NAME: &'static str = "linked";
    const ABOUT: &'static str =
        "Torus ring, node selector and time slicer side by side, sharing one selection (TorusVisND).";
    type Args = LinkedArgs;

    fn new(args: &LinkedArgs) -> Self {
        let ring = args.ring.options();
        let state = linked_state(&args.ring.select());
        LinkedView(LinkedOptions { width: 1024, height: 768, ring, colormap: ring.colormap, state })
    }

    fn selection(args: &LinkedArgs) -> Selection {
        args.ring.select()
    }
}
