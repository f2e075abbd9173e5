use exaviz_model::testing::shared_data as shared;

use super::*;

fn p(text: &str) -> Result<ChromeTrace, String> {
    parse(text.as_bytes(), "t.json").map_err(|e| e.to_string())
}

#[test]
fn events_of_every_kind_become_slices_marks_counters_and_flows() {
    let t = p(r#"{"displayTimeUnit": "ns", "distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": "stream 7", "args": {"name": "compute"}},
        {"ph": "X", "name": "gemm", "cat": "kernel", "pid": 0, "tid": "stream 7", "ts": 10.5, "dur": 2.25},
        {"ph": "B", "name": "outer", "pid": "p", "tid": 1, "ts": 1},
        {"ph": "B", "name": "inner", "pid": "p", "tid": 1, "ts": 2},
        {"ph": "E", "pid": "p", "tid": 1, "ts": 3},
        {"ph": "E", "pid": "p", "tid": 1, "ts": 5},
        {"ph": "E", "pid": "p", "tid": 1, "ts": 6},
        {"ph": "B", "name": "open", "pid": "p", "tid": 2, "ts": 7},
        {"ph": "i", "name": "mark", "pid": 0, "tid": 0, "ts": 4},
        {"ph": "C", "name": "mem", "pid": 0, "ts": 4, "args": {"used": 5, "free": 7.5}},
        {"ph": "s", "id": 9, "name": "send", "pid": 0, "tid": 0, "ts": 4},
        {"ph": "f", "id": 9, "bp": "e", "name": "recv", "pid": "p", "tid": 1, "ts": 4.75}
    ]}"#)
    .unwrap();
    assert_eq!(t.display_time_unit.as_deref(), Some("ns"));
    assert_eq!(t.distributed.as_ref().unwrap()["world_size"], 2);
    let gemm = &t.slices[0];
    assert_eq!((gemm.start_ns, gemm.dur_ns), (10_500, 2_250));
    let lane = &t.lanes[gemm.lane as usize];
    assert_eq!((lane.pid.as_str(), lane.tid.as_str(), lane.thread.as_str()), ("0", "stream 7", "compute"));
    assert_eq!(t.lanes.iter().find(|l| l.pid == "0" && l.tid.is_empty()).unwrap().process, "GPU 0");
    let named = |s: &Slice| t.names[s.name as usize].as_str();
    let inner = t.slices.iter().find(|s| named(s) == "inner").unwrap();
    let outer = t.slices.iter().find(|s| named(s) == "outer").unwrap();
    assert_eq!((inner.start_ns, inner.dur_ns, outer.start_ns, outer.dur_ns), (2_000, 1_000, 1_000, 4_000));
    assert_eq!(t.unmatched, 2, "one E too many, one B never closed");
    assert_eq!(t.instants.len(), 1);
    assert_eq!(t.counters.len(), 2);
    assert_eq!(t.names[t.counters[1].name as usize], "mem.used");
    assert_eq!(t.flows.len(), 1);
    assert_eq!((t.flows[0].from.ts_ns, t.flows[0].to.ts_ns), (4_000, 4_750));
    // As the model: lanes with slices are locations, slices nested intervals, flows messages.
    let d = dataset(&t, "t.json");
    let tr = &d.trace;
    assert_eq!(tr.locations.name.len(), 2);
    assert!(tr.locations.name.contains(&"GPU 0 / compute".to_string()), "{:?}", tr.locations.name);
    // The three slices, and the instant on its process's first row (its thread has none).
    assert_eq!(tr.intervals.start.len(), 4);
    let depth_of = |n: &str| {
        let k = tr.region_names.iter().position(|r| r == n).unwrap() as u32;
        tr.intervals.depth[tr.intervals.kind.iter().position(|&x| x == k).unwrap()]
    };
    assert_eq!((depth_of("outer"), depth_of("inner"), depth_of("gemm")), (0, 1, 0));
    assert_eq!(tr.intervals.start.iter().min(), Some(&0), "times from the first slice");
    assert_eq!(tr.messages.source.len(), 0, "the flow starts on a lane without slices");
    // A bare array works too.
    assert_eq!(p(r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]"#).unwrap().slices.len(), 1);
}

