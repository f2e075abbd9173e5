//! TorusVisND's traffic simulation (Cheng et al., 2014, Algorithm 1) on a torus of any extents.

use exaviz_model::dataset::Dataset;
use exaviz_model::rng::SplitMix64;
use exaviz_model::torus::link_offsets;
use exaviz_model::{Topology, Trace};

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
    use exaviz_model::torus::torus;

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
