//! Counting columns into grids: elements keyed per axis (an id, an exact integer time bin, a
//! coordinate's bin) into `rows x cols` cells of counts and exact 64-bit weight sums, in plain
//! memory. The pyramid is summed with it, and the heatmap stage's CPU runner runs it; its
//! recording for the GPU and the kernel's mirror are `exaviz_compute::bin_heatmap`, and this
//! gives the mirror's grid bit for bit.
//!
//! At memory speed rather than one atomic add per message:
//! A 1024x1024 grid of counts and 64-bit sums is 12 MiB: scattered into at random, every message
//! misses the cache. So weighted messages are first partitioned by the block of cells they fall
//! in (a radix partition on the cell's high bits, written as sequential streams), then each block
//! is accumulated in a private sub-grid small enough for the core's L2 cache and copied out once.
//! Threads partition disjoint runs of messages, then own disjoint blocks, so nothing is atomic.
//! A weighted grid that fits the cache already is accumulated per thread and summed. Unweighted
//! grids need only counts: up to 2M cells each thread counts into 8-bit counts of its own;
//! larger ones are partitioned, 16 bits an element.

use rayon::prelude::*;

/// How one axis of the grid is keyed.
#[derive(Clone, Copy, Debug)]
pub enum AxisKey<'a> {
    /// The key is the value itself (a location, node or link id); keys `>= extent` are dropped.
    Id { keys: &'a [u32], extent: u32 },
    /// The key is a time bin: `u32((t - t0) >> shift) / width`; see [`AxisKey::time`].
    Time { times: &'a [u64], t0: u64, shift: u32, width: u32, extent: u32 },
    /// The key is a coordinate's bin, as Datashader's canvas maps a point: `f = (v - lo) *
    /// scale`, the bin `min(floor(f), extent - 1)` where `0 <= f <= extent` (so the greatest
    /// value lands in the last bin), the element dropped elsewhere and where `v` is NaN.
    Scaled { values: &'a [f32], lo: f32, scale: f32, extent: u32 },
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

    /// `bins` equal bins covering `[lo, hi]`, the values' bounds: the scale is lowered by
    /// the rounding it may need so that `hi` itself lands in the last bin, not past it.
    pub fn scaled(values: &'a [f32], lo: f32, hi: f32, bins: u32) -> Self {
        let bins = bins.max(1);
        let mut scale = bins as f32 / (hi - lo).max(f32::MIN_POSITIVE);
        while scale > 0.0 && (hi - lo) * scale > bins as f32 {
            scale = scale.next_down();
        }
        Self::Scaled { values, lo, scale, extent: bins }
    }

    /// Width of one time bin in ticks (1 for id and coordinate axes).
    pub fn bin_ticks(&self) -> u64 {
        match *self {
            Self::Id { .. } | Self::Scaled { .. } => 1,
            Self::Time { shift, width, .. } => u64::from(width) << shift,
        }
    }

    /// The number of bins along the axis.
    pub fn extent(&self) -> u32 {
        match *self {
            Self::Id { extent, .. } | Self::Time { extent, .. } | Self::Scaled { extent, .. } => extent,
        }
    }

    /// The number of elements keyed.
    pub fn len(&self) -> usize {
        match self {
            Self::Id { keys, .. } => keys.len(),
            Self::Time { times, .. } => times.len(),
            Self::Scaled { values, .. } => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

impl HeatmapInput<'_> {
    /// Elements (the length of every column).
    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Columns of the grid.
    pub fn x_extent(&self) -> u32 {
        self.x.extent()
    }

    /// Rows of the grid.
    pub fn y_extent(&self) -> u32 {
        self.y.extent()
    }
}

/// A key outside the grid: the element is dropped.
const INVALID: u32 = 0xffff_ffff;

/// The bin of coordinate `v`, or [`INVALID`] outside `[lo, lo + extent / scale]` (and for
/// NaN); the heatmap kernel's and its mirror's arithmetic.
pub fn scaled_key(v: f32, lo: f32, scale: f32, extent: u32) -> u32 {
    let f = (v - lo) * scale;
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(f >= 0.0 && f <= extent as f32) {
        return INVALID;
    }
    (f as u32).min(extent - 1)
}

/// Cells of one partition of a weighted grid: 16 Ki cells of 12 bytes (count + sum) = 192 KiB, within an L2 cache.
const SPAN_BITS: u32 = 14;
/// Weighted grids up to this many cells are summed in a private grid per thread; larger ones
/// are partitioned. (Private grids of up to 1 Mi cells, 12 MiB each, two of which fit this
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

    /// The keys of elements `start..start + out.len()`, in `out`.
    #[inline(always)]
    fn fill(&self, start: usize, out: &mut [u32]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = self.at(start + j);
        }
    }
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
        scaled_key(self.values[i], self.lo, self.scale, self.extent)
    }

    /// As `at`, without a branch, so that the loop runs on vectors: the bin clamped first is the
    /// same (`min(floor(f), extent - 1) == floor(min(f, extent - 1))` for an integer bound), and
    /// exact while the extent is a float's integer.
    #[inline(always)]
    fn fill(&self, start: usize, out: &mut [u32]) {
        let values = &self.values[start..start + out.len()];
        if self.extent > 1 << 22 {
            for (o, &v) in out.iter_mut().zip(values) {
                *o = scaled_key(v, self.lo, self.scale, self.extent);
            }
            return;
        }
        let (extent, last) = (self.extent as f32, (self.extent - 1) as f32);
        const MAGIC: f32 = 8_388_608.0; // 2^23: adding it rounds a float below it to an integer
        for (o, &v) in out.iter_mut().zip(values) {
            let f = (v - self.lo) * self.scale;
            let c = f.max(0.0).min(last);
            let big = c + MAGIC;
            let k = (big.to_bits() & 0x7f_ffff) - u32::from(big - MAGIC > c);
            *o = if f >= 0.0 && f <= extent { k } else { u32::MAX };
        }
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

    /// The cells of elements `start..start + out.len()`, in `out` (`spare` as long: scratch).
    fn fill(&self, start: usize, out: &mut [u32], spare: &mut [u32]);
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

    #[inline(always)]
    fn fill(&self, start: usize, out: &mut [u32], spare: &mut [u32]) {
        self.x.fill(start, out);
        self.y.fill(start, spare);
        for (o, &y) in out.iter_mut().zip(spare.iter()) {
            let x = *o;
            let cell = y.wrapping_mul(self.cols).wrapping_add(x);
            *o = if x == u32::MAX || y == u32::MAX { u32::MAX } else { cell };
        }
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
        match weights {
            None if cells <= PRIVATE_COUNT_CELLS => private_counts(&keyer, n, counts, sums),
            None => partitioned_counts(&keyer, n, counts, sums),
            Some(w) if cells <= PER_THREAD_CELLS => per_thread(&keyer, w, n, counts, sums),
            Some(w) => partitioned(&keyer, w, n, counts, sums),
        }
    }))
}

