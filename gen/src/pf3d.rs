//! A pF3D-like traffic generator (TorusTrafficND §VII): the communication of the laser-plasma code
//! pF3D on a Blue Gene/Q-style 5-D torus, under its default task mapping.
//!
//! - The physical domain is a grid of `X x Y x Z` cubes, one per process (hardware thread);
//!   process `r` owns cube `(x, y, z)` with `r = x + X (y + Y z)` (x fastest).
//! - Phase 0: every process sends one message to every process sharing its Y and Z coordinates
//!   (its X line); phase 1: to every process sharing its X and Z coordinates (its Y line).
//! - Default task mapping: processes fill a node's threads, then move to the next node; nodes are
//!   visited incrementing the E offset first, then D, C, B, A, which is node id order here (the
//!   last dimension fastest).
//! - Messages between processes on one node stay off the network. Others are routed
//!   dimension-ordered (A first, then B ... E), each dimension the shorter way round, a tie
//!   (exactly half the extent) the positive way, and add their packets (`bytes / 512`, rounded
//!   up: BG/Q packets carry up to 512 bytes) to every link they cross.
//! - The default grid is the most nearly cubic factorisation of the process count with
//!   `X <= Y <= Z` (16x16x32 for 256 nodes of 32 threads, 16x32x32 for 512).
//!
//! The trace has one location per node; its messages are the network messages summed per
//! (source node, destination node, phase) with `send_time = phase`, `recv_time = phase + 1`;
//! its link counters give the packets per link and phase (time = phase), in "packets".

use std::collections::HashMap;

use exaviz_model::dataset::Dataset;
use exaviz_model::torus::link_offsets;
use exaviz_model::{Topology, Trace};

/// Bytes per BG/Q network packet (payload).
pub const PACKET_BYTES: u32 = 512;
/// Most process-to-process messages generated (the work is linear in them).
pub const MAX_PROCESS_MESSAGES: u64 = 50_000_000;

/// Options of the generator.
#[derive(Clone, Debug)]
pub struct Pf3dOptions {
    /// Processes (hardware threads) per node.
    pub threads: u32,
    /// Process grid `[X, Y, Z]`; `None` picks the most nearly cubic one.
    pub grid: Option<[u32; 3]>,
    /// Bytes per process-to-process message.
    pub message_bytes: u32,
}

impl Default for Pf3dOptions {
    fn default() -> Self {
        Self { threads: 32, grid: None, message_bytes: 32 << 10 }
    }
}

/// The most nearly cubic `X <= Y <= Z` with `X Y Z = n` (smallest `Z / X`, then largest `X`).
pub fn cubic_grid(n: u64) -> [u64; 3] {
    let mut best = [1, 1, n];
    for x in (1..=n).take_while(|x| x * x * x <= n) {
        if !n.is_multiple_of(x) {
            continue;
        }
        let rest = n / x;
        for y in (x..=rest).take_while(|y| y * y <= rest) {
            if !rest.is_multiple_of(y) {
                continue;
            }
            let z = rest / y;
            // z / x < best_z / best_x, or equal with a larger x.
            let (a, b) = (u128::from(z) * u128::from(best[0]), u128::from(best[2]) * u128::from(x));
            if a < b || (a == b && x > best[0]) {
                best = [x, y, z];
            }
        }
    }
    best
}

/// Checks the options against the torus and returns the grid and the number of
/// process-to-process messages, or a one-line reason.
pub fn plan(extents: &[u32], opts: &Pf3dOptions) -> Result<([u64; 3], u64), String> {
    if opts.threads == 0 || opts.threads > 64 {
        return Err(format!("threads={} must be 1 to 64 (a BG/Q node runs at most 64)", opts.threads));
    }
    if opts.message_bytes == 0 {
        return Err("bytes must be at least 1".into());
    }
    let nodes: u64 = extents.iter().map(|&e| u64::from(e)).product();
    let processes = nodes * u64::from(opts.threads);
    let grid = match opts.grid {
        Some(g) => {
            let g = g.map(u64::from);
            if g.iter().product::<u64>() != processes {
                return Err(format!(
                    "grid {}x{}x{} has {} cubes, but {nodes} nodes of {} threads run {processes} processes",
                    g[0],
                    g[1],
                    g[2],
                    g.iter().product::<u64>(),
                    opts.threads
                ));
            }
            g
        }
        None => cubic_grid(processes),
    };
    let messages = processes * (grid[0] - 1 + grid[1] - 1);
    if messages > MAX_PROCESS_MESSAGES {
        return Err(format!("would generate {messages} process messages, above the limit of {MAX_PROCESS_MESSAGES}"));
    }
    Ok((grid, messages))
}

