//! `exaviz view`: the same views as `exaviz render` in a winit window, with pan (drag) and zoom
//! (wheel). The MPI views (timeline, matrix, chord, sendrecv) are pictures computed on the backend
//! at the window's size; on the timeline, pan and zoom choose the time window, which is recomputed
//! (states and messages aggregated again at the new resolution); the other pictures are moved and
//! magnified as images. `0` resets the view.
//!
//! Two presenters: with a GPU adapter (lavapipe included) the ring's scene is drawn by the GPU
//! renderer every frame and pictures are copied into the wgpu surface; without one (or with
//! `--backend cpu`) everything is computed and drawn on the CPU path and shown through
//! `softbuffer`, after a one-line warning where an adapter was wanted.

use std::num::NonZeroU32;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use exaviz_engine::model::Dataset;
use exaviz_engine::render::gpu::GpuRenderer;
use exaviz_engine::render::{Image, Scene, View, render_scene};
use exaviz_engine::views::linked::{self, LinkedOptions, linked_image};
use exaviz_engine::views::plot::Plot;
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
    Ring(Box<RingOptions>),
    /// A picture view; `duration` (seconds) is given for the timeline, whose pan and zoom
    /// choose the time window `window_s`.
    Picture { draw: PictureFn, duration: Option<f64>, window_s: Option<(f64, f64)> },
    /// The linked torus views, whose shared state mouse gestures change.
    Linked(Box<LinkedOptions>),
}

/// The linked view's picture size for a window: the window's, but at least the smallest the
/// panels fit in (a smaller window shows its top left part).
fn linked_size((w, h): (u32, u32)) -> (u32, u32) {
    (w.max(linked::MIN_SIZE.0), h.max(linked::MIN_SIZE.1))
}

type SoftSurface = softbuffer::Surface<Arc<Window>, Arc<Window>>;

/// Where frames go.
enum Present {
    Gpu(Box<GpuPresent>),
    Soft { surface: SoftSurface },
}

struct GpuPresent {
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    renderer: GpuRenderer,
}

struct State {
    window: Arc<Window>,
    present: Present,
    /// The compute and render path: the presenting adapter, or the CPU.
    backend: Backend,
    size: (u32, u32),
    scene: Scene,
    /// The picture of a picture view (or, on the CPU presenter, of the ring), recomputed when `dirty`.
    picture: Option<Image>,
    dirty: bool,
    view: View,
    cursor: [f32; 2],
    drag_from: Option<[f32; 2]>,
    /// Linked view: where the right button (zoom) was pressed.
    zoom_from: Option<[f32; 2]>,
    /// Linked view: the rectangle being brushed (press and cursor), outlined over the picture.
    brush: Option<[[f32; 2]; 2]>,
    presented: u64,
}

struct App {
    dataset: Dataset,
    title: String,
    size: (u32, u32),
    content: Content,
    backend: BackendChoice,
    frames: Option<u64>,
    state: Option<State>,
    error: Option<anyhow::Error>,
}

impl State {
    fn rebuild(&mut self, dataset: &Dataset, content: &Content) -> Result<()> {
        if let Content::Ring(opts) = content {
            let opts = RingOptions { width: self.size.0, height: self.size.1, ..**opts };
            self.scene = ring_scene(dataset, &self.backend, &opts)?;
        }
        self.dirty = true;
        Ok(())
    }

    fn resize(&mut self, width: u32, height: u32) -> Result<()> {
        self.size = (width.max(1), height.max(1));
        match &mut self.present {
            Present::Gpu(g) => {
                let GpuPresent { surface, config, .. } = &mut **g;
                config.width = self.size.0;
                config.height = self.size.1;
                if let Backend::Gpu(ctx) = &self.backend {
                    surface.configure(&ctx.device, config);
                }
            }
            Present::Soft { surface } => {
                let w = NonZeroU32::new(self.size.0).context("zero width")?;
                let h = NonZeroU32::new(self.size.1).context("zero height")?;
                surface.resize(w, h).map_err(|e| anyhow!("cannot resize the window buffer: {e}"))?;
            }
        }
        Ok(())
    }

