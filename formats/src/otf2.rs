//! A native reader of OTF2 archives (the format Score-P writes and Vampir reads).
//!
//! Why native rather than a binding of the reference C library: a hostile or truncated file must
//! give a one-line error and never crash the process or allocate from a count it contains; this
//! reader checks every length against the bytes actually present, keeps the workspace free of
//! `unsafe`, and needs no C library at build time. The reference tools (`otf2-print`) serve as
//! the test oracle instead (see `tests/otf2.rs`).
//!
//! What is read: the anchor file (`NAME.otf2`: version, chunk sizes), the global definitions
//! (`NAME.def`: clock properties, strings, regions, system tree nodes, location groups,
//! locations, groups, communicators, metric members and classes), the per-location mapping tables
//! (`NAME/ID.def`) and events (`NAME/ID.evt`): Enter/Leave, MPI Send/Recv, Isend/IsendComplete,
//! IrecvRequest/Irecv, collective begin/end, Metric, program begin/end. Every other event is
//! skipped by its record length. Sends and receives are matched into messages in MPI's
//! non-overtaking order (first send to first receive per sender, receiver, communicator and tag).
//!
//! Layout facts this reader relies on (checked against `otf2-print` on the bundled traces):
//! files are sequences of chunks (`chunk size` from the anchor) that start with a header record
//! (type 3, byte-order mark, two 64-bit event numbers) and end with an end-of-chunk (1) or
//! end-of-file (2) record; integers are little-endian; "compressed" integers are a byte count
//! (0: zero, 0xff: undefined) followed by that many bytes; every record has a length byte (0xff:
//! a 64-bit length follows) except the events whose only attribute is one compressed integer
//! (Enter, Leave, IsendComplete, IrecvRequest, RequestTest, RequestCancelled); an event's time is
//! set by the timestamp record (type 5, 64 bits) before it.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use exaviz_model::dataset::Dataset;
use exaviz_model::source::{Repairs, SourceError};
use exaviz_model::{LocationKind, Trace};

const CHUNK_HEADER: u8 = 3;
const END_OF_CHUNK: u8 = 1;
const END_OF_FILE: u8 = 2;
const TIMESTAMP: u8 = 5;
/// The byte-order mark of little-endian archives (the only kind this reader accepts).
const LITTLE_ENDIAN_MARK: u8 = 0x42;
const CHUNK_MIN: u64 = 256 << 10;
const CHUNK_MAX: u64 = 16 << 20;
const UNDEFINED_U32: u32 = u32::MAX;

// Event record types.
const EV_ENTER: u8 = 12;
const EV_LEAVE: u8 = 13;
const EV_MPI_SEND: u8 = 14;
const EV_MPI_ISEND: u8 = 15;
const EV_MPI_ISEND_COMPLETE: u8 = 16;
const EV_MPI_IRECV_REQUEST: u8 = 17;
const EV_MPI_RECV: u8 = 18;
const EV_MPI_IRECV: u8 = 19;
const EV_MPI_REQUEST_TEST: u8 = 20;
const EV_MPI_REQUEST_CANCELLED: u8 = 21;
const EV_MPI_COLLECTIVE_BEGIN: u8 = 22;
const EV_MPI_COLLECTIVE_END: u8 = 23;
const EV_METRIC: u8 = 31;
/// Events without a record length: their one attribute is a compressed integer.
const SINGLETONS: [u8; 6] =
    [EV_ENTER, EV_LEAVE, EV_MPI_ISEND_COMPLETE, EV_MPI_IRECV_REQUEST, EV_MPI_REQUEST_TEST, EV_MPI_REQUEST_CANCELLED];

// Global definition record types.
const DEF_CLOCK_PROPERTIES: u8 = 5;
const DEF_STRING: u8 = 10;
const DEF_SYSTEM_TREE_NODE: u8 = 12;
const DEF_LOCATION_GROUP: u8 = 13;
const DEF_LOCATION: u8 = 14;
const DEF_REGION: u8 = 15;
const DEF_GROUP: u8 = 18;
const DEF_METRIC_MEMBER: u8 = 19;
const DEF_METRIC_CLASS: u8 = 20;
const DEF_METRIC_INSTANCE: u8 = 21;
const DEF_COMM: u8 = 22;
// Local definition record types.
const LOCAL_MAPPING_TABLE: u8 = 5;
const LOCAL_CLOCK_OFFSET: u8 = 6;
const MAPPING_REGION: u8 = 3;
const MAPPING_METRIC: u8 = 5;
const MAPPING_COMM: u8 = 6;

// `OTF2_LocationType` and `OTF2_LocationGroupType`.
const LOCATION_CPU_THREAD: u8 = 1;
const LOCATION_ACCELERATOR_STREAM: u8 = 2;
const LOCATION_METRIC: u8 = 3;
// `OTF2_MetricScope`: where a metric instance's values belong.
const SCOPE_LOCATION: u8 = 0;
const SCOPE_LOCATION_GROUP: u8 = 1;
const SCOPE_SYSTEM_TREE_NODE: u8 = 2;

