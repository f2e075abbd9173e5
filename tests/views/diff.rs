//! `--view diff`: what changed from a run to another (`--against B`), on both backends.

use std::sync::Arc;

use super::{both, golden, open, refused};

/// `gen:wrf` against itself with rank 11 computing 1.5x: its bar and the waiting it causes are
/// drawn red, the messages unchanged (the matrix white).
#[test]
fn a_slowed_rank_is_drawn_red_among_the_largest_changes() {
    let mut a = open("gen:wrf?iterations=20&seed=5");
    a.against = Some(Arc::new(open("gen:wrf?iterations=20&seed=5&slow_rank=11")));
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

/// A click on a region's bar finds the region in both timelines (and frames the bar); a click
/// on a row's bar selects nothing.
#[test]
fn a_click_on_a_regions_bar_finds_it_in_both_timelines() {
    use exaviz_engine::Backend;
    use exaviz_engine::views::contract::render_view;
    use exaviz_engine::views::{Entry, Frame};
    let b = "gen:wrf?iterations=20&seed=5&slow_rank=11";
    let mut a = open("gen:wrf?iterations=20&seed=5");
    a.against = Some(Arc::new(open(b)));
    let built = Entry::find("diff").unwrap().parse(&["--against", b]).unwrap();
    let frame = Frame { width: 1000, height: 760 };
    let prepared = built.view.prepare(&a, &built.selection, frame, &Backend::Cpu).unwrap();
    let picks: Vec<_> = (70..300)
        .step_by(3)
        .flat_map(|y| [40.0, 300.0].map(|x| [x, y as f32]))
        .filter_map(|at| prepared.pick(&a, at))
        .collect();
    let compute = picks.iter().find(|p| p.title == "region compute").expect("compute's bar");
    let chosen = compute.clicked(&built.selection).expect("a click selects");
    assert_eq!(chosen.search.map(|s| s.as_str().to_string()).as_deref(), Some("compute"));
    let row = picks.iter().find(|p| p.title == "location rank 11").expect("rank 11's bar");
    assert!(row.click.is_none());
    let plain = render_view(built.view.as_ref(), &a, &built.selection, frame, &Backend::Cpu).unwrap();
    let found = render_view(built.view.as_ref(), &a, &chosen, frame, &Backend::Cpu).unwrap();
    assert!(super::differ(&plain, &found) > 0.01, "both timelines show what was found");
}
