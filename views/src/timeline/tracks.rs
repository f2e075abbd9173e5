//! The timeline's tracks: which locations are drawn on which row, as Perfetto's process and
//! thread tracks and Vampir's process groups. Locations without any event (no interval, message
//! or collective) are hidden unless asked for; consecutive locations whose names share their
//! first part (`node quartz1 / ...`, `pyper:trainer:0:0 / thread 4037`, the source's process) form
//! a group, and a collapsed group is drawn as one track showing what its locations do (the
//! dominant state of all of them, their messages ending on it).
//!
//! A picture lays the tracks out on its plot ([`Tracks::place`]): each track's height follows its
//! weight (the nesting levels it shows, where rows are tall enough to stack them, as Perfetto
//! stacks slices), and counter tracks take fixed heights under the track of their location.

use exaviz_model::Trace;
use exaviz_model::selection::Folded;

/// A location's track where it is hidden.
const HIDDEN: u32 = u32::MAX;

/// Locations on tracks.
#[derive(Clone, Debug)]
pub struct Tracks {
    /// Per location: its track, or [`HIDDEN`].
    track: Vec<u32>,
    /// Per track: its label, made into words only where asked ([`Tracks::names`]): a picture of
    /// thousands of thin tracks shows none.
    labels: Vec<Label>,
    /// Per track: its group (`u32::MAX`: none) and whether the group is collapsed on it.
    groups: Vec<(u32, bool)>,
    /// Per group: its name and how many locations it holds.
    pub group_names: Vec<(String, usize)>,
    /// Per band of locations grouped by behaviour: its name whole, and what its locations are
    /// (their numbers as ranges, their count).
    bands: Vec<(String, crate::labels::BandName)>,
    /// Per track, whether its location is drawn apart from the group it behaves unlike.
    apart: Vec<bool>,
    /// Where the row labels were drawn, plot pixel rows: each label's span and its track, and
    /// each process header's span, its group and the header column's right edge (picture
    /// pixels), so that a click on a label moved off its row still reads its row.
    labelled: Labelled,
    /// Locations hidden for having no events.
    pub hidden: usize,
    /// Per track, its pixel rows on the plot as placed (start, end without the gap below it).
    spans: Vec<(u32, u32)>,
}

/// Where the row labels of a picture were drawn ([`Tracks::labelled`]).
#[derive(Clone, Debug, Default)]
pub struct Labelled {
    /// Each row label's pixel rows (plot pixels) and its track.
    pub rows: Vec<(f32, f32, usize)>,
    /// Each process header's pixel rows (plot pixels), its group and its right edge (picture
    /// pixels).
    pub headers: Vec<(f32, f32, u32, f32)>,
}

/// What a label left of the plot names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelAt {
    Track(usize),
    Header(u32),
}

/// What a track is labelled with.
#[derive(Clone, Copy, Debug)]
enum Label {
    /// The location's name.
    Name(u32),
    /// The part of the location's name after its group's name.
    Rest(u32),
    /// A collapsed group: its name and size.
    Group(u32),
    /// A band of locations grouped by behaviour.
    Band(u32),
}

/// A counter track to place: under which track, and its height in pixels (a gap above it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub after: usize,
    pub height: u32,
}

/// Pixels between a track and the counter track under it.
pub const SLOT_GAP_PX: u32 = 4;

