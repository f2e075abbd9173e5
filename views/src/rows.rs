//! Rows grouped by behaviour, deviants kept: where a trace's locations outnumber a picture's
//! pixel rows, each pixel row would average many locations and draw one that differs at a
//! fraction of its strength. Instead the locations are grouped by what they do in the window
//! (each location's time per colour slot in a few dozen time bins, the compute stage
//! `exaviz_compute::location_features`), each group drawn as one band, and a location far from
//! its group (beyond a robust threshold: the group's median distance and a few median absolute
//! deviations) gets a row of its own, so that it is seen at every zoom.
//!
//! Groups are found as a few representatives chosen by farthest-point sampling over a sample
//! of the locations (the first the sample's medoid); every location is assigned to its nearest
//! representative on the backend, where the features are.

use exaviz_compute::Backend;
use exaviz_compute::location_features::groups::{self, Assigned};
use exaviz_compute::location_features::{self, FeatureInput, Features};
use exaviz_model::Trace;

/// Nanoseconds this process has spent grouping rows ([`grouping_time`]).
static GROUPING_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Time this process has spent grouping rows by behaviour so far (each window's features, the
/// representatives and every location's distance to them): what grouping costs a gesture, as
/// `exaviz bench-interact` reports it.
pub fn grouping_time() -> std::time::Duration {
    std::time::Duration::from_nanos(GROUPING_NS.load(std::sync::atomic::Ordering::Relaxed))
}

/// Runs `f`, a window's grouping, counted in [`grouping_time`].
pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let out = f();
    GROUPING_NS.fetch_add(start.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    out
}

/// Time bins of a window's features.
pub const BINS: u32 = 32;
/// Most representatives, hence groups.
const MOST_GROUPS: usize = 8;
/// Locations sampled to choose the representatives.
const SAMPLE: usize = 256;
/// A location stands out of its group beyond its median distance and 5 robust standard
/// deviations (1.4826 x MAD each: `exaviz_compute::location_features::mirror::stands_out`) ...
/// ... and beyond this share of the representative's own time (noise among like locations
/// stays in its group).
const FLOOR: f64 = 0.15;

/// Whether locations that differ from the others keep rows of their own where many share a
/// picture's rows (`--rows` of the Marey graph and the matrix).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Grouping {
    /// Those that differ from the others in the window (far beyond the others' spread) keep
    /// rows of their own, labelled with their names.
    #[default]
    Behaviour,
    /// Rows in the trace's order, each standing for all it gathers.
    Index,
}

/// How a window's locations share rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Behaviour {
    /// The groups: their locations, in order.
    pub groups: Vec<Vec<u32>>,
    /// The locations that stand out of their group, each to have a row of its own, most
    /// deviant first.
    pub deviants: Vec<u32>,
    /// The members of a group opened into its locations (a click on its band), in order: each
    /// has a row of its own in its place.
    pub opened: Vec<u32>,
}

impl Behaviour {
    /// Opens the group holding location `l` into its locations where it has at most `most`
    /// (each then a row of its own).
    pub fn open(&mut self, l: u32, most: usize) {
        if let Some(g) = self.groups.iter().position(|m| m.len() <= most && m.binary_search(&l).is_ok()) {
            self.opened = self.groups.remove(g);
        }
    }
}

/// Each interval's colour slot, `slot_of[kind]` (`u32::MAX`: none).
fn slots_of(t: &Trace, slot_of: &[usize]) -> Vec<u32> {
    t.intervals.kind.iter().map(|&k| slot_of.get(k as usize).map_or(u32::MAX, |&s| s as u32)).collect()
}

fn input_of<'a>(t: &'a Trace, slot: &'a [u32], slots: u32, window: (u64, u64)) -> FeatureInput<'a> {
    let i = &t.intervals;
    FeatureInput {
        location: &i.location,
        start: &i.start,
        end: &i.end,
        slot,
        locations: t.locations.name.len() as u32,
        window,
        bins: BINS,
        slots,
    }
}

/// The features of `shown` locations (all of the trace's, for their ids) over `window`, each
/// interval in the colour slot `slot_of[kind]` of `slots`.
pub fn features(
    t: &Trace,
    slot_of: &[usize],
    slots: u32,
    window: (u64, u64),
    backend: &Backend,
) -> Result<Features, exaviz_compute::StageError> {
    let slot = slots_of(t, slot_of);
    location_features::run(&mut *backend.runner(), &input_of(t, &slot, slots, window))
}

