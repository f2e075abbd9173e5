//! What the views of a trace (timeline, matrix, chord, sendrecv, mpi) share: the trace's time
//! span, a time window in ticks, the messages sent in it, and the check for processes.

use std::borrow::Cow;

use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Selection;
use exaviz_model::{Messages, Trace};

use super::ViewError;

/// The trace's whole span in ticks: as the source gives it, or from its intervals and messages
/// ([`Trace::span`]).
pub fn span(t: &Trace) -> Option<(u64, u64)> {
    t.span()
}

/// The time window `[t0, t1]` in ticks of `window_s` (seconds since `full`'s start; `None`: all
/// of `full`), at least one tick wide.
pub(crate) fn window_in(full: (u64, u64), tps: f64, window_s: Option<(f64, f64)>) -> Result<(u64, u64), ViewError> {
    let window = match window_s {
        None => full,
        Some((a, b)) if a.is_finite() && b.is_finite() && 0.0 <= a && a < b => {
            let at = |s: f64| full.0.saturating_add((s * tps).min(u64::MAX as f64) as u64);
            (at(a), at(b))
        }
        Some((a, b)) => return Err(ViewError::Unsupported(format!("time window {a}..{b} s is empty or negative"))),
    };
    Ok((window.0, window.1.max(window.0 + 1)))
}

/// The window of `selection` in ticks of the trace's whole span (`None`: the whole span, or a
/// trace without times).
pub fn window_ticks(dataset: &Dataset, selection: &Selection) -> Option<(u64, u64)> {
    let t = &dataset.trace;
    let tps = t.ticks_per_second.max(1) as f64;
    window_in(span(t)?, tps, selection.window_s).ok()
}

/// The pyramid of `ooc` where it covers the trace's `ranks` ranks (at least one); a store whose
/// pyramid was summed for another trace is refused in one line.
pub(crate) fn pyramid_of(
    ooc: &exaviz_model::dataset::OutOfCore,
    ranks: usize,
) -> Result<&exaviz_model::pyramid::Pyramid, ViewError> {
    let pyramid = &ooc.pyramid;
    if ranks == 0 || pyramid.shape.ranks as usize != ranks {
        return Err(ViewError::Unsupported(format!(
            "the pyramid covers {} ranks where the trace has {ranks}: re-run exaviz convert",
            pyramid.shape.ranks
        )));
    }
    Ok(pyramid)
}

/// The messages sent within `window_s` (seconds since the trace's start: the timeline's time
/// window), or all of them without a window: what the matrix, chord and sendrecv views count
/// when time is brushed on a linked timeline.
pub fn messages_in(t: &Trace, window_s: Option<(f64, f64)>) -> Cow<'_, Messages> {
    messages_kept(t, window_s, None)
}

/// [`messages_in`] that `filter` keeps too.
pub fn messages_kept<'t>(
    t: &'t Trace,
    window_s: Option<(f64, f64)>,
    filter: Option<&exaviz_model::selection::MessageFilter>,
) -> Cow<'t, Messages> {
    let window = send_window(t, span(t), window_s);
    if window.is_none() && filter.is_none() {
        return Cow::Borrowed(&t.messages);
    }
    let (from, to) = window.unwrap_or((0, u64::MAX));
    let m = &t.messages;
    let keep: Vec<usize> = (0..m.source.len())
        .filter(|&i| {
            (window.is_none() || (from..to).contains(&m.send_time[i]))
                && filter.is_none_or(|f| f.keeps(m.bytes[i], m.tag[i], m.source[i], m.destination[i]))
        })
        .collect();
    let pick = |c: &[u32]| keep.iter().map(|&i| c[i]).collect::<Vec<u32>>();
    let pick64 = |c: &[u64]| keep.iter().map(|&i| c[i]).collect::<Vec<u64>>();
    Cow::Owned(Messages {
        source: pick(&m.source),
        destination: pick(&m.destination),
        send_time: pick64(&m.send_time),
        recv_time: pick64(&m.recv_time),
        bytes: pick(&m.bytes),
        tag: pick(&m.tag),
    })
}

/// `filter` as the stages read it (every message where there is none).
pub(crate) fn stage_filter(
    filter: Option<&exaviz_model::selection::MessageFilter>,
) -> exaviz_compute::timeline_pixels::Filter {
    filter.map_or_else(Default::default, |f| exaviz_compute::timeline_pixels::Filter {
        bytes: f.bytes.unwrap_or((0, u32::MAX)),
        tag: f.tag,
        senders: f.senders.unwrap_or((0, u32::MAX)),
        receivers: f.receivers.unwrap_or((0, u32::MAX)),
    })
}

/// The send ticks `from..to` of `window_s` (seconds since the start of `span`, the trace's
/// span); `None` (every message) without a window or a span.
pub(crate) fn send_window(t: &Trace, span: Option<(u64, u64)>, window_s: Option<(f64, f64)>) -> Option<(u64, u64)> {
    let ((a, b), (start, _)) = (window_s?, span?);
    let tps = t.ticks_per_second.max(1) as f64;
    let at = |s: f64| start.saturating_add((s.max(0.0) * tps).min(u64::MAX as f64) as u64);
    Some((at(a), at(b)))
}

