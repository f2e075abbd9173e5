//! Fat-tree networks as TreeScope (Bhatia et al., 2018) explores them: compute nodes (level 0)
//! under three levels of switches, L1 and L2 grouped into pods, L3 into bundles; directed links
//! with traffic per counter interval; jobs placed on nodes; forwarding tables that routes are
//! traced through.
//!
//! [`FatTree::new`] derives what a network file does not say (levels, pods, bundles, drawing
//! order) from connectivity alone and checks that the graph is a three-level fat tree.

use rustc_hash::FxHashMap;

/// One end of a link: a compute node or a switch (indices into [`FatTree::nodes`] and
/// [`FatTree::switches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum End {
    Node(u32),
    Switch(u32),
}

/// A switch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Switch {
    /// GUID in colon form, as network files name it.
    pub guid: String,
    pub name: String,
    pub lid: u32,
    /// 1, 2 or 3 (0 while unknown, before [`FatTree::new`]).
    pub level: u8,
    /// L1 and L2 switches: their pod.
    pub pod: Option<u32>,
    /// L2 and L3 switches: the bundle of L3 switches they reach.
    pub bundle: Option<u32>,
    /// Drawing order within the pod (L1, L2) or bundle (L3).
    pub idx: Option<u32>,
}

/// A compute node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    pub guid: String,
    pub name: String,
    pub lid: u32,
}

/// A directed link: traffic leaves `from` through port `from_port` and enters `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub from: End,
    pub from_port: u16,
    pub to: End,
    pub to_port: u16,
}

/// A link's levels and direction: "up" when it goes to a higher level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    L0L1 = 0,
    L1L0 = 1,
    L1L2 = 2,
    L2L1 = 3,
    L2L3 = 4,
    L3L2 = 5,
}

impl Group {
    pub const ALL: [Group; 6] = [Group::L0L1, Group::L1L0, Group::L1L2, Group::L2L1, Group::L2L3, Group::L3L2];

    pub fn up(self) -> bool {
        (self as u8).is_multiple_of(2)
    }

    pub fn label(self) -> &'static str {
        ["L0→L1", "L1→L0", "L1→L2", "L2→L1", "L2→L3", "L3→L2"][self as usize]
    }

    fn of(from: u8, to: u8) -> Option<Self> {
        Some(match (from, to) {
            (0, 1) => Self::L0L1,
            (1, 0) => Self::L1L0,
            (1, 2) => Self::L1L2,
            (2, 1) => Self::L2L1,
            (2, 3) => Self::L2L3,
            (3, 2) => Self::L3L2,
            _ => return None,
        })
    }
}

/// A job from the job log: its nodes and when it ran (seconds since 1970, UTC).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Job {
    pub id: u64,
    pub partition: String,
    pub name: String,
    pub user: String,
    pub state: String,
    pub start: i64,
    pub end: i64,
    pub nodes: Vec<u32>,
}

/// A forwarding table: for each switch and destination node, the output port (0: none),
/// in effect from `from` (seconds since 1970) until the next table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub from: i64,
    /// Where it came from (a `.rtable` file's name, or the routing scheme that made it).
    pub name: String,
    /// `switches x nodes`, row-major.
    pub port: Vec<u16>,
}

/// A fat-tree network, its traffic, jobs and routing.
#[derive(Clone, Debug, Default)]
pub struct FatTree {
    pub nodes: Vec<Node>,
    pub switches: Vec<Switch>,
    pub links: Vec<Link>,
    /// Per link.
    pub groups: Vec<Group>,
    pub pods: u32,
    pub bundles: u32,
    /// The counter samples' times (seconds since 1970, UTC), increasing; interval `s` is from
    /// `times[s]` to `times[s + 1]`.
    pub times: Vec<i64>,
    /// `times.len() x links`: bytes sent over each link from the first sample to each sample.
    pub cum: Vec<f64>,
    pub jobs: Vec<Job>,
    /// In time order.
    pub tables: Vec<Table>,
    /// What the counters count ("bytes").
    pub unit: String,
    /// The outgoing link of each (end, port).
    port_link: FxHashMap<(End, u16), u32>,
    /// Each node's L1 switch, and the link up to it.
    l1_of: Vec<u32>,
    node_link: Vec<u32>,
}

