//! PyTorch's Execution Trace (`torch.profiler.ExecutionTraceObserver`, the host graph the
//! Chakra tools convert) as an operator graph ([`exaviz_model::opgraph::OpGraph`]).
//!
//! The file is JSON: `{"schema": "1.1.1-chakra.0.0.4", "pid", "nodes": [...]}`; each node has an
//! `id` (given in the order operators start), a `name`, `ctrl_deps` (the id of the node it runs
//! inside: its parent), `inputs` and `outputs` (`values`, `shapes`, `types`; a tensor's value is
//! `[tensor id, storage id, offset, elements, element size, device]`) and `attrs` (`op_schema`,
//! `rf_id`, `seq_id`, ...). An operator here is the outermost node that is an ATen operator (it has
//! an `op_schema`) or an autograd function (`AddmmBackward0`, `AccumulateGrad`: no schema but
//! tensors); what runs inside it is folded into it. Nodes without tensors (`## forward ##`,
//! `Optimizer.step#SGD.step`, autograd's `evaluate_function: X` wrappers, read as `backward`)
//! name the namespaces of the operators inside them. A data edge goes from the last operator
//! that wrote a tensor id to each later operator that reads it (ids are reused after a tensor is
//! freed, so the last writer before the read is the one); a tensor read before any operator
//! wrote it (a parameter, the batch) becomes a parameter node. Collectives
//! (`c10d::allreduce_`, `nccl:all_to_all`, `record_param_comms`) take XLA's opcode names
//! (`all-reduce`, `all-to-all`, `send`, ...), so the strategy view colours and chunks them as it
//! does an HLO module's; the backend's record of a collective (`gloo:all_reduce` written after
//! `c10d::allreduce_`) is folded into it. The file holds no partitioning, so strategies are
//! unknown.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use exaviz_model::opgraph::{OpClass, OpGraph, OpNode, Strategy};
use exaviz_model::source::SourceError;
use serde_json::Value;

/// Whether the first (decompressed) bytes of a file are an execution trace's.
pub fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.trim_start().starts_with('{')
        && text.contains("\"nodes\"")
        && (text.contains("-chakra.")
            || text.contains("\"ctrl_deps\"")
            || (text.contains("\"input_shapes\"") && text.contains("\"parent\"")))
}

/// Whether the file at `path` (plain or gzip) is an execution trace.
pub fn is_et(path: &Path) -> bool {
    crate::head_of(path, 1 << 16).is_some_and(|head| looks_like(&head))
}

/// Reads an execution trace file, plain or gzip (`input` names it in errors and warnings).
pub fn read(input: &str, path: &Path) -> Result<(OpGraph, Vec<String>), SourceError> {
    read_full(input, path).map(|r| (r.graph, r.warnings))
}

/// One tensor an operator reads or writes: its id and its type and shape as written.
struct Tensor {
    id: i64,
    shape: String,
}

/// One node of the file.
struct Raw {
    id: i64,
    name: String,
    parent: i64,
    schema: bool,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    /// The first input where it is a string (a process group's description).
    desc: String,
    /// Its record-function id (`rf_id`), which the Kineto profile of the same run gives its
    /// event as `Record function id`.
    rf: Option<u64>,
}

/// `float[32,128]` from `Tensor(float)` and `[32, 128]`.
fn shape_text(ty: &str, shape: Option<&Value>) -> String {
    let elem = ty.strip_prefix("Tensor(").and_then(|t| t.strip_suffix(')')).unwrap_or(ty);
    let dims: Vec<String> =
        shape.and_then(Value::as_array).map(|a| a.iter().map(|d| d.to_string()).collect()).unwrap_or_default();
    format!("{elem}[{}]", dims.join(","))
}

