//! Stage (c): reductions of one column — min, max, sum and histogram — for `u32` and `f32`
//! columns. Shader: `reduce.wgsl` beside this file; CPU mirror: [`mirror`].
//!
//! `u32` results are exact. For `f32`, min and max are exact; the sum is formed from one partial
//! per workgroup (fixed tree order) added on the host in `f64`, so GPU and CPU agree to within
//! float rounding of the partials (the tests use a relative tolerance of 1e-6).

pub mod mirror;

use super::{Kernel, Recording, Runner, StageError, chunks, workgroups};

/// Min, max and sum of a column (`None` for an empty column or one of NaNs only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColumnStats<T: HasSum> {
    pub min: Option<T>,
    pub max: Option<T>,
    /// `u64` for `u32` columns, `f64` for `f32` columns.
    pub sum: T::Sum,
    pub count: usize,
}

pub trait HasSum {
    type Sum: Copy + std::fmt::Debug + PartialEq;
}
impl HasSum for u32 {
    type Sum = u64;
}
impl HasSum for f32 {
    type Sum = f64;
}

/// Histogram counts over `bins` equal bins from `lo`; values outside are not counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    pub counts: Vec<u32>,
}

/// Order-preserving map of f32 bits to u32 (mirror of `f32_key` in reduce.wgsl).
pub fn f32_key(v: f32) -> u32 {
    let b = v.to_bits();
    if b & 0x8000_0000 != 0 { !b } else { b | 0x8000_0000 }
}

/// Inverse of [`f32_key`].
pub fn f32_from_key(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 { k & 0x7fff_ffff } else { !k })
}

pub fn stats_u32(runner: &mut dyn Runner, values: &[u32]) -> Result<ColumnStats<u32>, StageError> {
    let mut rec = Recording::default();
    let acc = rec.alloc(4, "reduce.acc");
    rec.upload(acc, vec![u32::MAX, 0, 0, 0]);
    let parts: Vec<_> = chunks(values.len(), 4, runner.max_binding_bytes()).collect();
    let col = rec.alloc(parts.first().map_or(0, |r| r.len() as u64), "reduce.values");
    for range in parts {
        let len = range.len() as u32;
        rec.upload(col, &values[range]);
        rec.dispatch(Kernel::ReduceU32, len, vec![len, 0, 0, 0, 0, 0, 0, 0], vec![(1, col), (3, acc)]);
    }
    rec.download(acc);
    let out = runner.run(&rec)?;
    let a = out.first().ok_or_else(|| StageError::Input("reduce download missing".into()))?;
    let some = !values.is_empty();
    Ok(ColumnStats {
        min: some.then_some(a[0]),
        max: some.then_some(a[1]),
        sum: u64::from(a[2]) | (u64::from(a[3]) << 32),
        count: values.len(),
    })
}

pub fn stats_f32(runner: &mut dyn Runner, values: &[f32]) -> Result<ColumnStats<f32>, StageError> {
    let limit = runner.max_binding_bytes();
    let ranges: Vec<_> = chunks(values.len(), 4, limit).collect();
    let partial_count: u64 = ranges
        .iter()
        .map(|r| {
            let (x, y) = workgroups(r.len() as u32);
            u64::from(x) * u64::from(y)
        })
        .sum();
    super::check_binding("reduce partials", partial_count * 4, limit)?;
    let mut rec = Recording::default();
    let acc = rec.alloc(2, "reduce.acc");
    rec.upload(acc, vec![u32::MAX, 0]);
    let partials = rec.alloc(partial_count, "reduce.partials");
    let col = rec.alloc(ranges.first().map_or(0, |r| r.len() as u64), "reduce.values");
    let mut offset = 0u32;
    for range in ranges {
        let len = range.len() as u32;
        rec.upload(col, bytemuck::cast_slice::<f32, u32>(&values[range]));
        rec.dispatch(
            Kernel::ReduceF32,
            len,
            vec![len, offset, 0, 0, 0, 0, 0, 0],
            vec![(2, col), (3, acc), (4, partials)],
        );
        let (x, y) = workgroups(len);
        offset += x * y;
    }
    rec.download(acc);
    rec.download(partials);
    let out = runner.run(&rec)?;
    let (Some(a), Some(p)) = (out.first(), out.get(1)) else {
        return Err(StageError::Input("reduce downloads missing".into()));
    };
    let seen = a[0] <= a[1];
    Ok(ColumnStats {
        min: seen.then(|| f32_from_key(a[0])),
        max: seen.then(|| f32_from_key(a[1])),
        sum: p.iter().map(|&b| f64::from(f32::from_bits(b))).sum(),
        count: values.len(),
    })
}

fn histogram(
    runner: &mut dyn Runner,
    kernel: Kernel,
    words: &[u32],
    bins: u32,
    lo_bits: u32,
    scale_bits: u32,
) -> Result<Histogram, StageError> {
    if bins == 0 {
        return Err(StageError::Input("a histogram needs at least one bin".into()));
    }
    super::check_binding("histogram", u64::from(bins) * 4, runner.max_binding_bytes())?;
    let mut rec = Recording::default();
    let hist = rec.alloc(u64::from(bins), "histogram.counts");
    let parts: Vec<_> = chunks(words.len(), 4, runner.max_binding_bytes()).collect();
    let col = rec.alloc(parts.first().map_or(0, |r| r.len() as u64), "histogram.values");
    let binding = if kernel == Kernel::HistogramU32 { 1 } else { 2 };
    for range in parts {
        let len = range.len() as u32;
        rec.upload(col, &words[range]);
        let params = vec![len, 0, bins, lo_bits, scale_bits, 0, 0, 0];
        rec.dispatch(kernel, len, params, vec![(binding, col), (5, hist)]);
    }
    rec.download(hist);
    let mut out = runner.run(&rec)?;
    let counts = out.pop().ok_or_else(|| StageError::Input("histogram download missing".into()))?;
    Ok(Histogram { counts })
}

/// Histogram of a `u32` column: bin = (v - lo) / width.
pub fn histogram_u32(
    runner: &mut dyn Runner,
    values: &[u32],
    lo: u32,
    width: u32,
    bins: u32,
) -> Result<Histogram, StageError> {
    if width == 0 {
        return Err(StageError::Input("histogram bin width must be positive".into()));
    }
    histogram(runner, Kernel::HistogramU32, values, bins, lo, width)
}

/// Histogram of an `f32` column: `bins` equal bins over `[lo, hi)`.
pub fn histogram_f32(
    runner: &mut dyn Runner,
    values: &[f32],
    lo: f32,
    hi: f32,
    bins: u32,
) -> Result<Histogram, StageError> {
    if !lo.is_finite() || !hi.is_finite() || hi <= lo {
        return Err(StageError::Input(format!("histogram range [{lo}, {hi}) is empty or not finite")));
    }
    let scale = bins as f32 / (hi - lo);
    histogram(runner, Kernel::HistogramF32, bytemuck::cast_slice(values), bins, lo.to_bits(), scale.to_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_key_preserves_order() {
        let v = [f32::NEG_INFINITY, -3.5, -0.0, 0.0, 1e-30, 2.0, f32::INFINITY];
        for w in v.windows(2) {
            assert!(f32_key(w[0]) <= f32_key(w[1]), "{w:?}");
        }
        for x in v {
            assert_eq!(f32_from_key(f32_key(x)).to_bits(), x.to_bits());
        }
    }
}
