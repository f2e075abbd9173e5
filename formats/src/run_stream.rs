//! A run's folder of Kineto profiles converted into a store a file at a time (`exaviz convert
//! RUN STORE`): memory holds a few files, the training model and a merge buffer, whatever the
//! number of ranks. The files are parsed in parallel, a window at a time, while the previous
//! window is added to the model and its rows spilled in sorted runs to a scratch file in the
//! store's temporary folder; the runs are then merged in time order into the store's tables,
//! the pyramid summed as they pass. The store holds what the run read in memory holds, row for
//! row (a test says so).
//!
//! It streams where every file declares its rank ahead of its events (Kineto's
//! `distributedInfo`) and the folder holds no XPlane profile, execution trace or HLO module;
//! other runs are read whole, then written.

use std::path::{Path, PathBuf};

use exaviz_model::dataset::Dataset;
use exaviz_model::source::SourceError;
use exaviz_model::{Intervals, Messages, MetricSamples, Trace};
use exaviz_store::spill::{Row, Spill};
use exaviz_store::{Manifest, PyramidSpan, StoreWriter};
use rustc_hash::FxHashMap as HashMap;

use crate::chrome;
use crate::dnn;
use crate::dnn::{Part, RunFiles, RunModel};

/// An interval as spilled: times in nanoseconds of the trace's clock.
#[derive(Clone, Copy)]
struct IntervalRow {
    start: i64,
    end: i64,
    location: u32,
    kind: u32,
    depth: u32,
}

impl Row for IntervalRow {
    const SIZE: usize = 28;
    fn key(&self) -> i64 {
        self.start
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.extend_from_slice(&self.location.to_le_bytes());
        out.extend_from_slice(&self.kind.to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        let i = |k: usize| i64::from_le_bytes(b[k..k + 8].try_into().unwrap_or_default());
        let u = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap_or_default());
        Self { start: i(0), end: i(8), location: u(16), kind: u(20), depth: u(24) }
    }
}

/// A message (a flow) as spilled.
#[derive(Clone, Copy)]
struct MessageRow {
    send: i64,
    recv: i64,
    source: u32,
    destination: u32,
}

impl Row for MessageRow {
    const SIZE: usize = 24;
    fn key(&self) -> i64 {
        self.send
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.send.to_le_bytes());
        out.extend_from_slice(&self.recv.to_le_bytes());
        out.extend_from_slice(&self.source.to_le_bytes());
        out.extend_from_slice(&self.destination.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        let i = |k: usize| i64::from_le_bytes(b[k..k + 8].try_into().unwrap_or_default());
        let u = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap_or_default());
        Self { send: i(0), recv: i(8), source: u(16), destination: u(20) }
    }
}

/// A counter sample as spilled.
#[derive(Clone, Copy)]
struct MetricRow {
    time: i64,
    value: f64,
    location: u32,
    metric: u32,
}

impl Row for MetricRow {
    const SIZE: usize = 24;
    fn key(&self) -> i64 {
        self.time
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        out.extend_from_slice(&self.location.to_le_bytes());
        out.extend_from_slice(&self.metric.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        let u = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap_or_default());
        Self {
            time: i64::from_le_bytes(b[0..8].try_into().unwrap_or_default()),
            value: f64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
            location: u(16),
            metric: u(20),
        }
    }
}

/// Whether the run under `dir` streams (see the module's notes): its Chrome trace files, or
/// `None` where it is read whole.
fn streams(dir: &Path) -> Option<(Vec<PathBuf>, Vec<String>)> {
    let RunFiles { xplanes, files, graphs, warnings } = dnn::run_files(dir);
    let plain = xplanes.is_empty() && graphs.is_empty() && !files.is_empty();
    let ranked = |p: &PathBuf| {
        // Kineto writes it after `deviceProperties`, in the first few kilobytes.
        crate::head_of(p, 1 << 16).is_some_and(|h| {
            let h = String::from_utf8_lossy(&h);
            h.find("\"distributedInfo\"").is_some_and(|d| h.find("\"traceEvents\"").is_none_or(|e| d < e))
        })
    };
    (plain && crate::hlo::modules_in(dir).is_empty() && files.iter().all(ranked)).then_some((files, warnings))
}

