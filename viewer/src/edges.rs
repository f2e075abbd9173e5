//! Edge lists for the CSV commands (`exaviz bundle`, `exaviz bench`, `exaviz aggregate`), so any
//! tool can be compared with exaviz on the same files: the bundlers by name, the edges read and
//! moved into the unit square, curves written and drawn, and the `RESULT {json}` line each
//! command prints with every run's time of the compute (file reading and writing excluded, as the
//! Datashader peer script does) and the whole command's time.

use std::path::Path;

use anyhow::{Context, Result, bail};
use exaviz_compute::Backend;
use exaviz_compute::kde_bundle::UnitFrame;
use exaviz_compute::{BundleParams, Bundled};
use exaviz_render::bundling;
use exaviz_render::bundling::Bundler;
use exaviz_render::layout::hierarchy;
use exaviz_render::{Anchor, Scene, View, render_scene, write_atomic, write_png_atomic};

/// The CSV commands' KDE defaults: as strong as hammer_bundle's on the benchmark sets.
pub(crate) const D: BundleParams = BundleParams::STRONG;

#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum BundlerArg {
    /// Image-space density bundling (KDE edge bundling, CUBu-style), on the backend.
    Kde,
    /// Holten's hierarchical edge bundling through a quadtree over the endpoints (B-splines).
    Hierarchical,
    /// No bundling: the straight edges, as a baseline.
    Straight,
}

/// Edge input: a CSV path, or a generated benchmark set.
pub(crate) const EDGE_INPUT_HELP: &str = "CSV with a header naming x0,y0,x1,y1 and optionally weight, or \
gen:circle?edges=10000&kind=structured|random&nodes=1024&seed=1 (the bundling benchmark sets)";
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ToneArg {
    Linear,
    Log,
    Eq,
}

pub(crate) fn median(times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    if t.is_empty() { 0.0 } else { t[t.len() / 2] }
}

pub(crate) fn report(kind: &str, backend: &Backend, n: usize, times: &[f64], total: f64, extra: serde_json::Value) {
    let mut v = serde_json::json!({
        "tool": "exaviz",
        "kind": kind,
        "backend": backend.describe(),
        "n": n,
        "runs_s": times.iter().map(|t| (t * 1e4).round() / 1e4).collect::<Vec<_>>(),
        "median_s": (median(times) * 1e4).round() / 1e4,
        "total_s": (total * 1e4).round() / 1e4,
    });
    if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    println!("RESULT {v}");
}

pub(crate) fn read_edges(input: &str) -> Result<exaviz_formats::edges_csv::EdgeList> {
    let pb = crate::common::spinner(&format!("reading {input}"));
    let e = exaviz_formats::edges_csv::open(input);
    pb.finish_and_clear();
    Ok(e?)
}

/// Writes `edge_id,x,y` rows atomically (temporary file, then rename).
pub(crate) fn write_curves(path: &Path, bundled: &Bundled, frame: &UnitFrame) -> Result<()> {
    write_atomic(path, |w| {
        writeln!(w, "edge_id,x,y")?;
        for e in 0..bundled.len() {
            for &p in bundled.edge(e) {
                let q = frame.from_unit(p);
                writeln!(w, "{e},{},{}", q[0], q[1])?;
            }
        }
        Ok(())
    })
    .with_context(|| format!("{}: cannot write", path.display()))
}

/// The bundled curves as a picture, shaded as `exaviz bench --sheet` shades them: density by
/// histogram equalisation, coloured by the share of the way from source to target (cyan to
/// yellow, apart for colour-blind readers), a title and a legend.
pub(crate) fn draw_bundles(backend: &Backend, bundled: &Bundled, title: &str, method: &str, png: &Path) -> Result<()> {
    let (w, h) = (900u32, 800u32);
    let mut scene = Scene::new(w, h, exaviz_views::BACKGROUND);
    let (ox, oy, side) = (50.0f32, 70.0f32, 700u32);
    let pixels = bundling::direction_density(backend.runner().as_mut(), bundled, side)?;
    let s = side as f32;
    scene.raster(exaviz_render::Raster::rgba([ox, oy, ox + s, oy + s], side, side, pixels));
    let text = exaviz_views::TEXT;
    scene.text(title, [16.0, 28.0], 15.0, Anchor::Left, text);
    scene.text(
        &format!("{} edges, bundled: {method}", bundled.len()),
        [16.0, 48.0],
        12.0,
        Anchor::Left,
        exaviz_views::TEXT_DIM,
    );
    // Legend: the direction gradient, and what brightness means.
    let (lx, ly) = (770.0f32, 100.0f32);
    scene.text("direction", [lx, ly - 10.0], 13.0, Anchor::Left, text);
    for i in 0..40 {
        let c = exaviz_views::plot::direction_colour(i as f32 / 39.0);
        scene.rect([lx, ly + i as f32 * 4.0], [lx + 16.0, ly + i as f32 * 4.0 + 4.0], [c[0], c[1], c[2], 1.0], true);
    }
    scene.text("source", [lx + 22.0, ly + 10.0], 11.0, Anchor::Left, text);
    scene.text("target", [lx + 22.0, ly + 160.0], 11.0, Anchor::Left, text);
    scene.text("brighter: more", [lx, ly + 190.0], 11.0, Anchor::Left, exaviz_views::TEXT_DIM);
    scene.text("edges (equalised)", [lx, ly + 204.0], 11.0, Anchor::Left, exaviz_views::TEXT_DIM);
    let image = render_scene(backend, &scene, View::default())?;
    write_png_atomic(png, &image).with_context(|| format!("{}: cannot write", png.display()))
}

/// The bundler an argument names, with the KDE parameters and curve samples of `kde`.
pub(crate) fn bundler_of(arg: BundlerArg, kde: BundleParams, beta: f32) -> Result<Bundler> {
    if !(0.0..=1.0).contains(&beta) {
        bail!("--beta must be in [0, 1], not {beta}");
    }
    let samples = kde.samples;
    Ok(match arg {
        BundlerArg::Kde => Bundler::Kde(kde),
        BundlerArg::Hierarchical => Bundler::Hierarchical { samples, beta, depth: hierarchy::DEFAULT_DEPTH },
        BundlerArg::Straight => Bundler::Straight { samples },
    })
}

/// Edges moved into the unit square (in place) and the frame that maps them back.
pub(crate) fn to_unit(edges: &mut [[f32; 4]]) -> UnitFrame {
    let frame = UnitFrame::fit(edges);
    for e in edges.iter_mut() {
        *e = frame.edge_to_unit(*e);
    }
    frame
}
