//! Reading a store: the manifest, each table checked before it is decoded, and the dataset
//! they make (in memory, or rows kept on disk behind the pyramid).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, StringArray, UInt32Array, UInt64Array};
use exaviz_model::dataset::{Dataset, OutOfCore};
use exaviz_model::source::SourceError;
use exaviz_model::{
    Collectives, Counters, InstantScope, Instants, Intervals, Links, LocationKind, Locations, Messages, MetricSamples,
    Topology, Trace,
};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::{ChunkReader, Length};

use super::{
    F64, MANIFEST, MAX_CHUNK_BYTES, Manifest, OPGRAPH, SCHEMA_VERSION, Str, TRAINING, Table, U32, U64,
    collectives_table, counters_table, instants_table, intervals_table, invalid, io, links_table, locations_table,
    messages_table, metric_units_table, metrics_table, names_table, nodes_table, pyramid, rows,
};

/// Where a store's files lie: a folder, or their bytes held in memory (a store read from
/// `exaviz serve`, written to no disk), each under its name in the folder.
#[derive(Clone, Debug)]
pub enum Files {
    Folder(PathBuf),
    /// `at` names the store in messages (its address on the server).
    Held {
        at: PathBuf,
        files: Arc<BTreeMap<String, bytes::Bytes>>,
    },
}

impl Files {
    /// The path that names file `name` in messages (the file itself, in a folder).
    pub fn path(&self, name: &str) -> PathBuf {
        match self {
            Files::Folder(p) | Files::Held { at: p, .. } => p.join(name),
        }
    }

    pub fn exists(&self, name: &str) -> bool {
        match self {
            Files::Folder(p) => p.join(name).is_file(),
            Files::Held { files, .. } => files.contains_key(name),
        }
    }

    /// The bytes of file `name`, refused above `max` bytes.
    pub(super) fn read(&self, name: &str, max: u64) -> Result<bytes::Bytes, SourceError> {
        let path = self.path(name);
        let (len, reader) = self.source(name)?;
        if len > max {
            return Err(invalid(&path, format!("is larger than {} MB", max >> 20)));
        }
        reader.get_bytes(0, len as usize).map_err(|e| invalid(&path, format!("unreadable ({e})")))
    }

    /// A reader of file `name` and its length.
    pub(super) fn source(&self, name: &str) -> Result<(u64, Source), SourceError> {
        let path = self.path(name);
        let source = match self {
            Files::Folder(_) => Source::File(File::open(&path).map_err(|e| io(&path, e))?),
            Files::Held { files, .. } => {
                Source::Held(files.get(name).cloned().ok_or_else(|| io(&path, std::io::ErrorKind::NotFound.into()))?)
            }
        };
        Ok((source.len(), source))
    }
}

/// A store file's bytes: on disk, or held.
pub enum Source {
    File(File),
    Held(bytes::Bytes),
}

impl Length for Source {
    fn len(&self) -> u64 {
        match self {
            Source::File(f) => f.metadata().map_or(0, |m| m.len()),
            Source::Held(b) => b.len() as u64,
        }
    }
}

/// A reader of a [`Source`] from an offset.
pub enum SourceRead {
    File(<File as ChunkReader>::T),
    Held(<bytes::Bytes as ChunkReader>::T),
}

impl std::io::Read for SourceRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SourceRead::File(r) => r.read(buf),
            SourceRead::Held(r) => r.read(buf),
        }
    }
}

