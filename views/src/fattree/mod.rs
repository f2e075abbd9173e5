//! The `fattree` view (TreeScope, Bhatia et al., 2018, §5): per pod and bundle, adjacency
//! matrices L1xL2 and L3xL2 with up and down submatrices (L2 duplicated per direction, the
//! submatrix order inverted in the L3xL2 matrix so each L2 column carries one direction: in on
//! the left, out on the right), L1 and L3 switches split into incoming and outgoing halves,
//! switches coloured by their busiest link; a time chart (max or mean over links per step,
//! stacked in six groups by level and direction) whose brush sets the active time range; a
//! histogram of per-link traffic over that range whose brush sets the active traffic range;
//! a job table whose rows select jobs (their span becomes the active range, their placement
//! shows on the L1 switches); routes between switches or within jobs traced through the
//! forwarding table in effect.

mod layout;

use std::sync::Arc;

use clap::{Args, ValueEnum};
use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::fattree::{End, FatTree, Group};
use exaviz_model::selection::{JobSet, Parts, Selection, TrafficRange};
use exaviz_render::{Anchor, Scale, Scene};

use crate::contract::{Class, Drawn, Frame, Pick, Picker, Prepared, View};
use crate::legend::{color_bar_bare, format_value};
use crate::plot::CATEGORICAL;
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

pub use layout::Layout;

/// What the time chart shows per step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Stat {
    /// The busiest link of each group.
    #[default]
    Max,
    /// The mean over the group's links.
    Mean,
}

/// Link colours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Colours {
    /// Single-hue maps: up links green, down links orange, switches purple (in) and magenta (out).
    #[default]
    Single,
    /// A diverging map (blue, white, red) centred on the mean link traffic.
    Diverging,
}

/// How the job table is sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum JobSort {
    /// Earliest first.
    #[default]
    Start,
    /// Largest first.
    Nodes,
    /// Longest first.
    Duration,
    /// By job id.
    Id,
}

/// The `fattree` view's options.
#[derive(Args, Clone, Debug, Default)]
pub struct FatTreeArgs {
    /// The active time range: counter intervals FROM up to (not including) TO, as the time
    /// chart's brush sets it (default: all, or the selected jobs' span).
    #[arg(long, value_name = "FROM:TO", value_parser = crate::options::parse_slice)]
    pub time: Option<(u64, u64)>,
    /// The active traffic range in bytes over the active time range, as the histogram's brush
    /// sets it: links outside it fade.
    #[arg(long, value_name = "LO:HI", value_parser = parse_traffic)]
    pub traffic: Option<(f64, f64)>,
    /// Keep the links outside --traffic instead (both ends of the distribution).
    #[arg(long, requires = "traffic")]
    pub complement: bool,
    /// Select jobs by id (up to 8): their span becomes the active range, their nodes show on the
    /// L1 switches, the links all of them use and the switches any of them uses are highlighted.
    #[arg(long, value_name = "ID,...", value_delimiter = ',', num_args = 1..)]
    pub job: Vec<u64>,
    /// Highlight the routes from switch SRC (to switch DST): switch numbers as the tooltips give
    /// them.
    #[arg(long, value_name = "SRC[,DST]", value_parser = parse_route)]
    pub route: Option<(u32, Option<u32>)>,
    /// What the time chart shows per step and group.
    #[arg(long, value_enum, default_value = "max")]
    pub stat: Stat,
    /// Link colours.
    #[arg(long, value_enum, default_value = "single")]
    pub colours: Colours,
    /// The job table's order.
    #[arg(long, value_enum, default_value = "start")]
    pub sort: JobSort,
    /// Hide jobs on fewer nodes from the table.
    #[arg(long, default_value = "0")]
    pub min_nodes: u32,
    /// Hide jobs that ran fewer seconds from the table.
    #[arg(long, default_value = "0")]
    pub min_duration: u64,
    /// List only the jobs running in the active time range.
    #[arg(long)]
    pub overlap: bool,
}

fn parse_traffic(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(':').ok_or_else(|| format!("'{s}' is not LO:HI"))?;
    let num = |v: &str| v.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    match (num(a), num(b)) {
        (Some(lo), Some(hi)) if lo <= hi => Ok((lo, hi)),
        _ => Err(format!("'{s}' is not LO:HI with 0 <= LO <= HI (bytes)")),
    }
}

fn parse_route(s: &str) -> Result<(u32, Option<u32>), String> {
    let num = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("'{v}' in '{s}' is not a switch number"));
    match s.split_once(',') {
        Some((a, b)) => Ok((num(a)?, Some(num(b)?))),
        None => Ok((num(s)?, None)),
    }
}

