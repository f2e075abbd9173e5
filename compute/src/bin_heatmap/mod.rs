//! Stage (a): heatmap binning of elements (messages, link events) into a 2-D grid of counts and
//! exact 64-bit weight sums. Shader: `bin_heatmap.wgsl` beside this file; CPU mirror: [`mirror`];
//! the grid in plain memory (what the CPU runner and the pyramid use): [`exaviz_model::bins`].

pub mod mirror;

use super::{Kernel, Owner, Recording, Runner, StageError, check_binding, chunks, words_to_u64};

pub use exaviz_model::bins::{AxisKey, HeatmapGrid, HeatmapInput};

/// How an axis is handed to the kernel: its mode and parameter words (mode, t0_lo, t0_hi,
/// shift, width).
fn axis_params(k: &AxisKey<'_>) -> [u32; 5] {
    match *k {
        AxisKey::Id { .. } => [0, 0, 0, 0, 1],
        AxisKey::Time { t0, shift, width, .. } => [1, t0 as u32, (t0 >> 32) as u32, shift, width],
        AxisKey::Scaled { lo, scale, .. } => [2, lo.to_bits(), scale.to_bits(), 0, 1],
    }
}

/// Bytes of one element's key as uploaded.
fn bytes_per_element(k: &AxisKey<'_>) -> u64 {
    match k {
        AxisKey::Id { .. } | AxisKey::Scaled { .. } => 4,
        AxisKey::Time { .. } => 8,
    }
}

/// The keys of `range` as the words uploaded.
fn words<'a>(k: &AxisKey<'a>, range: std::ops::Range<usize>) -> &'a [u32] {
    match *k {
        AxisKey::Id { keys, .. } => &keys[range],
        AxisKey::Time { times, .. } => bytemuck::cast_slice(&times[range]),
        AxisKey::Scaled { values, .. } => bytemuck::cast_slice(&values[range]),
    }
}

/// Equal column lengths and a grid of 1 to `u32::MAX` cells; returns the cells.
fn check(input: &HeatmapInput<'_>) -> Result<u64, StageError> {
    let n = input.x.len();
    if input.y.len() != n || input.weights.is_some_and(|w| w.len() != n) {
        return Err(StageError::Input("heatmap key and weight columns differ in length".into()));
    }
    let cells = u64::from(input.x.extent()) * u64::from(input.y.extent());
    if cells == 0 {
        return Err(StageError::Input("heatmap grid has no cells".into()));
    }
    if cells > u64::from(u32::MAX) {
        return Err(StageError::Input(format!("heatmap grid of {cells} cells is too large")));
    }
    Ok(cells)
}

/// Records stage (a); downloads counts then sums.
pub fn record<'a>(input: &HeatmapInput<'a>, max_binding_bytes: u64) -> Result<Recording<'a>, StageError> {
    record_kept(input, max_binding_bytes, None)
}

/// [`record`], with the key and weight columns kept on a GPU device where `owner` holds them
/// (then a later binning of the same columns, with another window or grid, uploads only its
/// parameters).
pub fn record_kept<'a>(
    input: &HeatmapInput<'a>,
    max_binding_bytes: u64,
    owner: Option<&Owner>,
) -> Result<Recording<'a>, StageError> {
    let cells = check(input)?;
    let n = input.len();
    let (cols, rows) = (input.x.extent(), input.y.extent());
    check_binding("heatmap sums", cells * 8, max_binding_bytes)?;
    let per_element = bytes_per_element(&input.x).max(bytes_per_element(&input.y)).max(4);
    let mut rec = Recording::default();
    let counts = rec.alloc(cells, "heatmap.counts");
    // Unweighted, each cell's sum is its count (no count wraps below 2^32 elements): the sums
    // are neither added on the device nor read back (two thirds of a grid's read-back).
    let summed = sums_on_device(input);
    let sums = rec.alloc(if summed { cells * 2 } else { 2 }, "heatmap.sums");
    let parts: Vec<_> = chunks(n, per_element, max_binding_bytes).collect();
    let most = parts.first().map_or(0, |r| r.len() as u64);
    let weights = input.weights.map(|_| rec.alloc(most, "heatmap.weights"));
    let dummy = rec.alloc(1, "heatmap.no_weights");
    let xb = rec.alloc(most * bytes_per_element(&input.x) / 4, "heatmap.x_keys");
    let yb = rec.alloc(most * bytes_per_element(&input.y) / 4, "heatmap.y_keys");
    for range in parts {
        let len = range.len() as u32;
        rec.upload_maybe_kept(xb, words(&input.x, range.clone()), owner);
        rec.upload_maybe_kept(yb, words(&input.y, range.clone()), owner);
        let wb = match (input.weights, weights) {
            (Some(w), Some(b)) => {
                rec.upload_maybe_kept(b, &w[range.clone()], owner);
                b
            }
            _ => dummy,
        };
        let mut params = vec![len, cols, rows, u32::from(input.weights.is_some())];
        params.extend(axis_params(&input.x));
        params.extend(axis_params(&input.y));
        params.extend([0, 0]);
        rec.dispatch(Kernel::BinHeatmap, len, params, vec![(1, xb), (2, yb), (3, wb), (4, counts), (5, sums)]);
    }
    rec.download(counts);
    if summed {
        rec.download(sums);
    }
    Ok(rec)
}