/// Flows bind in time order, as Perfetto binds them: Kineto writes a kernel's `f` before the
/// launch's `s` (the real 8-rank DLRM run's launches become messages, CPU to GPU).
#[test]
fn flows_bind_in_time_order_not_file_order() {
    let t = p(r#"[{"ph": "X", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 2},
        {"ph": "X", "name": "launch", "pid": 9, "tid": 9, "ts": 1, "dur": 2},
        {"ph": "f", "id": 4, "bp": "e", "name": "ac2g", "pid": 0, "tid": 7, "ts": 5},
        {"ph": "s", "id": 4, "name": "ac2g", "pid": 9, "tid": 9, "ts": 1}]"#)
    .unwrap();
    assert_eq!(t.flows.len(), 1);
    assert_eq!((t.flows[0].from.ts_ns, t.flows[0].to.ts_ns), (1_000, 5_000));
    assert_eq!(dataset(&t, "t.json").trace.messages.source.len(), 1);
    if let Some(path) = shared("kineto-dlrm-8gpu/worker0_step_12.1694128201545.pt.trace.json") {
        let t = read(&path).unwrap();
        assert!(t.flows.len() >= 250, "{} flows of 261 starts", t.flows.len());
    }
}

/// `C` events are the model's counters, on the first row of their process.
#[test]
fn counters_are_counted_on_their_process_row() {
    let t = p(r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 0, "dur": 5},
        {"ph": "C", "name": "memory", "pid": 1, "ts": 1, "args": {"allocated": 1024, "reserved": 2048.4}},
        {"ph": "C", "name": "memory", "pid": 1, "ts": 3, "args": {"allocated": 512}},
        {"ph": "C", "name": "other", "pid": 9, "ts": 3, "args": {"x": 1}}]"#)
    .unwrap();
    let d = dataset(&t, "t.json");
    let counters = d.trace.counter_summaries();
    let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}: the process without rows has none");
    let allocated = counters.iter().find(|c| c.name.contains("allocated")).unwrap();
    assert_eq!((allocated.samples, allocated.min, allocated.max), (2, 512.0, 1024.0));
    assert!(d.trace.metrics.location.iter().all(|&l| l == 0));
}

/// Kineto's `[memory]` instants (as PyTorch writes them with `profile_memory=True`) are the
/// allocator's totals per device, in bytes, on the row of the thread that allocated.
#[test]
fn kineto_memory_events_are_counters_per_device() {
    let t = p(r#"[{"ph": "X", "name": "a", "pid": 7, "tid": 1, "ts": 0, "dur": 5},
        {"ph": "X", "name": "b", "pid": 7, "tid": 2, "ts": 0, "dur": 5},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 2, "ts": 1,
         "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Device Id": 0,
                  "Device Type": 1, "Addr": 140000}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 2, "ts": 2,
         "args": {"Total Reserved": 0, "Total Allocated": 4096, "Bytes": 4096, "Device Id": -1,
                  "Device Type": 0, "Addr": 150000}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 2, "ts": 3,
         "args": {"Total Reserved": 2097152, "Total Allocated": 0, "Bytes": -512, "Device Id": 0,
                  "Device Type": 1, "Addr": 140000}},
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": 2, "ts": 4, "args": {"Bytes": 1}}]"#)
    .unwrap();
    let d = dataset(&t, "t.json");
    let counters = d.trace.counter_summaries();
    let get = |n: &str| counters.iter().find(|c| c.name == n).unwrap_or_else(|| panic!("{n} in {counters:?}"));
    let cuda = get("memory allocated (cuda:0)");
    assert_eq!((cuda.samples, cuda.min, cuda.max, cuda.unit.as_str()), (2, 0.0, 512.0, "B"));
    assert_eq!(get("memory reserved (cuda:0)").max, 2_097_152.0);
    assert_eq!(get("memory allocated (CPU)").max, 4096.0);
    assert_eq!(counters.len(), 4, "an event without totals gives none: {counters:?}");
    assert!(d.trace.metrics.location.iter().all(|&l| l == 1), "on the allocating thread's row");
    assert_eq!(t.instants.len(), 4, "still instants too");
}

