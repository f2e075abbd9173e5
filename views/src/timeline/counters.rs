//! Counter tracks under the timeline's rows, as Vampir's counter timeline and Perfetto's counter
//! tracks draw them: one track per series (a metric on a location), the least and greatest value
//! of each pixel column as a band over an area, scaled to the series' range in the whole trace,
//! so that zooming keeps the scale. A counter holds its value from one sample to the next; an
//! accumulating counter (an energy or event count) is drawn as its rate.
//!
//! The columns are computed on the CPU from each series' samples sorted by time and a min/max
//! tree over them (Perfetto's counter mipmap): two binary searches and a walk up the tree per
//! pixel column, so the cost follows the picture's width, not the samples in the window. In the
//! row timeline a track goes under the row of its location (a metric location without events
//! under the row sharing most of its name); the pyramid timeline puts them under its rows.

use exaviz_model::Trace;
use exaviz_model::selection::Search;
use exaviz_render::{Anchor, Raster, Scene, TextAtlas};
use rayon::prelude::*;

use crate::legend::format_value;
use crate::plot::{CATEGORICAL, Plot};
use crate::{BACKGROUND, TEXT, TEXT_DIM};

/// Which counter series the timeline draws under its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CounterChoice {
    /// The series whose values change, as many as fit (at most [`AUTO_TRACKS`]).
    #[default]
    Auto,
    /// No counter tracks.
    None,
    /// Every series, as many as fit.
    All,
    /// The series whose names contain the text, ignoring case.
    Matching(Search),
}

/// Most tracks [`CounterChoice::Auto`] draws.
pub const AUTO_TRACKS: usize = 6;

impl std::str::FromStr for CounterChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            "none" => Ok(Self::None),
            "all" => Ok(Self::All),
            text => Search::new(text).map(Self::Matching),
        }
    }
}

/// One counter series: a metric's samples on one location, as drawn (rates for accumulating
/// counters), sorted by time.
pub struct Series {
    /// The metric's name, with its location's where the metric is recorded on several.
    pub name: String,
    /// The metric's name alone.
    pub metric: String,
    /// The location it was recorded on.
    pub location: u32,
    /// The unit of the values drawn ("/s" added for a rate).
    pub unit: String,
    /// Drawn as the rate of an accumulating counter.
    pub rate: bool,
    times: Vec<u64>,
    values: Vec<f64>,
    /// The least and greatest of any run of values.
    tree: MinMax,
    /// The least and greatest value drawn, over the whole trace.
    pub lo: f64,
    pub hi: f64,
}

impl Series {
    /// Whether the values drawn change.
    pub fn varies(&self) -> bool {
        self.hi > self.lo
    }

    /// The value the counter holds at `at` (the last sample at or before it).
    pub fn value_at(&self, at: u64) -> Option<f64> {
        let j = self.times.partition_point(|&t| t <= at);
        (j > 0).then(|| self.values[j - 1])
    }

    /// The scale of the track: from 0 where the values are non-negative and reach down to half
    /// their maximum, else from their minimum, up to their maximum.
    fn scale(&self) -> (f64, f64) {
        let floor = if self.lo >= 0.0 && self.lo <= self.hi / 2.0 { 0.0 } else { self.lo };
        let top = if self.hi > floor { self.hi } else { floor + 1.0 };
        (floor, top)
    }

    /// Per pixel column of `window` (ticks) cut into `w` columns, the least and greatest value the
    /// counter holds there: the value carried in from before the column and every sample in it;
    /// `None` before the first sample.
    pub fn columns(&self, window: (u64, u64), w: u32) -> Vec<Option<(f64, f64)>> {
        let (t0, t1) = window;
        let span = (t1 - t0).max(1) as f64;
        let edge = |x: u32| t0 + (span * f64::from(x) / f64::from(w)) as u64;
        (0..w)
            .into_par_iter()
            .map(|x| {
                let (a, b) = (edge(x), edge(x + 1).max(edge(x) + 1));
                let j = self.times.partition_point(|&t| t <= a);
                let k = self.times.partition_point(|&t| t < b);
                let held = (j > 0).then(|| (self.values[j - 1], self.values[j - 1]));
                let inside = if k > j { self.tree.range(j, k) } else { None };
                either(held, inside)
            })
            .collect()
    }
}

