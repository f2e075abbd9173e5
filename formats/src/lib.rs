//! Every format exaviz reads, in one table ([`FORMATS`]): a file (or folder) per format here,
//! each with the same shape: how it is told from its content (a file's first bytes, a folder's
//! members), how it opens (with progress where it can tell), what it gives. `exaviz_datasets::open`
//! walks the table in order and opens with the first format that claims the input; the CLI's
//! `--help`, the unrecognised-format error, `docs/formats.md`'s table and Python's
//! `exaviz.formats()` are drawn from it. Readers follow their tool's own documentation and
//! reader, and share what every reader needs from here: names interned once, text read line by
//! line through gzip where the file is compressed, bytes counted for a progress bar, protobuf's
//! wire format.

pub mod boxfish;
pub mod caliper;
pub mod chakra;
pub mod chrome;
pub mod darshan;
pub mod dnn;
pub mod edges_csv;
pub mod et;
pub mod events;
pub mod hlo;
pub mod hpctoolkit;
pub mod hpctoolkit_xml;
mod matching;
pub mod nsys;
mod open;
pub mod otf2;
pub mod paraver;
pub mod perfetto;
pub mod projections;
pub(crate) mod protobuf;
pub mod run_stream;
pub mod treescope;
pub mod xplane;

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use exaviz_model::dataset::Dataset;
use exaviz_model::query::Query;
use exaviz_model::source::SourceError;

pub use open::{check_options, head_of, read, with_query};
pub(crate) use open::{profile_dir, rank_option, strict_option};

/// An input as the formats see it: the text given, its path (options after `?` split off where
/// the path before them exists) and, for a file, its first bytes as stored and decompressed.
pub struct Probe<'a> {
    pub input: &'a str,
    pub path: &'a Path,
    /// The options of `PATH?key=value` inputs (`DIR?year=2017`, `DATABASE?depth=3`).
    pub query: Option<Query>,
    head: std::cell::OnceCell<Vec<u8>>,
    plain: std::cell::OnceCell<Vec<u8>>,
}

impl<'a> Probe<'a> {
    pub fn new(input: &'a str, path: &'a Path, query: Option<Query>) -> Self {
        Self { input, path, query, head: Default::default(), plain: Default::default() }
    }

    /// A file's first 4 KiB as stored (empty for a folder or an unreadable file).
    pub fn head(&self) -> &[u8] {
        self.head.get_or_init(|| {
            use std::io::Read;
            let mut buf = Vec::new();
            if self.path.is_file()
                && let Ok(f) = std::fs::File::open(self.path)
            {
                let _ = f.take(4096).read_to_end(&mut buf);
            }
            buf
        })
    }

    /// A file's first 4 KiB, decompressed where it is gzip.
    pub fn plain_head(&self) -> &[u8] {
        self.plain.get_or_init(|| {
            if self.path.is_file() { crate::head_of(self.path, 4096).unwrap_or_default() } else { Vec::new() }
        })
    }

    pub fn is_dir(&self) -> bool {
        self.path.is_dir()
    }

    /// The file's name ends with one of `suffixes`.
    pub fn named(&self, suffixes: &[&str]) -> bool {
        let name = self.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        suffixes.iter().any(|s| name.ends_with(s))
    }
}

/// How a format opens a probed input, reporting `progress(done, total)` where it can tell.
pub type Opener = fn(&Probe, &dyn Fn(u64, u64)) -> Result<Dataset, SourceError>;

/// How a format converts a probed input into a store at a path a row group at a time, in
/// bounded memory, reporting progress.
pub type Streamer = fn(&Probe, &Path, &dyn Fn(u64, u64)) -> Result<exaviz_store::Manifest, SourceError>;

