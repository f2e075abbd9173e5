//! The strategy view's layout (Wei et al., §5.1.1): operators start in columns by their depth in
//! the data flow, then the force layout (the `force_layout` compute stage) moves them along the
//! execution order: an operator at an expected distance from its operands and users and never
//! left of an operand, the later of two operators on one lane behind the earlier, collisions
//! separated, the main line on the central axis and the subordinate operators (parameters,
//! constants and what only reads them) above it. A pipeline's graph is then cut into chunks at
//! its transfers (collective-permutes, sends and receives), and each chunk is placed in its
//! pipeline stage's band, the bands stacked in the stage order of the transfers' pairs (§5.1.1
//! step 3).

use exaviz_compute::Backend;
use exaviz_compute::StageError;
use exaviz_compute::force_layout;
use exaviz_compute::force_layout::{ForceGraph, ForceParams};
use exaviz_model::opgraph::{OpClass, OpGraph};

/// Position units per column: the expected distance between an operand and its user.
pub const PITCH: i32 = 256;
/// The least distance between an operand and its user.
const GAP: i32 = 192;
/// Closer than this in x and `BOX_H` in y, two operators collide.
const BOX_W: i32 = 180;
const BOX_H: i32 = 256;
/// Force steps, in rounds (see `layout`).
pub const ITERATIONS: u32 = 160;
const ROUNDS: u32 = 4;

/// Where each drawn operator is: its node and its rectangle `[x0, y0, x1, y1]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placed {
    pub nodes: Vec<u32>,
    pub rects: Vec<[f32; 4]>,
    /// The room between two rows.
    pub gap: f32,
    /// Each placed operator's chunk (0 where the graph is not cut).
    pub chunks: Vec<u32>,
    /// Whether each placed operator is subordinate (above the main line).
    pub subordinate: Vec<bool>,
    /// Each chunk's band: its pipeline stage (a device of the transfers' pairs) and `[y0, y1]`.
    pub bands: Vec<(u32, [f32; 2])>,
}

/// Whether an operator ends a pipeline chunk: a transfer between stages.
pub fn is_transfer(opcode: &str) -> bool {
    opcode.starts_with("collective-permute") || opcode.starts_with("send") || opcode.starts_with("recv")
}

/// Operators that only change how their operand is viewed or laid out: reading only
/// subordinate operators, they are subordinate too (a bitcast of a parameter, a broadcast of a
/// constant).
fn is_view_of_input(opcode: &str) -> bool {
    matches!(opcode, "bitcast" | "broadcast" | "reshape" | "copy" | "convert" | "transpose" | "get-tuple-element")
}

/// The shown operators' data flow: operands and users among the shown, and which are
/// subordinate (inputs, and what only views them, such as a bitcast of a parameter).
struct Flow {
    shown: Vec<bool>,
    operands: Vec<Vec<u32>>,
    users: Vec<Vec<u32>>,
    sub: Vec<bool>,
}