const GROUP_COMM_LOCATIONS: u8 = 4;
const GROUP_COMM_GROUP: u8 = 5;
const GROUP_COMM_SELF: u8 = 6;

/// Names of MPI collective operations, by OTF2's `OTF2_CollectiveOp` code.
pub const COLLECTIVE_OPS: [&str; 23] = [
    "Barrier",
    "Bcast",
    "Gather",
    "Gatherv",
    "Scatter",
    "Scatterv",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Alltoallv",
    "Alltoallw",
    "Allreduce",
    "Reduce",
    "Reduce_scatter",
    "Scan",
    "Exscan",
    "Reduce_scatter_block",
    "Create_handle",
    "Destroy_handle",
    "Allocate",
    "Deallocate",
    "Create_handle_and_allocate",
    "Destroy_handle_and_deallocate",
];

type R<T> = Result<T, String>;

/// Whether the first bytes of a file are those of an OTF2 anchor file.
pub fn looks_like_anchor(head: &[u8]) -> bool {
    head.len() >= 7 && head[0] == CHUNK_HEADER && &head[2..7] == b"OTF2\0"
}

/// The OTF2 anchor file directly in `dir` (any name: Score-P writes `traces.otf2`, APEX
/// `APEX.otf2`), found by its first bytes.
pub fn anchor_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "otf2") && p.is_file())
        .filter(|p| {
            let mut head = [0u8; 8];
            std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut head)).is_ok() && looks_like_anchor(&head)
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

/// A bounds-checked reader over one record or chunk.
#[derive(Debug)]
struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cur<'a> {
    fn new(b: &'a [u8]) -> Self {
        Self { b, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.b.len()
    }

    fn bytes(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| format!("record cut short at byte {} (wanted {n} more)", self.pos))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.bytes(1)?[0])
    }

    fn full_u64(&mut self) -> R<u64> {
        let b = self.bytes(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// A compressed integer; `None` where it is OTF2's "undefined".
    fn compressed(&mut self) -> R<Option<u64>> {
        let n = self.u8()?;
        match n {
            0 => Ok(Some(0)),
            0xff => Ok(None),
            1..=8 => {
                let mut v = 0u64;
                for (i, &b) in self.bytes(n as usize)?.iter().enumerate() {
                    v |= u64::from(b) << (8 * i);
                }
                Ok(Some(v))
            }
            _ => Err(format!("invalid compressed integer size {n} at byte {}", self.pos - 1)),
        }
    }

    fn cu64(&mut self) -> R<u64> {
        Ok(self.compressed()?.unwrap_or(u64::MAX))
    }

    /// A compressed 32-bit reference; undefined reads as `u32::MAX`.
    fn cu32(&mut self) -> R<u32> {
        match self.compressed()? {
            None => Ok(UNDEFINED_U32),
            Some(v) => u32::try_from(v).map_err(|_| format!("value {v} does not fit 32 bits")),
        }
    }

    fn string(&mut self) -> R<String> {
        let rest = &self.b[self.pos..];
        let len = rest.iter().position(|&c| c == 0).ok_or("string without its terminating NUL")?;
        let s = String::from_utf8_lossy(&rest[..len]).into_owned();
        self.pos += len + 1;
        Ok(s)
    }

    /// A record's length byte (or 0xff and a 64-bit length), checked against what is left.
    fn record(&mut self) -> R<Cur<'a>> {
        let small = self.u8()?;
        let len = if small == 0xff { self.full_u64()? } else { u64::from(small) };
        let len = usize::try_from(len).map_err(|_| "record length too large".to_string())?;
        Ok(Cur::new(self.bytes(len)?))
    }
}

/// Reads a file chunk by chunk (one chunk in memory at a time) and hands each record to `f`
/// with its type and cursor: a singleton event's cursor holds its one compressed attribute.
/// Event files also track the time set by timestamp records.
fn for_each_record(path: &Path, chunk_size: u64, events: bool, mut f: impl FnMut(u8, u64, &mut Cur) -> R<()>) -> R<()> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut reader = std::io::BufReader::new(file);
    let mut chunk = Vec::new();
    let mut time = 0u64;
    for index in 0u64.. {
        chunk.clear();
        (&mut reader).take(chunk_size).read_to_end(&mut chunk).map_err(|e| format!("read error: {e}"))?;
        if chunk.is_empty() {
            return Err(format!("ends after {index} chunks without an end-of-file record (truncated?)"));
        }
        let mut c = Cur::new(&chunk);
        let at = |c: &Cur, m: String| format!("chunk {index}, byte {}: {m}", c.pos);
        let (kind, mark) = (c.u8()?, c.u8()?);
        if kind != CHUNK_HEADER {
            return Err(at(&c, format!("expected a chunk header, found record type {kind}")));
        }
        if mark != LITTLE_ENDIAN_MARK {
            return Err(at(&c, format!("unsupported byte-order mark 0x{mark:02x} (only little-endian archives)")));
        }
        c.bytes(16).map_err(|m| at(&c, m))?;
        loop {
            if c.done() {
                return Err(at(&c, "chunk ends without an end-of-chunk record (truncated?)".into()));
            }
            let kind = c.u8()?;
            match kind {
                END_OF_CHUNK => break,
                END_OF_FILE => return Ok(()),
                TIMESTAMP if events => time = c.full_u64().map_err(|m| at(&c, m))?,
                k if events && SINGLETONS.contains(&k) => {
                    let start = c.pos;
                    c.compressed().map_err(|m| at(&c, m))?;
                    f(k, time, &mut Cur::new(&chunk[start..c.pos])).map_err(|m| at(&c, m))?;
                }
                k => {
                    let mut rec = c.record().map_err(|m| at(&c, m))?;
                    f(k, time, &mut rec).map_err(|m| at(&c, format!("record type {k}: {m}")))?;
                }
            }
        }
    }
    unreachable!("the chunk loop only ends by returning")
}

