use std::path::PathBuf;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type, UInt64Type};

use super::*;

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("exaviz-query-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn trace_run(name: &str, input: &str) -> (Run, Arc<Dataset>) {
    let d = Arc::new(exaviz_datasets::open(input).unwrap());
    (Run { name: name.into(), input: input.into(), source: Source::Trace(d.clone()) }, d)
}

/// Every batch of `stream`, read on a thread of no runtime (as a server's worker reads it).
fn futures_lite(stream: Batches) -> Vec<RecordBatch> {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(datafusion::physical_plan::common::collect(stream)).unwrap()
}

fn count(s: &Session, sql: &str) -> i64 {
    let a = s.sql(sql).unwrap();
    a.batches.iter().find(|b| b.num_rows() > 0).unwrap().column(0).as_primitive::<Int64Type>().value(0)
}

/// A small trace with every table filled: two ranks, two regions, a message, a collective, an
/// instant and a counter with a unit.
fn small() -> Dataset {
    let mut d = Dataset::default();
    let t = &mut d.trace;
    t.ticks_per_second = 1_000;
    t.locations.name = vec!["rank 0 / main".into(), "rank 1 / main".into()];
    t.locations.node = vec![u32::MAX, 3];
    t.region_names = vec!["compute".into(), "MPI_Recv".into(), "mark".into()];
    t.intervals.push(0, 0, 500, 0, 0);
    t.intervals.push(1, 0, 200, 0, 0);
    t.intervals.push(1, 200, 700, 1, 0);
    t.intervals.push(0, 600, 600, 2, 0);
    t.instant_categories = vec!["user".into()];
    t.instants.push(0, 600, 2, exaviz_model::InstantScope::Thread, 0, 2);
    t.instants.push(exaviz_model::NO_ROW, 650, 2, exaviz_model::InstantScope::Global, 0, 0);
    t.messages.push((0, 1), (500, 690), 4096, 7);
    t.collective_names = vec!["MPI_Barrier".into()];
    t.collectives.location = vec![0, 1];
    t.collectives.start = vec![700, 700];
    t.collectives.end = vec![800, 900];
    t.collectives.op = vec![0, 0];
    t.collectives.root = vec![u32::MAX, u32::MAX];
    t.collectives.bytes = vec![0, 0];
    t.metric_names = vec!["power".into()];
    t.metric_units = vec!["W".into()];
    t.metric_accumulated = vec![false];
    t.metrics.location = vec![0, 0];
    t.metrics.time = vec![0, 1000];
    t.metrics.metric = vec![0, 0];
    t.metrics.value = vec![100.0, 150.5];
    d
}

#[test]
fn a_trace_in_memory_answers_with_names_and_seconds() {
    let d = Arc::new(small());
    let s = Session::new(vec![Run { name: "a".into(), input: "small".into(), source: Source::Trace(d) }]).unwrap();
    assert_eq!(count(&s, "SELECT count(*) FROM intervals"), 4);
    assert_eq!(count(&s, "SELECT count(*) FROM messages WHERE bytes = 4096 AND tag = 7"), 1);
    assert_eq!(count(&s, "SELECT count(*) FROM instants WHERE name = 'mark'"), 2);
    // A thread's instant on its row with its arguments; a global one on none.
    let q = "SELECT count(*) FROM instants WHERE scope = 'thread' AND location = 0 AND args = 2 AND category = 'user'";
    assert_eq!(count(&s, q), 1);
    assert_eq!(count(&s, "SELECT count(*) FROM instants WHERE scope = 'global' AND location IS NULL"), 1);
    assert_eq!(count(&s, "SELECT count(*) FROM collectives WHERE operation = 'MPI_Barrier'"), 2);
    // The rank that waits, by name, with its time in seconds.
    let a = s
        .sql(
            "SELECT l.process, sum(i.duration_s) AS s FROM intervals i JOIN locations l USING (run, location) \
             WHERE i.name = 'MPI_Recv' GROUP BY l.process",
        )
        .unwrap();
    let b = &a.batches.iter().find(|b| b.num_rows() > 0).unwrap();
    assert_eq!(b.column(0).as_string::<i32>().value(0), "rank 1");
    assert!((b.column(1).as_primitive::<Float64Type>().value(0) - 0.5).abs() < 1e-12);
    // Counters carry their name and unit; locations their thread and node (null where unknown).
    let a = s.sql("SELECT name, unit, max(value) FROM counters GROUP BY name, unit").unwrap();
    let b = &a.batches[0];
    assert_eq!((b.column(0).as_string::<i32>().value(0), b.column(1).as_string::<i32>().value(0)), ("power", "W"));
    assert_eq!(b.column(2).as_primitive::<Float64Type>().value(0), 150.5);
    let a = s.sql("SELECT thread, node FROM locations ORDER BY location").unwrap();
    let b = &a.batches[0];
    assert_eq!(b.column(0).as_string::<i32>().value(1), "main");
    assert!(b.column(1).is_null(0));
    assert_eq!(b.column(1).as_primitive::<datafusion::arrow::datatypes::UInt32Type>().value(1), 3);
}

