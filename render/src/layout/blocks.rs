//! TorusTrafficND's Hilbert block hierarchy on the ring (§V-A.2, §V-B): the nodes, in ring order, cut
//! into `m` contiguous blocks of `s = N / m` nodes (`m` even, `N mod m = 0`). Along a Hilbert
//! ordering a block is a compact piece of the torus.
//!
//! From it, the ring's two block bundlings build control polygons for the B-spline stage:
//! - block-based (§V-B.1): the channels between the same two blocks form a group and are drawn
//!   through the group's centre (the mean of their midpoints), fanning out near their blocks;
//! - hierarchical (Holten 2006) along a tree of ring segments: nodes, sub-blocks (halves of a
//!   block, up to three levels while they divide evenly), the blocks, pairs of neighbouring blocks
//!   merged while their count stays even, and the root. A channel's polygon climbs from one node
//!   to the smallest segment holding both ends and descends to the other.
//!
//! Positions are given along the ring in nodes (fractional for a segment's centre) and a radius
//! fraction (1 on the ring, 0 at the centre); the caller's `place` maps them to the picture.

use exaviz_compute::bspline::ControlPolygons;

/// How the blocks of a channel's two ends relate along the ring (TorusTrafficND Fig. 8a).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relation {
    /// Both ends in one block.
    Intra,
    /// Neighbouring blocks along the ring (the first and last blocks are neighbours).
    Adjacent,
    /// Blocks this many blocks apart along the ring (2 or more, the shorter way round).
    Remote(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocks {
    nodes: u32,
    count: u32,
}

impl Blocks {
    /// `m` blocks over `n` ring positions: `m` even, at least 2, dividing `n`.
    pub fn new(n: u32, m: u32) -> Result<Self, String> {
        if m < 2 || !m.is_multiple_of(2) {
            return Err(format!("the block count must be even and at least 2, not {m}"));
        }
        if !n.is_multiple_of(m) || m > n {
            return Err(format!("{m} blocks do not divide {n} nodes evenly"));
        }
        Ok(Self { nodes: n, count: m })
    }

    /// The default: 8 blocks (TorusTrafficND's usual choice) where they divide the ring into blocks of
    /// at least 4 nodes, else 4, else none.
    pub fn auto(n: u32) -> Option<Self> {
        [8, 4].into_iter().find(|&m| n.is_multiple_of(m) && n / m >= 4).and_then(|m| Self::new(n, m).ok())
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// Nodes per block.
    pub fn size(&self) -> u32 {
        self.nodes / self.count
    }

    /// The block of ring position `p`.
    pub fn of(&self, p: u32) -> u32 {
        p / self.size()
    }

    /// The relation of the blocks of ring positions `a` and `b`.
    pub fn relation(&self, a: u32, b: u32) -> Relation {
        let (x, y) = (self.of(a), self.of(b));
        let d = x.abs_diff(y);
        match d.min(self.count - d) {
            0 => Relation::Intra,
            1 => Relation::Adjacent,
            d => Relation::Remote(d),
        }
    }

    /// Segment lengths of the hierarchy, from the nodes (1) to the root (`N`), increasing.
    pub fn levels(&self) -> Vec<u32> {
        let s = self.size();
        let mut sizes = vec![1];
        for k in (1..=3).rev() {
            let sub = s >> k;
            if sub > 1 && s.is_multiple_of(1 << k) && sub > *sizes.last().unwrap_or(&1) {
                sizes.push(sub);
            }
        }
        if s > 1 {
            sizes.push(s);
        }
        let mut z = s;
        while (self.nodes / z).is_multiple_of(2) && z * 2 < self.nodes {
            z *= 2;
            sizes.push(z);
        }
        sizes.push(self.nodes);
        sizes.dedup();
        sizes
    }

    /// Holten's control polygon of the channel between ring positions `a` and `b` through the
    /// segment tree; segment centres sit at radius `1 - level / top`.
    pub fn tree_polygon(&self, a: u32, b: u32, place: &impl Fn(f32, f32) -> [f32; 2]) -> Vec<[f32; 2]> {
        let levels = self.levels();
        let top = (levels.len() - 1) as f32;
        let centre = |p: u32, l: usize| {
            let z = levels[l];
            let start = (p / z) * z;
            place(start as f32 + (z - 1) as f32 / 2.0, 1.0 - l as f32 / top)
        };
        let lca = levels.iter().position(|&z| a / z == b / z).unwrap_or(levels.len() - 1);
        let mut polygon: Vec<[f32; 2]> = (0..lca).map(|l| centre(a, l)).collect();
        polygon.push(centre(a, lca));
        polygon.extend((0..lca).rev().map(|l| centre(b, l)));
        polygon
    }

    /// TorusTrafficND's block-based bundling of channels `(a, b)` (ring positions): per group of
    /// channels between the same two blocks, the centre `C` of their midpoints; a channel within
    /// one block is the polygon `a, C, b`, one between blocks `a, A', C, B', b`, where `A'` and
    /// `B'` lie halfway from the mean of the group's ends in each block to `C`.
    pub fn group_polygons(&self, channels: &[(u32, u32)], place: &impl Fn(f32, f32) -> [f32; 2]) -> ControlPolygons {
        use std::collections::HashMap;
        #[derive(Default)]
        struct Group {
            mid: [f64; 2],
            ends: [[f64; 2]; 2],
            count: f64,
        }
        let key = |a: u32, b: u32| {
            let (x, y) = (self.of(a), self.of(b));
            (x.min(y), x.max(y))
        };
        let ends: Vec<([f32; 2], [f32; 2])> =
            channels.iter().map(|&(a, b)| (place(a as f32, 1.0), place(b as f32, 1.0))).collect();
        let mut groups: HashMap<(u32, u32), Group> = HashMap::new();
        for (&(a, b), &(pa, pb)) in channels.iter().zip(&ends) {
            let (lo, hi) = if self.of(a) <= self.of(b) { (pa, pb) } else { (pb, pa) };
            let g = groups.entry(key(a, b)).or_default();
            g.mid[0] += f64::from(pa[0] + pb[0]) / 2.0;
            g.mid[1] += f64::from(pa[1] + pb[1]) / 2.0;
            for (end, p) in g.ends.iter_mut().zip([lo, hi]) {
                end[0] += f64::from(p[0]);
                end[1] += f64::from(p[1]);
            }
            g.count += 1.0;
        }
        let mut polygons = ControlPolygons::new();
        for (&(a, b), &(pa, pb)) in channels.iter().zip(&ends) {
            let g = &groups[&key(a, b)];
            let c = [(g.mid[0] / g.count) as f32, (g.mid[1] / g.count) as f32];
            if self.of(a) == self.of(b) {
                polygons.push([pa, c, pb]);
                continue;
            }
            let half = |e: [f64; 2]| {
                let m = [(e[0] / g.count) as f32, (e[1] / g.count) as f32];
                [(m[0] + c[0]) / 2.0, (m[1] + c[1]) / 2.0]
            };
            let (near_a, near_b) = if self.of(a) < self.of(b) {
                (half(g.ends[0]), half(g.ends[1]))
            } else {
                (half(g.ends[1]), half(g.ends[0]))
            };
            polygons.push([pa, near_a, c, near_b, pb]);
        }
        polygons
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_need_an_even_count_dividing_the_ring() {
        assert!(Blocks::new(1024, 8).is_ok());
        assert!(Blocks::new(512, 12).is_err(), "512 mod 12 != 0");
        assert!(Blocks::new(96, 12).is_ok());
        assert!(Blocks::new(100, 5).is_err(), "odd");
        assert!(Blocks::new(4, 8).is_err());
        assert_eq!(Blocks::auto(1024).map(|b| b.count()), Some(8));
        assert_eq!(Blocks::auto(16).map(|b| b.count()), Some(4));
        assert_eq!(Blocks::auto(15), None);
    }

    #[test]
    fn relations_follow_the_ring() {
        let b = Blocks::new(64, 8).unwrap();
        assert_eq!(b.relation(0, 7), Relation::Intra);
        assert_eq!(b.relation(0, 8), Relation::Adjacent);
        assert_eq!(b.relation(0, 63), Relation::Adjacent, "the first and last blocks are neighbours");
        assert_eq!(b.relation(3, 40), Relation::Remote(3));
        assert_eq!(b.relation(3, 35), Relation::Remote(4));
    }

    #[test]
    fn tree_polygons_climb_to_the_common_segment() {
        let b = Blocks::new(1024, 8).unwrap();
        // 128-node blocks: sub-blocks of 16, 32, 64; blocks; pairs and quarters; the root.
        assert_eq!(b.levels(), vec![1, 16, 32, 64, 128, 256, 512, 1024]);
        assert_eq!(Blocks::new(96, 12).unwrap().levels(), vec![1, 2, 4, 8, 16, 32, 96]);
        let place = |p: f32, r: f32| [p, r];
        // Neighbours in one 16-node sub-block: node, sub-block centre, node.
        assert_eq!(b.tree_polygon(0, 1, &place), vec![[0.0, 1.0], [7.5, 1.0 - 1.0 / 7.0], [1.0, 1.0]]);
        // Opposite halves of the ring meet at the root, in the centre.
        let poly = b.tree_polygon(0, 1000, &place);
        assert_eq!(poly.len(), 15);
        assert_eq!(poly[7], [511.5, 0.0]);
        assert_eq!((poly[0], poly[14]), ([0.0, 1.0], [1000.0, 1.0]));
    }

    #[test]
    fn groups_share_their_centre() {
        let b = Blocks::new(16, 4).unwrap();
        let place = |p: f32, r: f32| [p * r, 0.0];
        let polys = b.group_polygons(&[(0, 5), (1, 6), (2, 3)], &place);
        assert_eq!(polys.len(), 3);
        let edge = |e: usize| &polys.points[polys.offsets[e] as usize..polys.offsets[e + 1] as usize];
        // Blocks 0 and 1: centre of midpoints (2.5 + 3.5) / 2 = 3; ends' means 0.5 and 5.5.
        assert_eq!(edge(0), &[[0.0, 0.0], [1.75, 0.0], [3.0, 0.0], [4.25, 0.0], [5.0, 0.0]]);
        assert_eq!(edge(1)[2], [3.0, 0.0]);
        assert_eq!(edge(2), &[[2.0, 0.0], [2.5, 0.0], [3.0, 0.0]]);
    }
}
