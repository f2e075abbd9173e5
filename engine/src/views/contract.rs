//! The view contract: every view is a [`View`] that `prepare`s the heavy part once (layout,
//! compute stages) for a selection and a frame, and a [`Prepared`] that `draw`s a [`Scene`]
//! cheaply and answers `pick` (what is under a point, for tooltips and clicks) without
//! recomputing anything. [`View::depends_on`] names the selection parts that need a new
//! `prepare`; a change of any other part, or a pan or zoom, only draws again.
//!
//! [`REGISTRY`] lists the views; `exaviz render`, `exaviz view` and `exaviz bench-interact` all
//! go through it.

use std::borrow::Cow;

use crate::Backend;
use crate::model::Dataset;
use crate::render::Scene;
use crate::selection::{Parts, Selection};

use super::ViewError;

/// The picture a view is prepared for, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
}

/// What is under a point: a title and lines for a tooltip, and what a click there selects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pick {
    pub title: String,
    pub lines: Vec<String>,
    /// A click selects these parts as they are in the selection given (a second click on the
    /// same thing clears them again).
    pub click: Option<(Parts, Selection)>,
}

impl Pick {
    pub fn new(title: impl Into<String>, lines: Vec<String>) -> Self {
        Self { title: title.into(), lines, click: None }
    }

    pub fn with_click(mut self, parts: Parts, selection: Selection) -> Self {
        self.click = Some((parts, selection));
        self
    }

    /// The selection after clicking here: `parts` taken from the pick's, or cleared when they
    /// already equal it.
    pub fn clicked(&self, current: &Selection) -> Option<Selection> {
        let (parts, chosen) = self.click.as_ref()?;
        let same = current.only(*parts) == chosen.only(*parts);
        let cleared = Selection::default();
        Some(current.replaced(*parts, if same { &cleared } else { chosen }))
    }
}

/// A view: options held by the value, the heavy work in `prepare`.
pub trait View: Send + Sync {
    /// The name `--view` takes.
    fn name(&self) -> &'static str;
    /// Selection parts that change what `prepare` computes.
    fn depends_on(&self) -> Parts;
    /// Selection parts the view reads at all (in `prepare` or `draw`); the others are refused
    /// on the command line.
    fn reads(&self) -> Parts {
        self.depends_on()
    }
    /// Whether the dataset has what the view needs (processes, a topology, events), cheaply,
    /// so that a window can refuse bad input before it opens.
    fn check(&self, _dataset: &Dataset) -> Result<(), ViewError> {
        Ok(())
    }
    /// Where x is time, for views that zoom and pan in time (the selection's window): the plot
    /// rectangle `[x0, y0, x1, y1]` that the window spans at `frame`'s size.
    fn time_axis(&self, _frame: Frame) -> Option<[f32; 4]> {
        None
    }
    /// Whether `prepare` draws a dataset whose rows stay on disk ([`Dataset::out_of_core`]) from
    /// its pyramid; the other views get the rows of the selection's window read into memory
    /// when few enough ([`prepare`]).
    fn reads_pyramid(&self) -> bool {
        false
    }
    /// A drag from `from` to `to` (picture pixels) that brushes: the selection it makes, or
    /// `None` where a drag there pans ([`View::brushes_at`]).
    fn brush(
        &self,
        _dataset: &Dataset,
        _selection: &Selection,
        _frame: Frame,
        _from: [f32; 2],
        _to: [f32; 2],
    ) -> Option<Selection> {
        None
    }
    /// Whether a drag starting at `at` brushes (a chart's axis) rather than pans.
    fn brushes_at(&self, _dataset: &Dataset, _frame: Frame, _at: [f32; 2]) -> bool {
        false
    }
    /// Layout and compute stages for `selection` at `frame`'s size.
    fn prepare(
        &self,
        dataset: &Dataset,
        selection: &Selection,
        frame: Frame,
        backend: &Backend,
    ) -> Result<Box<dyn Prepared>, ViewError>;
}

