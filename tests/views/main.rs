//! Golden images of every view, one file per view (`ring.rs` for `--view ring`, ...), each
//! picture drawn as `exaviz render` draws it: through the registry, from command-line options,
//! on both backends. The reference images live in `tests/golden/`; regenerate them with
//! `EXAVIZ_UPDATE_GOLDEN=1 cargo test -p exaviz-tests --test views` (never by hand).
//! Tolerances are set once in `lib.rs`.

mod chord;
mod diff;
mod fattree;
mod labels;
mod linked;
mod marey;
mod matrix;
mod mds;
mod mpi;
mod parcoords;
mod radviz;
mod render;
mod ring;
mod sendrecv;
mod steps;
mod strategy;
mod themeriver;
mod timeline;
mod topology;
mod training;

use std::path::PathBuf;

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_render::{Image, write_png_atomic};
use exaviz_tests::{GOLDEN, GPU_VS_CPU, assert_images_close, gpu, read_png};

/// The GPU backend (fails with the install hint when there is no adapter).
pub fn gpu_backend() -> Backend {
    let _ = gpu();
    Backend::new(exaviz_compute::BackendChoice::Gpu).expect("gpu backend")
}

/// Compares `image` with the stored reference `name` (or writes it, with
/// `EXAVIZ_UPDATE_GOLDEN=1`).
pub fn golden(name: &str, image: &Image) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name);
    if std::env::var("EXAVIZ_UPDATE_GOLDEN").as_deref() == Ok("1") {
        write_png_atomic(&path, image).unwrap();
    }
    let (w, h, pixels) = read_png(&path);
    assert_eq!((w, h), (image.width, image.height), "{name}: size");
    assert_images_close(name, &image.pixels, &pixels, GOLDEN);
}

pub use exaviz_tests::draw;

/// [`draw`] on the CPU, which must succeed.
pub fn cpu(view: &str, options: &[&str], d: &Dataset, size: (u32, u32)) -> Image {
    draw(view, options, d, &Backend::Cpu, size).unwrap_or_else(|e| panic!("{view} {options:?}: {e}"))
}

/// [`draw`] on both backends: the GPU's picture agrees with the CPU's, which is returned.
pub fn both(view: &str, options: &[&str], d: &Dataset, size: (u32, u32)) -> Image {
    let on_cpu = cpu(view, options, d, size);
    let on_gpu = draw(view, options, d, &gpu_backend(), size).unwrap_or_else(|e| panic!("{view} {options:?}: {e}"));
    assert_images_close(&format!("{view} {options:?} gpu vs cpu"), &on_gpu.pixels, &on_cpu.pixels, GPU_VS_CPU);
    on_cpu
}

/// [`draw`]'s error on the CPU.
pub fn refused(view: &str, options: &[&str], d: &Dataset, size: (u32, u32)) -> String {
    match draw(view, options, d, &Backend::Cpu, size) {
        Ok(_) => panic!("{view} {options:?} drew a picture"),
        Err(e) => e,
    }
}

/// The fraction of pixels that differ between two pictures of one size.
pub fn differ(a: &Image, b: &Image) -> f64 {
    exaviz_tests::diff_fraction(&a.pixels, &b.pixels, GOLDEN)
}

/// A generated input, opened.
pub fn open(input: &str) -> Dataset {
    exaviz_datasets::open(input).unwrap_or_else(|e| panic!("{input}: {e}"))
}

/// The generated MPI cases every trace view is drawn for.
pub const MPI_CASES: [&str; 4] = ["wrf", "fd4", "tachyon", "lulesh"];
