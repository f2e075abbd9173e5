//! A store's messages and intervals read by time window: the row groups whose statistics say
//! they overlap the window, and nothing else, so a window of a billion-message store costs what
//! the window holds.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::ArrayRef;
use exaviz_model::dataset::WindowRows;
use exaviz_model::pyramid::{MessageColumns, PyramidBuilder};
use exaviz_model::{Intervals, Messages};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::statistics::Statistics;
use rayon::prelude::*;

use super::{
    SourceError, Table, checked, decode_batches, guarded, intervals_table, messages_table, stream_batches, u32s, u64s,
};

/// One row group: its rows and the first and last tick they cover (the lowest start or send
/// time, the highest end or receive time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Group {
    first: u64,
    last: u64,
    rows: u64,
}

/// The row groups of one table, with its metadata checked once when the store is opened: the
/// footer and, where the file has one, the page index (per page of the time columns, the first
/// row and the lowest and highest tick), from which a window decodes only the pages it needs.
#[derive(Debug)]
struct Groups {
    path: PathBuf,
    table: Table,
    groups: Vec<Group>,
    meta: ArrowReaderMetadata,
    /// The columns of the lowest and highest tick.
    first: usize,
    last: usize,
}

impl Groups {
    /// Reads the row groups' statistics of `table` (`first` and `last`: the columns of the
    /// lowest and highest tick); a group without statistics covers every tick.
    fn new(store: &std::path::Path, table: Table, rows: u64, first: usize, last: usize) -> Result<Self, SourceError> {
        let path = store.join(table.file());
        let (groups, meta) = guarded(&path, || {
            let b = checked(&path, &table, rows)?;
            let groups = b
                .metadata()
                .row_groups()
                .iter()
                .map(|rg| Group {
                    first: stat(rg.column(first).statistics(), false).unwrap_or(0),
                    last: stat(rg.column(last).statistics(), true).unwrap_or(u64::MAX),
                    rows: u64::try_from(rg.num_rows()).unwrap_or(0),
                })
                .collect();
            Ok((groups, with_page_index(&path, b.metadata())?))
        })?;
        Ok(Self { path, table, groups, meta, first, last })
    }

