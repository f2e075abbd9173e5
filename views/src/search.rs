//! Searching a trace's regions: the intervals whose region names contain a text, found once per
//! search and kept, counted, and stepped through one occurrence at a time in time order
//! (Perfetto's search box and its Enter / Shift+Enter, here `/`, `n` and `N`), each step a
//! selection that frames the occurrence. The timeline highlights the matches
//! (`timeline/search.rs`); the window and `bench-interact` step through them.

use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Search, Selection};
use rayon::prelude::*;

/// Which region kinds `search` matches (by index into the trace's region names).
pub(crate) fn matching_kinds(t: &Trace, search: &Search) -> Vec<bool> {
    t.region_names.iter().map(|name| search.matches(name)).collect()
}

/// Where an occurrence is in the order `n` steps through: its start, location and depth.
pub type At = (u64, u32, u32);

/// One occurrence of a search: an interval of a matching region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occurrence {
    pub start: u64,
    pub end: u64,
    pub location: u32,
    pub depth: u32,
    /// Its place among the occurrences in time order (from 0), and how many there are.
    pub nth: usize,
    pub of: usize,
    /// The trace's span (ticks), kept with the matches, so that a window around the occurrence
    /// is kept inside the trace without a pass over it.
    pub span: (u64, u64),
}

impl Occurrence {
    pub fn at(&self) -> At {
        (self.start, self.location, self.depth)
    }
}

/// The occurrence after (`forward`) or before `from` in time order (start, then location, then
/// depth), wrapping around at the ends; the first (or last) where `from` is `None`; its place
/// among the matches and their count. The matches are found once per search and kept
/// ([`matches`]): a step is two binary searches per location. `Err` says why there is none.
pub fn step(d: &Dataset, search: &Search, from: Option<At>, forward: bool) -> Result<Occurrence, String> {
    if d.out_of_core.is_some() {
        return Err("searching needs the trace's rows in memory; this store keeps them on disk".into());
    }
    matches(&d.trace, search).step(&d.trace, from, forward).ok_or_else(|| no_match(search))
}

/// The matches of one search in one trace, found once and kept: per location, its intervals of a
/// matching region sorted by (start, depth, row), so that a step is two binary searches per
/// location and the count is known without a pass over the trace.
pub struct Matches {
    /// Matching interval rows, location after location.
    rows: Vec<u32>,
    /// Per location, its part of `rows`.
    ranges: Vec<std::ops::Range<usize>>,
    /// Per location, its longest match (ticks).
    longest: Vec<u64>,
    /// The trace's span (ticks), found at the first step (a picture needs none).
    span: std::sync::OnceLock<(u64, u64)>,
}

impl Matches {
    /// One parallel pass over the intervals, the matches grouped by location (a counting sort)
    /// and each location's sorted in parallel (they are mostly in order already), its longest
    /// match found with it.
    pub fn new(t: &Trace, search: &Search) -> Self {
        let kinds = matching_kinds(t, search);
        let i = &t.intervals;
        let n = t.locations.name.len();
        let found: Vec<u32> = (0..i.start.len() as u32)
            .into_par_iter()
            .filter(|&k| (i.location[k as usize] as usize) < n && kinds.get(i.kind[k as usize] as usize) == Some(&true))
            .collect();
        let mut counts = vec![0usize; n];
        for &k in &found {
            counts[i.location[k as usize] as usize] += 1;
        }
        let mut ranges = Vec::with_capacity(n);
        let mut at = 0;
        for c in &counts {
            ranges.push(at..at + c);
            at += c;
        }
        let mut next: Vec<usize> = ranges.iter().map(|r| r.start).collect();
        let mut rows = vec![0u32; found.len()];
        for &k in &found {
            let l = i.location[k as usize] as usize;
            rows[next[l]] = k;
            next[l] += 1;
        }
        let mut parts: Vec<&mut [u32]> = Vec::with_capacity(n);
        let mut rest = &mut rows[..];
        for c in &counts {
            let (part, after) = rest.split_at_mut(*c);
            parts.push(part);
            rest = after;
        }
        let longest = parts
            .into_par_iter()
            .map(|part| {
                part.sort_unstable_by_key(|&k| (i.start[k as usize], i.depth[k as usize], k));
                part.iter().map(|&k| i.end[k as usize] - i.start[k as usize]).max().unwrap_or(0)
            })
            .collect();
        Self { rows, ranges, longest, span: std::sync::OnceLock::new() }
    }

    /// How many intervals match.
    pub fn total(&self) -> usize {
        self.rows.len()
    }

    /// Calls `f(row)` for every match on location `l` that overlaps the window `[t0, t1]`: open
    /// at `t0` or begun in it (as the timeline's walk of a window finds them); only the matches begun
    /// within the location's longest match before the window are looked at.
    pub(crate) fn overlapping(&self, t: &Trace, l: usize, (t0, t1): (u64, u64), mut f: impl FnMut(usize)) {
        let i = &t.intervals;
        let Some(range) = self.ranges.get(l) else { return };
        let list = &self.rows[range.clone()];
        let from = list.partition_point(|&k| i.start[k as usize] < t0.saturating_sub(self.longest[l]));
        let to = list.partition_point(|&k| i.start[k as usize] <= t1);
        for &k in &list[from..to.max(from)] {
            let k = k as usize;
            if i.start[k] >= t0 || i.end[k] > t0 {
                f(k);
            }
        }
    }