/// A trace's locations' features over a window, summed from its intervals where they are
/// needed: a sampled location's on the host, every location's distance and group on the GPU
/// device ([`location_features::assign`]: the window's spans go up, the groups come back).
pub struct RowSource<'a> {
    t: &'a Trace,
    slot: Vec<u32>,
    slots: u32,
    window: (u64, u64),
    spans: Vec<[u32; 4]>,
    by: location_features::ByLocation,
    /// What keeps the trace's intervals on the device (they are then not sent), and each
    /// region's colour slot.
    kept: Option<(&'a exaviz_compute::Owner, Vec<u32>)>,
}

impl RowSource<'_> {
    fn input(&self) -> FeatureInput<'_> {
        input_of(self.t, &self.slot, self.slots, self.window)
    }
}

impl FeatureSource for RowSource<'_> {
    fn of(&self, l: usize) -> std::borrow::Cow<'_, [u32]> {
        let mut row = vec![0u32; (BINS * self.slots) as usize];
        self.by.sum(&self.spans, l, (BINS, self.slots), &mut row);
        std::borrow::Cow::Owned(row)
    }

    fn nearest(&self, reps: &[u32], backend: &Backend) -> Result<Vec<(u32, u32)>, exaviz_compute::StageError> {
        let f = location_features::run(&mut *backend.runner(), &self.input())?;
        location_features::nearest(&mut *backend.runner(), &f, reps)
    }

    fn assign(
        &self,
        reps: &[u32],
        least: &[u32],
        shown: &[u32],
        backend: &Backend,
    ) -> Result<Assigned, exaviz_compute::StageError> {
        let groups = (least, hidden_from(shown, self.t.locations.name.len()));
        let (input, runner) = (self.input(), &mut *backend.runner());
        if let Some((owner, slot_of_kind)) = &self.kept {
            let i = &self.t.intervals;
            let iv = location_features::KeptIntervals {
                location: &i.location,
                start: &i.start,
                end: &i.end,
                kind: &i.kind,
                owner,
            };
            if let Some(a) = location_features::assign_kept(runner, (&iv, slot_of_kind), &input, reps, groups)? {
                return Ok(in_shown_order(a, shown));
            }
        }
        let a = location_features::assign(runner, &input, &self.spans, reps, groups)?;
        Ok(in_shown_order(a, shown))
    }
}

/// What the locations of `t` are grouped from over `window` (as [`features`] sums them): their
/// features in plain memory on the CPU, a [`RowSource`] on a GPU, its intervals kept on the
/// device under `owner` where given.
pub fn source<'a>(
    t: &'a Trace,
    slot_of: &[usize],
    slots: u32,
    window: (u64, u64),
    (backend, owner): (&Backend, Option<&'a exaviz_compute::Owner>),
) -> Result<Box<dyn FeatureSource + 'a>, exaviz_compute::StageError> {
    if !backend.is_gpu() {
        return Ok(Box::new(features(t, slot_of, slots, window, backend)?));
    }
    let slot = slots_of(t, slot_of);
    let spans = location_features::spans(&input_of(t, &slot, slots, window));
    let by = location_features::ByLocation::new(t.locations.name.len() as u32, &spans);
    let kept = owner.map(|o| (o, slot_of.iter().map(|&s| s as u32).collect()));
    Ok(Box::new(RowSource { t, slot, slots, window, spans, by, kept }))
}

fn distance(a: &[u32], b: &[u32]) -> u64 {
    a.iter().zip(b).map(|(&x, &y)| u64::from(x.abs_diff(y))).sum()
}

fn norm(a: &[u32]) -> u64 {
    a.iter().map(|&x| u64::from(x)).sum()
}

/// What rows are grouped from: each location's features, read on the host for a sample, and
/// every location's nearest representative, found where the features are.
pub trait FeatureSource {
    /// Location `l`'s features.
    fn of(&self, l: usize) -> std::borrow::Cow<'_, [u32]>;
    /// Per location, its nearest of `reps` (whole feature vectors in order) and the L1 distance
    /// to it, on `backend`.
    fn nearest(&self, reps: &[u32], backend: &Backend) -> Result<Vec<(u32, u32)>, exaviz_compute::StageError>;
    /// The `shown` locations' groups (in `shown`'s order) and each group's statistics, for the
    /// representatives `reps` and the groups' floors `least`: from [`FeatureSource::nearest`]
    /// on the host unless the source does it where its features are.
    fn assign(
        &self,
        reps: &[u32],
        least: &[u32],
        shown: &[u32],
        backend: &Backend,
    ) -> Result<Assigned, exaviz_compute::StageError> {
        Ok(assign_shown(&self.nearest(reps, backend)?, least, shown))
    }
}

