//! The viewer's side panel (egui): a view switcher, the dataset in numbers, the view's options,
//! the current selection, the status of the worker and the buttons of the keys. Drawn by
//! egui-wgpu on the GPU presenter and by [`SoftPainter`], its CPU mirror, on the softbuffer
//! presenter: the same triangles, the same texture filtering (egui-wgpu's predictable mode:
//! bilinear from four texels at their centres) and the same blending (premultiplied alpha in
//! gamma space), so both presenters show the same panel.

use std::collections::HashMap;

use egui::epaint::textures::TexturesDelta;
use egui::epaint::textures::{TextureFilter, TextureWrapMode};
use egui::epaint::{ClippedPrimitive, ImageData, Primitive, TextureId};

/// The panel's width in points.
pub const WIDTH: f32 = 250.0;

/// A view the panel offers.
pub struct ViewEntry {
    pub name: String,
    pub help: String,
    /// Why the dataset cannot show this view, if it cannot.
    pub unavailable: Option<String>,
}

/// One option of the current view: its flag, its values and the chosen one.
pub struct Choice {
    pub flag: String,
    pub help: String,
    /// (value, help) pairs, as `--help` lists them.
    pub values: Vec<(String, String)>,
    pub current: usize,
}

/// What the panel shows.
pub struct PanelInfo<'a> {
    pub views: &'a [ViewEntry],
    pub current: &'a str,
    pub summary: &'a [String],
    pub choices: &'a [Choice],
    pub selection: String,
    /// The selected area's statistics, a line each (none without an area).
    pub statistics: Vec<String>,
    pub status: Option<String>,
    pub help: bool,
    /// The search box's text, where the view searches region names.
    pub search: Option<&'a mut String>,
}

/// What the user asked for in the panel.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    SwitchView(String),
    /// Set the option with this flag to the value at this index.
    SetOption(String, usize),
    ClearSelection,
    Reset,
    Save,
    ToggleHelp,
    Hide,
    /// Search region names for this text (empty clears the search).
    Search(String),
    /// Step to the next (`true`) or previous match of the search.
    Step(bool),
}

/// Where each button is, in physical pixels: `view NAME`, `option --FLAG` (a list) and, while
/// a list is open, `value --FLAG VALUE`. Logged for tests that click them with real X input
/// (`EXAVIZ_PANEL_LOG=1`).
pub type Layout = Vec<(String, [f32; 4])>;

