//! The steps x locations picture: each location's work per step, the rows, the cells, the
//! legend and what the tooltips read.

use exaviz_analysis::critical_path::graph::Lanes;
use exaviz_analysis::diff::steps;
use exaviz_compute::Backend;
use exaviz_compute::location_features::Features;
use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Area, Parts, Selection};
use exaviz_render::{Anchor, ColorMap, Raster, Scale, Scene};
use rayon::prelude::*;

use crate::contract::{self, Pick, Picker};
use crate::legend::color_bar;
use crate::plot::{Plot, Tick, axes, nice_ticks};
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

const MARGIN: [u32; 4] = [150, 56, 180, 52];
/// Least height of a deviant's own row, in pixels.
const DEVIANT_PX: u32 = 3;

/// Each location's work in each step of a window.
#[derive(Clone, Debug, Default)]
pub struct StepWork {
    /// Where the steps come from ("ProfilerStep#N", "iterations of REGION", ...).
    pub source: String,
    pub steps: usize,
    /// The locations that work in some step, in the trace's order.
    pub locations: Vec<u32>,
    /// Per location of `locations`, per step, its work in ticks (0: none).
    pub work: Vec<Vec<u64>>,
    /// Per location of `locations`, its peer group: locations of one kind whose names differ
    /// only in their numbers (the ranks' main threads, the ranks' GPU streams).
    pub peer: Vec<u32>,
    /// Per peer group, per step, the lower median of the work of its locations that work in it.
    pub median: Vec<Vec<u64>>,
    /// Per step, its span: from its earliest start to the next step's.
    pub spans: Vec<(u64, u64)>,
}

/// The lower median of `v` (0 for none).
fn lower_median(mut v: Vec<u64>) -> u64 {
    crate::rows::median(&mut v)
}

/// The work (time in regions other than waiting, innermost) of every location in every step of
/// `t` in `window` (ticks).
pub fn step_work(t: &Trace, window: (u64, u64)) -> StepWork {
    let found = steps::find(t, window);
    let lanes = Lanes::new(t);
    let count = found.count as u32;
    let rows: Vec<(u32, Vec<u64>)> = (0..t.locations.name.len() as u32)
        .into_par_iter()
        .filter_map(|l| {
            let w: Vec<u64> = (0..count)
                .map(|k| {
                    let Some((a, b)) = found.span_of(l, k, window.1) else { return 0 };
                    let (a, b) = (a.max(window.0), b.min(window.1));
                    let mut work = 0;
                    if a < b {
                        lanes.each_region(l, (a, b), |r, dt| {
                            if r.is_some_and(|r| !lanes.waiting.get(r as usize).copied().unwrap_or(false)) {
                                work += dt;
                            }
                        });
                    }
                    work
                })
                .collect();
            w.iter().any(|&x| x > 0).then_some((l, w))
        })
        .collect();
    // Peers: by kind, the name's last part with its numbers as `#`, and the rank among the
    // locations of its process alike so by their numbers (each rank's first `stream #` is
    // stream 7, its second stream 22; its main thread before its autograd thread).
    let names = &t.locations.name;
    let last = |l: u32| names[l as usize].rsplit(" / ").next().unwrap_or(&names[l as usize]).to_string();
    let head = |l: u32| names[l as usize].rsplit_once(" / ").map_or("", |(h, _)| h).to_string();
    let number = |s: &str| -> u64 {
        s.split(|c: char| !c.is_ascii_digit()).find(|d| !d.is_empty()).and_then(|d| d.parse().ok()).unwrap_or(0)
    };
    type Key = (exaviz_model::LocationKind, String);
    let key_of =
        |l: u32| -> Key { (t.locations.kind.get(l as usize).copied().unwrap_or_default(), numbers_as_hash(&last(l))) };
    let mut within: std::collections::HashMap<(String, Key), Vec<(u64, u32)>> = Default::default();
    // Locations without a process in their names (`rank 5`) are each their own process.
    for (l, _) in rows.iter().filter(|(l, _)| !head(*l).is_empty()) {
        within.entry((head(*l), key_of(*l))).or_default().push((number(&last(*l)), *l));
    }
    let mut ordinal: std::collections::HashMap<u32, usize> = Default::default();
    for v in within.values_mut() {
        v.sort_unstable();
        for (k, &(_, l)) in v.iter().enumerate() {
            ordinal.insert(l, k);
        }
    }
    let mut keys: std::collections::HashMap<(Key, usize), u32> = Default::default();
    let peer: Vec<u32> = rows
        .iter()
        .map(|(l, _)| {
            let next = keys.len() as u32;
            *keys.entry((key_of(*l), ordinal.get(l).copied().unwrap_or(0))).or_insert(next)
        })
        .collect();
    let median = (0..keys.len() as u32)
        .map(|g| {
            (0..count as usize)
                .map(|k| {
                    let of = rows.iter().zip(&peer).filter(|(_, p)| **p == g).map(|(r, _)| r.1[k]);
                    lower_median(of.filter(|&x| x > 0).collect())
                })
                .collect()
        })
        .collect();
    let lengths = found.lengths(window.1);
    let spans = found.first_start.iter().zip(&lengths).map(|(&a, &n)| (a, a + n)).collect();
    let (locations, work) = rows.into_iter().unzip();
    StepWork { source: found.source, steps: count as usize, locations, work, peer, median, spans }
}

