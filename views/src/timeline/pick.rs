//! What the timeline's tooltips read, and what is outlined over the picture: an area, the
//! critical path, a search's match.

use std::sync::Arc;

use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Folded, Parts, Selection};
use exaviz_render::{Anchor, Scene};
use rayon::prelude::*;

use super::counters::{self, Track};
use super::index::TimelineIndex;
use super::tracks::{LabelAt, Tracks};
use crate::TEXT;
use crate::contract;
use crate::contract::{Pick, Picker};
use crate::plot::Plot;

/// What the timeline's tooltips read: the plot, the window, the messages drawn and the lines
/// through each pixel.
pub struct TimelinePick {
    pub(super) index: Arc<TimelineIndex>,
    pub(super) plot: Plot,
    /// The time window drawn, ticks.
    pub(super) window: (u64, u64),
    /// The trace's span, ticks (times are shown from its start).
    pub(super) full: (u64, u64),
    pub(super) n: usize,
    pub(super) counts: LineCounts,
    /// Which messages are drawn (`None`: all).
    pub(super) messages: Option<exaviz_model::selection::MessageFilter>,
    /// The rows of the messages drawn (found at the first tooltip where the picture was drawn
    /// on the device).
    pub(super) visible: std::sync::OnceLock<Vec<u32>>,
    /// The counter tracks drawn.
    pub(super) tracks: Vec<Track>,
    /// The locations' rows.
    pub(super) rows: Tracks,
    /// Per pixel row of the plot, the nesting level of its band (`None`: the innermost state).
    pub(super) levels: Vec<Option<u32>>,
    /// The groups drawn collapsed.
    pub(super) folded: Folded,
    /// The summary track, where one is drawn.
    pub(super) summary: Option<super::states::Summarised>,
    /// The locations of the band opened into rows (sorted), and the most a band opens into.
    pub(super) opened: (Vec<u32>, usize),
}

/// The message lines through each plot pixel: in memory, or where the device drew them (a
/// tooltip reads back the one word it shows, or goes without it where the device is busy for
/// more than [`COUNT_WAIT`]: a tooltip never waits for a computation).
pub(crate) enum LineCounts {
    Host(Vec<u32>),
    Device(exaviz_compute::DeviceWords),
}

impl LineCounts {
    /// The count of pixel `k` (row-major over the plot).
    pub(super) fn get(&self, k: usize) -> Option<u32> {
        match self {
            Self::Host(v) => v.get(k).copied(),
            Self::Device(words) => words.read_within(k as u64..k as u64 + 1, Some(COUNT_WAIT)).ok()??.first().copied(),
        }
    }
}

/// How long a tooltip waits for a line count from the device.
const COUNT_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// Most messages searched one by one for the line under the pointer; past it, the tooltip gives
/// the count of lines through the pixel only.
const PICK_MESSAGES: usize = 200_000;
/// Most lines a highlighted pair draws.
const PAIR_LINES: usize = 50_000;

impl TimelinePick {
    fn x_of(&self, time: u64) -> f32 {
        let (t0, t1) = self.window;
        self.plot.x0 as f32 + ((time as f64 - t0 as f64) / (t1 - t0) as f64 * f64::from(self.plot.w)) as f32
    }

    /// The rows of the messages the window shows, in row order.
    fn visible(&self, t: &Trace) -> &[u32] {
        self.visible.get_or_init(|| {
            let m = &t.messages;
            let (t0, t1) = self.window;
            let n = self.n;
            let shown = |i: usize| {
                m.send_time[i] <= t1
                    && m.recv_time[i] >= t0
                    && m.recv_time[i] != u64::MAX
                    && (m.source[i] as usize) < n
                    && (m.destination[i] as usize) < n
                    && self.messages.is_none_or(|f| f.keeps(m.bytes[i], m.tag[i], m.source[i], m.destination[i]))
            };
            let mut rows: Vec<u32> =
                self.index.candidates(t, self.window).par_iter().copied().filter(|&i| shown(i as usize)).collect();
            if !rows.is_sorted() {
                super::density::sort_distinct(&mut rows);
            }
            rows
        })
    }

    fn y_of(&self, l: u32) -> f32 {
        let r = self.rows.pixels(l as usize);
        self.plot.y0 as f32 + (r.start + r.end) as f32 / 2.0
    }

