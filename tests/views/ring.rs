//! `--view ring` (TorusVisND, TorusTrafficND): orderings, bundlings, block relations, traffic
//! marks, time slices and node filters, message tracking, groups and zoom, the dense ring.

use exaviz_compute::Backend;
use exaviz_tests::shared_data_or_skip;
use exaviz_views::ring::{RingOptions, link_traffic, link_traffic_in};

use super::{both, cpu, differ, golden, gpu_backend, open, refused};

const TORUS: &str = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";

#[test]
fn ring_matches_golden_on_both_backends() {
    let d = open(TORUS);
    let hilbert = both("ring", &[], &d, (320, 240));
    assert!(hilbert.distinct_colours() > 100, "the picture looks blank");
    golden("ring_4x4x4_hilbert.png", &hilbert);
    let seq = cpu("ring", &["--order", "sequential"], &d, (320, 240));
    golden("ring_4x4x4_sequential.png", &seq);
    assert!(differ(&seq, &hilbert) > 0.02, "the two orderings draw different pictures");
}

#[test]
fn link_traffic_agrees_between_backends_and_with_the_messages() {
    let d = open("gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1");
    let a = link_traffic(&d, &Backend::Cpu).unwrap();
    assert_eq!(a, link_traffic(&d, &gpu_backend()).unwrap());
    assert_eq!(a.iter().sum::<u64>(), d.trace.messages.source.len() as u64);
}

#[test]
fn boxfish_ring_agrees_between_backends() {
    let Some(data) = shared_data_or_skip("boxfish_ring_agrees_between_backends") else {
        return;
    };
    let d = open(data.join("boxfish/bgpc_meta.yaml").to_str().unwrap());
    let topo = d.topology.as_ref().unwrap();
    assert_eq!((topo.node_count(), topo.link_count()), (512, 3072));
    let traffic = link_traffic(&d, &gpu_backend()).unwrap();
    // Region -2 (the whole run) of bgpc_links.yaml: every link has traffic.
    assert!(traffic.iter().all(|&t| t > 0));
    assert_eq!(traffic, link_traffic(&d, &Backend::Cpu).unwrap());
    both("ring", &[], &d, (256, 192));
}

#[test]
fn bundled_ring_matches_golden_on_both_backends() {
    let d = open(TORUS);
    let bundled = both("ring", &["--bundle", "kde"], &d, (320, 240));
    golden("ring_4x4x4_bundled.png", &bundled);
    assert!(differ(&cpu("ring", &[], &d, (320, 240)), &bundled) > 0.02, "bundling changes the picture");
}

/// TorusTrafficND's ring: block-based bundling coloured by block relation (4 blocks), and
/// hierarchical bundling along the block tree (default 8 blocks), with address rings; without
/// address rings, the picture changes; impossible block counts are refused.
#[test]
fn block_bundled_rings_match_golden_on_both_backends() {
    let d = open(TORUS);
    let plain = cpu("ring", &[], &d, (320, 240));
    let cases: [(&str, &[&str]); 2] = [
        ("ring_4x4x4_blocks_relation.png", &["--bundle", "blocks", "--blocks", "4", "--color", "relation"]),
        ("ring_4x4x4_hierarchical.png", &["--bundle", "hierarchical"]),
    ];
    for (name, options) in cases {
        let picture = both("ring", options, &d, (320, 240));
        golden(name, &picture);
        assert!(differ(&plain, &picture) > 0.02, "{name}: same as plain");
    }
    let bare = cpu("ring", &["--no-address-rings"], &d, (320, 240));
    assert!(differ(&plain, &bare) > 0.01, "address rings drawn");
    let err = refused("ring", &["--blocks", "6"], &d, (320, 240));
    assert!(err.contains("do not divide 64 nodes"), "{err}");
}

/// TorusTrafficND's pF3D case on its 256-node torus: traffic marks over traffic-coloured
/// channels; without marks the picture changes.
#[test]
fn pf3d_ring_with_traffic_marks_matches_golden_on_both_backends() {
    let d = open("gen:pf3d?dims=4x4x4x4x1");
    let marked = both("ring", &[], &d, (480, 360));
    golden("ring_pf3d_4x4x4x4x1.png", &marked);
    let bare = cpu("ring", &["--no-traffic-marks"], &d, (480, 360));
    assert!(differ(&bare, &marked) > 0.005, "traffic marks drawn");
}

/// TorusVisND's time slicer and TorusTrafficND's node filter on the ring: a slice counts exactly
/// the messages sent in it (both backends), and both filtered pictures match their references.
#[test]
fn time_slice_and_node_filter_match_golden_on_both_backends() {
    let d = open(TORUS);
    let in_slice = d.trace.messages.send_time.iter().filter(|&&t| (5..10).contains(&t)).count() as u64;
    let cpu_slice = link_traffic_in(&d, &Backend::Cpu, Some((5, 10))).unwrap();
    assert_eq!(cpu_slice, link_traffic_in(&d, &gpu_backend(), Some((5, 10))).unwrap());
    assert!(in_slice > 0 && in_slice < d.trace.messages.source.len() as u64);
    assert_eq!(cpu_slice.iter().sum::<u64>(), in_slice);
    let plain = cpu("ring", &[], &d, (400, 300));
    let cases: [(&str, &[&str]); 2] =
        [("ring_4x4x4_slice_5_10.png", &["--time-slice", "5:10"]), ("ring_4x4x4_node_21.png", &["--node", "21"])];
    for (name, options) in cases {
        let picture = both("ring", options, &d, (400, 300));
        golden(name, &picture);
        assert!(differ(&plain, &picture) > 0.02, "{name}: same as plain");
    }
    assert!(refused("ring", &["--node", "64"], &d, (400, 300)).contains("node 64 is not in the torus"));
    assert!(refused("ring", &["--time-slice", "4:4"], &d, (400, 300)).contains("empty"));
    golden("ring_4x4x4_select.png", &both("ring", &["--select", "X=1,Z=2-3"], &d, (400, 300)));
}