/// `shown` where it leaves some of `n` locations out (a mask of them is sent); `None` where it
/// lists every location in order.
pub fn hidden_from(shown: &[u32], n: usize) -> Option<&[u32]> {
    let every = shown.len() == n && shown.iter().enumerate().all(|(i, &l)| i as u32 == l);
    (!every).then_some(shown)
}

/// `a`, whose groups are by location, with the groups of the `shown` locations in their order.
pub fn in_shown_order(mut a: Assigned, shown: &[u32]) -> Assigned {
    a.group_of = shown.iter().map(|&l| a.group_of.get(l as usize).copied().unwrap_or(u8::MAX)).collect();
    a
}

/// The `shown` locations' groups and statistics from every location's `nearest` (see
/// [`FeatureSource::assign`]).
pub fn assign_shown(nearest: &[(u32, u32)], least: &[u32], shown: &[u32]) -> Assigned {
    let of_shown: Vec<(u32, u32)> =
        shown.iter().map(|&l| nearest.get(l as usize).copied().unwrap_or((u32::MAX, 0))).collect();
    let mut a = groups::assign_host(&of_shown, least);
    for c in &mut a.candidates {
        c.0 = shown[c.0 as usize];
    }
    a
}

impl FeatureSource for Features {
    fn of(&self, l: usize) -> std::borrow::Cow<'_, [u32]> {
        std::borrow::Cow::Borrowed(Features::of(self, l))
    }

    fn nearest(&self, reps: &[u32], backend: &Backend) -> Result<Vec<(u32, u32)>, exaviz_compute::StageError> {
        location_features::nearest(&mut *backend.runner(), self, reps)
    }
}

/// The lower median of `v` (sorted in place); 0 for none.
pub(crate) fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// The groups of the `shown` locations by their features, at most `most_deviants` of them
/// standing out (the most deviant first).
pub fn group<F: FeatureSource + ?Sized>(
    f: &F,
    shown: &[u32],
    most_deviants: usize,
    backend: &Backend,
) -> Result<Behaviour, exaviz_compute::StageError> {
    if shown.is_empty() {
        return Ok(Behaviour::default());
    }
    // Representatives: the medoid of an even sample, then the sampled location farthest from
    // every representative while it is far beyond the sample's spread.
    // A sample drawn at random (seeded, so a window groups the same way every time): an even
    // stride would see only every k-th location, and miss a behaviour of every other one.
    let mut rng = exaviz_model::rng::SplitMix64(shown.len() as u64);
    let sample: Vec<std::borrow::Cow<'_, [u32]>> = if shown.len() <= SAMPLE {
        shown.iter().map(|&l| f.of(l as usize)).collect()
    } else {
        (0..SAMPLE).map(|_| f.of(shown[rng.below(shown.len() as u32) as usize] as usize)).collect()
    };
    let sums: Vec<u64> = {
        use rayon::prelude::*;
        sample.par_iter().map(|a| sample.iter().map(|b| distance(a, b)).sum()).collect()
    };
    let first = (0..sample.len()).min_by_key(|&k| (sums[k], k)).unwrap_or(0);
    let mut reps: Vec<&[u32]> = vec![&sample[first]];
    let mut near: Vec<u64> = sample.iter().map(|s| distance(s, &sample[first])).collect();
    let spread = median(&mut near.clone());
    let floor = (FLOOR * norm(&sample[first]) as f64) as u64;
    while reps.len() < MOST_GROUPS {
        let Some((far, &d)) = near.iter().enumerate().max_by_key(|&(k, &d)| (d, std::cmp::Reverse(k))) else { break };
        if d <= (4 * spread).max(floor) {
            break;
        }
        reps.push(&sample[far]);
        for (k, s) in sample.iter().enumerate() {
            near[k] = near[k].min(distance(s, &sample[far]));
        }
    }
    let flat: Vec<u32> = reps.concat();
    // A location stands out of its group beyond the group's median distance and 5 robust
    // standard deviations (`groups::stands_out`, in integers) and beyond FLOOR of the
    // representative's own time: at least the floor's whole part plus one.
    let least: Vec<u32> =
        reps.iter().map(|r| ((FLOOR * norm(r) as f64).floor() as u64 + 1).min(u64::from(u32::MAX)) as u32).collect();
    let a = f.assign(&flat, &least, shown, backend)?;
    let mut groups: Vec<Vec<u32>> = vec![Vec::new(); reps.len()];
    for (&l, &g) in shown.iter().zip(&a.group_of) {
        if let Some(members) = groups.get_mut(g as usize) {
            members.push(l);
        }
    }
    // Per group, who stands out: by robust statistics of the members' distances.
    let mut out: Vec<(f64, u32)> = Vec::new();
    for &(l, x) in &a.candidates {
        let Some(g) = shown.binary_search(&l).ok().or_else(|| shown.iter().position(|&s| s == l)) else { continue };
        let Some(s) = a.stats.get(a.group_of[g] as usize) else { continue };
        out.push(((f64::from(x) - f64::from(s.median)) / (1.4826 * f64::from(s.mad)).max(1.0), l));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    out.truncate(most_deviants);
    let mut deviants: Vec<u32> = out.into_iter().map(|(_, l)| l).collect();
    let standing: std::collections::HashSet<u32> = deviants.iter().copied().collect();
    for g in &mut groups {
        g.retain(|l| !standing.contains(l));
    }
    groups.retain(|g| !g.is_empty());
    groups.sort_by_key(|g| g[0]);
    deviants.shrink_to_fit();
    Ok(Behaviour { groups, deviants, opened: Vec::new() })
}