    /// The row groups that may hold rows overlapping `[t0, t1]`.
    fn overlapping(&self, (t0, t1): (u64, u64)) -> impl Iterator<Item = usize> + '_ {
        (0..self.groups.len()).filter(move |&g| self.groups[g].first <= t1 && self.groups[g].last >= t0)
    }

    /// The rows of the row groups that may hold rows overlapping `window`: the bound that
    /// [`WindowRows::estimate`] gives whether or not the file has a page index ([`Self::read`]
    /// decodes only the pages that may overlap), so that which windows are drawn from the rows
    /// does not depend on it.
    fn rows_of_groups(&self, window: (u64, u64)) -> u64 {
        self.overlapping(window).map(|g| self.groups[g].rows).sum()
    }

    /// The rows of row group `g` in pages that may overlap `[t0, t1]`: pages of the first column
    /// starting at or before `t1` and pages of the last column ending at or after `t0`; `None`
    /// where the file has no page index for them (the whole group is read).
    fn pages(&self, g: usize, (t0, t1): (u64, u64)) -> Option<RowSelection> {
        let rows = usize::try_from(self.groups[g].rows).ok()?;
        let starts = page_ranges(&self.meta, g, self.first, rows, |min, _| min.is_none_or(|m| m <= t1))?;
        let ends = page_ranges(&self.meta, g, self.last, rows, |_, max| max.is_none_or(|m| m >= t0))?;
        let starts = RowSelection::from_consecutive_ranges(starts.into_iter(), rows);
        let ends = RowSelection::from_consecutive_ranges(ends.into_iter(), rows);
        Some(starts.intersection(&ends))
    }

    /// Every row of the columns `columns` (the others stay empty), a few row groups at a time
    /// decoded in parallel, then handed to `each` one row group at a time, in order (not
    /// appended together: that copy cost as much as the decoding's own).
    fn each(
        &self,
        columns: &[usize],
        each: &mut dyn FnMut(Vec<super::Owned>) -> Result<(), SourceError>,
    ) -> Result<(), SourceError> {
        let wave = rayon::current_num_threads().clamp(1, 8);
        let all: Vec<usize> = (0..self.groups.len()).collect();
        for handful in all.chunks(wave) {
            let chosen: Vec<(usize, Option<RowSelection>)> = handful.iter().map(|&g| (g, None)).collect();
            for group in self.decode_each(&chosen, Some(columns)) {
                each(group?)?;
            }
        }
        Ok(())
    }

    /// Every row of the columns `columns`, a record batch of `batch_rows` rows at a time, each
    /// handed to `each` with its part as it is decoded (so it is worked on while in the cache,
    /// never copied): a wave of `parts.len()` row groups is decoded side by side, row groups
    /// `k, k + parts.len(), ...` going to `parts[k]` (in time order, as the rows are), and
    /// `after(parts, rows of the wave)` is called after each wave.
    fn each_batch<P: Send>(
        &self,
        columns: &[usize],
        batch_rows: usize,
        parts: &mut [P],
        each: impl Fn(&mut P, &[ArrayRef]) -> Result<(), SourceError> + Sync,
        mut after: impl FnMut(&mut [P], u64) -> Result<(), SourceError>,
    ) -> Result<(), SourceError> {
        let all: Vec<usize> = (0..self.groups.len()).collect();
        for wave in all.chunks(parts.len().max(1)) {
            wave.par_iter()
                .zip(parts.par_iter_mut())
                .map(|(&g, part)| {
                    guarded(&self.path, || {
                        let file = File::open(&self.path).map_err(|e| super::io(&self.path, e))?;
                        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone());
                        let rows = self.groups[g].rows;
                        stream_batches(
                            &self.path,
                            &self.table,
                            builder,
                            Some(vec![g]),
                            Some(columns),
                            rows,
                            batch_rows,
                            &mut |c| each(part, c),
                        )
                    })
                })
                .collect::<Result<(), SourceError>>()?;
            after(parts, wave.iter().map(|&g| self.groups[g].rows).sum())?;
        }
        Ok(())
    }

    /// The columns `columns` (`None`: all) of the rows `chosen` (row groups, each with its
    /// selected rows or all), the groups decoded in parallel and appended in order.
    fn decode(
        &self,
        chosen: &[(usize, Option<RowSelection>)],
        columns: Option<&[usize]>,
    ) -> Result<Vec<super::Owned>, SourceError> {
        let all: Vec<usize> = columns.map_or_else(|| (0..self.table.columns.len()).collect(), <[usize]>::to_vec);
        if chosen.len() >= rayon::current_num_threads() || all.len() < 2 {
            let decoded = self.decode_each(chosen, columns).into_iter().collect::<Result<Vec<_>, _>>()?;
            return Ok(concatenated(&self.table, decoded));
        }
        // Fewer row groups than threads (a short window lies in a row group or two): every other
        // column decoded by a reader of its own, side by side.
        let (odd, even): (Vec<usize>, Vec<usize>) = all.iter().partition(|&&k| k % 2 == 1);
        let (a, b) = rayon::join(|| self.decode_each(chosen, Some(&even)), || self.decode_each(chosen, Some(&odd)));
        let decoded = a
            .into_iter()
            .zip(b)
            .map(|(a, b)| {
                let (mut a, mut b) = (a?, b?);
                for &k in &odd {
                    if let (Some(to), Some(from)) = (a.get_mut(k), b.get_mut(k)) {
                        std::mem::swap(to, from);
                    }
                }
                Ok(a)
            })
            .collect::<Result<Vec<_>, SourceError>>()?;
        Ok(concatenated(&self.table, decoded))
    }

    /// The columns `columns` of each of the row groups `chosen`, decoded in parallel.
    fn decode_each(
        &self,
        chosen: &[(usize, Option<RowSelection>)],
        columns: Option<&[usize]>,
    ) -> Vec<Result<Vec<super::Owned>, SourceError>> {
        chosen
            .par_iter()
            .map(|(g, selection)| {
                guarded(&self.path, || {
                    let file = File::open(&self.path).map_err(|e| super::io(&self.path, e))?;
                    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone());
                    let (builder, rows) = match selection {
                        Some(s) => (builder.with_row_selection(s.clone()), s.row_count() as u64),
                        None => (builder, self.groups[*g].rows),
                    };
                    let mut out = None;
                    decode_batches(&self.path, &self.table, builder, Some(vec![*g]), columns, rows, &mut |c| {
                        out = Some(c);
                        Ok(())
                    })?;
                    Ok(out.unwrap_or_else(|| super::no_rows(&self.table)))
                })
            })
            .collect()
    }

    /// The row groups and rows of each that [`Self::read`] decodes for `window`.
    fn chosen(&self, window: (u64, u64)) -> Vec<(usize, Option<RowSelection>)> {
        self.overlapping(window)
            .map(|g| (g, self.pages(g, window)))
            .filter(|(_, s)| s.as_ref().is_none_or(|s| s.row_count() > 0))
            .collect()
    }

    /// The columns of the rows in the pages that may overlap `window`.
    fn read(&self, window: (u64, u64)) -> Result<Vec<super::Owned>, SourceError> {
        self.decode(&self.chosen(window), None)
    }
}

/// `meta` with the file's page index added where it has one whose every part lies inside the
/// file (checked before reading it: the reader sizes buffers from those lengths).
fn with_page_index(path: &std::path::Path, meta: &Arc<ParquetMetaData>) -> Result<ArrowReaderMetadata, SourceError> {
    let file = File::open(path).map_err(|e| super::io(path, e))?;
    let len = file.metadata().map_err(|e| super::io(path, e))?.len();
    let within = |offset: Option<i64>, length: Option<i32>| {
        offset.zip(length).is_some_and(|(o, l)| super::lies_within(len, o, i64::from(l)))
    };
    let indexed = meta.row_groups().iter().all(|rg| {
        rg.columns().iter().all(|c| {
            within(c.column_index_offset(), c.column_index_length())
                && within(c.offset_index_offset(), c.offset_index_length())
        })
    });
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let bad = |e: parquet::errors::ParquetError| {
        super::invalid(path, format!("not a readable Parquet file ({e}): re-run exaviz convert"))
    };
    let meta = if indexed && !meta.row_groups().is_empty() {
        let mut reader = ParquetMetaDataReader::new_with_metadata(ParquetMetaData::clone(meta))
            .with_page_index_policy(PageIndexPolicy::Optional);
        reader.read_page_indexes_sized(&file, len).map_err(bad)?;
        Arc::new(reader.finish().map_err(bad)?)
    } else {
        meta.clone()
    };
    ArrowReaderMetadata::try_new(meta, options).map_err(bad)
}

