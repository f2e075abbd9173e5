//! `--view diff`: what changed from one run to another (`--against B`, opened by the caller and
//! handed over with [`View::compare_with`]). Left, the largest changes as bars either side of zero (rows' work,
//! regions, collectives; red slower in B, blue faster, faint where the change lies within the
//! runs' step-to-step variation); right, B − A bytes per pair of rows as a matrix on a
//! diverging, colour-blind-safe map (or, `--right paths`, the call paths as a differential
//! flame graph); below, where the picture is tall enough, the two runs'
//! timelines aligned at their starts under one zoom (the wheel and a drag zoom and pan both),
//! or, for two training runs, their enhanced Marey graphs (Wei et al., 2024) of the same step
//! (`--step`, else the step whose length changed most), each from the step's start, on one
//! time scale and one zoom.
//! Hover gives both runs' values. A click on a change selects it in every panel: a region's or
//! collective's bar finds it in both timelines; a row's bar frames that row in both timelines
//! (B's row matched as `exaviz diff` matches them) and in the matrix; a cell of the matrix
//! highlights the pair's messages in both timelines. What is selected is framed where it is
//! drawn; a second click clears it. The numbers are `exaviz diff`'s ([`exaviz_analysis::diff`]), computed
//! once per pair of runs.

use std::collections::HashMap;
use std::sync::Arc;

use exaviz_analysis::diff::{Change, Diff, Options};
use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Area;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Anchor, ColorMap, Scale, Scene};

use crate::contract::{Class, Drawn, Frame, Pick, Picker, Prepared, View};
use crate::marey::{MareyOptions, MareyView};
use crate::plot::{fit, titles};
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError, legend};

/// Rows and columns of the matrix at most (rows beyond are summed into blocks).
const CELLS: usize = 64;

/// Pictures at least this tall show the two timelines under the charts.
const TIMELINES_FROM: u32 = 600;

/// Which pair of runs a comparison was made for.
type PairKey = (String, usize, usize, String, usize, usize);

fn pair_key(a: &Dataset, b: &Dataset) -> PairKey {
    let (x, y) = (&a.trace, &b.trace);
    (
        a.name.clone(),
        x.messages.source.len(),
        x.intervals.start.len(),
        b.name.clone(),
        y.messages.source.len(),
        y.intervals.start.len(),
    )
}

/// A comparison and how the rows of the two runs match, so that a row or pair selected in A's
/// terms is shown in B's timeline too.
struct Compared {
    diff: Diff,
    /// A's location of each of A's names.
    a_index: HashMap<String, u32>,
    /// B's location for each of A's ([`exaviz_analysis::diff::match_locations`]).
    to_b: Vec<Option<u32>>,
    /// The matrix's cells.
    cells: Option<Cells>,
    /// The longer run's length, seconds: the timelines' window where none is chosen.
    longer_s: f64,
}

impl Compared {
    /// `sel` (in A's terms) for B's timeline: its row and pair by B's locations, none where a
    /// row has no match in B.
    fn for_b(&self, sel: &Selection) -> Selection {
        let b = |l: u32| self.to_b.get(l as usize).copied().flatten();
        Selection {
            area: sel.area.and_then(|a| Some(Area { first: b(a.first)?, last: b(a.last)?, ..a })),
            pair: sel.pair.and_then(|(s, r)| b(s).zip(b(r))),
            ..*sel
        }
    }
}

/// The selection of a row (location `l` of A) chosen in the bars: the area of its whole run,
/// which a timeline outlines.
fn row_area(l: u32) -> Selection {
    Selection { area: Some(Area { from: 0, to: u64::MAX, first: l, last: l }), ..Selection::default() }
}

/// The row of A a selection chooses: an area of one row.
fn chosen_row(sel: &Selection) -> Option<u32> {
    sel.area.filter(|a| a.first == a.last).map(|a| a.first)
}

/// The right-hand chart of `--view diff`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Right {
    Matrix,
    Paths,
}

/// `--view diff`.
pub struct DiffView {
    against: Option<String>,
    /// The run `against` names, once the caller has opened it.
    b: std::sync::RwLock<Option<Arc<Dataset>>>,
    bars: usize,
    right: Option<Right>,
    /// The comparison of the last pair of runs.
    diff: crate::kept::Kept<PairKey, Result<Arc<Compared>, String>>,
    /// The two runs' timelines (each keeps its own index).
    lines: [crate::timeline::TimelineView; 2],
    /// Training runs: the step their Marey graphs show (`--step`; else the step that changed
    /// most).
    step: Option<u32>,
    /// The two training runs' Marey graphs of a step, kept per step (each keeps its analysis).
    mareys: crate::kept::Kept<u32, Arc<[MareyView; 2]>>,
    /// Whether the last picture drew Marey graphs rather than timelines (their time axis differs).
    drew_mareys: std::sync::atomic::AtomicBool,
}