/// A prepared view: drawing and picking, both cheap.
pub trait Prepared: Send + Sync {
    /// The scene for `selection` in the dataset it was prepared from (the selection may differ from the prepared one in parts the view does
    /// not depend on, e.g. a highlighted pair).
    fn draw(&self, dataset: &Dataset, selection: &Selection) -> Cow<'_, Scene>;
    /// What is at `at`, in the prepared picture's pixels (before pan and zoom), in the dataset
    /// it was prepared from.
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick>;
}

/// A prepared scene and a picking function: the usual [`Prepared`].
pub struct Drawn<P> {
    pub scene: Scene,
    pub picker: P,
}

/// Picking over a view's own prepared data.
pub trait Picker: Send + Sync {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick>;
    /// Highlights of the selection's parts the view draws without preparing again.
    fn overlay(&self, _dataset: &Dataset, _selection: &Selection, _scene: &mut Scene) -> bool {
        false
    }
}

impl<P: Picker> Prepared for Drawn<P> {
    fn draw(&self, dataset: &Dataset, selection: &Selection) -> Cow<'_, Scene> {
        let mut scene = self.scene.clone();
        if self.picker.overlay(dataset, selection, &mut scene) { Cow::Owned(scene) } else { Cow::Borrowed(&self.scene) }
    }

    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        self.picker.pick(dataset, at)
    }
}

/// Nothing to pick (pictures without tooltips yet).
pub struct NoPick;

impl Picker for NoPick {
    fn pick(&self, _: &Dataset, _: [f32; 2]) -> Option<Pick> {
        None
    }
}

/// A view's command-line options: a clap `Args` struct (so `exaviz render --view V --help`, the
/// parser and the window's panel come from it) that makes the view and the selection it asks
/// for. The options of one view only are accepted with it.
pub trait Options: clap::Args + clap::FromArgMatches {
    fn view(&self) -> Box<dyn View>;
    /// What the options select (nodes, a pair, a time window, ...); nothing by default.
    fn selection(&self) -> Selection {
        Selection::default()
    }
}

/// A view made from its options, with the selection they ask for.
pub struct Built {
    pub view: Box<dyn View>,
    pub selection: Selection,
}

/// One entry of the registry.
pub struct Entry {
    pub name: &'static str,
    pub about: &'static str,
    /// Adds the view's options to a command (`<O as clap::Args>::augment_args`).
    pub args: fn(clap::Command) -> clap::Command,
    /// The view from options parsed with [`Entry::command`] ([`build`]).
    pub build: fn(&clap::ArgMatches) -> Result<Built, clap::Error>,
}

impl Entry {
    /// The view's options as a command of their own, named after the view.
    pub fn command(&self) -> clap::Command {
        (self.args)(clap::Command::new(self.name).about(self.about).no_binary_name(true))
    }

    /// The view and selection of `options` (command-line words, e.g. `["--mix", "alpha"]`).
    pub fn parse<S: AsRef<str>>(&self, options: &[S]) -> Result<Built, clap::Error> {
        let matches = self.command().try_get_matches_from(options.iter().map(|s| s.as_ref().to_string()))?;
        (self.build)(&matches)
    }

    /// The entry called `name`.
    pub fn find(name: &str) -> Option<&'static Entry> {
        REGISTRY.iter().find(|e| e.name == name)
    }
}

impl Entry {
    /// The entry of a view called `name` whose options are `O`.
    pub const fn of<O: Options>(name: &'static str, about: &'static str) -> Self {
        Self { name, about, args: <O as clap::Args>::augment_args, build: build::<O> }
    }
}

/// [`Entry::build`] for the options `O`.
pub fn build<O: Options>(matches: &clap::ArgMatches) -> Result<Built, clap::Error> {
    let o = O::from_arg_matches(matches)?;
    Ok(Built { view: o.view(), selection: o.selection() })
}

