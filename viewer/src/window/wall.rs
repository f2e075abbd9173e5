//! `exaviz wall --config wall.toml INPUT --view V`: one process drives a powerwall's monitors,
//! one borderless window per tile (full screen on its monitor where there are as many monitors
//! as tiles; otherwise windows side by side, for testing on one screen). The view is prepared
//! once at the whole canvas's size; every frame renders each window's rectangle of the same
//! scene under one shared pan and zoom and presents all windows together, logging the frame
//! number once per frame. A drag or wheel on any tile moves the whole wall.

use std::io::Write;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use exaviz_compute::Backend;
use exaviz_render::wall::Wall;
use exaviz_render::{Scene, View, render_region};
use exaviz_views::Frame;
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Fullscreen, Window, WindowId};

type SoftSurface = softbuffer::Surface<winit::event_loop::OwnedDisplayHandle, Arc<Window>>;

/// One tile's window.
struct Tile {
    column: u32,
    row: u32,
    window: Arc<Window>,
    surface: SoftSurface,
}

/// Where the frames come from: this process, or a master (`--join`).
pub enum Net {
    Local,
    Serve { addr: String, join_timeout: std::time::Duration },
    Join { addr: String, tile: (u32, u32) },
}

struct WallApp {
    /// Open only this tile (a host that joined a master).
    only: Option<(u32, u32)>,
    /// The master's connection, for `ready N` and gestures.
    remote: Option<std::net::TcpStream>,
    /// The frame rendered and waiting for the master's `present`.
    pending: Option<(u64, exaviz_render::Image)>,
    /// A frame the master sent before the window was open.
    early: Option<(u64, View)>,
    wall: Wall,
    scene: Arc<Scene>,
    backend: Backend,
    tiles: Vec<Tile>,
    /// How many windows were open when the wall shut down.
    windows: usize,
    /// The shared pan and zoom, in canvas pixels.
    view: View,
    /// The pointer, in canvas pixels, and where the left button was pressed.
    cursor: [f32; 2],
    dragging: bool,
    dirty: bool,
    /// A window asked to be drawn since the last frame.
    asked: bool,
    frame: u64,
    frames: Option<u64>,
    error: Option<anyhow::Error>,
}

impl WallApp {
    fn open(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let monitors: Vec<_> = event_loop.available_monitors().collect();
        let count = if self.only.is_some() { 1 } else { (self.wall.columns * self.wall.rows) as usize };
        let context = softbuffer::Context::new(event_loop.owned_display_handle())
            .map_err(|e| anyhow!("cannot draw into windows: {e}"))?;
        for k in 0..count as u32 {
            let (column, row) = self.only.unwrap_or((k % self.wall.columns, k / self.wall.columns));
            let [w, h] = self.wall.tile;
            let mut attrs = Window::default_attributes()
                .with_title(format!("exaviz wall {column},{row}"))
                .with_decorations(false)
                .with_resizable(false)
                .with_inner_size(winit::dpi::PhysicalSize::new(w, h));
            let chosen = self.wall.tiles.iter().find(|t| (t.column, t.row) == (column, row)).and_then(|t| t.monitor);
            // A joined host goes full screen when its tile names a monitor; one process with a
            // monitor per tile always does.
            let full = if self.only.is_some() { chosen.is_some() } else { monitors.len() >= count };
            if full {
                let m = chosen.map_or(k as usize, |m| m as usize);
                let monitor = monitors.get(m).cloned().with_context(|| {
                    format!("tile ({column}, {row}): monitor {m} is not connected ({} monitors)", monitors.len())
                })?;
                attrs = attrs.with_fullscreen(Some(Fullscreen::Borderless(Some(monitor))));
            } else {
                attrs = attrs.with_position(winit::dpi::PhysicalPosition::new(column * w, row * h));
            }
            let window = Arc::new(event_loop.create_window(attrs).context("cannot open a window")?);
            let mut surface = softbuffer::Surface::new(&context, window.clone())
                .map_err(|e| anyhow!("cannot create a window buffer: {e}"))?;
            let (nw, nh) = (NonZeroU32::new(w).context("zero width")?, NonZeroU32::new(h).context("zero height")?);
            surface.resize(nw, nh).map_err(|e| anyhow!("cannot size the window buffer: {e}"))?;
            self.tiles.push(Tile { column, row, window, surface });
        }
        let how = if self.only.is_some() {
            "one tile of a wall kept in step by its master"
        } else if monitors.len() >= count {
            "full screen, one per monitor"
        } else {
            "side by side"
        };
        let [cw, ch] = self.wall.canvas();
        eprintln!("wall on {}: {count} windows ({how}), canvas {cw}x{ch}", self.backend.describe());
        Ok(())
    }

