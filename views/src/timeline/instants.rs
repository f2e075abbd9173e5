//! Instants (slices of no duration: Perfetto's `TYPE_INSTANT`, Chrome's `i` events, NVTX marks)
//! drawn as chevrons at the top of their rows, as Perfetto draws them.

use exaviz_model::Trace;
use exaviz_render::{Blend, Scene};
use rayon::prelude::*;

use super::index::TimelineIndex;
use super::tracks::Tracks;
use crate::plot::{CATEGORICAL, Plot};

/// At most this many chevrons are drawn in one picture (one per row and pixel column).
const MOST: usize = 50_000;

/// A trace's instants, by time: time, location, region.
pub(super) fn instants_of(t: &Trace) -> Vec<(u64, u32, u32)> {
    let i = &t.intervals;
    let mut v: Vec<(u64, u32, u32)> = (0..i.start.len())
        .into_par_iter()
        .filter(|&k| i.start[k] == i.end[k])
        .map(|k| (i.start[k], i.location[k], i.kind[k]))
        .collect();
    v.par_sort_unstable();
    v
}

/// A chevron: its tip's column and the top and bottom of its row (plot pixels), its colour.
pub(super) type Chevron = (f32, u32, u32, [f32; 4]);

/// The chevrons of the instants in `window`, one per row and pixel column (the first there),
/// on the rows drawn (a location hidden or folded away draws none), coloured as their region's
/// state (undimmed, so a mark stands out on a slice of its own colour).
pub(super) fn chevrons(p: Plot, window: (u64, u64), tracks: &Tracks, index: &TimelineIndex) -> Vec<Chevron> {
    let (t0, t1) = window;
    let v = &index.instants;
    if v.is_empty() || t1 <= t0 {
        return Vec::new();
    }
    let scale = f64::from(p.w) / (t1 - t0) as f64;
    let first = v.partition_point(|e| e.0 < t0);
    let mut taken = std::collections::HashSet::new();
    let mut out = Vec::new();
    for &(time, l, kind) in v[first..].iter().take_while(|e| e.0 <= t1) {
        let rows = tracks.pixels(l as usize);
        if rows.is_empty() {
            continue;
        }
        let column = (((time - t0) as f64 * scale) as u32).min(p.w - 1);
        if !taken.insert((rows.start, column)) {
            continue;
        }
        let slot = index.slot.get(kind as usize).copied().unwrap_or(usize::MAX);
        let rgb = CATEGORICAL.get(slot).copied().unwrap_or([0.85, 0.85, 0.85]);
        out.push((column as f32 + 0.5, rows.start, rows.end, [rgb[0], rgb[1], rgb[2], 1.0]));
        if out.len() == MOST {
            break;
        }
    }
    out
}

/// Each chevron as a `V` hanging from its row's top, as tall as the row allows (up to 8 px),
/// over a dark edge so that it reads on any state; a tick where the row is under 4 px.
pub(super) fn draw_instants(scene: &mut Scene, p: Plot, marks: &[Chevron]) {
    let (x0, y0) = (p.x0 as f32, p.y0 as f32);
    for &(x, top, bottom, colour) in marks {
        let h = (bottom.saturating_sub(top) as f32).min(8.0);
        let (x, top) = (x0 + x, y0 + top as f32);
        if h < 4.0 {
            scene.rect([x - 0.5, top], [x + 0.5, top + h.max(1.0)], colour, false);
            continue;
        }
        let half = h * 0.6;
        for (width, c) in [(2.5, [0.0, 0.0, 0.0, 0.8]), (1.2, colour)] {
            scene.segment(Blend::Alpha, [x - half, top], [x, top + h], width, c, false);
            scene.segment(Blend::Alpha, [x, top + h], [x + half, top], width, c, false);
        }
    }
}
