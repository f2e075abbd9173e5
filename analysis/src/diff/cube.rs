//! Two stores compared from their pyramids, without reading their rows: the finest level's
//! state tiles give each region's time per rank block and time bin, its message cube the
//! messages and bytes per pair of rank blocks. Locations are then the tiles' rank blocks
//! (`ranks 0-63`, or a rank's own name where a block holds one), steps are equal time slices of
//! each run (so a change is told from the slice-to-slice variation of a regular run), and counts
//! of entries are not known (0).

use std::collections::HashMap;

use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_model::pyramid::Pyramid;

use super::steps::Steps;
use super::tally::{PairTally, Run, Tally};
use crate::critical_path::graph::is_waiting;

/// Time slices each run is cut into.
pub const SLICES: usize = 16;

/// A block's name: its rank's own where it holds one, else its ranks.
fn block_name(t: &Trace, block: u32, size: u32, ranks: u32) -> String {
    let first = block * size;
    let last = (first + size).min(ranks) - 1;
    if first == last {
        t.locations.name.get(first as usize).cloned().unwrap_or_else(|| format!("rank {first}"))
    } else {
        format!("ranks {first}-{last}")
    }
}

/// The run of a store, tallied from its pyramid, with a trace that names its blocks.
pub fn run_of(d: &Dataset, span: (u64, u64)) -> (Trace, Run) {
    let p: &Pyramid = &d.out_of_core.as_ref().expect("a store").pyramid;
    let t = &d.trace;
    let (shape, level) = (&p.shape, &p.levels[0]);
    let (states, bins, blocks) = (shape.states as usize, level.state_bins as usize, level.blocks as usize);
    // The bins the run covers, cut into slices.
    let used = (span.1.saturating_sub(shape.t0) / level.state_bin_ticks.max(1) + 1).min(bins as u64) as usize;
    let slices = SLICES.min(used.max(1));
    let slice_of = |bin: usize| (bin * slices / used.max(1)).min(slices - 1);
    // A state's name: the region's, the last state holding every region from it on.
    let name = |s: usize| -> String {
        if s + 1 == states && t.region_names.len() > states {
            "other regions".into()
        } else {
            t.region_names.get(s).cloned().unwrap_or_else(|| format!("state {s}"))
        }
    };
    let waits: Vec<bool> = (0..states).map(|s| is_waiting(&name(s))).collect();
    let mut names = Trace { ticks_per_second: t.ticks_per_second, ..Default::default() };
    for b in 0..blocks as u32 {
        names.locations.name.push(block_name(t, b, level.block, shape.ranks));
        names.locations.node.push(u32::MAX);
    }
    let mut regions: HashMap<String, Tally> = HashMap::new();
    let (mut work, mut wait) = (vec![0u64; blocks], vec![0u64; blocks]);
    let (mut work_by_step, mut wait_by_step) = (vec![vec![0u64; slices]; blocks], vec![vec![0u64; slices]; blocks]);
    let mut active = vec![false; blocks];
    for (s, &waiting) in waits.iter().enumerate() {
        let mut x = Tally { by_step: vec![0; slices], ..Tally::default() };
        for b in 0..blocks {
            let row = &level.ticks[(b * states + s) * bins..(b * states + s + 1) * bins];
            let mut sum = 0u64;
            for (bin, &v) in row.iter().enumerate().take(used).filter(|(_, v)| **v > 0) {
                let k = slice_of(bin);
                x.by_step[k] += v;
                let into = if waiting { &mut wait_by_step } else { &mut work_by_step };
                into[b][k] += v;
                sum += v;
            }
            if sum > 0 {
                x.by_location.insert(b as u32, sum);
                active[b] = true;
                let into = if waiting { &mut wait } else { &mut work };
                into[b] += sum;
            }
            x.total += sum;
        }
        if x.total > 0 {
            regions.insert(name(s), x);
        }
    }
    // Messages per pair of message blocks.
    let (counts, bytes) = level.matrix(0..level.message_bins);
    let mb = level.message_blocks as usize;
    let mut pairs: HashMap<(u32, u32), PairTally> = HashMap::new();
    for (k, (&c, &y)) in counts.iter().zip(&bytes).enumerate().filter(|(_, (c, _))| **c > 0) {
        pairs.insert(((k / mb) as u32, (k % mb) as u32), PairTally { count: c, bytes: y, latency: 0, received: 0 });
    }
    let pair_names = (0..mb as u32).map(|b| block_name(t, b, level.message_block, shape.ranks)).collect();
    let starts: Vec<u64> = (0..slices)
        .map(|k| shape.t0 + (k * used).div_ceil(slices) as u64 * level.state_bin_ticks)
        .map(|at| at.max(span.0))
        .collect();
    let steps = Steps::slices(format!("{slices} equal time slices of the pyramid"), starts);
    let length = span.1.saturating_sub(span.0);
    let step_lengths = steps.lengths(span.1);
    let run = Run {
        ticks_per_second: t.ticks_per_second.max(1),
        active: active.iter().filter(|&&a| a).count(),
        steps,
        step_lengths,
        regions,
        paths: HashMap::new(),
        collectives: HashMap::new(),
        pairs,
        work,
        wait,
        work_by_step,
        wait_by_step,
        length,
        pair_names,
    };
    (names, run)
}
