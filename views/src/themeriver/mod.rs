//! The `themeriver` view, TorusVisND's time slicer (§VI-C, Fig. 15): one stream per node, stacked
//! symmetrically about a horizontal axis, each stream's height the traffic on the node's links
//! in each time bin (for `gen:torus-sim`, where every message is one hop, the messages the node
//! sent and received). Streams are ordered by node id. The nodes are the selection (`--node`,
//! `--select`), or the busiest nodes when there is none; past [`MAX_STREAMS`] the busiest are
//! shown and the rest merged into one grey stream. A `--time-slice` is drawn as a band.
//!
//! The node-by-time grid is binned by the heatmap stage (GPU with its CPU mirror).

mod scene;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};

use crate::ViewError;
use crate::contract;
use crate::contract::{Class, Drawn, Frame, Pick, Picker, Prepared};
use crate::options::TorusSelectArgs;
use crate::torus;

pub use scene::*;

/// The themeriver view (time slicer).
pub struct ThemeRiverView;

pub(crate) struct TickPick {
    pub(crate) frame: Frame,
}

impl Picker for TickPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let tick = themeriver_tick_at(dataset, self.frame.width, self.frame.height, at)?;
        Some(Pick::new(format!("step {tick}"), vec!["drag in the linked view to slice time".into()]))
    }
}

impl contract::View for ThemeRiverView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        torus::check(d, Self::NAME)
    }

    fn depends_on(&self) -> Parts {
        torus::FILTERS
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = ThemeRiverOptions {
            width: f.width,
            height: f.height,
            time_slice: sel.time_slice,
            node: sel.node,
            select: sel.dims,
        };
        Ok(Box::new(Drawn { scene: themeriver_scene(d, b, &opts)?, picker: TickPick { frame: f } }))
    }
}

/// `exaviz render --view themeriver` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ThemeRiverArgs {
    #[command(flatten)]
    pub torus: TorusSelectArgs,
}

impl Class for ThemeRiverView {
    const NAME: &'static str = "themeriver";
    const ABOUT: &'static str =
        "Torus time slicer: a ThemeRiver of the traffic on selected or the busiest nodes over time (TorusVisND).";
    type Args = ThemeRiverArgs;

    fn new(_: &ThemeRiverArgs) -> Self {
        ThemeRiverView
    }

    fn selection(args: &ThemeRiverArgs) -> Selection {
        args.torus.selection()
    }
}