/// Weighted grids that fit the cache: each thread sums a share of the elements into a grid of
/// counts and weights of its own, then the grids are added chunk by chunk in parallel.
fn per_thread<C>(keyer: &impl CellKey, weights: &[u32], n: usize, counts: &mut [C], sums: &mut [u64])
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
            let mut s = vec![0u64; cells];
            for i in range {
                let k = keyer.at(i);
                if k != u32::MAX {
                    c[k as usize] += 1;
                    s[k as usize] += u64::from(weights[i]);
                }
            }
            (c, s)
        })
        .collect();
    const CHUNK: usize = 1 << 14;
    counts.par_chunks_mut(CHUNK).zip(sums.par_chunks_mut(CHUNK)).enumerate().for_each(|(j, (cc, ss))| {
        let (at, len) = (j * CHUNK, cc.len());
        for (c, s) in &grids {
            cc.iter_mut().zip(&c[at..at + len]).for_each(|(a, &b)| *a += C::from(b));
            ss.iter_mut().zip(&s[at..at + len]).for_each(|(a, &b)| *a += b);
        }
    });
}

/// One run's elements by partition: `parts[p]` holds partition `p`'s, each
/// `(cell within the partition) << 32 | weight`.
fn partition_run(keyer: &impl CellKey, weights: &[u32], range: std::ops::Range<usize>, parts: usize) -> Vec<Vec<u64>> {
    let guess = range.len() / parts + range.len() / parts / 8 + 16;
    let mut out: Vec<Vec<u64>> = (0..parts).map(|_| Vec::with_capacity(guess)).collect();
    let mask = (1u32 << SPAN_BITS) - 1;
    for i in range {
        let k = keyer.at(i);
        if k != u32::MAX {
            out[(k >> SPAN_BITS) as usize].push(u64::from(k & mask) << 32 | u64::from(weights[i]));
        }
    }
    out
}

