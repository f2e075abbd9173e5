//! Layout quality of a ring ordering of a torus (TorusVisND, §IV).
//!
//! **Locality L (Eq. 1)**, the reading that reproduces the paper's L = 1822 (sequential) and
//! 1414 (Hilbert) on the 4x4x4x4x4 torus: for each node at ring position i, its k = 3 following
//! ring neighbours j = i+1 .. i+3 (wrapping around the ring), each at ring distance d = j - i,
//! contribute w(d) · Dist(V_i, V_j), where w(d) = exp(-(d/2)²) normalised so that w(1) + w(2) +
//! w(3) = 1, and Dist is the torus (wrap-around Manhattan) distance. L sums over all nodes; lower
//! is better.
//!
//! **CL (Eq. 2)**: for node i, the mean ring distance (around the circle, the shorter way) to its
//! torus neighbours (the other ends of its links, or of ±1 steps in every dimension of extent > 1
//! where the topology has no links). Reported as the mean and the maximum over nodes.

use exaviz_model::Topology;

/// Ring neighbours per node in L.
pub const LOCALITY_K: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LayoutMetrics {
    pub locality: f64,
    pub cl_mean: f64,
    pub cl_max: f64,
}

/// Wrap-around Manhattan distance between two coordinates of a torus.
pub fn torus_distance(extents: &[u32], a: &[u32], b: &[u32]) -> u32 {
    extents
        .iter()
        .zip(a.iter().zip(b))
        .map(|(&k, (&x, &y))| {
            let d = x.abs_diff(y);
            d.min(k - d)
        })
        .sum()
}

/// The weights w(d), d = 1..k, of L: exp(-(d/2)²) normalised to sum to 1.
pub(crate) fn locality_weights() -> [f64; LOCALITY_K] {
    let raw: [f64; LOCALITY_K] = std::array::from_fn(|i| (-((i + 1) as f64 / 2.0).powi(2)).exp());
    let total: f64 = raw.iter().sum();
    raw.map(|v| v / total)
}

/// Each node's torus neighbours by coordinates: ±1 steps (wrapping) in every dimension of extent
/// above 1, each neighbour once, the node itself never.
pub(crate) fn step_neighbours(topology: &Topology) -> Vec<Vec<u32>> {
    let (n, ext) = (topology.node_count(), &topology.extents);
    let index: std::collections::HashMap<&[u32], u32> = (0..n).map(|v| (topology.coord(v), v as u32)).collect();
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (v, list) in neighbours.iter_mut().enumerate() {
        let c = topology.coord(v);
        for (dim, &k) in ext.iter().enumerate() {
            if k < 2 {
                continue;
            }
            for step in [1, k - 1] {
                let mut q = c.to_vec();
                q[dim] = (q[dim] + step) % k;
                if let Some(&u) = index.get(q.as_slice())
                    && u as usize != v
                    && !list.contains(&u)
                {
                    list.push(u);
                }
            }
        }
    }
    neighbours
}

/// The metrics of ring order `order` (`order[i]` is the node at position i).
pub fn layout_metrics(topology: &Topology, order: &[u32]) -> LayoutMetrics {
    let n = order.len();
    if n < 2 {
        return LayoutMetrics { locality: 0.0, cl_mean: 0.0, cl_max: 0.0 };
    }
    let w = locality_weights();
    let ext = &topology.extents;
    let mut locality = 0.0;
    for i in 0..n {
        let a = topology.coord(order[i] as usize);
        for (d, wd) in w.iter().enumerate() {
            let b = topology.coord(order[(i + d + 1) % n] as usize);
            locality += wd * f64::from(torus_distance(ext, a, b));
        }
    }
    let pos = super::order::positions(order);
    let ring = |a: u32, b: u32| {
        let d = a.abs_diff(b) as usize;
        d.min(n - d) as f64
    };
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    if topology.link_count() > 0 {
        for (&s, &t) in topology.links.source.iter().zip(&topology.links.destination) {
            if (s as usize) < n && (t as usize) < n && s != t {
                neighbours[s as usize].push(t);
            }
        }
    } else {
        neighbours = step_neighbours(topology);
    }
    let (mut sum, mut max, mut counted) = (0.0, 0f64, 0usize);
    for (v, list) in neighbours.iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        let cl = list.iter().map(|&u| ring(pos[v], pos[u as usize])).sum::<f64>() / list.len() as f64;
        sum += cl;
        max = max.max(cl);
        counted += 1;
    }
    LayoutMetrics { locality, cl_mean: if counted == 0 { 0.0 } else { sum / counted as f64 }, cl_max: max }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::order::{Ordering, order_nodes};
    use crate::layout::test_torus as torus;

    #[test]
    fn reproduces_the_papers_locality_on_4_to_the_5() {
        let t = torus(&[4, 4, 4, 4, 4]);
        let seq = layout_metrics(&t, &order_nodes(&t, Ordering::Sequential));
        let hil = layout_metrics(&t, &order_nodes(&t, Ordering::Hilbert));
        assert_eq!(seq.locality.round(), 1822.0, "{seq:?}");
        assert_eq!(hil.locality.round(), 1414.0, "{hil:?}");
        assert!(hil.cl_mean > 0.0 && seq.cl_max >= seq.cl_mean);
    }

    #[test]
    fn torus_distance_wraps() {
        assert_eq!(torus_distance(&[4, 6], &[0, 0], &[3, 5]), 2);
        assert_eq!(torus_distance(&[4, 6], &[1, 1], &[3, 4]), 5);
    }
}