/// Generates the traffic; see the module documentation.
pub fn generate(topology: Topology, opts: &Pf3dOptions) -> Result<Dataset, String> {
    let (grid, _) = plan(&topology.extents, opts)?;
    let [gx, gy, _] = grid;
    let threads = u64::from(opts.threads);
    let processes = grid.iter().product::<u64>();
    // Messages per (source node, destination node, phase).
    let mut pairs: HashMap<(u32, u32, u32), u64> = HashMap::new();
    for r in 0..processes {
        let (x, y, rest) = (r % gx, (r / gx) % gy, r / (gx * gy));
        let node = (r / threads) as u32;
        for x2 in (0..gx).filter(|&v| v != x) {
            let peer = x2 + gx * (y + gy * rest);
            *pairs.entry((node, (peer / threads) as u32, 0)).or_default() += 1;
        }
        for y2 in (0..gy).filter(|&v| v != y) {
            let peer = x + gx * (y2 + gy * rest);
            *pairs.entry((node, (peer / threads) as u32, 1)).or_default() += 1;
        }
    }
    let mut pairs: Vec<_> = pairs.into_iter().filter(|&((s, d, _), _)| s != d).collect();
    pairs.sort_unstable();

    let first = link_offsets(&topology);
    let n = topology.node_count() as u32;
    let packets_per_message = u64::from(opts.message_bytes.div_ceil(PACKET_BYTES));
    let mut packets: HashMap<(u32, u32), u64> = HashMap::new();
    let mut trace = Trace { ticks_per_second: 1, ..Default::default() };
    trace.locations.name = (0..n).map(|i| format!("node {i}")).collect();
    trace.locations.node = (0..n).collect();
    for &((s, d, phase), count) in &pairs {
        let m = &mut trace.messages;
        m.source.push(s);
        m.destination.push(d);
        m.send_time.push(u64::from(phase));
        m.recv_time.push(u64::from(phase) + 1);
        m.bytes.push(u32::try_from(count * u64::from(opts.message_bytes)).unwrap_or(u32::MAX));
        m.tag.push(phase);
        for link in route(&topology, &first, s, d) {
            *packets.entry((link, phase)).or_default() += count * packets_per_message;
        }
    }
    let mut packets: Vec<_> = packets.into_iter().collect();
    packets.sort_unstable();
    let lc = &mut trace.link_counters;
    for ((link, phase), mut value) in packets {
        // Counters are 32-bit: a larger total becomes several samples at the same time.
        while value > 0 {
            let part = value.min(u64::from(u32::MAX));
            lc.entity.push(link);
            lc.time.push(u64::from(phase));
            lc.value.push(part as u32);
            value -= part;
        }
    }
    Ok(Dataset { trace, topology: Some(topology), link_counter_unit: "packets".into(), ..Dataset::default() })
}

