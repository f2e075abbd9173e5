//! Exploration without blocking: the state of one explored view (selection, pan and zoom, time
//! window) and a worker thread that prepares, draws and renders it. The window thread (and
//! `exaviz bench-interact`, which replays gestures through this same code) only asks for
//! pictures and shows the last finished one, moved and magnified to match the newest gesture
//! until the worker delivers it (the preview). A request made stale by a newer one is dropped
//! before it starts; a prepared view is reused when only parts it does not depend on changed.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Selection;
use exaviz_render as render;
use exaviz_render::{DeviceImage, Image, Raster, RasterData, Rendered, Scene, render_kept, render_scene};
use exaviz_views::contract::prepare;
use exaviz_views::trace::{pan_window, zoom_window};
use exaviz_views::{Frame, Pick, Prepared, View};

/// What a picture is of: everything a request names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub selection: Selection,
    /// Pan and zoom of the scene.
    pub transform: render::View,
    pub frame: Frame,
}

/// A finished picture with what it was made from.
pub struct Picture {
    pub generation: u64,
    pub request: Request,
    /// The picture, kept on the device it was drawn on where the explorer asks for that.
    pub image: Rendered,
    /// The picture's background (what a moved picture leaves uncovered).
    pub background: [f32; 3],
    pub prepared: Arc<dyn Prepared>,
    /// Whether the view was prepared again for it (else only drawn).
    pub prepared_again: bool,
    /// Drawn from the pyramid while the window's rows are fetched from a server: the picture
    /// of the same request follows.
    pub coarse: bool,
}

enum Reply {
    Done(Box<Picture>),
    Failed { generation: u64, message: String },
}

struct Job {
    generation: u64,
    request: Request,
    /// Whether the picture stays on the GPU device it is drawn on (not read back).
    on_device: bool,
}

/// The worker thread: prepares (when needed), draws and renders requests, newest first.
///
/// Dropping a worker closes its queue and joins its thread: no thread may still be inside the
/// GPU driver or the window system while the device, the surface or the process goes away (a
/// worker left running at exit crashed the process in Mesa or libc's teardown).
pub struct Worker {
    /// `None` once stopped: the thread ends after the job in hand.
    jobs: Option<Sender<Job>>,
    replies: Receiver<Reply>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    pub fn start(
        dataset: Arc<Dataset>,
        view: Arc<dyn View>,
        backend: Arc<Backend>,
        wake: Box<dyn Fn() + Send>,
    ) -> Self {
        let (jobs, job_rx) = channel::<Job>();
        let (reply_tx, replies) = channel::<Reply>();
        let thread = std::thread::Builder::new()
            .name("exaviz-worker".into())
            .spawn(move || work(&dataset, view.as_ref(), &backend, &job_rx, &reply_tx, wake.as_ref()))
            .expect("the worker thread starts");
        Self { jobs: Some(jobs), replies, thread: Some(thread) }
    }

    /// Takes no more jobs; the thread ends after the one in hand (without waiting for it).
    pub fn stop(&mut self) {
        self.jobs = None;
    }

    /// Whether the thread has ended (after [`Worker::stop`]).
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(std::thread::JoinHandle::is_finished)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            eprintln!("error: the worker thread panicked");
        }
    }
}

/// Whether pictures drawn on `backend` stay on its device for a window presenting on the same
/// device: on a GPU whose kernels do not share the CPU's cores. On lavapipe one queue runs every
/// submission in turn, so a window presenting on the device that computes would wait for each
/// computation: there the worker computes on a device of its own and its pictures are read
/// back (a copy in memory). `EXAVIZ_WORKER_DEVICE=shared` or `own` chooses.
pub fn pictures_on_device(backend: &Backend) -> bool {
    let Backend::Gpu(ctx) = backend else { return false };
    match std::env::var("EXAVIZ_WORKER_DEVICE").ok().as_deref().map(str::trim) {
        Some("shared") => true,
        Some("own") => false,
        _ => !ctx.on_cpu_cores(),
    }
}

/// A picture as rendered, and its background.
type Drawn = (Rendered, [f32; 3]);