/// The tensors of a node's `inputs` or `outputs` (`side`): an object of `values`, `types` and
/// `shapes`, or, in the first schema (1.0, the execution graph observer of PyTorch 1.x and
/// 2.0), a list of values beside `input_types` and `input_shapes`; `bad` counts values that
/// are not tensors as their type says.
fn tensors(node: &Value, side: &str, bad: &mut usize) -> Vec<Tensor> {
    let Some(v) = node.get(side) else { return Vec::new() };
    let empty = Vec::new();
    let first = |what: &str| node.get(format!("{}_{what}", side.trim_end_matches('s'))).and_then(Value::as_array);
    let (values, types, shapes) = match v.as_array() {
        Some(values) => (values, first("types").unwrap_or(&empty), first("shapes").unwrap_or(&empty)),
        None => (
            v.get("values").and_then(Value::as_array).unwrap_or(&empty),
            v.get("types").and_then(Value::as_array).unwrap_or(&empty),
            v.get("shapes").and_then(Value::as_array).unwrap_or(&empty),
        ),
    };
    let mut out = Vec::new();
    for (k, (value, ty)) in values.iter().zip(types).enumerate() {
        let ty = ty.as_str().unwrap_or("");
        let one = |t: &Value, shape: Option<&Value>| {
            let id = t.as_array().and_then(|a| a.first()).and_then(Value::as_i64)?;
            Some(Tensor { id, shape: shape_text(ty, shape) })
        };
        if ty.starts_with("Tensor") {
            match one(value, shapes.get(k)) {
                Some(t) => out.push(t),
                None => *bad += 1,
            }
        } else if ty.starts_with("GenericList[Tensor") {
            let Some(list) = value.as_array() else {
                *bad += 1;
                continue;
            };
            let inner = shapes.get(k).and_then(Value::as_array);
            for (j, t) in list.iter().enumerate() {
                match one(t, inner.and_then(|s| s.get(j))) {
                    Some(t) => out.push(t),
                    None => *bad += 1,
                }
            }
        }
    }
    out
}

/// XLA's opcode for a collective's name (`c10d::allreduce_`, `nccl:all_to_all`, ...).
pub(crate) fn collective(name: &str) -> Option<&'static str> {
    let l = name.to_ascii_lowercase();
    if !(l.starts_with("c10d::")
        || l.starts_with("nccl:")
        || l.starts_with("gloo:")
        || l.contains("record_param_comms"))
    {
        return None;
    }
    let l = l.replace('_', "");
    Some(if l.contains("reducescatter") {
        "reduce-scatter"
    } else if l.contains("allreduce") {
        "all-reduce"
    } else if l.contains("allgather") {
        "all-gather"
    } else if l.contains("alltoall") {
        "all-to-all"
    } else if l.contains("broadcast") {
        "collective-broadcast"
    } else if l.contains("recv") {
        "recv"
    } else if l.contains("send") {
        "send"
    } else {
        return None;
    })
}

/// A namespace component for a node that is not an operator (empty: none).
fn label(name: &str) -> String {
    if name.starts_with("[pytorch|profiler|execution_trace|") {
        return String::new();
    }
    if name.starts_with("autograd::engine::evaluate_function:") {
        return "backward".into();
    }
    name.trim().trim_start_matches('#').trim_end_matches('#').trim().to_string()
}

/// The largest process group's size, from the `## process_group:init ##` node's description
/// (`[{"pg_name": "0", ..., "group_size": 2}]`).
fn group_size(raw: &[Raw]) -> Option<u32> {
    let n = raw.iter().find(|n| n.name.contains("process_group:init"))?;
    let desc: Value = serde_json::from_str(&n.desc).ok()?;
    desc.as_array()?
        .iter()
        .filter_map(|g| g.get("group_size").and_then(Value::as_u64))
        .max()
        .map(|m| m.min(1 << 20) as u32)
}

/// An operator of unknown strategy (classed later).
fn node(name: String, opcode: String, shape: String, namespace: String) -> OpNode {
    OpNode {
        name,
        opcode,
        shape,
        namespace,
        strategy: Strategy::Unknown,
        class: OpClass::Other,
        computation: 0,
        pairs: Vec::new(),
        calls: Vec::new(),
    }
}

/// The operator's path as XLA writes `op_name` (`NAMESPACE/NAME`), empty outside namespaces.
fn op_name(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { String::new() } else { format!("{namespace}/{name}") }
}

