//! 2-D embeddings of a torus that the ring is compared with (TorusTrafficND, §IV): MDS on the hop
//! (torus) distance matrix at three scopes, and RadViz.
//!
//! **MDS** is classical (Torgerson) scaling: the doubly centred matrix of squared distances,
//! `B = -J D² J / 2`, and its two leading eigenvectors, found by orthogonal (subspace) iteration
//! from a fixed start, so the result is deterministic. A torus is symmetric, so its leading
//! eigenvalues repeat and any basis of their space is an equally valid embedding. The scopes:
//! - `full`: `D_ij` is the torus (wrap-around Manhattan) distance;
//! - `k-hop` (the paper uses k = 3): the distance where it is at most k hops, else "infinite";
//! - `immediate`: 1 between torus neighbours, else "infinite".
//!
//! The paper writes infinity into the matrix and describes the result as a large repelling force;
//! classical scaling needs finite numbers, so "infinite" here is twice the torus diameter (the
//! largest finite distance), which repels as described: the immediate scope collapses nodes into
//! superimposed pairs, as in the paper's Fig. 2.
//!
//! **RadViz** (Eq. 6) puts one anchor per dimension on the unit circle and each node at the mean
//! of the anchors weighted by its normalised coordinates, `x_i / (extent_i - 1)`; a dimension of
//! extent 1 counts as 1 (so in 1x4x4x4x2 the origin lands on the first anchor, as the paper notes),
//! and a node whose weights are all 0 sits at the centre.
//!
//! **Metrics** comparable with the ring's ([`super::metrics`]): L takes, for each node, its three
//! nearest nodes in the plane (ties by index) in place of the three following ring neighbours, with
//! the same weights and torus distances; CL is the mean distance in the plane to the node's torus
//! neighbours, in units of the layout's spacing `side / sqrt(n)`, with `side` the longer side of
//! its bounding box (n nodes spread evenly over that square are one spacing apart, as a ring's
//! positions are one apart).

use exaviz_model::Topology;
use rayon::prelude::*;

use super::metrics::{LOCALITY_K, LayoutMetrics, locality_weights, step_neighbours, torus_distance};

/// Most nodes for MDS (its matrix holds n² floats: 64 MiB at this size).
pub const MDS_MAX_NODES: usize = 4096;
/// Most nodes for the embedding metrics (nearest neighbours by brute force, n² distances).
pub const METRICS_MAX_NODES: usize = 16_384;
/// The k of the k-hop scope in the paper.
pub const PAPER_HOPS: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Embedding {
    MdsFull,
    MdsHops(u32),
    MdsImmediate,
    RadViz,
}

impl Embedding {
    pub const ALL: [Self; 4] = [Self::MdsFull, Self::MdsHops(PAPER_HOPS), Self::MdsImmediate, Self::RadViz];

    pub fn name(self) -> String {
        match self {
            Self::MdsFull => "mds-full".into(),
            Self::MdsHops(k) => format!("mds-{k}hop"),
            Self::MdsImmediate => "mds-immediate".into(),
            Self::RadViz => "radviz".into(),
        }
    }

    /// Why this embedding cannot be computed for `n` nodes, if it cannot.
    pub fn too_large(self, n: usize) -> Option<String> {
        (self != Self::RadViz && n > MDS_MAX_NODES)
            .then(|| format!("MDS holds an n x n matrix: at most {MDS_MAX_NODES} nodes, not {n}"))
    }
}

/// Node positions of `embedding`, one per node of `topology`, in its own units.
pub fn embed(topology: &Topology, embedding: Embedding) -> Result<Vec<[f32; 2]>, String> {
    let n = topology.node_count();
    if let Some(why) = embedding.too_large(n) {
        return Err(why);
    }
    Ok(match embedding {
        Embedding::RadViz => radviz(topology),
        Embedding::MdsFull => classical_mds(topology, |d| d as f32),
        Embedding::MdsHops(k) => {
            let far = far(topology);
            classical_mds(topology, move |d| if d <= k { d as f32 } else { far })
        }
        Embedding::MdsImmediate => {
            let far = far(topology);
            classical_mds(topology, move |d| match d {
                0 => 0.0,
                1 => 1.0,
                _ => far,
            })
        }
    })
}

/// "Infinite" distance: twice the torus diameter.
fn far(topology: &Topology) -> f32 {
    2.0 * topology.extents.iter().map(|&k| (k / 2) as f32).sum::<f32>().max(1.0)
}