/// The row ranges of the pages of column `column` in row group `g` (of `rows` rows) that `keep`
/// keeps given their lowest and highest value (`None`: unknown); `None` where the page index
/// is missing or inconsistent.
fn page_ranges(
    meta: &ArrowReaderMetadata,
    g: usize,
    column: usize,
    rows: usize,
    keep: impl Fn(Option<u64>, Option<u64>) -> bool,
) -> Option<Vec<std::ops::Range<usize>>> {
    let m = meta.metadata();
    let ColumnIndexMetaData::INT64(index) = m.column_index()?.get(g)?.get(column)? else { return None };
    let pages = m.offset_index()?.get(g)?.get(column)?.page_locations();
    if pages.is_empty() || usize::try_from(index.num_pages()).ok()? != pages.len() || pages[0].first_row_index != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(pages.len());
    for (p, page) in pages.iter().enumerate() {
        let start = usize::try_from(page.first_row_index).ok()?;
        let end = match pages.get(p + 1) {
            Some(next) => usize::try_from(next.first_row_index).ok()?,
            None => rows,
        };
        if end < start || end > rows {
            return None;
        }
        if keep(index.min_value(p).map(|&v| v as u64), index.max_value(p).map(|&v| v as u64)) {
            out.push(start..end);
        }
    }
    Some(out)
}

/// The columns of `parts` one after another, each column copied once into a vector of its
/// final length (the first part's vectors are kept and grown once).
fn concatenated(table: &super::Table, parts: Vec<Vec<super::Owned>>) -> Vec<super::Owned> {
    use super::Owned;
    let mut parts = parts.into_iter();
    let Some(mut out) = parts.next() else { return super::no_rows(table) };
    let rest: Vec<Vec<Owned>> = parts.collect();
    for (k, column) in out.iter_mut().enumerate() {
        column.reserve(rest.iter().map(|p| p.get(k).map_or(0, Owned::len)).sum());
    }
    for part in rest {
        for (a, b) in out.iter_mut().zip(part) {
            match (a, b) {
                (Owned::U32(a), Owned::U32(b)) => a.extend_from_slice(&b),
                (Owned::U64(a), Owned::U64(b)) => a.extend_from_slice(&b),
                (Owned::F64(a), Owned::F64(b)) => a.extend_from_slice(&b),
                (Owned::Str(a), Owned::Str(b)) => a.extend(b),
                _ => {}
            }
        }
    }
    out
}

/// The minimum or maximum of a `u64` column chunk (stored as Parquet INT64).
fn stat(s: Option<&Statistics>, max: bool) -> Option<u64> {
    match s? {
        Statistics::Int64(v) => (if max { v.max_opt() } else { v.min_opt() }).map(|&x| x as u64),
        _ => None,
    }
}

/// A store's messages and intervals, read by window.
#[derive(Debug)]
pub(super) struct StoreRows {
    messages: Groups,
    intervals: Groups,
    locations: u32,
    regions: u32,
    /// The rows of the last window read (at most the rows a picture reads at once), so that a
    /// window overlapping it (a pan, a zoom in) decodes only the pages of the time outside it.
    last: std::sync::Mutex<Option<Last>>,
}

/// A table's rows of a window, or what went wrong reading them.
type Read<T> = Result<T, SourceError>;

/// The rows of a window read.
#[derive(Debug)]
struct Last {
    window: (u64, u64),
    messages: Messages,
    intervals: Intervals,
}

/// A table's rows as a window's read needs them.
trait WindowTable: Sized {
    /// Per row, its first and last tick (send and receive; start and end).
    fn ticks(&self) -> (&[u64], &[u64]);
    fn keep_where(&mut self, keep: &[bool]);
    fn join(&mut self, other: Self);
    fn reorder(&mut self, order: &[u32]);
}

/// [`WindowTable`] for a table of the model whose rows span `$first..=$last`.
macro_rules! window_table {
    ($table:ty, $first:ident, $last:ident) => {
        impl WindowTable for $table {
            fn ticks(&self) -> (&[u64], &[u64]) {
                (&self.$first, &self.$last)
            }

            fn keep_where(&mut self, keep: &[bool]) {
                self.retain_rows(keep);
            }

            fn join(&mut self, other: Self) {
                self.append(other);
            }

            fn reorder(&mut self, order: &[u32]) {
                self.permute(order);
            }
        }
    };
}

window_table!(Messages, send_time, recv_time);
window_table!(Intervals, start, end);

