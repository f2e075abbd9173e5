//! `--view radviz` (TorusTrafficND §IV): the torus embedded by RadViz, one anchor per dimension.

use super::{both, cpu, differ, golden, open};

#[test]
fn radviz_matches_golden_on_both_backends() {
    let d = open("gen:torus-sim?dims=4x4x2x2&steps=20&seed=3");
    let picture = both("radviz", &[], &d, (360, 280));
    golden("radviz_4x4x2x2.png", &picture);
    assert!(differ(&cpu("mds", &[], &d, (360, 280)), &picture) > 0.01, "the same as MDS");
}
