//! The row axis: labels from the locations' names, and the words for what the rows are.

use exaviz_model::Trace;

use super::options::MARGIN;
use crate::plot::{Plot, Tick, nice_ticks};

/// Rows at least this tall (pixels) are labelled with their location's name; thinner ones get
/// a few rank numbers.
const NAMED_ROW_PX: u32 = 14;

/// Where rows are too thin to name, the processes (groups of rows) tall enough are named
/// instead: each group's name at the middle of its rows, fitted to the margin and kept apart.
/// `None` where no group is tall enough.
pub(super) fn group_ticks(rows: &super::tracks::Tracks, p: Plot) -> Option<Vec<Tick>> {
    let mut spans: Vec<(u32, u32, u32)> = Vec::new();
    for k in 0..rows.count() {
        let Some((g, _)) = rows.group(k) else { continue };
        let r = rows.track_pixels(k);
        match spans.last_mut() {
            Some(last) if last.0 == g => last.2 = last.2.max(r.end),
            _ => spans.push((g, r.start, r.end)),
        }
    }
    let tall: Vec<&(u32, u32, u32)> = spans.iter().filter(|s| s.2 - s.1 + 1 >= NAMED_ROW_PX).collect();
    if tall.is_empty() {
        return None;
    }
    let names: Vec<String> = tall.iter().map(|s| rows.group_names[s.0 as usize].0.clone()).collect();
    let width = MARGIN[0] as f32 - 14.0;
    let fitted = crate::plot::fit_apart(&names, width, 11.0);
    Some(tall.iter().zip(fitted).map(|(s, name)| ((s.1 + s.2) as f32 / 2.0 / p.h as f32, name)).collect())
}

/// The row axis's ticks on a plot `p` whose row `i` covers `rows(i)` (pixel rows): where the
/// rows are tall enough on average, each row tall enough with its location's name (the part that
/// tells the names apart, fitted to the margin, cut in the middle where it is too long); else a
/// few row numbers.
/// `names` is asked for the `n` rows' names only where they are shown.
pub(super) fn row_ticks<'a>(
    n: usize,
    names: impl FnOnce() -> std::borrow::Cow<'a, [String]>,
    p: Plot,
    rows: impl Fn(usize) -> std::ops::Range<u32>,
) -> Vec<Tick> {
    let centre = |i: usize| {
        let r = rows(i);
        (r.start + r.end) as f32 / 2.0 / p.h as f32
    };
    // Rows keep a pixel's gap below them: NAMED_ROW_PX rows with it.
    let tall = |i: usize| rows(i).len() as u32 + 1 >= NAMED_ROW_PX;
    let height: u64 = (0..n).map(|i| rows(i).len() as u64 + 1).sum();
    if n > 0 && height >= n as u64 * u64::from(NAMED_ROW_PX) {
        let width = MARGIN[0] as f32 - 14.0;
        let names = names();
        let mut short = distinct_parts(&names);
        if short.iter().any(|s| exaviz_render::TextAtlas::measure(s, 11.0) > width) {
            short = without_common_words(&short);
        }
        let fitted = crate::plot::fit_apart(&short, width, 11.0);
        let named = fitted.into_iter().enumerate().filter(|&(i, _)| tall(i));
        return named.map(|(i, s)| (centre(i), s)).collect();
    }
    nice_ticks(0.0, (n.max(1) - 1) as f64, 6)
        .into_iter()
        .filter(|(_, v)| v.fract() == 0.0)
        .map(|(_, v)| (centre(v as usize), format!("{v:.0}")))
        .collect()
}

/// The names without the leading words they all share, where each keeps at least one
/// ("process 108800" and "process 108801" become "108800" and "108801"; the axis says what they
/// are).
fn without_common_words(names: &[String]) -> Vec<String> {
    let words: Vec<Vec<&str>> = names.iter().map(|s| s.split(' ').collect()).collect();
    let Some(shortest) = shortest_of_several(&words) else { return names.to_vec() };
    let lead = shared_lead(&words, shortest, |w, k| w[k]);
    words.iter().map(|w| w[lead..].join(" ")).collect()
}

/// The fewest parts of any of `parts`, where there are at least two lists of at least two parts.
fn shortest_of_several(parts: &[Vec<&str>]) -> Option<usize> {
    let shortest = parts.iter().map(Vec::len).min().unwrap_or(0);
    (parts.len() >= 2 && shortest >= 2).then_some(shortest)
}

/// How many of the first `shortest - 1` parts (`at(list, k)`, counted from either end) all
/// lists share.
fn shared_lead<'a>(parts: &[Vec<&'a str>], shortest: usize, at: impl Fn(&Vec<&'a str>, usize) -> &'a str) -> usize {
    (0..shortest - 1).take_while(|&k| parts.iter().all(|p| at(p, k) == at(&parts[0], k))).count()
}

/// The names without the leading and trailing ` / `-separated parts they all share ("node
/// quartz10 / MPI Rank 0 / Master thread" and "... Rank 1 ..." become "MPI Rank 0" and "MPI Rank
/// 1"); names that share nothing, or a single name, are kept whole.
pub(super) fn distinct_parts(names: &[String]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = names.iter().map(|s| s.split(" / ").collect()).collect();
    let Some(shortest) = shortest_of_several(&parts) else { return names.to_vec() };
    let lead = shared_lead(&parts, shortest, |p, k| p[k]);
    let trail = shared_lead(&parts, shortest - lead, |p, k| p[p.len() - 1 - k]);
    parts.iter().map(|p| p[lead..p.len() - trail].join(" / ")).collect()
}

