//! Sources for exaviz: files (format detected from content) and generators (`gen:NAME?k=v&...`).
//!
//! Every source yields an [`exaviz_engine::dataset::Dataset`]. Errors name the input and what is
//! wrong in one line; counts read from files never size an allocation before they are checked.

pub mod edges_csv;
pub mod events;
pub mod fattree;
pub mod formats;
pub mod generators;
pub mod kept_store;
mod matching;
pub mod query;
pub mod rng;
pub mod sidecar;
pub mod store;
pub mod torus;

use std::path::Path;

use exaviz_engine::dataset::Dataset;

pub use generators::{GENERATORS, MAX_STORE_MESSAGES, fattree_dataset, fattree_gen, training_dataset, training_spec};
pub use query::Query;

/// Largest torus accepted from a file or a generator (nodes); larger ones are refused up front.
pub const MAX_NODES: u64 = 1 << 24;
/// Largest number of generated messages (~32 bytes each resident).
pub const MAX_MESSAGES: u64 = 200_000_000;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{input}: {message}")]
    Invalid { input: String, message: String },
    #[error("{input}: {source}")]
    Io { input: String, source: std::io::Error },
}

impl SourceError {
    pub fn invalid(input: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid { input: input.into(), message: message.into() }
    }
}

/// The first `limit` bytes of a file, decompressed where it is gzip (by its first bytes);
/// `None` where it cannot be opened or nothing could be read.
pub(crate) fn head_of(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    let mut magic = [0u8; 2];
    let mut f = std::io::BufReader::new(file);
    f.read_exact(&mut magic).ok()?;
    let rest = std::io::Cursor::new(magic).chain(f);
    let read = if magic == [0x1f, 0x8b] {
        flate2::read::MultiGzDecoder::new(rest).take(limit).read_to_end(&mut head)
    } else {
        rest.take(limit).read_to_end(&mut head)
    };
    (read.is_ok() || !head.is_empty()).then_some(head)
}

/// What a reader repaired to open a file, as the trusted peers (Vampir, `otf2-print`, Perfetto,
/// chrome://tracing) accept it: per kind of repair, how often and where first. Each kind becomes
/// one warning line.
#[derive(Clone, Debug, Default)]
pub struct Repairs {
    kinds: Vec<(&'static str, u64, String)>,
}

impl Repairs {
    /// One more repair of kind `what`; `first` says where, asked only the first time.
    pub fn add(&mut self, what: &'static str, first: impl FnOnce() -> String) {
        match self.kinds.iter_mut().find(|k| k.0 == what) {
            Some(k) => k.1 += 1,
            None => self.kinds.push((what, 1, first())),
        }
    }

