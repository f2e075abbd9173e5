//! Similar substructures stacked (Wei et al., §5.1.2): a computational graph repeats itself (a
//! model's layers, the optimizer's update of each parameter), and the strategy view draws each
//! repeated substructure once, as a stack, with how many it stands for.
//!
//! A substructure here is a connected piece of one namespace: the computing operators that share
//! a namespace (the `op_name` path without the operator), split into the pieces their data edges
//! connect (the update of each parameter is one piece of the optimizer's namespace; each layer of
//! a model whose layers have their own namespaces is one). Its shape is its operators' opcodes in
//! execution order, the data edges among them, and its namespace with digits dropped
//! (`layer3` and `layer4` alike); output shapes are left out, so the update of a weight and of a
//! bias are alike. Pieces of one shape, at least two operators each, are stacked: the first to
//! run is drawn, the others are hidden, as are parameters and constants read only by hidden
//! operators.

use std::collections::HashMap;

use exaviz_model::opgraph::{OpClass, OpGraph};

/// Which operators are stacked away, and the stacks drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stacks {
    /// Per operator: hidden behind a stack's first piece.
    pub hidden: Vec<bool>,
    /// Per operator: how many pieces (itself included) the stack it heads stands for; 0 where
    /// it heads none. Every operator of a drawn piece carries it.
    pub copies: Vec<u32>,
    /// Each stack: its first piece's first operator and how many pieces it stands for.
    pub stacks: Vec<(u32, u32)>,
}

impl Stacks {
    /// Nothing stacked.
    pub fn none(n: usize) -> Self {
        Stacks { hidden: vec![false; n], copies: vec![0; n], stacks: Vec::new() }
    }

    /// Operators hidden.
    pub fn hidden_count(&self) -> usize {
        self.hidden.iter().filter(|&&h| h).count()
    }
}

fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        parent[i as usize] = parent[parent[i as usize] as usize];
        i = parent[i as usize];
    }
    i
}

/// The namespace of an `op_name` (its path without the operator's last segment).
fn namespace_of(op_name: &str) -> &str {
    op_name.rsplit_once('/').map_or("", |(ns, _)| ns)
}

