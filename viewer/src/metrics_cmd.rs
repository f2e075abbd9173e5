//! `exaviz metrics`: a training profile's rule findings, a fat tree's, a torus's or an operator
//! graph's measures, by `--of` or the input's kind.

use anyhow::{Context, Result};

use crate::common::load;
use crate::{fattree_cmd, opgraph_cmd};

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
pub(crate) fn metrics_dispatch(
    input: &str,
    of: Option<MetricsOf>,
    align: exaviz_engine::training::Align,
    json: bool,
    fattree: fattree_cmd::MetricsArgs,
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
            fattree_cmd::metrics(input, t, &fattree)
        }
        MetricsOf::Torus => crate::layout_cmd::torus_metrics(input, dataset, json),
        MetricsOf::Strategy => {
            let g = dataset.opgraph.as_ref().with_context(|| {
                format!("{input}: --of strategy needs an operator graph (an XLA HLO module as text)")
            })?;
            opgraph_cmd::info(input, g, json)
        }
    }
}

/// `exaviz metrics --of training`: the rules' findings, the alignment's offsets and the time per
/// operator group, as JSON or text.
pub(crate) fn marey_metrics(
    t: &exaviz_engine::training::Training,
    align: exaviz_engine::training::Align,
    json: bool,
) -> Result<()> {
    let m = exaviz_engine::views::marey::metrics(t, align);
    if json {
        println!("{}", serde_json::to_string_pretty(&m)?);
        return Ok(());
    }
    println!(
        "{} devices in {} stages, {} operators, {} steps ({})",
        m.devices, m.stages, m.operators, m.steps, m.source
    );
    let [c, k, s, r] = m.groups_ns.map(|v| exaviz_engine::training::duration(v as f64));
    println!("time in computation {c}, collectives {k}, sends {s}, receives {r}");
    let shifted: Vec<_> = m.offsets_ns.iter().filter(|o| o.1 != 0).collect();
    println!("alignment {}: {} devices shifted", m.align, shifted.len());
    for (name, off) in shifted {
        println!("  {name}: {}", exaviz_engine::training::duration(*off as f64));
    }
    if m.findings.is_empty() {
        println!("no rule findings");
    }
    for f in &m.findings {
        println!("{:?}: {}", f.rule, f.message);
    }
    Ok(())
}
