//! A multi-resolution pyramid of a trace: what a zoomed-out picture needs, summed once, so a
//! picture of a billion messages reads megabytes instead of rescanning the trace.
//!
//! Level 0 is the finest; each level above halves the time bins and the rank blocks (each block
//! holds twice the ranks) and is the exact sum of the one below. Per level:
//! - messages: count and byte sum per (sender block, receiver block, time bin of the send);
//! - states: ticks spent per (rank block, state, time bin), an interval's ticks split exactly
//!   over the bins it overlaps.
//!
//! Beside the levels, at the state tiles' finest blocks and bins, [`Lines`]: per (time bin, rank
//! block) the messages sent in the bin whose line from sender to receiver crosses the block,
//! which is what a timeline draws, at a time resolution the message cube cannot afford.
//!
//! It is built in one streaming pass over batches of rows ([`PyramidBuilder`]), with the
//! partitioned scatter of the CPU binning stage, so the rows never need to be in memory at once.

use rayon::prelude::*;

use crate::bins as bin_heatmap_plain;
use crate::bins::{AxisKey, HeatmapInput};
use crate::{Intervals, Messages};

/// The shape of a pyramid's finest level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// First tick covered.
    pub t0: u64,
    /// Ticks per finest time bin (a power of two).
    pub bin_ticks: u64,
    /// Time bins of the message cube and of the state tiles at level 0.
    pub message_bins: u32,
    pub state_bins: u32,
    pub ranks: u32,
    /// Ranks per block of the state tiles at level 0 (a power of two).
    pub block: u32,
    /// Ranks per block of the message cube at level 0 (a power of two, at least `block`).
    pub message_block: u32,
    /// State classes (interval kinds); kinds at or above the last are counted in it.
    pub states: u32,
}

impl Shape {
    /// A shape for ranks `ranks`, times `t0..=t1` and `states` state kinds: state tiles of at
    /// most 1,024 rank blocks by 2,048 bins (48 MB for 3 states), a message cube of at most
    /// 256x256 blocks by 128 bins (134 MB).
    pub fn new(t0: u64, t1: u64, ranks: u32, states: u32) -> Self {
        let span = t1.saturating_sub(t0).saturating_add(1);
        let state_bins = 2048u32;
        let bin_ticks = span.div_ceil(u64::from(state_bins)).max(1).next_power_of_two();
        let block = ranks.div_ceil(1024).max(1).next_power_of_two();
        let message_block = message_block(ranks);
        Self { t0, bin_ticks, message_bins: 128, state_bins, ranks, block, message_block, states: states.clamp(1, 64) }
    }

    /// Rank blocks of the state tiles at level 0.
    pub fn blocks(&self) -> u32 {
        self.ranks.div_ceil(self.block).max(1)
    }

    /// Rank blocks of the message cube at level 0.
    pub fn message_blocks(&self) -> u32 {
        self.ranks.div_ceil(self.message_block).max(1)
    }

    /// Ticks per message bin at level 0 (message bins are coarser than state bins).
    pub fn message_bin_ticks(&self) -> u64 {
        self.bin_ticks * u64::from(self.state_bins / self.message_bins)
    }

    /// Time bins of the per-location tiles ([`LocationTiles`]): as many as keep them within
    /// [`LOCATION_CELLS`] cells, a power of two from [`LEAST_LOCATION_BINS`] to 256 (and no more
    /// than the state bins); `None` where even the fewest would not fit.
    pub fn location_bins(&self) -> Option<u32> {
        let per_bin = u64::from(self.ranks.max(1)) * u64::from(self.states.max(1));
        let most = (LOCATION_CELLS / per_bin).min(256).min(u64::from(self.state_bins)) as u32;
        (most >= LEAST_LOCATION_BINS.min(self.state_bins)).then(|| 1u32 << (31 - most.max(1).leading_zeros()))
    }
}

/// Most cells of a pyramid's per-location tiles (u64 each: 128 MB): 65,536 locations in 4
/// states get 64 time bins, in 64 states 4.
pub const LOCATION_CELLS: u64 = 1 << 24;
/// Fewest time bins of the per-location tiles worth keeping.
pub const LEAST_LOCATION_BINS: u32 = 4;

/// Per location, the ticks spent in each state in a few coarse time bins over the whole span:
/// what tells locations apart where a block of the state tiles gathers many, so that a picture
/// drawn from the pyramid can group locations by behaviour and draw the one that differs in a
/// row of its own ([`Shape::location_bins`]). The bins are level 0's state bins merged a power
/// of two at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocationTiles {
    pub bins: u32,
    pub bin_ticks: u64,
    /// `[location][state][bin]`.
    pub ticks: Vec<u64>,
}

impl LocationTiles {
    /// Empty tiles for `shape` (`None` where it keeps none).
    pub fn new(shape: &Shape) -> Option<Self> {
        let bins = shape.location_bins()?;
        let bin_ticks = shape.bin_ticks * u64::from(shape.state_bins / bins);
        let cells = shape.ranks as usize * shape.states as usize * bins as usize;
        Some(Self { bins, bin_ticks, ticks: vec![0; cells] })
    }

    /// Location `l`'s ticks in state `state` (of `states`) in bin `bin`.
    pub fn at(&self, l: u32, state: u32, states: u32, bin: u32) -> u64 {
        self.ticks[((l as usize * states as usize) + state as usize) * self.bins as usize + bin as usize]
    }
}

/// Most cells (pair and time bin with messages) of a pyramid's [`PairTiles`]: 4M, 28 bytes
/// each (112 MB). FD4's halo exchange of 65,536 ranks gets 16 time bins at 1M messages and 4
/// at 1e8 (its far partners, drawn at random, make 2.7M pairs in 3.5M cells); where even one
/// bin per pair would not fit (an all-to-all of thousands of ranks), none are kept.
pub const PAIR_CELLS: usize = 1 << 22;
/// Most time bins of the [`PairTiles`].
pub const PAIR_BINS: u32 = 16;

/// Per pair of locations that exchanged messages, its messages and bytes in each of a few
/// coarse time bins of the send: what a matrix drawn from the pyramid needs to give the ranks
/// sending or receiving far more than the others a row and a column of their own, exact at the
/// bins' resolution, where a cell of the message cube gathers hundreds of ranks. Only cells
/// with messages, sorted by (source, destination, bin); the bins are the message cube's level-0
/// bins merged a power of two at a time, as many (at most [`PAIR_BINS`]) as keep the cells
/// within [`PAIR_CELLS`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairTiles {
    pub bins: u32,
    pub bin_ticks: u64,
    pub source: Vec<u32>,
    pub destination: Vec<u32>,
    pub bin: Vec<u32>,
    pub count: Vec<u64>,
    pub bytes: Vec<u64>,
}

impl PairTiles {
    /// The bins overlapping ticks `window` (absolute, both ends in) of a pyramid starting at `t0`.
    pub fn bins_over(&self, t0: u64, window: (u64, u64)) -> std::ops::Range<u32> {
        bins_over(t0, self.bin_ticks, self.bins, window)
    }

    /// Each pair's messages and bytes in bins `bins`, pairs with none left out.
    pub fn sums(&self, bins: std::ops::Range<u32>) -> Vec<crate::pair_index::PairSum> {
        let mut out: Vec<crate::pair_index::PairSum> = Vec::new();
        for k in 0..self.source.len() {
            if !bins.contains(&self.bin[k]) {
                continue;
            }
            let (s, d) = (self.source[k], self.destination[k]);
            match out.last_mut() {
                Some(p) if (p.source, p.destination) == (s, d) => {
                    p.messages += self.count[k];
                    p.bytes += self.bytes[k];
                }
                _ => out.push(crate::pair_index::PairSum {
                    source: s,
                    destination: d,
                    messages: self.count[k],
                    bytes: self.bytes[k],
                }),
            }
        }
        out
    }

    /// Cells held.
    pub fn len(&self) -> usize {
        self.source.len()
    }

    pub fn is_empty(&self) -> bool {
        self.source.is_empty()
    }
}

/// The pair summer's map: FxHash, as the other integer-keyed maps here (SipHash, the standard
/// map's, would double the pass's cost at 1e8 messages).
type KeyMap = rustc_hash::FxHashMap<u64, (u64, u64)>;