/// The panel's widgets. Returns what was asked for and where the view buttons are.
pub fn ui(ctx: &egui::Context, info: &mut PanelInfo, pixels_per_point: f32) -> (Vec<Action>, Layout) {
    let mut actions = Vec::new();
    let mut layout = Vec::new();
    let place = |r: egui::Rect| [r.min.x, r.min.y, r.max.x, r.max.y].map(|c| c * pixels_per_point);
    ctx.root_ui(|root| {
        egui::Panel::right("exaviz-panel").resizable(false).exact_size(WIDTH).show(root, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                ui.add_space(4.0);
                ui.horizontal(|ui| {
                    ui.heading("exaviz");
                    if ui.small_button("hide (p)").clicked() {
                        actions.push(Action::Hide);
                    }
                });
                ui.separator();
                ui.strong("View");
                ui.horizontal_wrapped(|ui| {
                    for v in info.views {
                        let selected = v.name == info.current;
                        let r = ui.add_enabled(v.unavailable.is_none(), egui::Button::selectable(selected, &v.name));
                        let r = match &v.unavailable {
                            Some(why) => r.on_disabled_hover_text(why),
                            None => r.on_hover_text(&v.help),
                        };
                        let b = r.rect;
                        layout.push((format!("view {}", v.name), place(b)));
                        if r.clicked() && !selected {
                            actions.push(Action::SwitchView(v.name.clone()));
                        }
                    }
                });
                ui.separator();
                ui.strong("Dataset");
                for line in info.summary {
                    ui.label(line);
                }
                if let Some(text) = info.search.as_deref_mut() {
                    search_box(ui, text, &mut actions, &mut layout, &place);
                }
                if !info.choices.is_empty() {
                    ui.separator();
                    ui.strong("Options");
                    for c in info.choices {
                        let shown = c.values.get(c.current).map_or("", |v| v.0.as_str());
                        ui.label(c.flag.as_str()).on_hover_text(&c.help);
                        let combo =
                            egui::ComboBox::from_id_salt(c.flag.as_str()).selected_text(shown).show_ui(ui, |ui| {
                                for (k, (value, help)) in c.values.iter().enumerate() {
                                    let r = ui.selectable_label(k == c.current, value);
                                    let r = if help.is_empty() { r } else { r.on_hover_text(help) };
                                    let b = r.rect;
                                    layout.push((format!("value {} {value}", c.flag), place(b)));
                                    if r.clicked() && k != c.current {
                                        actions.push(Action::SetOption(c.flag.clone(), k));
                                    }
                                }
                            });
                        let b = combo.response.rect;
                        layout.push((format!("option {}", c.flag), place(b)));
                    }
                }
                ui.separator();
                ui.strong("Selection");
                ui.label(&info.selection);
                if !info.statistics.is_empty() {
                    ui.strong("Area statistics");
                    for line in &info.statistics {
                        ui.label(egui::RichText::new(line).monospace().size(10.0));
                    }
                }
                ui.horizontal(|ui| {
                    if ui.button("clear (c)").clicked() {
                        actions.push(Action::ClearSelection);
                    }
                    if ui.button("reset view (0)").clicked() {
                        actions.push(Action::Reset);
                    }
                });
                ui.separator();
                ui.horizontal(|ui| {
                    if ui.button("save PNG (ctrl+s)").clicked() {
                        actions.push(Action::Save);
                    }
                    if ui.selectable_label(info.help, "help (h)").clicked() {
                        actions.push(Action::ToggleHelp);
                    }
                });
                if let Some(status) = &info.status {
                    ui.separator();
                    ui.label(status);
                }
            });
        });
    });
    (actions, layout)
}

/// The search box (Enter searches) and its previous and next buttons.
fn search_box(
    ui: &mut egui::Ui,
    text: &mut String,
    actions: &mut Vec<Action>,
    layout: &mut Layout,
    place: &dyn Fn(egui::Rect) -> [f32; 4],
) {
    ui.separator();
    ui.strong("Search");
    let r = ui.add(egui::TextEdit::singleline(text).hint_text("region name (/)").desired_width(f32::INFINITY));
    layout.push(("search box".into(), place(r.rect)));
    if r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
        actions.push(Action::Search(text.clone()));
    }
    ui.horizontal(|ui| {
        for (label, name, forward) in [("previous (N)", "search previous", false), ("next (n)", "search next", true)] {
            let b = ui.add_enabled(!text.trim().is_empty(), egui::Button::new(label));
            layout.push((name.into(), place(b.rect)));
            if b.clicked() {
                actions.push(Action::Step(forward));
            }
        }
    });
}

/// egui-wgpu's renderer in its predictable mode (the mode [`SoftPainter`] mirrors).
pub struct GpuPainter {
    renderer: egui_wgpu::Renderer,
}

impl GpuPainter {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        Self { renderer: egui_wgpu::Renderer::new(device, format, egui_wgpu::RendererOptions::PREDICTABLE) }
    }

    /// Paints egui's triangles over `target` (its contents kept) and submits the work.
    pub fn paint(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        target: &wgpu::TextureView,
        screen: &egui_wgpu::ScreenDescriptor,
        primitives: &[ClippedPrimitive],
        textures: &TexturesDelta,
    ) {
        for (id, deltas) in &textures.set {
            for delta in deltas {
                self.renderer.update_texture(device, queue, *id, delta);
            }
        }
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("exaviz.panel") });
        let extra = self.renderer.update_buffers(device, queue, &mut enc, primitives, screen);
        {
            let pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("exaviz.panel"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    resolve_target: None,
                    ops: wgpu::Operations { load: wgpu::LoadOp::Load, store: wgpu::StoreOp::Store },
                    depth_slice: None,
                })],
                ..Default::default()
            });
            self.renderer.render(&mut pass.forget_lifetime(), primitives, screen);
        }
        queue.submit(extra.into_iter().chain([enc.finish()]));
        for id in &textures.free {
            self.renderer.free_texture(id);
        }
    }
}

