//! Stroked paths. A curve drawn as one capsule per straight piece covers the pixels at each
//! joint twice, so additive mixing doubles its ink there and translucent curves look beaded.
//! A [`Scene::stroke`] keeps the polyline; at render time, once the pan and zoom are known, it
//! is tessellated by lyon into the triangles of its outline (miter joins, butt caps) in screen
//! pixels, so strokes keep their width in pixels at any zoom, as segments do. Both renderers
//! draw those same triangles and quadrilaterals ([`super::KIND_TRIANGLE`],
//! [`super::KIND_QUAD`]), whose coverage adds up to the stroke's coverage once.

use glam::Vec2;
use lyon_tessellation::path::Path;
use lyon_tessellation::path::math::point;
use lyon_tessellation::{
    GeometryBuilder, GeometryBuilderError, LineCap, LineJoin, StrokeGeometryBuilder, StrokeOptions, StrokeTessellator,
    StrokeVertex, VertexId,
};
use rayon::prelude::*;

use super::{Blend, FLAG_SCREEN, Instance, KIND_QUAD, KIND_TRIANGLE, Layer, Scene, View};

/// Polylines of one layer, in scene pixels, with a colour per point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Paths {
    pub points: Vec<[f32; 2]>,
    /// Straight RGBA per point; a triangle takes the colour where it lies along its path.
    pub colours: Vec<[f32; 4]>,
    /// Per path: the end of its points (exclusive; a path starts where the previous ends) and
    /// its width in screen pixels.
    pub ends: Vec<(u32, f32)>,
}

impl Paths {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Points of path `k`, their colours and its width.
    fn path(&self, k: usize) -> (&[[f32; 2]], &[[f32; 4]], f32) {
        let start = if k == 0 { 0 } else { self.ends[k - 1].0 as usize };
        let (end, width) = self.ends[k];
        (&self.points[start..end as usize], &self.colours[start..end as usize], width)
    }

    /// Moves every point by `by` (scene pixels).
    pub(super) fn shift(&mut self, by: [f32; 2]) {
        for p in &mut self.points {
            *p = [p[0] + by[0], p[1] + by[1]];
        }
    }

    /// The triangles of every path under `view`, in order, as screen-placed instances.
    pub fn triangles(&self, view: View) -> Vec<Instance> {
        const CHUNK: usize = 512;
        let chunks: Vec<Vec<Instance>> = (0..self.len().div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let mut tess = StrokeTessellator::new();
                let mut out = Vec::new();
                for k in c * CHUNK..((c + 1) * CHUNK).min(self.len()) {
                    let (points, colours, width) = self.path(k);
                    tessellate(&mut tess, points, colours, width, view, &mut out);
                }
                out
            })
            .collect();
        chunks.concat()
    }
}

/// Collects lyon's vertices (screen position, position along the path in points) and turns its
/// triangles into instances: two consecutive triangles that share an edge and form a convex
/// quadrilateral (the two halves of a stroke's straight piece) become one quadrilateral, so a
/// thin stroke's pixels are not split between two half-covering triangles (with faint colours,
/// each half would round away in an 8-bit target).
struct Collect<'a> {
    vertices: Vec<(Vec2, f32)>,
    colours: &'a [[f32; 4]],
    fade: f32,
    out: &'a mut Vec<Instance>,
    first: usize,
    pending: Option<[VertexId; 3]>,
}

fn cross(o: Vec2, a: Vec2, b: Vec2) -> f32 {
    (a - o).perp_dot(b - o)
}

impl Collect<'_> {
    /// The instance of the convex polygon on `ids` (three or four corners, in order).
    fn emit(&mut self, ids: &[VertexId]) {
        let v = |id: &VertexId| self.vertices[id.0 as usize];
        let along = ids.iter().map(|id| v(id).1).sum::<f32>() / ids.len() as f32;
        let at = along.clamp(0.0, (self.colours.len() - 1) as f32);
        let (k, t) = (at.floor() as usize, at.fract());
        let (p, q) = (self.colours[k], self.colours[(k + 1).min(self.colours.len() - 1)]);
        let mut color: [f32; 4] = std::array::from_fn(|i| p[i] + (q[i] - p[i]) * t);
        color[3] *= self.fade;
        let corner = |i: usize| -> [f32; 2] { v(&ids[i.min(ids.len() - 1)]).0.into() };
        let kind = if ids.len() == 4 { KIND_QUAD } else { KIND_TRIANGLE };
        self.out.push(Instance {
            a: corner(0),
            b: corner(1),
            uv_a: corner(2),
            uv_b: if ids.len() == 4 { corner(3) } else { [0.0; 2] },
            color,
            width: 0.0,
            kind: kind | FLAG_SCREEN,
            _pad: [0; 2],
        });
    }

    fn flush(&mut self) {
        if let Some(t) = self.pending.take() {
            self.emit(&t);
        }
    }

    /// `[x, u, y, w]` when triangles `s` and `t` share the edge `u w` and form a convex
    /// quadrilateral.
    fn merged(&self, s: [VertexId; 3], t: [VertexId; 3]) -> Option<[VertexId; 4]> {
        let shared: Vec<VertexId> = s.iter().copied().filter(|id| t.contains(id)).collect();
        let [u, w] = shared[..] else { return None };
        let x = *s.iter().find(|id| **id != u && **id != w)?;
        let y = *t.iter().find(|id| **id != u && **id != w)?;
        let p = |id: VertexId| self.vertices[id.0 as usize].0;
        let (pu, pw, px, py) = (p(u), p(w), p(x), p(y));
        // Convex when each diagonal separates the other's ends.
        let apart = |a: f32, b: f32| (a > 0.0 && b < 0.0) || (a < 0.0 && b > 0.0);
        (apart(cross(pu, pw, px), cross(pu, pw, py)) && apart(cross(px, py, pu), cross(px, py, pw)))
            .then_some([x, u, y, w])
    }
}

