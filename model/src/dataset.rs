//! What a source yields: a trace (the columnar model, [`crate`]), a topology, or both,
//! with what is kept beside them: the pyramid and row reader of a trace too large to hold, the
//! index of one held in memory, a fat tree, a training run, an operator graph, and the warnings
//! of what the reader repaired.

use serde::Serialize;

use crate::{CounterSummary, Intervals, Messages, Topology, Trace};

/// Most messages and intervals read from disk for one picture of a trace kept there; a window
/// holding more is drawn from the pyramid.
pub const ROW_BUDGET: u64 = 5_000_000;

/// What a source yields: a trace, a topology, or both.
#[derive(Clone, Debug, Default)]
pub struct Dataset {
    /// Human-readable name (file name or generator spec).
    pub name: String,
    pub trace: Trace,
    pub topology: Option<Topology>,
    /// What the link counters count ("packets", "messages").
    pub link_counter_unit: String,
    /// Set where the trace's messages and intervals stay on disk (a store too large to hold):
    /// `trace` then holds every other table, and no message or interval.
    pub out_of_core: Option<OutOfCore>,
    /// A fat-tree network with its traffic, jobs and routing (TreeScope's data).
    pub fattree: Option<std::sync::Arc<crate::fattree::FatTree>>,
    /// A parallel DNN training run (Chrome trace profiles, `gen:training`).
    pub training: Option<std::sync::Arc<crate::training::Training>>,
    /// A training step's operator graph (XLA's HLO module text).
    pub opgraph: Option<std::sync::Arc<crate::opgraph::OpGraph>>,
    /// Set where the trace's rows are in memory but more than a picture reads at once
    /// ([`crate::held_index::index`]): their pyramid, from which the views that read one draw a
    /// window holding more rows than that, as they draw a store's; the rows stay in `trace`.
    pub index: Option<OutOfCore>,
    /// Set on the rows of one window of a trace kept on disk or indexed
    /// ([`Dataset::window_rows`]): that trace's pyramid and reader, from which a GPU keeps the
    /// rows around the windows drawn in chunks of time.
    pub window_of: Option<OutOfCore>,
    /// What the reader repaired to open the input, one line each (kind, where first, count),
    /// as the trusted peers repair it; printed as warnings.
    pub warnings: Vec<String>,
}

/// Rows of a trace kept on disk, read by time window.
pub trait WindowRows: Send + Sync + std::fmt::Debug {
    /// An upper bound on the messages and intervals that [`WindowRows::read`] reads for the
    /// window `[t0, t1]` (ticks), from statistics alone: cheap.
    fn estimate(&self, window: (u64, u64)) -> u64;
    /// The messages whose send-to-receive span overlaps the window and the intervals that
    /// overlap it, with ids checked against the trace's locations and regions.
    fn read(&self, window: (u64, u64)) -> Result<(Messages, Intervals), String>;
    /// [`WindowRows::read`] for a reader that reads each window once (an analysis going chunk
    /// by chunk): nothing is kept for the next window.
    fn read_once(&self, window: (u64, u64)) -> Result<(Messages, Intervals), String> {
        self.read(window)
    }
    /// Whether the rows lie on another machine (a round trip or more away): a window then
    /// shows its picture from the pyramid first (`exaviz_views::contract::prepare_coarse`).
    fn remote(&self) -> bool {
        false
    }
    /// Where the rows lie on another machine and `ask`'s window holds more of them than
    /// `ask.above`: the timeline's picture of the window as per-pixel cells computed where the
    /// rows lie ([`Cells`]), one round trip. `None` where the window was not that dense (its
    /// rows, or its estimate over the budget, then kept for the [`WindowRows::estimate`] and
    /// [`WindowRows::read`] that follow, in the same round trip), or the rows are local.
    fn cells(&self, ask: &CellsAsk) -> Option<Result<std::sync::Arc<Cells>, String>> {
        let _ = ask;
        None
    }
}