    /// Renders every tile's rectangle and presents all windows together.
    fn present(&mut self) -> Result<()> {
        let mut images = Vec::with_capacity(self.tiles.len());
        for t in &self.tiles {
            let origin = self.wall.origin(t.column, t.row);
            images.push(render_region(&self.backend, &self.scene, self.view, origin, self.wall.tile)?);
        }
        let mut buffers = Vec::with_capacity(self.tiles.len());
        for (t, image) in self.tiles.iter_mut().zip(&images) {
            let mut buffer = t.surface.buffer_mut().map_err(|e| anyhow!("cannot draw into a window: {e}"))?;
            for (dst, p) in buffer.iter_mut().zip(image.pixels.chunks_exact(4)) {
                *dst = (u32::from(p[0]) << 16) | (u32::from(p[1]) << 8) | u32::from(p[2]);
            }
            buffers.push(buffer);
        }
        // Presented together, after every window's picture is ready.
        for b in buffers {
            b.present().map_err(|e| anyhow!("cannot present a window: {e}"))?;
        }
        self.frame += 1;
        eprintln!("frame {}: {} tiles presented", self.frame, self.tiles.len());
        self.dirty = false;
        Ok(())
    }

    /// Sends a line to the master, when joined; whether it was sent there.
    fn tell(&mut self, line: &str) -> bool {
        let Some(w) = self.remote.as_mut() else { return false };
        if let Err(e) = writeln!(w, "{line}") {
            eprintln!("warning: cannot reach the master: {e}");
        }
        true
    }

    /// A frame from the master: rendered now, presented when the master says so.
    fn on_master(&mut self, event_loop: &ActiveEventLoop, m: super::wall_net::FromMaster) -> Result<()> {
        use super::wall_net::FromMaster;
        match m {
            FromMaster::Frame(n, view) => {
                let Some(t) = self.tiles.first() else {
                    self.early = Some((n, view));
                    return Ok(());
                };
                let origin = self.wall.origin(t.column, t.row);
                self.view = view;
                let image = render_region(&self.backend, &self.scene, view, origin, self.wall.tile)?;
                self.pending = Some((n, image));
                self.tell(&format!("ready {n}"));
            }
            FromMaster::Present(n) => {
                let Some((k, image)) = self.pending.take() else { return Ok(()) };
                if k != n {
                    return Ok(());
                }
                let t = self.tiles.first_mut().context("no window")?;
                let mut buffer = t.surface.buffer_mut().map_err(|e| anyhow!("cannot draw into the window: {e}"))?;
                for (dst, p) in buffer.iter_mut().zip(image.pixels.chunks_exact(4)) {
                    *dst = (u32::from(p[0]) << 16) | (u32::from(p[1]) << 8) | u32::from(p[2]);
                }
                buffer.present().map_err(|e| anyhow!("cannot present the window: {e}"))?;
                self.frame = n;
                eprintln!("tile {},{} presented frame {n}", t.column, t.row);
            }
            FromMaster::Quit => event_loop.exit(),
            FromMaster::Lost(why) => bail!("the master is gone: {why}"),
        }
        Ok(())
    }

    fn tile_of(&self, id: WindowId) -> Option<&Tile> {
        self.tiles.iter().find(|t| t.window.id() == id)
    }

    fn redraw_all(&self) {
        for t in &self.tiles {
            t.window.request_redraw();
        }
    }
}

impl WallApp {
    /// Ends the wall's work in dependency order while the event loop is alive: the master's
    /// connection (its reader thread ends), then every tile's surface and window; the device
    /// goes with the app.
    fn shut_down(&mut self) {
        if let Some(w) = self.remote.take() {
            let _ = w.shutdown(std::net::Shutdown::Both);
        }
        if !self.tiles.is_empty() {
            self.windows = self.tiles.len();
        }
        self.tiles.clear();
    }
}

impl ApplicationHandler<super::wall_net::FromMaster> for WallApp {
    fn exiting(&mut self, _: &ActiveEventLoop) {
        self.shut_down();
    }

    fn user_event(&mut self, event_loop: &ActiveEventLoop, m: super::wall_net::FromMaster) {
        if let Err(e) = self.on_master(event_loop, m) {
            self.error = Some(e);
            event_loop.exit();
        }
    }