/// Sums [`PairTiles`] from batches of messages in any order: a map from (source, destination,
/// bin) to messages and bytes, whose bins halve whenever its cells pass [`PAIR_CELLS`] (so
/// that the bins at the end are the most that fit, whatever the order and the split into
/// parts: cells only grow as messages come), and which gives up past them at one bin.
#[derive(Clone, Debug)]
pub struct PairSummer {
    t0: u64,
    ranks: u32,
    /// log2 of the ticks per bin, and the bins.
    shift: u32,
    bins: u32,
    /// log2 of the ticks per bin it started with (what [`PairSummer::add_cell`] takes).
    first_shift: u32,
    map: KeyMap,
    /// Most cells ([`PAIR_CELLS`]).
    cap: usize,
    /// Past the cells at one bin: no tiles.
    gave_up: bool,
}

impl PairSummer {
    /// A summer for `shape`'s messages (`None` where its ranks do not fit a key: past 2^30).
    pub fn new(shape: &Shape) -> Option<Self> {
        Self::with_cap(shape, PAIR_CELLS)
    }

    /// A summer of at most `cap` cells.
    fn with_cap(shape: &Shape, cap: usize) -> Option<Self> {
        if shape.ranks > 1 << 30 {
            return None;
        }
        let bins = PAIR_BINS.min(shape.message_bins).max(1);
        let bin_ticks = shape.message_bin_ticks() * u64::from(shape.message_bins / bins);
        debug_assert!(bin_ticks.is_power_of_two());
        Some(Self {
            t0: shape.t0,
            ranks: shape.ranks,
            shift: bin_ticks.trailing_zeros(),
            bins,
            first_shift: bin_ticks.trailing_zeros(),
            map: KeyMap::default(),
            cap,
            gave_up: false,
        })
    }

    #[inline]
    fn key(s: u32, d: u32, bin: u32) -> u64 {
        (u64::from(s) << 34) | (u64::from(d) << 4) | u64::from(bin)
    }

    /// Adds messages `m`: those inside the shape's ranks and span.
    pub fn add(&mut self, m: MessageColumns) {
        if self.gave_up {
            return;
        }
        let last = u64::from(self.bins) << self.shift;
        for (((&s, &d), &t), &b) in m.source.iter().zip(m.destination).zip(m.send_time).zip(m.bytes) {
            let Some(dt) = t.checked_sub(self.t0).filter(|&dt| dt < last) else { continue };
            if s >= self.ranks || d >= self.ranks {
                continue;
            }
            let cell = self.map.entry(Self::key(s, d, (dt >> self.shift) as u32)).or_insert((0, 0));
            cell.0 += 1;
            cell.1 += u64::from(b);
        }
        self.fit();
    }

    /// The bins and ticks per bin it started with.
    pub fn first_bins(&self) -> (u32, u64) {
        (self.bins << (self.shift - self.first_shift), 1 << self.first_shift)
    }

    /// Adds a cell summed elsewhere (a query's row): `count` messages and `bytes` bytes from
    /// `s` to `d` in bin `bin` of [`Self::first_bins`]. Cells outside the ranks or bins are
    /// an error.
    pub fn add_cell(&mut self, s: u32, d: u32, bin: u32, count: u64, bytes: u64) -> Result<(), String> {
        let (bins, _) = self.first_bins();
        if s >= self.ranks || d >= self.ranks || bin >= bins {
            return Err(format!("a pair cell outside the pyramid ({s} to {d}, bin {bin} of {bins})"));
        }
        if self.gave_up {
            return Ok(());
        }
        let cell = self.map.entry(Self::key(s, d, bin >> (self.shift - self.first_shift))).or_insert((0, 0));
        cell.0 += count;
        cell.1 += bytes;
        if self.map.len() > self.cap {
            self.fit();
        }
        Ok(())
    }

    /// Halves the bins until the cells fit, or gives up.
    fn fit(&mut self) {
        while !self.gave_up && self.map.len() > self.cap {
            if self.bins <= 1 {
                self.gave_up = true;
                self.map = KeyMap::default();
                return;
            }
            self.coarsen();
        }
    }

    /// The bins merged two at a time.
    fn coarsen(&mut self) {
        let mut map = KeyMap::with_capacity_and_hasher(self.map.len() / 2 + 1, Default::default());
        for (k, (c, b)) in self.map.drain() {
            let bin = (k & 15) as u32 >> 1;
            let cell = map.entry((k & !15) | u64::from(bin)).or_insert((0, 0));
            cell.0 += c;
            cell.1 += b;
        }
        self.map = map;
        self.bins /= 2;
        self.shift += 1;
    }

    /// Adds what `other` summed (of the same shape), emptying it.
    pub fn merge(&mut self, other: &mut PairSummer) {
        if other.gave_up {
            self.gave_up = true;
            self.map = KeyMap::default();
        }
        if self.gave_up {
            other.map = KeyMap::default();
            return;
        }
        while other.bins > self.bins {
            other.coarsen();
        }
        while self.bins > other.bins {
            self.coarsen();
        }
        for (k, (c, b)) in other.map.drain() {
            let cell = self.map.entry(k).or_insert((0, 0));
            cell.0 += c;
            cell.1 += b;
        }
        self.fit();
    }

    /// The tiles (`None` where they did not fit).
    pub fn finish(self) -> Option<PairTiles> {
        if self.gave_up {
            return None;
        }
        let mut cells: Vec<(u64, (u64, u64))> = self.map.into_iter().collect();
        cells.sort_unstable_by_key(|c| c.0);
        let mut t = PairTiles { bins: self.bins, bin_ticks: 1 << self.shift, ..Default::default() };
        for (k, (c, b)) in cells {
            t.source.push((k >> 34) as u32);
            t.destination.push(((k >> 4) & ((1 << 30) - 1)) as u32);
            t.bin.push((k & 15) as u32);
            t.count.push(c);
            t.bytes.push(b);
        }
        Some(t)
    }
}

/// One level's dense arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// Ranks per block of the state tiles.
    pub block: u32,
    pub blocks: u32,
    /// Ranks per block of the message cube.
    pub message_block: u32,
    pub message_blocks: u32,
    pub message_bins: u32,
    pub message_bin_ticks: u64,
    /// `[sender block][receiver block][bin]`.
    pub counts: Vec<u64>,
    pub bytes: Vec<u64>,
    pub state_bins: u32,
    pub state_bin_ticks: u64,
    /// `[block][state][bin]`.
    pub ticks: Vec<u64>,
    /// Per block and bin, the states with ticks (see [`Level::active_states`]).
    pub active: ActiveStates,
}

/// Per rank block and time bin of a level, a bit per state (of at most 64) with ticks there:
/// computed on first use, so that a picture drawn from the tiles visits only the states a
/// block was in during a bin (a few of the 64 where a thousand ranks run hundreds of kernels).
/// Not part of a level's value: two levels with the same cells are equal whether or not it is
/// computed.
#[derive(Clone, Debug, Default)]
pub struct ActiveStates(std::sync::OnceLock<Vec<u64>>, std::sync::OnceLock<Vec<u64>>);

impl PartialEq for ActiveStates {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ActiveStates {}

impl Level {
    /// The ticks of every block together in state `state` (of `states`) in bin `bin`: computed
    /// once, on first use (what a summary of all locations reads).
    pub fn total_ticks(&self, state: u32, states: u32, bin: u32) -> u64 {
        let bins = self.state_bins as usize;
        let totals = self.active.1.get_or_init(|| {
            let mut t = vec![0u64; states as usize * bins];
            for b in 0..self.blocks as usize {
                let tiles = &self.ticks[b * states as usize * bins..(b + 1) * states as usize * bins];
                for (o, &v) in t.iter_mut().zip(tiles) {
                    *o += v;
                }
            }
            t
        });
        totals.get(state as usize * bins + bin as usize).copied().unwrap_or(0)
    }

    /// The states (bits) block `block` has ticks in, in bin `bin`.
    pub fn active_states(&self, block: u32, bin: u32, states: u32) -> u64 {
        let bins = self.state_bins as usize;
        let masks = self.active.0.get_or_init(|| {
            let s = states.min(64) as usize;
            let mut masks = vec![0u64; self.blocks as usize * bins];
            masks.par_chunks_mut(bins.max(1)).enumerate().for_each(|(b, out)| {
                for st in 0..s {
                    let at = (b * s + st) * bins;
                    let Some(row) = self.ticks.get(at..at + bins) else { continue };
                    for (m, &v) in out.iter_mut().zip(row) {
                        if v > 0 {
                            *m |= 1 << st;
                        }
                    }
                }
            });
            masks
        });
        masks.get(block as usize * bins + bin as usize).copied().unwrap_or(0)
    }

    fn message_cell(&self, s: u32, r: u32, bin: u32) -> usize {
        ((s as usize * self.message_blocks as usize) + r as usize) * self.message_bins as usize + bin as usize
    }

