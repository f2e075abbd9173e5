//! GPU context: adapter selection, device creation, limits, and the CPU fallback decision.

use std::collections::HashMap;
use std::sync::Mutex;

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

/// An adapter, its device and queue, and the pipelines built on it so far.
pub struct GpuContext {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub(crate) kernels: Mutex<HashMap<(&'static str, &'static str), wgpu::ComputePipeline>>,
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
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        }))?;
        Ok(Self { instance, adapter, device, queue, info, limits, kernels: Mutex::new(HashMap::new()) })
    }

    pub fn describe(&self) -> String {
        format!("{} ({:?}, {:?})", self.info.name, self.info.backend, self.info.device_type)
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

    pub fn describe(&self) -> String {
        match self {
            Self::Gpu(ctx) => format!("gpu: {}", ctx.describe()),
            Self::Cpu => "cpu".into(),
        }
    }
}
