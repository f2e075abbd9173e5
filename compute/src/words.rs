//! What every CPU mirror reads like its shader: storage buffers as words that atomics add to,
//! and the kernels' parameters read from their uniform words. Below the mirrors and the CPU
//! runner that calls them.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use crate::{StageError, WORKGROUP};

/// Storage buffers as the mirrors see them.
pub type Words = [AtomicU32];

/// Reads a `#[repr(C)]` params struct from uniform words (shared by the mirrors).
pub fn params_from_words<T: bytemuck::Pod>(words: &[u32]) -> Result<T, StageError> {
    let bytes: &[u8] = bytemuck::cast_slice(words);
    if bytes.len() != size_of::<T>() {
        return Err(StageError::Input(format!("params of {} bytes, expected {}", bytes.len(), size_of::<T>())));
    }
    Ok(bytemuck::pod_read_unaligned(bytes))
}

/// Word `i` of a storage buffer.
pub fn word(w: &Words, i: usize) -> u32 {
    w[i].load(Relaxed)
}

/// Adds `w` to the 64-bit sum at `sums[2p..2p + 2]` (low word first), as the shaders' atomic
/// adds with a carry do.
pub fn add64(sums: &Words, p: usize, w: u32) {
    let old = sums[2 * p].fetch_add(w, Relaxed);
    if old > 0xffff_ffff - w {
        sums[2 * p + 1].fetch_add(1, Relaxed);
    }
}

/// A colour channel from 0 to 1 as a byte, as the shaders' `unorm8` rounds it.
pub fn unorm8(v: f32) -> u32 {
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u32
}

/// The workgroup size, as the mirrors name it.
pub const WG: u32 = WORKGROUP;
