//! The `timeline` view (Brendel et al. §III-A): one row per process, time along x; states as coloured
//! bars, messages as lines from their send to their receive.
//!
//! It always aggregates per pixel, so it scales to millions of intervals and messages: a pixel
//! of a row takes the mix of the states that cover it, weighted by the time each covers (the
//! innermost state of nested regions); messages go through the line-density stage on the
//! backend, one count per pixel, drawn brighter where more lines cross. Where there are more
//! processes than pixel rows, a pixel row gathers several processes.

use std::sync::Arc;

use exaviz_analysis::summary::Wait;
use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_render::{Anchor, OutlineEntry, Raster, Scene};
use rayon::prelude::*;

use super::axis::{RowAxis, rows_counted, rows_title, track_axis};
use super::collectives::{COLLECTIVE, Joins, collective_joins, draw_collectives};
use super::counters::{self, CounterIndex, Track};
use super::density::{GRADIENT_STEPS, MessageTone, ToneLegend, additive_gain, message_density};
use super::index::TimelineIndex;
use super::options::{Rows, SummaryTrack, TimelineOptions, margin};
use super::pan::{KeptStates, LastPicture, StatesKey, take_columns, trace_key, uncovered};
use super::pick::{CRITICAL_NOTE, LineCounts, TimelinePick};
use super::states::{LEVEL_PX, Summarised, row_contents, state_pixels};
use super::tracks::{SLOT_GAP_PX, Slot, Tracks};
use crate::legend::format_value;
use crate::plot::{CATEGORICAL, Mix, Plot, Tick, axes, direction_colour, direction_legend, nice_ticks};
use crate::rows::Behaviour;
use crate::trace::Home;
use crate::trace::window_in;
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

/// Which pixel rows location `l` of `n` covers in a plot `h` rows high.
pub(super) fn rows_of(l: usize, n: usize, h: u32) -> std::ops::Range<u32> {
    let a = (l as u64 * u64::from(h) / n as u64) as u32;
    let b = ((l as u64 + 1) * u64::from(h) / n as u64) as u32;
    // Thick rows keep a one-pixel gap between processes.
    let b = if b - a >= 4 { b - 1 } else { b.max(a + 1) };
    a..b.min(h)
}

/// The plot rectangle of a timeline `width x height` pixels (`None`: too small), for mapping
/// pointer positions to time in the interactive viewer.
pub fn plot_rect(width: u32, height: u32) -> Option<Plot> {
    Plot::inside(width, height, margin(width))
}

/// The plot rectangle of a timeline picture of `opts`' size.
pub(super) fn timeline_plot(opts: &TimelineOptions) -> Result<Plot, ViewError> {
    Plot::inside(opts.width, opts.height, margin(opts.width)).ok_or_else(|| {
        ViewError::Unsupported(format!("picture {}x{} too small for a timeline", opts.width, opts.height))
    })
}

/// What a timeline picture is made of, from raw rows or from a pyramid: per plot pixel the
/// state colour and the message lines, the states' legend and the collectives' joins.
pub(super) struct Layers<'a> {
    pub(super) plotted: Plotted<'a>,
    pub(super) legend: &'a [(usize, String)],
    pub(super) joins: &'a Joins,
    /// The instants' chevrons.
    pub(super) instants: &'a [super::instants::Chevron],
    /// A search's matches (where the rows were read) and its line.
    pub(super) search: Option<(Option<&'a [bool]>, &'a str)>,
    /// The pixels of late-sender waiting, and the line saying how much there is.
    pub(super) waits: Option<(&'a [bool], &'a str)>,
    /// The counter tracks under the rows.
    pub(super) counters: CounterLayer<'a>,
    /// The line saying the critical path is outlined.
    pub(super) critical: Option<&'a str>,
    /// The line saying what the summary track shows.
    pub(super) summary: Option<&'a str>,
}

/// The plot's states and message lines: per pixel in memory (the CPU path, a pyramid's
/// picture), or composed on the device ([`super::device`]).
#[derive(Clone, Copy)]
pub(super) enum Plotted<'a> {
    Host { states: &'a [Option<[f32; 4]>], density: &'a stages::DensityImage },
    Device(&'a stages::timeline_pixels::Pixels),
}

impl<'a> Plotted<'a> {
    /// What was drawn on the host, or else on the device.
    pub(super) fn of(
        host: &'a Option<(Vec<Option<[f32; 4]>>, stages::DensityImage)>,
        device: &'a Option<stages::timeline_pixels::Pixels>,
    ) -> Self {
        match (host, device) {
            (Some((states, density)), _) => Plotted::Host { states, density },
            (None, Some(pixels)) => Plotted::Device(pixels),
            (None, None) => unreachable!("drawn on the host or the device"),
        }
    }
}

