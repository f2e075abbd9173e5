//! The communication matrix as a scene, from the rows or from the pyramid.

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Anchor, ColorMap, Raster, Scale, Scene};

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
    /// Whether the ranks sending or receiving far more than the others get rows and columns of
    /// their own where the ranks outnumber the plot's pixels.
    pub grouping: crate::rows::Grouping,
    /// Which messages are counted (`None`: all).
    pub messages: Option<exaviz_model::selection::MessageFilter>,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        Self {
            width: 1024,
            height: 768,
            value: MatrixValue::Messages,
            colormap: ColorMap::Viridis,
            grouping: crate::rows::Grouping::Behaviour,
            messages: None,
        }
    }
}

const MARGIN: [u32; 4] = [80, 56, 170, 52];

/// Where the ranks fall along each side of the matrix (senders down, receivers across, the
/// same on both): the ranks drawn apart first, pinned at the top and left, `apart_px` each and
/// a gap after them; then the other ranks in `blocks` cells of `block_px`, in rank order.
#[derive(Clone, Debug)]
struct Axis {
    n: u32,
    /// Ranks drawn apart, in rank order.
    apart: Vec<u32>,
    apart_px: u32,
    blocks: u32,
    block_px: u32,
    /// Ranks per block where blocks are the pyramid's (`None`: the others split evenly).
    block: Option<u32>,
}

/// Pixels between the ranks drawn apart and the others.
const GAP: u32 = 4;
/// Most ranks drawn apart on each side.
const MOST_APART: usize = 4;

impl Axis {
    /// Where `n` ranks fall along `side` pixels with `apart` of them drawn apart.
    fn new(n: u32, side: u32, apart: Vec<u32>) -> Self {
        let k = apart.len() as u32;
        let apart_px = if k == 0 { 0 } else { (side / 16).clamp(12, 40) };
        let rest_px = side.saturating_sub(k * apart_px + if k > 0 { GAP } else { 0 }).max(1);
        let blocks = (n - k).clamp(1, rest_px);
        Self { n, apart, apart_px, blocks, block_px: (rest_px / blocks).max(1), block: None }
    }

    fn slots(&self) -> u32 {
        self.apart.len() as u32 + self.blocks
    }

    /// The first pixel of the blocks, from the plot's edge.
    fn blocks_at(&self) -> u32 {
        let k = self.apart.len() as u32;
        k * self.apart_px + if k > 0 { GAP } else { 0 }
    }

    fn len_px(&self) -> u32 {
        self.blocks_at() + self.blocks * self.block_px
    }

    /// Each rank's slot (apart ranks first, then blocks).
    fn slot_table(&self) -> Vec<u32> {
        let k = self.apart.len() as u32;
        let rest = u64::from((self.n - k).max(1));
        let mut out = Vec::with_capacity(self.n as usize);
        let mut skipped = 0u32;
        for r in 0..self.n {
            if let Ok(a) = self.apart.binary_search(&r) {
                out.push(a as u32);
                skipped += 1;
                continue;
            }
            let j = r - skipped;
            let b = match self.block {
                Some(b) => j / b,
                None => (u64::from(j) * u64::from(self.blocks) / rest) as u32,
            };
            out.push(k + b.min(self.blocks - 1));
        }
        out
    }

    /// The rank of the `j`-th rank not drawn apart.
    fn rest_rank(&self, j: u32) -> u32 {
        // The apart ranks are few: step past those at or below the answer.
        let mut r = j;
        for &a in &self.apart {
            if a <= r {
                r += 1;
            }
        }
        r.min(self.n - 1)
    }

    /// Ranks `[lo, hi]` of slot `c`.
    fn ranks(&self, c: u32) -> (u32, u32) {
        let k = self.apart.len() as u32;
        if c < k {
            let r = self.apart[c as usize];
            return (r, r);
        }
        let (c, rest) = (c - k, self.n - k);
        let (lo, hi) = if let Some(b) = self.block {
            let lo = c.saturating_mul(b).min(rest - 1);
            (lo, (c.saturating_add(1)).saturating_mul(b).min(rest) - 1)
        } else {
            let lo = (u64::from(c) * u64::from(rest)).div_ceil(u64::from(self.blocks)) as u32;
            let hi = ((u64::from(c) + 1) * u64::from(rest)).div_ceil(u64::from(self.blocks)) as u32 - 1;
            (lo, hi.max(lo))
        };
        (self.rest_rank(lo), self.rest_rank(hi))
    }

