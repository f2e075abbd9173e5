//! The index kept beside a trace held in memory whose rows are more than a picture reads at
//! once: its pyramid ([`crate::pyramid`]) and an estimate of the rows in any window, so that views
//! draw a wide window of it from the pyramid, as they draw a store's, and a narrow one from the rows.

use rayon::prelude::*;

use crate::pyramid::{Pyramid, PyramidBuilder, Shape};
use crate::{Intervals, Messages};

/// Rows a trace in memory may hold before it gets an index ([`index`]), and that a window of
/// it may hold before it is drawn from the index instead of rescanned: below this a timeline
/// from the rows takes about 100 ms on two cores (BENCHMARKS.md); the index's finest level has
/// 2,048 time bins, at least a bin per pixel column in the windows drawn from it.
pub const INDEX_ROWS: u64 = 1_000_000;

/// Bins of the in-memory rows' histogram ([`RowsInMemory`]).
const ROW_BINS: u64 = 4096;

/// How many of an in-memory trace's rows (messages by send time, intervals by start) fall in
/// each of [`ROW_BINS`] time bins: what a window holds, estimated without scanning the rows.
#[derive(Debug)]
pub struct RowsInMemory {
    t0: u64,
    bin_ticks: u64,
    rows: Vec<u64>,
}

impl RowsInMemory {
    fn new(m: &Messages, v: &Intervals, span: (u64, u64)) -> Self {
        let bin_ticks = (span.1 - span.0).div_ceil(ROW_BINS).max(1) + 1;
        let bin = |t: u64| (t.saturating_sub(span.0) / bin_ticks).min(ROW_BINS - 1) as usize;
        let count = |times: &[u64]| {
            times
                .par_chunks(1 << 16)
                .fold(
                    || vec![0u64; ROW_BINS as usize],
                    |mut h, c| {
                        for &t in c {
                            h[bin(t)] += 1;
                        }
                        h
                    },
                )
                .reduce(
                    || vec![0u64; ROW_BINS as usize],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                        a
                    },
                )
        };
        let (a, b) = rayon::join(|| count(&m.send_time), || count(&v.start));
        Self { t0: span.0, bin_ticks, rows: a.into_iter().zip(b).map(|(x, y)| x + y).collect() }
    }
}

impl crate::dataset::WindowRows for RowsInMemory {
    /// The rows of the bins the window overlaps (an upper bound, whole bins).
    fn estimate(&self, window: (u64, u64)) -> u64 {
        let bin = |t: u64| (t.saturating_sub(self.t0) / self.bin_ticks).min(ROW_BINS - 1) as usize;
        self.rows[bin(window.0)..=bin(window.1.max(window.0))].iter().sum()
    }

    /// Never needed: the rows are in the dataset's trace.
    fn read(&self, _: (u64, u64)) -> Result<(Messages, Intervals), String> {
        Err("the rows of an in-memory trace are in its trace, not in its index".into())
    }
}

/// The index of a trace held in memory with more than [`INDEX_ROWS`] messages and intervals:
/// its pyramid, summed in one pass over the rows, with a histogram of its rows over time; `None`
/// for a smaller trace, one without ranks or times, or one whose rows are on disk.
pub fn index(d: &crate::dataset::Dataset) -> Option<crate::dataset::OutOfCore> {
    PyramidSpan::of_index(d).map(|span| index_with(d, span, None))
}

/// What a pyramid covers: its first and last tick, ranks and state classes; its shape is
/// [`Shape::new`] of these (a store's manifest records them, never the shape itself).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct PyramidSpan {
    pub t0: u64,
    pub t1: u64,
    pub ranks: u32,
    pub states: u32,
}

impl PyramidSpan {
    /// What the [`index`] of `d` covers (receive times too, as the views' span of a trace);
    /// `None` where `d` gets no index.
    pub fn of_index(d: &crate::dataset::Dataset) -> Option<Self> {
        let t = &d.trace;
        let (m, v) = (&t.messages, &t.intervals);
        let rows = (m.source.len() + v.start.len()) as u64;
        if d.out_of_core.is_some() || rows <= INDEX_ROWS {
            return None;
        }
        let both = |x: (u64, u64), y: (u64, u64)| (x.0.min(y.0), x.1.max(y.1));
        let lo_hi = |times: &Vec<u64>| {
            times.par_iter().filter(|&&x| x != u64::MAX).map(|&x| (x, x)).reduce(|| (u64::MAX, 0), both)
        };
        let columns = [&m.send_time, &m.recv_time, &v.start, &v.end];
        let (t0, t1) = columns.into_iter().map(lo_hi).fold((u64::MAX, 0), both);
        let ranks = u32::try_from(t.locations.name.len()).ok().filter(|&r| r > 0)?;
        let states = t.region_names.len().clamp(1, 64) as u32;
        (t0 <= t1).then_some(Self { t0, t1, ranks, states })
    }

    pub fn shape(&self) -> Shape {
        Shape::new(self.t0, self.t1, self.ranks, self.states)
    }
}

/// The [`index`] of `d` over `span` ([`PyramidSpan::of_index`]), with `summed`, a pyramid of
/// `d` summed before (kept in a file beside the trace), in place of a pass over the rows where
/// its shape is the span's; summed afresh otherwise.
pub fn index_with(
    d: &crate::dataset::Dataset,
    span: PyramidSpan,
    summed: Option<Pyramid>,
) -> crate::dataset::OutOfCore {
    let (m, v) = (&d.trace.messages, &d.trace.intervals);
    let pyramid = match summed.filter(|p| p.shape == span.shape()) {
        Some(p) => p,
        None => {
            let mut builder = PyramidBuilder::new(span.shape());
            builder.add_messages(m);
            builder.add_intervals(v);
            builder.finish()
        }
    };
    let span = (span.t0, span.t1);
    crate::dataset::OutOfCore {
        pyramid: std::sync::Arc::new(pyramid),
        rows: std::sync::Arc::new(RowsInMemory::new(m, v, span)),
        messages: m.source.len() as u64,
        intervals: v.start.len() as u64,
        span,
        pairs: Default::default(),
    }
}

/// Gives `d` its [`index`] where it needs one ([`set_index`]).
pub fn attach_index(d: &mut crate::dataset::Dataset) {
    let index = index(d);
    set_index(d, index);
}

/// Gives `d` `index`, and then ranks its states as the index's pictures do, by every interval's
/// time as the pyramid sums it: the timeline's colours and legend stay the same as a window
/// moves between the index and the rows.
pub fn set_index(d: &mut crate::dataset::Dataset, index: Option<crate::dataset::OutOfCore>) {
    d.index = index;
    if let Some(index) = &d.index {
        d.trace.state_ticks_of_whole = Some(index.pyramid.state_ticks());
    }
}
