//! `exaviz`: render, inspect and view communication traces and network traffic.

mod bench_interact;
mod choices;
mod edges_cmd;
mod explore;
mod fattree_cmd;
mod opgraph_cmd;
mod panel;
mod summary_cmd;
mod wall_cmd;
mod wall_net;
mod wall_window;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use exaviz_engine::layout::Ordering;
use exaviz_engine::render::write_png_atomic;
use exaviz_engine::selection::Selection;
use exaviz_engine::views::contract::Entry;
use exaviz_engine::{Backend, BackendChoice};

/// What INPUT may be, for every command's --help.
/// An INPUT argument's help: the formats' names from the table of formats.
pub(crate) fn input_help() -> String {
    let names: Vec<&str> = exaviz_datasets::formats::FORMATS.iter().map(|f| f.title).collect();
    format!(
        "A trace, profile, topology or store ({}: exaviz --help lists them), or a generator gen:NAME?key=value, e.g. gen:wrf",
        names.join(", ")
    )
}

/// The built-in default input of `exaviz render` when none is given.
pub const DEFAULT_INPUT: &str = "gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1";

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
}

/// The inclusive rank ranges of `--stages`, one per stage.
#[derive(Clone, Debug)]
struct StageRanges(Vec<(u32, u32)>);

/// `--stages`: comma-separated ranks or inclusive rank ranges, one per stage.
fn parse_stages(s: &str) -> Result<StageRanges, String> {
    s.split(',')
        .map(|part| {
            let num = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("'{part}' is not a rank or a range A-B"));
            match part.split_once('-') {
                Some((a, z)) => {
                    let (a, z) = (num(a)?, num(z)?);
                    if a > z { Err(format!("'{part}' ends before it begins")) } else { Ok((a, z)) }
                }
                None => num(part).map(|r| (r, r)),
            }
        })
        .collect::<Result<_, _>>()
        .map(StageRanges)
}

/// The stages given with `--stages`, applied by [`load`] to every training run.
static STAGES: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();

/// The depth given with `--depth`, applied by [`load`] to an HPCToolkit database.
static DEPTH: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// `input` with `--depth` applied: `DB?depth=N` for an HPCToolkit database given without a
/// depth of its own; an error for any other input.
fn with_depth(input: &str) -> Result<String> {
    let Some(depth) = DEPTH.get() else { return Ok(input.to_string()) };
    let path = input.split_once('?').map_or(input, |(p, _)| p);
    if !exaviz_datasets::formats::hpctoolkit::is_database(std::path::Path::new(path)) {
        anyhow::bail!("{input}: --depth applies to HPCToolkit databases (their call paths' depth)");
    }
    Ok(if input.contains('?') { input.to_string() } else { format!("{input}?depth={depth}") })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    Auto,
    Gpu,
    Cpu,
}

impl From<BackendArg> for BackendChoice {
    fn from(b: BackendArg) -> Self {
        match b {
            BackendArg::Auto => Self::Auto,
            BackendArg::Gpu => Self::Gpu,
            BackendArg::Cpu => Self::Cpu,
        }
    }
}

/// The options every view command shares: which view, and where it computes. The view's own
/// options come from its entry in the registry (`exaviz render --view V --help` lists them).
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct ViewArgs {
    /// Which view to draw; each has options of its own, listed by `--view V --help`. Without
    /// it, an input the ring view cannot draw gets the view that can (an HLO module strategy,
    /// a training run marey, a fat tree fattree, a trace timeline), said in one line.
    #[arg(long, default_value = exaviz_engine::views::REGISTRY[0].name, value_parser = view_names())]
    view: String,
    /// Compute and render path: a GPU adapter if any (else the CPU, with a warning), a GPU or a clear error, or the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// The view's options as given, one word each (`--mix`, `alpha`), read after parsing.
    #[arg(skip)]
    options: Vec<String>,
    /// Whether `--view` was given on the command line (else the default may give way to a view
    /// that can draw the input, [`ViewArgs::suit`]).
    #[arg(skip)]
    named: bool,
}

