//! `--view topology`, the cluster topology view (Wei et al., 2024), on real training profiles:
//! the DLRM step on 8 GPUs (../shared/data) and a Gloo pipeline recorded here (tests/data).

use exaviz_compute::Backend;
use exaviz_model::training::Class;
use exaviz_views::topology::links;
use exaviz_views::{Entry, Frame};

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
    let differ = |a: &exaviz_render::Image, b: &exaviz_render::Image| {
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

/// `--colour critical-path` colours each device by its share of the critical path: on the gloo
/// pipeline rank 0 holds the most of it (every step's forward pass starts there), so its disc is
/// the brightest of the four; both backends draw the same; the legend and the tooltip say so.
#[test]
fn devices_coloured_by_their_share_of_the_critical_path() {
    let d = open(&format!("{}/data/torch-gloo-pipeline", env!("CARGO_MANIFEST_DIR")));
    let args = ["--colour", "critical-path"];
    let (size, frame) = ((900, 450), Frame { width: 900, height: 450 });
    let by_path = both("topology", &args, &d, size);
    let by_comm = both("topology", &[], &d, size);
    let differ = by_path.pixels.chunks_exact(4).zip(by_comm.pixels.chunks_exact(4)).filter(|(p, q)| p != q).count();
    assert!(differ > 500, "{differ} pixels differ from the communication colours");
    let built = Entry::find("topology").unwrap().parse(&args).unwrap();
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare");
    let scene = prepared.draw(&d, &built.selection);
    assert!(scene.labels.iter().any(|l| l.text == "path %"), "the colour bar's title");
    // Each device's disc: its tooltip's share, and the median brightness of the pixels whose
    // tooltip is the device's (the disc, inside its light outline).
    let mut seen: std::collections::BTreeMap<String, (f64, Vec<u32>)> = Default::default();
    for y in (0..450).step_by(2) {
        for x in (0..450).step_by(2) {
            let Some(p) = prepared.pick(&d, [x as f32, y as f32]) else { continue };
            let Some(share) = p.lines.iter().find_map(|l| l.strip_prefix("share of the critical path: ")) else {
                continue;
            };
            let share = share.trim_end_matches('%').parse::<f64>().unwrap();
            let px = &by_path.pixels[(y * 900 + x) * 4..][..3];
            seen.entry(p.title.clone()).or_insert((share, Vec::new())).1.push(px.iter().map(|&v| u32::from(v)).sum());
        }
    }
    let found: Vec<(String, f64, u32)> = seen
        .into_iter()
        .map(|(title, (share, mut bright))| {
            bright.sort_unstable();
            (title, share, bright[bright.len() / 2])
        })
        .collect();
    assert_eq!(found.len(), 4, "{found:?}");
    let top = found.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    assert!(top.0.starts_with("rank 0"), "{found:?}");
    assert!(found.iter().all(|f| f.0 == top.0 || f.2 < top.2), "the largest share is the brightest: {found:?}");
}

/// Hosts from the profiles: the Gloo pipeline's four ranks made two hosts (ranks 2 and 3's
/// `host_name` rewritten): each host's devices sit together under an arc with its name, and the
/// sends between the stages are edges between hosts, the all-reduces within one.
#[test]
fn devices_sit_together_by_host() {
    use std::io::Read;
    let parent = std::env::temp_dir().join(format!("exaviz-hosts-{}", std::process::id()));
    let dir = parent.join("two-hosts");
    std::fs::create_dir_all(&dir).unwrap();
    for r in 0..4 {
        let gz =
            std::fs::read(format!("{}/data/torch-gloo-pipeline/rank{r}.pt.trace.json.gz", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(&gz[..]).read_to_string(&mut text).unwrap();
        let host = if r < 2 { "node-a" } else { "node-b" };
        assert!(text.contains("\"host_name\": \"vm\""), "the recording names its host");
        std::fs::write(
            dir.join(format!("rank{r}.pt.trace.json")),
            text.replace("\"host_name\": \"vm\"", &format!("\"host_name\": \"{host}\"")),
        )
        .unwrap();
    }
    let d = open(&dir.display().to_string());
    let t = d.training.as_ref().unwrap();
    let hosts: Vec<(u32, &str)> = t.devices.iter().map(|d| (d.rank, d.host.as_str())).collect();
    assert_eq!(hosts, [(0, "node-a"), (1, "node-a"), (2, "node-b"), (3, "node-b")]);
    let one_host = open(&format!("{}/data/torch-gloo-pipeline", env!("CARGO_MANIFEST_DIR")));
    let (two, one) = (both("topology", &[], &d, (900, 450)), both("topology", &[], &one_host, (900, 450)));
    golden("topology_gloo_two_hosts.png", &two);
    let differ = two.pixels.chunks_exact(4).zip(one.pixels.chunks_exact(4)).filter(|(p, q)| p != q).count();
    assert!(differ > 500, "the hosts' arcs and labels are drawn ({differ} pixels differ)");
    let built = Entry::find("topology").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 900, height: 450 }, &Backend::Cpu).expect("prepare");
    let mut kinds = std::collections::BTreeSet::new();
    for y in (60..430).step_by(2) {
        for x in (0..470).step_by(2) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32]).filter(|p| p.title.contains(" - ")) {
                let between = p.lines.iter().any(|l| l == "between hosts node-a and node-b (network)");
                let within = p.lines.iter().any(|l| l.starts_with("within host node-"));
                let sends = p.lines.iter().any(|l| l.contains("send: "));
                kinds.insert((between, within, sends));
            }
        }
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [(false, true, false), (true, false, true)],
        "sends cross hosts, all-reduces stay"
    );
    std::fs::remove_dir_all(&parent).ok();
}