/// One file read and turned into the timeline's rows, its times counted from `t0` (its
/// earliest): what the parallel readers hand on.
struct Read {
    part: Result<Part, SourceError>,
    rows: Dataset,
    t0: i64,
    bytes: u64,
}

fn read_one(input: &str, path: &Path, index: usize) -> Read {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let mut part = chrome::read(path).map(|trace| Part { trace, input: path.display().to_string() });
    let (rows, t0) = match &mut part {
        Ok(p) => {
            // The timeline names a rank's lanes after the rank, as a run read whole does; the
            // training model reads them as written.
            let rank = dnn::rank_of(p, index).map_or(index as u32, |r| r.0);
            let mut ranked = p.trace.lanes.clone();
            dnn::rank_lanes(&mut ranked, rank);
            let written = std::mem::replace(&mut p.trace.lanes, ranked);
            let t0 = chrome::earliest(&p.trace);
            let rows = chrome::dataset_at(&p.trace, input, t0);
            p.trace.lanes = written;
            (rows, t0)
        }
        Err(_) => (Dataset::default(), 0),
    };
    Read { part, rows, t0, bytes }
}

/// Everything but the rows: locations, names, and where the rows went.
struct Sink {
    skeleton: Trace,
    region_of: HashMap<String, u32>,
    metric_of: HashMap<String, u32>,
    category_of: HashMap<String, u32>,
    /// The instants' times (ns, as the files give them) and names, beside the skeleton's
    /// instants.
    instant_times: Vec<i64>,
    instant_names: Vec<String>,
    intervals: Spill<IntervalRow>,
    messages: Spill<MessageRow>,
    metrics: Spill<MetricRow>,
    /// The earliest slice (the trace's time zero, as a run read whole counts it).
    first: i64,
    /// The earliest and latest times the pyramid covers (sends, starts, ends).
    lo: i64,
    hi: i64,
}

