//! `exaviz view`: every view of `exaviz render` in a winit window that never waits for
//! computation. A worker thread prepares, draws and renders the view ([`crate::explore`]); the
//! window thread shows the last finished picture, moved and magnified at once to match each new
//! gesture (pan, zoom, the timeline's time window) until the worker's picture replaces it.
//! Hovering shows a tooltip from the view's `pick`, which never recomputes; a click selects what
//! is under the pointer (a matrix cell, a curve or a message line selects its pair of ranks;
//! a ring node, an axis value); `h` lists every gesture and key; `s` writes the picture to a PNG.
//!
//! Two presenters: with a GPU adapter (lavapipe included) pictures are copied into the wgpu
//! surface and the worker computes and renders on that adapter; without one (or with
//! `--backend cpu`) everything runs on the CPU path and is shown through `softbuffer`, after a
//! one-line warning where an adapter was wanted.

use std::num::NonZeroU32;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use exaviz_engine::model::Dataset;
use exaviz_engine::render::write_png_atomic;
use exaviz_engine::selection::Selection;
use exaviz_engine::views::torus_views::LinkedView;
use exaviz_engine::views::{Frame, View};
use exaviz_engine::{Backend, BackendChoice, GpuContext};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

use crate::explore::{Explorer, Gesture, frame_pixels, overlay_text};

/// What the window explores: the view, and the linked view's own gestures where it is one.
pub struct Content {
    pub view: Arc<dyn View>,
    pub linked: Option<Arc<LinkedView>>,
    pub selection: Selection,
}

/// Every gesture and key, for the help overlay.
const HELP: &[&str] = &[
    "wheel: zoom (the timeline zooms in time)",
    "drag: pan (the timeline pans in time)",
    "hover: what is under the pointer",
    "click: select it (a pair of ranks, a node, an axis value); again: clear",
    "linked view: drag on an axis, the ring or the river; right drag: zoom",
    "0: reset pan and zoom    c: clear the selection",
    "t: track the picked node's message (linked view)",
    "s: save the picture as a PNG    h: this help    Esc, q: quit",
];

/// A press and release closer than this (pixels) is a click.
const CLICK: f32 = 4.0;

type SoftSurface = softbuffer::Surface<Arc<Window>, Arc<Window>>;

/// Where frames go.
enum Present {
    Gpu(Box<GpuPresent>),
    Soft { surface: SoftSurface },
}

struct GpuPresent {
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
}

struct State {
    window: Arc<Window>,
    present: Present,
    /// The compute and render path: the presenting adapter, or the CPU.
    backend: Arc<Backend>,
    size: (u32, u32),
    explorer: Explorer,
    cursor: [f32; 2],
    /// Where the left button was pressed, and the last position a drag moved to.
    press: Option<([f32; 2], [f32; 2])>,
    /// Linked view: where the right button (zoom) was pressed.
    zoom_from: Option<[f32; 2]>,
    help: bool,
    linked: Option<Arc<LinkedView>>,
    /// The last PNG written with `s`.
    saved: Option<String>,
    presented: u64,
}

/// Wakes the event loop when the worker has a picture.
#[derive(Debug)]
struct Wake;

struct App {
    dataset: Arc<Dataset>,
    title: String,
    size: (u32, u32),
    content: Content,
    backend: BackendChoice,
    frames: Option<u64>,
    proxy: EventLoopProxy<Wake>,
    state: Option<State>,
    error: Option<anyhow::Error>,
}

impl State {
    fn resize(&mut self, width: u32, height: u32) -> Result<()> {
        self.size = (width.max(1), height.max(1));
        match &mut self.present {
            Present::Gpu(g) => {
                let GpuPresent { surface, config } = &mut **g;
                config.width = self.size.0;
                config.height = self.size.1;
                if let Backend::Gpu(ctx) = self.backend.as_ref() {
                    surface.configure(&ctx.device, config);
                }
            }
            Present::Soft { surface } => {
                let w = NonZeroU32::new(self.size.0).context("zero width")?;
                let h = NonZeroU32::new(self.size.1).context("zero height")?;
                surface.resize(w, h).map_err(|e| anyhow!("cannot resize the window buffer: {e}"))?;
            }
        }
        self.explorer.gesture(Gesture::Resize { width: self.size.0, height: self.size.1 });
        Ok(())
    }

