//! Edge bundlers behind one interface, and the quality measures used to compare them.
//!
//! Every bundler takes edges in the unit square (see [`UnitFrame`](crate::stages::kde_bundle::UnitFrame))
//! and returns one polyline per edge, in input order, endpoints exact:
//! - `kde`: image-space density bundling (stage `kde_bundle`);
//! - `hierarchical`: Holten's B-splines through a quadtree over the endpoints (stage `bspline`);
//! - `straight`: the unbundled baseline (the same B-spline stage on two-point polygons).

use crate::layout::hierarchy;
use crate::stages::bspline::Curve;
use crate::stages::{self, BundleInput, BundleParams, Bundled, ControlPolygons, DensityInput, Runner, StageError};

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

/// How a bundling compares with the straight edges it came from.
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
    /// Mean distance of inner curve points from the straight line at the same parameter
    /// (unit square): how far bundling moved the edges.
    pub mean_displacement: f64,
}

fn length(pts: &[[f32; 2]]) -> f64 {
    pts.windows(2).map(|w| f64::from(w[0][0] - w[1][0]).hypot(f64::from(w[0][1] - w[1][1]))).sum()
}

/// Pixels with any ink among `segments` (unit square, y up), drawn by the line-density stage.
fn inked_pixels(
    runner: &mut dyn Runner,
    segments: impl Iterator<Item = [f32; 4]>,
    resolution: u32,
) -> Result<u64, StageError> {
    let r = resolution as f32;
    let px = |v: f32| (v * r).clamp(0.0, r - 0.5);
    let segments: Vec<[f32; 4]> = segments.map(|s| [px(s[0]), px(1.0 - s[1]), px(s[2]), px(1.0 - s[3])]).collect();
    let image = stages::line_density::run(
        runner,
        &DensityInput { segments: &segments, weights: None, width: resolution, height: resolution },
    )?;
    Ok(image.counts.iter().filter(|&&c| c > 0).count() as u64)
}

/// Measures `bundled` against the straight `edges` (unit square).
pub fn quality(
    runner: &mut dyn Runner,
    edges: &[[f32; 4]],
    bundled: &Bundled,
    resolution: u32,
) -> Result<BundleQuality, StageError> {
    if bundled.len() != edges.len() {
        return Err(StageError::Input(format!("{} curves for {} edges", bundled.len(), edges.len())));
    }
    let curve_segments =
        (0..edges.len()).flat_map(|e| bundled.edge(e).windows(2).map(|w| [w[0][0], w[0][1], w[1][0], w[1][1]]));
    let bundled_ink = inked_pixels(runner, curve_segments, resolution)?;
    let straight_ink = inked_pixels(runner, edges.iter().copied(), resolution)?;
    let (mut sum, mut count, mut max, mut ends, mut disp, mut disp_n) = (0.0, 0u64, 0f64, 0f64, 0.0, 0u64);
    for (e, edge) in edges.iter().enumerate() {
        let pts = bundled.edge(e);
        let straight_len = f64::from(edge[2] - edge[0]).hypot(f64::from(edge[3] - edge[1]));
        if straight_len > 1e-6 {
            let d = length(pts) / straight_len;
            sum += d;
            count += 1;
            max = max.max(d);
        }
        let (first, last) = (pts[0], pts[pts.len() - 1]);
        ends = ends
            .max(f64::from(first[0] - edge[0]).hypot(f64::from(first[1] - edge[1])))
            .max(f64::from(last[0] - edge[2]).hypot(f64::from(last[1] - edge[3])));
        let s = (pts.len() - 1) as f32;
        for (k, p) in pts.iter().enumerate().take(pts.len() - 1).skip(1) {
            let t = k as f32 / s;
            let q = [edge[0] + (edge[2] - edge[0]) * t, edge[1] + (edge[3] - edge[1]) * t];
            disp += f64::from(p[0] - q[0]).hypot(f64::from(p[1] - q[1]));
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
    })
}
