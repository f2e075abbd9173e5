//! What a client asks `exaviz serve` and how the answers travel: a request is the ticket of one
//! Arrow Flight `DoGet`, a small JSON object decoded strictly; an answer is a stream of Arrow
//! record batches.
//!
//! ```text
//! {"store": "run.exaviz", "ask": "head"}        every file but the messages and intervals
//! {"store": "run.exaviz", "ask": "events"}      the messages' and intervals' files
//! {"store": "run.exaviz", "ask": {"rows": {"t0": 0, "t1": 99, "budget": 5000000}}}
//! {"store": "run.exaviz", "ask": {"rows": {"t0": 0, "t1": 99, "budget": 5000000, "parts": [[0, 9], [90, 99]]}}}
//! {"store": "run.exaviz", "ask": {"rows": {"t0": 0, "t1": 99, "budget": 5000000, "cells": {"window": [0, 99],
//!     "plot": [170, 48, 654, 668], "rows": 0, "summary": 0, "states": 0, "opened": null, "above": 436872}}}}
//! ```
//!
//! A request of rows with `parts` (at most two windows) asks for the rows of those windows only
//! (what a pan uncovers: the client holds the rest), within the budget of the whole window.
//!
//! Files travel as batches of (`name` utf8, `offset` u64, `data` binary) of at most
//! [`CHUNK_BYTES`] each, in order. Rows travel in the store's columns, the messages then the
//! intervals, each table's batches after a schema of its own, with times as steps: a row's send
//! or start time as the step from the row before it in its batch (the first row's from 0), a
//! receive or end time as the step from its send or start (`u64`s, wrapping), which Zstandard
//! compresses to a fraction of the raw times, and a message's receiver as the step from its
//! sender (`partner`: neighbours in a grid repeat a few steps). The messages' schema metadata carries
//! `estimate`, the messages and intervals the store's statistics bound the window to, and `over`
//! where that is above the budget (then no rows follow).
//!
//! A request of rows with `cells` (a timeline picture, [`CellsAsk`]) is answered, where the
//! window holds more than `cells.above` rows, with the picture's cells instead
//! ([`cells_parts`]): per plot pixel row by row its state's colour slot and opacity, its message
//! lines and their mean shade (schema metadata `cells` = `WIDTHxHEIGHT`, `rows` drawn,
//! `estimate`); then the locations' groups as runs; then the summary track's shares.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray, UInt8Array, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use exaviz_model::dataset::{Cells, CellsAsk, Grouped, MAX_CELLS};
use exaviz_model::{Intervals, Messages};

/// Largest ticket accepted: a request is a few dozen bytes.
pub const MAX_TICKET_BYTES: usize = 4096;
/// Largest piece of a file in one batch.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Rows per batch of an answer of rows.
pub const BATCH_ROWS: usize = 1 << 18;