/// Unweighted grids of up to this many cells (2 MiB of 8-bit counts) are counted in a grid per
/// thread; larger ones are partitioned.
const PRIVATE_COUNT_CELLS: usize = 1 << 21;

/// Unweighted grids that fit a shared cache: each thread counts a share of the elements into a
/// grid of 8-bit counts of its own (a byte a cell: at 1024x1024, 1 MiB, which stays in a core's
/// 2 MiB L2 cache beside the streamed keys; a count that wraps is noted in a list, once per 256),
/// keyed 256 at a time on vectors where the axes allow; the dropped elements land in one cell
/// more, so the loop has no branch but the rare wrap. Then the grids are added chunk by chunk in
/// parallel. (At 20M points into 1024x1024 this took 30-45 ms against 57-84 ms for the
/// partitioned waves below, alternating calls; 16-bit counts against 32-bit ones, 31-33 ms
/// against 40-42 ms; on a machine with 2 MiB of L2 a core, 8-bit counts against 16-bit ones,
/// 33-44 ms against 52-80 ms, medians of alternating calls.)
fn private_counts<C>(keyer: &impl CellKey, n: usize, counts: &mut [C], sums: &mut [u64])
where
    C: Copy + Send + Sync + std::ops::AddAssign + From<u32>,
{
    let cells = counts.len();
    let threads = rayon::current_num_threads().clamp(1, MAX_GRIDS).min(n.div_ceil(1 << 16).max(1));
    let per = n.div_ceil(threads).max(1);
    // Per thread: the counts modulo 2^8, and each cell whose count wrapped, once per wrap.
    let grids: Vec<(Vec<u8>, Vec<u32>)> = (0..threads)
        .into_par_iter()
        .map(|t| {
            let (mut low, mut wraps) = (vec![0u8; cells + 1], Vec::new());
            let (mut keys, mut spare) = ([0u32; 256], [0u32; 256]);
            let (mut i, end) = ((t * per).min(n), ((t + 1) * per).min(n));
            while i < end {
                let m = (end - i).min(256);
                keyer.fill(i, &mut keys[..m], &mut spare[..m]);
                for &k in &keys[..m] {
                    let k = k.min(cells as u32);
                    let c = low[k as usize].wrapping_add(1);
                    low[k as usize] = c;
                    if c == 0 {
                        wraps.push(k);
                    }
                }
                i += m;
            }
            (low, wraps)
        })
        .collect();
    const CHUNK: usize = 1 << 14;
    counts.par_chunks_mut(CHUNK).zip(sums.par_chunks_mut(CHUNK)).enumerate().for_each(|(j, (cc, ss))| {
        let (at, len) = (j * CHUNK, cc.len());
        for (low, _) in &grids {
            for ((c, s), &b) in cc.iter_mut().zip(ss.iter_mut()).zip(&low[at..at + len]) {
                *c += C::from(u32::from(b));
                *s += u64::from(b);
            }
        }
    });
    for &k in grids.iter().flat_map(|(_, wraps)| wraps) {
        if let (Some(c), Some(s)) = (counts.get_mut(k as usize), sums.get_mut(k as usize)) {
            *c += C::from(1 << 8);
            *s += 1 << 8;
        }
    }
}