/// A timeline picture of a window asked of the machine where a trace's rows lie: the window,
/// the plot's place in the picture, and the options that place the rows and colour the states.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellsAsk {
    /// The window, ticks, both ends in.
    pub window: (u64, u64),
    /// The plot inside the picture: left, top, width, height (pixels).
    pub plot: [u32; 4],
    /// Which locations share a row: 0 by behaviour where they outnumber the pixel rows, 1 each
    /// its own in the trace's order, 2 always by behaviour.
    pub rows: u8,
    /// The summary track: 0 where rows are grouped, 1 always, 2 never.
    pub summary: u8,
    /// How a pixel shows its states: 0 the dominant one, 1 stacked.
    pub states: u8,
    /// The band opened into its locations, by one of them.
    pub opened: Option<u32>,
    /// The window is drawn as cells where it holds more messages and intervals than this.
    pub above: u64,
}

/// Most plot pixels a picture of cells holds (a 4096-pixel square's, more than a 5K screen's
/// plot): a server draws them in about 50 bytes a pixel, so a request is bounded to under 1 GB.
pub const MAX_CELLS: u64 = 4096 * 4096;

/// A timeline picture of a window as per-pixel cells ([`CellsAsk`]), row by row of the plot:
/// what a dense window's rows would draw, in a fraction of their bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cells {
    pub width: u32,
    pub height: u32,
    /// Per pixel, its state's colour slot ([`NO_SLOT`] where no state covers it) and its
    /// opacity in 255ths.
    pub slot: Vec<u8>,
    pub alpha: Vec<u8>,
    /// Per pixel, the message lines crossing it and their mean shade along the lines, in 255ths
    /// of the gradient from send to receive.
    pub lines: Vec<u32>,
    pub shade: Vec<u8>,
    /// The locations grouped by behaviour where the rows are: each group's locations in order,
    /// those apart from their groups, and those of the band opened.
    pub groups: Option<Grouped>,
    /// Where a summary track is drawn: per pixel column, the share of the locations' time in
    /// each colour slot ([`SUMMARY_SLOTS`] a column); else empty.
    pub summary: Vec<f32>,
    /// The messages and intervals the window's cells were drawn from.
    pub rows: u64,
}

/// Locations grouped by behaviour: the groups' locations in order, those drawn apart, those of
/// the band opened.
pub type Grouped = (Vec<Vec<u32>>, Vec<u32>, Vec<u32>);

/// Colour slots of a column of [`Cells::summary`].
pub const SUMMARY_SLOTS: usize = 8;

/// [`Cells::slot`] of a pixel no state covers.
pub const NO_SLOT: u8 = u8::MAX;

impl Cells {
    /// Whether every column has one value per pixel and every location named is below
    /// `locations`: what a client checks of cells from a server.
    pub fn check(&self, locations: u32) -> Result<(), String> {
        let n = u64::from(self.width) * u64::from(self.height);
        if n > MAX_CELLS {
            return Err(format!("cells of {}x{} pixels; at most {MAX_CELLS} are drawn", self.width, self.height));
        }
        let n = n as usize;
        if [self.slot.len(), self.alpha.len(), self.lines.len(), self.shade.len()].iter().any(|&k| k != n) {
            return Err(format!("cells of {}x{} pixels with columns of other lengths", self.width, self.height));
        }
        if !self.summary.is_empty() && self.summary.len() != self.width as usize * SUMMARY_SLOTS {
            return Err(format!("a summary of {} shares for {} columns", self.summary.len(), self.width));
        }
        if self.summary.iter().any(|s| !s.is_finite()) {
            return Err("a summary share that is not a number".into());
        }
        if let Some((groups, apart, opened)) = &self.groups {
            let named = groups.iter().flatten().chain(apart).chain(opened);
            if let Some(l) = named.clone().find(|&&l| l >= locations) {
                return Err(format!("cells name location {l} (there are {locations})"));
            }
            let mut all: Vec<u32> = named.copied().collect();
            all.sort_unstable();
            if all.windows(2).any(|w| w[0] == w[1]) {
                return Err("cells name a location in two groups".into());
            }
        }
        Ok(())
    }
}

