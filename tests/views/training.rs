//! `--view training`, the training overview (Wei et al., 2024): per step and device,
//! computation, communication and waiting as stacked bars.

use super::{both, golden, open};

#[test]
fn training_overview_matches_golden_on_both_backends() {
    let generated = "gen:training?devices=8&stages=4&microbatches=6&layers=8&steps=2&straggler=5&unbalanced=2";
    let picture = both("training", &["--step", "1"], &open(generated), (960, 600));
    assert!(picture.distinct_colours() > 20, "the picture looks blank");
    golden("training_overview_generated.png", &picture);
}