impl Tracks {
    /// The tracks of `t` whose locations are `busy` (or all, with `show_empty`), with the groups
    /// in `folded` collapsed.
    pub fn new(t: &Trace, busy: &[bool], show_empty: bool, folded: Option<Folded>) -> Self {
        let names = &t.locations.name;
        let shown: Vec<usize> = (0..names.len()).filter(|&l| show_empty || busy.get(l) == Some(&true)).collect();
        // Groups: runs of shown locations whose names share a first part (names of two parts or
        // more only).
        let head = |l: usize| names[l].split_once(" / ").map(|(h, _)| h);
        let mut group_of = vec![u32::MAX; names.len()];
        let mut group_names: Vec<(String, usize)> = Vec::new();
        let mut k = 0;
        while k < shown.len() {
            let Some(h) = head(shown[k]) else {
                k += 1;
                continue;
            };
            let run = shown[k..].iter().take_while(|&&l| head(l) == Some(h)).count();
            if run >= 2 {
                for &l in &shown[k..k + run] {
                    group_of[l] = group_names.len() as u32;
                }
                group_names.push((h.to_string(), run));
            }
            k += run;
        }
        let mut track = vec![HIDDEN; names.len()];
        let (mut labels, mut groups) = (Vec::with_capacity(shown.len()), Vec::with_capacity(shown.len()));
        for &l in &shown {
            let g = group_of[l];
            let collapsed = g != u32::MAX && folded.is_some_and(|f| f.holds(g));
            if collapsed && groups.last() == Some(&(g, true)) {
                track[l] = labels.len() as u32 - 1;
                continue;
            }
            track[l] = labels.len() as u32;
            labels.push(match collapsed {
                true => Label::Group(g),
                // In an open group, the part after the group's name (its tooltip names the group).
                false if g != u32::MAX => Label::Rest(l as u32),
                false => Label::Name(l as u32),
            });
            groups.push((g, collapsed));
        }
        let hidden = names.len() - shown.len();
        let apart = vec![false; labels.len()];
        Self {
            track,
            labels,
            groups,
            group_names,
            hidden,
            bands: Vec::new(),
            apart,
            labelled: Labelled::default(),
            spans: Vec::new(),
        }
    }

    /// The tracks of `t`'s shown locations (`busy`, or all with `show_empty`) grouped by
    /// behaviour: a band per group of `b`, placed where its first location is, and a track of
    /// its own for each deviant, in the trace's order.
    pub fn behaviour(t: &Trace, busy: &[bool], show_empty: bool, b: &crate::rows::Behaviour) -> Self {
        let names = &t.locations.name;
        let n = names.len();
        let shown = |l: usize| show_empty || busy.get(l) == Some(&true);
        let mut band_of = vec![u32::MAX; n];
        for (g, members) in b.groups.iter().enumerate() {
            for &l in members {
                if let Some(x) = band_of.get_mut(l as usize) {
                    *x = g as u32;
                }
            }
        }
        let mut own = vec![false; n];
        for &l in &b.deviants {
            if let Some(x) = own.get_mut(l as usize) {
                *x = true;
            }
        }
        let (mut track, mut labels, mut groups) = (vec![HIDDEN; n], Vec::new(), Vec::new());
        let mut apart = Vec::new();
        let mut band_track = vec![u32::MAX; b.groups.len()];
        for l in (0..n).filter(|&l| shown(l)) {
            let g = band_of[l];
            if own[l] || g == u32::MAX {
                track[l] = labels.len() as u32;
                labels.push(Label::Name(l as u32));
                groups.push((u32::MAX, false));
                apart.push(own[l]);
            } else if band_track[g as usize] == u32::MAX {
                band_track[g as usize] = labels.len() as u32;
                track[l] = labels.len() as u32;
                labels.push(Label::Band(g));
                groups.push((u32::MAX, false));
                apart.push(false);
            } else {
                track[l] = band_track[g as usize];
            }
        }
        let bands = b
            .groups
            .iter()
            .map(|m| {
                let band = crate::labels::BandName::of(names, m);
                (band.name(), band)
            })
            .collect();
        let hidden = (0..n).filter(|&l| !shown(l)).count();
        let labelled = Labelled::default();
        Self { track, labels, groups, group_names: Vec::new(), hidden, bands, apart, labelled, spans: Vec::new() }
    }

    /// Whether track `k` is a band of locations grouped by behaviour, and its label.
    pub fn band(&self, k: usize) -> Option<&str> {
        match self.labels.get(k) {
            Some(&Label::Band(g)) => self.bands.get(g as usize).map(|b| b.0.as_str()),
            _ => None,
        }
    }

    /// Track `k`'s band by name (what its locations are and their numbers), where it is a band.
    pub fn band_name(&self, k: usize) -> Option<&crate::labels::BandName> {
        match self.labels.get(k) {
            Some(&Label::Band(g)) => self.bands.get(g as usize).map(|b| &b.1),
            _ => None,
        }
    }

    /// Whether track `k` is a location drawn apart from the group it behaves unlike.
    pub fn apart(&self, k: usize) -> bool {
        self.apart.get(k).copied().unwrap_or(false)
    }

