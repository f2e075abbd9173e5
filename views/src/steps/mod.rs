//! The `steps` view: a run's steps across, its locations down, each cell coloured by how far
//! that location's work in the step (its time in regions other than waiting) lies from its
//! peers' median in the step (locations of one kind whose names differ only in their numbers:
//! the ranks' main threads, the ranks' GPU streams), on a diverging, colour-blind-safe map. A straggler stands
//! out as a row, a slow step as a column. Steps are found as `exaviz diff` finds them
//! (Kineto's `ProfilerStep#N`, step annotations, else the iterations of an MPI program found by
//! repetition); where the locations outnumber the plot's pixel rows they are grouped by their
//! work step by step ([`crate::rows`]), each group a band drawn from its members' median and
//! each location far from its group on a row of its own.

mod scene;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};

use super::ViewError;
use super::contract::{self, Class, Drawn, Frame, Prepared};

pub use scene::{StepWork, StepsPick, step_work, steps_scene};

/// The steps view through the view contract.
pub struct StepsView;

impl contract::View for StepsView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        super::trace::needs_processes(d, Self::NAME, 1)
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let (scene, picker) = steps_scene(d, b, (f.width, f.height), sel.window_s)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}

/// `exaviz render --view steps` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct StepsArgs {
    /// Start of the time window, seconds since the trace's start: only the steps that begin in
    /// it are drawn.
    #[arg(long, requires = "to")]
    pub from: Option<f64>,
    /// End of the time window, seconds since the trace's start.
    #[arg(long, requires = "from")]
    pub to: Option<f64>,
}

impl Class for StepsView {
    const NAME: &'static str = "steps";
    const ABOUT: &'static str = "A run's steps across, its locations down: each location's work in each step against the step's median (stragglers as rows, slow steps as columns).";
    type Args = StepsArgs;

    fn new(_: &StepsArgs) -> Self {
        StepsView
    }

    fn selection(args: &StepsArgs) -> Selection {
        Selection { window_s: args.from.zip(args.to), ..Default::default() }
    }
}
