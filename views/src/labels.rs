//! Labels from what differs: the words a row, a band or a legend entry is drawn with, made from
//! the names the trace gives, so that every label says whose its row is.
//!
//! What every name shares is dropped (a common `node quartz10 /` part, a trailing `python3`),
//! the word naming what a number counts is kept (`rank 5`, not `5`), and what remains is cut in
//! the middle only where it still does not fit. Perfetto names a process track `name pid` with
//! its threads under it, hpcviewer labels `rank.thread`, Vampir `Process 10007`: a label names
//! its row by the trace's own words.

use exaviz_render::TextAtlas;

/// Whether a word holds a number (`10007`, `0:1`, `#3`, `quartz10`): what a word before it
/// (`rank`, `node`) says the kind of.
fn numeric(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit())
}

/// The names without what they all share, each kept apart from the others where the names
/// differ:
/// - ` / `-separated parts shared at the start or the end by every name are dropped, and a
///   leading part is dropped where the rest still tells every name apart (`node quartz10 / MPI
///   Rank 0` among nodes of one rank each becomes `MPI Rank 0`);
/// - then, where one part is left of each, the words shared at the start or the end are
///   dropped (`rank 5 python` among ranks becomes `rank 5`), except a word naming the number
///   that follows it (`rank` in `rank 5`);
/// - a single name, or names that are all alike, are kept whole.
pub fn what_differs(names: &[String]) -> Vec<String> {
    if names.len() < 2 {
        return names.to_vec();
    }
    let parts: Vec<Vec<&str>> = names.iter().map(|s| s.split(" / ").map(str::trim).collect()).collect();
    let shortest = parts.iter().map(Vec::len).min().unwrap_or(0);
    let mut lead = 0;
    let mut trail = 0;
    if shortest >= 2 {
        lead = shared(&parts, shortest - 1, |p, k| p[k]);
        trail = shared(&parts, shortest - 1 - lead, |p, k| p[p.len() - 1 - k]);
        // Leading parts that tell nothing the rest does not: every name apart without them.
        while lead + trail + 1 < shortest {
            let rest: std::collections::HashSet<String> =
                parts.iter().map(|p| p[lead + 1..p.len() - trail].join(" / ")).collect();
            if rest.len() < distinct_count(names) {
                break;
            }
            lead += 1;
        }
    }
    let kept: Vec<String> = parts.iter().map(|p| p[lead..p.len() - trail].join(" / ")).collect();
    // Words are dropped within a name of one part only: across a ` / ` they would split a part.
    if kept.iter().any(|k| k.contains(" / ")) {
        return kept;
    }
    let words: Vec<Vec<&str>> = kept.iter().map(|s| s.split(' ').filter(|w| !w.is_empty()).collect()).collect();
    let fewest = words.iter().map(Vec::len).min().unwrap_or(0);
    if fewest < 2 {
        return kept;
    }
    let mut lead = shared(&words, fewest - 1, |w, k| w[k]);
    // The word naming the number after it stays with it ("rank 5", "Rank 10007", "stream 7").
    if lead > 0 && words.iter().all(|w| numeric(w[lead])) && !numeric(words[0][lead - 1]) {
        lead -= 1;
    }
    let mut trail = shared(&words, fewest - lead - 1, |w, k| w[w.len() - 1 - k]);
    // A word ending in ':' names what follows it ("rank 0: Spans"): kept together.
    if trail > 0 && words[0][words[0].len() - trail - 1].ends_with(':') {
        trail = 0;
    }
    let short: Vec<String> = words.iter().map(|w| w[lead..w.len() - trail].join(" ")).collect();
    // Names that differed only in what was dropped keep it (two spaces, one name).
    if distinct_count(&short) < distinct_count(&kept) { kept } else { short }
}

/// How many different texts `names` holds.
fn distinct_count(names: &[String]) -> usize {
    names.iter().collect::<std::collections::HashSet<_>>().len()
}

