//! Chakra execution traces (`.et`), MLCommons' format for AI workloads, read as its schema
//! (`schema/protobuf/et_def.proto`) and its own reader (`third_party/utils/protolib.py`) define
//! it: a stream of length-prefixed protobuf messages (a varint length, then the message), the
//! first a `GlobalMetadata` (`version`, `attr`), then one `Node` per operation: `id` (1),
//! `name` (2), `type` (3: computation, memory load or store, send, receive, collective),
//! `ctrl_deps` (4) and `data_deps` (5), `start_time_micros` (6), `duration_micros` (7),
//! `inputs` and `outputs` (8, 9: values, shapes and types as text) and `attr` (10: named values,
//! `comm_type`, `comm_size`, `is_cpu_op`, ...).
//!
//! A trace becomes an operator graph ([`exaviz_model::opgraph::OpGraph`], `--view strategy`):
//! each node an operator (metadata nodes left out) named as the trace names it, its opcode its
//! operation (`aten::mm`) or, for communication, XLA's name for it (`comm_type` ALL_REDUCE is
//! `all-reduce`, a send `send`, ...), so the strategy view colours and chunks it as it does an
//! HLO module's; a data edge from each node a node's `data_deps` name (its `ctrl_deps` where it
//! has none). A folder of one trace per rank (`NAME.0.et`, `NAME.1.et`, ...) is one run: its
//! first rank's graph, the ranks counted as the graph's partitions. Every length is checked
//! against the bytes present; a dependency naming no node is left out and counted.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use exaviz_model::opgraph::{OpClass, OpGraph, OpNode, Strategy};
use exaviz_model::source::{Repairs, SourceError};

use super::protobuf::{Value, fields, push_ints, varint};

/// The largest trace read (it is held whole).
const MAX_BYTES: u64 = 4 << 30;

/// The messages of a length-prefixed stream, up to `most`; `None` where one is cut short.
fn messages(b: &[u8], most: usize) -> (Vec<&[u8]>, bool) {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() && out.len() < most {
        let Some(len) = varint(b, &mut at).and_then(|l| usize::try_from(l).ok()) else { return (out, false) };
        let Some(end) = at.checked_add(len).filter(|&e| e <= b.len()) else { return (out, false) };
        out.push(&b[at..end]);
        at = end;
    }
    (out, true)
}

/// Whether `head` starts a Chakra trace: a `GlobalMetadata` of known fields, then a `Node`
/// with an id and a type (the head may cut the second message short).
pub fn looks_like(head: &[u8]) -> bool {
    let mut at = 0;
    let Some(len) = varint(head, &mut at).and_then(|l| usize::try_from(l).ok()) else { return false };
    let Some(meta) = head.get(at..at + len) else { return false };
    let mut f = fields(meta);
    let mut attrs = 0;
    for (n, _) in &mut f {
        match n {
            1 => {}
            2 => attrs += 1,
            _ => return false,
        }
    }
    if f.broken || (attrs == 0 && meta.is_empty()) {
        return false;
    }
    at += len;
    let Some(node_len) = varint(head, &mut at).and_then(|l| usize::try_from(l).ok()) else { return false };
    let node = &head[at..(at + node_len).min(head.len())];
    let (mut id, mut ty) = (false, false);
    for (n, _) in fields(node) {
        id |= n == 1;
        ty |= n == 3;
    }
    id && ty
}

/// Whether the file at `path` is a Chakra trace.
pub fn is_chakra(path: &Path) -> bool {
    path.is_file() && crate::head_of(path, 1 << 16).is_some_and(|h| looks_like(&h))
}

/// The Chakra traces in `dir`, one per rank, in rank order (the number before `.et`).
pub fn traces_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "et") && is_chakra(p))
        .collect();
    found.sort_by_key(|p| (crate::dnn::rank_in_name(p).unwrap_or(u64::MAX), p.clone()));
    found
}