/// A trace too large to hold: its pyramid, its row counts and a reader of its rows by window.
#[derive(Clone, Debug)]
pub struct OutOfCore {
    pub pyramid: std::sync::Arc<crate::pyramid::Pyramid>,
    pub rows: std::sync::Arc<dyn WindowRows>,
    pub messages: u64,
    pub intervals: u64,
    /// First and last tick of the messages and intervals.
    pub span: (u64, u64),
    /// The messages by pair of a trace in memory, with the trace's span, built when a second
    /// window is counted (`exaviz_views::trace::pair_sums`); unused where the rows are on disk.
    pub pairs: std::sync::Arc<crate::pair_index::Kept>,
}

impl Dataset {
    /// A fat-tree network as a dataset (a TreeScope directory, `gen:fattree`).
    pub fn of_fattree(input: &str, tree: crate::fattree::FatTree) -> Dataset {
        Dataset { name: input.to_string(), fattree: Some(std::sync::Arc::new(tree)), ..Default::default() }
    }

    /// A training run as a dataset: its model, and for the other views a location per device
    /// with the operators as intervals (their names as regions).
    pub fn of_training(input: &str, t: crate::training::Training) -> Dataset {
        let mut trace = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
        for d in &t.devices {
            trace.locations.name.push(d.name.clone());
            trace.locations.node.push(u32::MAX);
        }
        trace.region_names = t.names.clone();
        let iv = &mut trace.intervals;
        iv.location = t.ops.device.clone();
        iv.start = t.ops.start.clone();
        iv.end = t.ops.end.clone();
        iv.kind = t.ops.name.clone();
        iv.depth = vec![0; t.ops.len()];
        Dataset { name: input.to_string(), trace, training: Some(std::sync::Arc::new(t)), ..Default::default() }
    }

    /// The rows of `window` (ticks) as a dataset of their own that keeps the whole trace's
    /// span; `self` where the rows are in memory.
    pub fn window_rows(&self, window: (u64, u64)) -> Result<std::borrow::Cow<'_, Dataset>, String> {
        self.window_rows_with(window, false)
    }

    /// [`Dataset::window_rows`] for a window read once ([`WindowRows::read_once`]).
    pub fn window_rows_once(&self, window: (u64, u64)) -> Result<std::borrow::Cow<'_, Dataset>, String> {
        self.window_rows_with(window, true)
    }

    fn window_rows_with(&self, window: (u64, u64), once: bool) -> Result<std::borrow::Cow<'_, Dataset>, String> {
        let Some(ooc) = &self.out_of_core else { return Ok(std::borrow::Cow::Borrowed(self)) };
        let (messages, intervals) = if once { ooc.rows.read_once(window)? } else { ooc.rows.read(window)? };
        Ok(std::borrow::Cow::Owned(self.with_window_rows(ooc, (messages, intervals))))
    }

    /// The dataset of one window's rows of this trace kept on disk (`ooc`), as
    /// [`Dataset::window_rows`] makes it from what it read: `rows`, read another way.
    pub fn with_window_rows(&self, ooc: &OutOfCore, (messages, intervals): (Messages, Intervals)) -> Dataset {
        let mut d = Dataset {
            name: self.name.clone(),
            trace: self.trace.clone(),
            topology: self.topology.clone(),
            link_counter_unit: self.link_counter_unit.clone(),
            out_of_core: None,
            fattree: self.fattree.clone(),
            training: self.training.clone(),
            opgraph: self.opgraph.clone(),
            index: None,
            window_of: Some(ooc.clone()),
            warnings: self.warnings.clone(),
        };
        d.trace.messages = messages;
        d.trace.intervals = intervals;
        d.trace.span_of_whole = Some(ooc.span);
        d.trace.state_ticks_of_whole = Some(ooc.pyramid.state_ticks());
        d
    }

    /// This dataset without its messages and intervals, drawn from `index` as a store too
    /// large to hold is: everything else is copied (names, locations, collectives, counters).
    pub fn indexed(&self, index: &OutOfCore) -> Dataset {
        let t = &self.trace;
        let trace = Trace {
            ticks_per_second: t.ticks_per_second,
            locations: t.locations.clone(),
            intervals: Intervals::default(),
            messages: Messages::default(),
            collectives: t.collectives.clone(),
            location_counters: t.location_counters.clone(),
            link_counters: t.link_counters.clone(),
            metrics: t.metrics.clone(),
            instants: t.instants.clone(),
            instant_categories: t.instant_categories.clone(),
            region_names: t.region_names.clone(),
            step_regions: t.step_regions.clone(),
            collective_names: t.collective_names.clone(),
            metric_names: t.metric_names.clone(),
            metric_units: t.metric_units.clone(),
            metric_accumulated: t.metric_accumulated.clone(),
            span_of_whole: Some(index.span),
            state_ticks_of_whole: None,
        };
        Dataset {
            name: self.name.clone(),
            trace,
            topology: self.topology.clone(),
            link_counter_unit: self.link_counter_unit.clone(),
            out_of_core: Some(index.clone()),
            fattree: self.fattree.clone(),
            training: self.training.clone(),
            opgraph: self.opgraph.clone(),
            index: None,
            window_of: None,
            warnings: self.warnings.clone(),
        }
    }
}

