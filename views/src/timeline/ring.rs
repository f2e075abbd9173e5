//! A store's rows kept on the device in chunks of time, for the windows of it read from disk:
//! the timeline's device path draws such a window from the chunks that cover it, each read
//! once and uploaded once under its own owner, so that a gesture within the time kept sends the
//! window and the look alone, and one that uncovers time sends the chunks of that time only.
//!
//! A chunk is the time `[c0, c1)` of a grid of the store's span halved `level` times. It holds
//! each location's innermost states clipped to its time (so the chunks covering a window hold
//! each moment once) and the intervals and messages overlapping it in two parts: those begun in
//! it (`own`), and those begun before it (`carried`), drawn for the first chunk of a window
//! only (a row overlapping the window and begun before its first chunk overlaps that chunk's
//! start). Chunks of several levels serve one window: a coarser chunk kept from a wider window
//! serves the narrower windows inside it while it is at most [`COARSEST`] times their length.

use std::sync::{Arc, Mutex};

use exaviz_compute::timeline_pixels::{Columns, SpanColumns};
use exaviz_model::dataset::{OutOfCore, WindowRows};
use exaviz_model::{Intervals, Messages, Trace};

use super::index::ByLocation;
use super::pieces::{self, Pieces};
use crate::ViewError;

/// A kept chunk serves windows down to this many times narrower than itself; a narrower window
/// reads chunks of its own level (most of a coarser chunk's rows lie outside it).
const COARSEST: u64 = 8;

/// Past this many rows in a window, its chunks are read without the margins around it.
const MARGINS_UP_TO: u64 = 1_250_000;

/// One chunk's rows and pieces (see the module's description).
pub(super) struct Chunk {
    level: u32,
    k: u64,
    /// The chunk's time `[c0, c1)`.
    span: (u64, u64),
    pieces: Pieces,
    own: (Intervals, Messages),
    carried: (Intervals, Messages),
    bytes: u64,
}

/// The chunks kept of one store, most recently used last.
#[derive(Default)]
pub struct Ring {
    kept: Mutex<Option<Kept>>,
    /// The last layout table (a window's rows are indexed anew, so the index keeps none an
    /// equal table could be found in).
    pub(super) layout: Mutex<Option<exaviz_compute::timeline_pixels::Layout>>,
}

struct Kept {
    reader: Arc<dyn WindowRows>,
    chunks: Vec<Arc<Chunk>>,
    /// Chunks read from disk, for tests and reports.
    read: u64,
}

impl Ring {
    /// The chunks covering `window` of `whole`'s rows, in order of time, read where none kept
    /// covers some of it (with margins around the window of half its length, where it holds
    /// at most [`MARGINS_UP_TO`] rows); `locations` of the trace. The ring keeps at most
    /// `budget` bytes of chunks besides those returned.
    pub(super) fn cover(
        &self,
        whole: &OutOfCore,
        window: (u64, u64),
        locations: usize,
        budget: u64,
    ) -> Result<Vec<Arc<Chunk>>, ViewError> {
        let mut guard = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.as_ref().is_none_or(|k| !Arc::ptr_eq(&k.reader, &whole.rows)) {
            *guard = Some(Kept { reader: whole.rows.clone(), chunks: Vec::new(), read: 0 });
        }
        let kept = guard.as_mut().expect("set above");
        let (a, b) = (window.0.min(window.1), window.0.max(window.1));
        let level = level_for(whole.span, (a, b));
        let margin = if whole.rows.estimate((a, b)) <= MARGINS_UP_TO { (b - a) / 2 } else { 0 };
        let wide =
            (a.saturating_sub(margin).max(whole.span.0).min(a), b.saturating_add(margin).min(whole.span.1.max(b)));
        let serves = (b - a).max(1).saturating_mul(COARSEST);
        // Chunks kept cover the window, or the chunks of the window and its margins are read
        // where none is kept (a pan within the margins read before reads nothing).
        let mut chain = chain_over(&kept.chunks, whole.span, (a, b), (level, serves));
        if chain.iter().any(Result::is_err) {
            chain = chain_over(&kept.chunks, whole.span, wide, (level, serves));
        }
        let wanted: Vec<(u32, u64)> = chain.iter().filter_map(|c| c.as_ref().err().copied()).collect();
        let fresh: Vec<Result<Chunk, ViewError>> = {
            use rayon::prelude::*;
            wanted.par_iter().map(|&(l, k)| read_chunk(whole, l, k, locations)).collect()
        };
        let mut fresh = fresh.into_iter();
        let mut chunks = Vec::with_capacity(chain.len());
        for c in chain {
            let c = match c {
                Ok(c) => c,
                Err(_) => {
                    let c = Arc::new(fresh.next().expect("a chunk read for each wanted")?);
                    kept.chunks.push(c.clone());
                    kept.read += 1;
                    c
                }
            };
            chunks.push(c);
        }
        // The window's cover: the chunks from the one holding its first tick to the one
        // holding its last.
        let cover: Vec<Arc<Chunk>> = chunks.into_iter().filter(|c| c.span.1 > a && c.span.0 <= b).collect();
        // Used last; the least recently used beyond the budget dropped (never the cover's).
        kept.chunks.sort_by_key(|c| cover.iter().any(|d| Arc::ptr_eq(c, d)));
        let mut bytes: u64 = kept.chunks.iter().map(|c| c.bytes).sum();
        let covered = kept.chunks.len() - cover.len();
        let mut dropped = 0;
        while dropped < covered && bytes > budget {
            bytes -= kept.chunks[dropped].bytes;
            dropped += 1;
        }
        kept.chunks.drain(..dropped);
        Ok(cover)
    }

