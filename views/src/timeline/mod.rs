//! The `timeline` view (Brendel et al., 2016): processes as rows over time, states as coloured
//! bars, messages as lines, collectives joined; a window too large to read is drawn from the
//! trace's pyramid ([`pyramid`]).

mod args;
mod axis;
mod collectives;
pub mod counters;
mod density;
mod device;
mod index;
mod instants;
mod options;
mod pan;
mod pick;
mod pieces;
mod pyramid;
mod pyramid_device;
mod ring;
mod routes;
mod scene;
mod search;
mod states;
#[cfg(test)]
mod tests;
pub mod tracks;

use std::sync::Arc;

use exaviz_analysis::summary::Summary;
use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Area;
use exaviz_model::selection::{Parts, Selection};

use super::ViewError;
use super::contract::{self, Class, Drawn, Frame, Prepared};
use super::kept::{Kept, kept};
use super::trace::{Home, span};

pub use args::{RowsArg, StatesArg, SummaryArg, TimelineBundleArg, TimelineLook};
pub use axis::locations_counted;
pub use index::TimelineIndex;
pub use options::{DEFAULT_MESSAGE_OPACITY, Rows, StateMode, SummaryTrack, TimelineBundle, TimelineOptions};
pub use pan::{KeptColumns, KeptLines, KeptStates, LastColumns, LastPicture, SHIFT_SLACK, StatesKey, TraceKey};
pub use pick::TimelinePick;
pub use pyramid::window_cells;
pub use scene::{plot_rect, timeline_scene};

/// The timeline view through the view contract: the trace's index is built once and kept.
#[derive(Default)]
pub struct TimelineView {
    pub opts: TimelineOptions,
    index: Kept<IndexKey, Arc<TimelineIndex>>,
    /// The trace's home window (a scan of every row, so found once per trace).
    home: Kept<IndexKey, Option<Home>>,
    /// The last area summed up, kept while the window pans and zooms.
    area: Kept<(IndexKey, Area), Arc<Summary>>,
    /// The counter series of a trace drawn from its pyramid (the others' are in the index).
    counters: Kept<IndexKey, Arc<counters::CounterIndex>>,
    /// The state colours and message lines of the last picture, so that a pan draws only the
    /// columns it uncovers.
    pub(crate) last: LastPicture,
    /// The trace's critical path, found once per trace.
    critical: Kept<IndexKey, Arc<exaviz_analysis::critical_path::Path>>,
    /// The trace's dependency graph ([`exaviz_analysis::critical_path`]), built once per trace for the critical
    /// path and an area's root causes of waiting.
    graph: Kept<IndexKey, Arc<exaviz_analysis::critical_path::Graph>>,
}

/// Which trace an index was built from.
type IndexKey = (String, usize, usize, usize);

impl TimelineView {
    pub fn with(opts: TimelineOptions) -> Self {
        Self { opts, ..Default::default() }
    }

    fn key(dataset: &Dataset) -> IndexKey {
        let t = &dataset.trace;
        (dataset.name.clone(), t.messages.source.len(), t.intervals.start.len(), t.locations.name.len())
    }

    /// The window drawn when none is asked for ([`super::trace::home_window`]), kept per trace.
    pub(crate) fn home_of(&self, dataset: &Dataset) -> Option<Home> {
        if dataset.trace.span_of_whole.is_some() {
            // The rows of one window of a larger trace have no home of their own.
            return None;
        }
        kept(&self.home, Self::key(dataset), || super::trace::home_window(&dataset.trace))
    }

