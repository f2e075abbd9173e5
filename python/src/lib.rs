//! exaviz for Python: the native module `exaviz._exaviz` under the `exaviz` package. It opens
//! what `exaviz` opens (every format, the store, the generators), draws the registry's views
//! with the options the CLI parses, gives the numbers of `exaviz info` and `exaviz summary`, and
//! hands the trace's tables over as Arrow C streams. The GIL is released while a trace is read
//! and a picture is drawn.

use std::sync::{Arc, Mutex};

use exaviz_compute::{Backend, BackendChoice};
use exaviz_model::dataset::Dataset;
use exaviz_views::contract::{Entry, error_line, render_view_outlined};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

mod diff_tables;
mod tables;

create_exception!(
    _exaviz,
    TraceError,
    PyValueError,
    "An input exaviz cannot read, or a question its trace cannot answer; the message is the CLI's one line naming the input and the problem."
);

/// A trace (or any input exaviz reads) held in memory, or a store read on demand.
#[pyclass(frozen, module = "exaviz._exaviz")]
struct Trace {
    input: String,
    dataset: Arc<Dataset>,
}

/// Reads `input` (a file, a folder, `A,B,...` or `gen:NAME?k=v`), calling `progress(done, total)`
/// (bytes) from time to time while formats that can tell are read. What the reader repaired is in
/// `Trace.warnings`, as the CLI's counted `warning:` lines. The read runs on a thread of its own
/// while this one waits for it and for Ctrl-C (a kernel interrupt): an interrupt raises
/// `KeyboardInterrupt` at once and the abandoned read's result is dropped when it ends (a read
/// writes nothing, so nothing is left half-written).
#[pyfunction]
#[pyo3(signature = (input, progress=None))]
fn open(py: Python<'_>, input: String, progress: Option<Py<PyAny>>) -> PyResult<Trace> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let abandoned = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (name, gone) = (input.clone(), abandoned.clone());
    std::thread::Builder::new()
        .name("exaviz-open".into())
        .spawn(move || {
            let report = |done: u64, total: u64| {
                if let Some(p) = progress.as_ref().filter(|_| !gone.load(Ordering::Relaxed)) {
                    Python::attach(|py| {
                        // A progress callback that fails does not stop the read.
                        let _ = p.call1(py, (done, total));
                    });
                }
            };
            // grpc://HOST:PORT/STORE and ssh://HOST/PATH as the CLI opens them (exaviz serve).
            let read = if exaviz_remote::is_remote(&name) {
                exaviz_remote::open(&name, &report)
            } else {
                exaviz_datasets::open_with_progress(&name, &report)
            };
            let _ = tx.send(read);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("{input}: cannot start a reader: {e}")))?;
    let mut rx = rx;
    let read = loop {
        // The receiver goes into the wait without the GIL and comes back with the answer.
        let (answer, back) = py.detach(move || (rx.recv_timeout(std::time::Duration::from_millis(50)), rx));
        rx = back;
        match answer {
            Ok(read) => break read,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    abandoned.store(true, Ordering::Relaxed);
                    return Err(interrupt);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(format!("{input}: the reader stopped without an answer")));
            }
        }
    };
    let dataset = read.map_err(|e| TraceError::new_err(format!("{input}: {e}")))?;
    Ok(Trace { input, dataset: Arc::new(dataset) })
}