    /// The rows of `window` of `whole` from the chunks covering it (read where none kept
    /// covers it, as [`Ring::cover`] reads them): the intervals and messages overlapping it, in
    /// the order of a read of the window (by first tick: the first chunk's rows begun before
    /// it, then each chunk's own).
    pub(super) fn window_rows(
        &self,
        whole: &OutOfCore,
        window: (u64, u64),
        locations: usize,
        budget: u64,
    ) -> Result<(Messages, Intervals), ViewError> {
        let (a, b) = (window.0.min(window.1), window.0.max(window.1));
        let cover = self.cover(whole, (a, b), locations, budget)?;
        let (mut messages, mut intervals) = (Messages::default(), Intervals::default());
        for (k, c) in cover.iter().enumerate() {
            let parts = if k == 0 { vec![&c.carried, &c.own] } else { vec![&c.own] };
            for (i, m) in parts {
                let mut i = i.clone();
                let keep: Vec<bool> = i.start.iter().zip(&i.end).map(|(&s, &e)| s <= b && e >= a).collect();
                i.retain_rows(&keep);
                intervals.append(i);
                let mut m = m.clone();
                let keep: Vec<bool> = m.send_time.iter().zip(&m.recv_time).map(|(&s, &r)| s <= b && r >= a).collect();
                m.retain_rows(&keep);
                messages.append(m);
            }
        }
        Ok((messages, intervals))
    }

    /// How many chunks were read from the store since the ring was made (or the store changed).
    #[cfg(test)]
    pub(super) fn chunks_read(&self) -> u64 {
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().map_or(0, |k| k.read)
    }
}

/// The chunks over `(from, to)`, one after another: a kept one where one begins where the last
/// ended (or holds the first tick) and is at most `serves` ticks long, else the one to read
/// (`Err((level, k))`), of `level` or of the last chunk's where that is finer (the grids are
/// nested: a boundary of a level is one of every finer level's).
#[allow(clippy::type_complexity, reason = "a chunk kept, or the one to read")]
fn chain_over(
    kept: &[Arc<Chunk>],
    span: (u64, u64),
    (from, to): (u64, u64),
    (level, serves): (u32, u64),
) -> Vec<Result<Arc<Chunk>, (u32, u64)>> {
    let mut chain: Vec<Result<Arc<Chunk>, (u32, u64)>> = Vec::new();
    let mut t = from;
    let mut last_level = level;
    while t <= to {
        let first = chain.is_empty();
        let found = kept
            .iter()
            .filter(|c| (if first { c.span.0 <= t } else { c.span.0 == t }) && t < c.span.1)
            .filter(|c| c.span.1 - c.span.0 <= serves)
            .min_by_key(|c| (c.span.1 - c.span.0, c.k));
        let (end, at) = match found {
            Some(c) => (c.span.1, Ok(c.clone())),
            None => {
                let l = if first { level } else { level.max(last_level) };
                let k = chunk_of(span, l, t);
                (chunk_span(span, l, k).1, Err((l, k)))
            }
        };
        last_level = match &at {
            Ok(c) => c.level,
            Err((l, _)) => *l,
        };
        chain.push(at);
        if end <= t {
            break;
        }
        t = end;
    }
    chain
}