/// Summary counts, as printed by `exaviz info`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub name: String,
    pub locations: usize,
    pub nodes: usize,
    pub links: usize,
    pub dimensions: Vec<u32>,
    pub messages: usize,
    pub intervals: usize,
    pub collectives: usize,
    pub metric_samples: usize,
    /// Instant events, of every scope (those of a row are among `intervals` too).
    pub instants: usize,
    /// Locations by kind ("CPU thread", "GPU stream", ...), where the source types them.
    pub location_kinds: Vec<(String, usize)>,
    /// Each metric (counter) series: its name, samples, and least and greatest value.
    pub counters: Vec<CounterSummary>,
    pub link_counter_samples: usize,
    /// First and last time stamp in ticks, or `None` for a trace without events.
    pub time_span_ticks: Option<(u64, u64)>,
    pub ticks_per_second: u64,
}

impl Dataset {
    pub fn summary(&self) -> Summary {
        let t = &self.trace;
        let times = t
            .messages
            .send_time
            .iter()
            .chain(&t.messages.recv_time)
            .chain(&t.intervals.start)
            .chain(&t.intervals.end)
            .chain(&t.collectives.start)
            .chain(&t.collectives.end)
            .chain(&t.link_counters.time)
            .chain(&t.location_counters.time)
            .chain(&t.metrics.time)
            .chain(&t.instants.time);
        let span = times.fold(None, |acc: Option<(u64, u64)>, &v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        });
        let topo = self.topology.as_ref();
        let ooc = self.out_of_core.as_ref();
        let span = match (span, ooc) {
            (Some((a, b)), Some(o)) => Some((a.min(o.span.0), b.max(o.span.1))),
            (s, o) => s.or(o.map(|o| o.span)),
        };
        let held = |n: usize, on_disk: Option<u64>| on_disk.map_or(n, |k| usize::try_from(k).unwrap_or(usize::MAX));
        Summary {
            name: self.name.clone(),
            locations: t.locations.name.len(),
            nodes: topo.map_or(0, Topology::node_count),
            links: topo.map_or(0, Topology::link_count),
            dimensions: topo.map(|t| t.extents.clone()).unwrap_or_default(),
            messages: held(t.messages.source.len(), ooc.map(|o| o.messages)),
            intervals: held(t.intervals.location.len(), ooc.map(|o| o.intervals)),
            collectives: t.collectives.location.len(),
            metric_samples: t.metrics.location.len(),
            instants: t.instants.len(),
            location_kinds: if t.locations.kind.is_empty() {
                Vec::new()
            } else {
                t.locations.kinds().into_iter().map(|(k, n)| (k.label().to_string(), n)).collect()
            },
            counters: t.counter_summaries(),
            link_counter_samples: t.link_counters.entity.len(),
            time_span_ticks: span,
            ticks_per_second: t.ticks_per_second,
        }
    }
}