impl FatTree {
    /// Checks the graph and derives what is missing: a switch's level (L1: linked to a compute
    /// node; L2: linked to an L1; L3: the others), pods (the L1-L2 components), bundles (the
    /// L2-L3 components) and drawing order (file order).
    pub fn new(nodes: Vec<Node>, mut switches: Vec<Switch>, links: Vec<Link>) -> Result<Self, String> {
        let ns = switches.len();
        let mut port_link = FxHashMap::default();
        for (i, l) in links.iter().enumerate() {
            for e in [l.from, l.to] {
                match e {
                    End::Node(n) if n as usize >= nodes.len() => {
                        return Err(format!("link {i} names node {n}, not in the network"));
                    }
                    End::Switch(s) if s as usize >= ns => {
                        return Err(format!("link {i} names switch {s}, not in the network"));
                    }
                    _ => {}
                }
            }
            if port_link.insert((l.from, l.from_port), i as u32).is_some() {
                return Err(format!("{} port {} is wired twice", describe(&nodes, &switches, l.from), l.from_port));
            }
        }
        derive_levels(&nodes, &mut switches, &links)?;
        let level = |e: End| match e {
            End::Node(_) => 0,
            End::Switch(s) => switches[s as usize].level,
        };
        let mut groups = Vec::with_capacity(links.len());
        for l in &links {
            let g = Group::of(level(l.from), level(l.to)).ok_or_else(|| {
                format!(
                    "{} (level {}) links to {} (level {}): a three-level fat tree links adjacent levels only",
                    describe(&nodes, &switches, l.from),
                    level(l.from),
                    describe(&nodes, &switches, l.to),
                    level(l.to)
                )
            })?;
            groups.push(g);
        }
        let mut l1_of = vec![u32::MAX; nodes.len()];
        let mut node_link = vec![u32::MAX; nodes.len()];
        for (i, l) in links.iter().enumerate() {
            if let (End::Node(n), End::Switch(s)) = (l.from, l.to)
                && l1_of[n as usize] == u32::MAX
            {
                l1_of[n as usize] = s;
                node_link[n as usize] = i as u32;
            }
        }
        if let Some(n) = l1_of.iter().position(|&s| s == u32::MAX) {
            return Err(format!("node {} is not linked to a switch", nodes[n].name));
        }
        let pods = components(&mut switches, &links, 1, 2, |s| &mut s.pod)?;
        let bundles = components(&mut switches, &links, 2, 3, |s| &mut s.bundle)?;
        order(&mut switches);
        Ok(Self {
            nodes,
            switches,
            links,
            groups,
            pods,
            bundles,
            unit: "bytes".into(),
            port_link,
            l1_of,
            node_link,
            ..Default::default()
        })
    }

    /// Counter intervals.
    pub fn steps(&self) -> usize {
        self.times.len().saturating_sub(1)
    }

    /// Bytes over each link in the intervals `[from, to)`.
    pub fn sums(&self, (from, to): (usize, usize)) -> Vec<f64> {
        let n = self.links.len();
        let (from, to) = (from.min(self.steps()), to.min(self.steps()));
        if to <= from || self.cum.len() < (to + 1) * n {
            return vec![0.0; n];
        }
        let (a, b) = (&self.cum[from * n..(from + 1) * n], &self.cum[to * n..(to + 1) * n]);
        a.iter().zip(b).map(|(a, b)| (b - a).max(0.0)).collect()
    }

    /// Bytes over link `l` in interval `s`.
    pub fn step_bytes(&self, s: usize, l: usize) -> f64 {
        let n = self.links.len();
        (self.cum[(s + 1) * n + l] - self.cum[s * n + l]).max(0.0)
    }

    /// The link leaving `end` through `port`.
    pub fn link_at(&self, end: End, port: u16) -> Option<u32> {
        self.port_link.get(&(end, port)).copied()
    }

    /// Node `n`'s L1 switch.
    pub fn l1_of(&self, n: u32) -> u32 {
        self.l1_of[n as usize]
    }