/// How many of the first `most` items (`at(list, k)`) every list shares.
fn shared<'a, T: PartialEq + ?Sized + 'a>(
    lists: &[Vec<&'a T>],
    most: usize,
    at: impl Fn(&Vec<&'a T>, usize) -> &'a T,
) -> usize {
    (0..most).take_while(|&k| lists.iter().all(|l| at(l, k) == at(&lists[0], k))).count()
}

/// [`what_differs`], each fitted to `width` pixels at `size_px`: cut in the middle where too
/// long, kept apart from the others ([`crate::plot::fit_apart`]).
pub fn fitted(names: &[String], width: f32, size_px: f32) -> Vec<String> {
    crate::plot::fit_apart(&what_differs(names), width, size_px)
}

/// The number a name ends with, and the word before it (`MPI Rank 10007`: `Rank`, 10007).
fn counted(name: &str) -> Option<(&str, u64)> {
    let name = name.trim();
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, number) = name.split_at(name.len() - digits);
    let number = number.parse().ok()?;
    let word = head.trim_end().rsplit([' ', '/', ':']).next().filter(|w| !w.is_empty())?;
    Some((word, number))
}

/// A band of locations by name: what they are (plural, lower case: `ranks`, `threads`), their
/// numbers as sorted ranges and their count, read once from their names ([`BandName::of`]) for
/// every label drawn of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BandName {
    pub what: String,
    pub ranges: Vec<(u64, u64)>,
    pub count: usize,
}

/// Most ranges a band's name lists.
const NAMED_RANGES: usize = 16;

impl BandName {
    /// The band of `members` of `names`: counted in locations, by their indices, where their
    /// names do not end in numbers of one word, each number once.
    pub fn of(names: &[String], members: &[u32]) -> Self {
        let (what, ranges) = band_parts(names, members);
        Self { what, ranges, count: members.len() }
    }

    /// Its name whole: its ranges listed (the first [`NAMED_RANGES`], then "…").
    pub fn name(&self) -> String {
        let mut listed: Vec<String> = self.ranges.iter().take(NAMED_RANGES).map(|&(a, b)| range(a, b)).collect();
        if self.ranges.len() > NAMED_RANGES {
            listed.push("…".into());
        }
        format!("{} {} ({})", self.what, listed.join(", "), thousands(self.count))
    }

    /// Its label fitted to `width` at `size_px` by listing fewer ranges (`ranks 0-9994,
    /// 10020-16383 (16,359)`, `ranks 0-9994, … (16,359)`, `ranks (16,359)`).
    pub fn fit(&self, width: f32, size_px: f32) -> String {
        let (what, ranges, count) = (&self.what, &self.ranges, thousands(self.count));
        for shown in (0..=ranges.len().min(4)).rev() {
            let more = if shown < ranges.len() { if shown == 0 { " …" } else { ", …" } } else { "" };
            let listed: Vec<String> = ranges[..shown].iter().map(|&(a, b)| range(a, b)).collect();
            let text = match shown {
                0 => format!("{what}{more} ({count})"),
                _ => format!("{what} {}{more} ({count})", listed.join(", ")),
            };
            if TextAtlas::measure(&text, size_px) <= width {
                return text;
            }
        }
        crate::plot::fit(&format!("{what} ({count})"), width, size_px)
    }

    /// [`BandName::fit`] on up to `most` lines of `width` where one line cannot list every range:
    /// what the locations are and their ranges, then their count (`ranks 0-9994,` / `10020-16383`
    /// / `(16,359)`), "…" where more ranges are left out.
    pub fn lines(&self, width: f32, size_px: f32, most: usize) -> Vec<String> {
        let one = self.fit(width, size_px);
        let ranges = &self.ranges;
        if most < 2 || (!one.contains('…') && one.contains(&range_list(ranges))) {
            return vec![one];
        }
        let fits = |s: &str| TextAtlas::measure(s, size_px) <= width;
        let count = format!("({})", thousands(self.count));
        let mut lines: Vec<String> = Vec::new();
        let mut line = self.what.clone();
        let mut left_out = false;
        for (i, &(a, b)) in ranges.iter().enumerate() {
            let item = if i + 1 < ranges.len() { format!("{},", range(a, b)) } else { range(a, b) };
            let longer = format!("{line} {item}");
            if fits(&longer) {
                line = longer;
                continue;
            }
            // The last line holds the count: a new line only where one is left for it.
            if lines.len() + 2 >= most || !fits(&item) {
                left_out = true;
                break;
            }
            lines.push(std::mem::replace(&mut line, item));
        }
        if left_out {
            let more = format!("{line} …");
            line = if fits(&more) { more } else { format!("{}…", line.trim_end_matches(',')) };
        }
        let with_count = format!("{line} {count}");
        if fits(&with_count) {
            lines.push(with_count);
        } else {
            lines.push(line);
            lines.push(count);
        }
        lines.truncate(most);
        lines
    }
}