/// Whether the device adds the weight sums: where there are weights, or so many elements that
/// a cell's count could wrap.
fn sums_on_device(input: &HeatmapInput<'_>) -> bool {
    input.weights.is_some() || input.len() > u32::MAX as usize
}

/// Runs stage (a) on a runner: on one of plain memory (the CPU's) with the partitioned scatter
/// of `exaviz_model::bins`, which equals the recording's run there, else as [`run_recorded`].
pub fn run(runner: &mut dyn Runner, input: &HeatmapInput<'_>) -> Result<HeatmapGrid, StageError> {
    run_maybe_kept(runner, input, None)
}

/// [`run`], with the columns kept on a GPU device while `owner` lives ([`record_kept`]).
pub fn run_kept(runner: &mut dyn Runner, input: &HeatmapInput<'_>, owner: &Owner) -> Result<HeatmapGrid, StageError> {
    run_maybe_kept(runner, input, Some(owner))
}

fn run_maybe_kept(
    runner: &mut dyn Runner,
    input: &HeatmapInput<'_>,
    owner: Option<&Owner>,
) -> Result<HeatmapGrid, StageError> {
    if runner.plain_memory() {
        check(input)?;
        return Ok(exaviz_model::bins::bin(input));
    }
    let rec = record_kept(input, runner.max_binding_bytes(), owner)?;
    grid_of(runner, input, rec)
}

/// Runs stage (a) by running [`record`]'s recording on `runner` (the mirror on the CPU).
pub fn run_recorded(runner: &mut dyn Runner, input: &HeatmapInput<'_>) -> Result<HeatmapGrid, StageError> {
    let rec = record(input, runner.max_binding_bytes())?;
    grid_of(runner, input, rec)
}

