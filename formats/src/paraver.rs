//! Paraver traces: `NAME.prv` (or `NAME.prv.gz`) written by Extrae and its predecessor
//! MPItrace, with `NAME.pcf` (names of states, event types and their values) and `NAME.row`
//! (names of the tasks and threads) beside it, read as BSC's `paraver-kernel` reads them
//! (`utils/traceparser/traceheader.h`, `processmodel.cpp`, `resourcemodel.cpp`,
//! `tracebodyio_v1.cpp`).
//!
//! The header `#Paraver (DATE):END[_ns|_ms]:RESOURCES:APPLICATIONS[,COMMUNICATORS]` gives the
//! time unit (microseconds unless `_ns` or `_ms`), the nodes and their CPUs (`0`, `N` or
//! `N(c1,...,cN)`) and the applications, each `TASKS(THREADS:NODE,...)`; the communicator
//! lines (`c:...`) follow it. Each thread is a location, named from the `.row` file or as
//! Paraver names it (`THREAD appl.task.thread`). Records, one a line, fields split by `:`:
//!
//! - `1:cpu:appl:task:thread:begin:end:state`: a state (the `.pcf`'s `STATES` names it), an
//!   interval at depth 0;
//! - `2:cpu:appl:task:thread:time:type:value[:type:value...]`: events. A type whose `.pcf` entry
//!   lists `VALUES` (MPI calls, user functions, OpenMP) is a region per value: a value other
//!   than 0 enters the region the value names, 0 leaves it, and a new value leaves the old one;
//!   these nest under the states. A type without `VALUES` (hardware counters, I/O sizes) is a
//!   counter, its values samples. Without a `.pcf`, types 42000000-42999999 (Extrae's hardware
//!   counters) are counters and every other type is regions;
//! - `3:cpu:appl:task:thread:logical_send:physical_send:cpu:appl:task:thread:logical_recv:
//!   physical_recv:size:tag`: a message from the sender's thread at its send call (logical send)
//!   to the receiver's thread when the receive completes (the later of logical and physical
//!   receive);
//! - `4:cpu:appl:task:thread:time:communicator:sent:received:operation:root`: one thread's part
//!   in a collective (Dimemas' operation numbers, `MPI_Barrier` 0 to `MPI_Scan` 13), ending with
//!   the call it was recorded in.
//!
//! As Paraver does, a record that does not parse, or names a thread the header does not have,
//! is skipped (counted, with one warning line per kind); lines of another record type too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use exaviz_model::dataset::Dataset;
use exaviz_model::source::{Repairs, SourceError};
use exaviz_model::{Collectives, Intervals, LocationKind, Messages, MetricSamples, Trace};

use super::{Interner, open_lines};

/// Most threads a header may declare: more is refused before anything is allocated for them.
const MAX_THREADS: usize = 1 << 22;

/// Dimemas' global operation numbers, which Extrae writes in its collective records.
const GLOBAL_OPS: [&str; 14] = [
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Reduce_scatter",
    "MPI_Scan",
];

/// Whether `head` (a file's first bytes, decompressed) is a Paraver trace.
pub fn looks_like(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"new format\n").unwrap_or(head);
    head.starts_with(b"#Paraver (")
}

/// The header: ticks per second, the threads as (application, task, thread) numbered from 1,
/// and how many communicator lines follow.
#[derive(Debug)]
struct Header {
    ticks_per_second: u64,
    end: u64,
    threads: Vec<(u32, u32, u32)>,
    /// First global thread of each (application, task), by application then task.
    first_thread: Vec<Vec<u32>>,
    communicators: u64,
}

