//! `exaviz bench-interact`: replays a script of gestures through the code the window runs
//! ([`crate::window::explore`]: the same worker, preview and picking) without a window, and reports per
//! kind of gesture the time to the first frame (the preview, or the tooltip of a hover) and to
//! the complete picture, as p50, p95 and max.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use exaviz_compute::Backend;
use exaviz_model::selection::{Search, Selection};
use exaviz_views::Frame;
use exaviz_views::search;

use crate::window::explore::{Affine, Explorer, Gesture, frame_pixels, frame_scene, overlay_text, pictures_on_device};
use exaviz_render::Rendered;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(help = crate::common::input_help())]
    pub input: String,
    /// Gestures, one a line: `wheel X Y STEPS`, `pan DX DY`, `hover X Y`, `click X Y`,
    /// `brush X0 Y0 X1 Y1` (a drag on a chart's axis), `reset` (window pixels; `#` starts a
    /// comment); in the timeline, `search TEXT` (`/` and Enter), `next` and `previous` (`n`,
    /// `N`). Default: zoom in five steps, pan, hover, click, reset.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Window size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1024x768")]
    pub size: String,
    /// How many times the script runs (after one run that is not timed).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Draw a trace held in memory from its rows at every zoom, without its index (to compare
    /// the two in one run).
    #[arg(long)]
    pub no_index: bool,
    /// Time every compute pass on the GPU with timestamp queries (where the adapter writes
    /// them) and print, per kernel, its passes, their time on the device, the bytes of the
    /// buffers they bind, and the time those bytes take at the device's memory bandwidth (their
    /// speed of light; EXAVIZ_GPU_BANDWIDTH_GBS gives it where the adapter's name does not).
    #[arg(long)]
    pub timings: bool,
    #[command(flatten)]
    pub view: crate::common::ViewArgs,
}

/// The input, with its index unless `--no-index`; the index's size and build time printed.
fn load(args: &Args) -> Result<exaviz_model::dataset::Dataset> {
    let mut dataset = crate::common::load(&args.input)?;
    if args.no_index {
        dataset.index = None;
    }
    if let (Some(index), false) = (&dataset.index, args.json) {
        // Built once more to time it (the load above built it too).
        let started = Instant::now();
        let again = exaviz_model::held_index::index(&dataset);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let mb = again.map_or(0, |i| i.pyramid.bytes()) as f64 / 1e6;
        println!(
            "index of {} rows: {} levels, {mb:.0} MB, built in {ms:.0} ms",
            index.messages + index.intervals,
            index.pyramid.levels.len()
        );
        let started = Instant::now();
        if let Ok(Some(_)) = exaviz_store::sidecar::kept(&args.input, &dataset) {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            println!("the index kept beside the input read back in {ms:.0} ms");
        }
    }
    Ok(dataset)
}

/// One step of a script.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Gesture(Gesture),
    Hover([f32; 2]),
    /// A drag that brushes (a chart's axis), from one point to another.
    Brush([f32; 2], [f32; 2]),
    /// A search typed after `/` and Enter.
    Search(Search),
    /// `n` (true) or `N`: the window moves to the next or previous match.
    Next(bool),
}

impl Step {
    fn kind(&self) -> &'static str {
        match self {
            Step::Gesture(Gesture::Wheel { .. }) => "wheel",
            Step::Gesture(Gesture::Pan { .. }) => "pan",
            Step::Gesture(Gesture::Click { .. }) => "click",
            Step::Gesture(Gesture::Reset) => "reset",
            Step::Gesture(Gesture::Resize { .. }) => "resize",
            Step::Hover(_) => "hover",
            Step::Brush(..) => "brush",
            Step::Search(_) => "search",
            Step::Next(_) => "next",
        }
    }
}

/// The script's steps; an error names the file, the line and what is wrong.
fn parse_script(name: &str, text: &str) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<f32> {
            let w = words.get(i).with_context(|| format!("{name}:{}: '{line}' needs more numbers", k + 1))?;
            w.parse::<f32>()
                .ok()
                .filter(|v| v.is_finite() && v.abs() <= 1e6)
                .with_context(|| format!("{name}:{}: '{w}' is not a number", k + 1))
        };
        let step = match words[0] {
            "wheel" => Step::Gesture(Gesture::Wheel { at: [num(1)?, num(2)?], steps: num(3)? }),
            "pan" => Step::Gesture(Gesture::Pan { by: [num(1)?, num(2)?] }),
            "hover" => Step::Hover([num(1)?, num(2)?]),
            "click" => Step::Gesture(Gesture::Click { at: [num(1)?, num(2)?] }),
            "reset" => Step::Gesture(Gesture::Reset),
            "brush" => Step::Brush([num(1)?, num(2)?], [num(3)?, num(4)?]),
            "search" => {
                let text = line["search".len()..].trim();
                Step::Search(Search::new(text).map_err(|e| anyhow::anyhow!("{name}:{}: {e}", k + 1))?)
            }
            "next" => Step::Next(true),
            "previous" => Step::Next(false),
            w => bail!(
                "{name}:{}: unknown gesture '{w}' (wheel, pan, hover, click, brush, reset, search, next or previous)",
                k + 1
            ),
        };
        steps.push(step);
    }
    if steps.is_empty() {
        bail!("{name}: the script has no gestures");
    }
    Ok(steps)
}

