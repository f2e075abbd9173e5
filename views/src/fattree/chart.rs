//! The fattree view's summaries: the time chart (T1, T3) and the histogram of per-link traffic
//! (T2, T3), each stacked in six groups by level and direction, with their brushes shown.

use exaviz_model::fattree::{FatTree, Group};
use exaviz_model::selection::Selection;
use exaviz_render::{Anchor, Scene};

use super::super::legend::format_value;
use super::super::plot::{Plot, Tick, axes, nice_ticks};
use super::{GROUP_COLOURS, Layout, Stat, clock};

fn plot_of(r: [f32; 4]) -> Plot {
    Plot { x0: r[0] as u32, y0: r[1] as u32, w: (r[2] - r[0]).max(16.0) as u32, h: (r[3] - r[1]).max(16.0) as u32 }
}

/// Per step and group: the busiest link's bytes (or the mean) — the time chart's values.
pub fn step_values(t: &FatTree, stat: Stat) -> Vec<[f64; 6]> {
    let mut count = [0usize; 6];
    t.groups.iter().for_each(|g| count[*g as usize] += 1);
    (0..t.steps())
        .map(|s| {
            let mut v = [0.0f64; 6];
            for (l, g) in t.groups.iter().enumerate() {
                let b = t.step_bytes(s, l);
                let k = *g as usize;
                v[k] = match stat {
                    Stat::Max => v[k].max(b),
                    Stat::Mean => v[k] + b / count[k].max(1) as f64,
                };
            }
            v
        })
        .collect()
}

/// The time chart of `values` ([`step_values`]), stacked by group, with the active range brushed.
pub fn time_chart(scene: &mut Scene, t: &FatTree, l: &Layout, stat: Stat, values: &[[f64; 6]], range: (usize, usize)) {
    let p = plot_of(l.chart);
    let top = values.iter().map(|v| v.iter().sum::<f64>()).fold(0.0, f64::max).max(1.0);
    let n = values.len().max(1) as f32;
    let (x0, y0, w, h) = (p.x0 as f32, p.y0 as f32, p.w as f32, p.h as f32);
    for (s, v) in values.iter().enumerate() {
        let (a, b) = (x0 + w * s as f32 / n, x0 + w * (s + 1) as f32 / n);
        let mut acc = 0.0;
        for g in Group::ALL {
            let v = v[g as usize];
            if v <= 0.0 {
                continue;
            }
            let (lo, hi) = (acc / top, (acc + v) / top);
            acc += v;
            let c = GROUP_COLOURS[g as usize];
            let (ya, yb) = (y0 + h * (1.0 - hi as f32), y0 + h * (1.0 - lo as f32));
            scene.rect([a, ya], [b.max(a + 1.0), yb], [c[0], c[1], c[2], 1.0], true);
        }
    }
    if range != (0, t.steps()) {
        let (a, b) = (x0 + w * range.0 as f32 / n, x0 + w * range.1 as f32 / n);
        scene.rect([x0, y0], [a, y0 + h], [0.067, 0.075, 0.094, 0.6], true);
        scene.rect([b, y0], [x0 + w, y0 + h], [0.067, 0.075, 0.094, 0.6], true);
        scene.rect([a, y0], [a + 1.5, y0 + h], [1.0, 1.0, 1.0, 0.9], true);
        scene.rect([b - 1.5, y0], [b, y0 + h], [1.0, 1.0, 1.0, 0.9], true);
    }
    let x_ticks: Vec<Tick> = nice_ticks(0.0, f64::from(n), 5)
        .into_iter()
        .filter_map(|(u, v)| t.times.get(v as usize).map(|&time| (u, clock(time))))
        .collect();
    let y_ticks: Vec<Tick> = nice_ticks(0.0, top, 4).into_iter().map(|(u, v)| (1.0 - u, format_value(v))).collect();
    let what = match stat {
        Stat::Max => "busiest link per group, bytes per interval (stacked)",
        Stat::Mean => "mean link per group, bytes per interval (stacked)",
    };
    axes(scene, p, &x_ticks, &y_ticks, "time (UTC) · drag to set the active range", what);
    // The groups' key, under the histogram.
    let [hx, _, _, hy] = l.histogram;
    for (k, g) in Group::ALL.iter().enumerate() {
        let c = GROUP_COLOURS[k];
        let x = hx + (k % 3) as f32 * 78.0;
        let y = hy + 56.0 + (k / 3) as f32 * 14.0;
        scene.rect([x, y - 8.0], [x + 10.0, y], [c[0], c[1], c[2], 1.0], true);
        scene.text(g.label(), [x + 14.0, y], 11.0, Anchor::Left, super::TEXT_DIM);
    }
}

/// Bins of the histogram.
const BINS: usize = 40;

/// The histogram of `sums` (per-link bytes over the active range), stacked by group, with the
/// active traffic range brushed (or its complement).
pub fn histogram(scene: &mut Scene, t: &FatTree, l: &Layout, sums: &[f64], selection: &Selection) {
    let p = plot_of(l.histogram);
    let max = super::max_of(sums);
    let mut bins = vec![[0u32; 6]; BINS];
    for (v, g) in sums.iter().zip(&t.groups) {
        let b = ((v / max * BINS as f64) as usize).min(BINS - 1);
        bins[b][*g as usize] += 1;
    }
    let top = bins.iter().map(|b| b.iter().sum::<u32>()).max().unwrap_or(1).max(1) as f32;
    let (x0, y0, w, h) = (p.x0 as f32, p.y0 as f32, p.w as f32, p.h as f32);
    for (i, b) in bins.iter().enumerate() {
        let (a, c) = (x0 + w * i as f32 / BINS as f32, x0 + w * (i + 1) as f32 / BINS as f32 - 1.0);
        let mut acc = 0u32;
        for g in Group::ALL {
            let n = b[g as usize];
            if n == 0 {
                continue;
            }
            let (lo, hi) = (acc as f32 / top, (acc + n) as f32 / top);
            acc += n;
            let col = GROUP_COLOURS[g as usize];
            scene.rect(
                [a, y0 + h * (1.0 - hi)],
                [c.max(a + 1.0), y0 + h * (1.0 - lo)],
                [col[0], col[1], col[2], 1.0],
                true,
            );
        }
    }
    if let Some(r) = selection.traffic {
        let x = |v: f64| x0 + w * (v / max).clamp(0.0, 1.0) as f32;
        let (a, b) = (x(r.lo), x(r.hi));
        let shade = [0.067, 0.075, 0.094, 0.6];
        if r.complement {
            scene.rect([a, y0], [b, y0 + h], shade, true);
        } else {
            scene.rect([x0, y0], [a, y0 + h], shade, true);
            scene.rect([b, y0], [x0 + w, y0 + h], shade, true);
        }
        scene.rect([a, y0], [a + 1.5, y0 + h], [1.0, 1.0, 1.0, 0.9], true);
        scene.rect([b - 1.5, y0], [b, y0 + h], [1.0, 1.0, 1.0, 0.9], true);
    }
    let x_ticks: Vec<Tick> = nice_ticks(0.0, max, 3).into_iter().map(|(u, v)| (u, format_value(v))).collect();
    let y_ticks: Vec<Tick> =
        nice_ticks(0.0, f64::from(top), 3).into_iter().map(|(u, v)| (1.0 - u, format_value(v))).collect();
    axes(scene, p, &x_ticks, &y_ticks, "bytes per link over the active range · drag to filter", "");
    scene.text("links", [x0 - 8.0, y0 - 10.0], 12.0, Anchor::Right, super::TEXT);
}
