//! `--view topology`: the cluster topology view of Wei et al. (§5.2.2): the devices of one
//! training step as a graph, edges the communicating pairs ([`links`]) coloured by the kind of
//! communication that dominates them and as wide as their time, each device's disc sized by its
//! communication cost (communication and waiting) and coloured by communication's share of its
//! busy time; beside it the link matrix (NodeTrix-like: rows senders, columns receivers, each cell
//! a bar per kind of communication operator on the link, its height the time spent). Over 64
//! devices, devices are drawn by stage (or by blocks of ranks where there is one stage). Cells
//! with room carry a box plot per kind of the operators' durations, traffic or bandwidth
//! (`--boxes`); the tooltips give the median and middle half of all three.
//! Where the profiles name the hosts (Kineto's `host_name`, XPlane's host names), a host's
//! devices sit together under an arc with its name, and an edge's tooltip says whether it stays
//! within a host. A click on a device selects it (the Marey view highlights its row), on a stage
//! its devices (the Marey view draws only them); a drag over the graph (the paper's lasso, a
//! rectangle here) selects the devices inside it: they are ringed, the link matrix shows them
//! alone, and the Marey view draws only them. Devices are selected as one range, from the first
//! to the last of those inside.

use std::f32::consts::{PI, TAU};
use std::sync::Arc;

use exaviz_analysis::training::breakdown;
use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_model::training::{Class, Training};
use exaviz_model::units::{duration, si};
use exaviz_render::{Anchor, Blend, ColorMap, Scale, Scene};

use crate::contract;
use crate::contract::{Drawn, Frame, Pick, Picker, Prepared};
use crate::kept::{Kept, kept};
use crate::legend::color_bar_bare;
use crate::plot::{fit, titles};
use crate::run::training;
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError, title_name};

pub mod links;
pub use links::{Link, Measure, links};

/// Most nodes drawn one per device; above, devices are grouped.
const MAX_NODES: usize = 64;
/// Most nodes the link matrix shows.
const MATRIX_MAX: usize = 32;

/// Kinds of communication as the edges and the matrix colour them (Okabe & Ito).
const KINDS: [(&str, [f32; 3]); 6] = [
    ("send/receive", [0.0, 0.620, 0.451]),
    ("all-reduce", [0.902, 0.624, 0.0]),
    ("all-gather", [0.337, 0.706, 0.914]),
    ("reduce-scatter", [0.835, 0.369, 0.0]),
    ("all-to-all", [0.800, 0.475, 0.655]),
    ("broadcast", [0.941, 0.894, 0.259]),
];

fn kind(c: Class) -> usize {
    match c {
        Class::AllReduce => 1,
        Class::AllGather => 2,
        Class::ReduceScatter => 3,
        Class::AllToAll => 4,
        Class::Broadcast => 5,
        _ => 0,
    }
}

pub struct TopologyView {
    pub step: Option<u32>,
    pub boxes: Measure,
    pub colour: NodeColour,
    /// Each device's share of the critical path, kept per trace and span: a brush over the
    /// devices prepares the picture again, the path stays.
    shares: Kept<(String, usize, u64, u64), Arc<Vec<f64>>>,
}

/// What a device's disc is coloured by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum NodeColour {
    /// Communication's share of its busy time.
    #[default]
    Communication,
    /// Its share of the run's critical path ([`exaviz_analysis::critical_path`]): the time the path spends on
    /// its process's threads and streams.
    CriticalPath,
}

/// `exaviz render --view topology` options.
#[derive(clap::Args, Clone, Debug)]
pub struct TopologyArgs {
    /// The training step whose communication is shown (from 0; default: the whole run).
    #[arg(long)]
    pub step: Option<u32>,
    /// What the link matrix's box plots show per operator: its duration, its traffic (bytes) or
    /// its bandwidth.
    #[arg(long, value_enum, default_value = "duration")]
    pub boxes: Measure,
    /// What colours a device: communication's share of its busy time, or its share of the
    /// run's critical path (the work and waits that made the step as long as it is).
    #[arg(long, value_enum, default_value = "communication")]
    pub colour: NodeColour,
}

impl contract::Class for TopologyView {
    const NAME: &'static str = "topology";
    const ABOUT: &'static str = "Cluster topology of a training step (Wei et al., 2024): devices as a graph sized by communication cost and coloured by its share, edges the communicating pairs, and the link matrix.";
    type Args = TopologyArgs;

