//! The enhanced Marey's graph of parallel DNN training (Wei et al., 2024, §5.2.3): one
//! horizontal time axis per device, grouped by pipeline stage; every operator a band where it
//! crosses its device's axis and the same operator on consecutive devices joined by a band (a
//! Marey "train"), so that waiting shows as slanted trains and slow operators as thick ones.
//! Timestamps are aligned on the semantics of the run, computation is aggregated where it is
//! dense, stages collapse into one row (min, mean and max of their devices), and the paper's
//! rules mark slow devices, heavy stages and stragglers with a red cross.

pub mod rows;

use std::sync::{Arc, Mutex};

use exaviz_analysis::training::{Align, Finding, Rule, Thresholds};
use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_model::training::{Class, Group, Training};
use exaviz_model::units::{duration, si};
use exaviz_render::{Anchor, Blend, ColorMap, Instance, KIND_QUAD, Scene};
use rayon::prelude::*;
use rows::{Item, Row};
use rustc_hash::FxHashMap as HashMap;

use crate::contract;
use crate::contract::{Drawn, Frame, Pick, Picker, Prepared};
use crate::kept::{Kept, kept};
use crate::plot::{Plot, fit, nice_ticks};
use crate::run::training;
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

/// Colours by operator group (Okabe & Ito: distinguishable with the common colour-vision
/// deficiencies).
pub fn class_colour(c: Class) -> [f32; 3] {
    match c {
        Class::Forward => [0.0, 0.447, 0.698],
        Class::Backward => [0.337, 0.706, 0.914],
        Class::Compute => [0.62, 0.62, 0.62],
        Class::Send => [0.0, 0.620, 0.451],
        Class::Recv => [0.800, 0.475, 0.655],
        _ => [0.902, 0.624, 0.0],
    }
}

/// The rules' glyph colour (Okabe & Ito's vermillion).
const ALERT: [f32; 4] = [0.835, 0.369, 0.0, 1.0];

/// Which stages show as one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Collapse {
    /// All stages where the devices would get rows under 6 pixels, else none.
    Auto,
    All,
    None,
    /// These stages.
    Stages(Vec<u32>),
}

