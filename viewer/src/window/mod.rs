//! `exaviz view`: every view of `exaviz render` in a winit window that never waits for
//! computation. A worker thread prepares, draws and renders the view ([`explore`]); the
//! window thread shows the last finished picture, moved and magnified at once to match each new
//! gesture (pan, zoom, the timeline's time window) until the worker's picture replaces it.
//! Hovering shows a tooltip from the view's `pick`, which never recomputes; a click selects what
//! is under the pointer (a matrix cell, a curve or a message line selects its pair of ranks;
//! a ring node, an axis value); `h` lists every gesture and key; `s` writes the picture to a PNG.
//! A side panel (egui, [`panel`]) switches views, shows the dataset, the view's options,
//! the selection and the worker's status; `p` hides or shows it.
//!
//! Two presenters: with a GPU adapter (lavapipe included) pictures are copied into the wgpu
//! surface and the worker computes and renders on that adapter; without one (or with
//! `--backend cpu`) everything runs on the CPU path and is shown through `softbuffer`, after a
//! one-line warning where an adapter was wanted.

use std::num::NonZeroU32;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use exaviz_compute::{Backend, BackendChoice, GpuContext};
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Search, Selection};
use exaviz_render::{Rendered, Scene, write_png_atomic};
use exaviz_views::rows::thousands;
use exaviz_views::{Frame, View};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

pub mod area;
pub mod choices;
pub mod explore;
pub mod panel;
pub mod wall;
pub mod wall_net;

use explore::{Explorer, Gesture, frame_pixels, overlay_text};
use panel::{Action, GpuPainter, PanelInfo, SoftPainter, ViewEntry};

use crate::common::ViewArgs;

/// What the window explores for `args`: the view (checked against the dataset) and the
/// selection (validated).
pub(crate) fn content(
    args: &ViewArgs,
    dataset: &exaviz_model::dataset::Dataset,
    selection: Selection,
) -> Result<Content> {
    selection.validate(dataset)?;
    let view: Arc<dyn exaviz_views::View> = Arc::from(args.built()?.view);
    view.check(dataset)?;
    Ok(Content { view, selection })
}

/// What the window explores: the view (its own gestures come with it) and the selection.
pub struct Content {
    pub view: Arc<dyn View>,
    pub selection: Selection,
}

/// The window's gestures and keys, for the help overlay (the view adds its own).
const HELP: &[&str] = &[
    "wheel: zoom (views in time zoom in time)",
    "drag: pan (views in time pan in time)",
    "hover: what is under the pointer",
    "click: select it (a pair of ranks, a node, an axis value); again: clear",
    "w, s: zoom in, out at the pointer    a, d: pan left, right (Perfetto's keys; held: repeat)",
    "0: reset pan and zoom    c: clear the selection",
    "ctrl+s: save the picture as a PNG    h: this help    Esc, q: quit",
    "p: hide or show the panel (views, dataset, options, selection)",
    "/ or the panel's search box: search region names (timeline, mpi); Enter: search    n, N: next, previous match",
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
    painter: GpuPainter,
    /// Draws frames whose picture is kept on this device ([`State::frame_scene`]).
    renderer: exaviz_render::gpu::GpuRenderer,
}

/// The side panel: egui's context and input, and what the panel shows that changes rarely.
struct Panel {
    ctx: egui::Context,
    input: egui_winit::State,
    open: bool,
    soft: SoftPainter,
    views: Vec<ViewEntry>,
    summary: Vec<String>,
    /// The view buttons' places last logged (`EXAVIZ_PANEL_LOG`).
    logged: Option<panel::Layout>,
    /// When egui asked to be drawn again (an animation, a tooltip's delay).
    repaint_at: Option<std::time::Instant>,
    /// Texture changes of frames the surface skipped, applied with the next frame drawn (egui
    /// sends each change once).
    pending: egui::TexturesDelta,
    /// The search box's text.
    search: String,
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
    /// Where the right button (a view's zoom drag, or an area) was pressed.
    zoom_from: Option<[f32; 2]>,
    /// The area statistics last logged.
    logged_area: Option<Vec<String>>,
    help: bool,
    /// Whether Ctrl is held (Ctrl+S saves).
    ctrl: bool,
    /// The last PNG written with `s`, or the last panel action that failed.
    saved: Option<String>,
    presented: u64,
    panel: Panel,
    /// The command line's view options, changed by the panel.
    args: ViewArgs,
    /// Where the worker computes (kept to start a worker for another view).
    worker_backend: Arc<Backend>,
    /// Whether the worker shares the presenter's device and keeps its pictures there.
    device_frames: bool,
    proxy: EventLoopProxy<Wake>,
    /// Explorers of views replaced, their workers stopped, kept until their threads end.
    retired: Vec<Explorer>,
    /// The search text being typed after `/`, until Enter or Esc.
    typing: Option<String>,
    /// The match `n` / `N` last stepped to (its start and location).
    search_at: Option<exaviz_views::search::At>,
}

/// Wakes the event loop when the worker has a picture.
#[derive(Debug)]
struct Wake;

struct App {
    dataset: Arc<Dataset>,
    title: String,
    size: (u32, u32),
    args: ViewArgs,
    content: Content,
    backend: BackendChoice,
    frames: Option<u64>,
    proxy: EventLoopProxy<Wake>,
    state: Option<State>,
    error: Option<anyhow::Error>,
    /// Frames presented, set when the window's work was shut down.
    presented: Option<u64>,
    /// Bytes the window's GPU device was sent and read back from, set with `presented`.
    moved: Option<(u64, u64)>,
}

