//! Raster layers: a grid of cells drawn as one textured quad, instead of one rectangle instance
//! per cell. A grid is either colours (straight-alpha RGBA8 per cell) or values shaded in the
//! shader: tone-mapped (linear, log or histogram-equalised) to `[0, 1]`, then looked up in a
//! 256-entry colour table. The GPU draws it with `raster.wgsl` beside it; the CPU mirror
//! ([`Raster::shade_cell`], [`Raster::cell_at`]) does the same arithmetic in the same order, so
//! both paths pick the same cell for a pixel and the same colour for a value.

use super::{ColorMap, ToneMap};

/// Entries of the colour table and of the equalisation table.
pub const TABLE: usize = 256;

/// How a value grid becomes colours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shade {
    pub map: ColorMap,
    pub tone: ToneMap,
    /// Multiplies every cell's opacity.
    pub opacity: f32,
}

/// What the cells hold.
#[derive(Clone, Debug, PartialEq)]
pub enum RasterData {
    /// A straight-alpha colour per cell.
    Rgba(Vec<[u8; 4]>),
    /// A value per cell (zero, negative or NaN: nothing there), shaded as `shade` says.
    Values { values: Vec<f32>, shade: Shade },
    /// A straight-alpha colour per cell packed in a word (red in the low byte), rows `stride`
    /// words apart, kept where a compute stage made it: the GPU renderer copies it into its
    /// texture on the device; the CPU renderer reads it (back, from a device).
    Device { words: exaviz_compute::DeviceWords, stride: u32 },
    /// A picture kept on a GPU device as a texture of straight RGBA8 (a window draws the last
    /// picture moved and magnified from it); the CPU renderer reads it back.
    Texture(super::kept::DeviceImage),
}

/// A grid of `width x height` cells covering `rect` (`[x0, y0, x1, y1]`, scene pixels moved by
/// pan and zoom, or screen pixels with `screen`). Row 0 is at the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Raster {
    pub rect: [f32; 4],
    pub width: u32,
    pub height: u32,
    pub data: RasterData,
    pub screen: bool,
}

/// The tone map's parameters, computed once per grid on the CPU and shared by both paths.
#[derive(Clone, Debug, PartialEq)]
pub struct ToneParams {
    /// 0 linear, 1 log, 2 equalised (as `raster.wgsl`'s `TONE_*`).
    pub kind: u32,
    /// Largest value (linear, log).
    pub max: f32,
    /// Equalised: the values at `1/256, 2/256, ..., 1` of the sorted positive values.
    pub quantiles: Vec<f32>,
}

/// Tone kinds, as `raster.wgsl`'s constants.
pub const TONE_LINEAR: u32 = 0;
pub const TONE_LOG: u32 = 1;
pub const TONE_EQUALIZE: u32 = 2;

impl Raster {
    /// A colour grid; `pixels` must hold `width * height` cells.
    pub fn rgba(rect: [f32; 4], width: u32, height: u32, pixels: Vec<[u8; 4]>) -> Self {
        debug_assert_eq!(pixels.len(), width as usize * height as usize);
        Self { rect, width, height, data: RasterData::Rgba(pixels), screen: false }
    }

    /// A value grid; `values` must hold `width * height` cells.
    pub fn values(rect: [f32; 4], width: u32, height: u32, values: Vec<f32>, shade: Shade) -> Self {
        debug_assert_eq!(values.len(), width as usize * height as usize);
        Self { rect, width, height, data: RasterData::Values { values, shade }, screen: false }
    }

