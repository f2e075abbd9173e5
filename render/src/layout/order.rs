//! Node orderings of N-D tori onto a ring (TorusVisND §IV): sequential (row-major, the last
//! dimension fastest) and Hilbert.
//!
//! Hilbert: Skilling's N-D Hilbert curve ("Programming the Hilbert curve", 2004), exact where all
//! extents are the same power of two. For other shapes the torus is embedded in the smallest
//! power-of-two cube holding every extent, dimensions of extent 1 are dropped, and nodes are
//! sorted by the Hilbert index of their coordinates in that cube (a "sparse" Hilbert order):
//! consecutive nodes stay close but may not be neighbours where the cube has holes.

use exaviz_model::Topology;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ordering {
    Sequential,
    #[default]
    Hilbert,
}

impl std::str::FromStr for Ordering {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sequential" => Ok(Self::Sequential),
            "hilbert" => Ok(Self::Hilbert),
            _ => Err(format!("unknown order '{s}' (expected hilbert or sequential)")),
        }
    }
}

impl Ordering {
    pub fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Hilbert => "hilbert",
        }
    }
}

/// Skilling's AxestoTranspose: coordinates (each < 2^bits) to the transposed Hilbert index.
pub fn axes_to_transpose(x: &mut [u32], bits: u32) {
    let n = x.len();
    if n == 0 || bits == 0 {
        return;
    }
    let m = 1u32 << (bits - 1);
    // Inverse undo excess work.
    let mut q = m;
    while q > 1 {
        let p = q - 1;
        for i in 0..n {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode.
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    let mut q = m;
    while q > 1 {
        if x[n - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in x.iter_mut() {
        *v ^= t;
    }
}

/// The Hilbert index of `coord` in a cube of side 2^bits, as big-endian 64-bit words.
pub fn hilbert_key(coord: &[u32], bits: u32) -> Vec<u64> {
    let mut x = coord.to_vec();
    axes_to_transpose(&mut x, bits);
    let total = bits as usize * x.len();
    let mut words = vec![0u64; total.div_ceil(64).max(1)];
    let mut k = 0usize;
    let pad = words.len() * 64 - total;
    for b in (0..bits).rev() {
        for v in &x {
            let pos = pad + k;
            words[pos / 64] |= u64::from((v >> b) & 1) << (63 - pos % 64);
            k += 1;
        }
    }
    words
}

/// Ring order: `order[i]` is the node at ring position `i`.
pub fn order_nodes(topology: &Topology, ordering: Ordering) -> Vec<u32> {
    let n = topology.node_count() as u32;
    match ordering {
        Ordering::Sequential => (0..n).collect(),
        Ordering::Hilbert => {
            let live: Vec<usize> = (0..topology.dims()).filter(|&d| topology.extents[d] > 1).collect();
            let max = live.iter().map(|&d| topology.extents[d]).max().unwrap_or(1);
            let bits = 32 - (max - 1).leading_zeros();
            let mut keyed: Vec<(Vec<u64>, u32)> = (0..n)
                .map(|i| {
                    let c = topology.coord(i as usize);
                    let sub: Vec<u32> = live.iter().map(|&d| c[d]).collect();
                    (hilbert_key(&sub, bits), i)
                })
                .collect();
            keyed.sort_unstable();
            keyed.into_iter().map(|(_, i)| i).collect()
        }
    }
}

/// Inverse permutation: `position[node]` on the ring.
pub fn positions(order: &[u32]) -> Vec<u32> {
    let mut pos = vec![0u32; order.len()];
    for (i, &node) in order.iter().enumerate() {
        pos[node as usize] = i as u32;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::test_torus as cube;

    #[test]
    fn hilbert_visits_every_node_once_and_steps_to_a_neighbour() {
        for ext in [vec![4, 4], vec![8, 8, 8], vec![4, 4, 4, 4, 4], vec![2, 2, 2, 2]] {
            let t = cube(&ext);
            let order = order_nodes(&t, Ordering::Hilbert);
            let mut seen = order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..t.node_count() as u32).collect::<Vec<_>>());
            for w in order.windows(2) {
                let (a, b) = (t.coord(w[0] as usize), t.coord(w[1] as usize));
                let manhattan: u32 = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).sum();
                assert_eq!(manhattan, 1, "{ext:?}: {a:?} -> {b:?}");
            }
        }
    }

    #[test]
    fn non_cubic_shapes_get_a_complete_order() {
        let t = cube(&[6, 5, 4, 3, 2]);
        let order = order_nodes(&t, Ordering::Hilbert);
        assert_eq!(positions(&order).len(), 720);
        let mut seen = order;
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 720);
    }
}
