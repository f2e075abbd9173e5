//! `exaviz summary`: the numbers of an area of a trace (a time window over a range of rows), the
//! table Perfetto's area selection and Vampir's function summary give: time per region, messages
//! per pair, collectives, counters and late-sender waiting.

use anyhow::{Context, Result, bail};
use exaviz_engine::summary::{Area, Summary, summarize};

/// `exaviz summary` options.
#[derive(clap::Args, Debug)]
pub struct SummaryArgs {
    #[arg(help = crate::INPUT_HELP)]
    pub input: String,
    /// Start of the area, seconds since the trace's start (default: the start).
    #[arg(long)]
    pub from: Option<f64>,
    /// End of the area, seconds since the trace's start (default: the end).
    #[arg(long)]
    pub to: Option<f64>,
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

/// Rows `A-B` or `A` of `n`.
fn rows(spec: Option<&str>, n: usize) -> Result<(u32, u32)> {
    let last = n.saturating_sub(1) as u32;
    let Some(spec) = spec else { return Ok((0, last)) };
    let number = |s: &str| -> Result<u32> {
        s.trim().parse::<u32>().with_context(|| format!("--ranks {spec}: '{s}' is not a row number (A-B or A)"))
    };
    let (a, b) = match spec.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(spec)?, number(spec)?),
    };
    if a > b || b > last {
        bail!("--ranks {spec}: the trace has rows 0-{last}, and A may not exceed B");
    }
    Ok((a, b))
}

pub fn run(args: &SummaryArgs) -> Result<()> {
    let dataset = crate::load(&args.input)?;
    let t = &dataset.trace;
    let whole = dataset
        .out_of_core
        .as_ref()
        .map(|o| o.span)
        .or_else(|| exaviz_engine::views::trace::span(t))
        .with_context(|| format!("{}: the trace has no intervals or messages to summarise", args.input))?;
    let tps = t.ticks_per_second.max(1) as f64;
    let at = |s: f64, name: &str| -> Result<u64> {
        if !s.is_finite() || s < 0.0 {
            bail!("--{name} {s}: not a time in seconds from the trace's start");
        }
        Ok(whole.0.saturating_add((s * tps).min(u64::MAX as f64) as u64))
    };
    let from = args.from.map(|s| at(s, "from")).transpose()?.unwrap_or(whole.0);
    let to = args.to.map(|s| at(s, "to")).transpose()?.unwrap_or(whole.1.saturating_add(1));
    if from >= to {
        bail!("the area from {} s to {} s is empty", args.from.unwrap_or(0.0), args.to.unwrap_or(0.0));
    }
    let rows_of_window = dataset.window_rows((from, to)).map_err(|e| anyhow::anyhow!("{}: {e}", args.input))?;
    let (first, last) = rows(args.ranks.as_deref(), rows_of_window.trace.locations.name.len())?;
    let s = summarize(&rows_of_window.trace, Area { from, to, first, last }, args.top);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", text(&args.input, &s));
    }
    Ok(())
}

/// Seconds in a short unit.
fn time(s: f64) -> String {
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
fn bytes(b: u64) -> String {
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
fn clip(s: &str, n: usize) -> String {
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
    fn rows_are_checked() {
        assert_eq!(rows(None, 4).unwrap(), (0, 3));
        assert_eq!(rows(Some("1-2"), 4).unwrap(), (1, 2));
        assert_eq!(rows(Some("3"), 4).unwrap(), (3, 3));
        assert!(rows(Some("2-9"), 4).unwrap_err().to_string().contains("rows 0-3"));
        assert!(rows(Some("x"), 4).unwrap_err().to_string().contains("not a row number"));
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
        let lines = panel_lines(&exaviz_engine::summary::summarize(&t, area, 10));
        assert!(lines.iter().all(|l| l.chars().count() <= 34), "{lines:?}");
        assert!(lines[0].contains("2 rows") && lines[2].starts_with("a_region_wi…") && lines[2].contains("1.75 s"));
        let empty = exaviz_engine::summary::Area { from: 960, to: 1000, first: 0, last: 1 };
        assert_eq!(panel_lines(&exaviz_engine::summary::summarize(&t, empty, 10))[1], "nothing here");
        assert_eq!(
            (short(12360.078), short(0.0123), bytes(24545)),
            ("12360 s".into(), "12.30 ms".into(), "24.5 kB".into())
        );
    }
}
