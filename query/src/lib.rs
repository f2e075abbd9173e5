//! SQL over traces and stores (`exaviz query`), by Apache DataFusion.
//!
//! Every input is a *run*. A store's event tables (intervals, messages, collectives, metric
//! samples) are its Parquet files, read in place: DataFusion prunes row groups by their
//! statistics and reads only the columns a query names. Any other input is read into memory
//! and its columns handed to DataFusion as Arrow arrays over the trace's own memory, not copies.
//! Over both, the same views give readable tables: [`TABLES`], each with a `run` column, so that
//! one query spans many runs.
//!
//! Times are in ticks of each run's clock (`runs.ticks_per_second`) and, in the columns ending
//! in `_s`, in seconds. Queries are read-only: no DDL, no DML, no `SET`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::MemTable;
use datafusion::execution::context::SQLOptions;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_store::shared;

/// The tables a query may name, in the order `--schema` lists them.
pub const TABLES: [&str; 7] = ["runs", "locations", "intervals", "instants", "messages", "collectives", "counters"];

/// The views over every run's event tables, in the order their SQL is built.
const EVENT_VIEWS: [&str; 5] = ["intervals", "messages", "collectives", "counters", "instants"];

/// The catalog of every table.
pub const CATALOG: &str = "exaviz";
/// The schema of the tables over every run (the default); each run has a schema of its own,
/// named as the run, holding [`TABLES`] of that run alone.
pub const SCHEMA: &str = "public";

/// A query's answer as it is computed, batch by batch.
pub type Batches = datafusion::execution::SendableRecordBatchStream;

/// A table's columns: name and type.
pub type Columns = Vec<(String, DataType)>;

/// What a query failed on, in one line.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Source(#[from] exaviz_model::source::SourceError),
    #[error("{0}")]
    Query(String),
}

fn query_error(e: impl std::fmt::Display) -> QueryError {
    QueryError::Query(one_line(&e.to_string()))
}

/// DataFusion's message on one line, an unknown table's naming the tables there are.
fn one_line(message: &str) -> String {
    let m = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(at) = m.find("table '")
        && m.contains("not found")
    {
        let name = m[at + 7..].split('\'').next().unwrap_or("");
        let name = name.rsplit('.').next().unwrap_or(name);
        return format!("no table '{name}': the tables are {}, and {}", TABLES.join(", "), ANALYSES.join(", "));
    }
    let m = m.strip_prefix("Error during planning: ").map_or(m.clone(), str::to_string);
    if ["DDL", "DML", "Statement"].iter().any(|w| m.starts_with(&format!("{w} not supported"))) {
        return format!("queries are read-only (SELECT, WITH, EXPLAIN): {m}");
    }
    m
}

/// Where a run's rows come from.
pub enum Source {
    /// A store folder: its event tables read in place.
    Store(PathBuf),
    /// A trace read into memory (any input but a store folder).
    Trace(Arc<Dataset>),
}

/// One input of a query: its name in the `run` column and its rows.
pub struct Run {
    pub name: String,
    /// The input as given (a path, a generator, an address).
    pub input: String,
    pub source: Source,
}

mod analyses;
pub use analyses::ANALYSES;

/// A run as the analyses read it: a trace in memory, or a store opened when first analysed.
enum Analysable {
    Trace(Arc<Dataset>),
    Store(PathBuf),
}

/// Each run's critical-path report, or why one could not be made.
type Reports = Result<Vec<(String, Arc<exaviz_analysis::critical_path::Report>)>, String>;

/// A DataFusion session over some runs, with the views of [`TABLES`] registered, and those of
/// [`ANALYSES`] the first time a query names them.
pub struct Session {
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    runs: Vec<(String, Analysable)>,
    reports: OnceLock<Reports>,
    analysed: Mutex<Vec<&'static str>>,
}

/// A query's answer: its columns and rows.
pub struct Answer {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl Answer {
    pub fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The answer as one record batch.
    pub fn batch(&self) -> Result<RecordBatch, QueryError> {
        datafusion::arrow::compute::concat_batches(&self.schema, &self.batches).map_err(query_error)
    }

