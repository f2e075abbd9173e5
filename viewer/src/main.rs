//! `exaviz`: render, inspect and view communication traces and network traffic.

mod bench_interact;
mod choices;
mod common;
mod critical_cmd;
mod diff_cmd;
mod edges_cmd;
mod explore;
mod fattree_cmd;
mod info_cmd;
mod layout_cmd;
mod metrics_cmd;
mod opgraph_cmd;
mod panel;
mod pyramid_cmd;
mod serve_cmd;
mod summary_cmd;
mod wall_cmd;
mod wall_net;
mod wall_window;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use exaviz_engine::Backend;
use exaviz_engine::render::write_png_atomic;
use exaviz_engine::views::contract::Entry;

use common::{
    DEFAULT_INPUT, DEPTH, STAGES, STRICT, StageRanges, ViewArgs, clap_line, content, input_help, load, parse_size,
    parse_stages, spinner,
};
use info_cmd::{convert_cmd, info_cmd};
use layout_cmd::bench_layout_cmd;
use metrics_cmd::{MetricsOf, metrics_dispatch};
use pyramid_cmd::{PyramidEngine, SqlDialect, pyramid_cmd};

#[derive(Parser, Debug)]
#[command(name = "exaviz", version, about = "GPU visualization of parallel-program communication and network traffic")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// A training run's pipeline stages by rank, where the trace does not tell them (CPU jobs
    /// without sends, a profile without HLO): `0-1,2-3` puts ranks 0 and 1 in stage 0, 2 and 3
    /// in stage 1; a single rank is `4`.
    #[arg(long, global = true, value_parser = parse_stages)]
    stages: Option<StageRanges>,
    /// An HPCToolkit database's call paths drawn down to this many functions (hpcviewer's depth
    /// slider; `DB?depth=N` says the same); by default down to the deepest user function or MPI
    /// call of each path.
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..))]
    depth: Option<u32>,
    /// Refuse a run's folder of profiles where one of its files does not read (cut short,
    /// corrupt), instead of leaving that file out with a warning line (`RUN?strict=1` says the
    /// same).
    #[arg(long, global = true)]
    strict: bool,
}

/// The commands that show a view.
const VIEW_COMMANDS: [&str; 4] = ["render", "view", "bench-interact", "wall"];

/// The command line's view name (`--view V` or `--view=V`), if any.
fn view_named(argv: &[String]) -> Option<&str> {
    argv.iter().enumerate().find_map(|(k, a)| match a.strip_prefix("--view") {
        Some("") => argv.get(k + 1).map(String::as_str),
        Some(v) => v.strip_prefix('='),
        None => None,
    })
}

/// `exaviz --help`'s last part: what INPUT may be, the generators listed from their registry.
fn inputs_help() -> String {
    let generators: Vec<String> = exaviz_datasets::GENERATORS
        .iter()
        .map(|g| {
            let what = g.about.split(';').next().unwrap_or(g.about);
            format!("  gen:{:<28} {what} (options: {})", g.name, g.options.join(", "))
        })
        .collect();
    let formats: Vec<String> = exaviz_datasets::formats::FORMATS
        .iter()
        .map(|f| format!("  {:<30} {}: {}", f.files, f.title, f.tools))
        .collect();
    format!(
        "INPUT is a file or folder (the format is told from its content) or a generator:\n{}\n  \
  {:<30} several files of one run\n\
Generators, gen:NAME?key=value&... (e.g. gen:torus-sim?dims=4x4x4&steps=30&seed=1):\n{}\n\
What a reader repaired is printed as counted `warning:` lines; `exaviz info INPUT` says what it holds.\n\
A large trace file's index is kept beside it as INPUT.exaviz-index/ where reading it back is clearly faster than summing it\n\
(EXAVIZ_INDEX_CACHE=off keeps none; see docs/store.md).",
        formats.join("\n"),
        "A,B,...",
        generators.join("\n")
    )
}

/// The command line's parser with the options of the view `argv` names (or the default view)
/// added to the commands that show a view.
fn augment(argv: &[String]) -> clap::Command {
    let mut cmd = <Cli as clap::CommandFactory>::command().after_help(inputs_help());
    let entry = match view_named(argv) {
        Some(name) => Entry::find(name),
        None => exaviz_engine::views::REGISTRY.first(),
    };
    if let Some(entry) = entry {
        for sub in VIEW_COMMANDS {
            cmd = cmd.mut_subcommand(sub, |c| {
                // A view's options struct brings its own doc comment as the command's about:
                // the command keeps its own.
                let (about, long) = (c.get_about().cloned(), c.get_long_about().cloned());
                let c = (entry.args)(c.next_help_heading(format!("Options of the {} view", entry.name)));
                let c = if let Some(a) = about { c.about(a) } else { c };
                if let Some(l) = long { c.long_about(l) } else { c.long_about(None::<&str>) }
            });
        }
    }
    cmd
}

