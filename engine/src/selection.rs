//! What users select, in one place for every view: torus nodes and coordinates, a time slice or
//! window, a pair of ranks, bundles, a tracked message, a zoom rectangle. Views read the parts
//! they know and say which parts change what they prepare ([`Parts`]); the window compares two
//! selections ([`Selection::changed`]) to know whether a gesture needs a new `prepare` or only a
//! new `draw`.

use crate::model::Dataset;
use crate::views::ViewError;
use crate::views::group::BundleGroup;
use crate::views::select::DimFilter;

/// The shared selection state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Selection {
    /// A torus node (ring, parcoords, themeriver, linked).
    pub node: Option<u32>,
    /// Torus coordinates selected per dimension.
    pub dims: Option<DimFilter>,
    /// The torus views' time slice `[from, to)`, trace ticks.
    pub time_slice: Option<(u64, u64)>,
    /// The MPI views' time window, seconds since the trace's start (the timeline's zoom; the
    /// matrix, chord and sendrecv count only the messages sent in it).
    pub window_s: Option<(f64, f64)>,
    /// A sender and receiver rank (MPI views): its messages are highlighted.
    pub pair: Option<(u32, u32)>,
    /// The ring's bundles (pairs of Hilbert blocks).
    pub group: Option<BundleGroup>,
    /// The node whose first message the ring tracks.
    pub track: Option<u32>,
    /// The ring's zoom rectangle, in the unzoomed picture's pixels.
    pub zoom: Option<[f32; 4]>,
    /// The fat tree's active traffic range (bytes per link over the active time range, which
    /// is `time_slice` in counter intervals).
    pub traffic: Option<TrafficRange>,
    /// Jobs selected in a job table, by id.
    pub jobs: Option<JobSet>,
    /// A route query: from switch SRC (to switch DST).
    pub route: Option<(u32, Option<u32>)>,
}

/// A range of per-link traffic, or what lies outside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrafficRange {
    pub lo: f64,
    pub hi: f64,
    pub complement: bool,
}

/// Up to [`JobSet::MAX`] job ids, in the order selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSet {
    ids: [u64; JobSet::MAX],
    len: u8,
}

impl JobSet {
    pub const MAX: usize = 8;

    /// The first [`JobSet::MAX`] of `ids`, each once.
    pub fn of(ids: &[u64]) -> Self {
        let mut s = Self { ids: [0; Self::MAX], len: 0 };
        for &id in ids {
            if (s.len as usize) < Self::MAX && !s.ids().contains(&id) {
                s.ids[s.len as usize] = id;
                s.len += 1;
            }
        }
        s
    }

    pub fn ids(&self) -> &[u64] {
        &self.ids[..self.len as usize]
    }
}

/// A set of [`Selection`] parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts(u16);

impl Parts {
    pub const NONE: Self = Self(0);
    pub const NODE: Self = Self(1);
    pub const DIMS: Self = Self(2);
    pub const TIME_SLICE: Self = Self(4);
    pub const WINDOW: Self = Self(8);
    pub const PAIR: Self = Self(16);
    pub const GROUP: Self = Self(32);
    pub const TRACK: Self = Self(64);
    pub const ZOOM: Self = Self(128);
    pub const TRAFFIC: Self = Self(256);
    pub const JOBS: Self = Self(512);
    pub const ROUTE: Self = Self(1024);
    pub const ALL: Self = Self(2047);

    pub const fn or(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for Parts {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        self.or(other)
    }
}

impl Selection {
    /// The parts in which `self` and `other` differ.
    pub fn changed(&self, other: &Selection) -> Parts {
        let mut p = Parts::NONE;
        let mut mark = |differs: bool, part: Parts| {
            if differs {
                p = p | part;
            }
        };
        mark(self.node != other.node, Parts::NODE);
        mark(self.dims != other.dims, Parts::DIMS);
        mark(self.time_slice != other.time_slice, Parts::TIME_SLICE);
        mark(self.window_s != other.window_s, Parts::WINDOW);
        mark(self.pair != other.pair, Parts::PAIR);
        mark(self.group != other.group, Parts::GROUP);
        mark(self.track != other.track, Parts::TRACK);
        mark(self.zoom != other.zoom, Parts::ZOOM);
        mark(self.traffic != other.traffic, Parts::TRAFFIC);
        mark(self.jobs != other.jobs, Parts::JOBS);
        mark(self.route != other.route, Parts::ROUTE);
        p
    }

    /// Only the parts in `parts`, the rest cleared.
    pub fn only(&self, parts: Parts) -> Selection {
        Selection::default().replaced(parts, self)
    }

