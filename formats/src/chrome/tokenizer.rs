//! The JSON of a Chrome trace read event by event: serde visitors that intern names as they are
//! met and keep an event's `args` only where and as far as they are read, and the readers that
//! count bytes for progress and close a trace cut short.

use std::io::Read;

use serde::Deserialize;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::builder::Builder;
use super::event::{Event, Id};
use super::*;

/// The fields of an event that are read.
pub(super) enum Key {
    Name,
    Cat,
    Ph,
    Ts,
    Dur,
    Pid,
    Tid,
    Id,
    Args,
    /// An instant's scope (`s`: `g`, `p` or `t`).
    Scope,
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
                    "s" => Key::Scope,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A name or category, interned as it is read; `null` is none.
pub(super) struct Intern<'a>(pub(super) &'a mut Builder);

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
pub(super) struct Phase;

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
pub(super) struct IdSeed<'a>(pub(super) &'a mut Builder);

impl<'de> DeserializeSeed<'de> for IdSeed<'_> {
    type Value = (Id, bool);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(Id, bool), D::Error> {
        d.deserialize_any(self)
    }
}

impl IdSeed<'_> {
    pub(super) fn other(self, v: &serde_json::Value) -> (Id, bool) {
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
pub(super) enum Keep {
    /// Nothing (flows).
    Nothing,
    /// All of them (metadata, counters, memory events, or where the phase is not known yet).
    All,
    /// A slice's: those in [`SLICE_ARGS`], [`CALL_ARGS`] for a communication call (or where
    /// the name is not known yet), and any string holding XLA's `source_target_pairs`.
    Slice { call: bool },
}

pub(super) struct ArgsSeed(pub(super) Keep);

/// The arguments kept, and Kineto's `correlation` apart from them.
pub(super) type Kept = (Option<serde_json::Value>, Option<i64>);

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

/// How many arguments an instant carries (its `args` object's keys), none of them kept.
pub(super) struct ArgCount;

impl<'de> DeserializeSeed<'de> for ArgCount {
    type Value = u32;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgCount {
    type Value = u32;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the event's arguments")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u32, A::Error> {
        let mut n = 0u32;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            n = n.saturating_add(1);
        }
        Ok(n)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(0)
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<u32, E> {
        Ok(0)
    }
}

/// What an argument's name is to a slice.
pub(super) enum ArgName {
    Correlation,
    Kept(String),
    Other,
}

/// An argument's name, and what it is to the slice.
pub(super) struct ArgKey {
    pub(super) call: bool,
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
pub(super) struct Pairs;

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
pub(super) struct EventSeed<'a>(pub(super) &'a mut Builder);

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
                Key::Scope => e.scope = map.next_value_seed(Phase)?,
                Key::Args => {
                    let name = e.name.map(|n| self.0.trace.names[n as usize].as_str());
                    let keep = match (phase_known, e.ph) {
                        (true, b'X' | b'B' | b'E') => Keep::Slice { call: name.is_none_or(is_comm_call) },
                        (true, b's' | b't' | b'f') => Keep::Nothing,
                        (true, b'i' | b'I' | b'R') if name.is_some_and(|n| n != "[memory]") => {
                            e.arg_count = map.next_value_seed(ArgCount)?;
                            continue;
                        }
                        _ => Keep::All,
                    };
                    (e.args, e.correlation) = map.next_value_seed(ArgsSeed(keep))?;
                    if let Some(serde_json::Value::Object(m)) = &e.args {
                        e.arg_count = u32::try_from(m.len()).unwrap_or(u32::MAX);
                    }
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
pub(super) struct Events<'a>(pub(super) &'a mut Builder);

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
pub(super) struct Top<'a>(pub(super) &'a mut Builder);

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
pub(super) struct Counting<R> {
    pub(super) inner: R,
    pub(super) read: std::rc::Rc<std::cell::Cell<u64>>,
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
pub(super) struct Closing<R> {
    pub(super) inner: R,
    pub(super) chunk: Vec<u8>,
    /// Bytes ready for the parser, from `at`.
    pub(super) ready: Vec<u8>,
    pub(super) at: usize,
    /// Commas and white space at the end of what was read, emitted only if more follows.
    pub(super) held: Vec<u8>,
    /// `Some(true)` in a file beginning with `[`, `Some(false)` in any other, `None` before
    /// its first byte other than white space.
    pub(super) array: Option<bool>,
    pub(super) last: u8,
    pub(super) done: bool,
    /// Line and column (1-based, as serde_json counts) of the next byte given to the parser.
    pub(super) line: u64,
    pub(super) column: u64,
    /// Where a `]` was added, if one was.
    pub(super) closed_at: std::rc::Rc<std::cell::Cell<Option<(u64, u64)>>>,
}

impl<R: Read> Closing<R> {
    pub(super) fn new(inner: R, closed_at: std::rc::Rc<std::cell::Cell<Option<(u64, u64)>>>) -> Self {
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
    pub(super) fn refill(&mut self) -> std::io::Result<()> {
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