#[derive(clap::Args, Clone, Debug)]
pub struct DiffArgs {
    /// The run to compare with (B; the input is A): any input exaviz reads.
    #[arg(long, value_name = "INPUT")]
    pub against: Option<String>,
    /// Changes drawn as bars.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub bars: u32,
    /// The right-hand chart: the B − A bytes matrix, or the call paths as a differential flame
    /// graph (where rows nest). Default: the matrix where the runs have messages, else the
    /// paths.
    #[arg(long, value_enum)]
    pub right: Option<Right>,
    /// Start of the timelines' window, seconds since each run's start; for two training runs,
    /// since the Marey graphs' step's start in each (the comparison is of the whole runs).
    #[arg(long, requires = "to")]
    pub from: Option<f64>,
    /// End of the timelines' window (see --from).
    #[arg(long, requires = "from")]
    pub to: Option<f64>,
    /// Two training runs: the step (from 0) their Marey graphs show, in place of the timelines
    /// (default: the step whose length changed most).
    #[arg(long)]
    pub step: Option<u32>,
}

impl DiffView {
    /// The run compared with, where the caller has opened it.
    fn opened(&self) -> Option<Arc<Dataset>> {
        self.b.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Class for DiffView {
    const NAME: &'static str = "diff";
    const ABOUT: &'static str =
        "What changed from this run to another (--against B): the largest changes and B − A bytes per pair of rows.";
    type Args = DiffArgs;

    fn new(args: &DiffArgs) -> Self {
        DiffView {
            against: args.against.clone(),
            b: Default::default(),
            bars: args.bars as usize,
            right: args.right,
            diff: Default::default(),
            lines: Default::default(),
            step: args.step,
            mareys: Default::default(),
            drew_mareys: Default::default(),
        }
    }

    fn selection(args: &DiffArgs) -> Selection {
        Selection { window_s: args.from.zip(args.to), ..Selection::default() }
    }
}

/// Straight RGBA of a change of sign that of `change` and strength `k` in `[0, 1]` on the
/// diverging map: red where B has more, blue where it has less.
fn tone(change: f64, k: f32) -> [f32; 4] {
    let t = if change >= 0.0 { 0.5 + 0.5 * k } else { 0.5 - 0.5 * k };
    ColorMap::RdBu.sample(t)
}

fn seconds(s: f64) -> String {
    let a = s.abs();
    let v = match a {
        v if v >= 1.0 => format!("{v:.3} s"),
        v if v >= 1e-3 => format!("{:.3} ms", v * 1e3),
        v => format!("{:.3} µs", v * 1e6),
    };
    if s < 0.0 { format!("-{v}") } else { v }
}

fn signed(s: f64) -> String {
    if s >= 0.0 { format!("+{}", seconds(s)) } else { seconds(s) }
}

fn lines_of(c: &Change) -> Vec<String> {
    let mut v = vec![
        format!("A: {} in {} ({} entries)", seconds(c.a.total_s), c.table, c.a.count),
        format!("B: {} ({} entries)", seconds(c.b.total_s), c.b.count),
        format!(
            "change {} ({})",
            signed(c.change_s),
            if c.relative.is_finite() { format!("{:+.1}%", 100.0 * c.relative) } else { "new in B".into() }
        ),
    ];
    v.push(
        match c.stands_out {
            Some(true) => "beyond the step-to-step variation",
            Some(false) => "within the step-to-step variation",
            None => "too few steps to tell",
        }
        .into(),
    );
    for p in c.locations.iter().take(3) {
        v.push(format!("  {} {}", p.name, signed(p.change_s)));
    }
    v
}

/// A run's timeline placed in the picture: its top, height, the prepared picture and its run.
struct Line {
    top: f32,
    height: f32,
    prepared: Box<dyn Prepared>,
    run: Option<Arc<Dataset>>,
}

/// What a click on a bar or cell selects: a region (SEARCH), a row of A (AREA, its whole run)
/// or a pair of A's rows (PAIR).
type Click = (Parts, Selection);

/// A bar or a cell: where it is, its tooltip's title and lines, and what a click on it selects.
type Spot = ([f32; 4], String, Vec<String>, Option<Click>);

/// What is under the pointer: a bar, a cell or a timeline's row.
struct Under {
    bars: Vec<Spot>,
    cells: Vec<Spot>,
    lines: Vec<Line>,
}

impl Picker for Under {
    fn pick(&self, d: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let inside = |r: &[f32; 4]| at[0] >= r[0] && at[0] < r[2] && at[1] >= r[1] && at[1] < r[3];
        if let Some((_, t, l, click)) = self.bars.iter().chain(&self.cells).find(|(r, ..)| inside(r)) {
            let pick = Pick::new(t.clone(), l.clone());
            return Some(match click {
                Some((parts, sel)) => pick.with_click(*parts, *sel),
                None => pick,
            });
        }
        let line = self.lines.iter().find(|l| at[1] >= l.top && at[1] < l.top + l.height)?;
        let run = line.run.as_deref().unwrap_or(d);
        line.prepared.pick(run, [at[0], at[1] - line.top]).map(|mut p| {
            p.click = None;
            p
        })
    }
}

/// Where the timelines go in a picture of `f`: the top of the first and each one's height.
fn lines_at(f: Frame) -> Option<(f32, f32)> {
    (f.height >= TIMELINES_FROM).then(|| {
        let top = (f.height as f32 * 0.5).round();
        (top, ((f.height as f32 - top) / 2.0).floor())
    })
}

impl View for DiffView {
    fn depends_on(&self) -> Parts {
        Parts::WINDOW | Parts::SEARCH | Parts::AREA | Parts::PAIR
    }

    fn time_axis(&self, f: Frame) -> Option<[f32; 4]> {
        let (top, h) = lines_at(f)?;
        let pane = Frame { width: f.width, height: h as u32 };
        let [x0, y0, x1, y1] = if self.drew_mareys.load(std::sync::atomic::Ordering::Relaxed) {
            MareyView::with(MareyOptions::default()).time_axis(pane)?
        } else {
            let p = crate::timeline::plot_rect(f.width, h as u32)?;
            [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32]
        };
        Some([x0, top + y0, x1, top + h + y1])
    }

    /// The view takes each run as it is: the comparison reads a store's pyramid or a trace's
    /// rows itself ([`exaviz_analysis::diff::diff_asked`]), and the timelines go through
    /// [`crate::contract::prepare`] each.
    fn reads_rows(&self) -> bool {
        false
    }

    fn reads_index(&self, _: &exaviz_model::dataset::OutOfCore) -> bool {
        false
    }

    fn against(&self) -> Option<&str> {
        self.against.as_deref()
    }

    fn compare_with(&self, other: Arc<Dataset>) {
        *self.b.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(other);
    }

    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        if self.against.is_none() {
            return Err(ViewError::Unsupported("the diff view compares with another run: give --against B".into()));
        }
        if d.trace.intervals.start.is_empty() && d.trace.messages.source.is_empty() && d.out_of_core.is_none() {
            return Err(ViewError::Unsupported("the diff view needs a trace of intervals or messages".into()));
        }
        Ok(())
    }

    /// The timelines' home; for two training runs, the step from its start to the longer run's
    /// end of it.
    fn home(&self, d: &Dataset) -> Option<(f64, f64)> {
        match self.opened().and_then(|b| self.steps_of(d, &b)) {
            Some(s) => Some((0.0, s.length_s)),
            None => self.lines[0].home(d),
        }
    }

    fn prepare(
        &self,
        d: &Dataset,
        sel: &Selection,
        f: Frame,
        backend: &Backend,
    ) -> Result<Box<dyn Prepared>, ViewError> {
        self.check(d)?;
        let b = self.opened().ok_or_else(|| {
            ViewError::Unsupported(format!("--against {}: not opened", self.against.as_deref().unwrap_or("")))
        })?;
        let b = &b;
        let made = crate::kept::kept(&self.diff, pair_key(d, b), || {
            let diff = exaviz_analysis::diff::diff_asked(d, b, None, None, &Options { top: self.bars, steps: None })?;
            let names = &d.trace.locations.name;
            let a_index = names.iter().enumerate().map(|(k, n)| (n.clone(), k as u32)).collect();
            let to_b = exaviz_analysis::diff::match_locations(&d.trace, &b.trace).0;
            let cells = cells_of(&diff);
            let length = |x: &Dataset| {
                let span = x.out_of_core.as_ref().map(|o| o.span).or_else(|| x.trace.span()).unwrap_or((0, 0));
                (span.1 - span.0) as f64 / x.trace.ticks_per_second.max(1) as f64
            };
            let longer_s = length(d).max(length(b));
            Ok(Arc::new(Compared { diff, a_index, to_b, cells, longer_s }))
        });
        let compared = made.map_err(ViewError::Unsupported)?;
        let charts = lines_at(f).map_or(f.height, |(top, _)| top as u32);
        let (ta, tb) = (crate::title_name(d), crate::title_name(b));
        let mut drawn = draw(&compared, &ta, &tb, sel, Frame { width: f.width, height: charts }, self.right);
        if let Some((top, h)) = lines_at(f) {
            let mut scene = Scene::new(f.width, f.height, BACKGROUND);
            scene.place(&drawn.scene, [0.0, 0.0]);
            let pane = Frame { width: f.width, height: h as u32 };
            let training = d.training.is_some() && b.training.is_some();
            self.drew_mareys.store(training, std::sync::atomic::Ordering::Relaxed);
            let panes = if training {
                self.mareys_of(d, b, sel, pane, backend)?
            } else {
                self.timelines_of(&compared, d, b, sel, pane, backend)?
            };
            for (k, (run, other, prepared, sel)) in panes.into_iter().enumerate() {
                let at = top + k as f32 * h;
                scene.place(&prepared.draw(run, &sel), [0.0, at]);
                drawn.picker.lines.push(Line { top: at, height: h, prepared, run: other });
            }
            drawn.scene = scene;
        }
        Ok(Box::new(drawn))
    }
}

/// A run's picture under the charts: the run, itself where it is B, the picture and its selection.
type Pane<'a> = (&'a Dataset, Option<Arc<Dataset>>, Box<dyn Prepared>, Selection);

