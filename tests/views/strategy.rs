//! `--view strategy`, the parallelism-strategy graph (Wei et al., 2024), from XLA HLO modules
//! recorded from JAX (tests/data, with the scripts that made them).

use exaviz_engine::Backend;
use exaviz_engine::views::{Entry, Frame};

use super::{both, golden, open, refused};

fn module(rel: &str) -> String {
    format!("{}/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A data-parallel step after sharding propagation: the forward dots over the batch cut
/// `[8,1]`, coloured as partitioned, on both backends.
#[test]
fn data_parallel_strategies_match_golden_on_both_backends() {
    let d = open(&module(
        "jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt",
    ));
    let g = d.opgraph.as_ref().unwrap();
    let spaces = exaviz_engine::views::strategy::namespaces(g, |_| true);
    assert_eq!(spaces[..2], ["jit(train_step)/transpose(jvp())", "jit(train_step)/jvp()"], "backward, forward");
    let picture = both("strategy", &[], &d, (1200, 600));
    assert!(picture.distinct_colours() > 8, "the picture looks blank");
    golden("strategy_jax_data_parallel.png", &picture);
}

/// A 4-stage pipeline: its collective-permutes drawn as communication, the stage order in the
/// subtitle; a trace without an operator graph is refused saying what the view needs.
#[test]
fn a_pipelines_strategies_match_golden_and_traces_are_refused() {
    let d = open(&module("jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt"));
    let picture = both("strategy", &[], &d, (960, 400));
    golden("strategy_jax_pipeline.png", &picture);
    let e = refused("strategy", &[], &open("gen:fd4?ranks=8&messages=100"), (400, 300));
    assert!(e.contains("HLO module"), "{e}");
}

/// Hovering an operator names it, with its opcode, strategy, class and a permute's pairs; the
/// background between operators picks nothing.
#[test]
fn hovering_an_operator_tells_what_it_is() {
    let d = open(&module("jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt"));
    let built = Entry::find("strategy").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 960, height: 400 }, &Backend::Cpu).expect("prepare");
    let mut titles = std::collections::BTreeSet::new();
    let mut permute = None;
    for y in (0..400).step_by(3) {
        for x in (0..960).step_by(3) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32]) {
                if p.lines[0].starts_with("collective-permute") {
                    permute = Some(p.clone());
                }
                titles.insert(p.title);
            }
        }
    }
    assert_eq!(titles.len(), 15, "every operator of the entry computation is hovered: {titles:?}");
    let p = permute.expect("a collective-permute is hovered");
    assert!(
        p.lines.iter().any(|l| l == "communication") && p.lines.iter().any(|l| l == "pairs: 0->1 1->2 2->3"),
        "{p:?}"
    );
    assert!(prepared.pick(&d, [480.0, 100.0]).is_none(), "nothing above the operators");
}
