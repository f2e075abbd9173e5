//! The store's whole pyramid as DataFusion plans: every level of the message cube, of the state
//! tiles and of the lines, from the store's `messages.parquet` and `intervals.parquet`, equal to
//! the native pass ([`exaviz_store::sum_pyramid`]) cell for cell (the lines' gradient
//! weights within one unit, floating-point sums taken in another order).
//!
//! The plans are SQL over the two tables, so they run unchanged on DataFusion's embedded engine
//! or on a Ballista cluster:
//! - the span: the lowest send or start time and the highest receive or end time, as the native
//!   pass reads them from the row groups' statistics;
//! - messages: a GROUP BY of (sender block, receiver block, send bin), as [`crate::message_cube_on`];
//! - states: an interval's ticks in its first and last bins, and the bins it covers whole as
//!   difference rows (+1 after its first bin, -1 at its last) summed along the bins by a window
//!   and expanded (`unnest(range(..))`) into the runs of bins they cover;
//! - pairs: a GROUP BY of (sender, receiver, send bin) at the per-pair tiles' finest bins,
//!   whose rows are then fitted to the tiles' budget as the native pass fits them;
//! - lines: each message's line from its sender's block to its receiver's as difference rows
//!   (count, slope and offset of its gradient weight) summed along the blocks of its bin by a
//!   window and expanded into cells, as the native pass's running sums do.
//!
//! The levels above the finest are GROUP BYs of level 0's cells by halved blocks and bins, run
//! on an embedded session over those cells (a few MB at most): the scan of the rows is what a
//! cluster is for.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use exaviz_model::pyramid::{Lines, PairSummer, Pyramid, PyramidBuilder, Shape};
use exaviz_store as store;
use exaviz_store::PyramidSpan;

use crate::{AggregateError, plan_error};

/// The SQL dialect of a plan's text: the plans are written with `//` for integer division
/// (DuckDB's), which DataFusion writes `/` (its `/` of two integers is an integer division).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    DataFusion,
    DuckDb,
}

impl Dialect {
    fn text(self, sql: &str) -> String {
        match self {
            Dialect::DataFusion => sql.replace(" // ", " / "),
            Dialect::DuckDb => sql.to_string(),
        }
    }
}

/// Integer columns of a query's rows (every column cast to i64; a value that does not fit, or
/// a null, is an error).
async fn columns(ctx: &SessionContext, store: &Path, sql: &str, n: usize) -> Result<Vec<Vec<i64>>, AggregateError> {
    let df = ctx.sql(&Dialect::DataFusion.text(sql)).await.map_err(|e| plan_error(store, e))?;
    let batches = df.collect().await.map_err(|e| plan_error(store, e))?;
    let strict = CastOptions { safe: false, ..Default::default() };
    let mut out = vec![Vec::new(); n];
    for batch in &batches {
        if batch.num_columns() != n {
            return Err(plan_error(store, format!("a plan gave {} columns, not {n}", batch.num_columns())));
        }
        for (k, column) in out.iter_mut().enumerate() {
            let c = cast_with_options(batch.column(k), &DataType::Int64, &strict).map_err(|e| plan_error(store, e))?;
            let c = c.as_primitive::<Int64Type>();
            if c.null_count() > 0 {
                return Err(plan_error(store, "a plan gave an empty cell"));
            }
            column.extend_from_slice(c.values());
        }
    }
    Ok(out)
}

/// Registers `table`'s file of `store` under its name (`false`: the store has no such file).
async fn register(ctx: &SessionContext, store: &Path, table: &str) -> Result<bool, AggregateError> {
    let file = store.join(format!("{table}.parquet"));
    if !file.is_file() {
        return Ok(false);
    }
    let path = file.to_str().ok_or_else(|| plan_error(store, "the store's path is not UTF-8"))?;
    let _ = ctx.deregister_table(table);
    ctx.register_parquet(table, path, ParquetReadOptions::default()).await.map_err(|e| plan_error(store, e))?;
    Ok(true)
}

