//! `exaviz wall --config wall.toml INPUT`: a powerwall driven from this process, one window per
//! tile ([`crate::window::wall`]), alone or as the master or one tile of a wall over several
//! hosts; and `exaviz render INPUT --wall wall.toml --out DIR`: a powerwall's tiles, headless. The view is
//! prepared once at the whole virtual canvas's size (so views that compute per pixel compute
//! at the wall's full resolution), its scene drawn once, then rendered tile by tile: each tile
//! is written as `DIR/tile_C_R.png`, and the whole wall, with the mullion gaps, is streamed row
//! by row into `DIR/wall.png`. Memory holds one row of tiles, not the canvas.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use exaviz_compute::Backend;
use exaviz_render::wall::Wall;
use exaviz_render::{Image, View, render_region, write_atomic, write_png_atomic};
use exaviz_views::Frame;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The wall description (see docs/walls.md).
    #[arg(long, value_name = "WALL.toml")]
    pub config: PathBuf,
    #[arg(default_value = crate::common::DEFAULT_INPUT, help = crate::common::input_help())]
    pub input: String,
    /// Close after presenting this many frames (for tests and demos).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Be the master of a wall over several hosts: listen on ADDR (HOST:PORT), wait for every
    /// tile to join, then keep them in step (frame N is presented when every tile is ready).
    #[arg(long, value_name = "ADDR", conflicts_with = "join")]
    pub serve: Option<String>,
    /// Show one tile of a wall whose master listens on ADDR (HOST:PORT); needs --tile.
    #[arg(long, value_name = "ADDR", requires = "tile")]
    pub join: Option<String>,
    /// The tile this host shows, column and row from 0.
    #[arg(long, value_name = "C,R", value_parser = exaviz_views::options::parse_pair, requires = "join")]
    pub tile: Option<(u32, u32)>,
    /// How long the master waits for every tile to join, in seconds.
    #[arg(long, default_value_t = 30)]
    pub join_timeout: u64,
    #[command(flatten)]
    pub view: crate::common::ViewArgs,
}

/// `exaviz wall`: the wall's windows.
pub fn run(args: Args) -> Result<()> {
    use crate::window::wall::{Net, run};
    let net = match (args.serve, args.join, args.tile) {
        (Some(addr), ..) => Net::Serve { addr, join_timeout: Duration::from_secs(args.join_timeout) },
        (None, Some(addr), Some(tile)) => Net::Join { addr, tile },
        _ => Net::Local,
    };
    run(&args.input, &args.config, args.frames, &args.view, net)
}

/// Renders the wall's tiles and the whole wall into `dir`; returns the canvas size.
pub fn render_wall(
    backend: &Backend,
    scene: &exaviz_render::Scene,
    wall: &Wall,
    dir: &Path,
    progress: &dyn Fn(u64),
) -> Result<[u32; 2]> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the folder", dir.display()))?;
    let [cw, ch] = wall.canvas();
    let [tw, th] = wall.tile;
    let gap = [0u8, 0, 0, 255];
    let path = dir.join("wall.png");
    let mut done = 0;
    write_atomic(&path, |w| {
        let mut enc = png::Encoder::new(w, cw, ch);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut writer = enc.write_header().map_err(std::io::Error::other)?;
        let mut stream = writer.stream_writer().map_err(std::io::Error::other)?;
        let mut line = vec![0u8; cw as usize * 4];
        for r in 0..wall.rows {
            let tiles: Vec<Image> = (0..wall.columns)
                .map(|c| {
                    let image = render_region(backend, scene, View::default(), wall.origin(c, r), wall.tile)
                        .map_err(std::io::Error::other)?;
                    write_png_atomic(&dir.join(format!("tile_{c}_{r}.png")), &image)?;
                    done += 1;
                    progress(done);
                    Ok(image)
                })
                .collect::<std::io::Result<_>>()?;
            for y in 0..th as usize {
                line.chunks_exact_mut(4).for_each(|p| p.copy_from_slice(&gap));
                for (c, image) in tiles.iter().enumerate() {
                    let x = wall.origin(c as u32, r)[0] as usize * 4;
                    let row = &image.pixels[y * tw as usize * 4..(y + 1) * tw as usize * 4];
                    line[x..x + row.len()].copy_from_slice(row);
                }
                stream.write_all(&line)?;
            }
            if r + 1 < wall.rows {
                line.chunks_exact_mut(4).for_each(|p| p.copy_from_slice(&gap));
                for _ in 0..wall.mullion[1] {
                    stream.write_all(&line)?;
                }
            }
        }
        stream.finish().map_err(std::io::Error::other)
    })
    .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok([cw, ch])
}

/// `exaviz render --wall`: the view prepared at the canvas's size, then the tiles.
pub fn render_cmd(input: &str, wall_path: &Path, dir: &Path, view: &crate::common::ViewArgs) -> Result<()> {
    let wall = crate::common::read_wall(wall_path)?;
    view.built()?;
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("{}: with --wall, --out is a folder for the tiles", dir.display());
    }
    let dataset = crate::common::load(input)?;
    let mut view = view.clone();
    crate::common::open_against(&mut view)?;
    let built = view.built()?;
    let backend = Backend::new(view.backend.into())?;
    let [cw, ch] = wall.canvas();
    let started = std::time::Instant::now();
    let pb =
        crate::common::spinner(&format!("preparing the {} view at {cw}x{ch} on {}", view.view, backend.describe()));
    built.selection.validate(&dataset).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
    let frame = Frame { width: cw, height: ch };
    let prepared = exaviz_views::contract::prepare(built.view.as_ref(), &dataset, &built.selection, frame, &backend)
        .map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
    let scene = prepared.draw(&dataset, &built.selection);
    let prepare_s = started.elapsed().as_secs_f64();
    let total = u64::from(wall.columns * wall.rows);
    pb.set_message(format!("rendering {total} tiles of {}x{}", wall.tile[0], wall.tile[1]));
    render_wall(&backend, &scene, &wall, dir, &|done| pb.set_message(format!("rendered {done} of {total} tiles")))?;
    pb.finish_and_clear();
    eprintln!(
        "wrote {} tiles and wall.png ({cw}x{ch}) into {}, {} view, {}; prepared in {prepare_s:.1} s, {:.1} s in all",
        total,
        dir.display(),
        view.view,
        backend.describe(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