/// One request.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The store: a path below a folder the server serves, or its name where the server was
    /// started for the store itself.
    pub store: String,
    pub ask: Ask,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Ask {
    /// Every file of the store but the messages and intervals (a store opened out of core).
    Head,
    /// The messages' and intervals' files (a store small enough to hold).
    Events,
    /// The messages and intervals of a time window, where the store's statistics bound them to
    /// at most `budget`.
    Rows(RowsAsk),
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsAsk {
    /// The window, ticks, both ends in.
    pub t0: u64,
    pub t1: u64,
    pub budget: u64,
    /// The windows whose rows are sent (none: the whole window's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<(u64, u64)>,
    /// Where the window holds more rows than `cells.above` (and at most `budget`): the timeline
    /// picture `cells` names as per-pixel cells rather than the rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<CellsAsk>,
}

/// Most parts a request of rows names.
pub const MAX_PARTS: usize = 2;

impl RowsAsk {
    /// The windows whose rows are sent.
    pub fn windows(&self) -> Vec<(u64, u64)> {
        if self.parts.is_empty() { vec![(self.t0, self.t1)] } else { self.parts.clone() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowTable {
    Messages,
    Intervals,
}

impl Request {
    /// The ticket's bytes.
    pub fn ticket(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A ticket decoded and checked: one line saying what is wrong otherwise.
    pub fn decode(ticket: &[u8]) -> Result<Request, String> {
        if ticket.len() > MAX_TICKET_BYTES {
            return Err(format!("request of {} bytes; at most {MAX_TICKET_BYTES} are read", ticket.len()));
        }
        let r: Request = serde_json::from_slice(ticket).map_err(|e| format!("not an exaviz request ({e})"))?;
        if r.store.is_empty() || r.store.len() > 1024 || r.store.contains('\0') {
            return Err("the store's name is empty, too long or holds a NUL".into());
        }
        if let Ask::Rows(a) = &r.ask {
            if a.parts.len() > MAX_PARTS {
                return Err(format!("{} parts of a window; at most {MAX_PARTS} are read", a.parts.len()));
            }
            for &(t0, t1) in std::iter::once(&(a.t0, a.t1)).chain(&a.parts) {
                if t1 < t0 {
                    return Err(format!("window [{t0}, {t1}] ends before it starts"));
                }
            }
        }
        Ok(r)
    }
}

/// The schema of a file's pieces.
pub fn files_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("offset", DataType::UInt64, false),
        Field::new("data", DataType::Binary, false),
    ]))
}

/// The schema of the head's pieces, with the span of the store's rows (the row groups'
/// statistics know the last receive and end times where the manifest may not), and `cells`:
/// this server draws a dense window's cells (a server without it refuses a request that asks
/// for them, so a client asks only where the head says so).
pub fn head_schema(span: Option<(u64, u64)>) -> SchemaRef {
    let mut meta: std::collections::HashMap<String, String> =
        span.map(|(a, b)| [("span".to_string(), format!("{a},{b}"))].into_iter().collect()).unwrap_or_default();
    meta.insert("cells".into(), "1".into());
    Arc::new(files_schema().as_ref().clone().with_metadata(meta))
}

/// Whether a head's schema says its server draws cells ([`head_schema`]).
pub fn draws_cells(schema: &Schema) -> bool {
    schema.metadata().get("cells").is_some_and(|v| v == "1")
}

/// The span a head's schema carries.
pub fn span_of(schema: &Schema) -> Option<(u64, u64)> {
    let (a, b) = schema.metadata().get("span")?.split_once(',')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (a <= b).then_some((a, b))
}

/// One piece of file `name` from `offset`.
pub fn file_piece(name: &str, offset: u64, data: &[u8]) -> Result<RecordBatch, String> {
    RecordBatch::try_new(
        files_schema(),
        vec![
            Arc::new(StringArray::from(vec![name])) as ArrayRef,
            Arc::new(UInt64Array::from(vec![offset])),
            Arc::new(BinaryArray::from(vec![data])),
        ],
    )
    .map_err(|e| e.to_string())
}

/// Files assembled from their pieces, in order; pieces out of order, of another schema or of a
/// name that is not a plain file name are refused.
#[derive(Default)]
pub struct Assembled {
    pub files: std::collections::BTreeMap<String, Vec<u8>>,
    pub bytes: u64,
}

impl Assembled {
    pub fn add(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let bad = || "a file piece of another shape".to_string();
        let [name, offset, data] = batch.columns() else { return Err(bad()) };
        let name = name.as_any().downcast_ref::<StringArray>().ok_or_else(bad)?;
        let offset = offset.as_any().downcast_ref::<UInt64Array>().ok_or_else(bad)?;
        let data = data.as_any().downcast_ref::<BinaryArray>().ok_or_else(bad)?;
        if name.null_count() + offset.null_count() + data.null_count() > 0 {
            return Err(bad());
        }
        for i in 0..batch.num_rows() {
            let n = name.value(i);
            if !plain_name(n) {
                return Err(format!("a file named '{n}' is not a store's file"));
            }
            let file = self.files.entry(n.to_string()).or_default();
            if offset.value(i) != file.len() as u64 {
                return Err(format!("a piece of {n} at {} where {} was expected", offset.value(i), file.len()));
            }
            file.extend_from_slice(data.value(i));
            self.bytes += data.value(i).len() as u64;
        }
        Ok(())
    }
}

/// A file name with no folder in it: what a store holds.
pub fn plain_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 255 && !n.contains(['/', '\\', '\0']) && n != "." && n != ".."
}

fn u32_field(n: &str) -> Field {
    Field::new(n, DataType::UInt32, false)
}

fn u64_field(n: &str) -> Field {
    Field::new(n, DataType::UInt64, false)
}