impl ViewArgs {
    /// The view's entry in the registry (the parser accepts no other name).
    pub(crate) fn entry(&self) -> &'static Entry {
        Entry::find(&self.view).unwrap_or(&exaviz_engine::views::REGISTRY[0])
    }

    /// Without `--view` (and without a view's options), where the default view cannot draw
    /// `dataset`, the first view that can, in the order a user expects from the input: an
    /// operator graph's strategies, a training run's Marey graph, a fat tree, a trace's
    /// timeline, then the registry's order. Says so in one line on stderr.
    pub(crate) fn suit(&mut self, dataset: &exaviz_engine::model::Dataset) {
        if self.named
            || !self.options.is_empty()
            || self.entry().parse::<&str>(&[]).is_ok_and(|b| b.view.check(dataset).is_ok())
        {
            return;
        }
        let preferred = ["strategy", "marey", "fattree", "timeline"];
        let registry = exaviz_engine::views::REGISTRY.iter().map(|e| e.name);
        let fits = preferred.into_iter().chain(registry).find(|name| {
            Entry::find(name).and_then(|e| e.parse::<&str>(&[]).ok()).is_some_and(|b| b.view.check(dataset).is_ok())
        });
        if let Some(name) = fits {
            eprintln!("no --view given: drawing the {name} view (the {} view cannot draw this input)", self.view);
            self.view = name.to_string();
        }
    }

    /// The view and the selection its options ask for.
    pub(crate) fn built(&self) -> Result<exaviz_engine::views::contract::Built> {
        self.entry().parse(&self.options).map_err(|e| anyhow::anyhow!("{}", clap_line(&e)))
    }

    /// The view's options given in `matches` (parsed with [`augment`]), as words.
    fn read_options(&mut self, matches: &clap::ArgMatches) {
        self.named = matches.value_source("view") == Some(clap::parser::ValueSource::CommandLine);
        self.options.clear();
        for arg in self.entry().command().get_arguments() {
            let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else { continue };
            if matches.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            self.options.push(format!("--{long}"));
            if arg.get_action().takes_values() {
                let raw = matches.get_raw(id).into_iter().flatten();
                self.options.extend(raw.map(|v| v.to_string_lossy().into_owned()));
            }
        }
    }
}

/// The registry's views as the values of `--view`, with their help.
fn view_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        exaviz_engine::views::REGISTRY.iter().map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)),
    )
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

