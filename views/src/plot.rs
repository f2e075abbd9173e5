//! Shared pieces of the 2-D views: the plot rectangle inside the picture, a frame with ticked
//! and labelled axes, categorical colours, and pasting a computed RGB plot into the picture.

use exaviz_render::{Anchor, Image, Scene};

use super::{TEXT, TEXT_DIM};

/// The plot rectangle in picture pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plot {
    pub x0: u32,
    pub y0: u32,
    pub w: u32,
    pub h: u32,
}

impl Plot {
    /// The plot inside a `width x height` picture with margins left, top, right, bottom.
    pub fn inside(width: u32, height: u32, [l, t, r, b]: [u32; 4]) -> Option<Self> {
        let w = width.checked_sub(l + r).filter(|&w| w >= 16)?;
        let h = height.checked_sub(t + b).filter(|&h| h >= 16)?;
        Some(Self { x0: l, y0: t, w, h })
    }
}

/// A tick: position along the axis in `[0, 1]` (0: left or top) and its label.
pub type Tick = (f32, String);

/// Frame, ticks, tick labels and axis titles around `p` (an empty title is left out).
pub fn axes(scene: &mut Scene, p: Plot, x_ticks: &[Tick], y_ticks: &[Tick], x_title: &str, y_title: &str) {
    let frame = [0.45, 0.47, 0.52, 1.0];
    let (x0, y0, w, h) = (p.x0 as f32, p.y0 as f32, p.w as f32, p.h as f32);
    scene.rect([x0 - 1.0, y0 - 1.0], [x0 + w + 1.0, y0], frame, true);
    scene.rect([x0 - 1.0, y0 + h], [x0 + w + 1.0, y0 + h + 1.0], frame, true);
    scene.rect([x0 - 1.0, y0], [x0, y0 + h], frame, true);
    scene.rect([x0 + w, y0], [x0 + w + 1.0, y0 + h], frame, true);
    for (t, label) in x_ticks {
        let x = (x0 + t * w).round();
        scene.rect([x - 0.5, y0 + h + 1.0], [x + 0.5, y0 + h + 6.0], TEXT_DIM, true);
        scene.text(label, [x, y0 + h + 18.0], 11.0, Anchor::Centre, TEXT_DIM);
    }
    for (t, label) in y_ticks {
        let y = (y0 + t * h).round();
        scene.rect([x0 - 6.0, y - 0.5], [x0 - 1.0, y + 0.5], TEXT_DIM, true);
        scene.text(label, [x0 - 8.0, y + 4.0], 11.0, Anchor::Right, TEXT_DIM);
    }
    scene.text(&fit(x_title, w, 12.0), [x0 + w / 2.0, y0 + h + 34.0], 12.0, Anchor::Centre, TEXT);
    if !y_title.is_empty() {
        scene.text(y_title, [8.0, y0 - 10.0], 12.0, Anchor::Left, TEXT);
    }
}

/// Okabe & Ito's eight colours, distinguishable with the common colour-vision deficiencies
/// (black is replaced by a light grey that shows on the dark background).
pub const CATEGORICAL: [[f32; 3]; 8] = [
    [0.902, 0.624, 0.0],
    [0.337, 0.706, 0.914],
    [0.0, 0.620, 0.451],
    [0.941, 0.894, 0.259],
    [0.0, 0.447, 0.698],
    [0.835, 0.369, 0.0],
    [0.800, 0.475, 0.655],
    [0.75, 0.75, 0.75],
];

/// How overlapping message lines combine (Brendel et al. uses both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mix {
    /// Over each other: a pixel shows the mean colour of its lines, more opaque where more cross.
    #[default]
    Alpha,
    /// Colours add up: crowded paths saturate towards white ("hot paths").
    Additive,
}

pub use exaviz_render::colormap::direction_colour;

/// The legend of [`direction_colour`]: a title, a gradient bar whose top is at `y`, its ends named.
pub fn direction_legend(scene: &mut Scene, x: f32, y: f32) {
    scene.text("message direction", [x, y - 8.0], 13.0, Anchor::Left, TEXT);
    for k in 0..32 {
        let c = direction_colour(k as f32 / 31.0);
        let x0 = x + k as f32 * 4.0;
        scene.rect([x0, y], [x0 + 4.0, y + 12.0], [c[0], c[1], c[2], 1.0], true);
    }
    scene.text("sender", [x, y + 26.0], 11.0, Anchor::Left, TEXT_DIM);
    scene.text("receiver", [x + 128.0, y + 26.0], 11.0, Anchor::Right, TEXT_DIM);
}

/// Writes `rgba(x, y)` (plot pixels, straight alpha) over the picture's plot area.
pub fn paste(image: &mut Image, p: Plot, rgba: impl Fn(u32, u32) -> Option<[f32; 4]> + Sync) {
    let width = image.width;
    for y in 0..p.h {
        for x in 0..p.w {
            if let Some(c) = rgba(x, y) {
                let i = (((p.y0 + y) * width + p.x0 + x) * 4) as usize;
                for (dst, v) in image.pixels[i..i + 3].iter_mut().zip(c) {
                    let under = f32::from(*dst) / 255.0;
                    *dst = ((under + (v - under) * c[3]).clamp(0.0, 1.0) * 255.0).round() as u8;
                }
            }
        }
    }
}

