//! Text for labels and legends: glyphs rasterised with `ab_glyph` from the embedded Hack font
//! (shipped by `epaint_default_fonts`, MIT/Bitstream Vera licence) into an R8 atlas, drawn as
//! screen-space glyph instances at whole-pixel positions (so the GPU and the CPU renderer look
//! up identical texels).

use std::collections::HashMap;

use ab_glyph::{Font, FontRef, ScaleFont};

/// Horizontal placement of a string relative to its anchor point (the baseline's y).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Left,
    Centre,
    Right,
}

pub const ATLAS_SIZE: u32 = 1024;

/// A placed glyph: screen rectangle and atlas texel of its top-left corner.
#[derive(Clone, Copy, Debug)]
pub struct PlacedGlyph {
    pub min: [f32; 2],
    pub max: [f32; 2],
    pub uv: [f32; 2],
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    x: u32,
    y: u32,
    w: u32,
    h: u32,
    /// Offset of the bitmap's top-left from the pen position on the baseline.
    dx: i32,
    dy: i32,
}

/// Where each glyph of one atlas is in another: texel of its top-left to texel.
pub type GlyphMap = HashMap<(u32, u32), (u32, u32)>;

/// Glyph bitmaps packed in shelves of an `ATLAS_SIZE`² R8 texture.
#[derive(Clone)]
pub struct TextAtlas {
    pub pixels: Vec<u8>,
    /// A stamp unique in the process, taken again whenever a glyph is added: a renderer that
    /// kept an atlas with this stamp holds these very pixels (a clone shares them until either
    /// adds a glyph).
    pub generation: u64,
    slots: HashMap<(char, u32), Option<Slot>>,
    shelf_x: u32,
    shelf_y: u32,
    shelf_h: u32,
    /// The texels glyphs were added to since [`TextAtlas::take_dirty`] last took them
    /// (`[x0, y0, x1, y1]`, ends exclusive).
    dirty: Option<[u32; 4]>,
}

impl std::fmt::Debug for TextAtlas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TextAtlas({} glyphs)", self.slots.len())
    }
}

impl Default for TextAtlas {
    fn default() -> Self {
        Self::new()
    }
}

/// A number no atlas of this process had before.
fn stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn font() -> FontRef<'static> {
    FontRef::try_from_slice(epaint_default_fonts::HACK_REGULAR).expect("embedded font parses")
}

impl TextAtlas {
    pub fn new() -> Self {
        Self {
            pixels: vec![0; (ATLAS_SIZE * ATLAS_SIZE) as usize],
            generation: stamp(),
            slots: HashMap::new(),
            shelf_x: 0,
            shelf_y: 0,
            shelf_h: 0,
            dirty: None,
        }
    }

    /// The rectangle of texels changed since the last call (`None`: none), forgotten.
    pub fn take_dirty(&mut self) -> Option<[u32; 4]> {
        self.dirty.take()
    }

    fn slot(&mut self, font: &FontRef<'_>, c: char, size: u32) -> Option<Slot> {
        if let Some(s) = self.slots.get(&(c, size)) {
            return *s;
        }
        let glyph = font.glyph_id(c).with_scale_and_position(size as f32, ab_glyph::point(0.0, 0.0));
        let slot = font.outline_glyph(glyph).and_then(|outline| {
            let bounds = outline.px_bounds();
            let (w, h) = (bounds.width().ceil() as u32, bounds.height().ceil() as u32);
            if self.shelf_x + w + 1 > ATLAS_SIZE {
                self.shelf_x = 0;
                self.shelf_y += self.shelf_h + 1;
                self.shelf_h = 0;
            }
            if self.shelf_y + h + 1 > ATLAS_SIZE {
                return None; // atlas full: the glyph is dropped rather than corrupting others
            }
            let (x, y) = (self.shelf_x, self.shelf_y);
            outline.draw(|gx, gy, cov| {
                if gx < w && gy < h {
                    let i = ((y + gy) * ATLAS_SIZE + x + gx) as usize;
                    self.pixels[i] = (cov.clamp(0.0, 1.0) * 255.0).round() as u8;
                }
            });
            self.shelf_x += w + 1;
            self.shelf_h = self.shelf_h.max(h);
            let [a, b, c, d] = self.dirty.unwrap_or([x, y, x + w, y + h]);
            self.dirty = Some([a.min(x), b.min(y), c.max(x + w), d.max(y + h)]);
            Some(Slot { x, y, w, h, dx: bounds.min.x.floor() as i32, dy: bounds.min.y.floor() as i32 })
        });
        self.slots.insert((c, size), slot);
        self.generation = stamp();
        slot
    }

    /// How many glyphs the atlas holds.
    pub fn glyphs(&self) -> usize {
        self.slots.values().filter(|s| s.is_some()).count()
    }

    /// For every glyph of `other`, its place in this atlas (rasterised here if new): a map from
    /// `other`'s atlas texel of a glyph's top-left to this atlas' texel.
    pub fn adopt(&mut self, other: &TextAtlas) -> GlyphMap {
        let font = font();
        let mut map = HashMap::new();
        for (&(c, size), theirs) in &other.slots {
            if let (Some(t), Some(mine)) = (theirs, self.slot(&font, c, size)) {
                map.insert((t.x, t.y), (mine.x, mine.y));
            }
        }
        map
    }

    /// Width in pixels of `text` at `size_px`.
    pub fn measure(text: &str, size_px: f32) -> f32 {
        let font = font();
        let scaled = font.as_scaled(size_px.round());
        text.chars().map(|c| scaled.h_advance(font.glyph_id(c)).round()).sum()
    }

    /// Places `text` with its baseline at `at.y`, anchored horizontally at `at.x`; returns the
    /// glyphs to draw and the text's width.
    pub fn layout(&mut self, text: &str, at: [f32; 2], size_px: f32, anchor: Anchor) -> (Vec<PlacedGlyph>, f32) {
        let size = size_px.round().max(4.0) as u32;
        let font = font();
        let width = Self::measure(text, size as f32);
        let scaled = font.as_scaled(size as f32);
        let mut pen = match anchor {
            Anchor::Left => at[0],
            Anchor::Centre => at[0] - width / 2.0,
            Anchor::Right => at[0] - width,
        }
        .round();
        let base = at[1].round();
        let mut out = Vec::with_capacity(text.len());
        for c in text.chars() {
            if let Some(s) = self.slot(&font, c, size) {
                let min = [pen + s.dx as f32, base + s.dy as f32];
                out.push(PlacedGlyph {
                    min,
                    max: [min[0] + s.w as f32, min[1] + s.h as f32],
                    uv: [s.x as f32, s.y as f32],
                });
            }
            pen += scaled.h_advance(font.glyph_id(c)).round();
        }
        (out, width)
    }
}
