//! Curves of hierarchical edge bundling (Holten 2006): every edge's control polygon, the path
//! between its endpoints through a hierarchy, is straightened by the bundling strength `beta` and
//! evaluated as a clamped uniform B-spline (degree 1 to 3, less for short polygons; Holten uses 3,
//! Brendel et al. uses 2) at `samples`
//! points, endpoints exact. Shader: `bspline.wgsl` beside this file; CPU mirror: [`mirror`].
//! The control polygons come from a hierarchy (see `exaviz_render::layout::hierarchy`).

pub mod mirror;

use super::{Kernel, Recording, Runner, StageError, chunks};
use crate::Bundled;

/// Most control points per edge (the shader's `MAX_CTRL`).
pub const MAX_CTRL: usize = 64;

/// Control polygons, back to back: edge `e` is `points[offsets[e]..offsets[e + 1]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControlPolygons {
    pub points: Vec<[f32; 2]>,
    pub offsets: Vec<u32>,
}

impl ControlPolygons {
    pub fn new() -> Self {
        Self { points: Vec::new(), offsets: vec![0] }
    }

    pub fn push(&mut self, polygon: impl IntoIterator<Item = [f32; 2]>) {
        self.points.extend(polygon);
        self.offsets.push(self.points.len() as u32);
    }

    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn validate(&self) -> Result<(), String> {
        if self.offsets.first() != Some(&0) || self.offsets.last().map(|&o| o as usize) != Some(self.points.len()) {
            return Err("control polygon offsets do not span the points".into());
        }
        for (e, w) in self.offsets.windows(2).enumerate() {
            let m = w[1].checked_sub(w[0]).ok_or_else(|| format!("edge {e}: offsets decrease"))? as usize;
            if !(2..=MAX_CTRL).contains(&m) {
                return Err(format!("edge {e}: {m} control points (2 to {MAX_CTRL} allowed)"));
            }
        }
        Ok(())
    }
}

/// How each polygon's curve is evaluated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Curve {
    /// Output points per edge, 2 to 32.
    pub samples: u32,
    /// Bundling strength: 1 follows the polygon, 0 is the straight line.
    pub beta: f32,
    /// B-spline degree, 1 to 3 (lower for polygons with fewer points).
    pub degree: u32,
}

pub fn record<'a>(
    polygons: &'a ControlPolygons,
    curve: Curve,
    max_binding_bytes: u64,
) -> Result<Recording<'a>, StageError> {
    let Curve { samples, beta, degree } = curve;
    if !(1..=3).contains(&degree) {
        return Err(StageError::Input(format!("degree must be 1 to 3, not {degree}")));
    }
    polygons.validate().map_err(StageError::Input)?;
    if !(2..=32).contains(&samples) {
        return Err(StageError::Input(format!("samples must be 2 to 32, not {samples}")));
    }
    if !(0.0..=1.0).contains(&beta) {
        return Err(StageError::Input(format!("beta must be in [0, 1], not {beta}")));
    }
    let n = polygons.len();
    let mut rec = Recording::default();
    // Chunks by output size; a chunk's control points are at most MAX_CTRL / samples times more.
    let per_edge = (MAX_CTRL as u64 * 8).max(u64::from(samples) * 8);
    for range in chunks(n, per_edge, max_binding_bytes) {
        let len = range.len();
        let (lo, hi) = (polygons.offsets[range.start] as usize, polygons.offsets[range.end] as usize);
        let ctrl = rec.alloc((hi - lo) as u64 * 2, "bspline.ctrl");
        rec.upload(ctrl, bytemuck::cast_slice::<[f32; 2], u32>(&polygons.points[lo..hi]));
        let offsets = rec.alloc(len as u64 + 1, "bspline.offsets");
        let rebased: Vec<u32> = polygons.offsets[range.start..=range.end].iter().map(|&o| o - lo as u32).collect();
        rec.upload(offsets, rebased);
        let points = rec.alloc(len as u64 * u64::from(samples) * 2, "bspline.points");
        let params = vec![len as u32, samples, beta.to_bits(), degree];
        rec.dispatch(Kernel::BsplineEval, len as u32, params, vec![(1, ctrl), (2, offsets), (3, points)]);
        rec.download(points);
    }
    Ok(rec)
}

/// Evaluates every polygon's curve on a runner; output polyline `e` belongs to edge `e`.
pub fn run(runner: &mut dyn Runner, polygons: &ControlPolygons, curve: Curve) -> Result<Bundled, StageError> {
    let rec = record(polygons, curve, runner.max_binding_bytes())?;
    let out = runner.run(&rec)?;
    let samples = curve.samples;
    let mut points = Vec::with_capacity(polygons.len() * samples as usize);
    for words in out {
        points.extend_from_slice(bytemuck::cast_slice::<u32, [f32; 2]>(&words));
    }
    Ok(Bundled { samples, points })
}