    /// Message counts and byte sums per (sender block, receiver block) over the bins that
    /// overlap ticks `t0..=t1` (relative to the pyramid's start), row-major by sender block.
    pub fn matrix(&self, bins: std::ops::Range<u32>) -> (Vec<u64>, Vec<u64>) {
        let b = self.message_blocks as usize;
        let mut counts = vec![0u64; b * b];
        let mut bytes = vec![0u64; b * b];
        let bins = bins.start.min(self.message_bins)..bins.end.min(self.message_bins);
        for s in 0..self.message_blocks {
            for r in 0..self.message_blocks {
                let c = self.message_cell(s, r, 0);
                let k = s as usize * b + r as usize;
                counts[k] = self.counts[c + bins.start as usize..c + bins.end as usize].iter().sum();
                bytes[k] = self.bytes[c + bins.start as usize..c + bins.end as usize].iter().sum();
            }
        }
        (counts, bytes)
    }

    /// Ticks of state `state` in block `block`, time bin `bin`.
    pub fn state_ticks(&self, block: u32, state: u32, states: u32, bin: u32) -> u64 {
        self.ticks[((block as usize * states as usize) + state as usize) * self.state_bins as usize + bin as usize]
    }

    /// The level above: half the bins and blocks, each cell the sum of the cells it covers
    /// (widths saturate: the top levels of a span of nearly every tick are as wide as a `u64`).
    fn coarser(&self, states: u32) -> Level {
        let blocks = self.blocks.div_ceil(2);
        let mblocks = self.message_blocks.div_ceil(2);
        let (mb, sb) = (self.message_bins.div_ceil(2), self.state_bins.div_ceil(2));
        let mut up = Level {
            block: self.block.saturating_mul(2),
            blocks,
            message_block: self.message_block.saturating_mul(2),
            message_blocks: mblocks,
            message_bins: mb,
            message_bin_ticks: self.message_bin_ticks.saturating_mul(2),
            counts: vec![0; (mblocks * mblocks * mb) as usize],
            bytes: vec![0; (mblocks * mblocks * mb) as usize],
            state_bins: sb,
            state_bin_ticks: self.state_bin_ticks.saturating_mul(2),
            ticks: vec![0; (blocks * states * sb) as usize],
            active: ActiveStates::default(),
        };
        for s in 0..self.message_blocks {
            for r in 0..self.message_blocks {
                for bin in 0..self.message_bins {
                    let (from, to) = (self.message_cell(s, r, bin), up.message_cell(s / 2, r / 2, bin / 2));
                    up.counts[to] += self.counts[from];
                    up.bytes[to] += self.bytes[from];
                }
            }
        }
        for b in 0..self.blocks {
            for st in 0..states {
                for bin in 0..self.state_bins {
                    let from = ((b * states + st) * self.state_bins + bin) as usize;
                    let to = (((b / 2) * states + st) * sb + bin / 2) as usize;
                    up.ticks[to] += self.ticks[from];
                }
            }
        }
        up
    }
}

/// A trace's pyramid: its shape and levels, finest first, and its message lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pyramid {
    pub shape: Shape,
    pub levels: Vec<Level>,
    /// `None` in a store written before the lines were summed.
    pub lines: Option<Lines>,
    /// `None` in a store written before they were summed, or where they would not fit.
    pub locations: Option<LocationTiles>,
    /// `None` in a store written before they were summed, or where they would not fit.
    pub pairs: Option<PairTiles>,
}

/// Message lines per (time bin, rank block) at the shape's finest state blocks and bins: how
/// many messages sent in the bin have a line from the sender's block to the receiver's that
/// crosses the block, and the sum of their gradient weights there (0 at the sender's block, 16
/// at the receiver's, linear in between; 8 where both are the block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lines {
    pub blocks: u32,
    pub bins: u32,
    /// `[bin][block]`.
    pub counts: Vec<u64>,
    pub gradient: Vec<u64>,
}

/// Gradient weight at a line's receiving end ([`Lines::gradient`]).
pub const LINE_STEPS: f64 = 16.0;

impl Lines {
    pub fn new(blocks: u32, bins: u32) -> Self {
        let cells = blocks as usize * bins as usize;
        Self { blocks, bins, counts: vec![0; cells], gradient: vec![0; cells] }
    }

    /// Cell of (`bin`, `block`).
    pub fn cell(&self, bin: u32, block: u32) -> usize {
        bin as usize * self.blocks as usize + block as usize
    }
}

/// Running sums of [`Lines`] as difference arrays along the blocks of each bin: lines, and the
/// gradient as `slope * block + offset`. A cell's three sums lie side by side, so a line's two
/// ends touch two cache lines rather than six.
struct LineSums {
    blocks: usize,
    /// `[lines, slope, offset]` per cell (the line count held exactly in an `f64`'s integers:
    /// a part sums far fewer than 2^53 lines).
    cells: Vec<[f64; 3]>,
    /// `LINE_STEPS / (r - s)` for every block difference `r - s`, at `r - s + blocks`.
    slopes: Vec<f64>,
}

impl LineSums {
    fn new(blocks: u32, bins: u32) -> Self {
        let cells = (blocks as usize + 1) * bins as usize;
        let b = f64::from(blocks);
        let slopes = (0..=2 * blocks).map(|k| LINE_STEPS / (f64::from(k) - b)).collect();
        Self { blocks: blocks as usize + 1, cells: vec![[0.0; 3]; cells], slopes }
    }

    /// A line in `bin` from block `s` to block `r`.
    #[inline]
    fn add(&mut self, bin: usize, s: usize, r: usize) {
        let row = bin * self.blocks;
        let (lo, hi) = (row + s.min(r), row + s.max(r) + 1);
        if s == r {
            let half = LINE_STEPS / 2.0;
            add3(&mut self.cells[lo], [1.0, 0.0, half]);
            add3(&mut self.cells[hi], [-1.0, 0.0, -half]);
            return;
        }
        let slope = self.slopes[r + (self.blocks - 1) - s];
        add3(&mut self.cells[lo], [1.0, slope, -(slope * s as f64)]);
        add3(&mut self.cells[hi], [-1.0, -slope, slope * s as f64]);
    }

    fn merge(mut self, o: LineSums) -> Self {
        self.cells.iter_mut().zip(&o.cells).for_each(|(a, &b)| add3(a, b));
        self
    }

    /// The lines per cell: the running sums along each bin's blocks.
    fn lines(&self, blocks: u32, bins: u32) -> Lines {
        let mut out = Lines::new(blocks, bins);
        for bin in 0..bins as usize {
            let (mut c, mut a, mut b) = (0i64, 0f64, 0f64);
            for block in 0..blocks as usize {
                let [n, slope, offset] = self.cells[bin * self.blocks + block];
                (c, a, b) = (c + n as i64, a + slope, b + offset);
                let k = bin * blocks as usize + block;
                out.counts[k] = c.max(0) as u64;
                out.gradient[k] = (a * block as f64 + b).clamp(0.0, LINE_STEPS * c.max(0) as f64).round() as u64;
            }
        }
        out
    }
}

/// Adds `b` to `a`, element by element.
#[inline]
fn add3(a: &mut [f64; 3], b: [f64; 3]) {
    a[0] += b[0];
    a[1] += b[1];
    a[2] += b[2];
}

/// Adds the lines of messages `m` to `sums`.
///
/// Returns the first and last state bin a line was added in (`None`: none was): the messages
/// inside the ranks and span are the message cube's too.
fn add_lines(sums: &mut LineSums, shape: Shape, m: MessageColumns) -> Option<(usize, usize)> {
    // Bins and blocks are powers of two: shifts, not divisions.
    debug_assert!(shape.bin_ticks.is_power_of_two() && shape.block.is_power_of_two());
    let (bin_shift, block_shift) = (shape.bin_ticks.trailing_zeros(), shape.block.trailing_zeros());
    let (source, destination, send) = (m.source, m.destination, m.send_time);
    let (mut lo, mut hi) = (usize::MAX, 0);
    for ((&s, &d), &t) in source.iter().zip(destination).zip(send) {
        let Some(at) = t.checked_sub(shape.t0) else { continue };
        if s < shape.ranks && d < shape.ranks && at >> bin_shift < u64::from(shape.state_bins) {
            let bin = (at >> bin_shift) as usize;
            (lo, hi) = (lo.min(bin), hi.max(bin));
            sums.add(bin, (s >> block_shift) as usize, (d >> block_shift) as usize);
        }
    }
    (lo <= hi).then_some((lo, hi))
}

