//! The `mds` view (TorusTrafficND §IV): the torus embedded by MDS on its hop-distance matrix
//! (full, k-hop or immediate-neighbour scope), links coloured by traffic
//! ([`crate::torus::embedding`] draws it).

use exaviz_render::layout::embed::Embedding;

use crate::contract::Class;
use crate::options::ColormapArgs;
use crate::torus::embedding::{EmbeddingOptions, EmbeddingView};

pub type MdsView = EmbeddingView<MdsArgs>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// Every pair at its torus distance.
    Full,
    /// Pairs within --hops hops at their distance, the rest "infinite".
    Hops,
    /// Torus neighbours at distance 1, the rest "infinite".
    Immediate,
}

/// `exaviz render --view mds` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MdsArgs {
    /// Which distances the embedding keeps.
    #[arg(long, value_enum, default_value = "full")]
    pub scope: ScopeArg,
    /// With --scope hops: the most hops kept.
    #[arg(long, default_value_t = exaviz_render::layout::embed::PAPER_HOPS, value_parser = clap::value_parser!(u32).range(1..))]
    pub hops: u32,
    #[command(flatten)]
    pub colormap: ColormapArgs,
}

impl Class for MdsView {
    const NAME: &'static str = "mds";
    const ABOUT: &'static str =
        "Torus embedded by MDS on its hop-distance matrix, links coloured by traffic (TorusTrafficND).";
    type Args = MdsArgs;

    fn new(args: &MdsArgs) -> Self {
        let embedding = match args.scope {
            ScopeArg::Full => Embedding::MdsFull,
            ScopeArg::Hops => Embedding::MdsHops(args.hops),
            ScopeArg::Immediate => Embedding::MdsImmediate,
        };
        let colormap = args.colormap.colormap.into();
        EmbeddingView::of(EmbeddingOptions { width: 1024, height: 768, embedding, colormap })
    }
}
