//! `exaviz view`: the same views as `exaviz render` in a winit window, with pan (drag) and zoom
//! (wheel). The ring's scene is drawn by the GPU renderer every frame; the MPI views (timeline,
//! matrix, chord, sendrecv) are pictures computed on the backend at the window's size and copied
//! into the surface. On the timeline, pan and zoom choose the time window, which is recomputed
//! (states and messages aggregated again at the new resolution); the other pictures are moved and
//! magnified as images. `0` resets the view.

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use exaviz_engine::model::Dataset;
use exaviz_engine::render::gpu::GpuRenderer;
use exaviz_engine::render::{Image, Scene, View};
use exaviz_engine::views::ring::{RingOptions, ring_scene};
use exaviz_engine::views::timeline::{pan_window, plot_rect, zoom_window};
use exaviz_engine::{Backend, BackendChoice, GpuContext};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

/// Computes a picture view at a size, for a time window (timeline) or the whole trace.
pub type PictureFn = Box<dyn Fn(&Dataset, &Backend, (u32, u32), Option<(f64, f64)>) -> Result<Image>>;

/// What the window shows.
pub enum Content {
    /// The ring's scene.
    Ring(RingOptions),
    /// A picture view; `duration` (seconds) is given for the timeline, whose pan and zoom
    /// choose the time window `window_s`.
    Picture { draw: PictureFn, duration: Option<f64>, window_s: Option<(f64, f64)> },
}

struct State {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    backend: Backend,
    renderer: GpuRenderer,
    scene: Scene,
    /// The picture of a picture view, recomputed when `dirty`.
    picture: Option<Image>,
    dirty: bool,
    view: View,
    cursor: [f32; 2],
    drag_from: Option<[f32; 2]>,
    presented: u64,
}

struct App {
    dataset: Dataset,
    title: String,
    size: (u32, u32),
    content: Content,
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

    fn rebuild(&mut self, dataset: &Dataset, content: &Content) -> Result<()> {
        match content {
            Content::Ring(opts) => {
                let opts = RingOptions { width: self.config.width, height: self.config.height, ..*opts };
                self.scene = ring_scene(dataset, &self.backend, &opts)?;
            }
            Content::Picture { .. } => self.dirty = true,
        }
        Ok(())
    }

