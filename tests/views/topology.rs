//! `--view topology`, the cluster topology view (Wei et al., 2024), on real training profiles:
//! the DLRM step on 8 GPUs (../shared/data) and a Gloo pipeline recorded here (tests/data).

use exaviz_engine::Backend;
use exaviz_engine::training::Class;
use exaviz_engine::views::topology::links;
use exaviz_engine::views::{Entry, Frame};

use super::{both, golden, open, refused};

/// NCCL's all-to-all links every ordered pair of the 8 ranks; its all-reduce runs around them
/// as a ring; both backends draw the same picture; hovering a device and a matrix cell tells
/// what they are.
#[test]
fn dlrm_all_to_all_links_every_pair_and_all_reduce_a_ring() {
    let Some(data) = exaviz_tests::shared_data_or_skip("dlrm topology") else { return };
    let d = open(&data.join("kineto-dlrm-8gpu").display().to_string());
    let t = d.training.as_ref().unwrap();
    let (a, b) = t.span();
    let l = links(t, a, b + 1);
    let has = |from: u32, to: u32, c: Class| {
        l.iter().any(|k| k.from == from && k.to == to && k.by_class.contains_key(&(c as u8)))
    };
    let rank = |r: u32| t.devices.iter().position(|d| d.rank == r).unwrap() as u32;
    for i in 0..8 {
        for j in (0..8).filter(|&j| j != i) {
            assert!(has(rank(i), rank(j), Class::AllToAll), "all-to-all {i} -> {j}");
        }
        assert!(has(rank(i), rank((i + 1) % 8), Class::AllReduce), "all-reduce ring {i} -> {}", (i + 1) % 8);
        assert!(!has(rank(i), rank((i + 2) % 8), Class::AllReduce), "a ring, not every pair");
    }
    let picture = both("topology", &[], &d, (1000, 500));
    golden("topology_dlrm_8gpu.png", &picture);
    let built = Entry::find("topology").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 1000, height: 500 }, &Backend::Cpu).expect("prepare");
    let mut devices = std::collections::BTreeSet::new();
    let mut cell = None;
    for y in (60..480).step_by(4) {
        for x in (0..1000).step_by(4) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32]) {
                if !p.title.contains(" - ") && !p.title.contains(" -> ") {
                    devices.insert(p.title.clone());
                }
                if p.title.contains(" -> ") && p.lines.iter().any(|l| l.starts_with("all-to-all: ")) {
                    cell = Some(p);
                }
            }
        }
    }
    assert_eq!(devices.len(), 8, "every device is hovered: {devices:?}");
    let cell = cell.expect("a matrix cell is hovered");
    // Bytes from the launching call's input (nccl:all_to_all's Input Dims [[6144]] of float).
    assert!(cell.lines[0].contains(" ops, ") && cell.lines[0].contains("B/s"), "{cell:?}");
}