/// `name` with every run of digits as one `#` ("thread 4012 (python3)": "thread # (python#)").
fn numbers_as_hash(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('#') {
            out.push('#');
        }
    }
    out
}

impl StepWork {
    /// The median work of step `k` among the peers of location position `m`.
    fn median_of(&self, m: u32, k: usize) -> u64 {
        self.median[self.peer[m as usize] as usize][k]
    }
}

/// A row of the picture: the positions in [`StepWork::locations`] it shows (one, or a band's
/// members), its pixel rows and, per step, the work it shows.
#[derive(Clone, Debug)]
struct Row {
    members: Vec<u32>,
    band: bool,
    pixels: std::ops::Range<u32>,
    work: Vec<u64>,
}

/// The rows on a plot `h` pixels high: one per location where they fit, else grouped by their
/// work step by step on `backend`, each location far from its group on a row of its own.
fn rows_of(w: &StepWork, h: u32, backend: &Backend) -> Result<Vec<Row>, ViewError> {
    let n = w.locations.len() as u32;
    let span = |k: u32, n: u32| {
        let (a, b) = (
            (u64::from(k) * u64::from(h) / u64::from(n)) as u32,
            ((u64::from(k) + 1) * u64::from(h) / u64::from(n)) as u32,
        );
        let b = if b - a >= 4 { b - 1 } else { b.max(a + 1) };
        a..b.min(h)
    };
    if n <= h {
        return Ok((0..n)
            .map(|k| Row { members: vec![k], band: false, pixels: span(k, n), work: w.work[k as usize].clone() })
            .collect());
    }
    // Features: each location's work per step, in quanta small enough that a distance over
    // every step fits 32 bits.
    let bins = w.steps.max(1) as u32;
    let most = w.work.iter().flatten().copied().max().unwrap_or(1).max(1);
    let top = u64::from(u32::MAX / bins / 2).max(1);
    let quantum = most.div_ceil(top).max(1);
    let values: Vec<u32> = w.work.iter().flat_map(|r| r.iter().map(|&x| (x / quantum) as u32)).collect();
    let features = Features { locations: n, bins, slots: 1, quantum, values };
    let shown: Vec<u32> = (0..n).collect();
    let most_deviants = (h / DEVIANT_PX / 3).max(1) as usize;
    let b = crate::rows::timed(|| crate::rows::group(&features, &shown, most_deviants, backend))?;
    let mut rows: Vec<Row> = b
        .groups
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| {
            let work = (0..w.steps).map(|k| lower_median(g.iter().map(|&m| w.work[m as usize][k]).collect())).collect();
            Row { members: g.clone(), band: true, pixels: 0..0, work }
        })
        .chain(b.deviants.iter().map(|&m| Row {
            members: vec![m],
            band: false,
            pixels: 0..0,
            work: w.work[m as usize].clone(),
        }))
        .collect();
    // In their places: by their first location.
    rows.sort_by_key(|r| r.members[0]);
    let deviants = b.deviants.len() as u32;
    let own = (h / 6).checked_div(deviants).map_or(0, |o| o.clamp(DEVIANT_PX, 16));
    let room = u64::from(h.saturating_sub(own * deviants).max(1));
    let banded: u64 = rows.iter().filter(|r| r.band).map(|r| r.members.len() as u64).sum::<u64>().max(1);
    let mut at = 0u32;
    for r in &mut rows {
        let height = if r.band { ((room * r.members.len() as u64 / banded) as u32).max(1) } else { own.max(1) };
        let end = (at + height).min(h);
        r.pixels = at..if end - at >= 4 { end - 1 } else { end };
        at = end;
    }
    Ok(rows)
}