#[test]
fn a_store_read_in_place_answers_as_the_trace_it_holds() {
    let spec = "gen:fd4?iterations=6&collectives=2";
    let (run, d) = trace_run("mem", spec);
    let dir = temp("store");
    exaviz_store::write(&d, &dir).unwrap();
    // A run named with a dot, as files are: its schema is "disk.exaviz".
    let stored =
        Run { name: "disk.exaviz".into(), input: dir.display().to_string(), source: Source::Store(dir.clone()) };
    let s = Session::new(vec![run, stored]).unwrap();
    for (table, rows) in [
        ("intervals", d.trace.intervals.start.len()),
        ("messages", d.trace.messages.source.len()),
        ("collectives", d.trace.collectives.start.len()),
        ("counters", d.trace.metrics.time.len()),
        ("locations", d.trace.locations.name.len()),
    ] {
        for run in ["mem", "disk.exaviz"] {
            let n = count(&s, &format!("SELECT count(*) FROM {table} WHERE run = '{run}'"));
            assert_eq!(n as usize, rows, "{table} of {run}");
        }
    }
    // The same sums per region over both, by name.
    let sql = "SELECT name, sum(duration) AS t FROM intervals WHERE run = '{R}' GROUP BY name ORDER BY name";
    let of = |run: &str| {
        let a = s.sql(&sql.replace("{R}", run)).unwrap();
        let mut rows = Vec::new();
        for b in &a.batches {
            for r in 0..b.num_rows() {
                rows.push((
                    b.column(0).as_string::<i32>().value(r).to_string(),
                    b.column(1).as_primitive::<UInt64Type>().value(r),
                ));
            }
        }
        rows
    };
    let mem = of("mem");
    assert!(mem.len() > 1);
    assert_eq!(mem, of("disk.exaviz"));
    assert_eq!(count(&s, "SELECT count(*) FROM runs"), 2);
    // Each run is a schema of its own holding its rows alone, the run's branch of each view.
    for table in TABLES {
        let (all, disk) = (format!("{SCHEMA}.{table} WHERE run = 'disk.exaviz'"), format!("\"disk.exaviz\".{table}"));
        assert_eq!(
            count(&s, &format!("SELECT count(*) FROM {all}")),
            count(&s, &format!("SELECT count(*) FROM {disk}"))
        );
        assert_eq!(s.table_schema("disk.exaviz", table).unwrap(), s.table_schema(SCHEMA, table).unwrap(), "{table}");
    }
    assert_eq!(s.runs(), ["mem", "disk.exaviz"]);
    assert!(!s.explain("SELECT count(*) FROM \"disk.exaviz\".intervals").unwrap().contains("UnionExec"));
    // An answer as a stream: its batches computed as they are read, the same rows.
    let sql = "SELECT send_time, bytes FROM mem.messages";
    let stream = s.stream(sql).unwrap();
    assert_eq!(stream.schema(), s.answer_schema(sql).unwrap());
    let rows: usize = futures_lite(stream).iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, d.trace.messages.source.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_table_or_column_is_one_line_naming_what_exists() {
    let (run, _) = trace_run("a", "gen:fd4?iterations=1");
    let s = Session::new(vec![run]).unwrap();
    let e = s.sql("SELECT * FROM slices").err().unwrap().to_string();
    assert_eq!(e, format!("no table 'slices': the tables are {}, and {}", TABLES.join(", "), ANALYSES.join(", ")));
    let e = s.sql("SELECT duration_ms FROM intervals").err().unwrap().to_string();
    assert!(!e.contains('\n') && e.contains("duration_ms") && e.contains("duration_s"), "{e}");
    // Read-only: no table made, no file written.
    for q in
        ["CREATE TABLE x AS SELECT 1", "COPY (SELECT 1) TO '/tmp/x.csv'", "SET datafusion.execution.batch_size = 1"]
    {
        assert!(s.sql(q).is_err(), "{q}");
    }
}

#[test]
fn the_schema_lists_every_table_with_its_columns() {
    let (run, _) = trace_run("a", "gen:fd4?iterations=1");
    let s = Session::new(vec![run]).unwrap();
    let schema = s.schema().unwrap();
    let names: Vec<&str> = schema.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, [&TABLES[..], &ANALYSES[..]].concat());
    let intervals = &schema[2].1;
    for c in ["run", "location", "name", "start", "end", "duration", "depth", "start_s", "duration_s"] {
        assert!(intervals.iter().any(|(n, _)| n == c), "intervals.{c}");
    }
    assert!(s.explain("SELECT count(*) FROM messages").unwrap().contains("physical_plan"));
}

