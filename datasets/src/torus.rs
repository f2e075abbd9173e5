//! N-D torus topologies of any extents, and TorusVisND's traffic simulation (Algorithm 1).

use exaviz_engine::dataset::Dataset;
use exaviz_engine::model::{Links, Topology, Trace};

use crate::MAX_NODES;
use crate::rng::SplitMix64;

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

/// TorusVisND, Algorithm 1: each node wakes at a random step before T/2 and sends one message,
/// which then walks to a random neighbour at each step until step T. Every hop is recorded as a
/// message (hop source, hop destination, send step, receive step = send + 1, 1 byte, tag = the
/// originating node, so a message can be tracked) and as one packet on the link it used.
/// Time is in steps (`ticks_per_second` = 1).
pub fn simulate(topology: Topology, steps: u32, seed: u64) -> Dataset {
    let n = topology.node_count() as u32;
    let first = link_offsets(&topology);
    let mut rng = SplitMix64(seed);
    let mut trace = Trace { ticks_per_second: 1, ..Default::default() };
    trace.locations.name = (0..n).map(|i| format!("node {i}")).collect();
    trace.locations.node = (0..n).collect();
    let m = &mut trace.messages;
    let lc = &mut trace.link_counters;
    for origin in 0..n {
        let wake = rng.below((steps / 2).max(1));
        let mut at = origin;
        for t in wake + 1..=steps {
            let (lo, hi) = (first[at as usize], first[at as usize + 1]);
            if hi == lo {
                break; // a 1x1x... torus has no links
            }
            let link = lo + rng.below(hi - lo);
            let next = topology.links.destination[link as usize];
            m.source.push(at);
            m.destination.push(next);
            m.send_time.push(u64::from(t - 1));
            m.recv_time.push(u64::from(t));
            m.bytes.push(1);
            m.tag.push(origin);
            lc.entity.push(link);
            lc.time.push(u64::from(t - 1));
            lc.value.push(1);
            at = next;
        }
    }
    Dataset { trace, topology: Some(topology), link_counter_unit: "packets".into(), ..Dataset::default() }
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

    #[test]
    fn simulation_walks_along_links() {
        let d = simulate(torus(&[4, 4, 4]), 30, 7);
        let m = &d.trace.messages;
        assert!(!m.source.is_empty());
        let topo = d.topology.as_ref().unwrap();
        for i in 0..m.source.len() {
            let l = d.trace.link_counters.entity[i] as usize;
            assert_eq!((topo.links.source[l], topo.links.destination[l]), (m.source[i], m.destination[i]));
            assert!(m.send_time[i] < 30 && m.recv_time[i] == m.send_time[i] + 1);
        }
        // every node sends at least the steps from its wake-up (< 15) to 30
        assert!(m.source.len() >= 64 * 15);
        assert_eq!(d.trace.messages.source, simulate(torus(&[4, 4, 4]), 30, 7).trace.messages.source);
    }
}
