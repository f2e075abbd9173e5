//! Curves drawn as a density where their pieces are kept: the pieces of every curve a view
//! keeps (each piece's segment between pixel centres, its curve, length, pixels walked and
//! place along the curve) go to the device once, under their owner, and the curves' values at
//! their two ends while they stay the same; a window then sends each curve's opacity times
//! width (zero where the window draws it not), and the kernels weigh and walk every piece into two 64-bit sums per pixel (ink, and
//! ink times value) and colour every pixel from them, as straight RGBA8 rows left on the
//! device for the renderer ([`crate::DeviceWords`]). Nothing is read back to draw.
//! Shader: `curve_density.wgsl` beside this file; CPU mirror: [`mirror`].
//!
//! The weights are computed in `f32` (the views' host path weighs in `f64`), a colour from a
//! table of the map's samples interpolated: a pixel may differ from the host's by a unit or
//! two of 255 a channel.

pub mod mirror;

use std::sync::Arc;

use super::{Kernel, Owner, Recording, Runner, StageError, check_binding, chunks};
use crate::held::DeviceWords;
pub use mirror::{INK_SCALE, Params};

/// Kept pieces of the curves: per piece its segment `[x0, y0, x1, y1]` (pixel centres, y down)
/// and `[curve, length (f32 bits), pixels walked, place along the curve (samples, f32 bits)]`,
/// the same while `owner` lives. A view keeps its curves' pieces in several such parts, one for
/// the curves each window added, so that new curves send only their own.
#[derive(Clone, Copy, Debug)]
pub struct Kept<'a> {
    pub segments: &'a [[f32; 4]],
    pub pieces: &'a [[u32; 4]],
    pub owner: &'a Owner,
}

/// The picture asked for: its size, how strokes mix, a curve's samples less one, the
/// background (added to, where strokes add).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub width: u32,
    pub height: u32,
    pub additive: bool,
    pub last: f32,
    pub background: [f32; 3],
}

/// The composed picture, kept where it was made: straight RGBA8 per pixel, red in the low byte
/// (0: no ink), rows of `stride` words.
#[derive(Clone, Debug)]
pub struct Picture {
    pub rgba: DeviceWords,
    pub stride: u32,
}

/// A colour table of `map` sampled at `points` values from 0 to 1 (rgb and 1 a point), as
/// words: its own owner, so that an equal table kept in one `Arc` goes up once.
pub fn table(points: usize, map: impl Fn(f32) -> [f32; 3]) -> Arc<Vec<u32>> {
    let points = points.max(2);
    let words = (0..points)
        .flat_map(|k| {
            let c = map(k as f32 / (points - 1) as f32);
            [c[0], c[1], c[2], 1.0].map(f32::to_bits)
        })
        .collect();
    Arc::new(words)
}

/// The curves of a picture: each one's opacity times width (0: not drawn), and their values at
/// their two ends (two `f32` a curve, as bits), their own owner: an equal table kept in one
/// `Arc` goes up once.
#[derive(Clone, Copy, Debug)]
pub struct Curves<'a> {
    pub alphas: &'a [f32],
    pub values: &'a Arc<Vec<u32>>,
}

pub fn record<'a>(
    kept: &[Kept<'a>],
    curves: Curves<'a>,
    table: &'a Arc<Vec<u32>>,
    look: &Look,
    max_binding_bytes: u64,
) -> Result<Recording<'a>, StageError> {
    if kept.iter().any(|k| k.segments.len() != k.pieces.len()) {
        return Err(StageError::Input("curve density: pieces and segments differ in length".into()));
    }
    let (w, h) = (look.width, look.height);
    let pixels = u64::from(w) * u64::from(h);
    if pixels == 0 {
        return Err(StageError::Input("curve density: the picture has no pixels".into()));
    }
    let points = table.len() / 4;
    if points < 2 || !table.len().is_multiple_of(4) {
        return Err(StageError::Input("curve density: a colour table of fewer than two points".into()));
    }
    check_binding("curve density sums", pixels * 8, max_binding_bytes)?;
    let stride = crate::timeline_pixels::stride(w);
    check_binding("curve density picture", u64::from(stride) * u64::from(h) * 4, max_binding_bytes)?;
    if curves.values.len() != 2 * curves.alphas.len() {
        return Err(StageError::Input("curve density: curves' values and opacities differ in number".into()));
    }
    check_binding("curve density curves", curves.values.len() as u64 * 4, max_binding_bytes)?;
    let base = Params {
        n: 0,
        width: w,
        height: h,
        additive: u32::from(look.additive),
        last: look.last.max(1.0),
        stride,
        table: points as u32,
        curves: curves.alphas.len() as u32,
        background: [look.background[0], look.background[1], look.background[2], 1.0],
    };
    let params = |n: u32| bytemuck::cast_slice::<Params, u32>(&[Params { n, ..base }]).to_vec();
    let mut rec = Recording::default();
    let (ink, tint) = (rec.alloc(2 * pixels, "curves.ink"), rec.alloc(2 * pixels, "curves.tint"));
    let alphas = rec.alloc(curves.alphas.len() as u64, "curves.alphas");
    rec.upload(alphas, bytemuck::cast_slice::<f32, u32>(curves.alphas));
    let values = rec.alloc(curves.values.len() as u64, "curves.values");
    let values_owner: Owner = curves.values.clone();
    rec.upload_kept(values, curves.values, &values_owner);
    let parts: Vec<(&Kept<'a>, std::ops::Range<usize>)> =
        kept.iter().flat_map(|k| chunks(k.pieces.len(), 16, max_binding_bytes).map(move |r| (k, r))).collect();
    let most = parts.iter().map(|(_, r)| r.len() as u64).max().unwrap_or(1);
    let (segs, kept_pieces) = (rec.alloc(4 * most, "curves.segments"), rec.alloc(4 * most, "curves.pieces"));
    for (k, r) in parts {
        rec.upload_kept(segs, bytemuck::cast_slice(&k.segments[r.clone()]), k.owner);
        rec.upload_kept(kept_pieces, bytemuck::cast_slice(&k.pieces[r.clone()]), k.owner);
        let len = r.len() as u32;
        let bindings = vec![(1, segs), (2, kept_pieces), (3, alphas), (4, ink), (5, tint), (8, values)];
        rec.dispatch(Kernel::CurvePieces, len, params(len), bindings);
    }
    let colours = rec.alloc(table.len() as u64, "curves.table");
    let table_owner: Owner = table.clone();
    rec.upload_kept(colours, table, &table_owner);
    let out = rec.alloc(u64::from(stride) * u64::from(h), "curves.picture");
    let n = w * h;
    rec.dispatch(Kernel::CurveCompose, n, params(n), vec![(4, ink), (5, tint), (6, colours), (7, out)]);
    rec.keep(out);
    Ok(rec)
}

/// The picture of `curves` drawn from the `kept` pieces (see the module's description).
pub fn run(
    runner: &mut dyn Runner,
    kept: &[Kept<'_>],
    curves: Curves<'_>,
    table: &Arc<Vec<u32>>,
    look: &Look,
) -> Result<Picture, StageError> {
    let rec = record(kept, curves, table, look, runner.max_binding_bytes())?;
    let out = runner.run_keeping(&rec)?;
    let rgba = out.kept.into_iter().next().ok_or_else(|| StageError::Input("curve density: no picture".into()))?;
    Ok(Picture { rgba, stride: crate::timeline_pixels::stride(look.width) })
}
