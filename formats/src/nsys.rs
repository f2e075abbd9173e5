//! Nsight Systems reports exported as SQLite (`nsys export --type sqlite`): what NVIDIA GPU
//! users have. Read with SQLite itself (rusqlite, bundled), opened read-only.
//!
//! What is read, as named timeline rows:
//! - GPU work per device, context and stream (`CUPTI_ACTIVITY_KIND_KERNEL`, `..._MEMCPY`,
//!   `..._MEMSET`): kernels by their short name, copies by kind ("Memcpy HtoD"), memsets;
//! - CPU threads: CUDA runtime calls (`CUPTI_ACTIVITY_KIND_RUNTIME`), NVTX ranges
//!   (`NVTX_EVENTS`, push/pop and start/end ranges) and MPI calls where traced (`MPI_*_EVENTS`
//!   tables of the MPI trace), named from `ThreadNames` and `PROCESSES`; OS runtime calls
//!   (`OSRT_API`) on a row of their own under each thread ("... · OS runtime");
//! - each kernel launch as a message from the launching thread to the stream (by
//!   `correlationId`), as Nsight Systems draws it.
//!
//! Rows are named "process (pid) / thread", "process (pid) / GPU N name / stream S": a process's
//! GPU streams group under it. Times are nanoseconds from the first event. Tables a report does
//! not have are skipped; a file that is not an Nsight Systems export is one line.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use exaviz_model::dataset::Dataset;
use exaviz_model::source::SourceError;
use exaviz_model::{LocationKind, Trace};
use rusqlite::{Connection, OpenFlags};

/// Whether the first bytes are an SQLite database's.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}

/// A serialized global thread id: process in bits 24..48, thread in 0..24.
fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0xff_ffff
}

fn tid_of(global: i64) -> i64 {
    global & 0xff_ffff
}

/// Copy kinds (`ENUM_CUDA_MEMCPY_OPER`) as Nsight Systems names them.
fn copy_kind(k: i64) -> &'static str {
    match k {
        1 => "Memcpy HtoD",
        2 => "Memcpy DtoH",
        3 => "Memcpy HtoA",
        4 => "Memcpy AtoH",
        5 => "Memcpy AtoA",
        6 => "Memcpy AtoD",
        7 => "Memcpy DtoA",
        8 => "Memcpy DtoD",
        9 => "Memcpy HtoH",
        10 => "Memcpy PtoP",
        _ => "Memcpy",
    }
}

/// A CUDA API name as Nsight Systems shows it: without the `_v7000` version suffix CUPTI adds.
fn api_name(s: &str) -> &str {
    match s.rsplit_once("_v") {
        Some((base, v)) if !base.is_empty() && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => s,
    }
}

/// Rows of the trace being built: locations by key, regions by name.
#[derive(Default)]
struct Build {
    trace: Trace,
    location_of: HashMap<String, u32>,
    region_of: HashMap<String, u32>,
    /// (location, start, end, region) before nesting.
    spans: Vec<(u32, i64, i64, u32)>,
    launches: HashMap<i64, (u32, i64)>,
    kernels: Vec<(i64, u32, i64)>,
    /// NVTX marks (location, time, region): instants, nested as spans of no duration.
    marks: Vec<(u32, i64, u32)>,
}

impl Build {
    fn location(&mut self, key: String, kind: LocationKind) -> u32 {
        if let Some(&l) = self.location_of.get(&key) {
            return l;
        }
        let l = self.trace.locations.name.len() as u32;
        self.trace.locations.name.push(key.clone());
        self.trace.locations.node.push(u32::MAX);
        self.trace.locations.kind.push(kind);
        self.location_of.insert(key, l);
        l
    }

    fn region(&mut self, name: &str) -> u32 {
        if let Some(&r) = self.region_of.get(name) {
            return r;
        }
        let r = self.trace.region_names.len() as u32;
        self.trace.region_names.push(name.to_string());
        self.region_of.insert(name.to_string(), r);
        r
    }
}

fn sql_err(input: &str) -> impl Fn(rusqlite::Error) -> SourceError + '_ {
    move |e| {
        let msg = e.to_string().replace('\n', " ");
        SourceError::invalid(input, format!("cannot be read as an Nsight Systems export: {msg}"))
    }
}

type Sql<T> = Result<T, rusqlite::Error>;