/// What the anchor file says.
#[derive(Debug)]
struct Anchor {
    version: (u8, u8, u8),
    chunk_events: u64,
    chunk_defs: u64,
}

fn read_anchor(bytes: &[u8]) -> R<Anchor> {
    if !looks_like_anchor(bytes) {
        return Err("not an OTF2 anchor file (bad magic)".into());
    }
    let mut c = Cur::new(bytes);
    c.bytes(9)?;
    let version = (c.u8()?, c.u8()?, c.u8()?);
    let (chunk_events, chunk_defs) = (c.full_u64()?, c.full_u64()?);
    if version.0 < 2 || version.0 > 3 {
        return Err(format!("unsupported OTF2 version {}.{}.{}", version.0, version.1, version.2));
    }
    for (what, v) in [("event", chunk_events), ("definition", chunk_defs)] {
        if !(CHUNK_MIN..=CHUNK_MAX).contains(&v) {
            return Err(format!("{what} chunk size {v} outside OTF2's {CHUNK_MIN}..{CHUNK_MAX}"));
        }
    }
    Ok(Anchor { version, chunk_events, chunk_defs })
}

#[derive(Debug, Default)]
struct Group {
    kind: u8,
    paradigm: u8,
    members: Vec<u64>,
}

/// A location's definition.
#[derive(Debug, Clone, Copy)]
struct LocationDef {
    id: u64,
    name: u32,
    /// `OTF2_LocationType`.
    kind: u8,
    group: u32,
    events: u64,
}

/// A metric member: a counter's name, how its values read and its unit.
#[derive(Debug, Clone, Copy)]
struct MetricMember {
    name: u32,
    /// `OTF2_METRIC_VALUE_ACCUMULATED`: the values sum up since a start (energy, event counts).
    accumulated: bool,
    /// `OTF2_Base`: 0 binary, 1 decimal; the values are in `base ^ exponent` units.
    base: u8,
    exponent: i64,
    unit: u32,
}

/// `OTF2_METRIC_ABSOLUTE_POINT`: the mode of a member whose record does not say.
const METRIC_ABSOLUTE: u8 = 0x11;

/// A unit as read: the unit's name with the scale of `base ^ exponent` as a prefix ("µW" for
/// decimal -6 and "W", "KiB" for binary 10 and "B"), or as a factor where no prefix names it.
fn scaled_unit(unit: &str, base: u8, exponent: i64) -> String {
    let prefix = match (base, exponent) {
        (_, 0) => Some(""),
        (0, 10) => Some("Ki"),
        (0, 20) => Some("Mi"),
        (0, 30) => Some("Gi"),
        (1, -9) => Some("n"),
        (1, -6) => Some("µ"),
        (1, -3) => Some("m"),
        (1, 3) => Some("k"),
        (1, 6) => Some("M"),
        (1, 9) => Some("G"),
        _ => None,
    };
    match prefix {
        Some(p) => format!("{p}{unit}"),
        None => format!("{}^{exponent} {unit}", if base == 0 { 2 } else { 10 }),
    }
}

/// A metric instance: a class's values recorded by one location for a scope.
#[derive(Debug, Clone, Copy)]
struct MetricInstance {
    class: u32,
    recorder: u64,
    scope_type: u8,
    scope: u64,
}

/// The global definitions this reader uses.
#[derive(Debug, Default)]
struct Defs {
    ticks_per_second: u64,
    strings: HashMap<u32, String>,
    /// Region ref -> (name ref), in definition order.
    regions: Vec<(u32, u32)>,
    /// Location group ref -> (name ref, system tree parent ref).
    location_groups: HashMap<u32, (u32, u32)>,
    metric_instances: HashMap<u32, MetricInstance>,
    /// System tree node ref -> (name ref, class ref, parent ref).
    system_tree: HashMap<u32, (u32, u32, u32)>,
    /// In definition order.
    locations: Vec<LocationDef>,
    groups: HashMap<u32, Group>,
    /// Comm ref -> group ref.
    comms: HashMap<u32, u32>,
    metric_members: HashMap<u32, MetricMember>,
    /// Metric class ref -> member refs.
    metric_classes: HashMap<u32, Vec<u32>>,
}

impl Defs {
    fn read(path: &Path, chunk: u64) -> R<Self> {
        let mut d = Defs::default();
        for_each_record(path, chunk, false, |kind, _, c| d.record(kind, c))?;
        if d.ticks_per_second == 0 {
            return Err("no clock properties (timer resolution) defined".into());
        }
        Ok(d)
    }

