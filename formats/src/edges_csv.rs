//! Edge and segment lists as CSV: a header naming `x0,y0,x1,y1` (any order, other columns
//! ignored) and an optional `weight`, then one edge per line. Read line by line; every error
//! names the file and the line.

use std::io::BufRead;
use std::path::Path;

use exaviz_model::source::SourceError;

/// Parsed edges and, when the file has a `weight` column, their weights.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeList {
    pub edges: Vec<[f32; 4]>,
    pub weights: Option<Vec<f32>>,
}

impl EdgeList {
    /// Weights quantised to integers 0..=1000 relative to the largest (the stages' input).
    pub fn quantised_weights(&self) -> Option<Vec<u32>> {
        let w = self.weights.as_ref()?;
        let max = w.iter().copied().fold(0.0f32, f32::max);
        Some(w.iter().map(|&v| if max > 0.0 { (v / max * 1000.0).round() as u32 } else { 1 }).collect())
    }
}

/// Most edges `gen:circle` makes.
pub const MAX_CIRCLE_EDGES: u64 = 50_000_000;

/// Opens an edge list: a CSV path, or
/// `gen:circle?edges=N&kind=structured|random|communities&nodes=1024&seed=1`, the bundling
/// benchmark sets: `nodes` on a circle of radius 500 around (512, 512); random endpoints,
/// structured ones (70% stencil neighbours i±1 and i±32, 20% to node 0, 10% random), or two
/// communities (the circle's halves) with four hubs each (60% of edges from a node to a hub of
/// its community, 25% within the community, 15% to a hub of the other).
pub fn open(input: &str) -> Result<EdgeList, SourceError> {
    let Some(spec) = input.strip_prefix("gen:") else { return read(Path::new(input)) };
    let (name, q) = exaviz_model::query::Query::split(input, spec)?;
    if name != "circle" {
        return Err(SourceError::invalid(input, format!("unknown edge generator '{name}' (available: circle)")));
    }
    q.only(&["edges", "kind", "nodes", "seed"], "gen:circle")?;
    let num = |k: &str, default: u64, max: u64| -> Result<u64, SourceError> {
        match q.get(k) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
                SourceError::invalid(input, format!("option {k}={v} must be a whole number from 1 to {max}"))
            }),
        }
    };
    let (edges, nodes, seed) =
        (num("edges", 10_000, MAX_CIRCLE_EDGES)?, num("nodes", 1024, 1 << 24)?, num("seed", 1, u64::MAX)?);
    let kind = q.get("kind").unwrap_or("structured").to_string();
    if !["structured", "random", "communities"].contains(&kind.as_str()) {
        return Err(SourceError::invalid(input, format!("kind={kind}: expected structured, random or communities")));
    }
    let kind = match kind.as_str() {
        "random" => CircleKind::Random,
        "communities" => CircleKind::Communities,
        _ => CircleKind::Structured,
    };
    Ok(circle(edges as usize, kind, nodes as u32, seed))
}

/// Which `gen:circle` set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CircleKind {
    Random,
    Structured,
    Communities,
}

/// The `gen:circle` edge set.
pub fn circle(edges: usize, kind: CircleKind, nodes: u32, seed: u64) -> EdgeList {
    let mut rng = exaviz_model::rng::SplitMix64(seed);
    let xy = |i: u32| {
        let a = std::f64::consts::TAU * f64::from(i) / f64::from(nodes);
        [(512.0 + 500.0 * a.cos()) as f32, (512.0 + 500.0 * a.sin()) as f32]
    };
    let list = (0..edges)
        .map(|_| {
            let a = rng.below(nodes);
            let half = (nodes / 2).max(1);
            let hub = |community: u32, k: u32| (community * half + k * (half / 4).max(1) + half / 8) % nodes;
            let b = if kind == CircleKind::Random {
                rng.below(nodes)
            } else if kind == CircleKind::Communities {
                let own = (a / half).min(1);
                let r = rng.unit();
                if r < 0.6 {
                    hub(own, rng.below(4))
                } else if r < 0.85 {
                    (own * half + rng.below(half)) % nodes
                } else {
                    hub(1 - own, rng.below(4))
                }
            } else {
                let r = rng.unit();
                if r < 0.7 {
                    let step = [1, nodes - 1, 32 % nodes, nodes - 32 % nodes][rng.below(4) as usize];
                    (a + step) % nodes
                } else if r < 0.9 {
                    0
                } else {
                    rng.below(nodes)
                }
            };
            let (p, q) = (xy(a), xy(b));
            [p[0], p[1], q[0], q[1]]
        })
        .collect();
    EdgeList { edges: list, weights: None }
}

