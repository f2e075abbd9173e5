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
    /// What if some work were faster: the dependency graph replayed and the critical path it
    /// would have, per step and in all. WHO: processes (`rank 5`, `rank 4-7`, any part of a
    /// name), whose work in each step becomes their peers' median; or `region:NAME` (`*` and `?`
    /// match), whose time is removed, or scaled with `region:NAME*0.5`. Repeat to compare.
    #[arg(long = "what-if", value_name = "WHO")]
    pub what_if: Vec<String>,
}

pub fn run(args: &Args) -> Result<()> {
    let asks = args
        .what_if
        .iter()
        .map(|w| exaviz_analysis::critical_path::what_if::parse(w))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let dataset = crate::common::load(&args.input)?;
    // A store too large to hold is read and analysed chunk by chunk: a bar of the chunks.
    let template = "{msg} [{bar:32}] chunk {pos}/{len} ({eta} left)";
    let report = crate::common::with_progress("finding the critical path", template, |p| {
        exaviz_analysis::critical_path::analyse_what_if(&dataset, args.window.from, args.window.to, &asks, &|k, n| {
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
        let regions: Vec<String> = n.regions.iter().map(|r| format!("{} {}", r.region, time(r.excess_s))).collect();
        let within = if regions.is_empty() { String::new() } else { format!(", in {}", regions.join(", ")) };
        let _ = writeln!(
            o,
            "  {}: works longer in {} of {} steps, {} beyond the median{within}",
            n.process,
            n.steps,
            n.of_steps,
            time(n.excess_s)
        );
    }
    if !s.rows.is_empty() {
        straggler_rows(&mut o, s, top);
    }
    what_if_table(&mut o, &r.what_if, top);
    o
}

/// The steps in which a process stood out.
fn straggler_rows(o: &mut String, s: &exaviz_analysis::critical_path::Stragglers, top: usize) {
    use std::fmt::Write;
    {
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
}

/// The projections asked for, one row each, then their savings step by step.
fn what_if_table(o: &mut String, w: &[exaviz_analysis::critical_path::WhatIf], top: usize) {
    use std::fmt::Write;
    if w.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nwhat if (the dependency graph replayed with that work faster)");
    let _ = writeln!(o, "{:<40} {:>12} {:>12} {:>12} {:>7} {:>12}", "", "path", "projected", "saves", "", "work less");
    for x in w {
        let share = if x.length_s > 0.0 { 100.0 * x.saved_s / x.length_s } else { 0.0 };
        let _ = writeln!(
            o,
            "{:<40} {:>12} {:>12} {:>12} {:>6.1}% {:>12}",
            clip(&x.who, 40),
            time(x.length_s),
            time(x.projected_s),
            time(x.saved_s),
            share,
            time(x.removed_s)
        );
        let picked: Vec<&str> = x.selected.iter().take(4).map(String::as_str).collect();
        let more = x.selected.len().saturating_sub(picked.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        let _ = writeln!(o, "  selects {}{more}", picked.join(", "));
    }
    let Some(first) = w.first().filter(|x| !x.steps.is_empty()) else { return };
    let _ = write!(o, "\nsaved per step\n{:<20} {:>12}", "step", "length");
    for x in w {
        let _ = write!(o, " {:>20}", clip(&x.who, 20));
    }
    let _ = writeln!(o);
    for (k, s) in first.steps.iter().enumerate().take(top) {
        let _ = write!(o, "{:<20} {:>12}", clip(&s.step, 20), time(s.length_s));
        for x in w {
            let saved = x.steps.get(k).map_or(String::new(), |s| time(s.saved_s));
            let _ = write!(o, " {saved:>20}");
        }
        let _ = writeln!(o);
    }
    if first.steps.len() > top {
        let _ = writeln!(o, "  ... {} more", first.steps.len() - top);
    }
}
