//! Shared pieces of the views that draw one curve per communicating pair of processes (`chord`,
//! `sendrecv`, one [`PairView`] each with its [`Layout`]): the pairs and their message counts from the heatmap stage, the curves drawn with
//! opacity by count (log scale) and alpha or additive mixing, and the legend of both.

use crate::Backend;
use crate::model::Messages;
use crate::render::{Anchor, Blend, Scene};
use crate::stages::{self, AxisKey, Bundled, HeatmapInput};

use crate::model::Dataset;
use crate::selection::{Parts, Selection};

use super::contract::{Class, Drawn, Frame, Prepared, View};
use super::plot::Mix;
use super::{TEXT, TEXT_DIM, ViewError};

/// A sending node, a receiving node ([`Nodes`]) and the number of messages between them.
pub type Pair = (usize, usize, u32);

/// What a pair view draws as one node: a rank, or a block of consecutive ranks where the trace
/// has more ranks than the view draws one by one, or where the pairs come from a pyramid whose
/// message cube gathers ranks in blocks (past 256 ranks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nodes {
    /// Nodes drawn.
    pub count: usize,
    /// Ranks per node (1: a node is a rank).
    pub block: usize,
    /// The trace's ranks.
    pub ranks: usize,
    /// Whether the pairs were counted from the pyramid's message cube: the messages of the
    /// cube's time bins that overlap the window.
    pub from_pyramid: bool,
}

impl Nodes {
    /// The first and last rank of node `i`.
    pub fn rank_range(&self, i: usize) -> (usize, usize) {
        (i * self.block, ((i + 1) * self.block).min(self.ranks).max(1) - 1)
    }

    /// The label of node `i` on an axis: its first rank.
    pub fn label(&self, i: usize) -> String {
        (i * self.block).to_string()
    }

    /// Node `i` in a tooltip: "rank 5" or "ranks 256-511".
    pub fn name(&self, i: usize) -> String {
        match self.rank_range(i) {
            (a, b) if a == b => format!("rank {a}"),
            (a, b) => format!("ranks {a}-{b}"),
        }
    }

    /// The pairs in a title: "7263 communicating pairs" or "6877 pairs of blocks".
    pub fn pairs(&self, pairs: usize) -> String {
        if self.block == 1 { format!("{pairs} communicating pairs") } else { format!("{pairs} pairs of blocks") }
    }

    /// A line at the picture's foot on what a node is and where the pairs come from; none for
    /// ranks counted from the rows.
    pub fn footnote(&self, scene: &mut Scene) {
        let mut parts = Vec::new();
        if self.block > 1 {
            parts.push(format!(
                "{} blocks of {} consecutive ranks (messages within a block not drawn)",
                self.count, self.block
            ));
        }
        if self.from_pyramid {
            parts.push("pairs from the pyramid: messages of its time bins overlapping the window".to_string());
        }
        if parts.is_empty() {
            return;
        }
        let (w, h) = (scene.width as f32, scene.height as f32);
        let text = super::plot::fit(&parts.join("; "), w - 24.0, 11.0);
        scene.text(&text, [16.0, h - 8.0], 11.0, Anchor::Left, TEXT_DIM);
    }

    /// The pair of nodes holding the ranks of `pair`.
    fn of(&self, pair: (u32, u32)) -> (usize, usize) {
        (pair.0 as usize / self.block, pair.1 as usize / self.block)
    }
}

/// Every pair of distinct processes with messages from the first to the second, binned on the
/// backend, fewest messages first (so the busiest pairs are drawn on top).
pub fn communicating_pairs(m: &Messages, backend: &Backend, n: usize) -> Result<Vec<Pair>, ViewError> {
    let input = HeatmapInput {
        x: AxisKey::Id { keys: &m.destination, extent: n as u32 },
        y: AxisKey::Id { keys: &m.source, extent: n as u32 },
        weights: None,
    };
    let grid = stages::bin_heatmap::run(backend.runner().as_mut(), &input)?;
    Ok(pairs_of(n, |k| u64::from(grid.counts[k])))
}

/// The pairs of distinct nodes of an `n` x `n` grid of counts (row-major by sender) with a
/// message, fewest first; a count past `u32::MAX` saturates.
fn pairs_of(n: usize, count: impl Fn(usize) -> u64) -> Vec<Pair> {
    let mut pairs: Vec<Pair> = (0..n * n)
        .filter(|&k| k / n != k % n)
        .filter_map(|k| {
            let c = count(k);
            (c > 0).then(|| (k / n, k % n, u32::try_from(c).unwrap_or(u32::MAX)))
        })
        .collect();
    pairs.sort_by_key(|p| p.2);
    pairs
}

