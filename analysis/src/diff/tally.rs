//! One run's numbers for a comparison, from one pass over its rows: per region name (count,
//! inclusive time, per step and per location), per collective operation, per pair of
//! locations (messages, bytes, latency) and per location (work and waiting).

use std::collections::HashMap;

use exaviz_model::Trace;
use rayon::prelude::*;

use super::steps::{self, Steps};
use crate::critical_path::graph::{collective_key, is_profiler, is_waiting, pieces_of, rows_by_location};

/// A region's or a collective's numbers in one run (ticks).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub count: u64,
    /// Inclusive time.
    pub total: u64,
    pub bytes: u64,
    /// Inclusive time per step ordinal.
    pub by_step: Vec<u64>,
    /// Inclusive time per location.
    pub by_location: HashMap<u32, u64>,
}

impl Tally {
    fn add(&mut self, loc: u32, step: Option<u32>, ticks: u64) {
        self.count += 1;
        self.total += ticks;
        *self.by_location.entry(loc).or_default() += ticks;
        if let Some(s) = step {
            let s = s as usize;
            if self.by_step.len() <= s {
                self.by_step.resize(s + 1, 0);
            }
            self.by_step[s] += ticks;
        }
    }
}

/// Messages from one location to another.
#[derive(Clone, Debug, Default)]
pub struct PairTally {
    pub count: u64,
    pub bytes: u64,
    /// Sum of send-to-receive times of received messages, and how many.
    pub latency: u64,
    pub received: u64,
}

/// One run, tallied.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub ticks_per_second: u64,
    /// Locations holding rows (the count results are normalised by).
    pub active: usize,
    pub steps: Steps,
    /// Each step's length (ticks).
    pub step_lengths: Vec<u64>,
    pub regions: HashMap<String, Tally>,
    /// Per call path (the regions enclosing a row and its own, joined by [`PATH_JOIN`]), where
    /// rows nest; empty otherwise.
    pub paths: HashMap<String, Tally>,
    pub collectives: HashMap<String, Tally>,
    pub pairs: HashMap<(u32, u32), PairTally>,
    /// Per location: self time in work and in waiting regions (ticks).
    pub work: Vec<u64>,
    pub wait: Vec<u64>,
    /// Per location, its work and its waiting per step (empty where locations times steps
    /// exceed [`STEP_CELLS`]).
    pub work_by_step: Vec<Vec<u64>>,
    pub wait_by_step: Vec<Vec<u64>>,
    /// The window's length actually covered by rows (first start to last end).
    pub length: u64,
    /// The names of the pairs' ends where they are not the locations (a pyramid's message
    /// blocks); empty otherwise.
    pub pair_names: Vec<String>,
}

/// The most cells of locations times steps kept per run for each location's steps.
pub const STEP_CELLS: usize = 4_000_000;

/// What joins the regions of a call path, outermost first.
pub const PATH_JOIN: &str = " > ";

/// The most call paths tallied per run: rows on paths past them are left out of the paths
/// (not of the regions).
pub const MOST_PATHS: usize = 100_000;

impl Run {
    /// `ticks` of this run in seconds.
    pub fn secs(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_second as f64
    }

    /// A region's or collective's numbers in seconds.
    pub fn side(&self, x: &Tally) -> super::Side {
        let total_s = self.secs(x.total);
        super::Side { count: x.count, total_s, mean_s: total_s / x.count.max(1) as f64, bytes: x.bytes }
    }
}

/// Where a pass looks: the window, the steps kept, and what is seen so far.
struct Pass<'a> {
    t: &'a Trace,
    window: (u64, u64),
    only: bool,
    steps: Steps,
    active: Vec<bool>,
    first: u64,
    last: u64,
}