/// Little-endian numbers of `width` bytes each from `bytes` (NumPy's `tobytes()` of a column).
fn numbers<T>(column: &str, bytes: &[u8], width: usize, from: impl Fn(&[u8]) -> T) -> PyResult<Vec<T>> {
    if !bytes.len().is_multiple_of(width) {
        return Err(PyValueError::new_err(format!(
            "column {column}: {} bytes is not a whole number of values",
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(width).map(from).collect())
}

/// A trace from an events table (pipit's layout, prepared by `exaviz.from_pandas`): each column
/// as the bytes of a NumPy array (times u64 ticks; kind u8: 0 enter, 1 leave, 2 instant; name
/// and location u32 indices into `names` and `location_names`; side u8: 0 none, 1 send, 2
/// receive; peer and tag u32; bytes u64).
#[pyfunction]
#[pyo3(signature = (input, time, kind, name, names, location, location_names, side, peer, tag, bytes, ticks_per_second))]
#[allow(clippy::too_many_arguments)]
fn from_events(
    py: Python<'_>,
    input: String,
    time: &[u8],
    kind: &[u8],
    name: &[u8],
    names: Vec<String>,
    location: &[u8],
    location_names: Vec<String>,
    side: &[u8],
    peer: &[u8],
    tag: &[u8],
    bytes: &[u8],
    ticks_per_second: u64,
) -> PyResult<Trace> {
    use exaviz_formats::events::{EventKind, EventTable, Side};
    let u64s = |c: &str, b: &[u8]| numbers(c, b, 8, |v| u64::from_le_bytes(v.try_into().expect("8 bytes")));
    let u32s = |c: &str, b: &[u8]| numbers(c, b, 4, |v| u32::from_le_bytes(v.try_into().expect("4 bytes")));
    let kinds = kind
        .iter()
        .map(|k| match k {
            0 => Ok(EventKind::Enter),
            1 => Ok(EventKind::Leave),
            2 => Ok(EventKind::Instant),
            other => Err(PyValueError::new_err(format!("column kind: {other} is not 0, 1 or 2"))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let sides = side
        .iter()
        .map(|k| match k {
            0 => Ok(Side::None),
            1 => Ok(Side::Send),
            2 => Ok(Side::Recv),
            other => Err(PyValueError::new_err(format!("column side: {other} is not 0, 1 or 2"))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let table = EventTable {
        time: u64s("time", time)?,
        kind: kinds,
        name: u32s("name", name)?,
        names,
        location: u32s("location", location)?,
        location_names,
        side: sides,
        peer: u32s("peer", peer)?,
        tag: u32s("tag", tag)?,
        bytes: u64s("bytes", bytes)?,
        ticks_per_second,
    };
    let dataset = py
        .detach(|| exaviz_formats::events::from_events(&input, &table))
        .map_err(|e| PyValueError::new_err(format!("{input}: {e}")))?;
    Ok(Trace { input, dataset: Arc::new(dataset) })
}

fn f32s(column: &str, bytes: &[u8]) -> PyResult<Vec<f32>> {
    numbers(column, bytes, 4, |v| f32::from_le_bytes(v.try_into().expect("4 bytes")))
}

/// KDE edge bundling (`exaviz bundle`'s, with its defaults where a parameter is `None`) of edges
/// given as the bytes of an `(n, 4)` float32 array (x0, y0, x1, y1), optionally weighted;
/// returns each edge's polyline, `samples` points in the edges' own coordinates, as the bytes of
/// an `(n, samples, 2)` float32 array, and `samples`.
#[pyfunction]
#[pyo3(signature = (edges, weights=None, backend="auto", samples=None, grid=None, iterations=None, kernel=None, decay=None, step=None, smoothing=None))]
#[allow(clippy::too_many_arguments)]
fn bundle_edges<'py>(
    py: Python<'py>,
    edges: &[u8],
    weights: Option<&[u8]>,
    backend: &str,
    samples: Option<u32>,
    grid: Option<u32>,
    iterations: Option<u32>,
    kernel: Option<f32>,
    decay: Option<f32>,
    step: Option<f32>,
    smoothing: Option<f32>,
) -> PyResult<(Bound<'py, PyBytes>, u32)> {
    use exaviz_compute::BundleParams;
    let d = BundleParams::STRONG;
    let params = BundleParams {
        samples: samples.unwrap_or(d.samples),
        grid: grid.unwrap_or(d.grid),
        iterations: iterations.unwrap_or(d.iterations),
        kernel: kernel.unwrap_or(d.kernel),
        decay: decay.unwrap_or(d.decay),
        step: step.unwrap_or(d.step),
        smoothing: smoothing.unwrap_or(d.smoothing),
    };
    params.validate().map_err(|e| PyValueError::new_err(format!("invalid bundling parameters: {e}")))?;
    let flat = f32s("edges", edges)?;
    if flat.len() % 4 != 0 {
        return Err(PyValueError::new_err("edges: expected 4 numbers per edge (x0, y0, x1, y1)"));
    }
    let mut list = exaviz_formats::edges_csv::EdgeList {
        edges: flat.chunks_exact(4).map(|e| [e[0], e[1], e[2], e[3]]).collect(),
        weights: weights.map(|w| f32s("weights", w)).transpose()?,
    };
    if list.edges.iter().flatten().any(|v| !v.is_finite()) {
        return Err(PyValueError::new_err("edges: every coordinate must be a finite number"));
    }
    if list.weights.as_ref().is_some_and(|w| w.len() != list.edges.len()) {
        return Err(PyValueError::new_err("weights: one per edge"));
    }
    let backend = self::backend(backend)?;
    let weights = list.quantised_weights();
    let frame = exaviz_compute::kde_bundle::UnitFrame::fit(&list.edges);
    for e in &mut list.edges {
        *e = frame.edge_to_unit(*e);
    }
    let bundled = py
        .detach(|| {
            exaviz_render::bundling::Bundler::Kde(params).run(
                backend.runner().as_mut(),
                &list.edges,
                weights.as_deref(),
            )
        })
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let out: Vec<u8> = bundled.points.iter().flat_map(|&p| frame.from_unit(p)).flat_map(f32::to_le_bytes).collect();
    Ok((PyBytes::new(py, &out), bundled.samples))
}

/// Points counted per pixel of a `width` x `height` canvas, as Datashader's `Canvas.points`
/// counts them: `x` and `y` as the bytes of float32 arrays, the canvas over `x_range` and
/// `y_range` (default: the points' bounds), points outside it or not numbers left out; returns
/// the counts as the bytes of a `(height, width)` uint32 array, row 0 the lowest y.
#[pyfunction]
#[pyo3(signature = (x, y, width, height, x_range=None, y_range=None, backend="auto"))]
#[allow(clippy::too_many_arguments)]
fn aggregate_points<'py>(
    py: Python<'py>,
    x: &[u8],
    y: &[u8],
    width: u32,
    height: u32,
    x_range: Option<(f32, f32)>,
    y_range: Option<(f32, f32)>,
    backend: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    use exaviz_compute::bin_heatmap;
    use exaviz_model::bins::{AxisKey, HeatmapInput};
    let (mut xs, mut ys) = (f32s("x", x)?, f32s("y", y)?);
    if xs.len() != ys.len() {
        return Err(PyValueError::new_err(format!("x has {} points and y {}", xs.len(), ys.len())));
    }
    if width == 0 || height == 0 || width > 1 << 15 || height > 1 << 15 {
        return Err(PyValueError::new_err(format!("size {width}x{height}: each side from 1 to 32768 bins")));
    }
    let bounds = |v: &[f32]| {
        let finite = v.iter().copied().filter(|a| a.is_finite());
        finite.fold(None, |b: Option<(f32, f32)>, a| Some(b.map_or((a, a), |(l, h)| (l.min(a), h.max(a)))))
    };
    let xr = x_range.or_else(|| bounds(&xs)).unwrap_or((0.0, 1.0));
    let yr = y_range.or_else(|| bounds(&ys)).unwrap_or((0.0, 1.0));
    for (name, r) in [("x_range", xr), ("y_range", yr)] {
        if !(r.0.is_finite() && r.1.is_finite() && r.0 <= r.1) {
            return Err(PyValueError::new_err(format!(
                "{name} {r:?}: two finite numbers, the first not above the second"
            )));
        }
    }
    // Points outside the canvas (or not numbers) are left out, as the canvas leaves them out.
    let inside = |k: usize| (xr.0..=xr.1).contains(&xs[k]) && (yr.0..=yr.1).contains(&ys[k]);
    if !(0..xs.len()).all(inside) {
        let keep: Vec<usize> = (0..xs.len()).filter(|&k| inside(k)).collect();
        xs = keep.iter().map(|&k| xs[k]).collect();
        ys = keep.iter().map(|&k| ys[k]).collect();
    }
    let backend = self::backend(backend)?;
    let input = HeatmapInput {
        x: AxisKey::scaled(&xs, xr.0, xr.1, width),
        y: AxisKey::scaled(&ys, yr.0, yr.1, height),
        weights: None,
    };
    let grid = py
        .detach(|| bin_heatmap::run(backend.runner().as_mut(), &input))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let out: Vec<u8> = grid.counts.iter().flat_map(|c| c.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &out))
}

/// The views' names and one line about each, in the registry's order.
#[pyfunction]
fn views() -> Vec<(&'static str, &'static str)> {
    exaviz_views::REGISTRY.iter().map(|e| (e.name, e.about)).collect()
}

/// One backend per choice, made at its first use (finding an adapter takes a while).
static BACKENDS: Mutex<Vec<(BackendChoice, Arc<Backend>)>> = Mutex::new(Vec::new());

fn backend(choice: &str) -> PyResult<Arc<Backend>> {
    let choice: BackendChoice = choice.parse().map_err(PyValueError::new_err)?;
    let mut kept = BACKENDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, b)) = kept.iter().find(|(c, _)| *c == choice) {
        return Ok(b.clone());
    }
    let b = Arc::new(Backend::new(choice).map_err(|e| PyRuntimeError::new_err(e.to_string()))?);
    kept.push((choice, b.clone()));
    Ok(b)
}

#[pymethods]
impl Trace {
    /// What was opened, as given.
    #[getter]
    fn input(&self) -> &str {
        &self.input
    }

    /// What the reader repaired: one counted line per kind (the CLI prints them as `warning:`).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.dataset.warnings.clone()
    }

    /// `exaviz info --json`: what the input holds, as JSON text.
    fn info_json(&self) -> PyResult<String> {
        serde_json::to_string(&exaviz_datasets::info_json(&self.dataset))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// `exaviz summary --json`: the numbers of an area (seconds since the trace's start, rows
    /// `A-B`), as JSON text.
    #[pyo3(signature = (start=None, end=None, ranks=None, top=20))]
    fn summary_json(
        &self,
        py: Python<'_>,
        start: Option<f64>,
        end: Option<f64>,
        ranks: Option<String>,
        top: usize,
    ) -> PyResult<String> {
        let asked = exaviz_analysis::summary::AreaAsked { from_s: start, to_s: end, ranks: ranks.as_deref(), top };
        let s = py
            .detach(|| exaviz_analysis::summary::summarize_asked(&self.dataset, &asked))
            .map_err(|e| TraceError::new_err(format!("{}: {e}", self.input)))?;
        serde_json::to_string(&s).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// `exaviz critical-path --json`: the critical path, the root causes of waiting and the
    /// stragglers of a window (seconds since the trace's start), as JSON text.
    /// `what_if`: the projections of `--what-if` (`rank 5`, `region:NAME*0.5`).
    #[pyo3(signature = (start=None, end=None, what_if=Vec::new()))]
    fn critical_path_json(
        &self,
        py: Python<'_>,
        start: Option<f64>,
        end: Option<f64>,
        what_if: Vec<String>,
    ) -> PyResult<String> {
        use exaviz_analysis::critical_path::{analyse_what_if, what_if::parse};
        let asks = what_if
            .iter()
            .map(|w| parse(w))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TraceError::new_err(format!("{}: {e}", self.input)))?;
        let r = py
            .detach(|| analyse_what_if(&self.dataset, start, end, &asks, &|_, _| {}))
            .map_err(|e| TraceError::new_err(format!("{}: {e}", self.input)))?;
        serde_json::to_string(&r).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Draws `view` at `width` x `height` with the view's options as command-line words
    /// (`["--window", "0.1,0.2"]`), checked by the CLI's parser.
    #[pyo3(signature = (view, width, height, backend="auto", options=Vec::new()))]
    fn render(
        &self,
        py: Python<'_>,
        view: &str,
        width: u32,
        height: u32,
        backend: &str,
        options: Vec<String>,
    ) -> PyResult<Picture> {
        let entry = Entry::find(view).ok_or_else(|| {
            let names: Vec<&str> = exaviz_views::REGISTRY.iter().map(|e| e.name).collect();
            PyValueError::new_err(format!("unknown view '{view}' (expected one of {})", names.join(", ")))
        })?;
        let built = entry.parse(&options).map_err(|e| PyValueError::new_err(error_line(&e)))?;
        if width == 0 || height == 0 || width > 1 << 15 || height > 1 << 15 {
            return Err(PyValueError::new_err(format!("size {width}x{height}: each side from 1 to 32768 pixels")));
        }
        let backend = self::backend(backend)?;
        let frame = exaviz_views::Frame { width, height };
        // A view comparing with another run (`against=`) gets it opened beside this one.
        if let Some(b) = built.view.against() {
            let other = py.detach(|| exaviz_datasets::open(b)).map_err(|e| TraceError::new_err(format!("{b}: {e}")))?;
            built.view.compare_with(Arc::new(other));
        }
        let dataset = self.dataset.clone();
        let (image, outline) = py
            .detach(|| render_view_outlined(built.view.as_ref(), &dataset, &built.selection, frame, &backend))
            .map_err(|e| TraceError::new_err(format!("{}: {e}", self.input)))?;
        Ok(Picture { image, scene: outline.to_json() })
    }

    /// The table `name` (`locations`, `intervals`, `messages`, `collectives`, `counters`) as an
    /// object with `__arrow_c_stream__`.
    fn table(&self, name: &str) -> PyResult<tables::Table> {
        tables::table(&self.dataset, name)
    }

    /// The answer to a read-only SQL query over this trace's tables, as `exaviz query` answers
    /// it (the run named by the input's file or folder name).
    fn sql(&self, py: Python<'_>, name: String, query: &str) -> PyResult<tables::Table> {
        let source = match self.dataset.out_of_core {
            // A store opened out of core is read in place, as the CLI reads it.
            Some(_) => exaviz_query::Source::Store(std::path::PathBuf::from(&self.input)),
            None => exaviz_query::Source::Trace(self.dataset.clone()),
        };
        let run = exaviz_query::Run { name, input: self.input.clone(), source };
        answer(py, vec![run], query, &self.input)
    }
}

/// `query`'s answer over `runs`, without the GIL, as one Arrow table.
fn answer(py: Python<'_>, runs: Vec<exaviz_query::Run>, query: &str, what: &str) -> PyResult<tables::Table> {
    let batch = py
        .detach(|| exaviz_query::Session::new(runs).and_then(|s| s.sql(query)).and_then(|a| a.batch()))
        .map_err(|e| TraceError::new_err(format!("{what}: {e}")))?;
    Ok(tables::Table::from_batch(batch))
}

/// `exaviz query` over several runs, each `(name, input)`: a store folder read in place, any
/// other input read into memory first.
#[pyfunction]
fn query(py: Python<'_>, runs: Vec<(String, String)>, query: &str) -> PyResult<tables::Table> {
    let what = runs.iter().map(|(_, i)| i.as_str()).collect::<Vec<_>>().join(", ");
    let opened = py.detach(|| {
        runs.into_iter()
            .map(|(name, input)| {
                let path = std::path::PathBuf::from(&input);
                let source = if exaviz_store::is_store(&path) {
                    exaviz_query::Source::Store(path)
                } else {
                    let d = exaviz_datasets::open(&input).map_err(|e| format!("{input}: {e}"))?;
                    exaviz_query::Source::Trace(Arc::new(d))
                };
                Ok(exaviz_query::Run { name, input, source })
            })
            .collect::<Result<Vec<_>, String>>()
    });
    let runs = opened.map_err(TraceError::new_err)?;
    answer(py, runs, query, &what)
}

/// A picture drawn: RGBA8, row-major, straight alpha.
#[pyclass(frozen, module = "exaviz._exaviz")]
struct Picture {
    image: exaviz_render::Image,
    /// What the picture shows, as `exaviz render --scene-json` writes it.
    scene: String,
}

#[pymethods]
impl Picture {
    #[getter]
    fn width(&self) -> u32 {
        self.image.width
    }

    #[getter]
    fn height(&self) -> u32 {
        self.image.height
    }

    /// What the picture shows as JSON text (`exaviz render --scene-json`).
    fn scene_json(&self) -> String {
        self.scene.clone()
    }

    /// The picture as a PNG file's bytes (what `exaviz render` writes).
    fn png<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| exaviz_render::png_bytes(&self.image));
        PyBytes::new(py, &bytes)
    }

    /// The pixels, RGBA8 row after row.
    fn rgba<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.image.pixels)
    }

    /// Writes the PNG to `path` through a temporary name and a rename.
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| exaviz_render::write_png_atomic(&path, &self.image))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: cannot write: {e}", path.display())))
    }
}

