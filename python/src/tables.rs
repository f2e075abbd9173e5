//! The trace's tables as Arrow record batches handed to Python through the Arrow C stream
//! interface (`__arrow_c_stream__`), so that pyarrow, polars and DuckDB read them directly. The
//! numeric columns are the trace's own memory (Arrow buffers that keep the trace alive), not
//! copies; names are copied once (a table of strings, or a dictionary's values). Times are the
//! trace's ticks; the schema's metadata `ticks_per_second` turns them into seconds.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, PrimitiveArray, RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::{Field, Schema};
use exaviz_model::dataset::Dataset;
use exaviz_store::shared;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The tables `Trace.table` gives, in the order the docs list them.
pub(crate) const NAMES: [&str; 6] = ["locations", "intervals", "instants", "messages", "collectives", "counters"];

/// A trace's table: an Arrow record batch that Python reads through `__arrow_c_stream__`.
#[pyclass(frozen, module = "exaviz._exaviz")]
pub(crate) struct Table {
    batch: RecordBatch,
}

impl Table {
    pub(crate) fn from_batch(batch: RecordBatch) -> Self {
        Self { batch }
    }
}

#[pymethods]
impl Table {
    /// The Arrow C stream of the table (one batch), as the Arrow PyCapsule interface asks.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is the table's own; a consumer asking for another casts it itself.
        let _ = requested_schema;
        let schema = self.batch.schema();
        let reader = RecordBatchIterator::new(vec![Ok(self.batch.clone())], schema);
        crate::capsule(py, FFI_ArrowArrayStream::new(Box::new(reader)))
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// The columns' names.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.batch.schema().fields().iter().map(|f| f.name().clone()).collect()
    }
}

/// Names as an Arrow array of strings.
fn strings<S: AsRef<str>>(names: &[S]) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(names.iter().map(AsRef::as_ref)))
}

/// Row numbers (`keys`) into `names` as a dictionary column; `Err` where a key has no name.
fn named<S: AsRef<str>>(keys: PrimitiveArray<UInt32Type>, names: &[S]) -> Result<ArrayRef, String> {
    DictionaryArray::<UInt32Type>::try_new(keys, strings(names))
        .map(|d| Arc::new(d) as ArrayRef)
        .map_err(|e| e.to_string())
}

fn u32s(d: &Arc<Dataset>, pick: impl for<'a> Fn(&'a Dataset) -> &'a [u32]) -> ArrayRef {
    Arc::new(shared::u32s(d, pick))
}

fn u64s(d: &Arc<Dataset>, pick: impl for<'a> Fn(&'a Dataset) -> &'a [u64]) -> ArrayRef {
    Arc::new(shared::u64s(d, pick))
}

fn f64s(d: &Arc<Dataset>, pick: impl for<'a> Fn(&'a Dataset) -> &'a [f64]) -> ArrayRef {
    Arc::new(shared::f64s(d, pick))
}

/// The table `name` of `dataset`.
pub(crate) fn table(dataset: &Arc<Dataset>, name: &str) -> PyResult<Table> {
    let o = dataset;
    let t = &dataset.trace;
    let columns: Vec<(&str, ArrayRef)> = match name {
        "locations" => {
            let kinds: Vec<&str> = t.locations.kind.iter().map(|k| k.label()).collect();
            let mut cols = vec![("name", strings(&t.locations.name))];
            if t.locations.node.len() == t.locations.name.len() {
                // A location on no known node is null (the model's u32::MAX).
                let node = t.locations.node.iter().map(|&n| (n != u32::MAX).then_some(n));
                cols.push(("node", Arc::new(arrow_array::UInt32Array::from_iter(node))));
            }
            if kinds.len() == t.locations.name.len() {
                cols.push(("kind", strings(&kinds)));
            }
            cols
        }
        "intervals" => {
            vec![
                ("location", u32s(o, |d| &d.trace.intervals.location)),
                ("start", u64s(o, |d| &d.trace.intervals.start)),
                ("end", u64s(o, |d| &d.trace.intervals.end)),
                (
                    "region",
                    named(shared::u32s(o, |d| &d.trace.intervals.kind), &t.region_names).map_err(|e| bad(name, &e))?,
                ),
                ("depth", u32s(o, |d| &d.trace.intervals.depth)),
            ]
        }
        "instants" => {
            let i = &t.instants;
            // An instant on no row (a global one) has a null location.
            let location = i.location.iter().map(|&l| (l != exaviz_model::NO_ROW).then_some(l));
            let scopes: Vec<&str> = i.scope.iter().map(|s| s.label()).collect();
            let category = i.category.iter().map(|&c| t.instant_categories.get(c as usize).filter(|c| !c.is_empty()));
            vec![
                ("location", Arc::new(arrow_array::UInt32Array::from_iter(location)) as ArrayRef),
                ("time", u64s(o, |d| &d.trace.instants.time)),
                (
                    "name",
                    named(shared::u32s(o, |d| &d.trace.instants.name), &t.region_names).map_err(|e| bad(name, &e))?,
                ),
                ("scope", strings(&scopes)),
                ("category", Arc::new(StringArray::from_iter(category))),
                ("args", u32s(o, |d| &d.trace.instants.args)),
            ]
        }
        "messages" => {
            vec![
                ("source", u32s(o, |d| &d.trace.messages.source)),
                ("destination", u32s(o, |d| &d.trace.messages.destination)),
                ("send_time", u64s(o, |d| &d.trace.messages.send_time)),
                ("recv_time", u64s(o, |d| &d.trace.messages.recv_time)),
                ("bytes", u32s(o, |d| &d.trace.messages.bytes)),
                ("tag", u32s(o, |d| &d.trace.messages.tag)),
            ]
        }
        "collectives" => {
            vec![
                ("location", u32s(o, |d| &d.trace.collectives.location)),
                ("start", u64s(o, |d| &d.trace.collectives.start)),
                ("end", u64s(o, |d| &d.trace.collectives.end)),
                (
                    "operation",
                    named(shared::u32s(o, |d| &d.trace.collectives.op), &t.collective_names)
                        .map_err(|e| bad(name, &e))?,
                ),
                ("root", u32s(o, |d| &d.trace.collectives.root)),
                ("bytes", u32s(o, |d| &d.trace.collectives.bytes)),
            ]
        }
        "counters" => {
            vec![
                ("location", u32s(o, |d| &d.trace.metrics.location)),
                ("time", u64s(o, |d| &d.trace.metrics.time)),
                (
                    "counter",
                    named(shared::u32s(o, |d| &d.trace.metrics.metric), &t.metric_names).map_err(|e| bad(name, &e))?,
                ),
                ("value", f64s(o, |d| &d.trace.metrics.value)),
            ]
        }
        other => {
            return Err(PyValueError::new_err(format!("no table '{other}' (expected one of {})", NAMES.join(", "))));
        }
    };
    let metadata = HashMap::from([("ticks_per_second".to_string(), t.ticks_per_second.to_string())]);
    let fields: Vec<Field> =
        columns.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), a.null_count() > 0)).collect();
    let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
    let batch = RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| bad(name, &e.to_string()))?;
    Ok(Table { batch })
}

fn bad(table: &str, e: &str) -> PyErr {
    PyRuntimeError::new_err(format!("the trace's {table} table: {e}"))
}
