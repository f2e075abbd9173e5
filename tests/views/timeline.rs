//! `--view timeline` (Brendel et al., 2016): the generated MPI cases plain, hierarchically
//! bundled and grid-routed with additive mixing, and the real ping-pong OTF2 trace.

use exaviz_tests::shared_data_or_skip;

use super::{MPI_CASES, both, differ, golden, open};

#[test]
fn timelines_match_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let plain = both("timeline", &[], &d, (480, 320));
        assert!(plain.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("timeline_{case}.png"), &plain);
        let bundled: [(&str, &[&str]); 2] = [
            ("hierarchical", &["--bundle", "hierarchical", "--beta", "0.85"]),
            ("grid_additive", &["--bundle", "grid", "--beta", "0.85", "--mix", "additive"]),
        ];
        for (name, options) in bundled {
            let picture = both("timeline", options, &d, (480, 320));
            let moved = differ(&plain, &picture);
            assert!(moved > 0.01, "{name} {case}: bundled like the plain timeline ({moved})");
            golden(&format!("timeline_{name}_{case}.png"), &picture);
        }
    }
}

/// The real ping-pong trace's timeline, zoomed on the exchange.
#[test]
fn otf2_timeline_matches_golden() {
    let Some(data) = shared_data_or_skip("otf2 timeline golden") else { return };
    let mut d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    d.name = "ping-pong-otf2".into();
    let picture = both("timeline", &["--from", "0.1948", "--to", "0.1985"], &d, (480, 240));
    golden("timeline_pingpong_otf2.png", &picture);
}

/// A search on the real ping-pong trace: `--highlight MPI_Recv` lights the receives (brighter
/// than their colour in the plain picture) and dims the rest, and says how many it found; a
/// search that matches nothing says so.
#[test]
fn otf2_timeline_highlights_a_search() {
    let Some(data) = shared_data_or_skip("otf2 timeline search") else { return };
    let mut d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    d.name = "ping-pong-otf2".into();
    let window = ["--from", "0.1948", "--to", "0.1985"];
    let size = (480, 240);
    let plain = both("timeline", &window, &d, size);
    let lit = both("timeline", &[&window[..], &["--highlight", "mpi_recv"]].concat(), &d, size);
    let changed = differ(&plain, &lit);
    assert!(changed > 0.1, "the search changed little of the picture: {changed}");
    // Brighter and darker pixels both: the receives lit, the rest dimmed.
    let luma = |p: &[u8]| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]);
    let (mut brighter, mut darker) = (0, 0);
    for (a, b) in plain.pixels.chunks_exact(4).zip(lit.pixels.chunks_exact(4)) {
        match luma(b).cmp(&luma(a)) {
            std::cmp::Ordering::Greater if luma(b) > luma(a) + 30 => brighter += 1,
            std::cmp::Ordering::Less if luma(b) + 30 < luma(a) => darker += 1,
            _ => {}
        }
    }
    let plot = (size.0 * size.1) as usize / 4;
    assert!(brighter > plot / 20 && darker > plot / 20, "brighter {brighter}, darker {darker}");
    golden("timeline_pingpong_otf2_search.png", &lit);
    let text = |options: &[&str]| -> Vec<String> {
        let scene = exaviz_tests::scene("timeline", options, &d, (1024, 768)).expect("a scene");
        scene.labels.iter().map(|l| l.text.clone()).collect()
    };
    let found = text(&["--highlight", "MPI_Recv"]);
    assert!(found.iter().any(|t| t.contains("16 here, 16 in the trace")), "{found:?}");
    let none = text(&["--highlight", "MPI_Allreduce"]);
    assert!(none.iter().any(|t| t.contains("no region matches")), "{none:?}");
}

/// Stepping to a search's match marks it: `n` selects the first receive of the real ping-pong
/// trace, the window moves to it, and the picture frames it in white at its place.
#[test]
fn the_current_match_is_framed() {
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame, render_view};
    use exaviz_views::search;
    let Some(data) = shared_data_or_skip("otf2 timeline match") else { return };
    let d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    let built = Entry::find("timeline").unwrap().parse(&["--highlight", "MPI_Recv"]).unwrap();
    let text = built.selection.search.expect("the search");
    let o = search::step(&d, &text, None, true).expect("a match");
    assert_eq!((o.nth, o.of), (0, 16));
    let sel = search::select(&d, &built.selection, &o);
    let found = sel.found.expect("the match is marked");
    assert_eq!((found.from, found.to, found.first, found.last), (o.start, o.end, o.location, o.location));
    let frame = Frame { width: 800, height: 500 };
    let render = |s| render_view(built.view.as_ref(), &d, s, frame, &Backend::Cpu).expect("render");
    let unmarked = exaviz_model::selection::Selection { found: None, ..sel };
    let (plain, marked) = (render(&unmarked), render(&sel));
    // Pixels turned white by the mark, all near the match's place in the window.
    let (t0, tps) = (exaviz_views::trace::span(&d.trace).unwrap().0, d.trace.ticks_per_second as f64);
    let (a, b) = sel.window_s.unwrap();
    let x = 80.0 + (((o.start + o.end) / 2 - t0) as f64 / tps - a) / (b - a) * (800.0 - 280.0);
    let mut columns = Vec::new();
    for (k, (p, m)) in plain.pixels.chunks_exact(4).zip(marked.pixels.chunks_exact(4)).enumerate() {
        if p != m && m[..3].iter().all(|&c| c > 240) {
            columns.push((k % 800) as f64);
        }
    }
    assert!(columns.len() > 40, "the match is not framed: {} pixels", columns.len());
    let far = columns.iter().filter(|c| (*c - x).abs() > 40.0).count();
    assert_eq!(far, 0, "white away from the match at x {x}: {columns:?}");
}

/// Nesting levels as bands, as Perfetto stacks slices: on the real ping-pong trace each rank's
/// row shows `main` in its top half and the MPI calls nested in it in the bottom half (on both
/// backends); `--innermost` draws the MPI calls over the whole row; a stencil trace of 1,024
/// ranks, a pixel or less each, is drawn as before either way.
#[test]
fn nested_regions_are_drawn_in_bands_per_level() {
    let Some(data) = shared_data_or_skip("otf2 timeline levels") else { return };
    let d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    let window = ["--from", "0.1948", "--to", "0.1985"];
    let size = (800, 500);
    let banded = both("timeline", &window, &d, size);
    let innermost = both("timeline", &[&window[..], &["--innermost"]].concat(), &d, size);
    // Rank 0's row spans y 48 to 248: its top band (main) and bottom band (MPI calls).
    let px = |img: &exaviz_render::Image, x: u32, y: u32| img.pixel(x, y)[..3].to_vec();
    let p = exaviz_views::timeline::plot_rect(size.0, size.1).unwrap();
    let columns = p.x0 + 20..p.x0 + p.w - 20;
    let top: Vec<_> = columns.clone().map(|x| px(&banded, x, 90)).collect();
    let bottom: Vec<_> = columns.clone().map(|x| px(&banded, x, 200)).collect();
    assert!(top.windows(2).all(|w| w[0] == w[1]), "main covers the top band alone");
    let calls = bottom.iter().filter(|c| **c != top[0]).count();
    assert!(calls > 100, "the bottom band shows the MPI calls: {calls} columns differ from main");
    // Innermost: the top of the row shows the calls as its bottom does.
    let same = columns.filter(|&x| px(&innermost, x, 90) == px(&innermost, x, 200)).count();
    assert!(same > 400, "one state per column over the row: {same}");
    // The tooltip names the band's state: main in the top band, a call in the bottom one.
    let built = exaviz_views::contract::Entry::find("timeline").unwrap().parse(&window).unwrap();
    let frame = exaviz_views::contract::Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &exaviz_compute::Backend::Cpu).unwrap();
    let x = (columns_of_calls(&bottom, &top[0]) + p.x0 as usize + 20) as f32;
    let state = |y: f32| prepared.pick(&d, [x, y]).expect("a pick").lines[1].clone();
    assert!(state(90.0).starts_with("int main"), "{}", state(90.0));
    assert!(state(200.0).starts_with("MPI_"), "{}", state(200.0));
    let fd4 = open("gen:fd4?iterations=2");
    let plain = both("timeline", &[], &fd4, size);
    assert_eq!(plain.pixels, both("timeline", &["--innermost"], &fd4, size).pixels);
}

/// The first of `columns` whose colour is not `main`'s.
fn columns_of_calls(columns: &[Vec<u8>], main: &[u8]) -> usize {
    columns.iter().position(|c| c[..] != main[..]).expect("a call")
}

/// `n` and `N` on a generated stencil trace step through the matches as a sorted list of them
/// does (time, then location, then depth), with each one's place and the count, wrapping at
/// both ends, from the start and from any point.
#[test]
fn search_steps_follow_the_sorted_matches() {
    use exaviz_model::selection::Search;
    use exaviz_views::search::step;
    let d = open("gen:fd4?iterations=2");
    let i = &d.trace.intervals;
    let kinds: Vec<bool> = d.trace.region_names.iter().map(|n| n.to_lowercase().contains("wait")).collect();
    let mut sorted: Vec<(u64, u32, u32)> = (0..i.start.len())
        .filter(|&k| kinds[i.kind[k] as usize])
        .map(|k| (i.start[k], i.location[k], i.depth[k]))
        .collect();
    sorted.sort_unstable();
    assert!(sorted.len() > 100, "{}", sorted.len());
    let s = Search::new("wait").unwrap();
    let n = sorted.len();
    let check = |from: Option<(u64, u32, u32)>, forward: bool, want: usize| {
        let o = step(&d, &s, from, forward).unwrap();
        assert_eq!(((o.start, o.location, o.depth), o.nth, o.of), (sorted[want], want, n), "{from:?} {forward}");
    };
    check(None, true, 0);
    check(None, false, n - 1);
    check(Some(sorted[n - 1]), true, 0);
    check(Some(sorted[0]), false, n - 1);
    for k in [1, 17, n / 2, n - 2] {
        check(Some(sorted[k]), true, k + 1);
        check(Some(sorted[k]), false, k - 1);
        // From between two matches (a tick after one).
        let (t, l, dep) = sorted[k];
        let between = (t, l, dep + 1000);
        check(Some(between), true, k + 1);
        check(Some(between), false, k);
    }
}

