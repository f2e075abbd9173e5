//! The state layer: per plot pixel the states its row covers over its time, the dominant one or
//! their shares stacked.

use exaviz_model::Trace;
use rayon::prelude::*;

use super::index::{TimelineIndex, parts_mut};
use super::options::StateMode;
use super::tracks::Tracks;
use crate::plot::{CATEGORICAL, Plot};

/// RGBA of every plot pixel from the states (row-major, `None`: no state): per pixel the
/// dominant state, or the states' shares stacked up the rows of each process (`mode`); the
/// opacity is the share of the pixel's time covered by a state.
pub(super) fn state_pixels(
    t: &Trace,
    p: Plot,
    window: (u64, u64),
    of_row: &[(Vec<usize>, Option<u32>)],
    index: &TimelineIndex,
    mode: StateMode,
    columns: std::ops::Range<usize>,
) -> Vec<Option<[f32; 4]>> {
    let (by, slot) = (&index.by, &index.slot);
    let (t0, t1) = window;
    let per_px = (t1 - t0) as f64 / f64::from(p.w);
    let i = &t.intervals;
    // Only the states in the columns' time are walked, from two columns before them to two
    // after: a state cut at the walk's edge is then counted in the columns as the whole
    // window's walk counts it (at most its end column in part, the others whole).
    let w = p.w as usize;
    let walked = columns.start.saturating_sub(2)..(columns.end + 2).min(w);
    let walk = if walked.start == 0 && walked.end == w {
        window
    } else {
        let at = |c: usize| t0.saturating_add((c as f64 * per_px) as u64);
        (at(walked.start), at(walked.end).saturating_add(1).min(t1))
    };
    let (skip, len) = (columns.start - walked.start, columns.len());
    stacked_runs(of_row, w, columns, mode, |(locs, level)| {
        let mut cov = Coverage::over(walked.clone());
        let mut add = |a: u64, b: u64, k: u32| {
            let (a, b) = (a.max(t0), b.min(t1));
            if a < b {
                cov.add((a - t0) as f64 / per_px, (b - t0) as f64 / per_px, slot[k as usize]);
            }
        };
        for &l in locs {
            match level {
                None => by.innermost_in(l, walk, &mut add),
                // The intervals at this level, nested ones beside it hidden by the band below.
                Some(d) => by.overlapping(l, walk, |k| {
                    if i.depth[k] == *d {
                        add(i.start[k], i.end[k], i.kind[k]);
                    }
                }),
            }
        }
        let mut cov = cov.finish();
        cov.drain(..skip);
        cov.truncate(len);
        (cov, 1.0 / locs.len().max(1) as f32)
    })
}

/// How much of each pixel column of a row each colour slot covers: intervals added in column
/// units `[xa, xb)`, over the columns `[from, to)` (an interval reaching beyond them is cut at
/// their edges, so the columns two or more inside an edge are counted as a whole row's are).
/// Columns an interval covers whole are counted once at each end of the run of them and summed
/// at the end, so a state across the whole window costs two additions, not one per column: a
/// row of many processes at a deep zoom is mostly such states.
struct Coverage {
    /// The first column, as a column unit.
    from: f64,
    cov: Vec<[f32; CATEGORICAL.len()]>,
    whole: Vec<[f32; CATEGORICAL.len()]>,
}

impl Coverage {
    fn over(columns: std::ops::Range<usize>) -> Self {
        let n = columns.len();
        Self {
            from: columns.start as f64,
            cov: vec![[0f32; CATEGORICAL.len()]; n],
            whole: vec![[0f32; CATEGORICAL.len()]; n + 1],
        }
    }