/// `id -> text` from a query of two columns (rows with a null skipped).
fn pairs(db: &Connection, sql: &str) -> Sql<HashMap<i64, String>> {
    let mut q = db.prepare(sql)?;
    let rows = q.query_map([], |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<String>>(1)?)))?;
    let mut out = HashMap::new();
    for row in rows {
        if let (Some(id), Some(text)) = row? {
            out.insert(id, text);
        }
    }
    Ok(out)
}

/// The export's names: strings, processes, threads and GPUs.
struct Names {
    strings: HashMap<i64, String>,
    processes: HashMap<i64, String>,
    threads: HashMap<i64, String>,
    gpus: HashMap<i64, String>,
}

impl Names {
    fn read(db: &Connection, has: &dyn Fn(&str) -> bool) -> Sql<Self> {
        let strings = pairs(db, "SELECT id, value FROM StringIds")?;
        let processes = if has("PROCESSES") { pairs(db, "SELECT pid, name FROM PROCESSES")? } else { HashMap::new() };
        let mut threads = HashMap::new();
        if has("ThreadNames") {
            let mut q = db.prepare("SELECT globalTid, nameId FROM ThreadNames")?;
            let rows = q.query_map([], |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?)))?;
            for row in rows {
                if let (Some(tid), Some(name)) = row? {
                    threads.insert(tid, strings.get(&name).cloned().unwrap_or_default());
                }
            }
        }
        let gpus =
            if has("TARGET_INFO_GPU") { pairs(db, "SELECT id, name FROM TARGET_INFO_GPU")? } else { HashMap::new() };
        Ok(Self { strings, processes, threads, gpus })
    }

    fn string(&self, id: Option<i64>) -> String {
        id.and_then(|i| self.strings.get(&i).cloned()).unwrap_or_default()
    }

    fn process(&self, pid: i64) -> String {
        match self.processes.get(&pid) {
            Some(n) => format!("{n} ({pid})"),
            None => format!("process {pid}"),
        }
    }

    /// "process (pid) / thread name (tid)".
    fn thread_row(&self, global: i64) -> String {
        let (pid, tid) = (pid_of(global), tid_of(global));
        let name =
            self.threads.get(&global).filter(|n| !n.is_empty()).cloned().unwrap_or_else(|| format!("thread {tid}"));
        format!("{} / {name} ({tid})", self.process(pid))
    }

    /// "process (pid) / GPU N name / stream S".
    fn stream_row(&self, global_pid: i64, device: i64, stream: i64) -> String {
        let gpu = self.gpus.get(&device).map_or(String::new(), |n| format!(" {n}"));
        format!("{} / GPU {device}{gpu} / stream {stream}", self.process(pid_of(global_pid)))
    }
}

/// Loads an Nsight Systems SQLite export.
pub fn load(path: &Path) -> Result<Dataset, SourceError> {
    let input = path.display().to_string();
    let err = sql_err(&input);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags).map_err(&err)?;
    let tables: Vec<String> = {
        let mut q = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").map_err(&err)?;
        q.query_map([], |r| r.get::<_, String>(0)).map_err(&err)?.collect::<Result<_, _>>().map_err(&err)?
    };
    let has = |t: &str| tables.iter().any(|n| n == t);
    let known = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API"];
    if !has("StringIds") || !known.iter().any(|t| has(t)) {
        return Err(SourceError::invalid(
            &input,
            "an SQLite database but not an Nsight Systems export (no StringIds and no CUDA, NVTX or OS runtime tables)",
        ));
    }
    let names = Names::read(&db, &has).map_err(&err)?;
    let mut b = Build { trace: Trace { ticks_per_second: 1_000_000_000, ..Default::default() }, ..Default::default() };
    gpu_work(&db, &names, &has, &mut b).map_err(&err)?;
    cpu_work(&db, &names, &has, &mut b).map_err(&err)?;
    if b.spans.is_empty() {
        return Err(SourceError::invalid(
            &input,
            "an Nsight Systems export without CUDA, NVTX, MPI or OS runtime events",
        ));
    }
    Ok(Dataset { name: input.clone(), trace: finish(b), ..Default::default() })
}