/// A clap error as one line (the engine's wording, shared with Python's errors).
pub(crate) fn clap_line(e: &clap::Error) -> String {
    exaviz_engine::views::contract::error_line(e)
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

/// `exaviz metrics`: L and CL of each ordering of one torus.
fn metrics_cmd(input: &str, dataset: exaviz_engine::model::Dataset, json: bool) -> Result<()> {
    let topology = dataset.topology.with_context(|| format!("{input}: no topology to lay out"))?;
    let mut rows = ordering_metrics(&topology);
    let mut embeddings = embedding_metrics(&topology);
    layout_rows(input, &mut rows);
    layout_rows(input, &mut embeddings);
    let dims: Vec<String> = topology.extents.iter().map(u32::to_string).collect();
    if json {
        let v = serde_json::json!({
            "input": input, "dims": dims.join("x"), "nodes": topology.node_count(), "orderings": rows,
            "embeddings": embeddings,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("L: TorusVisND Eq. 1 (k = 3); CL: Eq. 2");
        print_metrics_table(&[(dims.join("x"), rows.into_iter().chain(embeddings).collect())]);
    }
    Ok(())
}

/// `exaviz bench-layout`: the same on a list of tori.
fn bench_layout_cmd(dims: &[String], json: bool) -> Result<()> {
    let mut tables = Vec::new();
    for d in dims {
        let input = format!("gen:torus?dims={d}");
        let topology = load(&input)?.topology.with_context(|| format!("{input}: no topology"))?;
        let mut rows = ordering_metrics(&topology);
        rows.extend(embedding_metrics(&topology));
        layout_rows(&input, &mut rows);
        tables.push((d.clone(), rows));
    }
    if json {
        let all: Vec<serde_json::Value> = tables
            .iter()
            .flat_map(|(d, rows)| {
                rows.iter().map(move |r| {
                    let mut r = r.clone();
                    r["dims"] = serde_json::json!(d);
                    r
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(all));
    } else {
        print_metrics_table(&tables);
    }
    Ok(())
}

/// L, CL mean, CL max and the time of ordering plus metrics, for every ordering of a torus.
/// The harness keys every benchmark row carries, whatever it measures (`exaviz bench` and
/// `exaviz bench-layout` share them: see docs/bundling.md, "One schema for the harnesses"):
/// `harness`, `input`, `method`, `median_s` (null where not run here) and `measures`.
pub(crate) fn harness_keys(
    row: &mut serde_json::Value,
    harness: &str,
    input: &str,
    method: &str,
    seconds: Option<f64>,
    measures: &[&str],
) {
    let picked: serde_json::Map<String, serde_json::Value> =
        measures.iter().filter_map(|k| row.get(*k).map(|v| ((*k).to_string(), v.clone()))).collect();
    if let Some(o) = row.as_object_mut() {
        o.insert("harness".into(), harness.into());
        o.insert("input".into(), input.into());
        o.insert("method".into(), method.into());
        o.insert("median_s".into(), seconds.map_or(serde_json::Value::Null, |s| ((s * 1e6).round() / 1e6).into()));
        o.insert("measures".into(), picked.into());
    }
}

/// The layout harness's measures.
const LAYOUT_MEASURES: [&str; 3] = ["locality", "cl_mean", "cl_max"];

/// [`harness_keys`] on the rows of one torus.
fn layout_rows(input: &str, rows: &mut [serde_json::Value]) {
    for r in rows.iter_mut() {
        let method = r["ordering"].as_str().unwrap_or("?").to_string();
        let secs = if r.get("skipped").is_some() { None } else { r["seconds"].as_f64() };
        harness_keys(r, "layout", input, &method, secs, &LAYOUT_MEASURES);
    }
}

fn ordering_metrics(topology: &exaviz_engine::model::Topology) -> Vec<serde_json::Value> {
    use exaviz_engine::layout::{metrics, order};
    [Ordering::Sequential, Ordering::Hilbert]
        .into_iter()
        .map(|ordering| {
            let t = std::time::Instant::now();
            let ring = order::order_nodes(topology, ordering);
            let m = metrics::layout_metrics(topology, &ring);
            serde_json::json!({
                "ordering": ordering.name(), "nodes": topology.node_count(), "locality": m.locality,
                "cl_mean": m.cl_mean, "cl_max": m.cl_max, "seconds": t.elapsed().as_secs_f64(),
            })
        })
        .collect()
}

/// The same for the 2-D embeddings of TorusTrafficND §IV (MDS at three scopes, RadViz), with their
/// metrics read as `layout::embed` documents; an embedding too large to compute is listed with
/// the reason.
fn embedding_metrics(topology: &exaviz_engine::model::Topology) -> Vec<serde_json::Value> {
    use exaviz_engine::layout::embed::{self, Embedding};
    Embedding::ALL
        .into_iter()
        .map(|e| {
            let t = std::time::Instant::now();
            let row = |extra: serde_json::Value| {
                let mut r =
                    serde_json::json!({ "ordering": e.name(), "kind": "embedding", "nodes": topology.node_count() });
                if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
                    r.extend(extra.clone());
                }
                r
            };
            match embed::embed(topology, e) {
                Err(why) => row(serde_json::json!({ "skipped": why })),
                Ok(p) => match embed::embedding_metrics(topology, &p) {
                    Some(m) => row(serde_json::json!({
                        "locality": m.locality, "cl_mean": m.cl_mean, "cl_max": m.cl_max,
                        "seconds": t.elapsed().as_secs_f64(),
                    })),
                    None => row(serde_json::json!({
                        "skipped": format!("metrics compare all pairs: at most {} nodes", embed::METRICS_MAX_NODES),
                        "seconds": t.elapsed().as_secs_f64(),
                    })),
                },
            }
        })
        .collect()
}

fn print_metrics_table(tables: &[(String, Vec<serde_json::Value>)]) {
    // The harnesses' one table format: a line naming the input, then the method, its time and
    // its measures (as `exaviz bench` prints them).
    for (dims, rows) in tables {
        let nodes = rows.first().map_or(serde_json::Value::Null, |r| r["nodes"].clone());
        println!("{dims} torus, {nodes} nodes");
        println!("{:<14} {:>9} {:>12} {:>10} {:>10}", "method", "median s", "L", "CL mean", "CL max");
        for r in rows {
            let name = r["method"].as_str().or(r["ordering"].as_str()).unwrap_or("?");
            if let Some(why) = r["skipped"].as_str() {
                println!("{name:<14} skipped: {why}");
                continue;
            }
            let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "{name:<14} {:>9.5} {:>12.1} {:>10.2} {:>10.2}",
                f("seconds"),
                f("locality"),
                f("cl_mean"),
                f("cl_max")
            );
        }
    }
}

/// Largest side and area accepted for a picture.
const MAX_SIDE: u32 = 32_768;
const MAX_PIXELS: u64 = 1 << 28;

pub(crate) fn parse_size(s: &str) -> Result<(u32, u32)> {
    let malformed = || anyhow::anyhow!("size '{s}' is not WIDTHxHEIGHT in whole pixels, e.g. 1024x768");
    let (w, h) = s.split_once('x').ok_or_else(malformed)?;
    let (Ok(w), Ok(h)) = (w.trim().parse::<u64>(), h.trim().parse::<u64>()) else { return Err(malformed()) };
    let side = |v: u64| (16..=u64::from(MAX_SIDE)).contains(&v);
    if !side(w) || !side(h) {
        bail!("size '{s}' is out of range: each side must be 16 to {MAX_SIDE} pixels");
    }
    let (w, h) = (w as u32, h as u32);
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        bail!("size '{s}' is out of range: more than {MAX_PIXELS} pixels");
    }
    Ok((w, h))
}

pub(crate) fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Runs `work` with a spinner that turns into a progress bar (`template`) once `work` reports
/// `(done, total)`.
fn with_progress<T>(msg: &str, template: &str, work: impl FnOnce(&dyn Fn(u64, u64)) -> T) -> T {
    let pb = spinner(msg);
    let style = indicatif::ProgressStyle::with_template(template).map(|s| s.progress_chars("=> "));
    let progress = |done: u64, total: u64| {
        if pb.length().is_none()
            && let Ok(style) = &style
        {
            pb.set_style(style.clone());
        }
        pb.set_length(total);
        pb.set_position(done);
    };
    let out = work(&progress);
    pb.finish_and_clear();
    out
}

/// Loads an input with a spinner, turned into a progress bar (bytes) by formats that report it.
pub(crate) fn load(input: &str) -> Result<exaviz_engine::model::Dataset> {
    let template = "{msg} [{bar:32}] {bytes}/{total_bytes} ({eta} left)";
    let opened = with_depth(input)?;
    let mut d =
        with_progress(&format!("loading {input}"), template, |p| exaviz_datasets::open_with_progress(&opened, p))?;
    if let Some(ranges) = STAGES.get() {
        let t = d.training.as_ref().with_context(|| format!("{input}: --stages: not a training run"))?;
        let t = t.restaged(ranges).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
        d.training = Some(Arc::new(t));
    }
    // What the reader repaired, one counted line per kind, as the trusted peers repair it.
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    Ok(d)
}

/// `exaviz info`: what an input holds, typed locations and counters included.
fn info_cmd(input: &str, json: bool) -> Result<()> {
    let dataset = load(input)?;
    if let Some(t) = &dataset.fattree {
        return fattree_cmd::info(input, t, json);
    }
    // An operator graph alone; beside a profile, the profile's summary and one line on the graph.
    if let Some(g) = dataset.opgraph.as_ref().filter(|_| dataset.training.is_none()) {
        return opgraph_cmd::info(input, g, json);
    }
    let s = dataset.summary();
    if json {
        println!("{}", serde_json::to_string_pretty(&exaviz_datasets::info_json(&dataset))?);
    } else {
        println!("input:        {}", s.name);
        if !s.dimensions.is_empty() {
            let d: Vec<String> = s.dimensions.iter().map(u32::to_string).collect();
            println!("topology:     {} torus", d.join("x"));
        }
        println!("nodes:        {}", s.nodes);
        println!("links:        {}", s.links);
        if s.location_kinds.is_empty() {
            println!("locations:    {} (ranks, threads)", s.locations);
        } else {
            let kinds: Vec<String> = s.location_kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            println!("locations:    {} ({})", s.locations, kinds.join(", "));
        }
        println!("messages:     {}", s.messages);
        println!("intervals:    {}", s.intervals);
        println!("collectives:  {}", s.collectives);
        println!("metrics:      {} samples of {} counters", s.metric_samples, s.counters.len());
        for c in &s.counters {
            let unit = if c.unit.is_empty() { String::new() } else { format!(" {}", c.unit) };
            let accumulated = if c.accumulated { " (accumulated)" } else { "" };
            println!("  {}: {} samples, {} .. {}{unit}{accumulated}", c.name, c.samples, c.min, c.max);
        }
        if let Some(t) = &dataset.training {
            let stages = t.devices.iter().map(|d| d.stage).max().map_or(0, |s| s + 1);
            let from = match t.stages_from.as_str() {
                "" | "none" => "none found, --stages sets them".to_string(),
                f => format!("from {f}"),
            };
            let unit = if stages == 1 { "stage" } else { "stages" };
            println!("training:     {} devices in {stages} {unit} ({from}; {})", t.devices.len(), t.source);
        }
        if let Some(g) = &dataset.opgraph {
            println!(
                "graph:        {} {}, {} operators, {} data edges (exaviz metrics INPUT --of strategy lists them)",
                g.source,
                g.name,
                g.nodes.len(),
                g.edges.len()
            );
        }
        println!("link samples: {}", s.link_counter_samples);
        match s.time_span_ticks {
            Some((a, b)) => {
                let secs = if s.ticks_per_second > 0 {
                    format!(", {:.6} s", (b - a) as f64 / s.ticks_per_second as f64)
                } else {
                    String::new()
                };
                println!("time span:    {a} .. {b} ticks ({} ticks/s{secs})", s.ticks_per_second);
            }
            None => println!("time span:    none"),
        }
    }
    Ok(())
}

/// `exaviz convert`: any input into a store, with a progress bar.
fn convert_cmd(input: &str, store: &std::path::Path) -> Result<()> {
    let started = std::time::Instant::now();
    let template = "{msg} [{bar:32}] {percent}% ({eta} left)";
    let m = with_progress(&format!("converting {input}"), template, |p| exaviz_datasets::convert(input, store, p))?;
    let bytes: u64 = std::fs::read_dir(store)
        .map(|d| d.filter_map(Result::ok).filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0);
    let messages = m.rows("messages");
    println!(
        "{}: {} messages, {} intervals, {} locations; {:.1} MB on disk ({:.1} bytes per message) in {:.1} s",
        store.display(),
        messages,
        m.rows("intervals"),
        m.rows("locations"),
        bytes as f64 / 1e6,
        bytes as f64 / messages.max(1) as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What sums a store's pyramid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PyramidEngine {
    Native,
    Datafusion,
}

/// The SQL dialect `exaviz pyramid --sql` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SqlDialect {
    Datafusion,
    Duckdb,
}

/// The pyramid's plans as SQL in `dialect`: one JSON object, plan name to text.
#[cfg(feature = "datafusion")]
fn pyramid_sql(store: &std::path::Path, dialect: SqlDialect) -> Result<String> {
    use exaviz_aggregate::Dialect;
    let d = match dialect {
        SqlDialect::Datafusion => Dialect::DataFusion,
        SqlDialect::Duckdb => Dialect::DuckDb,
    };
    let plans = exaviz_aggregate::pyramid_sql(store, d)?;
    let map: serde_json::Map<String, serde_json::Value> =
        plans.into_iter().map(|(name, sql)| (name.to_string(), serde_json::Value::String(sql))).collect();
    Ok(serde_json::to_string_pretty(&map)?)
}

#[cfg(not(feature = "datafusion"))]
fn pyramid_sql(store: &std::path::Path, _: SqlDialect) -> Result<String> {
    datafusion_pyramid(store, None, true)
}

/// The pyramid summed by DataFusion's plans (embedded, or on a Ballista cluster) and, unless
/// `dry_run`, added to the store.
#[cfg(feature = "datafusion")]
fn datafusion_pyramid(store: &std::path::Path, cluster: Option<&str>, dry_run: bool) -> Result<String> {
    let on =
        cluster.map_or_else(|| "DataFusion (embedded)".to_string(), |c| format!("DataFusion on Ballista cluster {c}"));
    let pb = spinner(&format!("summing the pyramid of {} by {on}", store.display()));
    let result = exaviz_aggregate::pyramid(store, cluster, exaviz_aggregate::CLUSTER_TIMEOUT);
    pb.finish_and_clear();
    let (span, p) = result?;
    if !dry_run {
        exaviz_datasets::store::put_pyramid(store, span, &p)?;
    }
    Ok(on)
}

#[cfg(not(feature = "datafusion"))]
fn datafusion_pyramid(store: &std::path::Path, _: Option<&str>, _: bool) -> Result<String> {
    anyhow::bail!(
        "{}: --engine datafusion needs an exaviz built with DataFusion: cargo build --release -p exaviz --features datafusion",
        store.display()
    )
}

fn pyramid_cmd(
    store: &std::path::Path,
    dry_run: bool,
    engine: PyramidEngine,
    cluster: Option<&str>,
    sql: Option<SqlDialect>,
) -> Result<()> {
    if engine == PyramidEngine::Native && (cluster.is_some() || sql.is_some()) {
        let what = if sql.is_some() { "--sql writes" } else { "--cluster runs" };
        anyhow::bail!("{}: {what} DataFusion's plans: add --engine datafusion", store.display());
    }
    if let Some(dialect) = sql {
        println!("{}", pyramid_sql(store, dialect)?);
        return Ok(());
    }
    let started = std::time::Instant::now();
    if engine == PyramidEngine::Datafusion {
        let m = exaviz_datasets::store::manifest(store)?;
        let on = datafusion_pyramid(store, cluster, dry_run)?;
        println!(
            "{}: pyramid summed by {on} from {} messages and {} intervals in {:.1} s{}",
            store.display(),
            m.rows("messages"),
            m.rows("intervals"),
            started.elapsed().as_secs_f64(),
            if dry_run { ", nothing written" } else { "" }
        );
        return Ok(());
    }
    let template = "{msg} [{bar:32}] {percent}% ({eta} left)";
    let m = exaviz_datasets::store::manifest(store)?;
    let msg = format!("summing the pyramid of {}", store.display());
    let times = if dry_run {
        with_progress(&msg, template, |p| exaviz_datasets::store::sum_pyramid(store, p))?.2
    } else {
        with_progress(&msg, template, |p| exaviz_datasets::store::add_pyramid(store, p))?.1
    };
    let (messages, intervals) = (m.rows("messages"), m.rows("intervals"));
    let bytes: u64 = ["pyramid_messages", "pyramid_states", "pyramid_lines"]
        .iter()
        .filter_map(|t| std::fs::metadata(store.join(format!("{t}.parquet"))).ok())
        .map(|m| m.len())
        .sum();
    let seconds = started.elapsed().as_secs_f64();
    let rate = |rows: u64, s: f64| rows as f64 / s.max(1e-9) / 1e6;
    println!(
        "{}: pyramid summed from {messages} messages in {:.2} s ({:.1}M/s) and {intervals} intervals in {:.2} s ({:.1}M/s), {:.2} s of it summing and the rest reading; {seconds:.1} s in all{}",
        store.display(),
        times.messages_s,
        rate(messages, times.messages_s),
        times.intervals_s,
        rate(intervals, times.intervals_s),
        times.summing_s,
        if dry_run { ", nothing written".to_string() } else { format!(", {:.1} MB on disk", bytes as f64 / 1e6) }
    );
    Ok(())
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
            let dataset = load(&input)?;
            view.suit(&dataset);
            let built = view.built()?;
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
            let dataset = load(&input)?;
            view.suit(&dataset);
            let selection = view.built()?.selection;
            let content = content(&view, &dataset, selection).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
            window::run(dataset, input, view_backend, size, view, content, frames)
        }
    }
}

/// What `exaviz metrics` measures: the kind of input, not a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum MetricsOf {
    /// A training profile: rule findings, alignment offsets, time per operator group.
    #[value(alias = "marey")]
    Training,
    /// A fat tree: the hottest links and the hot links per routing table.
    Fattree,
    /// A torus: layout locality of the ring orderings and embeddings.
    Torus,
    /// An operator graph (an XLA HLO module): operators by class, strategies, communication,
    /// the pipeline's stages, as the strategy view shows them.
    Strategy,
}

