//! `--view marey` (Wei et al., 2024): the enhanced Marey's graph of a generated run, a JAX
//! pipeline written as files, and real traces.

use exaviz_compute::Backend;
use exaviz_render::Image;
use exaviz_tests::shared_data_or_skip;

use super::{both, differ, golden, open};

/// The enhanced Marey's graph (Wei et al., 2024) on both backends:
/// a generated hybrid-parallel run with a straggler and an unbalanced stage (aligned and
/// aggregated, as recorded, every operator drawn, stages collapsed), a JAX pipeline written as
/// files and read back, and the real Kineto (two ranks) and PerfFlowAspect traces.
#[test]
fn marey_views_match_golden_on_both_backends() {
    use exaviz_views::contract::{Entry, Frame};
    let generated = "gen:training?devices=8&stages=4&microbatches=6&layers=8&steps=2&straggler=5&unbalanced=2";
    let jax_dir = std::env::temp_dir().join(format!("exaviz-golden-jax-{}", std::process::id()));
    let options = "devices=4&stages=4&microbatches=3&layers=8&steps=1&flavour=jax";
    let spec = exaviz_gen::training_spec(&format!("gen:training?{options}")).unwrap();
    exaviz_gen::training_gen::write(&spec, &jax_dir).unwrap();
    let jax = jax_dir.to_str().unwrap().to_string();
    let mut cases: Vec<(&str, &str, String, Vec<&str>)> = vec![
        ("marey_generated.png", "marey", generated.into(), vec![]),
        ("marey_generated_unaligned_all.png", "marey", generated.into(), vec!["--align", "none", "--bins", "0"]),
        ("marey_generated_collapsed_step1.png", "marey", generated.into(), vec!["--collapse", "all", "--step", "1"]),
        ("marey_jax_pipeline.png", "marey", jax.clone(), vec![]),
    ];
    if let Some(data) = shared_data_or_skip("marey_views_match_golden_on_both_backends") {
        let k = |f: &str| data.join("kineto").join(f).display().to_string();
        let ranks = format!("{},{}", k("sampled_rank-0.json.gz"), k("sampled_rank-1.json.gz"));
        cases.push(("marey_kineto_two_ranks.png", "marey", ranks, vec![]));
        cases.push(("marey_perfflow.png", "marey", data.join("perfflow").display().to_string(), vec![]));
    }
    let mut pictures = Vec::new();
    for (name, view, input, options) in &cases {
        let picture = both(view, options, &open(input), (960, 600));
        assert!(picture.distinct_colours() > 20, "{name}: the picture looks blank");
        golden(name, &picture);
        pictures.push(picture);
    }
    std::fs::remove_dir_all(&jax_dir).ok();
    // The injected straggler (rank 5, row 5) and unbalanced stage (2: rows 4 and 5) carry the
    // rules' red cross, no other row does; hovering the straggler's cross says what it is.
    let marked = |img: &Image, y: f32| {
        (y as u32 - 5..y as u32 + 6).any(|y| {
            (5..20).any(|x| {
                let [r, g, b, _] = img.pixel(x, y);
                r > 150 && (50..130).contains(&g) && b < 60
            })
        })
    };
    let pitch = (600.0 - 34.0 - 92.0) / 8.0;
    let row = |r: usize| 34.0 + (r as f32 + 0.5) * pitch;
    assert!(marked(&pictures[0], row(5)), "the straggler's row has no cross");
    assert!(marked(&pictures[0], 34.0 + 4.0 * pitch + 6.0), "the heavy stage has no cross");
    for r in [0, 1, 2, 3, 4, 6, 7] {
        assert!(!marked(&pictures[0], row(r)), "row {r} has a cross");
    }
    let d = open(generated);
    let built = Entry::find("marey").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 960, height: 600 }, &Backend::Cpu).expect("prepare");
    let pick = prepared.pick(&d, [12.0, row(5)]).expect("a pick on the cross");
    assert!(pick.lines.iter().any(|l| l.contains("straggler")), "{pick:?}");
    // Alignment and aggregation change the picture; so does collapsing the stages.
    for k in [1, 2] {
        let d = differ(&pictures[0], &pictures[k]);
        assert!(d > 0.02, "{}: only {d} of the pixels differ from the aligned, aggregated picture", cases[k].0);
    }
}

