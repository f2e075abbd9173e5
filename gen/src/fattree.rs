//! Fat-tree networks (TreeScope, Bhatia et al., 2018): the three-level systems of the paper and
//! any k-ary fat tree, routing tables (destination-mod-k and a destination-hashed scheme that
//! spreads traffic differently), and a traffic simulator that places jobs (fragmented or
//! packed into pods), routes their communication patterns and records per-port counters over
//! time. `exaviz_formats::treescope` reads and writes TreeScope's own data directory.

use exaviz_model::fattree::{End, FatTree, Job, Link, Node, Switch, Table};
use exaviz_model::rng::SplitMix64;

/// A three-level fat tree's shape: `pods` of `l1` L1 and `l2` L2 switches, `down` nodes per
/// L1, L2 switches split into `bundles`, each bundle's L2 switches linked to all of its `l3`
/// L3 switches (one link each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub pods: u32,
    pub l1: u32,
    pub l2: u32,
    pub down: u32,
    pub bundles: u32,
    pub l3: u32,
}

impl Shape {
    /// The full-bisection k-ary fat tree (k even): k pods, k/2 L1 and L2 per pod, k/2 nodes per
    /// L1, (k/2)^2 L3 switches in k/2 bundles.
    pub fn k_ary(k: u32) -> Self {
        let h = k / 2;
        Self { pods: k, l1: h, l2: h, down: h, bundles: h, l3: h }
    }

    /// TreeScope's production system: 1,296 nodes, 36-port switches, 4 pods of 18 L1 and 18 L2,
    /// two bundles of 18 L3 (180 switches).
    pub const PRODUCTION: Self = Self { pods: 4, l1: 18, l2: 18, down: 18, bundles: 2, l3: 18 };
    /// TreeScope's simulated system: 3,200 nodes, 8 pods of 400 nodes, 40-port switches.
    pub const SIMULATED: Self = Self { pods: 8, l1: 20, l2: 20, down: 20, bundles: 4, l3: 20 };

    pub fn nodes(&self) -> u32 {
        self.pods * self.l1 * self.down
    }

    pub fn switches(&self) -> u32 {
        self.pods * (self.l1 + self.l2) + self.bundles * self.l3
    }

    fn check(&self) -> Result<(), String> {
        let all = [self.pods, self.l1, self.l2, self.down, self.bundles, self.l3];
        if all.contains(&0) {
            return Err("every count of the fat tree must be at least 1".into());
        }
        if !self.l2.is_multiple_of(self.bundles) {
            return Err(format!("{} L2 switches per pod do not split into {} bundles", self.l2, self.bundles));
        }
        if u64::from(self.nodes()) > 1 << 20 || self.switches() > 1 << 16 || self.l1.max(self.l2).max(self.l3) > 1000 {
            return Err(format!(
                "a fat tree of {} nodes and {} switches is above the limits",
                self.nodes(),
                self.switches()
            ));
        }
        Ok(())
    }
}

