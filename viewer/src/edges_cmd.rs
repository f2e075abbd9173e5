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
use exaviz_engine::render::{Anchor, ColorMap, Scene, ToneMap, View, render_scene, write_atomic, write_png_atomic};
use exaviz_engine::stages::kde_bundle::UnitFrame;
use exaviz_engine::stages::{self, AxisKey, BundleParams, Bundled, DensityInput, HeatmapInput};
use exaviz_engine::views::density::density_picture;

use crate::common::BackendArg;

/// The CSV commands' KDE defaults: as strong as hammer_bundle's on the benchmark sets.
const D: BundleParams = BundleParams::STRONG;

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
    /// Also draw the bundled edges to this PNG (density by histogram equalisation, cyan at the
    /// source, yellow at the target).
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
    let pb = crate::common::spinner(&format!("reading {input}"));
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

/// The bundled curves as a picture, shaded as `exaviz bench --sheet` shades them: density by
/// histogram equalisation, coloured by the share of the way from source to target (cyan to
/// yellow, apart for colour-blind readers), a title and a legend.
fn draw_bundles(backend: &Backend, bundled: &Bundled, title: &str, method: &str, png: &Path) -> Result<()> {
    let (w, h) = (900u32, 800u32);
    let mut scene = Scene::new(w, h, exaviz_engine::views::BACKGROUND);
    let (ox, oy, side) = (50.0f32, 70.0f32, 700u32);
    let pixels = bundling::direction_density(backend.runner().as_mut(), bundled, side)?;
    let s = side as f32;
    scene.raster(exaviz_engine::render::Raster::rgba([ox, oy, ox + s, oy + s], side, side, pixels));
    let text = exaviz_engine::views::TEXT;
    scene.text(title, [16.0, 28.0], 15.0, Anchor::Left, text);
    scene.text(
        &format!("{} edges, bundled: {method}", bundled.len()),
        [16.0, 48.0],
        12.0,
        Anchor::Left,
        exaviz_engine::views::TEXT_DIM,
    );
    // Legend: the direction gradient, and what brightness means.
    let (lx, ly) = (770.0f32, 100.0f32);
    scene.text("direction", [lx, ly - 10.0], 13.0, Anchor::Left, text);
    for i in 0..40 {
        let c = exaviz_engine::views::plot::direction_colour(i as f32 / 39.0);
        scene.rect([lx, ly + i as f32 * 4.0], [lx + 16.0, ly + i as f32 * 4.0 + 4.0], [c[0], c[1], c[2], 1.0], true);
    }
    scene.text("source", [lx + 22.0, ly + 10.0], 11.0, Anchor::Left, text);
    scene.text("target", [lx + 22.0, ly + 160.0], 11.0, Anchor::Left, text);
    scene.text("brighter: more", [lx, ly + 190.0], 11.0, Anchor::Left, exaviz_engine::views::TEXT_DIM);
    scene.text("edges (equalised)", [lx, ly + 204.0], 11.0, Anchor::Left, exaviz_engine::views::TEXT_DIM);
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
    let pb = crate::common::spinner(&format!(
        "bundling {} edges ({}) on {}",
        unit.len(),
        bundler.name(),
        backend.describe()
    ));
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
    /// Curves from another tool on the same edges, measured beside exaviz's bundlers: NAME=FILE,
    /// FILE in the `edge_id,x,y` format `exaviz bundle --out` writes (Datashader's hammer_bundle
    /// output is converted by benches/peer_compare.py). Repeatable.
    #[arg(long, value_name = "NAME=FILE")]
    curves: Vec<String>,
    /// Also search KDE's kernel, decay and iterations for the fastest setting whose ink ratio is
    /// at most R (to compare speed at equal bundling strength), and report it as `kde@ink<=R`.
    #[arg(long, value_name = "R")]
    match_ink: Option<f64>,
    /// Draw every bundler's and every curves file's result side by side, with the same shading
    /// (density by histogram equalisation, coloured by direction) and the measures under each.
    #[arg(long, value_name = "FILE.png")]
    sheet: Option<PathBuf>,
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

/// The bundling harness's measures (see docs/bundling.md).
const BUNDLE_MEASURES: [&str; 8] = [
    "ink_ratio",
    "distortion_mean",
    "distortion_max",
    "mean_displacement",
    "endpoint_displacement_max",
    "ink_top1_share",
    "overdraw",
    "resolution",
];

/// One compared result: its name, its curves (unit square), its times (none for curves from
/// files) and the KDE parameters that made it, if any.
struct Entry {
    name: String,
    curves: bundling::Curves,
    times: Vec<f64>,
    params: Option<BundleParams>,
}

/// KDE settings tried by `--match-ink`, from the lightest bundling to the strongest.
fn ink_search_grid() -> Vec<BundleParams> {
    let mut grid = Vec::new();
    for iterations in [5, 10, 15, 20] {
        for kernel in [0.06, 0.08, 0.1, 0.125, 0.15, 0.2] {
            for decay in [0.8, 0.9] {
                grid.push(BundleParams { iterations, kernel, decay, ..BundleParams::DEFAULT });
            }
        }
    }
    grid
}

/// The fastest KDE setting of [`ink_search_grid`] whose ink ratio is at most `target` (each
/// tried once; the strongest tried when none reaches it).
fn match_ink(
    backend: &Backend,
    edges: &[[f32; 4]],
    weights: Option<&[u32]>,
    target: f64,
    resolution: u32,
) -> Result<(BundleParams, bool)> {
    let pb = crate::common::spinner(&format!("searching KDE settings for ink ratio <= {target}"));
    let mut best: Option<(f64, BundleParams)> = None;
    let mut strongest: Option<(f64, BundleParams)> = None;
    for params in ink_search_grid() {
        let t = Instant::now();
        let b = Bundler::Kde(params).run(backend.runner().as_mut(), edges, weights)?;
        let secs = t.elapsed().as_secs_f64();
        let q = bundling::quality(backend.runner().as_mut(), edges, &b, resolution)?;
        if q.ink_ratio <= target && best.is_none_or(|(s, _)| secs < s) {
            best = Some((secs, params));
        }
        if strongest.is_none_or(|(ink, _)| q.ink_ratio < ink) {
            strongest = Some((q.ink_ratio, params));
        }
    }
    pb.finish_and_clear();
    match (best, strongest) {
        (Some((_, p)), _) => Ok((p, true)),
        (None, Some((_, p))) => Ok((p, false)),
        _ => bail!("no KDE setting to try"),
    }
}

/// `NAME=FILE` of `--curves`.
fn curves_arg(arg: &str) -> Result<(&str, &Path)> {
    let (name, file) = arg
        .split_once('=')
        .filter(|(n, f)| !n.is_empty() && !f.is_empty())
        .with_context(|| format!("--curves {arg}: expected NAME=FILE (e.g. hammer=hammer_curves.csv)"))?;
    Ok((name, Path::new(file)))
}

/// `exaviz bench`: each bundler's time and quality (ink ratio, distortion, shifts, ink in the
/// densest pixels, overdraw) on the same edges, beside curves from other tools.
pub fn bench(args: BenchArgs) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !(16..=8192).contains(&args.resolution) {
        bail!("--resolution must be 16 to 8192, not {}", args.resolution);
    }
    if let Some(r) = args.match_ink.filter(|r| !(r.is_finite() && *r > 0.0)) {
        bail!("--match-ink {r}: expected an ink ratio above 0");
    }
    let imported: Vec<(&str, &Path)> = args.curves.iter().map(|a| curves_arg(a)).collect::<Result<_>>()?;
    let mut list = read_edges(&args.input)?;
    let backend = Backend::new(args.backend.into())?;
    let weights = list.quantised_weights();
    let frame = to_unit(&mut list.edges);
    let edges = list.edges;
    let mut entries = Vec::new();
    let mut todo: Vec<(String, Bundler, Option<BundleParams>)> = Vec::new();
    for &arg in &args.bundler {
        let b = bundler_of(arg, D, args.beta)?;
        todo.push((b.name().to_string(), b, (arg == BundlerArg::Kde).then_some(D)));
    }
    let mut matched = None;
    if let Some(target) = args.match_ink {
        let (params, reached) = match_ink(&backend, &edges, weights.as_deref(), target, args.resolution)?;
        let name = if reached { format!("kde@ink<={target}") } else { format!("kde@strongest(ink>{target})") };
        matched = Some(reached);
        todo.push((name, Bundler::Kde(params), Some(params)));
    }
    for (name, bundler, params) in todo {
        let pb = crate::common::spinner(&format!("{name}: {} edges on {}", edges.len(), backend.describe()));
        let mut times = Vec::new();
        let mut bundled = None;
        for _ in 0..args.runs {
            let t = Instant::now();
            bundled = Some(bundler.run(backend.runner().as_mut(), &edges, weights.as_deref())?);
            times.push(t.elapsed().as_secs_f64());
        }
        pb.finish_and_clear();
        let curves = bundling::Curves::of(&bundled.context("no run")?);
        entries.push(Entry { name, curves, times, params });
    }
    for (name, file) in imported {
        let mut curves = exaviz_datasets::edges_csv::read_curves(file, edges.len())?;
        curves.points.iter_mut().for_each(|p| *p = frame.to_unit(*p));
        entries.push(Entry { name: name.to_string(), curves, times: Vec::new(), params: None });
    }
    let mut rows = Vec::new();
    let mut measures = Vec::new();
    for e in &entries {
        let q = bundling::quality(backend.runner().as_mut(), &edges, &e.curves, args.resolution)
            .map_err(|err| anyhow::anyhow!("{}: {err}", e.name))?;
        let mut row = serde_json::json!({
            "input": args.input, "bundler": e.name, "backend": backend.describe(), "edges": edges.len(),
            "runs_s": e.times.iter().map(|t| (t * 1e4).round() / 1e4).collect::<Vec<_>>(),
            "median_s": (!e.times.is_empty()).then(|| (median(&e.times) * 1e4).round() / 1e4),
        });
        if let Some(p) = e.params {
            row["kde"] = serde_json::json!({"kernel": p.kernel, "decay": p.decay, "iterations": p.iterations});
        }
        if e.name.starts_with("kde@") {
            row["ink_target"] = serde_json::json!(args.match_ink);
            row["ink_target_reached"] = serde_json::json!(matched);
        }
        if let (Some(o), Ok(serde_json::Value::Object(m))) = (row.as_object_mut(), serde_json::to_value(q)) {
            o.extend(m);
        }
        let secs = (!e.times.is_empty()).then(|| median(&e.times));
        crate::layout_cmd::harness_keys(&mut row, "bundling", &args.input, &e.name, secs, &BUNDLE_MEASURES);
        measures.push(q);
        rows.push(row);
    }
    if let Some(sheet) = &args.sheet {
        draw_sheet(&backend, &args.input, &entries, &measures, sheet)?;
    }
    if args.json {
        println!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    print_bench_table(&args.input, &backend, edges.len(), args.resolution, &rows);
    Ok(())
}

fn print_bench_table(input: &str, backend: &Backend, n: usize, resolution: u32, rows: &[serde_json::Value]) {
    println!("{n} edges from {input} on {}; ink counted at {resolution}²", backend.describe());
    println!(
        "{:<22} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10} {:>9} {:>9}",
        "bundler",
        "median s",
        "ink ratio",
        "distortion",
        "dist max",
        "mean shift",
        "end shift",
        "top-1% ink",
        "overdraw"
    );
    for r in rows {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        let time = r["median_s"].as_f64().map_or("-".to_string(), |t| format!("{t:.4}"));
        println!(
            "{:<22} {:>9} {:>9.3} {:>10.3} {:>9.3} {:>10.4} {:>10.2e} {:>9.3} {:>9.2}",
            r["bundler"].as_str().unwrap_or("?"),
            time,
            f("ink_ratio"),
            f("distortion_mean"),
            f("distortion_max"),
            f("mean_displacement"),
            f("endpoint_displacement_max"),
            f("ink_top1_share"),
            f("overdraw")
        );
    }
}

/// The contact sheet: every entry's curves with the same shading, the measures under each.
fn draw_sheet(
    backend: &Backend,
    input: &str,
    entries: &[Entry],
    measures: &[bundling::BundleQuality],
    path: &Path,
) -> Result<()> {
    let side = 360u32;
    let cols = entries.len().clamp(1, 4) as u32;
    let rows = (entries.len() as u32).div_ceil(cols).max(1);
    let (cw, ch) = (side + 40, side + 120);
    let (w, h) = (cols * cw + 20, rows * ch + 70);
    let mut scene = Scene::new(w, h, exaviz_engine::views::BACKGROUND);
    let (text, dim) = (exaviz_engine::views::TEXT, exaviz_engine::views::TEXT_DIM);
    scene.text(&format!("Bundlings of {input}"), [16.0, 26.0], 15.0, Anchor::Left, text);
    scene.text(
        "density by histogram equalisation; colour: share of the way from source (cyan) to target (yellow)",
        [16.0, 46.0],
        11.0,
        Anchor::Left,
        dim,
    );
    for (k, (e, q)) in entries.iter().zip(measures).enumerate() {
        let (c, r) = (k as u32 % cols, k as u32 / cols);
        let (x, y) = ((20 + c * cw) as f32, (60 + r * ch) as f32);
        let pixels = bundling::direction_density(backend.runner().as_mut(), &e.curves, side)?;
        scene.rect([x - 1.0, y - 1.0], [x + side as f32 + 1.0, y + side as f32 + 1.0], [0.25, 0.26, 0.3, 1.0], true);
        scene.raster(exaviz_engine::render::Raster::rgba([x, y, x + side as f32, y + side as f32], side, side, pixels));
        let time = match e.times.is_empty() {
            true => "time: not run here".to_string(),
            false => format!("median {:.1} ms", median(&e.times) * 1e3),
        };
        let lines = [
            format!("{} · {time}", e.name),
            format!("ink ratio {:.3} · top-1% ink {:.3} · overdraw {:.2}", q.ink_ratio, q.ink_top1_share, q.overdraw),
            format!(
                "distortion {:.3} (max {:.2}) · mean shift {:.4}",
                q.distortion_mean, q.distortion_max, q.mean_displacement
            ),
            format!("endpoint shift {:.1e}", q.endpoint_displacement_max),
        ];
        for (i, l) in lines.iter().enumerate() {
            let size = if i == 0 { 13.0 } else { 11.0 };
            let colour = if i == 0 { text } else { dim };
            scene.text(l, [x, y + side as f32 + 20.0 + 17.0 * i as f32], size, Anchor::Left, colour);
        }
    }
    let image = render_scene(backend, &scene, View::default())?;
    write_png_atomic(path, &image).with_context(|| format!("{}: cannot write", path.display()))
}

pub fn aggregate(args: AggregateArgs) -> Result<()> {
    let start = Instant::now();
    let (w, h) = crate::common::parse_size(&args.size)?;
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
    // The points (the first end of each row) as two columns, as the peer's frame holds them.
    let (xs, ys): (Vec<f32>, Vec<f32>) =
        if args.points { list.edges.iter().map(|e| (e[0], e[1])).unzip() } else { Default::default() };
    let mut times = Vec::new();
    let mut image = None;
    for run in 0..args.warmup.saturating_add(args.runs) {
        let t = Instant::now();
        image = Some(if args.points {
            // Timed from the data's coordinates, as the peer's canvas maps them.
            let input = HeatmapInput {
                x: AxisKey::scaled(&xs, lo[0], hi[0], w),
                y: AxisKey::scaled(&ys, lo[1], hi[1], h),
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
