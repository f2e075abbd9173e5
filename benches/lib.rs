//! Deterministic inputs shared by the benches.

/// SplitMix64 stream.
pub fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` messages between `ranks` ranks: (source, destination, bytes).
pub fn messages(n: usize, ranks: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut r = rng(1);
    let src = (0..n).map(|_| (r() % u64::from(ranks)) as u32).collect();
    let dst = (0..n).map(|_| (r() % u64::from(ranks)) as u32).collect();
    let bytes = (0..n).map(|_| (r() % 65_536) as u32).collect();
    (src, dst, bytes)
}

/// `n` segments about 16 pixels long inside a `size`² image.
pub fn short_segments(n: usize, size: u32) -> Vec<[f32; 4]> {
    let mut r = rng(2);
    let mut u = move || (r() >> 40) as f32 / (1u64 << 24) as f32;
    (0..n)
        .map(|_| {
            let (x, y) = (u() * size as f32, u() * size as f32);
            let a = u() * std::f32::consts::TAU;
            [x, y, x + 16.0 * a.cos(), y + 16.0 * a.sin()]
        })
        .collect()
}
