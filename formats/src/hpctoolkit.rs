//! HPCToolkit databases (2023 and later: `meta.db`, `profile.db`, `trace.db`, `cct.db`), read
//! as the `FORMATS.md` that ships inside every database defines them (v4: little-endian
//! integers, sections located by the file header, structures read with the sizes the file
//! gives for forward compatibility).
//!
//! - `meta.db`: the identifier kinds' names (`RANK`, `THREAD`, `GPUSTREAM`, ...), the calling
//!   context tree (entry points, then contexts with their relation, lexical type and the
//!   function, source line or instruction they stand for), functions and load modules;
//! - `profile.db`: each profile's hierarchical identifier tuple (node, rank, thread, GPU
//!   context and stream), which names the trace lines;
//! - `trace.db`: one line per profile of samples (timestamp in nanoseconds, context): a thread
//!   is in the sample's context until the next sample (context 0: not running).
//!
//! Each trace line is a location (a GPU stream where its tuple names one, else a CPU thread),
//! named from its tuple (`rank 1 / thread 0`). A sample's calling context becomes the states of
//! its location: the functions on its call path, outermost first, nested as the timeline's
//! depth bands, down to a depth: by default the deepest function of the path that is a user
//! function (in the application's binary, not a shared library), an MPI call or a runtime
//! placeholder under them (`<omp barrier wait>`, `<omp idle>`), as hpcviewer's trace view is
//! usually read; `DATABASE?depth=N` keeps the N outermost functions instead, as
//! hpcviewer's depth slider does. Every pointer and count is checked against the file; a walk
//! of the context tree is bounded by the section's size, so a loop in a damaged file ends.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use exaviz_model::LocationKind;
use exaviz_model::dataset::Dataset;
use exaviz_model::query::Query;
use exaviz_model::source::{Repairs, SourceError};

use super::Interner;
use crate::events::{EventKind, EventTable};

/// The largest `meta.db` and `profile.db` read whole; `trace.db` is read line by line.
const MAX_META: u64 = 1 << 30;

/// Whether `dir` is an HPCToolkit database (its `meta.db` starts with the v4 header).
pub fn is_database(dir: &Path) -> bool {
    dir.is_dir() && is_db_file(&dir.join("meta.db"), b"meta")
}

/// Whether `path` starts with the common header of a `*.db` file of `format`.
pub fn is_db_file(path: &Path, format: &[u8; 4]) -> bool {
    crate::head_of(path, 16).is_some_and(|h| h.len() >= 16 && &h[..10] == b"HPCTOOLKIT" && &h[10..14] == format)
}

/// Little-endian reads with every offset checked.
struct Bytes<'a> {
    b: &'a [u8],
    file: &'static str,
}

type R<T> = Result<T, String>;

impl<'a> Bytes<'a> {
    fn u8(&self, at: u64) -> R<u8> {
        self.slice(at, 1).map(|s| s[0])
    }
    fn u16(&self, at: u64) -> R<u16> {
        self.slice(at, 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&self, at: u64) -> R<u32> {
        self.slice(at, 4).map(|s| u32::from_le_bytes(s.try_into().expect("four bytes")))
    }
    fn u64(&self, at: u64) -> R<u64> {
        self.slice(at, 8).map(|s| u64::from_le_bytes(s.try_into().expect("eight bytes")))
    }
    fn slice(&self, at: u64, len: u64) -> R<&'a [u8]> {
        let end = at.checked_add(len).ok_or_else(|| format!("{}: offset {at} overflows", self.file))?;
        usize::try_from(at)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(a, e)| self.b.get(a..e))
            .ok_or_else(|| format!("{}: {len} bytes at {at} lie past its end ({} bytes)", self.file, self.b.len()))
    }
    /// A NUL-terminated string at `at`.
    fn text(&self, at: u64) -> R<String> {
        let start = usize::try_from(at).ok().filter(|&a| a < self.b.len());
        let start = start.ok_or_else(|| format!("{}: a string at {at} lies past its end", self.file))?;
        let len = self.b[start..].iter().position(|&c| c == 0);
        let len = len.ok_or_else(|| format!("{}: the string at {at} is not terminated", self.file))?;
        Ok(String::from_utf8_lossy(&self.b[start..start + len]).into_owned())
    }
    /// Section `k`'s (size, pointer) from the file header, checked to lie in the file.
    fn section(&self, k: u64) -> R<(u64, u64)> {
        let (size, at) = (self.u64(0x10 + 16 * k)?, self.u64(0x18 + 16 * k)?);
        self.slice(at, size)?;
        Ok((size, at))
    }
    fn header(&self, format: &[u8; 4]) -> R<()> {
        let h = self.slice(0, 16)?;
        if &h[..10] != b"HPCTOOLKIT" || &h[10..14] != format {
            return Err(format!("{}: not an HPCToolkit {} file", self.file, String::from_utf8_lossy(format)));
        }
        if h[14] != 4 {
            return Err(format!("{}: format version {}.{} (this reader reads 4.x)", self.file, h[14], h[15]));
        }
        Ok(())
    }
}