/// A run whose rows stay on disk (a store opened out of core) draws the training views as the
/// run held in memory does: they read the training model, not the rows.
#[test]
fn training_views_of_a_store_kept_on_disk_draw_as_in_memory() {
    let Some(data) = shared_data_or_skip("training_views_of_a_store_kept_on_disk_draw_as_in_memory") else { return };
    let run = data.join("kineto-dlrm-8gpu");
    let dir = std::env::temp_dir().join(format!("exaviz-ooc-marey-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("run.exaviz");
    exaviz_datasets::convert(run.to_str().unwrap(), &store, &|_, _| {}).unwrap();
    let on_disk = exaviz_store::open_with(&store, &|_, _| {}, 0).unwrap();
    assert!(on_disk.out_of_core.is_some(), "opened out of core");
    let memory = open(run.to_str().unwrap());
    for view in ["marey", "training", "topology"] {
        let a = super::cpu(view, &[], &on_disk, (800, 500));
        let b = super::cpu(view, &[], &memory, (800, 500));
        let d = differ(&a, &b);
        assert!(d < 0.001, "{view}: the store on disk draws another picture ({d} of the pixels differ)");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The critical path drawn through the enhanced Marey's graph of the recorded gloo pipeline
/// (rank 3 computes 1.6x as much): its work along the devices' axes and its crossings between
/// devices in magenta, on both backends (golden); `x` in the window draws it and hides it.
#[test]
fn the_critical_path_runs_through_the_marey_graph() {
    use exaviz_model::selection::{Parts, Selection};
    use exaviz_views::contract::{Frame, View, render_view};
    use exaviz_views::marey::{MareyOptions, MareyView};
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/torch-gloo-pipeline");
    let d = open(dir.to_str().unwrap());
    let img = both("marey", &["--critical-path"], &d, (1024, 768));
    golden("marey_gloo_critical_path.png", &img);
    let view = MareyView::with(MareyOptions::default());
    let frame = Frame { width: 1024, height: 768 };
    let magenta = |sel: &Selection| {
        let img = render_view(&view, &d, sel, frame, &Backend::Cpu).expect("render");
        // Rows of pixels holding the path's colour: its crossings span the devices' axes.
        let rows: std::collections::BTreeSet<usize> = img
            .pixels
            .chunks_exact(4)
            .enumerate()
            .filter(|(_, p)| p[0] > 230 && p[1].abs_diff(64) < 12 && p[2] > 230)
            .map(|(k, _)| k / 1024)
            .collect();
        rows.len()
    };
    let start = Selection::default();
    let on = view.key(&d, &start, frame, "x").expect("x is the Marey graph's key");
    assert_eq!(on.critical, Some(true));
    assert!(view.reads().intersects(Parts::CRITICAL));
    let off = view.key(&d, &on, frame, "x").expect("x again");
    let (before, lit, after) = (magenta(&start), magenta(&on), magenta(&off));
    // From rank 0's axis down to rank 3's: over 400 of the 768 rows.
    assert!(before == 0 && lit > 400 && after == 0, "{before} {lit} {after}");
}

/// A straggler among 10,000 devices: the stages collapse into rows of their thousands of
/// devices, and the one that differs keeps a row of its own under its stage's, labelled with
/// its name, its operators drawn over well over a hairline, on both backends; by index it is
/// only a share of its stage's mean.
#[test]
fn one_straggler_of_10000_devices_keeps_a_row_of_its_own() {
    let d = open("gen:training?devices=10000&straggler=4321");
    let size = (1200, 900);
    let picture = both("marey", &[], &d, size);
    let scene = exaviz_tests::scene("marey", &[], &d, size).expect("a scene");
    let texts: Vec<&str> = scene.labels.iter().map(|l| l.text.as_str()).collect();
    let label = scene.labels.iter().find(|l| l.text.starts_with("rank 4321")).unwrap_or_else(|| panic!("{texts:?}"));
    // Stage 0's row stands for the others; stage 1's keeps apart the straggler's partner down
    // the pipeline (rank 9321), which waits for it.
    assert!(texts.contains(&"stage 0") && texts.contains(&"4,999 devices, 1 out"), "{texts:?}");
    let rows = 2 + texts.iter().filter(|t| t.starts_with("rank ")).count();
    assert!(rows <= 6, "{rows} rows: {texts:?}");
    // The straggler's row: its label's height, half a row's pitch either side.
    let pitch = (900.0 - 34.0 - 92.0) / rows as f32;
    let y = (label.rect[1] + label.rect[3]) / 2.0;
    let computing = |img: &Image, y0: f32| {
        let mut n = 0;
        for y in (y0 - pitch / 2.0) as u32..(y0 + pitch / 2.0) as u32 {
            for x in 190..1200 - 16 {
                let [r, g, b, _] = img.pixel(x, y);
                let near = |c: [f32; 3]| [r, g, b].iter().zip(c).all(|(&v, w)| (f32::from(v) - w * 255.0).abs() <= 3.0);
                n += usize::from(
                    near(exaviz_views::marey::class_colour(exaviz_model::training::Class::Forward))
                        || near(exaviz_views::marey::class_colour(exaviz_model::training::Class::Backward)),
                );
            }
        }
        n
    };
    let seen = computing(&picture, y);
    assert!(seen >= 1500, "the straggler's forward and backward passes over {seen} plot pixels");
    let pick = exaviz_tests::prepared("marey", &[], &d, size).pick(&d, [100.0, y]).expect("a pick on its label");
    assert!(pick.title.starts_with("rank 4321"), "{}", pick.title);
    let by_index = exaviz_tests::scene("marey", &["--rows", "index"], &d, size).expect("a scene");
    assert!(!by_index.labels.iter().any(|l| l.text.starts_with("rank 4321")), "by index, no row of its own");
    assert!(by_index.labels.iter().any(|l| l.text == "5,000 devices"));
}
