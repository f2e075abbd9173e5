//! Generators of MPI traces at the scales of Brendel et al.'s case studies (§IV): iterative codes in
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
//!
//! Two extras make structure to look for ([`Extras`]): `collectives=N` ends every N-th
//! iteration with an `MPI_Allreduce` over all ranks, and `plant=1` plants two events in the
//! run: from 40% to 55% of the iterations the ranks of the second eighth compute twice as long,
//! so the others wait for them (a slow node group); from 70% to 80% the ranks of the sixth
//! eighth send 8 extra messages each per iteration among themselves (a phase of extra traffic).

use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_model::rng::SplitMix64;

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

/// The ranks of case `name` (`None` for no such case).
pub fn ranks(name: &str) -> Option<u32> {
    case(name).map(|c| c.ranks)
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

/// Structure added to a generated trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extras {
    /// An `MPI_Allreduce` over all ranks ends every this many iterations (0: none).
    pub collectives: u32,
    /// A slow group of ranks and a phase of extra traffic (see the module's documentation).
    pub plant: bool,
    /// A rank that computes 1.5x as long in every iteration: the iterations stretch to 1.3x
    /// their length and the others wait (a run to compare with one without it).
    pub slow_rank: Option<u32>,
}

/// Extra messages per rank and iteration in the planted traffic phase.
const BURST: u32 = 8;

/// The ranks slowed (`.0`) and the ranks of the extra traffic (`.1`), and the iterations of
/// each, for `ranks` ranks and `iterations` iterations.
fn planted(ranks: u32, iterations: u32) -> [(std::ops::Range<u32>, std::ops::Range<u32>); 2] {
    let eighth = (ranks / 8).max(1);
    let at = |f: f64| (f64::from(iterations) * f) as u32;
    [
        (ranks / 4..(ranks / 4 + eighth).min(ranks), at(0.40)..at(0.55).max(at(0.40) + 1)),
        (ranks * 5 / 8..(ranks * 5 / 8 + eighth).min(ranks), at(0.70)..at(0.80).max(at(0.70) + 1)),
    ]
}

/// An upper bound of the messages case `name` generates with `iterations` (default: the
/// case's), checked before anything is allocated.
pub fn message_bound(name: &str, iterations: Option<u32>, extras: Extras) -> Option<u64> {
    let c = case(name)?;
    let per_iteration: u64 = (0..c.ranks).map(|r| partners(name, r, c.ranks).len() as u64 + 1).sum();
    let per_iteration = per_iteration + if extras.plant { u64::from(c.ranks / 8 + 1) * u64::from(BURST) } else { 0 };
    Some(per_iteration * u64::from(iterations.unwrap_or(c.iterations).max(1)))
}

/// Generates case `name` with `iterations` (default: the case's) from `seed`; `None` for an
/// unknown name.
pub fn generate(name: &str, iterations: Option<u32>, seed: u64) -> Option<Dataset> {
    generate_with(name, iterations, seed, Extras::default())
}

/// [`generate`] with collectives and planted structure.
#[allow(clippy::too_many_lines)]
pub fn generate_with(name: &str, iterations: Option<u32>, seed: u64, extras: Extras) -> Option<Dataset> {
    let c = case(name)?;
    let iterations = iterations.unwrap_or(c.iterations).max(1);
    let mut rng = SplitMix64(seed);
    let base = (c.span_s * 1e9 / f64::from(iterations)) as u64;
    let fixed: Vec<Vec<u32>> = (0..c.ranks).map(|r| partners(name, r, c.ranks)).collect();
    let [(slow_ranks, slow_its), (burst_ranks, burst_its)] = planted(c.ranks, iterations);
    let mut t = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
    t.region_names = vec!["compute".into(), "MPI_Waitall".into()];
    if extras.collectives > 0 {
        t.region_names.push("MPI_Allreduce".into());
        t.collective_names.push("MPI_Allreduce".into());
    }
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
    let mut start = 0u64;
    for it in 0..iterations {
        let slowed = extras.plant && slow_its.contains(&it);
        let burst = extras.plant && burst_its.contains(&it);
        let allreduce = extras.collectives > 0 && (it + 1) % extras.collectives == 0;
        // A slow group stretches the iteration for everyone: the others wait for it.
        let period = if slowed {
            2 * base
        } else if extras.slow_rank.is_some() {
            base * 13 / 10
        } else {
            base
        };
        for r in 0..c.ranks {
            // Compute takes 55-85% of the period (tachyon's master mostly waits).
            let share = if name == "tachyon" && r == 0 { 0.1 } else { 0.55 + 0.3 * f64::from(rng.unit()) };
            let slow = slowed && slow_ranks.contains(&r);
            let stretch = if extras.slow_rank == Some(r) { 1.5 } else { 1.0 };
            let compute = (if slow { period } else { base }) as f64 * share * stretch;
            let compute_end = start + compute as u64;
            // Ranks enter the allreduce when done, at 90% of the period at the earliest, and
            // all leave it at the period's end.
            let enter = if allreduce { compute_end.max(start + period * 9 / 10) } else { start + period };
            super::push_period(
                (&mut t.intervals, &mut t.collectives),
                r,
                (start, compute_end, enter, start + period),
                allreduce,
            );
            far.clear();
            if name == "fd4" && rng.unit() < 0.1 {
                far.push(rng.below(c.ranks));
            }
            if burst && burst_ranks.contains(&r) && burst_ranks.len() > 1 {
                for _ in 0..BURST {
                    let mut p = burst_ranks.start + rng.below(burst_ranks.len() as u32);
                    if p == r {
                        p = burst_ranks.start + (p + 1 - burst_ranks.start) % burst_ranks.len() as u32;
                    }
                    far.push(p);
                }
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
        start += period;
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

    #[test]
    fn extras_add_collectives_and_planted_structure_within_the_bound() {
        let plain = generate("fd4", Some(20), 5).unwrap();
        let extras = Extras { collectives: 5, plant: true, slow_rank: None };
        let d = generate_with("fd4", Some(20), 5, extras).unwrap();
        let t = &d.trace;
        assert_eq!(t.collectives.location.len(), 4 * 1024, "an allreduce over all ranks every 5th iteration");
        let bound = message_bound("fd4", Some(20), extras).unwrap();
        assert!(t.messages.source.len() as u64 <= bound);
        // The burst: 8 extra messages per rank of ranks 640..768 in iterations 14 and 15, all
        // within the group (fd4's random far partners drawn after them differ a little).
        let extra = t.messages.source.len() as i64 - plain.trace.messages.source.len() as i64;
        assert!((2 * 128 * 8 - 100..2 * 128 * 8 + 100).contains(&extra), "{extra}");
        let m = &t.messages;
        let period = 300_000_000_000 / 20;
        let in_burst = (0..m.source.len())
            .filter(|&i| (640..768).contains(&m.source[i]) && (640..768).contains(&m.destination[i]))
            .filter(|&i| (17 * period..19 * period).contains(&m.send_time[i]))
            .count();
        assert!(in_burst >= 2 * 128 * 8, "{in_burst}");
        // The slow group doubles iterations 8..11: the run is longer.
        let end = |t: &Trace| t.intervals.end.iter().copied().max().unwrap();
        assert_eq!(end(t), end(&plain.trace) + 3 * (300_000_000_000 / 20));
        // Without extras, generate_with is generate.
        let same = generate_with("fd4", Some(20), 5, Extras::default()).unwrap();
        assert_eq!(same.trace.messages.send_time, plain.trace.messages.send_time);
    }
}