/// Counts of what was repaired, each kind one warning line.
#[derive(Default)]
struct Repairs {
    not_nodes: usize,
    duplicate: usize,
    orphan: usize,
    bad_tensors: usize,
}

impl Repairs {
    /// One warning line per kind of repair made.
    fn lines(&self, input: &str) -> Vec<String> {
        let mut warnings = Vec::new();
        for (count, what) in [
            (self.not_nodes, "node(s) without an integer id and a name are left out"),
            (self.duplicate, "node(s) repeat an earlier node's id and are left out"),
            (self.orphan, "node(s) name a ctrl_deps parent that is not in the file and are read as top level"),
            (
                self.bad_tensors,
                "tensor value(s) are not [id, storage, offset, elements, size, device] and are left out",
            ),
        ] {
            if count > 0 {
                warnings.push(format!("{input}: {count} {what}"));
            }
        }
        warnings
    }
}

/// The file's nodes, each with an integer id (others counted and left out; a repeated id
/// keeps its first node).
fn nodes(input: &str, root: &Value, r: &mut Repairs) -> Result<Vec<Raw>, SourceError> {
    let Some(list) = root.get("nodes").and_then(Value::as_array) else {
        return Err(SourceError::invalid(input, "holds no \"nodes\" list: not a PyTorch execution trace"));
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for n in list {
        let (Some(id), Some(name)) = (n.get("id").and_then(Value::as_i64), n.get("name").and_then(Value::as_str))
        else {
            r.not_nodes += 1;
            continue;
        };
        if !seen.insert(id) {
            r.duplicate += 1;
            continue;
        }
        // An attribute: in `attrs`, or a key of the node's own in the first schema.
        let attr = |key: &str| {
            n.get("attrs")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter().find(|x| x.get("name").and_then(Value::as_str) == Some(key)).and_then(|x| x.get("value"))
                })
                .or_else(|| n.get(key))
        };
        out.push(Raw {
            id,
            name: name.to_string(),
            parent: n.get("ctrl_deps").or_else(|| n.get("parent")).and_then(Value::as_i64).unwrap_or(id),
            schema: attr("op_schema").and_then(Value::as_str).is_some_and(|s| !s.is_empty()),
            inputs: tensors(n, "inputs", &mut r.bad_tensors),
            outputs: tensors(n, "outputs", &mut r.bad_tensors),
            rf: attr("rf_id").and_then(Value::as_u64),
            desc: n
                .pointer("/inputs/values/0")
                .or_else(|| n.pointer("/inputs/0"))
                .and_then(Value::as_str)
                .filter(|_| name.contains("process_group:init"))
                .unwrap_or_default()
                .to_string(),
        });
    }
    out.sort_by_key(|n| n.id);
    Ok(out)
}

/// Each node's parent (index), `None` for a root; a `ctrl_deps` naming no node makes a root
/// (counted). A chain of parents that loops is refused, naming a node on the loop.
fn parents(input: &str, raw: &[Raw], r: &mut Repairs) -> Result<Vec<Option<usize>>, SourceError> {
    let index: HashMap<i64, usize> = raw.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let parent: Vec<Option<usize>> = raw
        .iter()
        .map(|n| {
            if n.parent == n.id || n.parent == 0 {
                return None;
            }
            let p = index.get(&n.parent).copied();
            if p.is_none() {
                r.orphan += 1;
            }
            p
        })
        .collect();
    // 0: not visited, 1: on the current chain, 2: its chain reaches a root.
    let mut state = vec![0u8; raw.len()];
    let mut chain = Vec::new();
    for start in 0..raw.len() {
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                2 => break,
                1 => {
                    return Err(SourceError::invalid(
                        input,
                        format!(
                            "node {}'s ctrl_deps chain loops back to node {} (a cycle of parents)",
                            raw[start].id, raw[i].id
                        ),
                    ));
                }
                _ => {
                    state[i] = 1;
                    chain.push(i);
                    at = parent[i];
                }
            }
        }
        for i in chain.drain(..) {
            state[i] = 2;
        }
    }
    Ok(parent)
}

