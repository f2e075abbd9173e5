//! The store's pyramid aggregation written as an Apache DataFusion plan: the message cube of
//! level 0 (message count and byte sum per sender block, receiver block and time bin of the
//! send) as a filter and a GROUP BY over the store's `messages.parquet`, run by DataFusion's
//! embedded engine. The native pass (`exaviz pyramid`, rayon over arrow-rs) is the fast path on
//! one machine; this plan is the same aggregation on an engine that also runs distributed:
//! unchanged on a Ballista cluster ([`message_cube_on_cluster`] with `df://HOST:PORT`, or
//! `standalone` for a scheduler and an executor started in this process). Every way must equal
//! the native pyramid cell for cell.

use std::path::Path;

use datafusion::arrow::array::{Array, Int64Array, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::prelude::{ParquetReadOptions, SessionContext, col, lit};
use exaviz_datasets::store;

/// One cell of the message cube: sender block, receiver block, time bin, messages, bytes.
pub type Cell = (u32, u32, u32, u64, u64);

#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    #[error(transparent)]
    Source(#[from] exaviz_datasets::SourceError),
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
            message_cube_on(&ctx, store).await.map_err(|e| {
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

    /// A store without a pyramid, or no store at all: one line naming it.
    #[test]
    fn missing_pyramids_and_stores_are_refused_in_one_line() {
        let e = message_cube(Path::new("/no/such/store")).unwrap_err().to_string();
        assert!(e.contains("/no/such/store") && !e.contains('\n'), "{e}");
    }
}