/// The real Score-P HIP trace's counters (HIP memory, rocm_smi power and busy percentages, CPU
/// frequencies) as tracks under its rows: named from the trace, with their scale, the ones left
/// out counted, a choice by name, none on request, and a tooltip giving the value under the
/// pointer.
#[test]
fn otf2_timeline_draws_counter_tracks() {
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame};
    let Some(data) = shared_data_or_skip("otf2 timeline counters") else { return };
    let mut d = open(data.join("otf2-hip-mi300-metrics/traces.otf2").to_str().unwrap());
    d.name = "hip-mi300-metrics".into();
    let size = (640, 400);
    let picture = both("timeline", &[], &d, size);
    golden("timeline_hip_counters.png", &picture);
    let text = |options: &[&str]| -> Vec<String> {
        let scene = exaviz_tests::scene("timeline", options, &d, size).expect("a scene");
        scene.labels.iter().map(|l| l.text.clone()).collect()
    };
    let auto = text(&[]);
    assert!(auto.iter().any(|t| t == "HIP Memory"), "{auto:?}");
    // The tracks sit under the CPU thread's row (the metrics are recorded on its process's
    // metric locations), above the GPU streams' rows.
    let scene = exaviz_tests::scene("timeline", &[], &d, size).expect("a scene");
    let row =
        |prefix: &str| label_box(&scene, |t| t.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {auto:?}"));
    let (thread, stream, memory) = (row("Master thread"), row("HIP Cont"), row("HIP Memory"));
    let power = row("A2rocm_smi");
    assert!(thread[3] <= memory[1] && power[3] <= stream[1], "{thread:?} {memory:?} {power:?} {stream:?}");
    assert!(auto.iter().any(|t| t.ends_with("bytes")), "no scale with its unit: {auto:?}");
    assert!(auto.iter().any(|t| t.starts_with('+') && t.contains("counters")), "{auto:?}");
    let busy = text(&["--counters", ":::busy_percent"]);
    let tracks: Vec<&String> = busy.iter().filter(|t| t.contains("busy_percent:device=")).collect();
    assert_eq!(tracks.len(), 4, "{busy:?}");
    assert!(!busy.iter().any(|t| t.contains("memory_busy")), "{busy:?}");
    assert!(!busy.iter().any(|t| t.contains("HIP Memory")), "{busy:?}");
    let none = text(&["--counters", "none"]);
    assert!(!none.iter().any(|t| t.contains("HIP Memory") || t.contains("counters")), "{none:?}");
    let plain = both("timeline", &["--counters", "none"], &d, size);
    assert!(differ(&plain, &picture) > 0.1, "the tracks changed little of the picture");
    // Hovering the GPU's track gives its value there.
    let built = Entry::find("timeline").unwrap().parse(&["--counters", ":::busy_percent:device=0"]).unwrap();
    let frame = Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare");
    let scene = prepared.draw(&d, &built.selection);
    let label = scene.labels.iter().find(|l| l.text.contains("busy_percent")).expect("the track's name");
    let x = 80.0 + (640.0 - 280.0) * 3.0 / 7.2;
    let pick = prepared.pick(&d, [x, label.rect[3] + 8.0]).expect("a pick on the track");
    assert!(pick.title.contains("busy_percent:device=0"), "{pick:?}");
    assert!(pick.lines[0].starts_with("at ") && pick.lines[0].ends_with(" s"), "{pick:?}");
    assert!(pick.lines.iter().any(|l| l.ends_with(" #")), "no value with its unit: {pick:?}");
}

/// An area dragged over the real ping-pong timeline: the view turns the drag into the time and
/// rows under it, outlines it, and sums it up as `exaviz summary` does; a click clears it.
#[test]
fn a_timeline_area_is_selected_outlined_and_summed_up() {
    use exaviz_analysis::summary::summarize;
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame};
    let Some(data) = shared_data_or_skip("otf2 timeline area") else { return };
    let d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    let built = Entry::find("timeline").unwrap().parse::<&str>(&[]).unwrap();
    let frame = Frame { width: 800, height: 500 };
    let plot = [80.0, 48.0, 800.0 - 200.0, 500.0 - 52.0];
    // Across the middle of the plot's time, over the second row only (of two).
    let (x0, x1) = (plot[0] + 0.25 * (plot[2] - plot[0]), plot[0] + 0.75 * (plot[2] - plot[0]));
    let y = plot[1] + 0.75 * (plot[3] - plot[1]);
    let sel = built.view.brush(&d, &built.selection, frame, [x1, y], [x0, y + 5.0]).expect("an area");
    let area = sel.area.expect("the selection's area");
    assert_eq!((area.first, area.last), (1, 1), "{area:?}");
    assert!(area.from < area.to);
    let prepared = built.view.prepare(&d, &sel, frame, &Backend::Cpu).expect("prepare");
    let got = prepared.area_summary().expect("the area's numbers");
    let mut want = summarize(&d.trace, area, 10);
    // The root causes, as `exaviz summary` adds them (a late receiver in the area: rank 1's
    // send waits for rank 0's receive).
    let g = exaviz_analysis::critical_path::Graph::new(&d.trace);
    want.root_causes = exaviz_analysis::critical_path::causes::root_causes_in(
        &d.trace,
        &g,
        (area.from, area.to),
        area.first..=area.last,
    );
    assert!(!want.root_causes.is_empty());
    // One rank's row: the what-if of that rank working as its peer does (tested apart).
    let row = &d.trace.locations.name[1];
    assert!(got.what_if.as_ref().is_none_or(|w| w.selected.len() == 1 && row.starts_with(&w.selected[0])), "{got:?}");
    want.what_if.clone_from(&got.what_if);
    assert_eq!(*got, want, "the index's rows give the numbers a pass over the trace gives");
    assert_eq!(got.locations.len(), 1);
    assert!(got.regions.iter().any(|r| r.name.starts_with("MPI_")), "{:?}", got.regions);
    // The outline: white pixels along the area's left edge, none there without it.
    let render = |s: &exaviz_model::selection::Selection| {
        exaviz_views::contract::render_view(built.view.as_ref(), &d, s, frame, &Backend::Cpu).expect("render")
    };
    let (plain, outlined) = (render(&built.selection), render(&sel));
    let white = |img: &exaviz_render::Image| {
        (y as u32 - 20..y as u32 + 20).filter(|&row| img.pixel(x0 as u32, row).iter().take(3).all(|&c| c > 230)).count()
    };
    assert!(white(&outlined) > 10 && white(&plain) == 0, "the area is not outlined");
    // A click (no drag) clears the area; a click without one changes nothing.
    let cleared = built.view.brush(&d, &sel, frame, [x0, y], [x0 + 1.0, y]).expect("cleared");
    assert_eq!(cleared.area, None);
    assert!(built.view.brush(&d, &cleared, frame, [x0, y], [x0, y]).is_none());
}

/// An area's statistics, read through the timeline's index (the window's intervals by location,
/// its messages by send time), equal a pass over the whole trace, for areas of a generated
/// stencil trace at several zooms.
#[test]
fn area_statistics_through_the_index_equal_a_pass_over_the_trace() {
    use exaviz_analysis::summary::summarize;
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame};
    let d = open("gen:fd4?iterations=3");
    let frame = Frame { width: 900, height: 600 };
    let mut with_messages = 0;
    for window in [None, Some(("60", "75")), Some(("70.5", "70.9"))] {
        let options: Vec<&str> = window.map_or(Vec::new(), |(a, b)| vec!["--from", a, "--to", b]);
        let built = Entry::find("timeline").unwrap().parse(&options).unwrap();
        for (from, to) in
            [([100.0, 60.0], [500.0, 400.0]), ([90.0, 300.0], [690.0, 520.0]), ([300.0, 50.0], [320.0, 540.0])]
        {
            let sel = built.view.brush(&d, &built.selection, frame, from, to).expect("an area");
            let area = sel.area.expect("the area");
            let prepared = built.view.prepare(&d, &sel, frame, &Backend::Cpu).expect("prepare");
            // The root causes come from the dependency graph, not from the index (tested apart).
            let got = exaviz_analysis::summary::Summary {
                root_causes: Vec::new(),
                what_if: None,
                ..prepared.area_summary().expect("its numbers").clone()
            };
            assert_eq!(got, summarize(&d.trace, area, 10), "{window:?} {area:?}");
            with_messages += usize::from(got.messages > 0 && !got.waits_by_location.is_empty());
        }
    }
    assert!(with_messages >= 3, "too few areas hold messages and waits: {with_messages}");
}

