//! A Chrome trace built event by event: lanes by process and thread, `B`/`E` pairs matched into
//! slices, instants, counters, flows bound in time order, Kineto's memory events as counters.

use rustc_hash::FxHashMap as HashMap;

use super::event::{Event, Id};
use super::*;

/// A `B` event waiting for its `E`: name, category, start, correlation, args.
pub(super) type Open = (u32, u32, i64, Option<i64>, Option<Box<serde_json::Value>>);

/// Builds the trace event by event.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) trace: ChromeTrace,
    pub(super) lane_of: HashMap<(Id, Id), u32>,
    pub(super) name_of: HashMap<String, u32>,
    /// Ids written as text (not numbers), interned.
    pub(super) texts: Vec<String>,
    pub(super) text_of: HashMap<String, u32>,
    /// Open `B` events per lane.
    pub(super) open: HashMap<u32, Vec<Open>>,
    /// Flow events as read: where, which phase, which id.
    pub(super) flow_events: Vec<(Mark, u8, Id)>,
    /// The lanes of async events (one per process, category and id), packed when read whole.
    pub(super) async_lanes: Vec<u32>,
}

pub(super) fn ns(us: f64) -> Option<i64> {
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
    pub(super) fn name(&mut self, s: &str) -> u32 {
        if let Some(&k) = self.name_of.get(s) {
            return k;
        }
        let k = self.trace.names.len() as u32;
        self.trace.names.push(s.to_string());
        self.name_of.insert(s.to_string(), k);
        k
    }

    pub(super) fn text(&mut self, s: &str) -> u32 {
        if let Some(&k) = self.text_of.get(s) {
            return k;
        }
        let k = self.texts.len() as u32;
        self.texts.push(s.to_string());
        self.text_of.insert(s.to_string(), k);
        k
    }

    /// An id as the lanes and flows name it: empty where absent.
    pub(super) fn id_text(&self, id: &Id) -> String {
        match id {
            Id::None => String::new(),
            Id::Num(n) => n.to_string(),
            Id::Text(k) => self.texts[*k as usize].clone(),
        }
    }

    pub(super) fn lane(&mut self, pid: Id, tid: Id) -> u32 {
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
    pub(super) fn push(&mut self, e: Event) -> Result<(), String> {
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
        let lane = self.lane(e.pid.clone(), e.tid.clone());
        if ph == b'M' {
            self.metadata(lane, &e);
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
                let mark = Mark { lane, name, ts_ns: ts };
                self.trace.instants.push(Instant { mark, scope: e.scope, cat, args: e.arg_count });
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
            // Async events (nestable `b`/`e`/`n`, legacy `S`/`F`): slices and instants on a row
            // of their process per category and id, named by its first event, as Perfetto
            // puts them on an async track.
            b'b' | b'S' => {
                let lane = self.async_lane(e.pid, cat, &e.id, name);
                self.open.entry(lane).or_default().push((name, cat, ts, correlation, args));
            }
            b'e' | b'F' => {
                let lane = self.async_lane(e.pid, cat, &e.id, name);
                match self.open.get_mut(&lane).and_then(Vec::pop) {
                    Some((name, cat, start, correlation, args)) => {
                        let dur_ns = (ts - start).max(0);
                        self.trace.slices.push(Slice { lane, name, cat, start_ns: start, dur_ns, correlation, args });
                    }
                    None => self.trace.unmatched += 1,
                }
            }
            b'n' => {
                let lane = self.async_lane(e.pid, cat, &e.id, name);
                let mark = Mark { lane, name, ts_ns: ts };
                self.trace.instants.push(Instant { mark, scope: b't', cat, args: e.arg_count });
            }
            _ => {}
        }
        Ok(())
    }

    /// A metadata event (`M`): a process's or thread's name, labels or sort index.
    fn metadata(&mut self, lane: u32, e: &Event) {
        let arg = |k: &str| e.args.as_ref().and_then(|a| a.get(k)).and_then(|v| v.as_str()).unwrap_or("").to_string();
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
    }

    /// The row of `pid`'s async events of category `cat` and id `id`: a lane of its own, named
    /// by the first event's name.
    fn async_lane(&mut self, pid: Id, cat: u32, id: &Id, name: u32) -> u32 {
        let key = format!("async {} {}", self.trace.names[cat as usize], self.id_text(id));
        let tid = Id::Text(self.text(&key));
        let lane = self.lane(pid, tid);
        let l = &mut self.trace.lanes[lane as usize];
        if l.thread.is_empty() {
            l.thread = self.trace.names[name as usize].clone();
            self.async_lanes.push(lane);
        }
        lane
    }

    /// Async rows of one process and name that never overlap in time share a row, as Perfetto
    /// merges async tracks: each id's events go to the first such row free at its start (a
    /// trace of many short requests draws a few rows, not one per request).
    pub(super) fn pack_async(&mut self) {
        if self.async_lanes.len() < 2 {
            return;
        }
        let mut span: HashMap<u32, (i64, i64)> = HashMap::default();
        let mut extend = |lane: u32, a: i64, b: i64| {
            let e = span.entry(lane).or_insert((a, b));
            *e = (e.0.min(a), e.1.max(b));
        };
        for s in &self.trace.slices {
            extend(s.lane, s.start_ns, s.start_ns.saturating_add(s.dur_ns));
        }
        for i in &self.trace.instants {
            extend(i.mark.lane, i.mark.ts_ns, i.mark.ts_ns);
        }
        let lanes = &self.trace.lanes;
        // Per process and name: each id's lane with its first and last time.
        type Spans = Vec<(i64, i64, u32)>;
        let mut groups: HashMap<(&str, &str), Spans> = HashMap::default();
        for &l in &self.async_lanes {
            if let Some(&(a, b)) = span.get(&l) {
                let lane = &lanes[l as usize];
                groups.entry((lane.pid.as_str(), lane.thread.as_str())).or_default().push((a, b, l));
            }
        }
        let mut to: HashMap<u32, u32> = HashMap::default();
        for mut ids in groups.into_values() {
            ids.sort_unstable();
            // Each shared row: its last end and its lane.
            let mut rows: Vec<(i64, u32)> = Vec::new();
            for (a, b, l) in ids {
                match rows.iter_mut().find(|r| r.0 < a) {
                    Some(r) => {
                        to.insert(l, r.1);
                        r.0 = b;
                    }
                    None => rows.push((b, l)),
                }
            }
        }
        for s in &mut self.trace.slices {
            s.lane = to.get(&s.lane).copied().unwrap_or(s.lane);
        }
        for i in &mut self.trace.instants {
            i.mark.lane = to.get(&i.mark.lane).copied().unwrap_or(i.mark.lane);
        }
    }
}

impl Builder {
    /// Binds the flow events in time order (file order among equal times), as Perfetto sorts a
    /// JSON trace's events before it binds them: Kineto writes a kernel's `f` before the launch's
    /// `s`. A start or step opens its id; a step or end binds to the id's last point (`bp: "e"`
    /// binds to the enclosing slice; the point is the event's time either way).
    pub(super) fn bind_flows(&mut self) {
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
    pub(super) fn memory(&mut self, lane: u32, ts: i64, args: Option<&serde_json::Value>) {
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
