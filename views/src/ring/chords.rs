//! The ring's chords: link traffic, one chord per linked node pair, their curves (plain,
//! bundled) and, for dense rings, their density image.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_compute::bspline::Curve;
use exaviz_compute::kde_bundle::UnitFrame;
use exaviz_compute::line_density::DensityInput;
use exaviz_compute::{BundleInput, BundleParams};
use exaviz_render::layout::blocks::Blocks;
use exaviz_render::{ColorMap, Scene};

use super::{ChannelColour, Circle, Prepared, RingBundle, RingOptions};
use crate::ViewError;
use crate::torus::clip_segment;
use crate::torus::traffic::Chords;

/// The chords' polylines in screen pixels: flattened curves, or bundled.
pub(super) fn polylines(
    circle: &Circle,
    pos: &[u32],
    chords: &Chords,
    bundle: RingBundle,
    blocks: Option<&Blocks>,
    backend: &Backend,
) -> Result<Vec<Vec<[f32; 2]>>, ViewError> {
    let ends = chords.list.iter().map(|&((a, b), _)| (pos[a as usize], pos[b as usize]));
    let place = |p: f32, r: f32| circle.at_f(p, circle.radius * r);
    let (polygons, beta) = match bundle {
        RingBundle::None => return Ok(plain_curves(circle, ends, chords.list.len())),
        RingBundle::Kde(params) => return kde_curves(circle, ends, chords, &params, backend),
        RingBundle::Blocks { beta } | RingBundle::Hierarchical { beta } => {
            let blocks = blocks.ok_or_else(|| {
                ViewError::Unsupported(format!("block bundling needs Hilbert blocks; {} nodes have none", circle.n))
            })?;
            if matches!(bundle, RingBundle::Blocks { .. }) {
                (blocks.group_polygons(&ends.collect::<Vec<_>>(), &place), beta)
            } else {
                let mut polygons = stages::ControlPolygons::new();
                for (a, b) in ends {
                    polygons.push(blocks.tree_polygon(a, b, &place));
                }
                (polygons, beta)
            }
        }
    };
    let curve =
        Curve { samples: if chords.list.len() > 200_000 { 12 } else { 24 }, beta: beta.clamp(0.0, 1.0), degree: 3 };
    let bundled = stages::bspline::run(backend.runner().as_mut(), &polygons, curve)?;
    Ok((0..bundled.len()).map(|e| bundled.edge(e).to_vec()).collect())
}

/// Quadratic curves pulled towards the centre.
pub(super) fn plain_curves(
    circle: &Circle,
    ends: impl Iterator<Item = (u32, u32)>,
    count: usize,
) -> Vec<Vec<[f32; 2]>> {
    let detail = if count > 200_000 { 4 } else { 10 };
    ends.map(|(a, b)| flatten(circle.curve(a, b), detail)).collect()
}

/// A quadratic curve as `detail` straight pieces.
pub(crate) fn flatten((p0, p1, p2): ([f32; 2], [f32; 2], [f32; 2]), detail: u32) -> Vec<[f32; 2]> {
    (0..=detail)
        .map(|k| {
            let u = k as f32 / detail as f32;
            let v = 1.0 - u;
            [v * v * p0[0] + 2.0 * v * u * p1[0] + u * u * p2[0], v * v * p0[1] + 2.0 * v * u * p1[1] + u * u * p2[1]]
        })
        .collect()
}

/// Chords bundled by the KDE stage; heavier links pull harder (weight 1 + 999 * traffic / max).
pub(super) fn kde_curves(
    circle: &Circle,
    ends: impl Iterator<Item = (u32, u32)>,
    chords: &Chords,
    params: &BundleParams,
    backend: &Backend,
) -> Result<Vec<Vec<[f32; 2]>>, ViewError> {
    let ends: Vec<[f32; 4]> = ends
        .map(|(a, b)| {
            let (p0, p2) = (circle.at(a, circle.radius), circle.at(b, circle.radius));
            [p0[0], p0[1], p2[0], p2[1]]
        })
        .collect();
    let frame = UnitFrame::fit(&ends);
    let unit: Vec<[f32; 4]> = ends.iter().map(|&e| frame.edge_to_unit(e)).collect();
    let weights: Vec<u32> =
        chords.list.iter().map(|&(_, t)| 1 + (999.0 * t as f64 / chords.max.max(1) as f64).round() as u32).collect();
    let bundled = stages::kde_bundle::run(
        backend.runner().as_mut(),
        &BundleInput { edges: &unit, weights: Some(&weights) },
        params,
    )?;
    Ok((0..unit.len()).map(|e| bundled.edge(e).iter().map(|&p| frame.from_unit(p)).collect()).collect())
}

