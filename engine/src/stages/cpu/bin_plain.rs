//! Stage (a) in plain memory: the same grid as the `bin_heatmap` mirror (bit for bit), at memory
//! speed rather than one atomic add per message.
//!
//! A 1024x1024 grid of counts and 64-bit sums is 12 MiB: scattered into at random, every message
//! misses the cache. So the messages are first partitioned by the block of cells they fall in
//! (a radix partition on the cell's high bits, written as sequential streams), then each block
//! is accumulated in a private sub-grid small enough for the core's L2 cache and copied out once.
//! Threads partition disjoint runs of messages, then own disjoint blocks, so nothing is atomic.
//! A grid that fits the cache already is accumulated per thread and summed.

use rayon::prelude::*;

use crate::stages::{AxisKey, HeatmapGrid, HeatmapInput};

/// Cells of one partition: 16 Ki cells of 12 bytes (count + sum) = 192 KiB, within an L2 cache.
const SPAN_BITS: u32 = 14;
/// Grids up to this many cells are summed in a private grid per thread; larger ones are
/// partitioned. (Private grids of up to 1 Mi cells, 12 MiB each, two of which fit this
/// machine's L3 cache, binned 20M messages into 1024x1024 in 141 ms against the partitioned
/// scatter's 73 ms.)
const PER_THREAD_CELLS: usize = 1 << SPAN_BITS;
/// Most private grids at once.
const MAX_GRIDS: usize = 8;
/// Messages one thread partitions at a time (the partition buffers then stay a few MiB).
const RUN: usize = 1 << 20;

/// Exact `n / d` for every 32-bit `n` with one multiplication (Lemire, Kaser and Kurz, 2019):
/// the division in a time key would otherwise cost more than the rest of the key.
#[derive(Clone, Copy)]
struct Divisor {
    m: u64,
}

impl Divisor {
    fn new(d: u32) -> Self {
        Self { m: (u64::MAX / u64::from(d.max(1))).wrapping_add(1) }
    }

    #[inline]
    fn div(self, n: u32) -> u32 {
        if self.m == 0 {
            // d == 1: u64::MAX / 1 + 1 wraps to 0
            return n;
        }
        ((u128::from(self.m) * u128::from(n)) >> 64) as u32
    }
}

/// One axis, ready to key element `i`: `u32::MAX` where the element is outside the grid. Each
/// kind of axis is a type of its own, so that the loops over elements are compiled for each
/// pair of axes with the keying inlined (a key chosen per element by a `match` was a call per
/// element: a fifth of the binning's time).
trait Axis: Copy + Sync {
    fn at(&self, i: usize) -> u32;
}

#[derive(Clone, Copy)]
struct IdAxis<'a> {
    keys: &'a [u32],
    extent: u32,
}

impl Axis for IdAxis<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> u32 {
        let k = self.keys[i];
        if k < self.extent { k } else { u32::MAX }
    }
}

#[derive(Clone, Copy)]
struct TimeAxis<'a> {
    times: &'a [u64],
    t0: u64,
    shift: u32,
    width: Divisor,
    extent: u32,
}

impl Axis for TimeAxis<'_> {
    /// The mirror's `axis_key`, then its bounds check.
    #[inline(always)]
    fn at(&self, i: usize) -> u32 {
        let t = self.times[i];
        if t < self.t0 {
            return u32::MAX;
        }
        let q = (t - self.t0) >> self.shift;
        if q > u64::from(u32::MAX) {
            return u32::MAX;
        }
        let k = self.width.div(q as u32);
        if k < self.extent { k } else { u32::MAX }
    }
}

#[derive(Clone, Copy)]
struct ScaledAxis<'a> {
    values: &'a [f32],
    lo: f32,
    scale: f32,
    extent: u32,
}

impl Axis for ScaledAxis<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> u32 {
        super::bin_heatmap::scaled_key(self.values[i], self.lo, self.scale, self.extent)
    }
}

/// Calls `$body` with `$name` bound to `$axis` as its own type.
macro_rules! with_axis {
    ($axis:expr, |$name:ident| $body:expr) => {
        match *$axis {
            AxisKey::Id { keys, extent } => {
                let $name = IdAxis { keys, extent };
                $body
            }
            AxisKey::Time { times, t0, shift, width, extent } => {
                let $name = TimeAxis { times, t0, shift, width: Divisor::new(width), extent };
                $body
            }
            AxisKey::Scaled { values, lo, scale, extent } => {
                let $name = ScaledAxis { values, lo, scale, extent };
                $body
            }
        }
    };
}

