//! `exaviz bundle` and `exaviz aggregate`: the interoperable CSV commands, so any tool can be
//! compared with exaviz on the same files. Each prints one `RESULT {json}` line on stdout with
//! every run's time of the compute (file reading and writing excluded, as the Datashader peer
//! script does) and the whole command's time.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use exaviz_engine::Backend;
use exaviz_engine::bundling::{self, Bundler};
use exaviz_engine::layout::hierarchy;
use exaviz_engine::render::{
    Anchor, Blend, ColorMap, Scene, ToneMap, View, render_scene, write_atomic, write_png_atomic,
};
use exaviz_engine::stages::kde_bundle::UnitFrame;
use exaviz_engine::stages::{self, AxisKey, BundleParams, Bundled, DensityInput, HeatmapInput};
use exaviz_engine::views::density::density_picture;
use rayon::prelude::*;

use crate::BackendArg;

const D: BundleParams = BundleParams::DEFAULT;

#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum BundlerArg {
    /// Image-space density bundling (KDE edge bundling, CUBu-style), on the backend.
    Kde,
    /// Holten's hierarchical edge bundling through a quadtree over the endpoints (B-splines).
    Hierarchical,
    /// No bundling: the straight edges, as a baseline.
    Straight,
}

/// Edge input: a CSV path, or a generated benchmark set.
const EDGE_INPUT_HELP: &str = "CSV with a header naming x0,y0,x1,y1 and optionally weight, or \
gen:circle?edges=10000&kind=structured|random&nodes=1024&seed=1 (the bundling benchmark sets)";