/// The blocks of `opts` over `n` nodes.
pub(super) fn resolve_blocks(opts: &RingOptions, n: usize) -> Result<Option<Blocks>, ViewError> {
    let n = u32::try_from(n).map_err(|_| ViewError::Unsupported(format!("{n} nodes are too many for a ring")))?;
    match opts.blocks {
        None => Ok(Blocks::auto(n)),
        Some(m) => Blocks::new(n, m).map(Some).map_err(|e| ViewError::Unsupported(format!("--blocks {m}: {e}"))),
    }
}

/// Above this many chords (coloured by traffic), the chords' curves are aggregated by the
/// line-density stage and drawn as a density image instead of one by one: the 16^5 torus has
/// 5.2 million chords, far more than the disc has pixels.
pub const DENSE_CHORDS: usize = 100_000;

/// Whether the chords are drawn as a density image.
pub(super) fn is_dense(chords: &Chords, opts: &RingOptions) -> bool {
    chords.list.len() > DENSE_CHORDS && opts.colour == ChannelColour::Traffic
}

/// The chords' curves through the line-density stage over the circle's bounding square (within
/// `view`, the visible plot, when zoomed), each segment weighted by its chord's traffic: each
/// pixel coloured by the mean traffic of the chords through it (or `grey` for all), and more
/// opaque where more chords cross.
pub(super) fn chord_density(
    scene: &mut Scene,
    ring: &Prepared,
    view: Option<[f32; 4]>,
    map: ColorMap,
    grey: Option<[f32; 4]>,
    backend: &Backend,
) -> Result<(), ViewError> {
    let (chords, circle) = (&ring.chords, &ring.circle);
    let mut origin = [(circle.cx - circle.radius).floor() - 2.0, (circle.cy - circle.radius).floor() - 2.0];
    let side = (2.0 * circle.radius).ceil() as u32 + 5;
    let (mut width, mut height) = (side, side);
    if let Some([x0, y0, x1, y1]) = view {
        let end = [origin[0] + width as f32, origin[1] + height as f32];
        origin = [origin[0].max(x0.floor()), origin[1].max(y0.floor())];
        width = (end[0].min(x1.ceil()) - origin[0]).max(1.0) as u32;
        height = (end[1].min(y1.ceil()) - origin[1]).max(1.0) as u32;
    }
    let clip = [-2.0, -2.0, width as f32 + 2.0, height as f32 + 2.0];
    let count: usize = ring.lines.iter().map(|l| l.len().saturating_sub(1)).sum();
    let (mut segments, mut weights) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for (&(_, t), line) in chords.list.iter().zip(&ring.lines) {
        for seg in line.windows(2) {
            let (a, b) =
                ([seg[0][0] - origin[0], seg[0][1] - origin[1]], [seg[1][0] - origin[0], seg[1][1] - origin[1]]);
            // Zoomed, curves reach far outside the image: only their visible parts are walked.
            let Some((a, b)) = (if view.is_some() { clip_segment(a, b, clip) } else { Some((a, b)) }) else {
                continue;
            };
            segments.push([a[0], a[1], b[0], b[1]]);
            weights.push(u32::try_from(t).unwrap_or(u32::MAX));
        }
    }
    let input = DensityInput { segments: &segments, weights: Some(&weights), width, height };
    let image = stages::line_density::run(backend.runner().as_mut(), &input)?;
    let colour = |mean: f64| match grey {
        Some(g) => g,
        None if chords.max == 0 => [0.55, 0.6, 0.7, 1.0],
        None => map.sample(chords.scale.normalise(mean)),
    };
    crate::density::mean_value_pixels(scene, &image, origin, colour);
    Ok(())
}