impl Class for FatTreeView {
    const NAME: &'static str = "fattree";
    const ABOUT: &'static str = "Fat-tree network: per pod and bundle, L1xL2 and L3xL2 adjacency matrices of link traffic with time-chart and histogram brushes, a job table and routes (TreeScope, Bhatia et al., 2018).";
    type Args = FatTreeArgs;

    fn new(args: &FatTreeArgs) -> Self {
        FatTreeView { args: args.clone(), chart: Default::default() }
    }

    fn selection(args: &FatTreeArgs) -> Selection {
        Selection {
            time_slice: args.time,
            traffic: args.traffic.map(|(lo, hi)| TrafficRange { lo, hi, complement: args.complement }),
            jobs: (!args.job.is_empty()).then(|| JobSet::of(&args.job)),
            route: args.route,
            ..Selection::default()
        }
    }
}

/// Per interval, per group: the time chart's values.
type ChartValues = Arc<Vec<[f64; 6]>>;

pub struct FatTreeView {
    pub args: FatTreeArgs,
    /// The time chart's values of the last tree drawn (they do not depend on the selection).
    chart: std::sync::Mutex<Option<(usize, ChartValues)>>,
}

impl FatTreeView {
    /// The time chart's values of `t`, computed once per tree.
    fn chart_values(&self, t: &Arc<FatTree>) -> Arc<Vec<[f64; 6]>> {
        let key = Arc::as_ptr(t) as usize;
        let mut cache = self.chart.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((k, v)) = cache.as_ref()
            && *k == key
        {
            return v.clone();
        }
        let v = Arc::new(chart::step_values(t, self.args.stat));
        *cache = Some((key, v.clone()));
        v
    }
}

/// The dataset's fat tree.
pub fn tree(dataset: &Dataset) -> Result<&Arc<FatTree>, ViewError> {
    dataset.fattree.as_ref().ok_or_else(|| {
        ViewError::Unsupported(
            "the fattree view needs a fat-tree network (a TreeScope data directory with network.topo, or gen:fattree)"
                .into(),
        )
    })
}

/// The active range in intervals: the selection's, else the selected jobs' span, else all.
pub fn active_range(t: &FatTree, selection: &Selection) -> (usize, usize) {
    let all = (0, t.steps());
    if let Some((a, b)) = selection.time_slice {
        return ((a as usize).min(t.steps()), (b as usize).min(t.steps()));
    }
    match selection.jobs.map(|j| jobs_span(t, j.ids())) {
        Some(Some(r)) => r,
        _ => all,
    }
}

/// The intervals the jobs `ids` ran in (from the first interval ending after the earliest
/// start to the last beginning before the latest end).
pub fn jobs_span(t: &FatTree, ids: &[u64]) -> Option<(usize, usize)> {
    let jobs: Vec<_> = t.jobs.iter().filter(|j| ids.contains(&j.id)).collect();
    let start = jobs.iter().map(|j| j.start).min()?;
    let end = jobs.iter().map(|j| j.end).max()?;
    let from = (0..t.steps()).find(|&s| t.times[s + 1] > start)?;
    let to = (0..t.steps()).rev().find(|&s| t.times[s] < end).map_or(from + 1, |s| s + 1);
    Some((from, to.max(from + 1)))
}

