//! Perfetto's protobuf traces (`.pftrace`, `.perfetto-trace`, `.proto`): what rocprof-sys
//! (omnitrace), the Perfetto SDK and Chrome write, read as Perfetto's trace processor reads the
//! TracePacket stream (`protos/perfetto/trace/trace_packet.proto` and `track_event/*.proto`).
//!
//! A trace is a sequence of `Trace.packet` (field 1) records. What is read from them:
//! - track descriptors (`track_descriptor`, 60): process tracks (`process`: pid, name), thread
//!   tracks (`thread`: pid, tid, name), custom tracks (`name`, `parent_uuid`) and counter tracks
//!   (`counter`: unit, unit name, multiplier, incremental values); the deprecated sequence-wide
//!   `thread_descriptor` (44) gives its sequence's default thread track;
//! - track events (`track_event`, 11): slices begun and ended (`TYPE_SLICE_BEGIN`,
//!   `TYPE_SLICE_END`, nested per track as the trace processor nests them), instants
//!   (`TYPE_INSTANT`, the legacy phases `i`, `I`, `n`, `R`: slices of no duration), counter values
//!   (`TYPE_COUNTER`, integer or double, and the `extra_counter_values` of any event), flows
//!   (`flow_ids`, `terminating_flow_ids`: one message from each event of a flow to the next),
//!   complete events of the legacy Chrome phase `X`; names and categories inline or interned
//!   (`interned_data`, 12) per packet sequence, with `trace_packet_defaults` (59) giving a
//!   sequence's default track and clock;
//! - timestamps (`timestamp`, 8) on the boot clock, or on a clock that a `clock_snapshot` (6)
//!   relates to it (incremental and scaled sequence clocks too);
//! - `compressed_packets` (50): packets compressed with deflate, read as the packets they hold.
//!
//! Every slice's track with slices is a location (thread tracks as CPU threads, process tracks as
//! processes, custom tracks named like a GPU queue or stream as GPU streams), named as the
//! Perfetto UI names them (`NAME PID`, `NAME TID`). Counters are drawn on their track's thread or
//! on their process's first row. Packets of other kinds (ftrace, system statistics, ...) are
//! skipped and counted; a stray byte between packets (omnitrace writes a zero byte before its
//! last packet) and bytes after the last whole packet are counted warnings, not a refusal.

use std::collections::HashMap;
use std::path::Path;

use exaviz_model::dataset::Dataset;
use exaviz_model::source::{Repairs, SourceError};
use exaviz_model::{LocationKind, Trace};

use super::protobuf::{fields, push_doubles, push_ints, varint};
use super::{Interner, read_all};
use crate::events::{EventKind, EventTable};

/// The largest trace held in memory whole (a larger one is refused, naming the limit).
const MAX_BYTES: u64 = 8 << 30;
/// The most bytes one compressed chunk may inflate to (Perfetto writes chunks under 512 KB).
const MAX_INFLATED: u64 = 64 << 20;

const BOOTTIME: u32 = 6;
/// The clock of the legacy microsecond timestamps (`timestamp_absolute_us`, `timestamp_delta_us`).
const MONOTONIC: u32 = 3;

/// Whether `head` (a file's first bytes) starts a TracePacket stream: a packet field whose
/// length fits, holding fields that parse and include one a TracePacket has.
pub fn looks_like(head: &[u8]) -> bool {
    let mut at = 0;
    if head.first() != Some(&0x0a) {
        return false;
    }
    at += 1;
    let Some(len) = varint(head, &mut at) else { return false };
    let Ok(len) = usize::try_from(len) else { return false };
    let end = (at + len).min(head.len());
    if len == 0 || len > 1 << 30 {
        return false;
    }
    // The packet's first fields (cut where the head ends) parse, and one is a TracePacket field.
    let mut known = false;
    let mut f = fields(&head[at..end]);
    for (number, _) in &mut f {
        known |= matches!(
            number,
            3 | 6 | 8 | 10 | 11 | 12 | 13 | 33 | 35 | 36 | 41 | 42 | 43 | 44 | 45 | 58 | 59 | 60 | 69 | 79
        );
    }
    known && (!f.broken || end == head.len())
}

/// A track as its descriptors give it.
#[derive(Default, Clone, Debug)]
struct Track {
    parent: Option<u64>,
    name: Option<String>,
    pid: Option<i64>,
    tid: Option<i64>,
    process_name: Option<String>,
    thread_name: Option<String>,
    counter: Option<Counter>,
    /// The packet that first described it (a reused pid's process is the one described last
    /// before its thread).
    described_at: u64,
    /// `SIBLING_MERGE_BEHAVIOR_NONE`: the last descriptor's name is the track's name.
    merge_none: bool,
    /// Its name as it stood when its first event came: a later descriptor's name does not
    /// change it (unless `merge_none`).
    name_fixed: bool,
    /// Whether an event has landed on it.
    seen: bool,
    /// `disallow_merging_with_system_tracks`: atrace slices of its thread go on a track beside.
    apart: bool,
    /// The name of its first slice or instant, the name of a track that has none.
    event_name: Option<String>,
}

#[derive(Default, Clone, Debug)]
struct Counter {
    unit: String,
    multiplier: f64,
    incremental: bool,
    /// The name the trace processor gives a counter of a built-in type (thread time,
    /// instruction count) that has none of its own.
    builtin: Option<&'static str>,
}

/// A thread's time or instruction count carried by a track event (the legacy
/// `thread_time_*` and `thread_instruction_count_*` fields): the value, or what it adds.
enum ThreadValue {
    Absolute(f64),
    Delta(f64),
}
use ThreadValue::{Absolute, Delta};

const THREAD_TIME: &str = "thread_time";
const THREAD_INSTRUCTIONS: &str = "thread_instruction_count";

/// A packet sequence's incremental state.
#[derive(Default)]
struct Sequence {
    event_names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    default_track: Option<u64>,
    default_clock: Option<u32>,
    default_extra_counters: Vec<u64>,
    default_extra_double_counters: Vec<u64>,
    /// Set once a packet cleared the state (or none needed it).
    valid: bool,
    /// Last values of incremental counters, per track.
    counter_last: HashMap<u64, f64>,
    /// Sequence-scoped clocks (ids 64-127): incremental or not, ns per unit, last value.
    clocks: HashMap<u32, (bool, u64, u64)>,
    /// The deprecated thread descriptor's track.
    legacy_track: Option<u64>,
    /// The reference time (µs on the monotonic clock) that legacy timestamp deltas add to: the
    /// thread descriptor's, moved by every delta since (a profile packet's too).
    reference_us: Option<i64>,
}

