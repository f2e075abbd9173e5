//! The view contract: every view is a [`View`] that `prepare`s the heavy part once (layout,
//! compute stages) for a selection and a frame, and a [`Prepared`] that `draw`s a [`Scene`]
//! cheaply and answers `pick` (what is under a point, for tooltips and clicks) without
//! recomputing anything. [`View::depends_on`] names the selection parts that need a new
//! `prepare`; a change of any other part, or a pan or zoom, only draws again.
//!
//! [`super::REGISTRY`] lists the views; `exaviz render`, `exaviz view` and `exaviz bench-interact` all
//! go through it.

use std::borrow::Cow;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::Scene;

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
    /// A click opens this view (a name `--view` takes) with the selection clicked, rather than
    /// selecting in this one (the steps view's cells open the timeline).
    pub opens: Option<&'static str>,
}

impl Pick {
    pub fn new(title: impl Into<String>, lines: Vec<String>) -> Self {
        Self { title: title.into(), lines, click: None, opens: None }
    }

    pub fn with_click(mut self, parts: Parts, selection: Selection) -> Self {
        self.click = Some((parts, selection));
        self
    }

    /// A click here opens `view` with the selection clicked.
    pub fn opening(mut self, view: &'static str) -> Self {
        self.opens = Some(view);
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

/// A view's name, from its type ([`Class::NAME`]): every [`Class`] has one.
pub trait Named {
    /// The name `--view` takes.
    fn name(&self) -> &'static str;
}

impl<C: Class> Named for C {
    fn name(&self) -> &'static str {
        C::NAME
    }
}

/// A view: options held by the value, the heavy work in `prepare`, and the gestures it reads
/// itself (each with a default, so the window and the command line never ask which view it is).
pub trait View: Named + Send + Sync {
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
    /// Another input the view compares this one with (`--against B`): the caller opens it and
    /// hands it over with [`View::compare_with`] before `prepare`.
    fn against(&self) -> Option<&str> {
        None
    }
    /// The run [`View::against`] names, opened by the caller; views that compare nothing ignore it.
    fn compare_with(&self, _other: std::sync::Arc<Dataset>) {}
    /// Where x is time, for views that zoom and pan in time (the selection's window): the plot
    /// rectangle `[x0, y0, x1, y1]` that the window spans at `frame`'s size.
    fn time_axis(&self, _frame: Frame) -> Option<[f32; 4]> {
        None
    }
    /// The time window (seconds since the trace's start) the view opens on and resets to when
    /// the selection has none; `None`: the whole trace.
    fn home(&self, _dataset: &Dataset) -> Option<(f64, f64)> {
        None
    }
    /// Whether `prepare` draws a dataset whose rows stay on disk ([`Dataset::out_of_core`]) from
    /// its pyramid; the other views get the rows of the selection's window read into memory
    /// when few enough ([`prepare`]).
    fn reads_pyramid(&self) -> bool {
        false
    }
    /// Whether `prepare` reads the trace's rows (messages, intervals) at all; the training
    /// views read only the training model and the operator graph, and draw a run whose rows
    /// stay on disk as one held in memory.
    fn reads_rows(&self) -> bool {
        true
    }
    /// Whether `prepare` draws a wide window of a trace in memory from its index
    /// ([`Dataset::index`]) rather than its rows: where the view reads a pyramid and the
    /// index's cells lose nothing the view would show.
    fn reads_index(&self, _index: &exaviz_model::dataset::OutOfCore) -> bool {
        self.reads_pyramid()
    }
    /// Whether `prepare` draws any window of a trace held in memory from its rows kept on
    /// `backend`'s device, even where [`View::reads_index`] would draw a wide one from the
    /// index: a device holding the rows answers every window from them (a filter, a narrow
    /// state) where the index's cells only sum them.
    fn draws_rows_on_device(
        &self,
        _dataset: &Dataset,
        _selection: &Selection,
        _frame: Frame,
        _backend: &Backend,
    ) -> bool {
        false
    }
    /// The rows of `window` of `dataset` (a trace kept on disk) as this view reads them where it
    /// keeps them otherwise (the timeline's chunks kept on a GPU): the rows
    /// [`Dataset::window_rows`] reads, in its order; `None` where the store is read.
    fn window_rows(
        &self,
        _dataset: &Dataset,
        _window: (u64, u64),
        _backend: &Backend,
    ) -> Option<Result<Dataset, ViewError>> {
        None
    }
    /// The picture of a window whose rows lie on another machine that this view can draw from
    /// per-pixel cells computed there ([`exaviz_model::dataset::Cells`]), where the window is
    /// dense; `None` where it draws none, or `selection` needs the rows themselves.
    fn cells_ask(
        &self,
        _dataset: &Dataset,
        _selection: &Selection,
        _frame: Frame,
    ) -> Option<exaviz_model::dataset::CellsAsk> {
        None
    }
    /// The view prepared from the cells [`View::cells_ask`] asked for.
    fn prepare_cells(
        &self,
        _dataset: &Dataset,
        _selection: &Selection,
        _frame: Frame,
        _backend: &Backend,
        _cells: &exaviz_model::dataset::Cells,
    ) -> Result<Box<dyn Prepared>, ViewError> {
        Err(ViewError::Unsupported(format!("the {} view draws no cells", self.name())))
    }
    /// Whether a drag pans the picture and the wheel zooms it (most views). A view whose
    /// panels read every press and release themselves says no: then each release goes to
    /// [`View::brush`] (a click too), the right button to [`View::zoom_drag`], and the wheel
    /// does nothing.
    fn pans(&self) -> bool {
        true
    }
    /// A drag from `from` to `to` (picture pixels) that brushes: the selection it makes, or
    /// `None` where nothing changes ([`View::brushes_at`]).
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
        !self.pans()
    }
    /// A drag with the right button from `from` to `to` (picture pixels): the selection it
    /// makes (a zoom rectangle), or `None`.
    fn zoom_drag(&self, _selection: &Selection, _frame: Frame, _from: [f32; 2], _to: [f32; 2]) -> Option<Selection> {
        None
    }
    /// A key the window does not use itself (`key` is its character, e.g. "t"): the selection
    /// it makes, or `None`.
    fn key(&self, _dataset: &Dataset, _selection: &Selection, _frame: Frame, _key: &str) -> Option<Selection> {
        None
    }
    /// The view's own gestures and keys, a line each, for the window's help.
    fn help(&self) -> &'static [&'static str] {
        &[]
    }
    /// The selection in the view's own words (the window's title and its line on standard
    /// error); `None`: the window describes it.
    fn describe(&self, _dataset: &Dataset, _selection: &Selection) -> Option<String> {
        None
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

/// An overview of a view's whole scene drawn in a corner that neither pans nor zooms (Wei et
/// al.'s minimap under the long computational graph): where it is, and the part of the scene it
/// shows. The window outlines in it the part of the scene in view, and a click in it moves the
/// scene so that the point clicked is in the window's centre.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Minimap {
    /// Where it is drawn, in window pixels `[x0, y0, x1, y1]`.
    pub area: [f32; 4],
    /// The part of the scene it shows, in scene pixels.
    pub world: [f32; 4],
}

