//! `--view topology`: the cluster topology view of Wei et al. (§5.2.2): the devices of one
//! training step as a graph, edges the communicating pairs ([`links`]) coloured by the kind of
//! communication that dominates them and as wide as their time, each device's disc sized by its
//! communication cost (communication and waiting) and coloured by communication's share of its
//! busy time; beside it the link matrix (NodeTrix-like: rows senders, columns receivers, each cell
//! a bar per kind of communication operator on the link, its height the time spent). Over 64
//! devices, devices are drawn by stage (or by blocks of ranks where there is one stage). Cells
//! with room carry a box plot per kind of the operators' durations, traffic or bandwidth
//! (`--boxes`); the tooltips give the median and middle half of all three.
//! Not yet: positions from the hardware (devices sit on a circle in stage and rank order) and
//! lasso selection. A click on a device
//! selects it (the Marey view highlights its row), on a stage its devices (the Marey view draws
//! only them).

use std::f32::consts::{PI, TAU};

use crate::Backend;
use crate::model::Dataset;
use crate::render::{Anchor, Blend, ColorMap, Scale, Scene};
use crate::selection::{Parts, Selection};
use crate::training::{Class, Training, breakdown, duration, si};
use crate::views::contract::{self, Drawn, Frame, Pick, Picker, Prepared};
use crate::views::legend::color_bar_bare;
use crate::views::marey::training;
use crate::views::plot::{fit, titles};
use crate::views::{BACKGROUND, TEXT, TEXT_DIM, ViewError, title_name};

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
}

impl contract::Class for TopologyView {
    const NAME: &'static str = "topology";
    const ABOUT: &'static str = "Cluster topology of a training step (Wei et al., 2024): devices as a graph sized by communication cost and coloured by its share, edges the communicating pairs, and the link matrix.";
    type Args = TopologyArgs;

    fn new(args: &TopologyArgs) -> Self {
        TopologyView { step: args.step, boxes: args.boxes }
    }
}