/// A message followed on the real ping-pong timeline: hovering its line offers it, a click
/// selects it with its pair, the picture marks it, and the keys move the window to its ends
/// (`[`, `]`) or fit it (`f`).
#[test]
fn a_clicked_message_is_followed_to_its_ends() {
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame};
    let Some(data) = shared_data_or_skip("otf2 timeline follow") else { return };
    let d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    let m = &d.trace.messages;
    let (a, b) = (0.1948, 0.1985);
    let built = Entry::find("timeline").unwrap().parse(&["--from", "0.1948", "--to", "0.1985"]).unwrap();
    let frame = Frame { width: 800, height: 500 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare");
    // The plot spans the window, rows 0 and 1 centred at y 48 + 99.5 and 48 + 299.5.
    let p = exaviz_views::timeline::plot_rect(800, 500).unwrap();
    let start = exaviz_views::trace::span(&d.trace).unwrap().0;
    let tps = d.trace.ticks_per_second as f64;
    let x = |tick: u64| f64::from(p.x0) + ((tick - start) as f64 / tps - a) / (b - a) * f64::from(p.w);
    let y = |l: u32| 48.0 + if l == 0 { 99.5 } else { 299.5 };
    let i = (0..m.source.len())
        .find(|&i| (m.send_time[i] - start) as f64 / tps > a + 0.001 && (m.recv_time[i] - start) as f64 / tps < b)
        .expect("a message inside the window");
    let mid =
        [((x(m.send_time[i]) + x(m.recv_time[i])) / 2.0) as f32, ((y(m.source[i]) + y(m.destination[i])) / 2.0) as f32];
    let pick = prepared.pick(&d, mid).expect("a pick on the line");
    assert!(pick.lines.iter().any(|l| l.starts_with("click: follow it")), "{pick:?}");
    let sel = pick.clicked(&built.selection).expect("a click selects");
    let k = sel.message.expect("the message") as usize;
    assert_eq!(sel.pair, Some((m.source[k], m.destination[k])));
    // Marked: the picture with the message followed differs from the one without.
    let drawn = |s: &exaviz_model::selection::Selection| prepared.draw(&d, s).into_owned();
    let (plain, marked) = (drawn(&built.selection), drawn(&sel));
    assert!(marked.layers.len() > plain.layers.len() || marked.labels.len() > plain.labels.len());
    let secs = |tick: u64| (tick - start) as f64 / tps;
    let key = |s: &exaviz_model::selection::Selection, k: &str| {
        built.view.key(&d, s, frame, k).and_then(|n| n.window_s).expect("a window")
    };
    let fit = key(&sel, "f");
    assert!(fit.0 < secs(m.send_time[k]) && fit.1 > secs(m.recv_time[k]), "{fit:?}");
    let fitted = exaviz_model::selection::Selection { window_s: Some(fit), ..sel };
    let (to, back) = (key(&fitted, "]"), key(&fitted, "["));
    let centre = |w: (f64, f64)| (w.0 + w.1) / 2.0;
    assert!((centre(to) - secs(m.recv_time[k])).abs() < 1e-9, "{to:?}");
    assert!((centre(back) - secs(m.send_time[k])).abs() < 1e-9, "{back:?}");
    assert!(((to.1 - to.0) - (fit.1 - fit.0)).abs() < 1e-12, "the width is kept");
    // Without a message, [ ] and f do nothing.
    assert!(built.view.key(&d, &built.selection, frame, "]").is_none());
    assert!(built.view.key(&d, &built.selection, frame, "f").is_none());
}

/// Scalasca's late-sender waiting on the real ping-pong trace: `--states waits` paints the part
/// of each receive spent before its message was sent in vermillion over dimmed states, and says
/// as many waits as `exaviz summary` counts.
#[test]
fn otf2_timeline_draws_late_sender_waiting() {
    let Some(data) = shared_data_or_skip("otf2 timeline waits") else { return };
    let mut d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    d.name = "ping-pong-otf2".into();
    let window = ["--from", "0.1936", "--to", "0.1942"];
    let size = (640, 300);
    let waits = both("timeline", &[&window[..], &["--states", "waits"]].concat(), &d, size);
    let plain = both("timeline", &window, &d, size);
    let vermillion = |img: &exaviz_render::Image| {
        img.pixels.chunks_exact(4).filter(|p| p[0].abs_diff(213) < 3 && p[1].abs_diff(94) < 3 && p[2] < 3).count()
    };
    assert!(vermillion(&waits) > 50 && vermillion(&plain) == 0, "{} {}", vermillion(&waits), vermillion(&plain));
    golden("timeline_pingpong_otf2_waits.png", &waits);
    let whole = exaviz_analysis::summary::late_sender_waits(&d.trace);
    let s = exaviz_analysis::summary::summarize(
        &d.trace,
        exaviz_model::selection::Area { from: 0, to: u64::MAX, first: 0, last: 1 },
        10,
    );
    let counted: u64 = s.waits_by_location.iter().map(|w| w.count).sum();
    assert_eq!(whole.len() as u64, counted);
    assert!(counted > 0);
    let scene = exaviz_tests::scene("timeline", &[&window[..], &["--states", "waits"]].concat(), &d, (1024, 768))
        .expect("a scene");
    let note = scene.labels.iter().find(|l| l.text.starts_with("late senders: ")).expect("the waits' line");
    assert!(note.text.contains(&format!("(of {counted}, ")), "{}", note.text);
}

/// A real Kineto trace's tracks: its process's threads and CUDA streams named by what tells
/// them apart, under a row title that says what they are; its rows collapse to one per group
/// (--collapse, or a click on a row's label in the window) and open again.
#[test]
fn kineto_timeline_names_and_collapses_its_tracks() {
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame};
    let Some(data) = shared_data_or_skip("kineto timeline tracks") else { return };
    let mut d = open(data.join("kineto/sampled_rank-0.json.gz").to_str().unwrap());
    d.name = "kineto-rank-0".into();
    let size = (800, 500);
    let picture = both("timeline", &[], &d, size);
    golden("timeline_kineto_tracks.png", &picture);
    let text = |options: &[&str]| -> Vec<String> {
        let scene = exaviz_tests::scene("timeline", options, &d, size).expect("a scene");
        scene.labels.iter().map(|l| l.text.clone()).collect()
    };
    let open_rows = text(&[]);
    for want in ["thread / stream", "stream 7", "stream 203"] {
        assert!(open_rows.iter().any(|t| t == want), "{want}: {open_rows:?}");
    }
    // Its two threads share a name (python3.8): each is named by its thread id.
    let threads: Vec<&String> = open_rows
        .iter()
        .filter(|t| t.strip_prefix("thread ").is_some_and(|id| id.chars().all(|c| c.is_ascii_digit())))
        .collect();
    assert!(threads.len() == 2 && threads[0] != threads[1], "{open_rows:?}");
    let collapsed = text(&["--collapse"]);
    assert!(!collapsed.iter().any(|t| t.starts_with("stream ")), "{collapsed:?}");
    assert!(differ(&picture, &both("timeline", &["--collapse"], &d, size)) > 0.1);
    // A click on a row's label collapses its group; a click on the collapsed row opens it.
    let built = Entry::find("timeline").unwrap().parse::<&str>(&[]).unwrap();
    let frame = Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare");
    let pick = prepared.pick(&d, [40.0, 60.0]).expect("a pick on the first row's label");
    assert!(pick.title.starts_with("pyper:trainer:0:0: 7 rows"), "{pick:?}");
    let folded = pick.clicked(&built.selection).expect("a click collapses");
    let prepared = built.view.prepare(&d, &folded, frame, &Backend::Cpu).expect("prepare");
    let scene = prepared.draw(&d, &folded);
    assert!(!scene.labels.iter().any(|l| l.text.starts_with("stream ")));
    let pick = prepared.pick(&d, [40.0, 60.0]).expect("a pick on the collapsed row");
    assert!(pick.lines.iter().any(|l| l.contains("open it")), "{pick:?}");
    let opened = pick.clicked(&folded).expect("a click opens");
    let prepared = built.view.prepare(&d, &opened, frame, &Backend::Cpu).expect("prepare");
    assert!(prepared.draw(&d, &opened).labels.iter().any(|l| l.text == "stream 7"));
}

/// The label of `scene` whose text is `text` (the first), its box.
fn label_box(scene: &exaviz_render::Scene, what: impl Fn(&str) -> bool) -> Option<[f32; 4]> {
    scene.labels.iter().find(|l| what(&l.text)).map(|l| l.rect)
}

/// PyTorch's memory counters (Kineto's `[memory]` events of a CPU run recorded with
/// `profile_memory=True`) as a track under the row of the thread that allocated, in bytes, on
/// each rank; the rows below moved down, not covered.
#[test]
fn kineto_memory_is_a_counter_track_under_its_thread() {
    use exaviz_compute::Backend;
    use exaviz_views::contract::{Entry, Frame};
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/torch-gloo-memory");
    let mut d = open(path.to_str().unwrap());
    d.name = "torch-gloo-memory".into();
    let size = (800, 500);
    let picture = both("timeline", &[], &d, size);
    golden("timeline_torch_memory.png", &picture);
    let scene = exaviz_tests::scene("timeline", &[], &d, size).expect("a scene");
    let plot = exaviz_views::timeline::plot_rect(size.0, size.1).unwrap();
    let texts: Vec<&str> = scene.labels.iter().map(|l| l.text.as_str()).collect();
    // Each rank's allocated memory is a track; the reserved total never changes on the CPU.
    let tracks: Vec<[f32; 4]> =
        scene.labels.iter().filter(|l| l.text.contains("memory allocated (CPU)")).map(|l| l.rect).collect();
    assert_eq!(tracks.len(), 2, "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("reserved")), "{texts:?}");
    assert!(texts.iter().any(|t| t.ends_with(" B")), "no scale in bytes: {texts:?}");
    // Each under its rank's main thread (the thread named after its process id, first of the
    // rank's rows), above the rank's next row. A rank's threads are named by their own names.
    let rows: Vec<[f32; 4]> = scene
        .labels
        .iter()
        .filter(|l| l.rect[2] <= plot.x0 as f32 && !l.text.contains("Spans") && l.text.parse::<f64>().is_err())
        .map(|l| l.rect)
        .collect();
    assert!(rows.len() >= 4, "{texts:?}");
    for track in &tracks {
        let above = rows.iter().filter(|r| r[3] <= track[1]).count();
        let below = rows.iter().filter(|r| r[1] >= track[3]).count();
        assert_eq!(above + below, rows.len(), "no row label beside the track {track:?}: {rows:?}");
        assert!(above >= 1, "a row above the track {track:?}: {rows:?}");
    }
    // The reserved totals, never changing on the CPU, are left out and counted.
    assert!(label_box(&scene, |t| t == "+2 counters (--counters)").is_some(), "{texts:?}");
    // Hovering the track gives the bytes allocated there.
    let built = Entry::find("timeline").unwrap().parse::<&str>(&[]).unwrap();
    let frame = Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &Backend::Cpu).expect("prepare");
    let pick = prepared.pick(&d, [400.0, tracks[0][3] + 6.0]).expect("a pick on the track");
    assert!(pick.title.starts_with("memory allocated (CPU)"), "{pick:?}");
    assert!(pick.lines.iter().any(|l| l.ends_with(" B")), "{pick:?}");
}

