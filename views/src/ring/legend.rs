//! The ring's nodes, title, subtitle and legends.

use exaviz_model::dataset::Dataset;
use exaviz_render::{Anchor, Scale, Scene};

use super::{ChannelColour, MARK_COLOUR, MARK_OUTLINE, Prepared, RELATION_COLOURS, RingBundle, RingOptions, is_dense};
use crate::legend::{color_bar, color_bar_of, format_value};
use crate::torus::traffic::{LEGEND_W, TOP, dim_letter};
use crate::{BACKGROUND, TEXT, TEXT_DIM};

/// What the legend tells beside the chords: traffic marks (largest radius and traffic) and a
/// tracked message.
pub(super) struct Decor {
    pub(super) marks: Option<(f32, u64)>,
    pub(super) track: Option<crate::ring::track::Tracked>,
}

/// Nodes, title, subtitle and legends (over an opaque title band and legend column when
/// zoomed, so the zoomed circle does not run under them).
pub(super) fn decorate(scene: &mut Scene, dataset: &Dataset, ring: &Prepared, opts: &RingOptions, decor: Decor) {
    let (circle, chords, blocks, marks) = (&ring.circle, &ring.chords, ring.blocks.as_ref(), decor.marks);
    let Some(topo) = dataset.topology.as_ref() else { return };
    let (w, h) = (opts.width as f32, opts.height as f32);
    let (legend_w, top) = (LEGEND_W, TOP);
    let n = circle.n;
    let node_r =
        (std::f32::consts::TAU * circle.radius / n as f32 * 0.35).clamp(0.6, 3.0 * circle.zoom.clamp(1.0, 2.0));
    for p in 0..n as u32 {
        scene.disc(circle.at(p, circle.radius), node_r, [0.85, 0.86, 0.9, 0.9], false);
    }
    if opts.zoom.is_some() {
        let bg = [BACKGROUND[0], BACKGROUND[1], BACKGROUND[2], 1.0];
        scene.rect([0.0, 0.0], [w, top], bg, true);
        scene.rect([w - legend_w, top], [w, h], bg, true);
    }
    let title = format!("Torus ring: {}", crate::title_name(dataset));
    let sub = subtitle(dataset, topo, ring, opts, decor.track.as_ref());
    crate::plot::titles(scene, w, &title, &sub);
    let unit = crate::traffic_unit(dataset);
    let x = w - legend_w + 16.0;
    let mut y = top + 40.0;
    if let Some(t) = &decor.track {
        let bar_h = (h - top - 200.0).clamp(40.0, 240.0);
        let scale = Scale { lo: t.first as f64, hi: t.last as f64, log: false };
        let map = opts.colormap;
        color_bar_of(
            scene,
            |a| crate::ring::track::age_colour(map, a),
            scale,
            "hop sent at\nstep",
            [x, y, 18.0, bar_h],
        );
        y += bar_h + 40.0;
        scene.text("other channels", [x + 20.0, y], 11.0, Anchor::Left, TEXT_DIM);
        scene.rect([x, y - 6.0], [x + 14.0, y + 2.0], [0.4, 0.42, 0.48, 1.0], true);
        y += 30.0;
    } else if opts.colour == ChannelColour::Relation {
        scene.text("channels", [x, y - 14.0], 12.0, Anchor::Left, TEXT);
        y += 4.0;
        let kinds = blocks.map_or(2, |b| (b.count() / 2 + 1).min(5) as usize);
        for (colour, label) in &RELATION_COLOURS[..kinds] {
            scene.rect([x, y - 5.0], [x + 14.0, y + 5.0], [colour[0], colour[1], colour[2], 1.0], true);
            scene.text(label, [x + 20.0, y + 4.0], 11.0, Anchor::Left, TEXT_DIM);
            y += 18.0;
        }
        y += 10.0;
    } else if chords.max > 0 {
        let room = if marks.is_some() { 290.0 } else { 200.0 };
        let bar_h = (h - top - room).max(40.0);
        color_bar(scene, opts.colormap, chords.scale, &format!("{unit}\nper link pair"), [x, y, 18.0, bar_h]);
        y += bar_h + 40.0;
        if is_dense(chords, opts) {
            let lines = [
                format!("as density of {}", format_value(chords.list.len() as f64)),
                "chords: the mean".into(),
                "per pixel; opacity".into(),
                "= chords crossing".into(),
            ];
            for (k, line) in lines.iter().enumerate() {
                scene.text(line, [x, y - 8.0 + 13.0 * k as f32], 11.0, Anchor::Left, TEXT_DIM);
            }
            y += 52.0;
        }
    } else {
        scene.text("no traffic recorded", [x, y], 12.0, Anchor::Left, TEXT_DIM);
        y += 30.0;
    }
    if let Some((r_max, most)) = marks.filter(|_| y + 90.0 < h) {
        scene.text("traffic marks", [x, y], 12.0, Anchor::Left, TEXT);
        scene.text("area ∝ packets,", [x, y + 15.0], 11.0, Anchor::Left, TEXT_DIM);
        scene.text("near main sender", [x, y + 28.0], 11.0, Anchor::Left, TEXT_DIM);
        let cy = y + 38.0 + r_max;
        for (k, f) in [1.0f32, 0.25].iter().enumerate() {
            let r = r_max * f.sqrt();
            let cx = x + r_max + k as f32 * 62.0;
            scene.disc([cx, cy], r + 0.8, MARK_OUTLINE, true);
            scene.disc([cx, cy], r, MARK_COLOUR, true);
            let label = format_value(most as f64 * f64::from(*f));
            scene.text(&label, [cx + r_max + 4.0, cy + 4.0], 11.0, Anchor::Left, TEXT_DIM);
        }
        y += 2.0 * r_max + 58.0;
    }
    if opts.address_rings && y + 60.0 < h {
        let letters: Vec<String> = (0..topo.dims()).map(|d| dim_letter(d, topo.dims())).collect();
        scene.text("address rings", [x, y], 12.0, Anchor::Left, TEXT);
        scene.text(&format!("{} (in→out)", letters.join(" ")), [x, y + 16.0], 11.0, Anchor::Left, TEXT_DIM);
        for k in 0..20 {
            let v = 0.92 - 0.74 * k as f32 / 19.0;
            let x0 = x + k as f32 * 5.0;
            scene.rect([x0, y + 24.0], [x0 + 5.0, y + 34.0], [v, v, v * 1.02, 1.0], true);
        }
        scene.text("0", [x, y + 48.0], 11.0, Anchor::Left, TEXT_DIM);
        scene.text("max coordinate", [x + 100.0, y + 48.0], 11.0, Anchor::Right, TEXT_DIM);
    }
}