fn number(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

fn parse_header(line: &str) -> Result<Header, String> {
    let rest = line.strip_prefix("#Paraver").ok_or("does not start with #Paraver")?;
    let close = rest.find(')').ok_or("header without the date's closing ')'")?;
    let rest = rest[close + 1..].strip_prefix(':').ok_or("header without ':' after the date")?;
    let (time, rest) = rest.split_once(':').ok_or("header ends after its time")?;
    let (end, unit) = match time.find('_') {
        Some(k) => (&time[..k], &time[k..]),
        None => (time, "_us"),
    };
    let end = number(end).ok_or_else(|| format!("header time '{time}' is not a number"))?;
    let ticks_per_second = match unit {
        "_ns" => 1_000_000_000,
        "_ms" => 1_000,
        _ => 1_000_000,
    };
    // Resources: `0`, `N`, or `N(c1,...,cN)`, then ':'.
    let rest = if rest.starts_with('0') {
        rest.split_once(':').ok_or("header ends after its resources")?.1
    } else {
        let colon = rest.find(':').ok_or("header ends after its resources")?;
        match rest.find('(') {
            Some(open) if open < colon => {
                let close = rest[open..].find(')').ok_or("header's CPU list is not closed")? + open;
                rest[close + 1..].strip_prefix(':').ok_or("header without ':' after its CPU list")?
            }
            _ => &rest[colon + 1..],
        }
    };
    // Applications: `N:` then N times `TASKS(THREADS:NODE,...)`, each followed by its
    // communicator count (`,C`, optional) and separated by ':'.
    let (apps, mut rest) = rest.split_once(':').ok_or("header ends before its applications")?;
    let apps = number(apps).filter(|&a| a > 0).ok_or_else(|| format!("'{apps}' is not a number of applications"))?;
    let mut threads = Vec::new();
    let mut first_thread = Vec::new();
    let mut communicators = 0u64;
    for a in 0..apps {
        let open = rest.find('(').ok_or("an application without its task list")?;
        let tasks = number(&rest[..open])
            .filter(|&t| t > 0)
            .ok_or_else(|| format!("'{}' is not a number of tasks", &rest[..open]))?;
        let close = rest[open..].find(')').ok_or("a task list that is not closed")? + open;
        let list: Vec<&str> = rest[open + 1..close].split(',').collect();
        if list.len() as u64 != tasks {
            return Err(format!("application {} declares {tasks} tasks but lists {}", a + 1, list.len()));
        }
        let mut firsts = Vec::with_capacity(list.len());
        for (t, entry) in list.iter().enumerate() {
            let (n, _node) =
                entry.split_once(':').ok_or_else(|| format!("task entry '{entry}' is not THREADS:NODE"))?;
            let n = number(n).filter(|&n| n > 0).ok_or_else(|| format!("'{n}' is not a number of threads"))?;
            if threads.len() as u64 + n > MAX_THREADS as u64 {
                return Err(format!("declares more than {MAX_THREADS} threads"));
            }
            firsts.push(threads.len() as u32);
            for h in 0..n {
                threads.push((a as u32 + 1, t as u32 + 1, h as u32 + 1));
            }
        }
        first_thread.push(firsts);
        rest = rest.get(close + 1..).unwrap_or("");
        // After an application: its communicator count (`,C`), then ':' before the next; or,
        // as Extrae's merger writes two applications, ',' straight before the next one's tasks
        // and the count after the last.
        if let Some(after) = rest.strip_prefix(',') {
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if after[digits..].starts_with('(') && a + 1 < apps {
                rest = after;
                continue;
            }
            let n = number(&after[..digits]).ok_or_else(|| format!("'{after}' is not a number of communicators"))?;
            communicators += n;
            rest = &after[digits..];
        }
        rest = rest.strip_prefix(':').unwrap_or(rest);
    }
    Ok(Header { ticks_per_second, end, threads, first_thread, communicators })
}

/// What the `.pcf` names: states, and per event type its name and, where it has a `VALUES`
/// table, the names of its values.
#[derive(Default, Debug)]
struct Pcf {
    states: HashMap<u64, String>,
    types: HashMap<u64, (String, Option<HashMap<u64, String>>)>,
}

fn parse_pcf(text: &str) -> Pcf {
    let mut pcf = Pcf::default();
    #[derive(PartialEq)]
    enum In {
        Other,
        States,
        Types,
        Values,
    }
    let mut section = In::Other;
    let mut group: Vec<u64> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            section = In::Other;
            continue;
        }
        match line {
            "STATES" => {
                section = In::States;
                continue;
            }
            "EVENT_TYPE" => {
                section = In::Types;
                group.clear();
                continue;
            }
            "VALUES" if section == In::Types => {
                section = In::Values;
                for t in &group {
                    if let Some(e) = pcf.types.get_mut(t) {
                        e.1.get_or_insert_with(HashMap::new);
                    }
                }
                continue;
            }
            _ => {}
        }
        let mut words = line.split_whitespace();
        match section {
            In::States => {
                if let Some(k) = words.next().and_then(number) {
                    let name = words.collect::<Vec<_>>().join(" ");
                    pcf.states.insert(k, name);
                }
            }
            In::Types => {
                // `GRADIENT TYPE NAME...`
                let (Some(_), Some(t)) = (words.next(), words.next().and_then(number)) else { continue };
                let name = words.collect::<Vec<_>>().join(" ");
                group.push(t);
                pcf.types.entry(t).or_insert((name, None));
            }
            In::Values => {
                let Some(v) = words.next().and_then(number) else { continue };
                let name = words.collect::<Vec<_>>().join(" ");
                for t in &group {
                    if let Some((_, Some(values))) = pcf.types.get_mut(t) {
                        values.insert(v, name.clone());
                    }
                }
            }
            In::Other => {}
        }
    }
    pcf
}

/// What a `.row` file names: the threads (its `LEVEL THREAD` names where they name every
/// thread, else its `LEVEL TASK` names where every task has one thread) and the applications
/// (its `LEVEL APPL` names where they name every application).
#[derive(Default)]
struct RowFile {
    threads: Option<Vec<String>>,
    applications: Option<Vec<String>>,
}

fn parse_row(text: &str, h: &Header) -> RowFile {
    let mut levels: HashMap<String, Vec<String>> = HashMap::new();
    let mut current: Option<(String, usize)> = None;
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(rest) = line.strip_prefix("LEVEL ") {
            let mut w = rest.split_whitespace();
            let level = w.next().unwrap_or("").to_string();
            let size = match (w.next(), w.next()) {
                (Some("SIZE"), Some(n)) => number(n).unwrap_or(0) as usize,
                _ => 0,
            };
            levels.insert(level.clone(), Vec::new());
            current = Some((level, size));
            continue;
        }
        if let Some((level, size)) = &current {
            let names = levels.get_mut(level).expect("the level was added");
            if line.is_empty() || names.len() >= *size {
                current = None;
            } else {
                names.push(line.trim().to_string());
            }
        }
    }
    let threads = h.threads.len();
    let tasks: usize = h.first_thread.iter().map(Vec::len).sum();
    let applications = levels.get("APPL").filter(|n| n.len() == h.first_thread.len()).cloned();
    let threads = match levels.get("THREAD").filter(|n| n.len() == threads) {
        Some(names) => Some(names.clone()),
        None => levels.get("TASK").filter(|n| n.len() == tasks && tasks == threads).cloned(),
    };
    RowFile { threads, applications }
}

