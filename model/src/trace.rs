//! The columnar model: struct-of-arrays tables for traces and topologies.
//!
//! Every column is a plain `Vec` of a `Pod` type, so a column uploads to the GPU as it is, with
//! no per-element conversion. Times are `u64` ticks of the trace clock (`Trace::ticks_per_second`);
//! on the GPU a `u64` column is read as pairs of `u32` words (low, high).

use serde::Serialize;

/// Locations: ranks, threads or devices that own intervals and send messages.
#[derive(Clone, Debug, Default)]
pub struct Locations {
    pub name: Vec<String>,
    /// Optional node of the topology each location runs on (`u32::MAX`: unknown).
    pub node: Vec<u32>,
    /// What each location is, where the source says; may be shorter than `name` (the rest
    /// [`LocationKind::Unknown`]).
    pub kind: Vec<LocationKind>,
}

/// What a location is, as the trace's format types it (OTF2's location types, a GPU stream of
/// Kineto or Nsight Systems, a process of a Chrome trace).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LocationKind {
    #[default]
    Unknown,
    /// A CPU thread (OTF2 `CPU_THREAD`, a host thread of a profile).
    CpuThread,
    /// A GPU or accelerator stream (OTF2 `ACCELERATOR_STREAM`, a CUDA or HIP stream).
    GpuStream,
    /// A process as one row (a Chrome trace's process, an MPI rank without threads).
    Process,
    /// A location that only records metrics (OTF2 `METRIC`).
    Metric,
}

impl LocationKind {
    /// The kind's number in a store's `locations.kind` column.
    pub fn code(self) -> u32 {
        match self {
            Self::Unknown => 0,
            Self::CpuThread => 1,
            Self::GpuStream => 2,
            Self::Process => 3,
            Self::Metric => 4,
        }
    }

    /// The kind of a store's number (unknown for a number of no kind).
    pub fn from_code(code: u32) -> Self {
        match code {
            1 => Self::CpuThread,
            2 => Self::GpuStream,
            3 => Self::Process,
            4 => Self::Metric,
            _ => Self::Unknown,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::CpuThread => "CPU thread",
            Self::GpuStream => "GPU stream",
            Self::Process => "process",
            Self::Metric => "metric",
        }
    }
}

impl Locations {
    /// Location `i`'s kind (unknown where the source did not say).
    pub fn kind_of(&self, i: usize) -> LocationKind {
        self.kind.get(i).copied().unwrap_or_default()
    }

    /// How many locations of each kind, in the order of [`LocationKind`].
    pub fn kinds(&self) -> Vec<(LocationKind, usize)> {
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..self.name.len() {
            *counts.entry(self.kind_of(i)).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }
}

/// Intervals: a location is in a state (region, kernel, operator kind) from start to end.
#[derive(Clone, Debug, Default)]
pub struct Intervals {
    pub location: Vec<u32>,
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// Index into `Trace::region_names`.
    pub kind: Vec<u32>,
    /// Nesting depth on its location (0: outermost, e.g. `main`).
    pub depth: Vec<u32>,
}

/// Point-to-point messages. Resident size: 4 + 4 + 8 + 8 + 4 + 4 = 32 bytes per message.
#[derive(Clone, Debug, Default)]
pub struct Messages {
    pub source: Vec<u32>,
    pub destination: Vec<u32>,
    pub send_time: Vec<u64>,
    pub recv_time: Vec<u64>,
    pub bytes: Vec<u32>,
    pub tag: Vec<u32>,
}

impl Intervals {
    /// Adds one row.
    pub fn push(&mut self, location: u32, start: u64, end: u64, kind: u32, depth: u32) {
        self.location.push(location);
        self.start.push(start);
        self.end.push(end);
        self.kind.push(kind);
        self.depth.push(depth);
    }

    /// Moves `other`'s rows after these.
    pub fn append(&mut self, other: Intervals) {
        self.location.extend(other.location);
        self.start.extend(other.start);
        self.end.extend(other.end);
        self.kind.extend(other.kind);
        self.depth.extend(other.depth);
    }

