//! The store's pyramid aggregation written as Apache DataFusion plans. The message cube of
//! level 0 (message count and byte sum per sender block, receiver block and time bin of the
//! send) is a filter and a GROUP BY over the store's `messages.parquet` ([`message_cube_on`]);
//! the whole pyramid, every level of the message cube, the state tiles and the lines, is a set
//! of SQL plans over `messages.parquet` and `intervals.parquet` ([`pyramid_on`], `exaviz pyramid
//! STORE --engine datafusion`). The native pass (`exaviz pyramid`, rayon over arrow-rs) is the
//! fast path on one machine; these plans are the same aggregation on an engine that also runs
//! distributed: unchanged on a Ballista cluster ([`on_cluster`] with `df://HOST:PORT`, or
//! `standalone` for a scheduler and an executor started in this process). Every way must equal
//! the native pyramid cell for cell.

use std::path::Path;

use datafusion::arrow::array::{Array, Int64Array, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::prelude::{ParquetReadOptions, SessionContext, col, lit};
use exaviz_store as store;

mod pyramid;
pub use pyramid::{Dialect, plans_sql, pyramid_on};

/// One cell of the message cube: sender block, receiver block, time bin, messages, bytes.
pub type Cell = (u32, u32, u32, u64, u64);

#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    #[error(transparent)]
    Source(#[from] exaviz_model::source::SourceError),
    #[error("{store}: {message}")]
    Plan { store: String, message: String },
}

fn plan_error(store: &Path, e: impl std::fmt::Display) -> AggregateError {
    AggregateError::Plan { store: store.display().to_string(), message: e.to_string() }
}

/// The blocks and bins of level 0 of `store`'s pyramid: (first tick, ticks per bin, ranks per
/// block, ranks).
fn cube_shape(store: &Path) -> Result<(u64, u64, u32, u32), AggregateError> {
    let m = store::manifest(store)?;
    let span = m.pyramid.ok_or_else(|| plan_error(store, "no pyramid to aggregate like: run exaviz pyramid STORE"))?;
    let shape = span.shape();
    Ok((shape.t0, shape.message_bin_ticks(), shape.message_block, shape.ranks))
}

/// The message cube of `store` by DataFusion, on `ctx`: cells sorted, zero cells left out.
pub async fn message_cube_on(ctx: &SessionContext, store: &Path) -> Result<Vec<Cell>, AggregateError> {
    let (t0, bin_ticks, block, ranks) = cube_shape(store)?;
    let file = store.join("messages.parquet");
    let path = file.to_str().ok_or_else(|| plan_error(store, "the store's path is not UTF-8"))?;
    let df = ctx.read_parquet(path, ParquetReadOptions::default()).await.map_err(|e| plan_error(store, e))?;
    let plan = df
        .filter(
            col("source").lt(lit(ranks)).and(col("destination").lt(lit(ranks))).and(col("send_time").gt_eq(lit(t0))),
        )
        .and_then(|df| {
            df.aggregate(
                vec![
                    (col("source") / lit(block)).alias("s"),
                    (col("destination") / lit(block)).alias("r"),
                    ((col("send_time") - lit(t0)) / lit(bin_ticks)).alias("bin"),
                ],
                vec![count(lit(1u8)).alias("n"), sum(col("bytes")).alias("b")],
            )
        })
        .map_err(|e| plan_error(store, e))?;
    let batches = plan.collect().await.map_err(|e| plan_error(store, e))?;
    let mut cells = Vec::new();
    for batch in &batches {
        let column =
            |name: &str| batch.column_by_name(name).ok_or_else(|| plan_error(store, format!("no column {name}")));
        let u32s = |name: &str| -> Result<Vec<u32>, AggregateError> {
            let c = column(name)?;
            let c = datafusion::arrow::compute::cast(c, &DataType::UInt32).map_err(|e| plan_error(store, e))?;
            let a = c.as_any().downcast_ref::<UInt32Array>().ok_or_else(|| plan_error(store, "not u32"))?;
            Ok(a.values().to_vec())
        };
        let (s, r, bin) = (u32s("s")?, u32s("r")?, u32s("bin")?);
        let n = column("n")?;
        let n = n.as_any().downcast_ref::<Int64Array>().ok_or_else(|| plan_error(store, "count is not i64"))?;
        let b = column("b")?;
        let b = b.as_any().downcast_ref::<UInt64Array>().ok_or_else(|| plan_error(store, "sum is not u64"))?;
        for i in 0..batch.num_rows() {
            cells.push((s[i], r[i], bin[i], n.value(i).max(0) as u64, if b.is_null(i) { 0 } else { b.value(i) }));
        }
    }
    cells.sort_unstable();
    Ok(cells)
}

/// [`message_cube_on`] on an embedded DataFusion session, from synchronous code.
pub fn message_cube(store: &Path) -> Result<Vec<Cell>, AggregateError> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| plan_error(store, e))?;
    runtime.block_on(message_cube_on(&SessionContext::new(), store))
}