/// The graph of `shape`: nodes `cab1..`, switches L1, then L2, then L3, each pod's switches
/// together; ports numbered from 1, down ports first.
pub fn build(shape: Shape) -> Result<FatTree, String> {
    shape.check()?;
    let Shape { pods, l1, l2, down, bundles, l3 } = shape;
    let per = l2 / bundles;
    let guid = |kind: u64, i: u32| {
        let v = (kind << 32) | u64::from(i);
        let b = v.to_be_bytes();
        b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
    };
    let nodes: Vec<Node> = (0..shape.nodes())
        .map(|i| Node { guid: guid(0x0002_c903, i), name: format!("cab{}", i + 1), lid: i + 1 })
        .collect();
    let mut switches = Vec::new();
    let lid0 = shape.nodes() + 1;
    let mut push = |level: u8, pod: Option<u32>, bundle: Option<u32>, idx: u32, name: String| {
        let i = switches.len() as u32;
        switches.push(Switch { guid: guid(0x0008_f105, i), name, lid: lid0 + i, level, pod, bundle, idx: Some(idx) });
        i
    };
    let l1_at: Vec<u32> =
        (0..pods * l1).map(|i| push(1, Some(i / l1), None, i % l1, format!("L1 {}.{}", i / l1, i % l1))).collect();
    let l2_at: Vec<u32> = (0..pods * l2)
        .map(|i| push(2, Some(i / l2), Some((i % l2) / per), i % l2, format!("L2 {}.{}", i / l2, i % l2)))
        .collect();
    let l3_at: Vec<u32> =
        (0..bundles * l3).map(|i| push(3, None, Some(i / l3), i % l3, format!("L3 {}.{}", i / l3, i % l3))).collect();
    let mut links = Vec::new();
    let mut wire = |a: End, pa: u32, b: End, pb: u32| {
        let (pa, pb) = (pa as u16, pb as u16);
        links.push(Link { from: a, from_port: pa, to: b, to_port: pb });
        links.push(Link { from: b, from_port: pb, to: a, to_port: pa });
    };
    for n in 0..shape.nodes() {
        wire(End::Node(n), 1, End::Switch(l1_at[(n / down) as usize]), n % down + 1);
    }
    for p in 0..pods {
        for a in 0..l1 {
            for b in 0..l2 {
                let (s1, s2) = (l1_at[(p * l1 + a) as usize], l2_at[(p * l2 + b) as usize]);
                wire(End::Switch(s1), down + 1 + b, End::Switch(s2), a + 1);
            }
        }
        for b in 0..l2 {
            let bundle = b / per;
            for c in 0..l3 {
                let (s2, s3) = (l2_at[(p * l2 + b) as usize], l3_at[(bundle * l3 + c) as usize]);
                // An L3 switch's ports: one per (pod, L2 of its bundle in that pod).
                wire(End::Switch(s2), l1 + 1 + c, End::Switch(s3), p * per + b % per + 1);
            }
        }
    }
    FatTree::new(nodes, switches, links)
}

/// How up ports are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Static destination-mod-k (ftree-like; Zahavi's D-mod-K): the up port at L1 is the
    /// destination's index mod the up ports, at L2 the index divided by L1's up ports, mod L2's.
    DModK,
    /// Each switch picks an up port per destination by a hash of (switch, destination): spreads
    /// traffic differently, with collisions d-mod-k avoids (a stand-in for the scheduling-aware
    /// routing TreeScope's case study compares).
    Hashed,
}

impl Routing {
    pub fn name(self) -> &'static str {
        match self {
            Self::DModK => "dmodk",
            Self::Hashed => "hashed",
        }
    }
}

/// The forwarding table of `routing` on `tree`.
pub fn table(tree: &FatTree, routing: Routing, from: i64) -> Table {
    let n = tree.nodes.len();
    let ns = tree.switches.len();
    // Per switch: up ports and down links (sorted by port number).
    let mut ups: Vec<Vec<u16>> = vec![Vec::new(); ns];
    let mut downs: Vec<Vec<(u16, End)>> = vec![Vec::new(); ns];
    for (l, g) in tree.links.iter().zip(&tree.groups) {
        if let End::Switch(s) = l.from {
            if g.up() { ups[s as usize].push(l.from_port) } else { downs[s as usize].push((l.from_port, l.to)) }
        }
    }
    ups.iter_mut().for_each(|v| v.sort_unstable());
    downs.iter_mut().for_each(|v| v.sort_unstable());
    let l1_ups = tree.switches.iter().zip(&ups).find(|(s, _)| s.level == 1).map_or(1, |(_, u)| u.len().max(1));
    let mut port = vec![0u16; ns * n];
    for (s, sw) in tree.switches.iter().enumerate() {
        for d in 0..n as u32 {
            let l1 = tree.l1_of(d);
            let pod = tree.switches[l1 as usize].pod;
            let below = match sw.level {
                1 => l1 == s as u32,
                2 => sw.pod == pod,
                _ => true,
            };
            let p = if below {
                let hit = |e: &End| match *e {
                    End::Node(x) => x == d,
                    End::Switch(x) => {
                        let w = &tree.switches[x as usize];
                        if w.level == 1 { x == l1 } else { w.pod == pod }
                    }
                };
                let cands: Vec<u16> = downs[s].iter().filter(|(_, e)| hit(e)).map(|&(p, _)| p).collect();
                // Down the way d-mod-k goes up at the destination's pod: through the L2 switch
                // whose place is the destination's index mod L1's up ports.
                if cands.is_empty() { 0 } else { cands[(d as usize % l1_ups) % cands.len()] }
            } else if ups[s].is_empty() {
                0
            } else {
                let k = ups[s].len();
                let i = match (routing, sw.level) {
                    (Routing::DModK, 1) => d as usize % k,
                    (Routing::DModK, _) => (d as usize / l1_ups) % k,
                    (Routing::Hashed, _) => SplitMix64((s as u64) << 32 | u64::from(d)).next_u64() as usize % k,
                };
                ups[s][i]
            };
            port[s * n + d as usize] = p;
        }
    }
    Table { from, name: routing.name().into(), port }
}

