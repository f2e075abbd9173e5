//! The CLI end to end: renders on both backends, info, and bad input: a one-line message naming
//! the input and the problem, a non-zero exit, no panic, and no output file left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn exaviz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_exaviz")).args(args).env_remove("XDG_RUNTIME_DIR").output().expect("exaviz runs")
}

/// Whether `data` (under ../shared/data) is there; when it is not, says so, or fails where
/// `EXAVIZ_REQUIRE_DATA=1` (set by `.ci/run`) makes the shared data mandatory.
fn present(data: &Path) -> bool {
    if data.exists() {
        return true;
    }
    let required = std::env::var("EXAVIZ_REQUIRE_DATA").as_deref() == Ok("1");
    assert!(!required, "../shared/data is required (EXAVIZ_REQUIRE_DATA=1)");
    eprintln!("skipped: {} is absent", data.display());
    false
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("exaviz-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Asserts a clean failure: non-zero exit, one line on stderr containing every `needle`.
fn assert_fails(args: &[&str], needles: &[&str]) {
    let out = exaviz(args);
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(lines.len(), 1, "{args:?}: expected one line, got {err:?}");
    for n in needles {
        assert!(lines[0].contains(n), "{args:?}: {:?} lacks {n:?}", lines[0]);
    }
}

#[test]
fn bad_inputs_give_one_line_and_a_non_zero_exit() {
    let out = tmp("never.png");
    let o = out.to_str().unwrap();
    assert_fails(&["render", "/no/such/trace.yaml", "--out", o], &["/no/such/trace.yaml", "No such file"]);
    let missing = String::from_utf8_lossy(&exaviz(&["info", "/no/such/trace.yaml"]).stderr).into_owned();
    assert_eq!(missing.matches("No such file").count(), 1, "the cause once: {missing}");
    assert_fails(&["render", "gen:torus-sim?dims=4x4&speed=9", "--out", o], &["unknown option 'speed'"]);
    assert_fails(&["render", "gen:torus-sim", "--size", "0x100", "--out", o], &["size '0x100' is out of range"]);
    assert_fails(&["render", "gen:torus-sim", "--size", "30000x30000", "--out", o], &["out of range"]);
    assert_fails(&["render", "gen:torus-sim", "--size", "big", "--out", o], &["WIDTHxHEIGHT"]);
    assert_fails(&["render", "gen:torus-sim", "--size", "10x", "--out", o], &["size '10x' is not WIDTHxHEIGHT"]);
    assert_fails(&["render", "gen:wrf", "--view", "timelin", "--out", o], &["did you mean 'timeline'?"]);
    assert_fails(&["render", "gen:wrf", "--view", "timeline", "--mixx", "alpha"], &["did you mean '--mix'?"]);
    assert_fails(&["render", "--frobnicate"], &["--frobnicate"]);
    assert_fails(&["info", "gen:torus-sim?dims=99999x99999x99999"], &["limit"]);
    let meta = tmp("broken_meta.yaml");
    std::fs::write(&meta, "---\nkey: X\nhardware: {\n network: torus,\n coords: [x, y\n").unwrap();
    assert_fails(&["render", meta.to_str().unwrap(), "--out", o], &["broken_meta.yaml", "unclosed"]);
    let text = tmp("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    assert_fails(&["info", text.to_str().unwrap()], &["notes.txt", "unrecognised format"]);
    assert!(!out.exists(), "no output is written on failure");
}

/// A generator converted into a store, its pyramid summed again, the store rendered and
/// described; a folder that is not a store is refused in one line.
#[test]
fn convert_pyramid_and_render_a_store() {
    let store = tmp("small.exaviz");
    let s = store.to_str().unwrap();
    let out = exaviz(&["convert", "gen:fd4?ranks=128&messages=50000", s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("50000 messages"));
    let out = exaviz(&["pyramid", s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("pyramid summed from"));
    let png = tmp("store-timeline.png");
    let out = exaviz(&["render", s, "--view", "timeline", "--backend", "cpu", "--out", png.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(png_size(&png), (1024, 768));
    let info = String::from_utf8_lossy(&exaviz(&["info", s]).stdout).to_string();
    assert!(info.contains("messages:     50000"), "{info}");
    let not_a_store = tmp("plain-folder");
    std::fs::create_dir_all(&not_a_store).unwrap();
    assert_fails(&["pyramid", not_a_store.to_str().unwrap()], &["plain-folder", "exaviz-store.json"]);
    std::fs::remove_dir_all(&store).unwrap();
}

/// `exaviz pyramid --engine datafusion` adds the pyramid the native pass adds (DataFusion's
/// plans, in an exaviz built with `--features datafusion`, as `.ci/run` builds it); `--cluster`
/// without it, or a cluster that is neither `df://` nor `standalone`, is refused in one line.
#[test]
fn the_pyramid_by_datafusion_is_the_native_one() {
    let store = tmp("datafusion.exaviz");
    let s = store.to_str().unwrap();
    let out = exaviz(&["convert", "gen:fd4?ranks=300&messages=60000", s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_fails(&["pyramid", s, "--cluster", "standalone"], &["datafusion.exaviz", "--engine datafusion"]);
    let out = exaviz(&["pyramid", s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let native = exaviz_store::pyramid(&store).unwrap().unwrap();
    let out = exaviz(&["pyramid", s, "--engine", "datafusion"]);
    if cfg!(feature = "datafusion") {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("pyramid summed by DataFusion (embedded) from 60000 messages"), "{said}");
        let planned = exaviz_store::pyramid(&store).unwrap().unwrap();
        assert_eq!(planned.levels, native.levels);
        assert!(native.pairs.as_ref().is_some_and(|p| !p.is_empty()), "the native pass keeps per-pair tiles");
        assert_eq!(planned.pairs, native.pairs);
        let (a, b) = (planned.lines.unwrap(), native.lines.unwrap());
        assert_eq!(a.counts, b.counts);
        assert!(a.gradient.iter().zip(&b.gradient).all(|(x, y)| x.abs_diff(*y) <= 1));
        assert_fails(&["pyramid", s, "--engine", "datafusion", "--cluster", "spark://x"], &["spark://x", "neither"]);
        // The plans as SQL for DuckDB: integer divisions written `//`.
        let out = exaviz(&["pyramid", s, "--engine", "datafusion", "--sql", "duckdb"]);
        let plans: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        for plan in ["span", "messages", "lines", "states", "pairs"] {
            assert!(plans[plan].as_str().is_some_and(|q| q.contains("SELECT")), "{plan}: {plans}");
        }
        assert!(plans["states"].as_str().unwrap().contains(" // "));
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && said.contains("--features datafusion"), "{said}");
    }
    std::fs::remove_dir_all(&store).unwrap();
}

/// `exaviz info` of XLA HLO modules recorded from JAX (tests/data, with their scripts): the
/// data-parallel step's dots cut `[8,1]`, the pipeline's stages from its collective-permutes.
#[test]
fn info_reads_xla_hlo_modules() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let dp = data.join(
        "jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt",
    );
    let out = exaviz(&["info", dp.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["module"], "jit_train_step");
    assert_eq!(v["partitions"], 8);
    assert!(v["strategies"]["[8,1]"].as_u64().unwrap() >= 5, "{v}");
    assert!(v["classes"]["partitioned output"].as_u64().unwrap() >= 5, "{v}");
    assert!(v["stacks"].as_array().unwrap().iter().any(|s| s["pieces"] == 3), "the optimizer's updates: {v}");
    assert!(v["stacked_operators"].as_u64().unwrap() > 0, "{v}");
    let pipeline = data.join("jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt");
    let out = exaviz(&["info", pipeline.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("stages:         0 -> 1 -> 2 -> 3") && text.contains("collective-permute x4"), "{text}");
    let cut = tmp("cut.hlo.txt");
    let full = std::fs::read_to_string(&pipeline).unwrap();
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    assert_fails(&["info", cut.to_str().unwrap()], &["cut.hlo.txt", "truncated"]);
    // `exaviz metrics --view strategy` gives the same numbers.
    let out = exaviz(&["metrics", dp.to_str().unwrap(), "--view", "strategy", "--json"]);
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(m["strategies"], v["strategies"]);
    // An 8-stage pipeline: its stages, and the 8 chunks the view places in them, in order.
    let p8 = data.join("jax-pipeline8/xla_dump/module_0010.jit_pipeline.cpu_after_optimizations.txt");
    let out = exaviz(&["metrics", p8.to_str().unwrap(), "--view", "strategy", "--json"]);
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let stages: Vec<u64> = m["chunks"].as_array().unwrap().iter().map(|c| c["stage"].as_u64().unwrap()).collect();
    assert_eq!(stages, (0..8).collect::<Vec<u64>>(), "{m}");
    assert_eq!(m["stages"].as_array().unwrap().len(), 8, "{m}");
    // Their folder names the module to pass, the one after sharding propagation first.
    let folder = data.join("jax-data-parallel/xla_dump");
    assert_fails(&["info", folder.to_str().unwrap()], &["3 XLA HLO module(s)", "after_shardy-xla"]);
}

/// Without `--view`, an input the default (ring) view cannot draw gets the view that can, with
/// one line saying so: a trace its timeline, an HLO module its strategies; a torus stays a ring.
#[test]
fn without_a_view_the_input_gets_one_that_draws_it() {
    let png = tmp("no-view.png");
    let out = exaviz(&["render", "gen:fd4?ranks=8&messages=100", "--backend", "cpu", "--out", png.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.contains("drawing the timeline view") && said.contains("timeline view, cpu"),
        "{said}"
    );
    let out =
        exaviz(&["render", "gen:torus-sim?dims=4x4x4&steps=3", "--backend", "cpu", "--out", png.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !said.contains("no --view given") && said.contains("ring view"), "{said}");
    // A view named, or a view's option given, is kept: its own refusal is the answer.
    assert_fails(
        &["render", "gen:fd4?ranks=8&messages=100", "--view", "ring", "--out", png.to_str().unwrap()],
        &["ring view needs a topology"],
    );
}

#[test]
fn help_is_available_on_every_command() {
    for cmd in [
        &["--help"][..],
        &["render", "--help"],
        &["info", "--help"],
        &["view", "--help"],
        &["bundle", "--help"],
        &["aggregate", "--help"],
        &["bench", "--help"],
        &["convert", "--help"],
        &["pyramid", "--help"],
        &["bench-interact", "--help"],
    ] {
        let out = exaviz(cmd);
        assert!(out.status.success(), "{cmd:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage"), "{cmd:?}");
        // Each command's help opens with its own description, not a view's options' doc.
        assert!(!text.contains("`exaviz render --view ring` options"), "{cmd:?}: {text}");
        if ["render", "info", "view", "convert", "bench-interact"].contains(&cmd[0]) {
            assert!(
                text.contains("OTF2 archive") && text.contains("Paraver trace") && text.contains("gen:NAME"),
                "{cmd:?}: INPUT is described"
            );
        }
    }
    // The generators come from their registry, each with its options.
    let top = String::from_utf8_lossy(&exaviz(&["--help"]).stdout).into_owned();
    for g in exaviz_gen::GENERATORS {
        assert!(top.contains(&format!("gen:{}", g.name)), "gen:{} is not in --help", g.name);
    }
    assert!(top.contains("(options: dims, steps, seed)"), "{top}");
}

#[test]
fn info_reports_counts_as_json() {
    let out = exaviz(&["info", "gen:torus-sim?dims=4x4x4&steps=10&seed=2", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["nodes"], 64);
    assert_eq!(v["links"], 384);
    assert!(v["messages"].as_u64().unwrap() > 64 * 5);
    assert_eq!(v["time_span_ticks"][1], 10);
    assert!(v["training"].is_null() && v["graph"].is_null());
    // A training run's devices and stages, as the text form prints them.
    let out = exaviz(&["info", "gen:training?devices=4&stages=2", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((v["training"]["devices"].as_u64(), v["training"]["stages"].as_u64()), (Some(4), Some(2)), "{v}");
    let text = String::from_utf8_lossy(&exaviz(&["info", "gen:training?devices=4&stages=2"]).stdout).into_owned();
    assert!(text.contains("training:     4 devices in 2 stages"), "{text}");
}

/// `exaviz query`: SQL over a generated trace, over its store read in place and over a pattern
/// of runs, each answer counting what `exaviz info` counts; the outputs (table, JSON, CSV,
/// Parquet), the schema, and one line for an unknown table or a query that would write.
#[test]
fn query_answers_sql_over_a_trace_its_store_and_many_runs() {
    let input = "gen:fd4?iterations=3&collectives=2";
    let info: serde_json::Value = serde_json::from_slice(&exaviz(&["info", input, "--json"]).stdout).unwrap();
    let dir = tmp("query-runs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for run in ["a", "b"] {
        let out = exaviz(&["convert", input, dir.join(format!("{run}.exaviz")).to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let store = dir.join("a.exaviz");
    let store = store.to_str().unwrap();
    let counts = "SELECT (SELECT count(*) FROM intervals) AS intervals, (SELECT count(*) FROM messages) AS messages, \
                  (SELECT count(*) FROM collectives) AS collectives, (SELECT count(*) FROM locations) AS locations";
    for on in [input, store] {
        let out = exaviz(&["query", on, counts, "--json"]);
        assert!(out.status.success(), "{on}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in ["intervals", "messages", "collectives", "locations"] {
            assert_eq!(v[0][key], info[key], "{on}: {key}");
        }
    }
    // Every match of a pattern is a run, named by its folder.
    let pattern = format!("{}/*.exaviz", dir.display());
    let out =
        exaviz(&["query", &pattern, "SELECT run, count(*) AS n FROM messages GROUP BY run ORDER BY run", "--csv"]);
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    let m = &info["messages"];
    assert_eq!(csv, format!("run,n\na.exaviz,{m}\nb.exaviz,{m}\n"), "{}", String::from_utf8_lossy(&out.stderr));
    // A table on the terminal, cut at --max-rows with the rest counted.
    let out = exaviz(&["query", store, "SELECT name, count(*) AS calls FROM intervals GROUP BY name ORDER BY name"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("| name") && text.contains("calls"), "{text}");
    let out = exaviz(&["query", store, "SELECT * FROM messages", "--max-rows", "2"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains(&format!("({m} rows, the first 2 shown")), "{text}");
    // Parquet, written whole under its name.
    let parquet = dir.join("answer.parquet");
    let out = exaviz(&[
        "query",
        store,
        "SELECT sender, sum(bytes) AS b FROM messages GROUP BY sender",
        "--parquet",
        parquet.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(&std::fs::read(&parquet).unwrap()[..4], b"PAR1");
    let schema = String::from_utf8_lossy(&exaviz(&["query", store, "--schema"]).stdout).into_owned();
    for line in ["intervals", "  duration_s", "counters", "  unit"] {
        assert!(schema.lines().any(|l| l.starts_with(line)), "{line}: {schema}");
    }
    let explained =
        String::from_utf8_lossy(&exaviz(&["query", store, "SELECT count(*) FROM intervals", "--explain"]).stdout)
            .into_owned();
    assert!(explained.contains("physical_plan"), "{explained}");
    // The critical path's analyses, computed when a query names them, from the store as from the trace.
    let path = "SELECT count(*) AS n FROM critical_path WHERE what = 'on'";
    let n = |on: &str| -> serde_json::Value {
        let out = exaviz(&["query", on, path, "--json"]);
        assert!(out.status.success(), "{on}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()[0]["n"].clone()
    };
    assert!(n(store).as_u64().unwrap() > 0);
    assert_eq!(n(store), n(input));
    assert_fails(
        &["query", store, "SELECT * FROM slices"],
        &["no table 'slices'", "intervals, instants, messages", "root_causes"],
    );
    assert_fails(&["query", store, "CREATE TABLE t AS SELECT 1"], &["read-only", "not supported"]);
    assert_fails(&["query", &format!("{}/*.nothing", dir.display()), "SELECT 1"], &["matches nothing"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn renders_the_default_on_both_backends() {
    for backend in ["cpu", "gpu"] {
        let out = tmp(&format!("ring-{backend}.png"));
        let r = exaviz(&["render", "--size", "320x240", "--backend", backend, "--out", out.to_str().unwrap()]);
        assert!(r.status.success(), "{backend}: {}", String::from_utf8_lossy(&r.stderr));
        assert_eq!(png_size(&out), (320, 240));
    }
}

#[test]
fn renders_real_boxfish_data_when_present() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/boxfish/bgpc_meta.yaml");
    if !present(&data) {
        return;
    }
    let out = tmp("bgp.png");
    let r = exaviz(&[
        "render",
        data.to_str().unwrap(),
        "--size",
        "400x300",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let info = exaviz(&["info", data.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).expect("json");
    assert_eq!((v["nodes"].as_u64(), v["links"].as_u64()), (Some(512), Some(3072)));
}

#[test]
fn without_an_adapter_auto_falls_back_to_the_cpu_and_gpu_fails() {
    // WGPU_BACKEND=dx12 leaves no usable backend on Linux: no adapter exists for this process.
    let out = tmp("fallback.png");
    let run = |backend: &str| {
        Command::new(env!("CARGO_BIN_EXE_exaviz"))
            .args([
                "render",
                "gen:torus?dims=4x4",
                "--size",
                "64x64",
                "--backend",
                backend,
                "--out",
                out.to_str().unwrap(),
            ])
            .env("WGPU_BACKEND", "dx12")
            .output()
            .unwrap()
    };
    let auto = run("auto");
    let err = String::from_utf8_lossy(&auto.stderr);
    assert!(auto.status.success(), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("warning:")).count(), 1, "{err}");
    assert!(err.contains("no GPU adapter found") && err.contains("using the CPU path"), "{err}");
    assert!(out.exists());
    std::fs::remove_file(&out).unwrap();
    let gpu = run("gpu");
    let err = String::from_utf8_lossy(&gpu.stderr);
    assert!(!gpu.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: no GPU adapter found"), "{err}");
    assert!(!out.exists());
}

#[test]
fn png_is_replaced_atomically() {
    // A folder of its own: other tests write temporary files beside theirs in parallel.
    let dir = tmp("atomic");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("atomic.png");
    std::fs::write(&out, b"old").unwrap();
    let r = exaviz(&[
        "render",
        "gen:torus?dims=4x4",
        "--size",
        "64x48",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success());
    assert_eq!(png_size(&out), (64, 48));
    let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn bundle_and_aggregate_csv_round_trip_and_errors() {
    let edges = tmp("edges.csv");
    let mut text = String::from("x0,y0,x1,y1,weight\n");
    for i in 0..200 {
        let a = i as f32 * 0.0314;
        text += &format!("{},{},{},{},{}\n", a.cos(), a.sin(), (a + 2.0).cos(), (a + 2.0).sin(), 1 + i % 3);
    }
    std::fs::write(&edges, text).unwrap();
    let curves = tmp("curves.csv");
    let png = tmp("bundles.png");
    for backend in ["cpu", "gpu"] {
        let r = exaviz(&[
            "bundle",
            edges.to_str().unwrap(),
            "--out",
            curves.to_str().unwrap(),
            "--png",
            png.to_str().unwrap(),
            "--samples",
            "8",
            "--backend",
            backend,
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let stdout = String::from_utf8_lossy(&r.stdout);
        assert!(stdout.starts_with("RESULT {"), "{stdout}");
        let out = std::fs::read_to_string(&curves).unwrap();
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("edge_id,x,y"));
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 200 * 8);
        assert!(rows[0].starts_with("0,") && rows[8].starts_with("1,") && rows[1599].starts_with("199,"));
        assert_eq!(png_size(&png), (900, 800));
    }
    let r = exaviz(&["aggregate", edges.to_str().unwrap(), "--size", "64x64", "--out", png.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(String::from_utf8_lossy(&r.stdout).contains("\"sum_of_counts\""));
    // Warm-up runs are not timed: three runs reported, not five.
    let (e, c) = (edges.to_str().unwrap(), curves.to_str().unwrap());
    for args in [
        vec!["bundle", e, "--out", c, "--backend", "cpu", "--runs", "3", "--warmup", "2"],
        vec!["aggregate", e, "--size", "64x64", "--backend", "cpu", "--runs", "3", "--warmup", "2"],
    ] {
        let r = exaviz(&args);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let stdout = String::from_utf8_lossy(&r.stdout);
        let runs = stdout.split("\"runs_s\":[").nth(1).and_then(|t| t.split(']').next()).unwrap_or_default();
        assert_eq!(runs.split(',').count(), 3, "{stdout}");
    }
    // Points: every one counted once, on both backends.
    let points = tmp("points.csv");
    let text: String = (0..500).map(|i| format!("{},{}\n", i % 37, (i * 7) % 23)).collect();
    std::fs::write(&points, format!("x,y\n{text}")).unwrap();
    for backend in ["cpu", "gpu"] {
        let r = exaviz(&["aggregate", points.to_str().unwrap(), "--points", "--size", "32x16", "--backend", backend]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        assert!(String::from_utf8_lossy(&r.stdout).contains("\"sum_of_counts\":500"), "{backend}");
    }
    // Kept on the device, four runs upload the 4,000 bytes of points once: the same counts,
    // under a quarter of the bytes the same runs upload otherwise.
    let uploaded = |kept: bool| -> f64 {
        let p = points.to_str().unwrap();
        let mut args =
            vec!["aggregate", p, "--points", "--size", "32x16", "--backend", "gpu", "--runs", "3", "--warmup", "1"];
        if kept {
            args.push("--kept");
        }
        let r = exaviz(&args);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let stdout = String::from_utf8_lossy(&r.stdout);
        assert!(stdout.contains("\"sum_of_counts\":500"), "{stdout}");
        let line = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")).expect("a RESULT line");
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["gpu_upload_mb"].as_f64().unwrap_or_else(|| panic!("{v}"))
    };
    let (plain, kept) = (uploaded(false), uploaded(true));
    assert!(plain >= 4.0 * 4000e-6, "four runs upload the points each time: {plain}");
    assert!(kept < plain / 3.0 && kept >= 4000e-6, "kept: {kept} MB against {plain} MB");
    let bad = tmp("bad.csv");
    std::fs::write(&bad, "x0,y0,x1,y1\n1,2,3,4\n1,2,three,4\n").unwrap();
    let o = curves.to_str().unwrap();
    assert_fails(&["bundle", bad.to_str().unwrap(), "--out", o], &["bad.csv", "line 3", "'three'"]);
    assert_fails(&["aggregate", bad.to_str().unwrap()], &["bad.csv", "line 3"]);
    assert_fails(&["bundle", edges.to_str().unwrap(), "--out", o, "--samples", "99"], &["samples must be 2 to 32"]);
}

#[test]
fn bench_compares_bundlers_on_generated_edges() {
    let out = exaviz(&["bench", "gen:circle?edges=2000&kind=structured", "--backend", "cpu", "--runs", "1", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let rows = rows.as_array().expect("an array");
    let names: Vec<&str> = rows.iter().map(|r| r["bundler"].as_str().unwrap()).collect();
    assert_eq!(names, ["kde", "hierarchical", "straight"]);
    for r in rows {
        assert_eq!(r["edges"], 2000);
        assert_eq!(r["endpoint_displacement_max"], 0.0, "{r}");
        assert!(r["median_s"].as_f64().unwrap() > 0.0);
        let ink = r["ink_ratio"].as_f64().unwrap();
        if r["bundler"] == "straight" {
            assert!((ink - 1.0).abs() < 0.02 && r["distortion_mean"].as_f64().unwrap() < 1.0001, "{r}");
        } else {
            // kde saves far more ink here than a quadtree hierarchy does on a circle.
            let most = if r["bundler"] == "kde" { 0.9 } else { 1.0 };
            assert!(ink < most, "bundling should save ink: {r}");
        }
    }
    // The table form names every column.
    let table =
        exaviz(&["bench", "gen:circle?edges=300&kind=random", "--backend", "cpu", "--runs", "1", "--bundler", "kde"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("ink ratio") && text.contains("kde"), "{text}");
    assert_fails(&["bench", "gen:circle?edges=0"], &["edges=0"]);
    assert_fails(&["bench", "gen:circle?kind=grid"], &["kind=grid"]);
    assert_fails(&["bench", "gen:circle", "--beta", "2"], &["--beta"]);
    assert_fails(&["bench", "gen:circle", "--bundler", "magic"], &["magic"]);
    assert_fails(&["bench", "gen:sphere"], &["unknown edge generator"]);
}

/// The bundling harness: curves from another tool (here `exaviz bundle`'s own output, read back
/// as a foreign file) measured beside the bundlers, the fastest KDE setting at a matched ink
/// ratio, and the contact sheet; bad curve files are one line.
#[test]
fn bench_measures_foreign_curves_matches_ink_and_draws_a_sheet() {
    let input = "gen:circle?edges=3000&kind=communities";
    let curves = tmp("straight-curves.csv");
    let c = curves.to_str().unwrap();
    let out = exaviz(&["bundle", input, "--bundler", "straight", "--out", c, "--backend", "cpu"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sheet = tmp("sheet.png");
    let out = exaviz(&[
        "bench",
        input,
        "--backend",
        "cpu",
        "--runs",
        "1",
        "--bundler",
        "kde,straight",
        "--curves",
        &format!("other={c}"),
        "--match-ink",
        "0.5",
        "--sheet",
        sheet.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["bundler"].as_str().unwrap()).collect();
    assert_eq!(names, ["kde", "straight", "kde@ink<=0.5", "other"]);
    let get = |name: &str, k: &str| rows.iter().find(|r| r["bundler"] == name).unwrap()[k].as_f64().unwrap();
    // The foreign file holds the straight edges: the same measures as exaviz's straight ones.
    for k in ["ink_ratio", "distortion_mean", "overdraw", "ink_top1_share"] {
        assert!((get("other", k) - get("straight", k)).abs() < 1e-3, "{k}: {rows:?}");
    }
    assert!(rows[3]["median_s"].is_null(), "no time for curves made elsewhere");
    assert!(get("kde@ink<=0.5", "ink_ratio") <= 0.5);
    assert_eq!(rows[2]["ink_target_reached"], true);
    let (w, _) = png_size(&sheet);
    assert!(w > 1000, "four panels side by side");
    // Bad curves.
    let o = tmp("never-sheet.png");
    let o = o.to_str().unwrap();
    assert_fails(&["bench", input, "--curves", "nameless", "--sheet", o], &["NAME=FILE"]);
    assert_fails(
        &["bench", "gen:circle?edges=10", "--curves", &format!("x={c}"), "--sheet", o],
        &["edge_id", "is not an edge"],
    );
    assert_fails(&["bench", input, "--curves", "x=/no/such.csv", "--sheet", o], &["/no/such.csv"]);
    assert_fails(&["bench", input, "--match-ink", "0", "--sheet", o], &["--match-ink"]);
    assert!(!Path::new(o).exists());
}

/// `exaviz bundle`'s and `exaviz bench`'s KDE defaults bundle at least as strongly as Datashader's
/// hammer_bundle at its defaults: ink ratios at most those measured for hammer_bundle on 10,000
/// edges of each kind (0.440 structured, 0.821 random, 0.509 communities; BENCHMARKS.md).
#[test]
fn default_bundling_is_as_strong_as_hammer_bundle() {
    for (kind, hammer) in [("structured", 0.440), ("random", 0.821), ("communities", 0.509)] {
        let input = format!("gen:circle?edges=10000&kind={kind}");
        let out = exaviz(&["bench", &input, "--backend", "cpu", "--runs", "1", "--bundler", "kde", "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ink = rows[0]["ink_ratio"].as_f64().unwrap();
        assert!(ink <= hammer, "{kind}: ink ratio {ink} above hammer_bundle's {hammer}");
    }
}

#[test]
fn metrics_reproduce_torusvisnd_locality() {
    let out = exaviz(&["metrics", "gen:torus?dims=4x4x4x4x4", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let l = |i: usize| v["orderings"][i]["locality"].as_f64().unwrap().round();
    assert_eq!((v["orderings"][0]["ordering"].as_str(), l(0)), (Some("sequential"), 1822.0));
    assert_eq!((v["orderings"][1]["ordering"].as_str(), l(1)), (Some("hilbert"), 1414.0));
    assert_fails(&["metrics", "gen:torus?dims=4x0"], &["gen:torus?dims=4x0"]);
}

#[test]
fn bench_layout_lists_every_ordering_of_every_torus() {
    let out = exaviz(&["bench-layout", "--dims", "4x4x4x4x4,6x5x4x3x2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = v.as_array().unwrap();
    // Two orderings and four embeddings (MDS at three scopes, RadViz) per torus.
    assert_eq!(rows.len(), 12);
    assert_eq!(
        (rows[0]["dims"].as_str(), rows[0]["locality"].as_f64().map(f64::round)),
        (Some("4x4x4x4x4"), Some(1822.0))
    );
    let names: Vec<&str> = rows[..6].iter().filter_map(|r| r["ordering"].as_str()).collect();
    assert_eq!(names, ["sequential", "hilbert", "mds-full", "mds-3hop", "mds-immediate", "radviz"]);
    assert!(rows[2..6].iter().all(|r| r["locality"].as_f64().is_some_and(|l| l > 0.0)), "{v}");
    assert_eq!(rows[7]["nodes"], 720);
    // Hilbert beats sequential on L for the non-cube shape too (its documented generalisation).
    assert!(rows[7]["locality"].as_f64() < rows[6]["locality"].as_f64(), "{v}");
    assert_fails(&["bench-layout", "--dims", "4x4,9x"], &["9x"]);
}

/// TorusTrafficND's ring options: blocks, block and hierarchical bundling, relation colours; and the
/// errors for options that do not fit.
/// Renders `input` with `extra` options on the CPU at 400x300 into `name` and checks that it
/// succeeded and wrote a picture of that size.
fn renders_400x300(input: &str, extra: &[&str], name: &str) {
    let out = tmp(name);
    let o = out.to_str().unwrap();
    let mut args = vec!["render", input, "--backend", "cpu", "--size", "400x300", "--out", o];
    args.extend_from_slice(extra);
    let r = exaviz(&args);
    assert!(r.status.success(), "{args:?}: {}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(png_size(&out), (400, 300));
}

#[test]
fn ring_blocks_bundle_and_colour_or_fail_clearly() {
    for extra in [
        &["--bundle", "blocks", "--color", "relation"][..],
        &["--bundle", "hierarchical", "--blocks", "16", "--beta", "0.6"][..],
        &["--no-address-rings", "--order", "sequential", "--blocks", "4"][..],
    ] {
        renders_400x300("gen:torus-sim?dims=4x4x4&steps=5", extra, &format!("ring_blocks_{}.png", extra.len()));
    }
    let o = tmp("never_ring.png");
    let o = o.to_str().unwrap();
    assert_fails(&["render", "gen:torus?dims=4x4x4", "--blocks", "6", "--out", o], &["gen:torus", "do not divide 64"]);
    assert_fails(&["render", "gen:torus?dims=3x3x3", "--color", "relation", "--out", o], &["gen:torus", "blocks"]);
    assert_fails(
        &["render", "gen:lulesh", "--view", "timeline", "--bundle", "blocks", "--out", o],
        &["--bundle blocks is not an option of the timeline view; the ring and linked views take it"],
    );
    assert_fails(
        &["render", "gen:lulesh", "--view", "matrix", "--blocks", "4", "--out", o],
        &["ring and linked views"],
    );
    assert_fails(&["render", "gen:lulesh", "--view", "chord", "--bundle", "kde", "--out", o], &["--bundle"]);
}

#[test]
fn mpi_views_render_and_reject_bad_windows() {
    for (view, extra) in [
        ("timeline", &[][..]),
        ("matrix", &["--value", "bandwidth"][..]),
        ("timeline", &["--bundle", "kde"][..]),
        ("chord", &["--beta", "0.5"][..]),
        ("chord", &["--mix", "alpha"][..]),
        ("timeline", &["--bundle", "hierarchical"][..]),
        ("timeline", &["--bundle", "grid", "--mix", "additive"][..]),
        ("sendrecv", &[][..]),
    ] {
        let out = tmp(&format!("mpi_{view}_{}.png", extra.len()));
        let o = out.to_str().unwrap();
        let mut args = vec![
            "render",
            "gen:lulesh?iterations=4",
            "--view",
            view,
            "--backend",
            "cpu",
            "--size",
            "640x400",
            "--out",
            o,
        ];
        args.extend_from_slice(extra);
        let r = exaviz(&args);
        assert!(r.status.success(), "{args:?}: {}", String::from_utf8_lossy(&r.stderr));
        assert_eq!(png_size(&out), (640, 400));
    }
    let o = tmp("never_mpi.png");
    let o = o.to_str().unwrap();
    assert_fails(
        &["render", "gen:lulesh", "--view", "timeline", "--from", "5", "--to", "2", "--out", o],
        &["gen:lulesh", "time window"],
    );
    assert_fails(&["render", "gen:lulesh", "--view", "timeline", "--from", "5", "--out", o], &["--to"]);
    assert_fails(&["render", "gen:torus", "--view", "timeline", "--out", o], &["gen:torus", "processes"]);
    assert_fails(&["render", "gen:torus", "--view", "sendrecv", "--out", o], &["gen:torus", "processes"]);
    assert_fails(&["render", "gen:torus", "--bundle", "grid", "--out", o], &["timeline"]);
    assert_fails(&["render", "gen:lulesh", "--view", "timeline", "--mix", "glow", "--out", o], &["glow"]);
    assert_fails(&["view", "gen:torus", "--view", "timeline"], &["gen:torus"]);
    assert_fails(&["info", "gen:fd4?iterations=10000000"], &["limit"]);
}

#[test]
fn otf2_traces_load_and_render_when_present() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/otf2-pingpong/ping-pong-otf2-papi/traces.otf2");
    if !present(&data) {
        return;
    }
    let d = data.to_str().unwrap();
    let info = exaviz(&["info", d, "--json"]);
    let json = String::from_utf8_lossy(&info.stdout);
    assert!(json.contains("\"messages\": 16") && json.contains("\"metric_samples\": 252"), "{json}");
    let out = tmp("pingpong_timeline.png");
    let r = exaviz(&["render", d, "--view", "timeline", "--backend", "cpu", "--out", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // The folder above the archives: the hint names an archive to pass.
    let above = data.parent().unwrap().parent().unwrap();
    let above = above.to_str().unwrap();
    assert_fails(
        &["info", above],
        &["holds no run of profiles, but 2 inputs exaviz opens", "ping-pong-otf2/traces.otf2"],
    );
    // A truncated copy: one line naming the event file, no panic.
    let dir = tmp("pingpong_copy");
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    let src = data.parent().unwrap();
    for f in ["traces.otf2", "traces.def", "traces/0.def", "traces/0.evt", "traces/1.def", "traces/1.evt"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let evt = dir.join("traces/1.evt");
    let bytes = std::fs::read(&evt).unwrap();
    std::fs::write(&evt, &bytes[..bytes.len() / 3]).unwrap();
    assert_fails(&["info", dir.join("traces.otf2").to_str().unwrap()], &["traces.otf2", "1.evt"]);
}

#[test]
fn mds_and_radviz_views_render_or_fail_clearly() {
    for extra in [
        &["--view", "mds"][..],
        &["--view", "mds", "--scope", "hops", "--hops", "2"][..],
        &["--view", "mds", "--scope", "immediate"][..],
        &["--view", "radviz"][..],
    ] {
        renders_400x300("gen:torus-sim?dims=4x4x2&steps=5", extra, &format!("embedding_{}.png", extra.join("_")));
    }
    let o = tmp("never_embedding.png");
    let o = o.to_str().unwrap();
    assert_fails(&["render", "gen:torus?dims=16x16x32", "--view", "mds", "--out", o], &["gen:torus", "4096 nodes"]);
    assert_fails(&["render", "gen:torus?dims=4x4", "--scope", "immediate", "--out", o], &["mds view"]);
    assert_fails(&["render", "gen:torus?dims=4x4", "--view", "radviz", "--bundle", "kde", "--out", o], &["--bundle"]);
    assert_fails(&["render", "gen:lulesh", "--view", "radviz", "--out", o], &["gen:lulesh", "topology"]);
}

#[test]
fn pf3d_renders_with_and_without_traffic_marks_or_fails_clearly() {
    for extra in [&[][..], &["--no-traffic-marks"][..]] {
        renders_400x300("gen:pf3d?dims=4x4x4x4x1", extra, &format!("pf3d{}.png", extra.join("_")));
    }
    let o = tmp("never_pf3d.png");
    let o = o.to_str().unwrap();
    assert_fails(
        &["render", "gen:pf3d?grid=2x2x2", "--out", o],
        &["gen:pf3d?grid=2x2x2", "8 cubes", "16384 processes"],
    );
    assert_fails(&["render", "gen:pf3d?threads=99", "--out", o], &["threads=99", "limit of 64"]);
    assert_fails(
        &["render", "gen:pf3d", "--view", "timeline", "--no-traffic-marks", "--out", o],
        &["ring and linked views"],
    );
}

#[test]
fn ring_time_slice_and_node_filter_render_or_fail_clearly() {
    let input = "gen:pf3d?dims=4x4x4x4x1";
    for extra in [&["--time-slice", "1:2"][..], &["--node", "5"][..], &["--time-slice", "0:1", "--node", "255"][..]] {
        renders_400x300(input, extra, &format!("filter{}.png", extra.join("_").replace(':', "-")));
    }
    let o = tmp("never_filter.png");
    let o = o.to_str().unwrap();
    assert_fails(&["render", input, "--node", "256", "--out", o], &[input, "node 256 is not in the torus"]);
    assert_fails(&["render", input, "--time-slice", "3", "--out", o], &["--time-slice", "FROM:TO"]);
    assert_fails(&["render", input, "--time-slice", "2:1", "--out", o], &["empty"]);
    assert_fails(
        &["render", "gen:lulesh", "--view", "matrix", "--node", "1", "--out", o],
        &["themeriver and linked views"],
    );
}

#[test]
fn parcoords_themeriver_and_select_render_or_fail_clearly() {
    let input = "gen:torus-sim?dims=4x4x4x4x4&steps=12";
    for (k, extra) in [
        &["--view", "parcoords"][..],
        &["--view", "parcoords", "--select", "B=1,D=2", "--time-slice", "3:6"][..],
        &["--view", "themeriver", "--time-slice", "3:6"][..],
        &["--view", "themeriver", "--select", "a=0-1,e=3"][..],
        &["--view", "themeriver", "--node", "7"][..],
        &["--select", "d2=1"][..],
    ]
    .iter()
    .enumerate()
    {
        renders_400x300(input, extra, &format!("linked_{k}.png"));
    }
    let o = tmp("never_linked.png");
    let o = o.to_str().unwrap();
    let render = |extra: &[&str], says: &[&str]| {
        let mut args = vec!["render", input, "--out", o];
        args.extend_from_slice(extra);
        assert_fails(&args, says);
    };
    render(&["--view", "parcoords", "--select", "F=1"], &["--select", "not a dimension"]);
    render(&["--view", "themeriver", "--select", "B"], &["--select", "not DIM=VALUE"]);
    render(&["--view", "themeriver", "--select", "X=1"], &[input, "no dimension X"]);
    render(&["--view", "parcoords", "--select", "C=4"], &[input, "outside the torus"]);
    render(&["--view", "themeriver", "--node", "1024"], &[input, "node 1024 is not in the torus"]);
    render(&["--view", "parcoords", "--bundle", "kde"], &["--bundle"]);
    assert_fails(&["render", "gen:lulesh", "--view", "themeriver", "--out", o], &["gen:lulesh", "needs a topology"]);
    assert_fails(&["render", "gen:lulesh", "--view", "timeline", "--select", "A=1", "--out", o], &["--select"]);
}

/// The linked view renders headless with a shared state (and ring options), and refuses what
/// does not fit it in one line.
#[test]
fn linked_view_renders_or_fails_clearly() {
    let input = "gen:torus-sim?dims=4x4x4x4x4&steps=12";
    let out = tmp("linked_view.png");
    let o = out.to_str().unwrap();
    let args = ["render", input, "--view", "linked", "--size", "900x540", "--out", o];
    let extra = ["--select", "C=1", "--node", "17", "--time-slice", "2:8", "--order", "sequential", "--blocks", "16"];
    let run = exaviz(&[&args[..], &extra[..]].concat());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(png_size(&out), (900, 540));
    let mut reader =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap())).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    reader.next_frame(&mut pixels).unwrap();
    assert!(pixels.chunks(4).filter(|p| p[..3] != pixels[..3]).count() > 10_000, "the picture looks blank");
    let bad = tmp("never_linked_view.png");
    let b = bad.to_str().unwrap();
    let render = |extra: &[&str], says: &[&str]| {
        let mut args = vec!["render", input, "--view", "linked", "--out", b];
        args.extend_from_slice(extra);
        assert_fails(&args, says);
    };
    render(&["--size", "700x400"], &[input, "too small for the linked view (at least 800x480)"]);
    render(&["--select", "B=2", "--node", "17"], &[input, "node 17 [0, 0, 1, 0, 1] is outside the selection B=2"]);
    render(&["--bundle", "grid"], &["--bundle grid is not an option of the linked view; the timeline and mpi views"]);
    render(&["--scope", "hops"], &["--scope is not an option of the linked view; the mds view takes it"]);
    assert_fails(&["render", "gen:lulesh", "--view", "linked", "--out", b], &["gen:lulesh", "needs a topology"]);
    // The ring's group filter, message tracking and zoom.
    render(&["--group", "1-x"], &["'x' in '1-x' is not a block number from 1 to 64"]);
    render(&["--group", "2-17"], &[input, "group 2-17 names block 17, but the ring has 8 blocks"]);
    render(&["--track", "5000"], &[input, "cannot track node 5000's message: the torus has nodes 0 to 1023"]);
    render(&["--zoom", "1,2,3"], &["'1,2,3' is not four numbers X0,Y0,X1,Y1"]);
    render(&["--zoom", "10,10,12,90"], &[input, "must be at least 4x4 pixels"]);
    let other = ["render", input, "--view", "parcoords", "--out", b];
    assert_fails(
        &[&other[..], &["--track", "3"]].concat(),
        &["--track is not an option of the parcoords view; the ring and linked views take it"],
    );
    assert!(!bad.exists());
    let tracked = ["--group", "1-2,2-3", "--track", "17", "--zoom", "100,100,300,250", "--bundle", "hierarchical"];
    let run = exaviz(&[&args[..], &tracked[..]].concat());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(png_size(&out), (900, 540));
}

/// Fat trees (TreeScope, Bhatia et al., 2018): `exaviz gen` writes TreeScope's data directory,
/// which info, metrics and render read back; two routing schemes on one workload give
/// different hot-link counts, per run and per half of a run whose routing changes; bad
/// files and options are one line.
#[test]
fn fattree_directories_generate_load_measure_and_render() {
    let run = |dir: &Path, spec: &str| {
        let out = exaviz(&["gen", spec, dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let json = |args: &[&str]| -> serde_json::Value {
        let out = exaviz(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let (a, b, both) = (tmp("ft-dmodk"), tmp("ft-hashed"), tmp("ft-both"));
    run(&a, "gen:fattree?system=simulated&steps=30&routing=dmodk");
    run(&b, "fattree?system=simulated&steps=30&routing=hashed");
    run(&both, "gen:fattree?system=production&steps=40&routing=both");
    let info = json(&["info", a.to_str().unwrap(), "--json"]);
    assert_eq!(
        (info["nodes"].as_u64(), info["switches"].as_u64(), info["pods"].as_u64()),
        (Some(3200), Some(400), Some(8))
    );
    assert_eq!((info["timestamps"].as_u64(), info["jobs"].as_u64()), (Some(31), Some(6)));
    let hot = |d: &Path| json(&["metrics", d.to_str().unwrap(), "--json", "--top", "5"]);
    let (ma, mb) = (hot(&a), hot(&b));
    assert_ne!(ma["hot_links"], mb["hot_links"], "{ma} {mb}");
    assert_eq!(ma["hottest"].as_array().unwrap().len(), 5);
    assert!(ma["hottest"][0]["bytes"].as_f64() >= ma["hottest"][1]["bytes"].as_f64());
    let halves = hot(&both)["routing"].as_array().unwrap().clone();
    assert_eq!(halves.len(), 2, "{halves:?}");
    assert_ne!(halves[0]["hot_links"], halves[1]["hot_links"], "{halves:?}");
    // The directory renders, with a job and a route selected.
    let png = tmp("ft.png");
    let out = exaviz(&[
        "render",
        a.to_str().unwrap(),
        "--view",
        "fattree",
        "--job",
        "1000003",
        "--route",
        "0,60",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(png_size(&png), (1024, 768));
    // Bad options and files.
    let o = tmp("never-ft.png");
    let o = o.to_str().unwrap();
    let dir = a.to_str().unwrap();
    assert_fails(
        &["render", dir, "--view", "fattree", "--time", "5:99", "-o", o],
        &["--time 5:99", "intervals 0 to 30"],
    );
    assert_fails(&["render", dir, "--view", "fattree", "--route", "9999", "-o", o], &["switch 9999"]);
    assert_fails(&["render", dir, "--view", "fattree", "--job", "7", "-o", o], &["--job 7"]);
    assert_fails(&["render", dir, "--view", "fattree", "--traffic", "9:1", "-o", o], &["LO:HI"]);
    assert_fails(&["render", "gen:fattree?k=3", "--view", "fattree", "-o", o], &["k=3 must be even"]);
    assert_fails(&["render", "gen:torus-sim", "--view", "fattree", "-o", o], &["needs a fat-tree network"]);
    assert_fails(&["gen", "gen:wrf", o], &["exaviz gen writes files of gen:fattree and gen:training"]);
    let with_year = format!("{dir}?year=2017");
    assert!(exaviz(&["info", &with_year]).status.success());
    assert_fails(&["info", &format!("{dir}?year=often")], &["year=often is not a year"]);
    assert_fails(
        &["info", &format!("{dir}?colour=red")],
        &["unknown option 'colour' for a TreeScope data directory (expected year)"],
    );
    let topo = a.join("network.topo");
    let text = std::fs::read_to_string(&topo).unwrap();
    std::fs::write(&topo, &text[..text.len() / 2]).unwrap();
    assert_fails(&["info", dir], &["network.topo", "EOF"]);
    assert!(!Path::new(o).exists());
    for d in [a, b, both] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// The two harnesses, bundlings and torus layouts, write rows of one schema: `harness`,
/// `input`, `method`, `median_s` and `measures`.
#[test]
fn bench_and_bench_layout_share_one_row_schema() {
    let runs = [
        exaviz(&["bench", "gen:circle?edges=300", "--backend", "cpu", "--runs", "1", "--json"]),
        exaviz(&["bench-layout", "--dims", "4x4x4", "--json"]),
    ];
    for (out, harness) in runs.iter().zip(["bundling", "layout"]) {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for r in rows.as_array().unwrap() {
            assert_eq!(r["harness"], harness, "{r}");
            assert!(r["input"].is_string() && r["method"].is_string(), "{r}");
            assert!(r["median_s"].is_number() || r.get("skipped").is_some(), "{r}");
            let m = r["measures"].as_object().expect("measures");
            assert!(!m.is_empty() || r.get("skipped").is_some(), "{r}");
            assert!(m.values().all(serde_json::Value::is_number), "{r}");
        }
    }
}

/// `exaviz render --wall`: each tile and the whole wall (mullion gaps black) equal one render of
/// the virtual canvas cropped by the same rectangles; bad wall files are one line naming the field.
#[test]
fn wall_render_writes_tiles_equal_to_crops_of_the_canvas() {
    let wall = tmp("wall.toml");
    std::fs::write(&wall, "columns = 2\nrows = 2\ntile = [200, 120]\nmullion = [16, 10]\n").unwrap();
    let dir = tmp("wall-out");
    let full = tmp("wall-full.png");
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let out =
        exaviz(&["render", input, "--backend", "cpu", "--wall", wall.to_str().unwrap(), "-o", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = exaviz(&["render", input, "--backend", "cpu", "--size", "416x250", "-o", full.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |p: &Path| {
        let d = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
        let mut r = d.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        (info.width, buf)
    };
    let (fw, whole) = read(&full);
    let (ww, stitched) = read(&dir.join("wall.png"));
    assert_eq!((fw, ww), (416, 416));
    let px = |img: &[u8], w: u32, x: u32, y: u32| img[((y * w + x) * 4) as usize..][..4].to_vec();
    for y in 0..250 {
        for x in 0..416 {
            let in_gap = (200..216).contains(&x) || (120..130).contains(&y);
            let want = if in_gap { vec![0, 0, 0, 255] } else { px(&whole, 416, x, y) };
            assert_eq!(px(&stitched, 416, x, y), want, "wall.png at {x},{y}");
        }
    }
    let (tw, tile) = read(&dir.join("tile_1_1.png"));
    assert_eq!(tw, 200);
    for y in 0..120 {
        for x in 0..200 {
            assert_eq!(px(&tile, 200, x, y), px(&whole, 416, 216 + x, 130 + y), "tile_1_1 at {x},{y}");
        }
    }
    // Bad walls.
    let o = tmp("never-wall");
    let o = o.to_str().unwrap();
    let bad = |text: &str, needles: &[&str]| {
        std::fs::write(&wall, text).unwrap();
        assert_fails(&["render", input, "--wall", wall.to_str().unwrap(), "-o", o], needles);
    };
    bad("columns = 2\nrows = 1\ntile = [0, 100]\n", &["wall.toml", "tile = [0, 100]"]);
    bad(
        "columns = 2\nrows = 1\ntile = [100, 100]\n[[tiles]]\ncolumn = 0\nrow = 0\n[[tiles]]\ncolumn = 0\nrow = 0\n",
        &["tiles[1]", "twice"],
    );
    bad("columns = 2\nrows = 1\ntile = [100, 100]\nbezels = 3\n", &["wall.toml", "line 4", "bezels"]);
    bad("columns = 2\nrows = 1\n", &["wall.toml", "tile"]);
    bad("columns = [\n", &["wall.toml", "line"]);
    assert_fails(&["render", input, "--wall", "/no/wall.toml", "-o", o], &["/no/wall.toml"]);
    assert_fails(&["render", input, "--wall", wall.to_str().unwrap(), "--size", "100x100", "-o", o], &["--size"]);
    assert!(!Path::new(o).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A wall's master refuses to start without every tile, naming the missing ones; a tile off
/// the wall and --join without --tile are one line each.
#[test]
fn wall_master_and_tiles_refuse_bad_setups() {
    let wall = tmp("net-wall.toml");
    std::fs::write(&wall, "columns = 2\nrows = 2\ntile = [100, 80]\n").unwrap();
    let w = wall.to_str().unwrap();
    let port = format!("127.0.0.1:{}", 20_000 + std::process::id() % 20_000);
    // The master says where it listens, then fails in one line.
    let out = exaviz(&["wall", "--config", w, "--serve", &port, "--join-timeout", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && !err.contains("panicked"), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("error: --serve") && last.contains("0 of the wall's 4 tiles joined in 1 s"), "{err}");
    assert!(last.contains("missing: 0,0 1,0 0,1 1,1"), "{err}");
    assert_fails(&["wall", "--config", w, "--join", &port, "--tile", "5,0"], &["--tile 5,0", "columns 0 to 1"]);
    assert_fails(&["wall", "--config", w, "--join", &port], &["--tile"]);
}

/// Chrome trace event files (PyTorch Kineto, gzip; PerfFlowAspect) open as traces: a location
/// per lane, slices as intervals, drawn by the timeline.
#[test]
fn chrome_traces_load_and_render_when_present() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    if !present(&data) {
        return;
    }
    for (file, least) in [("kineto/sampled_rank-0.json.gz", 4000), ("perfflow/perfflow.lassen19.108800.pfw", 1000)] {
        let path = data.join(file);
        let p = path.to_str().unwrap();
        let info = exaviz(&["info", p, "--json"]);
        assert!(info.status.success(), "{}", String::from_utf8_lossy(&info.stderr));
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).expect("json");
        assert!(v["intervals"].as_u64().unwrap() >= least, "{file}: {v}");
        assert!(v["locations"].as_u64().unwrap() >= 1, "{file}: {v}");
        let out = tmp("chrome.png");
        let r = exaviz(&[
            "render",
            p,
            "--view",
            "timeline",
            "--backend",
            "cpu",
            "--size",
            "600x400",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{file}: {}", String::from_utf8_lossy(&r.stderr));
    }
    // A truncated gzip is one line naming the file.
    let cut = tmp("cut.json.gz");
    let gz = std::fs::read(data.join("kineto/sampled_rank-1.json.gz")).unwrap();
    std::fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    assert_fails(&["info", cut.to_str().unwrap()], &["cut.json.gz"]);
}

/// A generated training run written as Kineto files: the Marey view renders it, `metrics --view
/// marey --json` lists the injected straggler and unbalanced stage, and the training overview
/// renders a step; bad options and inputs without a training profile are one line.
#[test]
fn training_profiles_render_as_marey_graphs_and_list_their_findings() {
    let dir = tmp("training-run");
    let _ = std::fs::remove_dir_all(&dir);
    let spec = "gen:training?devices=16&stages=4&straggler=5&unbalanced=2";
    let g = exaviz(&["gen", spec, dir.to_str().unwrap()]);
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let d = dir.to_str().unwrap();
    for (view, extra) in [("marey", &["--collapse", "all"][..]), ("training", &["--step", "1"][..])] {
        let out = tmp(&format!("{view}.png"));
        let mut args =
            vec!["render", d, "--view", view, "--backend", "cpu", "--size", "800x500", "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let r = exaviz(&args);
        assert!(r.status.success(), "{view}: {}", String::from_utf8_lossy(&r.stderr));
        assert_eq!(png_size(&out), (800, 500));
    }
    let m = exaviz(&["metrics", d, "--of", "training", "--json"]);
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let v: serde_json::Value = serde_json::from_slice(&m.stdout).expect("json");
    assert_eq!(v["devices"], 16);
    assert_eq!(v["stages"], 4);
    let findings = v["findings"].as_array().unwrap();
    let has = |rule: &str, key: &str, value: u64| findings.iter().any(|f| f["rule"] == rule && f[key] == value);
    // Rank 5 is device 5 (devices are ordered by stage, then rank).
    assert!(has("straggler", "device", 5) && has("slow-device", "device", 5) && has("heavy-stage", "stage", 2), "{v}");
    assert_fails(&["render", d, "--view", "marey", "--collapse", "some", "-o", "x.png"], &["some"]);
    assert_fails(
        &["render", d, "--view", "marey", "--step", "9", "--backend", "cpu", "-o", "x.png"],
        &["step 9 does not exist"],
    );
    assert_fails(&["render", "gen:torus", "--view", "marey", "-o", "x.png"], &["training profile"]);
    assert_fails(&["metrics", "gen:torus", "--view", "marey"], &["training profile"]);
    assert_fails(&["info", "gen:training?devices=10&stages=4"], &["not a multiple of stages"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A JAX Chrome trace without its HLO modules tells no stages apart: the title says so, and
/// `--stages` sets them by rank for every command; a rank in no stage, a range that ends before
/// it begins and an input that is no training run are one line each.
#[test]
fn stages_come_from_the_trace_or_from_the_command_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let chrome = root.join("jax-cpu-pipeline/plugins/profile/run/vm.trace.json.gz");
    let c = chrome.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let m = exaviz(args);
        assert!(m.status.success(), "{args:?}: {}", String::from_utf8_lossy(&m.stderr));
        serde_json::from_slice(&m.stdout).expect("json")
    };
    let v = json(&["metrics", c, "--view", "marey", "--json"]);
    assert_eq!((v["stages"].as_u64(), v["stages_from"].as_str()), (Some(1), Some("none")), "{v}");
    let v = json(&["metrics", c, "--view", "marey", "--json", "--stages", "0-1,2-3"]);
    assert_eq!((v["stages"].as_u64(), v["stages_from"].as_str()), (Some(2), Some("--stages")), "{v}");
    let v = json(&["metrics", root.join("jax-cpu-pipeline").to_str().unwrap(), "--view", "marey", "--json"]);
    assert_eq!((v["stages"].as_u64(), v["stages_from"].as_str()), (Some(4), Some("HLO pairs")), "{v}");
    let info = exaviz(&["--stages", "0,1,2,3", "info", c]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("4 devices in 4 stages (from --stages"), "{text}");
    let out = tmp("staged.png");
    let r = exaviz(&[
        "render",
        c,
        "--view",
        "marey",
        "--stages",
        "0-1,2-3",
        "--backend",
        "cpu",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_fails(&["info", c, "--stages", "0-2"], &["rank 3", "none of the stages"]);
    assert_fails(&["info", c, "--stages", "3-1"], &["--stages", "ends before it begins"]);
    assert_fails(&["info", "gen:torus", "--stages", "0"], &["gen:torus", "not a training run"]);
}

/// Files of different runs claiming the same rank are one line.
#[test]
fn kineto_files_of_different_runs_are_refused_together() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    if !present(&data) {
        return;
    }
    assert_fails(
        &["info", data.join("kineto").to_str().unwrap()],
        &["holds the profiles of more than one run", "is also rank", "pass one run's folder or profile"],
    );
}

/// A `B` without its `E` is a counted warning, one line; the rest of the trace opens.
#[test]
fn unmatched_begin_events_are_a_counted_warning() {
    let f = tmp("unmatched.json");
    std::fs::write(
        &f,
        r#"[{"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 0},
            {"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]"#,
    )
    .unwrap();
    let out = exaviz(&["info", f.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("1 B or E events without their partner"), "{err}");
}

/// `exaviz summary` of the real ping-pong trace: the numbers agree with what the trace holds
/// (16 messages of 2 ranks, 16 MPI_Recv and MPI_Send calls), in JSON and as tables; an area
/// narrows them; bad areas are one line.
#[test]
fn summary_of_an_area_of_a_real_trace() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/otf2-pingpong/ping-pong-otf2/traces.otf2");
    if !present(&data) {
        return;
    }
    let input = data.to_str().unwrap();
    let out = exaviz(&["summary", input, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(s["messages"], 16);
    let regions = s["regions"].as_array().unwrap();
    let count = |name: &str| regions.iter().find(|r| r["name"] == name).map(|r| r["count"].as_u64().unwrap());
    assert_eq!(count("MPI_Recv"), Some(16));
    assert_eq!(count("MPI_Send"), Some(16));
    let share: f64 = regions.iter().map(|r| r["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 0.01, "the rows' time is all accounted for: {share}");
    assert_eq!(s["pairs"].as_array().unwrap().len(), 2);
    assert!(
        s["waits_by_region"][0]["name"] == "MPI_Recv",
        "late senders are found in receives: {}",
        s["waits_by_region"]
    );
    // Its 4 MiB messages go by rendezvous: blocking sends that outlast a later receive.
    assert_eq!(s["late_receivers_by_region"][0]["name"], "MPI_Send", "{}", s["late_receivers_by_region"]);
    assert!(s["late_receivers_by_location"][0]["late_receiver_s"].as_f64().unwrap() > 0.0);
    // One row, a window: fewer messages, and the table names the regions.
    let out = exaviz(&["summary", input, "--from", "0.195", "--ranks", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("MPI_Recv") && text.contains("1 rows"), "{text}");
    assert_fails(&["summary", input, "--ranks", "0-7"], &["--ranks 0-7", "rows 0-1"]);
    assert_fails(&["summary", input, "--from", "2", "--to", "1"], &["empty"]);
}

/// `exaviz critical-path` of a generated run with slow ranks planted: the JSON names them as the
/// stragglers and the first root causes, the path covers the run, the tables print, and a
/// window that is empty is one line.
#[test]
fn critical_path_names_the_planted_slow_ranks() {
    let input = "gen:wrf?plant=1&collectives=5&iterations=200";
    let out = exaviz(&["critical-path", input, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let named: Vec<&str> =
        r["stragglers"]["named"].as_array().unwrap().iter().map(|s| s["process"].as_str().unwrap()).collect();
    assert!(!named.is_empty() && named.iter().all(|n| ["rank 4", "rank 5"].contains(n)), "{named:?}");
    assert!(
        ["rank 4", "rank 5"].contains(&r["root_causes"][0]["location"].as_str().unwrap()),
        "{}",
        r["root_causes"][0]
    );
    let (length, to) = (r["length_s"].as_f64().unwrap(), r["to_s"].as_f64().unwrap());
    assert!(length > 0.99 * to, "the path spans the run: {length} of {to}");
    let segments = r["segments"].as_array().unwrap();
    assert!(segments.windows(2).all(|w| w[0]["to_s"].as_f64() <= w[1]["from_s"].as_f64()), "in time order");
    let out = exaviz(&["critical-path", input, "--top", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("critical path by row") && text.contains("root causes of waiting") && text.contains("rank 4"),
        "{text}"
    );
    assert_fails(&["critical-path", input, "--from", "9", "--to", "1"], &["empty"]);
    // What if: the planted ranks at their peers' median, the computation halved, and a factor
    // of 1 that changes nothing; an unknown rank is one line.
    let args = ["critical-path", input, "--json", "--what-if", "rank 4-5", "--what-if", "region:compute*0.5"];
    let out = exaviz(&[&args[..], &["--what-if", "region:comp*"], &["--what-if", "region:compute*1"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let w = r["what_if"].as_array().unwrap();
    assert_eq!(w.len(), 4);
    assert_eq!(w[0]["who"], "rank 4-5");
    assert_eq!(w[0]["selected"], serde_json::json!(["rank 4", "rank 5"]));
    let f = |k: usize, key: &str| w[k][key].as_f64().unwrap();
    assert!(f(0, "saved_s") > 0.0 && f(0, "removed_s") > 0.0, "{}", w[0]);
    assert!((f(1, "projected_s") + f(1, "saved_s") - length).abs() < 1e-9, "{}", w[1]);
    assert!(f(1, "saved_s") > 0.1 * length, "halving the computation saves: {}", w[1]);
    assert!(f(2, "saved_s") > f(1, "saved_s"), "removing it saves more: {}", w[2]);
    assert_eq!((f(3, "saved_s"), f(3, "removed_s")), (0.0, 0.0), "{}", w[3]);
    let out = exaviz(&["critical-path", input, "--what-if", "rank 4-5", "--what-if", "rank 5"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("what if") && text.contains("selects rank 4, rank 5"), "{text}");
    assert_fails(&["critical-path", input, "--what-if", "rank 99"], &["rank 99", "no process is named so"]);
    assert_fails(&["critical-path", input, "--what-if", "region:nothing"], &["no region is named so"]);
}

/// Totals of an OTF2 archive as `otf2-print` lists its events, the oracle for `exaviz summary`:
/// per region its ENTER count and the inclusive and self time of its calls (each LEAVE closing
/// the innermost open call of its region and the calls entered after it, as Vampir does, a LEAVE
/// of a region not open dropped), per (sender, receiver) the MPI_SEND count and bytes, per
/// collective operation the count and time from MPI_COLLECTIVE_BEGIN to END.
#[derive(Default)]
struct Otf2Totals {
    regions: std::collections::BTreeMap<String, (u64, f64, f64)>,
    pairs: std::collections::BTreeMap<(u64, u64), (u64, u64)>,
    collectives: std::collections::BTreeMap<String, (u64, f64)>,
}

/// The text after `key` in `line`, up to `end`.
fn field<'a>(line: &'a str, key: &str, end: char) -> &'a str {
    let at = line.find(key).unwrap_or_else(|| panic!("otf2-print line without {key}: {line}")) + key.len();
    line[at..].split(end).next().unwrap()
}

fn otf2_print_totals(anchor: &Path) -> Option<Otf2Totals> {
    let run = |args: &[&str]| match Command::new("otf2-print").args(args).arg(anchor).output() {
        Ok(o) => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Err(e) => {
            let required = std::env::var("EXAVIZ_REQUIRE_DATA").as_deref() == Ok("1");
            assert!(!required, "otf2-print (apt package otf2-tools) is required with EXAVIZ_REQUIRE_DATA=1: {e}");
            eprintln!("skipped: otf2-print absent");
            None
        }
    };
    let defs = run(&["-G"])?;
    let tps: f64 = field(&defs, "Ticks per Seconds: ", ',').trim().parse().expect("clock resolution");
    let mut totals = Otf2Totals::default();
    // Per location: the open calls (region, enter tick, ticks of the calls directly inside).
    let mut open: std::collections::HashMap<u64, Vec<(String, u64, u64)>> = Default::default();
    let mut begun: std::collections::HashMap<u64, u64> = Default::default();
    for line in run(&[])?.lines() {
        let mut words = line.split_whitespace();
        let (Some(event), Some(loc), Some(tick)) = (words.next(), words.next(), words.next()) else { continue };
        let (Ok(loc), Ok(tick)) = (loc.parse::<u64>(), tick.parse::<u64>()) else { continue };
        let stack = open.entry(loc).or_default();
        match event {
            "ENTER" => {
                let region = field(line, "Region: \"", '"').to_string();
                totals.regions.entry(region.clone()).or_default().0 += 1;
                stack.push((region, tick, 0));
            }
            "LEAVE" => {
                let region = field(line, "Region: \"", '"');
                let Some(at) = stack.iter().rposition(|c| c.0 == region) else { continue };
                while stack.len() > at {
                    let (r, enter, inner) = stack.pop().unwrap();
                    let d = tick - enter;
                    let t = totals.regions.get_mut(&r).unwrap();
                    t.1 += d as f64 / tps;
                    t.2 += (d - inner) as f64 / tps;
                    if let Some(outer) = stack.last_mut() {
                        outer.2 += d;
                    }
                }
            }
            "MPI_SEND" | "MPI_ISEND" => {
                let to: u64 = field(line, "Receiver: ", ' ').parse().unwrap();
                let bytes: u64 = field(line, "Length: ", ',').trim().parse().unwrap();
                let p = totals.pairs.entry((loc, to)).or_default();
                p.0 += 1;
                p.1 += bytes;
            }
            "MPI_COLLECTIVE_BEGIN" => {
                begun.insert(loc, tick);
            }
            "MPI_COLLECTIVE_END" => {
                let op = field(line, "Operation: ", ',').replace('_', "").to_lowercase();
                let c = totals.collectives.entry(op).or_default();
                c.0 += 1;
                c.1 += (tick - begun.remove(&loc).expect("a collective's begin")) as f64 / tps;
            }
            _ => {}
        }
    }
    Some(totals)
}

/// `exaviz summary --json` of the real OTF2 traces equals the totals `otf2-print` lists: every
/// region's count, inclusive and self time, every pair's messages and bytes, every collective
/// operation's count and time.
#[test]
fn summary_json_equals_otf2_print_totals() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    for archive in [
        "otf2-pingpong/ping-pong-otf2/traces.otf2",
        "otf2-pingpong/ping-pong-otf2-papi/traces.otf2",
        "otf2-stencil-32r/traces.otf2",
        "otf2-hip-mi300-metrics/traces.otf2",
    ] {
        let anchor = data.join(archive);
        if !present(&anchor) {
            return;
        }
        let Some(oracle) = otf2_print_totals(&anchor) else { return };
        let out = exaviz(&["summary", anchor.to_str().unwrap(), "--json", "--top", "100000"]);
        assert!(out.status.success(), "{archive}: {}", String::from_utf8_lossy(&out.stderr));
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-3);
        let regions = s["regions"].as_array().unwrap();
        assert_eq!(regions.len(), oracle.regions.len(), "{archive}: regions");
        for r in regions {
            let name = r["name"].as_str().unwrap();
            let (count, total, own) = oracle.regions[name];
            assert_eq!(r["count"].as_u64(), Some(count), "{archive}: {name} count");
            assert!(close(r["total_s"].as_f64().unwrap(), total), "{archive}: {name} total {} {total}", r["total_s"]);
            assert!(close(r["self_s"].as_f64().unwrap(), own), "{archive}: {name} self {} {own}", r["self_s"]);
        }
        let pairs = s["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), oracle.pairs.len(), "{archive}: pairs");
        for p in pairs {
            let key = (p["source"].as_u64().unwrap(), p["destination"].as_u64().unwrap());
            let (count, bytes) = oracle.pairs[&key];
            assert_eq!((p["count"].as_u64(), p["bytes"].as_u64()), (Some(count), Some(bytes)), "{archive}: {key:?}");
        }
        let messages: u64 = oracle.pairs.values().map(|p| p.0).sum();
        assert_eq!(s["messages"].as_u64(), Some(messages), "{archive}: messages");
        let collectives = s["collectives"].as_array().unwrap();
        assert_eq!(collectives.len(), oracle.collectives.len(), "{archive}: collectives");
        for c in collectives {
            let op = c["name"].as_str().unwrap().replace('_', "").to_lowercase();
            let (count, time) = oracle.collectives[&op];
            assert_eq!(c["count"].as_u64(), Some(count), "{archive}: {op}");
            assert!(close(c["total_s"].as_f64().unwrap(), time), "{archive}: {op} time {} {time}", c["total_s"]);
        }
    }
}

/// `--depth N` draws an HPCToolkit database's call paths down to N functions, as
/// `DB?depth=N` does; on any other input it says where it applies.
#[test]
fn depth_cuts_an_hpctoolkit_databases_call_paths() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/hpctoolkit-pingpong");
    if !present(&data) {
        return;
    }
    let d = data.to_str().unwrap();
    let intervals = |args: &[&str]| -> u64 {
        let out = exaviz(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["intervals"].as_u64().unwrap()
    };
    let deepest = intervals(&["info", d, "--json"]);
    let outermost = intervals(&["info", d, "--json", "--depth", "1"]);
    assert_eq!(outermost, 2, "one main per rank");
    assert!(deepest > outermost, "{deepest} against {outermost}");
    let query = format!("{d}?depth=1");
    assert_eq!(intervals(&["info", &query, "--json"]), outermost);
    assert_fails(&["info", "gen:wrf", "--depth", "2"], &["--depth applies to HPCToolkit databases"]);
}

/// A run of profiles with a rank's file cut short opens without it, with one warning line
/// naming the file; `--strict` (or `RUN?strict=1`) refuses the run in one line instead, and
/// `convert` leaves nothing under the store's name.
#[test]
fn strict_refuses_a_run_with_a_broken_rank() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/kineto-dlrm-8gpu");
    if !present(&data) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("exaviz-cli-strict-{}", std::process::id()));
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(&data).unwrap().flatten().map(|e| e.path()).collect();
    names.retain(|p| p.extension().is_some_and(|e| e == "json"));
    names.sort();
    for (i, p) in names.iter().enumerate() {
        let mut bytes = std::fs::read(p).unwrap();
        if i == 2 {
            bytes.truncate(bytes.len() / 3);
        }
        std::fs::write(run.join(p.file_name().unwrap()), bytes).unwrap();
    }
    let broken = names[2].file_name().unwrap().to_str().unwrap();
    let r = run.to_str().unwrap();
    let out = exaviz(&["info", r, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    let left: Vec<&str> = err.lines().filter(|l| l.contains("left out of the run")).collect();
    assert_eq!(left.len(), 1, "{err}");
    assert!(left[0].starts_with("warning: ") && left[0].contains(broken), "{}", left[0]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["training"]["devices"].as_u64(), Some(names.len() as u64 - 1));
    assert_fails(&["info", r, "--strict"], &[broken, "ends too early"]);
    assert_fails(&["info", &format!("{r}?strict=1")], &[broken, "ends too early"]);
    let store = dir.join("store");
    assert_fails(&["convert", r, store.to_str().unwrap(), "--strict"], &[broken]);
    let left_over: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left_over, [std::ffi::OsString::from("run")], "nothing but the run is left");
    std::fs::remove_dir_all(&dir).ok();
}

/// `exaviz render --scene-json` writes what the picture shows, for the timeline, steps, Marey
/// graph and matrix: the view, the title, the rows (label drawn, name whole, pixels, apart,
/// count) and the legend; the row drawn apart from its group says so.
#[test]
fn the_scene_a_program_can_read() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("gen:fd4?ranks=2048&messages=200000&slow_rank=77", "timeline", &["--rows", "behaviour"]),
        ("gen:fd4?ranks=2048&messages=200000&slow_rank=77", "steps", &[]),
        ("gen:training?devices=8&stages=2", "marey", &[]),
        ("gen:fd4?ranks=64&messages=20000", "matrix", &[]),
    ];
    for (input, view, options) in cases {
        let (png, json) = (tmp(&format!("scene-{view}.png")), tmp(&format!("scene-{view}.json")));
        let mut args = vec!["render", input, "--view", view, "--size", "1024x768", "-o", png.to_str().unwrap()];
        args.extend(["--scene-json", json.to_str().unwrap()]);
        args.extend(options.iter());
        let out = exaviz(&args);
        assert!(out.status.success(), "{view}: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&json).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{view}: {e}: {text}"));
        assert_eq!(v["view"], *view);
        assert!(!v["title"].as_str().unwrap().is_empty(), "{view}: a title");
        let rows = v["rows"].as_array().unwrap_or_else(|| panic!("{view}: rows in {text}"));
        assert!(!rows.is_empty(), "{view}: rows");
        for r in rows {
            for field in ["label", "name"] {
                assert!(r[field].is_string(), "{view}: {field} in {r}");
            }
            assert!(r["top"].as_u64().is_some_and(|t| t < 768) && r["height"].as_u64().is_some(), "{view}: {r}");
            assert!(r["apart"].is_boolean() && r["count"].as_u64().is_some_and(|c| c >= 1), "{view}: {r}");
        }
        assert!(rows.iter().any(|r| !r["label"].as_str().unwrap().is_empty()), "{view}: some row labelled");
        let legend = v["legend"].as_array().unwrap();
        assert!(!legend.is_empty() && legend.iter().all(|e| e["label"].is_string() && e["name"].is_string()), "{view}");
        let tops: Vec<u64> = rows.iter().map(|r| r["top"].as_u64().unwrap()).collect();
        assert!(tops.windows(2).all(|w| w[0] <= w[1]), "{view}: top to bottom: {tops:?}");
        if ["timeline", "steps"].contains(view) {
            let apart: Vec<&serde_json::Value> = rows.iter().filter(|r| r["apart"] == true).collect();
            assert!(apart.iter().any(|r| r["label"] == "rank 77"), "{view}: rank 77 apart and named: {text}");
            let counted: u64 =
                rows.iter().filter(|r| r["kind"] != "summary").map(|r| r["count"].as_u64().unwrap()).sum();
            assert_eq!(counted, 2048, "{view}: every rank counted once");
        }
    }
}

/// `bench-interact` reports per gesture what grouping rows by behaviour cost it, and nothing
/// where rows are drawn by index.
#[test]
fn bench_interact_reports_what_grouping_costs_a_gesture() {
    let input = "gen:fd4?ranks=2048&messages=100000&slow_rank=77";
    let grouping = |rows: &str| -> Vec<f64> {
        let args = ["bench-interact", input, "--view", "timeline", "--backend", "cpu", "--runs", "1", "--json"];
        let out = exaviz(&[&args[..], &["--size", "800x600", "--rows", rows]].concat());
        assert!(out.status.success(), "{rows}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let gestures = v["gestures"].as_array().unwrap();
        gestures.iter().map(|g| g["grouping_ms"]["max"].as_f64().unwrap()).collect()
    };
    let grouped = grouping("behaviour");
    assert!(grouped.iter().any(|&ms| ms > 0.0), "{grouped:?}");
    assert!(grouping("index").iter().all(|&ms| ms == 0.0));
}

/// The GPU holds the trace: with its rows kept on the device (`EXAVIZ_GPU_ROWS=1`, as on a GPU
/// of its own) and the pictures presented where they are drawn (`EXAVIZ_WORKER_DEVICE=shared`,
/// as a window sharing the device presents them), after the first picture every gesture of the
/// timeline and the matrix of FD4 held in memory (2.2M messages, with its index) moves at most
/// 64 KiB between the host and the device, read back included (the short script of
/// `benches/interact-short.txt`: wheels, pans, hovers, a click, a reset).
#[test]
fn after_the_first_picture_a_gesture_moves_at_most_64_kib() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/interact-short.txt");
    for view in ["timeline", "matrix"] {
        let args = ["bench-interact", "gen:fd4", "--view", view, "--backend", "gpu", "--runs", "1", "--json"];
        let out = Command::new(env!("CARGO_BIN_EXE_exaviz"))
            .args(args)
            .args(["--size", "1024x768", "--script", script])
            .env_remove("XDG_RUNTIME_DIR")
            .env("EXAVIZ_GPU_ROWS", "1")
            .env("EXAVIZ_WORKER_DEVICE", "shared")
            .output()
            .expect("exaviz runs");
        assert!(out.status.success(), "{view}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["pictures_on_device"], true, "{v}");
        let opened = v["opened_gpu_mb"].as_f64().unwrap();
        // The columns went up with the first picture (2.2M messages, at least 8 bytes each).
        assert!(opened > 17.6, "{view}: {opened} MB to the first picture");
        let gestures = v["gestures"].as_array().unwrap();
        assert!(gestures.len() >= 4, "{v}");
        for g in gestures {
            let moved = g["gpu_upload_mb"]["max"].as_f64().unwrap() + g["gpu_readback_mb"]["max"].as_f64().unwrap();
            assert!(moved * 1e6 <= 65_536.0, "{view}: a {} moved {moved} MB", g["gesture"]);
        }
    }
}

/// The GPU holds a store's pyramid: with the overview drawn there (`EXAVIZ_GPU_ROWS=1`, as on
/// a GPU of its own), after the first picture every gesture of the timeline over a store too
/// large to read (8,192 ranks grouped by behaviour, 8M messages and about 4M intervals: every
/// window of the short script is drawn from the pyramid) moves at most 64 KiB between the host
/// and the device, read back included. The pyramid's levels, lines and per-rank tiles go up
/// once; the overview is composed there and presented where it was drawn, and the rows are
/// grouped there (each rank's group coming back in four bits).
#[test]
fn after_the_first_picture_a_gesture_over_a_store_moves_at_most_64_kib() {
    let dir = std::env::temp_dir().join(format!("exaviz-store-gestures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("fd4.exaviz");
    let input = "gen:fd4?ranks=8192&messages=8000000&slow_rank=3000";
    let out = Command::new(env!("CARGO_BIN_EXE_exaviz")).args(["convert", input]).arg(&store).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    gestures_move_at_most_64_kib(store.as_os_str(), "timeline");
    std::fs::remove_dir_all(&dir).ok();
}

/// A trace of 16,384 ranks held in memory, one slow, its rows grouped by behaviour under a
/// summary track: on a GPU holding its rows (`EXAVIZ_GPU_ROWS=1`), the ranks are grouped, the
/// summary track and the plot composed there, and every gesture after the first picture moves
/// at most 64 KiB (the layout's classes a byte a rank, when they change).
#[test]
fn after_the_first_picture_a_gesture_over_16384_ranks_in_memory_moves_at_most_64_kib() {
    gestures_move_at_most_64_kib(
        std::ffi::OsStr::new("gen:fd4?ranks=16384&messages=400000&slow_rank=10007"),
        "timeline",
    );
}

/// The chord and sender/receiver diagrams of 2,000 ranks, their curves drawn as a density on
/// the device: a wheel or pan moves the picture by the view, and the renderer finds its cells
/// kept on the device, so every gesture moves at most 64 KiB (the 3.15 MB picture before).
#[test]
fn a_gesture_over_a_chord_diagram_moves_at_most_64_kib() {
    for view in ["chord", "sendrecv"] {
        gestures_move_at_most_64_kib(std::ffi::OsStr::new("gen:fd4?ranks=2000&messages=200000"), view);
    }
}

/// A store's windows read from disk (the store opened out of core, `EXAVIZ_IN_MEMORY_ROWS=0`),
/// drawn on a GPU holding its rows (`EXAVIZ_GPU_ROWS=1`) from chunks of them kept there: the
/// picture is the CPU's (at most 0.1% of pixels more than 4 of 255 apart: a line count in the
/// legend may differ by one, as for a trace in memory), and after the first picture every
/// gesture moves at most 64 KiB, read back included (the window's rows went up as segments
/// and its picture came back, several MB a gesture, before); so does every gesture of its
/// matrix (a picture of the store's message cube, moved by the view).
#[test]
fn a_stores_windows_read_from_disk_are_drawn_from_chunks_of_its_rows_kept_on_the_device() {
    let dir = std::env::temp_dir().join(format!("exaviz-store-chunks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("fd4.exaviz");
    let out = Command::new(env!("CARGO_BIN_EXE_exaviz"))
        .args(["convert", "gen:fd4?ranks=512&messages=600000"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pixels = |backend: &str| -> Vec<u8> {
        let png = dir.join(format!("{backend}.png"));
        let out = Command::new(env!("CARGO_BIN_EXE_exaviz"))
            .arg("render")
            .arg(&store)
            .args(["--view", "timeline", "--from", "20", "--to", "26", "--size", "800x500", "--backend", backend, "-o"])
            .arg(&png)
            .env_remove("XDG_RUNTIME_DIR")
            .env("EXAVIZ_IN_MEMORY_ROWS", "0")
            .env("EXAVIZ_GPU_ROWS", "1")
            .output()
            .expect("exaviz runs");
        assert!(out.status.success(), "{backend}: {}", String::from_utf8_lossy(&out.stderr));
        let mut decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
        decoder.set_transformations(png::Transformations::normalize_to_color8() | png::Transformations::ALPHA);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        buf
    };
    let (gpu, cpu) = (pixels("gpu"), pixels("cpu"));
    assert_eq!(gpu.len(), cpu.len());
    let apart = gpu.chunks(4).zip(cpu.chunks(4)).filter(|(p, q)| p.iter().zip(*q).any(|(a, b)| a.abs_diff(*b) > 4));
    let apart = apart.count();
    assert!(apart * 1000 <= gpu.len() / 4, "{apart} pixels more than 4 of 255 from the CPU's");
    for view in ["timeline", "matrix"] {
        gestures_move_at_most_64_kib_with(store.as_os_str(), view, &[("EXAVIZ_IN_MEMORY_ROWS", "0")]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench-interact`'s counters of the short script over `input`'s `view`, its rows and
/// pictures kept on the device: every gesture moves at most 64 KiB, read back included.
fn gestures_move_at_most_64_kib(input: &std::ffi::OsStr, view: &str) {
    gestures_move_at_most_64_kib_with(input, view, &[]);
}

/// [`gestures_move_at_most_64_kib`] with more variables in the environment.
fn gestures_move_at_most_64_kib_with(input: &std::ffi::OsStr, view: &str, env: &[(&str, &str)]) {
    let v = short_script_on_the_device(input, view, env);
    let gestures = v["gestures"].as_array().unwrap();
    assert!(gestures.len() >= 4, "{v}");
    for g in gestures {
        let moved = g["gpu_upload_mb"]["max"].as_f64().unwrap() + g["gpu_readback_mb"]["max"].as_f64().unwrap();
        assert!(moved * 1e6 <= 65_536.0, "a {} moved {moved} MB", g["gesture"]);
    }
}

/// The linked mpi view of a trace held without an index (2,000 ranks): its matrix panel
/// counted and coloured on the device from the messages kept there, its chord panel drawn from
/// the curves kept there, its timeline from the rows kept there. After the first picture a
/// gesture reads back only its legends' numbers (five words a panel: 40 bytes measured), and
/// sends at most 128 KiB: the kept chord curves' opacities, 4 bytes each (3.4-4.3 MB up and
/// 0.91 MB back while the matrix's cells were binned from keys sent for each window and read
/// back).
#[test]
fn a_gesture_over_the_mpi_view_reads_back_only_its_legends_numbers() {
    let v = short_script_on_the_device(std::ffi::OsStr::new("gen:fd4?ranks=2000&messages=200000"), "mpi", &[]);
    let gestures = v["gestures"].as_array().unwrap();
    assert!(gestures.len() >= 4, "{v}");
    for g in gestures {
        let (up, back) = (g["gpu_upload_mb"]["max"].as_f64().unwrap(), g["gpu_readback_mb"]["max"].as_f64().unwrap());
        assert!(up * 1e6 <= 131_072.0 && back * 1e6 <= 64.0, "a {} moved {up} MB up and {back} MB back", g["gesture"]);
    }
}

/// `bench-interact --json` over the short script of `input`'s `view`, its rows and pictures
/// kept on the device (`EXAVIZ_GPU_ROWS=1 EXAVIZ_WORKER_DEVICE=shared`, and `env`): the
/// pictures presented on the device and something uploaded to the first.
fn short_script_on_the_device(input: &std::ffi::OsStr, view: &str, env: &[(&str, &str)]) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/interact-short.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_exaviz"))
        .arg("bench-interact")
        .arg(input)
        .args(["--view", view, "--backend", "gpu", "--runs", "1", "--json", "--size", "1024x768", "--script", script])
        .env_remove("XDG_RUNTIME_DIR")
        .env("EXAVIZ_GPU_ROWS", "1")
        .env("EXAVIZ_WORKER_DEVICE", "shared")
        .envs(env.iter().copied())
        .output()
        .expect("exaviz runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pictures_on_device"], true, "{v}");
    // The rows (or the store's pyramid) went up with the first picture.
    assert!(v["opened_gpu_mb"].as_f64().unwrap() > 1.0, "{v}");
    v
}

/// `bench-interact --timings` times every compute pass on the device by kernel (lavapipe writes
/// timestamps), and the renderer's passes, with the bytes their bindings hold and their speed
/// of light at the bandwidth given; without it, nothing is timed.
#[test]
fn bench_interact_times_the_gpu_passes_by_kernel() {
    let args = ["bench-interact", "gen:fd4?ranks=16&messages=20000", "--view", "matrix", "--backend", "gpu"];
    let run = |timings: bool| -> serde_json::Value {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_exaviz"));
        cmd.args(args).args(["--runs", "1", "--json", "--size", "400x300"]).env("EXAVIZ_GPU_BANDWIDTH_GBS", "100");
        if timings {
            cmd.arg("--timings");
        }
        let out = cmd.output().expect("exaviz runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert!(run(false)["gpu_passes"].is_null());
    let v = run(true);
    let passes = v["gpu_passes"].as_array().unwrap();
    // The matrix's cells counted from the messages kept on the device.
    let bins = passes.iter().find(|p| p["kernel"] == "matrix_bin").unwrap_or_else(|| panic!("{v}"));
    // The renderer's passes too: a picture each at least, binding at least its pixels.
    let render = passes.iter().find(|p| p["kernel"] == "render").unwrap_or_else(|| panic!("{v}"));
    assert!(render["passes"].as_u64().unwrap() >= 2 && render["bound_mb"].as_f64().unwrap() >= 0.48, "{render}");
    assert!(bins["passes"].as_u64().unwrap() >= 1 && bins["device_ms"].as_f64().unwrap() > 0.0, "{bins}");
    // 100 GB/s: 10 ms a GB bound.
    let (mb, light) = (bins["bound_mb"].as_f64().unwrap(), bins["light_ms"].as_f64().unwrap());
    assert!(mb > 0.0 && (light - mb / 100.0).abs() < 1e-9, "{bins}");
}

/// `bench-interact` reports what each gesture moved between the host and the GPU: on the GPU
/// path a gesture that draws a new picture uploads and reads back something, a hover neither;
/// on the CPU path nothing moves.
#[test]
fn bench_interact_reports_what_gestures_move_to_and_from_the_gpu() {
    let input = "gen:fd4?ranks=64&messages=20000";
    let report = |backend: &str| -> serde_json::Value {
        let args = ["bench-interact", input, "--view", "timeline", "--backend", backend, "--runs", "1", "--json"];
        let out = exaviz(&[&args[..], &["--size", "400x300"]].concat());
        assert!(out.status.success(), "{backend}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let moved = |v: &serde_json::Value, kind: &str, what: &str| -> f64 {
        let g = v["gestures"].as_array().unwrap().iter().find(|g| g["gesture"] == kind).unwrap();
        g[what]["max"].as_f64().unwrap()
    };
    let gpu = report("gpu");
    assert!(gpu["opened_gpu_mb"].as_f64().unwrap() > 0.0, "the first picture uploads: {gpu}");
    for what in ["gpu_upload_mb", "gpu_readback_mb"] {
        assert!(moved(&gpu, "wheel", what) > 0.0, "{what}: {gpu}");
    }
    // A hover draws nothing new: it reads back at most the words its tooltip shows.
    assert_eq!(moved(&gpu, "hover", "gpu_upload_mb"), 0.0, "{gpu}");
    assert!(moved(&gpu, "hover", "gpu_readback_mb") <= 64e-6, "{gpu}");
    // Headless, each new picture is read back at least once (400x300 RGBA, rows padded to a
    // multiple of 256 bytes: 0.5376 MB).
    assert!(moved(&gpu, "wheel", "gpu_readback_mb") >= 0.5376, "{gpu}");
    let cpu = report("cpu");
    assert_eq!(cpu["opened_gpu_mb"].as_f64(), Some(0.0));
    for what in ["gpu_upload_mb", "gpu_readback_mb"] {
        assert_eq!(moved(&cpu, "wheel", what), 0.0, "{what}: the CPU path moves nothing");
    }
}

/// Perfetto's own trace processor diff tests (`../shared/corpus/perfetto-difftests`: 31
/// TrackEvent traces and what Perfetto reads from each) read as Perfetto reads them, by the
/// corpus's own checker: every case passes (the store-level checks too where the Python that
/// runs it has pyarrow).
#[test]
fn perfettos_own_diff_tests_read_as_perfetto_reads_them() {
    let Some(check) = exaviz_model::testing::shared_data("../corpus/perfetto-difftests/check.py") else { return };
    let out = Command::new("python3")
        .arg(&check)
        .arg(env!("CARGO_BIN_EXE_exaviz"))
        .output()
        .expect("python3 runs the corpus's checker");
    let text = String::from_utf8_lossy(&out.stdout);
    let passed: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("ok ")).map(str::trim).collect();
    let must = [
        // slices: instants (TYPE_INSTANT, legacy I and R, on the sequence's thread, on a process
        // by their scope, on a thread by the legacy pid and tid overrides), a pid reused by a
        // later process, typed arguments
        "te_instant_slices",
        "te_same_tids_slices",
        "te_tracks_slices",
        "te_typed_args_slices",
        "trace_bounds_unfinished",
        "te_callstacks",
        // nesting: an instant at its parent's end nests in it
        "descendant_boundary_instant",
        "descendant_adjacent_stacks",
        "relationship_tables",
        // interning
        "chrome_log_message",
        "interned_debug_annotation",
        "gpu_api_slices",
        // track names: the descriptor in force at the first event, the last one where merging is
        // off, an unnamed track called by its first event
        "te_track_name_resolution",
        "te_track_name_resolution_extended",
        "te_track_name_null_override",
        "te_monotonic_trace_clock",
        "flow_chain_unfinished",
        // counters: a thread's time and instruction count (built-in types, the legacy fields),
        // defaults kept across a cleared state, incremental values per sequence, counters alone
        "te_counters",
        "te_incremental_counter_sequences",
        "counter_track_parent",
        // clocks: legacy microsecond timestamps (absolute, and deltas on the thread descriptor's
        // reference) on the monotonic clock, put on the snapshots' primary trace clock; one whose
        // nanoseconds overflow dropped
        "te_absolute_timestamp_us_overflow",
        "te_delta_timestamp_overflow",
        "streaming_profile_delta_overflow",
        // flows: terminating ids, a flow on an end event binding the slice it ends, direction by
        // the slices' start, the legacy phases s/t/f (the enclosing or the next slice) and
        // bind_id with its direction
        "te_flow_ids",
        "flow_direction_by_timestamp",
        "te_flow_legacy_v1",
        "te_flow_legacy_v2",
        // legacy async events (S, F, T, p) on the track of their id; the range of interest
        "te_legacy_async_event",
        "te_range_of_interest",
        // atrace slices (ftrace print events) on their thread's track, or beside it where the
        // track asks not to be merged with system tracks
        "te_with_atrace",
        "te_with_atrace_separate_tracks",
    ];
    let missing: Vec<&str> = must.iter().copied().filter(|c| !passed.contains(c)).collect();
    assert!(missing.is_empty(), "{missing:?} fail:\n{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(passed.len() >= 31 && must.len() == 31, "{} of 31 pass:\n{text}", passed.len());
}