impl Sink {
    /// Adds a file's rows: its locations after those before, its names interned, its rows
    /// spilled as sorted runs.
    fn add(&mut self, d: &Dataset, t0: i64) -> Result<(), SourceError> {
        let t = &d.trace;
        let base = self.skeleton.locations.name.len() as u32;
        self.skeleton.locations.name.extend(t.locations.name.iter().cloned());
        self.skeleton.locations.node.extend(t.locations.node.iter().copied());
        // Names of slices only here: a name used by global instants alone is interned after
        // every file's slices (as a run read whole names them), when the rows are written.
        let mut on_rows = vec![false; t.region_names.len()];
        for &k in &t.intervals.kind {
            on_rows[k as usize] = true;
        }
        let regions: Vec<u32> = t
            .region_names
            .iter()
            .zip(&on_rows)
            .map(|(n, &used)| {
                if !used {
                    return u32::MAX;
                }
                let next = self.skeleton.region_names.len() as u32;
                *self.region_of.entry(n.clone()).or_insert_with(|| {
                    self.skeleton.region_names.push(n.clone());
                    next
                })
            })
            .collect();
        let metrics: Vec<u32> = (0..t.metric_names.len())
            .map(|k| {
                let next = self.skeleton.metric_names.len() as u32;
                let s = &mut self.skeleton;
                *self.metric_of.entry(t.metric_names[k].clone()).or_insert_with(|| {
                    s.metric_names.push(t.metric_names[k].clone());
                    s.metric_units.push(t.metric_units.get(k).cloned().unwrap_or_default());
                    s.metric_accumulated.push(t.metric_accumulated.get(k).copied().unwrap_or(false));
                    next
                })
            })
            .collect();
        let abs = |v: u64| t0.saturating_add(v as i64);
        let i = &t.instants;
        for k in 0..i.len() {
            let name = &t.instant_categories[i.category[k] as usize];
            let next = self.skeleton.instant_categories.len() as u32;
            let s = &mut self.skeleton;
            let category = *self.category_of.entry(name.clone()).or_insert_with(|| {
                s.instant_categories.push(name.clone());
                next
            });
            let row = if i.location[k] == exaviz_model::NO_ROW { i.location[k] } else { base + i.location[k] };
            s.instants.push(row, 0, u32::MAX, i.scope[k], category, i.args[k]);
            self.instant_times.push(abs(i.time[k]));
            self.instant_names.push(t.region_names[i.name[k] as usize].clone());
        }
        let v = &t.intervals;
        let mut rows: Vec<IntervalRow> = (0..v.start.len())
            .map(|i| IntervalRow {
                start: abs(v.start[i]),
                end: abs(v.end[i]),
                location: base + v.location[i],
                kind: regions[v.kind[i] as usize],
                depth: v.depth[i],
            })
            .collect();
        for r in &rows {
            self.first = self.first.min(r.start);
            self.lo = self.lo.min(r.start);
            self.hi = self.hi.max(r.end);
        }
        self.intervals.run(&mut rows)?;
        let m = &t.messages;
        let mut rows: Vec<MessageRow> = (0..m.source.len())
            .map(|i| MessageRow {
                send: abs(m.send_time[i]),
                recv: abs(m.recv_time[i]),
                source: base + m.source[i],
                destination: base + m.destination[i],
            })
            .collect();
        for r in &rows {
            self.lo = self.lo.min(r.send);
            self.hi = self.hi.max(r.send);
        }
        self.messages.run(&mut rows)?;
        let x = &t.metrics;
        let mut rows: Vec<MetricRow> = (0..x.time.len())
            .map(|i| MetricRow {
                time: abs(x.time[i]),
                value: x.value[i],
                location: base + x.location[i],
                metric: metrics[x.metric[i] as usize],
            })
            .collect();
        self.metrics.run(&mut rows)?;
        Ok(())
    }

    /// Writes the spilled rows into the store's tables in time order, times from the earliest
    /// slice, the pyramid summed as they pass; the names and locations are left to write.
    fn write(self, mut w: StoreWriter) -> Result<(StoreWriter, Trace), SourceError> {
        let Sink { mut skeleton, mut region_of, intervals, messages, metrics, first, lo, hi, .. } = self;
        let (instant_times, instant_names) = (self.instant_times, self.instant_names);
        let at = |ns: i64| ns.saturating_sub(first).max(0) as u64;
        skeleton.instants.time = instant_times.iter().map(|&ns| at(ns)).collect();
        for (k, n) in instant_names.into_iter().enumerate() {
            let next = skeleton.region_names.len() as u32;
            skeleton.instants.name[k] = *region_of.entry(n.clone()).or_insert_with(|| {
                skeleton.region_names.push(n);
                next
            });
        }
        skeleton.instants.sort_by_time();
        if let Some(ranks) = u32::try_from(skeleton.locations.name.len()).ok().filter(|&r| r > 0)
            && lo <= hi
        {
            let states = skeleton.region_names.len().clamp(1, 64) as u32;
            w = w.with_pyramid(PyramidSpan { t0: at(lo), t1: at(hi), ranks, states });
        }
        w.begin_intervals()?;
        intervals.merged(BATCH, |rows| {
            let mut v = Intervals::default();
            for r in rows {
                v.location.push(r.location);
                v.start.push(at(r.start));
                v.end.push(at(r.end));
                v.kind.push(r.kind);
                v.depth.push(r.depth);
            }
            w.intervals(&v)
        })?;
        drop(intervals);
        w.begin_messages()?;
        messages.merged(BATCH, |rows| {
            let mut m = Messages::default();
            for r in rows {
                m.source.push(r.source);
                m.destination.push(r.destination);
                m.send_time.push(at(r.send));
                m.recv_time.push(at(r.recv).max(at(r.send)));
                m.bytes.push(0);
                m.tag.push(0);
            }
            w.messages(&m)
        })?;
        drop(messages);
        w.begin_metrics()?;
        metrics.merged(BATCH, |rows| {
            let mut x = MetricSamples::default();
            for r in rows {
                x.location.push(r.location);
                x.time.push(at(r.time));
                x.metric.push(r.metric);
                x.value.push(r.value);
            }
            w.metrics(&x)
        })?;
        drop(metrics);
        Ok((w, skeleton))
    }
}

