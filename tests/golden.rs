//! Golden images of the `ring` view on both backends. The reference images live in
//! `tests/golden/`; regenerate them with `EXAVIZ_UPDATE_GOLDEN=1 cargo test -p exaviz-tests
//! --test golden` (never by hand). Tolerances are set once in `lib.rs`.

use std::path::PathBuf;

use exaviz_engine::Backend;
use exaviz_engine::layout::Ordering;
use exaviz_engine::render::{Image, View, render_scene, write_png_atomic};
use exaviz_engine::views::ring::{RingOptions, link_traffic, ring_scene};
use exaviz_tests::{GOLDEN, GPU_VS_CPU, assert_images_close, gpu, read_png, shared_data_or_skip};

fn gpu_backend() -> Backend {
    // Built from the shared test context's instance would tie lifetimes; a fresh one is cheap.
    let _ = gpu(); // fails with the install hint if there is no adapter
    Backend::new(exaviz_engine::BackendChoice::Gpu).expect("gpu backend")
}

fn render(input: &str, backend: &Backend, order: Ordering, w: u32, h: u32) -> Image {
    let dataset = exaviz_datasets::open(input).expect("input opens");
    let opts = RingOptions {
        width: w,
        height: h,
        order,
        ..Default::default()
    };
    let scene = ring_scene(&dataset, backend, &opts).expect("scene");
    render_scene(backend, &scene, View::default()).expect("render")
}

fn golden(name: &str, image: &Image) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(name);
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
