//! The message layer: lines from send to receive through the line-density stage, straight or
//! bundled, and the tone that maps their counts to opacity.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_compute::bspline::Curve;
use exaviz_compute::kde_bundle::UnitFrame;
use exaviz_compute::{BundleInput, DensityInput};
use exaviz_model::Trace;
use rayon::prelude::*;

use super::index::TimelineIndex;
use super::options::{DEFAULT_MESSAGE_OPACITY, TimelineBundle};
use super::pan::{Beside, KeptLines, TraceKey};
use super::routes::Router;
use super::tracks::Tracks;
use crate::ViewError;
use crate::plot::Plot;

/// Gradient weight of a piece of a message line at `t` along it (0: sender, 1: receiver).
pub(super) const GRADIENT_STEPS: f32 = 16.0;
/// Bundled messages per density pass (bounds the memory of their curves and segments).
const MESSAGES_PER_PASS: usize = 1 << 18;

/// Message lines in plot pixels, through the line-density stage on the backend, each line cut
/// into pieces weighted by their position from sender (0) to receiver (16): per pixel, `counts`
/// is the number of lines and `sums / 16` how much of them is receiver end. Bundled as `bundle`
/// says. Straight lines beside those `kept` are drawn only where the kept picture lacks them.
#[allow(clippy::too_many_arguments, reason = "the window's lines, where they go, and what was drawn before")]
pub(super) fn message_density(
    t: &Trace,
    backend: &Backend,
    p: Plot,
    window: (u64, u64),
    tracks: &Tracks,
    bundle: &TimelineBundle,
    index: &TimelineIndex,
    kept: Option<(&KeptLines, TraceKey)>,
    filter: Option<&exaviz_model::selection::MessageFilter>,
) -> Result<(stages::DensityImage, Vec<u32>), ViewError> {
    let (t0, t1) = window;
    let m = &t.messages;
    let n = t.locations.name.len();
    let scale = f64::from(p.w) / (t1 - t0) as f64;
    let x = |time: u64| ((time as f64 - t0 as f64) * scale) as f32;
    // Each location's row centre, once (a window's lines read it twice each).
    let centre: Vec<f32> = (0..n)
        .map(|l| {
            let r = tracks.pixels(l);
            (r.start + r.end) as f32 / 2.0
        })
        .collect();
    let y = |l: u32| centre[l as usize];
    let shown = |i: usize| {
        m.send_time[i] <= t1
            && m.recv_time[i] >= t0
            && m.recv_time[i] != u64::MAX
            && (m.source[i] as usize) < n
            && (m.destination[i] as usize) < n
            && filter.is_none_or(|f| f.keeps(m.bytes[i], m.tag[i], m.source[i], m.destination[i]))
    };
    // Straight lines beside the last picture's: only those through the columns it lacks are
    // drawn (the last picture's lines are of every message: none kept under a filter).
    let kept = kept
        .filter(|_| matches!(bundle, TimelineBundle::None) && filter.is_none())
        .map(|(k, key)| (k, (key, centre.clone())));
    let beside = kept.as_ref().and_then(|(k, key)| k.beside(key, p, window));
    let (lo, hi) = beside.as_ref().map_or((f32::MIN, f32::MAX), Beside::reach);
    let line = |i: usize| [x(m.send_time[i]), y(m.source[i]), x(m.recv_time[i]), y(m.destination[i])];
    let drawn = |l: &[f32; 4]| l[0].max(l[2]) >= lo && l[0].min(l[2]) < hi;
    let candidates = index.candidates(t, window);
    // In row order, as the density and bundling stages always saw them.
    let (visible, lines): (Vec<u32>, Vec<[f32; 4]>) = if candidates.is_sorted() {
        // Rows in send order already (a window read from disk, a million of them): the visible
        // rows and their lines in one pass, in parts joined once.
        let parts: Vec<(Vec<u32>, Vec<[f32; 4]>)> = candidates
            .par_chunks(VISIBLE_PART)
            .map(|part| {
                let rows: Vec<u32> = part.iter().copied().filter(|&i| shown(i as usize)).collect();
                let lines = rows.iter().map(|&i| line(i as usize)).filter(drawn).collect();
                (rows, lines)
            })
            .collect();
        let mut visible = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
        let mut lines = Vec::with_capacity(visible.capacity());
        for (rows, part) in parts {
            visible.extend_from_slice(&rows);
            lines.extend_from_slice(&part);
        }
        (visible, lines)
    } else {
        let mut visible: Vec<u32> = candidates.par_iter().copied().filter(|&i| shown(i as usize)).collect();
        if !visible.is_sorted() {
            sort_distinct(&mut visible);
        }
        let lines = visible.par_iter().map(|&i| line(i as usize)).filter(drawn).collect();
        (visible, lines)
    };
    let ends = |k: usize| [m.source[visible[k] as usize], m.destination[visible[k] as usize]];
    let router = Router::new(bundle, &lines, ends, n, p);
    if let TimelineBundle::None = bundle {
        let mut image = straight_density(backend, &lines, p)?;
        if let Some(b) = beside {
            b.fill(&mut image);
        }
        if let Some((k, key)) = kept {
            k.keep(key, p, window, image.clone());
        }
        return Ok((image, visible));
    }
    let pixels = (p.w * p.h) as usize;
    let mut total = stages::DensityImage { width: p.w, height: p.h, counts: vec![0; pixels], sums: vec![0; pixels] };
    // Bundled lines in parts, which bounds the memory of their curves.
    for (c, part) in lines.chunks(MESSAGES_PER_PASS).enumerate() {
        let polylines = match bundle {
            TimelineBundle::None => unreachable!("straight lines are drawn above"),
            TimelineBundle::Kde(params) => {
                let frame = UnitFrame::fit(part);
                let unit: Vec<[f32; 4]> = part.iter().map(|&e| frame.edge_to_unit(e)).collect();
                let mut b = stages::kde_bundle::run(
                    backend.runner().as_mut(),
                    &BundleInput { edges: &unit, weights: None },
                    params,
                )?;
                b.points.iter_mut().for_each(|q| *q = frame.from_unit(*q));
                Polylines { samples: b.samples as usize, points: b.points }
            }
            TimelineBundle::Hierarchical { beta } | TimelineBundle::Grid { beta } => {
                let router = router.as_ref().expect("a router for routed bundles");
                let first = c * MESSAGES_PER_PASS;
                let polygons = router.polygons(part, first);
                let curve = Curve { samples: router.samples, beta: beta.clamp(0.0, 1.0), degree: 2 };
                let b = stages::bspline::run(backend.runner().as_mut(), &polygons, curve)?;
                Polylines { samples: b.samples as usize, points: b.points }
            }
        };
        let (segments, weights) = polylines.pieces();
        let input = DensityInput { segments: &segments, weights: Some(&weights), width: p.w, height: p.h };
        let image = stages::line_density::run(backend.runner().as_mut(), &input)?;
        total.counts.iter_mut().zip(&image.counts).for_each(|(a, b)| *a = a.saturating_add(*b));
        total.sums.iter_mut().zip(&image.sums).for_each(|(a, b)| *a += b);
    }
    Ok((total, visible))
}