/// XLA's opcode for a collective of Chakra's `CollectiveCommType`.
fn comm_opcode(kind: u64) -> &'static str {
    match kind {
        0 => "all-reduce",
        1 => "reduce",
        2 => "all-gather",
        3 => "gather",
        4 => "scatter",
        5 => "collective-broadcast",
        6 => "all-to-all",
        7 | 8 => "reduce-scatter",
        9 => "barrier",
        _ => "collective",
    }
}

/// One node as read.
struct Raw {
    id: u64,
    name: String,
    kind: u64,
    deps: Vec<u64>,
    ctrl: Vec<u64>,
    shape: String,
    comm_type: Option<u64>,
}

fn node(m: &[u8]) -> Option<Raw> {
    let mut r = Raw {
        id: 0,
        name: String::new(),
        kind: 0,
        deps: Vec::new(),
        ctrl: Vec::new(),
        shape: String::new(),
        comm_type: None,
    };
    let mut has_id = false;
    let mut f = fields(m);
    for (n, v) in &mut f {
        match n {
            1 => {
                r.id = v.int()?;
                has_id = true;
            }
            2 => r.name = v.text()?,
            3 => r.kind = v.int()?,
            4 => push_ints(v, false, &mut r.ctrl),
            5 => push_ints(v, false, &mut r.deps),
            9 => {
                for (k, w) in fields(v.bytes()?) {
                    if k == 2 {
                        r.shape = w.text().unwrap_or_default();
                    }
                }
            }
            10 => {
                let (mut name, mut value) = (String::new(), None);
                for (k, w) in fields(v.bytes()?) {
                    match (k, w) {
                        (1, w) => name = w.text().unwrap_or_default(),
                        (7 | 9 | 11 | 13, Value::Varint(x)) => value = Some(x),
                        _ => {}
                    }
                }
                if name == "comm_type" {
                    r.comm_type = value;
                }
            }
            _ => {}
        }
    }
    (!f.broken && has_id).then_some(r)
}