    /// Reorders the rows: row `i` becomes the old row `order[i]`.
    pub fn permute(&mut self, order: &[u32]) {
        permute(&mut self.location, order);
        permute(&mut self.start, order);
        permute(&mut self.end, order);
        permute(&mut self.kind, order);
        permute(&mut self.depth, order);
    }

    /// Keeps the rows `i` where `keep[i]` holds, in order, in place.
    pub fn retain_rows(&mut self, keep: &[bool]) {
        rayon::join(
            || (retain(&mut self.location, keep), retain(&mut self.kind, keep), retain(&mut self.depth, keep)),
            || (retain(&mut self.start, keep), retain(&mut self.end, keep)),
        );
    }
}

impl Messages {
    /// Adds one row: a message from `source` to `destination`, sent and received at those ticks.
    pub fn push(
        &mut self,
        (source, destination): (u32, u32),
        (send_time, recv_time): (u64, u64),
        bytes: u32,
        tag: u32,
    ) {
        self.source.push(source);
        self.destination.push(destination);
        self.send_time.push(send_time);
        self.recv_time.push(recv_time);
        self.bytes.push(bytes);
        self.tag.push(tag);
    }

    /// Moves `other`'s rows after these.
    pub fn append(&mut self, other: Messages) {
        self.source.extend(other.source);
        self.destination.extend(other.destination);
        self.send_time.extend(other.send_time);
        self.recv_time.extend(other.recv_time);
        self.bytes.extend(other.bytes);
        self.tag.extend(other.tag);
    }

    /// Reorders the rows: row `i` becomes the old row `order[i]`.
    pub fn permute(&mut self, order: &[u32]) {
        permute(&mut self.source, order);
        permute(&mut self.destination, order);
        permute(&mut self.send_time, order);
        permute(&mut self.recv_time, order);
        permute(&mut self.bytes, order);
        permute(&mut self.tag, order);
    }

    /// Keeps the rows `i` where `keep[i]` holds, in order, in place.
    pub fn retain_rows(&mut self, keep: &[bool]) {
        rayon::join(
            || {
                for v in [&mut self.source, &mut self.destination, &mut self.bytes, &mut self.tag] {
                    retain(v, keep);
                }
            },
            || (retain(&mut self.send_time, keep), retain(&mut self.recv_time, keep)),
        );
    }

    /// Keeps the first `n` rows.
    pub fn truncate(&mut self, n: usize) {
        for v in [&mut self.source, &mut self.destination, &mut self.bytes, &mut self.tag] {
            v.truncate(n);
        }
        self.send_time.truncate(n);
        self.recv_time.truncate(n);
    }
}

fn permute<T: Copy>(v: &mut Vec<T>, order: &[u32]) {
    *v = order.iter().map(|&i| v[i as usize]).collect();
}

/// Keeps `v[i]` where `keep[i]` holds (rows past `keep`'s end are dropped), moving them down in
/// place: no new column, and nothing moved before the first row dropped.
fn retain<T: Copy>(v: &mut Vec<T>, keep: &[bool]) {
    let n = v.len().min(keep.len());
    let first = keep[..n].iter().position(|&k| !k).unwrap_or(n);
    let mut to = first;
    for from in first..n {
        if keep[from] {
            v[to] = v[from];
            to += 1;
        }
    }
    v.truncate(to);
}

/// Collective operations, one row per participating location.
#[derive(Clone, Debug, Default)]
pub struct Collectives {
    pub location: Vec<u32>,
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// Operation kind (index into `Trace::collective_names`).
    pub op: Vec<u32>,
    pub root: Vec<u32>,
    pub bytes: Vec<u32>,
}

impl Collectives {
    /// Moves `other`'s rows after these.
    pub fn append(&mut self, other: Collectives) {
        self.location.extend(other.location);
        self.start.extend(other.start);
        self.end.extend(other.end);
        self.op.extend(other.op);
        self.root.extend(other.root);
        self.bytes.extend(other.bytes);
    }
}

/// Counter samples attached to an entity (a location or a link) over time.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub entity: Vec<u32>,
    pub time: Vec<u64>,
    pub value: Vec<u32>,
}

