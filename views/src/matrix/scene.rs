//! The communication matrix as a scene, from the rows or from the pyramid.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Anchor, ColorMap, Raster, Scale, Scene};

use crate::contract;
use crate::contract::{Pick, Picker};
use crate::legend::{color_bar, format_value};
use crate::plot::{Plot, Tick, axes, nice_ticks};
use crate::{BACKGROUND, TEXT, ViewError};

/// What a cell shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatrixValue {
    #[default]
    Messages,
    Bytes,
    /// Total bytes over total transfer time (send to receive) of the pair, in MB/s.
    Bandwidth,
}

impl MatrixValue {
    fn label(self) -> &'static str {
        match self {
            Self::Messages => "messages",
            Self::Bytes => "bytes",
            Self::Bandwidth => "mean bandwidth\n(MB/s)",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct MatrixOptions {
    pub width: u32,
    pub height: u32,
    pub value: MatrixValue,
    pub colormap: ColorMap,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        Self { width: 1024, height: 768, value: MatrixValue::Messages, colormap: ColorMap::Viridis }
    }
}

const MARGIN: [u32; 4] = [80, 56, 170, 52];

/// What the matrix's tooltips and clicks read: the cells' ranks, messages and bytes.
pub struct MatrixPick {
    plot: Plot,
    /// Cells across (and down); a cell gathers `n / cells` ranks.
    cells: u32,
    cell_px: u32,
    n: u32,
    /// Ranks per cell where cells are the pyramid's blocks (`None`: `n / cells` as above).
    block: Option<u32>,
    counts: Vec<u64>,
    bytes: Vec<u64>,
}

impl MatrixPick {
    /// Ranks `[lo, hi]` of cell `c`.
    fn ranks(&self, c: u32) -> (u32, u32) {
        if let Some(b) = self.block {
            let lo = c.saturating_mul(b).min(self.n - 1);
            return (lo, (c.saturating_add(1)).saturating_mul(b).min(self.n) - 1);
        }
        let lo = (u64::from(c) * u64::from(self.n)).div_ceil(u64::from(self.cells)) as u32;
        let hi = ((u64::from(c) + 1) * u64::from(self.n)).div_ceil(u64::from(self.cells)) as u32 - 1;
        (lo, hi.max(lo))
    }

    fn cell_rect(&self, (row, col): (u32, u32)) -> [f32; 4] {
        let (x, y) = (self.plot.x0 + col * self.cell_px, self.plot.y0 + row * self.cell_px);
        [x as f32, y as f32, (x + self.cell_px) as f32, (y + self.cell_px) as f32]
    }
}

impl Picker for MatrixPick {
    fn pick(&self, _: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let p = self.plot;
        let [u, v] = contract::share_in([p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32], at)?;
        let (col, row) = ((u * self.cells as f32) as u32, (v * self.cells as f32) as u32);
        let k = (row * self.cells + col) as usize;
        let ((s0, s1), (r0, r1)) = (self.ranks(row), self.ranks(col));
        let span = |a: u32, b: u32| if a == b { format!("rank {a}") } else { format!("ranks {a}-{b}") };
        let title = format!("{} → {}", span(s0, s1), span(r0, r1));
        let lines =
            vec![format!("messages: {}", self.counts[k]), format!("bytes: {}", format_value(self.bytes[k] as f64))];
        let pick = Pick::new(title, lines);
        Some(if s0 == s1 && r0 == r1 {
            pick.with_click(Parts::PAIR, Selection { pair: Some((s0, r0)), ..Default::default() })
        } else {
            pick
        })
    }

