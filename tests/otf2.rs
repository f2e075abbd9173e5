//! The native OTF2 reader against the real Score-P ping-pong traces in `../shared/data`, with the
//! reference tool `otf2-print` as the oracle, and against corrupted copies of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use exaviz_tests::shared_data_or_skip;

fn archive(data: &Path, variant: &str) -> PathBuf {
    data.join("otf2-pingpong").join(variant).join("traces.otf2")
}

/// (location, timestamp, peer, tag, bytes) of each MPI_SEND and MPI_RECV line of `otf2-print`.
fn oracle(anchor: &Path, event: &str) -> Vec<(u32, u64, u32, u32, u32)> {
    let out = match Command::new("otf2-print").arg(anchor).output() {
        Ok(o) => o,
        Err(e) if std::env::var("EXAVIZ_REQUIRE_DATA").is_ok_and(|v| v == "1") => {
            panic!("otf2-print (apt package otf2-tools) is required with EXAVIZ_REQUIRE_DATA=1: {e}")
        }
        Err(_) => {
            eprintln!("otf2-print absent: oracle comparison skipped");
            return Vec::new();
        }
    };
    let text = String::from_utf8(out.stdout).unwrap();
    let num = |s: &str| s.trim_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap();
    text.lines()
        .filter(|l| l.starts_with(event))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let field = |name: &str| f.iter().position(|&w| w == name).map(|i| num(f[i + 1])).unwrap();
            let peer = if event == "MPI_SEND" { field("Receiver:") } else { field("Sender:") };
            (num(f[1]) as u32, num(f[2]), peer as u32, field("Tag:") as u32, field("Length:") as u32)
        })
        .collect()
}

#[test]
fn ping_pong_traces_load_with_their_messages_and_metrics() {
    let Some(data) = shared_data_or_skip("otf2 ping-pong") else { return };
    for variant in ["ping-pong-otf2", "ping-pong-otf2-papi"] {
        let anchor = archive(&data, variant);
        let d = exaviz_datasets::open(anchor.to_str().unwrap()).expect("trace loads");
        let t = &d.trace;
        let m = &t.messages;
        assert_eq!(m.source.len(), 16, "{variant}: messages");
        assert_eq!(t.locations.name.len(), 2);
        // Names from the system tree (otf2-print -G: node quartz10), location group and location.
        assert_eq!(t.locations.name[1], "node quartz10 / MPI Rank 1 / Master thread", "{variant}");
        assert!(t.ticks_per_second > 2_000_000_000);
        // Every message completes after it starts, and ping-pong alternates 0 -> 1, 1 -> 0.
        for i in 0..16 {
            assert!(m.recv_time[i] > m.send_time[i] && m.recv_time[i] != u64::MAX, "{variant}: message {i}");
            assert_ne!(m.source[i], m.destination[i]);
        }
        assert_eq!(m.source.iter().filter(|&&s| s == 0).count(), 8);
        assert!(t.region_names.iter().any(|r| r == "MPI_Send"));
        assert!(t.intervals.kind.iter().any(|&k| t.region_names[k as usize] == "MPI_Recv"));
        assert!(t.intervals.start.iter().zip(&t.intervals.end).all(|(a, b)| a <= b));
        // The oracle: each message's send and receive events as otf2-print lists them.
        let sends = oracle(&anchor, "MPI_SEND");
        let recvs = oracle(&anchor, "MPI_RECV");
        if !sends.is_empty() {
            assert_eq!((sends.len(), recvs.len()), (16, 16));
            for i in 0..16 {
                let s = sends.iter().find(|s| s.1 == m.send_time[i]).expect("send time listed by otf2-print");
                assert_eq!((s.0, s.2, s.3, s.4), (m.source[i], m.destination[i], m.tag[i], m.bytes[i]));
                let r = recvs.iter().find(|r| r.1 == m.recv_time[i]);
                let r = r.unwrap_or_else(|| {
                    panic!("receive {} of message {i} not in otf2-print: {recvs:?}", m.recv_time[i])
                });
                assert_eq!((r.0, r.2, r.3, r.4), (m.destination[i], m.source[i], m.tag[i], m.bytes[i]));
            }
        }
        let metrics = &t.metrics;
        if variant.ends_with("papi") {
            assert_eq!(t.metric_names, ["PAPI_TOT_CYC", "PAPI_L2_TCM", "PAPI_BR_MSP"]);
            assert_eq!(metrics.location.len(), 84 * 3);
            // otf2-print: METRIC 0 7396895680158984 ... PAPI_TOT_CYC 98850, PAPI_L2_TCM 2191.
            let at = metrics.time.iter().position(|&t| t == 7_396_895_680_158_984).unwrap();
            assert_eq!(&metrics.value[at..at + 3], &[98_850.0, 2_191.0, 421.0]);
        } else {
            assert!(metrics.location.is_empty());
        }
    }
}

