//! The FD4 case at any scale: `gen:fd4?ranks=65536&messages=1000000000` streams a trace of any
//! rank and message count, iteration by iteration, without ever holding it whole.
//!
//! The ranks sit on the most nearly square periodic 2-D grid; every iteration each rank computes
//! for 55-85% of the period, sends one message to each of its 4 grid neighbours (plus an
//! irregular far partner 10% of the time, as Brendel et al.'s FD4 case), then waits for the end
//! of the period (`MPI_Waitall`). An `MPI_Allreduce` over all ranks can end every N-th iteration.
//! The last iteration is cut so the trace holds exactly `messages` messages. With a slow rank
//! (`slow_rank=R`), every rank computes for 20-30% of the period and rank R for three times
//! its draw in a region of its own (`slow_work`): one deviant among any number of ranks. With a
//! heavy pair (`heavy_pair=S-R`), rank S also sends rank R 16 messages of 64 KiB each iteration.
//!
//! Each iteration is generated in blocks of ranks on every core; each block draws from its own
//! generator seeded by (seed, iteration, block), so the trace depends on the seed only, not on
//! the number of threads. An iteration's events all fall in its period, so iterations delivered
//! in order, each sorted by time, make a trace sorted by time.

use exaviz_model::dataset::Dataset;
use exaviz_model::rng::SplitMix64;
use exaviz_model::{Collectives, Intervals, Messages, Trace};
use rayon::prelude::*;

/// The period of one iteration: FD4's, 300 s over 524 iterations.
const PERIOD_NS: u64 = 300_000_000_000 / 524;
/// Typical message size (FD4's).
const BYTES: u32 = 16 << 10;
/// Ranks per generation block.
const BLOCK: u32 = 4096;
/// Most ranks a generated trace may have.
pub const MAX_RANKS: u32 = 1 << 24;
/// The slow rank's own region.
pub const SLOW_REGION: &str = "slow_work";

/// A scaled FD4 trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    pub ranks: u32,
    pub messages: u64,
    pub seed: u64,
    /// An `MPI_Allreduce` over all ranks ends every this many iterations (0: none).
    pub collectives: u32,
    /// The rank that spends three times as long as the others in a region of its own.
    pub slow: Option<u32>,
    /// A sender and receiver exchanging far more than any other pair: every iteration the
    /// sender also sends [`HEAVY_MESSAGES`] messages of four times the typical size to the
    /// receiver.
    pub heavy: Option<(u32, u32)>,
}

/// Extra messages of the heavy pair per iteration.
pub const HEAVY_MESSAGES: u32 = 16;

/// One iteration's events, each table sorted by time.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    pub messages: Messages,
    pub intervals: Intervals,
    pub collectives: Collectives,
}

/// The most nearly square `rows x cols = ranks`.
pub fn grid(ranks: u32) -> (u32, u32) {
    let mut rows = (f64::from(ranks).sqrt() as u32).max(1);
    while !ranks.is_multiple_of(rows) {
        rows -= 1;
    }
    (rows, ranks / rows)
}

impl Scale {
    /// Expected messages per iteration: 4 neighbours and 0.1 far partner per rank.
    fn per_iteration(&self) -> f64 {
        f64::from(self.ranks) * 4.1
    }

    /// About how many iterations the trace spans.
    pub fn iterations(&self) -> u64 {
        (self.messages as f64 / self.per_iteration()).ceil().max(1.0) as u64
    }

    /// An upper bound of the last time stamp: the end of the last iteration. Every rank sends
    /// at least one message to each grid neighbour other than itself, so every iteration but
    /// the cut last one holds at least that many.
    pub fn end_ticks(&self) -> u64 {
        let (rows, cols) = grid(self.ranks);
        let per_rank = if rows > 1 { 2 } else { 0 } + if cols > 1 { 2 } else { 0 };
        let most = self.messages / (per_rank * u64::from(self.ranks)).max(1) + 1;
        most.saturating_mul(PERIOD_NS)
    }

