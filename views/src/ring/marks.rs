//! Marks on the ring: TorusTrafficND's traffic marks on the chords, and the Hilbert blocks'
//! boundaries and numbers.

use exaviz_render::layout::blocks::Blocks;
use exaviz_render::{Anchor, Blend, Scene};

use super::Circle;
use crate::TEXT_DIM;
use crate::torus::traffic::Chords;

/// Most traffic marks drawn (the heaviest channels'); more would cover the disc.
pub(super) const MAX_MARKS: usize = 50_000;
/// Colour of traffic marks (Okabe and Ito's vermillion) and of their outline.
pub(super) const MARK_COLOUR: [f32; 4] = [0.84, 0.37, 0.0, 0.9];
pub(super) const MARK_OUTLINE: [f32; 4] = [0.07, 0.08, 0.1, 0.9];

/// Radius of the largest traffic mark on a circle of `radius` with marks of `relative` sizes
/// (traffic over the largest's): at most 2.8% of the radius, and small enough that all marks
/// together cover at most 15% of the disc.
pub(super) fn largest_mark(radius: f32, relative: f64) -> f32 {
    let fit = f64::from(radius) * (0.15 / relative.max(1.0)).sqrt();
    (fit as f32).min(radius * 0.028).clamp(1.5, 10.0)
}

/// Where the mark of channel `a`-`b` (a < b, its line running from `a` to `b`) sits along the
/// line, when `a` sends `up` of its `t` packets: 10% of the way from the main sender for one-way
/// traffic, 50% for balanced, plus a fixed jitter of at most ±3% per channel.
pub(super) fn mark_fraction(a: u32, b: u32, up: u64, t: u64) -> f32 {
    let share = up.max(t - up) as f32 / t as f32;
    let jitter = ((a.wrapping_mul(2_654_435_761) ^ b.wrapping_mul(40_503)) % 1000) as f32 / 1000.0 - 0.5;
    let u = 0.5 - 0.8 * (share - 0.5) + 0.06 * jitter;
    if up * 2 >= t { u } else { 1.0 - u }
}

/// The point at fraction `u` of a polyline's length.
pub(super) fn along(line: &[[f32; 2]], u: f32) -> [f32; 2] {
    let len: f32 = line.windows(2).map(|s| (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1])).sum();
    let mut left = u.clamp(0.0, 1.0) * len;
    for s in line.windows(2) {
        let l = (s[1][0] - s[0][0]).hypot(s[1][1] - s[0][1]);
        if left <= l && l > 0.0 {
            let f = left / l;
            return [s[0][0] + f * (s[1][0] - s[0][0]), s[0][1] + f * (s[1][1] - s[0][1])];
        }
        left -= l;
    }
    line.last().copied().unwrap_or([0.0, 0.0])
}

/// TorusTrafficND §V-B.1.a: on every channel with traffic, a disc whose area is proportional to the
/// channel's packets, placed along its curve towards the node that sends most of them: at 10% of
/// the way for one-way traffic, half way for balanced traffic, with a small fixed jitter per
/// channel against overplotting. Returns the largest mark's radius and traffic, for the legend.
pub(super) fn traffic_marks(
    scene: &mut Scene,
    chords: &Chords,
    lines: &[Vec<[f32; 2]>],
    circle: &Circle,
) -> Option<(f32, u64)> {
    if chords.max == 0 {
        return None;
    }
    let first = chords.list.len().saturating_sub(MAX_MARKS);
    let relative: f64 = chords.list[first..].iter().map(|c| c.1 as f64 / chords.max as f64).sum();
    let r_max = largest_mark(circle.radius, relative);
    for (k, (&((a, b), t), line)) in chords.list.iter().zip(lines).enumerate().skip(first) {
        if t == 0 || line.len() < 2 {
            continue;
        }
        let at = along(line, mark_fraction(a, b, chords.upward[k], t));
        let r = (r_max * (t as f32 / chords.max as f32).sqrt()).max(0.9);
        scene.disc(at, r + 0.8, MARK_OUTLINE, false);
        scene.disc(at, r, MARK_COLOUR, false);
    }
    Some((r_max, chords.max))
}

/// Block boundaries (radial ticks through the rings) and block numbers outside them.
pub(super) fn block_marks(scene: &mut Scene, blocks: &Blocks, circle: &Circle, rim: f32) {
    let s = blocks.size();
    for k in 0..blocks.count() {
        let edge = (k * s) as f32 - 0.5;
        scene.segment(
            Blend::Alpha,
            circle.at_f(edge, circle.radius - 3.0),
            circle.at_f(edge, rim + 5.0),
            1.2,
            TEXT_DIM,
            false,
        );
        let q = circle.at_f((k * s) as f32 + s as f32 / 2.0 - 0.5, rim + 13.0);
        scene.text(&format!("{}", k + 1), [q[0], q[1] + 4.0], 11.0, Anchor::Centre, TEXT_DIM);
    }
}