impl DiffView {
    /// The two runs' timelines on one time scale (the window, else the longer run's length from
    /// their starts), each with the selection in its run's rows.
    fn timelines_of<'a>(
        &self,
        compared: &Compared,
        d: &'a Dataset,
        b: &'a Arc<Dataset>,
        sel: &Selection,
        pane: Frame,
        backend: &Backend,
    ) -> Result<[Pane<'a>; 2], ViewError> {
        let sel = Selection { window_s: sel.window_s.or(Some((0.0, compared.longer_s))), ..*sel };
        let [la, lb] = &self.lines;
        both_panes([la, lb], d, b, [sel, compared.for_b(&sel)], pane, backend)
    }

    /// Two training runs' Marey graphs (Wei et al., 2024) of the same step (or the window, from
    /// each run's aligned start), the region chosen in the bars outlined as an operator in both.
    fn mareys_of<'a>(
        &self,
        d: &'a Dataset,
        b: &'a Arc<Dataset>,
        sel: &Selection,
        pane: Frame,
        backend: &Backend,
    ) -> Result<[Pane<'a>; 2], ViewError> {
        let s = self
            .steps_of(d, b)
            .ok_or_else(|| ViewError::Unsupported("the Marey graphs need two training runs with steps".into()))?;
        // The window is from the step's start in each run: one zoom over the same step.
        let (x, y) = sel.window_s.unwrap_or((0.0, s.length_s));
        let sels = s.start_s.map(|at| Selection {
            window_s: Some((at + x, at + y)),
            operator: sel.search,
            ..Selection::default()
        });
        let [ma, mb] = &*s.views;
        both_panes([ma, mb], d, b, sels, pane, backend)
    }

    /// Two training runs' step for their Marey graphs: `--step`, else the one whose length
    /// changed most; where it starts in each (seconds from its aligned start) and the longer
    /// run's length of it.
    fn steps_of(&self, d: &Dataset, b: &Dataset) -> Option<SameStep> {
        let (ta, tb) = (d.training.as_deref()?, b.training.as_deref()?);
        let last = ta.steps.len().min(tb.steps.len()).checked_sub(1)? as u32;
        let step = self.step.unwrap_or_else(|| changed_step(ta, tb)).min(last);
        let views = crate::kept::kept(&self.mareys, step, || {
            let with = || MareyView::with(MareyOptions { step: Some(step), ..MareyOptions::default() });
            Arc::new([with(), with()])
        });
        // Where the step lies in a run, seconds from its aligned start (as the Marey view
        // widens it by the clock offsets it applied).
        let span = |k: usize, run: &Dataset, t: &exaviz_model::training::Training| {
            let a = views[k].analysis(run, t);
            let (lo, hi) = crate::marey::step_span(t, &a, step).unwrap_or(a.span);
            let start = ((lo - a.span.0) / 1e9).max(0.0);
            (start, ((hi - a.span.0) / 1e9 - start).max(1e-9))
        };
        let (sa, sb) = (span(0, d, ta), span(1, b, tb));
        Some(SameStep { views, start_s: [sa.0, sb.0], length_s: sa.1.max(sb.1) })
    }
}