/// Cells of one partition of an unweighted grid: 64 Ki, so that an element's cell within its
/// partition fits 16 bits and the partition's counts (256 KiB) stay in an L2 cache.
const COUNT_SPAN_BITS: u32 = 16;
/// Elements one thread partitions per wave: its partitions (2 bytes an element, 2 MiB) are
/// still in the cache when they are counted, and are reused by the next wave.
const WAVE: usize = 1 << 20;

/// Large grids, unweighted: in waves, each thread partitions a run of elements by block of cells
/// into buffers of its own (each element its cell within the block, 16 bits), then each block is
/// counted by one thread from every thread's buffer. The buffers are reused wave after wave and
/// stay in a shared cache (materialised whole, 4 bytes an element, they were written to memory
/// and read back; the waves were about a tenth faster at 20M points into 1024x1024).
fn partitioned_counts<C>(keyer: &impl CellKey, n: usize, counts: &mut [C], sums: &mut [u64])
where
    C: Copy + Send + Sync + std::ops::AddAssign + From<u32>,
{
    let span = 1usize << COUNT_SPAN_BITS;
    let parts = counts.len().div_ceil(span);
    let threads = rayon::current_num_threads().clamp(1, MAX_GRIDS);
    let per = WAVE.min(n.div_ceil(threads)).max(1);
    let mut buffers: Vec<Vec<Vec<u16>>> = (0..threads)
        .map(|_| (0..parts).map(|_| Vec::with_capacity(per / parts + per / parts / 8 + 16)).collect())
        .collect();
    let mut block_counts = vec![0u32; counts.len()];
    let mask = (1u32 << COUNT_SPAN_BITS) - 1;
    let mut start = 0;
    while start < n {
        buffers.par_iter_mut().enumerate().for_each(|(t, parts)| {
            parts.iter_mut().for_each(Vec::clear);
            let (mut keys, mut spare) = ([0u32; 256], [0u32; 256]);
            let (mut i, end) = ((start + t * per).min(n), (start + (t + 1) * per).min(n));
            while i < end {
                let m = (end - i).min(256);
                keyer.fill(i, &mut keys[..m], &mut spare[..m]);
                for &k in &keys[..m] {
                    if k != u32::MAX {
                        parts[(k >> COUNT_SPAN_BITS) as usize].push((k & mask) as u16);
                    }
                }
                i += m;
            }
        });
        block_counts.par_chunks_mut(span).enumerate().for_each(|(p, block)| {
            for parts in &buffers {
                for &c in &parts[p] {
                    block[c as usize] += 1;
                }
            }
        });
        start = start.saturating_add(threads * per);
    }
    const CHUNK: usize = 1 << 14;
    counts.par_chunks_mut(CHUNK).zip(sums.par_chunks_mut(CHUNK)).zip(block_counts.par_chunks(CHUNK)).for_each(
        |((counts, sums), block)| {
            for ((c, s), &b) in counts.iter_mut().zip(sums.iter_mut()).zip(block) {
                *c += C::from(b);
                *s += u64::from(b);
            }
        },
    );
}

