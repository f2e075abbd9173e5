//! `--view strategy`, the parallelism-strategy graph (Wei et al., 2024), from XLA HLO modules
//! recorded from JAX (tests/data, with the scripts that made them).

use exaviz_compute::Backend;
use exaviz_views::{Entry, Frame};

use super::{both, golden, open, refused};

fn module(rel: &str) -> String {
    format!("{}/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A data-parallel step after sharding propagation: the forward dots over the batch cut
/// `[8,1]`, coloured as partitioned, on both backends.
#[test]
fn data_parallel_strategies_match_golden_on_both_backends() {
    let d = open(&module(
        "jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt",
    ));
    let g = d.opgraph.as_ref().unwrap();
    let spaces = exaviz_views::strategy::namespaces(g, |_| true);
    assert_eq!(spaces[..2], ["jit(train_step)/transpose(jvp())", "jit(train_step)/jvp()"], "backward, forward");
    let picture = both("strategy", &[], &d, (1200, 600));
    assert!(picture.distinct_colours() > 8, "the picture looks blank");
    golden("strategy_jax_data_parallel.png", &picture);
}

/// A 4-stage pipeline: its collective-permutes drawn as communication, the stage order in the
/// subtitle; a trace without an operator graph is refused saying what the view needs.
#[test]
fn a_pipelines_strategies_match_golden_and_traces_are_refused() {
    let d = open(&module("jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt"));
    let picture = both("strategy", &[], &d, (960, 400));
    golden("strategy_jax_pipeline.png", &picture);
    let e = refused("strategy", &[], &open("gen:fd4?ranks=8&messages=100"), (400, 300));
    assert!(e.contains("HLO module"), "{e}");
}

/// Hovering an operator names it, with its opcode, strategy, class and a permute's pairs; the
/// background between operators picks nothing.
#[test]
fn hovering_an_operator_tells_what_it_is() {
    let d = open(&module("jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt"));
    let built = Entry::find("strategy").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 960, height: 400 }, &Backend::Cpu).expect("prepare");
    let mut titles = std::collections::BTreeSet::new();
    let mut permute = None;
    for y in (0..400).step_by(3) {
        for x in (0..960).step_by(3) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32]) {
                if p.lines[0].starts_with("collective-permute") {
                    permute = Some(p.clone());
                }
                titles.insert(p.title);
            }
        }
    }
    assert_eq!(titles.len(), 15, "every operator of the entry computation is hovered: {titles:?}");
    let p = permute.expect("a collective-permute is hovered");
    assert!(
        p.lines.iter().any(|l| l == "communication") && p.lines.iter().any(|l| l == "pairs: 0->1 1->2 2->3"),
        "{p:?}"
    );
    assert!(prepared.pick(&d, [480.0, 100.0]).is_none(), "nothing above the operators");
}

/// An 8-stage pipeline (eight collective-permutes with pairs 0->1 ... 6->7): the graph is cut
/// into 8 chunks at the permutes, one band per chunk in the stage order of the pairs, each
/// chunk right of the transfer that feeds it; the force layout gives the same places on the CPU
/// and on the GPU.
#[test]
fn a_pipelines_chunks_are_placed_per_stage_in_pair_order() {
    use exaviz_views::strategy::layout;
    let d = open(&module("jax-pipeline8/xla_dump/module_0010.jit_pipeline.cpu_after_optimizations.txt"));
    let g = d.opgraph.as_ref().unwrap();
    let plot = [64.0, 80.0, 1180.0, 560.0];
    let placed = layout(g, plot, &Backend::Cpu).unwrap();
    let stages: Vec<u32> = placed.bands.iter().map(|b| b.0).collect();
    assert_eq!(stages, (0..8).collect::<Vec<u32>>(), "one band per chunk, in the pairs' order");
    for w in placed.bands.windows(2) {
        assert!(w[0].1[1] <= w[1].1[0], "bands stacked top to bottom: {:?}", placed.bands);
    }
    let rect = |n: u32| placed.rects[placed.nodes.iter().position(|&k| k == n).unwrap()];
    for (k, &n) in placed.nodes.iter().enumerate() {
        let (c, r) = (placed.chunks[k], placed.rects[k]);
        let band = placed.bands[c as usize].1;
        assert!(r[1] >= band[0] && r[3] <= band[1], "{} outside its band", g.nodes[n as usize].name);
    }
    let mut permutes = 0;
    for &(a, b) in &g.edges {
        if g.nodes[a as usize].opcode == "collective-permute" {
            permutes += 1;
            assert!(
                rect(a)[2] < rect(b)[0],
                "{} feeds {} to its right",
                g.nodes[a as usize].name,
                g.nodes[b as usize].name
            );
        }
    }
    assert_eq!(permutes, 7, "seven permutes feed the next chunk (the eighth is the result)");
    assert_eq!(layout(g, plot, &super::gpu_backend()).unwrap(), placed, "GPU and CPU place every operator alike");
    let picture = both("strategy", &[], &d, (1200, 600));
    golden("strategy_jax_pipeline8.png", &picture);
}