/// The file beside `prv` with `ext` in place of `.prv` (or `.prv.gz`).
fn sibling(prv: &Path, ext: &str) -> Option<PathBuf> {
    let name = prv.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gz").unwrap_or(name);
    let stem = stem.strip_suffix(".prv").unwrap_or(stem);
    let p = prv.with_file_name(format!("{stem}.{ext}"));
    p.is_file().then_some(p)
}

/// The rows read, handed on a row group at a time: into the trace in memory, or into a store.
trait Sink {
    fn rows(&mut self, rows: Rows) -> Result<(), SourceError>;
}

/// A batch of rows of each table.
#[derive(Default)]
struct Rows {
    intervals: Intervals,
    messages: Messages,
    collectives: Collectives,
    metrics: MetricSamples,
}

impl Rows {
    fn len(&self) -> usize {
        self.intervals.start.len() + self.messages.source.len() + self.collectives.start.len() + self.metrics.time.len()
    }
}

/// Rows gathered in memory (`exaviz render`, `exaviz info`).
#[derive(Default)]
struct InMemory(Rows);

impl Sink for InMemory {
    fn rows(&mut self, r: Rows) -> Result<(), SourceError> {
        self.0.intervals.append(r.intervals);
        self.0.messages.append(r.messages);
        self.0.collectives.append(r.collectives);
        let m = &mut self.0.metrics;
        m.location.extend(r.metrics.location);
        m.time.extend(r.metrics.time);
        m.metric.extend(r.metrics.metric);
        m.value.extend(r.metrics.value);
        Ok(())
    }
}

/// Rows written into a store as they come (`exaviz convert`).
impl Sink for exaviz_store::StoreWriter {
    fn rows(&mut self, r: Rows) -> Result<(), SourceError> {
        self.intervals(&r.intervals)?;
        self.messages(&r.messages)?;
        self.collectives(&r.collectives)?;
        self.metrics(&r.metrics)
    }
}

/// A trace's files as read before its records: header, `.pcf`, `.row`.
struct Opened {
    lines: super::Lines,
    header: Header,
    pcf: Option<Pcf>,
    row: RowFile,
}

fn opened(input: &str, path: &Path) -> Result<Opened, SourceError> {
    let bad = |m: String| SourceError::invalid(input, m);
    let mut lines = open_lines(input, path)?;
    let mut line = String::new();
    if !lines.next(input, &mut line)? {
        return Err(bad("is empty".into()));
    }
    if line == "new format" && !lines.next(input, &mut line)? {
        return Err(bad("ends after its first line".into()));
    }
    let header = parse_header(&line).map_err(|m| bad(format!("is not a Paraver trace: {m}")))?;
    let pcf = match sibling(path, "pcf") {
        Some(p) => {
            let text = super::read_all(input, &p, 64 << 20)?;
            Some(parse_pcf(&String::from_utf8_lossy(&text)))
        }
        None => None,
    };
    let row = sibling(path, "row")
        .and_then(|p| std::fs::read(p).ok())
        .map(|b| parse_row(&String::from_utf8_lossy(&b), &header))
        .unwrap_or_default();
    Ok(Opened { lines, header, pcf, row })
}

/// Every record of a body (after the header) through `r`, reporting `progress(bytes, size)`.
fn body(
    input: &str,
    lines: &mut super::Lines,
    communicators: u64,
    r: &mut Reader,
    progress: &dyn Fn(u64, u64),
) -> Result<(), SourceError> {
    let mut line = String::new();
    let mut skipped_communicators = communicators;
    let mut lineno = 1u64;
    let mut since = 0u64;
    while lines.next(input, &mut line)? {
        lineno += 1;
        since += 1;
        if since >= 1 << 16 {
            since = 0;
            progress(lines.read.get(), lines.size);
        }
        let first = line.as_bytes().first().copied();
        match first {
            None | Some(b'#') => {}
            Some(b'c' | b'C' | b'i' | b'I') if skipped_communicators > 0 || line.as_bytes().get(1) == Some(&b':') => {
                skipped_communicators = skipped_communicators.saturating_sub(1);
            }
            Some(b'1'..=b'4') if line.as_bytes().get(1) == Some(&b':') => {
                if let Err(what) = r.record(&line) {
                    r.repairs.add(what, || format!("line {lineno}: {}", clip(&line)));
                }
                r.flush_if_full()?;
            }
            _ => r.repairs.add("lines of an unknown record type skipped", || format!("line {lineno}: {}", clip(&line))),
        }
    }
    progress(lines.size, lines.size);
    Ok(())
}