fn radviz(topology: &Topology) -> Vec<[f32; 2]> {
    let ext = &topology.extents;
    let anchors: Vec<[f32; 2]> = (0..ext.len())
        .map(|i| {
            let a = std::f32::consts::TAU * i as f32 / ext.len() as f32;
            [a.cos(), a.sin()]
        })
        .collect();
    (0..topology.node_count())
        .map(|v| {
            let c = topology.coord(v);
            let w: Vec<f32> =
                c.iter().zip(ext).map(|(&x, &k)| if k > 1 { x as f32 / (k - 1) as f32 } else { 1.0 }).collect();
            let total: f32 = w.iter().sum();
            if total <= 0.0 {
                return [0.0, 0.0];
            }
            let mut p = [0.0f32; 2];
            for (wi, a) in w.iter().zip(&anchors) {
                p[0] += wi / total * a[0];
                p[1] += wi / total * a[1];
            }
            p
        })
        .collect()
}

/// Classical scaling of the distances `dist(torus distance)` between all pairs of nodes.
fn classical_mds(topology: &Topology, dist: impl Fn(u32) -> f32 + Sync) -> Vec<[f32; 2]> {
    let n = topology.node_count();
    if n < 2 {
        return vec![[0.0, 0.0]; n];
    }
    let ext = &topology.extents;
    // Squared distances, then double centring: B_ij = -(D²_ij - r_i - r_j + g) / 2.
    let mut b: Vec<f32> = vec![0.0; n * n];
    b.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        let a = topology.coord(i);
        for (j, v) in row.iter_mut().enumerate() {
            let d = dist(torus_distance(ext, a, topology.coord(j)));
            *v = d * d;
        }
    });
    let means: Vec<f64> =
        b.par_chunks(n).map(|row| row.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64).collect();
    let grand = means.iter().sum::<f64>() / n as f64;
    b.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for (j, v) in row.iter_mut().enumerate() {
            *v = (-0.5 * (f64::from(*v) - means[i] - means[j] + grand)) as f32;
        }
    });
    let (vectors, values) = leading_eigenpairs(&b, n);
    (0..n)
        .map(|i| {
            let s = |k: usize| (values[k].max(0.0).sqrt() * vectors[k][i]) as f32;
            [s(0), s(1)]
        })
        .collect()
}

/// The two leading eigenpairs of the symmetric `n x n` matrix `b`, by orthogonal iteration with
/// a fixed start (deterministic).
fn leading_eigenpairs(b: &[f32], n: usize) -> ([Vec<f64>; 2], [f64; 2]) {
    let mut v: [Vec<f64>; 2] =
        [0, 1].map(|k| (0..n).map(|i| ((i * (2 * k + 3) + k) as f64 * 0.618_034).sin()).collect());
    orthonormalise(&mut v);
    let mut values = [0.0; 2];
    for _ in 0..300 {
        let w: [Vec<f64>; 2] = [0, 1].map(|k| multiply(b, n, &v[k]));
        values = [0, 1].map(|k| dot(&v[k], &w[k]));
        let previous = v.clone();
        v = w;
        orthonormalise(&mut v);
        let change: f64 = (0..2).map(|k| 1.0 - dot(&v[k], &previous[k]).abs()).sum();
        if change < 1e-12 {
            break;
        }
    }
    (v, values)
}

