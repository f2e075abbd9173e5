//! Shared pieces of the views that draw one curve per communicating pair of processes (`chord`,
//! `sendrecv`, one [`PairView`] each with its [`Layout`]): the pairs and their message counts from the heatmap stage, the curves drawn with
//! opacity by count (log scale) and alpha or additive mixing, and the legend of both.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_compute::Bundled;
use exaviz_model::Messages;
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Anchor, Blend, Scene};

use super::contract::{Class, Drawn, Frame, Prepared, View};
use super::plot::Mix;
use super::{TEXT, TEXT_DIM, ViewError};

/// Most processes a pair view (chord, sendrecv) draws one by one (its pair matrix is binned on
/// the backend); a trace with more is drawn in blocks of consecutive ranks.
pub const MAX_PROCESSES: usize = 8192;

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

    /// The picture's title at height `y`, fitted to its `width`: "{kind}: {trace} ({ranks}
    /// processes, {pairs})".
    pub fn title(&self, scene: &mut Scene, (kind, dataset): (&str, &Dataset), pairs: usize, width: u32, y: f32) {
        let title = format!("{kind}: {} ({} processes, {})", super::title_name(dataset), self.ranks, self.pairs(pairs));
        scene.text(&super::plot::fit(&title, width as f32 - 24.0, 15.0), [16.0, y], 15.0, Anchor::Left, TEXT);
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
/// backend, fewest messages first (so the busiest pairs are drawn on top). On a GPU whose grid
/// of `n` x `n` counts would take more to read back than the messages' two columns take to
/// send (2,000 ranks: 16 MB back for 200,000 messages' 1.6 MB), they are counted on the CPU.
pub fn communicating_pairs(m: &Messages, backend: &Backend, n: usize) -> Result<Vec<Pair>, ViewError> {
    let input = HeatmapInput {
        x: AxisKey::Id { keys: &m.destination, extent: n as u32 },
        y: AxisKey::Id { keys: &m.source, extent: n as u32 },
        weights: None,
    };
    let grid_bytes = (n as u64).saturating_mul(n as u64).saturating_mul(4);
    let on = if grid_bytes > m.source.len() as u64 * 8 { &Backend::Cpu } else { backend };
    let grid = stages::bin_heatmap::run(on.runner().as_mut(), &input)?;
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

/// Above this many pairs, the curves are drawn as a density image (the line-density stage)
/// instead of one stroke each: at 65,280 pairs of blocks the strokes took seconds to rasterise,
/// and each curve is by then a faint trace among thousands.
pub const DENSE_PAIRS: usize = 8192;

/// Largest picture drawn as a density (4096 x 4096: the two passes' images take 12 bytes a
/// pixel each); larger ones, a powerwall's canvas, draw strokes, whose memory does not grow with
/// the picture.
pub const DENSE_PIXELS: u64 = 1 << 24;

/// Whether `pairs` curves in a picture `width` x `height` are drawn as a density.
pub fn as_density(pairs: usize, width: u32, height: u32) -> bool {
    pairs > DENSE_PAIRS && u64::from(width) * u64::from(height) <= DENSE_PIXELS
}

/// How a pair view draws its curves: mixed as `mix`, strokes `width` pixels wide, coloured
/// `map(value(pair, share along the curve))` with the value in `[0, 1]`.
pub struct CurveStyle<V, M> {
    pub mix: Mix,
    pub width: f32,
    pub value: V,
    pub map: M,
}

/// The opacity of `pair`'s curve among `pairs` (fewest messages first): more opaque with more
/// messages (log scale); with many curves it shrinks so that additive mixing does not saturate
/// everywhere.
fn curve_alpha(pair: &Pair, pairs: &[Pair]) -> f32 {
    let max = pairs.last().map_or(1, |p| p.2);
    let log_max = (f64::from(max) + 1.0).ln();
    let crowding = (1500.0 / pairs.len().max(1) as f32).min(1.0);
    (0.12 + 0.6 * ((f64::from(pair.2) + 1.0).ln() / log_max)) as f32 * crowding * 0.6
}

/// Draws curve `e` of `curves` for each pair `e`, as `style` says and as opaque as
/// [`curve_alpha`]: a stroke each, or past [`DENSE_PAIRS`] pairs in a picture of at most
/// [`DENSE_PIXELS`] a density image ([`curve_density`]; from the pieces `cache` keeps where it
/// holds every pair's curve, [`CurveCache::density`]).
pub fn draw_curves<V: Fn(&Pair, f32) -> f32 + Sync, M: Fn(f32) -> [f32; 3] + Sync>(
    scene: &mut Scene,
    backend: &Backend,
    curves: &PairCurves,
    pairs: &[Pair],
    style: &CurveStyle<V, M>,
    cache: Option<&CurveCache>,
) -> Result<(), ViewError> {
    if as_density(pairs.len(), scene.width, scene.height) {
        if let Some(cache) = cache
            && cache.density(scene, backend, pairs, style)?
        {
            return Ok(());
        }
        return curve_density(scene, backend, curves, pairs, style);
    }
    curve_strokes(scene, curves, pairs, style);
    Ok(())
}

/// [`draw_curves`] as one stroke per curve.
pub(crate) fn curve_strokes<V: Fn(&Pair, f32) -> f32 + Sync, M: Fn(f32) -> [f32; 3] + Sync>(
    scene: &mut Scene,
    curves: &PairCurves,
    pairs: &[Pair],
    style: &CurveStyle<V, M>,
) {
    let blend = match style.mix {
        Mix::Alpha => Blend::Alpha,
        Mix::Additive => Blend::Additive,
    };
    for (e, pair) in pairs.iter().enumerate() {
        let alpha = curve_alpha(pair, pairs);
        let points = curves.edge(e);
        let last = (points.len() - 1).max(1) as f32;
        scene.stroke(blend, points, style.width, |k| {
            let g = (style.map)((style.value)(pair, k as f32 / last));
            [g[0], g[1], g[2], alpha]
        });
    }
}

/// Fixed-point scale of the density's weights (the stage sums integers exactly).
const INK_SCALE: f64 = (1u64 << 20) as f64;

/// A piece of a curve as the line-density stage walks it: from pixel centre to pixel centre,
/// covering `pixels` pixels, and standing for `length` pixels of the curve around `along`
/// (in samples from its start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PixelWalk {
    pub ends: [f32; 4],
    pub pixels: u32,
    pub length: f32,
    pub along: f32,
}

/// The pieces of the polyline `points` walked so that no pixel is walked twice where two
/// pieces meet: each piece but the last stops one step short of the pixel the next one starts
/// from, and a piece within one pixel passes its length on to the next. A piece per segment,
/// `None` where one was passed on.
pub(crate) fn pixel_walks(points: &[[f32; 2]]) -> Vec<Option<PixelWalk>> {
    let pixel = |p: [f32; 2]| [p[0].floor(), p[1].floor()];
    let segments = points.len().saturating_sub(1);
    let mut out = Vec::with_capacity(segments);
    let mut carried = 0.0f32;
    for (k, s) in points.windows(2).enumerate() {
        let (a, b) = (pixel(s[0]), pixel(s[1]));
        let length = carried + (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1]);
        let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
        let steps = dx.abs().max(dy.abs());
        let along = k as f32 + 0.5;
        if k + 1 == segments {
            let ends = [a[0] + 0.5, a[1] + 0.5, b[0] + 0.5, b[1] + 0.5];
            out.push(Some(PixelWalk { ends, pixels: steps as u32 + 1, length, along }));
        } else if steps == 0.0 {
            carried = length;
            out.push(None);
            continue;
        } else {
            // One step back along the major axis, the minor one rounded: the walk then ends on
            // a pixel next to `b`, where the next piece starts.
            let end = [b[0] - (dx / steps).round(), b[1] - (dy / steps).round()];
            let ends = [a[0] + 0.5, a[1] + 0.5, end[0] + 0.5, end[1] + 0.5];
            out.push(Some(PixelWalk { ends, pixels: steps as u32, length, along }));
        }
        carried = 0.0;
    }
    out
}