/// A group's name: what its locations are and their numbers as ranges where their names end in
/// numbers of one word ("ranks 0-10006, 10008-16383 (16,383)"; at most 16 ranges, then "…"),
/// else their indices as locations ("locations 0-99 (100)"); [`crate::labels::band`] fits it
/// to a margin.
pub fn group_label(names: &[String], members: &[u32]) -> String {
    crate::labels::band_name(names, members)
}

pub use crate::labels::thousands;

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::Intervals;

    /// 2,000 locations computing then waiting alike, one computing three times as long in a
    /// state of its own: one group, one deviant.
    fn trace(deviant: u32) -> Trace {
        let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
        t.region_names = vec!["compute".into(), "wait".into(), "slow".into()];
        t.locations.name = (0..2000).map(|r| format!("rank {r}")).collect();
        let mut i = Intervals::default();
        for it in 0..10u64 {
            for r in 0..2000u32 {
                let start = it * 1000;
                let c = 200 + u64::from((r * 7 + it as u32 * 13) % 50);
                let (kind, c) = if r == deviant { (2, 3 * c) } else { (0, c) };
                for (k, a, b) in [(kind, start, start + c), (1, start + c, start + 1000)] {
                    i.location.push(r);
                    i.start.push(a);
                    i.end.push(b);
                    i.kind.push(k);
                    i.depth.push(0);
                }
            }
        }
        t.intervals = i;
        t
    }

    #[test]
    fn the_one_location_that_differs_stands_out_of_one_group() {
        let t = trace(1234);
        let f = features(&t, &[0, 1, 2], 3, (0, 10_000), &Backend::Cpu).unwrap();
        let shown: Vec<u32> = (0..2000).collect();
        let b = group(&f, &shown, 8, &Backend::Cpu).unwrap();
        assert_eq!(b.deviants, [1234]);
        assert_eq!(b.groups.len(), 1);
        assert_eq!(b.groups[0].len(), 1999);
        assert_eq!(group_label(&t.locations.name, &b.groups[0]), "ranks 0-1233, 1235-1999 (1,999)");
        // Alike locations alone make one group and no deviant.
        let t = trace(u32::MAX);
        let f = features(&t, &[0, 1, 2], 3, (0, 10_000), &Backend::Cpu).unwrap();
        let b = group(&f, &shown, 8, &Backend::Cpu).unwrap();
        assert!(b.deviants.is_empty(), "{:?}", b.deviants);
        assert_eq!(b.groups.len(), 1);
    }

    /// Two halves doing different things make two groups.
    #[test]
    fn two_behaviours_make_two_groups() {
        let mut t = trace(u32::MAX);
        let i = &mut t.intervals;
        for k in 0..i.start.len() {
            if i.location[k] % 2 == 1 {
                i.kind[k] = 1 - i.kind[k].min(1);
            }
        }
        let f = features(&t, &[0, 1, 2], 3, (0, 10_000), &Backend::Cpu).unwrap();
        let shown: Vec<u32> = (0..2000).collect();
        let b = group(&f, &shown, 8, &Backend::Cpu).unwrap();
        assert_eq!(b.groups.len(), 2, "{:?}", b.groups.iter().map(Vec::len).collect::<Vec<_>>());
        assert!(b.deviants.is_empty());
        assert_eq!(
            group_label(&t.locations.name, &b.groups[1]),
            "ranks 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, … (1,000)"
        );
    }

    #[test]
    fn labels_count_and_range_what_the_trace_names() {
        let names: Vec<String> = ["thread 1", "thread 2", "thread 3", "gpu"].map(String::from).to_vec();
        assert_eq!(group_label(&names, &[0, 1, 2]), "threads 1-3 (3)");
        assert_eq!(group_label(&names, &[0, 3]), "locations 0, 3 (2)");
        assert_eq!(thousands(16383), "16,383");
        assert_eq!(thousands(999), "999");
    }
}