/// An option, or an option's value, of another view: which views take it.
fn other_view_hint(e: &clap::Error, argv: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let long = text(ContextKind::InvalidArg)?.strip_prefix("--")?.split(['=', ' ']).next()?;
    let value = match e.kind() {
        ErrorKind::UnknownArgument => None,
        ErrorKind::InvalidValue => Some(text(ContextKind::InvalidValue)?),
        _ => return None,
    };
    let takes = |a: &clap::Arg| {
        a.get_long() == Some(long) && value.is_none_or(|v| a.get_possible_values().iter().any(|p| p.get_name() == v))
    };
    let takers: Vec<&str> = exaviz_engine::views::REGISTRY
        .iter()
        .filter(|v| v.command().get_arguments().any(takes))
        .map(|v| v.name)
        .collect();
    let view = view_named(argv).unwrap_or(exaviz_engine::views::REGISTRY[0].name);
    if takers.is_empty() || takers.contains(&view) {
        return None;
    }
    let names = match takers.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => takers.join(""),
    };
    let views = if takers.len() == 1 { "view takes" } else { "views take" };
    let what = value.map_or(format!("--{long}"), |v| format!("--{long} {v}"));
    Some(format!("{what} is not an option of the {view} view; the {names} {views} it (see --view {view} --help)"))
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render a view headless to a PNG file.
    #[command(after_help = "Each view has options of its own: exaviz render --view VIEW --help lists them.")]
    Render {
        #[arg(default_value = DEFAULT_INPUT, help = input_help())]
        input: String,
        /// Output PNG (written to a temporary file, then renamed).
        #[arg(long, short, default_value = "exaviz.png")]
        out: PathBuf,
        /// Picture size in pixels, WIDTHxHEIGHT.
        #[arg(long, default_value = "1024x768")]
        size: String,
        /// Render for a powerwall described by this wall.toml: the view is prepared at the whole
        /// virtual canvas's size, and --out is a folder that gets each tile as tile_C_R.png and
        /// the whole wall, mullion gaps included, as wall.png.
        #[arg(long, value_name = "WALL.toml", conflicts_with = "size")]
        wall: Option<PathBuf>,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// Write any input into an exaviz store: a folder of Parquet files (one per table, sorted by
    /// time; see docs/store.md) that DuckDB, Polars or pandas read as they are and that every exaviz
    /// command opens in place of its input. Generators at scale (gen:fd4?ranks=65536&messages=1e9)
    /// stream into it without holding the trace in memory.
    Convert {
        #[arg(help = input_help())]
        input: String,
        /// The store folder to write (written under a temporary name, then renamed; an older
        /// store there is replaced).
        store: PathBuf,
    },
    /// Serve stores where they lie over Arrow Flight: `exaviz view grpc://HOST:PORT/STORE` (and
    /// render, info, summary, bench-interact) then opens them from this server, reading the
    /// pyramid once and each window's rows as a picture needs them; `exaviz view ssh://HOST/PATH`
    /// starts it over SSH. Read-only; paths outside the given stores and folders are refused.
    Serve(serve_cmd::ServeArgs),
    /// Sum the multi-resolution pyramid of a store from its rows and add it to the store (a
    /// store written without one, or to sum it again). Stores too large to hold open out of core
    /// only with a pyramid: their timelines and matrices are drawn from it.
    Pyramid {
        /// The store folder.
        store: PathBuf,
        /// Sum the pyramid and report the time of each part without writing it (to measure).
        #[arg(long)]
        dry_run: bool,
        /// What sums it: `native` (rayon over the rows) or `datafusion` (the same pyramid as
        /// Apache DataFusion plans over the store's Parquet files, embedded or on a Ballista
        /// cluster; in an exaviz built with `--features datafusion`).
        #[arg(long, value_enum, default_value_t = PyramidEngine::Native)]
        engine: PyramidEngine,
        /// With `--engine datafusion`: run the plans on a Ballista cluster, `df://HOST:PORT` (a
        /// running scheduler whose executors see the store at the same path) or `standalone` (a
        /// scheduler and an executor started in this process).
        #[arg(long, value_name = "df://HOST:PORT|standalone")]
        cluster: Option<String>,
        /// With `--engine datafusion`: print the plans' SQL in this dialect as one JSON object
        /// (the span, then level 0 of the message cube, the lines and the state tiles, over
        /// tables `messages` and `intervals`) and exit, to run them elsewhere on the same files.
        #[arg(long, value_enum, value_name = "DIALECT")]
        sql: Option<SqlDialect>,
    },
    /// The numbers of an area of a trace (a time window over a range of rows): time per region
    /// (self and total, count, mean, max, share), messages per pair, collectives by operation,
    /// counters, and late-sender and late-receiver waiting (Scalasca's wait states) per row and region. E.g.
    /// `exaviz summary traces.otf2 --from 0.19 --to 0.2 --ranks 0-1 --json`.
    Summary(summary_cmd::SummaryArgs),
    /// Why the run is slow: its critical path across ranks, threads and GPU streams (through
    /// messages, collectives, kernel launches and synchronisations) with its time by kind, row
    /// and region; the root causes of its waiting (Scalasca's delay analysis: the delays that
    /// made others wait, directly and through their waiting); and the stragglers of each step
    /// (work beyond the peers' median, by robust statistics). E.g.
    /// `exaviz critical-path run/ --from 0.1 --to 0.2 --json`.
    CriticalPath(critical_cmd::CriticalArgs),
    /// What changed between two runs: per row (work and waiting), region, collective and pair of
    /// rows, the counts, times and bytes of each, the change, whether it stands out from the
    /// runs' step-to-step variation (steps: Kineto's ProfilerStep#N, else iterations found by
    /// repetition) and where it lies (which rows, which steps), largest first. Rows match by
    /// name (by position where names differ); runs of different sizes compare per row. E.g.
    /// `exaviz diff before/ after/ --fail-above 5`.
    Diff(diff_cmd::DiffArgs),
    /// Print counts of nodes, links, locations, messages, intervals and the time span.
    Info {
        #[arg(help = input_help())]
        input: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Layout quality of the ring orderings (and 2-D embeddings) of a torus: locality L (TorusVisND Eq. 1) and CL (Eq. 2).
    /// On a fat tree (TreeScope, Bhatia et al., 2018): the hottest links over the active range
    /// and the hot-link count per routing table in effect.
    Metrics {
        /// A torus input, a fat tree (a TreeScope data directory or gen:fattree), or a training
        /// profile (Chrome trace files of Kineto, JAX or PerfFlowAspect, or gen:training).
        input: String,
        /// Which metrics to print: a training profile's (rule findings, alignment offsets, time
        /// per operator group, as the Marey view shows them), a fat tree's, or a torus's; by
        /// default the input's kind decides.
        #[arg(long, value_enum, alias = "view")]
        of: Option<MetricsOf>,
        /// Marey: the timestamp alignment the offsets and rules use.
        #[arg(long, value_enum, default_value = "full")]
        align: exaviz_engine::training::Align,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Fat tree: the active range, counter intervals FROM up to TO (default: all).
        #[arg(long, value_name = "FROM:TO", value_parser = exaviz_engine::views::options::parse_slice)]
        time: Option<(u64, u64)>,
        /// Fat tree: how many of the hottest links to list.
        #[arg(long, default_value = "20")]
        top: usize,
        /// Fat tree: a link is hot above this many times the mean switch-to-switch link.
        #[arg(long, default_value = "2.0")]
        hot: f64,
        /// Fat tree: a link is hot above this many bytes instead (to compare runs on one scale).
        #[arg(long, value_name = "BYTES", conflicts_with = "hot")]
        above: Option<f64>,
    },
    /// Write a generator's output as the files a tool would: gen:fattree as a TreeScope data
    /// directory (network.topo, per-port counters at each timestamp, routing tables, the job log),
    /// gen:training as one Chrome trace file per device (Kineto or JAX, flavour=jax).
    Gen {
        /// The generator, e.g. gen:fattree?system=simulated&steps=1000&placement=packed or
        /// gen:training?devices=8&stages=4.
        spec: String,
        /// The directory to write (through a temporary name, then renamed).
        dir: PathBuf,
    },
    /// Table of every ordering's and embedding's L, mean CL, max CL and time on a list of tori (for layout benchmarks).
    BenchLayout {
        /// Torus shapes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "4x4x4x4x4,6x5x4x3x2,1x4x4x4x2,4x4x4x4x1,4x4x4x4x2,8x8x8")]
        dims: Vec<String>,
        /// Print JSON (one object per torus and ordering) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Bundle the edges of a CSV file (x0,y0,x1,y1[,weight]) into curves (edge_id,x,y).
    Bundle(edges_cmd::BundleArgs),
    /// Compare bundlers on the same edges: time, ink ratio, distortion and endpoint displacement.
    Bench(edges_cmd::BenchArgs),
    /// Replay gestures (zoom, pan, hover, click) through the window's code without a window and
    /// report the time to the first frame and to the complete picture per gesture.
    BenchInteract(bench_interact::BenchInteractArgs),
    /// Aggregate the segments of a CSV file into a line-density image (and optionally a PNG).
    Aggregate(edges_cmd::AggregateArgs),
    /// Drive a powerwall from this process: one borderless window per tile of WALL.toml (full
    /// screen on its monitor, or side by side with fewer monitors than tiles), each showing its
    /// rectangle of the view prepared at the whole canvas's size; a drag or wheel on any tile
    /// pans or zooms the whole wall; 0 resets, Esc or q quits.
    Wall {
        /// The wall description (see docs/walls.md).
        #[arg(long, value_name = "WALL.toml")]
        config: PathBuf,
        #[arg(default_value = DEFAULT_INPUT, help = input_help())]
        input: String,
        /// Close after presenting this many frames (for tests and demos).
        #[arg(long)]
        frames: Option<u64>,
        /// Be the master of a wall over several hosts: listen on ADDR (HOST:PORT), wait for every
        /// tile to join, then keep them in step (frame N is presented when every tile is ready).
        #[arg(long, value_name = "ADDR", conflicts_with = "join")]
        serve: Option<String>,
        /// Show one tile of a wall whose master listens on ADDR (HOST:PORT); needs --tile.
        #[arg(long, value_name = "ADDR", requires = "tile")]
        join: Option<String>,
        /// The tile this host shows, column and row from 0.
        #[arg(long, value_name = "C,R", value_parser = exaviz_engine::views::options::parse_pair, requires = "join")]
        tile: Option<(u32, u32)>,
        /// How long the master waits for every tile to join, in seconds.
        #[arg(long, default_value_t = 30)]
        join_timeout: u64,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// Open a view in a window, with pan (drag) and zoom (wheel; on the timeline, in time), hover tooltips and a side panel to switch views and options; h lists every key.
    #[command(after_help = "Each view has options of its own: exaviz view --view VIEW --help lists them.")]
    View {
        #[arg(default_value = DEFAULT_INPUT, help = input_help())]
        input: String,
        /// Initial picture size, WIDTHxHEIGHT (the window adds the side panel's width; `p` hides it).
        #[arg(long, default_value = "1024x768")]
        size: String,
        /// Close after presenting this many frames (for tests and demos).
        #[arg(long)]
        frames: Option<u64>,
        #[command(flatten)]
        view: ViewArgs,
    },
}

impl Command {
    /// The view options of the commands that show a view.
    fn view_args(&mut self) -> Option<&mut ViewArgs> {
        match self {
            Command::Render { view, .. } | Command::View { view, .. } | Command::Wall { view, .. } => Some(view),
            Command::BenchInteract(args) => Some(&mut args.view),
            _ => None,
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Render { input, out, wall: Some(wall), view, .. } => wall_cmd::render_cmd(&input, &wall, &out, &view),
        Command::Render { input, out, size, mut view, wall: None } => {
            let size = parse_size(&size)?;
            view.built()?;
            if out.is_dir() {
                bail!("{}: is a folder; give a file name for the PNG", out.display());
            }
            let mut dataset = load(&input)?;
            view.suit(&dataset);
            let built = view.built()?;
            crate::common::open_against(&mut dataset, built.view.as_ref())?;
            let backend = Backend::new(view.backend.into())?;
            let pb = spinner(&format!("rendering the {} view on {}", view.view, backend.describe()));
            let frame = exaviz_engine::views::Frame { width: size.0, height: size.1 };
            let image = exaviz_engine::views::contract::render_view(
                built.view.as_ref(),
                &dataset,
                &built.selection,
                frame,
                &backend,
            )
            .map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
            pb.finish_and_clear();
            write_png_atomic(&out, &image).with_context(|| format!("{}: cannot write", out.display()))?;
            eprintln!(
                "wrote {} ({}x{}, {} view, {})",
                out.display(),
                image.width,
                image.height,
                view.view,
                backend.describe()
            );
            Ok(())
        }
        Command::Convert { input, store } => convert_cmd(&input, &store),
        Command::Serve(args) => serve_cmd::run(&args),
        Command::Pyramid { store, dry_run, engine, cluster, sql } => {
            pyramid_cmd(&store, dry_run, engine, cluster.as_deref(), sql)
        }
        Command::Gen { spec, dir } => fattree_cmd::gen_cmd(&spec, &dir),
        Command::Wall { config, input, frames, serve, join, tile, join_timeout, view } => {
            let net = match (serve, join, tile) {
                (Some(addr), ..) => wall_window::Net::Serve { addr, join_timeout: Duration::from_secs(join_timeout) },
                (None, Some(addr), Some(tile)) => wall_window::Net::Join { addr, tile },
                _ => wall_window::Net::Local,
            };
            wall_window::run(&input, &config, frames, &view, net)
        }
        Command::Info { input, json } => info_cmd(&input, json),
        Command::Summary(args) => summary_cmd::run(&args),
        Command::CriticalPath(args) => critical_cmd::run(&args),
        Command::Diff(args) => diff_cmd::run(&args),
        Command::Metrics { input, of, align, json, time, top, hot, above } => {
            metrics_dispatch(&input, of, align, json, fattree_cmd::MetricsArgs { time, top, hot, above, json })
        }
        Command::BenchLayout { dims, json } => bench_layout_cmd(&dims, json),
        Command::Bundle(args) => edges_cmd::bundle(args),
        Command::Aggregate(args) => edges_cmd::aggregate(args),
        Command::Bench(args) => edges_cmd::bench(args),
        Command::BenchInteract(args) => bench_interact::run(args),
        Command::View { input, size, frames, mut view } => {
            let size = parse_size(&size)?;
            view.built()?;
            let view_backend = view.backend.into();
            let mut dataset = load(&input)?;
            view.suit(&dataset);
            crate::common::open_against(&mut dataset, view.built()?.view.as_ref())?;
            let selection = view.built()?.selection;
            let content = content(&view, &dataset, selection).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
            window::run(dataset, input, view_backend, size, view, content, frames)
        }
    }
}

/// Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" twice on every run where
/// the variable is missing (headless machines, CI). Give them a private folder instead, before
/// any thread exists.
#[cfg(unix)]
fn ensure_runtime_dir() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        return;
    }
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("exaviz-runtime-{uid}"));
    let ok = std::fs::create_dir_all(&dir).is_ok()
        && std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_ok();
    if ok {
        #[expect(unsafe_code, reason = "set_var is unsafe in edition 2024; main is still single-threaded here")]
        // SAFETY: no other thread exists yet, so nothing reads the environment concurrently.
        unsafe {
            std::env::set_var("XDG_RUNTIME_DIR", dir);
        }
    }
}

#[cfg(not(unix))]
fn ensure_runtime_dir() {}

/// glibc's malloc hands freed blocks of 128 KiB and more straight back to the system, so every
/// row group decoded and every window read faults its pages in afresh (1.6 us per 4 KiB page
/// here). Keep blocks under 32 MiB in the heap, and up to 256 MiB of freed memory for reuse:
/// a store's pyramid pass spent a third of its time in the kernel before (see BENCHMARKS.md,
/// "The pyramid pass without copies or page faults"). Larger blocks still go back at once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    #[expect(unsafe_code, reason = "mallopt is a C function; main is still single-threaded here")]
    // SAFETY: mallopt only sets two of the allocator's parameters, before any thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}

/// An error's chain of causes joined in one line, each cause once (a message that already
/// ends with its cause's text does not repeat it).
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain().map(ToString::to_string) {
        if !parts.last().is_some_and(|last| last.ends_with(&cause)) {
            parts.push(cause);
        }
    }
    parts.join(": ")
}

fn main() -> ExitCode {
    ensure_runtime_dir();
    keep_freed_memory();
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let parsed = augment(&argv).try_get_matches_from(&argv).and_then(|m| {
        let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m)?;
        if let (Some((_, sub)), Some(view)) = (m.subcommand(), cli.command.view_args()) {
            view.read_options(sub);
        }
        Ok(cli)
    });
    let cli = match parsed {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, as for every other error.
            match other_view_hint(&e, &argv) {
                Some(hint) => eprintln!("error: {hint}"),
                None => eprintln!("error: {} (see exaviz --help)", clap_line(&e)),
            }
            return ExitCode::from(2);
        }
    };
    if let Some(ranges) = cli.stages.clone() {
        STAGES.set(ranges.0).ok();
    }
    if let Some(depth) = cli.depth {
        DEPTH.set(depth).ok();
    }
    STRICT.set(cli.strict).ok();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            // A performance gate's regression is told from a failure to read.
            if e.downcast_ref::<diff_cmd::Regressed>().is_some() { ExitCode::from(3) } else { ExitCode::from(1) }
        }
    }
}