/// Stacks the similar substructures among the operators `shown` says are drawn.
pub fn stacks(g: &OpGraph, shown: &dyn Fn(usize) -> bool) -> Stacks {
    let n = g.nodes.len();
    let mut out = Stacks::none(n);
    let unit =
        |i: usize| shown(i) && g.nodes[i].class != OpClass::Input && !namespace_of(&g.nodes[i].namespace).is_empty();
    // Pieces: operators of one namespace joined by their data edges.
    let mut parent: Vec<u32> = (0..n as u32).collect();
    for &(a, b) in &g.edges {
        let (a, b) = (a as usize, b as usize);
        if a < n
            && b < n
            && unit(a)
            && unit(b)
            && namespace_of(&g.nodes[a].namespace) == namespace_of(&g.nodes[b].namespace)
        {
            let (ra, rb) = (find(&mut parent, a as u32), find(&mut parent, b as u32));
            if ra != rb {
                parent[ra.max(rb) as usize] = ra.min(rb);
            }
        }
    }
    let mut pieces: HashMap<u32, Vec<u32>> = HashMap::new();
    for i in (0..n).filter(|&i| unit(i)) {
        let r = find(&mut parent, i as u32);
        pieces.entry(r).or_default().push(i as u32);
    }
    // Each piece's shape, its operators in execution order.
    let mut local = vec![u32::MAX; n];
    let mut inner: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    let mut by_shape: HashMap<String, Vec<Vec<u32>>> = HashMap::new();
    let mut listed: Vec<Vec<u32>> = pieces.into_values().filter(|p| p.len() >= 2).collect();
    for p in &mut listed {
        p.sort_by_key(|&i| (g.exec_rank(i as usize), i));
        for (k, &i) in p.iter().enumerate() {
            local[i as usize] = k as u32;
        }
    }
    for &(a, b) in &g.edges {
        let (a, b) = (a as usize, b as usize);
        if a < n
            && b < n
            && local[a] != u32::MAX
            && local[b] != u32::MAX
            && find(&mut parent, a as u32) == find(&mut parent, b as u32)
        {
            inner.entry(find(&mut parent, a as u32)).or_default().push((local[a], local[b]));
        }
    }
    for p in listed {
        let root = find(&mut parent, p[0]);
        let mut edges = inner.remove(&root).unwrap_or_default();
        edges.sort_unstable();
        let ns: String =
            namespace_of(&g.nodes[p[0] as usize].namespace).chars().filter(|c| !c.is_ascii_digit()).collect();
        let ops: Vec<&str> = p.iter().map(|&i| g.nodes[i as usize].opcode.as_str()).collect();
        let shape = format!("{ns}|{}|{edges:?}", ops.join(","));
        by_shape.entry(shape).or_default().push(p);
    }
    let mut groups: Vec<Vec<Vec<u32>>> = by_shape.into_values().filter(|v| v.len() >= 2).collect();
    for v in &mut groups {
        v.sort_by_key(|p| (g.exec_rank(p[0] as usize), p[0]));
    }
    groups.sort_by_key(|v| (g.exec_rank(v[0][0] as usize), v[0][0]));
    for v in groups {
        let count = v.len() as u32;
        for &i in &v[0] {
            out.copies[i as usize] = count;
        }
        out.stacks.push((v[0][0], count));
        for p in &v[1..] {
            for &i in p {
                out.hidden[i as usize] = true;
            }
        }
    }
    // Parameters and constants (and what only views them) read by hidden operators alone.
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(a, b) in &g.edges {
        if (a as usize) < n && (b as usize) < n && shown(b as usize) {
            users[a as usize].push(b);
        }
    }
    for _ in 0..2 {
        for i in (0..n).rev() {
            if shown(i)
                && !out.hidden[i]
                && !unit(i)
                && !users[i].is_empty()
                && users[i].iter().all(|&u| out.hidden[u as usize])
            {
                out.hidden[i] = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::opgraph::OpNode;

    fn node(name: &str, opcode: &str, namespace: &str, class: OpClass) -> OpNode {
        let (shape, namespace) = (format!("f32[{}]", name.len()), format!("{namespace}/{opcode}"));
        OpNode { shape, namespace, ..OpNode::new(name, opcode, class) }
    }

    /// Three parameters' updates (a multiply, then a subtract, in the optimizer's namespace) are
    /// one stack of three; the third parameter's update with an extra operator is not like them;
    /// two layers with their own namespaces stack; the hidden updates' parameters hide too.
    #[test]
    fn repeated_pieces_stack_and_unlike_ones_stay() {
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for k in 0..4u32 {
            let base = nodes.len() as u32;
            nodes.push(node(&format!("p{k}"), "parameter", "", OpClass::Input));
            nodes.push(node(&format!("mul{k}"), "multiply", "step", OpClass::Other));
            nodes.push(node(&format!("sub{k}"), "subtract", "step", OpClass::Other));
            edges.extend([(base, base + 2), (base + 1, base + 2)]);
            if k == 3 {
                nodes.push(node("neg3", "negate", "step", OpClass::Other));
                edges.push((base + 2, base + 3));
            }
        }
        for layer in 0..2u32 {
            let base = nodes.len() as u32;
            nodes.push(node(&format!("dot{layer}"), "dot", &format!("model/layer{layer}"), OpClass::Other));
            nodes.push(node(&format!("relu{layer}"), "maximum", &format!("model/layer{layer}"), OpClass::Other));
            edges.push((base, base + 1));
        }
        let g = OpGraph { nodes, edges, ..OpGraph::default() };
        let s = stacks(&g, &|_| true);
        let name = |i: u32| g.nodes[i as usize].name.as_str();
        let stacked: Vec<(&str, u32)> = s.stacks.iter().map(|&(i, c)| (name(i), c)).collect();
        assert_eq!(stacked, [("mul0", 3), ("dot0", 2)]);
        let hidden: Vec<&str> = (0..g.nodes.len() as u32).filter(|&i| s.hidden[i as usize]).map(name).collect();
        assert_eq!(hidden, ["p1", "mul1", "sub1", "p2", "mul2", "sub2", "dot1", "relu1"]);
        assert_eq!((s.copies[2], s.copies[12]), (3, 0), "sub0 heads a stack of 3, neg3 none");
        // Nothing shown, nothing stacked.
        assert_eq!(stacks(&g, &|_| false), Stacks::none(g.nodes.len()));
    }
}