fn work(
    dataset: &Dataset,
    view: &dyn View,
    backend: &Backend,
    jobs: &Receiver<Job>,
    replies: &Sender<Reply>,
    wake: &dyn Fn(),
) {
    let mut cached: Option<(Selection, Frame, Arc<dyn Prepared>)> = None;
    // Tests slow every computation down to see the preview and the window stay responsive.
    let delay = std::env::var("EXAVIZ_WORKER_DELAY_MS").ok().and_then(|v| v.parse::<u64>().ok());
    let mut next: Option<Job> = None;
    while let Some(mut job) = next.take().or_else(|| jobs.recv().ok()) {
        if let Some(ms) = delay {
            std::thread::sleep(Duration::from_millis(ms));
        }
        // Only the newest request matters.
        while let Ok(newer) = jobs.try_recv() {
            job = newer;
        }
        let r = job.request;
        let key = r.selection.only(view.depends_on());
        let reuse = cached.as_ref().filter(|(k, f, _)| *k == key && *f == r.frame).map(|c| c.2.clone());
        let prepared_again = reuse.is_none();
        let on_device = job.on_device;
        let picture = |prepared: Arc<dyn Prepared>| -> Result<(Arc<dyn Prepared>, Drawn), String> {
            let mut scene = prepared.draw(dataset, &r.selection);
            // A minimap outlines the part of the scene in view.
            if let Some(m) = prepared.minimap() {
                m.draw_viewport(scene.to_mut(), r.transform, r.frame);
            }
            let image = if on_device {
                render_kept(backend, &scene, r.transform)
            } else {
                render_scene(backend, &scene, r.transform).map(Rendered::Host)
            };
            let background = scene.background;
            drop(scene);
            Ok((prepared, (image.map_err(|e| e.to_string())?, background)))
        };
        let reply = |result: Result<(Arc<dyn Prepared>, Drawn), String>, coarse: bool| match result {
            Ok((prepared, (image, background))) => Reply::Done(Box::new(Picture {
                generation: job.generation,
                request: r,
                image,
                background,
                prepared,
                prepared_again,
                coarse,
            })),
            Err(message) => Reply::Failed { generation: job.generation, message },
        };
        // Rows on a server: the pyramid's picture at once, then the rows' (unless a newer
        // request came meanwhile, or the window holds too many rows to read: the pyramid's
        // picture is then the picture).
        // The window's rows or cells are asked for while the pyramid's picture is drawn: the
        // round trip overlaps the drawing.
        let far = dataset.out_of_core.as_ref().is_some_and(|o| o.rows.remote());
        let (coarse, reads_rows) = if reuse.is_none() && far {
            std::thread::scope(|s| {
                let ahead = s.spawn(|| exaviz_views::contract::reads_window_rows(view, dataset, &r.selection, r.frame));
                let coarse = exaviz_views::contract::prepare_coarse(view, dataset, &r.selection, r.frame, backend)
                    .and_then(Result::ok)
                    .and_then(|c| picture(Arc::from(c)).ok());
                let sent = coarse.as_ref().map(|(c, image)| {
                    let sent = replies.send(reply(Ok((c.clone(), image.clone())), true)).is_ok();
                    wake();
                    sent
                });
                (sent.map(|sent| coarse.filter(|_| sent)), ahead.join().unwrap_or(true))
            })
        } else {
            (None, true)
        };
        if let Some(coarse) = coarse {
            let Some((coarse, image)) = coarse else { return };
            if let Ok(newer) = jobs.try_recv() {
                next = Some(newer);
                continue;
            }
            if !reads_rows {
                cached = Some((key, r.frame, coarse.clone()));
                if replies.send(reply(Ok((coarse, image)), false)).is_err() {
                    return;
                }
                wake();
                continue;
            }
        }
        let result = (|| -> Result<(Arc<dyn Prepared>, Drawn), String> {
            let prepared = match reuse {
                Some(p) => p,
                None => {
                    r.selection.validate(dataset).map_err(|e| e.to_string())?;
                    let p: Arc<dyn Prepared> =
                        Arc::from(prepare(view, dataset, &r.selection, r.frame, backend).map_err(|e| e.to_string())?);
                    cached = Some((key, r.frame, p.clone()));
                    p
                }
            };
            picture(prepared)
        })();
        if replies.send(reply(result, false)).is_err() {
            return;
        }
        wake();
    }
}

/// A gesture, in window pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gesture {
    /// Wheel steps at a point (positive: zoom in).
    Wheel { at: [f32; 2], steps: f32 },
    /// A drag by a distance (the timeline pans in time, other views move the picture).
    Pan { by: [f32; 2] },
    /// A click at a point: selects what is there, if anything.
    Click { at: [f32; 2] },
    /// Back to the whole picture.
    Reset,
    /// The window's new size.
    Resize { width: u32, height: u32 },
}