/// The rows of `rows` that overlap `[t0, t1]` and pass `also(first tick, last tick)`, in order.
fn cut<R: WindowTable>(mut rows: R, (t0, t1): (u64, u64), also: impl Fn(u64, u64) -> bool + Sync) -> R {
    let (first, last) = rows.ticks();
    let keep: Vec<bool> = first.par_iter().zip(last).map(|(&s, &e)| s <= t1 && e >= t0 && also(s, e)).collect();
    rows.keep_where(&keep);
    rows
}

/// The rows overlapping `window` from `kept`, the rows overlapping `kept_window` (which overlaps
/// `window`), and from `read` of the time of `window` outside it: a row overlapping both is in
/// `kept`; one ending before `kept_window` begins, or beginning after it ends, is read. Rows stay
/// in order of their first tick where both parts are (the store's order).
fn beside<R: WindowTable>(
    kept: R,
    (c, d): (u64, u64),
    window: (u64, u64),
    read: impl Fn((u64, u64)) -> Result<R, SourceError>,
) -> Result<R, SourceError> {
    let (a, b) = window;
    let mut rows = cut(kept, window, |_, _| true);
    if a < c {
        let before = cut(read((a, b.min(c - 1)))?, window, |_, e| e < c);
        if !before.ticks().0.is_empty() {
            let n = rows.ticks().0.len();
            rows.join(before);
            let order = merged(rows.ticks().0, n);
            rows.reorder(&order);
        }
    }
    if b > d {
        // After every kept row, which began by `d`.
        rows.join(cut(read((a.max(d + 1), b))?, window, |s, _| s > d));
    }
    Ok(rows)
}

/// The windows [`rows_beside`] reads for `window` beside the rows of `kept` (which overlaps it):
/// the time of `window` before `kept` and after it, where there is any.
pub fn windows_beside((c, d): (u64, u64), (a, b): (u64, u64)) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if a < c {
        out.push((a, b.min(c - 1)));
    }
    if b > d {
        out.push((a.max(d + 1), b));
    }
    out
}

/// The rows of `window` from the rows `kept` of the window `kept_window` (which overlaps it) and
/// the rows `read` gives for the windows [`windows_beside`] names (every row overlapping each, at
/// least): the rows a fresh read of `window` gives, in its order (a store's reader does this
/// for the window after its last; a store read from a server, beside the last window it got).
pub fn rows_beside(
    (messages, intervals): (Messages, Intervals),
    kept_window: (u64, u64),
    window: (u64, u64),
    read: &(dyn Fn((u64, u64)) -> Result<(Messages, Intervals), SourceError> + Sync),
) -> Result<(Messages, Intervals), SourceError> {
    let (m, i) = rayon::join(
        || beside(messages, kept_window, window, |w| read(w).map(|r| r.0)),
        || beside(intervals, kept_window, window, |w| read(w).map(|r| r.1)),
    );
    Ok((m?, i?))
}

/// The rows `first` (their first ticks), whose parts `..n` and `n..` are each in order, merged
/// in order of first tick (the first part's row first among equals).
fn merged(first: &[u64], n: usize) -> Vec<u32> {
    let (a, b) = first.split_at(n.min(first.len()));
    let mut order = Vec::with_capacity(first.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            order.push((n + j) as u32);
            j += 1;
        } else {
            order.push(i as u32);
            i += 1;
        }
    }
    order.extend((i..a.len()).map(|k| k as u32));
    order.extend((j..b.len()).map(|k| (n + k) as u32));
    order
}

impl StoreRows {
    pub(super) fn new(
        store: &std::path::Path,
        (messages, intervals): (u64, u64),
        locations: u32,
        regions: u32,
    ) -> Result<Self, SourceError> {
        Ok(Self {
            // Messages: from the lowest send time (column 2) to the highest receive time (3).
            messages: Groups::new(store, messages_table(), messages, 2, 3)?,
            // Intervals: from the lowest start (1) to the highest end (2).
            intervals: Groups::new(store, intervals_table(), intervals, 1, 2)?,
            locations,
            regions,
            last: std::sync::Mutex::new(None),
        })
    }

    /// The first and last tick of the rows, from the row groups' statistics (`None`: no rows).
    pub(super) fn span(&self) -> Option<(u64, u64)> {
        let groups = self.messages.groups.iter().chain(&self.intervals.groups);
        let first = groups.clone().map(|g| g.first).min()?;
        let last = groups.map(|g| g.last).filter(|&v| v != u64::MAX).max().unwrap_or(first);
        Some((first, last.max(first)))
    }

    /// Messages of the columns `c`, their ids checked.
    fn messages_of(&self, mut c: Vec<super::Owned>) -> Result<Messages, SourceError> {
        let m = super::messages_from(&mut c);
        self.check_locations(&m.source, &m.destination)?;
        Ok(m)
    }

    /// Whether messages' senders and receivers are locations of the store.
    fn check_locations(&self, source: &[u32], destination: &[u32]) -> Result<(), SourceError> {
        match source.iter().chain(destination).find(|&&v| v >= self.locations) {
            Some(&v) => Err(out_of_range("location", v, self.locations, &self.messages.path)),
            None => Ok(()),
        }
    }

