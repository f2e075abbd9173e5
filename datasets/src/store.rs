//! The exaviz store: a trace and its topology as a folder of Apache Parquet files, one per
//! table, that DuckDB, Polars, Spark and pandas read as they are.
//!
//! ```text
//! NAME.exaviz/
//!   exaviz-store.json    manifest: schema version, name, clock, table row counts, sort order
//!   locations.parquet    location u32, name utf8, node u32 (4294967295: unknown)
//!   regions.parquet      region u32, name utf8
//!   intervals.parquet    location u32, start u64, end u64, region u32, depth u32   (by start)
//!   messages.parquet     source u32, destination u32, send_time u64, recv_time u64,
//!                        bytes u32, tag u32                                       (by send_time)
//!   collective_ops.parquet  op u32, name utf8
//!   collectives.parquet  location u32, start u64, end u64, op u32, root u32, bytes u32 (by start)
//!   location_counters.parquet  location u32, time u64, value u32                 (by time)
//!   link_counters.parquet      link u32, time u64, value u32                      (by time)
//!   metric_names.parquet       metric u32, name utf8
//!   metrics.parquet      location u32, time u64, metric u32, value u64            (by time)
//!   nodes.parquet        node u32, group u32, d0 u32, d1 u32, ... (one per dimension)
//!   links.parquet        source u32, destination u32, dimension u32
//!   pyramid_messages.parquet  level u32, sender_block u32, receiver_block u32, bin u32,
//!                             count u64, bytes u64                  (non-zero cells)
//!   pyramid_states.parquet    level u32, block u32, state u32, bin u32, ticks u64
//!   pyramid_lines.parquet     block u32, bin u32, lines u64, gradient u64
//! ```
//!
//! The pyramid tables hold the non-zero cells of [`exaviz_engine::pyramid::Pyramid`], whose
//! shape follows from the span in the manifest.
//!
//! Times are ticks of the trace clock (`ticks_per_second` in the manifest). Event tables are
//! written in row groups of [`ROW_GROUP`] rows sorted by time, with min/max statistics per row
//! group, so a reader of a time window skips the row groups outside it. Every file carries
//! `exaviz.schema_version` in its key-value metadata.
//!
//! A store is written under a temporary name beside its final one and renamed when complete: an
//! interrupted or failed write leaves nothing under the final name.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use exaviz_engine::model::{
    Collectives, Counters, Dataset, Intervals, Links, Locations, Messages, MetricSamples, OutOfCore, Topology, Trace,
};
use exaviz_engine::pyramid::{Pyramid, PyramidBuilder, Shape};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::SourceError;

mod rows;

/// The version of the layout above; a store of another version is refused with a hint.
pub const SCHEMA_VERSION: u32 = 1;
/// The manifest's file name, which marks a folder as a store.
pub const MANIFEST: &str = "exaviz-store.json";
/// Rows per row group of the event tables.
pub const ROW_GROUP: usize = 1 << 20;
/// Largest column chunk a reader accepts (uncompressed): a writer of this layout never makes one
/// above 8 MiB (a row group of `u64`s).
const MAX_CHUNK_BYTES: i64 = 256 << 20;

/// The type of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    U32,
    U64,
    Str,
}

impl Kind {
    fn arrow(self) -> DataType {
        match self {
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::Str => DataType::Utf8,
        }
    }
}

/// A table of the layout: its name and columns.
#[derive(Debug)]
struct Table {
    name: &'static str,
    columns: Vec<(String, Kind)>,
}

impl Table {
    fn of(name: &'static str, columns: &[(&str, Kind)]) -> Self {
        Self { name, columns: columns.iter().map(|&(n, k)| (n.to_string(), k)).collect() }
    }

    fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.columns.iter().map(|(n, k)| Field::new(n, k.arrow(), false)).collect::<Vec<_>>()))
    }

    fn file(&self) -> String {
        format!("{}.parquet", self.name)
    }
}

use Kind::{Str, U32, U64};

fn locations_table() -> Table {
    Table::of("locations", &[("location", U32), ("name", Str), ("node", U32)])
}
fn names_table(name: &'static str, id: &str) -> Table {
    Table::of(name, &[(id, U32), ("name", Str)])
}
fn intervals_table() -> Table {
    Table::of("intervals", &[("location", U32), ("start", U64), ("end", U64), ("region", U32), ("depth", U32)])
}
fn messages_table() -> Table {
    Table::of(
        "messages",
        &[("source", U32), ("destination", U32), ("send_time", U64), ("recv_time", U64), ("bytes", U32), ("tag", U32)],
    )
}
fn collectives_table() -> Table {
    Table::of(
        "collectives",
        &[("location", U32), ("start", U64), ("end", U64), ("op", U32), ("root", U32), ("bytes", U32)],
    )
}
fn counters_table(name: &'static str, entity: &str) -> Table {
    Table::of(name, &[(entity, U32), ("time", U64), ("value", U32)])
}
fn metrics_table() -> Table {
    Table::of("metrics", &[("location", U32), ("time", U64), ("metric", U32), ("value", U64)])
}
fn nodes_table(dims: usize) -> Table {
    let mut t = Table::of("nodes", &[("node", U32), ("group", U32)]);
    t.columns.extend((0..dims).map(|d| (format!("d{d}"), U32)));
    t
}
fn links_table() -> Table {
    Table::of("links", &[("source", U32), ("destination", U32), ("dimension", U32)])
}
fn pyramid_messages_table() -> Table {
    Table::of(
        "pyramid_messages",
        &[("level", U32), ("sender_block", U32), ("receiver_block", U32), ("bin", U32), ("count", U64), ("bytes", U64)],
    )
}
fn pyramid_states_table() -> Table {
    Table::of("pyramid_states", &[("level", U32), ("block", U32), ("state", U32), ("bin", U32), ("ticks", U64)])
}
fn pyramid_lines_table() -> Table {
    Table::of("pyramid_lines", &[("block", U32), ("bin", U32), ("lines", U64), ("gradient", U64)])
}