/// [`draw_curves`] as a density: every segment of every curve walked by the line-density stage
/// over the picture with two weights ([`stages::line_density::run_two`]): the ink its stroke
/// would lay on each pixel it crosses (opacity x width x length / pixels walked), and that ink
/// times the segment's value. A pixel takes the colour of its ink's mean value; mixed
/// additively it adds that colour times the ink to the background, alpha-blended it covers
/// `1 - exp(-ink)` of it, each piece's ink being `-ln(1 - opacity)` there (the strokes'
/// `1 - prod(1 - opacity)`). Drawn before anything else on the background. Mixed additively the chord's colours (linear along a
/// curve) add up exactly as the strokes' do; the sender/receiver diagram's, one per sender,
/// mix as their mean sender's colour.
pub(crate) fn curve_density<V: Fn(&Pair, f32) -> f32 + Sync, M: Fn(f32) -> [f32; 3] + Sync>(
    scene: &mut Scene,
    backend: &Backend,
    curves: &PairCurves,
    pairs: &[Pair],
    style: &CurveStyle<V, M>,
) -> Result<(), ViewError> {
    use rayon::prelude::*;
    let pieces = curves.samples.saturating_sub(1);
    // The pieces of a chunk of curves and their two weights, chunks in parallel.
    let chunk = |first: usize, chunk: &[Pair]| {
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        out.0.reserve(chunk.len() * pieces);
        out.1.reserve(chunk.len() * pieces);
        out.2.reserve(chunk.len() * pieces);
        for (e, pair) in chunk.iter().enumerate() {
            let alpha = f64::from(curve_alpha(pair, pairs)) * f64::from(style.width);
            let points = curves.edge(first + e);
            let last = (points.len() - 1).max(1) as f32;
            for walk in pixel_walks(points).into_iter().flatten() {
                if let Some((ink, tint)) =
                    piece_weights(alpha, walk.length, walk.pixels, pair, walk.along / last, style)
                {
                    out.0.push(walk.ends);
                    out.1.push(ink);
                    out.2.push(tint);
                }
            }
        }
        out
    };
    const CURVES_PER_TASK: usize = 4096;
    let parts: Vec<_> =
        pairs.par_chunks(CURVES_PER_TASK).enumerate().map(|(k, c)| chunk(k * CURVES_PER_TASK, c)).collect();
    let (segments, ink, tint): (Vec<[f32; 4]>, Vec<u32>, Vec<u32>) = (
        parts.iter().flat_map(|p| p.0.iter().copied()).collect(),
        parts.iter().flat_map(|p| p.1.iter().copied()).collect(),
        parts.iter().flat_map(|p| p.2.iter().copied()).collect(),
    );
    drop(parts);
    let (w, h) = (scene.width, scene.height);
    let images = stages::line_density::run_two(backend.runner().as_mut(), &segments, [&ink, &tint], w, h)?;
    density_raster(scene, images, style);
    Ok(())
}