/// The two runs' pictures under the charts, prepared at once (a view each, with its selection).
fn both_panes<'a>(
    views: [&(dyn View + Sync); 2],
    d: &'a Dataset,
    b: &'a Arc<Dataset>,
    sels: [Selection; 2],
    pane: Frame,
    backend: &Backend,
) -> Result<[Pane<'a>; 2], ViewError> {
    let one = |k: usize, run: &Dataset| crate::contract::prepare(views[k], run, &sels[k], pane, backend);
    let (pa, pb) = rayon::join(|| one(0, d), || one(1, b));
    Ok([(d, None, pa?, sels[0]), (b.as_ref(), Some(b.clone()), pb?, sels[1])])
}

/// The same step of two training runs, drawn by a Marey view each.
struct SameStep {
    views: Arc<[MareyView; 2]>,
    start_s: [f64; 2],
    length_s: f64,
}

/// The step of two training runs whose length changed most (the first of equals; 0 without
/// steps).
fn changed_step(a: &exaviz_model::training::Training, b: &exaviz_model::training::Training) -> u32 {
    let length = |s: &exaviz_model::training::Step| s.end.saturating_sub(s.start) as f64;
    let change = |k: usize| (length(&b.steps[k]) - length(&a.steps[k])).abs();
    let mut best = 0;
    for k in 1..a.steps.len().min(b.steps.len()) {
        if change(k) > change(best) {
            best = k;
        }
    }
    best as u32
}