/// The level whose chunks are at most half the window `(a, b)` long (so that two or three
/// cover it), of a store spanning `span`.
fn level_for(span: (u64, u64), (a, b): (u64, u64)) -> u32 {
    let length = (b - a).max(1);
    let mut level = 0;
    while level < 63 && chunk_length(span, level).saturating_mul(2) > length {
        level += 1;
    }
    level
}

/// Ticks of a chunk at `level`: the power of two at or above the span's length, halved
/// `level` times (so that every level's boundaries are the finer levels' too).
fn chunk_length(span: (u64, u64), level: u32) -> u64 {
    let whole = (span.1 - span.0.min(span.1)).saturating_add(1);
    let top = whole.checked_next_power_of_two().unwrap_or(1 << 63);
    (top >> level.min(63)).max(1)
}

/// The chunk at `level` holding tick `t` (ticks before the span in the first).
fn chunk_of(span: (u64, u64), level: u32, t: u64) -> u64 {
    t.saturating_sub(span.0) / chunk_length(span, level)
}

/// The time `[c0, c1)` of chunk `k` at `level`.
fn chunk_span(span: (u64, u64), level: u32, k: u64) -> (u64, u64) {
    let length = chunk_length(span, level);
    let c0 = span.0.saturating_add(k.saturating_mul(length));
    (c0, c0.saturating_add(length))
}

/// Chunk `k` at `level` read from the store: its rows split by whether they begin in it, and
/// each location's innermost states over its time.
fn read_chunk(whole: &OutOfCore, level: u32, k: u64, locations: usize) -> Result<Chunk, ViewError> {
    let (c0, c1) = chunk_span(whole.span, level, k);
    let (messages, intervals) = whole.rows.read_once((c0, c1 - 1)).map_err(ViewError::Unsupported)?;
    let t = Trace { intervals, ..Default::default() };
    let by = ByLocation::new(&t, locations);
    let pieces = Pieces::walked(locations, |l, push| by.innermost_in(l, (c0, c1), push));
    let split_intervals = |before: bool| {
        let mut i = t.intervals.clone();
        let keep: Vec<bool> = i.start.iter().map(|&s| (s < c0) == before).collect();
        i.retain_rows(&keep);
        i
    };
    let split_messages = |before: bool| {
        let mut m = messages.clone();
        let keep: Vec<bool> = m.send_time.iter().map(|&s| (s < c0) == before).collect();
        m.retain_rows(&keep);
        m
    };
    let own = (split_intervals(false), split_messages(false));
    let carried = (split_intervals(true), split_messages(true));
    let bytes = pieces.bytes() + (t.intervals.start.len() as u64) * 28 + (messages.source.len() as u64) * 32;
    Ok(Chunk { level, k, span: (c0, c1), pieces, own, carried, bytes })
}

