//! Deterministic inputs shared by the benches.

use exaviz_model::rng::SplitMix64;

/// `n` messages between `ranks` ranks: (source, destination, bytes).
pub fn messages(n: usize, ranks: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut r = SplitMix64(1);
    let src = (0..n).map(|_| r.below(ranks)).collect();
    let dst = (0..n).map(|_| r.below(ranks)).collect();
    let bytes = (0..n).map(|_| r.below(65_536)).collect();
    (src, dst, bytes)
}

/// `n` points as `benches/peer_compare.py points` writes them (x and y columns): half uniform in
/// a `size`² square, half in a Gaussian blob.
pub fn points(n: usize, size: u32) -> (Vec<f32>, Vec<f32>) {
    let mut r = SplitMix64(4);
    let s = size as f32;
    (0..n)
        .map(|i| {
            if i % 2 == 1 {
                (r.unit() * s, r.unit() * s)
            } else {
                // Box-Muller: a normal pair from two uniforms.
                let (a, b) = (r.unit().max(1e-9), r.unit());
                let g = (-2.0 * a.ln()).sqrt();
                let (u, v) = (g * (std::f32::consts::TAU * b).cos(), g * (std::f32::consts::TAU * b).sin());
                ((s * 0.39 + 90.0 * u).rem_euclid(s), (s * 0.59 + 60.0 * v).rem_euclid(s))
            }
        })
        .unzip()
}

/// `n` segments about 16 pixels long inside a `size`² image.
pub fn short_segments(n: usize, size: u32) -> Vec<[f32; 4]> {
    let mut r = SplitMix64(2);
    (0..n)
        .map(|_| {
            let (x, y) = (r.unit() * size as f32, r.unit() * size as f32);
            let a = r.unit() * std::f32::consts::TAU;
            [x, y, x + 16.0 * a.cos(), y + 16.0 * a.sin()]
        })
        .collect()
}

/// `n` message lines of a timeline plot `width x height` pixels (1,024 rows): from a sender's
/// row centre to a receiver's, nine in ten to a row next to it and a few pixels later (a
/// stencil's neighbours at a deep zoom), one in ten to any row up to a tenth of the plot later.
pub fn timeline_lines(n: usize, width: u32, height: u32) -> Vec<[f32; 4]> {
    let mut r = SplitMix64(3);
    let row = |k: u32| (k as f32 + 0.5) * height as f32 / 1024.0;
    (0..n)
        .map(|_| {
            let (x, from) = (r.unit() * width as f32, r.below(1024));
            let (to, dx) = if r.below(10) == 0 {
                (r.below(1024), r.unit() * width as f32 / 10.0)
            } else {
                ((from + r.below(3)).saturating_sub(1).min(1023), r.unit() * 4.0)
            };
            [x, row(from), x + dx, row(to)]
        })
        .collect()
}
