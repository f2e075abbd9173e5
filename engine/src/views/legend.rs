//! Legends: a colour bar with ticks and a title, placed in screen pixels.

use crate::render::{Anchor, ColorMap, Scale, Scene};

use super::{TEXT, TEXT_DIM};

/// Formats a tick value compactly (1.2k, 3.4M).
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A vertical colour bar in the screen rectangle `[x, y, w, h]`, high values on top, 5 ticks.
pub fn color_bar(scene: &mut Scene, map: ColorMap, scale: Scale, title: &str, rect: [f32; 4]) {
    color_bar_of(scene, |t| map.sample(t), scale, title, rect);
}

/// [`color_bar`] of any colour function of `t` in `[0, 1]`.
pub fn color_bar_of(
    scene: &mut Scene,
    sample: impl Fn(f32) -> [f32; 4],
    scale: Scale,
    title: &str,
    [x, y, w, h]: [f32; 4],
) {
    // The title may be two lines ("packets\nper link pair"), placed above the bar.
    let lines: Vec<&str> = title.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let dy = (lines.len() - i) as f32 * 16.0 - 6.0;
        scene.text(line, [x, y - dy], 13.0, Anchor::Left, TEXT);
    }
    let steps = 64;
    for i in 0..steps {
        let t0 = i as f32 / steps as f32;
        let t1 = (i + 1) as f32 / steps as f32;
        let y0 = y + h * (1.0 - t1);
        let y1 = y + h * (1.0 - t0);
        scene.rect([x, y0.floor()], [x + w, y1.ceil()], sample((t0 + t1) / 2.0), true);
    }
    // A single value (every mark the same) gets one label, at the top where it maps.
    let first = if scale.hi > scale.lo { 0 } else { 4 };
    for k in first..=4 {
        let t = k as f64 / 4.0;
        let ty = (y + h * (1.0 - t as f32)).round();
        scene.rect([x + w, ty - 0.5], [x + w + 5.0, ty + 0.5], TEXT_DIM, true);
        scene.text(&format_value(scale.value_at(t)), [x + w + 8.0, ty + 4.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    let note = if scale.log { "log scale" } else { "linear scale" };
    scene.text(note, [x, y + h + 16.0], 11.0, Anchor::Left, TEXT_DIM);
}
