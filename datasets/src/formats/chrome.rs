//! The Chrome trace event format (what PyTorch's Kineto, JAX's profiler and PerfFlowAspect
//! write), read as a stream: plain or gzip, a bare array or `{"traceEvents": [...], ...}`, one
//! event at a time through a serde visitor (no whole-file document in memory). Complete `X`
//! events and nested `B`/`E` pairs become slices, instants (`i`, `I`, `R`) instants, `C`
//! counters, `s`/`t`/`f` flows bound by `id` (`bp: "e"` binds to the enclosing slice's end),
//! and `M` metadata names the lanes. `ts`/`dur` are microseconds, possibly fractional: kept in
//! nanoseconds. `pid`/`tid` may be numbers or strings. An unmatched `B` or `E` is counted, as
//! Perfetto counts it, and the rest of the trace is kept.
//!
//! [`dataset`] turns a trace into the engine's model for the MPI-style views (a lane per
//! location, slices as nested intervals, flows as messages); the Marey view of DNN training
//! that reads collectives, devices and steps is still to be built.

use rustc_hash::FxHashMap as HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::SourceError;

/// A lane: one thread (or GPU stream) of one process (or device).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lane {
    pub pid: String,
    pub tid: String,
    /// From `M` events `process_name` and `thread_name` (empty where none).
    pub process: String,
    pub thread: String,
    /// Kineto's `process_labels` ("GPU 0", "CPU").
    pub labels: String,
    pub sort_index: Option<i64>,
}

/// A slice of time on a lane: an `X` event or a matched `B`/`E` pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub lane: u32,
    /// Index into [`ChromeTrace::names`].
    pub name: u32,
    pub cat: u32,
    pub start_ns: i64,
    pub dur_ns: i64,
    /// Kineto's `correlation` argument: a kernel's and the runtime call's that launched it.
    pub correlation: Option<i64>,
    /// The arguments read above: [`SLICE_ARGS`], and [`CALL_ARGS`] of communication calls.
    pub args: Option<Box<serde_json::Value>>,
}

/// An instant, a counter sample or a flow's end.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub lane: u32,
    pub name: u32,
    pub ts_ns: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CounterSample {
    pub lane: u32,
    /// `NAME.series` for each key of the event's `args`.
    pub name: u32,
    pub ts_ns: i64,
    pub value: f64,
}

/// A flow from one lane and time to another, bound by `id`.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    pub id: String,
    pub from: Mark,
    pub to: Mark,
}

#[derive(Clone, Debug, Default)]
pub struct ChromeTrace {
    pub lanes: Vec<Lane>,
    pub slices: Vec<Slice>,
    pub instants: Vec<Mark>,
    pub counters: Vec<CounterSample>,
    /// The units of counters that have one, by name (Kineto's memory totals are bytes).
    pub counter_units: HashMap<u32, String>,
    pub flows: Vec<Flow>,
    /// Interned names and categories.
    pub names: Vec<String>,
    /// Kineto's `distributedInfo` (rank, world size, process groups), as written.
    pub distributed: Option<serde_json::Value>,
    /// The host the trace was recorded on, where written (Kineto's `host_name`, XPlane's
    /// `hostnames`).
    pub host: Option<String>,
    pub display_time_unit: Option<String>,
    /// `B` without its `E`, or `E` without a `B`: counted, the rest kept.
    pub unmatched: u64,
    pub events: u64,
    /// What was repaired as Perfetto and chrome://tracing accept it: empty events, events
    /// without a time, numbers written as strings.
    pub repairs: crate::Repairs,
}

/// A number as JSON writes it, or as a string holding one (rocprofiler writes `"ts": "12"`).
#[derive(Clone, Copy, Debug)]
struct Num {
    value: f64,
    text: bool,
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, or a string holding one")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num { value: v, text: false })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num { value: v as f64, text: false })
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num { value: v as f64, text: false })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Num, E> {
                let value = v.trim().parse::<f64>().map_err(|_| E::custom(format!("'{v}' is not a number")))?;
                Ok(Num { value, text: true })
            }
        }
        d.deserialize_any(V)
    }
}

/// A process, thread or flow id as written: a number (or a string holding a whole number), or
/// other text, interned. A number and the same number written as a string are one id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
enum Id {
    #[default]
    None,
    Num(i64),
    Text(u32),
}

/// One event's fields as read: names interned as they are met, `args` kept only where and as
/// far as they are read (no JSON tree for the arguments of every event).
#[derive(Default)]
struct Event {
    name: Option<u32>,
    cat: Option<u32>,
    /// The phase's letter; 0 for none or an empty one, `?` for a longer one.
    ph: u8,
    ts: Option<Num>,
    dur: Option<Num>,
    pid: Id,
    tid: Id,
    id: Id,
    /// A process or thread id written as a string holding a number.
    id_as_text: bool,
    args: Option<serde_json::Value>,
    correlation: Option<i64>,
}

/// A `B` event waiting for its `E`: name, category, start, correlation, args.
type Open = (u32, u32, i64, Option<i64>, Option<Box<serde_json::Value>>);

/// Builds the trace event by event.
#[derive(Default)]
struct Builder {
    trace: ChromeTrace,
    lane_of: HashMap<(Id, Id), u32>,
    name_of: HashMap<String, u32>,
    /// Ids written as text (not numbers), interned.
    texts: Vec<String>,
    text_of: HashMap<String, u32>,
    /// Open `B` events per lane.
    open: HashMap<u32, Vec<Open>>,
    /// Flow events as read: where, which phase, which id.
    flow_events: Vec<(Mark, u8, Id)>,
}

fn ns(us: f64) -> Option<i64> {
    let v = (us * 1000.0).round();
    (v.is_finite() && v.abs() < 9.0e18).then_some(v as i64)
}

/// Arguments of slices that readers above read; the others are not kept.
pub const SLICE_ARGS: [&str; 11] = [
    "step_num",
    "Collective name",
    "In msg nelems",
    "dtype",
    "flops",
    "Src Rank",
    "Dst Rank",
    "device_ordinal",
    "hlo_module",
    "Record function id",
    "hlo_op",
];

/// Arguments read only of communication calls (`nccl:*`, `c10d::*`): their tensors.
pub const CALL_ARGS: [&str; 3] = ["Input Dims", "Input type", "Concrete Inputs"];

/// Whether a CPU-side slice names a communication call: NCCL's and gloo's annotations
/// (`nccl:all_to_all`, `gloo:send`) and the c10d operators (`c10d::allreduce_`).
pub fn is_comm_call(name: &str) -> bool {
    name.starts_with("nccl:") || name.starts_with("gloo:") || name.starts_with("mpi:") || name.starts_with("c10d::")
}

