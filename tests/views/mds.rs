//! `--view mds` (TorusTrafficND §IV): the torus embedded by MDS at its three scopes.

use super::{both, differ, golden, open};

#[test]
fn mds_scopes_match_golden_on_both_backends() {
    let d = open("gen:torus-sim?dims=4x4x2x2&steps=20&seed=3");
    let cases: [(&str, &[&str]); 3] = [
        ("mds_full_4x4x2x2.png", &[]),
        ("mds_3hop_4x4x2x2.png", &["--scope", "hops", "--hops", "3"]),
        ("mds_immediate_4x4x2x2.png", &["--scope", "immediate"]),
    ];
    let mut seen = Vec::new();
    for (name, options) in cases {
        let picture = both("mds", options, &d, (360, 280));
        golden(name, &picture);
        assert!(seen.iter().all(|other| differ(other, &picture) > 0.01), "{name}: same as another");
        seen.push(picture);
    }
}