    /// Adds `[xa, xb)` (0 <= xa < xb <= the row's width) in slot `s`.
    fn add(&mut self, xa: f64, xb: f64, s: usize) {
        // Whole columns away: exact, as the columns' units are below 2^52.
        let (xa, xb) = ((xa - self.from).max(0.0), (xb - self.from).min(self.cov.len() as f64));
        if xa >= xb {
            return;
        }
        let (ca, cb) = (xa.floor() as u32, (xb.ceil() as u32).min(self.cov.len() as u32));
        let part = |c: u32| (xb.min(f64::from(c) + 1.0) - xa.max(f64::from(c))).max(0.0) as f32;
        if cb <= ca + 2 {
            for c in ca..cb {
                self.cov[c as usize][s] += part(c);
            }
            return;
        }
        // The first and last columns in part, the ones between whole.
        self.cov[ca as usize][s] += part(ca);
        self.cov[cb as usize - 1][s] += part(cb - 1);
        self.whole[ca as usize + 1][s] += 1.0;
        self.whole[cb as usize - 1][s] -= 1.0;
    }

    fn finish(mut self) -> Vec<[f32; CATEGORICAL.len()]> {
        let mut run = [0f32; CATEGORICAL.len()];
        for (c, w) in self.cov.iter_mut().zip(&self.whole) {
            for s in 0..run.len() {
                run[s] += w[s];
                c[s] += run[s];
            }
        }
        self.cov
    }
}

/// The summary track as drawn: its plot, per pixel column the share of the locations in each
/// colour slot (`None` where the track was drawn on the device: a tooltip sums its column), and
/// how many locations it counts.
pub struct Summarised {
    pub(super) plot: Plot,
    pub(super) shares: Option<Vec<[f32; CATEGORICAL.len()]>>,
    pub(super) locations: usize,
}

/// The locations the summary track counts: those drawn on `rows`.
pub(super) fn summary_locations(index: &TimelineIndex, rows: &Tracks) -> Vec<usize> {
    (0..index.busy.len()).filter(|&l| !rows.pixels(l).is_empty()).collect()
}

/// The summary track's numbers: per pixel column of a plot `w` wide over `window`, the share of
/// the `shown` locations in each colour slot (their innermost states' time in the column over
/// the column's time, summed, over their count: at most 1 in all).
pub(super) fn summary_shares(
    w: u32,
    window: (u64, u64),
    shown: &[usize],
    index: &TimelineIndex,
) -> Vec<[f32; CATEGORICAL.len()]> {
    summary_columns(w, window, shown, index, 0..w as usize)
}

/// The summary track's numbers of the pixel `columns` alone (see [`summary_shares`]): what a
/// tooltip over a track drawn on the device reads.
pub(super) fn summary_columns(
    w: u32,
    window: (u64, u64),
    shown: &[usize],
    index: &TimelineIndex,
    columns: std::ops::Range<usize>,
) -> Vec<[f32; CATEGORICAL.len()]> {
    let (by, slot) = (&index.by, &index.slot);
    let (t0, t1) = window;
    let per_px = (t1 - t0) as f64 / f64::from(w.max(1));
    // The ticks the columns span, whole ticks around them.
    let within = (
        t0 + (columns.start as f64 * per_px).floor() as u64,
        (t0 + (columns.end as f64 * per_px).ceil() as u64).min(t1),
    );
    let n = columns.len();
    let sum = |mut a: Vec<[f32; CATEGORICAL.len()]>, b: Vec<[f32; CATEGORICAL.len()]>| {
        for (x, y) in a.iter_mut().zip(&b) {
            for s in 0..x.len() {
                x[s] += y[s];
            }
        }
        a
    };
    let mut shares = shown
        .par_chunks(64)
        .map(|locs| {
            let mut cov = Coverage::over(columns.clone());
            for &l in locs {
                by.innermost_in(l, within, &mut |a: u64, b: u64, k: u32| {
                    let (a, b) = (a.max(t0), b.min(t1));
                    if a < b {
                        cov.add((a - t0) as f64 / per_px, (b - t0) as f64 / per_px, slot[k as usize]);
                    }
                });
            }
            cov.finish()
        })
        .reduce(|| vec![[0f32; CATEGORICAL.len()]; n], sum);
    let n = shown.len().max(1) as f32;
    for c in &mut shares {
        for v in c.iter_mut() {
            *v = (*v / n).clamp(0.0, 1.0);
        }
    }
    shares
}