/// An execution trace read: its graph, what was repaired, and what links it to the Kineto
/// profile of the same run: the process id and each operator's record-function id (of its
/// autograd wrapper for an autograd function, of the backend's record for a collective: the
/// events a profile's operators are).
pub struct EtRead {
    pub graph: OpGraph,
    pub warnings: Vec<String>,
    pub pid: Option<i64>,
    pub record_ids: Vec<Option<u64>>,
}

/// Parses an execution trace's JSON (`input` names it in errors and warnings).
pub fn parse(input: &str, bytes: &[u8]) -> Result<(OpGraph, Vec<String>), SourceError> {
    parse_full(input, bytes).map(|r| (r.graph, r.warnings))
}

/// Reads an execution trace file with what links it to its profile ([`EtRead`]).
pub fn read_full(input: &str, path: &Path) -> Result<EtRead, SourceError> {
    let bytes = std::fs::read(path).map_err(|source| SourceError::Io { input: input.to_string(), source })?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .map_err(|e| SourceError::invalid(input, format!("is a damaged gzip file: {e}")))?;
        return parse_full(input, &plain);
    }
    parse_full(input, &bytes)
}

/// [`parse`] with what links the graph to its profile.
pub fn parse_full(input: &str, bytes: &[u8]) -> Result<EtRead, SourceError> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| {
        SourceError::invalid(input, format!("is not a PyTorch execution trace: {e} (truncated or not JSON)"))
    })?;
    let mut r = Repairs::default();
    let raw = nodes(input, &root, &mut r)?;
    let parent = parents(input, &raw, &mut r)?;
    // Parents before children: by depth (ids usually already are in this order).
    let mut depth = vec![u32::MAX; raw.len()];
    for i in 0..raw.len() {
        let mut chain = vec![i];
        while let Some(p) = parent[*chain.last().unwrap_or(&i)].filter(|&p| depth[p] == u32::MAX) {
            chain.push(p);
        }
        while let Some(j) = chain.pop() {
            depth[j] = parent[j].map_or(0, |p| depth[p].saturating_add(1));
        }
    }
    let mut by_depth: Vec<usize> = (0..raw.len()).collect();
    by_depth.sort_by_key(|&i| (depth[i], raw[i].id));
    // Each node's operator (its own index where it is one) and each label's namespace.
    let mut owner: Vec<Option<usize>> = vec![None; raw.len()];
    let mut namespace: Vec<String> = vec![String::new(); raw.len()];
    let mut has_children = vec![false; raw.len()];
    for p in parent.iter().flatten() {
        has_children[*p] = true;
    }
    for &i in &by_depth {
        let n = &raw[i];
        if let Some(o) = parent[i].and_then(|p| owner[p]) {
            owner[i] = Some(o);
            continue;
        }
        let above = parent[i].map(|p| namespace[p].clone()).unwrap_or_default();
        let tensors = !n.inputs.is_empty() || !n.outputs.is_empty();
        let wrapper = n.name.starts_with("autograd::engine::evaluate_function:");
        if n.schema || (tensors && !wrapper && !n.name.starts_with("[pytorch|")) {
            owner[i] = Some(i);
            namespace[i] = above;
        } else {
            let l = label(&n.name);
            namespace[i] = match (above.is_empty(), l.is_empty()) {
                (_, true) => above,
                (true, false) => l,
                (false, false) => format!("{above}/{l}"),
            };
        }
    }
    // The event a profile has for each operator: its own, or its autograd wrapper's.
    let mut link: Vec<Option<u64>> = (0..raw.len())
        .map(|i| match parent[i] {
            Some(p) if raw[p].name.starts_with("autograd::engine::evaluate_function:") => raw[p].rf,
            _ => raw[i].rf,
        })
        .collect();
    // A backend's record of a collective with no children (`gloo:all_reduce` after
    // `c10d::allreduce_`) folds into the collective just before it (and is its event).
    let mut last_op: Option<usize> = None;
    for i in 0..raw.len() {
        if owner[i] != Some(i) {
            continue;
        }
        let n = &raw[i];
        let record = !n.schema && !has_children[i] && (n.name.starts_with("gloo:") || n.name.starts_with("nccl:"));
        if record && let Some(prev) = last_op.filter(|&p| collective(&raw[p].name).is_some()) {
            owner[i] = Some(prev);
            link[prev] = raw[i].rf.or(link[prev]);
            continue;
        }
        last_op = Some(i);
    }
    let pid = root.get("pid").and_then(Value::as_i64);
    build(input, &raw, (&owner, &link), &namespace, r).map(|(graph, warnings, record_ids)| EtRead {
        graph,
        warnings,
        pid,
        record_ids,
    })
}