    fn new(args: &TopologyArgs) -> Self {
        TopologyView { step: args.step, boxes: args.boxes, colour: args.colour, shares: Kept::default() }
    }
}

/// A drawn node: a device or a group of devices, with its costs in nanoseconds.
#[derive(Clone, Debug)]
struct Node {
    name: String,
    devices: Vec<u32>,
    /// Computation, communication, waiting.
    cost: [u64; 3],
    /// Its devices' share of the critical path, where the view is coloured by it.
    critical: Option<f64>,
    at: [f32; 2],
    radius: f32,
}

impl Node {
    fn share(&self) -> f32 {
        let busy = self.cost[0] + self.cost[1];
        if busy == 0 { 0.0 } else { self.cost[1] as f32 / busy as f32 }
    }
}

struct Graph {
    nodes: Vec<Node>,
    /// Links between nodes (node indices).
    links: Vec<Link>,
    /// The matrix's cells: `[x0, y0, size]` and the nodes it spans.
    matrix: Option<([f32; 3], usize)>,
    /// The nodes of the matrix's rows and columns, in order.
    matrix_nodes: Vec<u32>,
}

/// Where the graph goes in a frame and each node's place on its circle.
struct Placement {
    /// The graph's area `[x0, y0, x1, y1]`; the matrix is right of it where the frame has room.
    graph: [f32; 4],
    wide: bool,
    centre: [f32; 2],
    ring: f32,
    /// The most room a disc has.
    room: f32,
    angle: Vec<f32>,
    hosts: Vec<(String, [usize; 2])>,
}

/// The graph's area in a frame `[x0, y0, x1, y1]`, and whether the frame is wide enough for the
/// matrix right of it.
fn graph_area(f: Frame) -> ([f32; 4], bool) {
    let (width, height) = (f.width as f32, f.height as f32);
    let wide = width >= 640.0 && height >= 320.0;
    let graph_w = if wide { width * 0.52 } else { width - 90.0 };
    ([0.0, 70.0, graph_w + 16.0, height - 40.0], wide)
}

impl Placement {
    fn new(t: &Training, nodes: &[Node], f: Frame) -> Self {
        let (graph, wide) = graph_area(f);
        let (top, bottom, graph_w) = (graph[1], graph[3], graph[2] - 16.0);
        let centre = [graph_w / 2.0 + 8.0, (top + bottom) / 2.0];
        let ring = ((graph_w.min(bottom - top)) / 2.0 - 34.0).max(10.0);
        let m = nodes.len();
        let room = (PI * ring / m as f32 * 0.8).clamp(2.0, 22.0);
        let hosts = host_arcs(t, nodes);
        let angle = angles(m, &hosts);
        Placement { graph, wide, centre, ring, room, angle, hosts }
    }

    /// Each node's centre and disc (sized by communication and waiting).
    fn place(&self, nodes: &mut [Node]) {
        let most = nodes.iter().map(|n| n.cost[1] + n.cost[2]).max().unwrap_or(0).max(1) as f32;
        for (k, n) in nodes.iter_mut().enumerate() {
            let angle = self.angle[k];
            n.at = [self.centre[0] + self.ring * angle.cos(), self.centre[1] + self.ring * angle.sin()];
            n.radius = (self.room * (0.3 + 0.7 * ((n.cost[1] + n.cost[2]) as f32 / most).sqrt())).max(2.0);
        }
    }

    /// Each host's devices under an arc with its name.
    fn draw_hosts(&self, scene: &mut Scene) {
        let (m, centre) = (self.angle.len(), self.centre);
        for (host, [a, b]) in &self.hosts {
            let (a0, a1) = (self.angle[*a] - 0.35 * TAU / m as f32, self.angle[*b - 1] + 0.35 * TAU / m as f32);
            let r = self.ring + self.room + 14.0;
            let steps = ((a1 - a0) * r / 6.0).ceil().max(2.0) as usize;
            let at = |u: f32| [centre[0] + r * u.cos(), centre[1] + r * u.sin()];
            for i in 0..steps {
                let (u, v) = (a0 + (a1 - a0) * i as f32 / steps as f32, a0 + (a1 - a0) * (i + 1) as f32 / steps as f32);
                scene.segment(Blend::Alpha, at(u), at(v), 1.0, [0.75, 0.76, 0.8, 0.6], true);
            }
            let mid = (a0 + a1) / 2.0;
            let label = [centre[0] + (r + 10.0) * mid.cos(), centre[1] + (r + 10.0) * mid.sin() + 4.0];
            let side = match mid.cos() {
                c if c > 0.3 => Anchor::Left,
                c if c < -0.3 => Anchor::Right,
                _ => Anchor::Centre,
            };
            scene.text(&fit(&format!("host {host}"), 120.0, 10.0), label, 10.0, side, TEXT);
        }
    }
}

