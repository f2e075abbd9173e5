//! What every CPU mirror reads like its shader: storage buffers as words that atomics add to,
//! and the kernels' parameters read from their uniform words. Below the mirrors and the CPU
//! runner that calls them.

use std::sync::atomic::AtomicU32;

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

/// The workgroup size, as the mirrors name it.
pub const WG: u32 = WORKGROUP;
