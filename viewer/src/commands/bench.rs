//! `exaviz bench`: bundlers compared on the same edges: time, ink ratio, distortion and endpoint
//! displacement, beside curves from other tools.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use exaviz_compute::Backend;
use exaviz_compute::BundleParams;
use exaviz_render::bundling;
use exaviz_render::bundling::Bundler;
use exaviz_render::{Anchor, Scene, View, render_scene, write_png_atomic};

use crate::common::BackendArg;
use crate::edges::*;

#[derive(clap::Args, Debug)]
pub struct Args {
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
    curves: exaviz_model::curves::Curves,
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
pub fn run(args: Args) -> Result<()> {
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
        let curves = bundling::curves_of(&bundled.context("no run")?);
        entries.push(Entry { name, curves, times, params });
    }
    for (name, file) in imported {
        let mut curves = exaviz_formats::edges_csv::read_curves(file, edges.len())?;
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
        crate::layout_metrics::harness_keys(&mut row, "bundling", &args.input, &e.name, secs, &BUNDLE_MEASURES);
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
    let mut scene = Scene::new(w, h, exaviz_views::BACKGROUND);
    let (text, dim) = (exaviz_views::TEXT, exaviz_views::TEXT_DIM);
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
        scene.raster(exaviz_render::Raster::rgba([x, y, x + side as f32, y + side as f32], side, side, pixels));
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
