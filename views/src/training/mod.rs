//! The `training` view, the training overview (Wei et al., 2024, Fig. 4 A): per training step the mean time a device
//! spends computing, communicating and waiting, as stacked bars; below, the same for every
//! device in one step. Clicking a step selects its time window, which the Marey view then
//! shows (`exaviz render --view marey --step K` does the same headless).

use exaviz_analysis::training::breakdown_steps;
use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_model::training::Training;
use exaviz_model::units::duration;
use exaviz_render::{Anchor, Scene};

use crate::contract;
use crate::contract::{Drawn, Frame, Pick, Picker, Prepared};
use crate::plot::{Plot, axes, fit, nice_ticks};
use crate::run::training;
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

const PARTS: [(&str, [f32; 4]); 3] = [
    ("computation", [0.0, 0.447, 0.698, 1.0]),
    ("communication", [0.902, 0.624, 0.0, 1.0]),
    ("waiting", [0.45, 0.45, 0.48, 1.0]),
];

pub struct TrainingView {
    pub step: Option<u32>,
}

struct OverviewPicker {
    top: Plot,
    bottom: Plot,
    /// Per step: [computation, communication, waiting] mean over devices.
    steps: Vec<[f64; 3]>,
    /// Per device in the chosen step.
    devices: Vec<[u64; 3]>,
    chosen: usize,
    /// Step windows as the Marey view selects them (seconds from the first operator).
    windows: Vec<(f64, f64)>,
}

fn unit(max: f64) -> (f64, &'static str) {
    if max >= 2e9 {
        (1e9, "s")
    } else if max >= 2e6 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    }
}

/// Stacked vertical bars: `values[k]` in slot `k` of `n` across `p`.
fn bars(scene: &mut Scene, p: Plot, values: &[[f64; 3]], max: f64, highlight: Option<usize>) {
    let n = values.len().max(1) as f32;
    let slot = p.w as f32 / n;
    for (k, v) in values.iter().enumerate() {
        let x0 = p.x0 as f32 + k as f32 * slot + if slot > 4.0 { slot * 0.15 } else { 0.0 };
        let x1 = (p.x0 as f32 + (k + 1) as f32 * slot - if slot > 4.0 { slot * 0.15 } else { 0.0 }).max(x0 + 0.5);
        let mut y = (p.y0 + p.h) as f32;
        for (part, &val) in PARTS.iter().zip(v) {
            let h = (val / max.max(1.0)) as f32 * p.h as f32;
            scene.rect([x0, y - h], [x1, y], part.1, true);
            y -= h;
        }
        if highlight == Some(k) {
            scene.rect([x0, p.y0 as f32], [x1, p.y0 as f32 + 3.0], TEXT, true);
        }
    }
}

fn overview(
    d: &Dataset,
    t: &Training,
    step: Option<u32>,
    sel: &Selection,
    f: Frame,
) -> Result<(Scene, OverviewPicker), ViewError> {
    let too_small =
        || ViewError::Unsupported(format!("picture {}x{} too small for the training overview", f.width, f.height));
    let half = f.height / 2;
    let top = Plot::inside(f.width, half, [80, 44, 20, 40]).ok_or_else(too_small)?;
    let mut bottom = Plot::inside(f.width, f.height - half, [80, 30, 20, 70]).ok_or_else(too_small)?;
    bottom.y0 += half;
    if t.steps.is_empty() {
        return Err(ViewError::Unsupported("the trace has no training steps".into()));
    }
    let spans: Vec<(u64, u64)> = t.steps.iter().map(|s| (s.start, s.end.max(s.start + 1))).collect();
    let zero = vec![0i64; t.devices.len()];
    let per = breakdown_steps(t, &zero, &spans);
    let n = t.devices.len().max(1) as f64;
    let steps: Vec<[f64; 3]> = per
        .iter()
        .map(|devs| {
            let mut m = [0.0; 3];
            for v in devs {
                for k in 0..3 {
                    m[k] += v[k] as f64 / n;
                }
            }
            m
        })
        .collect();
    // Windows in the Marey view's time: seconds from its (fully aligned) start, padded by 2%.
    let off = exaviz_analysis::training::offsets(t, exaviz_analysis::training::Align::Full);
    let origin = (0..t.devices.len())
        .filter_map(|d| t.ops_of(d).next().map(|i| t.ops.start[i] as f64 + off[d] as f64))
        .fold(f64::MAX, f64::min);
    let windows: Vec<(f64, f64)> = spans
        .iter()
        .map(|&(a, b)| {
            let pad = (b - a) as f64 * 0.02;
            (((a as f64 - pad - origin) / 1e9).max(0.0), (b as f64 + pad - origin) / 1e9)
        })
        .collect();
    // The step shown below: the option's, else the one holding the selected window's middle.
    let chosen = match (step, sel.window_s) {
        (Some(k), _) => {
            if k as usize >= t.steps.len() {
                return Err(ViewError::Unsupported(format!(
                    "step {k} does not exist (the trace has {} steps, from 0)",
                    t.steps.len()
                )));
            }
            k as usize
        }
        (None, Some((a, b))) => windows.iter().position(|w| w.0 <= (a + b) / 2.0 && (a + b) / 2.0 <= w.1).unwrap_or(0),
        (None, None) => 0,
    };
    let devices = per[chosen].clone();
    let mut scene = Scene::new(f.width, f.height, BACKGROUND);
    let title = format!(
        "Training overview (Wei et al., 2024): {} steps on {} devices  ·  {}",
        t.steps.len(),
        t.devices.len(),
        crate::title_name(d)
    );
    scene.text(&fit(&title, f.width as f32 - 16.0, 13.0), [8.0, 20.0], 13.0, Anchor::Left, TEXT);
    let max_step = steps.iter().map(|v| v.iter().sum::<f64>()).fold(0.0, f64::max);
    let (u, name) = unit(max_step);
    let yt: Vec<(f32, String)> =
        nice_ticks(0.0, max_step / u, 4).into_iter().map(|(p, v)| (1.0 - p, crate::legend::format_value(v))).collect();
    let every = (t.steps.len() / 12).max(1);
    let xt: Vec<(f32, String)> = (0..t.steps.len())
        .step_by(every)
        .map(|k| ((k as f32 + 0.5) / t.steps.len() as f32, t.steps[k].label.trim_start_matches("step ").to_string()))
        .collect();
    bars(&mut scene, top, &steps, max_step, Some(chosen));
    axes(
        &mut scene,
        top,
        &xt,
        &yt,
        "training step (click one to open it in the Marey view)",
        &format!("mean per device ({name})"),
    );
    device_bars(&mut scene, t, bottom, &devices, chosen, spans[chosen]);
    let mut x = 8.0;
    let ly = f.height as f32 - 12.0;
    for (label, c) in PARTS {
        scene.rect([x, ly - 9.0], [x + 12.0, ly + 1.0], c, true);
        x += 16.0 + scene.text(label, [x + 16.0, ly], 11.0, Anchor::Left, TEXT) + 14.0;
    }
    scene.text("waiting: the step's time covered by no operator", [x, ly], 11.0, Anchor::Left, TEXT_DIM);
    Ok((scene, OverviewPicker { top, bottom, steps, devices, chosen, windows }))
}

