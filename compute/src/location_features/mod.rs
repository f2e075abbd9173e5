//! Per-location features of a time window, and each location's distance to a few
//! representatives: what rows grouped by behaviour are found from (`exaviz_views::rows`). A
//! location's features are the time each of its colour slots covers in each of the window's
//! `bins` time bins (every nesting level counted); two locations that do the same things at the
//! same times have near features, and one that differs is far from every representative.
//!
//! Shader: `location_features.wgsl` beside this file; CPU mirror: [`mirror`]. Times are handed
//! to the kernels as `u32` quanta from the window's start ([`spans`]), `BIN_QUANTA` to a bin,
//! so every sum is exact in 32 bits and both backends give the same counts.

pub mod mirror;

use rayon::prelude::*;

use super::{Kernel, Recording, Runner, StageError, check_binding, chunks};

/// Quanta in one time bin.
pub const BIN_QUANTA: u32 = 1 << 14;

/// The intervals of a trace to sum, each with its colour slot.
#[derive(Clone, Copy, Debug)]
pub struct FeatureInput<'a> {
    pub location: &'a [u32],
    pub start: &'a [u64],
    pub end: &'a [u64],
    /// Each interval's colour slot (`< slots`; others are left out).
    pub slot: &'a [u32],
    pub locations: u32,
    /// Ticks `[t0, t1)`.
    pub window: (u64, u64),
    pub bins: u32,
    pub slots: u32,
}

/// Per location, per bin, per slot: the time covered, in quanta of [`Features::quantum`] ticks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub locations: u32,
    pub bins: u32,
    pub slots: u32,
    /// Ticks per quantum.
    pub quantum: u64,
    /// `locations x bins x slots`, row-major.
    pub values: Vec<u32>,
}

impl Features {
    /// Words per location.
    pub fn dims(&self) -> usize {
        (self.bins * self.slots) as usize
    }

    /// Location `l`'s features.
    pub fn of(&self, l: usize) -> &[u32] {
        let d = self.dims();
        &self.values[l * d..(l + 1) * d]
    }
}

/// Ticks per quantum for `bins` bins of [`BIN_QUANTA`] over `window`.
pub fn quantum(window: (u64, u64), bins: u32) -> u64 {
    let span = window.1.saturating_sub(window.0).max(1);
    span.div_ceil(u64::from(bins.max(1)) * u64::from(BIN_QUANTA)).max(1)
}

/// The intervals overlapping the window as the kernels read them: location, first quantum, end
/// quantum, slot (four words each); intervals of no listed location or slot are left out.
pub fn spans(input: &FeatureInput<'_>) -> Vec<[u32; 4]> {
    let (t0, t1) = input.window;
    let q = quantum(input.window, input.bins);
    let end = u64::from(input.bins) * u64::from(BIN_QUANTA);
    let to_q = |t: u64| ((t.clamp(t0, t1) - t0) / q).min(end) as u32;
    let n = input.location.len().min(input.start.len()).min(input.end.len()).min(input.slot.len());
    (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .filter_map(|k| {
            let (l, s) = (input.location[k], input.slot[k]);
            let (a, b) = (input.start[k].max(t0), input.end[k].min(t1));
            (l < input.locations && s < input.slots && a < b).then(|| [l, to_q(a), to_q(b), s])
        })
        .collect()
}

fn params(n: u32, input_locations: u32, bins: u32, slots: u32, reps: u32) -> Vec<u32> {
    let p = mirror::Params {
        n,
        locations: input_locations,
        bins,
        slots,
        bin_quanta: BIN_QUANTA,
        reps,
        ..Default::default()
    };
    bytemuck::cast_slice(&[p]).to_vec()
}

fn check(input: &FeatureInput<'_>, max_binding_bytes: u64) -> Result<u64, StageError> {
    if input.bins == 0 || input.slots == 0 || input.window.1 <= input.window.0 {
        return Err(StageError::Input("location features need bins, slots and a window".into()));
    }
    if u64::from(input.bins) * u64::from(BIN_QUANTA) > u64::from(u32::MAX) {
        return Err(StageError::Input(format!("{} bins of location features are too many", input.bins)));
    }
    let words = u64::from(input.locations) * u64::from(input.bins) * u64::from(input.slots);
    check_binding("location features", words * 4, max_binding_bytes)?;
    Ok(words)
}

/// Records the features of `spans` (from [`spans`]); downloads them.
pub fn record<'a>(
    input: &FeatureInput<'_>,
    spans: &'a [[u32; 4]],
    max_binding_bytes: u64,
) -> Result<Recording<'a>, StageError> {
    let mut rec = Recording::default();
    let features = record_features(&mut rec, input, spans, max_binding_bytes)?;
    rec.download(features);
    Ok(rec)
}

/// Records the features of `spans` into a buffer it returns (left where the recording runs).
fn record_features<'a>(
    rec: &mut Recording<'a>,
    input: &FeatureInput<'_>,
    spans: &'a [[u32; 4]],
    max_binding_bytes: u64,
) -> Result<crate::BufId, StageError> {
    let words = check(input, max_binding_bytes)?;
    let features = rec.alloc(words, "features.values");
    let parts: Vec<_> = chunks(spans.len(), 16, max_binding_bytes).collect();
    let most = parts.first().map_or(0, |r| r.len() as u64);
    let buf = rec.alloc(most * 4, "features.spans");
    for range in parts {
        let len = range.len() as u32;
        rec.upload(buf, bytemuck::cast_slice::<[u32; 4], u32>(&spans[range]));
        let p = params(len, input.locations, input.bins, input.slots, 0);
        rec.dispatch(Kernel::LocationFeatures, len, p, vec![(1, buf), (2, features)]);
    }
    Ok(features)
}

/// A trace's intervals kept on a GPU device under `owner` (their words uploaded once): each
/// one's location, start and end ticks and region.
#[derive(Clone, Copy)]
pub struct KeptIntervals<'a> {
    pub location: &'a [u32],
    pub start: &'a [u64],
    pub end: &'a [u64],
    pub kind: &'a [u32],
    pub owner: &'a crate::Owner,
}