/// How long a cluster may take to answer before [`message_cube_on_cluster`] gives up.
pub const CLUSTER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// The message cube of `store` on a Ballista cluster: `cluster` is `df://HOST:PORT` (a running
/// scheduler, which must see the store at the same path) or `standalone` (a scheduler and an
/// executor started in this process, over localhost). An unreachable scheduler or one slower
/// than `timeout` gives an error, never a hang.
pub fn message_cube_on_cluster(
    store: &Path,
    cluster: &str,
    timeout: std::time::Duration,
) -> Result<Vec<Cell>, AggregateError> {
    on_cluster(store, cluster, timeout, |ctx| async move { message_cube_on(&ctx, store).await })
}

/// Runs `work` on a session of the Ballista cluster `cluster` (as [`message_cube_on_cluster`]
/// takes it), within `timeout`; its errors name the store and the cluster in one line.
pub fn on_cluster<T, F, W>(
    store: &Path,
    cluster: &str,
    timeout: std::time::Duration,
    work: W,
) -> Result<T, AggregateError>
where
    W: FnOnce(SessionContext) -> F,
    F: std::future::Future<Output = Result<T, AggregateError>>,
{
    use ballista::prelude::SessionContextExt;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| plan_error(store, e))?;
    let what = format!("Ballista cluster {cluster}");
    runtime.block_on(async {
        let work = async {
            let ctx = if cluster == "standalone" {
                SessionContext::standalone().await
            } else if cluster.starts_with("df://") {
                SessionContext::remote(cluster).await
            } else {
                return Err(plan_error(store, format!("cluster '{cluster}' is neither df://HOST:PORT nor standalone")));
            };
            let ctx = ctx.map_err(|e| plan_error(store, format!("{what}: {}", first_line(&e.to_string()))))?;
            work(ctx).await.map_err(|e| {
                let message = match e {
                    AggregateError::Plan { message, .. } => message,
                    other => other.to_string(),
                };
                plan_error(store, format!("{what}: {}", first_line(&message)))
            })
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| plan_error(store, format!("{what} did not answer within {} s", timeout.as_secs())))?
    })
}

/// [`plans_sql`] from synchronous code.
pub fn pyramid_sql(store: &Path, dialect: Dialect) -> Result<Vec<(&'static str, String)>, AggregateError> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| plan_error(store, e))?;
    runtime.block_on(plans_sql(store, dialect))
}

/// The whole pyramid of `store` by DataFusion's plans ([`pyramid_on`]): on an embedded session
/// (`cluster` `None`) or on a Ballista cluster (as [`message_cube_on_cluster`] takes it).
pub fn pyramid(
    store: &Path,
    cluster: Option<&str>,
    timeout: std::time::Duration,
) -> Result<(store::PyramidSpan, exaviz_model::pyramid::Pyramid), AggregateError> {
    match cluster {
        Some(c) => on_cluster(store, c, timeout, |ctx| async move { pyramid_on(&ctx, store).await }),
        None => {
            let runtime = tokio::runtime::Runtime::new().map_err(|e| plan_error(store, e))?;
            runtime.block_on(pyramid_on(&SessionContext::new(), store))
        }
    }
}

