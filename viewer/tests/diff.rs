//! `exaviz diff` end to end: a planted slow rank named first, the recorded pair of gloo runs,
//! the performance gate's exit status, and bad input.

use std::process::{Command, Output};

fn exaviz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_exaviz")).args(args).env_remove("XDG_RUNTIME_DIR").output().expect("exaviz runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = exaviz(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The names a row points at: its own and where it lies.
fn names(row: &serde_json::Value) -> Vec<String> {
    let mut v = vec![row["name"].as_str().unwrap().to_string()];
    v.extend(row["locations"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()));
    v
}

const A: &str = "gen:wrf?iterations=20&seed=5";
const B: &str = "gen:wrf?iterations=20&seed=5&slow_rank=11";

#[test]
fn a_slow_rank_is_named_in_the_first_rows() {
    let d = json(&["diff", A, B, "--json"]);
    let top = d["top"].as_array().unwrap();
    assert!(top.iter().take(3).any(|r| names(r).iter().any(|n| n == "rank 11")), "{top:#?}");
    // Its work grew by half, nobody else's changed.
    let work = d["locations"].as_array().unwrap();
    assert_eq!(work[0]["name"], "rank 11");
    let grew = work[0]["relative"].as_f64().unwrap();
    assert!((grew - 0.5).abs() < 0.01, "{grew}");
    assert!(work[1..].iter().all(|r| r["change_s"].as_f64().unwrap() == 0.0));
    assert_eq!(work[0]["stands_out"], true);
    // compute grew on rank 11 only; everyone else waits longer.
    let regions = d["regions"].as_array().unwrap();
    let compute = regions.iter().find(|r| r["name"] == "compute").unwrap();
    assert_eq!(names(compute), ["compute", "rank 11"]);
    let wait = regions.iter().find(|r| r["name"] == "MPI_Waitall").unwrap();
    assert_eq!(wait["spread"], 15);
    assert_eq!(d["matching"]["a_steps_from"], "iterations of compute");
    assert_eq!(d["run"]["stands_out"], true);
    // The text says it too.
    let text = String::from_utf8(exaviz(&["diff", A, B]).stdout).unwrap();
    assert!(text.contains("rank 11") && text.contains("beyond the steps' variation"), "{text}");
    assert!(
        text.contains(
            "work grew most on rank 11 (+83.451 s, +50.0%, beyond the steps' variation); 15 rows wait longer"
        ),
        "{text}"
    );
}

#[test]
fn the_gate_exits_3_on_a_regression_only() {
    let out = exaviz(&["diff", A, B, "--fail-above", "5"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("B regressed") && err.contains("the run") && err.contains("region MPI_Waitall"), "{err}");
    // B faster than A, or the same: no regression.
    assert_eq!(exaviz(&["diff", B, A, "--fail-above", "5"]).status.code(), Some(0));
    assert_eq!(exaviz(&["diff", A, A, "--fail-above", "0"]).status.code(), Some(0));
    // Above the change: none either.
    assert_eq!(exaviz(&["diff", A, B, "--fail-above", "200"]).status.code(), Some(0));
}

/// The same 4-rank gloo pipeline recorded twice, balanced and with rank 3 computing 3x
/// (`scripts/record/record_gloo_pipeline.py`): rank 3's work is the change, its new operators
/// are its own, the others only wait.
#[test]
fn the_recorded_pair_names_the_slowed_rank() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/torch-gloo-pair");
    let d = json(&["diff", &format!("{dir}/even"), &format!("{dir}/slow3"), "--json"]);
    assert_eq!(d["matching"]["matched"], 16);
    assert_eq!(d["matching"]["a_steps"], 6);
    let work = d["locations"].as_array().unwrap();
    assert!(work[0]["name"].as_str().unwrap().starts_with("rank 3 "), "{:#?}", &work[..2]);
    assert!(work[0]["relative"].as_f64().unwrap() > 0.5 && work[0]["stands_out"] == true, "{:#?}", work[0]);
    assert!(d["run"]["change_s"].as_f64().unwrap() > 0.0);
    let regions = d["regions"].as_array().unwrap();
    let cat = regions.iter().find(|r| r["name"] == "aten::cat").unwrap();
    assert_eq!((cat["a"]["count"].as_u64(), cat["b"]["count"].as_u64()), (Some(0), Some(6)));
    assert!(names(cat)[1].starts_with("rank 3 "), "{cat:#?}");
    // Every step restricted: five of six.
    let five = json(&["diff", &format!("{dir}/even"), &format!("{dir}/slow3"), "--json", "--steps", "0-4"]);
    assert_eq!(five["matching"]["a_steps"], 5);
    let cat = five["regions"].as_array().unwrap().iter().find(|r| r["name"] == "aten::cat").unwrap();
    assert_eq!(cat["b"]["count"], 5);
}

#[test]
fn bad_input_gives_one_line() {
    for (args, needle) in [
        (vec!["diff", A, "/no/such/run"], "/no/such/run"),
        (vec!["diff", A, B, "--steps", "3-1"], "FIRST may not exceed LAST"),
        (vec!["diff", A, B, "--steps", "x"], "not a step number"),
        (vec!["diff", A, B, "--fail-above=-1"], "not a percentage"),
        (vec!["diff", A, B, "--from", "9999"], "empty"),
        (vec!["diff", "gen:wrf?slow_rank=16", A], "slow_rank=16"),
    ] {
        let out = exaviz(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle) && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn the_diff_view_renders_against_another_run() {
    let out = std::env::temp_dir().join(format!("exaviz-diff-view-{}.png", std::process::id()));
    let o = out.to_str().unwrap();
    let r = exaviz(&["render", A, "--view", "diff", "--against", B, "--backend", "cpu", "--size", "800x400", "-o", o]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::metadata(&out).unwrap().len() > 1000);
    std::fs::remove_file(&out).unwrap();
    for (args, needle) in [
        (vec!["render", A, "--view", "diff", "-o", o], "--against"),
        (vec!["render", A, "--view", "diff", "--against", "/no/such/run", "-o", o], "/no/such/run"),
    ] {
        let r = exaviz(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success() && err.lines().count() == 1 && err.contains(needle), "{args:?}: {err}");
        assert!(!out.exists());
    }
}
