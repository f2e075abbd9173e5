//! Control polygons that route MPI message lines for bundling (Brendel et al. §V):
//!
//! - [`mean_shift`] clusters weighted points (flat kernel, seeds binned at a quarter of the
//!   bandwidth, modes closer than half the bandwidth merged), deterministic for golden images;
//! - [`EndpointHierarchy`] clusters each process's send and receive events with mean shift (the
//!   lowest level), then clusters the centres of each level again, up to a single root: the
//!   paper's hierarchy for timelines, three levels by default;
//! - [`EndpointHierarchy::hierarchical_polygon`] routes a message from its send event through
//!   the hierarchy to its receive event (Holten's path through the lowest common ancestor);
//! - [`Grid::route`] routes between two points over a regular grid on the shortest path with
//!   diagonals (the paper's grid-based bundling of timelines);
//! - [`yx_diagonal_route`] is the sender/receiver diagram's YX routing preferring diagonals.
//!
//! These are layout steps on the CPU (rayon); the curves through the polygons are evaluated by
//! the `bspline` stage on the backend.

use rayon::prelude::*;

/// Clusters found by [`mean_shift`]: the cluster of each point and each cluster's mode.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Clusters {
    pub labels: Vec<u32>,
    pub centres: Vec<[f32; 2]>,
}

/// Most seed bins of one mean-shift run; the bin size grows beyond it.
const MAX_BINS: usize = 1 << 20;
const MAX_ITERATIONS: usize = 60;