    /// The selected pair's cell outlined.
    fn overlay(&self, _: &Dataset, selection: &Selection, scene: &mut Scene) -> bool {
        let Some((s, r)) = selection.pair else { return false };
        let cell = |rank: u32| match self.block {
            Some(b) => rank / b,
            None => (u64::from(rank) * u64::from(self.cells) / u64::from(self.n.max(1))) as u32,
        };
        let [x0, y0, x1, y1] = self.cell_rect((cell(s), cell(r)));
        let (x0, y0, x1, y1) = (x0 - 2.0, y0 - 2.0, x1 + 2.0, y1 + 2.0);
        let c = [1.0, 1.0, 1.0, 1.0];
        scene.rect([x0, y0], [x1, y0 + 1.5], c, false);
        scene.rect([x0, y1 - 1.5], [x1, y1], c, false);
        scene.rect([x0, y0], [x0 + 1.5, y1], c, false);
        scene.rect([x1 - 1.5, y0], [x1, y1], c, false);
        true
    }
}

/// The communication matrix as a scene (the cells one raster layer) and its picking data.
pub fn matrix_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &MatrixOptions,
    window_s: Option<(f64, f64)>,
) -> Result<(Scene, MatrixPick), ViewError> {
    let t = &dataset.trace;
    let n = t.locations.name.len() as u32;
    if n == 0 {
        return Err(ViewError::Unsupported("the matrix needs a trace with processes (locations)".into()));
    }
    let area = Plot::inside(opts.width, opts.height, MARGIN).ok_or_else(|| {
        ViewError::Unsupported(format!("picture {}x{} too small for a matrix", opts.width, opts.height))
    })?;
    // A square plot; cells of whole pixels where the ranks fit, else blocks of ranks per pixel.
    let side = area.w.min(area.h);
    let cells = n.min(side);
    let cell_px = side / cells;
    let p = Plot { x0: area.x0, y0: area.y0, w: cells * cell_px, h: cells * cell_px };
    let cell_of = |v: u32| if cells == n { v } else { (u64::from(v) * u64::from(cells) / u64::from(n)) as u32 };
    // A trace in memory with an index sums its window by pair (bandwidth needs every message);
    // the others count the window's rows. Transfer times per cell only for bandwidth.
    let by_pair = (opts.value != MatrixValue::Bandwidth).then(|| crate::trace::pair_sums(dataset, window_s));
    let (counts, bytes, messages, micros) = if let Some(Some(pairs)) = by_pair {
        let mut counts = vec![0u32; (cells * cells) as usize];
        let mut bytes = vec![0u64; counts.len()];
        for p in &pairs {
            let (s, d) = (cell_of(p.source), cell_of(p.destination));
            if s < cells && d < cells {
                let k = (s * cells + d) as usize;
                counts[k] = counts[k].wrapping_add(p.messages as u32);
                bytes[k] += p.bytes;
            }
        }
        (counts, bytes, pairs.iter().map(|p| p.messages).sum::<u64>(), None)
    } else {
        let m = &*crate::trace::messages_in(t, window_s);
        let block = |r: &[u32]| -> Vec<u32> { r.iter().map(|&v| cell_of(v)).collect() };
        let (src, dst) = (block(&m.source), block(&m.destination));
        let grid = |weights: Option<&[u32]>| {
            let input = HeatmapInput {
                x: AxisKey::Id { keys: &dst, extent: cells },
                y: AxisKey::Id { keys: &src, extent: cells },
                weights,
            };
            stages::bin_heatmap::run(backend.runner().as_mut(), &input)
        };
        let micros = if opts.value == MatrixValue::Bandwidth {
            // Transfer times in microseconds (at least 1), summed per pair like the bytes.
            let tps = t.ticks_per_second.max(1) as f64;
            let micros: Vec<u32> = (0..m.source.len())
                .map(|i| {
                    let d = m.recv_time[i].saturating_sub(m.send_time[i]) as f64 / tps * 1e6;
                    d.clamp(1.0, f64::from(u32::MAX)) as u32
                })
                .collect();
            Some(grid(Some(&micros))?.sums)
        } else {
            None
        };
        (grid(None)?.counts, grid(Some(&m.bytes))?.sums, m.source.len() as u64, micros)
    };
    let values: Vec<f64> = match (opts.value, micros) {
        (MatrixValue::Bandwidth, Some(micros)) => {
            bytes.iter().zip(&micros).map(|(&b, &us)| if us > 0 { b as f64 / us as f64 } else { 0.0 }).collect()
        }
        (MatrixValue::Bytes, _) => bytes.iter().map(|&s| s as f64).collect(),
        _ => counts.iter().map(|&c| f64::from(c)).collect(),
    };
    let title = format!("Communication matrix: {} ({n} processes, {messages} messages)", crate::title_name(dataset));
    let scene = draw_matrix(opts, p, n, cells, &values, &title);
    let counts = counts.into_iter().map(u64::from).collect();
    Ok((scene, MatrixPick { plot: p, cells, cell_px, n, block: None, counts, bytes }))
}