    /// The drawn message whose line passes nearest to `at`, within 4 pixels.
    fn message_near(&self, t: &Trace, at: [f32; 2]) -> Option<usize> {
        let visible = self.visible(t);
        if visible.len() > PICK_MESSAGES {
            return None;
        }
        let m = &t.messages;
        let dist = |i: usize| {
            let a = [self.x_of(m.send_time[i]), self.y_of(m.source[i])];
            let b = [self.x_of(m.recv_time[i]), self.y_of(m.destination[i])];
            contract::distance_to_segment(at, a, b)
        };
        visible
            .par_iter()
            .map(|&i| (dist(i as usize), i as usize))
            .filter(|(d, _)| *d <= 4.0)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, i)| i)
    }

    fn band_click(&self, track: usize) -> Option<(String, Option<Selection>)> {
        band_click(&self.rows, &self.opened, track)
    }

    /// Over a row's label at height `y`: the row's group, and a click collapsing or opening it;
    /// a band's, opening it into its locations (an opened one's, closing it).
    fn label_pick(&self, at: [f32; 2]) -> Option<Pick> {
        let track = match self.rows.label_at(at[0], at[1] - self.plot.y0 as f32)? {
            LabelAt::Track(k) => k,
            LabelAt::Header(g) => return Some(self.group_pick(g, false)),
        };
        if let Some((line, click)) = self.band_click(track) {
            let title = self.rows.band(track).map_or_else(|| "an opened band's location".to_string(), str::to_string);
            let pick = Pick::new(title, vec![line]);
            return Some(match click {
                Some(s) => pick.with_click(Parts::OPENED, s),
                None => pick,
            });
        }
        let (group, collapsed) = self.rows.group(track)?;
        self.rows.group_names.get(group as usize)?;
        Some(self.group_pick(group, collapsed))
    }

    /// A process's group: its name and rows, and a click collapsing it (opening it, where
    /// `collapsed`).
    fn group_pick(&self, group: u32, collapsed: bool) -> Pick {
        let (name, count) = self.rows.group_names.get(group as usize).cloned().unwrap_or_default();
        let what = if collapsed { "open it" } else { "collapse it to one row" };
        let pick = Pick::new(format!("{name}: {count} rows"), vec![format!("click: {what}")]);
        let folded = Some(self.folded.toggled(group));
        pick.with_click(Parts::FOLDED, Selection { folded, ..Default::default() })
    }

    /// The summary track's shares in pixel `column`: as drawn on the host, or summed for the
    /// column alone where the track was drawn on the device.
    fn summary_column(&self, s: &super::states::Summarised, column: usize) -> [f32; crate::plot::CATEGORICAL.len()] {
        match &s.shares {
            Some(v) => v.get(column.min(v.len().saturating_sub(1))).copied().unwrap_or_default(),
            None => {
                let shown = super::states::summary_locations(&self.index, &self.rows);
                let one =
                    super::states::summary_columns(s.plot.w, self.window, &shown, &self.index, column..column + 1);
                one.first().copied().unwrap_or_default()
            }
        }
    }

    fn seconds(&self, t: &Trace, time: u64) -> String {
        format!("{:.6} s", time.saturating_sub(self.full.0) as f64 / t.ticks_per_second.max(1) as f64)
    }

    /// The tooltip's lines for the instants within `near` ticks of `time` on location `l`'s
    /// track, as their chevrons show them, then the global instants' there.
    fn instant_lines(&self, t: &Trace, l: usize, (time, near): (u64, u64), lines: &mut Vec<String>) {
        // Instants within 4 pixels of the pointer on this track, as their chevrons show them.
        let v = &self.index.instants;
        let first = v.partition_point(|e| e.0 < time.saturating_sub(near));
        let mut shown = 0;
        for &(at_time, loc, kind) in v[first..].iter().take_while(|e| e.0 <= time.saturating_add(near)) {
            if self.rows.pixels(loc as usize) != self.rows.pixels(l) {
                continue;
            }
            shown += 1;
            if shown > 3 {
                lines.push("(and more instants here)".into());
                break;
            }
            let mark = t.region_names.get(kind as usize).cloned().unwrap_or_else(|| format!("state {kind}"));
            lines.push(format!("instant {mark} at {}", self.seconds(t, at_time)));
        }
        // Global instants, whose lines cross every row.
        let g = &self.index.global_instants;
        let first = g.partition_point(|e| e.0 < time.saturating_sub(near));
        for &(at_time, kind) in g[first..].iter().take_while(|e| e.0 <= time.saturating_add(near)).take(3) {
            let mark = t.region_names.get(kind as usize).cloned().unwrap_or_else(|| format!("state {kind}"));
            lines.push(format!("global instant {mark} at {}", self.seconds(t, at_time)));
        }
    }
}