/// The columns of a table's rows on the wire, as in the store.
pub fn rows_schema(table: RowTable) -> Schema {
    Schema::new(match table {
        RowTable::Messages => vec![
            u32_field("source"),
            u32_field("partner"),
            u64_field("send_step"),
            u64_field("transfer"),
            u32_field("bytes"),
            u32_field("tag"),
        ],
        RowTable::Intervals => vec![
            u32_field("location"),
            u64_field("start_step"),
            u64_field("duration"),
            u32_field("region"),
            u32_field("depth"),
        ],
    })
}

/// The schema of an answer of rows: the table's columns, the window's estimate, and whether
/// it was over the budget.
pub fn answer_schema(table: RowTable, estimate: u64, over: bool) -> SchemaRef {
    let mut meta = std::collections::HashMap::from([("estimate".to_string(), estimate.to_string())]);
    if over {
        meta.insert("over".into(), "1".into());
    }
    Arc::new(rows_schema(table).with_metadata(meta))
}

/// The schema of a window's cells: per plot pixel, row by row, its state's colour slot and
/// opacity, its message lines and their shade; the window's estimate, the picture's size and
/// the rows drawn in its metadata.
pub fn cells_schema(estimate: u64, c: &Cells) -> SchemaRef {
    let u8_field = |n: &str| Field::new(n, DataType::UInt8, false);
    let meta = std::collections::HashMap::from([
        ("estimate".to_string(), estimate.to_string()),
        ("cells".to_string(), format!("{}x{}", c.width, c.height)),
        ("rows".to_string(), c.rows.to_string()),
    ]);
    Arc::new(
        Schema::new(vec![u8_field("slot"), u8_field("alpha"), u32_field("lines"), u8_field("shade")])
            .with_metadata(meta),
    )
}

/// The schema of the locations' groups beside cells: runs of locations (`first`, `len`) of each
/// group in order, `group` its number, [`APART`] for those drawn apart (most apart first) and
/// [`OPENED`] for the band opened; `grouped` in the metadata where the rows are grouped.
pub fn groups_schema(grouped: bool) -> SchemaRef {
    let meta =
        if grouped { [("grouped".to_string(), "1".to_string())].into_iter().collect() } else { Default::default() };
    Arc::new(Schema::new(vec![u32_field("group"), u32_field("first"), u32_field("len")]).with_metadata(meta))
}

/// [`groups_schema`]'s group of the locations drawn apart.
pub const APART: u32 = u32::MAX;
/// [`groups_schema`]'s group of the band opened.
pub const OPENED: u32 = u32::MAX - 1;

/// The cells of `c` as batches of [`BATCH_ROWS`] pixels, then its groups, then its summary
/// track's shares: three parts.
pub fn cells_parts(c: &Cells, estimate: u64) -> Result<Vec<(SchemaRef, Vec<RecordBatch>)>, String> {
    c.check(u32::MAX)?;
    let schema = cells_schema(estimate, c);
    let n = c.slot.len();
    let batches = (0..n)
        .step_by(BATCH_ROWS)
        .map(|s| {
            let r = s..(s + BATCH_ROWS).min(n);
            let u8s = |v: &[u8]| Arc::new(UInt8Array::from(v[r.clone()].to_vec())) as ArrayRef;
            RecordBatch::try_new(
                schema.clone(),
                vec![u8s(&c.slot), u8s(&c.alpha), u32s(&c.lines[r.clone()]), u8s(&c.shade)],
            )
            .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (mut group, mut first, mut len) = (Vec::new(), Vec::new(), Vec::new());
    if let Some((groups, apart, opened)) = &c.groups {
        let numbered = groups.iter().enumerate().map(|(k, g)| (k as u32, g)).chain([(APART, apart), (OPENED, opened)]);
        for (k, members) in numbered {
            for &l in members {
                match (group.last(), first.last(), len.last_mut()) {
                    (Some(&g), Some(&f), Some(n)) if g == k && f + *n == l => *n += 1,
                    _ => {
                        group.push(k);
                        first.push(l);
                        len.push(1);
                    }
                }
            }
        }
    }
    let gs = groups_schema(c.groups.is_some());
    let g =
        RecordBatch::try_new(gs.clone(), vec![u32s(&group), u32s(&first), u32s(&len)]).map_err(|e| e.to_string())?;
    let ss = summary_schema();
    let shares = Arc::new(arrow_array::Float32Array::from(c.summary.clone())) as ArrayRef;
    let summary = RecordBatch::try_new(ss.clone(), vec![shares]).map_err(|e| e.to_string())?;
    Ok(vec![(schema, batches), (gs, vec![g]), (ss, vec![summary])])
}

/// The schema of the summary track's shares beside cells ([`Cells::summary`]).
pub fn summary_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("share", DataType::Float32, false)]))
}

