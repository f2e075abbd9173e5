//! Golden images of the `ring` view on both backends. The reference images live in
//! `tests/golden/`; regenerate them with `EXAVIZ_UPDATE_GOLDEN=1 cargo test -p exaviz-tests
//! --test golden` (never by hand). Tolerances are set once in `lib.rs`.

use std::path::PathBuf;

use exaviz_engine::Backend;
use exaviz_engine::layout::Ordering;
use exaviz_engine::render::{Image, View, render_scene, write_png_atomic};
use exaviz_engine::views::ring::{ChannelColour, RingBundle, RingOptions, link_traffic, link_traffic_in, ring_scene};
use exaviz_tests::{GOLDEN, GPU_VS_CPU, assert_images_close, gpu, read_png, shared_data_or_skip};

fn gpu_backend() -> Backend {
    // Built from the shared test context's instance would tie lifetimes; a fresh one is cheap.
    let _ = gpu(); // fails with the install hint if there is no adapter
    Backend::new(exaviz_engine::BackendChoice::Gpu).expect("gpu backend")
}

fn render(input: &str, backend: &Backend, order: Ordering, w: u32, h: u32) -> Image {
    render_with(input, backend, RingOptions { width: w, height: h, order, ..Default::default() })
}

fn render_with(input: &str, backend: &Backend, opts: RingOptions) -> Image {
    let dataset = exaviz_datasets::open(input).expect("input opens");
    let scene = ring_scene(&dataset, backend, &opts).expect("scene");
    render_scene(backend, &scene, View::default()).expect("render")
}

fn golden(name: &str, image: &Image) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name);
    if std::env::var("EXAVIZ_UPDATE_GOLDEN").as_deref() == Ok("1") {
        write_png_atomic(&path, image).unwrap();
    }
    let (w, h, pixels) = read_png(&path);
    assert_eq!((w, h), (image.width, image.height), "{name}: size");
    assert_images_close(name, &image.pixels, &pixels, GOLDEN);
}