impl Flow {
    /// The flow among the entry computation's operators not `hidden` (an empty mask hides none).
    fn new(g: &OpGraph, hidden: &[bool]) -> Self {
        let n = g.nodes.len();
        let shown: Vec<bool> = g
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| g.entry.is_none_or(|e| node.computation == e) && !hidden.get(i).copied().unwrap_or(false))
            .collect();
        let mut operands: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut users: Vec<Vec<u32>> = vec![Vec::new(); n];
        for &(a, b) in &g.edges {
            if shown[a as usize] && shown[b as usize] && a != b {
                operands[b as usize].push(a);
                users[a as usize].push(b);
            }
        }
        let mut sub: Vec<bool> = g.nodes.iter().map(|node| node.class == OpClass::Input).collect();
        // HLO defines operands before users, mostly: two passes settle the rest.
        for _ in 0..2 {
            for i in 0..n {
                if !sub[i] && is_view_of_input(&g.nodes[i].opcode) && !operands[i].is_empty() {
                    sub[i] = operands[i].iter().all(|&a| sub[a as usize]);
                }
            }
        }
        Flow { shown, operands, users, sub }
    }

    /// Columns: a main operator one past its deepest main operand, one without main operands
    /// just before its first user; a subordinate one in its first user's column.
    fn depths(&self) -> Vec<i32> {
        let n = self.shown.len();
        let main = |i: usize| self.shown[i] && !self.sub[i];
        let mut depth = vec![0i32; n];
        for _ in 0..2 {
            for i in (0..n).filter(|&i| main(i)) {
                depth[i] = self.operands[i]
                    .iter()
                    .filter(|&&o| !self.sub[o as usize])
                    .map(|&o| depth[o as usize] + 1)
                    .max()
                    .unwrap_or(0);
            }
        }
        for i in (0..n).filter(|&i| main(i)) {
            if self.operands[i].iter().all(|&o| self.sub[o as usize])
                && let Some(first) = self.users[i].iter().map(|&u| depth[u as usize]).min()
            {
                depth[i] = (first - 1).max(0);
            }
        }
        for _ in 0..2 {
            for i in (0..n).filter(|&i| self.shown[i] && self.sub[i]) {
                depth[i] = self.users[i].iter().map(|&u| depth[u as usize]).min().unwrap_or(0);
            }
        }
        depth
    }

    /// Chunks: a main operator's is its operands' deepest, one more past a transfer; a
    /// subordinate operator takes its first user's.
    fn chunks(&self, g: &OpGraph, depth: &[i32]) -> Vec<u32> {
        let n = self.shown.len();
        let mut order: Vec<usize> = (0..n).filter(|&i| self.shown[i] && !self.sub[i]).collect();
        order.sort_by_key(|&i| (depth[i], i));
        let mut chunk = vec![0u32; n];
        for &i in &order {
            chunk[i] = self.operands[i]
                .iter()
                .filter(|&&o| !self.sub[o as usize])
                .map(|&o| chunk[o as usize] + u32::from(is_transfer(&g.nodes[o as usize].opcode)))
                .max()
                .unwrap_or(0);
        }
        for i in (0..n).filter(|&i| self.shown[i] && self.sub[i]) {
            chunk[i] = self.users[i].iter().map(|&u| chunk[u as usize]).min().unwrap_or(0);
        }
        chunk
    }
}

/// A pipeline's chunks as the view places them: each chunk's stage and its operators, in chunk
/// order; empty where the graph is not cut (no transfers).
pub fn chunks(g: &OpGraph) -> Vec<(u32, usize)> {
    let flow = Flow::new(g, &[]);
    let depth = flow.depths();
    let chunk = flow.chunks(g, &depth);
    let count = (0..g.nodes.len()).filter(|&i| flow.shown[i]).map(|i| chunk[i] + 1).max().unwrap_or(0) as usize;
    if count < 2 {
        return Vec::new();
    }
    let stages = g.stage_order();
    let mut out: Vec<(u32, usize)> =
        (0..count).map(|c| (if stages.is_empty() { c as u32 } else { stages[c % stages.len()] }, 0)).collect();
    for i in (0..g.nodes.len()).filter(|&i| flow.shown[i]) {
        out[chunk[i] as usize].1 += 1;
    }
    out
}

/// The layout of `g`'s entry computation (every operator where it names no entry) in `plot`
/// (`[x0, y0, x1, y1]`), the force steps run on `backend`.
pub fn layout(g: &OpGraph, plot: [f32; 4], backend: &Backend) -> Result<Placed, StageError> {
    layout_shown(g, &[], plot, backend)
}

