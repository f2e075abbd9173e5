//! The row axis: labels from the locations' names, and the words for what the rows are.

use exaviz_model::Trace;
use exaviz_render::{Anchor, Blend, OutlineRow, Scene, TextAtlas};

use super::tracks::{Labelled, Tracks};
use crate::plot::{Plot, Tick};
use crate::{TEXT, TEXT_DIM};

/// Pitch of the row labels: 11-pixel text with a pixel either side.
pub(super) const LINE_PX: f32 = 12.0;

/// Least height of a process's group (pixels) named where its rows are too thin to name each.
const NAMED_GROUP_PX: u32 = 14;

/// The row axis of a picture: the labels drawn left of the plot, where they were drawn, and what
/// the picture's rows are.
#[derive(Debug, Default)]
pub(super) struct RowAxis {
    /// Row labels, right-aligned against the plot: their centre (a share of the plot's height)
    /// and text.
    pub ticks: Vec<Tick>,
    /// Process headers in the column at the margin's left: the text's centre (plot pixels), the
    /// text, and the group's pixel rows.
    pub headers: Vec<(f32, String, std::ops::Range<u32>)>,
    /// Labels moved off their rows: the label's centre and its row's centre, plot pixels.
    pub leaders: Vec<(f32, f32)>,
    /// The further lines of labels of several (a tall band's ranges): their centre, plot
    /// pixels, and text, right-aligned against the plot as the ticks' are.
    pub extra: Vec<(f32, String)>,
    /// What the rows are, top to bottom, in picture pixels.
    pub outline: Vec<OutlineRow>,
    /// Where the labels are, for picking.
    pub labelled: Labelled,
}

impl RowAxis {
    /// The summary track above the rows (`sp`, on plot `p`) labelled and first in the outline,
    /// over `locations` locations.
    pub(super) fn summary(&mut self, p: Plot, sp: Plot, locations: usize) {
        let middle = (sp.y0 - p.y0) as f32 + sp.h as f32 / 2.0;
        self.ticks.push((middle / p.h as f32, "summary".into()));
        let row = OutlineRow {
            label: "summary".into(),
            name: "summary: the share of the locations in each state".into(),
            top: sp.y0,
            height: sp.h,
            apart: false,
            count: locations,
            kind: "summary".into(),
            process: String::new(),
        };
        self.outline.insert(0, row);
    }

    /// Draws the headers (each with a line along its group's rows) and the leaders of labels
    /// moved off their rows, over plot `p`.
    pub(super) fn draw(&self, scene: &mut Scene, p: Plot) {
        for (y, text, span) in &self.headers {
            let y0 = p.y0 as f32 + span.start as f32;
            let y1 = p.y0 as f32 + span.end as f32;
            scene.rect([4.0, y0], [5.0, y1.max(y0 + 1.0)], TEXT_DIM, true);
            scene.text(text, [9.0, p.y0 as f32 + y + 4.0], 11.0, Anchor::Left, TEXT);
        }
        let x = p.x0 as f32;
        for (y, text) in &self.extra {
            scene.text(text, [x - 8.0, p.y0 as f32 + y + 4.0], 11.0, Anchor::Right, TEXT_DIM);
        }
        for &(label, row) in &self.leaders {
            let (a, b) = ([x - 7.0, p.y0 as f32 + label], [x - 1.0, p.y0 as f32 + row]);
            scene.segment(Blend::Alpha, a, b, 1.0, TEXT_DIM, true);
        }
    }
}

/// What kind of row track `k` of `rows` is, in the outline's words.
fn kind_of(rows: &Tracks, k: usize) -> &'static str {
    if rows.band(k).is_some() {
        "band"
    } else if rows.collapsed(k) {
        "process"
    } else {
        "location"
    }
}