/// The two weights of a piece of a curve walked over `pixels` pixels for `length` pixels of the
/// curve, `share` along it, of `pair` whose stroke's opacity times width is `alpha`: its ink per
/// pixel in fixed point, and that ink times the piece's value; `None` below one unit of ink.
#[inline]
fn piece_weights<V: Fn(&Pair, f32) -> f32, M>(
    alpha: f64,
    length: f32,
    pixels: u32,
    pair: &Pair,
    share: f32,
    style: &CurveStyle<V, M>,
) -> Option<(u32, u32)> {
    let per_pixel = alpha * f64::from(length) / f64::from(pixels);
    // Blended over one another, strokes of opacity `a` leave `prod(1 - a)` of what is under
    // them: their weights `-ln(1 - a)` add up to its logarithm.
    let per_pixel = match style.mix {
        Mix::Additive => per_pixel,
        Mix::Alpha => -(1.0 - per_pixel.min(0.95)).ln(),
    };
    let weight = (per_pixel * INK_SCALE).round();
    if weight.is_nan() || weight < 1.0 {
        return None;
    }
    let value = (style.value)(pair, share).clamp(0.0, 1.0);
    Some((weight.min(f64::from(u32::MAX)) as u32, (weight * f64::from(value)).round().min(f64::from(u32::MAX)) as u32))
}

/// The density's picture from its two images (ink, ink times value) as [`curve_density`] says,
/// a raster layer over the whole scene.
fn density_raster<V: Sync, M: Fn(f32) -> [f32; 3] + Sync>(
    scene: &mut Scene,
    [ink, tint]: [stages::line_density::DensityImage; 2],
    style: &CurveStyle<V, M>,
) {
    use exaviz_render::{Raster, unorm8};
    use rayon::prelude::*;
    let bg = scene.background;
    let pixels = ink
        .sums
        .par_iter()
        .zip(&tint.sums)
        .map(|(&i, &t)| {
            if i == 0 {
                return [0; 4];
            }
            let amount = (i as f64 / INK_SCALE) as f32;
            let c = (style.map)((t as f64 / i as f64) as f32);
            match style.mix {
                Mix::Additive => {
                    let add = |k: usize| unorm8(bg[k] + c[k] * amount);
                    [add(0), add(1), add(2), 255]
                }
                Mix::Alpha => [unorm8(c[0]), unorm8(c[1]), unorm8(c[2]), unorm8(1.0 - (-amount).exp())],
            }
        })
        .collect();
    let (w, h) = (ink.width, ink.height);
    scene.raster(Raster::rgba([0.0, 0.0, w as f32, h as f32], w, h, pixels));
}

/// The pieces of every curve a [`CurveCache`] keeps, as [`curve_density`] walks them, kept with
/// the line-density stage's buckets ([`stages::line_density::KeptSegments`]): a window then only
/// weighs them, a piece of a curve it does not draw weighing nothing.
struct KeptDensity {
    /// How many of the cache's curves the pieces cover.
    curves: usize,
    /// Curve `c`'s pieces are `first[c]..first[c + 1]`.
    first: Vec<usize>,
    /// Per piece: its length, pixels walked and place along its curve.
    length: Vec<f32>,
    pixels: Vec<u32>,
    along: Vec<f32>,
    segments: stages::line_density::KeptSegments,
}

/// Pieces as [`stages::curve_density`] reads them: their segments, and per piece its curve,
/// length, pixels walked and place along the curve.
type PieceWords = (Vec<[f32; 4]>, Vec<[u32; 4]>);

/// The pieces of the kept curves up to `to` from the previous part's, and their owner on the
/// device.
struct DevicePieces {
    to: usize,
    words: std::sync::Arc<PieceWords>,
}

impl DevicePieces {
    /// The pieces of curves `from..to` of `points` (`samples` points each), as
    /// [`curve_density`] walks them.
    fn of(points: &[[f32; 2]], samples: usize, (from, to): (usize, usize)) -> Self {
        use rayon::prelude::*;
        let parts: Vec<PieceWords> = (from..to)
            .into_par_iter()
            .with_min_len(1024)
            .fold(
                || (Vec::new(), Vec::new()),
                |(mut segments, mut pieces), c| {
                    for w in pixel_walks(&points[c * samples..(c + 1) * samples]).into_iter().flatten() {
                        segments.push(w.ends);
                        pieces.push([c as u32, w.length.to_bits(), w.pixels, w.along.to_bits()]);
                    }
                    (segments, pieces)
                },
            )
            .collect();
        let segments = parts.iter().flat_map(|p| p.0.iter().copied()).collect();
        let pieces = parts.iter().flat_map(|p| p.1.iter().copied()).collect();
        Self { to, words: std::sync::Arc::new((segments, pieces)) }
    }
}