/// The summary track's pixels, `h` rows of `shares.len()` columns (row-major, `None`: no
/// state): each column's states stacked from the bottom in the legend's order, each as tall as
/// its share of the locations, the rest of the column empty.
pub(super) fn summary_pixels(shares: &[[f32; CATEGORICAL.len()]], h: u32) -> Vec<Option<[f32; 4]>> {
    let w = shares.len();
    let mut out = vec![None; w * h as usize];
    for (r, row) in out.chunks_mut(w.max(1)).enumerate() {
        // How far up the track this row's centre is.
        let up = 1.0 - (r as f32 + 0.5) / h as f32;
        for (px, c) in row.iter_mut().zip(shares) {
            let mut below = 0.0;
            let s = (0..c.len()).find(|&s| {
                below += c[s];
                c[s] > 0.0 && below > up
            });
            *px = s.map(|s| {
                let rgb = CATEGORICAL[s].map(|v| v * 0.72);
                [rgb[0], rgb[1], rgb[2], 1.0]
            });
        }
    }
    out
}

/// Most members of a band of locations grouped by behaviour that its pixels are drawn from.
pub(super) const BAND_SAMPLE: usize = 64;

/// Least height of a nesting level's band, in pixels.
pub(super) const LEVEL_PX: u32 = 6;

/// What each pixel row of the plot shows: its locations (several where there are more locations
/// than rows) and, given each location's deepest level (`depth`), the nesting level of the band
/// it is in where its location has a row of its own tall enough for a band per level (the
/// outermost on top; `None`: the innermost state).
pub(super) fn row_contents(
    t: &Trace,
    p: Plot,
    tracks: &Tracks,
    depth: Option<&[u32]>,
) -> Vec<(Vec<usize>, Option<u32>)> {
    let mut of_row: Vec<(Vec<usize>, Option<u32>)> = vec![(Vec::new(), None); p.h as usize];
    // A band of locations grouped by behaviour is drawn from an even sample of its members:
    // they do the same by construction (those that differ have rows of their own), and a band
    // of 100,000 locations on hundreds of pixel rows would list every member on every row.
    let mut drawn = vec![true; t.locations.name.len()];
    for k in (0..tracks.count()).filter(|&k| tracks.band(k).is_some()) {
        let members: Vec<usize> = tracks.locations(k).collect();
        let step = members.len().div_ceil(BAND_SAMPLE).max(1);
        for (i, &l) in members.iter().enumerate() {
            drawn[l] = i % step == 0;
        }
    }
    for l in (0..t.locations.name.len()).filter(|&l| drawn[l]) {
        for r in tracks.pixels(l) {
            of_row[r as usize].0.push(l);
        }
    }
    let Some(depth) = depth else { return of_row };
    for (l, &d) in depth.iter().enumerate() {
        let rows = tracks.pixels(l);
        let (r0, h) = (rows.start, rows.end.saturating_sub(rows.start));
        let alone = rows.clone().all(|r| of_row[r as usize].0.len() == 1);
        if d == 0 || !alone || h < (d + 1) * LEVEL_PX {
            continue;
        }
        for r in rows {
            of_row[r as usize].1 = Some((r - r0) * (d + 1) / h);
        }
    }
    of_row
}