    /// Pixels `[a, b)` of slot `c` from the plot's edge.
    fn span_px(&self, c: u32) -> (u32, u32) {
        let k = self.apart.len() as u32;
        if c < k {
            (c * self.apart_px, (c + 1) * self.apart_px)
        } else {
            let a = self.blocks_at() + (c - k) * self.block_px;
            (a, a + self.block_px)
        }
    }

    /// The slot at pixel `px` from the plot's edge (`None` in the gap or past the end).
    fn slot_at(&self, px: f32) -> Option<u32> {
        let k = self.apart.len() as u32;
        if px < 0.0 {
            return None;
        }
        let px = px as u32;
        if px < k * self.apart_px {
            return Some(px / self.apart_px);
        }
        let b = px.checked_sub(self.blocks_at())? / self.block_px;
        (b < self.blocks).then_some(k + b)
    }
}

/// What the matrix's tooltips and clicks read: the cells' ranks, messages and bytes.
pub struct MatrixPick {
    plot: Plot,
    axis: Axis,
    cells: CellValues,
}

/// Each cell's messages and bytes: in memory, or where the device counted them (a tooltip
/// reads back the cell it shows, or goes without its numbers where the device is busy for more
/// than [`CELL_WAIT`]: a tooltip never waits for a computation).
enum CellValues {
    Host { counts: Vec<u64>, bytes: Vec<u64> },
    Device { counts: stages::DeviceWords, sums: stages::DeviceWords },
}

impl CellValues {
    /// Cell `k`'s messages and bytes.
    fn at(&self, k: usize) -> Option<(u64, u64)> {
        match self {
            Self::Host { counts, bytes } => Some((*counts.get(k)?, *bytes.get(k)?)),
            Self::Device { counts, sums } => {
                let k = k as u64;
                let c = counts.read_within(k..k + 1, Some(CELL_WAIT)).ok()??;
                let s = sums.read_within(2 * k..2 * k + 2, Some(CELL_WAIT)).ok()??;
                Some((u64::from(*c.first()?), u64::from(*s.first()?) | (u64::from(*s.get(1)?) << 32)))
            }
        }
    }
}

/// How long a tooltip waits for a cell's numbers from the device.
const CELL_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// The cells' colours: each cell's value coloured here, or a picture the device coloured on the
/// scale of the least and largest values it found (no ranks drawn apart).
enum Painted<'a> {
    Host(&'a [f64]),
    Device { range: Option<(u64, u64)>, rgba: stages::DeviceWords, stride: u32 },
}

impl MatrixPick {
    fn cell_rect(&self, (row, col): (u32, u32)) -> [f32; 4] {
        let ((y0, y1), (x0, x1)) = (self.axis.span_px(row), self.axis.span_px(col));
        let (px, py) = (self.plot.x0 as f32, self.plot.y0 as f32);
        [px + x0 as f32, py + y0 as f32, px + x1 as f32, py + y1 as f32]
    }
}

impl Picker for MatrixPick {
    fn pick(&self, _: &Dataset, at: [f32; 2]) -> Option<Pick> {
        let p = self.plot;
        let col = self.axis.slot_at(at[0] - p.x0 as f32)?;
        let row = self.axis.slot_at(at[1] - p.y0 as f32)?;
        let k = (row * self.axis.slots() + col) as usize;
        let ((s0, s1), (r0, r1)) = (self.axis.ranks(row), self.axis.ranks(col));
        let span = |a: u32, b: u32| if a == b { format!("rank {a}") } else { format!("ranks {a}-{b}") };
        let title = format!("{} → {}", span(s0, s1), span(r0, r1));
        let mut lines = match self.cells.at(k) {
            Some((messages, bytes)) => {
                vec![format!("messages: {messages}"), format!("bytes: {}", format_value(bytes as f64))]
            }
            None => Vec::new(),
        };
        let apart = self.axis.apart.len() as u32;
        if (row < apart || col < apart) && !(row < apart && col < apart) {
            lines.push("the block leaves out the ranks drawn apart".into());
        } else if row >= apart && col >= apart && apart > 0 && (s0 != s1 || r0 != r1) {
            lines.push("without the ranks drawn apart at the top and left".into());
        }
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
        let slots = self.axis.slot_table();
        let (Some(&row), Some(&col)) = (slots.get(s as usize), slots.get(r as usize)) else { return false };
        let [x0, y0, x1, y1] = self.cell_rect((row, col));
        let (x0, y0, x1, y1) = (x0 - 2.0, y0 - 2.0, x1 + 2.0, y1 + 2.0);
        let c = [1.0, 1.0, 1.0, 1.0];
        scene.rect([x0, y0], [x1, y0 + 1.5], c, false);
        scene.rect([x0, y1 - 1.5], [x1, y1], c, false);
        scene.rect([x0, y0], [x0 + 1.5, y1], c, false);
        scene.rect([x1 - 1.5, y0], [x1, y1], c, false);
        true
    }
}

