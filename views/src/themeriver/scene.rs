//! The time slicer's picture: a stream per node, stacked about the axis.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_model::Topology;
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::dims::{DimFilter, selected_nodes};
use exaviz_render::{Anchor, Scene};

use crate::legend::format_value;
use crate::plot::{CATEGORICAL, Plot, Tick, axes, nice_ticks};
use crate::torus::traffic::node_traffic;
use crate::torus::traffic::{LEGEND_W, TOP, link_traffic_in};
use crate::{BACKGROUND, TEXT, TEXT_DIM, ViewError};

/// Most streams named (one colour each); further nodes share a grey stream.
pub const MAX_STREAMS: usize = 7;
/// Most time bins: one per tick up to this many ticks, else this many equal bins.
const MAX_BINS: u64 = 256;
const OTHERS: [f32; 4] = [0.55, 0.56, 0.6, 1.0];
const SLICE: [f32; 4] = [0.8, 0.47, 0.65, 0.28];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThemeRiverOptions {
    pub width: u32,
    pub height: u32,
    pub time_slice: Option<(u64, u64)>,
    pub node: Option<u32>,
    pub select: Option<DimFilter>,
}

impl Default for ThemeRiverOptions {
    fn default() -> Self {
        Self { width: 900, height: 480, time_slice: None, node: None, select: None }
    }
}

/// The river's data: per stream its nodes' label and its value in each time bin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct River {
    /// Named streams' nodes, in id order.
    pub nodes: Vec<u32>,
    /// Nodes merged into the last, grey stream (0: no such stream).
    pub others: usize,
    /// `values[s * bins + b]`: traffic of stream `s` in bin `b`.
    pub values: Vec<u64>,
    pub bins: usize,
    /// First tick and ticks per bin.
    pub t0: u64,
    pub bin_ticks: u64,
    /// The streams' nodes came from a selection (else: the busiest of all nodes).
    pub selected: bool,
}

impl River {
    pub fn streams(&self) -> usize {
        self.nodes.len() + usize::from(self.others > 0)
    }

    pub fn value(&self, s: usize, b: usize) -> u64 {
        self.values[s * self.bins + b]
    }
}

