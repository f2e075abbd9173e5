//! `exaviz summary`: the numbers of an area of a trace (a time window over a range of rows), the
//! table Perfetto's area selection and Vampir's function summary give: time per region, messages
//! per pair, collectives, counters and late-sender waiting.

use anyhow::Result;
use exaviz_engine::summary::{AreaAsked, Summary, summarize_asked};

/// `exaviz summary` options.
#[derive(clap::Args, Debug)]
pub struct SummaryArgs {
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

pub fn run(args: &SummaryArgs) -> Result<()> {
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

/// Seconds in a short unit.
pub(crate) fn time(s: f64) -> String {
    match s.abs() {
        v if v >= 1.0 => format!("{s:.3} s"),
        v if v >= 1e-3 => format!("{:.3} ms", s * 1e3),
        _ => format!("{:.3} µs", s * 1e6),
    }
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

/// The summary in lines narrow enough for the window's panel (about 32 characters): the area,
/// where its time goes (the busiest regions), its messages and pairs, its late-sender waiting;
/// "nothing here" for an area without states or messages.
pub fn panel_lines(s: &Summary) -> Vec<String> {
    let mut o = vec![format!("{} to {}, {} rows", short(s.from_s), short(s.to_s), s.locations.len())];
    if s.regions.is_empty() && s.messages == 0 {
        o.push("nothing here".into());
        return o;
    }
    if !s.regions.is_empty() {
        o.push(format!("{:<12} {:>5} {:>8} {:>4}", "region", "count", "self", "share"));
        for r in s.regions.iter().take(PANEL_REGIONS) {
            o.push(format!(
                "{:<12} {:>5} {:>8} {:>3.0}%",
                clip(&r.name, 12),
                r.count,
                short(r.self_s),
                r.share * 100.0
            ));
        }
        if s.regions.len() > PANEL_REGIONS {
            o.push(format!("+{} regions (exaviz summary)", s.regions.len() - PANEL_REGIONS));
        }
    }
    o.push(format!("{} messages, {}", s.messages, bytes(s.bytes)));
    for p in s.pairs.iter().take(PANEL_PAIRS) {
        o.push(format!("  {} → {}: {} × {}", p.source, p.destination, p.count, bytes(p.bytes)));
    }
    let count: u64 = s.waits_by_location.iter().map(|w| w.count).sum();
    if count > 0 {
        let waits: f64 = s.waits_by_location.iter().map(|w| w.late_sender_s).sum();
        o.push(format!("late sender: {count} waits, {}", short(waits)));
    }
    let count: u64 = s.late_receivers_by_location.iter().map(|w| w.count).sum();
    if count > 0 {
        let waits: f64 = s.late_receivers_by_location.iter().map(|w| w.late_receiver_s).sum();
        o.push(format!("late receiver: {count} waits, {}", short(waits)));
    }
    for c in s.collectives.iter().take(PANEL_PAIRS) {
        o.push(format!("{}: {} ×, {}", clip(&c.name, 14), c.count, short(c.total_s)));
    }
    if !s.root_causes.is_empty() {
        o.push("root causes of the waiting:".into());
        for c in s.root_causes.iter().take(PANEL_PAIRS) {
            let cost = short(c.direct_s + c.propagated_s);
            o.push(format!("  {} {}: {cost}", clip(&c.location, 12), clip(&c.region, 9)));
        }
    }
    o
}

/// Seconds in three or four digits and a unit.
fn short(s: f64) -> String {
    let (v, unit) = match s.abs() {
        a if a >= 1.0 => (s, "s"),
        a if a >= 1e-3 => (s * 1e3, "ms"),
        _ => (s * 1e6, "µs"),
    };
    if v.abs() >= 100.0 { format!("{v:.0} {unit}") } else { format!("{v:.2} {unit}") }
}

/// Bytes with a decimal prefix.
pub(crate) fn bytes(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} kB", b as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        _ => format!("{:.1} GB", b as f64 / 1e9),
    }
}

/// Regions and pairs the panel lists at most.
const PANEL_REGIONS: usize = 8;
const PANEL_PAIRS: usize = 3;

/// `s` cut to `n` characters with an ellipsis.
/// The root causes of waiting, `top` rows at most.
pub(crate) fn root_cause_table(o: &mut String, rows: &[exaviz_engine::whyslow::CauseRow], top: usize) {
    use std::fmt::Write;
    let _ = writeln!(o, "\nroot causes of waiting (delays that made others wait: direct, and through their waiting)");
    if rows.is_empty() {
        let _ = writeln!(o, "  none");
        return;
    }
    let _ = writeln!(o, "{:<40} {:<32} {:>12} {:>12} {:>9}", "row", "region", "direct", "propagated", "waits");
    for r in rows.iter().take(top) {
        let _ = writeln!(
            o,
            "{:<40} {:<32} {:>12} {:>12} {:>9}",
            clip(&r.location, 40),
            clip(&r.region, 32),
            time(r.direct_s),
            time(r.propagated_s),
            r.waits
        );
    }
}

pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut c: String = s.chars().take(n - 1).collect();
    c.push('…');
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_clipped() {
        assert_eq!(clip("MPI_Allreduce", 5), "MPI_…");
    }

    #[test]
    fn the_panel_lines_are_narrow_and_say_when_an_area_is_empty() {
        let t = exaviz_engine::model::Trace {
            ticks_per_second: 1000,
            locations: exaviz_engine::model::Locations { name: vec!["a".into(), "b".into()], ..Default::default() },
            region_names: vec!["a_region_with_a_long_name".into()],
            intervals: exaviz_engine::model::Intervals {
                location: vec![0, 1],
                start: vec![0, 100],
                end: vec![900, 950],
                kind: vec![0, 0],
                depth: vec![0, 0],
            },
            ..Default::default()
        };
        let area = exaviz_engine::summary::Area { from: 0, to: 1000, first: 0, last: 1 };
        let mut summary = exaviz_engine::summary::summarize(&t, area, 10);
        summary.root_causes.push(exaviz_engine::whyslow::CauseRow {
            location: "rank 0 python / thread 22402 (python)".into(),
            region: "aten::addmm".into(),
            direct_s: 0.0412,
            propagated_s: 0.0277,
            waits: 5,
        });
        let lines = panel_lines(&summary);
        assert!(lines.iter().all(|l| l.chars().count() <= 34), "{lines:?}");
        let cause = lines.iter().position(|l| l == "root causes of the waiting:").expect("the causes' title");
        assert!(lines[cause + 1].starts_with("  rank 0 pyth") && lines[cause + 1].ends_with("68.90 ms"), "{lines:?}");
        assert!(lines[0].contains("2 rows") && lines[2].starts_with("a_region_wi…") && lines[2].contains("1.75 s"));
        let empty = exaviz_engine::summary::Area { from: 960, to: 1000, first: 0, last: 1 };
        assert_eq!(panel_lines(&exaviz_engine::summary::summarize(&t, empty, 10))[1], "nothing here");
        assert_eq!(
            (short(12360.078), short(0.0123), bytes(24545)),
            ("12360 s".into(), "12.30 ms".into(), "24.5 kB".into())
        );
    }
}
