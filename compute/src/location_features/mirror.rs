//! CPU mirror of `location_features.wgsl` (keep the two in sync).

use std::sync::atomic::Ordering::Relaxed;

use crate::StageError;
use crate::words::Words;

/// Mirror of the WGSL `Params` (8 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub locations: u32,
    pub bins: u32,
    pub slots: u32,
    pub bin_quanta: u32,
    pub reps: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}
const _: () = assert!(size_of::<Params>() == 32);

impl Params {
    pub fn from_words(words: &[u32]) -> Result<Self, StageError> {
        crate::words::params_from_words(words)
    }
}

/// One invocation of `location_features`: interval `i`'s time added to each bin it overlaps.
pub fn location_features(i: u32, params: &Params, spans: &Words, features: &Words) {
    if i >= params.n {
        return;
    }
    let at = 4 * i as usize;
    let (l, a, end_q, slot) = (
        spans[at].load(Relaxed),
        spans[at + 1].load(Relaxed),
        spans[at + 2].load(Relaxed),
        spans[at + 3].load(Relaxed),
    );
    let end = params.bins * params.bin_quanta;
    let b = end_q.min(end);
    if l >= params.locations || slot >= params.slots || a >= b {
        return;
    }
    let w = params.bin_quanta;
    let row = l * params.bins;
    for bin in a / w..=(b - 1) / w {
        let lo = a.max(bin * w);
        let hi = b.min((bin + 1) * w);
        features[((row + bin) * params.slots + slot) as usize].fetch_add(hi - lo, Relaxed);
    }
}

/// One invocation of `location_distances`: location `l`'s nearest representative and its L1
/// distance.
pub fn location_distances(l: u32, params: &Params, features_in: &Words, reps: &Words, nearest: &Words) {
    if l >= params.n {
        return;
    }
    let d = params.bins * params.slots;
    let (mut best, mut best_d) = (0u32, u32::MAX);
    for r in 0..params.reps {
        let mut sum = 0u32;
        for k in 0..d {
            let x = features_in[(l * d + k) as usize].load(Relaxed);
            let y = reps[(r * d + k) as usize].load(Relaxed);
            sum = sum.wrapping_add(x.max(y) - x.min(y));
        }
        if sum < best_d {
            best_d = sum;
            best = r;
        }
    }
    nearest[2 * l as usize].store(best, Relaxed);
    nearest[2 * l as usize + 1].store(best_d, Relaxed);
}
