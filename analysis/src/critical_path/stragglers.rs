//! Stragglers: per step, the processes (ranks) that work longer than their peers, by robust
//! statistics (the median and the median absolute deviation across peers, not the mean, so
//! that one slow rank does not move the yardstick it is measured by), told apart from those
//! that are only late because they waited.
//!
//! Steps are Kineto's `ProfilerStep#N` regions where the trace has them (matched by N across
//! ranks), else the window is one step. Peers are the processes whose names differ only in
//! their numbers (`rank 3 python` and `rank 5 python`, not `process rank 3: Spans`) and, in a
//! training run, that share a pipeline stage. The yardstick is the lower median, so that of two
//! peers the faster one is.

use std::collections::{BTreeMap, HashMap};

use exaviz_model::Trace;
use exaviz_model::training::Training;
use serde::Serialize;

use super::graph::Graph;
use crate::stats::lower_median;

/// How far past its peers' median a process must be, in robust standard deviations
/// (1.4826 × MAD), to stand out.
const SIGMAS: f64 = 3.0;
/// ... and at least this share of the median, so that noise among identical ranks does not.
const FLOOR: f64 = 0.1;

/// A process that stood out in a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StragglerRow {
    pub step: String,
    pub process: String,
    /// Its work (time in regions other than waiting) in the step, and its peers' median.
    pub work_s: f64,
    pub median_work_s: f64,
    /// Its waiting in the step, and its peers' median.
    pub wait_s: f64,
    pub median_wait_s: f64,
    /// "computes longer": the lateness is its own; "waits longer": inherited from others.
    pub verdict: String,
}

/// A process named as a straggler: the steps in which it worked longer than its peers, and
/// the time it worked beyond their median in them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Straggler {
    pub process: String,
    pub steps: u32,
    pub of_steps: u32,
    pub excess_s: f64,
    /// Where that excess went: the regions (innermost, as the trace names them) in which it
    /// worked longer than its peers' median in those steps, most first (at most [`REGIONS`]).
    pub regions: Vec<RegionExcess>,
}

/// A region's part of a straggler's excess.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionExcess {
    pub region: String,
    pub excess_s: f64,
}

/// Regions named per straggler.
pub const REGIONS: usize = 3;
/// Peers a straggler's regions are compared with at most (evenly spaced in the group).
const PEERS: usize = 32;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stragglers {
    pub steps: u32,
    /// Every process that stood out in a step, step by step.
    pub rows: Vec<StragglerRow>,
    /// The processes that worked longer in more than half of the steps, most excess first.
    pub named: Vec<Straggler>,
}

/// Whether `x` stands out above the values whose median is `m` and MAD `mad`.
fn stands_out(x: f64, m: f64, mad: f64) -> bool {
    x - m > (SIGMAS * 1.4826 * mad).max(FLOOR * m) && x > 0.0
}

/// A step: its name and per process its span.
type StepSpans = (String, HashMap<u32, (u64, u64)>);

/// The number of a Kineto step region (`ProfilerStep#3` is 3).
pub(crate) fn step_number(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#").and_then(|k| k.trim().parse().ok())
}

/// The steps of `t` in `window`.
pub(crate) fn steps(t: &Trace, g: &Graph, window: (u64, u64)) -> Vec<StepSpans> {
    let i = &t.intervals;
    let step_of: Vec<Option<u64>> = t.region_names.iter().map(|n| step_number(n)).collect();
    let mut by: BTreeMap<u64, HashMap<u32, (u64, u64)>> = BTreeMap::new();
    for k in 0..i.start.len() {
        let Some(n) = step_of.get(i.kind[k] as usize).copied().flatten() else { continue };
        let (a, b) = (i.start[k].max(window.0), i.end[k].min(window.1));
        if b <= a {
            continue;
        }
        let p = g.lanes.process.get(i.location[k] as usize).copied().unwrap_or(0);
        let e = by.entry(n).or_default().entry(p).or_insert((a, b));
        *e = (e.0.min(a), e.1.max(b));
    }
    if by.is_empty() {
        let all = (0..g.lanes.processes.len() as u32).map(|p| (p, window)).collect();
        return vec![("the window".into(), all)];
    }
    by.into_iter().map(|(n, m)| (format!("ProfilerStep#{n}"), m)).collect()
}

/// A process's peer group: its name with every run of digits as one `#`.
fn peer_key(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('#');
            }
            digits = true;
        } else {
            out.push(c);
            digits = false;
        }
    }
    out
}