/// The message cube's keys: a message's (sender block, receiver block) pair and time bin.
#[derive(Clone, Copy)]
struct CubeKeys {
    ranks: u32,
    blocks: u32,
    pairs: usize,
    bins: u64,
    /// Bins of a part's [`NearBins`].
    near_bins: usize,
    t0: u64,
    block_shift: u32,
    bin_shift: u32,
    /// A state bin's message bin: `state bin >> state_shift`.
    state_shift: u32,
}

/// Most cells of a part's grid of near bins (12 bytes each: 6 MiB, in the cache).
const NEAR_CELLS: usize = 1 << 19;

/// One part's cube cells for message bins `first..first + bins`, bin by bin (`[bin][pair]`),
/// kept from batch to batch while their bins stay inside it.
#[derive(Default)]
struct NearBins {
    first: usize,
    bins: usize,
    counts: Vec<u32>,
    bytes: Vec<u64>,
    /// Messages added since the grid was last emptied (its counts stay below `u32::MAX`).
    added: u64,
}

impl CubeKeys {
    fn new(shape: Shape, blocks: u32) -> Self {
        // Blocks and bins are a power of two ranks and ticks wide: shifts, not divisions.
        debug_assert!(shape.message_block.is_power_of_two() && shape.message_bin_ticks().is_power_of_two());
        let pairs = blocks as usize * blocks as usize;
        Self {
            ranks: shape.ranks,
            blocks,
            pairs,
            bins: u64::from(shape.message_bins),
            near_bins: (NEAR_CELLS / pairs).min(shape.message_bins as usize),
            t0: shape.t0,
            block_shift: shape.message_block.trailing_zeros(),
            bin_shift: shape.message_bin_ticks().trailing_zeros(),
            state_shift: (shape.state_bins / shape.message_bins).trailing_zeros(),
        }
    }

    #[inline]
    fn pair(&self, s: u32, d: u32) -> Option<u32> {
        (s < self.ranks && d < self.ranks).then(|| (s >> self.block_shift) * self.blocks + (d >> self.block_shift))
    }

    #[inline]
    fn bin(&self, t: u64) -> Option<usize> {
        let bin = t.checked_sub(self.t0)? >> self.bin_shift;
        (bin < self.bins).then_some(bin as usize)
    }

    /// Adds the cube cells of messages `m` to `near` where their send times span few
    /// enough bins (`states`: the first and last state bin of the messages inside the ranks
    /// and span, from [`add_lines`]); `near`'s previous cells are handed back when the new ones
    /// fall outside its bins (the caller adds them to the cube). With grids of no bins (a cube
    /// of more pairs than [`NEAR_CELLS`]) every part with messages is too wide.
    fn add_near(&self, near: &mut NearBins, m: MessageColumns, states: Option<(usize, usize)>) -> Near {
        let (source, destination, send, bytes) = (m.source, m.destination, m.send_time, m.bytes);
        let Some((lo, hi)) = states else { return Near::Added(None) };
        let (lo, hi) = (lo >> self.state_shift, hi >> self.state_shift);
        if hi - lo >= self.near_bins {
            return Near::TooWide;
        }
        let full = near.added + send.len() as u64 > u64::from(u32::MAX);
        let mut done = None;
        if near.bins == 0 || lo < near.first || hi >= near.first + near.bins || full {
            let first = lo.min(self.bins as usize - self.near_bins);
            let cells = self.near_bins * self.pairs;
            let fresh =
                NearBins { first, bins: self.near_bins, counts: vec![0; cells], bytes: vec![0; cells], added: 0 };
            done = Some(std::mem::replace(near, fresh)).filter(|n| n.bins > 0);
        }
        near.added += send.len() as u64;
        let first = near.first;
        for (((&s, &d), &t), &b) in source.iter().zip(destination).zip(send).zip(bytes) {
            if let (Some(pair), Some(bin)) = (self.pair(s, d), self.bin(t)) {
                let cell = (bin - first) * self.pairs + pair as usize;
                near.counts[cell] += 1;
                near.bytes[cell] += u64::from(b);
            }
        }
        Near::Added(done)
    }
}

/// What [`CubeKeys::add_near`] did with a part of a batch.
enum Near {
    /// Added; with the cells moved out of the part's grid to make room, if any.
    Added(Option<NearBins>),
    /// The times span too many bins: nothing was added.
    TooWide,
}

/// Builds a pyramid from batches of rows in any order.
pub struct PyramidBuilder {
    shape: Shape,
    level: Level,
    /// The per-location tiles, summed with the state tiles.
    locations: Option<LocationTiles>,
    /// The per-pair tiles, gathered from the parts that sum them.
    pairs: Option<PairSummer>,
    /// Intervals not yet summed: batches shorter than [`PENDING_INTERVALS`] are gathered
    /// first, so that each sum's sort by rank block and pass over the blocks serve many rows.
    pending: Intervals,
    /// The parts of each batch of messages summed side by side (kept, so that no batch
    /// allocates).
    parts: Vec<MessagePart>,
}

/// The columns of messages that a pyramid sums: slices of [`Messages`], or of a batch of rows
/// as it is decoded.
#[derive(Clone, Copy)]
pub struct MessageColumns<'a> {
    pub source: &'a [u32],
    pub destination: &'a [u32],
    pub send_time: &'a [u64],
    pub bytes: &'a [u32],
}

impl<'a> MessageColumns<'a> {
    /// Messages `range` of `m`.
    pub fn of(m: &'a Messages, range: std::ops::Range<usize>) -> Self {
        Self {
            source: &m.source[range.clone()],
            destination: &m.destination[range.clone()],
            send_time: &m.send_time[range.clone()],
            bytes: &m.bytes[range],
        }
    }
}

/// One thread's share of the messages: its line sums and its grid of near bins, and what it
/// has finished with until the builder gathers it ([`PyramidBuilder::gather`]): the grids its
/// times moved past, and messages whose times spanned too many bins for a grid.
pub struct MessagePart {
    lines: LineSums,
    near: NearBins,
    done: Vec<NearBins>,
    wide: Messages,
    pairs: Option<PairSummer>,
}

/// What a [`MessagePart`] needs of its builder to sum messages: the shape and the cube's keys.
#[derive(Clone, Copy)]
pub struct MessageKeys {
    shape: Shape,
    cube: CubeKeys,
}

impl MessagePart {
    fn new(shape: Shape) -> Self {
        Self {
            lines: LineSums::new(shape.blocks(), shape.state_bins),
            near: NearBins::default(),
            done: Vec::new(),
            wide: Messages::default(),
            pairs: PairSummer::new(&shape),
        }
    }

    /// Adds the lines of messages `m` and, where their send times fall in a few message bins,
    /// their cube cells to this part's grid; `false` where the times spanned too many bins,
    /// and their cube cells are yet to be added.
    fn add_near(&mut self, keys: &MessageKeys, m: MessageColumns) -> bool {
        if let Some(p) = &mut self.pairs {
            p.add(m);
        }
        let states = add_lines(&mut self.lines, keys.shape, m);
        match keys.cube.add_near(&mut self.near, m, states) {
            Near::Added(done) => {
                self.done.extend(done);
                true
            }
            Near::TooWide => false,
        }
    }

    /// Adds messages `m` (a batch of rows as it is decoded, summed while it is in the cache):
    /// their lines, and their cube cells to this part's grid or, where their times span too
    /// many bins, kept for the builder's partitioned binning.
    pub fn add(&mut self, keys: &MessageKeys, m: MessageColumns) {
        if !self.add_near(keys, m) {
            let w = &mut self.wide;
            w.source.extend_from_slice(m.source);
            w.destination.extend_from_slice(m.destination);
            w.send_time.extend_from_slice(m.send_time);
            w.bytes.extend_from_slice(m.bytes);
        }
    }
}

/// Most partial line sums kept while adding messages (each is 24 bytes a cell: 50 MB at most).
const LINE_PARTS: usize = 4;

/// Intervals gathered before a sum (28 MB of rows): a store's row groups are this long, and are
/// summed as they come. (Gathering four of them first, the intervals of the 1e8 store took
/// 2.32-2.50 s against 1.71-2.03 s, and 457 MB peak against 379 MB.)
const PENDING_INTERVALS: usize = 1 << 20;