/// The ranks that send or receive far more than the others (beyond the median and five robust
/// standard deviations, and beyond twice the median), the most deviant first, at most
/// [`MOST_APART`], in rank order: a pair of ranks exchanging many times what any other does
/// would be one pixel of a block otherwise.
fn apart_ranks(sent: &[u64], received: &[u64]) -> Vec<u32> {
    let mut scored: Vec<(f64, u32)> = Vec::new();
    for totals in [sent, received] {
        let mut v = totals.to_vec();
        let m = crate::rows::median(&mut v);
        let mut dev: Vec<u64> = totals.iter().map(|&x| x.abs_diff(m)).collect();
        let mad = crate::rows::median(&mut dev) as f64 * 1.4826;
        let threshold = (m as f64 + 5.0 * mad).max(2.0 * m as f64).max(1.0);
        for (r, &x) in totals.iter().enumerate() {
            if x as f64 > threshold {
                scored.push(((x as f64 - m as f64) / mad.max(1.0), r as u32));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<u32> = Vec::new();
    for (_, r) in scored {
        if !out.contains(&r) && out.len() < MOST_APART {
            out.push(r);
        }
    }
    out.sort_unstable();
    out
}

/// The communication matrix as a scene (the cells raster layers) and its picking data. Where the
/// ranks outnumber the plot's pixels, cells gather blocks of ranks and the ranks sending or
/// receiving far more than the others get a row and a column of their own
/// (`Grouping::Behaviour`).
pub fn matrix_scene(
    dataset: &Dataset,
    backend: &Backend,
    opts: &MatrixOptions,
    window_s: Option<(f64, f64)>,
) -> Result<(Scene, MatrixPick), ViewError> {
    // The index's pair sums hold every message: a filter counts the rows.
    let summed = opts.value != MatrixValue::Bandwidth && opts.messages.is_none();
    let pairs = if summed { crate::trace::pair_sums(dataset, window_s) } else { None };
    let note = opts.messages.map_or(String::new(), |f| format!("; {}", f.describe()));
    matrix_of(dataset, backend, opts, window_s, pairs, &note)
}

/// [`matrix_scene`] from each pair's sums (`pairs`) where given, else from the window's rows;
/// `note` ends the title's parenthesis.
fn matrix_of(
    dataset: &Dataset,
    backend: &Backend,
    opts: &MatrixOptions,
    window_s: Option<(f64, f64)>,
    pairs: Option<Vec<exaviz_model::pair_index::PairSum>>,
    note: &str,
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
    // A trace in memory with an index sums its window by pair (bandwidth needs every message),
    // as a store's per-pair tiles do; the others count the window's rows. Transfer times per
    // cell only for bandwidth.
    // The window's messages copied where they are read (the ranks drawn apart, the host's
    // binning), not where the device bins them.
    let held_once = std::cell::OnceCell::new();
    let held = || {
        pairs
            .is_none()
            .then(|| held_once.get_or_init(|| crate::trace::messages_kept(t, window_s, opts.messages.as_ref())))
    };
    let apart = if opts.grouping == crate::rows::Grouping::Behaviour && n > side {
        let by_bytes = opts.value != MatrixValue::Messages;
        match &pairs {
            Some(pairs) => apart_of(
                n,
                pairs.iter().map(|p| (p.source, p.destination, if by_bytes { p.bytes } else { p.messages })),
            ),
            None => held().map_or_else(Vec::new, |m| {
                let w = |i: usize| if by_bytes { u64::from(m.bytes[i]) } else { 1 };
                apart_of(n, (0..m.source.len()).map(|i| (m.source[i], m.destination[i], w(i))))
            }),
        }
    } else {
        Vec::new()
    };
    let axis = Axis::new(n, side, apart);
    // A trace with an index: its pair sums on the CPU, unless the device keeps the rows (a GPU of
    // its own), where binning its messages costs a gesture less than uploading the cells.
    if (pairs.is_none() || crate::kept::rows_wanted(backend))
        && let Some(drawn) = device_matrix(dataset, backend, opts, (window_s, &axis, area), note)?
    {
        return Ok(drawn);
    }
    let cells = axis.slots();
    let slot = axis.slot_table();
    let cell_of = |v: u32| slot.get(v as usize).copied().unwrap_or(u32::MAX);
    let (counts, bytes, messages, micros) = if let Some(pairs) = &pairs {
        let mut counts = vec![0u32; (cells * cells) as usize];
        let mut bytes = vec![0u64; counts.len()];
        for p in pairs {
            let (s, d) = (cell_of(p.source), cell_of(p.destination));
            if s < cells && d < cells {
                let k = (s * cells + d) as usize;
                counts[k] = counts[k].wrapping_add(p.messages as u32);
                bytes[k] += p.bytes;
            }
        }
        (counts, bytes, pairs.iter().map(|p| p.messages).sum::<u64>(), None)
    } else {
        let m: &exaviz_model::Messages = held().map_or(&t.messages, |m| m);
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
    let apart_note = match axis.apart.len() {
        0 => String::new(),
        k => format!(", {k} apart"),
    };
    let title = format!(
        "Communication matrix: {} ({n} processes{apart_note}, {messages} messages{note})",
        crate::title_name(dataset)
    );
    let p = Plot { x0: area.x0, y0: area.y0, w: axis.len_px(), h: axis.len_px() };
    let scene = draw_matrix(opts, backend, p, &axis, Painted::Host(&values), &title);
    let counts = counts.into_iter().map(u64::from).collect();
    Ok((scene, MatrixPick { plot: p, axis, cells: CellValues::Host { counts, bytes } }))
}

/// The ranks of `n` drawn apart ([`apart_ranks`]) from what each pair `(sender, receiver,
/// weight)` sent.
fn apart_of(n: u32, pairs: impl Iterator<Item = (u32, u32, u64)>) -> Vec<u32> {
    let (mut sent, mut received) = (vec![0u64; n as usize], vec![0u64; n as usize]);
    for (s, d, w) in pairs.filter(|&(s, d, _)| s < n && d < n) {
        sent[s as usize] += w;
        received[d as usize] += w;
    }
    apart_ranks(&sent, &received)
}

/// The matrix of a window drawn from the messages kept on a GPU device ([`stages::matrix_cells`]):
/// the window's messages counted, their cells coloured and kept there, five words read back.
/// `None` where the device path does not draw it (the CPU backend, mean bandwidths, ranks drawn
/// apart, a tag filter on an adapter binding eight storage buffers).
fn device_matrix(
    dataset: &Dataset,
    backend: &Backend,
    opts: &MatrixOptions,
    (window_s, axis, area): (Option<(f64, f64)>, &Axis, Plot),
    note: &str,
) -> Result<Option<(Scene, MatrixPick)>, ViewError> {
    let t = &dataset.trace;
    // The messages of a trace held whole, within the device's budget (a window read from disk
    // is another trace each time: its messages would go up again at every window).
    // A tag filter reads the tags: a ninth storage binding, which WebGPU's minimum leaves out.
    let tagged = opts.messages.is_some_and(|f| f.tag.is_some());
    let fits = match backend {
        Backend::Gpu(ctx) => {
            t.messages.source.len() as u64 * (20 + 4 * u64::from(tagged)) <= ctx.resident_budget()
                && (!tagged || ctx.limits.max_storage_buffers_per_shader_stage >= 9)
        }
        Backend::Cpu => false,
    };
    if !fits
        || t.span_of_whole.is_some()
        || opts.value == MatrixValue::Bandwidth
        || !axis.apart.is_empty()
        || std::env::var_os("EXAVIZ_MATRIX_ON_HOST").is_some()
    {
        return Ok(None);
    }
    let window = crate::trace::send_window(t, crate::trace::span(t), window_s).unwrap_or((0, u64::MAX));
    let owner = crate::kept::messages_owner(t);
    let m = &t.messages;
    let messages = stages::matrix_cells::Messages {
        send: &m.send_time,
        source: &m.source,
        destination: &m.destination,
        bytes: &m.bytes,
        tags: &m.tag,
        owner: Some(&owner),
    };
    let (slot, table) = device_tables(axis, opts.colormap);
    let look = stages::matrix_cells::Look {
        cells: axis.slots(),
        slot: &slot,
        window,
        by_bytes: opts.value == MatrixValue::Bytes,
        filter: crate::trace::stage_filter(opts.messages.as_ref()),
    };
    let cells = stages::matrix_cells::run(backend.runner().as_mut(), &messages, &look, &table)?;
    let n = axis.n;
    let title = format!(
        "Communication matrix: {} ({n} processes, {} messages{note})",
        crate::title_name(dataset),
        cells.messages
    );
    let p = Plot { x0: area.x0, y0: area.y0, w: axis.len_px(), h: axis.len_px() };
    let painted = Painted::Device { range: cells.range, rgba: cells.rgba, stride: cells.stride };
    let scene = draw_matrix(opts, backend, p, axis, painted, &title);
    let values = CellValues::Device { counts: cells.counts, sums: cells.sums };
    Ok(Some((scene, MatrixPick { plot: p, axis: axis.clone(), cells: values })))
}

/// The ranks' slots on the matrix's sides and the colour map's table, each the same `Arc` while
/// it stays the same (so that a device finds it kept; the last eight kept).
fn device_tables(axis: &Axis, map: ColorMap) -> (std::sync::Arc<Vec<u32>>, std::sync::Arc<Vec<u32>>) {
    type Tables = (std::sync::Arc<Vec<u32>>, std::sync::Arc<Vec<u32>>);
    static LAST: crate::kept::Recent<(Vec<u32>, ColorMap), Tables> = std::sync::Mutex::new(Vec::new());
    let slot = axis.slot_table();
    crate::kept::recent(&LAST, (slot.clone(), map), 8, || {
        let table = stages::curve_density::table(256, |t| {
            let c = map.sample(t);
            [c[0], c[1], c[2]]
        });
        (std::sync::Arc::new(slot), table)
    })
}

/// The matrix scene of `values` per cell (`axis.slots()` by `axis.slots()`, row-major by
/// sender), in the plot `p`.
fn draw_matrix(
    opts: &MatrixOptions,
    backend: &Backend,
    p: Plot,
    axis: &Axis,
    painted: Painted<'_>,
    title: &str,
) -> Scene {
    let n = axis.n;
    let (lo, hi) = match &painted {
        Painted::Host(values) => (
            values.iter().copied().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min),
            values.iter().copied().fold(0.0, f64::max),
        ),
        Painted::Device { range, .. } => range.map_or((f64::INFINITY, 0.0), |(a, b)| (a as f64, b as f64)),
    };
    let mut scale = if hi > 0.0 { Scale::auto(lo, hi) } else { Scale { lo: 0.0, hi: 1.0, log: false } };
    if !scale.log {
        scale.lo = 0.0;
    }
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    scene.text(&crate::plot::fit(title, opts.width as f32 - 24.0, 15.0), [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    // The blocks' plot: ticks at the centres of the ranks they name (those drawn apart left out).
    let at = axis.blocks_at();
    let blocks = Plot { x0: p.x0 + at, y0: p.y0 + at, w: p.w - at, h: p.h - at };
    let rest = n - axis.apart.len() as u32;
    let ticks: Vec<Tick> = nice_ticks(0.0, f64::from(n - 1), 6)
        .into_iter()
        .filter(|(_, v)| v.fract() == 0.0 && axis.apart.binary_search(&(*v as u32)).is_err())
        .map(|(_, v)| {
            // Rank v's place among the ranks not drawn apart.
            let before = axis.apart.partition_point(|&a| f64::from(a) < v) as f64;
            (((v - before + 0.5) / f64::from(rest)) as f32, format!("{v:.0}"))
        })
        // Clear of the labels of the ranks drawn apart.
        .filter(|(f, _)| at == 0 || f * blocks.w as f32 >= 18.0)
        .collect();
    if at == 0 {
        axes(&mut scene, blocks, &ticks, &ticks, "receiver (rank)", "sender (rank)");
    } else {
        // The senders' ticks and title left of the whole plot, clear of the columns drawn apart.
        axes(&mut scene, blocks, &ticks, &[], "receiver (rank)", "");
        scene.text("sender (rank)", [8.0, p.y0 as f32 - 10.0], 12.0, Anchor::Left, TEXT);
        let (x0, h) = (p.x0 as f32, blocks.h as f32);
        for (t, label) in &ticks {
            let y = (blocks.y0 as f32 + t * h).round();
            scene.rect([x0 - 6.0, y - 0.5], [x0 - 1.0, y + 0.5], crate::TEXT_DIM, true);
            scene.text(label, [x0 - 8.0, y + 4.0], 11.0, Anchor::Right, crate::TEXT_DIM);
        }
    }
    let bar = [(p.x0 + p.w + 24) as f32, p.y0 as f32 + 40.0, 16.0, (p.h as f32 - 80.0).max(40.0)];
    color_bar(&mut scene, opts.colormap, scale, opts.value.label(), bar);
    let colour = |v: f64| {
        if v > 0.0 {
            opts.colormap.sample(scale.normalise(v)).map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8)
        } else {
            [0; 4]
        }
    };
    // The cells: one raster layer per part of the matrix (the ranks drawn apart, the blocks),
    // each matrix cell one raster cell stretched over its pixels.
    let slots = axis.slots();
    let k = axis.apart.len() as u32;
    let values = match painted {
        Painted::Host(values) => values,
        Painted::Device { rgba, stride, .. } => {
            // No ranks drawn apart: one picture of every cell.
            let (a, b) = (axis.span_px(0).0, axis.span_px(slots - 1).1);
            let rect = [(p.x0 + a) as f32, (p.y0 + a) as f32, (p.x0 + b) as f32, (p.y0 + b) as f32];
            let data = exaviz_render::RasterData::Device { words: rgba, stride };
            scene.raster(Raster { rect, width: slots, height: slots, data, screen: false });
            &[]
        }
    };
    let parts = [(0..k, 0..k), (0..k, k..slots), (k..slots, 0..k), (k..slots, k..slots)];
    for (rows, cols) in parts.into_iter().filter(|_| !values.is_empty()) {
        if rows.is_empty() || cols.is_empty() {
            continue;
        }
        let mut colours = Vec::with_capacity(rows.len() * cols.len());
        for r in rows.clone() {
            for c in cols.clone() {
                colours.push(colour(values[(r * slots + c) as usize]));
            }
        }
        let (y0, x0) = (axis.span_px(rows.start).0, axis.span_px(cols.start).0);
        let (y1, x1) = (axis.span_px(rows.end - 1).1, axis.span_px(cols.end - 1).1);
        let rect = [(p.x0 + x0) as f32, (p.y0 + y0) as f32, (p.x0 + x1) as f32, (p.y0 + y1) as f32];
        // Kept on a GPU device: a pan or a zoom draws them again without uploading them.
        scene.raster(Raster::rgba(rect, cols.len() as u32, rows.len() as u32, colours).kept_on(backend));
    }
    // The ranks drawn apart: framed, named left of their rows and under their columns.
    if k > 0 {
        let frame = [0.45, 0.47, 0.52, 1.0];
        let edge = (p.x0 + k * axis.apart_px) as f32;
        let top = (p.y0 + k * axis.apart_px) as f32;
        let (x0, y0, x1, y1) = (p.x0 as f32, p.y0 as f32, (p.x0 + p.w) as f32, (p.y0 + p.h) as f32);
        scene.rect([x0 - 1.0, y0 - 1.0], [x1 + 1.0, y0], frame, true);
        scene.rect([x0 - 1.0, y0], [x0, top + 1.0], frame, true);
        scene.rect([x0, top], [x1, top + 1.0], frame, true);
        scene.rect([edge, y0], [edge + 1.0, y1], frame, true);
        let size = (axis.apart_px as f32 * 0.6).clamp(8.0, 11.0);
        for (c, &r) in axis.apart.iter().enumerate() {
            let (a, b) = axis.span_px(c as u32);
            let mid = (a + b) as f32 / 2.0;
            scene.text(&format!("rank {r}"), [x0 - 8.0, y0 + mid + size * 0.35], size, Anchor::Right, TEXT);
            scene.text(&format!("{r}"), [x0 + mid, y1 + 18.0], size, Anchor::Centre, TEXT);
        }
    }
    scene.outline.title = title.to_string();
    scene.outline.rows = sender_rows(axis, p, &ticks, blocks);
    let value = opts.value.label().replace('\n', " ");
    scene.outline.legend = vec![exaviz_render::OutlineEntry { label: value.clone(), name: value }];
    scene
}

/// The matrix's rows as its outline says them: a row per sender drawn apart (`rank S`), then
/// one per block of senders with the tick drawn on it (`ticks` over `blocks`), if any.
fn sender_rows(axis: &Axis, p: Plot, ticks: &[Tick], blocks: Plot) -> Vec<exaviz_render::OutlineRow> {
    let k = axis.apart.len() as u32;
    (0..axis.slots())
        .map(|c| {
            let (a, b) = axis.span_px(c);
            let (lo, hi) = axis.ranks(c);
            let label = if c < k {
                format!("rank {lo}")
            } else {
                let inside = |f: f32| {
                    let y = blocks.y0 + (f * blocks.h as f32) as u32;
                    (p.y0 + a..p.y0 + b).contains(&y)
                };
                ticks.iter().find(|(f, _)| inside(*f)).map_or(String::new(), |t| t.1.clone())
            };
            let name = if lo == hi { format!("rank {lo}") } else { format!("ranks {lo}-{hi}") };
            exaviz_render::OutlineRow {
                label,
                name,
                top: p.y0 + a,
                height: b - a,
                apart: c < k,
                // A block's ranks without those drawn apart among them.
                count: match c < k {
                    true => 1,
                    false => (hi - lo + 1) as usize - axis.apart.iter().filter(|&&r| (lo..=hi).contains(&r)).count(),
                },
                kind: "sender".into(),
                process: String::new(),
            }
        })
        .collect()
}

/// The matrix of a trace kept on disk, from its pyramid: one cell per rank block of the finest
/// level whose blocks fit the plot, messages of the time bins that overlap `window` (ticks).
/// Where the pyramid's per-pair tiles cover the same bins as the cube over the window (the
/// whole trace, a window of whole tile bins), the matrix is drawn from them as from a trace in
/// memory, so the ranks that send or receive far more than the others get rows of their own.
pub(crate) fn pyramid_matrix_scene(
    dataset: &Dataset,
    backend: &Backend,
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
    let cube_bins = pyr.message_bins_over(level, window);
    if let Some(tiles) = pyr.pairs.as_ref().filter(|_| opts.grouping == crate::rows::Grouping::Behaviour && n > side) {
        let bins = tiles.bins_over(pyr.shape.t0, window);
        // The ticks the bins cover, from the pyramid's start, up to the last tick of the trace
        // (past it neither holds a message).
        let last = ooc.span.1.saturating_sub(pyr.shape.t0).saturating_add(1);
        let ticks = |r: &std::ops::Range<u32>, w: u64| {
            let (a, b) = (u64::from(r.start) * w, (u64::from(r.end) * w).min(last));
            (a.min(b), b)
        };
        if ticks(&bins, tiles.bin_ticks) == ticks(&cube_bins, level.message_bin_ticks) {
            let tps = dataset.trace.ticks_per_second.max(1) as f64;
            let note = format!("; pyramid: per-pair bins of {:.3} s{}", tiles.bin_ticks as f64 / tps, unfiltered(opts));
            return matrix_of(dataset, backend, opts, None, Some(tiles.sums(bins)), &note);
        }
    }
    let cells = level.message_blocks;
    let axis = Axis {
        n,
        apart: Vec::new(),
        apart_px: 0,
        blocks: cells,
        block_px: side / cells,
        block: Some(level.message_block),
    };
    let p = Plot { x0: area.x0, y0: area.y0, w: axis.len_px(), h: axis.len_px() };
    let (counts, bytes) = level.matrix(cube_bins);
    let values: Vec<f64> = match opts.value {
        MatrixValue::Bytes => bytes.iter().map(|&b| b as f64).collect(),
        _ => counts.iter().map(|&c| c as f64).collect(),
    };
    let total: u64 = counts.iter().sum();
    let title = format!(
        "Communication matrix: {} ({n} processes, {total} messages; pyramid: {} ranks a cell{})",
        crate::title_name(dataset),
        level.message_block,
        unfiltered(opts)
    );
    let scene = draw_matrix(opts, backend, p, &axis, Painted::Host(&values), &title);
    Ok((scene, MatrixPick { plot: p, axis, cells: CellValues::Host { counts, bytes } }))
}

/// What a picture drawn from the pyramid says of a message filter: its sums hold every message.
fn unfiltered(opts: &MatrixOptions) -> &'static str {
    if opts.messages.is_some() { "; every message: a shorter window is read as rows and filtered" } else { "" }
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