/// A context of the tree: its parent and, for a function, its name and whether it is a user
/// function or an MPI call.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) parent: u32,
    pub(crate) function: Option<(String, bool)>,
}

/// The identifier kinds' names and the calling context tree, by context id.
pub(crate) struct Meta {
    pub(crate) kinds: Vec<String>,
    pub(crate) contexts: HashMap<u32, Ctx>,
}

fn read_meta(b: &Bytes) -> R<Meta> {
    b.header(b"meta")?;
    let (_, names_at) = b.section(1)?;
    let pp = b.u64(names_at)?;
    let n = b.u8(names_at + 8)?;
    let kinds = (0..u64::from(n)).map(|k| b.u64(pp + 8 * k).and_then(|p| b.text(p))).collect::<R<Vec<_>>>()?;
    let (ctx_size, ctx_at) = b.section(3)?;
    let entries = b.u64(ctx_at)?;
    let n_entries = b.u16(ctx_at + 8)?;
    let sz_entry = u64::from(b.u8(ctx_at + 10)?);
    if sz_entry < 0x20 && n_entries > 0 {
        return Err(format!("{}: entry points of {sz_entry} bytes (at least 32)", b.file));
    }
    // Contexts to read: (children's size, pointer, parent id), walked without recursion; the
    // walk reads at most one context per 32 bytes of the section, so a loop ends.
    let mut contexts = HashMap::new();
    let mut todo: Vec<(u64, u64, u32)> = Vec::new();
    for k in 0..u64::from(n_entries) {
        let e = entries + k * sz_entry;
        let (size, at, id) = (b.u64(e)?, b.u64(e + 8)?, b.u32(e + 0x10)?);
        contexts.insert(id, Ctx { parent: 0, function: None });
        todo.push((size, at, id));
    }
    let mut budget = ctx_size / 32 + 1;
    while let Some((size, mut at, parent)) = todo.pop() {
        let end = at.checked_add(size).ok_or_else(|| format!("{}: a child array overflows", b.file))?;
        while at < end {
            budget = budget.checked_sub(1).ok_or_else(|| format!("{}: the context tree loops", b.file))?;
            let (csize, cat, id) = (b.u64(at)?, b.u64(at + 8)?, b.u32(at + 0x10)?);
            let flags = b.u8(at + 0x14)?;
            let lexical = b.u8(at + 0x16)?;
            let words = u64::from(b.u8(at + 0x17)?);
            let function = if flags & 1 != 0 && lexical == 0 {
                let f = b.u64(at + 0x20)?;
                Some(function_at(b, f)?)
            } else if lexical == 0 {
                Some(("<unknown function>".to_string(), false))
            } else {
                None
            };
            contexts.insert(id, Ctx { parent, function });
            if csize > 0 {
                todo.push((csize, cat, id));
            }
            at += 0x20 + 8 * words;
        }
    }
    Ok(Meta { kinds, contexts })
}

/// A function's name (or its module and offset) and whether it is a user function, an MPI call
/// or a runtime placeholder: where the states of a sample's path end.
fn function_at(b: &Bytes, f: u64) -> R<(String, bool)> {
    let (name, module) = (b.u64(f)?, b.u64(f + 8)?);
    let module_path = if module != 0 { Some(b.text(b.u64(module + 8)?)?) } else { None };
    let name = if name != 0 {
        b.text(name)?
    } else {
        let offset = b.u64(f + 0x10)?;
        let m = module_path.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p)).unwrap_or("?");
        format!("<unknown function> 0x{offset:x} [{m}]")
    };
    let marked = marks(&name, module_path.as_deref());
    Ok((name, marked))
}