/// The least and greatest of two ranges, either of which may be missing.
fn either(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> Option<(f64, f64)> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
        (a, b) => a.or(b),
    }
}

/// The least and greatest of every run of a series' values: a binary tree of pairs, the values
/// at its leaves (node `n + i`), each inner node `k` the pair of nodes `2k` and `2k + 1`; two
/// words a value.
struct MinMax {
    tree: Vec<(f64, f64)>,
}

impl MinMax {
    fn new(values: &[f64]) -> Self {
        let n = values.len();
        let mut tree = vec![(0.0, 0.0); 2 * n];
        for (i, &v) in values.iter().enumerate() {
            tree[n + i] = (v, v);
        }
        for k in (1..n).rev() {
            let (l, r) = (tree[2 * k], tree[2 * k + 1]);
            tree[k] = (l.0.min(r.0), l.1.max(r.1));
        }
        Self { tree }
    }

    /// The least and greatest of values `a..b` (`None` where that is empty).
    fn range(&self, a: usize, b: usize) -> Option<(f64, f64)> {
        let n = self.tree.len() / 2;
        let (mut a, mut b) = (a.min(n) + n, b.min(n) + n);
        let mut acc = None;
        while a < b {
            if a & 1 == 1 {
                acc = either(acc, Some(self.tree[a]));
                a += 1;
            }
            if b & 1 == 1 {
                b -= 1;
                acc = either(acc, Some(self.tree[b]));
            }
            a /= 2;
            b /= 2;
        }
        acc
    }
}

/// Every counter series of a trace, built once per trace.
#[derive(Default)]
pub struct CounterIndex {
    pub series: Vec<Series>,
}

impl CounterIndex {
    pub fn new(t: &Trace) -> Self {
        let m = &t.metrics;
        let mut rows: Vec<u32> = (0..m.time.len() as u32).collect();
        rows.par_sort_unstable_by_key(|&i| {
            let i = i as usize;
            (m.metric[i], m.location[i], m.time[i])
        });
        let key = |i: u32| (m.metric[i as usize], m.location[i as usize]);
        let groups: Vec<&[u32]> = rows.chunk_by(|&a, &b| key(a) == key(b)).collect();
        let mut locations_of = vec![0usize; t.metric_names.len()];
        for g in &groups {
            if let Some(c) = locations_of.get_mut(m.metric[g[0] as usize] as usize) {
                *c += 1;
            }
        }
        let tps = t.ticks_per_second.max(1) as f64;
        let series = groups
            .iter()
            .map(|g| {
                let (metric, location) = key(g[0]);
                let alone = t.metric_names.get(metric as usize).cloned().unwrap_or_else(|| format!("metric {metric}"));
                let mut name = alone.clone();
                if locations_of.get(metric as usize).is_some_and(|&c| c > 1) {
                    let at = t.locations.name.get(location as usize).cloned().unwrap_or_else(|| location.to_string());
                    name = format!("{name} @ {at}");
                }
                let unit = t.metric_units.get(metric as usize).cloned().unwrap_or_default();
                let accumulated = t.metric_accumulated.get(metric as usize).copied().unwrap_or(false);
                let samples: Vec<(u64, f64)> = g.iter().map(|&i| (m.time[i as usize], m.value[i as usize])).collect();
                Series { location, metric: alone, ..series_of(name, unit, accumulated, &samples, tps) }
            })
            .collect();
        Self { series }
    }