use super::chord::ChordArgs;
use super::fattree::FatTreeArgs;
use super::marey::{MareyArgs, OverviewArgs};
use super::matrix::MatrixArgs;
use super::mpi_linked::MpiArgs;
use super::sendrecv::SendRecvArgs;
use super::timeline::TimelineArgs;
use super::torus_views::{LinkedArgs, MdsArgs, ParcoordsArgs, RadvizArgs, RingArgs, ThemeRiverArgs};

/// Every view, in the order `--help` and the window list them. A new view is its module and
/// one line here.
pub const REGISTRY: &[Entry] = &[
    Entry::of::<RingArgs>(
        "ring",
        "Torus nodes on a circle in sequential or Hilbert order, links as chords coloured by traffic (TorusVisND).",
    ),
    Entry::of::<TimelineArgs>(
        "timeline",
        "MPI trace: processes as rows over time, states as coloured bars, messages as lines (Brendel et al., 2016).",
    ),
    Entry::of::<MatrixArgs>("matrix", "MPI trace: communication matrix, senders as rows, receivers as columns."),
    Entry::of::<ChordArgs>(
        "chord",
        "MPI trace: processes on a circle, communicating pairs as hierarchically bundled curves.",
    ),
    Entry::of::<SendRecvArgs>(
        "sendrecv",
        "MPI trace: senders on the left, receivers on the right, pairs routed over an 8x8 grid.",
    ),
    Entry::of::<MpiArgs>(
        "mpi",
        "MPI trace: timeline over matrix and chord diagram, linked: a click selects a pair in all three, the \
                timeline's time window restricts the others.",
    ),
    Entry::of::<MdsArgs>(
        "mds",
        "Torus embedded by MDS on its hop-distance matrix, links coloured by traffic (TorusTrafficND).",
    ),
    Entry::of::<RadvizArgs>(
        "radviz",
        "Torus embedded by RadViz, one anchor per dimension, links coloured by traffic (TorusTrafficND).",
    ),
    Entry::of::<ParcoordsArgs>(
        "parcoords",
        "Torus node selector: parallel coordinates, one axis per dimension, a line per node (TorusVisND).",
    ),
    Entry::of::<ThemeRiverArgs>(
        "themeriver",
        "Torus time slicer: a ThemeRiver of the traffic on selected or the busiest nodes over time (TorusVisND).",
    ),
    Entry::of::<LinkedArgs>(
        "linked",
        "Torus ring, node selector and time slicer side by side, sharing one selection (TorusVisND).",
    ),
    Entry::of::<FatTreeArgs>(
        "fattree",
        "Fat-tree network: per pod and bundle, L1xL2 and L3xL2 adjacency matrices of link traffic with time-chart and histogram brushes, a job table and routes (TreeScope, Bhatia et al., 2018).",
    ),
    Entry::of::<MareyArgs>(
        "marey",
        "Parallel DNN training: the enhanced Marey's graph, devices as time axes grouped by pipeline stage, operators as bands joined across devices, aligned, aggregated, with rule findings (Wei et al., 2024).",
    ),
    Entry::of::<OverviewArgs>(
        "training",
        "Parallel DNN training overview: per step and device, computation, communication and waiting as stacked bars; a click opens a step in the Marey view (Wei et al., 2024).",
    ),
];