/// [`CurveCache::density`] on a GPU: the kept pieces weighed, walked and coloured there
/// ([`stages::curve_density`]), each kept curve sending its pair's opacity times width (a curve
/// of no pair in this window, zero) and, where they changed, every kept curve's values at its
/// two ends; the picture left on the device for the renderer. `false` where `style`'s value is not linear along a curve (the
/// host path then draws it).
fn device_density<V: Fn(&Pair, f32) -> f32 + Sync, M: Fn(f32) -> [f32; 3] + Sync>(
    scene: &mut Scene,
    backend: &Backend,
    kept: &mut KeptCurves,
    (at, pairs): (&[usize], &[Pair]),
    style: &CurveStyle<V, M>,
) -> Result<bool, ViewError> {
    use stages::curve_density::{self as cd, Kept, Look};
    let samples = kept.key.4 as usize;
    let curves = kept.points.len() / samples.max(1);
    let ends = |p: &Pair| ((style.value)(p, 0.0), (style.value)(p, 1.0));
    let linear = pairs.iter().take(64).all(|p| {
        let (v0, v1) = ends(p);
        ((style.value)(p, 0.5) - (v0 + v1) / 2.0).abs() < 1e-4
    });
    if !linear {
        return Ok(false);
    }
    // The pieces of the curves added since the last picture go up as a part of their own.
    let covered = kept.device.last().map_or(0, |p| p.to);
    if covered < curves {
        kept.device.push(DevicePieces::of(&kept.points, samples, (covered, curves)));
    }
    // Every kept curve's values, of its pair in this window or, drawn in none, of its ends.
    let mut values = vec![0u32; 2 * curves];
    for (&(s, r), &c) in &kept.index {
        if let Some(v) = values.get_mut(2 * c..2 * c + 2) {
            let (v0, v1) = ends(&(s, r, 0));
            v.copy_from_slice(&[v0.to_bits(), v1.to_bits()]);
        }
    }
    let mut alphas = vec![0f32; curves];
    for (pair, &c) in pairs.iter().zip(at) {
        if let (Some(a), Some(v)) = (alphas.get_mut(c), values.get_mut(2 * c..2 * c + 2)) {
            *a = (f64::from(curve_alpha(pair, pairs)) * f64::from(style.width)) as f32;
            let (v0, v1) = ends(pair);
            v.copy_from_slice(&[v0.to_bits(), v1.to_bits()]);
        }
    }
    let table = same_as_last(&mut kept.table, cd::table(256, &style.map));
    let values = same_as_last(&mut kept.values, std::sync::Arc::new(values));
    let owners: Vec<stages::Owner> = kept.device.iter().map(|p| p.words.clone() as stages::Owner).collect();
    let parts: Vec<Kept<'_>> = kept
        .device
        .iter()
        .zip(&owners)
        .map(|(p, owner)| Kept { segments: &p.words.0, pieces: &p.words.1, owner })
        .collect();
    let (width, height) = (scene.width, scene.height);
    let look = Look {
        width,
        height,
        additive: style.mix == Mix::Additive,
        last: (samples.max(2) - 1) as f32,
        background: scene.background,
    };
    let curves = cd::Curves { alphas: &alphas, values: &values };
    let picture = cd::run(backend.runner().as_mut(), &parts, curves, &table, &look)?;
    let data = exaviz_render::RasterData::Device { words: picture.rgba, stride: picture.stride };
    let rect = [0.0, 0.0, width as f32, height as f32];
    scene.raster(exaviz_render::Raster { rect, width, height, data, screen: false });
    Ok(true)
}

impl KeptDensity {
    /// The pieces of the first `curves` curves of `points` (`samples` points each), in an image
    /// `width` x `height`.
    fn of(points: &[[f32; 2]], samples: usize, curves: usize, plain_memory: bool, size: (u32, u32)) -> Self {
        use rayon::prelude::*;
        let parts: Vec<Vec<(u32, PixelWalk)>> = (0..curves)
            .into_par_iter()
            .with_min_len(1024)
            .fold(Vec::new, |mut out, c| {
                let walks = pixel_walks(&points[c * samples..(c + 1) * samples]);
                out.extend(walks.into_iter().flatten().map(|w| (c as u32, w)));
                out
            })
            .collect();
        let all = || parts.iter().flatten();
        let mut first = vec![0usize; curves + 1];
        all().for_each(|p| first[p.0 as usize + 1] += 1);
        for c in 0..curves {
            first[c + 1] += first[c];
        }
        Self {
            curves,
            first,
            length: all().map(|p| p.1.length).collect(),
            pixels: all().map(|p| p.1.pixels).collect(),
            along: all().map(|p| p.1.along).collect(),
            segments: stages::line_density::KeptSegments::new(
                plain_memory,
                all().map(|p| p.1.ends).collect(),
                size.0,
                size.1,
            ),
        }
    }
}

/// Most curves a [`CurveCache`] keeps (24 samples each: about 25 MB).
const MOST_KEPT: usize = 1 << 17;

/// The curves a pair view evaluated, by pair of nodes, kept for the next window: a curve
/// depends on its pair, the picture's size and the bundling strength, not on the window, so a
/// window's pairs need the bspline stage only for pairs not drawn before. Emptied when the
/// nodes, size, strength or backend change, or before the new pairs would take it past
/// [`MOST_KEPT`] curves; a window of more pairs than that is evaluated and not kept.
#[derive(Default)]
pub struct CurveCache(std::sync::Mutex<Option<KeptCurves>>);

/// The curves of a window's pairs, curve `e` for pair `e`: evaluated for them, or those a
/// [`CurveCache`] keeps, shared rather than copied.
pub struct PairCurves {
    samples: usize,
    points: std::sync::Arc<Vec<[f32; 2]>>,
    /// Pair `e`'s curve in `points` (`None`: curve `e`).
    at: Option<Vec<u32>>,
}

impl PairCurves {
    pub fn edge(&self, e: usize) -> &[[f32; 2]] {
        let c = self.at.as_ref().map_or(e, |at| at[e] as usize);
        &self.points[c * self.samples..(c + 1) * self.samples]
    }
}

impl From<Bundled> for PairCurves {
    fn from(b: Bundled) -> Self {
        Self { samples: b.samples as usize, points: std::sync::Arc::new(b.points), at: None }
    }
}