    /// The forwarding table in effect at `time` (the first one before any).
    pub fn table_at(&self, time: i64) -> Option<&Table> {
        self.tables.iter().rev().find(|t| t.from <= time).or(self.tables.first())
    }

    /// The links from node `src` to node `dst` through `table`, hop by hop; `None` where the
    /// table has no port for `dst` or the route loops.
    pub fn route(&self, table: &Table, src: u32, dst: u32) -> Option<Vec<u32>> {
        let first = self.node_link(src);
        let mut path = vec![first];
        let mut at = self.links[first as usize].to;
        for _ in 0..8 {
            match at {
                End::Node(n) => return (n == dst).then_some(path),
                End::Switch(s) => {
                    let port = *table.port.get(s as usize * self.nodes.len() + dst as usize)?;
                    let l = self.link_at(at, port)?;
                    path.push(l);
                    at = self.links[l as usize].to;
                }
            }
        }
        None
    }

    /// The link from node `n` up to its L1 switch (its first wired port).
    pub fn node_link(&self, n: u32) -> u32 {
        self.node_link[n as usize]
    }

    /// The links and switches on the routes between every node of `srcs` and every node of
    /// `dsts` (a node to itself excluded): one bit per link, per switch.
    pub fn footprint(&self, table: &Table, srcs: &[u32], dsts: &[u32]) -> (Vec<bool>, Vec<bool>) {
        let mut links = vec![false; self.links.len()];
        let mut switches = vec![false; self.switches.len()];
        // Routes by destination: from an L1 switch to `dst` is the same for every node under it.
        let mut l1s: Vec<u32> = srcs.iter().map(|&s| self.l1_of(s)).collect();
        l1s.sort_unstable();
        l1s.dedup();
        let proxy: FxHashMap<u32, u32> = srcs.iter().map(|&s| (self.l1_of(s), s)).collect();
        for &s in srcs {
            links[self.node_link(s) as usize] = true;
        }
        for &d in dsts {
            for &l1 in &l1s {
                let s = proxy[&l1];
                if s == d && srcs.len() == 1 {
                    continue;
                }
                if let Some(path) = self.route(table, s, d) {
                    for &l in &path[1..] {
                        links[l as usize] = true;
                        if let End::Switch(w) = self.links[l as usize].from {
                            switches[w as usize] = true;
                        }
                    }
                }
            }
        }
        (links, switches)
    }

    /// The nodes under switch `s`: an L1's nodes, an L2's pod, every node under an L3.
    pub fn nodes_under(&self, s: u32) -> Vec<u32> {
        let sw = &self.switches[s as usize];
        (0..self.nodes.len() as u32)
            .filter(|&n| {
                let l1 = &self.switches[self.l1_of(n) as usize];
                match sw.level {
                    1 => self.l1_of(n) == s,
                    2 => l1.pod == sw.pod,
                    _ => true,
                }
            })
            .collect()
    }

    /// A short name for an end: the switch's or node's name, or its GUID.
    pub fn name_of(&self, e: End) -> &str {
        describe(&self.nodes, &self.switches, e)
    }

    /// The GUID of an end, as network files name it.
    pub fn guid_of(&self, e: End) -> &str {
        match e {
            End::Node(n) => &self.nodes[n as usize].guid,
            End::Switch(s) => &self.switches[s as usize].guid,
        }
    }

    /// A label for switch `s`: "L2 pod 1 #3 (name)".
    pub fn switch_label(&self, s: u32) -> String {
        let w = &self.switches[s as usize];
        let place = match (w.level, w.pod, w.bundle) {
            (3, _, Some(b)) => format!("L3 bundle {b} #{}", w.idx.unwrap_or(0)),
            (l, Some(p), _) => format!("L{l} pod {p} #{}", w.idx.unwrap_or(0)),
            (l, _, _) => format!("L{l}"),
        };
        format!("{place} ({})", self.name_of(End::Switch(s)))
    }
}

fn describe<'a>(nodes: &'a [Node], switches: &'a [Switch], e: End) -> &'a str {
    let (name, guid) = match e {
        End::Node(n) => (&nodes[n as usize].name, &nodes[n as usize].guid),
        End::Switch(s) => (&switches[s as usize].name, &switches[s as usize].guid),
    };
    if name.is_empty() { guid } else { name }
}