    /// Presents one frame on every window when any asked (or every turn, counting frames);
    /// a joined tile presents when its master says.
    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        if !self.asked || self.tiles.is_empty() || self.remote.is_some() {
            return;
        }
        self.asked = false;
        if let Some(limit) = self.frames
            && self.frame >= limit
        {
            event_loop.exit();
            return;
        }
        if (self.dirty || self.frames.is_some())
            && let Err(e) = self.present()
        {
            self.error = Some(e);
            event_loop.exit();
            return;
        }
        if self.frames.is_some() {
            self.redraw_all();
        }
    }

    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.tiles.is_empty()
            && let Err(e) = self.open(event_loop)
        {
            self.error = Some(e);
            event_loop.exit();
            return;
        }
        if let Some((n, view)) = self.early.take() {
            self.user_event(event_loop, super::wall_net::FromMaster::Frame(n, view));
        }
        self.dirty = true;
        self.redraw_all();
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => match event.logical_key
            {
                Key::Named(NamedKey::Escape) => event_loop.exit(),
                Key::Character(c) if c.as_str() == "q" => event_loop.exit(),
                Key::Character(c) if c.as_str() == "0" && self.tell("reset") => {}
                Key::Character(c) if c.as_str() == "0" => {
                    self.view = View::default();
                    eprintln!("reset");
                    self.dirty = true;
                    self.redraw_all();
                }
                _ => {}
            },
            WindowEvent::CursorMoved { position, .. } => {
                let Some(t) = self.tile_of(id) else { return };
                let o = self.wall.origin(t.column, t.row);
                let p = [o[0] as f32 + position.x as f32, o[1] as f32 + position.y as f32];
                if self.dragging {
                    let (dx, dy) = (p[0] - self.cursor[0], p[1] - self.cursor[1]);
                    if !self.tell(&format!("pan {dx} {dy}")) {
                        self.view.offset[0] += dx;
                        self.view.offset[1] += dy;
                        self.dirty = true;
                        self.redraw_all();
                    }
                }
                self.cursor = p;
            }
            WindowEvent::MouseInput { state, button: MouseButton::Left, .. } => {
                let pressed = state == ElementState::Pressed;
                if self.dragging && !pressed {
                    eprintln!("pan: offset {:.0},{:.0}", self.view.offset[0], self.view.offset[1]);
                }
                self.dragging = pressed;
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                let f = 1.15f32.powf(steps);
                if !self.tell(&format!("zoom {f} {} {}", self.cursor[0], self.cursor[1])) {
                    self.view.zoom_at(f, self.cursor);
                    eprintln!("zoom: scale {:.3}", self.view.scale);
                    self.dirty = true;
                    self.redraw_all();
                }
            }
            // Every window asks; the frame is presented once for all, when the loop waits.
            WindowEvent::RedrawRequested => self.asked = true,
            _ => {}
        }
    }
}

/// `exaviz wall --config FILE INPUT`.
pub fn run(input: &str, config: &Path, frames: Option<u64>, view: &crate::common::ViewArgs, net: Net) -> Result<()> {
    let wall = crate::common::read_wall(config)?;
    if let Net::Serve { addr, join_timeout } = &net {
        return super::wall_net::serve(&wall, addr, frames, *join_timeout);
    }
    if let Net::Join { tile: (c, r), .. } = &net
        && (*c >= wall.columns || *r >= wall.rows)
    {
        bail!(
            "--tile {c},{r}: {} has columns 0 to {} and rows 0 to {}",
            config.display(),
            wall.columns - 1,
            wall.rows - 1
        );
    }
    view.built()?;
    let dataset = crate::common::load(input)?;
    let mut view = view.clone();
    crate::common::open_against(&mut view)?;
    let built = view.built()?;
    let backend = Backend::new(view.backend.into())?;
    built.selection.validate(&dataset).map_err(|e| anyhow!("{input}: {e}"))?;
    let [cw, ch] = wall.canvas();
    let pb = crate::common::spinner(&format!("preparing the {} view at {cw}x{ch}", view.view));
    let frame = Frame { width: cw, height: ch };
    let prepared = exaviz_views::contract::prepare(built.view.as_ref(), &dataset, &built.selection, frame, &backend)
        .map_err(|e| anyhow!("{input}: {e}"))?;
    let scene = Arc::new(prepared.draw(&dataset, &built.selection).into_owned());
    pb.finish_and_clear();
    let event_loop = EventLoop::<super::wall_net::FromMaster>::with_user_event()
        .build()
        .map_err(|e| anyhow!("cannot open windows ({e}); for headless tiles use exaviz render --wall"))?;
    let (only, remote) = match &net {
        Net::Join { addr, tile } => {
            let proxy: EventLoopProxy<super::wall_net::FromMaster> = event_loop.create_proxy();
            let writer = super::wall_net::join(addr, *tile, move |m| {
                let _ = proxy.send_event(m);
            })?;
            (Some(*tile), Some(writer))
        }
        _ => (None, None),
    };
    let mut app = WallApp {
        only,
        remote,
        pending: None,
        early: None,
        wall,
        scene,
        backend,
        tiles: Vec::new(),
        windows: 0,
        view: View::default(),
        cursor: [0.0; 2],
        dragging: false,
        dirty: true,
        asked: false,
        frame: 0,
        frames,
        error: None,
    };
    event_loop.run_app(&mut app).context("window event loop failed")?;
    if app.error.is_none() {
        eprintln!("presented {} frames on {} windows", app.frame, app.windows);
    }
    app.shut_down();
    let WallApp { error, .. } = app;
    error.map_or(Ok(()), Err)
}