/// The row axis of `rows` placed on plot `p`, its labels fitted to a left margin `margin`
/// pixels wide: labels from what tells the rows apart ([`crate::labels`]).
/// - Where the tracks are at least 2 pixels each on average, each is labelled where its label
///   fits beside the others (thinned to every other row where rows are thinner than a line),
///   and always where it is a band, a process collapsed to one row, or a location drawn apart
///   (a pinned label, moved off its row with a leader where needed). An open process's threads
///   and streams are labelled by what differs among them, under a header naming the process
///   in a column of its own.
/// - Where they are thinner, the processes tall enough are named, or else a few rows at even
///   intervals, each by its name.
pub(super) fn track_axis(t: &Trace, rows: &Tracks, p: Plot, margin: f32) -> RowAxis {
    let width = margin - 14.0;
    let n = rows.count();
    if n == 0 {
        return RowAxis::default();
    }
    let lo = rows.track_pixels(0).start as f32;
    let hi = (0..n).map(|k| rows.track_pixels(k).end).max().unwrap_or(p.h) as f32;
    let centre = |k: usize| {
        let r = rows.track_pixels(k);
        (r.start + r.end) as f32 / 2.0
    };
    if n as u64 * 2 > u64::from(p.h) {
        return thin_axis(t, rows, p, width, (lo, hi));
    }
    let counts = rows.counts();
    let full = rows.full_names(t);
    let shown = rows.names(t);
    // Processes: named by what tells them apart, in a header column where one is open.
    let group_names: Vec<String> = rows.group_names.iter().map(|g| g.0.clone()).collect();
    let processes = crate::labels::what_differs(&group_names);
    let open: Vec<u32> = {
        let mut g: Vec<u32> = (0..n).filter_map(|k| rows.group(k).filter(|g| !g.1).map(|g| g.0)).collect();
        g.dedup();
        g
    };
    // Labels right-aligned against the plot; where a process is open, a line along its rows
    // at the margin's left, and its header at its first row, left-aligned.
    let row_w = if open.is_empty() { width } else { width - 10.0 };
    let mut label = track_labels(rows, (&shown, &full), &processes, row_w);
    let by_group = open_groups(rows);
    let must = |k: usize| rows.band(k).is_some() || rows.apart(k) || rows.collapsed(k);
    let wanted: Vec<(f32, bool)> = (0..n).map(|k| (centre(k), must(k))).collect();
    let mut placed = crate::labels::place(&wanted, lo, hi, LINE_PX);
    let spans: Vec<std::ops::Range<u32>> = open
        .iter()
        .map(|&g| {
            let ks = &by_group[&g];
            rows.track_pixels(ks[0]).start..rows.track_pixels(*ks.last().unwrap_or(&ks[0])).end
        })
        .collect();
    let header_texts: Vec<String> = open.iter().map(|&g| processes[g as usize].clone()).collect();
    let header_texts = crate::plot::fit_apart(&header_texts, row_w, 11.0);
    let header_wanted: Vec<(f32, bool)> =
        spans.iter().map(|s| (s.start as f32 + (LINE_PX / 2.0).min(s.len() as f32 / 2.0), true)).collect();
    let header_at = crate::labels::place(&header_wanted, lo, hi, LINE_PX);
    let mut axis = RowAxis::default();
    let headers = Headers { open: &open, by_group: &by_group, spans: &spans, texts: &header_texts, at: &header_at };
    headers.place(&mut axis, (&mut label, &mut placed), p.x0 as f32 - 8.0);
    // Each open process's header comes first of its rows in the outline.
    let mut headers: std::collections::HashMap<usize, OutlineRow> = Default::default();
    for (i, &g) in open.iter().enumerate() {
        let row = OutlineRow {
            label: header_at[i].map_or(String::new(), |_| header_texts[i].clone()),
            name: rows.group_names[g as usize].0.clone(),
            top: p.y0 + spans[i].start,
            height: spans[i].len() as u32,
            apart: false,
            count: by_group[&g].iter().map(|&k| counts[k]).sum(),
            kind: "process".into(),
            process: String::new(),
        };
        headers.insert(by_group[&g][0], row);
    }
    let blocks = band_blocks(rows, label, row_w);
    let mut under = String::new();
    for (k, (at, lines)) in placed.iter().zip(blocks).enumerate() {
        if let Some(header) = headers.remove(&k) {
            under = header.label.clone();
            axis.outline.push(header);
        }
        if !matches!(rows.group(k), Some((_, false))) {
            under.clear();
        }
        let r = rows.track_pixels(k);
        if let Some(y) = *at {
            // The middle line at the label's place, the others above and below it.
            let middle = (lines.len() - 1) / 2;
            let line_y = |i: usize| y + (i as f32 - middle as f32) * LINE_PX;
            for (i, text) in lines.iter().enumerate() {
                match i == middle {
                    true => axis.ticks.push((y / p.h as f32, text.clone())),
                    false => axis.extra.push((line_y(i), text.clone())),
                }
            }
            axis.labelled.rows.push((line_y(0) - LINE_PX / 2.0, line_y(lines.len() - 1) + LINE_PX / 2.0, k));
            if (y - centre(k)).abs() > 2.0 {
                axis.leaders.push((y, centre(k)));
            }
        }
        axis.outline.push(OutlineRow {
            label: if at.is_some() { lines.join(" ") } else { String::new() },
            name: full[k].clone(),
            top: p.y0 + r.start,
            height: r.len() as u32,
            apart: rows.apart(k),
            count: counts[k],
            kind: kind_of(rows, k).into(),
            process: under.clone(),
        });
    }
    axis
}