/// A column to write: borrowed slices of the model.
#[derive(Clone, Copy)]
enum Col<'a> {
    U32(&'a [u32]),
    U64(&'a [u64]),
    Str(&'a [String]),
}

impl Col<'_> {
    fn len(&self) -> usize {
        match self {
            Col::U32(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::Str(v) => v.len(),
        }
    }

    /// Rows `order[range]` of the column (all rows in order when `order` is `None`).
    fn array(&self, order: Option<&[u32]>, range: std::ops::Range<usize>) -> ArrayRef {
        fn pick<T: Copy>(v: &[T], order: Option<&[u32]>, range: std::ops::Range<usize>) -> Vec<T> {
            match order {
                Some(o) => o[range].iter().map(|&i| v[i as usize]).collect(),
                None => v[range].to_vec(),
            }
        }
        match *self {
            Col::U32(v) => Arc::new(UInt32Array::from(pick(v, order, range))),
            Col::U64(v) => Arc::new(UInt64Array::from(pick(v, order, range))),
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

/// What the manifest records.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    pub schema_version: u32,
    pub name: String,
    pub ticks_per_second: u64,
    pub link_counter_unit: String,
    /// Extents of the topology's dimensions; `None`: the store has no topology.
    pub extents: Option<Vec<u32>>,
    /// Rows of each table, in the layout's order.
    pub rows: Vec<(String, u64)>,
    /// Whether each event table is sorted by its time column.
    pub sorted: Vec<(String, bool)>,
    /// First and last time stamp in ticks over every event table (`None`: no events).
    pub time_span: Option<(u64, u64)>,
    /// What the pyramid tables cover (`None`: the store has none).
    pub pyramid: Option<PyramidSpan>,
}

/// What a stored pyramid covers; its shape is [`Shape::new`] of these, never read from a file.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct PyramidSpan {
    pub t0: u64,
    pub t1: u64,
    pub ranks: u32,
    pub states: u32,
}

impl PyramidSpan {
    pub fn shape(&self) -> Shape {
        Shape::new(self.t0, self.t1, self.ranks, self.states)
    }
}

impl Manifest {
    pub fn rows(&self, table: &str) -> u64 {
        self.rows.iter().find(|(t, _)| t == table).map_or(0, |r| r.1)
    }
}

fn io(path: &Path, source: std::io::Error) -> SourceError {
    SourceError::Io { input: path.display().to_string(), source }
}

fn invalid(path: &Path, message: impl Into<String>) -> SourceError {
    SourceError::invalid(path.display().to_string(), message)
}

/// Whether `path` is a folder holding a store manifest.
pub fn is_store(path: &Path) -> bool {
    path.join(MANIFEST).is_file()
}

/// A table being written.
struct OpenTable {
    name: String,
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    rows: u64,
    sorted: bool,
    /// The last time written (for the sort flag across batches).
    last_time: Option<u64>,
}

/// Writes tables into a temporary folder and renames it into place when finished. Several
/// tables may be open at once (a generator streams messages, intervals and collectives side by
/// side).
pub struct StoreWriter {
    target: PathBuf,
    temp: PathBuf,
    tables: Vec<OpenTable>,
    span: Option<(u64, u64)>,
    /// The pyramid, summed from the messages and intervals as they are written.
    pyramid: Option<(PyramidSpan, PyramidBuilder)>,
}

fn properties(table: &str) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_key_value_metadata(Some(vec![
            KeyValue::new("exaviz.schema_version".to_string(), SCHEMA_VERSION.to_string()),
            KeyValue::new("exaviz.table".to_string(), table.to_string()),
        ]))
        .build()
}

impl StoreWriter {
    /// Starts a store to be renamed to `target` when finished. An existing store there is
    /// replaced then; anything else there is refused now.
    pub fn create(target: &Path) -> Result<Self, SourceError> {
        if target.exists() && !is_store(target) {
            return Err(invalid(target, "exists and is not an exaviz store; choose another name"));
        }
        let name = target.file_name().ok_or_else(|| invalid(target, "is not a folder name"))?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = parent.join(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id()));
        if temp.exists() {
            std::fs::remove_dir_all(&temp).map_err(|e| io(&temp, e))?;
        }
        std::fs::create_dir_all(&temp).map_err(|e| io(&temp, e))?;
        Ok(Self { target: target.to_path_buf(), temp, tables: Vec::new(), span: None, pyramid: None })
    }

    /// Sums a pyramid over `span` from the messages and intervals written from now on.
    pub fn with_pyramid(mut self, span: PyramidSpan) -> Self {
        self.pyramid = Some((span, PyramidBuilder::new(span.shape())));
        self
    }

    fn has(&self, table: &str) -> bool {
        self.tables.iter().any(|t| t.name == table)
    }

    fn begin(&mut self, table: &Table) -> Result<(), SourceError> {
        let path = self.temp.join(table.file());
        if self.has(table.name) {
            return Err(invalid(&path, "table begun twice"));
        }
        let file = File::create(&path).map_err(|e| io(&path, e))?;
        let schema = table.schema();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(properties(table.name)))
            .map_err(|e| invalid(&path, e.to_string()))?;
        self.tables.push(OpenTable {
            name: table.name.to_string(),
            writer,
            schema,
            rows: 0,
            sorted: true,
            last_time: None,
        });
        Ok(())
    }

    /// Appends rows to table `name`; `time` is its time column, for the sort flag and span.
    fn append(
        &mut self,
        name: &str,
        cols: &[Col<'_>],
        order: Option<&[u32]>,
        time: Option<&[u64]>,
    ) -> Result<(), SourceError> {
        let path = self.temp.join(format!("{name}.parquet"));
        let Some(t) = self.tables.iter_mut().find(|t| t.name == name) else {
            return Err(invalid(&path, "table written before it was begun"));
        };
        let n = order.map_or_else(|| cols.first().map_or(0, Col::len), <[u32]>::len);
        if let Some(times) = time {
            let each = |i: usize| times[order.map_or(i, |o| o[i] as usize)];
            if n > 0 {
                let (first, last) = (each(0), each(n - 1));
                t.sorted &= t.last_time.is_none_or(|l| l <= first) && (1..n).all(|i| each(i - 1) <= each(i));
                t.last_time = Some(last);
                let (lo, hi) = (0..n).map(each).fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
                self.span = Some(self.span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        for start in (0..n).step_by(ROW_GROUP) {
            let range = start..(start + ROW_GROUP).min(n);
            let arrays: Vec<ArrayRef> = cols.iter().map(|c| c.array(order, range.clone())).collect();
            let batch = RecordBatch::try_new(t.schema.clone(), arrays).map_err(|e| invalid(&path, e.to_string()))?;
            t.writer.write(&batch).map_err(|e| invalid(&path, e.to_string()))?;
        }
        t.rows += n as u64;
        Ok(())
    }

    /// Starts the messages table; then call [`Self::messages`] with batches in time order.
    pub fn begin_messages(&mut self) -> Result<(), SourceError> {
        self.begin(&messages_table())
    }

    /// Appends messages (to the table begun by [`Self::begin_messages`]), sorted by send time
    /// within the batch.
    pub fn messages(&mut self, m: &Messages) -> Result<(), SourceError> {
        if let Some((_, p)) = &mut self.pyramid {
            p.add_messages(m);
        }
        let order = time_order(&m.send_time);
        let cols = [
            Col::U32(&m.source),
            Col::U32(&m.destination),
            Col::U64(&m.send_time),
            Col::U64(&m.recv_time),
            Col::U32(&m.bytes),
            Col::U32(&m.tag),
        ];
        self.append("messages", &cols, order.as_deref(), Some(&m.send_time))?;
        self.widen(&m.recv_time);
        Ok(())
    }

    /// Widens the span to the end times `ends` (receive times: `u64::MAX` is never received).
    fn widen(&mut self, ends: &[u64]) {
        if let Some(hi) = ends.iter().copied().filter(|&v| v != u64::MAX).max() {
            self.span = Some(self.span.map_or((hi, hi), |(a, b)| (a.min(hi), b.max(hi))));
        }
    }

    /// Starts the intervals table; then call [`Self::intervals`] with batches in time order.
    pub fn begin_intervals(&mut self) -> Result<(), SourceError> {
        self.begin(&intervals_table())
    }

    /// Appends intervals, sorted by start within the batch.
    pub fn intervals(&mut self, v: &Intervals) -> Result<(), SourceError> {
        if let Some((_, p)) = &mut self.pyramid {
            p.add_intervals(v);
        }
        let order = time_order(&v.start);
        let cols = [Col::U32(&v.location), Col::U64(&v.start), Col::U64(&v.end), Col::U32(&v.kind), Col::U32(&v.depth)];
        self.append("intervals", &cols, order.as_deref(), Some(&v.start))?;
        self.widen(&v.end);
        Ok(())
    }

    /// Starts the collectives table; then call [`Self::collectives`] with batches in time order.
    pub fn begin_collectives(&mut self) -> Result<(), SourceError> {
        self.begin(&collectives_table())
    }

    /// Appends collective rows, sorted by start within the batch.
    pub fn collectives(&mut self, c: &Collectives) -> Result<(), SourceError> {
        let order = time_order(&c.start);
        let cols = [
            Col::U32(&c.location),
            Col::U64(&c.start),
            Col::U64(&c.end),
            Col::U32(&c.op),
            Col::U32(&c.root),
            Col::U32(&c.bytes),
        ];
        self.append("collectives", &cols, order.as_deref(), Some(&c.start))
    }

    /// Writes every table of `d` but those already begun (messages, intervals and collectives
    /// may have been streamed), then the manifest, and renames the store into place.
    pub fn finish(mut self, d: &Dataset) -> Result<Manifest, SourceError> {
        let t = &d.trace;
        let ids = |n: usize| -> Vec<u32> { (0..n as u32).collect() };
        self.begin(&locations_table())?;
        let loc_ids = ids(t.locations.name.len());
        let cols = [Col::U32(&loc_ids), Col::Str(&t.locations.name), Col::U32(&t.locations.node)];
        self.append("locations", &cols, None, None)?;
        for (table, id, names) in [
            ("regions", "region", &t.region_names),
            ("collective_ops", "op", &t.collective_names),
            ("metric_names", "metric", &t.metric_names),
        ] {
            self.begin(&names_table(table, id))?;
            self.append(table, &[Col::U32(&ids(names.len())), Col::Str(names)], None, None)?;
        }
        if !self.has("intervals") {
            self.begin_intervals()?;
            self.intervals(&t.intervals)?;
        }
        if !self.has("messages") {
            self.begin_messages()?;
            self.messages(&t.messages)?;
        }
        if !self.has("collectives") {
            self.begin_collectives()?;
            self.collectives(&t.collectives)?;
        }
        for (table, entity, c) in
            [("location_counters", "location", &t.location_counters), ("link_counters", "link", &t.link_counters)]
        {
            self.begin(&counters_table(table, entity))?;
            let order = time_order(&c.time);
            let cols = [Col::U32(&c.entity), Col::U64(&c.time), Col::U32(&c.value)];
            self.append(table, &cols, order.as_deref(), Some(&c.time))?;
        }
        let m = &t.metrics;
        self.begin(&metrics_table())?;
        let order = time_order(&m.time);
        let cols = [Col::U32(&m.location), Col::U64(&m.time), Col::U32(&m.metric), Col::U64(&m.value)];
        self.append("metrics", &cols, order.as_deref(), Some(&m.time))?;
        if let Some(topo) = &d.topology {
            let dims = topo.dims();
            let n = topo.node_count();
            let node_ids = ids(n);
            let per_dim: Vec<Vec<u32>> =
                (0..dims).map(|k| (0..n).map(|i| topo.coords[i * dims + k]).collect()).collect();
            let mut group = topo.group.clone();
            group.resize(n, u32::MAX);
            let mut cols = vec![Col::U32(&node_ids), Col::U32(&group)];
            cols.extend(per_dim.iter().map(|v| Col::U32(v)));
            self.begin(&nodes_table(dims))?;
            self.append("nodes", &cols, None, None)?;
            let l = &topo.links;
            self.begin(&links_table())?;
            self.append("links", &[Col::U32(&l.source), Col::U32(&l.destination), Col::U32(&l.dimension)], None, None)?;
        }
        let pyramid = self.pyramid.take().map(|(span, b)| (span, b.finish()));
        if let Some((_, p)) = &pyramid {
            self.write_pyramid(p)?;
        }
        let mut rows = Vec::new();
        let mut sorted = Vec::new();
        for (name, n, flag) in self.close_tables()? {
            if let Some(f) = flag {
                sorted.push((name.clone(), f));
            }
            rows.push((name, n));
        }
        let manifest = Manifest {
            format: "exaviz-store".into(),
            schema_version: SCHEMA_VERSION,
            name: d.name.clone(),
            ticks_per_second: t.ticks_per_second,
            link_counter_unit: d.link_counter_unit.clone(),
            extents: d.topology.as_ref().map(|t| t.extents.clone()),
            rows,
            sorted,
            time_span: self.span,
            pyramid: pyramid.map(|p| p.0),
        };
        let path = self.temp.join(MANIFEST);
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| invalid(&path, e.to_string()))?;
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        self.commit()?;
        Ok(manifest)
    }

    /// Writes the pyramid's non-zero cells, level by level.
    fn write_pyramid(&mut self, p: &Pyramid) -> Result<(), SourceError> {
        self.begin(&pyramid_messages_table())?;
        self.begin(&pyramid_states_table())?;
        let states = p.shape.states;
        for (k, lvl) in p.levels.iter().enumerate() {
            let mut c: [Vec<u32>; 4] = Default::default();
            let (mut count, mut bytes) = (Vec::new(), Vec::new());
            let (mb, bins) = (lvl.message_blocks, lvl.message_bins);
            for (cell, (&n, &b)) in lvl.counts.iter().zip(&lvl.bytes).enumerate() {
                if n > 0 {
                    let cell = cell as u32;
                    c[0].push(k as u32);
                    c[1].push(cell / bins / mb);
                    c[2].push(cell / bins % mb);
                    c[3].push(cell % bins);
                    count.push(n);
                    bytes.push(b);
                }
            }
            let cols = [
                Col::U32(&c[0]),
                Col::U32(&c[1]),
                Col::U32(&c[2]),
                Col::U32(&c[3]),
                Col::U64(&count),
                Col::U64(&bytes),
            ];
            self.append("pyramid_messages", &cols, None, None)?;
            let mut c: [Vec<u32>; 4] = Default::default();
            let mut ticks = Vec::new();
            let bins = lvl.state_bins;
            for (cell, &t) in lvl.ticks.iter().enumerate() {
                if t > 0 {
                    let cell = cell as u32;
                    c[0].push(k as u32);
                    c[1].push(cell / bins / states);
                    c[2].push(cell / bins % states);
                    c[3].push(cell % bins);
                    ticks.push(t);
                }
            }
            let cols = [Col::U32(&c[0]), Col::U32(&c[1]), Col::U32(&c[2]), Col::U32(&c[3]), Col::U64(&ticks)];
            self.append("pyramid_states", &cols, None, None)?;
        }
        if let Some(lines) = &p.lines {
            self.begin(&pyramid_lines_table())?;
            let (mut block, mut bin, mut count, mut gradient) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (cell, (&n, &g)) in lines.counts.iter().zip(&lines.gradient).enumerate() {
                if n > 0 {
                    block.push(cell as u32 % lines.blocks);
                    bin.push(cell as u32 / lines.blocks);
                    count.push(n);
                    gradient.push(g);
                }
            }
            let cols = [Col::U32(&block), Col::U32(&bin), Col::U64(&count), Col::U64(&gradient)];
            self.append("pyramid_lines", &cols, None, None)?;
        }
        Ok(())
    }

    /// Closes every open table: (name, rows, whether sorted by time for the event tables).
    fn close_tables(&mut self) -> Result<Vec<(String, u64, Option<bool>)>, SourceError> {
        let mut out = Vec::new();
        for table in std::mem::take(&mut self.tables) {
            let path = self.temp.join(format!("{}.parquet", table.name));
            table.writer.close().map_err(|e| invalid(&path, e.to_string()))?;
            let event = table.last_time.is_some() || EVENT_TABLES.contains(&table.name.as_str());
            out.push((table.name, table.rows, event.then_some(table.sorted)));
        }
        Ok(out)
    }

    /// Renames the finished folder into place (replacing an older store there).
    fn commit(&mut self) -> Result<(), SourceError> {
        if self.target.exists() {
            let old = self.temp.with_extension("old");
            std::fs::rename(&self.target, &old).map_err(|e| io(&self.target, e))?;
            std::fs::rename(&self.temp, &self.target).map_err(|e| io(&self.target, e))?;
            std::fs::remove_dir_all(&old).map_err(|e| io(&old, e))?;
        } else {
            std::fs::rename(&self.temp, &self.target).map_err(|e| io(&self.target, e))?;
        }
        Ok(())
    }
}

/// Tables sorted by their time column.
const EVENT_TABLES: [&str; 6] =
    ["intervals", "messages", "collectives", "location_counters", "link_counters", "metrics"];

impl Drop for StoreWriter {
    /// A store never finished (an error, a panic) leaves no partial folder behind.
    fn drop(&mut self) {
        if self.temp.exists() {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// The permutation sorting `times` (stable), or `None` when they are sorted already.
fn time_order(times: &[u64]) -> Option<Vec<u32>> {
    if times.windows(2).all(|w| w[0] <= w[1]) {
        return None;
    }
    let mut order: Vec<u32> = (0..times.len() as u32).collect();
    order.sort_by_key(|&i| times[i as usize]);
    Some(order)
}

/// Writes `dataset` as a store at `target` (through a temporary folder), with its pyramid.
pub fn write(dataset: &Dataset, target: &Path) -> Result<Manifest, SourceError> {
    let mut w = StoreWriter::create(target)?;
    if let Some(span) = pyramid_span(dataset) {
        w = w.with_pyramid(span);
    }
    w.finish(dataset)
}

/// The span of `dataset`'s pyramid: its messages' and intervals' times, ranks and states
/// (`None` without either).
pub fn pyramid_span(d: &Dataset) -> Option<PyramidSpan> {
    let t = &d.trace;
    let times = t.messages.send_time.iter().chain(&t.intervals.start).chain(&t.intervals.end);
    let (t0, t1) =
        times.fold(None, |acc: Option<(u64, u64)>, &v| Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v)))))?;
    let ranks = u32::try_from(t.locations.name.len()).ok().filter(|&r| r > 0)?;
    Some(PyramidSpan { t0, t1, ranks, states: t.region_names.len().clamp(1, 64) as u32 })
}

/// Sums the pyramid of `store` from its rows, streamed in batches (a store written without one,
/// or one to sum again), and adds it to the store: its tables are written into a temporary
/// folder inside the store, moved into place, and the manifest is replaced last, so an
/// interrupted run leaves the store as it was or with a stale pyramid its reader refuses.
/// Reports `progress(rows done, rows)`.
pub fn add_pyramid(store: &Path, progress: &dyn Fn(u64, u64)) -> Result<(Manifest, PyramidTimes), SourceError> {
    let (span, p, times) = sum_pyramid(store, progress)?;
    let path = store.join(MANIFEST);
    let mut m = manifest(store)?;
    let mut w = StoreWriter::create(&store.join(".pyramid"))?;
    w.write_pyramid(&p)?;
    let written: Vec<(String, u64)> = w.close_tables()?.into_iter().map(|(name, n, _)| (name, n)).collect();
    for (name, _) in &written {
        let (from, to) = (w.temp.join(format!("{name}.parquet")), store.join(format!("{name}.parquet")));
        std::fs::rename(&from, &to).map_err(|e| io(&to, e))?;
    }
    m.rows.retain(|(t, _)| !written.iter().any(|(w, _)| w == t));
    m.rows.extend(written);
    m.pyramid = Some(span);
    let text = serde_json::to_string_pretty(&m).map_err(|e| invalid(&path, e.to_string()))?;
    let temp = w.temp.join(MANIFEST);
    std::fs::write(&temp, text).map_err(|e| io(&temp, e))?;
    std::fs::rename(&temp, &path).map_err(|e| io(&path, e))?;
    Ok((m, times))
}

/// Seconds spent by [`sum_pyramid`] reading and summing the messages, then the intervals.
#[derive(Clone, Copy, Debug, Default)]
pub struct PyramidTimes {
    pub messages_s: f64,
    pub intervals_s: f64,
    /// Of both, the seconds spent summing (the rest decodes the files).
    pub summing_s: f64,
}

/// The pyramid of `store` summed from its rows, streamed in batches, without writing anything.
pub fn sum_pyramid(
    store: &Path,
    progress: &dyn Fn(u64, u64),
) -> Result<(PyramidSpan, Pyramid, PyramidTimes), SourceError> {
    let m = manifest(store)?;
    let path = store.join(MANIFEST);
    let ranks = u32::try_from(m.rows("locations"))
        .ok()
        .filter(|&r| r > 0)
        .ok_or_else(|| invalid(&path, "holds no processes (locations) to sum a pyramid over"))?;
    let regions = u32::try_from(m.rows("regions")).unwrap_or(u32::MAX);
    let rows = rows::StoreRows::new(store, (m.rows("messages"), m.rows("intervals")), ranks, regions)?;
    let (t0, t1) = rows.span().ok_or_else(|| invalid(&path, "holds no messages or intervals to sum"))?;
    let span = PyramidSpan { t0, t1, ranks, states: regions.clamp(1, 64) };
    let mut b = PyramidBuilder::new(span.shape());
    let started = std::time::Instant::now();
    let mut times = PyramidTimes::default();
    rows.each(progress, &mut |batch| match batch {
        rows::Batch::Messages(m) => {
            let t = std::time::Instant::now();
            b.add_messages(&m);
            times.summing_s += t.elapsed().as_secs_f64();
        }
        rows::Batch::Intervals(i) => {
            if times.messages_s == 0.0 {
                times.messages_s = started.elapsed().as_secs_f64();
            }
            let t = std::time::Instant::now();
            b.add_intervals(&i);
            times.summing_s += t.elapsed().as_secs_f64();
        }
    })?;
    let p = b.finish();
    let total = started.elapsed().as_secs_f64();
    if times.messages_s == 0.0 {
        times.messages_s = total;
    }
    times.intervals_s = total - times.messages_s;
    Ok((span, p, times))
}

/// Reads a store's pyramid (`Ok(None)` where it has none).
pub fn pyramid(store: &Path) -> Result<Option<Pyramid>, SourceError> {
    let m = manifest(store)?;
    let Some(span) = m.pyramid else { return Ok(None) };
    if span.ranks == 0 || span.t1 < span.t0 || span.states == 0 {
        return Err(invalid(&store.join(MANIFEST), "pyramid span is impossible: re-run exaviz convert"));
    }
    let empty = PyramidBuilder::new(span.shape()).finish();
    let (mut levels, mut lines) = (empty.levels, empty.lines);
    let mut c = read_table(store, &pyramid_messages_table(), m.rows("pyramid_messages"))?;
    let (lv, s, r, bin, count, bytes) = (
        take_u32(&mut c, 0),
        take_u32(&mut c, 1),
        take_u32(&mut c, 2),
        take_u32(&mut c, 3),
        take_u64(&mut c, 4),
        take_u64(&mut c, 5),
    );
    let bad = |t: &str| {
        invalid(&store.join(format!("{t}.parquet")), "a cell lies outside the pyramid: re-run exaviz convert")
    };
    for i in 0..lv.len() {
        let l = levels.get_mut(lv[i] as usize).ok_or_else(|| bad("pyramid_messages"))?;
        if s[i] >= l.message_blocks || r[i] >= l.message_blocks || bin[i] >= l.message_bins {
            return Err(bad("pyramid_messages"));
        }
        let cell = ((s[i] * l.message_blocks + r[i]) * l.message_bins + bin[i]) as usize;
        l.counts[cell] = count[i];
        l.bytes[cell] = bytes[i];
    }
    let mut c = read_table(store, &pyramid_states_table(), m.rows("pyramid_states"))?;
    let (lv, b, st, bin, ticks) =
        (take_u32(&mut c, 0), take_u32(&mut c, 1), take_u32(&mut c, 2), take_u32(&mut c, 3), take_u64(&mut c, 4));
    for i in 0..lv.len() {
        let l = levels.get_mut(lv[i] as usize).ok_or_else(|| bad("pyramid_states"))?;
        if b[i] >= l.blocks || st[i] >= span.states || bin[i] >= l.state_bins {
            return Err(bad("pyramid_states"));
        }
        l.ticks[((b[i] * span.states + st[i]) * l.state_bins + bin[i]) as usize] = ticks[i];
    }
    if m.rows.iter().any(|(t, _)| t == "pyramid_lines")
        && let Some(l) = &mut lines
    {
        let mut c = read_table(store, &pyramid_lines_table(), m.rows("pyramid_lines"))?;
        let (b, bin, n, g) = (take_u32(&mut c, 0), take_u32(&mut c, 1), take_u64(&mut c, 2), take_u64(&mut c, 3));
        for i in 0..b.len() {
            if b[i] >= l.blocks || bin[i] >= l.bins {
                return Err(bad("pyramid_lines"));
            }
            let cell = l.cell(bin[i], b[i]);
            l.counts[cell] = n[i];
            l.gradient[cell] = g[i];
        }
    } else {
        lines = None;
    }
    Ok(Some(Pyramid { shape: span.shape(), levels, lines }))
}

/// Reads a store's manifest and checks its version.
pub fn manifest(store: &Path) -> Result<Manifest, SourceError> {
    let path = store.join(MANIFEST);
    let meta = std::fs::metadata(&path).map_err(|e| io(&path, e))?;
    if meta.len() > 1 << 20 {
        return Err(invalid(&path, "manifest larger than 1 MiB: not an exaviz store manifest"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
    let version = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema_version").and_then(serde_json::Value::as_u64));
    if let Some(v) = version
        && v != u64::from(SCHEMA_VERSION)
    {
        return Err(invalid(
            &path,
            format!("store of schema version {v}; this exaviz reads version {SCHEMA_VERSION}: re-run exaviz convert"),
        ));
    }
    let m: Manifest = serde_json::from_str(&text)
        .map_err(|e| invalid(&path, format!("not an exaviz store manifest ({e}): re-run exaviz convert")))?;
    if m.format != "exaviz-store" {
        return Err(invalid(&path, format!("format '{}' is not exaviz-store", m.format)));
    }
    Ok(m)
}

/// Columns read from one table.
enum Owned {
    U32(Vec<u32>),
    U64(Vec<u64>),
    Str(Vec<String>),
}

thread_local! {
    /// Set while this thread decodes a Parquet file under [`guarded`]: its panics stay silent.
    static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs a Parquet decode, turning a panic inside the parquet crate into an error naming `path`.
///
/// The checks in [`read_table`] catch what they can before decoding (sizes, offsets, schema,
/// row counts), but the decoder asserts on some damage no reader can see from the metadata (a
/// data page naming a dictionary the chunk lacks): a damaged file must give one line and no
/// panic, so the decode runs under `catch_unwind` with the panic message kept off the terminal.
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T, SourceError>) -> Result<T, SourceError> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !DECODING.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    DECODING.with(|d| d.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    DECODING.with(|d| d.set(false));
    result.unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown damage".into());
        let why = why.lines().next().unwrap_or_default().to_string();
        Err(invalid(path, format!("corrupt Parquet file ({why}): re-run exaviz convert")))
    })
}

/// Reads every row of one table, checking its schema, version and row count.
fn read_table(store: &Path, table: &Table, expect_rows: u64) -> Result<Vec<Owned>, SourceError> {
    let path = store.join(table.file());
    guarded(&path, || read_table_unguarded(&path, table, expect_rows))
}

fn read_table_unguarded(path: &Path, table: &Table, expect_rows: u64) -> Result<Vec<Owned>, SourceError> {
    let builder = checked(path, table, expect_rows)?;
    decode(path, table, builder, None, expect_rows)
}

/// A reader of one table's file after every check that the metadata allows: schema version,
/// row count against the manifest, column chunks within the file, column names and types.
fn checked(path: &Path, table: &Table, expect_rows: u64) -> Result<ParquetRecordBatchReaderBuilder<File>, SourceError> {
    let path = path.to_path_buf();
    let file = File::open(&path).map_err(|e| io(&path, e))?;
    let bad = |m: String| invalid(&path, format!("{m}: re-run exaviz convert"));
    // The Arrow schema is taken from the Parquet schema, not from the serialized one embedded in
    // the metadata: decoding a damaged one panics inside arrow-ipc.
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)
        .map_err(|e| bad(format!("not a readable Parquet file ({e})")))?;
    let meta = builder.metadata();
    let version = meta
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == "exaviz.schema_version"))
        .and_then(|k| k.value.clone());
    if version.as_deref() != Some(&SCHEMA_VERSION.to_string()) {
        return Err(bad(format!(
            "schema version {} where {SCHEMA_VERSION} was expected",
            version.as_deref().unwrap_or("missing")
        )));
    }
    let rows = meta.file_metadata().num_rows();
    if u64::try_from(rows).ok() != Some(expect_rows) {
        return Err(bad(format!("holds {rows} rows where the manifest says {expect_rows} (stale or truncated)")));
    }
    // Offsets and sizes of every column chunk within the file and bounded, checked before the
    // Parquet reader uses them (it asserts on some, and sizes buffers from them).
    let file_len = std::fs::metadata(&path).map_err(|e| io(&path, e))?.len();
    let within = |start: i64, len: i64| {
        u64::try_from(start)
            .ok()
            .zip(u64::try_from(len).ok())
            .is_some_and(|(s, l)| s.checked_add(l).is_some_and(|e| e <= file_len))
    };
    for rg in meta.row_groups() {
        if rg.num_rows() < 0 || rg.num_rows() > rows {
            return Err(bad(format!("a row group of {} rows is out of bounds", rg.num_rows())));
        }
        for c in rg.columns() {
            if !(0..=MAX_CHUNK_BYTES).contains(&c.uncompressed_size()) {
                return Err(bad(format!("a column chunk of {} bytes is out of bounds", c.uncompressed_size())));
            }
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            if !within(start, c.compressed_size()) || !within(c.data_page_offset(), 0) || c.num_values() < 0 {
                return Err(bad("a column chunk lies outside the file".into()));
            }
        }
    }
    let schema = builder.schema().clone();
    if schema.fields().len() != table.columns.len() {
        return Err(bad(format!("{} columns where {} were expected", schema.fields().len(), table.columns.len())));
    }
    for (f, (name, kind)) in schema.fields().iter().zip(&table.columns) {
        if f.name() != name || f.data_type() != &kind.arrow() {
            return Err(bad(format!(
                "column '{}' of type {} where '{name}' of type {} was expected",
                f.name(),
                f.data_type(),
                kind.arrow()
            )));
        }
    }
    Ok(builder)
}