/// [`layout`] of the operators not `hidden` (stacked away, [`super::stacks`]).
pub fn layout_shown(g: &OpGraph, hidden: &[bool], plot: [f32; 4], backend: &Backend) -> Result<Placed, StageError> {
    let flow = Flow::new(g, hidden);
    let depth = flow.depths();
    let chunk = flow.chunks(g, &depth);
    // Initial positions: the main operators of a column from the axis down, subordinate ones
    // from one row above it up.
    let mut below = std::collections::HashMap::new();
    let mut above = std::collections::HashMap::new();
    let mut start: Vec<(usize, [i32; 2])> = Vec::new();
    for i in (0..g.nodes.len()).filter(|&i| flow.shown[i]) {
        let y = if flow.sub[i] {
            let k = above.entry(depth[i]).or_insert(0i32);
            *k += 1;
            -BOX_H * *k
        } else {
            let k = below.entry(depth[i]).or_insert(0i32);
            *k += 1;
            BOX_H * (*k - 1)
        };
        start.push((i, [depth[i].saturating_mul(PITCH).min(force_layout::MAX_COORD - 1), y.max(-(1 << 27))]));
    }
    start.sort_by_key(|&(i, p)| (p[0], p[1], i));
    let mut at = vec![u32::MAX; g.nodes.len()];
    for (k, &(i, _)) in start.iter().enumerate() {
        at[i] = k as u32;
    }
    let edges: Vec<(u32, u32)> = (0..g.nodes.len())
        .flat_map(|b| flow.operands[b].iter().map(move |&a| (a as usize, b)))
        .filter(|&(a, b)| at[a] != u32::MAX && at[b] != u32::MAX)
        .map(|(a, b)| (at[a], at[b]))
        .collect();
    let mut moved: Vec<[i32; 2]> = start.iter().map(|&(_, p)| p).collect();
    // The stage tests collisions with the operators next in its order; operators move, so the
    // steps run in rounds, each in the order of where the last one left them (by x, then y).
    let mut runner = backend.runner();
    for round in 0..ROUNDS {
        let mut order: Vec<usize> = (0..start.len()).collect();
        order.sort_by_key(|&k| (moved[k][0], moved[k][1], k));
        let mut rank = vec![0u32; start.len()];
        for (r, &k) in order.iter().enumerate() {
            rank[k] = r as u32;
        }
        let seq: Vec<u32> = order.iter().map(|&k| g.exec_rank(start[k].0)).collect();
        let subordinate: Vec<bool> = order.iter().map(|&k| flow.sub[start[k].0]).collect();
        let ranked: Vec<(u32, u32)> = edges.iter().map(|&(a, b)| (rank[a as usize], rank[b as usize])).collect();
        let graph = ForceGraph::build(order.iter().map(|&k| moved[k]).collect(), &seq, &subordinate, &ranked);
        let params = ForceParams {
            iterations: ITERATIONS / ROUNDS,
            window: 12,
            pitch: PITCH,
            gap: GAP,
            box_w: BOX_W,
            box_h: BOX_H,
            axis: 0,
            row: BOX_H,
            max_move: (PITCH * (ROUNDS - round) as i32 / ROUNDS as i32).max(1),
        };
        let out = force_layout::run(runner.as_mut(), &graph, &params)?;
        for (r, &k) in order.iter().enumerate() {
            moved[k] = out[r];
        }
    }
    let subordinate: Vec<bool> = start.iter().map(|&(i, _)| flow.sub[i]).collect();
    legalize(&mut moved, &subordinate);
    Ok(place(&start, &moved, (&chunk, &flow.sub), g, plot))
}

/// Lanes: each operator, left to right, onto the lane (a multiple of `BOX_H` from the axis,
/// on its side of it) nearest where the forces left it whose last operator ends at least
/// `BOX_W` before it, so no two operators overlap whatever the last steps left.
fn legalize(points: &mut [[i32; 2]], subordinate: &[bool]) {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by_key(|&k| (points[k][0], points[k][1], k));
    let mut last: std::collections::HashMap<i32, i32> = std::collections::HashMap::new();
    for k in order {
        let [x, y] = points[k];
        let side = |lane: i32| if subordinate[k] { lane <= -1 } else { lane >= 0 };
        let near = (y as f32 / BOX_H as f32).round() as i32;
        let want = if side(near) {
            near
        } else if subordinate[k] {
            -1
        } else {
            0
        };
        let free = |lane: i32| last.get(&lane).is_none_or(|&lx| x - lx >= BOX_W);
        let lane = (0..)
            .flat_map(|step: i32| [want + step, want - step])
            .find(|&lane| side(lane) && free(lane))
            .unwrap_or(want);
        last.insert(lane, x);
        points[k][1] = lane * BOX_H;
    }
}