/// Reads a Chakra trace into an operator graph, with what was repaired as warnings.
pub fn read(input: &str, path: &Path) -> Result<(OpGraph, Vec<String>), SourceError> {
    let bytes = super::read_all(input, path, MAX_BYTES)?;
    let (msgs, whole) = messages(&bytes, usize::MAX);
    let bad = |m: &str| SourceError::invalid(input, m.to_string());
    if msgs.is_empty() {
        return Err(bad("is not a Chakra execution trace (no GlobalMetadata message)"));
    }
    let mut repairs = Repairs::default();
    if !whole {
        repairs.add("bytes after the last whole node skipped (the file is cut short)", || {
            format!("after node {}", msgs.len() - 1)
        });
    }
    let mut raw = Vec::new();
    for (k, m) in msgs[1..].iter().enumerate() {
        match node(m) {
            Some(r) if r.kind == 1 => {}
            Some(r) => raw.push(r),
            None => repairs.add("nodes that do not parse skipped", || format!("message {}", k + 1)),
        }
    }
    if raw.is_empty() {
        return Err(bad("holds no operations (no Chakra nodes past its metadata)"));
    }
    let mut index: HashMap<u64, u32> = HashMap::new();
    let mut g = OpGraph {
        name: path.file_name().and_then(|n| n.to_str()).unwrap_or(input).to_string(),
        source: "Chakra execution trace".into(),
        computations: vec!["entry".into()],
        entry: Some(0),
        partitions: 1,
        ..Default::default()
    };
    for r in &raw {
        if index.insert(r.id, g.nodes.len() as u32).is_some() {
            repairs.add("nodes with an id already used (the later one kept)", || format!("node {}", r.id));
        }
        let base = r.name.split('(').next().unwrap_or(&r.name).trim();
        let opcode = match r.kind {
            5 => "send".to_string(),
            6 => "recv".to_string(),
            7 => r
                .comm_type
                .map(comm_opcode)
                .or_else(|| super::et::collective(&r.name))
                .unwrap_or("collective")
                .to_string(),
            2 | 3 => "copy".to_string(),
            _ => base.to_string(),
        };
        g.nodes.push(OpNode {
            name: r.name.clone(),
            opcode,
            shape: r.shape.clone(),
            namespace: String::new(),
            strategy: Strategy::Unknown,
            class: OpClass::Other,
            computation: 0,
            pairs: Vec::new(),
            calls: Vec::new(),
        });
    }
    let mut seen: HashSet<(u32, u32)> = HashSet::new();
    for r in &raw {
        let Some(&to) = index.get(&r.id) else { continue };
        let deps = if r.deps.is_empty() { &r.ctrl } else { &r.deps };
        for d in deps {
            match index.get(d) {
                Some(&from) if from != to => {
                    if seen.insert((from, to)) {
                        g.edges.push((from, to));
                    }
                }
                Some(_) => {}
                None => {
                    repairs.add("dependencies on a node not in the trace left out", || format!("node {} on {d}", r.id))
                }
            }
        }
    }
    g.classify();
    Ok((g, repairs.lines(input)))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::protobuf::encode::{bytes, int, prefixed};

    /// A metadata message, two computations, an all-reduce after them, a send after that.
    pub(crate) fn sample() -> Vec<u8> {
        let attr = |name: &str, v: u64| bytes(10, &[bytes(1, name.as_bytes()), int(9, v)].concat());
        let meta = bytes(2, &[bytes(1, b"schema"), bytes(29, b"1.0.1")].concat());
        let mut out = prefixed(&meta);
        out.extend(prefixed(&[int(1, 1), bytes(2, b"aten::mm(0)"), int(3, 4)].concat()));
        out.extend(prefixed(&[int(1, 2), bytes(2, b"aten::relu(1)"), int(3, 4), bytes(5, &[1])].concat()));
        out.extend(prefixed(
            &[int(1, 3), bytes(2, b"ncclKernel_AllReduce"), int(3, 7), bytes(5, &[2]), attr("comm_type", 0)].concat(),
        ));
        out.extend(prefixed(&[int(1, 4), bytes(2, b"send"), int(3, 5), bytes(4, &[3]), bytes(5, &[9])].concat()));
        out
    }

    #[test]
    fn nodes_become_operators_and_dependencies_edges() {
        let b = sample();
        assert!(looks_like(&b));
        let dir = std::env::temp_dir().join(format!("exaviz-chakra-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.0.et");
        std::fs::write(&p, &b).unwrap();
        let (g, warnings) = read("t.0.et", &p).unwrap();
        let ops: Vec<&str> = g.nodes.iter().map(|n| n.opcode.as_str()).collect();
        assert_eq!(ops, vec!["aten::mm", "aten::relu", "all-reduce", "send"]);
        assert_eq!(g.edges, vec![(0, 1), (1, 2)]);
        assert_eq!(g.nodes[2].class, OpClass::Communication);
        assert!(
            warnings.iter().any(|w| w.contains("1 dependencies on a node not in the trace left out")),
            "{warnings:?}"
        );
        assert_eq!(traces_in(&dir), vec![p.clone()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Mutations (bytes flipped, the file cut, a stretch duplicated) give a graph or one line
    /// naming the file, never a panic.
    #[test]
    fn mutated_traces_give_a_graph_or_one_line() {
        let dir = std::env::temp_dir().join(format!("exaviz-chakra-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("m.et");
        let (mut opened, mut refused) = (0, 0);
        for m in crate::fuzz::mutations(&sample(), 400, 8) {
            std::fs::write(&p, &m).unwrap();
            match read("m.et", &p) {
                Ok((g, _)) => {
                    opened += 1;
                    let n = g.nodes.len() as u32;
                    assert!(g.edges.iter().all(|&(a, b)| a < n && b < n));
                }
                Err(e) => {
                    refused += 1;
                    let e = e.to_string();
                    assert!(e.starts_with("m.et: ") && !e.contains('\n'), "{e}");
                }
            }
        }
        assert!(opened > 50 && refused > 20, "{opened} opened, {refused} refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