impl Picker for TimelinePick {
    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let p = self.plot;
        let t = &dataset.trace;
        let (t0, t1) = self.window;
        if let Some((title, mut lines, time)) = counters::pick(&self.index.counters, &self.tracks, self.window, at) {
            lines.insert(0, format!("at {}", self.seconds(t, time)));
            return Some(Pick::new(title, lines));
        }
        if let Some(s) = &self.summary
            && let Some([u, _]) = contract::share_in(
                [s.plot.x0 as f32, s.plot.y0 as f32, (s.plot.x0 + s.plot.w) as f32, (s.plot.y0 + s.plot.h) as f32],
                at,
            )
        {
            let time = t0 + ((t1 - t0) as f64 * f64::from(u)) as u64;
            let column = ((u * s.plot.w as f32) as usize).min(s.plot.w.max(1) as usize - 1);
            let c = &self.summary_column(s, column);
            let mut lines = vec![format!("at {}", self.seconds(t, time))];
            let mut named: Vec<(f32, &str)> =
                self.index.legend.iter().map(|(slot, name)| (c[*slot], name.as_str())).filter(|x| x.0 > 0.0).collect();
            named.sort_by(|a, b| b.0.total_cmp(&a.0));
            lines.extend(named.iter().take(8).map(|(share, name)| format!("{name}: {:.1}%", 100.0 * share)));
            let none = 1.0 - c.iter().sum::<f32>();
            lines.push(format!("no state: {:.1}%", 100.0 * none.max(0.0)));
            return Some(Pick::new(format!("summary of {} locations", crate::rows::thousands(s.locations)), lines));
        }
        if at[0] < p.x0 as f32 && at[1] >= p.y0 as f32 && at[1] < (p.y0 + p.h) as f32 {
            return self.label_pick(at);
        }
        let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
        let [u, v] = contract::share_in(rect, at)?;
        let time = t0 + ((t1 - t0) as f64 * f64::from(u)) as u64;
        let row = (v * p.h as f32) as u32;
        // The first location on this pixel row's track.
        let track = self.rows.at_row(row)?;
        let l = self.rows.locations(track).next()?;
        let name = t.locations.name.get(l).cloned().unwrap_or_default();
        let mut lines = vec![format!("at {}", self.seconds(t, time))];
        // In a band of one nesting level, the state at that level.
        let level = self.levels.get(row as usize).copied().flatten();
        match self.index.state_at(t, l, time, level) {
            Some((kind, a, b)) => {
                let state = t.region_names.get(kind as usize).cloned().unwrap_or_else(|| format!("state {kind}"));
                lines.push(format!("{state}: {} to {}", self.seconds(t, a), self.seconds(t, b)));
            }
            None => lines.push("no state".into()),
        }
        let near = ((t1 - t0) as f64 * 4.0 / f64::from(p.w)) as u64;
        self.instant_lines(t, l, (time, near), &mut lines);
        let k = (row * p.w + ((u * p.w as f32) as u32).min(p.w - 1)) as usize;
        let mut click = None;
        if let Some(i) = self.message_near(t, at) {
            let m = &t.messages;
            lines.push(format!(
                "message {} → {}, {} bytes, tag {}",
                m.source[i], m.destination[i], m.bytes[i], m.tag[i]
            ));
            lines.push(format!(
                "sent {}, received {}",
                self.seconds(t, m.send_time[i]),
                self.seconds(t, m.recv_time[i])
            ));
            lines.push("click: follow it ([ and ] go to its ends, f fits it)".into());
            let pair = Some((m.source[i], m.destination[i]));
            click = Some(Selection { pair, message: Some(i as u32), ..Default::default() });
        } else if let Some(c) = self.counts.get(k).filter(|&c| c > 0) {
            lines.push(format!("{c} message lines through this pixel"));
        }
        // The location's own name, as the trace gives it; its row number beside it (a row is
        // not a rank); a band of locations grouped by behaviour by its count and range.
        let title = match self.rows.band(track) {
            Some(band) => {
                lines.push(format!("a band of locations alike in this window; its first: {name}"));
                band.to_string()
            }
            None => {
                lines.push(format!("row {l}"));
                name
            }
        };
        // Where no message is under the pointer, a band's click opens it (an opened
        // location's closes its band).
        let band = if click.is_none() { self.band_click(track) } else { None };
        if let Some((line, _)) = &band {
            lines.push(line.clone());
        }
        let pick = Pick::new(title, lines);
        Some(match (click, band.and_then(|(_, s)| s)) {
            (Some(s), _) => pick.with_click(Parts::PAIR | Parts::MESSAGE, s),
            (None, Some(s)) => pick.with_click(Parts::OPENED, s),
            (None, None) => pick,
        })
    }

    /// The selected pair's messages in the window, drawn over everything in white, the
    /// followed message thicker in yellow with its ends marked, and the search's current match
    /// framed in white (at least 7 px wide) with a mark above the plot at its time.
    fn overlay(&self, dataset: &Dataset, selection: &Selection, scene: &mut Scene) -> bool {
        let m = &dataset.trace.messages;
        if let Some(found) = selection.found {
            self.frame(scene, found, FOUND, 7.0);
            let (t0, t1) = self.window;
            if found.to > t0 && found.from < t1 {
                let x = (self.x_of(found.from.max(t0)) + self.x_of(found.to.min(t1))) / 2.0;
                let y = self.plot.y0 as f32;
                scene.rect([x - 1.5, y - 8.0], [x + 1.5, y - 1.0], FOUND, true);
            }
        }
        if let Some(i) = selection.message.map(|i| i as usize).filter(|&i| i < m.source.len()) {
            let (a, b) = (
                [self.x_of(m.send_time[i]), self.y_of(m.source[i])],
                [self.x_of(m.recv_time[i]), self.y_of(m.destination[i])],
            );
            let yellow = [0.941, 0.894, 0.259, 1.0];
            scene.segment(exaviz_render::Blend::Alpha, a, b, 2.5, yellow, false);
            for c in [a, b] {
                scene.rect([c[0] - 3.0, c[1] - 3.0], [c[0] + 3.0, c[1] + 3.0], yellow, true);
            }
        }
        let Some((s, r)) = selection.pair else { return selection.message.is_some() || selection.found.is_some() };
        let of_pair = |&&i: &&u32| m.source[i as usize] == s && m.destination[i as usize] == r;
        for &i in self.visible(&dataset.trace).iter().filter(of_pair).take(PAIR_LINES) {
            let i = i as usize;
            let (a, b) = ([self.x_of(m.send_time[i]), self.y_of(s)], [self.x_of(m.recv_time[i]), self.y_of(r)]);
            scene.segment(exaviz_render::Blend::Alpha, a, b, 1.5, [1.0, 1.0, 1.0, 0.9], false);
        }
        let label = format!("highlighted: messages {s} → {r}");
        let at = [self.plot.x0 as f32 + self.plot.w as f32, self.plot.y0 as f32 - 8.0];
        scene.text(&label, at, 11.0, Anchor::Right, TEXT);
        true
    }
}