/// State colours of every pixel of rows `width` pixels wide, row-major, from
/// `coverage(what a row shows)`: per pixel column of `columns` the states' cover in pixels of
/// one process's row, and one over the processes on the row. Rows showing the same (runs of them, where
/// processes are taller than a row) share one coverage, stacked over the run's rows in
/// [`StateMode::Stacked`]. Each run writes its own rows of the picture, in `columns` only (the
/// others `None`).
pub(super) fn stacked_runs<K: PartialEq + Sync>(
    rows: &[K],
    width: usize,
    columns: std::ops::Range<usize>,
    mode: StateMode,
    coverage: impl Fn(&K) -> (Vec<[f32; CATEGORICAL.len()]>, f32) + Sync,
) -> Vec<Option<[f32; 4]>> {
    let mut out = vec![None; rows.len() * width];
    // The pixels of each run of rows.
    let mut runs = Vec::new();
    let mut r = 0;
    while r < rows.len() {
        let height = rows[r..].iter().take_while(|k| **k == rows[r]).count();
        runs.push(r * width..(r + height) * width);
        r += height;
    }
    parts_mut(&mut out, &runs).into_par_iter().for_each(|(at, run)| {
        let (cov, share) = coverage(&rows[at / width]);
        let height = run.len() / width;
        for (row, pixels) in run.chunks_mut(width).enumerate() {
            // Stacked: how far up the run this row's centre is.
            let up = 1.0 - (row as f32 + 0.5) / height as f32;
            for (px, c) in pixels[columns.clone()].iter_mut().zip(&cov) {
                *px = cover_colour(c, share, mode, up);
            }
        }
    });
    out
}

/// The colour of a pixel whose states cover `c` (per colour slot, in pixels of one process's
/// row; `share`: one over the processes drawn on the row), by `mode` (`up`: how far up its
/// process's rows the pixel is, for stacking). `None`: no state.
fn cover_colour(c: &[f32; CATEGORICAL.len()], share: f32, mode: StateMode, up: f32) -> Option<[f32; 4]> {
    let total: f32 = c.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let s = match mode {
        StateMode::Dominant => (0..c.len()).fold(0, |best, s| if c[s] > c[best] { s } else { best }),
        StateMode::Stacked => {
            let mut below = 0.0;
            (0..c.len())
                .find(|&s| {
                    below += c[s] / total;
                    c[s] > 0.0 && below > up
                })
                .unwrap_or_else(|| (0..c.len()).rfind(|&s| c[s] > 0.0).unwrap_or(0))
        }
    };
    Some(state_colour(s, (total * share).min(1.0)))
}

/// The colour of a pixel in the state of colour slot `s` at opacity `alpha`: a little darker
/// than its legend swatch, so that message lines stand out on it.
pub(super) fn state_colour(s: usize, alpha: f32) -> [f32; 4] {
    let rgb = CATEGORICAL[s].map(|v| v * 0.72);
    [rgb[0], rgb[1], rgb[2], alpha]
}

/// The colour slot of a pixel coloured by [`state_colour`].
pub(super) fn colour_slot(c: &[f32; 4]) -> Option<usize> {
    (0..CATEGORICAL.len()).find(|&s| state_colour(s, c[3]) == *c)
}

#[cfg(test)]
mod coverage_tests {
    use super::*;

    /// The run-length counting of whole columns gives what adding every column's overlap one by
    /// one gives, within float rounding (1e-4 of a column), for short and long intervals.
    #[test]
    fn whole_columns_counted_at_their_ends_equal_column_by_column() {
        let width = 97u32;
        let mut fast = Coverage::over(0..width as usize);
        let mut slow = vec![[0f32; CATEGORICAL.len()]; width as usize];
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for k in 0..2000 {
            let a = next() * f64::from(width);
            let len = if k % 3 == 0 { next() * 2.5 } else { next() * f64::from(width) };
            let b = (a + len).min(f64::from(width));
            if b <= a {
                continue;
            }
            let s = k % CATEGORICAL.len();
            fast.add(a, b, s);
            for c in (a.floor() as u32)..(b.ceil() as u32).min(width) {
                slow[c as usize][s] += (b.min(f64::from(c) + 1.0) - a.max(f64::from(c))).max(0.0) as f32;
            }
        }
        let fast = fast.finish();
        for (c, (f, s)) in fast.iter().zip(&slow).enumerate() {
            for k in 0..CATEGORICAL.len() {
                assert!((f[k] - s[k]).abs() <= 1e-4 * s[k].max(1.0), "column {c} slot {k}: {} against {}", f[k], s[k]);
            }
        }
        assert!(slow.iter().map(|c| c.iter().sum::<f32>()).sum::<f32>() > 10_000.0, "the intervals cover a lot");
    }
}
