//! Where the fattree view puts things: the chart, histogram, legend and job table around the
//! pods' matrices, and every matrix cell in cell units inside a pod (TreeScope's Figure 4).

use exaviz_model::fattree::{End, FatTree, Group, Link};

use super::Frame;

/// Rectangles `[x0, y0, x1, y1]` in picture pixels and the matrices' cell grid.
#[derive(Clone, Debug)]
pub struct Layout {
    pub chart: [f32; 4],
    pub histogram: [f32; 4],
    pub legend: [f32; 4],
    pub table: [f32; 4],
    pub matrices: [f32; 4],
    /// Cell size in pixels.
    pub cell: f32,
    /// Pods across.
    pod_cols: u32,
    /// Per switch: its place within its pod (L1, L2 within pod and bundle) or bundle (L3).
    pos: Vec<u32>,
    l1: u32,
    per: u32,
    l3: u32,
    bundles: u32,
}

const GAP: f32 = 18.0;

impl Layout {
    pub fn new(t: &FatTree, frame: Frame) -> Self {
        let (w, h) = (frame.width as f32, frame.height as f32);
        let right = if w >= 900.0 { 300.0 } else { (w * 0.3).round() };
        let left = w - right;
        let top = (h * 0.24).clamp(110.0, 210.0);
        let split = (left * 0.58).round();
        let chart = [60.0, 30.0, split - 8.0, top];
        let histogram = [split + 52.0, 30.0, left - 16.0, top];
        let legend = [left + 10.0, 8.0, w - 8.0, 190.0];
        let table = [left + 10.0, 200.0, w - 8.0, h - 8.0];
        let matrices = [20.0, top + 104.0, left - 12.0, h - 12.0];
        // Each switch's place in file order of its drawing index.
        let mut keyed: Vec<(u8, u32, u32, u32, usize)> = t
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let group = match s.level {
                    3 => (s.bundle.unwrap_or(0), u32::MAX),
                    2 => (s.pod.unwrap_or(0), s.bundle.unwrap_or(0)),
                    _ => (s.pod.unwrap_or(0), 0),
                };
                (s.level, group.0, group.1, s.idx.unwrap_or(0), i)
            })
            .collect();
        keyed.sort_unstable();
        let mut pos = vec![0u32; t.switches.len()];
        let mut count = |lvl: u8| -> u32 {
            let mut most = 0;
            let mut k = 0;
            let mut last = None;
            for &(l, a, b, _, i) in keyed.iter().filter(|e| e.0 == lvl) {
                if last != Some((l, a, b)) {
                    k = 0;
                    last = Some((l, a, b));
                }
                pos[i] = k;
                k += 1;
                most = most.max(k);
            }
            most
        };
        let (l1, per, l3) = (count(1).max(1), count(2).max(1), count(3).max(1));
        let bundles = t.bundles.max(1);
        let mut layout =
            Self { chart, histogram, legend, table, matrices, cell: 1.0, pod_cols: 1, pos, l1, per, l3, bundles };
        let (pw, ph) = layout.pod_cells();
        let (aw, ah) = (matrices[2] - matrices[0], matrices[3] - matrices[1]);
        let pods = t.pods.max(1);
        let mut best = (0.0f32, 1u32);
        for cols in 1..=pods {
            let rows = pods.div_ceil(cols);
            let c = ((aw - (cols - 1) as f32 * GAP) / (cols as f32 * pw))
                .min((ah - rows as f32 * GAP) / (rows as f32 * ph));
            if c > best.0 {
                best = (c, cols);
            }
        }
        layout.cell = best.0.floor().max(1.0);
        layout.pod_cols = best.1;
        layout
    }

    /// A pod's size in cells.
    fn pod_cells(&self) -> (f32, f32) {
        let w = 3.0 + self.bundles as f32 * (2.0 * self.per as f32 + 3.0) - 1.0;
        (w, self.l3 as f32 + 1.8 + self.l1 as f32)
    }

    /// Pod `p`'s rectangle.
    pub fn pod_rect(&self, p: u32) -> [f32; 4] {
        let (pw, ph) = self.pod_cells();
        let (col, row) = (p % self.pod_cols, p / self.pod_cols);
        let x = self.matrices[0] + col as f32 * (pw * self.cell + GAP);
        let y = self.matrices[1] + row as f32 * (ph * self.cell + GAP) + 4.0;
        [x, y, x + pw * self.cell, y + ph * self.cell]
    }

    /// The rectangle of cell (`col`, `row`) of pod `p`, in cells (rows may be fractional).
    fn at(&self, p: u32, col: f32, row: f32) -> [f32; 4] {
        let [x, y, _, _] = self.pod_rect(p);
        let c = self.cell;
        let inset = if c >= 4.0 { 0.5 } else { 0.0 };
        [x + col * c + inset, y + row * c + inset, x + (col + 1.0) * c - inset, y + (row + 1.0) * c - inset]
    }

    /// First column of bundle `b`'s block (its L3 halves; the L2 columns follow).
    fn bundle_col(&self, b: u32) -> f32 {
        3.0 + b as f32 * (2.0 * self.per as f32 + 3.0)
    }

    fn l2_row(&self) -> f32 {
        self.l3 as f32 + 0.4
    }

    fn l1_row(&self, s: u32) -> f32 {
        self.l3 as f32 + 1.8 + self.pos[s as usize] as f32
    }

    /// Column of L2 switch `s` in its bundle's incoming (left) or outgoing (right) half.
    fn l2_col(&self, t: &FatTree, s: u32, incoming: bool) -> f32 {
        let b = t.switches[s as usize].bundle.unwrap_or(0);
        let half = if incoming { 0.0 } else { self.per as f32 };
        self.bundle_col(b) + 2.0 + half + self.pos[s as usize] as f32
    }

    /// Where a link's traffic is drawn: L1xL2 links in the L1 rows, L3xL2 links in the L3 rows,
    /// each in the column of its L2 switch's direction (none for links to compute nodes).
    pub fn link_cell(&self, t: &FatTree, link: &Link, g: Group) -> Option<[f32; 4]> {
        let sw = |e: End| if let End::Switch(s) = e { Some(s) } else { None };
        let (a, b) = (sw(link.from)?, sw(link.to)?);
        let (l2, other, incoming) = match g {
            Group::L1L2 | Group::L3L2 => (b, a, true),
            Group::L2L1 | Group::L2L3 => (a, b, false),
            _ => return None,
        };
        let pod = t.switches[l2 as usize].pod.unwrap_or(0);
        let row =
            if matches!(g, Group::L1L2 | Group::L2L1) { self.l1_row(other) } else { self.pos[other as usize] as f32 };
        Some(self.at(pod, self.l2_col(t, l2, incoming), row))
    }

    /// Switch `s`'s cells: (rectangle, incoming half?) — L1 at the left of its row, L2 in the
    /// row between the matrices (once per direction), L3 at the left of its bundle's rows in
    /// every pod.
    pub fn switch_cells(&self, t: &FatTree, s: u32) -> Vec<([f32; 4], bool)> {
        let w = &t.switches[s as usize];
        match w.level {
            1 => {
                let (p, row) = (w.pod.unwrap_or(0), self.l1_row(s));
                vec![(self.at(p, 0.0, row), true), (self.at(p, 1.0, row), false)]
            }
            2 => {
                let p = w.pod.unwrap_or(0);
                let row = self.l2_row();
                vec![
                    (self.at(p, self.l2_col(t, s, true), row), true),
                    (self.at(p, self.l2_col(t, s, false), row), false),
                ]
            }
            _ => {
                let (b, row) = (w.bundle.unwrap_or(0), self.pos[s as usize] as f32);
                let col = self.bundle_col(b);
                (0..t.pods).flat_map(|p| [(self.at(p, col, row), true), (self.at(p, col + 1.0, row), false)]).collect()
            }
        }
    }
}
