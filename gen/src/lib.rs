//! Generators, `gen:NAME?key=value&...`, each registered once ([`GENERATORS`]): its name, what
//! it makes, its options, what `exaviz gen` writes of it, and the function that makes its
//! dataset. Options are parsed by [`Query`] and checked against the generator's list.

use exaviz_model::dataset::Dataset;
use exaviz_model::query::{Query, whole};
use exaviz_model::source::{MAX_MESSAGES, SourceError};
use exaviz_model::torus::{parse_dims, torus};
use exaviz_model::{Collectives, Intervals};

pub mod fattree;
pub mod mpi_gen;
pub mod pf3d;
pub mod scale_gen;
pub mod torus;
pub mod training_gen;

/// What `exaviz gen` writes of a generator's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Files {
    /// Chrome trace files, one per device (Kineto or JAX), as profilers write them.
    TraceFiles,
    /// A TreeScope data directory (topology, jobs, routing, counters).
    TreeScope,
}

/// One generator.
pub struct Generator {
    pub name: &'static str,
    /// What it makes and its options, for `--help` texts and error messages.
    pub about: &'static str,
    pub options: &'static [&'static str],
    /// What `exaviz gen` writes of it; `None`: only `exaviz convert` writes it (into a store).
    pub files: Option<Files>,
    make: fn(&str, &Query) -> Result<Dataset, SourceError>,
}

const MPI_OPTIONS: &[&str] = &["iterations", "seed", "collectives", "plant", "slow_rank"];

/// Every generator, as `exaviz --help` lists them: a new one is one entry here.
pub const GENERATORS: &[Generator] = &[
    Generator {
        name: "torus",
        about: "an N-D torus topology without traffic; options: dims (e.g. 4x4x4)",
        options: &["dims"],
        files: None,
        make: make_torus,
    },
    Generator {
        name: "torus-sim",
        about: "TorusVisND's (Cheng et al., 2014) traffic simulation (Algorithm 1) on an N-D torus; options: dims (default 4x4x4x4x4), steps (default 30), seed (default 1)",
        options: &["dims", "steps", "seed"],
        files: None,
        make: make_torus_sim,
    },
    Generator {
        name: "pf3d",
        about: "TorusTrafficND's (Cheng et al., 2018) pF3D case: X-line then Y-line messages of a process grid under the default task mapping (threads fill a node, nodes in E, D, C, B, A order), dimension-ordered routes; options: dims (default 4x4x4x4x2), threads (per node, default 32), grid (XxYxZ, default the most nearly cubic), bytes (per message, default 32768)",
        options: &["dims", "threads", "grid", "bytes"],
        files: None,
        make: make_pf3d,
    },
    Generator {
        name: "wrf",
        about: "MPI trace like Brendel et al.'s (2016) WRF case: 16 ranks, ~160,000 messages to 2-4 grid neighbours, 4 min; options: iterations, seed, collectives (an MPI_Allreduce every N iterations), plant (1: a slow rank group from 40% to 55% of the run and extra traffic among other ranks from 70% to 80%), slow_rank=R (rank R computes 1.5x as long every iteration, so the others wait)",
        options: MPI_OPTIONS,
        files: None,
        make: make_mpi,
    },
    Generator {
        name: "fd4",
        about: "MPI trace like Brendel et al.'s (2016) FD4 case: 1,024 ranks, ~2.2M messages, neighbours plus far partners, 5 min; options: iterations, seed, collectives (an MPI_Allreduce every N iterations), plant (1: a slow rank group from 40% to 55% of the run and extra traffic among other ranks from 70% to 80%), slow_rank=R (rank R computes 1.5x as long every iteration, so the others wait); or at any scale: ranks and messages (e.g. ranks=65536&messages=1e9, streamed into a store by exaviz convert), seed, collectives, slow_rank=R (every rank computes for 20-30% of each period and rank R three times as long, in a region of its own: one deviant among any number of ranks), heavy_pair=S-R (rank S also sends rank R 16 messages of 64 KiB every iteration: one heavy pair among any number of ranks)",
        options: &["iterations", "seed", "collectives", "plant", "slow_rank", "ranks", "messages", "heavy_pair"],
        files: None,
        make: make_mpi,
    },
    Generator {
        name: "tachyon",
        about: "MPI trace like Brendel et al.'s (2016) Tachyon case: 256 ranks, ~8,000 messages all to rank 0, 20 min; options: iterations, seed, collectives (an MPI_Allreduce every N iterations), plant (1: a slow rank group from 40% to 55% of the run and extra traffic among other ranks from 70% to 80%), slow_rank=R (rank R computes 1.5x as long every iteration, so the others wait)",
        options: MPI_OPTIONS,
        files: None,
        make: make_mpi,
    },
    Generator {
        name: "lulesh",
        about: "MPI trace like Brendel et al.'s (2016) LULESH case: 8 ranks, all-to-all; options: iterations, seed, slow_rank=R (rank R computes 1.5x as long every iteration, so the others wait)",
        options: MPI_OPTIONS,
        files: None,
        make: make_mpi,
    },
    Generator {
        name: "fattree",
        about: "a three-level fat tree with jobs, routing and per-port counters over time (TreeScope, Bhatia et al., 2018); options: system (production: 1,296 nodes in 4 pods; simulated: 3,200 nodes in 8 pods; or k=K for the k-ary fat tree), steps (counter samples, default 120), interval (seconds, default 60), placement (fragmented or packed), routing (dmodk, hashed, or both: one per half of the run), seed",
        options: &["system", "k", "steps", "interval", "placement", "routing", "seed"],
        files: Some(Files::TreeScope),
        make: make_fattree,
    },
    Generator {
        name: "training",
        about: "parallel DNN training profiles for the enhanced Marey's graph (Wei et al., 2024): a GPipe schedule on devices in pipeline stages (data-parallel replicas all-reduce per stage); options: devices (8), stages (2), microbatches (4), layers (8), steps (2), straggler=RANK (computes 1.6x slower), slow_link=RANK (its sends take 4x longer), unbalanced=STAGE (twice its share of layers), skew (largest clock offset in µs, 200), flavour (kineto or jax: the files exaviz gen writes), seed",
        options: training_gen::OPTIONS,
        files: Some(Files::TraceFiles),
        make: make_training,
    },
];