/// Distinct `rows` in increasing order, through a bitmap over their range where it is dense
/// enough: linear in the rows and in the range / 64, where a comparison sort of the 668K rows of
/// one window of a 22M-message trace held in memory took about 20 ms.
pub(super) fn sort_distinct(rows: &mut Vec<u32>) {
    let (lo, hi) = rows.iter().fold((u32::MAX, 0), |(a, b), &r| (a.min(r), b.max(r)));
    if lo > hi {
        return;
    }
    let words = ((hi - lo) as usize / 64) + 1;
    if words > rows.len().saturating_mul(8) {
        // Few rows over a long range: sorting them is cheaper than scanning the range.
        rows.par_sort_unstable();
        return;
    }
    let mut bits = vec![0u64; words];
    for &r in rows.iter() {
        let k = (r - lo) as usize;
        bits[k / 64] |= 1 << (k % 64);
    }
    rows.clear();
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            rows.push(lo + (w * 64) as u32 + x.trailing_zeros());
            x &= x - 1;
        }
    }
}

/// Candidate messages per part of the pass that finds the visible ones.
const VISIBLE_PART: usize = 1 << 16;

/// Straight message lines, each cut into the three pieces [`Polylines::straight`] makes of it
/// (weighted 0, 8 and 16 steps from sender to receiver), through the line-density stage's
/// straight lines: equal to one weighted pass over the pieces, count for count and sum for sum.
pub(super) fn straight_density(
    backend: &Backend,
    lines: &[[f32; 4]],
    p: Plot,
) -> Result<stages::DensityImage, ViewError> {
    const PIECES: usize = STRAIGHT_SAMPLES - 1;
    let weights: Vec<u32> = (0..PIECES).map(|k| piece_weight(k, PIECES)).collect();
    let input = stages::line_density::StraightInput { lines, weights: &weights, width: p.w, height: p.h };
    Ok(stages::line_density::straight(backend.runner().as_mut(), &input)?)
}

