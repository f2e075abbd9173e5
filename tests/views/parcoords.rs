//! `--view parcoords`, TorusVisND's node selector: plain, with a coordinate selection, and dense
//! (aggregated by the line-density stage).

use super::{both, differ, golden, open, refused};

#[test]
fn parcoords_match_golden_on_both_backends() {
    let d = open("gen:torus-sim?dims=4x4x4&steps=20&seed=3");
    let plain = both("parcoords", &[], &d, (480, 320));
    golden("parcoords_4x4x4.png", &plain);
    let selected = both("parcoords", &["--select", "X=1,Z=2-3"], &d, (480, 320));
    golden("parcoords_4x4x4_select.png", &selected);
    assert!(differ(&plain, &selected) > 0.01, "the selection changes nothing");
    let wrf = open("gen:wrf?iterations=2");
    let e = refused("parcoords", &[], &wrf, (480, 320));
    assert!(e.contains("needs a topology"), "{e}");
}

/// Past `DENSE_LINES` nodes the node selector aggregates its polylines with the line-density
/// stage: the same picture on both backends, and against a golden image.
#[test]
fn dense_parcoords_matches_golden_on_both_backends() {
    use exaviz_views::parcoords::DENSE_LINES;
    let d = open("gen:torus-sim?dims=16x16x16x16&steps=2&seed=5");
    assert!(d.topology.as_ref().unwrap().node_count() > DENSE_LINES);
    golden("parcoords_16x16x16x16_dense.png", &both("parcoords", &["--select", "d2=3"], &d, (480, 320)));
}