/// Whether a function (its name, the path of its load module) ends the states of a sample's
/// path: a user function (in the application's binary, not a shared library), an MPI call or a
/// runtime placeholder.
pub(crate) fn marks(name: &str, module_path: Option<&str>) -> bool {
    let bare = name.split(" [").next().unwrap_or(name);
    let mpi = bare.starts_with("MPI_") || bare.starts_with("PMPI_");
    // A runtime placeholder (`<omp barrier wait>`, `<omp idle>`, `<gpu sync>`, `<no activity>`):
    // what the thread did inside the function above it, kept as a state of its own as hpcviewer
    // draws it, so that waiting is never read as the user function computing.
    let placeholder = bare.starts_with('<')
        && bare.ends_with('>')
        && !bare.starts_with("<unknown")
        && !bare.starts_with("<program root");
    let user = module_path.is_some_and(|p| {
        let file = p.rsplit('/').next().unwrap_or(p);
        !file.contains(".so") && !p.starts_with('<') && !p.starts_with('[')
    });
    mpi || user || placeholder
}

/// Each profile's location name and kind, from its identifier tuple.
fn read_profiles(b: &Bytes, kinds: &[String]) -> R<Vec<Option<(String, LocationKind)>>> {
    b.header(b"prof")?;
    let (_, at) = b.section(0)?;
    let (pp, n, sz) = (b.u64(at)?, b.u32(at + 8)?, u64::from(b.u8(at + 12)?));
    if sz < 0x2c && n > 0 {
        return Err(format!("{}: profile entries of {sz} bytes (at least 44)", b.file));
    }
    b.slice(pp, u64::from(n) * sz)?;
    let mut out = Vec::new();
    for k in 0..u64::from(n) {
        let p = pp + k * sz;
        let (tuple, flags) = (b.u64(p + 0x20)?, b.u32(p + 0x28)?);
        if flags & 1 != 0 || tuple == 0 {
            out.push(None);
            continue;
        }
        let ids = b.u16(tuple)?;
        let mut parts = Vec::new();
        let mut gpu = false;
        for j in 0..u64::from(ids) {
            let id = tuple + 8 + 16 * j;
            let (kind, logical) = (b.u8(id)?, b.u32(id + 4)?);
            let name = kinds.get(usize::from(kind)).cloned().unwrap_or_else(|| format!("kind {kind}"));
            gpu |= name.starts_with("GPU");
            if name != "NODE" && name != "CORE" && name != "SUMMARY" {
                let label = match name.as_str() {
                    "GPUCONTEXT" => "GPU context".to_string(),
                    "GPUSTREAM" => "stream".to_string(),
                    "GPUDEVICE" => "GPU".to_string(),
                    other => other.to_ascii_lowercase(),
                };
                parts.push(format!("{label} {logical}"));
            }
        }
        let kind = if gpu { LocationKind::GpuStream } else { LocationKind::CpuThread };
        // A rank's threads and streams under it, as hpcviewer groups them (`rank 1 / thread 0`).
        let name = match parts.split_first() {
            Some((rank, rest)) if rank.starts_with("rank ") && !rest.is_empty() => {
                format!("{rank} / {}", rest.join(" "))
            }
            _ => parts.join(" "),
        };
        out.push(Some((name, kind)));
    }
    Ok(out)
}

fn load(dir: &Path, name: &str, limit: u64, input: &str) -> Result<Vec<u8>, SourceError> {
    let path = dir.join(name);
    let size = std::fs::metadata(&path).map_err(|source| SourceError::Io { input: input.into(), source })?.len();
    if size > limit {
        return Err(SourceError::invalid(input, format!("{name} is larger than {} MB", limit >> 20)));
    }
    std::fs::read(&path).map_err(|source| SourceError::Io { input: input.into(), source })
}

/// The frames of a context's call path, outermost first: (context, name, user or MPI).
type Path_ = Rc<[(u32, u32, bool)]>;

fn frames(meta: &Meta, names: &mut Interner, cache: &mut HashMap<u32, Path_>, ctx: u32) -> Path_ {
    if let Some(p) = cache.get(&ctx) {
        return p.clone();
    }
    let mut path = Vec::new();
    let mut at = ctx;
    // Bounded by the tree's size: a parent chain is never longer than the contexts.
    for _ in 0..=meta.contexts.len() {
        let Some(c) = meta.contexts.get(&at) else { break };
        if let Some((name, marked)) = &c.function {
            path.push((at, names.id(name), *marked));
        }
        if c.parent == 0 || c.parent == at {
            break;
        }
        at = c.parent;
    }
    path.reverse();
    let p: Path_ = path.into();
    cache.insert(ctx, p.clone());
    p
}

