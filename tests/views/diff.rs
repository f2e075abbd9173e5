//! `--view diff`: what changed from a run to another (`--against B`), on both backends.

use super::{both, golden, open, refused};

/// `gen:wrf` against itself with rank 11 computing 1.5x: its bar and the waiting it causes are
/// drawn red, the messages unchanged (the matrix white).
#[test]
fn a_slowed_rank_is_drawn_red_among_the_largest_changes() {
    let a = open("gen:wrf?iterations=20&seed=5");
    let picture = both("diff", &["--against", "gen:wrf?iterations=20&seed=5&slow_rank=11"], &a, (1000, 520));
    golden("diff_wrf_slow_rank11.png", &picture);
    // Taller: the two runs' timelines under the charts, aligned at their starts; a window
    // zooms both.
    let b = "gen:wrf?iterations=20&seed=5&slow_rank=11";
    let tall = both("diff", &["--against", b], &a, (1000, 760));
    golden("diff_wrf_slow_rank11_timelines.png", &tall);
    let zoomed = both("diff", &["--against", b, "--from", "0", "--to", "40"], &a, (1000, 760));
    assert!(super::differ(&tall, &zoomed) > 0.02, "the window zooms the timelines");
    let a = open("gen:wrf?iterations=20&seed=5");
    assert!(refused("diff", &[], &a, (400, 300)).contains("--against"));
    assert!(refused("diff", &["--against", "x"], &a, (400, 300)).contains("not opened"));
}

/// A click on a change selects it in every panel: a region's bar finds the region in both
/// timelines, a row's bar frames the row in both timelines and the matrix, a cell of the matrix
/// highlights the pair's messages in both timelines; the chosen bar or cell is framed, and a
/// second click clears the choice.
#[test]
fn a_click_on_a_change_selects_it_in_every_panel() {
    use exaviz_compute::Backend;
    use exaviz_views::contract::render_view;
    use exaviz_views::{Entry, Frame};
    let b = "gen:wrf?iterations=20&seed=5&slow_rank=11";
    let a = open("gen:wrf?iterations=20&seed=5");
    let built = Entry::find("diff").unwrap().parse(&["--against", b]).unwrap();
    exaviz_tests::compare(built.view.as_ref());
    let frame = Frame { width: 1000, height: 760 };
    let prepared = built.view.prepare(&a, &built.selection, frame, &Backend::Cpu).unwrap();
    let picks: Vec<_> = (70..380)
        .step_by(3)
        .flat_map(|y| (20..1000).step_by(7).map(move |x| [x as f32, y as f32]))
        .filter_map(|at| prepared.pick(&a, at))
        .collect();
    let plain = render_view(built.view.as_ref(), &a, &built.selection, frame, &Backend::Cpu).unwrap();
    let shown = |sel: &exaviz_model::selection::Selection| {
        render_view(built.view.as_ref(), &a, sel, frame, &Backend::Cpu).unwrap()
    };
    // Pixels that differ from the plain picture in rows `ys` (A's timeline: 380-570; B's: 570-760).
    let changed = |img: &exaviz_render::Image, ys: std::ops::Range<usize>| {
        let row = 4 * plain.width as usize;
        ys.filter(|y| plain.pixels[y * row..(y + 1) * row] != img.pixels[y * row..(y + 1) * row]).count()
    };
    let compute = picks.iter().find(|p| p.title == "region compute").expect("compute's bar");
    let chosen = compute.clicked(&built.selection).expect("a click selects");
    assert_eq!(chosen.search.map(|s| s.as_str().to_string()).as_deref(), Some("compute"));
    assert!(super::differ(&plain, &shown(&chosen)) > 0.01, "both timelines show what was found");
    // Rank 11's bar: the row, by A's location (rank 11 is location 11 in gen:wrf).
    let row = picks.iter().find(|p| p.title == "location rank 11").expect("rank 11's bar");
    let chosen = row.clicked(&built.selection).expect("a click on a row's bar selects the row");
    let area = chosen.area.expect("the row's area");
    assert_eq!((area.first, area.last), (11, 11));
    let framed = shown(&chosen);
    let (in_a, in_b) = (changed(&framed, 380..570), changed(&framed, 570..760));
    assert!(in_a >= 2 && in_b >= 2, "the row is framed in both timelines: {in_a} and {in_b} pixel rows");
    assert!(changed(&framed, 70..380) >= 2, "and in the matrix");
    assert_eq!(row.clicked(&chosen).expect("a second click").area, None, "a second click clears it");
    // A cell of one pair: its messages in both timelines.
    let cell = picks
        .iter()
        .find(|p| p.title.starts_with("rank ") && p.title.contains(" → ") && p.click.is_some())
        .expect("a cell of one pair");
    let chosen = cell.clicked(&built.selection).expect("a click on a cell selects the pair");
    let (s, r) = chosen.pair.expect("a pair");
    assert_eq!(cell.title, format!("rank {s} → rank {r}"));
    let lit = shown(&chosen);
    let (in_a, in_b) = (changed(&lit, 380..570), changed(&lit, 570..760));
    assert!(in_a >= 2 && in_b >= 2, "the pair's messages in both timelines: {in_a} and {in_b} pixel rows");
}