/// What a [`CurveCache`] holds.
struct KeptCurves {
    /// Nodes, picture width and height, bundling strength's bits, curve samples, backend.
    key: (usize, u32, u32, u32, u32, String),
    /// Where a pair's curve starts in `points`, in curves.
    index: rustc_hash::FxHashMap<(usize, usize), usize>,
    /// Shared with the pictures' curves ([`PairCurves`]): copied only when curves are added
    /// while a picture still holds them.
    points: std::sync::Arc<Vec<[f32; 2]>>,
    /// The pieces of the kept curves for a density, built when first drawn as one.
    density: Option<KeptDensity>,
    /// The last colour table and curves' values the device drew a density with (equal ones are
    /// not sent again).
    table: Option<std::sync::Arc<Vec<u32>>>,
    values: Option<std::sync::Arc<Vec<u32>>>,
    /// The kept curves' pieces as the device keeps them, a part for the curves each window
    /// added ([`stages::curve_density`]).
    device: Vec<DevicePieces>,
}

impl CurveCache {
    /// The curves of `pairs` among `nodes` nodes in a picture `size`, as the bspline stage
    /// evaluates `curve` over the control polygons `polygon(sender, receiver)`; those of pairs
    /// drawn before with the same nodes, size, curve and backend are taken from the cache.
    pub fn curves(
        &self,
        backend: &Backend,
        nodes: usize,
        size: (u32, u32),
        curve: stages::bspline::Curve,
        pairs: &[Pair],
        polygon: impl Fn(usize, usize) -> Vec<[f32; 2]>,
    ) -> Result<PairCurves, ViewError> {
        // The curves of `pairs` from the bspline stage.
        let evaluate = |pairs: &mut dyn Iterator<Item = &Pair>| {
            let mut polygons = stages::ControlPolygons::new();
            pairs.for_each(|p| polygons.push(polygon(p.0, p.1)));
            stages::bspline::run(backend.runner().as_mut(), &polygons, curve)
        };
        if pairs.len() > MOST_KEPT {
            // More than the cache keeps: evaluated, not kept.
            return Ok(evaluate(&mut pairs.iter())?.into());
        }
        let key = (nodes, size.0, size.1, curve.beta.to_bits(), curve.samples, backend.describe());
        let mut kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let missing = |k: &KeptCurves| pairs.iter().filter(|p| !k.index.contains_key(&(p.0, p.1))).count();
        if kept.as_ref().is_none_or(|k| k.key != key || k.index.len() + missing(k) > MOST_KEPT) {
            *kept = Some(KeptCurves {
                key,
                index: Default::default(),
                points: Default::default(),
                density: None,
                table: None,
                values: None,
                device: Vec::new(),
            });
        }
        let kept = kept.as_mut().expect("just set");
        let missing: Vec<&Pair> = pairs.iter().filter(|p| !kept.index.contains_key(&(p.0, p.1))).collect();
        if !missing.is_empty() {
            let fresh = evaluate(&mut missing.iter().copied())?;
            let points = std::sync::Arc::make_mut(&mut kept.points);
            for (k, p) in missing.iter().enumerate() {
                kept.index.insert((p.0, p.1), points.len() / curve.samples as usize);
                points.extend_from_slice(fresh.edge(k));
            }
        }
        let at = pairs.iter().map(|p| kept.index[&(p.0, p.1)] as u32).collect();
        Ok(PairCurves { samples: curve.samples as usize, points: kept.points.clone(), at: Some(at) })
    }

    /// [`curve_density`] of `pairs` from the pieces of the curves the cache keeps, cut and
    /// bucketed once for all of them: a new window weighs the pieces and walks them, walking
    /// none of a curve it does not draw. The same picture as [`curve_density`] of the pairs'
    /// curves. `false` (nothing drawn) where the cache does not hold every pair's curve for this
    /// picture's size and backend ([`CurveCache::curves`] keeps them).
    pub fn density<V: Fn(&Pair, f32) -> f32 + Sync, M: Fn(f32) -> [f32; 3] + Sync>(
        &self,
        scene: &mut Scene,
        backend: &Backend,
        pairs: &[Pair],
        style: &CurveStyle<V, M>,
    ) -> Result<bool, ViewError> {
        use rayon::prelude::*;
        let mut kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(kept) = kept.as_mut() else { return Ok(false) };
        let size = (scene.width, scene.height);
        if (kept.key.1, kept.key.2) != size || kept.key.5 != backend.describe() {
            return Ok(false);
        }
        let Some(at) = pairs.iter().map(|p| kept.index.get(&(p.0, p.1)).copied()).collect::<Option<Vec<usize>>>()
        else {
            return Ok(false);
        };
        let samples = kept.key.4 as usize;
        let curves = kept.points.len() / samples.max(1);
        let mut runner = backend.runner();
        if !runner.plain_memory() {
            drop(runner);
            return device_density(scene, backend, kept, (&at, pairs), style);
        }
        if kept.density.as_ref().is_none_or(|d| d.curves != curves) {
            kept.density = Some(KeptDensity::of(&kept.points, samples, curves, runner.plain_memory(), size));
        }
        let density = kept.density.as_ref().expect("just built");
        // Each kept curve's pair in this window, if any, and that pair's opacity times width.
        let mut drawn = vec![u32::MAX; curves];
        for (e, &c) in at.iter().enumerate() {
            drawn[c] = e as u32;
        }
        let last = (samples - 1).max(1) as f32;
        let pieces = density.length.len();
        let (mut ink, mut tint) = (vec![0u32; pieces], vec![0u32; pieces]);
        // Each curve's pieces, weighed by its pair's messages (nothing where it is not drawn).
        let mut curves_pieces = Vec::with_capacity(curves);
        let (mut ink_rest, mut tint_rest) = (ink.as_mut_slice(), tint.as_mut_slice());
        for (c, w) in density.first.windows(2).enumerate() {
            let (i, i_tail) = std::mem::take(&mut ink_rest).split_at_mut(w[1] - w[0]);
            let (t, t_tail) = std::mem::take(&mut tint_rest).split_at_mut(w[1] - w[0]);
            (ink_rest, tint_rest) = (i_tail, t_tail);
            if drawn[c] != u32::MAX {
                curves_pieces.push((drawn[c] as usize, w[0], i, t));
            }
        }
        curves_pieces.par_iter_mut().with_min_len(256).for_each(|(e, first, ink, tint)| {
            let (pair, first) = (&pairs[*e], *first);
            let alpha = f64::from(curve_alpha(pair, pairs)) * f64::from(style.width);
            for k in 0..ink.len() {
                let (length, pixels) = (density.length[first + k], density.pixels[first + k]);
                let share = density.along[first + k] / last;
                (ink[k], tint[k]) = piece_weights(alpha, length, pixels, pair, share, style).unwrap_or((0, 0));
            }
        });
        let images = stages::line_density::run_two_kept(runner.as_mut(), &density.segments, [&ink, &tint])?;
        density_raster(scene, images, style);
        Ok(true)
    }
}