impl Builder {
    fn name(&mut self, s: &str) -> u32 {
        if let Some(&k) = self.name_of.get(s) {
            return k;
        }
        let k = self.trace.names.len() as u32;
        self.trace.names.push(s.to_string());
        self.name_of.insert(s.to_string(), k);
        k
    }

    fn text(&mut self, s: &str) -> u32 {
        if let Some(&k) = self.text_of.get(s) {
            return k;
        }
        let k = self.texts.len() as u32;
        self.texts.push(s.to_string());
        self.text_of.insert(s.to_string(), k);
        k
    }

    /// An id as the lanes and flows name it: empty where absent.
    fn id_text(&self, id: &Id) -> String {
        match id {
            Id::None => String::new(),
            Id::Num(n) => n.to_string(),
            Id::Text(k) => self.texts[*k as usize].clone(),
        }
    }

    fn lane(&mut self, pid: Id, tid: Id) -> u32 {
        if let Some(&k) = self.lane_of.get(&(pid.clone(), tid.clone())) {
            return k;
        }
        let k = self.trace.lanes.len() as u32;
        let lane = Lane { pid: self.id_text(&pid), tid: self.id_text(&tid), ..Default::default() };
        self.trace.lanes.push(lane);
        self.lane_of.insert((pid, tid), k);
        k
    }

    /// One event; an error (a time that is not one) stops the stream.
    fn push(&mut self, e: Event) -> Result<(), String> {
        let k = self.trace.events;
        self.trace.events += 1;
        let ph = e.ph;
        // An event without a phase or a time (JAX ends its array with `{}`, rocprofiler begins
        // with one) is skipped, as Perfetto and chrome://tracing skip it.
        if ph == 0 && e.ts.is_none() && e.name.is_none() {
            self.trace.repairs.add("empty events skipped", || format!("event {k}"));
            return Ok(());
        }
        for _ in [e.ts, e.dur].into_iter().flatten().filter(|n| n.text) {
            self.trace.repairs.add("times written as strings read as numbers", || format!("event {k}"));
        }
        if e.id_as_text {
            self.trace.repairs.add("process or thread ids written as strings", || format!("event {k}"));
        }
        let lane = self.lane(e.pid, e.tid);
        if ph == b'M' {
            let arg =
                |k: &str| e.args.as_ref().and_then(|a| a.get(k)).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let value = arg("name");
            let what = e.name.map_or("", |n| self.trace.names[n as usize].as_str());
            let sort_index = e.args.as_ref().and_then(|a| a.get("sort_index")).and_then(serde_json::Value::as_i64);
            let (labels, process, thread, sort) = (
                what == "process_labels",
                what == "process_name",
                what == "thread_name",
                what == "thread_sort_index" || what == "process_sort_index",
            );
            let l = &mut self.trace.lanes[lane as usize];
            if labels {
                l.labels = arg("labels");
            } else if process {
                l.process = value;
            } else if thread {
                l.thread = value;
            } else if sort {
                l.sort_index = sort_index;
            }
            return Ok(());
        }
        let Some(ts) = e.ts.map(|n| n.value) else {
            let name = e.name.map_or("", |n| self.trace.names[n as usize].as_str()).to_string();
            let ph = if ph == 0 { String::new() } else { char::from(ph).to_string() };
            self.trace.repairs.add("events without a time stamp (ts) skipped", || format!("event {k} ({ph} '{name}')"));
            return Ok(());
        };
        let ts = ns(ts).ok_or_else(|| format!("event {k}: ts {ts} is not a time"))?;
        let name = e.name.unwrap_or_else(|| self.name(""));
        let cat = e.cat.unwrap_or_else(|| self.name(""));
        let args = e.args.filter(|a| !a.is_null()).map(Box::new);
        let correlation = e.correlation;
        match ph {
            b'X' => {
                let dur_ns = e.dur.and_then(|d| ns(d.value)).unwrap_or(0).max(0);
                self.trace.slices.push(Slice { lane, name, cat, start_ns: ts, dur_ns, correlation, args });
            }
            b'B' => self.open.entry(lane).or_default().push((name, cat, ts, correlation, args)),
            b'E' => match self.open.get_mut(&lane).and_then(Vec::pop) {
                Some((name, cat, start, correlation, args)) => {
                    let dur_ns = (ts - start).max(0);
                    self.trace.slices.push(Slice { lane, name, cat, start_ns: start, dur_ns, correlation, args });
                }
                None => self.trace.unmatched += 1,
            },
            b'i' | b'I' | b'R' => {
                if self.trace.names[name as usize] == "[memory]" {
                    self.memory(lane, ts, args.as_deref());
                }
                self.trace.instants.push(Mark { lane, name, ts_ns: ts });
            }
            b'C' => {
                if let Some(serde_json::Value::Object(m)) = args.as_deref() {
                    let series: Vec<(String, f64)> =
                        m.iter().filter_map(|(key, v)| Some((key.clone(), v.as_f64()?))).collect();
                    for (key, value) in series {
                        let label = format!("{}.{key}", self.trace.names[name as usize]);
                        let n = self.name(&label);
                        self.trace.counters.push(CounterSample { lane, name: n, ts_ns: ts, value });
                    }
                }
            }
            // Bound in time order once every event is read (see [`Builder::bind_flows`]).
            b's' | b't' | b'f' => self.flow_events.push((Mark { lane, name, ts_ns: ts }, ph, e.id)),
            _ => {}
        }
        Ok(())
    }
}

impl Builder {
    /// Binds the flow events in time order (file order among equal times), as Perfetto sorts a
    /// JSON trace's events before it binds them: Kineto writes a kernel's `f` before the launch's
    /// `s`. A start or step opens its id; a step or end binds to the id's last point (`bp: "e"`
    /// binds to the enclosing slice; the point is the event's time either way).
    fn bind_flows(&mut self) {
        let mut events = std::mem::take(&mut self.flow_events);
        events.sort_by_key(|f| f.0.ts_ns);
        let mut at: HashMap<Id, Mark> = HashMap::default();
        for (here, ph, id) in events {
            if ph == b's' {
                at.insert(id, here);
            } else if let Some(from) = at.get(&id).cloned() {
                let text = self.id_text(&id);
                self.trace.flows.push(Flow { id: text, from, to: here.clone() });
                if ph == b't' {
                    at.insert(id, here);
                } else {
                    at.remove(&id);
                }
            }
        }
    }