/// Records the features of `input`'s window (its locations, bins and slots) from the intervals
/// kept on the device (`interval_features`: each region in slot `slot_of_kind[kind]`), into a
/// buffer it returns; `None` where a quantum is 2^32 ticks or more (a window of millions of
/// years of nanoseconds), whose quanta the kernel does not divide by.
fn record_kept<'a>(
    rec: &mut Recording<'a>,
    iv: &KeptIntervals<'a>,
    slot_of_kind: &[u32],
    input: &FeatureInput<'_>,
    max_binding_bytes: u64,
) -> Result<Option<crate::BufId>, StageError> {
    let words = check(input, max_binding_bytes)?;
    let Ok(quantum) = u32::try_from(quantum(input.window, input.bins)) else { return Ok(None) };
    let n = iv.location.len();
    if iv.start.len() != n || iv.end.len() != n || iv.kind.len() != n {
        return Err(StageError::Input("location features: interval columns differ in length".into()));
    }
    let features = rec.alloc(words, "features.values");
    let table = rec.alloc(slot_of_kind.len() as u64, "features.slot_of_kind");
    rec.upload(table, slot_of_kind.to_vec());
    let parts: Vec<_> = chunks(n, 8, max_binding_bytes).collect();
    let most = parts.first().map_or(1, |r| r.len() as u64);
    let (loc, kind) = (rec.alloc(most, "features.location"), rec.alloc(most, "features.kind"));
    let (start, end) = (rec.alloc(2 * most, "features.start"), rec.alloc(2 * most, "features.end"));
    let split = |t: u64| [t as u32, (t >> 32) as u32];
    for r in parts {
        rec.upload_kept(loc, &iv.location[r.clone()], iv.owner);
        rec.upload_kept(start, bytemuck::cast_slice(&iv.start[r.clone()]), iv.owner);
        rec.upload_kept(end, bytemuck::cast_slice(&iv.end[r.clone()]), iv.owner);
        rec.upload_kept(kind, &iv.kind[r.clone()], iv.owner);
        let p = mirror::Params {
            n: r.len() as u32,
            locations: input.locations,
            bins: input.bins,
            slots: input.slots,
            bin_quanta: BIN_QUANTA,
            t0: split(input.window.0),
            t1: split(input.window.1),
            quantum,
            kinds: slot_of_kind.len() as u32,
            ..Default::default()
        };
        let bindings = vec![(13, loc), (14, start), (15, end), (16, kind), (17, table), (2, features)];
        rec.dispatch(Kernel::IntervalFeatures, p.n, bytemuck::cast_slice(&[p]).to_vec(), bindings);
    }
    Ok(Some(features))
}

/// [`assign`] from the intervals kept on the device rather than the window's spans: a gesture
/// sends the window, the slot table and the representatives, and reads back the groups. `None`
/// where [`record_kept`] cannot (the caller sends the spans).
pub fn assign_kept(
    runner: &mut dyn Runner,
    (iv, slot_of_kind): (&KeptIntervals<'_>, &[u32]),
    input: &FeatureInput<'_>,
    reps: &[u32],
    (least, shown): (&[u32], Option<&[u32]>),
) -> Result<Option<groups::Assigned>, StageError> {
    let d = (input.bins * input.slots) as usize;
    if d == 0 || reps.is_empty() || !reps.len().is_multiple_of(d) || reps.len() / d != least.len() {
        return Err(StageError::Input("location groups need whole representatives, a floor each".into()));
    }
    let mut rec = Recording::default();
    let Some(features) = record_kept(&mut rec, iv, slot_of_kind, input, runner.max_binding_bytes())? else {
        return Ok(None);
    };
    record_groups(runner, rec, (features, input.locations, input.bins, input.slots), reps, (least, shown)).map(Some)
}

/// The distances to `reps` of the features left in `features` by `rec`, and the groups, run.
fn record_groups<'a>(
    runner: &mut dyn Runner,
    mut rec: Recording<'a>,
    (features, n, bins, slots): (crate::BufId, u32, u32, u32),
    reps: &'a [u32],
    (least, shown): (&[u32], Option<&[u32]>),
) -> Result<groups::Assigned, StageError> {
    let rb = rec.alloc(reps.len() as u64, "distances.reps");
    rec.upload(rb, reps);
    let out = rec.alloc(2 * u64::from(n), "distances.nearest");
    let p = params(n, n, bins, slots, least.len() as u32);
    rec.dispatch(Kernel::LocationDistances, n, p, vec![(5, features), (3, rb), (4, out)]);
    let g = groups::record(&mut rec, out, n, least, shown)?;
    rec.download(g.stats);
    rec.download(g.packed);
    rec.keep(g.candidates);
    let outs = runner.run_keeping(&rec)?;
    let missing = || StageError::Input("location groups missing".into());
    let (stats, packed) = (outs.downloads.first().ok_or_else(missing)?, outs.downloads.get(1).ok_or_else(missing)?);
    groups::read(n, least.len() as u32, stats, packed, outs.kept.first().ok_or_else(missing)?)
}

/// Spans (from [`spans`]) in order of their location (a counting sort): each location's row
/// of features is summed from its own, by one thread without atomics (the mirror's sums, in
/// another order).
pub struct ByLocation {
    first: Vec<u32>,
    order: Vec<u32>,
}

impl ByLocation {
    pub fn new(locations: u32, spans: &[[u32; 4]]) -> Self {
        let n = locations as usize;
        let mut first = vec![0u32; n + 1];
        for s in spans {
            if let Some(c) = first.get_mut(s[0] as usize + 1) {
                *c += 1;
            }
        }
        for l in 0..n {
            first[l + 1] += first[l];
        }
        let mut at = first.clone();
        let mut order = vec![0u32; first[n] as usize];
        for (k, s) in spans.iter().enumerate() {
            let l = s[0] as usize;
            if l < n {
                order[at[l] as usize] = k as u32;
                at[l] += 1;
            }
        }
        Self { first, order }
    }