/// The threads' names: the `.row`'s, or Paraver's own (`THREAD appl.task.thread`). In a trace
/// of several applications (Extrae's MPI ranks beside its uncore counter readers), each name
/// begins with its application's (the `.row`'s, or Paraver's `APPL N`) and ` / `: the
/// application is the group its rows are drawn in, as Paraver's process model nests them.
fn thread_names(header: &Header, row: RowFile) -> Vec<String> {
    let names =
        row.threads.unwrap_or_else(|| header.threads.iter().map(|(a, t, h)| format!("THREAD {a}.{t}.{h}")).collect());
    if header.first_thread.len() < 2 {
        return names;
    }
    let application = |a: u32| match &row.applications {
        Some(apps) => apps[a as usize - 1].clone(),
        None => format!("APPL {a}"),
    };
    names.into_iter().zip(&header.threads).map(|(name, &(a, _, _))| format!("{} / {name}", application(a))).collect()
}

/// Opens a Paraver trace, reporting `progress(bytes read, file size)`.
pub fn open(input: &str, path: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let Opened { mut lines, header, pcf, row } = opened(input, path)?;
    let names = thread_names(&header, row);
    let mut sink = InMemory::default();
    let mut r = Reader::new(&header, pcf.as_ref(), Interner::default(), &mut sink);
    body(input, &mut lines, header.communicators, &mut r, progress)?;
    let (mut trace, repairs) = r.finish(names)?;
    let rows = sink.0;
    trace.intervals = rows.intervals;
    trace.messages = rows.messages;
    trace.collectives = rows.collectives;
    trace.metrics = rows.metrics;
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace, warnings, ..Default::default() })
}

/// Converts a Paraver trace into a store at `target` a row group at a time, in two passes over
/// the file: the first finds the region names and the time span (the pyramid's shape), the
/// second streams the rows into the store. Memory stays bounded whatever the file's size: the
/// threads' open regions, one row group of each table and the pyramid.
pub fn convert(
    input: &str,
    path: &Path,
    target: &Path,
    progress: &dyn Fn(u64, u64),
) -> Result<exaviz_store::Manifest, SourceError> {
    // First pass: the names and the span, nothing kept of the rows.
    let Opened { mut lines, header, pcf, row } = opened(input, path)?;
    let half = |done: u64, total: u64| progress(done / 2, total);
    let mut counting = Counting::default();
    let mut r = Reader::new(&header, pcf.as_ref(), Interner::default(), &mut counting);
    body(input, &mut lines, header.communicators, &mut r, &half)?;
    let names = r.names;
    let (t0, t1) = (counting.t0.unwrap_or(0), counting.t1.max(header.end));
    // Second pass, into the store.
    let Opened { mut lines, .. } = opened(input, path)?;
    let span =
        exaviz_store::PyramidSpan { t0, t1, ranks: header.threads.len() as u32, states: names.names.len() as u32 };
    let mut w = exaviz_store::StoreWriter::create(target)?.with_pyramid(span);
    w.begin_intervals()?;
    w.begin_messages()?;
    w.begin_collectives()?;
    w.begin_metrics()?;
    let second = |done: u64, total: u64| progress(total / 2 + done / 2, total);
    let mut r = Reader::new(&header, pcf.as_ref(), names, &mut w);
    body(input, &mut lines, header.communicators, &mut r, &second)?;
    let (trace, repairs) = r.finish(thread_names(&header, row))?;
    let d = Dataset { name: input.to_string(), trace, warnings: repairs.lines(input), ..Default::default() };
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    w.finish(&d)
}

/// The first pass's sink: the rows' time span, nothing kept.
#[derive(Default)]
struct Counting {
    t0: Option<u64>,
    t1: u64,
}

impl Sink for Counting {
    fn rows(&mut self, r: Rows) -> Result<(), SourceError> {
        let times =
            r.intervals.start.iter().chain(&r.intervals.end).chain(&r.messages.send_time).chain(&r.messages.recv_time);
        for &t in times {
            self.t0 = Some(self.t0.map_or(t, |a| a.min(t)));
            self.t1 = self.t1.max(t);
        }
        Ok(())
    }
}

fn clip(line: &str) -> String {
    let mut s: String = line.chars().take(80).collect();
    if s.len() < line.len() {
        s.push_str("...");
    }
    s
}
type Skip = &'static str;

/// A collective waiting for the end of the call it was recorded in: time, operation, bytes.
type Pending = (u64, u32, u32);

/// Rows of all tables gathered before they are handed on.
const FLUSH_ROWS: usize = 1 << 20;

fn fields(rest: &str) -> impl Iterator<Item = Option<i64>> + '_ {
    rest.split(':').map(|f| f.trim().parse::<i64>().ok())
}

/// The records read so far: the names met, the regions each thread has open, the rows not yet
/// handed to the sink.
struct Reader<'a> {
    header: &'a Header,
    pcf: Option<&'a Pcf>,
    names: Interner,
    sink: &'a mut dyn Sink,
    rows: Rows,
    /// Per thread, the regions open, innermost last: name, start, event type.
    stacks: HashMap<u32, Vec<(u32, u64, u64)>>,
    /// Per thread and event type, the region of that type open (its name).
    open: HashMap<(u32, u64), u32>,
    /// Per thread, its last event's time.
    last: HashMap<u32, u64>,
    state_names: HashMap<u64, u32>,
    /// Collective and metric names (the rows go to the sink).
    skeleton: Trace,
    metric_of: HashMap<u64, u32>,
    /// Per thread, collectives waiting for the end of the call they were recorded in.
    pending: HashMap<u32, Vec<Pending>>,
    repairs: Repairs,
}

