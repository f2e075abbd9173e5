//! Sources for exaviz: files (format detected from content) and generators (`gen:NAME?k=v&...`).
//!
//! Every source yields an [`exaviz_engine::model::Dataset`]. Errors name the input and what is
//! wrong in one line; counts read from files never size an allocation before they are checked.

pub mod boxfish;
pub mod chrome;
pub mod dnn;
pub mod edges_csv;
pub mod fattree;
pub mod mpi_gen;
pub mod nsys;
pub mod otf2;
pub mod pf3d;
pub mod rng;
pub mod scale_gen;
pub mod store;
pub mod torus;
pub mod training_gen;
pub mod xplane;

use std::path::Path;

use exaviz_engine::model::Dataset;

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

/// Generators and their options, for `--help` texts and error messages.
pub const GENERATORS: &[(&str, &str)] = &[
    ("torus", "an N-D torus topology without traffic; options: dims (e.g. 4x4x4)"),
    (
        "torus-sim",
        "TorusVisND's (Cheng et al., 2014) traffic simulation (Algorithm 1) on an N-D torus; options: dims (default 4x4x4x4x4), steps (default 30), seed (default 1)",
    ),
    (
        "pf3d",
        "TorusTrafficND's (Cheng et al., 2018) pF3D case: X-line then Y-line messages of a process grid under the default task mapping (threads fill a node, nodes in E, D, C, B, A order), dimension-ordered routes; options: dims (default 4x4x4x4x2), threads (per node, default 32), grid (XxYxZ, default the most nearly cubic), bytes (per message, default 32768)",
    ),
    (
        "wrf",
        "MPI trace like Brendel et al.'s (2016) WRF case: 16 ranks, ~160,000 messages to 2-4 grid neighbours, 4 min; options: iterations, seed, collectives (an MPI_Allreduce every N iterations), plant (1: a slow rank group from 40% to 55% of the run and extra traffic among other ranks from 70% to 80%)",
    ),
    (
        "fd4",
        "MPI trace like Brendel et al.'s (2016) FD4 case: 1,024 ranks, ~2.2M messages, neighbours plus far partners, 5 min; options: iterations, seed, collectives (an MPI_Allreduce every N iterations), plant (1: a slow rank group from 40% to 55% of the run and extra traffic among other ranks from 70% to 80%); or at any scale: ranks and messages (e.g. ranks=65536&messages=1e9, streamed into a store by exaviz convert), seed, collectives",
    ),
    (
        "tachyon",
        "MPI trace like Brendel et al.'s (2016) Tachyon case: 256 ranks, ~8,000 messages all to rank 0, 20 min; options: iterations, seed, collectives (an MPI_Allreduce every N iterations), plant (1: a slow rank group from 40% to 55% of the run and extra traffic among other ranks from 70% to 80%)",
    ),
    ("lulesh", "MPI trace like Brendel et al.'s (2016) LULESH case: 8 ranks, all-to-all; options: iterations, seed"),
    (
        "fattree",
        "a three-level fat tree with jobs, routing and per-port counters over time (TreeScope, Bhatia et al., 2018); options: system (production: 1,296 nodes in 4 pods; simulated: 3,200 nodes in 8 pods; or k=K for the k-ary fat tree), steps (counter samples, default 120), interval (seconds, default 60), placement (fragmented or packed), routing (dmodk, hashed, or both: one per half of the run), seed",
    ),
    (
        "training",
        "parallel DNN training profiles for the enhanced Marey's graph (Wei et al., 2024): a GPipe schedule on devices in pipeline stages (data-parallel replicas all-reduce per stage); options: devices (8), stages (2), microbatches (4), layers (8), steps (2), straggler=RANK (computes 1.6x slower), slow_link=RANK (its sends take 4x longer), unbalanced=STAGE (twice its share of layers), skew (largest clock offset in µs, 200), flavour (kineto or jax: the files exaviz gen writes), seed",
    ),
];

