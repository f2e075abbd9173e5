//! RGBA8 images and PNG output written atomically (temporary file, then rename).

use std::io::Write;
use std::path::Path;

/// An RGBA8 image, row-major, straight alpha.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl Image {
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2], self.pixels[i + 3]]
    }

    /// Number of distinct colours (a blank picture has one).
    pub fn distinct_colours(&self) -> usize {
        let mut seen: Vec<u32> =
            self.pixels.chunks_exact(4).map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]])).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }
}

/// Writes a file through a temporary file in the same folder and a rename, so a failed or
/// interrupted write never leaves a partial file at `path`. `fill` writes the contents.
pub fn write_atomic(path: &Path, fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| std::io::Error::other("output path has no file name"))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        fill(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `image` as PNG to `path` atomically (see [`write_atomic`]).
pub fn write_png_atomic(path: &Path, image: &Image) -> std::io::Result<()> {
    write_atomic(path, |w| encode_png(w, image))
}

/// `image` as a PNG file's bytes.
pub fn png_bytes(image: &Image) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to memory fails only where the image's size disagrees with its pixels.
    encode_png(&mut out, image).map(|()| out).unwrap_or_default()
}

/// Writes `image` as PNG (RGBA, 8 bits) to `w`.
fn encode_png(w: &mut dyn Write, image: &Image) -> std::io::Result<()> {
    let mut enc = png::Encoder::new(w, image.width, image.height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(std::io::Error::other)?;
    writer.write_image_data(&image.pixels).map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}