impl View for FatTreeView {
    fn help(&self) -> &'static [&'static str] {
        &["drag on the time chart or the histogram: brush; click a job row, or a switch then another"]
    }

    fn depends_on(&self) -> Parts {
        Parts::TIME_SLICE | Parts::TRAFFIC | Parts::JOBS | Parts::ROUTE
    }

    fn check(&self, dataset: &Dataset) -> Result<(), ViewError> {
        tree(dataset).map(|_| ())
    }

    fn prepare(
        &self,
        dataset: &Dataset,
        selection: &Selection,
        frame: Frame,
        _backend: &Backend,
    ) -> Result<Box<dyn Prepared>, ViewError> {
        let t = tree(dataset)?.clone();
        let least = (960, 540);
        if frame.width < least.0 || frame.height < least.1 {
            return Err(ViewError::Unsupported(format!(
                "{}x{} is too small for the fattree view (at least {}x{})",
                frame.width, frame.height, least.0, least.1
            )));
        }
        check_selection(&t, selection)?;
        let values = self.chart_values(&t);
        let (scene, picker) = draw(&t, &self.args, selection, frame, values);
        Ok(Box::new(Drawn { scene, picker }))
    }

    fn brush(
        &self,
        dataset: &Dataset,
        selection: &Selection,
        frame: Frame,
        from: [f32; 2],
        to: [f32; 2],
    ) -> Option<Selection> {
        let t = tree(dataset).ok()?;
        let l = Layout::new(t, frame);
        let inside = |r: [f32; 4], p: [f32; 2]| p[0] >= r[0] && p[0] <= r[2] && p[1] >= r[1] && p[1] <= r[3];
        let share = |r: [f32; 4], x: f32| ((x - r[0]) / (r[2] - r[0])).clamp(0.0, 1.0);
        if inside(l.chart, from) {
            let n = t.steps() as f32;
            let (a, b) = (share(l.chart, from[0]), share(l.chart, to[0]));
            let (a, b) = ((a.min(b) * n).floor() as u64, (a.max(b) * n).ceil() as u64);
            let slice = (b > a).then_some((a, b));
            return Some(Selection { time_slice: slice, ..*selection });
        }
        if inside(l.histogram, from) {
            let max = histogram_max(t, active_range(t, selection));
            let (a, b) = (share(l.histogram, from[0]), share(l.histogram, to[0]));
            let (lo, hi) = (f64::from(a.min(b)) * max, f64::from(a.max(b)) * max);
            let complement = selection.traffic.is_some_and(|r| r.complement);
            let traffic = (hi > lo).then_some(TrafficRange { lo, hi, complement });
            return Some(Selection { traffic, ..*selection });
        }
        None
    }

    fn brushes_at(&self, dataset: &Dataset, frame: Frame, at: [f32; 2]) -> bool {
        let Ok(t) = tree(dataset) else { return false };
        let l = Layout::new(t, frame);
        let inside = |r: [f32; 4]| at[0] >= r[0] && at[0] <= r[2] && at[1] >= r[1] && at[1] <= r[3];
        inside(l.chart) || inside(l.histogram)
    }
}

fn check_selection(t: &FatTree, s: &Selection) -> Result<(), ViewError> {
    let bad = |m: String| Err(ViewError::Unsupported(m));
    if let Some((a, b)) = s.time_slice
        && (b as usize > t.steps() || a >= b)
    {
        return bad(format!("--time {a}:{b}: the counters have intervals 0 to {}", t.steps()));
    }
    if let Some(j) = s.jobs
        && let Some(id) = j.ids().iter().find(|id| !t.jobs.iter().any(|x| x.id == **id))
    {
        return bad(format!("--job {id}: no job with that id in the job log"));
    }
    if let Some((a, b)) = s.route {
        for v in std::iter::once(a).chain(b) {
            if v as usize >= t.switches.len() {
                return bad(format!(
                    "--route: switch {v} is not in the network (switches 0 to {})",
                    t.switches.len() - 1
                ));
            }
        }
    }
    Ok(())
}

/// Largest per-link traffic over `range`: the histogram's end.
fn histogram_max(t: &FatTree, range: (usize, usize)) -> f64 {
    max_of(&t.sums(range))
}

/// The histogram's end for per-link sums already computed.
fn max_of(sums: &[f64]) -> f64 {
    sums.iter().copied().fold(0.0, f64::max).max(1.0)
}

/// What is highlighted: links and switches on the selected routes or jobs' footprints.
struct Focus {
    links: Vec<bool>,
    switches: Vec<bool>,
}

/// The footprint of the selection's jobs and route (TreeScope tasks T7-T9): for jobs, the
/// links every job uses and the switches any uses; a route from a switch (to a switch) keeps
/// the paths through it (and through the destination), between the jobs' nodes where jobs are
/// selected.
fn focus(t: &FatTree, selection: &Selection, range: (usize, usize)) -> Option<Focus> {
    if selection.jobs.is_none() && selection.route.is_none() {
        return None;
    }
    let table = t.table_at(t.times.get(range.0).copied().unwrap_or(0))?;
    let jobs: Vec<&exaviz_model::fattree::Job> = match selection.jobs {
        Some(j) => t.jobs.iter().filter(|x| j.ids().contains(&x.id)).collect(),
        None => Vec::new(),
    };
    let mut links = vec![false; t.links.len()];
    let mut switches = vec![false; t.switches.len()];
    let touches = |path: &[u32], s: u32| {
        path.iter().any(|&l| t.links[l as usize].from == End::Switch(s) || t.links[l as usize].to == End::Switch(s))
    };
    let mut trace = |srcs: &[u32], dsts: &[u32], links: &mut Vec<bool>| {
        let mut seen = rustc_hash::FxHashSet::default();
        for &a in srcs {
            if !seen.insert(t.l1_of(a)) {
                continue;
            }
            for &b in dsts {
                if a == b {
                    continue;
                }
                let Some(path) = t.route(table, a, b) else { continue };
                if let Some((s, d)) = selection.route
                    && (!touches(&path, s) || d.is_some_and(|d| !touches(&path, d)))
                {
                    continue;
                }
                for &l in &path[1..path.len() - 1] {
                    links[l as usize] = true;
                }
                for &l in &path[1..] {
                    if let End::Switch(w) = t.links[l as usize].from {
                        switches[w as usize] = true;
                    }
                }
            }
        }
    };
    match (selection.route, jobs.is_empty()) {
        (Some((s, d)), true) => {
            let srcs = t.nodes_under(s);
            let dsts: Vec<u32> = match d {
                Some(d) => t.nodes_under(d),
                None => (0..t.nodes.len() as u32).collect(),
            };
            trace(&srcs, &dsts, &mut links);
        }
        (_, false) => {
            let mut all: Option<Vec<bool>> = None;
            for j in &jobs {
                let mut mine = vec![false; t.links.len()];
                trace(&j.nodes, &j.nodes, &mut mine);
                all = Some(match all {
                    None => mine,
                    Some(a) => a.iter().zip(&mine).map(|(x, y)| *x && *y).collect(),
                });
            }
            links = all.unwrap_or(links);
        }
        (None, true) => {}
    }
    if let Some((s, d)) = selection.route {
        switches[s as usize] = true;
        if let Some(d) = d {
            switches[d as usize] = true;
        }
    }
    Some(Focus { links, switches })
}