/// Files parsed at once: a window for each of two stages (parsing, adding) per thread.
fn window() -> usize {
    rayon::current_num_threads().max(1) * 2
}

/// Rows per batch handed to the store's writer.
const BATCH: usize = 1 << 16;

/// Converts the run under `dir` into a store at `target` (see the module's notes); `strict`
/// refuses a file that does not read instead of leaving it out with a warning line.
/// `progress(bytes of the files done, bytes of all)`.
pub fn convert(
    input: &str,
    dir: &Path,
    strict: bool,
    target: &Path,
    progress: &dyn Fn(u64, u64),
) -> Result<Manifest, SourceError> {
    let Some((files, mut warnings)) = streams(dir) else {
        let d = dnn::open_dir(input, dir, strict, None, progress)?;
        for w in &d.warnings {
            eprintln!("warning: {w}");
        }
        return exaviz_store::write(&d, target);
    };
    let total: u64 = files.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum();
    let w = StoreWriter::create(target)?;
    let mut sink = Sink {
        skeleton: Trace { ticks_per_second: 1_000_000_000, ..Default::default() },
        region_of: HashMap::default(),
        metric_of: HashMap::default(),
        category_of: HashMap::default(),
        instant_times: Vec::new(),
        instant_names: Vec::new(),
        intervals: Spill::create(&w.scratch("intervals.spill"))?,
        messages: Spill::create(&w.scratch("messages.spill"))?,
        metrics: Spill::create(&w.scratch("metrics.spill"))?,
        first: i64::MAX,
        lo: i64::MAX,
        hi: i64::MIN,
    };
    // Times count from the earliest before it is known: the model rebases them on its first
    // operator.
    let mut run = RunModel::new(files.len(), i64::MIN);
    let (mut unmatched, mut done, mut read_any) = (0u64, 0u64, false);
    let mut first_error = None;
    let indexed: Vec<(usize, &PathBuf)> = files.iter().enumerate().collect();
    let windows: Vec<&[(usize, &PathBuf)]> = indexed.chunks(window()).collect();
    let parse = |w: &[(usize, &PathBuf)]| -> Vec<Read> {
        use rayon::prelude::*;
        w.par_iter().map(|&(i, p)| read_one(input, p, i)).collect()
    };
    let mut next = windows.first().map(|w| parse(w)).unwrap_or_default();
    for k in 0..windows.len() {
        let this = std::mem::take(&mut next);
        // The next window parses while this one is added.
        let (parsed, added) = rayon::join(
            || windows.get(k + 1).map(|w| parse(w)).unwrap_or_default(),
            || -> Result<(), SourceError> {
                for r in this {
                    done += r.bytes;
                    let part = match r.part {
                        Ok(p) => p,
                        Err(e) if strict || files.len() == 1 => return Err(e),
                        Err(e) => {
                            warnings.push(format!("{e}; left out of the run (--strict refuses it instead)"));
                            first_error.get_or_insert(e);
                            continue;
                        }
                    };
                    read_any = true;
                    run.add(&part)?;
                    unmatched += part.trace.unmatched;
                    warnings.extend(part.trace.repairs.lines(&part.input));
                    sink.add(&r.rows, r.t0)?;
                }
                Ok(())
            },
        );
        added?;
        next = parsed;
        progress(done, total);
    }
    if !read_any {
        return Err(first_error
            .unwrap_or_else(|| SourceError::invalid(input, "holds no Chrome trace files (.json, .json.gz, .pfw)")));
    }
    if unmatched > 0 {
        warnings.insert(0, format!("{input}: {unmatched} B or E events without their partner were left out"));
    }
    // The training model goes into the store now, and out of memory before the tables' pass.
    match run.finish() {
        Ok(t) => w.models(&Dataset { training: Some(std::sync::Arc::new(t)), ..Default::default() })?,
        Err(e) if files.len() > 1 => return Err(e),
        Err(_) => {}
    }
    let (w, skeleton) = sink.write(w)?;
    for line in &warnings {
        eprintln!("warning: {line}");
    }
    let d = Dataset { name: input.to_string(), trace: skeleton, warnings, ..Default::default() };
    w.finish(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Rows = (Vec<(String, u64, u64, String, u32)>, Vec<(u32, u32, u64, u64)>, Vec<(u32, u64, String)>);

    fn rows(d: &Dataset) -> Rows {
        let t = &d.trace;
        let i = &t.intervals;
        let mut v: Vec<_> = (0..i.start.len())
            .map(|k| {
                let loc = t.locations.name[i.location[k] as usize].clone();
                (loc, i.start[k], i.end[k], t.region_names[i.kind[k] as usize].clone(), i.depth[k])
            })
            .collect();
        v.sort();
        let m = &t.messages;
        let mut msgs: Vec<_> =
            (0..m.source.len()).map(|k| (m.source[k], m.destination[k], m.send_time[k], m.recv_time[k])).collect();
        msgs.sort();
        let x = &t.metrics;
        let mut metrics: Vec<_> = (0..x.time.len())
            .map(|k| (x.location[k], x.time[k], format!("{} {}", t.metric_names[x.metric[k] as usize], x.value[k])))
            .collect();
        metrics.sort();
        (v, msgs, metrics)
    }

    /// A run streamed into a store holds what the run read in memory holds: its locations,
    /// every row, and the training model; and the streamed run is the one written from memory.
    #[test]
    fn a_streamed_run_is_the_run_read_in_memory() {
        let Some(real) = exaviz_model::testing::shared_data("kineto-dlrm-8gpu") else { return };
        assert!(streams(&real).is_some(), "Kineto files with distributedInfo stream");
        let dir = std::env::temp_dir().join(format!("exaviz-run-stream-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let input = real.to_str().unwrap();
        let streamed = dir.join("streamed");
        let seen = std::cell::Cell::new(0);
        exaviz_datasets::convert(input, &streamed, &|d, _| seen.set(d)).unwrap();
        assert!(seen.get() > 7_000_000, "progress in bytes: {}", seen.get());
        let memory = exaviz_datasets::open(input).unwrap();
        let written = dir.join("written");
        exaviz_store::write(&memory, &written).unwrap();
        let from_stream = exaviz_datasets::open(streamed.to_str().unwrap()).unwrap();
        let from_memory = exaviz_datasets::open(written.to_str().unwrap()).unwrap();
        assert_eq!(from_stream.trace.locations.name, memory.trace.locations.name);
        assert_eq!(from_stream.trace.region_names, memory.trace.region_names);
        assert_eq!(from_stream.summary(), from_memory.summary());
        assert_eq!(rows(&from_stream), rows(&memory));
        let instants = |d: &Dataset| -> Vec<(u64, u32, String, exaviz_model::InstantScope)> {
            let (t, i) = (&d.trace, &d.trace.instants);
            (0..i.len())
                .map(|k| (i.time[k], i.location[k], t.region_names[i.name[k] as usize].clone(), i.scope[k]))
                .collect()
        };
        assert_eq!(instants(&from_stream), instants(&memory));
        assert_eq!(instants(&memory).len(), 16, "each rank's Iteration Start and Record Window End");
        let json = |d: &Dataset| serde_json::to_string(d.training.as_deref().unwrap()).unwrap();
        assert_eq!(json(&from_stream), json(&memory), "the training model");
        assert!(exaviz_store::pyramid(&streamed).unwrap().is_some(), "the pyramid is summed while streaming");
        let left: Vec<_> = std::fs::read_dir(&streamed).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(!left.iter().any(|n| n.to_string_lossy().ends_with(".spill")), "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