/// How far `work` lies from `median`, as a share of it (`None`: no work, or no median).
fn deviation(work: u64, median: u64) -> Option<f64> {
    (work > 0 && median > 0).then(|| work as f64 / median as f64 - 1.0)
}

/// What the steps view's tooltips read.
pub struct StepsPick {
    plot: Plot,
    work: StepWork,
    rows: Vec<Row>,
    labels: Vec<String>,
    full: (u64, u64),
    tps: f64,
}

impl Picker for StepsPick {
    fn pick(&self, _: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let p = self.plot;
        let [u, v] = contract::share_in([p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32], at)?;
        let k = ((u * self.work.steps as f32) as usize).min(self.work.steps.saturating_sub(1));
        let y = (v * p.h as f32) as u32;
        let r = self.rows.iter().position(|r| r.pixels.contains(&y))?;
        let row = &self.rows[r];
        let ms = |ticks: u64| format!("{:.3} ms", ticks as f64 / self.tps * 1e3);
        let s = |ticks: u64| format!("{:.6} s", ticks.saturating_sub(self.full.0) as f64 / self.tps);
        let (a, b) = self.work.spans.get(k).copied().unwrap_or_default();
        let mut lines = vec![format!("step {k}: {} to {}", s(a), s(b))];
        let median = self.work.median_of(row.members[0], k);
        let what = if row.band { "its locations' median work" } else { "work" };
        match deviation(row.work[k], median) {
            Some(d) => lines.push(format!(
                "{what}: {}; its peers' median: {} ({:+.1}%)",
                ms(row.work[k]),
                ms(median),
                100.0 * d
            )),
            None => lines.push(format!("no work in this step (its peers' median: {})", ms(median))),
        }
        if row.band {
            lines.push(format!("a band of {} locations alike step by step", crate::rows::thousands(row.members.len())));
        }
        let Some(open) = self.opened(r, k) else { return Some(Pick::new(self.labels[r].clone(), lines)) };
        lines.push(if row.band {
            "click: open this step in the timeline, the band opened into its locations".to_string()
        } else {
            "click: open this step of this location in the timeline, with its statistics".to_string()
        });
        Some(Pick::new(self.labels[r].clone(), lines).with_click(STEP_PARTS, open).opening("timeline"))
    }
}

/// What a click on a cell selects in the timeline it opens.
pub const STEP_PARTS: Parts = Parts::WINDOW.or(Parts::AREA).or(Parts::OPENED);

