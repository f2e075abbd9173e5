//! The `matrix` view (seed 002 §III-B): the communication matrix, senders as rows and receivers
//! as columns, coloured by the number of messages, the bytes, or the mean bandwidth of each pair,
//! binned by the heatmap stage on the backend. With more processes than pixels, a cell gathers
//! a block of consecutive ranks.

use crate::Backend;
use crate::model::Dataset;
use crate::render::{Anchor, ColorMap, Image, Scale, Scene, View, render_scene};
use crate::stages::{self, AxisKey, HeatmapInput};

use super::legend::color_bar;
use super::plot::{Plot, Tick, axes, nice_ticks, paste};
use super::{BACKGROUND, TEXT, ViewError};

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

/// Draws the communication matrix of `dataset`'s messages.
pub fn matrix_image(dataset: &Dataset, backend: &Backend, opts: &MatrixOptions) -> Result<Image, ViewError> {
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
    let m = &t.messages;
    let block = |r: &[u32]| -> Vec<u32> {
        r.iter().map(|&v| (u64::from(v) * u64::from(cells) / u64::from(n)) as u32).collect()
    };
    let (src, dst) =
        if cells == n { (m.source.clone(), m.destination.clone()) } else { (block(&m.source), block(&m.destination)) };
    let grid = |weights: Option<&[u32]>| {
        let input = HeatmapInput {
            x: AxisKey::Id { keys: &dst, extent: cells },
            y: AxisKey::Id { keys: &src, extent: cells },
            weights,
        };
        stages::bin_heatmap::run(backend.runner().as_mut(), &input)
    };
    let values: Vec<f64> = match opts.value {
        MatrixValue::Messages => grid(None)?.counts.iter().map(|&c| f64::from(c)).collect(),
        MatrixValue::Bytes => grid(Some(&m.bytes))?.sums.iter().map(|&s| s as f64).collect(),
        MatrixValue::Bandwidth => {
            // Transfer times in microseconds (at least 1), summed per pair like the bytes.
            let tps = t.ticks_per_second.max(1) as f64;
            let micros: Vec<u32> = (0..m.source.len())
                .map(|i| {
                    let d = m.recv_time[i].saturating_sub(m.send_time[i]) as f64 / tps * 1e6;
                    d.clamp(1.0, f64::from(u32::MAX)) as u32
                })
                .collect();
            let (bytes, time) = (grid(Some(&m.bytes))?, grid(Some(&micros))?);
            bytes.sums.iter().zip(&time.sums).map(|(&b, &us)| if us > 0 { b as f64 / us as f64 } else { 0.0 }).collect()
        }
    };
    let lo = values.iter().copied().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let mut scale = if hi > 0.0 { Scale::auto(lo, hi) } else { Scale { lo: 0.0, hi: 1.0, log: false } };
    if !scale.log {
        scale.lo = 0.0;
    }
    let mut scene = Scene::new(opts.width, opts.height, BACKGROUND);
    let title = format!("Communication matrix: {} ({n} processes, {} messages)", dataset.name, m.source.len());
    scene.text(&title, [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    // Ticks at the centres of the ranks they name.
    let ticks: Vec<Tick> = nice_ticks(0.0, f64::from(n - 1), 6)
        .into_iter()
        .filter(|(_, v)| v.fract() == 0.0)
        .map(|(_, v)| (((v + 0.5) / f64::from(n)) as f32, format!("{v:.0}")))
        .collect();
    axes(&mut scene, p, &ticks, &ticks, "receiver (rank)", "sender (rank)");
    let bar = [(p.x0 + p.w + 24) as f32, p.y0 as f32 + 40.0, 16.0, (p.h as f32 - 80.0).max(40.0)];
    color_bar(&mut scene, opts.colormap, scale, opts.value.label(), bar);
    let mut image =
        render_scene(backend, &scene, View::default()).map_err(|e| ViewError::Unsupported(e.to_string()))?;
    paste(&mut image, p, |x, y| {
        let v = values[((y / cell_px) * cells + x / cell_px) as usize];
        (v > 0.0).then(|| opts.colormap.sample(scale.normalise(v)))
    });
    Ok(image)
}