pub fn parse_collapse(s: &str) -> Result<Collapse, String> {
    match s {
        "auto" => Ok(Collapse::Auto),
        "all" => Ok(Collapse::All),
        "none" => Ok(Collapse::None),
        list => list
            .split(',')
            .map(|v| v.trim().parse::<u32>().map_err(|_| format!("'{v}' is not a stage number (or auto, all, none)")))
            .collect::<Result<Vec<_>, _>>()
            .map(Collapse::Stages),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MareyOptions {
    pub align: Align,
    /// Bins of the visual aggregation across the visible range (0: none).
    pub bins: u32,
    pub collapse: Collapse,
    /// Show this training step (where no time window is selected).
    pub step: Option<u32>,
    pub thresholds: Thresholds,
    /// Draw the run's critical path ([`exaviz_analysis::critical_path`]) through the graph.
    pub critical_path: bool,
    /// Whether a collapsed stage keeps the devices that differ from it on rows of their own.
    pub rows: crate::rows::Grouping,
}

impl Default for MareyOptions {
    fn default() -> Self {
        Self {
            align: Align::Full,
            bins: 100,
            collapse: Collapse::Auto,
            step: None,
            thresholds: Thresholds::default(),
            critical_path: false,
            rows: crate::rows::Grouping::Behaviour,
        }
    }
}

/// What does not change with the window: offsets and the rules' findings.
pub struct Analysis {
    pub offsets: Vec<i64>,
    pub findings: Vec<Finding>,
    pub longest: u64,
    /// Aligned first and last nanosecond.
    pub span: (f64, f64),
    /// Per device: FLOPS (or computation time where the trace has no FLOPs).
    pub rate: Vec<f64>,
}

impl Analysis {
    pub fn new(t: &Training, o: &MareyOptions) -> Self {
        let offsets = exaviz_analysis::training::offsets(t, o.align);
        let findings = exaviz_analysis::training::rules(t, &offsets, o.thresholds);
        let (mut a, mut b) = (f64::MAX, f64::MIN);
        for (d, &off) in offsets.iter().enumerate() {
            let r = t.ops_of(d);
            if r.is_empty() {
                continue;
            }
            let off = off as f64;
            a = a.min(t.ops.start[r.start] as f64 + off);
            b = b.max(t.ops.end[r.clone()].iter().copied().max().unwrap_or(0) as f64 + off);
        }
        let rate = exaviz_analysis::training::rates(t, &exaviz_analysis::training::compute_totals(t));
        Self { offsets, findings, longest: rows::longest(t), span: (a.min(b), b.max(a + 1.0)), rate }
    }
}

/// Dataset name, operator count and alignment: what an [`Analysis`] was made for.
type AnalysisKey = (String, usize, Align);

pub struct MareyView {
    pub opts: MareyOptions,
    cache: Mutex<Option<(AnalysisKey, Arc<Analysis>)>>,
    /// The run's critical path and each location's device, found once per trace.
    critical: Kept<(String, usize), Arc<Critical>>,
}

/// The critical path of a run and, per location of its trace, the device whose process it is.
pub struct Critical {
    pub path: exaviz_analysis::critical_path::Path,
    pub device: Vec<Option<u32>>,
    /// Nanoseconds per tick of the trace.
    pub ns_per_tick: f64,
}

impl MareyView {
    pub fn with(opts: MareyOptions) -> Self {
        Self { opts, cache: Mutex::new(None), critical: Mutex::new(None) }
    }

    /// The run's critical path, through the trace's dependency graph with the training model's
    /// sends and collectives, kept per trace.
    pub fn critical_of(&self, d: &Dataset, t: &Training) -> Arc<Critical> {
        kept(&self.critical, (d.name.clone(), d.trace.intervals.start.len()), || {
            let tr = &d.trace;
            let g = exaviz_analysis::critical_path::Graph::with_training(tr, Some(t));
            let window = tr.span().map_or((0, 0), |s| (s.0, s.1.saturating_add(1)));
            let path = exaviz_analysis::critical_path::path::critical_path(tr, &g, window);
            // Each device's process, found once per device (the first device naming a process
            // keeps it).
            let mut of_process: Vec<Option<u32>> = vec![None; g.lanes.processes.len()];
            for (k, dv) in t.devices.iter().enumerate().rev() {
                if let Some(p) = g.lanes.process_of_device(&dv.name) {
                    of_process[p as usize] = Some(k as u32);
                }
            }
            let device = g.lanes.process.iter().map(|&p| of_process.get(p as usize).copied().flatten()).collect();
            Arc::new(Critical { path, device, ns_per_tick: 1e9 / tr.ticks_per_second.max(1) as f64 })
        })
    }

    pub fn analysis(&self, d: &Dataset, t: &Training) -> Arc<Analysis> {
        let key = (d.name.clone(), t.ops.len(), self.opts.align);
        let mut c = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match c.as_ref() {
            Some((k, a)) if *k == key => a.clone(),
            _ => {
                let a = Arc::new(Analysis::new(t, &self.opts));
                *c = Some((key, a.clone()));
                a
            }
        }
    }
}

const MARGIN: [u32; 4] = [190, 34, 16, 92];
const LABEL_W: f32 = 150.0;

fn plot(f: Frame) -> Result<Plot, ViewError> {
    Plot::inside(f.width, f.height, MARGIN)
        .ok_or_else(|| ViewError::Unsupported(format!("picture {}x{} too small for the Marey view", f.width, f.height)))
}

/// The window in aligned ns: the selection's (seconds from the aligned start), else the step's,
/// else everything.
fn window(t: &Training, a: &Analysis, o: &MareyOptions, sel: &Selection) -> Result<(f64, f64), ViewError> {
    if let Some((x, y)) = sel.window_s {
        if !(x.is_finite() && y.is_finite() && 0.0 <= x && x < y) {
            return Err(ViewError::Unsupported(format!("time window {x}..{y} s is empty or negative")));
        }
        return Ok((a.span.0 + x * 1e9, a.span.0 + y * 1e9));
    }
    if let Some(k) = o.step {
        return step_span(t, a, k).ok_or_else(|| {
            ViewError::Unsupported(format!("step {k} does not exist (the trace has {} steps, from 0)", t.steps.len()))
        });
    }
    Ok(a.span)
}

/// Step `k`'s span in aligned ns: steps are marked on the recorded clocks, so it is widened by
/// the offsets applied.
pub(crate) fn step_span(t: &Training, a: &Analysis, k: u32) -> Option<(f64, f64)> {
    let s = t.steps.get(k as usize)?;
    let lo = a.offsets.iter().copied().min().unwrap_or(0).min(0) as f64;
    let hi = a.offsets.iter().copied().max().unwrap_or(0).max(0) as f64;
    Some((s.start as f64 + lo, (s.end as f64 + hi).max(s.start as f64 + lo + 1.0)))
}

/// The rows for `collapse` in a plot `height` pixels high.
fn layout_rows(t: &Training, c: &Collapse, height: u32, only: Option<(u32, u32)>) -> Vec<Row> {
    let (first, last) = only.map_or((0, usize::MAX), |(a, b)| (a as usize, b as usize));
    let whole = t.stage_devices();
    let stages: Vec<std::ops::Range<usize>> =
        whole.iter().map(|r| r.start.max(first)..r.end.min(last.saturating_add(1))).collect();
    let shown: usize = stages.iter().map(|r| r.len()).sum();
    let collapsed = |s: u32| match c {
        Collapse::All => true,
        Collapse::None => false,
        Collapse::Stages(v) => v.contains(&s),
        Collapse::Auto => shown as u32 * 6 > height,
    };
    let mut out = Vec::new();
    for (s, r) in stages.iter().enumerate() {
        if r.is_empty() {
            continue;
        }
        // A stage row stands for all its devices: one only partly selected shows its devices.
        if collapsed(s as u32) && r.len() > 1 && r.len() == whole[s].len() {
            out.push(Row::Stage(s as u32));
        } else {
            out.extend(r.clone().map(|d| Row::Device(d as u32)));
        }
    }
    out
}

/// Everything a prepared picture knows for picking.
struct MareyPicker {
    plot: Plot,
    rows: Vec<Row>,
    pitch: f32,
    items: Vec<Vec<Item>>,
    w: (f64, f64),
    analysis: Arc<Analysis>,
    stage_findings: Vec<Vec<String>>,
    device_findings: HashMap<u32, Vec<String>>,
    /// Each row's stage.
    stage_of: Vec<u32>,
    /// Stages flagged by the heavy-stage rule.
    heavy: Vec<bool>,
    /// Each device's stage.
    device_stage: Vec<u32>,
    /// Per stage, the devices drawn apart from its collapsed row (sorted).
    apart: Vec<Vec<u32>>,
}

impl MareyPicker {
    /// The devices stage `s`'s collapsed row stands for, and how many are drawn apart.
    fn stage_devices(&self, t: &Training, s: u32) -> (Vec<usize>, usize) {
        let apart = self.apart.get(s as usize).map_or(&[][..], Vec::as_slice);
        let all = t.stage_devices().get(s as usize).cloned().unwrap_or(0..0);
        (all.filter(|&d| apart.binary_search(&(d as u32)).is_err()).collect(), apart.len())
    }

    /// A collapsed stage's name and its devices: ("stage 0", "4,999 devices, 1 out"), those
    /// drawn apart below it counted out.
    fn stage_label(&self, t: &Training, s: u32) -> (String, String) {
        let (devices, apart) = self.stage_devices(t, s);
        let n = crate::rows::thousands(devices.len());
        let devices = if apart == 0 { format!("{n} devices") } else { format!("{n} devices, {apart} out") };
        (format!("stage {s}"), devices)
    }
}

impl MareyPicker {
    /// The x of time `t`, kept inside the plot (bands cut at the window's edges).
    fn x(&self, t: f64) -> f32 {
        let f = ((t - self.w.0) / (self.w.1 - self.w.0)).clamp(-0.001, 1.001) as f32;
        self.plot.x0 as f32 + f * self.plot.w as f32
    }
    fn y(&self, r: usize) -> f32 {
        self.plot.y0 as f32 + (r as f32 + 0.5) * self.pitch
    }
    fn row_at(&self, y: f32) -> Option<usize> {
        let r = ((y - self.plot.y0 as f32) / self.pitch).floor();
        (r >= 0.0 && (r as usize) < self.rows.len()).then_some(r as usize)
    }
}

fn device_lines(t: &Training, a: &Analysis, d: usize) -> Vec<String> {
    let dev = &t.devices[d];
    let mut l = vec![format!("rank {}, stage {}", dev.rank, dev.stage)];
    l.push(format!("clock offset applied: {}", duration(a.offsets[d] as f64)));
    if t.has_flops {
        l.push(format!("{} FLOPS in computation", si(a.rate[d])));
    } else {
        l.push(format!("computation: {}", duration(a.rate[d])));
    }
    if dev.memory > 0 {
        l.push(format!("peak memory {:.2} GiB", dev.memory as f64 / (1u64 << 30) as f64));
    }
    l
}

impl Picker for MareyPicker {
    fn pick(&self, d: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let t = d.training.as_deref()?;
        let r = self.row_at(at[1])?;
        let row = &self.rows[r];
        if at[0] < self.plot.x0 as f32 {
            return Some(match *row {
                Row::Device(dv) => {
                    let mut lines = device_lines(t, &self.analysis, dv as usize);
                    lines.extend(self.device_findings.get(&dv).cloned().unwrap_or_default());
                    let s = t.devices[dv as usize].stage as usize;
                    if self.heavy[s] {
                        lines.extend(self.stage_findings[s].iter().filter(|m| m.starts_with("stage")).cloned());
                    }
                    let sel = Selection { track: Some(dv), ..Selection::default() };
                    Pick::new(t.devices[dv as usize].name.clone(), lines).with_click(Parts::TRACK, sel)
                }
                Row::Stage(s) => {
                    let (devices, apart) = self.stage_devices(t, s);
                    let n = crate::rows::thousands(devices.len());
                    let mut lines = vec![format!("{n} devices collapsed: bands at the mean, whiskers from min to max")];
                    if apart > 0 {
                        lines.push(format!("{apart} drawn apart below, as they differ from the stage in this window"));
                    }
                    lines.extend(self.stage_findings.get(s as usize).cloned().unwrap_or_default());
                    Pick::new(format!("stage {s}"), lines)
                }
            });
        }
        let x = at[0];
        let it = self.items[r]
            .iter()
            .filter(|i| self.x(i.start) - 2.0 <= x && x <= self.x(i.end) + 2.0)
            .min_by(|a, b| (a.end - a.start).total_cmp(&(b.end - b.start)))?;
        let i = it.op as usize;
        let where_ = match *row {
            Row::Device(dv) => t.devices[dv as usize].name.clone(),
            Row::Stage(s) => format!("stage {s} ({} devices)", it.count),
        };
        if it.bin.is_some() {
            return Some(Pick::new(
                format!("{} computation operators merged", it.count),
                vec![
                    where_,
                    format!("from {} to {}", duration(it.start - self.w.0), duration(it.end - self.w.0)),
                    "a bin denser than the mean (--bins 0 shows every operator)".into(),
                ],
            ));
        }
        let mut lines = vec![
            format!("{} on {where_}", it.class.label()),
            format!(
                "start {}, end {} (from the window's start)",
                duration(it.start - self.w.0),
                duration(it.end - self.w.0)
            ),
            format!("duration {}", duration(it.end - it.start)),
        ];
        if it.count > 1 {
            lines.push(format!(
                "across devices: start {} to {}, end by {}",
                duration(it.lo - self.w.0),
                duration(it.start - self.w.0),
                duration(it.hi - self.w.0)
            ));
        }
        if t.ops.bytes[i] > 0 {
            lines.push(format!("size {:.1} MiB", t.ops.bytes[i] as f64 / 1048576.0));
        }
        if t.ops.flops[i] > 0.0 {
            lines.push(format!("{} FLOPs", si(f64::from(t.ops.flops[i]))));
        }
        if t.ops.peer[i] != u32::MAX {
            lines.push(format!("peer {}", t.devices[t.ops.peer[i] as usize].name));
        }
        let name = &t.names[t.ops.name[i] as usize];
        let sel = Selection {
            time_slice: Some((t.ops.start[i], t.ops.end[i].max(t.ops.start[i] + 1))),
            operator: exaviz_model::selection::Search::new(name).ok(),
            ..Selection::default()
        };
        Some(Pick::new(name.clone(), lines).with_click(Parts::TIME_SLICE | Parts::OPERATOR, sel))
    }

    fn overlay(&self, d: &Dataset, sel: &Selection, scene: &mut Scene) -> bool {
        let mut drawn = false;
        if let Some(dv) = sel.track
            && let Some(r) = self.rows.iter().position(|x| *x == Row::Device(dv))
        {
            let y = self.y(r);
            let h = (self.pitch / 2.0).max(2.0);
            let (x0, x1) = (self.plot.x0 as f32 - LABEL_W - 30.0, (self.plot.x0 + self.plot.w) as f32);
            scene.rect([x0, y - h], [x1, y + h], [1.0, 1.0, 1.0, 0.12], false);
            drawn = true;
        }
        // The selected operator (a click here, or on its node in the strategy view): its band
        // on every row outlined in white.
        if let (Some(op), Some(t)) = (sel.operator, d.training.as_deref())
            && let Some(name) = t.names.iter().position(|n| n == op.as_str())
        {
            // The bands' own half height (see `bands`), two pixels out.
            let h = (self.pitch * 0.18).clamp(0.5, 5.0) + 2.0;
            for (r, items) in self.items.iter().enumerate() {
                let y = self.y(r);
                for it in items.iter().filter(|it| it.bin.is_none() && t.ops.name[it.op as usize] as usize == name) {
                    let (x0, x1) = (self.x(it.start) - 1.5, self.x(it.end).max(self.x(it.start) + 1.0) + 1.5);
                    scene.frame([x0, y - h, x1, y + h], 1.5, [1.0, 1.0, 1.0, 1.0], false);
                    drawn = true;
                }
            }
        }
        drawn
    }
}

/// The convex quadrilateral between two bands of consecutive rows.
fn train(scene: &mut Scene, top: ([f32; 2], [f32; 2]), bottom: ([f32; 2], [f32; 2]), color: [f32; 4]) {
    scene.layer(Blend::Alpha).push(Instance {
        a: top.0,
        b: top.1,
        uv_a: bottom.1,
        uv_b: bottom.0,
        color,
        kind: KIND_QUAD,
        ..bytemuck::Zeroable::zeroed()
    });
}

/// The prepared picture.
#[allow(
    clippy::too_many_arguments,
    reason = "the trace, its analysis, the options, the selection, the frame, the path and the backend"
)]
fn marey_scene(
    d: &Dataset,
    t: &Training,
    a: Arc<Analysis>,
    o: &MareyOptions,
    sel: &Selection,
    f: Frame,
    critical: Option<&Critical>,
    backend: &Backend,
) -> Result<(Scene, MareyPicker), ViewError> {
    let p = plot(f)?;
    let w = window(t, &a, o, sel)?;
    let mut rows = layout_rows(t, &o.collapse, p.h, sel.devices);
    // Devices that differ from their collapsed stage get rows of their own under its row: at
    // most a dozen or so in all, each row at least 14 pixels.
    let collapsed: Vec<u32> = rows.iter().filter_map(|r| if let Row::Stage(s) = *r { Some(s) } else { None }).collect();
    let room = (p.h as usize / 14).saturating_sub(rows.len()).min(16);
    let apart = if o.rows == crate::rows::Grouping::Behaviour && room > 0 && !collapsed.is_empty() {
        let most = (room / collapsed.len()).max(1);
        rows::apart(t, &a.offsets, &collapsed, w, most, backend).map_err(|e| ViewError::Unsupported(e.to_string()))?
    } else {
        Vec::new()
    };
    let mut apart_of: Vec<Vec<u32>> = vec![Vec::new(); t.stages as usize];
    for (s, mut devices) in apart {
        devices.sort_unstable();
        if let Some(at) = rows.iter().position(|r| *r == Row::Stage(s)) {
            for (k, &dv) in devices.iter().enumerate() {
                rows.insert(at + 1 + k, Row::Device(dv));
            }
        }
        apart_of[s as usize] = devices;
    }
    let apart_all: Vec<u32> = {
        let mut v: Vec<u32> = apart_of.concat();
        v.sort_unstable();
        v
    };
    let pitch = p.h as f32 / rows.len().max(1) as f32;
    let items: Vec<Vec<Item>> = rows
        .par_iter()
        .map(|r| rows::aggregate(rows::items(t, r, &a.offsets, w, a.longest, &apart_all), w, o.bins))
        .collect();
    let mut device_findings: HashMap<u32, Vec<String>> = HashMap::default();
    let mut stage_findings = vec![Vec::new(); t.stages as usize];
    for x in &a.findings {
        if let Some(dv) = x.device {
            device_findings.entry(dv).or_default().push(x.message.clone());
            stage_findings[t.devices[dv as usize].stage as usize].push(x.message.clone());
        } else if let Some(s) = x.stage {
            stage_findings[s as usize].push(x.message.clone());
        }
    }
    let stage_of = rows
        .iter()
        .map(|r| match *r {
            Row::Device(dv) => t.devices[dv as usize].stage,
            Row::Stage(s) => s,
        })
        .collect();
    let mut heavy = vec![false; t.stages as usize];
    for x in a.findings.iter().filter(|x| x.rule == Rule::HeavyStage) {
        if let Some(s) = x.stage {
            heavy[s as usize] = true;
        }
    }
    let pk = MareyPicker {
        plot: p,
        rows,
        pitch,
        items,
        w,
        analysis: a.clone(),
        stage_findings,
        device_findings,
        stage_of,
        heavy,
        device_stage: t.devices.iter().map(|dv| dv.stage).collect(),
        apart: apart_of,
    };
    let mut scene = Scene::new(f.width, f.height, BACKGROUND);
    let title = format!(
        "Enhanced Marey's graph (Wei et al., 2024): {} devices in {} {} ({}), {} operators  ·  {}",
        t.devices.len(),
        t.stages,
        if t.stages == 1 { "stage" } else { "stages" },
        stages_note(&t.stages_from),
        t.ops.len(),
        crate::title_name(d)
    );
    scene.text(&fit(&title, f.width as f32 - 16.0, 13.0), [8.0, 20.0], 13.0, Anchor::Left, TEXT);
    scene.outline.title = title.clone();
    draw_rows(&mut scene, t, &pk);
    draw_trains(&mut scene, &pk);
    draw_bands(&mut scene, &pk);
    draw_axis_and_legend(&mut scene, t, &pk, o);
    if let Some(c) = critical {
        draw_critical(&mut scene, &pk, c);
    }
    Ok((scene, pk))
}

