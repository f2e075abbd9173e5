//! Control polygons of Brendel et al.'s routed bundlings: the endpoint hierarchy, and the grid
//! where lines are routed on one.

use exaviz_compute::ControlPolygons;
use exaviz_compute::bspline::MAX_CTRL;
use exaviz_render::layout::routes::{EndpointHierarchy, Grid};

use super::options::TimelineBundle;
use crate::plot::Plot;

/// Mean-shift bandwidths of the three hierarchy levels, as shares of the plot: per process along
/// time, then the centres in 2-D.
const LEVEL_BANDWIDTHS: [f32; 3] = [1.0 / 40.0, 1.0 / 10.0, 1.0 / 4.0];
/// Grid columns of the grid-based bundling (fewer on very tall plots).
const GRID_COLUMNS: u32 = 32;

/// Control polygons of the routed bundlings: the endpoint hierarchy, and the grid if routed on one.
pub(super) struct Router {
    hierarchy: EndpointHierarchy,
    grid: Option<Grid>,
    pub(super) samples: u32,
}

impl Router {
    /// `ends(k)`: the sending and receiving process of line `k`.
    pub(super) fn new(
        bundle: &TimelineBundle,
        lines: &[[f32; 4]],
        ends: impl Fn(usize) -> [u32; 2],
        n: usize,
        p: Plot,
    ) -> Option<Self> {
        let (w, h) = (p.w as f32, p.h as f32);
        let (grid, levels) = match bundle {
            TimelineBundle::Hierarchical { .. } => (None, LEVEL_BANDWIDTHS.len()),
            TimelineBundle::Grid { .. } => {
                // Routes must fit a control polygon with the two endpoints and their clusters.
                let most = (MAX_CTRL - 5) as f32;
                let cols = GRID_COLUMNS.min((most * w / h) as u32).max(1);
                (Some(Grid::over([0.0, 0.0], [w, h], cols)), 1)
            }
            TimelineBundle::None | TimelineBundle::Kde(_) => return None,
        };
        // Endpoints far outside a zoomed window cluster at its sides (bounded work and precision).
        let x = |v: f32| v.clamp(-w, 2.0 * w);
        let events: Vec<[f32; 2]> = lines.iter().flat_map(|l| [[x(l[0]), l[1]], [x(l[2]), l[3]]]).collect();
        let process: Vec<u32> = (0..lines.len()).flat_map(&ends).collect();
        let side = w.max(h);
        let bandwidths = [w * LEVEL_BANDWIDTHS[0], side * LEVEL_BANDWIDTHS[1], side * LEVEL_BANDWIDTHS[2]];
        let hierarchy = EndpointHierarchy::build(&events, &process, n, &bandwidths[..levels]);
        let samples = if grid.is_some() { 24 } else { 16 };
        Some(Self { hierarchy, grid, samples })
    }

    /// Polygons of `part`, the lines from `first` on.
    pub(super) fn polygons(&self, part: &[[f32; 4]], first: usize) -> ControlPolygons {
        let mut out = ControlPolygons::new();
        let mut buf = Vec::with_capacity(MAX_CTRL);
        for (k, l) in part.iter().enumerate() {
            let e = 2 * (first + k);
            let (a, b) = ([l[0], l[1]], [l[2], l[3]]);
            match &self.grid {
                None => self.hierarchy.hierarchical_polygon(e, a, e + 1, b, &mut buf),
                Some(g) => {
                    let (ca, cb) = (self.hierarchy.endpoint_centre(e), self.hierarchy.endpoint_centre(e + 1));
                    buf.clear();
                    buf.extend([a, ca]);
                    g.route(ca, cb, &mut buf);
                    buf.extend([cb, b]);
                }
            }
            out.push(buf.iter().copied());
        }
        out
    }
}
