//! The `radviz` view (TorusTrafficND §IV): the torus embedded by RadViz, one anchor per
//! dimension on a circle, links coloured by traffic ([`crate::views::torus::embedding`] draws it).

use crate::layout::embed::Embedding;
use crate::views::contract::Class;
use crate::views::options::ColormapArgs;
use crate::views::torus::embedding::{EmbeddingOptions, EmbeddingView};

pub type RadvizView = EmbeddingView<RadvizArgs>;

/// `exaviz render --view radviz` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct RadvizArgs {
    #[command(flatten)]
    pub colormap: ColormapArgs,
}

impl Class for RadvizView {
    const NAME: &'static str = "radviz";
    const ABOUT: &'static str =
        "Torus embedded by RadViz, one anchor per dimension, links coloured by traffic (TorusTrafficND).";
    type Args = RadvizArgs;

    fn new(args: &RadvizArgs) -> Self {
        let colormap = args.colormap.colormap.into();
        EmbeddingView::of(EmbeddingOptions { width: 1024, height: 768, embedding: Embedding::RadViz, colormap })
    }
}