    /// Recomputes the picture where it is stale: a picture view's, or the ring drawn on the CPU
    /// presenter with the current pan and zoom.
    fn refresh(&mut self, dataset: &Dataset, content: &Content) -> Result<()> {
        match content {
            Content::Picture { draw, window_s, .. } if self.dirty => {
                let size = (self.size.0.max(16), self.size.1.max(16));
                self.picture = Some(draw(dataset, &self.backend, size, *window_s)?);
                if let Some((a, b)) = window_s {
                    self.window.set_title(&format!("exaviz · {a:.6} to {b:.6} s"));
                }
            }
            Content::Linked(opts) if self.dirty => {
                let (width, height) = linked_size(self.size);
                self.picture = Some(linked_image(dataset, &self.backend, &LinkedOptions { width, height, ..**opts })?);
            }
            Content::Ring(_) if self.dirty && matches!(self.present, Present::Soft { .. }) => {
                self.picture = Some(render_scene(&Backend::Cpu, &self.scene, self.view)?);
            }
            _ => {}
        }
        self.dirty = false;
        Ok(())
    }

    /// The frame's pixels (RGBA) from the picture: moved and magnified by the view for picture
    /// views; the CPU-drawn ring already has the view applied.
    fn frame_pixels(&self, ring: bool) -> Vec<[u8; 4]> {
        let (w, h) = self.size;
        let Some(image) = &self.picture else { return vec![[0, 0, 0, 255]; (w * h) as usize] };
        let view = if ring { View::default() } else { self.view };
        let background = image.pixel(0, 0);
        let mut out = Vec::with_capacity((w * h) as usize);
        for y in 0..h {
            for x in 0..w {
                let sx = (x as f32 - view.offset[0]) / view.scale;
                let sy = (y as f32 - view.offset[1]) / view.scale;
                let inside = sx >= 0.0 && sy >= 0.0 && (sx as u32) < image.width && (sy as u32) < image.height;
                let mut p = if inside { image.pixel(sx as u32, sy as u32) } else { background };
                p[3] = 255;
                out.push(p);
            }
        }
        if let Some([a, b]) = self.brush {
            outline(&mut out, (w, h), a, b);
        }
        out
    }

    fn redraw(&mut self, ring: bool) -> Result<bool> {
        match &mut self.present {
            Present::Soft { .. } => {
                let pixels = self.frame_pixels(ring);
                let Present::Soft { surface } = &mut self.present else { unreachable!() };
                let mut buffer = surface.buffer_mut().map_err(|e| anyhow!("cannot draw into the window: {e}"))?;
                for (dst, p) in buffer.iter_mut().zip(&pixels) {
                    *dst = (u32::from(p[0]) << 16) | (u32::from(p[1]) << 8) | u32::from(p[2]);
                }
                buffer.present().map_err(|e| anyhow!("cannot present the window: {e}"))?;
            }
            Present::Gpu(g) => {
                let GpuPresent { surface, config, renderer } = &mut **g;
                let Backend::Gpu(ctx) = &self.backend else { bail!("the GPU presenter lost its adapter") };
                let frame = match surface.get_current_texture() {
                    wgpu::CurrentSurfaceTexture::Success(f) | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
                    wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                        surface.configure(&ctx.device, config);
                        return Ok(false);
                    }
                    _ => return Ok(false),
                };
                if ring {
                    let target = frame.texture.create_view(&Default::default());
                    let mut enc = ctx.device.create_command_encoder(&Default::default());
                    let size = [config.width, config.height];
                    renderer.draw(
                        &ctx.device,
                        &ctx.queue,
                        &mut enc,
                        &self.scene,
                        self.view,
                        &target,
                        config.format,
                        size,
                        [0, 0],
                    );
                    ctx.queue.submit([enc.finish()]);
                } else {
                    let swap = match config.format {
                        wgpu::TextureFormat::Bgra8Unorm => true,
                        wgpu::TextureFormat::Rgba8Unorm => false,
                        f => bail!("the window surface's format {f:?} cannot show pictures (needs 8-bit RGBA or BGRA)"),
                    };
                    let (w, h) = (frame.texture.width(), frame.texture.height());
                    let mut pixels = self.frame_pixels(false);
                    pixels.resize((w * h) as usize, [0, 0, 0, 255]);
                    if swap {
                        pixels.iter_mut().for_each(|p| p.swap(0, 2));
                    }
                    ctx.queue.write_texture(
                        frame.texture.as_image_copy(),
                        pixels.as_flattened(),
                        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 4), rows_per_image: Some(h) },
                        wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
                    );
                    ctx.queue.submit([]);
                }
                ctx.queue.present(frame);
            }
        }
        self.presented += 1;
        Ok(true)
    }
}