/// The states of the trace lines read so far: each sample's call path, cut at the depth drawn,
/// as enters and leaves of its functions.
pub(crate) struct States<'m> {
    meta: &'m Meta,
    depth: Option<usize>,
    names: Interner,
    cache: HashMap<u32, Path_>,
    events: EventTable,
}

impl<'m> States<'m> {
    pub(crate) fn new(meta: &'m Meta, depth: Option<usize>) -> Self {
        States { meta, depth, names: Interner::default(), cache: HashMap::new(), events: EventTable::default() }
    }

    /// The samples of one trace line (bytes `start..end` of `trace.db`) as location `loc`'s.
    fn line(
        &mut self,
        tb: &Bytes,
        loc: u32,
        (start, end): (u64, u64),
        span: (u64, u64),
        repairs: &mut Repairs,
    ) -> R<()> {
        let samples = (start..end).step_by(12).map(|at| Ok((tb.u64(at)?, tb.u32(at + 8)?)));
        self.samples(loc, samples, span, repairs)
    }

    /// A line of samples (time, context; context 0: not running) as location `loc`'s states,
    /// times counted from `t_min`, the last state closed at `t_max`.
    pub(crate) fn samples(
        &mut self,
        loc: u32,
        samples: impl Iterator<Item = R<(u64, u32)>>,
        (t_min, t_max): (u64, u64),
        repairs: &mut Repairs,
    ) -> R<()> {
        let mut open: Path_ = Rc::from(Vec::new());
        let mut last = t_min;
        for sample in samples {
            let (time, ctx) = sample?;
            let time = time.max(t_min);
            if time < last {
                repairs.add("samples earlier than the one before them read at its time", || format!("line {loc}"));
            }
            let time = time.max(last);
            last = time;
            if ctx != 0 && !self.meta.contexts.contains_key(&ctx) {
                repairs.add("samples of a context the database does not list read as not running", || {
                    format!("context {ctx}")
                });
            }
            let mut path =
                if ctx == 0 { Rc::from(Vec::new()) } else { frames(self.meta, &mut self.names, &mut self.cache, ctx) };
            let keep = match self.depth {
                Some(d) => d.min(path.len()),
                None => path.iter().rposition(|f| f.2).map_or(path.len(), |k| k + 1),
            };
            if keep < path.len() {
                path = path[..keep].into();
            }
            let common = open.iter().zip(path.iter()).take_while(|(a, b)| a.0 == b.0).count();
            for f in open[common..].iter().rev() {
                self.events.push(loc, time - t_min, EventKind::Leave, f.1);
            }
            for f in &path[common..] {
                self.events.push(loc, time - t_min, EventKind::Enter, f.1);
            }
            open = path;
        }
        let close = t_max.max(last) - t_min;
        for f in open.iter().rev() {
            self.events.push(loc, close, EventKind::Leave, f.1);
        }
        Ok(())
    }

    /// The trace of the lines read, its locations named `names` (in nanoseconds).
    pub(crate) fn finish(self, names: Vec<String>, repairs: &mut Repairs) -> exaviz_model::Trace {
        let States { names: regions, mut events, .. } = self;
        events.ticks_per_second = 1_000_000_000;
        events.names = regions.names;
        events.location_names = names;
        crate::events::trace_of(&events, repairs)
    }
}

/// The depth a query asks for (`depth=N`, from 1), where it asks.
pub(crate) fn depth_of(query: Option<&Query>) -> Result<Option<usize>, SourceError> {
    let Some(q) = query else { return Ok(None) };
    q.only(&["depth"], "an HPCToolkit database")?;
    q.get("depth")
        .map(|v| {
            v.parse::<usize>()
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| q.invalid(format!("depth={v} is not a depth from 1")))
        })
        .transpose()
}