/// Largest number of messages generated into a store.
pub const MAX_STORE_MESSAGES: u64 = 1 << 40;

/// The generator called `name`.
pub fn find(name: &str) -> Option<&'static Generator> {
    GENERATORS.iter().find(|g| g.name == name)
}

/// The generator of `input` (`gen:NAME?...`) and its options, checked against the generator's.
pub fn parse(input: &str) -> Result<(&'static Generator, Query), SourceError> {
    let spec = input.strip_prefix("gen:").unwrap_or(input);
    let (name, q) = Query::split(input, spec)?;
    let Some(g) = find(name) else {
        let names: Vec<_> = GENERATORS.iter().map(|g| g.name).collect();
        return Err(SourceError::invalid(
            input,
            format!("unknown generator '{name}' (available: {})", names.join(", ")),
        ));
    };
    q.only(g.options, &format!("gen:{name}"))?;
    Ok((g, q))
}

/// The dataset `input` (`gen:NAME?...`) makes.
pub fn generate(input: &str) -> Result<Dataset, SourceError> {
    let (g, q) = parse(input)?;
    let mut dataset = (g.make)(g.name, &q)?;
    dataset.name = input.to_string();
    Ok(dataset)
}

/// The options of a `gen:training?...` spec, checked (what `exaviz gen` writes as files).
pub fn training_spec(input: &str) -> Result<training_gen::Spec, SourceError> {
    let (_, q) = parse(input)?;
    training_gen::Spec::parse(&q)
}

/// The torus of option `dims`, `default` without it.
fn dims(q: &Query, default: &str) -> Result<Vec<u32>, SourceError> {
    parse_dims(q.get("dims").unwrap_or(default)).map_err(|m| q.invalid(m))
}

fn make_torus(_: &str, q: &Query) -> Result<Dataset, SourceError> {
    Ok(Dataset { topology: Some(torus(&dims(q, "4x4x4x4x4")?)), ..Default::default() })
}

