//! Stage (b): line-density aggregation of segments into an accumulation image (a count and an
//! exact 64-bit weight sum per pixel). Shader: `line_density.wgsl` beside this file; CPU mirror:
//! [`mirror`].

pub mod mirror;
pub mod plain;

use super::{Kernel, Recording, Runner, StageError, check_binding, chunks, words_to_u64};

pub use super::io::{DensityImage, StraightInput, piece, point};

/// Segments `[x0, y0, x1, y1]` in pixels (y down) and optional weights (default 1).
#[derive(Clone, Copy, Debug)]
pub struct DensityInput<'a> {
    pub segments: &'a [[f32; 4]],
    pub weights: Option<&'a [u32]>,
    pub width: u32,
    pub height: u32,
}

/// Most segment bytes uploaded per dispatch.
const SEGMENT_CHUNK_BYTES: u64 = 16 << 20;

pub fn record<'a>(input: &DensityInput<'a>, max_binding_bytes: u64) -> Result<Recording<'a>, StageError> {
    let n = input.segments.len();
    if input.weights.is_some_and(|w| w.len() != n) {
        return Err(StageError::Input("density weights and segments differ in length".into()));
    }
    let pixels = u64::from(input.width) * u64::from(input.height);
    if pixels == 0 {
        return Err(StageError::Input("density image has no pixels".into()));
    }
    check_binding("density sums", pixels * 8, max_binding_bytes)?;
    let mut rec = Recording::default();
    let counts = rec.alloc(pixels, "density.counts");
    // Unweighted, the kernel leaves the sums alone (they equal the counts): one word suffices.
    let sums = rec.alloc(if input.weights.is_some() { pixels * 2 } else { 1 }, "density.sums");
    // Chunks of at most 16 MiB of segments even where a binding holds more: the upload buffer
    // is reused (it stays in a CPU's cache, no fresh pages per run) and uploads overlap dispatches.
    let parts: Vec<_> = chunks(n, 16, max_binding_bytes.min(SEGMENT_CHUNK_BYTES)).collect();
    let most = parts.first().map_or(0, |r| r.len() as u64);
    let segs = rec.alloc(most * 4, "density.segments");
    let weights = rec.alloc(if input.weights.is_some() { most } else { 1 }, "density.weights");
    for range in parts {
        let len = range.len() as u32;
        rec.upload(segs, bytemuck::cast_slice::<[f32; 4], u32>(&input.segments[range.clone()]));
        if let Some(w) = input.weights {
            rec.upload(weights, &w[range.clone()]);
        }
        let params = vec![len, input.width, input.height, u32::from(input.weights.is_some())];
        rec.dispatch(Kernel::LineDensity, len, params, vec![(1, segs), (2, weights), (3, counts), (4, sums)]);
    }
    rec.download(counts);
    if input.weights.is_some() {
        rec.download(sums);
    }
    Ok(rec)
}

/// The counts alone of unweighted segments (`input.weights` is `None`): [`run`] without the
/// sums, which then equal the counts.
pub fn counts(runner: &mut dyn Runner, input: &DensityInput<'_>) -> Result<Vec<u32>, StageError> {
    if input.weights.is_some() {
        return Err(StageError::Input("density counts alone are of unweighted segments".into()));
    }
    let rec = record(input, runner.max_binding_bytes())?;
    runner.run(&rec)?.into_iter().next().ok_or_else(|| StageError::Input("density downloads missing".into()))
}

pub fn run(runner: &mut dyn Runner, input: &DensityInput<'_>) -> Result<DensityImage, StageError> {
    let rec = record(input, runner.max_binding_bytes())?;
    let mut out = runner.run(&rec)?.into_iter();
    let counts = out.next().ok_or_else(|| StageError::Input("density downloads missing".into()))?;
    let sums = match out.next() {
        Some(words) => words_to_u64(&words),
        None => counts.iter().map(|&c| u64::from(c)).collect(),
    };
    Ok(DensityImage { width: input.width, height: input.height, counts, sums })
}