/// One format: what the docs and `--help` say of it, and how it is detected and opened.
pub struct Format {
    /// A short identifier (`paraver`).
    pub name: &'static str,
    /// What it is (`Paraver trace`).
    pub title: &'static str,
    /// The tools that write it.
    pub tools: &'static str,
    /// The files or folder to pass.
    pub files: &'static str,
    /// What exaviz reads of it, in a line.
    pub gives: &'static str,
    /// The options it takes after `?` (`DIR?year=2017`).
    pub options: &'static [&'static str],
    pub detect: fn(&Probe) -> bool,
    pub open: Opener,
    /// Where the format converts into a store without holding the trace (`exaviz convert`).
    pub stream: Option<Streamer>,
}

/// Every format, in the order the detectors are tried: folders first (a store, a TreeScope
/// directory, an HPCToolkit database, Projections logs, an OTF2 archive, then any other folder
/// as a run's profiles), then files by their content.
pub static FORMATS: &[Format] = &[
    Format {
        name: "store",
        title: "exaviz store",
        tools: "exaviz convert",
        files: "STORE/",
        gives: "the trace it was converted from, read by time window (any size)",
        options: &[],
        detect: |p| exaviz_store::is_store(p.path),
        open: |p, progress| exaviz_store::open(p.path, progress),
        stream: None,
    },
    Format {
        name: "treescope",
        title: "TreeScope data directory",
        tools: "TreeScope's collectors",
        files: "DIR/ or DIR?year=YYYY",
        gives: "a fat tree (`network.topo`, `*.count`, `*.rtable`, the job log): its routing, jobs and per-port counters; `year` is the job log's year",
        options: &["year"],
        detect: |p| crate::treescope::is_dir(p.path),
        open: |p, _| crate::treescope::fattree_dir(p),
        stream: None,
    },
    Format {
        name: "hpctoolkit",
        title: "HPCToolkit database",
        tools: "HPCToolkit (hpcrun -t, then hpcprof)",
        files: "DB/ or DB?depth=N",
        gives: "`meta.db`, `profile.db`, `trace.db` (or, from hpcprof before 2023, `experiment.xml` and the `*.hpctrace` files): ranks, threads and GPU streams; each sample's call path as nested states, down to the deepest user function or MPI call, or `depth` functions (or `--depth N`)",
        options: &["depth"],
        detect: |p| {
            hpctoolkit::is_database(p.path)
                || (p.named(&["meta.db"]) && p.path.parent().is_some_and(hpctoolkit::is_database))
                || hpctoolkit_xml::is_xml_database(p.path)
                || (p.named(&["experiment.xml"]) && p.path.parent().is_some_and(hpctoolkit_xml::is_xml_database))
        },
        open: |p, progress| {
            let dir = if p.is_dir() { p.path } else { p.path.parent().unwrap_or(p.path) };
            if hpctoolkit::is_database(dir) {
                hpctoolkit::open(p.input, dir, p.query.as_ref(), progress)
            } else {
                hpctoolkit_xml::open(p.input, dir, p.query.as_ref(), progress)
            }
        },
        stream: None,
    },
    Format {
        name: "darshan",
        title: "Darshan log with DXT traces",
        tools: "Darshan 3 (darshan-runtime with DXT_ENABLE_IO_TRACE=1)",
        files: "NAME.darshan",
        gives: "DXT's I/O segments (POSIX and MPI-IO): each rank's I/O a row per module, each write or read an interval named by the operation and the file, its length and offset samples of the counters `write bytes`, `read bytes`, `write offset` and `read offset`",
        options: &[],
        detect: |p| darshan::looks_like(p.head()),
        open: |p, progress| darshan::open(p.input, p.path, progress),
        stream: None,
    },
    Format {
        name: "caliper",
        title: "Caliper event trace",
        tools: "LLNL Caliper (event trace: the event, trace and recorder services)",
        files: "NAME.cali",
        gives: "the `__rec=` records: each process (`mpi.rank`) and thread a row; annotations begun and ended (`event.begin#A`, `event.end#A`, `event.set#A`) as nested regions named `A=value`, timed by `time.offset`, or placed from their `time.inclusive.duration` where the trace has no time stamps (said in a warning)",
        options: &[],
        detect: |p| caliper::looks_like(p.head()),
        open: |p, progress| caliper::open(p.input, p.path, progress),
        stream: None,
    },
    Format {
        name: "projections",
        title: "Charm++ Projections logs",
        tools: "Charm++ (+traceprojections)",
        files: "NAME.sts or its folder",
        gives: "the `.sts` and each PE's `NAME.PE.log[.gz]`: PEs, entry methods and idle time as states, messages from creation to processing",
        options: &[],
        detect: |p| (p.is_dir() && projections::sts_in(p.path).is_some()) || projections::looks_like_sts(p.head()),
        open: |p, progress| {
            let sts = if p.is_dir() { projections::sts_in(p.path).unwrap_or_default() } else { p.path.to_path_buf() };
            projections::open(p.input, &sts, progress)
        },
        stream: None,
    },
    Format {
        name: "otf2",
        title: "OTF2 archive",
        tools: "Score-P, APEX",
        files: "traces.otf2 or its folder",
        gives: "typed locations, regions, MPI messages and collectives, metrics as counters",
        options: &[],
        detect: |p| (p.is_dir() && otf2::anchor_in(p.path).is_some()) || otf2::looks_like_anchor(p.head()),
        open: |p, progress| {
            let anchor = if p.is_dir() { otf2::anchor_in(p.path).unwrap_or_default() } else { p.path.to_path_buf() };
            otf2::load_with_progress(&anchor, progress)
        },
        stream: None,
    },
    Format {
        name: "chakra",
        title: "Chakra execution trace",
        tools: "MLCommons Chakra (chakra_converter, from PyTorch execution traces)",
        files: "NAME.RANK.et or their folder (DIR?rank=N)",
        gives: "a training step's operator graph: operations, data and control dependencies, collectives by their communication type; of a folder, the lowest rank's (`rank=N` or `--rank N` another)",
        options: &["rank"],
        detect: |p| if p.is_dir() { !chakra::traces_in(p.path).is_empty() } else { chakra::looks_like(p.plain_head()) },
        open: |p, _| {
            let mut ranks = if p.is_dir() { chakra::traces_in(p.path) } else { vec![p.path.to_path_buf()] };
            let rank = rank_option(p.input, p.query.as_ref())?;
            let first = dnn::graph_of_rank(p.input, &mut ranks, rank)?.unwrap_or_default();
            let (mut graph, mut warnings) = chakra::read(p.input, &first)?;
            if ranks.len() > 1 {
                graph.partitions = ranks.len() as u32;
                warnings.push(format!(
                    "{}: {} traces, one per rank; the operator graph drawn is {} ({}): DIR?rank=N or --rank N draws another",
                    p.input,
                    ranks.len(),
                    rank.map_or_else(|| "the first rank's".to_string(), |r| format!("rank {r}'s")),
                    first.display()
                ));
            }
            Ok(Dataset {
                name: p.input.to_string(),
                opgraph: Some(std::sync::Arc::new(graph)),
                warnings,
                ..Default::default()
            })
        },
        stream: None,
    },
    Format {
        name: "profiles",
        title: "a run's folder of profiles",
        tools: "PyTorch profiler (Kineto), JAX (jax.profiler), PyTorch execution traces",
        files: "RUN/ or RUN?strict=1 or RUN?rank=N",
        gives: "one `*.json[.gz]` per rank, a JAX log folder, execution traces beside them or alone (one per rank): one training run, its devices, stages, operators and collectives, and the operator graph of one rank's execution trace (the lowest rank's; `rank=N` or `--rank N` another); the files are parsed in parallel, and one that does not read is left out with a warning (`strict=1` or `--strict` refuses the run instead)",
        options: &["strict", "rank"],
        detect: |p| p.is_dir(),
        open: |p, progress| crate::profile_dir(p.input, p.path, p.query.as_ref(), progress),
        stream: Some(|p, target, progress| {
            let strict = crate::strict_option(p.input, p.query.as_ref())?;
            run_stream::convert(p.input, p.path, strict, target, progress)
        }),
    },
    Format {
        name: "xplane",
        title: "XPlane profile",
        tools: "JAX, TensorFlow (jax.profiler, xprof)",
        files: "HOST.xplane.pb",
        gives: "XLA ops per device, collective-permute pairs from the HLO in its metadata; `StepTraceAnnotation` slices (a `step_num` stat) as the run's steps for `exaviz diff`",
        options: &[],
        detect: |p| xplane::is_xplane(p.path),
        open: |p, _| dnn::open_xplane(p.input, p.path),
        stream: None,
    },
    Format {
        name: "paraver",
        title: "Paraver trace",
        tools: "Extrae, MPItrace",
        files: "NAME.prv[.gz]",
        gives: "with `NAME.pcf` and `NAME.row` beside it: threads, states, MPI calls and user functions, messages, collectives, hardware counters",
        options: &[],
        detect: |p| paraver::looks_like(p.plain_head()),
        open: |p, progress| paraver::open(p.input, p.path, progress),
        stream: Some(|p, target, progress| paraver::convert(p.input, p.path, target, progress)),
    },
    Format {
        name: "perfetto",
        title: "Perfetto protobuf trace",
        tools: "rocprof-sys (omnitrace), the Perfetto SDK, Chrome",
        files: "NAME.pftrace, .proto",
        gives: "process, thread and custom tracks, nested slices, counters, flows as messages",
        options: &[],
        detect: |p| perfetto::looks_like(p.plain_head()),
        open: |p, progress| perfetto::open(p.input, p.path, progress),
        stream: None,
    },
    Format {
        name: "boxfish",
        title: "Boxfish torus data",
        tools: "Boxfish",
        files: "NAME_meta.yaml",
        gives: "a torus's shape, links and their counters",
        options: &[],
        detect: |p| boxfish::looks_like_meta(&String::from_utf8_lossy(p.head())),
        open: |p, _| boxfish::load(p.path),
        stream: None,
    },
    Format {
        name: "nsys",
        title: "Nsight Systems export",
        tools: "Nsight Systems (nsys export --type sqlite)",
        files: "report.sqlite",
        gives: "GPU work per stream, runtime, NVTX and MPI ranges and NVTX marks per thread, launches as messages",
        options: &[],
        detect: |p| nsys::looks_like(p.head()),
        open: |p, _| nsys::load(p.path),
        stream: None,
    },
    Format {
        name: "execution-trace",
        title: "PyTorch execution trace",
        tools: "torch.profiler.ExecutionTraceObserver",
        files: "et.json[.gz]",
        gives: "a training step's operator graph",
        options: &[],
        detect: |p| et::is_et(p.path),
        open: |p, _| {
            let (graph, warnings) = et::read(p.input, p.path)?;
            let opgraph = Some(std::sync::Arc::new(graph));
            Ok(Dataset { name: p.input.to_string(), opgraph, warnings, ..Default::default() })
        },
        stream: None,
    },
    Format {
        name: "chrome",
        title: "Chrome trace event JSON",
        tools: "PyTorch profiler (Kineto), JAX, rocprofiler, PerfFlowAspect, chrome://tracing",
        files: "trace.json[.gz], .pfw",
        gives: "slices, instants (thread, process, global), async slices per id, flows, counters; a training run's devices and operators",
        options: &[],
        detect: |p| chrome::looks_like(p.head()),
        open: |p, _| dnn::open(p.input, &[p.path.to_path_buf()]),
        stream: None,
    },
    Format {
        name: "hlo",
        title: "XLA HLO module",
        tools: "XLA (--xla_dump_to=DIR --xla_dump_hlo_as_text)",
        files: "module_*.txt",
        gives: "an operator graph with its sharding and pipeline stages",
        options: &[],
        detect: |p| hlo::looks_like(p.head()),
        open: |p, _| {
            let (graph, warnings) = hlo::read(p.input, p.path)?;
            let opgraph = Some(std::sync::Arc::new(graph));
            Ok(Dataset { name: p.input.to_string(), opgraph, warnings, ..Default::default() })
        },
        stream: None,
    },
];