/// The messages sent within `window_s` (seconds since the trace's start: the timeline's time
/// window), or all of them without a window: what the matrix, chord and sendrecv views count
/// when time is brushed on a linked timeline.
pub fn messages_in(t: &crate::model::Trace, window_s: Option<(f64, f64)>) -> Cow<'_, crate::model::Messages> {
    let (Some((a, b)), Some((start, _))) = (window_s, super::timeline::span(t)) else {
        return Cow::Borrowed(&t.messages);
    };
    let tps = t.ticks_per_second.max(1) as f64;
    let at = |s: f64| start.saturating_add((s.max(0.0) * tps).min(u64::MAX as f64) as u64);
    let (from, to) = (at(a), at(b));
    let m = &t.messages;
    let keep: Vec<usize> = (0..m.source.len()).filter(|&i| (from..to).contains(&m.send_time[i])).collect();
    let pick = |c: &[u32]| keep.iter().map(|&i| c[i]).collect::<Vec<u32>>();
    let pick64 = |c: &[u64]| keep.iter().map(|&i| c[i]).collect::<Vec<u64>>();
    Cow::Owned(crate::model::Messages {
        source: pick(&m.source),
        destination: pick(&m.destination),
        send_time: pick64(&m.send_time),
        recv_time: pick64(&m.recv_time),
        bytes: pick(&m.bytes),
        tag: pick(&m.tag),
    })
}

/// The MPI views' check: a trace with at least `least` processes.
pub fn needs_processes(dataset: &Dataset, who: &str, least: usize) -> Result<(), ViewError> {
    let n = dataset.trace.locations.name.len();
    if n < least {
        return Err(ViewError::Unsupported(format!(
            "the {who} view needs a trace with at least {least} processes (locations); this one has {n}"
        )));
    }
    Ok(())
}

/// Most messages and intervals read from disk for one picture of a trace kept there; a window
/// holding more is drawn from the pyramid.
pub const ROW_BUDGET: u64 = 5_000_000;

/// The window of `selection` in ticks of the trace's whole span (`None`: the whole span, or a
/// trace without times).
pub fn window_ticks(dataset: &Dataset, selection: &Selection) -> Option<(u64, u64)> {
    let t = &dataset.trace;
    let tps = t.ticks_per_second.max(1) as f64;
    super::timeline::window_ticks(super::timeline::span(t)?, tps, selection.window_s).ok()
}

/// Prepares `view`: the path every picture takes. A dataset whose rows stay on disk gets the
/// rows of the selection's window read into memory when they number at most [`ROW_BUDGET`]; a
/// larger window is drawn from the pyramid by the views that read it, and refused by the others
/// with what to do instead.
pub fn prepare(
    view: &dyn View,
    dataset: &Dataset,
    selection: &Selection,
    frame: Frame,
    backend: &Backend,
) -> Result<Box<dyn Prepared>, ViewError> {
    let Some(ooc) = &dataset.out_of_core else { return view.prepare(dataset, selection, frame, backend) };
    let window = window_ticks(dataset, selection).unwrap_or(ooc.span);
    let rows = ooc.rows.estimate(window);
    if rows <= ROW_BUDGET {
        let rows = dataset.window_rows(window).map_err(ViewError::Unsupported)?.into_owned();
        let inner = view.prepare(&rows, selection, frame, backend)?;
        return Ok(Box::new(WithRows { rows, inner }));
    }
    if view.reads_pyramid() {
        return view.prepare(dataset, selection, frame, backend);
    }
    Err(ViewError::Unsupported(format!(
        "the {} view reads raw rows, and this window holds about {rows} of the trace's {} messages and intervals, more than the {ROW_BUDGET} read at once: choose a shorter time window (--from/--to, or zoom a timeline), or use the timeline or matrix view, which draw any window from the pyramid",
        view.name(),
        ooc.messages + ooc.intervals
    )))
}

/// A view prepared from the rows of a window read from disk: drawn and picked with them.
struct WithRows {
    rows: Dataset,
    inner: Box<dyn Prepared>,
}

impl Prepared for WithRows {
    fn draw(&self, _: &Dataset, selection: &Selection) -> Cow<'_, Scene> {
        self.inner.draw(&self.rows, selection)
    }

    fn pick(&self, _: &Dataset, at: [f32; 2]) -> Option<Pick> {
        self.inner.pick(&self.rows, at)
    }
}

