//! `exaviz`: render, inspect and view communication traces and network traffic.

mod bench_interact;
mod choices;
mod edges_cmd;
mod explore;
mod panel;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use exaviz_engine::layout::Ordering;
use exaviz_engine::layout::embed::{Embedding, PAPER_HOPS};
use exaviz_engine::render::{ColorMap, write_png_atomic};
use exaviz_engine::selection::Selection;
use exaviz_engine::views::chord::ChordOptions;
use exaviz_engine::views::embedding::EmbeddingOptions;
use exaviz_engine::views::group::BundleGroup;
use exaviz_engine::views::linked::{Linked, LinkedOptions};
use exaviz_engine::views::matrix::{MatrixOptions, MatrixValue};
use exaviz_engine::views::parcoords::ParcoordsOptions;
use exaviz_engine::views::plot::Mix;
use exaviz_engine::views::ring::{ChannelColour, RingBundle, RingOptions};
use exaviz_engine::views::select::DimFilter;
use exaviz_engine::views::sendrecv::SendRecvOptions;
use exaviz_engine::views::timeline::{TimelineBundle, TimelineOptions};
use exaviz_engine::{Backend, BackendChoice};

/// The built-in default input of `exaviz render` when none is given.
pub const DEFAULT_INPUT: &str = "gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1";

