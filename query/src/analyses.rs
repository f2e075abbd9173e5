//! The analyses of `exaviz critical-path` as tables, computed for every run the first time a
//! query names one of them: the critical path's segments and shares, the root causes of the
//! waiting and the stragglers; the wait states, from each run's dependency graph; and a diff's
//! rows, every run against the first.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use exaviz_analysis::critical_path::{Graph, Report, causes, chunked};
use exaviz_analysis::diff::Change;
use exaviz_model::dataset::Dataset;

/// The analyses' tables, in the order `--schema` lists them.
pub const ANALYSES: [&str; 7] = [
    "critical_path",
    "critical_path_shares",
    "root_causes",
    "stragglers",
    "straggler_steps",
    "wait_states",
    "diff_rows",
];

/// The analyses made from the runs themselves, not from their critical-path reports.
pub(crate) const OF_RUNS: [&str; 2] = ["wait_states", "diff_rows"];

/// A column of an analysis table: its name, type and values for the rows of one report.
pub(crate) enum Col {
    Text(Vec<String>),
    Seconds(Vec<f64>),
    Count(Vec<u64>),
    /// Step counts, or location ids.
    Steps(Vec<u32>),
    /// Seconds where known.
    MaybeSeconds(Vec<Option<f64>>),
    MaybeFlag(Vec<Option<bool>>),
}

impl Col {
    fn data_type(&self) -> DataType {
        match self {
            Col::Text(_) => DataType::Utf8,
            Col::Seconds(_) => DataType::Float64,
            Col::Count(_) => DataType::UInt64,
            Col::Steps(_) => DataType::UInt32,
            Col::MaybeSeconds(_) => DataType::Float64,
            Col::MaybeFlag(_) => DataType::Boolean,
        }
    }

    fn nullable(&self) -> bool {
        matches!(self, Col::MaybeSeconds(_) | Col::MaybeFlag(_))
    }

    fn len(&self) -> usize {
        match self {
            Col::Text(v) => v.len(),
            Col::Seconds(v) => v.len(),
            Col::Count(v) => v.len(),
            Col::Steps(v) => v.len(),
            Col::MaybeSeconds(v) => v.len(),
            Col::MaybeFlag(v) => v.len(),
        }
    }

    fn array(self) -> ArrayRef {
        match self {
            Col::Text(v) => Arc::new(StringArray::from(v)),
            Col::Seconds(v) => Arc::new(Float64Array::from(v)),
            Col::Count(v) => Arc::new(UInt64Array::from(v)),
            Col::Steps(v) => Arc::new(UInt32Array::from(v)),
            Col::MaybeSeconds(v) => Arc::new(Float64Array::from(v)),
            Col::MaybeFlag(v) => Arc::new(datafusion::arrow::array::BooleanArray::from(v)),
        }
    }
}

fn text<T>(rows: &[T], f: impl Fn(&T) -> &str) -> Col {
    Col::Text(rows.iter().map(|r| f(r).to_string()).collect())
}

fn secs<T>(rows: &[T], f: impl Fn(&T) -> f64) -> Col {
    Col::Seconds(rows.iter().map(f).collect())
}