/// The exascale tracers' formats, each a real trace: MPItrace's Paraver qsort, omnitrace's
/// Perfetto trace, HPCToolkit's ping-pong database and Charm++ Projections' ping-pong, drawn
/// on both backends.
#[test]
fn exascale_tracers_timelines_match_golden() {
    let Some(data) = shared_data_or_skip("exascale tracers' timelines") else { return };
    let cases = [
        ("paraver-qsort-4r/qsort_beo3.prv", "timeline_paraver_qsort.png"),
        ("perfetto-omnitrace-mpi/mpi-binary-rewrite-1.proto", "timeline_perfetto_omnitrace.png"),
        ("hpctoolkit-pingpong", "timeline_hpctoolkit_pingpong.png"),
        ("projections-charm/ping-pong-projections", "timeline_projections_pingpong.png"),
    ];
    for (input, golden_name) in cases {
        let mut d = open(data.join(input).to_str().unwrap());
        d.name = input.split('/').next().unwrap_or(input).into();
        let picture = both("timeline", &[], &d, (480, 320));
        assert!(picture.distinct_colours() > 8, "{input}: the picture looks blank");
        golden(golden_name, &picture);
    }
}

/// `--critical-path` outlines the path in magenta on both backends: framed stretches on the
/// rows of the slow ranks planted in `gen:wrf` (ranks 4 and 5) far more than on any other row,
/// a note above the plot, and nothing of it without the option.
#[test]
fn the_critical_path_is_outlined_over_the_rows() {
    let d = open("gen:wrf?plant=1&collectives=5");
    let window = ["--from", "100", "--to", "130"];
    let size = (640, 400);
    let on = both("timeline", &[&window[..], &["--critical-path"]].concat(), &d, size);
    let off = both("timeline", &window, &d, size);
    let magenta = |p: &[u8]| p[0] > 230 && p[1].abs_diff(64) < 12 && p[2] > 230;
    let count = |img: &exaviz_render::Image| img.pixels.chunks_exact(4).filter(|p| magenta(p)).count();
    assert!(count(&on) > 500 && count(&off) == 0, "{} {}", count(&on), count(&off));
    let scene =
        exaviz_tests::scene("timeline", &[&window[..], &["--critical-path"]].concat(), &d, size).expect("a scene");
    let row_y =
        |name: &str| scene.labels.iter().find(|l| l.text == name).map(|l| (l.rect[1] + l.rect[3]) / 2.0).expect(name);
    // Magenta pixels per row: the rows' label heights split the plot.
    let per_row = |name: &str| {
        let y = row_y(name).round() as i64;
        on.pixels
            .chunks_exact(4)
            .enumerate()
            .filter(|(k, p)| ((*k as i64 / i64::from(size.0)) - y).abs() <= 4 && magenta(p))
            .count()
    };
    let slow = per_row("rank 4") + per_row("rank 5");
    for other in ["rank 0", "rank 9", "rank 15"] {
        assert!(slow > 4 * per_row(other), "{other}: {} against {slow}", per_row(other));
    }
    // The note, cut to the half of a narrow plot left of the selected pair's line.
    assert!(scene.labels.iter().any(|l| l.text.starts_with("critical path out")), "the note");
}

/// In the window, `x` outlines the critical path and `x` again hides it: the key toggles the
/// selection's part, and the picture prepared for it has the magenta outline only while it is on.
#[test]
fn the_window_key_x_toggles_the_critical_path() {
    use exaviz_compute::Backend;
    use exaviz_model::selection::{Parts, Selection};
    use exaviz_views::contract::{Frame, View, render_view};
    use exaviz_views::timeline::{TimelineOptions, TimelineView};
    let d = open("gen:wrf?plant=1&collectives=5");
    let view = TimelineView::with(TimelineOptions::default());
    let frame = Frame { width: 640, height: 400 };
    let magenta = |sel: &Selection| {
        let img = render_view(&view, &d, sel, frame, &Backend::Cpu).expect("render");
        img.pixels.chunks_exact(4).filter(|p| p[0] > 230 && p[1].abs_diff(64) < 12 && p[2] > 230).count()
    };
    let start = Selection { window_s: Some((100.0, 130.0)), ..Default::default() };
    let on = view.key(&d, &start, frame, "x").expect("x is the timeline's key");
    assert_eq!(on.critical, Some(true));
    assert!(start.changed(&on).intersects(Parts::CRITICAL) && view.depends_on().intersects(Parts::CRITICAL));
    let off = view.key(&d, &on, frame, "x").expect("x again");
    assert_eq!(off.critical, Some(false));
    let (before, lit, after) = (magenta(&start), magenta(&on), magenta(&off));
    assert!(before == 0 && lit > 500 && after == 0, "{before} {lit} {after}");
    // Opened with --critical-path, the first x hides it.
    let shown = TimelineView::with(TimelineOptions { critical_path: true, ..TimelineOptions::default() });
    assert_eq!(shown.key(&d, &start, frame, "x").and_then(|s| s.critical), Some(false));
}

/// An area dragged in the window sums up its root causes of waiting too, as `exaviz summary`
/// does: over the whole of `gen:wrf` with ranks 4 and 5 planted slow, they head the list.
#[test]
fn an_areas_summary_names_the_root_causes_of_its_waiting() {
    use exaviz_compute::Backend;
    use exaviz_model::selection::Area;
    use exaviz_model::selection::Selection;
    use exaviz_views::contract::{Frame, View};
    use exaviz_views::timeline::{TimelineOptions, TimelineView};
    let d = open("gen:wrf?plant=1&collectives=5");
    let span = d.trace.span().unwrap();
    let last = d.trace.locations.name.len() as u32 - 1;
    let area = Area { from: span.0, to: span.1 + 1, first: 0, last };
    let view = TimelineView::with(TimelineOptions::default());
    let sel = Selection { area: Some(area), ..Default::default() };
    let prepared = view.prepare(&d, &sel, Frame { width: 640, height: 400 }, &Backend::Cpu).unwrap();
    let causes = &prepared.area_summary().expect("the area's numbers").root_causes;
    let first: Vec<&str> = causes.iter().take(2).map(|c| c.location.as_str()).collect();
    assert!(first.iter().all(|l| *l == "rank 4" || *l == "rank 5"), "{causes:?}");
    // An area of ranks 0 to 3 only: the waits in it are still caused by the slow ranks.
    let few = Area { last: 3, ..area };
    let sel = Selection { area: Some(few), ..Default::default() };
    let prepared = view.prepare(&d, &sel, Frame { width: 640, height: 400 }, &Backend::Cpu).unwrap();
    let causes = &prepared.area_summary().expect("the area's numbers").root_causes;
    assert!(causes.first().is_some_and(|c| c.location == "rank 4" || c.location == "rank 5"), "{causes:?}");
    assert_eq!(prepared.area_summary().unwrap().what_if, None, "four ranks: no one process to project");
    // An area of rank 5 alone: the panel's what-if, as `exaviz critical-path --what-if "rank 5"`.
    let five = Area { first: 5, last: 5, ..area };
    let sel = Selection { area: Some(five), ..Default::default() };
    let prepared = view.prepare(&d, &sel, Frame { width: 640, height: 400 }, &Backend::Cpu).unwrap();
    let w = prepared.area_summary().unwrap().what_if.clone().expect("rank 5's what-if");
    let asked = exaviz_analysis::critical_path::what_if::parse("rank 5").unwrap();
    let r = exaviz_analysis::critical_path::analyse_what_if(&d, None, None, &[asked], &|_, _| {}).unwrap();
    assert_eq!((w.selected.as_slice(), w.saved_s), (&["rank 5".to_string()][..], r.what_if[0].saved_s));
    assert!(w.removed_s > 0.0, "{w:?}");
}

/// 16,384 ranks, one of which (10007) spends every iteration three times as long as the others
/// in a region of its own: where the ranks outnumber the plot's pixel rows they are grouped by
/// behaviour, so the default overview draws that rank on a row of its own, labelled with its
/// name, its region's colour over well over a hairline, on both backends; by index it shrinks
/// to a pixel row's average.
#[test]
fn one_deviant_rank_of_16384_is_seen_and_named_in_the_overview() {
    let d = open("gen:fd4?ranks=16384&messages=400000&slow_rank=10007");
    deviant_seen_and_named(&d, "16,384 processes");
}