/// Decodes the rows of `builder`'s file (of the row groups `groups` only, where given): `expect`
/// rows in all.
fn decode(
    path: &Path,
    table: &Table,
    builder: ParquetRecordBatchReaderBuilder<File>,
    groups: Option<Vec<usize>>,
    expect_rows: u64,
) -> Result<Vec<Owned>, SourceError> {
    let mut all = None;
    decode_batches(path, table, builder, groups, None, expect_rows, &mut |c| {
        all = Some(c);
        Ok(())
    })?;
    Ok(all.unwrap_or_else(|| no_rows(table)))
}

/// [`decode`] of the columns `columns` only (`None`: all; the others stay empty), handing the
/// rows to `each`.
fn decode_batches(
    path: &Path,
    table: &Table,
    builder: ParquetRecordBatchReaderBuilder<File>,
    groups: Option<Vec<usize>>,
    columns: Option<&[usize]>,
    expect_rows: u64,
    each: &mut dyn FnMut(Vec<Owned>) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let bad = |m: String| invalid(path, format!("{m}: re-run exaviz convert"));
    let builder = match groups {
        Some(g) => builder.with_row_groups(g),
        None => builder,
    };
    let targets: Vec<usize> = columns.map_or_else(|| (0..table.columns.len()).collect(), <[usize]>::to_vec);
    let builder = match columns {
        Some(c) => {
            let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), c.iter().copied());
            builder.with_projection(mask)
        }
        None => builder,
    };
    let reader = builder.with_batch_size(64 << 10).build().map_err(|e| bad(format!("unreadable ({e})")))?;
    let mut out = no_rows(table);
    let mut seen = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("corrupt ({e})")))?;
        seen += batch.num_rows() as u64;
        if seen > expect_rows {
            return Err(bad(format!("holds more than the {expect_rows} rows its metadata says")));
        }
        if batch.num_columns() != targets.len() {
            return Err(bad(format!("{} columns read where {} were asked for", batch.num_columns(), targets.len())));
        }
        for (col, &k) in batch.columns().iter().zip(&targets) {
            let out = &mut out[k];
            if col.null_count() > 0 {
                return Err(bad("a column holds nulls".into()));
            }
            let wrong = || bad("a column's values do not match its type".into());
            match out {
                Owned::U32(v) => {
                    v.extend_from_slice(col.as_any().downcast_ref::<UInt32Array>().ok_or_else(wrong)?.values())
                }
                Owned::U64(v) => {
                    v.extend_from_slice(col.as_any().downcast_ref::<UInt64Array>().ok_or_else(wrong)?.values())
                }
                Owned::Str(v) => v.extend(
                    col.as_any()
                        .downcast_ref::<StringArray>()
                        .ok_or_else(wrong)?
                        .iter()
                        .map(|s| s.unwrap_or("").to_string()),
                ),
            }
        }
    }
    if seen != expect_rows {
        return Err(bad(format!("holds {seen} rows where the manifest says {expect_rows} (truncated)")));
    }
    each(out)
}