/// The grid a run of `rec`, recorded for `input`, downloads.
fn grid_of(runner: &mut dyn Runner, input: &HeatmapInput<'_>, rec: Recording<'_>) -> Result<HeatmapGrid, StageError> {
    let mut out = runner.run(&rec)?.into_iter();
    let Some(counts) = out.next() else {
        return Err(StageError::Input("heatmap downloads missing".into()));
    };
    let sums = match (sums_on_device(input), out.next()) {
        (true, Some(sums)) => words_to_u64(&sums),
        (true, None) => return Err(StageError::Input("heatmap sums missing".into())),
        (false, _) => counts.iter().map(|&c| u64::from(c)).collect(),
    };
    Ok(HeatmapGrid { cols: input.x.extent(), rows: input.y.extent(), counts, sums })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_axis_covers_the_span_in_the_requested_bins() {
        let t = [0u64];
        for (lo, hi, bins) in [(0, 99, 10), (5, 5, 3), (0, u64::MAX, 1000), (1 << 40, (1 << 41) + 17, 7)] {
            let AxisKey::Time { shift, width, .. } = AxisKey::time(&t, lo, hi, bins) else { unreachable!() };
            let q_max = (hi - lo) >> shift;
            assert!(q_max <= u64::from(u32::MAX));
            assert!(q_max / u64::from(width) < u64::from(bins), "{lo} {hi} {bins}");
        }
    }

    /// The plain path (partitioned or per thread) equals the mirror's run of the recording, bit
    /// for bit, on grids below and above a partition, with ids and times out of range, weights
    /// near `u32::MAX`, time bins of several widths, and points' coordinates.
    #[test]
    fn plain_path_equals_the_mirror() {
        use crate::cpu::CpuRunner;
        let mut s = 7u64;
        let mut next = move || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            s >> 11
        };
        for (n, cols, rows, time_x, weighted) in [
            (0usize, 3u32, 5u32, false, true),
            (5_000, 40, 30, true, true),
            (300_000, 1024, 1024, false, true),
            (200_000, 700, 300, true, false),
            (2_100_000, 1024, 1024, true, true),
            (1_500_000, 2048, 1024, false, true),
            (400_000, 1500, 900, true, false),
            (50_000, 1, 1, false, true),
        ] {
            let ids_x: Vec<u32> = (0..n).map(|_| (next() % u64::from(cols + 3)) as u32).collect();
            let ids_y: Vec<u32> = (0..n).map(|_| (next() % u64::from(rows + 2)) as u32).collect();
            let times: Vec<u64> = (0..n).map(|_| (1 << 40) + next() % 10_000_000_019).collect();
            let w: Vec<u32> =
                (0..n).map(|i| if i % 7 == 0 { u32::MAX - (next() % 9) as u32 } else { next() as u32 >> 8 }).collect();
            let (lo, hi) = (
                times.iter().min().copied().unwrap_or(0) + 1000,
                times.iter().max().copied().unwrap_or(0).saturating_sub(1000).max(1 << 40),
            );
            let x =
                if time_x { AxisKey::time(&times, lo, hi, cols) } else { AxisKey::Id { keys: &ids_x, extent: cols } };
            let input =
                HeatmapInput { x, y: AxisKey::Id { keys: &ids_y, extent: rows }, weights: weighted.then_some(&w[..]) };
            let mut cpu = CpuRunner::default();
            let plain = run(&mut cpu, &input).unwrap();
            let mirror = run_recorded(&mut cpu, &input).unwrap();
            assert!(plain == mirror, "n {n}, {cols}x{rows}, time {time_x}, weighted {weighted}");
            let binned: u64 = plain.counts.iter().map(|&c| u64::from(c)).sum();
            assert!(binned > 0 || n == 0, "something binned");
        }
        // Points' coordinates, unweighted (partitioned on grids above 16 Ki cells, counted per
        // thread below), some outside the grid's range and some NaN.
        for (n, cols, rows) in [(300_000usize, 1024u32, 1024u32), (100_000, 2048, 1100), (1_000, 7, 5)] {
            let coordinate = |next: &mut dyn FnMut() -> u64| match next() % 50 {
                0 => f32::NAN,
                1 => -3.5,
                2 => 1024.0,
                _ => (next() % 1_100_000) as f32 / 1000.0 - 20.0,
            };
            let xs: Vec<f32> = (0..n).map(|_| coordinate(&mut next)).collect();
            let ys: Vec<f32> = (0..n).map(|_| coordinate(&mut next)).collect();
            let input = HeatmapInput {
                x: AxisKey::scaled(&xs, 0.0, 1024.0, cols),
                y: AxisKey::scaled(&ys, 0.0, 1024.0, rows),
                weights: None,
            };
            let mut cpu = CpuRunner::default();
            let plain = run(&mut cpu, &input).unwrap();
            assert!(plain == run_recorded(&mut cpu, &input).unwrap(), "points: n {n}, {cols}x{rows}");
            let binned: u64 = plain.counts.iter().map(|&c| u64::from(c)).sum();
            assert!(binned > n as u64 * 6 / 10 && binned < n as u64, "points: {binned} of {n} binned");
        }
        let bad = HeatmapInput {
            x: AxisKey::Id { keys: &[1, 2], extent: 4 },
            y: AxisKey::Id { keys: &[1], extent: 4 },
            weights: None,
        };
        assert!(run(&mut CpuRunner::default(), &bad).is_err());
    }
}