    /// This raster with its cells in memory: a raster kept on a device read back (its cells
    /// left empty where that fails), any other as it is.
    pub fn on_host(&self) -> std::borrow::Cow<'_, Raster> {
        if let RasterData::Texture(kept) = &self.data {
            let pixels = match kept.image() {
                Ok(image) => image.pixels.chunks_exact(4).map(|p| [p[0], p[1], p[2], p[3]]).collect(),
                Err(_) => vec![[0u8; 4]; self.width as usize * self.height as usize],
            };
            return std::borrow::Cow::Owned(Raster { data: RasterData::Rgba(pixels), ..self.clone() });
        }
        let RasterData::Device { words, stride } = &self.data else { return std::borrow::Cow::Borrowed(self) };
        let (w, h) = (self.width as usize, self.height as usize);
        let all = words.read_all().unwrap_or_default();
        let mut pixels = vec![[0u8; 4]; w * h];
        for (y, row) in pixels.chunks_mut(w.max(1)).enumerate() {
            let from = y * *stride as usize;
            if let Some(src) = all.get(from..from + w) {
                for (px, &v) in row.iter_mut().zip(src) {
                    *px = v.to_le_bytes();
                }
            }
        }
        std::borrow::Cow::Owned(Raster { data: RasterData::Rgba(pixels), ..self.clone() })
    }

    /// This colour grid kept where `backend` draws: on a GPU device its cells are uploaded once
    /// (rows 256 bytes apart) and copied into the renderer's texture there at every picture, so
    /// a picture drawn again (a pan, a zoom) uploads none of them. On the CPU, as it is.
    pub fn kept_on(self, backend: &exaviz_compute::Backend) -> Self {
        let RasterData::Rgba(pixels) = &self.data else { return self };
        if !backend.is_gpu() || self.width == 0 {
            return self;
        }
        let stride = self.width.div_ceil(64) * 64;
        let mut words = vec![0u32; stride as usize * self.height as usize];
        for (row, src) in words.chunks_mut(stride as usize).zip(pixels.chunks(self.width as usize)) {
            for (w, p) in row.iter_mut().zip(src) {
                *w = u32::from_le_bytes(*p);
            }
        }
        let words = backend.keep_words(words);
        Self { data: RasterData::Device { words, stride }, ..self }
    }

    /// Placed in screen pixels: not moved by pan and zoom.
    pub fn in_screen_pixels(mut self) -> Self {
        self.screen = true;
        self
    }

    /// The grid in pieces of at most `max_side` cells a side (a GPU texture's limit), each
    /// covering its share of `rect`; the GPU renderer shades every piece with the whole grid's
    /// tone parameters.
    pub fn split(&self, max_side: u32) -> Vec<Raster> {
        let max_side = max_side.max(1);
        if self.width <= max_side && self.height <= max_side {
            return vec![self.clone()];
        }
        if let RasterData::Device { .. } | RasterData::Texture(_) = &self.data {
            return self.on_host().split(max_side);
        }
        let [x0, y0, x1, y1] = self.rect;
        let mut out = Vec::new();
        for ty in (0..self.height).step_by(max_side as usize) {
            for tx in (0..self.width).step_by(max_side as usize) {
                let (w, h) = (max_side.min(self.width - tx), max_side.min(self.height - ty));
                let at = |x: u32, y: u32| {
                    [x0 + (x1 - x0) * x as f32 / self.width as f32, y0 + (y1 - y0) * y as f32 / self.height as f32]
                };
                let (a, b) = (at(tx, ty), at(tx + w, ty + h));
                let rows = (ty..ty + h).map(|y| {
                    (y as usize * self.width as usize + tx as usize)
                        ..(y as usize * self.width as usize + (tx + w) as usize)
                });
                let data = match &self.data {
                    RasterData::Rgba(p) => RasterData::Rgba(rows.flat_map(|r| p[r].iter().copied()).collect()),
                    RasterData::Device { .. } | RasterData::Texture(_) => unreachable!("read back above"),
                    RasterData::Values { values, shade } => RasterData::Values {
                        values: rows.flat_map(|r| values[r].iter().copied()).collect(),
                        shade: *shade,
                    },
                };
                out.push(Raster { rect: [a[0], a[1], b[0], b[1]], width: w, height: h, data, screen: self.screen });
            }
        }
        out
    }

    /// The tone parameters of a value grid (`None` for a colour grid).
    pub fn tone_params(&self) -> Option<ToneParams> {
        let RasterData::Values { values, shade } = &self.data else { return None };
        let positive = || values.iter().copied().filter(|v| *v > 0.0);
        let max = positive().fold(0.0f32, f32::max);
        let (kind, quantiles) = match shade.tone {
            ToneMap::Linear => (TONE_LINEAR, Vec::new()),
            ToneMap::Log => (TONE_LOG, Vec::new()),
            ToneMap::Equalize => {
                let mut sorted: Vec<f32> = positive().collect();
                sorted.sort_unstable_by(f32::total_cmp);
                let n = sorted.len();
                let q = (1..=TABLE).map(|k| if n == 0 { 0.0 } else { sorted[(k * n).div_ceil(TABLE) - 1] }).collect();
                (TONE_EQUALIZE, q)
            }
        };
        Some(ToneParams { kind, max, quantiles })
    }

    /// The cell under the target pixel centre `p` (target pixels plus the target's origin), for
    /// pan and zoom `view`; the same formula as `raster.wgsl`'s `cell_at`.
    pub fn cell_at(&self, p: [f32; 2], view: super::View) -> Option<(u32, u32)> {
        let q =
            if self.screen { p } else { [(p[0] - view.offset[0]) / view.scale, (p[1] - view.offset[1]) / view.scale] };
        let [x0, y0, x1, y1] = self.rect;
        let fx = (q[0] - x0) / (x1 - x0) * self.width as f32;
        let fy = (q[1] - y0) / (y1 - y0) * self.height as f32;
        let inside = fx >= 0.0 && fy >= 0.0 && fx < self.width as f32 && fy < self.height as f32;
        // Inside, `fx` and `fy` are not negative: truncating is `floor`, without a call into libm.
        inside.then(|| ((fx as u32).min(self.width - 1), (fy as u32).min(self.height - 1)))
    }

    /// Straight-alpha colour of cell `(x, y)` (alpha 0: nothing there), `table` being
    /// [`colour_table`] of the grid's map and `tone` its [`Raster::tone_params`].
    pub fn shade_cell(&self, x: u32, y: u32, table: &[[u8; 4]], tone: Option<&ToneParams>) -> [f32; 4] {
        let k = y as usize * self.width as usize + x as usize;
        match &self.data {
            RasterData::Rgba(p) => p[k].map(|c| f32::from(c) / 255.0),
            // Read back first ([`Raster::on_host`]): nothing drawn from here.
            RasterData::Device { .. } | RasterData::Texture(_) => [0.0; 4],
            RasterData::Values { values, shade } => {
                let Some(tone) = tone else { return [0.0; 4] };
                let v = values[k];
                // NaN is not above zero either.
                if v.is_nan() || v <= 0.0 {
                    return [0.0; 4];
                }
                let t = tone_of(v, tone);
                let c = table[lut_index(t)];
                [f32::from(c[0]) / 255.0, f32::from(c[1]) / 255.0, f32::from(c[2]) / 255.0, shade.opacity]
            }
        }
    }
}