/// The ring's message tracking (TorusVisND Fig. 13), group filter and zoom: golden images on
/// both backends; the tracked path is the message's walk; the zoom picks nodes where it draws
/// them; bad requests get clear errors.
#[test]
fn tracked_message_group_filter_and_zoom_match_golden_on_both_backends() {
    use exaviz_model::selection::group::BundleGroup;
    use exaviz_views::ring::track::hops;
    use exaviz_views::ring::{ring_bundles_in, ring_node_at, ring_scene, ring_unzoom};
    let d = open("gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1");
    let topo = d.topology.as_ref().unwrap();
    let path = hops(&d, 22).unwrap();
    assert_eq!(path[0].from, 22);
    for pair in path.windows(2) {
        assert_eq!((pair[0].to, pair[0].sent + 1), (pair[1].from, pair[1].sent), "one walk, a hop a step");
    }
    assert_eq!(path.last().unwrap().sent, 29, "the walk goes on to the last step");

    let size = (640, 480);
    let plain = cpu("ring", &[], &d, size);
    let cases: [(&str, &[&str]); 2] = [
        ("ring_4x4x4x4x4_track_22.png", &["--track", "22"]),
        (
            "ring_4x4x4x4x4_group_zoom.png",
            &["--group", "1-2,2-3", "--zoom", "300,60,470,200", "--bundle", "blocks", "--beta", "0.85"],
        ),
    ];
    for (name, options) in cases {
        let picture = both("ring", options, &d, size);
        golden(name, &picture);
        assert!(differ(&plain, &picture) > 0.05, "{name}: same as plain");
    }

    // The group keeps exactly its bundles: brushing the whole picture finds those and no other.
    let base = RingOptions { width: 640, height: 480, ..Default::default() };
    let group = BundleGroup::parse("1-2,2-3").unwrap();
    let whole = [0.0, 0.0, 640.0, 480.0];
    let all = ring_bundles_in(&d, &Backend::Cpu, &base, whole).unwrap().unwrap();
    assert!(all.pairs().len() > 2 && all.contains(0, 1) && all.contains(1, 2));
    let only = ring_bundles_in(&d, &Backend::Cpu, &RingOptions { group: Some(group), ..base }, whole).unwrap();
    assert_eq!(only, Some(all), "brushing ignores the group filter it replaces");
    let grouped = ring_scene(&d, &Backend::Cpu, &RingOptions { group: Some(group), ..base });
    assert!(grouped.unwrap().instance_count() < ring_scene(&d, &Backend::Cpu, &base).unwrap().instance_count());

    // Zoomed into a rectangle around a node's place (12 pixels inside the address rings' outer
    // edge, straight above the centre), the plot's centre shows that node.
    let x = (640.0 - 150.0) / 2.0 + 3.0;
    let edge = (0..240).map(|y| [x, y as f32]).find(|&p| ring_node_at(topo, &base, p).is_some()).unwrap();
    let p = [x, edge[1] + 12.0];
    let v = ring_node_at(topo, &base, p).unwrap();
    let zoomed = RingOptions { zoom: Some([p[0] - 20.0, p[1] - 15.0, p[0] + 20.0, p[1] + 15.0]), ..base };
    let centre = [(640.0 - 150.0) / 2.0, 64.0 + (480.0 - 64.0) / 2.0];
    let back = ring_unzoom(&zoomed, centre);
    assert!((back[0] - p[0]).abs() < 1e-3 && (back[1] - p[1]).abs() < 1e-3, "{back:?} {p:?}");
    assert_eq!(ring_node_at(topo, &zoomed, centre), Some(v));

    assert!(refused("ring", &["--track", "5000"], &d, size).contains("the torus has nodes 0 to 1023"));
    let nine = refused("ring", &["--group", "9-1"], &d, size);
    assert!(nine.contains("names block 9, but the ring has 8 blocks"), "{nine}");
    assert!(refused("ring", &["--zoom", "5,5,6,60"], &d, size).contains("at least 4x4"));
    let small = open("gen:torus-sim?dims=3x3x3");
    assert!(refused("ring", &["--group", "1-2,2-3"], &small, size).contains("needs Hilbert blocks"));
    let pf3d = open("gen:pf3d?dims=4x4x4x4x1");
    let none = hops(&pf3d, 9999).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(none.contains("the torus has nodes 0 to 255"), "{none}");
}

/// Past `DENSE_CHORDS` chords the ring aggregates its curves with the line-density stage: the
/// same picture on both backends, and against a golden image; with a node filter the few chords
/// left are drawn one by one again.
#[test]
fn dense_ring_matches_golden_on_both_backends() {
    use exaviz_views::ring::DENSE_CHORDS;
    let d = open("gen:torus-sim?dims=16x16x16x16&steps=2&seed=5");
    assert!(d.topology.as_ref().unwrap().link_count() / 2 > DENSE_CHORDS);
    let dense = both("ring", &[], &d, (480, 360));
    golden("ring_16x16x16x16_dense.png", &dense);
    let one = cpu("ring", &["--node", "4321"], &d, (480, 360));
    assert!(differ(&one, &dense) > 0.1);
}
