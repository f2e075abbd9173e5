//! CPU mirror of `force_layout.wgsl` (keep the two in sync). Integer arithmetic
//! throughout, as in the shader (WGSL's `/` truncates towards zero like Rust's), so the two agree
//! exactly.

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::Words;

/// Mirror of the WGSL `Params` (12 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub window: u32,
    pub pitch: i32,
    pub gap: i32,
    pub box_w: i32,
    pub box_h: i32,
    pub axis: i32,
    pub row: i32,
    pub max_move: i32,
    pub pad0: u32,
    pub pad1: u32,
    pub pad2: u32,
}
const _: () = assert!(size_of::<Params>() == 48);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// Mirror of the WGSL `Node` (5 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Node {
    pub first: u32,
    pub operands: u32,
    pub users: u32,
    pub seq: u32,
    pub flags: u32,
}
const _: () = assert!(size_of::<Node>() == 20);

/// `Node::flags`: a subordinate operator (parameter, constant).
pub const SUBORDINATE: u32 = 1;

fn pos(w: &Words, i: usize) -> [i32; 2] {
    [w[2 * i].load(Relaxed) as i32, w[2 * i + 1].load(Relaxed) as i32]
}

fn node(w: &Words, i: usize) -> Node {
    let f = |k: usize| w[5 * i + k].load(Relaxed);
    Node { first: f(0), operands: f(1), users: f(2), seq: f(3), flags: f(4) }
}

pub fn force_layout(i: u32, params: &Params, pos_in: &Words, pos_out: &Words, nodes: &Words, adj: &Words) {
    if i >= params.n {
        return;
    }
    let i = i as usize;
    let p = pos(pos_in, i);
    let nd = node(nodes, i);
    let sub = nd.flags & SUBORDINATE != 0;
    let reach = 4 * params.pitch;
    let mut spring = 0i32;
    let (mut lo, mut hi) = (p[0], p[0]);
    let (mut free_lo, mut free_hi) = (true, true);
    let degree = nd.operands + nd.users;
    for k in 0..degree {
        let q = pos(pos_in, adj[(nd.first + k) as usize].load(Relaxed) as usize);
        let mut want = q[0];
        if !sub {
            want = if k < nd.operands { q[0] + params.pitch } else { q[0] - params.pitch };
        }
        spring += (want - p[0]).clamp(-reach, reach);
        if !sub {
            if k < nd.operands {
                let least = p[0] - (p[0] - q[0] - params.gap).max(0) / 2;
                if free_lo || least > lo {
                    lo = least;
                }
                free_lo = false;
            } else {
                let most = p[0] + (q[0] - p[0] - params.gap).max(0) / 2;
                if free_hi || most < hi {
                    hi = most;
                }
                free_hi = false;
            }
        }
    }
    let mut fx = if degree > 0 { spring / degree as i32 } else { 0 };
    let mut fy = 0i32;
    let mut collided = false;
    let j0 = i.saturating_sub(params.window as usize);
    let j1 = (i + params.window as usize + 1).min(params.n as usize);
    for j in j0..j1 {
        if j == i {
            continue;
        }
        let q = pos(pos_in, j);
        let d = [p[0] - q[0], p[1] - q[1]];
        let (ax, ay) = (d[0].abs(), d[1].abs());
        let later = nd.seq > node(nodes, j).seq;
        if ay < params.box_h && ax < params.pitch {
            let s = if later { 1 } else { -1 };
            fx += s * (params.pitch - ax) / 2;
        }
        if ax < params.box_w && ay < params.box_h && later {
            let s = if d[1] < 0 || (d[1] == 0 && sub) { -1 } else { 1 };
            fy += s * (params.box_h - ay);
            collided = true;
        }
    }
    let aim = if sub { params.axis - params.row } else { params.axis };
    if !collided {
        fy += (aim - p[1]) / 8;
    }
    let m = params.max_move;
    let mut x = p[0] + fx.clamp(-m, m);
    let mut y = p[1] + fy.clamp(-m, m);
    if !free_lo {
        x = x.max(lo);
    }
    if !free_hi {
        x = x.min(hi);
    }
    y = if sub { y.min(params.axis - params.row) } else { y.max(params.axis) };
    pos_out[2 * i].store(x as u32, Relaxed);
    pos_out[2 * i + 1].store(y as u32, Relaxed);
}