/// The lower chart: every device in the chosen step.
fn device_bars(scene: &mut Scene, t: &Training, bottom: Plot, devices: &[[u64; 3]], chosen: usize, span: (u64, u64)) {
    let max_dev = devices.iter().map(|v| v.iter().sum::<u64>()).max().unwrap_or(0) as f64;
    let (u, name) = unit(max_dev);
    let dv: Vec<[f64; 3]> = devices.iter().map(|v| [v[0] as f64, v[1] as f64, v[2] as f64]).collect();
    bars(scene, bottom, &dv, max_dev, None);
    let yt: Vec<(f32, String)> =
        nice_ticks(0.0, max_dev / u, 4).into_iter().map(|(p, v)| (1.0 - p, crate::legend::format_value(v))).collect();
    let every = (t.devices.len() / 16).max(1);
    let xt: Vec<(f32, String)> = (0..t.devices.len())
        .step_by(every)
        .map(|k| ((k as f32 + 0.5) / t.devices.len() as f32, t.devices[k].rank.to_string()))
        .collect();
    axes(
        scene,
        bottom,
        &xt,
        &yt,
        &format!("device rank, {} ({})", t.steps[chosen].label, duration((span.1 - span.0) as f64)),
        name,
    );
}

fn inside(p: &Plot, at: [f32; 2]) -> Option<f32> {
    let (x, y) = (at[0] - p.x0 as f32, at[1] - p.y0 as f32);
    (x >= 0.0 && y >= 0.0 && x < p.w as f32 && y < p.h as f32).then(|| x / p.w as f32)
}

fn lines(v: [f64; 3]) -> Vec<String> {
    let total: f64 = v.iter().sum::<f64>().max(1.0);
    PARTS.iter().zip(v).map(|((l, _), x)| format!("{l}: {} ({:.0}%)", duration(x), 100.0 * x / total)).collect()
}

impl Picker for OverviewPicker {
    fn pick(&self, d: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let t = d.training.as_deref()?;
        if let Some(fx) = inside(&self.top, at) {
            let k = ((fx * self.steps.len() as f32) as usize).min(self.steps.len() - 1);
            let mut l = vec!["mean per device:".to_string()];
            l.extend(lines(self.steps[k]));
            l.push(format!("click: select it (the Marey view shows it; headless: --view marey --step {k})"));
            let sel = Selection { window_s: Some(self.windows[k]), ..Selection::default() };
            return Some(Pick::new(t.steps[k].label.clone(), l).with_click(Parts::WINDOW, sel));
        }
        let fx = inside(&self.bottom, at)?;
        let k = ((fx * self.devices.len() as f32) as usize).min(self.devices.len() - 1);
        let v = self.devices[k];
        let mut l = vec![format!("in {}", t.steps[self.chosen].label)];
        l.extend(lines([v[0] as f64, v[1] as f64, v[2] as f64]));
        let sel = Selection { track: Some(k as u32), ..Selection::default() };
        Some(Pick::new(t.devices[k].name.clone(), l).with_click(Parts::TRACK, sel))
    }
}

impl contract::View for TrainingView {
    /// The training model alone: a run whose rows stay on disk draws as one held in memory.
    fn reads_rows(&self) -> bool {
        false
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW | Parts::TRACK
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        training(d).map(|_| ())
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, _b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let t = training(d)?;
        let (scene, picker) = overview(d, t, self.step, sel, f)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}

/// `exaviz render --view training` options.
#[derive(clap::Args, Clone, Debug)]
pub struct TrainingArgs {
    /// The step whose devices the lower chart shows (from 0; default: the selected or first).
    #[arg(long)]
    pub step: Option<u32>,
}

impl contract::Class for TrainingView {
    const NAME: &'static str = "training";
    const ABOUT: &'static str = "Parallel DNN training overview: per step and device, computation, communication and waiting as stacked bars; a click opens a step in the Marey view (Wei et al., 2024).";
    type Args = TrainingArgs;

    fn new(args: &TrainingArgs) -> Self {
        TrainingView { step: args.step }
    }
}