/// The CPU mirror of egui-wgpu's renderer (predictable mode, no dithering): textures kept
/// as egui sends them, triangles filled where pixel centres fall inside them.
#[derive(Default)]
pub struct SoftPainter {
    textures: HashMap<TextureId, SoftTexture>,
}

struct SoftTexture {
    size: [usize; 2],
    pixels: Vec<[u8; 4]>,
    nearest: bool,
    wrap: TextureWrapMode,
}

impl SoftPainter {
    /// Takes the new and changed textures of a frame (call before [`Self::paint`]).
    pub fn set_textures(&mut self, delta: &TexturesDelta) {
        for (id, d) in delta.set.iter().flat_map(|(id, ds)| ds.iter().map(move |d| (id, d))) {
            let ImageData::Color(image) = &d.image;
            let patch: Vec<[u8; 4]> = image.pixels.iter().map(|c| c.to_array()).collect();
            let [pw, ph] = image.size;
            match d.pos {
                None => {
                    self.textures.insert(
                        *id,
                        SoftTexture {
                            size: [pw, ph],
                            pixels: patch,
                            nearest: d.options.magnification == TextureFilter::Nearest,
                            wrap: d.options.wrap_mode,
                        },
                    );
                }
                Some([x0, y0]) => {
                    let Some(t) = self.textures.get_mut(id) else { continue };
                    for y in 0..ph.min(t.size[1].saturating_sub(y0)) {
                        for x in 0..pw.min(t.size[0].saturating_sub(x0)) {
                            t.pixels[(y0 + y) * t.size[0] + x0 + x] = patch[y * pw + x];
                        }
                    }
                }
            }
        }
    }

    /// Forgets the textures egui freed (call after [`Self::paint`]).
    pub fn free_textures(&mut self, delta: &TexturesDelta) {
        for id in &delta.free {
            self.textures.remove(id);
        }
    }

    /// Paints egui's triangles over `target` (`width x height`, RGBA).
    pub fn paint(&self, primitives: &[ClippedPrimitive], target: &mut [[u8; 4]], width: u32, pixels_per_point: f32) {
        let height = u32::try_from(target.len()).unwrap_or(0) / width.max(1);
        for p in primitives {
            let Primitive::Mesh(mesh) = &p.primitive else { continue };
            let Some(tex) = self.textures.get(&mesh.texture_id) else { continue };
            // The scissor rectangle as egui-wgpu rounds it.
            let c = p.clip_rect;
            let x0 = ((c.min.x * pixels_per_point).round().max(0.0) as u32).min(width);
            let y0 = ((c.min.y * pixels_per_point).round().max(0.0) as u32).min(height);
            let x1 = ((c.max.x * pixels_per_point).round().max(0.0) as u32).clamp(x0, width);
            let y1 = ((c.max.y * pixels_per_point).round().max(0.0) as u32).clamp(y0, height);
            if x0 == x1 || y0 == y1 {
                continue;
            }
            for t in mesh.indices.chunks_exact(3) {
                let v = [t[0], t[1], t[2]].map(|i| mesh.vertices.get(i as usize));
                let [Some(a), Some(b), Some(c)] = v else { continue };
                let corner = |v: &egui::epaint::Vertex| [v.pos.x * pixels_per_point, v.pos.y * pixels_per_point];
                let tri = Triangle {
                    p: [corner(a), corner(b), corner(c)],
                    uv: [[a.uv.x, a.uv.y], [b.uv.x, b.uv.y], [c.uv.x, c.uv.y]],
                    colour: [a.color, b.color, c.color].map(|c| c.to_array().map(|v| f32::from(v) / 255.0)),
                };
                tri.fill(tex, target, width, [x0, y0, x1, y1]);
            }
        }
    }
}

