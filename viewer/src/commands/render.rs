//! `exaviz render INPUT --view V -o OUT.png`: a view drawn headless to a PNG file (written to a
//! temporary name, then renamed), or with `--wall` a powerwall's tiles ([`super::wall`]).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use exaviz_compute::Backend;
use exaviz_render::write_png_atomic;

use crate::common::{DEFAULT_INPUT, ViewArgs, input_help, load, parse_size, spinner};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(default_value = DEFAULT_INPUT, help = input_help())]
    pub input: String,
    /// Output PNG (written to a temporary file, then renamed).
    #[arg(long, short, default_value = "exaviz.png")]
    pub out: PathBuf,
    /// Picture size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1024x768")]
    pub size: String,
    /// Render for a powerwall described by this wall.toml: the view is prepared at the whole
    /// virtual canvas's size, and --out is a folder that gets each tile as tile_C_R.png and
    /// the whole wall, mullion gaps included, as wall.png.
    #[arg(long, value_name = "WALL.toml", conflicts_with = "size")]
    pub wall: Option<PathBuf>,
    /// Also write what the picture shows as JSON, for programs and screen readers: the view,
    /// its title, its rows (`label` drawn, `name` whole, `top` and `height` in pixels, `apart`,
    /// `count` of locations, `kind`) and its legend (`label`, `name`); written to a temporary
    /// name, then renamed.
    #[arg(long, value_name = "FILE.json", conflicts_with = "wall")]
    pub scene_json: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
}

pub fn run(args: Args) -> Result<()> {
    let Args { input, out, size, wall, scene_json, mut view } = args;
    if let Some(wall) = wall {
        return super::wall::render_cmd(&input, &wall, &out, &view);
    }
    let size = parse_size(&size)?;
    view.built()?;
    if out.is_dir() {
        bail!("{}: is a folder; give a file name for the PNG", out.display());
    }
    let dataset = load(&input)?;
    view.suit(&dataset);
    crate::common::open_against(&mut view)?;
    let built = view.built()?;
    let backend = Backend::new(view.backend.into())?;
    let pb = spinner(&format!("rendering the {} view on {}", view.view, backend.describe()));
    let frame = exaviz_views::Frame { width: size.0, height: size.1 };
    let (image, outline) =
        exaviz_views::contract::render_view_outlined(built.view.as_ref(), &dataset, &built.selection, frame, &backend)
            .map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
    pb.finish_and_clear();
    write_png_atomic(&out, &image).with_context(|| format!("{}: cannot write", out.display()))?;
    if let Some(json) = &scene_json {
        exaviz_render::write_atomic(json, |w| w.write_all(outline.to_json().as_bytes()))
            .with_context(|| format!("{}: cannot write", json.display()))?;
    }
    eprintln!("wrote {} ({}x{}, {} view, {})", out.display(), image.width, image.height, view.view, backend.describe());
    Ok(())
}
