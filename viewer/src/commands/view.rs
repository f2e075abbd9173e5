//! `exaviz view INPUT --view V`: a view in a window ([`crate::window`]), with pan, zoom, hover
//! tooltips and a side panel to switch views and options.

use anyhow::Result;

use crate::common::{DEFAULT_INPUT, ViewArgs, input_help, load, parse_size};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(default_value = DEFAULT_INPUT, help = input_help())]
    pub input: String,
    /// Initial picture size, WIDTHxHEIGHT (the window adds the side panel's width; `p` hides it).
    #[arg(long, default_value = "1024x768")]
    pub size: String,
    /// Close after presenting this many frames (for tests and demos).
    #[arg(long)]
    pub frames: Option<u64>,
    #[command(flatten)]
    pub view: ViewArgs,
}

pub fn run(args: Args) -> Result<()> {
    let Args { input, size, frames, mut view } = args;
    let size = parse_size(&size)?;
    view.built()?;
    let view_backend = view.backend.into();
    let dataset = load(&input)?;
    view.suit(&dataset);
    crate::common::open_against(&mut view)?;
    let selection = view.built()?.selection;
    let content = crate::window::content(&view, &dataset, selection).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
    crate::window::run(dataset, input, view_backend, size, view, content, frames)
}