/// The links of the dimension-ordered route from node `s` to node `d` (see the module docs).
fn route(topology: &Topology, first: &[u32], s: u32, d: u32) -> Vec<u32> {
    let extents = &topology.extents;
    let target = topology.coord(d as usize).to_vec();
    let mut at = s;
    let mut links = Vec::new();
    for (dim, &e) in extents.iter().enumerate() {
        let here = topology.coord(at as usize)[dim];
        let ahead = (target[dim] + e - here) % e;
        let (step, hops) = if ahead * 2 <= e { (1, ahead) } else { (e - 1, e - ahead) };
        for _ in 0..hops {
            let mut c = topology.coord(at as usize).to_vec();
            c[dim] = (c[dim] + step) % e;
            let next = exaviz_model::torus::node_id(extents, &c);
            let range = first[at as usize] as usize..first[at as usize + 1] as usize;
            let link = range
                .into_iter()
                .find(|&l| topology.links.destination[l] == next)
                .expect("torus neighbours are linked");
            links.push(link as u32);
            at = next;
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::torus::torus;

    /// Packets per dimension, over all links and phases.
    fn per_dimension(d: &Dataset) -> Vec<u64> {
        let topo = d.topology.as_ref().unwrap();
        let mut sums = vec![0u64; topo.dims()];
        for (l, v) in d.trace.link_counters.entity.iter().zip(&d.trace.link_counters.value) {
            sums[topo.links.dimension[*l as usize] as usize] += u64::from(*v);
        }
        sums
    }

    #[test]
    fn default_grids_are_the_most_nearly_cubic() {
        assert_eq!(cubic_grid(8192), [16, 16, 32]);
        assert_eq!(cubic_grid(16384), [16, 32, 32]);
        assert_eq!(cubic_grid(27), [3, 3, 3]);
        assert_eq!(cubic_grid(7), [1, 1, 7]);
        assert_eq!(cubic_grid(1), [1, 1, 1]);
    }

    /// TorusTrafficND §VII: under the default mapping the traffic leans on dimension D and leaves A idle.
    #[test]
    fn default_mapping_favours_dimension_d_on_both_tori() {
        for dims in [[4, 4, 4, 4, 1], [4, 4, 4, 4, 2]] {
            let d = generate(torus(&dims), &Pf3dOptions::default()).unwrap();
            let sums = per_dimension(&d);
            let most = sums.iter().enumerate().max_by_key(|&(_, &v)| v).unwrap().0;
            assert_eq!(most, 3, "{dims:?}: packets per dimension {sums:?}");
            assert_eq!(sums[0], 0, "{dims:?}: {sums:?}");
            assert!(sums[3] >= 2 * sums[2], "{dims:?}: {sums:?}");
        }
    }

    /// Every link a message crosses gets its packets: the link totals equal the messages'
    /// hop counts (torus distance, dimension-ordered routes are shortest) times their packets.
    #[test]
    fn link_totals_match_the_messages_hops() {
        let topo = torus(&[4, 3, 2]);
        let opts = Pf3dOptions { threads: 2, grid: Some([4, 3, 4]), message_bytes: 1000 };
        let d = generate(topo.clone(), &opts).unwrap();
        let m = &d.trace.messages;
        let mut expected = 0u64;
        for i in 0..m.source.len() {
            let (a, b) = (topo.coord(m.source[i] as usize), topo.coord(m.destination[i] as usize));
            let hops: u64 = a
                .iter()
                .zip(b)
                .zip(&topo.extents)
                .map(|((&p, &q), &e)| u64::from(p.abs_diff(q).min(e - p.abs_diff(q))))
                .sum();
            expected += hops * u64::from(m.bytes[i] / 1000) * 2;
        }
        assert!(expected > 0);
        assert_eq!(d.trace.link_counters.value.iter().map(|&v| u64::from(v)).sum::<u64>(), expected);
        // Both phases appear, in time order 0 and 1.
        assert!(d.trace.link_counters.time.contains(&0) && d.trace.link_counters.time.contains(&1));
    }

    #[test]
    fn bad_options_are_refused_with_a_reason() {
        let e = plan(&[4, 4], &Pf3dOptions { grid: Some([4, 4, 4]), ..Default::default() }).unwrap_err();
        assert!(e.contains("64 cubes") && e.contains("512 processes"), "{e}");
        assert!(plan(&[4], &Pf3dOptions { threads: 65, ..Default::default() }).unwrap_err().contains("threads"));
        assert!(plan(&[64, 64, 64], &Pf3dOptions::default()).unwrap_err().contains("limit"));
    }
}
