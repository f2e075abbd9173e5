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
    let (Some(x0), Some(y0), Some(x1), Some(y1)) = (col("x0"), col("y0"), col("x1"), col("y1")) else {
        return Err(SourceError::invalid(input, format!("line 1: header '{header}' lacks one of x0,y0,x1,y1")));
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