/// ColorBrewer's single-hue sequential maps (white to dark): greens, oranges, purples, RdPu.
const GREENS: [[u8; 3]; 5] = [[237, 248, 233], [186, 228, 179], [116, 196, 118], [49, 163, 84], [0, 109, 44]];
const ORANGES: [[u8; 3]; 5] = [[254, 237, 222], [253, 190, 133], [253, 141, 60], [230, 85, 13], [166, 54, 3]];
const PURPLES: [[u8; 3]; 5] = [[242, 240, 247], [203, 201, 226], [158, 154, 200], [117, 107, 177], [84, 39, 143]];
const MAGENTAS: [[u8; 3]; 5] = [[254, 235, 226], [251, 180, 185], [247, 104, 161], [197, 27, 138], [122, 1, 119]];

fn ramp(stops: &[[u8; 3]; 5], t: f32) -> [f32; 4] {
    let x = t.clamp(0.0, 1.0) * 4.0;
    let i = (x.floor() as usize).min(3);
    let f = x - i as f32;
    let c = |k: usize| f32::from(stops[i][k]) / 255.0 * (1.0 - f) + f32::from(stops[i + 1][k]) / 255.0 * f;
    [c(0), c(1), c(2), 1.0]
}

/// The six groups' colours in the time chart and histogram: light/dark pairs (up light, down
/// dark) of blue, green and orange.
const GROUP_COLOURS: [[f32; 3]; 6] = [
    [0.651, 0.808, 0.890],
    [0.122, 0.471, 0.706],
    [0.698, 0.875, 0.541],
    [0.200, 0.627, 0.173],
    [0.992, 0.749, 0.435],
    [1.0, 0.498, 0.0],
];

/// Colour choices of one picture.
struct Paint {
    colours: Colours,
    max_link: f64,
    mean_link: f64,
    max_switch: f64,
}

impl Paint {
    fn link(&self, g: Group, v: f64) -> [f32; 4] {
        match self.colours {
            Colours::Single => ramp(if g.up() { &GREENS } else { &ORANGES }, (v / self.max_link) as f32),
            Colours::Diverging => {
                let t = if v <= self.mean_link {
                    0.5 * v / self.mean_link.max(1e-9)
                } else {
                    0.5 + 0.5 * (v - self.mean_link) / (self.max_link - self.mean_link).max(1e-9)
                };
                exaviz_render::ColorMap::RdBu.sample(t as f32)
            }
        }
    }

    fn switch(&self, incoming: bool, v: f64) -> [f32; 4] {
        ramp(if incoming { &PURPLES } else { &MAGENTAS }, (v / self.max_switch) as f32)
    }
}