    /// The series `choice` asks for, in the index's order.
    pub fn chosen(&self, choice: CounterChoice) -> Vec<usize> {
        let all = 0..self.series.len();
        match choice {
            CounterChoice::None => Vec::new(),
            CounterChoice::Auto => all.filter(|&k| self.series[k].varies()).take(AUTO_TRACKS).collect(),
            CounterChoice::All => all.collect(),
            CounterChoice::Matching(s) => all.filter(|&k| s.matches(&self.series[k].name)).collect(),
        }
    }
}

/// A series from its samples sorted by time. A counter declared accumulating whose values grow
/// and never fall is drawn as its rate per second over each sampling interval; one whose values
/// fall, or never change, is drawn as it is whatever its declaration says (measurement plugins
/// leave the mode at its default, accumulating, for percentages and powers).
fn series_of(name: String, unit: String, accumulated: bool, samples: &[(u64, f64)], tps: f64) -> Series {
    let rising = samples.windows(2).all(|w| w[1].1 >= w[0].1);
    let grows = samples.last().map(|l| l.1) > samples.first().map(|f| f.1);
    let rate = accumulated && rising && grows;
    let (times, values): (Vec<u64>, Vec<f64>) = if rate {
        // The rate over [t_i, t_i+1) holds from t_i; samples at the same time merge.
        let mut out = (Vec::new(), Vec::new());
        let mut last = samples[0];
        for &(t, v) in &samples[1..] {
            if t > last.0 {
                out.0.push(last.0);
                out.1.push((v - last.1) / ((t - last.0) as f64 / tps));
                last = (t, v);
            }
        }
        out
    } else {
        samples.iter().copied().unzip()
    };
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let unit = if rate { format!("{unit}/s").trim_start().to_string() } else { unit };
    let tree = MinMax::new(&values);
    Series { metric: name.clone(), name, location: 0, unit, rate, times, values, tree, lo: lo.min(hi), hi }
}

/// A track drawn: which series, where, and its columns.
pub struct Track {
    pub series: usize,
    pub plot: Plot,
    pub columns: Vec<Option<(f64, f64)>>,
    /// Drawn under its location's own row, so labelled by its metric alone.
    pub own_row: bool,
}

/// Least height of a track, pixels; the tracks take at most [`TRACKS_SHARE`] of the plot.
const MIN_TRACK_PX: u32 = 22;
const MAX_TRACK_PX: u32 = 48;
const TRACKS_SHARE: f64 = 0.45;
pub const GAP_PX: u32 = super::tracks::SLOT_GAP_PX;

/// The tracks of `chosen` (of `total` series) that fit a plot `h` pixels high, each with its
/// height (a gap of [`GAP_PX`] above it not counted); with the count of series not drawn (none
/// where none was asked for).
pub fn heights(h: u32, chosen: &[usize], total: usize) -> (Vec<(usize, u32)>, usize) {
    let room = (f64::from(h) * TRACKS_SHARE) as u32;
    let fit = (room / (MIN_TRACK_PX + GAP_PX)) as usize;
    let k = chosen.len().min(fit);
    let hidden = if chosen.is_empty() { 0 } else { total - k };
    if k == 0 {
        return (Vec::new(), hidden);
    }
    let each = (room / k as u32 - GAP_PX).min(MAX_TRACK_PX);
    (chosen[..k].iter().map(|&s| (s, each)).collect(), hidden)
}

/// The plot cut into the rows' part above and the tracks of `chosen` (of `total` series) below,
/// as many as fit; with the count of series not drawn (none where none was asked for).
pub fn layout(outer: Plot, chosen: &[usize], total: usize) -> (Plot, Vec<(usize, Plot)>, usize) {
    let (fit, hidden) = heights(outer.h, chosen, total);
    let k = fit.len();
    if k == 0 {
        return (outer, Vec::new(), hidden);
    }
    let h = fit[0].1;
    let used = k as u32 * (h + GAP_PX);
    let rows = Plot { h: outer.h - used, ..outer };
    let tracks = fit
        .iter()
        .enumerate()
        .map(|(i, &(s, _))| {
            let y0 = outer.y0 + rows.h + GAP_PX + i as u32 * (h + GAP_PX);
            (s, Plot { y0, h, ..outer })
        })
        .collect();
    (rows, tracks, hidden)
}

