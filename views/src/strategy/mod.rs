//! `--view strategy`: the parallelism-strategy graph of Wei et al. (a training step's operator
//! graph with each operator's parallel strategy), from an operator graph such as XLA's HLO
//! modules ([`exaviz_model::opgraph`]).
//!
//! The entry computation's operators are laid out by the paper's force model ([`layout`]: x along
//! the execution order, a successor never left of its operand, the main line on the central axis,
//! the subordinate operators above it, a pipeline's chunks in bands per stage), each coloured by
//! its class (communication, partitioned output, redistribution, parameter or constant, other),
//! with its strategy (`[8,1]`) written under it where there is room and its namespace (the
//! `op_name` path without the operator: forward `jvp()`, backward `transpose(jvp())`, the update)
//! as a soft disc under it for the eight most common; transfers between stages are drawn in the
//! communication colour.
//! The graph pans and zooms in the window (its operators' labels with it, at the resolution
//! they were laid out at); titles and legends stay put. Edge kinds have switches (`--edges`), and
//! `--namespaces` chooses the discs. A click on an operator selects it by name (the Marey view
//! outlines its bands); an operator selected there is outlined here with its namespace.
//! In the window, the panel lists the module's most common namespaces (`--namespaces`).
//! Similar substructures (a model's layers, the optimizer's updates) are drawn once each, as a
//! stack with its count ([`stacks`]; `--unstacked` draws every operator).
//! Under the graph, where the frame has room, a minimap shows the whole graph; in the window it
//! outlines the part in view, and a click in it centres the graph there.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::opgraph::{OpClass, OpGraph, Strategy};
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Anchor, Blend, Scene};

use crate::contract::{Class, Drawn, Frame, Minimap, Pick, Picker, Prepared, View};
use crate::plot::{CATEGORICAL, fit, titles};
use crate::{BACKGROUND, TEXT_DIM, ViewError, title_name};

pub mod layout;
pub mod stacks;
pub use layout::{Placed, layout};
pub use stacks::{Stacks, stacks};

/// The classes in the legend's order, with their colours.
const CLASSES: [(OpClass, usize); 5] = [
    (OpClass::Communication, 5),
    (OpClass::Partitioned, 1),
    (OpClass::Redistribution, 6),
    (OpClass::Input, 7),
    (OpClass::Other, 2),
];

fn colour(class: OpClass) -> [f32; 4] {
    let k = CLASSES.iter().find(|c| c.0 == class).map_or(7, |c| c.1);
    let [r, g, b] = CATEGORICAL[k];
    [r, g, b, 1.0]
}

pub struct StrategyView {
    pub edges: Vec<EdgeKind>,
    pub namespaces: Vec<String>,
    pub unstacked: bool,
}

/// The kinds of edges, each with a switch (Wei et al., §5.1.1 step 1: primary edges carry the
/// execution logic, secondary ones such as the long spans from the forward to the backward pass
/// can be hidden).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum EdgeKind {
    /// Between computing operators.
    Data,
    /// From a parameter or constant (and what only views one).
    Parameter,
    /// Into or out of a collective (all-reduce, all-gather, ...).
    Collective,
    /// From a pipeline transfer (collective-permute, send, receive) into the next stage's chunk.
    Transfer,
    /// From the forward pass (`jvp()`) to the backward pass (`transpose(jvp())`): the long spans.
    Long,
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 5] =
        [EdgeKind::Data, EdgeKind::Parameter, EdgeKind::Collective, EdgeKind::Transfer, EdgeKind::Long];

    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Data => "data",
            EdgeKind::Parameter => "parameter",
            EdgeKind::Collective => "collective",
            EdgeKind::Transfer => "transfer",
            EdgeKind::Long => "long",
        }
    }
}

/// The minimap's height in pixels (shown in frames at least [`MINIMAP_FROM`] high).
const MINIMAP_H: f32 = 40.0;
const MINIMAP_FROM: u32 = 360;

/// Above this many operators, the graph is drawn as one raster layer.
const NODE_RASTER: usize = 5_000;

/// Above this many edges, the plain ones are drawn as one raster layer.
const EDGE_RASTER: usize = 10_000;

/// Whether a namespace is the forward pass (`jvp(...)` without `transpose`) or the backward one.
fn pass(ns: &str) -> Option<bool> {
    if ns.contains("transpose(jvp") {
        Some(false)
    } else if ns.contains("jvp(") {
        Some(true)
    } else {
        None
    }
}