impl TimelinePick {
    /// Outlines `area` (its time clipped to the window, its rows) in white.
    pub(super) fn outline(&self, scene: &mut Scene, area: exaviz_model::selection::Area) {
        self.frame(scene, area, [1.0, 1.0, 1.0, 0.95], 0.0);
    }

    /// A frame 1.5 px thick in `colour` around `area`, at least `least` px wide (centred on it).
    fn frame(&self, scene: &mut Scene, area: exaviz_model::selection::Area, colour: [f32; 4], least: f32) {
        let (t0, t1) = self.window;
        if area.to <= t0 || area.from >= t1 || area.first as usize >= self.n {
            return;
        }
        let p = self.plot;
        let (x0, x1) = (self.x_of(area.from.max(t0)), self.x_of(area.to.min(t1)));
        let grow = ((least - (x1 - x0)) / 2.0).max(0.0);
        let (x0, x1) = (x0 - grow, x1 + grow);
        let last = (area.last as usize).min(self.n - 1);
        let drawn: Vec<_> =
            (area.first as usize..=last).map(|l| self.rows.pixels(l)).filter(|r| !r.is_empty()).collect();
        let (Some(top), Some(bottom)) = (drawn.iter().map(|r| r.start).min(), drawn.iter().map(|r| r.end).max()) else {
            return;
        };
        let (y0, y1) = (p.y0 as f32 + top as f32, p.y0 as f32 + bottom as f32);
        let (y0, y1) = if least > 0.0 && y1 - y0 < least { (y0 - 1.5, y1 + 1.5) } else { (y0, y1) };
        for (a, b) in [
            ([x0, y0], [x1, y0 + 1.5]),
            ([x0, y1 - 1.5], [x1, y1]),
            ([x0, y0], [x0 + 1.5, y1]),
            ([x1 - 1.5, y0], [x1, y1]),
        ] {
            scene.rect(a, b, colour, true);
        }
    }
}

/// The critical path's colour: a magenta none of the state colours, the white of the area's
/// outline and the search's match, nor the vermillion of waiting take; told apart from the
/// states by its shape (frames and lines) too.
const CRITICAL: [f32; 4] = [0.95, 0.25, 0.95, 1.0];