impl Minimap {
    pub fn contains(&self, at: [f32; 2]) -> bool {
        let [x0, y0, x1, y1] = self.area;
        at[0] >= x0 && at[0] <= x1 && at[1] >= y0 && at[1] <= y1
    }

    /// The part of the scene in view under pan and zoom `t` in a window of `frame`, in the
    /// minimap's pixels, clipped to it.
    pub fn viewport(&self, t: exaviz_render::View, frame: Frame) -> [f32; 4] {
        let ([ax0, ay0, ax1, ay1], [wx0, wy0, wx1, wy1]) = (self.area, self.world);
        let scene = |s: f32, axis: usize| (s - t.offset[axis]) / t.scale.max(1e-6);
        let map = |v: f32, w0: f32, w1: f32, a0: f32, a1: f32| {
            (a0 + (v - w0) / (w1 - w0).max(1e-6) * (a1 - a0)).clamp(a0, a1)
        };
        [
            map(scene(0.0, 0), wx0, wx1, ax0, ax1),
            map(scene(0.0, 1), wy0, wy1, ay0, ay1),
            map(scene(frame.width as f32, 0), wx0, wx1, ax0, ax1),
            map(scene(frame.height as f32, 1), wy0, wy1, ay0, ay1),
        ]
    }

    /// Pan and zoom `t` moved so that the scene point under `at` (in the minimap) is in the
    /// window's centre, the zoom kept.
    pub fn centred(&self, at: [f32; 2], t: exaviz_render::View, frame: Frame) -> exaviz_render::View {
        let ([ax0, ay0, ax1, ay1], [wx0, wy0, wx1, wy1]) = (self.area, self.world);
        let world = [
            wx0 + (at[0] - ax0) / (ax1 - ax0).max(1e-6) * (wx1 - wx0),
            wy0 + (at[1] - ay0) / (ay1 - ay0).max(1e-6) * (wy1 - wy0),
        ];
        let centre = [frame.width as f32 / 2.0, frame.height as f32 / 2.0];
        exaviz_render::View { scale: t.scale, offset: [centre[0] - world[0] * t.scale, centre[1] - world[1] * t.scale] }
    }

