//! Image-space, density-based edge bundling (KDE edge bundling; CUBu's GPU form). Shader:
//! `kde_bundle.wgsl` beside this file; CPU mirror: [`mirror`].
//!
//! Edges live in the unit square (callers normalise with [`UnitFrame`]), so every parameter is
//! screen-independent: kernel radius and step are fractions of the square's side. Each edge is a
//! polyline of `samples` points (16 by default: 128 bytes of state per edge, plus 4 bytes of
//! weight and 16 of endpoints), and keeps its index: output polyline `e` is input edge `e`.
//!
//! Per iteration: blur the splatted density (two separable passes), take the gradient direction
//! per cell (`kde_gradient`), then advect every edge (`kde_advect`: move, smooth, resample), which
//! also splats the new points for the next iteration, so the points are read once per iteration.

pub mod mirror;
pub mod plain;

use rayon::prelude::*;

use super::{Kernel, Recording, Runner, StageError, chunks};

pub use super::io::BundleParams;

/// Edges `[x0, y0, x1, y1]` in the unit square, with optional integer weights (default 1) that
/// scale each edge's contribution to the density.
#[derive(Clone, Copy, Debug)]
pub struct BundleInput<'a> {
    pub edges: &'a [[f32; 4]],
    pub weights: Option<&'a [u32]>,
}

/// Bundled polylines: edge `e` is `points[e * samples .. (e + 1) * samples]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundled {
    pub samples: u32,
    pub points: Vec<[f32; 2]>,
}

impl Bundled {
    pub fn edge(&self, e: usize) -> &[[f32; 2]] {
        let s = self.samples as usize;
        &self.points[e * s..(e + 1) * s]
    }

    pub fn len(&self) -> usize {
        self.points.len() / self.samples.max(1) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// Maps arbitrary coordinates into the unit square (uniform scale, centred) and back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitFrame {
    pub origin: [f32; 2],
    pub scale: f32,
}

impl UnitFrame {
    /// The frame fitting every endpoint with a 5% margin. Non-finite coordinates are ignored.
    pub fn fit(edges: &[[f32; 4]]) -> Self {
        let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
        for e in edges {
            for (x, y) in [(e[0], e[1]), (e[2], e[3])] {
                if x.is_finite() && y.is_finite() {
                    lo = [lo[0].min(x), lo[1].min(y)];
                    hi = [hi[0].max(x), hi[1].max(y)];
                }
            }
        }
        if lo[0] > hi[0] {
            return Self { origin: [0.0, 0.0], scale: 1.0 };
        }
        let side = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f32::MIN_POSITIVE) * 1.1;
        let centre = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
        Self { origin: [centre[0] - side / 2.0, centre[1] - side / 2.0], scale: 1.0 / side }
    }

    pub fn to_unit(&self, p: [f32; 2]) -> [f32; 2] {
        [(p[0] - self.origin[0]) * self.scale, (p[1] - self.origin[1]) * self.scale]
    }

    /// An edge `[x0, y0, x1, y1]` mapped into the unit square.
    pub fn edge_to_unit(&self, e: [f32; 4]) -> [f32; 4] {
        let (a, b) = (self.to_unit([e[0], e[1]]), self.to_unit([e[2], e[3]]));
        [a[0], a[1], b[0], b[1]]
    }

    pub fn from_unit(&self, p: [f32; 2]) -> [f32; 2] {
        [p[0] / self.scale + self.origin[0], p[1] / self.scale + self.origin[1]]
    }
}

fn params_words(n: u32, p: &BundleParams, radius: u32, step: f32, splat_next: bool) -> Vec<u32> {
    vec![n, p.samples, p.grid, radius, step.to_bits(), p.smoothing.to_bits(), u32::from(splat_next), 0]
}

/// Refuses invalid parameters and a weight column of another length than the edges'.
fn check(input: &BundleInput<'_>, params: &BundleParams) -> Result<(), StageError> {
    params.validate().map_err(StageError::Input)?;
    if input.weights.is_some_and(|w| w.len() != input.edges.len()) {
        return Err(StageError::Input("bundle weights and edges differ in length".into()));
    }
    Ok(())
}