/// The options of a `gen:training?...` spec, checked (what `exaviz gen` writes as files).
pub fn training_spec(input: &str) -> Result<training_gen::Spec, SourceError> {
    let spec = input.strip_prefix("gen:").unwrap_or(input);
    let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
    training_gen::Spec::parse(input, &generator_options(input, name, query)?)
}

/// A training run as a dataset: its model, and for the other views a location per device with
/// the operators as intervals (their names as regions).
pub fn training_dataset(input: &str, t: exaviz_engine::training::Training) -> Dataset {
    use exaviz_engine::model::Trace;
    let mut trace = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
    for d in &t.devices {
        trace.locations.name.push(d.name.clone());
        trace.locations.node.push(u32::MAX);
    }
    trace.region_names = t.names.clone();
    let iv = &mut trace.intervals;
    iv.location = t.ops.device.clone();
    iv.start = t.ops.start.clone();
    iv.end = t.ops.end.clone();
    iv.kind = t.ops.name.clone();
    iv.depth = vec![0; t.ops.len()];
    Dataset { name: input.to_string(), trace, training: Some(std::sync::Arc::new(t)), ..Default::default() }
}

/// Opens an input: a `gen:` generator spec or a path to a supported file.
pub fn open(input: &str) -> Result<Dataset, SourceError> {
    open_with_progress(input, &|_, _| {})
}

/// [`open`], calling `progress(done, total)` in bytes while reading formats that can tell
/// (OTF2 event files).
pub fn open_with_progress(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    if let Some(spec) = input.strip_prefix("gen:") {
        return generate(input, spec);
    }
    let path = Path::new(input);
    if store::is_store(path) {
        return store::open(path, progress);
    }
    if fattree::files::is_dir(path) {
        return fattree_dir(input, path, None);
    }
    // A fat-tree directory with options: `DIR?year=2017` (the job log's year).
    if let Some((dir, query)) = input.rsplit_once('?')
        && fattree::files::is_dir(Path::new(dir))
    {
        let mut year = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("year", v)) => {
                    let y = v.parse::<i64>().ok().filter(|y| (1970..=9999).contains(y));
                    year = Some(y.ok_or_else(|| {
                        SourceError::invalid(input, format!("year={v} is not a year from 1970 to 9999"))
                    })?);
                }
                _ => {
                    return Err(SourceError::invalid(
                        input,
                        format!("unknown option '{pair}' for a fat-tree directory (expected year=YYYY)"),
                    ));
                }
            }
        }
        return fattree_dir(input, Path::new(dir), year);
    }
    // A folder holding an OTF2 archive (its anchor file directly in it).
    if path.is_dir()
        && let Some(anchor) = otf2::anchor_in(path)
    {
        return otf2::load_with_progress(&anchor, progress);
    }
    // A folder of Chrome trace files (one per rank), or a comma-separated list of them: one run.
    if path.is_dir() {
        return dnn::open_dir(input, path);
    }
    if input.contains(',') && !path.exists() {
        let paths: Vec<std::path::PathBuf> = input.split(',').filter(|p| !p.is_empty()).map(Into::into).collect();
        return dnn::open(input, &paths);
    }
    if xplane::is_xplane(path) {
        return dnn::open_xplane(input, path);
    }
    let head = read_head(input, path)?;
    if otf2::looks_like_anchor(&head) {
        return otf2::load_with_progress(path, progress);
    }
    if boxfish::looks_like_meta(&String::from_utf8_lossy(&head)) {
        return boxfish::load(path);
    }
    if nsys::looks_like(&head) {
        return nsys::load(path);
    }
    if chrome::looks_like(&head) {
        return dnn::open(input, &[path.to_path_buf()]);
    }
    Err(SourceError::invalid(
        input,
        "unrecognised format (supported: OTF2 anchor file NAME.otf2 or its folder, Boxfish meta YAML, Chrome trace event JSON (Kineto, JAX, rocprofiler, PerfFlowAspect; plain or gzip), a JAX/XLA XPlane profile (NAME.xplane.pb), an Nsight Systems SQLite export, an exaviz store folder, a TreeScope fat-tree folder, or a gen: generator)",
    ))
}