    /// Location `l`'s features (`bins x slots` words) summed into `row` from `spans`.
    pub fn sum(&self, spans: &[[u32; 4]], l: usize, (bins, slots): (u32, u32), row: &mut [u32]) {
        let (w, end) = (BIN_QUANTA, bins * BIN_QUANTA);
        let Some(ks) = self.first.get(l..l + 2).map(|f| &self.order[f[0] as usize..f[1] as usize]) else { return };
        for &k in ks {
            let [_, a, end_q, slot] = spans[k as usize];
            let b = end_q.min(end);
            if slot >= slots || a >= b {
                continue;
            }
            for bin in a / w..=(b - 1) / w {
                let (lo, hi) = (a.max(bin * w), b.min((bin + 1) * w));
                let at = (bin * slots + slot) as usize;
                row[at] = row[at].wrapping_add(hi - lo);
            }
        }
    }
}

/// Every location's group and each group's statistics ([`groups`]) for the representatives
/// `reps` and the groups' floors `least`, from the features of `spans` (of `input`): on a GPU
/// device the features, distances and histograms stay there, and only each location's group,
/// the statistics and the locations that stand out come back (the spans go up).
pub fn assign(
    runner: &mut dyn Runner,
    input: &FeatureInput<'_>,
    spans: &[[u32; 4]],
    reps: &[u32],
    (least, shown): (&[u32], Option<&[u32]>),
) -> Result<groups::Assigned, StageError> {
    if runner.plain_memory() {
        let f = run(runner, input)?;
        let mut near = nearest(runner, &f, reps)?;
        groups::hide(&mut near, shown);
        return Ok(groups::assign_host(&near, least));
    }
    let d = (input.bins * input.slots) as usize;
    if d == 0 || reps.is_empty() || !reps.len().is_multiple_of(d) || reps.len() / d != least.len() {
        return Err(StageError::Input("location groups need whole representatives, a floor each".into()));
    }
    let mut rec = Recording::default();
    let features = record_features(&mut rec, input, spans, runner.max_binding_bytes())?;
    record_groups(runner, rec, (features, input.locations, input.bins, input.slots), reps, (least, shown))
}

/// The features of `input` on `runner`: on plain memory (the CPU's) the mirror's kernel run over
/// the spans directly, else [`run_recorded`]; the same counts either way.
pub fn run(runner: &mut dyn Runner, input: &FeatureInput<'_>) -> Result<Features, StageError> {
    if !runner.plain_memory() {
        return run_recorded(runner, input);
    }
    let words = check(input, u64::MAX)?;
    let spans = spans(input);
    let by = ByLocation::new(input.locations, &spans);
    let mut values = vec![0u32; words as usize];
    let dims = (input.bins * input.slots) as usize;
    values.par_chunks_mut(dims.max(1)).enumerate().with_min_len(64).for_each(|(l, row)| {
        by.sum(&spans, l, (input.bins, input.slots), row);
    });
    Ok(features_of(input, values))
}

/// The features of `input` by running [`record`]'s recording on `runner`.
pub fn run_recorded(runner: &mut dyn Runner, input: &FeatureInput<'_>) -> Result<Features, StageError> {
    let spans = spans(input);
    let rec = record(input, &spans, runner.max_binding_bytes())?;
    let values = runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("features missing".into()))?;
    Ok(features_of(input, values))
}

fn features_of(input: &FeatureInput<'_>, values: Vec<u32>) -> Features {
    Features {
        locations: input.locations,
        bins: input.bins,
        slots: input.slots,
        quantum: quantum(input.window, input.bins),
        values,
    }
}

/// Per location: its nearest of `reps` (each [`Features::dims`] words, in order) and the L1
/// distance to it, on `runner` (the same on both backends).
pub fn nearest(runner: &mut dyn Runner, features: &Features, reps: &[u32]) -> Result<Vec<(u32, u32)>, StageError> {
    let d = features.dims();
    if d == 0
        || reps.is_empty()
        || !reps.len().is_multiple_of(d)
        || features.values.len() != features.locations as usize * d
    {
        return Err(StageError::Input("location distances need features and whole representatives".into()));
    }
    let n = features.locations;
    if runner.plain_memory() {
        return Ok((0..n as usize)
            .into_par_iter()
            .map(|l| {
                let f = features.of(l);
                let mut best = (0u32, u32::MAX);
                for (k, rep) in reps.chunks(d).enumerate() {
                    let sum = f.iter().zip(rep).fold(0u32, |s, (&x, &y)| s.wrapping_add(x.abs_diff(y)));
                    if sum < best.1 {
                        best = (k as u32, sum);
                    }
                }
                best
            })
            .collect());
    }
    nearest_recorded(runner, features, reps)
}