/// A drawn node: a device or a group of devices, with its costs in nanoseconds.
#[derive(Clone, Debug)]
struct Node {
    name: String,
    devices: Vec<u32>,
    /// Computation, communication, waiting.
    cost: [u64; 3],
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

/// Nodes: one per device, or per stage (per block of ranks with one stage) over `MAX_NODES`.
fn group(t: &Training) -> Vec<(String, Vec<u32>)> {
    let n = t.devices.len();
    if n <= MAX_NODES {
        return t.devices.iter().enumerate().map(|(d, dev)| (dev.name.clone(), vec![d as u32])).collect();
    }
    if t.stages > 1 && t.stages as usize <= MAX_NODES {
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

fn build(t: &Training, a: u64, b: u64) -> (Vec<Node>, Vec<Link>) {
    let costs = breakdown(t, &vec![0i64; t.devices.len()], a, b);
    let groups = group(t);
    let mut of = vec![0u32; t.devices.len()];
    let nodes: Vec<Node> = groups
        .into_iter()
        .enumerate()
        .map(|(k, (name, devices))| {
            let mut cost = [0u64; 3];
            for &d in &devices {
                of[d as usize] = k as u32;
                for j in 0..3 {
                    cost[j] += costs[d as usize][j];
                }
            }
            Node { name, devices, cost, at: [0.0; 2], radius: 0.0 }
        })
        .collect();
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
                let (from, to) = (i as u32, j as u32);
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
        for m in self.links.iter().filter(|m| (m.from, m.to) == (a, b) || (m.from, m.to) == (b, a)) {
            let dir = format!("{} -> {}", self.nodes[m.from as usize].name, self.nodes[m.to as usize].name);
            lines.extend(link_lines(m).into_iter().map(|s| format!("{dir}: {s}")));
        }
        Some(Pick::new(format!("{} - {}", self.nodes[a as usize].name, self.nodes[b as usize].name), lines))
    }
}

impl contract::View for TopologyView {
    fn depends_on(&self) -> Parts {
        Parts::NONE
    }

    fn reads(&self) -> Parts {
        Parts::TRACK | Parts::DEVICES
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        training(d).map(|_| ())
    }

    fn prepare(&self, d: &Dataset, _: &Selection, f: Frame, _: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let t = training(d)?;
        if t.devices.is_empty() {
            return Err(ViewError::Unsupported("the training profile has no devices".into()));
        }
        let (a, b, label) = span(t, self.step)?;
        let (mut nodes, links) = build(t, a, b);
        let (width, height) = (f.width as f32, f.height as f32);
        let mut scene = Scene::new(f.width, f.height, BACKGROUND);
        let subtitle = format!(
            "{} devices, {} communicating pairs in {label} ({}); disc: communication + waiting, colour: communication's share",
            t.devices.len(),
            links.len(),
            duration((b - a) as f64)
        );
        titles(&mut scene, width, &format!("Cluster topology: {}", title_name(d)), &subtitle);
        // The matrix on the right where there is room for it, the graph on the left.
        let m = nodes.len();
        let with_matrix = m <= MATRIX_MAX && width >= 640.0 && height >= 320.0;
        let (top, bottom) = (70.0, height - 40.0);
        let graph_w = if with_matrix { width * 0.52 } else { width - 90.0 };
        let centre = [graph_w / 2.0 + 8.0, (top + bottom) / 2.0];
        let ring = ((graph_w.min(bottom - top)) / 2.0 - 34.0).max(10.0);
        let most = nodes.iter().map(|n| n.cost[1] + n.cost[2]).max().unwrap_or(0).max(1) as f32;
        let room = (PI * ring / m as f32 * 0.8).clamp(2.0, 22.0);
        for (k, n) in nodes.iter_mut().enumerate() {
            let angle = -PI / 2.0 + TAU * k as f32 / m as f32;
            n.at = [centre[0] + ring * angle.cos(), centre[1] + ring * angle.sin()];
            n.radius = (room * (0.3 + 0.7 * ((n.cost[1] + n.cost[2]) as f32 / most).sqrt())).max(2.0);
        }
        // Edges: both directions of a pair as one line, as wide as their time.
        let mut pairs: std::collections::BTreeMap<(u32, u32), Link> = std::collections::BTreeMap::new();
        for l in &links {
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
        for n in &nodes {
            scene.disc(n.at, n.radius + 1.5, [0.85, 0.85, 0.88, 1.0], true);
            scene.disc(n.at, n.radius, ColorMap::Cividis.sample(n.share()), true);
        }
        if m <= MAX_NODES {
            for (k, n) in nodes.iter().enumerate() {
                let angle = -PI / 2.0 + TAU * k as f32 / m as f32;
                let r = ring + n.radius + 10.0;
                let label = match n.devices[..] {
                    [d] => t.devices[d as usize].rank.to_string(),
                    _ => format!("{k}"),
                };
                let at = [centre[0] + r * angle.cos(), centre[1] + r * angle.sin() + 4.0];
                scene.text(&label, at, 10.0, Anchor::Centre, TEXT_DIM);
            }
        }
        // The share's colour bar in the graph's lower left corner.
        let bar = [16.0, bottom - 100.0, 10.0, 80.0];
        color_bar_bare(
            &mut scene,
            |v| ColorMap::Cividis.sample(v),
            Scale { lo: 0.0, hi: 100.0, log: false },
            "comm. %",
            bar,
        );
        let matrix = with_matrix.then(|| {
            matrix(&mut scene, (&nodes, &links), t, [width * 0.56, top + 16.0, width - 16.0, bottom], self.boxes)
        });
        // The kinds of communication present, in one row at the bottom.
        let mut x = 16.0;
        for (k, (name, [r, g, b])) in KINDS.iter().enumerate() {
            if present[k] || links.iter().any(|l| l.by_class.keys().any(|&c| kind(Class::from_u8(c)) == k)) {
                scene.rect([x, height - 22.0], [x + 10.0, height - 12.0], [*r, *g, *b, 1.0], true);
                x += 14.0 + scene.text(name, [x + 14.0, height - 12.0], 11.0, Anchor::Left, TEXT_DIM) + 16.0;
            }
        }
        if links.is_empty() {
            scene.text("no communication in this step", [centre[0], top + 12.0], 12.0, Anchor::Centre, TEXT);
        }
        Ok(Box::new(Drawn { scene, picker: Graph { nodes, links, matrix } }))
    }
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