/// Each track's label as lines: a band tall enough for several lists its ranges on as many as
/// it needs (up to 4) where one line cannot list them all; the others their one `label`.
fn band_blocks(rows: &Tracks, label: Vec<String>, row_w: f32) -> Vec<Vec<String>> {
    label
        .into_iter()
        .enumerate()
        .map(|(k, text)| {
            let lines = (rows.track_pixels(k).len() as f32 / LINE_PX) as usize;
            match rows.band_name(k) {
                Some(band) if lines >= 2 => band.lines(row_w, 11.0, lines.min(4)),
                _ => vec![text],
            }
        })
        .collect()
}

/// The headers of the open processes: each group, its tracks, its pixel rows, its text and where
/// it was placed (`None`: not drawn).
struct Headers<'a> {
    open: &'a [u32],
    by_group: &'a std::collections::BTreeMap<u32, Vec<usize>>,
    spans: &'a [std::ops::Range<u32>],
    texts: &'a [String],
    at: &'a [Option<f32>],
}

impl Headers<'_> {
    /// Adds the headers to `axis`; a thread's label (`label`, placed at `placed`) on a header's
    /// line keeps clear of it, ending at `right_edge`: cut to the room left, or left out.
    fn place(&self, axis: &mut RowAxis, (label, placed): (&mut [String], &mut [Option<f32>]), right_edge: f32) {
        for (i, &g) in self.open.iter().enumerate() {
            let Some(y) = self.at[i] else { continue };
            let header_right = 9.0 + TextAtlas::measure(&self.texts[i], 11.0);
            axis.headers.push((y, self.texts[i].clone(), self.spans[i].clone()));
            axis.labelled.headers.push((y - LINE_PX / 2.0, y + LINE_PX / 2.0, g, header_right + 4.0));
            for &k in &self.by_group[&g] {
                let Some(at) = placed[k].filter(|at| (at - y).abs() < LINE_PX) else { continue };
                let room = right_edge - header_right - 10.0;
                if TextAtlas::measure(&label[k], 11.0) <= room {
                    continue;
                }
                if room >= 30.0 {
                    label[k] = crate::plot::fit_middle(&label[k], room, 11.0, 0.3);
                    placed[k] = Some(at);
                } else {
                    placed[k] = None;
                }
            }
        }
    }
}

