//! `--view chord`: processes on a circle, pairs bundled along the rank hierarchy (Brendel et al., 2016), for every generated MPI case.

use super::{MPI_CASES, both, golden, open};

#[test]
fn chord_matches_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let picture = both("chord", &[], &d, (480, 360));
        assert!(picture.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("chord_{case}.png"), &picture);
    }
}
