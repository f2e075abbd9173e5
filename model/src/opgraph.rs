//! An operator graph: the computational graph of one training step, as a compiler writes it
//! (XLA's HLO modules): operators with their output shapes, namespaces and parallel strategies,
//! and the data edges between them. It is what the parallelism-strategy view of Wei et al.
//! (the enhanced Marey's graph's companion) lays out; here it is read and summarised.

use serde::{Deserialize, Serialize};

/// How an operator's output is partitioned over devices (XLA's `sharding`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// No sharding written (before propagation, or an operator that does not say).
    Unknown,
    /// The whole output on every device.
    Replicated,
    /// The whole output on one device.
    Maximal(u32),
    /// The output cut into `partitions[d]` pieces along dimension `d` (the paper's
    /// `S = (n_s, n_p1, ...)`), over `devices` devices; with `replicated_last`, the last entry
    /// counts copies of each piece rather than a dimension's pieces.
    Tiled { partitions: Vec<u32>, replicated_last: bool },
    /// A tuple's shardings, one per element.
    Tuple(Vec<Strategy>),
}

impl Strategy {
    /// Pieces the output is cut into (1: whole; a tuple: its most cut element).
    pub fn pieces(&self) -> u32 {
        match self {
            Strategy::Tiled { partitions, replicated_last } => {
                let dims =
                    if *replicated_last { &partitions[..partitions.len().saturating_sub(1)] } else { &partitions[..] };
                dims.iter().fold(1u32, |a, &p| a.saturating_mul(p.max(1)))
            }
            Strategy::Tuple(parts) => parts.iter().map(Strategy::pieces).max().unwrap_or(1),
            _ => 1,
        }
    }

    /// How the data is cut, whatever the dimensions are called: the pieces along each cut
    /// dimension, sorted (`[8,1]`, `[8,1,1]` and `[1,8]` are all `[8]`: a reshape or a transpose
    /// keeps every device's piece; replicated is `[]`). `None`: unknown or a tuple.
    pub fn cut(&self) -> Option<Vec<u32>> {
        match self {
            Strategy::Replicated => Some(Vec::new()),
            Strategy::Maximal(d) => Some(vec![0, *d]),
            Strategy::Tiled { partitions, replicated_last } => {
                let dims =
                    if *replicated_last { &partitions[..partitions.len().saturating_sub(1)] } else { &partitions[..] };
                let mut cut: Vec<u32> = dims.iter().copied().filter(|&p| p > 1).collect();
                cut.sort_unstable();
                Some(cut)
            }
            Strategy::Unknown | Strategy::Tuple(_) => None,
        }
    }

