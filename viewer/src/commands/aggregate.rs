//! `exaviz aggregate`: the segments of a CSV file into a line-density image (and a PNG), as
//! Datashader's `Canvas.line` aggregates them.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_compute::DensityInput;
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_render::{ColorMap, ToneMap, write_png_atomic};
use exaviz_views::density::density_picture;

use crate::common::BackendArg;
use crate::edges::*;

#[derive(clap::Args, Debug)]
pub struct Args {
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
    /// With --points on the GPU backend: keep the points' columns on the device between runs,
    /// as a view binning a dataset's columns again finds them, so that every run after the
    /// first uploads only its parameters.
    #[arg(long, requires = "points")]
    kept: bool,
}

pub fn run(args: Args) -> Result<()> {
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
    let columns: std::sync::Arc<(Vec<f32>, Vec<f32>)> = std::sync::Arc::new(if args.points {
        list.edges.iter().map(|e| (e[0], e[1])).unzip()
    } else {
        Default::default()
    });
    let (xs, ys) = (&columns.0, &columns.1);
    let owner: stages::Owner = columns.clone();
    let mut times = Vec::new();
    let mut image = None;
    for run in 0..args.warmup.saturating_add(args.runs) {
        let t = Instant::now();
        image = Some(if args.points {
            // Timed from the data's coordinates, as the peer's canvas maps them.
            let input = HeatmapInput {
                x: AxisKey::scaled(xs, lo[0], hi[0], w),
                y: AxisKey::scaled(ys, lo[1], hi[1], h),
                weights: None,
            };
            let grid = if args.kept {
                stages::bin_heatmap::run_kept(backend.runner().as_mut(), &input, &owner)?
            } else {
                stages::bin_heatmap::run(backend.runner().as_mut(), &input)?
            };
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
    let (up, back) = backend.traffic();
    let extra = serde_json::json!({
        "size": args.size, "sum_of_counts": sum, "kept": args.kept,
        "gpu_upload_mb": up as f64 / 1e6, "gpu_readback_mb": back as f64 / 1e6,
    });
    let what = if args.points { "points" } else { "aggregate" };
    report(what, &backend, segments.len(), &times, start.elapsed().as_secs_f64(), extra);
    Ok(())
}