impl Pass<'_> {
    fn inside(&self, l: u32, at: u64) -> bool {
        at >= self.window.0 && at < self.window.1 && (!self.only || self.steps.step_of(l, at).is_some())
    }

    fn saw(&mut self, l: u32, from: u64, to: u64) {
        self.active[l as usize] = true;
        self.first = self.first.min(from);
        self.last = self.last.max(to);
    }

    /// Each region id's count and inclusive time.
    fn regions(&mut self) -> Vec<Tally> {
        let (t, n) = (self.t, self.t.locations.name.len());
        let i = &t.intervals;
        let mut per_region: Vec<Tally> = vec![Tally::default(); t.region_names.len()];
        for k in 0..i.start.len() {
            let l = i.location[k];
            if (l as usize) >= n || !self.inside(l, i.start[k]) || i.end[k] < i.start[k] {
                continue;
            }
            self.saw(l, i.start[k], i.end[k]);
            if let Some(r) = per_region.get_mut(i.kind[k] as usize) {
                r.add(l, self.steps.step_of(l, i.start[k]), i.end[k] - i.start[k]);
            }
        }
        per_region
    }

    /// Each call path's count and inclusive time, where rows nest: a path is the names of the
    /// regions enclosing a row (each location's rows nest by time) and its own, outermost first;
    /// regions in `skip` (the profiler's spans, step annotations) are left out of paths, so that
    /// a step's rows take the same paths as another's.
    fn paths(&self, skip: &[bool]) -> HashMap<String, Tally> {
        let (t, i) = (self.t, &self.t.intervals);
        if !i.depth.iter().any(|&d| d > 0) {
            return HashMap::new();
        }
        let mut id_of: HashMap<(u32, u32), u32> = HashMap::new();
        let (mut names, mut tallies): (Vec<String>, Vec<Tally>) = (Vec::new(), Vec::new());
        for (l, rows) in rows_by_location(t).into_iter().enumerate() {
            let l = l as u32;
            // The enclosing rows: their end and path (u32::MAX: none).
            let mut open: Vec<(u64, u32)> = Vec::new();
            for k in rows {
                while open.last().is_some_and(|&(end, _)| end <= i.start[k]) {
                    open.pop();
                }
                let parent = open.last().map_or(u32::MAX, |o| o.1);
                let r = i.kind[k];
                if skip.get(r as usize).copied().unwrap_or(true) {
                    open.push((i.end[k], parent));
                    continue;
                }
                let next = names.len() as u32;
                let id = match id_of.get(&(parent, r)) {
                    Some(&id) => id,
                    None if names.len() < MOST_PATHS => {
                        let name = &t.region_names[r as usize];
                        names.push(match names.get(parent as usize) {
                            Some(p) => format!("{p}{PATH_JOIN}{name}"),
                            None => name.clone(),
                        });
                        tallies.push(Tally::default());
                        id_of.insert((parent, r), next);
                        next
                    }
                    None => u32::MAX,
                };
                open.push((i.end[k], id));
                if let Some(x) = tallies.get_mut(id as usize)
                    && self.inside(l, i.start[k])
                {
                    x.add(l, self.steps.step_of(l, i.start[k]), i.end[k] - i.start[k]);
                }
            }
        }
        names.into_iter().zip(tallies).filter(|(_, x)| x.count > 0).collect()
    }

    /// Per location its work and waiting (self time outside and inside waiting regions), in all
    /// and per step, from each location's innermost pieces.
    fn pieces(&self, skip: &[bool]) -> Work {
        let (t, n) = (self.t, self.t.locations.name.len());
        let waiting: Vec<bool> = t.region_names.iter().map(|r| is_waiting(r)).collect();
        let waits = |r: u32| waiting.get(r as usize).copied().unwrap_or(false);
        let stepped = if self.steps.count.saturating_mul(n) <= STEP_CELLS { self.steps.count } else { 0 };
        type Cut = (Vec<(u32, u64)>, [Vec<u64>; 2]);
        let cuts: Vec<Cut> = rows_by_location(t)
            .par_iter()
            .enumerate()
            .map(|(l, rows)| {
                let mut by: HashMap<u32, u64> = HashMap::new();
                let mut steps = [vec![0u64; stepped], vec![0u64; stepped]];
                for p in pieces_of(t, rows, skip).into_iter().filter(|p| self.inside(l as u32, p.start)) {
                    *by.entry(p.region).or_default() += p.end - p.start;
                    if let Some(s) = self.steps.step_of(l as u32, p.start).filter(|&s| (s as usize) < stepped) {
                        steps[usize::from(waits(p.region))][s as usize] += p.end - p.start;
                    }
                }
                (by.into_iter().collect(), steps)
            })
            .collect();
        let mut w = Work { work: vec![0; n], wait: vec![0; n], ..Work::default() };
        for (l, (by, [work, wait])) in cuts.into_iter().enumerate() {
            if stepped > 0 {
                w.work_by_step.push(work);
                w.wait_by_step.push(wait);
            }
            for (r, ticks) in by {
                let into = if waits(r) { &mut w.wait } else { &mut w.work };
                into[l] += ticks;
            }
        }
        w
    }

    /// The model's collective rows by operation.
    fn collectives(&mut self) -> HashMap<String, Tally> {
        let (t, n) = (self.t, self.t.locations.name.len());
        let c = &t.collectives;
        let mut out: HashMap<String, Tally> = HashMap::new();
        for k in 0..c.start.len() {
            let l = c.location[k];
            if (l as usize) >= n || !self.inside(l, c.start[k]) || c.end[k] < c.start[k] {
                continue;
            }
            self.saw(l, c.start[k], c.end[k]);
            let name =
                t.collective_names.get(c.op[k] as usize).cloned().unwrap_or_else(|| format!("operation {}", c.op[k]));
            let e = out.entry(name).or_default();
            e.add(l, self.steps.step_of(l, c.start[k]), c.end[k] - c.start[k]);
            e.bytes += u64::from(c.bytes[k]);
        }
        out
    }

    /// Messages per pair of locations, by send time.
    fn pairs(&mut self) -> HashMap<(u32, u32), PairTally> {
        let (t, n) = (self.t, self.t.locations.name.len());
        let m = &t.messages;
        let mut out: HashMap<(u32, u32), PairTally> = HashMap::new();
        for k in 0..m.send_time.len() {
            let (s, d) = (m.source[k], m.destination[k]);
            if (s as usize) >= n || (d as usize) >= n || !self.inside(s, m.send_time[k]) {
                continue;
            }
            let received = m.recv_time[k] != u64::MAX && m.recv_time[k] >= m.send_time[k];
            self.saw(s, m.send_time[k], if received { m.recv_time[k] } else { m.send_time[k] });
            let e = out.entry((s, d)).or_default();
            e.count += 1;
            e.bytes += u64::from(m.bytes[k]);
            if received {
                e.latency += m.recv_time[k] - m.send_time[k];
                e.received += 1;
            }
        }
        out
    }
}