    /// Whether track `k` is a collapsed group (a process drawn as one row).
    pub fn collapsed(&self, k: usize) -> bool {
        matches!(self.labels.get(k), Some(Label::Group(_)))
    }

    /// How many locations each track holds.
    pub fn counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.count()];
        for &k in self.track.iter().filter(|&&k| k != HIDDEN) {
            counts[k as usize] += 1;
        }
        counts
    }

    /// Each track's name whole: its location's (in an open group too), a collapsed group's, a
    /// band's.
    pub fn full_names(&self, t: &Trace) -> Vec<String> {
        (0..self.count()).map(|k| self.full_name(t, k)).collect()
    }

    /// Track `k`'s name whole ([`Tracks::full_names`]).
    pub fn full_name(&self, t: &Trace, k: usize) -> String {
        let name = |l: u32| t.locations.name.get(l as usize).cloned().unwrap_or_default();
        match self.labels.get(k) {
            Some(&(Label::Name(l) | Label::Rest(l))) => name(l),
            Some(&Label::Group(g)) => self.group_names.get(g as usize).map_or(String::new(), |g| g.0.clone()),
            Some(&Label::Band(g)) => self.bands.get(g as usize).map_or(String::new(), |b| b.0.clone()),
            None => String::new(),
        }
    }

    /// Keeps where the row labels were drawn, for picking.
    pub fn set_labelled(&mut self, labelled: Labelled) {
        self.labelled = labelled;
    }

    /// The label drawn at plot pixel row `y` and picture column `x`, left of the plot: a
    /// process's header (in its column) or a row's label, where one was drawn there; else the
    /// track on that pixel row.
    pub fn label_at(&self, x: f32, y: f32) -> Option<LabelAt> {
        let l = &self.labelled;
        if let Some(&(_, _, g, _)) = l.headers.iter().find(|h| y >= h.0 && y < h.1 && x < h.3) {
            return Some(LabelAt::Header(g));
        }
        if let Some(&(_, _, k)) = l.rows.iter().find(|r| y >= r.0 && y < r.1) {
            return Some(LabelAt::Track(k));
        }
        if y < 0.0 {
            return None;
        }
        self.at_row(y as u32).map(LabelAt::Track)
    }

    /// Each track's label, in order: a location's name (in an open group, the part after the
    /// group's name), or a collapsed group's name and size. `t`: the trace the tracks are of.
    pub fn names(&self, t: &Trace) -> Vec<String> {
        let name = |l: u32| t.locations.name.get(l as usize).map_or("", String::as_str);
        let mut out: Vec<String> = self
            .labels
            .iter()
            .map(|&label| match label {
                Label::Name(l) => name(l).to_string(),
                Label::Rest(l) => name(l).split_once(" / ").map_or(name(l), |(_, rest)| rest.trim()).to_string(),
                Label::Group(g) => match self.group_names.get(g as usize) {
                    Some((name, count)) => format!("{name} ({count})"),
                    None => String::new(),
                },
                Label::Band(g) => self.bands.get(g as usize).map(|b| b.0.clone()).unwrap_or_default(),
            })
            .collect();
        self.threads_by_their_names(t, &mut out);
        out
    }

    /// In an open group, a thread named `thread TID (NAME)` is labelled with its NAME where no
    /// other row of the group has it (Kineto names a process's threads so: `python3`,
    /// `pt_gloo_runloop`); the thread named after its process's program (`python3` in `rank 0
    /// python3`) is its `main` thread, as Linux names a process's first thread.
    fn threads_by_their_names(&self, t: &Trace, out: &mut [String]) {
        let own = |s: &str| -> Option<(String, String)> {
            let rest = s.strip_prefix("thread ")?;
            let (tid, name) = rest.split_once(" (")?;
            (tid.chars().all(|c| c.is_ascii_digit()) && name.ends_with(')'))
                .then(|| (tid.to_string(), name.trim_end_matches(')').to_string()))
        };
        let mut by_group: std::collections::HashMap<u32, Vec<usize>> = std::collections::HashMap::new();
        for k in 0..out.len() {
            if let (Label::Rest(_), Some(&(g, false))) = (self.labels[k], self.groups.get(k)) {
                by_group.entry(g).or_default().push(k);
            }
        }
        for ks in by_group.values() {
            let named: Vec<Option<(String, String)>> = ks.iter().map(|&k| own(&out[k])).collect();
            let program = match self.labels[ks[0]] {
                Label::Rest(l) => t.locations.name.get(l as usize).and_then(|n| n.split_once(" / ")).map(|(h, _)| h),
                _ => None,
            }
            .and_then(|h| h.rsplit(' ').next());
            for (i, &k) in ks.iter().enumerate() {
                // The thread named as its process is (Perfetto names a process's main thread,
                // whose id is the process's, by the process) is its main thread.
                let head = match self.labels[k] {
                    Label::Rest(l) => t.locations.name.get(l as usize).and_then(|n| n.split_once(" / ")),
                    _ => None,
                };
                if head.is_some_and(|(h, rest)| h.trim() == rest.trim()) {
                    out[k] = "main".to_string();
                    continue;
                }
                let Some((tid, n)) = &named[i] else { continue };
                let alike = named.iter().flatten().filter(|m| &m.1 == n).count();
                out[k] = match alike {
                    1 if program == Some(n.as_str()) => "main".to_string(),
                    1 => n.clone(),
                    // Threads of one name (Linux's threads take their program's): their ids
                    // tell them apart, the name they share does not.
                    _ => format!("thread {tid}"),
                };
            }
        }
    }

    /// Every one of `n` locations on its own track, labelled with its name.
    pub fn every(n: usize) -> Self {
        let track = (0..n as u32).collect();
        let groups = vec![(u32::MAX, false); n];
        let labels = (0..n as u32).map(Label::Name).collect();
        Self {
            track,
            labels,
            groups,
            group_names: Vec::new(),
            hidden: 0,
            bands: Vec::new(),
            apart: vec![false; n],
            labelled: Labelled::default(),
            spans: Vec::new(),
        }
    }

    /// Lays the tracks out on a plot `h` pixels high: the counter tracks of `slots` (each
    /// [`SLOT_GAP_PX`] under its track, in order) take their heights, and the tracks share the
    /// rest by `weights` (per track; empty: all alike), each at least a pixel, several on one
    /// pixel row where there are more tracks than rows. A track at least 4 pixels high keeps a
    /// pixel's gap below it. Returns the counter tracks' pixel rows.
    pub fn place(&mut self, h: u32, weights: &[u32], slots: &[Slot]) -> Vec<std::ops::Range<u32>> {
        self.place_below(0, h, weights, slots)
    }

    /// [`Self::place`], the tracks and slots below the plot's first `top` pixel rows (kept for
    /// the summary track).
    pub fn place_below(&mut self, top: u32, h: u32, weights: &[u32], slots: &[Slot]) -> Vec<std::ops::Range<u32>> {
        let n = self.count();
        let weight = |k: usize| u64::from(weights.get(k).copied().unwrap_or(1).max(1));
        let total: u64 = (0..n).map(weight).sum::<u64>().max(1);
        let fixed: u32 = slots.iter().map(|s| s.height + SLOT_GAP_PX).sum::<u32>() + top;
        let room = u64::from(h.saturating_sub(fixed));
        let (mut spans, mut placed) = (Vec::with_capacity(n), Vec::with_capacity(slots.len()));
        let (mut before, mut shift) = (0u64, top.min(h));
        let mut pending = slots.iter().enumerate().collect::<Vec<_>>();
        pending.sort_by_key(|(i, s)| (s.after, *i));
        let mut next = pending.into_iter().peekable();
        for k in 0..n {
            let a = (before * room / total) as u32;
            before += weight(k);
            let b = (before * room / total) as u32;
            spans.push((a + shift, b.max(a + 1) + shift));
            while let Some((i, slot)) = next.next_if(|(_, s)| s.after <= k) {
                let y0 = b.max(a + 1) + shift + SLOT_GAP_PX;
                placed.push((i, y0..(y0 + slot.height).min(h.max(y0))));
                shift += slot.height + SLOT_GAP_PX;
            }
        }
        for (i, slot) in next {
            let y0 = (room as u32 + shift + SLOT_GAP_PX).min(h);
            placed.push((i, y0..(y0 + slot.height).min(h)));
            shift += slot.height + SLOT_GAP_PX;
        }
        placed.sort_by_key(|(i, _)| *i);
        self.spans = spans;
        placed.into_iter().map(|(_, r)| r).collect()
    }

    /// Track `k`'s pixel rows, as placed.
    pub fn track_pixels(&self, k: usize) -> std::ops::Range<u32> {
        match self.spans.get(k) {
            // Tracks at least 4 pixels high keep a one-pixel gap below them.
            Some(&(a, b)) if b - a >= 4 => a..b - 1,
            Some(&(a, b)) => a..b,
            None => 0..0,
        }
    }

    /// The one location on track `k` (`None`: a collapsed group or a band, or no track).
    pub fn single(&self, k: usize) -> Option<usize> {
        match (self.groups.get(k), self.labels.get(k)) {
            (Some(&(_, true)) | None, _) | (_, Some(Label::Band(_))) => None,
            _ => self.locations(k).next(),
        }
    }

    /// The track location `l` is drawn on (`None` where it is hidden).
    pub fn track_of(&self, l: usize) -> Option<usize> {
        self.track.get(l).filter(|&&k| k != HIDDEN).map(|&k| k as usize)
    }

    /// How many tracks are drawn.
    pub fn count(&self) -> usize {
        self.labels.len()
    }

    /// The pixel rows of location `l` as placed (none where it is hidden).
    pub fn pixels(&self, l: usize) -> std::ops::Range<u32> {
        match self.track.get(l) {
            Some(&k) if k != HIDDEN => self.track_pixels(k as usize),
            _ => 0..0,
        }
    }

    /// The track drawn on pixel row `row` (the first of those sharing it; `None` on a counter
    /// track or below the last track).
    pub fn at_row(&self, row: u32) -> Option<usize> {
        let k = self.spans.partition_point(|&(_, end)| end <= row);
        self.spans.get(k).filter(|&&(start, _)| start <= row).map(|_| k)
    }

    /// The track on pixel row `row`, or the nearest above it (on a counter track, its own).
    pub fn at_or_above(&self, row: u32) -> Option<usize> {
        let k = self.spans.partition_point(|&(start, _)| start <= row);
        k.checked_sub(1)
    }

    /// The track a counter recorded on location `l` goes under: `l`'s own, or, where `l` is
    /// hidden (a metric location without events, as Score-P writes them), the shown track whose
    /// location's name shares the most leading ` / ` parts with `l`'s (the nearest before it on
    /// a tie); the last track where none shares a part.
    pub fn anchor(&self, t: &Trace, l: usize) -> Option<usize> {
        if let Some(&k) = self.track.get(l).filter(|&&k| k != HIDDEN) {
            return Some(k as usize);
        }
        let names = &t.locations.name;
        let parts = |i: usize| names.get(i).map_or(Vec::new(), |n| n.split(" / ").collect::<Vec<_>>());
        let own = parts(l);
        let shared = |i: usize| parts(i).iter().zip(&own).take_while(|(a, b)| a == b).count();
        let near = |i: usize| if i <= l { (0, l - i) } else { (1, i - l) };
        let best = (0..self.track.len())
            .filter(|&i| self.track[i] != HIDDEN)
            .map(|i| (std::cmp::Reverse(shared(i)), near(i), i))
            .min()
            .filter(|(s, _, _)| s.0 > 0);
        match best {
            Some((_, _, i)) => Some(self.track[i] as usize),
            None => self.count().checked_sub(1),
        }
    }

    /// The locations on track `k`, in order.
    pub fn locations(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.track.iter().enumerate().filter(move |&(_, &t)| t as usize == k).map(|(l, _)| l)
    }

    /// Track `k`'s group and whether it is collapsed there.
    pub fn group(&self, k: usize) -> Option<(u32, bool)> {
        self.groups.get(k).copied().filter(|g| g.0 != u32::MAX)
    }
}