struct Triangle {
    /// Corners in pixels.
    p: [[f32; 2]; 3],
    uv: [[f32; 2]; 3],
    /// Premultiplied colours in gamma space, 0–1.
    colour: [[f32; 4]; 3],
}

impl Triangle {
    fn fill(&self, tex: &SoftTexture, target: &mut [[u8; 4]], width: u32, clip: [u32; 4]) {
        let [a, b, c] = self.p;
        let area = edge(a, b, c);
        if area == 0.0 || !area.is_finite() {
            return;
        }
        let lo_x = a[0].min(b[0]).min(c[0]).floor().max(clip[0] as f32) as u32;
        let hi_x = (a[0].max(b[0]).max(c[0]).ceil().max(0.0) as u32).min(clip[2]);
        let lo_y = a[1].min(b[1]).min(c[1]).floor().max(clip[1] as f32) as u32;
        let hi_y = (a[1].max(b[1]).max(c[1]).ceil().max(0.0) as u32).min(clip[3]);
        // Both windings: egui's tessellator emits either.
        let sign = area.signum();
        let owns = |e: f32, from: [f32; 2], to: [f32; 2]| {
            // Top-left rule: a centre exactly on an edge belongs to one of the two triangles.
            let (dx, dy) = ((to[0] - from[0]) * sign, (to[1] - from[1]) * sign);
            e > 0.0 || (e == 0.0 && ((dy == 0.0 && dx < 0.0) || dy > 0.0))
        };
        for y in lo_y..hi_y {
            for x in lo_x..hi_x {
                let q = [x as f32 + 0.5, y as f32 + 0.5];
                let (wa, wb, wc) = (edge(b, c, q) * sign, edge(c, a, q) * sign, edge(a, b, q) * sign);
                if !(owns(wa, b, c) && owns(wb, c, a) && owns(wc, a, b)) {
                    continue;
                }
                let s = area.abs();
                let (la, lb, lc) = (wa / s, wb / s, wc / s);
                let mix = |k: usize, v: &[[f32; 2]; 3]| la * v[0][k] + lb * v[1][k] + lc * v[2][k];
                let uv = [mix(0, &self.uv), mix(1, &self.uv)];
                let texel = tex.sample(uv);
                let mut src = [0.0f32; 4];
                for (k, s) in src.iter_mut().enumerate() {
                    let colour = la * self.colour[0][k] + lb * self.colour[1][k] + lc * self.colour[2][k];
                    *s = colour * texel[k];
                }
                let dst = &mut target[(y * width + x) as usize];
                for k in 0..3 {
                    let d = f32::from(dst[k]) / 255.0;
                    dst[k] = ((src[k] + d * (1.0 - src[3])).clamp(0.0, 1.0) * 255.0).round() as u8;
                }
                // egui-wgpu's alpha: src * (1 - dst alpha) + dst.
                let d = f32::from(dst[3]) / 255.0;
                dst[3] = ((src[3] * (1.0 - d) + d).clamp(0.0, 1.0) * 255.0).round() as u8;
            }
        }
    }
}

/// Twice the signed area of (a, b, q).
fn edge(a: [f32; 2], b: [f32; 2], q: [f32; 2]) -> f32 {
    (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0])
}

