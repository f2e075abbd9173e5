//! Every view's texts (titles, axis labels, legends, notes) stay inside the picture and never
//! overlap one another, from 640x360 to 1920x1080, with the options that change their legends.

use exaviz_model::dataset::Dataset;
use exaviz_render::Label;
use exaviz_views::REGISTRY;

use super::open;

const SIZES: [(u32, u32); 4] = [(640, 360), (960, 540), (1024, 768), (1920, 1080)];

/// A small input each view draws; a new view must name one here.
fn input_for(view: &str) -> &'static str {
    match view {
        "ring" | "parcoords" | "themeriver" | "linked" | "mds" | "radviz" => "gen:torus-sim?dims=4x4x4&steps=12",
        "timeline" | "matrix" | "chord" | "sendrecv" | "mpi" | "steps" => "gen:wrf?iterations=40",
        // Compared with DIFF_AGAINST.
        "diff" => "gen:wrf?iterations=40&seed=2",
        "fattree" => "gen:fattree?k=4&steps=20",
        "marey" | "training" | "topology" => "gen:training?devices=8&stages=2",
        "strategy" => concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt"
        ),
        other => panic!("the labels test has no input for the {other} view: add one"),
    }
}

/// The run the diff view's input is compared with.
const DIFF_AGAINST: &str = "gen:wrf?iterations=40&seed=2&slow_rank=5";

/// The pairs of labels whose boxes overlap by more than a pixel each way, and the labels
/// reaching more than a pixel outside the picture.
fn collisions(labels: &[Label], size: (u32, u32)) -> Vec<String> {
    let mut out = Vec::new();
    let (w, h) = (size.0 as f32, size.1 as f32);
    for l in labels {
        let [x0, y0, x1, y1] = l.rect;
        if x0 < -1.0 || y0 < -1.0 || x1 > w + 1.0 || y1 > h + 1.0 {
            out.push(format!("{:?} at {:?} leaves the picture", l.text, l.rect));
        }
    }
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            let dx = a.rect[2].min(b.rect[2]) - a.rect[0].max(b.rect[0]);
            let dy = a.rect[3].min(b.rect[3]) - a.rect[1].max(b.rect[1]);
            if dx > 1.0 && dy > 1.0 {
                out.push(format!("{:?} at {:?} overlaps {:?} at {:?}", a.text, a.rect, b.text, b.rect));
            }
        }
    }
    out
}

/// Options that change a view's legend, drawn beside the defaults.
const VARIANTS: &[(&str, &[&str])] = &[
    ("ring", &["--color", "relation", "--bundle", "blocks"]),
    ("ring", &["--track", "3"]),
    ("ring", &["--time-slice", "2:6", "--node", "5"]),
    ("linked", &["--select", "X=1,Z=2", "--time-slice", "2:6"]),
    ("parcoords", &["--select", "X=1,Z=2"]),
    ("themeriver", &["--select", "X=1,Z=2", "--time-slice", "2:6"]),
    ("timeline", &["--mix", "additive", "--bundle", "grid"]),
    ("timeline", &["--states", "stacked", "--pair", "0,1"]),
    ("timeline", &["--highlight", "mpi", "--pair", "0,1"]),
    ("mpi", &["--highlight", "recv"]),
    ("matrix", &["--value", "bandwidth"]),
    ("chord", &["--mix", "alpha"]),
    ("marey", &["--collapse", "all"]),
    ("fattree", &["--colours", "diverging", "--job", "1000002"]),
];

