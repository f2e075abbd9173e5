//! `exaviz.diff(a, b)`: the comparison `exaviz diff --json` prints, with each of its tables also
//! as an Arrow record batch (one row per change), so that pandas, polars and DuckDB take them
//! directly.

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use exaviz_analysis::diff::{Change, Diff};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::tables::Table;

/// The tables of a comparison, in the order the docs list them.
pub(crate) const NAMES: [&str; 7] = ["top", "locations", "waiting", "regions", "paths", "collectives", "pairs"];

/// `rows` as a record batch: one row per change; the step interval and the verdict are null
/// where the runs have too few steps to tell.
fn batch(rows: &[Change]) -> PyResult<RecordBatch> {
    let f = |g: fn(&Change) -> f64| -> ArrayRef { Arc::new(rows.iter().map(g).collect::<Float64Array>()) };
    let step = |g: fn(&exaviz_analysis::diff::StepChange) -> f64| -> ArrayRef {
        Arc::new(rows.iter().map(|r| r.step.as_ref().map(g)).collect::<Float64Array>())
    };
    let u = |g: fn(&Change) -> u64| -> ArrayRef { Arc::new(rows.iter().map(g).collect::<UInt64Array>()) };
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("table", Arc::new(rows.iter().map(|r| Some(r.table)).collect::<StringArray>())),
        ("name", Arc::new(rows.iter().map(|r| Some(r.name.as_str())).collect::<StringArray>())),
        ("a_count", u(|r| r.a.count)),
        ("b_count", u(|r| r.b.count)),
        ("a_total_s", f(|r| r.a.total_s)),
        ("b_total_s", f(|r| r.b.total_s)),
        ("a_mean_s", f(|r| r.a.mean_s)),
        ("b_mean_s", f(|r| r.b.mean_s)),
        ("a_bytes", u(|r| r.a.bytes)),
        ("b_bytes", u(|r| r.b.bytes)),
        ("change", f(|r| r.change_s)),
        ("relative", f(|r| r.relative)),
        ("step_change_s", step(|s| s.change_s)),
        ("step_low_s", step(|s| s.low_s)),
        ("step_high_s", step(|s| s.high_s)),
        ("stands_out", Arc::new(rows.iter().map(|r| r.stands_out).collect::<BooleanArray>())),
        (
            "where",
            Arc::new(
                rows.iter()
                    .map(|r| {
                        Some(
                            r.locations
                                .iter()
                                .map(|p| format!("{} {:+}", p.name, p.change_s))
                                .collect::<Vec<_>>()
                                .join("; "),
                        )
                    })
                    .collect::<StringArray>(),
            ),
        ),
        ("spread", u(|r| r.spread as u64)),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| {
            Field::new(*n, a.data_type().clone(), matches!(a.data_type(), DataType::Boolean) || n.starts_with("step_"))
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| PyRuntimeError::new_err(format!("the comparison's table: {e}")))
}

/// The comparison's tables by name.
pub(crate) fn tables(d: &Diff) -> PyResult<Vec<(&'static str, Table)>> {
    let of = [&d.top, &d.locations, &d.waiting, &d.regions, &d.paths, &d.collectives, &d.pairs];
    NAMES.iter().zip(of).map(|(&n, rows)| Ok((n, Table::from_batch(batch(rows)?)))).collect()
}
