//! `exaviz gen SPEC DIR`: a generator's output written as the files a tool would: gen:fattree as
//! a TreeScope data directory, gen:training as one Chrome trace file per device.

use anyhow::{Context, Result};
use exaviz_formats::treescope as files;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The generator, e.g. gen:fattree?system=simulated&steps=1000&placement=packed or
    /// gen:training?devices=8&stages=4.
    pub spec: String,
    /// The directory to write (through a temporary name, then renamed).
    pub dir: std::path::PathBuf,
}

pub fn run(args: &Args) -> Result<()> {
    gen_cmd(&args.spec, &args.dir)
}

/// `exaviz gen SPEC DIR`: a simulated fat tree written as a TreeScope data directory.
pub fn gen_cmd(spec: &str, dir: &std::path::Path) -> Result<()> {
    let spec = if spec.starts_with("gen:") { spec.to_string() } else { format!("gen:{spec}") };
    let (generator, _) = exaviz_gen::parse(&spec)?;
    let name = generator.name;
    if generator.files.is_none() {
        let writers: Vec<String> =
            exaviz_gen::GENERATORS.iter().filter(|g| g.files.is_some()).map(|g| format!("gen:{}", g.name)).collect();
        anyhow::bail!(
            "{spec}: exaviz gen writes files of {}; write other generators into a store with exaviz convert",
            writers.join(" and ")
        );
    }
    if generator.files == Some(exaviz_gen::Files::TraceFiles) {
        let s = exaviz_gen::training_spec(&spec)?;
        let tmp = dir.with_extension("partial");
        let _ = std::fs::remove_dir_all(&tmp);
        crate::common::with_progress(&format!("writing {}", dir.display()), "{msg} {spinner}", |_| {
            exaviz_gen::training_gen::write(&s, &tmp)
        })
        .with_context(|| format!("{}: cannot write", dir.display()))?;
        if dir.exists() {
            std::fs::remove_dir_all(dir).with_context(|| format!("{}: cannot replace", dir.display()))?;
        }
        std::fs::rename(&tmp, dir).with_context(|| format!("{}: cannot rename into place", dir.display()))?;
        println!(
            "{}: {} devices in {} stages written as {} trace files",
            dir.display(),
            s.devices,
            s.stages,
            if s.jax { "JAX" } else { "Kineto" }
        );
        return Ok(());
    }
    let started = std::time::Instant::now();
    let dataset = crate::common::with_progress(&format!("simulating {spec}"), "{msg} {spinner}", |_| {
        exaviz_datasets::open(&spec)
    })?;
    let tree = dataset.fattree.context("a fat tree")?;
    let simulated = started.elapsed().as_secs_f64();
    crate::common::with_progress(&format!("writing {}", dir.display()), "{msg} {spinner}", |_| {
        files::write(&tree, dir, name)
    })?;
    println!(
        "{}: {} nodes, {} switches, {} timestamps, {} jobs, {} routing table(s); simulated in {simulated:.1} s, written in {:.1} s",
        dir.display(),
        tree.nodes.len(),
        tree.switches.len(),
        tree.times.len(),
        tree.jobs.len(),
        tree.tables.len(),
        started.elapsed().as_secs_f64() - simulated
    );
    Ok(())
}
