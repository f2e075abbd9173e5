//! `--view steps`: a run's steps across, its locations down, each cell a location's work in a
//! step against the step's median; a straggler stands out as a row.

use exaviz_compute::Backend;
use exaviz_views::contract::{Entry, Frame};

use super::{both, golden, open, refused};

/// The deviation a tooltip reads ("... (+12.3%)"), in percent.
fn percent(line: &str) -> Option<f64> {
    let at = line.rfind('(')?;
    line[at + 1..].strip_suffix("%)")?.parse().ok()
}

/// Per labelled row of the steps view of `d` at `size`, its label and its largest deviation
/// over the steps (from the tooltips at the middle of each step's cells).
fn rows_and_deviations(d: &exaviz_model::dataset::Dataset, size: (u32, u32)) -> Vec<(String, f64)> {
    let built = Entry::find("steps").unwrap().parse::<&str>(&[]).unwrap();
    let frame = Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(d, &built.selection, frame, &Backend::Cpu).expect("a steps picture");
    let scene = exaviz_tests::scene("steps", &[], d, size).expect("a scene");
    let plot_x = |f: f32| 150.0 + f * (size.0 as f32 - 150.0 - 180.0);
    let mut out = Vec::new();
    for l in scene.labels.iter().filter(|l| l.rect[2] <= 150.0 && l.rect[1] > 50.0) {
        let y = (l.rect[1] + l.rect[3]) / 2.0;
        let mut most = f64::NEG_INFINITY;
        let mut title = None;
        for k in 0..40 {
            let Some(pick) = prepared.pick(d, [plot_x((k as f32 + 0.5) / 40.0), y]) else { continue };
            title = Some(pick.title.clone());
            most = pick.lines.iter().filter_map(|s| percent(s)).fold(most, f64::max);
        }
        if let Some(title) = title {
            out.push((title, most));
        }
    }
    out
}

/// 2,048 ranks grouped step by step, rank 77 three times as long in a region of its own: its
/// row of its own, labelled, stands out; the picture on both backends matches its golden.
#[test]
fn a_slow_rank_of_2048_is_a_row_of_its_own() {
    let d = open("gen:fd4?ranks=2048&messages=50000&slow_rank=77");
    let size = (800, 500);
    let picture = both("steps", &[], &d, size);
    golden("steps_fd4_2048_slow77.png", &picture);
    let rows = rows_and_deviations(&d, size);
    let slow = rows.iter().find(|(t, _)| t == "rank 77").unwrap_or_else(|| panic!("rank 77 has a row: {rows:?}"));
    assert!(slow.1 > 100.0, "rank 77 works over twice the median: {rows:?}");
    let band = rows.iter().find(|(t, _)| t.starts_with("ranks ")).unwrap_or_else(|| panic!("a band: {rows:?}"));
    assert!(band.1.abs() < 10.0, "the band works as its step's median: {rows:?}");
}

/// A real PyTorch DDP run on gloo (4 ranks, rank 3 slow): its rows are the ranks' threads, and
/// the row that works longest past its steps' medians is one of rank 3's.
#[test]
fn the_slow_rank_of_a_real_ddp_run_stands_out() {
    let d = open(concat!(env!("CARGO_MANIFEST_DIR"), "/data/torch-gloo-pair/slow3"));
    let rows = rows_and_deviations(&d, (1024, 768));
    assert!(rows.len() >= 4, "{rows:?}");
    let top = rows.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    assert!(top.0.starts_with("rank 3") && top.1 > 20.0, "{rows:?}");
}

/// A trace without steps is refused in one line that says why.
#[test]
fn a_trace_without_steps_is_refused() {
    let d = open("gen:wrf?iterations=1");
    let e = refused("steps", &[], &d, (640, 400));
    assert!(e.contains("needs steps") && !e.contains('\n'), "{e}");
}

/// A click on a cell opens that location's step in the timeline: the pick says so, and the
/// timeline prepared with what it selects shows the step's window (with a margin), the slow
/// rank's area outlined with its statistics summed, and the rank's row named.
#[test]
fn a_click_on_a_cell_opens_its_step_in_the_timeline() {
    use exaviz_model::selection::Selection;
    let d = open("gen:fd4?ranks=2048&messages=50000&slow_rank=77");
    let size = (800, 500);
    let built = Entry::find("steps").unwrap().parse::<&str>(&[]).unwrap();
    let frame = Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("a steps picture");
    let scene = exaviz_tests::scene("steps", &[], &d, size).expect("a scene");
    let label = scene.labels.iter().find(|l| l.text == "rank 77").expect("rank 77's row");
    let y = (label.rect[1] + label.rect[3]) / 2.0;
    let x = 150.0 + 0.5 * (size.0 as f32 - 150.0 - 180.0);
    let pick = prepared.pick(&d, [x, y]).expect("a pick on rank 77's cell");
    assert_eq!(pick.opens, Some("timeline"), "{pick:?}");
    assert!(pick.lines.iter().any(|l| l.starts_with("click: open this step")), "{:?}", pick.lines);
    let step = pick.lines[0].clone();
    let sel = pick.clicked(&Selection::default()).expect("a click selects");
    let (a, b) = sel.window_s.expect("the step's window");
    // "step K: A s to B s": the window holds the step, with at most a tenth of it either side.
    let times: Vec<f64> = step.split(' ').filter_map(|w| w.parse().ok()).collect();
    let (from, to) = (times[times.len() - 2], times[times.len() - 1]);
    assert!(a <= from && b >= to && (b - a) <= 1.21 * (to - from) + 1e-6, "{step}: window {a}-{b}");
    let area = sel.area.expect("the rank's area");
    let rank = d.trace.locations.name.iter().position(|n| n == "rank 77").unwrap() as u32;
    assert_eq!((area.first, area.last, sel.opened), (rank, rank, Some(rank)));
    let timeline = Entry::find("timeline").unwrap().parse::<&str>(&[]).unwrap();
    let shown = timeline.view.prepare(&d, &sel, frame, &Backend::Cpu).expect("the timeline of the step");
    let summary = shown.area_summary().expect("the area's statistics");
    assert_eq!(summary.locations, vec!["rank 77".to_string()]);
    assert!(summary.regions.iter().any(|r| r.name == "slow_work"), "the slow rank's region in its step");
    // The time axis is the step's: its ticks (seconds since the start) inside the window.
    let texts: Vec<String> = shown.draw(&d, &sel).labels.iter().map(|l| l.text.clone()).collect();
    let seconds = texts.iter().take_while(|t| !t.starts_with("time since")).filter_map(|t| t.parse::<f64>().ok());
    assert!(seconds.filter(|s| (a..=b).contains(s)).count() >= 2, "{texts:?} against {a}-{b}");
}