/// The analyses of `exaviz critical-path` as tables, on the recorded gloo pipeline (rank 3
/// computes 1.6x as much): the stragglers table names rank 3 alone, and each table holds the
/// report's rows.
#[test]
fn the_analyses_are_tables_a_query_names() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/torch-gloo-pipeline");
    let (run, d) = trace_run("pipeline", path);
    let s = Session::new(vec![run]).unwrap();
    let rows = |sql: &str| s.sql(sql).unwrap().text_rows().unwrap();
    assert_eq!(rows("SELECT run, process FROM stragglers"), [["pipeline", "rank 3 python"]]);
    assert_eq!(rows("SELECT run, process FROM pipeline.stragglers"), [["pipeline", "rank 3 python"]]);
    let r = exaviz_analysis::critical_path::analyse_asked_with(&d, None, None, &|_, _| {}).unwrap();
    let n = |sql: &str| count(&s, sql) as usize;
    assert_eq!(n("SELECT count(*) FROM critical_path"), r.segments.len());
    assert_eq!(n("SELECT count(*) FROM root_causes"), r.root_causes.len());
    assert_eq!(n("SELECT count(*) FROM straggler_steps"), r.stragglers.rows.len());
    let shares = r.shares.by_kind.len() + r.shares.by_location.len() + r.shares.by_region.len();
    assert_eq!(n("SELECT count(*) FROM critical_path_shares"), shares);
    // The costliest cause by rank, as a query asks it, is the report's.
    let top = rows(
        "SELECT substr(location, 1, 6) AS rank, sum(direct_s + propagated_s) AS s FROM root_causes \
         WHERE location LIKE 'rank 3%' OR location LIKE 'rank 2%' GROUP BY 1 ORDER BY s DESC LIMIT 1",
    );
    assert_eq!(top[0][0], "rank 3");
    // The wait states, by location id: as many as the report counts, as long in all.
    assert_eq!(n("SELECT count(*) FROM wait_states") as u64, r.wait_states);
    let waited = rows("SELECT sum(waited_s) FROM wait_states")[0][0].parse::<f64>().unwrap();
    assert!((waited - r.waiting_s).abs() < 1e-9 * r.waiting_s.max(1.0), "{waited} against {}", r.waiting_s);
    let named = n("SELECT count(*) FROM wait_states w JOIN locations l ON w.cause = l.location AND w.run = l.run");
    assert_eq!(named as u64, r.wait_states);
    // One run: no diff.
    assert_eq!(n("SELECT count(*) FROM diff_rows"), 0);
    // Joined with the trace's own tables: the segments on a location that exists.
    let on = n("SELECT count(*) FROM critical_path c JOIN locations l ON c.location = l.name WHERE c.what = 'on'");
    assert_eq!(on, r.segments.iter().filter(|x| x.what == "on").count());
}

/// A diff's rows as a table: every run after the first against the first, as `exaviz diff`
/// gives them (the recorded gloo pair: balanced, then rank 3 at 3x).
#[test]
fn a_diffs_rows_are_a_table() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/torch-gloo-pair");
    let (even, a) = trace_run("even", &format!("{root}/even"));
    let (slow, b) = trace_run("slow3", &format!("{root}/slow3"));
    let s = Session::new(vec![even, slow]).unwrap();
    let d =
        exaviz_analysis::diff::diff_asked(&a, &b, None, None, &exaviz_analysis::diff::Options { top: 0, steps: None })
            .unwrap();
    let tables = [&d.locations, &d.waiting, &d.regions, &d.paths, &d.collectives, &d.pairs];
    let want = 1 + tables.iter().map(|t| t.len()).sum::<usize>();
    assert_eq!(count(&s, "SELECT count(*) FROM diff_rows WHERE run = 'slow3' AND against = 'even'") as usize, want);
    let rows = s.sql("SELECT change_s FROM slow3.diff_rows WHERE \"table\" = 'run'").unwrap().text_rows().unwrap();
    assert_eq!(rows[0][0].parse::<f64>().unwrap(), d.run.change_s);
    let top = s
        .sql("SELECT name FROM diff_rows WHERE \"table\" = 'location' ORDER BY change_s DESC LIMIT 1")
        .unwrap()
        .text_rows()
        .unwrap();
    assert!(top[0][0].starts_with("rank 3"), "{top:?}");
}
