//! The views' command-line options. Each view's options are one clap `Args` struct beside the
//! view ([`super::contract::Class`]), so `exaviz render --view V --help`, the parser and the
//! window's panel all come from it; the groups of options several views share are here.

use clap::{Args, ValueEnum};
use exaviz_model::selection::Selection;
use exaviz_model::selection::dims::DimFilter;
use exaviz_model::selection::group::BundleGroup;
use exaviz_render::ColorMap;

use super::plot::Mix;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MapArg {
    Viridis,
    Cividis,
}

impl From<MapArg> for ColorMap {
    fn from(m: MapArg) -> Self {
        match m {
            MapArg::Viridis => ColorMap::Viridis,
            MapArg::Cividis => ColorMap::Cividis,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MixArg {
    /// Lines over each other, more opaque where more cross.
    Alpha,
    /// Colours add up, crowded paths saturate (Brendel et al.'s "hot paths").
    Additive,
}

impl From<MixArg> for Mix {
    fn from(m: MixArg) -> Self {
        match m {
            MixArg::Alpha => Mix::Alpha,
            MixArg::Additive => Mix::Additive,
        }
    }
}

/// The colour map.
#[derive(Args, Clone, Copy, Debug)]
pub struct ColormapArgs {
    /// Colour map (both are safe for colour-blind readers).
    #[arg(long, value_enum, default_value = "viridis")]
    pub colormap: MapArg,
}

/// What users select in an MPI trace.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct TraceSelectArgs {
    /// Highlight the messages from SENDER to RECEIVER (ranks), as a click on a matrix cell, a
    /// curve or a message line does in `exaviz view`.
    #[arg(long, value_name = "SENDER,RECEIVER", value_parser = parse_pair)]
    pub pair: Option<(u32, u32)>,
    /// Start of the time window, seconds since the trace's start (the matrix, chord and sendrecv
    /// views count only the messages sent in the window).
    #[arg(long, requires = "to")]
    pub from: Option<f64>,
    /// End of the time window (see --from).
    #[arg(long, requires = "from")]
    pub to: Option<f64>,
}

impl TraceSelectArgs {
    pub fn selection(&self) -> Selection {
        Selection { pair: self.pair, window_s: self.from.zip(self.to), ..Selection::default() }
    }
}

/// Which messages the timeline and the matrix draw.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct MessageFilterArgs {
    /// Only these messages: `bytes=MIN-MAX` (sizes may end in K, M, G), `tag=T`, `from=A-B`
    /// (senders), `to=C-D` (receivers), comma-separated, e.g. `bytes=64K-1M,to=0-15`. Drawn
    /// from the rows (a GPU holding them redraws each window from them); a store's picture
    /// drawn from its pyramid, which sums every message, says it is not filtered.
    #[arg(long, value_name = "FILTER", value_parser = exaviz_model::selection::MessageFilter::parse)]
    pub messages: Option<exaviz_model::selection::MessageFilter>,
}

/// What users select on a torus: nodes and a time slice.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct TorusSelectArgs {
    /// Only traffic sent from FROM up to (not including) TO, in trace ticks (steps for
    /// gen:torus-sim, phases 0 and 1 for gen:pf3d); the ring's opacity follows each channel's
    /// traffic in the slice, silent channels are grey.
    #[arg(long, value_name = "FROM:TO", value_parser = parse_slice)]
    pub time_slice: Option<(u64, u64)>,
    /// Select the nodes with these coordinates, e.g. `B=1,D=0-2` (dimensions A to E on a 5-D
    /// torus, X to Z up to 3-D, or d1, d2, ...).
    #[arg(long, value_name = "DIM=V[-W],...", value_parser = DimFilter::parse)]
    pub select: Option<DimFilter>,
    /// Select this node (id: coordinates in sequential order, the last fastest); the ring then
    /// draws only its channels, marks and address.
    #[arg(long)]
    pub node: Option<u32>,
}

impl TorusSelectArgs {
    pub fn selection(&self) -> Selection {
        Selection { node: self.node, dims: self.select, time_slice: self.time_slice, ..Selection::default() }
    }
}

/// What users select on the ring beyond nodes: bundles, a tracked message, a zoom.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct RingSelectArgs {
    /// Only the channels of these bundles, pairs of Hilbert blocks numbered as on the ring:
    /// `1-3,2` keeps the bundle between blocks 1 and 3 and the one within block 2.
    #[arg(long, value_name = "BLOCK[-BLOCK],...", value_parser = BundleGroup::parse)]
    pub group: Option<BundleGroup>,
    /// Track the message NODE sent first (TorusVisND Fig. 13; gen:torus-sim tags each hop with
    /// it): its path hop by hop, coloured by step, over the other channels in grey.
    #[arg(long, value_name = "NODE")]
    pub track: Option<u32>,
    /// Zoom into this rectangle of the unzoomed picture (of the ring panel in the linked view),
    /// in pixels from the top left.
    #[arg(long, value_name = "X0,Y0,X1,Y1", value_parser = parse_rect)]
    pub zoom: Option<[f32; 4]>,
}

/// A number from 0 to 1.
pub fn parse_opacity(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not an opacity from 0 to 1")),
    }
}

/// A bundling strength from 0 to 1.
pub fn parse_beta(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a bundling strength from 0 to 1")),
    }
}

/// `X0,Y0,X1,Y1`: four finite numbers.
pub fn parse_rect(s: &str) -> Result<[f32; 4], String> {
    let v: Vec<f32> = s
        .split(',')
        .map(|p| p.trim().parse::<f32>().ok().filter(|v| v.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("'{s}' is not four numbers X0,Y0,X1,Y1"))?;
    <[f32; 4]>::try_from(v).map_err(|_| format!("'{s}' is not four numbers X0,Y0,X1,Y1"))
}

/// `SENDER,RECEIVER`: two ranks.
pub fn parse_pair(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("'{s}' is not SENDER,RECEIVER"))?;
    let num = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("'{v}' in '{s}' is not a rank"));
    Ok((num(a)?, num(b)?))
}

/// `FROM:TO` with whole numbers, FROM below TO.
pub fn parse_slice(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once(':').ok_or_else(|| format!("'{s}' is not FROM:TO"))?;
    let num = |v: &str| v.trim().parse::<u64>().map_err(|_| format!("'{v}' in '{s}' is not a whole number"));
    let (from, to) = (num(a)?, num(b)?);
    if from >= to {
        return Err(format!("'{s}' is empty: FROM must be below TO"));
    }
    Ok((from, to))
}