    fn record(&mut self, kind: u8, c: &mut Cur) -> R<()> {
        match kind {
            DEF_CLOCK_PROPERTIES => self.ticks_per_second = c.cu64()?,
            DEF_STRING => {
                let id = c.cu32()?;
                self.strings.insert(id, c.string()?);
            }
            DEF_REGION => {
                let (id, name) = (c.cu32()?, c.cu32()?);
                self.regions.push((id, name));
            }
            DEF_SYSTEM_TREE_NODE => {
                let (id, name, class, parent) = (c.cu32()?, c.cu32()?, c.cu32()?, c.cu32()?);
                self.system_tree.insert(id, (name, class, parent));
            }
            DEF_LOCATION_GROUP => {
                let (id, name) = (c.cu32()?, c.cu32()?);
                let _type = c.u8()?;
                let parent = c.cu32()?;
                self.location_groups.insert(id, (name, parent));
            }
            DEF_LOCATION => {
                let (id, name) = (c.cu64()?, c.cu32()?);
                let kind = c.u8()?;
                let (events, group) = (c.cu64()?, c.cu32()?);
                self.locations.push(LocationDef { id, name, kind, group, events });
            }
            DEF_GROUP => {
                let (id, _name, _pre12) = (c.cu32()?, c.cu32()?, c.u8()?);
                let count = c.cu64()?;
                // Each member takes at least one byte: a count beyond the record is corrupt.
                if count > (c.b.len() - c.pos) as u64 {
                    return Err(format!("group {id} claims {count} members in a {}-byte record", c.b.len()));
                }
                let members = (0..count).map(|_| c.cu64()).collect::<R<Vec<_>>>()?;
                let (kind, paradigm) = if c.done() { (0, 0) } else { (c.u8()?, c.u8()?) };
                self.groups.insert(id, Group { kind, paradigm, members });
            }
            DEF_COMM => {
                let (id, _name, group) = (c.cu32()?, c.cu32()?, c.cu32()?);
                self.comms.insert(id, group);
            }
            DEF_METRIC_MEMBER => {
                let (id, name) = (c.cu32()?, c.cu32()?);
                // description, metric type, mode, value type, base, exponent, unit; a record cut
                // after the name keeps the name.
                let rest = |c: &mut Cur| -> R<(u8, u8, u64, u32)> {
                    let (_description, _type, mode, _value_type) = (c.cu32()?, c.u8()?, c.u8()?, c.u8()?);
                    Ok((mode, c.u8()?, c.cu64()?, c.cu32()?))
                };
                let (mode, base, exponent, unit) = rest(c).unwrap_or((METRIC_ABSOLUTE, 1, 0, UNDEFINED_U32));
                let member =
                    MetricMember { name, accumulated: mode & 0x0f == 0, base, exponent: exponent as i64, unit };
                self.metric_members.insert(id, member);
            }
            DEF_METRIC_CLASS => {
                let id = c.cu32()?;
                let count = c.u8()?;
                let members = (0..count).map(|_| c.cu32()).collect::<R<Vec<_>>>()?;
                self.metric_classes.insert(id, members);
            }
            DEF_METRIC_INSTANCE => {
                let (id, class, recorder) = (c.cu32()?, c.cu32()?, c.cu64()?);
                let (scope_type, scope) = (c.u8()?, c.cu64()?);
                self.metric_instances.insert(id, MetricInstance { class, recorder, scope_type, scope });
            }
            _ => {}
        }
        Ok(())
    }

    /// The system tree node `id`'s path from the top, as "class name" steps ("node quartz10"),
    /// the machine root left out; bounded against cycles in a corrupt file.
    fn system_path(&self, mut id: u32) -> Vec<String> {
        let mut path = Vec::new();
        while let Some(&(name, class, parent)) = self.system_tree.get(&id) {
            if path.len() >= 64 {
                break;
            }
            if parent != u32::MAX && self.system_tree.contains_key(&parent) {
                path.push(format!("{} {}", self.string(class), self.string(name)));
            }
            id = parent;
        }
        path.reverse();
        path
    }

    /// The scope (`OTF2_MetricScope`, its ref) of the metric instances location `id` records.
    fn metric_scope_of_recorder(&self, id: u64) -> Option<(u8, u64)> {
        let mut found: Vec<_> = self.metric_instances.iter().filter(|(_, m)| m.recorder == id).collect();
        found.sort_unstable_by_key(|(k, _)| **k);
        found.first().map(|(_, m)| (m.scope_type, m.scope))
    }

    fn string(&self, id: u32) -> String {
        self.strings.get(&id).cloned().unwrap_or_else(|| format!("#{id}"))
    }

