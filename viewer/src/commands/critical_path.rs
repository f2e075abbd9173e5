//! `exaviz critical-path`: why a run took as long as it did. The critical path through ranks,
//! threads and GPU streams (messages, collectives, kernel launches, synchronisations), its time
//! by region, row and kind; the root causes of the waiting (Scalasca's delay analysis); and the
//! stragglers of each step by robust statistics.

use anyhow::Result;
use exaviz_analysis::critical_path::Report;

use crate::text::{clip, root_cause_table, time};

/// `exaviz critical-path` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(help = crate::common::input_help())]
    pub input: String,
    #[command(flatten)]
    pub window: crate::common::WindowArgs,
    /// Rows listed per table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Print JSON instead of tables (with every segment of the path).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> Result<()> {
    let dataset = crate::common::load(&args.input)?;
    // A store too large to hold is read and analysed chunk by chunk: a bar of the chunks.
    let template = "{msg} [{bar:32}] chunk {pos}/{len} ({eta} left)";
    let report = crate::common::with_progress("finding the critical path", template, |p| {
        exaviz_analysis::critical_path::analyse_asked_with(&dataset, args.window.from, args.window.to, &|k, n| {
            p(k as u64, n as u64);
        })
    })
    .map_err(|e| anyhow::anyhow!("{}: {e}", args.input))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&args.input, &report, args.top));
    }
    Ok(())
}

/// The report as tables.
pub fn text(input: &str, r: &Report, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{input}: critical path from {} to {} since the trace's start: {} long, across {} edges",
        time(r.from_s),
        time(r.to_s),
        time(r.length_s),
        r.jumps
    );
    for (title, rows) in [
        ("by what it is", &r.shares.by_kind),
        ("by row", &r.shares.by_location),
        ("by region (innermost)", &r.shares.by_region),
    ] {
        let _ = writeln!(o, "\ncritical path {title}\n{:<56} {:>12} {:>7}", "", "time", "share");
        for s in rows.iter().take(top) {
            let _ = writeln!(o, "{:<56} {:>12} {:>6.1}%", clip(&s.name, 56), time(s.seconds), 100.0 * s.share);
        }
        if rows.len() > top {
            let _ = writeln!(o, "  ... {} more", rows.len() - top);
        }
    }
    let _ = writeln!(o, "\nwait states: {} ({} in all)", r.wait_states, time(r.waiting_s));
    root_cause_table(&mut o, &r.root_causes, top);
    let s = &r.stragglers;
    let _ = writeln!(
        o,
        "\nstragglers ({} step{}; work beyond the peers' median by over 3 robust deviations and 10%)",
        s.steps,
        if s.steps == 1 { "" } else { "s" }
    );
    if s.named.is_empty() {
        let _ = writeln!(o, "  none");
    }
    for n in s.named.iter().take(top) {
        let _ = writeln!(
            o,
            "  {}: works longer in {} of {} steps, {} beyond the median",
            n.process,
            n.steps,
            n.of_steps,
            time(n.excess_s)
        );
    }
    if !s.rows.is_empty() {
        let _ = writeln!(
            o,
            "{:<20} {:<32} {:>12} {:>12} {:>12} {:>12}  verdict",
            "step", "process", "work", "median", "wait", "median"
        );
        for x in s.rows.iter().take(top) {
            let _ = writeln!(
                o,
                "{:<20} {:<32} {:>12} {:>12} {:>12} {:>12}  {}",
                clip(&x.step, 20),
                clip(&x.process, 32),
                time(x.work_s),
                time(x.median_work_s),
                time(x.wait_s),
                time(x.median_wait_s),
                x.verdict
            );
        }
    }
    o
}