    /// Every row as text, a string per column ("" for NULL), as a table prints them.
    pub fn text_rows(&self) -> Result<Vec<Vec<String>>, QueryError> {
        use datafusion::arrow::util::display::array_value_to_string;
        let mut rows = Vec::with_capacity(self.rows());
        for b in &self.batches {
            for r in 0..b.num_rows() {
                let row = b.columns().iter().map(|c| array_value_to_string(c, r)).collect::<Result<_, _>>();
                rows.push(row.map_err(query_error)?);
            }
        }
        Ok(rows)
    }
}

impl Session {
    /// A session over `runs` (at least one).
    pub fn new(runs: Vec<Run>) -> Result<Self, QueryError> {
        if runs.is_empty() {
            return Err(QueryError::Query("no input to query".into()));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(query_error)?;
        // Parquet's row groups are pruned by their statistics; counts come from the footers.
        let config = SessionConfig::new()
            .with_collect_statistics(true)
            .with_information_schema(false)
            .with_default_catalog_and_schema(CATALOG, SCHEMA);
        let ctx = SessionContext::new_with_config(config);
        let analysable = runs
            .iter()
            .map(|r| {
                let a = match &r.source {
                    Source::Store(p) => Analysable::Store(p.clone()),
                    Source::Trace(d) => Analysable::Trace(d.clone()),
                };
                (r.name.clone(), a)
            })
            .collect();
        let s = Self { ctx, runtime, runs: analysable, reports: OnceLock::new(), analysed: Mutex::new(Vec::new()) };
        s.runtime.block_on(s.register(runs))?;
        Ok(s)
    }

    /// Registers the analyses `sql` names that are not yet registered, computing every run's
    /// report the first time.
    fn analyse_for(&self, sql: &str) -> Result<(), QueryError> {
        let named = analyses::named_in(sql);
        let mut done = self.analysed.lock().map_err(|_| QueryError::Query("an earlier analysis failed".into()))?;
        for name in named {
            if done.contains(&name) {
                continue;
            }
            let made = if analyses::OF_RUNS.contains(&name) {
                let schema = analyses::empty_schema(name);
                schema.zip(Some(self.of_runs(name).map_err(QueryError::Query)?))
            } else {
                let reports = self
                    .reports
                    .get_or_init(|| self.report_all())
                    .as_ref()
                    .map_err(|e| QueryError::Query(e.clone()))?;
                analyses::table(name, reports)
            };
            let (schema, batches) =
                made.ok_or_else(|| QueryError::Query(format!("the {name} table could not be made")))?;
            self.table(name, schema, vec![batches])?;
            self.runtime.block_on(async {
                for (run, _) in &self.runs {
                    if run != SCHEMA && !run.is_empty() {
                        let select = format!("SELECT * FROM {SCHEMA}.{name} WHERE run = {}", quoted(run));
                        self.view(&format!("{}.{name}", ident(run)), &select).await?;
                    }
                }
                Ok::<_, QueryError>(())
            })?;
            done.push(name);
        }
        Ok(())
    }

    /// Run `a` as a dataset (a store opened as `exaviz critical-path` opens it).
    fn dataset(name: &str, a: &Analysable) -> Result<Arc<Dataset>, String> {
        match a {
            Analysable::Trace(d) => Ok(d.clone()),
            Analysable::Store(p) => exaviz_store::open(p, &|_, _| {}).map(Arc::new).map_err(|e| format!("{name}: {e}")),
        }
    }

    /// The rows of table `name` of [`analyses::OF_RUNS`]: each run's wait states, or each run
    /// after the first against the first (none with one run).
    fn of_runs(&self, name: &str) -> Result<Vec<RecordBatch>, String> {
        let mut out = Vec::new();
        if name == "wait_states" {
            for (run, a) in &self.runs {
                out.extend(analyses::wait_states(run, &*Self::dataset(run, a)?)?);
            }
        } else if let Some(((first, a), rest)) = self.runs.split_first() {
            let a = Self::dataset(first, a)?;
            for (run, b) in rest {
                out.push(analyses::diff_rows(first, &a, run, &*Self::dataset(run, b)?)?);
            }
        }
        Ok(out)
    }

    fn report_all(&self) -> Reports {
        let mut out = Vec::new();
        for (name, a) in &self.runs {
            let opened;
            let d = match a {
                Analysable::Trace(d) => d.as_ref(),
                Analysable::Store(p) => {
                    opened = exaviz_store::open(p, &|_, _| {}).map_err(|e| format!("{name}: {e}"))?;
                    &opened
                }
            };
            let r = exaviz_analysis::critical_path::analyse_asked_with(d, None, None, &|_, _| {})
                .map_err(|e| format!("{name}: the critical path: {e}"))?;
            out.push((name.clone(), Arc::new(r)));
        }
        Ok(out)
    }

    async fn register(&self, runs: Vec<Run>) -> Result<(), QueryError> {
        let mut runs_rows = (Vec::new(), Vec::new(), Vec::new());
        let mut locations = Vec::new();
        let mut parts: Vec<Vec<String>> = vec![Vec::new(); 5];
        let mut names = Vec::new();
        for (i, run) in runs.into_iter().enumerate() {
            let stored;
            let t = match &run.source {
                Source::Store(path) => {
                    stored = exaviz_store::open_names(path)?;
                    self.store_events(i, path).await?;
                    &stored.trace
                }
                Source::Trace(d) => {
                    if d.out_of_core.is_some() {
                        return Err(QueryError::Query(format!(
                            "{}: a store opened out of core is queried in place: give its folder",
                            run.input
                        )));
                    }
                    self.trace_events(i, d)?;
                    &d.trace
                }
            };
            let tps = t.ticks_per_second;
            locations.push(locations_batch(&run.name, t)?);
            self.names(i, t)?;
            let q = quoted(&run.name);
            let per = |ticks: &str| seconds(ticks, tps);
            parts[0].push(intervals_sql(i, &q, &per));
            parts[1].push(format!(
                "SELECT {q} AS run, source AS sender, destination AS receiver, send_time, recv_time, bytes, tag, \
                 {} AS send_s, {} AS recv_s FROM _{i}_messages",
                per("send_time"),
                per("recv_time")
            ));
            parts[2].push(collectives_sql(i, &q, &per));
            parts[3].push(format!(
                "SELECT {q} AS run, m.location, m.metric, n.name, n.unit, n.accumulated, m.time, m.value, \
                 {} AS time_s FROM _{i}_metrics m LEFT JOIN _{i}_metric_names n ON m.metric = n.metric",
                per("m.time")
            ));
            parts[4].push(instants_sql(i, &q, &per));
            names.push(run.name.clone());
            runs_rows.0.push(run.name);
            runs_rows.1.push(run.input);
            runs_rows.2.push(tps);
        }
        let runs_batch = RecordBatch::try_from_iter([
            ("run", Arc::new(StringArray::from(runs_rows.0)) as ArrayRef),
            ("input", Arc::new(StringArray::from(runs_rows.1)) as ArrayRef),
            ("ticks_per_second", Arc::new(UInt64Array::from(runs_rows.2)) as ArrayRef),
        ])
        .map_err(query_error)?;
        self.table("runs", runs_batch.schema(), vec![vec![runs_batch]])?;
        let schema = locations[0].schema();
        self.table("locations", schema, vec![locations])?;
        for (name, sql) in EVENT_VIEWS.iter().zip(&parts) {
            self.view(name, &sql.join(" UNION ALL ")).await?;
        }
        for (i, name) in names.iter().enumerate() {
            let [a, b, c, d, e] = [0, 1, 2, 3, 4].map(|k| parts[k][i].as_str());
            self.run_schema(name, [a, b, c, d, e]).await?;
        }
        Ok(())
    }

    /// Run `run`'s schema: [`TABLES`] of that run alone, from `parts` (its intervals, messages,
    /// collectives, counters and instants). None for a run named as the default schema.
    async fn run_schema(&self, run: &str, parts: [&str; 5]) -> Result<(), QueryError> {
        if run == SCHEMA || run.is_empty() {
            return Ok(());
        }
        let s = ident(run);
        let q = quoted(run);
        // Registered, not created by SQL: DataFusion's CREATE SCHEMA splits a name at its dots.
        let catalog = self.ctx.catalog(CATALOG).ok_or_else(|| QueryError::Query(format!("no catalog {CATALOG}")))?;
        if catalog.schema(run).is_none() {
            let schema = Arc::new(datafusion::catalog::MemorySchemaProvider::new());
            catalog.register_schema(run, schema).map_err(query_error)?;
        }
        for table in ["runs", "locations"] {
            self.view(&format!("{s}.{table}"), &format!("SELECT * FROM {SCHEMA}.{table} WHERE run = {q}")).await?;
        }
        for (table, sql) in EVENT_VIEWS.iter().zip(parts) {
            self.view(&format!("{s}.{table}"), sql).await?;
        }
        Ok(())
    }

    fn table(&self, name: &str, schema: SchemaRef, partitions: Vec<Vec<RecordBatch>>) -> Result<(), QueryError> {
        let t = MemTable::try_new(schema, partitions).map_err(query_error)?;
        self.ctx.register_table(name, Arc::new(t)).map_err(query_error)?;
        Ok(())
    }

    async fn view(&self, name: &str, select: &str) -> Result<(), QueryError> {
        let df = self.ctx.sql(&format!("CREATE VIEW {name} AS {select}")).await.map_err(query_error)?;
        df.collect().await.map_err(query_error)?;
        Ok(())
    }

    /// Run `i`'s event tables from its store's Parquet files (an absent file: no rows).
    async fn store_events(&self, i: usize, store: &std::path::Path) -> Result<(), QueryError> {
        for (table, schema) in event_schemas() {
            let file = store.join(format!("{table}.parquet"));
            let name = format!("_{i}_{table}");
            if file.is_file() {
                let path = file
                    .to_str()
                    .ok_or_else(|| QueryError::Query(format!("{}: the path is not UTF-8", file.display())))?;
                let options = ParquetReadOptions::default().schema(&schema);
                self.ctx
                    .register_parquet(&name, path, options)
                    .await
                    .map_err(|e| QueryError::Query(format!("{}: {}", file.display(), one_line(&e.to_string()))))?;
            } else {
                self.table(&name, Arc::new(schema), vec![vec![]])?;
            }
        }
        Ok(())
    }

    /// Run `i`'s event tables from a trace in memory: Arrow arrays over its columns, in as many
    /// partitions as there are cores (slices, no copies).
    fn trace_events(&self, i: usize, d: &Arc<Dataset>) -> Result<(), QueryError> {
        use shared::{f64s, u32s, u64s};
        let arrays: [Vec<ArrayRef>; 5] = [
            vec![
                Arc::new(u32s(d, |d| &d.trace.intervals.location)),
                Arc::new(u64s(d, |d| &d.trace.intervals.start)),
                Arc::new(u64s(d, |d| &d.trace.intervals.end)),
                Arc::new(u32s(d, |d| &d.trace.intervals.kind)),
                Arc::new(u32s(d, |d| &d.trace.intervals.depth)),
            ],
            vec![
                Arc::new(u32s(d, |d| &d.trace.messages.source)),
                Arc::new(u32s(d, |d| &d.trace.messages.destination)),
                Arc::new(u64s(d, |d| &d.trace.messages.send_time)),
                Arc::new(u64s(d, |d| &d.trace.messages.recv_time)),
                Arc::new(u32s(d, |d| &d.trace.messages.bytes)),
                Arc::new(u32s(d, |d| &d.trace.messages.tag)),
            ],
            vec![
                Arc::new(u32s(d, |d| &d.trace.collectives.location)),
                Arc::new(u64s(d, |d| &d.trace.collectives.start)),
                Arc::new(u64s(d, |d| &d.trace.collectives.end)),
                Arc::new(u32s(d, |d| &d.trace.collectives.op)),
                Arc::new(u32s(d, |d| &d.trace.collectives.root)),
                Arc::new(u32s(d, |d| &d.trace.collectives.bytes)),
            ],
            vec![
                Arc::new(u32s(d, |d| &d.trace.metrics.location)),
                Arc::new(u64s(d, |d| &d.trace.metrics.time)),
                Arc::new(u32s(d, |d| &d.trace.metrics.metric)),
                Arc::new(f64s(d, |d| &d.trace.metrics.value)),
            ],
            vec![
                Arc::new(u32s(d, |d| &d.trace.instants.location)),
                Arc::new(u64s(d, |d| &d.trace.instants.time)),
                Arc::new(u32s(d, |d| &d.trace.instants.name)),
                Arc::new(UInt32Array::from_iter_values(d.trace.instants.scope.iter().map(|s| s.code()))),
                Arc::new(u32s(d, |d| &d.trace.instants.category)),
                Arc::new(u32s(d, |d| &d.trace.instants.args)),
            ],
        ];
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        for ((table, schema), columns) in event_schemas().into_iter().zip(arrays) {
            let schema = Arc::new(schema);
            let batch = RecordBatch::try_new(schema.clone(), columns)
                .map_err(|e| QueryError::Query(format!("the trace's {table}: {e}")))?;
            let rows = batch.num_rows();
            let per = rows.div_ceil(cores).max(1 << 16);
            let partitions: Vec<Vec<RecordBatch>> =
                (0..rows).step_by(per).map(|at| vec![batch.slice(at, per.min(rows - at))]).collect();
            let partitions = if partitions.is_empty() { vec![vec![]] } else { partitions };
            self.table(&format!("_{i}_{table}"), schema, partitions)?;
        }
        Ok(())
    }

    /// Run `i`'s tables of names: regions, collective operations, metrics with their units.
    fn names(&self, i: usize, t: &Trace) -> Result<(), QueryError> {
        let ids = |n: usize| Arc::new(UInt32Array::from_iter_values(0..n as u32)) as ArrayRef;
        let strings = |v: &[String]| Arc::new(StringArray::from_iter_values(v)) as ArrayRef;
        let regions =
            RecordBatch::try_from_iter([("region", ids(t.region_names.len())), ("name", strings(&t.region_names))]);
        let ops =
            RecordBatch::try_from_iter([("op", ids(t.collective_names.len())), ("name", strings(&t.collective_names))]);
        let n = t.metric_names.len();
        let unit = (0..n).map(|m| t.metric_units.get(m).filter(|u| !u.is_empty()).map(String::as_str));
        let accumulated = (0..n).map(|m| Some(t.metric_accumulated.get(m).copied().unwrap_or(false)));
        let metrics = RecordBatch::try_from_iter([
            ("metric", ids(n)),
            ("name", strings(&t.metric_names)),
            ("unit", Arc::new(StringArray::from_iter(unit)) as ArrayRef),
            ("accumulated", Arc::new(BooleanArray::from_iter(accumulated)) as ArrayRef),
        ]);
        let categories = RecordBatch::try_from_iter([
            ("category", ids(t.instant_categories.len())),
            ("name", strings(&t.instant_categories)),
        ]);
        for (name, batch) in
            [("regions", regions), ("ops", ops), ("metric_names", metrics), ("instant_categories", categories)]
        {
            let batch = batch.map_err(query_error)?;
            self.table(&format!("_{i}_{name}"), batch.schema(), vec![vec![batch]])?;
        }
        Ok(())
    }

    /// The answer to `sql`.
    pub fn sql(&self, sql: &str) -> Result<Answer, QueryError> {
        self.analyse_for(sql)?;
        self.runtime.block_on(async {
            let df = self.plan(sql).await?;
            let schema = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await.map_err(query_error)?;
            Ok(Answer { schema, batches })
        })
    }

    async fn plan(&self, sql: &str) -> Result<datafusion::dataframe::DataFrame, QueryError> {
        let read_only = SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false);
        self.ctx.sql_with_options(sql, read_only).await.map_err(query_error)
    }