/// Stacks the chunks' bands in stage order and scales the positions into `plot`.
fn place(
    start: &[(usize, [i32; 2])],
    moved: &[[i32; 2]],
    (chunk, sub): (&[u32], &[bool]),
    g: &OpGraph,
    plot: [f32; 4],
) -> Placed {
    let chunks = start.iter().map(|&(i, _)| chunk[i] + 1).max().unwrap_or(1) as usize;
    // Each chunk's extent in y, then its band's offset: the bands one under the other.
    let mut extent = vec![[i64::MAX, i64::MIN]; chunks];
    for (k, &(i, _)) in start.iter().enumerate() {
        let e = &mut extent[chunk[i] as usize];
        e[0] = e[0].min(i64::from(moved[k][1]) - i64::from(BOX_H) / 2);
        e[1] = e[1].max(i64::from(moved[k][1]) + i64::from(BOX_H) / 2);
    }
    let mut offset = vec![0i64; chunks];
    let mut top = 0i64;
    for c in 0..chunks {
        if extent[c][0] <= extent[c][1] {
            offset[c] = top - extent[c][0];
            top += extent[c][1] - extent[c][0] + if chunks > 1 { i64::from(BOX_H) } else { 0 };
        }
    }
    let points: Vec<[i64; 2]> = start
        .iter()
        .enumerate()
        .map(|(k, &(i, _))| [i64::from(moved[k][0]), i64::from(moved[k][1]) + offset[chunk[i] as usize]])
        .collect();
    let x_min = points.iter().map(|p| p[0]).min().unwrap_or(0);
    let x_max = points.iter().map(|p| p[0]).max().unwrap_or(0);
    let y_min = points.iter().map(|p| p[1]).min().unwrap_or(0) - i64::from(BOX_H) / 2;
    let y_max = points.iter().map(|p| p[1]).max().unwrap_or(0) + i64::from(BOX_H) / 2;
    let [x0, y0, x1, y1] = plot;
    let sx = (x1 - x0) / (x_max - x_min + i64::from(PITCH)) as f32;
    let sy = ((y1 - y0) / (y_max - y_min).max(1) as f32).min(40.0 / BOX_H as f32);
    let (w, h) = ((0.65 * PITCH as f32 * sx).clamp(1.0, 48.0), (0.55 * BOX_H as f32 * sy).clamp(1.0, 14.0));
    // Centred in the plot's height.
    let top_y = y0 + ((y1 - y0) - (y_max - y_min) as f32 * sy) / 2.0;
    let to_x = |x: i64| x0 + ((x - x_min) as f32 + PITCH as f32 / 2.0) * sx;
    let to_y = |y: i64| top_y + (y - y_min) as f32 * sy;
    let mut placed = Placed { gap: BOX_H as f32 * sy - h, ..Placed::default() };
    for (k, &(i, _)) in start.iter().enumerate() {
        let (cx, cy) = (to_x(points[k][0]), to_y(points[k][1]));
        placed.nodes.push(i as u32);
        placed.rects.push([cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]);
        placed.chunks.push(chunk[i]);
        placed.subordinate.push(sub[i]);
    }
    if chunks > 1 {
        let stages = g.stage_order();
        for c in 0..chunks {
            if extent[c][0] <= extent[c][1] {
                let stage = if stages.is_empty() { c as u32 } else { stages[c % stages.len()] };
                let (a, b) = (extent[c][0] + offset[c], extent[c][1] + offset[c]);
                placed.bands.push((stage, [to_y(a), to_y(b)]));
            }
        }
    }
    placed
}