/// Kernels, copies and memsets, a row per process, device and stream.
fn gpu_work(db: &Connection, names: &Names, has: &dyn Fn(&str) -> bool, b: &mut Build) -> Sql<()> {
    let tables = [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "NULL"),
    ];
    for (table, column) in tables {
        if !has(table) {
            continue;
        }
        let sql = format!(
            "SELECT start, end, deviceId, streamId, globalPid, correlationId, {column} FROM {table} ORDER BY start"
        );
        let mut q = db.prepare(&sql)?;
        let mut rows = q.query([])?;
        while let Some(r) = rows.next()? {
            let (start, end): (i64, i64) = (r.get(0)?, r.get(1)?);
            let (device, stream): (i64, i64) = (r.get(2)?, r.get(3)?);
            let global_pid: i64 = r.get::<_, Option<i64>>(4)?.unwrap_or(0);
            let corr: Option<i64> = r.get(5)?;
            let detail: Option<i64> = r.get(6)?;
            let name = match table {
                "CUPTI_ACTIVITY_KIND_KERNEL" => names.string(detail),
                "CUPTI_ACTIVITY_KIND_MEMCPY" => copy_kind(detail.unwrap_or(0)).to_string(),
                _ => "Memset".to_string(),
            };
            let loc = b.location(names.stream_row(global_pid, device, stream), LocationKind::GpuStream);
            let region = b.region(if name.is_empty() { "kernel" } else { &name });
            b.spans.push((loc, start, end.max(start), region));
            if let Some(c) = corr {
                b.kernels.push((c, loc, start));
            }
        }
    }
    Ok(())
}

/// CUDA runtime calls, NVTX ranges and MPI calls, a row per thread.
fn cpu_work(db: &Connection, names: &Names, has: &dyn Fn(&str) -> bool, b: &mut Build) -> Sql<()> {
    if has("CUPTI_ACTIVITY_KIND_RUNTIME") {
        let sql = "SELECT start, end, globalTid, nameId, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start";
        let mut q = db.prepare(sql)?;
        let mut rows = q.query([])?;
        while let Some(r) = rows.next()? {
            let (start, end): (i64, i64) = (r.get(0)?, r.get(1)?);
            let tid: i64 = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
            let name = names.string(r.get(3)?);
            let corr: Option<i64> = r.get(4)?;
            let loc = b.location(names.thread_row(tid), LocationKind::CpuThread);
            let region = b.region(api_name(&name));
            b.spans.push((loc, start, end.max(start), region));
            if let Some(c) = corr {
                b.launches.insert(c, (loc, start));
            }
        }
    }
    if has("NVTX_EVENTS") {
        // Ranges (push/pop and start/end), and marks (nvtxMark: event type 34, no end) as
        // instants on their thread's row; other events without an end (a domain's creation)
        // are not drawn.
        let sql = "SELECT start, end, globalTid, text, textId FROM NVTX_EVENTS \
                   WHERE (end IS NOT NULL AND end >= start) OR (end IS NULL AND eventType = 34) ORDER BY start";
        let mut q = db.prepare(sql)?;
        let mut rows = q.query([])?;
        while let Some(r) = rows.next()? {
            let (start, end): (i64, Option<i64>) = (r.get(0)?, r.get(1)?);
            let tid: i64 = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
            let text: Option<String> = r.get(3)?;
            let name = text.unwrap_or_else(|| names.string(r.get(4).ok().flatten()));
            let loc = b.location(names.thread_row(tid), LocationKind::CpuThread);
            let region = b.region(&format!("NVTX {name}"));
            b.spans.push((loc, start, end.unwrap_or(start), region));
            if end.is_none() {
                b.marks.push((loc, start, region));
            }
        }
    }
    // OS runtime calls (poll, ioctl, pthread_*): a row of their own under each thread, as
    // Nsight Systems draws them, so they never cover the CUDA calls they run inside.
    if has("OSRT_API") {
        let sql = "SELECT start, end, globalTid, nameId FROM OSRT_API ORDER BY start";
        thread_calls(db, sql, names, b, " · OS runtime", "OS runtime")?;
    }
    for table in ["MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS"] {
        if has(table) {
            let sql = format!("SELECT start, end, globalTid, textId FROM {table} ORDER BY start");
            thread_calls(db, &sql, names, b, "", "MPI")?;
        }
    }
    Ok(())
}