    /// The numbers of `area` of the trace, with the root causes of the waiting in it (as
    /// `exaviz summary` gives them) where the trace holds at most a million rows, kept for the
    /// last area asked for.
    fn summary_of(&self, dataset: &Dataset, area: Area) -> Arc<Summary> {
        kept(&self.area, (Self::key(dataset), area), || {
            let index = self.index(dataset);
            let t = &dataset.trace;
            let (mut s, causes) = rayon::join(
                || exaviz_analysis::summary::summarize_from(t, area, AREA_PAIRS, &*index),
                || {
                    // The trace's graph is built at the first area: seconds past a million rows,
                    // where a brush must answer in about 100 ms (`exaviz summary` gives them).
                    if (t.messages.source.len() + t.intervals.start.len()) as u64 > exaviz_model::held_index::INDEX_ROWS
                    {
                        return (Vec::new(), None);
                    }
                    let g = self.graph_of(dataset);
                    let causes = exaviz_analysis::critical_path::causes::root_causes_in(
                        t,
                        &g,
                        (area.from, area.to),
                        area.first..=area.last,
                    );
                    // The area's rows one process: what the run would save were it to work as
                    // its peers do.
                    let of = |l: u32| g.lanes.process.get(l as usize).copied();
                    let one = of(area.first).filter(|&p| (area.first..=area.last).all(|l| of(l) == Some(p)));
                    let what_if = one.and_then(|p| {
                        let window = t.span().map_or((0, 0), |s| (s.0, s.1.saturating_add(1)));
                        let path = self.critical_of(dataset);
                        exaviz_analysis::critical_path::what_if::process_at_peers(
                            t,
                            &g,
                            dataset.training.as_deref(),
                            window,
                            &path,
                            p,
                        )
                    });
                    (causes, what_if)
                },
            );
            (s.root_causes, s.what_if) = causes;
            Arc::new(s)
        })
    }

    /// The dependency graph of the whole trace, kept per trace.
    fn graph_of(&self, dataset: &Dataset) -> Arc<exaviz_analysis::critical_path::Graph> {
        kept(&self.graph, Self::key(dataset), || {
            Arc::new(exaviz_analysis::critical_path::Graph::with_training(&dataset.trace, dataset.training.as_deref()))
        })
    }

    /// The critical path of the whole trace, kept per trace.
    fn critical_of(&self, dataset: &Dataset) -> Arc<exaviz_analysis::critical_path::Path> {
        kept(&self.critical, Self::key(dataset), || {
            let t = &dataset.trace;
            let window = t.span().map_or((0, 0), |s| (s.0, s.1.saturating_add(1)));
            Arc::new(exaviz_analysis::critical_path::path::critical_path(t, &self.graph_of(dataset), window))
        })
    }

    /// The counter series of a trace drawn from its pyramid, kept per trace.
    fn counters_of(&self, dataset: &Dataset) -> Arc<counters::CounterIndex> {
        kept(&self.counters, Self::key(dataset), || Arc::new(counters::CounterIndex::new(&dataset.trace)))
    }

    /// The options of a picture of `sel` in a frame `f`.
    fn options_of(&self, sel: &Selection, f: Frame) -> TimelineOptions {
        TimelineOptions {
            width: f.width,
            height: f.height,
            window_s: sel.window_s,
            search: sel.search,
            folded: sel.folded,
            opened: sel.opened,
            // Asked for on a store drawn from its pyramid, a note says how to get it.
            critical_path: sel.critical.unwrap_or(self.opts.critical_path),
            messages: sel.messages.filter(|f| !f.is_all()),
            ..self.opts
        }
    }

    pub(crate) fn index(&self, dataset: &Dataset) -> Arc<TimelineIndex> {
        let t = &dataset.trace;
        if t.span_of_whole.is_some() {
            // The rows of one window of a larger trace: a new window brings other rows.
            return Arc::new(TimelineIndex::new(t));
        }
        // A trace with an index draws wide windows from it, every location a row there.
        kept(&self.index, Self::key(dataset), || Arc::new(TimelineIndex::with_tracks(t, dataset.index.is_some())))
    }
}