/// The tracks of each open process's group, by group.
fn open_groups(rows: &Tracks) -> std::collections::BTreeMap<u32, Vec<usize>> {
    let mut by_group: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for k in 0..rows.count() {
        if let Some((g, false)) = rows.group(k) {
            by_group.entry(g).or_default().push(k);
        }
    }
    by_group
}

/// The part of a process's label that says which it is, to go before a thread's: the label
/// where short (`rank 3`), else its last word holding a number (`2171411` of `mpi-example
/// 2171411`).
fn process_tag(process: &str) -> &str {
    if TextAtlas::measure(process, 11.0) <= 50.0 {
        return process;
    }
    process.rsplit(' ').find(|w| w.chars().any(|c| c.is_ascii_digit())).unwrap_or(process)
}

/// Each track's label, fitted to `row_w`: a location by what differs among the locations alone on
/// their rows; a thread or stream by what differs among its process's (`shown`: the tracks'
/// short names); a band by its locations' numbers; a collapsed process by its name among
/// `processes`. `full`: the tracks' names whole.
fn track_labels(rows: &Tracks, (shown, full): (&[String], &[String]), processes: &[String], row_w: f32) -> Vec<String> {
    let n = rows.count();
    let mut label: Vec<String> = vec![String::new(); n];
    let alone: Vec<usize> = (0..n).filter(|&k| rows.group(k).is_none() && rows.band(k).is_none()).collect();
    let alone_names: Vec<String> = alone.iter().map(|&k| full[k].clone()).collect();
    for (&k, short) in alone.iter().zip(crate::labels::what_differs(&alone_names)) {
        label[k] = short;
    }
    let mut by_group: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (k, l) in label.iter_mut().enumerate() {
        match rows.group(k) {
            Some((g, false)) => by_group.entry(g).or_default().push(k),
            Some((g, true)) => *l = processes.get(g as usize).cloned().unwrap_or_default(),
            None => {}
        }
    }
    for ks in by_group.values() {
        let names: Vec<String> = ks.iter().map(|&k| shown[k].clone()).collect();
        for (&k, short) in ks.iter().zip(crate::labels::what_differs(&names)) {
            label[k] = short;
        }
    }
    // A thread's label that another process's rows have too (`stream 7` under every rank) says
    // its process as well (`rank 3 stream 7`), so that no two rows read alike.
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    for l in label.iter().filter(|l| !l.is_empty()) {
        *seen.entry(l.as_str()).or_default() += 1;
    }
    let clashing: Vec<bool> = label.iter().map(|l| seen.get(l.as_str()).is_some_and(|&c| c > 1)).collect();
    for (&g, ks) in &by_group {
        let tag = process_tag(processes.get(g as usize).map_or("", String::as_str));
        for &k in ks.iter().filter(|&&k| clashing[k]) {
            label[k] = format!("{tag} {}", label[k]);
        }
    }
    let plain: Vec<usize> = (0..n).filter(|&k| rows.band(k).is_none()).collect();
    let texts: Vec<String> = plain.iter().map(|&k| label[k].clone()).collect();
    for (&k, fitted) in plain.iter().zip(crate::plot::fit_apart_keeping(&texts, row_w, 11.0, 0.35)) {
        label[k] = fitted;
    }
    for (k, l) in label.iter_mut().enumerate() {
        if let Some(band) = rows.band_name(k) {
            *l = band.fit(row_w, 11.0);
        }
    }
    label
}