/// The same trace in memory on a GPU of its own, whose rows it keeps: the ranks are grouped on
/// the device (the window's features, every rank's distance and group, the groups' medians),
/// into the groups the CPU finds, the deviant apart and named; what comes back of the grouping
/// is each rank's group in four bits, not eight bytes a rank.
#[test]
fn the_ranks_of_a_trace_in_memory_are_grouped_on_the_device_as_on_the_cpu() {
    use exaviz_views::contract::{Entry, Frame, prepare};
    let d = open("gen:fd4?ranks=16384&messages=400000&slow_rank=10007");
    let mut ctx = exaviz_compute::GpuContext::new().expect("a GPU adapter (lavapipe)");
    ctx.info.device_type = exaviz_compute::wgpu::DeviceType::DiscreteGpu;
    let backend = exaviz_compute::Backend::Gpu(Box::new(ctx));
    let frame = Frame { width: 1200, height: 900 };
    let outline = |b: &exaviz_compute::Backend, options: &[&str]| {
        let built = Entry::find("timeline").unwrap().parse(options).unwrap();
        let prepared = prepare(built.view.as_ref(), &d, &built.selection, frame, b).unwrap();
        prepared.draw(&d, &built.selection).into_owned().outline
    };
    let on_gpu = outline(&backend, &[]);
    let on_cpu = outline(&exaviz_compute::Backend::Cpu, &[]);
    let rows = |o: &exaviz_render::Outline| -> Vec<(String, String)> {
        o.rows.iter().map(|r| (r.kind.clone(), r.label.clone())).collect()
    };
    assert_eq!(rows(&on_gpu), rows(&on_cpu), "the same groups and rows apart");
    assert!(on_gpu.rows.iter().any(|r| r.label == "rank 10007"), "{:?}", rows(&on_gpu));
    assert!(on_gpu.rows.iter().any(|r| r.label == "ranks 0-10006, 10008-16383 (16,383)"), "{:?}", rows(&on_gpu));
    // What the grouping itself reads back: the groups (half a byte a rank), the statistics and
    // the ranks apart, against 8 bytes a rank for the nearest. The slots as the timeline's.
    let full = exaviz_views::trace::span(&d.trace).unwrap();
    let kinds = d.trace.region_names.len().max(1);
    let slot_of: Vec<usize> = (0..kinds).map(|k| k.min(7)).collect();
    let shown: Vec<u32> = (0..16_384).collect();
    let before = backend.traffic().1;
    // The intervals kept on the device under an owner of their own: the second grouping sends
    // only the window, the slot table and the representatives.
    let owner: exaviz_compute::Owner = std::sync::Arc::new(0u8);
    let source = exaviz_views::rows::source(&d.trace, &slot_of, 8, full, (&backend, Some(&owner))).unwrap();
    let on_device = exaviz_views::rows::group(&*source, &shown, 60, &backend).unwrap();
    let grouping = backend.traffic().1 - before;
    assert!(grouping < 16_384, "{grouping} bytes read back to group 16,384 ranks");
    let plain = exaviz_views::rows::features(&d.trace, &slot_of, 8, full, &exaviz_compute::Backend::Cpu).unwrap();
    let on_cpu = exaviz_views::rows::group(&plain, &shown, 60, &exaviz_compute::Backend::Cpu).unwrap();
    assert_eq!(on_device, on_cpu, "the same groups and ranks apart");
    assert!(on_device.deviants.contains(&10007), "{:?}", on_device.deviants);
    // Another window: the intervals stay on the device, only the window's table, parameters
    // and representatives go up.
    let half = (full.0, full.0 + (full.1 - full.0) / 2);
    let up = backend.traffic().0;
    let source = exaviz_views::rows::source(&d.trace, &slot_of, 8, half, (&backend, Some(&owner))).unwrap();
    let again = exaviz_views::rows::group(&*source, &shown, 60, &backend).unwrap();
    let up = backend.traffic().0 - up;
    assert!(up < 64 << 10, "{up} bytes up to group another window");
    let plain = exaviz_views::rows::features(&d.trace, &slot_of, 8, half, &exaviz_compute::Backend::Cpu).unwrap();
    assert_eq!(again, exaviz_views::rows::group(&plain, &shown, 60, &exaviz_compute::Backend::Cpu).unwrap());
}