/// Mean shift with a flat kernel of radius `bandwidth` over weighted points (weight 1 if
/// `weights` is `None`). Seeds are the weighted centroids of the points binned at a quarter of
/// the bandwidth, each shifted to its mode; modes within half a bandwidth of a stronger one
/// merge into it; a point joins the cluster of its bin's mode. Deterministic.
pub fn mean_shift(points: &[[f32; 2]], weights: Option<&[f32]>, bandwidth: f32) -> Clusters {
    if points.is_empty() {
        return Clusters::default();
    }
    let bandwidth = if bandwidth.is_finite() && bandwidth > 0.0 { bandwidth } else { 1.0 };
    let weight = |i: usize| weights.map_or(1.0, |w| f64::from(w[i]));
    let (mut lo, mut hi) = ([f32::MAX; 2], [f32::MIN; 2]);
    for p in points {
        for k in 0..2 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let mut size = bandwidth / 4.0;
    let extent = |size: f32| [0, 1].map(|k| ((hi[k] - lo[k]) / size) as usize + 1);
    while extent(size)[0].saturating_mul(extent(size)[1]) > MAX_BINS {
        size *= 2.0;
    }
    let [bx, by] = extent(size);
    let bin_of = |p: &[f32; 2]| {
        let ix = (((p[0] - lo[0]) / size) as usize).min(bx - 1);
        let iy = (((p[1] - lo[1]) / size) as usize).min(by - 1);
        iy * bx + ix
    };
    // Weighted sums per bin.
    let mut sums = vec![[0f64; 3]; bx * by];
    for (i, p) in points.iter().enumerate() {
        let s = &mut sums[bin_of(p)];
        let w = weight(i);
        s[0] += w;
        s[1] += w * f64::from(p[0]);
        s[2] += w * f64::from(p[1]);
    }
    let occupied: Vec<usize> = (0..sums.len()).filter(|&b| sums[b][0] > 0.0).collect();
    let seeds: Vec<[f64; 3]> =
        occupied.iter().map(|&b| [sums[b][0], sums[b][1] / sums[b][0], sums[b][2] / sums[b][0]]).collect();
    // Seeds by cell of one bandwidth, for the neighbourhood queries.
    let cell = f64::from(bandwidth);
    let mut near_seeds = Neighbourhood::new(lo, hi, cell);
    for (s, seed) in seeds.iter().enumerate() {
        near_seeds.insert(seed[1], seed[2], s as u32);
    }
    let r2 = cell * cell;
    let shift = |x: f64, y: f64| -> Option<(f64, f64, f64)> {
        let (mut w, mut sx, mut sy) = (0.0, 0.0, 0.0);
        near_seeds.for_each_near(x, y, |s| {
            let q = seeds[s as usize];
            if (q[1] - x).powi(2) + (q[2] - y).powi(2) <= r2 {
                w += q[0];
                sx += q[0] * q[1];
                sy += q[0] * q[2];
            }
        });
        (w > 0.0).then(|| (sx / w, sy / w, w))
    };
    // Every seed to its mode.
    let modes: Vec<(f64, f64, f64)> = seeds
        .par_iter()
        .map(|seed| {
            let (mut x, mut y, mut support) = (seed[1], seed[2], seed[0]);
            for _ in 0..MAX_ITERATIONS {
                let Some((nx, ny, w)) = shift(x, y) else { break };
                let moved = (nx - x).hypot(ny - y);
                (x, y, support) = (nx, ny, w);
                if moved < 1e-3 * cell {
                    break;
                }
            }
            (x, y, support)
        })
        .collect();
    let (centres, label_of_seed) = merge_modes(&modes, 0.5 * cell, Neighbourhood::new(lo, hi, cell));
    let mut seed_of_bin = vec![0u32; sums.len()];
    for (s, &b) in occupied.iter().enumerate() {
        seed_of_bin[b] = s as u32;
    }
    let labels = points.iter().map(|p| label_of_seed[seed_of_bin[bin_of(p)] as usize]).collect();
    Clusters { labels, centres: centres.iter().map(|c| [c[0] as f32, c[1] as f32]).collect() }
}

/// Strongest modes first; a weaker one within half a bandwidth (the cell of `index`) of an
/// accepted one joins it. Returns the accepted modes and the label of every mode.
fn merge_modes(modes: &[(f64, f64, f64)], merge: f64, mut index: Neighbourhood) -> (Vec<[f64; 2]>, Vec<u32>) {
    let mut rank: Vec<usize> = (0..modes.len()).collect();
    rank.sort_by(|&a, &b| modes[b].2.total_cmp(&modes[a].2).then(a.cmp(&b)));
    let mut centres: Vec<[f64; 2]> = Vec::new();
    let mut label = vec![0u32; modes.len()];
    for &s in &rank {
        let (x, y, _) = modes[s];
        let mut best: Option<(f64, u32)> = None;
        index.for_each_near(x, y, |c| {
            let d = (centres[c as usize][0] - x).hypot(centres[c as usize][1] - y);
            if d <= merge && best.is_none_or(|b| d < b.0) {
                best = Some((d, c));
            }
        });
        label[s] = match best {
            Some((_, c)) => c,
            None => {
                let c = centres.len() as u32;
                centres.push([x, y]);
                index.insert(x, y, c);
                c
            }
        };
    }
    (centres, label)
}

/// Items by square cell over a rectangle, for queries of the 3x3 cells around a point: every
/// item within `cell` of the point is among them. Cells grow beyond the asked size where the
/// rectangle would need more than `MAX_BINS` of them (still correct, only slower).
struct Neighbourhood {
    lo: [f64; 2],
    cell: f64,
    cols: usize,
    rows: usize,
    members: Vec<Vec<u32>>,
}

impl Neighbourhood {
    fn new(lo: [f32; 2], hi: [f32; 2], mut cell: f64) -> Self {
        let extent = |cell: f64| [0, 1].map(|k| (f64::from(hi[k] - lo[k]) / cell) as usize + 1);
        while extent(cell)[0].saturating_mul(extent(cell)[1]) > MAX_BINS {
            cell *= 2.0;
        }
        let [cols, rows] = extent(cell);
        let members = vec![Vec::new(); cols * rows];
        Self { lo: lo.map(f64::from), cell, cols, rows, members }
    }

    fn cell_of(&self, x: f64, y: f64) -> (usize, usize) {
        let ix = ((x - self.lo[0]) / self.cell).clamp(0.0, (self.cols - 1) as f64) as usize;
        let iy = ((y - self.lo[1]) / self.cell).clamp(0.0, (self.rows - 1) as f64) as usize;
        (ix, iy)
    }

    fn insert(&mut self, x: f64, y: f64, item: u32) {
        let (ix, iy) = self.cell_of(x, y);
        self.members[iy * self.cols + ix].push(item);
    }

    fn for_each_near(&self, x: f64, y: f64, mut f: impl FnMut(u32)) {
        let (ix, iy) = self.cell_of(x, y);
        for jy in iy.saturating_sub(1)..=(iy + 1).min(self.rows - 1) {
            for jx in ix.saturating_sub(1)..=(ix + 1).min(self.cols - 1) {
                self.members[jy * self.cols + jx].iter().for_each(|&m| f(m));
            }
        }
    }
}

/// The hierarchy of message endpoints: `levels[0]` clusters the events of each process, each
/// further level clusters the centres of the one below; a single root sits above the top.
#[derive(Clone, Debug, Default)]
pub struct EndpointHierarchy {
    /// Level-0 node of every event.
    pub event_node: Vec<u32>,
    /// Node centres of each level.
    pub centres: Vec<Vec<[f32; 2]>>,
    /// `parent[l][node]`: the node of level `l + 1` above `node` of level `l` (for all but the top).
    pub parent: Vec<Vec<u32>>,
    /// The root's centre (weighted mean of all events).
    pub root: [f32; 2],
}

impl EndpointHierarchy {
    /// Clusters `events` (points with the process each belongs to): per process with bandwidth
    /// `bandwidths[0]`, then the centres of each level with the next bandwidth.
    pub fn build(events: &[[f32; 2]], process: &[u32], processes: usize, bandwidths: &[f32]) -> Self {
        let mut by_process: Vec<Vec<u32>> = vec![Vec::new(); processes];
        for (e, &p) in process.iter().enumerate() {
            if let Some(list) = by_process.get_mut(p as usize) {
                list.push(e as u32);
            }
        }
        let h0 = bandwidths.first().copied().unwrap_or(16.0);
        let per_process: Vec<Clusters> = by_process
            .par_iter()
            .map(|list| {
                let pts: Vec<[f32; 2]> = list.iter().map(|&e| events[e as usize]).collect();
                mean_shift(&pts, None, h0)
            })
            .collect();
        let mut event_node = vec![0u32; events.len()];
        let mut level0 = Vec::new();
        let mut weight0 = Vec::new();
        for (list, clusters) in by_process.iter().zip(&per_process) {
            let base = level0.len() as u32;
            level0.extend(&clusters.centres);
            let mut counts = vec![0f32; clusters.centres.len()];
            for (&e, &l) in list.iter().zip(&clusters.labels) {
                event_node[e as usize] = base + l;
                counts[l as usize] += 1.0;
            }
            weight0.extend(counts);
        }
        let mut centres = vec![level0];
        let mut weights = vec![weight0];
        let mut parent = Vec::new();
        for &h in bandwidths.iter().skip(1) {
            let below = centres.last().expect("level 0 exists");
            let w = weights.last().expect("level 0 exists");
            let c = mean_shift(below, Some(w), h);
            let mut up = vec![0f32; c.centres.len()];
            for (&l, &wi) in c.labels.iter().zip(w) {
                up[l as usize] += wi;
            }
            parent.push(c.labels);
            centres.push(c.centres);
            weights.push(up);
        }
        let (mut sw, mut sx, mut sy) = (0f64, 0f64, 0f64);
        for (c, &w) in centres.last().expect("level 0 exists").iter().zip(weights.last().expect("level 0 exists")) {
            sw += f64::from(w);
            sx += f64::from(w) * f64::from(c[0]);
            sy += f64::from(w) * f64::from(c[1]);
        }
        let root = if sw > 0.0 { [(sx / sw) as f32, (sy / sw) as f32] } else { [0.0, 0.0] };
        Self { event_node, centres, parent, root }
    }

    /// Nodes above event `e`, from level 0 to the top.
    fn ancestors(&self, e: usize) -> impl Iterator<Item = u32> + '_ {
        let mut node = Some(self.event_node[e]);
        (0..self.centres.len()).map_while(move |l| {
            let n = node?;
            node = self.parent.get(l).map(|p| p[n as usize]);
            Some(n)
        })
    }

    /// Control polygon from event `a` (at `pa`) to event `b` (at `pb`): up the hierarchy to
    /// their lowest common ancestor (the root if no level joins them) and down again.
    pub fn hierarchical_polygon(&self, a: usize, pa: [f32; 2], b: usize, pb: [f32; 2], out: &mut Vec<[f32; 2]>) {
        out.clear();
        out.push(pa);
        let up: Vec<u32> = self.ancestors(a).collect();
        let down: Vec<u32> = self.ancestors(b).collect();
        let lca = (0..up.len()).find(|&l| up[l] == down[l]);
        let top = lca.unwrap_or(up.len());
        for (l, &n) in up.iter().enumerate().take(top) {
            out.push(self.centres[l][n as usize]);
        }
        match lca {
            Some(l) => out.push(self.centres[l][up[l] as usize]),
            None => out.push(self.root),
        }
        for l in (0..top).rev() {
            out.push(self.centres[l][down[l] as usize]);
        }
        out.push(pb);
    }

    /// Centre of event `e`'s level-0 cluster.
    pub fn endpoint_centre(&self, e: usize) -> [f32; 2] {
        self.centres[0][self.event_node[e] as usize]
    }
}