/// The nodes a device selection covers (all where there is none).
fn selected(nodes: &[Node], sel: Option<(u32, u32)>) -> Vec<u32> {
    (0..nodes.len() as u32)
        .filter(|&k| sel.is_none_or(|(a, b)| nodes[k as usize].devices.iter().any(|&d| d >= a && d <= b)))
        .collect()
}

/// The step's span: the option's step, else the whole run.
fn span(t: &Training, step: Option<u32>) -> Result<(u64, u64, String), ViewError> {
    match step {
        Some(k) => {
            let s = t.steps.get(k as usize).ok_or_else(|| {
                ViewError::Unsupported(format!(
                    "step {k} does not exist (the trace has {} steps, from 0)",
                    t.steps.len()
                ))
            })?;
            Ok((s.start, s.end.max(s.start + 1), s.label.clone()))
        }
        None => {
            let (a, b) = t.span();
            let what = match t.steps.len() {
                0 | 1 => "the whole run".to_string(),
                n => format!("all {n} steps (--step K for one)"),
            };
            Ok((a, b + 1, what))
        }
    }
}

/// Where the profiles name two or more hosts and nodes are devices: each host and the nodes it
/// holds (`[first, end)`, consecutive as [`group`] orders them).
fn host_arcs(t: &Training, nodes: &[Node]) -> Vec<(String, [usize; 2])> {
    let host = |k: usize| match nodes[k].devices[..] {
        [d] => Some(t.devices[d as usize].host.as_str()),
        _ => None,
    };
    let mut arcs: Vec<(String, [usize; 2])> = Vec::new();
    for k in 0..nodes.len() {
        let Some(h) = host(k).filter(|h| !h.is_empty()) else { return Vec::new() };
        match arcs.last_mut() {
            Some((name, span)) if name == h => span[1] = k + 1,
            _ => arcs.push((h.to_string(), [k, k + 1])),
        }
    }
    if arcs.len() < 2 { Vec::new() } else { arcs }
}

/// Each node's angle on the circle from the top, clockwise; a gap of one place between hosts.
fn angles(m: usize, hosts: &[(String, [usize; 2])]) -> Vec<f32> {
    let places = (m + hosts.len()) as f32;
    (0..m)
        .map(|k| {
            let before = hosts.iter().filter(|(_, [a, _])| *a <= k).count();
            let place = k as f32 + before.saturating_sub(1) as f32 + if hosts.is_empty() { 0.0 } else { 0.5 };
            -PI / 2.0 + TAU * place / if hosts.is_empty() { m as f32 } else { places }
        })
        .collect()
}

/// Nodes: one per device, or over `MAX_NODES` per stage, or per host where there is one stage
/// and the profiles name the hosts, else per block of ranks.
fn group(t: &Training) -> Vec<(String, Vec<u32>)> {
    let n = t.devices.len();
    if n <= MAX_NODES {
        // Devices of one host side by side (where the profiles name hosts), else in stage order.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| t.devices[a].host.cmp(&t.devices[b].host).then(a.cmp(&b)));
        return order.into_iter().map(|d| (t.devices[d].name.clone(), vec![d as u32])).collect();
    }
    // One stage (or too many) and the profiles name the hosts: a node per host.
    let hosts: std::collections::BTreeSet<&str> = t.devices.iter().map(|d| d.host.as_str()).collect();
    let by_stage = t.stages > 1 && t.stages as usize <= MAX_NODES;
    if !by_stage && !hosts.contains("") && (2..=MAX_NODES).contains(&hosts.len()) {
        let mut by: std::collections::BTreeMap<&str, Vec<u32>> = std::collections::BTreeMap::new();
        for (d, dev) in t.devices.iter().enumerate() {
            by.entry(dev.host.as_str()).or_default().push(d as u32);
        }
        let mut groups: Vec<(String, Vec<u32>)> =
            by.into_iter().map(|(h, v)| (format!("host {h} ({} devices)", v.len()), v)).collect();
        groups.sort_by_key(|g| g.1[0]);
        return groups;
    }
    if by_stage {
        return t
            .stage_devices()
            .into_iter()
            .enumerate()
            .filter(|(_, r)| !r.is_empty())
            .map(|(s, r)| (format!("stage {s} ({} devices)", r.len()), r.map(|d| d as u32).collect()))
            .collect();
    }
    let size = n.div_ceil(MAX_NODES);
    (0..n)
        .step_by(size)
        .map(|a| {
            let b = (a + size).min(n);
            let name = format!("ranks {}-{}", t.devices[a].rank, t.devices[b - 1].rank);
            (name, (a as u32..b as u32).collect())
        })
        .collect()
}