impl contract::View for TimelineView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        super::trace::needs_processes(d, Self::NAME, 1)?;
        span(&d.trace)
            .map(|_| ())
            .ok_or_else(|| ViewError::Unsupported("the trace has no intervals or messages".into()))
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW | Parts::SEARCH | Parts::AREA | Parts::FOLDED | Parts::CRITICAL | Parts::OPENED | Parts::MESSAGES
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW
            | Parts::PAIR
            | Parts::SEARCH
            | Parts::AREA
            | Parts::MESSAGE
            | Parts::FOLDED
            | Parts::FOUND
            | Parts::CRITICAL
            | Parts::OPENED
            | Parts::MESSAGES
    }

    /// A drag with the right button selects an area (the time and rows it spans) and sums it
    /// up; a right click clears it.
    fn brush(&self, d: &Dataset, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        if d.out_of_core.is_some() {
            return None;
        }
        let index = self.index(d);
        let full = index.span()?;
        let tps = d.trace.ticks_per_second.max(1) as f64;
        let window = super::trace::window_in(full, tps, sel.window_s.or(self.home(d))).ok()?;
        let p = plot_rect(f.width, f.height)?;
        let opts = TimelineOptions { folded: sel.folded, opened: sel.opened, ..self.opts };
        // The rows as the picture grouped them (the same counts on either backend).
        let grouped = scene::behaviour(d, &index, &opts, p.h, window, &Backend::Cpu).ok().flatten();
        let placed = scene::placed(&d.trace, &index, &opts, p, grouped.as_ref());
        let area = pick::area_between(p, window, &placed.rows, from, to);
        (area != sel.area).then_some(Selection { area, ..*sel })
    }

    fn help(&self) -> &'static [&'static str] {
        &[
            "right-drag: select an area (time x rows); its statistics fill the panel; right-click clears it",
            "click a message: follow it; [ and ]: go to its sender's and receiver's end; f: fit it (or the area)",
            "x: outline the critical path (the work and waits that made the run as long as it is), or hide it",
        ]
    }

    /// `[` and `]` centre the window on the followed message's send and receive, keeping its
    /// width; `f` fits the window to the message (or else the area) with a margin; `x` outlines
    /// the critical path, or hides it.
    fn key(&self, d: &Dataset, sel: &Selection, _: Frame, key: &str) -> Option<Selection> {
        if key == "x" {
            let shown = sel.critical.unwrap_or(self.opts.critical_path);
            return Some(Selection { critical: Some(!shown), ..*sel });
        }
        let full = self.index(d).span()?;
        let tps = d.trace.ticks_per_second.max(1) as f64;
        let seconds = |tick: u64| tick.saturating_sub(full.0) as f64 / tps;
        let duration = seconds(full.1);
        let m = &d.trace.messages;
        let message = sel.message.map(|i| i as usize).filter(|&i| i < m.source.len());
        let window = match (key, message) {
            ("[" | "]", Some(i)) => {
                let (a, b) = sel.window_s.or(self.home(d)).unwrap_or((0.0, duration));
                let at = seconds(if key == "[" { m.send_time[i] } else { m.recv_time[i] });
                let half = (b - a) / 2.0;
                let start = (at - half).clamp(0.0, (duration - 2.0 * half).max(0.0));
                (start, start + 2.0 * half)
            }
            ("f", _) => {
                let (a, b) = match (message, sel.area) {
                    (Some(i), _) => (seconds(m.send_time[i]), seconds(m.recv_time[i])),
                    (None, Some(area)) => (seconds(area.from), seconds(area.to)),
                    (None, None) => return None,
                };
                // A tenth of the span on each side, and at least a microsecond in all.
                let pad = ((b - a) * 0.1).max(0.5e-6);
                ((a - pad).max(0.0), b + pad)
            }
            _ => return None,
        };
        (sel.window_s != Some(window)).then_some(Selection { window_s: Some(window), ..*sel })
    }

    fn time_axis(&self, f: Frame) -> Option<[f32; 4]> {
        let p = plot_rect(f.width, f.height)?;
        Some([p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32])
    }

    fn home(&self, d: &Dataset) -> Option<(f64, f64)> {
        self.home_of(d).map(|h| h.window_s)
    }

    fn reads_pyramid(&self) -> bool {
        true
    }

    /// On a GPU holding the trace's rows ([`device::rows_on_device`]), every window the device
    /// path draws (its options; rows grouped by behaviour where they are kept, the summary
    /// track one more run) is drawn from them.
    fn draws_rows_on_device(&self, d: &Dataset, sel: &Selection, _f: Frame, b: &Backend) -> bool {
        let opts = TimelineOptions { search: sel.search, messages: sel.messages, ..self.opts };
        device::rows_on_device(b, &d.trace) && device::draws_on_device(b, d, &opts)
    }

    /// On a GPU keeping a store's rows ([`device::windows_on_device`]), a window's rows are
    /// taken from the chunks the device keeps around it (read once for both), not read again.
    fn window_rows(&self, d: &Dataset, window: (u64, u64), b: &Backend) -> Option<Result<Dataset, ViewError>> {
        let ooc = d.out_of_core.as_ref()?;
        let Backend::Gpu(ctx) = b else { return None };
        if ooc.rows.remote() || !crate::kept::rows_wanted(b) {
            return None;
        }
        let rows = self.last.ring.window_rows(ooc, window, d.trace.locations.name.len(), ctx.resident_budget() / 2);
        Some(rows.map(|rows| d.with_window_rows(ooc, rows)))
    }

    fn cells_ask(&self, d: &Dataset, sel: &Selection, f: Frame) -> Option<exaviz_model::dataset::CellsAsk> {
        let ooc = d.out_of_core.as_ref()?;
        pyramid::cells_ask(d, ooc, &self.options_of(sel, f), &self.counters_of(d))
    }

    fn prepare_cells(
        &self,
        d: &Dataset,
        sel: &Selection,
        f: Frame,
        b: &Backend,
        cells: &exaviz_model::dataset::Cells,
    ) -> Result<Box<dyn Prepared>, ViewError> {
        let ooc = d.out_of_core.as_ref().ok_or_else(|| ViewError::Unsupported("the store is held whole".into()))?;
        let opts = self.options_of(sel, f);
        let (scene, picker) = pyramid::overview_or_cells(d, ooc, &opts, self.counters_of(d), b, Some(cells))?;
        Ok(Box::new(Drawn { scene, picker }))
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = self.options_of(sel, f);
        if let Some(ooc) = &d.out_of_core {
            let (scene, picker) = pyramid::overview_scene(d, ooc, &opts, self.counters_of(d), b)?;
            return Ok(Box::new(Drawn { scene, picker }));
        }
        let (mut scene, picker) = timeline_scene(d, b, &opts, &self.index(d), self.home_of(d), Some(&self.last))?;
        if opts.critical_path {
            picker.critical_path(&mut scene, &self.critical_of(d));
        }
        let summary = sel.area.map(|area| {
            picker.outline(&mut scene, area);
            self.summary_of(d, area)
        });
        Ok(Box::new(WithArea { drawn: Drawn { scene, picker }, summary }))
    }
}

