//! The strategy view's force layout (Wei et al., §5.1.1 step 2) as a compute stage: `iterations`
//! steps of `force_layout`, each reading every operator's position and writing the next into a
//! second buffer (the two swap every step), with a temperature that falls linearly to one unit.
//! Shader: `force_layout.wgsl` beside this file; CPU mirror: [`mirror`]. Positions are
//! fixed-point integers, so both runners give the same positions, exactly.

pub mod mirror;

use super::{Kernel, Recording, Runner, StageError, check_binding};

pub use crate::force_layout::mirror::{Node, SUBORDINATE};

/// Positions stay within ±2^28 units, so no sum in the kernel can overflow an i32.
pub const MAX_COORD: i32 = 1 << 28;

/// An operator graph ready for the layout: initial positions, and per operator its neighbours
/// in `adj` (operands first, then users; see [`Node`]). The operators are ordered so that the
/// `window` operators on each side of one are those it may collide with (the view sorts them by
/// their initial position).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForceGraph {
    pub positions: Vec<[i32; 2]>,
    pub nodes: Vec<Node>,
    pub adj: Vec<u32>,
}

/// The layout's constants, in position units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceParams {
    pub iterations: u32,
    pub window: u32,
    pub pitch: i32,
    pub gap: i32,
    pub box_w: i32,
    pub box_h: i32,
    pub axis: i32,
    pub row: i32,
    pub max_move: i32,
}

impl ForceGraph {
    /// The graph of `edges` (operand, user) over operators at `positions`: a main operator's
    /// neighbours are its main operands and users, a subordinate one's its first user in the
    /// execution order (it belongs to that operator). `seq` is each operator's place in the
    /// execution order.
    pub fn build(positions: Vec<[i32; 2]>, seq: &[u32], subordinate: &[bool], edges: &[(u32, u32)]) -> Self {
        let n = positions.len();
        let mut operands: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut users: Vec<Vec<u32>> = vec![Vec::new(); n];
        for &(a, b) in edges {
            let (a, b) = (a as usize, b as usize);
            if a >= n || b >= n || a == b {
                continue;
            }
            if subordinate[a] {
                let first = users[a].first().map(|&u| seq.get(u as usize).copied().unwrap_or(u));
                if first.is_none_or(|f| seq.get(b).copied().unwrap_or(b as u32) < f) {
                    users[a] = vec![b as u32];
                }
            } else if !subordinate[b] {
                users[a].push(b as u32);
                operands[b].push(a as u32);
            }
        }
        let mut g = ForceGraph { positions, ..ForceGraph::default() };
        for i in 0..n {
            let first = g.adj.len() as u32;
            g.adj.extend_from_slice(&operands[i]);
            g.adj.extend_from_slice(&users[i]);
            g.nodes.push(Node {
                first,
                operands: operands[i].len() as u32,
                users: users[i].len() as u32,
                seq: seq.get(i).copied().unwrap_or(i as u32),
                flags: if subordinate[i] { SUBORDINATE } else { 0 },
            });
        }
        g
    }

    fn validate(&self, p: &ForceParams) -> Result<(), String> {
        let n = self.positions.len();
        if self.nodes.len() != n {
            return Err(format!("{} nodes for {n} positions", self.nodes.len()));
        }
        if n > u32::MAX as usize / 2 {
            return Err(format!("{n} operators are more than one dispatch takes"));
        }
        if let Some(v) = self.positions.iter().flatten().find(|v| v.abs() >= MAX_COORD) {
            return Err(format!("position {v} out of range (±2^28)"));
        }
        if let Some(&a) = self.adj.iter().find(|&&a| a as usize >= n) {
            return Err(format!("neighbour {a} of {n} operators"));
        }
        let reach = 4 * i64::from(p.pitch);
        for (i, node) in self.nodes.iter().enumerate() {
            let degree = u64::from(node.operands) + u64::from(node.users);
            if u64::from(node.first) + degree > self.adj.len() as u64 {
                return Err(format!("operator {i}: neighbours past the end of the list"));
            }
            if degree as i64 * reach >= i64::from(i32::MAX) {
                return Err(format!("operator {i}: {degree} neighbours are too many"));
            }
        }
        let positive = [p.pitch, p.box_w, p.box_h];
        if positive.iter().any(|&v| v <= 0 || v > 1 << 16) || p.gap < 0 || p.gap > p.pitch {
            return Err("pitch and boxes must be 1 to 65536 units, the gap 0 to the pitch".into());
        }
        if p.max_move < 1 || p.max_move > 1 << 16 || p.row < 0 || p.row > 1 << 16 || p.axis.abs() >= MAX_COORD {
            return Err("temperature, row or axis out of range".into());
        }
        if p.window > 64 || p.iterations > 10_000 {
            return Err("window (at most 64) or iterations (at most 10,000) out of range".into());
        }
        Ok(())
    }
}