    /// Outlines the part in view (see [`Minimap::viewport`]).
    pub fn draw_viewport(&self, scene: &mut Scene, t: exaviz_render::View, frame: Frame) {
        let v = self.viewport(t, frame);
        scene.frame(v, 1.5, [1.0, 1.0, 1.0, 0.9], true);
    }
}

/// A prepared view: drawing and picking, both cheap.
pub trait Prepared: Send + Sync {
    /// The scene for `selection` in the dataset it was prepared from (the selection may differ from the prepared one in parts the view does
    /// not depend on, e.g. a highlighted pair).
    fn draw(&self, dataset: &Dataset, selection: &Selection) -> Cow<'_, Scene>;
    /// What is at `at`, in the prepared picture's pixels (before pan and zoom), in the dataset
    /// it was prepared from.
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick>;
    /// The numbers of the selection's area ([`Selection::area`]), where the view sums one up.
    fn area_summary(&self) -> Option<&exaviz_analysis::summary::Summary> {
        None
    }
    /// The view's minimap, where it draws one.
    fn minimap(&self) -> Option<Minimap> {
        None
    }
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
    /// The view's minimap, where it draws one.
    fn minimap(&self) -> Option<Minimap> {
        None
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

    fn minimap(&self) -> Option<Minimap> {
        self.picker.minimap()
    }
}

/// Nothing to pick (pictures without tooltips yet).
pub struct NoPick;

impl Picker for NoPick {
    fn pick(&self, _: &Dataset, _: [f32; 2]) -> Option<Pick> {
        None
    }
}

/// A kind of view: its name and description, and its command-line options, a clap `Args`
/// struct (so `exaviz render --view V --help`, the parser and the window's panel come from it)
/// that makes the view and the selection it asks for. The options of one view only are
/// accepted with it. The registry ([`super::REGISTRY`]) lists classes, one line each.
pub trait Class: Sized + 'static {
    /// The name `--view` takes.
    const NAME: &'static str;
    /// One sentence for `--help` and the window's list.
    const ABOUT: &'static str;
    type Args: clap::Args + clap::FromArgMatches;
    /// The view of `args`.
    fn new(args: &Self::Args) -> Self;
    /// What the options select (nodes, a pair, a time window, ...); nothing by default.
    fn selection(_args: &Self::Args) -> Selection {
        Selection::default()
    }
}

/// A view made from its options, with the selection they ask for.
pub struct Built {
    pub view: Box<dyn View>,
    pub selection: Selection,
}