/// Parses a count written as digits or in scientific notation (`1e9`, `2.5e8`).
fn count(input: &str, key: &str, v: &str, max: u64) -> Result<u64, SourceError> {
    let n = v.parse::<u64>().ok().or_else(|| {
        v.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    });
    match n {
        None => Err(SourceError::invalid(input, format!("option {key}={v} is not a whole number"))),
        Some(n) if n > max => Err(SourceError::invalid(input, format!("option {key}={n} is above the limit of {max}"))),
        Some(n) => Ok(n),
    }
}

/// Largest number of messages generated into a store.
pub const MAX_STORE_MESSAGES: u64 = 1 << 40;

/// The scaled FD4 generator, when `gen:fd4` has `ranks` or `messages`.
fn scaled(input: &str, name: &str, opts: &[(&str, &str)]) -> Result<Option<scale_gen::Scale>, SourceError> {
    let get = |k: &str| opts.iter().rev().find(|(key, _)| *key == k).map(|(_, v)| *v);
    if name != "fd4" || (get("ranks").is_none() && get("messages").is_none()) {
        return Ok(None);
    }
    for k in ["iterations", "plant"] {
        if get(k).is_some() {
            return Err(SourceError::invalid(input, format!("option {k} does not go with ranks and messages")));
        }
    }
    let ranks = get("ranks").map_or(Ok(1024), |v| count(input, "ranks", v, u64::from(scale_gen::MAX_RANKS)))? as u32;
    if ranks < 2 {
        return Err(SourceError::invalid(input, "option ranks must be at least 2"));
    }
    let messages = match get("messages") {
        Some(v) => count(input, "messages", v, MAX_STORE_MESSAGES)?,
        None => (f64::from(ranks) * 4.1 * 524.0) as u64,
    };
    let seed = get("seed").map_or(Ok(1), |v| count(input, "seed", v, u64::MAX))?;
    let collectives = get("collectives").map_or(Ok(0), |v| count(input, "collectives", v, 1_000_000))? as u32;
    Ok(Some(scale_gen::Scale { ranks, messages, seed, collectives }))
}

/// A scaled generator's trace in memory, when small enough to hold.
fn scaled_in_memory(input: &str, name: &str, opts: &[(&str, &str)]) -> Result<Option<Dataset>, SourceError> {
    let Some(scale) = scaled(input, name, opts)? else { return Ok(None) };
    if scale.messages > MAX_MESSAGES {
        return Err(SourceError::invalid(
            input,
            format!(
                "{} messages are above the in-memory limit of {MAX_MESSAGES}: write them into a store with exaviz convert",
                scale.messages
            ),
        ));
    }
    Ok(Some(scale.dataset(input)))
}