/// Draws curve `e` of `curves` for every pair, coloured by `colour(pair, share along the curve)`,
/// more opaque with more messages; with many curves their opacity shrinks so that additive
/// mixing does not saturate everywhere.
pub fn draw_curves(
    scene: &mut Scene,
    curves: &Bundled,
    pairs: &[Pair],
    mix: Mix,
    width: f32,
    colour: impl Fn(&Pair, f32) -> [f32; 3],
) {
    let max = pairs.last().map_or(1, |p| p.2);
    let log_max = (f64::from(max) + 1.0).ln();
    let crowding = (1500.0 / pairs.len().max(1) as f32).min(1.0);
    let blend = match mix {
        Mix::Alpha => Blend::Alpha,
        Mix::Additive => Blend::Additive,
    };
    for (e, pair) in pairs.iter().enumerate() {
        let alpha = (0.12 + 0.6 * ((f64::from(pair.2) + 1.0).ln() / log_max)) as f32 * crowding;
        let points = curves.edge(e);
        let last = (points.len() - 1).max(1) as f32;
        scene.stroke(blend, points, width, |k| {
            let g = colour(pair, k as f32 / last);
            [g[0], g[1], g[2], alpha * 0.6]
        });
    }
}

/// Legend of the curves' opacity (messages per pair) with its top at `y`.
pub fn opacity_legend(scene: &mut Scene, x: f32, y: f32, max: u32, mix: Mix) {
    scene.text("messages per pair", [x, y], 13.0, Anchor::Left, TEXT);
    for (k, label) in [(0, "1".to_string()), (1, format!("{max}"))] {
        let a = if k == 0 { 0.2 } else { 0.72 };
        let yy = y + 14.0 + k as f32 * 18.0;
        scene.rect([x, yy], [x + 28.0, yy + 3.0], [1.0, 1.0, 1.0, a], true);
        scene.text(&label, [x + 36.0, yy + 6.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    scene.text("(opacity, log scale;", [x, y + 66.0], 11.0, Anchor::Left, TEXT_DIM);
    let how = if mix == Mix::Additive { " colours add up)" } else { " alpha blended)" };
    scene.text(how, [x, y + 80.0], 11.0, Anchor::Left, TEXT_DIM);
}

/// Picking over the curves of the pair views: the curve passing nearest to a point.
pub struct PairPick {
    pub nodes: Nodes,
    pub pairs: Vec<Pair>,
    pub curves: Option<Bundled>,
}

impl PairPick {
    /// The pair whose curve passes within 4 pixels of `at`, nearest first; the busiest pair
    /// wins among curves equally near (they are drawn on top).
    fn pair_near(&self, at: [f32; 2]) -> Option<usize> {
        use rayon::prelude::*;
        let curves = self.curves.as_ref()?;
        let dist = |e: usize| {
            curves
                .edge(e)
                .windows(2)
                .map(|s| super::contract::distance_to_segment(at, s[0], s[1]))
                .fold(f32::INFINITY, f32::min)
        };
        (0..self.pairs.len())
            .into_par_iter()
            .map(|e| (dist(e), e))
            .filter(|(d, _)| *d <= 4.0)
            .min_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, e)| e)
    }
}

impl super::contract::Picker for PairPick {
    fn pick(&self, _: &crate::model::Dataset, at: [f32; 2]) -> Option<super::Pick> {
        let (s, r, count) = self.pairs[self.pair_near(at)?];
        let title = format!("{} → {}", self.nodes.name(s), self.nodes.name(r));
        let pick = super::Pick::new(title, vec![format!("{count} messages")]);
        if self.nodes.block > 1 {
            // A pair of blocks is no pair of ranks for the other views to select.
            return Some(pick);
        }
        let sel = crate::selection::Selection { pair: Some((s as u32, r as u32)), ..Default::default() };
        Some(pick.with_click(crate::selection::Parts::PAIR, sel))
    }

    /// The selected pair's curve (that of the blocks holding its ranks) drawn over the others
    /// in white.
    fn overlay(&self, _: &crate::model::Dataset, selection: &crate::selection::Selection, scene: &mut Scene) -> bool {
        let (Some(pair), Some(curves)) = (selection.pair, self.curves.as_ref()) else { return false };
        let at = self.nodes.of(pair);
        let Some(e) = self.pairs.iter().position(|p| (p.0, p.1) == at) else { return false };
        scene.stroke(Blend::Alpha, curves.edge(e), 2.5, |_| [1.0, 1.0, 1.0, 0.95]);
        true
    }
}

/// Options of the views that draw one curve per pair (`chord`, `sendrecv`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct CurveArgs {
    /// How overlapping curves combine.
    #[arg(long, value_enum, default_value = "additive")]
    pub mix: super::options::MixArg,
    /// Bundling strength β (0 straight, 1 fully bundled).
    #[arg(long, default_value_t = crate::bundling::DEFAULT_BETA, value_parser = super::options::parse_beta)]
    pub beta: f32,
    #[command(flatten)]
    pub select: super::options::TraceSelectArgs,
}