/// `fresh`, or the `last` one where it is equal (found on the device without an upload); kept
/// as the last.
fn same_as_last(
    last: &mut Option<std::sync::Arc<Vec<u32>>>,
    fresh: std::sync::Arc<Vec<u32>>,
) -> std::sync::Arc<Vec<u32>> {
    match last {
        Some(l) if **l == *fresh => l.clone(),
        _ => {
            *last = Some(fresh.clone());
            fresh
        }
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
    pub curves: Option<PairCurves>,
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
    fn pick(&self, _: &exaviz_model::dataset::Dataset, at: [f32; 2]) -> Option<super::Pick> {
        let (s, r, count) = self.pairs[self.pair_near(at)?];
        let title = format!("{} → {}", self.nodes.name(s), self.nodes.name(r));
        let pick = super::Pick::new(title, vec![format!("{count} messages")]);
        if self.nodes.block > 1 {
            // A pair of blocks is no pair of ranks for the other views to select.
            return Some(pick);
        }
        let sel = exaviz_model::selection::Selection { pair: Some((s as u32, r as u32)), ..Default::default() };
        Some(pick.with_click(exaviz_model::selection::Parts::PAIR, sel))
    }

    /// The selected pair's curve (that of the blocks holding its ranks) drawn over the others
    /// in white.
    fn overlay(
        &self,
        _: &exaviz_model::dataset::Dataset,
        selection: &exaviz_model::selection::Selection,
        scene: &mut Scene,
    ) -> bool {
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
    #[arg(long, default_value_t = exaviz_render::bundling::DEFAULT_BETA, value_parser = super::options::parse_beta)]
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
        Self { width: 1024, height: 768, beta: exaviz_render::bundling::DEFAULT_BETA, mix: Mix::Additive }
    }
}

/// A pair view's picture and its curves for picking, of the messages sent in a window.
pub type SceneFn =
    fn(&Dataset, &Backend, &CurveOptions, Option<(f64, f64)>, &CurveCache) -> Result<(Scene, PairPick), ViewError>;

/// How a pair view places its curves: its name, and its picture.
pub trait Layout: Send + Sync + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    /// Most ranks drawn a node each; a trace with more is drawn in blocks of ranks.
    const MOST: usize;
    const SCENE: SceneFn;
}

/// The nodes a pair view called `who` draws, and their communicating pairs among the messages
/// sent in `window_s`. A trace of at most `most` ranks gets a node per rank, unless the window
/// holds more pairs than a [`CurveCache`] keeps (131,072); a larger one, or that window, blocks
/// of ranks, as many as a message cube has ([`exaviz_model::pyramid::message_block`]). A trace kept
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
    // A trace in memory with an index sums its window by pair; others count their rows.
    let sums = super::trace::pair_sums(dataset, window_s);
    let messages = if sums.is_none() { Some(super::trace::messages_in(&dataset.trace, window_s)) } else { None };
    let count_pairs = |block: u32| -> Result<(Nodes, Vec<Pair>), ViewError> {
        let count = ranks.div_ceil(block as usize);
        let nodes = Nodes { count, block: block as usize, ranks, from_pyramid: false };
        if let Some(sums) = &sums {
            if block == 1 {
                // Pairs between ranks come by (sender, receiver), as a grid's cells do.
                let mut pairs: Vec<Pair> = sums
                    .iter()
                    .filter(|p| {
                        p.source != p.destination && (p.source as usize) < count && (p.destination as usize) < count
                    })
                    .filter_map(|p| {
                        let c = p.messages as u32;
                        (c > 0).then_some((p.source as usize, p.destination as usize, c))
                    })
                    .collect();
                pairs.sort_by_key(|p| p.2);
                return Ok((nodes, pairs));
            }
            let mut grid = vec![0u64; count * count];
            for p in sums {
                let (s, d) = ((p.source / block) as usize, (p.destination / block) as usize);
                if s < count && d < count {
                    grid[s * count + d] += p.messages;
                }
            }
            return Ok((nodes, pairs_of(count, |k| u64::from(grid[k] as u32))));
        }
        let messages = messages.as_deref().expect("counted from the rows");
        if block == 1 {
            return Ok((nodes, communicating_pairs(messages, backend, ranks)?));
        }
        let of = |ids: &[u32]| ids.iter().map(|&r| r / block).collect::<Vec<u32>>();
        let blocked =
            Messages { source: of(&messages.source), destination: of(&messages.destination), ..Messages::default() };
        Ok((nodes, communicating_pairs(&blocked, backend, count)?))
    };
    // Blocks of ranks past `most` ranks, or where a window has more pairs of ranks than curves
    // are kept (at that many each curve is a faint trace among hundreds of thousands): the
    // message cube's blocks.
    let blocks = exaviz_model::pyramid::message_block(ranks as u32);
    if ranks > most {
        return count_pairs(blocks);
    }
    let (nodes, pairs) = count_pairs(1)?;
    if pairs.len() > MOST_KEPT && blocks > 1 {
        return count_pairs(blocks);
    }
    Ok((nodes, pairs))
}

