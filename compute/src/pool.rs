//! Buffers kept on the device between runs of recorded work.

use std::collections::HashMap;

/// What a kept buffer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Use {
    Storage,
    Uniform,
    ReadBack,
}

impl Use {
    fn usages(self) -> wgpu::BufferUsages {
        use wgpu::BufferUsages as U;
        match self {
            Self::Storage => U::STORAGE | U::COPY_DST | U::COPY_SRC,
            Self::Uniform => U::UNIFORM | U::COPY_DST,
            Self::ReadBack => U::MAP_READ | U::COPY_DST,
        }
    }
}

/// Bytes of buffers the pool keeps between runs at most.
const POOL_BYTES: u64 = 256 << 20;

/// Buffers kept between runs of recorded work, by use and size (powers of two of at least 256
/// bytes, or the exact size past the largest power of two a buffer may have), so that a
/// gesture reuses the buffers the one before it made rather than creating them again.
#[derive(Default)]
pub struct Pool {
    free: HashMap<(Use, u64), Vec<wgpu::Buffer>>,
    bytes: u64,
    /// Buffers created, and buffers reused from the pool (for tests).
    created: u64,
    reused: u64,
}

impl Pool {
    /// A buffer of at least `bytes` for `usage`, reused where one is kept (then true: its
    /// contents are those of its last use).
    pub(crate) fn take(
        &mut self,
        device: &wgpu::Device,
        usage: Use,
        bytes: u64,
        max_buffer: u64,
    ) -> (wgpu::Buffer, bool) {
        let class = bytes.max(256).next_power_of_two();
        let size = if class <= max_buffer { class } else { bytes.next_multiple_of(4) };
        if let Some(b) = self.free.get_mut(&(usage, size)).and_then(Vec::pop) {
            self.bytes -= size;
            self.reused += 1;
            return (b, true);
        }
        self.created += 1;
        let b = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(match usage {
                Use::Storage => "exaviz.stage.storage",
                Use::Uniform => "exaviz.stage.params",
                Use::ReadBack => "exaviz.stage.readback",
            }),
            size,
            usage: usage.usages(),
            mapped_at_creation: false,
        });
        (b, false)
    }

    /// Keeps `b` for a later run, where the pool has room for it.
    pub(crate) fn give(&mut self, usage: Use, b: wgpu::Buffer) {
        let size = b.size();
        if self.bytes + size <= POOL_BYTES {
            self.bytes += size;
            self.free.entry((usage, size)).or_default().push(b);
        }
    }

    /// Buffers created and buffers reused so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.created, self.reused)
    }
}

/// Columns kept on the device between runs: words of an [`crate::Owner`] uploaded once and
/// bound again by later runs, each entry holding its owner so that its words cannot change or
/// be freed while kept. Within a budget of bytes; the least recently used entry goes first, and
/// an entry whose owner nothing else holds goes at the next lookup.
pub struct Resident {
    entries: HashMap<ResidentKey, Kept>,
    bytes: u64,
    budget: u64,
    clock: u64,
    /// Uploads served from kept words, and uploads that kept new ones (for tests and reports).
    hits: u64,
    misses: u64,
}

/// An owner, and the address and length of the words of it.
type ResidentKey = (usize, usize, usize);

struct Kept {
    buffer: wgpu::Buffer,
    owner: crate::Owner,
    used: u64,
}

/// What [`Resident::bind`] found or made.
pub(crate) struct Bound {
    pub buffer: wgpu::Buffer,
    /// True where the words were uploaded now.
    pub uploaded: bool,
}

impl Resident {
    /// An empty store keeping at most `budget` bytes.
    pub fn new(budget: u64) -> Self {
        Self { entries: HashMap::new(), bytes: 0, budget, clock: 0, hits: 0, misses: 0 }
    }

    /// The device buffer holding `data` of `owner`: kept from an earlier run, or uploaded now
    /// (and kept where the budget allows).
    pub(crate) fn bind(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        data: &[u32],
        owner: &crate::Owner,
    ) -> Bound {
        self.clock += 1;
        // An owner held by its entries alone (each holds it once) is gone for everyone else.
        let mut held: HashMap<usize, usize> = HashMap::new();
        for (key, _) in self.entries.iter() {
            *held.entry(key.0).or_default() += 1;
        }
        let bytes = &mut self.bytes;
        self.entries.retain(|key, k| {
            let alive = std::sync::Arc::strong_count(&k.owner) > held[&key.0];
            if !alive {
                *bytes -= k.buffer.size();
            }
            alive
        });
        let key = (std::sync::Arc::as_ptr(owner).cast::<()>() as usize, data.as_ptr() as usize, data.len());
        if let Some(k) = self.entries.get_mut(&key) {
            k.used = self.clock;
            self.hits += 1;
            return Bound { buffer: k.buffer.clone(), uploaded: false };
        }
        self.misses += 1;
        let bytes = (data.len() as u64 * 4).max(4);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("exaviz.stage.resident"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        if !data.is_empty() {
            queue.write_buffer(&buffer, 0, bytemuck::cast_slice(data));
        }
        if bytes <= self.budget {
            while self.bytes + bytes > self.budget {
                let Some((&oldest, _)) = self.entries.iter().min_by_key(|(_, k)| k.used) else { break };
                if let Some(k) = self.entries.remove(&oldest) {
                    self.bytes -= k.buffer.size();
                }
            }
            self.bytes += bytes;
            self.entries.insert(key, Kept { buffer: buffer.clone(), owner: owner.clone(), used: self.clock });
        }
        Bound { buffer, uploaded: true }
    }

    /// Bytes kept, uploads served from them and uploads that were not.
    pub fn counts(&self) -> (u64, u64, u64) {
        (self.bytes, self.hits, self.misses)
    }
}