impl SoftTexture {
    /// egui.wgsl's `sample_texture` in predictable mode: nearest, or bilinear from the four
    /// texels around `uv` at their centres, wrapped per the texture's mode.
    fn sample(&self, uv: [f32; 2]) -> [f32; 4] {
        let [w, h] = self.size.map(|s| s as i64);
        if w == 0 || h == 0 {
            return [0.0; 4];
        }
        let load = |x: i64, y: i64| {
            let (x, y) = (self.wrap(x, w), self.wrap(y, h));
            self.pixels[(y * w + x) as usize].map(|v| f32::from(v) / 255.0)
        };
        if self.nearest {
            return load((uv[0] * w as f32).floor() as i64, (uv[1] * h as f32).floor() as i64);
        }
        let (px, py) = (uv[0] * w as f32 - 0.5, uv[1] * h as f32 - 0.5);
        let (fx, fy) = (px - px.floor(), py - py.floor());
        let (x, y) = (px.floor() as i64, py.floor() as i64);
        let (tl, tr, bl, br) = (load(x, y), load(x + 1, y), load(x, y + 1), load(x + 1, y + 1));
        let mut out = [0.0; 4];
        for k in 0..4 {
            let top = tl[k] + (tr[k] - tl[k]) * fx;
            let bottom = bl[k] + (br[k] - bl[k]) * fx;
            out[k] = top + (bottom - top) * fy;
        }
        out
    }

