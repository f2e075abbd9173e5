//! The locality of a torus's ring orderings and 2-D embeddings (TorusVisND, Cheng et al., 2014,
//! Eq. 1 and 2) as benchmark rows, and the keys every benchmark row carries: what
//! `exaviz metrics --of torus`, `exaviz bench-layout` and `exaviz bench` print.

use exaviz_render::layout::Ordering;

/// The harness keys every benchmark row carries, whatever it measures (`exaviz bench` and
/// `exaviz bench-layout` share them: see docs/bundling.md, "One schema for the harnesses"):
/// `harness`, `input`, `method`, `median_s` (null where not run here) and `measures`.
pub(crate) fn harness_keys(
    row: &mut serde_json::Value,
    harness: &str,
    input: &str,
    method: &str,
    seconds: Option<f64>,
    measures: &[&str],
) {
    let picked: serde_json::Map<String, serde_json::Value> =
        measures.iter().filter_map(|k| row.get(*k).map(|v| ((*k).to_string(), v.clone()))).collect();
    if let Some(o) = row.as_object_mut() {
        o.insert("harness".into(), harness.into());
        o.insert("input".into(), input.into());
        o.insert("method".into(), method.into());
        o.insert("median_s".into(), seconds.map_or(serde_json::Value::Null, |s| ((s * 1e6).round() / 1e6).into()));
        o.insert("measures".into(), picked.into());
    }
}

/// The layout harness's measures.
pub(crate) const LAYOUT_MEASURES: [&str; 3] = ["locality", "cl_mean", "cl_max"];

/// [`harness_keys`] on the rows of one torus.
pub(crate) fn layout_rows(input: &str, rows: &mut [serde_json::Value]) {
    for r in rows.iter_mut() {
        let method = r["ordering"].as_str().unwrap_or("?").to_string();
        let secs = if r.get("skipped").is_some() { None } else { r["seconds"].as_f64() };
        harness_keys(r, "layout", input, &method, secs, &LAYOUT_MEASURES);
    }
}

/// Each ring ordering of `topology` (sequential, Hilbert) with its layout metrics (locality, the
/// chord lengths' mean and largest) and the seconds it took.
pub(crate) fn ordering_metrics(topology: &exaviz_model::Topology) -> Vec<serde_json::Value> {
    use exaviz_render::layout::{metrics, order};
    [Ordering::Sequential, Ordering::Hilbert]
        .into_iter()
        .map(|ordering| {
            let t = std::time::Instant::now();
            let ring = order::order_nodes(topology, ordering);
            let m = metrics::layout_metrics(topology, &ring);
            serde_json::json!({
                "ordering": ordering.name(), "nodes": topology.node_count(), "locality": m.locality,
                "cl_mean": m.cl_mean, "cl_max": m.cl_max, "seconds": t.elapsed().as_secs_f64(),
            })
        })
        .collect()
}

/// The same for the 2-D embeddings of TorusTrafficND §IV (MDS at three scopes, RadViz), with their
/// metrics read as `layout::embed` documents; an embedding too large to compute is listed with
/// the reason.
pub(crate) fn embedding_metrics(topology: &exaviz_model::Topology) -> Vec<serde_json::Value> {
    use exaviz_render::layout::embed;
    use exaviz_render::layout::embed::Embedding;
    Embedding::ALL
        .into_iter()
        .map(|e| {
            let t = std::time::Instant::now();
            let row = |extra: serde_json::Value| {
                let mut r =
                    serde_json::json!({ "ordering": e.name(), "kind": "embedding", "nodes": topology.node_count() });
                if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
                    r.extend(extra.clone());
                }
                r
            };
            match embed::embed(topology, e) {
                Err(why) => row(serde_json::json!({ "skipped": why })),
                Ok(p) => match embed::embedding_metrics(topology, &p) {
                    Some(m) => row(serde_json::json!({
                        "locality": m.locality, "cl_mean": m.cl_mean, "cl_max": m.cl_max,
                        "seconds": t.elapsed().as_secs_f64(),
                    })),
                    None => row(serde_json::json!({
                        "skipped": format!("metrics compare all pairs: at most {} nodes", embed::METRICS_MAX_NODES),
                        "seconds": t.elapsed().as_secs_f64(),
                    })),
                },
            }
        })
        .collect()
}

pub(crate) fn print_metrics_table(tables: &[(String, Vec<serde_json::Value>)]) {
    // The harnesses' one table format: a line naming the input, then the method, its time and
    // its measures (as `exaviz bench` prints them).
    for (dims, rows) in tables {
        let nodes = rows.first().map_or(serde_json::Value::Null, |r| r["nodes"].clone());
        println!("{dims} torus, {nodes} nodes");
        println!("{:<14} {:>9} {:>12} {:>10} {:>10}", "method", "median s", "L", "CL mean", "CL max");
        for r in rows {
            let name = r["method"].as_str().or(r["ordering"].as_str()).unwrap_or("?");
            if let Some(why) = r["skipped"].as_str() {
                println!("{name:<14} skipped: {why}");
                continue;
            }
            let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "{name:<14} {:>9.5} {:>12.1} {:>10.2} {:>10.2}",
                f("seconds"),
                f("locality"),
                f("cl_mean"),
                f("cl_max")
            );
        }
    }
}