/// A regular grid of nodes over a rectangle: `cols + 1` by `rows + 1` nodes.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    pub origin: [f32; 2],
    pub cell: [f32; 2],
    pub cols: u32,
    pub rows: u32,
}

impl Grid {
    /// A grid over `size` with about `cols` columns of square-ish cells.
    pub fn over(origin: [f32; 2], size: [f32; 2], cols: u32) -> Self {
        let cols = cols.max(1);
        let w = size[0].max(1.0) / cols as f32;
        let rows = ((size[1] / w).round() as u32).max(1);
        Self { origin, cell: [w, size[1].max(1.0) / rows as f32], cols, rows }
    }

    fn nearest(&self, p: [f32; 2]) -> (i32, i32) {
        let f = |k: usize, n: u32| (((p[k] - self.origin[k]) / self.cell[k]).round() as i32).clamp(0, n as i32);
        (f(0, self.cols), f(1, self.rows))
    }

    fn point(&self, (i, j): (i32, i32)) -> [f32; 2] {
        [self.origin[0] + i as f32 * self.cell[0], self.origin[1] + j as f32 * self.cell[1]]
    }

    /// Appends the nodes of a shortest 8-connected path from the node nearest `a` to the node
    /// nearest `b`: half the straight steps, then the diagonal ones, then the rest of the straight
    /// ones (one deterministic path of the many shortest ones, symmetric in its ends).
    pub fn route(&self, a: [f32; 2], b: [f32; 2], out: &mut Vec<[f32; 2]>) {
        let (mut i, mut j) = self.nearest(a);
        let end = self.nearest(b);
        let (dx, dy) = (end.0 - i, end.1 - j);
        let diagonal = dx.abs().min(dy.abs());
        let straight = dx.abs().max(dy.abs()) - diagonal;
        let (sx, sy) = (dx.signum(), dy.signum());
        // The straight direction is along the longer axis.
        let (tx, ty) = if dx.abs() >= dy.abs() { (sx, 0) } else { (0, sy) };
        out.push(self.point((i, j)));
        let first = straight / 2;
        for step in 0..straight + diagonal {
            if step < first || step >= first + diagonal {
                i += tx;
                j += ty;
            } else {
                i += sx;
                j += sy;
            }
            out.push(self.point((i, j)));
        }
    }