/// The critical path's colour, the timeline's: a magenta none of the operator groups take.
const CRITICAL: [f32; 4] = [0.95, 0.25, 0.95, 1.0];

/// The note on the path, above the plot's right end.
pub const CRITICAL_NOTE: &str = "critical path in magenta";

/// The run's critical path through the graph: its stretches of work as thick lines along their
/// devices' axes (a stage's row where its devices are collapsed), its crossings between devices
/// as lines from the sender's axis at the send to the receiver's at the arrival, each device's
/// clock offset applied.
fn draw_critical(scene: &mut Scene, pk: &MareyPicker, c: &Critical) {
    use exaviz_analysis::critical_path::Step;
    let row_of = |dv: u32| {
        let stage = *pk.device_stage.get(dv as usize)?;
        pk.rows
            .iter()
            .position(|r| *r == Row::Device(dv))
            .or_else(|| pk.rows.iter().position(|r| *r == Row::Stage(stage)))
    };
    let at = |loc: u32, tick: u64| -> Option<(usize, f32)> {
        let dv = c.device.get(loc as usize).copied().flatten()?;
        let off = pk.analysis.offsets.get(dv as usize).copied().unwrap_or(0) as f64;
        Some((row_of(dv)?, pk.x(tick as f64 * c.ns_per_tick + off)))
    };
    let (x0, x1) = (pk.plot.x0 as f32, (pk.plot.x0 + pk.plot.w) as f32);
    let visible = |a: f32, b: f32| b >= x0 && a <= x1;
    for s in &c.path.segments {
        let (Some((ra, xa)), Some((rb, xb))) = (at(s.from_location, s.from), at(s.location, s.to)) else { continue };
        if !visible(xa.min(xb), xa.max(xb)) {
            continue;
        }
        match s.step {
            Step::On => {
                let y = pk.y(rb);
                // At least 3 pixels long, so that a short stretch still shows.
                let grow = ((3.0 - (xb - xa)) / 2.0).max(0.0);
                scene.rect([xa - grow, y - 2.0], [xb + grow, y + 2.0], CRITICAL, true);
            }
            Step::Edge(_) if ra != rb => {
                scene.segment(Blend::Alpha, [xa, pk.y(ra)], [xb, pk.y(rb)], 2.0, CRITICAL, true);
            }
            Step::Edge(_) => {}
        }
    }
    let right = (pk.plot.x0 + pk.plot.w) as f32;
    scene.text(
        CRITICAL_NOTE,
        [right, pk.plot.y0 as f32 + 10.0],
        11.0,
        Anchor::Right,
        [CRITICAL[0], CRITICAL[1], CRITICAL[2], 1.0],
    );
}

