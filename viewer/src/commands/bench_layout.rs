//! `exaviz bench-layout`: every ordering's and embedding's locality and time on a list of tori.

use anyhow::{Context, Result};

use crate::common::load;
use crate::layout_metrics::{embedding_metrics, layout_rows, ordering_metrics, print_metrics_table};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Torus shapes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4x4x4x4x4,6x5x4x3x2,1x4x4x4x2,4x4x4x4x1,4x4x4x4x2,8x8x8")]
    pub dims: Vec<String>,
    /// Print JSON (one object per torus and ordering) instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> Result<()> {
    bench_layout_cmd(&args.dims, args.json)
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