/// One explored view: the current request, the last finished picture and the worker.
pub struct Explorer {
    pub dataset: Arc<Dataset>,
    view: Arc<dyn View>,
    worker: Worker,
    pub request: Request,
    /// The trace's duration in seconds, for views that zoom in time (the timeline).
    duration: Option<f64>,
    /// The window the view opens on and resets to ([`View::home`]), seconds.
    home: Option<(f64, f64)>,
    generation: u64,
    /// The newest generation asked for.
    pub asked: u64,
    pub shown: Option<Picture>,
    /// The last failure's message, until a newer picture is shown.
    pub error: Option<String>,
    /// The generation that failed last.
    failed: u64,
    /// A click that opens another view ([`Pick::opens`]): its name and the selection clicked,
    /// until the window takes it ([`Explorer::take_opening`]).
    opening: Option<(&'static str, Selection)>,
    /// Whether pictures stay on the GPU device the worker draws them on.
    on_device: bool,
}

impl Explorer {
    #[cfg(test)]
    pub fn new(
        dataset: Arc<Dataset>,
        view: Arc<dyn View>,
        backend: Arc<Backend>,
        selection: Selection,
        frame: Frame,
        wake: Box<dyn Fn() + Send>,
    ) -> Self {
        Self::start(dataset, view, backend, (selection, frame), wake, false)
    }

    /// [`Explorer::new`] whose pictures stay on the GPU device `backend` draws them on where
    /// `on_device` (and the backend is a GPU): a presenter on that device shows them without
    /// reading them back.
    pub fn start_for(
        on_device: bool,
        dataset: Arc<Dataset>,
        view: Arc<dyn View>,
        backend: Arc<Backend>,
        selection: Selection,
        frame: Frame,
        wake: Box<dyn Fn() + Send>,
    ) -> Self {
        Self::start(dataset, view, backend, (selection, frame), wake, on_device)
    }

    fn start(
        dataset: Arc<Dataset>,
        view: Arc<dyn View>,
        backend: Arc<Backend>,
        (selection, frame): (Selection, Frame),
        wake: Box<dyn Fn() + Send>,
        on_device: bool,
    ) -> Self {
        let duration =
            if view.time_axis(frame).is_some() { exaviz_views::trace::duration_s(&dataset.trace) } else { None };
        let home = duration.and(view.home(&dataset));
        let worker = Worker::start(dataset.clone(), view.clone(), backend, wake);
        let request = Request { selection, transform: render::View::default(), frame };
        let mut e = Self {
            dataset,
            view,
            worker,
            request,
            duration,
            home,
            generation: 0,
            opening: None,
            asked: 0,
            shown: None,
            error: None,
            failed: 0,
            on_device,
        };
        e.ask();
        e
    }

    /// Sends the current request to the worker.
    pub fn ask(&mut self) {
        self.generation += 1;
        self.asked = self.generation;
        let job = Job { generation: self.generation, request: self.request, on_device: self.on_device };
        // The worker ends only with the explorer (or once retired).
        if let Some(jobs) = &self.worker.jobs {
            let _ = jobs.send(job);
        }
    }

    /// Stops the worker without waiting for it (a view being replaced): keep the explorer until
    /// [`Explorer::finished`], then drop it, so no frame waits on a picture nobody will see.
    pub fn retire(&mut self) {
        self.worker.stop();
    }

    /// Whether the worker's thread has ended.
    pub fn finished(&self) -> bool {
        self.worker.finished()
    }

    /// Whether a newer picture than the one shown is being made (or the rows' picture of the
    /// coarse one shown).
    pub fn busy(&self) -> bool {
        self.shown.as_ref().is_none_or(|p| p.generation < self.asked || p.coarse) && self.failed < self.asked
    }

    /// Takes one reply of the worker; true when something new is to be shown.
    fn accept(&mut self, reply: Reply) -> bool {
        match reply {
            Reply::Done(p)
                if self.shown.as_ref().is_none_or(|s| {
                    s.generation < p.generation || (s.generation == p.generation && s.coarse && !p.coarse)
                }) =>
            {
                if p.generation == self.asked {
                    self.error = None;
                }
                self.shown = Some(*p);
                true
            }
            Reply::Failed { generation, message } if generation == self.asked => {
                self.error = Some(message);
                self.failed = generation;
                true
            }
            _ => false,
        }
    }

