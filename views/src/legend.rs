//! Legends: a colour bar with ticks and a title, placed in screen pixels.

use exaviz_render::{Anchor, ColorMap, Scale, Scene};

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

/// Where a colour bar `h` pixels tall puts its ticks, as fractions of the bar from the bottom:
/// five, evenly spaced; on a linear scale between whole numbers whose span four does not divide,
/// at whole numbers instead (every `ceil(span / 4)`, and the top where it is not too close), so
/// counts and steps are not labelled 2.25; one tick at the top for a single value.
fn ticks(scale: &Scale, h: f32) -> Vec<f64> {
    let (lo, hi) = (scale.lo, scale.hi);
    if hi <= lo {
        return vec![1.0];
    }
    let span = hi - lo;
    let whole = !scale.log && lo.fract() == 0.0 && hi.fract() == 0.0 && span % 4.0 != 0.0 && span < 1e9;
    if !whole {
        return (0..=4).map(|k| f64::from(k) / 4.0).collect();
    }
    let step = (span / 4.0).ceil();
    let mut at: Vec<f64> = (0..=4).map(|k| f64::from(k) * step).take_while(|&v| v <= span).map(|v| v / span).collect();
    let last = at.last().copied().unwrap_or(0.0);
    if last < 1.0 && (1.0 - last) * f64::from(h) >= 14.0 {
        at.push(1.0);
    }
    at
}

/// A vertical colour bar in the screen rectangle `[x, y, w, h]`, high values on top, 5 ticks.
pub fn color_bar(scene: &mut Scene, map: ColorMap, scale: Scale, title: &str, rect: [f32; 4]) {
    color_bar_of(scene, |t| map.sample(t), scale, title, rect);
}

/// [`color_bar`] of any colour function of `t` in `[0, 1]`.
pub fn color_bar_of(scene: &mut Scene, sample: impl Fn(f32) -> [f32; 4], scale: Scale, title: &str, rect: [f32; 4]) {
    color_bar_bare(scene, sample, scale, title, rect);
    let note = if scale.log { "log scale" } else { "linear scale" };
    scene.text(note, [rect[0], rect[1] + rect[3] + 16.0], 11.0, Anchor::Left, TEXT_DIM);
}

/// [`color_bar_of`] without the note of its scale under it (for bars side by side that share one).
pub fn color_bar_bare(
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
    for t in ticks(&scale, h) {
        let ty = (y + h * (1.0 - t as f32)).round();
        scene.rect([x + w, ty - 0.5], [x + w + 5.0, ty + 0.5], TEXT_DIM, true);
        scene.text(&format_value(scale.value_at(t)), [x + w + 8.0, ty + 4.0], 11.0, Anchor::Left, TEXT_DIM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_bar_ticks_fall_on_whole_numbers_where_the_span_is_whole() {
        let values = |lo: f64, hi: f64, h: f32| -> Vec<f64> {
            let s = Scale { lo, hi, log: false };
            ticks(&s, h).iter().map(|&t| s.value_at(t)).collect()
        };
        assert_eq!(values(0.0, 3.0, 200.0), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(values(10.0, 29.0, 240.0), [10.0, 15.0, 20.0, 25.0, 29.0]);
        assert_eq!(values(10.0, 29.0, 40.0), [10.0, 15.0, 20.0, 25.0], "29 too close to 25 on a short bar");
        assert_eq!(values(1.0, 17.0, 200.0), [1.0, 5.0, 9.0, 13.0, 17.0], "a span of 16: quarters");
        assert_eq!(values(0.0, 0.5, 200.0), [0.0, 0.125, 0.25, 0.375, 0.5]);
        assert_eq!(values(3.0, 3.0, 200.0).len(), 1);
        for t in ticks(&Scale { lo: 1.0, hi: 1000.0, log: true }, 200.0) {
            assert!((0.0..=1.0).contains(&t));
        }
    }
}