/// The default script for a window of `w x h`.
fn default_script(w: u32, h: u32) -> Vec<Step> {
    let (cx, cy) = (w as f32 * 0.45, h as f32 * 0.5);
    let mut s: Vec<Step> = (0..5).map(|_| Step::Gesture(Gesture::Wheel { at: [cx, cy], steps: 1.0 })).collect();
    s.extend((0..3).map(|_| Step::Gesture(Gesture::Pan { by: [-40.0, 0.0] })));
    s.extend((0..8).map(|k| Step::Hover([cx - 120.0 + 30.0 * k as f32, cy - 60.0 + 15.0 * k as f32])));
    s.push(Step::Gesture(Gesture::Click { at: [cx, cy] }));
    s.push(Step::Gesture(Gesture::Reset));
    s
}

/// Time of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

/// The steps of `--script`, else the default script for a window `w x h`.
fn script_of(args: &Args, (w, h): (u32, u32)) -> Result<Vec<Step>> {
    Ok(match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
            parse_script(&path.display().to_string(), &text)?
        }
        None => default_script(w, h),
    })
}

pub fn run(mut args: Args) -> Result<()> {
    let (w, h) = crate::common::parse_size(&args.size)?;
    args.view.built()?;
    let steps = script_of(&args, (w, h))?;
    let dataset = Arc::new(load(&args)?);
    crate::common::open_against(&mut args.view)?;
    let built = args.view.built()?;
    // Bytes the input took to open from a server (none from a local disk).
    let opened = exaviz_remote::bytes_received();
    let selection = built.selection;
    selection.validate(&dataset).map_err(|e| anyhow::anyhow!("{}: {e}", args.input))?;
    let backend = Arc::new(Backend::new(args.view.backend.into())?);
    time_passes(&backend, args.timings);
    let view: Arc<dyn exaviz_views::View> = Arc::from(built.view);
    view.check(&dataset).map_err(|e| anyhow::anyhow!("{}: {e}", args.input))?;
    let limit = Duration::from_secs(600);
    let (mut first_open, open) = timed(|| {
        // Pictures kept on the GPU device and presented there where a window would do so.
        let mut e = Explorer::start_for(
            pictures_on_device(&backend),
            dataset.clone(),
            view.clone(),
            backend.clone(),
            selection,
            Frame { width: w, height: h },
            Box::new(|| {}),
        );
        let ok = e.wait(limit).is_some();
        (e, ok)
    });
    // What reaching the first picture moved to the GPU: the columns, pipelines' uniforms, the
    // picture's instances.
    let opened_gpu = backend.traffic().0;
    if !first_open.1 {
        bail!("{}: the first picture failed: {}", args.input, first_open.0.error.clone().unwrap_or_default());
    }
    let explorer = &mut first_open.0;
    let mut times: Vec<Measured> = Vec::new();
    let mut prepared = 0usize;
    for run in 0..=args.runs {
        explorer.gesture(Gesture::Reset);
        explorer.select(Selection { search: selection.search, ..explorer.request.selection });
        explorer.wait(limit);
        // The match `next` and `previous` last stepped to.
        let mut search_at = None;
        for step in &steps {
            let received = exaviz_remote::bytes_received();
            let grouping = exaviz_views::rows::grouping_time();
            let moved = backend.traffic();
            let (first, complete) = match *step {
                Step::Hover(at) => {
                    let (_, t) = timed(|| {
                        let mut frame = vec![[0u8; 4]; (w * h) as usize];
                        if let Some(p) = explorer.pick(at) {
                            overlay_text(&mut frame, (w, h), at, &p.title, &p.lines);
                        }
                    });
                    (t, t)
                }
                Step::Gesture(_) | Step::Brush(..) | Step::Search(_) | Step::Next(_) => {
                    let start = Instant::now();
                    let changed = apply(explorer, *step, &mut search_at).with_context(|| args.input.clone())?;
                    if let Some((affine, shown)) = explorer.preview() {
                        present(&backend, shown, affine, (w, h))?;
                    }
                    let first = start.elapsed();
                    if changed {
                        let picture = explorer.wait(limit);
                        if picture.is_some_and(|p| p.prepared_again) {
                            prepared += 1;
                        }
                        if let Some(e) = &explorer.error {
                            bail!("{}: a {} gesture failed: {e}", args.input, step.kind());
                        }
                    }
                    (first, start.elapsed())
                }
            };
            if run == 0 {
                continue;
            }
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let mb = (exaviz_remote::bytes_received() - received) as f64 / 1e6;
            let grouped = ms(exaviz_views::rows::grouping_time() - grouping);
            let (up, down) = backend.traffic();
            let (up, down) = ((up - moved.0) as f64 / 1e6, (down - moved.1) as f64 / 1e6);
            record(&mut times, step.kind(), [ms(first), ms(complete), mb, grouped, up, down]);
        }
    }
    let rows = summed(&mut times);
    let head = Head {
        input: &args.input,
        view: &args.view,
        size: (w, h),
        backend: &backend,
        open,
        prepared,
        opened,
        opened_gpu,
        passes: match (args.timings, &*backend) {
            (true, Backend::Gpu(ctx)) => Some((ctx.pass_timings(), ctx.memory_bandwidth())),
            _ => None,
        },
    };
    report(&head, dataset.summary().messages, &rows, args.json)
}

