//! Collective operations, each joined across the rows it spans.

use exaviz_model::Trace;
use exaviz_render::Scene;

use super::index::TimelineIndex;
use super::tracks::Tracks;
use crate::plot::Plot;

/// Collective operations in a window, as plot pixels: each participant's span (`spans`: row,
/// x0, x1; only where rows are tall enough to show them apart from the states), and one join
/// per operation and pixel column at the operations' end (`x`, top row, bottom row).
pub(super) struct Joins {
    pub(super) spans: Vec<(u32, f32, f32)>,
    pub(super) joins: Vec<(f32, f32, f32)>,
}

impl Joins {
    pub(super) fn is_empty(&self) -> bool {
        self.joins.is_empty()
    }
}

pub(super) fn collective_joins(
    t: &Trace,
    p: Plot,
    window: (u64, u64),
    tracks: &Tracks,
    index: &TimelineIndex,
) -> Joins {
    let (t0, t1) = window;
    let n = t.locations.name.len();
    let scale = f64::from(p.w) / (t1 - t0) as f64;
    let x = |time: u64| ((time as f64 - t0 as f64) * scale) as f32;
    let row = |l: u32| tracks.pixels(l as usize);
    let ops = &index.collectives;
    let first = ops.partition_point(|o| o.1 < t0);
    // Per pixel column: the highest and lowest rows joined there.
    let mut columns: Vec<Option<(u32, u32)>> = vec![None; p.w as usize];
    for o in ops[first..].iter().take_while(|o| o.1 <= t1) {
        let c = (x(o.1).floor().max(0.0) as usize).min(p.w as usize - 1);
        let (top, bottom) = (row(o.2).start, row(o.3).end);
        columns[c] = Some(columns[c].map_or((top, bottom), |(a, b)| (a.min(top), b.max(bottom))));
    }
    let joins =
        columns.iter().enumerate().filter_map(|(c, j)| j.map(|(a, b)| (c as f32 + 0.5, a as f32, b as f32))).collect();
    // Spans: a line along the bottom of each participant's row, merged per row where they
    // touch within a pixel.
    let mut spans = Vec::new();
    if (tracks.count() as u32) * 4 <= p.h {
        let c = &t.collectives;
        let mut by_row: Vec<Vec<(f32, f32)>> = vec![Vec::new(); n];
        for k in 0..c.location.len() {
            let l = c.location[k] as usize;
            if l < n && c.end[k] >= t0 && c.start[k] <= t1 {
                by_row[l].push((x(c.start[k].max(t0)), x(c.end[k].min(t1))));
            }
        }
        for (l, mut v) in by_row.into_iter().enumerate() {
            v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            let mut open: Option<(f32, f32)> = None;
            for (a, b) in v {
                open = match open {
                    Some((oa, ob)) if a <= ob + 1.0 => Some((oa, ob.max(b))),
                    Some(done) => {
                        spans.push((row(l as u32).end, done.0, done.1));
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
            }
            if let Some(done) = open {
                spans.push((row(l as u32).end, done.0, done.1));
            }
        }
    }
    Joins { spans, joins }
}

/// Collectives' colour: a light reddish purple, apart from the states' darker colours and the
/// white of a highlighted pair.
pub(super) const COLLECTIVE: [f32; 4] = [0.96, 0.62, 0.84, 0.95];

pub(super) fn draw_collectives(scene: &mut Scene, p: Plot, j: &Joins) {
    let (x0, y0) = (p.x0 as f32, p.y0 as f32);
    for &(row_end, a, b) in &j.spans {
        let y = y0 + row_end as f32;
        scene.rect([x0 + a, y - 2.0], [x0 + b.max(a + 1.0), y], COLLECTIVE, false);
    }
    for &(x, top, bottom) in &j.joins {
        let (a, b) = ([x0 + x, y0 + top], [x0 + x, y0 + bottom.max(top + 1.0)]);
        scene.segment(exaviz_render::Blend::Alpha, a, b, 1.0, COLLECTIVE, false);
    }
}