/// Large weighted grids: partition runs of elements by cell block, then accumulate each block in
/// cache.
fn partitioned<C>(keyer: &impl CellKey, weights: &[u32], n: usize, counts: &mut [C], sums: &mut [u64])
where
    C: Copy + Send + Sync + std::ops::AddAssign + From<u32>,
{
    let span = 1usize << SPAN_BITS;
    let parts = counts.len().div_ceil(span);
    // Runs of at most RUN elements, and at least one per thread: a batch of one run would be
    // partitioned by one thread alone.
    let run = RUN.min(n.div_ceil(rayon::current_num_threads().max(1))).max(1);
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

    /// The branchless keys of a coordinate axis equal the mirror's `scaled_key` for every value
    /// that matters: bin edges and the ties between them, both zeros, the ends, NaN and the
    /// infinities, subnormals, and random values, at extents on both sides of the exact range.
    #[test]
    fn scaled_fill_equals_the_mirror() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for (lo, hi, extent) in [
            (0.0f32, 1024.0f32, 1024u32),
            (-3.0, 5.0, 7),
            (0.0, 1.0, 1),
            (10.0, 1e6, 1 << 22),
            (0.0, 9e6, (1 << 22) + 1),
        ] {
            let mut values = vec![
                0.0,
                -0.0,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::MIN_POSITIVE / 4.0,
                -f32::MIN_POSITIVE / 4.0,
                lo,
                hi,
                hi.next_up(),
                hi.next_down(),
                lo.next_down(),
                lo.next_up(),
            ];
            let width = (hi - lo) / extent as f32;
            for k in 0..extent.min(4096) {
                let b = lo + width * k as f32;
                values.extend([b, b.next_up(), b.next_down(), b + width / 2.0, (b + width / 2.0).next_up()]);
            }
            for _ in 0..20_000 {
                let r = (next() >> 40) as f32 / (1u64 << 24) as f32;
                values.push(lo - width + r * (hi - lo + 2.0 * width));
            }
            let HeatmapInputAxis { lo: l, scale, extent: e } = scaled_parts(&values, lo, hi, extent);
            let axis = ScaledAxis { values: &values, lo: l, scale, extent: e };
            let mut out = vec![0u32; values.len()];
            for start in (0..values.len()).step_by(256) {
                let end = (start + 256).min(values.len());
                axis.fill(start, &mut out[start..end]);
            }
            for (i, &v) in values.iter().enumerate() {
                let want = crate::bins::scaled_key(v, l, scale, e);
                assert_eq!(out[i], want, "value {v:e} ({lo}..{hi} in {extent})");
            }
        }
    }

    struct HeatmapInputAxis {
        lo: f32,
        scale: f32,
        extent: u32,
    }

    fn scaled_parts(values: &[f32], lo: f32, hi: f32, bins: u32) -> HeatmapInputAxis {
        match AxisKey::scaled(values, lo, hi, bins) {
            AxisKey::Scaled { lo, scale, extent, .. } => HeatmapInputAxis { lo, scale, extent },
            _ => unreachable!("a coordinate axis"),
        }
    }

    /// Counts that pass 2^16 in every thread's grid (a wrap of its 8-bit counts, thousands of
    /// times over) are whole, in a grid counted per thread and in one partitioned.
    #[test]
    fn counts_past_sixteen_bits_are_whole() {
        let n = 1_200_000usize;
        let xs: Vec<u32> = (0..n as u32).map(|i| u32::from(i % 5 == 0)).collect();
        let ys = vec![1u32; n];
        for (cols, rows) in [(2u32, 3u32), (2, 1_500_000)] {
            let input = HeatmapInput {
                x: AxisKey::Id { keys: &xs, extent: cols },
                y: AxisKey::Id { keys: &ys, extent: rows },
                weights: None,
            };
            let grid = bin(&input);
            let (one, zero) = ((cols + 1) as usize, cols as usize);
            assert_eq!((grid.counts[zero], grid.counts[one]), (n as u32 * 4 / 5, n as u32 / 5), "{cols}x{rows}");
            assert_eq!((grid.sums[zero], grid.sums[one]), (n as u64 * 4 / 5, n as u64 / 5), "{cols}x{rows}");
            assert_eq!(grid.counts.iter().map(|&c| u64::from(c)).sum::<u64>(), n as u64);
        }
    }

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