/// `t` in `[0, 1]` of a positive value `v`; as `raster.wgsl`'s `tone`.
pub fn tone_of(v: f32, tone: &ToneParams) -> f32 {
    match tone.kind {
        TONE_LINEAR => v / tone.max.max(f32::MIN_POSITIVE),
        TONE_LOG => (1.0 + v).ln() / (1.0 + tone.max).ln().max(f32::MIN_POSITIVE),
        _ => {
            // The share of the 256 quantiles at or below v (a binary search of 8 steps).
            let q = &tone.quantiles;
            let (mut lo, mut hi) = (0usize, TABLE);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if q[mid] <= v { lo = mid + 1 } else { hi = mid }
            }
            lo as f32 / TABLE as f32
        }
    }
}

/// The colour-table entry of `t`, rounded to the nearest of 256.
pub fn lut_index(t: f32) -> usize {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    (t * (TABLE - 1) as f32 + 0.5).floor() as usize
}

/// The map sampled at 256 evenly spaced points, as the table both paths look colours up in.
pub fn colour_table(map: ColorMap) -> Vec<[u8; 4]> {
    (0..TABLE)
        .map(|k| map.sample(k as f32 / (TABLE - 1) as f32).map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::View;

    fn grid(tone: ToneMap) -> Raster {
        let values: Vec<f32> = (0..16).map(|k| k as f32).collect();
        Raster::values([0.0, 0.0, 4.0, 4.0], 4, 4, values, Shade { map: ColorMap::Viridis, tone, opacity: 1.0 })
    }

    #[test]
    fn tones_rise_from_low_to_one_at_the_maximum() {
        for tone in [ToneMap::Linear, ToneMap::Log, ToneMap::Equalize] {
            let r = grid(tone);
            let p = r.tone_params().expect("values");
            let ts: Vec<f32> = (1..16).map(|v| tone_of(v as f32, &p)).collect();
            assert!(ts.windows(2).all(|w| w[0] < w[1]), "{tone:?} rises: {ts:?}");
            assert!((ts[14] - 1.0).abs() < 1e-6, "{tone:?} reaches 1 at the maximum");
        }
        // Equalised: the 15 values spread evenly, so the middle value sits near the middle.
        let p = grid(ToneMap::Equalize).tone_params().expect("values");
        assert!((tone_of(8.0, &p) - 8.0 / 15.0).abs() < 0.01);
    }

    #[test]
    fn empty_cells_are_transparent_and_cells_follow_pan_and_zoom() {
        let r = grid(ToneMap::Linear);
        let table = colour_table(ColorMap::Viridis);
        let p = r.tone_params();
        assert_eq!(r.shade_cell(0, 0, &table, p.as_ref())[3], 0.0);
        assert_eq!(r.shade_cell(3, 3, &table, p.as_ref()), [253.0 / 255.0, 231.0 / 255.0, 37.0 / 255.0, 1.0]);
        assert_eq!(r.cell_at([0.5, 3.5], View::default()), Some((0, 3)));
        assert_eq!(r.cell_at([4.5, 0.5], View::default()), None);
        // Zoomed in twice and moved right by 2: pixel 4.5 shows scene x 1.25.
        let v = View { scale: 2.0, offset: [2.0, 0.0] };
        assert_eq!(r.cell_at([4.5, 0.5], v), Some((1, 0)));
        assert_eq!(r.clone().in_screen_pixels().cell_at([4.5, 0.5], v), None);
    }
}