/// Edge kinds have switches: hiding the long spans from the forward to the backward pass of the
/// data-parallel step says how many were hidden and leaves the other edges; namespaces are
/// chosen by their legend's names, and an unknown one is refused naming the common ones.
#[test]
fn edge_kinds_switch_and_namespaces_are_chosen_by_name() {
    let d = open(&module(
        "jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt",
    ));
    let texts = |options: &[&str]| -> Vec<String> {
        let scene = exaviz_tests::scene("strategy", options, &d, (1200, 600)).unwrap();
        scene.labels.iter().map(|l| l.text.clone()).collect()
    };
    let note = |t: &[String]| t.iter().find(|s| s.starts_with("edges hidden: ")).cloned();
    assert_eq!(note(&texts(&[])), None, "every edge drawn by default");
    let hidden = note(&texts(&["--edges", "data,parameter,collective,transfer"])).expect("a note of the hidden edges");
    let long: usize = hidden.trim_start_matches("edges hidden: long ").parse().unwrap_or_else(|_| panic!("{hidden}"));
    assert!(long > 0, "{hidden}");
    let all = note(&texts(&["--edges", "transfer"])).expect("a note");
    assert!(all.contains("data ") && all.contains("parameter ") && all.contains("long "), "{all}");
    let chosen = texts(&["--namespaces", "transpose(jvp())"]);
    assert!(chosen.iter().any(|t| t == "transpose(jvp())") && !chosen.iter().any(|t| t == "jvp()"), "{chosen:?}");
    let e = refused("strategy", &["--namespaces", "nowhere"], &d, (600, 300));
    assert!(e.contains("no namespace 'nowhere'") && e.contains("jvp()"), "{e}");
}