/// Two training runs (`gen:training` against its copy with a straggler on rank 3): under the
/// charts, the two runs' Marey graphs of the step that changed most, on one time scale from
/// the step's start in each; `--step` chooses another, and a region's bar outlines its
/// operator in both graphs.
#[test]
fn two_training_runs_show_the_marey_graphs_of_the_same_step() {
    let b = "gen:training?straggler=3";
    let a = open("gen:training");
    let picture = both("diff", &["--against", b], &a, (1000, 760));
    golden("diff_training_straggler3_mareys.png", &picture);
    let first = both("diff", &["--against", b, "--step", "0"], &a, (1000, 760));
    assert!(super::differ(&picture, &first) > 0.01, "another step draws other graphs");
    let zoomed = both("diff", &["--against", b, "--from", "0", "--to", "0.01"], &a, (1000, 760));
    assert!(super::differ(&picture, &zoomed) > 0.01, "a window zooms both graphs");
    use exaviz_compute::Backend;
    use exaviz_views::contract::render_view;
    use exaviz_views::{Entry, Frame};
    let built = Entry::find("diff").unwrap().parse(&["--against", b]).unwrap();
    exaviz_tests::compare(built.view.as_ref());
    let frame = Frame { width: 1000, height: 760 };
    let prepared = built.view.prepare(&a, &built.selection, frame, &Backend::Cpu).unwrap();
    let bar = (70..380)
        .step_by(3)
        .filter_map(|y| prepared.pick(&a, [40.0, y as f32]))
        .find(|p| p.title.starts_with("region forward layer 3"))
        .expect("a region's bar");
    let chosen = bar.clicked(&built.selection).expect("a click selects the region");
    let plain = render_view(built.view.as_ref(), &a, &built.selection, frame, &Backend::Cpu).unwrap();
    let outlined = render_view(built.view.as_ref(), &a, &chosen, frame, &Backend::Cpu).unwrap();
    let row = 4 * plain.width as usize;
    let changed = |ys: std::ops::Range<usize>| {
        ys.filter(|y| plain.pixels[y * row..(y + 1) * row] != outlined.pixels[y * row..(y + 1) * row]).count()
    };
    assert!(changed(380..570) > 2 && changed(570..760) > 2, "the operator is outlined in both graphs");
}

/// The recorded gloo pair (rank 3 slowed 3x) with `--right paths`: the call paths as a
/// differential flame graph, outermost on top; a frame's pick names its path with both runs'
/// values, and a click finds its region.
#[test]
fn call_paths_are_drawn_as_a_differential_flame_graph() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/torch-gloo-pair");
    let (even, slow) = (format!("{dir}/even"), format!("{dir}/slow3"));
    let a = open(&even);
    let picture = both("diff", &["--against", &slow, "--right", "paths"], &a, (1100, 560));
    golden("diff_gloo_pair_paths.png", &picture);
    let matrix = both("diff", &["--against", &slow, "--right", "matrix"], &a, (1100, 560));
    assert!(super::differ(&picture, &matrix) > 0.02, "the flame graph in place of the matrix");
    use exaviz_compute::Backend;
    use exaviz_views::{Entry, Frame};
    let built = Entry::find("diff").unwrap().parse(&["--against", &slow, "--right", "paths"]).unwrap();
    exaviz_tests::compare(built.view.as_ref());
    let prepared = built.view.prepare(&a, &built.selection, Frame { width: 1100, height: 560 }, &Backend::Cpu).unwrap();
    let frames: Vec<_> = (80..200)
        .step_by(4)
        .flat_map(|y| (640..1100).step_by(3).map(move |x| [x as f32, y as f32]))
        .filter_map(|at| prepared.pick(&a, at))
        .collect();
    let nested = frames.iter().find(|p| p.title == "aten::linear > aten::addmm").expect("a nested frame");
    assert!(nested.lines.iter().any(|l| l.starts_with("change +")), "{nested:?}");
    let chosen = nested.clicked(&built.selection).expect("a click finds the region");
    assert_eq!(chosen.search.map(|s| s.as_str().to_string()).as_deref(), Some("aten::addmm"));
}