/// Row axes, labels, stage separators, FLOPS and memory cells, rule glyphs.
fn draw_rows(scene: &mut Scene, t: &Training, pk: &MareyPicker) {
    let p = pk.plot;
    let (x0, x1) = (p.x0 as f32, (p.x0 + p.w) as f32);
    let rate_max = pk.analysis.rate.iter().copied().fold(0.0, f64::max).max(1e-9);
    let mem_max = t.devices.iter().map(|d| d.memory).max().unwrap_or(0).max(1) as f64;
    let label_px = pk.pitch.clamp(0.0, 12.0);
    let mut last_stage = u32::MAX;
    for (r, row) in pk.rows.iter().enumerate() {
        let y = pk.y(r);
        // A collapsed stage's devices are said on a line of their own where the row is tall enough.
        let (label, split, stage, devs) = match *row {
            Row::Device(dv) => {
                (t.devices[dv as usize].name.clone(), None, t.devices[dv as usize].stage, vec![dv as usize])
            }
            Row::Stage(s) => {
                let (name, devices) = pk.stage_label(t, s);
                let label = format!("{name} ({devices})");
                (label, (pk.pitch >= 32.0).then_some((name, devices)), s, pk.stage_devices(t, s).0)
            }
        };
        if stage != last_stage {
            let yb = p.y0 as f32 + r as f32 * pk.pitch;
            if r > 0 {
                scene.segment(Blend::Alpha, [8.0, yb], [x1, yb], 1.0, [0.55, 0.57, 0.62, 0.8], true);
            }
            // A stage of expanded devices gets its name (and the heavy-stage cross) at its top.
            if matches!(row, Row::Device(_)) && pk.pitch >= 14.0 {
                scene.text(&format!("stage {stage}"), [24.0, yb + 9.0], 9.0, Anchor::Left, TEXT);
                if pk.heavy[stage as usize] {
                    cross(scene, [12.0, yb + 6.0], 3.5);
                }
            }
        }
        last_stage = stage;
        scene.segment(Blend::Alpha, [x0, y], [x1, y], 1.0, [0.4, 0.42, 0.47, 0.9], true);
        let drawn = if let Some((name, devices)) = split {
            let (name, devices) = (fit(&name, LABEL_W - 40.0, label_px), fit(&devices, LABEL_W - 46.0, 9.0));
            scene.text(&name, [24.0, y - 2.0], label_px, Anchor::Left, TEXT_DIM);
            scene.text(&devices, [24.0, y + 10.0], 9.0, Anchor::Left, TEXT_DIM);
            format!("{name} ({devices})")
        } else if label_px >= 7.0 {
            let fitted = fit(&label, LABEL_W - 40.0, label_px);
            scene.text(&fitted, [24.0, y + label_px * 0.35], label_px, Anchor::Left, TEXT_DIM);
            fitted
        } else {
            String::new()
        };
        let apart = match *row {
            Row::Device(dv) => pk.apart.get(stage as usize).is_some_and(|a| a.binary_search(&dv).is_ok()),
            Row::Stage(_) => false,
        };
        scene.outline.rows.push(exaviz_render::OutlineRow {
            label: drawn,
            name: label.clone(),
            top: (p.y0 as f32 + r as f32 * pk.pitch) as u32,
            height: pk.pitch.round() as u32,
            apart,
            count: devs.len(),
            kind: if matches!(row, Row::Stage(_)) { "stage" } else { "device" }.into(),
            process: String::new(),
        });
        // The pixel map: FLOPS (or computation time) and peak memory, viridis.
        let n = devs.len().max(1) as f64;
        let rate = devs.iter().map(|&d| pk.analysis.rate[d]).sum::<f64>() / n;
        let mem = devs.iter().map(|&d| t.devices[d].memory as f64).sum::<f64>() / n;
        let h = (pk.pitch * 0.4).clamp(0.5, 8.0);
        let cx = x0 - 58.0;
        scene.rect([cx, y - h], [cx + 26.0, y + h], ColorMap::Viridis.sample((rate / rate_max) as f32), true);
        let mc = if mem > 0.0 { ColorMap::Viridis.sample((mem / mem_max) as f32) } else { [0.3, 0.3, 0.33, 1.0] };
        scene.rect([cx + 28.0, y - h], [cx + 54.0, y + h], mc, true);
        let flagged = match *row {
            Row::Device(dv) => pk.device_findings.contains_key(&dv),
            Row::Stage(s) => !pk.stage_findings[s as usize].is_empty(),
        };
        if flagged {
            cross(scene, [12.0, y], (pk.pitch * 0.4).clamp(2.5, 6.0));
        }
    }
    // The cells' column heads go under the columns: above them the title runs.
    let below = (p.y0 + p.h) as f32 + 12.0;
    scene.text(if t.has_flops { "FLOPS" } else { "busy" }, [x0 - 45.0, below], 9.0, Anchor::Centre, TEXT_DIM);
    scene.text("mem", [x0 - 17.0, below], 9.0, Anchor::Centre, TEXT_DIM);
}