#[test]
fn every_view_keeps_its_texts_apart_and_inside_at_four_sizes() {
    let mut inputs: Vec<(&str, Dataset)> = Vec::new();
    let mut problems = Vec::new();
    let own =
        |name: &str| -> &'static [&'static str] { if name == "diff" { &["--against", DIFF_AGAINST] } else { &[] } };
    let cases = REGISTRY.iter().map(|e| (e.name, own(e.name))).chain(VARIANTS.iter().copied());
    for (name, options) in cases {
        let input = input_for(name);
        if !inputs.iter().any(|(i, _)| *i == input) {
            inputs.push((input, open(input)));
        }
        let d = &inputs.iter().find(|(i, _)| *i == input).expect("opened").1;
        for size in SIZES {
            match exaviz_tests::scene(name, options, d, size) {
                Ok(scene) => {
                    assert!(!scene.labels.is_empty(), "{name} at {size:?} has no text");
                    for c in collisions(&scene.labels, size) {
                        problems.push(format!("{name} {options:?} {}x{}: {c}", size.0, size.1));
                    }
                }
                // A view may need more room than the smallest sizes, saying so.
                Err(e) => assert!(size.0 < 960 && e.contains("too small"), "{name} {options:?} at {size:?}: {e}"),
            }
        }
    }
    assert!(problems.is_empty(), "{} collisions:\n{}", problems.len(), problems.join("\n"));
}

