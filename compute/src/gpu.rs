//! GPU context: adapter selection, device creation, limits, and the CPU fallback decision.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which compute and render path to use (`--backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// A GPU adapter if one exists (lavapipe counts), else the CPU path with a one-line warning.
    #[default]
    Auto,
    /// A GPU adapter or a clear error.
    Gpu,
    /// The CPU mirrors, never touching wgpu.
    Cpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "gpu" => Ok(Self::Gpu),
            "cpu" => Ok(Self::Cpu),
            other => Err(format!("unknown backend '{other}' (expected auto, gpu or cpu)")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found ({0})")]
    NoAdapter(String),
    #[error("the GPU adapter refused a device: {0}")]
    Device(#[from] wgpu::RequestDeviceError),
    #[error("GPU error: {0}")]
    Wgpu(String),
    #[error("buffer mapping failed: {0}")]
    Map(String),
}

/// Bytes exaviz moved between the host and one device: what it wrote into the device's buffers
/// and textures (uniforms included) and what it read back, counted where it writes and reads.
#[derive(Debug, Default)]
pub struct Traffic {
    uploaded: AtomicU64,
    read_back: AtomicU64,
}

impl Traffic {
    /// Counts `bytes` written to the device.
    pub fn upload(&self, bytes: u64) {
        self.uploaded.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` read back from the device.
    pub fn read(&self, bytes: u64) {
        self.read_back.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes uploaded and read back so far.
    pub fn totals(&self) -> (u64, u64) {
        (self.uploaded.load(Ordering::Relaxed), self.read_back.load(Ordering::Relaxed))
    }
}

/// Bytes of columns a device keeps between runs at most: `EXAVIZ_GPU_RESIDENT_MB` megabytes,
/// else 2 GiB (wgpu tells no device's memory; a 1e8-message trace's time, rank and size columns
/// are about 2 GB).
fn resident_budget() -> u64 {
    std::env::var("EXAVIZ_GPU_RESIDENT_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(2 << 30, |mb| mb << 20)
}

/// An adapter, its device and queue, and the pipelines built on it so far.
pub struct GpuContext {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub(crate) kernels: Mutex<HashMap<(&'static str, &'static str), wgpu::ComputePipeline>>,
    /// Buffers kept between runs of recorded work (see [`crate::gpu_runner`]).
    pub(crate) pool: Mutex<crate::pool::Pool>,
    /// Columns kept on the device between runs (see [`crate::Command::Upload`]).
    pub(crate) resident: Mutex<crate::pool::Resident>,
    /// What this process moved to and from the device.
    pub traffic: std::sync::Arc<Traffic>,
    /// What the layers above keep per device between pictures (the renderer and its
    /// pipelines), one of each type.
    kept: Mutex<HashMap<std::any::TypeId, Box<dyn std::any::Any + Send>>>,
    /// Every compute pass's time on the device by kernel, from timestamp queries, where asked
    /// for ([`GpuContext::time_passes`]).
    pub(crate) timings: Mutex<Option<HashMap<&'static str, PassTiming>>>,
}

/// The compute passes of one kernel timed on the device ([`GpuContext::time_passes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassTiming {
    pub kernel: &'static str,
    pub passes: u64,
    /// Their time on the device, from the timestamps written at each pass's start and end.
    pub device_ns: u64,
    /// The bytes of the buffers they bind (what they read and write at most): over the
    /// device's memory bandwidth, the time they could take at best.
    pub bytes: u64,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuContext({})", self.describe())
    }
}

fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    use wgpu::DeviceType::*;
    let ty = match info.device_type {
        DiscreteGpu => 0,
        IntegratedGpu => 1,
        VirtualGpu => 2,
        Other => 3,
        Cpu => 4,
    };
    // Among equals, Vulkan (lavapipe here) before GL: GL lacks several features.
    let backend = match info.backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        _ => 1,
    };
    (ty, backend)
}