/// Points of a straight message line (three pieces).
pub(super) const STRAIGHT_SAMPLES: usize = 4;

/// The gradient weight of piece `k` of `per` along a line (0: at the sender).
fn piece_weight(k: usize, per: usize) -> u32 {
    let f = if per > 1 { k as f32 / (per - 1) as f32 } else { 0.5 };
    (f * GRADIENT_STEPS).round() as u32
}

/// Polylines with the same number of points each.
pub(super) struct Polylines {
    samples: usize,
    points: Vec<[f32; 2]>,
}

impl Polylines {
    /// Straight lines of `samples` points each (the reference of [`straight_density`]).
    #[cfg(test)]
    pub(super) fn straight(lines: &[[f32; 4]], samples: usize) -> Self {
        let points = lines
            .iter()
            .flat_map(|l| {
                (0..samples).map(move |k| {
                    let f = k as f32 / (samples - 1) as f32;
                    [l[0] + (l[2] - l[0]) * f, l[1] + (l[3] - l[1]) * f]
                })
            })
            .collect();
        Self { samples, points }
    }

    /// Every piece between consecutive points, weighted by its position along its line.
    pub(super) fn pieces(&self) -> (Vec<[f32; 4]>, Vec<u32>) {
        let s = self.samples.max(2);
        let per = s - 1;
        let mut segments = Vec::with_capacity(self.points.len() / s * per);
        let mut weights = Vec::with_capacity(segments.capacity());
        for line in self.points.chunks_exact(s) {
            for k in 0..per {
                let (a, b) = (line[k], line[k + 1]);
                segments.push([a[0], a[1], b[0], b[1]]);
                weights.push(piece_weight(k, per));
            }
        }
        (segments, weights)
    }
}

/// Additive mixing: the sum of `count` lines' colours over their mean colour, after the log tone
/// map (one line 0.25, the busiest pixel 1.3, saturated).
pub(super) fn additive_gain(count: u32, log_max: f64) -> f32 {
    (0.25 + 1.05 * ((f64::from(count) + 1.0).ln() - 2f64.ln()).max(0.0) / (log_max - 2f64.ln()).max(1e-9)) as f32
}