pub fn record<'a>(
    input: &BundleInput<'a>,
    params: &BundleParams,
    max_binding_bytes: u64,
) -> Result<Recording<'a>, StageError> {
    check(input, params)?;
    let n = input.edges.len();
    let s = u64::from(params.samples);
    let cells = u64::from(params.grid) * u64::from(params.grid);
    super::check_binding("bundle density grid", cells * 8, max_binding_bytes)?;
    let mut rec = Recording::default();
    let splat = rec.alloc(cells * 2, "bundle.splat");
    let blur = rec.alloc(cells, "bundle.blur");
    let density = rec.alloc(cells, "bundle.density");
    let gradient = rec.alloc(cells, "bundle.gradient");
    // Per chunk: endpoints, weights and the polylines, which stay resident across iterations.
    let mut parts = Vec::new();
    for range in chunks(n, s * 8, max_binding_bytes) {
        let len = range.len() as u64;
        let ends = rec.alloc(len * 4, "bundle.endpoints");
        rec.upload(ends, bytemuck::cast_slice::<[f32; 4], u32>(&input.edges[range.clone()]));
        let weights = rec.alloc(len, "bundle.weights");
        match input.weights {
            Some(w) => rec.upload(weights, &w[range.clone()]),
            None => rec.upload(weights, vec![1u32; range.len()]),
        }
        let points = rec.alloc(len * s * 2, "bundle.points");
        rec.dispatch(
            Kernel::KdeInit,
            len as u32,
            params_words(len as u32, params, 1, 0.0, false),
            vec![(1, ends), (2, points)],
        );
        parts.push((len as u32, weights, points));
    }
    // The first splat; later ones are fused into advection (each edge splats its new points), so
    // the points are read once per iteration.
    rec.clear(splat);
    for &(len, weights, points) in &parts {
        let words = params_words(len, params, 1, 0.0, false);
        rec.dispatch(Kernel::KdeSplat, len * params.samples, words, vec![(2, points), (3, weights), (4, splat)]);
    }
    for it in 0..params.iterations {
        let radius = params.radius_cells(it);
        let step = params.step * params.kernel * params.decay.powi(it as i32);
        let splat_next = it + 1 < params.iterations;
        let words = |len: u32| params_words(len, params, radius, step, splat_next);
        let c = cells as u32;
        rec.dispatch(Kernel::KdeBlurX, c, words(c), vec![(4, splat), (6, blur)]);
        rec.dispatch(Kernel::KdeBlurY, c, words(c), vec![(5, blur), (6, density)]);
        rec.dispatch(Kernel::KdeGradient, c, words(c), vec![(5, density), (8, gradient)]);
        if splat_next {
            rec.clear(splat);
        }
        for &(len, weights, points) in &parts {
            let bind = vec![(2, points), (3, weights), (4, splat), (7, gradient)];
            rec.dispatch(Kernel::KdeAdvect, len, words(len), bind);
        }
    }
    for &(_, _, points) in &parts {
        rec.download(points);
    }
    Ok(rec)
}

/// Identical edges bundled once: `edges[u]` weighs the sum of the weights of the input edges `e`
/// with `of_edge[e] == u`; `reversed[e]` says that edge `e` runs from `edges[u]`'s end to its start.
struct Merged {
    edges: Vec<[f32; 4]>,
    weights: Vec<u32>,
    of_edge: Vec<u32>,
    reversed: Vec<bool>,
}