impl StepsPick {
    /// The timeline's selection showing step `k` of row `r`: the step's window with a twentieth
    /// of it either side (within the trace), the row's first location opened out of its band;
    /// for a location of its own, the area of its step too (outlined, its statistics summed).
    fn opened(&self, r: usize, k: usize) -> Option<Selection> {
        let row = self.rows.get(r)?;
        let (a, b) = *self.work.spans.get(k)?;
        let first = *self.work.locations.get(*row.members.first()? as usize)?;
        let margin = (b.saturating_sub(a) / 20).max(1);
        let (from, to) = (a.saturating_sub(margin).max(self.full.0), (b + margin).min(self.full.1.max(b)));
        let s = |t: u64| t.saturating_sub(self.full.0) as f64 / self.tps;
        let area = (!row.band).then_some(Area { from: a, to: b.max(a + 1), first, last: first });
        Some(Selection { window_s: Some((s(from), s(to))), area, opened: Some(first), ..Default::default() })
    }
}

/// The rows' outline on plot `p`, each labelled where its label fits beside the others, a band
/// and a location drawn apart from its group always: a location by what tells the locations'
/// `names` apart, a band by its locations' numbers (`full`: each row's name whole).
fn row_labels(
    work: &StepWork,
    rows: &[Row],
    (names, full): (&[String], &[String]),
    p: Plot,
) -> (Vec<exaviz_render::OutlineRow>, Vec<Tick>) {
    let width = MARGIN[0] as f32 - 14.0;
    let grouped = rows.iter().any(|r| r.band);
    let alone: Vec<usize> = (0..rows.len()).filter(|&i| !rows[i].band).collect();
    let alone_names: Vec<String> = alone.iter().map(|&i| full[i].clone()).collect();
    let mut texts = vec![String::new(); rows.len()];
    for (&i, short) in alone.iter().zip(crate::labels::fitted(&alone_names, width, 11.0)) {
        texts[i] = short;
    }
    for (text, r) in texts.iter_mut().zip(rows).filter(|(_, r)| r.band) {
        let ids: Vec<u32> = r.members.iter().map(|&m| work.locations[m as usize]).collect();
        *text = crate::labels::band(names, &ids, width, 11.0);
    }
    let centre = |r: &Row| (r.pixels.start + r.pixels.end) as f32 / 2.0;
    let wanted: Vec<(f32, bool)> = rows.iter().map(|r| (centre(r), grouped)).collect();
    let placed = crate::labels::place(&wanted, 0.0, p.h as f32, 12.0);
    let ticks: Vec<Tick> =
        placed.iter().zip(&texts).filter_map(|(at, text)| at.map(|y| (y / p.h as f32, text.clone()))).collect();
    let outline = rows
        .iter()
        .zip(texts)
        .zip(placed)
        .zip(full)
        .map(|(((r, text), at), name)| exaviz_render::OutlineRow {
            label: if at.is_some() { text } else { String::new() },
            name: name.clone(),
            top: p.y0 + r.pixels.start,
            height: r.pixels.len() as u32,
            apart: grouped && !r.band,
            count: r.members.len(),
            kind: if r.band { "band" } else { "location" }.into(),
            process: String::new(),
        })
        .collect();
    (outline, ticks)
}

