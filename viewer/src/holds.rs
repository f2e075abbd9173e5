//! What an input holds beside a trace, in words or JSON: a fat tree's network, jobs and routing,
//! an operator graph's operators and strategies (`exaviz info`; `exaviz metrics --of strategy`).

use std::collections::BTreeMap;

use anyhow::Result;
use exaviz_formats::treescope as files;
use exaviz_model::fattree::FatTree;
use exaviz_model::opgraph::{OpGraph, Strategy};

/// `exaviz info` of a fat tree.
pub fn fattree(input: &str, t: &FatTree, json: bool) -> Result<()> {
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

/// Counts of `keys`, most first (ties by key).
fn counted(keys: impl Iterator<Item = String>) -> Vec<(String, usize)> {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    keys.for_each(|k| *m.entry(k).or_default() += 1);
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn listed(v: &[(String, usize)]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter().map(|(k, n)| format!("{k} x{n}")).collect::<Vec<_>>().join(", ")
}

/// `exaviz info` of an operator graph (an XLA HLO module or a PyTorch execution trace): its
/// operators by class, their parallel strategies, the communication operators, the pipeline's
/// stage order and the chunks the strategy view places per stage; `exaviz metrics --of strategy`.
pub fn opgraph(input: &str, g: &OpGraph, json: bool) -> Result<()> {
    let classes = counted(g.nodes.iter().map(|n| n.class.name().to_string()));
    let strategies = counted(g.nodes.iter().filter(|n| n.strategy != Strategy::Unknown).map(|n| n.strategy.label()));
    let communication = counted(
        g.nodes.iter().filter(|n| exaviz_model::opgraph::is_communication(&n.opcode)).map(|n| n.opcode.clone()),
    );
    let stages = g.stage_order();
    let chunks = exaviz_views::strategy::layout::chunks(g);
    let entry = g.entry.map(|e| g.computations[e as usize].clone());
    let stacks = exaviz_views::strategy::stacks(g, &|i| g.entry.is_none_or(|e| g.nodes[i].computation == e));
    if json {
        let map = |v: &[(String, usize)]| {
            serde_json::Value::Object(v.iter().map(|(k, n)| (k.clone(), (*n).into())).collect())
        };
        let v = serde_json::json!({
            "input": input,
            "module": g.name,
            "source": g.source,
            "scheduled": g.scheduled,
            "partitions": g.partitions,
            "computations": g.computations.len(),
            "entry": entry,
            "operators": g.nodes.len(),
            "data_edges": g.edges.len(),
            "classes": map(&classes),
            "strategies": map(&strategies),
            "communication": map(&communication),
            "stages": stages,
            "stacks": stacks.stacks.iter().map(|&(first, pieces)| serde_json::json!({"first": g.nodes[first as usize].name, "pieces": pieces})).collect::<Vec<_>>(),
            "stacked_operators": stacks.hidden_count(),
            "chunks": chunks.iter().map(|&(stage, operators)| serde_json::json!({"stage": stage, "operators": operators})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("input:          {input}");
    println!(
        "operator graph: {} {}, {} partitions{}",
        if g.source.is_empty() { "XLA HLO module" } else { &g.source },
        g.name,
        g.partitions,
        if g.scheduled { ", scheduled (instructions in execution order)" } else { "" }
    );
    println!(
        "operators:      {} in {} computations (entry {}), {} data edges",
        g.nodes.len(),
        g.computations.len(),
        entry.as_deref().unwrap_or("none"),
        g.edges.len()
    );
    println!("classes:        {}", listed(&classes));
    println!("strategies:     {}", listed(&strategies));
    println!("communication:  {}", listed(&communication));
    let order: Vec<String> = stages.iter().map(u32::to_string).collect();
    println!(
        "stages:         {}",
        if order.is_empty() { "none (no collective-permute pairs)".to_string() } else { order.join(" -> ") }
    );
    if !stacks.stacks.is_empty() {
        let per: Vec<String> =
            stacks.stacks.iter().map(|&(first, n)| format!("{} x{n}", g.nodes[first as usize].name)).collect();
        println!(
            "stacks:         {} of similar pieces, {} operators stacked away ({})",
            stacks.stacks.len(),
            stacks.hidden_count(),
            per.join(", ")
        );
    }
    if !chunks.is_empty() {
        let per: Vec<String> = chunks.iter().map(|(s, n)| format!("stage {s}: {n}")).collect();
        println!("chunks:         {} cut at the transfers (operators per chunk: {})", chunks.len(), per.join(", "));
    }
    Ok(())
}