fn draw(c: &Compared, a: &str, b: &str, chosen: &Selection, f: Frame, right: Option<Right>) -> Drawn<Under> {
    let d = &c.diff;
    let (w, h) = (f.width as f32, f.height as f32);
    let mut scene = Scene::new(f.width, f.height, BACKGROUND);
    let r = &d.run;
    let subtitle = format!(
        "the run {} → {} ({}){}; rows matched by {}",
        seconds(r.a.total_s),
        seconds(r.b.total_s),
        signed(r.change_s),
        match r.stands_out {
            Some(true) => ", beyond the steps' variation",
            Some(false) => ", within the steps' variation",
            None => "",
        },
        d.matching.locations_by
    );
    titles(&mut scene, w, &format!("What changed: {a} → {b}"), &subtitle);
    let mut under = Under { bars: Vec::new(), cells: Vec::new(), lines: Vec::new() };
    let split = (w * 0.56).round();
    bars(&mut scene, &mut under, c, chosen, [16.0, 76.0, split - 16.0, h - 24.0]);
    let area = [split + 16.0, 76.0, w - 16.0, h - 24.0];
    let paths = right == Some(Right::Paths) || (right.is_none() && c.cells.is_none() && !d.paths.is_empty());
    if paths {
        flame(&mut scene, &mut under, d, chosen, area);
    } else {
        matrix(&mut scene, &mut under, c, chosen, area);
    }
    Drawn { scene, picker: under }
}

/// What a click on the bar of `c` selects: a region or collective by name, a row or a pair
/// of rows of A.
fn click_of(compared: &Compared, c: &Change) -> Option<Click> {
    let row = |name: &str| compared.a_index.get(name).copied();
    match c.table {
        "region" | "collective" => {
            let search = exaviz_model::selection::Search::new(&c.name).ok()?;
            Some((Parts::SEARCH, Selection { search: Some(search), ..Selection::default() }))
        }
        "location" | "waiting" => Some((Parts::AREA, row_area(row(&c.name)?))),
        "pair" => {
            let (s, r) = c.name.split_once(" → ")?;
            Some((Parts::PAIR, Selection { pair: Some((row(s)?, row(r)?)), ..Selection::default() }))
        }
        _ => None,
    }
}

/// Whether `click` is what `chosen` selects.
fn is_chosen(click: Option<&Click>, chosen: &Selection) -> bool {
    click.is_some_and(|(parts, sel)| chosen.only(*parts) == sel.only(*parts))
}