/// The first line of an error (gRPC errors carry several).
fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// The same cells from the store's own pyramid (summed natively when it was written).
pub fn native_cube(store: &Path) -> Result<Vec<Cell>, AggregateError> {
    let p = store::pyramid(store)?.ok_or_else(|| plan_error(store, "no pyramid: run exaviz pyramid STORE"))?;
    let l = &p.levels[0];
    let (blocks, bins) = (l.message_blocks, l.message_bins);
    let mut cells = Vec::new();
    for s in 0..blocks {
        for r in 0..blocks {
            for bin in 0..bins {
                let k = ((s * blocks + r) * bins + bin) as usize;
                if l.counts[k] > 0 {
                    cells.push((s, r, bin, l.counts[k], l.bytes[k]));
                }
            }
        }
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DataFusion's plan and the native pass agree cell for cell on a generated store, with
    /// messages of every size (byte sums past `u32`) among ranks that share blocks.
    #[test]
    fn datafusion_plan_equals_the_native_pyramid() {
        let dir = std::env::temp_dir().join(format!("exaviz-aggregate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.exaviz");
        exaviz_datasets::convert("gen:fd4?ranks=3000&messages=400000", &path, &|_, _| {}).unwrap();
        let native = native_cube(&path).unwrap();
        let planned = message_cube(&path).unwrap();
        assert!(native.len() > 1000, "{}", native.len());
        assert_eq!(planned.iter().map(|c| c.3).sum::<u64>(), 400_000);
        assert_eq!(planned, native);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Ballista's scheduler and executor, started in this process, run the same plan to the
    /// same cells; an unreachable scheduler is an error within the timeout, not a hang.
    #[test]
    fn ballista_in_process_equals_the_native_pyramid_and_a_dead_cluster_times_out() {
        let dir = std::env::temp_dir().join(format!("exaviz-ballista-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.exaviz");
        exaviz_datasets::convert("gen:fd4?ranks=700&messages=150000", &path, &|_, _| {}).unwrap();
        let native = native_cube(&path).unwrap();
        let distributed = message_cube_on_cluster(&path, "standalone", CLUSTER_TIMEOUT).unwrap();
        assert!(native.len() > 500, "{}", native.len());
        assert_eq!(distributed, native);
        let long = store_with_long_intervals(&dir, "gen:fd4?ranks=700&messages=150000");
        assert_same_pyramid(&long, &pyramid(&long, Some("standalone"), CLUSTER_TIMEOUT).unwrap());
        let started = std::time::Instant::now();
        let e = message_cube_on_cluster(&path, "df://127.0.0.1:9", std::time::Duration::from_secs(20))
            .unwrap_err()
            .to_string();
        assert!(e.contains("df://127.0.0.1:9") && !e.contains('\n'), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(25));
        let e = message_cube_on_cluster(&path, "spark://x", CLUSTER_TIMEOUT).unwrap_err().to_string();
        assert!(e.contains("neither"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A generated store whose intervals also hold long ones (a phase over many bins on every
    /// 7th rank, one over the whole trace, one past the last bin's end) and a fourth region, so
    /// that the state tiles' runs of whole bins and the state clamp are summed.
    fn store_with_long_intervals(dir: &Path, spec: &str) -> std::path::PathBuf {
        let mut d = exaviz_datasets::open(spec).unwrap();
        let t = &mut d.trace;
        let (t0, t1) =
            (t.intervals.start.iter().min().copied().unwrap(), t.intervals.end.iter().max().copied().unwrap());
        let ranks = t.locations.name.len() as u32;
        t.region_names.push("phase".into());
        let phase = t.region_names.len() as u32 - 1;
        let span = t1 - t0;
        let mut add = |location: u32, start: u64, end: u64, kind: u32| {
            let v = &mut t.intervals;
            v.location.push(location);
            v.start.push(start);
            v.end.push(end);
            v.kind.push(kind);
            v.depth.push(0);
        };
        for r in (0..ranks).step_by(7) {
            let a = t0 + span / 13 * u64::from(r % 5) + u64::from(r);
            add(r, a, a + span / 3 + u64::from(r) * 977, phase);
        }
        add(0, t0, t1, 0);
        add(ranks - 1, t1 - span / 7, t1, phase);
        let path = dir.join("long.exaviz");
        exaviz_store::write(&d, &path).unwrap();
        path
    }

    /// The whole pyramid by DataFusion's plans equals the native pass: every level's message
    /// cube and state tiles cell for cell, the lines' counts exactly and their gradient weights
    /// within one unit (floating-point sums in another order).
    fn assert_same_pyramid(store: &Path, planned: &(store::PyramidSpan, exaviz_model::pyramid::Pyramid)) {
        let (span, native, _) = store::sum_pyramid(store, &|_, _| {}).unwrap();
        assert_eq!(planned.0, span);
        let (planned, native) = (&planned.1, &native);
        assert_eq!(planned.shape, native.shape);
        assert_eq!(planned.levels.len(), native.levels.len());
        for (k, (a, b)) in planned.levels.iter().zip(&native.levels).enumerate() {
            assert_eq!(a.counts, b.counts, "message counts of level {k}");
            assert_eq!(a.bytes, b.bytes, "bytes of level {k}");
            assert_eq!(a.ticks, b.ticks, "state ticks of level {k}");
        }
        let (a, b) = (planned.lines.as_ref().unwrap(), native.lines.as_ref().unwrap());
        assert_eq!(a.counts, b.counts);
        let worst = a.gradient.iter().zip(&b.gradient).map(|(x, y)| x.abs_diff(*y)).max().unwrap();
        assert!(worst <= 1, "gradient weights differ by {worst}");
        assert!(b.counts.iter().filter(|&&n| n > 0).count() > 100);
        assert!(native.pairs.as_ref().is_some_and(|p| p.len() > 100), "per-pair tiles");
        assert_eq!(planned.pairs, native.pairs, "per-pair tiles");
        assert_eq!(planned.locations, native.locations, "per-location tiles");
        let level = &native.levels[0];
        let states = planned.shape.states;
        let whole = (0..level.state_bins)
            .filter(|&bin| level.state_ticks(0, states - 1, states, bin) == level.state_bin_ticks)
            .count();
        assert!(whole > 100, "rank 0's phase covers {whole} whole bins");
    }

    #[test]
    fn the_whole_pyramid_by_datafusion_equals_the_native_pass() {
        let dir = std::env::temp_dir().join(format!("exaviz-whole-pyramid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = store_with_long_intervals(&dir, "gen:fd4?ranks=3000&messages=400000");
        let planned = pyramid(&path, None, CLUSTER_TIMEOUT).unwrap();
        assert_same_pyramid(&path, &planned);
        // Written into the store, it reads back as itself.
        store::put_pyramid(&path, planned.0, &planned.1).unwrap();
        assert_eq!(store::pyramid(&path).unwrap().unwrap(), planned.1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A store without a pyramid, or no store at all: one line naming it.
    #[test]
    fn missing_pyramids_and_stores_are_refused_in_one_line() {
        let e = message_cube(Path::new("/no/such/store")).unwrap_err().to_string();
        assert!(e.contains("/no/such/store") && !e.contains('\n'), "{e}");
        let e = pyramid(Path::new("/no/such/store"), None, CLUSTER_TIMEOUT).unwrap_err().to_string();
        assert!(e.contains("/no/such/store") && !e.contains('\n'), "{e}");
        // Ticks past 2^63 do not fit the plans' signed integers: refused, not wrapped.
        let dir = std::env::temp_dir().join(format!("exaviz-late-ticks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut d = exaviz_datasets::open("gen:fd4?ranks=8&messages=200").unwrap();
        let t = &mut d.trace;
        for v in [&mut t.messages.send_time, &mut t.messages.recv_time, &mut t.intervals.start, &mut t.intervals.end] {
            v.iter_mut().for_each(|x| *x += 1 << 63);
        }
        let path = dir.join("late.exaviz");
        exaviz_store::write(&d, &path).unwrap();
        let e = pyramid(&path, None, CLUSTER_TIMEOUT).unwrap_err().to_string();
        assert!(e.contains("late.exaviz") && e.contains("Int64") && !e.contains('\n'), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