    /// Location `l`'s matches.
    fn of(&self, l: usize) -> &[u32] {
        &self.rows[self.ranges[l].clone()]
    }

    /// How many of location `l`'s matches come before `key` in time order (start, location,
    /// depth), or not after it (`inclusive`).
    fn before(&self, t: &Trace, l: usize, key: At, inclusive: bool) -> usize {
        let i = &t.intervals;
        let (s, kl, d) = key;
        let list = self.of(l);
        let l = l as u32;
        list.partition_point(|&k| {
            let (start, depth) = (i.start[k as usize], i.depth[k as usize]);
            match l.cmp(&kl) {
                std::cmp::Ordering::Less => start <= s,
                std::cmp::Ordering::Greater => start < s,
                std::cmp::Ordering::Equal if inclusive => (start, depth) <= (s, d),
                std::cmp::Ordering::Equal => (start, depth) < (s, d),
            }
        })
    }

    /// The occurrence after (`forward`) or before `from` in time order, wrapping around at the
    /// ends; the first (or last) where `from` is `None`. Of matches sharing a key, the first row.
    pub fn step(&self, t: &Trace, from: Option<At>, forward: bool) -> Option<Occurrence> {
        let i = &t.intervals;
        let key = |k: u32| (i.start[k as usize], i.location[k as usize], i.depth[k as usize]);
        let mut best: Option<(At, u32)> = None;
        for l in 0..self.ranges.len() {
            let list = self.of(l);
            let pos = match (from, forward) {
                (None, true) => Some(0),
                (None, false) => list.len().checked_sub(1),
                (Some(f), true) => Some(self.before(t, l, f, true)),
                (Some(f), false) => self.before(t, l, f, false).checked_sub(1),
            };
            let Some(&k) = pos.and_then(|p| list.get(p)) else { continue };
            // The first row of those sharing its key.
            let k = list[self.before(t, l, key(k), false)];
            let nearer = best.is_none_or(|(b, _)| if forward { key(k) < b } else { key(k) > b });
            if nearer {
                best = Some((key(k), k));
            }
        }
        let Some((at, k)) = best else {
            return (from.is_some() && self.total() > 0).then(|| self.step(t, None, forward)).flatten();
        };
        let nth = (0..self.ranges.len()).map(|l| self.before(t, l, at, false)).sum();
        let k = k as usize;
        let (start, end, location, depth) = (i.start[k], i.end[k], i.location[k], i.depth[k]);
        let span = *self.span.get_or_init(|| crate::trace::span(t).unwrap_or((0, 0)));
        Some(Occurrence { start, end, location, depth, nth, of: self.total(), span })
    }
}

/// Which trace and search a kept [`Matches`] is of: the intervals' address and length, the
/// counts of locations and regions, and the text. A trace is not changed while it is drawn, and
/// one dropped and another made at the same address with the same counts and the same search
/// is taken for the same trace.
type MatchesKey = (usize, usize, usize, usize, String);

/// A search's matches, kept for the last trace and text asked for.
#[derive(Default)]
pub struct KeptMatches(std::sync::Mutex<Option<(MatchesKey, std::sync::Arc<Matches>)>>);

impl KeptMatches {
    /// The matches of `search` in `t`: the kept ones where they are of the same trace and text,
    /// else found (outside the lock: the pass is parallel) and kept.
    pub fn get(&self, t: &Trace, search: &Search) -> std::sync::Arc<Matches> {
        let i = &t.intervals;
        let len = (t.locations.name.len(), t.region_names.len());
        let key = (i.start.as_ptr() as usize, i.start.len(), len.0, len.1, search.as_str().to_string());
        let lock = || self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, m)) = lock().as_ref().filter(|(have, _)| *have == key) {
            return m.clone();
        }
        let m = std::sync::Arc::new(Matches::new(t, search));
        *lock() = Some((key, m.clone()));
        m
    }
}

/// The last search's matches, kept across steps and pictures.
static KEPT: KeptMatches = KeptMatches(std::sync::Mutex::new(None));

/// The matches of `search` in `t`, found once and kept while the same search of the same trace
/// is asked for.
pub fn matches(t: &Trace, search: &Search) -> std::sync::Arc<Matches> {
    KEPT.get(t, search)
}

fn no_match(search: &Search) -> String {
    format!("no region matches \u{201c}{}\u{201d}", search.as_str())
}

/// The window (seconds since the trace's start `t0`) that shows `o`: centred on it, as wide as
/// `current` where it shows the occurrence at least a fiftieth as wide, else twenty times the
/// occurrence (and at least three times it).
pub fn window_around(o: &Occurrence, t0: u64, ticks_per_second: u64, current: (f64, f64)) -> (f64, f64) {
    let tps = ticks_per_second.max(1) as f64;
    let (a, b) = ((o.start.saturating_sub(t0)) as f64 / tps, (o.end.saturating_sub(t0)) as f64 / tps);
    let duration = (b - a).max(1.0 / tps);
    let width = current.1 - current.0;
    // A window that is not a number (or too narrow) becomes three times the occurrence.
    let width = if width.is_nan() || width <= 3.0 * duration {
        3.0 * duration
    } else if width > 50.0 * duration {
        20.0 * duration
    } else {
        width
    };
    let centre = (a + b) / 2.0;
    let from = (centre - width / 2.0).max(0.0);
    (from, from + width)
}

