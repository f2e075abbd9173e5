//! `exaviz metrics`: a training profile's rule findings, a fat tree's, a torus's or an operator
//! graph's measures, by `--of` or the input's kind.

use anyhow::{Context, Result};
use exaviz_analysis::fattree::{hot_links, hot_links_above};
use exaviz_model::fattree::{End, FatTree};

use crate::common::load;
use crate::holds;
use crate::layout_metrics::{embedding_metrics, layout_rows, ordering_metrics, print_metrics_table};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A torus input, a fat tree (a TreeScope data directory or gen:fattree), or a training
    /// profile (Chrome trace files of Kineto, JAX or PerfFlowAspect, or gen:training).
    pub input: String,
    /// Which metrics to print: a training profile's (rule findings, alignment offsets, time
    /// per operator group, as the Marey view shows them), a fat tree's, or a torus's; by
    /// default the input's kind decides.
    #[arg(long, value_enum, alias = "view")]
    pub of: Option<MetricsOf>,
    /// Marey: the timestamp alignment the offsets and rules use.
    #[arg(long, value_enum, default_value = "full")]
    pub align: exaviz_analysis::training::Align,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Fat tree: the active range, counter intervals FROM up to TO (default: all).
    #[arg(long, value_name = "FROM:TO", value_parser = exaviz_views::options::parse_slice)]
    pub time: Option<(u64, u64)>,
    /// Fat tree: how many of the hottest links to list.
    #[arg(long, default_value = "20")]
    pub top: usize,
    /// Fat tree: a link is hot above this many times the mean switch-to-switch link.
    #[arg(long, default_value = "2.0")]
    pub hot: f64,
    /// Fat tree: a link is hot above this many bytes instead (to compare runs on one scale).
    #[arg(long, value_name = "BYTES", conflicts_with = "hot")]
    pub above: Option<f64>,
}

pub fn run(args: &Args) -> Result<()> {
    let fattree = FatTreeOptions { time: args.time, top: args.top, hot: args.hot, above: args.above, json: args.json };
    metrics_dispatch(&args.input, args.of, args.align, args.json, fattree)
}

/// What `exaviz metrics` measures: the kind of input, not a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MetricsOf {
    /// A training profile: rule findings, alignment offsets, time per operator group.
    #[value(alias = "marey")]
    Training,
    /// A fat tree: the hottest links and the hot links per routing table.
    Fattree,
    /// A torus: layout locality of the ring orderings and embeddings.
    Torus,
    /// An operator graph (an XLA HLO module): operators by class, strategies, communication,
    /// the pipeline's stages, as the strategy view shows them.
    Strategy,
}

/// `exaviz metrics`: a training profile's rule findings (Marey), a fat tree's or a torus's
/// metrics, by `--of` or the input's kind.
fn metrics_dispatch(
    input: &str,
    of: Option<MetricsOf>,
    align: exaviz_analysis::training::Align,
    json: bool,
    fattree: FatTreeOptions,
) -> Result<()> {
    let dataset = load(input)?;
    let of = of.unwrap_or(if dataset.training.is_some() {
        MetricsOf::Training
    } else if dataset.opgraph.is_some() {
        MetricsOf::Strategy
    } else if dataset.fattree.is_some() {
        MetricsOf::Fattree
    } else {
        MetricsOf::Torus
    });
    match of {
        MetricsOf::Training => {
            let t = dataset.training.as_deref().with_context(|| {
                format!(
                    "{input}: --of training needs a training profile (Kineto, JAX or PerfFlowAspect traces, or gen:training)"
                )
            })?;
            marey_metrics(t, align, json)
        }
        MetricsOf::Fattree => {
            let t = dataset.fattree.as_ref().with_context(|| {
                format!("{input}: --of fattree needs a fat tree (a TreeScope data directory or gen:fattree)")
            })?;
            fattree_metrics(input, t, &fattree)
        }
        MetricsOf::Torus => torus_metrics(input, dataset, json),
        MetricsOf::Strategy => {
            let g = dataset.opgraph.as_ref().with_context(|| {
                format!("{input}: --of strategy needs an operator graph (an XLA HLO module as text)")
            })?;
            holds::opgraph(input, g, json)
        }
    }
}

/// `exaviz metrics --of training`: the rules' findings, the alignment's offsets and the time per
/// operator group, as JSON or text.
fn marey_metrics(
    t: &exaviz_model::training::Training,
    align: exaviz_analysis::training::Align,
    json: bool,
) -> Result<()> {
    let m = exaviz_views::marey::metrics(t, align);
    if json {
        println!("{}", serde_json::to_string_pretty(&m)?);
        return Ok(());
    }
    println!(
        "{} devices in {} stages, {} operators, {} steps ({})",
        m.devices, m.stages, m.operators, m.steps, m.source
    );
    let [c, k, s, r] = m.groups_ns.map(|v| exaviz_model::units::duration(v as f64));
    println!("time in computation {c}, collectives {k}, sends {s}, receives {r}");
    let shifted: Vec<_> = m.offsets_ns.iter().filter(|o| o.1 != 0).collect();
    println!("alignment {}: {} devices shifted", m.align, shifted.len());
    for (name, off) in shifted {
        println!("  {name}: {}", exaviz_model::units::duration(*off as f64));
    }
    if m.findings.is_empty() {
        println!("no rule findings");
    }
    for f in &m.findings {
        println!("{:?}: {}", f.rule, f.message);
    }
    Ok(())
}

/// `exaviz metrics`: L and CL of each ordering of one torus.
fn torus_metrics(input: &str, dataset: exaviz_model::dataset::Dataset, json: bool) -> Result<()> {
    let topology = dataset.topology.with_context(|| format!("{input}: no topology to lay out"))?;
    let mut rows = ordering_metrics(&topology);
    let mut embeddings = embedding_metrics(&topology);
    layout_rows(input, &mut rows);
    layout_rows(input, &mut embeddings);
    let dims: Vec<String> = topology.extents.iter().map(u32::to_string).collect();
    if json {
        let v = serde_json::json!({
            "input": input, "dims": dims.join("x"), "nodes": topology.node_count(), "orderings": rows,
            "embeddings": embeddings,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("L: TorusVisND Eq. 1 (k = 3); CL: Eq. 2");
        print_metrics_table(&[(dims.join("x"), rows.into_iter().chain(embeddings).collect())]);
    }
    Ok(())
}

/// What `exaviz metrics` reads for a fat tree.
struct FatTreeOptions {
    time: Option<(u64, u64)>,
    top: usize,
    hot: f64,
    /// A hot link's bytes, instead of `hot` times the mean (to compare runs on one scale).
    above: Option<f64>,
    json: bool,
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
fn fattree_metrics(input: &str, t: &FatTree, args: &FatTreeOptions) -> Result<()> {
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