impl PyramidBuilder {
    pub fn new(shape: Shape) -> Self {
        let blocks = shape.blocks();
        let mblocks = shape.message_blocks();
        let cube = (mblocks * mblocks * shape.message_bins) as usize;
        let level = Level {
            block: shape.block,
            blocks,
            message_block: shape.message_block,
            message_blocks: mblocks,
            message_bins: shape.message_bins,
            message_bin_ticks: shape.message_bin_ticks(),
            counts: vec![0; cube],
            bytes: vec![0; cube],
            state_bins: shape.state_bins,
            state_bin_ticks: shape.bin_ticks,
            ticks: vec![0; (blocks * shape.states * shape.state_bins) as usize],
            active: ActiveStates::default(),
        };
        // The line sums are allocated with the first messages (a pyramid read from a store
        // starts from an empty builder and never sums a message).
        let locations = LocationTiles::new(&shape);
        let pairs = PairSummer::new(&shape);
        Self { shape, level, locations, pairs, pending: Intervals::default(), parts: Vec::new() }
    }

    /// Adds messages: each counted at its send time, its sender's and receiver's blocks.
    /// Messages outside the shape's ranks or span are left out.
    ///
    /// The batch is cut into one part per line sum. Each part adds its lines, and where its
    /// send times fall in a few message bins (a store's row group: its rows are sorted by time)
    /// it also sums its cube cells straight into its own small grid of those bins, which stays
    /// in the cache and is added to the cube once later batches move past its bins. Other parts
    /// take the partitioned binning.
    pub fn add_messages(&mut self, m: &Messages) {
        let (keys, mut parts) = self.message_parts(rayon::current_num_threads().clamp(1, LINE_PARTS));
        let n = m.source.len();
        let per = n.div_ceil(parts.len()).max(1);
        let wide: Vec<std::ops::Range<usize>> = parts
            .par_iter_mut()
            .enumerate()
            .filter_map(|(k, part)| {
                let range = (k * per).min(n)..((k + 1) * per).min(n);
                (!part.add_near(&keys, MessageColumns::of(m, range.clone()))).then_some(range)
            })
            .collect();
        for range in wide {
            self.bin_partitioned(&keys.cube, MessageColumns::of(m, range));
        }
        self.put_parts(parts);
    }

    /// At least `n` parts to sum messages into side by side, each on a thread of its own
    /// ([`MessagePart::add`]), with the keys they sum by; [`Self::gather`] adds what they have
    /// finished with to the cube, and [`Self::put_parts`] hands them back.
    pub fn message_parts(&mut self, n: usize) -> (MessageKeys, Vec<MessagePart>) {
        let mut parts = std::mem::take(&mut self.parts);
        while parts.len() < n {
            parts.push(MessagePart::new(self.shape));
        }
        (MessageKeys { shape: self.shape, cube: CubeKeys::new(self.shape, self.level.message_blocks) }, parts)
    }

    /// Adds to the cube what `parts` have finished with: the grids their times moved past, and
    /// the messages whose times spanned too many bins.
    pub fn gather(&mut self, parts: &mut [MessagePart]) {
        let done: Vec<NearBins> = parts.iter_mut().flat_map(|p| std::mem::take(&mut p.done)).collect();
        self.add_near_bins(&done);
        if let Some(pairs) = &mut self.pairs {
            for p in parts.iter_mut().filter_map(|p| p.pairs.as_mut()) {
                pairs.merge(p);
            }
        }
        let cube = CubeKeys::new(self.shape, self.level.message_blocks);
        for p in parts.iter_mut() {
            let wide = std::mem::take(&mut p.wide);
            if !wide.source.is_empty() {
                self.bin_partitioned(&cube, MessageColumns::of(&wide, 0..wide.source.len()));
            }
        }
    }

    /// Takes `parts` back from [`Self::message_parts`], gathering what they have finished with.
    pub fn put_parts(&mut self, mut parts: Vec<MessagePart>) {
        self.gather(&mut parts);
        self.parts = parts;
    }

    /// Adds parts' grids of near bins to the cube.
    fn add_near_bins(&mut self, near: &[NearBins]) {
        if near.is_empty() {
            return;
        }
        let (bins, pairs) = (self.level.message_bins as usize, self.level.message_blocks as usize);
        let pairs = pairs * pairs;
        // The cube is `[pair][bin]`, a grid `[bin][pair]`: a block of pairs at a time (its cube
        // cells, 64 KiB of counts, stay in the cache) reads each grid's bins a row at a time.
        const PAIRS: usize = 64;
        let level = &mut self.level;
        level.counts.par_chunks_mut(bins * PAIRS).zip(level.bytes.par_chunks_mut(bins * PAIRS)).enumerate().for_each(
            |(block, (counts, bytes))| {
                let first_pair = block * PAIRS;
                let block_pairs = counts.len() / bins;
                for g in near {
                    for j in 0..g.bins {
                        let row = j * pairs + first_pair;
                        let (gc, gb) = (&g.counts[row..row + block_pairs], &g.bytes[row..row + block_pairs]);
                        for (p, (&c, &b)) in gc.iter().zip(gb).enumerate() {
                            counts[p * bins + g.first + j] += u64::from(c);
                            bytes[p * bins + g.first + j] += b;
                        }
                    }
                }
            },
        );
    }

    /// Adds the cube cells of messages `m` by the partitioned binning.
    fn bin_partitioned(&mut self, cube: &CubeKeys, m: MessageColumns) {
        let (shape, blocks) = (self.shape, self.level.message_blocks);
        let (source, destination) = (m.source, m.destination);
        let pairs: Vec<u32> =
            source.par_iter().zip(destination).map(|(&s, &d)| cube.pair(s, d).unwrap_or(u32::MAX)).collect();
        let bin_ticks = shape.message_bin_ticks();
        let t_last = shape.t0.saturating_add(bin_ticks.saturating_mul(u64::from(shape.message_bins)) - 1);
        let input = HeatmapInput {
            x: AxisKey::time(m.send_time, shape.t0, t_last, shape.message_bins),
            y: AxisKey::Id { keys: &pairs, extent: blocks * blocks },
            weights: Some(m.bytes),
        };
        debug_assert_eq!(input.x.bin_ticks(), bin_ticks);
        bin_heatmap_plain::bin_into(&input, &mut self.level.counts, &mut self.level.bytes);
    }

    /// Adds intervals: each one's ticks split over the state bins it overlaps.
    pub fn add_intervals(&mut self, v: &Intervals) {
        if v.start.len() >= PENDING_INTERVALS {
            self.sum_intervals(v);
            return;
        }
        let p = &mut self.pending;
        p.location.extend_from_slice(&v.location);
        p.start.extend_from_slice(&v.start);
        p.end.extend_from_slice(&v.end);
        p.kind.extend_from_slice(&v.kind);
        p.depth.extend_from_slice(&v.depth);
        if p.start.len() >= PENDING_INTERVALS {
            // Summed, then emptied and kept: the next batches fill the same memory (taken
            // afresh, every fill grew it again, copying and faulting its pages in).
            let mut p = std::mem::take(&mut self.pending);
            self.sum_intervals(&p);
            for column in [&mut p.location, &mut p.kind, &mut p.depth] {
                column.clear();
            }
            p.start.clear();
            p.end.clear();
            self.pending = p;
        }
    }

    /// Sums intervals into the state tiles: the rows are sorted by rank block first (a counting
    /// sort), so each block's tiles are summed by one thread in place, with no tile set per
    /// thread to allocate and add up.
    fn sum_intervals(&mut self, v: &Intervals) {
        let shape = self.shape;
        let (bins, states) = (shape.state_bins as usize, shape.states);
        let span_end = shape.t0.saturating_add(shape.bin_ticks * u64::from(shape.state_bins));
        let blocks = shape.blocks() as usize;
        let shift = shape.bin_ticks.trailing_zeros();
        debug_assert!(shape.bin_ticks.is_power_of_two());
        let block_of = |i: usize| (v.location[i] < shape.ranks).then(|| (v.location[i] / shape.block) as usize);
        let mut starts = vec![0usize; blocks + 1];
        for i in 0..v.start.len() {
            if let Some(b) = block_of(i) {
                starts[b + 1] += 1;
            }
        }
        for b in 0..blocks {
            starts[b + 1] += starts[b];
        }
        let mut order = vec![0u32; starts[blocks]];
        let mut fill = starts.clone();
        for i in 0..v.start.len() {
            if let Some(b) = block_of(i) {
                order[fill[b]] = i as u32;
                fill[b] += 1;
            }
        }
        // Each block's locations' tiles summed by the thread summing the block's (a block's
        // locations are consecutive: its chunk of the tiles).
        let (loc_bins, loc_shift) = self.locations.as_ref().map_or((0, 0), |l| {
            debug_assert!(l.bin_ticks.is_power_of_two());
            (l.bins as usize, l.bin_ticks.trailing_zeros())
        });
        let per_block = shape.block as usize * states as usize * loc_bins;
        let mut none: Vec<u64> = Vec::new();
        let loc_tiles = self.locations.as_mut().map_or(&mut none, |l| &mut l.ticks);
        let mut loc_chunks: Vec<&mut [u64]> =
            if per_block > 0 { loc_tiles.chunks_mut(per_block).collect() } else { Vec::new() };
        loc_chunks.resize_with(blocks, || &mut []);
        self.level.ticks.par_chunks_mut(states as usize * bins).zip(loc_chunks.into_par_iter()).enumerate().for_each(
            |(b, (tiles, own))| {
                let first = b as u32 * shape.block;
                for &i in &order[starts[b]..starts[b + 1]] {
                    let i = i as usize;
                    let (a, e) = (v.start[i].max(shape.t0), v.end[i].min(span_end));
                    let row = v.kind[i].min(states - 1) as usize * bins;
                    if e <= a {
                        continue;
                    }
                    // Bins are a power of two ticks wide: one division for the first, then steps.
                    let (mut t, mut bin) = (a, ((a - shape.t0) >> shift) as usize);
                    while t < e {
                        let edge = (shape.t0 + ((bin as u64 + 1) << shift)).min(e);
                        tiles[row + bin] += edge - t;
                        (t, bin) = (edge, bin + 1);
                    }
                    if !own.is_empty() {
                        let at = ((v.location[i] - first) as usize * states as usize
                            + v.kind[i].min(states - 1) as usize)
                            * loc_bins;
                        let (mut t, mut bin) = (a, ((a - shape.t0) >> loc_shift) as usize);
                        while t < e {
                            let edge = (shape.t0 + ((bin as u64 + 1) << loc_shift)).min(e);
                            own[at + bin] += edge - t;
                            (t, bin) = (edge, bin + 1);
                        }
                    }
                }
            },
        );
    }