/// The span of the rows: the lowest send or start time, the highest receive or end time.
fn span_sql(messages: bool, intervals: bool) -> String {
    let mut parts = Vec::new();
    if messages {
        parts.push("SELECT MIN(send_time) AS lo, MAX(recv_time) AS hi FROM messages");
    }
    if intervals {
        parts.push("SELECT MIN(start) AS lo, MAX(\"end\") AS hi FROM intervals");
    }
    format!("SELECT MIN(lo), MAX(hi) FROM ({}) WHERE lo IS NOT NULL", parts.join(" UNION ALL "))
}

/// Level 0's message cube: sender block, receiver block, bin, messages, bytes.
fn cube_sql(s: &Shape) -> String {
    let (t0, w, block, ranks) = (s.t0, s.message_bin_ticks(), s.message_block, s.ranks);
    format!(
        "SELECT source // {block} AS s, destination // {block} AS r, (send_time - {t0}) // {w} AS bin,
                COUNT(*) AS n, SUM(CAST(bytes AS BIGINT)) AS b
         FROM (SELECT CAST(source AS BIGINT) AS source, CAST(destination AS BIGINT) AS destination,
                      CAST(send_time AS BIGINT) AS send_time, bytes FROM messages)
         WHERE source < {ranks} AND destination < {ranks} AND send_time >= {t0}
         GROUP BY 1, 2, 3"
    )
}

/// The per-pair tiles at the bins their summer starts with: source, destination, bin,
/// messages, bytes.
fn pairs_sql(s: &Shape, (bins, w): (u32, u64)) -> String {
    let (t0, ranks) = (s.t0, s.ranks);
    format!(
        "SELECT source, destination, (send_time - {t0}) // {w} AS bin, COUNT(*) AS n, SUM(CAST(bytes AS BIGINT)) AS b
         FROM (SELECT CAST(source AS BIGINT) AS source, CAST(destination AS BIGINT) AS destination,
                      CAST(send_time AS BIGINT) AS send_time, bytes FROM messages)
         WHERE source < {ranks} AND destination < {ranks} AND send_time >= {t0}
           AND (send_time - {t0}) // {w} < {bins}
         GROUP BY 1, 2, 3"
    )
}

/// A running sum along `along` within `by`, up to and with the current row.
fn running(value: &str, by: &str, along: &str) -> String {
    format!("SUM({value}) OVER (PARTITION BY {by} ORDER BY {along} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)")
}

/// Level 0's state tiles: block, state, bin, ticks.
fn states_sql(s: &Shape) -> String {
    let (t0, w, block, ranks, bins) = (s.t0, s.bin_ticks, s.block, s.ranks, s.state_bins);
    let end = s.t0 + s.bin_ticks * u64::from(s.state_bins);
    let last = s.states - 1;
    let (n, next) = (running("d", "b, st", "bin"), "LEAD(bin, 1, {bins}) OVER (PARTITION BY b, st ORDER BY bin)");
    let next = next.replace("{bins}", &bins.to_string());
    format!(
        "WITH cut AS (
           SELECT b, st, a, e, (a - {t0}) // {w} AS fb, (e - 1 - {t0}) // {w} AS lb FROM (
             SELECT CAST(location AS BIGINT) // {block} AS b,
                    CASE WHEN region < {last} THEN CAST(region AS BIGINT) ELSE {last} END AS st,
                    CASE WHEN start > {t0} THEN CAST(start AS BIGINT) ELSE {t0} END AS a,
                    CASE WHEN \"end\" < {end} THEN CAST(\"end\" AS BIGINT) ELSE {end} END AS e
             FROM intervals WHERE location < {ranks})
           WHERE e > a),
         steps AS (
           SELECT b, st, bin, SUM(d) AS d FROM (
             SELECT b, st, fb + 1 AS bin, 1 AS d FROM cut WHERE lb > fb + 1
             UNION ALL
             SELECT b, st, lb AS bin, -1 AS d FROM cut WHERE lb > fb + 1)
           GROUP BY b, st, bin),
         runs AS (SELECT b, st, bin, {n} AS n, {next} AS next FROM steps)
         SELECT b, st, bin, SUM(ticks) FROM (
           SELECT b, st, fb AS bin, CASE WHEN e < {t0} + (fb + 1) * {w} THEN e ELSE {t0} + (fb + 1) * {w} END - a AS ticks FROM cut
           UNION ALL
           SELECT b, st, lb AS bin, e - ({t0} + lb * {w}) AS ticks FROM cut WHERE lb > fb
           UNION ALL
           SELECT b, st, unnest(range(bin, next)) AS bin, n * {w} AS ticks FROM runs WHERE n > 0)
         GROUP BY b, st, bin"
    )
}