impl GeometryBuilder for Collect<'_> {
    fn begin_geometry(&mut self) {
        self.first = self.out.len();
        self.pending = None;
    }

    fn end_geometry(&mut self) {
        self.flush();
    }

    fn add_triangle(&mut self, a: VertexId, b: VertexId, c: VertexId) {
        let t = [a, b, c];
        match self.pending.take() {
            Some(s) => match self.merged(s, t) {
                Some(quad) => self.emit(&quad),
                None => {
                    self.emit(&s);
                    self.pending = Some(t);
                }
            },
            None => self.pending = Some(t),
        }
    }

    fn abort_geometry(&mut self) {
        self.pending = None;
        self.out.truncate(self.first);
    }
}

impl StrokeGeometryBuilder for Collect<'_> {
    fn add_stroke_vertex(&mut self, mut v: StrokeVertex) -> Result<VertexId, GeometryBuilderError> {
        let id = u32::try_from(self.vertices.len()).map_err(|_| GeometryBuilderError::TooManyVertices)?;
        let p = v.position();
        let along = v.interpolated_attributes()[0];
        self.vertices.push((Vec2::new(p.x, p.y), along));
        Ok(VertexId(id))
    }
}

/// Appends the triangles of one polyline, transformed by `view`, to `out`. Strokes thinner than
/// a pixel are drawn a pixel wide and fainter, as segments are. A path lyon cannot tessellate
/// (non-finite points) draws nothing.
fn tessellate(
    tess: &mut StrokeTessellator,
    points: &[[f32; 2]],
    colours: &[[f32; 4]],
    width: f32,
    view: View,
    out: &mut Vec<Instance>,
) {
    let (scale, offset) = (view.scale, Vec2::from(view.offset));
    let screen = |p: [f32; 2]| Vec2::from(p) * scale + offset;
    let mut builder = Path::builder_with_attributes(1);
    let mut last: Option<Vec2> = None;
    for (k, &p) in points.iter().enumerate() {
        let q = screen(p);
        if !q.is_finite() {
            return;
        }
        match last {
            None => {
                builder.begin(point(q.x, q.y), &[k as f32]);
            }
            Some(l) if l.distance_squared(q) < 1e-8 => continue,
            Some(_) => {
                builder.line_to(point(q.x, q.y), &[k as f32]);
            }
        }
        last = Some(q);
    }
    if last.is_none() || points.len() < 2 {
        return;
    }
    builder.end(false);
    let path = builder.build();
    let drawn = width.max(1.0);
    let options =
        StrokeOptions::default().with_line_width(drawn).with_line_join(LineJoin::Miter).with_line_cap(LineCap::Butt);
    let mut collect = Collect { vertices: Vec::new(), colours, fade: width / drawn, out, first: 0, pending: None };
    // An error leaves nothing of this path (abort_geometry), never a panic.
    let _ = tess.tessellate_path(&path, &options, &mut collect);
}