/// The columns of table `name` for one report (`None`: no such analysis).
fn columns(name: &str, r: &Report) -> Option<Vec<(&'static str, Col)>> {
    Some(match name {
        "critical_path" => {
            let s = &r.segments;
            vec![
                ("what", text(s, |x| &x.what)),
                ("location", text(s, |x| &x.location)),
                ("from_location", text(s, |x| &x.from_location)),
                ("from_s", secs(s, |x| x.from_s)),
                ("to_s", secs(s, |x| x.to_s)),
                ("duration_s", secs(s, |x| x.to_s - x.from_s)),
                ("region", text(s, |x| &x.region)),
                ("region_s", secs(s, |x| x.region_s)),
                ("step", text(s, |x| &x.step)),
            ]
        }
        "critical_path_shares" => {
            let sh = &r.shares;
            let by: Vec<(&str, &exaviz_analysis::critical_path::Share)> =
                [("kind", &sh.by_kind), ("location", &sh.by_location), ("region", &sh.by_region)]
                    .into_iter()
                    .flat_map(|(by, rows)| rows.iter().map(move |s| (by, s)))
                    .collect();
            vec![
                ("by", text(&by, |x| x.0)),
                ("name", text(&by, |x| &x.1.name)),
                ("seconds", secs(&by, |x| x.1.seconds)),
                ("share", secs(&by, |x| x.1.share)),
            ]
        }
        "root_causes" => {
            let c = &r.root_causes;
            vec![
                ("location", text(c, |x| &x.location)),
                ("region", text(c, |x| &x.region)),
                ("direct_s", secs(c, |x| x.direct_s)),
                ("propagated_s", secs(c, |x| x.propagated_s)),
                ("waits", Col::Count(c.iter().map(|x| x.waits).collect())),
            ]
        }
        "stragglers" => {
            let n = &r.stragglers.named;
            vec![
                ("process", text(n, |x| &x.process)),
                ("steps", Col::Steps(n.iter().map(|x| x.steps).collect())),
                ("of_steps", Col::Steps(n.iter().map(|x| x.of_steps).collect())),
                ("excess_s", secs(n, |x| x.excess_s)),
                ("region", text(n, |x| x.regions.first().map_or("", |r| r.region.as_str()))),
                ("region_excess_s", secs(n, |x| x.regions.first().map_or(0.0, |r| r.excess_s))),
            ]
        }
        "straggler_steps" => {
            let s = &r.stragglers.rows;
            vec![
                ("step", text(s, |x| &x.step)),
                ("process", text(s, |x| &x.process)),
                ("work_s", secs(s, |x| x.work_s)),
                ("median_work_s", secs(s, |x| x.median_work_s)),
                ("wait_s", secs(s, |x| x.wait_s)),
                ("median_wait_s", secs(s, |x| x.median_wait_s)),
                ("verdict", text(s, |x| &x.verdict)),
            ]
        }
        _ => return None,
    })
}

/// Columns of one run's rows of a table.
pub(crate) type Cols = Vec<(&'static str, Col)>;

fn schema_of(cols: &Cols) -> SchemaRef {
    let mut fields = vec![Field::new("run", DataType::Utf8, false)];
    fields.extend(cols.iter().map(|(n, c)| Field::new(*n, c.data_type(), c.nullable())));
    Arc::new(Schema::new(fields))
}

/// One run's rows of a table, a `run` column first.
pub(crate) fn batch(run: &str, cols: Cols) -> Option<RecordBatch> {
    let rows = cols.first().map_or(0, |(_, c)| c.len());
    let s = schema_of(&cols);
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![run; rows]))];
    arrays.extend(cols.into_iter().map(|(_, c)| c.array()));
    RecordBatch::try_new(s, arrays).ok()
}

/// Table `name` of the reports of `runs` (run name, report), a `run` column first.
pub(crate) fn table(name: &str, runs: &[(String, Arc<Report>)]) -> Option<(SchemaRef, Vec<RecordBatch>)> {
    let batches = runs.iter().map(|(run, report)| batch(run, columns(name, report)?)).collect::<Option<Vec<_>>>()?;
    Some((empty_schema(name)?, batches))
}

/// The schema of table `name`, from a report (or rows) of nothing.
pub(crate) fn empty_schema(name: &str) -> Option<SchemaRef> {
    let cols = match name {
        "wait_states" => wait_columns(&[], 1, 0),
        "diff_rows" => diff_columns("", &[]),
        _ => columns(name, &Report::default())?,
    };
    Some(schema_of(&cols))
}