/// The scale of the FLOPS and memory cells left of the rows: a viridis ramp from 0 to the
/// largest device's value, said in words (computation time where the profile has no FLOPs;
/// grey memory cells where it records none), shortened to end before `right`.
fn cell_scale(scene: &mut Scene, t: &Training, pk: &MareyPicker, at: [f32; 2], right: f32) {
    let rate_max = pk.analysis.rate.iter().copied().fold(0.0, f64::max);
    let mem_max = t.devices.iter().map(|d| d.memory).max().unwrap_or(0);
    let rate = if t.has_flops { format!("FLOPS 0-{}", si(rate_max)) } else { format!("busy 0-{}", duration(rate_max)) };
    let mem = if mem_max > 0 {
        format!("mem 0-{:.2} GiB", mem_max as f64 / (1u64 << 30) as f64)
    } else {
        "mem not recorded (grey)".to_string()
    };
    let ramp = 36.0;
    if right - at[0] < ramp + 60.0 {
        return;
    }
    for k in 0..ramp as usize {
        let x = at[0] + k as f32;
        scene.rect([x, at[1] - 9.0], [x + 1.0, at[1] + 1.0], ColorMap::Viridis.sample(k as f32 / (ramp - 1.0)), true);
    }
    let words = fit(&format!("cells: {rate}, {mem}"), right - at[0] - ramp - 6.0, 11.0);
    scene.text(&words, [at[0] + ramp + 6.0, at[1]], 11.0, Anchor::Left, TEXT);
}