    /// As the paper writes it: `[8,1]`, `replicated`, `device 3`, `?`; a tuple's elements in
    /// parentheses.
    pub fn label(&self) -> String {
        match self {
            Strategy::Unknown => "?".into(),
            Strategy::Replicated => "replicated".into(),
            Strategy::Maximal(d) => format!("device {d}"),
            Strategy::Tiled { partitions, replicated_last } => {
                let p: Vec<String> = partitions.iter().map(u32::to_string).collect();
                format!("[{}]{}", p.join(","), if *replicated_last { " (last replicated)" } else { "" })
            }
            Strategy::Tuple(parts) => format!("({})", parts.iter().map(Strategy::label).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// What an operator is, for the strategy view's colours and counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum OpClass {
    /// Moves data between devices (all-reduce, all-gather, collective-permute, send, ...).
    Communication,
    /// Its output is partitioned differently from an operand's, without communicating.
    Redistribution,
    /// Its output is cut into pieces over devices.
    Partitioned,
    /// A parameter or constant: the subordinate nodes above the main line.
    Input,
    Other,
}

impl OpClass {
    pub fn name(self) -> &'static str {
        match self {
            OpClass::Communication => "communication",
            OpClass::Redistribution => "redistribution",
            OpClass::Partitioned => "partitioned output",
            OpClass::Input => "parameter or constant",
            OpClass::Other => "other",
        }
    }
}

/// One operator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpNode {
    pub name: String,
    pub opcode: String,
    /// The output's shape as written (`f32[128,256]`, a tuple in parentheses).
    pub shape: String,
    /// The namespace path (`jit(step)/jvp()/dot_general`), empty where none is written.
    pub namespace: String,
    pub strategy: Strategy,
    pub class: OpClass,
    /// The computation holding it (index into [`OpGraph::computations`]).
    pub computation: u32,
    /// For a collective-permute (a pipeline's send and receive): its (source, target) pairs.
    pub pairs: Vec<(u32, u32)>,
    /// The computations it calls (fusions, loops' bodies, reductions' `to_apply`).
    pub calls: Vec<String>,
}

impl OpNode {
    /// An operator of computation 0 with no shape, namespace, pairs or calls, its strategy
    /// unknown.
    pub fn new(name: &str, opcode: &str, class: OpClass) -> Self {
        OpNode {
            name: name.into(),
            opcode: opcode.into(),
            shape: String::new(),
            namespace: String::new(),
            strategy: Strategy::Unknown,
            class,
            computation: 0,
            pairs: Vec::new(),
            calls: Vec::new(),
        }
    }
}

/// The graph of one module.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpGraph {
    pub name: String,
    /// What wrote it: `XLA HLO module`, `PyTorch execution trace`.
    pub source: String,
    /// Each computation's name, the entry's marked by `entry`.
    pub computations: Vec<String>,
    pub entry: Option<u32>,
    pub nodes: Vec<OpNode>,
    /// Data edges, operand to user (indices into `nodes`).
    pub edges: Vec<(u32, u32)>,
    /// Whether the module lists its instructions in execution order (`is_scheduled=true`).
    pub scheduled: bool,
    /// Partitions (devices) of the module, where written (`num_partitions`).
    pub partitions: u32,
    /// Each operator's place in the execution order where a profile of the same run gives it
    /// (its first start on any device; operators the profile does not name after those, in
    /// listing order); empty: the listing order (a scheduled module's is the execution order).
    pub executed: Vec<u32>,
    /// Each operator's name in the profile of the same run where it differs from its own (a
    /// PyTorch execution trace's operators, named `aten::linear #5`, run as `aten::linear`);
    /// empty: the operators' own names. The Marey view's bands are named so.
    pub profile_names: Vec<String>,
}

/// Whether an opcode moves data between devices.
pub fn is_communication(opcode: &str) -> bool {
    let base = opcode.trim_end_matches("-start").trim_end_matches("-done").trim_end_matches("-update");
    matches!(
        base,
        "all-reduce"
            | "all-gather"
            | "reduce-scatter"
            | "all-to-all"
            | "ragged-all-to-all"
            | "collective-permute"
            | "collective-broadcast"
            | "send"
            | "recv"
    )
}

impl OpGraph {
    /// Whether every index the graph holds points where it should (a graph read back from a
    /// store's file is checked before any view indexes with it).
    pub fn check(&self) -> Result<(), String> {
        let n = self.nodes.len() as u32;
        if let Some(&(a, b)) = self.edges.iter().find(|&&(a, b)| a >= n || b >= n) {
            return Err(format!("an edge {a} -> {b} names an operator past the {n} there are"));
        }
        let c = self.computations.len() as u32;
        if self.entry.is_some_and(|e| e >= c) || self.nodes.iter().any(|o| o.computation >= c) {
            return Err(format!("an operator or the entry names a computation past the {c} there are"));
        }
        if !self.executed.is_empty() && self.executed.len() != self.nodes.len() {
            return Err("the execution order does not list every operator".into());
        }
        Ok(())
    }

    /// Operator `i`'s name in the run's profile ([`OpGraph::profile_names`], else its own).
    pub fn profile_name(&self, i: usize) -> &str {
        match self.profile_names.get(i) {
            Some(n) if !n.is_empty() => n,
            _ => &self.nodes[i].name,
        }
    }

    /// Operator `i`'s place in the execution order ([`OpGraph::executed`], else the listing).
    pub fn exec_rank(&self, i: usize) -> u32 {
        self.executed.get(i).copied().unwrap_or(i as u32)
    }

    /// Sets the execution order from the first start time of each operator a profile names
    /// (`first_start(name)`), the others after them in listing order.
    pub fn order_by(&mut self, first_start: impl Fn(&str) -> Option<u64>) {
        let mut keyed: Vec<(u8, u64, usize)> = (0..self.nodes.len())
            .map(|i| match first_start(&self.nodes[i].name) {
                Some(t) => (0, t, i),
                None => (1, 0, i),
            })
            .collect();
        keyed.sort_unstable();
        let mut executed = vec![0u32; self.nodes.len()];
        for (rank, &(_, _, i)) in keyed.iter().enumerate() {
            executed[i] = rank as u32;
        }
        self.executed = executed;
    }

