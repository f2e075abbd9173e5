//! The torus views through the view contract (ring, mds and radviz, parcoords, themeriver,
//! linked), and what their tooltips share: a node's coordinates and the traffic on its links.

use crate::Backend;
use crate::layout::embed::Embedding;
use crate::model::{Dataset, Topology};
use crate::selection::{Parts, Selection};

use super::contract::{self, Drawn, Frame, Pick, Picker, Prepared};
use super::embedding::{EmbeddingOptions, embedding_scene_and_points};
use super::legend::format_value;
use super::linked::{self, Linked, LinkedOptions, linked_scene};
use super::parcoords::{ParcoordsOptions, node_traffic, parcoords_axis_at, parcoords_scene};
use super::ring::{RingOptions, dim_letter, link_traffic_in, ring_node_at, ring_scene};
use super::select::DimFilter;
use super::themeriver::{ThemeRiverOptions, themeriver_scene, themeriver_tick_at};
use super::{ViewError, traffic_unit};

/// The selection parts every torus view with filters reads.
const TORUS_FILTERS: Parts = Parts::NODE.or(Parts::DIMS).or(Parts::TIME_SLICE);

/// A node's tooltip: its coordinates and the traffic on its links (both directions), and a
/// click that picks it.
fn node_pick(topo: &Topology, traffic: &[u64], unit: &str, v: u32) -> Pick {
    let dims = topo.dims();
    let coords: Vec<String> =
        topo.coord(v as usize).iter().enumerate().map(|(d, c)| format!("{}={c}", dim_letter(d, dims))).collect();
    let on_links = traffic.get(v as usize).copied().unwrap_or(0);
    let lines = vec![coords.join(" "), format!("{} {unit} on its links", format_value(on_links as f64))];
    Pick::new(format!("node {v}"), lines).with_click(Parts::NODE, Selection { node: Some(v), ..Default::default() })
}

/// The torus views' check: a topology with nodes.
fn needs_torus(d: &Dataset) -> Result<(), ViewError> {
    super::torus(d, "this view needs").map(|_| ())
}

/// Traffic per node over the selection's slice.
fn traffic_per_node(dataset: &Dataset, backend: &Backend, sel: &Selection) -> Result<Vec<u64>, ViewError> {
    let topo = super::torus(dataset, "this view needs")?;
    Ok(node_traffic(topo, &link_traffic_in(dataset, backend, sel.time_slice)?))
}

/// The ring view.
pub struct RingView(pub RingOptions);

struct RingPick {
    opts: RingOptions,
    traffic: Vec<u64>,
}

impl Picker for RingPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let topo = dataset.topology.as_ref()?;
        let v = ring_node_at(topo, &self.opts, at)?;
        Some(node_pick(topo, &self.traffic, traffic_unit(dataset), v))
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
    fn name(&self) -> &'static str {
        "ring"
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        needs_torus(d)
    }

    fn depends_on(&self) -> Parts {
        TORUS_FILTERS | Parts::GROUP | Parts::TRACK | Parts::ZOOM
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = self.options(sel, f);
        let scene = ring_scene(d, b, &opts)?;
        let traffic = traffic_per_node(d, b, sel)?;
        Ok(Box::new(Drawn { scene, picker: RingPick { opts, traffic } }))
    }
}

/// The mds and radviz views.
pub struct EmbeddingView(pub EmbeddingOptions);

struct PointsPick {
    points: Vec<[f32; 2]>,
    traffic: Vec<u64>,
}

impl Picker for PointsPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let topo = dataset.topology.as_ref()?;
        let dist = |p: &[f32; 2]| (p[0] - at[0]).hypot(p[1] - at[1]);
        let (v, p) = self.points.iter().enumerate().min_by(|a, b| dist(a.1).total_cmp(&dist(b.1)))?;
        (dist(p) <= 8.0).then(|| node_pick(topo, &self.traffic, traffic_unit(dataset), v as u32))
    }
}

impl contract::View for EmbeddingView {
    fn name(&self) -> &'static str {
        if self.0.embedding == Embedding::RadViz { "radviz" } else { "mds" }
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        super::torus(d, "the mds and radviz views need").map(|_| ())
    }

    fn depends_on(&self) -> Parts {
        Parts::NONE
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = EmbeddingOptions { width: f.width, height: f.height, ..self.0 };
        let (scene, points) = embedding_scene_and_points(d, b, &opts)?;
        let traffic = traffic_per_node(d, b, sel)?;
        Ok(Box::new(Drawn { scene, picker: PointsPick { points, traffic } }))
    }
}

/// The parcoords view (node selector).
pub struct ParcoordsView(pub ParcoordsOptions);

struct AxisPick {
    frame: Frame,
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
    fn name(&self) -> &'static str {
        "parcoords"
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        needs_torus(d)
    }

    fn depends_on(&self) -> Parts {
        TORUS_FILTERS
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

/// The themeriver view (time slicer).
pub struct ThemeRiverView;

struct TickPick {
    frame: Frame,
}

impl Picker for TickPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let tick = themeriver_tick_at(dataset, self.frame.width, self.frame.height, at)?;
        Some(Pick::new(format!("step {tick}"), vec!["drag in the linked view to slice time".into()]))
    }
}

