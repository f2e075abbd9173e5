//! The `ring` view (TorusVisND and TorusTrafficND): torus nodes ordered along a sequential or Hilbert curve
//! and placed on a circle; links drawn as chords curving towards the centre, coloured and
//! weighted by traffic that stage (a) aggregates per link, or coloured by how their blocks relate;
//! bundled by the KDE stage or along TorusTrafficND's Hilbert blocks (B-spline stage); one address ring
//! per dimension outside the circle (TorusTrafficND §V-A.3); block boundaries and numbers; a legend.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};

use crate::ViewError;
use crate::contract;
use crate::contract::{Class, Drawn, Frame, Pick, Picker};
use crate::options::{ColormapArgs, RingSelectArgs, TorusSelectArgs};
use crate::torus;

mod address;
mod chords;
mod geometry;
mod legend;
mod marks;
mod pick;
mod scene;
pub mod track;

use address::*;
use legend::*;
use marks::*;

pub use crate::torus::traffic::{Chords, LEGEND_W, TOP, dim_letter, link_traffic, link_traffic_in};
pub use chords::*;
pub use geometry::*;
pub use pick::*;
pub use scene::*;

/// The ring view.
pub struct RingView(pub RingOptions);

struct RingPick {
    opts: RingOptions,
    traffic: Vec<u64>,
}

impl Picker for RingPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let v = ring_node_at(dataset.topology.as_ref()?, &self.opts, at)?;
        torus::node_pick(dataset, &self.traffic, v)
    }
}

impl RingView {
    fn options(&self, sel: &Selection, f: Frame) -> RingOptions {
        RingOptions {
            width: f.width,
            height: f.height,
            time_slice: sel.time_slice,
            node: sel.node,
            select: sel.dims,
            group: sel.group,
            track: sel.track,
            zoom: sel.zoom,
            ..self.0
        }
    }
}

impl contract::View for RingView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        torus::check(d, Self::NAME)
    }

    fn depends_on(&self) -> Parts {
        torus::FILTERS | Parts::GROUP | Parts::TRACK | Parts::ZOOM
    }

    fn prepare(
        &self,
        d: &Dataset,
        sel: &Selection,
        f: Frame,
        b: &Backend,
    ) -> Result<Box<dyn contract::Prepared>, ViewError> {
        let opts = self.options(sel, f);
        let scene = ring_scene(d, b, &opts)?;
        let traffic = torus::traffic_per_node(d, b, sel)?;
        Ok(Box::new(Drawn { scene, picker: RingPick { opts, traffic } }))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderArg {
    Hilbert,
    Sequential,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RingBundleArg {
    /// Straight chords (quadratic curves towards the centre).
    None,
    /// Image-space KDE bundling (this engine's).
    Kde,
    /// Holten's hierarchical bundling along the Hilbert block tree.
    Hierarchical,
    /// TorusTrafficND's block-based bundling (channels between two blocks through their group's
    /// centre).
    Blocks,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColourArg {
    /// Traffic through the colour map.
    Traffic,
    /// Block relation: within a block, neighbouring blocks, 2, 3, 4+ blocks apart (TorusTrafficND
    /// Fig. 8a).
    Relation,
}

/// `exaviz render --view ring` options (the linked view's ring takes them too).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct RingArgs {
    /// Node ordering along the ring.
    #[arg(long, value_enum, default_value = "hilbert")]
    pub order: OrderArg,
    #[command(flatten)]
    pub colormap: ColormapArgs,
    /// Edge bundling of the chords.
    #[arg(long, value_enum, default_value = "none")]
    pub bundle: RingBundleArg,
    /// Bundling strength β of the blocks and hierarchical bundling (0 straight, 1 fully bundled).
    #[arg(long, default_value_t = exaviz_render::bundling::DEFAULT_BETA, value_parser = crate::options::parse_beta)]
    pub beta: f32,
    /// Hilbert blocks, an even count dividing the node count (default: 8 or 4 where they divide it).
    #[arg(long)]
    pub blocks: Option<u32>,
    /// What a chord's colour shows.
    #[arg(long, value_enum, default_value = "traffic")]
    pub color: ColourArg,
    /// Leave out the address rings (one per dimension, brighter for lower coordinates).
    #[arg(long)]
    pub no_address_rings: bool,
    /// Leave out the traffic marks (a disc per channel with traffic, area by packets, nearer the
    /// node sending most of them).
    #[arg(long)]
    pub no_traffic_marks: bool,
    #[command(flatten)]
    pub torus: TorusSelectArgs,
    #[command(flatten)]
    pub ring: RingSelectArgs,
}

impl RingArgs {
    pub fn options(&self) -> RingOptions {
        RingOptions {
            width: 1024,
            height: 768,
            order: match self.order {
                OrderArg::Hilbert => exaviz_render::layout::Ordering::Hilbert,
                OrderArg::Sequential => exaviz_render::layout::Ordering::Sequential,
            },
            colormap: self.colormap.colormap.into(),
            bundle: match self.bundle {
                RingBundleArg::None => RingBundle::None,
                RingBundleArg::Kde => RingBundle::Kde(exaviz_compute::BundleParams::default()),
                RingBundleArg::Blocks => RingBundle::Blocks { beta: self.beta },
                RingBundleArg::Hierarchical => RingBundle::Hierarchical { beta: self.beta },
            },
            blocks: self.blocks,
            colour: match self.color {
                ColourArg::Traffic => ChannelColour::Traffic,
                ColourArg::Relation => ChannelColour::Relation,
            },
            address_rings: !self.no_address_rings,
            traffic_marks: !self.no_traffic_marks,
            time_slice: self.torus.time_slice,
            node: self.torus.node,
            select: self.torus.select,
            group: self.ring.group,
            track: self.ring.track,
            zoom: self.ring.zoom,
        }
    }

    /// Everything the options select on the torus and the ring.
    pub(crate) fn select(&self) -> Selection {
        Selection { group: self.ring.group, track: self.ring.track, zoom: self.ring.zoom, ..self.torus.selection() }
    }
}

impl Class for RingView {
    const NAME: &'static str = "ring";
    const ABOUT: &'static str =
        "Torus nodes on a circle in sequential or Hilbert order, links as chords coloured by traffic (TorusVisND).";
    type Args = RingArgs;

    fn new(args: &RingArgs) -> Self {
        RingView(args.options())
    }

    fn selection(args: &RingArgs) -> Selection {
        args.select()
    }
}