fn take_u32(c: &mut [Owned], i: usize) -> Vec<u32> {
    match &mut c[i] {
        Owned::U32(v) => std::mem::take(v),
        _ => Vec::new(),
    }
}
fn take_u64(c: &mut [Owned], i: usize) -> Vec<u64> {
    match &mut c[i] {
        Owned::U64(v) => std::mem::take(v),
        _ => Vec::new(),
    }
}
fn take_str(c: &mut [Owned], i: usize) -> Vec<String> {
    match &mut c[i] {
        Owned::Str(v) => std::mem::take(v),
        _ => Vec::new(),
    }
}

/// Messages and intervals that [`open`] reads into memory. A store holding more, with a
/// pyramid, is opened out of core: every other table in memory, the pyramid, and a reader of the
/// messages and intervals by time window ([`Dataset::out_of_core`]).
pub const IN_MEMORY_ROWS: u64 = 20_000_000;
/// Most messages and intervals read into memory from a store without a pyramid.
pub const MAX_IN_MEMORY_ROWS: u64 = 400_000_000;

/// Opens a store, reporting `progress(tables done, tables)`: in memory up to [`IN_MEMORY_ROWS`]
/// messages and intervals, out of core above.
pub fn open(store: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    open_with(store, progress, IN_MEMORY_ROWS)
}