    /// Takes the worker's finished pictures; true when something new is to be shown.
    pub fn receive(&mut self) -> bool {
        let mut changed = false;
        while let Ok(reply) = self.worker.replies.try_recv() {
            let failed = self.failed;
            changed |= self.accept(reply);
            if self.failed != failed
                && let Some(e) = &self.error
            {
                eprintln!("error: {e}");
            }
        }
        changed
    }

    /// Waits for the picture of the newest request (for tests and benchmarks).
    pub fn wait(&mut self, limit: Duration) -> Option<&Picture> {
        let end = Instant::now() + limit;
        while self.busy() && Instant::now() < end {
            match self.worker.replies.recv_timeout(end.saturating_duration_since(Instant::now())) {
                Ok(reply) => {
                    self.accept(reply);
                }
                Err(_) => break,
            }
        }
        self.shown.as_ref().filter(|p| p.generation == self.asked)
    }

    /// The rectangle where x is time `[x0, y0, x1, y1]`, when the view zooms in time.
    fn time_plot(&self) -> Option<[f32; 4]> {
        self.duration?;
        self.view.time_axis(self.request.frame)
    }

    /// Applies a gesture: a new request for the worker where the picture changes. Returns
    /// whether it did.
    pub fn gesture(&mut self, g: Gesture) -> bool {
        let before = self.request;
        // A click in a minimap centres the scene on the point clicked.
        if let Gesture::Click { at } = g
            && let Some(m) = self.shown.as_ref().and_then(|p| p.prepared.minimap()).filter(|m| m.contains(at))
        {
            self.request.transform = m.centred(at, before.transform, before.frame);
            let changed = self.request != before;
            if changed {
                self.ask();
            }
            return changed;
        }
        let (duration, plot, home) = (self.duration, self.time_plot(), self.home);
        let clicked = match g {
            Gesture::Click { at } => self.pick(at).and_then(|p| match (p.opens, p.clicked(&before.selection)) {
                // Another view opens with it: nothing changes here.
                (Some(view), Some(next)) => {
                    self.opening = Some((view, next));
                    None
                }
                (_, next) => next,
            }),
            _ => None,
        };
        let r = &mut self.request;
        match (g, duration, plot) {
            (Gesture::Wheel { at, steps }, Some(duration), Some(plot)) => {
                let u = f64::from((at[0] - plot[0]) / (plot[2] - plot[0]));
                let window = r.selection.window_s.or(home).unwrap_or((0.0, duration));
                r.selection.window_s = Some(zoom_window(window, duration, f64::from(1.15f32.powf(steps)), u));
            }
            (Gesture::Wheel { at, steps }, ..) => r.transform.zoom_at(1.15f32.powf(steps), at),
            (Gesture::Pan { by }, Some(duration), Some(plot)) => {
                let window = r.selection.window_s.or(home).unwrap_or((0.0, duration));
                // Dragging right shows earlier times.
                let share = -f64::from(by[0] / (plot[2] - plot[0]));
                r.selection.window_s = Some(pan_window(window, duration, share));
            }
            (Gesture::Pan { by }, ..) => {
                r.transform.offset[0] += by[0];
                r.transform.offset[1] += by[1];
            }
            (Gesture::Click { .. }, ..) => {
                if let Some(next) = clicked {
                    r.selection = next;
                }
            }
            (Gesture::Reset, ..) => {
                r.transform = render::View::default();
                r.selection.window_s = None;
            }
            (Gesture::Resize { width, height }, ..) => {
                r.frame = Frame { width: width.max(16), height: height.max(16) };
            }
        }
        let changed = self.request != before;
        if changed {
            self.ask();
        }
        changed
    }

    /// The view a click asked to open and the selection to open it with, once.
    pub fn take_opening(&mut self) -> Option<(&'static str, Selection)> {
        self.opening.take()
    }

    /// Replaces the selection (the linked view's gestures).
    pub fn select(&mut self, selection: Selection) {
        if selection != self.request.selection {
            self.request.selection = selection;
            self.ask();
        }
    }

    /// The view explored.
    pub fn view(&self) -> &dyn View {
        &*self.view
    }

    /// The window point `at` in the picture's pixels (before pan and zoom).
    pub fn to_picture(&self, at: [f32; 2]) -> [f32; 2] {
        let t = self.request.transform;
        [(at[0] - t.offset[0]) / t.scale, (at[1] - t.offset[1]) / t.scale]
    }