/// The largest changes as bars either side of a zero line, names on the left.
fn bars(scene: &mut Scene, under: &mut Under, compared: &Compared, chosen: &Selection, [x0, y0, x1, y1]: [f32; 4]) {
    let rows = &compared.diff.top;
    scene.text(&fit("largest changes (B − A)", x1 - x0, 13.0), [x0, y0 - 8.0], 13.0, Anchor::Left, TEXT);
    if rows.is_empty() {
        scene.text("no change", [x0, y0 + 24.0], 13.0, Anchor::Left, TEXT_DIM);
        return;
    }
    let label = ((x1 - x0) * 0.42).min(260.0);
    let (bx0, bx1) = (x0 + label + 8.0, x1 - 8.0);
    let zero = (bx0 + bx1) / 2.0;
    let half = (bx1 - bx0) / 2.0 - 4.0;
    let row_h = ((y1 - y0 - 8.0) / rows.len() as f32).clamp(8.0, 26.0);
    let most = rows.iter().map(|c| c.change_s.abs()).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    for (k, c) in rows.iter().enumerate() {
        let y = y0 + 8.0 + k as f32 * row_h;
        let len = (c.change_s.abs() / most) as f32 * half;
        let (a, b) = if c.change_s >= 0.0 { (zero, zero + len) } else { (zero - len, zero) };
        let mut colour = tone(c.change_s, 0.85);
        if c.stands_out == Some(false) {
            colour[3] = 0.4;
        }
        scene.rect([a, y + 2.0], [b.max(a + 1.0), y + row_h - 2.0], colour, true);
        let name = format!("{} {}", c.table, c.name);
        let size = (row_h * 0.55).clamp(8.0, 12.0);
        let base = y + row_h * 0.5 + size * 0.35;
        scene.text(&fit(&name, label, size), [x0, base], size, Anchor::Left, TEXT);
        // The change in words beside its bar, on the side away from zero where it fits.
        let words = signed(c.change_s);
        let room = exaviz_render::TextAtlas::measure(&words, size) + 6.0;
        let (at, anchor) = if c.change_s >= 0.0 {
            if b + room <= bx1 + 8.0 { ([b + 4.0, base], Anchor::Left) } else { ([b - 4.0, base], Anchor::Right) }
        } else if a - room >= bx0 - 8.0 {
            ([a - 4.0, base], Anchor::Right)
        } else {
            ([a + 4.0, base], Anchor::Left)
        };
        scene.text(&words, at, size, anchor, TEXT_DIM);
        // A click selects the change in every panel; the bar of what is selected is framed.
        let click = click_of(compared, c);
        if is_chosen(click.as_ref(), chosen) {
            scene.frame([x0 - 4.0, y + 1.0, x1, y + row_h - 1.0], 1.5, TEXT, true);
        }
        under.bars.push(([x0, y, x1, y + row_h], name, lines_of(c), click));
    }
    let bottom = y0 + 8.0 + rows.len() as f32 * row_h;
    scene.segment(exaviz_render::Blend::Alpha, [zero, y0], [zero, bottom], 1.0, TEXT_DIM, true);
    scene.text(&format!("−{}", seconds(most)), [bx0, bottom + 14.0], 11.0, Anchor::Left, TEXT_DIM);
    scene.text(&format!("+{}", seconds(most)), [bx1, bottom + 14.0], 11.0, Anchor::Right, TEXT_DIM);
}