    /// This selection with the parts in `parts` taken from `from`.
    pub fn replaced(&self, parts: Parts, from: &Selection) -> Selection {
        let take = |part: Parts| parts.intersects(part);
        Selection {
            node: if take(Parts::NODE) { from.node } else { self.node },
            dims: if take(Parts::DIMS) { from.dims } else { self.dims },
            time_slice: if take(Parts::TIME_SLICE) { from.time_slice } else { self.time_slice },
            window_s: if take(Parts::WINDOW) { from.window_s } else { self.window_s },
            pair: if take(Parts::PAIR) { from.pair } else { self.pair },
            group: if take(Parts::GROUP) { from.group } else { self.group },
            track: if take(Parts::TRACK) { from.track } else { self.track },
            zoom: if take(Parts::ZOOM) { from.zoom } else { self.zoom },
            traffic: if take(Parts::TRAFFIC) { from.traffic } else { self.traffic },
            jobs: if take(Parts::JOBS) { from.jobs } else { self.jobs },
            route: if take(Parts::ROUTE) { from.route } else { self.route },
        }
    }

    /// The parts that are set.
    pub fn set_parts(&self) -> Parts {
        self.changed(&Selection::default())
    }

    /// Checks the selection against the dataset once, for every view: nodes and ranks that
    /// exist, a non-empty slice and window, coordinates inside the torus. The error names the
    /// option (`--node`, `--time-slice`, ...), as the command line spells it.
    pub fn validate(&self, dataset: &Dataset) -> Result<(), ViewError> {
        let bad = |s: String| Err(ViewError::Unsupported(s));
        let nodes = dataset.topology.as_ref().map_or(0, |t| t.node_count());
        let last = nodes.saturating_sub(1);
        if let Some(v) = self.node.filter(|&v| v as usize >= nodes) {
            return bad(format!("--node {v}: node {v} is not in the torus (nodes 0 to {last})"));
        }
        // On a training run the tracked part is a device (the Marey view's highlighted row).
        if let Some(t) = dataset.training.as_deref() {
            if let Some(v) = self.track.filter(|&v| v as usize >= t.devices.len()) {
                return bad(format!(
                    "--device {v}: the run has {} devices (0 to {})",
                    t.devices.len(),
                    t.devices.len().saturating_sub(1)
                ));
            }
        } else if let Some(v) = self.track.filter(|&v| v as usize >= nodes) {
            return bad(format!("--track {v}: cannot track node {v}'s message: the torus has nodes 0 to {last}"));
        }
        if let Some((a, b)) = self.time_slice
            && a >= b
        {
            return bad(format!("--time-slice {a}:{b} is empty (the start must be below the end)"));
        }
        if let Some((a, b)) = self.window_s
            && !(a.is_finite() && b.is_finite() && 0.0 <= a && a < b)
        {
            return bad(format!("--from {a} --to {b}: the time window is empty or negative"));
        }
        let ranks = dataset.trace.locations.name.len();
        if let Some((s, r)) = self.pair
            && (s as usize >= ranks || r as usize >= ranks)
        {
            return bad(format!("--pair {s},{r}: the trace has {ranks} ranks (0 to {})", ranks.saturating_sub(1)));
        }
        if let (Some(f), Some(t)) = (self.dims, dataset.topology.as_ref()) {
            f.check(t).map_err(|e| ViewError::Unsupported(format!("--select: {e}")))?;
        }
        if let Some([x0, y0, x1, y1]) = self.zoom
            && !(x1 > x0 && y1 > y0)
        {
            return bad(format!("--zoom {x0},{y0},{x1},{y1}: the rectangle is empty"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_names_exactly_the_parts_that_differ() {
        let a = Selection::default();
        let b = Selection { node: Some(3), window_s: Some((0.0, 1.0)), ..a };
        let c = b.changed(&a);
        assert!(c.intersects(Parts::NODE) && c.intersects(Parts::WINDOW));
        assert!(!c.intersects(Parts::PAIR | Parts::DIMS | Parts::TIME_SLICE | Parts::ZOOM));
        assert!(a.changed(&a).is_empty());
        assert_eq!(b.only(Parts::WINDOW), Selection { window_s: Some((0.0, 1.0)), ..a });
        assert_eq!(b.set_parts(), Parts::NODE | Parts::WINDOW);
    }

    #[test]
    fn validation_names_the_option() {
        let d = Dataset::default();
        let err = |s: Selection| s.validate(&d).expect_err("invalid").to_string();
        assert!(err(Selection { node: Some(0), ..Default::default() }).starts_with("--node 0"));
        assert!(err(Selection { time_slice: Some((5, 5)), ..Default::default() }).starts_with("--time-slice"));
        assert!(err(Selection { window_s: Some((2.0, 1.0)), ..Default::default() }).contains("empty"));
        assert!(err(Selection { pair: Some((0, 1)), ..Default::default() }).starts_with("--pair"));
        assert!(Selection::default().validate(&d).is_ok());
    }
}
