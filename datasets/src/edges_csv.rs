//! Edge and segment lists as CSV: a header naming `x0,y0,x1,y1` (any order, other columns
//! ignored) and an optional `weight`, then one edge per line. Read line by line; every error
//! names the file and the line.

use std::io::BufRead;
use std::path::Path;

use crate::SourceError;

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

/// Opens an edge list: a CSV path, or `gen:circle?edges=N&kind=structured|random&nodes=1024&seed=1`,
/// the benchmark sets of the bundling issue: `nodes` on a circle of radius 500 around (512, 512);
/// random endpoints, or structured ones (70% stencil neighbours i±1 and i±32, 20% to node 0, 10%
/// random).
pub fn open(input: &str) -> Result<EdgeList, SourceError> {
    let Some(spec) = input.strip_prefix("gen:") else { return read(Path::new(input)) };
    let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
    if name != "circle" {
        return Err(SourceError::invalid(input, format!("unknown edge generator '{name}' (available: circle)")));
    }
    let (mut edges, mut kind, mut nodes, mut seed) = (10_000u64, "structured".to_string(), 1024u64, 1u64);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| SourceError::invalid(input, format!("option '{pair}' is not key=value")))?;
        let num = |max: u64| -> Result<u64, SourceError> {
            v.parse::<u64>().ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
                SourceError::invalid(input, format!("option {k}={v} must be a whole number from 1 to {max}"))
            })
        };
        match k {
            "edges" => edges = num(MAX_CIRCLE_EDGES)?,
            "nodes" => nodes = num(1 << 24)?,
            "seed" => seed = num(u64::MAX)?,
            "kind" if v == "structured" || v == "random" => kind = v.to_string(),
            "kind" => return Err(SourceError::invalid(input, format!("kind={v}: expected structured or random"))),
            _ => {
                return Err(SourceError::invalid(
                    input,
                    format!("unknown option '{k}' for gen:circle (expected edges, kind, nodes, seed)"),
                ));
            }
        }
    }
    Ok(circle(edges as usize, kind == "structured", nodes as u32, seed))
}

/// The `gen:circle` edge set.
pub fn circle(edges: usize, structured: bool, nodes: u32, seed: u64) -> EdgeList {
    let mut rng = crate::rng::SplitMix64(seed);
    let xy = |i: u32| {
        let a = std::f64::consts::TAU * f64::from(i) / f64::from(nodes);
        [(512.0 + 500.0 * a.cos()) as f32, (512.0 + 500.0 * a.sin()) as f32]
    };
    let list = (0..edges)
        .map(|_| {
            let a = rng.below(nodes);
            let b = if !structured {
                rng.below(nodes)
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

#[cfg(test)]
mod tests {
    use super::*;

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