impl Scene {
    /// Draws the polyline `points` (scene pixels) as one stroke `width` screen pixels wide, point
    /// `k` coloured `colour(k)` (straight RGBA) and colours blended in between. Unlike one
    /// segment per piece, the stroke covers every pixel once, so additive mixing and
    /// translucency do not double the ink at its joints.
    pub fn stroke(&mut self, blend: Blend, points: &[[f32; 2]], width: f32, colour: impl FnMut(usize) -> [f32; 4]) {
        if points.len() < 2 || width.is_nan() || width <= 0.0 {
            return;
        }
        if self.layers.last().is_none_or(|l| l.blend != blend || l.clip.is_some() || l.paths.is_none()) {
            self.layers.push(Layer {
                blend,
                raster: None,
                instances: Vec::new(),
                clip: None,
                paths: Some(Box::default()),
            });
        }
        let paths = self.layers.last_mut().and_then(|l| l.paths.as_deref_mut()).expect("just pushed");
        paths.points.extend_from_slice(points);
        paths.colours.extend((0..points.len()).map(colour));
        paths.ends.push((paths.points.len() as u32, width));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{cpu, render_scene};
    use super::*;

    /// The sum of a channel over the picture, above the black background.
    fn ink(image: &super::super::Image, channel: usize) -> u64 {
        image.pixels.chunks(4).map(|p| u64::from(p[channel])).sum()
    }

    #[test]
    fn a_bent_additive_stroke_inks_its_joint_once() {
        // An L-shaped polyline, 3 px wide, additive at alpha 0.5: every covered pixel should get
        // the same ink, so no pixel (the joint included) is brighter than the straight parts.
        let mut scene = Scene::new(80, 80, [0.0, 0.0, 0.0]);
        let points = [[10.0, 10.0], [40.0, 10.5], [40.5, 60.0], [41.0, 70.0]];
        scene.stroke(Blend::Additive, &points, 3.0, |_| [1.0, 0.0, 0.0, 0.5]);
        let image = cpu::render(&scene, View::default());
        let straight = image.pixel(25, 10)[0];
        assert!((120..=135).contains(&straight), "straight part {straight}");
        let brightest = image.pixels.chunks(4).map(|p| p[0]).max().unwrap_or(0);
        assert!(brightest <= straight + 2, "the joint is brighter: {brightest} over {straight}");
        // The same polyline as segments (capsules) inks the joints twice.
        let mut capsules = Scene::new(80, 80, [0.0, 0.0, 0.0]);
        for s in points.windows(2) {
            capsules.segment(Blend::Additive, s[0], s[1], 3.0, [1.0, 0.0, 0.0, 0.5], false);
        }
        let doubled = cpu::render(&capsules, View::default()).pixels.chunks(4).map(|p| p[0]).max().unwrap_or(0);
        assert!(u32::from(doubled) >= u32::from(straight) * 2 - 4, "capsules at a joint: {doubled}");
        // About 3 px x (30 + 50 + 10) px of ink at 128.
        let total = ink(&image, 0) as f64 / 127.5;
        assert!((total - 3.0 * 90.0).abs() < 12.0, "ink {total}");
    }

    #[test]
    fn strokes_keep_their_width_in_pixels_when_zoomed() {
        let mut scene = Scene::new(100, 100, [0.0, 0.0, 0.0]);
        scene.stroke(Blend::Alpha, &[[10.0, 20.0], [30.0, 20.0]], 2.0, |_| [0.0, 1.0, 0.0, 1.0]);
        let zoomed = View { scale: 3.0, offset: [0.0, 0.0] };
        let image = cpu::render(&scene, zoomed);
        let column: Vec<u8> = (50..70).map(|y| image.pixel(60, y)[1]).collect();
        let covered: u32 = column.iter().map(|&g| u32::from(g)).sum();
        assert!((covered as f32 / 255.0 - 2.0).abs() < 0.15, "column {column:?}");
        assert!(image.pixel(60, 60)[1] > 250, "centre {:?}", image.pixel(60, 60));
        assert_eq!(image.pixel(25, 60)[1], 0, "before the start (butt cap)");
    }

    #[test]
    fn colours_run_along_the_path_and_thin_strokes_fade() {
        let mut scene = Scene::new(120, 40, [0.0, 0.0, 0.0]);
        let points: Vec<[f32; 2]> = (0..=10).map(|k| [10.0 + k as f32 * 10.0, 20.0]).collect();
        scene.stroke(Blend::Alpha, &points, 4.0, |k| [1.0 - k as f32 / 10.0, k as f32 / 10.0, 0.0, 1.0]);
        scene.stroke(Blend::Alpha, &[[10.0, 35.0], [110.0, 35.0]], 0.5, |_| [1.0; 4]);
        let image = cpu::render(&scene, View::default());
        let (start, end) = (image.pixel(12, 20), image.pixel(108, 20));
        assert!(start[0] > 230 && start[1] < 25, "start {start:?}");
        assert!(end[1] > 230 && end[0] < 25, "end {end:?}");
        let thin: u32 = (33..38).map(|y| u32::from(image.pixel(60, y)[0])).sum();
        assert!((thin as f32 / 255.0 - 0.5).abs() < 0.08, "half a pixel of ink, got {thin}");
    }

    #[test]
    fn a_path_with_nonfinite_points_draws_nothing_and_no_panic() {
        let mut scene = Scene::new(50, 50, [0.0, 0.0, 0.0]);
        scene.stroke(Blend::Alpha, &[[1.0, 1.0], [f32::NAN, 5.0], [40.0, 40.0]], 2.0, |_| [1.0; 4]);
        scene.stroke(Blend::Alpha, &[[5.0, 5.0], [5.0, 5.0]], 2.0, |_| [1.0; 4]);
        let image = render_scene(&exaviz_compute::Backend::Cpu, &scene, View::default()).expect("cpu");
        assert_eq!(ink(&image, 0), 0);
    }
}