/// Communication patterns of simulated jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    AllToAll,
    /// Each node to four neighbours on a 2-D grid of the job's nodes.
    Halo,
    /// Every node to the job's first node.
    Gather,
}

/// Where jobs get their nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// From a shuffled list of free nodes, as production schedulers end up doing.
    Fragmented,
    /// Consecutive nodes, filling pods one after another.
    Packed,
}

/// A simulated job: its size, pattern, bytes per pair and second, and when it runs (steps).
#[derive(Clone, Debug)]
pub struct JobPlan {
    pub name: &'static str,
    pub user: &'static str,
    pub nodes: u32,
    pub pattern: Pattern,
    pub rate: f64,
    pub steps: (u32, u32),
}

/// What [`simulate`] writes.
#[derive(Clone, Debug)]
pub struct Sim {
    pub shape: Shape,
    pub steps: u32,
    /// Seconds between counter samples.
    pub interval: i64,
    pub placement: Placement,
    /// One routing for the whole run, or one per half (TreeScope's case study compares ftree
    /// and scheduling-aware routing for 12 hours each).
    pub routing: Vec<Routing>,
    pub seed: u64,
    pub jobs: Vec<JobPlan>,
}

/// Sep 2 2018, 08:00 UTC: the first counter sample of simulated runs.
pub const START: i64 = 1_535_875_200;

/// The default jobs for `shape`: one heavy all-to-all job (a quarter of the machine: two pods
/// of the simulated system, like TreeScope's Qbox) beside halo and gather jobs; on the
/// production system with per-half routing, the same job under each routing.
pub fn default_jobs(shape: Shape, steps: u32, halves: bool) -> Vec<JobPlan> {
    let n = shape.nodes();
    let s = steps;
    if halves {
        let size = (n * 79 / 100).max(2);
        return vec![
            JobPlan {
                name: "ftree.qball",
                user: "alice",
                nodes: size,
                pattern: Pattern::AllToAll,
                rate: 2e5,
                steps: (s / 20, s / 2 - s / 20),
            },
            JobPlan {
                name: "sar.qball",
                user: "alice",
                nodes: size,
                pattern: Pattern::AllToAll,
                rate: 2e5,
                steps: (s / 2 + s / 20, s - s / 20),
            },
        ];
    }
    let q = n / 8;
    vec![
        JobPlan { name: "lulesh", user: "bob", nodes: q, pattern: Pattern::Halo, rate: 4e6, steps: (0, s) },
        JobPlan {
            name: "amg",
            user: "carol",
            nodes: q,
            pattern: Pattern::Halo,
            rate: 3e6,
            steps: (s / 10, s * 9 / 10),
        },
        JobPlan {
            name: "qbox",
            user: "alice",
            nodes: n / 4,
            pattern: Pattern::AllToAll,
            rate: 6e5,
            steps: (s / 5, s * 4 / 5),
        },
        JobPlan {
            name: "mercury",
            user: "dave",
            nodes: q,
            pattern: Pattern::Gather,
            rate: 2e6,
            steps: (s / 4, s * 3 / 4),
        },
        JobPlan { name: "pf3d", user: "erin", nodes: q, pattern: Pattern::Halo, rate: 2e6, steps: (s * 3 / 10, s) },
        JobPlan {
            name: "vpic",
            user: "bob",
            nodes: q / 2,
            pattern: Pattern::AllToAll,
            rate: 4e5,
            steps: (s * 2 / 5, s * 7 / 10),
        },
    ]
}