/// The kind of the edge from `a` to `b` as placed.
fn edge_kind(g: &OpGraph, placed: &Placed, i: usize, j: usize) -> EdgeKind {
    let (a, b) = (&g.nodes[placed.nodes[i] as usize], &g.nodes[placed.nodes[j] as usize]);
    if placed.chunks[i] != placed.chunks[j] && layout::is_transfer(&a.opcode) {
        EdgeKind::Transfer
    } else if pass(&a.namespace) == Some(true) && pass(&b.namespace) == Some(false) {
        EdgeKind::Long
    } else if placed.subordinate[i] {
        EdgeKind::Parameter
    } else if a.class == OpClass::Communication || b.class == OpClass::Communication {
        EdgeKind::Collective
    } else {
        EdgeKind::Data
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct StrategyArgs {
    /// The kinds of edges drawn (default: all).
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1.., value_name = "KIND,...")]
    pub edges: Vec<EdgeKind>,
    /// The namespaces given discs, at most 8, by the legend's names or whole `op_name` paths
    /// (default: the most common).
    #[arg(long, value_delimiter = ',', num_args = 1.., value_name = "NAMESPACE,...")]
    pub namespaces: Vec<String>,
    /// Outline this operator (by name) and its namespace; the Marey view's click selects the
    /// same.
    #[arg(long, value_name = "NAME")]
    pub operator: Option<exaviz_model::selection::Search>,
    /// Draw every operator: do not stack similar substructures (repeated layers, the
    /// optimizer's updates) into one drawn piece each.
    #[arg(long)]
    pub unstacked: bool,
}

impl Class for StrategyView {
    const NAME: &'static str = "strategy";
    const ABOUT: &'static str = "Parallelism-strategy graph (Wei et al.): a training step's operators (an XLA HLO module) in data-flow order, coloured by class, with their partitioning ([8,1]).";
    type Args = StrategyArgs;

    fn selection(args: &StrategyArgs) -> Selection {
        Selection { operator: args.operator, ..Selection::default() }
    }

    fn new(args: &StrategyArgs) -> Self {
        let edges = if args.edges.is_empty() { EdgeKind::ALL.to_vec() } else { args.edges.clone() };
        StrategyView { edges, namespaces: args.namespaces.clone(), unstacked: args.unstacked }
    }
}

struct Graph {
    placed: Placed,
    /// Per operator: the pieces of the stack it heads (0: none).
    copies: Vec<u32>,
    minimap: Option<Minimap>,
    /// The run's clock offsets as the Marey view aligns them, where the dataset has a profile
    /// (computed once, not at every hover).
    offsets: Option<Vec<i64>>,
}

impl Picker for Graph {
    fn minimap(&self) -> Option<Minimap> {
        self.minimap
    }

    fn pick(&self, d: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let g = d.opgraph.as_ref()?;
        let k =
            self.placed.rects.iter().position(|r| {
                at[0] >= r[0] - 2.0 && at[0] <= r[2] + 2.0 && at[1] >= r[1] - 2.0 && at[1] <= r[3] + 2.0
            })?;
        let idx = self.placed.nodes[k] as usize;
        let (n, run_as) = (&g.nodes[idx], g.profile_name(idx));
        let mut lines = vec![
            format!("{} {}", n.opcode, n.shape),
            format!("strategy: {}", n.strategy.label()),
            n.class.name().to_string(),
        ];
        if !n.namespace.is_empty() {
            lines.push(n.namespace.clone());
        }
        if !n.pairs.is_empty() {
            let p: Vec<String> = n.pairs.iter().map(|(s, t)| format!("{s}->{t}")).collect();
            lines.push(format!("pairs: {}", p.join(" ")));
        }
        if let Some(&c) = self.copies.get(self.placed.nodes[k] as usize).filter(|&&c| c > 1) {
            lines.push(format!("stacked: one of {c} similar pieces of its namespace (--unstacked draws all)"));
        }
        // With the run's profile: the Marey view outlines its bands around their first run.
        let window_s = d
            .training
            .as_deref()
            .zip(self.offsets.as_deref())
            .and_then(|(t, offsets)| crate::run::operator_window(t, offsets, run_as));
        if window_s.is_some() {
            if run_as != n.name {
                lines.push(format!("runs as {run_as} in the profile"));
            }
            lines.push("click: select it (the Marey view outlines its bands and shows their time)".into());
        }
        let sel =
            Selection { operator: exaviz_model::selection::Search::new(run_as).ok(), window_s, ..Selection::default() };
        Some(Pick::new(n.name.clone(), lines).with_click(Parts::OPERATOR | Parts::WINDOW, sel))
    }