/// The time axis's title: from the trace's start, with what the home window and the hidden
/// rows say.
fn time_axis_title(home: Option<&Home>, hidden: usize) -> String {
    let mut axis = match home {
        Some(h) => format!("time since trace start (s); {}", h.note),
        None => "time since trace start (s)".into(),
    };
    if hidden > 0 {
        axis.push_str(&format!("; {hidden} empty rows hidden"));
    }
    axis
}

/// The summary track over plot `p`'s `states` (its pixel rows in `sp`): the share of the
/// locations drawn on `rows` in each state over `window`.
fn summarised(
    sp: Plot,
    p: Plot,
    window: (u64, u64),
    rows: &Tracks,
    index: &TimelineIndex,
    states: &mut [Option<[f32; 4]>],
) -> Summarised {
    let shown = super::states::summary_locations(index, rows);
    let shares = super::states::summary_shares(p.w, window, &shown, index);
    let from = ((sp.y0 - p.y0) * p.w) as usize;
    let pixels = super::states::summary_pixels(&shares, sp.h);
    states[from..from + pixels.len()].copy_from_slice(&pixels);
    Summarised { plot: sp, shares: Some(shares), locations: shown.len() }
}

/// The plot and its summary track (`summary`, the track's rows) drawn on the device, where the
/// device path draws this picture; the track's shares are not kept: a tooltip sums its column's.
#[allow(clippy::type_complexity, reason = "the picture and its summary track")]
fn device_plot(
    d: &Dataset,
    (backend, ring): (&Backend, Option<&super::ring::Ring>),
    index: &Arc<TimelineIndex>,
    opts: &TimelineOptions,
    (p, window): (Plot, (u64, u64)),
    of_row: &[(Vec<usize>, Option<u32>)],
    (rows, summary): (&Tracks, Option<Plot>),
) -> Result<(Option<stages::timeline_pixels::Pixels>, Option<Summarised>), ViewError> {
    if !super::device::draws_on_device(backend, d, opts) {
        return Ok((None, None));
    }
    let shown = summary.map(|_| super::states::summary_locations(index, rows)).unwrap_or_default();
    let run = summary.map(|plot| super::device::SummaryRun { plot, shown: &shown });
    let pixels =
        super::device::device_pixels(d, (backend, ring), index, (p, window), of_row, (rows, run.as_ref()), opts)?;
    let summarised = summary.map(|plot| Summarised { plot, shares: None, locations: shown.len() });
    Ok((Some(pixels), summarised))
}

impl Summarised {
    /// The line over the plot: how many locations the track counts, how many stand apart.
    fn note(&self, t: &Trace, grouped: Option<&Behaviour>) -> String {
        let apart = match grouped.map_or(0, |b| b.deviants.len()) {
            0 => String::new(),
            k => format!("; {k} apart"),
        };
        format!("summary: {}{apart}", rows_counted_thousands(t, self.locations))
    }
}

/// `n` rows counted in the title's words, with thousands separated.
pub(super) fn rows_counted_thousands(t: &Trace, n: usize) -> String {
    let words = rows_counted(t, n);
    let rest = words.split_once(' ').map_or("", |(_, r)| r);
    format!("{} {rest}", crate::rows::thousands(n))
}

/// The counter tracks of a picture: the plot of rows and tracks together (the axes go round
/// it), the series, the tracks drawn and how many series were left out.
pub(super) struct CounterLayer<'a> {
    pub(super) outer: Plot,
    pub(super) index: &'a CounterIndex,
    pub(super) tracks: &'a [Track],
    pub(super) hidden: usize,
}