impl contract::View for ThemeRiverView {
    fn name(&self) -> &'static str {
        "themeriver"
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        needs_torus(d)
    }

    fn depends_on(&self) -> Parts {
        TORUS_FILTERS
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

    /// A press at `from` and release at `to` (picture pixels) applied to the selection, as the
    /// linked view reads gestures: `None` when nothing changes.
    pub fn drag(&self, d: &Dataset, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let mut opts = self.options(sel, f);
        linked::gesture(d, &mut opts, from, to).then(|| with_linked_state(sel, &opts.state))
    }

    /// A zoom gesture (right button) from `from` to `to`.
    pub fn zoom(&self, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let mut opts = self.options(sel, f);
        linked::zoom_gesture(&mut opts, from, to).then(|| with_linked_state(sel, &opts.state))
    }

    /// Tracking the picked node's message on or off.
    pub fn toggle_track(&self, sel: &Selection, f: Frame) -> Option<Selection> {
        let mut opts = self.options(sel, f);
        linked::toggle_track(&mut opts).then(|| with_linked_state(sel, &opts.state))
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
        let (panel, r, q) = linked::panel_at(self.frame.width, self.frame.height, at)?;
        let sub = Frame { width: r[2], height: r[3] };
        match panel {
            linked::Panel::Ring => {
                let v = ring_node_at(topo, &RingOptions { width: r[2], height: r[3], ..self.ring }, q)?;
                Some(node_pick(topo, &self.traffic, traffic_unit(dataset), v))
            }
            linked::Panel::Parcoords => AxisPick { frame: sub }.pick(dataset, q),
            linked::Panel::River => TickPick { frame: sub }.pick(dataset, q),
        }
    }
}

impl contract::View for LinkedView {
    fn name(&self) -> &'static str {
        "linked"
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        needs_torus(d)
    }

    fn depends_on(&self) -> Parts {
        TORUS_FILTERS | Parts::GROUP | Parts::TRACK | Parts::ZOOM
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = self.options(sel, f);
        let scene = linked_scene(d, b, &opts)?;
        let traffic = traffic_per_node(d, b, sel)?;
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

use super::options::{ColormapArgs, RingSelectArgs, TorusSelectArgs};

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
    #[arg(long, default_value_t = crate::bundling::DEFAULT_BETA, value_parser = super::options::parse_beta)]
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
        use super::ring::{ChannelColour, RingBundle};
        RingOptions {
            width: 1024,
            height: 768,
            order: match self.order {
                OrderArg::Hilbert => crate::layout::Ordering::Hilbert,
                OrderArg::Sequential => crate::layout::Ordering::Sequential,
            },
            colormap: self.colormap.colormap.into(),
            bundle: match self.bundle {
                RingBundleArg::None => RingBundle::None,
                RingBundleArg::Kde => RingBundle::Kde(crate::stages::BundleParams::default()),
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
    fn select(&self) -> Selection {
        Selection { group: self.ring.group, track: self.ring.track, zoom: self.ring.zoom, ..self.torus.selection() }
    }
}

impl contract::Options for RingArgs {
    fn view(&self) -> Box<dyn contract::View> {
        Box::new(RingView(self.options()))
    }

    fn selection(&self) -> Selection {
        self.select()
    }
}

/// `exaviz render --view linked` options: the ring's.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct LinkedArgs {
    #[command(flatten)]
    pub ring: RingArgs,
}

impl LinkedArgs {
    pub fn view(&self) -> LinkedView {
        let ring = self.ring.options();
        let state = linked_state(&self.ring.select());
        LinkedView(LinkedOptions { width: 1024, height: 768, ring, colormap: ring.colormap, state })
    }
}

impl contract::Options for LinkedArgs {
    fn view(&self) -> Box<dyn contract::View> {
        Box::new(LinkedArgs::view(self))
    }

    fn selection(&self) -> Selection {
        self.ring.select()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// Every pair at its torus distance.
    Full,
    /// Pairs within --hops hops at their distance, the rest "infinite".
    Hops,
    /// Torus neighbours at distance 1, the rest "infinite".
    Immediate,
}

/// `exaviz render --view mds` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MdsArgs {
    /// Which distances the embedding keeps.
    #[arg(long, value_enum, default_value = "full")]
    pub scope: ScopeArg,
    /// With --scope hops: the most hops kept.
    #[arg(long, default_value_t = crate::layout::embed::PAPER_HOPS, value_parser = clap::value_parser!(u32).range(1..))]
    pub hops: u32,
    #[command(flatten)]
    pub colormap: ColormapArgs,
}

impl contract::Options for MdsArgs {
    fn view(&self) -> Box<dyn contract::View> {
        let embedding = match self.scope {
            ScopeArg::Full => Embedding::MdsFull,
            ScopeArg::Hops => Embedding::MdsHops(self.hops),
            ScopeArg::Immediate => Embedding::MdsImmediate,
        };
        let colormap = self.colormap.colormap.into();
        Box::new(EmbeddingView(EmbeddingOptions { width: 1024, height: 768, embedding, colormap }))
    }
}

/// `exaviz render --view radviz` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct RadvizArgs {
    #[command(flatten)]
    pub colormap: ColormapArgs,
}

impl contract::Options for RadvizArgs {
    fn view(&self) -> Box<dyn contract::View> {
        let colormap = self.colormap.colormap.into();
        Box::new(EmbeddingView(EmbeddingOptions { width: 1024, height: 768, embedding: Embedding::RadViz, colormap }))
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

impl contract::Options for ParcoordsArgs {
    fn view(&self) -> Box<dyn contract::View> {
        let colormap = self.colormap.colormap.into();
        Box::new(ParcoordsView(ParcoordsOptions { colormap, ..ParcoordsOptions::default() }))
    }

    fn selection(&self) -> Selection {
        self.torus.selection()
    }
}

/// `exaviz render --view themeriver` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ThemeRiverArgs {
    #[command(flatten)]
    pub torus: TorusSelectArgs,
}

impl contract::Options for ThemeRiverArgs {
    fn view(&self) -> Box<dyn contract::View> {
        Box::new(ThemeRiverView)
    }

    fn selection(&self) -> Selection {
        self.torus.selection()
    }
}