fn multiply(b: &[f32], n: usize, x: &[f64]) -> Vec<f64> {
    b.par_chunks(n).map(|row| row.iter().zip(x).map(|(&r, &x)| f64::from(r) * x).sum()).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Gram-Schmidt on two vectors; a vector that vanishes is replaced by a fixed unit vector.
fn orthonormalise(v: &mut [Vec<f64>; 2]) {
    let unit = |x: &mut Vec<f64>, fallback: usize| {
        let len = dot(x, x).sqrt();
        if len > 1e-300 {
            x.iter_mut().for_each(|a| *a /= len);
        } else {
            let at = fallback % x.len();
            x.iter_mut().enumerate().for_each(|(i, a)| *a = if i == at { 1.0 } else { 0.0 });
        }
    };
    unit(&mut v[0], 0);
    let p = dot(&v[0], &v[1]);
    let (first, second) = v.split_at_mut(1);
    second[0].iter_mut().zip(&first[0]).for_each(|(b, a)| *b -= p * a);
    unit(&mut second[0], 1);
}

/// L and CL of positions `p` (one per node), as described in the module notes; `None` above
/// [`METRICS_MAX_NODES`].
pub fn embedding_metrics(topology: &Topology, p: &[[f32; 2]]) -> Option<LayoutMetrics> {
    let n = topology.node_count().min(p.len());
    if n > METRICS_MAX_NODES {
        return None;
    }
    if n < 2 {
        return Some(LayoutMetrics { locality: 0.0, cl_mean: 0.0, cl_max: 0.0 });
    }
    let w = locality_weights();
    let ext = &topology.extents;
    let d2 = |a: usize, b: usize| {
        let (dx, dy) = (f64::from(p[a][0] - p[b][0]), f64::from(p[a][1] - p[b][1]));
        dx * dx + dy * dy
    };
    let locality: f64 = (0..n)
        .into_par_iter()
        .map(|i| {
            // The k nearest other nodes, ties by index.
            let mut best: Vec<(f64, usize)> = Vec::with_capacity(LOCALITY_K + 1);
            for j in (0..n).filter(|&j| j != i) {
                let d = d2(i, j);
                if best.len() < LOCALITY_K || d < best[LOCALITY_K - 1].0 {
                    let at = best.partition_point(|&(e, _)| e <= d);
                    best.insert(at, (d, j));
                    best.truncate(LOCALITY_K);
                }
            }
            let a = topology.coord(i);
            best.iter()
                .zip(&w)
                .map(|(&(_, j), wd)| wd * f64::from(torus_distance(ext, a, topology.coord(j))))
                .sum::<f64>()
        })
        .sum();
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for q in &p[..n] {
        for k in 0..2 {
            lo[k] = lo[k].min(f64::from(q[k]));
            hi[k] = hi[k].max(f64::from(q[k]));
        }
    }
    // The square on the bounding box's longer side: embeddings that collapse onto a line (MDS
    // of a symmetric torus can) keep a finite spacing.
    let side = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f64::MIN_POSITIVE);
    let spacing = side / (n as f64).sqrt();
    let neighbours = step_neighbours(topology);
    let (mut sum, mut max) = (0.0, 0f64);
    for (v, list) in neighbours.iter().enumerate().take(n) {
        let dists: Vec<f64> =
            list.iter().filter(|&&u| (u as usize) < n).map(|&u| d2(v, u as usize).sqrt() / spacing).collect();
        let cl = if dists.is_empty() { 0.0 } else { dists.iter().sum::<f64>() / dists.len() as f64 };
        sum += cl;
        max = max.max(cl);
    }
    Some(LayoutMetrics { locality, cl_mean: sum / n as f64, cl_max: max })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::test_torus as torus;

    /// Full MDS of a ring (a 1-D torus) is a regular polygon: every node at the same distance
    /// from the centre, consecutive nodes equally spaced.
    #[test]
    fn mds_of_a_ring_is_a_circle() {
        let t = torus(&[12]);
        let p = embed(&t, Embedding::MdsFull).unwrap();
        let r: Vec<f32> = p.iter().map(|q| (q[0] * q[0] + q[1] * q[1]).sqrt()).collect();
        assert!(r[0] > 1.0);
        for x in &r {
            assert!((x - r[0]).abs() < 1e-3 * r[0], "{r:?}");
        }
        let step = |i: usize| {
            let (a, b) = (p[i], p[(i + 1) % 12]);
            ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
        };
        for i in 0..12 {
            assert!((step(i) - step(0)).abs() < 1e-3 * step(0));
        }
    }

    /// Embeddings keep torus neighbours closer than the ring's worst case, and the immediate
    /// scope superimposes nodes in pairs (TorusTrafficND, Fig. 2 right).
    #[test]
    fn embeddings_of_a_5d_torus() {
        let t = torus(&[1, 4, 4, 4, 2]);
        for e in Embedding::ALL {
            let p = embed(&t, e).unwrap();
            assert_eq!(p.len(), 128);
            assert!(p.iter().all(|q| q[0].is_finite() && q[1].is_finite()), "{}", e.name());
            let m = embedding_metrics(&t, &p).unwrap();
            assert!(m.locality > 0.0 && m.cl_mean > 0.0 && m.cl_max >= m.cl_mean, "{}: {m:?}", e.name());
        }
        let p = embed(&t, Embedding::MdsImmediate).unwrap();
        let distinct: std::collections::HashSet<[i64; 2]> =
            p.iter().map(|q| [(q[0] * 1e3).round() as i64, (q[1] * 1e3).round() as i64]).collect();
        assert!(distinct.len() < 128, "immediate-neighbour MDS superimposes nodes: {} distinct", distinct.len());
        // RadViz: the origin of 1x4x4x4x2 sits on the first anchor.
        let r = embed(&t, Embedding::RadViz).unwrap();
        assert!((r[0][0] - 1.0).abs() < 1e-6 && r[0][1].abs() < 1e-6, "{:?}", r[0]);
        assert!(Embedding::MdsFull.too_large(MDS_MAX_NODES + 1).is_some());
        assert!(Embedding::RadViz.too_large(1 << 20).is_none());
    }
}