/// The same trace as a store kept on disk: every window too large to read is drawn from its
/// pyramid, whose per-rank tiles group the ranks as the rows do, so its overview too draws the
/// deviant on a row of its own, named, its region's colour well over a hairline, on both
/// backends, with the summary track above; the row's tooltip names the rank.
#[test]
fn one_deviant_rank_of_16384_is_seen_and_named_in_a_stores_overview() {
    let dir = std::env::temp_dir().join(format!("exaviz-deviant-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("fd4.exaviz");
    exaviz_datasets::convert("gen:fd4?ranks=16384&messages=4000000&slow_rank=10007", &store, &|_, _| {}).unwrap();
    let d = exaviz_store::open_with(&store, &|_, _| {}, 0).unwrap();
    let o = d.out_of_core.as_ref().expect("opened out of core");
    assert!(o.pyramid.locations.is_some(), "the store's pyramid keeps each rank's tiles");
    let rows = o.rows.estimate(o.span);
    assert!(rows > exaviz_model::dataset::ROW_BUDGET, "the whole holds {rows} rows: drawn from the pyramid");
    let scene = deviant_seen_and_named(&d, "16,384 processes");
    // The deviant's own row: its tooltip names the rank, drawn from its own tiles.
    let label = scene.labels.iter().find(|l| l.text == "rank 10007").unwrap();
    let y = (label.rect[1] + label.rect[3]) / 2.0;
    let prepared = exaviz_tests::prepared("timeline", &[], &d, (1200, 900));
    let pick = prepared.pick(&d, [600.0, y]).expect("a pick on the deviant's row");
    assert_eq!(pick.title, "rank 10007");
    assert!(pick.lines.iter().any(|l| l.starts_with("drawn apart")), "{:?}", pick.lines);
    assert!(pick.lines.iter().any(|l| l.contains("slow_work")), "{:?}", pick.lines);
    // Over the band's label, left of the plot: what its click does (16,383 ranks are too many
    // to open into rows at this height, and it says so rather than offering a click).
    let band = scene.labels.iter().find(|l| l.text == "ranks 0-10006, 10008-16383").unwrap();
    let at = [(band.rect[0] + band.rect[2]) / 2.0, (band.rect[1] + band.rect[3]) / 2.0];
    let pick = prepared.pick(&d, at).expect("a pick on the band's label");
    assert!(pick.title.starts_with("ranks 0-") && pick.title.ends_with(" (16,383)"), "{}", pick.title);
    assert!(pick.lines.iter().any(|l| l.contains("too many to open into rows here")), "{:?}", pick.lines);
    std::fs::remove_dir_all(&dir).ok();
}

/// The checks of a trace of 16,384 ranks, rank 10007 slow in `slow_work`, drawn at 1200x900 on
/// both backends (`ranks`: the title's count): the deviant's row named, the band's label, the
/// region's colour over at least 1,500 plot pixels (by index under a tenth of that), and the
/// summary track with its tooltip. Returns the default scene.
fn deviant_seen_and_named(d: &exaviz_model::dataset::Dataset, ranks: &str) -> exaviz_render::Scene {
    let size = (1200, 900);
    let grouped = both("timeline", &[], d, size);
    let scene = exaviz_tests::scene("timeline", &[], d, size).expect("a scene");
    let texts: Vec<&str> = scene.labels.iter().map(|l| l.text.as_str()).collect();
    assert!(texts.contains(&"rank 10007"), "the deviant's row is named: {texts:?}");
    let band = scene.outline.rows.iter().find(|r| r.kind == "band").expect("a band");
    assert_eq!(band.label, "ranks 0-10006, 10008-16383 (16,383)", "the band's label: {texts:?}");
    assert!(texts.contains(&"ranks 0-10006, 10008-16383"), "drawn: {texts:?}");
    // The region's colour: its legend swatch's, left of its name.
    let swatch = scene.labels.iter().find(|l| l.text == "slow_work").expect("slow_work in the legend");
    let (x, y) = ((swatch.rect[0] - 13.0) as u32, ((swatch.rect[1] + swatch.rect[3]) / 2.0 - 3.0) as u32);
    let colour = |img: &exaviz_render::Image, x: u32, y: u32| {
        let k = 4 * (y * img.width + x) as usize;
        [img.pixels[k], img.pixels[k + 1], img.pixels[k + 2]]
    };
    let want = colour(&grouped, x, y);
    let count = |img: &exaviz_render::Image| {
        let plot = exaviz_views::timeline::plot_rect(size.0, size.1).expect("a plot");
        let mut n = 0;
        for y in plot.y0..plot.y0 + plot.h {
            for x in plot.x0..plot.x0 + plot.w {
                let c = colour(img, x, y);
                n += usize::from((0..3).all(|ch| c[ch].abs_diff(want[ch]) <= 3));
            }
        }
        n
    };
    let seen = count(&grouped);
    assert!(seen >= 1500, "the deviant region's colour over {seen} plot pixels (colour {want:?})");
    let by_index =
        exaviz_tests::draw("timeline", &["--rows", "index"], d, &exaviz_compute::Backend::Cpu, size).expect("by index");
    assert!(count(&by_index) * 10 < seen, "by index: {} pixels against {seen}", count(&by_index));
    // Above the rows, the summary track: the share of the ranks in each state, the deviant
    // counted apart; its tooltip lists the states' shares.
    let summary = scene.labels.iter().find(|l| l.text == "summary").expect("a summary track");
    assert!(texts.iter().any(|t| t.contains(ranks) && t.contains("1 apart")), "{texts:?}");
    let prepared = exaviz_tests::prepared("timeline", &[], d, size);
    let y = (summary.rect[1] + summary.rect[3]) / 2.0;
    let pick = prepared.pick(d, [600.0, y]).expect("a pick on the summary");
    assert_eq!(pick.title, "summary of 16,384 locations");
    assert!(
        pick.lines.iter().any(|l| l.starts_with("compute: ") || l.starts_with("MPI_Waitall: ")),
        "{:?}",
        pick.lines
    );
    let by_index = exaviz_tests::scene("timeline", &["--rows", "index"], d, size).expect("a scene");
    assert!(!by_index.labels.iter().any(|l| l.text == "summary"), "by index, no summary unless asked");
    scene
}

/// The summary track of 2,048 ranks grouped by behaviour, one of them slow: the share of the
/// ranks in each state stacked over time above the bands, on both backends.
#[test]
fn the_summary_track_matches_golden() {
    let d = open("gen:fd4?ranks=2048&messages=50000&slow_rank=77");
    let picture = both("timeline", &["--rows", "behaviour"], &d, (800, 500));
    golden("timeline_summary_fd4_2048_slow77.png", &picture);
    let off = both("timeline", &["--rows", "behaviour", "--summary", "off"], &d, (800, 500));
    assert!(picture.pixels != off.pixels, "the summary track changes the picture");
    let labels = |options: &[&str]| -> Vec<String> {
        let scene = exaviz_tests::scene("timeline", options, &d, (800, 500)).expect("a scene");
        scene.labels.iter().map(|l| l.text.clone()).collect()
    };
    let on = labels(&["--rows", "behaviour"]);
    assert!(on.iter().any(|t| t == "summary") && on.iter().any(|t| t == "summary: 2,048 processes; 1 apart"), "{on:?}");
    assert!(!labels(&["--rows", "behaviour", "--summary", "off"]).iter().any(|t| t.starts_with("summary")));
}

/// The summary track drawn on the device with the rows (one more run, of every location shown,
/// its shares stacked as the host stacks them): the plot is one raster composed on the device,
/// within the GPU's tolerance of the CPU's picture (the golden test above), and the track's
/// tooltip, summed for the hovered column on the host, reads as the CPU's.
#[test]
fn the_summary_track_is_drawn_on_the_device_with_the_rows() {
    use exaviz_views::contract::{Entry, Frame, prepare};
    let d = open("gen:fd4?ranks=2048&messages=50000&slow_rank=77");
    let backend = super::gpu_backend();
    let built = Entry::find("timeline").unwrap().parse(&["--rows", "behaviour"]).unwrap();
    let frame = Frame { width: 800, height: 500 };
    let on = |b: &exaviz_compute::Backend| prepare(built.view.as_ref(), &d, &built.selection, frame, b).unwrap();
    let (gpu, cpu) = (on(&backend), on(&exaviz_compute::Backend::Cpu));
    let scene = gpu.draw(&d, &built.selection).into_owned();
    assert_eq!(device_rasters(&scene), 1, "the plot and its summary track composed on the device");
    let host = cpu.draw(&d, &built.selection).into_owned();
    assert_eq!(device_rasters(&host), 0);
    let label = scene.labels.iter().find(|l| l.text == "summary").expect("the summary track's label");
    let y = (label.rect[1] + label.rect[3]) / 2.0;
    let shares = |lines: &[String]| -> Vec<(String, f32)> {
        let mut v: Vec<(String, f32)> = lines
            .iter()
            .filter_map(|l| {
                l.rsplit_once(": ").and_then(|(n, p)| Some((n.to_string(), p.strip_suffix('%')?.parse().ok()?)))
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let mut compared = 0;
    for x in [150.0, 260.0, 370.0, 480.0, 590.0] {
        let (Some(a), Some(b)) = (gpu.pick(&d, [x, y]), cpu.pick(&d, [x, y])) else { continue };
        assert_eq!(a.title, b.title);
        assert!(a.title.starts_with("summary of 2,048"), "{}", a.title);
        assert_eq!(a.lines[0], b.lines[0], "the same time");
        let (sa, sb) = (shares(&a.lines), shares(&b.lines));
        assert!(!sa.is_empty(), "{:?}", a.lines);
        assert_eq!(sa.iter().map(|s| &s.0).collect::<Vec<_>>(), sb.iter().map(|s| &s.0).collect::<Vec<_>>());
        for (p, q) in sa.iter().zip(&sb) {
            assert!((p.1 - q.1).abs() <= 0.11, "{x}: {:?} against {:?}", a.lines, b.lines);
        }
        compared += 1;
    }
    assert_eq!(compared, 5, "columns of the track compared");
    // By index with the track asked for: 2,048 rows of their own, a class each in the layout's
    // 16-bit words, against the CPU's picture.
    let by_index = ["--rows", "index", "--summary", "on"];
    both("timeline", &by_index, &d, (800, 500));
    let built = Entry::find("timeline").unwrap().parse(&by_index).unwrap();
    let scene = prepare(built.view.as_ref(), &d, &built.selection, frame, &backend)
        .unwrap()
        .draw(&d, &built.selection)
        .into_owned();
    assert_eq!(device_rasters(&scene), 1);
    assert!(scene.labels.iter().any(|l| l.text == "summary"));
}

/// A band opens into its locations: 3,000 ranks computing then waiting alike, 30 of them
/// (ranks 1000-1029) waiting first, grouped by behaviour into two bands; a click on the small
/// band's label opens it (a row and a name per rank), a click on one of its ranks closes it; the
/// large band is too many to open and says so.
#[test]
fn a_click_on_a_band_opens_it_into_its_locations_and_closes_it_again() {
    use exaviz_model::selection::Parts;
    let mut t = exaviz_model::Trace { ticks_per_second: 1_000, ..Default::default() };
    t.region_names = vec!["compute".into(), "wait".into()];
    t.locations.name = (0..3000).map(|r| format!("rank {r}")).collect();
    let i = &mut t.intervals;
    for it in 0..10u64 {
        for r in 0..3000u32 {
            let start = it * 1000;
            let c = 600 + u64::from((r * 7 + it as u32 * 13) % 40);
            let first = if (1000..1030).contains(&r) { 1 } else { 0 };
            for (k, a, b) in [(first, start, start + c), (1 - first, start + c, start + 1000)] {
                i.location.push(r);
                i.start.push(a);
                i.end.push(b);
                i.kind.push(k);
                i.depth.push(0);
            }
        }
    }
    let d = exaviz_model::dataset::Dataset { name: "bands".into(), trace: t, ..Default::default() };
    let size = (1200, 900);
    let options = ["--rows", "behaviour"];
    let scene = exaviz_tests::scene("timeline", &options, &d, size).expect("a scene");
    // Row labels are cut in the middle where they do not fit: found by their ends.
    let band = |s: &exaviz_render::Scene, end: &str| s.labels.iter().find(|l| l.text.ends_with(end)).map(|l| l.rect);
    let texts: Vec<&str> = scene.labels.iter().map(|l| l.text.as_str()).collect();
    let small = band(&scene, "(30)").unwrap_or_else(|| panic!("two bands: {texts:?}"));
    let large = band(&scene, "(2,970)").unwrap_or_else(|| panic!("{texts:?}"));
    let prepared = exaviz_tests::prepared("timeline", &options, &d, size);
    let at = |r: [f32; 4]| [r[2] - 2.0, (r[1] + r[3]) / 2.0];
    let pick = prepared.pick(&d, at(small)).expect("a pick on the band's label");
    assert_eq!(pick.lines, ["click: open it into its 30 locations"]);
    let (parts, click) = pick.click.expect("a click");
    assert_eq!(parts, Parts::OPENED);
    let opened = click.opened.expect("a band opened");
    assert!((1000..1030).contains(&opened), "{opened}");
    let big = prepared.pick(&d, at(large)).expect("a pick on the large band");
    assert!(big.click.is_none() && big.lines[0].contains("too many to open"), "{:?}", big.lines);
    // Opened: each of the 30 ranks a row of its own, the large band still one.
    let entry = exaviz_views::contract::Entry::find("timeline").unwrap();
    let built = entry.parse(&options).unwrap();
    let frame = exaviz_views::contract::Frame { width: size.0, height: size.1 };
    let sel = built.selection.replaced(parts, &click);
    let open = exaviz_views::contract::prepare(built.view.as_ref(), &d, &sel, frame, &exaviz_compute::Backend::Cpu)
        .expect("the opened picture");
    let drawn = open.draw(&d, &sel).into_owned();
    let texts: Vec<&str> = drawn.labels.iter().map(|l| l.text.as_str()).collect();
    assert!(!texts.iter().any(|t| t.ends_with("(30)")), "{texts:?}");
    assert!(texts.iter().any(|t| t.ends_with("(2,970)")), "{texts:?}");
    let names = (1000..1030).filter(|r| texts.contains(&format!("rank {r}").as_str())).count();
    assert_eq!(names, 30, "{names} of the 30 ranks named: {texts:?}");
    let row = drawn.labels.iter().find(|l| l.text == "rank 1015").map(|l| l.rect).expect("rank 1015's row");
    let close = open.pick(&d, at(row)).expect("a pick on an opened rank's label");
    assert_eq!(close.lines, ["click: close its band again"]);
    let (parts, click) = close.click.expect("a click");
    assert_eq!(sel.replaced(parts, &click).opened, None, "closed again");
}

/// On a GPU backend the timeline of a trace held in memory is composed on the device from its
/// columns kept there: the picture equals the CPU path's but for a few pixels where a line's end
/// falls on a pixel's edge (no pixel off by more than a few units elsewhere), and after the
/// first picture a new window (a wheel, a pan, a reset) uploads at most 64 KiB (the window, the
/// dispatches' parameters and the picture's instances) and reads back the picture alone and the
/// legend's five words.
/// The rasters of `scene` whose pixels are on the device (composed there).
fn device_rasters(scene: &exaviz_render::Scene) -> usize {
    scene
        .layers
        .iter()
        .filter(|l| matches!(l.raster.as_deref().map(|r| &r.data), Some(exaviz_render::RasterData::Device { .. })))
        .count()
}

#[test]
fn the_timeline_is_composed_on_the_device_from_kept_columns() {
    use exaviz_model::selection::Selection;
    use exaviz_views::contract::{Entry, Frame, prepare};
    let backend = super::gpu_backend();
    let size = (640u32, 420u32);
    for (case, options) in
        [("fd4", &[][..]), ("wrf", &["--states", "stacked"][..]), ("lulesh", &["--mix", "additive"][..])]
    {
        let d = open(&format!("gen:{case}?iterations=3"));
        let cpu = super::cpu("timeline", options, &d, size);
        let entry = Entry::find("timeline").unwrap();
        let built = entry.parse(options).unwrap();
        let frame = Frame { width: size.0, height: size.1 };
        let full = exaviz_views::trace::span(&d.trace).unwrap();
        let seconds = (full.1 - full.0) as f64 / d.trace.ticks_per_second.max(1) as f64;
        let mut moved = Vec::new();
        for (k, window) in [None, Some((0.25, 0.5)), Some((0.3, 0.55)), None].into_iter().enumerate() {
            let sel = Selection { window_s: window.map(|(a, b)| (a * seconds, b * seconds)), ..built.selection };
            let before = backend.traffic();
            let prepared = prepare(built.view.as_ref(), &d, &sel, frame, &backend).unwrap();
            let scene = prepared.draw(&d, &sel).into_owned();
            let device_rasters = device_rasters(&scene);
            assert_eq!(device_rasters, 1, "{case}: the plot composed on the device");
            let image = exaviz_render::render_scene(&backend, &scene, exaviz_render::View::default()).unwrap();
            let after = backend.traffic();
            moved.push((after.0 - before.0, after.1 - before.1));
            if k == 0 {
                let far = exaviz_tests::diff_fraction(
                    &image.pixels,
                    &cpu.pixels,
                    exaviz_tests::ImageTolerance { channel: 3, fraction: 0.0 },
                );
                assert!(
                    far < 0.002,
                    "{case} {options:?}: {far} of the pixels differ from the CPU path's by more than 3"
                );
                let differ = exaviz_tests::diff_fraction(
                    &image.pixels,
                    &cpu.pixels,
                    exaviz_tests::ImageTolerance { channel: 0, fraction: 0.0 },
                );
                assert!(differ > 0.0 || case == "fd4", "{case}: compared");
            }
        }
        println!("{case}: moved {moved:?}");
        let picture = u64::from(size.0) * u64::from(size.1) * 4;
        for (k, &(up, down)) in moved.iter().enumerate().skip(1) {
            assert!(up <= 64 << 10, "{case}: window {k} uploaded {up} bytes");
            assert_eq!(down, picture + 20, "{case}: window {k} read back the picture and the legend's numbers");
        }
        assert!(moved[0].0 > moved[1].0 + (d.trace.messages.source.len() as u64) * 24, "{case}: the columns at first");
    }
}

/// `--messages` draws only the messages the filter keeps: the timeline's and the matrix's plots
/// equal those of the trace whose other messages were taken out beforehand, on both backends
/// (the GPU's composed on the device, the sizes and tags read there); the title says what is
/// drawn, and a trace with an index is drawn from its rows (its pyramid holds every message).
#[test]
fn a_message_filter_draws_only_the_messages_it_keeps() {
    use exaviz_model::selection::MessageFilter;
    let d = open("gen:lulesh?iterations=3");
    let m = &d.trace.messages;
    let mut sizes: Vec<u32> = m.bytes.clone();
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    let spec = format!("bytes={median}-3G,from=1-20");
    let filter = MessageFilter::parse(&spec).unwrap();
    let kept: Vec<usize> =
        (0..m.source.len()).filter(|&i| filter.keeps(m.bytes[i], m.tag[i], m.source[i], m.destination[i])).collect();
    assert!(kept.len() > 10 && kept.len() < m.source.len() * 2 / 3, "{} of {}", kept.len(), m.source.len());
    let mut alone = d.clone();
    let pick = |c: &[u32]| kept.iter().map(|&i| c[i]).collect::<Vec<u32>>();
    let pick64 = |c: &[u64]| kept.iter().map(|&i| c[i]).collect::<Vec<u64>>();
    alone.trace.messages = exaviz_model::Messages {
        source: pick(&m.source),
        destination: pick(&m.destination),
        send_time: pick64(&m.send_time),
        recv_time: pick64(&m.recv_time),
        bytes: pick(&m.bytes),
        tag: pick(&m.tag),
    };
    let seconds = exaviz_views::trace::duration_s(&d.trace).unwrap();
    let (from, to) = (format!("{}", seconds * 0.1), format!("{}", seconds * 0.9));
    let size = (560u32, 380u32);
    let plot = exaviz_views::timeline::plot_rect(size.0, size.1).unwrap();
    let crop = |img: &exaviz_render::Image, p: exaviz_views::plot::Plot| -> Vec<[u8; 4]> {
        (p.y0..p.y0 + p.h).flat_map(|y| (p.x0..p.x0 + p.w).map(move |x| (x, y))).map(|(x, y)| img.pixel(x, y)).collect()
    };
    let window = ["--from", from.as_str(), "--to", to.as_str()];
    let filtered: Vec<&str> = window.iter().copied().chain(["--messages", spec.as_str()]).collect();
    for view in ["timeline", "matrix"] {
        let a = both(view, &filtered, &d, size);
        let b = both(view, &window, &alone, size);
        let p = if view == "timeline" { plot } else { exaviz_views::plot::Plot { x0: 90, y0: 60, w: 250, h: 250 } };
        assert_eq!(crop(&a, p), crop(&b, p), "{view}: the filter's picture differs from the kept messages alone");
        let unfiltered = super::cpu(view, &window, &d, size);
        assert_ne!(crop(&a, p), crop(&unfiltered, p), "{view}: the filter changed nothing");
        // The same on the GPU, whose timeline is composed on the device.
        let on_gpu = exaviz_tests::draw(view, &filtered, &d, &super::gpu_backend(), size).unwrap();
        let alone_gpu = exaviz_tests::draw(view, &window, &alone, &super::gpu_backend(), size).unwrap();
        assert_eq!(crop(&on_gpu, p), crop(&alone_gpu, p), "{view} on the GPU");
    }
    let scene = exaviz_tests::scene("timeline", &filtered, &d, size).unwrap();
    assert!(scene.outline.title.contains("drawn: messages of"), "{}", scene.outline.title);
    // A trace held with its index: drawn from the rows, filtered, not from the pyramid.
    let big = open("gen:fd4?ranks=32&messages=1200000");
    assert!(big.index.is_some(), "an index kept beside the trace");
    let scene = exaviz_tests::scene("timeline", &["--messages", "from=0-3"], &big, size).unwrap();
    assert!(!scene.outline.title.contains("pyramid"), "{}", scene.outline.title);
    assert!(scene.outline.title.contains("drawn: messages from 0-3"), "{}", scene.outline.title);
}

/// Instants (intervals of no duration) are drawn as chevrons at the top of their rows, on both
/// backends, and a hover there names them; the picture without them has none.
#[test]
fn instants_are_chevrons_named_on_hover() {
    use exaviz_model::Trace;
    let trace = |with_instants: bool| {
        let mut t = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
        t.locations.name = vec!["rank 0".into(), "rank 1".into()];
        t.locations.node = vec![u32::MAX; 2];
        t.region_names = vec!["compute".into(), "checkpoint".into()];
        let mut push = |l: u32, a: u64, b: u64, k: u32, depth: u32| {
            let i = &mut t.intervals;
            i.location.push(l);
            i.start.push(a);
            i.end.push(b);
            i.kind.push(k);
            i.depth.push(depth);
        };
        push(0, 0, 10_000, 0, 0);
        push(1, 0, 10_000, 0, 0);
        if with_instants {
            push(0, 5_000, 5_000, 1, 1);
            push(1, 8_000, 8_000, 1, 1);
        }
        exaviz_model::dataset::Dataset { name: "instants".into(), trace: t, ..Default::default() }
    };
    let size = (480, 240);
    let (plain, marked) = (both("timeline", &[], &trace(false), size), both("timeline", &[], &trace(true), size));
    let changed = differ(&plain, &marked);
    assert!(changed > 0.0 && changed < 0.01, "the chevrons are small marks: {changed}");
    let d = trace(true);
    let none: [&str; 0] = [];
    let built = exaviz_views::contract::Entry::find("timeline").unwrap().parse(&none).unwrap();
    let frame = exaviz_views::contract::Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &exaviz_compute::Backend::Cpu).unwrap();
    let p = exaviz_views::timeline::plot_rect(size.0, size.1).unwrap();
    let x = p.x0 as f32 + p.w as f32 * 0.5;
    let pick = prepared.pick(&d, [x, p.y0 as f32 + 4.0]).expect("a pick on rank 0's row");
    assert!(pick.lines.iter().any(|l| l.starts_with("instant checkpoint at")), "{:?}", pick.lines);
    let away = prepared.pick(&d, [p.x0 as f32 + p.w as f32 * 0.2, p.y0 as f32 + 4.0]).expect("a pick");
    assert!(!away.lines.iter().any(|l| l.starts_with("instant")), "{:?}", away.lines);
}

/// A global instant on no row (Chrome's `s: "g"`, Kineto's "Iteration Start") is a line across
/// every row under a chevron over the plot, on both backends, named on hover on any row; a
/// search lights the instants it matches and dims the others, and counts the global ones.
#[test]
fn global_instants_cross_every_row_and_a_search_lights_instants() {
    use exaviz_model::{InstantScope, NO_ROW, Trace};
    let trace = |global: bool| {
        let mut t = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
        t.locations.name = vec!["rank 0".into(), "rank 1".into()];
        t.locations.node = vec![u32::MAX; 2];
        t.region_names = vec!["compute".into(), "checkpoint".into(), "Iteration Start".into()];
        t.intervals.push(0, 0, 10_000, 0, 0);
        t.intervals.push(1, 0, 10_000, 0, 0);
        t.intervals.push(0, 5_000, 5_000, 1, 1);
        t.instant_categories = vec![String::new()];
        t.instants.push(0, 5_000, 1, InstantScope::Thread, 0, 0);
        if global {
            t.instants.push(NO_ROW, 2_500, 2, InstantScope::Global, 0, 0);
        }
        exaviz_model::dataset::Dataset { name: "instants".into(), trace: t, ..Default::default() }
    };
    let size = (480, 240);
    let (plain, marked) = (both("timeline", &[], &trace(false), size), both("timeline", &[], &trace(true), size));
    let p = exaviz_views::timeline::plot_rect(size.0, size.1).unwrap();
    // The global instant's column differs from top to bottom of the plot; the rest is as it was.
    let column = p.x0 + p.w / 4;
    let changed_rows = (p.y0..p.y0 + p.h)
        .filter(|&y| {
            (column - 1..=column + 1).any(|x| {
                let k = ((y * size.0 + x) * 4) as usize;
                plain.pixels[k..k + 3] != marked.pixels[k..k + 3]
            })
        })
        .count();
    assert!(changed_rows as u32 > p.h * 9 / 10, "the line crosses the plot: {changed_rows} of {} rows", p.h);
    let changed = differ(&plain, &marked);
    assert!(changed > 0.0 && changed < 0.03, "a line and a chevron: {changed}");
    // Named on hover on either row.
    let d = trace(true);
    let none: [&str; 0] = [];
    let built = exaviz_views::contract::Entry::find("timeline").unwrap().parse(&none).unwrap();
    let frame = exaviz_views::contract::Frame { width: size.0, height: size.1 };
    let prepared = built.view.prepare(&d, &built.selection, frame, &exaviz_compute::Backend::Cpu).unwrap();
    let x = p.x0 as f32 + p.w as f32 * 0.25;
    let pick = prepared.pick(&d, [x, (p.y0 + p.h - 4) as f32]).expect("a pick on rank 1's row");
    assert!(pick.lines.iter().any(|l| l.starts_with("global instant Iteration Start at")), "{:?}", pick.lines);
    // A search matching only instants lights their chevrons: the two searches light different
    // marks, and each differs from the picture without a search; the note counts the global one.
    let checkpoint = both("timeline", &["--highlight", "checkpoint"], &d, size);
    let iteration = both("timeline", &["--highlight", "Iteration"], &d, size);
    assert!(differ(&checkpoint, &iteration) > 0.0, "the searches light different marks");
    assert!(differ(&marked, &iteration) > 0.0);
    let text = |options: &[&str]| -> Vec<String> {
        let scene = exaviz_tests::scene("timeline", options, &d, (1024, 768)).expect("a scene");
        scene.labels.iter().map(|l| l.text.clone()).collect()
    };
    let found = text(&["--highlight", "Iteration"]);
    assert!(found.iter().any(|t| t.contains("1 here, 1 in the trace")), "{found:?}");
    // A store drawn from its pyramid keeps them (the instants are held with the names).
    let dir = std::env::temp_dir().join(format!("exaviz-global-instants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stored = |global: bool| {
        let path = dir.join(format!("{global}.exaviz"));
        exaviz_store::write(&trace(global), &path).unwrap();
        let d = exaviz_store::open_with(&path, &|_, _| {}, 0).unwrap();
        assert!(d.out_of_core.is_some() && d.trace.instants.len() == 1 + usize::from(global));
        super::cpu("timeline", &[], &d, size)
    };
    let (plain, marked) = (stored(false), stored(true));
    let k = (((p.y0 + p.h / 2) * size.0 + column) * 4) as usize;
    let near = |img: &exaviz_render::Image| (k - 4..k + 8).map(|i| img.pixels[i]).collect::<Vec<_>>();
    assert_ne!(near(&plain), near(&marked), "the line crosses the pyramid's picture too");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store's overview on a GPU of its own is composed on the device from its pyramid kept there: the plot
/// a raster left on the device, within 3 of 255 of the CPU's overview on nearly every pixel (the
/// device sums in `f32`, the CPU in `f64`), for each state mode and mix; after the first picture
/// a gesture uploads at most 64 KiB (its rows' table, the grouping's representatives, uniforms)
/// and reads back the picture, the legend's numbers and the grouping (each rank's group in four
/// bits, the groups' statistics, the ranks that stand out).
#[test]
fn a_stores_overview_is_composed_on_the_device_from_its_pyramid() {
    use exaviz_model::selection::Selection;
    use exaviz_views::contract::{Entry, Frame, prepare};
    let dir = std::env::temp_dir().join(format!("exaviz-overview-device-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("fd4.exaviz");
    let ranks = 4096u64;
    exaviz_datasets::convert("gen:fd4?ranks=4096&messages=8000000&slow_rank=3000", &store, &|_, _| {}).unwrap();
    let d = exaviz_store::open_with(&store, &|_, _| {}, 0).unwrap();
    let o = d.out_of_core.as_ref().expect("opened out of core");
    // A device taken as a GPU of its own (lavapipe's kernels share the CPU's cores, where the
    // overview is composed on the CPU by default), its counters its own.
    let mut ctx = exaviz_compute::GpuContext::new().expect("a GPU adapter (lavapipe)");
    ctx.info.device_type = exaviz_compute::wgpu::DeviceType::DiscreteGpu;
    let backend = exaviz_compute::Backend::Gpu(Box::new(ctx));
    let size = (640u32, 420u32);
    let seconds = (o.span.1 - o.span.0) as f64 / d.trace.ticks_per_second.max(1) as f64;
    for options in [&[][..], &["--states", "stacked"][..], &["--mix", "additive"][..]] {
        let entry = Entry::find("timeline").unwrap();
        let built = entry.parse(options).unwrap();
        let frame = Frame { width: size.0, height: size.1 };
        let mut moved = Vec::new();
        for (k, window) in [None, Some((0.1, 0.9)), Some((0.2, 0.95)), None].into_iter().enumerate() {
            let sel = Selection { window_s: window.map(|(a, b)| (a * seconds, b * seconds)), ..built.selection };
            let before = backend.traffic();
            let prepared = prepare(built.view.as_ref(), &d, &sel, frame, &backend).unwrap();
            let scene = prepared.draw(&d, &sel).into_owned();
            assert!(scene.outline.title.contains("pyramid:"), "{options:?} window {k}: {}", scene.outline.title);
            let device_rasters = device_rasters(&scene);
            assert_eq!(device_rasters, 1, "{options:?}: the plot composed on the device");
            let image = exaviz_render::render_scene(&backend, &scene, exaviz_render::View::default()).unwrap();
            let after = backend.traffic();
            moved.push((after.0 - before.0, after.1 - before.1));
            if k < 2 {
                let on_cpu = prepare(built.view.as_ref(), &d, &sel, frame, &exaviz_compute::Backend::Cpu).unwrap();
                let cpu_scene = on_cpu.draw(&d, &sel).into_owned();
                let cpu = exaviz_render::render_scene(
                    &exaviz_compute::Backend::Cpu,
                    &cpu_scene,
                    exaviz_render::View::default(),
                )
                .unwrap();
                let far = exaviz_tests::diff_fraction(
                    &image.pixels,
                    &cpu.pixels,
                    exaviz_tests::ImageTolerance { channel: 3, fraction: 0.0 },
                );
                println!("{options:?} window {k}: {far} of the pixels differ by more than 3");
                assert!(far < 0.01, "{options:?} window {k}: {far} of the pixels differ from the CPU's by more than 3");
                // The deviant's row is named, and its tooltip (its line count read from the
                // device) names it.
                let label = scene.labels.iter().find(|l| l.text == "rank 3000").expect("the deviant's row");
                let y = (label.rect[1] + label.rect[3]) / 2.0;
                let pick = prepared.pick(&d, [400.0, y]).expect("a pick on the deviant's row");
                assert_eq!(pick.title, "rank 3000", "{options:?}");
            }
        }
        println!("{options:?}: moved {moved:?}");
        let picture = u64::from(size.0) * u64::from(size.1) * 4;
        for (k, &(up, down)) in moved.iter().enumerate().skip(1) {
            assert!(up <= 64 << 10, "{options:?}: window {k} uploaded {up} bytes");
            // Beside the picture and the legend's numbers: each rank's group in four bits, the
            // candidates' count, 32 bytes of statistics a group (at most 15) and the few ranks
            // that stand out (8 bytes each).
            let grouping = down - picture - 20;
            assert!(
                (ranks / 2 + 4 + 32..=ranks / 2 + 4 + 32 * 15 + 8 * 64).contains(&grouping),
                "{options:?}: window {k} read back {grouping} bytes of grouping"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
