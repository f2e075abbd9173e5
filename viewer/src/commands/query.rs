//! `exaviz query`: SQL over any input exaviz opens, or over many runs at once (Apache
//! DataFusion; the tables are the query crate's).

use anyhow::Result;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Tables (each with a `run` column: the input's file or folder name):
  runs         run, input, ticks_per_second
  locations    run, location, name, process, thread, kind, node
  intervals    run, location, name, region, depth, start, \"end\", duration, start_s, end_s, duration_s
  instants     run, location, name, region, scope, category, args, time, time_s
               (instant events: thread, process or global scope; location NULL where on no row)
  messages     run, sender, receiver, send_time, recv_time, bytes, tag, send_s, recv_s
  collectives  run, location, operation, op, start, \"end\", duration, root, bytes, start_s, end_s, duration_s
  counters     run, location, metric, name, unit, accumulated, time, value, time_s
Analyses (exaviz critical-path's, computed when a query names them):
  critical_path         run, what, location, from_location, from_s, to_s, duration_s
  critical_path_shares  run, by (kind, location, region), name, seconds, share
  root_causes           run, location, region, direct_s, propagated_s, waits
  stragglers            run, process, steps, of_steps, excess_s
  straggler_steps       run, step, process, work_s, median_work_s, wait_s, median_wait_s, verdict
  wait_states           run, location, cause, kind, from_s, until_s, waited_s   (location ids)
  diff_rows             run, against, table, name, a_count, a_total_s, a_mean_s, b_count, b_total_s,
                        b_mean_s, change_s, relative, step_change_s, step_low_s, step_high_s, stands_out
                        (exaviz diff's rows: each run after the first against the first)
Each run is also a schema of its own: \"run.exaviz\".messages holds that run's rows alone.
Times are ticks of the run's clock (runs.ticks_per_second); columns ending in _s are seconds.
`end` is a word of SQL: write it \"end\". --schema prints the tables with their types.

Examples:
  exaviz query traces.otf2 \"SELECT name, sum(duration_s) AS s FROM intervals GROUP BY name ORDER BY s DESC LIMIT 10\"
  exaviz query run.exaviz \"SELECT sender, count(*), sum(bytes) FROM messages GROUP BY sender ORDER BY 3 DESC LIMIT 10\"
  exaviz query 'nightly/*/' \"SELECT run, max(end_s) FROM intervals GROUP BY run ORDER BY run\"
  exaviz query traces.otf2 \"SELECT * FROM root_causes ORDER BY direct_s DESC LIMIT 5\"")]
pub struct Args {
    /// The input: any file, folder, store or generator exaviz opens (a store's tables are read in
    /// place, a trace in memory); or a pattern with `*`, `?` or `[...]` (quoted, e.g.
    /// 'runs/*/') whose every match is a run of its own.
    #[arg(help = crate::common::input_help())]
    pub input: String,
    /// The query (read-only SQL: SELECT, WITH, EXPLAIN); see the tables below.
    #[arg(required_unless_present = "schema")]
    pub sql: Option<String>,
    /// List the tables and their columns with their types, and exit.
    #[arg(long)]
    pub schema: bool,
    /// Print how the query would run (its logical and physical plans) instead of its answer.
    #[arg(long)]
    pub explain: bool,
    /// Print the answer as JSON: an array of objects, one per row.
    #[arg(long, conflicts_with_all = ["csv", "parquet"])]
    pub json: bool,
    /// Print the answer as CSV with a header line.
    #[arg(long, conflicts_with = "parquet")]
    pub csv: bool,
    /// Write the answer to a Parquet file (written under a temporary name, then renamed).
    #[arg(long, value_name = "OUT")]
    pub parquet: Option<std::path::PathBuf>,
    /// Most rows printed as a table on the terminal (the rest are counted); --json, --csv and
    /// --parquet give every row.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_rows: usize,
}

#[cfg(not(feature = "query"))]
pub fn run(args: &Args) -> Result<()> {
    anyhow::bail!(
        "{}: exaviz query needs an exaviz built with its query feature (the default): cargo build --release -p exaviz",
        args.input
    )
}

#[cfg(feature = "query")]
pub fn run(args: &Args) -> Result<()> {
    use exaviz_query::{Run, Session, Source};
    use std::sync::Arc;

    let inputs = expand(&args.input)?;
    let mut runs = Vec::new();
    for input in &inputs {
        let path = std::path::Path::new(input);
        let source = if exaviz_store::is_store(path) {
            Source::Store(path.to_path_buf())
        } else {
            Source::Trace(Arc::new(crate::common::load(input)?))
        };
        runs.push(Run { name: run_name(input), input: input.clone(), source });
    }
    let names: std::collections::HashSet<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    if names.len() < runs.len() {
        // Two matches of one name (a/x and b/x): the run is named by its whole path.
        for r in &mut runs {
            r.name = r.input.clone();
        }
    }
    let session = Session::new(runs).map_err(|e| anyhow::anyhow!("{}: {e}", args.input))?;
    if args.schema {
        for (table, columns) in session.schema()? {
            println!("{table}");
            for (name, ty) in columns {
                println!("  {name:<18} {ty}");
            }
        }
        return Ok(());
    }
    let sql = args.sql.as_deref().unwrap_or_default();
    if args.explain {
        print!("{}", session.explain(sql)?);
        return Ok(());
    }
    let answer = session.sql(sql)?;
    if let Some(out) = &args.parquet {
        write_parquet(out, &answer)?;
        eprintln!("{}: {} rows", out.display(), answer.rows());
    } else if args.json {
        let mut w = exaviz_query::json_writer(Vec::new());
        for b in &answer.batches {
            w.write(b)?;
        }
        w.finish()?;
        let bytes = w.into_inner();
        // An answer of no rows is an empty array, not nothing.
        println!("{}", if bytes.is_empty() { "[]".into() } else { String::from_utf8_lossy(&bytes).into_owned() });
    } else if args.csv {
        let stdout = std::io::stdout();
        let mut w = exaviz_query::csv_writer(stdout.lock());
        for b in &answer.batches {
            w.write(b)?;
        }
    } else {
        print!("{}", exaviz_query::pretty(&answer, args.max_rows)?);
    }
    Ok(())
}

/// The inputs a pattern names (sorted), or the input itself where it has no wildcard.
#[cfg(feature = "query")]
fn expand(input: &str) -> Result<Vec<String>> {
    let generator_or_address = input.starts_with("gen:") || input.contains("://");
    if generator_or_address || !input.contains(['*', '?', '[']) || std::path::Path::new(input).exists() {
        return Ok(vec![input.to_string()]);
    }
    let trimmed = input.trim_end_matches('/');
    let folders_only = trimmed.len() < input.len();
    let mut out = Vec::new();
    for p in glob::glob(trimmed).map_err(|e| anyhow::anyhow!("{input}: not a pattern ({e})"))? {
        let p = p.map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
        if !folders_only || p.is_dir() {
            out.push(p.display().to_string());
        }
    }
    if out.is_empty() {
        anyhow::bail!("{input}: the pattern matches nothing");
    }
    Ok(out)
}

/// A run's name: its file or folder name (a generator's whole text).
#[cfg(feature = "query")]
fn run_name(input: &str) -> String {
    if input.contains(':') && !std::path::Path::new(input).exists() {
        return input.to_string();
    }
    let p = std::path::Path::new(input.trim_end_matches('/'));
    p.file_name().map_or_else(|| input.to_string(), |n| n.to_string_lossy().into_owned())
}

/// `answer` as a Parquet file at `out`, written under a temporary name and renamed.
#[cfg(feature = "query")]
fn write_parquet(out: &std::path::Path, answer: &exaviz_query::Answer) -> Result<()> {
    let name = out.file_name().map_or_else(|| "answer".into(), |n| n.to_string_lossy().into_owned());
    let tmp = out.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> Result<()> {
        let file = std::fs::File::create(&tmp)?;
        exaviz_query::write_parquet(file, answer)?;
        std::fs::rename(&tmp, out)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))
}