/// Nodes of each job, in order of start, from the nodes free then (a job's nodes are freed when
/// it ends): fragmented (a shuffled free list) or packed (the lowest free nodes, pod after pod).
fn place(total: u32, jobs: &[JobPlan], placement: Placement, seed: u64) -> Result<Vec<Vec<u32>>, String> {
    let mut free: Vec<u32> = (0..total).collect();
    let mut rng = SplitMix64(seed ^ 0x5eed);
    let shuffle = |v: &mut Vec<u32>, rng: &mut SplitMix64| {
        for i in (1..v.len()).rev() {
            v.swap(i, rng.below(i as u32 + 1) as usize);
        }
    };
    if placement == Placement::Fragmented {
        shuffle(&mut free, &mut rng);
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&j| (jobs[j].steps.0, j));
    let mut out = vec![Vec::new(); jobs.len()];
    let mut running: Vec<usize> = Vec::new();
    for j in order {
        let start = jobs[j].steps.0;
        running.retain(|&r| {
            let ended = jobs[r].steps.1 <= start;
            if ended {
                free.extend(&out[r]);
            }
            !ended
        });
        if placement == Placement::Packed {
            free.sort_unstable();
        }
        let n = jobs[j].nodes as usize;
        if n > free.len() {
            return Err(format!("job {} needs {n} nodes, {} are free when it starts", jobs[j].name, free.len()));
        }
        let mut mine: Vec<u32> = free.drain(..n).collect();
        mine.sort_unstable();
        out[j] = mine;
        running.push(j);
    }
    Ok(out)
}

/// The pairs of `pattern` over `nodes`.
fn pairs(pattern: Pattern, nodes: &[u32], mut f: impl FnMut(u32, u32)) {
    let n = nodes.len();
    match pattern {
        Pattern::AllToAll => {
            for &a in nodes {
                for &b in nodes {
                    if a != b {
                        f(a, b);
                    }
                }
            }
        }
        Pattern::Gather => nodes[1..].iter().for_each(|&a| f(a, nodes[0])),
        Pattern::Halo => {
            let side = (n as f64).sqrt().ceil().max(1.0) as usize;
            for i in 0..n {
                for j in [i + 1, i + n - 1, i + side, i + n - side % n.max(1)] {
                    let j = j % n;
                    if j != i {
                        f(nodes[i], nodes[j]);
                    }
                }
            }
        }
    }
}

/// Bytes per second over each link for one job under `table`: every pair routed, pairs whose
/// sources share an L1 switch traced once.
fn load(tree: &FatTree, table: &Table, job: &JobPlan, nodes: &[u32]) -> Vec<f64> {
    let mut per_l1: rustc_hash::FxHashMap<(u32, u32), (u32, f64)> = rustc_hash::FxHashMap::default();
    let mut out = vec![0.0; tree.links.len()];
    pairs(job.pattern, nodes, |a, b| {
        out[tree.node_link(a) as usize] += job.rate;
        per_l1.entry((tree.l1_of(a), b)).or_insert((a, 0.0)).1 += job.rate;
    });
    for ((_, b), (a, w)) in per_l1 {
        if let Some(path) = tree.route(table, a, b) {
            for &l in &path[1..] {
                out[l as usize] += w;
            }
        }
    }
    out
}