    /// The selected operator (a click here, or on its band in the Marey view) outlined in white,
    /// the other operators of its namespace in grey; where the profile names several operators
    /// alike (PyTorch's `aten::linear`), each of them.
    fn overlay(&self, d: &Dataset, sel: &Selection, scene: &mut Scene) -> bool {
        let (Some(op), Some(g)) = (sel.operator, d.opgraph.as_ref()) else { return false };
        let hit = |n: u32| g.nodes[n as usize].name == op.as_str() || g.profile_name(n as usize) == op.as_str();
        let chosen: Vec<usize> = (0..self.placed.nodes.len()).filter(|&k| hit(self.placed.nodes[k])).collect();
        let Some(&k) = chosen.first() else {
            return false;
        };
        let ns = namespace_of(&g.nodes[self.placed.nodes[k] as usize].namespace);
        let outline = |scene: &mut Scene, r: [f32; 4], pad: f32, colour: [f32; 4]| {
            scene.frame([r[0] - pad, r[1] - pad, r[2] + pad, r[3] + pad], 1.5, colour, false);
        };
        if !ns.is_empty() {
            for (j, &n) in self.placed.nodes.iter().enumerate() {
                if !chosen.contains(&j) && namespace_of(&g.nodes[n as usize].namespace) == ns {
                    outline(scene, self.placed.rects[j], 1.5, [0.75, 0.75, 0.78, 0.6]);
                }
            }
        }
        for &k in &chosen {
            outline(scene, self.placed.rects[k], 3.0, [1.0, 1.0, 1.0, 1.0]);
        }
        true
    }
}

/// A node's namespace: its `op_name` without the operator's own last segment
/// (`jit(step)/transpose(jvp())`), empty where none is written.
fn namespace_of(op_name: &str) -> &str {
    op_name.rsplit_once('/').map_or("", |(ns, _)| ns)
}

/// The most common namespaces of the shown nodes, at most one per categorical colour, most
/// first (ties by name).
pub fn namespaces(g: &OpGraph, shown: impl Fn(usize) -> bool) -> Vec<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let ns = namespace_of(&n.namespace);
        if shown(i) && !ns.is_empty() {
            *counts.entry(ns).or_default() += 1;
        }
    }
    let mut v: Vec<(&str, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    v.into_iter().take(CATEGORICAL.len()).map(|(ns, _)| ns.to_string()).collect()
}

/// The namespaces named by `--namespaces` (a legend's short name or a whole path), in order;
/// an unknown one is refused with the most common ones named.
fn chosen_namespaces(g: &OpGraph, names: &[String]) -> Result<Vec<String>, ViewError> {
    let all: std::collections::BTreeSet<&str> = g.nodes.iter().map(|n| namespace_of(&n.namespace)).collect();
    let mut out = Vec::new();
    for name in names.iter().take(CATEGORICAL.len()) {
        let found = all.iter().find(|ns| **ns == name || ns.split_once('/').is_some_and(|(_, rest)| rest == name));
        match found {
            Some(ns) => out.push(ns.to_string()),
            None => {
                let common = namespaces(g, |_| true);
                let short: Vec<&str> =
                    common.iter().map(|ns| ns.split_once('/').map_or(ns.as_str(), |(_, r)| r)).collect();
                return Err(ViewError::Unsupported(format!(
                    "no namespace '{name}' in the module (the most common: {})",
                    short.join(", ")
                )));
            }
        }
    }
    Ok(out)
}

/// A namespace's disc colour: the categorical colours the classes use least first.
fn disc_colour(k: usize, alpha: f32) -> [f32; 4] {
    const ORDER: [usize; 8] = [3, 4, 0, 6, 1, 2, 5, 7];
    let [r, g, b] = CATEGORICAL[ORDER[k % ORDER.len()]];
    [r, g, b, alpha]
}

/// A legend entry placed: its text, colour, whether a disc (rather than a square) shows it,
/// and where its text's baseline starts.
type LegendEntry = (String, [f32; 4], bool, [f32; 2]);