/// Two weighted densities of the same segments, `[weighted by weights[0], by weights[1]]`: what
/// two weighted [`run`]s give, count for count and sum for sum. On a runner of plain memory (the
/// CPU's) one pass walks every segment once ([`plain::two_weights`]);
/// elsewhere two recordings.
pub fn run_two(
    runner: &mut dyn Runner,
    segments: &[[f32; 4]],
    weights: [&[u32]; 2],
    width: u32,
    height: u32,
) -> Result<[DensityImage; 2], StageError> {
    if weights.iter().any(|w| w.len() != segments.len()) {
        return Err(StageError::Input("density weights and segments differ in length".into()));
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 {
        return Err(StageError::Input("density image has no pixels".into()));
    }
    if !runner.plain_memory() {
        let mut one = |w: &[u32]| run(runner, &DensityInput { segments, weights: Some(w), width, height });
        return Ok([one(weights[0])?, one(weights[1])?]);
    }
    check_binding("density sums", pixels * 8, runner.max_binding_bytes())?;
    let p = mirror::Params { n: segments.len() as u32, width, height, has_weight: 1 };
    Ok(two_in_memory(&p, |counts, sums| {
        plain::two_weights(&p, segments, weights[0], weights[1], counts, sums);
    }))
}

/// The two densities `pass` sums into zeroed counts and two sums of an image of `p`'s size.
fn two_in_memory(
    p: &mirror::Params,
    pass: impl FnOnce(&crate::cpu::Words, [&crate::cpu::Words; 2]),
) -> [DensityImage; 2] {
    use std::sync::atomic::AtomicU32;
    let (width, height) = (p.width, p.height);
    let pixels = u64::from(width) * u64::from(height);
    let words = |n: u64| (0..n).map(|_| AtomicU32::new(0)).collect::<Vec<_>>();
    let (counts, a, b) = (words(pixels), words(2 * pixels), words(2 * pixels));
    pass(&counts, [&a, &b]);
    let counts: Vec<u32> = counts.into_iter().map(AtomicU32::into_inner).collect();
    let image = |sums: Vec<AtomicU32>| {
        let sums: Vec<u32> = sums.into_iter().map(AtomicU32::into_inner).collect();
        DensityImage { width, height, counts: counts.clone(), sums: words_to_u64(&sums) }
    };
    [image(a), image(b)]
}

/// Segments kept for several pairs of weighted densities of one image ([`run_two_kept`]), as a
/// view keeps the pieces of curves whose weights change from one time window to the next: on
/// a runner of plain memory (the CPU's) bucketed by band once, elsewhere kept as they are.
pub struct KeptSegments {
    segments: Vec<[f32; 4]>,
    width: u32,
    height: u32,
    bucketed: Option<plain::TwoWeights>,
}

impl KeptSegments {
    /// `segments` in an image `width` x `height`, bucketed where `plain_memory` (the runner's
    /// [`Runner::plain_memory`]).
    pub fn new(plain_memory: bool, segments: Vec<[f32; 4]>, width: u32, height: u32) -> Self {
        let p = mirror::Params { n: segments.len() as u32, width, height, has_weight: 1 };
        let bucketed = (plain_memory && width > 0 && height > 0).then(|| plain::TwoWeights::bucket(&p, &segments));
        Self { segments, width, height, bucketed }
    }

    /// How many segments.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
}

/// [`run_two`] of the kept segments whose two weights are not both zero, with those weights
/// (`weights[k][i]` segment `i`'s): a segment weighted zero twice is left out, walked and
/// counted nowhere. On a runner of plain memory the kept buckets are walked; elsewhere the
/// segments left in are given to [`run_two`].
pub fn run_two_kept(
    runner: &mut dyn Runner,
    kept: &KeptSegments,
    weights: [&[u32]; 2],
) -> Result<[DensityImage; 2], StageError> {
    if weights.iter().any(|w| w.len() != kept.segments.len()) {
        return Err(StageError::Input("density weights and kept segments differ in length".into()));
    }
    let (width, height) = (kept.width, kept.height);
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 {
        return Err(StageError::Input("density image has no pixels".into()));
    }
    match &kept.bucketed {
        Some(bucketed) if runner.plain_memory() => {
            check_binding("density sums", pixels * 8, runner.max_binding_bytes())?;
            let p = mirror::Params { n: kept.len() as u32, width, height, has_weight: 1 };
            Ok(two_in_memory(&p, |counts, sums| bucketed.walk(&p, weights[0], weights[1], true, counts, sums)))
        }
        _ => {
            let inked: Vec<usize> = (0..kept.len()).filter(|&i| weights[0][i] != 0 || weights[1][i] != 0).collect();
            let segments: Vec<[f32; 4]> = inked.iter().map(|&i| kept.segments[i]).collect();
            let [a, b] = weights.map(|w| inked.iter().map(|&i| w[i]).collect::<Vec<u32>>());
            run_two(runner, &segments, [&a, &b], width, height)
        }
    }
}

/// The density of straight lines cut into pieces, equal count for count and sum for sum to one
/// weighted [`run`] over every piece. On a runner of plain memory (the CPU's), one pass that
/// cuts, buckets and draws every piece ([`plain::straight`]); elsewhere one
/// unweighted recording per piece (the pieces of a recording share a weight), whose counts are
/// added to the picture's counts and, times the weight, to its sums.
pub fn straight(runner: &mut dyn Runner, input: &StraightInput<'_>) -> Result<DensityImage, StageError> {
    let pixels = u64::from(input.width) * u64::from(input.height);
    if pixels == 0 {
        return Err(StageError::Input("density image has no pixels".into()));
    }
    if runner.plain_memory() {
        check_binding("density sums", pixels * 8, runner.max_binding_bytes())?;
        return Ok(plain::straight(input));
    }
    straight_recorded(runner, input)
}

/// [`straight`] as one recording per piece.
pub fn straight_recorded(runner: &mut dyn Runner, input: &StraightInput<'_>) -> Result<DensityImage, StageError> {
    let pixels = input.width as usize * input.height as usize;
    let mut total =
        DensityImage { width: input.width, height: input.height, counts: vec![0; pixels], sums: vec![0; pixels] };
    let pieces = input.weights.len();
    let mut segments = vec![[0f32; 4]; input.lines.len()];
    for (k, &weight) in input.weights.iter().enumerate() {
        segments.iter_mut().zip(input.lines).for_each(|(s, l)| *s = piece(l, k, pieces));
        let unweighted = DensityInput { segments: &segments, weights: None, width: input.width, height: input.height };
        let counts = self::counts(runner, &unweighted)?;
        for ((c, s), &n) in total.counts.iter_mut().zip(total.sums.iter_mut()).zip(&counts) {
            *c = c.wrapping_add(n);
            *s = s.wrapping_add(u64::from(weight) * u64::from(n));
        }
    }
    Ok(total)
}