impl App {
    /// The GPU presenter for `window`, or why there is none.
    fn gpu_present(&self, event_loop: &ActiveEventLoop, window: &Arc<Window>) -> Result<(Present, Backend)> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_with_display_handle_from_env(Box::new(
            event_loop.owned_display_handle(),
        )));
        let surface = instance.create_surface(window.clone()).context("cannot create a surface for the window")?;
        let ctx = GpuContext::for_surface(instance, &surface).map_err(|e| anyhow!("{e}"))?;
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
        let picture = matches!(self.content, Content::Picture { .. } | Content::Linked(_));
        if picture && !caps.usages.contains(wgpu::TextureUsages::COPY_DST) {
            bail!("the window surface does not accept copies, so it cannot show this view");
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
        Ok((Present::Gpu(Box::new(GpuPresent { surface, config, renderer })), Backend::Gpu(Box::new(ctx))))
    }

    fn soft_present(window: &Arc<Window>) -> Result<Present> {
        let context = softbuffer::Context::new(window.clone()).map_err(|e| anyhow!("cannot draw into windows: {e}"))?;
        let surface = softbuffer::Surface::new(&context, window.clone())
            .map_err(|e| anyhow!("cannot create a window buffer: {e}"))?;
        eprintln!("viewer on the CPU path");
        Ok(Present::Soft { surface })
    }

    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let attrs = Window::default_attributes()
            .with_title(format!("exaviz · {}", self.title))
            .with_inner_size(winit::dpi::PhysicalSize::new(self.size.0, self.size.1));
        let window = Arc::new(event_loop.create_window(attrs).context("cannot create a window")?);
        let (present, backend) = match self.backend {
            BackendChoice::Cpu => (Self::soft_present(&window)?, Backend::Cpu),
            BackendChoice::Gpu => self.gpu_present(event_loop, &window).map_err(|e| {
                anyhow!("{e}; --backend gpu needs an adapter that can present (lavapipe works); --backend cpu draws without one")
            })?,
            BackendChoice::Auto => match self.gpu_present(event_loop, &window) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("warning: no GPU adapter for the window ({e}); drawing on the CPU path");
                    (Self::soft_present(&window)?, Backend::Cpu)
                }
            },
        };
        let size = window.inner_size();
        let mut state = State {
            window,
            present,
            backend,
            size: (size.width.max(1), size.height.max(1)),
            scene: Scene::new(1, 1, [0.0; 3]),
            picture: None,
            dirty: true,
            view: View::default(),
            cursor: [0.0; 2],
            drag_from: None,
            zoom_from: None,
            brush: None,
            presented: 0,
        };
        state.resize(state.size.0, state.size.1)?;
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
        let ring = matches!(self.content, Content::Ring(_));
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            // Synthetic presses (keys held while the window gains focus) and repeats are not new presses.
            WindowEvent::KeyboardInput { event, is_synthetic: false, .. }
                if event.state == ElementState::Pressed && !event.repeat =>
            {
                key(event_loop, state, &mut self.content, &self.dataset, &event.logical_key);
            }
            WindowEvent::Resized(size) => {
                let result =
                    state.resize(size.width, size.height).and_then(|()| state.rebuild(&self.dataset, &self.content));
                if let Err(e) = result {
                    self.fail(event_loop, e);
                    return;
                }
                state.window.request_redraw();
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = [position.x as f32, position.y as f32];
                if let (Some(from), Content::Linked(_)) = (state.drag_from.or(state.zoom_from), &self.content) {
                    state.brush = Some([from, p]);
                    state.window.request_redraw();
                } else if let Some(from) = state.drag_from {
                    if let Some((window, duration, plot)) = time_axis(&mut self.content, state.size) {
                        // Dragging right shows earlier times.
                        *window = pan_window(*window, duration, -f64::from(p[0] - from[0]) / f64::from(plot.w));
                    } else {
                        state.view.offset[0] += p[0] - from[0];
                        state.view.offset[1] += p[1] - from[1];
                    }
                    state.dirty = true;
                    state.drag_from = Some(p);
                    state.window.request_redraw();
                }
                state.cursor = p;
            }
            WindowEvent::MouseInput { state: s, button: MouseButton::Left, .. } => {
                if let (Content::Linked(opts), Some(from), ElementState::Released) =
                    (&mut self.content, state.drag_from, s)
                {
                    (opts.width, opts.height) = linked_size(state.size);
                    state.brush = None;
                    if linked::gesture(&self.dataset, opts, from, state.cursor) {
                        announce(state, &self.dataset, opts);
                    }
                    state.window.request_redraw();
                }
                state.drag_from = (s == ElementState::Pressed).then_some(state.cursor);
            }
            WindowEvent::MouseInput { state: s, button: MouseButton::Right, .. } => {
                if let Content::Linked(opts) = &mut self.content {
                    if let (Some(from), ElementState::Released) = (state.zoom_from, s) {
                        (opts.width, opts.height) = linked_size(state.size);
                        state.brush = None;
                        if linked::zoom_gesture(opts, from, state.cursor) {
                            announce(state, &self.dataset, opts);
                        }
                        state.window.request_redraw();
                    }
                    state.zoom_from = (s == ElementState::Pressed).then_some(state.cursor);
                }
            }
            WindowEvent::MouseWheel { .. } if matches!(self.content, Content::Linked(_)) => {}
            WindowEvent::MouseWheel { delta, .. } => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                let factor = 1.15f32.powf(lines);
                let cursor_x = state.cursor[0];
                if let Some((window, duration, plot)) = time_axis(&mut self.content, state.size) {
                    let at = f64::from(cursor_x - plot.x0 as f32) / f64::from(plot.w);
                    *window = zoom_window(*window, duration, f64::from(factor), at);
                } else {
                    state.view.zoom_at(factor, state.cursor);
                }
                state.dirty = true;
                state.window.request_redraw();
            }
            WindowEvent::RedrawRequested => {
                if let Err(e) = state.refresh(&self.dataset, &self.content).and_then(|()| state.redraw(ring)) {
                    self.fail(event_loop, e);
                    return;
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

/// A key press: Esc or Q quit, 0 resets pan and zoom, C clears the linked state, T tracks the
/// picked node's message in the linked view (or stops tracking).
fn key(event_loop: &ActiveEventLoop, state: &mut State, content: &mut Content, dataset: &Dataset, key: &Key) {
    match key {
        Key::Named(NamedKey::Escape) => event_loop.exit(),
        Key::Character(c) if c.as_str() == "q" => event_loop.exit(),
        Key::Character(c) if c.as_str() == "c" => {
            if let Content::Linked(opts) = content
                && opts.state != linked::Linked::default()
            {
                opts.state = linked::Linked::default();
                announce(state, dataset, opts);
            }
        }
        Key::Character(c) if c.as_str() == "t" => {
            if let Content::Linked(opts) = content
                && linked::toggle_track(opts)
            {
                announce(state, dataset, opts);
            }
        }
        Key::Character(c) if c.as_str() == "0" => {
            state.view = View::default();
            if let Content::Picture { window_s, duration: Some(_), .. } = content {
                *window_s = None;
            }
            state.dirty = true;
            state.window.request_redraw();
        }
        _ => {}
    }
}

/// A changed linked state: one line on standard error, the title, and a new picture.
fn announce(state: &mut State, dataset: &Dataset, opts: &LinkedOptions) {
    let what = linked::describe(dataset, &opts.state);
    eprintln!("linked: {what}");
    state.window.set_title(&format!("exaviz · {what}"));
    state.dirty = true;
    state.window.request_redraw();
}

/// Outlines the rectangle between `a` and `b` (at least 16 pixels wide, so a vertical brush
/// along an axis shows) in a `w x h` frame.
fn outline(frame: &mut [[u8; 4]], (w, h): (u32, u32), a: [f32; 2], b: [f32; 2]) {
    let clampx = |x: f32| x.clamp(0.0, w.saturating_sub(1) as f32) as u32;
    let clampy = |y: f32| y.clamp(0.0, h.saturating_sub(1) as f32) as u32;
    let (mut x0, mut x1) = (a[0].min(b[0]), a[0].max(b[0]));
    if x1 - x0 < 16.0 {
        let c = (x0 + x1) / 2.0;
        (x0, x1) = (c - 8.0, c + 8.0);
    }
    let (x0, x1, y0, y1) = (clampx(x0), clampx(x1), clampy(a[1].min(b[1])), clampy(a[1].max(b[1])));
    let colour = [240, 228, 66, 255];
    for x in x0..=x1 {
        frame[(y0 * w + x) as usize] = colour;
        frame[(y1 * w + x) as usize] = colour;
    }
    for y in y0..=y1 {
        frame[(y * w + x0) as usize] = colour;
        frame[(y * w + x1) as usize] = colour;
    }
}

/// The timeline's time window (made explicit), the trace's duration and the plot rectangle, when
/// the content is a timeline.
fn time_axis(content: &mut Content, (width, height): (u32, u32)) -> Option<(&mut (f64, f64), f64, Plot)> {
    let Content::Picture { duration: Some(duration), window_s, .. } = content else { return None };
    let plot = plot_rect(width, height)?;
    let duration = *duration;
    let window = window_s.get_or_insert((0.0, duration));
    Some((window, duration, plot))
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
    let event_loop =
        EventLoop::new().map_err(|e| anyhow!("cannot open a window ({e}); for headless output use exaviz render"))?;
    let mut app = App { dataset, title, size, content, backend, frames, state: None, error: None };
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