    /// Copies the picture, moved and magnified by the view, into the frame.
    fn copy_picture(&self, frame: &wgpu::Texture) -> Result<()> {
        let Some(image) = &self.picture else { return Ok(()) };
        let (w, h) = (frame.width(), frame.height());
        let swap = match self.config.format {
            wgpu::TextureFormat::Bgra8Unorm => true,
            wgpu::TextureFormat::Rgba8Unorm => false,
            f => bail!("the window surface's format {f:?} cannot show pictures (needs 8-bit RGBA or BGRA)"),
        };
        let mut bytes = vec![0u8; (w * h * 4) as usize];
        let background = image.pixel(0, 0);
        for y in 0..h {
            for x in 0..w {
                let sx = (x as f32 - self.view.offset[0]) / self.view.scale;
                let sy = (y as f32 - self.view.offset[1]) / self.view.scale;
                let inside = sx >= 0.0 && sy >= 0.0 && (sx as u32) < image.width && (sy as u32) < image.height;
                let mut p = if inside { image.pixel(sx as u32, sy as u32) } else { background };
                if swap {
                    p.swap(0, 2);
                }
                p[3] = 255;
                let i = ((y * w + x) * 4) as usize;
                bytes[i..i + 4].copy_from_slice(&p);
            }
        }
        self.ctx().queue.write_texture(
            frame.as_image_copy(),
            &bytes,
            wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 4), rows_per_image: Some(h) },
            wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        );
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
        if self.picture.is_some() {
            self.copy_picture(&frame.texture)?;
            let ctx = self.ctx();
            ctx.queue.submit([]);
            ctx.queue.present(frame);
            self.presented += 1;
            return Ok(true);
        }
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
            .with_inner_size(winit::dpi::PhysicalSize::new(self.size.0, self.size.1));
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
        let picture = matches!(self.content, Content::Picture { .. });
        if picture && !caps.usages.contains(wgpu::TextureUsages::COPY_DST) {
            bail!("the window surface does not accept copies, so it cannot show this view; use exaviz render");
        }
        let usage = if picture {
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_DST
        } else {
            wgpu::TextureUsages::RENDER_ATTACHMENT
        };
        let config = wgpu::SurfaceConfiguration {
            usage,
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
            picture: None,
            dirty: false,
            view: View::default(),
            cursor: [0.0; 2],
            drag_from: None,
            presented: 0,
        };
        state.rebuild(&self.dataset, &self.content)?;
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
                        if let Content::Picture { window_s, duration: Some(_), .. } = &mut self.content {
                            *window_s = None;
                            state.dirty = true;
                        }
                        state.window.request_redraw();
                    }
                    _ => {}
                }
            }
            WindowEvent::Resized(size) => {
                state.config.width = size.width.max(1);
                state.config.height = size.height.max(1);
                state.surface.configure(&state.ctx().device, &state.config);
                if let Err(e) = state.rebuild(&self.dataset, &self.content) {
                    self.fail(event_loop, e);
                    return;
                }
                state.window.request_redraw();
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = [position.x as f32, position.y as f32];
                if let Some(from) = state.drag_from {
                    if let Some((window, duration, plot_w)) = time_axis(&mut self.content, &state.config) {
                        // Dragging right shows earlier times.
                        *window = pan_window(*window, duration, -f64::from(p[0] - from[0]) / plot_w);
                        state.dirty = true;
                    } else {
                        state.view.offset[0] += p[0] - from[0];
                        state.view.offset[1] += p[1] - from[1];
                    }
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
                let factor = 1.15f32.powf(lines);
                let x0 = plot_rect(state.config.width, state.config.height).map_or(0.0, |p| p.x0 as f32);
                let cursor_x = state.cursor[0];
                if let Some((window, duration, plot_w)) = time_axis(&mut self.content, &state.config) {
                    let at = f64::from(cursor_x - x0) / plot_w;
                    *window = zoom_window(*window, duration, f64::from(factor), at);
                    state.dirty = true;
                } else {
                    state.view.zoom_at(factor, state.cursor);
                }
                state.window.request_redraw();
            }
            WindowEvent::RedrawRequested => {
                if let Content::Picture { draw, window_s, .. } = &self.content
                    && state.dirty
                {
                    let size = (state.config.width.max(16), state.config.height.max(16));
                    match draw(&self.dataset, &state.backend, size, *window_s) {
                        Ok(image) => state.picture = Some(image),
                        Err(e) => {
                            self.fail(event_loop, e);
                            return;
                        }
                    }
                    state.dirty = false;
                    if let Some((a, b)) = window_s {
                        state.window.set_title(&format!("exaviz · {} · {a:.6} to {b:.6} s", self.title));
                    }
                }
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

/// The timeline's time window (made explicit), the trace's duration and the plot's width, when
/// the content is a timeline.
fn time_axis<'a>(
    content: &'a mut Content,
    config: &wgpu::SurfaceConfiguration,
) -> Option<(&'a mut (f64, f64), f64, f64)> {
    let Content::Picture { duration: Some(duration), window_s, .. } = content else { return None };
    let plot = plot_rect(config.width, config.height)?;
    let duration = *duration;
    let window = window_s.get_or_insert((0.0, duration));
    Some((window, duration, f64::from(plot.w)))
}

/// Opens the window and runs until it is closed (or `frames` frames were presented).
pub fn run(
    dataset: Dataset,
    title: String,
    backend: BackendChoice,
    size: (u32, u32),
    content: Content,
    frames: Option<u64>,
) -> Result<()> {
    if backend == BackendChoice::Cpu {
        bail!(
            "exaviz view draws with a GPU adapter (lavapipe works); for the CPU path use exaviz render --backend cpu"
        );
    }
    let event_loop =
        EventLoop::new().map_err(|e| anyhow!("cannot open a window ({e}); for headless output use exaviz render"))?;
    let mut app = App { dataset, title, size, content, frames, state: None, error: None };
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