/// The picture options of the pair views.
#[derive(Clone, Copy, Debug)]
pub struct CurveOptions {
    pub width: u32,
    pub height: u32,
    /// Bundling strength: 0 draws straight curves, 1 follows the hierarchy or route exactly.
    pub beta: f32,
    /// How overlapping curves combine (the paper's diagrams add).
    pub mix: Mix,
}

impl Default for CurveOptions {
    fn default() -> Self {
        Self { width: 1024, height: 768, beta: crate::bundling::DEFAULT_BETA, mix: Mix::Additive }
    }
}

/// A pair view's picture and its curves for picking, of the messages sent in a window.
pub type SceneFn = fn(&Dataset, &Backend, &CurveOptions, Option<(f64, f64)>) -> Result<(Scene, PairPick), ViewError>;

/// How a pair view places its curves: its name, and its picture.
pub trait Layout: Send + Sync + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    /// Most ranks drawn a node each; a trace with more is drawn in blocks of ranks.
    const MOST: usize;
    const SCENE: SceneFn;
}

/// The nodes a pair view called `who` draws, and their communicating pairs among the messages
/// sent in `window_s`. A trace of at most `most` ranks gets a node per rank; a larger one blocks
/// of ranks, as many as a message cube has ([`crate::pyramid::message_block`]). A trace kept
/// on disk, or a wide window of one in memory with an index, is counted from the pyramid's
/// message cube (its blocks, the bins that overlap the window) instead of its rows.
pub fn pairs_in(
    dataset: &Dataset,
    backend: &Backend,
    who: &str,
    most: usize,
    window_s: Option<(f64, f64)>,
) -> Result<(Nodes, Vec<Pair>), ViewError> {
    let ranks = dataset.trace.locations.name.len();
    if ranks < 2 {
        return Err(ViewError::Unsupported(format!(
            "the {who} view needs at least 2 processes (locations); this trace has {ranks}"
        )));
    }
    if let Some(ooc) = &dataset.out_of_core {
        let pyr = super::trace::pyramid_of(ooc, ranks)?;
        let level = &pyr.levels[0];
        let sel = Selection { window_s, ..Selection::default() };
        let window = super::trace::window_ticks(dataset, &sel).unwrap_or(ooc.span);
        let (counts, _) = level.matrix(pyr.message_bins_over(level, window));
        let count = level.message_blocks as usize;
        let nodes = Nodes { count, block: level.message_block as usize, ranks, from_pyramid: true };
        return Ok((nodes, pairs_of(count, |k| counts[k])));
    }
    let messages = super::trace::messages_in(&dataset.trace, window_s);
    if ranks <= most {
        let nodes = Nodes { count: ranks, block: 1, ranks, from_pyramid: false };
        return Ok((nodes, communicating_pairs(&messages, backend, ranks)?));
    }
    let block = crate::pyramid::message_block(ranks as u32);
    let count = ranks.div_ceil(block as usize);
    let of = |ids: &[u32]| ids.iter().map(|&r| r / block).collect::<Vec<u32>>();
    let blocked =
        Messages { source: of(&messages.source), destination: of(&messages.destination), ..Messages::default() };
    let nodes = Nodes { count, block: block as usize, ranks, from_pyramid: false };
    Ok((nodes, communicating_pairs(&blocked, backend, count)?))
}

/// A view with one curve per communicating pair, laid out by `L`.
pub struct PairView<L>(pub CurveOptions, std::marker::PhantomData<fn(L)>);

impl<L> PairView<L> {
    pub fn of(opts: CurveOptions) -> Self {
        Self(opts, std::marker::PhantomData)
    }
}

impl<L: Layout> Class for PairView<L> {
    const NAME: &'static str = L::NAME;
    const ABOUT: &'static str = L::ABOUT;
    type Args = CurveArgs;

    fn new(args: &CurveArgs) -> Self {
        Self::of(CurveOptions { beta: args.beta, mix: args.mix.into(), ..CurveOptions::default() })
    }

    fn selection(args: &CurveArgs) -> Selection {
        args.select.selection()
    }
}

impl<L: Layout> View for PairView<L> {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        super::trace::needs_processes(d, L::NAME, 2)
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW | Parts::PAIR
    }

    /// The pairs of any window of a store come from its message cube ([`pairs_in`]).
    fn reads_pyramid(&self) -> bool {
        true
    }

    /// An index stands in for the rows where its cube draws the same nodes: one rank per block
    /// (at most 256 ranks), or more ranks than the view draws one by one (blocks either way).
    fn reads_index(&self, index: &crate::model::OutOfCore) -> bool {
        let shape = &index.pyramid.shape;
        shape.message_block == 1 || shape.ranks as usize > L::MOST
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = CurveOptions { width: f.width, height: f.height, ..self.0 };
        let (scene, picker) = (L::SCENE)(d, b, &opts, sel.window_s)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}