/// Metric samples (hardware counters such as PAPI's) per location, 64-bit values.
#[derive(Clone, Debug, Default)]
pub struct MetricSamples {
    pub location: Vec<u32>,
    pub time: Vec<u64>,
    /// Index into `Trace::metric_names`.
    pub metric: Vec<u32>,
    /// As the source gives it: whole numbers (OTF2's unsigned metrics), negative or fractional
    /// ones (a Perfetto counter, a CPU time in seconds) alike.
    pub value: Vec<f64>,
}

/// Where an instant applies, as its trace scopes it: the thread of its row, its process, or the
/// whole run (Chrome's `s`: `t`, `p`, `g`; Perfetto's thread, process and global tracks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstantScope {
    #[default]
    Thread,
    Process,
    Global,
}

impl InstantScope {
    /// The scope's number in a store's `instants.scope` column.
    pub fn code(self) -> u32 {
        match self {
            Self::Thread => 0,
            Self::Process => 1,
            Self::Global => 2,
        }
    }

    /// The scope of a store's number (a thread's for a number of no scope).
    pub fn from_code(code: u32) -> Self {
        match code {
            1 => Self::Process,
            2 => Self::Global,
            _ => Self::Thread,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Thread => "thread",
            Self::Process => "process",
            Self::Global => "global",
        }
    }
}

/// Instant events, as the trace writes them: a mark of no duration with its scope, category and
/// argument count. An instant of a thread or a process is also a slice of no duration on its
/// row (`location`), as Perfetto's slice table keeps it, so it nests, counts and stores as a
/// slice; a global one lies on no row unless the trace gives it one (Perfetto's global track),
/// and is drawn across every row.
#[derive(Clone, Debug, Default)]
pub struct Instants {
    /// The row it is drawn on; [`NO_ROW`] for a global instant on none.
    pub location: Vec<u32>,
    pub time: Vec<u64>,
    /// Its name, as a region (`Trace::region_names`).
    pub name: Vec<u32>,
    pub scope: Vec<InstantScope>,
    /// Its category (`Trace::instant_categories`), where the trace names one.
    pub category: Vec<u32>,
    /// How many arguments it carries (Chrome's `args`, Perfetto's debug annotations).
    pub args: Vec<u32>,
}

/// An instant's `location` where it lies on no row.
pub const NO_ROW: u32 = u32::MAX;

impl Instants {
    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Adds one: its row (or [`NO_ROW`]), time, name, scope, category and argument count.
    pub fn push(&mut self, location: u32, time: u64, name: u32, scope: InstantScope, category: u32, args: u32) {
        self.location.push(location);
        self.time.push(time);
        self.name.push(name);
        self.scope.push(scope);
        self.category.push(category);
        self.args.push(args);
    }

    /// The instants in time order (then by row), as a store keeps them.
    pub fn sort_by_time(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&k| (self.time[k], self.location[k], k));
        let pick = |v: &[u32]| order.iter().map(|&k| v[k]).collect::<Vec<_>>();
        *self = Instants {
            location: pick(&self.location),
            time: order.iter().map(|&k| self.time[k]).collect(),
            name: pick(&self.name),
            scope: order.iter().map(|&k| self.scope[k]).collect(),
            category: pick(&self.category),
            args: pick(&self.args),
        };
    }
}

/// A trace: what ran where and what it sent.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub ticks_per_second: u64,
    pub locations: Locations,
    pub intervals: Intervals,
    pub messages: Messages,
    pub collectives: Collectives,
    /// Counters per location.
    pub location_counters: Counters,
    /// Counters per topology link (`entity` indexes `Topology::links`): packets, flits, stalls.
    pub link_counters: Counters,
    pub metrics: MetricSamples,
    /// Instant events with their scope (those of a row are also its slices of no duration).
    pub instants: Instants,
    /// Names of the instants' categories (`Instants::category`); empty where none is named.
    pub instant_categories: Vec<String>,
    /// Names of interval kinds (regions, states).
    pub region_names: Vec<String>,
    /// Regions whose intervals each mark a training step, as a profiler annotates its steps
    /// (JAX's `StepTraceAnnotation`: a slice with a `step_num`), by id, ascending. Kineto's
    /// `ProfilerStep#N` are told by their names instead.
    pub step_regions: Vec<u32>,
    /// Names of collective operations.
    pub collective_names: Vec<String>,
    pub metric_names: Vec<String>,
    /// Each metric's unit as the source gives it, with its scale ("µW", "%"); may be shorter
    /// than `metric_names` (the rest without a unit).
    pub metric_units: Vec<String>,
    /// Whether each metric accumulates (an energy or event count whose rate is what changes, as
    /// OTF2's `ACCUMULATED` metric mode says); may be shorter than `metric_names` (the rest
    /// absolute values).
    pub metric_accumulated: Vec<bool>,
    /// Set where the trace holds only some of a larger trace's rows (a time window read from a
    /// store, or none at all): the larger trace's first and last tick, so that times are shown
    /// from its start and windows mean the same in both.
    pub span_of_whole: Option<(u64, u64)>,
    /// Set where a pyramid of the whole trace gives it (with `span_of_whole` for a window of a
    /// store; on a large trace held in memory with its index): per state kind, the whole
    /// trace's ticks in it (every interval's), so that the rows' states rank and take their
    /// colours as in the pictures drawn from the pyramid.
    pub state_ticks_of_whole: Option<Vec<u64>>,
}