impl State {
    /// Ends the window's work in dependency order: the workers joined first (no thread left
    /// inside the driver), then the panel, the surface before its window, the device last.
    fn shut_down(self) {
        let State { window, present, backend, explorer, panel, retired, worker_backend, .. } = self;
        drop(explorer);
        drop(retired);
        drop(panel);
        drop(present);
        drop(window);
        drop(worker_backend);
        drop(backend);
    }

    fn resize(&mut self, width: u32, height: u32) -> Result<()> {
        self.size = (width.max(1), height.max(1));
        match &mut self.present {
            Present::Gpu(g) => {
                let GpuPresent { surface, config, .. } = &mut **g;
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
        self.explorer.gesture(Gesture::Resize { width: self.picture_width(), height: self.size.1 });
        Ok(())
    }

    /// The panel's width in pixels while it is shown.
    fn panel_pixels(&self) -> u32 {
        if self.panel.open { (panel::WIDTH * self.window.scale_factor() as f32).round() as u32 } else { 0 }
    }

    /// The picture's width: the window's less the panel's (at least 16 pixels).
    fn picture_width(&self) -> u32 {
        self.size.0.saturating_sub(self.panel_pixels()).max(16)
    }

    /// Whether the pointer is over the panel.
    fn over_panel(&self) -> bool {
        self.panel.open && self.cursor[0] >= self.picture_width() as f32
    }

    /// What is drawn over the picture: the brush's outline (its two corners) and the boxes of
    /// text (where each is shown, its title and lines): the help or a tooltip, the status line.
    fn overlays(&self) -> (Option<Corners>, Vec<TextBox>) {
        let h = self.size.1;
        let outlined =
            if let (Some(from), false) = (self.press.map(|p| p.0).or(self.zoom_from), self.explorer.view().pans()) {
                Some((from, self.cursor))
            } else if let Some(from) = self.zoom_from {
                Some((from, self.cursor))
            } else if let Some((from, _)) = self.press
                && self.explorer.brushes_at(from)
            {
                Some((from, self.cursor))
            } else {
                None
            };
        let mut boxes = Vec::new();
        if self.help {
            let own = self.explorer.view().help();
            let lines: Vec<String> = HELP.iter().chain(own).map(|l| (*l).to_string()).collect();
            boxes.push(([24.0, 40.0], "exaviz view: gestures and keys".to_string(), lines));
        } else if self.press.is_none()
            && !self.over_panel()
            && let Some(pick) = self.explorer.pick(self.cursor)
        {
            boxes.push(([self.cursor[0] + 14.0, self.cursor[1] + 14.0], pick.title, pick.lines));
        }
        if let Some(status) = self.status() {
            boxes.push(([4.0, h as f32], status, Vec::new()));
        }
        (outlined, boxes)
    }

    /// The frame: the last picture moved to match the newest gesture, the brush, the tooltip
    /// and the status line, in the picture's part of the window (the panel is drawn over the rest).
    fn frame_pixels(&self) -> Vec<[u8; 4]> {
        let (w, h) = (self.picture_width(), self.size.1);
        let image = self.explorer.preview().map(|(affine, shown)| (affine, shown.image()));
        let mut out = match image {
            Some((affine, Ok(image))) => frame_pixels(image, affine, (w, h)),
            Some((_, Err(e))) => {
                eprintln!("error: the picture cannot be read back: {e}");
                vec![[17, 19, 24, 255]; (w * h) as usize]
            }
            None => vec![[17, 19, 24, 255]; (w * h) as usize],
        };
        let (outlined, boxes) = self.overlays();
        if let Some((a, b)) = outlined {
            outline(&mut out, (w, h), a, b);
        }
        for (at, title, lines) in &boxes {
            overlay_text(&mut out, (w, h), *at, title, lines);
        }
        if w >= self.size.0 {
            return out;
        }
        let full = self.size.0 as usize;
        let mut wide = vec![[27, 27, 27, 255]; full * h as usize];
        for (row, src) in wide.chunks_exact_mut(full).zip(out.chunks_exact(w as usize)) {
            row[..w as usize].copy_from_slice(src);
        }
        wide
    }

    /// The frame as [`State::frame_pixels`] makes it, as a scene the GPU renderer draws into the
    /// window's surface: the picture kept on `ctx`'s device (`None` where the shown picture is
    /// not there), moved on the device, the overlays over it.
    fn frame_scene(&self, ctx: &GpuContext) -> Option<Scene> {
        let (affine, shown) = self.explorer.preview()?;
        let Rendered::Device(kept) = shown else { return None };
        if !kept.on(ctx) {
            return None;
        }
        let background = self.explorer.shown.as_ref().map_or([0.067, 0.075, 0.094], |p| p.background);
        let (w, h) = (self.picture_width(), self.size.1);
        let picture = explore::frame_scene(kept, background, affine, (w, h));
        let mut scene = Scene::new(self.size.0, h, [27.0 / 255.0; 3]);
        let c = background;
        scene.rect([0.0, 0.0], [w as f32, h as f32], [c[0], c[1], c[2], 1.0], true);
        scene.place(&picture, [0.0, 0.0]);
        let (outlined, boxes) = self.overlays();
        if let Some((a, b)) = outlined {
            outline_scene(&mut scene, (w, h), a, b);
        }
        for (at, title, lines) in &boxes {
            let boxed = explore::overlay_box(title, lines, (w, h));
            let [x, y] = explore::box_origin(*at, (boxed.width, boxed.height), (w, h));
            scene.place(&boxed, [x as f32, y as f32]);
        }
        Some(scene)
    }

    /// The worker's state, or the last saved file or failed panel action.
    fn status(&self) -> Option<String> {
        if self.explorer.busy() {
            let coarse = self.explorer.shown.as_ref().is_some_and(|p| p.coarse && p.generation == self.explorer.asked);
            Some(
                if coarse {
                    "from the pyramid: reading the window's rows (or its cells) from the server…"
                } else {
                    "computing…"
                }
                .into(),
            )
        } else if let Some(e) = &self.explorer.error {
            Some(format!("error: {e} (the last good picture is shown)"))
        } else {
            self.saved.clone()
        }
    }

    /// One pass of the panel: what the user asked for, and the triangles and textures to draw.
    fn panel_pass(&mut self) -> (Vec<Action>, Vec<egui::ClippedPrimitive>, egui::TexturesDelta, f32) {
        let raw = self.panel.input.take_egui_input(&self.window);
        let current = self.args.view.clone();
        let options = choices::choices(&self.args, &self.explorer.dataset);
        let selection = self.describe_selection();
        let statistics = self.explorer.area_summary().map(area::panel_lines).unwrap_or_default();
        if !statistics.is_empty() && self.logged_area.as_ref() != Some(&statistics) {
            // One line for the log (and the tests that read it): the area and its busiest region.
            eprintln!("area statistics: {}", statistics.iter().take(3).cloned().collect::<Vec<_>>().join(" | "));
            self.logged_area = Some(statistics.clone());
        }
        let status = self.status();
        let ppp = self.window.scale_factor() as f32;
        let mut actions = Vec::new();
        let mut layout = None;
        let open = self.panel.open;
        let search = searches(self).then_some(&mut self.panel.search);
        let mut info = PanelInfo {
            views: &self.panel.views,
            current: &current,
            summary: &self.panel.summary,
            choices: &options,
            selection,
            statistics,
            status,
            help: self.help,
            search,
        };
        let out = self.panel.ctx.run_pass(raw, |ctx| {
            if open {
                let (a, l) = panel::ui(ctx, &mut info, ppp);
                actions = a;
                layout = Some(l);
            }
        });
        self.panel.input.handle_platform_output(&self.window, out.platform_output);
        let delay = out.viewport_output.get(&egui::ViewportId::ROOT).map(|v| v.repaint_delay);
        self.panel.repaint_at = match delay {
            Some(d) if d.is_zero() => {
                self.window.request_redraw();
                None
            }
            Some(d) if d < std::time::Duration::from_secs(5) => Some(std::time::Instant::now() + d),
            _ => None,
        };
        if let Some(layout) = layout
            && std::env::var_os("EXAVIZ_PANEL_LOG").is_some()
            && self.panel.logged.as_ref() != Some(&layout)
        {
            for (name, r) in &layout {
                eprintln!("panel: {name} at {:.0} {:.0}", (r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0);
            }
            self.panel.logged = Some(layout);
        }
        let primitives = self.panel.ctx.tessellate(out.shapes, out.pixels_per_point);
        let mut textures = std::mem::take(&mut self.panel.pending);
        textures.append(out.textures_delta);
        (actions, primitives, textures, out.pixels_per_point)
    }

    /// The selection in a few words, for the panel.
    fn describe_selection(&self) -> String {
        let s = &self.explorer.request.selection;
        let mut text = self.explorer.view().describe(&self.explorer.dataset, s).unwrap_or_else(|| describe(s));
        if let Some((a, b)) = s.window_s {
            text.push_str(&format!("; time {a:.6} to {b:.6} s"));
        }
        text
    }

    fn redraw(&mut self) -> Result<Vec<Action>> {
        let (actions, primitives, mut textures, ppp) = self.panel_pass();
        // A picture kept on the presenter's device is drawn there; else the frame's pixels.
        let on_device = match (&self.present, self.backend.as_ref()) {
            (Present::Gpu(_), Backend::Gpu(ctx)) => self.frame_scene(ctx),
            _ => None,
        };
        let mut pixels = if on_device.is_none() { self.frame_pixels() } else { Vec::new() };
        match &mut self.present {
            Present::Soft { surface } => {
                self.panel.soft.set_textures(&textures);
                self.panel.soft.paint(&primitives, &mut pixels, self.size.0, ppp);
                self.panel.soft.free_textures(&textures);
                textures.clear();
                let mut buffer = surface.buffer_mut().map_err(|e| anyhow!("cannot draw into the window: {e}"))?;
                for (dst, p) in buffer.iter_mut().zip(&pixels) {
                    *dst = (u32::from(p[0]) << 16) | (u32::from(p[1]) << 8) | u32::from(p[2]);
                }
                buffer.present().map_err(|e| anyhow!("cannot present the window: {e}"))?;
            }
            Present::Gpu(g) => {
                let GpuPresent { surface, config, painter, renderer } = &mut **g;
                let Backend::Gpu(ctx) = self.backend.as_ref() else { bail!("the GPU presenter lost its adapter") };
                let frame = match surface.get_current_texture() {
                    wgpu::CurrentSurfaceTexture::Success(f) | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
                    skipped => {
                        if matches!(skipped, wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost)
                        {
                            surface.configure(&ctx.device, config);
                        }
                        self.panel.pending = textures;
                        return Ok(actions);
                    }
                };
                let target = frame.texture.create_view(&Default::default());
                let (w, h) = (frame.texture.width(), frame.texture.height());
                if let Some(scene) = &on_device {
                    renderer
                        .draw_into(ctx, scene, exaviz_render::View::default(), &target, config.format)
                        .map_err(|e| anyhow!("cannot draw the frame: {e}"))?;
                } else {
                    let swap = match config.format {
                        wgpu::TextureFormat::Bgra8Unorm => true,
                        wgpu::TextureFormat::Rgba8Unorm => false,
                        f => bail!("the window surface's format {f:?} cannot show pictures (needs 8-bit RGBA or BGRA)"),
                    };
                    pixels.resize((w * h) as usize, [0, 0, 0, 255]);
                    if swap {
                        pixels.iter_mut().for_each(|p| p.swap(0, 2));
                    }
                    ctx.traffic.upload(pixels.as_flattened().len() as u64);
                    ctx.queue.write_texture(
                        frame.texture.as_image_copy(),
                        pixels.as_flattened(),
                        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 4), rows_per_image: Some(h) },
                        wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
                    );
                }
                let screen = egui_wgpu::ScreenDescriptor { size_in_pixels: [w, h], pixels_per_point: ppp };
                painter.paint(&ctx.device, &ctx.queue, &target, &screen, &primitives, &textures);
                textures.clear();
                ctx.queue.present(frame);
            }
        }
        self.presented += 1;
        Ok(actions)
    }

    /// Explores another view, or the same view with other options: a new worker for it, the
    /// selection's parts the view reads kept. A failure leaves the current view and says why.
    fn explore(&mut self, dataset: &Arc<Dataset>, args: ViewArgs, what: &str) {
        // The view first (with nothing selected), then the parts of the selection it reads, where
        // they are valid for it.
        match content(&args, dataset, Selection::default()) {
            Ok(mut c) => {
                let kept = self.explorer.request.selection.only(c.view.reads());
                if kept.validate(dataset).is_ok() {
                    c.selection = kept;
                }
                let frame = self.explorer.request.frame;
                let proxy = self.proxy.clone();
                let wake = Box::new(move || {
                    let _ = proxy.send_event(Wake);
                });
                let backend = self.worker_backend.clone();
                let next =
                    Explorer::start_for(self.device_frames, dataset.clone(), c.view, backend, c.selection, frame, wake);
                let mut old = std::mem::replace(&mut self.explorer, next);
                old.retire();
                self.retired.retain(|e| !e.finished());
                self.retired.push(old);
                self.args = args;
                self.saved = None;
                eprintln!("{what}");
                self.window.set_title(&format!("exaviz · {}", self.args.view));
            }
            Err(e) => {
                eprintln!("error: {e}");
                self.saved = Some(format!("error: {e}"));
            }
        }
    }

    /// The left button released after a press at `from`: a click selects what is there, a
    /// drag brushes where the view brushes; a view that reads every release itself gets it.
    fn release(&mut self, dataset: &Arc<Dataset>, from: [f32; 2]) {
        self.press = None;
        let to = self.cursor;
        let click = (to[0] - from[0]).hypot(to[1] - from[1]) < CLICK;
        if !self.explorer.view().pans() {
            let e = &self.explorer;
            let (f, t) = (e.to_picture(from), e.to_picture(to));
            if let Some(next) = e.view().brush(dataset, &e.request.selection, e.request.frame, f, t) {
                announce(self, dataset, next);
            }
        } else if !click && self.explorer.brushes_at(from) {
            if let Some(next) = self.explorer.brush(from, to) {
                eprintln!("brushed: {}", describe(&next));
            }
        } else if click {
            let before = self.explorer.request.selection;
            self.explorer.gesture(Gesture::Click { at: to });
            if self.explorer.request.selection != before {
                eprintln!("selected: {}", describe(&self.explorer.request.selection));
            }
            // A click that opens another view (a step of the steps view in the timeline): that
            // view, with what was clicked selected.
            if let Some((name, selection)) = self.explorer.take_opening() {
                match choices::switched(&self.args, name) {
                    Ok(args) => {
                        self.explorer.request.selection = selection;
                        let (a, b) = selection.window_s.unwrap_or_default();
                        let what = format!("view: {name} ({a:.6}-{b:.6} s; {})", describe(&selection));
                        self.explore(dataset, args, &what);
                    }
                    Err(e) => self.saved = Some(format!("error: {e}")),
                }
            }
        }
        self.window.request_redraw();
    }

    /// What the panel asked for.
    fn act(&mut self, event_loop: &ActiveEventLoop, dataset: &Arc<Dataset>, action: Action) {
        match action {
            Action::SwitchView(name) => match choices::switched(&self.args, &name) {
                Ok(args) => self.explore(dataset, args, &format!("view: {name}")),
                Err(e) => self.saved = Some(format!("error: {e}")),
            },
            Action::SetOption(flag, index) => match choices::with_choice(&self.args, dataset, &flag, index) {
                Ok((args, value)) => self.explore(dataset, args, &format!("option: {flag} {value}")),
                Err(e) => self.saved = Some(format!("error: {e}")),
            },
            Action::ClearSelection => key(event_loop, self, dataset, &Key::Character("c".into()), false),
            Action::Reset => key(event_loop, self, dataset, &Key::Character("0".into()), false),
            Action::Save => self.save(),
            Action::ToggleHelp => self.help = !self.help,
            Action::Hide => key(event_loop, self, dataset, &Key::Character("p".into()), false),
            Action::Search(text) => search_for(self, dataset, text),
            Action::Step(forward) => step_search(self, dataset, forward),
        }
        self.window.request_redraw();
    }

    /// Writes the shown picture (at the window's size) to a new PNG in the working folder.
    fn save(&mut self) {
        let Some(shown) = &self.explorer.shown else { return };
        let name = (1..).map(|k| format!("exaviz-view-{k}.png")).find(|n| !std::path::Path::new(n).exists());
        let Some(name) = name else { return };
        let image = match shown.image.image() {
            Ok(image) => image,
            Err(e) => {
                eprintln!("error: {name}: the picture cannot be read back: {e}");
                return;
            }
        };
        match write_png_atomic(std::path::Path::new(&name), image) {
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
        let painter = GpuPainter::new(&ctx.device, format);
        let renderer = exaviz_render::gpu::GpuRenderer::new(&ctx.device);
        Ok((Present::Gpu(Box::new(GpuPresent { surface, config, painter, renderer })), Backend::Gpu(Box::new(ctx))))
    }

    fn soft_present(window: &Arc<Window>) -> Result<Present> {
        let context = softbuffer::Context::new(window.clone()).map_err(|e| anyhow!("cannot draw into windows: {e}"))?;
        let surface = softbuffer::Surface::new(&context, window.clone())
            .map_err(|e| anyhow!("cannot create a window buffer: {e}"))?;
        eprintln!("viewer on the CPU path");
        Ok(Present::Soft { surface })
    }

    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        // The picture at the size asked for, the panel beside it.
        let attrs = Window::default_attributes()
            .with_title(format!("exaviz · {}", self.title))
            .with_inner_size(winit::dpi::PhysicalSize::new(self.size.0 + panel::WIDTH as u32, self.size.1));
        let window = Arc::new(event_loop.create_window(attrs).context("cannot create a window")?);
        let scale = window.scale_factor();
        if scale != 1.0 {
            let wide = self.size.0 + (f64::from(panel::WIDTH) * scale).round() as u32;
            let _ = window.request_inner_size(winit::dpi::PhysicalSize::new(wide, self.size.1));
        }
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
        let backend = Arc::new(backend);
        let (shared, worker_backend) = worker_device(&backend);
        let size = window.inner_size();
        let size = (size.width.max(1), size.height.max(1));
        let proxy = self.proxy.clone();
        let wake = Box::new(move || {
            let _ = proxy.send_event(Wake);
        });
        let panel_pixels = (f64::from(panel::WIDTH) * scale).round() as u32;
        let frame = Frame { width: size.0.saturating_sub(panel_pixels).max(16), height: size.1.max(16) };
        let explorer = Explorer::start_for(
            shared,
            self.dataset.clone(),
            self.content.view.clone(),
            worker_backend.clone(),
            self.content.selection,
            frame,
            wake,
        );
        let ctx = egui::Context::default();
        ctx.set_visuals(egui::Visuals::dark());
        let input = egui_winit::State::new(
            ctx.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(scale as f32),
            window.theme(),
            Some(4096),
        );
        let panel = Panel {
            ctx,
            input,
            open: true,
            soft: SoftPainter::default(),
            views: choices::views(&self.dataset),
            summary: summary(&self.dataset),
            logged: None,
            repaint_at: None,
            pending: egui::TexturesDelta::default(),
            search: String::new(),
        };
        let mut state = State {
            window,
            present,
            backend,
            size,
            explorer,
            cursor: [0.0; 2],
            press: None,
            zoom_from: None,
            logged_area: None,
            help: false,
            ctrl: false,
            saved: None,
            presented: 0,
            panel,
            args: self.args.clone(),
            worker_backend,
            device_frames: shared,
            proxy: self.proxy.clone(),
            retired: Vec::new(),
            typing: None,
            search_at: None,
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
    /// The loop ends: the workers are joined and the surface, the window and the device
    /// dropped in order while the event loop (its display connection) is still alive.
    fn exiting(&mut self, _: &ActiveEventLoop) {
        if let Some(s) = self.state.take() {
            self.presented = Some(s.presented);
            self.moved = s.backend.is_gpu().then(|| s.backend.traffic());
            s.shut_down();
        }
    }

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

    /// egui asked to be drawn again at a time (a tooltip's delay, an animation).
    fn new_events(&mut self, _: &ActiveEventLoop, cause: winit::event::StartCause) {
        if let (winit::event::StartCause::ResumeTimeReached { .. }, Some(state)) = (cause, self.state.as_mut()) {
            state.panel.repaint_at = None;
            state.window.request_redraw();
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        let at = self.state.as_ref().and_then(|s| s.panel.repaint_at);
        event_loop.set_control_flow(match at {
            Some(t) => winit::event_loop::ControlFlow::WaitUntil(t),
            None => winit::event_loop::ControlFlow::Wait,
        });
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some(state) = self.state.as_mut() else {
            return;
        };
        // The panel sees every event first; the picture gets the pointer only outside the panel
        // (a drag begun on the picture goes on over it) and keys only when no widget wants them.
        let response = state.panel.input.on_window_event(&state.window, &event);
        if response.repaint {
            state.window.request_redraw();
        }
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            // Synthetic presses (keys held while the window gains focus) and repeats are not new presses.
            WindowEvent::ModifiersChanged(m) => state.ctrl = m.state().control_key(),
            WindowEvent::KeyboardInput { event, is_synthetic: false, .. }
                if event.state == ElementState::Pressed && !state.panel.ctx.egui_wants_keyboard_input() =>
            {
                key(event_loop, state, &self.dataset, &event.logical_key, event.repeat);
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
                    && state.explorer.view().pans()
                    && !state.explorer.brushes_at(from)
                {
                    state.explorer.gesture(Gesture::Pan { by: [p[0] - last[0], p[1] - last[1]] });
                    state.press = Some((from, p));
                }
                state.cursor = p;
                state.window.request_redraw();
            }
            WindowEvent::MouseInput { state: ElementState::Pressed, .. } if state.over_panel() => {}
            WindowEvent::MouseInput { state: s, button: MouseButton::Left, .. } => match (s, state.press) {
                (ElementState::Pressed, _) => state.press = Some((state.cursor, state.cursor)),
                (ElementState::Released, Some((from, _))) => state.release(&self.dataset, from),
                _ => {}
            },
            WindowEvent::MouseInput { state: s, button: MouseButton::Right, .. } => {
                // The right button zooms a view that reads its own left drags, and selects an
                // area in a view that sums areas up (the timeline).
                let v = state.explorer.view();
                let areas = v.pans() && v.reads().intersects(Parts::AREA);
                if let (Some(from), ElementState::Released) = (state.zoom_from, s) {
                    let e = &state.explorer;
                    let (f, t) = (e.to_picture(from), e.to_picture(state.cursor));
                    let (sel, frame) = (&e.request.selection, e.request.frame);
                    let next = if areas {
                        e.view().brush(&self.dataset, sel, frame, f, t)
                    } else {
                        e.view().zoom_drag(sel, frame, f, t)
                    };
                    if let Some(next) = next {
                        announce(state, &self.dataset, next);
                    }
                }
                let zooms = !state.explorer.view().pans() || areas;
                state.zoom_from = (zooms && s == ElementState::Pressed).then_some(state.cursor);
                state.window.request_redraw();
            }
            WindowEvent::MouseWheel { .. } if !state.explorer.view().pans() || state.over_panel() => {}
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
                let actions = match state.redraw() {
                    Ok(a) => a,
                    Err(e) => {
                        self.fail(event_loop, e);
                        return;
                    }
                };
                for action in actions {
                    state.act(event_loop, &self.dataset, action);
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

/// Perfetto's navigation keys: W and S zoom in and out at `at`, A and D pan left and right by
/// a tenth of the picture's `width`.
fn navigation(key: &str, at: [f32; 2], width: f32) -> Option<Gesture> {
    match key {
        "w" | "W" => Some(Gesture::Wheel { at, steps: 1.0 }),
        "s" | "S" => Some(Gesture::Wheel { at, steps: -1.0 }),
        "a" | "A" => Some(Gesture::Pan { by: [width * 0.1, 0.0] }),
        "d" | "D" => Some(Gesture::Pan { by: [-width * 0.1, 0.0] }),
        _ => None,
    }
}

/// A key press: W/A/S/D zoom and pan (held, they repeat), Ctrl+S saves, Esc or Q quit, 0 resets
/// pan and zoom, C clears the selection, H shows the help, P hides or shows the panel; any
/// other goes to the view ([`View::key`]).
fn key(event_loop: &ActiveEventLoop, state: &mut State, dataset: &Dataset, key: &Key, repeat: bool) {
    if state.typing.is_some() {
        typed(state, dataset, key);
        state.window.request_redraw();
        return;
    }
    if let Key::Character(c) = key {
        // Ctrl+S: some platforms give the control character instead of the letter.
        if (state.ctrl && c.eq_ignore_ascii_case("s")) || c.as_str() == "\u{13}" {
            if !repeat {
                state.save();
            }
            state.window.request_redraw();
            return;
        }
        let width = state.picture_width() as f32;
        let inside = state.cursor[0] < width && !state.over_panel();
        let at = if inside { state.cursor } else { [width / 2.0, state.size.1 as f32 / 2.0] };
        if let Some(g) = navigation(c.as_str(), at, width).filter(|_| state.explorer.view().pans()) {
            state.explorer.gesture(g);
            state.window.request_redraw();
            return;
        }
    }
    if repeat {
        return;
    }
    match key {
        Key::Named(NamedKey::Escape) => event_loop.exit(),
        Key::Character(c) => match c.as_str() {
            "q" => event_loop.exit(),
            "c" => {
                // The window and whether the critical path is outlined are not selections to clear.
                let kept = &state.explorer.request.selection;
                let cleared = Selection { window_s: kept.window_s, critical: kept.critical, ..Default::default() };
                if cleared != state.explorer.request.selection {
                    announce(state, dataset, cleared);
                }
            }
            "0" => {
                state.explorer.gesture(Gesture::Reset);
            }
            "h" | "?" => state.help = !state.help,
            "/" if searches(state) => {
                state.typing = Some(String::new());
                state.saved = Some(typing_prompt(""));
            }
            "n" | "N" if searches(state) => step_search(state, dataset, c.as_str() == "n"),
            "p" => {
                state.panel.open = !state.panel.open;
                let (w, h) = state.size;
                if let Err(e) = state.resize(w, h) {
                    state.saved = Some(format!("error: {e}"));
                }
            }
            other => {
                let e = &state.explorer;
                if let Some(next) = e.view().key(dataset, &e.request.selection, e.request.frame, other) {
                    let moved = next.window_s.filter(|&w| Some(w) != e.request.selection.window_s);
                    announce(state, dataset, next);
                    if let Some((a, b)) = moved {
                        eprintln!("window: {a:.6} to {b:.6} s");
                    }
                }
            }
        },
        _ => {}
    }
    state.window.request_redraw();
}

/// Whether the view searches region names (it reads the selection's search).
fn searches(state: &State) -> bool {
    state.explorer.view().reads().intersects(Parts::SEARCH)
}

/// The panel's status line while a search is typed.
fn typing_prompt(text: &str) -> String {
    format!("search: {text}\u{2502}  (Enter: search, Esc: cancel)")
}

/// A key while a search is typed after `/`: text, Backspace, Enter (search; empty clears the
/// search) or Esc (cancel).
fn typed(state: &mut State, dataset: &Dataset, key: &Key) {
    let Some(text) = state.typing.as_mut() else { return };
    match key {
        Key::Named(NamedKey::Enter) => {
            let text = state.typing.take().unwrap_or_default();
            search_for(state, dataset, text);
            return;
        }
        Key::Named(NamedKey::Escape) => {
            state.typing = None;
            state.saved = None;
            return;
        }
        Key::Named(NamedKey::Backspace) => {
            text.pop();
        }
        Key::Named(NamedKey::Space) => text.push(' '),
        Key::Character(c) if !c.chars().any(char::is_control) => text.push_str(c),
        _ => {}
    }
    state.saved = Some(typing_prompt(text));
}

/// Searches region names for `text` (typed after `/` or in the panel's box; empty clears the
/// search): the box shows it, and `n` / `N` start again from the window.
fn search_for(state: &mut State, dataset: &Dataset, text: String) {
    let selection = state.explorer.request.selection;
    let search = if text.trim().is_empty() {
        None
    } else {
        match Search::new(&text) {
            Ok(s) => Some(s),
            Err(e) => {
                state.saved = Some(e);
                return;
            }
        }
    };
    state.panel.search = text;
    state.search_at = None;
    state.saved = search.map(|s| format!("search \u{201c}{}\u{201d}: n, N step through the matches", s.as_str()));
    announce(state, dataset, Selection { search, found: None, ..selection });
}

/// `n` (`forward`) or `N`: the window moves to the next or previous match of the search, in
/// time order, and the panel says which it is.
fn step_search(state: &mut State, dataset: &Dataset, forward: bool) {
    use exaviz_views::search;
    let selection = state.explorer.request.selection;
    let Some(text) = selection.search else {
        state.saved = Some("no search yet: / starts one".into());
        return;
    };
    match search::step(dataset, &text, state.search_at, forward) {
        Ok(o) => {
            state.search_at = Some(o.at());
            let name = dataset.trace.locations.name.get(o.location as usize).cloned().unwrap_or_default();
            let at = o.start.saturating_sub(exaviz_views::trace::span(&dataset.trace).map_or(0, |s| s.0));
            let message = format!(
                "match {} of {}: {name} at {:.6} s",
                o.nth + 1,
                o.of,
                at as f64 / dataset.trace.ticks_per_second.max(1) as f64
            );
            eprintln!("search \u{201c}{}\u{201d}: {message}", text.as_str());
            state.saved = Some(message);
            announce(state, dataset, search::select(dataset, &selection, &o));
        }
        Err(e) => state.saved = Some(e),
    }
}

/// A changed selection: one line on standard error (in the view's words where it has them), the title,
/// and a new picture asked for.
fn announce(state: &mut State, dataset: &Dataset, next: Selection) {
    state.explorer.select(next);
    if let Some(what) = state.explorer.view().describe(dataset, &next) {
        eprintln!("{}: {what}", state.explorer.view().name());
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
    if let Some((a, b)) = s.time_slice {
        parts.push(format!("time {a}:{b}"));
    }
    if let Some(r) = s.traffic {
        parts.push(format!("traffic {}:{}{}", r.lo, r.hi, if r.complement { " (complement)" } else { "" }));
    }
    if let Some(j) = s.jobs {
        let ids: Vec<String> = j.ids().iter().map(u64::to_string).collect();
        parts.push(format!("jobs {}", ids.join(",")));
    }
    if let Some(text) = s.search {
        parts.push(format!("search \u{201c}{}\u{201d}", text.as_str()));
    }
    if let Some(a) = s.area {
        parts.push(format!("area of rows {}-{}", a.first, a.last));
    }
    if let Some(m) = s.message {
        parts.push(format!("message {m}"));
    }
    if s.folded.is_some_and(|f| f != exaviz_model::selection::Folded::default()) {
        parts.push("groups collapsed".into());
    }
    if let Some(op) = s.operator {
        parts.push(format!("operator {}", op.as_str()));
    }
    if let Some((a, b)) = s.devices {
        parts.push(format!("devices {a}-{b}"));
    }
    if let Some((a, b)) = s.route {
        parts.push(match b {
            Some(b) => format!("route {a} -> {b}"),
            None => format!("route from {a}"),
        });
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

/// Two opposite corners of an outlined rectangle.
type Corners = ([f32; 2], [f32; 2]);

/// A box of text over the frame: where it is shown, its title and its lines.
type TextBox = ([f32; 2], String, Vec<String>);

/// The device the worker computes on, beside the window's `backend`: the window's own, which
/// presents its pictures where they were drawn (nothing read back; then true), where
/// [`explore::pictures_on_device`] says so; else one of its own (the window's surface then never
/// waits for a long computation when it is reconfigured either).
fn worker_device(backend: &Arc<Backend>) -> (bool, Arc<Backend>) {
    let shared = explore::pictures_on_device(backend);
    let worker = match backend.as_ref() {
        _ if shared => backend.clone(),
        Backend::Gpu(_) => Arc::new(match GpuContext::new() {
            Ok(ctx) => Backend::Gpu(Box::new(ctx)),
            Err(e) => {
                eprintln!("warning: no second GPU device for the worker ({e}); computing on the CPU path");
                Backend::Cpu
            }
        }),
        Backend::Cpu => Arc::new(Backend::Cpu),
    };
    (shared, worker)
}

/// [`outline`] as four thin rectangles of a frame's scene.
fn outline_scene(scene: &mut Scene, (w, h): (u32, u32), a: [f32; 2], b: [f32; 2]) {
    let clampx = |x: f32| x.clamp(0.0, w.saturating_sub(1) as f32).trunc();
    let clampy = |y: f32| y.clamp(0.0, h.saturating_sub(1) as f32).trunc();
    let (mut x0, mut x1) = (a[0].min(b[0]), a[0].max(b[0]));
    if x1 - x0 < 16.0 {
        let c = (x0 + x1) / 2.0;
        (x0, x1) = (c - 8.0, c + 8.0);
    }
    let (x0, x1, y0, y1) = (clampx(x0), clampx(x1), clampy(a[1].min(b[1])), clampy(a[1].max(b[1])));
    let colour = [240.0 / 255.0, 228.0 / 255.0, 66.0 / 255.0, 1.0];
    scene.rect([x0, y0], [x1 + 1.0, y0 + 1.0], colour, true);
    scene.rect([x0, y1], [x1 + 1.0, y1 + 1.0], colour, true);
    scene.rect([x0, y0], [x0 + 1.0, y1 + 1.0], colour, true);
    scene.rect([x1, y0], [x1 + 1.0, y1 + 1.0], colour, true);
}

/// Opens the window and runs until it is closed (or `frames` frames were presented).
pub fn run(
    dataset: Dataset,
    title: String,
    backend: BackendChoice,
    size: (u32, u32),
    args: ViewArgs,
    content: Content,
    frames: Option<u64>,
) -> Result<()> {
    let event_loop = EventLoop::<Wake>::with_user_event()
        .build()
        .map_err(|e| anyhow!("cannot open a window ({e}); for headless output use exaviz render"))?;
    let proxy = event_loop.create_proxy();
    let dataset = Arc::new(dataset);
    let mut app = App {
        dataset,
        title,
        size,
        args,
        content,
        backend,
        frames,
        proxy,
        state: None,
        error: None,
        presented: None,
        moved: None,
    };
    event_loop.run_app(&mut app).context("window event loop failed")?;
    // `exiting` shut the window's work down while the event loop was alive; a loop that ended
    // without it (an error) leaves the state here.
    if let Some(s) = app.state.take() {
        s.shut_down();
    }
    match app.error {
        Some(e) => Err(e),
        None => {
            if let Some(n) = app.presented {
                eprintln!("presented {n} frames");
            }
            if let Some((up, down)) = app.moved {
                eprintln!(
                    "the window's GPU device: {:.3} MB uploaded, {:.3} MB read back",
                    up as f64 / 1e6,
                    down as f64 / 1e6
                );
            }
            Ok(())
        }
    }
}

/// The dataset in a few lines, for the panel.
fn summary(dataset: &Dataset) -> Vec<String> {
    let s = dataset.summary();
    let mut lines = vec![s.name.clone()];
    if let Some(t) = &dataset.fattree {
        lines.push(format!("fat tree: {} pods, {} bundles", t.pods, t.bundles));
        lines.push(format!(
            "{} nodes, {} switches, {} links",
            thousands(t.nodes.len()),
            thousands(t.switches.len()),
            thousands(t.links.len())
        ));
        lines.push(format!(
            "{} counter samples, {} jobs, {} routing tables",
            thousands(t.times.len()),
            thousands(t.jobs.len()),
            t.tables.len()
        ));
        return lines;
    }
    if !s.dimensions.is_empty() {
        let d: Vec<String> = s.dimensions.iter().map(u32::to_string).collect();
        lines.push(format!("{} torus: {} nodes, {} links", d.join("x"), thousands(s.nodes), thousands(s.links)));
    }
    if s.locations > 0 {
        lines.push(exaviz_views::timeline::locations_counted(&dataset.trace));
    }
    lines.push(format!("{} messages, {} states", thousands(s.messages), thousands(s.intervals)));
    if s.collectives > 0 {
        lines.push(format!("{} collectives", thousands(s.collectives)));
    }
    if let Some((a, b)) = s.time_span_ticks
        && s.ticks_per_second > 0
    {
        lines.push(format!("{:.6} s of trace", (b - a) as f64 / s.ticks_per_second as f64));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfettos_keys_zoom_at_the_pointer_and_pan_by_a_tenth() {
        let at = [300.0, 200.0];
        assert_eq!(navigation("w", at, 1000.0), Some(Gesture::Wheel { at, steps: 1.0 }));
        assert_eq!(navigation("S", at, 1000.0), Some(Gesture::Wheel { at, steps: -1.0 }));
        assert_eq!(navigation("a", at, 1000.0), Some(Gesture::Pan { by: [100.0, 0.0] }));
        assert_eq!(navigation("d", at, 1000.0), Some(Gesture::Pan { by: [-100.0, 0.0] }));
        assert_eq!(navigation("x", at, 1000.0), None);
        assert!(HELP.iter().any(|l| l.contains("ctrl+s: save")), "the help says which key saves");
    }
}