/// The rules' red cross.
fn cross(scene: &mut Scene, c: [f32; 2], k: f32) {
    scene.segment(Blend::Alpha, [c[0] - k, c[1] - k], [c[0] + k, c[1] + k], 2.0, ALERT, true);
    scene.segment(Blend::Alpha, [c[0] - k, c[1] + k], [c[0] + k, c[1] - k], 2.0, ALERT, true);
}

/// The trains: each band joined to the same operator (or its send's receive, or the same
/// merged bin) on the next row.
fn draw_trains(scene: &mut Scene, pk: &MareyPicker) {
    let h = (pk.pitch * 0.18).clamp(0.5, 5.0);
    for r in 0..pk.rows.len().saturating_sub(1) {
        let (top, bottom) = (&pk.items[r], &pk.items[r + 1]);
        let mut by_instance: HashMap<u32, usize> = HashMap::default();
        let mut by_bin: HashMap<u32, usize> = HashMap::default();
        for (k, it) in bottom.iter().enumerate() {
            if let Some(b) = it.bin {
                by_bin.insert(b, k);
            } else {
                by_instance.entry(it.instance).or_insert(k);
            }
        }
        let (y0, y1) = (pk.y(r) + h, pk.y(r + 1) - h);
        let same_stage = pk.stage_of[r] == pk.stage_of[r + 1];
        for it in top {
            // Computation joins the same operator; a collective the same one within its stage;
            // a send or receive only its partner.
            let other = match (it.bin, it.class.group()) {
                (Some(b), _) => by_bin.get(&b),
                (None, Group::Computation) => by_instance.get(&it.instance),
                (None, Group::Collective) if same_stage => by_instance.get(&it.instance),
                (None, Group::Send | Group::Recv) if it.pair != u32::MAX => {
                    by_instance.get(&it.pair).filter(|&&k| bottom[k].pair == it.instance)
                }
                _ => None,
            };
            let Some(&k) = other else { continue };
            let o = &bottom[k];
            let c = class_colour(it.class);
            train(
                scene,
                ([pk.x(it.start), y0], [pk.x(it.end).max(pk.x(it.start) + 0.5), y0]),
                ([pk.x(o.start), y1], [pk.x(o.end).max(pk.x(o.start) + 0.5), y1]),
                [c[0], c[1], c[2], 0.3],
            );
        }
    }
}