/// The paper's lasso: a drag over the graph selects the devices inside it; the link matrix then
/// shows only them, and their nodes are ringed (the Marey view draws only them: the selection
/// part a click on a stage makes, tested below).
#[test]
fn a_drag_over_devices_selects_them_and_their_link_matrix() {
    let d = open(&format!("{}/data/torch-gloo-pipeline", env!("CARGO_MANIFEST_DIR")));
    let t = d.training.as_ref().unwrap();
    let frame = Frame { width: 900, height: 450 };
    let built = Entry::find("topology").unwrap().parse::<&str>(&[]).unwrap();
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare");
    // Where the discs of ranks 2 and 3 are.
    let mut at: std::collections::BTreeMap<String, [f32; 4]> = std::collections::BTreeMap::new();
    for y in (60..430).step_by(2) {
        for x in (0..460).step_by(2) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32]).filter(|p| !p.title.contains(" -")) {
                let b = at.entry(p.title).or_insert([f32::MAX, f32::MAX, f32::MIN, f32::MIN]);
                *b = [b[0].min(x as f32), b[1].min(y as f32), b[2].max(x as f32), b[3].max(y as f32)];
            }
        }
    }
    let name = |r: u32| t.devices.iter().find(|d| d.rank == r).unwrap().name.clone();
    let (two, three) = (at[&name(2)], at[&name(3)]);
    let from = [two[0].min(three[0]) - 2.0, two[1].min(three[1]) - 2.0];
    let to = [two[2].max(three[2]) + 2.0, two[3].max(three[3]) + 2.0];
    assert!(built.view.brushes_at(&d, frame, from), "a drag over the graph brushes");
    let sel = built.view.brush(&d, &built.selection, frame, from, to).expect("a selection");
    let index = |r: u32| t.devices.iter().position(|d| d.rank == r).unwrap() as u32;
    let (lo, hi) = (index(2).min(index(3)), index(2).max(index(3)));
    assert_eq!(sel.devices, Some((lo, hi)));
    let prepared = built.view.prepare(&d, &sel, frame, &Backend::Cpu).expect("prepare");
    let mut cells = std::collections::BTreeSet::new();
    for y in (60..430).step_by(3) {
        for x in (460..900).step_by(3) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32]).filter(|p| p.title.contains(" -> ")) {
                cells.insert(p.title);
            }
        }
    }
    let expected: std::collections::BTreeSet<String> =
        [format!("{} -> {}", name(2), name(3)), format!("{} -> {}", name(3), name(2))].into_iter().collect();
    assert_eq!(cells, expected, "the matrix holds the selected devices alone");
    let picture = exaviz_render::cpu::render(&prepared.draw(&d, &sel), exaviz_render::View::default());
    golden("topology_gloo_brushed.png", &picture);
    // A drag over nothing clears the selection.
    let none = built.view.brush(&d, &sel, frame, [2.0, 72.0], [6.0, 76.0]).expect("a selection");
    assert_eq!(none.devices, None);
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
                click = p.clicked(&exaviz_model::selection::Selection::default());
            }
        }
    }
    let sel = click.expect("stage 3 is clicked");
    let (a, b) = sel.devices.expect("its devices");
    assert_eq!((b - a + 1, d.training.as_ref().unwrap().devices[a as usize].stage), (640, 3));
    let marey = Entry::find("marey").unwrap().parse::<&str>(&[]).unwrap();
    let rows = |sel: &exaviz_model::selection::Selection| {
        let m = marey.view.prepare(&d, sel, Frame { width: 1200, height: 600 }, &Backend::Cpu).expect("marey");
        let labels: std::collections::BTreeSet<String> =
            (0..600).filter_map(|y| m.pick(&d, [60.0, y as f32])).map(|p| p.title).collect();
        labels
    };
    assert_eq!(rows(&sel).into_iter().collect::<Vec<_>>(), ["stage 3"], "the Marey view draws the selected stage");
    assert_eq!(rows(&exaviz_model::selection::Selection::default()).len(), 16, "and every stage without a selection");
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
