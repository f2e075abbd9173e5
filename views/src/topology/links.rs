//! Who communicates with whom in a training step, and at what cost: the data of the cluster
//! topology view (Wei et al., §5.2.2).
//!
//! A send or receive is a link between its device and its peer (sender to receiver). A
//! collective's devices are those of one pipeline stage running the same operator instance
//! (`Ops::instance`: the same name, the same occurrence): profiles do not say which process group
//! a collective used, and with pipeline parallelism the data-parallel and tensor-parallel groups
//! lie within a stage. An all-to-all links every ordered pair of them, its duration and bytes
//! shared among its device's links; any other collective links each device to the next in rank
//! order around the group (the ring NCCL and Gloo use by default), so the ring is a reading, not
//! a measurement, of which pairs exchanged data.

use std::collections::BTreeMap;

use exaviz_model::training::{Class, Group, Training};

/// Communication on one directed link, per operator class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Link {
    pub from: u32,
    pub to: u32,
    /// Per class: operators, nanoseconds, bytes.
    pub by_class: BTreeMap<u8, (u32, f64, f64)>,
    /// Per class: each operator's nanoseconds and bytes on the link (for the matrix's box plots).
    pub samples: BTreeMap<u8, Vec<[f64; 2]>>,
}

/// What the link matrix's box plots show, per operator on a link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Measure {
    /// Its duration.
    #[default]
    Duration,
    /// Its bytes.
    Traffic,
    /// Its bytes over its duration (operators without bytes left out).
    Bandwidth,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::Duration => "duration",
            Measure::Traffic => "traffic",
            Measure::Bandwidth => "bandwidth",
        }
    }

    /// One operator's value (nanoseconds, bytes, bytes per second); `None` where it has none.
    pub fn of(self, [ns, bytes]: [f64; 2]) -> Option<f64> {
        match self {
            Measure::Duration => Some(ns),
            Measure::Traffic => Some(bytes),
            Measure::Bandwidth => (ns > 0.0 && bytes > 0.0).then(|| bytes / ns * 1e9),
        }
    }

    /// A value as the tooltips write it.
    pub fn text(self, v: f64) -> String {
        match self {
            Measure::Duration => exaviz_model::units::duration(v),
            Measure::Traffic => format!("{}B", exaviz_model::units::si(v)),
            Measure::Bandwidth => format!("{}B/s", exaviz_model::units::si(v)),
        }
    }
}

/// Minimum, lower quartile, median, upper quartile and maximum of `v` (linear interpolation
/// between order statistics); `None` for no values.
pub fn five_numbers(v: &[f64]) -> Option<[f64; 5]> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let x = q * (s.len() - 1) as f64;
        let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
        s[lo] + (s[hi] - s[lo]) * (x - lo as f64)
    };
    Some([s[0], at(0.25), at(0.5), at(0.75), s[s.len() - 1]])
}

impl Link {
    pub fn duration(&self) -> f64 {
        self.by_class.values().map(|v| v.1).sum()
    }

    pub fn bytes(&self) -> f64 {
        self.by_class.values().map(|v| v.2).sum()
    }

    /// The `measure` of each operator of class `c` on the link.
    pub fn values(&self, c: u8, measure: Measure) -> Vec<f64> {
        self.samples.get(&c).into_iter().flatten().filter_map(|&s| measure.of(s)).collect()
    }

    /// The class with the most time on the link.
    pub fn main_class(&self) -> Class {
        let best = self.by_class.iter().max_by(|a, b| a.1.1.total_cmp(&b.1.1).then(b.0.cmp(a.0)));
        best.map_or(Class::AllReduce, |(&c, _)| Class::from_u8(c))
    }
}