pub fn read(path: &Path) -> Result<EdgeList, SourceError> {
    let input = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| SourceError::Io { input: input.clone(), source })?;
    parse(std::io::BufReader::new(file), &input)
}

pub fn parse(reader: impl BufRead, input: &str) -> Result<EdgeList, SourceError> {
    let mut lines = reader.lines().enumerate();
    let header = loop {
        match lines.next() {
            None => return Err(SourceError::invalid(input, "empty file: expected a header with x0,y0,x1,y1")),
            Some((n, line)) => {
                let line = line.map_err(|e| SourceError::invalid(input, format!("line {}: {e}", n + 1)))?;
                if !line.trim().is_empty() {
                    break line;
                }
            }
        }
    };
    let names: Vec<String> = header.split(',').map(|c| c.trim().trim_matches('"').to_ascii_lowercase()).collect();
    let col = |name: &str| names.iter().position(|c| c == name);
    // Points (x,y) read as segments of no length.
    let ends = match (col("x0"), col("y0"), col("x1"), col("y1")) {
        (Some(a), Some(b), Some(c), Some(d)) => Some((a, b, c, d)),
        _ => col("x").zip(col("y")).map(|(x, y)| (x, y, x, y)),
    };
    let Some((x0, y0, x1, y1)) = ends else {
        return Err(SourceError::invalid(
            input,
            format!("line 1: header '{header}' lacks one of x0,y0,x1,y1 (or x,y for points)"),
        ));
    };
    let weight = col("weight");
    let mut out = EdgeList { edges: Vec::new(), weights: weight.map(|_| Vec::new()) };
    for (n, line) in lines {
        let line_no = n + 1;
        let line = line.map_err(|e| SourceError::invalid(input, format!("line {line_no}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != names.len() {
            return Err(SourceError::invalid(
                input,
                format!("line {line_no}: {} fields, the header has {}", fields.len(), names.len()),
            ));
        }
        let num = |i: usize, what: &str| -> Result<f32, SourceError> {
            let t = fields[i].trim();
            t.parse::<f32>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                SourceError::invalid(input, format!("line {line_no}: {what} '{t}' is not a finite number"))
            })
        };
        out.edges.push([num(x0, "x0")?, num(y0, "y0")?, num(x1, "x1")?, num(y1, "y1")?]);
        if let (Some(i), Some(w)) = (weight, out.weights.as_mut()) {
            let v = num(i, "weight")?;
            if v < 0.0 {
                return Err(SourceError::invalid(input, format!("line {line_no}: weight {v} is negative")));
            }
            w.push(v);
        }
    }
    Ok(out)
}

/// Reads curves from any tool: a CSV with a header naming `edge_id`, `x` and `y` (other columns
/// ignored), a row per point, each edge's points in order (edges in any order; an id written
/// `3.0` is 3). Every id must be below `edges` and every edge must have at least two points.
pub fn read_curves(path: &Path, edges: usize) -> Result<exaviz_model::curves::Curves, SourceError> {
    let input = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| SourceError::Io { input: input.clone(), source })?;
    parse_curves(std::io::BufReader::new(file), &input, edges)
}