/// Writes any input into a store at `target` (through a temporary folder, renamed at the end),
/// reporting `progress(done, total)`: scaled generators stream iteration by iteration without
/// holding the trace; other inputs are read, then written.
pub fn convert(input: &str, target: &Path, progress: &dyn Fn(u64, u64)) -> Result<store::Manifest, SourceError> {
    if let Some(spec) = input.strip_prefix("gen:") {
        let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
        let opts: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
        // Unknown options and malformed pairs are reported by the in-memory path's parser.
        let known = query
            .split('&')
            .filter(|p| !p.is_empty())
            .all(|p| p.split_once('=').is_some_and(|(k, _)| ["seed", "collectives", "ranks", "messages"].contains(&k)));
        if known && let Some(scale) = scaled(input, name, &opts)? {
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
    let path = Path::new(input);
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
        open_with_progress(input, progress)?
    };
    store::write(&dataset, target)
}

/// A fat tree as a dataset.
/// A TreeScope directory as a dataset, with what was repaired as warnings.
fn fattree_dir(input: &str, dir: &Path, year: Option<i64>) -> Result<Dataset, SourceError> {
    let mut repairs = Repairs::default();
    let tree = fattree::files::load_with_repairs(dir, year, &mut repairs)?;
    let mut d = fattree_dataset(input, tree);
    d.warnings = repairs.lines(input);
    Ok(d)
}

pub fn fattree_dataset(input: &str, tree: exaviz_engine::fattree::FatTree) -> Dataset {
    Dataset { name: input.to_string(), fattree: Some(std::sync::Arc::new(tree)), ..Default::default() }
}

/// The `gen:fattree` simulation from its options.
pub fn fattree_gen(input: &str, opts: &[(String, String)]) -> Result<exaviz_engine::fattree::FatTree, SourceError> {
    use fattree::{Placement, Routing, Shape};
    let get = |k: &str| opts.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    let bad = |m: String| SourceError::invalid(input, m);
    let shape = match (get("system"), get("k")) {
        (Some(_), Some(_)) => return Err(bad("give system or k, not both".into())),
        (None | Some("simulated"), None) => Shape::SIMULATED,
        (Some("production"), None) => Shape::PRODUCTION,
        (Some(s), None) => return Err(bad(format!("system={s}: expected production or simulated"))),
        (None, Some(k)) => {
            let k = count(input, "k", k, 64)? as u32;
            if k < 2 || !k.is_multiple_of(2) {
                return Err(bad(format!("k={k} must be even and at least 2")));
            }
            Shape::k_ary(k)
        }
    };
    let steps = get("steps").map_or(Ok(120), |v| count(input, "steps", v, 100_000))? as u32;
    let interval = get("interval").map_or(Ok(60), |v| count(input, "interval", v, 86_400))? as i64;
    if steps == 0 || interval == 0 {
        return Err(bad("steps and interval must be at least 1".into()));
    }
    let placement = match get("placement").unwrap_or("fragmented") {
        "fragmented" => Placement::Fragmented,
        "packed" => Placement::Packed,
        v => return Err(bad(format!("placement={v}: expected fragmented or packed"))),
    };
    let routing = match get("routing").unwrap_or("dmodk") {
        "dmodk" => vec![Routing::DModK],
        "hashed" => vec![Routing::Hashed],
        "both" => vec![Routing::DModK, Routing::Hashed],
        v => return Err(bad(format!("routing={v}: expected dmodk, hashed or both"))),
    };
    let seed = get("seed").map_or(Ok(1), |v| count(input, "seed", v, u64::MAX))?;
    let jobs = fattree::default_jobs(shape, steps, routing.len() > 1);
    let sim = fattree::Sim { shape, steps, interval, placement, routing, seed, jobs };
    fattree::simulate(&sim).map_err(bad)
}

fn read_head(input: &str, path: &Path) -> Result<Vec<u8>, SourceError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|source| SourceError::Io { input: input.into(), source })?;
    let mut buf = Vec::with_capacity(4096);
    file.take(4096).read_to_end(&mut buf).map_err(|source| SourceError::Io { input: input.into(), source })?;
    Ok(buf)
}

/// The `key=value` options of generator `name`, each checked to be one it knows.
fn generator_options(input: &str, name: &str, query: &str) -> Result<Vec<(String, String)>, SourceError> {
    let mut opts = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| SourceError::invalid(input, format!("option '{pair}' is not key=value")))?;
        opts.push((k.to_string(), v.to_string()));
    }
    let known: &[&str] = match name {
        "torus" => &["dims"],
        "torus-sim" => &["dims", "steps", "seed"],
        "pf3d" => &["dims", "threads", "grid", "bytes"],
        "fd4" => &["iterations", "seed", "collectives", "plant", "ranks", "messages"],
        "wrf" | "tachyon" | "lulesh" => &["iterations", "seed", "collectives", "plant"],
        "fattree" => &["system", "k", "steps", "interval", "placement", "routing", "seed"],
        "training" => training_gen::OPTIONS,
        _ => {
            let names: Vec<_> = GENERATORS.iter().map(|g| g.0).collect();
            return Err(SourceError::invalid(
                input,
                format!("unknown generator '{name}' (available: {})", names.join(", ")),
            ));
        }
    };
    for (k, _) in &opts {
        if !known.contains(&k.as_str()) {
            return Err(SourceError::invalid(
                input,
                format!("unknown option '{k}' for gen:{name} (expected {})", known.join(", ")),
            ));
        }
    }
    Ok(opts)
}

