//! `--view themeriver`, TorusVisND's time slicer: the river's streams sum exactly the traffic
//! on their nodes' links on both backends; a time slice and a coordinate selection drawn.

use exaviz_compute::Backend;
use exaviz_model::selection::dims::DimFilter;
use exaviz_views::themeriver::{MAX_STREAMS, ThemeRiverOptions, river};
use exaviz_views::torus::traffic::{link_traffic, node_traffic};

use super::{both, differ, golden, gpu_backend, open, refused};

#[test]
fn rivers_sum_their_nodes_traffic_and_match_golden_on_both_backends() {
    let d = open("gen:torus-sim?dims=4x4x4&steps=20&seed=3");
    let topo = d.topology.as_ref().unwrap();
    let select = Some(DimFilter::parse("X=1,Z=2-3").unwrap());
    let busy = node_traffic(topo, &link_traffic(&d, &Backend::Cpu).unwrap());
    let tr = ThemeRiverOptions { width: 480, height: 320, select, ..Default::default() };
    let cpu_river = river(&d, &Backend::Cpu, &tr).unwrap();
    assert_eq!(cpu_river, river(&d, &gpu_backend(), &tr).unwrap());
    let picked: Vec<u32> =
        (0..64u32).filter(|&v| topo.coord(v as usize)[0] == 1 && topo.coord(v as usize)[2] >= 2).collect();
    assert_eq!(picked.len(), 8);
    assert_eq!(cpu_river.nodes.len() + cpu_river.others, picked.len());
    assert_eq!(cpu_river.nodes.len(), MAX_STREAMS);
    let bins = cpu_river.bins;
    for (s, &v) in cpu_river.nodes.iter().enumerate() {
        assert!(picked.contains(&v));
        assert_eq!((0..bins).map(|b| cpu_river.value(s, b)).sum::<u64>(), busy[v as usize], "node {v}");
    }
    let rest: u64 = picked.iter().filter(|v| !cpu_river.nodes.contains(v)).map(|&v| busy[v as usize]).sum();
    assert_eq!((0..bins).map(|b| cpu_river.value(MAX_STREAMS, b)).sum::<u64>(), rest);

    let sliced = both("themeriver", &["--time-slice", "5:10"], &d, (480, 320));
    golden("themeriver_4x4x4_slice_5_10.png", &sliced);
    let selected = both("themeriver", &["--select", "X=1,Z=2-3"], &d, (480, 320));
    golden("themeriver_4x4x4_select.png", &selected);
    assert!(differ(&sliced, &selected) > 0.01);
    assert!(refused("themeriver", &["--select", "A=1"], &d, (480, 320)).contains("no dimension A"));
    assert!(refused("themeriver", &["--select", "X=4"], &d, (480, 320)).contains("outside the torus"));
    assert!(refused("themeriver", &["--node", "64"], &d, (480, 320)).contains("node 64 is not in the torus"));
}