/// The graph pans and zooms with the window's transform: zoomed twice at an operator's centre,
/// the operator covers twice its width there, while the title stays where it was.
#[test]
fn the_graph_zooms_and_the_titles_stay() {
    use exaviz_render::View;
    use exaviz_render::cpu::render;
    use exaviz_views::strategy::layout;
    let d = open(&module("jax-pipeline8/xla_dump/module_0010.jit_pipeline.cpu_after_optimizations.txt"));
    let built = Entry::find("strategy").unwrap().parse::<&str>(&[]).unwrap();
    assert!(built.view.pans(), "drag pans, the wheel zooms");
    let scene = exaviz_tests::scene("strategy", &[], &d, (1200, 600)).unwrap();
    // The plot: below the titles, above the minimap (50 px) and the legend.
    let placed = layout(d.opgraph.as_ref().unwrap(), [64.0, 86.0, 1176.0, 504.0], &Backend::Cpu).unwrap();
    let r = placed.rects[placed.rects.len() / 2];
    let centre = [(r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0];
    let mut view = View::default();
    view.zoom_at(2.0, centre);
    let (flat, zoomed) = (render(&scene, View::default()), render(&scene, view));
    let beyond = (r[2] + (r[2] - r[0]) * 0.3) as u32;
    let colour = flat.pixel(centre[0] as u32, centre[1] as u32);
    assert_ne!(flat.pixel(beyond, centre[1] as u32), colour, "just right of the operator is not the operator");
    assert_eq!(zoomed.pixel(beyond, centre[1] as u32), colour, "zoomed, the operator reaches there");
    let title = |img: &exaviz_render::Image| img.pixels[..(1200 * 60 * 4) as usize].to_vec();
    assert!(title(&flat) == title(&zoomed), "the title does not move");
}

/// Wei et al.'s linking (§5.3) on a JAX run recorded here (its profile and its HLO dump in one
/// folder): the folder's optimized module is the run's operator graph; a click on an operator
/// in the strategy view selects it by name, and the Marey view then outlines its band on every
/// device around its first run (the click selects that time); a click on a band in the Marey
/// view selects the same operator, which the strategy view outlines with its namespace.
#[test]
fn a_click_in_either_view_selects_the_operator_in_the_other() {
    use exaviz_model::selection::Selection;
    use exaviz_render::KIND_SEGMENT;
    let d = open(&module("jax-cpu-pipeline"));
    assert!(d.training.is_some() && d.opgraph.is_some(), "the run and its operator graph");
    // The execution order from the profile: the four permutes run one after another.
    let g = d.opgraph.as_ref().unwrap();
    let rank = |name: &str| g.exec_rank(g.nodes.iter().position(|n| n.name == name).unwrap());
    let permutes: Vec<u32> = (12..16).map(|k| rank(&format!("ppermute.{k}"))).collect();
    assert!(!g.executed.is_empty() && permutes.windows(2).all(|w| w[0] < w[1]), "{permutes:?}");
    let frame = Frame { width: 960, height: 400 };
    let prepared = |view: &str| {
        let built = Entry::find(view).unwrap().parse::<&str>(&[]).unwrap();
        built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare")
    };
    let segments = |s: &exaviz_render::Scene| {
        s.layers.iter().flat_map(|l| &l.instances).filter(|i| i.kind & 255 == KIND_SEGMENT).count()
    };
    let (strategy, marey) = (prepared("strategy"), prepared("marey"));
    let marey_at = |sel: &Selection| {
        let built = Entry::find("marey").unwrap().parse::<&str>(&[]).unwrap();
        built.view.prepare(&d, sel, frame, &Backend::Cpu).expect("prepare")
    };
    // The strategy view: find the permute ppermute.13 and click it.
    let mut click = None;
    for y in (60..380).step_by(2) {
        for x in (0..960).step_by(2) {
            if let Some(p) = strategy.pick(&d, [x as f32, y as f32])
                && p.title == "ppermute.13"
            {
                click = p.clicked(&Selection::default());
            }
        }
    }
    let sel = click.expect("the permute is clicked");
    assert_eq!(sel.operator.map(|o| o.as_str().to_string()).as_deref(), Some("ppermute.13"));
    // Its time too: a window around the permute's first run, inside the run.
    let t = d.training.as_ref().unwrap();
    let (a, b) = sel.window_s.expect("a time window");
    let whole = (t.span().1 - t.span().0) as f64 / 1e9;
    assert!(0.0 <= a && a < b && b - a < whole / 2.0, "{a}..{b} of {whole} s");
    let zoomed = marey_at(&sel);
    let none = Selection::default();
    let window_only = Selection { window_s: sel.window_s, ..none };
    let outlined = segments(&zoomed.draw(&d, &sel)) - segments(&zoomed.draw(&d, &window_only));
    assert!(outlined >= 4 * 4, "the permute's band outlined on the four devices: {outlined} segments");
    assert!(segments(&strategy.draw(&d, &sel)) > segments(&strategy.draw(&d, &none)), "and in the strategy view");
    // The Marey view: a click on a band of another operator selects it there.
    let mut picked = None;
    for y in (40..380).step_by(2) {
        for x in (200..960).step_by(2) {
            if let Some(p) = marey.pick(&d, [x as f32, y as f32])
                && p.title.starts_with("wrapped_tanh")
            {
                picked = p.clicked(&Selection::default()).map(|s| (p.title.clone(), s));
            }
        }
    }
    let (name, sel) = picked.expect("a tanh band is clicked");
    assert_eq!(sel.operator.map(|o| o.as_str().to_string()), Some(name.clone()));
    assert!(segments(&strategy.draw(&d, &sel)) >= segments(&strategy.draw(&d, &none)) + 4, "{name} outlined");
}

/// A PyTorch run: Kineto profiles with the execution traces of the same step beside them
/// (`scripts/record/record_torch_et.py`): the strategy view draws rank 0's graph, its six
/// all-reduces as communication, the backward and the optimizer as namespaces; the Marey view
/// still draws the profile.
#[test]
fn a_pytorch_execution_trace_draws_as_an_operator_graph() {
    let d = open(&module("torch-et"));
    assert!(d.training.is_some(), "the profiles are read");
    let g = d.opgraph.as_ref().expect("the execution trace is the operator graph");
    assert_eq!(g.source, "PyTorch execution trace");
    let spaces = exaviz_views::strategy::namespaces(g, |_| true);
    assert_eq!(spaces, ["backward", "Optimizer.step#SGD.step"], "{spaces:?}");
    let picture = both("strategy", &[], &d, (1000, 420));
    golden("strategy_torch_et.png", &picture);
    let built = Entry::find("strategy").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 1000, height: 420 }, &Backend::Cpu).expect("prepare");
    let mut reduces = std::collections::BTreeSet::new();
    for y in (0..420).step_by(3) {
        for x in (0..1000).step_by(3) {
            if let Some(p) = prepared.pick(&d, [x as f32, y as f32])
                && p.lines[0].starts_with("all-reduce")
            {
                assert!(p.lines.iter().any(|l| l == "communication"), "{p:?}");
                reduces.insert(p.title);
            }
        }
    }
    assert_eq!(reduces.len(), 6, "{reduces:?}");
    assert!(both("marey", &[], &d, (600, 300)).distinct_colours() > 4);
    // Linked with the profile by record-function id: a layer runs as `aten::linear`, an
    // autograd function as its `evaluate_function` event, an all-reduce as gloo's record.
    let named = |name: &str| g.profile_name(g.nodes.iter().position(|n| n.name == name).unwrap()).to_string();
    assert_eq!(named("aten::linear #5"), "aten::linear");
    assert!(named("AddmmBackward0 #96").starts_with("autograd::engine::evaluate_function: AddmmBackward0"));
    assert_eq!(named("c10d::allreduce_ #208"), "gloo:all_reduce");
    // A click on a layer selects it by that name and its time; the Marey view outlines it, and
    // the strategy view every layer the profile names alike.
    let layer = (0..420)
        .step_by(2)
        .flat_map(|y| (0..1000).step_by(2).map(move |x| [x as f32, y as f32]))
        .find_map(|at| prepared.pick(&d, at).filter(|p| p.title.starts_with("aten::linear #")))
        .expect("a layer is hovered");
    assert!(layer.lines.iter().any(|l| l == "runs as aten::linear in the profile"), "{layer:?}");
    let sel = layer.clicked(&exaviz_model::selection::Selection::default()).expect("a click selects");
    assert_eq!(sel.operator.map(|o| o.as_str().to_string()).as_deref(), Some("aten::linear"));
    assert!(sel.window_s.is_some(), "its time in the Marey view");
    let marey = Entry::find("marey").unwrap().parse::<&str>(&[]).unwrap();
    let m = marey.view.prepare(&d, &sel, Frame { width: 800, height: 400 }, &Backend::Cpu).expect("prepare");
    assert!(matches!(m.draw(&d, &sel), std::borrow::Cow::Owned(_)), "the Marey view outlines it");
    let frames = |scene: &exaviz_render::Scene| {
        let white = |i: &&exaviz_render::Instance| {
            i.kind & 255 == exaviz_render::KIND_SEGMENT && i.color == [1.0, 1.0, 1.0, 1.0]
        };
        scene.layers.iter().flat_map(|l| &l.instances).filter(white).count()
    };
    let outlined =
        frames(&prepared.draw(&d, &sel)) - frames(&prepared.draw(&d, &exaviz_model::selection::Selection::default()));
    assert_eq!(outlined, 3 * 4, "the three layers outlined, four sides each");
}