    /// The trace without events: ranks, region and collective names, the clock.
    pub fn skeleton(&self, name: &str) -> Dataset {
        let mut t = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
        t.region_names = vec!["compute".into(), "MPI_Waitall".into()];
        if self.collectives > 0 {
            t.region_names.push("MPI_Allreduce".into());
            t.collective_names.push("MPI_Allreduce".into());
        }
        if self.slow.is_some() {
            t.region_names.push(SLOW_REGION.into());
        }
        t.locations.name = (0..self.ranks).map(|r| format!("rank {r}")).collect();
        t.locations.node = vec![u32::MAX; self.ranks as usize];
        Dataset { name: name.to_string(), trace: t, ..Default::default() }
    }

    /// Calls `sink` with every iteration in order until `messages` messages were delivered.
    pub fn generate<E>(&self, mut sink: impl FnMut(Chunk) -> Result<(), E>) -> Result<(), E> {
        let mut left = self.messages;
        let mut it = 0u64;
        while left > 0 {
            let mut chunk = self.iteration(it);
            let n = chunk.messages.source.len() as u64;
            if n > left {
                chunk.messages.truncate(left as usize);
            }
            left -= n.min(left);
            sink(chunk)?;
            it += 1;
        }
        Ok(())
    }

    /// The events of iteration `it`, sorted by time.
    pub fn iteration(&self, it: u64) -> Chunk {
        let blocks: Vec<u32> = (0..self.ranks.div_ceil(BLOCK)).collect();
        let parts: Vec<Chunk> = blocks.par_iter().map(|&b| self.block(it, b)).collect();
        let mut out = Chunk::default();
        for p in parts {
            out.messages.append(p.messages);
            out.intervals.append(p.intervals);
            out.collectives.append(p.collectives);
        }
        sort_messages(&mut out.messages);
        sort_intervals(&mut out.intervals);
        out
    }

    fn block(&self, it: u64, block: u32) -> Chunk {
        let (rows, cols) = grid(self.ranks);
        // Each (iteration, block) stream seeded by a hash of both: seeds a multiple of the
        // generator's own increment apart would give consecutive iterations the same stream
        // shifted by one draw (block 0's far partners repeated from one iteration to the next).
        let hash = |v: u64| SplitMix64(v).next_u64();
        let mut rng = SplitMix64(hash(self.seed ^ hash(it ^ hash(u64::from(block) ^ 0xD1B5_4A32_D192_ED03))));
        let start = it * PERIOD_NS;
        let end = start + PERIOD_NS;
        let allreduce = self.collectives > 0 && (it + 1).is_multiple_of(u64::from(self.collectives));
        let mut c = Chunk::default();
        let first = block * BLOCK;
        // The slow rank's region is the skeleton's last.
        let slow_region = 2 + u32::from(self.collectives > 0);
        for r in first..(first + BLOCK).min(self.ranks) {
            let draw = f64::from(rng.unit());
            let share = match self.slow {
                None => 0.55 + 0.3 * draw,
                Some(s) if s == r => 3.0 * (0.2 + 0.1 * draw),
                Some(_) => 0.2 + 0.1 * draw,
            };
            let compute_end = start + (PERIOD_NS as f64 * share) as u64;
            let enter = if allreduce { compute_end.max(start + PERIOD_NS * 9 / 10) } else { end };
            // The period's first interval is its compute phase (never empty).
            let computing = c.intervals.start.len();
            super::push_period((&mut c.intervals, &mut c.collectives), r, (start, compute_end, enter, end), allreduce);
            if self.slow == Some(r) {
                c.intervals.kind[computing] = slow_region;
            }
            let (y, x) = (r / cols, r % cols);
            let mut partners = [
                ((y + rows - 1) % rows) * cols + x,
                ((y + 1) % rows) * cols + x,
                y * cols + (x + cols - 1) % cols,
                y * cols + (x + 1) % cols,
                u32::MAX,
            ];
            if rng.unit() < 0.1 {
                partners[4] = rng.below(self.ranks);
            }
            if let Some((_, to)) = self.heavy.filter(|&(from, _)| from == r) {
                for k in 0..HEAVY_MESSAGES {
                    let send = compute_end + 10_000 + u64::from(k) * 1_000;
                    let m = &mut c.messages;
                    m.source.push(r);
                    m.destination.push(to);
                    m.send_time.push(send);
                    m.recv_time.push((send + 40_000).min(end));
                    m.bytes.push(4 * BYTES);
                    m.tag.push(100 + k);
                }
            }
            for (k, &p) in partners.iter().enumerate().filter(|&(_, &p)| p != u32::MAX && p != r) {
                let bytes = BYTES / 2 + rng.below(BYTES);
                let send = compute_end + k as u64 * 2_000;
                let latency = 5_000 + u64::from(bytes / 4) + u64::from(rng.below(20_000));
                let m = &mut c.messages;
                m.source.push(r);
                m.destination.push(p);
                m.send_time.push(send);
                m.recv_time.push((send + latency).min(end));
                m.bytes.push(bytes);
                m.tag.push(k as u32);
            }
        }
        c
    }

