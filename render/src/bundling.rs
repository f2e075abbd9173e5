//! Edge bundlers behind one interface, and the quality measures used to compare them.
//!
//! Every bundler takes edges in the unit square (see [`UnitFrame`](exaviz_compute::kde_bundle::UnitFrame))
//! and returns one polyline per edge, in input order, endpoints exact:
//! - `kde`: image-space density bundling (stage `kde_bundle`);
//! - `hierarchical`: Holten's B-splines through a quadtree over the endpoints (stage `bspline`);
//! - `straight`: the unbundled baseline (the same B-spline stage on two-point polygons).

use exaviz_compute as stages;
use exaviz_compute::bspline::Curve;
use exaviz_compute::{BundleInput, BundleParams, Bundled, ControlPolygons, DensityInput, Runner, StageError};
use exaviz_model::curves::Curves;

use crate::layout::hierarchy;

/// Holten's default bundling strength.
pub const DEFAULT_BETA: f32 = 0.85;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bundler {
    Straight { samples: u32 },
    Kde(BundleParams),
    Hierarchical { samples: u32, beta: f32, depth: u32 },
}

impl Bundler {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Straight { .. } => "straight",
            Self::Kde(_) => "kde",
            Self::Hierarchical { .. } => "hierarchical",
        }
    }

    /// Bundles `edges` (unit square) with optional integer weights. Weights scale an edge's
    /// density in `kde`; the other bundlers ignore them.
    pub fn run(
        &self,
        runner: &mut dyn Runner,
        edges: &[[f32; 4]],
        weights: Option<&[u32]>,
    ) -> Result<Bundled, StageError> {
        match *self {
            Self::Kde(params) => stages::kde_bundle::run(runner, &BundleInput { edges, weights }, &params),
            Self::Straight { samples } => {
                let mut polygons = ControlPolygons::new();
                for e in edges {
                    polygons.push([[e[0], e[1]], [e[2], e[3]]]);
                }
                stages::bspline::run(runner, &polygons, Curve { samples, beta: 1.0, degree: 3 })
            }
            Self::Hierarchical { samples, beta, depth } => {
                let polygons = hierarchy::quadtree_polygons(edges, depth);
                stages::bspline::run(runner, &polygons, Curve { samples, beta, degree: 3 })
            }
        }
    }
}

/// Polylines, one per edge in input order, from any tool: a bundler's output ([`Bundled`], a
/// fixed number of points per edge) or curves read from a file (any number, at least two).
pub trait CurveSet {
    fn count(&self) -> usize;
    fn edge(&self, e: usize) -> &[[f32; 2]];
}

impl CurveSet for Bundled {
    fn count(&self) -> usize {
        self.len()
    }

    fn edge(&self, e: usize) -> &[[f32; 2]] {
        Bundled::edge(self, e)
    }
}

/// The curves of `b` as polylines.
pub fn curves_of(b: &dyn CurveSet) -> Curves {
    let mut c = Curves { points: Vec::new(), starts: vec![0] };
    for e in 0..b.count() {
        c.points.extend_from_slice(b.edge(e));
        c.starts.push(c.points.len() as u32);
    }
    c
}

impl CurveSet for Curves {
    fn count(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    fn edge(&self, e: usize) -> &[[f32; 2]] {
        &self.points[self.starts[e] as usize..self.starts[e + 1] as usize]
    }
}

/// How a bundling compares with the straight edges it came from (measures defined in
/// docs/bundling.md, "Comparing bundlings").
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BundleQuality {
    /// Pixels covered by the bundled curves over pixels covered by the straight edges, both drawn
    /// one pixel wide at `resolution`² over the unit square (below 1: bundling saved ink).
    pub ink_ratio: f64,
    pub resolution: u32,
    /// Curve length over straight length, mean and max over edges longer than 1e-6.
    pub distortion_mean: f64,
    pub distortion_max: f64,
    /// Largest distance between a curve's ends and its edge's endpoints (unit square; 0 when
    /// endpoints are kept exactly).
    pub endpoint_displacement_max: f64,
    /// Mean distance of inner curve points from the straight edge's point at the same share of
    /// the length (unit square): how far bundling moved the edges.
    pub mean_displacement: f64,
    /// The share of all ink (pixel crossings by curve segments) in the densest 1% of inked
    /// pixels: how much of the drawing the strongest bundles hold (what the ink ratio misses:
    /// the same ink spread evenly or gathered in trunks).
    pub ink_top1_share: f64,
    /// Crossings per inked pixel: how many curves a pixel is shared by on average (overdraw).
    pub overdraw: f64,
}

fn length(pts: &[[f32; 2]]) -> f64 {
    pts.windows(2).map(|w| f64::from(w[0][0] - w[1][0]).hypot(f64::from(w[0][1] - w[1][1]))).sum()
}

/// Per-pixel crossings of `segments` (unit square, y up), drawn by the line-density stage.
fn crossings(
    runner: &mut dyn Runner,
    segments: impl Iterator<Item = [f32; 4]>,
    resolution: u32,
) -> Result<Vec<u32>, StageError> {
    let r = resolution as f32;
    let px = |v: f32| (v * r).clamp(0.0, r - 0.5);
    let segments: Vec<[f32; 4]> = segments.map(|s| [px(s[0]), px(1.0 - s[1]), px(s[2]), px(1.0 - s[3])]).collect();
    let image = stages::line_density::run(
        runner,
        &DensityInput { segments: &segments, weights: None, width: resolution, height: resolution },
    )?;
    Ok(image.counts)
}

/// The segments of `curves`.
fn segments_of(curves: &dyn CurveSet) -> impl Iterator<Item = [f32; 4]> + '_ {
    (0..curves.count()).flat_map(|e| curves.edge(e).windows(2).map(|w| [w[0][0], w[0][1], w[1][0], w[1][1]]))
}

