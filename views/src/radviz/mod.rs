//! The `radviz` view (TorusTrafficND §IV): the torus embedded by RadViz, one anchor per
//! dimension on a circle, links coloured by traffic ([`crate::torus::embedding`] draws it).

use exaviz_render::layout::embed::Embedding;

use crate::contract::Class;
use crate::options::ColormapArgs;
use crate::torus::embedding::{EmbeddingOptions, EmbeddingView};

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
