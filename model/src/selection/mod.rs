//! What users select, in one place for every view: torus nodes and coordinates, a time slice or
//! window, a pair of ranks, bundles, a tracked message, a zoom rectangle. Views read the parts
//! they know and say which parts change what they prepare ([`Parts`]); the window compares two
//! selections ([`Selection::changed`]) to know whether a gesture needs a new `prepare` or only a
//! new `draw`.

pub mod area;
pub mod dims;
pub mod group;
pub mod messages;

use dims::DimFilter;
use group::BundleGroup;

use crate::dataset::Dataset;

pub use area::Area;
pub use messages::MessageFilter;

/// A selection the dataset cannot have (a node it lacks, an empty window): one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Declares the selection's parts once: each line is a field of [`Selection`] (always an
/// `Option`) and the [`Parts`] constant naming it; [`Selection::changed`] and
/// [`Selection::replaced`] follow from the list. A new part is one line here.
macro_rules! selection_parts {
    ($($(#[doc = $doc:literal])* $field:ident: $ty:ty => $part:ident,)*) => {
        /// The shared selection state.
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct Selection {
            $($(#[doc = $doc])* pub $field: Option<$ty>,)*
        }

        /// Bit positions of the parts, in the order declared.
        #[allow(clippy::upper_case_acronyms, non_camel_case_types, dead_code)]
        enum Bit {
            $($part,)*
        }

        impl Parts {
            $(pub const $part: Self = Self(1 << Bit::$part as u32);)*
            /// Every part.
            pub const ALL: Self = Self((1u64 << [$(Bit::$part),*].len()).wrapping_sub(1) as u32);
        }

        impl Selection {
            /// The parts in which `self` and `other` differ.
            pub fn changed(&self, other: &Selection) -> Parts {
                let mut p = Parts::NONE;
                $(if self.$field != other.$field {
                    p = p | Parts::$part;
                })*
                p
            }

            /// This selection with the parts in `parts` taken from `from`.
            pub fn replaced(&self, parts: Parts, from: &Selection) -> Selection {
                Selection {
                    $($field: if parts.intersects(Parts::$part) { from.$field } else { self.$field },)*
                }
            }
        }
    };
}

selection_parts! {
    /// A torus node (ring, parcoords, themeriver, linked).
    node: u32 => NODE,
    /// Torus coordinates selected per dimension.
    dims: DimFilter => DIMS,
    /// The torus views' time slice `[from, to)`, trace ticks.
    time_slice: (u64, u64) => TIME_SLICE,
    /// The MPI views' time window, seconds since the trace's start (the timeline's zoom; the
    /// matrix, chord and sendrecv count only the messages sent in it).
    window_s: (f64, f64) => WINDOW,
    /// A sender and receiver rank (MPI views): its messages are highlighted.
    pair: (u32, u32) => PAIR,
    /// The ring's bundles (pairs of Hilbert blocks).
    group: BundleGroup => GROUP,
    /// The node whose first message the ring tracks.
    track: u32 => TRACK,
    /// The ring's zoom rectangle, in the unzoomed picture's pixels.
    zoom: [f32; 4] => ZOOM,
    /// The fat tree's active traffic range (bytes per link over the active time range, which
    /// is `time_slice` in counter intervals).
    traffic: TrafficRange => TRAFFIC,
    /// Jobs selected in a job table, by id.
    jobs: JobSet => JOBS,
    /// A route query: from switch SRC (to switch DST).
    route: (u32, Option<u32>) => ROUTE,
    /// Text searched for in region (slice) names: the timeline highlights the matches.
    search: Search => SEARCH,
    /// An area of a trace (a time window over a range of locations) whose statistics are asked
    /// for: the timeline outlines it and sums it up (`exaviz_analysis::summary`).
    area: Area => AREA,
    /// One message (its row in the trace's messages), followed from a click: the timeline
    /// marks both ends and its keys move the window to either.
    message: u32 => MESSAGE,
    /// The timeline's groups of tracks drawn collapsed, one track each.
    folded: Folded => FOLDED,
    /// The search's current match (its interval's time on its location), the one `n` and `N`
    /// last stepped to: the timeline marks it.
    found: Area => FOUND,
    /// An operator of a training step, by name (an HLO instruction, a kernel): the strategy
    /// view outlines its node and namespace, the Marey view its bands on every device.
    operator: Search => OPERATOR,
    /// Devices of a training run, first to last by index (stage, then rank order): the Marey
    /// view draws only them (a click on a stage in the topology view selects its devices).
    devices: (u32, u32) => DEVICES,
    /// A band of the timeline's rows grouped by behaviour opened into its locations, named by
    /// one of them: the band holding it draws its locations a row each.
    opened: u32 => OPENED,
    /// Whether the timeline outlines the critical path (`exaviz_analysis::critical_path`); `None`: as its
    /// options say (`--critical-path`).
    critical: bool => CRITICAL,
    /// Which messages the timeline and the matrix draw (sizes, tag, senders, receivers).
    messages: MessageFilter => MESSAGES,
}

/// Groups of tracks collapsed, by index (the first 64 groups; later ones stay open).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Folded(u64);

impl Folded {
    /// Every group collapsed.
    pub const ALL: Self = Self(u64::MAX);

    pub fn holds(&self, group: u32) -> bool {
        group < 64 && (self.0 >> group) & 1 == 1
    }

    /// These groups with `group` collapsed if it was open, opened if it was collapsed.
    pub fn toggled(self, group: u32) -> Self {
        if group < 64 { Self(self.0 ^ (1 << group)) } else { self }
    }
}

/// Text searched for in names, at most [`Search::MAX`] bytes (kept inline so that a selection
/// stays `Copy`). Matches ignore ASCII case.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Search {
    bytes: [u8; Search::MAX],
    len: u8,
}

impl Search {
    pub const MAX: usize = 64;

    /// `text` as a search, or why it cannot be one (empty, or longer than [`Search::MAX`] bytes).
    pub fn new(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the search text is empty".into());
        }
        if text.len() > Self::MAX {
            return Err(format!(
                "the search text is {} bytes long, more than the {} searched for",
                text.len(),
                Self::MAX
            ));
        }
        let mut bytes = [0; Self::MAX];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Ok(Self { bytes, len: text.len() as u8 })
    }

    pub fn as_str(&self) -> &str {
        // Built from a `&str` whole, so always UTF-8.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }

    /// Whether `name` contains the text, ignoring ASCII case.
    pub fn matches(&self, name: &str) -> bool {
        let needle = &self.bytes[..self.len as usize];
        name.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
    }
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Search({:?})", self.as_str())
    }
}

impl std::str::FromStr for Search {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::new(s)
    }
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

/// A set of [`Selection`] parts (its constants come from `selection_parts!`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts(u32);

impl Parts {
    pub const NONE: Self = Self(0);

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
    /// Only the parts in `parts`, the rest cleared.
    pub fn only(&self, parts: Parts) -> Selection {
        Selection::default().replaced(parts, self)
    }

    /// The parts that are set.
    pub fn set_parts(&self) -> Parts {
        self.changed(&Selection::default())
    }

    /// Checks the selection against the dataset once, for every view: nodes and ranks that
    /// exist, a non-empty slice and window, coordinates inside the torus. The error names the
    /// option (`--node`, `--time-slice`, ...), as the command line spells it.
    pub fn validate(&self, dataset: &Dataset) -> Result<(), Invalid> {
        let bad = |s: String| Err(Invalid(s));
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
        if let Some((a, b)) = self.devices
            && (a > b || dataset.training.as_deref().is_some_and(|t| b as usize >= t.devices.len()))
        {
            return bad(format!("devices {a}-{b}: not a range of the run's devices"));
        }
        if let Some((a, b)) = self.window_s
            && !(a.is_finite() && b.is_finite() && 0.0 <= a && a < b)
        {
            return bad(format!("--from {a} --to {b}: the time window is empty or negative"));
        }
        let ranks = dataset.trace.locations.name.len();
        if let Some(a) = self.area
            && (a.from >= a.to || a.first > a.last || a.last as usize >= ranks)
        {
            return bad(format!(
                "the area of rows {}-{} over ticks {}..{} is empty or outside the trace's {ranks} rows",
                a.first, a.last, a.from, a.to
            ));
        }
        if let Some(m) = self.message
            && m as usize >= dataset.trace.messages.source.len()
            && dataset.out_of_core.is_none()
        {
            return bad(format!("message {m} is not in the trace ({} messages)", dataset.trace.messages.source.len()));
        }
        if let Some((s, r)) = self.pair
            && (s as usize >= ranks || r as usize >= ranks)
        {
            return bad(format!("--pair {s},{r}: the trace has {ranks} ranks (0 to {})", ranks.saturating_sub(1)));
        }
        if let (Some(f), Some(t)) = (self.dims, dataset.topology.as_ref()) {
            f.check(t).map_err(|e| Invalid(format!("--select: {e}")))?;
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
    fn every_part_is_its_own_bit_and_all_holds_them() {
        let parts = [
            Parts::NODE,
            Parts::DIMS,
            Parts::TIME_SLICE,
            Parts::WINDOW,
            Parts::PAIR,
            Parts::GROUP,
            Parts::TRACK,
            Parts::ZOOM,
            Parts::TRAFFIC,
            Parts::JOBS,
            Parts::ROUTE,
            Parts::SEARCH,
            Parts::AREA,
            Parts::MESSAGE,
            Parts::FOLDED,
            Parts::FOUND,
            Parts::OPERATOR,
            Parts::DEVICES,
            Parts::OPENED,
            Parts::CRITICAL,
            Parts::MESSAGES,
        ];
        let mut seen = Parts::NONE;
        for p in parts {
            assert!(!p.is_empty() && !seen.intersects(p), "{p:?} overlaps another part");
            seen = seen | p;
        }
        assert_eq!(seen, Parts::ALL);
        let full = Selection { node: Some(1), route: Some((2, None)), ..Default::default() };
        assert_eq!(Selection::default().replaced(Parts::ALL, &full), full);
        assert_eq!(full.replaced(Parts::ROUTE, &Selection::default()).route, None);
    }

    #[test]
    fn a_search_matches_names_ignoring_case() {
        let s = Search::new(" mpi_recv ").expect("a search");
        assert_eq!(s.as_str(), "mpi_recv");
        assert!(s.matches("MPI_Recv") && s.matches("PMPI_Recv_init"));
        assert!(!s.matches("MPI_Irecv") && !s.matches("recv"));
        assert!(Search::new("  ").is_err());
        assert!(Search::new(&"x".repeat(Search::MAX + 1)).is_err());
        assert!(Search::new("é").expect("UTF-8").matches("café"));
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
