//! `exaviz view`: the same scene as `exaviz render`, drawn by the GPU renderer into a winit
//! window surface, with pan (drag) and zoom (wheel).

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use exaviz_engine::model::Dataset;
use exaviz_engine::render::gpu::GpuRenderer;
use exaviz_engine::render::{Scene, View};
use exaviz_engine::views::ring::{RingOptions, ring_scene};
use exaviz_engine::{Backend, BackendChoice, GpuContext};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

struct State {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    backend: Backend,
    renderer: GpuRenderer,
    scene: Scene,
    view: View,
    cursor: [f32; 2],
    drag_from: Option<[f32; 2]>,
    presented: u64,
}

struct App {
    dataset: Dataset,
    title: String,
    opts: RingOptions,
    frames: Option<u64>,
    state: Option<State>,
    error: Option<anyhow::Error>,
}

impl State {
    fn ctx(&self) -> &GpuContext {
        match &self.backend {
            Backend::Gpu(ctx) => ctx,
            Backend::Cpu => unreachable!("the viewer only runs with a GPU adapter"),
        }
    }

    fn rebuild(&mut self, dataset: &Dataset, opts: &RingOptions) -> Result<()> {
        let opts = RingOptions { width: self.config.width, height: self.config.height, ..*opts };
        self.scene = ring_scene(dataset, &self.backend, &opts)?;
        Ok(())
    }

    fn redraw(&mut self) -> Result<bool> {
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f) | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.ctx().device, &self.config);
                return Ok(false);
            }
            _ => return Ok(false),
        };
        let target = frame.texture.create_view(&Default::default());
        let ctx = match &self.backend {
            Backend::Gpu(ctx) => ctx,
            Backend::Cpu => bail!("no GPU"),
        };
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let size = [self.config.width, self.config.height];
        self.renderer.draw(
            &ctx.device,
            &ctx.queue,
            &mut enc,
            &self.scene,
            self.view,
            &target,
            self.config.format,
            size,
            [0, 0],
        );
        ctx.queue.submit([enc.finish()]);
        ctx.queue.present(frame);
        self.presented += 1;
        Ok(true)
    }
}

impl App {
    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let attrs = Window::default_attributes()
            .with_title(format!("exaviz · {}", self.title))
            .with_inner_size(winit::dpi::PhysicalSize::new(self.opts.width, self.opts.height));
        let window = Arc::new(event_loop.create_window(attrs).context("cannot create a window")?);
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_with_display_handle_from_env(Box::new(
            event_loop.owned_display_handle(),
        )));
        let surface = instance.create_surface(window.clone()).context("cannot create a surface for the window")?;
        let ctx = GpuContext::for_surface(instance, &surface).map_err(|e| {
            anyhow!("{e}; exaviz view needs a GPU adapter (lavapipe works); use exaviz render --backend cpu instead")
        })?;
        let size = window.inner_size();
        let caps = surface.get_capabilities(&ctx.adapter);
        // A linear format, so colours match the PNG output; else whatever the surface offers.
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| !f.is_srgb())
            .or(caps.formats.first().copied())
            .context("the surface offers no format")?;
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::AutoVsync,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps.alpha_modes.first().copied().unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: vec![],
            color_space: wgpu::SurfaceColorSpace::Auto,
        };
        surface.configure(&ctx.device, &config);
        let renderer = GpuRenderer::new(&ctx.device);
        eprintln!("viewer on {}", ctx.describe());
        let mut state = State {
            window,
            surface,
            config,
            backend: Backend::Gpu(Box::new(ctx)),
            renderer,
            scene: Scene::new(1, 1, [0.0; 3]),
            view: View::default(),
            cursor: [0.0; 2],
            drag_from: None,
            presented: 0,
        };
        state.rebuild(&self.dataset, &self.opts)?;
        state.window.request_redraw();
        self.state = Some(state);
        Ok(())
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, e: anyhow::Error) {
        self.error = Some(e);
        event_loop.exit();
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_none()
            && let Err(e) = self.start(event_loop)
        {
            self.fail(event_loop, e);
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some(state) = self.state.as_mut() else {
            return;
        };
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                match event.logical_key {
                    Key::Named(NamedKey::Escape) => event_loop.exit(),
                    Key::Character(c) if c.as_str() == "q" => event_loop.exit(),
                    Key::Character(c) if c.as_str() == "0" => {
                        state.view = View::default();
                        state.window.request_redraw();
                    }
                    _ => {}
                }
            }
            WindowEvent::Resized(size) => {
                state.config.width = size.width.max(1);
                state.config.height = size.height.max(1);
                state.surface.configure(&state.ctx().device, &state.config);
                if let Err(e) = state.rebuild(&self.dataset, &self.opts) {
                    self.fail(event_loop, e);
                    return;
                }
                state.window.request_redraw();
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = [position.x as f32, position.y as f32];
                if let Some(from) = state.drag_from {
                    state.view.offset[0] += p[0] - from[0];
                    state.view.offset[1] += p[1] - from[1];
                    state.drag_from = Some(p);
                    state.window.request_redraw();
                }
                state.cursor = p;
            }
            WindowEvent::MouseInput { state: s, button: MouseButton::Left, .. } => {
                state.drag_from = (s == ElementState::Pressed).then_some(state.cursor);
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                state.view.zoom_at(1.15f32.powf(lines), state.cursor);
                state.window.request_redraw();
            }
            WindowEvent::RedrawRequested => {
                match state.redraw() {
                    Ok(_) => {}
                    Err(e) => {
                        self.fail(event_loop, e);
                        return;
                    }
                }
                if let Some(limit) = self.frames {
                    if state.presented >= limit {
                        event_loop.exit();
                    } else {
                        state.window.request_redraw();
                    }
                }
            }
            _ => {}
        }
    }
}

/// Opens the window and runs until it is closed (or `frames` frames were presented).
pub fn run(
    dataset: Dataset,
    title: String,
    backend: BackendChoice,
    opts: RingOptions,
    frames: Option<u64>,
) -> Result<()> {
    if backend == BackendChoice::Cpu {
        bail!(
            "exaviz view draws with a GPU adapter (lavapipe works); for the CPU path use exaviz render --backend cpu"
        );
    }
    let event_loop =
        EventLoop::new().map_err(|e| anyhow!("cannot open a window ({e}); for headless output use exaviz render"))?;
    let mut app = App { dataset, title, opts, frames, state: None, error: None };
    event_loop.run_app(&mut app).context("window event loop failed")?;
    match app.error {
        Some(e) => Err(e),
        None => {
            if let Some(s) = &app.state {
                eprintln!("presented {} frames", s.presented);
            }
            Ok(())
        }
    }
}