/// The label of a band of locations `members` (of `names`) fitted to `width`
/// ([`BandName::fit`]).
pub fn band(names: &[String], members: &[u32], width: f32, size_px: f32) -> String {
    BandName::of(names, members).fit(width, size_px)
}

/// The ranges as a band's name lists them.
fn range_list(ranges: &[(u64, u64)]) -> String {
    ranges.iter().map(|&(a, b)| range(a, b)).collect::<Vec<_>>().join(", ")
}

/// The band's name whole ([`BandName::name`]).
pub fn band_name(names: &[String], members: &[u32]) -> String {
    BandName::of(names, members).name()
}

/// `n` with thousands separated by commas.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn range(a: u64, b: u64) -> String {
    if a == b { format!("{a}") } else { format!("{a}-{b}") }
}

/// What a band's locations are (plural, lower case: `ranks`, `threads`) and their numbers as
/// sorted ranges; `locations` and their indices where their names do not end in numbers of one
/// word, each number once.
fn band_parts(names: &[String], members: &[u32]) -> (String, Vec<(u64, u64)>) {
    let parsed: Option<Vec<(&str, u64)>> =
        members.iter().map(|&l| names.get(l as usize).and_then(|n| counted(n))).collect();
    let (what, mut numbers) = match parsed {
        Some(p) if !p.is_empty() && p.iter().all(|(w, _)| w.eq_ignore_ascii_case(p[0].0)) => {
            let mut numbers: Vec<u64> = p.iter().map(|&(_, n)| n).collect();
            numbers.sort_unstable();
            let before = numbers.len();
            numbers.dedup();
            if numbers.len() == before {
                let word = p[0].0.to_lowercase();
                let plural = if word.ends_with('s') { word } else { format!("{word}s") };
                (plural, numbers)
            } else {
                ("locations".to_string(), members.iter().map(|&l| u64::from(l)).collect())
            }
        }
        _ => ("locations".to_string(), members.iter().map(|&l| u64::from(l)).collect()),
    };
    numbers.sort_unstable();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for n in numbers {
        match ranges.last_mut() {
            Some(r) if n == r.1 + 1 => r.1 = n,
            Some(r) if n == r.1 => {}
            _ => ranges.push((n, n)),
        }
    }
    (what, ranges)
}