fn make_torus_sim(_: &str, q: &Query) -> Result<Dataset, SourceError> {
    let topology = torus(&dims(q, "4x4x4x4x4")?);
    let steps = q.count("steps", 30, 100_000)? as u32;
    let seed = q.count("seed", 1, u64::MAX)?;
    let estimate = topology.node_count() as u64 * u64::from(steps);
    if estimate > MAX_MESSAGES {
        return Err(q.invalid(format!("would generate up to {estimate} messages, above the limit of {MAX_MESSAGES}")));
    }
    Ok(torus::simulate(topology, steps, seed))
}

fn make_pf3d(_: &str, q: &Query) -> Result<Dataset, SourceError> {
    let dims = dims(q, "4x4x4x4x2")?;
    let grid = q
        .get("grid")
        .map(|g| {
            let v = parse_dims(g)
                .ok()
                .filter(|v| v.len() == 3)
                .ok_or_else(|| q.invalid(format!("grid '{g}' must be three extents like 16x32x32")))?;
            Ok::<_, SourceError>([v[0], v[1], v[2]])
        })
        .transpose()?;
    let opts = pf3d::Pf3dOptions {
        threads: q.count("threads", 32, 64)? as u32,
        grid,
        message_bytes: q.count("bytes", 32 << 10, u64::from(u32::MAX))? as u32,
    };
    pf3d::plan(&dims, &opts).map_err(|m| q.invalid(m))?;
    pf3d::generate(torus(&dims), &opts).map_err(|m| q.invalid(m))
}

fn make_mpi(name: &str, q: &Query) -> Result<Dataset, SourceError> {
    if let Some(dataset) = scaled_in_memory(name, q)? {
        return Ok(dataset);
    }
    let iterations = q.count_opt("iterations", 1_000_000)?.map(|n| n as u32);
    let seed = q.count("seed", 1, u64::MAX)?;
    let extras = mpi_gen::Extras {
        collectives: q.count("collectives", 0, 1_000_000)? as u32,
        plant: match q.get("plant") {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(q.invalid(format!("option plant={v} must be 0 or 1"))),
        },
        slow_rank: q.count_opt("slow_rank", u64::from(u32::MAX))?.map(|r| r as u32),
    };
    if let (Some(r), Some(ranks)) = (extras.slow_rank, mpi_gen::ranks(name))
        && r >= ranks
    {
        return Err(q.invalid(format!("option slow_rank={r}: the case has ranks 0-{}", ranks - 1)));
    }
    let bound = mpi_gen::message_bound(name, iterations, extras).unwrap_or(u64::MAX);
    if bound > MAX_MESSAGES {
        return Err(q.invalid(format!("would generate up to {bound} messages, above the limit of {MAX_MESSAGES}")));
    }
    mpi_gen::generate_with(name, iterations, seed, extras).ok_or_else(|| q.invalid(format!("no MPI case '{name}'")))
}

fn make_fattree(_: &str, q: &Query) -> Result<Dataset, SourceError> {
    fattree_gen(q).map(|t| Dataset::of_fattree(q.input(), t))
}

fn make_training(_: &str, q: &Query) -> Result<Dataset, SourceError> {
    let spec = training_gen::Spec::parse(q)?;
    let t = training_gen::training(&spec).map_err(|m| q.invalid(m))?;
    Ok(Dataset::of_training(q.input(), t))
}