/// Legend entries (text, colour, a disc rather than a square) placed in rows that wrap at
/// `width`, the last row at the picture's bottom; and how many rows.
fn legend_rows(entries: Vec<(String, [f32; 4], bool)>, width: f32, height: f32) -> (Vec<LegendEntry>, u32) {
    let (mut x, mut row) = (16.0f32, 0u32);
    let mut placed = Vec::new();
    for (text, colour, disc) in entries {
        let room = 14.0 + exaviz_render::TextAtlas::measure(&text, 11.0);
        if x + room > width - 8.0 && x > 16.0 {
            (x, row) = (16.0, row + 1);
        }
        placed.push((text, colour, disc, x, row));
        x += room + 16.0;
    }
    let rows = row + 1;
    let at = |r: u32| height - 14.0 - 16.0 * (rows - 1 - r) as f32;
    (placed.into_iter().map(|(t, c, d, x, r)| (t, c, d, [x, at(r)])).collect(), rows)
}

impl StrategyView {
    /// The graph: a pipeline's bands, the namespaces' discs, the edges and the operators with
    /// their strategies; a note of hidden edges.
    fn graph(
        &self,
        scene: &mut Scene,
        g: &OpGraph,
        placed: &Placed,
        (spaces, stacks): (&[String], &Stacks),
        (backend, raster_edges): (&Backend, bool),
    ) -> Result<Option<String>, ViewError> {
        let width = scene.width as f32;
        // A pipeline's bands, one per chunk, named by their stage.
        for (k, &(stage, [y0, y1])) in placed.bands.iter().enumerate() {
            if k % 2 == 0 {
                scene.rect([8.0, y0], [width - 8.0, y1], [1.0, 1.0, 1.0, 0.03], false);
            }
            scene.text_world(&format!("stage {stage}"), [12.0, (y0 + y1) / 2.0 + 4.0], 10.0, Anchor::Left, TEXT_DIM);
        }
        for (k, &n) in placed.nodes.iter().enumerate() {
            let ns = namespace_of(&g.nodes[n as usize].namespace);
            if let Some(c) = spaces.iter().position(|s| s == ns) {
                let r = placed.rects[k];
                let (centre, radius) =
                    ([(r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0], (r[2] - r[0]).max(r[3] - r[1]) * 0.75);
                scene.disc(centre, radius, disc_colour(c, 0.12), false);
                scene.disc(centre, radius * 0.7, disc_colour(c, 0.2), false);
            }
        }
        let hidden_note = self.edges(scene, g, placed, backend, raster_edges)?;
        // A stack's operators over two shadows of themselves, its count at its first operator.
        for (k, &n) in placed.nodes.iter().enumerate() {
            if stacks.copies.get(n as usize).is_some_and(|&c| c > 1) {
                let r = placed.rects[k];
                let [cr, cg, cb, _] = colour(g.nodes[n as usize].class);
                for s in [2.0f32, 1.0] {
                    let d = 2.5 * s;
                    let shade = [cr * 0.55, cg * 0.55, cb * 0.55, 1.0];
                    scene.rect([r[0] + d, r[1] - d], [r[2] + d, r[3] - d], shade, false);
                }
            }
        }
        for &(first, count) in &stacks.stacks {
            if let Some(k) = placed.nodes.iter().position(|&n| n == first) {
                let (r, text) = (placed.rects[k], format!("x{count}"));
                // Right of the piece's first operator, or left of it at the picture's edge.
                if r[2] + 8.0 + exaviz_render::TextAtlas::measure(&text, 9.0) < width {
                    scene.text_world(&text, [r[2] + 6.0, r[1] - 6.0], 9.0, Anchor::Left, TEXT_DIM);
                } else {
                    scene.text_world(&text, [r[0] - 6.0, r[1] - 6.0], 9.0, Anchor::Right, TEXT_DIM);
                }
            }
        }
        for (k, &n) in placed.nodes.iter().enumerate() {
            let node = &g.nodes[n as usize];
            let r = placed.rects[k];
            scene.rect([r[0], r[1]], [r[2], r[3]], colour(node.class), false);
            let label = match &node.strategy {
                Strategy::Tiled { .. } | Strategy::Maximal(_) => node.strategy.label(),
                _ => String::new(),
            };
            if !label.is_empty() && r[2] - r[0] >= 24.0 && placed.gap >= 11.0 {
                let at = [(r[0] + r[2]) / 2.0, r[3] + 10.0];
                scene.text_world(&fit(&label, r[2] - r[0] + 8.0, 9.0), at, 9.0, Anchor::Centre, TEXT_DIM);
            }
        }
        Ok(hidden_note)
    }

    /// Draws the edges of the kinds switched on; a note of the hidden ones' counts, if any.
    /// With `raster` (past [`EDGE_RASTER`] edges), the plain ones are summed by the
    /// `line_density` stage into one raster layer instead of a segment each.
    fn edges(
        &self,
        scene: &mut Scene,
        g: &OpGraph,
        placed: &Placed,
        backend: &Backend,
        raster: bool,
    ) -> Result<Option<String>, ViewError> {
        let at: std::collections::HashMap<u32, usize> = placed.nodes.iter().enumerate().map(|(k, &n)| (n, k)).collect();
        // Edges fainter as they grow many, so that thousands do not hide the operators.
        let alpha = (0.35 * (300.0 / g.edges.len().max(1) as f32).sqrt()).clamp(0.05, 0.35);
        let transfer = colour(OpClass::Communication);
        let mut counts = [0usize; EdgeKind::ALL.len()];
        let mut plain: Vec<[f32; 4]> = Vec::new();
        for &(a, b) in &g.edges {
            if let (Some(&i), Some(&j)) = (at.get(&a), at.get(&b)) {
                let kind = edge_kind(g, placed, i, j);
                counts[kind as usize] += 1;
                if !self.edges.contains(&kind) {
                    continue;
                }
                let (r, s) = (placed.rects[i], placed.rects[j]);
                let from = [r[2], (r[1] + r[3]) / 2.0];
                let to = [s[0], (s[1] + s[3]) / 2.0];
                // A transfer's edge into the next stage's chunk in the communication colour.
                if kind == EdgeKind::Transfer {
                    scene.segment(Blend::Alpha, from, to, 1.5, [transfer[0], transfer[1], transfer[2], 0.8], false);
                } else if raster {
                    plain.push([from[0], from[1], to[0], to[1]]);
                } else {
                    scene.segment(Blend::Alpha, from, to, 1.0, [0.7, 0.72, 0.78, alpha], false);
                }
            }
        }
        if !plain.is_empty() {
            let (w, h) = (scene.width, scene.height);
            let input = exaviz_compute::DensityInput { segments: &plain, weights: None, width: w, height: h };
            let image = exaviz_compute::line_density::run(backend.runner().as_mut(), &input)
                .map_err(|e| ViewError::Unsupported(format!("strategy edges: {e}")))?;
            // As many edges of opacity `alpha` blended over one another.
            let pixels: Vec<[u8; 4]> = image
                .counts
                .iter()
                .map(|&c| {
                    let a = 1.0 - (1.0 - alpha).powi(c.min(1 << 16) as i32);
                    [179, 184, 199, (a * 255.0).round() as u8]
                })
                .collect();
            scene.raster(exaviz_render::Raster::rgba([0.0, 0.0, w as f32, h as f32], w, h, pixels));
        }
        let hidden: Vec<String> = EdgeKind::ALL
            .iter()
            .filter(|k| !self.edges.contains(k) && counts[**k as usize] > 0)
            .map(|k| format!("{} {}", k.name(), counts[*k as usize]))
            .collect();
        Ok((!hidden.is_empty()).then(|| format!("edges hidden: {}", hidden.join(", "))))
    }
}

impl View for StrategyView {
    /// The training model alone: a run whose rows stay on disk draws as one held in memory.
    fn reads_rows(&self) -> bool {
        false
    }

