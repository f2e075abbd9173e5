//! Deterministic inputs shared by the benches.

use exaviz_datasets::rng::SplitMix64;

/// `n` messages between `ranks` ranks: (source, destination, bytes).
pub fn messages(n: usize, ranks: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut r = SplitMix64(1);
    let src = (0..n).map(|_| r.below(ranks)).collect();
    let dst = (0..n).map(|_| r.below(ranks)).collect();
    let bytes = (0..n).map(|_| r.below(65_536)).collect();
    (src, dst, bytes)
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