/// `text` cut to fit `width` pixels at `size_px`, ending in "…" where cut (titles of narrow
/// panels).
pub fn fit(text: &str, width: f32, size_px: f32) -> String {
    use exaviz_render::TextAtlas;
    if TextAtlas::measure(text, size_px) <= width {
        return text.to_string();
    }
    let mut cut: String = text.to_string();
    while !cut.is_empty() && TextAtlas::measure(&format!("{cut}…"), size_px) > width {
        cut.pop();
    }
    format!("{}…", cut.trim_end())
}

/// `text` cut in the middle to fit `width` at `size_px`: its start and its end kept, `tail`
/// of what is kept from the end, an ellipsis between (the end often tells names apart:
/// "thread 1…(pt_autograd_0)").
pub fn fit_middle(text: &str, width: f32, size_px: f32, tail: f32) -> String {
    use exaviz_render::TextAtlas;
    if TextAtlas::measure(text, size_px) <= width {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    for keep in (1..chars.len()).rev() {
        let back = ((keep as f32 * tail).round() as usize).min(keep);
        let front = keep - back;
        let cut: String = chars[..front].iter().collect::<String>().trim_end().to_string()
            + "…"
            + chars[chars.len() - back..].iter().collect::<String>().trim_start();
        if TextAtlas::measure(&cut, size_px) <= width {
            return cut;
        }
    }
    "…".to_string()
}

/// Each of `texts` fitted to `width` at `size_px`, cut in the middle; where texts that differ
/// would read the same, each of those is cut elsewhere (keeping more of its start, or more of
/// its end) where that makes it read apart from every other.
pub fn fit_apart(texts: &[String], width: f32, size_px: f32) -> Vec<String> {
    fit_apart_keeping(texts, width, size_px, 0.5)
}

/// [`fit_apart`], keeping `tail` of what is kept from each text's end where it is first cut
/// (row labels keep more of their start, where names tell rows apart: `rank 5`, `Thread 0`).
pub fn fit_apart_keeping(texts: &[String], width: f32, size_px: f32, tail: f32) -> Vec<String> {
    let mut out: Vec<String> = texts.iter().map(|t| fit_middle(t, width, size_px, tail)).collect();
    let clashing =
        |out: &[String], k: usize| (0..out.len()).any(|j| j != k && out[j] == out[k] && texts[j] != texts[k]);
    for k in 0..out.len() {
        if !clashing(&out, k) {
            continue;
        }
        for tail in [0.7, 0.3, 0.85, 0.15, 1.0, 0.0] {
            let cut = fit_middle(&texts[k], width, size_px, tail);
            let apart = (0..out.len()).all(|j| j == k || out[j] != cut || texts[j] == texts[k]);
            if apart {
                out[k] = cut;
                break;
            }
        }
    }
    out
}

/// About `n` round tick values spanning `[lo, hi]`, as positions in `[0, 1]`.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<(f32, f64)> {
    if hi <= lo || n == 0 {
        return vec![(0.0, lo)];
    }
    let raw = (hi - lo) / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|&s| s >= raw).unwrap_or(10.0 * mag);
    let mut v = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while v <= hi + step * 1e-9 {
        out.push((((v - lo) / (hi - lo)) as f32, v));
        v += step;
    }
    out
}

/// A picture's title (16 px) and subtitle (12 px) at its top left, each fitted to `width`.
pub fn titles(scene: &mut Scene, width: f32, title: &str, subtitle: &str) {
    scene.text(&fit(title, width - 24.0, 16.0), [16.0, 26.0], 16.0, Anchor::Left, TEXT);
    scene.text(&fit(subtitle, width - 24.0, 12.0), [16.0, 46.0], 12.0, Anchor::Left, TEXT_DIM);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_cut_to_fit() {
        assert_eq!(fit("short", 500.0, 15.0), "short");
        let cut = fit("a rather long title for a narrow panel", 120.0, 15.0);
        assert!(cut.ends_with('…') && exaviz_render::TextAtlas::measure(&cut, 15.0) <= 120.0, "{cut}");
    }

    /// The direction colours' two ends stay apart in hue for readers with deuteranopia and
    /// protanopia (simulated), where the green-to-red pair of the papers does not.
    #[test]
    fn direction_colours_survive_colour_blindness() {
        use exaviz_render::colormap::{Deficiency, chroma_distance, simulate};
        let apart = |a: [f32; 3], b: [f32; 3], d: Deficiency| chroma_distance(simulate(a, d), simulate(b, d));
        let (sender, receiver) = (direction_colour(0.0), direction_colour(1.0));
        for d in [Deficiency::Deuteranopia, Deficiency::Protanopia, Deficiency::Tritanopia] {
            assert!(apart(sender, receiver, d) > 40.0, "{d:?}: {}", apart(sender, receiver, d));
        }
        let (green, red) = ([0.0, 1.0, 0.15], [1.0, 0.0, 0.15]);
        assert!(apart(green, red, Deficiency::Deuteranopia) < 20.0, "the test tells a pair that fails");
        // The simulation keeps greys grey.
        let g = simulate([0.5; 3], Deficiency::Deuteranopia);
        assert!(g.iter().all(|v| (v - 0.5).abs() < 0.01), "{g:?}");
    }

    #[test]
    fn ticks_are_round_and_inside() {
        let t = nice_ticks(0.0, 240.0, 5);
        assert_eq!(t.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0.0, 50.0, 100.0, 150.0, 200.0]);
        assert!(t.iter().all(|x| (0.0..=1.0).contains(&x.0)));
        assert_eq!(nice_ticks(3.0, 3.0, 5).len(), 1);
    }
}