    /// The frame: the last picture moved to match the newest gesture, the brush, the tooltip
    /// and the status line.
    fn frame_pixels(&self) -> Vec<[u8; 4]> {
        let (w, h) = self.size;
        let mut out = match self.explorer.preview() {
            Some((affine, image)) => frame_pixels(image, affine, (w, h)),
            None => vec![[17, 19, 24, 255]; (w * h) as usize],
        };
        if let (Some(from), Some(_)) = (self.press.map(|p| p.0).or(self.zoom_from), &self.linked) {
            outline(&mut out, (w, h), from, self.cursor);
        }
        if self.help {
            let lines: Vec<String> = HELP.iter().map(|l| (*l).to_string()).collect();
            overlay_text(&mut out, (w, h), [24.0, 40.0], "exaviz view: gestures and keys", &lines);
        } else if self.press.is_none()
            && let Some(pick) = self.explorer.pick(self.cursor)
        {
            overlay_text(&mut out, (w, h), [self.cursor[0] + 14.0, self.cursor[1] + 14.0], &pick.title, &pick.lines);
        }
        let status = if self.explorer.busy() {
            Some("computing…".to_string())
        } else if let Some(e) = &self.explorer.error {
            Some(format!("error: {e} (the last good picture is shown)"))
        } else {
            self.saved.as_ref().map(|p| format!("saved {p}"))
        };
        if let Some(status) = status {
            overlay_text(&mut out, (w, h), [4.0, h as f32], &status, &[]);
        }
        out
    }

    fn redraw(&mut self) -> Result<bool> {
        let pixels = self.frame_pixels();
        match &mut self.present {
            Present::Soft { surface } => {
                let mut buffer = surface.buffer_mut().map_err(|e| anyhow!("cannot draw into the window: {e}"))?;
                for (dst, p) in buffer.iter_mut().zip(&pixels) {
                    *dst = (u32::from(p[0]) << 16) | (u32::from(p[1]) << 8) | u32::from(p[2]);
                }
                buffer.present().map_err(|e| anyhow!("cannot present the window: {e}"))?;
            }
            Present::Gpu(g) => {
                let GpuPresent { surface, config } = &mut **g;
                let Backend::Gpu(ctx) = self.backend.as_ref() else { bail!("the GPU presenter lost its adapter") };
                let frame = match surface.get_current_texture() {
                    wgpu::CurrentSurfaceTexture::Success(f) | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
                    wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                        surface.configure(&ctx.device, config);
                        return Ok(false);
                    }
                    _ => return Ok(false),
                };
                let swap = match config.format {
                    wgpu::TextureFormat::Bgra8Unorm => true,
                    wgpu::TextureFormat::Rgba8Unorm => false,
                    f => bail!("the window surface's format {f:?} cannot show pictures (needs 8-bit RGBA or BGRA)"),
                };
                let (w, h) = (frame.texture.width(), frame.texture.height());
                let mut pixels = pixels;
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
                ctx.queue.present(frame);
            }
        }
        self.presented += 1;
        Ok(true)
    }

    /// Writes the shown picture (at the window's size) to a new PNG in the working folder.
    fn save(&mut self) {
        let Some(shown) = &self.explorer.shown else { return };
        let name = (1..).map(|k| format!("exaviz-view-{k}.png")).find(|n| !std::path::Path::new(n).exists());
        let Some(name) = name else { return };
        match write_png_atomic(std::path::Path::new(&name), &shown.image) {
            Ok(()) => {
                eprintln!("saved {name}");
                self.saved = Some(name);
            }
            Err(e) => eprintln!("error: {name}: cannot write: {e}"),
        }
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
        if !caps.usages.contains(wgpu::TextureUsages::COPY_DST) {
            bail!("the window surface does not accept copies, so it cannot show pictures");
        }
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_DST,
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
        eprintln!("viewer on {}", ctx.describe());
        Ok((Present::Gpu(Box::new(GpuPresent { surface, config })), Backend::Gpu(Box::new(ctx))))
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
        // The worker computes on a device of its own: the window's surface then never waits for
        // the worker's queue when it is reconfigured (a resize during a long computation).
        let worker_backend = match &backend {
            Backend::Gpu(_) => match GpuContext::new() {
                Ok(ctx) => Backend::Gpu(Box::new(ctx)),
                Err(e) => {
                    eprintln!("warning: no second GPU device for the worker ({e}); computing on the CPU path");
                    Backend::Cpu
                }
            },
            Backend::Cpu => Backend::Cpu,
        };
        let backend = Arc::new(backend);
        let size = window.inner_size();
        let size = (size.width.max(1), size.height.max(1));
        let proxy = self.proxy.clone();
        let wake = Box::new(move || {
            let _ = proxy.send_event(Wake);
        });
        let frame = Frame { width: size.0.max(16), height: size.1.max(16) };
        let explorer = Explorer::new(
            self.dataset.clone(),
            self.content.view.clone(),
            Arc::new(worker_backend),
            self.content.selection,
            frame,
            wake,
        );
        let mut state = State {
            window,
            present,
            backend,
            size,
            explorer,
            cursor: [0.0; 2],
            press: None,
            zoom_from: None,
            help: false,
            linked: self.content.linked.clone(),
            saved: None,
            presented: 0,
        };
        state.resize(size.0, size.1)?;
        state.window.request_redraw();
        self.state = Some(state);
        Ok(())
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, e: anyhow::Error) {
        self.error = Some(e);
        event_loop.exit();
    }
}

