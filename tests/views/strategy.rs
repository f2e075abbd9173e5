//! `--view strategy`, the parallelism-strategy graph (Wei et al., 2024), from XLA HLO modules
//! recorded from JAX (tests/data, with the scripts that made them).

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