/// Runs the simulation: the fat tree with counters at every sample, the jobs' log and the
/// routing tables.
pub fn simulate(sim: &Sim) -> Result<FatTree, String> {
    let mut tree = build(sim.shape)?;
    if sim.steps == 0 || sim.steps > 100_000 {
        return Err(format!("steps={} must be from 1 to 100000", sim.steps));
    }
    let placed = place(sim.shape.nodes(), &sim.jobs, sim.placement, sim.seed)?;
    let halves = sim.routing.len().max(1) as u32;
    let tables: Vec<Table> = sim
        .routing
        .iter()
        .enumerate()
        .map(|(i, &r)| table(&tree, r, START + sim.interval * i64::from(sim.steps * i as u32 / halves)))
        .collect();
    let table_of_step = |s: u32| ((s * halves / sim.steps) as usize).min(tables.len() - 1);
    // Each job's load under each table it runs under.
    let loads: Vec<Vec<Vec<f64>>> = sim
        .jobs
        .iter()
        .zip(&placed)
        .map(|(j, nodes)| tables.iter().map(|t| load(&tree, t, j, nodes)).collect())
        .collect();
    let nl = tree.links.len();
    let steps = sim.steps as usize;
    let mut cum = vec![0.0f64; (steps + 1) * nl];
    let mut rng = SplitMix64(sim.seed);
    for s in 0..steps {
        let (done, next) = cum.split_at_mut((s + 1) * nl);
        let (prev, row) = (&done[s * nl..], &mut next[..nl]);
        row.copy_from_slice(prev);
        for (j, plan) in sim.jobs.iter().enumerate() {
            if !(plan.steps.0..plan.steps.1).contains(&(s as u32)) {
                continue;
            }
            // Phases of computation and communication: the job's traffic varies by step.
            let phase = 0.55 + 0.45 * ((s as f64 * 0.37 + j as f64).sin()).abs() + 0.1 * f64::from(rng.unit());
            let secs = sim.interval as f64 * phase;
            for (r, w) in row.iter_mut().zip(&loads[j][table_of_step(s as u32)]) {
                *r += w * secs;
            }
        }
    }
    tree.times = (0..=steps as i64).map(|s| START + s * sim.interval).collect();
    tree.cum = cum;
    tree.jobs = sim
        .jobs
        .iter()
        .zip(placed)
        .enumerate()
        .map(|(i, (j, nodes))| Job {
            id: 1_000_001 + i as u64,
            partition: "pbatch".into(),
            name: j.name.into(),
            user: j.user.into(),
            state: "R".into(),
            start: START + sim.interval * i64::from(j.steps.0),
            end: START + sim.interval * i64::from(j.steps.1.min(sim.steps)),
            nodes,
        })
        .collect();
    tree.tables = tables;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_analysis::fattree::{hot_links, hot_links_above};

    #[test]
    fn the_papers_systems_have_their_sizes() {
        let p = build(Shape::PRODUCTION).unwrap();
        assert_eq!((p.nodes.len(), p.switches.len(), p.pods, p.bundles), (1296, 180, 4, 2));
        let s = build(Shape::SIMULATED).unwrap();
        assert_eq!((s.nodes.len(), s.switches.len(), s.pods, s.bundles), (3200, 400, 8, 4));
        let k = build(Shape::k_ary(4)).unwrap();
        assert_eq!((k.nodes.len(), k.switches.len(), k.pods, k.bundles), (16, 20, 4, 2));
        // Every port of a 36-port switch is used once.
        let mut ports = vec![0u32; p.switches.len()];
        for l in &p.links {
            if let End::Switch(s) = l.from {
                ports[s as usize] += 1;
            }
        }
        assert!(ports.iter().all(|&n| n == 36), "{:?}", &ports[..4]);
    }

    #[test]
    fn both_routings_reach_every_destination_in_at_most_six_links() {
        let t = build(Shape::k_ary(8)).unwrap();
        for r in [Routing::DModK, Routing::Hashed] {
            let tab = table(&t, r, 0);
            for a in (0..t.nodes.len() as u32).step_by(7) {
                for b in 0..t.nodes.len() as u32 {
                    if a != b {
                        let path = t.route(&tab, a, b).unwrap_or_else(|| panic!("{r:?}: no route {a} -> {b}"));
                        assert!(path.len() <= 6 && path.len() >= 2);
                    }
                }
            }
        }
        // D-mod-k spreads the destinations under one L1 over distinct up ports.
        let tab = table(&t, Routing::DModK, 0);
        let n = t.nodes.len();
        let ups: std::collections::HashSet<u16> = (0..4).map(|d| tab.port[8 * n + d]).collect();
        assert_eq!(ups.len(), 4);
    }

    fn sim(placement: Placement, routing: Vec<Routing>) -> FatTree {
        let shape = Shape::SIMULATED;
        let jobs = default_jobs(shape, 20, false);
        simulate(&Sim { shape, steps: 20, interval: 60, placement, routing, seed: 3, jobs }).unwrap()
    }

    /// TreeScope's second case study: the heavy job spread over every pod makes hot links
    /// everywhere; packed into two pods, far fewer.
    #[test]
    fn packing_jobs_into_pods_leaves_fewer_hot_links() {
        let spread = sim(Placement::Fragmented, vec![Routing::DModK]);
        let packed = sim(Placement::Packed, vec![Routing::DModK]);
        let qbox = |t: &FatTree| t.jobs.iter().find(|j| j.name == "qbox").unwrap().clone();
        let (j, k) = (qbox(&spread), qbox(&packed));
        let pods = |t: &FatTree, j: &Job| {
            let mut p: Vec<u32> = j.nodes.iter().map(|&n| t.switches[t.l1_of(n) as usize].pod.unwrap()).collect();
            p.dedup();
            p.sort_unstable();
            p.dedup();
            p.len()
        };
        assert_eq!(pods(&spread, &j), 8);
        assert_eq!(pods(&packed, &k), 2);
        let range = (0, spread.steps());
        let (ta, a) = hot_links(&spread, range, 2.0);
        let (tb, b) = hot_links(&packed, range, 2.0);
        assert!(ta > 0.0 && tb > 0.0);
        // Hot links in how many pods: everywhere when spread, a few pods when packed.
        let hot_pods = |t: &FatTree, hot: &[(u32, f64)]| {
            let mut p: Vec<u32> = hot
                .iter()
                .filter_map(|&(l, _)| match t.links[l as usize].from {
                    End::Switch(s) => t.switches[s as usize].pod,
                    End::Node(_) => None,
                })
                .collect();
            p.sort_unstable();
            p.dedup();
            p.len()
        };
        let (pa, pb) = (hot_pods(&spread, &a), hot_pods(&packed, &b));
        assert!(pa >= 7 && pb <= 4, "hot links in {pa} pods spread, {pb} packed");
        // On one scale (the spread run's threshold), the pods where the other jobs run keep far
        // fewer hot links when the heavy job is packed: no interference. (Packed, its own two
        // pods' links are all hot: the simulation routes demand, without congestion's feedback.)
        let b = hot_links_above(&packed, range, ta);
        let elsewhere = |t: &FatTree, hot: &[(u32, f64)]| {
            hot.iter()
                .filter(|&&(l, _)| {
                    let link = t.links[l as usize];
                    [link.from, link.to].iter().all(|e| match e {
                        End::Switch(s) => t.switches[*s as usize].pod.is_none_or(|p| p != 2 && p != 3),
                        End::Node(_) => true,
                    })
                })
                .count()
        };
        let (ea, eb) = (elsewhere(&spread, &a), elsewhere(&packed, &b));
        assert!(eb * 20 < ea, "hot links outside pods 2 and 3: {eb} packed, {ea} spread");
    }

    #[test]
    fn two_routings_on_one_workload_give_different_hot_link_counts() {
        let a = sim(Placement::Fragmented, vec![Routing::DModK]);
        let b = sim(Placement::Fragmented, vec![Routing::Hashed]);
        let range = (0, a.steps());
        let total = |t: &FatTree| t.sums(range).iter().sum::<f64>();
        assert!((total(&a) / total(&b) - 1.0).abs() < 1e-9, "the same bytes, over as many hops");
        let (_, ha) = hot_links(&a, range, 1.5);
        let (_, hb) = hot_links(&b, range, 1.5);
        assert_ne!(ha.len(), hb.len());
    }
}
