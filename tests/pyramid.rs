//! Pictures of a store opened out of core, drawn from its pyramid, against the same pictures
//! drawn from the rows in memory, on both backends: a zoomed-out timeline must look like the
//! one from rows (block averages close), and the matrix of a trace of at most 256 ranks (one
//! rank per pyramid block) must be the same picture.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Selection;
use exaviz_render::{Image, View as Transform, render_scene};
use exaviz_tests::gpu;
use exaviz_views::contract;
use exaviz_views::contract::render_view;
use exaviz_views::matrix::{MatrixOptions, MatrixView};
use exaviz_views::timeline::{TimelineOptions, TimelineView, plot_rect};
use exaviz_views::{Frame, View};

/// A store of `input` written by `exaviz convert`, opened in memory and out of core.
fn store(name: &str, input: &str) -> (std::path::PathBuf, Dataset, Dataset) {
    let dir = std::env::temp_dir().join(format!("exaviz-pyramid-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.exaviz");
    exaviz_datasets::convert(input, &path, &|_, _| {}).unwrap();
    let all = exaviz_store::open_with(&path, &|_, _| {}, u64::MAX).unwrap();
    let ooc = exaviz_store::open_with(&path, &|_, _| {}, 0).unwrap();
    assert!(all.out_of_core.is_none() && ooc.out_of_core.is_some());
    (dir, all, ooc)
}

const FRAME: Frame = Frame { width: 1024, height: 768 };

/// `view` drawn from the pyramid of `ooc` (whatever the window's rows number).
fn from_pyramid(view: &dyn View, ooc: &Dataset, backend: &Backend) -> Image {
    let prepared = view.prepare(ooc, &Selection::default(), FRAME, backend).unwrap();
    render_scene(backend, &prepared.draw(ooc, &Selection::default()), Transform::default()).unwrap()
}

/// Mean RGB of the `block`-pixel squares of the plot `[x0, y0, w, h]`.
fn block_means(img: &Image, plot: [u32; 4], block: u32) -> Vec<[f32; 3]> {
    let [x0, y0, w, h] = plot;
    let mut out = Vec::new();
    for by in 0..h / block {
        for bx in 0..w / block {
            let mut sum = [0f32; 3];
            for y in y0 + by * block..y0 + (by + 1) * block {
                for x in x0 + bx * block..x0 + (bx + 1) * block {
                    let k = ((y * img.width + x) * 4) as usize;
                    (0..3).for_each(|c| sum[c] += f32::from(img.pixels[k + c]));
                }
            }
            out.push(sum.map(|v| v / (block * block) as f32));
        }
    }
    out
}

/// The whole-trace timeline of 2M messages on 4,096 ranks from the pyramid looks like the one
/// from the rows: over squares of 16 pixels (a little more than two iterations by ten
/// processes), the mean colour differs by at most 8 of 255 per channel on average and 20 at the
/// 99th percentile (4.2 and 9.9 measured on both backends).
fn timeline_from_pyramid_looks_like_rows(backend: &Backend) {
    let name = if matches!(backend, Backend::Cpu) { "timeline-cpu" } else { "timeline-gpu" };
    let (dir, all, ooc) = store(name, "gen:fd4?ranks=4096&messages=2000000");
    let view = TimelineView::with(TimelineOptions::default());
    let rows = render_view(&view, &all, &Selection::default(), FRAME, backend).unwrap();
    let pyramid = from_pyramid(&view, &ooc, backend);
    let p = plot_rect(FRAME.width, FRAME.height).unwrap();
    let (a, b) = (block_means(&rows, [p.x0, p.y0, p.w, p.h], 16), block_means(&pyramid, [p.x0, p.y0, p.w, p.h], 16));
    if let Ok(out) = std::env::var("EXAVIZ_TEST_OUT") {
        let out = std::path::Path::new(&out);
        exaviz_render::image::write_png_atomic(&out.join(format!("{name}-rows.png")), &rows).unwrap();
        exaviz_render::image::write_png_atomic(&out.join(format!("{name}-pyramid.png")), &pyramid).unwrap();
    }
    let mut diffs: Vec<f32> = a.iter().zip(&b).flat_map(|(x, y)| (0..3).map(move |c| (x[c] - y[c]).abs())).collect();
    diffs.sort_by(f32::total_cmp);
    let mean = diffs.iter().sum::<f32>() / diffs.len() as f32;
    let p99 = diffs[diffs.len() * 99 / 100];
    eprintln!("{}: block mean difference {mean:.2}, 99th percentile {p99:.2}", backend.describe());
    assert!(mean <= 8.0 && p99 <= 20.0, "{}: mean {mean}, 99th percentile {p99}", backend.describe());
    // The tooltip under the plot's centre: ranks, the states' shares, the lines there.
    let prepared = view.prepare(&ooc, &Selection::default(), FRAME, backend).unwrap();
    let pick = prepared.pick(&ooc, [(p.x0 + p.w / 2) as f32, (p.y0 + p.h / 2) as f32]).unwrap();
    assert!(pick.title.starts_with("ranks "), "{pick:?}");
    assert!(pick.lines.iter().any(|l| l.starts_with("states: ") && l.contains('%')), "{pick:?}");
    assert!(pick.lines.iter().any(|l| l.contains("zoom in to read the rows")), "{pick:?}");
    // Not a blank picture: the rows' blocks vary, and the pyramid's follow them.
    let spread = a.iter().map(|x| x[0]).fold(0f32, f32::max) - a.iter().map(|x| x[0]).fold(255f32, f32::min);
    assert!(spread > 20.0, "the rows' picture is nearly flat ({spread})");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timeline_from_the_pyramid_looks_like_the_rows_on_the_cpu() {
    timeline_from_pyramid_looks_like_rows(&Backend::Cpu);
}

#[test]
fn timeline_from_the_pyramid_looks_like_the_rows_on_the_gpu() {
    let _ = gpu();
    timeline_from_pyramid_looks_like_rows(&Backend::new(exaviz_compute::BackendChoice::Gpu).expect("a GPU adapter"));
}

/// With one rank per pyramid block, the matrix from the pyramid is the matrix from the rows,
/// pixel for pixel inside the plot, and its tooltips count the same messages.
fn matrix_from_pyramid_equals_rows(backend: &Backend) {
    let (dir, all, ooc) = store("matrix", "gen:fd4?ranks=200&messages=300000");
    let view = MatrixView(MatrixOptions::default());
    let rows = render_view(&view, &all, &Selection::default(), FRAME, backend).unwrap();
    let pyramid = from_pyramid(&view, &ooc, backend);
    // Below the title: the plot, the axes and the colour bar.
    let from = (40 * FRAME.width * 4) as usize;
    assert_eq!(rows.pixels[from..], pyramid.pixels[from..], "{}", backend.describe());
    let (a, b) = (
        view.prepare(&all, &Selection::default(), FRAME, backend).unwrap(),
        view.prepare(&ooc, &Selection::default(), FRAME, backend).unwrap(),
    );
    for at in [[200.0, 200.0], [300.0, 150.0], [120.0, 400.0]] {
        let (x, y) = (a.pick(&all, at), b.pick(&ooc, at));
        assert!(x.is_some());
        assert_eq!(x.map(|p| (p.title, p.lines)), y.map(|p| (p.title, p.lines)), "{at:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn matrix_from_the_pyramid_equals_the_rows_on_both_backends() {
    matrix_from_pyramid_equals_rows(&Backend::Cpu);
    let _ = gpu();
    matrix_from_pyramid_equals_rows(&Backend::new(exaviz_compute::BackendChoice::Gpu).expect("a GPU adapter"));
}

/// Out of core, every view that draws the trace draws a window holding more rows than a
/// picture reads at once from the pyramid, or is refused it in one line saying what to do; each
/// of them reads and draws a short window's rows. The trace views (timeline, matrix, chord,
/// sendrecv and the linked mpi view) all read the pyramid.
#[test]
fn views_draw_long_windows_from_the_pyramid_or_refuse_them_and_read_short_ones() {
    let (dir, _, ooc) = store("budget", "gen:fd4?ranks=256&messages=6000000");
    let o = ooc.out_of_core.as_ref().unwrap();
    assert!(o.rows.estimate(o.span) > contract::ROW_BUDGET);
    let whole = Selection::default();
    let seconds = (o.span.1 - o.span.0) as f64 / 1e9;
    let short = Selection { window_s: Some((seconds * 0.5, seconds * 0.51)), ..Selection::default() };
    let mut from_pyramid = Vec::new();
    for entry in exaviz_views::REGISTRY {
        let view = entry.parse::<&str>(&[]).unwrap().view;
        if view.check(&ooc).is_err() {
            continue;
        }
        match contract::prepare(view.as_ref(), &ooc, &whole, FRAME, &Backend::Cpu) {
            Ok(prepared) => {
                assert!(view.reads_pyramid(), "{} drew {} rows", entry.name, o.rows.estimate(o.span));
                let scene = prepared.draw(&ooc, &whole);
                assert_eq!((scene.width, scene.height), (FRAME.width, FRAME.height), "{}", entry.name);
                from_pyramid.push(entry.name);
            }
            Err(e) => {
                let e = e.to_string();
                assert!(!view.reads_pyramid(), "{}: {e}", entry.name);
                assert!(e.contains("shorter time window") && e.contains("pyramid") && !e.contains('\n'), "{e}");
            }
        }
        let img = render_view(view.as_ref(), &ooc, &short, FRAME, &Backend::Cpu).unwrap();
        assert_eq!((img.width, img.height), (FRAME.width, FRAME.height), "{}", entry.name);
    }
    from_pyramid.sort_unstable();
    assert_eq!(from_pyramid, ["chord", "matrix", "mpi", "sendrecv", "timeline"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The linked mpi view of a store's wide window is its three panels as the timeline, matrix and
/// chord views draw them from the pyramid, placed side by side, and picked in each panel.
#[test]
fn the_linked_mpi_view_of_a_wide_window_places_the_panels_drawn_from_the_pyramid() {
    let (dir, _, ooc) = store("mpi", "gen:fd4?ranks=200&messages=300000");
    let whole = Selection::default();
    let view = |name: &str| contract::Entry::find(name).unwrap().parse::<&str>(&[]).unwrap().view;
    let mpi = view("mpi").prepare(&ooc, &whole, FRAME, &Backend::Cpu).unwrap();
    let panels = exaviz_views::mpi::panels(FRAME.width, FRAME.height);
    for (name, r) in ["timeline", "matrix", "chord"].into_iter().zip(panels) {
        let frame = Frame { width: r[2], height: r[3] };
        let alone = view(name).prepare(&ooc, &whole, frame, &Backend::Cpu).unwrap();
        let (x, y) = ((r[0] + r[2] / 2) as f32, (r[1] + r[3] / 2) as f32);
        let mut hits = 0;
        for (dx, dy) in [(0.0, 0.0), (-40.0, 10.0), (30.0, -20.0), (60.0, 40.0), (-80.0, -30.0)] {
            let at = [x + dx, y + dy];
            let in_panel = [at[0] - r[0] as f32, at[1] - r[1] as f32];
            let (a, b) = (mpi.pick(&ooc, at), alone.pick(&ooc, in_panel));
            hits += usize::from(b.is_some());
            assert_eq!(a.map(|p| (p.title, p.lines)), b.map(|p| (p.title, p.lines)), "{name} at {at:?}");
        }
        assert!(hits > 0, "{name}: nothing under the probes");
        let title = |s: &exaviz_render::Scene| s.labels.iter().map(|l| l.text.clone()).collect::<Vec<_>>();
        let composed = title(&mpi.draw(&ooc, &whole));
        for text in title(&alone.draw(&ooc, &whole)) {
            assert!(composed.contains(&text), "{name}: {text:?} missing from the linked view");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The linked mpi view keeps the matrix and chord panels of a trace with a pyramid while only
/// the search changes: one view drawing a run of selections (a search, another window, the
/// search again, the first window) draws each as a fresh view draws it, of a store (panels from
/// its pyramid) and of the same trace in memory with its index.
#[test]
fn the_linked_mpi_views_kept_panels_draw_what_fresh_ones_draw() {
    let (dir, mut all, ooc) = store("mpi-kept", "gen:fd4?ranks=256&messages=6000000");
    exaviz_model::held_index::attach_index(&mut all);
    assert!(all.index.is_some(), "the trace in memory has an index");
    let view = || contract::Entry::find("mpi").unwrap().parse::<&str>(&[]).unwrap().view;
    let o = ooc.out_of_core.as_ref().unwrap();
    let seconds = (o.span.1 - o.span.0) as f64 / 1e9;
    let search = Some(exaviz_model::selection::Search::new("wait").unwrap());
    // Both windows hold more rows than a picture reads at once: the panels come from the pyramid.
    let part = Some((seconds * 0.05, seconds * 0.95));
    assert!(o.rows.estimate(o.span) / 10 * 9 > contract::ROW_BUDGET);
    let runs = [
        Selection::default(),
        Selection { search, ..Selection::default() },
        Selection { search, window_s: part, ..Selection::default() },
        Selection { window_s: part, ..Selection::default() },
        Selection::default(),
    ];
    for d in [&all, &ooc] {
        let kept = view();
        for sel in &runs {
            let a = render_view(kept.as_ref(), d, sel, FRAME, &Backend::Cpu).unwrap();
            let b = render_view(view().as_ref(), d, sel, FRAME, &Backend::Cpu).unwrap();
            assert!(a.pixels == b.pixels, "in memory: {}, {sel:?}", d.out_of_core.is_none());
        }
    }
    let kept = view();
    let pictures: Vec<Image> =
        runs.iter().map(|sel| render_view(kept.as_ref(), &ooc, sel, FRAME, &Backend::Cpu).unwrap()).collect();
    assert!(pictures[0].pixels != pictures[1].pixels, "the search is drawn");
    assert!(pictures[1].pixels != pictures[2].pixels, "the window is drawn");
    // Below the timeline: the matrix and chord panels of the window differ from the whole's.
    let below = (exaviz_views::mpi::panels(FRAME.width, FRAME.height)[1][1] * FRAME.width * 4) as usize;
    if let Ok(out) = std::env::var("EXAVIZ_TEST_OUT") {
        for (k, p) in pictures.iter().enumerate() {
            exaviz_render::image::write_png_atomic(&std::path::Path::new(&out).join(format!("mpi-kept-{k}.png")), p)
                .unwrap();
        }
    }
    assert!(pictures[0].pixels[below..] != pictures[3].pixels[below..], "the window restricts the matrix and chord");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The pair views' picture drawn from the rows of `all` and from the pyramid of `ooc` for the
/// whole trace (every message in either): the same but for the footnote saying where the pairs
/// come from, and the same tooltips at `probes`.
fn pair_view_from_pyramid_equals_rows(
    name: &str,
    all: &Dataset,
    ooc: &Dataset,
    probes: &[[f32; 2]],
    backend: &Backend,
) {
    let view = contract::Entry::find(name).unwrap().parse::<&str>(&[]).unwrap().view;
    let whole = Selection::default();
    let rows = render_view(view.as_ref(), all, &whole, FRAME, backend).unwrap();
    let pyramid = from_pyramid(view.as_ref(), ooc, backend);
    if let Ok(out) = std::env::var("EXAVIZ_TEST_OUT") {
        let out = std::path::Path::new(&out);
        let n = all.trace.locations.name.len();
        exaviz_render::image::write_png_atomic(&out.join(format!("{name}-{n}-rows.png")), &rows).unwrap();
        exaviz_render::image::write_png_atomic(&out.join(format!("{name}-{n}-pyramid.png")), &pyramid).unwrap();
    }
    // All but the footnote, which says where the pairs come from.
    let foot = ((FRAME.height - 20) * FRAME.width * 4) as usize;
    assert!(rows.pixels[..foot] == pyramid.pixels[..foot], "{name}, {}", backend.describe());
    assert!(rows.pixels[foot..] != pyramid.pixels[foot..], "{name}: the pyramid's footnote says so");
    let (a, b) =
        (view.prepare(all, &whole, FRAME, backend).unwrap(), view.prepare(ooc, &whole, FRAME, backend).unwrap());
    let mut picked = 0;
    for &at in probes {
        let (x, y) = (a.pick(all, at), b.pick(ooc, at));
        picked += usize::from(x.is_some());
        assert_eq!(x.map(|p| (p.title, p.lines)), y.map(|p| (p.title, p.lines)), "{name} at {at:?}");
    }
    assert!(picked > 0, "{name}: no curve under any probe");
}

/// The chord and sender/receiver views draw a store's window from the pyramid's message cube
/// rather than refusing it: with one rank per block (200 ranks) the whole trace's pairs are the
/// rows' and the pictures the same below the title; past the 8,192 ranks drawn one by one, the
/// rows and the cube gather the same blocks of ranks (10,000 ranks in 157 blocks of 64), and the
/// tooltips name the blocks' ranks.
fn pair_views_from_pyramid_equal_rows(backend: &Backend) {
    let gpu = if matches!(backend, Backend::Cpu) { "cpu" } else { "gpu" };
    let (dir, all, ooc) = store(&format!("pairs-{gpu}"), "gen:fd4?ranks=200&messages=300000");
    let chord_probes = [[400.0, 420.0], [300.0, 300.0], [500.0, 250.0], [420.0, 500.0], [260.0, 420.0]];
    let sendrecv_probes = [[300.0, 300.0], [400.0, 200.0], [500.0, 500.0], [350.0, 600.0], [600.0, 380.0]];
    pair_view_from_pyramid_equals_rows("chord", &all, &ooc, &chord_probes, backend);
    pair_view_from_pyramid_equals_rows("sendrecv", &all, &ooc, &sendrecv_probes, backend);
    std::fs::remove_dir_all(&dir).unwrap();
    let (dir, all, ooc) = store(&format!("blocks-{gpu}"), "gen:fd4?ranks=10000&messages=300000");
    pair_view_from_pyramid_equals_rows("chord", &all, &ooc, &chord_probes, backend);
    pair_view_from_pyramid_equals_rows("sendrecv", &all, &ooc, &sendrecv_probes, backend);
    let chord = contract::Entry::find("chord").unwrap().parse::<&str>(&[]).unwrap().view;
    let prepared = chord.prepare(&ooc, &Selection::default(), FRAME, backend).unwrap();
    let pick = chord_probes.iter().find_map(|&at| prepared.pick(&ooc, at)).expect("a curve under a probe");
    assert!(pick.title.starts_with("ranks ") && pick.title.contains(" → ranks "), "{pick:?}");
    assert!(pick.click.is_none(), "a pair of blocks selects no pair of ranks: {pick:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pair_views_from_the_pyramid_equal_the_rows_on_both_backends() {
    pair_views_from_pyramid_equal_rows(&Backend::Cpu);
    let _ = gpu();
    pair_views_from_pyramid_equal_rows(&Backend::new(exaviz_compute::BackendChoice::Gpu).expect("a GPU adapter"));
}

/// Mean and 99th percentile of the per-channel differences of the 16-pixel block means of two
/// timeline pictures' plots.
fn block_difference(a: &Image, b: &Image) -> (f32, f32) {
    let p = plot_rect(a.width, a.height).unwrap();
    let (a, b) = (block_means(a, [p.x0, p.y0, p.w, p.h], 16), block_means(b, [p.x0, p.y0, p.w, p.h], 16));
    let mut diffs: Vec<f32> = a.iter().zip(&b).flat_map(|(x, y)| (0..3).map(move |c| (x[c] - y[c]).abs())).collect();
    diffs.sort_by(f32::total_cmp);
    (diffs.iter().sum::<f32>() / diffs.len() as f32, diffs[diffs.len() * 99 / 100])
}

/// A trace opened in memory with more rows than a picture reads at once gets an index: the
/// timeline draws a window holding more rows than that from it (its tooltip says so, and the
/// picture looks like the rows' within the pyramid test's tolerance), and a shorter window
/// from the rows (the very picture drawn without an index), at several zooms.
#[test]
fn an_in_memory_trace_draws_wide_windows_from_its_index() {
    let d = exaviz_datasets::open("gen:fd4?ranks=256&messages=6000000").unwrap();
    let index = d.index.as_ref().expect("an index for 6M messages");
    let rows = (d.trace.messages.source.len() + d.trace.intervals.start.len()) as u64;
    assert_eq!(index.messages + index.intervals, rows);
    assert!(index.rows.estimate(index.span) >= rows, "the estimate bounds the rows");
    let plain = Dataset { index: None, ..d.clone() };
    let view = TimelineView::with(TimelineOptions::default());
    let seconds = (index.span.1 - index.span.0) as f64 / d.trace.ticks_per_second as f64;
    let centre = {
        let p = plot_rect(FRAME.width, FRAME.height).unwrap();
        [(p.x0 + p.w / 2) as f32, (p.y0 + p.h / 2) as f32]
    };
    let mut seen = [false; 2];
    for share in [1.0, 0.7, 0.02] {
        let sel = Selection {
            window_s: (share < 1.0).then_some((0.1 * seconds, (0.1 + share) * seconds)),
            ..Default::default()
        };
        let window = sel.window_s.map_or(index.span, |(a, b)| {
            let at = |s: f64| index.span.0 + (s * d.trace.ticks_per_second as f64) as u64;
            (at(a), at(b))
        });
        let from_index = index.rows.estimate(window) > exaviz_model::held_index::INDEX_ROWS;
        seen[usize::from(from_index)] = true;
        let prepared = contract::prepare(&view, &d, &sel, FRAME, &Backend::Cpu).unwrap();
        let tooltip = prepared.pick(&d, centre).map(|p| p.lines.join(" ")).unwrap_or_default();
        assert_eq!(tooltip.contains("zoom in to read the rows"), from_index, "share {share}: {tooltip}");
        let indexed = render_view(&view, &d, &sel, FRAME, &Backend::Cpu).unwrap();
        let from_rows = render_view(&view, &plain, &sel, FRAME, &Backend::Cpu).unwrap();
        if from_index {
            let (mean, p99) = block_difference(&indexed, &from_rows);
            assert!(mean <= 8.0 && p99 <= 20.0, "share {share}: mean {mean}, 99th percentile {p99}");
        } else {
            assert!(indexed.pixels == from_rows.pixels, "share {share}: a short window is drawn from the rows");
        }
    }
    assert_eq!(seen, [true, true], "both paths taken");
}

/// The matrix, chord and sender/receiver views of a trace in memory with an index count a
/// window's messages by pair from its messages grouped by pair, not by a pass over the rows:
/// the same pictures and tooltips as without the index, whole and windowed, per rank (1,024
/// ranks) and in blocks of ranks (9,000).
#[test]
fn pair_counts_of_a_trace_in_memory_equal_a_pass_over_its_rows() {
    for input in ["gen:fd4?ranks=1024&messages=1100000", "gen:fd4?ranks=9000&messages=1100000"] {
        let d = exaviz_datasets::open(input).unwrap();
        assert!(d.index.is_some(), "{input}: an index");
        let plain = Dataset { index: None, ..d.clone() };
        let index = d.index.as_ref().unwrap();
        let seconds = (index.span.1 - index.span.0) as f64 / d.trace.ticks_per_second as f64;
        for name in ["matrix", "chord", "sendrecv"] {
            let view = contract::Entry::find(name).unwrap().parse::<&str>(&[]).unwrap().view;
            for window_s in [None, Some((0.1 * seconds, 0.6 * seconds)), Some((0.3 * seconds, 0.3004 * seconds))] {
                let sel = Selection { window_s, ..Selection::default() };
                let (a, b) = (
                    view.prepare(&d, &sel, FRAME, &Backend::Cpu).unwrap(),
                    view.prepare(&plain, &sel, FRAME, &Backend::Cpu).unwrap(),
                );
                let (x, y) = (a.draw(&d, &sel), b.draw(&plain, &sel));
                let (x, y) = (
                    render_scene(&Backend::Cpu, &x, Transform::default()).unwrap(),
                    render_scene(&Backend::Cpu, &y, Transform::default()).unwrap(),
                );
                assert!(x.pixels == y.pixels, "{input} {name} {window_s:?}");
                for at in [[200.0, 200.0], [300.0, 150.0], [420.0, 400.0], [600.0, 300.0]] {
                    let (p, q) = (a.pick(&d, at), b.pick(&plain, at));
                    assert_eq!(p.map(|p| (p.title, p.lines)), q.map(|p| (p.title, p.lines)), "{name} {at:?}");
                }
            }
        }
    }
}

/// A window with more pairs of ranks than a pair view keeps curves for (131,072) is drawn in the
/// message cube's blocks of ranks, counted by pair or from the rows alike; a window with fewer
/// keeps a node per rank.
#[test]
fn a_window_of_too_many_pairs_is_drawn_in_blocks_of_ranks() {
    let mut d = exaviz_datasets::open("gen:fd4?ranks=1024&messages=1100000").unwrap();
    assert!(d.index.is_some());
    // Messages between random ranks: about 650,000 pairs over the whole trace.
    let mut rng = exaviz_tests::Rng(17);
    let m = &mut d.trace.messages;
    for k in 0..m.source.len() {
        (m.source[k], m.destination[k]) = (rng.below(1024), rng.below(1024));
    }
    let plain = Dataset { index: None, ..d.clone() };
    let seconds = d.trace.messages.send_time.iter().max().unwrap() / d.trace.ticks_per_second;
    let pairs =
        |d: &Dataset, window_s| exaviz_views::pairs::pairs_in(d, &Backend::Cpu, "chord", 8192, window_s).unwrap();
    let whole = pairs(&d, None);
    assert_eq!((whole.0.block, whole.0.count), (4, 256), "blocks of ranks");
    assert!(whole.1.len() > 50_000 && whole.1.len() <= 65_280);
    assert_eq!(whole, pairs(&plain, None), "by pair and from the rows");
    let short = Some((0.0, seconds as f64 / 20.0));
    let part = pairs(&d, short);
    assert_eq!(part.0.block, 1, "a short window keeps a node per rank");
    assert!(part.1.len() > 10_000 && part.1.len() <= 131_072);
    assert_eq!(part, pairs(&plain, short));
}

/// Two stores over their whole runs compare from their pyramids, without reading a row, and
/// find what their rows find: the slowed rank named first with its work up by half, every
/// region's time and the bytes between pairs the same to a nanosecond per row.
#[test]
fn two_stores_compare_from_their_pyramids_as_from_their_rows() {
    use exaviz_analysis::diff::{Options, diff_asked};
    let (dir_a, rows_a, cube_a) = store("diff-a", "gen:wrf?iterations=20&seed=5");
    let (dir_b, rows_b, cube_b) = store("diff-b", "gen:wrf?iterations=20&seed=5&slow_rank=11");
    let o = Options::default();
    let rows = diff_asked(&rows_a, &rows_b, None, None, &o).unwrap();
    let cube = diff_asked(&cube_a, &cube_b, None, None, &o).unwrap();
    assert_eq!((rows.matching.from.as_str(), cube.matching.from.as_str()), ("rows", "pyramids"));
    assert_eq!(cube.matching.locations_by, "name");
    assert_eq!(cube.locations[0].name, "rank 11");
    assert!((cube.locations[0].relative - 0.5).abs() < 0.01, "{:#?}", cube.locations[0]);
    assert_eq!(cube.locations[0].stands_out, Some(true));
    assert!(cube.locations[1..].iter().all(|x| x.change_s.abs() < 1e-6), "{:#?}", &cube.locations[1]);
    assert_eq!(cube.run.change_s, rows.run.change_s);
    for r in &rows.regions {
        let c = cube.regions.iter().find(|c| c.name == r.name).unwrap_or_else(|| panic!("{}", r.name));
        for (x, y) in [(r.a.total_s, c.a.total_s), (r.b.total_s, c.b.total_s)] {
            assert!((x - y).abs() <= 1e-9 * x.max(1.0), "{}: rows {x} s, pyramid {y} s", r.name);
        }
        assert_eq!(c.locations.first().map(|p| &p.name), r.locations.first().map(|p| &p.name), "{}", r.name);
    }
    let bytes = |d: &exaviz_analysis::diff::Diff| -> (u64, u64) {
        d.pairs.iter().fold((0, 0), |(a, b), p| (a + p.a.bytes, b + p.b.bytes))
    };
    assert_eq!(bytes(&rows), bytes(&cube));
    for d in [dir_a, dir_b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// A store too large to hold is analysed chunk by chunk (`exaviz critical-path` on it): cut
/// into chunks of about a third of its rows (its row groups hold a million each), the walk goes
/// on from chunk to chunk and finds the path the whole trace in memory gives, the slow rank
/// planted in `gen:fd4` heads the root causes and is the only straggler, and the wait states
/// are each counted once.
#[test]
fn a_store_too_large_to_hold_is_walked_chunk_by_chunk() {
    use exaviz_analysis::critical_path;
    use exaviz_analysis::critical_path::chunked;
    let (dir, all, ooc) = store("chunked", "gen:fd4?slow_rank=100");
    let span = all.trace.span().unwrap();
    let window = (span.0, span.1 + 1);
    let whole = critical_path::analyse(&all.trace, None, window, span.0);
    let o = ooc.out_of_core.as_ref().unwrap();
    let chunks = chunked::chunks(&ooc, window, (o.messages + o.intervals) / 3);
    assert!(chunks.len() >= 2, "{chunks:?}");
    assert!(chunks.windows(2).all(|w| w[0].1 == w[1].0) && chunks[0].0 == window.0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let r = chunked::analyse_chunks(&ooc, &chunks, span.0, &|k, n| {
        assert_eq!(n, chunks.len());
        done.store(k, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(done.into_inner(), chunks.len());
    let near = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs().max(1e-12);
    assert!(near(r.length_s, whole.length_s, 0.01), "{} against {}", r.length_s, whole.length_s);
    assert!(r.segments.windows(2).all(|w| w[0].to_s <= w[1].from_s + 1e-9), "the path runs forward in time");
    assert!(
        near(r.wait_states as f64, whole.wait_states as f64, 0.05),
        "{} against {}",
        r.wait_states,
        whole.wait_states
    );
    assert_eq!((r.root_causes[0].location.as_str(), r.root_causes[0].region.as_str()), ("rank 100", "compute"));
    let named: Vec<&str> = r.stragglers.named.iter().map(|s| s.process.as_str()).collect();
    assert_eq!(named, ["rank 100"], "{:?}", r.stragglers.named);
    assert_eq!(r.stragglers.steps as usize, chunks.len(), "a chunk is a step where the trace names none");
    // What-ifs replayed chunk by chunk project what the replay of the whole run does.
    let asks: Vec<_> = ["region:compute*0.5", "region:compute", "rank 100", "region:compute*1"]
        .iter()
        .map(|s| critical_path::what_if::parse(s).unwrap())
        .collect();
    let (_, first, length) = chunked::analyse_chunks_walked(&ooc, &chunks, span.0, &|_, _| {}).unwrap();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let chunked = chunked::what_if_chunks(&ooc, &chunks, (first, length), &asks, &|k, n| {
        assert_eq!(n, chunks.len());
        done.store(k, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(done.into_inner(), chunks.len());
    let g = critical_path::Graph::new(&all.trace);
    let path = critical_path::path::critical_path(&all.trace, &g, window);
    for (ask, c) in asks.iter().zip(&chunked).take(2) {
        let w = critical_path::what_if::what_if(&all.trace, &g, None, window, &path, ask).unwrap();
        assert!(near(c.removed_s, w.removed_s, 1e-6), "{}: removed {} against {}", ask.spec, c.removed_s, w.removed_s);
        assert!(near(c.length_s, w.length_s, 0.01), "{}: {} against {}", ask.spec, c.length_s, w.length_s);
        assert!(c.saved_s > 0.1 * c.length_s, "{}: saves {} of {}", ask.spec, c.saved_s, c.length_s);
        assert!(
            near(c.projected_s, w.projected_s, 1e-3),
            "{}: projected {} chunk by chunk against {} at once",
            ask.spec,
            c.projected_s,
            w.projected_s
        );
    }
    assert!(chunked[1].projected_s < chunked[0].projected_s, "removing the work saves more than halving it");
    // The slow rank brought to its peers' median in each chunk (a step where the trace names
    // none): the generator's slow rank works longer, though the run's end does not wait for it.
    let slow = &chunked[2];
    assert_eq!(slow.selected, ["rank 100"]);
    assert!(slow.removed_s > 60.0 && slow.saved_s >= 0.0, "{slow:?}");
    // Replayed unchanged, chunk by chunk, the run ends exactly when it did.
    let same = &chunked[3];
    assert!(near(same.projected_s, same.length_s, 1e-9) && same.removed_s == 0.0, "{same:?}");
    // The timeline of the store drawn from its pyramid says how to see the path (`x` there).
    let view = TimelineView::with(TimelineOptions::default());
    let sel = Selection { critical: Some(true), ..Selection::default() };
    let prepared = view.prepare(&ooc, &sel, FRAME, &Backend::Cpu).unwrap();
    let scene = prepared.draw(&ooc, &sel);
    assert!(scene.labels.iter().any(|l| l.text.starts_with("critical path: zoom in")), "no note on the path");
    std::fs::remove_dir_all(dir).unwrap();
}