pub fn record<'a>(g: &'a ForceGraph, p: &ForceParams, max_binding_bytes: u64) -> Result<Recording<'a>, StageError> {
    g.validate(p).map_err(StageError::Input)?;
    let n = g.positions.len() as u64;
    check_binding("force_layout.nodes", n * size_of::<Node>() as u64, max_binding_bytes)?;
    check_binding("force_layout.adj", g.adj.len() as u64 * 4, max_binding_bytes)?;
    let mut rec = Recording::default();
    let a = rec.alloc(n * 2, "force_layout.pos_a");
    let b = rec.alloc(n * 2, "force_layout.pos_b");
    let nodes = rec.alloc(n * 5, "force_layout.nodes");
    let adj = rec.alloc(g.adj.len() as u64, "force_layout.adj");
    rec.upload(a, bytemuck::cast_slice::<[i32; 2], u32>(&g.positions));
    rec.upload(nodes, bytemuck::cast_slice::<Node, u32>(&g.nodes));
    rec.upload(adj, g.adj.as_slice());
    let (mut from, mut to) = (a, b);
    for t in 0..p.iterations {
        // The temperature falls linearly from max_move to one unit.
        let left = i64::from(p.iterations - t);
        let max_move = (i64::from(p.max_move) * left / i64::from(p.iterations)).max(1) as i32;
        let params = crate::force_layout::mirror::Params {
            n: n as u32,
            window: p.window,
            pitch: p.pitch,
            gap: p.gap,
            box_w: p.box_w,
            box_h: p.box_h,
            axis: p.axis,
            row: p.row,
            max_move,
            pad0: 0,
            pad1: 0,
            pad2: 0,
        };
        let words = bytemuck::cast_slice::<_, u32>(std::slice::from_ref(&params)).to_vec();
        rec.dispatch(Kernel::ForceLayout, n as u32, words, vec![(1, from), (2, to), (3, nodes), (4, adj)]);
        std::mem::swap(&mut from, &mut to);
    }
    rec.download(from);
    Ok(rec)
}

/// Runs the layout; the operators' positions after the last step.
pub fn run(runner: &mut dyn Runner, g: &ForceGraph, p: &ForceParams) -> Result<Vec<[i32; 2]>, StageError> {
    if g.positions.is_empty() {
        return Ok(Vec::new());
    }
    let rec = record(g, p, runner.max_binding_bytes())?;
    let out = runner.run(&rec)?;
    let words = out.into_iter().next().unwrap_or_default();
    Ok(bytemuck::cast_slice::<u32, [i32; 2]>(&words).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuRunner;

    fn params() -> ForceParams {
        ForceParams {
            iterations: 60,
            window: 4,
            pitch: 256,
            gap: 128,
            box_w: 180,
            box_h: 256,
            axis: 0,
            row: 512,
            max_move: 128,
        }
    }

    /// Two operands of one user start on top of each other: the layout separates them and
    /// keeps both left of their user by the gap; the parameter stays above the axis.
    #[test]
    fn collisions_separate_and_operands_stay_left() {
        // 0, 1 -> 2; parameter 3 -> 2.
        let g = ForceGraph {
            positions: vec![[0, 0], [0, 0], [256, 0], [256, -512]],
            nodes: vec![
                Node { first: 0, operands: 0, users: 1, seq: 0, flags: 0 },
                Node { first: 1, operands: 0, users: 1, seq: 1, flags: 0 },
                Node { first: 2, operands: 2, users: 0, seq: 2, flags: 0 },
                Node { first: 4, operands: 0, users: 1, seq: 3, flags: SUBORDINATE },
            ],
            adj: vec![2, 2, 0, 1, 2],
        };
        let out = run(&mut CpuRunner::default(), &g, &params()).unwrap();
        let p = params();
        assert!(out[2][0] - out[0][0] >= p.gap && out[2][0] - out[1][0] >= p.gap, "{out:?}");
        // Separated to within the last steps' temperature (a few units of 256).
        let (d0, d1) = ((out[0][0] - out[1][0]).abs(), (out[0][1] - out[1][1]).abs());
        assert!(d0 >= p.box_w - 8 || d1 >= p.box_h - 8, "operands still collide: {out:?}");
        assert!(out[3][1] <= p.axis - p.row && out[2][1] >= p.axis, "{out:?}");
    }

    #[test]
    fn dangling_neighbours_and_wild_positions_are_refused() {
        let mut g = ForceGraph {
            positions: vec![[0, 0]],
            nodes: vec![Node { first: 0, operands: 1, users: 0, seq: 0, flags: 0 }],
            adj: vec![7],
        };
        assert!(record(&g, &params(), 1 << 20).is_err());
        g.adj = vec![0];
        g.nodes[0].first = 1;
        assert!(record(&g, &params(), 1 << 20).is_err());
        g.nodes[0].first = 0;
        g.positions[0] = [MAX_COORD, 0];
        assert!(record(&g, &params(), 1 << 20).is_err());
    }
}