    /// The location ref of rank `rank` of communicator `comm`, seen from location `me`.
    fn rank_location(&self, comm: u32, rank: u32, me: u64) -> R<u64> {
        let group = self.comms.get(&comm).and_then(|g| self.groups.get(g));
        let group = group.ok_or_else(|| format!("communicator {comm} is not defined"))?;
        let member = |g: &Group, i: u64| {
            g.members.get(i as usize).copied().ok_or_else(|| format!("rank {i} outside communicator {comm}"))
        };
        match group.kind {
            GROUP_COMM_SELF => Ok(me),
            GROUP_COMM_LOCATIONS => member(group, u64::from(rank)),
            GROUP_COMM_GROUP => {
                let index = member(group, u64::from(rank))?;
                let locations = self
                    .groups
                    .values()
                    .find(|g| g.kind == GROUP_COMM_LOCATIONS && g.paradigm == group.paradigm)
                    .ok_or_else(|| format!("no communication locations for communicator {comm}"))?;
                member(locations, index)
            }
            k => Err(format!("communicator {comm} has a group of unsupported type {k}")),
        }
    }
}

/// Local-to-global reference mappings and clock corrections of one location.
#[derive(Default)]
struct Mappings {
    maps: HashMap<u8, HashMap<u64, u64>>,
    /// Clock offset records (time, offset), in order.
    offsets: Vec<(u64, i64)>,
}

impl Mappings {
    fn read(path: &Path, chunk: u64) -> R<Self> {
        let mut m = Mappings::default();
        if !path.exists() {
            return Ok(m);
        }
        for_each_record(path, chunk, false, |kind, _, c| {
            if kind == LOCAL_MAPPING_TABLE {
                let which = c.u8()?;
                let size = c.cu64()?;
                let sparse = c.u8()? == 1;
                if size > (c.b.len() - c.pos) as u64 {
                    return Err(format!("mapping of {size} entries in a {}-byte record", c.b.len()));
                }
                let map = m.maps.entry(which).or_default();
                for i in 0..size {
                    let (from, to) = if sparse { (c.cu64()?, c.cu64()?) } else { (i, c.cu64()?) };
                    map.insert(from, to);
                }
            } else if kind == LOCAL_CLOCK_OFFSET {
                let (time, offset) = (c.full_u64()?, c.cu64()? as i64);
                if m.offsets.last().is_some_and(|&(t, _)| t >= time) {
                    return Err(format!("clock offsets out of order at time {time}"));
                }
                m.offsets.push((time, offset));
            }
            Ok(())
        })?;
        Ok(m)
    }

    /// A local timestamp on the global clock, as OTF2's reader corrects it: the offset is
    /// interpolated linearly between consecutive clock offset records (and extrapolated from
    /// the first or last pair), rounded half to even; with fewer than two records, unchanged.
    fn correct(&self, time: u64) -> u64 {
        if self.offsets.len() < 2 {
            return time;
        }
        let i = self.offsets.windows(2).position(|w| time <= w[1].0).unwrap_or(self.offsets.len() - 2);
        let ((t0, o0), (t1, o1)) = (self.offsets[i], self.offsets[i + 1]);
        let slope = (o1 - o0) as f64 / (t1 - t0) as f64;
        let diff = if time >= t0 { (time - t0) as f64 } else { -((t0 - time) as f64) };
        time.wrapping_add(o0.wrapping_add((slope * diff).round_ties_even() as i64) as u64)
    }

    fn get(&self, which: u8, id: u32) -> u32 {
        let mapped = self.maps.get(&which).and_then(|m| m.get(&u64::from(id)));
        mapped.map_or(id, |&v| u32::try_from(v).unwrap_or(UNDEFINED_U32))
    }
}

/// Reads events into the trace: intervals, messages (matched), collectives, metrics.
struct Builder<'d> {
    repairs: Repairs,
    defs: &'d Defs,
    trace: Trace,
    location_index: HashMap<u64, u32>,
    region_index: HashMap<u32, u32>,
    /// Metric member ref -> index into `trace.metric_names`.
    metric_index: HashMap<u32, u32>,
    pending: crate::matching::Matcher<(u32, u32, u32, u32)>,
}