    /// How many repairs of kind `what`.
    pub fn count(&self, what: &str) -> u64 {
        self.kinds.iter().find(|k| k.0 == what).map_or(0, |k| k.1)
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Adds `other`'s counts to these (its first places where these have none).
    pub fn merge(&mut self, other: &Repairs) {
        for (what, n, first) in &other.kinds {
            match self.kinds.iter_mut().find(|k| k.0 == *what) {
                Some(k) => k.1 += n,
                None => self.kinds.push((what, *n, first.clone())),
            }
        }
    }

    /// One line each: "INPUT: N WHAT (first: WHERE)".
    pub fn lines(&self, input: &str) -> Vec<String> {
        self.kinds.iter().map(|(what, n, first)| format!("{input}: {n} {what} (first: {first})")).collect()
    }
}

/// Opens an input: a `gen:` generator spec or a path to a supported file.
pub fn open(input: &str) -> Result<Dataset, SourceError> {
    open_with_progress(input, &|_, _| {})
}

/// [`open`], calling `progress(done, total)` in bytes while reading formats that can tell
/// (OTF2 event files). A trace held in memory with more rows than a picture reads at once gets
/// its index ([`exaviz_engine::held_index::index`]), so that views draw wide windows from it: a
/// file's index is kept beside it and read when the file is opened again ([`sidecar`]).
pub fn open_with_progress(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    // A run of profiles too large to hold opens from the store kept beside it.
    if let Some(kept) = kept_store::open(input, progress) {
        return kept;
    }
    let mut dataset = read(input, progress)?;
    let _ = sidecar::attach(input, &mut dataset);
    Ok(dataset)
}

/// What a folder without trace files holds that exaviz opens: files of another format in it,
/// OTF2 archives, stores and TreeScope directories one level down, named with what to pass
/// instead; else what it holds.
fn inputs_below(dir: &Path) -> String {
    let mut found: Vec<String> = Vec::new();
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    entries.sort();
    let (mut files, mut folders) = (Vec::new(), 0usize);
    for sub in &entries {
        let name = sub.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let what = if sub.is_file() {
            files.push(name.clone());
            let text = sub.display().to_string();
            let probe = formats::Probe::new(&text, sub, None);
            formats::detect(&probe).filter(|f| f.name != "profiles").map(|f| format!("{} ({})", sub.display(), f.title))
        } else if name.ends_with(sidecar::SUFFIX) {
            // The index kept beside a trace, not an input of its own.
            None
        } else {
            folders += 1;
            if let Some(anchor) = formats::otf2::anchor_in(sub) {
                Some(anchor.display().to_string())
            } else if store::is_store(sub) || fattree::files::is_dir(sub) || formats::hpctoolkit::is_database(sub) {
                Some(sub.display().to_string())
            } else {
                None
            }
        };
        found.extend(what);
    }
    if let Some(first) = found.first() {
        let more = if found.len() > 1 { format!(" (or one of {} more)", found.len() - 1) } else { String::new() };
        return format!(
            "holds no run of profiles, but {} input{} exaviz opens: pass {first}{more}",
            found.len(),
            if found.len() == 1 { "" } else { "s" }
        );
    }
    let shown: Vec<&str> = files.iter().take(4).map(String::as_str).collect();
    let files_part = match files.len() {
        0 => "no files".to_string(),
        n => format!(
            "{n} file{} ({}{})",
            if n == 1 { "" } else { "s" },
            shown.join(", "),
            if n > 4 { ", ..." } else { "" }
        ),
    };
    format!(
        "holds no trace files (.json, .json.gz, .pfw, .xplane.pb) nor any other input exaviz opens: it holds {files_part} and {folders} folder{}",
        if folders == 1 { "" } else { "s" }
    )
}

/// The dataset of `input`, without an index: a generator, a comma-separated list of one run's
/// files, or a file or folder opened by the first format of [`formats::FORMATS`] that claims it.
fn read(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    if input.starts_with("gen:") {
        return generators::generate(input);
    }
    let whole = Path::new(input);
    if input.contains(',') && !whole.exists() {
        let paths: Vec<std::path::PathBuf> = input.split(',').filter(|p| !p.is_empty()).map(Into::into).collect();
        return formats::dnn::open(input, &paths);
    }
    let (path, query) = with_query(input)?;
    if !path.exists() {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory (os error 2)");
        return Err(SourceError::Io { input: input.to_string(), source });
    }
    let probe = formats::Probe::new(input, path, query);
    let Some(format) = formats::detect(&probe) else {
        if let Err(source) = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut [0u8; 1])) {
            return Err(SourceError::Io { input: input.to_string(), source });
        }
        return Err(SourceError::invalid(
            input,
            format!("unrecognised format (exaviz reads: {}; or a gen: generator)", formats::titles()),
        ));
    };
    check_options(format, &probe)?;
    (format.open)(&probe, progress)
}

/// `PATH?key=value`: the path, and the options of the format at it.
fn with_query(input: &str) -> Result<(&Path, Option<Query>), SourceError> {
    let whole = Path::new(input);
    Ok(match input.rsplit_once('?') {
        Some((p, q)) if !whole.exists() && Path::new(p).exists() => (Path::new(p), Some(Query::parse(input, q)?)),
        _ => (whole, None),
    })
}

/// Whether the options given are the format's.
fn check_options(format: &formats::Format, probe: &formats::Probe) -> Result<(), SourceError> {
    if let Some(q) = &probe.query {
        let article = if format.title.starts_with(|c: char| c.is_uppercase()) { "a " } else { "" };
        let whose = format!("{article}{}", format.title);
        if format.options.is_empty() {
            return Err(q.invalid(format!("{whose} takes no options after '?'")));
        }
        q.only(format.options, &whose)?;
    }
    Ok(())
}