    /// Whether a drag from the window point `at` brushes (a chart's axis) rather than pans.
    pub fn brushes_at(&self, at: [f32; 2]) -> bool {
        self.view.brushes_at(&self.dataset, self.request.frame, self.to_picture(at))
    }

    /// A brush from `from` to `to` (window points): the selection it makes, applied.
    pub fn brush(&mut self, from: [f32; 2], to: [f32; 2]) -> Option<Selection> {
        let r = &self.request;
        let next = self.view.brush(&self.dataset, &r.selection, r.frame, self.to_picture(from), self.to_picture(to))?;
        self.select(next);
        Some(next)
    }

    /// The numbers of the shown picture's area, where its view sums one up.
    pub fn area_summary(&self) -> Option<&exaviz_analysis::summary::Summary> {
        self.shown.as_ref()?.prepared.area_summary()
    }

    /// What is under the window point `at`, from the shown picture's prepared view: hovering
    /// never prepares anything.
    pub fn pick(&self, at: [f32; 2]) -> Option<Pick> {
        let shown = self.shown.as_ref()?;
        if shown.prepared.minimap().is_some_and(|m| m.contains(at)) {
            return Some(Pick::new("minimap", vec!["the whole graph; click: centre the view there".into()]));
        }
        let t = shown.request.transform;
        let q = [(at[0] - t.offset[0]) / t.scale, (at[1] - t.offset[1]) / t.scale];
        shown.prepared.pick(&self.dataset, q)
    }

    /// The shown picture moved and magnified to the current request, `(scale, offset)` per
    /// axis, within a clip rectangle (the timeline's plot; elsewhere the whole picture).
    pub fn preview(&self) -> Option<(Affine, &Rendered)> {
        let shown = self.shown.as_ref()?;
        let (a, b) = (shown.request, self.request);
        if let (Some(duration), Some(plot)) = (self.duration, self.time_plot()) {
            let window = |w: Option<(f64, f64)>| w.or(self.home).unwrap_or((0.0, duration));
            let (w0, w1) = (window(a.selection.window_s), window(b.selection.window_s));
            let width = plot[2] - plot[0];
            let sx = ((w0.1 - w0.0) / (w1.1 - w1.0)) as f32;
            let ox = plot[0] - plot[0] * sx + ((w0.0 - w1.0) / (w1.1 - w1.0)) as f32 * width;
            return Some((Affine { scale: [sx, 1.0], offset: [ox, 0.0], clip: Some(plot) }, &shown.image));
        }
        let (s0, s1) = (a.transform, b.transform);
        let k = s1.scale / s0.scale;
        let offset = [s1.offset[0] - k * s0.offset[0], s1.offset[1] - k * s0.offset[1]];
        Some((Affine { scale: [k, k], offset, clip: None }, &shown.image))
    }
}

/// Old picture pixel `p` goes to `p * scale + offset` inside `clip`; outside it, stays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    pub scale: [f32; 2],
    pub offset: [f32; 2],
    pub clip: Option<[f32; 4]>,
}

/// The frame's pixels (RGBA, `w x h`): `image` moved by `affine`, the background where nothing
/// of it lands.
pub fn frame_pixels(image: &Image, affine: Affine, (w, h): (u32, u32)) -> Vec<[u8; 4]> {
    let background = image.pixel(0, 0);
    let clip = affine.clip.unwrap_or([0.0, 0.0, w as f32, h as f32]);
    let mut out = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
            let inside = fx >= clip[0] && fx < clip[2] && fy >= clip[1] && fy < clip[3];
            let (sx, sy) = if inside {
                ((fx - affine.offset[0]) / affine.scale[0], (fy - affine.offset[1]) / affine.scale[1])
            } else {
                (fx, fy)
            };
            // Inside the clip, only pixels of the old clip move in (the rest is new ground).
            let from_clip = !inside || (sx >= clip[0] && sx < clip[2] && sy >= clip[1] && sy < clip[3]);
            let ok = from_clip && sx >= 0.0 && sy >= 0.0 && (sx as u32) < image.width && (sy as u32) < image.height;
            let mut p = if ok { image.pixel(sx as u32, sy as u32) } else { background };
            p[3] = 255;
            out.push(p);
        }
    }
    out
}