impl Builder<'_> {
    fn key(&self, me: u64, comm: u32, rank: u32, tag: u32, send: bool) -> R<(u32, u32, u32, u32)> {
        let other = self.defs.rank_location(comm, rank, me)?;
        let index = |l: u64| self.location_index.get(&l).copied().ok_or_else(|| format!("location {l} is not defined"));
        let (a, b) = (index(me)?, index(other)?);
        Ok(if send { (a, b, comm, tag) } else { (b, a, comm, tag) })
    }

    fn send(&mut self, key: (u32, u32, u32, u32), time: u64, bytes: u64) {
        self.pending.send(&mut self.trace.messages, key, (key.0, key.1, key.3), time, bytes);
    }

    fn recv(&mut self, key: (u32, u32, u32, u32), time: u64) {
        self.pending.recv(&mut self.trace.messages, key, time);
    }

    /// An interval of `region` on `loc` (an error where the region is not defined).
    fn interval(&mut self, loc: u32, region: u32, start: u64, end: u64, depth: usize) -> R<()> {
        let kind = *self.region_index.get(&region).ok_or_else(|| format!("region {region} is not defined"))?;
        let t = &mut self.trace.intervals;
        t.location.push(loc);
        t.start.push(start);
        t.end.push(end);
        t.kind.push(kind);
        t.depth.push(depth as u32);
        Ok(())
    }

    fn location(&mut self, me: u64, evt: &Path, def: &Path, chunk: u64) -> R<()> {
        let maps = Mappings::read(def, chunk).map_err(|m| format!("{}: {m}", def.display()))?;
        let loc = self.location_index[&me];
        let file = evt.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        let mut stack: Vec<(u32, u64)> = Vec::new();
        let mut collectives: Vec<u64> = Vec::new();
        let mut last = 0u64;
        for_each_record(evt, chunk, true, |kind, raw, c| {
            // otf2-print prints such a record where it stands; here it takes the time of the
            // record before it, so intervals never end before they start.
            let raw = if raw < last {
                self.repairs.add("events stamped earlier than the event before them (given its time)", || {
                    format!("{file}, tick {raw} after {last}")
                });
                last
            } else {
                raw
            };
            last = raw;
            let time = maps.correct(raw);
            match kind {
                EV_ENTER => stack.push((maps.get(MAPPING_REGION, c.cu32()?), time)),
                EV_LEAVE => {
                    let region = maps.get(MAPPING_REGION, c.cu32()?);
                    // As Vampir and otf2-print take it: a leave that is not of the innermost
                    // region closes the regions entered after its region's enter; a leave of a
                    // region not entered is dropped. Each is a counted repair.
                    let Some(at) = stack.iter().rposition(|&(r, _)| r == region) else {
                        self.repairs.add("leaves of a region not entered dropped", || {
                            format!("{file}, region {region} at tick {raw}")
                        });
                        return Ok(());
                    };
                    if at + 1 < stack.len() {
                        let inner = stack[stack.len() - 1].0;
                        self.repairs
                            .add("leaves out of nesting order (regions entered later closed with them)", || {
                                format!("{file}, leave of region {region} while in region {inner} at tick {raw}")
                            });
                    }
                    while stack.len() > at {
                        let (r, start) = stack.pop().expect("the stack holds the region");
                        self.interval(loc, r, start, time, stack.len())?;
                    }
                }
                EV_MPI_SEND | EV_MPI_ISEND => {
                    let (rank, comm, tag, bytes) = (c.cu32()?, maps.get(MAPPING_COMM, c.cu32()?), c.cu32()?, c.cu64()?);
                    let key = self.key(me, comm, rank, tag, true)?;
                    self.send(key, time, bytes);
                }
                EV_MPI_RECV | EV_MPI_IRECV => {
                    let (rank, comm, tag, _bytes) =
                        (c.cu32()?, maps.get(MAPPING_COMM, c.cu32()?), c.cu32()?, c.cu64()?);
                    let key = self.key(me, comm, rank, tag, false)?;
                    self.recv(key, time);
                }
                EV_MPI_COLLECTIVE_BEGIN => collectives.push(time),
                EV_MPI_COLLECTIVE_END => {
                    let (op, comm, root, sent) = (c.u8()?, maps.get(MAPPING_COMM, c.cu32()?), c.cu32()?, c.cu64()?);
                    let start = collectives.pop().ok_or("collective end without its begin")?;
                    let root = if root == UNDEFINED_U32 {
                        UNDEFINED_U32
                    } else {
                        let l = self.defs.rank_location(comm, root, me)?;
                        self.location_index.get(&l).copied().unwrap_or(UNDEFINED_U32)
                    };
                    let t = &mut self.trace.collectives;
                    t.location.push(loc);
                    t.start.push(start);
                    t.end.push(time);
                    t.op.push(u32::from(op));
                    t.root.push(root);
                    t.bytes.push(u32::try_from(sent).unwrap_or(u32::MAX));
                }
                EV_METRIC => self.metric(loc, time, maps.get(MAPPING_METRIC, c.cu32()?), c)?,
                _ => {}
            }
            Ok(())
        })
        .map_err(|m| format!("{}: {m}", evt.display()))?;
        // Regions still entered at the end of the location's events end with its last event.
        let end = maps.correct(last);
        while let Some((r, start)) = stack.pop() {
            self.repairs
                .add("regions never left (closed at their location's last event)", || format!("{file}, region {r}"));
            self.interval(loc, r, start, end.max(start), stack.len())?;
        }
        Ok(())
    }

    fn metric(&mut self, loc: u32, time: u64, class: u32, c: &mut Cur) -> R<()> {
        let count = c.u8()?;
        // A metric event names a class, or an instance of one.
        let class = self.defs.metric_instances.get(&class).map_or(class, |i| i.class);
        let members = self.defs.metric_classes.get(&class);
        for i in 0..count {
            let ty = c.u8()?;
            let value = match ty {
                // Unsigned and signed integers are compressed; floats are stored whole.
                1..=4 => c.cu64()? as f64,
                5..=8 => c.cu64()? as i64 as f64,
                9 | 10 => f64::from_bits(c.full_u64()?),
                _ => return Err(format!("metric value of unsupported type {ty}")),
            };
            let Some(&member) = members.and_then(|m| m.get(usize::from(i))) else { continue };
            let next = self.metric_index.len() as u32;
            let index = *self.metric_index.entry(member).or_insert(next);
            if index == next {
                let def = self.defs.metric_members.get(&member).copied();
                let name = def.map_or(format!("metric {member}"), |m| self.defs.string(m.name));
                let unit = def.map_or(String::new(), |m| {
                    let unit = if m.unit == UNDEFINED_U32 { String::new() } else { self.defs.string(m.unit) };
                    scaled_unit(unit.trim(), m.base, m.exponent).trim().to_string()
                });
                self.trace.metric_names.push(name);
                self.trace.metric_units.push(unit);
                self.trace.metric_accumulated.push(def.is_some_and(|m| m.accumulated));
            }
            let m = &mut self.trace.metrics;
            m.location.push(loc);
            m.time.push(time);
            m.metric.push(index);
            m.value.push(value);
        }
        Ok(())
    }
}