/// The selection showing occurrence `o`: `selection` with its window moved to it and `o` the
/// match marked.
pub fn select(d: &Dataset, selection: &Selection, o: &Occurrence) -> Selection {
    let t = &d.trace;
    let (t0, t1) = o.span;
    let tps = t.ticks_per_second.max(1);
    let whole = (0.0, (t1 - t0) as f64 / tps as f64);
    let current = selection.window_s.unwrap_or(whole);
    let (a, b) = window_around(o, t0, tps, current);
    // Kept inside the trace where it fits.
    let shift = (b - whole.1).max(0.0).min(a);
    let found = exaviz_model::selection::Area { from: o.start, to: o.end, first: o.location, last: o.location };
    Selection { window_s: Some((a - shift, b - shift)), found: Some(found), ..*selection }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use exaviz_model::Intervals;

    /// Two locations: `solve` (kind 0) holding `MPI_Recv` (kind 1) twice on each, at
    /// different times.
    pub(crate) fn trace() -> Trace {
        let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
        t.region_names = vec!["solve".into(), "MPI_Recv".into(), "MPI_Send".into()];
        t.locations.name = vec!["rank 0".into(), "rank 1".into()];
        let rows: [(u32, u64, u64, u32, u32); 7] = [
            (0, 0, 1000, 0, 0),
            (0, 100, 110, 1, 1),
            (0, 600, 700, 1, 1),
            (1, 0, 1000, 0, 0),
            (1, 100, 200, 2, 1),
            (1, 300, 301, 1, 1),
            (1, 900, 950, 1, 1),
        ];
        let mut iv = Intervals::default();
        for (l, a, b, k, depth) in rows {
            iv.location.push(l);
            iv.start.push(a);
            iv.end.push(b);
            iv.kind.push(k);
            iv.depth.push(depth);
        }
        t.intervals = iv;
        t
    }

    #[test]
    fn n_and_shift_n_step_through_the_occurrences_in_time_order_and_wrap() {
        let d = Dataset { trace: trace(), ..Default::default() };
        let s = Search::new("MPI_Recv").unwrap();
        let mut seen = Vec::new();
        let mut at = None;
        for _ in 0..5 {
            let o = step(&d, &s, at, true).unwrap();
            seen.push((o.start, o.location, o.nth, o.of));
            at = Some(o.at());
        }
        assert_eq!(seen, vec![(100, 0, 0, 4), (300, 1, 1, 4), (600, 0, 2, 4), (900, 1, 3, 4), (100, 0, 0, 4)]);
        let back = step(&d, &s, Some((100, 0, 1)), false).unwrap();
        assert_eq!((back.start, back.location), (900, 1));
        let back = step(&d, &s, Some((600, 0, 1)), false).unwrap();
        assert_eq!((back.start, back.location), (300, 1));
        assert!(step(&d, &Search::new("nothing").unwrap(), None, true).unwrap_err().contains("no region matches"));
    }

    /// A search's matches are found once and kept for the same trace and text; another text
    /// finds its own.
    #[test]
    fn matches_are_kept_per_trace_and_search() {
        let t = trace();
        let kept = KeptMatches::default();
        let s = Search::new("MPI_Recv").unwrap();
        let a = kept.get(&t, &s);
        assert!(std::sync::Arc::ptr_eq(&a, &kept.get(&t, &s)), "kept");
        assert_eq!(a.total(), 4);
        let b = kept.get(&t, &Search::new("MPI").unwrap());
        assert_eq!(b.total(), 5);
        assert!(!std::sync::Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn the_window_moves_to_the_occurrence_and_zooms_where_it_would_be_too_small() {
        let o = Occurrence { start: 600, end: 700, location: 0, depth: 1, nth: 2, of: 4, span: (0, 1000) };
        // From the whole second: 100 ms is a tenth of it, so the width stays.
        let w = window_around(&o, 0, 1_000, (0.0, 1.0));
        assert!((w.0 - 0.15).abs() < 1e-9 && (w.1 - 1.15).abs() < 1e-9, "{w:?}");
        // From a window narrower than three times the occurrence: three times it.
        let w = window_around(&o, 0, 1_000, (0.0, 0.1));
        assert!((w.0 - 0.5).abs() < 1e-9 && (w.1 - 0.8).abs() < 1e-9, "{w:?}");
        // From 100 s: twenty times it, centred.
        let w = window_around(&o, 0, 1_000, (0.0, 100.0));
        assert!((w.0 + 0.35).abs() < 1e-9 || w.0 == 0.0, "{w:?}");
        assert!((w.1 - w.0 - 2.0).abs() < 1e-9, "{w:?}");
    }
}
