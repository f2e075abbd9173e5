//! Per-location features of a time window, and each location's distance to a few
//! representatives: what rows grouped by behaviour are found from (`exaviz_views::rows`). A
//! location's features are the time each of its colour slots covers in each of the window's
//! `bins` time bins (every nesting level counted); two locations that do the same things at the
//! same times have near features, and one that differs is far from every representative.
//!
//! Shader: `location_features.wgsl` beside this file; CPU mirror: [`mirror`]. Times are handed
//! to the kernels as `u32` quanta from the window's start ([`spans`]), `BIN_QUANTA` to a bin,
//! so every sum is exact in 32 bits and both backends give the same counts.

pub mod groups;
pub mod mirror;
pub mod tiles;

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
    vec![n, input_locations, bins, slots, BIN_QUANTA, reps, 0, 0, 0, 0, 0, 0]
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
    let words = check(input, max_binding_bytes)?;
    let mut rec = Recording::default();
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
    rec.download(features);
    Ok(rec)
}

/// The features of `input` on `runner`: on plain memory (the CPU's) the mirror's kernel run over
/// the spans directly, else [`run_recorded`]; the same counts either way.
pub fn run(runner: &mut dyn Runner, input: &FeatureInput<'_>) -> Result<Features, StageError> {
    if !runner.plain_memory() {
        return run_recorded(runner, input);
    }
    let words = check(input, u64::MAX)?;
    let spans = spans(input);
    // The spans in order of their location (a counting sort), so that each location's row of
    // features is summed by one thread without atomics: the mirror's sums, in another order.
    let n = input.locations as usize;
    let mut first = vec![0u32; n + 1];
    for s in &spans {
        first[s[0] as usize + 1] += 1;
    }
    for l in 0..n {
        first[l + 1] += first[l];
    }
    let mut at = first.clone();
    let mut order = vec![0u32; spans.len()];
    for (k, s) in spans.iter().enumerate() {
        let l = s[0] as usize;
        order[at[l] as usize] = k as u32;
        at[l] += 1;
    }
    let (bins, slots, w) = (input.bins, input.slots, BIN_QUANTA);
    let end = bins * w;
    let mut values = vec![0u32; words as usize];
    let dims = (bins * slots) as usize;
    values.par_chunks_mut(dims.max(1)).enumerate().with_min_len(64).for_each(|(l, row)| {
        for &k in &order[first[l] as usize..first[l + 1] as usize] {
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
