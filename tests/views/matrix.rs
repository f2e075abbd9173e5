//! `--view matrix`: the communication matrix (Brendel et al., 2016), for every generated MPI case.

use super::{MPI_CASES, both, golden, open};

#[test]
fn matrix_matches_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let picture = both("matrix", &[], &d, (420, 320));
        assert!(picture.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("matrix_{case}.png"), &picture);
    }
}