impl ChunkReader for Source {
    type T = SourceRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<SourceRead> {
        Ok(match self {
            Source::File(f) => SourceRead::File(f.get_read(start)?),
            Source::Held(b) => SourceRead::Held(b.get_read(start)?),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        match self {
            Source::File(f) => f.get_bytes(start, length),
            Source::Held(b) => b.get_bytes(start, length),
        }
    }
}

/// Reads a store's manifest and checks its version.
pub fn manifest(store: &Path) -> Result<Manifest, SourceError> {
    manifest_in(&Files::Folder(store.to_path_buf()))
}

/// [`manifest`] of the store whose files are `store`.
pub fn manifest_in(store: &Files) -> Result<Manifest, SourceError> {
    let path = store.path(MANIFEST);
    let (len, _) = store.source(MANIFEST)?;
    if len > 1 << 20 {
        return Err(invalid(&path, "manifest larger than 1 MiB: not an exaviz store manifest"));
    }
    let bytes = store.read(MANIFEST, 1 << 20)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid(&path, "not an exaviz store manifest (not UTF-8)"))?;
    let version = serde_json::from_str::<serde_json::Value>(text)
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
    let m: Manifest = serde_json::from_str(text)
        .map_err(|e| invalid(&path, format!("not an exaviz store manifest ({e}): re-run exaviz convert")))?;
    if m.format != "exaviz-store" {
        return Err(invalid(&path, format!("format '{}' is not exaviz-store", m.format)));
    }
    Ok(m)
}

/// Columns read from one table.
pub(super) enum Owned {
    U32(Vec<u32>),
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

impl Owned {
    pub(super) fn len(&self) -> usize {
        match self {
            Owned::U32(v) => v.len(),
            Owned::U64(v) => v.len(),
            Owned::F64(v) => v.len(),
            Owned::Str(v) => v.len(),
        }
    }

