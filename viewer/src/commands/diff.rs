//! `exaviz diff A B`: what changed between two runs, per location, region, collective and pair of
//! locations, with whether each change stands out from the runs' step-to-step variation and
//! where it lies; `--fail-above PCT` makes it a performance gate for CI.

use anyhow::Result;
use exaviz_analysis::diff::{Change, Diff};

use crate::text::{clip, time};

/// `exaviz diff` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run A, the baseline (any input exaviz reads: files, folders of rank profiles, stores,
    /// gen:…).
    pub a: String,
    /// Run B, compared with A.
    pub b: String,
    /// The window of both runs, seconds since each run's own start.
    #[command(flatten)]
    pub window: crate::common::WindowArgs,
    /// Only these steps of each run: `FIRST-LAST` or `N`, ordinals from 0 of the steps the
    /// header names (Kineto's ProfilerStep#N in order, or the iterations found).
    #[arg(long, value_name = "FIRST-LAST")]
    pub steps: Option<String>,
    /// Rows listed per table.
    #[arg(long, default_value_t = 12)]
    pub top: usize,
    /// Print JSON instead of tables (every row of every table).
    #[arg(long)]
    pub json: bool,
    /// Exit with status 3 when the run, or a region or collective holding over 1% of A's time,
    /// is more than PCT percent slower in B and the change does not lie within the runs'
    /// step-to-step variation (a performance gate for CI; the regressions are named on stderr).
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
}

/// The error `run` returns for regressions: `main` exits with status 3 on it.
#[derive(Debug)]
pub struct Regressed(pub Vec<String>);

impl std::fmt::Display for Regressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "B regressed: {}", self.0.join("; "))
    }
}

impl std::error::Error for Regressed {}

pub fn run(args: &Args) -> Result<()> {
    if let Some(p) = args.fail_above
        && !(p.is_finite() && p >= 0.0)
    {
        anyhow::bail!("--fail-above {p}: not a percentage");
    }
    // One after the other: a loader's progress bar holds the terminal.
    let a = crate::common::load(&args.a)?;
    let b = crate::common::load(&args.b)?;
    let steps = args.steps.as_deref().map(step_range).transpose()?;
    let pb = crate::common::spinner("comparing the runs");
    let o = exaviz_analysis::diff::Options { top: args.top, steps };
    let d = exaviz_analysis::diff::diff_asked(&a, &b, args.window.from, args.window.to, &o);
    pb.finish_and_clear();
    let d = d.map_err(|e| anyhow::anyhow!("{} against {}: {e}", args.b, args.a))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        print!("{}", text(&args.a, &args.b, &d, args.top));
    }
    if let Some(p) = args.fail_above {
        let r = exaviz_analysis::diff::regressions(&d, p);
        if !r.is_empty() {
            return Err(Regressed(r).into());
        }
    }
    Ok(())
}

/// `FIRST-LAST` or `N`.
fn step_range(spec: &str) -> Result<(u32, u32)> {
    let n = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| anyhow::anyhow!("--steps {spec}: '{s}' is not a step number (FIRST-LAST or N)"))
    };
    let (a, b) = match spec.split_once('-') {
        Some((a, b)) => (n(a)?, n(b)?),
        None => (n(spec)?, n(spec)?),
    };
    anyhow::ensure!(a <= b, "--steps {spec}: FIRST may not exceed LAST");
    Ok((a, b))
}

fn percent(r: f64) -> String {
    if r.is_infinite() { "new".into() } else { format!("{:+.1}%", 100.0 * r) }
}