/// A wait state as a row: waiting location, the location it waited for, the edge's kind, when
/// (ticks).
type Wait = (u32, u32, &'static str, u64, u64);

fn wait_columns(w: &[Wait], tps: u64, start: u64) -> Cols {
    let tps = tps.max(1) as f64;
    let s = |t: u64| t.saturating_sub(start) as f64 / tps;
    vec![
        ("location", Col::Steps(w.iter().map(|x| x.0).collect())),
        ("cause", Col::Steps(w.iter().map(|x| x.1).collect())),
        ("kind", Col::Text(w.iter().map(|x| x.2.to_string()).collect())),
        ("from_s", Col::Seconds(w.iter().map(|x| s(x.3)).collect())),
        ("until_s", Col::Seconds(w.iter().map(|x| s(x.4)).collect())),
        ("waited_s", Col::Seconds(w.iter().map(|x| x.4.saturating_sub(x.3) as f64 / tps).collect())),
    ]
}

/// Every wait state of run `d` over its whole span (`exaviz critical-path`'s, from its
/// dependency graph; a large store's chunk by chunk, each wait in the chunk it ended in),
/// locations by id (`locations.location`), times in seconds since the run's start.
pub(crate) fn wait_states(run: &str, d: &Dataset) -> Result<Vec<RecordBatch>, String> {
    let (from, to, start) = exaviz_analysis::window::window_asked(d, None, None)?;
    let chunks = chunked::chunks(d, (from, to), chunked::CHUNK_ROWS);
    let mut out = Vec::new();
    for &chunk in &chunks {
        let rows = d.window_rows_once(chunk)?;
        let g = Graph::with_training(&rows.trace, rows.training.as_deref());
        let mut waits = causes::wait_states(&g, chunk);
        if chunks.len() > 1 {
            waits.retain(|w| w.until >= chunk.0 && w.until < chunk.1);
        }
        let w: Vec<Wait> = waits.iter().map(|w| (w.location, w.cause, w.kind.label(), w.from, w.until)).collect();
        let cols = wait_columns(&w, d.trace.ticks_per_second, start);
        out.push(batch(run, cols).ok_or("the wait states' table could not be made")?);
    }
    Ok(out)
}

fn diff_columns(against: &str, c: &[&Change]) -> Cols {
    let side = |f: fn(&Change) -> f64| Col::Seconds(c.iter().map(|x| f(x)).collect());
    vec![
        ("against", Col::Text(vec![against.to_string(); c.len()])),
        ("table", text(c, |x| x.table)),
        ("name", text(c, |x| &x.name)),
        ("a_count", Col::Count(c.iter().map(|x| x.a.count).collect())),
        ("a_total_s", side(|x| x.a.total_s)),
        ("a_mean_s", side(|x| x.a.mean_s)),
        ("b_count", Col::Count(c.iter().map(|x| x.b.count).collect())),
        ("b_total_s", side(|x| x.b.total_s)),
        ("b_mean_s", side(|x| x.b.mean_s)),
        ("change_s", side(|x| x.change_s)),
        ("relative", side(|x| x.relative)),
        ("step_change_s", Col::MaybeSeconds(c.iter().map(|x| x.step.as_ref().map(|s| s.change_s)).collect())),
        ("step_low_s", Col::MaybeSeconds(c.iter().map(|x| x.step.as_ref().map(|s| s.low_s)).collect())),
        ("step_high_s", Col::MaybeSeconds(c.iter().map(|x| x.step.as_ref().map(|s| s.high_s)).collect())),
        ("stands_out", Col::MaybeFlag(c.iter().map(|x| x.stands_out).collect())),
    ]
}

/// `exaviz diff A B`'s rows with run `b` (named `run`) as B and `a` (named `against`) as A:
/// the run, then every row of its tables (location, waiting, region, path, collective, pair).
pub(crate) fn diff_rows(against: &str, a: &Dataset, run: &str, b: &Dataset) -> Result<RecordBatch, String> {
    let options = exaviz_analysis::diff::Options { top: 0, steps: None };
    let d = exaviz_analysis::diff::diff_asked(a, b, None, None, &options).map_err(|e| format!("{run}: {e}"))?;
    let all: Vec<&Change> = std::iter::once(&d.run)
        .chain(&d.locations)
        .chain(&d.waiting)
        .chain(&d.regions)
        .chain(&d.paths)
        .chain(&d.collectives)
        .chain(&d.pairs)
        .collect();
    batch(run, diff_columns(against, &all)).ok_or_else(|| "the diff's table could not be made".into())
}

/// The analyses `sql` names (as whole words, in any case).
pub(crate) fn named_in(sql: &str) -> Vec<&'static str> {
    let lower = sql.to_ascii_lowercase();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    ANALYSES
        .into_iter()
        .filter(|name| {
            lower.match_indices(name).any(|(at, _)| {
                let before = lower[..at].chars().next_back().is_none_or(|c| !word(c));
                let after = lower[at + name.len()..].chars().next().is_none_or(|c| !word(c));
                before && after
            })
        })
        .collect()
}