/// The nodes ([`group`]) with their costs in `[a, b)`, not yet placed.
fn nodes(t: &Training, a: u64, b: u64) -> Vec<Node> {
    let costs = breakdown(t, &vec![0i64; t.devices.len()], a, b);
    group(t)
        .into_iter()
        .map(|(name, devices)| {
            let mut cost = [0u64; 3];
            for &d in &devices {
                for j in 0..3 {
                    cost[j] += costs[d as usize][j];
                }
            }
            Node { name, devices, cost, critical: None, at: [0.0; 2], radius: 0.0 }
        })
        .collect()
}

fn build(t: &Training, a: u64, b: u64) -> (Vec<Node>, Vec<Link>) {
    let nodes = nodes(t, a, b);
    let mut of = vec![0u32; t.devices.len()];
    for (k, n) in nodes.iter().enumerate() {
        for &d in &n.devices {
            of[d as usize] = k as u32;
        }
    }
    let mut merged: std::collections::BTreeMap<(u32, u32), Link> = std::collections::BTreeMap::new();
    for l in links(t, a, b) {
        let (from, to) = (of[l.from as usize], of[l.to as usize]);
        if from == to {
            continue;
        }
        let m = merged.entry((from, to)).or_insert_with(|| Link { from, to, ..Link::default() });
        for (c, v) in l.by_class {
            let e = m.by_class.entry(c).or_default();
            *e = (e.0 + v.0, e.1 + v.1, e.2 + v.2);
        }
        for (c, v) in l.samples {
            m.samples.entry(c).or_default().extend(v);
        }
    }
    (nodes, merged.into_values().collect())
}

fn link_lines(l: &Link) -> Vec<String> {
    l.by_class
        .iter()
        .map(|(&c, &(ops, ns, bytes))| {
            let rate = if ns > 0.0 && bytes > 0.0 { format!(", {}B/s", si(bytes / ns * 1e9)) } else { String::new() };
            let mut spread = String::new();
            for m in [Measure::Duration, Measure::Traffic, Measure::Bandwidth] {
                if let Some([_, q1, med, q3, _]) = links::five_numbers(&l.values(c, m)).filter(|_| ops > 1)
                    && (m == Measure::Duration || bytes > 0.0)
                {
                    let sep = if spread.is_empty() { "; per op median" } else { "," };
                    spread += &format!("{sep} {} {} ({}-{})", m.name(), m.text(med), m.text(q1), m.text(q3));
                }
            }
            format!("{}: {ops} ops, {}, {}B{rate}{spread}", Class::from_u8(c).label(), duration(ns), si(bytes))
        })
        .collect()
}