#[derive(Parser, Debug)]
#[command(name = "exaviz", version, about = "GPU visualization of parallel-program communication and network traffic")]
#[command(
    after_help = "INPUT is a path to a supported file (format detected from content: Boxfish meta YAML) or a generator:\n  gen:torus?dims=4x4x4            an N-D torus without traffic\n  gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1   TorusVisND's traffic simulation (Algorithm 1)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ViewKind {
    /// Torus nodes on a circle in sequential or Hilbert order, links as chords coloured by traffic.
    Ring,
    /// MPI trace: processes as rows over time, states as coloured bars, messages as lines.
    Timeline,
    /// MPI trace: communication matrix, senders as rows, receivers as columns.
    Matrix,
    /// MPI trace: processes on a circle, communicating pairs as hierarchically bundled curves.
    Chord,
    /// MPI trace: senders on the left, receivers on the right, pairs routed over an 8x8 grid.
    Sendrecv,
    /// MPI trace: timeline over matrix and chord diagram, linked: a click selects a pair in all three, the timeline's time window restricts the others.
    Mpi,
    /// Torus embedded by MDS on its hop-distance matrix (TorusTrafficND §IV; --scope), links coloured by traffic.
    Mds,
    /// Torus embedded by RadViz, one anchor per dimension (TorusTrafficND §IV), links coloured by traffic.
    Radviz,
    /// Torus node selector: parallel coordinates, one axis per dimension, a jittered line per node (TorusVisND §V).
    Parcoords,
    /// Torus time slicer: a ThemeRiver of the traffic on selected (or the busiest) nodes' links over time (TorusVisND §VI-C).
    Themeriver,
    /// Torus ring, node selector and time slicer side by side, linked: in `exaviz view` brush an axis, pick a node on the ring, drag a time slice (TorusVisND).
    Linked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ScopeArg {
    /// Every pair at its torus distance.
    Full,
    /// Pairs within --hops hops at their distance, the rest "infinite".
    Hops,
    /// Torus neighbours at distance 1, the rest "infinite".
    Immediate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ValueArg {
    Messages,
    Bytes,
    Bandwidth,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OrderArg {
    Hilbert,
    Sequential,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BundleArg {
    /// Straight lines.
    None,
    /// Image-space KDE bundling (this engine's, any view with --bundle).
    Kde,
    /// Timeline: Brendel et al.'s hierarchy of mean-shift endpoint clusters, degree-2 B-splines; ring: Holten's along the Hilbert block tree.
    Hierarchical,
    /// Timeline: Brendel et al.'s grid-based routing with diagonals between endpoint clusters.
    Grid,
    /// Ring: TorusTrafficND's block-based bundling (channels between two blocks through their group's centre).
    Blocks,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ColourArg {
    /// Traffic through the colour map.
    Traffic,
    /// Block relation: within a block, neighbouring blocks, 2, 3, 4+ blocks apart (TorusTrafficND Fig. 8a).
    Relation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MixArg {
    /// Lines over each other, more opaque where more cross.
    Alpha,
    /// Colours add up, crowded paths saturate (Brendel et al.'s "hot paths").
    Additive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StatesArg {
    /// Each pixel shows the state covering most of its time and processes.
    Dominant,
    /// The states' shares stacked up each process row (rows one pixel high show the middle state).
    Stacked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MapArg {
    Viridis,
    Cividis,
}

#[derive(clap::Args, Clone, Debug)]
pub(crate) struct ViewArgs {
    /// Which view to draw.
    #[arg(long, value_enum, default_value = "ring")]
    view: ViewKind,
    /// Node ordering along the ring.
    #[arg(long, value_enum, default_value = "hilbert")]
    order: OrderArg,
    /// Colour map (both are safe for colour-blind readers).
    #[arg(long, value_enum, default_value = "viridis")]
    colormap: MapArg,
    /// Edge bundling of the ring's chords or the timeline's messages (grid: timeline only; blocks: ring only).
    #[arg(long, value_enum, default_value = "none")]
    bundle: BundleArg,
    /// Ring and linked views: Hilbert blocks, an even count dividing the node count (default: 8 or 4 where they divide it).
    #[arg(long)]
    blocks: Option<u32>,
    /// Ring and linked views: what a chord's colour shows.
    #[arg(long, value_enum, default_value = "traffic")]
    color: ColourArg,
    /// Ring and linked views: leave out the address rings (one per dimension, brighter for lower coordinates).
    #[arg(long)]
    no_address_rings: bool,
    /// Ring and linked views: leave out the traffic marks (a disc per channel with traffic, area by packets,
    /// nearer the node sending most of them).
    #[arg(long)]
    no_traffic_marks: bool,
    /// Ring, parcoords, themeriver and linked views: only traffic sent from FROM up to (not
    /// including) TO, in trace ticks (steps for gen:torus-sim, phases 0 and 1 for gen:pf3d); the
    /// ring's opacity follows each channel's traffic in the slice, silent channels are grey.
    #[arg(long, value_name = "FROM:TO", value_parser = parse_slice)]
    time_slice: Option<(u64, u64)>,
    /// Ring, parcoords, themeriver and linked views: select the nodes with these coordinates, e.g.
    /// `B=1,D=0-2` (dimensions A to E on a 5-D torus, X to Z up to 3-D, or d1, d2, ...).
    #[arg(long, value_name = "DIM=V[-W],...", value_parser = DimFilter::parse)]
    select: Option<DimFilter>,
    /// Ring, parcoords, themeriver and linked views: select this node (id: coordinates in sequential
    /// order, the last fastest); the ring then draws only its channels, marks and address.
    #[arg(long)]
    node: Option<u32>,
    /// Ring and linked views: only the channels of these bundles, pairs of Hilbert blocks numbered as
    /// on the ring: `1-3,2` keeps the bundle between blocks 1 and 3 and the one within block 2.
    #[arg(long, value_name = "BLOCK[-BLOCK],...", value_parser = BundleGroup::parse)]
    group: Option<BundleGroup>,
    /// Ring and linked views: track the message NODE sent first (TorusVisND Fig. 13; gen:torus-sim
    /// tags each hop with it): its path hop by hop, coloured by step, over the other channels in grey.
    #[arg(long, value_name = "NODE")]
    track: Option<u32>,
    /// Ring and linked views: zoom into this rectangle of the unzoomed picture (of the ring panel in
    /// the linked view), in pixels from the top left.
    #[arg(long, value_name = "X0,Y0,X1,Y1", value_parser = parse_rect)]
    zoom: Option<[f32; 4]>,
    /// Matrix, chord, sendrecv and timeline views: highlight the messages from SENDER to RECEIVER
    /// (ranks), as a click on a matrix cell, a curve or a message line does in `exaviz view`.
    #[arg(long, value_name = "SENDER,RECEIVER", value_parser = parse_pair)]
    pair: Option<(u32, u32)>,
    /// MDS view: which distances the embedding keeps.
    #[arg(long, value_enum, default_value = "full")]
    scope: ScopeArg,
    /// MDS view with --scope hops: the most hops kept.
    #[arg(long, default_value_t = exaviz_engine::layout::embed::PAPER_HOPS)]
    hops: u32,
    /// Timeline, chord and sendrecv views: how overlapping lines combine (default: alpha for the timeline, additive for the others).
    #[arg(long, value_enum)]
    mix: Option<MixArg>,
    /// Timeline and mpi views: how a pixel shows the states of the time and processes it covers.
    #[arg(long, value_enum, default_value = "dominant")]
    states: StatesArg,
    /// Timeline and mpi views: opacity of the densest message pixels, 0 (messages hidden) to 1;
    /// the others are fainter by their rank among message pixels (histogram equalisation).
    #[arg(long, default_value_t = exaviz_engine::views::timeline::DEFAULT_MESSAGE_OPACITY, value_parser = parse_opacity)]
    message_opacity: f32,
    /// Matrix view: what a cell shows (message count, bytes, or mean bandwidth in MB/s).
    #[arg(long, value_enum, default_value = "messages")]
    value: ValueArg,
    /// Chord and sendrecv views, the timeline's hierarchical and grid bundling, the ring's blocks and hierarchical bundling: bundling strength β (0 straight, 1 fully bundled).
    #[arg(long, default_value_t = exaviz_engine::bundling::DEFAULT_BETA)]
    beta: f32,
    /// Timeline and mpi views: start of the time window, seconds since the trace's start (matrix,
    /// chord and sendrecv count only the messages sent in the window).
    #[arg(long, requires = "to")]
    from: Option<f64>,
    /// End of the time window (see --from).
    #[arg(long, requires = "from")]
    to: Option<f64>,
    /// Compute and render path: a GPU adapter if any (else the CPU, with a warning), a GPU or a clear error, or the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render a view headless to a PNG file.
    Render {
        /// Input file or gen: generator (default: the built-in 4x4x4x4x4 torus simulation).
        #[arg(default_value = DEFAULT_INPUT)]
        input: String,
        /// Output PNG (written to a temporary file, then renamed).
        #[arg(long, short, default_value = "exaviz.png")]
        out: PathBuf,
        /// Picture size in pixels, WIDTHxHEIGHT.
        #[arg(long, default_value = "1024x768")]
        size: String,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// Print counts of nodes, links, locations, messages, intervals and the time span.
    Info {
        input: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Layout quality of the ring orderings (and 2-D embeddings) of a torus: locality L (TorusVisND Eq. 1) and CL (Eq. 2).
    Metrics {
        /// A torus input (file or gen: generator).
        input: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
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
    /// Open a view in a window, with pan (drag) and zoom (wheel; on the timeline, in time), hover tooltips and a side panel to switch views and options; h lists every key.
    View {
        #[arg(default_value = DEFAULT_INPUT)]
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

/// `exaviz metrics`: L and CL of each ordering of one torus.
fn metrics_cmd(input: &str, json: bool) -> Result<()> {
    let dataset = load(input)?;
    let topology = dataset.topology.with_context(|| format!("{input}: no topology to lay out"))?;
    let rows = ordering_metrics(&topology);
    let embeddings = embedding_metrics(&topology);
    let dims: Vec<String> = topology.extents.iter().map(u32::to_string).collect();
    if json {
        let v = serde_json::json!({
            "input": input, "dims": dims.join("x"), "nodes": topology.node_count(), "orderings": rows,
            "embeddings": embeddings,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{} torus, {} nodes (L: TorusVisND Eq. 1, k = 3; CL: Eq. 2)", dims.join("x"), topology.node_count());
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
    println!(
        "{:<12} {:>8} {:<12} {:>12} {:>10} {:>10} {:>10}",
        "torus", "nodes", "ordering", "L", "CL mean", "CL max", "time ms"
    );
    for (dims, rows) in tables {
        for r in rows {
            if let Some(why) = r["skipped"].as_str() {
                let name = r["ordering"].as_str().unwrap_or("?");
                println!("{:<15} {:>8} {:<12} skipped: {why}", dims, r["nodes"], name);
                continue;
            }
            let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "{:<15} {:>8} {:<12} {:>12.1} {:>10.2} {:>10.2} {:>10.2}",
                dims,
                r["nodes"],
                r["ordering"].as_str().unwrap_or("?"),
                f("locality"),
                f("cl_mean"),
                f("cl_max"),
                f("seconds") * 1e3
            );
        }
    }
}

/// Largest side and area accepted for a picture.
const MAX_SIDE: u32 = 32_768;
const MAX_PIXELS: u64 = 1 << 28;

pub(crate) fn parse_size(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s.split_once('x').with_context(|| format!("size '{s}' must be WIDTHxHEIGHT, e.g. 1024x768"))?;
    let parse = |v: &str| v.trim().parse::<u32>().ok().filter(|&v| (16..=MAX_SIDE).contains(&v));
    let (Some(w), Some(h)) = (parse(w), parse(h)) else {
        bail!("size '{s}' is impossible: each side must be 16 to {MAX_SIDE} pixels");
    };
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        bail!("size '{s}' is impossible: more than {MAX_PIXELS} pixels");
    }
    Ok((w, h))
}

pub(crate) fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

fn ring_options(args: &ViewArgs, (width, height): (u32, u32)) -> RingOptions {
    RingOptions {
        width,
        height,
        order: match args.order {
            OrderArg::Hilbert => Ordering::Hilbert,
            OrderArg::Sequential => Ordering::Sequential,
        },
        colormap: match args.colormap {
            MapArg::Viridis => ColorMap::Viridis,
            MapArg::Cividis => ColorMap::Cividis,
        },
        bundle: match args.bundle {
            BundleArg::Kde => RingBundle::Kde(exaviz_engine::stages::BundleParams::default()),
            BundleArg::Blocks => RingBundle::Blocks { beta: args.beta.clamp(0.0, 1.0) },
            BundleArg::Hierarchical => RingBundle::Hierarchical { beta: args.beta.clamp(0.0, 1.0) },
            BundleArg::None | BundleArg::Grid => RingBundle::None,
        },
        blocks: args.blocks,
        colour: match args.color {
            ColourArg::Traffic => ChannelColour::Traffic,
            ColourArg::Relation => ChannelColour::Relation,
        },
        address_rings: !args.no_address_rings,
        traffic_marks: !args.no_traffic_marks,
        time_slice: args.time_slice,
        node: args.node,
        select: args.select,
        group: args.group,
        track: args.track,
        zoom: args.zoom,
    }
}

/// A number from 0 to 1.
fn parse_opacity(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not an opacity from 0 to 1")),
    }
}

/// `X0,Y0,X1,Y1`: four finite numbers.
fn parse_rect(s: &str) -> Result<[f32; 4], String> {
    let v: Vec<f32> = s
        .split(',')
        .map(|p| p.trim().parse::<f32>().ok().filter(|v| v.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("'{s}' is not four numbers X0,Y0,X1,Y1"))?;
    <[f32; 4]>::try_from(v).map_err(|_| format!("'{s}' is not four numbers X0,Y0,X1,Y1"))
}

/// `SENDER,RECEIVER`: two ranks.
fn parse_pair(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("'{s}' is not SENDER,RECEIVER"))?;
    let num = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("'{v}' in '{s}' is not a rank"));
    Ok((num(a)?, num(b)?))
}

/// `FROM:TO` with whole numbers, FROM below TO.
fn parse_slice(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once(':').ok_or_else(|| format!("'{s}' is not FROM:TO"))?;
    let num = |v: &str| v.trim().parse::<u64>().map_err(|_| format!("'{v}' in '{s}' is not a whole number"));
    let (from, to) = (num(a)?, num(b)?);
    if from >= to {
        return Err(format!("'{s}' is empty: FROM must be below TO"));
    }
    Ok((from, to))
}

/// The linked view's options from the command line.
fn linked_options(args: &ViewArgs, (width, height): (u32, u32)) -> LinkedOptions {
    let ring = ring_options(args, (width, height));
    let state = Linked {
        node: args.node,
        select: args.select,
        time_slice: args.time_slice,
        group: args.group,
        track: args.track,
        zoom: args.zoom,
    };
    LinkedOptions { width, height, ring, colormap: ring.colormap, state }
}

/// Options that do not fit the chosen view: a one-line error instead of silently ignoring them.
pub(crate) fn check_view_args(args: &ViewArgs) -> Result<()> {
    let ring = matches!(args.view, ViewKind::Ring | ViewKind::Linked);
    match (args.view, args.bundle) {
        (ViewKind::Ring | ViewKind::Linked, BundleArg::Grid) => {
            bail!("--bundle grid is for the timeline view; the ring takes none, kde, blocks or hierarchical")
        }
        (ViewKind::Timeline | ViewKind::Mpi, BundleArg::Blocks) => {
            bail!("--bundle blocks is for the ring view; the timeline takes none, kde, hierarchical or grid")
        }
        (
            ViewKind::Matrix
            | ViewKind::Chord
            | ViewKind::Sendrecv
            | ViewKind::Mds
            | ViewKind::Radviz
            | ViewKind::Parcoords
            | ViewKind::Themeriver,
            b,
        ) if !matches!(b, BundleArg::None) => {
            bail!("--bundle is for the ring and timeline views, not {:?}", args.view)
        }
        _ => {}
    }
    if !matches!(args.view, ViewKind::Mds) && (!matches!(args.scope, ScopeArg::Full) || args.hops != PAPER_HOPS) {
        bail!("--scope and --hops are for the mds view");
    }
    if args.hops == 0 {
        bail!("--hops must be at least 1");
    }
    if !ring
        && (args.blocks.is_some()
            || matches!(args.color, ColourArg::Relation)
            || args.no_address_rings
            || args.no_traffic_marks
            || args.group.is_some()
            || args.track.is_some()
            || args.zoom.is_some())
    {
        bail!(
            "--blocks, --color, --no-address-rings, --no-traffic-marks, --group, --track and --zoom are for the ring \
             and linked views"
        );
    }
    let mpi = matches!(
        args.view,
        ViewKind::Timeline | ViewKind::Matrix | ViewKind::Chord | ViewKind::Sendrecv | ViewKind::Mpi
    );
    if !mpi && args.pair.is_some() {
        bail!("--pair is for the timeline, matrix, chord, sendrecv and mpi views");
    }
    let timeline = matches!(args.view, ViewKind::Timeline | ViewKind::Mpi);
    let opacity = args.message_opacity != exaviz_engine::views::timeline::DEFAULT_MESSAGE_OPACITY;
    if !timeline && (args.states != StatesArg::Dominant || opacity) {
        bail!("--states and --message-opacity are for the timeline and mpi views");
    }
    if !mpi && args.from.is_some() {
        bail!("--from and --to are for the timeline, matrix, chord, sendrecv and mpi views");
    }
    let linked = matches!(args.view, ViewKind::Ring | ViewKind::Parcoords | ViewKind::Themeriver | ViewKind::Linked);
    if !linked && (args.time_slice.is_some() || args.node.is_some() || args.select.is_some()) {
        bail!("--time-slice, --node and --select are for the ring, parcoords, themeriver and linked views");
    }
    Ok(())
}

fn mix(args: &ViewArgs, default: Mix) -> Mix {
    match args.mix {
        None => default,
        Some(MixArg::Alpha) => Mix::Alpha,
        Some(MixArg::Additive) => Mix::Additive,
    }
}

/// The timeline's options from the command line.
pub(crate) fn timeline_options(args: &ViewArgs, (width, height): (u32, u32)) -> TimelineOptions {
    let beta = args.beta.clamp(0.0, 1.0);
    let bundle = match args.bundle {
        BundleArg::None => TimelineBundle::None,
        BundleArg::Kde => TimelineBundle::Kde(exaviz_engine::stages::BundleParams::default()),
        BundleArg::Hierarchical => TimelineBundle::Hierarchical { beta },
        BundleArg::Grid => TimelineBundle::Grid { beta },
        BundleArg::Blocks => TimelineBundle::None, // refused by check_view_args
    };
    let states = match args.states {
        StatesArg::Dominant => exaviz_engine::views::timeline::StateMode::Dominant,
        StatesArg::Stacked => exaviz_engine::views::timeline::StateMode::Stacked,
    };
    TimelineOptions {
        width,
        height,
        window_s: args.from.zip(args.to),
        bundle,
        mix: mix(args, Mix::Alpha),
        states,
        message_opacity: args.message_opacity,
    }
}

/// The chosen view with its options, through the view contract.
pub(crate) fn make_view(args: &ViewArgs) -> Box<dyn exaviz_engine::views::View> {
    use exaviz_engine::views::chord::ChordView;
    use exaviz_engine::views::matrix::MatrixView;
    use exaviz_engine::views::sendrecv::SendRecvView;
    use exaviz_engine::views::timeline::TimelineView;
    use exaviz_engine::views::torus_views::{EmbeddingView, LinkedView, ParcoordsView, RingView, ThemeRiverView};
    let colormap = match args.colormap {
        MapArg::Viridis => ColorMap::Viridis,
        MapArg::Cividis => ColorMap::Cividis,
    };
    // Sizes come from the frame each prepare is given.
    let size = (1024, 768);
    match args.view {
        ViewKind::Ring => Box::new(RingView(ring_options(args, size))),
        ViewKind::Timeline => Box::new(TimelineView::new(timeline_options(args, size))),
        ViewKind::Matrix => {
            let value = match args.value {
                ValueArg::Messages => MatrixValue::Messages,
                ValueArg::Bytes => MatrixValue::Bytes,
                ValueArg::Bandwidth => MatrixValue::Bandwidth,
            };
            Box::new(MatrixView(MatrixOptions { width: size.0, height: size.1, value, colormap }))
        }
        ViewKind::Chord => {
            let mix = mix(args, Mix::Additive);
            Box::new(ChordView(ChordOptions { width: size.0, height: size.1, beta: args.beta, mix }))
        }
        ViewKind::Sendrecv => {
            let mix = mix(args, Mix::Additive);
            Box::new(SendRecvView(SendRecvOptions { width: size.0, height: size.1, beta: args.beta, mix }))
        }
        ViewKind::Mds | ViewKind::Radviz => {
            let embedding = match (args.view, args.scope) {
                (ViewKind::Radviz, _) => Embedding::RadViz,
                (_, ScopeArg::Full) => Embedding::MdsFull,
                (_, ScopeArg::Hops) => Embedding::MdsHops(args.hops),
                (_, ScopeArg::Immediate) => Embedding::MdsImmediate,
            };
            Box::new(EmbeddingView(EmbeddingOptions { width: size.0, height: size.1, embedding, colormap }))
        }
        ViewKind::Parcoords => Box::new(ParcoordsView(ParcoordsOptions {
            width: size.0,
            height: size.1,
            colormap,
            time_slice: None,
            node: None,
            select: None,
        })),
        ViewKind::Themeriver => Box::new(ThemeRiverView),
        ViewKind::Linked => Box::new(LinkedView(linked_options(args, size))),
        ViewKind::Mpi => {
            let value = MatrixValue::Messages;
            let chord_mix = mix(args, Mix::Additive);
            Box::new(exaviz_engine::views::mpi_linked::MpiLinkedView {
                timeline: TimelineView::new(timeline_options(args, size)),
                matrix: MatrixOptions { width: size.0, height: size.1, value, colormap },
                chord: ChordOptions { width: size.0, height: size.1, beta: args.beta, mix: chord_mix },
            })
        }
    }
}

/// The selection given on the command line.
pub(crate) fn selection(args: &ViewArgs) -> Selection {
    Selection {
        node: args.node,
        dims: args.select,
        time_slice: args.time_slice,
        window_s: args.from.zip(args.to),
        pair: args.pair,
        group: args.group,
        track: args.track,
        zoom: args.zoom,
    }
}

/// Renders the chosen view headless, through the view contract.
fn render_view(
    dataset: &exaviz_engine::model::Dataset,
    backend: &Backend,
    args: &ViewArgs,
    (width, height): (u32, u32),
) -> Result<exaviz_engine::render::Image> {
    let view = make_view(args);
    let frame = exaviz_engine::views::Frame { width, height };
    Ok(exaviz_engine::views::contract::render_view(view.as_ref(), dataset, &selection(args), frame, backend)?)
}

/// Loads an input with a spinner, turned into a progress bar (bytes) by formats that report it.
pub(crate) fn load(input: &str) -> Result<exaviz_engine::model::Dataset> {
    let pb = spinner(&format!("loading {input}"));
    let style = indicatif::ProgressStyle::with_template("{msg} [{bar:32}] {bytes}/{total_bytes} ({eta} left)")
        .map(|s| s.progress_chars("=> "));
    let progress = |done: u64, total: u64| {
        if pb.length().is_none()
            && let Ok(style) = &style
        {
            pb.set_style(style.clone());
        }
        pb.set_length(total);
        pb.set_position(done);
    };
    let d = exaviz_datasets::open_with_progress(input, &progress);
    pb.finish_and_clear();
    Ok(d?)
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Render { input, out, size, view } => {
            let size = parse_size(&size)?;
            check_view_args(&view)?;
            if out.is_dir() {
                bail!("{}: is a folder; give a file name for the PNG", out.display());
            }
            let dataset = load(&input)?;
            let backend = Backend::new(view.backend.into())?;
            let pb = spinner(&format!("rendering {:?} on {}", view.view, backend.describe()));
            let image = render_view(&dataset, &backend, &view, size).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
            pb.finish_and_clear();
            write_png_atomic(&out, &image).with_context(|| format!("{}: cannot write", out.display()))?;
            eprintln!(
                "wrote {} ({}x{}, {:?} view, {})",
                out.display(),
                image.width,
                image.height,
                view.view,
                backend.describe()
            );
            Ok(())
        }
        Command::Info { input, json } => {
            let s = load(&input)?.summary();
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                println!("input:        {}", s.name);
                if !s.dimensions.is_empty() {
                    let d: Vec<String> = s.dimensions.iter().map(u32::to_string).collect();
                    println!("topology:     {} torus", d.join("x"));
                }
                println!("nodes:        {}", s.nodes);
                println!("links:        {}", s.links);
                println!("locations:    {} (ranks, threads)", s.locations);
                println!("messages:     {}", s.messages);
                println!("intervals:    {}", s.intervals);
                println!("collectives:  {}", s.collectives);
                println!("metrics:      {} samples", s.metric_samples);
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
        Command::Metrics { input, json } => metrics_cmd(&input, json),
        Command::BenchLayout { dims, json } => bench_layout_cmd(&dims, json),
        Command::Bundle(args) => edges_cmd::bundle(args),
        Command::Aggregate(args) => edges_cmd::aggregate(args),
        Command::Bench(args) => edges_cmd::bench(args),
        Command::BenchInteract(args) => bench_interact::run(args),
        Command::View { input, size, frames, view } => {
            let size = parse_size(&size)?;
            check_view_args(&view)?;
            let view_backend = view.backend.into();
            let dataset = load(&input)?;
            let content = content(&view, &dataset, selection(&view)).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
            window::run(dataset, input, view_backend, size, view, content, frames)
        }
    }
}

/// What the window explores for `args`: the view (checked against the dataset) and the
/// selection (validated).
pub(crate) fn content(
    args: &ViewArgs,
    dataset: &exaviz_engine::model::Dataset,
    selection: Selection,
) -> Result<window::Content> {
    selection.validate(dataset)?;
    let linked = matches!(args.view, ViewKind::Linked)
        .then(|| Arc::new(exaviz_engine::views::torus_views::LinkedView(linked_options(args, (1024, 768)))));
    let shown: Arc<dyn exaviz_engine::views::View> = match &linked {
        Some(l) => l.clone(),
        None => Arc::from(make_view(args)),
    };
    shown.check(dataset)?;
    Ok(window::Content { view: shown, linked, selection })
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

fn main() -> ExitCode {
    ensure_runtime_dir();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, as for every other error: clap's first line names the problem, and
            // where it ends with a colon the indented lines after it name the arguments.
            let text = e.render().to_string();
            let mut lines = text.lines();
            let mut first = lines.next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
            if first.ends_with(':') {
                let named: Vec<&str> = lines.take_while(|l| l.starts_with("  ")).map(str::trim).collect();
                first = format!("{first} {}", named.join(", "));
            }
            eprintln!("error: {first} (see exaviz --help)");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the chain of causes joined.
            let msg: Vec<String> = e.chain().map(ToString::to_string).collect();
            eprintln!("error: {}", msg.join(": "));
            ExitCode::from(1)
        }
    }
}