    /// Intervals of the columns `c`, their ids and times checked.
    fn intervals_of(&self, mut c: Vec<super::Owned>) -> Result<Intervals, SourceError> {
        let i = super::intervals_from(&mut c);
        if let Some(&v) = i.location.iter().find(|&&v| v >= self.locations) {
            return Err(out_of_range("location", v, self.locations, &self.intervals.path));
        }
        if let Some(&v) = i.kind.iter().find(|&&v| v >= self.regions) {
            return Err(out_of_range("region", v, self.regions, &self.intervals.path));
        }
        if i.start.iter().zip(&i.end).any(|(s, e)| e < s) {
            return Err(super::invalid(&self.intervals.path, "an interval ends before it starts"));
        }
        Ok(i)
    }

    /// The messages and intervals overlapping `window`: from the last window's rows where it
    /// overlaps that one, reading only the time outside it; the rows are then kept in turn.
    /// The rows of `window` decoded from the store alone (nothing taken from the last window),
    /// the two tables side by side.
    fn read_fresh(&self, window: (u64, u64)) -> (Read<Messages>, Read<Intervals>) {
        rayon::join(
            || Ok(cut(self.messages_of(self.messages.read(window)?)?, window, |_, _| true)),
            || Ok(cut(self.intervals_of(self.intervals.read(window)?)?, window, |_, _| true)),
        )
    }

    fn read_rows(&self, window: (u64, u64)) -> Result<(Messages, Intervals), SourceError> {
        let last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let messages = |w| self.messages_of(self.messages.read(w)?);
        let intervals = |w| self.intervals_of(self.intervals.read(w)?);
        // The two tables side by side: a short window's rows lie in a row group or two of each,
        // which one table alone decodes on a thread or two.
        let (m, i) = match last.filter(|l| l.window.0 <= window.1 && window.0 <= l.window.1) {
            Some(Last { window: kept, messages: m, intervals: i }) => {
                rayon::join(|| beside(m, kept, window, messages), || beside(i, kept, window, intervals))
            }
            None => self.read_fresh(window),
        };
        let (m, i) = (m?, i?);
        let (messages, intervals) = rayon::join(|| m.clone(), || i.clone());
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Last { window, messages, intervals });
        Ok((m, i))
    }

    /// Sums every message into `b`: a few row groups decoded side by side, each batch of rows
    /// summed by the thread that decoded it while it is in the cache (one part of `b` per
    /// thread), reporting `progress(rows done)`. Only the columns a pyramid reads are decoded.
    /// Returns the seconds spent summing: the threads' time divided by the threads.
    pub(super) fn sum_messages(&self, b: &mut PyramidBuilder, progress: &dyn Fn(u64)) -> Result<f64, SourceError> {
        let (keys, mut parts) = b.message_parts(rayon::current_num_threads().clamp(1, 8));
        let threads = parts.len() as f64;
        let summing = std::sync::Mutex::new(0.0f64);
        let path = &self.messages.path;
        let wrong = || super::invalid(path, "a column's values do not match its type: re-run exaviz convert");
        let mut done = 0u64;
        // Source, destination, send time and bytes: not the receive times and tags.
        let result = self.messages.each_batch(
            &[0, 1, 2, 4],
            MESSAGE_BATCH,
            &mut parts,
            |part, c| {
                let m = MessageColumns {
                    source: u32s(&c[0]).ok_or_else(wrong)?,
                    destination: u32s(&c[1]).ok_or_else(wrong)?,
                    send_time: u64s(&c[2]).ok_or_else(wrong)?,
                    bytes: u32s(&c[3]).ok_or_else(wrong)?,
                };
                self.check_locations(m.source, m.destination)?;
                let t = std::time::Instant::now();
                part.add(&keys, m);
                *summing.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += t.elapsed().as_secs_f64();
                Ok(())
            },
            |parts, rows| {
                b.gather(parts);
                done += rows;
                progress(done);
                Ok(())
            },
        );
        b.put_parts(parts);
        result?;
        Ok(summing.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) / threads)
    }

    /// Every interval, one row group a batch (a few decoded at once), reporting
    /// `progress(rows done)`. Only the columns a pyramid reads are decoded: the depths are left
    /// empty.
    pub(super) fn each_interval(
        &self,
        progress: &dyn Fn(u64),
        f: &mut dyn FnMut(Intervals),
    ) -> Result<(), SourceError> {
        let mut done = 0u64;
        self.intervals.each(&[0, 1, 2, 3], &mut |c| {
            let i = self.intervals_of(c)?;
            done += i.start.len() as u64;
            f(i);
            progress(done);
            Ok(())
        })
    }
}

/// Rows of messages decoded and summed at a time by [`StoreRows::sum_messages`] (1.3 MB of the
/// columns it reads, near a core's cache).
const MESSAGE_BATCH: usize = 64 << 10;

fn out_of_range(what: &str, v: u32, bound: u32, path: &std::path::Path) -> SourceError {
    super::invalid(path, format!("{what} {v} is out of range (there are {bound}): re-run exaviz convert"))
}

impl WindowRows for StoreRows {
    fn estimate(&self, window: (u64, u64)) -> u64 {
        self.messages.rows_of_groups(window) + self.intervals.rows_of_groups(window)
    }

