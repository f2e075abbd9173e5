//! The store's tables: their columns and types, and columns of a dataset as Arrow arrays.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// The type of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    U32,
    U64,
    F64,
    Str,
}

impl Kind {
    pub(super) fn arrow(self) -> DataType {
        match self {
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::F64 => DataType::Float64,
            Kind::Str => DataType::Utf8,
        }
    }
}

/// A table of the layout: its name and columns.
#[derive(Debug)]
pub(super) struct Table {
    pub(super) name: &'static str,
    pub(super) columns: Vec<(String, Kind)>,
}

impl Table {
    pub(super) fn of(name: &'static str, columns: &[(&str, Kind)]) -> Self {
        Self { name, columns: columns.iter().map(|&(n, k)| (n.to_string(), k)).collect() }
    }

    pub(super) fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.columns.iter().map(|(n, k)| Field::new(n, k.arrow(), false)).collect::<Vec<_>>()))
    }

    pub(super) fn file(&self) -> String {
        format!("{}.parquet", self.name)
    }
}

pub(super) use Kind::{F64, Str, U32, U64};

pub(super) fn locations_table() -> Table {
    Table::of("locations", &[("location", U32), ("name", Str), ("node", U32), ("kind", U32)])
}
pub(super) fn names_table(name: &'static str, id: &str) -> Table {
    Table::of(name, &[(id, U32), ("name", Str)])
}
pub(super) fn intervals_table() -> Table {
    Table::of("intervals", &[("location", U32), ("start", U64), ("end", U64), ("region", U32), ("depth", U32)])
}
pub(super) fn messages_table() -> Table {
    Table::of(
        "messages",
        &[("source", U32), ("destination", U32), ("send_time", U64), ("recv_time", U64), ("bytes", U32), ("tag", U32)],
    )
}
pub(super) fn collectives_table() -> Table {
    Table::of(
        "collectives",
        &[("location", U32), ("start", U64), ("end", U64), ("op", U32), ("root", U32), ("bytes", U32)],
    )
}
pub(super) fn counters_table(name: &'static str, entity: &str) -> Table {
    Table::of(name, &[(entity, U32), ("time", U64), ("value", U32)])
}
/// Each metric's unit and whether it accumulates (absent from stores written before it: then
/// none has a unit).
pub(super) fn metric_units_table() -> Table {
    Table::of("metric_units", &[("metric", U32), ("unit", Str), ("accumulated", U32)])
}
pub(super) fn metrics_table() -> Table {
    Table::of("metrics", &[("location", U32), ("time", U64), ("metric", U32), ("value", F64)])
}
/// Instant events of every scope (`scope` [`exaviz_model::InstantScope::code`]; `location`
/// 4294967295 for one on no row).
pub(super) fn instants_table() -> Table {
    Table::of(
        "instants",
        &[("location", U32), ("time", U64), ("region", U32), ("scope", U32), ("category", U32), ("args", U32)],
    )
}
pub(super) fn nodes_table(dims: usize) -> Table {
    let mut t = Table::of("nodes", &[("node", U32), ("group", U32)]);
    t.columns.extend((0..dims).map(|d| (format!("d{d}"), U32)));
    t
}
pub(super) fn links_table() -> Table {
    Table::of("links", &[("source", U32), ("destination", U32), ("dimension", U32)])
}
pub(super) fn pyramid_messages_table() -> Table {
    Table::of(
        "pyramid_messages",
        &[("level", U32), ("sender_block", U32), ("receiver_block", U32), ("bin", U32), ("count", U64), ("bytes", U64)],
    )
}
pub(super) fn pyramid_states_table() -> Table {
    Table::of("pyramid_states", &[("level", U32), ("block", U32), ("state", U32), ("bin", U32), ("ticks", U64)])
}
pub(super) fn pyramid_locations_table() -> Table {
    Table::of("pyramid_locations", &[("location", U32), ("state", U32), ("bin", U32), ("ticks", U64)])
}
pub(super) fn pyramid_pairs_table() -> Table {
    Table::of(
        "pyramid_pairs",
        &[("source", U32), ("destination", U32), ("bins", U32), ("bin", U32), ("count", U64), ("bytes", U64)],
    )
}
pub(super) fn pyramid_lines_table() -> Table {
    Table::of("pyramid_lines", &[("block", U32), ("bin", U32), ("lines", U64), ("gradient", U64)])
}

/// A column to write: borrowed slices of the model.
#[derive(Clone, Copy)]
pub(super) enum Col<'a> {
    U32(&'a [u32]),
    U64(&'a [u64]),
    F64(&'a [f64]),
    Str(&'a [String]),
}

impl Col<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Col::U32(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::F64(v) => v.len(),
            Col::Str(v) => v.len(),
        }
    }

    /// Rows `order[range]` of the column (all rows in order when `order` is `None`).
    pub(super) fn array(&self, order: Option<&[u32]>, range: std::ops::Range<usize>) -> ArrayRef {
        fn pick<T: Copy>(v: &[T], order: Option<&[u32]>, range: std::ops::Range<usize>) -> Vec<T> {
            match order {
                Some(o) => o[range].iter().map(|&i| v[i as usize]).collect(),
                None => v[range].to_vec(),
            }
        }
        match *self {
            Col::U32(v) => Arc::new(UInt32Array::from(pick(v, order, range))),
            Col::U64(v) => Arc::new(UInt64Array::from(pick(v, order, range))),
            Col::F64(v) => Arc::new(Float64Array::from(pick(v, order, range))),
            Col::Str(v) => {
                let rows: Vec<&str> = match order {
                    Some(o) => o[range].iter().map(|&i| v[i as usize].as_str()).collect(),
                    None => v[range].iter().map(String::as_str).collect(),
                };
                Arc::new(StringArray::from(rows))
            }
        }
    }
}