impl<'a> Reader<'a> {
    fn new(header: &'a Header, pcf: Option<&'a Pcf>, names: Interner, sink: &'a mut dyn Sink) -> Self {
        Self {
            header,
            pcf,
            names,
            sink,
            rows: Rows::default(),
            stacks: HashMap::new(),
            open: HashMap::new(),
            last: HashMap::new(),
            state_names: HashMap::new(),
            skeleton: Trace { ticks_per_second: header.ticks_per_second, ..Default::default() },
            metric_of: HashMap::new(),
            pending: HashMap::new(),
            repairs: Repairs::default(),
        }
    }

    /// The global thread of (application, task, thread), numbered from 1 as in the file.
    fn thread(&self, appl: i64, task: i64, thread: i64) -> Option<u32> {
        let a = usize::try_from(appl.checked_sub(1)?).ok()?;
        let t = usize::try_from(task.checked_sub(1)?).ok()?;
        let h = u32::try_from(thread.checked_sub(1)?).ok()?;
        let first = *self.header.first_thread.get(a)?.get(t)?;
        let g = first.checked_add(h)?;
        let (ga, gt, _) = *self.header.threads.get(g as usize)?;
        (ga as usize == a + 1 && gt as usize == t + 1).then_some(g)
    }

    fn flush_if_full(&mut self) -> Result<(), SourceError> {
        if self.rows.len() >= FLUSH_ROWS {
            self.sink.rows(std::mem::take(&mut self.rows))?;
        }
        Ok(())
    }

    fn record(&mut self, line: &str) -> Result<(), Skip> {
        const BAD: Skip = "records that do not parse skipped";
        const NO_THREAD: Skip = "records of a thread the header does not declare skipped";
        let kind = line.as_bytes()[0];
        let f: Vec<Option<i64>> = fields(&line[2..]).collect();
        if f.len() < 5 || f[..5].iter().any(Option::is_none) {
            return Err(BAD);
        }
        let v = |k: usize| f.get(k).copied().flatten();
        let at = |k: usize| v(k).and_then(|x| u64::try_from(x).ok());
        let thread = self.thread(v(1).ok_or(BAD)?, v(2).ok_or(BAD)?, v(3).ok_or(BAD)?).ok_or(NO_THREAD)?;
        match kind {
            b'1' => {
                let (Some(begin), Some(end), Some(state)) = (at(4), at(5), at(6)) else { return Err(BAD) };
                if f.len() != 7 {
                    return Err(BAD);
                }
                if end < begin {
                    return Err("states that end before they begin skipped");
                }
                let pcf = self.pcf;
                let names = &mut self.names;
                let kind = *self.state_names.entry(state).or_insert_with(|| {
                    let name =
                        pcf.and_then(|p| p.states.get(&state)).cloned().unwrap_or_else(|| format!("state {state}"));
                    names.id(&name)
                });
                self.rows.intervals.push(thread, begin, end, kind, 0);
            }
            b'2' => {
                let time = at(4).ok_or(BAD)?;
                if f.len() < 7 || !(f.len() - 5).is_multiple_of(2) {
                    return Err(BAD);
                }
                let last = self.last.entry(thread).or_insert(0);
                if time < *last {
                    self.repairs
                        .add("events earlier than the one before them on their thread read at its time", || {
                            format!("thread {thread} at {time}")
                        });
                }
                let time = time.max(*last);
                *last = time;
                self.settle_pending(thread, time);
                for pair in f[5..].chunks_exact(2) {
                    let (Some(ty), Some(value)) = (pair[0], pair[1]) else { return Err(BAD) };
                    let ty = u64::try_from(ty).map_err(|_| BAD)?;
                    self.event(thread, time, ty, value);
                }
            }
            b'3' => {
                if f.len() != 14 {
                    return Err(BAD);
                }
                let (Some(log_send), Some(_phy_send), Some(log_recv), Some(phy_recv)) = (at(4), at(5), at(10), at(11))
                else {
                    return Err(BAD);
                };
                let to = self.thread(v(7).ok_or(BAD)?, v(8).ok_or(BAD)?, v(9).ok_or(BAD)?).ok_or(NO_THREAD)?;
                let (size, tag) = (v(12).ok_or(BAD)?, v(13).ok_or(BAD)?);
                let recv = log_recv.max(phy_recv);
                if recv < log_send {
                    return Err("messages received before they were sent skipped");
                }
                let bytes = u32::try_from(size.max(0)).unwrap_or(u32::MAX);
                self.rows.messages.push(
                    (thread, to),
                    (log_send, recv),
                    bytes,
                    tag.clamp(0, i64::from(u32::MAX)) as u32,
                );
            }
            _ => {
                // `4`: a collective.
                if f.len() < 9 {
                    return Err(BAD);
                }
                let time = at(4).ok_or(BAD)?;
                let (sent, received, op) = (v(6).ok_or(BAD)?, v(7).ok_or(BAD)?, v(8).ok_or(BAD)?);
                let name = usize::try_from(op)
                    .ok()
                    .and_then(|k| GLOBAL_OPS.get(k))
                    .map_or_else(|| format!("global operation {op}"), |s| (*s).to_string());
                let names = &mut self.skeleton.collective_names;
                let op = match names.iter().position(|n| *n == name) {
                    Some(k) => k as u32,
                    None => {
                        names.push(name);
                        names.len() as u32 - 1
                    }
                };
                let bytes = u32::try_from(sent.max(received).max(0)).unwrap_or(u32::MAX);
                self.pending.entry(thread).or_default().push((time, op, bytes));
            }
        }
        Ok(())
    }