/// The note above the plot while the critical path is outlined.
pub(super) const CRITICAL_NOTE: &str = "critical path outlined in magenta";

impl TimelinePick {
    /// Outlines `path` in [`CRITICAL`]: each stretch on a row framed, each crossing a line
    /// from its source's row at the send to its destination's at the arrival.
    pub(super) fn critical_path(&self, scene: &mut Scene, path: &exaviz_analysis::critical_path::Path) {
        use exaviz_analysis::critical_path::Step;
        let (t0, t1) = self.window;
        let p = self.plot;
        let clamp = |x: f32| x.clamp(p.x0 as f32, (p.x0 + p.w) as f32);
        for s in &path.segments {
            if s.to < t0 || s.from > t1 {
                continue;
            }
            let (x0, x1) = (clamp(self.x_of(s.from.max(t0))), clamp(self.x_of(s.to.min(t1))));
            match s.step {
                Step::On => {
                    let r = self.rows.pixels(s.location as usize);
                    if r.is_empty() {
                        continue;
                    }
                    let (y0, y1) = (p.y0 as f32 + r.start as f32, p.y0 as f32 + r.end as f32);
                    // At least 3 pixels wide, so that a short stretch still shows.
                    let grow = ((3.0 - (x1 - x0)) / 2.0).max(0.0);
                    scene.frame([x0 - grow, y0, x1 + grow, y1], 2.0, CRITICAL, true);
                }
                Step::Edge(_) => {
                    let (a, b) = (self.rows.pixels(s.from_location as usize), self.rows.pixels(s.location as usize));
                    if a.is_empty() || b.is_empty() {
                        continue;
                    }
                    let (ya, yb) = (self.y_of(s.from_location), self.y_of(s.location));
                    scene.segment(exaviz_render::Blend::Alpha, [x0, ya], [x1, yb], 2.0, CRITICAL, true);
                }
            }
        }
    }
}

/// The search's current match: white, as the area's outline (the matches are lit in their
/// states' colours, any of which a coloured frame could share).
const FOUND: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

/// The area between the picture points `from` and `to` of a timeline whose `rows` fill `p`
/// over `window` (ticks): the time between their x and the locations of the tracks between
/// their y, clamped to the plot; `None` where they are less than 3 pixels apart in x (a click).
pub(super) fn area_between(
    p: Plot,
    window: (u64, u64),
    rows: &Tracks,
    from: [f32; 2],
    to: [f32; 2],
) -> Option<exaviz_model::selection::Area> {
    if rows.count() == 0 || (from[0] - to[0]).abs() < 3.0 {
        return None;
    }
    let x = |v: f32| ((v - p.x0 as f32) / p.w as f32).clamp(0.0, 1.0);
    let row = |v: f32| ((v - p.y0 as f32).clamp(0.0, p.h as f32 - 1.0)) as u64;
    let span = (window.1 - window.0) as f64;
    let tick = |f: f32| window.0 + (span * f64::from(f)) as u64;
    let (a, b) = (x(from[0].min(to[0])), x(from[0].max(to[0])));
    let (r0, r1) = (row(from[1].min(to[1])), row(from[1].max(to[1])));
    let (k0, k1) = (rows.at_or_above(r0 as u32)?, rows.at_or_above(r1 as u32)?);
    let first = rows.locations(k0).min()? as u32;
    let last = rows.locations(k1).max()? as u32;
    Some(exaviz_model::selection::Area { from: tick(a), to: tick(b).max(tick(a) + 1), first, last: last.max(first) })
}

/// What a click on track `track` of `rows` does, in a line, where it is a band: opens it into
/// its locations (where it has no more than `opened.1`; else no click), or, on a location of
/// the opened band `opened.0`, closes that band again.
pub(super) fn band_click(
    rows: &Tracks,
    opened: &(Vec<u32>, usize),
    track: usize,
) -> Option<(String, Option<Selection>)> {
    if let Some(band) = rows.band(track) {
        let first = rows.locations(track).next()? as u32;
        let count = rows.locations(track).count();
        if count > opened.1 {
            return Some((format!("{band}: too many to open into rows here (at most {})", opened.1), None));
        }
        let open = Selection { opened: Some(first), ..Default::default() };
        return Some((format!("click: open it into its {count} locations"), Some(open)));
    }
    let l = rows.single(track)? as u32;
    opened.0.binary_search(&l).is_ok().then(|| ("click: close its band again".to_string(), Some(Selection::default())))
}
