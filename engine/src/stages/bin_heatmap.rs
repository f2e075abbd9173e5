//! Stage (a): heatmap binning of elements (messages, link events) into a 2-D grid of counts and
//! exact 64-bit weight sums. Shader: `shaders/wgsl/bin_heatmap.wgsl`; CPU mirror: `cpu::bin_heatmap`.

use super::{Kernel, Recording, Runner, StageError, check_binding, chunks, words_to_u64};

/// How one axis of the grid is keyed.
#[derive(Clone, Copy, Debug)]
pub enum AxisKey<'a> {
    /// The key is the value itself (a location, node or link id); keys `>= extent` are dropped.
    Id { keys: &'a [u32], extent: u32 },
    /// The key is a time bin: `u32((t - t0) >> shift) / width`; see [`AxisKey::time`].
    Time { times: &'a [u64], t0: u64, shift: u32, width: u32, extent: u32 },
}

impl<'a> AxisKey<'a> {
    /// `bins` equal time bins covering `[t_min, t_max]` exactly in integer ticks.
    pub fn time(times: &'a [u64], t_min: u64, t_max: u64, bins: u32) -> Self {
        let bins = bins.max(1);
        let span = u128::from(t_max.saturating_sub(t_min)) + 1;
        let bits = 128 - (span - 1).leading_zeros();
        let shift = bits.saturating_sub(32);
        let q_max = ((span - 1) >> shift) as u64;
        let width = (q_max + 1).div_ceil(u64::from(bins)).max(1) as u32;
        Self::Time { times, t0: t_min, shift, width, extent: bins }
    }

    /// Width of one time bin in ticks (1 for id axes).
    pub fn bin_ticks(&self) -> u64 {
        match *self {
            Self::Id { .. } => 1,
            Self::Time { shift, width, .. } => u64::from(width) << shift,
        }
    }

    fn extent(&self) -> u32 {
        match *self {
            Self::Id { extent, .. } | Self::Time { extent, .. } => extent,
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Id { keys, .. } => keys.len(),
            Self::Time { times, .. } => times.len(),
        }
    }

    fn bytes_per_element(&self) -> u64 {
        match self {
            Self::Id { .. } => 4,
            Self::Time { .. } => 8,
        }
    }

    /// Params words: mode, t0_lo, t0_hi, shift, width.
    fn params(&self) -> [u32; 5] {
        match *self {
            Self::Id { .. } => [0, 0, 0, 0, 1],
            Self::Time { t0, shift, width, .. } => [1, t0 as u32, (t0 >> 32) as u32, shift, width],
        }
    }

    fn words(&self, range: std::ops::Range<usize>) -> &'a [u32] {
        match *self {
            Self::Id { keys, .. } => &keys[range],
            Self::Time { times, .. } => bytemuck::cast_slice(&times[range]),
        }
    }
}

/// Input of stage (a): one key per axis per element, optional weights (default 1).
#[derive(Clone, Copy, Debug)]
pub struct HeatmapInput<'a> {
    pub x: AxisKey<'a>,
    pub y: AxisKey<'a>,
    pub weights: Option<&'a [u32]>,
}

/// Output of stage (a): `rows x cols` cells, row-major (`cell = y * cols + x`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeatmapGrid {
    pub cols: u32,
    pub rows: u32,
    pub counts: Vec<u32>,
    pub sums: Vec<u64>,
}

impl HeatmapGrid {
    pub fn count(&self, x: u32, y: u32) -> u32 {
        self.counts[(y * self.cols + x) as usize]
    }

    pub fn sum(&self, x: u32, y: u32) -> u64 {
        self.sums[(y * self.cols + x) as usize]
    }

    /// Sum of each row's weights over all columns.
    pub fn row_sums(&self) -> Vec<u64> {
        self.sums.chunks(self.cols.max(1) as usize).map(|r| r.iter().sum()).collect()
    }
}

/// Records stage (a); downloads counts then sums.
pub fn record<'a>(input: &HeatmapInput<'a>, max_binding_bytes: u64) -> Result<Recording<'a>, StageError> {
    let n = input.x.len();
    if input.y.len() != n || input.weights.is_some_and(|w| w.len() != n) {
        return Err(StageError::Input("heatmap key and weight columns differ in length".into()));
    }
    let (cols, rows) = (input.x.extent(), input.y.extent());
    let cells = u64::from(cols) * u64::from(rows);
    if cells == 0 {
        return Err(StageError::Input("heatmap grid has no cells".into()));
    }
    check_binding("heatmap sums", cells * 8, max_binding_bytes)?;
    if cells > u64::from(u32::MAX) {
        return Err(StageError::Input(format!("heatmap grid of {cells} cells is too large")));
    }
    let per_element = input.x.bytes_per_element().max(input.y.bytes_per_element()).max(4);
    let mut rec = Recording::default();
    let counts = rec.alloc(cells, "heatmap.counts");
    let sums = rec.alloc(cells * 2, "heatmap.sums");
    let parts: Vec<_> = chunks(n, per_element, max_binding_bytes).collect();
    let most = parts.first().map_or(0, |r| r.len() as u64);
    let weights = input.weights.map(|_| rec.alloc(most, "heatmap.weights"));
    let dummy = rec.alloc(1, "heatmap.no_weights");
    let xb = rec.alloc(most * input.x.bytes_per_element() / 4, "heatmap.x_keys");
    let yb = rec.alloc(most * input.y.bytes_per_element() / 4, "heatmap.y_keys");
    for range in parts {
        let len = range.len() as u32;
        rec.upload(xb, input.x.words(range.clone()));
        rec.upload(yb, input.y.words(range.clone()));
        let wb = match (input.weights, weights) {
            (Some(w), Some(b)) => {
                rec.upload(b, &w[range.clone()]);
                b
            }
            _ => dummy,
        };
        let mut params = vec![len, cols, rows, u32::from(input.weights.is_some())];
        params.extend(input.x.params());
        params.extend(input.y.params());
        params.extend([0, 0]);
        rec.dispatch(Kernel::BinHeatmap, len, params, vec![(1, xb), (2, yb), (3, wb), (4, counts), (5, sums)]);
    }
    rec.download(counts);
    rec.download(sums);
    Ok(rec)
}

/// Runs stage (a) on a runner.
pub fn run(runner: &mut dyn Runner, input: &HeatmapInput<'_>) -> Result<HeatmapGrid, StageError> {
    let rec = record(input, runner.max_binding_bytes())?;
    let mut out = runner.run(&rec)?.into_iter();
    let (Some(counts), Some(sums)) = (out.next(), out.next()) else {
        return Err(StageError::Input("heatmap downloads missing".into()));
    };
    Ok(HeatmapGrid { cols: input.x.extent(), rows: input.y.extent(), counts, sums: words_to_u64(&sums) })
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
}
