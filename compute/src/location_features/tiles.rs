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
    let table = input.table();
    if runner.plain_memory() {
        let dims = (input.bins * input.slots) as usize;
        let mut values = vec![0u32; input.tiles.locations as usize * dims];
        values.par_chunks_mut(dims).enumerate().for_each(|(l, out)| out.copy_from_slice(&row(input, &table, l as u32)));
        return Ok(input.features(values));
    }
    let owner: Owner = input.tiles.clone();
    let mut rec = Recording::default();
    let features = record(&mut rec, input, &table, &owner, runner.max_binding_bytes())?;
    rec.download(features);
    let values = runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("features missing".into()))?;
    Ok(input.features(values))
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
pub fn nearest(runner: &mut dyn Runner, input: &TileInput<'_>, reps: &[u32]) -> Result<Vec<(u32, u32)>, StageError> {
    input.check()?;
    let d = (input.bins * input.slots) as usize;
    if reps.is_empty() || !reps.len().is_multiple_of(d) {
        return Err(StageError::Input("location distances need whole representatives".into()));
    }
    if runner.plain_memory() {
        let features = run(runner, input)?;
        return super::nearest(runner, &features, reps);
    }
    let table = input.table();
    let owner: Owner = input.tiles.clone();
    let mut rec = Recording::default();
    let features = record(&mut rec, input, &table, &owner, runner.max_binding_bytes())?;
    let n = input.tiles.locations;
    let rb = rec.alloc(reps.len() as u64, "distances.reps");
    rec.upload(rb, reps);
    let out = rec.alloc(2 * u64::from(n), "distances.nearest");
    let p = super::params(n, n, input.bins, input.slots, (reps.len() / d) as u32);
    rec.dispatch(Kernel::LocationDistances, n, p, vec![(5, features), (3, rb), (4, out)]);
    rec.download(out);
    let words = runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("distances missing".into()))?;
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
    least: &[u32],
) -> Result<Assigned, StageError> {
    if runner.plain_memory() {
        return Ok(groups::assign_host(&nearest(runner, input, reps)?, least));
    }
    input.check()?;
    let d = (input.bins * input.slots) as usize;
    if reps.is_empty() || !reps.len().is_multiple_of(d) || reps.len() / d != least.len() {
        return Err(StageError::Input("location groups need whole representatives, a floor each".into()));
    }
    let table = input.table();
    let owner: Owner = input.tiles.clone();
    let mut rec = Recording::default();
    let features = record(&mut rec, input, &table, &owner, runner.max_binding_bytes())?;
    let n = input.tiles.locations;
    let rb = rec.alloc(reps.len() as u64, "distances.reps");
    rec.upload(rb, reps);
    let out = rec.alloc(2 * u64::from(n), "distances.nearest");
    let p = super::params(n, n, input.bins, input.slots, least.len() as u32);
    rec.dispatch(Kernel::LocationDistances, n, p, vec![(5, features), (3, rb), (4, out)]);
    let g = groups::record(&mut rec, out, n, least)?;
    rec.download(g.stats);
    rec.download(g.packed);
    rec.keep(g.candidates);
    let outs = runner.run_keeping(&rec)?;
    let missing = || StageError::Input("location groups missing".into());
    let (stats, packed) = (outs.downloads.first().ok_or_else(missing)?, outs.downloads.get(1).ok_or_else(missing)?);
    groups::read(n, least.len() as u32, stats, packed, outs.kept.first().ok_or_else(missing)?)
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
        for (a, b) in
            [(0u64, 1 << 48), ((1 << 40) + 5, (1 << 40) + 1_000), ((1 << 40) + 7e12 as u64, (1 << 40) + 9e13 as u64)]
        {
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
