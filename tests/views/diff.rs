//! `--view diff`: what changed from a run to another (`--against B`), on both backends.

use std::sync::Arc;

use super::{both, golden, open, refused};

/// `gen:wrf` against itself with rank 11 computing 1.5x: its bar and the waiting it causes are
/// drawn red, the messages unchanged (the matrix white).
#[test]
fn a_slowed_rank_is_drawn_red_among_the_largest_changes() {
    let mut a = open("gen:wrf?iterations=20&seed=5");
    a.against = Some(Arc::new(open("gen:wrf?iterations=20&seed=5&slow_rank=11")));
    let picture = both("diff", &["--against", "gen:wrf?iterations=20&seed=5&slow_rank=11"], &a, (1000, 520));
    golden("diff_wrf_slow_rank11.png", &picture);
    // Taller: the two runs' timelines under the charts, aligned at their starts; a window
    // zooms both.
    let b = "gen:wrf?iterations=20&seed=5&slow_rank=11";
    let tall = both("diff", &["--against", b], &a, (1000, 760));
    golden("diff_wrf_slow_rank11_timelines.png", &tall);
    let zoomed = both("diff", &["--against", b, "--from", "0", "--to", "40"], &a, (1000, 760));
    assert!(super::differ(&tall, &zoomed) > 0.02, "the window zooms the timelines");
    let a = open("gen:wrf?iterations=20&seed=5");
    assert!(refused("diff", &[], &a, (400, 300)).contains("--against"));
    assert!(refused("diff", &["--against", "x"], &a, (400, 300)).contains("not opened"));
}