/// Measures `curves` against the straight `edges` (unit square).
pub fn quality(
    runner: &mut dyn Runner,
    edges: &[[f32; 4]],
    curves: &dyn CurveSet,
    resolution: u32,
) -> Result<BundleQuality, StageError> {
    if curves.count() != edges.len() {
        return Err(StageError::Input(format!("{} curves for {} edges", curves.count(), edges.len())));
    }
    if let Some(e) = (0..curves.count()).find(|&e| curves.edge(e).len() < 2) {
        return Err(StageError::Input(format!("curve {e} has fewer than two points")));
    }
    let counts = crossings(runner, segments_of(curves), resolution)?;
    let mut inked: Vec<u32> = counts.into_iter().filter(|&c| c > 0).collect();
    let bundled_ink = inked.len() as u64;
    let straight_ink = crossings(runner, edges.iter().copied(), resolution)?.iter().filter(|&&c| c > 0).count() as u64;
    inked.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = inked.iter().map(|&c| u64::from(c)).sum();
    let top: u64 = inked.iter().take(inked.len().div_ceil(100)).map(|&c| u64::from(c)).sum();
    let (mut sum, mut count, mut max, mut ends, mut disp, mut disp_n) = (0.0, 0u64, 0f64, 0f64, 0.0, 0u64);
    for (e, edge) in edges.iter().enumerate() {
        let pts = curves.edge(e);
        let straight_len = f64::from(edge[2] - edge[0]).hypot(f64::from(edge[3] - edge[1]));
        let curve_len = length(pts);
        if straight_len > 1e-6 {
            let d = curve_len / straight_len;
            sum += d;
            count += 1;
            max = max.max(d);
        }
        let (first, last) = (pts[0], pts[pts.len() - 1]);
        ends = ends
            .max(f64::from(first[0] - edge[0]).hypot(f64::from(first[1] - edge[1])))
            .max(f64::from(last[0] - edge[2]).hypot(f64::from(last[1] - edge[3])));
        // Inner points against the straight edge at the same share of the curve's length.
        let mut along = 0.0;
        for k in 1..pts.len() - 1 {
            along += f64::from(pts[k][0] - pts[k - 1][0]).hypot(f64::from(pts[k][1] - pts[k - 1][1]));
            let t = if curve_len > 0.0 { (along / curve_len) as f32 } else { k as f32 / (pts.len() - 1) as f32 };
            let q = [edge[0] + (edge[2] - edge[0]) * t, edge[1] + (edge[3] - edge[1]) * t];
            disp += f64::from(pts[k][0] - q[0]).hypot(f64::from(pts[k][1] - q[1]));
            disp_n += 1;
        }
    }
    Ok(BundleQuality {
        ink_ratio: if straight_ink == 0 { 1.0 } else { bundled_ink as f64 / straight_ink as f64 },
        resolution,
        distortion_mean: if count == 0 { 1.0 } else { sum / count as f64 },
        distortion_max: if count == 0 { 1.0 } else { max },
        endpoint_displacement_max: ends,
        mean_displacement: if disp_n == 0 { 0.0 } else { disp / disp_n as f64 },
        ink_top1_share: if total == 0 { 0.0 } else { top as f64 / total as f64 },
        overdraw: if bundled_ink == 0 { 0.0 } else { total as f64 / bundled_ink as f64 },
    })
}

/// The curves as a `size`² picture (unit square, y up): density shaded by histogram
/// equalisation, each pixel in the direction colour of the mean share of the way its crossings
/// are along their edges (source to target), on a transparent background. The same shading for
/// every bundler, so pictures compare.
pub fn direction_density(
    runner: &mut dyn Runner,
    curves: &dyn CurveSet,
    size: u32,
) -> Result<Vec<[u8; 4]>, StageError> {
    let r = size as f32;
    let px = |v: f32| (v * r).clamp(0.0, r - 0.5);
    let mut segments = Vec::new();
    let mut shares = Vec::new();
    for e in 0..curves.count() {
        let pts = curves.edge(e);
        let n = (pts.len() - 1).max(1) as f32;
        for (k, w) in pts.windows(2).enumerate() {
            segments.push([px(w[0][0]), px(1.0 - w[0][1]), px(w[1][0]), px(1.0 - w[1][1])]);
            shares.push((((k as f32 + 0.5) / n) * 1000.0).round() as u32);
        }
    }
    let image = stages::line_density::run(
        runner,
        &DensityInput { segments: &segments, weights: Some(&shares), width: size, height: size },
    )?;
    let counts: Vec<u64> = image.counts.iter().map(|&c| u64::from(c)).collect();
    let tone = crate::ToneMap::Equalize.apply(&counts);
    Ok(tone
        .iter()
        .zip(image.counts.iter().zip(&image.sums))
        .map(|(t, (&c, &s))| match t {
            Some(t) if c > 0 => {
                let share = (s as f64 / (f64::from(c) * 1000.0)) as f32;
                let col = crate::colormap::direction_colour(share);
                let b = 0.3 + 0.7 * t;
                let u = |v: f32| (v * b * 255.0).round().clamp(0.0, 255.0) as u8;
                [u(col[0]), u(col[1]), u(col[2]), 255]
            }
            _ => [0, 0, 0, 0],
        })
        .collect())
}