/// Most pairs of ranks an area's statistics list.
const AREA_PAIRS: usize = 10;

/// A prepared timeline with the numbers of the selection's area.
struct WithArea {
    drawn: Drawn<TimelinePick>,
    summary: Option<Arc<Summary>>,
}

impl Prepared for WithArea {
    fn draw(&self, dataset: &Dataset, selection: &Selection) -> std::borrow::Cow<'_, exaviz_render::Scene> {
        self.drawn.draw(dataset, selection)
    }

    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<contract::Pick> {
        self.drawn.pick(dataset, at)
    }

    fn area_summary(&self) -> Option<&Summary> {
        self.summary.as_deref()
    }
}

/// `exaviz render --view timeline` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct TimelineArgs {
    #[command(flatten)]
    pub look: TimelineLook,
    /// How overlapping message lines combine.
    #[arg(long, value_enum, default_value = "alpha")]
    pub mix: super::options::MixArg,
    #[command(flatten)]
    pub select: super::options::TraceSelectArgs,
    #[command(flatten)]
    pub filter: super::options::MessageFilterArgs,
}

impl Class for TimelineView {
    const NAME: &'static str = "timeline";
    const ABOUT: &'static str =
        "MPI trace: processes as rows over time, states as coloured bars, messages as lines (Brendel et al., 2016).";
    type Args = TimelineArgs;

    fn new(args: &TimelineArgs) -> Self {
        let opts = args.look.options(args.mix.into(), &args.select);
        TimelineView::with(TimelineOptions { messages: args.filter.messages, ..opts })
    }

    fn selection(args: &TimelineArgs) -> Selection {
        let folded = args.look.collapse.then_some(exaviz_model::selection::Folded::ALL);
        Selection { search: args.look.highlight, folded, messages: args.filter.messages, ..args.select.selection() }
    }
}