    /// Room for `more` values (the caller bounds it: never a number read from a file alone).
    pub(super) fn reserve(&mut self, more: usize) {
        match self {
            Owned::U32(v) => v.reserve_exact(more),
            Owned::U64(v) => v.reserve_exact(more),
            Owned::F64(v) => v.reserve_exact(more),
            Owned::Str(v) => v.reserve_exact(more),
        }
    }
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
pub(super) fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T, SourceError>) -> Result<T, SourceError> {
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

/// Reads every row of one table of the store whose files are `store`, checking its schema,
/// version and row count.
pub(super) fn read_table_in(store: &Files, table: &Table, expect_rows: u64) -> Result<Vec<Owned>, SourceError> {
    let path = store.path(&table.file());
    guarded(&path, || {
        let (_, source) = store.source(&table.file())?;
        let builder = checked_reader(&path, source, table, expect_rows)?;
        decode(&path, table, builder, None, expect_rows)
    })
}

/// A reader of one table's file after every check that the metadata allows: schema version,
/// row count against the manifest, column chunks within the file, column names and types.
pub(super) fn checked(
    path: &Path,
    table: &Table,
    expect_rows: u64,
) -> Result<ParquetRecordBatchReaderBuilder<File>, SourceError> {
    let file = File::open(path).map_err(|e| io(path, e))?;
    checked_reader(path, file, table, expect_rows)
}

/// [`checked`] of a file's bytes from `file` (named `path` in messages).
pub(super) fn checked_reader<R: ChunkReader + 'static>(
    path: &Path,
    file: R,
    table: &Table,
    expect_rows: u64,
) -> Result<ParquetRecordBatchReaderBuilder<R>, SourceError> {
    let path = path.to_path_buf();
    let file_len = file.len();
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
    let within = |start: i64, len: i64| lies_within(file_len, start, len);
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

/// Whether `len` bytes from offset `start` (as a Parquet footer gives them) lie inside a file of
/// `file_len` bytes.
pub(super) fn lies_within(file_len: u64, start: i64, len: i64) -> bool {
    u64::try_from(start)
        .ok()
        .zip(u64::try_from(len).ok())
        .is_some_and(|(s, l)| s.checked_add(l).is_some_and(|e| e <= file_len))
}

/// Decodes the rows of `builder`'s file (of the row groups `groups` only, where given): `expect`
/// rows in all.
pub(super) fn decode<R: ChunkReader + 'static>(
    path: &Path,
    table: &Table,
    builder: ParquetRecordBatchReaderBuilder<R>,
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
pub(super) fn decode_batches<R: ChunkReader + 'static>(
    path: &Path,
    table: &Table,
    builder: ParquetRecordBatchReaderBuilder<R>,
    groups: Option<Vec<usize>>,
    columns: Option<&[usize]>,
    expect_rows: u64,
    each: &mut dyn FnMut(Vec<Owned>) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let bad = |m: String| invalid(path, format!("{m}: re-run exaviz convert"));
    let targets: Vec<usize> = columns.map_or_else(|| (0..table.columns.len()).collect(), <[usize]>::to_vec);
    let mut out = no_rows(table);
    // Room for the rows the metadata promises, up to one row group's worth (a larger promise
    // grows as the rows arrive), so the batches are copied in once.
    let room = usize::try_from(expect_rows).unwrap_or(usize::MAX).min(super::ROW_GROUP);
    for &k in &targets {
        if let Some(c) = out.get_mut(k) {
            c.reserve(room);
        }
    }
    stream_batches(path, table, builder, groups, columns, expect_rows, 64 << 10, &mut |batch| {
        for (col, &k) in batch.iter().zip(&targets) {
            let out = &mut out[k];
            let wrong = || bad("a column's values do not match its type".into());
            match out {
                Owned::U32(v) => v.extend_from_slice(u32s(col).ok_or_else(wrong)?),
                Owned::U64(v) => v.extend_from_slice(u64s(col).ok_or_else(wrong)?),
                Owned::F64(v) => v.extend_from_slice(f64s(col).ok_or_else(wrong)?),
                Owned::Str(v) => v.extend(
                    col.as_any()
                        .downcast_ref::<StringArray>()
                        .ok_or_else(wrong)?
                        .iter()
                        .map(|s| s.unwrap_or("").to_string()),
                ),
            }
        }
        Ok(())
    })?;
    each(out)
}

/// The values of an array of `u32` (`None`: of another type).
pub(super) fn u32s(col: &ArrayRef) -> Option<&[u32]> {
    Some(col.as_any().downcast_ref::<UInt32Array>()?.values())
}

/// The values of an array of `u64` (`None`: of another type).
pub(super) fn u64s(col: &ArrayRef) -> Option<&[u64]> {
    Some(col.as_any().downcast_ref::<UInt64Array>()?.values())
}

/// The values of an array of `f64` (`None`: of another type).
pub(super) fn f64s(col: &ArrayRef) -> Option<&[f64]> {
    Some(col.as_any().downcast_ref::<Float64Array>()?.values())
}

/// The record batches of `builder`'s file, `batch_rows` rows each, of the row groups `groups`
/// only (where given) and of the columns `columns` only (`None`: all), handed to `each` as they
/// are decoded, checked: no nulls, the columns asked for, and `expect_rows` rows in all.
#[allow(clippy::too_many_arguments)]
pub(super) fn stream_batches<R: ChunkReader + 'static>(
    path: &Path,
    table: &Table,
    builder: ParquetRecordBatchReaderBuilder<R>,
    groups: Option<Vec<usize>>,
    columns: Option<&[usize]>,
    expect_rows: u64,
    batch_rows: usize,
    each: &mut dyn FnMut(&[ArrayRef]) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let bad = |m: String| invalid(path, format!("{m}: re-run exaviz convert"));
    let builder = match groups {
        Some(g) => builder.with_row_groups(g),
        None => builder,
    };
    let wanted = columns.map_or(table.columns.len(), <[usize]>::len);
    let builder = match columns {
        Some(c) => {
            let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), c.iter().copied());
            builder.with_projection(mask)
        }
        None => builder,
    };
    let reader = builder.with_batch_size(batch_rows).build().map_err(|e| bad(format!("unreadable ({e})")))?;
    let mut seen = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("corrupt ({e})")))?;
        seen += batch.num_rows() as u64;
        if seen > expect_rows {
            return Err(bad(format!("holds more than the {expect_rows} rows its metadata says")));
        }
        if batch.num_columns() != wanted {
            return Err(bad(format!("{} columns read where {wanted} were asked for", batch.num_columns())));
        }
        if batch.columns().iter().any(|c| c.null_count() > 0) {
            return Err(bad("a column holds nulls".into()));
        }
        each(batch.columns())?;
    }
    if seen != expect_rows {
        return Err(bad(format!("holds {seen} rows where the manifest says {expect_rows} (truncated)")));
    }
    Ok(())
}

/// Column `i` of `c` taken out where it holds `T`s (`of` picks them), else empty.
fn take<T>(c: &mut [Owned], i: usize, of: impl FnOnce(&mut Owned) -> Option<&mut Vec<T>>) -> Vec<T> {
    of(&mut c[i]).map(std::mem::take).unwrap_or_default()
}
pub(super) fn take_u32(c: &mut [Owned], i: usize) -> Vec<u32> {
    take(c, i, |o| if let Owned::U32(v) = o { Some(v) } else { None })
}
pub(super) fn take_u64(c: &mut [Owned], i: usize) -> Vec<u64> {
    take(c, i, |o| if let Owned::U64(v) = o { Some(v) } else { None })
}
pub(super) fn take_f64(c: &mut [Owned], i: usize) -> Vec<f64> {
    take(c, i, |o| if let Owned::F64(v) = o { Some(v) } else { None })
}
pub(super) fn take_str(c: &mut [Owned], i: usize) -> Vec<String> {
    take(c, i, |o| if let Owned::Str(v) = o { Some(v) } else { None })
}