/// The frame of a presenter on the device that keeps `kept` (`w x h`, the window's picture
/// part), as [`frame_pixels`] makes it: the picture moved by `affine`, `background` where
/// nothing of it lands. Drawn by the GPU renderer into the window's surface, with the overlays
/// placed over it: nothing of the picture is read back.
pub fn frame_scene(kept: &DeviceImage, background: [f32; 3], affine: Affine, (w, h): (u32, u32)) -> Scene {
    let mut scene = Scene::new(w, h, background);
    let (pw, ph) = (kept.width as f32, kept.height as f32);
    let raster = |rect: [f32; 4]| Raster {
        rect,
        width: kept.width,
        height: kept.height,
        data: RasterData::Texture(kept.clone()),
        screen: true,
    };
    let frame = [0.0, 0.0, w as f32, h as f32];
    let clip = affine.clip.unwrap_or(frame);
    if affine.clip.is_some() {
        // Outside the clip the picture stays; inside, only what moves in from the old clip.
        scene.raster(raster([0.0, 0.0, pw, ph]));
        let c = background;
        scene.rect([clip[0], clip[1]], [clip[2], clip[3]], [c[0], c[1], c[2], 1.0], true);
    }
    let (sx, sy, ox, oy) = (affine.scale[0], affine.scale[1], affine.offset[0], affine.offset[1]);
    let moved = [clip[0] * sx + ox, clip[1] * sy + oy, clip[2] * sx + ox, clip[3] * sy + oy];
    let inside = [clip[0].max(moved[0]), clip[1].max(moved[1]), clip[2].min(moved[2]), clip[3].min(moved[3])];
    scene.raster(raster([ox, oy, ox + pw * sx, oy + ph * sy]));
    if let Some(layer) = scene.layers.last_mut() {
        layer.clip = Some(inside);
    }
    scene
}

/// The box of text lines [`overlay_text`] draws, as a scene of its size (at most `w x h`).
pub fn overlay_box(title: &str, lines: &[String], (w, h): (u32, u32)) -> Scene {
    const SIZE: f32 = 12.0;
    const LINE: f32 = 16.0;
    let mut probe = Scene::new(1, 1, [0.0; 3]);
    let widest = std::iter::once(title)
        .chain(lines.iter().map(String::as_str))
        .map(|l| probe.atlas.layout(l, [0.0, 0.0], SIZE, render::Anchor::Left).1)
        .fold(0.0f32, f32::max);
    let (bw, bh) = ((widest + 16.0).ceil() as u32, (LINE * (lines.len() + 1) as f32 + 10.0).ceil() as u32);
    let (bw, bh) = (bw.min(w), bh.min(h));
    let mut scene = Scene::new(bw, bh, [0.09, 0.10, 0.13]);
    // The box's own background, so that a box placed into a frame's scene covers what is there.
    scene.rect([0.0, 0.0], [bw as f32, bh as f32], [0.09, 0.10, 0.13, 1.0], true);
    let border = [0.45, 0.47, 0.52, 1.0];
    scene.rect([0.0, 0.0], [bw as f32, 1.0], border, true);
    scene.rect([0.0, bh as f32 - 1.0], [bw as f32, bh as f32], border, true);
    scene.rect([0.0, 0.0], [1.0, bh as f32], border, true);
    scene.rect([bw as f32 - 1.0, 0.0], [bw as f32, bh as f32], border, true);
    scene.text(title, [8.0, 5.0 + SIZE], SIZE, render::Anchor::Left, exaviz_views::TEXT);
    for (k, l) in lines.iter().enumerate() {
        let y = 5.0 + SIZE + LINE * (k + 1) as f32;
        scene.text(l, [8.0, y], SIZE, render::Anchor::Left, exaviz_views::TEXT_DIM);
    }
    scene
}

/// Where a box of `size` shown at `at` lands in a frame `w x h` (kept inside it).
pub fn box_origin(at: [f32; 2], size: (u32, u32), (w, h): (u32, u32)) -> [u32; 2] {
    [(at[0] as u32).min(w - size.0), (at[1] as u32).min(h - size.1)]
}

