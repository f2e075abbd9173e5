//! Node selection by coordinates: TorusVisND's node selector (§V, Fig. 10: "only nodes with
//! specific values in the third and fifth coordinates") and TorusTrafficND's dimension-value filter.
//! A selection such as `B=1,D=0-2` keeps the nodes whose coordinate in dimension B is 1 and in
//! dimension D is 0, 1 or 2; dimensions not named are free.

use crate::Topology;

/// Most dimensions a selection can name.
pub const MAX_DIMS: usize = 8;

/// Per named dimension, an inclusive range of coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimFilter {
    /// `(dimension, name as written, lo, hi)` for the first `len` entries.
    terms: [(u8, u8, u32, u32); MAX_DIMS],
    len: usize,
}

impl DimFilter {
    /// Parses `DIM=V[-W],...`, where DIM is a letter as the views label dimensions (A to E for
    /// five, X to Z for up to three) or `d1`, `d2`, ... for any count.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut f = Self::empty();
        for term in spec.split(',').map(str::trim) {
            let (dim, values) =
                term.split_once('=').ok_or_else(|| format!("'{term}' is not DIM=VALUE or DIM=FROM-TO"))?;
            let dim = dim.trim();
            let (index, name) = match dim.as_bytes() {
                [c @ b'A'..=b'E'] | [c @ b'a'..=b'e'] => (c.to_ascii_uppercase() - b'A', c.to_ascii_uppercase()),
                [c @ b'X'..=b'Z'] | [c @ b'x'..=b'z'] => (c.to_ascii_uppercase() - b'X', c.to_ascii_uppercase()),
                [b'd' | b'D', rest @ ..] => {
                    let k: u8 = std::str::from_utf8(rest)
                        .ok()
                        .and_then(|r| r.parse().ok())
                        .filter(|&k| (1..=MAX_DIMS as u8).contains(&k))
                        .ok_or_else(|| format!("'{dim}' is not a dimension (d1 to d{MAX_DIMS})"))?;
                    (k - 1, b'd')
                }
                _ => return Err(format!("'{dim}' is not a dimension (A to E, X to Z, or d1, d2, ...)")),
            };
            let num = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("'{v}' in '{term}' is not a whole number"));
            let (lo, hi) = match values.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(values)?, num(values)?),
            };
            if lo > hi {
                return Err(format!("'{term}' is empty: {lo} is above {hi}"));
            }
            if f.terms[..f.len].iter().any(|t| t.0 == index) {
                return Err(format!("dimension {dim} is named twice in '{spec}'"));
            }
            if f.len == MAX_DIMS {
                return Err(format!("'{spec}' names more than {MAX_DIMS} dimensions"));
            }
            f.terms[f.len] = (index, name, lo, hi);
            f.len += 1;
        }
        Ok(f)
    }

    /// Checks the selection against a torus: every named dimension exists under the name the
    /// views give it, and every range meets the torus.
    pub fn check(&self, topo: &Topology) -> Result<(), String> {
        let dims = topo.dims();
        for &(d, name, lo, _) in &self.terms[..self.len] {
            let d = usize::from(d);
            let label = dim_letter(d.min(dims.saturating_sub(1)), dims);
            let written = if name == b'd' { format!("d{}", d + 1) } else { char::from(name).to_string() };
            if d >= dims || (name != b'd' && label != written) {
                let names: Vec<String> = (0..dims).map(|k| dim_letter(k, dims)).collect();
                return Err(format!("the {}-D torus has no dimension {written} (it has {})", dims, names.join(", ")));
            }
            if lo >= topo.extents[d] {
                return Err(format!(
                    "{written}={lo} is outside the torus ({written} runs 0 to {})",
                    topo.extents[d] - 1
                ));
            }
        }
        Ok(())
    }

    pub fn matches(&self, coord: &[u32]) -> bool {
        self.terms[..self.len]
            .iter()
            .all(|&(d, _, lo, hi)| coord.get(usize::from(d)).is_some_and(|c| (lo..=hi).contains(c)))
    }

    /// The selected nodes, in id order.
    pub fn nodes(&self, topo: &Topology) -> Vec<u32> {
        (0..topo.node_count()).filter(|&v| self.matches(topo.coord(v))).map(|v| v as u32).collect()
    }

    /// No dimension is named.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The range named for dimension `dim`, if any.
    pub fn range(&self, dim: usize) -> Option<(u32, u32)> {
        self.terms[..self.len].iter().find(|t| usize::from(t.0) == dim).map(|t| (t.2, t.3))
    }

    /// Names dimension `dim` of a `dims`-D torus (as the views label it), replacing its range if
    /// it was named. Dimensions past [`MAX_DIMS`] cannot be named and are left free.
    pub fn set(&mut self, dim: usize, dims: usize, lo: u32, hi: u32) {
        let name = match dims {
            5 => b'A' + dim as u8,
            1..=3 => b'X' + dim as u8,
            _ => b'd',
        };
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        if let Some(t) = self.terms[..self.len].iter_mut().find(|t| usize::from(t.0) == dim) {
            *t = (dim as u8, name, lo, hi);
        } else if dim < MAX_DIMS && self.len < MAX_DIMS {
            self.terms[self.len] = (dim as u8, name, lo, hi);
            self.len += 1;
        }
    }

    /// Frees dimension `dim`.
    pub fn remove(&mut self, dim: usize) {
        if let Some(i) = self.terms[..self.len].iter().position(|t| usize::from(t.0) == dim) {
            self.terms.copy_within(i + 1..self.len, i);
            self.len -= 1;
            // Unused slots stay zero, so that equal selections compare equal.
            self.terms[self.len] = (0, 0, 0, 0);
        }
    }

    /// A selection naming no dimension (every node matches).
    pub fn empty() -> Self {
        Self { terms: [(0, 0, 0, 0); MAX_DIMS], len: 0 }
    }

    /// As written for a subtitle: `B=1, D=0-2`.
    pub fn describe(&self) -> String {
        let terms: Vec<String> = self.terms[..self.len]
            .iter()
            .map(|&(d, name, lo, hi)| {
                let dim = if name == b'd' { format!("d{}", d + 1) } else { char::from(name).to_string() };
                if lo == hi { format!("{dim}={lo}") } else { format!("{dim}={lo}-{hi}") }
            })
            .collect();
        terms.join(", ")
    }
}