impl Picker for Graph {
    fn pick(&self, d: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let t = d.training.as_deref()?;
        if let Some(k) = self.nodes.iter().position(|n| {
            let (dx, dy) = (at[0] - n.at[0], at[1] - n.at[1]);
            dx * dx + dy * dy <= (n.radius + 3.0).powi(2)
        }) {
            let n = &self.nodes[k];
            let [comp, comm, wait] = n.cost;
            let mut lines = vec![
                format!("communication: {}", duration(comm as f64)),
                format!("waiting: {}", duration(wait as f64)),
                format!("computation: {}", duration(comp as f64)),
                format!("communication's share of busy time: {:.0}%", 100.0 * n.share()),
            ];
            if let Some(c) = n.critical {
                lines.push(format!("share of the critical path: {:.1}%", 100.0 * c));
            }
            if let [d] = n.devices[..] {
                let dev = &t.devices[d as usize];
                lines.insert(0, format!("rank {}, stage {}", dev.rank, dev.stage));
                let sel = Selection { track: Some(d), ..Selection::default() };
                return Some(Pick::new(n.name.clone(), lines).with_click(Parts::TRACK | Parts::DEVICES, sel));
            }
            // A group's devices are consecutive: a click selects them, the Marey view draws them.
            let (a, b) = (n.devices[0], n.devices[n.devices.len() - 1]);
            lines.push("click: select these devices (the Marey view draws only them)".into());
            let sel = Selection { devices: Some((a, b)), ..Selection::default() };
            return Some(Pick::new(n.name.clone(), lines).with_click(Parts::TRACK | Parts::DEVICES, sel));
        }
        if let Some(([x0, y0, size], m)) = self.matrix {
            let (i, j) = (((at[1] - y0) / size).floor(), ((at[0] - x0) / size).floor());
            if i >= 0.0 && j >= 0.0 && (i as usize) < m && (j as usize) < m {
                let (from, to) = (self.matrix_nodes[i as usize], self.matrix_nodes[j as usize]);
                let l = self.links.iter().find(|l| l.from == from && l.to == to)?;
                let title = format!("{} -> {}", self.nodes[from as usize].name, self.nodes[to as usize].name);
                return Some(Pick::new(title, link_lines(l)));
            }
        }
        // An edge: both directions of the pair nearest the pointer, within 3 pixels.
        let near = self.links.iter().filter_map(|l| {
            let (a, b) = (self.nodes[l.from as usize].at, self.nodes[l.to as usize].at);
            let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
            let len2 = (dx * dx + dy * dy).max(1e-6);
            let s = (((at[0] - a[0]) * dx + (at[1] - a[1]) * dy) / len2).clamp(0.0, 1.0);
            let (px, py) = (a[0] + s * dx - at[0], a[1] + s * dy - at[1]);
            let dist = (px * px + py * py).sqrt();
            (dist <= 3.0).then_some((dist, l))
        });
        let (_, l) = near.min_by(|a, b| a.0.total_cmp(&b.0))?;
        let (a, b) = (l.from.min(l.to), l.from.max(l.to));
        let mut lines = Vec::new();
        let host = |k: u32| match self.nodes[k as usize].devices[..] {
            [d] => Some(t.devices[d as usize].host.as_str()).filter(|h| !h.is_empty()),
            _ => None,
        };
        match (host(a), host(b)) {
            (Some(x), Some(y)) if x == y => lines.push(format!("within host {x}")),
            (Some(x), Some(y)) => lines.push(format!("between hosts {x} and {y} (network)")),
            _ => {}
        }
        for m in self.links.iter().filter(|m| (m.from, m.to) == (a, b) || (m.from, m.to) == (b, a)) {
            let dir = format!("{} -> {}", self.nodes[m.from as usize].name, self.nodes[m.to as usize].name);
            lines.extend(link_lines(m).into_iter().map(|s| format!("{dir}: {s}")));
        }
        Some(Pick::new(format!("{} - {}", self.nodes[a as usize].name, self.nodes[b as usize].name), lines))
    }
}

impl contract::View for TopologyView {
    /// The training model alone: a run whose rows stay on disk draws as one held in memory.
    fn reads_rows(&self) -> bool {
        false
    }

    fn depends_on(&self) -> Parts {
        Parts::DEVICES
    }

    fn reads(&self) -> Parts {
        Parts::TRACK | Parts::DEVICES
    }

