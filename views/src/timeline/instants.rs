//! Instants (slices of no duration: Perfetto's `TYPE_INSTANT`, Chrome's `i` events, NVTX marks)
//! drawn as chevrons at the top of their rows, as Perfetto draws them; global instants on no row
//! (Chrome's `s: "g"`, Kineto's "Iteration Start") as a line across every row with a chevron
//! over the plot, as chrome://tracing draws them. A search lights the chevrons it matches and
//! dims the others.

use exaviz_model::{InstantScope, NO_ROW, Trace};
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

/// A chevron: its tip's column and the top and bottom of its row (plot pixels), its colour,
/// whether a search lights it (`None`: no search), and whether it is a global instant's, drawn
/// across every row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Chevron {
    pub(super) x: f32,
    pub(super) top: u32,
    pub(super) bottom: u32,
    pub(super) colour: [f32; 4],
    pub(super) lit: Option<bool>,
    pub(super) across: bool,
}

/// The global instants on no row, by time: time, region.
pub(super) fn global_of(t: &Trace) -> Vec<(u64, u32)> {
    let i = &t.instants;
    let mut v: Vec<(u64, u32)> = (0..i.len())
        .filter(|&k| i.scope[k] == InstantScope::Global && i.location[k] == NO_ROW)
        .map(|k| (i.time[k], i.name[k]))
        .collect();
    v.sort_unstable();
    v
}

/// The colour of region `kind`'s marks (`slot`: each region's colour slot): its state's,
/// undimmed, so that a mark stands out on a slice of its own colour.
fn colour_of(slot: &[usize], kind: u32) -> [f32; 4] {
    let slot = slot.get(kind as usize).copied().unwrap_or(usize::MAX);
    let rgb = CATEGORICAL.get(slot).copied().unwrap_or([0.85, 0.85, 0.85]);
    [rgb[0], rgb[1], rgb[2], 1.0]
}

/// The chevrons of the instants in `window`, one per row and pixel column (the first there),
/// on the rows drawn (a location hidden or folded away draws none), coloured as their region's
/// state; then the global instants', one per pixel column. `lit`: per region, whether a search
/// matches it.
pub(super) fn chevrons(
    p: Plot,
    window: (u64, u64),
    tracks: &Tracks,
    index: &TimelineIndex,
    lit: Option<&[bool]>,
) -> Vec<Chevron> {
    let (t0, t1) = window;
    let v = &index.instants;
    if (v.is_empty() && index.global_instants.is_empty()) || t1 <= t0 {
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
        let colour = colour_of(&index.slot, kind);
        let lit = lit.map(|m| m.get(kind as usize) == Some(&true));
        out.push(Chevron { x: column as f32 + 0.5, top: rows.start, bottom: rows.end, colour, lit, across: false });
        if out.len() == MOST {
            break;
        }
    }
    out.extend(across(p, window, &index.global_instants, &index.slot, lit));
    out
}

/// The chevrons of the global instants `g` (time, region; by time) in `window`, one per pixel
/// column, each drawn across every row (`slot`: each region's colour slot; `lit`: per region,
/// whether a search matches it).
pub(super) fn across(
    p: Plot,
    (t0, t1): (u64, u64),
    g: &[(u64, u32)],
    slot: &[usize],
    lit: Option<&[bool]>,
) -> Vec<Chevron> {
    let mut out = Vec::new();
    if t1 <= t0 {
        return out;
    }
    let scale = f64::from(p.w) / (t1 - t0) as f64;
    let first = g.partition_point(|e| e.0 < t0);
    let mut last_column = u32::MAX;
    for &(time, kind) in g[first..].iter().take_while(|e| e.0 <= t1) {
        let column = (((time - t0) as f64 * scale) as u32).min(p.w - 1);
        if column == last_column {
            continue;
        }
        last_column = column;
        let (colour, lit) = (colour_of(slot, kind), lit.map(|m| m.get(kind as usize) == Some(&true)));
        out.push(Chevron { x: column as f32 + 0.5, top: 0, bottom: p.h, colour, lit, across: true });
    }
    out
}

/// Each chevron as a `V` hanging from its row's top, as tall as the row allows (up to 8 px),
/// over a dark edge so that it reads on any state; a tick where the row is under 4 px. A global
/// instant's is a thin line down every row under a chevron over the plot. A search's match is
/// drawn over a white edge, the rest faded.
pub(super) fn draw_instants(scene: &mut Scene, p: Plot, marks: &[Chevron]) {
    let (x0, y0) = (p.x0 as f32, p.y0 as f32);
    for m in marks {
        let fade = if m.lit == Some(false) { 0.3 } else { 1.0 };
        let colour = [m.colour[0], m.colour[1], m.colour[2], m.colour[3] * fade];
        let edge = if m.lit == Some(true) { [1.0, 1.0, 1.0, 0.95] } else { [0.0, 0.0, 0.0, 0.8 * fade] };
        let x = x0 + m.x;
        if m.across {
            let line = [colour[0], colour[1], colour[2], 0.45 * fade];
            scene.segment(Blend::Alpha, [x, y0], [x, y0 + p.h as f32], 1.0, line, false);
            let (top, h, half) = (y0 - 9.0, 8.0, 4.8);
            for (width, c) in [(2.5, edge), (1.2, colour)] {
                scene.segment(Blend::Alpha, [x - half, top], [x, top + h], width, c, false);
                scene.segment(Blend::Alpha, [x, top + h], [x + half, top], width, c, false);
            }
            continue;
        }
        let h = (m.bottom.saturating_sub(m.top) as f32).min(8.0);
        let top = y0 + m.top as f32;
        if h < 4.0 {
            let c = if m.lit == Some(true) { [1.0, 1.0, 1.0, 1.0] } else { colour };
            scene.rect([x - 0.5, top], [x + 0.5, top + h.max(1.0)], c, false);
            continue;
        }
        let half = h * 0.6;
        for (width, c) in [(2.5, edge), (1.2, colour)] {
            scene.segment(Blend::Alpha, [x - half, top], [x, top + h], width, c, false);
            scene.segment(Blend::Alpha, [x, top + h], [x + half, top], width, c, false);
        }
    }
}
