//! Generators of MPI traces at the scales of seed 002's case studies (§IV): iterative codes in
//! which every rank computes, then exchanges messages with its partners and waits for them.
//!
//! | name | ranks | partners | messages (default) | span |
//! |---|---|---|---|---|
//! | `wrf` | 16 (4x4 grid) | 2-4 grid neighbours | ~160,000 | 4 min |
//! | `fd4` | 1,024 (32x32 grid) | 4 neighbours, plus an irregular far partner 10% of the time | ~2.2M | 5 min |
//! | `tachyon` | 256 | rank 0 only (image rows gathered by the master) | ~8,000 | 20 min |
//! | `lulesh` | 8 | all others (all-to-all) | 5,600 | 10 s |
//!
//! Each rank's iteration is a `compute` interval then an `MPI_Waitall` interval; a message is
//! sent when its sender's compute ends and arrives after a latency that grows with its size.
//! Times are nanoseconds. Deterministic for a given seed.

use exaviz_engine::model::{Dataset, Trace};

use crate::rng::SplitMix64;

/// The case studies, for `--help` texts.
pub const CASES: [&str; 4] = ["wrf", "fd4", "tachyon", "lulesh"];

struct Case {
    ranks: u32,
    iterations: u32,
    span_s: f64,
    /// Typical message size in bytes.
    bytes: u32,
}

fn case(name: &str) -> Option<Case> {
    Some(match name {
        "wrf" => Case { ranks: 16, iterations: 3_334, span_s: 240.0, bytes: 48 << 10 },
        "fd4" => Case { ranks: 1024, iterations: 524, span_s: 300.0, bytes: 16 << 10 },
        "tachyon" => Case { ranks: 256, iterations: 32, span_s: 1200.0, bytes: 12 << 10 },
        "lulesh" => Case { ranks: 8, iterations: 100, span_s: 10.0, bytes: 96 << 10 },
        _ => return None,
    })
}

/// Neighbours on a `side x side` grid of ranks (row-major), periodic or not.
fn grid_neighbours(rank: u32, side: u32, periodic: bool) -> Vec<u32> {
    let (r, c) = (rank / side, rank % side);
    let mut out = Vec::with_capacity(4);
    for (dr, dc) in [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)] {
        let (nr, nc) = (i64::from(r) + dr, i64::from(c) + dc);
        let s = i64::from(side);
        if periodic {
            out.push(((nr.rem_euclid(s)) * s + nc.rem_euclid(s)) as u32);
        } else if (0..s).contains(&nr) && (0..s).contains(&nc) {
            out.push((nr * s + nc) as u32);
        }
    }
    out
}

/// The fixed partners of `rank` in case `name` (fd4's far partners are drawn per iteration).
fn partners(name: &str, rank: u32, ranks: u32) -> Vec<u32> {
    match name {
        "wrf" => grid_neighbours(rank, 4, false),
        "fd4" => grid_neighbours(rank, 32, true),
        "tachyon" if rank != 0 => vec![0],
        "tachyon" => Vec::new(),
        _ => (0..ranks).filter(|&p| p != rank).collect(),
    }
}

/// An upper bound of the messages case `name` generates with `iterations` (default: the
/// case's), checked before anything is allocated.
pub fn message_bound(name: &str, iterations: Option<u32>) -> Option<u64> {
    let c = case(name)?;
    let per_iteration: u64 = (0..c.ranks).map(|r| partners(name, r, c.ranks).len() as u64 + 1).sum();
    Some(per_iteration * u64::from(iterations.unwrap_or(c.iterations).max(1)))
}

/// Generates case `name` with `iterations` (default: the case's) from `seed`; `None` for an
/// unknown name.
pub fn generate(name: &str, iterations: Option<u32>, seed: u64) -> Option<Dataset> {
    let c = case(name)?;
    let iterations = iterations.unwrap_or(c.iterations).max(1);
    let mut rng = SplitMix64(seed);
    let period = (c.span_s * 1e9 / f64::from(iterations)) as u64;
    let fixed: Vec<Vec<u32>> = (0..c.ranks).map(|r| partners(name, r, c.ranks)).collect();
    let mut t = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
    t.region_names = vec!["compute".into(), "MPI_Waitall".into()];
    for r in 0..c.ranks {
        t.locations.name.push(format!("rank {r}"));
        t.locations.node.push(u32::MAX);
    }
    let per_iteration: usize = fixed.iter().map(Vec::len).sum();
    let m = &mut t.messages;
    for v in [&mut m.source, &mut m.destination, &mut m.bytes, &mut m.tag] {
        v.reserve(per_iteration * iterations as usize);
    }
    let mut far = Vec::new();
    for it in 0..iterations {
        let start = u64::from(it) * period;
        for r in 0..c.ranks {
            // Compute takes 55-85% of the period (tachyon's master mostly waits).
            let share = if name == "tachyon" && r == 0 { 0.1 } else { 0.55 + 0.3 * f64::from(rng.unit()) };
            let compute_end = start + (period as f64 * share) as u64;
            let i = &mut t.intervals;
            for (kind, (a, b)) in [(0, (start, compute_end)), (1, (compute_end, start + period))] {
                i.location.push(r);
                i.start.push(a);
                i.end.push(b);
                i.kind.push(kind);
                i.depth.push(0);
            }
            far.clear();
            if name == "fd4" && rng.unit() < 0.1 {
                far.push(rng.below(c.ranks));
            }
            for (k, &p) in fixed[r as usize].iter().chain(&far).enumerate() {
                let bytes = c.bytes / 2 + rng.below(c.bytes);
                let send = compute_end + k as u64 * 2_000;
                // 5 µs plus 1 ns per 4 bytes, plus jitter: latency grows with size.
                let latency = 5_000 + u64::from(bytes / 4) + u64::from(rng.below(20_000));
                let m = &mut t.messages;
                m.source.push(r);
                m.destination.push(p);
                m.send_time.push(send);
                m.recv_time.push((send + latency).min(start + period));
                m.bytes.push(bytes);
                m.tag.push(k as u32);
            }
        }
    }
    Some(Dataset { trace: t, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_have_the_papers_scales() {
        let count = |n: &str| generate(n, None, 1).unwrap().trace.messages.source.len();
        assert_eq!(count("wrf"), 48 * 3_334);
        let fd4 = count("fd4");
        assert!((2_150_000..2_250_000).contains(&fd4), "{fd4}");
        assert_eq!(count("tachyon"), 255 * 32);
        assert_eq!(count("lulesh"), 56 * 100);
        let d = generate("wrf", Some(10), 3).unwrap();
        let m = &d.trace.messages;
        assert!((0..m.source.len()).all(|i| m.recv_time[i] > m.send_time[i] && m.source[i] != m.destination[i]));
        assert_eq!(d.trace.intervals.location.len(), 16 * 10 * 2);
        assert!(generate("nope", None, 1).is_none());
    }
}