/// The cells of an answer ([`cells_parts`]) for a trace of `locations` locations, checked:
/// every column one value per pixel, every location in range and in one group at most.
pub fn cells_of(answer: &[(SchemaRef, Vec<RecordBatch>)], locations: u32) -> Result<Cells, String> {
    let [(cs, cb), (gs, gb), (_, sb)] = answer else { return Err(format!("cells in {} tables, not 3", answer.len())) };
    let meta = |k: &str| cs.metadata().get(k).ok_or_else(|| format!("cells without their {k}"));
    let (w, h) = meta("cells")?.split_once('x').ok_or("cells of no size")?;
    let (width, height): (u32, u32) =
        (w.parse().map_err(|_| "cells of no size")?, h.parse().map_err(|_| "cells of no size")?);
    if u64::from(width) * u64::from(height) > MAX_CELLS {
        return Err(format!("cells of {width}x{height} pixels; at most {MAX_CELLS} are drawn"));
    }
    let rows = meta("rows")?.parse().map_err(|_| "cells with no count of rows")?;
    let mut c = Cells { width, height, rows, ..Cells::default() };
    let bad = || "cells of another shape".to_string();
    for b in cb {
        let [slot, alpha, lines, shade] = b.columns() else { return Err(bad()) };
        let u8s = |a: &ArrayRef| {
            a.as_any().downcast_ref::<UInt8Array>().filter(|a| a.null_count() == 0).map(|a| a.values().to_vec())
        };
        let lines = lines.as_any().downcast_ref::<UInt32Array>().filter(|a| a.null_count() == 0).ok_or_else(bad)?;
        c.slot.extend(u8s(slot).ok_or_else(bad)?);
        c.alpha.extend(u8s(alpha).ok_or_else(bad)?);
        c.lines.extend_from_slice(lines.values());
        c.shade.extend(u8s(shade).ok_or_else(bad)?);
        if c.slot.len() as u64 > MAX_CELLS {
            return Err(bad());
        }
    }
    if gs.metadata().contains_key("grouped") {
        c.groups = Some(groups_of(gb, locations)?);
    }
    for b in sb {
        let [shares] = b.columns() else { return Err(bad()) };
        let shares = shares.as_any().downcast_ref::<arrow_array::Float32Array>().filter(|a| a.null_count() == 0);
        c.summary.extend_from_slice(shares.ok_or_else(bad)?.values());
        if c.summary.len() > c.width as usize * exaviz_model::dataset::SUMMARY_SLOTS {
            return Err(bad());
        }
    }
    c.check(locations)?;
    Ok(c)
}

/// The groups of [`groups_schema`]'s batches, every location below `locations` and named once.
fn groups_of(batches: &[RecordBatch], locations: u32) -> Result<Grouped, String> {
    let bad = || "groups of another shape".to_string();
    let (mut groups, mut apart, mut opened): Grouped = Default::default();
    let mut named = 0u64;
    for b in batches {
        let cols: Vec<&UInt32Array> = b
            .columns()
            .iter()
            .map(|a| a.as_any().downcast_ref::<UInt32Array>().filter(|a| a.null_count() == 0))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        let [group, first, len] = cols[..] else { return Err(bad()) };
        for i in 0..b.num_rows() {
            let (k, f, n) = (group.value(i), first.value(i), len.value(i));
            let end = u64::from(f) + u64::from(n);
            named += u64::from(n);
            if end > u64::from(locations) || named > u64::from(locations) {
                return Err(format!("groups name locations up to {end} (there are {locations})"));
            }
            let into = match k {
                APART => &mut apart,
                OPENED => &mut opened,
                k if (k as usize) < groups.len() => &mut groups[k as usize],
                k if k as usize == groups.len() => {
                    groups.push(Vec::new());
                    groups.last_mut().ok_or_else(bad)?
                }
                _ => return Err(format!("group {k} after {} groups", groups.len())),
            };
            into.extend(f..f + n);
        }
    }
    Ok((groups, apart, opened))
}

fn u32s(v: &[u32]) -> ArrayRef {
    Arc::new(UInt32Array::from(v.to_vec()))
}