/// Messages and intervals that [`open`] reads into memory. A store holding more, with a
/// pyramid, is opened out of core: every other table in memory, the pyramid, and a reader of the
/// messages and intervals by time window ([`Dataset::out_of_core`]).
pub const IN_MEMORY_ROWS: u64 = 20_000_000;
/// Most messages and intervals read into memory from a store without a pyramid.
pub const MAX_IN_MEMORY_ROWS: u64 = 400_000_000;

/// Opens a store, reporting `progress(tables done, tables)`: in memory up to [`IN_MEMORY_ROWS`]
/// messages and intervals (`EXAVIZ_IN_MEMORY_ROWS` where set: a machine with less memory, or a
/// small store explored as a large one is), out of core above.
pub fn open(store: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    open_with(store, progress, in_memory_rows())
}

/// [`IN_MEMORY_ROWS`], or `EXAVIZ_IN_MEMORY_ROWS` where it is a number.
fn in_memory_rows() -> u64 {
    std::env::var("EXAVIZ_IN_MEMORY_ROWS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(IN_MEMORY_ROWS)
}

/// Columns of `table` with no rows.
pub(super) fn no_rows(table: &Table) -> Vec<Owned> {
    table
        .columns
        .iter()
        .map(|(_, k)| match k {
            U32 => Owned::U32(Vec::new()),
            U64 => Owned::U64(Vec::new()),
            F64 => Owned::F64(Vec::new()),
            Str => Owned::Str(Vec::new()),
        })
        .collect()
}

/// [`open`] with the largest count of messages and intervals read into memory.
pub fn open_with(store: &Path, progress: &dyn Fn(u64, u64), in_memory_rows: u64) -> Result<Dataset, SourceError> {
    let rows = |m: &Manifest, d: &Dataset| out_of_core_rows(store, m, d);
    open_in(&Files::Folder(store.to_path_buf()), progress, in_memory_rows, &rows)
}

/// What reads the messages and intervals of a store opened out of core, from its manifest and
/// the dataset of its other tables.
pub type RowsOf<'a> = dyn Fn(&Manifest, &Dataset) -> Result<OutOfCore, SourceError> + 'a;

/// [`open_with`] of the store whose files are `store`, its messages and intervals read by
/// `out_of_core` where it opens out of core.
pub fn open_in(
    store: &Files,
    progress: &dyn Fn(u64, u64),
    in_memory_rows: u64,
    out_of_core_rows: &RowsOf<'_>,
) -> Result<Dataset, SourceError> {
    open_tables(store, progress, in_memory_rows, Some(out_of_core_rows))
}

/// The tables of a store that name things (locations, regions, collective operations, metrics
/// and their units, the topology), its event tables left on disk with no rows read: what reads
/// the event tables in place (a query engine over the Parquet files) needs beside them.
pub fn open_names(store: &Path) -> Result<Dataset, SourceError> {
    open_tables(&Files::Folder(store.to_path_buf()), &|_, _| {}, 0, None)
}

/// [`open_in`]; without `out_of_core_rows`, every event table is left on disk unread.
fn open_tables(
    store: &Files,
    progress: &dyn Fn(u64, u64),
    in_memory_rows: u64,
    out_of_core_rows: Option<&RowsOf<'_>>,
) -> Result<Dataset, SourceError> {
    let m = manifest_in(store)?;
    let names_only = out_of_core_rows.is_none();
    let events = m.rows("messages").saturating_add(m.rows("intervals"));
    let out_of_core = !names_only && events > in_memory_rows && m.pyramid.is_some();
    if !names_only && !out_of_core && events > MAX_IN_MEMORY_ROWS {
        return Err(invalid(
            &store.path(MANIFEST),
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
            return Err(invalid(&store.path(MANIFEST), "topology extents must be 1 to 16 dimensions of at least 1"));
        }
        tables.push(nodes_table(extents.len()));
        tables.push(links_table());
    }
    let total = tables.len() as u64;
    let mut read = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let event = matches!(
            t.name,
            "messages" | "intervals" | "collectives" | "location_counters" | "link_counters" | "metrics"
        );
        let on_disk = (out_of_core && (t.name == "messages" || t.name == "intervals")) || (names_only && event);
        read.push(if on_disk { no_rows(t) } else { read_table_in(store, t, m.rows(t.name))? });
        progress(i as u64 + 1, total);
    }
    let mut read = read.into_iter();
    let mut next = || read.next().unwrap_or_default();
    let mut t = Trace { ticks_per_second: m.ticks_per_second, ..Default::default() };
    let mut c = next();
    // Locations of no kind (a generator's) stay untyped, as the trace written had them.
    let codes = take_u32(&mut c, 3);
    let kind = if codes.iter().all(|&k| k == 0) {
        Vec::new()
    } else {
        codes.into_iter().map(LocationKind::from_code).collect()
    };
    t.locations = Locations { name: take_str(&mut c, 1), node: take_u32(&mut c, 2), kind };
    t.region_names = take_str(&mut next(), 1);
    // Step regions that name no region (a damaged manifest) are left out.
    let regions = t.region_names.len();
    t.step_regions = m.step_regions.iter().copied().filter(|&r| (r as usize) < regions).collect();
    t.collective_names = take_str(&mut next(), 1);
    t.metric_names = take_str(&mut next(), 1);
    let mut c = next();
    t.intervals = intervals_from(&mut c);
    let mut c = next();
    t.messages = messages_from(&mut c);
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
        value: take_f64(&mut c, 3),
    };
    read_units_and_instants(store, &m, &mut t)?;
    let topology = m.extents.as_ref().map(|extents| topology(extents, next(), next()));
    let link_counter_unit = m.link_counter_unit.clone();
    let mut d = Dataset { name: m.name.clone(), trace: t, topology, link_counter_unit, ..Dataset::default() };
    check_references(store, &d)?;
    d.training = models::<exaviz_model::training::Training>(store, TRAINING, |t| t.check())?.map(Arc::new);
    d.opgraph = models::<exaviz_model::opgraph::OpGraph>(store, OPGRAPH, |g| g.check())?.map(Arc::new);
    if let Some(out_of_core_rows) = out_of_core_rows.filter(|_| out_of_core) {
        d.out_of_core = Some(out_of_core_rows(&m, &d)?);
        d.trace.span_of_whole = d.out_of_core.as_ref().map(|o| o.span);
    }
    Ok(d)
}

