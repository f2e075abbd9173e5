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

/// Past `DENSE_PAIRS` pairs the chord and sender/receiver diagrams draw their curves as a
/// density image (the line-density stage) instead of a stroke each: the same on both backends.
#[test]
fn many_pairs_are_drawn_as_a_density_on_both_backends() {
    use exaviz_views::pairs::{DENSE_PAIRS, pairs_in};
    let d = open("gen:fd4?ranks=2000&messages=200000");
    let (_, pairs) = pairs_in(&d, &exaviz_compute::Backend::Cpu, "chord", 8192, None).unwrap();
    assert!(pairs.len() > DENSE_PAIRS, "{} pairs: not past {DENSE_PAIRS}", pairs.len());
    for view in ["chord", "sendrecv"] {
        let picture = both(view, &[], &d, (560, 400));
        assert!(picture.distinct_colours() > 20, "{view}: the picture looks blank");
        golden(&format!("{view}_dense_fd4.png"), &picture);
    }
}