/// Columns of `table` with no rows.
fn no_rows(table: &Table) -> Vec<Owned> {
    table
        .columns
        .iter()
        .map(|(_, k)| match k {
            U32 => Owned::U32(Vec::new()),
            U64 => Owned::U64(Vec::new()),
            Str => Owned::Str(Vec::new()),
        })
        .collect()
}

/// [`open`] with the largest count of messages and intervals read into memory.
pub fn open_with(store: &Path, progress: &dyn Fn(u64, u64), in_memory_rows: u64) -> Result<Dataset, SourceError> {
    let m = manifest(store)?;
    let events = m.rows("messages").saturating_add(m.rows("intervals"));
    let out_of_core = events > in_memory_rows && m.pyramid.is_some();
    if !out_of_core && events > MAX_IN_MEMORY_ROWS {
        return Err(invalid(
            &store.join(MANIFEST),
            format!(
                "holds {events} messages and intervals and no pyramid, too many to read into memory: add one with exaviz pyramid"
            ),
        ));
    }
    let mut tables = vec![
        locations_table(),
        names_table("regions", "region"),
        names_table("collective_ops", "op"),
        names_table("metric_names", "metric"),
        intervals_table(),
        messages_table(),
        collectives_table(),
        counters_table("location_counters", "location"),
        counters_table("link_counters", "link"),
        metrics_table(),
    ];
    if let Some(extents) = &m.extents {
        if extents.is_empty() || extents.len() > 16 || extents.contains(&0) {
            return Err(invalid(&store.join(MANIFEST), "topology extents must be 1 to 16 dimensions of at least 1"));
        }
        tables.push(nodes_table(extents.len()));
        tables.push(links_table());
    }
    let total = tables.len() as u64;
    let mut read = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let on_disk = out_of_core && (t.name == "messages" || t.name == "intervals");
        read.push(if on_disk { no_rows(t) } else { read_table(store, t, m.rows(t.name))? });
        progress(i as u64 + 1, total);
    }
    let mut read = read.into_iter();
    let mut next = || read.next().unwrap_or_default();
    let mut t = Trace { ticks_per_second: m.ticks_per_second, ..Default::default() };
    let mut c = next();
    t.locations = Locations { name: take_str(&mut c, 1), node: take_u32(&mut c, 2), kind: Vec::new() };
    t.region_names = take_str(&mut next(), 1);
    t.collective_names = take_str(&mut next(), 1);
    t.metric_names = take_str(&mut next(), 1);
    let mut c = next();
    t.intervals = Intervals {
        location: take_u32(&mut c, 0),
        start: take_u64(&mut c, 1),
        end: take_u64(&mut c, 2),
        kind: take_u32(&mut c, 3),
        depth: take_u32(&mut c, 4),
    };
    let mut c = next();
    t.messages = Messages {
        source: take_u32(&mut c, 0),
        destination: take_u32(&mut c, 1),
        send_time: take_u64(&mut c, 2),
        recv_time: take_u64(&mut c, 3),
        bytes: take_u32(&mut c, 4),
        tag: take_u32(&mut c, 5),
    };
    let mut c = next();
    t.collectives = Collectives {
        location: take_u32(&mut c, 0),
        start: take_u64(&mut c, 1),
        end: take_u64(&mut c, 2),
        op: take_u32(&mut c, 3),
        root: take_u32(&mut c, 4),
        bytes: take_u32(&mut c, 5),
    };
    let mut c = next();
    t.location_counters =
        Counters { entity: take_u32(&mut c, 0), time: take_u64(&mut c, 1), value: take_u32(&mut c, 2) };
    let mut c = next();
    t.link_counters = Counters { entity: take_u32(&mut c, 0), time: take_u64(&mut c, 1), value: take_u32(&mut c, 2) };
    let mut c = next();
    t.metrics = MetricSamples {
        location: take_u32(&mut c, 0),
        time: take_u64(&mut c, 1),
        metric: take_u32(&mut c, 2),
        value: take_u64(&mut c, 3),
    };
    let topology = m.extents.as_ref().map(|extents| topology(extents, next(), next()));
    let mut d = Dataset {
        name: m.name.clone(),
        trace: t,
        topology,
        link_counter_unit: m.link_counter_unit.clone(),
        out_of_core: None,
        fattree: None,
        training: None,
        warnings: Vec::new(),
    };
    check_references(store, &d)?;
    if out_of_core {
        d.out_of_core = Some(out_of_core_rows(store, &m, &d)?);
        d.trace.span_of_whole = d.out_of_core.as_ref().map(|o| o.span);
    }
    Ok(d)
}