    /// Sets each node's class from its opcode and strategy: communication by opcode; inputs;
    /// redistribution where an operand's known strategy differs from the node's known one;
    /// partitioned where the output is cut into pieces.
    pub fn classify(&mut self) {
        let mut operands: Vec<Vec<u32>> = vec![Vec::new(); self.nodes.len()];
        for &(a, b) in &self.edges {
            operands[b as usize].push(a);
        }
        let classes: Vec<OpClass> = (0..self.nodes.len())
            .map(|i| {
                let n = &self.nodes[i];
                if is_communication(&n.opcode) {
                    return OpClass::Communication;
                }
                if matches!(n.opcode.as_str(), "parameter" | "constant" | "iota") {
                    return OpClass::Input;
                }
                let cut = n.strategy.cut();
                let differs = cut.is_some()
                    && operands[i].iter().any(|&a| {
                        let c = self.nodes[a as usize].strategy.cut();
                        c.is_some() && c != cut
                    });
                if differs && !matches!(n.opcode.as_str(), "dot" | "convolution") {
                    OpClass::Redistribution
                } else if n.strategy.pieces() > 1 {
                    OpClass::Partitioned
                } else {
                    OpClass::Other
                }
            })
            .collect();
        for (n, c) in self.nodes.iter_mut().zip(classes) {
            n.class = c;
        }
    }

    /// Pipeline stages from the collective-permutes' pairs: the devices in the order their
    /// transfers chain (0 -> 1 -> 2 ...), starting from a source that is no pair's target.
    pub fn stage_order(&self) -> Vec<u32> {
        let mut next = std::collections::BTreeMap::new();
        let mut targets = std::collections::BTreeSet::new();
        for n in &self.nodes {
            for &(s, t) in &n.pairs {
                next.entry(s).or_insert(t);
                targets.insert(t);
            }
        }
        let Some(mut at) = next.keys().copied().find(|s| !targets.contains(s)).or_else(|| next.keys().next().copied())
        else {
            return Vec::new();
        };
        let mut order = vec![at];
        while let Some(&t) = next.get(&at) {
            if order.contains(&t) {
                break;
            }
            order.push(t);
            at = t;
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_count_their_pieces_and_read_as_the_paper_writes_them() {
        let s = Strategy::Tiled { partitions: vec![8, 1], replicated_last: false };
        assert_eq!((s.pieces(), s.label()), (8, "[8,1]".to_string()));
        let s = Strategy::Tiled { partitions: vec![2, 1, 4], replicated_last: true };
        assert_eq!(s.pieces(), 2);
        assert_eq!(Strategy::Replicated.pieces(), 1);
        assert_eq!(Strategy::Tuple(vec![Strategy::Replicated, Strategy::Maximal(2)]).label(), "(replicated, device 2)");
        assert!(
            is_communication("all-reduce-start") && is_communication("collective-permute") && !is_communication("dot")
        );
        // A reshape or transpose keeps each device's piece: the same cut; replicated differs.
        let a = Strategy::Tiled { partitions: vec![8, 1, 1], replicated_last: false };
        let b = Strategy::Tiled { partitions: vec![1, 8], replicated_last: false };
        assert_eq!(a.cut(), b.cut());
        assert_ne!(a.cut(), Strategy::Replicated.cut());
    }

    /// A profile's first start times order the operators it names; the others follow in
    /// listing order.
    #[test]
    fn the_execution_order_follows_the_profile() {
        let node = |name: &str| OpNode {
            name: name.into(),
            opcode: "add".into(),
            shape: "f32[1]".into(),
            namespace: String::new(),
            strategy: Strategy::Unknown,
            class: OpClass::Other,
            computation: 0,
            pairs: Vec::new(),
            calls: Vec::new(),
        };
        let mut g = OpGraph { nodes: vec![node("a"), node("b"), node("c"), node("d")], ..OpGraph::default() };
        assert_eq!((0..4).map(|i| g.exec_rank(i)).collect::<Vec<_>>(), [0, 1, 2, 3], "the listing without a profile");
        g.order_by(|n| match n {
            "a" => Some(50),
            "c" => Some(10),
            _ => None,
        });
        assert_eq!((0..4).map(|i| g.exec_rank(i)).collect::<Vec<_>>(), [1, 2, 0, 3]);
    }
}