/// Per location, its work and waiting (self time, ticks), in all and per step.
#[derive(Default)]
struct Work {
    work: Vec<u64>,
    wait: Vec<u64>,
    work_by_step: Vec<Vec<u64>>,
    wait_by_step: Vec<Vec<u64>>,
}

/// Adds `x` into `into`.
fn merge(into: &mut Tally, x: &Tally) {
    into.count += x.count;
    into.total += x.total;
    into.bytes += x.bytes;
    for (&l, &v) in &x.by_location {
        *into.by_location.entry(l).or_default() += v;
    }
    if into.by_step.len() < x.by_step.len() {
        into.by_step.resize(x.by_step.len(), 0);
    }
    for (s, &v) in x.by_step.iter().enumerate() {
        into.by_step[s] += v;
    }
}

/// Tallies `t` over `window` (ticks), and within steps `only` (ordinals, inclusive) where
/// given. Rows are counted where they begin, with their whole time.
pub fn tally(t: &Trace, window: (u64, u64), only: Option<(u32, u32)>) -> Run {
    let n = t.locations.name.len();
    let mut steps = steps::find(t, window);
    if let Some((a, b)) = only {
        steps.keep(a, b);
    }
    let mut pass = Pass { t, window, only: only.is_some(), steps, active: vec![false; n], first: u64::MAX, last: 0 };
    let per_region = pass.regions();
    let skip: Vec<bool> = (0..t.region_names.len())
        .map(|r| is_profiler(&t.region_names[r]) || t.step_regions.binary_search(&(r as u32)).is_ok())
        .collect();
    let work = pass.pieces(&skip);
    let paths = pass.paths(&skip);
    // Regions by name (the model may hold one name under several ids), but the profiler's own
    // spans and steps (and the reader's step annotations): the run's row compares the steps.
    let mut regions: HashMap<String, Tally> = HashMap::new();
    for (r, x) in per_region.iter().enumerate().filter(|(r, x)| x.count > 0 && !skip[*r]) {
        merge(regions.entry(t.region_names[r].clone()).or_default(), x);
    }
    // Collectives: the model's rows by operation, else the regions named as collectives.
    let mut collectives = pass.collectives();
    if collectives.is_empty() {
        for (name, x) in &regions {
            if let Some(op) = collective_key(name) {
                merge(collectives.entry(op.to_string()).or_default(), x);
            }
        }
    }
    let pairs = pass.pairs();
    let (first, last) = (pass.first, pass.last);
    let length = last.saturating_sub(first.min(last));
    let end = if first == u64::MAX { window.1 } else { last.min(window.1) };
    Run {
        ticks_per_second: t.ticks_per_second.max(1),
        active: pass.active.iter().filter(|&&a| a).count(),
        step_lengths: pass.steps.lengths(end),
        steps: pass.steps,
        regions,
        paths,
        collectives,
        pairs,
        work: work.work,
        wait: work.wait,
        work_by_step: work.work_by_step,
        wait_by_step: work.wait_by_step,
        length,
        pair_names: Vec::new(),
    }
}
