//! The `parcoords` view, TorusVisND's node selector (§V, Figs. 8-10): one vertical axis per torus
//! dimension, left to right, and each node a polyline through its coordinates, each vertex
//! offset by a small fixed jitter (at most 0.3 of a coordinate step) so that lines sharing
//! values can still be told apart. Polylines are coloured by the traffic on the node's links
//! (in the time slice, if any); with a selection (`--node`, `--select`) the selected nodes are
//! drawn on top, thicker, and the others in grey for context.

mod scene;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::dims::DimFilter;
use exaviz_model::selection::{Parts, Selection};

use crate::ViewError;
use crate::contract;
use crate::contract::{Class, Drawn, Frame, Pick, Picker, Prepared};
use crate::options::{ColormapArgs, TorusSelectArgs};
use crate::torus;
use crate::torus::traffic::dim_letter;

pub use scene::*;

/// The parcoords view (node selector).
pub struct ParcoordsView(pub ParcoordsOptions);

pub(crate) struct AxisPick {
    pub(crate) frame: Frame,
}

impl Picker for AxisPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let topo = dataset.topology.as_ref()?;
        let (d, c) = parcoords_axis_at(topo, self.frame.width, self.frame.height, at)?;
        let c = c.floor() as u32;
        let name = dim_letter(d, topo.dims());
        let count = (0..topo.node_count()).filter(|&v| topo.coord(v)[d] == c).count();
        let mut f = DimFilter::empty();
        f.set(d, topo.dims(), c, c);
        let pick = Pick::new(format!("{name} = {c}"), vec![format!("{count} nodes")]);
        Some(pick.with_click(Parts::DIMS, Selection { dims: Some(f), ..Default::default() }))
    }
}

impl contract::View for ParcoordsView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        torus::check(d, Self::NAME)
    }

    fn depends_on(&self) -> Parts {
        torus::FILTERS
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = ParcoordsOptions {
            width: f.width,
            height: f.height,
            time_slice: sel.time_slice,
            node: sel.node,
            select: sel.dims,
            ..self.0
        };
        Ok(Box::new(Drawn { scene: parcoords_scene(d, b, &opts)?, picker: AxisPick { frame: f } }))
    }
}

/// `exaviz render --view parcoords` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ParcoordsArgs {
    #[command(flatten)]
    pub colormap: ColormapArgs,
    #[command(flatten)]
    pub torus: TorusSelectArgs,
}

impl Class for ParcoordsView {
    const NAME: &'static str = "parcoords";
    const ABOUT: &'static str =
        "Torus node selector: parallel coordinates, one axis per dimension, a line per node (TorusVisND).";
    type Args = ParcoordsArgs;

    fn new(args: &ParcoordsArgs) -> Self {
        let colormap = args.colormap.colormap.into();
        ParcoordsView(ParcoordsOptions { colormap, ..ParcoordsOptions::default() })
    }

    fn selection(args: &ParcoordsArgs) -> Selection {
        args.torus.selection()
    }
}