/// Renders what `view` prepares for `selection` at `frame`: the path `exaviz render` takes.
pub fn render_view(
    view: &dyn View,
    dataset: &Dataset,
    selection: &Selection,
    frame: Frame,
    backend: &Backend,
) -> Result<crate::render::Image, ViewError> {
    selection.validate(dataset)?;
    let prepared = prepare(view, dataset, selection, frame, backend)?;
    let scene = prepared.draw(dataset, selection);
    crate::render::render_scene(backend, &scene, crate::render::View::default())
        .map_err(|e| ViewError::Unsupported(e.to_string()))
}

/// A tooltip's lines under a point `at` of a rectangle `[x0, y0, x1, y1]`: the share of the way
/// across and down, if inside.
pub fn share_in(rect: [f32; 4], at: [f32; 2]) -> Option<[f32; 2]> {
    let [x0, y0, x1, y1] = rect;
    let u = (at[0] - x0) / (x1 - x0);
    let v = (at[1] - y0) / (y1 - y0);
    ((0.0..1.0).contains(&u) && (0.0..1.0).contains(&v)).then_some([u, v])
}

/// Distance from `p` to the segment `a`-`b`, for picking lines and curves.
pub fn distance_to_segment(p: [f32; 2], a: [f32; 2], b: [f32; 2]) -> f32 {
    let (p, a, b) = (glam::Vec2::from(p), glam::Vec2::from(a), glam::Vec2::from(b));
    let ab = b - a;
    let len2 = ab.length_squared();
    let h = if len2 > 0.0 { ((p - a).dot(ab) / len2).clamp(0.0, 1.0) } else { 0.0 };
    p.distance(a + ab * h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_click_on_the_same_pair_clears_it() {
        let pick =
            Pick::new("pair", vec![]).with_click(Parts::PAIR, Selection { pair: Some((1, 2)), ..Default::default() });
        let start = Selection { node: Some(4), ..Default::default() };
        let once = pick.clicked(&start).expect("clickable");
        assert_eq!(once, Selection { node: Some(4), pair: Some((1, 2)), ..Default::default() });
        assert_eq!(pick.clicked(&once), Some(start));
        assert_eq!(Pick::new("x", vec![]).clicked(&start), None);
    }

    #[test]
    fn distances_to_segments_clamp_at_the_ends() {
        assert_eq!(distance_to_segment([5.0, 3.0], [0.0, 0.0], [10.0, 0.0]), 3.0);
        assert_eq!(distance_to_segment([13.0, 4.0], [0.0, 0.0], [10.0, 0.0]), 5.0);
        assert_eq!(distance_to_segment([3.0, 4.0], [0.0, 0.0], [0.0, 0.0]), 5.0);
    }

    #[test]
    fn the_registry_names_each_view_once() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }

    #[test]
    fn each_entry_parses_its_own_options_into_its_view() {
        for entry in REGISTRY {
            entry.command().debug_assert();
            let built = entry.parse::<&str>(&[]).unwrap_or_else(|e| panic!("{} defaults: {e}", entry.name));
            assert_eq!(built.view.name(), entry.name);
            assert_eq!(built.selection, Selection::default(), "{} selects nothing by default", entry.name);
        }
        let timeline = Entry::find("timeline").expect("listed");
        let built = timeline.parse(&["--pair", "3,4", "--from", "0.5", "--to", "1.5"]).expect("valid");
        assert_eq!((built.selection.pair, built.selection.window_s), (Some((3, 4)), Some((0.5, 1.5))));
        assert!(timeline.parse(&["--bundle", "blocks"]).is_err(), "blocks bundle the ring only");
        assert!(timeline.parse(&["--beta", "1.5"]).is_err(), "beta is from 0 to 1");
        assert!(Entry::find("mds").expect("listed").parse(&["--hops", "0"]).is_err());
        let ring = Entry::find("ring").expect("listed").parse(&["--node", "5", "--track", "2"]).expect("valid");
        assert_eq!((ring.selection.node, ring.selection.track), (Some(5), Some(2)));
    }
}