    /// One event: a region entered or left, or a counter's sample.
    fn event(&mut self, thread: u32, time: u64, ty: u64, value: i64) {
        let described = self.pcf.and_then(|p| p.types.get(&ty));
        let region_like = match (self.pcf, described) {
            (_, Some((_, values))) => values.is_some(),
            // Without a .pcf: Extrae's hardware counters are counters, the rest regions.
            (None, None) => !(42_000_000..43_000_000).contains(&ty),
            // A .pcf that does not describe the type: a counter, as Paraver shows it.
            (Some(_), None) => false,
        };
        if !region_like {
            let t = &mut self.skeleton;
            let next = t.metric_names.len() as u32;
            let metric = *self.metric_of.entry(ty).or_insert_with(|| {
                t.metric_names.push(described.map_or_else(|| format!("event {ty}"), |d| d.0.clone()));
                t.metric_units.push(String::new());
                t.metric_accumulated.push(false);
                next
            });
            let m = &mut self.rows.metrics;
            m.location.push(thread);
            m.time.push(time);
            m.metric.push(metric);
            m.value.push(value as f64);
            return;
        }
        if let Some(name) = self.open.remove(&(thread, ty)) {
            self.leave(thread, name, time);
        }
        if value == 0 {
            return;
        }
        let value_name = described.and_then(|d| d.1.as_ref()).and_then(|v| v.get(&(value as u64)));
        let type_name = described.map_or_else(|| format!("event {ty}"), |d| d.0.clone());
        let name = match value_name.map(String::as_str) {
            Some("Begin") | Some("begin") => type_name,
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("{type_name} {value}"),
        };
        let id = self.names.id(&name);
        self.open.insert((thread, ty), id);
        self.stacks.entry(thread).or_default().push((id, time, ty));
    }

    /// Leaves region `name` on `thread`: it closes, with the regions entered after it.
    fn leave(&mut self, thread: u32, name: u32, time: u64) {
        let stack = self.stacks.entry(thread).or_default();
        let Some(k) = stack.iter().rposition(|e| e.0 == name) else {
            self.repairs.add("leaves of a region not entered dropped", || format!("thread {thread} at {time}"));
            return;
        };
        if k + 1 < stack.len() {
            self.repairs.add("leaves out of nesting order (regions entered later closed with them)", || {
                format!("thread {thread} at {time}")
            });
        }
        let closed: Vec<(u32, u64, u64)> = stack.drain(k..).collect();
        for (depth, &(n, start, ty)) in closed.iter().enumerate().rev() {
            if depth > 0 {
                self.open.remove(&(thread, ty));
            }
            self.interval(thread, start, time, n, (k + depth) as u32 + 1);
        }
    }

    /// An event region's interval, ending the collective recorded at its start.
    fn interval(&mut self, thread: u32, start: u64, end: u64, name: u32, depth: u32) {
        let end = end.max(start);
        self.rows.intervals.push(thread, start, end, name, depth);
        if let Some(p) = self.pending.get_mut(&thread)
            && let Some(k) = p.iter().position(|c| c.0 == start)
        {
            let (time, op, bytes) = p.swap_remove(k);
            self.collective(thread, time, end, op, bytes);
        }
    }

    fn collective(&mut self, thread: u32, start: u64, end: u64, op: u32, bytes: u32) {
        let c = &mut self.rows.collectives;
        c.location.push(thread);
        c.start.push(start);
        c.end.push(end);
        c.op.push(op);
        c.root.push(u32::MAX);
        c.bytes.push(bytes);
    }

    /// Collectives no call can end any more (none open began at their time, and time has moved
    /// past it): instants.
    fn settle_pending(&mut self, thread: u32, now: u64) {
        let Some(p) = self.pending.get_mut(&thread).filter(|p| !p.is_empty()) else { return };
        let stack = self.stacks.get(&thread);
        let mut settled = Vec::new();
        p.retain(|c| {
            let open = stack.is_some_and(|s| s.iter().any(|e| e.1 == c.0));
            let keep = c.0 >= now || open;
            if !keep {
                settled.push(*c);
            }
            keep
        });
        for (time, op, bytes) in settled {
            self.collective(thread, time, time, op, bytes);
        }
    }