impl Sequence {
    /// A `TracePacketDefaults`: the sequence's clock, track and extra counter tracks.
    fn defaults(&mut self, d: &[u8]) {
        for (n, v) in fields(d) {
            match n {
                58 => self.default_clock = v.int().map(|c| c as u32),
                11 => {
                    // New track event defaults replace the ones before.
                    self.default_track = None;
                    self.default_extra_counters.clear();
                    self.default_extra_double_counters.clear();
                    for (m, w) in fields(v.bytes().unwrap_or_default()) {
                        match m {
                            11 => self.default_track = w.int(),
                            31 => push_ints(w, false, &mut self.default_extra_counters),
                            45 => push_ints(w, false, &mut self.default_extra_double_counters),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// `InternedData`: event categories (1) and names (2) by their ids.
    fn intern(&mut self, i: &[u8]) {
        for (n, v) in fields(i) {
            let table = match n {
                1 => &mut self.categories,
                2 => &mut self.event_names,
                _ => continue,
            };
            let (mut iid, mut name) = (None, None);
            for (m, w) in fields(v.bytes().unwrap_or_default()) {
                match m {
                    1 => iid = w.int(),
                    2 => name = w.text(),
                    _ => {}
                }
            }
            if let (Some(iid), Some(name)) = (iid, name) {
                table.insert(iid, name);
            }
        }
    }
}

/// The packets read so far.
#[derive(Default)]
struct Reader {
    tracks: HashMap<u64, Track>,
    sequences: HashMap<u32, Sequence>,
    names: Interner,
    /// Slice events as read: track, time (ns), and the name begun (`None`: an end). They are
    /// put in time order per track before ends are matched, as the trace processor sorts
    /// packets before it nests slices.
    slices: Vec<(u64, u64, Option<u32>)>,
    counters: Vec<(u64, u64, f64)>,
    /// The tracks of legacy async events, by id, name and process.
    async_tracks: HashMap<(u64, String, Option<i64>), u64>,
    /// The last value of each thread's time or instruction count, which deltas add to.
    thread_counter_last: HashMap<u64, f64>,
    /// Flow ids on slice events: the id (in its namespace), the slice event (an index into
    /// `slices`: a begin, or the end of the slice it ends), what it does to the flow.
    flow_marks: Vec<((u8, u64), usize, FlowStep)>,
    /// Legacy flow events (phases `s`, `t`, `f`), bound to a slice of their track when the
    /// slices are known: id, track, time, what it does, whether it binds the slice enclosing
    /// it (else the next slice to begin).
    legacy_flows: Vec<(u64, u64, u64, FlowStep, bool)>,
    /// Instant events: the slice event that begins each (an index into `slices`), its
    /// categories (joined by commas, as written) and its argument count.
    instants: Vec<(usize, String, u32)>,
    /// Offsets from a clock to the boot clock (ns), from the clock snapshots: per clock id (and
    /// sequence for sequence-scoped clocks), the clock's reading and the boot clock's.
    snapshots: HashMap<(u32, u32), (u64, u64)>,
    /// The slice events (indices into `slices`) of atrace's print events.
    system: std::collections::HashSet<usize>,
    /// The start of the trace's range of interest (ns), where it names one: slices and instants
    /// begun before it are left out, as the trace processor leaves them out.
    range_start: Option<u64>,
    /// The clock every time is put on: the snapshots' primary trace clock, else the boot clock.
    trace_clock: u32,
    repairs: Repairs,
    packets: u64,
}

/// A synthetic track id for a thread known only from a deprecated thread descriptor.
fn legacy_uuid(pid: i64, tid: i64) -> u64 {
    0x8000_0000_0000_0000 ^ ((pid as u64) << 32) ^ (tid as u64 & 0xffff_ffff)
}

fn skipped_name(field: u32) -> &'static str {
    match field {
        1 => "ftrace event packets skipped",
        2 => "process tree packets skipped",
        5 => "Chrome JSON event packets skipped",
        7 => "system statistics packets skipped",
        9 => "process statistics packets skipped",
        37 | 54 | 66 => "profiling sample packets skipped",
        38 | 40 => "power counter packets skipped",
        39 => "Android log packets skipped",
        52 | 53 => "GPU counter and render stage packets skipped",
        _ => "packets of other kinds skipped",
    }
}

/// The fields of a `TrackEvent` that are read.
#[derive(Default)]
struct Event<'a> {
    ty: u64,
    track: Option<u64>,
    name: Option<String>,
    name_iid: Option<u64>,
    int_value: Option<i64>,
    double_value: Option<f64>,
    extra_tracks: Vec<u64>,
    extra_values: Vec<u64>,
    extra_dtracks: Vec<u64>,
    extra_dvalues: Vec<f64>,
    flows: Vec<u64>,
    terminating: Vec<u64>,
    legacy: Option<&'a [u8]>,
    thread_counters: Vec<(ThreadValue, &'static str)>,
    /// Its categories, by name and by interned id.
    categories: Vec<String>,
    category_iids: Vec<u64>,
    /// How many debug annotations (arguments) it carries.
    annotations: u32,
}

impl<'a> Event<'a> {
    fn parse(e: &'a [u8]) -> Self {
        let mut ev = Event::default();
        for (n, v) in fields(e) {
            let as_i64 = || v.int().map_or(0.0, |x| x as i64 as f64);
            match n {
                17 => ev.thread_counters.push((Absolute(as_i64() * 1000.0), THREAD_TIME)),
                2 => ev.thread_counters.push((Delta(as_i64() * 1000.0), THREAD_TIME)),
                20 => ev.thread_counters.push((Absolute(as_i64()), THREAD_INSTRUCTIONS)),
                8 => ev.thread_counters.push((Delta(as_i64()), THREAD_INSTRUCTIONS)),
                9 => ev.ty = v.int().unwrap_or(0),
                11 => ev.track = v.int(),
                23 => ev.name = v.text(),
                10 => ev.name_iid = v.int(),
                30 => ev.int_value = v.int().map(|x| x as i64),
                44 => ev.double_value = v.double(),
                31 => push_ints(v, false, &mut ev.extra_tracks),
                12 => push_ints(v, false, &mut ev.extra_values),
                45 => push_ints(v, false, &mut ev.extra_dtracks),
                46 => push_doubles(v, &mut ev.extra_dvalues),
                36 => push_ints(v, false, &mut ev.flows),
                47 => push_ints(v, true, &mut ev.flows),
                42 => push_ints(v, false, &mut ev.terminating),
                48 => push_ints(v, true, &mut ev.terminating),
                6 => ev.legacy = v.bytes(),
                22 => ev.categories.extend(v.text()),
                3 => push_ints(v, false, &mut ev.category_iids),
                4 => ev.annotations = ev.annotations.saturating_add(1),
                _ => {}
            }
        }
        ev
    }
}

impl Reader {
    /// Every packet in `b`, a `Trace` message (or the inside of a compressed chunk).
    fn stream(&mut self, b: &[u8], depth: u32) {
        let mut at = 0;
        while at < b.len() {
            let start = at;
            let ok = (|| {
                let key = varint(b, &mut at)?;
                if key != 0x0a {
                    return None;
                }
                let len = usize::try_from(varint(b, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|&e| e <= b.len())?;
                Some((at, end))
            })();
            match ok {
                Some((from, end)) => {
                    self.packet(&b[from..end], depth);
                    at = end;
                }
                None => {
                    // A stray byte, or a last packet cut short: resynchronise on the next byte
                    // where a whole packet starts, else stop.
                    let rest = &b[start..];
                    let next = (1..rest.len()).find(|&k| whole_packet_at(&rest[k..]));
                    match next {
                        Some(k) => {
                            self.repairs.add("stray bytes between packets skipped", || format!("byte {start}"));
                            at = start + k;
                        }
                        None => {
                            self.repairs.add("bytes after the last whole packet skipped", || {
                                format!("byte {start} of {}", b.len())
                            });
                            return;
                        }
                    }
                }
            }
        }
    }

    fn packet(&mut self, p: &[u8], depth: u32) {
        self.packets += 1;
        let mut ts: Option<u64> = None;
        let mut clock: Option<u32> = None;
        let mut seq_id = 0u32;
        let mut flags = 0u64;
        let mut cleared = false;
        let mut event: Option<&[u8]> = None;
        let mut interned: Option<&[u8]> = None;
        let mut defaults: Option<&[u8]> = None;
        let mut descriptor: Option<&[u8]> = None;
        let mut thread_desc: Option<&[u8]> = None;
        let mut snapshot: Option<&[u8]> = None;
        let mut compressed: Option<&[u8]> = None;
        let mut profile: Option<&[u8]> = None;
        let mut ftrace: Option<&[u8]> = None;
        let mut other: Option<u32> = None;
        let mut f = fields(p);
        for (number, v) in &mut f {
            match number {
                8 => ts = v.int(),
                58 => clock = v.int().map(|c| c as u32),
                10 => seq_id = v.int().unwrap_or(0) as u32,
                13 => flags = v.int().unwrap_or(0),
                41 => cleared |= v.int() == Some(1),
                11 => event = v.bytes(),
                12 => interned = v.bytes(),
                59 => defaults = v.bytes(),
                60 => descriptor = v.bytes(),
                44 => thread_desc = v.bytes(),
                6 => snapshot = v.bytes(),
                50 => compressed = v.bytes(),
                54 => profile = v.bytes(),
                1 => ftrace = v.bytes(),
                // TrackEventRangeOfInterest: slices begun before its start are left out.
                90 => self.range_start = range_start(v.bytes().unwrap_or_default()),
                // Metadata Perfetto does not draw either; the trusted uid and pid; process
                // descriptors (their names come with the thread and track descriptors).
                3 | 33 | 35 | 36 | 42 | 43 | 45 | 69 | 79 | 87 | 89 | 98 => {}
                n => other = Some(n),
            }
        }
        if f.broken {
            self.repairs.add("packets that do not parse skipped", || format!("packet {}", self.packets));
            return;
        }
        if let Some(c) = compressed {
            if depth > 0 {
                return;
            }
            match inflate(c) {
                Some(inner) => self.stream(&inner, depth + 1),
                None => self
                    .repairs
                    .add("compressed packets that do not inflate skipped", || format!("packet {}", self.packets)),
            }
            return;
        }
        if self.profile_or_atrace(seq_id, profile, ftrace) {
            return;
        }
        if let Some(n) = other.or(profile.map(|_| 54)).filter(|_| event.is_none() && descriptor.is_none()) {
            let packets = self.packets;
            self.repairs.add(skipped_name(n), || format!("packet {packets}, field {n}"));
            return;
        }
        let seq = self.sequences.entry(seq_id).or_default();
        if cleared || flags & 1 != 0 {
            // Interned names and incremental counters start again; the sequence's defaults stay
            // until new ones come, as the trace processor keeps them.
            *seq = Sequence {
                valid: true,
                clocks: std::mem::take(&mut seq.clocks),
                default_track: seq.default_track,
                default_clock: seq.default_clock,
                default_extra_counters: std::mem::take(&mut seq.default_extra_counters),
                default_extra_double_counters: std::mem::take(&mut seq.default_extra_double_counters),
                legacy_track: seq.legacy_track,
                reference_us: seq.reference_us,
                ..Default::default()
            };
        }
        if let Some(s) = snapshot {
            self.snapshot(seq_id, s);
        }
        let seq = self.sequences.entry(seq_id).or_default();
        if flags & 2 != 0 && !seq.valid {
            self.repairs
                .add("packets needing state their sequence never gave skipped", || format!("sequence {seq_id}"));
            return;
        }
        if let Some(d) = defaults {
            seq.defaults(d);
        }
        if let Some(i) = interned {
            seq.intern(i);
        }
        if let Some(t) = thread_desc {
            self.thread_descriptor(seq_id, t);
        }
        if let Some(d) = descriptor {
            self.descriptor(d);
        }
        if let Some(e) = event {
            self.timed_event(seq_id, ts, clock, e);
        }
    }

    /// A track event at its packet's time `ts` on `clock` (or its legacy time).
    fn timed_event(&mut self, seq_id: u32, ts: Option<u64>, clock: Option<u32>, e: &[u8]) {
        let clock = clock.or(self.sequences[&seq_id].default_clock).unwrap_or(BOOTTIME);
        let time = match ts {
            Some(t) => self.boot_time(seq_id, clock, t),
            None => self.legacy_time(seq_id, e),
        };
        let Some(time) = time else {
            self.repairs
                .add("track events without a time on a known clock skipped", || format!("packet {}", self.packets));
            return;
        };
        self.track_event(seq_id, time, e);
    }

    /// A track event's legacy time (`timestamp_absolute_us`, or `timestamp_delta_us` added to
    /// its sequence's reference) on the trace's clock; `None` where it has none or it
    /// overflows nanoseconds.
    fn legacy_time(&mut self, seq_id: u32, e: &[u8]) -> Option<u64> {
        let (mut absolute, mut delta) = (None, None);
        for (n, v) in fields(e) {
            match n {
                16 => absolute = v.int().map(|x| x as i64),
                1 => delta = v.int().map(|x| x as i64),
                _ => {}
            }
        }
        let us = match (absolute, delta) {
            (Some(a), _) => a,
            (None, Some(d)) => {
                let seq = self.sequences.get_mut(&seq_id)?;
                let us = seq.reference_us?.checked_add(d)?;
                seq.reference_us = Some(us);
                us
            }
            (None, None) => return None,
        };
        let ns = us.checked_mul(1000).filter(|&ns| ns >= 0)?;
        self.boot_time(seq_id, MONOTONIC, ns as u64)
    }

    /// A streaming profile packet's deltas and an ftrace bundle's atrace events; `true` where
    /// the bundle held atrace slices (the packet is read).
    fn profile_or_atrace(&mut self, seq_id: u32, profile: Option<&[u8]>, ftrace: Option<&[u8]>) -> bool {
        if let Some(p) = profile {
            self.profile_deltas(seq_id, p);
        }
        ftrace.is_some_and(|b| self.atrace(b))
    }

    /// An ftrace bundle's atrace print events (`B|tgid|name`, `E|tgid`) as slices on their
    /// thread's track (a track of their own where the thread's track asks not to be merged
    /// with system tracks); `false` where the bundle holds none (it is skipped and counted).
    fn atrace(&mut self, bundle: &[u8]) -> bool {
        let mut any = false;
        for (n, v) in fields(bundle) {
            if n != 2 {
                continue;
            }
            let (mut ts, mut tid, mut buf) = (None, None, None);
            for (m, w) in fields(v.bytes().unwrap_or_default()) {
                match m {
                    1 => ts = w.int(),
                    2 => tid = w.int().map(|x| x as i32 as i64),
                    3 => buf = fields(w.bytes().unwrap_or_default()).find(|f| f.0 == 2).and_then(|f| f.1.text()),
                    _ => {}
                }
            }
            let (Some(ts), Some(tid), Some(buf)) = (ts, tid, buf) else { continue };
            let mut parts = buf.trim_end().split('|');
            let (phase, tgid, name) = (parts.next(), parts.next().and_then(|p| p.parse::<i64>().ok()), parts.next());
            let begun = match (phase, tgid) {
                (Some("B"), Some(_)) => Some(self.names.id(name.unwrap_or_default())),
                (Some("E"), Some(_)) => None,
                _ => continue,
            };
            let Some(time) = self.boot_time(0, BOOTTIME, ts) else { continue };
            let track = self.atrace_track(tgid.unwrap_or(0), tid);
            if let Some(id) = begun {
                self.slice_on(track, &self.names.names[id as usize].clone());
            }
            self.system.insert(self.slices.len());
            self.slices.push((track, time, begun));
            any = true;
        }
        any
    }

    /// The track of a thread's atrace slices: its thread track, or one beside it where that
    /// track asks not to be merged with system tracks.
    fn atrace_track(&mut self, pid: i64, tid: i64) -> u64 {
        let thread =
            self.thread_track(pid, tid).map(|u| (u, self.tracks[&u].apart, self.tracks[&u].thread_name.clone()));
        match thread {
            Some((u, false, _)) => u,
            found => {
                let u = legacy_uuid(pid, tid) ^ 0x4000_0000;
                let name = found.and_then(|f| f.2);
                let t = Track { pid: Some(pid), tid: Some(tid), thread_name: name, ..Default::default() };
                self.tracks.entry(u).or_insert(t);
                u
            }
        }
    }

    /// A streaming profile packet's timestamp deltas move its sequence's reference time (its
    /// samples are not read).
    fn profile_deltas(&mut self, seq_id: u32, p: &[u8]) {
        let mut deltas = Vec::new();
        for (n, v) in fields(p) {
            if n == 2 {
                push_ints(v, false, &mut deltas);
            }
        }
        let seq = self.sequences.entry(seq_id).or_default();
        for d in deltas {
            seq.reference_us = seq.reference_us.map(|r| r.saturating_add(d as i64));
        }
    }

    /// The deprecated `ThreadDescriptor` of a sequence: its default thread track.
    fn thread_descriptor(&mut self, seq_id: u32, t: &[u8]) {
        let (mut pid, mut tid, mut name, mut reference) = (0i64, 0i64, None, None);
        for (n, v) in fields(t) {
            match n {
                1 => pid = v.int().unwrap_or(0) as i32 as i64,
                2 => tid = v.int().unwrap_or(0) as i32 as i64,
                5 => name = v.text(),
                6 => reference = v.int().map(|x| x as i64),
                _ => {}
            }
        }
        if reference.is_some() {
            self.sequences.entry(seq_id).or_default().reference_us = reference;
        }
        let uuid = legacy_uuid(pid, tid);
        self.sequences.entry(seq_id).or_default().legacy_track = Some(uuid);
        let packets = self.packets;
        let track = self.tracks.entry(uuid).or_insert_with(|| Track { described_at: packets, ..Default::default() });
        track.pid = Some(pid);
        track.tid = Some(tid);
        track.thread_name = name.or(track.thread_name.take());
    }

    fn snapshot(&mut self, seq_id: u32, s: &[u8]) {
        let mut clocks: Vec<(u32, u64, bool, u64)> = Vec::new();
        for (n, v) in fields(s) {
            if n == 2 {
                // The clock the trace's times are given on (the boot clock where none is named).
                self.trace_clock = v.int().map_or(BOOTTIME, |c| c as u32);
            }
            if n != 1 {
                continue;
            }
            let (mut id, mut ts, mut inc, mut mult) = (0u32, 0u64, false, 1u64);
            for (m, w) in fields(v.bytes().unwrap_or_default()) {
                match m {
                    1 => id = w.int().unwrap_or(0) as u32,
                    2 => ts = w.int().unwrap_or(0),
                    3 => inc = w.int() == Some(1),
                    4 => mult = w.int().unwrap_or(1).max(1),
                    _ => {}
                }
            }
            clocks.push((id, ts, inc, mult));
        }
        let Some(boot) = clocks.iter().find(|c| c.0 == self.trace_clock).map(|c| c.1) else { return };
        for &(id, ts, inc, mult) in &clocks {
            let scope = if id >= 64 { seq_id } else { 0 };
            if id >= 64 {
                let seq = self.sequences.entry(seq_id).or_default();
                seq.clocks.insert(id, (inc, mult, ts));
            }
            self.snapshots.entry((id, scope)).or_insert((ts.saturating_mul(if id >= 64 { mult } else { 1 }), boot));
        }
    }

    /// `t` on `clock` as nanoseconds on the trace's clock (as given where no snapshot relates
    /// any clock to it).
    fn boot_time(&mut self, seq_id: u32, clock: u32, t: u64) -> Option<u64> {
        if clock == self.trace_clock || (clock < 64 && self.snapshots.is_empty()) {
            return Some(t);
        }
        let mut ns = t;
        if clock >= 64 {
            let seq = self.sequences.get_mut(&seq_id)?;
            let (inc, mult, last) = seq.clocks.get_mut(&clock)?;
            let value = if *inc { last.checked_add(t)? } else { t };
            *last = value;
            ns = value.checked_mul(*mult)?;
        }
        let scope = if clock >= 64 { seq_id } else { 0 };
        let &(at, boot) = self.snapshots.get(&(clock, scope))?;
        Some((i128::from(ns) - i128::from(at) + i128::from(boot)).clamp(0, i128::from(u64::MAX)) as u64)
    }

    fn descriptor(&mut self, d: &[u8]) {
        let mut uuid = 0u64;
        let mut t = Track::default();
        for (n, v) in fields(d) {
            match n {
                1 => uuid = v.int().unwrap_or(0),
                5 => t.parent = v.int(),
                15 => t.merge_none = v.int() == Some(2),
                9 => t.apart = v.int() == Some(1),
                2 | 10 => t.name = v.text(),
                3 => {
                    for (m, w) in fields(v.bytes().unwrap_or_default()) {
                        match m {
                            1 => t.pid = w.int().map(|x| x as i32 as i64),
                            6 => t.process_name = w.text(),
                            2 if t.process_name.is_none() => t.process_name = w.text(),
                            _ => {}
                        }
                    }
                }
                4 => {
                    for (m, w) in fields(v.bytes().unwrap_or_default()) {
                        match m {
                            1 => t.pid = w.int().map(|x| x as i32 as i64),
                            2 => t.tid = w.int().map(|x| x as i32 as i64),
                            5 => t.thread_name = w.text(),
                            _ => {}
                        }
                    }
                }
                8 => {
                    let mut c = Counter { multiplier: 1.0, ..Default::default() };
                    for (m, w) in fields(v.bytes().unwrap_or_default()) {
                        match m {
                            1 => match w.int() {
                                Some(1) => (c.unit, c.builtin) = ("ns".into(), Some(THREAD_TIME)),
                                Some(2) => (c.unit, c.builtin) = ("count".into(), Some(THREAD_INSTRUCTIONS)),
                                _ => {}
                            },
                            3 => match w.int() {
                                Some(1) => c.unit = "ns".into(),
                                Some(3) => c.unit = "bytes".into(),
                                _ => {}
                            },
                            4 => c.multiplier = w.int().map_or(1.0, |x| x as i64 as f64),
                            5 => c.incremental = w.int() == Some(1),
                            6 => c.unit = w.text().unwrap_or_default(),
                            _ => {}
                        }
                    }
                    t.counter = Some(c);
                }
                _ => {}
            }
        }
        // A descriptor emitted again (after a cleared state) keeps what it does not say; a name
        // it gives replaces the one before until the track's first event (always, where it
        // asks not to be merged), as the trace processor resolves a track's name.
        let packets = self.packets;
        let e = self.tracks.entry(uuid).or_insert_with(|| Track { described_at: packets, ..Default::default() });
        e.parent = t.parent.or(e.parent);
        e.merge_none |= t.merge_none;
        e.apart |= t.apart;
        if t.name.is_some() && (!e.name_fixed || e.merge_none) {
            e.name = t.name;
        }
        e.pid = t.pid.or(e.pid);
        e.tid = t.tid.or(e.tid);
        e.process_name = t.process_name.or(e.process_name.take());
        e.thread_name = t.thread_name.or(e.thread_name.take());
        e.counter = t.counter.or(e.counter.take());
    }

    fn track_event(&mut self, seq_id: u32, time: u64, e: &[u8]) {
        let Event {
            mut ty,
            track,
            mut name,
            name_iid,
            int_value,
            double_value,
            mut extra_tracks,
            extra_values,
            mut extra_dtracks,
            extra_dvalues,
            flows,
            terminating,
            legacy,
            thread_counters,
            categories,
            category_iids,
            annotations,
        } = Event::parse(e);
        let legacy = legacy.map(legacy_event).unwrap_or_default();
        let seq = self.sequences.entry(seq_id).or_default();
        let given = track.or(seq.default_track).filter(|&u| u != 0);
        if name.is_none()
            && let Some(iid) = name_iid
        {
            name = Some(self.interned_name(seq_id, iid));
        }
        // The legacy Chrome phase, where the type is not set.
        let typed = ty != 0;
        if !typed {
            ty = legacy.ty;
        }
        let duration_ns = legacy.duration_ns;
        // Track 0 given on a typed event is the global default track; otherwise an event on no
        // track falls back to its sequence's (or its legacy overrides') thread.
        let track = match given {
            _ if legacy.is_async && legacy.id.is_some() && !typed => {
                self.async_track(seq_id, &legacy, name.as_deref().unwrap_or_default())
            }
            Some(u) => u,
            None if track.is_none() || !typed || legacy.pid.is_some() => self.legacy_track(seq_id, &legacy, ty),
            None => 0,
        };
        let seq = self.sequences.entry(seq_id).or_default();
        if extra_tracks.is_empty() && !extra_values.is_empty() {
            extra_tracks = seq.default_extra_counters.clone();
        }
        if extra_dtracks.is_empty() && !extra_dvalues.is_empty() {
            extra_dtracks = seq.default_extra_double_counters.clone();
        }
        for (value, kind) in thread_counters {
            let uuid = self.thread_counter(track, kind);
            let value = match value {
                Absolute(v) => v,
                Delta(d) => self.thread_counter_last.get(&uuid).copied().unwrap_or(0.0) + d,
            };
            self.thread_counter_last.insert(uuid, value);
            self.counters.push((uuid, time, value));
        }
        for (t, v) in extra_tracks.iter().zip(&extra_values) {
            self.counter(seq_id, *t, time, *v as i64 as f64);
        }
        for (t, v) in extra_dtracks.iter().zip(&extra_dvalues) {
            self.counter(seq_id, *t, time, *v);
        }
        let name = name.unwrap_or_default();
        if matches!(ty, 1 | 3 | 5) {
            self.slice_on(track, &name);
        }
        let event = self.slices.len();
        match ty {
            1 | 5 => {
                let id = self.names.id(&name);
                self.slices.push((track, time, Some(id)));
                if ty == 5 {
                    self.slices.push((track, time.saturating_add(duration_ns.unwrap_or(0)), None));
                }
            }
            2 => self.slices.push((track, time, None)),
            // An instant is a slice of no duration, as the trace processor keeps it: nested in
            // the slice open on its track, drawn as a mark.
            3 => {
                let id = self.names.id(&name);
                let categories = self.categories(seq_id, categories, &category_iids);
                self.instants.push((self.slices.len(), categories, annotations));
                self.slices.push((track, time, Some(id)));
                self.slices.push((track, time, None));
            }
            4 => {
                let value = double_value.or(int_value.map(|v| v as f64));
                if let Some(v) = value {
                    self.counter(seq_id, track, time, v);
                }
            }
            _ => {}
        }
        if self.slices.len() > event {
            let marks = flows.into_iter().map(|id| ((0, id), FlowStep::Step));
            let marks = marks.chain(terminating.into_iter().map(|id| ((0, id), FlowStep::End)));
            let marks = marks.chain(legacy.bind.map(|(id, step)| ((2, id), step)));
            self.flow_marks.extend(marks.map(|(id, step)| (id, event, step)));
        }
        if let (Some(step), Some(id)) = (legacy.flow, legacy.id) {
            self.legacy_flows.push((id, track, time, step, legacy.bind_to_enclosing));
        }
    }

    /// An event's categories, those written and those interned on its sequence, joined by commas.
    fn categories(&self, seq_id: u32, mut written: Vec<String>, iids: &[u64]) -> String {
        let seq = self.sequences.get(&seq_id);
        written.extend(iids.iter().filter_map(|i| seq.and_then(|s| s.categories.get(i)).cloned()));
        written.join(",")
    }

    /// The event name interned as `iid` on its sequence.
    fn interned_name(&mut self, seq_id: u32, iid: u64) -> String {
        match self.sequences.get(&seq_id).and_then(|s| s.event_names.get(&iid)) {
            Some(n) => n.clone(),
            None => {
                self.repairs.add("event names interned nowhere on their sequence", || {
                    format!("name {iid} on sequence {seq_id}")
                });
                format!("name {iid}")
            }
        }
    }

    /// The track of a legacy async event: one per id and name, named by the event (under its
    /// process unless the id is global), as the trace processor keeps legacy async tracks.
    fn async_track(&mut self, seq_id: u32, legacy: &Legacy, name: &str) -> u64 {
        let id = legacy.id.unwrap_or(0);
        let pid = if legacy.global {
            None
        } else {
            let seq = self.sequences.get(&seq_id);
            let own = seq.and_then(|s| s.legacy_track.or(s.default_track)).and_then(|u| self.tracks.get(&u));
            legacy.pid.or(own.and_then(|t| t.pid))
        };
        let next = 0x1000_0000_0000_0000 | self.async_tracks.len() as u64;
        let uuid = *self.async_tracks.entry((id, name.to_string(), pid)).or_insert(next);
        let packets = self.packets;
        let parent = pid.and_then(|p| self.process_at(p, packets));
        self.tracks.entry(uuid).or_insert_with(|| Track {
            name: Some(name.to_string()),
            parent,
            described_at: packets,
            ..Default::default()
        });
        uuid
    }

    /// The counter track of a thread's time or instruction count (`kind`) under `track`.
    fn thread_counter(&mut self, track: u64, kind: &'static str) -> u64 {
        let salt = if kind == THREAD_TIME { 1 } else { 2 };
        let uuid = 0x2000_0000_0000_0000 ^ track.wrapping_mul(4) ^ salt;
        let unit = if kind == THREAD_TIME { "ns" } else { "" };
        self.tracks.entry(uuid).or_insert_with(|| Track {
            parent: Some(track),
            counter: Some(Counter { unit: unit.into(), multiplier: 1.0, builtin: Some(kind), ..Default::default() }),
            ..Default::default()
        });
        uuid
    }

    /// A slice or instant named `name` lands on `track`: the track's name stands as it is (a
    /// track without one is called by its first slice).
    fn slice_on(&mut self, track: u64, name: &str) {
        let t = self.tracks.entry(track).or_default();
        if !t.seen {
            t.seen = true;
            t.name_fixed = t.name.is_some();
        }
        t.event_name.get_or_insert_with(|| name.to_string());
    }

    fn counter(&mut self, seq_id: u32, track: u64, time: u64, value: f64) {
        let incremental = self.tracks.get(&track).and_then(|t| t.counter.as_ref()).is_some_and(|c| c.incremental);
        let value = if incremental {
            let last = self.sequences.entry(seq_id).or_default().counter_last.entry(track).or_insert(0.0);
            *last += value;
            *last
        } else {
            value
        };
        self.counters.push((track, time, value));
    }

    /// The process a track belongs to: its pid, from itself or its ancestors.
    fn pid_of(&self, mut uuid: u64) -> Option<i64> {
        for _ in 0..64 {
            let t = self.tracks.get(&uuid)?;
            if t.pid.is_some() {
                return t.pid;
            }
            uuid = t.parent?;
        }
        None
    }

    /// The thread track of `pid` and `tid` described last (a tid reused in another sequence
    /// keeps the track described for it last).
    fn thread_track(&self, pid: i64, tid: i64) -> Option<u64> {
        let of_thread = self.tracks.iter().filter(|(_, t)| t.pid == Some(pid) && t.tid == Some(tid));
        of_thread.max_by_key(|(u, t)| (t.described_at, **u)).map(|(u, _)| *u)
    }

    /// The process track of `pid` as it stood at packet `at`: the one described last by then,
    /// else the first described (a pid reused by a later process is another process).
    fn process_at(&self, pid: i64, at: u64) -> Option<u64> {
        let of_pid = || self.tracks.iter().filter(|(_, t)| t.pid == Some(pid) && t.tid.is_none());
        of_pid()
            .filter(|(_, t)| t.described_at <= at)
            .max_by_key(|(u, t)| (t.described_at, **u))
            .or_else(|| of_pid().min_by_key(|(u, t)| (t.described_at, **u)))
            .map(|(u, _)| *u)
    }

    /// The process track a track belongs to, and its pid.
    fn process_of(&self, mut uuid: u64) -> Option<(i64, Option<u64>)> {
        for _ in 0..64 {
            let t = self.tracks.get(&uuid)?;
            if let Some(pid) = t.pid {
                let own = t.tid.is_none().then_some(uuid);
                return Some((pid, own.or_else(|| self.process_at(pid, t.described_at))));
            }
            uuid = t.parent?;
        }
        None
    }

    /// A process as the Perfetto UI names it: `NAME PID`.
    fn process_label(&self, pid: i64, track: Option<u64>) -> String {
        let name = track
            .and_then(|u| self.tracks.get(&u))
            .and_then(|t| t.process_name.as_deref())
            .map(|n| n.rsplit('/').next().unwrap_or(n).to_string());
        match name {
            Some(n) if !n.is_empty() => format!("{n} {pid}"),
            _ => format!("process {pid}"),
        }
    }

    /// The track of an event on no track of its own (a legacy event, or one whose sequence
    /// names none): the thread of the sequence, or of the legacy pid and tid overrides, or for
    /// an instant of process or global scope its process's track or the global one.
    fn legacy_track(&mut self, seq_id: u32, legacy: &Legacy, ty: u64) -> u64 {
        let seq = self.sequences.get(&seq_id);
        let own = seq
            .and_then(|s| s.legacy_track.or(s.default_track))
            .filter(|u| self.tracks.get(u).is_some_and(|t| t.tid.is_some()));
        let (own_pid, own_tid) = own.and_then(|u| self.tracks.get(&u)).map_or((None, None), |t| (t.pid, t.tid));
        let (pid, tid) = (legacy.pid.or(own_pid), legacy.tid.or(own_tid));
        let packets = self.packets;
        if ty == 3 {
            match (legacy.scope, pid) {
                (1, _) => return 0,
                (2, Some(pid)) => {
                    return self.process_at(pid, packets).unwrap_or_else(|| {
                        let u = 0x4000_0000_0000_0000 ^ (pid as u64 & 0xffff_ffff);
                        let t = Track { pid: Some(pid), described_at: packets, ..Default::default() };
                        self.tracks.entry(u).or_insert(t);
                        u
                    });
                }
                _ => {}
            }
        }
        let (Some(pid), Some(tid)) = (pid, tid) else { return 0 };
        if own_pid == Some(pid) && own_tid == Some(tid) {
            return own.unwrap_or(0);
        }
        self.thread_track(pid, tid).unwrap_or_else(|| {
            let u = legacy_uuid(pid, tid);
            let t = Track { pid: Some(pid), tid: Some(tid), described_at: packets, ..Default::default() };
            self.tracks.entry(u).or_insert(t);
            u
        })
    }

    /// A track's row name and kind.
    fn label(&self, uuid: u64) -> (String, LocationKind) {
        let t = self.tracks.get(&uuid).cloned().unwrap_or_default();
        if uuid == 0 && t.name.is_none() {
            return ("global".into(), LocationKind::Unknown);
        }
        let process = self.process_of(uuid);
        let prefix = |(pid, track): (i64, Option<u64>)| self.process_label(pid, track);
        if let Some(tid) = t.tid {
            let thread = t.thread_name.clone().or(t.name.clone()).unwrap_or_else(|| "thread".into());
            let label = format!("{thread} {tid}");
            return match process {
                Some(p) => (format!("{} / {label}", prefix(p)), LocationKind::CpuThread),
                None => (label, LocationKind::CpuThread),
            };
        }
        if let (Some(pid), None) = (t.pid, &t.name) {
            return (self.process_label(pid, Some(uuid)), LocationKind::Process);
        }
        let name = t.name.clone().or(t.event_name.clone()).unwrap_or_else(|| format!("track {uuid}"));
        let lower = name.to_ascii_lowercase();
        let gpu = ["gpu", "device", "stream", "queue", "hip ", "cuda"].iter().any(|w| lower.contains(w));
        let kind = if gpu { LocationKind::GpuStream } else { LocationKind::Unknown };
        match process {
            Some(p) => (format!("{} / {name}", prefix(p)), kind),
            None => (name, kind),
        }
    }

    fn finish(mut self, input: &str) -> Result<(Trace, Repairs), SourceError> {
        // Slices still open at the end close at their track's last event.
        let mut rows: Vec<u64> = self.slices.iter().map(|s| s.0).collect();
        if rows.is_empty() {
            // Counters alone: each on a row of the track it is nested in, else the global one.
            rows.extend(self.counters.iter().map(|c| self.tracks.get(&c.0).and_then(|t| t.parent).unwrap_or(0)));
        }
        rows.sort_unstable();
        rows.dedup();
        if rows.is_empty() && self.counters.is_empty() {
            return Err(SourceError::invalid(
                input,
                format!("holds {} packets but no track events (slices or counters) to draw", self.packets),
            ));
        }
        let t0 = self.slices.iter().map(|s| s.1).chain(self.counters.iter().map(|c| c.1)).min().unwrap_or(0);
        // Rows ordered by process, then threads before other tracks, then id.
        let mut keyed: Vec<(i64, u8, i64, u64)> = rows
            .iter()
            .map(|&u| {
                let t = self.tracks.get(&u);
                let pid = self.pid_of(u).unwrap_or(i64::MAX);
                let tid = t.and_then(|t| t.tid);
                (pid, u8::from(tid.is_none()), tid.unwrap_or(0), u)
            })
            .collect();
        keyed.sort_unstable();
        let row_of: HashMap<u64, u32> = keyed.iter().enumerate().map(|(i, k)| (k.3, i as u32)).collect();
        let mut events = EventTable { ticks_per_second: 1_000_000_000, ..Default::default() };
        let mut kinds = Vec::new();
        for k in &keyed {
            let (name, kind) = self.label(k.3);
            events.location_names.push(name);
            kinds.push(kind);
        }
        let slices = std::mem::take(&mut self.slices);
        let mut order: Vec<usize> = (0..slices.len()).collect();
        order.sort_by_key(|&k| (row_of[&slices[k].0], slices[k].1));
        let start_of = self.nest(&slices, &order, &row_of, t0, &mut events);
        events.names = std::mem::take(&mut self.names.names);
        let mut t = crate::events::trace_of(&events, &mut self.repairs);
        t.locations.kind = kinds;
        self.place_flows(&mut t, &slices, &start_of, &row_of, t0);
        self.place_counters(&mut t, &keyed, &row_of, t0);
        self.place_instants(&mut t, &slices, &start_of, &row_of, t0);
        Ok((t, self.repairs))
    }

    /// The slice events in `order` (per row, in time order) as enters and leaves of `events`:
    /// an end closes its track's innermost slice (a track event's end closes its innermost
    /// track event slice and the atrace slices open inside it; an atrace end, its innermost
    /// atrace slice); slices begun before the range of interest are left out. Returns where
    /// each event's slice starts.
    fn nest(
        &mut self,
        slices: &[(u64, u64, Option<u32>)],
        order: &[usize],
        row_of: &HashMap<u64, u32>,
        t0: u64,
        events: &mut EventTable,
    ) -> Vec<Option<u64>> {
        let mut start_of: Vec<Option<u64>> = vec![None; slices.len()];
        // (region, start, kept, from atrace)
        let mut open: Vec<(u32, u64, bool, bool)> = Vec::new();
        let mut track_of_open = u64::MAX;
        let range = self.range_start.unwrap_or(0);
        for &k in order {
            let (track, time, begun) = slices[k];
            let system = self.system.contains(&k);
            if track != track_of_open {
                open.clear();
                track_of_open = track;
            }
            if let Some(id) = begun {
                let kept = time >= range;
                open.push((id, time, kept, system));
                if kept {
                    start_of[k] = Some(time);
                    events.push(row_of[&track], time - t0, EventKind::Enter, id);
                }
                continue;
            }
            if system && !open.last().is_some_and(|o| o.3) {
                self.repairs.add("atrace ends with no atrace slice open skipped", || format!("track {track}"));
                continue;
            }
            if open.is_empty() {
                self.repairs.add("slice ends without a begin skipped", || format!("track {track}"));
            }
            while let Some((id, start, kept, from_atrace)) = open.pop() {
                if kept {
                    start_of[k] = Some(start);
                    events.push(row_of[&track], time - t0, EventKind::Leave, id);
                }
                if system || !from_atrace {
                    break;
                }
            }
        }
        start_of
    }

    /// Flows as the trace processor links them, in time order: each slice carrying a flow id
    /// joined to the last slice that carried it, unless a terminating id ended that flow; a
    /// message from the slice that starts first to the other (a flow on an end event binds
    /// the slice it ends). Legacy flow events bind the slice enclosing them on their track, or
    /// (a flow's end, unless bound to the enclosing one) the next slice to begin there.
    fn place_flows(
        &mut self,
        t: &mut Trace,
        slices: &[(u64, u64, Option<u32>)],
        start_of: &[Option<u64>],
        row_of: &HashMap<u64, u32>,
        t0: u64,
    ) {
        let mut marks: Vec<FlowMark> = std::mem::take(&mut self.flow_marks)
            .into_iter()
            .map(|(id, k, step)| {
                let here = start_of[k].zip(row_of.get(&slices[k].0)).map(|(start, &row)| (row, start - t0));
                (slices[k].1, id, here, step)
            })
            .collect();
        let legacy = std::mem::take(&mut self.legacy_flows);
        if !legacy.is_empty() {
            let i = &t.intervals;
            let mut by_row: HashMap<u32, Vec<usize>> = HashMap::new();
            for k in 0..i.start.len() {
                by_row.entry(i.location[k]).or_default().push(k);
            }
            for (id, track, time, step, enclosing) in legacy {
                let at = time.saturating_sub(t0);
                let Some(&row) = row_of.get(&track) else { continue };
                let rows = by_row.get(&row).map_or(&[][..], Vec::as_slice);
                let bound = if step != FlowStep::End || enclosing {
                    rows.iter().filter(|&&k| i.start[k] <= at && at <= i.end[k]).max_by_key(|&&k| i.depth[k])
                } else {
                    rows.iter().filter(|&&k| i.start[k] >= at).min_by_key(|&&k| (i.start[k], i.depth[k]))
                };
                marks.push((time, (1, id), bound.map(|&k| (row, i.start[k])), step));
            }
        }
        marks.sort_by_key(|m| m.0);
        let mut last: HashMap<(u8, u64), (u32, u64)> = HashMap::new();
        for (_, id, here, step) in marks {
            let Some(here) = here else { continue };
            if step != FlowStep::Out
                && let Some(&before) = last.get(&id)
            {
                let (a, b) = if before.1 <= here.1 { (before, here) } else { (here, before) };
                t.messages.push((a.0, b.0), (a.1, b.1), 0, 0);
            }
            match step {
                FlowStep::Step | FlowStep::Out => {
                    last.insert(id, here);
                }
                FlowStep::End => {
                    last.remove(&id);
                }
                FlowStep::In => {}
            }
        }
    }

    /// The instants kept (within the range of interest) into the model's table, on their
    /// track's row, scoped by their track: a thread's, a process's, or the global one.
    fn place_instants(
        &mut self,
        t: &mut Trace,
        slices: &[(u64, u64, Option<u32>)],
        start_of: &[Option<u64>],
        row_of: &HashMap<u64, u32>,
        t0: u64,
    ) {
        use exaviz_model::InstantScope;
        let mut category_of: HashMap<String, u32> = HashMap::new();
        for (k, category, args) in std::mem::take(&mut self.instants) {
            let (track, _, name) = slices[k];
            let (Some(start), Some(&row), Some(name)) = (start_of[k], row_of.get(&track), name) else { continue };
            let tid = self.tracks.get(&track).and_then(|t| t.tid);
            let scope = match (self.pid_of(track), tid) {
                (_, Some(_)) => InstantScope::Thread,
                (Some(_), None) => InstantScope::Process,
                (None, None) => InstantScope::Global,
            };
            let next = t.instant_categories.len() as u32;
            let category = *category_of.entry(category.clone()).or_insert_with(|| {
                t.instant_categories.push(category);
                next
            });
            t.instants.push(row, start.saturating_sub(t0), name, scope, category, args);
        }
        t.instants.sort_by_time();
    }

    /// Counters on their track's row, their parent thread's, or their process's first row.
    fn place_counters(&mut self, t: &mut Trace, keyed: &[(i64, u8, i64, u64)], row_of: &HashMap<u64, u32>, t0: u64) {
        // Counters on their track's row, their parent thread's, or their process's first row.
        let mut first_of_pid: HashMap<i64, u32> = HashMap::new();
        for k in keyed {
            first_of_pid.entry(k.0).or_insert(row_of[&k.3]);
        }
        let mut metric_of: HashMap<String, u32> = HashMap::new();
        let counters = std::mem::take(&mut self.counters);
        for (track, time, value) in counters {
            let parent = self.tracks.get(&track).and_then(|t| t.parent);
            let row = row_of
                .get(&track)
                .or_else(|| parent.and_then(|p| row_of.get(&p)))
                .or_else(|| self.pid_of(track).and_then(|p| first_of_pid.get(&p)))
                .or_else(|| first_of_pid.values().min());
            let Some(&row) = row else {
                self.repairs.add("counter values with no row to draw them on skipped", || format!("track {track}"));
                continue;
            };
            // One metric per name (a thread's time on every thread is one metric, on each row).
            let tr = self.tracks.get(&track);
            let c = tr.and_then(|t| t.counter.clone()).unwrap_or_default();
            let name = tr
                .and_then(|t| t.name.clone())
                .or(c.builtin.map(String::from))
                .unwrap_or_else(|| format!("counter {track}"));
            let next = t.metric_names.len() as u32;
            let metric = *metric_of.entry(name.clone()).or_insert_with(|| {
                t.metric_names.push(name);
                t.metric_units.push(c.unit);
                t.metric_accumulated.push(false);
                next
            });
            let mult = self.tracks.get(&track).and_then(|t| t.counter.as_ref()).map_or(1.0, |c| c.multiplier);
            let v = value * if mult == 0.0 { 1.0 } else { mult };
            t.metrics.location.push(row);
            t.metrics.time.push(time.saturating_sub(t0));
            t.metrics.metric.push(metric);
            t.metrics.value.push(v);
        }
    }
}

/// The start (ns) of a `TrackEventRangeOfInterest`.
fn range_start(r: &[u8]) -> Option<u64> {
    let start = fields(r).find(|f| f.0 == 1).and_then(|f| f.1.int());
    start.map(|us| (us as i64).max(0) as u64 * 1000)
}

/// What a flow event does to its flow: joins the slice to the flow's last and carries it on
/// (`Step`), joins it and ends the flow (`End`), only joins it (`In`), or only starts from it
/// (`Out`).
#[derive(Clone, Copy, PartialEq, Debug)]
enum FlowStep {
    Step,
    End,
    In,
    Out,
}

/// A flow event in time order: its time, its flow, the slice it binds (row and start since
/// the trace's first tick), what it does.
type FlowMark = (u64, (u8, u64), Option<(u32, u64)>, FlowStep);

/// What a `LegacyEvent` says: its phase as a track event type (0 where none is drawn), its
/// duration (ns), an instant's scope (1 global, 2 process, 3 thread) and the pid and tid it
/// overrides.
#[derive(Default)]
struct Legacy {
    ty: u64,
    duration_ns: Option<u64>,
    scope: u64,
    pid: Option<i64>,
    tid: Option<i64>,
    /// A legacy flow event (phase `s`, `t` or `f`): what it does.
    flow: Option<FlowStep>,
    /// Its id (unscoped, local or global).
    id: Option<u64>,
    /// Whether the id is global (else scoped to the event's process).
    global: bool,
    /// An async phase (`S`, `F`, `T`, `p`; nestable `b`, `e`, `n`): a slice on the track of its
    /// id and name.
    is_async: bool,
    bind_to_enclosing: bool,
    /// The flow a slice takes part in by `bind_id`, and how (`flow_direction`).
    bind: Option<(u64, FlowStep)>,
}

fn legacy_event(l: &[u8]) -> Legacy {
    let mut e = Legacy::default();
    let (mut bind, mut direction) = (None, 0);
    for (n, v) in fields(l) {
        match n {
            2 => {
                let phase = v.int().map(|p| p as u8);
                e.ty = match phase {
                    Some(b'B' | b'S' | b'b') => 1,
                    Some(b'E' | b'F' | b'e') => 2,
                    Some(b'X') => 5,
                    Some(b'i' | b'I' | b'n' | b'R' | b'T' | b'p') => 3,
                    _ => 0,
                };
                e.is_async = matches!(phase, Some(b'S' | b'F' | b'T' | b'p' | b'b' | b'e' | b'n'));
                e.flow = match phase {
                    Some(b's') => Some(FlowStep::Out),
                    Some(b't') => Some(FlowStep::Step),
                    Some(b'f') => Some(FlowStep::End),
                    _ => None,
                };
            }
            6 | 10 | 11 => {
                e.id = v.int();
                e.global = n == 11;
            }
            12 => e.bind_to_enclosing = v.int() == Some(1),
            8 => bind = v.int(),
            13 => direction = v.int().unwrap_or(0),
            3 => e.duration_ns = v.int().map(|us| (us as i64).max(0) as u64 * 1000),
            14 => e.scope = v.int().unwrap_or(0),
            18 => e.pid = v.int().map(|x| x as i32 as i64),
            19 => e.tid = v.int().map(|x| x as i32 as i64),
            _ => {}
        }
    }
    let step = match direction {
        1 => Some(FlowStep::In),
        2 => Some(FlowStep::Out),
        3 => Some(FlowStep::Step),
        _ => None,
    };
    e.bind = bind.zip(step);
    e
}

/// Whether a whole packet (key, length within the bytes, fields that parse) starts `b`.
fn whole_packet_at(b: &[u8]) -> bool {
    let mut at = 0;
    if varint(b, &mut at) != Some(0x0a) {
        return false;
    }
    let Some(len) = varint(b, &mut at).and_then(|l| usize::try_from(l).ok()) else { return false };
    let Some(end) = at.checked_add(len).filter(|&e| e <= b.len()) else { return false };
    let mut f = fields(&b[at..end]);
    f.by_ref().count();
    len > 0 && !f.broken
}

fn inflate(c: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    let zlib = flate2::read::ZlibDecoder::new(c).take(MAX_INFLATED).read_to_end(&mut out);
    if zlib.is_ok() && !out.is_empty() {
        return Some(out);
    }
    out.clear();
    flate2::read::DeflateDecoder::new(c).take(MAX_INFLATED).read_to_end(&mut out).ok()?;
    (!out.is_empty()).then_some(out)
}

/// Opens a Perfetto protobuf trace (plain or gzip).
pub fn open(input: &str, path: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let bytes = read_all(input, path, MAX_BYTES)?;
    progress(bytes.len() as u64 / 2, bytes.len() as u64);
    if !looks_like(&bytes[..bytes.len().min(4096)]) {
        return Err(SourceError::invalid(input, "is not a Perfetto trace (no TracePacket at its start)"));
    }
    let mut r = Reader { trace_clock: BOOTTIME, ..Default::default() };
    r.stream(&bytes, 0);
    progress(bytes.len() as u64, bytes.len() as u64);
    let (trace, repairs) = r.finish(input)?;
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace, warnings, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::protobuf::encode::{bytes, double, int};

    fn packet(parts: &[Vec<u8>]) -> Vec<u8> {
        bytes(1, &parts.concat())
    }

    /// A process with a thread: interned names, nested slices, a counter on the process, a
    /// flow between two threads, a stray zero byte and a packet cut short.
    fn sample() -> Vec<u8> {
        let process = bytes(60, &[int(1, 1), bytes(3, &[int(1, 42), bytes(6, b"/bin/app")].concat())].concat());
        let thread = |uuid: u64, tid: u64, name: &[u8]| {
            bytes(
                60,
                &[int(1, uuid), int(5, 1), bytes(4, &[int(1, 42), int(2, tid), bytes(5, name)].concat())].concat(),
            )
        };
        let counter =
            bytes(60, &[int(1, 9), int(5, 1), bytes(2, b"memory"), bytes(8, bytes(6, b"MB").as_slice())].concat());
        let seq = int(10, 7);
        let ev = |ts: u64, track: u64, body: Vec<u8>| {
            packet(&[int(8, ts), seq.clone(), bytes(11, &[int(11, track), body].concat())])
        };
        let mut out = Vec::new();
        out.extend(packet(&[process.clone(), seq.clone(), int(13, 1)]));
        out.extend(packet(&[thread(2, 43, b"main"), seq.clone()]));
        out.extend(packet(&[thread(3, 44, b"worker"), seq.clone()]));
        out.extend(packet(&[counter, seq.clone()]));
        let interned = bytes(12, &bytes(2, &[int(1, 1), bytes(2, b"outer")].concat()));
        out.extend(packet(&[
            int(8, 1000),
            seq.clone(),
            int(13, 2),
            interned,
            bytes(11, &[int(11, 2), int(9, 1), int(10, 1)].concat()),
        ]));
        out.extend(ev(1100, 2, [int(9, 1), bytes(23, b"inner"), int(36, 5)].concat()));
        out.extend(ev(1200, 2, int(9, 2)));
        out.extend(ev(1300, 2, int(9, 2)));
        out.extend(ev(1150, 3, [int(9, 1), bytes(23, b"work"), int(42, 5)].concat()));
        out.extend(ev(1250, 3, int(9, 2)));
        out.extend(ev(1250, 3, int(9, 2)));
        out.extend(ev(1210, 9, [int(9, 4), double(44, 3.6)].concat()));
        out.push(0);
        out.extend(packet(&[int(36, 0)]));
        let last = packet(&[int(8, 1400), seq.clone()]);
        out.extend(&last[..last.len() - 1]);
        out
    }

    #[test]
    fn packets_become_rows_slices_counters_and_flows() {
        let dir = std::env::temp_dir().join(format!("exaviz-pftrace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pftrace");
        std::fs::write(&path, sample()).unwrap();
        assert!(looks_like(&sample()));
        let d = open("t.pftrace", &path, &|_, _| {}).unwrap();
        let t = &d.trace;
        assert_eq!(t.locations.name, vec!["app 42 / main 43", "app 42 / worker 44"]);
        assert_eq!(t.locations.kind, vec![LocationKind::CpuThread; 2]);
        let rows = crate::events::interval_rows(t);
        assert_eq!(rows, vec![(0, 0, 300, "outer", 0), (0, 100, 200, "inner", 1), (1, 150, 250, "work", 0)]);
        let m = &t.messages;
        assert_eq!(
            (m.source.clone(), m.destination.clone(), m.send_time.clone(), m.recv_time.clone()),
            (vec![0], vec![1], vec![100], vec![150])
        );
        assert_eq!(
            (t.metric_names.clone(), t.metric_units.clone()),
            (vec!["memory".to_string()], vec!["MB".to_string()])
        );
        assert_eq!((t.metrics.location[0], t.metrics.time[0], t.metrics.value[0]), (0, 210, 3.6));
        let w = d.warnings.join("\n");
        assert!(w.contains("1 stray bytes between packets skipped"), "{w}");
        assert!(w.contains("1 bytes after the last whole packet skipped"), "{w}");
        assert!(w.contains("1 slice ends without a begin skipped"), "{w}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Instants are slices of no duration nested where they fall (one at its parent's end
    /// nests in it); an unnamed track is called by its first event; a legacy instant of process
    /// scope on no track lands on its sequence's process; the name in force at a track's first
    /// event stays.
    #[test]
    fn instants_nest_and_tracks_are_named_as_perfetto_names_them() {
        let seq = int(10, 1);
        let thread = bytes(60, &[int(1, 1), bytes(4, &[int(1, 5), int(2, 6), bytes(5, b"t")].concat())].concat());
        let process = bytes(60, &[int(1, 2), bytes(3, &[int(1, 5), bytes(6, b"p")].concat())].concat());
        let ev = |ts: u64, body: Vec<u8>| packet(&[int(8, ts), seq.clone(), bytes(11, &body)]);
        let mut out = Vec::new();
        out.extend(packet(&[int(8, 0), seq.clone(), int(41, 1), bytes(59, &bytes(11, &int(11, 1))), thread]));
        out.extend(packet(&[int(8, 0), seq.clone(), process]));
        out.extend(ev(100, [int(9, 1), bytes(23, b"parent")].concat()));
        let annotation = bytes(4, &[bytes(10, b"k"), int(4, 1)].concat());
        out.extend(ev(
            200,
            [int(9, 3), bytes(23, b"mark"), bytes(22, b"cat"), annotation.clone(), annotation].concat(),
        ));
        out.extend(ev(200, int(9, 2)));
        out.extend(packet(&[int(8, 0), seq.clone(), bytes(60, &[int(1, 3), bytes(2, b"first")].concat())]));
        out.extend(ev(300, [int(9, 3), int(11, 3), bytes(23, b"on custom")].concat()));
        out.extend(packet(&[int(8, 0), seq.clone(), bytes(60, &[int(1, 3), bytes(2, b"later")].concat())]));
        out.extend(ev(400, [int(9, 3), int(11, 4), bytes(23, b"unnamed")].concat()));
        out.extend(ev(
            500,
            [int(11, 0), bytes(6, &[int(2, u64::from(b'I')), int(14, 2)].concat()), bytes(23, b"p")].concat(),
        ));
        let dir = std::env::temp_dir().join(format!("exaviz-pftrace-instants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("i.pftrace");
        std::fs::write(&path, out).unwrap();
        let d = open("i.pftrace", &path, &|_, _| {}).unwrap();
        let t = &d.trace;
        let row = |n: &str| {
            t.locations.name.iter().position(|x| x == n).unwrap_or_else(|| panic!("{:?}", t.locations.name)) as u32
        };
        let rows = crate::events::interval_rows(t);
        let (thread, proc_, custom, unnamed) = (row("p 5 / t 6"), row("p 5"), row("first"), row("unnamed"));
        for want in [
            (thread, 0, 100, "parent", 0),
            (thread, 100, 100, "mark", 1),
            (custom, 200, 200, "on custom", 0),
            (unnamed, 300, 300, "unnamed", 0),
            (proc_, 400, 400, "p", 0),
        ] {
            assert!(rows.contains(&want), "{want:?} not in {rows:?}");
        }
        // The instants table: each on its row, scoped by its track (a track with no process is
        // global), with its categories and debug annotations.
        use exaviz_model::InstantScope::{Global, Process, Thread};
        let i = &t.instants;
        let table: Vec<_> = (0..i.len())
            .map(|k| {
                let name = t.region_names[i.name[k] as usize].as_str();
                (
                    name,
                    i.location[k],
                    i.time[k],
                    i.scope[k],
                    t.instant_categories[i.category[k] as usize].as_str(),
                    i.args[k],
                )
            })
            .collect();
        assert_eq!(
            table,
            [
                ("mark", thread, 100, Thread, "cat", 2),
                ("on custom", custom, 200, Global, "", 0),
                ("unnamed", unnamed, 300, Global, "", 0),
                ("p", proc_, 400, Process, "", 0),
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every mutation of each of Perfetto's own diff-test traces (instants, legacy events,
    /// async tracks, flows of every kind, counters, clocks, atrace) gives a trace or one line
    /// naming the file, never a panic; the traces themselves all open.
    #[test]
    fn mutated_diff_test_traces_give_a_trace_or_one_line() {
        let Some(dir) = exaviz_model::testing::shared_data("../corpus/perfetto-difftests/traces") else { return };
        let mut traces: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        traces.sort();
        assert_eq!(traces.len(), 31);
        let tmp = std::env::temp_dir().join(format!("exaviz-pftrace-difftests-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let path = tmp.join("m.pftrace");
        let (mut opened, mut refused) = (0, 0);
        for (k, real) in traces.iter().enumerate() {
            let bytes = std::fs::read(real).unwrap();
            assert!(open("m.pftrace", real, &|_, _| {}).is_ok(), "{} opens", real.display());
            let (o, r) = crate::fuzz::tally(
                "m.pftrace",
                crate::fuzz::mutations(&bytes, 40, k as u64).iter().map(|m| {
                    std::fs::write(&path, m).unwrap();
                    open("m.pftrace", &path, &|_, _| {})
                }),
            );
            (opened, refused) = (opened + o, refused + r);
        }
        assert!(opened > 300 && refused > 0, "{opened} opened, {refused} refused");
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    /// Every mutation of the real omnitrace trace (bytes flipped, cut short, duplicated) gives
    /// a trace or one line naming the file, never a panic.
    #[test]
    fn mutated_traces_give_a_trace_or_one_line() {
        let Some(real) = exaviz_model::testing::shared_data("perfetto-omnitrace-mpi/mpi-binary-rewrite-1.proto") else {
            return;
        };
        let bytes = std::fs::read(&real).unwrap();
        let dir = std::env::temp_dir().join(format!("exaviz-pftrace-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.proto");
        let (opened, refused) = crate::fuzz::tally(
            "m.proto",
            crate::fuzz::mutations(&bytes, 300, 5).iter().map(|m| {
                std::fs::write(&path, m).unwrap();
                open("m.proto", &path, &|_, _| {})
            }),
        );
        assert!(opened > 100 && refused > 0, "{opened} opened, {refused} refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