/// The format that claims `probe`, if any.
pub fn detect(probe: &Probe) -> Option<&'static Format> {
    FORMATS.iter().find(|f| (f.detect)(probe))
}

/// The formats' titles, for the unrecognised-format error.
pub fn titles() -> String {
    FORMATS.iter().map(|f| format!("{} ({})", f.title, f.files)).collect::<Vec<_>>().join(", ")
}

/// `docs/formats.md`'s table of formats, drawn from [`FORMATS`].
pub fn markdown_table() -> String {
    let mut out = String::from("| Format | Written by | Pass | exaviz reads |\n|---|---|---|---|\n");
    for f in FORMATS {
        out.push_str(&format!("| {} | {} | `{}` | {} |\n", f.title, f.tools, f.files, f.gives));
    }
    out
}

/// Collective-permute pairs of XLA's HLO modules: (module, instruction) -> the module text's
/// `source_target_pairs={{0,1},...}`, from the `*.txt` modules XLA writes with `--xla_dump_to`
/// or the HLO an XPlane profile carries (a JAX profile's trace names only `hlo_module` and
/// `hlo_op`). Shared here, below the XPlane reader that gives them and the run of profiles
/// that takes them.
pub type HloPairs = HashMap<(String, String), String>;

/// Names interned in order of first use: each name's index into `names`.
#[derive(Default)]
pub(crate) struct Interner {
    pub(crate) names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Interner {
    pub(crate) fn id(&mut self, name: &str) -> u32 {
        if let Some(&k) = self.index.get(name) {
            return k;
        }
        let k = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), k);
        k
    }
}