/// [`nearest`] by running its recording on `runner` (the mirror on the CPU).
pub fn nearest_recorded(
    runner: &mut dyn Runner,
    features: &Features,
    reps: &[u32],
) -> Result<Vec<(u32, u32)>, StageError> {
    let d = features.dims();
    if d == 0 || reps.is_empty() || !reps.len().is_multiple_of(d) {
        return Err(StageError::Input("location distances need features and whole representatives".into()));
    }
    let (r, n) = ((reps.len() / d) as u32, features.locations);
    let max = runner.max_binding_bytes();
    check_binding("location features", features.values.len() as u64 * 4, max)?;
    let mut rec = Recording::default();
    let fin = rec.alloc(features.values.len() as u64, "distances.features");
    let rb = rec.alloc(reps.len() as u64, "distances.reps");
    let out = rec.alloc(2 * u64::from(n), "distances.nearest");
    rec.upload(fin, &features.values[..]);
    rec.upload(rb, reps);
    let p = params(n, n, features.bins, features.slots, r);
    rec.dispatch(Kernel::LocationDistances, n, p, vec![(5, fin), (3, rb), (4, out)]);
    rec.download(out);
    let words = runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("distances missing".into()))?;
    Ok(words.chunks_exact(2).map(|w| (w[0], w[1])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuRunner;

    fn input<'a>(l: &'a [u32], s: &'a [u64], e: &'a [u64], k: &'a [u32], window: (u64, u64)) -> FeatureInput<'a> {
        FeatureInput { location: l, start: s, end: e, slot: k, locations: 3, window, bins: 4, slots: 2 }
    }

    /// An interval adds its time to each bin it overlaps, clipped to the window; intervals of no
    /// listed location or slot add nothing; the plain path equals the recording's run.
    #[test]
    fn time_lands_in_the_bins_it_covers() {
        let (l, s, e, k) =
            ([0u32, 1, 1, 2, 7], [0u64, 150, 0, 0, 0], [400u64, 250, 1000, 1000, 10], [0u32, 1, 0, 5, 0]);
        let i = input(&l, &s, &e, &k, (0, 400));
        let f = run(&mut CpuRunner::default(), &i).unwrap();
        assert_eq!(f.quantum, 1);
        let q = u64::from(BIN_QUANTA);
        // 400 ticks over 4 bins of 16,384 quanta of 1 tick: bin 0 holds them all.
        assert_eq!(f.of(0), [400, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(f.of(1), [400, 100, 0, 0, 0, 0, 0, 0]);
        assert!(f.of(2).iter().all(|&v| v == 0), "slot 5 is not one of 2");
        let wide = input(&l, &s, &e, &k, (0, 4 * q * 10));
        let g = run(&mut CpuRunner::default(), &wide).unwrap();
        assert_eq!(g.quantum, 10);
        assert_eq!(g.of(1)[0], 100, "1000 ticks as 100 quanta of 10");
        assert_eq!(run_recorded(&mut CpuRunner::default(), &i).unwrap(), f);
        assert_eq!(run_recorded(&mut CpuRunner::default(), &wide).unwrap(), g);
        // An interval across bins splits at their edges.
        let (l, s, e, k) = ([0u32], [q - 5], [q + 7], [1u32]);
        let f = run(&mut CpuRunner::default(), &input(&l, &s, &e, &k, (0, 4 * q))).unwrap();
        assert_eq!((f.of(0)[1], f.of(0)[3]), (5, 7));
    }

    /// The plain path (spans sorted by location, a row per thread) gives the mirror's counts
    /// over many random intervals of many locations, unsorted, some outside the window.
    #[test]
    fn the_plain_path_equals_the_mirror_on_random_intervals() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let n = 20_000;
        let l: Vec<u32> = (0..n).map(|_| next(97) as u32).collect();
        let s: Vec<u64> = (0..n).map(|_| next(3_000_000)).collect();
        let e: Vec<u64> = s.iter().map(|&a| a + 1 + next(400_000)).collect();
        let k: Vec<u32> = (0..n).map(|_| next(6) as u32).collect();
        let i = FeatureInput {
            location: &l,
            start: &s,
            end: &e,
            slot: &k,
            locations: 90,
            window: (100_000, 2_500_000),
            bins: 32,
            slots: 5,
        };
        let plain = run(&mut CpuRunner::default(), &i).unwrap();
        assert_eq!(plain, run_recorded(&mut CpuRunner::default(), &i).unwrap());
        assert!(plain.values.iter().filter(|&&v| v > 0).count() > 5_000, "the features are filled");
    }

    #[test]
    fn each_location_finds_its_nearest_representative() {
        let f = Features { locations: 3, bins: 1, slots: 2, quantum: 1, values: vec![10, 0, 0, 10, 9, 2] };
        let reps = [10, 0, 0, 10];
        let plain = nearest(&mut CpuRunner::default(), &f, &reps).unwrap();
        assert_eq!(plain, [(0, 0), (1, 0), (0, 3)]);
        assert_eq!(nearest_recorded(&mut CpuRunner::default(), &f, &reps).unwrap(), plain);
        assert!(nearest(&mut CpuRunner::default(), &f, &[1, 2, 3]).is_err());
    }
}

// The groups' recording, beside the stage's others (a stage's folder holds its shader, its
// recordings, its mirror and its plain paths).
pub mod groups {
    //! Every location assigned to its nearest representative, and each group's robust statistics:
    //! the median distance to the representative, the median deviation from it, and the locations
    //! that stand out beyond both ([`mirror::stands_out`]). On the host from the nearest
    //! ([`assign_host`]); on a device from the distances left there ([`record`]: two 16-bit radix
    //! passes per median over a histogram per group), so that only each location's group (four
    //! bits), the statistics and the few that stand out come back. Both give the same.

    use super::mirror::{self, GROUP_WORDS};
    use crate::{BufId, DeviceWords, Kernel, Recording, StageError};

    /// Most groups (a location's group is kept in four bits).
    pub const MOST_GROUPS: u32 = 15;

    /// One group's statistics.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct GroupStats {
        pub members: u32,
        /// The lower median of the members' distances to the representative.
        pub median: u32,
        /// The lower median of their distances' deviations from `median`.
        pub mad: u32,
    }

    /// What [`assign_host`] and a device's run give.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct Assigned {
        /// Per location, its group.
        pub group_of: Vec<u8>,
        pub stats: Vec<GroupStats>,
        /// The locations that stand out of their group, with their distance, by location.
        pub candidates: Vec<(u32, u32)>,
    }

    /// The lower median of `v` (sorted in place); 0 for none.
    fn median(v: &mut [u32]) -> u32 {
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
    }

    /// [`Assigned`] from each location's nearest representative and distance; `least[g]` is the
    /// least distance that may stand out of group `g` (its floor).
    pub fn assign_host(nearest: &[(u32, u32)], least: &[u32]) -> Assigned {
        let groups = least.len();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); groups];
        for &(g, d) in nearest {
            if let Some(m) = members.get_mut(g as usize) {
                m.push(d);
            }
        }
        let stats: Vec<GroupStats> = members
            .iter_mut()
            .map(|d| {
                let m = median(d);
                let mut dev: Vec<u32> = d.iter().map(|&x| x.abs_diff(m)).collect();
                GroupStats { members: d.len() as u32, median: m, mad: median(&mut dev) }
            })
            .collect();
        let candidates = nearest
            .iter()
            .enumerate()
            .filter(|&(_, &(g, x))| {
                (g as usize) < groups && {
                    let s = stats[g as usize];
                    mirror::stands_out(x, s.median, s.mad, least[g as usize])
                }
            })
            .map(|(l, &(_, x))| (l as u32, x))
            .collect();
        let group_of = nearest.iter().map(|&(g, _)| g.min(15) as u8).collect();
        Assigned { group_of, stats, candidates }
    }

    /// The buffers a device's run of [`record`] leaves: the statistics and packed groups to
    /// download, the candidates to keep (read with [`read`]).
    pub struct Recorded {
        pub stats: BufId,
        pub packed: BufId,
        pub candidates: BufId,
    }

    fn params(n: u32, groups: u32, pass: u32, of_mad: u32) -> Vec<u32> {
        let p = mirror::Params { n, locations: n, reps: groups, digit_pass: pass, of_mad, ..Default::default() };
        bytemuck::cast_slice(&[p]).to_vec()
    }

    /// Records the groups and statistics of the `n` locations whose nearest representative and
    /// distance are in `nearest` (pairs of words), of `least.len()` groups.
    pub fn record(
        rec: &mut Recording<'_>,
        nearest: BufId,
        n: u32,
        least: &[u32],
        shown: Option<&[u32]>,
    ) -> Result<Recorded, StageError> {
        let groups = least.len() as u32;
        if groups == 0 || groups > MOST_GROUPS {
            return Err(StageError::Input(format!("{groups} groups: 1 to {MOST_GROUPS}")));
        }
        if let Some(shown) = shown {
            let mask = rec.alloc(u64::from(n.div_ceil(32)), "groups.shown");
            rec.upload(mask, mask_of(shown, n));
            rec.dispatch(Kernel::HideLocations, n, params(n, groups, 0, 0), vec![(4, nearest), (12, mask)]);
        }
        let hist = rec.alloc(u64::from(groups) << 16, "groups.histogram");
        let stats = rec.alloc(u64::from(groups * GROUP_WORDS), "groups.stats");
        let mut initial = vec![0u32; (groups * GROUP_WORDS) as usize];
        for (g, &l) in least.iter().enumerate() {
            initial[g * GROUP_WORDS as usize + 5] = l;
        }
        rec.upload(stats, initial);
        for of_mad in 0..2 {
            for pass in 0..2 {
                rec.clear(hist);
                rec.dispatch(
                    Kernel::GroupHistogram,
                    n,
                    params(n, groups, pass, of_mad),
                    vec![(4, nearest), (8, hist), (9, stats)],
                );
                rec.dispatch(
                    Kernel::GroupSelect,
                    groups * 256,
                    params(n, groups, pass, of_mad),
                    vec![(8, hist), (9, stats)],
                );
            }
        }
        let candidates = rec.alloc(1 + 2 * u64::from(n), "groups.candidates");
        rec.dispatch(
            Kernel::GroupDeviants,
            n,
            params(n, groups, 0, 0),
            vec![(4, nearest), (9, stats), (10, candidates)],
        );
        let packed = rec.alloc(u64::from(n.div_ceil(8)), "groups.packed");
        rec.dispatch(Kernel::PackGroups, n.div_ceil(8), params(n, groups, 0, 0), vec![(4, nearest), (11, packed)]);
        Ok(Recorded { stats, packed, candidates })
    }

    /// Every location that `shown` (where given) does not list left out of every group.
    pub fn hide(nearest: &mut [(u32, u32)], shown: Option<&[u32]>) {
        let Some(shown) = shown else { return };
        let mask = mask_of(shown, nearest.len() as u32);
        for (l, e) in nearest.iter_mut().enumerate() {
            if (mask[l / 32] >> (l % 32)) & 1 == 0 {
                *e = (u32::MAX, 0);
            }
        }
    }

    /// One bit a location of `n`: whether `shown` lists it.
    pub fn mask_of(shown: &[u32], n: u32) -> Vec<u32> {
        let mut mask = vec![0u32; n.div_ceil(32) as usize];
        for &l in shown.iter().filter(|&&l| l < n) {
            mask[(l / 32) as usize] |= 1 << (l % 32);
        }
        mask
    }

    /// [`Assigned`] from a run of [`record`]: the downloaded statistics and packed groups, and the
    /// candidates read from where they were kept (their count first, then only them).
    pub fn read(
        n: u32,
        groups: u32,
        stats: &[u32],
        packed: &[u32],
        candidates: &DeviceWords,
    ) -> Result<Assigned, StageError> {
        let bad = || StageError::Input("group statistics missing".into());
        if stats.len() < (groups * GROUP_WORDS) as usize || packed.len() < n.div_ceil(8) as usize {
            return Err(bad());
        }
        let stats: Vec<GroupStats> = stats
            .chunks(GROUP_WORDS as usize)
            .take(groups as usize)
            .map(|w| GroupStats { members: w[0], median: w[3], mad: w[4] })
            .collect();
        let group_of = (0..n as usize).map(|l| ((packed[l / 8] >> (4 * (l % 8))) & 15) as u8).collect();
        let count = candidates.read(0..1).map_err(StageError::from)?.first().copied().ok_or_else(bad)?;
        let count = count.min(n);
        let words = if count > 0 {
            candidates.read(1..1 + 2 * u64::from(count)).map_err(StageError::from)?
        } else {
            Vec::new()
        };
        let mut candidates: Vec<(u32, u32)> = words.chunks_exact(2).map(|w| (w[0], w[1])).collect();
        candidates.sort_unstable();
        Ok(Assigned { group_of, stats, candidates })
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::Runner;
        use crate::cpu::CpuRunner;

        /// The recording (the mirrors' kernels) gives the host's groups, medians past 16 bits,
        /// deviations and candidates.
        #[test]
        fn the_recording_equals_the_host() {
            let mut seed = 5u64;
            let mut next = move |m: u64| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed % m) as u32
            };
            let nearest: Vec<(u32, u32)> =
                (0..5000u32).map(|l| (l % 3, if l % 997 == 5 { 900_000 } else { 200_000 + next(30_000) })).collect();
            let least = [10u32, 10, 400_000];
            let host = assign_host(&nearest, &least);
            assert!(host.stats.iter().all(|s| s.median > 1 << 17 && s.mad > 1000), "{:?}", host.stats);
            assert_eq!(host.candidates.len(), 6, "{:?}", host.candidates);
            let mut rec = Recording::default();
            let buf = rec.alloc(2 * nearest.len() as u64, "nearest");
            let words: Vec<u32> = nearest.iter().flat_map(|&(g, d)| [g, d]).collect();
            rec.upload(buf, words);
            let r = record(&mut rec, buf, nearest.len() as u32, &least, None).unwrap();
            rec.download(r.stats);
            rec.download(r.packed);
            rec.keep(r.candidates);
            let out = CpuRunner::default().run_keeping(&rec).unwrap();
            let got = read(nearest.len() as u32, 3, &out.downloads[0], &out.downloads[1], &out.kept[0]).unwrap();
            assert_eq!(got.stats, host.stats);
            assert_eq!(got.candidates, host.candidates);
            assert_eq!(got.group_of, host.group_of);
        }
    }
}