/// The message layer's opacity by histogram equalisation: a pixel's rank among the pixels that
/// messages cross (the midpoint of its count's run), so that every density level gets an equal
/// share of the opacity range, from a fifth of `opacity` up to `opacity`.
pub(super) struct MessageTone {
    /// Line counts of the pixels with lines, sorted.
    pub(super) sorted: Vec<u32>,
    /// [`Self::rank`] of every count up to the highest, where that is at most [`RANKED`]: a
    /// picture looks up each pixel's rank rather than searching `sorted` twice.
    pub(super) ranks: Vec<f32>,
    pub(super) opacity: f32,
}

/// What the message legend says of the tone: the lines' opacity and the line counts at the
/// quantiles 0, 1/2 and 1 of the pixels with lines.
pub(super) struct ToneLegend {
    pub(super) opacity: f32,
    pub(super) quantiles: [u32; 3],
}

impl ToneLegend {
    /// The count at quantile `q` (0, 1/2 or 1; another is taken as 1/2).
    pub(super) fn quantile(&self, q: f32) -> u32 {
        match q {
            q if q <= 0.0 => self.quantiles[0],
            q if q >= 1.0 => self.quantiles[2],
            _ => self.quantiles[1],
        }
    }

    /// The legend of lines composed on the device.
    pub(super) fn of_device(pixels: &stages::timeline_pixels::Pixels, opacity: f32) -> Self {
        let opacity = if opacity.is_finite() { opacity.clamp(0.0, 1.0) } else { DEFAULT_MESSAGE_OPACITY };
        Self { opacity, quantiles: pixels.quantiles }
    }
}

/// Highest count whose rank [`MessageTone`] keeps in a table.
pub(super) const RANKED: u32 = 1 << 16;

impl MessageTone {
    pub(super) fn new(counts: &[u32], opacity: f32) -> Self {
        let mut sorted: Vec<u32> = counts.par_iter().copied().filter(|&c| c > 0).collect();
        sorted.par_sort_unstable();
        let opacity = if opacity.is_finite() { opacity.clamp(0.0, 1.0) } else { DEFAULT_MESSAGE_OPACITY };
        let mut tone = Self { sorted, ranks: Vec::new(), opacity };
        if let Some(&max) = tone.sorted.last().filter(|&&m| m <= RANKED) {
            // One sweep: `below` counts the pixels under `c`, `upto` those at most `c`.
            let (sorted, n) = (&tone.sorted, tone.sorted.len());
            let mut below = 0;
            tone.ranks = (0..=max)
                .map(|c| {
                    let mut upto = below;
                    while sorted.get(upto).is_some_and(|&v| v <= c) {
                        upto += 1;
                    }
                    let rank = ((below + upto) as f32 / 2.0 / n as f32).clamp(0.0, 1.0);
                    below = upto;
                    rank
                })
                .collect();
        }
        tone
    }

    /// Rank of `count` among the message pixels, 0 to 1.
    pub(super) fn rank(&self, count: u32) -> f32 {
        match self.ranks.get(count as usize) {
            Some(&r) => r,
            None => self.searched_rank(count),
        }
    }

    /// [`Self::rank`] by binary search.
    pub(super) fn searched_rank(&self, count: u32) -> f32 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let below = self.sorted.partition_point(|&c| c < count);
        let upto = self.sorted.partition_point(|&c| c <= count);
        ((below + upto) as f32 / 2.0 / self.sorted.len() as f32).clamp(0.0, 1.0)
    }

    pub(super) fn alpha(&self, count: u32) -> f32 {
        self.opacity * (0.2 + 0.8 * self.rank(count))
    }

    /// What the legend says of this tone.
    pub(super) fn legend(&self) -> ToneLegend {
        ToneLegend { opacity: self.opacity, quantiles: [0.0, 0.5, 1.0].map(|q| self.quantile(q)) }
    }

    /// The count at quantile `q` of the message pixels.
    pub(super) fn quantile(&self, q: f32) -> u32 {
        let k = ((self.sorted.len().saturating_sub(1)) as f32 * q.clamp(0.0, 1.0)).round() as usize;
        self.sorted.get(k).copied().unwrap_or(0)
    }
}