    fn help(&self) -> &'static [&'static str] {
        &["drag over the graph: select the devices inside (the link matrix shows them, the Marey view draws them)"]
    }

    /// A drag over the graph selects the devices whose nodes are inside the rectangle (the
    /// paper's lasso): from the first to the last of them, as one range.
    fn brush(&self, d: &Dataset, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let t = training(d).ok()?;
        let (a, b, _) = span(t, self.step).ok()?;
        let mut nodes = nodes(t, a, b);
        Placement::new(t, &nodes, f).place(&mut nodes);
        let (x0, x1, y0, y1) = (from[0].min(to[0]), from[0].max(to[0]), from[1].min(to[1]), from[1].max(to[1]));
        let inside = nodes
            .iter()
            .filter(|n| {
                n.at[0] >= x0 - n.radius
                    && n.at[0] <= x1 + n.radius
                    && n.at[1] >= y0 - n.radius
                    && n.at[1] <= y1 + n.radius
            })
            .flat_map(|n| n.devices.iter().copied());
        let (lo, hi) = inside.fold((u32::MAX, 0), |(lo, hi), d| (lo.min(d), hi.max(d)));
        let devices = (lo <= hi).then_some((lo, hi));
        Some(Selection { devices, track: None, ..*sel })
    }

    fn brushes_at(&self, d: &Dataset, f: Frame, at: [f32; 2]) -> bool {
        let g = graph_area(f).0;
        training(d).is_ok() && at[0] >= g[0] && at[0] <= g[2] && at[1] >= g[1] && at[1] <= g[3]
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        training(d).map(|_| ())
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, _: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let t = training(d)?;
        if t.devices.is_empty() {
            return Err(ViewError::Unsupported("the training profile has no devices".into()));
        }
        let (a, b, label) = span(t, self.step)?;
        let (mut nodes, links) = build(t, a, b);
        let by_path = self.colour == NodeColour::CriticalPath;
        if by_path {
            let key = (d.name.clone(), d.trace.intervals.start.len(), a, b);
            let shares = kept(&self.shares, key, || {
                Arc::new(exaviz_analysis::critical_path::device_shares(&d.trace, t, (a, b)))
            });
            for n in &mut nodes {
                n.critical = Some(n.devices.iter().map(|&k| shares.get(k as usize).copied().unwrap_or(0.0)).sum());
            }
        }
        // The colour scale: communication's share from 0 to 100%, the path's share from 0 to the
        // largest node's (a path through eight devices gives each an eighth on average).
        let most = nodes.iter().filter_map(|n| n.critical).fold(0.0f64, f64::max);
        let hi = if by_path { (most * 100.0).ceil().max(1.0) } else { 100.0 };
        let colour_of = |n: &Node| match n.critical {
            Some(c) => (c * 100.0 / hi) as f32,
            None => n.share(),
        };
        let (width, height) = (f.width as f32, f.height as f32);
        let mut scene = Scene::new(f.width, f.height, BACKGROUND);
        let coloured = if by_path { "its share of the critical path" } else { "communication's share" };
        let subtitle = format!(
            "{} devices, {} communicating pairs in {label} ({}); disc: communication + waiting, colour: {coloured}",
            t.devices.len(),
            links.len(),
            duration((b - a) as f64)
        );
        titles(&mut scene, width, &format!("Cluster topology: {}", title_name(d)), &subtitle);
        // The graph on the left, the matrix on the right where there is room for it.
        let p = Placement::new(t, &nodes, f);
        p.place(&mut nodes);
        let present = edges(&mut scene, &nodes, &links);
        // The selected devices' nodes ringed.
        let chosen = selected(&nodes, sel.devices);
        for n in &nodes {
            scene.disc(n.at, n.radius + 1.5, [0.85, 0.85, 0.88, 1.0], true);
            scene.disc(n.at, n.radius, ColorMap::Cividis.sample(colour_of(n)), true);
        }
        if sel.devices.is_some() {
            for &k in &chosen {
                let n = &nodes[k as usize];
                let r = n.radius + 4.0;
                scene.frame([n.at[0] - r, n.at[1] - r, n.at[0] + r, n.at[1] + r], 1.5, [1.0, 1.0, 1.0, 0.9], true);
            }
        }
        p.draw_hosts(&mut scene);
        if nodes.len() <= MAX_NODES {
            for (k, n) in nodes.iter().enumerate() {
                let r = p.ring + n.radius + 10.0;
                let label = match n.devices[..] {
                    [d] => t.devices[d as usize].rank.to_string(),
                    _ => format!("{k}"),
                };
                let at = [p.centre[0] + r * p.angle[k].cos(), p.centre[1] + r * p.angle[k].sin() + 4.0];
                scene.text(&label, at, 10.0, Anchor::Centre, TEXT_DIM);
            }
        }
        // The share's colour bar in the graph's lower right corner, clear of the hosts' names.
        let bar = [p.graph[2] - 46.0, p.graph[3] - 100.0, 10.0, 80.0];
        color_bar_bare(
            &mut scene,
            |v| ColorMap::Cividis.sample(v),
            Scale { lo: 0.0, hi, log: false },
            if by_path { "path %" } else { "comm. %" },
            bar,
        );
        // The link matrix of the selected devices' nodes (all where none are selected).
        let area = [width * 0.56, p.graph[1] + 16.0, width - 16.0, p.graph[3]];
        let matrix = if !p.wide {
            None
        } else if chosen.len() > MATRIX_MAX {
            let note = format!("{} nodes: drag over some of them for their link matrix", chosen.len());
            scene.text(&fit(&note, area[2] - area[0], 11.0), [area[0], area[1] + 4.0], 11.0, Anchor::Left, TEXT_DIM);
            None
        } else {
            let sub: Vec<Node> = chosen.iter().map(|&k| nodes[k as usize].clone()).collect();
            let at: std::collections::HashMap<u32, u32> =
                chosen.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
            let sub_links: Vec<Link> = links
                .iter()
                .filter_map(|l| Some(Link { from: *at.get(&l.from)?, to: *at.get(&l.to)?, ..l.clone() }))
                .collect();
            Some(matrix(&mut scene, (&sub, &sub_links), t, area, self.boxes))
        };
        // The kinds of communication present, in one row at the bottom.
        let mut x = 16.0;
        for (k, (name, [r, g, b])) in KINDS.iter().enumerate() {
            if present[k] || links.iter().any(|l| l.by_class.keys().any(|&c| kind(Class::from_u8(c)) == k)) {
                scene.rect([x, height - 22.0], [x + 10.0, height - 12.0], [*r, *g, *b, 1.0], true);
                x += 14.0 + scene.text(name, [x + 14.0, height - 12.0], 11.0, Anchor::Left, TEXT_DIM) + 16.0;
            }
        }
        if links.is_empty() {
            scene.text("no communication in this step", [p.centre[0], p.graph[1] + 12.0], 12.0, Anchor::Centre, TEXT);
        }
        let matrix_nodes = if matrix.is_some() { chosen } else { Vec::new() };
        Ok(Box::new(Drawn { scene, picker: Graph { nodes, links, matrix, matrix_nodes } }))
    }
}