/// Times the compute passes of `backend` from now on where `on`, or says in a line why none
/// are.
fn time_passes(backend: &Backend, on: bool) {
    if !on {
        return;
    }
    match backend {
        Backend::Gpu(ctx) if !ctx.time_passes() => {
            eprintln!("warning: {} writes no timestamps: --timings times nothing", ctx.describe())
        }
        Backend::Gpu(_) => {}
        Backend::Cpu => eprintln!("warning: --timings times the GPU's passes, and the CPU path runs none"),
    }
}

/// The time the bytes of `p`'s bindings take at `bandwidth` bytes a second, ms.
fn light_ms(p: &exaviz_compute::PassTiming, bandwidth: Option<f64>) -> Option<f64> {
    bandwidth.map(|b| p.bytes as f64 / b * 1e3)
}

/// The compute passes timed on the device (`--timings`) as JSON.
fn passes_json(passes: &[exaviz_compute::PassTiming], bandwidth: Option<f64>) -> serde_json::Value {
    let v: Vec<serde_json::Value> = passes
        .iter()
        .map(|p| {
            serde_json::json!({
                "kernel": p.kernel, "passes": p.passes, "device_ms": p.device_ns as f64 / 1e6,
                "bound_mb": p.bytes as f64 / 1e6, "light_ms": light_ms(p, bandwidth),
            })
        })
        .collect();
    serde_json::json!(v)
}

/// The compute passes timed on the device (`--timings`), beside their speed of light at
/// `bandwidth` bytes a second where known.
fn print_passes(passes: &[exaviz_compute::PassTiming], bandwidth: Option<f64>) {
    let at = bandwidth.map_or_else(
        || "bandwidth unknown: EXAVIZ_GPU_BANDWIDTH_GBS gives it".to_string(),
        |b| format!("speed of light at {:.0} GB/s", b / 1e9),
    );
    println!("GPU passes, every run (timestamps; {at}):");
    println!(
        "{:<32} {:>7} {:>10} {:>9} {:>10} {:>9} {:>8}",
        "kernel", "passes", "device ms", "mean µs", "bound MB", "light ms", "of light"
    );
    for p in passes {
        let device = p.device_ns as f64 / 1e6;
        let light = light_ms(p, bandwidth);
        println!(
            "{:<32} {:>7} {:>10.3} {:>9.1} {:>10.2} {:>9} {:>8}",
            p.kernel,
            p.passes,
            device,
            device * 1e3 / p.passes.max(1) as f64,
            p.bytes as f64 / 1e6,
            light.map_or("-".into(), |l| format!("{l:.3}")),
            light.filter(|_| device > 0.0).map_or("-".into(), |l| format!("{:.1}%", l / device * 100.0)),
        );
    }
    if passes.is_empty() {
        println!("(no compute pass ran)");
    }
}

