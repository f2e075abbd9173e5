//! Why a run is slow (`exaviz critical-path`): the dependency graph of a run across ranks,
//! threads and GPU streams ([`graph`]), its critical path ([`path`]), the root causes of its
//! waiting ([`causes`], after
//! Scalasca's delay analysis) and its stragglers ([`stragglers`]), from the columnar model of
//! any format that holds intervals with messages, collectives or kernel launches.

pub mod causes;
pub mod chunked;
pub mod graph;
pub mod path;
pub mod stragglers;
pub mod what_if;

use exaviz_model::Trace;
use serde::Serialize;

pub use causes::{CauseRow, WaitState};
pub use graph::{Edge, EdgeKind, Graph};
pub use path::{Path, Segment, Share, Shares, Step};
pub use stragglers::{RegionExcess, Straggler, StragglerRow, Stragglers};
pub use what_if::{Ask, StepWhatIf, WhatIf, Who};

/// Everything `exaviz critical-path` reports (the default: a report of nothing).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// The window, seconds since the trace's start.
    pub from_s: f64,
    pub to_s: f64,
    /// The path's length, seconds, and the locations it crosses to.
    pub length_s: f64,
    pub jumps: u64,
    pub shares: Shares,
    /// The path, first segment first (times in seconds since the trace's start).
    pub segments: Vec<SegmentRow>,
    pub wait_states: u64,
    pub waiting_s: f64,
    pub root_causes: Vec<CauseRow>,
    pub stragglers: Stragglers,
    /// The projections asked for (`--what-if`), in the order asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<WhatIf>,
}

/// A segment of the path as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SegmentRow {
    /// "on" for work on a location, else the edge's kind.
    pub what: String,
    pub location: String,
    /// For an edge, where it came from.
    pub from_location: String,
    pub from_s: f64,
    pub to_s: f64,
    /// For work on a location, the innermost region it spent most of that time in (as the
    /// trace names it; "(no region)" for untraced time) and its seconds there; "" for an edge.
    pub region: String,
    pub region_s: f64,
    /// The step (Kineto's `ProfilerStep#N`) of the location's process holding most of the
    /// segment's time; "" where the trace names no steps.
    pub step: String,
}

/// The analysis of `t` over `window` (ticks), with `start` the tick times are reported from;
/// `training`: the training model read from the same files, whose sends and collectives join
/// the graph.
pub fn analyse(
    t: &Trace,
    training: Option<&exaviz_model::training::Training>,
    window: (u64, u64),
    start: u64,
) -> Report {
    let g = Graph::with_training(t, training);
    analyse_graph(t, &g, training, window, start)
}

/// What `exaviz critical-path` and Python's `Trace.critical_path` ask for: the analysis of
/// `dataset` over seconds `from_s` to `to_s` since its start (default: all of it), its rows read
/// from the store for the window where they are on disk; `Err` says in one line what is wrong.
pub fn analyse_asked(
    dataset: &exaviz_model::dataset::Dataset,
    from_s: Option<f64>,
    to_s: Option<f64>,
) -> Result<Report, String> {
    analyse_asked_with(dataset, from_s, to_s, &|_, _| {})
}

/// [`analyse_asked`], a window of a store holding more rows than [`chunked::plan`] reads at
/// once read and analysed chunk by chunk ([`chunked`]), `progress(done, of)` after each chunk.
pub fn analyse_asked_with(
    dataset: &exaviz_model::dataset::Dataset,
    from_s: Option<f64>,
    to_s: Option<f64>,
    progress: &dyn Fn(usize, usize),
) -> Result<Report, String> {
    analyse_what_if(dataset, from_s, to_s, &[], progress)
}

/// [`analyse_asked_with`] with the projections `asks` (`--what-if`); a window of a store read
/// chunk by chunk is replayed chunk by chunk ([`chunked::what_if_chunks`]).
pub fn analyse_what_if(
    dataset: &exaviz_model::dataset::Dataset,
    from_s: Option<f64>,
    to_s: Option<f64>,
    asks: &[Ask],
    progress: &dyn Fn(usize, usize),
) -> Result<Report, String> {
    let (from, to, start) = crate::window::window_asked(dataset, from_s, to_s)?;
    let chunks = chunked::plan(dataset, (from, to));
    if chunks.len() > 1 {
        // The walk from the last chunk back, then the replays from the first chunk on.
        let n = chunks.len() * if asks.is_empty() { 1 } else { 2 };
        let (mut report, first, length) =
            chunked::analyse_chunks_walked(dataset, &chunks, start, &|k, _| progress(k, n))?;
        if !asks.is_empty() {
            let of = chunks.len();
            report.what_if =
                chunked::what_if_chunks(dataset, &chunks, (first, length), asks, &|k, _| progress(of + k, n))?;
        }
        return Ok(report);
    }
    let rows = dataset.window_rows((from, to))?;
    let (t, training) = (&rows.trace, rows.training.as_deref());
    let g = Graph::with_training(t, training);
    let (mut report, p) = analyse_graph_path(t, &g, training, (from, to), start);
    report.what_if =
        asks.iter().map(|a| what_if::what_if(t, &g, training, (from, to), &p, a)).collect::<Result<_, _>>()?;
    Ok(report)
}

