//! `exaviz info` of an operator graph (an XLA HLO module or a PyTorch execution trace): its operators by class, their
//! parallel strategies, the communication operators, the pipeline's stage order and the chunks
//! the strategy view places per stage.

use std::collections::BTreeMap;

use anyhow::Result;
use exaviz_engine::opgraph::{OpGraph, Strategy};

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

pub fn info(input: &str, g: &OpGraph, json: bool) -> Result<()> {
    let classes = counted(g.nodes.iter().map(|n| n.class.name().to_string()));
    let strategies = counted(g.nodes.iter().filter(|n| n.strategy != Strategy::Unknown).map(|n| n.strategy.label()));
    let communication = counted(
        g.nodes.iter().filter(|n| exaviz_engine::opgraph::is_communication(&n.opcode)).map(|n| n.opcode.clone()),
    );
    let stages = g.stage_order();
    let chunks = exaviz_engine::views::strategy::layout::chunks(g);
    let entry = g.entry.map(|e| g.computations[e as usize].clone());
    let stacks = exaviz_engine::views::strategy::stacks(g, &|i| g.entry.is_none_or(|e| g.nodes[i].computation == e));
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