/// A box of text lines drawn over the frame at `at` (kept inside it): tooltips, the help and
/// status lines. Rendered by the CPU renderer on its own small region, which is cheap.
pub fn overlay_text(frame: &mut [[u8; 4]], (w, h): (u32, u32), at: [f32; 2], title: &str, lines: &[String]) {
    let scene = overlay_box(title, lines, (w, h));
    let (bw, bh) = (scene.width, scene.height);
    let [x0, y0] = box_origin(at, (bw, bh), (w, h));
    let image = render::cpu::render(&scene, render::View::default());
    for y in 0..bh {
        for x in 0..bw {
            frame[((y0 + y) * w + x0 + x) as usize] = image.pixel(x, y);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_views::ring::RingView;

    fn explorer() -> Explorer {
        let dataset = Arc::new(exaviz_datasets::open("gen:torus-sim?dims=4x4x4&steps=10&seed=3").unwrap());
        let view: Arc<dyn View> = Arc::new(RingView(Default::default()));
        let frame = Frame { width: 320, height: 240 };
        Explorer::new(dataset, view, Arc::new(Backend::Cpu), Selection::default(), frame, Box::new(|| {}))
    }

    /// A store's rows behind a slow link: they take `delay` to arrive.
    #[derive(Debug)]
    struct Far {
        rows: Arc<dyn exaviz_model::dataset::WindowRows>,
        delay: Duration,
    }

    impl exaviz_model::dataset::WindowRows for Far {
        fn estimate(&self, window: (u64, u64)) -> u64 {
            self.rows.estimate(window)
        }
        fn read(&self, window: (u64, u64)) -> Result<(exaviz_model::Messages, exaviz_model::Intervals), String> {
            std::thread::sleep(self.delay);
            self.rows.read(window)
        }
        fn remote(&self) -> bool {
            true
        }
    }

    /// Rows on a server: the worker shows the window from the pyramid at once, then from its
    /// rows; the explorer waits for the second, and the window's status says what is awaited.
    #[test]
    fn rows_from_a_server_show_the_pyramids_picture_first() {
        let dir = std::env::temp_dir().join(format!("exaviz-explore-far-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        exaviz_datasets::convert("gen:fd4?ranks=16&messages=20000", &dir.join("s.exaviz"), &|_, _| {}).unwrap();
        let mut d = exaviz_store::open_with(&dir.join("s.exaviz"), &|_, _| {}, 0).unwrap();
        let ooc = d.out_of_core.as_mut().unwrap();
        ooc.rows = Arc::new(Far { rows: ooc.rows.clone(), delay: Duration::from_secs(3) });
        let built = exaviz_views::Entry::find("timeline").unwrap().parse::<&str>(&[]).unwrap();
        let view: Arc<dyn View> = Arc::from(built.view);
        let frame = Frame { width: 480, height: 320 };
        let mut e =
            Explorer::new(Arc::new(d), view, Arc::new(Backend::Cpu), Selection::default(), frame, Box::new(|| {}));
        let start = Instant::now();
        while !e.receive() {
            std::thread::sleep(Duration::from_millis(5));
            assert!(start.elapsed() < Duration::from_secs(60));
        }
        // The rows take 3 s to arrive: the first picture is the pyramid's.
        assert!(e.shown.as_ref().unwrap().coarse);
        assert!(e.busy(), "the rows' picture is awaited");
        let done = e.wait(Duration::from_secs(60)).expect("the rows' picture");
        assert!(!done.coarse && start.elapsed() >= Duration::from_secs(3));
        assert!(!e.busy());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_computation_keeps_the_last_good_picture() {
        let mut e = explorer();
        let first = e.wait(Duration::from_secs(120)).expect("a first picture").generation;
        // Node 999 is not in the 64-node torus: the worker refuses it.
        e.select(Selection { node: Some(999), ..Default::default() });
        assert!(e.wait(Duration::from_secs(120)).is_none());
        assert!(e.error.as_deref().is_some_and(|m| m.contains("node 999")), "{:?}", e.error);
        assert_eq!(e.shown.as_ref().map(|p| p.generation), Some(first), "the last good picture stays");
        // The next good request clears the error.
        e.select(Selection { node: Some(5), ..Default::default() });
        assert!(e.wait(Duration::from_secs(120)).is_some());
        assert!(e.error.is_none());
    }

    /// The strategy view's minimap: the window outlines in it the part of the graph in view (all
    /// of it at first, less after a zoom), and a click in it centres the graph on that point.
    #[test]
    fn a_click_in_the_minimap_centres_the_graph_there() {
        let data = format!(
            "{}/../tests/data/jax-data-parallel/xla_dump/module_0034.jit_train_step.cpu_after_optimizations.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let dataset = Arc::new(exaviz_datasets::open(&data).unwrap());
        let built = exaviz_views::Entry::find("strategy").unwrap().parse::<&str>(&[]).unwrap();
        let frame = Frame { width: 800, height: 480 };
        let view: Arc<dyn View> = Arc::from(built.view);
        let mut e = Explorer::new(dataset, view, Arc::new(Backend::Cpu), Selection::default(), frame, Box::new(|| {}));
        let m = e.wait(Duration::from_secs(120)).expect("a first picture").prepared.minimap().expect("a minimap");
        let whole = m.viewport(e.request.transform, frame);
        assert!(whole[2] - whole[0] > (m.area[2] - m.area[0]) * 0.95, "all of the graph in view: {whole:?} {m:?}");
        assert!(e.gesture(Gesture::Wheel { at: [400.0, 240.0], steps: 8.0 }));
        let zoomed = m.viewport(e.request.transform, frame);
        assert!(zoomed[2] - zoomed[0] < (whole[2] - whole[0]) * 0.5, "{zoomed:?}");
        assert_eq!(e.pick([m.area[0] + 5.0, m.area[1] + 5.0]).map(|p| p.title), Some("minimap".to_string()));
        let at = [m.area[0] + (m.area[2] - m.area[0]) * 0.8, (m.area[1] + m.area[3]) / 2.0];
        assert!(e.gesture(Gesture::Click { at }));
        let v = m.viewport(e.request.transform, frame);
        assert!(((v[0] + v[2]) / 2.0 - at[0]).abs() < 1.0 && ((v[1] + v[3]) / 2.0 - at[1]).abs() < 1.0, "{v:?} {at:?}");
        let p = e.wait(Duration::from_secs(120)).expect("the moved picture");
        assert!(!p.prepared_again, "a move only draws again");
        // The outline is drawn, in white.
        let side = p.image.image().unwrap().pixel(v[0] as u32, ((v[1] + v[3]) / 2.0) as u32);
        assert!(side[..3].iter().all(|&c| c > 200), "the outline's left side is white: {side:?}");
    }

    /// A click on a cell of the steps view selects nothing there: it asks, once, for the
    /// timeline opened on that step.
    #[test]
    fn a_click_on_a_step_asks_for_the_timeline() {
        let dataset = Arc::new(exaviz_datasets::open("gen:fd4?ranks=64&messages=5000&slow_rank=7").unwrap());
        let built = exaviz_views::Entry::find("steps").unwrap().parse::<&str>(&[]).unwrap();
        let view: Arc<dyn View> = Arc::from(built.view);
        let frame = Frame { width: 800, height: 500 };
        let mut e = Explorer::new(dataset, view, Arc::new(Backend::Cpu), Selection::default(), frame, Box::new(|| {}));
        e.wait(Duration::from_secs(120)).expect("a first picture");
        let at = [400.0, 250.0];
        assert!(e.pick(at).is_some_and(|p| p.opens == Some("timeline")), "{:?}", e.pick(at));
        assert!(!e.gesture(Gesture::Click { at }), "nothing changes in the steps view");
        assert_eq!(e.request.selection, Selection::default());
        let (name, selection) = e.take_opening().expect("the timeline asked for");
        assert_eq!(name, "timeline");
        assert!(selection.window_s.is_some() && selection.opened.is_some(), "{selection:?}");
        assert!(e.take_opening().is_none(), "asked once");
    }

    #[test]
    fn pan_and_zoom_only_draw_again_and_the_preview_follows_the_gesture() {
        let mut e = explorer();
        e.wait(Duration::from_secs(120)).expect("a first picture");
        assert!(e.gesture(Gesture::Wheel { at: [100.0, 50.0], steps: 2.0 }));
        // Before the worker answers, the preview magnifies the shown picture about the pointer.
        let (affine, _) = e.preview().expect("a preview");
        let k = 1.15f32.powi(2);
        assert!((affine.scale[0] - k).abs() < 1e-5);
        assert!((100.0 * affine.scale[0] + affine.offset[0] - 100.0).abs() < 1e-3, "the pointer stays put");
        let p = e.wait(Duration::from_secs(120)).expect("the zoomed picture");
        assert!(!p.prepared_again, "a zoom only draws again");
        assert!(e.gesture(Gesture::Pan { by: [10.0, 0.0] }));
        assert!(!e.wait(Duration::from_secs(120)).expect("the panned picture").prepared_again);
        // A click on nothing changes nothing; a new node filter prepares again.
        assert!(!e.gesture(Gesture::Click { at: [2.0, 2.0] }));
        e.select(Selection { node: Some(1), ..Default::default() });
        assert!(e.wait(Duration::from_secs(120)).expect("the filtered picture").prepared_again);
    }
}