/// Where labels `line` pixels tall go on an axis from `lo` to `hi`: each wants its centre at
/// `wanted.0`; one that must be drawn (`wanted.1`: a row drawn apart, a band, a process's
/// header) is placed, moved off its row where labels would overlap (a pinned label, drawn with
/// a leader to its row); the others only where they fit beside those placed (thinned, every
/// other row where rows are thinner than a line). `None`: not drawn. Musts beyond what the axis
/// holds are thinned as the others are.
pub fn place(wanted: &[(f32, bool)], lo: f32, hi: f32, line: f32) -> Vec<Option<f32>> {
    let mut out = vec![None; wanted.len()];
    let room = ((hi - lo) / line).floor().max(0.0) as usize;
    let mut musts: Vec<usize> = (0..wanted.len()).filter(|&i| wanted[i].1).collect();
    musts.sort_by(|&a, &b| wanted[a].0.total_cmp(&wanted[b].0));
    if musts.len() > room {
        // Keep an even spread of them.
        let keep = room;
        musts = (0..keep).map(|k| musts[k * musts.len() / keep.max(1)]).collect();
    }
    let half = line / 2.0;
    let mut ys: Vec<f32> = musts.iter().map(|&i| wanted[i].0.clamp(lo + half, hi - half)).collect();
    for k in 1..ys.len() {
        ys[k] = ys[k].max(ys[k - 1] + line);
    }
    for k in (0..ys.len()).rev() {
        let cap = if k + 1 < ys.len() { ys[k + 1] - line } else { hi - half };
        ys[k] = ys[k].min(cap);
    }
    for (&i, &y) in musts.iter().zip(&ys) {
        out[i] = Some(y);
    }
    let mut taken: Vec<f32> = ys;
    taken.sort_by(f32::total_cmp);
    let mut others: Vec<usize> = (0..wanted.len()).filter(|&i| out[i].is_none()).collect();
    others.sort_by(|&a, &b| wanted[a].0.total_cmp(&wanted[b].0));
    for i in others {
        let y = wanted[i].0;
        if y - half < lo - 0.5 || y + half > hi + 0.5 {
            continue;
        }
        let at = taken.partition_point(|&t| t < y);
        let clear_below = taken.get(at).is_none_or(|&t| t - y >= line);
        let clear_above = at == 0 || y - taken[at - 1] >= line;
        if clear_below && clear_above {
            taken.insert(at, y);
            out[i] = Some(y);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn what_every_name_shares_is_dropped_and_the_rank_kept() {
        assert_eq!(what_differs(&strings(&["rank 0 python", "rank 5 python"])), ["rank 0", "rank 5"]);
        assert_eq!(what_differs(&strings(&["rank 0 python3", "rank 1 python3"])), ["rank 0", "rank 1"]);
        assert_eq!(
            what_differs(&strings(&[
                "node quartz10 / MPI Rank 0 / Master thread",
                "node quartz10 / MPI Rank 1 / Master thread"
            ])),
            ["Rank 0", "Rank 1"]
        );
        // A node of one rank each repeats what the rank says.
        assert_eq!(what_differs(&strings(&["node n1 / MPI Rank 0", "node n2 / MPI Rank 1"])), ["Rank 0", "Rank 1"]);
        // Rank 0 on each of two nodes: the nodes tell them apart.
        assert_eq!(what_differs(&strings(&["node n1 / rank 0", "node n2 / rank 0"])), ["node n1", "node n2"]);
        assert_eq!(what_differs(&strings(&["process 108800", "process 108801"])), ["process 108800", "process 108801"]);
        assert_eq!(
            what_differs(&strings(&["main", "pt_gloo_runloop", "stream 7"])),
            ["main", "pt_gloo_runloop", "stream 7"]
        );
        assert_eq!(what_differs(&strings(&["rank 3"])), ["rank 3"]);
        assert_eq!(
            what_differs(&strings(&["process rank 0: Spans", "process rank 1: Spans"])),
            ["rank 0: Spans", "rank 1: Spans"]
        );
        assert_eq!(what_differs(&strings(&["same", "same"])), ["same", "same"]);
    }

    #[test]
    fn a_band_lists_its_ranks_as_space_allows() {
        let names: Vec<String> = (0..16384).map(|r| format!("MPI Rank {r}")).collect();
        let members: Vec<u32> = (0..16384).filter(|r| !(9995..10020).contains(r)).collect();
        assert_eq!(band(&names, &members, 1000.0, 11.0), "ranks 0-9994, 10020-16383 (16,359)");
        assert_eq!(band_name(&names, &members), "ranks 0-9994, 10020-16383 (16,359)");
        let narrow = band(&names, &members, 110.0, 11.0);
        assert!(narrow.starts_with("ranks") && narrow.ends_with("(16,359)"), "{narrow}");
        assert!(TextAtlas::measure(&narrow, 11.0) <= 110.0, "{narrow}");
        // A tall band lists its ranges on lines of their own.
        let lines = BandName::of(&names, &members).lines(110.0, 11.0, 4);
        assert_eq!(lines.join(" "), "ranks 0-9994, 10020-16383 (16,359)", "{lines:?}");
        assert!(lines.iter().all(|l| TextAtlas::measure(l, 11.0) <= 110.0), "{lines:?}");
        assert_eq!(BandName::of(&names, &members).lines(1000.0, 11.0, 4), ["ranks 0-9994, 10020-16383 (16,359)"]);
        let unnamed = strings(&["a", "b", "c"]);
        assert_eq!(band(&unnamed, &[0, 2], 500.0, 11.0), "locations 0, 2 (2)");
    }

    #[test]
    fn labels_that_must_be_drawn_are_pinned_and_the_rest_thinned() {
        // Five rows 4 px apart, the third must be drawn: it and every third row fit 12 px lines.
        let wanted: Vec<(f32, bool)> = (0..10).map(|k| (10.0 + 4.0 * k as f32, k == 4)).collect();
        let placed = place(&wanted, 0.0, 100.0, 12.0);
        assert_eq!(placed[4], Some(26.0));
        let ys: Vec<f32> = placed.iter().flatten().copied().collect();
        for (i, a) in ys.iter().enumerate() {
            for b in &ys[i + 1..] {
                assert!((a - b).abs() >= 12.0, "{ys:?}");
            }
        }
        // Musts crowded together are moved apart, inside the axis.
        let crowded: Vec<(f32, bool)> = (0..5).map(|k| (95.0 + k as f32, true)).collect();
        let placed: Vec<f32> = place(&crowded, 0.0, 100.0, 12.0).into_iter().map(Option::unwrap).collect();
        assert!(placed.windows(2).all(|w| w[1] - w[0] >= 12.0) && placed[4] <= 94.0, "{placed:?}");
    }
}
