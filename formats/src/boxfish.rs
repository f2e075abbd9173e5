//! Loader for Boxfish torus data: a meta YAML naming the torus shape and the node and link
//! tables (`../shared/data/boxfish/*_meta.yaml`), and the tables themselves (a YAML header
//! listing the columns, then whitespace-separated rows).
//!
//! Only the subset of YAML these files use is read: `key: value` lines and one `hardware: { ... }`
//! flow mapping, which may span lines. Per-link packet counts become link counters; where the
//! table has code region -2 (the whole run) only those rows are used, else all regions are summed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_model::source::{MAX_NODES, SourceError};
use exaviz_model::torus::{node_id, parse_dims, torus};

/// Largest table file read (bytes).
const MAX_TABLE_BYTES: u64 = 4 << 30;

pub fn looks_like_meta(head: &str) -> bool {
    head.trim_start().starts_with("---") && head.contains("hardware:")
}

/// The parts of the meta file exaviz uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    pub coords: Vec<String>,
    pub dims: Vec<u32>,
    pub coords_table: Option<String>,
    pub link_table: String,
    pub source_coords: Vec<String>,
    pub destination_coords: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Scalar(String),
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
}

struct FlowParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl FlowParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && (self.s[self.i] as char).is_whitespace() {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: u32) -> Result<Value, String> {
        if depth > 16 {
            return Err("hardware mapping nests too deeply".into());
        }
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Map(items));
                        }
                        Some(b',') => self.i += 1,
                        None => return Err("unclosed '{' in hardware mapping".into()),
                        _ => {
                            let key = self.scalar(b":")?;
                            if self.s.get(self.i) != Some(&b':') {
                                return Err(format!("expected ':' after '{key}' in hardware mapping"));
                            }
                            self.i += 1;
                            let v = self.value(depth + 1)?;
                            items.push((key, v));
                        }
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::List(items));
                        }
                        Some(b',') => self.i += 1,
                        None => return Err("unclosed '[' in hardware mapping".into()),
                        _ => items.push(self.value(depth + 1)?),
                    }
                }
            }
            None => Err("hardware mapping ends early".into()),
            _ => Ok(Value::Scalar(self.scalar(b",}]")?)),
        }
    }

    fn scalar(&mut self, stops: &[u8]) -> Result<String, String> {
        let start = self.i;
        while self.i < self.s.len() && !stops.contains(&self.s[self.i]) && self.s[self.i] != b'\n' {
            self.i += 1;
        }
        let text = String::from_utf8_lossy(&self.s[start..self.i]).trim().to_string();
        if text.is_empty() { Err("empty key or value in hardware mapping".into()) } else { Ok(text) }
    }
}

fn field<'v>(map: &'v [(String, Value)], key: &str) -> Option<&'v Value> {
    map.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn names(v: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    match v {
        Some(Value::List(items)) => items
            .iter()
            .map(|i| match i {
                Value::Scalar(s) => Ok(s.clone()),
                _ => Err(format!("{what} must list names")),
            })
            .collect(),
        _ => Err(format!("missing {what} list")),
    }
}

fn scalar_map(v: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, String> {
    match v {
        Some(Value::Map(items)) => items
            .iter()
            .map(|(k, v)| match v {
                Value::Scalar(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("{what}.{k} must be a single value")),
            })
            .collect(),
        _ => Err(format!("missing {what} mapping")),
    }
}

/// Parses the meta file's `hardware: { ... }` mapping.
pub fn parse_meta(text: &str) -> Result<Meta, String> {
    let start = text.find("hardware:").ok_or("no 'hardware:' mapping")?;
    let mut p = FlowParser { s: &text.as_bytes()[start + "hardware:".len()..], i: 0 };
    let Value::Map(hw) = p.value(0)? else {
        return Err("'hardware:' must be a { ... } mapping".into());
    };
    match field(&hw, "network") {
        Some(Value::Scalar(s)) if s == "torus" => {}
        Some(Value::Scalar(s)) => {
            return Err(format!("network '{s}' is not supported (only torus)"));
        }
        _ => return Err("missing hardware.network".into()),
    }
    let coords = names(field(&hw, "coords"), "hardware.coords")?;
    let dim_map = scalar_map(field(&hw, "dim"), "hardware.dim")?;
    let mut dims = Vec::new();
    for c in &coords {
        let v = dim_map
            .iter()
            .find(|(k, _)| k == c)
            .ok_or_else(|| format!("hardware.dim has no extent for coordinate '{c}'"))?;
        dims.push(v.1.clone());
    }
    let dims = parse_dims(&dims.join("x"))?;
    let table = |k: &str| match field(&hw, k) {
        Some(Value::Scalar(s)) => Some(s.clone()),
        _ => None,
    };
    let order = |k: &str| -> Result<Vec<String>, String> {
        let m = scalar_map(field(&hw, k), &format!("hardware.{k}"))?;
        coords
            .iter()
            .map(|c| {
                m.iter()
                    .find(|(kk, _)| kk == c)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| format!("hardware.{k} has no column for '{c}'"))
            })
            .collect()
    };
    Ok(Meta {
        link_table: table("link_coords_table").ok_or("missing hardware.link_coords_table")?,
        coords_table: table("coords_table"),
        source_coords: order("source_coords")?,
        destination_coords: order("destination_coords")?,
        coords,
        dims,
    })
}