/// The lines at level 0's state blocks and bins: block, bin, lines, gradient weight.
fn lines_sql(s: &Shape) -> String {
    let (t0, w, block, ranks, blocks) = (s.t0, s.bin_ticks, s.block, s.ranks, s.blocks());
    let end = s.t0 + s.bin_ticks * u64::from(s.state_bins);
    let steps = exaviz_model::pyramid::LINE_STEPS;
    let half = steps / 2.0;
    let by = |v: &str| running(v, "bin", "block");
    let (c, a, o) = (by("c"), by("slope"), by("off"));
    format!(
        "WITH d AS (
           SELECT bin, CASE WHEN s < r THEN s ELSE r END AS lo, CASE WHEN s < r THEN r ELSE s END + 1 AS hi,
                  CASE WHEN s = r THEN 0.0 ELSE {steps:.1} / CAST(r - s AS DOUBLE) END AS slope,
                  CASE WHEN s = r THEN {half:.1} ELSE -({steps:.1} / CAST(r - s AS DOUBLE)) * CAST(s AS DOUBLE) END AS off
           FROM (SELECT source // {block} AS s, destination // {block} AS r, (send_time - {t0}) // {w} AS bin
                 FROM (SELECT CAST(source AS BIGINT) AS source, CAST(destination AS BIGINT) AS destination,
                              CAST(send_time AS BIGINT) AS send_time FROM messages)
                 WHERE source < {ranks} AND destination < {ranks} AND send_time >= {t0} AND send_time < {end})),
         steps AS (
           SELECT bin, block, SUM(c) AS c, SUM(slope) AS slope, SUM(off) AS off FROM (
             SELECT bin, lo AS block, 1 AS c, slope, off FROM d
             UNION ALL
             SELECT bin, hi AS block, -1 AS c, -slope AS slope, -off AS off FROM d)
           GROUP BY bin, block),
         runs AS (
           SELECT bin, block, {c} AS c, {a} AS a, {o} AS o,
                  LEAD(block, 1, {blocks}) OVER (PARTITION BY bin ORDER BY block) AS next
           FROM steps),
         cells AS (SELECT bin, unnest(range(block, next)) AS block, c, a, o FROM runs WHERE c > 0)
         SELECT block, bin, c,
                CAST(ROUND(CASE WHEN a * CAST(block AS DOUBLE) + o < 0.0 THEN 0.0
                                WHEN a * CAST(block AS DOUBLE) + o > {steps:.1} * CAST(c AS DOUBLE) THEN {steps:.1} * CAST(c AS DOUBLE)
                                ELSE a * CAST(block AS DOUBLE) + o END) AS BIGINT)
         FROM cells"
    )
}

