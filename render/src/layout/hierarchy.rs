//! A quadtree hierarchy over edge endpoints, for hierarchical edge bundling of edges with no
//! hierarchy of their own (CSV edge lists): each node sits at the centroid of the distinct
//! endpoints inside its cell, and an edge's control polygon runs from its source up the tree to
//! just below the lowest common ancestor and down to its target (Holten 2006 leaves the LCA out,
//! so edges between distant regions do not all cross the root). Nodes holding a single endpoint
//! add nothing (their centroid is the endpoint) and are skipped.

use std::collections::HashMap;

use exaviz_compute::ControlPolygons;
use rayon::prelude::*;

/// Depth of the quadtree: 2^8 = 256 cells per side at the bottom.
pub const DEFAULT_DEPTH: u32 = 8;

/// Control polygons of `edges` (`[x0, y0, x1, y1]` in the unit square) through a quadtree of
/// `depth` levels (1 to 12) over their endpoints.
pub fn quadtree_polygons(edges: &[[f32; 4]], depth: u32) -> ControlPolygons {
    let depth = depth.clamp(1, 12);
    let side = 1u32 << depth;
    let quant = |v: f32| {
        let q = (v * side as f32).clamp(0.0, (side - 1) as f32);
        if q.is_nan() { 0 } else { q as u32 }
    };
    // Distinct endpoints.
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut pts: Vec<[f32; 2]> = Vec::new();
    let mut ends = Vec::with_capacity(edges.len());
    for e in edges {
        let mut id = |p: [f32; 2]| {
            *ids.entry((p[0].to_bits(), p[1].to_bits())).or_insert_with(|| {
                pts.push(p);
                pts.len() as u32 - 1
            })
        };
        ends.push((id([e[0], e[1]]), id([e[2], e[3]])));
    }
    let cells: Vec<(u32, u32)> = pts.iter().map(|p| (quant(p[0]), quant(p[1]))).collect();
    // Centroid and population of every node (depth, cx, cy).
    let mut nodes: HashMap<(u32, u32, u32), ([f64; 2], u32)> = HashMap::new();
    for (p, &(qx, qy)) in pts.iter().zip(&cells) {
        for d in 0..=depth {
            let key = (d, qx >> (depth - d), qy >> (depth - d));
            let n = nodes.entry(key).or_insert(([0.0; 2], 0));
            n.0[0] += f64::from(p[0]);
            n.0[1] += f64::from(p[1]);
            n.1 += 1;
        }
    }
    // Each endpoint's chain of ancestors (index d), NaN where the node holds it alone.
    let chains: Vec<Vec<[f32; 2]>> = cells
        .iter()
        .map(|&(qx, qy)| {
            (0..=depth)
                .map(|d| match nodes.get(&(d, qx >> (depth - d), qy >> (depth - d))) {
                    Some(&(sum, count)) if count > 1 => {
                        [(sum[0] / f64::from(count)) as f32, (sum[1] / f64::from(count)) as f32]
                    }
                    _ => [f32::NAN; 2],
                })
                .collect()
        })
        .collect();
    let polygons: Vec<Vec<[f32; 2]>> = ends
        .par_iter()
        .map(|&(a, b)| {
            let (pa, pb) = (pts[a as usize], pts[b as usize]);
            let (ca, cb) = (cells[a as usize], cells[b as usize]);
            // Depth of the lowest common ancestor: the number of equal leading bits.
            let bits = |x: u32| 32 - x.leading_zeros();
            let lca = depth - bits(ca.0 ^ cb.0).max(bits(ca.1 ^ cb.1));
            let mut poly = vec![pa];
            if a != b {
                poly.extend((lca + 1..=depth).rev().map(|d| chains[a as usize][d as usize]));
                poly.extend((lca + 1..=depth).map(|d| chains[b as usize][d as usize]));
            }
            poly.push(pb);
            poly.retain(|p| !p[0].is_nan());
            poly.dedup();
            if poly.len() < 2 {
                poly = vec![pa, pb];
            }
            poly
        })
        .collect();
    let mut out = ControlPolygons::new();
    for p in polygons {
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polygons_start_and_end_at_the_endpoints_and_siblings_are_straight() {
        let edges = [[0.1, 0.1, 0.9, 0.9], [0.12, 0.1, 0.88, 0.9], [0.5, 0.5, 0.5, 0.5], [0.1, 0.1, 0.12, 0.1]];
        let p = quadtree_polygons(&edges, 4);
        assert_eq!(p.len(), 4);
        for (e, w) in edges.iter().zip(p.offsets.windows(2)) {
            let poly = &p.points[w[0] as usize..w[1] as usize];
            assert_eq!(poly[0], [e[0], e[1]]);
            assert_eq!(poly[poly.len() - 1], [e[2], e[3]]);
        }
        // The two long edges share their inner control points (the nodes of their regions).
        let first = &p.points[p.offsets[0] as usize..p.offsets[1] as usize];
        let second = &p.points[p.offsets[1] as usize..p.offsets[2] as usize];
        assert!(first.len() > 2, "{first:?}");
        assert_eq!(first[1..first.len() - 1], second[1..second.len() - 1]);
        // A degenerate edge is two points.
        assert_eq!(p.offsets[3] - p.offsets[2], 2);
    }
}