impl Chunk {
    /// The columns of this chunk a window draws: the pieces and the rows begun in it, and where
    /// it is the window's `first` chunk those begun before it; each kept under `owner` (the
    /// chunk itself).
    pub(super) fn columns<'a>(&'a self, first: bool, owner: &exaviz_compute::Owner) -> Vec<Columns<'a>> {
        let mut parts = vec![pieces::columns(self.pieces.columns(), (&self.own.0, &self.own.1), owner)];
        if first {
            let none = SpanColumns { starts: &[], ends: &[], locations: &[], kinds: &[], depths: None };
            parts.push(pieces::columns(none, (&self.carried.0, &self.carried.1), owner));
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::held_index::{PyramidSpan, index_with};

    /// A trace of `n` locations over about 1M ticks: nested states (an outer one over
    /// everything, inner ones of random lengths, some long) and messages, some long.
    fn trace(n: u32) -> Trace {
        let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
        t.region_names = vec!["main".into(), "compute".into(), "wait".into()];
        let mut x = 12345u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for l in 0..n {
            t.locations.name.push(format!("rank {l}"));
            t.locations.node.push(0);
            t.intervals.push(l, 0, 1_000_000, 0, 0);
        }
        let mut rows = Vec::new();
        for l in 0..n {
            let mut at = next(500);
            while at < 990_000 {
                let len = if next(20) == 0 { 30_000 + next(60_000) } else { 50 + next(2_000) };
                let end = (at + len).min(999_999);
                rows.push((at, l, end, 1 + next(2) as u32));
                at = end + next(300);
            }
        }
        rows.sort_unstable();
        for (a, l, b, k) in rows {
            t.intervals.push(l, a, b, k, 1);
        }
        let mut sends: Vec<u64> = (0..4_000).map(|_| next(1_000_000)).collect();
        sends.sort_unstable();
        for s in sends {
            let m = &mut t.messages;
            m.source.push(next(u64::from(n)) as u32);
            m.destination.push(next(u64::from(n)) as u32);
            m.send_time.push(s);
            m.recv_time.push(s + if next(10) == 0 { 100_000 } else { next(500) });
            m.bytes.push(8);
            m.tag.push(0);
        }
        t
    }

    /// A trace's rows read by window, as a store's reader reads them.
    #[derive(Debug)]
    struct Rows(Trace);

    impl WindowRows for Rows {
        fn estimate(&self, _: (u64, u64)) -> u64 {
            (self.0.messages.source.len() + self.0.intervals.start.len()) as u64
        }

        fn read(&self, (a, b): (u64, u64)) -> Result<(Messages, Intervals), String> {
            let (mut m, mut i) = (self.0.messages.clone(), self.0.intervals.clone());
            let keep: Vec<bool> = m.send_time.iter().zip(&m.recv_time).map(|(&s, &r)| s <= b && r >= a).collect();
            m.retain_rows(&keep);
            let keep: Vec<bool> = i.start.iter().zip(&i.end).map(|(&s, &e)| s <= b && e >= a).collect();
            i.retain_rows(&keep);
            Ok((m, i))
        }
    }

    /// The rows a cover draws for `window`: every interval and message overlapping it exactly
    /// once (the chunks' own rows, the first chunk's carried ones), and each location's pieces
    /// covering the window as the innermost walk of the whole trace does.
    fn check_cover(t: &Trace, cover: &[Arc<Chunk>], (a, b): (u64, u64)) {
        let mut got: Vec<(u64, u64, u32)> = Vec::new();
        let mut lines: Vec<(u64, u64, u32)> = Vec::new();
        for (k, c) in cover.iter().enumerate() {
            let parts = if k == 0 { vec![&c.own, &c.carried] } else { vec![&c.own] };
            for (i, m) in parts {
                got.extend(
                    (0..i.start.len())
                        .filter(|&r| i.start[r] <= b && i.end[r] >= a)
                        .map(|r| (i.start[r], i.end[r], i.location[r])),
                );
                lines.extend(
                    (0..m.send_time.len())
                        .filter(|&r| m.send_time[r] <= b && m.recv_time[r] >= a)
                        .map(|r| (m.send_time[r], m.recv_time[r], m.source[r])),
                );
            }
        }
        let i = &t.intervals;
        let mut want: Vec<(u64, u64, u32)> = (0..i.start.len())
            .filter(|&r| i.start[r] <= b && i.end[r] >= a)
            .map(|r| (i.start[r], i.end[r], i.location[r]))
            .collect();
        let m = &t.messages;
        let mut want_lines: Vec<(u64, u64, u32)> = (0..m.send_time.len())
            .filter(|&r| m.send_time[r] <= b && m.recv_time[r] >= a)
            .map(|r| (m.send_time[r], m.recv_time[r], m.source[r]))
            .collect();
        for v in [&mut got, &mut want, &mut lines, &mut want_lines] {
            v.sort_unstable();
        }
        assert_eq!(got, want, "intervals of {a}..{b}");
        assert_eq!(lines, want_lines, "messages of {a}..{b}");
        let n = t.locations.name.len();
        let by = ByLocation::new(t, n);
        for l in [0, n / 2, n - 1] {
            let mut whole = Vec::new();
            by.innermost_in(l, (a, b), |x, y, k| whole.push((x, y, k)));
            let mut pieces = Vec::new();
            for c in cover {
                let p = c.pieces.columns();
                for r in (0..p.starts.len()).filter(|&r| p.locations[r] as usize == l) {
                    let (x, y) = (p.starts[r].max(a), p.ends[r].min(b));
                    if x < y {
                        pieces.push((x, y, p.kinds[r]));
                    }
                }
            }
            // The same states over the same time, split where chunks meet.
            let time = |v: &[(u64, u64, u32)], k: u32| v.iter().filter(|p| p.2 == k).map(|p| p.1 - p.0).sum::<u64>();
            for k in 0..3 {
                assert_eq!(time(&pieces, k), time(&whole, k), "location {l}, state {k}, {a}..{b}");
            }
        }
    }

    /// The chunks read for a window and its margins serve the gestures inside them (a zoom in,
    /// a short pan) without a read; a pan past the margins reads the chunks it uncovers only,
    /// and a window much narrower than the chunks kept reads its own level's. Every cover draws
    /// each row once and each moment's innermost state, and gives the window's rows as a read of
    /// it does, in its order.
    #[test]
    fn a_ring_reads_each_chunk_once_and_covers_each_row_once() {
        let t = trace(24);
        let d = exaviz_model::dataset::Dataset { trace: t.clone(), ..Default::default() };
        let span = PyramidSpan { t0: 0, t1: 1_000_000, ranks: 24, states: 3 };
        let mut whole = index_with(&d, span, None);
        whole.rows = Arc::new(Rows(t.clone()));
        let ring = Ring::default();
        let mut read = Vec::new();
        let windows = [
            (300_000, 400_000), // chunks of 32,768 ticks, with the margins 7
            (320_000, 380_000), // a zoom in: the same chunks
            (310_000, 440_000), // a pan and a zoom out within the margins
            (600_000, 700_000), // far away
            (640_000, 643_000), // much narrower: its own level
            (0, 1_000_000),     // the whole trace, at its own level
        ];
        for w in windows {
            let cover = ring.cover(&whole, w, 24, u64::MAX).unwrap();
            check_cover(&t, &cover, w);
            read.push(ring.chunks_read());
            // The window's rows from the chunks: a read of the window's, in its order.
            let (m, i) = ring.window_rows(&whole, w, 24, u64::MAX).unwrap();
            let (fm, fi) = whole.rows.read(w).unwrap();
            assert_eq!((m.send_time, m.recv_time, m.source), (fm.send_time, fm.recv_time, fm.source), "{w:?}");
            assert_eq!((i.start, i.end, i.location, i.kind), (fi.start, fi.end, fi.location, fi.kind), "{w:?}");
        }
        assert_eq!(ring.chunks_read(), *read.last().unwrap(), "the rows from the chunks read for the pictures");
        let fresh: Vec<u64> = std::iter::once(read[0]).chain(read.windows(2).map(|r| r[1] - r[0])).collect();
        assert_eq!(fresh[..3], [7, 0, 0], "{fresh:?}");
        assert!(fresh[3] > 0 && fresh[3] <= 7, "{fresh:?}");
        assert!(fresh[4] > 0 && fresh[5] > 0, "{fresh:?}");
        // Within a budget, the chunks least recently used are dropped, never the cover's.
        let small = Ring::default();
        for w in windows {
            let cover = small.cover(&whole, w, 24, 0).unwrap();
            check_cover(&t, &cover, w);
            let kept = small.kept.lock().unwrap();
            assert_eq!(kept.as_ref().unwrap().chunks.len(), cover.len());
        }
    }

    #[test]
    fn a_level_halves_the_span_until_two_chunks_fit_the_window() {
        let span = (100, 100 + 1000);
        assert_eq!(chunk_length(span, 0), 1024);
        assert_eq!(chunk_length(span, 3), 128);
        assert_eq!(level_for(span, (100, 1100)), 2);
        assert_eq!(level_for(span, (300, 556)), 3);
        assert_eq!(chunk_of(span, 3, 100 + 300), 2);
        assert_eq!(chunk_span(span, 3, 2), (356, 484));
        // Nested: a chunk's boundaries are boundaries at every finer level.
        assert_eq!(chunk_span(span, 2, 1), (356, 612));
        assert_eq!(chunk_span(span, 4, 4).0, 356);
        // Every tick of the span in exactly one chunk of a level, the last one included.
        for level in 0..6 {
            let last = chunk_of(span, level, span.1);
            assert!(chunk_span(span, level, last).1 > span.1);
            assert!(chunk_span(span, level, last).0 <= span.1);
        }
    }
}
