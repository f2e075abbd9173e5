//! Each location's innermost states as pieces (start, end, region), written out for the
//! device: over a trace held in memory, or over a chunk of a store's rows ([`super::ring`]).

use rayon::prelude::*;

use super::index::TimelineIndex;
use exaviz_compute::timeline_pixels::{Columns, MessageColumns, SpanColumns};
use exaviz_model::{Intervals, Messages};

/// Each location's innermost state over the whole trace as pieces (start, end, region), the
/// walk of [`super::index::ByLocation::innermost`] written out once for the device.
#[derive(Default)]
pub(super) struct Pieces {
    starts: Vec<u64>,
    ends: Vec<u64>,
    locations: Vec<u32>,
    kinds: Vec<u32>,
}

impl Pieces {
    pub(super) fn new(index: &TimelineIndex) -> Self {
        Self::walked(index.by.ranges.len(), |l, push| index.by.innermost(l, push))
    }

    /// The pieces `walk(l, push)` gives of each of `n` locations.
    pub(super) fn walked(n: usize, walk: impl Fn(usize, &mut dyn FnMut(u64, u64, u32)) + Sync) -> Self {
        let per: Vec<Vec<(u64, u64, u32)>> = (0..n)
            .into_par_iter()
            .map(|l| {
                let mut v = Vec::new();
                walk(l, &mut |a, b, k| v.push((a, b, k)));
                v
            })
            .collect();
        let total = per.iter().map(Vec::len).sum();
        let mut p = Self {
            starts: Vec::with_capacity(total),
            ends: Vec::with_capacity(total),
            locations: Vec::with_capacity(total),
            kinds: Vec::with_capacity(total),
        };
        for (l, pieces) in per.into_iter().enumerate() {
            for (a, b, k) in pieces {
                p.starts.push(a);
                p.ends.push(b);
                p.locations.push(l as u32);
                p.kinds.push(k);
            }
        }
        p
    }

    /// Bytes of the pieces (their four columns).
    pub(super) fn bytes(&self) -> u64 {
        self.starts.len() as u64 * 24
    }

    pub(super) fn columns(&self) -> SpanColumns<'_> {
        SpanColumns {
            starts: &self.starts,
            ends: &self.ends,
            locations: &self.locations,
            kinds: &self.kinds,
            depths: None,
        }
    }
}

/// The columns `timeline_pixels` reads of `pieces`, the intervals `i` and the messages `m`, kept
/// under `owner`.
pub(super) fn columns<'a>(
    pieces: SpanColumns<'a>,
    (i, m): (&'a Intervals, &'a Messages),
    owner: &exaviz_compute::Owner,
) -> Columns<'a> {
    Columns {
        pieces,
        intervals: Some(SpanColumns {
            starts: &i.start,
            ends: &i.end,
            locations: &i.location,
            kinds: &i.kind,
            depths: Some(&i.depth),
        }),
        messages: Some(MessageColumns {
            send: &m.send_time,
            recv: &m.recv_time,
            source: &m.source,
            destination: &m.destination,
            bytes: &m.bytes,
            tags: &m.tag,
        }),
        owner: Some(owner.clone()),
    }
}