/// The links of the operators starting in `[a, b)` (nanoseconds), sorted by (from, to).
pub fn links(t: &Training, a: u64, b: u64) -> Vec<Link> {
    let mut out: BTreeMap<(u32, u32), Link> = BTreeMap::new();
    let mut add = |from: u32, to: u32, class: Class, ns: f64, bytes: f64| {
        if from == to {
            return;
        }
        let l = out.entry((from, to)).or_insert_with(|| Link { from, to, ..Link::default() });
        let e = l.by_class.entry(class as u8).or_default();
        *e = (e.0 + 1, e.1 + ns, e.2 + bytes);
        l.samples.entry(class as u8).or_default().push([ns, bytes]);
    };
    // A collective instance's devices in one stage, in rank order.
    let mut groups: BTreeMap<(u32, u32), Vec<(u32, usize)>> = BTreeMap::new();
    for d in 0..t.devices.len() {
        for i in t.ops_of(d) {
            let (s, e) = (t.ops.start[i], t.ops.end[i]);
            if s < a || s >= b {
                continue;
            }
            let class = t.ops.class(i);
            let (ns, bytes) = ((e - s) as f64, t.ops.bytes[i] as f64);
            match class.group() {
                Group::Computation => {}
                Group::Send | Group::Recv => {
                    let peer = t.ops.peer[i];
                    if (peer as usize) < t.devices.len() {
                        let (from, to) = if class.group() == Group::Send { (d as u32, peer) } else { (peer, d as u32) };
                        add(from, to, class, ns, bytes);
                    }
                }
                Group::Collective => {
                    groups.entry((t.ops.instance[i], t.devices[d].stage)).or_default().push((d as u32, i));
                }
            }
        }
    }
    for members in groups.values_mut() {
        members.sort_by_key(|&(d, _)| (t.devices[d as usize].rank, d));
        members.dedup_by_key(|m| m.0);
        let k = members.len();
        if k < 2 {
            continue;
        }
        for (j, &(d, i)) in members.iter().enumerate() {
            let class = t.ops.class(i);
            let (ns, bytes) = ((t.ops.end[i] - t.ops.start[i]) as f64, t.ops.bytes[i] as f64);
            if class == Class::AllToAll {
                let share = (k - 1) as f64;
                for &(peer, _) in members.iter().filter(|m| m.0 != d) {
                    add(d, peer, class, ns / share, bytes / share);
                }
            } else {
                add(d, members[(j + 1) % k].0, class, ns, bytes);
            }
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::training::{Builder, RawOp};

    fn op(name: &str, class: Class, start: u64, end: u64, bytes: u64, peer_rank: Option<u32>) -> RawOp {
        RawOp { name: name.into(), class, start, end, flops: 0.0, bytes, peer_rank }
    }

    /// Three devices: a send 0 -> 1 with its receive, an all-to-all on all three, an all-reduce
    /// on all three (a ring 0 -> 1 -> 2 -> 0); only operators starting in the span count. A
    /// fourth device in another stage runs the same all-reduce in its own group: no link.
    #[test]
    fn sends_pair_all_to_all_links_every_pair_and_other_collectives_a_ring() {
        let mut b = Builder::default();
        for r in 0..3u32 {
            let d = b.device(format!("rank {r}"), r, Some(0));
            let mut ops = vec![
                op("nccl:all_to_all", Class::AllToAll, 100, 160, 600, None),
                op("nccl:all_reduce", Class::AllReduce, 200, 210, 50, None),
                op("nccl:all_reduce", Class::AllReduce, 5_000, 5_010, 50, None),
            ];
            if r == 0 {
                ops.push(op("send", Class::Send, 10, 30, 1000, Some(1)));
            }
            if r == 1 {
                ops.push(op("recv", Class::Recv, 12, 40, 1000, Some(0)));
            }
            for o in ops {
                b.op(d, o);
            }
        }
        let d = b.device("rank 3".into(), 3, Some(1));
        b.op(d, op("nccl:all_reduce", Class::AllReduce, 200, 210, 50, None));
        let t = b.finish().unwrap();
        let l = links(&t, 0, 1_000);
        let find = |from: u32, to: u32| l.iter().find(|k| k.from == from && k.to == to).cloned().unwrap_or_default();
        let to1 = find(0, 1);
        assert_eq!(to1.by_class[&(Class::Send as u8)], (1, 20.0, 1000.0));
        assert_eq!(to1.by_class[&(Class::Recv as u8)], (1, 28.0, 1000.0));
        assert_eq!(to1.by_class[&(Class::AllToAll as u8)], (1, 30.0, 300.0), "half of 60 ns to each of two peers");
        assert_eq!(to1.by_class[&(Class::AllReduce as u8)], (1, 10.0, 50.0), "the step's all-reduce only");
        assert!(find(2, 0).by_class.contains_key(&(Class::AllReduce as u8)), "the ring closes");
        assert!(!find(1, 0).by_class.contains_key(&(Class::AllReduce as u8)), "a ring, not every pair");
        assert_eq!(find(1, 0).by_class.len(), 1, "all-to-all only");
        assert_eq!(l.len(), 6, "nothing to or from rank 3");
        assert_eq!(to1.samples[&(Class::Send as u8)], [[20.0, 1000.0]]);
        assert_eq!(to1.values(Class::Send as u8, Measure::Bandwidth), [5e10], "1000 B in 20 ns");
        assert_eq!(to1.values(Class::AllToAll as u8, Measure::Traffic), [300.0]);
    }

    #[test]
    fn five_numbers_are_the_quartiles() {
        assert_eq!(five_numbers(&[4.0, 1.0, 3.0, 2.0, 5.0]), Some([1.0, 2.0, 3.0, 4.0, 5.0]));
        assert_eq!(five_numbers(&[1.0, 2.0]), Some([1.0, 1.25, 1.5, 1.75, 2.0]));
        assert_eq!(five_numbers(&[]), None);
    }
}