    /// The answer to `sql` as it is computed: batches computed on this session's threads as
    /// the stream is read.
    pub fn stream(&self, sql: &str) -> Result<Batches, QueryError> {
        self.analyse_for(sql)?;
        self.runtime.block_on(async { self.plan(sql).await?.execute_stream().await.map_err(query_error) })
    }

    /// The columns of the answer to `sql`, from its plan (nothing is read).
    pub fn answer_schema(&self, sql: &str) -> Result<SchemaRef, QueryError> {
        self.analyse_for(sql)?;
        self.runtime.block_on(async { Ok(Arc::new(self.plan(sql).await?.schema().as_arrow().clone())) })
    }

    /// The runs' names: each names a schema of its own but one named as [`SCHEMA`].
    pub fn runs(&self) -> Vec<&str> {
        self.runs.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The columns of `table` ([`TABLES`] and [`ANALYSES`]) in `schema` ([`SCHEMA`] or a run's),
    /// without computing an analysis.
    pub fn table_schema(&self, schema: &str, table: &str) -> Result<SchemaRef, QueryError> {
        if let Some(s) = analyses::empty_schema(table) {
            return Ok(s);
        }
        let reference = datafusion::common::TableReference::partial(schema, table);
        self.runtime.block_on(async {
            let df = self.ctx.table(reference).await.map_err(query_error)?;
            Ok(Arc::new(df.schema().as_arrow().clone()))
        })
    }

    /// How `sql` would run: its logical and physical plans.
    pub fn explain(&self, sql: &str) -> Result<String, QueryError> {
        self.analyse_for(sql)?;
        self.runtime.block_on(async {
            let df = self.plan(sql).await?.explain(false, false).map_err(query_error)?;
            let batches = df.collect().await.map_err(query_error)?;
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).map_err(query_error)?;
            Ok(text.to_string())
        })
    }

    /// The tables of [`TABLES`] and [`ANALYSES`] with their columns and types.
    pub fn schema(&self) -> Result<Vec<(String, Columns)>, QueryError> {
        self.runtime.block_on(async {
            let mut out = Vec::new();
            for name in TABLES {
                let df = self.ctx.table(name).await.map_err(query_error)?;
                let columns = df.schema().fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect();
                out.push((name.to_string(), columns));
            }
            for name in ANALYSES {
                let columns = analyses::empty_schema(name)
                    .map(|s| s.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect())
                    .unwrap_or_default();
                out.push((name.to_string(), columns));
            }
            Ok(out)
        })
    }
}

/// The event tables as a store holds them (the schema of its Parquet files).
fn event_schemas() -> [(&'static str, Schema); 5] {
    let u32 = |n: &str| Field::new(n, DataType::UInt32, false);
    let u64 = |n: &str| Field::new(n, DataType::UInt64, false);
    [
        ("intervals", Schema::new(vec![u32("location"), u64("start"), u64("end"), u32("region"), u32("depth")])),
        (
            "messages",
            Schema::new(vec![
                u32("source"),
                u32("destination"),
                u64("send_time"),
                u64("recv_time"),
                u32("bytes"),
                u32("tag"),
            ]),
        ),
        (
            "collectives",
            Schema::new(vec![u32("location"), u64("start"), u64("end"), u32("op"), u32("root"), u32("bytes")]),
        ),
        (
            "metrics",
            Schema::new(vec![
                u32("location"),
                u64("time"),
                u32("metric"),
                Field::new("value", DataType::Float64, false),
            ]),
        ),
        (
            "instants",
            Schema::new(vec![u32("location"), u64("time"), u32("region"), u32("scope"), u32("category"), u32("args")]),
        ),
    ]
}

/// The `locations` rows of one run: a location's process is its name before the last ` / `,
/// its thread what follows (none where the name has no ` / `).
fn locations_batch(run: &str, t: &Trace) -> Result<RecordBatch, QueryError> {
    let l = &t.locations;
    let n = l.name.len();
    let split =
        |s: &str| s.rsplit_once(" / ").map_or((s.to_string(), None), |(p, th)| (p.to_string(), Some(th.to_string())));
    let (process, thread): (Vec<String>, Vec<Option<String>>) = l.name.iter().map(|s| split(s)).unzip();
    let kind: Vec<&str> = (0..n).map(|i| l.kind_of(i).label()).collect();
    let node = (0..n).map(|i| l.node.get(i).copied().filter(|&v| v != u32::MAX));
    RecordBatch::try_from_iter([
        ("run", Arc::new(StringArray::from_iter_values(std::iter::repeat_n(run, n))) as ArrayRef),
        ("location", Arc::new(UInt32Array::from_iter_values(0..n as u32)) as ArrayRef),
        ("name", Arc::new(StringArray::from_iter_values(&l.name)) as ArrayRef),
        ("process", Arc::new(StringArray::from(process)) as ArrayRef),
        ("thread", Arc::new(StringArray::from(thread)) as ArrayRef),
        ("kind", Arc::new(StringArray::from(kind)) as ArrayRef),
        ("node", Arc::new(UInt32Array::from_iter(node)) as ArrayRef),
    ])
    .map_err(query_error)
}

/// Run `i`'s instants: their row (NULL for one on none), name, scope, category (NULL where
/// none is named), argument count and time.
fn instants_sql(i: usize, run: &str, per: &dyn Fn(&str) -> String) -> String {
    format!(
        "SELECT {run} AS run, CASE WHEN n.location = 4294967295 THEN NULL ELSE n.location END AS location, \
         r.name, n.region, CASE n.scope WHEN 1 THEN 'process' WHEN 2 THEN 'global' ELSE 'thread' END AS scope, \
         NULLIF(c.name, '') AS category, n.args, n.time, {} AS time_s \
         FROM _{i}_instants n LEFT JOIN _{i}_regions r ON n.region = r.region \
         LEFT JOIN _{i}_instant_categories c ON n.category = c.category",
        per("n.time")
    )
}

/// A SQL identifier of `s`, quoted (its case kept).
pub fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A SQL string literal of `s`.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `ticks` in seconds at `tps` ticks a second (NULL where the clock is unknown).
fn seconds(ticks: &str, tps: u64) -> String {
    if tps == 0 { "CAST(NULL AS DOUBLE)".into() } else { format!("CAST({ticks} AS DOUBLE) / {tps}.0") }
}

/// `end - start`, 0 where a damaged row ends before it starts.
fn duration(start: &str, end: &str) -> String {
    format!("CASE WHEN {end} >= {start} THEN {end} - {start} ELSE CAST(0 AS BIGINT UNSIGNED) END")
}

fn intervals_sql(i: usize, run: &str, per: &dyn Fn(&str) -> String) -> String {
    let d = duration("i.start", "i.\"end\"");
    format!(
        "SELECT {run} AS run, i.location, r.name, i.region, i.depth, i.start, i.\"end\", {d} AS duration, \
         {} AS start_s, {} AS end_s, {} AS duration_s \
         FROM _{i}_intervals i LEFT JOIN _{i}_regions r ON i.region = r.region",
        per("i.start"),
        per("i.\"end\""),
        per(&d)
    )
}

fn collectives_sql(i: usize, run: &str, per: &dyn Fn(&str) -> String) -> String {
    let d = duration("c.start", "c.\"end\"");
    format!(
        "SELECT {run} AS run, c.location, o.name AS operation, c.op, c.start, c.\"end\", {d} AS duration, \
         c.root, c.bytes, {} AS start_s, {} AS end_s, {} AS duration_s \
         FROM _{i}_collectives c LEFT JOIN _{i}_ops o ON c.op = o.op",
        per("c.start"),
        per("c.\"end\""),
        per(&d)
    )
}

/// `answer` as a text table of at most `max_rows` rows, the rest counted on a line after it.
pub fn pretty(answer: &Answer, max_rows: usize) -> Result<String, QueryError> {
    let mut shown = Vec::new();
    let mut left = max_rows;
    for b in &answer.batches {
        if left == 0 {
            break;
        }
        let n = b.num_rows().min(left);
        shown.push(b.slice(0, n));
        left -= n;
    }
    let table = datafusion::arrow::util::pretty::pretty_format_batches_with_schema(answer.schema.clone(), &shown)
        .map_err(query_error)?;
    let rows = answer.rows();
    let more = if rows > max_rows {
        format!("({rows} rows, the first {max_rows} shown: --csv, --json or --parquet OUT gives them all)\n")
    } else {
        String::new()
    };
    Ok(format!("{table}\n{more}"))
}

/// A writer of JSON: an array of one object per row.
pub fn json_writer<W: std::io::Write>(w: W) -> datafusion::arrow::json::ArrayWriter<W> {
    datafusion::arrow::json::ArrayWriter::new(w)
}

/// A writer of CSV with a header line.
pub fn csv_writer<W: std::io::Write>(w: W) -> datafusion::arrow::csv::Writer<W> {
    datafusion::arrow::csv::Writer::new(w)
}

/// `answer` as a Parquet file into `w` (snappy, as the store writes).
pub fn write_parquet<W: std::io::Write + Send>(w: W, answer: &Answer) -> Result<(), QueryError> {
    use datafusion::parquet::arrow::ArrowWriter;
    let mut writer = ArrowWriter::try_new(w, answer.schema.clone(), None).map_err(query_error)?;
    for b in &answer.batches {
        writer.write(b).map_err(query_error)?;
    }
    writer.close().map_err(query_error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