    /// Most nodes a route can have.
    pub fn longest_route(&self) -> usize {
        self.cols.max(self.rows) as usize + 1
    }
}

/// The sender/receiver diagram's route from row `from` in the first column to row `to` in the
/// last of a `size x size` grid: diagonal steps towards the target row first, then straight
/// along the row (YX routing preferring diagonals). Returns grid nodes as (column, row).
pub fn yx_diagonal_route(from: u32, to: u32, size: u32) -> Vec<(u32, u32)> {
    let last = size.max(1) - 1;
    let (mut c, mut r) = (0u32, from.min(last));
    let to = to.min(last);
    let mut out = vec![(c, r)];
    while c < last {
        c += 1;
        if r < to {
            r += 1;
        } else if r > to {
            r -= 1;
        }
        out.push((c, r));
    }
    // More rows to go than columns (never with a square grid): the rest straight down the last column.
    while r != to {
        r = if r < to { r + 1 } else { r - 1 };
        out.push((c, r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_shift_finds_separated_blobs() {
        let mut pts = Vec::new();
        for k in 0..50 {
            let d = (k % 7) as f32 * 0.3;
            pts.push([10.0 + d, 5.0 - d]);
            pts.push([100.0 - d, 40.0 + d]);
            pts.push([200.0 + d, 5.0]);
        }
        let c = mean_shift(&pts, None, 12.0);
        assert_eq!(c.centres.len(), 3, "{:?}", c.centres);
        // Points of one blob share a label; the three labels differ.
        assert!(c.labels.chunks(3).all(|t| t == &c.labels[..3]));
        let mut l = c.labels[..3].to_vec();
        l.sort_unstable();
        l.dedup();
        assert_eq!(l.len(), 3);
        // Modes sit in their blobs.
        for centre in &c.centres {
            assert!(pts.iter().any(|p| (p[0] - centre[0]).hypot(p[1] - centre[1]) < 3.0), "{centre:?}");
        }
        // A bandwidth larger than the spread joins everything.
        assert_eq!(mean_shift(&pts, None, 500.0).centres.len(), 1);
        // Points spread over a huge range (a deep zoom) bound the cells, not the memory.
        let far = [[-1e9, 0.0], [0.0, 0.0], [0.5, 0.0], [1e9, 3e8]];
        assert_eq!(mean_shift(&far, None, 2.0).centres.len(), 3);
    }

    #[test]
    fn hierarchy_routes_through_the_common_ancestor() {
        // Two processes (rows 0 and 100), events in two time clusters each.
        let mut events = Vec::new();
        let mut process = Vec::new();
        for k in 0..20 {
            let x = if k < 10 { 10.0 + k as f32 * 0.1 } else { 300.0 + k as f32 * 0.1 };
            events.push([x, 0.0]);
            process.push(0);
            events.push([x, 100.0]);
            process.push(1);
        }
        let h = EndpointHierarchy::build(&events, &process, 2, &[20.0, 150.0, 1000.0]);
        assert_eq!(h.centres[0].len(), 4);
        assert_eq!(h.centres[1].len(), 2, "{:?}", h.centres[1]);
        assert_eq!(h.centres[2].len(), 1);
        let mut poly = Vec::new();
        // Same time cluster, other process: through their level-1 node.
        h.hierarchical_polygon(0, events[0], 1, events[1], &mut poly);
        assert_eq!(poly.len(), 5, "{poly:?}");
        assert!((poly[2][1] - 50.0).abs() < 1.0 && poly[2][0] < 20.0);
        // Across time clusters: up to the top level.
        h.hierarchical_polygon(0, events[0], 39, events[39], &mut poly);
        assert_eq!(poly.len(), 7, "{poly:?}");
        assert_eq!(poly[0], events[0]);
        assert_eq!(poly[6], events[39]);
    }

    #[test]
    fn grid_routes_are_shortest_and_end_at_the_nearest_nodes() {
        let g = Grid::over([0.0, 0.0], [100.0, 50.0], 10);
        assert_eq!((g.cols, g.rows), (10, 5));
        let mut out = Vec::new();
        g.route([1.0, 1.0], [79.0, 21.0], &mut out);
        // 8 columns and 2 rows apart: 8 steps, 9 nodes.
        assert_eq!(out.len(), 9);
        assert_eq!(out[0], [0.0, 0.0]);
        assert_eq!(out[8], [80.0, 20.0]);
        // Every step moves one node, straight or diagonal.
        for w in out.windows(2) {
            let (dx, dy) = ((w[1][0] - w[0][0]) / 10.0, (w[1][1] - w[0][1]) / 10.0);
            assert!(dx.abs() <= 1.001 && dy.abs() <= 1.001 && dx.abs() + dy.abs() > 0.5);
        }
    }

    #[test]
    fn yx_routing_prefers_diagonals() {
        assert_eq!(yx_diagonal_route(0, 3, 8), vec![(0, 0), (1, 1), (2, 2), (3, 3), (4, 3), (5, 3), (6, 3), (7, 3)]);
        assert_eq!(yx_diagonal_route(7, 0, 8).last(), Some(&(7, 0)));
        assert_eq!(yx_diagonal_route(2, 2, 8).iter().filter(|n| n.1 != 2).count(), 0);
    }
}