/// The whole picture and what picks read.
fn draw(
    t: &Arc<FatTree>,
    args: &FatTreeArgs,
    selection: &Selection,
    frame: Frame,
    values: Arc<Vec<[f64; 6]>>,
) -> (Scene, FatTreePick) {
    let mut scene = Scene::new(frame.width, frame.height, BACKGROUND);
    let l = Layout::new(t, frame);
    let range = active_range(t, selection);
    let sums = t.sums(range);
    let inner: Vec<usize> = (0..t.links.len()).filter(|&i| !matches!(t.groups[i], Group::L0L1 | Group::L1L0)).collect();
    let max_link = inner.iter().map(|&i| sums[i]).fold(0.0, f64::max).max(1.0);
    let mean_link = inner.iter().map(|&i| sums[i]).sum::<f64>() / inner.len().max(1) as f64;
    // Each switch's busiest incoming and outgoing link.
    let mut io = vec![[0.0f64; 2]; t.switches.len()];
    for (i, link) in t.links.iter().enumerate() {
        if let End::Switch(s) = link.to {
            io[s as usize][0] = io[s as usize][0].max(sums[i]);
        }
        if let End::Switch(s) = link.from {
            io[s as usize][1] = io[s as usize][1].max(sums[i]);
        }
    }
    let max_switch = io.iter().flatten().copied().fold(0.0, f64::max).max(1.0);
    let paint = Paint { colours: args.colours, max_link, mean_link, max_switch };
    let keep = |v: f64| match selection.traffic {
        None => true,
        Some(r) => ((r.lo..=r.hi).contains(&v)) != r.complement,
    };
    let focus = focus(t, selection, range);
    let jobs_sel: Vec<u64> = selection.jobs.map(|j| j.ids().to_vec()).unwrap_or_default();
    let cells = matrices(&mut scene, t, &l, &sums, &io, &paint, &keep, focus.as_ref(), &jobs_sel);
    chart::time_chart(&mut scene, t, &l, args.stat, &values, range);
    let chart = values;
    chart::histogram(&mut scene, t, &l, &sums, selection);
    legends(&mut scene, &l, &paint, args.colours);
    let rows = table::job_table(&mut scene, t, &l, args, selection, range);
    title(&mut scene, t, &l, range, selection);
    let picker = FatTreePick { tree: t.clone(), layout: l, cells, sums, io, rows, chart, selection: *selection, range };
    (scene, picker)
}

fn title(scene: &mut Scene, t: &FatTree, l: &Layout, range: (usize, usize), selection: &Selection) {
    let when = |s: usize| t.times.get(s).map_or(String::new(), |&v| clock(v));
    let mut text = format!(
        "{} nodes, {} switches, {} pods, {} bundles · active range {}-{} (intervals {}-{})",
        t.nodes.len(),
        t.switches.len(),
        t.pods,
        t.bundles,
        when(range.0),
        when(range.1),
        range.0,
        range.1
    );
    if let Some(r) = selection.traffic {
        let side = if r.complement { "outside" } else { "within" };
        text.push_str(&format!(" · links {side} {}-{} bytes", format_value(r.lo), format_value(r.hi)));
    }
    if let Some(table) = t.table_at(t.times.get(range.0).copied().unwrap_or(0)) {
        text.push_str(&format!(" · routing: {}", table.name));
    }
    scene.text(&text, [l.matrices[0], l.matrices[1] - 16.0], 12.0, Anchor::Left, TEXT);
}

/// `HH:MM` of a time (UTC), with the date where it is not the first sample's.
pub fn clock(t: i64) -> String {
    let s = t.rem_euclid(86_400);
    format!("{:02}:{:02}", s / 3600, s / 60 % 60)
}

/// What a cell of the matrices shows.
#[derive(Clone, Copy, Debug)]
enum Cell {
    Link(u32),
    /// A switch half: incoming (`true`) or outgoing.
    Switch(u32, bool),
}