impl GpuContext {
    /// Picks the best adapter (a real GPU before a software one), honouring `WGPU_BACKEND`.
    pub fn new() -> Result<Self, GpuError> {
        Self::with_instance(wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env()))
    }

    /// Same, on an instance the caller made.
    pub fn with_instance(instance: wgpu::Instance) -> Result<Self, GpuError> {
        Self::best(instance, |_| true, "no Vulkan, Metal, DX12 or GL adapter")
    }

    /// The best adapter that can present to `surface`.
    pub fn for_surface(instance: wgpu::Instance, surface: &wgpu::Surface<'_>) -> Result<Self, GpuError> {
        Self::best(instance, |a| a.is_surface_supported(surface), "no adapter can present to this window")
    }

    fn best(instance: wgpu::Instance, keep: impl Fn(&wgpu::Adapter) -> bool, none: &str) -> Result<Self, GpuError> {
        let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        adapters.retain(|a| keep(a));
        adapters.sort_by_key(|a| rank(&a.get_info()));
        let adapter = adapters.into_iter().next().ok_or_else(|| GpuError::NoAdapter(none.into()))?;
        Self::from_adapter(instance, adapter)
    }

    pub fn from_adapter(instance: wgpu::Instance, adapter: wgpu::Adapter) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("exaviz.device"),
            // Timestamps where the device writes them, for `bench-interact --timings`.
            required_features: adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
            required_limits: limits.clone(),
            ..Default::default()
        }))?;
        Ok(Self {
            instance,
            adapter,
            device,
            queue,
            info,
            limits,
            kernels: Mutex::new(HashMap::new()),
            pool: Mutex::default(),
            resident: Mutex::new(crate::pool::Resident::new(resident_budget())),
            traffic: std::sync::Arc::default(),
            kept: Mutex::default(),
            timings: Mutex::default(),
        })
    }

    /// Times every compute pass from now on with timestamp queries, where the device writes
    /// them (false where it does not: nothing is timed).
    pub fn time_passes(&self) -> bool {
        let can = self.device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        if can {
            self.timings.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert_default();
        }
        can
    }

    /// Whether compute passes are timed ([`GpuContext::time_passes`]).
    pub(crate) fn timing(&self) -> bool {
        self.timings.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_some()
    }

    /// The passes timed so far by kernel, most device time first.
    pub fn pass_timings(&self) -> Vec<PassTiming> {
        let timings = self.timings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut v: Vec<PassTiming> = timings.iter().flat_map(|t| t.values().cloned()).collect();
        v.sort_by(|a, b| b.device_ns.cmp(&a.device_ns).then(a.kernel.cmp(b.kernel)));
        v
    }

    /// Adds passes of `kernel` that bound `bytes` to the timings, with their device time.
    pub(crate) fn add_timing(&self, kernel: &'static str, bytes: u64, device_ns: u64) {
        let mut timings = self.timings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(t) = timings.as_mut() {
            let e = t.entry(kernel).or_insert_with(|| PassTiming { kernel, ..Default::default() });
            e.passes += 1;
            e.device_ns += device_ns;
            e.bytes += bytes;
        }
    }

    /// The device's memory bandwidth in bytes a second where known: `EXAVIZ_GPU_BANDWIDTH_GBS`,
    /// else the data sheet of a few data-centre GPUs by name (their HBM; a PCIe card's where
    /// the name says so).
    pub fn memory_bandwidth(&self) -> Option<f64> {
        if let Some(gbs) = std::env::var("EXAVIZ_GPU_BANDWIDTH_GBS").ok().and_then(|v| v.trim().parse::<f64>().ok()) {
            return (gbs > 0.0).then_some(gbs * 1e9);
        }
        let name = self.info.name.to_ascii_uppercase();
        let pcie = name.contains("PCIE");
        let gbs =
            [("H200", 4800.0, 4800.0), ("H100", 3350.0, 2000.0), ("A100", 2039.0, 1935.0), ("MI300X", 5300.0, 5300.0)]
                .iter()
                .find(|(n, _, _)| name.contains(n))
                .map(|&(_, sxm, card)| if pcie { card } else { sxm })?;
        Some(gbs * 1e9)
    }

    pub fn describe(&self) -> String {
        format!("{} ({:?}, {:?})", self.info.name, self.info.backend, self.info.device_type)
    }

    /// Calls `f` with this device's kept `T`, made by `make` the first time: one at a time.
    pub fn with_kept<T: std::any::Any + Send, R>(&self, make: impl FnOnce() -> T, f: impl FnOnce(&mut T) -> R) -> R {
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = kept.entry(std::any::TypeId::of::<T>()).or_insert_with(|| Box::new(make()));
        f(entry.downcast_mut::<T>().expect("kept by its own type"))
    }

    /// Buffers the runner of recorded work created, and buffers it reused from those kept
    /// between runs.
    pub fn kept_buffers(&self) -> (u64, u64) {
        self.pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner).counts()
    }

    /// Bytes of columns kept on the device, uploads of them served from the device and
    /// uploads that moved them.
    pub fn resident_columns(&self) -> (u64, u64, u64) {
        self.resident.lock().unwrap_or_else(std::sync::PoisonError::into_inner).counts()
    }

    /// Bytes of columns this device keeps between runs at most (`EXAVIZ_GPU_RESIDENT_MB`).
    pub fn resident_budget(&self) -> u64 {
        resident_budget()
    }

    /// Whether the adapter runs on the CPU's cores (Mesa's lavapipe): kernels then share the
    /// cores the CPU path would use.
    pub fn on_cpu_cores(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The largest storage binding, capped at the largest buffer.
    pub fn max_binding_bytes(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }
}

/// The compute/render path chosen for a run.
pub enum Backend {
    Gpu(Box<GpuContext>),
    Cpu,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Backend {
    /// Resolves a `--backend` choice. `Auto` falls back to the CPU with one warning line on
    /// stderr; `Gpu` fails with the reason.
    pub fn new(choice: BackendChoice) -> Result<Self, GpuError> {
        match choice {
            BackendChoice::Cpu => Ok(Self::Cpu),
            BackendChoice::Gpu => Ok(Self::Gpu(Box::new(GpuContext::new()?))),
            BackendChoice::Auto => match GpuContext::new() {
                Ok(ctx) => Ok(Self::Gpu(Box::new(ctx))),
                Err(e) => {
                    eprintln!("warning: {e}; using the CPU path");
                    Ok(Self::Cpu)
                }
            },
        }
    }

    pub fn is_gpu(&self) -> bool {
        matches!(self, Self::Gpu(_))
    }

    /// Bytes uploaded to and read back from the device so far (none on the CPU path).
    pub fn traffic(&self) -> (u64, u64) {
        match self {
            Self::Gpu(ctx) => ctx.traffic.totals(),
            Self::Cpu => (0, 0),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Gpu(ctx) => format!("gpu: {}", ctx.describe()),
            Self::Cpu => "cpu".into(),
        }
    }
}