#[test]
fn ring_matches_golden_on_both_backends() {
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let cpu = render(input, &Backend::Cpu, Ordering::Hilbert, 320, 240);
    let gpu = render(input, &gpu_backend(), Ordering::Hilbert, 320, 240);
    assert!(cpu.distinct_colours() > 100, "the picture looks blank");
    assert_images_close("ring gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("ring_4x4x4_hilbert.png", &cpu);
    golden("ring_4x4x4_hilbert.png", &gpu);
    let seq = render(input, &Backend::Cpu, Ordering::Sequential, 320, 240);
    golden("ring_4x4x4_sequential.png", &seq);
    // The two orderings draw different pictures.
    assert!(exaviz_tests::diff_fraction(&seq.pixels, &cpu.pixels, GOLDEN) > 0.02);
}

#[test]
fn link_traffic_agrees_between_backends_and_with_the_messages() {
    let d = exaviz_datasets::open("gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1").unwrap();
    let a = link_traffic(&d, &Backend::Cpu).unwrap();
    let b = link_traffic(&d, &gpu_backend()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.iter().sum::<u64>(), d.trace.messages.source.len() as u64);
}

#[test]
fn boxfish_ring_agrees_between_backends() {
    let Some(data) = shared_data_or_skip("boxfish_ring_agrees_between_backends") else {
        return;
    };
    let meta = data.join("boxfish/bgpc_meta.yaml");
    let meta = meta.to_str().unwrap();
    let d = exaviz_datasets::open(meta).unwrap();
    let topo = d.topology.as_ref().unwrap();
    assert_eq!((topo.node_count(), topo.link_count()), (512, 3072));
    let traffic = link_traffic(&d, &gpu_backend()).unwrap();
    // Region -2 (the whole run) of bgpc_links.yaml: every link has traffic.
    assert!(traffic.iter().all(|&t| t > 0));
    assert_eq!(traffic, link_traffic(&d, &Backend::Cpu).unwrap());
    let cpu = render(meta, &Backend::Cpu, Ordering::Hilbert, 256, 192);
    let gpu = render(meta, &gpu_backend(), Ordering::Hilbert, 256, 192);
    assert_images_close("bgpc ring gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
}

#[test]
fn tiled_gpu_render_equals_one_piece_and_cpu_tiles() {
    let d = exaviz_datasets::open("gen:torus-sim?dims=4x4x4&steps=20&seed=3").unwrap();
    let opts = RingOptions { width: 256, height: 192, ..Default::default() };
    let scene = ring_scene(&d, &Backend::Cpu, &opts).unwrap();
    let mut r = exaviz_engine::render::gpu::GpuRenderer::new(&gpu().device);
    let whole = r.render_tiled(gpu(), &scene, View::default(), 4096).unwrap();
    let tiled = r.render_tiled(gpu(), &scene, View::default(), 100).unwrap();
    assert_eq!(whole, tiled, "tiles must join without seams");
    // The CPU renderer's regions join the same way.
    let cpu = exaviz_engine::render::cpu::render(&scene, View::default());
    let part = exaviz_engine::render::cpu::render_region(&scene, View::default(), [100, 50], [60, 40]);
    for y in 0..40 {
        for x in 0..60 {
            assert_eq!(part.pixel(x, y), cpu.pixel(100 + x, 50 + y));
        }
    }
}

/// Every primitive and both blend modes, on both renderers.
fn primitives_scene() -> exaviz_engine::render::Scene {
    use exaviz_engine::render::{Anchor, Blend, ColorMap, Scene};
    let mut s = Scene::new(200, 150, [0.05, 0.05, 0.08]);
    for i in 0..24 {
        let t = i as f32 / 23.0;
        s.segment(
            Blend::Additive,
            [10.0, 20.0 + i as f32 * 4.0],
            [190.0, 120.0 - i as f32 * 3.0],
            0.5 + t * 3.0,
            [0.1, 0.8, 0.2, 0.4],
            false,
        );
        s.segment(
            Blend::Additive,
            [10.0, 130.0 - i as f32 * 4.0],
            [190.0, 30.0 + i as f32 * 3.0],
            1.0,
            [0.8, 0.1, 0.1, 0.4],
            false,
        );
    }
    for i in 0..10 {
        let c = ColorMap::RdBu.sample(i as f32 / 9.0);
        s.rect([10.0 + i as f32 * 12.0, 132.0], [20.5 + i as f32 * 12.0, 145.0], c, true);
        s.disc(
            [150.0 + (i % 5) as f32 * 9.0, 128.0 + (i / 5) as f32 * 9.0],
            1.0 + i as f32 * 0.4,
            [1.0, 1.0, 1.0, 0.8],
            false,
        );
    }
    s.text("exaviz 0123 ·", [100.0, 14.0], 12.0, Anchor::Centre, [1.0, 1.0, 0.9, 1.0]);
    s
}

#[test]
fn renderer_primitives_agree_between_backends() {
    let scene = primitives_scene();
    for view in [View::default(), View { scale: 1.7, offset: [-40.0, -20.0] }] {
        let cpu = render_scene(&Backend::Cpu, &scene, view).unwrap();
        let gpu = render_scene(&gpu_backend(), &scene, view).unwrap();
        assert!(cpu.distinct_colours() > 50);
        assert_images_close("primitives gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    }
    golden("primitives.png", &render_scene(&Backend::Cpu, &scene, View::default()).unwrap());
}

#[test]
fn bundled_ring_matches_golden_on_both_backends() {
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let opts = RingOptions {
        width: 320,
        height: 240,
        bundle: RingBundle::Kde(exaviz_engine::stages::BundleParams::default()),
        ..Default::default()
    };
    let cpu = render_with(input, &Backend::Cpu, opts);
    let gpu = render_with(input, &gpu_backend(), opts);
    assert_images_close("bundled ring gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("ring_4x4x4_bundled.png", &cpu);
    let plain = render(input, &Backend::Cpu, Ordering::Hilbert, 320, 240);
    assert!(exaviz_tests::diff_fraction(&plain.pixels, &cpu.pixels, GOLDEN) > 0.02, "bundling changes the picture");
}

/// TorusTrafficND's ring: block-based bundling coloured by block relation (4 blocks), and hierarchical
/// bundling along the block tree (default 8 blocks), with address rings, on both backends; and
/// without address rings, the picture changes.
#[test]
fn block_bundled_rings_match_golden_on_both_backends() {
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let base = RingOptions { width: 320, height: 240, ..Default::default() };
    let cases = [
        (
            "ring_4x4x4_blocks_relation.png",
            RingOptions {
                bundle: RingBundle::Blocks { beta: 0.85 },
                blocks: Some(4),
                colour: ChannelColour::Relation,
                ..base
            },
        ),
        ("ring_4x4x4_hierarchical.png", RingOptions { bundle: RingBundle::Hierarchical { beta: 0.85 }, ..base }),
    ];
    let plain = render_with(input, &Backend::Cpu, base);
    for (name, opts) in cases {
        let cpu = render_with(input, &Backend::Cpu, opts);
        let gpu = render_with(input, &gpu_backend(), opts);
        assert_images_close(&format!("{name} gpu vs cpu"), &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        golden(name, &cpu);
        assert!(exaviz_tests::diff_fraction(&plain.pixels, &cpu.pixels, GOLDEN) > 0.02, "{name}: same as plain");
    }
    let bare = render_with(input, &Backend::Cpu, RingOptions { address_rings: false, ..base });
    assert!(exaviz_tests::diff_fraction(&plain.pixels, &bare.pixels, GOLDEN) > 0.01, "address rings drawn");
    // Impossible block counts are refused with a message.
    let d = exaviz_datasets::open(input).unwrap();
    let Err(err) = ring_scene(&d, &Backend::Cpu, &RingOptions { blocks: Some(6), ..base }) else {
        panic!("6 blocks of 64 nodes accepted");
    };
    assert!(err.to_string().contains("do not divide 64 nodes"), "{err}");
}

/// TorusTrafficND's pF3D case on its 256-node torus: traffic marks (a disc per channel, nearer the main
/// sender) over traffic-coloured channels, on both backends; without marks the picture changes.
#[test]
fn pf3d_ring_with_traffic_marks_matches_golden_on_both_backends() {
    let input = "gen:pf3d?dims=4x4x4x4x1";
    let opts = RingOptions { width: 480, height: 360, ..Default::default() };
    let cpu = render_with(input, &Backend::Cpu, opts);
    let gpu = render_with(input, &gpu_backend(), opts);
    assert_images_close("pf3d ring gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("ring_pf3d_4x4x4x4x1.png", &cpu);
    let bare = render_with(input, &Backend::Cpu, RingOptions { traffic_marks: false, ..opts });
    assert!(exaviz_tests::diff_fraction(&bare.pixels, &cpu.pixels, GOLDEN) > 0.005, "traffic marks drawn");
}

/// TorusVisND's time slicer and TorusTrafficND's node filter on the ring: a slice counts exactly the
/// messages sent in it (both backends), and both filtered pictures match their references.
#[test]
fn time_slice_and_node_filter_match_golden_on_both_backends() {
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let d = exaviz_datasets::open(input).unwrap();
    let in_slice = d.trace.messages.send_time.iter().filter(|&&t| (5..10).contains(&t)).count() as u64;
    let cpu_slice = link_traffic_in(&d, &Backend::Cpu, Some((5, 10))).unwrap();
    assert_eq!(cpu_slice, link_traffic_in(&d, &gpu_backend(), Some((5, 10))).unwrap());
    assert!(in_slice > 0 && in_slice < d.trace.messages.source.len() as u64);
    assert_eq!(cpu_slice.iter().sum::<u64>(), in_slice);
    let base = RingOptions { width: 400, height: 300, ..Default::default() };
    let plain = render_with(input, &Backend::Cpu, base);
    for (name, opts) in [
        ("ring_4x4x4_slice_5_10.png", RingOptions { time_slice: Some((5, 10)), ..base }),
        ("ring_4x4x4_node_21.png", RingOptions { node: Some(21), ..base }),
    ] {
        let cpu = render_with(input, &Backend::Cpu, opts);
        let gpu = render_with(input, &gpu_backend(), opts);
        assert_images_close(&format!("{name} gpu vs cpu"), &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        golden(name, &cpu);
        assert!(exaviz_tests::diff_fraction(&plain.pixels, &cpu.pixels, GOLDEN) > 0.02, "{name}: same as plain");
    }
    let e = |opts| ring_scene(&d, &Backend::Cpu, &opts).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e(RingOptions { node: Some(64), ..base }).contains("node 64 is not in the torus"));
    assert!(e(RingOptions { time_slice: Some((4, 4)), ..base }).contains("empty"));
}

/// Every generated MPI case in the timeline, matrix and chord views: the GPU picture agrees with the
/// CPU one, and both with the stored reference.
#[test]
fn mpi_views_match_golden_on_both_backends() {
    use exaviz_engine::views::chord::{ChordOptions, chord_image};
    use exaviz_engine::views::matrix::{MatrixOptions, matrix_image};
    use exaviz_engine::views::plot::Mix;
    use exaviz_engine::views::sendrecv::{SendRecvOptions, sendrecv_image};
    use exaviz_engine::views::timeline::{TimelineBundle, TimelineOptions, timeline_image};
    let gpu = gpu_backend();
    for case in ["wrf", "fd4", "tachyon", "lulesh"] {
        let d = exaviz_datasets::open(&format!("gen:{case}?iterations=3")).expect("generator");
        let t = TimelineOptions { width: 480, height: 320, ..Default::default() };
        let hier = TimelineOptions { bundle: TimelineBundle::Hierarchical { beta: 0.85 }, ..t };
        let grid = TimelineOptions { bundle: TimelineBundle::Grid { beta: 0.85 }, mix: Mix::Additive, ..t };
        let m = MatrixOptions { width: 420, height: 320, ..Default::default() };
        let c = ChordOptions { width: 480, height: 360, ..Default::default() };
        let sr = SendRecvOptions { width: 560, height: 400, ..Default::default() };
        let timeline =
            |o: &TimelineOptions| (timeline_image(&d, &Backend::Cpu, o).unwrap(), timeline_image(&d, &gpu, o).unwrap());
        let pictures = [
            ("timeline", timeline(&t)),
            ("timeline_hierarchical", timeline(&hier)),
            ("timeline_grid_additive", timeline(&grid)),
            ("matrix", (matrix_image(&d, &Backend::Cpu, &m).unwrap(), matrix_image(&d, &gpu, &m).unwrap())),
            ("chord", (chord_image(&d, &Backend::Cpu, &c).unwrap(), chord_image(&d, &gpu, &c).unwrap())),
            ("sendrecv", (sendrecv_image(&d, &Backend::Cpu, &sr).unwrap(), sendrecv_image(&d, &gpu, &sr).unwrap())),
        ];
        let plain = &pictures[0].1.0;
        for (view, (cpu, gpu)) in &pictures {
            let name = format!("{view}_{case}.png");
            assert!(cpu.distinct_colours() > 20, "{name}: the picture looks blank");
            assert_images_close(&format!("{name} gpu vs cpu"), &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
            if view.starts_with("timeline_") {
                // Bundling moves the message lines.
                let moved = exaviz_tests::diff_fraction(&plain.pixels, &cpu.pixels, GOLDEN);
                assert!(moved > 0.01, "{name}: bundled like the plain timeline ({moved})");
            }
            golden(&name, cpu);
        }
    }
}

/// The real ping-pong trace's timeline, zoomed on the exchange, bundled and not.
#[test]
fn otf2_timeline_matches_golden() {
    use exaviz_engine::views::timeline::{TimelineOptions, timeline_image};
    let Some(data) = shared_data_or_skip("otf2 timeline golden") else { return };
    let anchor = data.join("otf2-pingpong/ping-pong-otf2/traces.otf2");
    let d = exaviz_datasets::open(anchor.to_str().unwrap()).unwrap();
    let mut d = d;
    d.name = "ping-pong-otf2".into();
    let opts = TimelineOptions { width: 480, height: 240, window_s: Some((0.1948, 0.1985)), ..Default::default() };
    let image = timeline_image(&d, &Backend::Cpu, &opts).unwrap();
    golden("timeline_pingpong_otf2.png", &image);
    let gpu = timeline_image(&d, &gpu_backend(), &opts).unwrap();
    assert_images_close("ping-pong timeline gpu vs cpu", &gpu.pixels, &image.pixels, GPU_VS_CPU);
}

/// The embeddings the ring is compared with (TorusTrafficND §IV): MDS at its three scopes and RadViz,
/// on both backends, against golden images; each differs from the others.
#[test]
fn embedding_views_match_golden_on_both_backends() {
    use exaviz_engine::layout::embed::Embedding;
    use exaviz_engine::views::embedding::{EmbeddingOptions, embedding_scene};
    let dataset = exaviz_datasets::open("gen:torus-sim?dims=4x4x2x2&steps=20&seed=3").unwrap();
    let cases = [
        ("mds_full_4x4x2x2.png", Embedding::MdsFull),
        ("mds_3hop_4x4x2x2.png", Embedding::MdsHops(3)),
        ("mds_immediate_4x4x2x2.png", Embedding::MdsImmediate),
        ("radviz_4x4x2x2.png", Embedding::RadViz),
    ];
    let mut seen: Vec<Image> = Vec::new();
    for (name, embedding) in cases {
        let opts = EmbeddingOptions { width: 360, height: 280, embedding, colormap: Default::default() };
        let draw = |backend: &Backend| {
            let scene = embedding_scene(&dataset, backend, &opts).expect("scene");
            render_scene(backend, &scene, View::default()).expect("render")
        };
        let (cpu, gpu) = (draw(&Backend::Cpu), draw(&gpu_backend()));
        assert_images_close(&format!("{name} gpu vs cpu"), &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        golden(name, &cpu);
        for other in &seen {
            assert!(exaviz_tests::diff_fraction(&other.pixels, &cpu.pixels, GOLDEN) > 0.01, "{name}: same as another");
        }
        seen.push(cpu);
    }
}

/// TorusVisND's linked views headless: the node selector (parallel coordinates) and the time
/// slicer (ThemeRiver), plain and with a dimension-value selection, and the ring with the same
/// selection; on both backends, against golden images. The river's streams sum exactly the
/// traffic on their nodes' links, on both backends.
#[test]
fn linked_views_match_golden_on_both_backends() {
    use exaviz_engine::views::parcoords::{ParcoordsOptions, node_traffic, parcoords_scene};
    use exaviz_engine::views::select::DimFilter;
    use exaviz_engine::views::themeriver::{MAX_STREAMS, ThemeRiverOptions, river, themeriver_scene};
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let d = exaviz_datasets::open(input).unwrap();
    let topo = d.topology.as_ref().unwrap();
    let select = Some(DimFilter::parse("X=1,Z=2-3").unwrap());
    let busy = node_traffic(topo, &link_traffic(&d, &Backend::Cpu).unwrap());

    let tr = ThemeRiverOptions { width: 480, height: 320, ..Default::default() };
    let cpu_river = river(&d, &Backend::Cpu, &ThemeRiverOptions { select, ..tr }).unwrap();
    assert_eq!(cpu_river, river(&d, &gpu_backend(), &ThemeRiverOptions { select, ..tr }).unwrap());
    let picked: Vec<u32> =
        (0..64u32).filter(|&v| topo.coord(v as usize)[0] == 1 && topo.coord(v as usize)[2] >= 2).collect();
    assert_eq!(picked.len(), 8);
    assert_eq!(cpu_river.nodes.len() + cpu_river.others, picked.len());
    assert_eq!(cpu_river.nodes.len(), MAX_STREAMS);
    let bins = cpu_river.bins;
    for (s, &v) in cpu_river.nodes.iter().enumerate() {
        assert!(picked.contains(&v));
        assert_eq!((0..bins).map(|b| cpu_river.value(s, b)).sum::<u64>(), busy[v as usize], "node {v}");
    }
    let rest: u64 = picked.iter().filter(|v| !cpu_river.nodes.contains(v)).map(|&v| busy[v as usize]).sum();
    assert_eq!((0..bins).map(|b| cpu_river.value(MAX_STREAMS, b)).sum::<u64>(), rest);

    let pc = ParcoordsOptions { width: 480, height: 320, ..Default::default() };
    let base = RingOptions { width: 400, height: 300, ..Default::default() };
    let scene = |backend: &Backend, name: &str| -> exaviz_engine::render::Scene {
        match name {
            "parcoords_4x4x4.png" => parcoords_scene(&d, backend, &pc),
            "parcoords_4x4x4_select.png" => parcoords_scene(&d, backend, &ParcoordsOptions { select, ..pc }),
            "themeriver_4x4x4_slice_5_10.png" => {
                themeriver_scene(&d, backend, &ThemeRiverOptions { time_slice: Some((5, 10)), ..tr })
            }
            "themeriver_4x4x4_select.png" => themeriver_scene(&d, backend, &ThemeRiverOptions { select, ..tr }),
            _ => ring_scene(&d, backend, &RingOptions { select, ..base }),
        }
        .expect("scene")
    };
    let names = [
        "parcoords_4x4x4.png",
        "parcoords_4x4x4_select.png",
        "themeriver_4x4x4_slice_5_10.png",
        "themeriver_4x4x4_select.png",
        "ring_4x4x4_select.png",
    ];
    let mut seen: Vec<Image> = Vec::new();
    for name in names {
        let cpu = render_scene(&Backend::Cpu, &scene(&Backend::Cpu, name), View::default()).unwrap();
        let backend = gpu_backend();
        let gpu = render_scene(&backend, &scene(&backend, name), View::default()).unwrap();
        assert_images_close(&format!("{name} gpu vs cpu"), &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        golden(name, &cpu);
        for other in seen.iter().filter(|o| o.width == cpu.width) {
            assert!(exaviz_tests::diff_fraction(&other.pixels, &cpu.pixels, GOLDEN) > 0.01, "{name}: same as another");
        }
        seen.push(cpu);
    }
    let e = |opts: ThemeRiverOptions| themeriver_scene(&d, &Backend::Cpu, &opts).err().map(|e| e.to_string());
    let bad = |spec: &str| Some(DimFilter::parse(spec).unwrap());
    assert!(e(ThemeRiverOptions { select: bad("A=1"), ..tr }).unwrap().contains("no dimension A"));
    assert!(e(ThemeRiverOptions { select: bad("X=4"), ..tr }).unwrap().contains("outside the torus"));
    assert!(e(ThemeRiverOptions { node: Some(64), ..tr }).unwrap().contains("node 64 is not in the torus"));
    let wrf = exaviz_datasets::open("gen:wrf?iterations=2").unwrap();
    let pe = parcoords_scene(&wrf, &Backend::Cpu, &pc).err().map(|e| e.to_string()).unwrap();
    assert!(pe.contains("needs a topology"), "{pe}");
}

/// Past `DENSE_LINES` nodes the node selector aggregates its polylines with the line-density
/// stage: the same picture on both backends, and against a golden image.
#[test]
fn dense_parcoords_matches_golden_on_both_backends() {
    use exaviz_engine::views::parcoords::{DENSE_LINES, ParcoordsOptions, parcoords_scene};
    use exaviz_engine::views::select::DimFilter;
    let d = exaviz_datasets::open("gen:torus-sim?dims=16x16x16x16&steps=2&seed=5").unwrap();
    assert!(d.topology.as_ref().unwrap().node_count() > DENSE_LINES);
    let opts = ParcoordsOptions {
        width: 480,
        height: 320,
        select: Some(DimFilter::parse("d2=3").unwrap()),
        ..Default::default()
    };
    let draw = |backend: &Backend| {
        let scene = parcoords_scene(&d, backend, &opts).expect("scene");
        render_scene(backend, &scene, View::default()).expect("render")
    };
    let (cpu, gpu) = (draw(&Backend::Cpu), draw(&gpu_backend()));
    assert_images_close("dense parcoords gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("parcoords_16x16x16x16_dense.png", &cpu);
}

/// The linked view (ring, node selector, time slicer in one picture) with a shared state: the same
/// picture on both backends and against a golden image; and the mouse gestures change the state
/// as documented in `linked::gesture`.
#[test]
fn linked_view_matches_golden_and_gestures_link_its_panels() {
    use exaviz_engine::views::linked::{Linked, LinkedOptions, describe, gesture, linked_image, panels};
    use exaviz_engine::views::parcoords::parcoords_axis_at;
    use exaviz_engine::views::select::DimFilter;
    use exaviz_engine::views::themeriver::themeriver_tick_at;
    let d = exaviz_datasets::open("gen:torus-sim?dims=4x4x4&steps=20&seed=3").unwrap();
    let topo = d.topology.as_ref().unwrap();
    let (w, h) = (800, 480);
    let ring = RingOptions::default();
    let state = Linked {
        node: Some(22),
        select: Some(DimFilter::parse("Y=1").unwrap()),
        time_slice: Some((5, 12)),
        ..Default::default()
    };
    let opts = LinkedOptions { width: w, height: h, ring, colormap: ring.colormap, state };
    let cpu = linked_image(&d, &Backend::Cpu, &opts).unwrap();
    let gpu = linked_image(&d, &gpu_backend(), &opts).unwrap();
    assert_images_close("linked gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("linked_4x4x4_node22_y1_slice.png", &cpu);
    let plain = linked_image(&d, &Backend::Cpu, &LinkedOptions { state: Linked::default(), ..opts }).unwrap();
    assert!(exaviz_tests::diff_fraction(&plain.pixels, &cpu.pixels, GOLDEN) > 0.05);
    let small = linked_image(&d, &Backend::Cpu, &LinkedOptions { width: 700, ..opts }).unwrap_err().to_string();
    assert!(small.contains("too small for the linked view"), "{small}");
    let outside = Linked { node: Some(0), ..state };
    let e = linked_image(&d, &Backend::Cpu, &LinkedOptions { state: outside, ..opts }).unwrap_err().to_string();
    assert!(e.contains("node 0 [0, 0, 0] is outside the selection Y=1"), "{e}");

    // Gestures, at points found with the panels' own picking.
    let [(_, rr), (_, pc), (_, rv)] = panels(w, h);
    let axis_point = |dim: usize, coord: u32| -> [f32; 2] {
        (pc[1]..pc[1] + pc[3])
            .flat_map(|y| (pc[0]..pc[0] + pc[2]).map(move |x| [x as f32, y as f32]))
            .find(|p| {
                parcoords_axis_at(topo, pc[2], pc[3], [p[0] - pc[0] as f32, p[1] - pc[1] as f32])
                    .is_some_and(|(d, c)| d == dim && c as u32 == coord && c.fract() > 0.3 && c.fract() < 0.7)
            })
            .expect("a point on the axis")
    };
    let ring_opts = RingOptions { width: rr[2], height: rr[3], ..ring };
    let node_point = |keep: &dyn Fn(u32) -> bool| -> ([f32; 2], u32) {
        (0..rr[3])
            .step_by(3)
            .flat_map(|y| (0..rr[2]).step_by(3).map(move |x| [x as f32, y as f32]))
            .find_map(|p| {
                exaviz_engine::views::ring::ring_node_at(topo, &ring_opts, p).filter(|&v| keep(v)).map(|v| (p, v))
            })
            .expect("a node on the ring")
    };
    let mut o = LinkedOptions { state: Linked::default(), ..opts };
    let act = |o: &mut LinkedOptions, a: [f32; 2], b: [f32; 2]| {
        gesture(&d, o, a, b);
        describe(&d, &o.state)
    };
    let (y1, y2, y3) = (axis_point(1, 1), axis_point(1, 2), axis_point(1, 3));
    assert_eq!(act(&mut o, y2, y2), "selection Y=2 (16 nodes)");
    assert_eq!(act(&mut o, y2, y2), "nothing selected", "a second click frees the dimension");
    assert_eq!(
        act(&mut o, y1, [y1[0] + 30.0, y2[1]]),
        "selection Y=1-2 (32 nodes)",
        "the brush follows the height only"
    );
    let (p, v) = node_point(&|v| topo.coord(v as usize)[1] == 2);
    assert_eq!(act(&mut o, p, p), format!("selection Y=1-2 (32 nodes); node {v} {:?}", topo.coord(v as usize)));
    assert_eq!(act(&mut o, y3, y3), "selection Y=3 (16 nodes)", "a selection without the node drops it");
    let (q, u) = node_point(&|v| topo.coord(v as usize)[1] == 0);
    assert_eq!(
        act(&mut o, q, q),
        format!("node {u} {:?}", topo.coord(u as usize)),
        "a node outside ends the selection"
    );
    assert_eq!(act(&mut o, q, q), "nothing selected", "picking the node again drops it");
    let centre = [rr[2] as f32 * 0.4, rr[3] as f32 * 0.5];
    assert_eq!(act(&mut o, q, q), format!("node {u} {:?}", topo.coord(u as usize)));
    assert_eq!(act(&mut o, centre, centre), "nothing selected", "a click off the ring drops the node");
    let ry = (rv[1] + rv[3] / 2) as f32;
    let (xa, xb) = ((rv[0] + rv[2] * 3 / 10) as f32, (rv[0] + rv[2] * 45 / 100) as f32);
    let tick = |x: f32| themeriver_tick_at(&d, rv[2], rv[3], [x - rv[0] as f32, ry - rv[1] as f32]).unwrap();
    let (ta, tb) = (tick(xa), tick(xb));
    assert!(ta < tb);
    assert_eq!(act(&mut o, [xb, ry], [xa, ry + 40.0]), format!("slice {ta} to {tb}"), "either direction, any height");
    assert_eq!(act(&mut o, [xa, ry], [xa, ry]), "nothing selected", "a click ends the slice");
    assert!(!gesture(&d, &mut o, [xa, ry], [xa + 1.0, ry]), "a short drag is a click, not a slice");
}

/// The ring's own gestures in the linked view: a drag inside the disc brushes bundles, a click
/// off the nodes ends the group; the right button zooms into a rectangle and a click zooms out;
/// T tracks the picked node's message; a click on an address ring selects a coordinate.
#[test]
fn ring_gestures_in_the_linked_view_brush_zoom_track_and_select() {
    use exaviz_engine::views::linked::{Linked, LinkedOptions, describe, gesture, panels, toggle_track, zoom_gesture};
    use exaviz_engine::views::ring::{ring_address_at, ring_bundles_in, ring_node_at};
    let d = exaviz_datasets::open("gen:torus-sim?dims=4x4x4&steps=20&seed=3").unwrap();
    let topo = d.topology.as_ref().unwrap();
    let ring = RingOptions::default();
    let mut o = LinkedOptions { width: 800, height: 480, ring, colormap: ring.colormap, state: Linked::default() };
    let [(_, rr), _, _] = panels(800, 480);
    let ring_opts = RingOptions { width: rr[2], height: rr[3], ..ring };
    let act = |o: &mut LinkedOptions, a: [f32; 2], b: [f32; 2]| {
        gesture(&d, o, a, b);
        describe(&d, &o.state)
    };
    let centre = [rr[2] as f32 * 0.4, rr[3] as f32 * 0.5];
    let (q, u) = (0..rr[3])
        .step_by(3)
        .flat_map(|y| (0..rr[2]).step_by(3).map(move |x| [x as f32, y as f32]))
        .find_map(|p| ring_node_at(topo, &ring_opts, p).map(|v| (p, v)))
        .expect("a node on the ring");

    let brushed = ring_bundles_in(&d, &Backend::Cpu, &ring_opts, [150.0, 150.0, 250.0, 300.0]);
    let brushed = brushed.unwrap().expect("chords cross the brush");
    assert_eq!(act(&mut o, [150.0, 150.0], [250.0, 300.0]), format!("bundles {}", brushed.describe()));
    assert_eq!(act(&mut o, centre, centre), "nothing selected", "a click off the nodes ends the group");
    assert!(zoom_gesture(&mut o, [100.0, 100.0], [300.0, 250.0]));
    assert_eq!(describe(&d, &o.state), "zoom 100,100,300,250");
    // The ring's plot in its 440x480 panel is 290x416 pixels, so that zoom magnifies
    // min(290 / 200, 416 / 150) = 1.45 times; a second rectangle is taken back into the
    // unzoomed panel's pixels, 1.45 times smaller.
    assert!(zoom_gesture(&mut o, [100.0, 100.0], [300.0, 250.0]));
    let [x0, y0, x1, y1] = o.state.zoom.unwrap();
    assert!(((x1 - x0) - 200.0 / 1.45).abs() < 0.01 && ((y1 - y0) - 150.0 / 1.45).abs() < 0.01, "{:?}", o.state.zoom);
    assert!(zoom_gesture(&mut o, [200.0, 200.0], [200.0, 200.0]) && o.state.zoom.is_none(), "a click zooms out");
    assert!(!zoom_gesture(&mut o, [600.0, 200.0], [700.0, 300.0]), "only the ring zooms");
    assert!(!toggle_track(&mut o), "nothing to track without a picked node");
    assert_eq!(act(&mut o, q, q), format!("node {u} {:?}", topo.coord(u as usize)));
    assert!(toggle_track(&mut o));
    assert_eq!(describe(&d, &o.state), format!("node {u} {:?}; tracking node {u}'s message", topo.coord(u as usize)));
    assert!(toggle_track(&mut o) && o.state.track.is_none());

    // A click on an address ring selects that ring's coordinate there, a second click frees it.
    let (mut ring_x, mut x_value) = (None, 0);
    'search: for y in (0..rr[3]).step_by(2) {
        for x in (0..rr[2]).step_by(2) {
            let p = [x as f32, y as f32];
            if let Some((0, v)) = ring_address_at(topo, &ring_opts, p) {
                (ring_x, x_value) = (Some(p), topo.coord(v as usize)[0]);
                break 'search;
            }
        }
    }
    let p = ring_x.expect("a point on address ring X");
    assert_eq!(act(&mut o, centre, centre), "nothing selected");
    assert_eq!(act(&mut o, p, p), format!("selection X={x_value} (16 nodes)"));
    assert_eq!(act(&mut o, p, p), "nothing selected");
}

/// The ring's message tracking (TorusVisND Fig. 13), group filter and zoom: golden images on both
/// backends; the tracked path is the message's walk; the zoom picks nodes where it draws them; bad
/// requests get clear errors.
#[test]
fn tracked_message_group_filter_and_zoom_match_golden_on_both_backends() {
    use exaviz_engine::views::group::BundleGroup;
    use exaviz_engine::views::ring::{ring_bundles_in, ring_node_at, ring_unzoom};
    use exaviz_engine::views::track::hops;
    let input = "gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1";
    let d = exaviz_datasets::open(input).unwrap();
    let topo = d.topology.as_ref().unwrap();
    let path = hops(&d, 22).unwrap();
    assert_eq!(path[0].from, 22);
    for pair in path.windows(2) {
        assert_eq!((pair[0].to, pair[0].sent + 1), (pair[1].from, pair[1].sent), "one walk, a hop a step");
    }
    assert_eq!(path.last().unwrap().sent, 29, "the walk goes on to the last step");

    let base = RingOptions { width: 640, height: 480, ..Default::default() };
    let group = BundleGroup::parse("1-2,2-3").unwrap();
    let zoom = Some([300.0, 60.0, 470.0, 200.0]);
    let plain = render_with(input, &Backend::Cpu, base);
    for (name, opts) in [
        ("ring_4x4x4x4x4_track_22.png", RingOptions { track: Some(22), ..base }),
        (
            "ring_4x4x4x4x4_group_zoom.png",
            RingOptions { group: Some(group), zoom, bundle: RingBundle::Blocks { beta: 0.85 }, ..base },
        ),
    ] {
        let cpu = render_with(input, &Backend::Cpu, opts);
        let gpu = render_with(input, &gpu_backend(), opts);
        assert_images_close(&format!("{name} gpu vs cpu"), &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        golden(name, &cpu);
        assert!(exaviz_tests::diff_fraction(&plain.pixels, &cpu.pixels, GOLDEN) > 0.05, "{name}: same as plain");
    }

    // The group keeps exactly its bundles: brushing the whole picture finds those and no other.
    let whole = [0.0, 0.0, 640.0, 480.0];
    let all = ring_bundles_in(&d, &Backend::Cpu, &base, whole).unwrap().unwrap();
    assert!(all.pairs().len() > 2 && all.contains(0, 1) && all.contains(1, 2));
    let only = ring_bundles_in(&d, &Backend::Cpu, &RingOptions { group: Some(group), ..base }, whole).unwrap();
    assert_eq!(only, Some(all), "brushing ignores the group filter it replaces");
    let grouped =
        exaviz_engine::views::ring::ring_scene(&d, &Backend::Cpu, &RingOptions { group: Some(group), ..base });
    assert!(grouped.unwrap().instance_count() < ring_scene(&d, &Backend::Cpu, &base).unwrap().instance_count());

    // Zoomed into a rectangle around a node's place (12 pixels inside the address rings' outer
    // edge, straight above the centre), the plot's centre shows that node.
    let x = (640.0 - 150.0) / 2.0 + 3.0;
    let edge = (0..240).map(|y| [x, y as f32]).find(|&p| ring_node_at(topo, &base, p).is_some()).unwrap();
    let p = [x, edge[1] + 12.0];
    let v = ring_node_at(topo, &base, p).unwrap();
    let zoomed = RingOptions { zoom: Some([p[0] - 20.0, p[1] - 15.0, p[0] + 20.0, p[1] + 15.0]), ..base };
    let centre = [(640.0 - 150.0) / 2.0, 64.0 + (480.0 - 64.0) / 2.0];
    let back = ring_unzoom(&zoomed, centre);
    assert!((back[0] - p[0]).abs() < 1e-3 && (back[1] - p[1]).abs() < 1e-3, "{back:?} {p:?}");
    assert_eq!(ring_node_at(topo, &zoomed, centre), Some(v));

    let e = |opts| ring_scene(&d, &Backend::Cpu, &opts).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e(RingOptions { track: Some(5000), ..base }).contains("the torus has nodes 0 to 1023"));
    let nine = BundleGroup::parse("9-1").unwrap();
    assert!(e(RingOptions { group: Some(nine), ..base }).contains("names block 9, but the ring has 8 blocks"));
    assert!(e(RingOptions { zoom: Some([5.0, 5.0, 6.0, 60.0]), ..base }).contains("at least 4x4"));
    let small = exaviz_datasets::open("gen:torus-sim?dims=3x3x3").unwrap();
    let no_blocks = ring_scene(&small, &Backend::Cpu, &RingOptions { group: Some(group), ..base });
    assert!(no_blocks.err().unwrap().to_string().contains("needs Hilbert blocks"));
    let pf3d = exaviz_datasets::open("gen:pf3d?dims=4x4x4x4x1").unwrap();
    let none = hops(&pf3d, 9999).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(none.contains("the torus has nodes 0 to 255"), "{none}");
}

/// Past `DENSE_CHORDS` chords the ring aggregates its curves with the line-density stage: the
/// same picture on both backends, and against a golden image; with a node filter the few chords
/// left are drawn one by one again.
#[test]
fn dense_ring_matches_golden_on_both_backends() {
    use exaviz_engine::views::ring::DENSE_CHORDS;
    let input = "gen:torus-sim?dims=16x16x16x16&steps=2&seed=5";
    let d = exaviz_datasets::open(input).unwrap();
    assert!(d.topology.as_ref().unwrap().link_count() / 2 > DENSE_CHORDS);
    let opts = RingOptions { width: 480, height: 360, ..Default::default() };
    let draw = |backend: &Backend, opts: &RingOptions| {
        let scene = ring_scene(&d, backend, opts).expect("scene");
        render_scene(backend, &scene, View::default()).expect("render")
    };
    let (cpu, gpu) = (draw(&Backend::Cpu, &opts), draw(&gpu_backend(), &opts));
    assert_images_close("dense ring gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("ring_16x16x16x16_dense.png", &cpu);
    let one = draw(&Backend::Cpu, &RingOptions { node: Some(4321), ..opts });
    assert!(exaviz_tests::diff_fraction(&one.pixels, &cpu.pixels, GOLDEN) > 0.1);
}

/// The linked MPI view: timeline, matrix and chord diagram placed in one scene. A selected pair
/// is highlighted in all three panels; a time window restricts the matrix and the chord diagram
/// to the messages sent in it. Both backends, against the stored reference.
#[test]
fn mpi_linked_view_matches_golden_on_both_backends() {
    use exaviz_engine::selection::Selection;
    use exaviz_engine::views::contract::render_view;
    use exaviz_engine::views::mpi_linked::{MpiLinkedView, panels};
    use exaviz_engine::views::timeline::TimelineView;
    use exaviz_engine::views::{Frame, View as _};
    let d = exaviz_datasets::open("gen:wrf?iterations=3").unwrap();
    let view =
        MpiLinkedView { timeline: TimelineView::default(), matrix: Default::default(), chord: Default::default() };
    let frame = Frame { width: 800, height: 480 };
    let pair = Selection { pair: Some((3, 7)), ..Default::default() };
    let render = |b: &Backend, s: &Selection| render_view(&view, &d, s, frame, b).expect("mpi view");
    let (cpu, gpu) = (render(&Backend::Cpu, &pair), render(&gpu_backend(), &pair));
    assert!(cpu.distinct_colours() > 50, "the picture looks blank");
    assert_images_close("mpi gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    golden("mpi_wrf_pair_3_7.png", &cpu);
    // The highlight shows in each panel.
    let plain = render(&Backend::Cpu, &Selection::default());
    for (k, r) in panels(800, 480).iter().enumerate() {
        let changed = (r[1]..r[1] + r[3])
            .flat_map(|y| (r[0]..r[0] + r[2]).map(move |x| (x, y)))
            .filter(|&(x, y)| plain.pixel(x, y) != cpu.pixel(x, y))
            .count();
        assert!(changed > 20, "panel {k}: the pair is not highlighted ({changed} pixels changed)");
    }
    // A window of the first second: fewer messages in the matrix and chord panels, so they change.
    let windowed = render(&Backend::Cpu, &Selection { window_s: Some((0.0, 1.0)), ..Default::default() });
    let r = panels(800, 480)[1];
    let changed = (r[1]..r[1] + r[3])
        .flat_map(|y| (r[0]..r[0] + r[2]).map(move |x| (x, y)))
        .filter(|&(x, y)| plain.pixel(x, y) != windowed.pixel(x, y))
        .count();
    assert!(changed > 100, "the time window does not restrict the matrix ({changed})");
    assert!(view.time_axis(frame).is_some());
}

/// The fattree view (TreeScope, Bhatia et al., 2018) of the three systems: a k-ary fat tree,
/// the paper's production system (1,296 nodes, routing changed halfway, the job under the
/// second routing selected, diverging colours) and its simulated system (3,200 nodes, jobs
/// packed into pods, a traffic range and a route between pods), on both backends.
#[test]
fn fattree_views_match_golden_on_both_backends() {
    use exaviz_engine::views::contract::{Entry, Frame, render_view};
    let gpu = gpu_backend();
    let cases: [(&str, &str, &[&str]); 4] = [
        ("fattree_k8.png", "gen:fattree?k=8&steps=40", &[]),
        (
            "fattree_production_sar_job.png",
            "gen:fattree?system=production&steps=48&routing=both",
            &["--job", "1000002", "--colours", "diverging"],
        ),
        (
            "fattree_simulated_packed.png",
            "gen:fattree?system=simulated&steps=40&placement=packed",
            &["--time", "10:30"],
        ),
        (
            "fattree_simulated_route_traffic.png",
            "gen:fattree?system=simulated&steps=40",
            &["--traffic", "2e11:4e12", "--route", "0,60", "--stat", "mean"],
        ),
    ];
    let mut first: Option<Image> = None;
    for (name, input, options) in cases {
        let d = exaviz_datasets::open(input).expect("generator");
        let built = Entry::find("fattree").unwrap().parse(options).expect("options");
        let frame = Frame { width: 960, height: 640 };
        let cpu = render_view(built.view.as_ref(), &d, &built.selection, frame, &Backend::Cpu).expect("cpu");
        let on_gpu = render_view(built.view.as_ref(), &d, &built.selection, frame, &gpu).expect("gpu");
        assert!(cpu.distinct_colours() > 40, "{name}: the picture looks blank");
        assert_images_close(&format!("{name} gpu vs cpu"), &on_gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        if let Some(f) = &first {
            assert!(exaviz_tests::diff_fraction(&f.pixels, &cpu.pixels, GOLDEN) > 0.02, "{name}: same as the first");
        }
        golden(name, &cpu);
        first.get_or_insert(cpu);
    }
}

/// A powerwall's tiles (`exaviz render --wall`) are the whole virtual canvas's render cropped by
/// the tiles' rectangles, pixel for pixel, on both backends.
#[test]
fn wall_tiles_equal_crops_of_the_whole_canvas_on_both_backends() {
    use exaviz_engine::render::render_region;
    use exaviz_engine::wall::{Wall, WallSpec};
    let wall =
        Wall::new(WallSpec { columns: 3, rows: 2, tile: [150, 110], mullion: Some([12, 9]), ..Default::default() })
            .unwrap();
    let [w, h] = wall.canvas();
    let d = exaviz_datasets::open("gen:torus-sim?dims=4x4x4&steps=20&seed=3").unwrap();
    let scene = ring_scene(&d, &Backend::Cpu, &RingOptions { width: w, height: h, ..Default::default() }).unwrap();
    for backend in [Backend::Cpu, gpu_backend()] {
        let whole = render_scene(&backend, &scene, View::default()).unwrap();
        for r in 0..wall.rows {
            for c in 0..wall.columns {
                let [x0, y0] = wall.origin(c, r);
                let tile = render_region(&backend, &scene, View::default(), [x0, y0], wall.tile).unwrap();
                assert_eq!((tile.width, tile.height), (150, 110));
                for y in 0..110 {
                    for x in 0..150 {
                        assert_eq!(
                            tile.pixel(x, y),
                            whole.pixel(x0 + x, y0 + y),
                            "{backend:?} tile {c},{r} at {x},{y}"
                        );
                    }
                }
            }
        }
    }
}

/// The enhanced Marey's graph (Wei et al., 2024) and the training overview on both backends:
/// a generated hybrid-parallel run with a straggler and an unbalanced stage (aligned and
/// aggregated, as recorded, every operator drawn, stages collapsed), a JAX pipeline written as
/// files and read back, and the real Kineto (two ranks) and PerfFlowAspect traces.
#[test]
fn marey_views_match_golden_on_both_backends() {
    use exaviz_engine::views::contract::{Entry, Frame, render_view};
    let gpu = gpu_backend();
    let generated = "gen:training?devices=8&stages=4&microbatches=6&layers=8&steps=2&straggler=5&unbalanced=2";
    let jax_dir = std::env::temp_dir().join(format!("exaviz-golden-jax-{}", std::process::id()));
    let spec = exaviz_datasets::training_gen::Spec::parse(
        "gen:training",
        &[
            ("devices", "4"),
            ("stages", "4"),
            ("microbatches", "3"),
            ("layers", "8"),
            ("steps", "1"),
            ("flavour", "jax"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .unwrap();
    exaviz_datasets::training_gen::write(&spec, &jax_dir).unwrap();
    let jax = jax_dir.to_str().unwrap().to_string();
    let mut cases: Vec<(&str, &str, String, Vec<&str>)> = vec![
        ("marey_generated.png", "marey", generated.into(), vec![]),
        ("marey_generated_unaligned_all.png", "marey", generated.into(), vec!["--align", "none", "--bins", "0"]),
        ("marey_generated_collapsed_step1.png", "marey", generated.into(), vec!["--collapse", "all", "--step", "1"]),
        ("training_overview_generated.png", "training", generated.into(), vec!["--step", "1"]),
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
        let d = exaviz_datasets::open(input).expect("input opens");
        let built = Entry::find(view).unwrap().parse(options).expect("options");
        let frame = Frame { width: 960, height: 600 };
        let cpu = render_view(built.view.as_ref(), &d, &built.selection, frame, &Backend::Cpu).expect("cpu");
        let on_gpu = render_view(built.view.as_ref(), &d, &built.selection, frame, &gpu).expect("gpu");
        assert!(cpu.distinct_colours() > 20, "{name}: the picture looks blank");
        assert_images_close(&format!("{name} gpu vs cpu"), &on_gpu.pixels, &cpu.pixels, GPU_VS_CPU);
        golden(name, &cpu);
        pictures.push(cpu);
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
    let d = exaviz_datasets::open(generated).unwrap();
    let built = Entry::find("marey").unwrap().parse::<&str>(&[]).unwrap();
    let prepared =
        built.view.prepare(&d, &built.selection, Frame { width: 960, height: 600 }, &Backend::Cpu).expect("prepare");
    let pick = prepared.pick(&d, [12.0, row(5)]).expect("a pick on the cross");
    assert!(pick.lines.iter().any(|l| l.contains("straggler")), "{pick:?}");
    // Alignment and aggregation change the picture; so does collapsing the stages.
    for k in [1, 2] {
        let d = exaviz_tests::diff_fraction(&pictures[0].pixels, &pictures[k].pixels, GOLDEN);
        assert!(d > 0.02, "{}: only {d} of the pixels differ from the aligned, aggregated picture", cases[k].0);
    }
}
