//! The Chrome trace event format (what PyTorch's Kineto, JAX's profiler and PerfFlowAspect
//! write), read as a stream: plain or gzip, a bare array or `{"traceEvents": [...], ...}`, one
//! event at a time through a serde visitor (no whole-file document in memory). Complete `X`
//! events and nested `B`/`E` pairs become slices, instants (`i`, `I`, `R`) instants, `C`
//! counters, `s`/`t`/`f` flows bound by `id` (`bp: "e"` binds to the enclosing slice's end),
//! and `M` metadata names the lanes. `ts`/`dur` are microseconds, possibly fractional: kept in
//! nanoseconds. `pid`/`tid` may be numbers or strings. An unmatched `B` or `E` is counted, as
//! Perfetto counts it, and the rest of the trace is kept.
//!
//! The reader in rooms, as Perfetto's importers are split: [`tokenizer`] reads the JSON (serde
//! visitors that intern names and keep only the arguments read), [`builder`] turns events into
//! lanes, slices, counters and flows, [`mapping`] turns the trace into exaviz's model (a lane
//! per location, slices as nested intervals, flows as messages); the training model that the
//! Marey graph reads is made from the same trace by `dnn`.

mod builder;
mod event;
mod mapping;
mod tokenizer;

use std::io::{BufReader, Read};
use std::path::Path;

use builder::Builder;
use exaviz_model::source::SourceError;
use rustc_hash::FxHashMap as HashMap;
use serde::de::DeserializeSeed;
use tokenizer::{Closing, Counting, Top};

pub use builder::{CALL_ARGS, SLICE_ARGS, is_comm_call};
pub use mapping::{dataset, dataset_at, earliest, process_names};

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

/// An instant event (`i`, `I`, `R`): where and when, its scope, category and argument count.
#[derive(Clone, Debug, PartialEq)]
pub struct Instant {
    pub mark: Mark,
    /// Its scope as written (`g`, `p`, `t`; 0 where none: the thread).
    pub scope: u8,
    /// Its category (an interned name; the empty name where none).
    pub cat: u32,
    pub args: u32,
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
    pub instants: Vec<Instant>,
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
    pub repairs: exaviz_model::source::Repairs,
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
    b.pack_async();
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
    let mut reader = crate::open_lines(&input, path)?.reader;
    let mut bytes = Vec::new();
    match reader.by_ref().take(IN_MEMORY).read_to_end(&mut bytes) {
        Ok(got) if (got as u64) < IN_MEMORY => parse_bytes(&bytes, &input),
        Ok(_) => parse(std::io::Cursor::new(bytes).chain(reader), &input),
        // A stream that breaks (a corrupt gzip member): read again through the parser, which
        // says where.
        Err(_) => {
            drop(bytes);
            parse(crate::open_lines(&input, path)?.reader, &input)
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

#[cfg(test)]
pub(crate) mod tests;