/// The edges: both directions of a pair as one line, as wide as their time, coloured by the
/// kind that dominates; which kinds are drawn.
fn edges(scene: &mut Scene, nodes: &[Node], links: &[Link]) -> [bool; KINDS.len()] {
    let mut pairs: std::collections::BTreeMap<(u32, u32), Link> = std::collections::BTreeMap::new();
    for l in links {
        let p = pairs.entry((l.from.min(l.to), l.from.max(l.to))).or_default();
        for (&c, v) in &l.by_class {
            let e = p.by_class.entry(c).or_default();
            *e = (e.0 + v.0, e.1 + v.1, e.2 + v.2);
        }
    }
    let longest = pairs.values().map(Link::duration).fold(0.0, f64::max).max(1.0);
    let mut present = [false; KINDS.len()];
    for (&(a, b), l) in &pairs {
        let k = kind(l.main_class());
        present[k] = true;
        let [r, g, bl] = KINDS[k].1;
        let w = 1.0 + 5.0 * (l.duration() / longest).sqrt() as f32;
        scene.segment(Blend::Alpha, nodes[a as usize].at, nodes[b as usize].at, w, [r, g, bl, 0.7], true);
    }
    present
}

/// The link matrix in `[x0, y0, x1, y1]`: rows senders, columns receivers, in each cell a bar per
/// kind of communication on the link, its height the kind's time over the longest anywhere, and
/// where the cell has room a box plot of the kind's operators' `measure` over it (whiskers from the
/// least to the most, the box the middle half, a white median; one scale from 0 for all cells).
fn matrix(
    scene: &mut Scene,
    (nodes, links): (&[Node], &[Link]),
    t: &Training,
    area: [f32; 4],
    measure: Measure,
) -> ([f32; 3], usize) {
    let m = nodes.len();
    let [x0, y0, x1, y1] = area;
    let label_w = 28.0;
    let size = ((x1 - x0 - label_w).min(y1 - y0 - label_w - 18.0) / m as f32).floor().max(2.0);
    let (gx, gy) = (x0 + label_w, y0 + label_w + 18.0);
    let head = format!("link matrix: rows send, columns receive; boxes: {} per operator", measure.name());
    scene.text(&fit(&head, x1 - x0, 11.0), [x0, y0 + 4.0], 11.0, Anchor::Left, TEXT);
    let name = |k: usize| match nodes[k].devices[..] {
        [d] => t.devices[d as usize].rank.to_string(),
        _ => k.to_string(),
    };
    let every = (12.0 / size).ceil().max(1.0) as usize;
    for k in (0..m).step_by(every) {
        let c = gy + (k as f32 + 0.5) * size + 4.0;
        scene.text(&fit(&name(k), label_w - 4.0, 10.0), [gx - 4.0, c], 10.0, Anchor::Right, TEXT_DIM);
        let c = gx + (k as f32 + 0.5) * size;
        scene.text(&fit(&name(k), size * every as f32, 10.0), [c, gy - 6.0], 10.0, Anchor::Centre, TEXT_DIM);
    }
    for i in 0..m {
        for j in 0..m {
            let (cx, cy) = (gx + j as f32 * size, gy + i as f32 * size);
            let shade = if i == j { 0.02 } else { 0.05 };
            scene.rect([cx + 0.5, cy + 0.5], [cx + size - 0.5, cy + size - 0.5], [1.0, 1.0, 1.0, shade], true);
        }
    }
    let longest = links.iter().map(Link::duration).fold(0.0, f64::max).max(1.0);
    // The box plots share one scale: the largest value of a single operator on any link.
    let largest = links
        .iter()
        .flat_map(|l| l.samples.values().flatten())
        .filter_map(|&s| measure.of(s))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    for l in links {
        let (cx, cy) = (gx + l.to as f32 * size, gy + l.from as f32 * size);
        // One slot per kind (a send and its receive are one kind): a bar of the kind's time on
        // the link and, where the cell has room, a box plot of its operators' measure.
        let mut kinds: Vec<(usize, f64, Vec<f64>)> = Vec::new();
        for (&c, v) in &l.by_class {
            let k = kind(Class::from_u8(c));
            let ops = l.values(c, measure);
            match kinds.iter_mut().find(|e| e.0 == k) {
                Some(e) => {
                    e.1 += v.1;
                    e.2.extend(ops);
                }
                None => kinds.push((k, v.1, ops)),
            }
        }
        let slot = (size - 2.0) / kinds.len().max(1) as f32;
        let boxes = size >= 24.0 && slot >= 6.0;
        let bottom = cy + size - 1.0;
        for (s, (k, ns, ops)) in kinds.iter().enumerate() {
            let h = ((ns / longest) as f32 * (size - 2.0)).max(1.0);
            let [r, g, b] = KINDS[*k].1;
            let bx = cx + 1.0 + s as f32 * slot;
            let alpha = if boxes { 0.45 } else { 1.0 };
            scene.rect([bx, bottom - h], [bx + (slot - 0.5).max(0.5), bottom], [r, g, b, alpha], true);
            if let (true, Some([lo, q1, med, q3, hi])) = (boxes, links::five_numbers(ops)) {
                let y = |v: f64| bottom - (v / largest) as f32 * (size - 2.0);
                let (mid, half) = (bx + slot / 2.0, (slot * 0.3).max(1.5));
                let white = [1.0, 1.0, 1.0, 0.9];
                scene.segment(Blend::Alpha, [mid, y(lo)], [mid, y(hi)], 1.0, white, true);
                scene.rect([mid - half, y(q3) - 0.5], [mid + half, y(q1) + 0.5], [r, g, b, 1.0], true);
                scene.segment(Blend::Alpha, [mid - half, y(med)], [mid + half, y(med)], 1.5, white, true);
            }
        }
    }
    ([gx, gy, size], m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::training::{Builder, RawOp};

    /// 128 devices in one stage on 8 hosts are drawn as 8 host nodes, each a host's 16 devices;
    /// without host names, as blocks of ranks.
    #[test]
    fn many_devices_in_one_stage_group_by_host() {
        let make = |hosts: bool| {
            let mut b = Builder::default();
            for r in 0..128u32 {
                let d = b.device(format!("rank {r}"), r, Some(0));
                if hosts {
                    b.host(d, &format!("node{}", r / 16));
                }
                let op = RawOp {
                    name: "nccl:all_reduce".into(),
                    class: Class::AllReduce,
                    start: 10,
                    end: 20,
                    flops: 0.0,
                    bytes: 64,
                    peer_rank: None,
                };
                b.op(d, op);
            }
            b.finish().unwrap()
        };
        let g = group(&make(true));
        assert_eq!(g.len(), 8);
        assert_eq!(g[3].0, "host node3 (16 devices)");
        assert_eq!(g[3].1, (48..64).collect::<Vec<u32>>());
        let g = group(&make(false));
        assert!(g[0].0.starts_with("ranks 0-"), "{:?}", g[0].0);
    }
}