/// The timeline scene of `layers` over `window` of the trace's span `full` (ticks, `tps` per
/// second): title, axes, legend, the states and messages as one raster layer, collectives.
pub(super) fn compose(
    opts: &TimelineOptions,
    p: Plot,
    (window, full, tps): ((u64, u64), (u64, u64), f64),
    (row_axis, rows_title): (&RowAxis, &str),
    (title, axis): (&str, &str),
    layers: &Layers<'_>,
) -> Scene {
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    scene.text(&crate::plot::fit(title, opts.width as f32 - 24.0, 15.0), [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    let (s0, s1) = ((window.0 - full.0) as f64 / tps, (window.1 - full.0) as f64 / tps);
    let x_ticks = nice_ticks(s0, s1, 6);
    let step = x_ticks.get(1).map_or(1.0, |b| b.1 - x_ticks[0].1);
    let decimals = (-step.log10().floor()).clamp(0.0, 9.0) as usize;
    let x_ticks: Vec<Tick> = x_ticks
        .into_iter()
        .map(|(f, v)| (f, if v.abs() >= 1e4 { format_value(v) } else { format!("{v:.decimals$}") }))
        .collect();
    // The rows' ticks, placed on the plot of rows and tracks the axes go round.
    let outer = layers.counters.outer;
    let y_ticks: Vec<Tick> = row_axis
        .ticks
        .iter()
        .map(|(f, s)| ((p.y0 - outer.y0) as f32 / outer.h as f32 + f * p.h as f32 / outer.h as f32, s.clone()))
        .collect();
    axes(&mut scene, outer, &x_ticks, &y_ticks, axis, rows_title);
    row_axis.draw(&mut scene, p);
    scene.outline.rows = row_axis.outline.clone();
    let (legend, host) = match layers.plotted {
        Plotted::Host { states, density } => {
            let tone = MessageTone::new(&density.counts, opts.message_opacity);
            (tone.legend(), Some((states, density, tone)))
        }
        Plotted::Device(pixels) => (ToneLegend::of_device(pixels, opts.message_opacity), None),
    };
    scene.outline.legend = legend_column(&mut scene, p, layers.legend, &legend, opts.mix, !layers.joins.is_empty());
    let notes: Vec<&str> = [layers.search.map(|s| s.1), layers.waits.map(|w| w.1), layers.critical, layers.summary]
        .into_iter()
        .flatten()
        .collect();
    if !notes.is_empty() {
        // Clear of the row axis's title on the left; the right half is the selected pair's.
        let note = crate::plot::fit(&notes.join("; "), p.w as f32 * 0.5 - 32.0, 11.0);
        scene.text(&note, [p.x0 as f32 + 24.0, p.y0 as f32 - 8.0], 11.0, Anchor::Left, TEXT);
    }
    let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
    let Some((states, density, tone)) = host else {
        if let Plotted::Device(pixels) = layers.plotted {
            let data = exaviz_render::RasterData::Device { words: pixels.rgba.clone(), stride: pixels.stride };
            scene.raster(Raster { rect, width: p.w, height: p.h, data, screen: false });
        }
        return finish(scene, p, outer, layers);
    };
    let max = density.counts.iter().copied().max().unwrap_or(0);
    let log_max = (f64::from(max) + 1.0).ln();
    let opacity = tone.opacity;
    let mask = layers.search.and_then(|(mask, _)| mask);
    let waits = layers.waits.map(|w| w.0);
    let pixel = |k: usize| -> Option<[f32; 4]> {
        if waits.is_some_and(|w| w[k]) {
            return Some(WAIT_COLOUR);
        }
        // A search lights its matches (their states at full strength) and dims the rest; waits
        // shown dim every state.
        let lit = mask.map(|m| m[k]).or(waits.map(|_| false));
        let state = match lit {
            Some(true) => states[k].map(|s| [s[0] / 0.72, s[1] / 0.72, s[2] / 0.72, 1.0]),
            Some(false) => states[k].map(|s| [s[0], s[1], s[2], s[3] * 0.3]),
            None => states[k],
        };
        let opacity = if lit == Some(false) { opacity * 0.3 } else { opacity };
        let c = density.counts[k];
        if c == 0 || opacity <= 0.0 {
            return state;
        }
        let share = (density.sums[k] as f32 / GRADIENT_STEPS / c as f32).clamp(0.0, 1.0);
        let line = direction_colour(share);
        let under = state.map_or(BACKGROUND, |s| [s[0] * s[3], s[1] * s[3], s[2] * s[3]]);
        if opts.mix == Mix::Additive {
            // Every line adds its colour (the gradient is linear, so the sum is the count times
            // the mean colour), tone-mapped by the log of the count so that the busiest pixel
            // saturates and single lines stay visible.
            let k = additive_gain(c, log_max) * opacity;
            let rgb = [0, 1, 2].map(|ch| (under[ch] * 0.5 + line[ch] * k).min(1.0));
            return Some([rgb[0], rgb[1], rgb[2], 1.0]);
        }
        let a = if lit == Some(false) { tone.alpha(c) * 0.3 } else { tone.alpha(c) };
        Some([
            under[0] + (line[0] - under[0]) * a,
            under[1] + (line[1] - under[1]) * a,
            under[2] + (line[2] - under[2]) * a,
            1.0,
        ])
    };
    let colours: Vec<[u8; 4]> = (0..(p.w * p.h) as usize)
        .into_par_iter()
        .map(|k| pixel(k).map_or([0; 4], |c| c.map(exaviz_render::unorm8)))
        .collect();
    scene.raster(Raster::rgba(rect, p.w, p.h, colours));
    finish(scene, p, outer, layers)
}

/// The collectives and counter tracks over the plot's raster.
fn finish(mut scene: Scene, p: Plot, outer: Plot, layers: &Layers<'_>) -> Scene {
    draw_collectives(&mut scene, p, layers.joins);
    super::instants::draw_instants(&mut scene, p, layers.instants);
    let c = &layers.counters;
    let below = [8.0, (outer.y0 + outer.h) as f32 + 34.0];
    counters::draw(&mut scene, c.index, c.tracks, c.hidden, below);
    scene
}

/// Late-sender waiting's colour: Okabe & Ito's vermillion at full strength over dimmed states.
const WAIT_COLOUR: [f32; 4] = [0.835, 0.369, 0.0, 1.0];

/// Per plot pixel, whether a late-sender wait of `waits` (sorted by start) covers it (at least a
/// pixel each; in a row cut into nesting levels, in its receive's band: `levels` per pixel row),
/// and the line saying how much waiting the window and the trace hold.
fn wait_mask(
    t: &Trace,
    waits: &[Wait],
    p: Plot,
    window: (u64, u64),
    (tracks, levels): (&Tracks, &[Option<u32>]),
) -> (Vec<bool>, String) {
    let n = t.locations.name.len();
    let mut mask = vec![false; (p.w * p.h) as usize];
    let span = (window.1 - window.0) as f64;
    let x = |tick: u64| (tick.clamp(window.0, window.1) - window.0) as f64 / span * f64::from(p.w);
    let (mut count, mut ticks) = (0usize, 0u64);
    let begun = waits.partition_point(|w| w.from < window.1);
    for w in waits[..begun].iter().filter(|w| w.to > window.0 && (w.location as usize) < n) {
        count += 1;
        ticks += w.to.min(window.1) - w.from.max(window.0);
        let x0 = (x(w.from) as u32).min(p.w - 1);
        let x1 = (x(w.to).ceil() as u32).clamp(x0 + 1, p.w);
        let rows = tracks.pixels(w.location as usize);
        for row in rows.filter(|&r| levels.get(r as usize).copied().flatten().is_none_or(|d| d == w.depth)) {
            let at = (row * p.w) as usize;
            mask[at + x0 as usize..at + x1 as usize].fill(true);
        }
    }
    let tps = t.ticks_per_second.max(1) as f64;
    let total: u64 = waits.iter().map(|w| w.to - w.from).sum();
    let secs = |ticks: u64| {
        let s = ticks as f64 / tps;
        match s {
            s if s >= 1.0 => format!("{s:.3} s"),
            s if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
            s => format!("{:.1} µs", s * 1e6),
        }
    };
    let note = if waits.is_empty() {
        "late senders: none in the trace".to_string()
    } else {
        format!("late senders: {count} waits, {} (of {}, {})", secs(ticks), waits.len(), secs(total))
    };
    (mask, note)
}

/// The tracks of a picture laid out on its plot.
pub(super) struct Placed {
    pub rows: Tracks,
    /// The counter tracks: series, plot, and whether under their location's own row.
    pub counters: Vec<(usize, Plot, bool)>,
    /// How many counter series were left out.
    pub hidden: usize,
    /// Whether rows tall enough are cut into a band per nesting level.
    pub banded: bool,
    /// The summary track's plot, above the rows, where one is drawn.
    pub summary: Option<Plot>,
}

/// The summary track's height on a plot `h` pixels high: a tenth of it, 20 to 48 pixels.
pub(super) fn summary_px(h: u32) -> u32 {
    (h / 10).clamp(20, 48)
}

/// The locations of `d`'s trace grouped by behaviour in `window` where `opts` ask for it (by
/// default, where the shown locations outnumber the plot's `rows` pixel rows
/// [`AUTO_LOCATIONS_PER_ROW`] to one and the trace's every window is drawn from its rows): on
/// `backend`'s device where the rows are kept there, else on the CPU.
pub(super) fn behaviour(
    d: &Dataset,
    index: &Arc<TimelineIndex>,
    opts: &TimelineOptions,
    rows: u32,
    window: (u64, u64),
    backend: &Backend,
) -> Result<Option<Behaviour>, ViewError> {
    let t = &d.trace;
    // By default where every window is drawn from the rows, and where a window of a store or of
    // a trace with an index is read as rows: its wide windows are drawn from its pyramid, which
    // groups them alike from its per-location tiles (a store summed before those were kept draws
    // its blocks of locations as they are).
    let from_rows = d.out_of_core.is_none();
    let shown: Vec<u32> =
        (0..t.locations.name.len() as u32).filter(|&l| opts.show_empty || index.busy[l as usize]).collect();
    let grouped = match opts.rows {
        Rows::Index => false,
        Rows::Behaviour => true,
        Rows::Auto => from_rows && shown.len() > AUTO_LOCATIONS_PER_ROW * rows as usize,
    };
    if !grouped || shown.is_empty() {
        return Ok(None);
    }
    // Only the slots the trace's regions use: every feature costs each distance.
    let slots = index.slot.iter().map(|&s| s as u32 + 1).max().unwrap_or(1).min(CATEGORICAL.len() as u32);
    // On the device where the rows are kept there; else on the CPU (rows read from disk, or
    // lavapipe's shared cores, where the CPU sums them faster and nothing moves).
    let on = if super::device::rows_on_device(backend, t) { backend } else { &Backend::Cpu };
    // The intervals kept on the device under the index, as the timeline's pixels keep them.
    let owner: exaviz_compute::Owner = index.clone();
    crate::rows::timed(|| {
        let features = crate::rows::source(t, &index.slot, slots, window, (on, Some(&owner)))?;
        // A deviant's row takes at least DEVIANT_PX: at most a third of the rows go to them.
        let most = (rows / DEVIANT_PX / 3).max(1) as usize;
        let mut b = crate::rows::group(&*features, &shown, most, on)?;
        if let Some(l) = opts.opened {
            b.open(l, most_opened(rows));
        }
        Ok(Some(b))
    })
}

/// Most locations a band opens into, on a plot `rows` pixels high: a third of the plot, a pixel
/// row each at least.
pub(super) fn most_opened(rows: u32) -> usize {
    (rows / 3).max(1) as usize
}

/// By default rows are grouped by behaviour where the shown locations outnumber the plot's pixel
/// rows this many to one: a location among two to a row still shows at half strength, among
/// dozens it would vanish.
pub(super) const AUTO_LOCATIONS_PER_ROW: usize = 8;

/// Least height of a deviant's own row, in pixels.
pub(super) const DEVIANT_PX: u32 = 3;

/// The pixel heights of behaviour's tracks on a plot `h` high: each deviant's own row a
/// sixth of the plot shared among them (from DEVIANT_PX up to 16 px), each location of an
/// opened band two thirds shared among them (1 to 16 px, so that a few dozen are named), each
/// band the rest by its locations' count, at least a pixel.
pub(super) fn behaviour_heights(rows: &Tracks, b: &Behaviour, h: u32) -> Vec<u32> {
    let deviants = b.deviants.len() as u32;
    let own = (h / 6).checked_div(deviants).map_or(0, |o| o.clamp(DEVIANT_PX, 16));
    let opened = b.opened.len() as u32;
    let open = (h * 2 / 3).checked_div(opened).map_or(0, |o| o.clamp(1, 16));
    let room = h.saturating_sub(own * deviants + open * opened).max(1);
    let total: usize = b.groups.iter().map(Vec::len).sum::<usize>().max(1);
    let mut of_opened = vec![false; rows.count()];
    for &l in &b.opened {
        if let Some(k) = rows.track_of(l as usize) {
            of_opened[k] = true;
        }
    }
    let mut heights: Vec<u32> = (0..rows.count())
        .map(|k| match rows.band(k) {
            Some(_) => {
                let size = rows.locations(k).count();
                ((u64::from(room) * size as u64 / total as u64) as u32).max(1)
            }
            None if of_opened[k] => open.max(1),
            None => own.max(1),
        })
        .collect();
    // Every band tall enough to be named where the plot has room, the pixels taken from the
    // tallest band.
    let bands: Vec<usize> = (0..heights.len()).filter(|&k| rows.band(k).is_some()).collect();
    if let Some(&tallest) = bands.iter().max_by_key(|&&k| heights[k]) {
        let short: u32 = bands.iter().map(|&k| BAND_PX.saturating_sub(heights[k])).sum();
        if heights[tallest] >= short + 2 * BAND_PX {
            for &k in &bands {
                heights[k] = heights[k].max(BAND_PX);
            }
            heights[tallest] -= short;
        }
    }
    heights
}

/// Least height of a band where the plot has room: enough for its label.
const BAND_PX: u32 = 13;

/// The tracks of a timeline of `t` as `opts` ask, on plot `p`: the counter tracks chosen (as
/// many as fit) each under the track of its location, and, where every track can be tall enough
/// for two nesting levels, the tracks' heights following the levels they show (a collapsed group
/// one level), the depths found once then. Locations grouped by `behaviour` share the bands
/// and deviants' rows it makes.
pub(super) fn placed(
    t: &Trace,
    index: &TimelineIndex,
    opts: &TimelineOptions,
    p: Plot,
    behaviour: Option<&Behaviour>,
) -> Placed {
    let mut rows = match behaviour {
        Some(b) => Tracks::behaviour(t, &index.busy, opts.show_empty, b),
        None => index.tracks(t, opts),
    };
    let (wanted, hidden) = counters::heights(p.h, &index.counters.chosen(opts.counters), index.counters.series.len());
    // Each under its location's track; a series whose location has a row of its own (and that row
    // alone) needs no location in its label.
    let (slots, own): (Vec<Slot>, Vec<bool>) = wanted
        .iter()
        .map(|&(s, height)| {
            let l = index.counters.series[s].location as usize;
            let after = rows.anchor(t, l);
            (Slot { after: after.unwrap_or(usize::MAX), height }, after.is_some_and(|k| rows.single(k) == Some(l)))
        })
        .unzip();
    let shown = match opts.summary {
        SummaryTrack::Auto => behaviour.is_some(),
        SummaryTrack::On => true,
        SummaryTrack::Off => false,
    };
    // The summary above the rows where the plot has room for it and a row of every track.
    let summary = (shown && p.h >= 2 * summary_px(p.h)).then(|| Plot { h: summary_px(p.h), ..p });
    let top = summary.map_or(0, |s| s.h + SLOT_GAP_PX);
    let room = p.h.saturating_sub(slots.iter().map(|s| s.height + counters::GAP_PX).sum::<u32>() + top);
    let banded =
        behaviour.is_none() && !opts.innermost && rows.count() as u64 * u64::from(2 * LEVEL_PX - 1) < u64::from(room);
    let weights: Vec<u32> = if let Some(b) = behaviour {
        behaviour_heights(&rows, b, room)
    } else if banded {
        let depth = index.depths(t);
        (0..rows.count()).map(|k| rows.single(k).map_or(1, |l| depth.get(l).map_or(1, |d| d + 1))).collect()
    } else {
        Vec::new()
    };
    let ranges = rows.place_below(top, p.h, &weights, &slots);
    let counters = wanted
        .iter()
        .zip(ranges)
        .zip(own)
        .filter(|((_, r), _)| !r.is_empty())
        .map(|((&(s, _), r), own)| (s, Plot { y0: p.y0 + r.start, h: r.end - r.start, ..p }, own))
        .collect();
    Placed { rows, counters, hidden, banded, summary }
}

/// The timeline as a scene (states and messages one raster layer over the plot) and what its
/// tooltips read, from the trace's `index`; `home` is the window drawn when none is asked for.
pub fn timeline_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &TimelineOptions,
    index: &Arc<TimelineIndex>,
    home: Option<Home>,
    kept: Option<&LastPicture>,
) -> Result<(Scene, TimelinePick), ViewError> {
    let t = &dataset.trace;
    let n = t.locations.name.len();
    if n == 0 {
        return Err(ViewError::Unsupported("the timeline needs a trace with processes (locations)".into()));
    }
    let full = index.span.ok_or_else(|| ViewError::Unsupported("the trace has no intervals or messages".into()))?;
    let tps = t.ticks_per_second.max(1) as f64;
    let home = if opts.window_s.is_none() { home } else { None };
    let window = window_in(full, tps, opts.window_s.or(home.as_ref().map(|h| h.window_s)))?;
    let p = timeline_plot(opts)?;
    let grouped = behaviour(dataset, index, opts, p.h, window, backend)?;
    let Placed { rows, counters: placed, hidden, banded, summary } = placed(t, index, opts, p, grouped.as_ref());
    let counter_tracks = counters::tracks(&index.counters, &placed, window);
    let of_row = row_contents(t, p, &rows, banded.then(|| index.depths(t)));
    let (device, device_summary) =
        device_plot(dataset, (backend, kept.map(|k| &k.ring)), index, opts, (p, window), &of_row, (&rows, summary))?;
    let (states_kept, mut host, visible) = match &device {
        Some(_) => (None, None, None),
        None => {
            let (kept_states, states, density, visible) =
                host_layers(dataset, backend, opts, index, (p, window), (&of_row, &rows), kept)?;
            (kept_states, Some((states, density)), Some(visible))
        }
    };
    let summary = match host.as_mut() {
        Some((states, _)) => summary.map(|sp| summarised(sp, p, window, &rows, index, states)),
        None => device_summary,
    };
    let bundled = opts.bundle.label();
    let read = if t.span_of_whole.is_some() { " read for this window" } else { "" };
    let filtered = opts.messages.map_or(String::new(), |f| format!("; drawn: {}", f.describe()));
    let title = format!(
        "Timeline: {} ({}, {} messages{read}{bundled}{filtered})",
        crate::title_name(dataset),
        rows_counted(t, n),
        t.messages.source.len()
    );
    let joins = collective_joins(t, p, window, &rows, index);
    let lit = opts.search.map(|s| crate::search::matching_kinds(t, &s));
    let chevrons = super::instants::chevrons(p, window, &rows, index, lit.as_deref());
    let levels: Vec<Option<u32>> = of_row.iter().map(|r| r.1).collect();
    let found = opts.search.map(|s| super::search::highlight(t, p, window, &s, &rows, &levels));
    let search = found.as_ref().map(|h| (Some(&h.mask[..]), h.note.as_str()));
    let waited = opts.waits.then(|| wait_mask(t, index.waits(t), p, window, (&rows, &levels)));
    let waits = waited.as_ref().map(|(m, note)| (&m[..], note.as_str()));
    let counters = CounterLayer { outer: p, index: &index.counters, tracks: &counter_tracks, hidden };
    let legend = &index.legend;
    let critical = opts.critical_path.then_some(CRITICAL_NOTE);
    let summary_note = summary.as_ref().map(|s| s.note(t, grouped.as_ref()));
    let layers = Layers {
        plotted: Plotted::of(&host, &device),
        legend,
        joins: &joins,
        instants: &chevrons,
        search,
        waits,
        counters,
        critical,
        summary: summary_note.as_deref(),
    };
    let axis = time_axis_title(home.as_ref(), rows.hidden);
    let rows_title = rows_title(t);
    let mut row_axis = track_axis(t, &rows, p, margin(opts.width)[0] as f32);
    if let Some(s) = &summary {
        row_axis.summary(p, s.plot, s.locations);
    }
    let mut rows = rows;
    rows.set_labelled(std::mem::take(&mut row_axis.labelled));
    let mut scene = compose(opts, p, (window, full, tps), (&row_axis, rows_title), (&title, &axis), &layers);
    scene.outline.title = title.clone();
    let counts = match (host, &device) {
        (Some((states, density)), _) => {
            if let Some((k, key)) = states_kept {
                k.keep(key, p, window, states);
            }
            LineCounts::Host(density.counts)
        }
        (None, Some(pixels)) => LineCounts::Device(pixels.counts.clone()),
        (None, None) => LineCounts::Host(Vec::new()),
    };
    let pick = TimelinePick {
        index: index.clone(),
        plot: p,
        window,
        full,
        n,
        counts,
        messages: opts.messages,
        visible: visible.map_or_else(std::sync::OnceLock::new, std::sync::OnceLock::from),
        tracks: counter_tracks,
        rows,
        levels,
        folded: opts.folded.unwrap_or_default(),
        summary,
        opened: (grouped.as_ref().map(|b| b.opened.clone()).unwrap_or_default(), most_opened(p.h)),
    };
    Ok((scene, pick))
}

/// The states and message lines of the plot computed on the host (the CPU path, and what the
/// device path does not draw yet), from the last picture's where it is kept: what of it to keep
/// for the next picture, the states, the lines and the rows of the messages drawn.
#[allow(clippy::type_complexity, reason = "the picture's parts and what the next one keeps of them")]
fn host_layers<'k>(
    dataset: &Dataset,
    backend: &Backend,
    opts: &TimelineOptions,
    index: &Arc<TimelineIndex>,
    (p, window): (Plot, (u64, u64)),
    (of_row, rows): (&[(Vec<usize>, Option<u32>)], &Tracks),
    kept: Option<&'k LastPicture>,
) -> Result<(Option<(&'k KeptStates, StatesKey)>, Vec<Option<[f32; 4]>>, stages::DensityImage, Vec<u32>), ViewError> {
    let t = &dataset.trace;
    let key = kept.map(|_| trace_key(dataset));
    // The states are kept once the picture is composed (moved, not copied).
    let states_kept =
        kept.zip(key.clone()).map(|(k, key)| (&k.states, (key, of_row.to_vec(), index.slot.clone(), opts.states)));
    let (states, messages) = rayon::join(
        || {
            let w = p.w as usize;
            let beside = states_kept.as_ref().and_then(|(k, key)| k.beside(key, p, window));
            let columns = beside.as_ref().map_or(0..w, |b| uncovered(w, b.shift));
            let mut pixels = state_pixels(t, p, window, of_row, index, opts.states, columns);
            if let Some(b) = &beside {
                take_columns(&mut pixels, &b.image, w, b.shift);
            }
            pixels
        },
        || {
            let kept = kept.map(|k| &k.lines).zip(key);
            message_density(t, backend, p, window, rows, &opts.bundle, index, kept, opts.messages.as_ref())
        },
    );
    let (density, visible) = messages?;
    Ok((states_kept, states, density, visible))
}

pub(super) fn legend_column(
    scene: &mut Scene,
    p: Plot,
    legend: &[(usize, String)],
    tone: &ToneLegend,
    mix: Mix,
    collectives: bool,
) -> Vec<OutlineEntry> {
    let x = (p.x0 + p.w + 20) as f32;
    let mut y = p.y0 as f32 + 8.0;
    scene.text("states", [x, y], 13.0, Anchor::Left, TEXT);
    // Names cut in the middle to the column, kept apart where their starts are alike.
    let names: Vec<String> = legend.iter().map(|(_, n)| n.clone()).collect();
    let width = scene.width as f32 - (x + 20.0) - 6.0;
    let mut entries = Vec::new();
    for ((s, name), short) in legend.iter().zip(crate::plot::fit_apart(&names, width, 11.0)) {
        entries.push(OutlineEntry { label: short.clone(), name: name.clone() });
        y += 20.0;
        let c = CATEGORICAL[*s].map(|v| v * 0.72);
        scene.rect([x, y - 10.0], [x + 14.0, y + 2.0], [c[0], c[1], c[2], 1.0], true);
        scene.text(&short, [x + 20.0, y], 11.0, Anchor::Left, TEXT_DIM);
    }
    if collectives {
        y += 20.0;
        scene.rect([x + 6.0, y - 12.0], [x + 8.0, y + 4.0], COLLECTIVE, true);
        scene.rect([x, y + 2.0], [x + 14.0, y + 4.0], COLLECTIVE, true);
        scene.text("collective", [x + 20.0, y], 11.0, Anchor::Left, TEXT_DIM);
        entries.push(OutlineEntry { label: "collective".into(), name: "collective".into() });
    }
    y += 36.0;
    scene.text("messages per pixel", [x, y], 13.0, Anchor::Left, TEXT);
    y += 10.0;
    // The direction legend needs 30 pixels below its top; nothing is drawn past the picture.
    let bottom = scene.height as f32 - 6.0;
    let max = tone.quantile(1.0);
    if mix == Mix::Additive {
        // Swatches from one line to the busiest pixel, of the gradient's middle colour.
        let mid = direction_colour(0.5);
        let log_max = (f64::from(max.max(1)) + 1.0).ln();
        // Four swatches 24 pixels apart, closer (to 14) where the picture is short.
        let pitch = ((bottom - y - 36.0) / 4.0).clamp(14.0, 24.0);
        let size = (pitch - 4.0).min(16.0);
        let mut last = 0;
        for (k, f) in [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0].into_iter().enumerate() {
            let lines = (f64::from(max.max(1)).powf(f).round() as u32).max(last + 1).min(max.max(1));
            if lines == last {
                continue;
            }
            last = lines;
            let y0 = y + k as f32 * pitch;
            let c = mid.map(|v| (v * additive_gain(lines, log_max) * tone.opacity).min(1.0));
            scene.rect([x, y0], [x + size, y0 + size], [c[0], c[1], c[2], 1.0], true);
            scene.text(&format!("{lines}"), [x + 22.0, y0 + size - 4.0], 11.0, Anchor::Left, TEXT_DIM);
        }
        let note = y + 3.0 * pitch + 32.0;
        scene.text("(colours add, log scale)", [x, note], 11.0, Anchor::Left, TEXT_DIM);
        if note + 32.0 + 30.0 <= bottom {
            direction_legend(scene, x, note + 32.0);
        }
        return entries;
    }
    // Equalised: equal steps of the ramp hold equal numbers of pixels; labels at the quartiles.
    // The ramp shrinks (to 24 pixels) to leave room for the direction legend below it.
    let steps = ((bottom - y - 78.0) / 4.0).clamp(6.0, 24.0) as usize;
    let ramp = steps as f32 * 4.0;
    for k in 0..steps {
        let q = k as f32 / (steps - 1) as f32;
        let a = tone.opacity * (0.2 + 0.8 * q);
        let y0 = y + k as f32 * 4.0;
        scene.rect([x, y0], [x + 16.0, y0 + 4.0], [1.0, 1.0, 1.0, a], true);
    }
    if max == 0 {
        // No lines: nothing for the direction legend to explain.
        scene.text("(no messages in view)", [x, y + ramp + 18.0], 11.0, Anchor::Left, TEXT_DIM);
        return entries;
    }
    let mut last = None;
    for q in [0.0f32, 0.5, 1.0] {
        let c = tone.quantile(q);
        if last == Some(c) {
            continue;
        }
        last = Some(c);
        let y0 = y + 8.0 + q * (ramp - 8.0);
        scene.text(&format!("{c}"), [x + 22.0, y0], 11.0, Anchor::Left, TEXT_DIM);
    }
    scene.text("(equalised)", [x, y + ramp + 18.0], 11.0, Anchor::Left, TEXT_DIM);
    let gy = y + ramp + 48.0;
    if gy + 30.0 <= bottom {
        direction_legend(scene, x, gy);
    }
    entries
}