/// Directed links of a topology.
#[derive(Clone, Debug, Default)]
pub struct Links {
    pub source: Vec<u32>,
    pub destination: Vec<u32>,
    /// Torus dimension of the link (or tree level).
    pub dimension: Vec<u32>,
}

/// A network topology: nodes with N-D integer coordinates, directed links, groups.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// Extent of each dimension (for a torus: its shape, e.g. `[4, 4, 4, 4, 4]`).
    pub extents: Vec<u32>,
    /// Node coordinates, `extents.len()` values per node, row-major.
    pub coords: Vec<u32>,
    pub links: Links,
    /// Group of each node (job, pod, block); `u32::MAX` where none.
    pub group: Vec<u32>,
}

impl Topology {
    pub fn dims(&self) -> usize {
        self.extents.len()
    }

    pub fn node_count(&self) -> usize {
        self.coords.len().checked_div(self.dims()).unwrap_or(0)
    }

    pub fn coord(&self, node: usize) -> &[u32] {
        let d = self.dims();
        &self.coords[node * d..(node + 1) * d]
    }

    pub fn link_count(&self) -> usize {
        self.links.source.len()
    }
}

/// The least and greatest of `v` (`skip`: a value left out), in parallel chunks of plain loops:
/// one chain of parallel iterators over every column took 74-130 ms for 22M messages and 10.7M
/// intervals in one build and 18-20 ms in another, as the compiler placed its closures.
fn bounds(v: &[u64], skip: Option<u64>) -> Option<(u64, u64)> {
    use rayon::prelude::*;
    let (lo, hi) = v
        .par_chunks(1 << 16)
        .map(|c| {
            let (mut lo, mut hi) = (u64::MAX, 0u64);
            for &x in c {
                let keep = skip != Some(x);
                lo = if keep { lo.min(x) } else { lo };
                hi = if keep { hi.max(x) } else { hi };
            }
            (lo, hi)
        })
        .reduce(|| (u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    // Nothing kept leaves `lo > hi`; anything kept makes `lo <= hi`.
    (lo <= hi).then_some((lo, hi))
}

/// One metric's samples in a trace.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CounterSummary {
    pub name: String,
    pub samples: usize,
    pub min: f64,
    pub max: f64,
    /// The values' unit ("" where the source gives none).
    pub unit: String,
    /// The values accumulate (their rate is what changes).
    pub accumulated: bool,
}

impl Trace {
    /// The trace's whole span in ticks: as the source gives it, or from its intervals and messages.
    pub fn span(&self) -> Option<(u64, u64)> {
        let t = self;
        if let Some(whole) = t.span_of_whole {
            return Some(whole);
        }
        let (i, m) = (&t.intervals, &t.messages);
        [
            bounds(&i.start, None),
            bounds(&i.end, None),
            bounds(&m.send_time, None),
            bounds(&m.recv_time, Some(u64::MAX)),
            bounds(&t.instants.time, None),
        ]
        .into_iter()
        .flatten()
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }

    /// Each metric with samples: name, count, least and greatest value, in metric order.
    pub fn counter_summaries(&self) -> Vec<CounterSummary> {
        let m = &self.metrics;
        let mut acc: Vec<Option<(usize, f64, f64)>> = vec![None; self.metric_names.len()];
        for (&k, &v) in m.metric.iter().zip(&m.value) {
            if let Some(slot) = acc.get_mut(k as usize) {
                *slot = Some(match *slot {
                    None => (1, v, v),
                    Some((n, lo, hi)) => (n + 1, lo.min(v), hi.max(v)),
                });
            }
        }
        acc.iter()
            .zip(&self.metric_names)
            .enumerate()
            .filter_map(|(k, (a, name))| {
                a.map(|(samples, min, max)| CounterSummary {
                    name: name.clone(),
                    samples,
                    min,
                    max,
                    unit: self.metric_units.get(k).cloned().unwrap_or_default(),
                    accumulated: self.metric_accumulated.get(k).copied().unwrap_or(false),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Dataset;

    /// Keeping rows by a mask equals keeping them by their indices, column for column.
    #[test]
    fn retained_rows_equal_the_rows_permuted_to_the_kept_ones() {
        let mut m = Messages::default();
        for k in 0..10u32 {
            m.push((k, 9 - k), (u64::from(k) * 3, u64::from(k) * 3 + 5), 100 + k, k % 3);
        }
        for keep in [vec![true; 10], vec![false; 10], (0..10).map(|k| k % 3 != 1).collect::<Vec<bool>>()] {
            let (mut a, mut b) = (m.clone(), m.clone());
            a.retain_rows(&keep);
            let order: Vec<u32> = (0..10).filter(|&k| keep[k as usize]).collect();
            b.permute(&order);
            assert_eq!(
                (a.source, a.destination, a.send_time, a.recv_time, a.bytes, a.tag),
                (b.source, b.destination, b.send_time, b.recv_time, b.bytes, b.tag)
            );
        }
        let i = Intervals {
            location: vec![0, 1, 2, 3],
            start: vec![1, 2, 3, 4],
            end: vec![5, 6, 7, 8],
            kind: vec![0, 1, 0, 1],
            depth: vec![0, 0, 1, 1],
        };
        let mut kept = i.clone();
        kept.retain_rows(&[false, true, true]);
        // Rows past the mask's end are dropped.
        assert_eq!(
            (kept.location, kept.start, kept.end, kept.kind, kept.depth),
            (vec![1, 2], vec![2, 3], vec![6, 7], vec![1, 0], vec![0, 1])
        );
    }

    /// The chunked bounds equal a plain pass: across chunk edges, with a value left out, with
    /// nothing or only the left-out value, and with `u64::MAX` kept.
    #[test]
    fn bounds_equal_a_plain_pass() {
        let plain = |v: &[u64], skip: Option<u64>| {
            let kept: Vec<u64> = v.iter().copied().filter(|&x| skip != Some(x)).collect();
            kept.iter().min().copied().zip(kept.iter().max().copied())
        };
        let mut v: Vec<u64> = (0..200_000u64).map(|k| (k * 2_654_435_761) % 1_000_003 + 5).collect();
        v[150_000] = u64::MAX;
        v[70_000] = 1;
        for case in [&v[..], &[], &[u64::MAX, u64::MAX], &[u64::MAX], &[7], &v[..100]] {
            for skip in [None, Some(u64::MAX), Some(1)] {
                assert_eq!(bounds(case, skip), plain(case, skip), "{} values, {skip:?}", case.len());
            }
        }
    }

    #[test]
    fn message_columns_stay_within_32_bytes() {
        let per_message = size_of::<u32>() * 4 + size_of::<u64>() * 2;
        assert_eq!(per_message, 32);
    }

    #[test]
    fn summary_spans_all_times() {
        let mut d = Dataset::default();
        d.trace.messages.send_time = vec![5, 9];
        d.trace.messages.recv_time = vec![7, 12];
        d.trace.messages.source = vec![0, 1];
        d.trace.intervals.start = vec![3];
        d.trace.intervals.end = vec![4];
        d.trace.intervals.location = vec![0];
        let s = d.summary();
        assert_eq!(s.time_span_ticks, Some((3, 12)));
        assert_eq!(s.messages, 2);
        assert_eq!(s.intervals, 1);
    }
}