/// Bins the link counters into one stream per shown node (both ends of a link count).
pub fn river(dataset: &Dataset, backend: &Backend, opts: &ThemeRiverOptions) -> Result<River, ViewError> {
    let topo = crate::torus::topology(dataset, "the themeriver view needs")?;
    let n = topo.node_count();
    let selected = selected_nodes(topo, opts.node, opts.select.as_ref()).map_err(ViewError::Unsupported)?;
    let lc = &dataset.trace.link_counters;
    if lc.time.is_empty() {
        return Err(ViewError::Unsupported(
            "the themeriver view needs link traffic over time; this input has none".into(),
        ));
    }
    let is_selected = selected.is_some();
    let pool = selected.unwrap_or_else(|| (0..n as u32).collect());
    if pool.is_empty() {
        return Err(ViewError::Unsupported("the selection holds no node".into()));
    }
    // The busiest `MAX_STREAMS` of the pool are named (ties to the lower id), in id order.
    let mut named = pool.clone();
    if named.len() > MAX_STREAMS {
        let busy = node_traffic(topo, &link_traffic_in(dataset, backend, None)?);
        named.sort_by_key(|&v| (std::cmp::Reverse(busy[v as usize]), v));
        named.truncate(MAX_STREAMS);
    }
    named.sort_unstable();
    // Within a selection, the nodes not named share the last stream.
    let others = if is_selected { pool.len() - named.len() } else { 0 };
    let mut stream_of = vec![u32::MAX; n];
    if others > 0 {
        for &v in &pool {
            stream_of[v as usize] = named.len() as u32;
        }
    }
    for (s, &v) in named.iter().enumerate() {
        stream_of[v as usize] = s as u32;
    }
    let (t_min, t_max, bins) = time_bins(&lc.time);
    let (mut keys, mut times, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..lc.entity.len() {
        let l = lc.entity[i] as usize;
        if l >= topo.link_count() {
            continue;
        }
        for v in [topo.links.source[l], topo.links.destination[l]] {
            let s = stream_of[v as usize];
            if s != u32::MAX {
                keys.push(s);
                times.push(lc.time[i]);
                weights.push(lc.value[i]);
            }
        }
    }
    let streams = named.len() + usize::from(others > 0);
    let x = AxisKey::time(&times, t_min, t_max, bins);
    let bin_ticks = x.bin_ticks();
    let input = HeatmapInput { x, y: AxisKey::Id { keys: &keys, extent: streams as u32 }, weights: Some(&weights) };
    let grid = stages::bin_heatmap::run(backend.runner().as_mut(), &input)?;
    Ok(River {
        nodes: named,
        others,
        values: grid.sums,
        bins: bins as usize,
        t0: t_min,
        bin_ticks,
        selected: is_selected,
    })
}

/// The river's time range (first and last tick) and bin count.
fn time_bins(times: &[u64]) -> (u64, u64, u32) {
    let (t_min, t_max) = times.iter().fold((u64::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    (t_min, t_max, (t_max - t_min + 1).min(MAX_BINS) as u32)
}

/// The plot rectangle of a `width x height` river picture.
fn plot_of(width: u32, height: u32) -> Option<Plot> {
    Plot::inside(width, height, [60, TOP as u32 + 20, LEGEND_W as u32 + 40, 56])
}

/// Choosing a slice: the trace tick under picture column `x` (clamped to the time axis), rounded
/// to the nearest bin boundary, or `None` without link traffic over time or outside the plot's
/// height.
pub fn themeriver_tick_at(dataset: &Dataset, width: u32, height: u32, p: [f32; 2]) -> Option<u64> {
    let times = &dataset.trace.link_counters.time;
    let plot = plot_of(width, height)?;
    if times.is_empty() || p[1] < plot.y0 as f32 || p[1] > (plot.y0 + plot.h) as f32 {
        return None;
    }
    let (t_min, t_max, bins) = time_bins(times);
    let bin_ticks = AxisKey::time(&[], t_min, t_max, bins).bin_ticks();
    let u = ((p[0] - plot.x0 as f32) / plot.w as f32).clamp(0.0, 1.0);
    let bin = (u * bins as f32).round() as u64;
    Some(t_min + bin * bin_ticks)
}

fn smoothstep(f: f32) -> f32 {
    f * f * (3.0 - 2.0 * f)
}

pub fn themeriver_scene(dataset: &Dataset, backend: &Backend, opts: &ThemeRiverOptions) -> Result<Scene, ViewError> {
    crate::check_slice(opts.time_slice)?;
    let plot = plot_of(opts.width, opts.height)
        .ok_or_else(|| ViewError::Unsupported(format!("{}x{} is too small for this view", opts.width, opts.height)))?;
    let river = river(dataset, backend, opts)?;
    let Some(topo) = dataset.topology.as_ref() else { unreachable!("river() checked the topology") };
    let (streams, bins) = (river.streams(), river.bins);
    let totals: Vec<u64> = (0..bins).map(|b| (0..streams).map(|s| river.value(s, b)).sum()).collect();
    let peak = totals.iter().copied().max().unwrap_or(0).max(1) as f32;
    let (x0, y0, pw, ph) = (plot.x0 as f32, plot.y0 as f32, plot.w as f32, plot.h as f32);
    let scale = ph * 0.92 / peak;
    let mid = y0 + ph / 2.0;
    let colour = |s: usize| {
        if s < river.nodes.len() {
            let c = CATEGORICAL[s % CATEGORICAL.len()];
            [c[0], c[1], c[2], 1.0]
        } else {
            OTHERS
        }
    };

    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    // Time runs over bins; each bin's value sits at its centre, and values between centres
    // blend with a smoothstep so the streams flow.
    let span_ticks = (bins as u64 * river.bin_ticks) as f32;
    let tick_x = |t: f64| x0 + ((t - river.t0 as f64) as f32 / span_ticks) * pw;
    let mut widest = vec![(0f32, 0f32, 0f32); streams];
    for col in 0..plot.w {
        let u = (col as f32 + 0.5) / pw * bins as f32 - 0.5;
        let (i, f) = if u <= 0.0 {
            (0, 0.0)
        } else if u >= (bins - 1) as f32 {
            (bins - 1, 0.0)
        } else {
            (u.floor() as usize, smoothstep(u - u.floor()))
        };
        let j = (i + 1).min(bins - 1);
        let v = |s: usize| river.value(s, i) as f32 * (1.0 - f) + river.value(s, j) as f32 * f;
        let total: f32 = (0..streams).map(v).sum();
        let mut y = mid + total * scale / 2.0;
        let x = x0 + col as f32;
        for (s, wide) in widest.iter_mut().enumerate() {
            let h = v(s) * scale;
            if h > 0.0 {
                scene.rect([x, y - h], [x + 1.0, y], colour(s), true);
                if h > wide.0 {
                    *wide = (h, x, y - h / 2.0);
                }
            }
            y -= h;
        }
    }
    // Each stream's label at its widest, where it is tall enough and clear of the others.
    let mut placed: Vec<[f32; 4]> = Vec::new();
    for (s, &(h, x, y)) in widest.iter().enumerate() {
        let label = if s < river.nodes.len() { river.nodes[s].to_string() } else { "others".into() };
        let x = x.clamp(x0 + 20.0, x0 + pw - 20.0);
        let half = exaviz_render::text::TextAtlas::measure(&label, 11.0) / 2.0 + 2.0;
        let bounds = [x - half, y - 7.0, x + half, y + 7.0];
        let clear = placed.iter().all(|b| bounds[2] < b[0] || bounds[0] > b[2] || bounds[3] < b[1] || bounds[1] > b[3]);
        if h >= 14.0 && clear {
            scene.text(&label, [x, y + 4.0], 11.0, Anchor::Centre, [0.05, 0.05, 0.07, 1.0]);
            placed.push(bounds);
        }
    }
    scene.rect([x0, mid - 0.5], [x0 + pw, mid + 0.5], [0.9, 0.9, 0.95, 0.25], true);
    // The slice over the streams, tinting them (TorusVisND Fig. 15's marked slice).
    if let Some((from, to)) = opts.time_slice {
        let (a, b) = (tick_x(from as f64).max(x0), tick_x(to as f64).min(x0 + pw));
        if b > a {
            scene.rect([a, y0], [b, y0 + ph], SLICE, true);
            for edge in [a, b] {
                scene.rect([edge - 1.0, y0], [edge + 1.0, y0 + ph], [SLICE[0], SLICE[1], SLICE[2], 0.9], true);
            }
        }
    }

    let end = river.t0 as f64 + f64::from(span_ticks);
    let x_ticks: Vec<Tick> = nice_ticks(river.t0 as f64, end, 8)
        .into_iter()
        .filter(|&(_, v)| v <= end)
        .map(|(t, v)| (t, format_value(v)))
        .collect();
    let unit = crate::traffic_unit(dataset);
    let per_bin = if river.bin_ticks == 1 { "tick".to_string() } else { format!("{} ticks", river.bin_ticks) };
    let time_title = if dataset.trace.ticks_per_second == 1 { "time (ticks)" } else { "time (trace ticks)" };
    axes(
        &mut scene,
        plot,
        &x_ticks,
        &[],
        time_title,
        &format!("{unit} per {per_bin} on a node's links (stream height)"),
    );
    decorate(&mut scene, dataset, topo, opts, &river, (scale, peak));
    Ok(scene)
}

fn decorate(
    scene: &mut Scene,
    dataset: &Dataset,
    topo: &Topology,
    opts: &ThemeRiverOptions,
    river: &River,
    (scale, peak): (f32, f32),
) {
    let n = topo.node_count();
    let mut sub = if river.selected {
        let what = match (opts.node, &opts.select) {
            (Some(v), None) => format!("node {v}"),
            (None, Some(f)) => format!("nodes with {}", f.describe()),
            (Some(v), Some(f)) => format!("node {v} if {}", f.describe()),
            (None, None) => String::new(),
        };
        let count = river.nodes.len() + river.others;
        format!("{what} ({count} node{})", if count == 1 { "" } else { "s" })
    } else {
        format!("the {} busiest of {n} nodes", river.nodes.len())
    };
    sub += " · streams in node order";
    if let Some((from, to)) = opts.time_slice {
        sub += &format!(" · slice {from} to {to} shaded");
    }
    let title = format!("Time slicer (ThemeRiver): {}", crate::title_name(dataset));
    crate::plot::titles(scene, opts.width as f32, &title, &sub);
    let x = opts.width as f32 - LEGEND_W + 6.0;
    let mut y = TOP + 30.0;
    scene.text("node [coordinates]", [x, y], 12.0, Anchor::Left, TEXT);
    y += 18.0;
    for (s, &v) in river.nodes.iter().enumerate() {
        let c = CATEGORICAL[s % CATEGORICAL.len()];
        scene.rect([x, y - 9.0], [x + 12.0, y + 1.0], [c[0], c[1], c[2], 1.0], true);
        let coord: Vec<String> = topo.coord(v as usize).iter().map(u32::to_string).collect();
        scene.text(&format!("{v} [{}]", coord.join(",")), [x + 18.0, y], 11.0, Anchor::Left, TEXT_DIM);
        y += 17.0;
    }
    if river.others > 0 {
        scene.rect([x, y - 9.0], [x + 12.0, y + 1.0], OTHERS, true);
        scene.text(&format!("{} others", river.others), [x + 18.0, y], 11.0, Anchor::Left, TEXT_DIM);
        y += 17.0;
    }
    if opts.time_slice.is_some() {
        scene.rect([x, y - 9.0], [x + 12.0, y + 1.0], [SLICE[0], SLICE[1], SLICE[2], 0.8], true);
        scene.text("time slice", [x + 18.0, y], 11.0, Anchor::Left, TEXT_DIM);
        y += 17.0;
    }
    // Height scale: a bar as tall as the largest round value (1, 2 or 5 times a power of ten)
    // that fits the room left.
    let room = opts.height as f32 - y - 30.0;
    let fits = |v: f64| v as f32 * scale <= room;
    let mut step = 10f64.powi(f64::from(peak).log10().ceil() as i32);
    while step >= 1.0 && !fits(step) {
        step = if fits(step / 2.0) {
            step / 2.0
        } else if fits(step / 5.0) {
            step / 5.0
        } else {
            step / 10.0
        };
    }
    let h = step as f32 * scale;
    if step >= 1.0 && h >= 8.0 {
        let top = y + 10.0;
        scene.rect([x + 4.0, top], [x + 6.0, top + h], TEXT, true);
        scene.rect([x, top], [x + 10.0, top + 1.0], TEXT, true);
        scene.rect([x, top + h - 1.0], [x + 10.0, top + h], TEXT, true);
        let unit = crate::traffic_unit(dataset);
        // One packet, not "1 packets".
        let unit = if step == 1.0 { unit.strip_suffix('s').unwrap_or(unit) } else { unit };
        scene.text(
            &format!("{} {unit}", format_value(step)),
            [x + 16.0, top + h / 2.0 + 4.0],
            11.0,
            Anchor::Left,
            TEXT_DIM,
        );
    }
}