/// Per location, whether it has any event: an interval, a message sent or received, a
/// collective.
pub fn busy(t: &Trace) -> Vec<bool> {
    let n = t.locations.name.len();
    let mut busy = vec![false; n];
    let m = &t.messages;
    let all = t.intervals.location.iter().chain(&m.source).chain(&m.destination).chain(&t.collectives.location);
    for &l in all {
        if let Some(b) = busy.get_mut(l as usize) {
            *b = true;
        }
    }
    busy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(names: &[&str]) -> Trace {
        let mut t = Trace::default();
        t.locations.name = names.iter().map(|s| s.to_string()).collect();
        t
    }

    #[test]
    fn empty_locations_hide_and_groups_collapse_to_one_track() {
        let t = trace(&["p0 / thread 1", "p0 / thread 2", "p0 / stream 7", "p1 / thread 1", "lonely", "p2 / t"]);
        let busy = [true, true, true, false, true, true];
        let open = Tracks::new(&t, &busy, false, None);
        assert_eq!(open.count(), 5);
        assert_eq!(open.hidden, 1);
        let mut open = open;
        open.place(100, &[], &[]);
        assert_eq!(open.pixels(3), 0..0, "the empty location is hidden");
        assert_eq!(open.group_names, vec![("p0".to_string(), 3)]);
        assert_eq!(open.group(0), Some((0, false)));
        assert_eq!(open.group(3), None, "a group of one is no group");
        assert_eq!(open.names(&t), vec!["thread 1", "thread 2", "stream 7", "lonely", "p2 / t"]);
        let mut folded = Tracks::new(&t, &busy, false, Some(Folded::default().toggled(0)));
        folded.place(90, &[], &[]);
        assert_eq!(folded.names(&t), vec!["p0 (3)", "lonely", "p2 / t"]);
        assert_eq!(folded.locations(0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(folded.pixels(1), folded.pixels(2));
        assert_eq!(folded.at_row(89), Some(2));
        assert_eq!((folded.single(0), folded.single(1)), (None, Some(4)));
        let all = Tracks::new(&t, &busy, true, None);
        assert_eq!((all.count(), all.hidden), (6, 0));
    }

    /// Alike weights and no counters place the tracks as equal rows always did, and every pixel
    /// row is picked as the first track drawn on it (or the track whose gap it is).
    #[test]
    fn alike_tracks_are_equal_rows() {
        for (n, h) in [(3usize, 30u32), (7, 100), (1000, 100), (1024, 333), (5, 5)] {
            let mut tracks = Tracks::every(n);
            tracks.place(h, &[], &[]);
            for k in 0..n {
                assert_eq!(tracks.track_pixels(k), crate::timeline::scene::rows_of(k, n, h), "{n} in {h}");
            }
            for row in 0..h {
                let k = tracks.at_row(row).unwrap_or_else(|| panic!("row {row} of {n} in {h}"));
                let px = tracks.track_pixels(k);
                assert!(px.contains(&row) || px.end == row, "row {row} of {n} in {h}: track {k} at {px:?}");
                assert!(k == 0 || !tracks.track_pixels(k - 1).contains(&row), "row {row}: an earlier track");
            }
        }
    }

    /// Heights follow weights; counter tracks sit under their track, the tracks below moved down,
    /// and their rows belong to no track.
    #[test]
    fn weighted_tracks_and_counter_slots() {
        let mut tracks = Tracks::every(3);
        let slots = tracks.place(200, &[3, 1, 1], &[Slot { after: 0, height: 30 }, Slot { after: 2, height: 16 }]);
        // 200 - 34 - 20 = 146 rows shared 3:1:1.
        assert_eq!(
            (tracks.track_pixels(0), tracks.track_pixels(1), tracks.track_pixels(2)),
            (0..86, 121..149, 150..179)
        );
        assert_eq!(slots, vec![91..121, 184..200]);
        assert_eq!(
            (tracks.at_row(0), tracks.at_row(86), tracks.at_row(87), tracks.at_row(100)),
            (Some(0), Some(0), None, None)
        );
        assert_eq!((tracks.at_row(121), tracks.at_row(149), tracks.at_row(190)), (Some(1), Some(1), None));
        assert_eq!((tracks.at_or_above(100), tracks.at_or_above(190)), (Some(0), Some(2)));
    }

    /// A counter on a hidden metric location goes under the shown location sharing most of its
    /// name; one sharing nothing goes under the last track.
    #[test]
    fn counters_anchor_to_the_nearest_named_track() {
        let t = trace(&["n / Process / Master thread", "n / Process / metrics", "n / HIP / stream 1", "other"]);
        let tracks = Tracks::new(&t, &[true, false, true, false], false, None);
        assert_eq!(tracks.anchor(&t, 1), Some(0));
        assert_eq!(tracks.anchor(&t, 2), Some(1));
        assert_eq!(tracks.anchor(&t, 3), Some(1));
    }
}
