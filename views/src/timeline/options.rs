//! What a timeline is asked to draw: its options (window, bundling, states, search, counters,
//! waits, folding, critical path) and the constants of its layout that every layer reads.

use exaviz_compute::BundleParams;
use exaviz_model::selection::{Folded, MessageFilter, Search};

use super::counters::CounterChoice;
use crate::plot::Mix;

#[derive(Clone, Copy, Debug)]
pub struct TimelineOptions {
    pub width: u32,
    pub height: u32,
    /// Time window in seconds since the trace's start (`None`: the whole trace). Zooming is
    /// choosing a window.
    pub window_s: Option<(f64, f64)>,
    /// How message lines are bundled.
    pub bundle: TimelineBundle,
    /// How overlapping message lines combine.
    pub mix: Mix,
    /// How a pixel shows the states it covers.
    pub states: StateMode,
    /// Opacity of the densest message pixels (0: messages hidden, 1: opaque); the others are
    /// more transparent by their rank among the message pixels (histogram equalisation).
    pub message_opacity: f32,
    /// Region names searched for: their intervals are lit and the rest dimmed.
    pub search: Option<Search>,
    /// Which counter series are drawn as tracks under the rows.
    pub counters: CounterChoice,
    /// Whether the late-sender waiting of receives is drawn over dimmed states.
    pub waits: bool,
    /// Whether locations without events get a track.
    pub show_empty: bool,
    /// The groups of tracks drawn collapsed.
    pub folded: Option<Folded>,
    /// The band of rows grouped by behaviour opened into its locations, by one of them.
    pub opened: Option<u32>,
    /// Whether a row shows only its location's innermost state, rather than a band per
    /// nesting level where the row is tall enough.
    pub innermost: bool,
    /// Whether the critical path ([`exaviz_analysis::critical_path`]) is outlined over the rows.
    pub critical_path: bool,
    /// Which locations share a row: grouped by behaviour where they outnumber the pixel rows
    /// eight to one (`Rows::Auto`), always, or each its own row in the trace's order.
    pub rows: Rows,
    /// Whether a summary track above the rows shows the share of the shown locations in each
    /// state over time: by default where the rows are grouped by behaviour.
    pub summary: SummaryTrack,
    /// Which messages are drawn (`None`: all).
    pub messages: Option<MessageFilter>,
}

/// Whether the timeline draws its summary track (the share of locations in each state over
/// time, as Vampir's summary timeline).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SummaryTrack {
    /// Where the rows are grouped by behaviour (the locations outnumber the pixel rows).
    #[default]
    Auto,
    On,
    Off,
}

/// Which locations share a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rows {
    /// Grouped by behaviour where the shown locations outnumber the plot's pixel rows eight
    /// to one, else in the trace's order.
    #[default]
    Auto,
    /// Grouped by behaviour in every window: a band per group, a row per deviant
    /// ([`crate::rows`]).
    Behaviour,
    /// Every location in the trace's order, several to a pixel row where they outnumber them.
    Index,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        Self {
            width: 1024,
            height: 768,
            window_s: None,
            bundle: TimelineBundle::None,
            mix: Mix::Alpha,
            states: StateMode::Dominant,
            message_opacity: DEFAULT_MESSAGE_OPACITY,
            search: None,
            counters: CounterChoice::Auto,
            waits: false,
            show_empty: false,
            folded: None,
            opened: None,
            innermost: false,
            critical_path: false,
            rows: Rows::Auto,
            summary: SummaryTrack::Auto,
            messages: None,
        }
    }
}

/// The message layer's opacity where it is densest, by default: the states show through.
pub const DEFAULT_MESSAGE_OPACITY: f32 = 0.6;

/// How a pixel shows the states of the time and the processes it covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateMode {
    /// The state covering most of the pixel.
    #[default]
    Dominant,
    /// The states' shares stacked up each process row, in the legend's order from the bottom
    /// (a row one pixel high shows the state at the middle of its stack).
    Stacked,
}

/// Bundling of the timeline's message lines.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum TimelineBundle {
    /// Straight lines from send to receive.
    #[default]
    None,
    /// This engine's image-space KDE bundling (stage `kde_bundle`).
    Kde(BundleParams),
    /// Brendel et al.'s hierarchical bundling: each process's send and receive events clustered with
    /// mean shift, the cluster centres clustered again (three levels), degree-2 B-splines
    /// routed through the hierarchy with strength `beta`.
    Hierarchical { beta: f32 },
    /// Brendel et al.'s grid-based bundling: endpoint clusters as above, then shortest paths with
    /// diagonals over a grid, degree-2 B-splines with strength `beta`.
    Grid { beta: f32 },
}

impl TimelineBundle {
    pub(super) fn label(&self) -> &'static str {
        match self {
            Self::None => "",
            Self::Kde(_) => ", KDE bundled",
            Self::Hierarchical { .. } => ", hierarchical bundles",
            Self::Grid { .. } => ", grid bundles",
        }
    }
}

/// The plot's margins around the rows in a picture `width` pixels wide: left (the row labels
/// and the processes' headers, a sixth of the picture, 80 to 260 pixels), top, right (the
/// legend), bottom (the time axis), pixels.
pub(crate) fn margin(width: u32) -> [u32; 4] {
    [(width / 6).clamp(80, 260), 48, 200, 52]
}

/// Most nesting levels a row is cut into.
pub(super) const LEVELS: u32 = 8;