/// Each pair's messages and bytes sent within `window_s`, the sums a pass over
/// [`messages_in`] makes, from the trace's messages by pair ([`exaviz_model::pair_index`]): for a trace
/// held in memory with an index, where a window's pass over the rows costs tens of
/// milliseconds. The index is built on the second call (the first window is counted from the
/// rows). `None` for other traces, and on that first call.
pub fn pair_sums(d: &Dataset, window_s: Option<(f64, f64)>) -> Option<Vec<exaviz_model::pair_index::PairSum>> {
    let index = d.index.as_ref().filter(|_| d.out_of_core.is_none())?;
    let t = &d.trace;
    let (pairs, span) = index.pairs.get(|| {
        let ranks = u32::try_from(t.locations.name.len()).ok()?;
        Some((exaviz_model::pair_index::PairIndex::of(&t.messages, ranks)?, span(t)))
    })?;
    Some(pairs.sums(send_window(t, *span, window_s)))
}

/// The trace views' check: a trace with at least `least` processes.
pub fn needs_processes(dataset: &Dataset, who: &str, least: usize) -> Result<(), ViewError> {
    let n = dataset.trace.locations.name.len();
    if n < least {
        return Err(ViewError::Unsupported(format!(
            "the {who} view needs a trace with at least {least} processes (locations); this one has {n}"
        )));
    }
    Ok(())
}

/// The window a trace view opens on when none is asked for: the whole trace, less a leading or
/// trailing phase where nothing but initialisation or finalisation happens (a Score-P trace's
/// `MPI_Init` can be 96% of it, squeezing the run into a few pixels).
#[derive(Clone, Debug, PartialEq)]
pub struct Home {
    /// Seconds since the trace's start.
    pub window_s: (f64, f64),
    /// What was left out, in words, for the picture to say (e.g. `0-0.195 s of MPI_Init left
    /// out (--from 0 shows it)`).
    pub note: String,
}

/// Share of a trace an initialisation phase must take before the home window leaves it out.
const HOME_SKIP: f64 = 0.2;

/// The home window of `t` ([`Home`]), or `None` where it is the whole trace: a phase before the
/// first communication (message or collective) or after the last is left out when it is at
/// least a fifth of the trace and at least half of its time on the rows is spent in regions
/// named for setting up or tearing down (`init`, `finaliz`, `setup`, `startup`, `shutdown`).
pub fn home_window(t: &Trace) -> Option<Home> {
    if t.span_of_whole.is_some() {
        return None;
    }
    let (t0, t1) = span(t)?;
    let m = &t.messages;
    let c = &t.collectives;
    let first = m.send_time.iter().chain(&c.start).copied().min()?;
    let last = m.recv_time.iter().filter(|&&v| v != u64::MAX).chain(&m.send_time).chain(&c.end).copied().max()?;
    let whole = (t1 - t0).max(1) as f64;
    let head = (first - t0.min(first)) as f64 >= HOME_SKIP * whole;
    let tail = (t1.max(last) - last) as f64 >= HOME_SKIP * whole;
    let head = head.then(|| setup_phase(t, t0, first)).flatten();
    let tail = tail.then(|| setup_phase(t, last, t1)).flatten();
    if head.is_none() && tail.is_none() {
        return None;
    }
    let pad = ((last.max(first) - first) / 50).max(1);
    let a = if head.is_some() { first.saturating_sub(pad).max(t0) } else { t0 };
    let b = if tail.is_some() { last.saturating_add(pad).min(t1) } else { t1 };
    let tps = t.ticks_per_second.max(1) as f64;
    let s = |v: u64| (v - t0) as f64 / tps;
    let mut parts = Vec::new();
    if let Some(name) = &head {
        parts.push(format!("0-{} s of {name}", short_seconds(s(a))));
    }
    if let Some(name) = &tail {
        parts.push(format!("{}-{} s of {name}", short_seconds(s(b)), short_seconds(s(t1))));
    }
    let shows = if head.is_some() { "--from 0" } else { "--to" };
    let note = format!("{} left out ({shows} shows it)", parts.join(" and "));
    Some(Home { window_s: (s(a), s(b).max(s(a) + 1.0 / tps)), note })
}

/// Seconds with four significant digits.
fn short_seconds(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.digits$}")
}