// The recordings from a pyramid's tiles.
pub mod tiles {
    //! Location features summed from a pyramid's per-location tiles (each location's time per state
    //! in a few dozen bins over the trace) rather than from rows: what groups the rows of a window
    //! too large to read. The tiles are quantised once to 20-bit words ([`Tiles`]) and kept on a GPU
    //! device under their `Arc`; a window sends only a small table (each state's colour slot, and per
    //! window bin the tile bins it overlaps with integer weights), so the kernel (`tile_features` in
    //! `location_features.wgsl`) and the CPU sum the same integers in 64 bits and agree exactly.
    //!
    //! A location's features in window bin `j` and slot `s` are `sum over its states in s and the
    //! tile bins k that j overlaps of tile * weight(j, k)`, shifted down by the table's fraction
    //! bits: `weight(j, k)` is the share of tile bin `k` inside window bin `j` (its ticks spread
    //! evenly over the bin) in quanta per tile unit, scaled by `2^shift`.

    use std::sync::Arc;

    use rayon::prelude::*;

    use super::groups::{self, Assigned};
    use super::mirror::{self, Params};
    use super::{BIN_QUANTA, Features, quantum};
    use crate::{Kernel, Owner, Recording, Runner, StageError, check_binding};

    /// Bits of a quantised tile: the largest tile is `2^TILE_BITS - 1` units or less.
    pub const TILE_BITS: u32 = 20;
    /// Most fraction bits of a window's weights.
    const MOST_SHIFT: u32 = 62;