/// Opens an HPCToolkit database folder (`DIR` or `DIR?depth=N`).
pub fn open(
    input: &str,
    dir: &Path,
    query: Option<&Query>,
    progress: &dyn Fn(u64, u64),
) -> Result<Dataset, SourceError> {
    let depth = depth_of(query)?;
    let bad = |m: String| SourceError::invalid(input, m);
    let meta_bytes = load(dir, "meta.db", MAX_META, input)?;
    let meta = read_meta(&Bytes { b: &meta_bytes, file: "meta.db" }).map_err(bad)?;
    drop(meta_bytes);
    let prof_bytes = load(dir, "profile.db", MAX_META, input)?;
    let profiles = read_profiles(&Bytes { b: &prof_bytes, file: "profile.db" }, &meta.kinds).map_err(bad)?;
    drop(prof_bytes);
    let trace_path: PathBuf = dir.join("trace.db");
    if !trace_path.is_file() {
        return Err(bad("holds a profile but no trace.db (run hpcrun with -t to trace)".into()));
    }
    let trace_bytes = load(dir, "trace.db", u64::MAX, input)?;
    let tb = Bytes { b: &trace_bytes, file: "trace.db" };
    tb.header(b"trce").map_err(bad)?;
    let (_, at) = tb.section(0).map_err(bad)?;
    let (pt, n, sz) = (tb.u64(at).map_err(bad)?, tb.u32(at + 8).map_err(bad)?, u64::from(tb.u8(at + 12).map_err(bad)?));
    let (t_min, t_max) = (tb.u64(at + 0x10).map_err(bad)?, tb.u64(at + 0x18).map_err(bad)?);
    if sz < 0x18 && n > 0 {
        return Err(bad(format!("trace.db: trace headers of {sz} bytes (at least 24)")));
    }
    tb.slice(pt, u64::from(n) * sz).map_err(bad)?;
    let mut repairs = Repairs::default();
    let mut lines: Vec<(String, LocationKind, u64, u64)> = Vec::new();
    for k in 0..u64::from(n) {
        let h = pt + k * sz;
        let (prof, start, end) = (tb.u32(h).map_err(bad)?, tb.u64(h + 8).map_err(bad)?, tb.u64(h + 16).map_err(bad)?);
        let Some(Some((name, kind))) = profiles.get(prof as usize) else {
            repairs.add("trace lines of a profile profile.db does not list skipped", || format!("profile {prof}"));
            continue;
        };
        if end < start || (end - start) % 12 != 0 {
            return Err(bad(format!("trace.db: trace line {k} spans bytes {start} to {end}, not whole samples")));
        }
        tb.slice(start, end - start).map_err(bad)?;
        lines.push((name.clone(), *kind, start, end));
    }
    // Single-threaded ranks are named by their rank alone.
    if lines.iter().all(|l| l.0.ends_with(" / thread 0") && l.0.matches(" thread ").count() == 1) {
        for l in &mut lines {
            l.0.truncate(l.0.len() - " / thread 0".len());
        }
    }
    // Rows in the order of their names' numbers (rank, then thread or stream).
    lines.sort_by_key(|l| natural(&l.0));
    let mut states = States::new(&meta, depth);
    let total: u64 = lines.iter().map(|l| l.3 - l.2).sum();
    let mut done = 0u64;
    for (loc, (_, _, start, end)) in lines.iter().enumerate() {
        states.line(&tb, loc as u32, (*start, *end), (t_min, t_max), &mut repairs).map_err(bad)?;
        done += end - start;
        progress(done, total);
    }
    let mut t = states.finish(lines.iter().map(|l| l.0.clone()).collect(), &mut repairs);
    t.locations.kind = lines.iter().map(|l| l.1).collect();
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace: t, warnings, ..Default::default() })
}

/// A name's words with numbers compared as numbers ("rank 10" after "rank 9").
fn natural(s: &str) -> Vec<(String, u64)> {
    s.split(' ')
        .map(|w| match w.parse::<u64>() {
            Ok(n) => (String::new(), n),
            Err(_) => (w.to_string(), 0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real ping-pong database's files mutated (bytes flipped, cut short, duplicated): a
    /// trace or one line naming the database, never a panic.
    #[test]
    fn mutated_databases_give_a_trace_or_one_line() {
        let Some(real) = exaviz_model::testing::shared_data("hpctoolkit-pingpong") else { return };
        let dir = std::env::temp_dir().join(format!("exaviz-hpctk-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = ["meta.db", "profile.db", "trace.db"];
        let original: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(real.join(f)).unwrap()).collect();
        let cases = (0..files.len())
            .flat_map(|k| crate::fuzz::mutations(&original[k], 120, 20 + k as u64).into_iter().map(move |m| (k, m)));
        let (opened, refused) = crate::fuzz::tally(
            "db",
            cases.map(|(k, m)| {
                for (j, f) in files.iter().enumerate() {
                    std::fs::write(dir.join(f), if j == k { &m } else { &original[j] }).unwrap();
                }
                open("db", &dir, None, &|_, _| {})
            }),
        );
        assert!(opened > 50 && refused > 50, "{opened} opened, {refused} refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