/// The row axis's title, from what the locations are: processes (MPI ranks), or threads and
/// streams where the source types or names them so.
pub(super) fn rows_title(t: &Trace) -> &'static str {
    row_words(t).0
}

/// `n` rows counted in the title's words: "processes", "threads" or "threads and streams".
pub(super) fn rows_counted(t: &Trace, n: usize) -> String {
    format!("{n} {}", row_words(t).1)
}

/// What the rows are: the row axis's title and the rows' plural.
fn row_words(t: &Trace) -> (&'static str, &'static str) {
    use exaviz_model::LocationKind::{CpuThread, GpuStream};
    let l = &t.locations;
    let typed = |kind| l.kind.contains(&kind);
    // Sources that do not type their locations name them ("thread 4037", "stream 7"); every
    // picture asks, so the names are searched in place, not lowered into copies.
    let named = |word: &str| {
        l.name.iter().any(|n| n.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word.as_bytes())))
    };
    let threads = typed(CpuThread) || named("thread ");
    match (threads, typed(GpuStream) || named("stream ")) {
        (_, true) => ("thread / stream", "threads and streams"),
        (true, false) => ("thread", "threads"),
        _ => ("process (rank)", "processes"),
    }
}

/// The trace's locations counted as the trace names them, for the window's panel: processes
/// (the distinct first parts of names `PROCESS / THREAD`), threads and streams said apart, and
/// "ranks" only where the trace names its locations so ("rank 5").
pub fn locations_counted(t: &Trace) -> String {
    use exaviz_model::LocationKind::{CpuThread, GpuStream, Unknown};
    let l = &t.locations;
    let n = l.name.len();
    let kind = |i: usize| l.kind.get(i).copied().unwrap_or(Unknown);
    let processes: std::collections::HashSet<&str> =
        l.name.iter().filter_map(|s| s.split_once(" / ").map(|(h, _)| h)).collect();
    let last = |s: &str| s.rsplit(" / ").next().unwrap_or(s).to_ascii_lowercase();
    let threads = (0..n)
        .filter(|&i| kind(i) == CpuThread || (kind(i) == Unknown && last(&l.name[i]).starts_with("thread")))
        .count();
    let streams = (0..n)
        .filter(|&i| kind(i) == GpuStream || (kind(i) == Unknown && last(&l.name[i]).starts_with("stream")))
        .count();
    let count = crate::rows::thousands;
    let plural = |k: usize, one: &str, many: &str| format!("{} {}", count(k), if k == 1 { one } else { many });
    let mut parts = Vec::new();
    if !processes.is_empty() {
        parts.push(plural(processes.len(), "process", "processes"));
    }
    if threads > 0 {
        parts.push(plural(threads, "thread", "threads"));
    }
    if streams > 0 {
        parts.push(plural(streams, "stream", "streams"));
    }
    let ranks = l.name.iter().filter(|s| s.starts_with("rank ") && !s.contains(" / ")).count();
    match (parts.is_empty(), ranks == n && n > 0) {
        (true, true) => plural(n, "rank", "ranks"),
        (true, false) => plural(n, "location", "locations"),
        (false, _) => format!("{}: {}", plural(n, "location", "locations"), parts.join(", ")),
    }
}

#[cfg(test)]
mod counted_tests {
    use super::*;

    fn trace(names: &[&str], kinds: &[exaviz_model::LocationKind]) -> Trace {
        let mut t = Trace::default();
        t.locations.name = names.iter().map(|s| s.to_string()).collect();
        t.locations.kind = kinds.to_vec();
        t
    }

    /// A DDP run's 8 ranks of 4 rows each are 32 locations of 8 processes, not 32 ranks; MPI
    /// ranks named so are ranks; unnamed ones are locations.
    #[test]
    fn locations_are_counted_as_the_trace_names_them() {
        use exaviz_model::LocationKind::{CpuThread, GpuStream};
        let mut names = Vec::new();
        let mut kinds = Vec::new();
        for r in 0..8 {
            for (what, kind) in [
                ("thread 1 (python)", CpuThread),
                ("thread 2 (pt_gloo)", CpuThread),
                ("thread 3", CpuThread),
                ("stream 7", GpuStream),
            ] {
                names.push(format!("rank {r} python / {what}"));
                kinds.push(kind);
            }
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(locations_counted(&trace(&names, &kinds)), "32 locations: 8 processes, 24 threads, 8 streams");
        let ranks: Vec<String> = (0..16384).map(|r| format!("rank {r}")).collect();
        let ranks: Vec<&str> = ranks.iter().map(String::as_str).collect();
        assert_eq!(locations_counted(&trace(&ranks, &[])), "16,384 ranks");
        assert_eq!(locations_counted(&trace(&["a", "b"], &[])), "2 locations");
        assert_eq!(
            locations_counted(&trace(&["node 0 / Thread 0", "node 0 / Thread 1"], &[])),
            "2 locations: 1 process, 2 threads"
        );
    }
}
