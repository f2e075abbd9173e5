//! The `matrix` view (Brendel et al. §III-B): the communication matrix, senders as rows and receivers
//! as columns, coloured by the number of messages, the bytes, or the mean bandwidth of each pair,
//! binned by the heatmap stage on the backend. With more processes than pixels, a cell gathers
//! a block of consecutive ranks, and the few ranks that send or receive far more than the others
//! (a heavy pair among 65,536 ranks) get a row and a column of their own, pinned at the top and
//! left and labelled, so that they are not one pixel of a block.

mod scene;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};

use super::ViewError;
use super::contract::{self, Class, Drawn, Frame, Prepared};

pub use scene::*;

/// The matrix view through the view contract.
pub struct MatrixView(pub MatrixOptions);

impl contract::View for MatrixView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        super::trace::needs_processes(d, Self::NAME, 1)
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW | Parts::MESSAGES
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW | Parts::PAIR | Parts::MESSAGES
    }

    fn reads_pyramid(&self) -> bool {
        true
    }

    /// The index's message cube gathers ranks in blocks past 256 ranks; the rows draw one cell
    /// per rank pair, so only an index of single ranks stands in for them.
    fn reads_index(&self, index: &exaviz_model::dataset::OutOfCore) -> bool {
        index.pyramid.shape.message_block == 1
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let messages = sel.messages.filter(|m| !m.is_all());
        let opts = MatrixOptions { width: f.width, height: f.height, messages, ..self.0 };
        if let Some(ooc) = &d.out_of_core {
            let window = super::trace::window_ticks(d, sel).unwrap_or(ooc.span);
            let (scene, picker) = pyramid_matrix_scene(d, b, ooc, &opts, window)?;
            return Ok(Box::new(Drawn { scene, picker }));
        }
        let (scene, picker) = matrix_scene(d, b, &opts, sel.window_s)?;
        Ok(Box::new(Drawn { scene, picker }))
    }
}

/// `exaviz render --view matrix` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MatrixArgs {
    /// What a cell shows (message count, bytes, or mean bandwidth in MB/s).
    #[arg(long, value_enum, default_value = "messages")]
    pub value: ValueArg,
    #[command(flatten)]
    pub colormap: super::options::ColormapArgs,
    #[command(flatten)]
    pub select: super::options::TraceSelectArgs,
    #[command(flatten)]
    pub filter: super::options::MessageFilterArgs,
    /// Where the ranks outnumber the plot's pixels: behaviour (ranks sending or receiving far
    /// more than the others get a row and a column of their own, pinned at the top and left,
    /// labelled) or index (every cell a block of consecutive ranks).
    #[arg(long, value_enum, default_value = "behaviour")]
    pub rows: crate::rows::Grouping,
}

impl Class for MatrixView {
    const NAME: &'static str = "matrix";
    const ABOUT: &'static str = "MPI trace: communication matrix, senders as rows, receivers as columns.";
    type Args = MatrixArgs;

    fn new(args: &MatrixArgs) -> Self {
        let (value, colormap) = (args.value.into(), args.colormap.colormap.into());
        let messages = args.filter.messages;
        MatrixView(MatrixOptions { width: 1024, height: 768, value, colormap, grouping: args.rows, messages })
    }

    fn selection(args: &MatrixArgs) -> Selection {
        Selection { messages: args.filter.messages, ..args.select.selection() }
    }
}
