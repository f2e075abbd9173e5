//! N-D torus topologies of any extents: their nodes in sequential order and their links.

use crate::source::MAX_NODES;
use crate::{Links, Topology};

/// Parses `4x4x4` into extents; every extent at least 1, the product at most [`MAX_NODES`].
pub fn parse_dims(s: &str) -> Result<Vec<u32>, String> {
    let dims: Vec<u32> = s
        .split('x')
        .map(|p| p.trim().parse::<u32>().ok().filter(|&v| v >= 1))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("dims '{s}' must be extents of at least 1 joined by 'x', e.g. 4x4x4"))?;
    if dims.is_empty() || dims.len() > 16 {
        return Err(format!("dims '{s}' must have 1 to 16 dimensions"));
    }
    let nodes = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)).filter(|&n| n <= MAX_NODES));
    if nodes.is_none() {
        return Err(format!("dims '{s}' make more than {MAX_NODES} nodes, above the limit"));
    }
    Ok(dims)
}

/// Node id of coordinates: row-major, the last dimension fastest (the sequential ordering).
pub fn node_id(extents: &[u32], coord: &[u32]) -> u32 {
    coord.iter().zip(extents).fold(0u32, |acc, (&c, &e)| acc * e + c)
}

/// The torus of the given extents: nodes in sequential order, and for each node and dimension
/// the links to its +1 and -1 neighbours (one link where they coincide, none for extent 1).
pub fn torus(extents: &[u32]) -> Topology {
    let dims = extents.len();
    let n: u32 = extents.iter().product();
    let mut coords = Vec::with_capacity(n as usize * dims);
    let mut c = vec![0u32; dims];
    for _ in 0..n {
        coords.extend_from_slice(&c);
        for d in (0..dims).rev() {
            c[d] += 1;
            if c[d] < extents[d] {
                break;
            }
            c[d] = 0;
        }
    }
    let mut links = Links::default();
    for node in 0..n as usize {
        let base = &coords[node * dims..(node + 1) * dims];
        for d in 0..dims {
            let e = extents[d];
            if e < 2 {
                continue;
            }
            let mut targets = vec![(base[d] + 1) % e];
            if e > 2 {
                targets.push((base[d] + e - 1) % e);
            }
            for t in targets {
                let mut nb = base.to_vec();
                nb[d] = t;
                links.source.push(node as u32);
                links.destination.push(node_id(extents, &nb));
                links.dimension.push(d as u32);
            }
        }
    }
    Topology { extents: extents.to_vec(), coords, group: vec![u32::MAX; n as usize], links }
}

/// Offsets of each node's outgoing links (links are stored node by node): node `i` owns
/// `first[i]..first[i + 1]`.
pub fn link_offsets(topology: &Topology) -> Vec<u32> {
    let n = topology.node_count();
    let mut first = vec![0u32; n + 1];
    for &s in &topology.links.source {
        first[s as usize + 1] += 1;
    }
    for i in 0..n {
        first[i + 1] += first[i];
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torus_has_two_links_per_dimension_and_node() {
        let t = torus(&[4, 4, 4, 4, 4]);
        assert_eq!(t.node_count(), 1024);
        assert_eq!(t.link_count(), 1024 * 10);
        let t = torus(&[6, 5, 4, 3, 2]);
        // extent 2 gives one link per node in that dimension
        assert_eq!(t.link_count(), 720 * 9);
        assert_eq!(t.coord(node_id(&[6, 5, 4, 3, 2], &[5, 4, 3, 2, 1]) as usize), &[5, 4, 3, 2, 1]);
    }
}