#[test]
fn bad_traces_are_one_line_naming_the_position() {
    let e = p(r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "soon"}]"#).unwrap_err();
    assert!(e.starts_with("t.json: is not a trace near byte") && e.contains("'soon' is not a number"), "{e}");
    let e = p(r#"[{"ph": "X", "ts": 1}, {"ph": "#).unwrap_err();
    assert!(e.contains("ends too early near byte 30 "), "{e}");
    let e = p("[{\"ph\": \"X\", \"ts\": 1}, {\"ph\": \"X\", \"ts\": 2").unwrap_err();
    assert!(e.contains("ends too early"), "{e}");
    let e = p("[{\"ph\": \"X\", \"ts\": 1}, {\"ph\": \"X\", \"args\": {\"a\": [1]},\n").unwrap_err();
    assert!(e.contains("ends too early"), "{e}");
    // An object's event array left open is a truncated file.
    let e = p(r#"{"traceEvents": [{"ph": "X", "ts": 1},"#).unwrap_err();
    assert!(e.contains("ends too early"), "{e}");
    let e = p(r#"{"traceEvents": [{"ph": "X", "ts": 1}]} trailing"#).unwrap_err();
    assert!(e.contains("is not a trace") && !e.contains('\n'), "{e}");
    assert!(p("[]").unwrap_err().contains("holds no trace events"));
    assert!(p("7").unwrap_err().contains("is not a trace"));
}

#[test]
fn what_peers_accept_is_repaired_and_counted() {
    let t = p(r#"[{}, {"ph": "X", "name": "a", "pid": "7", "tid": "1", "ts": "10.5", "dur": "2"},
        {"ph": "X", "name": "b", "pid": 7, "tid": 1, "dur": 1}, {}]"#)
    .unwrap();
    assert_eq!(t.slices.len(), 1);
    assert_eq!((t.slices[0].start_ns, t.slices[0].dur_ns), (10_500, 2_000));
    assert_eq!(t.repairs.count("empty events skipped"), 2);
    assert_eq!(t.repairs.count("events without a time stamp (ts) skipped"), 1);
    assert_eq!(t.repairs.count("times written as strings read as numbers"), 2);
    assert_eq!(t.repairs.count("process or thread ids written as strings"), 1);
    assert_eq!(t.lanes.len(), 1, "pid \"7\" and 7 are one process");
    let lines = t.repairs.lines("t.json");
    assert!(lines.contains(&"t.json: 2 empty events skipped (first: event 0)".to_string()), "{lines:?}");
    // The array format's closing bracket is optional, with or without a comma before it.
    let event = r#"{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}"#;
    for text in [format!("[{event}"), format!("[{event},\n"), format!("[\n{event},\n{event}, \n\n")] {
        let t = p(&text).unwrap();
        assert!(!t.slices.is_empty());
        assert_eq!(t.repairs.count("event array without its closing ] read to the end"), 1, "{text}");
    }
    let closed = p(&format!("[{event}]\n")).unwrap();
    assert!(closed.repairs.is_empty(), "a closed array is not repaired");
}

/// The real Kineto and PerfFlowAspect traces read whole.
#[test]
fn real_kineto_and_perfflow_traces_read() {
    if let Some(path) = shared("kineto/sampled_rank-0.json.gz") {
        let t = read(&path).unwrap();
        assert_eq!(t.distributed.as_ref().unwrap()["rank"], 0);
        assert!(t.slices.len() >= 4_000, "{}", t.slices.len());
        assert!(t.lanes.iter().any(|l| !l.thread.is_empty() || !l.process.is_empty()));
    }
    if let Some(path) = shared("kineto/nccl_data.json.gz") {
        let t = read(&path).unwrap();
        let nccl = t.slices.iter().filter(|s| t.names[s.name as usize].contains("nccl")).count();
        assert!(nccl > 0, "NCCL kernels in the 2-rank trace");
    }
    if let Some(path) = shared("perfflow/perfflow.lassen19.108800.pfw") {
        let t = read(&path).unwrap();
        assert!(t.slices.len() > 1_000 && t.unmatched == 0, "{} slices", t.slices.len());
    }
}

/// Parsing in place (files read whole) gives what parsing through a reader gives, on every
/// real Chrome trace.
#[test]
fn in_place_parsing_gives_the_streamed_trace() {
    let rels = [
        "kineto/sampled_rank-0.json.gz",
        "kineto/nccl_data.json.gz",
        "rocprofiler-chrome/memcpy-host-device.rocprofiler.json.gz",
        "perfflow/perfflow.lassen19.108800.pfw",
        "kineto-dlrm-8gpu/worker0_step_12.1694128201545.pt.trace.json",
    ];
    for rel in rels {
        let Some(path) = shared(rel) else { return };
        let raw = std::fs::read(&path).unwrap();
        let mut plain = Vec::new();
        if raw.starts_with(&[0x1f, 0x8b]) {
            flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut plain).unwrap();
        } else {
            plain = raw;
        }
        let streamed = format!("{:?}", parse(&plain[..], rel).unwrap());
        let in_place = format!("{:?}", parse_bytes(&plain, rel).unwrap());
        assert!(streamed == in_place, "{rel}: parsed in place, another trace");
        assert_eq!(format!("{:?}", read(&path).unwrap()), streamed, "{rel}");
    }
}

/// Only the arguments read are kept: a kernel's correlation as a number, the collective
/// fields, a communication call's tensors, XLA's pairs in any string; not the others.
#[test]
fn slices_keep_only_the_arguments_read() {
    let t = p(r#"[{"ph": "X", "name": "ncclKernel", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
          "args": {"correlation": 42, "grid": [1, 2, 3], "Collective name": "allreduce", "dtype": "Float"}},
        {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
          "args": {"Input Dims": [[2, 2]], "External id": 5}},
        {"ph": "X", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
          "args": {"Input Dims": [[2, 2]], "Input type": ["float"]}},
        {"ph": "X", "name": "cp.1", "pid": 2, "tid": 1, "ts": 1, "dur": 1,
          "args": {"xla": "x = collective-permute(y), source_target_pairs={{0,1}}"}},
        {"args": {"Input Dims": [[1]]}, "ph": "X", "name": "c10d::send", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "C", "name": "mem", "pid": 0, "ts": 4, "args": {"used": 5}}]"#)
    .unwrap();
    let args = |i: usize| t.slices[i].args.as_deref().map(|a| a.to_string()).unwrap_or_default();
    assert_eq!(t.slices[0].correlation, Some(42));
    assert_eq!(args(0), r#"{"Collective name":"allreduce","dtype":"Float"}"#);
    assert_eq!(args(1), "", "a computation's tensors are not read");
    assert_eq!(args(2), r#"{"Input Dims":[[2,2]],"Input type":["float"]}"#);
    assert!(args(3).contains("source_target_pairs={{0,1}}"), "{}", args(3));
    assert_eq!(args(4), r#"{"Input Dims":[[1]]}"#, "args before the phase: all kept");
    assert_eq!(t.counters.len(), 1);
}

/// The real traces, flipped byte by byte and cut short (before and after decompression):
/// an error or a trace, never a panic. rocprofiler's goes through the repaired paths (an
/// empty event, numbers as strings).
#[test]
fn mutated_traces_never_panic() {
    for rel in ["kineto/sampled_rank-1.json.gz", "rocprofiler-chrome/memcpy-host-device.rocprofiler.json.gz"] {
        let Some(path) = shared(rel) else { return };
        let gz = std::fs::read(&path).unwrap();
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
        let plain = &plain[..plain.len().min(60_000)];
        let mut cases = 0;
        for (bytes, step) in [(&gz[..], gz.len() / 200), (plain, plain.len() / 400)] {
            for i in (0..bytes.len()).step_by(step.max(1)) {
                for x in [0x01u8, 0x80, 0xff] {
                    let mut b = bytes.to_vec();
                    b[i] ^= x;
                    let r = std::panic::catch_unwind(|| {
                        let dir = std::env::temp_dir().join(format!("exaviz-chrome-{}-{i}-{x}", std::process::id()));
                        std::fs::write(&dir, &b).unwrap();
                        let out = read(&dir).map(|t| t.slices.len());
                        std::fs::remove_file(&dir).ok();
                        out.map_err(|e| e.to_string())
                    });
                    assert!(r.is_ok(), "{rel}: byte {i} ^ {x:#x} panicked");
                    if let Ok(Err(e)) = r {
                        assert!(!e.contains('\n'), "{e}");
                    }
                    cases += 1;
                }
            }
            for cut in [0, bytes.len() / 3, bytes.len() - 1] {
                assert!(std::panic::catch_unwind(|| parse(&bytes[..cut], "cut").is_ok()).is_ok());
            }
        }
        assert!(cases > 1000, "{rel}: {cases}");
    }
}

/// Instants of a thread are slices of no duration nested in the slice open on their row (one
/// at a slice's end still inside it); a process-scoped one lands on its process's first row;
/// global ones lie on no row and Kineto's memory samples are not instants. The instants table
/// keeps every instant with its scope, category and argument count.
#[test]
fn instants_are_slices_of_no_duration_on_their_rows() {
    let t = p(r#"{"traceEvents": [
        {"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": 10, "dur": 10},
        {"ph": "X", "name": "other", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 12, "cat": "user", "args": {"a": 1, "b": [2]}},
        {"ph": "i", "name": "edge", "pid": 1, "tid": 1, "ts": 20, "s": "t"},
        {"ph": "I", "name": "proc", "pid": 1, "tid": 2, "ts": 14, "s": "p"},
        {"ph": "i", "args": {"x": 1}, "name": "everywhere", "pid": 1, "tid": 1, "ts": 13, "s": "g"},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 15, "args": {"Total Allocated": 8}}
    ]}"#)
    .unwrap();
    let d = dataset(&t, "t.json");
    let tr = &d.trace;
    let rows = crate::events::interval_rows(tr);
    for want in [(0, 2_000, 2_000, "mark", 1), (0, 10_000, 10_000, "edge", 1), (0, 4_000, 4_000, "proc", 1)] {
        assert!(rows.contains(&want), "{want:?} not in {rows:?}");
    }
    assert!(!rows.iter().any(|r| r.3 == "everywhere" || r.3 == "[memory]"), "{rows:?}");
    // The table: time order, each with its row (none for the global one), scope, category and
    // argument count (counted where read before the phase was known, too).
    use exaviz_model::{InstantScope::*, NO_ROW};
    let i = &tr.instants;
    let named = |k: usize| tr.region_names[i.name[k] as usize].as_str();
    let category = |k: usize| tr.instant_categories[i.category[k] as usize].as_str();
    let table: Vec<_> =
        (0..i.len()).map(|k| (named(k), i.location[k], i.time[k], i.scope[k], category(k), i.args[k])).collect();
    assert_eq!(
        table,
        [
            ("mark", 0, 2_000, Thread, "user", 2),
            ("everywhere", NO_ROW, 3_000, Global, "", 1),
            ("proc", 0, 4_000, Process, "", 0),
            ("edge", 0, 10_000, Thread, "", 0),
        ]
    );
}

/// Async events (nestable `b`/`e`/`n`, legacy `S`/`F`) are slices and instants on a row of
/// their process per category and id, named by the first event there, as Perfetto puts them
/// on async tracks; they were dropped. Ids of one name that never overlap share a row.
#[test]
fn async_events_are_slices_on_a_row_per_id() {
    let t = p(r#"{"traceEvents": [
        {"ph": "X", "name": "main", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "b", "name": "request", "cat": "net", "id": "0x1", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "b", "name": "parse", "cat": "net", "id": "0x1", "pid": 1, "tid": 1, "ts": 20},
        {"ph": "n", "name": "headers", "cat": "net", "id": "0x1", "pid": 1, "tid": 1, "ts": 25, "args": {"n": 3}},
        {"ph": "e", "name": "parse", "cat": "net", "id": "0x1", "pid": 1, "tid": 1, "ts": 30},
        {"ph": "e", "name": "request", "cat": "net", "id": "0x1", "pid": 1, "tid": 1, "ts": 50},
        {"ph": "S", "name": "load", "cat": "io", "id": 7, "pid": 1, "tid": 1, "ts": 40},
        {"ph": "F", "name": "load", "cat": "io", "id": 7, "pid": 1, "tid": 1, "ts": 90},
        {"ph": "b", "name": "request", "cat": "net", "id": "0x2", "pid": 1, "tid": 1, "ts": 60},
        {"ph": "e", "name": "request", "cat": "net", "id": "0x2", "pid": 1, "tid": 1, "ts": 70},
        {"ph": "b", "name": "request", "cat": "net", "id": "0x3", "pid": 1, "tid": 1, "ts": 45},
        {"ph": "e", "name": "request", "cat": "net", "id": "0x3", "pid": 1, "tid": 1, "ts": 80}
    ]}"#)
    .unwrap();
    assert_eq!(t.unmatched, 0);
    let d = dataset(&t, "t.json");
    let tr = &d.trace;
    let row = |n: &str| {
        tr.locations.name.iter().position(|x| x.ends_with(n)).unwrap_or_else(|| panic!("{:?}", tr.locations.name))
            as u32
    };
    let (request, load) = (row("/ request"), row("/ load"));
    assert_ne!(request, load);
    // 0x2 (60-70) shares 0x1's row (10-50); 0x3 (45-80) overlaps both and has a row of its own.
    let named = tr.locations.name.iter().filter(|n| n.ends_with("/ request")).count();
    assert_eq!((tr.locations.name.len(), named), (4, 2), "{:?}", tr.locations.name);
    let rows = crate::events::interval_rows(tr);
    for want in [
        (request, 10_000, 50_000, "request", 0),
        (request, 20_000, 30_000, "parse", 1),
        (request, 25_000, 25_000, "headers", 2),
        (load, 40_000, 90_000, "load", 0),
        (request, 60_000, 70_000, "request", 0),
    ] {
        assert!(rows.contains(&want), "{want:?} not in {rows:?}");
    }
    let i = &tr.instants;
    assert_eq!((i.len(), i.location[0], i.args[0]), (1, request, 1));
    assert_eq!(tr.instant_categories[i.category[0] as usize], "net");
}