fn verdict(c: &Change) -> &'static str {
    match c.stands_out {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

fn parts(c: &Change, unit: fn(f64) -> String) -> String {
    let mut s = c.locations.iter().map(|p| format!("{} {}", p.name, unit(p.change_s))).collect::<Vec<_>>().join(", ");
    if c.spread > c.locations.len() {
        s.push_str(&format!(" … of {} rows", c.spread));
    }
    s
}

fn signed(s: f64) -> String {
    if s >= 0.0 { format!("+{}", time(s)) } else { format!("-{}", time(-s)) }
}

/// A change of bytes, signed, in `exaviz summary`'s units.
fn bytes(b: f64) -> String {
    let v = crate::text::bytes(b.abs().round() as u64);
    if b < 0.0 { format!("-{v}") } else { format!("+{v}") }
}

fn table(o: &mut String, title: &str, rows: &[Change], top: usize) {
    use std::fmt::Write;
    let _ = writeln!(o, "\n{title}");
    if rows.iter().all(|x| x.change_s == 0.0) {
        let _ = writeln!(o, "  no change");
        return;
    }
    let _ = writeln!(
        o,
        "{:<10} {:<36} {:>8} {:>8} {:>12} {:>12} {:>13} {:>8} {:>6}  where",
        "", "", "count A", "count B", "total A", "total B", "change", "", "out?"
    );
    // A row's count: its entries (a location's: the steps).
    for x in rows.iter().filter(|x| x.change_s != 0.0).take(top) {
        let _ = writeln!(
            o,
            "{:<10} {:<36} {:>8} {:>8} {:>12} {:>12} {:>13} {:>8} {:>6}  {}",
            x.table,
            clip(&x.name, 36),
            x.a.count,
            x.b.count,
            time(x.a.total_s),
            time(x.b.total_s),
            signed(x.change_s),
            percent(x.relative),
            verdict(x),
            parts(x, signed)
        );
    }
    let more = rows.iter().filter(|x| x.change_s != 0.0).count().saturating_sub(top);
    if more > 0 {
        let _ = writeln!(o, "  ... {more} more");
    }
}

/// The run's line: its length in both runs and the change of its mean step with its interval.
fn run_line(o: &mut String, r: &Change) {
    use std::fmt::Write;
    let _ = write!(
        o,
        "the run: {} → {} ({}, {})",
        time(r.a.total_s),
        time(r.b.total_s),
        signed(r.change_s),
        percent(r.relative)
    );
    match &r.step {
        Some(s) => {
            let _ = writeln!(
                o,
                "; mean step {} → {}, {} (95%: {} to {}){}",
                time(s.a_mean_s),
                time(s.b_mean_s),
                signed(s.change_s),
                signed(s.low_s),
                signed(s.high_s),
                if r.stands_out == Some(true) {
                    ", beyond the steps' variation"
                } else {
                    ", within the steps' variation"
                }
            );
        }
        None => {
            let _ = writeln!(o, "; too few steps to tell the change from the variation");
        }
    }
}

/// The comparison as tables.
pub fn text(a: &str, b: &str, d: &Diff, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let m = &d.matching;
    let _ = writeln!(o, "A: {a}\nB: {b}");
    if m.from == "pyramids" {
        let _ = writeln!(
            o,
            "compared from the stores' pyramids, without reading their rows: rows are rank blocks, steps are time slices, counts are not known (0)"
        );
    }
    let _ = writeln!(
        o,
        "locations matched by {}: {} (A has {}, B {}){}",
        m.locations_by,
        m.matched,
        m.a_locations,
        m.b_locations,
        if (m.scale - 1.0).abs() > 1e-12 {
            format!("; B's totals scaled by {:.4} (A's active locations over B's)", m.scale)
        } else {
            String::new()
        }
    );
    let _ = writeln!(o, "steps: A {} ({}), B {} ({})", m.a_steps, m.a_steps_from, m.b_steps, m.b_steps_from);
    run_line(&mut o, &d.run);
    // In a sentence: whose own work changed most, and how many rows wait longer.
    if let Some(w) = d.locations.first().filter(|w| w.change_s != 0.0) {
        let waits = d.waiting.iter().filter(|x| x.change_s > 0.0 && x.stands_out != Some(false)).count();
        let _ = writeln!(
            o,
            "work {} most on {} ({}, {}{}); {} row{} wait{} longer",
            if w.change_s > 0.0 { "grew" } else { "fell" },
            w.name,
            signed(w.change_s),
            percent(w.relative),
            match w.stands_out {
                Some(true) => ", beyond the steps' variation",
                Some(false) => ", within the steps' variation",
                None => "",
            },
            waits,
            if waits == 1 { "" } else { "s" },
            if waits == 1 { "s" } else { "" }
        );
    }
    table(&mut o, "largest changes (those beyond the step-to-step variation first)", &d.top, top);
    table(&mut o, "work per location (time outside waiting)", &d.locations, top);
    table(&mut o, "waiting per location", &d.waiting, top);
    table(&mut o, "regions (inclusive time)", &d.regions, top);
    if !d.paths.is_empty() {
        table(&mut o, "call paths (inclusive time; regions within regions, outermost first)", &d.paths, top);
    }
    table(&mut o, "collectives", &d.collectives, top);
    let _ = writeln!(o, "\nmessages per pair (change in bytes)");
    let moved: Vec<&Change> = d.pairs.iter().filter(|x| x.change_s != 0.0).collect();
    if moved.is_empty() {
        let _ = writeln!(o, "  no change");
    }
    for x in moved.iter().take(top) {
        let _ = writeln!(
            o,
            "{:<48} {:>8} {:>8} {:>12} {:>8}",
            clip(&x.name, 48),
            x.a.count,
            x.b.count,
            bytes(x.change_s),
            percent(x.relative)
        );
    }
    if moved.len() > top {
        let _ = writeln!(o, "  ... {} more", moved.len() - top);
    }
    o
}