/// Every level's cells from level 0's, as GROUP BYs over them: `level, <keys>, <sums>` where the
/// keys in `halved` are divided by two per level.
fn levels_sql(table: &str, keys: &[(&str, bool)], sums: &[&str], levels: usize) -> String {
    (0..levels)
        .map(|k| {
            let f = 1u64 << k;
            let keys: Vec<String> = keys
                .iter()
                .map(|&(key, halved)| if halved { format!("{key} / {f}") } else { key.to_string() })
                .collect();
            let sums: Vec<String> = sums.iter().map(|s| format!("SUM({s})")).collect();
            format!(
                "SELECT {k} AS level, {}, {} FROM {table} GROUP BY {}",
                keys.join(", "),
                sums.join(", "),
                keys.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// Registers level 0's cells (`names`, i64 columns) as an in-memory table of `ctx`.
fn cells_table(
    ctx: &SessionContext,
    store: &Path,
    name: &str,
    names: &[&str],
    cells: Vec<Vec<i64>>,
) -> Result<(), AggregateError> {
    let schema =
        Arc::new(Schema::new(names.iter().map(|n| Field::new(*n, DataType::Int64, false)).collect::<Vec<_>>()));
    let arrays: Vec<ArrayRef> = cells.into_iter().map(|c| Arc::new(Int64Array::from(c)) as ArrayRef).collect();
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| plan_error(store, e))?;
    let table = MemTable::try_new(schema, vec![vec![batch]]).map_err(|e| plan_error(store, e))?;
    ctx.register_table(name, Arc::new(table)).map_err(|e| plan_error(store, e))?;
    Ok(())
}

/// A cell index checked against its extent.
fn at(v: i64, extent: u32, store: &Path, what: &str) -> Result<usize, AggregateError> {
    usize::try_from(v)
        .ok()
        .filter(|&i| i < extent as usize)
        .ok_or_else(|| plan_error(store, format!("a plan gave a {what} cell outside the pyramid ({v} of {extent})")))
}

/// The rows of integer columns `c`, one slice per row.
fn rows_of(c: &[Vec<i64>]) -> impl Iterator<Item = Vec<i64>> + '_ {
    (0..c.first().map_or(0, Vec::len)).map(move |i| c.iter().map(|col| col[i]).collect())
}

/// The span of `store`'s rows and which of its tables have rows, registered on `ctx`.
async fn span_on(ctx: &SessionContext, store: &Path) -> Result<(PyramidSpan, bool, bool), AggregateError> {
    let m = store::manifest(store)?;
    let ranks = u32::try_from(m.rows("locations"))
        .ok()
        .filter(|&r| r > 0)
        .ok_or_else(|| plan_error(store, "holds no processes (locations) to sum a pyramid over"))?;
    let states = u32::try_from(m.rows("regions")).unwrap_or(u32::MAX).clamp(1, 64);
    let messages = m.rows("messages") > 0 && register(ctx, store, "messages").await?;
    let intervals = m.rows("intervals") > 0 && register(ctx, store, "intervals").await?;
    let span =
        if messages || intervals { columns(ctx, store, &span_sql(messages, intervals), 2).await? } else { vec![] };
    match (span.first().and_then(|c| c.first()), span.get(1).and_then(|c| c.first())) {
        (Some(&lo), Some(&hi)) => {
            let (t0, t1) = (lo as u64, hi.max(lo) as u64);
            Ok((PyramidSpan { t0, t1, ranks, states }, messages, intervals))
        }
        _ => Err(plan_error(store, "holds no messages or intervals to sum")),
    }
}

/// Every level's message cube and level 0's lines into `p`.
async fn sum_messages(
    ctx: &SessionContext,
    local: &SessionContext,
    store: &Path,
    p: &mut Pyramid,
) -> Result<(), AggregateError> {
    let (shape, levels) = (p.shape, p.levels.len());
    let cube = columns(ctx, store, &cube_sql(&shape), 5).await?;
    cells_table(local, store, "cube", &["s", "r", "bin", "n", "b"], cube)?;
    let sql = levels_sql("cube", &[("s", true), ("r", true), ("bin", true)], &["n", "b"], levels);
    for c in rows_of(&columns(local, store, &sql, 6).await?) {
        let l = &mut p.levels[at(c[0], levels as u32, store, "level")?];
        let (mb, bins) = (l.message_blocks, l.message_bins);
        let (s, r) = (at(c[1], mb, store, "sender")?, at(c[2], mb, store, "receiver")?);
        let cell = (s * mb as usize + r) * bins as usize + at(c[3], bins, store, "bin")?;
        (l.counts[cell], l.bytes[cell]) = (c[4] as u64, c[5] as u64);
    }
    let lines = p.lines.get_or_insert_with(|| Lines::new(shape.blocks(), shape.state_bins));
    for c in rows_of(&columns(ctx, store, &lines_sql(&shape), 4).await?) {
        let (bin, block) = (at(c[1], lines.bins, store, "bin")?, at(c[0], lines.blocks, store, "block")?);
        let cell = lines.cell(bin as u32, block as u32);
        (lines.counts[cell], lines.gradient[cell]) = (c[2] as u64, c[3] as u64);
    }
    // The per-pair tiles: their cells at the finest bins, fitted as the native pass fits them.
    if let Some(mut summer) = PairSummer::new(&shape) {
        let first = summer.first_bins();
        let id = |v: i64| u32::try_from(v).map_err(|_| plan_error(store, "a pair cell outside the pyramid"));
        for c in rows_of(&columns(ctx, store, &pairs_sql(&shape, first), 5).await?) {
            let (n, b) = (c[3] as u64, c[4] as u64);
            summer.add_cell(id(c[0])?, id(c[1])?, id(c[2])?, n, b).map_err(|e| plan_error(store, e))?;
        }
        p.pairs = summer.finish();
    }
    Ok(())
}

/// Every level's state tiles into `p`.
async fn sum_states(
    ctx: &SessionContext,
    local: &SessionContext,
    store: &Path,
    p: &mut Pyramid,
) -> Result<(), AggregateError> {
    let (shape, levels, states) = (p.shape, p.levels.len(), p.shape.states);
    let tiles = columns(ctx, store, &states_sql(&shape), 4).await?;
    cells_table(local, store, "tiles", &["b", "st", "bin", "ticks"], tiles)?;
    let sql = levels_sql("tiles", &[("b", true), ("st", false), ("bin", true)], &["ticks"], levels);
    for c in rows_of(&columns(local, store, &sql, 5).await?) {
        let l = &mut p.levels[at(c[0], levels as u32, store, "level")?];
        let (blocks, bins) = (l.blocks, l.state_bins);
        let (b, st) = (at(c[1], blocks, store, "block")?, at(c[2], states, store, "state")?);
        l.ticks[(b * states as usize + st) * bins as usize + at(c[3], bins, store, "bin")?] = c[4] as u64;
    }
    // The per-location tiles: the same plan, each location a block of one, over their bins.
    if let Some(tiles) = &mut p.locations {
        let one = Shape { block: 1, bin_ticks: tiles.bin_ticks, state_bins: tiles.bins, ..shape };
        for c in rows_of(&columns(ctx, store, &states_sql(&one), 4).await?) {
            let (l, st) = (at(c[0], shape.ranks, store, "location")?, at(c[1], states, store, "state")?);
            let bin = at(c[2], tiles.bins, store, "bin")?;
            tiles.ticks[(l * states as usize + st) * tiles.bins as usize + bin] = c[3] as u64;
        }
    }
    Ok(())
}

/// The whole pyramid of `store` by DataFusion plans on `ctx` (embedded, or a Ballista cluster's
/// session): its span and every level of every part.
pub async fn pyramid_on(ctx: &SessionContext, store: &Path) -> Result<(PyramidSpan, Pyramid), AggregateError> {
    let (span, messages, intervals) = span_on(ctx, store).await?;
    let mut p = PyramidBuilder::new(span.shape()).finish();
    p.lines = Some(Lines::new(p.shape.blocks(), p.shape.state_bins));
    let local = SessionContext::new();
    if messages {
        sum_messages(ctx, &local, store, &mut p).await?;
    }
    if intervals {
        sum_states(ctx, &local, store, &mut p).await?;
    }
    Ok((span, p))
}

/// The plans' SQL for `store` in `dialect`, to run elsewhere over the same files (tables
/// `messages` and `intervals`): the span, then level 0 of the message cube, the lines and the
/// state tiles (the levels above are GROUP BYs of these cells). The span is found first, on an
/// embedded DataFusion session, as the others depend on it.
pub async fn plans_sql(store: &Path, dialect: Dialect) -> Result<Vec<(&'static str, String)>, AggregateError> {
    let ctx = SessionContext::new();
    let (span, messages, intervals) = span_on(&ctx, store).await?;
    let shape = span.shape();
    let mut plans = vec![("span", span_sql(messages, intervals))];
    if messages {
        plans.extend([("messages", cube_sql(&shape)), ("lines", lines_sql(&shape))]);
        if let Some(summer) = PairSummer::new(&shape) {
            plans.push(("pairs", pairs_sql(&shape, summer.first_bins())));
        }
    }
    if intervals {
        plans.push(("states", states_sql(&shape)));
    }
    Ok(plans.into_iter().map(|(name, sql)| (name, dialect.text(&sql))).collect())
}