/// The topology of the `nodes` and `links` tables' columns.
fn topology(extents: &[u32], mut nodes: Vec<Owned>, mut links: Vec<Owned>) -> Topology {
    let dims = extents.len();
    let group = take_u32(&mut nodes, 1);
    let per_dim: Vec<Vec<u32>> = (0..dims).map(|k| take_u32(&mut nodes, 2 + k)).collect();
    let n = group.len();
    let mut coords = Vec::with_capacity(n * dims);
    for i in 0..n {
        coords.extend(per_dim.iter().map(|v| v[i]));
    }
    let links = Links {
        source: take_u32(&mut links, 0),
        destination: take_u32(&mut links, 1),
        dimension: take_u32(&mut links, 2),
    };
    Topology { extents: extents.to_vec(), coords, links, group }
}

/// The pyramid and window reader of a store opened out of core.
fn out_of_core_rows(store: &Path, m: &Manifest, d: &Dataset) -> Result<OutOfCore, SourceError> {
    let path = store.join(MANIFEST);
    let span =
        m.time_span.filter(|(a, b)| a <= b).ok_or_else(|| invalid(&path, "no time span: re-run exaviz convert"))?;
    let pyramid = pyramid(store)?.ok_or_else(|| invalid(&path, "no pyramid: re-run exaviz convert"))?;
    let t = &d.trace;
    let (messages, intervals) = (m.rows("messages"), m.rows("intervals"));
    let rows =
        rows::StoreRows::new(store, (messages, intervals), t.locations.name.len() as u32, t.region_names.len() as u32)?;
    // The row groups' statistics know the last receive and end times where the manifest may not.
    let span = rows.span().map_or(span, |(a, b)| (span.0.min(a), span.1.max(b)));
    Ok(OutOfCore { pyramid: Arc::new(pyramid), rows: Arc::new(rows), messages, intervals, span })
}