/// The nodes a view highlights: one node (`--node`), a coordinate selection (`--select`), both
/// (their intersection), or none. Checked against the torus; `Ok(None)` when nothing is chosen.
pub fn selected_nodes(
    topo: &Topology,
    node: Option<u32>,
    select: Option<&DimFilter>,
) -> Result<Option<Vec<u32>>, String> {
    let n = topo.node_count();
    if let Some(node) = node.filter(|&v| v as usize >= n) {
        return Err(format!("node {node} is not in the torus (nodes 0 to {})", n - 1));
    }
    if let Some(f) = select {
        f.check(topo)?;
    }
    Ok(match (node, select) {
        (None, None) => None,
        (Some(v), None) => Some(vec![v]),
        (None, Some(f)) => Some(f.nodes(topo)),
        (Some(v), Some(f)) => Some(if f.matches(topo.coord(v as usize)) { vec![v] } else { Vec::new() }),
    })
}

/// Dimension names: Blue Gene's A, B, C, D, E for five dimensions, else X, Y, Z (and d1, d2, ...).
pub fn dim_letter(d: usize, dims: usize) -> String {
    match dims {
        5 => ["A", "B", "C", "D", "E"][d].into(),
        1..=3 => ["X", "Y", "Z"][d].into(),
        _ => format!("d{}", d + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torus(extents: &[u32]) -> Topology {
        crate::torus::torus(extents)
    }

    #[test]
    fn parses_checks_and_selects() {
        let t = torus(&[4, 4, 4, 4, 2]);
        let f = DimFilter::parse("B=1, d4=0-1").unwrap();
        f.check(&t).unwrap();
        let nodes = f.nodes(&t);
        assert_eq!(nodes.len(), 512 / 4 / 2);
        assert!(nodes.iter().all(|&v| t.coord(v as usize)[1] == 1 && t.coord(v as usize)[3] <= 1));
        assert_eq!(f.describe(), "B=1, d4=0-1");
        for (bad, says) in [
            ("B", "not DIM=VALUE"),
            ("Q=1", "not a dimension"),
            ("B=x", "not a whole number"),
            ("B=3-1", "empty"),
            ("B=1,B=2", "twice"),
            ("d0=1", "not a dimension"),
        ] {
            assert!(DimFilter::parse(bad).unwrap_err().contains(says), "{bad}");
        }
        let e = |spec: &str, t: &Topology| DimFilter::parse(spec).unwrap().check(t).unwrap_err();
        assert!(e("X=1", &t).contains("no dimension X"));
        assert!(e("A=4", &t).contains("outside the torus"));
        assert!(e("d6=0", &t).contains("no dimension d6"));
        let small = torus(&[4, 4, 4]);
        assert!(e("A=1", &small).contains("no dimension A (it has X, Y, Z)"));
        assert_eq!(selected_nodes(&small, Some(5), Some(&DimFilter::parse("X=0").unwrap())).unwrap(), Some(vec![5]));
        assert_eq!(selected_nodes(&small, Some(16), Some(&DimFilter::parse("X=0").unwrap())).unwrap(), Some(vec![]));
        assert!(selected_nodes(&small, Some(64), None).unwrap_err().contains("node 64 is not in the torus"));
    }

    #[test]
    fn set_and_remove_name_dimensions_as_the_views_do() {
        let t = torus(&[4, 4, 4, 4, 2]);
        let mut f = DimFilter::empty();
        assert!(f.is_empty() && f.nodes(&t).len() == 512);
        f.set(3, 5, 2, 1);
        f.set(1, 5, 0, 0);
        assert_eq!(f.describe(), "D=1-2, B=0");
        f.set(3, 5, 3, 3);
        assert_eq!((f.describe(), f.range(3), f.range(0)), ("D=3, B=0".into(), Some((3, 3)), None));
        f.check(&t).unwrap();
        assert_eq!(f, DimFilter::parse("D=3,B=0").unwrap());
        f.remove(3);
        assert_eq!(f.describe(), "B=0");
        f.remove(1);
        assert!(f.is_empty());
        let mut g = DimFilter::empty();
        g.set(2, 4, 1, 1);
        assert_eq!(g.describe(), "d3=1");
        g.check(&torus(&[4, 4, 4, 4])).unwrap();
    }
}