/// One step's work per process beside its peers' (see [`step_work`]).
pub(crate) struct StepWork {
    pub name: String,
    /// Per process its span in the step.
    pub spans: HashMap<u32, (u64, u64)>,
    /// Per process measured among at least one peer: its (work, wait) ticks and its peers'
    /// medians of both, with their median absolute deviations.
    pub measured: Vec<Measured>,
}

/// A process's work and waiting in a step beside its peers'.
pub(crate) struct Measured {
    pub process: u32,
    /// Its peer group, an index into [`Peers::groups`].
    pub group: u32,
    pub work: f64,
    pub wait: f64,
    pub median_work: f64,
    pub median_wait: f64,
    pub mad_work: f64,
    pub mad_wait: f64,
}

/// The peer groups of the processes of `g`: by name with numbers as `#`, and where `training`
/// says, by pipeline stage.
fn peer_groups(g: &Graph, training: Option<&Training>) -> Vec<Vec<u32>> {
    let lanes = &g.lanes;
    // Per process its pipeline stage (0 where no training model says).
    let mut stage = vec![0u32; lanes.processes.len()];
    for d in training.map_or(&[][..], |tr| &tr.devices[..]) {
        if let Some(p) = lanes.process_of_device(&d.name) {
            stage[p as usize] = d.stage;
        }
    }
    let peers: BTreeMap<(String, u32), Vec<u32>> =
        (0..lanes.processes.len() as u32).fold(BTreeMap::new(), |mut m, p| {
            let name = &lanes.processes[p as usize];
            m.entry((peer_key(name), stage[p as usize])).or_insert_with(Vec::new).push(p);
            m
        });
    peers.into_values().collect()
}

/// The processes' locations and peer groups.
pub(crate) struct Peers {
    pub locs_of: Vec<Vec<u32>>,
    pub groups: Vec<Vec<u32>>,
}

impl Peers {
    pub fn new(g: &Graph, training: Option<&Training>) -> Self {
        let mut locs_of: Vec<Vec<u32>> = vec![Vec::new(); g.lanes.processes.len()];
        for (l, &p) in g.lanes.process.iter().enumerate() {
            locs_of[p as usize].push(l as u32);
        }
        Self { locs_of, groups: peer_groups(g, training) }
    }

    /// The work of process `p` in `span` per region (not waiting), ticks.
    fn regions(&self, g: &Graph, p: u32, span: (u64, u64)) -> HashMap<u32, u64> {
        let lanes = &g.lanes;
        let mut m = HashMap::new();
        for &l in &self.locs_of[p as usize] {
            lanes.each_region(l, span, |r, dt| {
                if let Some(r) = r.filter(|&r| !lanes.waiting.get(r as usize).copied().unwrap_or(false)) {
                    *m.entry(r).or_default() += dt;
                }
            });
        }
        m
    }
}

/// Per step of `t` in `window`, each process's work and waiting beside its `peers`' (processes
/// with no work in a step, or without a peer that has some, are not measured).
pub(crate) fn step_work_of(t: &Trace, g: &Graph, window: (u64, u64), peers: &Peers) -> Vec<StepWork> {
    let lanes = &g.lanes;
    let (locs_of, groups) = (&peers.locs_of, &peers.groups);
    let mut out = Vec::new();
    for (name, spans) in steps(t, g, window) {
        // Per process in the step: (work, wait) ticks.
        let measure = |p: u32| -> Option<(f64, f64)> {
            let span = *spans.get(&p)?;
            let (mut work, mut wait) = (0u64, 0u64);
            for &l in &locs_of[p as usize] {
                lanes.each_region(l, span, |r, dt| match r {
                    Some(r) if lanes.waiting.get(r as usize).copied().unwrap_or(false) => wait += dt,
                    Some(_) => work += dt,
                    None => {}
                });
            }
            (work > 0).then_some((work as f64, wait as f64))
        };
        let mut measured = Vec::new();
        for (gi, group) in groups.iter().enumerate() {
            let m: Vec<(u32, (f64, f64))> = group.iter().filter_map(|&p| measure(p).map(|x| (p, x))).collect();
            if m.len() < 2 {
                continue;
            }
            let (mut works, mut waits): (Vec<f64>, Vec<f64>) = m.iter().map(|x| x.1).unzip();
            let (mw, mq) = (lower_median(&mut works), lower_median(&mut waits));
            let mut dev: Vec<f64> = works.iter().map(|x| (x - mw).abs()).collect();
            let mad_w = lower_median(&mut dev);
            let mut dev: Vec<f64> = waits.iter().map(|x| (x - mq).abs()).collect();
            let mad_q = lower_median(&mut dev);
            measured.extend(m.into_iter().map(|(process, (work, wait))| Measured {
                process,
                group: gi as u32,
                work,
                wait,
                median_work: mw,
                median_wait: mq,
                mad_work: mad_w,
                mad_wait: mad_q,
            }));
        }
        out.push(StepWork { name, spans, measured });
    }
    out
}