/// Times `t[r]` as steps from the one before in `t` (the first row's from 0), and times `u[r]`
/// as steps from `t[r]`. Steps run on from batch to batch of a table (Flight may cut a batch
/// into several on the wire).
fn steps(t: &[u64], u: &[u64], r: std::ops::Range<usize>) -> (ArrayRef, ArrayRef) {
    let before = r.start.checked_sub(1).map_or(0, |i| t[i]);
    let (t, u) = (&t[r.clone()], &u[r]);
    let from = std::iter::once(before).chain(t.iter().copied());
    let steps: Vec<u64> = t.iter().zip(from).map(|(&a, b)| a.wrapping_sub(b)).collect();
    let after: Vec<u64> = u.iter().zip(t).map(|(&b, &a)| b.wrapping_sub(a)).collect();
    (Arc::new(UInt64Array::from(steps)), Arc::new(UInt64Array::from(after)))
}

/// The times [`steps`] made steps of, appended to `t` and `u` (which hold the table's rows
/// before them).
fn unstep(steps: &[u64], after: &[u64], t: &mut Vec<u64>, u: &mut Vec<u64>) {
    let mut at = t.last().copied().unwrap_or(0);
    for (&s, &a) in steps.iter().zip(after) {
        at = at.wrapping_add(s);
        t.push(at);
        u.push(at.wrapping_add(a));
    }
}

/// Messages `range` as a batch of `schema`.
pub fn messages_batch(m: &Messages, r: std::ops::Range<usize>, schema: SchemaRef) -> Result<RecordBatch, String> {
    let (send, transfer) = steps(&m.send_time, &m.recv_time, r.clone());
    let partner: Vec<u32> =
        m.destination[r.clone()].iter().zip(&m.source[r.clone()]).map(|(&d, &s)| d.wrapping_sub(s)).collect();
    let cols = vec![
        u32s(&m.source[r.clone()]),
        Arc::new(UInt32Array::from(partner)),
        send,
        transfer,
        u32s(&m.bytes[r.clone()]),
        u32s(&m.tag[r]),
    ];
    RecordBatch::try_new(schema, cols).map_err(|e| e.to_string())
}

/// Intervals `range` as a batch of `schema`.
pub fn intervals_batch(v: &Intervals, r: std::ops::Range<usize>, schema: SchemaRef) -> Result<RecordBatch, String> {
    let (start, duration) = steps(&v.start, &v.end, r.clone());
    let cols = vec![u32s(&v.location[r.clone()]), start, duration, u32s(&v.kind[r.clone()]), u32s(&v.depth[r])];
    RecordBatch::try_new(schema, cols).map_err(|e| e.to_string())
}

/// A batch's `u32` columns and `u64` columns, each in order.
type Columns<'a> = (Vec<&'a [u32]>, Vec<&'a [u64]>);

/// The columns of `batch` as the table's, checked against its schema.
fn columns(batch: &RecordBatch, table: RowTable) -> Result<Columns<'_>, String> {
    let want = rows_schema(table);
    if batch.num_columns() != want.fields().len() {
        return Err(format!("{} columns where {} were expected", batch.num_columns(), want.fields().len()));
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (c, f) in batch.columns().iter().zip(want.fields()) {
        if c.null_count() > 0 {
            return Err(format!("column {} holds nulls", f.name()));
        }
        match f.data_type() {
            DataType::UInt32 => a.push(
                c.as_any()
                    .downcast_ref::<UInt32Array>()
                    .ok_or_else(|| format!("column {} is not u32", f.name()))?
                    .values() as &[u32],
            ),
            _ => b.push(
                c.as_any()
                    .downcast_ref::<UInt64Array>()
                    .ok_or_else(|| format!("column {} is not u64", f.name()))?
                    .values() as &[u64],
            ),
        }
    }
    Ok((a, b))
}

/// Appends the messages of `batch` to `m`.
pub fn add_messages(m: &mut Messages, batch: &RecordBatch) -> Result<(), String> {
    let (a, b) = columns(batch, RowTable::Messages)?;
    m.source.extend_from_slice(a[0]);
    m.destination.extend(a[1].iter().zip(a[0]).map(|(&p, &s)| s.wrapping_add(p)));
    unstep(b[0], b[1], &mut m.send_time, &mut m.recv_time);
    m.bytes.extend_from_slice(a[2]);
    m.tag.extend_from_slice(a[3]);
    Ok(())
}