    /// The whole trace in memory (for traces small enough to hold).
    pub fn dataset(&self, name: &str) -> Dataset {
        let mut d = self.skeleton(name);
        let t = &mut d.trace;
        let _ = self.generate(|c| {
            t.messages.append(c.messages);
            t.intervals.append(c.intervals);
            t.collectives.append(c.collectives);
            Ok::<(), ()>(())
        });
        d
    }
}

fn sort_messages(m: &mut Messages) {
    let mut order: Vec<u32> = (0..m.source.len() as u32).collect();
    order.par_sort_by_key(|&i| m.send_time[i as usize]);
    m.permute(&order);
}

fn sort_intervals(v: &mut Intervals) {
    let mut order: Vec<u32> = (0..v.start.len() as u32).collect();
    order.par_sort_by_key(|&i| v.start[i as usize]);
    v.permute(&order);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Far partners are drawn afresh every iteration in every block: the first block's reach
    /// as many receivers as the second's.
    #[test]
    fn far_partners_are_independent_across_iterations_and_blocks() {
        let s = Scale { ranks: 8192, messages: 8192 * 4 * 60, seed: 1, collectives: 0, slow: None, heavy: None };
        let m = s.dataset("x").trace.messages;
        let distinct = |blocks: std::ops::Range<u32>| {
            let mut d: Vec<u32> = (0..m.source.len())
                .filter(|&i| m.tag[i] == 4 && blocks.contains(&m.source[i]))
                .map(|i| m.destination[i])
                .collect();
            let far = d.len();
            d.sort_unstable();
            d.dedup();
            (far, d.len())
        };
        let (a, b) = (distinct(0..BLOCK), distinct(BLOCK..2 * BLOCK));
        assert!(a.0 > 1000 && b.0 > 1000, "{a:?} {b:?}");
        // Uniform draws of `far` among 8,192 receivers reach almost as many distinct ones.
        for (far, seen) in [a, b] {
            let expected = 8192.0 * (1.0 - (-(far as f64) / 8192.0).exp());
            assert!(seen as f64 > 0.9 * expected, "{far} far messages reach {seen} receivers, {expected:.0} expected");
        }
    }

    #[test]
    fn grids_are_nearly_square() {
        assert_eq!(grid(1024), (32, 32));
        assert_eq!(grid(65_536), (256, 256));
        assert_eq!(grid(1_000_000), (1000, 1000));
        assert_eq!(grid(12), (3, 4));
        assert_eq!(grid(13), (1, 13));
        assert_eq!(grid(1), (1, 1));
    }

    #[test]
    fn exact_counts_sorted_and_deterministic() {
        let s = Scale { ranks: 5000, messages: 123_457, seed: 3, collectives: 2, slow: None, heavy: None };
        let d = s.dataset("x");
        let t = &d.trace;
        assert_eq!(t.messages.source.len(), 123_457);
        assert!(t.messages.send_time.windows(2).all(|w| w[0] <= w[1]));
        assert!(t.intervals.start.windows(2).all(|w| w[0] <= w[1]));
        assert!(t.messages.source.iter().chain(&t.messages.destination).all(|&r| r < 5000));
        assert!((0..t.messages.source.len()).all(|i| t.messages.source[i] != t.messages.destination[i]));
        assert!((0..t.messages.source.len()).all(|i| t.messages.recv_time[i] >= t.messages.send_time[i]));
        // ~4.1 messages per rank per iteration: 7 iterations here, allreduces ending 3 of them.
        assert_eq!(s.iterations(), 7);
        assert_eq!(t.collectives.location.len(), 3 * 5000);
        let again = s.dataset("x");
        assert_eq!(again.trace.messages.send_time, t.messages.send_time);
        assert_eq!(again.trace.messages.destination, t.messages.destination);
        let last = t.intervals.end.iter().chain(&t.messages.recv_time).max().copied().unwrap();
        assert!(last <= s.end_ticks() && s.end_ticks() - last < 3 * PERIOD_NS, "{last} {}", s.end_ticks());
        for ranks in [2, 13, 64] {
            let s = Scale { ranks, messages: 1000, seed: 1, collectives: 0, slow: None, heavy: None };
            let d = s.dataset("x");
            assert!(d.trace.intervals.end.iter().all(|&e| e <= s.end_ticks()), "{ranks}");
        }
        let other = Scale { seed: 4, ..s }.dataset("x");
        assert_ne!(other.trace.messages.send_time, t.messages.send_time);
    }

    /// One slow rank among thousands: three times the others' compute in a region of its own,
    /// every iteration.
    #[test]
    fn a_slow_rank_spends_three_times_as_long_in_its_own_region() {
        let s = Scale { ranks: 4096, messages: 4096 * 4 * 6, seed: 1, collectives: 2, slow: Some(1234), heavy: None };
        let d = s.dataset("x");
        let t = &d.trace;
        assert_eq!(t.region_names.last().map(String::as_str), Some(SLOW_REGION));
        let own = (t.region_names.len() - 1) as u32;
        let i = &t.intervals;
        let time = |keep: &dyn Fn(usize) -> bool| -> u64 {
            (0..i.start.len()).filter(|&k| keep(k)).map(|k| i.end[k] - i.start[k]).sum()
        };
        let slow = time(&|k| i.kind[k] == own);
        assert!(slow > 0 && (0..i.start.len()).all(|k| i.kind[k] != own || i.location[k] == 1234));
        let others = time(&|k| i.kind[k] == 0) as f64 / 4095.0;
        let ratio = slow as f64 / others;
        assert!((2.5..3.5).contains(&ratio), "{ratio}");
    }

    /// A heavy pair: the sender sends the receiver its 16 extra messages every iteration, of
    /// four times the typical size; the option is refused where it names no two ranks.
    #[test]
    fn a_heavy_pair_exchanges_far_more_than_any_other() {
        let s =
            Scale { ranks: 4096, messages: 4096 * 4 * 6, seed: 1, collectives: 0, slow: None, heavy: Some((7, 3000)) };
        let d = s.dataset("x");
        let m = &d.trace.messages;
        let pair = |a: u32, b: u32| (0..m.source.len()).filter(|&k| (m.source[k], m.destination[k]) == (a, b)).count();
        let heavy = pair(7, 3000);
        assert!(heavy >= 4 * HEAVY_MESSAGES as usize, "{heavy}");
        assert!(pair(7, 8) < heavy / 8, "{} against {heavy}", pair(7, 8));
        let q = |s: &str| exaviz_model::query::Query::split(s, s.trim_start_matches("gen:")).unwrap().1;
        for bad in [
            "gen:fd4?ranks=64&heavy_pair=5-5",
            "gen:fd4?ranks=64&heavy_pair=5-64",
            "gen:fd4?ranks=64&heavy_pair=5",
            "gen:fd4?heavy_pair=1-2",
        ] {
            assert!(crate::scaled("fd4", &q(bad)).is_err(), "{bad}");
        }
        assert_eq!(crate::scaled("fd4", &q("gen:fd4?ranks=64&heavy_pair=5-9")).unwrap().unwrap().heavy, Some((5, 9)));
    }
}