#[allow(clippy::too_many_arguments)]
fn matrices(
    scene: &mut Scene,
    t: &FatTree,
    l: &Layout,
    sums: &[f64],
    io: &[[f64; 2]],
    paint: &Paint,
    keep: &dyn Fn(f64) -> bool,
    focus: Option<&Focus>,
    jobs: &[u64],
) -> Vec<([f32; 4], Cell)> {
    let mut cells = Vec::new();
    let fade = |c: [f32; 4], on: bool| if on { c } else { [c[0], c[1], c[2], 0.12] };
    for p in 0..t.pods {
        let [x0, y0, x1, y1] = l.pod_rect(p);
        scene.rect([x0 - 3.0, y0 - 3.0], [x1 + 3.0, y1 + 3.0], [0.80, 0.80, 0.82, 1.0], false);
        scene.text(&format!("pod {p}"), [x0, y0 - 6.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    for (i, link) in t.links.iter().enumerate() {
        let Some(rect) = l.link_cell(t, link, t.groups[i]) else { continue };
        let on = keep(sums[i]) && focus.is_none_or(|f| f.links[i]);
        scene.rect([rect[0], rect[1]], [rect[2], rect[3]], fade(paint.link(t.groups[i], sums[i]), on), false);
        cells.push((rect, Cell::Link(i as u32)));
    }
    for (s, sw) in t.switches.iter().enumerate() {
        let on = focus.is_none_or(|f| f.switches[s]);
        for (rect, incoming) in l.switch_cells(t, s as u32) {
            let v = io[s][usize::from(!incoming)];
            scene.rect([rect[0], rect[1]], [rect[2], rect[3]], fade(paint.switch(incoming, v), on), false);
            cells.push((rect, Cell::Switch(s as u32, incoming)));
        }
        // Job placement on L1 switches: a stack per selected job, in proportion to its nodes.
        if sw.level == 1 && !jobs.is_empty() {
            let under: Vec<u32> = (0..t.nodes.len() as u32).filter(|&n| t.l1_of(n) == s as u32).collect();
            let cells_l1 = l.switch_cells(t, s as u32);
            let (a, b) = (cells_l1[0].0, cells_l1[cells_l1.len() - 1].0);
            let (x0, x1, y0, y1) = (a[0], b[2], a[1], a[3]);
            scene.rect([x0, y0], [x1, y1], [0.25, 0.25, 0.28, 1.0], false);
            let mut x = x0;
            let mut any = false;
            for (k, id) in jobs.iter().enumerate() {
                let Some(job) = t.jobs.iter().find(|j| j.id == *id) else { continue };
                let n = under.iter().filter(|n| job.nodes.binary_search(n).is_ok()).count();
                if n == 0 {
                    continue;
                }
                any = true;
                let w = (x1 - x0) * n as f32 / under.len().max(1) as f32;
                let c = CATEGORICAL[k % CATEGORICAL.len()];
                scene.rect([x, y0], [x + w, y1], [c[0], c[1], c[2], 1.0], false);
                x += w;
            }
            if !any {
                scene.rect([x0, y0], [x1, y1], [0.80, 0.80, 0.82, 0.8], false);
            }
        }
    }
    cells
}

fn legends(scene: &mut Scene, l: &Layout, paint: &Paint, colours: Colours) {
    let [x, y, _, _] = l.legend;
    let h = 90.0;
    let links = Scale { lo: 0.0, hi: paint.max_link, log: false };
    match colours {
        Colours::Single => {
            color_bar_bare(scene, |v| ramp(&GREENS, v), links, "up\nlinks", [x, y + 32.0, 12.0, h]);
            color_bar_bare(scene, |v| ramp(&ORANGES, v), links, "down\nlinks", [x + 74.0, y + 32.0, 12.0, h]);
        }
        Colours::Diverging => {
            let title = format!("links\n(mean {})", format_value(paint.mean_link));
            color_bar_bare(
                scene,
                |v| paint.link(Group::L1L2, f64::from(v) * paint.max_link),
                links,
                &title,
                [x, y + 32.0, 12.0, h],
            );
        }
    }
    let sw = Scale { lo: 0.0, hi: paint.max_switch, log: false };
    color_bar_bare(scene, |v| ramp(&PURPLES, v), sw, "switch\nin", [x + 148.0, y + 32.0, 12.0, h]);
    color_bar_bare(scene, |v| ramp(&MAGENTAS, v), sw, "switch\nout", [x + 222.0, y + 32.0, 12.0, h]);
    scene.text("bytes over the active range, linear scales", [x, y + 32.0 + h + 18.0], 11.0, Anchor::Left, TEXT_DIM);
}

/// What the fattree view's tooltips and clicks read.
pub struct FatTreePick {
    tree: Arc<FatTree>,
    layout: Layout,
    cells: Vec<([f32; 4], Cell)>,
    sums: Vec<f64>,
    io: Vec<[f64; 2]>,
    /// The job table's rows: rectangle and job id.
    rows: Vec<([f32; 4], u64)>,
    /// Per step, per group: the chart's values.
    chart: Arc<Vec<[f64; 6]>>,
    selection: Selection,
    range: (usize, usize),
}

impl Picker for FatTreePick {
    fn pick(&self, _: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let t = &self.tree;
        let inside = |r: [f32; 4]| at[0] >= r[0] && at[0] < r[2] && at[1] >= r[1] && at[1] < r[3];
        if let Some(&(_, id)) = self.rows.iter().find(|(r, _)| inside(*r)) {
            return Some(self.pick_job(id));
        }
        if let Some(&(_, cell)) = self.cells.iter().rev().find(|(r, _)| inside(*r)) {
            return Some(self.pick_cell(cell));
        }
        if inside(self.layout.chart) {
            let u = (at[0] - self.layout.chart[0]) / (self.layout.chart[2] - self.layout.chart[0]);
            let s = ((u * t.steps() as f32) as usize).min(t.steps().saturating_sub(1));
            let v = self.chart.get(s)?;
            let mut lines: Vec<String> =
                Group::ALL.iter().map(|g| format!("{}: {} bytes", g.label(), format_value(v[*g as usize]))).collect();
            lines.push("drag: set the active time range".into());
            return Some(Pick::new(format!("interval {s}, from {}", clock(t.times[s])), lines));
        }
        if inside(self.layout.histogram) {
            let mut lines = vec!["drag: set the active traffic range".to_string()];
            let Some(r) = self.selection.traffic else { return Some(Pick::new("per-link traffic", lines)) };
            lines.push(format!("click: keep the links {} the range", if r.complement { "within" } else { "outside" }));
            let flipped = TrafficRange { complement: !r.complement, ..r };
            let mut pick = Pick::new("per-link traffic", lines);
            pick.click = Some((Parts::TRAFFIC, Selection { traffic: Some(flipped), ..self.selection }));
            return Some(pick);
        }
        None
    }
}

impl FatTreePick {
    fn pick_job(&self, id: u64) -> Pick {
        let t = &self.tree;
        let job = t.jobs.iter().find(|j| j.id == id).expect("a listed job");
        let lines = vec![
            format!("{} by {} on {} nodes ({})", job.name, job.user, job.nodes.len(), job.partition),
            format!("from {} for {}", clock(job.start), duration(job.end - job.start)),
            "click: select or unselect (the active range follows)".into(),
        ];
        // A click toggles the job; the active range becomes the selected jobs' span.
        let mut ids: Vec<u64> = self.selection.jobs.map(|j| j.ids().to_vec()).unwrap_or_default();
        match ids.iter().position(|&x| x == id) {
            Some(i) => {
                ids.remove(i);
            }
            None if ids.len() < JobSet::MAX => ids.push(id),
            None => {}
        }
        let jobs = (!ids.is_empty()).then(|| JobSet::of(&ids));
        let time_slice = jobs_span(t, &ids).map(|(a, b)| (a as u64, b as u64));
        let next = Selection { jobs, time_slice, ..self.selection };
        let mut pick = Pick::new(format!("job {id}"), lines);
        // `clicked` compares the parts to clear on a second click; a toggle is never equal.
        pick.click = Some((Parts::JOBS | Parts::TIME_SLICE, next));
        if next.jobs == self.selection.jobs {
            pick.click = None;
        }
        pick
    }

    fn pick_cell(&self, cell: Cell) -> Pick {
        let t = &self.tree;
        match cell {
            Cell::Link(i) => {
                let link = t.links[i as usize];
                let g = t.groups[i as usize];
                let name = |e: End| match e {
                    End::Switch(s) => format!("switch {s}: {}", t.switch_label(s)),
                    End::Node(n) => format!("node {}", t.name_of(End::Node(n))),
                };
                let lines = vec![
                    format!("from {} port {}", name(link.from), link.from_port),
                    format!("to {} port {}", name(link.to), link.to_port),
                    format!(
                        "{} bytes over intervals {}-{}",
                        format_value(self.sums[i as usize]),
                        self.range.0,
                        self.range.1
                    ),
                ];
                Pick::new(format!("{} link ({})", g.label(), if g.up() { "up" } else { "down" }), lines)
            }
            Cell::Switch(s, incoming) => {
                let [i, o] = self.io[s as usize];
                let lines = vec![
                    format!("busiest incoming link: {} bytes", format_value(i)),
                    format!("busiest outgoing link: {} bytes", format_value(o)),
                    format!("({} half shown)", if incoming { "incoming" } else { "outgoing" }),
                    "click: route from here; a second switch: to there; again: clear".into(),
                ];
                let next = match self.selection.route {
                    Some((a, None)) if a == s => None,
                    Some((a, None)) => Some((a, Some(s))),
                    _ => Some((s, None)),
                };
                let mut pick = Pick::new(format!("switch {s}: {}", t.switch_label(s)), lines);
                pick.click = Some((Parts::ROUTE, Selection { route: next, ..self.selection }));
                pick
            }
        }
    }
}

/// `1h30m`, `45m`, `2d3h`.
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        s if s >= 86_400 => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s => format!("{}m{:02}s", s / 60, s % 60),
    }
}

mod chart;
mod table;

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::fattree::Job;

    /// The k = 4 fat tree with four counter intervals, traffic growing on every link, a job on
    /// pods 0 and 1 from interval 1 to 3 and a table routing up through the first port.
    fn dataset() -> Dataset {
        let mut t = exaviz_model::fattree::figure_2();
        let n = t.links.len();
        t.times = (0..5).map(|s| 1_000_000 + 60 * s).collect();
        t.cum = (0..5).flat_map(|s| (0..n).map(move |l| (s * (l + 1) * 1000) as f64)).collect();
        t.jobs = vec![Job {
            id: 42,
            name: "app".into(),
            start: 1_000_060,
            end: 1_000_170,
            nodes: (0..8).collect(),
            ..Default::default()
        }];
        Dataset { fattree: Some(Arc::new(t)), ..Default::default() }
    }

    fn view() -> FatTreeView {
        FatTreeView { args: FatTreeArgs::default(), chart: Default::default() }
    }

    #[test]
    fn brushes_on_the_chart_and_histogram_set_the_time_and_traffic_ranges() {
        let d = dataset();
        let frame = Frame { width: 1100, height: 700 };
        let l = Layout::new(d.fattree.as_ref().unwrap(), frame);
        let v = view();
        let y = (l.chart[1] + l.chart[3]) / 2.0;
        let x = |u: f32| l.chart[0] + (l.chart[2] - l.chart[0]) * u;
        let none = Selection::default();
        assert!(v.brushes_at(&d, frame, [x(0.5), y]));
        let s = v.brush(&d, &none, frame, [x(0.3), y], [x(0.6), y]).expect("a brush");
        assert_eq!(s.time_slice, Some((1, 3)), "intervals 1.2 to 2.4, widened to whole intervals");
        let hx = |u: f32| l.histogram[0] + (l.histogram[2] - l.histogram[0]) * u;
        let hy = (l.histogram[1] + l.histogram[3]) / 2.0;
        let s = v.brush(&d, &s, frame, [hx(0.75), hy], [hx(0.25), hy]).expect("a brush");
        let max = histogram_max(d.fattree.as_ref().unwrap(), (1, 3));
        let r = s.traffic.expect("a traffic range");
        assert!((r.lo - 0.25 * max).abs() < max * 1e-6 && (r.hi - 0.75 * max).abs() < max * 1e-6, "{r:?}");
        assert_eq!(s.time_slice, Some((1, 3)), "kept");
        // A click on the histogram keeps the other side of the range.
        let p = v.prepare(&d, &s, frame, &Backend::Cpu).unwrap();
        let flip = p.pick(&d, [hx(0.5), hy]).unwrap().clicked(&s).unwrap();
        assert_eq!(flip.traffic, Some(TrafficRange { complement: true, ..r }));
        // Elsewhere a drag pans.
        let m = [l.matrices[0] + 5.0, l.matrices[1] + 5.0];
        assert!(!v.brushes_at(&d, frame, m));
        assert_eq!(v.brush(&d, &none, frame, m, [m[0] + 50.0, m[1]]), None);
    }

    #[test]
    fn a_job_row_toggles_the_job_and_its_span_and_switches_query_routes() {
        let d = dataset();
        let frame = Frame { width: 1100, height: 700 };
        let v = view();
        let prepared = v.prepare(&d, &Selection::default(), frame, &Backend::Cpu).unwrap();
        let pick_at = |p: &dyn Prepared, want: &str| {
            (0..700)
                .flat_map(|y| (0..1100).map(move |x| [x as f32, y as f32]))
                .find_map(|at| p.pick(&d, at).filter(|k| k.title.starts_with(want)).map(|k| (at, k)))
                .expect("something to pick")
        };
        let (_, job) = pick_at(prepared.as_ref(), "job 42");
        let s = job.clicked(&Selection::default()).expect("clickable");
        assert_eq!(s.jobs.map(|j| j.ids().to_vec()), Some(vec![42]));
        assert_eq!(s.time_slice, Some((1, 3)), "the job ran from 60 s to 170 s: intervals 1 and 2");
        let again = v.prepare(&d, &s, frame, &Backend::Cpu).unwrap();
        let (_, job) = pick_at(again.as_ref(), "job 42");
        let cleared = job.clicked(&s).unwrap();
        assert_eq!((cleared.jobs, cleared.time_slice), (None, None));
        // Routes: a first switch is the source, a second the destination, the first again clears.
        let (_, sw) = pick_at(prepared.as_ref(), "switch 0:");
        let one = sw.clicked(&Selection::default()).unwrap();
        assert_eq!(one.route, Some((0, None)));
        let p1 = v.prepare(&d, &one, frame, &Backend::Cpu).unwrap();
        let (_, other) = pick_at(p1.as_ref(), "switch 7:");
        let two = other.clicked(&one).unwrap();
        assert_eq!(two.route, Some((0, Some(7))));
        let (_, same) = pick_at(p1.as_ref(), "switch 0:");
        assert_eq!(same.clicked(&one).unwrap().route, None);
        // A route without a table highlights nothing but still draws; an unknown switch is refused.
        assert!(v.prepare(&d, &two, frame, &Backend::Cpu).is_ok());
        let bad = Selection { route: Some((99, None)), ..Default::default() };
        assert!(v.prepare(&d, &bad, frame, &Backend::Cpu).err().unwrap().to_string().contains("switch 99"));
    }
}