    fn depends_on(&self) -> Parts {
        Parts::NONE
    }

    fn reads(&self) -> Parts {
        Parts::OPERATOR | Parts::WINDOW
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        match &d.opgraph {
            Some(g) if !g.nodes.is_empty() => Ok(()),
            Some(_) => Err(ViewError::Unsupported("the operator graph holds no operators".into())),
            None => Err(ViewError::Unsupported(
                "needs a training step's operator graph: an XLA HLO module as text (--xla_dump_to=DIR --xla_dump_hlo_as_text)".into(),
            )),
        }
    }

    fn prepare(&self, d: &Dataset, _: &Selection, f: Frame, backend: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        self.check(d)?;
        let many =
            d.opgraph.as_ref().map_or((false, false), |g| (g.nodes.len() > NODE_RASTER, g.edges.len() > EDGE_RASTER));
        let Pictured { scene, placed, copies, minimap } = self.picture(d, f, backend, many)?;
        let offsets = d
            .training
            .as_deref()
            .map(|t| exaviz_analysis::training::offsets(t, exaviz_analysis::training::Align::Full));
        Ok(Box::new(Drawn { scene, picker: Graph { placed, copies, minimap, offsets } }))
    }
}

/// A prepared picture: its scene, where its operators are, the stacks' counts and the minimap.
struct Pictured {
    scene: Scene,
    placed: Placed,
    copies: Vec<u32>,
    minimap: Option<Minimap>,
}

/// The minimap's picture: each placed operator in its class's colour, at least a pixel, over the
/// pipeline's bands.
fn minimap_raster(g: &OpGraph, placed: &Placed, m: &Minimap) -> exaviz_render::Raster {
    let (w, h) = (((m.area[2] - m.area[0]).round() as u32).max(1), ((m.area[3] - m.area[1]).round() as u32).max(1));
    let mut px = vec![[0u8; 4]; (w * h) as usize];
    let [wx0, wy0, wx1, wy1] = m.world;
    let (sx, sy) = (w as f32 / (wx1 - wx0).max(1.0), h as f32 / (wy1 - wy0).max(1.0));
    let span = |a: f32, b: f32, s: f32, o: f32, n: u32| {
        let lo = ((a - o) * s).floor().clamp(0.0, n as f32 - 1.0) as u32;
        let hi = ((b - o) * s).ceil().clamp(lo as f32 + 1.0, n as f32) as u32;
        lo..hi
    };
    for (k, &(_, [y0, y1])) in placed.bands.iter().enumerate() {
        if k % 2 == 0 {
            for y in span(y0, y1, sy, wy0, h) {
                px[(y * w) as usize..((y + 1) * w) as usize].fill([255, 255, 255, 10]);
            }
        }
    }
    for (k, &n) in placed.nodes.iter().enumerate() {
        let r = placed.rects[k];
        let c = colour(g.nodes[n as usize].class).map(|v| (v * 255.0).round() as u8);
        for y in span(r[1], r[3], sy, wy0, h) {
            for x in span(r[0], r[2], sx, wx0, w) {
                px[(y * w + x) as usize] = c;
            }
        }
    }
    let mut raster = exaviz_render::Raster::rgba(m.area, w, h, px);
    raster.screen = true;
    raster
}

impl StrategyView {
    /// The picture and where its operators are; with `raster.0`, the graph drawn once by the
    /// backend's renderer into one raster layer (a pan or zoom then redraws one texture); with
    /// `raster.1`, the plain edges summed into one raster layer by the `line_density` stage.
    fn picture(&self, d: &Dataset, f: Frame, backend: &Backend, raster: (bool, bool)) -> Result<Pictured, ViewError> {
        let g = d.opgraph.as_ref().ok_or_else(|| ViewError::Unsupported("no operator graph".into()))?;
        let (width, height) = (f.width as f32, f.height as f32);
        let mut scene = Scene::new(f.width, f.height, BACKGROUND);
        let in_entry = |i: usize| g.entry.is_none_or(|e| g.nodes[i].computation == e);
        let stacked = if self.unstacked { Stacks::none(g.nodes.len()) } else { stacks(g, &in_entry) };
        let shown = |i: usize| in_entry(i) && !stacked.hidden[i];
        let spaces =
            if self.namespaces.is_empty() { namespaces(g, shown) } else { chosen_namespaces(g, &self.namespaces)? };
        // The legend first: its entries wrap into rows at the bottom, the graph above them.
        let mut entries: Vec<(String, [f32; 4], bool)> = CLASSES
            .iter()
            .map(|&(class, _)| {
                let count = (0..g.nodes.len()).filter(|&i| shown(i) && g.nodes[i].class == class).count();
                (format!("{} {count}", class.name()), colour(class), false)
            })
            .collect();
        let short = |ns: &str| ns.split_once('/').map_or(ns.to_string(), |(_, rest)| rest.to_string());
        entries.extend(spaces.iter().enumerate().map(|(k, ns)| (short(ns), disc_colour(k, 0.6), true)));
        let (legend, rows) = legend_rows(entries, width, height);
        let left = if g.stage_order().is_empty() { 24.0 } else { 64.0 };
        // The minimap's strip above the legend, where the frame has room.
        let legend_top = height - 22.0 - 16.0 * rows as f32;
        let strip = if f.height >= MINIMAP_FROM && f.width >= 480 { MINIMAP_H + 10.0 } else { 0.0 };
        let minimap = (strip > 0.0).then(|| {
            let world = [0.0, 70.0, width, legend_top - strip];
            let aspect = (world[2] - world[0]) / (world[3] - world[1]).max(1.0);
            let w = (MINIMAP_H * aspect).clamp(40.0, width - 32.0);
            let y0 = legend_top - strip + 4.0;
            Minimap { area: [16.0, y0, 16.0 + w.round(), y0 + MINIMAP_H], world }
        });
        let plot = [left, 86.0, width - 24.0, height - 30.0 - 16.0 * rows as f32 - strip];
        let placed = layout::layout_shown(g, &stacked.hidden, plot, backend)
            .map_err(|e| ViewError::Unsupported(format!("strategy layout: {e}")))?;
        let stages: Vec<String> = g.stage_order().iter().map(u32::to_string).collect();
        let stages = if stages.is_empty() {
            String::new()
        } else {
            format!("; pipeline stages {} in {} chunks", stages.join(" -> "), placed.bands.len().max(1))
        };
        let stacked_note = match stacked.hidden_count() {
            0 => String::new(),
            h => format!(" ({h} more in {} stacks of similar pieces)", stacked.stacks.len()),
        };
        let subtitle = format!(
            "{} operators{stacked_note} of {} in data-flow order, {} partitions{stages}; discs: namespaces",
            placed.nodes.len(),
            g.name,
            g.partitions
        );
        let hidden_note = if raster.0 {
            let mut picture = Scene::new(f.width, f.height, BACKGROUND);
            let note = self.graph(&mut picture, g, &placed, (&spaces, &stacked), (backend, raster.1))?;
            let image = exaviz_render::render_scene(backend, &picture, exaviz_render::View::default())
                .map_err(|e| ViewError::Unsupported(format!("strategy graph: {e}")))?;
            let pixels: Vec<[u8; 4]> = image.pixels.chunks_exact(4).map(|p| [p[0], p[1], p[2], p[3]]).collect();
            scene.raster(exaviz_render::Raster::rgba([0.0, 0.0, width, height], f.width, f.height, pixels));
            note
        } else {
            self.graph(&mut scene, g, &placed, (&spaces, &stacked), (backend, raster.1))?
        };
        // The titles and the legend over the graph, on the background, where pan and zoom leave
        // them.
        let back = [BACKGROUND[0], BACKGROUND[1], BACKGROUND[2], 1.0];
        scene.rect([0.0, 0.0], [width, 70.0], back, true);
        scene.rect([0.0, legend_top - strip], [width, height], back, true);
        titles(&mut scene, width, &format!("Parallel strategies: {}", title_name(d)), &subtitle);
        if let Some(note) = hidden_note {
            scene.text(&fit(&note, width - 32.0, 10.0), [width - 16.0, 64.0], 10.0, Anchor::Right, TEXT_DIM);
        }
        for (text, fill, disc, [x, y]) in legend {
            if disc {
                scene.disc([x + 5.0, y - 5.0], 5.0, fill, true);
            } else {
                scene.rect([x, y - 10.0], [x + 10.0, y], fill, true);
            }
            scene.text(&text, [x + 14.0, y], 11.0, Anchor::Left, TEXT_DIM);
        }
        if let Some(m) = &minimap {
            scene.rect([m.area[0], m.area[1]], [m.area[2], m.area[3]], [1.0, 1.0, 1.0, 0.05], true);
            scene.raster(minimap_raster(g, &placed, m));
            scene.frame(m.area, 1.0, [0.6, 0.62, 0.68, 0.8], true);
        }
        Ok(Pictured { scene, placed, copies: stacked.copies, minimap })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::opgraph::OpNode;

    fn node(name: &str, opcode: &str, class: OpClass) -> OpNode {
        OpNode { shape: "f32[8]".into(), ..OpNode::new(name, opcode, class) }
    }

    /// A successor is never left of its operand; parameters sit above the axis, computing
    /// operators on and below it; nothing overlaps.
    #[test]
    fn successors_are_right_of_their_operands_and_parameters_above() {
        let mut g = OpGraph { entry: Some(0), computations: vec!["main".into()], ..OpGraph::default() };
        g.nodes = vec![
            node("p", "parameter", OpClass::Input),
            node("a", "tanh", OpClass::Other),
            node("b", "exp", OpClass::Other),
            node("c", "add", OpClass::Other),
            node("w", "parameter", OpClass::Input),
            node("d", "dot", OpClass::Partitioned),
        ];
        g.edges = vec![(0, 1), (0, 2), (1, 3), (2, 3), (3, 5), (4, 5)];
        let p = layout(&g, [0.0, 0.0, 600.0, 400.0], &Backend::Cpu).unwrap();
        let rect = |n: u32| p.rects[p.nodes.iter().position(|&k| k == n).unwrap()];
        for &(a, b) in &g.edges {
            if g.nodes[a as usize].class != OpClass::Input {
                assert!(rect(a)[2] < rect(b)[0], "{a} -> {b}");
            }
        }
        let axis = [1, 2, 3, 5].map(|n| rect(n)[1]).into_iter().fold(f32::MAX, f32::min);
        assert!(rect(0)[3] < axis && rect(4)[3] < axis, "parameters above the main line");
        for i in 0..p.rects.len() {
            for j in i + 1..p.rects.len() {
                let (a, b) = (p.rects[i], p.rects[j]);
                assert!(a[2] <= b[0] || b[2] <= a[0] || a[3] <= b[1] || b[3] <= a[1], "{i} overlaps {j}");
            }
        }
    }

    /// Past NODE_RASTER operators the graph is one raster layer drawn by the renderer: the
    /// picture is the one the graph drawn directly gives, pixel for pixel.
    #[test]
    fn a_large_graph_as_one_raster_is_the_graph_drawn_directly() {
        let mut g = OpGraph { entry: Some(0), computations: vec!["main".into()], ..OpGraph::default() };
        for i in 0..3_000 {
            let (opcode, class) = if i % 5 == 0 { ("parameter", OpClass::Input) } else { ("add", OpClass::Other) };
            let mut node = node(&format!("op{i}"), opcode, class);
            node.namespace = format!("jit(step)/layer{}/add", i / 700);
            g.nodes.push(node);
            if i % 5 != 0 {
                g.edges.push(((i - 1) as u32, i as u32));
            }
        }
        let frame = Frame { width: 640, height: 360 };
        let view = StrategyView { edges: EdgeKind::ALL.to_vec(), namespaces: Vec::new(), unstacked: true };
        let d = Dataset { opgraph: Some(std::sync::Arc::new(g)), ..Dataset::default() };
        let Pictured { scene: direct, placed, .. } = view.picture(&d, frame, &Backend::Cpu, (false, false)).unwrap();
        let Pictured { scene: raster, placed: again, .. } =
            view.picture(&d, frame, &Backend::Cpu, (true, false)).unwrap();
        assert_eq!(placed, again);
        assert!(raster.layers.iter().any(|l| l.raster.is_some()), "the graph is a raster layer");
        assert!(raster.instance_count() * 4 < direct.instance_count(), "the graph is not drawn one by one");
        let a = exaviz_render::cpu::render(&raster, exaviz_render::View::default());
        let b = exaviz_render::cpu::render(&direct, exaviz_render::View::default());
        let differ = a.pixels.chunks(4).zip(b.pixels.chunks(4)).filter(|(x, y)| x != y).count();
        assert_eq!(differ, 0, "{differ} pixels differ between the raster and the graph drawn directly");
    }

    /// With many edges, the plain ones are one density raster (the line_density stage) rather
    /// than a segment each; the transfers stay segments.
    #[test]
    fn many_edges_are_one_density_layer() {
        let mut g = OpGraph { entry: Some(0), computations: vec!["main".into()], ..OpGraph::default() };
        for i in 0..400 {
            g.nodes.push(node(&format!("op{i}"), "add", OpClass::Other));
            if i > 0 {
                g.edges.push(((i - 1) as u32, i as u32));
            }
        }
        let view = StrategyView { edges: EdgeKind::ALL.to_vec(), namespaces: Vec::new(), unstacked: true };
        let d = Dataset { opgraph: Some(std::sync::Arc::new(g)), ..Dataset::default() };
        let frame = Frame { width: 640, height: 360 };
        let lines = view.picture(&d, frame, &Backend::Cpu, (false, false)).unwrap().scene;
        let density = view.picture(&d, frame, &Backend::Cpu, (false, true)).unwrap().scene;
        let segments = |s: &Scene| {
            s.layers.iter().flat_map(|l| &l.instances).filter(|i| i.kind & 255 == exaviz_render::KIND_SEGMENT).count()
        };
        assert!(segments(&lines) >= 399 && segments(&density) < 10, "{} / {}", segments(&lines), segments(&density));
        let layer = density.layers.iter().find_map(|l| l.raster.as_ref()).expect("a density layer");
        let exaviz_render::RasterData::Rgba(px) = &layer.data else { panic!("colours") };
        assert!(px.iter().filter(|p| p[3] > 0).count() > 300, "the edges are in it");
    }
}