/// Counts the bytes read through it into a shared cell.
pub(crate) struct Counting<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// A file opened for reading line by line, through gzip where its first bytes say so, with a
/// count of the file's bytes read so far (compressed, as the file's size is) and that size.
pub(crate) struct Lines {
    pub(crate) reader: Box<dyn BufRead>,
    pub(crate) read: Rc<Cell<u64>>,
    pub(crate) size: u64,
}

pub(crate) fn open_lines(input: &str, path: &Path) -> Result<Lines, SourceError> {
    let io = |source| SourceError::Io { input: input.to_string(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut magic = [0u8; 2];
    let got = file.read(&mut magic).map_err(io)?;
    let read = Rc::new(Cell::new(0));
    let counted = Counting { inner: std::io::Cursor::new(magic[..got].to_vec()).chain(file), read: read.clone() };
    let reader: Box<dyn BufRead> = if got == 2 && magic == [0x1f, 0x8b] {
        Box::new(BufReader::with_capacity(1 << 16, flate2::read::MultiGzDecoder::new(counted)))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, counted))
    };
    Ok(Lines { reader, read, size })
}

impl Lines {
    /// The next line into `buf` (without its end of line), `Ok(false)` at the end. Bytes that
    /// are not UTF-8 are read as U+FFFD, as a text viewer shows them.
    pub(crate) fn next(&mut self, input: &str, buf: &mut String) -> Result<bool, SourceError> {
        buf.clear();
        let mut bytes = Vec::new();
        let n = self
            .reader
            .read_until(b'\n', &mut bytes)
            .map_err(|e| SourceError::invalid(input, format!("cannot be read past byte {}: {e}", self.read.get())))?;
        if n == 0 {
            return Ok(false);
        }
        while bytes.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
            bytes.pop();
        }
        match String::from_utf8(bytes) {
            Ok(s) => *buf = s,
            Err(e) => *buf = String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
        Ok(true)
    }
}