fn generate(input: &str, spec: &str) -> Result<Dataset, SourceError> {
    let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
    let opts = generator_options(input, name, query)?;
    let get = |k: &str| opts.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    let default_dims = if name == "pf3d" { "4x4x4x4x2" } else { "4x4x4x4x4" };
    let dims = torus::parse_dims(get("dims").unwrap_or(default_dims)).map_err(|m| SourceError::invalid(input, m))?;
    let number = |k: &str, default: u64, max: u64| -> Result<u64, SourceError> {
        let Some(v) = get(k) else { return Ok(default) };
        let n: u64 =
            v.parse().map_err(|_| SourceError::invalid(input, format!("option {k}={v} is not a whole number")))?;
        if n > max {
            return Err(SourceError::invalid(input, format!("option {k}={n} is above the limit of {max}")));
        }
        Ok(n)
    };
    if name == "fattree" {
        return fattree_gen(input, &opts).map(|t| fattree_dataset(input, t));
    }
    if name == "training" {
        let spec = training_gen::Spec::parse(input, &opts)?;
        let t = training_gen::training(&spec).map_err(|m| SourceError::invalid(input, m))?;
        return Ok(training_dataset(input, t));
    }
    let pairs: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    if let Some(dataset) = scaled_in_memory(input, name, &pairs)? {
        return Ok(dataset);
    }
    if mpi_gen::CASES.contains(&name) {
        let iterations = get("iterations").map(|_| number("iterations", 1, 1_000_000)).transpose()?.map(|n| n as u32);
        let seed = number("seed", 1, u64::MAX)?;
        let extras = mpi_gen::Extras {
            collectives: number("collectives", 0, 1_000_000)? as u32,
            plant: match get("plant") {
                None | Some("0") => false,
                Some("1") => true,
                Some(v) => return Err(SourceError::invalid(input, format!("option plant={v} must be 0 or 1"))),
            },
        };
        let bound = mpi_gen::message_bound(name, iterations, extras).unwrap_or(u64::MAX);
        if bound > MAX_MESSAGES {
            return Err(SourceError::invalid(
                input,
                format!("would generate up to {bound} messages, above the limit of {MAX_MESSAGES}"),
            ));
        }
        let mut dataset = mpi_gen::generate_with(name, iterations, seed, extras).expect("a known case");
        dataset.name = input.to_string();
        return Ok(dataset);
    }
    let mut dataset = match name {
        "torus" => Dataset { topology: Some(torus::torus(&dims)), ..Default::default() },
        "pf3d" => {
            let grid = get("grid")
                .map(|g| {
                    let v = torus::parse_dims(g).ok().filter(|v| v.len() == 3).ok_or_else(|| {
                        SourceError::invalid(input, format!("grid '{g}' must be three extents like 16x32x32"))
                    })?;
                    Ok::<_, SourceError>([v[0], v[1], v[2]])
                })
                .transpose()?;
            let opts = pf3d::Pf3dOptions {
                threads: number("threads", 32, 64)? as u32,
                grid,
                message_bytes: number("bytes", 32 << 10, u64::from(u32::MAX))? as u32,
            };
            pf3d::plan(&dims, &opts).map_err(|m| SourceError::invalid(input, m))?;
            pf3d::generate(torus::torus(&dims), &opts).map_err(|m| SourceError::invalid(input, m))?
        }
        _ => {
            let topology = torus::torus(&dims);
            let steps = number("steps", 30, 100_000)? as u32;
            let seed = number("seed", 1, u64::MAX)?;
            let estimate = topology.node_count() as u64 * u64::from(steps);
            if estimate > MAX_MESSAGES {
                return Err(SourceError::invalid(
                    input,
                    format!("would generate up to {estimate} messages, above the limit of {MAX_MESSAGES}"),
                ));
            }
            torus::simulate(topology, steps, seed)
        }
    };
    dataset.name = input.to_string();
    Ok(dataset)
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