/// The metrics' units, the instants and their categories (a store written without them reads
/// as one with no units and no instants).
fn read_units_and_instants(store: &Files, m: &Manifest, t: &mut Trace) -> Result<(), SourceError> {
    let units = metric_units_table();
    if store.exists(&units.file()) {
        let mut c = read_table_in(store, &units, m.rows(units.name))?;
        t.metric_units = take_str(&mut c, 1);
        t.metric_accumulated = take_u32(&mut c, 2).iter().map(|&a| a != 0).collect();
    }
    let (table, names) = (instants_table(), names_table("instant_categories", "category"));
    if !store.exists(&table.file()) || !store.exists(&names.file()) {
        return Ok(());
    }
    t.instant_categories = take_str(&mut read_table_in(store, &names, m.rows(names.name))?, 1);
    let mut c = read_table_in(store, &table, m.rows(table.name))?;
    t.instants = Instants {
        location: take_u32(&mut c, 0),
        time: take_u64(&mut c, 1),
        name: take_u32(&mut c, 2),
        scope: take_u32(&mut c, 3).into_iter().map(InstantScope::from_code).collect(),
        category: take_u32(&mut c, 4),
        args: take_u32(&mut c, 5),
    };
    Ok(())
}

/// The largest model file read back (a training run's operators, an operator graph).
const MAX_MODEL_BYTES: u64 = 4 << 30;

/// A model kept beside the tables as JSON (`training.json`, `opgraph.json`), checked by
/// `check` before any view indexes with it; `None` where the store keeps none.
fn models<T: serde::de::DeserializeOwned>(
    store: &Files,
    file: &str,
    check: impl Fn(&T) -> Result<(), String>,
) -> Result<Option<T>, SourceError> {
    let path = store.path(file);
    if !store.exists(file) {
        return Ok(None);
    }
    let bytes = store.read(file, MAX_MODEL_BYTES)?;
    let bad = |m: String| invalid(&path, format!("{m}: re-run exaviz convert"));
    let model: T = serde_json::from_slice(&bytes).map_err(|e| bad(format!("does not read ({e})")))?;
    check(&model).map_err(bad)?;
    Ok(Some(model))
}