/// A clap error as one line: its first line, the arguments it lists and the values it offers.
pub fn error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
    let more: Vec<&str> =
        lines.take_while(|l| l.starts_with("  ")).map(str::trim).filter(|l| !l.starts_with("tip:")).collect();
    if !more.is_empty() {
        first = format!("{first} {}", more.join(", "));
    }
    // clap's suggestion for a mistyped value or option ("tip: a similar value exists: 'x'").
    let similar = text.lines().map(str::trim).find_map(|l| {
        l.strip_prefix("tip: a similar value exists: ").or_else(|| l.strip_prefix("tip: a similar argument exists: "))
    });
    if let Some(s) = similar {
        first = format!("{first}; did you mean {s}?");
    }
    first
}

/// One entry of the registry.
pub struct Entry {
    pub name: &'static str,
    pub about: &'static str,
    /// Adds the view's options to a command (`<C::Args as clap::Args>::augment_args`).
    pub args: fn(clap::Command) -> clap::Command,
    /// The view from options parsed with [`Entry::command`] ([`build`]).
    pub build: fn(&clap::ArgMatches) -> Result<Built, clap::Error>,
}

impl Entry {
    /// The entry of the view class `C`.
    pub const fn of<C: Class + View>() -> Self {
        Self { name: C::NAME, about: C::ABOUT, args: <C::Args as clap::Args>::augment_args, build: build::<C> }
    }

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
        super::REGISTRY.iter().find(|e| e.name == name)
    }
}

/// [`Entry::build`] for the class `C`.
pub fn build<C: Class + View>(matches: &clap::ArgMatches) -> Result<Built, clap::Error> {
    let args = <C::Args as clap::FromArgMatches>::from_arg_matches(matches)?;
    Ok(Built { view: Box::new(C::new(&args)), selection: C::selection(&args) })
}

pub use exaviz_model::dataset::ROW_BUDGET;

/// Prepares `view`: the path every picture takes. A dataset whose rows stay on disk gets the
/// rows of the selection's window read into memory when they number at most [`ROW_BUDGET`]; a
/// larger window is drawn from the pyramid by the views that read it, and refused by the others
/// with what to do instead. A dataset in memory with an index ([`Dataset::index`]) draws such a
/// window from its index too, in the views that read a pyramid; the others read its rows.
pub fn prepare(
    view: &dyn View,
    dataset: &Dataset,
    selection: &Selection,
    frame: Frame,
    backend: &Backend,
) -> Result<Box<dyn Prepared>, ViewError> {
    let Some(ooc) = &dataset.out_of_core else {
        // Rows in memory but many: a window holding more than a picture reads at once is drawn
        // from the index, as a store's is.
        // A message filter the index's sums cannot serve: the rows are drawn.
        if let Some(index) = &dataset.index
            && view.reads_index(index)
            && selection.messages.is_none_or(|f| f.is_all())
            && !view.draws_rows_on_device(dataset, selection, frame, backend)
        {
            let tps = dataset.trace.ticks_per_second.max(1) as f64;
            let home = Selection { window_s: selection.window_s.or_else(|| view.home(dataset)), ..*selection };
            let window = super::trace::window_in(index.span, tps, home.window_s).unwrap_or(index.span);
            if index.rows.estimate(window) > exaviz_model::held_index::INDEX_ROWS {
                let rows = dataset.indexed(index);
                let inner = view.prepare(&rows, &home, frame, backend)?;
                return Ok(Box::new(WithRows { rows, inner }));
            }
        }
        return view.prepare(dataset, selection, frame, backend);
    };
    if !view.reads_rows() {
        return view.prepare(dataset, selection, frame, backend);
    }
    // A dense window of rows on a server: its picture as cells computed there, in the round
    // trip that otherwise brings its rows.
    if let Some(ask) = view.cells_ask(dataset, selection, frame)
        && let Some(cells) = ooc.rows.cells(&ask)
    {
        let cells = cells.map_err(ViewError::Unsupported)?;
        return view.prepare_cells(dataset, selection, frame, backend, &cells);
    }
    let window = super::trace::window_ticks(dataset, selection).unwrap_or(ooc.span);
    let rows = ooc.rows.estimate(window);
    if rows <= ROW_BUDGET {
        let rows = match view.window_rows(dataset, window, backend) {
            Some(rows) => rows?,
            None => dataset.window_rows(window).map_err(ViewError::Unsupported)?.into_owned(),
        };
        let inner = view.prepare(&rows, selection, frame, backend)?;
        return Ok(Box::new(WithRows { rows, inner }));
    }
    if view.reads_pyramid() {
        return view.prepare(dataset, selection, frame, backend);
    }
    Err(ViewError::Unsupported(format!(
        "the {} view reads raw rows, and this window holds about {rows} of the trace's {} messages and intervals, more than the {ROW_BUDGET} read at once: choose a shorter time window (--from/--to, or zoom a timeline), or use the timeline, matrix, chord or sendrecv view, which draw any window from the pyramid",
        view.name(),
        ooc.messages + ooc.intervals
    )))
}

