//! `exaviz`: render, inspect and view communication traces and network traffic. This file parses
//! the command line (the view's options added from its registry entry) and dispatches each
//! command to its file in `commands/`; the window is `window/`.

mod commands;
mod common;
mod edges;
mod holds;
mod layout_metrics;
mod process;
mod text;
mod window;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use common::{DEPTH, RANK, STAGES, STRICT, StageRanges, ViewArgs, clap_line, parse_stages};
use exaviz_views::contract::Entry;

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
    /// Where a run holds an execution trace per rank (PyTorch's ExecutionTraceObserver, Chakra),
    /// the rank whose operator graph is drawn (`RUN?rank=N` says the same); by default the
    /// lowest.
    #[arg(long, global = true)]
    rank: Option<u32>,
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
    let generators: Vec<String> = exaviz_gen::GENERATORS
        .iter()
        .map(|g| {
            let what = g.about.split(';').next().unwrap_or(g.about);
            format!("  gen:{:<28} {what} (options: {})", g.name, g.options.join(", "))
        })
        .collect();
    let formats: Vec<String> =
        exaviz_formats::FORMATS.iter().map(|f| format!("  {:<30} {}: {}", f.files, f.title, f.tools)).collect();
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
        None => exaviz_views::REGISTRY.first(),
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
    let takers: Vec<&str> =
        exaviz_views::REGISTRY.iter().filter(|v| v.command().get_arguments().any(takes)).map(|v| v.name).collect();
    let view = view_named(argv).unwrap_or(exaviz_views::REGISTRY[0].name);
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
    Render(commands::render::Args),
    /// Write any input into an exaviz store: a folder of Parquet files (one per table, sorted by
    /// time; see docs/store.md) that DuckDB, Polars or pandas read as they are and that every exaviz
    /// command opens in place of its input. Generators at scale (gen:fd4?ranks=65536&messages=1e9)
    /// stream into it without holding the trace in memory.
    Convert(commands::convert::Args),
    /// Serve stores where they lie over Arrow Flight: `exaviz view grpc://HOST:PORT/STORE` (and
    /// render, info, summary, bench-interact) then opens them from this server, reading the
    /// pyramid once and each window's rows as a picture needs them; `exaviz view ssh://HOST/PATH`
    /// starts it over SSH. Any Flight client reads the same stores: ListFlights, GetFlightInfo,
    /// GetSchema and DoGet of plain rows, and Flight SQL (ADBC, JDBC) over exaviz query's tables,
    /// each store a schema. Read-only; paths outside the given stores and folders are refused.
    Serve(commands::serve::Args),
    /// Sum the multi-resolution pyramid of a store from its rows and add it to the store (a
    /// store written without one, or to sum it again). Stores too large to hold open out of core
    /// only with a pyramid: their timelines and matrices are drawn from it.
    Pyramid(commands::pyramid::Args),
    /// SQL over any input, or over many runs at once: tables of locations, intervals (regions by
    /// name), instants, messages, collectives and counters, times in ticks and seconds (Apache
    /// DataFusion; a store is read in place). E.g. `exaviz query traces.otf2 "SELECT name,
    /// sum(duration_s) FROM intervals GROUP BY name ORDER BY 2 DESC LIMIT 5"`.
    Query(commands::query::Args),
    /// The numbers of an area of a trace (a time window over a range of rows): time per region
    /// (self and total, count, mean, max, share), messages per pair, collectives by operation,
    /// counters, and late-sender and late-receiver waiting (Scalasca's wait states) per row and region. E.g.
    /// `exaviz summary traces.otf2 --from 0.19 --to 0.2 --ranks 0-1 --json`.
    Summary(commands::summary::Args),
    /// Why the run is slow: its critical path across ranks, threads and GPU streams (through
    /// messages, collectives, kernel launches and synchronisations) with its time by kind, row
    /// and region; the root causes of its waiting (Scalasca's delay analysis: the delays that
    /// made others wait, directly and through their waiting); and the stragglers of each step
    /// (work beyond the peers' median, by robust statistics). E.g.
    /// `exaviz critical-path run/ --from 0.1 --to 0.2 --json`.
    CriticalPath(commands::critical_path::Args),
    /// What changed between two runs: per row (work and waiting), region, collective and pair of
    /// rows, the counts, times and bytes of each, the change, whether it stands out from the
    /// runs' step-to-step variation (steps: Kineto's ProfilerStep#N, else iterations found by
    /// repetition) and where it lies (which rows, which steps), largest first. Rows match by
    /// name (by position where names differ); runs of different sizes compare per row. E.g.
    /// `exaviz diff before/ after/ --fail-above 5`.
    Diff(commands::diff::Args),
    /// Print counts of nodes, links, locations, messages, intervals and the time span.
    Info(commands::info::Args),
    /// Layout quality of the ring orderings (and 2-D embeddings) of a torus: locality L (TorusVisND Eq. 1) and CL (Eq. 2).
    /// On a fat tree (TreeScope, Bhatia et al., 2018): the hottest links over the active range
    /// and the hot-link count per routing table in effect.
    Metrics(commands::metrics::Args),
    /// Write a generator's output as the files a tool would: gen:fattree as a TreeScope data
    /// directory (network.topo, per-port counters at each timestamp, routing tables, the job log),
    /// gen:training as one Chrome trace file per device (Kineto or JAX, flavour=jax).
    Gen(commands::r#gen::Args),
    /// Table of every ordering's and embedding's L, mean CL, max CL and time on a list of tori (for layout benchmarks).
    BenchLayout(commands::bench_layout::Args),
    /// Bundle the edges of a CSV file (x0,y0,x1,y1[,weight]) into curves (edge_id,x,y).
    Bundle(commands::bundle::Args),
    /// Compare bundlers on the same edges: time, ink ratio, distortion and endpoint displacement.
    Bench(commands::bench::Args),
    /// Replay gestures (zoom, pan, hover, click) through the window's code without a window and
    /// report the time to the first frame and to the complete picture per gesture.
    BenchInteract(commands::bench_interact::Args),
    /// Aggregate the segments of a CSV file into a line-density image (and optionally a PNG).
    Aggregate(commands::aggregate::Args),
    /// Drive a powerwall from this process: one borderless window per tile of WALL.toml (full
    /// screen on its monitor, or side by side with fewer monitors than tiles), each showing its
    /// rectangle of the view prepared at the whole canvas's size; a drag or wheel on any tile
    /// pans or zooms the whole wall; 0 resets, Esc or q quits.
    Wall(commands::wall::Args),
    /// Open a view in a window, with pan (drag) and zoom (wheel; on the timeline, in time), hover tooltips and a side panel to switch views and options; h lists every key.
    #[command(after_help = "Each view has options of its own: exaviz view --view VIEW --help lists them.")]
    View(commands::view::Args),
}