    /// The pyramid: level 0 and every coarser level down to one block and one bin.
    pub fn finish(mut self) -> Pyramid {
        let p = std::mem::take(&mut self.pending);
        if !p.start.is_empty() {
            self.sum_intervals(&p);
        }
        let mut parts = std::mem::take(&mut self.parts);
        self.gather(&mut parts);
        let near: Vec<NearBins> =
            parts.iter_mut().map(|p| std::mem::take(&mut p.near)).filter(|n| n.bins > 0).collect();
        self.add_near_bins(&near);
        let mut levels = vec![self.level];
        while let Some(top) = levels.last() {
            if top.blocks <= 1 && top.message_blocks <= 1 && top.message_bins <= 1 && top.state_bins <= 1 {
                break;
            }
            let up = top.coarser(self.shape.states);
            levels.push(up);
        }
        let (blocks, bins) = (self.shape.blocks(), self.shape.state_bins);
        let sums = parts.into_iter().map(|p| p.lines).reduce(LineSums::merge);
        let lines = Some(sums.map_or_else(|| Lines::new(blocks, bins), |l| l.lines(blocks, bins)));
        let pairs = self.pairs.and_then(PairSummer::finish);
        Pyramid { shape: self.shape, levels, lines, locations: self.locations, pairs }
    }
}

impl Pyramid {
    /// Per state, the ticks of every interval in it over the whole span (its coarsest level).
    pub fn state_ticks(&self) -> Vec<u64> {
        let (states, Some(top)) = (self.shape.states, self.levels.last()) else { return Vec::new() };
        (0..states)
            .map(|s| {
                (0..top.blocks)
                    .map(|b| (0..top.state_bins).map(|k| top.state_ticks(b, s, states, k)).sum::<u64>())
                    .sum()
            })
            .collect()
    }

    /// The message bins of `level` that overlap ticks `window` (absolute ticks, both ends in).
    pub fn message_bins_over(&self, level: &Level, window: (u64, u64)) -> std::ops::Range<u32> {
        bins_over(self.shape.t0, level.message_bin_ticks, level.message_bins, window)
    }

    /// The bytes its cells take in memory.
    pub fn bytes(&self) -> usize {
        let level = |l: &Level| (l.counts.len() + l.bytes.len() + l.ticks.len()) * 8;
        let lines = self.lines.as_ref().map_or(0, |l| (l.counts.len() + l.gradient.len()) * 8);
        let locations = self.locations.as_ref().map_or(0, |l| l.ticks.len() * 8);
        let pairs = self.pairs.as_ref().map_or(0, |p| p.len() * 28);
        self.levels.iter().map(level).sum::<usize>() + lines + locations + pairs
    }

    /// The coarsest level whose blocks and state bins still resolve `rows` ranks rows and
    /// `columns` time columns over `window_ticks` (at least one block per row and bin per
    /// column), or the finest.
    pub fn level_for(&self, rows: u32, columns: u32, window_ticks: u64) -> &Level {
        let need_block = (self.shape.ranks / rows.max(1)).max(1);
        let need_ticks = (window_ticks / u64::from(columns.max(1))).max(1);
        self.levels
            .iter()
            .rev()
            .find(|l| l.block <= need_block && l.state_bin_ticks <= need_ticks)
            .unwrap_or(&self.levels[0])
    }
}

/// Of `bins` bins of `bin_ticks` from `t0`, those overlapping ticks `window` (both ends in).
fn bins_over(t0: u64, bin_ticks: u64, bins: u32, window: (u64, u64)) -> std::ops::Range<u32> {
    let bt = bin_ticks.max(1);
    let bin = |t: u64| (t.saturating_sub(t0) / bt).min(u64::from(bins)) as u32;
    let first = bin(window.0);
    first..bin(window.1).saturating_add(1).min(bins).max(first)
}

