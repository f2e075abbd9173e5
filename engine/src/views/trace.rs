//! What the views of a trace (timeline, matrix, chord, sendrecv, mpi) share: the trace's time
//! span, a time window in ticks, the messages sent in it, and the check for processes.

use std::borrow::Cow;

use crate::model::{Dataset, Messages, Trace};
use crate::selection::Selection;

use super::ViewError;

/// The trace's whole span in ticks: as the source gives it, or from its intervals and messages.
pub(crate) fn span(t: &Trace) -> Option<(u64, u64)> {
    if let Some(whole) = t.span_of_whole {
        return Some(whole);
    }
    let i = &t.intervals;
    let m = &t.messages;
    let times = i.start.iter().chain(&i.end).chain(&m.send_time).chain(m.recv_time.iter().filter(|&&v| v != u64::MAX));
    times.fold(None, |acc, &v| Some(acc.map_or((v, v), |(a, b): (u64, u64)| (a.min(v), b.max(v)))))
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

/// The messages sent within `window_s` (seconds since the trace's start: the timeline's time
/// window), or all of them without a window: what the matrix, chord and sendrecv views count
/// when time is brushed on a linked timeline.
pub fn messages_in(t: &Trace, window_s: Option<(f64, f64)>) -> Cow<'_, Messages> {
    let (Some((a, b)), Some((start, _))) = (window_s, span(t)) else {
        return Cow::Borrowed(&t.messages);
    };
    let tps = t.ticks_per_second.max(1) as f64;
    let at = |s: f64| start.saturating_add((s.max(0.0) * tps).min(u64::MAX as f64) as u64);
    let (from, to) = (at(a), at(b));
    let m = &t.messages;
    let keep: Vec<usize> = (0..m.source.len()).filter(|&i| (from..to).contains(&m.send_time[i])).collect();
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
