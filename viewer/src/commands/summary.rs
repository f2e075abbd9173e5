//! `exaviz summary`: the numbers of an area of a trace (a time window over a range of rows), the
//! table Perfetto's area selection and Vampir's function summary give: time per region, messages
//! per pair, collectives, counters and late-sender waiting.

use anyhow::Result;
use exaviz_analysis::summary::{AreaAsked, Summary, summarize_asked};

use crate::text::{clip, root_cause_table, time};

/// `exaviz summary` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(help = crate::common::input_help())]
    pub input: String,
    #[command(flatten)]
    pub window: crate::common::WindowArgs,
    /// Rows of the area, `A-B` or `A`, numbered from 0 as the timeline's rows (default: all).
    #[arg(long, value_name = "A-B")]
    pub ranks: Option<String>,
    /// Most communicating pairs listed (by bytes).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> Result<()> {
    let dataset = crate::common::load(&args.input)?;
    let asked =
        AreaAsked { from_s: args.window.from, to_s: args.window.to, ranks: args.ranks.as_deref(), top: args.top };
    let s = summarize_asked(&dataset, &asked).map_err(|e| anyhow::anyhow!("{}: {e}", args.input))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", text(&args.input, &s));
    }
    Ok(())
}

/// The summary as tables.
fn text(input: &str, s: &Summary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{input}: {} to {} since the trace's start, {} rows",
        time(s.from_s),
        time(s.to_s),
        s.locations.len()
    );
    let _ = writeln!(
        o,
        "\nregions (by self time)\n{:<40} {:>9} {:>12} {:>12} {:>12} {:>12} {:>7}",
        "name", "count", "self", "total", "mean", "max", "share"
    );
    for r in &s.regions {
        let _ = writeln!(
            o,
            "{:<40} {:>9} {:>12} {:>12} {:>12} {:>12} {:>6.1}%",
            clip(&r.name, 40),
            r.count,
            time(r.self_s),
            time(r.total_s),
            time(r.mean_s),
            time(r.max_s),
            r.share * 100.0
        );
    }
    let _ = writeln!(
        o,
        "\nmessages: {} ({} bytes); pairs by bytes\n{:>8} {:>8} {:>9} {:>14} {:>14}",
        s.messages, s.bytes, "from", "to", "count", "bytes", "mean latency"
    );
    for p in &s.pairs {
        let _ = writeln!(
            o,
            "{:>8} {:>8} {:>9} {:>14} {:>14}",
            p.source,
            p.destination,
            p.count,
            p.bytes,
            time(p.mean_latency_s)
        );
    }
    if !s.collectives.is_empty() {
        let _ = writeln!(o, "\ncollectives\n{:<24} {:>9} {:>12} {:>14}", "operation", "count", "time", "bytes");
        for c in &s.collectives {
            let _ = writeln!(o, "{:<24} {:>9} {:>12} {:>14}", clip(&c.name, 24), c.count, time(c.total_s), c.bytes);
        }
    }
    if !s.counters.is_empty() {
        let _ = writeln!(o, "\ncounters\n{:<40} {:>9} {:>14} {:>14} {:>14}", "name", "samples", "min", "mean", "max");
        for c in &s.counters {
            let _ = writeln!(
                o,
                "{:<40} {:>9} {:>14.4e} {:>14.4e} {:>14.4e}",
                clip(&c.name, 40),
                c.samples,
                c.min,
                c.mean,
                c.max
            );
        }
    }
    if !s.instants.is_empty() {
        let _ = writeln!(o, "\ninstants\n{:<40} {:<8} {:>9}", "name", "scope", "count");
        for i in s.instants.iter().take(20) {
            let _ = writeln!(o, "{:<40} {:<8} {:>9}", clip(&i.name, 40), i.scope, i.count);
        }
        if s.instants.len() > 20 {
            let _ = writeln!(o, "(and {} more names)", s.instants.len() - 20);
        }
    }
    let late: [Vec<_>; 2] = [&s.waits_by_location, &s.waits_by_region]
        .map(|rows| rows.iter().map(|w| (w.name.as_str(), w.count, w.late_sender_s)).collect());
    wait_tables(&mut o, "late sender (receivers blocked before the matching send began)", &late);
    let late: [Vec<_>; 2] = [&s.late_receivers_by_location, &s.late_receivers_by_region]
        .map(|rows| rows.iter().map(|w| (w.name.as_str(), w.count, w.late_receiver_s)).collect());
    wait_tables(&mut o, "late receiver (blocking sends that returned only after their later receive began)", &late);
    root_cause_table(&mut o, &s.root_causes, 20);
    o
}

/// A wait state's tables under `title`: (name, waits, seconds) by row and by region, or "none".
fn wait_tables(o: &mut String, title: &str, [by_row, by_region]: &[Vec<(&str, u64, f64)>; 2]) {
    use std::fmt::Write;
    let _ = writeln!(o, "\n{title}");
    if by_row.is_empty() {
        let _ = writeln!(o, "  none");
    }
    for (what, rows) in [("row", by_row), ("region", by_region)] {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(o, "{:<40} {:>9} {:>12}", format!("by {what}"), "waits", "time");
        for (name, count, seconds) in rows.iter().take(20) {
            let _ = writeln!(o, "{:<40} {:>9} {:>12}", clip(name, 40), count, time(*seconds));
        }
    }
}
