//! The analyses of a training run as the enhanced Marey's graph (Wei et al., 2024) reads it:
//! timestamp alignment, the rules that flag slow devices, unbalanced stages and stragglers
//! (§5.2.4), and the per-step breakdown of the training overview.

use exaviz_model::training::{Class, Group, Training};
use exaviz_model::units::{duration, si};

use crate::stats::lower_median;
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

/// Which timestamp alignment to apply (the paper's §5.2.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Align {
    /// As recorded.
    None,
    /// Within each stage on the first all-reduce.
    Stage,
    /// Within stages, then between consecutive stages on the first send/receive pair.
    #[default]
    Full,
}

/// The shift (ns) added to each device's times. A collective or a send/receive pair completes
/// on every participant at one moment, so alignment puts the ends of the chosen operators
/// together (their starts differ by the waiting the view is there to show).
pub fn offsets(t: &Training, align: Align) -> Vec<i64> {
    let mut off = vec![0i64; t.devices.len()];
    if align == Align::None {
        return off;
    }
    let first_of = |d: usize, pred: &dyn Fn(usize) -> bool| t.ops_of(d).find(|&i| pred(i));
    let stages = t.stage_devices();
    for range in &stages {
        let ends: Vec<(usize, u64)> = range
            .clone()
            .filter_map(|d| first_of(d, &|i| t.ops.class(i) == Class::AllReduce).map(|i| (d, t.ops.end[i])))
            .collect();
        let Some(&(_, reference)) = ends.first() else { continue };
        for (d, e) in ends {
            off[d] = reference as i64 - e as i64;
        }
    }
    if align == Align::Full {
        for (s, devices) in stages.iter().enumerate().skip(1) {
            // The first receive on this stage from a device of an earlier stage, and that
            // device's first send to the receiver.
            let pair = devices.clone().find_map(|d| {
                let r = first_of(d, &|i| {
                    t.ops.class(i) == Class::Recv
                        && (t.ops.peer[i] as usize) < t.devices.len()
                        && t.devices[t.ops.peer[i] as usize].stage < s as u32
                })?;
                let p = t.ops.peer[r] as usize;
                let snd = first_of(p, &|i| t.ops.class(i) == Class::Send && t.ops.peer[i] as usize == d)?;
                Some((d, r, p, snd))
            });
            let Some((d, r, p, snd)) = pair else { continue };
            let shift = (t.ops.end[snd] as i64 + off[p]) - (t.ops.end[r] as i64 + off[d]);
            for x in devices.clone() {
                off[x] += shift;
            }
        }
    }
    off
}

/// The paper's rules (§5.2.4) and the straggler test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A device's FLOPS (FLOPs per second of computation) 20% or more below the devices' mean.
    SlowDevice,
    /// A stage's FLOPs per device (its lower median device's) 20% or more above the stages' mean.
    HeavyStage,
    /// A device that starts the collectives it shares with others last, by more than half of
    /// their median duration, in at least half of them, and computes over 10% longer than its
    /// stage's median device (one late only from waiting on a slow device upstream is not).
    Straggler,
}

/// What a rule found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub rule: Rule,
    pub device: Option<u32>,
    pub stage: Option<u32>,
    /// The measured value and the mean it is compared with.
    pub value: f64,
    pub mean: f64,
    pub message: String,
}

/// Thresholds of the rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// FLOPS below (1 - this) x mean flags a device (0.2).
    pub slow: f64,
    /// Stage FLOPs above (1 + this) x mean flags a stage (0.2).
    pub heavy: f64,
    /// A late start beyond this share of the collective's median duration counts (0.5).
    pub late: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self { slow: 0.2, heavy: 0.2, late: 0.5 }
    }
}

/// Per device: computation time (ns) and FLOPs.
pub fn compute_totals(t: &Training) -> Vec<(u64, f64)> {
    (0..t.devices.len())
        .map(|d| {
            t.ops_of(d)
                .filter(|&i| t.ops.class(i).is_compute())
                .fold((0u64, 0f64), |(ns, f), i| (ns + (t.ops.end[i] - t.ops.start[i]), f + t.ops.flops[i] as f64))
        })
        .collect()
}

/// Per device: FLOPS (FLOPs per second of computation), or the computation time (ns) where the
/// profile has no FLOPs; `totals` from [`compute_totals`].
pub fn rates(t: &Training, totals: &[(u64, f64)]) -> Vec<f64> {
    totals
        .iter()
        .map(|&(ns, f)| if t.has_flops { if ns > 0 { f / (ns as f64 * 1e-9) } else { 0.0 } } else { ns as f64 })
        .collect()
}