/// A view with one curve per communicating pair, laid out by `L`, and the curves it drew.
pub struct PairView<L>(pub CurveOptions, pub CurveCache, std::marker::PhantomData<fn(L)>);

impl<L> PairView<L> {
    pub fn of(opts: CurveOptions) -> Self {
        Self(opts, CurveCache::default(), std::marker::PhantomData)
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
    fn reads_index(&self, index: &exaviz_model::dataset::OutOfCore) -> bool {
        let shape = &index.pyramid.shape;
        shape.message_block == 1 || shape.ranks as usize > L::MOST
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = CurveOptions { width: f.width, height: f.height, ..self.0 };
        let (scene, picker) = (L::SCENE)(d, b, &opts, sel.window_s, &self.1)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_render::{View, render_scene};

    /// Curves of 24 samples bowing between random ends of a 320 x 240 picture, some leaving
    /// it, and their pairs with random message counts (fewest first).
    fn random_curves(n: usize) -> (Bundled, Vec<Pair>) {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut points = Vec::new();
        let mut pairs = Vec::new();
        for e in 0..n {
            let (a, b) = ([next() * 340.0 - 10.0, next() * 240.0], [next() * 320.0, next() * 260.0 - 10.0]);
            let bow = next() * 80.0 - 40.0;
            let normal = [-(b[1] - a[1]), b[0] - a[0]];
            let scale = bow / normal[0].hypot(normal[1]).max(1.0);
            for k in 0..24 {
                let t = k as f32 / 23.0;
                let lift = (std::f32::consts::PI * t).sin() * scale;
                points.push([a[0] + (b[0] - a[0]) * t + normal[0] * lift, a[1] + (b[1] - a[1]) * t + normal[1] * lift]);
            }
            pairs.push((e, e + 1, 1 + (next() * 99.0) as u32));
        }
        pairs.sort_by_key(|p| p.2);
        (Bundled { samples: 24, points }, pairs)
    }

    /// A window's curves from the cache equal those the bspline stage evaluates for its pairs
    /// alone, whichever pairs an earlier window left there; another picture size evaluates them
    /// again.
    #[test]
    fn cached_curves_equal_fresh_ones() {
        let curve = stages::bspline::Curve { samples: 24, beta: 0.85, degree: 3 };
        let polygon = |size: f32| {
            move |a: usize, b: usize| {
                let (a, b) = (a as f32, b as f32);
                vec![[a * size / 16.0, 0.0], [size / 2.0, (a + b) * 3.0], [b * size / 16.0, size]]
            }
        };
        let fresh = |pairs: &[Pair], size: f32| {
            let mut polygons = stages::ControlPolygons::new();
            pairs.iter().for_each(|p| polygons.push(polygon(size)(p.0, p.1)));
            stages::bspline::run(Backend::Cpu.runner().as_mut(), &polygons, curve).unwrap().points
        };
        let cache = CurveCache::default();
        let first: Vec<Pair> = (0..16).flat_map(|a| (0..16).map(move |b| (a, b, 1))).filter(|p| p.0 != p.1).collect();
        let second: Vec<Pair> = first.iter().rev().step_by(3).map(|p| (p.0, p.1, 7)).chain([(3, 3, 1)]).collect();
        for (pairs, size) in [(&first, 300), (&second, 300), (&second, 200), (&first, 200)] {
            let got = cache.curves(&Backend::Cpu, 16, (size, size), curve, pairs, polygon(size as f32)).unwrap();
            assert_eq!(got.samples, 24);
            let got: Vec<[f32; 2]> = (0..pairs.len()).flat_map(|e| got.edge(e).to_vec()).collect();
            assert!(got == fresh(pairs, size as f32), "{} pairs at {size}", pairs.len());
        }
    }

    /// The density drawn from the pieces the cache keeps is the very picture drawn from fresh
    /// curves, window after window (a window of some of the kept curves, with other message
    /// counts, and one adding curves), in both mixes and in a value per pair; a picture of
    /// another size draws nothing from it.
    #[test]
    fn kept_density_equals_a_fresh_one() {
        let curve = stages::bspline::Curve { samples: 24, beta: 0.85, degree: 3 };
        let polygon = |a: usize, b: usize| {
            let (a, b) = (a as f32, b as f32);
            vec![[a * 9.0 + 3.0, 5.0], [150.0 + b, (a + b) * 2.0], [b * 9.0 + 1.0, 230.0]]
        };
        let all: Vec<Pair> =
            (0..34).flat_map(|a| (0..34).map(move |b| (a, b, 1 + ((a * 7 + b * 3) % 50) as u32))).collect();
        let windows: Vec<Vec<Pair>> = vec![
            all.iter().filter(|p| p.0 < 30).copied().collect(),
            all.iter().filter(|p| p.0 < 30 && (p.0 + p.1) % 3 != 0).map(|p| (p.0, p.1, p.2 * 3 % 41 + 1)).collect(),
            all.clone(),
        ];
        for mix in [Mix::Additive, Mix::Alpha] {
            let by_sender = |p: &Pair, _: f32| p.0 as f32 / 34.0;
            let style = CurveStyle { mix, width: 1.2, value: by_sender, map: crate::plot::direction_colour };
            let cache = CurveCache::default();
            for pairs in &windows {
                let mut pairs = pairs.clone();
                pairs.sort_by_key(|p| p.2);
                let curves = cache.curves(&Backend::Cpu, 34, (320, 240), curve, &pairs, polygon).unwrap();
                let (mut kept, mut fresh) =
                    (Scene::new(320, 240, super::super::BACKGROUND), Scene::new(320, 240, super::super::BACKGROUND));
                assert!(cache.density(&mut kept, &Backend::Cpu, &pairs, &style).unwrap());
                curve_density(&mut fresh, &Backend::Cpu, &curves, &pairs, &style).unwrap();
                let (a, b) = (
                    render_scene(&Backend::Cpu, &kept, View::default()).unwrap(),
                    render_scene(&Backend::Cpu, &fresh, View::default()).unwrap(),
                );
                assert!(a.pixels == b.pixels, "{mix:?}, {} pairs", pairs.len());
                assert!(a.pixels.chunks_exact(4).filter(|p| p[..3] != a.pixels[..3]).count() > 5000, "inked");
            }
            let mut other = Scene::new(300, 240, super::super::BACKGROUND);
            assert!(!cache.density(&mut other, &Backend::Cpu, &windows[0], &style).unwrap(), "another size");
        }
    }

    #[test]
    fn many_curves_are_a_density_in_pictures_up_to_4096_squared() {
        assert!(!as_density(DENSE_PAIRS, 1024, 768));
        assert!(as_density(DENSE_PAIRS + 1, 1024, 768));
        assert!(as_density(65_280, 4096, 4096));
        assert!(!as_density(65_280, 61_440, 8_640), "a powerwall's canvas draws strokes");
    }

    #[test]
    fn pixel_walks_meet_without_walking_a_pixel_twice_and_keep_the_length() {
        let (curves, _) = random_curves(50);
        let pixel = |x: f32, y: f32| [x.floor() as i32, y.floor() as i32];
        for e in 0..curves.len() {
            let points = curves.edge(e);
            let walks: Vec<PixelWalk> = pixel_walks(points).into_iter().flatten().collect();
            let length: f32 = points.windows(2).map(|s| (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1])).sum();
            let kept: f32 = walks.iter().map(|w| w.length).sum();
            assert!((length - kept).abs() < 1e-3 * length.max(1.0), "curve {e}: {kept} of {length}");
            let first = walks.first().unwrap().ends;
            assert_eq!(pixel(first[0], first[1]), pixel(points[0][0], points[0][1]));
            let end = walks.last().unwrap().ends;
            assert_eq!(pixel(end[2], end[3]), pixel(points[23][0], points[23][1]));
            for w in &walks {
                let ([x0, y0], [x1, y1]) = (pixel(w.ends[0], w.ends[1]), pixel(w.ends[2], w.ends[3]));
                assert_eq!(w.pixels, (x1 - x0).abs().max((y1 - y0).abs()) as u32 + 1, "curve {e}: {w:?}");
            }
            for pair in walks.windows(2) {
                let (a, b) = (pixel(pair[0].ends[2], pair[0].ends[3]), pixel(pair[1].ends[0], pair[1].ends[1]));
                assert_ne!(a, b, "curve {e}: a pixel walked twice");
                assert!((a[0] - b[0]).abs() <= 1 && (a[1] - b[1]).abs() <= 1, "curve {e}: a gap from {a:?} to {b:?}");
            }
        }
    }

    /// The density lays the strokes' ink, where they lay it, in their colours: the pictures'
    /// light above the background agrees within 15% a channel, and nearly every pixel the
    /// density inks is within a pixel of one the strokes ink.
    #[test]
    fn curves_as_a_density_lay_the_strokes_ink() {
        let (curves, pairs) = random_curves(400);
        let curves = PairCurves::from(curves);
        for mix in [Mix::Additive, Mix::Alpha] {
            let style =
                CurveStyle { mix, width: 1.2, value: |_: &Pair, share: f32| share, map: crate::plot::direction_colour };
            let (mut strokes, mut density) =
                (Scene::new(320, 240, super::super::BACKGROUND), Scene::new(320, 240, super::super::BACKGROUND));
            curve_strokes(&mut strokes, &curves, &pairs, &style);
            curve_density(&mut density, &Backend::Cpu, &curves, &pairs, &style).unwrap();
            let (a, b) = (
                render_scene(&Backend::Cpu, &strokes, View::default()).unwrap(),
                render_scene(&Backend::Cpu, &density, View::default()).unwrap(),
            );
            let bg = strokes.background_rgba8();
            let light = |img: &exaviz_render::Image, k: usize| -> f64 {
                img.pixels.chunks_exact(4).map(|p| f64::from(p[k]) - f64::from(bg[k])).sum()
            };
            for k in 0..3 {
                let (s, d) = (light(&a, k), light(&b, k));
                assert!(s > 1000.0 && (d / s - 1.0).abs() < 0.15, "{mix:?}, channel {k}: density {d}, strokes {s}");
            }
            let inked = |img: &exaviz_render::Image, x: i32, y: i32| {
                let i = ((y.clamp(0, 239) * 320 + x.clamp(0, 319)) * 4) as usize;
                (0..3).any(|k| img.pixels[i + k].abs_diff(bg[k]) > 2)
            };
            let (mut dense, mut astray) = (0, 0);
            for y in 0..240 {
                for x in 0..320 {
                    if inked(&b, x, y) {
                        dense += 1;
                        let near = (-1..=1).any(|dy| (-1..=1).any(|dx| inked(&a, x + dx, y + dy)));
                        astray += usize::from(!near);
                    }
                }
            }
            assert!(
                dense > 5000 && astray * 100 < dense,
                "{mix:?}: {astray} of {dense} inked pixels away from the strokes"
            );
        }
    }
}