/// The cell of an element (`u32::MAX`: dropped).
trait CellKey: Sync {
    fn at(&self, i: usize) -> u32;
}

/// The cell of element `i` from its two axes.
struct Cells<X, Y> {
    x: X,
    y: Y,
    cols: u32,
}

impl<X: Axis, Y: Axis> CellKey for Cells<X, Y> {
    #[inline(always)]
    fn at(&self, i: usize) -> u32 {
        let (x, y) = (self.x.at(i), self.y.at(i));
        if x == u32::MAX || y == u32::MAX { u32::MAX } else { y * self.cols + x }
    }
}

/// Bins `input` (already checked by the caller: equal lengths, a non-empty grid of at most
/// `u32::MAX` cells) into a grid equal to the mirror's.
pub fn bin(input: &HeatmapInput<'_>) -> HeatmapGrid {
    let (cols, rows) = (input.x_extent(), input.y_extent());
    let cells = cols as usize * rows as usize;
    let mut counts = vec![0u32; cells];
    let mut sums = vec![0u64; cells];
    bin_into(input, &mut counts, &mut sums);
    HeatmapGrid { cols, rows, counts, sums }
}

/// Adds `input`'s counts and weight sums into a grid of `x_extent * y_extent` cells
/// (`counts.len()` and `sums.len()`; shorter slices are a caller's error and panic). Counts may
/// be `u32` (the stage's grid) or `u64` (totals over many batches).
pub fn bin_into<C>(input: &HeatmapInput<'_>, counts: &mut [C], sums: &mut [u64])
where
    C: Copy + Send + Sync + std::ops::AddAssign + From<u32>,
{
    let cols = input.x_extent();
    let cells = cols as usize * input.y_extent() as usize;
    assert!(counts.len() >= cells && sums.len() >= cells, "grid slices shorter than the grid");
    let n = input.len();
    let weights = input.weights;
    let (counts, sums) = (&mut counts[..cells], &mut sums[..cells]);
    with_axis!(&input.x, |x| with_axis!(&input.y, |y| {
        let keyer = Cells { x, y, cols };
        if cells <= PER_THREAD_CELLS {
            per_thread(&keyer, weights, n, counts, sums);
        } else {
            partitioned(&keyer, weights, n, counts, sums);
        }
    }))
}

/// Grids that fit the cache: each thread sums a share of the elements into a grid of its own
/// (counts, and weights where given: an unweighted sum is the count), then the grids are added
/// chunk by chunk in parallel.
fn per_thread<C>(keyer: &impl CellKey, weights: Option<&[u32]>, n: usize, counts: &mut [C], sums: &mut [u64])
where
    C: Copy + Send + Sync + std::ops::AddAssign + From<u32>,
{
    let cells = counts.len();
    let parts = rayon::current_num_threads().clamp(1, MAX_GRIDS).min(n.div_ceil(1 << 16).max(1));
    let step = n.div_ceil(parts).max(1);
    let grids: Vec<(Vec<u32>, Vec<u64>)> = (0..parts)
        .into_par_iter()
        .map(|p| {
            let range = (p * step).min(n)..((p + 1) * step).min(n);
            let mut c = vec![0u32; cells];
            let mut s = Vec::new();
            match weights {
                Some(w) => {
                    s = vec![0u64; cells];
                    for i in range {
                        let k = keyer.at(i);
                        if k != u32::MAX {
                            c[k as usize] += 1;
                            s[k as usize] += u64::from(w[i]);
                        }
                    }
                }
                None => {
                    for i in range {
                        let k = keyer.at(i);
                        if k != u32::MAX {
                            c[k as usize] += 1;
                        }
                    }
                }
            }
            (c, s)
        })
        .collect();
    const CHUNK: usize = 1 << 14;
    counts.par_chunks_mut(CHUNK).zip(sums.par_chunks_mut(CHUNK)).enumerate().for_each(|(j, (cc, ss))| {
        let (at, len) = (j * CHUNK, cc.len());
        for (c, s) in &grids {
            let c = &c[at..at + len];
            cc.iter_mut().zip(c).for_each(|(a, &b)| *a += C::from(b));
            if s.is_empty() {
                ss.iter_mut().zip(c).for_each(|(a, &b)| *a += u64::from(b));
            } else {
                ss.iter_mut().zip(&s[at..at + len]).for_each(|(a, &b)| *a += b);
            }
        }
    });
}

/// One run's elements by partition: `parts[p]` holds partition `p`'s, each
/// `(cell within the partition) << 32 | weight`.
fn partition_run(
    keyer: &impl CellKey,
    weights: Option<&[u32]>,
    range: std::ops::Range<usize>,
    parts: usize,
) -> Vec<Vec<u64>> {
    let guess = range.len() / parts + range.len() / parts / 8 + 16;
    let mut out: Vec<Vec<u64>> = (0..parts).map(|_| Vec::with_capacity(guess)).collect();
    let mask = (1u32 << SPAN_BITS) - 1;
    match weights {
        Some(w) => {
            for i in range {
                let k = keyer.at(i);
                if k != u32::MAX {
                    out[(k >> SPAN_BITS) as usize].push(u64::from(k & mask) << 32 | u64::from(w[i]));
                }
            }
        }
        None => {
            for i in range {
                let k = keyer.at(i);
                if k != u32::MAX {
                    out[(k >> SPAN_BITS) as usize].push(u64::from(k & mask) << 32 | 1);
                }
            }
        }
    }
    out
}

/// Unweighted elements of one run by partition: `parts[p]` holds partition `p`'s, each its cell
/// within the partition (half the bytes of [`partition_run`]'s items).
fn partition_run_counts(keyer: &impl CellKey, range: std::ops::Range<usize>, parts: usize) -> Vec<Vec<u32>> {
    let guess = range.len() / parts + range.len() / parts / 8 + 16;
    let mut out: Vec<Vec<u32>> = (0..parts).map(|_| Vec::with_capacity(guess)).collect();
    let mask = (1u32 << SPAN_BITS) - 1;
    for i in range {
        let k = keyer.at(i);
        if k != u32::MAX {
            out[(k >> SPAN_BITS) as usize].push(k & mask);
        }
    }
    out
}

/// Large grids: partition runs of elements by cell block, then accumulate each block in cache.
/// Unweighted elements are counted alone (a weight sum is then the count).
fn partitioned<C>(keyer: &impl CellKey, weights: Option<&[u32]>, n: usize, counts: &mut [C], sums: &mut [u64])
where
    C: Copy + Send + Sync + std::ops::AddAssign + From<u32>,
{
    let span = 1usize << SPAN_BITS;
    let parts = counts.len().div_ceil(span);
    // Runs of at most RUN elements, and at least one per thread: a batch of one run would be
    // partitioned by one thread alone.
    let run = RUN.min(n.div_ceil(rayon::current_num_threads().max(1))).max(1);
    if weights.is_none() {
        let runs: Vec<Vec<Vec<u32>>> = (0..n.div_ceil(run))
            .into_par_iter()
            .map(|r| partition_run_counts(keyer, r * run..((r + 1) * run).min(n), parts))
            .collect();
        counts.par_chunks_mut(span).zip(sums.par_chunks_mut(span)).enumerate().for_each(|(p, (counts, sums))| {
            let mut block = vec![0u32; counts.len()];
            for run in &runs {
                for &c in &run[p] {
                    block[c as usize] += 1;
                }
            }
            for ((c, s), &b) in counts.iter_mut().zip(sums.iter_mut()).zip(&block) {
                *c += C::from(b);
                *s += u64::from(b);
            }
        });
        return;
    }
    let runs: Vec<Vec<Vec<u64>>> = (0..n.div_ceil(run))
        .into_par_iter()
        .map(|r| partition_run(keyer, weights, r * run..((r + 1) * run).min(n), parts))
        .collect();
    counts.par_chunks_mut(span).zip(sums.par_chunks_mut(span)).enumerate().for_each(|(p, (counts, sums))| {
        for run in &runs {
            for &item in &run[p] {
                let c = (item >> 32) as usize;
                counts[c] += C::from(1);
                sums[c] += item & 0xffff_ffff;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisor_is_exact() {
        for d in [1u32, 2, 3, 7, 10, 1000, 65_537, 1 << 31, u32::MAX - 1, u32::MAX] {
            let dv = Divisor::new(d);
            for n in [0u32, 1, 2, d - 1, d, d.wrapping_add(1), 12_345_678, u32::MAX - 1, u32::MAX] {
                assert_eq!(dv.div(n), n / d, "{n} / {d}");
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let (n, d) = ((s >> 32) as u32, (s as u32 >> (s % 31)).max(1));
            assert_eq!(Divisor::new(d).div(n), n / d, "{n} / {d}");
        }
    }
}