/// Appends the intervals of `batch` to `v`.
pub fn add_intervals(v: &mut Intervals, batch: &RecordBatch) -> Result<(), String> {
    let (a, b) = columns(batch, RowTable::Intervals)?;
    v.location.extend_from_slice(a[0]);
    unstep(b[0], b[1], &mut v.start, &mut v.end);
    v.kind.extend_from_slice(a[1]);
    v.depth.extend_from_slice(a[2]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_through_its_ticket() {
        for ask in [
            Ask::Head,
            Ask::Events,
            Ask::Rows(RowsAsk { t0: 5, t1: 9, budget: 100, parts: Vec::new(), cells: None }),
            Ask::Rows(RowsAsk { t0: 5, t1: 9, budget: 100, parts: vec![(5, 6), (8, 9)], cells: None }),
        ] {
            let r = Request { store: "runs/a.exaviz".into(), ask };
            assert_eq!(Request::decode(&r.ticket()).unwrap(), r);
        }
        let text = br#"{"store":"a","ask":{"rows":{"t0":1,"t1":2,"budget":3}}}"#;
        assert!(Request::decode(text).is_ok());
    }

    #[test]
    fn malformed_requests_get_one_line_and_no_panic() {
        let bad: [&[u8]; 9] = [
            b"",
            b"{}",
            br#"{"store":"a","ask":"head","more":1}"#,
            br#"{"store":"","ask":"head"}"#,
            br#"{"store":"a","ask":{"rows":{"t0":9,"t1":2,"budget":3}}}"#,
            br#"{"store":"a","ask":{"rows":{"table":"nodes","t0":1,"t1":2,"budget":3}}}"#,
            br#"{"store":"a","ask":{"rows":{"t0":1,"t1":2,"budget":3,"parts":[[1,1],[2,2],[1,2]]}}}"#,
            br#"{"store":"a","ask":{"rows":{"t0":1,"t1":2,"budget":3,"parts":[[2,1]]}}}"#,
            &[0xff; 5000],
        ];
        for b in bad {
            let e = Request::decode(b).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
    }

    /// Mutation fuzz of the request decoder: every byte flipped, cut or repeated in a few valid
    /// tickets decodes or is refused with one line, and a decoded request is a valid one.
    #[test]
    fn the_request_decoder_survives_mutation() {
        let seeds = [
            Request { store: "a.exaviz".into(), ask: Ask::Head },
            Request {
                store: "/data/runs/b.exaviz".into(),
                ask: Ask::Rows(RowsAsk { t0: 10, t1: 1 << 40, budget: 5_000_000, parts: vec![(10, 99)], cells: None }),
            },
        ];
        let mut rng = exaviz_model::rng::SplitMix64(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next_u64();
        let (mut decoded, mut refused) = (0, 0);
        for seed in &seeds {
            let t = seed.ticket();
            for _ in 0..4000 {
                let mut m = t.clone();
                match next() % 4 {
                    0 => {
                        let i = (next() as usize) % m.len();
                        m[i] = next() as u8;
                    }
                    1 => m.truncate((next() as usize) % m.len()),
                    2 => {
                        let i = (next() as usize) % m.len();
                        let piece = m[i..].to_vec();
                        m.extend_from_slice(&piece);
                    }
                    _ => {
                        let i = (next() as usize) % m.len();
                        m.insert(i, b"{}[]\",:0-9e"[(next() % 11) as usize]);
                    }
                }
                match Request::decode(&m) {
                    Ok(r) => {
                        decoded += 1;
                        assert!(!r.store.is_empty() && !r.store.contains('\0'));
                        if let Ask::Rows(a) = r.ask {
                            assert!(a.t0 <= a.t1 && a.parts.len() <= MAX_PARTS);
                            assert!(a.parts.iter().all(|p| p.0 <= p.1));
                        }
                    }
                    Err(e) => {
                        refused += 1;
                        assert!(!e.contains('\n'), "{e}");
                    }
                }
            }
        }
        assert!(decoded > 0 && refused > 0, "{decoded} decoded, {refused} refused");
    }

    #[test]
    fn a_head_says_its_server_draws_cells_and_its_span() {
        let head = head_schema(Some((3, 9)));
        assert!(draws_cells(&head));
        assert_eq!(span_of(&head), Some((3, 9)));
        // An older server's head: its span, no cells.
        let older = Schema::new(files_schema().fields().clone())
            .with_metadata([("span".to_string(), "3,9".to_string())].into_iter().collect());
        assert!(!draws_cells(&older) && span_of(&older) == Some((3, 9)));
    }

    #[test]
    fn files_assemble_in_order_and_refuse_folders() {
        let mut a = Assembled::default();
        a.add(&file_piece("m.json", 0, b"ab").unwrap()).unwrap();
        a.add(&file_piece("m.json", 2, b"cd").unwrap()).unwrap();
        assert_eq!(a.files["m.json"], b"abcd");
        assert!(a.add(&file_piece("m.json", 9, b"x").unwrap()).unwrap_err().contains("expected"));
        assert!(a.add(&file_piece("../etc/passwd", 0, b"x").unwrap()).is_err());
    }

    #[test]
    fn rows_round_trip_through_batches() {
        let m = Messages {
            source: vec![0, 1, 1],
            destination: vec![1, 0, 0],
            send_time: vec![5, 6, u64::MAX],
            recv_time: vec![7, 8, u64::MAX],
            bytes: vec![10, 20, 30],
            tag: vec![0, 3, 3],
        };
        let mut back = Messages::default();
        add_messages(&mut back, &messages_batch(&m, 0..3, answer_schema(RowTable::Messages, 2, false)).unwrap())
            .unwrap();
        assert_eq!((&back.send_time, &back.recv_time), (&m.send_time, &m.recv_time));
        assert_eq!(back.tag, m.tag);
        let v = Intervals {
            location: vec![1, 2],
            start: vec![9, 2],
            end: vec![12, 3],
            kind: vec![4, 0],
            depth: vec![5, 0],
        };
        let mut w = Intervals::default();
        add_intervals(&mut w, &intervals_batch(&v, 0..2, answer_schema(RowTable::Intervals, 1, false)).unwrap())
            .unwrap();
        assert_eq!((&w.start, &w.end, w.kind[0], w.depth[0]), (&v.start, &v.end, 4, 5));
        // Steps run on across batches: a table cut into batches anywhere decodes the same.
        let mut cut = Messages::default();
        for r in [0..1, 1..3] {
            add_messages(&mut cut, &messages_batch(&m, r, answer_schema(RowTable::Messages, 2, false)).unwrap())
                .unwrap();
        }
        assert_eq!((&cut.send_time, &cut.recv_time), (&m.send_time, &m.recv_time));
        let whole = messages_batch(&m, 0..3, answer_schema(RowTable::Messages, 2, false)).unwrap();
        let mut sliced = Messages::default();
        for (o, n) in [(0, 2), (2, 1)] {
            add_messages(&mut sliced, &whole.slice(o, n)).unwrap();
        }
        assert_eq!((&sliced.send_time, &sliced.recv_time), (&m.send_time, &m.recv_time));
        // Intervals' columns are not messages'.
        let b = intervals_batch(&v, 0..1, answer_schema(RowTable::Intervals, 1, false)).unwrap();
        assert!(add_messages(&mut back, &b).is_err());
    }

    /// Cells of a 5x3 picture with two groups, one location apart and none opened.
    fn some_cells() -> Cells {
        let n = 15;
        Cells {
            width: 5,
            height: 3,
            slot: (0..n).map(|k| if k % 4 == 0 { exaviz_model::dataset::NO_SLOT } else { (k % 3) as u8 }).collect(),
            alpha: (0..n).map(|k| (k * 17) as u8).collect(),
            lines: (0..n).map(|k| k * k * 1000).collect(),
            shade: (0..n).map(|k| (255 - k) as u8).collect(),
            groups: Some((vec![vec![0, 1, 2, 5, 6], vec![3, 8, 9]], vec![7], Vec::new())),
            summary: (0..40).map(|k| k as f32 / 40.0).collect(),
            rows: 12_345,
        }
    }

    #[test]
    fn cells_round_trip_through_batches() {
        let c = some_cells();
        let parts = cells_parts(&c, 99).unwrap();
        assert_eq!(parts[0].0.metadata()["estimate"], "99");
        // Runs of locations: [0, 3), [5, 7) / [3, 4), [8, 10) / 7.
        assert_eq!(parts[1].1[0].num_rows(), 5);
        assert_eq!(cells_of(&parts, 10).unwrap(), c);
        // A batch cut anywhere on the wire decodes the same.
        let cut: Vec<_> = parts
            .iter()
            .map(|(s, b)| {
                (
                    s.clone(),
                    b.iter()
                        .flat_map(|b| {
                            [b.slice(0, b.num_rows() / 2), b.slice(b.num_rows() / 2, b.num_rows() - b.num_rows() / 2)]
                        })
                        .collect(),
                )
            })
            .collect();
        assert_eq!(cells_of(&cut, 10).unwrap(), c);
        // Not grouped.
        let plain = Cells { groups: None, summary: Vec::new(), ..c.clone() };
        assert_eq!(cells_of(&cells_parts(&plain, 1).unwrap(), 10).unwrap(), plain);
        // A location beyond the trace's, or named twice.
        assert!(cells_of(&parts, 9).unwrap_err().contains("there are 9"));
        let twice = Cells { groups: Some((vec![vec![0, 1], vec![1]], Vec::new(), Vec::new())), ..c.clone() };
        assert!(cells_parts(&twice, 1).unwrap_err().contains("two groups"));
        // Columns of another length than the picture's.
        let short = Cells { shade: vec![0; 14], ..c.clone() };
        assert!(cells_parts(&short, 1).unwrap_err().contains("other lengths"));
    }

    /// Cells from a hostile server: every value of every column changed in turn (lengths, runs
    /// of locations, group numbers, the picture's size): decoded or refused with one line,
    /// never a panic, and never an allocation sized from a number in the answer.
    #[test]
    fn the_cells_decoder_survives_mutation() {
        let c = some_cells();
        let parts = cells_parts(&c, 99).unwrap();
        let (mut decoded, mut refused) = (0, 0);
        let values = [0u32, 1, 2, 4, 9, 10, 11, 255, 65_535, APART, OPENED, u32::MAX - 2, u32::MAX / 2];
        let mut check = |answer: &[(SchemaRef, Vec<RecordBatch>)]| match cells_of(answer, 10) {
            Ok(d) => {
                decoded += 1;
                assert!(d.check(10).is_ok());
            }
            Err(e) => {
                refused += 1;
                assert!(!e.contains('\n') && !e.is_empty(), "{e}");
            }
        };
        // The groups' runs.
        let g = &parts[1].1[0];
        for col in 0..3 {
            for row in 0..g.num_rows() {
                for &v in &values {
                    let mut cols: Vec<ArrayRef> = g.columns().to_vec();
                    let mut a = cols[col].as_any().downcast_ref::<UInt32Array>().unwrap().values().to_vec();
                    a[row] = v;
                    cols[col] = u32s(&a);
                    let b = RecordBatch::try_new(g.schema(), cols).unwrap();
                    check(&[parts[0].clone(), (parts[1].0.clone(), vec![b]), parts[2].clone()]);
                }
            }
        }
        // The picture's size and counts in the metadata.
        for size in ["5x3", "3x5", "0x0", "5x2", "x", "99999999x99999999", "4294967295x2", "-1x3", ""] {
            let mut meta = parts[0].0.metadata().clone();
            meta.insert("cells".into(), size.into());
            let s = Arc::new(parts[0].0.as_ref().clone().with_metadata(meta));
            let b = parts[0].1.iter().map(|b| RecordBatch::try_new(s.clone(), b.columns().to_vec()).unwrap()).collect();
            check(&[(s, b), parts[1].clone(), parts[2].clone()]);
        }
        // Batches dropped, doubled, or of the other part's shape.
        check(&[parts[0].clone()]);
        check(&[parts[1].clone(), parts[0].clone(), parts[2].clone()]);
        check(&[parts[0].clone(), parts[1].clone(), parts[0].clone()]);
        check(&[
            (parts[0].0.clone(), [parts[0].1.clone(), parts[0].1.clone()].concat()),
            parts[1].clone(),
            parts[2].clone(),
        ]);
        check(&[(parts[0].0.clone(), Vec::new()), parts[1].clone(), parts[2].clone()]);
        // Shares of another count than the columns', or not numbers.
        for shares in [vec![0.5f32; 39], vec![f32::NAN; 40], vec![1.0; 400]] {
            let ss = summary_schema();
            let b =
                RecordBatch::try_new(ss.clone(), vec![Arc::new(arrow_array::Float32Array::from(shares)) as ArrayRef])
                    .unwrap();
            check(&[parts[0].clone(), parts[1].clone(), (ss, vec![b])]);
        }
        assert!(decoded > 0 && refused > 0, "{decoded} decoded, {refused} refused");
    }
}