impl Command {
    /// The view options of the commands that show a view.
    fn view_args(&mut self) -> Option<&mut ViewArgs> {
        match self {
            Command::Render(a) => Some(&mut a.view),
            Command::View(a) => Some(&mut a.view),
            Command::Wall(a) => Some(&mut a.view),
            Command::BenchInteract(a) => Some(&mut a.view),
            _ => None,
        }
    }
}

/// Each command to its file.
fn run(cli: Cli) -> Result<()> {
    use commands::*;
    match cli.command {
        Command::Render(args) => render::run(args),
        Command::Convert(args) => convert::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Pyramid(args) => pyramid::run(&args),
        Command::Gen(args) => r#gen::run(&args),
        Command::Wall(args) => wall::run(args),
        Command::Info(args) => info::run(&args),
        Command::Query(args) => query::run(&args),
        Command::Summary(args) => summary::run(&args),
        Command::CriticalPath(args) => critical_path::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Metrics(args) => metrics::run(&args),
        Command::BenchLayout(args) => bench_layout::run(&args),
        Command::Bundle(args) => bundle::run(args),
        Command::Aggregate(args) => aggregate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::BenchInteract(args) => bench_interact::run(args),
        Command::View(args) => view::run(args),
    }
}

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
    process::ensure_runtime_dir();
    process::keep_freed_memory();
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
    if let Some(rank) = cli.rank {
        RANK.set(rank).ok();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            // A performance gate's regression is told from a failure to read.
            if e.downcast_ref::<commands::diff::Regressed>().is_some() { ExitCode::from(3) } else { ExitCode::from(1) }
        }
    }
}