/// The tracks of `placed` over `window`, their columns computed (`own_row`: each under its
/// location's row).
pub fn tracks(index: &CounterIndex, placed: &[(usize, Plot, bool)], window: (u64, u64)) -> Vec<Track> {
    placed
        .iter()
        .map(|&(series, plot, own_row)| Track {
            series,
            plot,
            columns: index.series[series].columns(window, plot.w),
            own_row,
        })
        .collect()
}

/// The names of `tracks` (the metric alone for a track under its location's row) without the
/// leading word or `:`-separated part they all share, where they are not all the same.
fn short_names(index: &CounterIndex, tracks: &[Track]) -> Vec<String> {
    let name = |t: &Track| {
        let s = &index.series[t.series];
        if t.own_row { s.metric.as_str() } else { s.name.as_str() }
    };
    let names: Vec<&str> = tracks.iter().map(name).collect();
    let Some(first) = names.first() else { return Vec::new() };
    if names.iter().all(|n| n == first) {
        return names.iter().map(|n| n.to_string()).collect();
    }
    let mut common = first.len();
    for n in &names[1..] {
        common = common.min(first.bytes().zip(n.bytes()).take_while(|(a, b)| a == b).count());
    }
    // Cut after the first run of separators within the shared part (the source's prefix, as
    // "A2rocm_smi:::"), keeping something of every name.
    let separator = |c: char| matches!(c, ':' | ' ' | '/');
    let cut = first[..common]
        .find(separator)
        .map_or(0, |i| i + first[i..common].chars().take_while(|&c| separator(c)).count());
    let cut = if names.len() > 1 && names.iter().all(|n| n.len() > cut) { cut } else { 0 };
    names.iter().map(|n| n[cut..].to_string()).collect()
}

/// Draws `tracks` (their area and band, a name and a scale each) and, where some series were left
/// out, how many.
pub fn draw(scene: &mut Scene, index: &CounterIndex, tracks: &[Track], hidden: usize, below: [f32; 2]) {
    let colour = CATEGORICAL[1];
    let names = short_names(index, tracks);
    for (track, name) in tracks.iter().zip(&names) {
        let s = &index.series[track.series];
        let p = track.plot;
        let (floor, top) = s.scale();
        let y = |v: f64| ((top - v) / (top - floor) * f64::from(p.h - 1)).round().clamp(0.0, f64::from(p.h - 1)) as u32;
        let mut pixels = vec![[0u8; 4]; (p.w * p.h) as usize];
        let band = colour.map(|c| (c * 255.0) as u8);
        for (x, c) in track.columns.iter().enumerate() {
            let Some((lo, hi)) = *c else { continue };
            let (top_y, low_y) = (y(hi), y(lo));
            for row in top_y..p.h {
                let a = if row <= low_y { 255 } else { 90 };
                pixels[(row * p.w) as usize + x] = [band[0], band[1], band[2], a];
            }
        }
        let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
        scene.rect([rect[0], rect[1]], [rect[2], rect[3]], [1.0, 1.0, 1.0, 0.04], true);
        scene.raster(Raster::rgba(rect, p.w, p.h, pixels));
        let unit = if s.unit.is_empty() { String::new() } else { format!(" {}", s.unit) };
        let scale = format!("{}{unit}", format_value(s.hi));
        let width = p.w as f32 - TextAtlas::measure(&scale, 10.0) - 16.0;
        let label = crate::plot::fit(name, width, 10.0);
        // On a backing of the background, so that the curve under them does not cross them.
        let back = [BACKGROUND[0], BACKGROUND[1], BACKGROUND[2], 0.75];
        let (lw, sw) = (TextAtlas::measure(&label, 10.0), TextAtlas::measure(&scale, 10.0));
        scene.rect([rect[0] + 2.0, rect[1] + 1.0], [rect[0] + lw + 6.0, rect[1] + 13.0], back, true);
        scene.rect([rect[2] - sw - 6.0, rect[1] + 1.0], [rect[2] - 2.0, rect[1] + 13.0], back, true);
        scene.text(&label, [rect[0] + 4.0, rect[1] + 10.0], 10.0, Anchor::Left, TEXT);
        scene.text(&scale, [rect[2] - 4.0, rect[1] + 10.0], 10.0, Anchor::Right, TEXT_DIM);
    }
    if hidden > 0 {
        let note = format!("+{hidden} counter{} (--counters)", if hidden == 1 { "" } else { "s" });
        scene.text(&note, below, 10.0, Anchor::Left, TEXT_DIM);
    }
}