/// The stragglers of `t` in `window`; `training`, the training model of the same files, puts
/// the processes of each pipeline stage among their own peers.
pub fn stragglers(t: &Trace, g: &Graph, window: (u64, u64), training: Option<&Training>) -> Stragglers {
    let lanes = &g.lanes;
    let tps = t.ticks_per_second.max(1) as f64;
    let peers = Peers::new(g, training);
    let all_steps = step_work_of(t, g, window, &peers);
    let mut rows = Vec::new();
    let mut named: HashMap<u32, (u32, f64, HashMap<u32, f64>)> = HashMap::new();
    for step in &all_steps {
        for m in &step.measured {
            let verdict = if stands_out(m.work, m.median_work, m.mad_work) {
                let e = named.entry(m.process).or_default();
                e.0 += 1;
                e.1 += m.work - m.median_work;
                for (r, x) in region_excess(g, &peers, step, m) {
                    *e.2.entry(r).or_default() += x;
                }
                "computes longer"
            } else if stands_out(m.wait, m.median_wait, m.mad_wait) {
                "waits longer"
            } else {
                continue;
            };
            rows.push(StragglerRow {
                step: step.name.clone(),
                process: lanes.processes[m.process as usize].clone(),
                work_s: m.work / tps,
                median_work_s: m.median_work / tps,
                wait_s: m.wait / tps,
                median_wait_s: m.median_wait / tps,
                verdict: verdict.into(),
            });
        }
    }
    // A straggler is slow step after step: one slow step of a few is a hiccup (listed above).
    let of = all_steps.len() as u32;
    let mut named: Vec<Straggler> = named
        .into_iter()
        .filter(|(_, (steps, _, _))| of < 2 || 2 * steps > of)
        .map(|(p, (steps, excess, regions))| Straggler {
            process: lanes.processes[p as usize].clone(),
            steps,
            of_steps: all_steps.len() as u32,
            excess_s: excess / tps,
            regions: top_regions(
                regions
                    .into_iter()
                    .map(|(r, x)| (t.region_names.get(r as usize).cloned().unwrap_or_default(), x / tps)),
            ),
        })
        .collect();
    named.sort_by(|a, b| b.excess_s.total_cmp(&a.excess_s).then_with(|| a.process.cmp(&b.process)));
    Stragglers { steps: all_steps.len() as u32, rows, named }
}

/// Per region, the work of the process measured by `m` in `step` beyond the lower median of
/// its peers' in that region (up to [`PEERS`] of them, evenly spaced), ticks.
fn region_excess(g: &Graph, peers: &Peers, step: &StepWork, m: &Measured) -> Vec<(u32, f64)> {
    let Some(&span) = step.spans.get(&m.process) else { return Vec::new() };
    let mine = peers.regions(g, m.process, span);
    let group: Vec<u32> = peers.groups[m.group as usize].iter().copied().filter(|&p| p != m.process).collect();
    let every = group.len().div_ceil(PEERS).max(1);
    let theirs: Vec<HashMap<u32, u64>> =
        group.iter().step_by(every).filter_map(|&p| step.spans.get(&p).map(|&s| peers.regions(g, p, s))).collect();
    if theirs.is_empty() {
        return Vec::new();
    }
    mine.into_iter()
        .filter_map(|(r, x)| {
            let mut v: Vec<u64> = theirs.iter().map(|m| m.get(&r).copied().unwrap_or(0)).collect();
            let median = lower_median(&mut v);
            (x > median).then(|| (r, (x - median) as f64))
        })
        .collect()
}

/// The [`REGIONS`] largest of `regions` (name, seconds), most first (by name where equal).
pub(crate) fn top_regions(regions: impl IntoIterator<Item = (String, f64)>) -> Vec<RegionExcess> {
    let mut v: Vec<RegionExcess> =
        regions.into_iter().map(|(region, excess_s)| RegionExcess { region, excess_s }).collect();
    v.sort_by(|a, b| b.excess_s.total_cmp(&a.excess_s).then_with(|| a.region.cmp(&b.region)));
    v.truncate(REGIONS);
    v
}
