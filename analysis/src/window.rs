//! The time window a question names in seconds since the trace's start, in ticks.

/// The window of ticks `[from, to)` that seconds `from_s` and `to_s` since the trace's start
/// name (default: all of it), and the trace's first tick; `Err` says in one line what is wrong.
pub fn window_asked(
    dataset: &exaviz_model::dataset::Dataset,
    from_s: Option<f64>,
    to_s: Option<f64>,
) -> Result<(u64, u64, u64), String> {
    let t = &dataset.trace;
    let whole = dataset
        .out_of_core
        .as_ref()
        .map(|o| o.span)
        .or_else(|| t.span())
        .or_else(|| {
            // A trace of counters alone: the span of their samples.
            let m = &t.metrics.time;
            m.iter().min().copied().zip(m.iter().max().copied())
        })
        .ok_or("the trace has no intervals, messages or counter samples to summarise")?;
    let tps = t.ticks_per_second.max(1) as f64;
    let at = |s: f64, name: &str| -> Result<u64, String> {
        if !s.is_finite() || s < 0.0 {
            return Err(format!("--{name} {s}: not a time in seconds from the trace's start"));
        }
        Ok(whole.0.saturating_add((s * tps).min(u64::MAX as f64) as u64))
    };
    let from = from_s.map(|s| at(s, "from")).transpose()?.unwrap_or(whole.0);
    let to = to_s.map(|s| at(s, "to")).transpose()?.unwrap_or(whole.1.saturating_add(1));
    if from >= to {
        return Err(format!("the area from {} s to {} s is empty", from_s.unwrap_or(0.0), to_s.unwrap_or(0.0)));
    }
    Ok((from, to, whole.0))
}