/// A whole file's bytes, decompressed where it is gzip, refused past `limit` bytes.
pub(crate) fn read_all(input: &str, path: &Path, limit: u64) -> Result<Vec<u8>, SourceError> {
    let mut lines = open_lines(input, path)?;
    let mut out = Vec::new();
    (&mut lines.reader)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| SourceError::invalid(input, format!("cannot be read: {e}")))?;
    if out.len() as u64 > limit {
        return Err(SourceError::invalid(
            input,
            format!("is larger than {} MB, the most this reader holds", limit >> 20),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// `docs/formats.md`'s table is the table of formats (`EXAVIZ_UPDATE_DOCS=1` writes it).
    #[test]
    fn the_docs_list_every_format_of_the_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/formats.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let (begin, end) = ("<!-- formats: begin -->\n", "<!-- formats: end -->");
        let a = text.find(begin).expect("the begin marker") + begin.len();
        let b = text.find(end).expect("the end marker");
        let table = super::markdown_table();
        if std::env::var("EXAVIZ_UPDATE_DOCS").as_deref() == Ok("1") {
            std::fs::write(&path, format!("{}{table}{}", &text[..a], &text[b..])).unwrap();
            return;
        }
        assert_eq!(&text[a..b], table, "docs/formats.md: run with EXAVIZ_UPDATE_DOCS=1 to redraw its table");
        for f in super::FORMATS {
            assert!(!f.title.contains('|') && !f.tools.contains('|') && !f.gives.contains('|'), "{}", f.name);
        }
    }
}

#[cfg(test)]
pub(crate) mod fuzz {
    //! Mutation fuzzing shared by the readers' tests: bytes flipped, cut and duplicated.

    use exaviz_model::dataset::Dataset;

    use exaviz_model::rng::SplitMix64;
    use exaviz_model::source::SourceError;

    /// Tallies what each mutated input gave: a dataset whose rows name locations that exist and
    /// whose intervals end after they start, or one line starting `name: `; (opened, refused).
    pub(crate) fn tally(name: &str, results: impl IntoIterator<Item = Result<Dataset, SourceError>>) -> (usize, usize) {
        let (mut opened, mut refused) = (0, 0);
        for (k, r) in results.into_iter().enumerate() {
            match r {
                Ok(d) => {
                    opened += 1;
                    let t = &d.trace;
                    let n = t.locations.name.len() as u32;
                    let named = t.intervals.location.iter().chain(&t.messages.source).chain(&t.messages.destination);
                    assert!(
                        named.chain(&t.metrics.location).all(|&l| l < n),
                        "{name}, case {k}: a row names no location"
                    );
                    assert!(t.intervals.start.iter().zip(&t.intervals.end).all(|(a, b)| a <= b), "{name}, case {k}");
                }
                Err(e) => {
                    refused += 1;
                    let e = e.to_string();
                    assert!(e.starts_with(&format!("{name}: ")) && !e.contains('\n'), "{e}");
                }
            }
        }
        (opened, refused)
    }

    /// `n` mutations of `bytes`, each one of: a few bytes flipped, the file cut short, or a
    /// stretch duplicated in place; every other one within the first 256 bytes, where headers
    /// lie.
    pub(crate) fn mutations(bytes: &[u8], n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = SplitMix64(seed);
        (0..n)
            .map(|k| {
                let len = if k % 2 == 0 { bytes.len().clamp(1, 256) } else { bytes.len().max(1) } as u32;
                let k = k / 2;
                let mut m = bytes.to_vec();
                match k % 3 {
                    0 => {
                        for _ in 0..1 + rng.below(4) {
                            let at = rng.below(len) as usize;
                            if at < m.len() {
                                m[at] ^= 1 << rng.below(8);
                            }
                        }
                    }
                    1 => m.truncate(rng.below(len) as usize),
                    _ => {
                        let at = rng.below(len) as usize;
                        let run = (1 + rng.below(64)) as usize;
                        let piece: Vec<u8> = m[at.min(m.len())..(at + run).min(m.len())].to_vec();
                        m.splice(at.min(m.len())..at.min(m.len()), piece);
                    }
                }
                m
            })
            .collect()
    }
}