/// Levels from connectivity where a switch has none: L1 next to a node, L2 next to an L1, L3
/// next to an L2.
fn derive_levels(nodes: &[Node], switches: &mut [Switch], links: &[Link]) -> Result<(), String> {
    let given: Vec<u8> = switches.iter().map(|s| s.level).collect();
    let mut level: Vec<u8> = given.clone();
    for want in 1..=3u8 {
        for l in links {
            let (a, b) = (l.from, l.to);
            for (x, y) in [(a, b), (b, a)] {
                let below = match x {
                    End::Node(_) => want == 1,
                    End::Switch(s) => want > 1 && level[s as usize] == want - 1,
                };
                if let End::Switch(s) = y
                    && below
                    && level[s as usize] == 0
                {
                    level[s as usize] = want;
                }
            }
        }
    }
    for (i, s) in switches.iter_mut().enumerate() {
        if level[i] == 0 || level[i] > 3 {
            let what = if level[i] == 0 { "is not connected to the tree" } else { "has a level above 3" };
            return Err(format!("switch {} {what}", if s.name.is_empty() { &s.guid } else { &s.name }));
        }
        s.level = level[i];
    }
    let _ = nodes;
    Ok(())
}

/// Numbers the connected components of the links between levels `lo` and `hi` (pods: 1-2;
/// bundles: 2-3) into `field` where unset, in order of the component's first switch; returns
/// how many there are.
fn components(
    switches: &mut [Switch],
    links: &[Link],
    lo: u8,
    hi: u8,
    field: impl Fn(&mut Switch) -> &mut Option<u32>,
) -> Result<u32, String> {
    let n = switches.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for l in links {
        if let (End::Switch(a), End::Switch(b)) = (l.from, l.to) {
            let (la, lb) = (switches[a as usize].level, switches[b as usize].level);
            if (la.min(lb), la.max(lb)) == (lo, hi) {
                let (ra, rb) = (root(&mut parent, a as usize), root(&mut parent, b as usize));
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut number: FxHashMap<usize, u32> = FxHashMap::default();
    let mut count = 0u32;
    for (i, s) in switches.iter_mut().enumerate() {
        if s.level != lo && s.level != hi {
            continue;
        }
        let r = root(&mut parent, i);
        let next = number.len() as u32;
        let k = *number.entry(r).or_insert(next);
        let f = field(s);
        let v = *f.get_or_insert(k);
        count = count.max(v + 1);
    }
    if count > n as u32 {
        return Err(format!("a pod or bundle number is above the {n} switches"));
    }
    Ok(count)
}

/// Drawing order within each pod and level (L1, L2) or bundle (L3), where unset: file order.
fn order(switches: &mut [Switch]) {
    let mut next: FxHashMap<(u8, Option<u32>, Option<u32>), u32> = FxHashMap::default();
    for s in switches.iter_mut() {
        let key = if s.level == 3 { (3, None, s.bundle) } else { (s.level, s.pod, None) };
        let k = next.entry(key).or_insert(0);
        if s.idx.is_none() {
            s.idx = Some(*k);
        }
        *k += 1;
    }
}

/// The k = 4 fat tree of TreeScope's Figure 2 (Bhatia et al., 2018), wired by hand: levels,
/// pods and bundles come from connectivity. The examples' and tests' smallest fat tree.
pub fn figure_2() -> FatTree {
    let nodes: Vec<Node> = (0..16).map(|i| Node { name: format!("n{i}"), lid: i + 1, ..Default::default() }).collect();
    let switches: Vec<Switch> = (0..20).map(|i| Switch { name: format!("s{i}"), ..Default::default() }).collect();
    let mut links = Vec::new();
    let mut wire = |a: End, pa: u16, b: End, pb: u16| {
        links.push(Link { from: a, from_port: pa, to: b, to_port: pb });
        links.push(Link { from: b, from_port: pb, to: a, to_port: pa });
    };
    // L1 switches 0-7 (two per pod), L2 8-15, L3 16-19.
    for n in 0..16u32 {
        wire(End::Node(n), 1, End::Switch(n / 2), (n % 2 + 1) as u16);
    }
    for pod in 0..4u32 {
        for a in 0..2u32 {
            for b in 0..2u32 {
                wire(End::Switch(pod * 2 + a), (3 + b) as u16, End::Switch(8 + pod * 2 + b), (1 + a) as u16);
            }
        }
        for b in 0..2u32 {
            for c in 0..2u32 {
                wire(End::Switch(8 + pod * 2 + b), (3 + c) as u16, End::Switch(16 + b * 2 + c), (1 + pod) as u16);
            }
        }
    }
    FatTree::new(nodes, switches, links).expect("a fat tree")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn levels_pods_and_bundles_come_from_connectivity() {
        let t = figure_2();
        let levels: Vec<u8> = t.switches.iter().map(|s| s.level).collect();
        assert_eq!(&levels[..8], &[1; 8]);
        assert_eq!(&levels[8..16], &[2; 8]);
        assert_eq!(&levels[16..], &[3; 4]);
        assert_eq!((t.pods, t.bundles), (4, 2));
        assert_eq!(t.switches[5].pod, Some(2));
        assert_eq!(t.switches[13].bundle, Some(1));
        assert_eq!(t.switches[18].bundle, Some(1));
        assert_eq!(t.switches[19].idx, Some(1));
        assert_eq!(t.groups.iter().filter(|g| g.up()).count(), t.links.len() / 2);
    }

    #[test]
    fn routes_follow_the_table_hop_by_hop() {
        let t = figure_2();
        // A table sending everything up through the first up port and down where the node is.
        let n = t.nodes.len();
        let mut port = vec![0u16; t.switches.len() * n];
        for (s, sw) in t.switches.iter().enumerate() {
            for d in 0..n as u32 {
                let l1 = t.l1_of(d);
                let dst_pod = t.switches[l1 as usize].pod;
                let p = match sw.level {
                    1 if l1 == s as u32 => (d % 2 + 1) as u16,
                    1 => 3,
                    2 if sw.pod == dst_pod => (l1 % 2 + 1) as u16,
                    2 => 3,
                    _ => (dst_pod.unwrap() + 1) as u16,
                };
                port[s * n + d as usize] = p;
            }
        }
        let table = Table { from: 0, name: "test".into(), port };
        let r = t.route(&table, 0, 15).expect("a route");
        assert_eq!(r.len(), 6, "five hops between pods, plus the last link to the node");
        let ends: Vec<End> = r.iter().map(|&l| t.links[l as usize].to).collect();
        assert_eq!(ends.last(), Some(&End::Node(15)));
        assert_eq!(t.route(&table, 0, 1).map(|r| r.len()), Some(2), "same L1");
        let (links, switches) = t.footprint(&table, &[0], &[15]);
        assert_eq!(links.iter().filter(|&&b| b).count(), 6);
        assert_eq!(switches.iter().filter(|&&b| b).count(), 5);
        // A table that loops back is no route.
        let mut bad = table.clone();
        bad.port.iter_mut().for_each(|p| *p = 3);
        assert_eq!(t.route(&bad, 0, 15), None);
    }

    #[test]
    fn bad_graphs_are_refused_with_what_is_wrong() {
        let t = figure_2();
        let mut links = t.links.clone();
        links.push(Link { from: End::Switch(0), from_port: 3, to: End::Switch(9), to_port: 9 });
        let e = FatTree::new(t.nodes.clone(), t.switches.clone(), links).unwrap_err();
        assert!(e.contains("s0 port 3 is wired twice"), "{e}");
        let mut links = t.links.clone();
        links.push(Link { from: End::Switch(0), from_port: 9, to: End::Switch(16), to_port: 9 });
        let e = FatTree::new(t.nodes.clone(), t.switches.clone(), links).unwrap_err();
        assert!(e.contains("adjacent levels"), "{e}");
        let mut switches = t.switches.clone();
        switches.push(Switch { name: "lonely".into(), ..Default::default() });
        let fresh: Vec<Switch> =
            switches.iter().map(|s| Switch { name: s.name.clone(), ..Default::default() }).collect();
        let e = FatTree::new(t.nodes.clone(), fresh, t.links.clone()).unwrap_err();
        assert!(e.contains("switch lonely is not connected"), "{e}");
    }
}
