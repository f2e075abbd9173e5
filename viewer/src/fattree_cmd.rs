//! Fat-tree commands: `exaviz info` and `exaviz metrics` on a fat-tree network, and
//! `exaviz gen`, which writes a simulated TreeScope data directory.

use anyhow::{Context, Result};
use exaviz_datasets::fattree::{files, hot_links, hot_links_above};
use exaviz_engine::fattree::{End, FatTree};

/// `exaviz info` of a fat tree.
pub fn info(input: &str, t: &FatTree, json: bool) -> Result<()> {
    let stamps: Vec<String> =
        [t.times.first(), t.times.last()].iter().flatten().map(|&&v| files::format_stamp(v)).collect();
    let levels = |l: u8| t.switches.iter().filter(|s| s.level == l).count();
    let v = serde_json::json!({
        "input": input,
        "nodes": t.nodes.len(),
        "switches": t.switches.len(),
        "switches_per_level": [levels(1), levels(2), levels(3)],
        "links": t.links.len(),
        "pods": t.pods,
        "bundles": t.bundles,
        "timestamps": t.times.len(),
        "first_timestamp": stamps.first(),
        "last_timestamp": stamps.last(),
        "jobs": t.jobs.len(),
        "routing_tables": t.tables.iter().map(|x| x.name.clone()).collect::<Vec<_>>(),
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("input:        {input}");
        println!("network:      three-level fat tree, {} pods, {} bundles", t.pods, t.bundles);
        println!("nodes:        {}", t.nodes.len());
        println!("switches:     {} (L1 {}, L2 {}, L3 {})", t.switches.len(), levels(1), levels(2), levels(3));
        println!("links:        {} (directed)", t.links.len());
        println!(
            "timestamps:   {} ({} .. {})",
            t.times.len(),
            stamps.first().map_or("-", |s| s),
            stamps.last().map_or("-", |s| s)
        );
        println!("jobs:         {}", t.jobs.len());
        println!("routing:      {} table(s)", t.tables.len());
    }
    Ok(())
}

/// What `exaviz metrics` reads for a fat tree.
pub struct MetricsArgs {
    pub time: Option<(u64, u64)>,
    pub top: usize,
    pub hot: f64,
    /// A hot link's bytes, instead of `hot` times the mean (to compare runs on one scale).
    pub above: Option<f64>,
    pub json: bool,
}

fn link_json(t: &FatTree, l: u32, bytes: f64) -> serde_json::Value {
    let link = t.links[l as usize];
    let g = t.groups[l as usize];
    let end = |e: End| match e {
        End::Switch(s) => serde_json::json!({"switch": s, "name": t.name_of(e), "guid": t.switches[s as usize].guid}),
        End::Node(n) => serde_json::json!({"node": n, "name": t.name_of(e), "guid": t.nodes[n as usize].guid}),
    };
    serde_json::json!({
        "from": end(link.from), "from_port": link.from_port, "to": end(link.to), "to_port": link.to_port,
        "levels": g.label(), "direction": if g.up() { "up" } else { "down" }, "bytes": bytes,
    })
}

/// `exaviz metrics` of a fat tree: the hottest links over the active range, and per routing
/// table in effect (TreeScope's routing comparison), the hot links: switch-to-switch links
/// above `hot` times the mean.
pub fn metrics(input: &str, t: &FatTree, args: &MetricsArgs) -> Result<()> {
    let steps = t.steps();
    let range = match args.time {
        Some((a, b)) if b as usize <= steps && a < b => (a as usize, b as usize),
        Some((a, b)) => anyhow::bail!("{input}: --time {a}:{b}: the counters have intervals 0 to {steps}"),
        None => (0, steps),
    };
    let hot_in = |range: (usize, usize)| match args.above {
        Some(bytes) => (bytes, hot_links_above(t, range, bytes)),
        None => hot_links(t, range, args.hot),
    };
    let (threshold, hot) = hot_in(range);
    // Hot links per pod (a link between an L2 and an L3 switch counts for the L2's pod).
    let mut per_pod = vec![0usize; t.pods as usize];
    for &(l, _) in &hot {
        let link = t.links[l as usize];
        let pod = [link.from, link.to].iter().find_map(|e| match e {
            End::Switch(s) => t.switches[*s as usize].pod,
            End::Node(_) => None,
        });
        if let Some(p) = pod.filter(|&p| (p as usize) < per_pod.len()) {
            per_pod[p as usize] += 1;
        }
    }
    let hottest: Vec<serde_json::Value> = hot.iter().take(args.top).map(|&(l, b)| link_json(t, l, b)).collect();
    // The intervals each routing table was in effect.
    let mut routing = Vec::new();
    for (i, table) in t.tables.iter().enumerate() {
        let from = t.times.iter().position(|&x| x >= table.from).unwrap_or(0).min(steps);
        let to = t
            .tables
            .get(i + 1)
            .map_or(steps, |n| t.times.iter().position(|&x| x >= n.from).unwrap_or(steps).min(steps));
        if to <= from {
            continue;
        }
        let (th, h) = hot_in((from, to));
        routing.push(serde_json::json!({
            "table": table.name, "intervals": [from, to], "threshold": th, "hot_links": h.len(),
            "max_link": h.first().map_or(0.0, |x| x.1),
        }));
    }
    if args.json {
        let v = serde_json::json!({
            "input": input, "intervals": [range.0, range.1], "hot_factor": args.hot, "threshold": threshold,
            "hot_links": hot.len(), "hot_links_per_pod": per_pod, "hottest": hottest, "routing": routing,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{input}: intervals {}-{}, {} hot links (switch-to-switch, above {:.3e} bytes{})",
        range.0,
        range.1,
        hot.len(),
        threshold,
        if args.above.is_some() { String::new() } else { format!(": {} x the mean", args.hot) }
    );
    println!("{:>14}  {:<6} {:<5} {:<24} {:>4}  {:<24} {:>4}", "bytes", "levels", "dir", "from", "port", "to", "port");
    for &(l, b) in hot.iter().take(args.top) {
        let link = t.links[l as usize];
        let g = t.groups[l as usize];
        println!(
            "{b:>14.3e}  {:<6} {:<5} {:<24} {:>4}  {:<24} {:>4}",
            g.label(),
            if g.up() { "up" } else { "down" },
            t.name_of(link.from),
            link.from_port,
            t.name_of(link.to),
            link.to_port
        );
    }
    let pods: Vec<String> = per_pod.iter().enumerate().map(|(p, n)| format!("pod {p}: {n}")).collect();
    println!("hot links per pod: {}", pods.join(", "));
    for r in &routing {
        println!("routing {}: intervals {}, {} hot links", r["table"], r["intervals"], r["hot_links"]);
    }
    Ok(())
}

/// `exaviz gen SPEC DIR`: a simulated fat tree written as a TreeScope data directory.
pub fn gen_cmd(spec: &str, dir: &std::path::Path) -> Result<()> {
    let spec = if spec.starts_with("gen:") { spec.to_string() } else { format!("gen:{spec}") };
    let (generator, _) = exaviz_datasets::generators::parse(&spec)?;
    let name = generator.name;
    if generator.files.is_none() {
        let writers: Vec<String> = exaviz_datasets::GENERATORS
            .iter()
            .filter(|g| g.files.is_some())
            .map(|g| format!("gen:{}", g.name))
            .collect();
        anyhow::bail!(
            "{spec}: exaviz gen writes files of {}; write other generators into a store with exaviz convert",
            writers.join(" and ")
        );
    }
    if generator.files == Some(exaviz_datasets::generators::Files::TraceFiles) {
        let s = exaviz_datasets::training_spec(&spec)?;
        let tmp = dir.with_extension("partial");
        let _ = std::fs::remove_dir_all(&tmp);
        crate::common::with_progress(&format!("writing {}", dir.display()), "{msg} {spinner}", |_| {
            exaviz_datasets::generators::training_gen::write(&s, &tmp)
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
