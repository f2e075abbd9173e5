//! `--view sendrecv`: the sender/receiver diagram, pairs routed over a grid (Brendel et al., 2016), for every generated MPI case.

use super::{MPI_CASES, both, golden, open};

#[test]
fn sendrecv_matches_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let picture = both("sendrecv", &[], &d, (560, 400));
        assert!(picture.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("sendrecv_{case}.png"), &picture);
    }
}