/// Similar substructures stacked: in the data-parallel step the optimizer's updates of the
/// weights (a multiply and a subtract each) are one stack, drawn once with its count and
/// hovered as such; `--unstacked` draws every operator.
#[test]
fn similar_pieces_are_stacked_and_unstacked_on_request() {
    let d = open(&module(
        "jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt",
    ));
    let g = d.opgraph.as_ref().unwrap();
    let entry = |i: usize| g.entry.is_none_or(|e| g.nodes[i].computation == e);
    let s = exaviz_views::strategy::stacks(g, &entry);
    let update = s
        .stacks
        .iter()
        .find(|&&(first, _)| g.nodes[first as usize].namespace == "jit(train_step)/mul")
        .expect("the optimizer's updates are stacked");
    assert_eq!(update.1, 3, "three layers' weights (biases differ: {:?})", s.stacks);
    let shown = (0..g.nodes.len()).filter(|&i| entry(i)).count();
    let frame = Frame { width: 1200, height: 600 };
    let prepare = |args: &[&str]| {
        let built = Entry::find("strategy").unwrap().parse(args).unwrap();
        built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare")
    };
    let hovered = |p: &dyn exaviz_views::Prepared| {
        let mut titles = std::collections::BTreeSet::new();
        let mut stacked = 0;
        for y in (60..560).step_by(2) {
            for x in (0..1200).step_by(2) {
                if let Some(pick) = p.pick(&d, [x as f32, y as f32]) {
                    stacked += usize::from(
                        titles.insert(pick.title.clone())
                            && pick.lines.iter().any(|l| l.starts_with("stacked: one of")),
                    );
                }
            }
        }
        (titles.len(), stacked)
    };
    let (drawn, stacked) = hovered(prepare(&[]).as_ref());
    assert_eq!(drawn, shown - s.hidden_count(), "every drawn operator is hovered");
    assert!(stacked >= 2 * s.stacks.len(), "{stacked} stacked operators hovered");
    let (all, none) = hovered(prepare(&["--unstacked"]).as_ref());
    assert_eq!((all, none), (shown, 0));
}