/// A graph, its warnings and each operator's record-function id.
type Built = (OpGraph, Vec<String>, Vec<Option<u64>>);

/// The graph from the nodes' operators: operators in id order, each after the parameters it
/// first reads; data edges from the last writer of each tensor id.
fn build(
    input: &str,
    raw: &[Raw],
    (owner, link): (&[Option<usize>], &[Option<u64>]),
    namespace: &[String],
    r: Repairs,
) -> Result<Built, SourceError> {
    // Items in listing order: an operator (raw index) or a parameter (tensor id and shape),
    // parameters just before the operator that reads them first.
    enum Item {
        Op(usize),
        Param(i64, String, usize),
    }
    let mut items: Vec<Item> = Vec::new();
    let mut item_of_op: HashMap<usize, usize> = HashMap::new();
    let mut params_before: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut writer: HashMap<i64, usize> = HashMap::new(); // tensor id -> item
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut seen_edges = HashSet::new();
    let mut shape_of: HashMap<usize, String> = HashMap::new();
    for (i, n) in raw.iter().enumerate() {
        let Some(o) = owner[i] else { continue };
        let item = *item_of_op.entry(o).or_insert_with(|| {
            items.push(Item::Op(o));
            items.len() - 1
        });
        for t in &n.inputs {
            let from = match writer.get(&t.id) {
                Some(&w) => w,
                None => {
                    items.push(Item::Param(t.id, t.shape.clone(), o));
                    params_before.entry(item).or_default().push(items.len() - 1);
                    writer.insert(t.id, items.len() - 1);
                    items.len() - 1
                }
            };
            if from != item && seen_edges.insert((from, item)) {
                edges.push((from, item));
            }
        }
        for t in &n.outputs {
            writer.insert(t.id, item);
        }
        // Its shape: the operator's own output, else the last one written inside it.
        if let Some(t) = n.outputs.last()
            && (i == o || raw[o].outputs.is_empty())
        {
            shape_of.insert(item, t.shape.clone());
        }
    }
    // The final order: each operator after its parameters.
    let mut order: Vec<usize> = Vec::with_capacity(items.len());
    for (k, it) in items.iter().enumerate() {
        if let Item::Op(_) = it {
            order.extend(params_before.get(&k).into_iter().flatten().copied());
            order.push(k);
        }
    }
    let mut place = vec![0u32; items.len()];
    for (p, &k) in order.iter().enumerate() {
        place[k] = p as u32;
    }
    let record_ids: Vec<Option<u64>> = order
        .iter()
        .map(|&k| match &items[k] {
            Item::Op(o) => link[*o],
            Item::Param(..) => None,
        })
        .collect();
    let nodes: Vec<OpNode> = order
        .iter()
        .map(|&k| match &items[k] {
            Item::Op(o) => {
                let n = &raw[*o];
                node(
                    format!("{} #{}", n.name, n.id),
                    collective(&n.name).map_or_else(|| n.name.clone(), str::to_string),
                    shape_of.get(&k).cloned().unwrap_or_else(|| "()".into()),
                    op_name(&namespace[*o], &n.name),
                )
            }
            Item::Param(t, shape, reader) => node(
                format!("tensor {t}"),
                "parameter".into(),
                shape.clone(),
                op_name(&namespace[*reader], "parameter"),
            ),
        })
        .collect();
    let mut g = OpGraph {
        name: Path::new(input).file_name().map_or_else(|| input.to_string(), |n| n.to_string_lossy().into_owned()),
        source: "PyTorch execution trace".into(),
        computations: vec!["step".into()],
        entry: Some(0),
        nodes,
        edges: edges.iter().map(|&(a, b)| (place[a], place[b])).collect(),
        scheduled: true,
        partitions: group_size(raw).unwrap_or(1),
        executed: Vec::new(),
        profile_names: Vec::new(),
    };
    g.classify();
    let warnings = r.lines(input);
    if g.nodes.is_empty() {
        return Err(SourceError::invalid(input, "holds no operators (no node with an op_schema or tensors)"));
    }
    Ok((g, warnings, record_ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data").join(rel)
    }

    fn node(g: &OpGraph, name: &str) -> usize {
        g.nodes.iter().position(|n| n.name == name).unwrap_or_else(|| panic!("no {name}"))
    }

    /// The recorded data-parallel step (2 ranks, gloo): forward, backward, one all-reduce per
    /// gradient, the optimizer's updates, linked by tensor ids.
    #[test]
    fn a_recorded_execution_trace_reads_as_an_operator_graph() {
        let p = fixture("torch-et/rank0.et.json.gz");
        assert!(is_et(&p));
        let (g, warnings) = read("rank0.et.json.gz", &p).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let count = |op: &str| g.nodes.iter().filter(|n| n.opcode == op).count();
        assert_eq!(count("aten::linear"), 3, "three layers");
        assert_eq!(count("all-reduce"), 6, "one all-reduce per parameter");
        assert!(g.nodes.iter().all(|n| !n.opcode.starts_with("gloo:")), "the gloo records fold into the collectives");
        assert_eq!(count("AddmmBackward0"), 3);
        assert_eq!(g.nodes.iter().filter(|n| n.class == OpClass::Communication).count(), 6);
        // The first layer's output feeds the first relu; the relu's the second layer.
        let l1 = node(&g, "aten::linear #5");
        let relu = node(&g, "aten::relu #25");
        let l2 = node(&g, "aten::linear #28");
        assert!(g.edges.contains(&(l1 as u32, relu as u32)) && g.edges.contains(&(relu as u32, l2 as u32)));
        assert_eq!(g.nodes[l1].shape, "float[32,128]");
        // The weights are parameters read by the layers, and again by the optimizer's updates.
        let w = g.edges.iter().filter(|&&(a, b)| b as usize == l1 && g.nodes[a as usize].opcode == "parameter");
        assert_eq!(w.count(), 3, "input, weight, bias");
        let updates: Vec<&OpNode> = g.nodes.iter().filter(|n| n.opcode == "aten::add_").collect();
        assert_eq!(updates.len(), 6);
        assert!(
            updates.iter().all(|n| n.namespace == "Optimizer.step#SGD.step/aten::add_"),
            "{:?}",
            updates[0].namespace
        );
        let backward = |n: &OpNode| n.namespace.starts_with("backward/");
        assert!(g.nodes.iter().filter(|n| n.opcode == "AddmmBackward0").all(backward));
        // Each all-reduce reads a gradient a backward operator wrote and feeds the division.
        for (k, n) in g.nodes.iter().enumerate().filter(|(_, n)| n.opcode == "all-reduce") {
            assert!(g.edges.iter().any(|&(a, b)| b as usize == k && backward(&g.nodes[a as usize])), "{}", n.name);
            assert!(g.edges.iter().any(|&(a, b)| a as usize == k && g.nodes[b as usize].opcode == "aten::div_"));
        }
        // Listed in execution order: every edge runs forward.
        assert!(g.scheduled && g.edges.iter().all(|&(a, b)| a < b));
    }

    /// The first schema (1.0): `parent`, `op_schema` and `rf_id` on the node, the inputs a list
    /// of values beside `input_types` and `input_shapes`: the same graph as the later schema's.
    #[test]
    fn the_first_schema_reads_as_the_later_one() {
        let first = |id: i64, parent: i64, name: &str, input: i64, output: i64| {
            format!(
                r#"{{"name": "{name}", "id": {id}, "rf_id": {id}, "parent": {parent}, "op_schema": "{name}(Tensor self) -> Tensor", "inputs": [[{input},1,0,4,4,"cpu"]], "input_shapes": [[4]], "input_types": ["Tensor(float)"], "outputs": [[{output},2,0,4,4,"cpu"]], "output_shapes": [[4]], "output_types": ["Tensor(float)"]}}"#
            )
        };
        let root = r#"{"name": "[pytorch|profiler|execution_graph|process]", "id": 1, "parent": 1, "op_schema": "", "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []}"#;
        let text = format!(
            r#"{{"schema": "1.0.1", "pid": 7, "nodes": [{root}, {}, {}]}}"#,
            first(2, 1, "aten::relu", 10, 11),
            first(3, 1, "aten::sigmoid", 11, 12)
        );
        assert!(looks_like(text.as_bytes()));
        let (g, w) = parse("first.json", text.as_bytes()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let (relu, sigmoid) = (node(&g, "aten::relu #2"), node(&g, "aten::sigmoid #3"));
        assert!(g.edges.contains(&(relu as u32, sigmoid as u32)), "{:?}", g.edges);
        assert_eq!(g.nodes[relu].shape, "float[4]");
    }

    fn et(nodes: &str) -> String {
        format!(r#"{{"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{nodes}]}}"#)
    }

    #[test]
    fn a_loop_of_parents_is_refused_and_repairs_are_counted() {
        let op = |id: i64, parent: i64| {
            format!(
                r#"{{"id": {id}, "name": "aten::relu", "ctrl_deps": {parent}, "inputs": {{"values": [[{id}, 1, 0, 4, 4, "cpu"]], "shapes": [[4]], "types": ["Tensor(float)"]}}, "outputs": {{"values": [], "shapes": [], "types": []}}, "attrs": [{{"name": "op_schema", "type": "string", "value": "aten::relu(Tensor self) -> Tensor"}}]}}"#
            )
        };
        let e = parse("loop.json", et(&[op(2, 3), op(3, 4), op(4, 2)].join(",")).as_bytes()).unwrap_err().to_string();
        assert!(e.contains("loop.json") && e.contains("cycle") && !e.contains('\n'), "{e}");
        let (g, w) =
            parse("repair.json", et(&[op(2, 1), op(2, 1), op(5, 99), r#"{"id": "x"}"#.into()].join(",")).as_bytes())
                .unwrap();
        assert_eq!(g.nodes.iter().filter(|n| n.opcode == "aten::relu").count(), 2);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w.iter().any(|l| l.contains("1 node(s) repeat")) && w.iter().any(|l| l.contains("ctrl_deps parent")));
        for bad in ["", "{", r#"{"nodes": 3}"#, r#"[1,2]"#, &et("")] {
            let e = parse("bad.json", bad.as_bytes()).unwrap_err().to_string();
            assert!(e.starts_with("bad.json") && !e.contains('\n'), "{e}");
        }
    }

    /// The recording flipped byte by byte and cut short: an operator graph or a one-line
    /// error, never a panic.
    #[test]
    fn mutated_execution_traces_never_panic() {
        let mut plain = Vec::new();
        let gz = std::fs::read(fixture("torch-et/rank1.et.json.gz")).unwrap();
        flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
        let mut cases = 0;
        for i in (0..plain.len()).step_by((plain.len() / 400).max(1)) {
            for x in [0x01u8, 0x08, 0x20, 0x80] {
                let mut b = plain.clone();
                b[i] ^= x;
                let r = std::panic::catch_unwind(|| parse("m", &b).map_err(|e| e.to_string()));
                assert!(r.is_ok(), "byte {i} ^ {x:#x} panicked");
                if let Ok(Err(e)) = r {
                    assert!(!e.contains('\n'), "{e}");
                }
                cases += 1;
            }
        }
        for cut in (0..plain.len()).step_by((plain.len() / 50).max(1)) {
            assert!(std::panic::catch_unwind(|| parse("m", &plain[..cut]).is_ok()).is_ok(), "cut at {cut}");
        }
        assert!(cases > 1500, "{cases}");
    }
}