/// Real traces, with their names from the trace on the axes, at the same sizes.
#[test]
fn real_traces_keep_their_texts_apart_and_inside() {
    let Some(data) = exaviz_tests::shared_data_or_skip("real_traces_keep_their_texts_apart_and_inside") else {
        return;
    };
    let cases: &[(&str, &[&str])] = &[
        ("otf2-pingpong/ping-pong-otf2/traces.otf2", &["timeline", "matrix", "chord", "sendrecv", "mpi"]),
        ("otf2-hip-mi300-metrics/traces.otf2", &["timeline"]),
        ("perfflow", &["timeline", "marey", "training"]),
        ("kineto-dlrm-8gpu", &["timeline", "marey", "training"]),
    ];
    let mut problems = Vec::new();
    for (input, views) in cases {
        let path = data.join(input);
        let d = open(&path.display().to_string());
        for view in *views {
            for size in SIZES {
                match exaviz_tests::scene(view, &[], &d, size) {
                    Ok(scene) => {
                        for c in collisions(&scene.labels, size) {
                            problems.push(format!("{input} {view} {}x{}: {c}", size.0, size.1));
                        }
                    }
                    Err(e) => assert!(size.0 < 960 && e.contains("too small"), "{input} {view} at {size:?}: {e}"),
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} collisions:\n{}", problems.len(), problems.join("\n"));
}

/// The real traces whose rows read alike before: every row label the timeline shows names a
/// row apart from the others (the part of the names that differs, cut in the middle where it
/// is too long), and every legend entry reads apart from the others, at the default size.
#[test]
fn real_traces_rows_and_legends_read_apart() {
    let Some(root) = exaviz_model::testing::shared_data("") else { return };
    let corpus = root.join("../corpus");
    let mut inputs = vec![
        root.join("kineto-dlrm-8gpu"),
        root.join("perfetto-omnitrace-mpi/mpi-binary-rewrite-1.proto"),
        root.join("hpctoolkit-pingpong"),
        root.join("otf2-stencil-32r/traces.otf2"),
    ];
    // The corpus's HPCToolkit LULESH database: 27 ranks of 5 threads.
    if let Some(lulesh) = std::fs::read_dir(&corpus).ok().and_then(|d| {
        d.flatten().map(|e| e.path()).find(|p| p.to_string_lossy().contains("hpctoolkit") && p.join("meta.db").exists())
    }) {
        inputs.push(lulesh);
    }
    let size = (1024, 768);
    let plot = exaviz_views::timeline::plot_rect(size.0, size.1).expect("a plot");
    let mut problems = Vec::new();
    for input in inputs.iter().filter(|p| p.exists()) {
        let d = open(input.to_str().unwrap());
        let scene = exaviz_tests::scene("timeline", &[], &d, size).expect("a timeline");
        let left: Vec<&str> = scene
            .labels
            .iter()
            .filter(|l| {
                l.rect[2] <= plot.x0 as f32
                    && l.rect[1] >= plot.y0 as f32 - 6.0
                    && l.rect[3] <= (plot.y0 + plot.h) as f32 + 6.0
            })
            .map(|l| l.text.as_str())
            .collect();
        let legend: Vec<&str> = scene
            .labels
            .iter()
            .filter(|l| l.rect[0] >= (plot.x0 + plot.w) as f32 + 30.0)
            .map(|l| l.text.as_str())
            .collect();
        for (what, texts) in [("row labels", &left), ("legend entries", &legend)] {
            let mut seen = std::collections::HashSet::new();
            for t in texts.iter() {
                if !seen.insert(*t) {
                    problems.push(format!("{}: {what} read alike: {t:?} in {texts:?}", input.display()));
                }
            }
        }
        // Rows are named by what the trace calls them, not by numbers alone.
        if left.iter().all(|t| t.parse::<f64>().is_ok()) {
            problems.push(format!("{}: the rows are numbered, not named: {left:?}", input.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every row says whose it is (`--scene-json`'s outline, as the picture draws it), on real
/// traces and on a generated 16,384-rank run with one deviant: each label drawn reads apart
/// from every other under the same process header, each process's header is drawn, each rank
/// is named by a row or a header, each location drawn apart and each band is labelled, and the
/// legend's entries read apart.
#[test]
fn every_row_says_whose_it_is() {
    let Some(data) = exaviz_tests::shared_data_or_skip("every_row_says_whose_it_is") else { return };
    let corpus = data.join("../corpus");
    // Input, size, and the ranks (by their names' words) each to be named.
    let cases: Vec<(String, (u32, u32), Vec<String>)> = vec![
        (
            data.join("kineto-dlrm-8gpu").display().to_string(),
            (1024, 768),
            (0..8).map(|r| format!("rank {r}")).collect(),
        ),
        (
            corpus.join("perfetto-omnitrace-mpi-4r/mpi-binary-rewrite-all.proto").display().to_string(),
            (1024, 768),
            (2171411..2171415).map(|pid| pid.to_string()).collect(),
        ),
        (
            corpus.join("hpctoolkit-lulesh-27r-5t").display().to_string(),
            (1024, 768),
            (0..27).map(|r| format!("rank {r}")).collect(),
        ),
        (
            data.join("paraver-qsort-4r/qsort_beo3.prv").display().to_string(),
            (1024, 768),
            (1..=4).map(|t| format!("THREAD 1.{t}.1")).collect(),
        ),
        // Extrae's two applications (8 MPI ranks, 12 uncore counter readers): a group each.
        (
            corpus
                .join("paraver-lulesh-8r-extrae-uncore/lulesh_4+4_with_uncores_sockets1+2.chop_5it.prv")
                .display()
                .to_string(),
            (1024, 768),
            ["APPL 1", "APPL 2", "THREAD 1.1.1", "THREAD 1.8.1", "THREAD 2.11.1"].map(String::from).to_vec(),
        ),
        (
            "gen:fd4?ranks=16384&messages=400000&slow_rank=10007".into(),
            (1200, 900),
            vec!["rank 10007".into(), "ranks 0-10006, 10008-16383".into()],
        ),
    ];
    let mut problems = Vec::new();
    for (input, size, ranks) in &cases {
        let d = open(input);
        let scene = exaviz_tests::scene("timeline", &[], &d, *size).expect("a timeline");
        let o = &scene.outline;
        assert!(o.title.starts_with("Timeline: "), "{input}: {}", o.title);
        let drawn: Vec<&exaviz_render::OutlineRow> = o.rows.iter().filter(|r| !r.label.is_empty()).collect();
        let mut seen = std::collections::HashSet::new();
        for r in &drawn {
            if !seen.insert((r.process.as_str(), r.label.as_str())) {
                problems.push(format!("{input}: {:?} under {:?} reads like another row", r.label, r.process));
            }
            if r.label.parse::<f64>().is_ok() {
                problems.push(format!("{input}: a row numbered, not named: {:?}", r.label));
            }
            // Every label drawn is in the picture's texts, in the outline's row.
            let y = |l: &exaviz_render::Label| (l.rect[1] + l.rect[3]) / 2.0;
            let lines: Vec<&str> = r.label.split(' ').collect();
            if !scene
                .labels
                .iter()
                .any(|l| r.label.contains(&l.text) && lines.iter().any(|w| l.text.contains(w)) && y(l) > 0.0)
            {
                problems.push(format!("{input}: {:?} is not drawn", r.label));
            }
        }
        for r in o.rows.iter().filter(|r| r.kind == "process" || r.kind == "band" || r.apart) {
            if r.label.is_empty() {
                problems.push(format!("{input}: {} {:?} has no label", r.kind, r.name));
            }
        }
        for rank in ranks {
            let named = |s: &str| {
                s == rank.as_str()
                    || s.split(|c: char| !c.is_alphanumeric() && c != '.' && c != '-').any(|w| w == rank.as_str())
                    || s.starts_with(&format!("{rank} "))
                    || s.contains(&format!("{rank} ("))
                    || s.ends_with(&format!(" {rank}"))
                    || s.contains(&format!(" {rank} "))
            };
            if !drawn.iter().any(|r| named(&r.label)) {
                problems.push(format!("{input}: {rank} is named by no row or header drawn"));
            }
        }
        let legend: std::collections::HashSet<&str> = o.legend.iter().map(|e| e.label.as_str()).collect();
        if legend.len() != o.legend.len() {
            problems.push(format!("{input}: legend entries read alike: {:?}", o.legend));
        }
        if input.starts_with("gen:fd4") {
            let deviant = o.rows.iter().find(|r| r.apart).expect("a row apart");
            assert_eq!((deviant.label.as_str(), deviant.count), ("rank 10007", 1));
            let band = o.rows.iter().find(|r| r.kind == "band").expect("a band");
            assert_eq!(band.count, 16383);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Where many locations are drawn apart on rows thinner than a line of text (25 of 16,384 on
/// 4-pixel rows), each is still labelled, by its rank, its label pinned off its row where
/// needed with a leader to it, no two labels overlapping.
#[test]
fn rows_apart_are_labelled_even_when_thinner_than_a_line() {
    let ranks = 16384u32;
    let mut t = exaviz_model::Trace::default();
    t.locations.name = (0..ranks).map(|r| format!("MPI Rank {r}")).collect();
    let apart: Vec<u32> = (9995..10020).collect();
    let mut i = exaviz_model::Intervals::default();
    // Each rank of the 25 slow in its own way: a split of its time unlike any other's.
    for r in 0..ranks {
        let slow = apart.contains(&r);
        let split = if slow { 620 + 13 * u64::from(r - 9995) } else { 500 };
        i.push(r, 0, split, u32::from(slow), 0);
        i.push(r, split, 1000, 1 - u32::from(slow), 0);
    }
    t.intervals = i;
    t.region_names = vec!["compute".into(), "slow_work".into()];
    let d = exaviz_model::dataset::Dataset { name: "apart".into(), trace: t, ..Default::default() };
    let scene = exaviz_tests::scene("timeline", &[], &d, (1200, 900)).expect("a timeline");
    let o = &scene.outline;
    let rows: Vec<&exaviz_render::OutlineRow> = o.rows.iter().filter(|r| r.apart).collect();
    assert_eq!(rows.len(), 25, "{:?}", o.rows.iter().map(|r| (&r.kind, &r.label, r.count)).collect::<Vec<_>>());
    for r in &rows {
        assert!(r.height < 12, "rows thinner than a line: {}", r.height);
        let rank = r.name.trim_start_matches("MPI ");
        assert!(r.label.contains(rank), "{:?} labels {:?}", r.label, r.name);
    }
    let band = o.rows.iter().find(|r| r.kind == "band").expect("a band");
    assert_eq!(band.label, "ranks 0-9994, 10020-16383 (16,359)");
    let left: Vec<&exaviz_render::Label> =
        scene.labels.iter().filter(|l| l.rect[2] <= 200.0 && l.rect[1] > 90.0).collect();
    for (k, a) in left.iter().enumerate() {
        for b in &left[k + 1..] {
            let dy = a.rect[3].min(b.rect[3]) - a.rect[1].max(b.rect[1]);
            let dx = a.rect[2].min(b.rect[2]) - a.rect[0].max(b.rect[0]);
            assert!(dx <= 1.0 || dy <= 1.0, "{:?} overlaps {:?}", a.text, b.text);
        }
    }
}