    /// Kineto's memory event (`profile_memory=True`): an instant `[memory]` after each allocation
    /// or free, its `args` giving the allocator's totals on the device afterwards ("Total
    /// Allocated", "Total Reserved", bytes) and the device ("Device Type" as PyTorch numbers
    /// them, "Device Id"). Each total becomes a counter series of its device, as the PyTorch
    /// profiler's TensorBoard plugin and HTA draw the memory curves.
    fn memory(&mut self, lane: u32, ts: i64, args: Option<&serde_json::Value>) {
        let Some(a) = args else { return };
        let id = a.get("Device Id").and_then(serde_json::Value::as_i64).unwrap_or(-1);
        let device = match a.get("Device Type").and_then(serde_json::Value::as_i64) {
            Some(0) => "CPU".to_string(),
            Some(1) => format!("cuda:{id}"),
            Some(6) => format!("hip:{id}"),
            Some(12) => format!("xpu:{id}"),
            Some(13) => format!("mps:{id}"),
            Some(other) => format!("device type {other}:{id}"),
            None => return,
        };
        for (key, what) in [("Total Allocated", "allocated"), ("Total Reserved", "reserved")] {
            let Some(value) = a.get(key).and_then(serde_json::Value::as_f64) else { continue };
            let n = self.name(&format!("memory {what} ({device})"));
            self.trace.counter_units.insert(n, "B".to_string());
            self.trace.counters.push(CounterSample { lane, name: n, ts_ns: ts, value });
        }
    }
}

/// The fields of an event that are read.
enum Key {
    Name,
    Cat,
    Ph,
    Ts,
    Dur,
    Pid,
    Tid,
    Id,
    Args,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "name" => Key::Name,
                    "cat" => Key::Cat,
                    "ph" => Key::Ph,
                    "ts" => Key::Ts,
                    "dur" => Key::Dur,
                    "pid" => Key::Pid,
                    "tid" => Key::Tid,
                    "id" => Key::Id,
                    "args" => Key::Args,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A name or category, interned as it is read; `null` is none.
struct Intern<'a>(&'a mut Builder);

impl<'de> DeserializeSeed<'de> for Intern<'_> {
    type Value = Option<u32>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<u32>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Intern<'_> {
    type Value = Option<u32>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Option<u32>, E> {
        Ok(Some(self.0.name(v)))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<u32>, E> {
        Ok(None)
    }
}

/// The phase: one letter.
struct Phase;

impl<'de> DeserializeSeed<'de> for Phase {
    type Value = u8;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<u8, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Phase {
    type Value = u8;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u8, E> {
        Ok(match v.as_bytes() {
            [] => 0,
            [b] => *b,
            _ => b'?',
        })
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<u8, E> {
        Ok(0)
    }
}

/// A process, thread or flow id: `(id, whether it was a string holding a number)`.
struct IdSeed<'a>(&'a mut Builder);

impl<'de> DeserializeSeed<'de> for IdSeed<'_> {
    type Value = (Id, bool);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(Id, bool), D::Error> {
        d.deserialize_any(self)
    }
}

impl IdSeed<'_> {
    fn other(self, v: &serde_json::Value) -> (Id, bool) {
        (Id::Text(self.0.text(&v.to_string())), false)
    }
}