/// Ranks per block of a message cube over `ranks` ranks at its finest level: at most 256 blocks.
pub fn message_block(ranks: u32) -> u32 {
    ranks.div_ceil(256).max(1).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(n: usize, ranks: u32, span: u64) -> Messages {
        let mut s = 11u64;
        let mut next = move || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            s >> 17
        };
        let mut m = Messages::default();
        for _ in 0..n {
            m.source.push((next() % u64::from(ranks + 2)) as u32);
            m.destination.push((next() % u64::from(ranks)) as u32);
            let t = 1000 + next() % span;
            m.send_time.push(t);
            m.recv_time.push(t + 5);
            m.bytes.push(if next() % 9 == 0 { u32::MAX } else { (next() % 100_000) as u32 });
            m.tag.push(0);
        }
        m
    }

    /// Every level's message cube equals a plain count of the raw rows, and batches in any
    /// split add up to one batch.
    #[test]
    fn message_cube_equals_the_raw_rows_at_every_level() {
        let (ranks, span) = (1500u32, 10_000_000u64);
        let m = messages(200_000, ranks, span);
        let shape = Shape::new(1000, 1000 + span, ranks, 3);
        let mut whole = PyramidBuilder::new(shape);
        whole.add_messages(&m);
        let p = whole.finish();
        let mut split = PyramidBuilder::new(shape);
        for part in [0..70_000usize, 70_000..70_001, 70_001..200_000] {
            let sub = Messages {
                source: m.source[part.clone()].to_vec(),
                destination: m.destination[part.clone()].to_vec(),
                send_time: m.send_time[part.clone()].to_vec(),
                recv_time: m.recv_time[part.clone()].to_vec(),
                bytes: m.bytes[part.clone()].to_vec(),
                tag: m.tag[part].to_vec(),
            };
            split.add_messages(&sub);
        }
        assert_eq!(split.finish(), p);
        assert!(p.levels.len() >= 8, "{}", p.levels.len());
        for lvl in &p.levels {
            let b = lvl.message_blocks as usize;
            let (mut counts, mut bytes) = (vec![0u64; b * b], vec![0u64; b * b]);
            let bins = 10..lvl.message_bins.max(12) - 2;
            for i in 0..m.source.len() {
                let bin = (m.send_time[i] - shape.t0) / lvl.message_bin_ticks;
                if m.source[i] >= ranks || !(u64::from(bins.start)..u64::from(bins.end)).contains(&bin) {
                    continue;
                }
                let k =
                    (m.source[i] / lvl.message_block) as usize * b + (m.destination[i] / lvl.message_block) as usize;
                counts[k] += 1;
                bytes[k] += u64::from(m.bytes[i]);
            }
            assert_eq!(lvl.matrix(bins.clone()), (counts, bytes), "level with blocks of {}", lvl.message_block);
        }
        let top = p.levels.last().unwrap();
        assert_eq!(top.counts.iter().sum::<u64>(), m.source.iter().filter(|&&s| s < ranks).count() as u64);
    }

    /// Batches sorted by time, as a store's row groups are, are summed into each part's grid
    /// of near bins (moved on as the times pass its bins); with an unsorted batch among them
    /// (partitioned) and rows outside the ranks and span, every level equals one unsorted batch.
    #[test]
    fn sorted_batches_summed_near_their_bins_equal_one_unsorted_batch() {
        let (ranks, span) = (1500u32, 10_000_000u64);
        let mut m = messages(300_000, ranks, span);
        let shape = Shape::new(1000, 1000 + span - 2_000_000, ranks, 3);
        let mut whole = PyramidBuilder::new(shape);
        whole.add_messages(&m);
        let want = whole.finish();
        let mut order: Vec<u32> = (0..m.source.len() as u32).collect();
        order.sort_by_key(|&i| m.send_time[i as usize]);
        m.permute(&order);
        let batch = |range: std::ops::Range<usize>| {
            let mut sub = m.clone();
            sub.permute(&range.map(|i| i as u32).collect::<Vec<u32>>());
            sub
        };
        let cube = CubeKeys::new(shape, shape.message_blocks());
        assert!(cube.near_bins >= 2 && cube.near_bins < shape.message_bins as usize, "{}", cube.near_bins);
        let mut near = NearBins::default();
        let states = |m: &Messages, r| {
            add_lines(&mut LineSums::new(shape.blocks(), shape.state_bins), shape, MessageColumns::of(m, r))
        };
        let sorted = batch(0..5_000);
        assert!(
            matches!(
                cube.add_near(&mut near, MessageColumns::of(&sorted, 0..5_000), states(&sorted, 0..5_000)),
                Near::Added(None)
            ),
            "a sorted batch is near"
        );
        let mut shuffled = batch(100_000..200_000);
        shuffled.permute(&(0..100_000u32).map(|i| (i * 7_919) % 100_000).collect::<Vec<u32>>());
        assert!(
            matches!(
                cube.add_near(
                    &mut near,
                    MessageColumns::of(&shuffled, 90_000..100_000),
                    states(&shuffled, 90_000..100_000)
                ),
                Near::TooWide
            ),
            "an unsorted one is not"
        );
        let mut split = PyramidBuilder::new(shape);
        for start in (0..100_000).step_by(5_000) {
            split.add_messages(&batch(start..start + 5_000));
        }
        split.add_messages(&shuffled);
        for start in (200_000..300_000).step_by(7_000) {
            split.add_messages(&batch(start..(start + 7_000).min(300_000)));
        }
        let got = split.finish();
        assert_eq!(got.levels, want.levels);
        let binned: u64 = got.levels[0].counts.iter().sum();
        assert!(binned > 150_000 && binned < 300_000, "{binned} of 300000 in the cube");
        // The same batches handed to two parts in turn, as a store's row groups are summed by
        // the threads that decode them: the unsorted one is kept by its part until gathered.
        let mut streamed = PyramidBuilder::new(shape);
        let (keys, mut parts) = streamed.message_parts(2);
        let starts = (0..100_000).step_by(5_000).chain([100_000]).chain((200_000..300_000).step_by(7_000));
        for (k, start) in starts.enumerate() {
            let len = if start < 100_000 { 5_000 } else { 7_000 };
            let b = if start == 100_000 { shuffled.clone() } else { batch(start..(start + len).min(300_000)) };
            parts[k % 2].add(&keys, MessageColumns::of(&b, 0..b.source.len()));
            if start == 100_000 {
                assert_eq!(parts[k % 2].wide.source.len(), 100_000, "the unsorted batch is kept for the binning");
            }
            if k % 3 == 0 {
                streamed.gather(&mut parts);
            }
        }
        streamed.put_parts(parts);
        assert_eq!(streamed.finish().levels, want.levels);
    }

    /// A trace spanning nearly every tick (bins of 2^53 ticks): sorted batches and one unsorted
    /// batch lose no message to the cube, nor to the lines.
    #[test]
    fn a_span_of_nearly_every_tick_loses_no_message() {
        let shape = Shape::new(5, u64::MAX - 1, 64, 3);
        let mut m = Messages::default();
        for i in 0..10_000u64 {
            m.source.push((i % 64) as u32);
            m.destination.push(((i * 7) % 64) as u32);
            m.send_time.push(5 + i * (u64::MAX / 10_000 - 1));
            m.recv_time.push(5 + i * (u64::MAX / 10_000 - 1));
            m.bytes.push(1);
            m.tag.push(0);
        }
        let mut b = PyramidBuilder::new(shape);
        for start in (0..10_000u32).step_by(100) {
            let mut batch = m.clone();
            batch.permute(&(start..start + 100).collect::<Vec<u32>>());
            b.add_messages(&batch);
        }
        let p = b.finish();
        assert_eq!(p.levels[0].counts.iter().sum::<u64>(), 10_000);
        let mut shuffled = m.clone();
        shuffled.permute(&(0..10_000u32).map(|i| (i * 7_919) % 10_000).collect::<Vec<u32>>());
        let mut whole = PyramidBuilder::new(shape);
        whole.add_messages(&shuffled);
        assert_eq!(whole.finish().levels, p.levels, "one unsorted batch (partitioned) equals sorted ones");
        let lines = p.lines.unwrap();
        let at_own_block: u64 = (0..shape.state_bins).map(|bin| lines.counts[lines.cell(bin, 0)]).sum();
        assert!(at_own_block > 0 && lines.counts.iter().sum::<u64>() >= 10_000);
    }

    /// Lines: every cell counts the messages of its bin whose line crosses its block, and the
    /// gradient sums their weights there (to rounding); batches in any split add up to one.
    #[test]
    fn lines_count_the_messages_crossing_each_block() {
        let (ranks, span) = (3000u32, 5_000_000u64);
        let m = messages(100_000, ranks, span);
        let shape = Shape::new(1000, 1000 + span, ranks, 3);
        let mut b = PyramidBuilder::new(shape);
        b.add_messages(&m);
        let lines = b.finish().lines.unwrap();
        let (mut counts, mut gradient) = (vec![0u64; lines.counts.len()], vec![0f64; lines.counts.len()]);
        for i in 0..m.source.len() {
            let (s, d) = (m.source[i], m.destination[i]);
            if s >= ranks {
                continue;
            }
            let bin = ((m.send_time[i] - shape.t0) / shape.bin_ticks) as u32;
            let (ys, yr) = (s / shape.block, d / shape.block);
            for y in ys.min(yr)..=ys.max(yr) {
                let k = lines.cell(bin, y);
                counts[k] += 1;
                gradient[k] += if ys == yr {
                    LINE_STEPS / 2.0
                } else {
                    LINE_STEPS * (f64::from(y) - f64::from(ys)) / (f64::from(yr) - f64::from(ys))
                };
            }
        }
        assert_eq!(lines.counts, counts);
        for (k, (&got, &want)) in lines.gradient.iter().zip(&gradient).enumerate() {
            assert!((got as f64 - want).abs() <= 1.0, "cell {k}: {got} vs {want}");
        }
        assert!(counts.iter().filter(|&&c| c > 0).count() > 10_000);
        let mut split = PyramidBuilder::new(shape);
        for part in [0..1usize, 1..60_000, 60_000..100_000] {
            let mut sub = m.clone();
            sub.permute(&part.map(|i| i as u32).collect::<Vec<u32>>());
            split.add_messages(&sub);
        }
        assert_eq!(split.finish().lines.unwrap().counts, lines.counts);
    }

    /// State ticks: every interval's duration is split over its bins, nothing lost or doubled.
    #[test]
    fn state_ticks_sum_to_the_interval_durations() {
        let ranks = 700u32;
        let mut v = Intervals::default();
        let mut s = 5u64;
        for i in 0..50_000u64 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let start = (s >> 20) % 1_000_000;
            v.location.push((i % u64::from(ranks)) as u32);
            v.start.push(start);
            v.end.push(start + (s >> 50) % 20_000);
            v.kind.push((i % 4) as u32);
            v.depth.push(0);
        }
        let shape = Shape::new(0, 1_020_000, ranks, 3);
        let mut b = PyramidBuilder::new(shape);
        b.add_intervals(&v);
        let p = b.finish();
        for lvl in &p.levels {
            for block in [0, lvl.blocks - 1] {
                for state in 0..3 {
                    let got: u64 = (0..lvl.state_bins).map(|bin| lvl.state_ticks(block, state, 3, bin)).sum();
                    let want: u64 = (0..v.start.len())
                        .filter(|&i| v.location[i] / lvl.block == block && v.kind[i].min(2) == state)
                        .map(|i| v.end[i] - v.start[i])
                        .sum();
                    assert_eq!(got, want, "block {block} state {state} at blocks of {}", lvl.block);
                }
            }
        }
        // One bin of the finest level: the overlap of each interval with it.
        let lvl = &p.levels[0];
        let bin = 300u32;
        let (lo, hi) = (u64::from(bin) * lvl.state_bin_ticks, u64::from(bin + 1) * lvl.state_bin_ticks);
        let want: u64 = (0..v.start.len())
            .filter(|&i| v.location[i] / lvl.block == 0 && v.kind[i] == 1)
            .map(|i| v.end[i].min(hi).saturating_sub(v.start[i].max(lo)))
            .sum();
        assert_eq!(lvl.state_ticks(0, 1, 3, bin), want);
        // A picture 700 rows by 1,000 columns over the whole span reads a level coarse enough.
        let l = p.level_for(700, 1000, 1_020_000);
        assert!(l.block <= 1 && l.state_bin_ticks <= 1020, "{} {}", l.block, l.state_bin_ticks);
        let l = p.level_for(10, 10, 1_020_000);
        assert!(l.block >= 64 && l.state_bin_ticks >= 64, "{} {}", l.block, l.state_bin_ticks);
    }

    /// Each location's tiles sum, over its block and merged bins, to the block's state tiles.
    #[test]
    fn location_tiles_sum_to_the_state_tiles_of_their_blocks() {
        let ranks = 3000u32;
        let mut v = Intervals::default();
        let mut s = 11u64;
        for i in 0..60_000u64 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let start = (s >> 20) % 2_000_000;
            v.location.push((i % u64::from(ranks)) as u32);
            v.start.push(start);
            v.end.push(start + (s >> 45) % 90_000);
            v.kind.push((i % 5) as u32);
            v.depth.push(0);
        }
        let shape = Shape::new(0, 2_100_000, ranks, 4);
        let mut b = PyramidBuilder::new(shape);
        b.add_intervals(&v);
        let p = b.finish();
        let tiles = p.locations.as_ref().expect("3,000 locations in 4 states keep tiles");
        assert_eq!(tiles.bins, 256);
        let lvl = &p.levels[0];
        let merge = lvl.state_bins / tiles.bins;
        assert!(lvl.block > 1, "blocks of {} locations", lvl.block);
        for block in [0, 1, lvl.blocks - 1] {
            for state in 0..4 {
                for bin in [0, 7, tiles.bins - 1] {
                    let want: u64 = (bin * merge..(bin + 1) * merge).map(|k| lvl.state_ticks(block, state, 4, k)).sum();
                    let got: u64 = (block * lvl.block..((block + 1) * lvl.block).min(ranks))
                        .map(|l| tiles.at(l, state, 4, bin))
                        .sum();
                    assert_eq!(got, want, "block {block} state {state} bin {bin}");
                }
            }
        }
        // One location's whole time in a state: its intervals' durations.
        let want: u64 = (0..v.start.len())
            .filter(|&i| v.location[i] == 1234 && v.kind[i].min(3) == 3)
            .map(|i| v.end[i] - v.start[i])
            .sum();
        assert_eq!((0..tiles.bins).map(|k| tiles.at(1234, 3, 4, k)).sum::<u64>(), want);
        // Budgets: 65,536 locations in 4 states keep 64 bins, in 64 states 4; a million in 64 none.
        assert_eq!(Shape::new(0, 1 << 30, 65_536, 4).location_bins(), Some(64));
        assert_eq!(Shape::new(0, 1 << 30, 65_536, 64).location_bins(), Some(4));
        assert_eq!(Shape::new(0, 1 << 30, 1_000_000, 64).location_bins(), None);
    }

    /// Per-pair tiles: each pair's messages and bytes per bin equal a plain count of the raw
    /// rows inside the ranks and span, in batches of any split; a window's sums are the bins'.
    #[test]
    fn pair_tiles_equal_the_raw_rows_per_pair_and_bin() {
        let (ranks, span) = (300u32, 1_000_000u64);
        let m = messages(40_000, ranks, span);
        let shape = Shape::new(1000, 1000 + span, ranks, 2);
        let mut one = PyramidBuilder::new(shape);
        one.add_messages(&m);
        let p = one.finish();
        let tiles = p.pairs.as_ref().expect("40,000 messages fit");
        assert_eq!(tiles.bins, PAIR_BINS);
        let mut want: std::collections::BTreeMap<(u32, u32, u32), (u64, u64)> = Default::default();
        for i in 0..m.source.len() {
            let (s, d, t) = (m.source[i], m.destination[i], m.send_time[i]);
            let bin = (t - shape.t0) / tiles.bin_ticks;
            if s < ranks && d < ranks && bin < u64::from(tiles.bins) {
                let c = want.entry((s, d, bin as u32)).or_default();
                c.0 += 1;
                c.1 += u64::from(m.bytes[i]);
            }
        }
        let got: std::collections::BTreeMap<(u32, u32, u32), (u64, u64)> = (0..tiles.len())
            .map(|k| ((tiles.source[k], tiles.destination[k], tiles.bin[k]), (tiles.count[k], tiles.bytes[k])))
            .collect();
        assert_eq!(got, want);
        // In batches: the same tiles.
        let mut split = PyramidBuilder::new(shape);
        for chunk in [0..7_000, 7_000..7_001, 7_001..40_000] {
            let part = Messages {
                source: m.source[chunk.clone()].to_vec(),
                destination: m.destination[chunk.clone()].to_vec(),
                send_time: m.send_time[chunk.clone()].to_vec(),
                recv_time: m.recv_time[chunk.clone()].to_vec(),
                bytes: m.bytes[chunk.clone()].to_vec(),
                tag: m.tag[chunk].to_vec(),
            };
            split.add_messages(&part);
        }
        assert_eq!(split.finish().pairs.as_ref(), Some(tiles));
        // A window's sums: the pairs' messages in the bins it overlaps.
        let bins = tiles.bins_over(shape.t0, (shape.t0 + 3 * tiles.bin_ticks + 5, shape.t0 + 5 * tiles.bin_ticks));
        assert_eq!(bins, 3..6);
        let sums = tiles.sums(bins.clone());
        let pair = sums.iter().find(|p| (p.source, p.destination) == (7, 9)).map_or(0, |p| p.messages);
        let raw: u64 = (3..6).map(|b| want.get(&(7, 9, b)).map_or(0, |c| c.0)).sum();
        assert_eq!(pair, raw);
        assert_eq!(
            sums.iter().map(|p| p.messages).sum::<u64>(),
            (3..6).map(|b| want.iter().filter(|(k, _)| k.2 == b).map(|(_, c)| c.0).sum::<u64>()).sum::<u64>()
        );
    }

    /// Past their most cells the bins halve until the cells fit, the same whether the messages
    /// came in one part or several; where one bin would not fit, no tiles.
    #[test]
    fn pair_tiles_halve_their_bins_to_fit_and_give_up_past_one() {
        let shape = Shape::new(0, 1 << 20, 1 << 12, 2);
        // Pairs 0..n each once in every one of the 16 bins: 16 n cells.
        let cells = |n: u32, bins: u32| {
            let mut m = Messages::default();
            for p in 0..n {
                for b in 0..bins {
                    m.source.push(p / 4096);
                    m.destination.push(p % 4096);
                    m.send_time.push(u64::from(b) * (1 << 17) + 3);
                    m.recv_time.push(0);
                    m.bytes.push(1);
                    m.tag.push(0);
                }
            }
            m
        };
        const CAP: usize = 5000;
        let mut summer = PairSummer::with_cap(&shape, CAP).unwrap();
        let m = cells((CAP / 5) as u32, 16);
        summer.add(MessageColumns::of(&m, 0..m.source.len()));
        let tiles = summer.clone().finish().unwrap();
        assert_eq!((tiles.bins, tiles.bin_ticks), (4, 1 << 19), "{} pairs in 16 bins fit in 4", CAP / 5);
        assert_eq!(tiles.count.iter().sum::<u64>(), m.source.len() as u64);
        let mut a = PairSummer::with_cap(&shape, CAP).unwrap();
        let mut b = PairSummer::with_cap(&shape, CAP).unwrap();
        let half = m.source.len() / 2;
        a.add(MessageColumns::of(&m, 0..half));
        b.add(MessageColumns::of(&m, half..m.source.len()));
        a.merge(&mut b);
        assert_eq!(a.finish().as_ref(), Some(&tiles));
        let mut many = PairSummer::with_cap(&shape, CAP).unwrap();
        let m = cells(CAP as u32 + 1, 1);
        many.add(MessageColumns::of(&m, 0..m.source.len()));
        assert!(many.finish().is_none(), "more pairs than cells: none");
    }
}