/// What a window does to show the last picture moved by `affine`: on the device that keeps
/// it, the frame drawn there (nothing read back); else its pixels moved in memory.
fn present(backend: &Backend, shown: &Rendered, affine: Affine, (w, h): (u32, u32)) -> Result<()> {
    match shown {
        Rendered::Device(kept) => {
            let scene = frame_scene(kept, exaviz_views::BACKGROUND, affine, (w, h));
            std::hint::black_box(exaviz_render::render_kept(backend, &scene, exaviz_render::View::default())?);
        }
        Rendered::Host(image) => {
            std::hint::black_box(frame_pixels(image, affine, (w, h)));
        }
    }
    Ok(())
}

/// A kind of gesture, and its first frame times, complete times (ms), megabytes received from
/// a server, time spent grouping rows by behaviour (ms), and megabytes uploaded to and read
/// back from the GPU.
type Measured = (&'static str, [Vec<f64>; 6]);

/// Each kind of gesture's measures as p50, p95 and max.
fn summed(times: &mut [Measured]) -> Vec<Row> {
    times
        .iter_mut()
        .map(|(kind, [first, complete, wire, grouping, upload, read_back])| Row {
            kind,
            count: first.len(),
            first: stats(first),
            complete: stats(complete),
            wire: stats(wire),
            grouping: stats(grouping),
            gpu: [stats(upload), stats(read_back)],
        })
        .collect()
}

/// Adds one gesture's measures (in [`Measured`]'s order) to those of its kind.
fn record(times: &mut Vec<Measured>, kind: &'static str, measures: [f64; 6]) {
    let at = match times.iter().position(|t| t.0 == kind) {
        Some(at) => at,
        None => {
            times.push((kind, Default::default()));
            times.len() - 1
        }
    };
    for (column, v) in times[at].1.iter_mut().zip(measures) {
        column.push(v);
    }
}

/// Makes `step` (not a hover) in `explorer`: whether the selection or the picture changed.
/// `search_at` is the match `next` and `previous` last stepped to.
fn apply(explorer: &mut Explorer, step: Step, search_at: &mut Option<search::At>) -> Result<bool> {
    let before = explorer.request.selection;
    Ok(match step {
        Step::Gesture(g) => explorer.gesture(g),
        Step::Brush(a, b) => explorer.brush(a, b).is_some_and(|next| next != before),
        Step::Search(text) => {
            *search_at = None;
            explorer.select(Selection { search: Some(text), found: None, ..before });
            explorer.request.selection != before
        }
        Step::Next(forward) => {
            let text = before.search.context("a next or previous step needs a search step before it")?;
            let dataset = explorer.dataset.clone();
            let o = search::step(&dataset, &text, *search_at, forward).map_err(|e| anyhow::anyhow!(e))?;
            *search_at = Some(o.at());
            explorer.select(search::select(&dataset, &before, &o));
            explorer.request.selection != before
        }
        Step::Hover(_) => false,
    })
}

/// p50, p95 and max.
type Stats = (f64, f64, f64);

fn stats(v: &mut [f64]) -> Stats {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), v[v.len() - 1])
}

/// Times of one kind of gesture.
struct Row {
    kind: &'static str,
    count: usize,
    first: Stats,
    complete: Stats,
    /// Megabytes received from a server.
    wire: Stats,
    /// Milliseconds spent grouping rows by behaviour (none where the view groups none).
    grouping: Stats,
    /// Megabytes uploaded to the GPU and read back from it (none on the CPU path).
    gpu: [Stats; 2],
}

/// What a report names above its rows.
struct Head<'a> {
    input: &'a str,
    view: &'a crate::common::ViewArgs,
    size: (u32, u32),
    backend: &'a Backend,
    open: Duration,
    prepared: usize,
    /// Bytes received from a server to open the input.
    opened: u64,
    /// Bytes uploaded to the GPU up to the first picture.
    opened_gpu: u64,
    /// With `--timings`, the compute passes timed and the device's memory bandwidth.
    passes: Option<(Vec<exaviz_compute::PassTiming>, Option<f64>)>,
}