/// A copy of the ping-pong archive in a temporary folder, to damage.
struct Copy {
    dir: PathBuf,
}

impl Copy {
    fn new(data: &Path, name: &str) -> Self {
        let src = data.join("otf2-pingpong/ping-pong-otf2");
        let dir = std::env::temp_dir().join(format!("exaviz-otf2-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("traces")).unwrap();
        for f in ["traces.otf2", "traces.def", "traces/0.def", "traces/0.evt", "traces/1.def", "traces/1.evt"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        Self { dir }
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }

    fn open(&self) -> Result<exaviz_model::dataset::Dataset, String> {
        exaviz_datasets::open(self.path("traces.otf2").to_str().unwrap()).map_err(|e| e.to_string())
    }

    fn edit(&self, f: &str, change: impl FnOnce(&mut Vec<u8>)) {
        let mut bytes = std::fs::read(self.path(f)).unwrap();
        change(&mut bytes);
        std::fs::write(self.path(f), bytes).unwrap();
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn damaged_archives_get_one_line_errors() {
    let Some(data) = shared_data_or_skip("otf2 damaged") else { return };
    let one_line = |e: &str| assert!(!e.contains('\n') && e.contains("traces"), "{e}");

    let c = Copy::new(&data, "magic");
    c.edit("traces.otf2", |b| b[3] = b'X');
    let e = c.open().unwrap_err();
    assert!(e.contains("unrecognised format"), "{e}");

    let c = Copy::new(&data, "missing");
    std::fs::remove_file(c.path("traces/1.evt")).unwrap();
    let e = c.open().unwrap_err();
    one_line(&e);
    assert!(e.contains("missing event file") && e.contains("1.evt"), "{e}");

    let c = Copy::new(&data, "nodefs");
    std::fs::remove_file(c.path("traces.def")).unwrap();
    assert!(c.open().unwrap_err().contains("missing global definitions"));

    let c = Copy::new(&data, "truncated");
    c.edit("traces/0.evt", |b| b.truncate(b.len() / 2));
    let e = c.open().unwrap_err();
    one_line(&e);
    assert!(e.contains("0.evt") && (e.contains("truncated") || e.contains("cut short")), "{e}");

    // Rank 1's receives turned into an unknown record type: its sends stay unmatched.
    let c = Copy::new(&data, "unmatched");
    c.edit("traces/1.evt", |b| {
        let mut i = 0;
        while i + 10 < b.len() {
            if b[i] == 0x12 && b[i + 1] == 0x08 && b[i - 1] == 0x00 {
                b[i] = 0x63;
            }
            i += 1;
        }
    });
    // As otf2-print lists it: the trace opens, the sends without their receive left out and
    // counted in one warning line.
    let d = c.open().unwrap();
    let kept = d.trace.messages.source.len();
    assert!((8..16).contains(&kept), "rank 1's 8 sends and those of rank 0 still received: {kept}");
    assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    let dropped = format!("{} sends without a matching receive left out", 16 - kept);
    assert!(d.warnings[0].contains(&dropped), "{:?}", d.warnings);
}

/// A record stamped earlier than the one before it (a clock stepped back): otf2-print lists
/// it where it stands; it opens with the earlier time taken as the one before, counted.
#[test]
fn a_time_stepping_back_is_repaired_and_counted() {
    let Some(data) = shared_data_or_skip("otf2 time back") else { return };
    let c = Copy::new(&data, "backwards");
    c.edit("traces/1.evt", |b| {
        // Timestamp records: type 5, then the time as 8 bytes, near the first one's.
        let first = u64::from_le_bytes(b[19..27].try_into().unwrap());
        let near = |i: usize| {
            b[i] == 5 && i + 9 <= b.len() && {
                let t = u64::from_le_bytes(b[i + 1..i + 9].try_into().unwrap());
                t > first && t - first < 1 << 40
            }
        };
        let second = (27..b.len() - 9).find(|&i| near(i)).expect("a second time stamp");
        b[second + 1..second + 9].copy_from_slice(&(first - 1).to_le_bytes());
    });
    let d = c.open().unwrap();
    assert_eq!(d.trace.messages.source.len(), 16, "every message kept");
    assert!(
        d.warnings.iter().any(|w| w.contains("1 events stamped earlier than the event before them")),
        "{:?}",
        d.warnings
    );
    let t = &d.trace.intervals;
    assert!(t.start.iter().zip(&t.end).all(|(a, b)| a <= b));
}

/// The Score-P stencil trace's repaired paths (leaves out of nesting order, a leave of a region
/// not entered) with bytes flipped in the event file that holds them: a trace or one line.
#[test]
fn flipped_bytes_in_repaired_regions_never_panic() {
    let Some(data) = shared_data_or_skip("otf2 stencil flips") else { return };
    let src = data.join("otf2-stencil-32r");
    let dir = std::env::temp_dir().join(format!("exaviz-otf2-stencil-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    for e in std::fs::read_dir(src.join("traces")).unwrap().flatten() {
        std::fs::copy(e.path(), dir.join("traces").join(e.file_name())).unwrap();
    }
    let open = || exaviz_datasets::open(dir.join("traces.otf2").to_str().unwrap()).map_err(|e| e.to_string());
    assert!(open().unwrap().warnings.iter().any(|w| w.contains("leaves out of nesting order")));
    let evt = dir.join("traces/0.evt");
    let original = std::fs::read(&evt).unwrap();
    let (mut opened, mut refused) = (0, 0);
    for i in (0..original.len()).step_by((original.len() / 300).max(1)) {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = original.clone();
            b[i] ^= x;
            std::fs::write(&evt, &b).unwrap();
            match open() {
                Ok(d) => {
                    let t = &d.trace;
                    assert!(t.intervals.start.iter().zip(&t.intervals.end).all(|(a, b)| a <= b));
                    opened += 1;
                }
                Err(e) => {
                    assert!(!e.contains('\n'), "{e}");
                    refused += 1;
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(opened > 50 && refused > 50, "{opened} opened, {refused} refused");
}

/// Flipping any byte of an event or definition file gives a trace or an error, never a panic.
#[test]
fn flipped_bytes_never_panic() {
    let Some(data) = shared_data_or_skip("otf2 flips") else { return };
    let c = Copy::new(&data, "flips");
    let mut errors = 0;
    for f in ["traces/0.evt", "traces/0.def", "traces.def"] {
        let original = std::fs::read(c.path(f)).unwrap();
        let step = (original.len() / 400).max(1);
        for i in (0..original.len()).step_by(step) {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = original.clone();
                b[i] ^= x;
                std::fs::write(c.path(f), &b).unwrap();
                if let Err(e) = c.open() {
                    assert!(!e.contains('\n'), "{e}");
                    errors += 1;
                }
            }
        }
        std::fs::write(c.path(f), &original).unwrap();
    }
    assert!(errors > 100, "corruptions should mostly be caught ({errors})");
}

/// Progress goes up to the event files' total size and ends there.
#[test]
fn loading_reports_progress_over_the_event_files() {
    let Some(data) = shared_data_or_skip("otf2 progress") else { return };
    let anchor = archive(&data, "ping-pong-otf2");
    let seen = std::cell::RefCell::new(Vec::new());
    exaviz_datasets::open_with_progress(anchor.to_str().unwrap(), &|done, total| seen.borrow_mut().push((done, total)))
        .unwrap();
    let seen = seen.into_inner();
    let evt_bytes: u64 = std::fs::read_dir(anchor.with_extension(""))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "evt"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(evt_bytes > 0);
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen.iter().all(|&(_, t)| t == evt_bytes), "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert_eq!(seen.last(), Some(&(evt_bytes, evt_bytes)));
}

/// OTF2 into a store and back: the same summary, messages, intervals and metric samples.
#[test]
fn otf2_traces_round_trip_through_a_store() {
    let Some(data) = shared_data_or_skip("otf2 store round trip") else { return };
    let dir = std::env::temp_dir().join(format!("exaviz-otf2-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for variant in ["ping-pong-otf2", "ping-pong-otf2-papi"] {
        let anchor = archive(&data, variant);
        let d = exaviz_datasets::open(anchor.to_str().unwrap()).unwrap();
        let store = dir.join(format!("{variant}.exaviz"));
        let m = exaviz_datasets::convert(anchor.to_str().unwrap(), &store, &|_, _| {}).unwrap();
        assert_eq!(m.rows("messages"), 16);
        let back = exaviz_datasets::open(store.to_str().unwrap()).unwrap();
        // The store keeps the location kinds with everything else of the summary.
        assert_eq!(d.summary(), back.summary(), "{variant}");
        assert_eq!(d.trace.locations.kind, back.trace.locations.kind, "{variant}");
        let (a, b) = (&d.trace, &back.trace);
        assert_eq!(a.locations.name, b.locations.name);
        assert_eq!(a.region_names, b.region_names);
        assert_eq!(a.metric_names, b.metric_names);
        let rows = |t: &exaviz_model::Trace| {
            let m = &t.messages;
            let mut v: Vec<_> = (0..m.source.len())
                .map(|i| (m.send_time[i], m.source[i], m.destination[i], m.recv_time[i], m.bytes[i], m.tag[i]))
                .collect();
            v.sort_unstable();
            let i = &t.intervals;
            let mut w: Vec<_> =
                (0..i.start.len()).map(|k| (i.start[k], i.location[k], i.end[k], i.kind[k], i.depth[k])).collect();
            w.sort_unstable();
            let s = &t.metrics;
            let mut x: Vec<_> =
                (0..s.time.len()).map(|k| (s.time[k], s.location[k], s.metric[k], s.value[k].to_bits())).collect();
            x.sort_unstable();
            (v, w, x)
        };
        assert_eq!(rows(a), rows(b), "{variant}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