/// What a tooltip over the track under `at` says: the series, the value held there and the
/// pixel's range; with the time under `at` (ticks).
pub fn pick(
    index: &CounterIndex,
    tracks: &[Track],
    window: (u64, u64),
    at: [f32; 2],
) -> Option<(String, Vec<String>, u64)> {
    let track = tracks.iter().find(|t| {
        let p = t.plot;
        at[0] >= p.x0 as f32 && at[0] < (p.x0 + p.w) as f32 && at[1] >= p.y0 as f32 && at[1] < (p.y0 + p.h) as f32
    })?;
    let p = track.plot;
    let x = ((at[0] - p.x0 as f32) as u32).min(p.w - 1);
    let time = window.0 + ((window.1 - window.0) as f64 * (f64::from(at[0]) - f64::from(p.x0)) / f64::from(p.w)) as u64;
    let s = &index.series[track.series];
    let unit = if s.unit.is_empty() { String::new() } else { format!(" {}", s.unit) };
    let mut lines = Vec::new();
    match s.value_at(time) {
        Some(v) => lines.push(format!("{}{unit}{}", format_value(v), if s.rate { " (rate)" } else { "" })),
        None => lines.push("no sample yet".into()),
    }
    if let Some(Some((lo, hi))) = track.columns.get(x as usize).filter(|c| c.is_some_and(|(lo, hi)| hi > lo)) {
        lines.push(format!("{} to {}{unit} in this pixel", format_value(*lo), format_value(*hi)));
    }
    Some((s.name.clone(), lines, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(samples: &[(u64, u64)], accumulated: bool) -> Series {
        let samples: Vec<(u64, f64)> = samples.iter().map(|&(t, v)| (t, v as f64)).collect();
        series_of("c".into(), "J".into(), accumulated, &samples, 1.0)
    }

    #[test]
    fn columns_equal_a_scan_of_every_sample() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        let mut samples: Vec<(u64, u64)> = (0..500).map(|_| (next() % 10_000, next() % 1000)).collect();
        samples.sort_by_key(|s| s.0);
        let s = series(&samples, false);
        for (window, w) in [((0, 10_000), 100), ((2_000, 2_100), 37), ((9_990, 20_000), 13), ((0, 10), 64)] {
            let got = s.columns(window, w);
            for (x, c) in got.iter().enumerate() {
                let span = (window.1 - window.0) as f64;
                let a = window.0 + (span * x as f64 / f64::from(w)) as u64;
                let b = (window.0 + (span * (x + 1) as f64 / f64::from(w)) as u64).max(a + 1);
                // The value held at a, and every sample inside (a, b).
                let held = samples.iter().rev().find(|p| p.0 <= a).map(|p| p.1 as f64);
                let inside = samples.iter().filter(|p| p.0 > a && p.0 < b).map(|p| p.1 as f64);
                let all: Vec<f64> = held.into_iter().chain(inside).collect();
                let want = (!all.is_empty()).then(|| {
                    (all.iter().copied().fold(f64::MAX, f64::min), all.iter().copied().fold(f64::MIN, f64::max))
                });
                assert_eq!(*c, want, "window {window:?} column {x}");
            }
        }
    }

    #[test]
    fn the_min_max_tree_equals_a_scan_of_every_run() {
        let values: Vec<f64> = (0..37u64).map(|i| ((i * 7919) % 101) as f64 - 50.0).collect();
        let tree = MinMax::new(&values);
        for a in 0..=values.len() {
            for b in a..=values.len() {
                let run = &values[a..b];
                let want = (!run.is_empty()).then(|| {
                    (run.iter().copied().fold(f64::MAX, f64::min), run.iter().copied().fold(f64::MIN, f64::max))
                });
                assert_eq!(tree.range(a, b), want, "{a}..{b}");
            }
        }
        assert_eq!(MinMax::new(&[]).range(0, 0), None);
    }

    #[test]
    fn an_accumulating_counter_is_drawn_as_its_rate() {
        // 10 J over 2 s, then 30 J over 1 s: 5 J/s from 0, 30 J/s from 2.
        let s = series(&[(0, 100), (2, 110), (3, 140)], true);
        assert!(s.rate);
        assert_eq!(s.unit, "J/s");
        assert_eq!((s.value_at(1), s.value_at(2), s.value_at(5)), (Some(5.0), Some(30.0), Some(30.0)));
        assert_eq!((s.lo, s.hi), (5.0, 30.0));
        // Declared accumulating but falling: drawn as it is.
        let s = series(&[(0, 100), (2, 90), (3, 140)], true);
        assert!(!s.rate);
        assert_eq!((s.value_at(2), s.unit.as_str()), (Some(90.0), "J"));
        assert_eq!(series(&[(0, 100), (2, 110)], false).value_at(2), Some(110.0));
        // Declared accumulating, never changing: drawn as it is.
        assert!(!series(&[(0, 0), (2, 0)], true).rate);
        assert_eq!(series(&[(5, 1)], false).value_at(4), None);
    }

    #[test]
    fn choices_parse_and_pick_their_series() {
        let t = Trace {
            metric_names: vec!["gpu busy".into(), "flat".into(), "power".into()],
            metrics: exaviz_model::MetricSamples {
                location: vec![0, 0, 0, 0, 0, 0],
                time: vec![0, 1, 0, 1, 0, 1],
                metric: vec![0, 0, 1, 1, 2, 2],
                value: vec![0.0, 5.0, 3.0, 3.0, 1.0, 9.0],
            },
            ..Default::default()
        };
        let index = CounterIndex::new(&t);
        assert_eq!(index.chosen("auto".parse().unwrap()), vec![0, 2]);
        assert_eq!(index.chosen("all".parse().unwrap()), vec![0, 1, 2]);
        assert_eq!(index.chosen("none".parse().unwrap()), Vec::<usize>::new());
        assert_eq!(index.chosen("POWER".parse().unwrap()), vec![2]);
        assert!("".parse::<CounterChoice>().is_err());
    }

    #[test]
    fn tracks_fit_under_the_rows() {
        let outer = Plot { x0: 80, y0: 48, w: 744, h: 668 };
        let (rows, placed, hidden) = layout(outer, &(0..29).collect::<Vec<_>>(), 29);
        assert!(hidden > 0 && !placed.is_empty());
        assert_eq!(hidden + placed.len(), 29);
        assert!(rows.h >= outer.h / 2);
        let last = placed.last().unwrap().1;
        assert!(last.y0 + last.h <= outer.y0 + outer.h);
        assert!(placed.iter().all(|(_, p)| p.h >= MIN_TRACK_PX && p.y0 >= rows.y0 + rows.h));
        assert_eq!(layout(outer, &[], 29), (outer, Vec::new(), 0));
        assert_eq!(layout(outer, &[3, 4], 29).2, 27);
    }
}