/// The steps view of `d` at `size` over the selection's window (seconds), the rows grouped on
/// `backend` where they outnumber the pixel rows.
pub fn steps_scene(
    d: &Dataset,
    backend: &Backend,
    (width, height): (u32, u32),
    window_s: Option<(f64, f64)>,
) -> Result<(Scene, StepsPick), ViewError> {
    let t = &d.trace;
    let p = Plot::inside(width, height, MARGIN)
        .ok_or_else(|| ViewError::Unsupported(format!("picture {width}x{height} too small for the steps view")))?;
    let full = crate::trace::window_ticks(d, &Selection::default())
        .ok_or_else(|| ViewError::Unsupported("the steps view needs a trace with events".into()))?;
    let window = crate::trace::window_ticks(d, &Selection { window_s, ..Default::default() }).unwrap_or(full);
    let work = step_work(t, window);
    if work.steps == 0 || work.locations.is_empty() {
        return Err(ViewError::Unsupported(format!(
            "the steps view needs steps: {} has no ProfilerStep#N regions, step annotations or iterations found by repetition{}",
            crate::title_name(d),
            if window_s.is_some() { " in the window" } else { "" }
        )));
    }
    let rows = rows_of(&work, p.h, backend)?;
    let names = &t.locations.name;
    let full_labels: Vec<String> = rows
        .iter()
        .map(|r| {
            let ids: Vec<u32> = r.members.iter().map(|&m| work.locations[m as usize]).collect();
            if r.band { crate::rows::group_label(names, &ids) } else { names[ids[0] as usize].clone() }
        })
        .collect();
    // Deviations: the map's range the largest, between 10% and 200%.
    let dev = |r: &Row, k: usize| deviation(r.work[k], work.median_of(r.members[0], k));
    let range =
        rows.iter().flat_map(|r| (0..work.steps).filter_map(move |k| dev(r, k))).fold(0.0f64, |m, d| m.max(d.abs()));
    // Rounded up to a round share, so that the legend reads in round numbers.
    let range = [0.1, 0.2, 0.5, 1.0, 2.0].into_iter().find(|&r| r >= range).unwrap_or(2.0);
    let map = ColorMap::RdBu;
    let mut colours = vec![[0u8; 4]; (p.w * p.h) as usize];
    let column_step: Vec<usize> = (0..p.w)
        .map(|x| (((f64::from(x) + 0.5) * work.steps as f64 / f64::from(p.w)) as usize).min(work.steps - 1))
        .collect();
    for r in &rows {
        let line: Vec<[u8; 4]> = column_step
            .iter()
            .map(|&k| match dev(r, k) {
                Some(d) => {
                    let u = (0.5 + d / (2.0 * range)).clamp(0.0, 1.0) as f32;
                    map.sample(u).map(exaviz_render::unorm8)
                }
                None => [0; 4],
            })
            .collect();
        for y in r.pixels.clone() {
            let at = (y * p.w) as usize;
            colours[at..at + p.w as usize].copy_from_slice(&line);
        }
    }
    let mut scene = Scene::new(width, height, BACKGROUND);
    let title = format!(
        "Steps: {} ({} steps, {}; {} locations)",
        crate::title_name(d),
        work.steps,
        work.source,
        crate::rows::thousands(work.locations.len())
    );
    scene.text(&crate::plot::fit(&title, width as f32 - 24.0, 15.0), [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    let s = work.steps as f64;
    let x_ticks: Vec<Tick> = nice_ticks(0.0, (s - 1.0).max(0.0), 8)
        .into_iter()
        .filter(|(_, v)| v.fract() == 0.0)
        .map(|(_, v)| (((v + 0.5) / s) as f32, format!("{v:.0}")))
        .collect();
    let (outline, y_ticks) = row_labels(&work, &rows, (names, &full_labels), p);
    axes(&mut scene, p, &x_ticks, &y_ticks, "step", "location");
    scene.outline.title = title.clone();
    scene.outline.rows = outline;
    let scale = "work against its peers' median (%)";
    scene.outline.legend = vec![exaviz_render::OutlineEntry { label: scale.into(), name: scale.into() }];
    let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
    scene.raster(Raster::rgba(rect, p.w, p.h, colours));
    let bar = [(p.x0 + p.w + 24) as f32, p.y0 as f32 + 40.0, 16.0, (p.h as f32 - 120.0).max(40.0)];
    let scale = Scale { lo: -100.0 * range, hi: 100.0 * range, log: false };
    color_bar(&mut scene, map, scale, "work against its\npeers' median (%)", bar);
    let note = [bar[0], bar[1] + bar[3] + 40.0];
    scene.text("dark: no work", note, 11.0, Anchor::Left, TEXT_DIM);
    let tps = t.ticks_per_second.max(1) as f64;
    Ok((scene, StepsPick { plot: p, work, rows, labels: full_labels, full, tps }))
}
