//! The timeline's command-line arguments.

use exaviz_compute::BundleParams;
use exaviz_model::selection::Search;

use super::counters::CounterChoice;
use super::options::{DEFAULT_MESSAGE_OPACITY, Rows, StateMode, SummaryTrack, TimelineBundle, TimelineOptions};
use crate::plot::Mix;

/// Bundling of the timeline's message lines, as the command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimelineBundleArg {
    /// Straight lines.
    None,
    /// Image-space KDE bundling (this engine's).
    Kde,
    /// Brendel et al.'s hierarchy of mean-shift endpoint clusters, degree-2 B-splines.
    Hierarchical,
    /// Brendel et al.'s grid-based routing with diagonals between endpoint clusters.
    Grid,
}

/// Which locations share a row, as the command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RowsArg {
    /// Grouped by behaviour where the locations outnumber the pixel rows eight to one, else one
    /// each.
    Auto,
    /// Grouped by what they do in the window: one band per group (its count and range as its
    /// label), and a row of its own for each location that differs from its group.
    Behaviour,
    /// One row per location in the trace's order (several to a pixel row where they
    /// outnumber them).
    Index,
}

/// Whether the summary track is drawn, as the command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryArg {
    /// Where the rows are grouped by behaviour.
    Auto,
    On,
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatesArg {
    /// Each pixel shows the state covering most of its time and processes.
    Dominant,
    /// The states' shares stacked up each process row (rows one pixel high show the middle state).
    Stacked,
    /// The dominant state dimmed, with the late-sender waiting of receives (Scalasca's wait
    /// state: a receive or wait begun before its message was sent) over it in vermillion.
    Waits,
}

/// The timeline's look, shared with the linked MPI view.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct TimelineLook {
    /// Edge bundling of the message lines.
    #[arg(long, value_enum, default_value = "none")]
    pub bundle: TimelineBundleArg,
    /// Bundling strength β of the hierarchical and grid bundling (0 straight, 1 fully bundled).
    #[arg(long, default_value_t = exaviz_render::bundling::DEFAULT_BETA, value_parser = crate::options::parse_beta)]
    pub beta: f32,
    /// How a pixel shows the states of the time and processes it covers.
    #[arg(long, value_enum, default_value = "dominant")]
    pub states: StatesArg,
    /// Opacity of the densest message pixels, 0 (messages hidden) to 1; the others are fainter by
    /// their rank among message pixels (histogram equalisation).
    #[arg(long, default_value_t = DEFAULT_MESSAGE_OPACITY, value_parser = crate::options::parse_opacity)]
    pub message_opacity: f32,
    /// Light the regions (slices) whose names contain NAME, ignoring case, at any depth, dim
    /// the rest and say how many there are; in the window `/` searches and n / N step through
    /// the matches.
    #[arg(long, value_name = "NAME")]
    pub highlight: Option<Search>,
    /// Give locations without any event (interval, message, collective) a row too; by default
    /// they are hidden and counted under the time axis.
    #[arg(long)]
    pub empty_rows: bool,
    /// Draw each group of rows (consecutive locations whose names share their first part, as
    /// a node or a process) collapsed to one row; in the window a click on a row's label
    /// collapses or opens its group.
    #[arg(long)]
    pub collapse: bool,
    /// Draw each row with its location's innermost state only; by default a row tall enough
    /// is cut into a band per nesting level (the outermost region on top), as Perfetto's
    /// slices stack.
    #[arg(long)]
    pub innermost: bool,
    /// Counter tracks under the rows (OTF2 metrics, Chrome counter events): auto (the series
    /// that change, up to six), none, all (as many as fit), or the series whose names contain
    /// NAME. An accumulating counter (energy) is drawn as its rate.
    #[arg(long, default_value = "auto", value_name = "auto|none|all|NAME")]
    pub counters: CounterChoice,
    /// Outline the critical path (as `exaviz critical-path` finds it): its stretches on each
    /// row framed in magenta, joined by lines where it crosses rows through a message, a
    /// collective, a kernel launch or a synchronisation (traces in memory; a store's pictures
    /// drawn from its pyramid do not show it).
    #[arg(long)]
    pub critical_path: bool,
    /// Which locations share a row: auto groups them by behaviour where they outnumber the
    /// plot's pixel rows eight to one (a band per group of locations that do the same, a row of
    /// its own for each that differs, so that one rank of 100,000 stays visible), behaviour
    /// always, index one row per location in the trace's order.
    #[arg(long, value_enum, default_value = "auto")]
    pub rows: RowsArg,
    /// A summary track above the rows: the share of the shown locations in each state over
    /// time (a column's states stacked by their share, the legend's order from the bottom), the
    /// count of locations drawn apart from their groups above it. auto: where the rows are
    /// grouped by behaviour.
    #[arg(long, value_enum, default_value = "auto")]
    pub summary: SummaryArg,
}

impl TimelineLook {
    /// The timeline's options with these choices, `mix` and the time window of `select`.
    pub fn options(&self, mix: Mix, select: &crate::options::TraceSelectArgs) -> TimelineOptions {
        let beta = self.beta;
        let bundle = match self.bundle {
            TimelineBundleArg::None => TimelineBundle::None,
            TimelineBundleArg::Kde => TimelineBundle::Kde(BundleParams::default()),
            TimelineBundleArg::Hierarchical => TimelineBundle::Hierarchical { beta },
            TimelineBundleArg::Grid => TimelineBundle::Grid { beta },
        };
        let states = match self.states {
            StatesArg::Dominant => StateMode::Dominant,
            StatesArg::Stacked => StateMode::Stacked,
            StatesArg::Waits => StateMode::Dominant,
        };
        TimelineOptions {
            width: 1024,
            height: 768,
            window_s: select.from.zip(select.to),
            bundle,
            mix,
            states,
            message_opacity: self.message_opacity,
            search: self.highlight,
            counters: self.counters,
            waits: self.states == StatesArg::Waits,
            show_empty: self.empty_rows,
            folded: None,
            opened: None,
            innermost: self.innermost,
            critical_path: self.critical_path,
            rows: match self.rows {
                RowsArg::Auto => Rows::Auto,
                RowsArg::Behaviour => Rows::Behaviour,
                RowsArg::Index => Rows::Index,
            },
            summary: match self.summary {
                SummaryArg::Auto => SummaryTrack::Auto,
                SummaryArg::On => SummaryTrack::On,
                SummaryArg::Off => SummaryTrack::Off,
            },
            messages: None,
        }
    }
}