    fn wrap(&self, c: i64, size: i64) -> i64 {
        match self.wrap {
            TextureWrapMode::Repeat => c.rem_euclid(size),
            TextureWrapMode::MirroredRepeat => {
                let phase = c.rem_euclid(2 * size);
                phase.min(2 * size - 1 - phase)
            }
            TextureWrapMode::ClampToEdge => c.clamp(0, size - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info_views() -> Vec<ViewEntry> {
        ["timeline", "matrix", "ring"]
            .iter()
            .map(|n| ViewEntry {
                name: (*n).to_string(),
                help: format!("the {n} view"),
                unavailable: (*n == "ring").then(|| "no topology".to_string()),
            })
            .collect()
    }

    /// One frame of the panel at `size` (run twice: egui sizes its widgets on the first pass).
    pub(crate) fn panel_frame(
        size: (u32, u32),
        click: Option<[f32; 2]>,
    ) -> (Vec<ClippedPrimitive>, TexturesDelta, Vec<Action>, Layout) {
        panel_frame_searching(size, click, None)
    }

    /// [`panel_frame`] of a view that searches, its box holding `search`.
    fn panel_frame_searching(
        size: (u32, u32),
        click: Option<[f32; 2]>,
        search: Option<&str>,
    ) -> (Vec<ClippedPrimitive>, TexturesDelta, Vec<Action>, Layout) {
        let mut text = search.map(str::to_string);
        let ctx = egui::Context::default();
        let views = info_views();
        let summary = vec!["ranks: 16".to_string(), "messages: 2,048".to_string()];
        let choices = vec![Choice {
            flag: "--value".to_string(),
            help: "what a cell shows".into(),
            values: vec![("messages".into(), String::new()), ("bytes".into(), String::new())],
            current: 0,
        }];
        let mut info = PanelInfo {
            views: &views,
            current: "matrix",
            summary: &summary,
            choices: &choices,
            selection: "pair 2 -> 5".into(),
            statistics: Vec::new(),
            status: Some("computing…".into()),
            help: false,
            search: text.as_mut(),
        };
        let screen = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(size.0 as f32, size.1 as f32));
        let mut textures = TexturesDelta::default();
        let mut events = Vec::new();
        let mut last = (Vec::new(), Vec::new());
        let mut output = None;
        for pass in 0..4 {
            if pass == 2
                && let Some(p) = click
            {
                let pos = egui::pos2(p[0], p[1]);
                events = vec![
                    egui::Event::PointerMoved(pos),
                    egui::Event::PointerButton {
                        pos,
                        button: egui::PointerButton::Primary,
                        pressed: true,
                        modifiers: egui::Modifiers::NONE,
                    },
                ];
            } else if pass == 3 && click.is_some() {
                let pos = egui::pos2(click.unwrap_or_default()[0], click.unwrap_or_default()[1]);
                events = vec![egui::Event::PointerButton {
                    pos,
                    button: egui::PointerButton::Primary,
                    pressed: false,
                    modifiers: egui::Modifiers::NONE,
                }];
            }
            let input =
                egui::RawInput { screen_rect: Some(screen), events: std::mem::take(&mut events), ..Default::default() };
            let mut out = ctx.run_pass(input, |ctx| {
                let (a, l) = ui(ctx, &mut info, 1.0);
                last.0.extend(a);
                last.1 = l;
            });
            textures.append(std::mem::take(&mut out.textures_delta));
            output = Some(out);
        }
        let out = output.expect("four passes ran");
        let prims = ctx.tessellate(out.shapes, out.pixels_per_point);
        (prims, textures, last.0, last.1)
    }

    #[test]
    fn the_panel_lists_the_views_and_a_click_switches() {
        let (_, mut t, actions, layout) = panel_frame((640, 480), None);
        t.clear();
        assert!(actions.is_empty(), "nothing clicked: {actions:?}");
        let names: Vec<&str> = layout.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(names, ["view timeline", "view matrix", "view ring", "option --value"]);
        let r = layout[0].1;
        assert!(r[0] >= 640.0 - WIDTH - 1.0 && r[2] <= 640.0, "the buttons are in the right-hand panel: {r:?}");
        let centre = |r: [f32; 4]| [(r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0];
        let (_, mut t, actions, _) = panel_frame((640, 480), Some(centre(layout[0].1)));
        t.clear();
        assert_eq!(actions, [Action::SwitchView("timeline".into())]);
        // The current view and a view the dataset cannot show do nothing.
        let (_, mut t, actions, _) = panel_frame((640, 480), Some(centre(layout[1].1)));
        t.clear();
        assert!(actions.is_empty(), "{actions:?}");
        let (_, mut t, actions, _) = panel_frame((640, 480), Some(centre(layout[2].1)));
        t.clear();
        assert!(actions.is_empty(), "{actions:?}");
    }

    /// A view that searches gets a search box with previous and next buttons; the buttons step
    /// through the matches once the box holds text.
    #[test]
    fn the_search_box_steps_through_matches() {
        let (_, mut t, _, layout) = panel_frame_searching((640, 600), None, Some("MPI_Recv"));
        t.clear();
        let place = |name: &str| layout.iter().find(|l| l.0 == name).map(|l| l.1).expect(name);
        let centre = |r: [f32; 4]| [(r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0];
        assert!(place("search box")[2] <= 640.0 && place("search box")[0] >= 640.0 - WIDTH - 1.0);
        for (button, forward) in [("search next", true), ("search previous", false)] {
            let (_, mut t, actions, _) =
                panel_frame_searching((640, 600), Some(centre(place(button))), Some("MPI_Recv"));
            t.clear();
            assert_eq!(actions, [Action::Step(forward)], "{button}");
        }
        // An empty box: the buttons do nothing.
        let (_, mut t, actions, _) = panel_frame_searching((640, 600), Some(centre(place("search next"))), Some(""));
        t.clear();
        assert!(actions.is_empty(), "{actions:?}");
        // A view that does not search: no box.
        let (_, mut t, _, layout) = panel_frame((640, 600), None);
        t.clear();
        assert!(!layout.iter().any(|l| l.0.starts_with("search")), "{layout:?}");
    }

    /// The panel through egui-wgpu on lavapipe and through the CPU mirror: the same picture,
    /// channels within 2 but for at most 0.5% of pixels (where triangle edges fall exactly on
    /// pixel centres, rasterisers may differ). Fails without an adapter.
    #[test]
    fn the_panel_agrees_between_backends() {
        let (w, h) = (480u32, 360u32);
        let (prims, mut textures, _, _) = panel_frame((w, h), None);
        let background = [40u8, 90, 200, 255];
        let mut cpu = vec![background; (w * h) as usize];
        let mut soft = SoftPainter::default();
        soft.set_textures(&textures);
        soft.paint(&prims, &mut cpu, w, 1.0);

        let ctx = exaviz_compute::GpuContext::new().expect("a GPU adapter (lavapipe on machines without a GPU)");
        let (device, queue) = (&ctx.device, &ctx.queue);
        let format = wgpu::TextureFormat::Rgba8Unorm;
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size: wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let layout = wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 4), rows_per_image: Some(h) };
        let extent = wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 };
        let filled = vec![background; (w * h) as usize];
        queue.write_texture(texture.as_image_copy(), filled.as_flattened(), layout, extent);
        let view = texture.create_view(&Default::default());
        let mut painter = GpuPainter::new(device, format);
        let screen = egui_wgpu::ScreenDescriptor { size_in_pixels: [w, h], pixels_per_point: 1.0 };
        painter.paint(device, queue, &view, &screen, &prims, &textures);
        textures.clear();
        let row = (w * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: u64::from(row * h),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = device.create_command_encoder(&Default::default());
        let to = wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(row), rows_per_image: Some(h) },
        };
        enc.copy_texture_to_buffer(texture.as_image_copy(), to, extent);
        queue.submit([enc.finish()]);
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        device.poll(wgpu::PollType::wait_indefinitely()).expect("the GPU finishes");
        rx.recv().expect("mapped").expect("mapped");
        let bytes = slice.get_mapped_range().expect("mapped").to_vec();
        let gpu: Vec<[u8; 4]> = (0..h as usize)
            .flat_map(|y| {
                bytes[y * row as usize..][..w as usize * 4]
                    .chunks_exact(4)
                    .map(|c| [c[0], c[1], c[2], c[3]])
                    .collect::<Vec<_>>()
            })
            .collect();
        let changed = gpu.iter().filter(|p| **p != background).count();
        assert!(changed > 20_000, "the GPU drew the panel ({changed} pixels)");
        let worst = |a: &[u8; 4], b: &[u8; 4]| (0..3).map(|k| a[k].abs_diff(b[k])).max().unwrap_or(0);
        let off = gpu.iter().zip(&cpu).filter(|(g, c)| worst(g, c) > 2).count();
        let max = gpu.iter().zip(&cpu).map(|(g, c)| worst(g, c)).max().unwrap_or(0);
        assert!(
            off * 200 <= gpu.len(),
            "{off} of {} pixels differ by more than 2 (largest difference {max})",
            gpu.len()
        );
    }

