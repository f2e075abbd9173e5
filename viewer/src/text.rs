//! Numbers and tables as the commands print them: seconds and bytes in a short unit, names
//! clipped to a column, the root causes of waiting as a table (`exaviz summary`,
//! `exaviz critical-path`, `exaviz diff` and the window's panel print them alike).

/// Seconds in a short unit.
pub(crate) fn time(s: f64) -> String {
    match s.abs() {
        v if v >= 1.0 => format!("{s:.3} s"),
        v if v >= 1e-3 => format!("{:.3} ms", s * 1e3),
        _ => format!("{:.3} µs", s * 1e6),
    }
}

/// Seconds in three or four digits and a unit.
pub(crate) fn short(s: f64) -> String {
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

/// The root causes of waiting, `top` rows at most.
pub(crate) fn root_cause_table(o: &mut String, rows: &[exaviz_analysis::critical_path::CauseRow], top: usize) {
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

/// `s` cut to `n` characters with an ellipsis.
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
}