/// Bands where operators cross their row's axis; a collapsed stage's whiskers.
fn draw_bands(scene: &mut Scene, pk: &MareyPicker) {
    let h = (pk.pitch * 0.18).clamp(0.5, 5.0);
    for (r, items) in pk.items.iter().enumerate() {
        let y = pk.y(r);
        for it in items {
            let c = class_colour(it.class);
            let (xa, xb) = (pk.x(it.start), pk.x(it.end).max(pk.x(it.start) + 0.75));
            if it.count > 1 && it.bin.is_none() {
                scene.segment(Blend::Alpha, [pk.x(it.lo), y], [pk.x(it.hi), y], 1.0, [c[0], c[1], c[2], 0.7], false);
            }
            let alpha = if it.bin.is_some() { 0.75 } else { 1.0 };
            scene.rect([xa, y - h], [xb, y + h], [c[0], c[1], c[2], alpha], false);
        }
    }
}

fn draw_axis_and_legend(scene: &mut Scene, t: &Training, pk: &MareyPicker, o: &MareyOptions) {
    let p = pk.plot;
    let (x0, w, yb) = (p.x0 as f32, p.w as f32, (p.y0 + p.h) as f32);
    let span = pk.w.1 - pk.w.0;
    let unit = if span >= 2e9 {
        (1e9, "s")
    } else if span >= 2e6 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    };
    scene.rect([x0, yb], [x0 + w, yb + 1.0], TEXT_DIM, true);
    for (f, v) in nice_ticks(0.0, span / unit.0, 8) {
        let x = x0 + f * w;
        scene.rect([x - 0.5, yb + 1.0], [x + 0.5, yb + 6.0], TEXT_DIM, true);
        scene.text(&crate::legend::format_value(v), [x, yb + 18.0], 11.0, Anchor::Centre, TEXT_DIM);
    }
    scene.text(
        &format!("time ({}, from the window's start; drag here to zoom)", unit.1),
        [x0 + w / 2.0, yb + 32.0],
        11.0,
        Anchor::Centre,
        TEXT_DIM,
    );
    // Legend: groups, then notes.
    let mut x = 8.0;
    let ly = yb + 52.0;
    for (c, label) in [
        (Class::Forward, "forward"),
        (Class::Backward, "backward"),
        (Class::Compute, "other computation"),
        (Class::AllReduce, "collective"),
        (Class::Send, "send"),
        (Class::Recv, "receive"),
    ] {
        let k = class_colour(c);
        scene.rect([x, ly - 9.0], [x + 12.0, ly + 1.0], [k[0], k[1], k[2], 1.0], true);
        x += 16.0 + scene.text(label, [x + 16.0, ly], 11.0, Anchor::Left, TEXT) + 12.0;
        scene.outline.legend.push(exaviz_render::OutlineEntry { label: label.into(), name: label.into() });
    }
    // In a narrow picture the findings' key and the cells' scale go where there is room.
    let right = scene.width as f32 - 8.0;
    let findings = format!("{} rule findings (hover)", pk.analysis.findings.len());
    if x + 14.0 + exaviz_render::TextAtlas::measure(&findings, 11.0) <= right {
        cross(scene, [x + 4.0, ly - 4.0], 4.0);
        x += 14.0;
        x += scene.text(&findings, [x, ly], 11.0, Anchor::Left, TEXT);
        cell_scale(scene, t, pk, [x + 16.0, ly], right);
    }
    let shifted = pk.analysis.offsets.iter().filter(|&&v| v != 0).count();
    let largest = pk.analysis.offsets.iter().copied().max_by_key(|v| v.abs()).unwrap_or(0);
    let align = match o.align {
        Align::None => "timestamps as recorded".to_string(),
        Align::Stage => format!(
            "aligned within stages on the first all-reduce: {shifted} devices shifted, largest {}",
            duration(largest as f64)
        ),
        Align::Full => format!(
            "aligned on the first all-reduce and send/receive pair: {shifted} devices shifted, largest {}",
            duration(largest as f64)
        ),
    };
    let merged: u32 = pk.items.iter().flatten().filter(|i| i.bin.is_some()).map(|i| i.count).sum();
    let agg = if o.bins == 0 {
        "every operator drawn".to_string()
    } else {
        format!("{} bins: {merged} computation operators merged", o.bins)
    };
    let steps = if t.steps.len() > 1 { format!("  ·  {} steps", t.steps.len()) } else { String::new() };
    let note = format!("{align}  ·  {agg}{steps}  ·  source: {}", t.source);
    scene.text(&fit(&note, scene.width as f32 - 16.0, 11.0), [8.0, ly + 20.0], 11.0, Anchor::Left, TEXT_DIM);
}

impl contract::View for MareyView {
    /// The training model alone: a run whose rows stay on disk draws as one held in memory.
    fn reads_rows(&self) -> bool {
        false
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW | Parts::DEVICES
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW | Parts::TRACK | Parts::TIME_SLICE | Parts::OPERATOR | Parts::DEVICES | Parts::CRITICAL
    }

