//! Searching the timeline: the regions (slices) whose names match the search ([`crate::search`])
//! highlighted in the picture at any depth and counted.

use exaviz_model::Trace;
use exaviz_model::selection::Search;
use rayon::prelude::*;

use crate::plot::Plot;
use crate::search::matches;

/// The pixels of the plot that matching intervals cover in a window, and how many intervals
/// that is.
pub(super) struct Highlight {
    /// Row-major over the plot: a matching interval covers part of the pixel (at least one
    /// pixel per interval, so thin slices stay visible).
    pub(super) mask: Vec<bool>,
    /// The line the picture shows: what was searched for and how many matches.
    pub(super) note: String,
}

/// Marks every interval of a matching kind, at any depth, that overlaps `window` on the rows of
/// its location, and counts them; the count in the whole trace is the kept matches'.
pub(super) fn highlight(
    t: &Trace,
    p: Plot,
    window: (u64, u64),
    search: &Search,
    rows: &super::tracks::Tracks,
    levels: &[Option<u32>],
) -> Highlight {
    let n = t.locations.name.len();
    let found = matches(t, search);
    let i = &t.intervals;
    let (t0, t1) = window;
    let per_px = (t1 - t0).max(1) as f64 / f64::from(p.w);
    // Per location: the columns its matches cover (from, to, nesting level), and how many.
    type Spans = Vec<(u32, u32, u32)>;
    let per_location: Vec<(Spans, usize)> = (0..n)
        .into_par_iter()
        .map(|l| {
            let mut spans = Vec::new();
            found.overlapping(t, l, window, |k| {
                let (a, b) = (i.start[k].max(t0), i.end[k].min(t1));
                let xa = ((a - t0) as f64 / per_px).floor() as u32;
                let xb = (((b - t0) as f64 / per_px).ceil() as u32).max(xa + 1);
                spans.push((xa.min(p.w - 1), xb.min(p.w), i.depth[k]));
            });
            let count = spans.len();
            (spans, count)
        })
        .collect();
    let mut mask = vec![false; (p.w * p.h) as usize];
    let mut in_window = 0;
    for (l, (spans, count)) in per_location.iter().enumerate() {
        in_window += count;
        for r in rows.pixels(l) {
            let row = &mut mask[(r * p.w) as usize..((r + 1) * p.w) as usize];
            // In a band of one nesting level, the matches at that level.
            let level = levels.get(r as usize).copied().flatten();
            for &(a, b, _) in spans.iter().filter(|s| level.is_none_or(|d| s.2 == d)) {
                row[a as usize..b as usize].iter_mut().for_each(|m| *m = true);
            }
        }
    }
    // Global instants on no row match too (their chevrons light); the rest are intervals.
    let kinds = crate::search::matching_kinds(t, search);
    let globals: Vec<u64> = super::instants::global_of(t)
        .into_iter()
        .filter(|&(_, name)| kinds.get(name as usize) == Some(&true))
        .map(|(at, _)| at)
        .collect();
    in_window += globals.iter().filter(|&&at| (t0..=t1).contains(&at)).count();
    let total = found.total() + globals.len();
    let text = search.as_str();
    let note = if total == 0 {
        format!("search \u{201c}{text}\u{201d}: no region matches")
    } else {
        format!("search \u{201c}{text}\u{201d}: {in_window} here, {total} in the trace (n / N: next / previous)")
    };
    Highlight { mask, note }
}

/// The line of a picture drawn from the pyramid, which cannot light single intervals: how many
/// matches the trace has where its rows are in memory, and that a narrower window shows them.
pub(crate) fn overview_note(t: &Trace, search: &Search) -> String {
    let text = search.as_str();
    if t.span_of_whole.is_some() || t.intervals.start.is_empty() {
        return format!(
            "search \u{201c}{text}\u{201d}: zoom in to see the matches (this window is drawn from the pyramid)"
        );
    }
    let total = matches(t, search).total();
    if total == 0 {
        return format!("search \u{201c}{text}\u{201d}: no region matches");
    }
    format!("search \u{201c}{text}\u{201d}: {total} in the trace; zoom in to see them (n / N: next / previous)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::tests::trace;

    #[test]
    fn matches_at_any_depth_are_marked_and_counted() {
        let t = trace();
        let mut rows = crate::timeline::tracks::Tracks::every(2);
        let p = Plot { x0: 0, y0: 0, w: 100, h: 2 };
        rows.place(p.h, &[], &[]);
        let s = Search::new("recv").unwrap();
        let h = highlight(&t, p, (0, 1000), &s, &rows, &[]);
        // Rank 0's row: columns 10 and 60-69; rank 1's: 30 (a one-tick slice still gets a
        // pixel) and 90-94.
        let row = |r: usize| -> Vec<usize> { (0..100).filter(|&c| h.mask[r * 100 + c]).collect() };
        assert_eq!(row(0), [vec![10], (60..70).collect()].concat());
        assert_eq!(row(1), [vec![30], (90..95).collect()].concat());
        assert!(h.note.contains("4 here, 4 in the trace"), "{}", h.note);
        // A parent matches too.
        let h = highlight(&t, p, (500, 1000), &Search::new("SOLVE").unwrap(), &rows, &[]);
        assert!(h.mask.iter().all(|&m| m), "the parent covers the window");
        assert!(h.note.contains("2 here, 2 in the trace"), "{}", h.note);
        let h = highlight(&t, p, (0, 1000), &Search::new("allreduce").unwrap(), &rows, &[]);
        assert!(h.mask.iter().all(|&m| !m) && h.note.contains("no region matches"), "{}", h.note);
    }
}