fn report(head: &Head, messages: usize, rows: &[Row], json: bool) -> Result<()> {
    let (w, h) = head.size;
    let view = &head.view.view;
    if json {
        let ms = |s: Stats| serde_json::json!({ "p50": s.0, "p95": s.1, "max": s.2 });
        let gestures: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "gesture": r.kind, "count": r.count, "first_frame_ms": ms(r.first), "complete_ms": ms(r.complete),
                    "wire_mb": ms(r.wire), "grouping_ms": ms(r.grouping),
                    "gpu_upload_mb": ms(r.gpu[0]), "gpu_readback_mb": ms(r.gpu[1]),
                })
            })
            .collect();
        let v = serde_json::json!({
            "input": head.input, "view": view, "size": [w, h], "backend": head.backend.describe(),
            "messages": messages, "open_ms": head.open.as_secs_f64() * 1e3, "prepares": head.prepared,
            "opened_mb": head.opened as f64 / 1e6, "opened_gpu_mb": head.opened_gpu as f64 / 1e6,
            "pictures_on_device": pictures_on_device(head.backend), "gestures": gestures,
            "gpu_passes": head.passes.as_ref().map(|(p, b)| passes_json(p, *b)),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{} · {view} view · {w}x{h} · {} · {messages} messages · first picture {:.0} ms · {} prepares",
        head.input,
        head.backend.describe(),
        head.open.as_secs_f64() * 1e3,
        head.prepared
    );
    let remote = exaviz_remote::is_remote(head.input);
    if remote {
        println!("opened from the server: {:.2} MB received", head.opened as f64 / 1e6);
    }
    let wire = if remote { format!(" {:>22}", "wire MB p50/p95/max") } else { String::new() };
    // Grouping's column only where some gesture grouped rows.
    let grouped = rows.iter().any(|r| r.grouping.2 > 0.0);
    let grouping = if grouped { format!(" {:>26}", "grouping ms p50/p95/max") } else { String::new() };
    let gpu = head.backend.is_gpu();
    if gpu {
        println!("to the first picture: {:.2} MB uploaded to the GPU", head.opened_gpu as f64 / 1e6);
        println!(
            "{}",
            if pictures_on_device(head.backend) {
                "pictures kept on the device and presented there, as a window sharing it presents them"
            } else {
                "pictures read back, as a window whose worker has a device of its own shows them (EXAVIZ_WORKER_DEVICE=shared keeps them)"
            }
        );
    }
    let moved =
        if gpu { format!(" {:>24} {:>24}", "GPU up MB p50/p95/max", "GPU back MB p50/p95/max") } else { String::new() };
    println!(
        "{:<8} {:>6} {:>26} {:>26}{wire}{grouping}{moved}",
        "gesture", "count", "first frame ms p50/p95/max", "complete ms p50/p95/max"
    );
    let cell = |s: Stats| format!("{:.1}/{:.1}/{:.1}", s.0, s.1, s.2);
    for r in rows {
        let wire = if remote {
            format!(" {:>22}", format!("{:.3}/{:.3}/{:.3}", r.wire.0, r.wire.1, r.wire.2))
        } else {
            String::new()
        };
        let grouping = if grouped { format!(" {:>26}", cell(r.grouping)) } else { String::new() };
        let mb = |s: Stats| format!("{:.3}/{:.3}/{:.3}", s.0, s.1, s.2);
        let moved = if gpu { format!(" {:>24} {:>24}", mb(r.gpu[0]), mb(r.gpu[1])) } else { String::new() };
        println!("{:<8} {:>6} {:>26} {:>26}{wire}{grouping}{moved}", r.kind, r.count, cell(r.first), cell(r.complete));
    }
    if let Some((passes, bandwidth)) = &head.passes {
        print_passes(passes, *bandwidth);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_parse_and_bad_lines_name_the_line() {
        let s = parse_script("s.txt", "wheel 10 20 1 # in\n\npan -5 0\nhover 1 2\nclick 3 4\nreset\nbrush 1 2 3 4\n")
            .unwrap();
        assert_eq!(s.len(), 6);
        assert_eq!(s[5], Step::Brush([1.0, 2.0], [3.0, 4.0]));
        assert_eq!(s[0], Step::Gesture(Gesture::Wheel { at: [10.0, 20.0], steps: 1.0 }));
        assert_eq!(s[2], Step::Hover([1.0, 2.0]));
        let err = |t: &str| parse_script("s.txt", t).unwrap_err().to_string();
        assert_eq!(
            err("reset\nzoom 1"),
            "s.txt:2: unknown gesture 'zoom' (wheel, pan, hover, click, brush, reset, search, next or previous)"
        );
        let s = parse_script("s.txt", "search MPI_Recv  # the receives\nnext\nprevious\n").unwrap();
        assert_eq!(s[0], Step::Search(Search::new("MPI_Recv").unwrap()));
        assert_eq!(s[1..], [Step::Next(true), Step::Next(false)]);
        assert_eq!(err("search   "), "s.txt:1: the search text is empty");
        assert_eq!(err("pan 1"), "s.txt:1: 'pan 1' needs more numbers");
        assert_eq!(err("pan 1 NaN"), "s.txt:1: 'NaN' is not a number");
        assert_eq!(err("# nothing"), "s.txt: the script has no gestures");
    }
}