    fn help(&self) -> &'static [&'static str] {
        &[
            "x: draw the critical path (the work and waits that made the run as long as it is) through the graph, or hide it",
        ]
    }

    /// `x` draws the critical path, or hides it.
    fn key(&self, _d: &Dataset, sel: &Selection, _: Frame, key: &str) -> Option<Selection> {
        (key == "x").then(|| Selection { critical: Some(!sel.critical.unwrap_or(self.opts.critical_path)), ..*sel })
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        training(d).map(|_| ())
    }

    fn time_axis(&self, f: Frame) -> Option<[f32; 4]> {
        let p = plot(f).ok()?;
        Some([p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32])
    }

    fn brushes_at(&self, _d: &Dataset, f: Frame, at: [f32; 2]) -> bool {
        plot(f).is_ok_and(|p| {
            let yb = (p.y0 + p.h) as f32;
            at[0] >= p.x0 as f32 && at[0] <= (p.x0 + p.w) as f32 && at[1] >= yb && at[1] <= yb + 40.0
        })
    }

    fn brush(&self, d: &Dataset, sel: &Selection, f: Frame, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let t = d.training.as_deref()?;
        let p = plot(f).ok()?;
        let a = self.analysis(d, t);
        let w = window(t, &a, &self.opts, sel).ok()?;
        let at = |x: f32| w.0 + (f64::from(x - p.x0 as f32) / f64::from(p.w)).clamp(0.0, 1.0) * (w.1 - w.0);
        let (lo, hi) = (at(from[0].min(to[0])), at(from[0].max(to[0])));
        if hi - lo < 1.0 {
            return None;
        }
        Some(Selection { window_s: Some(((lo - a.span.0) / 1e9, (hi - a.span.0) / 1e9)), ..*sel })
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let t = training(d)?;
        let a = self.analysis(d, t);
        // The path needs the trace's rows: none where they stay on disk.
        let shown = sel.critical.unwrap_or(self.opts.critical_path) && d.out_of_core.is_none();
        let critical = shown.then(|| self.critical_of(d, t));
        let (scene, picker) = marey_scene(d, t, a, &self.opts, sel, f, critical.as_deref(), b)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}

/// `exaviz render --view marey` options.
#[derive(clap::Args, Clone, Debug)]
pub struct MareyArgs {
    /// Outline this operator's bands (by name, as the profile and the HLO module call it:
    /// the strategy view's click selects the same).
    #[arg(long, value_name = "NAME")]
    pub operator: Option<exaviz_model::selection::Search>,
    /// Timestamp alignment: none, stage (each stage on its first all-reduce), full (then
    /// consecutive stages on their first send/receive pair).
    #[arg(long, value_enum, default_value = "full")]
    pub align: Align,
    /// Bins of the visual aggregation across the visible range: computation operators in bins
    /// denser than the mean merge into one band; 0 draws every operator.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub bins: u32,
    /// Stages shown as one row (min, mean and max of their devices): auto (when devices would
    /// get rows under 6 pixels), all, none, or stage numbers such as 0,2.
    #[arg(long, default_value = "auto", value_parser = parse_collapse)]
    pub collapse: Collapse,
    /// Show one training step (from 0).
    #[arg(long)]
    pub step: Option<u32>,
    /// Start of the time window, seconds from the aligned start.
    #[arg(long, requires = "to")]
    pub from: Option<f64>,
    /// End of the time window (see --from).
    #[arg(long, requires = "from")]
    pub to: Option<f64>,
    /// Highlight this device (its index from the top, as a click on its label does).
    #[arg(long)]
    pub device: Option<u32>,
    /// Draw the run's critical path (as `exaviz critical-path` finds it) through the graph:
    /// its work along the devices' axes and its crossings between devices, in magenta (`x` in
    /// the window).
    #[arg(long)]
    pub critical_path: bool,
    /// Rows of collapsed stages: behaviour (the devices that differ from their stage in the
    /// window keep rows of their own, so a straggler among thousands stays seen) or index (a
    /// collapsed stage's row stands for all its devices).
    #[arg(long, value_enum, default_value = "behaviour")]
    pub rows: crate::rows::Grouping,
}

impl contract::Class for MareyView {
    const NAME: &'static str = "marey";
    const ABOUT: &'static str = "Parallel DNN training: the enhanced Marey's graph, devices as time axes grouped by pipeline stage, operators as bands joined across devices, aligned, aggregated, with rule findings (Wei et al., 2024).";
    type Args = MareyArgs;

    fn new(args: &MareyArgs) -> Self {
        let opts = MareyOptions {
            align: args.align,
            bins: args.bins,
            collapse: args.collapse.clone(),
            step: args.step,
            thresholds: Thresholds::default(),
            critical_path: args.critical_path,
            rows: args.rows,
        };
        MareyView::with(opts)
    }

    fn selection(args: &MareyArgs) -> Selection {
        Selection {
            window_s: args.from.zip(args.to),
            track: args.device,
            operator: args.operator,
            ..Selection::default()
        }
    }
}

/// `exaviz metrics --view marey`: the rules' findings and the alignment's offsets.
#[derive(serde::Serialize)]
pub struct MareyMetrics {
    pub devices: usize,
    pub stages: u32,
    /// What the stages came from: "sends", "HLO pairs", "the source", "--stages" or "none".
    pub stages_from: String,
    pub operators: usize,
    pub steps: usize,
    pub source: String,
    pub align: String,
    pub offsets_ns: Vec<(String, i64)>,
    pub findings: Vec<Finding>,
    pub groups_ns: [u64; 4],
}

pub fn metrics(t: &Training, align: Align) -> MareyMetrics {
    let o = MareyOptions { align, ..MareyOptions::default() };
    let a = Analysis::new(t, &o);
    let mut groups = [0u64; 4];
    for i in 0..t.ops.len() {
        let g = match t.ops.class(i).group() {
            Group::Computation => 0,
            Group::Collective => 1,
            Group::Send => 2,
            Group::Recv => 3,
        };
        groups[g] += t.ops.end[i] - t.ops.start[i];
    }
    MareyMetrics {
        devices: t.devices.len(),
        stages: t.stages,
        stages_from: t.stages_from.clone(),
        operators: t.ops.len(),
        steps: t.steps.len(),
        source: t.source.clone(),
        align: format!("{align:?}").to_lowercase(),
        offsets_ns: t.devices.iter().zip(&a.offsets).map(|(d, &o)| (d.name.clone(), o)).collect(),
        findings: a.findings,
        groups_ns: groups,
    }
}

/// Where the title says the stages came from.
fn stages_note(from: &str) -> String {
    match from {
        "" | "none" => "no stages found, see --stages".into(),
        f => format!("stages from {f}"),
    }
}
