//! The plane embeddings of the `mds` and `radviz` views (TorusTrafficND §IV): the torus embedded in the plane by MDS (full,
//! k-hop or immediate-neighbour scope) or RadViz (see [`exaviz_render::layout::embed`]), links drawn as
//! straight lines coloured and weighted by traffic as in the ring view, nodes as dots; axes in the
//! embedding's units, RadViz's dimension anchors on their circle, and a colour bar.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::layout::embed::{Embedding, embed};
use exaviz_render::{Anchor, Blend, ColorMap, Scene};

use super::traffic::{Chords, LEGEND_W, TOP, dim_letter, link_traffic};
use crate::contract::{Class, Drawn, Frame, Pick, Picker, Prepared, View};
use crate::legend::{color_bar, format_value};
use crate::plot::{Plot, Tick, axes, nice_ticks};
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmbeddingOptions {
    pub width: u32,
    pub height: u32,
    pub embedding: Embedding,
    pub colormap: ColorMap,
}

pub fn embedding_scene(dataset: &Dataset, backend: &Backend, opts: &EmbeddingOptions) -> Result<Scene, ViewError> {
    embedding_scene_and_points(dataset, backend, opts).map(|(scene, _)| scene)
}

/// The scene and where each node is drawn in it (for picking).
pub fn embedding_scene_and_points(
    dataset: &Dataset,
    backend: &Backend,
    opts: &EmbeddingOptions,
) -> Result<(Scene, Vec<[f32; 2]>), ViewError> {
    let topo = crate::torus::topology(dataset, "the mds and radviz views need")?;
    let n = topo.node_count();
    let points = embed(topo, opts.embedding).map_err(ViewError::Unsupported)?;
    let plot = Plot::inside(opts.width, opts.height, [70, TOP as u32 + 10, LEGEND_W as u32 + 20, 56])
        .ok_or_else(|| ViewError::Unsupported(format!("{}x{} is too small for this view", opts.width, opts.height)))?;
    let traffic = link_traffic(dataset, backend)?;
    let chords = Chords::new(topo, &traffic);

    // One scale for both axes (distances keep their meaning), the data centred in the plot.
    let radviz = opts.embedding == Embedding::RadViz;
    let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
    for p in &points {
        for k in 0..2 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    if radviz {
        (lo, hi) = ([-1.0; 2], [1.0; 2]);
    }
    let mid = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
    let span = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(1e-6) * 1.08;
    let (pw, ph) = (plot.w as f32, plot.h as f32);
    let scale = pw.min(ph) / span;
    let (cx, cy) = (plot.x0 as f32 + pw / 2.0, plot.y0 as f32 + ph / 2.0);
    let at = |p: [f32; 2]| [cx + (p[0] - mid[0]) * scale, cy - (p[1] - mid[1]) * scale];

    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    if radviz {
        let ring = [0.32, 0.34, 0.4, 1.0];
        let steps = 180;
        for k in 0..steps {
            let a = |k: usize| std::f32::consts::TAU * k as f32 / steps as f32;
            scene.segment(
                Blend::Alpha,
                at([a(k).cos(), a(k).sin()]),
                at([a(k + 1).cos(), a(k + 1).sin()]),
                1.0,
                ring,
                false,
            );
        }
    }
    for &((a, b), t) in &chords.list {
        let (color, width) = chords.style(opts.colormap, t);
        scene.segment(Blend::Alpha, at(points[a as usize]), at(points[b as usize]), width, color, false);
    }
    let node_r = (pw.min(ph) / (n as f32).sqrt() * 0.12).clamp(0.8, 3.5);
    for p in &points {
        scene.disc(at(*p), node_r, [0.90, 0.62, 0.0, 0.95], false);
    }
    if radviz {
        for d in 0..topo.dims() {
            let a = std::f32::consts::TAU * d as f32 / topo.dims() as f32;
            let q = at([a.cos(), a.sin()]);
            scene.disc(q, 4.0, TEXT, false);
            let label = at([1.09 * a.cos(), 1.09 * a.sin()]);
            let name = format!("{} ({})", dim_letter(d, topo.dims()), topo.extents[d]);
            scene.text(&name, [label[0], label[1] + 4.0], 12.0, Anchor::Centre, TEXT);
        }
    }
    let half = [pw / 2.0 / scale, ph / 2.0 / scale];
    let ticks = |lo: f32, hi: f32, flip: bool| -> Vec<Tick> {
        nice_ticks(f64::from(lo), f64::from(hi), 6)
            .into_iter()
            .map(|(t, v)| (if flip { 1.0 - t } else { t }, format_value(v)))
            .collect()
    };
    let x_ticks = ticks(mid[0] - half[0], mid[0] + half[0], false);
    let y_ticks = ticks(mid[1] - half[1], mid[1] + half[1], true);
    let (x_title, y_title) = if radviz { ("RadViz x", "RadViz y") } else { ("MDS coordinate 1", "MDS coordinate 2") };
    axes(&mut scene, plot, &x_ticks, &y_ticks, x_title, y_title);

    let name = match opts.embedding {
        Embedding::MdsFull => "MDS, full distance matrix".to_string(),
        Embedding::MdsHops(k) => format!("MDS, distances within {k} hops"),
        Embedding::MdsImmediate => "MDS, immediate neighbours".to_string(),
        Embedding::RadViz => "RadViz".to_string(),
    };
    let dims: Vec<String> = topo.extents.iter().map(u32::to_string).collect();
    let unit = crate::traffic_unit(dataset);
    let total: u64 = traffic.iter().sum();
    let sub = format!(
        "{} torus · {n} nodes · {} links · {} {unit}",
        dims.join("x"),
        topo.link_count(),
        format_value(total as f64)
    );
    let title = format!("Torus {name}: {}", crate::title_name(dataset));
    crate::plot::titles(&mut scene, opts.width as f32, &title, &sub);
    let x = opts.width as f32 - LEGEND_W + 16.0;
    let y = TOP + 40.0;
    if chords.max > 0 {
        let bar_h = (opts.height as f32 - TOP - 200.0).max(40.0);
        color_bar(&mut scene, opts.colormap, chords.scale, &format!("{unit}\nper link pair"), [x, y, 18.0, bar_h]);
    } else {
        scene.text("no traffic recorded", [x, y], 12.0, Anchor::Left, TEXT_DIM);
    }
    let drawn = points.iter().map(|&p| at(p)).collect();
    Ok((scene, drawn))
}

/// The `mds` and `radviz` views: one view over the embedding its options name (`A`, the
/// options, tells the two apart: each is a [`Class`] of its own).
pub struct EmbeddingView<A>(pub EmbeddingOptions, std::marker::PhantomData<fn(A)>);

impl<A> EmbeddingView<A> {
    pub fn of(opts: EmbeddingOptions) -> Self {
        Self(opts, std::marker::PhantomData)
    }
}

/// The node drawn nearest a point, within 8 pixels.
struct PointsPick {
    points: Vec<[f32; 2]>,
    traffic: Vec<u64>,
}

impl Picker for PointsPick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let dist = |p: &[f32; 2]| (p[0] - at[0]).hypot(p[1] - at[1]);
        let (v, p) = self.points.iter().enumerate().min_by(|a, b| dist(a.1).total_cmp(&dist(b.1)))?;
        if dist(p) > 8.0 {
            return None;
        }
        super::node_pick(dataset, &self.traffic, v as u32)
    }
}

impl<A: 'static> View for EmbeddingView<A>
where
    Self: Class,
{
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        super::check(d, Self::NAME)
    }

    fn depends_on(&self) -> Parts {
        Parts::NONE
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = EmbeddingOptions { width: f.width, height: f.height, ..self.0 };
        let (scene, points) = embedding_scene_and_points(d, b, &opts)?;
        let traffic = super::traffic_per_node(d, b, sel)?;
        Ok(Box::new(Drawn { scene, picker: PointsPick { points, traffic } }))
    }
}
