//! Helpers shared by the workspace tests: the GPU context (mandatory: a test that needs a GPU
//! fails, never skips, when no adapter exists), deterministic input generators, the image
//! tolerance used by every golden-image test, and the location of the shared real data.

use std::path::PathBuf;
use std::sync::OnceLock;

use exaviz_compute::GpuContext;

/// The GPU context for tests. Panics with the install hint when there is no adapter: in CI the
/// GPU tests run on lavapipe and must fail, not skip, without it.
pub fn gpu() -> &'static GpuContext {
    static CTX: OnceLock<GpuContext> = OnceLock::new();
    CTX.get_or_init(|| {
        GpuContext::new().unwrap_or_else(|e| {
            panic!("GPU tests need an adapter ({e}); install lavapipe: apt-get install mesa-vulkan-drivers libvulkan1")
        })
    })
}

/// The seedable generator the datasets use, so test inputs need no extra crate.
pub use exaviz_model::rng::SplitMix64 as Rng;

/// `../shared/data` beside the repository, if present. Tests that need it call
/// [`shared_data_or_skip`].
pub fn shared_data() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    p.is_dir().then_some(p)
}

/// The shared data folder; when it is absent the test says so and returns `None` (skips),
/// unless `EXAVIZ_REQUIRE_DATA=1` (set by `.ci/run`), which makes it mandatory.
pub fn shared_data_or_skip(test: &str) -> Option<PathBuf> {
    match shared_data() {
        Some(p) => Some(p),
        None if std::env::var("EXAVIZ_REQUIRE_DATA").is_ok_and(|v| v == "1") => {
            panic!("{test}: ../shared/data is required (EXAVIZ_REQUIRE_DATA=1) but missing")
        }
        None => {
            eprintln!("{test}: skipped, ../shared/data is absent");
            None
        }
    }
}

/// Tolerances of image comparisons, set here once for every golden-image test.
#[derive(Clone, Copy, Debug)]
pub struct ImageTolerance {
    /// A channel differing by more than this counts the pixel as different.
    pub channel: u8,
    /// Largest allowed fraction of different pixels.
    pub fraction: f64,
}

/// Between the GPU and CPU renderers (same scene): blending order and coverage agree up to
/// float rounding and 8-bit quantisation of each blend on the GPU.
pub const GPU_VS_CPU: ImageTolerance = ImageTolerance { channel: 24, fraction: 0.01 };
/// Against a stored reference image produced by the same backend.
pub const GOLDEN: ImageTolerance = ImageTolerance { channel: 24, fraction: 0.02 };

/// Fraction of pixels differing by more than `tol.channel` in any channel; panics when the
/// sizes differ.
pub fn diff_fraction(a: &[u8], b: &[u8], tol: ImageTolerance) -> f64 {
    assert_eq!(a.len(), b.len(), "images differ in size");
    let px = a.len() / 4;
    let differing = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > tol.channel))
        .count();
    differing as f64 / px.max(1) as f64
}

/// Asserts two RGBA8 images agree within `tol`.
pub fn assert_images_close(what: &str, a: &[u8], b: &[u8], tol: ImageTolerance) {
    let f = diff_fraction(a, b, tol);
    assert!(f <= tol.fraction, "{what}: {:.3}% of pixels differ (allowed {:.3}%)", f * 100.0, tol.fraction * 100.0);
}

/// Reads an RGBA8 PNG: (width, height, pixels).
pub fn read_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8() | png::Transformations::ALPHA);
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("png frame");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// What `exaviz render INPUT --view VIEW OPTIONS --size WxH` draws on `backend`, or its error:
/// every view's picture in the tests goes through the registry, as the command line's does.
/// Opens the run a view compares with (`--against B`) and hands it to the view, as the CLI
/// does; each run is opened once per test binary. A run that does not open is left out, so the
/// view says it was not opened.
pub fn compare(view: &dyn exaviz_views::View) {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static OPENED: OnceLock<Mutex<HashMap<String, Arc<exaviz_model::dataset::Dataset>>>> = OnceLock::new();
    let Some(b) = view.against() else { return };
    let mut opened = OPENED.get_or_init(Default::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !opened.contains_key(b)
        && let Ok(d) = exaviz_datasets::open(b)
    {
        opened.insert(b.to_string(), Arc::new(d));
    }
    if let Some(d) = opened.get(b) {
        view.compare_with(d.clone());
    }
}

pub fn draw(
    view: &str,
    options: &[&str],
    d: &exaviz_model::dataset::Dataset,
    backend: &exaviz_compute::Backend,
    size: (u32, u32),
) -> Result<exaviz_render::Image, String> {
    use exaviz_views::contract::{Entry, Frame, render_view};
    let entry = Entry::find(view).unwrap_or_else(|| panic!("{view} is not registered"));
    let built = entry.parse(options).map_err(|e| e.to_string())?;
    compare(built.view.as_ref());
    let frame = Frame { width: size.0, height: size.1 };
    render_view(built.view.as_ref(), d, &built.selection, frame, backend).map_err(|e| e.to_string())
}

/// The scene `exaviz render INPUT --view VIEW OPTIONS --size WxH` draws (on the CPU), or its
/// error: what tests of labels and legends read.
pub fn scene(
    view: &str,
    options: &[&str],
    d: &exaviz_model::dataset::Dataset,
    size: (u32, u32),
) -> Result<exaviz_render::Scene, String> {
    use exaviz_views::contract::{Entry, Frame, prepare};
    let entry = Entry::find(view).unwrap_or_else(|| panic!("{view} is not registered"));
    let built = entry.parse(options).map_err(|e| e.to_string())?;
    compare(built.view.as_ref());
    let frame = Frame { width: size.0, height: size.1 };
    let prepared = prepare(built.view.as_ref(), d, &built.selection, frame, &exaviz_compute::Backend::Cpu)
        .map_err(|e| e.to_string())?;
    Ok(prepared.draw(d, &built.selection).into_owned())
}

/// The prepared picture `exaviz render INPUT --view VIEW OPTIONS --size WxH` draws (on the
/// CPU): what tests of tooltips pick on.
pub fn prepared(
    view: &str,
    options: &[&str],
    d: &exaviz_model::dataset::Dataset,
    size: (u32, u32),
) -> Box<dyn exaviz_views::contract::Prepared> {
    use exaviz_views::contract::{Entry, Frame, prepare};
    let entry = Entry::find(view).unwrap_or_else(|| panic!("{view} is not registered"));
    let built = entry.parse(options).unwrap_or_else(|e| panic!("{view} {options:?}: {e}"));
    let frame = Frame { width: size.0, height: size.1 };
    prepare(built.view.as_ref(), d, &built.selection, frame, &exaviz_compute::Backend::Cpu)
        .unwrap_or_else(|e| panic!("{view} {options:?}: {e}"))
}