#[derive(clap::Args, Debug)]
pub struct BundleArgs {
    #[arg(help = EDGE_INPUT_HELP)]
    input: String,
    /// Bundling method.
    #[arg(long, value_enum, default_value = "kde")]
    bundler: BundlerArg,
    /// Bundling strength of the hierarchical bundler (0: straight, 1: along the hierarchy).
    #[arg(long, default_value_t = bundling::DEFAULT_BETA)]
    beta: f32,
    /// Output CSV of bundled polylines: edge_id,x,y rows, one polyline per edge in input order.
    #[arg(long, short)]
    out: PathBuf,
    /// Also draw the bundled edges to this PNG (additive, green at the source, red at the target).
    #[arg(long)]
    png: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Points per edge, endpoints included (2 to 32).
    #[arg(long, default_value_t = D.samples)]
    samples: u32,
    /// Density grid side in cells.
    #[arg(long, default_value_t = D.grid)]
    grid: u32,
    #[arg(long, default_value_t = D.iterations)]
    iterations: u32,
    /// Initial kernel radius, as a fraction of the bounding square's side.
    #[arg(long, default_value_t = D.kernel)]
    kernel: f32,
    /// Factor applied to kernel radius and step after each iteration.
    #[arg(long, default_value_t = D.decay)]
    decay: f32,
    /// Move per iteration, as a fraction of the current kernel radius.
    #[arg(long, default_value_t = D.step)]
    step: f32,
    /// Laplacian smoothing weight per iteration (0 to 1).
    #[arg(long, default_value_t = D.smoothing)]
    smoothing: f32,
    /// Timed runs of the bundling (the output comes from the last).
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Untimed runs before the timed ones (first-call costs left out, as the peer script leaves
    /// out numba's compilation with a warm-up call).
    #[arg(long, default_value_t = 0)]
    warmup: u32,
}

#[derive(clap::Args, Debug)]
pub struct AggregateArgs {
    /// CSV of segments with a header naming x0,y0,x1,y1 and optionally weight (or x,y with
    /// --points).
    input: PathBuf,
    /// Count points (the first end of each row) per pixel with the heatmap stage, instead of
    /// lines: what Datashader's Canvas.points does.
    #[arg(long)]
    points: bool,
    /// Accumulation image size in pixels, WIDTHxHEIGHT; the canvas covers the data's bounds.
    #[arg(long, default_value = "1024x1024")]
    size: String,
    /// Draw the tone-mapped density, with axes and a colour bar, to this PNG.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "log")]
    tone: ToneArg,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Timed runs of the aggregation.
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Untimed runs before the timed ones (see `bundle --help`).
    #[arg(long, default_value_t = 0)]
    warmup: u32,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ToneArg {
    Linear,
    Log,
    Eq,
}

fn median(times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    if t.is_empty() { 0.0 } else { t[t.len() / 2] }
}

fn report(kind: &str, backend: &Backend, n: usize, times: &[f64], total: f64, extra: serde_json::Value) {
    let mut v = serde_json::json!({
        "tool": "exaviz",
        "kind": kind,
        "backend": backend.describe(),
        "n": n,
        "runs_s": times.iter().map(|t| (t * 1e4).round() / 1e4).collect::<Vec<_>>(),
        "median_s": (median(times) * 1e4).round() / 1e4,
        "total_s": (total * 1e4).round() / 1e4,
    });
    if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    println!("RESULT {v}");
}

fn read_edges(input: &str) -> Result<exaviz_datasets::edges_csv::EdgeList> {
    let pb = crate::spinner(&format!("reading {input}"));
    let e = exaviz_datasets::edges_csv::open(input);
    pb.finish_and_clear();
    Ok(e?)
}

/// Writes `edge_id,x,y` rows atomically (temporary file, then rename).
fn write_curves(path: &Path, bundled: &Bundled, frame: &UnitFrame) -> Result<()> {
    write_atomic(path, |w| {
        writeln!(w, "edge_id,x,y")?;
        for e in 0..bundled.len() {
            for &p in bundled.edge(e) {
                let q = frame.from_unit(p);
                writeln!(w, "{e},{},{}", q[0], q[1])?;
            }
        }
        Ok(())
    })
    .with_context(|| format!("{}: cannot write", path.display()))
}

/// The bundled curves as a picture: additive strokes whose colour runs from green (source) to
/// red (target), a title and a legend.
fn draw_bundles(backend: &Backend, bundled: &Bundled, title: &str, method: &str, png: &Path) -> Result<()> {
    let (w, h) = (900u32, 800u32);
    let mut scene = Scene::new(w, h, exaviz_engine::views::BACKGROUND);
    let (ox, oy, side) = (50.0f32, 70.0f32, 700.0f32);
    let alpha = (20_000.0 / bundled.len().max(1) as f32).clamp(0.03, 0.6);
    let last = (bundled.samples as usize).saturating_sub(1).max(1) as f32;
    let mut line = Vec::new();
    for e in 0..bundled.len() {
        line.clear();
        line.extend(bundled.edge(e).iter().map(|p| [ox + p[0] * side, oy + (1.0 - p[1]) * side]));
        scene.stroke(Blend::Additive, &line, 1.0, |k| {
            let t = k as f32 / last;
            [t, 1.0 - t, 0.15, alpha]
        });
    }
    let text = exaviz_engine::views::TEXT;
    scene.text(title, [16.0, 28.0], 15.0, Anchor::Left, text);
    scene.text(
        &format!("{} edges, bundled: {method}", bundled.len()),
        [16.0, 48.0],
        12.0,
        Anchor::Left,
        exaviz_engine::views::TEXT_DIM,
    );
    // Legend: the direction gradient.
    let (lx, ly) = (770.0f32, 100.0f32);
    scene.text("direction", [lx, ly - 10.0], 13.0, Anchor::Left, text);
    for i in 0..40 {
        let t = i as f32 / 39.0;
        scene.rect([lx, ly + i as f32 * 4.0], [lx + 16.0, ly + i as f32 * 4.0 + 4.0], [t, 1.0 - t, 0.15, 1.0], true);
    }
    scene.text("source", [lx + 22.0, ly + 10.0], 11.0, Anchor::Left, text);
    scene.text("target", [lx + 22.0, ly + 160.0], 11.0, Anchor::Left, text);
    scene.text("additive: bright", [lx, ly + 190.0], 11.0, Anchor::Left, exaviz_engine::views::TEXT_DIM);
    scene.text("= many edges", [lx, ly + 204.0], 11.0, Anchor::Left, exaviz_engine::views::TEXT_DIM);
    let image = render_scene(backend, &scene, View::default())?;
    write_png_atomic(png, &image).with_context(|| format!("{}: cannot write", png.display()))
}

/// The bundler an argument names, with the KDE parameters and curve samples of `kde`.
fn bundler_of(arg: BundlerArg, kde: BundleParams, beta: f32) -> Result<Bundler> {
    if !(0.0..=1.0).contains(&beta) {
        bail!("--beta must be in [0, 1], not {beta}");
    }
    let samples = kde.samples;
    Ok(match arg {
        BundlerArg::Kde => Bundler::Kde(kde),
        BundlerArg::Hierarchical => Bundler::Hierarchical { samples, beta, depth: hierarchy::DEFAULT_DEPTH },
        BundlerArg::Straight => Bundler::Straight { samples },
    })
}

/// Edges moved into the unit square (in place) and the frame that maps them back.
fn to_unit(edges: &mut [[f32; 4]]) -> UnitFrame {
    let frame = UnitFrame::fit(edges);
    for e in edges.iter_mut() {
        *e = frame.edge_to_unit(*e);
    }
    frame
}

pub fn bundle(args: BundleArgs) -> Result<()> {
    let start = Instant::now();
    let params = BundleParams {
        samples: args.samples,
        grid: args.grid,
        iterations: args.iterations,
        kernel: args.kernel,
        decay: args.decay,
        step: args.step,
        smoothing: args.smoothing,
    };
    params.validate().map_err(|e| anyhow::anyhow!("invalid bundling parameters: {e}"))?;
    let bundler = bundler_of(args.bundler, params, args.beta)?;
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let mut list = read_edges(&args.input)?;
    let backend = Backend::new(args.backend.into())?;
    let weights = list.quantised_weights();
    list.weights = None;
    let frame = to_unit(&mut list.edges);
    let unit = list.edges;
    let mut times = Vec::new();
    let mut bundled = None;
    let pb = crate::spinner(&format!("bundling {} edges ({}) on {}", unit.len(), bundler.name(), backend.describe()));
    for run in 0..args.warmup.saturating_add(args.runs) {
        let t = Instant::now();
        bundled = Some(bundler.run(backend.runner().as_mut(), &unit, weights.as_deref())?);
        if run >= args.warmup {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    pb.finish_and_clear();
    let bundled = bundled.context("no run")?;
    write_curves(&args.out, &bundled, &frame)?;
    if let Some(png) = &args.png {
        let title = format!("Bundled edges: {}", args.input);
        draw_bundles(&backend, &bundled, &title, bundler.name(), png)?;
    }
    let extra = serde_json::json!({ "output_rows": bundled.points.len(), "samples": bundled.samples, "bundler": bundler.name() });
    report("bundle", &backend, unit.len(), &times, start.elapsed().as_secs_f64(), extra);
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[arg(help = EDGE_INPUT_HELP)]
    input: String,
    /// Bundlers to compare, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "kde,hierarchical,straight")]
    bundler: Vec<BundlerArg>,
    /// Bundling strength of the hierarchical bundler.
    #[arg(long, default_value_t = bundling::DEFAULT_BETA)]
    beta: f32,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Timed runs per bundler (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Side of the square raster on which ink is counted.
    #[arg(long, default_value_t = 1024)]
    resolution: u32,
    /// Print JSON (one object per bundler) instead of a table.
    #[arg(long)]
    json: bool,
}

/// `exaviz bench`: each bundler's time and quality (ink ratio, distortion, endpoint
/// displacement) on the same edges.
pub fn bench(args: BenchArgs) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !(16..=8192).contains(&args.resolution) {
        bail!("--resolution must be 16 to 8192, not {}", args.resolution);
    }
    let mut list = read_edges(&args.input)?;
    let backend = Backend::new(args.backend.into())?;
    let weights = list.quantised_weights();
    to_unit(&mut list.edges);
    let edges = list.edges;
    let mut rows = Vec::new();
    for &arg in &args.bundler {
        let bundler = bundler_of(arg, BundleParams::DEFAULT, args.beta)?;
        let pb = crate::spinner(&format!("{}: {} edges on {}", bundler.name(), edges.len(), backend.describe()));
        let mut times = Vec::new();
        let mut bundled = None;
        for _ in 0..args.runs {
            let t = Instant::now();
            bundled = Some(bundler.run(backend.runner().as_mut(), &edges, weights.as_deref())?);
            times.push(t.elapsed().as_secs_f64());
        }
        let bundled = bundled.context("no run")?;
        let q = bundling::quality(backend.runner().as_mut(), &edges, &bundled, args.resolution)?;
        pb.finish_and_clear();
        let mut row = serde_json::json!({
            "input": args.input, "bundler": bundler.name(), "backend": backend.describe(), "edges": edges.len(),
            "runs_s": times.iter().map(|t| (t * 1e4).round() / 1e4).collect::<Vec<_>>(),
            "median_s": (median(&times) * 1e4).round() / 1e4,
        });
        if let (Some(o), Ok(serde_json::Value::Object(m))) = (row.as_object_mut(), serde_json::to_value(q)) {
            o.extend(m);
        }
        rows.push(row);
    }
    if args.json {
        println!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    println!(
        "{} edges from {} on {}; ink counted at {}²",
        edges.len(),
        args.input,
        backend.describe(),
        args.resolution
    );
    println!(
        "{:<13} {:>10} {:>10} {:>16} {:>15} {:>13} {:>17}",
        "bundler", "median s", "ink ratio", "distortion mean", "distortion max", "mean shift", "endpoint shift"
    );
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<13} {:>10.4} {:>10.3} {:>16.3} {:>15.3} {:>13.4} {:>17.2e}",
            r["bundler"].as_str().unwrap_or("?"),
            f("median_s"),
            f("ink_ratio"),
            f("distortion_mean"),
            f("distortion_max"),
            f("mean_displacement"),
            f("endpoint_displacement_max")
        );
    }
    Ok(())
}

pub fn aggregate(args: AggregateArgs) -> Result<()> {
    let start = Instant::now();
    let (w, h) = crate::parse_size(&args.size)?;
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let list = read_edges(&args.input.to_string_lossy())?;
    let backend = Backend::new(args.backend.into())?;
    // The canvas covers the data's bounds, as Datashader's does; y up.
    let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
    for e in &list.edges {
        lo = [lo[0].min(e[0]).min(e[2]), lo[1].min(e[1]).min(e[3])];
        hi = [hi[0].max(e[0]).max(e[2]), hi[1].max(e[1]).max(e[3])];
    }
    if list.edges.is_empty() {
        lo = [0.0; 2];
        hi = [1.0; 2];
    }
    let sx = w as f32 / (hi[0] - lo[0]).max(f32::MIN_POSITIVE);
    let sy = h as f32 / (hi[1] - lo[1]).max(f32::MIN_POSITIVE);
    // The maximum lands on the last pixel rather than one past it.
    let px = |x: f32, s: f32, l: f32, n: u32| ((x - l) * s).min(n as f32 - 0.5);
    let segments: Vec<[f32; 4]> = list
        .edges
        .iter()
        .map(|e| [px(e[0], sx, lo[0], w), px(e[1], sy, lo[1], h), px(e[2], sx, lo[0], w), px(e[3], sy, lo[1], h)])
        .collect();
    let weights = list.quantised_weights();
    let input = DensityInput { segments: &segments, weights: weights.as_deref(), width: w, height: h };
    let mut times = Vec::new();
    let mut image = None;
    for run in 0..args.warmup.saturating_add(args.runs) {
        let t = Instant::now();
        image = Some(if args.points {
            // Timed from the data's coordinates, as the peer's canvas maps them.
            let cell = |v: f32, l: f32, s: f32, n: u32| (px(v, s, l, n).max(0.0) as u32).min(n - 1);
            let xs: Vec<u32> = list.edges.par_iter().map(|e| cell(e[0], lo[0], sx, w)).collect();
            let ys: Vec<u32> = list.edges.par_iter().map(|e| cell(e[1], lo[1], sy, h)).collect();
            let input = HeatmapInput {
                x: AxisKey::Id { keys: &xs, extent: w },
                y: AxisKey::Id { keys: &ys, extent: h },
                weights: None,
            };
            let grid = stages::bin_heatmap::run(backend.runner().as_mut(), &input)?;
            stages::DensityImage { width: w, height: h, sums: vec![0; grid.counts.len()], counts: grid.counts }
        } else {
            stages::line_density::run(backend.runner().as_mut(), &input)?
        });
        if run >= args.warmup {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    let image = image.context("no run")?;
    if let Some(out) = &args.out {
        let tone = match args.tone {
            ToneArg::Linear => ToneMap::Linear,
            ToneArg::Log => ToneMap::Log,
            ToneArg::Eq => ToneMap::Equalize,
        };
        let title = format!("Line density: {} ({} segments)", args.input.display(), segments.len());
        let x_range = [f64::from(lo[0]), f64::from(hi[0])];
        let y_range = [f64::from(lo[1]), f64::from(hi[1])];
        let picture = density_picture(&backend, &image, tone, ColorMap::Viridis, &title, x_range, y_range)?;
        write_png_atomic(out, &picture).with_context(|| format!("{}: cannot write", out.display()))?;
    }
    let sum: u64 = image.counts.iter().map(|&c| u64::from(c)).sum();
    let extra = serde_json::json!({ "size": args.size, "sum_of_counts": sum });
    let what = if args.points { "points" } else { "aggregate" };
    report(what, &backend, segments.len(), &times, start.elapsed().as_secs_f64(), extra);
    Ok(())
}