/// Whether `[from, to)` is a set-up or tear-down phase on the rows: the name of the region that
/// covers most of it where such regions cover at least half of the rows' time in it.
fn setup_phase(t: &Trace, from: u64, to: u64) -> Option<String> {
    let i = &t.intervals;
    let setup: Vec<bool> = t
        .region_names
        .iter()
        .map(|n| {
            let n = n.to_ascii_lowercase();
            ["init", "finaliz", "setup", "startup", "shutdown"].iter().any(|w| n.contains(w))
        })
        .collect();
    let mut covered = vec![0u64; t.region_names.len()];
    let mut rows = vec![false; t.locations.name.len()];
    for k in 0..i.start.len() {
        let (a, b) = (i.start[k].max(from), i.end[k].min(to));
        if let Some(r) = rows.get_mut(i.location[k] as usize) {
            *r = true;
        }
        let kind = i.kind[k] as usize;
        if b > a && setup.get(kind) == Some(&true) && i.depth[k] <= 2 {
            covered[kind] += b - a;
        }
    }
    let busy_rows = rows.iter().filter(|&&r| r).count() as u64;
    let total: u64 = covered.iter().sum();
    let (kind, _) = covered.iter().enumerate().max_by_key(|&(_, v)| *v)?;
    (busy_rows > 0 && total * 2 >= busy_rows * (to - from)).then(|| t.region_names[kind].clone())
}

/// The trace's duration in seconds over intervals and messages (`None`: nothing timed).
pub fn duration_s(t: &Trace) -> Option<f64> {
    span(t).map(|(a, b)| (b - a) as f64 / t.ticks_per_second.max(1) as f64)
}

/// The time window after zooming `window` by `factor` (above 1: in) around the point `at` of the
/// way across it, kept inside `[0, duration]`.
pub fn zoom_window(window: (f64, f64), duration: f64, factor: f64, at: f64) -> (f64, f64) {
    let (a, b) = window;
    let centre = a + at.clamp(0.0, 1.0) * (b - a);
    let span = ((b - a) / factor).clamp(duration * 1e-9, duration);
    clamp_window(centre - at.clamp(0.0, 1.0) * span, span, duration)
}

/// The time window after moving `window` by `share` of its width (positive: later).
pub fn pan_window(window: (f64, f64), duration: f64, share: f64) -> (f64, f64) {
    let span = window.1 - window.0;
    clamp_window(window.0 + share * span, span, duration)
}

fn clamp_window(start: f64, span: f64, duration: f64) -> (f64, f64) {
    let start = start.clamp(0.0, (duration - span).max(0.0));
    (start, start + span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_point_under_the_pointer_and_stays_inside() {
        let w = zoom_window((0.0, 100.0), 100.0, 2.0, 0.25);
        assert_eq!(w, (12.5, 62.5));
        // Zooming out past the whole trace stops at it.
        assert_eq!(zoom_window(w, 100.0, 0.1, 0.5), (0.0, 100.0));
        // Panning stops at the ends.
        assert_eq!(pan_window((10.0, 20.0), 100.0, -5.0), (0.0, 10.0));
        assert_eq!(pan_window((10.0, 20.0), 100.0, 0.5), (15.0, 25.0));
        assert_eq!(pan_window((80.0, 100.0), 100.0, 1.0), (80.0, 100.0));
    }

    /// The span of a trace whose message is never received leaves that receive out.
    #[test]
    fn the_span_leaves_out_receives_that_never_came() {
        let mut t = run(("init", 500), ("finalize", 500));
        t.messages.push((0, 1), (3, u64::MAX), 8, 0);
        assert_eq!(span(&t), Some((0, 1_100)));
    }

    /// Two ranks that run `first` (name, ticks) and then exchange one message each way, then
    /// run `last`.
    fn run(first: (&str, u64), last: (&str, u64)) -> Trace {
        let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
        t.region_names = vec![first.0.into(), "compute".into(), last.0.into()];
        t.locations.name = vec!["rank 0".into(), "rank 1".into()];
        let (a, b) = (first.1, first.1 + 100);
        for (s, e, k) in [(0, a, 0), (a, b, 1), (b, b + last.1, 2)] {
            for l in 0..2 {
                t.intervals.push(l, s, e, k, 1);
            }
        }
        for (s, d, at) in [(0, 1, a + 10), (1, 0, a + 60)] {
            t.messages.push((s, d), (at, at + 20), 8, 0);
        }
        t
    }

    #[test]
    fn home_leaves_out_a_long_initialisation_only() {
        // MPI_Init for 900 ticks, the exchange in 100: the home window is the exchange.
        let h = home_window(&run(("MPI_Init", 900), ("MPI_Finalize", 5))).expect("a home window");
        assert!(h.window_s.0 > 0.89 && h.window_s.0 < 0.91, "{h:?}");
        assert!(h.window_s.1 >= 0.98, "the short MPI_Finalize stays: {h:?}");
        assert!(h.note.contains("MPI_Init") && h.note.contains("--from 0"), "{}", h.note);
        // A long finalisation at the end is left out too.
        let h = home_window(&run(("MPI_Init", 5), ("MPI_Finalize", 900))).expect("a home window");
        assert!(h.window_s.0 == 0.0 && h.window_s.1 < 0.2, "{h:?}");
        assert!(h.note.contains("MPI_Finalize"), "{}", h.note);
        // Computing before the first message is not initialisation: the whole trace.
        assert_eq!(home_window(&run(("solve", 900), ("MPI_Finalize", 5))), None);
        // A short initialisation is kept.
        assert_eq!(home_window(&run(("MPI_Init", 5), ("MPI_Finalize", 5))), None);
    }
}
