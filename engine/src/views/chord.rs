//! The `chord` view (Brendel et al. §III-C): processes on a circle, one edge per communicating pair
//! (both directions of a pair drawn as two edges), bundled hierarchically and mixed additively.
//!
//! The hierarchy is a balanced binary tree over the ranks in order (blocks of consecutive ranks,
//! as processes of one node or one sub-domain usually are): a leaf sits on the circle, an inner
//! node at the mean angle of its block and at a radius shrinking with its height. An edge's
//! control polygon climbs from its sender to just below the lowest common ancestor and down to
//! its receiver (Holten 2006); the `bspline` stage evaluates the curves on the backend, with
//! bundling strength β. Each curve is coloured from sender (pale cyan) to receiver (warm
//! yellow), its opacity growing with the pair's message count (log scale).

use crate::Backend;
use crate::bundling::DEFAULT_BETA;
use crate::model::Dataset;
use crate::render::{Anchor, Blend, Image, Scene, View, render_scene};
use crate::stages::bspline::Curve;
use crate::stages::{self, ControlPolygons};

use super::contract::{self, Drawn, Frame, Prepared};
use super::pairs::{PairPick, communicating_pairs, draw_curves, opacity_legend};
use super::plot::{Mix, direction_colour, direction_legend};
use super::{BACKGROUND, TEXT, TEXT_DIM, ViewError};
use crate::selection::{Parts, Selection};

#[derive(Clone, Copy, Debug)]
pub struct ChordOptions {
    pub width: u32,
    pub height: u32,
    /// Bundling strength: 0 draws straight chords, 1 follows the hierarchy exactly.
    pub beta: f32,
    /// How overlapping curves combine (the paper's chord diagrams add).
    pub mix: Mix,
}

impl Default for ChordOptions {
    fn default() -> Self {
        Self { width: 1024, height: 768, beta: DEFAULT_BETA, mix: Mix::Additive }
    }
}

/// Most processes the chord view draws (its pair matrix is binned on the backend).
pub const MAX_PROCESSES: usize = 8192;
const SAMPLES: u32 = 24;

/// Control polygon of the edge from leaf `a` to leaf `b` of `n` on a circle of radius `r`
/// around `c`: up the binary tree over rank blocks to below their common ancestor, then down.
fn polygon(a: usize, b: usize, n: usize, c: [f32; 2], r: f32) -> Vec<[f32; 2]> {
    let height = (n as f64).log2().ceil().max(1.0) as u32;
    // The block of level `h` (0: the leaf itself) containing rank `i`, and its point.
    let point = |i: usize, h: u32| {
        let size = 1usize << h;
        let start = (i / size) * size;
        let end = (start + size).min(n);
        let angle = std::f64::consts::TAU * ((start + end) as f64 / 2.0 - 0.5) / n as f64;
        let radius = f64::from(r) * (1.0 - f64::from(h) / f64::from(height) * 0.85);
        [c[0] + (radius * angle.cos()) as f32, c[1] + (radius * angle.sin()) as f32]
    };
    // Levels below the lowest common ancestor.
    let lca = (0..=height).find(|&h| a >> h == b >> h).unwrap_or(height);
    let mut out: Vec<[f32; 2]> = (0..lca).map(|h| point(a, h)).collect();
    out.extend((0..lca).rev().map(|h| point(b, h)));
    if lca == 0 {
        out = vec![point(a, 0), point(b, 0)];
    }
    out
}

/// Draws the chord diagram of `dataset`'s messages.
pub fn chord_image(dataset: &Dataset, backend: &Backend, opts: &ChordOptions) -> Result<Image, ViewError> {
    let (scene, _) = chord_scene(dataset, backend, opts, None)?;
    render_scene(backend, &scene, View::default()).map_err(|e| ViewError::Unsupported(e.to_string()))
}

/// The chord view through the view contract.
pub struct ChordView(pub ChordOptions);

impl contract::View for ChordView {
    fn name(&self) -> &'static str {
        "chord"
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        contract::needs_processes(d, "chord", 2)
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW | Parts::PAIR
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let opts = ChordOptions { width: f.width, height: f.height, ..self.0 };
        let (scene, picker) = chord_scene(d, b, &opts, sel.window_s)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}