pub fn parse_curves(
    reader: impl BufRead,
    input: &str,
    edges: usize,
) -> Result<exaviz_model::curves::Curves, SourceError> {
    let bad = |m: String| SourceError::invalid(input, m);
    let mut lines = reader.lines().enumerate();
    let header = match lines.next() {
        Some((_, Ok(h))) => h,
        Some((_, Err(e))) => return Err(bad(format!("line 1: {e}"))),
        None => return Err(bad("empty file: expected a header with edge_id,x,y".into())),
    };
    let names: Vec<String> = header.split(',').map(|c| c.trim().trim_matches('"').to_ascii_lowercase()).collect();
    let col = |name: &str| names.iter().position(|c| c == name);
    let (Some(ci), Some(cx), Some(cy)) = (col("edge_id"), col("x"), col("y")) else {
        return Err(bad(format!("line 1: header '{header}' lacks one of edge_id,x,y")));
    };
    // (edge, row order, point), sorted by edge at the end; rows of an edge keep their order.
    let mut rows: Vec<(u32, [f32; 2])> = Vec::new();
    for (n, line) in lines {
        let line_no = n + 1;
        let line = line.map_err(|e| bad(format!("line {line_no}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != names.len() {
            return Err(bad(format!("line {line_no}: {} fields, the header has {}", fields.len(), names.len())));
        }
        let num = |i: usize, what: &str| -> Result<f32, SourceError> {
            let t = fields[i].trim();
            t.parse::<f32>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad(format!("line {line_no}: {what} '{t}' is not a finite number")))
        };
        let id = num(ci, "edge_id")?;
        if id < 0.0 || id.fract() != 0.0 || id as f64 >= edges as f64 {
            return Err(bad(format!("line {line_no}: edge_id {id} is not an edge (0 to {})", edges.saturating_sub(1))));
        }
        rows.push((id as u32, [num(cx, "x")?, num(cy, "y")?]));
    }
    rows.sort_by_key(|r| r.0);
    let mut curves = exaviz_model::curves::Curves { points: Vec::with_capacity(rows.len()), starts: vec![0] };
    let mut at = 0usize;
    for e in 0..edges as u32 {
        let from = at;
        while at < rows.len() && rows[at].0 == e {
            curves.points.push(rows[at].1);
            at += 1;
        }
        if at - from < 2 {
            return Err(bad(format!("edge {e} has {} points; a curve needs at least two", at - from)));
        }
        curves.starts.push(curves.points.len() as u32);
    }
    Ok(curves)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(text: &str, edges: usize) -> Result<exaviz_model::curves::Curves, String> {
        parse_curves(text.as_bytes(), "c.csv", edges).map_err(|e| e.to_string())
    }

    #[test]
    fn curves_read_in_any_edge_order_with_ids_as_floats() {
        let k = c("x,y,edge_id\n0,0,1.0\n1,1,1.0\n5,5,0\n6,6,0\n7,7,0\n", 2).unwrap();
        assert_eq!(k.starts, vec![0, 3, 5]);
        assert_eq!(k.points[0], [5.0, 5.0]);
        assert_eq!(k.points[4], [1.0, 1.0]);
        assert_eq!(c("", 1).unwrap_err(), "c.csv: empty file: expected a header with edge_id,x,y");
        assert!(c("id,x,y\n", 1).unwrap_err().contains("lacks one of edge_id,x,y"));
        assert_eq!(
            c("edge_id,x,y\n0,0,0\n0,1,1\n", 2).unwrap_err(),
            "c.csv: edge 1 has 0 points; a curve needs at least two"
        );
        assert!(c("edge_id,x,y\n7,0,0\n", 2).unwrap_err().contains("line 2: edge_id 7 is not an edge"));
        assert!(c("edge_id,x,y\n0.5,0,0\n", 2).unwrap_err().contains("edge_id 0.5"));
        assert!(c("edge_id,x,y\n0,nan,0\n", 2).unwrap_err().contains("'nan' is not a finite number"));
        assert!(c("edge_id,x,y\n0,1\n", 2).unwrap_err().contains("2 fields, the header has 3"));
    }

    /// A curves file flipped byte by byte and cut short: an error or curves, never a panic.
    #[test]
    fn mutated_curve_files_never_panic() {
        let mut text = String::from("edge_id,x,y\n");
        for e in 0..20 {
            for k in 0..5 {
                text.push_str(&format!("{e},{}.5,{}\n", e * 3 + k, k * 7));
            }
        }
        let original = text.into_bytes();
        let mut cases = 0;
        for i in 0..original.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = original.clone();
                b[i] ^= x;
                let r = std::panic::catch_unwind(|| parse_curves(&b[..], "c.csv", 20).map(|k| k.points.len()));
                assert!(r.is_ok(), "byte {i} ^ {x:#x} panicked");
                cases += 1;
            }
        }
        for cut in 0..original.len() {
            assert!(std::panic::catch_unwind(|| parse_curves(&original[..cut], "c.csv", 20).is_ok()).is_ok());
        }
        assert!(cases > 1000);
    }

    fn p(text: &str) -> Result<EdgeList, String> {
        parse(text.as_bytes(), "e.csv").map_err(|e| e.to_string())
    }

    #[test]
    fn reads_columns_in_any_order_with_weights() {
        let e = p("id,y0,x0,x1,y1,weight\n7,2,1,3,4,0.5\n\n8,0,0,1,1,2\n").unwrap();
        assert_eq!(e.edges, vec![[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0]]);
        assert_eq!(e.weights, Some(vec![0.5, 2.0]));
        assert_eq!(e.quantised_weights(), Some(vec![250, 1000]));
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(p("").unwrap_err(), "e.csv: empty file: expected a header with x0,y0,x1,y1");
        assert!(p("a,b\n1,2\n").unwrap_err().contains("lacks one of"));
        assert_eq!(p("x0,y0,x1,y1\n1,2,3,4\n1,2,3\n").unwrap_err(), "e.csv: line 3: 3 fields, the header has 4");
        assert_eq!(p("x0,y0,x1,y1\n1,2,x,4\n").unwrap_err(), "e.csv: line 2: x1 'x' is not a finite number");
        assert!(p("x0,y0,x1,y1\n1,2,inf,4\n").unwrap_err().contains("not a finite number"));
        assert!(p("x0,y0,x1,y1,weight\n1,2,3,4,-1\n").unwrap_err().contains("negative"));
    }
}
