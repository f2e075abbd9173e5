//! The torus views' traffic and layout constants: link traffic (summed by the binning stage),
//! traffic per node, the undirected chords with their colour scale, the dimensions' names, and
//! the legend column and title band every torus picture leaves.

use std::collections::HashMap;

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_model::Topology;
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_model::dataset::Dataset;
use exaviz_render::{ColorMap, Scale};

use crate::ViewError;

pub use exaviz_model::selection::dims::dim_letter;

/// Width of the legend column on the right and height of the title band, in pixels.
pub const LEGEND_W: f32 = 150.0;
pub const TOP: f32 = 64.0;

/// Traffic per directed link, summed over all link-counter samples by stage (a) on `backend`.
pub fn link_traffic(dataset: &Dataset, backend: &Backend) -> Result<Vec<u64>, ViewError> {
    link_traffic_in(dataset, backend, None)
}

/// [`link_traffic`] over the samples with `from <= time < to` only, where a slice is given.
pub fn link_traffic_in(dataset: &Dataset, backend: &Backend, slice: Option<(u64, u64)>) -> Result<Vec<u64>, ViewError> {
    let topo = dataset.topology.as_ref().ok_or_else(|| ViewError::Unsupported("no topology".into()))?;
    let all = &dataset.trace.link_counters;
    let sliced;
    let lc = match slice {
        None => all,
        Some((from, to)) => {
            let keep: Vec<usize> = (0..all.time.len()).filter(|&i| (from..to).contains(&all.time[i])).collect();
            sliced = exaviz_model::Counters {
                entity: keep.iter().map(|&i| all.entity[i]).collect(),
                time: keep.iter().map(|&i| all.time[i]).collect(),
                value: keep.iter().map(|&i| all.value[i]).collect(),
            };
            &sliced
        }
    };
    let links = topo.link_count() as u32;
    if lc.entity.is_empty() || links == 0 {
        return Ok(vec![0; links as usize]);
    }
    let (t_min, t_max) = lc.time.iter().fold((u64::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let input = HeatmapInput {
        x: AxisKey::time(&lc.time, t_min, t_max, 1),
        y: AxisKey::Id { keys: &lc.entity, extent: links },
        weights: Some(&lc.value),
    };
    let grid = stages::bin_heatmap::run(backend.runner().as_mut(), &input)?;
    Ok(grid.row_sums())
}

/// Undirected chords (both directions of a link share one chord and add their traffic), light
/// traffic first so heavy chords are drawn on top, and the colour scale over their traffic.
pub struct Chords {
    pub list: Vec<((u32, u32), u64)>,
    /// Per chord of `list`, the part of its traffic sent from its lower node to its higher.
    pub upward: Vec<u64>,
    pub max: u64,
    pub scale: Scale,
}

impl Chords {
    pub fn new(topo: &exaviz_model::Topology, traffic: &[u64]) -> Self {
        let mut map: HashMap<(u32, u32), (u64, u64)> = HashMap::with_capacity(topo.link_count() / 2 + 1);
        for (l, &t) in traffic.iter().enumerate() {
            let (s, d) = (topo.links.source[l], topo.links.destination[l]);
            let entry = map.entry((s.min(d), s.max(d))).or_default();
            entry.0 += t;
            entry.1 += if s < d { t } else { 0 };
        }
        let mut both: Vec<((u32, u32), (u64, u64))> = map.into_iter().collect();
        both.sort_unstable_by_key(|&(k, (t, _))| (t, k));
        let upward = both.iter().map(|c| c.1.1).collect();
        let list: Vec<((u32, u32), u64)> = both.into_iter().map(|(k, (t, _))| (k, t)).collect();
        let mut chords = Self { list, upward, max: 0, scale: Scale::auto(1.0, 1.0) };
        chords.rescale();
        chords
    }

    /// Sets `max` and the colour scale from `list` (sorted by traffic).
    fn rescale(&mut self) {
        self.max = self.list.last().map_or(0, |c| c.1);
        let min_positive = self.list.iter().map(|c| c.1).find(|&t| t > 0).unwrap_or(0);
        self.scale = Scale::auto(min_positive.max(1) as f64, self.max.max(1) as f64);
    }

    /// Keeps the chords between nodes `a < b` for which `keep(a, b)`; the scale follows them.
    pub fn retain(&mut self, keep: impl Fn(u32, u32) -> bool) {
        let (list, upward): (Vec<_>, Vec<_>) =
            self.list.iter().zip(&self.upward).filter(|(c, _)| keep(c.0.0, c.0.1)).map(|(c, u)| (*c, *u)).unzip();
        (self.list, self.upward) = (list, upward);
        self.rescale();
    }

    /// Colour and width of a chord carrying `t`.
    pub fn style(&self, map: ColorMap, t: u64) -> ([f32; 4], f32) {
        if self.max == 0 {
            ([0.55, 0.6, 0.7, 0.35], 0.8)
        } else if t == 0 {
            ([0.4, 0.42, 0.48, 0.25], 0.6)
        } else {
            let s = self.scale.normalise(t as f64);
            let mut c = map.sample(s);
            c[3] = 0.35 + 0.6 * s;
            (c, 0.7 + 2.3 * s)
        }
    }
}

/// Traffic on each node's links, both directions: the sum over links touching the node.
pub fn node_traffic(topo: &Topology, link_traffic: &[u64]) -> Vec<u64> {
    let mut t = vec![0u64; topo.node_count()];
    for (l, &v) in link_traffic.iter().enumerate() {
        t[topo.links.source[l] as usize] += v;
        t[topo.links.destination[l] as usize] += v;
    }
    t
}