/// Runs the rules. Without FLOPs in the profile, computation time stands in for them (a slow
/// device then shows as one that computes longer) and the messages say so.
pub fn rules(t: &Training, offsets: &[i64], th: Thresholds) -> Vec<Finding> {
    let mut out = Vec::new();
    let totals = compute_totals(t);
    let n = t.devices.len();
    let name = |d: usize| t.devices[d].name.clone();
    // Slow devices.
    if n >= 2 {
        let rate = rates(t, &totals);
        // Without FLOPs, a slow device computes longer: compare within its stage.
        for range in t.stage_devices() {
            if range.len() < 2 {
                continue;
            }
            let mean = range.clone().map(|d| rate[d]).sum::<f64>() / range.len() as f64;
            for d in range {
                let slow =
                    if t.has_flops { rate[d] < (1.0 - th.slow) * mean } else { rate[d] > (1.0 + th.slow) * mean };
                if slow && mean > 0.0 {
                    let message = if t.has_flops {
                        format!(
                            "{}: {} FLOPS, {:.0}% below the mean of its stage's devices",
                            name(d),
                            si(rate[d]),
                            100.0 * (1.0 - rate[d] / mean)
                        )
                    } else {
                        format!(
                            "{}: computes {:.0}% longer than the mean of its stage's devices (the profile has no FLOPs)",
                            name(d),
                            100.0 * (rate[d] / mean - 1.0)
                        )
                    };
                    out.push(Finding {
                        rule: Rule::SlowDevice,
                        device: Some(d as u32),
                        stage: None,
                        value: rate[d],
                        mean,
                        message,
                    });
                }
            }
        }
    }
    // Heavy stages.
    let stages = t.stage_devices();
    if stages.len() >= 2 {
        // A stage's yardstick is its lower median device, not the mean: one slow device (named
        // by the slow-device and straggler rules) does not make its stage heavy.
        let per: Vec<f64> = stages
            .iter()
            .map(|r| {
                let mut v: Vec<f64> =
                    r.clone().map(|d| if t.has_flops { totals[d].1 } else { totals[d].0 as f64 }).collect();
                lower_median(&mut v)
            })
            .collect();
        let mean = per.iter().sum::<f64>() / per.len() as f64;
        for (s, &v) in per.iter().enumerate() {
            if mean > 0.0 && v > (1.0 + th.heavy) * mean {
                let what = if t.has_flops { "FLOPs" } else { "computation time (the profile has no FLOPs)" };
                out.push(Finding {
                    rule: Rule::HeavyStage,
                    device: None,
                    stage: Some(s as u32),
                    value: v,
                    mean,
                    message: format!(
                        "stage {s}: {what} of its median device {:.0}% above the mean of stages",
                        100.0 * (v / mean - 1.0)
                    ),
                });
            }
        }
    }
    out.extend(stragglers(t, offsets, th, &totals));
    out
}

/// The straggler test over every collective shared by two or more devices.
fn stragglers(t: &Training, offsets: &[i64], th: Thresholds, totals: &[(u64, f64)]) -> Vec<Finding> {
    let n = t.devices.len();
    // (stage, name, nth) → (aligned start, duration, device) of each participant.
    type Participants = Vec<(i64, u64, u32)>;
    let mut groups: HashMap<(u32, u32, u32), Participants> = HashMap::default();
    for i in 0..t.ops.len() {
        if t.ops.class(i).group() == Group::Collective {
            let d = t.ops.device[i];
            let s = t.ops.start[i] as i64 + offsets[d as usize];
            groups.entry((t.devices[d as usize].stage, t.ops.name[i], t.ops.nth[i])).or_default().push((
                s,
                t.ops.end[i] - t.ops.start[i],
                d,
            ));
        }
    }
    let mut late = vec![0u32; n];
    let mut shared = vec![0u32; n];
    let mut lateness = vec![0f64; n];
    for g in groups.values_mut() {
        if g.len() < 2 {
            continue;
        }
        g.sort_unstable_by_key(|x| x.0);
        let mut durs: Vec<u64> = g.iter().map(|x| x.1).collect();
        durs.sort_unstable();
        let median = durs[durs.len() / 2] as f64;
        let (last, second) = (g[g.len() - 1], g[g.len() - 2]);
        for x in g.iter() {
            shared[x.2 as usize] += 1;
        }
        let gap = (last.0 - second.0) as f64;
        if gap > th.late * median.max(1.0) {
            late[last.2 as usize] += 1;
            lateness[last.2 as usize] += gap;
        }
    }
    // A device late only because it waited on others (a slow device upstream in its pipeline)
    // computes no longer than its stage's median: the straggler is the one that does.
    let mut median = vec![0u64; n];
    for r in t.stage_devices() {
        let m = lower_median(&mut r.clone().map(|d| totals[d].0).collect::<Vec<u64>>());
        for d in r {
            median[d] = m;
        }
    }
    (0..n)
        .filter(|&d| late[d] > 0 && 2 * late[d] >= shared[d] && totals[d].0 as f64 > 1.1 * median[d] as f64)
        .map(|d| {
            let mean = lateness[d] / late[d] as f64;
            Finding {
                rule: Rule::Straggler,
                device: Some(d as u32),
                stage: None,
                value: late[d] as f64,
                mean: shared[d] as f64,
                message: format!(
                    "{}: straggler, last to start {} of its {} collectives, by {} on average",
                    t.devices[d].name,
                    late[d],
                    shared[d],
                    duration(mean)
                ),
            }
        })
        .collect()
}

