//! The ring's geometry: the circle of nodes, the plot and legend areas, and zoom.

use super::RingOptions;
use crate::ViewError;
use crate::torus::traffic::{LEGEND_W, TOP};

/// Where the circle is: centre, radius, node count, and the zoom factor it was drawn at.
pub(crate) struct Circle {
    pub(crate) cx: f32,
    pub(crate) cy: f32,
    pub(crate) radius: f32,
    pub(crate) n: usize,
    pub(crate) zoom: f32,
}

impl Circle {
    pub(crate) fn at(&self, p: u32, r: f32) -> [f32; 2] {
        self.at_f(p as f32, r)
    }

    /// A point at ring position `p` (fractional between nodes) and radius `r` in pixels.
    pub(crate) fn at_f(&self, p: f32, r: f32) -> [f32; 2] {
        let a = std::f32::consts::TAU * p / self.n as f32 - std::f32::consts::FRAC_PI_2;
        [self.cx + r * a.cos(), self.cy + r * a.sin()]
    }

    /// A chord as a quadratic curve pulled towards the centre: (start, control, end).
    pub(crate) fn curve(&self, pa: u32, pb: u32) -> ([f32; 2], [f32; 2], [f32; 2]) {
        let (p0, p2) = (self.at(pa, self.radius), self.at(pb, self.radius));
        let mid = [(p0[0] + p2[0]) / 2.0, (p0[1] + p2[1]) / 2.0];
        (p0, [self.cx + (mid[0] - self.cx) * 0.35, self.cy + (mid[1] - self.cy) * 0.35], p2)
    }
}

/// Width of one address ring and the gap between rings, in pixels (scaled with the zoom).
pub(super) fn ring_band(circle: &Circle) -> (f32, f32) {
    ((circle.radius / circle.zoom * 0.025).clamp(2.5, 7.0) * circle.zoom, 1.5 * circle.zoom)
}

/// The plot's rectangle `[x0, y0, x1, y1]`: left of the legend, below the title.
pub(super) fn plot_rect(opts: &RingOptions) -> [f32; 4] {
    [0.0, TOP, opts.width as f32 - LEGEND_W, opts.height as f32]
}

/// Most a zoom may magnify (or shrink, inversely).
pub(super) const MAX_ZOOM: f32 = 1000.0;

/// The zoom of `opts` as a scale `s` and offset `o`: an unzoomed picture point `p` is drawn at
/// `p * s + o`. The zoom rectangle's centre goes to the plot's centre, and the rectangle fills
/// the plot in one direction.
pub(super) fn zoom_transform(opts: &RingOptions) -> Result<(f32, [f32; 2]), ViewError> {
    let Some([x0, y0, x1, y1]) = opts.zoom else { return Ok((1.0, [0.0, 0.0])) };
    let [px0, py0, px1, py1] = plot_rect(opts);
    let (rw, rh) = ((x1 - x0).abs(), (y1 - y0).abs());
    let s = ((px1 - px0) / rw).min((py1 - py0) / rh);
    if !(rw >= 4.0 && rh >= 4.0 && s.is_finite() && (1.0 / MAX_ZOOM..=MAX_ZOOM).contains(&s)) {
        return Err(ViewError::Unsupported(format!(
            "zoom rectangle {x0},{y0},{x1},{y1} must be at least 4x4 pixels and magnify at most {MAX_ZOOM} times"
        )));
    }
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    Ok((s, [(px0 + px1) / 2.0 - cx * s, (py0 + py1) / 2.0 - cy * s]))
}

/// Whether `opts`' zoom rectangle is one [`ring_scene`] accepts.
pub fn zoom_is_valid(opts: &RingOptions) -> bool {
    zoom_transform(opts).is_ok()
}

/// The unzoomed picture point drawn at `q` under `opts`' zoom (for zooming further in).
pub fn ring_unzoom(opts: &RingOptions, q: [f32; 2]) -> [f32; 2] {
    let (s, o) = zoom_transform(opts).unwrap_or((1.0, [0.0, 0.0]));
    [(q[0] - o[0]) / s, (q[1] - o[1]) / s]
}

/// The circle of an `n`-node ring in a picture of `opts`' size, and the outer radius of the
/// address rings around it, both zoomed.
pub(super) fn place_circle(n: usize, dims: usize, opts: &RingOptions) -> Result<(Circle, f32), ViewError> {
    let (w, h) = (opts.width as f32, opts.height as f32);
    let mut circle = Circle { cx: (w - LEGEND_W) / 2.0, cy: TOP + (h - TOP) / 2.0 - 8.0, radius: 1.0, n, zoom: 1.0 };
    let outer = (w - LEGEND_W).min(h - TOP) / 2.0 - 30.0;
    let (band, gap) = ring_band(&Circle { radius: outer, ..circle });
    let rings = if opts.address_rings { dims as f32 * (band + gap) + 4.0 } else { 0.0 };
    circle.radius = (outer - rings).max(8.0);
    let (s, o) = zoom_transform(opts)?;
    let zoomed = Circle { cx: circle.cx * s + o[0], cy: circle.cy * s + o[1], radius: circle.radius * s, n, zoom: s };
    Ok((zoomed, outer * s))
}
