//! `exaviz convert INPUT STORE`: any input written into a store, with a progress bar.

use anyhow::Result;

use crate::common::with_progress;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(help = crate::common::input_help())]
    pub input: String,
    /// The store folder to write (written under a temporary name, then renamed; an older
    /// store there is replaced).
    pub store: std::path::PathBuf,
}

pub fn run(args: &Args) -> Result<()> {
    convert_cmd(&args.input, &args.store)
}

/// The bytes of the files under `dir`.
fn size_of_tree(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => size_of_tree(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// `exaviz convert`: any input into a store, with a progress bar.
fn convert_cmd(input: &str, store: &std::path::Path) -> Result<()> {
    let started = std::time::Instant::now();
    let template = "{msg} [{bar:32}] {percent}% ({eta} left)";
    let opened = crate::common::with_options(input)?;
    let m = with_progress(&format!("converting {input}"), template, |p| exaviz_datasets::convert(&opened, store, p))?;
    let bytes = size_of_tree(store);
    let rows = m.rows("messages") + m.rows("intervals");
    println!(
        "{}: {} messages, {} intervals, {} locations; {:.1} MB on disk ({:.1} bytes per message or interval) in {:.1} s",
        store.display(),
        m.rows("messages"),
        m.rows("intervals"),
        m.rows("locations"),
        bytes as f64 / 1e6,
        bytes as f64 / rows.max(1) as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