/// A table's column names and the rows that follow its header, as (line number, text).
struct Table {
    columns: Vec<String>,
    body_start: usize,
    text: String,
}

fn read_table(path: &Path) -> Result<Table, SourceError> {
    let input = path.display().to_string();
    let size = std::fs::metadata(path).map_err(|source| SourceError::Io { input: input.clone(), source })?.len();
    if size > MAX_TABLE_BYTES {
        return Err(SourceError::invalid(
            &input,
            format!("table of {size} bytes is larger than the {MAX_TABLE_BYTES}-byte limit"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|source| SourceError::Io { input: input.clone(), source })?;
    let text = String::from_utf8(bytes).map_err(|_| SourceError::invalid(&input, "table is not UTF-8 text"))?;
    let mut columns = Vec::new();
    let mut body_start = None;
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("- [") {
            let name = rest.split(',').next().unwrap_or("").trim();
            columns.push(name.to_string());
        } else if l == "..." && !columns.is_empty() {
            body_start = Some(n + 1);
            break;
        }
    }
    let body_start = body_start.ok_or_else(|| SourceError::invalid(&input, "no column list ending in '...' found"))?;
    Ok(Table { columns, body_start, text })
}

/// Loads a Boxfish meta file and its link table into a torus topology with link counters.
pub fn load(meta_path: &Path) -> Result<Dataset, SourceError> {
    let input = meta_path.display().to_string();
    let text = std::fs::read_to_string(meta_path).map_err(|source| SourceError::Io { input: input.clone(), source })?;
    let meta = parse_meta(&text).map_err(|m| SourceError::invalid(&input, m))?;
    let nodes: u64 = meta.dims.iter().map(|&d| u64::from(d)).product();
    if nodes > MAX_NODES {
        return Err(SourceError::invalid(&input, "torus too large"));
    }
    let topology = torus(&meta.dims);
    let dir = meta_path.parent().unwrap_or(Path::new("."));
    let link_path: PathBuf = dir.join(&meta.link_table);
    let table = read_table(&link_path)?;
    let link_input = link_path.display().to_string();
    let col = |name: &str| {
        table
            .columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| SourceError::invalid(&link_input, format!("no column '{name}'")))
    };
    let src_cols: Vec<usize> = meta.source_coords.iter().map(|c| col(c)).collect::<Result<_, _>>()?;
    let dst_cols: Vec<usize> = meta.destination_coords.iter().map(|c| col(c)).collect::<Result<_, _>>()?;
    let packets = col("packets")?;
    let region = table.columns.iter().position(|c| c == "code_region");
    let mut lookup: HashMap<(u32, u32), u32> = HashMap::with_capacity(topology.link_count());
    for l in 0..topology.link_count() {
        lookup.insert((topology.links.source[l], topology.links.destination[l]), l as u32);
    }
    let dims = &meta.dims;
    let mut rows: Vec<(u32, i64, u64)> = Vec::new();
    let mut values = vec![0i64; table.columns.len()];
    for (n, line) in table.text.lines().enumerate().skip(table.body_start) {
        let line_no = n + 1;
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if l == "---" || l == "..." {
            break;
        }
        let mut k = 0;
        for tok in l.split_whitespace() {
            if k >= values.len() {
                return Err(SourceError::invalid(
                    &link_input,
                    format!("line {line_no}: more than {} fields", values.len()),
                ));
            }
            values[k] = tok
                .parse()
                .map_err(|_| SourceError::invalid(&link_input, format!("line {line_no}: '{tok}' is not an integer")))?;
            k += 1;
        }
        if k != values.len() {
            return Err(SourceError::invalid(
                &link_input,
                format!("line {line_no}: {k} fields, expected {}", values.len()),
            ));
        }
        let coord = |cols: &[usize]| -> Result<Vec<u32>, SourceError> {
            cols.iter()
                .zip(dims)
                .map(|(&c, &e)| {
                    u32::try_from(values[c]).ok().filter(|&v| v < e).ok_or_else(|| {
                        SourceError::invalid(
                            &link_input,
                            format!("line {line_no}: coordinate {} outside 0..{e}", values[c]),
                        )
                    })
                })
                .collect()
        };
        let (s, d) = (node_id(dims, &coord(&src_cols)?), node_id(dims, &coord(&dst_cols)?));
        let link = *lookup.get(&(s, d)).ok_or_else(|| {
            SourceError::invalid(&link_input, format!("line {line_no}: nodes {s} -> {d} are not torus neighbours"))
        })?;
        let p = u64::try_from(values[packets])
            .map_err(|_| SourceError::invalid(&link_input, format!("line {line_no}: negative packet count")))?;
        rows.push((link, region.map_or(0, |r| values[r]), p));
    }
    let whole_run = rows.iter().any(|r| r.1 == -2);
    let mut per_link = vec![0u64; topology.link_count()];
    for (link, reg, p) in rows {
        if !whole_run || reg == -2 {
            per_link[link as usize] += p;
        }
    }
    let mut trace = Trace { ticks_per_second: 1, ..Default::default() };
    for (link, &p) in per_link.iter().enumerate() {
        if p > 0 {
            let v = u32::try_from(p)
                .map_err(|_| SourceError::invalid(&link_input, format!("link {link}: {p} packets exceed 2^32-1")))?;
            trace.link_counters.entity.push(link as u32);
            trace.link_counters.time.push(0);
            trace.link_counters.value.push(v);
        }
    }
    let unit = "packets".into();
    Ok(Dataset { name: input, trace, topology: Some(topology), link_counter_unit: unit, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = "---\nkey: T\nhardware: {\n network: torus,\n coords: [x, y],\n dim: {x: 4, y: 2},\n source_coords: {x: sx, y: sy},\n destination_coords: {x: tx, y: ty},\n link_coords_table: links.yaml,\n}\n";

    #[test]
    fn parses_multi_line_flow_mapping_with_trailing_comma() {
        let m = parse_meta(META).unwrap();
        assert_eq!(m.dims, vec![4, 2]);
        assert_eq!(m.source_coords, vec!["sx", "sy"]);
        assert_eq!(m.link_table, "links.yaml");
    }

    #[test]
    fn malformed_meta_is_refused_with_a_reason() {
        assert!(parse_meta("---\nhardware: {\n network: torus,\n coords: [x, y\n").unwrap_err().contains("unclosed"));
        assert!(parse_meta(&META.replace("y: 2", "y: -2")).unwrap_err().contains("dims"));
        assert!(parse_meta(&META.replace("torus", "fattree")).unwrap_err().contains("not supported"));
        assert!(parse_meta(&META.replace("dim: {x: 4, y: 2}", "dim: {x: 4}")).unwrap_err().contains("'y'"));
        assert!(parse_meta(&META.replace("{x: 4, y: 2}", "{x: 99999, y: 99999}")).unwrap_err().contains("limit"));
    }

    #[test]
    fn loads_a_small_table_and_rejects_bad_rows() {
        let dir = std::env::temp_dir().join(format!("exaviz-boxfish-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("meta.yaml"), META).unwrap();
        let header = "---\nkey: T\n---\n- [linkid, int32]\n- [sx, int32]\n- [sy, int32]\n- [tx, int32]\n- [ty, int32]\n- [code_region, int32]\n- [packets, int64]\n...\n";
        std::fs::write(dir.join("links.yaml"), format!("{header}0 0 0 1 0 -2 10\n1 0 0 1 0 3 5\n2 1 1 1 0 -2 7\n"))
            .unwrap();
        let d = load(&dir.join("meta.yaml")).unwrap();
        assert_eq!(d.trace.link_counters.value.iter().sum::<u32>(), 17, "region -2 rows only");
        std::fs::write(dir.join("links.yaml"), format!("{header}0 0 0 2 0 -2 10\n")).unwrap();
        let e = load(&dir.join("meta.yaml")).unwrap_err().to_string();
        assert!(e.contains("line 12") && e.contains("not torus neighbours"), "{e}");
        std::fs::write(dir.join("links.yaml"), format!("{header}0 0 0 1 0 -2\n")).unwrap();
        assert!(load(&dir.join("meta.yaml")).unwrap_err().to_string().contains("6 fields, expected 7"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