/// The `strict` option of a run's folder (`RUN?strict=1`): refuse the run where a file does
/// not read.
fn strict_option(input: &str, query: Option<&query::Query>) -> Result<bool, SourceError> {
    match query.and_then(|q| q.get("strict")) {
        None | Some("0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        Some(other) => Err(SourceError::invalid(input, format!("option strict={other} is not 1 or 0"))),
    }
}

/// A folder of one run's profiles (Kineto ranks, a JAX log folder, execution traces); where it
/// holds none, what it holds instead: HLO modules, or inputs in its folders.
fn profile_dir(
    input: &str,
    path: &Path,
    query: Option<&query::Query>,
    progress: &dyn Fn(u64, u64),
) -> Result<Dataset, SourceError> {
    let strict = strict_option(input, query)?;
    formats::dnn::open_dir(input, path, strict, progress).map_err(|e| {
        if !e.to_string().contains("holds no trace files") {
            return e;
        }
        let modules = formats::hlo::modules_in(path);
        if let Some(first) = modules.first() {
            let hint = format!(
                "holds {} XLA HLO module(s), not a trace: pass one of them, e.g. {}",
                modules.len(),
                first.display()
            );
            return SourceError::invalid(input, hint);
        }
        SourceError::invalid(input, inputs_below(path))
    })
}

/// What `exaviz info --json` prints of a dataset (Python's `Trace.info()` too): its summary, a
/// training run's devices and stages, the operator graph beside a profile.
pub fn info_json(d: &Dataset) -> serde_json::Value {
    let training = d.training.as_deref().map(|t| {
        let stages = t.devices.iter().map(|d| d.stage).max().map_or(0, |s| s + 1);
        serde_json::json!({"devices": t.devices.len(), "stages": stages, "stages_from": t.stages_from, "source": t.source})
    });
    let graph = d.opgraph.as_deref().map(|g| {
        serde_json::json!({"source": g.source, "name": g.name, "operators": g.nodes.len(), "data_edges": g.edges.len()})
    });
    let mut v = serde_json::to_value(d.summary()).unwrap_or_default();
    if let Some(object) = v.as_object_mut() {
        object.insert("training".into(), training.unwrap_or(serde_json::Value::Null));
        object.insert("graph".into(), graph.unwrap_or(serde_json::Value::Null));
    }
    v
}

/// Writes any input into a store at `target` (through a temporary folder, renamed at the end),
/// reporting `progress(done, total)`: scaled generators stream iteration by iteration without
/// holding the trace; other inputs are read, then written.
pub fn convert(input: &str, target: &Path, progress: &dyn Fn(u64, u64)) -> Result<store::Manifest, SourceError> {
    if input.starts_with("gen:") {
        let (g, q) = generators::parse(input)?;
        // Only the scaled FD4 generator streams; the others are made in memory, then written.
        if q.all_in(&["seed", "collectives", "ranks", "messages"])
            && let Some(scale) = generators::scaled(g.name, &q)?
        {
            let span = store::PyramidSpan {
                t0: 0,
                t1: scale.end_ticks(),
                ranks: scale.ranks,
                states: scale.skeleton("").trace.region_names.len() as u32,
            };
            let mut w = store::StoreWriter::create(target)?.with_pyramid(span);
            w.begin_messages()?;
            w.begin_intervals()?;
            w.begin_collectives()?;
            let mut done = 0u64;
            scale.generate(|chunk| {
                w.messages(&chunk.messages)?;
                w.intervals(&chunk.intervals)?;
                w.collectives(&chunk.collectives)?;
                done += chunk.messages.source.len() as u64;
                progress(done, scale.messages);
                Ok::<(), SourceError>(())
            })?;
            return w.finish(&scale.skeleton(input));
        }
    }
    // A format that streams converts a row group at a time, whatever the trace's size.
    let (path, query) = with_query(input)?;
    if path.exists() && !store::is_store(path) {
        let probe = formats::Probe::new(input, path, query);
        if let Some(format) = formats::detect(&probe)
            && let Some(stream) = format.stream
        {
            check_options(format, &probe)?;
            return stream(&probe, target, progress);
        }
    }
    let dataset = if store::is_store(path) {
        let d = store::open_with(path, progress, store::MAX_IN_MEMORY_ROWS)?;
        if d.out_of_core.is_some() {
            return Err(SourceError::invalid(
                input,
                "is a store too large to rewrite in memory; copy its folder to duplicate it",
            ));
        }
        d
    } else {
        read(input, progress)?
    };
    store::write(&dataset, target)
}

/// A TreeScope directory (`DIR` or `DIR?year=2017`, the job log's year) as a dataset, with what
/// was repaired as warnings.
fn fattree_dir(p: &formats::Probe) -> Result<Dataset, SourceError> {
    let year = match &p.query {
        Some(q) => q
            .get("year")
            .map(|v| {
                let y = v.parse::<i64>().ok().filter(|y| (1970..=9999).contains(y));
                y.ok_or_else(|| q.invalid(format!("year={v} is not a year from 1970 to 9999")))
            })
            .transpose()?,
        None => None,
    };
    let mut repairs = Repairs::default();
    let tree = fattree::files::load_with_repairs(p.path, year, &mut repairs)?;
    let mut d = fattree_dataset(p.input, tree);
    d.warnings = repairs.lines(p.input);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_errors_name_the_problem() {
        let e = open("gen:torus-sim?dims=4x4&colour=red").unwrap_err().to_string();
        assert_eq!(
            e,
            "gen:torus-sim?dims=4x4&colour=red: unknown option 'colour' for gen:torus-sim (expected dims, steps, seed)"
        );
        assert!(open("gen:nope").unwrap_err().to_string().contains("unknown generator 'nope'"));
        assert!(open("gen:torus?dims=4xq").unwrap_err().to_string().contains("dims"));
        assert!(open("gen:torus-sim?dims=1024x1024x1024").unwrap_err().to_string().contains("limit"));
        assert!(open("gen:torus-sim?steps=ten").unwrap_err().to_string().contains("not a whole number"));
        let e = open("gen:pf3d?dims=4x4&grid=4x4").unwrap_err().to_string();
        assert_eq!(e, "gen:pf3d?dims=4x4&grid=4x4: grid '4x4' must be three extents like 16x32x32");
        let e = open("gen:pf3d?dims=4x4&grid=4x4x4").unwrap_err().to_string();
        assert!(e.contains("grid 4x4x4 has 64 cubes"), "{e}");
        assert!(open("gen:pf3d?threads=0").unwrap_err().to_string().contains("threads=0"));
    }

    /// A folder without a run of profiles says what it holds instead: a file of another
    /// format to pass, or its files and folders.
    #[test]
    fn folders_without_profiles_say_what_they_hold() {
        let dir = std::env::temp_dir().join(format!("exaviz-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("notes.txt"), "nothing").unwrap();
        let e = open(dir.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("nor any other input exaviz opens: it holds 1 file (notes.txt) and 1 folder"), "{e}");
        std::fs::write(dir.join("run.prv"), "#Paraver (01/01/24 at 00:00):10:0:1:1(1:0)\n1:1:1:1:1:0:10:1\n").unwrap();
        let e = open(dir.to_str().unwrap()).unwrap_err().to_string();
        assert!(
            e.contains("holds no run of profiles, but 1 input exaviz opens: pass")
                && e.contains("run.prv (Paraver trace)"),
            "{e}"
        );
        // Options of a format that takes none, and unknown ones, are named.
        let e = open(&format!("{}?depth=2", dir.join("run.prv").display())).unwrap_err().to_string();
        assert!(e.contains("a Paraver trace takes no options after '?'"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_is_an_io_error_naming_it() {
        let e = open("/nonexistent/trace.yaml").unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/trace.yaml: "), "{e}");
    }

    /// A scaled generator streamed into a store holds what the in-memory path generates:
    /// the same counts, rows and byte sums.
    #[test]
    fn convert_streams_a_scaled_generator_into_a_store() {
        let dir = std::env::temp_dir().join(format!("exaviz-convert-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = "gen:fd4?ranks=3000&messages=1e5&collectives=3";
        let target = dir.join("t.exaviz");
        let seen = std::cell::Cell::new((0, 0));
        let m = convert(spec, &target, &|d, t| seen.set((d, t))).unwrap();
        assert_eq!(seen.get(), (100_000, 100_000));
        assert_eq!(m.rows("messages"), 100_000);
        assert!(m.sorted.iter().all(|s| s.1), "{:?}", m.sorted);
        let memory = open(spec).unwrap();
        let stored = open(target.to_str().unwrap()).unwrap();
        assert_eq!(memory.summary(), stored.summary());
        let (a, b) = (&memory.trace, &stored.trace);
        assert_eq!(a.messages.send_time, b.messages.send_time);
        assert_eq!(
            a.messages.bytes.iter().map(|&v| u64::from(v)).sum::<u64>(),
            b.messages.bytes.iter().map(|&v| u64::from(v)).sum::<u64>()
        );
        assert_eq!(a.intervals.start, b.intervals.start);
        assert_eq!(a.collectives.location.len(), b.collectives.location.len());
        assert_eq!(a.collectives.location.len(), 3000 * 3, "iterations 3, 6 and 9 of 9");
        // The pyramid summed while streaming holds every message and every interval's ticks.
        let p = store::pyramid(&target).unwrap().expect("a pyramid");
        let top = p.levels.last().unwrap();
        assert_eq!(top.counts.iter().sum::<u64>(), 100_000);
        let ticks: u64 = a.intervals.start.iter().zip(&a.intervals.end).map(|(s, e)| e - s).sum();
        assert_eq!(top.ticks.iter().sum::<u64>(), ticks);
        // Non-scaled inputs go through memory; errors name the input.
        convert("gen:lulesh?iterations=2", &dir.join("l.exaviz"), &|_, _| {}).unwrap();
        let e = convert("gen:fd4?ranks=1e9", &dir.join("x.exaviz"), &|_, _| {}).unwrap_err().to_string();
        assert!(e.starts_with("gen:fd4?ranks=1e9: option ranks=1000000000 is above the limit"), "{e}");
        let e = convert("gen:fd4?ranks=64&plant=1", &dir.join("x.exaviz"), &|_, _| {}).unwrap_err().to_string();
        assert!(e.contains("plant does not go with ranks and messages"), "{e}");
        let e = open("gen:fd4?ranks=65536&messages=1e9").unwrap_err().to_string();
        assert!(e.contains("above the in-memory limit") && e.contains("exaviz convert"), "{e}");
        assert!(!dir.join("x.exaviz").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
