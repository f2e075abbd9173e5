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
            warnings: self.warnings.clone(),
        };
        d.trace.messages = messages;
        d.trace.intervals = intervals;
        d.trace.span_of_whole = Some(ooc.span);
        d.trace.state_ticks_of_whole = Some(ooc.pyramid.state_ticks());
        Ok(std::borrow::Cow::Owned(d))
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