/// Every id in range: a store written by another program cannot make a view index out of bounds.
fn check_references(store: &Path, d: &Dataset) -> Result<(), SourceError> {
    let t = &d.trace;
    let locs = t.locations.name.len() as u32;
    let check = |table: &str, what: &str, ids: &[u32], bound: u32, allow_max: bool| -> Result<(), SourceError> {
        match ids.iter().find(|&&v| v >= bound && !(allow_max && v == u32::MAX)) {
            Some(v) => Err(invalid(
                &store.join(format!("{table}.parquet")),
                format!("{what} {v} is out of range (there are {bound}): re-run exaviz convert"),
            )),
            None => Ok(()),
        }
    };
    check("messages", "source", &t.messages.source, locs, false)?;
    check("messages", "destination", &t.messages.destination, locs, false)?;
    check("intervals", "location", &t.intervals.location, locs, false)?;
    check("intervals", "region", &t.intervals.kind, t.region_names.len() as u32, false)?;
    check("collectives", "location", &t.collectives.location, locs, false)?;
    check("collectives", "op", &t.collectives.op, t.collective_names.len() as u32, false)?;
    check("location_counters", "location", &t.location_counters.entity, locs, false)?;
    check("metrics", "location", &t.metrics.location, locs, false)?;
    check("metrics", "metric", &t.metrics.metric, t.metric_names.len() as u32, false)?;
    if let Some(topo) = &d.topology {
        let nodes = topo.group.len() as u32;
        check("locations", "node", &t.locations.node, nodes, true)?;
        check("links", "source", &topo.links.source, nodes, false)?;
        check("links", "destination", &topo.links.destination, nodes, false)?;
        check("link_counters", "link", &t.link_counters.entity, topo.link_count() as u32, false)?;
        for (k, &e) in topo.extents.iter().enumerate() {
            if topo.coords.iter().skip(k).step_by(topo.dims()).any(|&c| c >= e) {
                return Err(invalid(
                    &store.join("nodes.parquet"),
                    format!("a coordinate d{k} is out of its extent {e}"),
                ));
            }
        }
    }
    if t.intervals.start.iter().zip(&t.intervals.end).any(|(s, e)| e < s) {
        return Err(invalid(&store.join("intervals.parquet"), "an interval ends before it starts"));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Copies of `original` with 3 values flipped at every `step`-th byte, and cut to `cuts`.
    pub(crate) fn mutations(original: &[u8], step: usize, cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for i in (0..original.len()).step_by(step.max(1)) {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = original.to_vec();
                b[i] ^= x;
                cases.push(b);
            }
        }
        cases.extend(cuts.iter().map(|&cut| original[..cut].to_vec()));
        cases
    }

    pub(super) fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("exaviz-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn same(a: &Dataset, b: &Dataset) {
        let (x, y) = (&a.trace, &b.trace);
        assert_eq!(a.summary(), b.summary());
        assert_eq!(x.locations.name, y.locations.name);
        assert_eq!(x.locations.node, y.locations.node);
        assert_eq!(x.region_names, y.region_names);
        assert_eq!(x.collective_names, y.collective_names);
        // Event tables come back sorted by time: compare them as sorted rows.
        let msgs = |m: &Messages| {
            let mut v: Vec<_> = (0..m.source.len())
                .map(|i| (m.send_time[i], m.source[i], m.destination[i], m.recv_time[i], m.bytes[i], m.tag[i]))
                .collect();
            v.sort_unstable();
            v
        };
        assert_eq!(msgs(&x.messages), msgs(&y.messages));
        let ivs = |v: &Intervals| {
            let mut r: Vec<_> =
                (0..v.start.len()).map(|i| (v.start[i], v.location[i], v.end[i], v.kind[i], v.depth[i])).collect();
            r.sort_unstable();
            r
        };
        assert_eq!(ivs(&x.intervals), ivs(&y.intervals));
        let ctr = |c: &Counters| {
            let mut r: Vec<_> = (0..c.time.len()).map(|i| (c.time[i], c.entity[i], c.value[i])).collect();
            r.sort_unstable();
            r
        };
        assert_eq!(ctr(&x.link_counters), ctr(&y.link_counters));
        assert_eq!(
            a.topology.as_ref().map(|t| (&t.extents, &t.coords, &t.group)),
            b.topology.as_ref().map(|t| (&t.extents, &t.coords, &t.group))
        );
        assert_eq!(
            a.topology.as_ref().map(|t| (&t.links.source, &t.links.destination, &t.links.dimension)),
            b.topology.as_ref().map(|t| (&t.links.source, &t.links.destination, &t.links.dimension))
        );
        assert_eq!(a.link_counter_unit, b.link_counter_unit);
    }

    #[test]
    fn generators_round_trip_through_a_store() {
        let dir = temp("round");
        for spec in [
            "gen:wrf?iterations=40&collectives=5&plant=1",
            "gen:torus-sim?dims=4x4x2&steps=5",
            "gen:pf3d?dims=2x2x2x2x2&threads=2",
        ] {
            let d = crate::open(spec).unwrap();
            let path = dir.join("s.exaviz");
            let m = write(&d, &path).unwrap();
            assert_eq!(m.rows("messages"), d.trace.messages.source.len() as u64);
            assert!(m.sorted.iter().all(|s| s.1), "{spec}: {:?}", m.sorted);
            let back = crate::open(path.to_str().unwrap()).unwrap();
            same(&d, &back);
        }
        // Nothing but the store is left in the folder (no temporary folder).
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("s.exaviz")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The stored pyramid equals one built from the dataset in memory, cell for cell.
    #[test]
    fn the_stored_pyramid_equals_the_one_built_in_memory() {
        let dir = temp("pyramid");
        let d = crate::open("gen:fd4?iterations=6&collectives=2").unwrap();
        let path = dir.join("s.exaviz");
        let m = write(&d, &path).unwrap();
        assert!(m.rows("pyramid_messages") > 0 && m.rows("pyramid_states") > 0);
        let span = pyramid_span(&d).unwrap();
        let mut b = PyramidBuilder::new(span.shape());
        b.add_messages(&d.trace.messages);
        b.add_intervals(&d.trace.intervals);
        let want = b.finish();
        assert_eq!(pyramid(&path).unwrap(), Some(want.clone()));
        let top = want.levels.last().unwrap();
        assert_eq!(top.counts.iter().sum::<u64>(), d.trace.messages.source.len() as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unsorted_events_are_written_sorted() {
        let dir = temp("sort");
        let mut d = crate::open("gen:lulesh?iterations=3").unwrap();
        d.trace.messages.send_time.reverse();
        let path = dir.join("s.exaviz");
        write(&d, &path).unwrap();
        let back = open(&path, &|_, _| {}).unwrap();
        assert!(back.trace.messages.send_time.windows(2).all(|w| w[0] <= w[1]));
        same(&d, &back);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_that_fails_leaves_nothing_under_the_final_name() {
        let dir = temp("fail");
        let path = dir.join("s.exaviz");
        {
            let mut w = StoreWriter::create(&path).unwrap();
            w.begin_messages().unwrap();
            w.messages(&crate::open("gen:lulesh?iterations=2").unwrap().trace.messages).unwrap();
            // dropped here, as by an error or Ctrl-C unwinding, before finish
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        // A folder that is not a store is never replaced.
        std::fs::create_dir_all(dir.join("photos")).unwrap();
        let e = write(&Dataset::default(), &dir.join("photos")).unwrap_err().to_string();
        assert!(e.ends_with("photos: exists and is not an exaviz store; choose another name"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_foreign_and_other_version_stores_are_refused_in_one_line() {
        let dir = temp("bad");
        let path = dir.join("s.exaviz");
        let d = crate::open("gen:wrf?iterations=10").unwrap();
        write(&d, &path).unwrap();
        let manifest_path = path.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest_path).unwrap();
        let err = |p: &Path| crate::open(p.to_str().unwrap()).unwrap_err().to_string();

        std::fs::write(&manifest_path, text.replace("\"schema_version\": 1", "\"schema_version\": 7")).unwrap();
        let e = err(&path);
        assert!(e.contains("schema version 7") && e.contains("re-run exaviz convert") && !e.contains('\n'), "{e}");

        let rows = d.trace.messages.source.len();
        std::fs::write(&manifest_path, text.replace(&format!("\"messages\",\n      {rows}"), "\"messages\",\n      5"))
            .unwrap();
        let e = err(&path);
        assert!(e.contains("messages.parquet") && e.contains("stale or truncated"), "{e}");

        std::fs::write(&manifest_path, &text).unwrap();
        // A foreign Parquet file in place of a table: the locations table's schema.
        std::fs::copy(path.join("locations.parquet"), path.join("messages.parquet")).unwrap();
        let e = err(&path);
        assert!(e.contains("messages.parquet") && !e.contains('\n'), "{e}");

        std::fs::write(path.join("messages.parquet"), b"PAR1 not really").unwrap();
        let e = err(&path);
        assert!(e.contains("messages.parquet: not a readable Parquet file"), "{e}");
        std::fs::write(&manifest_path, "{").unwrap();
        assert!(err(&path).contains("not an exaviz store manifest"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Flipping bytes anywhere in a table or the manifest, or truncating a table, gives a
    /// dataset or a one-line error naming the file: never a panic.
    #[test]
    fn mutated_stores_never_panic() {
        let dir = temp("fuzz");
        let path = dir.join("s.exaviz");
        let d = crate::open("gen:torus-sim?dims=2x2x2&steps=3").unwrap();
        write(&d, &path).unwrap();
        let mut errors = 0;
        for file in ["messages.parquet", "intervals.parquet", "links.parquet", "nodes.parquet", MANIFEST] {
            let f = path.join(file);
            let original = std::fs::read(&f).unwrap();
            let step = (original.len()
                / std::env::var("EXAVIZ_FUZZ_STEPS").ok().and_then(|v| v.parse().ok()).unwrap_or(150))
            .max(1);
            let cuts = [0, 4, original.len() / 2, original.len().saturating_sub(9), original.len() - 1];
            for b in mutations(&original, step, &cuts) {
                std::fs::write(&f, &b).unwrap();
                match crate::open(path.to_str().unwrap()) {
                    Err(e) => {
                        let e = e.to_string();
                        assert!(!e.contains('\n') && e.contains("s.exaviz"), "{e}");
                        errors += 1;
                    }
                    Ok(back) => assert_eq!(back.trace.locations.name.len(), d.trace.locations.name.len()),
                }
            }
            std::fs::write(&f, &original).unwrap();
        }
        assert!(errors > 200, "corruptions should mostly be caught ({errors})");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