/// Loads an OTF2 archive from its anchor file.
pub fn load(anchor_path: &Path) -> Result<Dataset, SourceError> {
    load_with_progress(anchor_path, &|_, _| {})
}

/// [`load`], calling `progress(bytes read, bytes in all)` over the event files as each
/// location's events are read.
pub fn load_with_progress(anchor_path: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let input = anchor_path.display().to_string();
    let err = |m: String| SourceError::invalid(&input, m);
    let bytes = std::fs::read(anchor_path).map_err(|source| SourceError::Io { input: input.clone(), source })?;
    let anchor = read_anchor(&bytes).map_err(err)?;
    let stem = anchor_path.file_stem().ok_or_else(|| err("anchor file has no name".into()))?;
    let dir = anchor_path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let def_path = dir.join(stem).with_extension("def");
    if !def_path.exists() {
        return Err(err(format!("missing global definitions {}", def_path.display())));
    }
    let defs = Defs::read(&def_path, anchor.chunk_defs).map_err(|m| err(format!("{}: {m}", def_path.display())))?;
    let mut b = Builder {
        repairs: Repairs::default(),
        defs: &defs,
        trace: Trace { ticks_per_second: defs.ticks_per_second, ..Default::default() },
        location_index: HashMap::new(),
        region_index: HashMap::new(),
        metric_index: HashMap::new(),
        pending: crate::matching::Matcher::new(),
    };
    for (i, &(region, name)) in defs.regions.iter().enumerate() {
        b.region_index.insert(region, i as u32);
        b.trace.region_names.push(defs.string(name));
    }
    b.trace.collective_names = COLLECTIVE_OPS.iter().map(|s| (*s).to_string()).collect();
    for (i, l) in defs.locations.iter().enumerate() {
        b.location_index.insert(l.id, i as u32);
        // "node quartz10 / MPI Rank 0 / Master thread": system tree, location group, location.
        let mut path = Vec::new();
        if let Some(&(g, parent)) = defs.location_groups.get(&l.group) {
            path.extend(defs.system_path(parent));
            path.push(defs.string(g));
        }
        let name = defs.string(l.name);
        path.push(if name.is_empty() && l.kind == LOCATION_METRIC { "metrics".into() } else { name });
        b.trace.locations.name.push(path.join(" / "));
        b.trace.locations.node.push(u32::MAX);
        b.trace.locations.kind.push(match l.kind {
            LOCATION_CPU_THREAD => LocationKind::CpuThread,
            LOCATION_ACCELERATOR_STREAM => LocationKind::GpuStream,
            LOCATION_METRIC => LocationKind::Metric,
            _ => LocationKind::Unknown,
        });
    }
    if defs.locations.is_empty() {
        return Err(err("no locations defined".into()));
    }
    let traces = dir.join(stem);
    let size = |id: u64| std::fs::metadata(traces.join(format!("{id}.evt"))).map_or(0, |m| m.len());
    let total: u64 = defs.locations.iter().map(|l| size(l.id)).sum();
    let mut done = 0;
    for &LocationDef { id, events, .. } in &defs.locations {
        progress(done, total);
        done += size(id);
        let evt = traces.join(format!("{id}.evt"));
        if !evt.exists() {
            if events == 0 {
                continue;
            }
            return Err(err(format!("missing event file {} for location {id}", evt.display())));
        }
        b.location(id, &evt, &traces.join(format!("{id}.def")), anchor.chunk_events).map_err(err)?;
    }
    progress(total, total);
    unmatched(&mut b);
    let _ = anchor.version;
    let host = metric_hosts(&defs, &b.trace);
    compact_locations(&mut b.trace, &host);
    let warnings = b.repairs.lines(&input);
    Ok(Dataset { name: input.clone(), trace: b.trace, warnings, ..Default::default() })
}

/// Sends without their receive (or the reverse): the sends left out, both counted as repairs.
fn unmatched(b: &mut Builder) {
    let at = |(s, d, comm, tag): (u32, u32, u32, u32)| format!("location {s} to {d}, communicator {comm}, tag {tag}");
    b.pending.leave_out_unmatched(&mut b.trace.messages, &mut b.repairs, at);
}

