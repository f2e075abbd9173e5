//! `exaviz bundle`: the edges of a CSV file bundled into curves (`edge_id,x,y`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use exaviz_compute::Backend;
use exaviz_compute::BundleParams;
use exaviz_render::bundling;

use crate::common::BackendArg;
use crate::edges::*;

#[derive(clap::Args, Debug)]
pub struct Args {
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

pub fn run(args: Args) -> Result<()> {
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
