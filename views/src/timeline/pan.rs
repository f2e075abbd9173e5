//! A pan draws only the columns it uncovers: the last picture's columns, kept with what they
//! were drawn from, lend the new picture every column they share with it.

use exaviz_compute as stages;
use exaviz_model::dataset::Dataset;

use super::options::StateMode;
use crate::plot::Plot;

/// Which trace's rows a picture drew: its name, its locations, the span of the whole trace
/// where the rows are one window's of it, and else the messages and intervals it holds.
pub type TraceKey = (String, usize, Option<(u64, u64)>, (usize, usize));

/// The key of `dataset`'s trace.
pub(super) fn trace_key(dataset: &Dataset) -> TraceKey {
    let t = &dataset.trace;
    let held = if t.span_of_whole.is_some() { (0, 0) } else { (t.messages.source.len(), t.intervals.start.len()) };
    (dataset.name.clone(), t.locations.name.len(), t.span_of_whole, held)
}

/// A picture's columns kept with what it was drawn from (`K`), its plot and its window, so
/// that the next picture of the same, in a window panned by whole pixels (every time within
/// [`SHIFT_SLACK`] of a pixel), draws only the columns it uncovers and takes the others from it.
pub struct KeptColumns<K, T> {
    last: std::sync::Mutex<Option<LastColumns<K, T>>>,
    /// How many pictures took columns from the kept one.
    taken: std::sync::atomic::AtomicUsize,
}

impl<K, T> Default for KeptColumns<K, T> {
    fn default() -> Self {
        Self { last: std::sync::Mutex::new(None), taken: Default::default() }
    }
}

/// What [`KeptColumns`] keeps.
pub struct LastColumns<K, T> {
    key: K,
    plot: Plot,
    window: (u64, u64),
    image: T,
}

/// How far (pixels) a line or state edge of the kept picture may lie from where the new picture
/// puts it, at any time of the new window, for the kept columns to be taken: a pan moves a
/// window by seconds, which round to ticks, so the shift is a whole number of pixels only to
/// within ticks per pixel.
pub const SHIFT_SLACK: f64 = 1.0 / 64.0;

/// The message lines' density of the last picture: drawn from the same trace (its key) with the
/// same row centres.
pub type KeptLines = KeptColumns<(TraceKey, Vec<f32>), stages::DensityImage>;

/// The state colours of the last picture: drawn from the same trace (its key) with the same
/// rows' contents, colour slots and mode.
pub type KeptStates = KeptColumns<StatesKey, Vec<Option<[f32; 4]>>>;

/// What the state colours of a picture were drawn from, beside its window and plot.
pub type StatesKey = (TraceKey, Vec<(Vec<usize>, Option<u32>)>, Vec<usize>, StateMode);

/// The last timeline picture's state colours and message lines, kept so that a pan draws only
/// the columns it uncovers.
#[derive(Default)]
pub struct LastPicture {
    pub(super) states: KeptStates,
    pub(super) lines: KeptLines,
    /// The chunks of a store's rows kept on the device around the windows drawn there.
    pub(super) ring: super::ring::Ring,
}

/// A kept picture beside a new window's: its pixels and the whole pixels between them.
pub(super) struct Beside<T> {
    pub(super) image: T,
    /// The kept picture's column of the new picture's column 0.
    pub(super) shift: i64,
}

impl<K: PartialEq, T: Clone> KeptColumns<K, T> {
    /// The kept picture (taken out), where it was drawn from `key` in the plot `p` and `window`
    /// is panned from its window by whole pixels, fewer than the plot's width.
    pub(super) fn beside(&self, key: &K, p: Plot, window: (u64, u64)) -> Option<Beside<T>> {
        let mut kept = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let last = kept.as_ref().filter(|l| l.key == *key && l.plot == p)?;
        let shift = pixel_shift(last.window, window, p.w)?;
        self.taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Taken rather than copied: the new picture is kept in its place.
        kept.take().map(|last| Beside { image: last.image, shift })
    }

    /// Keeps the picture of `window`.
    pub(super) fn keep(&self, key: K, plot: Plot, window: (u64, u64), image: T) {
        let last = LastColumns { key, plot, window, image };
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(last);
    }

    /// The window of the kept picture.
    #[cfg(test)]
    pub(super) fn window(&self) -> Option<(u64, u64)> {
        self.last.lock().unwrap().as_ref().map(|l| l.window)
    }

    /// How many pictures took columns from a kept one.
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The whole pixels by which the picture of `now` lies beside that of `before` in a plot `w`
/// pixels wide (positive: `now` is later, so the kept column `x + shift` is the new column
/// `x`), where every time of `now` lies within [`SHIFT_SLACK`] of that shift in both; `None`
/// where it does not or where no column is shared.
pub(super) fn pixel_shift(before: (u64, u64), now: (u64, u64), w: u32) -> Option<i64> {
    let scale = |window: (u64, u64)| f64::from(w) / window.1.saturating_sub(window.0).max(1) as f64;
    let (s0, s1) = (scale(before), scale(now));
    let apart = |time: u64| (time as f64 - before.0 as f64) * s0 - (time as f64 - now.0 as f64) * s1;
    let (a, b) = (apart(now.0), apart(now.1));
    let k = a.round();
    let close = (a - k).abs() <= SHIFT_SLACK && (b - k).abs() <= SHIFT_SLACK;
    (close && k.abs() < f64::from(w)).then_some(k as i64)
}

/// The columns of a picture `w` pixels wide that a picture `shift` pixels beside it lacks.
pub(super) fn uncovered(w: usize, shift: i64) -> std::ops::Range<usize> {
    let s = (shift.unsigned_abs() as usize).min(w);
    if shift >= 0 { w - s..w } else { 0..s }
}

/// Copies into `to` (rows `w` pixels wide) every column that `from`, a picture `shift` pixels
/// beside it, holds.
pub(super) fn take_columns<T: Copy>(to: &mut [T], from: &[T], w: usize, shift: i64) {
    let s = (shift.unsigned_abs() as usize).min(w);
    let (mine, theirs) = if shift >= 0 { (0..w - s, s..w) } else { (s..w, 0..w - s) };
    for (row, kept) in to.chunks_exact_mut(w).zip(from.chunks_exact(w)) {
        row[mine.clone()].copy_from_slice(&kept[theirs.clone()]);
    }
}

impl Beside<stages::DensityImage> {
    /// The span of x (plot pixels) that a line must reach into to be drawn: the uncovered
    /// columns (a line is drawn in the pixels of the floors of its points) and a pixel each side.
    pub(super) fn reach(&self) -> (f32, f32) {
        let columns = uncovered(self.image.width as usize, self.shift);
        if columns.is_empty() {
            return (f32::MAX, f32::MIN);
        }
        ((columns.start as f32 - 1.0), (columns.end as f32 + 1.0))
    }

    /// `image` (drawn from the lines through the uncovered columns) with every other column
    /// taken from the kept picture.
    pub(super) fn fill(&self, image: &mut stages::DensityImage) {
        let w = image.width as usize;
        take_columns(&mut image.counts, &self.image.counts, w, self.shift);
        take_columns(&mut image.sums, &self.image.sums, w, self.shift);
    }
}