/// Per device over `[a, b)`: computation, communication and waiting (ns), adding up to the span:
/// time covered by computation, time covered by communication and not computation, the rest.
pub fn breakdown(t: &Training, offsets: &[i64], a: u64, b: u64) -> Vec<[u64; 3]> {
    breakdown_steps(t, offsets, &[(a, b)]).pop().unwrap_or_default()
}

/// [`breakdown`] for several spans at once: `[span][device]`, each device's operators read once.
pub fn breakdown_steps(t: &Training, offsets: &[i64], spans: &[(u64, u64)]) -> Vec<Vec<[u64; 3]>> {
    use rayon::prelude::*;
    let per_device: Vec<Vec<[u64; 3]>> = (0..t.devices.len())
        .into_par_iter()
        .map(|d| {
            let o = offsets[d];
            let r = t.ops_of(d);
            let longest = r.clone().map(|i| t.ops.end[i] - t.ops.start[i]).max().unwrap_or(0) as i64;
            let starts = &t.ops.start[r.clone()];
            spans
                .iter()
                .map(|&(a, b)| {
                    let lo = starts.partition_point(|&x| (x as i64 + o) < a as i64 - longest);
                    let hi = starts.partition_point(|&x| (x as i64 + o) < b as i64);
                    let iv: Vec<(u64, u64, bool)> = (r.start + lo..r.start + hi.max(lo))
                        .filter_map(|i| {
                            let s = (t.ops.start[i] as i64 + o).max(a as i64) as u64;
                            let e = (t.ops.end[i] as i64 + o).min(b as i64).max(0) as u64;
                            (e > s).then(|| (s, e, t.ops.class(i).is_compute()))
                        })
                        .collect();
                    let (all, comp) = (union(&iv, false), union(&iv, true));
                    [comp, all - comp, (b - a).saturating_sub(all)]
                })
                .collect()
        })
        .collect();
    (0..spans.len()).map(|k| per_device.iter().map(|v| v[k]).collect()).collect()
}

/// The length covered by intervals sorted by start (only computation ones if `only_compute`).
fn union(iv: &[(u64, u64, bool)], only_compute: bool) -> u64 {
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for &(s, e, c) in iv {
        if only_compute && !c {
            continue;
        }
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::training::{Builder, Class, RawOp};

    fn op(name: &str, class: Class, start: u64, end: u64, peer: Option<u32>) -> RawOp {
        RawOp { name: name.into(), class, start, end, flops: 0.0, bytes: 0, peer_rank: peer }
    }

    /// Two stages of two devices: stage from sends, alignment on all-reduce ends and the
    /// first send/receive pair, the straggler found.
    #[test]
    fn stages_alignment_and_rules() {
        let mut b = Builder::default();
        // Ranks 0,1 in stage 0 (send to 2,3), ranks 2,3 in stage 1. Clocks: rank 1 is 50 ahead,
        // rank 3 is 500 ahead; rank 1 computes slowly (a straggler).
        for (rank, skew, slow) in [(0u32, 0u64, 0u64), (1, 50, 300), (2, 0, 0), (3, 500, 0)] {
            let d = b.device(format!("r{rank}"), rank, None);
            let s = 1000 + skew;
            b.op(d, op("fwd", Class::Forward, s, s + 100 + slow, None));
            if rank < 2 {
                b.op(d, op("send", Class::Send, s + 400, s + 500, Some(rank + 2)));
            } else {
                b.op(d, op("recv", Class::Recv, s + 300, s + 500, Some(rank - 2)));
            }
            // The all-reduce ends together (in true time) within a stage.
            b.op(d, op("allreduce", Class::AllReduce, s + 100 + slow, s + 600, None));
        }
        let t = b.finish().unwrap();
        assert_eq!(t.stages, 2);
        assert_eq!(t.devices.iter().map(|d| (d.rank, d.stage)).collect::<Vec<_>>(), [(0, 0), (1, 0), (2, 1), (3, 1)]);
        assert_eq!(offsets(&t, Align::None), [0, 0, 0, 0]);
        assert_eq!(offsets(&t, Align::Stage), [0, -50, 0, -500]);
        let full = offsets(&t, Align::Full);
        assert_eq!(full, [0, -50, 0, -500], "the first pair already ends together");
        let f = rules(&t, &full, Thresholds::default());
        assert!(f.iter().any(|f| f.rule == Rule::Straggler && f.device == Some(1)), "{f:?}");
        assert!(f.iter().any(|f| f.rule == Rule::SlowDevice && f.device == Some(1)), "{f:?}");
        assert!(!f.iter().any(|f| f.device == Some(0)), "{f:?}");
        // The slow device is named; its stage is not called heavy for it.
        assert!(!f.iter().any(|f| f.rule == Rule::HeavyStage), "{f:?}");
        // Breakdown adds up to the span.
        for row in breakdown(&t, &full, 0, 700) {
            assert_eq!(row.iter().sum::<u64>(), 700);
        }
        assert_eq!(breakdown(&t, &full, 0, 700)[0], [100, 500, 100]);
        // One step over everything (no repetition).
        assert_eq!(t.steps.len(), 1);
        assert!(Builder::default().finish().unwrap_err().contains("no device lanes"));
    }
}
