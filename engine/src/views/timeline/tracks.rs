//! The timeline's tracks: which locations are drawn on which row, as Perfetto's process and
//! thread tracks and Vampir's process groups. Locations without any event (no interval, message
//! or collective) are hidden unless asked for; consecutive locations whose names share their
//! first part (`node quartz1 / ...`, `pyper:trainer:0:0 / thread 4037`, the source's process) form
//! a group, and a collapsed group is drawn as one track showing what its locations do (the
//! dominant state of all of them, their messages ending on it).

use crate::model::Trace;
use crate::selection::Folded;

use super::scene::rows_of;

/// A location's track where it is hidden.
const HIDDEN: u32 = u32::MAX;

/// Locations on tracks.
#[derive(Clone, Debug)]
pub struct Tracks {
    /// Per location: its track, or [`HIDDEN`].
    track: Vec<u32>,
    /// Per track: its label.
    pub names: Vec<String>,
    /// Per track: its group (`u32::MAX`: none) and whether the group is collapsed on it.
    groups: Vec<(u32, bool)>,
    /// Per group: its name and how many locations it holds.
    pub group_names: Vec<(String, usize)>,
    /// Locations hidden for having no events.
    pub hidden: usize,
}

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
        let (mut labels, mut groups) = (Vec::new(), Vec::new());
        for &l in &shown {
            let g = group_of[l];
            let collapsed = g != u32::MAX && folded.is_some_and(|f| f.holds(g));
            if collapsed && groups.last() == Some(&(g, true)) {
                track[l] = labels.len() as u32 - 1;
                continue;
            }
            track[l] = labels.len() as u32;
            labels.push(match (collapsed, names[l].split_once(" / ")) {
                (true, _) => {
                    let (name, count) = &group_names[g as usize];
                    format!("{name} ({count})")
                }
                // In an open group, the part after the group's name (its tooltip names the group).
                (false, Some((_, rest))) if g != u32::MAX => rest.trim().to_string(),
                _ => names[l].clone(),
            });
            groups.push((g, collapsed));
        }
        Self { track, names: labels, groups, group_names, hidden: names.len() - shown.len() }
    }

    /// Every location on its own track.
    pub fn every(n: usize, names: &[String]) -> Self {
        let track = (0..n as u32).collect();
        Self { track, names: names.to_vec(), groups: vec![(u32::MAX, false); n], group_names: Vec::new(), hidden: 0 }
    }

    /// How many tracks are drawn.
    pub fn count(&self) -> usize {
        self.names.len()
    }

    /// The pixel rows of location `l` in a plot `h` pixels high (none where it is hidden).
    pub fn pixels(&self, l: usize, h: u32) -> std::ops::Range<u32> {
        match self.track.get(l) {
            Some(&k) if k != HIDDEN => rows_of(k as usize, self.count(), h),
            _ => 0..0,
        }
    }

    /// The track drawn on pixel row `row` of a plot `h` pixels high.
    pub fn at_row(&self, row: u32, h: u32) -> Option<usize> {
        let n = self.count();
        (n > 0).then(|| ((u64::from(row) * n as u64 / u64::from(h.max(1))) as usize).min(n - 1))
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
        assert_eq!(open.pixels(3, 100), 0..0, "the empty location is hidden");
        assert_eq!(open.group_names, vec![("p0".to_string(), 3)]);
        assert_eq!(open.group(0), Some((0, false)));
        assert_eq!(open.group(3), None, "a group of one is no group");
        assert_eq!(open.names, vec!["thread 1", "thread 2", "stream 7", "lonely", "p2 / t"]);
        let folded = Tracks::new(&t, &busy, false, Some(Folded::default().toggled(0)));
        assert_eq!(folded.names, vec!["p0 (3)", "lonely", "p2 / t"]);
        assert_eq!(folded.locations(0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(folded.pixels(1, 90), folded.pixels(2, 90));
        assert_eq!(folded.at_row(89, 90), Some(2));
        let all = Tracks::new(&t, &busy, true, None);
        assert_eq!((all.count(), all.hidden), (6, 0));
    }
}