/// Calls per thread from `sql` (start, end, globalTid, a StringIds id), on the thread's row
/// with `suffix` added to its name; `unnamed` where the id names nothing.
fn thread_calls(db: &Connection, sql: &str, names: &Names, b: &mut Build, suffix: &str, unnamed: &str) -> Sql<()> {
    let mut q = db.prepare(sql)?;
    let mut rows = q.query([])?;
    while let Some(r) = rows.next()? {
        let (start, end): (i64, i64) = (r.get(0)?, r.get(1)?);
        let tid: i64 = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
        let name = names.string(r.get(3)?);
        let loc = b.location(format!("{}{suffix}", names.thread_row(tid)), LocationKind::CpuThread);
        let region = b.region(if name.is_empty() { unnamed } else { &name });
        b.spans.push((loc, start, end.max(start), region));
    }
    Ok(())
}

/// Nests the spans per location (depth from a stack, as the timeline draws them), times from
/// the first event, and the launches as messages.
fn finish(mut b: Build) -> Trace {
    let t0 = b.spans.iter().map(|s| s.1).min().unwrap_or(0);
    let at = |ns: i64| (ns - t0).max(0) as u64;
    b.spans.sort_unstable_by_key(|s| (s.0, s.1, std::cmp::Reverse(s.2)));
    let mut open: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    for &(loc, start, end, region) in &b.spans {
        let stack = open.entry(loc).or_default();
        while stack.last().is_some_and(|&e| e <= start) {
            stack.pop();
        }
        let iv = &mut b.trace.intervals;
        iv.location.push(loc);
        iv.start.push(at(start));
        iv.end.push(at(end));
        iv.kind.push(region);
        iv.depth.push(stack.len() as u32);
        stack.push(end);
    }
    if !b.marks.is_empty() {
        b.trace.instant_categories = vec!["NVTX".into()];
        for &(loc, start, region) in &b.marks {
            b.trace.instants.push(loc, at(start), region, exaviz_model::InstantScope::Thread, 0, 0);
        }
        b.trace.instants.sort_by_time();
    }
    b.kernels.sort_unstable();
    for &(corr, loc, start) in &b.kernels {
        let Some(&(from, launched)) = b.launches.get(&corr) else { continue };
        let m = &mut b.trace.messages;
        m.source.push(from);
        m.destination.push(loc);
        m.send_time.push(at(launched));
        m.recv_time.push(at(start).max(at(launched)));
        m.bytes.push(0);
        m.tag.push(0);
    }
    b.trace
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloverleaf() -> Option<std::path::PathBuf> {
        exaviz_model::testing::shared_data("nsys-cloverleaf/perlmutter-cloverleaf-cuda.sqlite")
    }

    #[test]
    fn cloverleaf_reads_kernels_copies_and_runtime_calls_as_named_rows() {
        let Some(path) = cloverleaf() else { return };
        let d = load(&path).unwrap();
        let t = &d.trace;
        let count = |name: &str| {
            let k = t.region_names.iter().position(|r| r == name);
            k.map_or(0, |k| t.intervals.kind.iter().filter(|&&x| x as usize == k).count())
        };
        let kernels = (0..t.intervals.kind.len())
            .filter(|&i| t.locations.kind_of(t.intervals.location[i] as usize) == LocationKind::GpuStream)
            .count();
        assert_eq!(kernels, 1312 + 279, "every kernel and copy on a GPU stream");
        let runtime = (0..t.intervals.kind.len())
            .filter(|&i| t.locations.kind_of(t.intervals.location[i] as usize) == LocationKind::CpuThread)
            .count();
        assert_eq!(runtime, 3048 + 1831, "CUDA runtime and OS runtime calls");
        let os_rows = (0..t.locations.name.len()).filter(|&i| t.locations.name[i].ends_with(" · OS runtime")).count();
        assert!(os_rows >= 1, "OS runtime calls on rows of their own");
        assert!(count("Memcpy HtoD") > 0, "{:?}", &t.region_names[..5]);
        assert_eq!(count("cudaLaunchKernel"), 1312, "names without CUPTI's _v7000");
        assert_eq!(api_name("cudaMemcpy_v3020"), "cudaMemcpy");
        assert_eq!(api_name("cuModuleGetLoadingMode"), "cuModuleGetLoadingMode");
        let streams: Vec<&String> = (0..t.locations.name.len())
            .filter(|&i| t.locations.kind_of(i) == LocationKind::GpuStream)
            .map(|i| &t.locations.name[i])
            .collect();
        assert!(streams.iter().all(|n| n.starts_with("cuda-cloverleaf (") && n.contains("A100")), "{streams:?}");
        assert_eq!(t.messages.source.len(), 1312 + 279, "each launch and copy bound to its runtime call");
        assert!(t.intervals.start.iter().min() == Some(&0));
    }

    #[test]
    fn other_databases_and_damaged_files_are_one_line() {
        let dir = std::env::temp_dir().join(format!("exaviz-nsys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let other = dir.join("other.sqlite");
        let db = Connection::open(&other).unwrap();
        db.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);").unwrap();
        drop(db);
        let e = load(&other).unwrap_err().to_string();
        assert!(e.contains("not an Nsight Systems export") && !e.contains('\n'), "{e}");
        // A CPU-only profile (no CUDA, no NVTX): its OS runtime calls.
        let cpu = dir.join("cpu.sqlite");
        let db = Connection::open(&cpu).unwrap();
        db.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO StringIds VALUES (1, 'poll'), (2, 'pthread_cond_wait');
             CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
                 globalTid INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
                 nestingLevel INTEGER, callchainId INTEGER NOT NULL);
             INSERT INTO OSRT_API VALUES (100, 200, 27, 281474976710656, 1, 0, 0, 1),
                                         (300, 900, 27, 281474976710656, 2, 0, 0, 2);",
        )
        .unwrap();
        drop(db);
        let d = load(&cpu).unwrap();
        assert_eq!(d.trace.intervals.start.len(), 2);
        assert_eq!(d.trace.region_names.iter().filter(|n| *n == "poll" || *n == "pthread_cond_wait").count(), 2);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// NVTX marks (event type 34, no end) are instants on their thread's row, nested in the
    /// range open there; other events without an end (a domain's creation) are not.
    #[test]
    fn nvtx_marks_are_instants_in_their_ranges() {
        let dir = std::env::temp_dir().join(format!("exaviz-nsys-marks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("marks.sqlite");
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
                 text TEXT, globalTid INTEGER, textId INTEGER);
             INSERT INTO NVTX_EVENTS VALUES (100, 900, 59, 'step', 281474976710656, NULL),
                                            (400, NULL, 34, 'checkpoint', 281474976710656, NULL),
                                            (50, NULL, 75, 'MPI', 281474976710656, NULL);",
        )
        .unwrap();
        drop(db);
        let d = load(&path).unwrap();
        let t = &d.trace;
        let rows = crate::events::interval_rows(t);
        assert_eq!(rows, [(0, 0, 800, "NVTX step", 0), (0, 300, 300, "NVTX checkpoint", 1)]);
        let i = &t.instants;
        assert_eq!((i.len(), i.location[0], i.time[0]), (1, 0, 300));
        assert_eq!(
            (t.region_names[i.name[0] as usize].as_str(), i.scope[0]),
            ("NVTX checkpoint", exaviz_model::InstantScope::Thread)
        );
        assert_eq!(t.instant_categories, ["NVTX"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The real export with bytes flipped and cut short: a dataset or one line, never a panic.
    #[test]
    fn mutated_exports_never_panic() {
        let Some(path) = cloverleaf() else { return };
        let bytes = std::fs::read(&path).unwrap();
        let dir = std::env::temp_dir().join(format!("exaviz-nsys-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.sqlite");
        let (mut ok, mut failed) = (0, 0);
        let step = bytes.len() / 120;
        let cases: Vec<(usize, u8)> =
            (0..bytes.len()).step_by(step).flat_map(|i| [(i, 0x01u8), (i, 0xff)]).chain([(0, 0)]).collect();
        for (i, x) in cases {
            let mut b = bytes.clone();
            if x == 0 {
                b.truncate(bytes.len() / 2);
            } else {
                b[i] ^= x;
            }
            std::fs::write(&file, &b).unwrap();
            let r = std::panic::catch_unwind(|| load(&file).map(|d| d.trace.intervals.start.len()));
            match r {
                Err(_) => panic!("byte {i} ^ {x:#x} panicked"),
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    assert!(!e.to_string().contains('\n'), "{e}");
                    failed += 1;
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(ok > 10 && failed > 0, "{ok} read, {failed} refused");
    }
}
