//! Numbers as labels and messages say them: durations in their unit, large counts with an SI
//! prefix.

/// `1.5 µs`, `2.3 ms`, ...
pub fn duration(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// `3.2 T`, `410 G`, ...
pub fn si(v: f64) -> String {
    for (k, s) in [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= k {
            return format!("{:.1} {s}", v / k);
        }
    }
    format!("{v:.0}")
}