    #[test]
    fn the_soft_painter_draws_the_panel_and_only_the_panel() {
        let (w, h) = (640u32, 480u32);
        let (prims, mut textures, _, _) = panel_frame((w, h), None);
        let mut painter = SoftPainter::default();
        painter.set_textures(&textures);
        textures.clear();
        let background = [255, 0, 255, 255];
        let mut target = vec![background; (w * h) as usize];
        painter.paint(&prims, &mut target, w, 1.0);
        let left = (w as f32 - WIDTH - 2.0) as u32;
        for y in 0..h {
            for x in 0..left {
                assert_eq!(target[(y * w + x) as usize], background, "the picture area stays untouched at {x},{y}");
            }
        }
        let panel: Vec<[u8; 4]> =
            (0..h).flat_map(|y| (w - 200..w).map(move |x| (x, y))).map(|(x, y)| target[(y * w + x) as usize]).collect();
        let covered = panel.iter().filter(|p| **p != background).count();
        assert!(covered * 10 > panel.len() * 9, "the panel is filled: {covered} of {}", panel.len());
        // Text: pixels much brighter than the panel's fill.
        let fill = target[((h - 2) * w + w - 2) as usize];
        let bright = panel.iter().filter(|p| p[0] as i32 > fill[0] as i32 + 80).count();
        assert!(bright > 200, "labels are drawn ({bright} bright pixels)");
    }
}