/// The matrix scene of `values` per cell (`cells` by `cells`, row-major by sender), in the plot
/// `p` of a trace of `n` ranks.
fn draw_matrix(opts: &MatrixOptions, p: Plot, n: u32, cells: u32, values: &[f64], title: &str) -> Scene {
    let lo = values.iter().copied().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let mut scale = if hi > 0.0 { Scale::auto(lo, hi) } else { Scale { lo: 0.0, hi: 1.0, log: false } };
    if !scale.log {
        scale.lo = 0.0;
    }
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    scene.text(&crate::plot::fit(title, opts.width as f32 - 24.0, 15.0), [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    // Ticks at the centres of the ranks they name.
    let ticks: Vec<Tick> = nice_ticks(0.0, f64::from(n - 1), 6)
        .into_iter()
        .filter(|(_, v)| v.fract() == 0.0)
        .map(|(_, v)| (((v + 0.5) / f64::from(n)) as f32, format!("{v:.0}")))
        .collect();
    axes(&mut scene, p, &ticks, &ticks, "receiver (rank)", "sender (rank)");
    let bar = [(p.x0 + p.w + 24) as f32, p.y0 as f32 + 40.0, 16.0, (p.h as f32 - 80.0).max(40.0)];
    color_bar(&mut scene, opts.colormap, scale, opts.value.label(), bar);
    // The cells: one raster cell per matrix cell, stretched over its pixels.
    let colours: Vec<[u8; 4]> = values
        .iter()
        .map(|&v| {
            if v > 0.0 {
                opts.colormap.sample(scale.normalise(v)).map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8)
            } else {
                [0; 4]
            }
        })
        .collect();
    let rect = [p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32];
    scene.raster(Raster::rgba(rect, cells, cells, colours));
    scene
}

/// The matrix of a trace kept on disk, from its pyramid: one cell per rank block of the finest
/// level whose blocks fit the plot, messages of the time bins that overlap `window` (ticks).
pub(crate) fn pyramid_matrix_scene(
    dataset: &Dataset,
    ooc: &exaviz_model::dataset::OutOfCore,
    opts: &MatrixOptions,
    window: (u64, u64),
) -> Result<(Scene, MatrixPick), ViewError> {
    let n = dataset.trace.locations.name.len() as u32;
    let area = Plot::inside(opts.width, opts.height, MARGIN).ok_or_else(|| {
        ViewError::Unsupported(format!("picture {}x{} too small for a matrix", opts.width, opts.height))
    })?;
    if opts.value == MatrixValue::Bandwidth {
        return Err(ViewError::Unsupported(
            "the pyramid holds no transfer times: choose a shorter time window to draw the mean bandwidth from the rows"
                .into(),
        ));
    }
    let pyr = crate::trace::pyramid_of(ooc, n as usize)?;
    let side = area.w.min(area.h);
    let level = pyr.levels.iter().find(|l| l.message_blocks <= side).unwrap_or(&pyr.levels[pyr.levels.len() - 1]);
    let cells = level.message_blocks;
    let cell_px = side / cells;
    let p = Plot { x0: area.x0, y0: area.y0, w: cells * cell_px, h: cells * cell_px };
    let (counts, bytes) = level.matrix(pyr.message_bins_over(level, window));
    let values: Vec<f64> = match opts.value {
        MatrixValue::Bytes => bytes.iter().map(|&b| b as f64).collect(),
        _ => counts.iter().map(|&c| c as f64).collect(),
    };
    let total: u64 = counts.iter().sum();
    let title = format!(
        "Communication matrix: {} ({n} processes, {total} messages; pyramid: {} ranks a cell)",
        crate::title_name(dataset),
        level.message_block
    );
    let scene = draw_matrix(opts, p, n, cells, &values, &title);
    Ok((scene, MatrixPick { plot: p, cells, cell_px, n, block: Some(level.message_block), counts, bytes }))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ValueArg {
    Messages,
    Bytes,
    Bandwidth,
}

impl From<ValueArg> for MatrixValue {
    fn from(v: ValueArg) -> Self {
        match v {
            ValueArg::Messages => MatrixValue::Messages,
            ValueArg::Bytes => MatrixValue::Bytes,
            ValueArg::Bandwidth => MatrixValue::Bandwidth,
        }
    }
}