impl ApplicationHandler<Wake> for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_none()
            && let Err(e) = self.start(event_loop)
        {
            self.fail(event_loop, e);
        }
    }

    /// The worker has a picture (or an error): show it.
    fn user_event(&mut self, _: &ActiveEventLoop, _: Wake) {
        if let Some(state) = self.state.as_mut()
            && state.explorer.receive()
        {
            let s = state.explorer.request.selection;
            if let Some(w) = s.window_s {
                state.window.set_title(&format!("exaviz · {:.6} to {:.6} s", w.0, w.1));
            }
            state.window.request_redraw();
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some(state) = self.state.as_mut() else {
            return;
        };
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            // Synthetic presses (keys held while the window gains focus) and repeats are not new presses.
            WindowEvent::KeyboardInput { event, is_synthetic: false, .. }
                if event.state == ElementState::Pressed && !event.repeat =>
            {
                key(event_loop, state, &self.dataset, &event.logical_key);
            }
            WindowEvent::Resized(size) => {
                if let Err(e) = state.resize(size.width, size.height) {
                    self.fail(event_loop, e);
                    return;
                }
                state.window.request_redraw();
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = [position.x as f32, position.y as f32];
                if let Some((from, last)) = state.press
                    && state.linked.is_none()
                {
                    state.explorer.gesture(Gesture::Pan { by: [p[0] - last[0], p[1] - last[1]] });
                    state.press = Some((from, p));
                }
                state.cursor = p;
                state.window.request_redraw();
            }
            WindowEvent::MouseInput { state: s, button: MouseButton::Left, .. } => match (s, state.press) {
                (ElementState::Pressed, _) => state.press = Some((state.cursor, state.cursor)),
                (ElementState::Released, Some((from, _))) => {
                    state.press = None;
                    let to = state.cursor;
                    let click = (to[0] - from[0]).hypot(to[1] - from[1]) < CLICK;
                    if let Some(linked) = state.linked.clone() {
                        let e = &state.explorer;
                        let next = linked.drag(&self.dataset, &e.request.selection, e.request.frame, from, to);
                        if let Some(next) = next {
                            announce(state, &self.dataset, next);
                        }
                    } else if click {
                        let before = state.explorer.request.selection;
                        state.explorer.gesture(Gesture::Click { at: to });
                        if state.explorer.request.selection != before {
                            eprintln!("selected: {}", describe(&state.explorer.request.selection));
                        }
                    }
                    state.window.request_redraw();
                }
                _ => {}
            },
            WindowEvent::MouseInput { state: s, button: MouseButton::Right, .. } => {
                if let Some(linked) = state.linked.clone() {
                    if let (Some(from), ElementState::Released) = (state.zoom_from, s) {
                        let e = &state.explorer;
                        if let Some(next) = linked.zoom(&e.request.selection, e.request.frame, from, state.cursor) {
                            announce(state, &self.dataset, next);
                        }
                    }
                    state.zoom_from = (s == ElementState::Pressed).then_some(state.cursor);
                    state.window.request_redraw();
                }
            }
            WindowEvent::MouseWheel { .. } if state.linked.is_some() => {}
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                state.explorer.gesture(Gesture::Wheel { at: state.cursor, steps });
                state.window.request_redraw();
            }
            WindowEvent::RedrawRequested => {
                state.explorer.receive();
                if let Err(e) = state.redraw() {
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

/// A key press: Esc or Q quit, 0 resets pan and zoom, C clears the selection, T tracks the
/// picked node's message in the linked view (or stops tracking), H shows the help, S saves.
fn key(event_loop: &ActiveEventLoop, state: &mut State, dataset: &Dataset, key: &Key) {
    match key {
        Key::Named(NamedKey::Escape) => event_loop.exit(),
        Key::Character(c) => match c.as_str() {
            "q" => event_loop.exit(),
            "c" => {
                let cleared = Selection { window_s: state.explorer.request.selection.window_s, ..Default::default() };
                if cleared != state.explorer.request.selection {
                    announce(state, dataset, cleared);
                }
            }
            "t" => {
                if let Some(linked) = state.linked.clone() {
                    let e = &state.explorer;
                    if let Some(next) = linked.toggle_track(&e.request.selection, e.request.frame) {
                        announce(state, dataset, next);
                    }
                }
            }
            "0" => {
                state.explorer.gesture(Gesture::Reset);
            }
            "h" | "?" => state.help = !state.help,
            "s" => state.save(),
            _ => {}
        },
        _ => {}
    }
    state.window.request_redraw();
}

/// A changed selection: one line on standard error (the linked view's as before), the title,
/// and a new picture asked for.
fn announce(state: &mut State, dataset: &Dataset, next: Selection) {
    state.explorer.select(next);
    if state.linked.is_some() {
        let what =
            exaviz_engine::views::linked::describe(dataset, &exaviz_engine::views::torus_views::linked_state(&next));
        eprintln!("linked: {what}");
        state.window.set_title(&format!("exaviz · {what}"));
    } else {
        eprintln!("selected: {}", describe(&next));
    }
    state.window.request_redraw();
}

/// A selection in a few words, for the log.
fn describe(s: &Selection) -> String {
    let mut parts = Vec::new();
    if let Some((a, b)) = s.pair {
        parts.push(format!("pair {a} -> {b}"));
    }
    if let Some(v) = s.node {
        parts.push(format!("node {v}"));
    }
    if let Some(f) = s.dims {
        parts.push(format!("selection {}", f.describe()));
    }
    if parts.is_empty() { "nothing".into() } else { parts.join("; ") }
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

/// Opens the window and runs until it is closed (or `frames` frames were presented).
pub fn run(
    dataset: Dataset,
    title: String,
    backend: BackendChoice,
    size: (u32, u32),
    content: Content,
    frames: Option<u64>,
) -> Result<()> {
    let event_loop = EventLoop::<Wake>::with_user_event()
        .build()
        .map_err(|e| anyhow!("cannot open a window ({e}); for headless output use exaviz render"))?;
    let proxy = event_loop.create_proxy();
    let dataset = Arc::new(dataset);
    let mut app = App { dataset, title, size, content, backend, frames, proxy, state: None, error: None };
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