/// For each location, the location its metric samples are shown on when it records metrics
/// only (OTF2 `METRIC` locations, named by Score-P's plugins after nothing): the first location
/// with events of the metric instance's scope (a location, its group, or a system tree node and
/// below), else of its own location group; `None` keeps it.
fn metric_hosts(defs: &Defs, t: &Trace) -> Vec<Option<u32>> {
    let n = defs.locations.len();
    let mut busy = vec![false; n];
    for &l in t.intervals.location.iter().chain(&t.messages.source).chain(&t.messages.destination) {
        busy[l as usize] = true;
    }
    for &l in &t.collectives.location {
        busy[l as usize] = true;
    }
    let index: HashMap<u64, usize> = defs.locations.iter().enumerate().map(|(i, l)| (l.id, i)).collect();
    // Whether system tree node `node` is `under` or below it (bounded against cycles).
    let below = |mut node: u32, under: u64| {
        for _ in 0..64 {
            if u64::from(node) == under {
                return true;
            }
            match defs.system_tree.get(&node) {
                Some(&(_, _, parent)) if parent != u32::MAX => node = parent,
                _ => return false,
            }
        }
        false
    };
    let first_busy = |want: &dyn Fn(&LocationDef) -> bool| {
        defs.locations.iter().enumerate().find(|(i, l)| busy[*i] && want(l)).map(|(i, _)| i as u32)
    };
    (0..n)
        .map(|i| {
            let l = &defs.locations[i];
            if busy[i] || l.kind != LOCATION_METRIC {
                return None;
            }
            let scope = defs.metric_scope_of_recorder(l.id);
            let host = match scope {
                Some((SCOPE_LOCATION, s)) => index.get(&s).filter(|&&k| busy[k]).map(|&k| k as u32),
                Some((SCOPE_LOCATION_GROUP, g)) => first_busy(&|d| u64::from(d.group) == g),
                Some((SCOPE_SYSTEM_TREE_NODE, node)) => {
                    first_busy(&|d| defs.location_groups.get(&d.group).is_some_and(|&(_, parent)| below(parent, node)))
                }
                _ => None,
            };
            host.or_else(|| first_busy(&|d| d.group == l.group))
        })
        .collect()
}

/// Moves the metric samples of metric-only locations onto their hosts and leaves out every
/// location without intervals, messages, collectives or metrics (no empty rows).
fn compact_locations(t: &mut Trace, host: &[Option<u32>]) {
    for l in &mut t.metrics.location {
        if let Some(h) = host.get(*l as usize).copied().flatten() {
            *l = h;
        }
    }
    let n = t.locations.name.len();
    let mut used = vec![false; n];
    for &l in t
        .intervals
        .location
        .iter()
        .chain(&t.messages.source)
        .chain(&t.messages.destination)
        .chain(&t.collectives.location)
        .chain(&t.metrics.location)
        .chain(&t.collectives.root)
    {
        if let Some(u) = used.get_mut(l as usize) {
            *u = true;
        }
    }
    if used.iter().all(|&u| u) || used.iter().all(|&u| !u) {
        return;
    }
    let mut new_index = vec![u32::MAX; n];
    let mut next = 0u32;
    for i in 0..n {
        if used[i] {
            new_index[i] = next;
            next += 1;
        }
    }
    let remap = |v: &mut Vec<u32>| {
        for l in v.iter_mut() {
            if let Some(&k) = new_index.get(*l as usize) {
                *l = k;
            }
        }
    };
    remap(&mut t.intervals.location);
    remap(&mut t.messages.source);
    remap(&mut t.messages.destination);
    remap(&mut t.collectives.location);
    remap(&mut t.collectives.root);
    remap(&mut t.metrics.location);
    let keep = |i: &usize| used[*i];
    let loc = &mut t.locations;
    loc.name = std::mem::take(&mut loc.name).into_iter().enumerate().filter(|(i, _)| keep(i)).map(|p| p.1).collect();
    loc.node = std::mem::take(&mut loc.node).into_iter().enumerate().filter(|(i, _)| keep(i)).map(|p| p.1).collect();
    loc.kind = std::mem::take(&mut loc.kind).into_iter().enumerate().filter(|(i, _)| keep(i)).map(|p| p.1).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers() {
        let mut c = Cur::new(&[0, 2, 0xe9, 0x67, 0xff, 9]);
        assert_eq!(c.compressed().unwrap(), Some(0));
        assert_eq!(c.compressed().unwrap(), Some(26601));
        assert_eq!(c.compressed().unwrap(), None);
        assert!(c.compressed().unwrap_err().contains("invalid compressed integer size 9"));
        assert!(Cur::new(&[4, 1, 2]).compressed().unwrap_err().contains("cut short"));
        assert!(Cur::new(&[0xff, 0xff]).record().unwrap_err().contains("cut short"));
    }

    #[test]
    fn anchor_checks() {
        assert!(read_anchor(b"\x03BOTX2\0").unwrap_err().contains("bad magic"));
        let mut a = b"\x03BOTF2\0\x03\x02\x02\x03\x00".to_vec();
        a.extend(1_048_576u64.to_le_bytes());
        a.extend(1u64.to_le_bytes());
        assert!(read_anchor(&a).unwrap_err().contains("definition chunk size 1 outside"));
    }
}
