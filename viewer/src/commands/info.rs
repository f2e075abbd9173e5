//! `exaviz info`: what an input holds, typed locations and counters included.

use anyhow::Result;

use crate::common::load;
use crate::holds;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(help = crate::common::input_help())]
    pub input: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> Result<()> {
    info_cmd(&args.input, args.json)
}

/// `exaviz info`: what an input holds, typed locations and counters included.
fn info_cmd(input: &str, json: bool) -> Result<()> {
    let dataset = load(input)?;
    if let Some(t) = &dataset.fattree {
        return holds::fattree(input, t, json);
    }
    // An operator graph alone; beside a profile, the profile's summary and one line on the graph.
    if let Some(g) = dataset.opgraph.as_ref().filter(|_| dataset.training.is_none()) {
        return holds::opgraph(input, g, json);
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
        if s.instants > 0 {
            println!("instants:     {}", s.instants);
        }
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