    fn read(&self, window: (u64, u64)) -> Result<(Messages, Intervals), String> {
        self.read_rows(window).map_err(|e| e.to_string())
    }

    fn read_once(&self, window: (u64, u64)) -> Result<(Messages, Intervals), String> {
        let (m, i) = self.read_fresh(window);
        Ok((m.map_err(|e| e.to_string())?, i.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use exaviz_model::dataset::Dataset;

    use parquet::arrow::arrow_reader::RowSelection;

    use super::super::tests::{mutations, temp};
    use super::super::{open, open_with};

    /// A store of 2.5M messages on 1,024 ranks (three row groups of messages): the in-memory
    /// dataset and the store opened out of core.
    fn opened(name: &str) -> (std::path::PathBuf, Dataset, Dataset) {
        let dir = temp(name);
        let path = dir.join("s.exaviz");
        exaviz_datasets::convert("gen:fd4?ranks=1024&messages=2500000", &path, &|_, _| {}).unwrap();
        let all = open(&path, &|_, _| {}).unwrap();
        let ooc = open_with(&path, &|_, _| {}, 0).unwrap();
        (dir, all, ooc)
    }

    /// Rows `i` of `v` sorted by the keys `key(i)`.
    fn sorted<K: Ord>(n: usize, key: impl Fn(usize) -> K) -> Vec<K> {
        let mut v: Vec<K> = (0..n).map(key).collect();
        v.sort();
        v
    }

    /// A window read once (an analysis going chunk by chunk) has the rows a window read and
    /// kept has, every column, and leaves nothing kept for the next window.
    #[test]
    fn a_window_read_once_equals_a_kept_read_and_keeps_nothing() {
        use exaviz_model::dataset::WindowRows;
        let (dir, all, ooc) = opened("once");
        let o = ooc.out_of_core.as_ref().expect("opened out of core");
        let fresh = || {
            super::StoreRows::new(
                &dir.join("s.exaviz"),
                (o.messages, o.intervals),
                1024,
                all.trace.region_names.len() as u32,
            )
            .unwrap()
        };
        let (kept, once) = (fresh(), fresh());
        let w = (o.span.0 + (o.span.1 - o.span.0) / 3, o.span.0 + (o.span.1 - o.span.0) / 2);
        let (m, i) = once.read_once(w).unwrap();
        assert!(once.last.lock().unwrap().is_none(), "a window read once is not kept");
        let (km, ki) = kept.read(w).unwrap();
        assert!(kept.last.lock().unwrap().is_some());
        assert!(
            m.source.len() > 1000 && i.start.len() > 1000,
            "{} messages, {} intervals",
            m.source.len(),
            i.start.len()
        );
        assert_eq!(
            (&m.source, &m.destination, &m.send_time, &m.recv_time, &m.bytes, &m.tag),
            (&km.source, &km.destination, &km.send_time, &km.recv_time, &km.bytes, &km.tag)
        );
        assert_eq!(
            (&i.location, &i.start, &i.end, &i.kind, &i.depth),
            (&ki.location, &ki.start, &ki.end, &ki.kind, &ki.depth)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A window overlapping the last one read (pans both ways, a zoom in and out, the same
    /// window again) takes the rows they share from it and reads the rest: the rows equal the
    /// in-memory trace's overlapping rows, all columns, in the order a fresh read gives them.
    #[test]
    fn a_window_beside_the_last_one_reads_only_the_rest_and_equals_a_fresh_read() {
        let (dir, all, ooc) = opened("beside");
        let o = ooc.out_of_core.as_ref().expect("opened out of core");
        let t = &all.trace;
        let span = o.span;
        let at = |f: f64| span.0 + ((span.1 - span.0) as f64 * f) as u64;
        let fresh = || {
            super::StoreRows::new(&dir.join("s.exaviz"), (o.messages, o.intervals), 1024, t.region_names.len() as u32)
                .unwrap()
        };
        let kept = fresh();
        let (mt, it) = (&t.messages, &t.intervals);
        let mut windows: Vec<(u64, u64)> = [
            (0.40, 0.42),
            (0.41, 0.43),
            (0.39, 0.41),
            (0.395, 0.40),
            (0.38, 0.45),
            (0.38, 0.45),
            (0.7, 0.71),
            (0.0, 1.0),
        ]
        .map(|(a, b)| (at(a), at(b)))
        .to_vec();
        // Windows ending at a message's send and then starting at a message's receive, each
        // followed by a pan past that tick: the rows at the edges are read once.
        let k = (0..mt.source.len()).find(|&k| mt.send_time[k] > at(0.6) && mt.recv_time[k] > mt.send_time[k]).unwrap();
        let (send, recv) = (mt.send_time[k], mt.recv_time[k]);
        windows.extend([(at(0.58), send), (at(0.59), send + (send - at(0.58)) / 4)]);
        windows.extend([(recv, recv + (span.1 - span.0) / 50), (recv - (span.1 - span.0) / 200, recv + 1)]);
        for window in windows {
            let share = window;
            let (m, i) = kept.read_rows(window).unwrap();
            let (fm, fi) = fresh().read_rows(window).unwrap();
            let message = |m: &exaviz_model::Messages, k: usize| {
                (m.send_time[k], m.recv_time[k], m.source[k], m.destination[k], m.bytes[k], m.tag[k])
            };
            let want: Vec<usize> =
                (0..mt.source.len()).filter(|&k| mt.send_time[k] <= window.1 && mt.recv_time[k] >= window.0).collect();
            assert!(!want.is_empty(), "{share:?}");
            assert_eq!(
                sorted(m.source.len(), |k| message(&m, k)),
                sorted(want.len(), |k| message(mt, want[k])),
                "{share:?}"
            );
            let interval =
                |i: &exaviz_model::Intervals, k: usize| (i.start[k], i.end[k], i.location[k], i.kind[k], i.depth[k]);
            let want: Vec<usize> =
                (0..it.start.len()).filter(|&k| it.start[k] <= window.1 && it.end[k] >= window.0).collect();
            assert_eq!(
                sorted(i.start.len(), |k| interval(&i, k)),
                sorted(want.len(), |k| interval(it, want[k])),
                "{share:?}"
            );
            // In the fresh read's order of first ticks (rows of one tick may trade places).
            assert_eq!(m.send_time, fm.send_time, "{share:?}");
            assert_eq!(i.start, fi.start, "{share:?}");
        }
        std::fs::remove_dir_all(dir).ok();
    }

    /// A window read from disk holds exactly the rows of the in-memory trace that overlap it,
    /// reading fewer row groups than the whole; out of core, the trace keeps every other table
    /// and reports the counts on disk.
    #[test]
    fn a_window_reads_exactly_its_rows_and_skips_the_rest() {
        let (dir, all, ooc) = opened("window");
        let o = ooc.out_of_core.as_ref().expect("opened out of core");
        assert!(all.out_of_core.is_none());
        assert!(ooc.trace.messages.source.is_empty() && ooc.trace.intervals.start.is_empty());
        assert_eq!(ooc.summary(), all.summary());
        assert_eq!(ooc.trace.locations.name, all.trace.locations.name);
        let span = o.span;
        let total = o.messages + o.intervals;
        assert_eq!(o.rows.estimate(span), total);
        let t = &all.trace;
        for share in [(0.1, 0.12), (0.5, 0.5), (0.97, 1.0)] {
            let at = |f: f64| span.0 + ((span.1 - span.0) as f64 * f) as u64;
            let window = (at(share.0), at(share.1));
            let estimate = o.rows.estimate(window);
            assert!(estimate < total, "{share:?}: {estimate} of {total} rows");
            let (m, i) = o.rows.read(window).unwrap();
            let (mt, it) = (&t.messages, &t.intervals);
            let want: Vec<usize> =
                (0..mt.source.len()).filter(|&k| mt.send_time[k] <= window.1 && mt.recv_time[k] >= window.0).collect();
            assert!(!want.is_empty() || !i.start.is_empty(), "{share:?}");
            assert!((m.source.len() + i.start.len()) as u64 <= estimate);
            let key = |s: &[u32], d: &[u32], a: &[u64], b: &[u64], k: usize| (a[k], b[k], s[k], d[k]);
            assert_eq!(
                sorted(m.source.len(), |k| key(&m.source, &m.destination, &m.send_time, &m.recv_time, k)),
                sorted(want.len(), |k| { key(&mt.source, &mt.destination, &mt.send_time, &mt.recv_time, want[k]) }),
                "{share:?}"
            );
            let want: Vec<usize> =
                (0..it.start.len()).filter(|&k| it.start[k] <= window.1 && it.end[k] >= window.0).collect();
            assert_eq!(
                sorted(i.start.len(), |k| (i.start[k], i.end[k], i.location[k], i.kind[k])),
                sorted(want.len(), |k| {
                    let k = want[k];
                    (it.start[k], it.end[k], it.location[k], it.kind[k])
                }),
                "{share:?}"
            );
        }
        // The page index: a window a fiftieth of the trace decodes its pages, not its row groups.
        let rows =
            super::StoreRows::new(&dir.join("s.exaviz"), (o.messages, o.intervals), 1024, t.region_names.len() as u32)
                .unwrap();
        let window = (span.0 + (span.1 - span.0) / 2, span.0 + (span.1 - span.0) / 2 + (span.1 - span.0) / 50);
        for (groups, wanted) in
            [(&rows.messages, t.messages.source.len() / 50), (&rows.intervals, t.intervals.start.len() / 50)]
        {
            let chosen = groups.chosen(window);
            assert!(chosen.iter().all(|(_, s)| s.is_some()), "every row group has a page index");
            let decoded: usize = chosen.iter().map(|(_, s)| s.as_ref().map_or(0, RowSelection::row_count)).sum();
            let of_groups = groups.rows_of_groups(window) as usize;
            assert!(
                decoded >= wanted && decoded < of_groups / 4,
                "{decoded} rows decoded, {wanted} wanted, {of_groups} in the row groups"
            );
        }
        let window = ooc.window_rows(span).unwrap();
        assert_eq!(window.trace.messages.source.len(), t.messages.source.len());
        assert_eq!(window.trace.span_of_whole, Some(span));
        // Its states rank as the whole trace's pyramid ranks them.
        assert_eq!(window.trace.state_ticks_of_whole, Some(o.pyramid.state_ticks()));
        assert!(o.pyramid.state_ticks().iter().any(|&v| v > 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Messages never received (receive time `u64::MAX`, the highest unsigned value: the page
    /// index orders the column as unsigned) overlap every window after their send, and a late
    /// window's pages keep them.
    #[test]
    fn a_late_window_keeps_messages_never_received() {
        let dir = temp("unreceived");
        let path = dir.join("s.exaviz");
        let mut d = exaviz_datasets::open("gen:fd4?ranks=300&messages=200000").unwrap();
        let m = &mut d.trace.messages;
        let mut order: Vec<usize> = (0..m.source.len()).collect();
        order.sort_by_key(|&k| m.send_time[k]);
        let lost = [order[10], order[30_000], order[90_000]];
        for &k in &lost {
            m.recv_time[k] = u64::MAX;
        }
        super::super::StoreWriter::create(&path).unwrap().finish(&d).unwrap();
        let t = &d.trace;
        let rows = super::StoreRows::new(
            &path,
            (t.messages.source.len() as u64, t.intervals.start.len() as u64),
            300,
            t.region_names.len() as u32,
        )
        .unwrap();
        let last = t.messages.send_time.iter().chain(&t.intervals.end).max().copied().unwrap();
        let window = (last - last / 20, last);
        let chosen = rows.messages.chosen(window);
        assert!(chosen.iter().all(|(_, s)| s.is_some()), "the page index is read");
        let (m, _) = rows.read_rows(window).unwrap();
        for &k in &lost {
            let found = (0..m.source.len()).any(|i| {
                m.recv_time[i] == u64::MAX
                    && m.send_time[i] == t.messages.send_time[k]
                    && m.source[i] == t.messages.source[k]
            });
            assert!(found, "message {k}, sent at {}, never received, is in the late window", t.messages.send_time[k]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A store written without a pyramid gets one summed from its rows, equal to one summed in
    /// memory over the same span, and then opens out of core.
    #[test]
    fn a_pyramid_added_to_a_store_equals_one_summed_in_memory() {
        let dir = temp("add-pyramid");
        let path = dir.join("s.exaviz");
        let d = exaviz_datasets::open("gen:fd4?ranks=300&messages=200000").unwrap();
        super::super::StoreWriter::create(&path).unwrap().finish(&d).unwrap();
        assert!(super::super::manifest(&path).unwrap().pyramid.is_none());
        assert!(open_with(&path, &|_, _| {}, 0).unwrap().out_of_core.is_none());
        let seen = std::cell::Cell::new(0);
        let (m, _) = super::super::add_pyramid(&path, &|done, _| seen.set(done)).unwrap();
        assert_eq!(seen.get(), (d.trace.messages.source.len() + d.trace.intervals.start.len()) as u64);
        let span = m.pyramid.unwrap();
        let mut b = exaviz_model::pyramid::PyramidBuilder::new(span.shape());
        b.add_messages(&d.trace.messages);
        b.add_intervals(&d.trace.intervals);
        assert_eq!(super::super::pyramid(&path).unwrap(), Some(b.finish()));
        let ooc = open_with(&path, &|_, _| {}, 0).unwrap();
        assert!(ooc.out_of_core.is_some());
        assert!(std::fs::read_dir(&path).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with('.')));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Damaged message, interval and pyramid files of a store opened out of core: one line
    /// naming the store, at open or at a window's read, never a panic.
    #[test]
    fn mutated_stores_opened_out_of_core_never_panic() {
        let dir = temp("ooc-fuzz");
        let path = dir.join("s.exaviz");
        exaviz_datasets::convert("gen:fd4?ranks=64&messages=20000", &path, &|_, _| {}).unwrap();
        let (mut errors, mut summing_errors) = (0, 0);
        for file in ["messages.parquet", "intervals.parquet", "pyramid_messages.parquet", "pyramid_states.parquet"] {
            let f = path.join(file);
            let original = std::fs::read(&f).unwrap();
            let cuts = [0, original.len() / 2, original.len() - 1];
            for b in mutations(&original, (original.len() / 60).max(1), &cuts) {
                std::fs::write(&f, &b).unwrap();
                let result = open_with(&path, &|_, _| {}, 0).map_err(|e| e.to_string()).and_then(|d| {
                    let o = d.out_of_core.expect("opened out of core");
                    o.rows.read(o.span).map(|_| ())
                });
                if let Err(e) = result {
                    assert!(!e.contains('\n') && e.contains("s.exaviz"), "{e}");
                    errors += 1;
                }
                // The pyramid summed from the rows, each batch as it is decoded.
                if let Err(e) = super::super::sum_pyramid(&path, &|_, _| {}) {
                    let e = e.to_string();
                    assert!(!e.contains('\n') && e.contains("s.exaviz"), "{e}");
                    summing_errors += 1;
                }
            }
            std::fs::write(&f, &original).unwrap();
        }
        assert!(errors > 100, "corruptions should mostly be caught ({errors})");
        assert!(summing_errors > 50, "corrupt rows should mostly be caught when summed ({summing_errors})");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