/// B − A bytes per pair of rows (blocks of rows past [`CELLS`]), on a diverging map. A cell of
/// one pair selects it; the selected pair's cell, and the selected row's row and column, are
/// framed.
fn matrix(scene: &mut Scene, under: &mut Under, c: &Compared, chosen: &Selection, [x0, y0, x1, y1]: [f32; 4]) {
    let title = fit("B − A bytes per pair (sender ↓, receiver →)", x1 - x0, 13.0);
    scene.text(&title, [x0, y0 - 8.0], 13.0, Anchor::Left, TEXT);
    let Some(Cells { names, per, cells, grid }) = &c.cells else {
        scene.text("no messages in either run", [x0, y0 + 24.0], 13.0, Anchor::Left, TEXT_DIM);
        return;
    };
    let (n, per, cells) = (names.len(), *per, *cells);
    let largest = grid.iter().map(|g| g.0.unsigned_abs()).max().unwrap_or(0);
    let side = ((x1 - x0 - 110.0).min(y1 - y0 - 56.0)).max(16.0);
    if largest == 0 {
        let note = fit("the same bytes between every pair", side, 11.0);
        scene.text(&note, [x0, y0 + 10.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    let most = largest.max(1) as f64;
    let y0 = y0 + 16.0;
    let cell = side / cells as f32;
    let name_of = |k: usize| {
        let (a, b) = (k * per, ((k + 1) * per).min(n) - 1);
        if a == b { names[a].to_string() } else { format!("{} … {}", names[a], names[b]) }
    };
    // A's location of a cell's row or column, where it holds one row.
    let row_of = |k: usize| (per == 1).then(|| c.a_index.get(&names[k]).copied()).flatten();
    let mut framed = Vec::new();
    for (k, g) in grid.iter().enumerate() {
        let (i, j) = (k / cells, k % cells);
        let r = [x0 + j as f32 * cell, y0 + i as f32 * cell, x0 + (j + 1) as f32 * cell, y0 + (i + 1) as f32 * cell];
        if g.1 == 0 && g.2 == 0 {
            scene.rect([r[0], r[1]], [r[2], r[3]], [0.13, 0.14, 0.17, 1.0], true);
            continue;
        }
        let k = (g.0.unsigned_abs() as f64 / most) as f32;
        scene.rect([r[0], r[1]], [r[2], r[3]], tone(g.0 as f64, k), true);
        let title = format!("{} → {}", name_of(i), name_of(j));
        let lines = vec![format!("A: {} bytes", g.1), format!("B: {} bytes", g.2), format!("B − A: {:+} bytes", g.0)];
        let pair = row_of(i).zip(row_of(j));
        let click = pair.map(|p| (Parts::PAIR, Selection { pair: Some(p), ..Selection::default() }));
        if pair.is_some() && chosen.pair == pair {
            framed.push(r);
        }
        under.cells.push((r, title, lines, click));
    }
    // The selected row's row and column of cells.
    if let Some(k) = (0..cells).find(|&k| chosen_row(chosen).is_some() && row_of(k) == chosen_row(chosen)) {
        let at = k as f32 * cell;
        framed.push([x0, y0 + at, x0 + side, y0 + at + cell]);
        framed.push([x0 + at, y0, x0 + at + cell, y0 + side]);
    }
    // Light outside, dark inside: seen on white cells (no change) as on dark ones.
    for r in framed {
        scene.frame(r, 1.5, TEXT, true);
        let dark = [BACKGROUND[0], BACKGROUND[1], BACKGROUND[2], 1.0];
        scene.frame([r[0] + 1.5, r[1] + 1.5, r[2] - 1.5, r[3] - 1.5], 1.0, dark, true);
    }
    scene.frame([x0, y0, x0 + side, y0 + side], 1.0, TEXT_DIM, true);
    scene.text(&fit(&name_of(0), side / 2.0, 10.0), [x0, y0 + side + 14.0], 10.0, Anchor::Left, TEXT_DIM);
    scene.text(
        &fit(&name_of(cells - 1), side / 2.0, 10.0),
        [x0 + side, y0 + side + 14.0],
        10.0,
        Anchor::Right,
        TEXT_DIM,
    );
    let bar = [x0 + side + 24.0, y0 + 24.0, 14.0, (side - 48.0).max(40.0)];
    legend::color_bar(scene, ColorMap::RdBu, Scale { lo: -most, hi: most, log: false }, "B − A\nbytes", bar);
}

/// The call paths as a differential flame graph (an icicle, outermost on top): each frame as
/// wide as the larger run's inclusive time, coloured by its change on the diverging map (red
/// slower in B, faint within the variation); a click on a frame finds its region in the
/// timelines.
fn flame(scene: &mut Scene, under: &mut Under, d: &Diff, chosen: &Selection, [x0, y0, x1, y1]: [f32; 4]) {
    let title = fit("call paths, outermost on top (width: time; colour: B − A)", x1 - x0, 13.0);
    scene.text(&title, [x0, y0 - 8.0], 13.0, Anchor::Left, TEXT);
    if d.paths.is_empty() {
        scene.text("no rows within rows in either run", [x0, y0 + 24.0], 13.0, Anchor::Left, TEXT_DIM);
        return;
    }
    let sep = exaviz_analysis::diff::tally::PATH_JOIN;
    let width = |c: &Change| c.a.total_s.max(c.b.total_s);
    let by_name: HashMap<&str, &Change> = d.paths.iter().map(|c| (c.name.as_str(), c)).collect();
    let mut children: HashMap<&str, Vec<&Change>> = HashMap::new();
    for c in &d.paths {
        let parent = c.name.rsplit_once(sep).map_or("", |(p, _)| p);
        // A frame whose parent was left out (past the most paths) hangs from the top.
        let parent = if parent.is_empty() || by_name.contains_key(parent) { parent } else { "" };
        children.entry(parent).or_default().push(c);
    }
    for v in children.values_mut() {
        v.sort_by(|x, y| width(y).total_cmp(&width(x)).then_with(|| x.name.cmp(&y.name)));
    }
    let whole: f64 = children.get("").map_or(0.0, |v| v.iter().map(|c| width(c)).sum());
    let most = d.paths.iter().map(|c| c.change_s.abs()).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let levels = d.paths.iter().map(|c| c.name.matches(sep).count() + 1).max().unwrap_or(1);
    let row = ((y1 - y0 - 8.0) / levels as f32).clamp(8.0, 18.0);
    let scale = (x1 - x0) as f64 / whole.max(f64::MIN_POSITIVE);
    // Frames by level, each within its parent's span.
    // Each parent's name, left edge and right edge (plot pixels from x0): its children stay
    // within it (concurrent rows of one path may sum past their parent).
    let mut level: Vec<(&str, f64, f64)> = vec![("", 0.0, f64::from(x1 - x0))];
    let mut depth = 0;
    while !level.is_empty() && y0 + 8.0 + (depth + 1) as f32 * row <= y1 {
        let y = y0 + 8.0 + depth as f32 * row;
        let mut next = Vec::new();
        for (parent, mut at, end) in level {
            for c in children.get(parent).map(Vec::as_slice).unwrap_or_default() {
                let w = (width(c) * scale).min(end - at) as f32;
                let fx = x0 + at as f32;
                at += width(c) * scale;
                if w < 1.0 {
                    continue;
                }
                let mut colour = tone(c.change_s, (c.change_s.abs() / most).sqrt() as f32);
                if c.stands_out == Some(false) {
                    colour[3] = 0.55;
                }
                let r = [fx, y, fx + w, y + row - 1.0];
                scene.rect([r[0], r[1]], [(r[2] - 1.0).max(r[0] + 1.0), r[3]], colour, true);
                let leaf = c.name.rsplit(sep).next().unwrap_or(&c.name);
                if w >= 40.0 {
                    let size = (row * 0.6).clamp(8.0, 11.0);
                    let ink = if (c.change_s.abs() / most) > 0.5 { TEXT } else { [0.1, 0.1, 0.12, 1.0] };
                    scene.text(
                        &fit(leaf, w - 6.0, size),
                        [fx + 3.0, y + row * 0.5 + size * 0.35],
                        size,
                        Anchor::Left,
                        ink,
                    );
                }
                let search = exaviz_model::selection::Search::new(leaf).ok();
                let click = search.map(|s| (Parts::SEARCH, Selection { search: Some(s), ..Selection::default() }));
                if is_chosen(click.as_ref(), chosen) {
                    scene.frame(r, 1.5, TEXT, true);
                }
                under.cells.push((r, c.name.clone(), lines_of(c), click));
                next.push((c.name.as_str(), f64::from(fx - x0), f64::from(fx - x0 + w)));
            }
        }
        level = next;
        depth += 1;
    }
}

/// The matrix's cells: B − A, A's and B's bytes per pair of rows (blocks of rows past
/// [`CELLS`]), rows in their names' natural order; summed once per pair of runs.
struct Cells {
    names: Vec<String>,
    /// Rows per cell.
    per: usize,
    /// Cells per side.
    cells: usize,
    grid: Vec<(i128, u64, u64)>,
}

/// The matrix's cells of `d`'s pairs; none where neither run has messages.
fn cells_of(d: &Diff) -> Option<Cells> {
    let pairs: Vec<(&str, &str, &Change)> =
        d.pairs.iter().filter_map(|c| c.name.split_once(" → ").map(|(s, r)| (s, r, c))).collect();
    if pairs.is_empty() {
        return None;
    }
    // Rows in the order of their names' numbers (rank 2 before rank 10), each name once.
    let mut names: Vec<&str> = pairs.iter().flat_map(|(s, r, _)| [*s, *r]).collect();
    names.sort_unstable();
    names.dedup();
    names.sort_by_cached_key(|a| natural(a));
    let n = names.len();
    let per = n.div_ceil(CELLS);
    let cells = n.div_ceil(per);
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(k, s)| (*s, k / per)).collect();
    let mut grid = vec![(0i128, 0u64, 0u64); cells * cells];
    for (s, r, c) in &pairs {
        let g = &mut grid[index[s] * cells + index[r]];
        g.0 += i128::from(c.b.bytes) - i128::from(c.a.bytes);
        g.1 += c.a.bytes;
        g.2 += c.b.bytes;
    }
    Some(Cells { names: names.into_iter().map(str::to_string).collect(), per, cells, grid })
}

/// A name's key for a natural order: its text with each run of digits as a number.
fn natural(s: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let (mut text, mut digits) = (String::new(), String::new());
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((std::mem::take(&mut text), digits.parse().unwrap_or(u64::MAX)));
                digits.clear();
            }
            text.push(c);
        }
    }
    out.push((text, digits.parse().unwrap_or(0)));
    out
}

#[cfg(test)]
mod tests;