/// The line under the title: order, blocks, bundling, filters, torus and traffic.
pub(super) fn subtitle(
    dataset: &Dataset,
    topo: &exaviz_model::Topology,
    ring: &Prepared,
    opts: &RingOptions,
    track: Option<&crate::ring::track::Tracked>,
) -> String {
    let (circle, chords, blocks) = (&ring.circle, &ring.chords, ring.blocks.as_ref());
    // Every link belongs to one chord, so the chords' traffic sums to the links'.
    let total: u64 = chords.list.iter().map(|c| c.1).sum();
    let n = circle.n;
    let dims: Vec<String> = topo.extents.iter().map(u32::to_string).collect();
    let unit = crate::traffic_unit(dataset);
    let bundling = match opts.bundle {
        RingBundle::None => String::new(),
        RingBundle::Kde(_) => " · KDE bundled".into(),
        RingBundle::Blocks { beta } => format!(" · block bundled (β {beta:.2})"),
        RingBundle::Hierarchical { beta } => format!(" · hierarchically bundled (β {beta:.2})"),
    };
    let block_text = blocks.map(|b| format!(" · {} blocks", b.count())).unwrap_or_default();
    let mut filters = String::new();
    if let Some(node) = opts.node {
        let coord: Vec<String> = topo.coord(node as usize).iter().map(u32::to_string).collect();
        filters += &format!(" · node {node} [{}] only", coord.join(","));
    }
    if let Some(f) = &opts.select {
        filters += &format!(" · nodes with {}", f.describe());
    }
    if let Some((from, to)) = opts.time_slice {
        filters += &format!(" · time {from} to {to}");
    }
    if let Some(g) = &opts.group {
        filters += &format!(" · bundles {} only", g.describe());
    }
    if let Some(t) = track {
        filters += &format!(" · message of node {}: {} hops", t.origin, t.hops);
    }
    if opts.zoom.is_some() {
        filters += &format!(" · zoom ×{}", format_value(f64::from(circle.zoom)));
    }
    let sub = format!(
        "{} order{block_text}{bundling}{filters} · {} torus · {} nodes · {} links · {} {unit}",
        opts.order.name(),
        dims.join("x"),
        n,
        topo.link_count(),
        format_value(total as f64),
    );
    sub
}
