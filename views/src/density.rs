//! Density pictures: an accumulation image (stage b) tone-mapped through a colour map, with
//! axes in data units, a colour bar and a title.

use exaviz_compute::Backend;
use exaviz_compute::DensityImage;
use exaviz_render::{Anchor, ColorMap, Image, Scale, Scene, ToneMap, View, render_scene};

use super::legend::{color_bar, format_value};
use super::plot::{Plot, Tick, axes};
use super::{BACKGROUND, TEXT, ViewError};

/// Margins around the plot: left (y axis), top (title), right (legend), bottom (x axis).
const MARGIN: [u32; 4] = [64, 48, 150, 40];

/// Picture size for a plot of `w x h` pixels.
pub fn picture_size(w: u32, h: u32) -> (u32, u32) {
    (w + MARGIN[0] + MARGIN[2], h + MARGIN[1] + MARGIN[3])
}

/// Draws `density` (its weight sums) with axes over `x_range` and `y_range` (data units, y up).
pub fn density_picture(
    backend: &Backend,
    density: &DensityImage,
    tone: ToneMap,
    map: ColorMap,
    title: &str,
    x_range: [f64; 2],
    y_range: [f64; 2],
) -> Result<Image, ViewError> {
    let (pw, ph) = (density.width, density.height);
    let (w, h) = picture_size(pw, ph);
    let mut scene = Scene::new(w, h, BACKGROUND);
    let (x0, y0) = (MARGIN[0] as f32, MARGIN[1] as f32);
    scene.text(title, [16.0, 28.0], 15.0, Anchor::Left, TEXT);
    // Plot frame and axes with five ticks each (y up: the first tick at the bottom).
    let at = |range: [f64; 2], t: f64| format_value(range[0] + (range[1] - range[0]) * t);
    let x_ticks: Vec<Tick> = (0..=4).map(|k| (k as f32 / 4.0, at(x_range, f64::from(k) / 4.0))).collect();
    let y_ticks: Vec<Tick> = (0..=4).map(|k| (1.0 - k as f32 / 4.0, at(y_range, f64::from(k) / 4.0))).collect();
    axes(&mut scene, Plot { x0: MARGIN[0], y0: MARGIN[1], w: pw, h: ph }, &x_ticks, &y_ticks, "", "");
    let max = density.sums.iter().copied().max().unwrap_or(0);
    let scale = match tone {
        ToneMap::Log => Scale { lo: 1.0, hi: (max as f64).max(1.0), log: true },
        _ => Scale { lo: 0.0, hi: max as f64, log: false },
    };
    let bar = [x0 + pw as f32 + 20.0, y0 + 30.0, 16.0, (ph as f32 - 60.0).max(30.0)];
    color_bar(&mut scene, map, scale, &format!("weight per pixel\n({} tone)", tone.name()), bar);
    let mut image =
        render_scene(backend, &scene, View::default()).map_err(|e| ViewError::Unsupported(e.to_string()))?;
    // The plot area itself: tone-mapped densities, row 0 of the accumulation at the bottom.
    let toned = tone.apply(&density.sums);
    for py in 0..ph {
        for px in 0..pw {
            if let Some(t) = toned[(py * pw + px) as usize] {
                let c = map.sample(t);
                let (ix, iy) = (MARGIN[0] + px, MARGIN[1] + (ph - 1 - py));
                let i = ((iy * w + ix) * 4) as usize;
                for (dst, v) in image.pixels[i..i + 3].iter_mut().zip(c) {
                    *dst = (v * 255.0).round() as u8;
                }
            }
        }
    }
    Ok(image)
}

/// Draws the lines aggregated in `image` (weighted by a value per line) as one pixel rectangle per
/// covered pixel, at `origin` in scene pixels: coloured by `colour` of the mean value of the lines
/// through the pixel, and more opaque with the log of their count (Datashader's `how='log'` on
/// alpha), so dense pictures keep both the busy lines' colour and the crowding.
pub(crate) fn mean_value_pixels(
    scene: &mut Scene,
    image: &DensityImage,
    origin: [f32; 2],
    colour: impl Fn(f64) -> [f32; 4],
) {
    let most = image.counts.iter().copied().max().unwrap_or(0).max(2);
    for py in 0..image.height {
        for px in 0..image.width {
            let k = (py * image.width + px) as usize;
            let count = image.counts[k];
            if count == 0 {
                continue;
            }
            let mut c = colour(image.sums[k] as f64 / f64::from(count));
            c[3] = 0.15 + 0.85 * (f64::from(count).ln() / f64::from(most).ln()) as f32;
            let (x, y) = (origin[0] + px as f32, origin[1] + py as f32);
            scene.rect([x, y], [x + 1.0, y + 1.0], c, false);
        }
    }
}
