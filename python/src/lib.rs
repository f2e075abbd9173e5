//! exaviz for Python: the native module `exaviz._exaviz` under the `exaviz` package. It opens
//! what `exaviz` opens (every format, the store, the generators), draws the registry's views
//! with the options the CLI parses, gives the numbers of `exaviz info` and `exaviz summary`, and
//! hands the trace's tables over as Arrow C streams. The GIL is released while a trace is read
//! and a picture is drawn.

use std::sync::{Arc, Mutex};

use exaviz_engine::model::Dataset;
use exaviz_engine::views::contract::{Entry, error_line, render_view};
use exaviz_engine::{Backend, BackendChoice};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

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
/// `Trace.warnings`, as the CLI's counted `warning:` lines.
#[pyfunction]
#[pyo3(signature = (input, progress=None))]
fn open(py: Python<'_>, input: String, progress: Option<Py<PyAny>>) -> PyResult<Trace> {
    let report = |done: u64, total: u64| {
        if let Some(p) = &progress {
            Python::attach(|py| {
                // A progress callback that fails (or a Ctrl-C seen in it) does not stop the read.
                let _ = p.call1(py, (done, total));
            });
        }
    };
    let dataset = py
        .detach(|| exaviz_datasets::open_with_progress(&input, &report))
        .map_err(|e| TraceError::new_err(format!("{input}: {e}")))?;
    // A Ctrl-C while reading is raised once the reader is done (it writes nothing).
    py.check_signals()?;
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
    use exaviz_datasets::events::{EventKind, EventTable, Side};
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
        .detach(|| exaviz_datasets::events::from_events(&input, &table))
        .map_err(|e| PyValueError::new_err(format!("{input}: {e}")))?;
    Ok(Trace { input, dataset: Arc::new(dataset) })
}

/// The views' names and one line about each, in the registry's order.
#[pyfunction]
fn views() -> Vec<(&'static str, &'static str)> {
    exaviz_engine::views::REGISTRY.iter().map(|e| (e.name, e.about)).collect()
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
        serde_json::to_string(&self.dataset.summary()).map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
        let asked = exaviz_engine::summary::AreaAsked { from_s: start, to_s: end, ranks: ranks.as_deref(), top };
        let s = py
            .detach(|| exaviz_engine::summary::summarize_asked(&self.dataset, &asked))
            .map_err(|e| TraceError::new_err(format!("{}: {e}", self.input)))?;
        serde_json::to_string(&s).map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
            let names: Vec<&str> = exaviz_engine::views::REGISTRY.iter().map(|e| e.name).collect();
            PyValueError::new_err(format!("unknown view '{view}' (expected one of {})", names.join(", ")))
        })?;
        let built = entry.parse(&options).map_err(|e| PyValueError::new_err(error_line(&e)))?;
        if width == 0 || height == 0 || width > 1 << 15 || height > 1 << 15 {
            return Err(PyValueError::new_err(format!("size {width}x{height}: each side from 1 to 32768 pixels")));
        }
        let backend = self::backend(backend)?;
        let frame = exaviz_engine::views::Frame { width, height };
        let image = py
            .detach(|| render_view(built.view.as_ref(), &self.dataset, &built.selection, frame, &backend))
            .map_err(|e| TraceError::new_err(format!("{}: {e}", self.input)))?;
        Ok(Picture { image })
    }

    /// The table `name` (`locations`, `intervals`, `messages`, `collectives`, `counters`) as an
    /// object with `__arrow_c_stream__`.
    fn table(&self, name: &str) -> PyResult<tables::Table> {
        tables::table(&self.dataset, name)
    }
}

/// A picture drawn: RGBA8, row-major, straight alpha.
#[pyclass(frozen, module = "exaviz._exaviz")]
struct Picture {
    image: exaviz_engine::render::Image,
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

    /// The picture as a PNG file's bytes (what `exaviz render` writes).
    fn png<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| exaviz_engine::render::png_bytes(&self.image));
        PyBytes::new(py, &bytes)
    }

    /// The pixels, RGBA8 row after row.
    fn rgba<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.image.pixels)
    }

    /// Writes the PNG to `path` through a temporary name and a rename.
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| exaviz_engine::render::write_png_atomic(&path, &self.image))
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

#[pymodule]
fn _exaviz(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(views, m)?)?;
    m.add_function(wrap_pyfunction!(from_events, m)?)?;
    m.add_class::<Trace>()?;
    m.add_class::<Picture>()?;
    m.add_class::<tables::Table>()?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    Ok(())
}