/// `exaviz metrics`: a training profile's rule findings (Marey), a fat tree's or a torus's
/// metrics, by `--of` or the input's kind.
fn metrics_dispatch(
    input: &str,
    of: Option<MetricsOf>,
    align: exaviz_engine::training::Align,
    json: bool,
    fattree: fattree_cmd::MetricsArgs,
) -> Result<()> {
    let dataset = load(input)?;
    let of = of.unwrap_or(if dataset.training.is_some() {
        MetricsOf::Training
    } else if dataset.opgraph.is_some() {
        MetricsOf::Strategy
    } else if dataset.fattree.is_some() {
        MetricsOf::Fattree
    } else {
        MetricsOf::Torus
    });
    match of {
        MetricsOf::Training => {
            let t = dataset.training.as_deref().with_context(|| {
                format!(
                    "{input}: --of training needs a training profile (Kineto, JAX or PerfFlowAspect traces, or gen:training)"
                )
            })?;
            marey_metrics(t, align, json)
        }
        MetricsOf::Fattree => {
            let t = dataset.fattree.as_ref().with_context(|| {
                format!("{input}: --of fattree needs a fat tree (a TreeScope data directory or gen:fattree)")
            })?;
            fattree_cmd::metrics(input, t, &fattree)
        }
        MetricsOf::Torus => metrics_cmd(input, dataset, json),
        MetricsOf::Strategy => {
            let g = dataset.opgraph.as_ref().with_context(|| {
                format!("{input}: --of strategy needs an operator graph (an XLA HLO module as text)")
            })?;
            opgraph_cmd::info(input, g, json)
        }
    }
}