    /// Closes what is open at the trace's end (as Paraver draws it to the end), hands the last
    /// rows on and gives the trace without its rows, with what was repaired.
    fn finish(mut self, names: Vec<String>) -> Result<(Trace, Repairs), SourceError> {
        let mut threads: Vec<u32> = self.stacks.keys().copied().collect();
        threads.sort_unstable();
        for thread in threads {
            let end = self.header.end.max(self.last.get(&thread).copied().unwrap_or(0));
            let stack = std::mem::take(self.stacks.get_mut(&thread).expect("the thread's stack"));
            for (depth, &(n, start, _)) in stack.iter().enumerate().rev() {
                self.interval(thread, start, end, n, depth as u32 + 1);
            }
        }
        let mut pending: Vec<(u32, Vec<Pending>)> = self.pending.drain().collect();
        pending.sort_unstable();
        for (thread, p) in pending {
            for (time, op, bytes) in p {
                self.collective(thread, time, time, op, bytes);
            }
        }
        self.sink.rows(std::mem::take(&mut self.rows))?;
        let threads = names.len();
        let mut t = self.skeleton;
        t.region_names = self.names.names;
        t.locations.name = names;
        t.locations.node = vec![u32::MAX; threads];
        t.locations.kind = vec![LocationKind::CpuThread; threads];
        Ok((t, self.repairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_applications_of_a_trace_of_several_are_the_groups_of_its_threads() {
        let two = parse_header("#Paraver (x):10:0:2:2(1:1,2:1),1(1:1),3").unwrap();
        // Paraver's names, each under its application's.
        assert_eq!(
            thread_names(&two, RowFile::default()),
            ["APPL 1 / THREAD 1.1.1", "APPL 1 / THREAD 1.2.1", "APPL 1 / THREAD 1.2.2", "APPL 2 / THREAD 2.1.1"]
        );
        // The `.row`'s names of both levels.
        let row = "LEVEL APPL SIZE 2\nlulesh2.0\nuncore\n\nLEVEL THREAD SIZE 4\nr0\nr1\nr1.1\nu0\n";
        assert_eq!(
            thread_names(&two, parse_row(row, &two)),
            ["lulesh2.0 / r0", "lulesh2.0 / r1", "lulesh2.0 / r1.1", "uncore / u0"]
        );
        // One application: no group to name.
        let one = parse_header("#Paraver (x):10:0:1:2(1:1,1:1)").unwrap();
        assert_eq!(thread_names(&one, parse_row("LEVEL APPL SIZE 1\napp\n", &one)), ["THREAD 1.1.1", "THREAD 1.2.1"]);
    }

    #[test]
    fn headers_of_every_shape_give_threads_and_units() {
        let h = parse_header("#Paraver (26/01/04 at 16:35):260199:4:1:4(1:1,1:2,1:3,1:4),8").unwrap();
        assert_eq!((h.ticks_per_second, h.end, h.threads.len(), h.communicators), (1_000_000, 260_199, 4, 8));
        let h = parse_header("#Paraver (19/01/2006 at 13:46):1056311873_ns:2(4,4):2:2(2:1,1:2):1(4:1)").unwrap();
        assert_eq!(h.ticks_per_second, 1_000_000_000);
        assert_eq!(h.threads, vec![(1, 1, 1), (1, 1, 2), (1, 2, 1), (2, 1, 1), (2, 1, 2), (2, 1, 3), (2, 1, 4)]);
        assert_eq!(h.first_thread, vec![vec![0, 2], vec![3]]);
        let h = parse_header("#Paraver (x):10_ms:0:1:1(1:0)").unwrap();
        assert_eq!((h.ticks_per_second, h.threads.len()), (1000, 1));
        // Two applications as Extrae's merger writes them (MPI ranks and uncore readers): ','
        // before the second's tasks, the communicators after the last; and each with its own.
        let h =
            parse_header("#Paraver (21/01/2022 at 16:37):1616378951_ns:1(20):2:2(1:1,1:1),3(1:1,1:1,1:1),14").unwrap();
        assert_eq!(h.threads, vec![(1, 1, 1), (1, 2, 1), (2, 1, 1), (2, 2, 1), (2, 3, 1)]);
        assert_eq!((h.first_thread.len(), h.communicators), (2, 14));
        let h = parse_header("#Paraver (x):10:0:2:1(2:1),3:2(1:1,1:1),4").unwrap();
        assert_eq!((h.threads.len(), h.communicators), (4, 7));
        for bad in [
            "#Paraver (x):ten:0:1:1(1:0)",
            "#Paraver (x):10:0:1:2(1:0)",
            "#Paraver (x):10:0:0:1(1:0)",
            "#Paraver (x):10:0:1:1(99999999999:1)",
            "#Paraver (x):10:0:2:1(1:1),x",
            "#Paraver (x",
        ] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pcf_names_states_types_and_values() {
        let pcf = parse_pcf(
            "STATES\n0    Idle\n1    Running\n\n\nEVENT_TYPE\n9   50000001    MPI Point-to-point\nVALUES\n2   MPI_Recv\n1   MPI_Send\n0   End\n\n\nEVENT_TYPE\n0  42000050 Instructions completed\n0  42000059 Cycles\n\n",
        );
        assert_eq!(pcf.states[&1], "Running");
        assert_eq!(pcf.types[&50000001].0, "MPI Point-to-point");
        assert_eq!(pcf.types[&50000001].1.as_ref().unwrap()[&2], "MPI_Recv");
        assert_eq!(pcf.types[&42000059], ("Cycles".to_string(), None));
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Two tasks: states, an MPI_Send/MPI_Recv pair with their message, a counter, a
    /// collective, and lines to skip.
    #[test]
    fn records_become_states_regions_messages_counters_and_collectives() {
        let dir = std::env::temp_dir().join(format!("exaviz-prv-{}", std::process::id()));
        let prv = write(
            &dir,
            "t.prv",
            "#Paraver (01/01/24 at 00:00):1000_ns:0:1:2(1:1,1:1),1\nc:1:1:2:1:2\n\
             1:1:1:1:1:0:100:1\n1:1:1:1:1:100:200:4\n1:2:1:2:1:0:150:3\n1:2:1:2:1:150:200:1\n\
             2:1:1:1:1:100:50000001:1:42000050:77\n2:1:1:1:1:200:50000001:0\n\
             2:2:1:2:1:10:50000001:2\n2:2:1:2:1:150:50000001:0\n\
             3:1:1:1:1:100:110:2:1:2:1:10:150:64:7\n\
             2:2:1:2:1:160:50000002:10\n4:2:1:2:1:160:1:8:0:11:0\n2:2:1:2:1:170:50000002:0\n\
             9:nonsense\n1:1:1:9:1:0:1:1\n2:1:1:1:1:oops:1:1\n",
        );
        write(
            &dir,
            "t.pcf",
            "STATES\n1 Running\n3 Waiting a message\n4 Blocking Send\n\nEVENT_TYPE\n9 50000001 MPI Point-to-point\nVALUES\n0 End\n1 MPI_Send\n2 MPI_Recv\n\nEVENT_TYPE\n9 50000002 MPI Collective Comm\nVALUES\n0 End\n10 MPI_Allreduce\n\nEVENT_TYPE\n7 42000050 Instructions completed\n",
        );
        let d = open("t.prv", &prv, &|_, _| {}).unwrap();
        let t = &d.trace;
        assert_eq!(t.locations.name, vec!["THREAD 1.1.1", "THREAD 1.2.1"]);
        assert_eq!(t.ticks_per_second, 1_000_000_000);
        let rows = crate::events::interval_rows(t);
        assert_eq!(
            rows,
            vec![
                (0, 0, 100, "Running", 0),
                (0, 100, 200, "Blocking Send", 0),
                (0, 100, 200, "MPI_Send", 1),
                (1, 0, 150, "Waiting a message", 0),
                (1, 10, 150, "MPI_Recv", 1),
                (1, 150, 200, "Running", 0),
                (1, 160, 170, "MPI_Allreduce", 1),
            ]
        );
        let m = &t.messages;
        assert_eq!((m.source[0], m.destination[0], m.send_time[0], m.recv_time[0]), (0, 1, 100, 150));
        assert_eq!((m.bytes[0], m.tag[0]), (64, 7));
        assert_eq!(t.metric_names, vec!["Instructions completed"]);
        assert_eq!((t.metrics.location[0], t.metrics.time[0], t.metrics.value[0]), (0, 100, 77.0));
        assert_eq!(t.collective_names, vec!["MPI_Allreduce"]);
        let c = &t.collectives;
        assert_eq!((c.location[0], c.start[0], c.end[0], c.bytes[0]), (1, 160, 170, 8));
        let w = d.warnings.join("\n");
        assert!(w.contains("t.prv: 1 lines of an unknown record type skipped (first: line 15: 9:nonsense)"), "{w}");
        assert!(w.contains("1 records of a thread the header does not declare skipped"), "{w}");
        assert!(w.contains("1 records that do not parse skipped"), "{w}");
        assert_eq!(d.warnings.len(), 3, "{w}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `exaviz convert` streams the trace into a store in two passes: the store holds what the
    /// trace read in memory holds, row for row.
    #[test]
    fn a_streamed_conversion_holds_the_trace_read_in_memory() {
        let Some(real) = exaviz_model::testing::shared_data("paraver-qsort-4r/qsort_beo3.prv") else { return };
        let dir = std::env::temp_dir().join(format!("exaviz-prv-convert-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let input = real.to_str().unwrap();
        let target = dir.join("q.exaviz");
        let seen = std::cell::Cell::new(0);
        exaviz_datasets::convert(input, &target, &|d, _| seen.set(d)).unwrap();
        assert!(seen.get() > 0);
        let memory = exaviz_datasets::open(input).unwrap();
        let stored = exaviz_datasets::open(target.to_str().unwrap()).unwrap();
        assert_eq!(memory.summary(), stored.summary());
        let rows = |d: &Dataset| {
            let i = &d.trace.intervals;
            let mut v: Vec<(u32, u64, u64, String, u32)> = (0..i.start.len())
                .map(|k| {
                    (i.location[k], i.start[k], i.end[k], d.trace.region_names[i.kind[k] as usize].clone(), i.depth[k])
                })
                .collect();
            v.sort();
            v
        };
        assert_eq!(rows(&memory), rows(&stored));
        assert!(exaviz_store::pyramid(&target).unwrap().is_some(), "the pyramid is summed while streaming");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The real MPItrace qsort trace: every mutation (bytes flipped, the file cut short, a
    /// stretch duplicated) gives a trace or one line naming the file, never a panic.
    #[test]
    fn mutated_traces_give_a_trace_or_one_line() {
        let Some(real) = exaviz_model::testing::shared_data("paraver-qsort-4r/qsort_beo3.prv") else { return };
        let bytes = std::fs::read(&real).unwrap();
        let dir = std::env::temp_dir().join(format!("exaviz-prv-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(real.with_extension("pcf"), dir.join("m.pcf")).unwrap();
        let path = dir.join("m.prv");
        let (opened, refused) = crate::fuzz::tally(
            "m.prv",
            crate::fuzz::mutations(&bytes, 300, 11).iter().map(|m| {
                std::fs::write(&path, m).unwrap();
                open("m.prv", &path, &|_, _| {})
            }),
        );
        assert!(opened > 100 && refused > 0, "{opened} opened, {refused} refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