/// Each device of `training`'s share of the critical path of `t` over `window` (ticks): the time
/// the path spends on the rows of the device's process (its threads and GPU streams) over the
/// path's length, in device order; 0 for a device whose process is not found.
pub fn device_shares(t: &Trace, training: &exaviz_model::training::Training, window: (u64, u64)) -> Vec<f64> {
    let g = Graph::with_training(t, Some(training));
    let p = path::critical_path(t, &g, window);
    let mut on = vec![0u64; g.lanes.processes.len()];
    for s in p.segments.iter().filter(|s| matches!(s.step, Step::On)) {
        if let Some(&k) = g.lanes.process.get(s.location as usize) {
            on[k as usize] += s.to - s.from;
        }
    }
    let length = p.length().max(1) as f64;
    training
        .devices
        .iter()
        .map(|d| g.lanes.process_of_device(&d.name).map_or(0.0, |k| on[k as usize] as f64 / length))
        .collect()
}

/// A segment's region and its time there, ticks (none for an edge).
pub(crate) type SegmentRegion = Option<(String, u64)>;

/// For each of `segments` of work, the innermost region of its location holding most of its
/// time, and that time in ticks; none for an edge.
pub(crate) fn segment_regions(t: &Trace, g: &Graph, segments: &[Segment]) -> Vec<Option<(String, u64)>> {
    segments
        .iter()
        .map(|s| {
            if !matches!(s.step, Step::On) {
                return None;
            }
            let mut by: Vec<(Option<u32>, u64)> = Vec::new();
            g.lanes.each_region(s.location, (s.from, s.to), |r, dt| match by.iter_mut().find(|x| x.0 == r) {
                Some(x) => x.1 += dt,
                None => by.push((r, dt)),
            });
            let (r, dt) = by.into_iter().max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?;
            let name = r.and_then(|r| t.region_names.get(r as usize)).map_or("(no region)", String::as_str);
            Some((name.to_string(), dt))
        })
        .collect()
}

/// For each of `segments`, the step (Kineto's `ProfilerStep#N`) of its location's process
/// holding most of its time in `window`; "" where the trace names no steps or none holds it.
pub(crate) fn segment_steps(t: &Trace, g: &Graph, window: (u64, u64), segments: &[Segment]) -> Vec<String> {
    if !t.region_names.iter().any(|n| stragglers::step_number(n).is_some()) {
        return vec![String::new(); segments.len()];
    }
    let steps = stragglers::steps(t, g, window);
    segments
        .iter()
        .map(|s| {
            let Some(&p) = g.lanes.process.get(s.location as usize) else { return String::new() };
            let overlap = |&(a, b): &(u64, u64)| s.to.min(b).saturating_sub(s.from.max(a));
            steps
                .iter()
                .filter_map(|(name, spans)| spans.get(&p).map(|x| (name, overlap(x))))
                .filter(|x| x.1 > 0)
                .max_by_key(|x| x.1)
                .map_or_else(String::new, |x| x.0.clone())
        })
        .collect()
}

/// The path's segments as reported: locations by name, times in seconds since `start`, each
/// with its region from `regions` (as [`segment_regions`] gives them, one per segment) and its
/// step from `steps` (as [`segment_steps`] gives them).
pub(crate) fn segment_rows(
    t: &Trace,
    segments: &[Segment],
    (regions, steps): (&[SegmentRegion], &[String]),
    start: u64,
) -> Vec<SegmentRow> {
    let tps = t.ticks_per_second.max(1) as f64;
    let secs = |ticks: u64| ticks.saturating_sub(start) as f64 / tps;
    let name = |l: u32| t.locations.name.get(l as usize).cloned().unwrap_or_else(|| format!("location {l}"));
    segments
        .iter()
        .enumerate()
        .map(|(k, s)| SegmentRow {
            region: regions.get(k).cloned().flatten().map_or_else(String::new, |r| r.0),
            region_s: regions.get(k).cloned().flatten().map_or(0.0, |r| r.1 as f64 / tps),
            step: steps.get(k).cloned().unwrap_or_default(),
            what: match s.step {
                Step::On => "on".into(),
                Step::Edge(e) => e.label().into(),
            },
            location: name(s.location),
            from_location: name(s.from_location),
            from_s: secs(s.from),
            to_s: secs(s.to),
        })
        .collect()
}

/// [`analyse`] on a graph already built.
pub fn analyse_graph(
    t: &Trace,
    g: &Graph,
    training: Option<&exaviz_model::training::Training>,
    window: (u64, u64),
    start: u64,
) -> Report {
    analyse_graph_path(t, g, training, window, start).0
}

/// [`analyse_graph`], with the critical path it found.
fn analyse_graph_path(
    t: &Trace,
    g: &Graph,
    training: Option<&exaviz_model::training::Training>,
    window: (u64, u64),
    start: u64,
) -> (Report, Path) {
    let tps = t.ticks_per_second.max(1) as f64;
    let secs = |ticks: u64| ticks.saturating_sub(start) as f64 / tps;
    let ((p, waits), stragglers) = rayon::join(
        || (path::critical_path(t, g, window), causes::wait_states(g, window)),
        || stragglers::stragglers(t, g, window, training),
    );
    let regions = segment_regions(t, g, &p.segments);
    let segments = segment_rows(t, &p.segments, (&regions, &segment_steps(t, g, window, &p.segments)), start);
    let jumps = p.segments.iter().filter(|s| matches!(s.step, Step::Edge(_))).count() as u64;
    let waiting: u64 = waits.iter().map(|w| w.until - w.from).sum();
    let report = Report {
        from_s: secs(window.0),
        to_s: secs(window.1),
        length_s: p.length() as f64 / tps,
        jumps,
        shares: path::shares(t, g, &p),
        segments,
        wait_states: waits.len() as u64,
        waiting_s: waiting as f64 / tps,
        root_causes: causes::root_causes(t, g, &waits),
        stragglers,
        what_if: Vec::new(),
    };
    (report, p)
}

#[cfg(test)]
mod tests;