/// Merges edges with the same endpoints (bit for bit, in either direction). They start on the
/// same points and every step moves a point by the density field alone, so they follow the same
/// path; one edge of their summed weight splats the same integer density. An edge and its reverse
/// differ only in rounding (their samples are interpolated from opposite ends), so `a -> b` and
/// `b -> a` get the same curve, one reversed; edges repeated in the same direction get the same
/// curve, bit for bit, as bundling them one by one would give (both tested). Communication traces
/// repeat pairs, and exchange in both directions, a lot. `None` where nothing repeats, or a summed
/// weight would not fit the stage's `u32`.
fn merge_identical(input: &BundleInput<'_>) -> Option<Merged> {
    let n = input.edges.len();
    if n < 2 || input.weights.is_some_and(|w| w.len() != n) {
        return None;
    }
    let mut index: rustc_hash::FxHashMap<[u32; 4], u32> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(n, Default::default());
    let (mut edges, mut sums) = (Vec::new(), Vec::<u64>::new());
    let (mut of_edge, mut reversed) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (e, edge) in input.edges.iter().enumerate() {
        let key = edge.map(f32::to_bits);
        let flip = [key[2], key[3]] < [key[0], key[1]];
        let (key, canonical) =
            if flip { ([key[2], key[3], key[0], key[1]], [edge[2], edge[3], edge[0], edge[1]]) } else { (key, *edge) };
        let u = *index.entry(key).or_insert_with(|| {
            edges.push(canonical);
            sums.push(0);
            (edges.len() - 1) as u32
        });
        sums[u as usize] += input.weights.map_or(1, |w| u64::from(w[e]));
        of_edge.push(u);
        reversed.push(flip);
    }
    if edges.len() == n {
        return None;
    }
    let weights = sums.into_iter().map(u32::try_from).collect::<Result<Vec<_>, _>>().ok()?;
    Some(Merged { edges, weights, of_edge, reversed })
}

/// Bundles `input` on a runner; identical and reversed edges are bundled once (see
/// [`merge_identical`]).
pub fn run(runner: &mut dyn Runner, input: &BundleInput<'_>, params: &BundleParams) -> Result<Bundled, StageError> {
    let Some(merged) = merge_identical(input) else {
        return run_each(runner, input, params);
    };
    let unique = BundleInput { edges: &merged.edges, weights: Some(&merged.weights) };
    let bundled = run_each(runner, &unique, params)?;
    let s = params.samples as usize;
    let mut points = vec![[0f32; 2]; merged.of_edge.len() * s];
    points.par_chunks_mut(s).zip(&merged.of_edge).zip(&merged.reversed).for_each(|((dst, &u), &flip)| {
        dst.copy_from_slice(bundled.edge(u as usize));
        if flip {
            dst.reverse();
        }
    });
    Ok(Bundled { samples: params.samples, points })
}

/// Bundles every edge of `input` as it is: on a runner of plain memory (the CPU's) with
/// [`plain`], which equals [`run_recorded`] there bit for bit, else as [`run_recorded`].
pub fn run_each(
    runner: &mut dyn Runner,
    input: &BundleInput<'_>,
    params: &BundleParams,
) -> Result<Bundled, StageError> {
    if !runner.plain_memory() {
        return run_recorded(runner, input, params);
    }
    check(input, params)?;
    let points = plain::bundle(input.edges, input.weights, params);
    Ok(Bundled { samples: params.samples, points })
}

/// Bundles every edge of `input` by running [`record`]'s recording on `runner`.
pub fn run_recorded(
    runner: &mut dyn Runner,
    input: &BundleInput<'_>,
    params: &BundleParams,
) -> Result<Bundled, StageError> {
    let rec = record(input, params, runner.max_binding_bytes())?;
    let mut out = runner.run(&rec)?;
    // One chunk (the usual case) becomes the result without a copy.
    if out.len() == 1 {
        let words = out.pop().unwrap_or_default();
        let points = bytemuck::allocation::try_cast_vec::<u32, [f32; 2]>(words)
            .unwrap_or_else(|(_, words)| bytemuck::cast_slice(&words).to_vec());
        return Ok(Bundled { samples: params.samples, points });
    }
    let mut points = Vec::with_capacity(input.edges.len() * params.samples as usize);
    for words in out {
        points.extend_from_slice(bytemuck::cast_slice::<u32, [f32; 2]>(&words));
    }
    Ok(Bundled { samples: params.samples, points })
}
