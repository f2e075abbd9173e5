//! The ring's group filter (TorusTrafficND §V-B.2): a brushed set of bundles. A bundle is the set of
//! channels between two Hilbert blocks (or within one), so a group is a set of block pairs.
//! Blocks are numbered from 1 as the ring labels them.

/// Most blocks a group can name (pairs are kept as a 64 x 64 bit matrix).
pub const MAX_GROUP_BLOCKS: u32 = 64;

/// A set of unordered block pairs `{i, j}` (0-based, below [`MAX_GROUP_BLOCKS`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BundleGroup {
    /// Row `i`, bit `j`: the pair `{i, j}` with `i <= j`.
    rows: [u64; MAX_GROUP_BLOCKS as usize],
}

impl Default for BundleGroup {
    fn default() -> Self {
        Self { rows: [0; MAX_GROUP_BLOCKS as usize] }
    }
}

impl std::fmt::Debug for BundleGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BundleGroup({})", self.describe())
    }
}

impl BundleGroup {
    /// Adds the bundle between blocks `a` and `b` (0-based); pairs beyond the limit are ignored.
    pub fn insert(&mut self, a: u32, b: u32) {
        let (i, j) = (a.min(b), a.max(b));
        if j < MAX_GROUP_BLOCKS {
            self.rows[i as usize] |= 1 << j;
        }
    }

    /// Whether the bundle between blocks `a` and `b` (0-based, either order) is in the group.
    pub fn contains(&self, a: u32, b: u32) -> bool {
        let (i, j) = (a.min(b), a.max(b));
        j < MAX_GROUP_BLOCKS && self.rows[i as usize] >> j & 1 == 1
    }

    pub fn is_empty(&self) -> bool {
        self.rows.iter().all(|&r| r == 0)
    }

    /// The pairs `(i, j)`, `i <= j`, 0-based, in order.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        (0..MAX_GROUP_BLOCKS)
            .flat_map(|i| (i..MAX_GROUP_BLOCKS).map(move |j| (i, j)))
            .filter(|&(i, j)| self.contains(i, j))
            .collect()
    }

    /// The highest block named (0-based), if any.
    pub fn max_block(&self) -> Option<u32> {
        self.pairs().iter().map(|&(_, j)| j).max()
    }

    /// Parses `1-3,2-2,...`: bundles between the blocks numbered as on the ring (from 1); `4`
    /// alone is the bundle within block 4.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut g = Self::default();
        for term in spec.split(',').map(str::trim) {
            let num = |v: &str| {
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&b| (1..=MAX_GROUP_BLOCKS).contains(&b))
                    .ok_or_else(|| format!("'{v}' in '{spec}' is not a block number from 1 to {MAX_GROUP_BLOCKS}"))
            };
            let (a, b) = match term.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(term)?, num(term)?),
            };
            g.insert(a - 1, b - 1);
        }
        Ok(g)
    }

    /// The group as written on the command line: `1-3,2-2`.
    pub fn describe(&self) -> String {
        let pairs: Vec<String> = self.pairs().iter().map(|&(i, j)| format!("{}-{}", i + 1, j + 1)).collect();
        pairs.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_parse_describe_and_hold_unordered_pairs() {
        let g = BundleGroup::parse("3-1, 2,8-8").unwrap();
        assert_eq!(g.pairs(), vec![(0, 2), (1, 1), (7, 7)]);
        assert!(g.contains(2, 0) && g.contains(0, 2) && !g.contains(0, 1));
        assert_eq!(g.describe(), "1-3,2-2,8-8");
        assert_eq!(g.max_block(), Some(7));
        assert_eq!(BundleGroup::parse(&g.describe()).unwrap(), g);
        assert!(BundleGroup::parse("0-2").unwrap_err().contains("'0'"));
        assert!(BundleGroup::parse("1-65").unwrap_err().contains("1 to 64"));
        assert!(BundleGroup::parse("1-x").is_err());
        assert!(BundleGroup::default().is_empty() && !g.is_empty());
    }
}
