//! The analyses of `exaviz critical-path` as tables, computed for every run the first time a
//! query names one of them: the critical path's segments and shares, the root causes of the
//! waiting and the stragglers.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use exaviz_analysis::critical_path::Report;

/// The analyses' tables, in the order `--schema` lists them.
pub const ANALYSES: [&str; 5] =
    ["critical_path", "critical_path_shares", "root_causes", "stragglers", "straggler_steps"];

/// A column of an analysis table: its name, type and values for the rows of one report.
enum Col {
    Text(Vec<String>),
    Seconds(Vec<f64>),
    Count(Vec<u64>),
    Steps(Vec<u32>),
}

impl Col {
    fn data_type(&self) -> DataType {
        match self {
            Col::Text(_) => DataType::Utf8,
            Col::Seconds(_) => DataType::Float64,
            Col::Count(_) => DataType::UInt64,
            Col::Steps(_) => DataType::UInt32,
        }
    }

    fn array(self) -> ArrayRef {
        match self {
            Col::Text(v) => Arc::new(StringArray::from(v)),
            Col::Seconds(v) => Arc::new(Float64Array::from(v)),
            Col::Count(v) => Arc::new(UInt64Array::from(v)),
            Col::Steps(v) => Arc::new(UInt32Array::from(v)),
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

/// Table `name` of the reports of `runs` (run name, report), a `run` column first.
pub(crate) fn table(name: &str, runs: &[(String, Arc<Report>)]) -> Option<(SchemaRef, Vec<RecordBatch>)> {
    let mut schema = None;
    let mut batches = Vec::new();
    for (run, report) in runs {
        let cols = columns(name, report)?;
        let rows = match cols.first() {
            Some((_, Col::Text(v))) => v.len(),
            Some((_, Col::Seconds(v))) => v.len(),
            Some((_, Col::Count(v))) => v.len(),
            Some((_, Col::Steps(v))) => v.len(),
            None => 0,
        };
        let mut fields = vec![Field::new("run", DataType::Utf8, false)];
        fields.extend(cols.iter().map(|(n, c)| Field::new(*n, c.data_type(), false)));
        let s: SchemaRef = Arc::new(Schema::new(fields));
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![run.as_str(); rows]))];
        arrays.extend(cols.into_iter().map(|(_, c)| c.array()));
        batches.push(RecordBatch::try_new(s.clone(), arrays).ok()?);
        schema = Some(s);
    }
    let schema = schema.or_else(|| empty_schema(name))?;
    Some((schema, batches))
}

/// The schema of table `name`, from a report of nothing.
pub(crate) fn empty_schema(name: &str) -> Option<SchemaRef> {
    let r = Report::default();
    let cols = columns(name, &r)?;
    let mut fields = vec![Field::new("run", DataType::Utf8, false)];
    fields.extend(cols.iter().map(|(n, c)| Field::new(*n, c.data_type(), false)));
    Some(Arc::new(Schema::new(fields)))
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