/// `exaviz metrics --of training`: the rules' findings, the alignment's offsets and the time per
/// operator group, as JSON or text.
fn marey_metrics(
    t: &exaviz_engine::training::Training,
    align: exaviz_engine::training::Align,
    json: bool,
) -> Result<()> {
    let m = exaviz_engine::views::marey::metrics(t, align);
    if json {
        println!("{}", serde_json::to_string_pretty(&m)?);
        return Ok(());
    }
    println!(
        "{} devices in {} stages, {} operators, {} steps ({})",
        m.devices, m.stages, m.operators, m.steps, m.source
    );
    let [c, k, s, r] = m.groups_ns.map(|v| exaviz_engine::training::duration(v as f64));
    println!("time in computation {c}, collectives {k}, sends {s}, receives {r}");
    let shifted: Vec<_> = m.offsets_ns.iter().filter(|o| o.1 != 0).collect();
    println!("alignment {}: {} devices shifted", m.align, shifted.len());
    for (name, off) in shifted {
        println!("  {name}: {}", exaviz_engine::training::duration(*off as f64));
    }
    if m.findings.is_empty() {
        println!("no rule findings");
    }
    for f in &m.findings {
        println!("{:?}: {}", f.rule, f.message);
    }
    Ok(())
}

/// What the window explores for `args`: the view (checked against the dataset) and the
/// selection (validated).
pub(crate) fn content(
    args: &ViewArgs,
    dataset: &exaviz_engine::model::Dataset,
    selection: Selection,
) -> Result<window::Content> {
    selection.validate(dataset)?;
    let view: Arc<dyn exaviz_engine::views::View> = Arc::from(args.built()?.view);
    view.check(dataset)?;
    Ok(window::Content { view, selection })
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
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(1)
        }
    }
}