/// A 2-stage Gloo pipeline on 4 processes recorded here: its sends run between its stages only,
/// activations forward (0 -> 1) and gradients back (1 -> 0); the picture matches on both
/// backends; a module without a profile and a step past the last are refused.
#[test]
fn a_gloo_pipelines_sends_run_between_its_stages() {
    let d = open(&format!("{}/data/torch-gloo-pipeline", env!("CARGO_MANIFEST_DIR")));
    let t = d.training.as_ref().unwrap();
    let (a, b) = t.span();
    let sends: Vec<_> = links(t, a, b + 1)
        .into_iter()
        .filter(|l| l.by_class.contains_key(&(Class::Send as u8)))
        .map(|l| (t.devices[l.from as usize].stage, t.devices[l.to as usize].stage))
        .collect();
    assert!(sends.contains(&(0, 1)) && sends.contains(&(1, 0)), "{sends:?}");
    assert!(sends.iter().all(|&(a, b)| a != b), "no send within a stage: {sends:?}");
    // Each stage all-reduces its gradients over its two replicas: ranks 0-1 and 2-3.
    let mut reduce: Vec<(u32, u32)> = links(t, a, b + 1)
        .into_iter()
        .filter(|l| l.by_class.contains_key(&(Class::AllReduce as u8)))
        .map(|l| (t.devices[l.from as usize].rank, t.devices[l.to as usize].rank))
        .collect();
    reduce.sort_unstable();
    assert_eq!(reduce, [(0, 1), (1, 0), (2, 3), (3, 2)]);
    let picture = both("topology", &[], &d, (900, 450));
    golden("topology_gloo_pipeline.png", &picture);
    // The matrix's box plots of traffic and of bandwidth draw other boxes than durations'; a
    // cell's tooltip gives the median and middle half of all three.
    let traffic = both("topology", &["--boxes", "traffic"], &d, (900, 450));
    let bandwidth = both("topology", &["--boxes", "bandwidth"], &d, (900, 450));
    let differ = |a: &exaviz_engine::render::Image, b: &exaviz_engine::render::Image| {
        a.pixels.chunks_exact(4).zip(b.pixels.chunks_exact(4)).filter(|(p, q)| p != q).count()
    };
    assert!(differ(&traffic, &picture) > 50 && differ(&bandwidth, &traffic) > 50);
    golden("topology_gloo_pipeline_bandwidth.png", &bandwidth);
    let built = Entry::find("topology").unwrap().parse(&["--boxes", "bandwidth"]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 900, height: 450 }, &Backend::Cpu).expect("prepare");
    let send = (0..450).step_by(3).flat_map(|y| (450..900).step_by(3).map(move |x| (x, y))).find_map(|(x, y)| {
        prepared
            .pick(&d, [x as f32, y as f32])
            .filter(|p| p.title.contains(" -> "))
            .and_then(|p| p.lines.into_iter().find(|l| l.starts_with("send: ") && l.contains("per op median")))
    });
    let send = send.expect("a cell with sends is hovered");
    assert!(send.contains("duration ") && send.contains("traffic ") && send.contains("bandwidth "), "{send}");
    let hlo = format!(
        "{}/data/jax-pipeline8/xla_dump/module_0010.jit_pipeline.cpu_after_optimizations.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let e = refused("topology", &[], &open(&hlo), (400, 300));
    assert!(e.contains("training profile"), "{e}");
    let e = refused("topology", &["--step", "99"], &d, (400, 300));
    assert!(e.contains("step 99 does not exist"), "{e}");
}

/// 10,240 devices in 16 stages are drawn as 16 nodes, one per stage, with the sends between
/// neighbouring stages; a click on a stage selects its devices, and the Marey view draws only
/// them.
#[test]
fn ten_thousand_devices_are_drawn_by_stage() {
    let d = open("gen:training?devices=10240&stages=16&layers=16&steps=1&microbatches=2");
    let built = Entry::find("topology").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 1200, height: 600 }, &Backend::Cpu).expect("prepare");
    let mut nodes = std::collections::BTreeSet::new();
    for y in (60..560).step_by(3) {
        for x in (0..660).step_by(3) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32])
                && p.title.ends_with("(640 devices)")
                && !p.title.contains(" - ")
            {
                nodes.insert(p.title.clone());
            }
        }
    }
    assert_eq!(nodes.len(), 16, "{nodes:?}");
    // A click on stage 3 selects its 640 devices: the Marey view then draws that stage alone.
    let mut click = None;
    for y in (60..560).step_by(3) {
        for x in (0..660).step_by(3) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32])
                && p.title == "stage 3 (640 devices)"
            {
                click = p.clicked(&exaviz_engine::selection::Selection::default());
            }
        }
    }
    let sel = click.expect("stage 3 is clicked");
    let (a, b) = sel.devices.expect("its devices");
    assert_eq!((b - a + 1, d.training.as_ref().unwrap().devices[a as usize].stage), (640, 3));
    let marey = Entry::find("marey").unwrap().parse::<&str>(&[]).unwrap();
    let rows = |sel: &exaviz_engine::selection::Selection| {
        let m = marey.view.prepare(&d, sel, Frame { width: 1200, height: 600 }, &Backend::Cpu).expect("marey");
        let labels: std::collections::BTreeSet<String> =
            (0..600).filter_map(|y| m.pick(&d, [60.0, y as f32])).map(|p| p.title).collect();
        labels
    };
    assert_eq!(rows(&sel).into_iter().collect::<Vec<_>>(), ["stage 3"], "the Marey view draws the selected stage");
    assert_eq!(rows(&exaviz_engine::selection::Selection::default()).len(), 16, "and every stage without a selection");
    assert!(nodes.contains("stage 0 (640 devices)") && nodes.contains("stage 15 (640 devices)"));
    let t = d.training.as_ref().unwrap();
    let (a, b) = t.span();
    let stage = |k: u32| t.devices[k as usize].stage;
    let pairs: std::collections::BTreeSet<(u32, u32)> = links(t, a, b + 1)
        .iter()
        .filter(|l| l.by_class.contains_key(&(Class::Send as u8)))
        .map(|l| (stage(l.from), stage(l.to)))
        .collect();
    assert!(pairs.iter().all(|&(x, y)| x.abs_diff(y) == 1), "sends between neighbouring stages: {pairs:?}");
}