/// The picture to show at once while the rows of a window are fetched from another machine:
/// `view` prepared from the pyramid whatever the window holds. `None` where the rows are local
/// or the view draws no pyramid ([`prepare`] is then the first picture).
pub fn prepare_coarse(
    view: &dyn View,
    dataset: &Dataset,
    selection: &Selection,
    frame: Frame,
    backend: &Backend,
) -> Option<Result<Box<dyn Prepared>, ViewError>> {
    let ooc = dataset.out_of_core.as_ref()?;
    (ooc.rows.remote() && view.reads_rows() && view.reads_pyramid())
        .then(|| view.prepare(dataset, selection, frame, backend))
}

/// Whether [`prepare`] reads rows for `selection`'s window of a dataset whose rows stay on disk
/// or on a server (else the view draws it from the pyramid, as [`prepare_coarse`] does), for a
/// picture `frame` large: or draws it from cells a server computed ([`View::cells_ask`]).
pub fn reads_window_rows(view: &dyn View, dataset: &Dataset, selection: &Selection, frame: Frame) -> bool {
    let Some(ooc) = &dataset.out_of_core else { return true };
    if !view.reads_rows() {
        return true;
    }
    // Cells are kept for the prepare that follows.
    if let Some(ask) = view.cells_ask(dataset, selection, frame)
        && ooc.rows.cells(&ask).is_some()
    {
        return true;
    }
    let window = super::trace::window_ticks(dataset, selection).unwrap_or(ooc.span);
    ooc.rows.estimate(window) <= ROW_BUDGET || !view.reads_pyramid()
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
) -> Result<exaviz_render::Image, ViewError> {
    render_view_outlined(view, dataset, selection, frame, backend).map(|(image, _)| image)
}

/// [`render_view`], and what the picture shows for programs ([`exaviz_render::Outline`]: its
/// rows and legend by name), the view's name in it: what `exaviz render --scene-json` writes.
pub fn render_view_outlined(
    view: &dyn View,
    dataset: &Dataset,
    selection: &Selection,
    frame: Frame,
    backend: &Backend,
) -> Result<(exaviz_render::Image, exaviz_render::Outline), ViewError> {
    selection.validate(dataset)?;
    let prepared = prepare(view, dataset, selection, frame, backend)?;
    let scene = prepared.draw(dataset, selection);
    let image = exaviz_render::render_scene(backend, &scene, exaviz_render::View::default())
        .map_err(|e| ViewError::Unsupported(e.to_string()))?;
    let mut outline = scene.outline.clone();
    outline.view = view.name().to_string();
    if outline.title.is_empty() {
        outline.title = scene.labels.first().map(|l| l.text.clone()).unwrap_or_default();
    }
    Ok((image, outline))
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
}