impl<'de> Visitor<'de> for IdSeed<'_> {
    type Value = (Id, bool);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an id")
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(Id, bool), E> {
        Ok((Id::Num(v), false))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(Id, bool), E> {
        Ok(match i64::try_from(v) {
            Ok(n) => (Id::Num(n), false),
            Err(_) => self.other(&v.into()),
        })
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(Id, bool), E> {
        Ok(self.other(&v.into()))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(Id, bool), E> {
        Ok(self.other(&v.into()))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(Id, bool), E> {
        Ok(self.other(&serde_json::Value::Null))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(Id, bool), E> {
        let number = v.parse::<f64>().is_ok();
        Ok(match v.trim().parse::<i64>() {
            Ok(n) => (Id::Num(n), number),
            Err(_) => (Id::Text(self.0.text(v)), number),
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(Id, bool), A::Error> {
        let v = serde_json::Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        Ok(self.other(&v))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(Id, bool), A::Error> {
        let v = serde_json::Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(self.other(&v))
    }
}

/// What of an event's `args` is kept.
#[derive(Clone, Copy)]
enum Keep {
    /// Nothing (flows).
    Nothing,
    /// All of them (metadata, counters, memory events, or where the phase is not known yet).
    All,
    /// A slice's: those in [`SLICE_ARGS`], [`CALL_ARGS`] for a communication call (or where
    /// the name is not known yet), and any string holding XLA's `source_target_pairs`.
    Slice { call: bool },
}

struct ArgsSeed(Keep);

/// The arguments kept, and Kineto's `correlation` apart from them.
type Kept = (Option<serde_json::Value>, Option<i64>);

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = Kept;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        match self.0 {
            Keep::Nothing => IgnoredAny::deserialize(d).map(|_| (None, None)),
            Keep::All => serde_json::Value::deserialize(d).map(|v| {
                let correlation = v.get("correlation").and_then(serde_json::Value::as_i64);
                (Some(v), correlation)
            }),
            Keep::Slice { .. } => d.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = Kept;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the event's arguments")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let call = matches!(self.0, Keep::Slice { call: true });
        let (mut kept, mut correlation) = (serde_json::Map::new(), None);
        while let Some(key) = map.next_key_seed(ArgKey { call })? {
            match key {
                ArgName::Correlation => correlation = map.next_value::<serde_json::Value>()?.as_i64(),
                ArgName::Kept(k) => {
                    let v: serde_json::Value = map.next_value()?;
                    kept.insert(k, v);
                }
                ArgName::Other => {
                    if let Some(text) = map.next_value_seed(Pairs)? {
                        kept.insert("long_name".into(), serde_json::Value::String(text));
                    }
                }
            }
        }
        Ok(((!kept.is_empty()).then_some(serde_json::Value::Object(kept)), correlation))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((None, None))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok((None, None))
    }
}

/// What an argument's name is to a slice.
enum ArgName {
    Correlation,
    Kept(String),
    Other,
}

/// An argument's name, and what it is to the slice.
struct ArgKey {
    call: bool,
}

impl<'de> DeserializeSeed<'de> for ArgKey {
    type Value = ArgName;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<ArgName, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for ArgKey {
    type Value = ArgName;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an argument's name")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ArgName, E> {
        Ok(if v == "correlation" {
            ArgName::Correlation
        } else if SLICE_ARGS.contains(&v) || (self.call && CALL_ARGS.contains(&v)) {
            ArgName::Kept(v.to_string())
        } else {
            ArgName::Other
        })
    }
}

/// A value not kept, but for a string holding XLA's `source_target_pairs`.
struct Pairs;

impl<'de> DeserializeSeed<'de> for Pairs {
    type Value = Option<String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pairs {
    type Value = Option<String>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a value")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Option<String>, E> {
        Ok(v.contains("source_target_pairs={").then(|| v.to_string()))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// One event, read straight into the builder's interned names.
struct EventSeed<'a>(&'a mut Builder);

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = Event;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Event, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = Event;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a trace event (an object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut e = Event::default();
        let mut phase_known = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Name => e.name = map.next_value_seed(Intern(self.0))?,
                Key::Cat => e.cat = map.next_value_seed(Intern(self.0))?,
                Key::Ph => {
                    e.ph = map.next_value_seed(Phase)?;
                    phase_known = true;
                }
                Key::Ts => e.ts = map.next_value()?,
                Key::Dur => e.dur = map.next_value()?,
                Key::Pid | Key::Tid => {
                    let (id, text) = map.next_value_seed(IdSeed(self.0))?;
                    e.id_as_text |= text;
                    if matches!(key, Key::Pid) {
                        e.pid = id;
                    } else {
                        e.tid = id;
                    }
                }
                Key::Id => e.id = map.next_value_seed(IdSeed(self.0))?.0,
                Key::Args => {
                    let name = e.name.map(|n| self.0.trace.names[n as usize].as_str());
                    let keep = match (phase_known, e.ph) {
                        (true, b'X' | b'B' | b'E') => Keep::Slice { call: name.is_none_or(is_comm_call) },
                        (true, b's' | b't' | b'f') => Keep::Nothing,
                        (true, b'i' | b'I' | b'R') if name.is_some_and(|n| n != "[memory]") => Keep::Nothing,
                        _ => Keep::All,
                    };
                    (e.args, e.correlation) = map.next_value_seed(ArgsSeed(keep))?;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
}

/// The array of events, one at a time.
struct Events<'a>(&'a mut Builder);

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element_seed(EventSeed(self.0))? {
            if let Err(m) = self.0.push(e) {
                return Err(serde::de::Error::custom(m));
            }
        }
        Ok(())
    }
}

/// The whole file: an array of events, or an object with `traceEvents`.
struct Top<'a>(&'a mut Builder);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of trace events or an object with traceEvents")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Events(self.0).visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => map.next_value_seed(Events(self.0))?,
                "distributedInfo" => self.0.trace.distributed = Some(map.next_value()?),
                "host_name" => {
                    self.0.trace.host = map.next_value::<serde_json::Value>()?.as_str().map(str::to_string);
                }
                "displayTimeUnit" => self.0.trace.display_time_unit = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Counts the bytes read, for error positions.
struct Counting<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// The JSON Array Format's closing `]` is optional (writers stopped mid-trace leave it out,
/// often after a comma), as chrome://tracing and Perfetto read it: in a file that begins with
/// `[`, commas and white space at the end are held back and, where the last byte before them
/// is not `]`, dropped for a `]`. Works on whole chunks, never byte by byte.
struct Closing<R> {
    inner: R,
    chunk: Vec<u8>,
    /// Bytes ready for the parser, from `at`.
    ready: Vec<u8>,
    at: usize,
    /// Commas and white space at the end of what was read, emitted only if more follows.
    held: Vec<u8>,
    /// `Some(true)` in a file beginning with `[`, `Some(false)` in any other, `None` before
    /// its first byte other than white space.
    array: Option<bool>,
    last: u8,
    done: bool,
    /// Line and column (1-based, as serde_json counts) of the next byte given to the parser.
    line: u64,
    column: u64,
    /// Where a `]` was added, if one was.
    closed_at: std::rc::Rc<std::cell::Cell<Option<(u64, u64)>>>,
}

impl<R: Read> Closing<R> {
    fn new(inner: R, closed_at: std::rc::Rc<std::cell::Cell<Option<(u64, u64)>>>) -> Self {
        Self {
            inner,
            chunk: vec![0; 1 << 16],
            ready: Vec::new(),
            at: 0,
            held: Vec::new(),
            array: None,
            last: 0,
            done: false,
            line: 1,
            column: 1,
            closed_at,
        }
    }

    /// Fills `ready` with the next bytes, or leaves it empty at the end.
    fn refill(&mut self) -> std::io::Result<()> {
        self.ready.clear();
        self.at = 0;
        let quiet = |b: &u8| b.is_ascii_whitespace() || *b == b',';
        while self.ready.is_empty() && !self.done {
            let n = self.inner.read(&mut self.chunk)?;
            if n == 0 {
                self.done = true;
                if self.array == Some(true) && self.last != b']' {
                    self.closed_at.set(Some((self.line, self.column)));
                    self.ready.push(b']');
                } else {
                    self.ready.append(&mut self.held);
                }
                break;
            }
            let got = &self.chunk[..n];
            if self.array.is_none() {
                self.array = got.iter().find(|b| !b.is_ascii_whitespace()).map(|&b| b == b'[');
            }
            match got.iter().rposition(|b| !quiet(b)) {
                Some(k) => {
                    self.ready.append(&mut self.held);
                    self.ready.extend_from_slice(&got[..=k]);
                    self.held.extend_from_slice(&got[k + 1..]);
                    self.last = got[k];
                }
                None => self.held.extend_from_slice(got),
            }
        }
        // The position after these bytes, for where a `]` is added.
        let len = self.ready.len() as u64;
        match self.ready.iter().rposition(|&b| b == b'\n') {
            Some(k) => {
                self.line += self.ready.iter().filter(|&&b| b == b'\n').count() as u64;
                self.column = len - k as u64;
            }
            None => self.column += len,
        }
        Ok(())
    }
}

impl<R: Read> Read for Closing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.ready.len() {
            self.refill()?;
        }
        let n = buf.len().min(self.ready.len() - self.at);
        buf[..n].copy_from_slice(&self.ready[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Reads a trace from `reader` (already decompressed); `input` names it in errors.
pub fn parse(reader: impl Read, input: &str) -> Result<ChromeTrace, SourceError> {
    let read = std::rc::Rc::new(std::cell::Cell::new(0));
    let closed_at = std::rc::Rc::new(std::cell::Cell::new(None));
    let counting = Counting { inner: reader, read: read.clone() };
    let mut de = serde_json::Deserializer::from_reader(BufReader::new(Closing::new(counting, closed_at.clone())));
    let mut b = Builder::default();
    let result = Top(&mut b).deserialize(&mut de).and_then(|()| de.end());
    // An error at the `]` added (or after it) means the file ends inside an event.
    let at_close =
        |e: &serde_json::Error| closed_at.get().is_some_and(|(l, c)| (e.line() as u64, e.column() as u64) >= (l, c));
    if let Err(e) = result {
        let what = if e.is_io() {
            "cannot be read"
        } else if e.is_eof() || at_close(&e) {
            "ends too early"
        } else {
            "is not a trace"
        };
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        return Err(SourceError::invalid(
            input,
            format!("{what} near byte {} (line {}, column {}): {msg}", read.get(), e.line(), e.column()),
        ));
    }
    if let Some((line, column)) = closed_at.get() {
        b.trace
            .repairs
            .add("event array without its closing ] read to the end", || format!("line {line}, column {column}"));
    }
    finish(b, input)
}

/// What every way of reading ends with: `B` events left open counted, an empty trace refused.
fn finish(mut b: Builder, input: &str) -> Result<ChromeTrace, SourceError> {
    b.bind_flows();
    for open in b.open.values() {
        b.trace.unmatched += open.len() as u64;
    }
    if b.trace.events == 0 {
        return Err(SourceError::invalid(input, "holds no trace events"));
    }
    Ok(b.trace)
}

/// Reads a trace held in memory (decompressed): parsed in place, several times faster than
/// through a reader. Where it is not well-formed JSON, [`parse`] reads it again, to repair
/// what peers repair or to say where it breaks.
pub fn parse_bytes(bytes: &[u8], input: &str) -> Result<ChromeTrace, SourceError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut b = Builder::default();
    match Top(&mut b).deserialize(&mut de).and_then(|()| de.end()) {
        Ok(()) => finish(b, input),
        Err(_) => parse(bytes, input),
    }
}

/// Files up to this size (decompressed) are read into memory and parsed in place; larger ones
/// stream through the parser.
const IN_MEMORY: u64 = 1 << 30;

/// Reads a trace file, plain or gzip (by its first bytes).
pub fn read(path: &Path) -> Result<ChromeTrace, SourceError> {
    let input = path.display().to_string();
    let mut reader = crate::formats::open_lines(&input, path)?.reader;
    let mut bytes = Vec::new();
    match reader.by_ref().take(IN_MEMORY).read_to_end(&mut bytes) {
        Ok(got) if (got as u64) < IN_MEMORY => parse_bytes(&bytes, &input),
        Ok(_) => parse(std::io::Cursor::new(bytes).chain(reader), &input),
        // A stream that breaks (a corrupt gzip member): read again through the parser, which
        // says where.
        Err(_) => {
            drop(bytes);
            parse(crate::formats::open_lines(&input, path)?.reader, &input)
        }
    }
}

/// Whether the first bytes look like a Chrome trace: gzip, or JSON starting with `[` or `{`.
pub fn looks_like(head: &[u8]) -> bool {
    if head.starts_with(&[0x1f, 0x8b]) {
        return true;
    }
    matches!(head.iter().find(|b| !b.is_ascii_whitespace()), Some(b'[' | b'{'))
}

/// Each pid's process name (`process_name` names every thread of its pid).
pub fn process_names(t: &ChromeTrace) -> HashMap<&str, &str> {
    let mut out = HashMap::default();
    for l in t.lanes.iter().filter(|l| !l.process.is_empty()) {
        out.entry(l.pid.as_str()).or_insert(l.process.as_str());
    }
    out
}

/// The trace as the engine's model: one location per lane with slices (named "process /
/// thread", or by pid and tid), the slices as intervals nested by time (their names as
/// regions), flows as messages from one lane to another; times in nanoseconds from the first
/// slice.
pub fn dataset(t: &ChromeTrace, input: &str) -> exaviz_engine::dataset::Dataset {
    dataset_at(t, input, t.slices.iter().map(|s| s.start_ns).min().unwrap_or(0))
}

/// The earliest time of a trace's slices, flows and counters: times counted from it are never
/// clamped.
pub fn earliest(t: &ChromeTrace) -> i64 {
    let slices = t.slices.iter().map(|s| s.start_ns);
    let flows = t.flows.iter().flat_map(|f| [f.from.ts_ns, f.to.ts_ns]);
    slices.chain(flows).chain(t.counters.iter().map(|c| c.ts_ns)).min().unwrap_or(0)
}

/// [`dataset`], its times counted from `t0` (earlier times are 0).
pub fn dataset_at(t: &ChromeTrace, input: &str, t0: i64) -> exaviz_engine::dataset::Dataset {
    use exaviz_engine::dataset::Dataset;
    use exaviz_engine::model::Trace;
    let mut used: Vec<u32> = t.slices.iter().map(|s| s.lane).collect();
    used.sort_unstable();
    used.dedup();
    let loc_of: HashMap<u32, u32> = used.iter().enumerate().map(|(i, &l)| (l, i as u32)).collect();
    let at = |ns: i64| (ns - t0).max(0) as u64;
    let mut trace = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
    let process_of = process_names(t);
    // A process drawn on one row is named by itself; several rows add their threads' names.
    let mut rows_of: HashMap<&str, u32> = HashMap::default();
    for &l in &used {
        *rows_of.entry(t.lanes[l as usize].pid.as_str()).or_default() += 1;
    }
    for &l in &used {
        let lane = &t.lanes[l as usize];
        let process = match process_of.get(lane.pid.as_str()).copied().unwrap_or("") {
            "" => format!("process {}", lane.pid),
            named => named.to_string(),
        };
        let name = match (lane.thread.is_empty(), rows_of[lane.pid.as_str()]) {
            (false, _) => format!("{process} / {}", lane.thread),
            (true, 1) => process,
            (true, _) => format!("{process} / thread {}", lane.tid),
        };
        trace.locations.name.push(name);
        trace.locations.node.push(u32::MAX);
    }
    // Regions: the slice names used, in order of first use.
    let mut region_of: HashMap<u32, u32> = HashMap::default();
    let mut order: Vec<usize> = (0..t.slices.len()).collect();
    let mut loc_of_lane = vec![u32::MAX; t.lanes.len()];
    for (&lane, &loc) in &loc_of {
        loc_of_lane[lane as usize] = loc;
    }
    let key = |i: usize| {
        let s = &t.slices[i];
        (loc_of_lane[s.lane as usize], s.start_ns, std::cmp::Reverse(s.dur_ns), i)
    };
    order.sort_unstable_by_key(|&i| key(i));
    let mut open: Vec<u64> = Vec::new();
    let mut last_loc = u32::MAX;
    for i in order {
        let s = &t.slices[i];
        let loc = loc_of[&s.lane];
        if loc != last_loc {
            open.clear();
            last_loc = loc;
        }
        let (start, end) = (at(s.start_ns), at(s.start_ns.saturating_add(s.dur_ns)));
        while open.last().is_some_and(|&e| e <= start) {
            open.pop();
        }
        let next = trace.region_names.len() as u32;
        let kind = *region_of.entry(s.name).or_insert_with(|| {
            trace.region_names.push(t.names[s.name as usize].clone());
            next
        });
        // A step annotation (JAX's StepTraceAnnotation) carries its step's number.
        if s.args.as_deref().and_then(|a| a.get("step_num")).is_some() && !trace.step_regions.contains(&kind) {
            trace.step_regions.push(kind);
        }
        trace.intervals.location.push(loc);
        trace.intervals.start.push(start);
        trace.intervals.end.push(end);
        trace.intervals.kind.push(kind);
        trace.intervals.depth.push(open.len() as u32);
        open.push(end);
    }
    trace.step_regions.sort_unstable();
    for f in &t.flows {
        let (Some(&a), Some(&b)) = (loc_of.get(&f.from.lane), loc_of.get(&f.to.lane)) else { continue };
        let m = &mut trace.messages;
        m.source.push(a);
        m.destination.push(b);
        m.send_time.push(at(f.from.ts_ns));
        m.recv_time.push(at(f.to.ts_ns).max(at(f.from.ts_ns)));
        m.bytes.push(0);
        m.tag.push(0);
    }
    // Counters (`C` events, Kineto's memory totals) on their lane's row, or the first row of
    // their process (a `C` event names no thread); a process without rows has nowhere to show
    // them.
    let mut row_of_pid: HashMap<&str, u32> = HashMap::default();
    for &l in &used {
        row_of_pid.entry(t.lanes[l as usize].pid.as_str()).or_insert(loc_of[&l]);
    }
    let mut metric_of: HashMap<u32, u32> = HashMap::default();
    for c in &t.counters {
        let on_process = || row_of_pid.get(t.lanes[c.lane as usize].pid.as_str());
        let Some(&loc) = loc_of.get(&c.lane).or_else(on_process) else { continue };
        let next = trace.metric_names.len() as u32;
        let metric = *metric_of.entry(c.name).or_insert_with(|| {
            trace.metric_names.push(t.names[c.name as usize].clone());
            trace.metric_units.push(t.counter_units.get(&c.name).cloned().unwrap_or_default());
            trace.metric_accumulated.push(false);
            next
        });
        let m = &mut trace.metrics;
        m.location.push(loc);
        m.time.push(at(c.ts_ns));
        m.metric.push(metric);
        m.value.push(c.value);
    }
    Dataset { name: input.to_string(), trace, ..Default::default() }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn p(text: &str) -> Result<ChromeTrace, String> {
        parse(text.as_bytes(), "t.json").map_err(|e| e.to_string())
    }

    #[test]
    fn events_of_every_kind_become_slices_marks_counters_and_flows() {
        let t = p(r#"{"displayTimeUnit": "ns", "distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "thread_name", "pid": 0, "tid": "stream 7", "args": {"name": "compute"}},
            {"ph": "X", "name": "gemm", "cat": "kernel", "pid": 0, "tid": "stream 7", "ts": 10.5, "dur": 2.25},
            {"ph": "B", "name": "outer", "pid": "p", "tid": 1, "ts": 1},
            {"ph": "B", "name": "inner", "pid": "p", "tid": 1, "ts": 2},
            {"ph": "E", "pid": "p", "tid": 1, "ts": 3},
            {"ph": "E", "pid": "p", "tid": 1, "ts": 5},
            {"ph": "E", "pid": "p", "tid": 1, "ts": 6},
            {"ph": "B", "name": "open", "pid": "p", "tid": 2, "ts": 7},
            {"ph": "i", "name": "mark", "pid": 0, "tid": 0, "ts": 4},
            {"ph": "C", "name": "mem", "pid": 0, "ts": 4, "args": {"used": 5, "free": 7.5}},
            {"ph": "s", "id": 9, "name": "send", "pid": 0, "tid": 0, "ts": 4},
            {"ph": "f", "id": 9, "bp": "e", "name": "recv", "pid": "p", "tid": 1, "ts": 4.75}
        ]}"#)
        .unwrap();
        assert_eq!(t.display_time_unit.as_deref(), Some("ns"));
        assert_eq!(t.distributed.as_ref().unwrap()["world_size"], 2);
        let gemm = &t.slices[0];
        assert_eq!((gemm.start_ns, gemm.dur_ns), (10_500, 2_250));
        let lane = &t.lanes[gemm.lane as usize];
        assert_eq!((lane.pid.as_str(), lane.tid.as_str(), lane.thread.as_str()), ("0", "stream 7", "compute"));
        assert_eq!(t.lanes.iter().find(|l| l.pid == "0" && l.tid.is_empty()).unwrap().process, "GPU 0");
        let named = |s: &Slice| t.names[s.name as usize].as_str();
        let inner = t.slices.iter().find(|s| named(s) == "inner").unwrap();
        let outer = t.slices.iter().find(|s| named(s) == "outer").unwrap();
        assert_eq!((inner.start_ns, inner.dur_ns, outer.start_ns, outer.dur_ns), (2_000, 1_000, 1_000, 4_000));
        assert_eq!(t.unmatched, 2, "one E too many, one B never closed");
        assert_eq!(t.instants.len(), 1);
        assert_eq!(t.counters.len(), 2);
        assert_eq!(t.names[t.counters[1].name as usize], "mem.used");
        assert_eq!(t.flows.len(), 1);
        assert_eq!((t.flows[0].from.ts_ns, t.flows[0].to.ts_ns), (4_000, 4_750));
        // As the model: lanes with slices are locations, slices nested intervals, flows messages.
        let d = dataset(&t, "t.json");
        let tr = &d.trace;
        assert_eq!(tr.locations.name.len(), 2);
        assert!(tr.locations.name.contains(&"GPU 0 / compute".to_string()), "{:?}", tr.locations.name);
        assert_eq!(tr.intervals.start.len(), 3);
        let depth_of = |n: &str| {
            let k = tr.region_names.iter().position(|r| r == n).unwrap() as u32;
            tr.intervals.depth[tr.intervals.kind.iter().position(|&x| x == k).unwrap()]
        };
        assert_eq!((depth_of("outer"), depth_of("inner"), depth_of("gemm")), (0, 1, 0));
        assert_eq!(tr.intervals.start.iter().min(), Some(&0), "times from the first slice");
        assert_eq!(tr.messages.source.len(), 0, "the flow starts on a lane without slices");
        // A bare array works too.
        assert_eq!(p(r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]"#).unwrap().slices.len(), 1);
    }

    /// Flows bind in time order, as Perfetto binds them: Kineto writes a kernel's `f` before the
    /// launch's `s` (the real 8-rank DLRM run's launches become messages, CPU to GPU).
    #[test]
    fn flows_bind_in_time_order_not_file_order() {
        let t = p(r#"[{"ph": "X", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 2},
            {"ph": "X", "name": "launch", "pid": 9, "tid": 9, "ts": 1, "dur": 2},
            {"ph": "f", "id": 4, "bp": "e", "name": "ac2g", "pid": 0, "tid": 7, "ts": 5},
            {"ph": "s", "id": 4, "name": "ac2g", "pid": 9, "tid": 9, "ts": 1}]"#)
        .unwrap();
        assert_eq!(t.flows.len(), 1);
        assert_eq!((t.flows[0].from.ts_ns, t.flows[0].to.ts_ns), (1_000, 5_000));
        assert_eq!(dataset(&t, "t.json").trace.messages.source.len(), 1);
        if let Some(path) = shared("kineto-dlrm-8gpu/worker0_step_12.1694128201545.pt.trace.json") {
            let t = read(&path).unwrap();
            assert!(t.flows.len() >= 250, "{} flows of 261 starts", t.flows.len());
        }
    }

    /// `C` events are the model's counters, on the first row of their process.
    #[test]
    fn counters_are_counted_on_their_process_row() {
        let t = p(r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 0, "dur": 5},
            {"ph": "C", "name": "memory", "pid": 1, "ts": 1, "args": {"allocated": 1024, "reserved": 2048.4}},
            {"ph": "C", "name": "memory", "pid": 1, "ts": 3, "args": {"allocated": 512}},
            {"ph": "C", "name": "other", "pid": 9, "ts": 3, "args": {"x": 1}}]"#)
        .unwrap();
        let d = dataset(&t, "t.json");
        let counters = d.trace.counter_summaries();
        let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}: the process without rows has none");
        let allocated = counters.iter().find(|c| c.name.contains("allocated")).unwrap();
        assert_eq!((allocated.samples, allocated.min, allocated.max), (2, 512.0, 1024.0));
        assert!(d.trace.metrics.location.iter().all(|&l| l == 0));
    }

    /// Kineto's `[memory]` instants (as PyTorch writes them with `profile_memory=True`) are the
    /// allocator's totals per device, in bytes, on the row of the thread that allocated.
    #[test]
    fn kineto_memory_events_are_counters_per_device() {
        let t = p(r#"[{"ph": "X", "name": "a", "pid": 7, "tid": 1, "ts": 0, "dur": 5},
            {"ph": "X", "name": "b", "pid": 7, "tid": 2, "ts": 0, "dur": 5},
            {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 2, "ts": 1,
             "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Device Id": 0,
                      "Device Type": 1, "Addr": 140000}},
            {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 2, "ts": 2,
             "args": {"Total Reserved": 0, "Total Allocated": 4096, "Bytes": 4096, "Device Id": -1,
                      "Device Type": 0, "Addr": 150000}},
            {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 2, "ts": 3,
             "args": {"Total Reserved": 2097152, "Total Allocated": 0, "Bytes": -512, "Device Id": 0,
                      "Device Type": 1, "Addr": 140000}},
            {"ph": "i", "name": "[memory]", "pid": 7, "tid": 2, "ts": 4, "args": {"Bytes": 1}}]"#)
        .unwrap();
        let d = dataset(&t, "t.json");
        let counters = d.trace.counter_summaries();
        let get = |n: &str| counters.iter().find(|c| c.name == n).unwrap_or_else(|| panic!("{n} in {counters:?}"));
        let cuda = get("memory allocated (cuda:0)");
        assert_eq!((cuda.samples, cuda.min, cuda.max, cuda.unit.as_str()), (2, 0.0, 512.0, "B"));
        assert_eq!(get("memory reserved (cuda:0)").max, 2_097_152.0);
        assert_eq!(get("memory allocated (CPU)").max, 4096.0);
        assert_eq!(counters.len(), 4, "an event without totals gives none: {counters:?}");
        assert!(d.trace.metrics.location.iter().all(|&l| l == 1), "on the allocating thread's row");
        assert_eq!(t.instants.len(), 4, "still instants too");
    }

    #[test]
    fn bad_traces_are_one_line_naming_the_position() {
        let e = p(r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "soon"}]"#).unwrap_err();
        assert!(e.starts_with("t.json: is not a trace near byte") && e.contains("'soon' is not a number"), "{e}");
        let e = p(r#"[{"ph": "X", "ts": 1}, {"ph": "#).unwrap_err();
        assert!(e.contains("ends too early near byte 30 "), "{e}");
        let e = p("[{\"ph\": \"X\", \"ts\": 1}, {\"ph\": \"X\", \"ts\": 2").unwrap_err();
        assert!(e.contains("ends too early"), "{e}");
        let e = p("[{\"ph\": \"X\", \"ts\": 1}, {\"ph\": \"X\", \"args\": {\"a\": [1]},\n").unwrap_err();
        assert!(e.contains("ends too early"), "{e}");
        // An object's event array left open is a truncated file.
        let e = p(r#"{"traceEvents": [{"ph": "X", "ts": 1},"#).unwrap_err();
        assert!(e.contains("ends too early"), "{e}");
        let e = p(r#"{"traceEvents": [{"ph": "X", "ts": 1}]} trailing"#).unwrap_err();
        assert!(e.contains("is not a trace") && !e.contains('\n'), "{e}");
        assert!(p("[]").unwrap_err().contains("holds no trace events"));
        assert!(p("7").unwrap_err().contains("is not a trace"));
    }

    #[test]
    fn what_peers_accept_is_repaired_and_counted() {
        let t = p(r#"[{}, {"ph": "X", "name": "a", "pid": "7", "tid": "1", "ts": "10.5", "dur": "2"},
            {"ph": "X", "name": "b", "pid": 7, "tid": 1, "dur": 1}, {}]"#)
        .unwrap();
        assert_eq!(t.slices.len(), 1);
        assert_eq!((t.slices[0].start_ns, t.slices[0].dur_ns), (10_500, 2_000));
        assert_eq!(t.repairs.count("empty events skipped"), 2);
        assert_eq!(t.repairs.count("events without a time stamp (ts) skipped"), 1);
        assert_eq!(t.repairs.count("times written as strings read as numbers"), 2);
        assert_eq!(t.repairs.count("process or thread ids written as strings"), 1);
        assert_eq!(t.lanes.len(), 1, "pid \"7\" and 7 are one process");
        let lines = t.repairs.lines("t.json");
        assert!(lines.contains(&"t.json: 2 empty events skipped (first: event 0)".to_string()), "{lines:?}");
        // The array format's closing bracket is optional, with or without a comma before it.
        let event = r#"{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}"#;
        for text in [format!("[{event}"), format!("[{event},\n"), format!("[\n{event},\n{event}, \n\n")] {
            let t = p(&text).unwrap();
            assert!(!t.slices.is_empty());
            assert_eq!(t.repairs.count("event array without its closing ] read to the end"), 1, "{text}");
        }
        let closed = p(&format!("[{event}]\n")).unwrap();
        assert!(closed.repairs.is_empty(), "a closed array is not repaired");
    }

    /// `../shared/data/REL`, or `None` (skipped) where absent and not required.
    pub(crate) fn shared(rel: &str) -> Option<std::path::PathBuf> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data").join(rel);
        if p.exists() {
            Some(p)
        } else {
            let required = std::env::var("EXAVIZ_REQUIRE_DATA").is_ok_and(|v| v == "1");
            assert!(!required, "{} is missing; EXAVIZ_REQUIRE_DATA=1 makes ../shared/data mandatory", p.display());
            eprintln!("skipped: {} is absent", p.display());
            None
        }
    }

    /// The real Kineto and PerfFlowAspect traces read whole.
    #[test]
    fn real_kineto_and_perfflow_traces_read() {
        if let Some(path) = shared("kineto/sampled_rank-0.json.gz") {
            let t = read(&path).unwrap();
            assert_eq!(t.distributed.as_ref().unwrap()["rank"], 0);
            assert!(t.slices.len() >= 4_000, "{}", t.slices.len());
            assert!(t.lanes.iter().any(|l| !l.thread.is_empty() || !l.process.is_empty()));
        }
        if let Some(path) = shared("kineto/nccl_data.json.gz") {
            let t = read(&path).unwrap();
            let nccl = t.slices.iter().filter(|s| t.names[s.name as usize].contains("nccl")).count();
            assert!(nccl > 0, "NCCL kernels in the 2-rank trace");
        }
        if let Some(path) = shared("perfflow/perfflow.lassen19.108800.pfw") {
            let t = read(&path).unwrap();
            assert!(t.slices.len() > 1_000 && t.unmatched == 0, "{} slices", t.slices.len());
        }
    }

    /// Parsing in place (files read whole) gives what parsing through a reader gives, on every
    /// real Chrome trace.
    #[test]
    fn in_place_parsing_gives_the_streamed_trace() {
        let rels = [
            "kineto/sampled_rank-0.json.gz",
            "kineto/nccl_data.json.gz",
            "rocprofiler-chrome/memcpy-host-device.rocprofiler.json.gz",
            "perfflow/perfflow.lassen19.108800.pfw",
            "kineto-dlrm-8gpu/worker0_step_12.1694128201545.pt.trace.json",
        ];
        for rel in rels {
            let Some(path) = shared(rel) else { return };
            let raw = std::fs::read(&path).unwrap();
            let mut plain = Vec::new();
            if raw.starts_with(&[0x1f, 0x8b]) {
                flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut plain).unwrap();
            } else {
                plain = raw;
            }
            let streamed = format!("{:?}", parse(&plain[..], rel).unwrap());
            let in_place = format!("{:?}", parse_bytes(&plain, rel).unwrap());
            assert!(streamed == in_place, "{rel}: parsed in place, another trace");
            assert_eq!(format!("{:?}", read(&path).unwrap()), streamed, "{rel}");
        }
    }

    /// Only the arguments read are kept: a kernel's correlation as a number, the collective
    /// fields, a communication call's tensors, XLA's pairs in any string; not the others.
    #[test]
    fn slices_keep_only_the_arguments_read() {
        let t = p(r#"[{"ph": "X", "name": "ncclKernel", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
              "args": {"correlation": 42, "grid": [1, 2, 3], "Collective name": "allreduce", "dtype": "Float"}},
            {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
              "args": {"Input Dims": [[2, 2]], "External id": 5}},
            {"ph": "X", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
              "args": {"Input Dims": [[2, 2]], "Input type": ["float"]}},
            {"ph": "X", "name": "cp.1", "pid": 2, "tid": 1, "ts": 1, "dur": 1,
              "args": {"xla": "x = collective-permute(y), source_target_pairs={{0,1}}"}},
            {"args": {"Input Dims": [[1]]}, "ph": "X", "name": "c10d::send", "pid": 1, "tid": 1, "ts": 1},
            {"ph": "C", "name": "mem", "pid": 0, "ts": 4, "args": {"used": 5}}]"#)
        .unwrap();
        let args = |i: usize| t.slices[i].args.as_deref().map(|a| a.to_string()).unwrap_or_default();
        assert_eq!(t.slices[0].correlation, Some(42));
        assert_eq!(args(0), r#"{"Collective name":"allreduce","dtype":"Float"}"#);
        assert_eq!(args(1), "", "a computation's tensors are not read");
        assert_eq!(args(2), r#"{"Input Dims":[[2,2]],"Input type":["float"]}"#);
        assert!(args(3).contains("source_target_pairs={{0,1}}"), "{}", args(3));
        assert_eq!(args(4), r#"{"Input Dims":[[1]]}"#, "args before the phase: all kept");
        assert_eq!(t.counters.len(), 1);
    }

    /// The real traces, flipped byte by byte and cut short (before and after decompression):
    /// an error or a trace, never a panic. rocprofiler's goes through the repaired paths (an
    /// empty event, numbers as strings).
    #[test]
    fn mutated_traces_never_panic() {
        for rel in ["kineto/sampled_rank-1.json.gz", "rocprofiler-chrome/memcpy-host-device.rocprofiler.json.gz"] {
            let Some(path) = shared(rel) else { return };
            let gz = std::fs::read(&path).unwrap();
            let mut plain = Vec::new();
            flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
            let plain = &plain[..plain.len().min(60_000)];
            let mut cases = 0;
            for (bytes, step) in [(&gz[..], gz.len() / 200), (plain, plain.len() / 400)] {
                for i in (0..bytes.len()).step_by(step.max(1)) {
                    for x in [0x01u8, 0x80, 0xff] {
                        let mut b = bytes.to_vec();
                        b[i] ^= x;
                        let r = std::panic::catch_unwind(|| {
                            let dir =
                                std::env::temp_dir().join(format!("exaviz-chrome-{}-{i}-{x}", std::process::id()));
                            std::fs::write(&dir, &b).unwrap();
                            let out = read(&dir).map(|t| t.slices.len());
                            std::fs::remove_file(&dir).ok();
                            out.map_err(|e| e.to_string())
                        });
                        assert!(r.is_ok(), "{rel}: byte {i} ^ {x:#x} panicked");
                        if let Ok(Err(e)) = r {
                            assert!(!e.contains('\n'), "{e}");
                        }
                        cases += 1;
                    }
                }
                for cut in [0, bytes.len() / 3, bytes.len() - 1] {
                    assert!(std::panic::catch_unwind(|| parse(&bytes[..cut], "cut").is_ok()).is_ok());
                }
            }
            assert!(cases > 1000, "{rel}: {cases}");
        }
    }
}