    /// A pyramid's per-location tiles as the kernel reads them: `[location][state][bin]`, each in
    /// units of `unit` ticks (rounded to nearest).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Tiles {
        pub locations: u32,
        pub states: u32,
        pub bins: u32,
        /// The first tick of tile bin 0, and the ticks of each bin.
        pub t0: u64,
        pub bin_ticks: u64,
        /// Ticks per unit.
        pub unit: u64,
        pub words: Vec<u32>,
    }

    impl Tiles {
        /// The tiles `ticks` (`[location][state][bin]`) quantised, or `None` where their sizes
        /// disagree.
        pub fn quantise(
            (locations, states, bins): (u32, u32, u32),
            (t0, bin_ticks): (u64, u64),
            ticks: &[u64],
        ) -> Option<Self> {
            let cells = u64::from(locations) * u64::from(states) * u64::from(bins);
            if cells != ticks.len() as u64 || bin_ticks == 0 {
                return None;
            }
            let most = ticks.par_iter().copied().max().unwrap_or(0);
            let unit = most.div_ceil((1u64 << TILE_BITS) - 1).max(1);
            let words =
                ticks.par_iter().map(|&t| ((u128::from(t) + u128::from(unit / 2)) / u128::from(unit)) as u32).collect();
            Some(Self { locations, states, bins, t0, bin_ticks, unit, words })
        }
    }

    /// The features of a window from [`Tiles`]: `bins` window bins, each state in its colour slot
    /// (`slot_of_state[s] < slots`; others left out), `slots` at most 8.
    #[derive(Clone, Debug)]
    pub struct TileInput<'a> {
        pub tiles: &'a Arc<Tiles>,
        pub slot_of_state: &'a [u32],
        pub slots: u32,
        /// Ticks `[t0, t1)`.
        pub window: (u64, u64),
        pub bins: u32,
    }

    /// A window's table (see the module's notes) and its weights' fraction bits.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Table {
        pub words: Vec<u32>,
        pub shift: u32,
    }

    impl TileInput<'_> {
        fn check(&self) -> Result<(), StageError> {
            if self.bins == 0 || self.slots == 0 || self.slots > 8 || self.window.1 <= self.window.0 {
                return Err(StageError::Input("tile features need bins, 1 to 8 slots and a window".into()));
            }
            if self.slot_of_state.len() != self.tiles.states as usize {
                return Err(StageError::Input("tile features need a slot per state".into()));
            }
            Ok(())
        }

        /// The window's table: per window bin, the tile bins it overlaps with their weights.
        pub fn table(&self) -> Table {
            let t = &**self.tiles;
            let q = quantum(self.window, self.bins);
            let bin = u128::from(BIN_QUANTA) * u128::from(q);
            let (w0, w1) = (u128::from(self.window.0), u128::from(self.window.1));
            // Per window bin, (tile bin, weight in quanta per unit).
            let entries: Vec<Vec<(u32, f64)>> = (0..u128::from(self.bins))
                .map(|j| {
                    let (a, b) = (w0 + j * bin, (w0 + (j + 1) * bin).min(w1));
                    let (t0, bt) = (u128::from(t.t0), u128::from(t.bin_ticks));
                    if b <= a || b <= t0 {
                        return Vec::new();
                    }
                    let first = a.saturating_sub(t0) / bt;
                    let last = ((b - t0).div_ceil(bt)).min(u128::from(t.bins));
                    (first..last)
                        .filter_map(|k| {
                            let (ka, kb) = (t0 + k * bt, t0 + (k + 1) * bt);
                            let inside = b.min(kb).saturating_sub(a.max(ka));
                            let w = inside as f64 * t.unit as f64 / (bt as f64 * q as f64);
                            (inside > 0).then_some((k as u32, w))
                        })
                        .collect()
                })
                .collect();
            let most = entries.iter().flatten().map(|e| e.1).fold(0.0f64, f64::max);
            let limit = f64::from(1u32 << 31);
            let shift = (0..=MOST_SHIFT).rev().find(|&s| most * 2f64.powi(s as i32) < limit).unwrap_or(0);
            let scale = 2f64.powi(shift as i32);
            let mut words: Vec<u32> = self.slot_of_state.to_vec();
            let mut at = 0u32;
            words.push(0);
            for e in &entries {
                at += e.len() as u32;
                words.push(at);
            }
            for &(k, w) in entries.iter().flatten() {
                words.push(k);
                words.push((w * scale).round().min(f64::from(u32::MAX)) as u32);
            }
            Table { words, shift }
        }

        fn params(&self, shift: u32) -> Params {
            let t = &**self.tiles;
            Params {
                n: t.locations * self.bins,
                locations: t.locations,
                bins: self.bins,
                slots: self.slots,
                bin_quanta: BIN_QUANTA,
                states: t.states,
                tile_bins: t.bins,
                shift,
                ..Params::default()
            }
        }

        fn features(&self, values: Vec<u32>) -> Features {
            Features {
                locations: self.tiles.locations,
                bins: self.bins,
                slots: self.slots,
                quantum: quantum(self.window, self.bins),
                values,
            }
        }
    }

    /// Location `l`'s features on the host (what the kernel writes for it): `bins x slots` words.
    pub fn row(input: &TileInput<'_>, table: &Table, l: u32) -> Vec<u32> {
        let p = input.params(table.shift);
        let (tiles, words) = (&input.tiles.words, &table.words);
        (0..input.bins)
            .flat_map(|j| {
                let cell = mirror::tile_cell(l, j, &p, |k| tiles[k], |k| words[k]);
                cell.into_iter().take(input.slots as usize)
            })
            .collect()
    }

    /// Every location's features of `input` on `runner`: on plain memory the rows summed directly,
    /// else the kernel's, downloaded; the same words either way.
    pub fn run(runner: &mut dyn Runner, input: &TileInput<'_>) -> Result<Features, StageError> {
        input.check()?;
        if runner.plain_memory() {
            let table = input.table();
            let dims = (input.bins * input.slots) as usize;
            let mut values = vec![0u32; input.tiles.locations as usize * dims];
            values
                .par_chunks_mut(dims)
                .enumerate()
                .for_each(|(l, out)| out.copy_from_slice(&row(input, &table, l as u32)));
            return Ok(input.features(values));
        }
        let (mut rec, features) = recorded(input, runner.max_binding_bytes())?;
        rec.download(features);
        let values =
            runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("features missing".into()))?;
        Ok(input.features(values))
    }

    /// A recording of the features of `input` and the buffer they are in, the tiles kept on the
    /// device under their own `Arc`.
    fn recorded<'a>(
        input: &'a TileInput<'a>,
        max_binding_bytes: u64,
    ) -> Result<(Recording<'a>, crate::BufId), StageError> {
        let owner: Owner = input.tiles.clone();
        let mut rec = Recording::default();
        let features = record(&mut rec, input, &input.table(), &owner, max_binding_bytes)?;
        Ok((rec, features))
    }

    /// Records the features of `input` into a buffer it returns, the tiles kept on the device under
    /// `owner`.
    fn record<'a>(
        rec: &mut Recording<'a>,
        input: &'a TileInput<'a>,
        table: &Table,
        owner: &Owner,
        max_binding_bytes: u64,
    ) -> Result<crate::BufId, StageError> {
        let t = &**input.tiles;
        check_binding("location tiles", t.words.len() as u64 * 4, max_binding_bytes)?;
        let words = u64::from(t.locations) * u64::from(input.bins) * u64::from(input.slots);
        check_binding("location features", words * 4, max_binding_bytes)?;
        let tiles = rec.alloc(t.words.len() as u64, "tile_features.tiles");
        rec.upload_kept(tiles, &t.words, owner);
        let tb = rec.alloc(table.words.len() as u64, "tile_features.table");
        rec.upload(tb, table.words.clone());
        let features = rec.alloc(words, "tile_features.features");
        let p = input.params(table.shift);
        rec.dispatch(
            Kernel::TileFeatures,
            p.n,
            bytemuck::cast_slice(&[p]).to_vec(),
            vec![(6, tiles), (7, tb), (2, features)],
        );
        Ok(features)
    }

    /// Per location: its nearest of `reps` (each `bins x slots` words, in order) and the L1
    /// distance to it, from the features of `input` made where `runner` runs: on a GPU device they
    /// never leave it (the tiles kept there, only the table and the representatives go up, only
    /// the nearest come back). The same as [`super::nearest`] of [`run`]'s features.
    pub fn nearest(
        runner: &mut dyn Runner,
        input: &TileInput<'_>,
        reps: &[u32],
    ) -> Result<Vec<(u32, u32)>, StageError> {
        input.check()?;
        let d = (input.bins * input.slots) as usize;
        if reps.is_empty() || !reps.len().is_multiple_of(d) {
            return Err(StageError::Input("location distances need whole representatives".into()));
        }
        if runner.plain_memory() {
            let features = run(runner, input)?;
            return super::nearest(runner, &features, reps);
        }
        let (mut rec, features) = recorded(input, runner.max_binding_bytes())?;
        let n = input.tiles.locations;
        let rb = rec.alloc(reps.len() as u64, "distances.reps");
        rec.upload(rb, reps);
        let out = rec.alloc(2 * u64::from(n), "distances.nearest");
        let p = super::params(n, n, input.bins, input.slots, (reps.len() / d) as u32);
        rec.dispatch(Kernel::LocationDistances, n, p, vec![(5, features), (3, rb), (4, out)]);
        rec.download(out);
        let words =
            runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("distances missing".into()))?;
        Ok(words.chunks_exact(2).map(|w| (w[0], w[1])).collect())
    }

    /// Every location's group and each group's statistics ([`super::groups`]) for the
    /// representatives `reps` and the groups' floors `least`, from the features of `input` made
    /// where `runner` runs: on a GPU device the features, distances and histograms stay there, and
    /// only each location's group (four bits), the statistics and the locations that stand out come
    /// back.
    pub fn assign(
        runner: &mut dyn Runner,
        input: &TileInput<'_>,
        reps: &[u32],
        (least, shown): (&[u32], Option<&[u32]>),
    ) -> Result<Assigned, StageError> {
        if runner.plain_memory() {
            let mut near = nearest(runner, input, reps)?;
            groups::hide(&mut near, shown);
            return Ok(groups::assign_host(&near, least));
        }
        input.check()?;
        let d = (input.bins * input.slots) as usize;
        if reps.is_empty() || !reps.len().is_multiple_of(d) || reps.len() / d != least.len() {
            return Err(StageError::Input("location groups need whole representatives, a floor each".into()));
        }
        let (rec, features) = recorded(input, runner.max_binding_bytes())?;
        let shape = (features, input.tiles.locations, input.bins, input.slots);
        super::record_groups(runner, rec, shape, reps, (least, shown))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::cpu::CpuRunner;

        fn tiles(ticks: Vec<u64>) -> Arc<Tiles> {
            Arc::new(Tiles::quantise((2, 2, 4), (1000, 100), &ticks).unwrap())
        }

        /// A window over whole tile bins sums their time in quanta; a window bin over part of a
        /// tile bin takes its share; states of no slot add nothing; the plain path, the recording
        /// and [`row`] agree.
        #[test]
        fn tiles_sum_into_the_window_bins_they_overlap() {
            // Location 0: state 0 full in every bin, state 1 half of bin 2. Location 1: state 1 only.
            let t = tiles(vec![100, 100, 100, 100, 0, 0, 50, 0, 0, 0, 0, 0, 100, 100, 100, 100]);
            assert_eq!(t.unit, 1, "100 ticks fit 20 bits");
            // Two window bins of 16,384 quanta of 1 tick over [1000, 1400): all four tile bins in
            // bin 0.
            let input = TileInput { tiles: &t, slot_of_state: &[0, 1], slots: 2, window: (1000, 1400), bins: 2 };
            let f = run(&mut CpuRunner::default(), &input).unwrap();
            assert_eq!(f.quantum, 1);
            assert_eq!(f.of(0), [400, 50, 0, 0]);
            assert_eq!(f.of(1), [0, 400, 0, 0]);
            let mut plain = CpuRunner::default();
            assert_eq!(run_recorded(&mut plain, &input), f);
            assert_eq!(row(&input, &input.table(), 1), f.of(1));
            // Half of tile bin 1 and all of bin 2: state 1 of location 0 gets bin 2's 50.
            let input = TileInput { window: (1150, 1300), ..input.clone() };
            let f = run(&mut CpuRunner::default(), &input).unwrap();
            assert_eq!(f.of(0), [150, 50, 0, 0]);
            assert_eq!(run_recorded(&mut plain, &input), f);
            // A state of no slot is left out.
            let input = TileInput { slot_of_state: &[0, 7], ..input };
            assert_eq!(run(&mut CpuRunner::default(), &input).unwrap().of(1), [0, 0, 0, 0]);
        }

        /// The recording's run on the CPU runner: what a GPU runner runs.
        fn run_recorded(runner: &mut CpuRunner, input: &TileInput<'_>) -> Features {
            let table = input.table();
            let owner: Owner = input.tiles.clone();
            let mut rec = Recording::default();
            let features = record(&mut rec, input, &table, &owner, u64::MAX).unwrap();
            rec.download(features);
            input.features(runner.run(&rec).unwrap().remove(0))
        }

        /// Large tiles keep 20 bits; the 64-bit sums and their rounding match the host's `u64`
        /// arithmetic, wide windows (many tile bins in a window bin) and narrow ones (a window bin
        /// inside one tile bin) alike.
        #[test]
        fn large_ticks_and_windows_of_every_width_agree() {
            let mut seed = 7u64;
            let ticks: Vec<u64> = (0..3 * 5 * 64)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    (seed >> 20) % 3_000_000_000_000
                })
                .collect();
            let t = Arc::new(Tiles::quantise((3, 5, 64), (1 << 40, 3_000_000_000_000), &ticks).unwrap());
            assert!(t.words.iter().all(|&w| w < 1 << TILE_BITS) && t.unit > 1);
            let slots = [0u32, 1, 1, 2, 9];
            for (a, b) in [
                (0u64, 1 << 48),
                ((1 << 40) + 5, (1 << 40) + 1_000),
                ((1 << 40) + 7e12 as u64, (1 << 40) + 9e13 as u64),
            ] {
                let input = TileInput { tiles: &t, slot_of_state: &slots, slots: 3, window: (a, b), bins: 32 };
                let f = run(&mut CpuRunner::default(), &input).unwrap();
                assert_eq!(run_recorded(&mut CpuRunner::default(), &input), f, "window {a}..{b}");
                assert!(f.values.iter().any(|&v| v > 0), "window {a}..{b} holds time");
                // The features are the window's time in quanta: within a unit's rounding of the
                // ticks summed exactly.
                let q = quantum((a, b), 32) as f64;
                let total: f64 = f.of(1).iter().map(|&v| f64::from(v)).sum();
                let exact: f64 = (0..5u32)
                    .filter(|&s| slots[s as usize] < 3)
                    .flat_map(|s| (0..64u32).map(move |k| (s, k)))
                    .map(|(s, k)| {
                        let (ka, kb) = (
                            (1u64 << 40) + u64::from(k) * 3_000_000_000_000,
                            (1u64 << 40) + u64::from(k + 1) * 3_000_000_000_000,
                        );
                        let end = (a + 32 * u64::from(BIN_QUANTA) * quantum((a, b), 32)).min(b);
                        let inside = end.min(kb).saturating_sub(a.max(ka)) as f64;
                        ticks[((5 + s) * 64 + k) as usize] as f64 * inside / 3e12 / q
                    })
                    .sum();
                assert!((total - exact).abs() <= 1e-5 * exact + 96.0, "window {a}..{b}: {total} against {exact}");
            }
        }

        #[test]
        fn round_shift_rounds_halves_up_and_saturates() {
            assert_eq!(mirror::round_shift(5, 1), 3);
            assert_eq!(mirror::round_shift(4, 1), 2);
            assert_eq!(mirror::round_shift(u64::MAX, 0), u32::MAX);
            assert_eq!(mirror::round_shift(u64::MAX, 4), u32::MAX);
            assert_eq!(mirror::round_shift(3 << 40, 40), 3);
            assert_eq!(mirror::round_shift(1 << 39, 40), 1);
        }
    }
}