/// The chord diagram as a scene, and its curves for picking.
pub fn chord_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &ChordOptions,
    window_s: Option<(f64, f64)>,
) -> Result<(Scene, PairPick), ViewError> {
    let t = &dataset.trace;
    let n = t.locations.name.len();
    if !(2..=MAX_PROCESSES).contains(&n) {
        return Err(ViewError::Unsupported(format!(
            "the chord view needs 2 to {MAX_PROCESSES} processes (locations); this trace has {n}"
        )));
    }
    let pairs = communicating_pairs(&contract::messages_in(t, window_s), backend, n)?;
    let (w, h) = (opts.width as f32, opts.height as f32);
    let legend_w = 190.0;
    let c = [(w - legend_w) / 2.0, h / 2.0 + 16.0];
    let r = ((w - legend_w).min(h - 80.0) / 2.0 - 30.0).max(10.0);
    let mut polygons = ControlPolygons::new();
    for &(a, b, _) in &pairs {
        polygons.push(polygon(a, b, n, c, r));
    }
    let curves = if pairs.is_empty() {
        None
    } else {
        Some(stages::bspline::run(
            backend.runner().as_mut(),
            &polygons,
            Curve { samples: SAMPLES, beta: opts.beta.clamp(0.0, 1.0), degree: 3 },
        )?)
    };
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let max = pairs.last().map_or(1, |p| p.2);
    if let Some(curves) = &curves {
        draw_curves(&mut scene, curves, &pairs, opts.mix, 1.2, |_, share| direction_colour(share));
    }
    // Processes as ticks on the circle, a few labelled.
    let step = (n / 16).max(1);
    for i in 0..n {
        let angle = std::f32::consts::TAU * i as f32 / n as f32;
        let (dx, dy) = (angle.cos(), angle.sin());
        let p = [c[0] + dx * (r + 2.0), c[1] + dy * (r + 2.0)];
        let q = [c[0] + dx * (r + 8.0), c[1] + dy * (r + 8.0)];
        scene.segment(Blend::Alpha, p, q, 1.5, TEXT_DIM, true);
        if i % step == 0 {
            let at = [c[0] + dx * (r + 22.0), c[1] + dy * (r + 22.0) + 4.0];
            scene.text(&i.to_string(), at, 11.0, Anchor::Centre, TEXT_DIM);
        }
    }
    let title = format!("Chord diagram: {} ({n} processes, {} communicating pairs)", dataset.name, pairs.len());
    scene.text(&super::plot::fit(&title, opts.width as f32 - 24.0, 15.0), [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    legend(&mut scene, w - legend_w + 10.0, 80.0, max, opts);
    Ok((scene, PairPick { pairs, curves }))
}

fn legend(scene: &mut Scene, x: f32, y: f32, max: u32, opts: &ChordOptions) {
    direction_legend(scene, x, y + 10.0);
    opacity_legend(scene, x, y + 70.0, max, opts.mix);
    scene.text(&format!("bundling strength β = {:.2}", opts.beta), [x, y + 180.0], 11.0, Anchor::Left, TEXT_DIM);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polygons_climb_to_below_the_common_ancestor() {
        let (c, r) = ([0.0, 0.0], 100.0);
        // Siblings: only the two leaves (their parent is the common ancestor).
        assert_eq!(polygon(0, 1, 8, c, r).len(), 2);
        // 0 and 7 of 8: three levels up and three down.
        let p = polygon(0, 7, 8, c, r);
        assert_eq!(p.len(), 6);
        let radius = |q: [f32; 2]| q[0].hypot(q[1]);
        assert!((radius(p[0]) - 100.0).abs() < 1e-3 && (radius(p[5]) - 100.0).abs() < 1e-3);
        assert!(radius(p[2]) < radius(p[1]) && radius(p[1]) < radius(p[0]));
    }
}

/// `exaviz render --view chord` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ChordArgs {
    #[command(flatten)]
    pub curves: super::pairs::CurveArgs,
}

impl contract::Options for ChordArgs {
    fn view(&self) -> Box<dyn super::View> {
        let (beta, mix) = (self.curves.beta, self.curves.mix.into());
        Box::new(ChordView(ChordOptions { width: 1024, height: 768, beta, mix }))
    }

    fn selection(&self) -> Selection {
        self.curves.select.selection()
    }
}