/// The name the Arrow PyCapsule interface gives a stream's capsule (its consumers check it).
const STREAM_CAPSULE: &std::ffi::CStr = c"arrow_array_stream";

/// `value` in a capsule named as an Arrow C stream; the capsule drops it (a stream its consumer
/// moved out is released by the consumer).
pub(crate) fn capsule<'py, T: 'static + Send>(py: Python<'py>, value: T) -> PyResult<Bound<'py, PyCapsule>> {
    PyCapsule::new_with_value(py, value, STREAM_CAPSULE)
}

/// One format as Python sees it: name, title, tools, files, what it reads, options.
type FormatRow = (&'static str, &'static str, &'static str, &'static str, &'static str, Vec<&'static str>);

/// The formats exaviz reads, from its table of formats.
#[pyfunction]
fn formats() -> Vec<FormatRow> {
    exaviz_formats::FORMATS.iter().map(|f| (f.name, f.title, f.tools, f.files, f.gives, f.options.to_vec())).collect()
}

/// `exaviz diff A B --json`: what changed from trace `a` to trace `b` over seconds `start` to
/// `end` of each (and steps `steps`, ordinals `(first, last)`), as JSON text, with every table as
/// an Arrow table (`top`, `locations`, `waiting`, `regions`, `paths`, `collectives`, `pairs`).
#[pyfunction]
#[pyo3(signature = (a, b, start=None, end=None, steps=None, top=12))]
fn diff(
    py: Python<'_>,
    a: &Trace,
    b: &Trace,
    start: Option<f64>,
    end: Option<f64>,
    steps: Option<(u32, u32)>,
    top: usize,
) -> PyResult<(String, Vec<(&'static str, tables::Table)>)> {
    if let Some((first, last)) = steps
        && first > last
    {
        return Err(PyValueError::new_err(format!("steps ({first}, {last}): first may not exceed last")));
    }
    let o = exaviz_analysis::diff::Options { top, steps };
    let d = py
        .detach(|| exaviz_analysis::diff::diff_asked(&a.dataset, &b.dataset, start, end, &o))
        .map_err(|e| TraceError::new_err(format!("{} against {}: {e}", b.input, a.input)))?;
    let json = serde_json::to_string(&d).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((json, diff_tables::tables(&d)?))
}

#[pymodule]
fn _exaviz(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(views, m)?)?;
    m.add_function(wrap_pyfunction!(formats, m)?)?;
    m.add_function(wrap_pyfunction!(from_events, m)?)?;
    m.add_function(wrap_pyfunction!(bundle_edges, m)?)?;
    m.add_function(wrap_pyfunction!(aggregate_points, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(query, m)?)?;
    m.add_class::<Trace>()?;
    m.add_class::<Picture>()?;
    m.add_class::<tables::Table>()?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    Ok(())
}
