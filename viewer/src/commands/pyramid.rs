//! `exaviz pyramid`: a store's pyramid summed natively, by DataFusion (on a Ballista cluster
//! too) or printed as SQL for DuckDB and DataFusion.

use anyhow::Result;

#[cfg(feature = "datafusion")]
use crate::common::spinner;
use crate::common::with_progress;

/// What sums a store's pyramid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PyramidEngine {
    Native,
    Datafusion,
}

/// The SQL dialect `exaviz pyramid --sql` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SqlDialect {
    Datafusion,
    Duckdb,
}

/// The pyramid's plans as SQL in `dialect`: one JSON object, plan name to text.
#[cfg(feature = "datafusion")]
pub(crate) fn pyramid_sql(store: &std::path::Path, dialect: SqlDialect) -> Result<String> {
    use exaviz_aggregate::Dialect;
    let d = match dialect {
        SqlDialect::Datafusion => Dialect::DataFusion,
        SqlDialect::Duckdb => Dialect::DuckDb,
    };
    let plans = exaviz_aggregate::pyramid_sql(store, d)?;
    let map: serde_json::Map<String, serde_json::Value> =
        plans.into_iter().map(|(name, sql)| (name.to_string(), serde_json::Value::String(sql))).collect();
    Ok(serde_json::to_string_pretty(&map)?)
}

#[cfg(not(feature = "datafusion"))]
pub(crate) fn pyramid_sql(store: &std::path::Path, _: SqlDialect) -> Result<String> {
    datafusion_pyramid(store, None, true)
}

/// The pyramid summed by DataFusion's plans (embedded, or on a Ballista cluster) and, unless
/// `dry_run`, added to the store.
#[cfg(feature = "datafusion")]
pub(crate) fn datafusion_pyramid(store: &std::path::Path, cluster: Option<&str>, dry_run: bool) -> Result<String> {
    let on =
        cluster.map_or_else(|| "DataFusion (embedded)".to_string(), |c| format!("DataFusion on Ballista cluster {c}"));
    let pb = spinner(&format!("summing the pyramid of {} by {on}", store.display()));
    let result = exaviz_aggregate::pyramid(store, cluster, exaviz_aggregate::CLUSTER_TIMEOUT);
    pb.finish_and_clear();
    let (span, p) = result?;
    if !dry_run {
        exaviz_store::put_pyramid(store, span, &p)?;
    }
    Ok(on)
}

#[cfg(not(feature = "datafusion"))]
pub(crate) fn datafusion_pyramid(store: &std::path::Path, _: Option<&str>, _: bool) -> Result<String> {
    anyhow::bail!(
        "{}: --engine datafusion needs an exaviz built with DataFusion: cargo build --release -p exaviz --features datafusion",
        store.display()
    )
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store folder.
    pub store: std::path::PathBuf,
    /// Sum the pyramid and report the time of each part without writing it (to measure).
    #[arg(long)]
    pub dry_run: bool,
    /// What sums it: `native` (rayon over the rows) or `datafusion` (the same pyramid as
    /// Apache DataFusion plans over the store's Parquet files, embedded or on a Ballista
    /// cluster; in an exaviz built with `--features datafusion`).
    #[arg(long, value_enum, default_value_t = PyramidEngine::Native)]
    pub engine: PyramidEngine,
    /// With `--engine datafusion`: run the plans on a Ballista cluster, `df://HOST:PORT` (a
    /// running scheduler whose executors see the store at the same path) or `standalone` (a
    /// scheduler and an executor started in this process).
    #[arg(long, value_name = "df://HOST:PORT|standalone")]
    pub cluster: Option<String>,
    /// With `--engine datafusion`: print the plans' SQL in this dialect as one JSON object
    /// (the span, then level 0 of the message cube, the lines and the state tiles, over
    /// tables `messages` and `intervals`) and exit, to run them elsewhere on the same files.
    #[arg(long, value_enum, value_name = "DIALECT")]
    pub sql: Option<SqlDialect>,
}

pub fn run(args: &Args) -> Result<()> {
    pyramid_cmd(&args.store, args.dry_run, args.engine, args.cluster.as_deref(), args.sql)
}

fn pyramid_cmd(
    store: &std::path::Path,
    dry_run: bool,
    engine: PyramidEngine,
    cluster: Option<&str>,
    sql: Option<SqlDialect>,
) -> Result<()> {
    if engine == PyramidEngine::Native && (cluster.is_some() || sql.is_some()) {
        let what = if sql.is_some() { "--sql writes" } else { "--cluster runs" };
        anyhow::bail!("{}: {what} DataFusion's plans: add --engine datafusion", store.display());
    }
    if let Some(dialect) = sql {
        println!("{}", pyramid_sql(store, dialect)?);
        return Ok(());
    }
    let started = std::time::Instant::now();
    if engine == PyramidEngine::Datafusion {
        let m = exaviz_store::manifest(store)?;
        let on = datafusion_pyramid(store, cluster, dry_run)?;
        println!(
            "{}: pyramid summed by {on} from {} messages and {} intervals in {:.1} s{}",
            store.display(),
            m.rows("messages"),
            m.rows("intervals"),
            started.elapsed().as_secs_f64(),
            if dry_run { ", nothing written" } else { "" }
        );
        return Ok(());
    }
    let template = "{msg} [{bar:32}] {percent}% ({eta} left)";
    let m = exaviz_store::manifest(store)?;
    let msg = format!("summing the pyramid of {}", store.display());
    let times = if dry_run {
        with_progress(&msg, template, |p| exaviz_store::sum_pyramid(store, p))?.2
    } else {
        with_progress(&msg, template, |p| exaviz_store::add_pyramid(store, p))?.1
    };
    let (messages, intervals) = (m.rows("messages"), m.rows("intervals"));
    let bytes: u64 = ["pyramid_messages", "pyramid_states", "pyramid_lines", "pyramid_locations", "pyramid_pairs"]
        .iter()
        .filter_map(|t| std::fs::metadata(store.join(format!("{t}.parquet"))).ok())
        .map(|m| m.len())
        .sum();
    let seconds = started.elapsed().as_secs_f64();
    let rate = |rows: u64, s: f64| rows as f64 / s.max(1e-9) / 1e6;
    println!(
        "{}: pyramid summed from {messages} messages in {:.2} s ({:.1}M/s) and {intervals} intervals in {:.2} s ({:.1}M/s), {:.2} s of it summing and the rest reading; {seconds:.1} s in all{}",
        store.display(),
        times.messages_s,
        rate(messages, times.messages_s),
        times.intervals_s,
        rate(intervals, times.intervals_s),
        times.summing_s,
        if dry_run { ", nothing written".to_string() } else { format!(", {:.1} MB on disk", bytes as f64 / 1e6) }
    );
    Ok(())
}