/// The topology of the `nodes` and `links` tables' columns.
pub(super) fn topology(extents: &[u32], mut nodes: Vec<Owned>, mut links: Vec<Owned>) -> Topology {
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
pub(super) fn out_of_core_rows(store: &Path, m: &Manifest, d: &Dataset) -> Result<OutOfCore, SourceError> {
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
    Ok(OutOfCore {
        pyramid: Arc::new(pyramid),
        rows: Arc::new(rows),
        messages,
        intervals,
        span,
        pairs: Default::default(),
    })
}

/// The out-of-core reading of the store whose files are `store` (its pyramid among them) with
/// its messages and intervals read by `rows`, over `span` (the manifest's where `None`).
pub fn out_of_core_with(
    store: &Files,
    m: &Manifest,
    rows: Arc<dyn exaviz_model::dataset::WindowRows>,
    span: Option<(u64, u64)>,
) -> Result<OutOfCore, SourceError> {
    let path = store.path(MANIFEST);
    let span = span
        .or(m.time_span)
        .filter(|(a, b)| a <= b)
        .ok_or_else(|| invalid(&path, "no time span: re-run exaviz convert"))?;
    let pyramid = super::pyramid_in(store)?.ok_or_else(|| invalid(&path, "no pyramid: re-run exaviz convert"))?;
    Ok(OutOfCore {
        pyramid: Arc::new(pyramid),
        rows,
        messages: m.rows("messages"),
        intervals: m.rows("intervals"),
        span,
        pairs: Default::default(),
    })
}

/// Every id in range: a store written by another program cannot make a view index out of bounds.
pub(super) fn check_references(store: &Files, d: &Dataset) -> Result<(), SourceError> {
    let t = &d.trace;
    let locs = t.locations.name.len() as u32;
    let check = |table: &str, what: &str, ids: &[u32], bound: u32, allow_max: bool| -> Result<(), SourceError> {
        match ids.iter().find(|&&v| v >= bound && !(allow_max && v == u32::MAX)) {
            Some(v) => Err(invalid(
                &store.path(&format!("{table}.parquet")),
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
    check("instants", "location", &t.instants.location, locs, true)?;
    check("instants", "region", &t.instants.name, t.region_names.len() as u32, false)?;
    check("instants", "category", &t.instants.category, t.instant_categories.len() as u32, false)?;
    if let Some(topo) = &d.topology {
        let nodes = topo.group.len() as u32;
        check("locations", "node", &t.locations.node, nodes, true)?;
        check("links", "source", &topo.links.source, nodes, false)?;
        check("links", "destination", &topo.links.destination, nodes, false)?;
        check("link_counters", "link", &t.link_counters.entity, topo.link_count() as u32, false)?;
        for (k, &e) in topo.extents.iter().enumerate() {
            if topo.coords.iter().skip(k).step_by(topo.dims()).any(|&c| c >= e) {
                return Err(invalid(
                    &store.path("nodes.parquet"),
                    format!("a coordinate d{k} is out of its extent {e}"),
                ));
            }
        }
    }
    if t.intervals.start.iter().zip(&t.intervals.end).any(|(s, e)| e < s) {
        return Err(invalid(&store.path("intervals.parquet"), "an interval ends before it starts"));
    }
    Ok(())
}

/// The intervals table's columns as intervals (in [`intervals_table`]'s order).
pub(super) fn intervals_from(c: &mut [Owned]) -> Intervals {
    Intervals {
        location: take_u32(c, 0),
        start: take_u64(c, 1),
        end: take_u64(c, 2),
        kind: take_u32(c, 3),
        depth: take_u32(c, 4),
    }
}

/// The messages table's columns as messages (in [`messages_table`]'s order).
pub(super) fn messages_from(c: &mut [Owned]) -> Messages {
    Messages {
        source: take_u32(c, 0),
        destination: take_u32(c, 1),
        send_time: take_u64(c, 2),
        recv_time: take_u64(c, 3),
        bytes: take_u32(c, 4),
        tag: take_u32(c, 5),
    }
}