/// The scaled FD4 generator, when `gen:fd4` has `ranks` or `messages`.
pub fn scaled(name: &str, q: &Query) -> Result<Option<scale_gen::Scale>, SourceError> {
    let input = q.input();
    let get = |k: &str| q.get(k);
    if name != "fd4" || (get("ranks").is_none() && get("messages").is_none()) {
        if name == "fd4" && get("heavy_pair").is_some() {
            return Err(SourceError::invalid(input, "option heavy_pair goes with ranks or messages"));
        }
        return Ok(None);
    }
    for k in ["iterations", "plant"] {
        if get(k).is_some() {
            return Err(SourceError::invalid(input, format!("option {k} does not go with ranks and messages")));
        }
    }
    let ranks = get("ranks").map_or(Ok(1024), |v| whole(input, "ranks", v, u64::from(scale_gen::MAX_RANKS)))? as u32;
    if ranks < 2 {
        return Err(SourceError::invalid(input, "option ranks must be at least 2"));
    }
    let messages = match get("messages") {
        Some(v) => whole(input, "messages", v, MAX_STORE_MESSAGES)?,
        None => (f64::from(ranks) * 4.1 * 524.0) as u64,
    };
    let seed = q.count("seed", 1, u64::MAX)?;
    let collectives = q.count("collectives", 0, 1_000_000)? as u32;
    let slow = match get("slow_rank") {
        Some(v) => {
            let r = whole(input, "slow_rank", v, u64::from(u32::MAX))?;
            if r >= u64::from(ranks) {
                return Err(SourceError::invalid(
                    input,
                    format!("option slow_rank={r} is not one of the {ranks} ranks"),
                ));
            }
            Some(r as u32)
        }
        None => None,
    };
    let heavy = match get("heavy_pair") {
        Some(v) => {
            let pair = v
                .split_once('-')
                .and_then(|(a, b)| Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?)));
            match pair {
                Some((a, b)) if a < ranks && b < ranks && a != b => Some((a, b)),
                _ => {
                    return Err(SourceError::invalid(
                        input,
                        format!("option heavy_pair={v}: expected SENDER-RECEIVER, two of the {ranks} ranks"),
                    ));
                }
            }
        }
        None => None,
    };
    Ok(Some(scale_gen::Scale { ranks, messages, seed, collectives, slow, heavy }))
}

/// A scaled generator's trace in memory, when small enough to hold.
fn scaled_in_memory(name: &str, q: &Query) -> Result<Option<Dataset>, SourceError> {
    let input = q.input();
    let Some(scale) = scaled(name, q)? else { return Ok(None) };
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

/// The `gen:fattree` simulation from its options.
pub fn fattree_gen(q: &Query) -> Result<exaviz_model::fattree::FatTree, SourceError> {
    let input = q.input();
    use fattree::{Placement, Routing, Shape};
    let get = |k: &str| q.get(k);
    let bad = |m: String| SourceError::invalid(input, m);
    let shape = match (get("system"), get("k")) {
        (Some(_), Some(_)) => return Err(bad("give system or k, not both".into())),
        (None | Some("simulated"), None) => Shape::SIMULATED,
        (Some("production"), None) => Shape::PRODUCTION,
        (Some(s), None) => return Err(bad(format!("system={s}: expected production or simulated"))),
        (None, Some(k)) => {
            let k = whole(input, "k", k, 64)? as u32;
            if k < 2 || !k.is_multiple_of(2) {
                return Err(bad(format!("k={k} must be even and at least 2")));
            }
            Shape::k_ary(k)
        }
    };
    let steps = q.count("steps", 120, 100_000)? as u32;
    let interval = q.count("interval", 60, 86_400)? as i64;
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
    let seed = q.count("seed", 1, u64::MAX)?;
    let jobs = fattree::default_jobs(shape, steps, routing.len() > 1);
    let sim = fattree::Sim { shape, steps, interval, placement, routing, seed, jobs };
    fattree::simulate(&sim).map_err(bad)
}

/// Rank `r`'s period of an FD4-like iteration (`start` to `end`, ticks): computing until
/// `compute_end`, waiting until `enter`, then in the allreduce until `end` (where there is one:
/// state 2 otherwise is the rest of the period), its three states at depth 0 (empty ones left out).
pub(crate) fn push_period(
    (i, k): (&mut Intervals, &mut Collectives),
    r: u32,
    (start, compute_end, enter, end): (u64, u64, u64, u64),
    allreduce: bool,
) {
    for (kind, (a, b)) in [(0, (start, compute_end)), (1, (compute_end, enter)), (2, (enter, end))] {
        if b > a {
            i.location.push(r);
            i.start.push(a);
            i.end.push(b);
            i.kind.push(kind);
            i.depth.push(0);
        }
    }
    if allreduce {
        k.location.push(r);
        k.start.push(enter);
        k.end.push(end);
        k.op.push(0);
        k.root.push(u32::MAX);
        k.bytes.push(8);
    }
}
