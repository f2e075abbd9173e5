//! `--view matrix`: the communication matrix (Brendel et al., 2016), for every generated MPI case.

use super::{MPI_CASES, both, golden, open};

#[test]
fn matrix_matches_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let picture = both("matrix", &[], &d, (420, 320));
        assert!(picture.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("matrix_{case}.png"), &picture);
    }
}

/// One heavy pair among 65,536 ranks: where cells gather blocks of a hundred ranks, the pair's
/// sender and receiver get a row and a column of their own, pinned at the top and left and
/// labelled with their ranks, their cell over well over a pixel of a block, on both backends;
/// by index neither is named.
#[test]
fn one_heavy_pair_of_65536_ranks_has_a_row_and_a_column_of_its_own() {
    let d = open("gen:fd4?ranks=65536&messages=1e6&heavy_pair=1234-40000");
    let heavy: u64 = d
        .trace
        .messages
        .source
        .iter()
        .zip(&d.trace.messages.destination)
        .filter(|&(&s, &r)| (s, r) == (1234, 40000))
        .count() as u64;
    heavy_pair_apart(&d, heavy);
}

/// The same trace as a store kept on disk: its matrix is drawn from the pyramid, whose per-pair
/// tiles give the heavy pair's ranks their row and column as the rows do, the pair's cell
/// counting its every message (the whole trace: every tile bin).
#[test]
fn one_heavy_pair_of_a_65536_rank_store_has_a_row_and_a_column_of_its_own() {
    let spec = "gen:fd4?ranks=65536&messages=1e6&heavy_pair=1234-40000";
    let heavy: u64 = {
        let d = open(spec);
        let m = &d.trace.messages;
        m.source.iter().zip(&m.destination).filter(|&(&s, &r)| (s, r) == (1234, 40000)).count() as u64
    };
    let dir = std::env::temp_dir().join(format!("exaviz-heavy-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("fd4.exaviz");
    exaviz_datasets::convert(spec, &store, &|_, _| {}).unwrap();
    let d = exaviz_store::open_with(&store, &|_, _| {}, 0).unwrap();
    let o = d.out_of_core.as_ref().expect("opened out of core");
    assert!(o.pyramid.pairs.as_ref().is_some_and(|p| p.bins >= 4), "the store's pyramid keeps per-pair tiles");
    heavy_pair_apart(&d, heavy);
    std::fs::remove_dir_all(&dir).ok();
}

/// The checks of a trace of 65,536 ranks with one heavy pair (1234 to 40000, `heavy` messages)
/// drawn at 1024x768 on both backends: the sender's row and the receiver's column named, the
/// pair's cell counting its messages over at least 1,500 pixels; by index neither is named.
fn heavy_pair_apart(d: &exaviz_model::dataset::Dataset, heavy: u64) {
    let size = (1024, 768);
    let picture = both("matrix", &[], d, size);
    let scene = exaviz_tests::scene("matrix", &[], d, size).expect("a scene");
    let find = |text: &str| scene.labels.iter().find(|l| l.text == text).map(|l| l.rect);
    let texts: Vec<&str> = scene.labels.iter().map(|l| l.text.as_str()).collect();
    let row = find("rank 1234").unwrap_or_else(|| panic!("the sender's row is named: {texts:?}"));
    let col = find("40000").unwrap_or_else(|| panic!("the receiver's column is named: {texts:?}"));
    assert!(find("rank 40000").is_some() && find("1234").is_some(), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("65536 processes") && t.contains("2 apart")), "{texts:?}");
    let (x, y) = ((col[0] + col[2]) / 2.0, (row[1] + row[3]) / 2.0 - 2.0);
    let pick = exaviz_tests::prepared("matrix", &[], d, size).pick(d, [x, y]).expect("a pick on the pair's cell");
    assert_eq!(pick.title, "rank 1234 → rank 40000");
    assert!(heavy >= 32, "{heavy} messages of the pair");
    assert_eq!(pick.lines[0], format!("messages: {heavy}"));
    // The pair's cell: its colour over at least 1,500 pixels.
    let want = picture.pixel(x as u32, y as u32);
    let count = |img: &exaviz_render::Image| {
        let mut n = 0;
        for yy in 56..768 - 52 {
            for xx in 80..1024 - 170 {
                let c = img.pixel(xx, yy);
                n += usize::from((0..3).all(|k| c[k].abs_diff(want[k]) <= 2));
            }
        }
        n
    };
    let seen = count(&picture);
    assert!(seen >= 1500, "the pair's colour {want:?} over {seen} pixels");
    let by_index = exaviz_tests::scene("matrix", &["--rows", "index"], d, size).expect("a scene");
    assert!(!by_index.labels.iter().any(|l| l.text == "rank 1234"), "by index, no row of its own");
}

/// A trace held without an index, on a GPU: the matrix of each window is counted and coloured
/// on the device from the messages kept there (one device raster), its picture within 2 of
/// 255 of the CPU's on every pixel (title and legend alike: the same messages and range), a
/// cell's tooltip the CPU's; after the first window a window sends under 4 KB and reads back
/// five words. By bytes (a logarithmic scale) and by messages (the messages kept since the
/// first).
#[test]
fn a_matrix_is_counted_and_coloured_on_the_device_from_kept_messages() {
    use exaviz_model::selection::Selection;
    use exaviz_views::contract::{Entry, Frame, prepare};
    let d = open("gen:fd4?ranks=150&messages=60000");
    assert!(d.index.is_none());
    let backend = super::gpu_backend();
    let size = (480u32, 400u32);
    let frame = Frame { width: size.0, height: size.1 };
    let full = exaviz_views::trace::span(&d.trace).unwrap();
    let seconds = (full.1 - full.0) as f64 / d.trace.ticks_per_second.max(1) as f64;
    for options in [&["--value", "bytes"][..], &["--value", "messages"][..]] {
        let built = Entry::find("matrix").unwrap().parse(options).unwrap();
        let mut moved = Vec::new();
        for (k, window) in [(0.1, 0.6), (0.2, 0.7), (0.0, 1.0)].into_iter().enumerate() {
            let sel = Selection { window_s: Some((window.0 * seconds, window.1 * seconds)), ..built.selection };
            let before = backend.traffic();
            let gpu = prepare(built.view.as_ref(), &d, &sel, frame, &backend).unwrap();
            let scene = gpu.draw(&d, &sel).into_owned();
            let after = backend.traffic();
            moved.push((after.0 - before.0, after.1 - before.1));
            let on_device = scene.layers.iter().filter(|l| {
                matches!(l.raster.as_deref().map(|r| &r.data), Some(exaviz_render::RasterData::Device { .. }))
            });
            assert_eq!(on_device.count(), 1, "{options:?}: the cells drawn on the device");
            let cpu = prepare(built.view.as_ref(), &d, &sel, frame, &exaviz_compute::Backend::Cpu).unwrap();
            let host = cpu.draw(&d, &sel).into_owned();
            assert_eq!(scene.outline.title, host.outline.title);
            let image = exaviz_render::render_scene(&backend, &scene, exaviz_render::View::default()).unwrap();
            let want =
                exaviz_render::render_scene(&exaviz_compute::Backend::Cpu, &host, exaviz_render::View::default())
                    .unwrap();
            let far = exaviz_tests::diff_fraction(
                &image.pixels,
                &want.pixels,
                exaviz_tests::ImageTolerance { channel: 2, fraction: 0.0 },
            );
            assert!(far == 0.0, "{options:?} window {k}: {far} of the pixels more than 2 of 255 from the CPU's");
            let mut compared = 0;
            for at in [[100.0, 70.0], [150.0, 130.0], [200.0, 190.0], [120.0, 180.0]] {
                let (a, b) = (gpu.pick(&d, at), cpu.pick(&d, at));
                assert_eq!(a.as_ref().map(|p| (&p.title, &p.lines)), b.as_ref().map(|p| (&p.title, &p.lines)));
                compared += usize::from(a.is_some());
            }
            assert!(compared >= 3, "{options:?}: cells hovered");
        }
        for &(up, down) in &moved[1..] {
            assert!(up < 4096 && down == 20, "{options:?}: a window moved {moved:?}");
        }
        if options[1] == "bytes" {
            assert!(moved[0].0 > 60_000 * 20, "the messages went up at first: {moved:?}");
        } else {
            assert!(moved[0].0 < 4096, "the messages kept from the first matrix: {moved:?}");
        }
    }
}