/// [`track_axis`] where the tracks are thinner than 2 pixels on average: the processes tall
/// enough named at their middle, or else a few tracks at even intervals by their names; the
/// outline one row per run of tracks sharing pixel rows.
fn thin_axis(t: &Trace, rows: &Tracks, p: Plot, width: f32, (lo, hi): (f32, f32)) -> RowAxis {
    let n = rows.count();
    let mut axis = RowAxis::default();
    // Processes tall enough, at their middle.
    let mut spans: Vec<(u32, u32, u32)> = Vec::new();
    for k in 0..n {
        let Some((g, _)) = rows.group(k) else { continue };
        let r = rows.track_pixels(k);
        match spans.last_mut() {
            Some(last) if last.0 == g => last.2 = last.2.max(r.end),
            _ => spans.push((g, r.start, r.end)),
        }
    }
    let tall: Vec<&(u32, u32, u32)> = spans.iter().filter(|s| s.2 - s.1 + 1 >= NAMED_GROUP_PX).collect();
    // Where each label goes (plot pixels), what it names (its track) and its text.
    let mut labels: Vec<(f32, usize, String)> = Vec::new();
    if !tall.is_empty() {
        let names: Vec<String> = rows.group_names.iter().map(|g| g.0.clone()).collect();
        let short = crate::labels::what_differs(&names);
        let texts: Vec<String> = tall.iter().map(|s| short[s.0 as usize].clone()).collect();
        let fitted = crate::plot::fit_apart(&texts, width, 11.0);
        let wanted: Vec<(f32, bool)> = tall.iter().map(|s| ((s.1 + s.2) as f32 / 2.0, false)).collect();
        for (i, y) in crate::labels::place(&wanted, lo, hi, LINE_PX).into_iter().enumerate() {
            if let Some(y) = y {
                let k = rows.at_row(tall[i].1).unwrap_or(0);
                labels.push((y, k, fitted[i].clone()));
            }
        }
    } else {
        // A track every few lines, named; the first and the last among them.
        let pitch = (LINE_PX * 2.5).max((hi - lo) / 16.0);
        let mut picked: Vec<usize> = Vec::new();
        let mut y = lo + LINE_PX / 2.0;
        while y <= hi - LINE_PX / 2.0 {
            if let Some(k) = rows.at_row(y as u32).filter(|k| picked.last() != Some(k)) {
                picked.push(k);
            }
            y += pitch;
        }
        let names: Vec<String> = picked.iter().map(|&k| rows.full_name(t, k)).collect();
        let fitted = crate::labels::fitted(&names, width, 11.0);
        let wanted: Vec<(f32, bool)> = picked
            .iter()
            .map(|&k| {
                let r = rows.track_pixels(k);
                ((r.start + r.end) as f32 / 2.0, false)
            })
            .collect();
        for (i, y) in crate::labels::place(&wanted, lo, hi, LINE_PX).into_iter().enumerate() {
            if let Some(y) = y {
                labels.push((y, picked[i], fitted[i].clone()));
            }
        }
    }
    for (y, k, text) in &labels {
        axis.ticks.push((y / p.h as f32, text.clone()));
        axis.labelled.rows.push((y - LINE_PX / 2.0, y + LINE_PX / 2.0, *k));
    }
    // The outline: a row per run of tracks on the same pixel rows.
    let counts = rows.counts();
    let mut k = 0;
    while k < n {
        let r = rows.track_pixels(k);
        let mut end = k + 1;
        while end < n && rows.track_pixels(end).start < r.end.max(r.start + 1) {
            end += 1;
        }
        let last = rows.track_pixels(end - 1);
        let name = match end - k {
            1 => rows.full_name(t, k),
            _ => format!("{} … {}", rows.full_name(t, k), rows.full_name(t, end - 1)),
        };
        let label = labels.iter().find(|l| (k..end).contains(&l.1)).map_or(String::new(), |l| l.2.clone());
        axis.outline.push(OutlineRow {
            label,
            name,
            top: p.y0 + r.start,
            height: last.end.max(r.end) - r.start,
            apart: (k..end).any(|k| rows.apart(k)),
            count: counts[k..end].iter().sum(),
            kind: if end - k == 1 { kind_of(rows, k).into() } else { "locations".into() },
            process: String::new(),
        });
        k = end;
    }
    axis
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
