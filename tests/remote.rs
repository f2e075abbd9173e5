//! A store explored from `exaviz serve`: every view draws the same picture from the server as
//! from the local store, on both backends, out of core (the pyramid, then each window's rows
//! over the wire) and whole; a lost server leaves one line and the dataset usable.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Selection;
use exaviz_remote::server::{Served, spawn};
use exaviz_tests::gpu;
use exaviz_views::Frame;
use exaviz_views::contract::render_view;

const FRAME: Frame = Frame { width: 800, height: 600 };

/// A store of `input` in a folder of its own.
/// The bytes received are counted for the whole process ([`exaviz_remote::bytes_received`]), so
/// the tests that talk to a server take turns: another test's traffic would be counted as this
/// one's.
static WIRE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn wire_to_myself() -> std::sync::MutexGuard<'static, ()> {
    WIRE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn store(name: &str, input: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("exaviz-remote-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    exaviz_datasets::convert(input, &dir.join("s.exaviz"), &|_, _| {}).unwrap();
    dir
}

/// Every view that draws `local` draws the same pixels from `remote` over the whole trace and
/// over a short window, on `backend`; returns the views compared.
fn same_pictures(local: &Dataset, remote: &Dataset, backend: &Backend) -> Vec<&'static str> {
    let span = local.out_of_core.as_ref().map_or_else(|| local.trace.span().unwrap_or((0, 1)), |o| o.span);
    let seconds = (span.1 - span.0) as f64 / local.trace.ticks_per_second.max(1) as f64;
    let short = Selection { window_s: Some((seconds * 0.4, seconds * 0.41)), ..Selection::default() };
    let mut drawn = Vec::new();
    for entry in exaviz_views::REGISTRY {
        let view = entry.parse::<&str>(&[]).unwrap().view;
        if view.check(local).is_err() {
            assert!(view.check(remote).is_err(), "{} refuses the local store only", entry.name);
            continue;
        }
        for selection in [Selection::default(), short] {
            let a = render_view(view.as_ref(), local, &selection, FRAME, backend).map_err(|e| e.to_string());
            let b = render_view(view.as_ref(), remote, &selection, FRAME, backend).map_err(|e| e.to_string());
            match (a, b) {
                (Ok(a), Ok(b)) => assert!(a.pixels == b.pixels, "{} over {:?} differs", entry.name, selection.window_s),
                (Err(a), Err(b)) => assert_eq!(a, b, "{}", entry.name),
                (a, b) => panic!("{}: local {:?}, remote {:?}", entry.name, a.err(), b.err()),
            }
        }
        drawn.push(entry.name);
    }
    drawn
}

#[test]
fn every_view_draws_the_same_picture_from_a_server_as_from_the_local_store() {
    let _wire = wire_to_myself();
    let dir = store("views", "gen:fd4?ranks=64&messages=300000");
    let path = dir.join("s.exaviz");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let url = server.url("s.exaviz");
    // Out of core: the pyramid from the head, each window's rows from the server.
    let local = exaviz_store::open_with(&path, &|_, _| {}, 0).unwrap();
    let before = exaviz_remote::bytes_received();
    let remote = exaviz_remote::client::open_with(&url, &|_, _| {}, 0).unwrap();
    assert!(remote.out_of_core.is_some());
    let head = exaviz_remote::bytes_received() - before;
    let events = std::fs::metadata(path.join("messages.parquet")).unwrap().len()
        + std::fs::metadata(path.join("intervals.parquet")).unwrap().len();
    assert!(head < events, "the head ({head} bytes) holds no rows ({events} bytes of them)");
    let (r, l) = (remote.out_of_core.as_ref().unwrap(), local.out_of_core.as_ref().unwrap());
    assert_eq!(r.span, l.span);
    // What the pictures of long windows are drawn from.
    assert!(r.pyramid == l.pyramid);
    let _ = gpu();
    for backend in [Backend::Cpu, Backend::new(exaviz_compute::BackendChoice::Gpu).expect("a GPU adapter")] {
        let drawn = same_pictures(&local, &remote, &backend);
        for name in ["timeline", "matrix", "chord", "mpi", "sendrecv"] {
            assert!(drawn.contains(&name), "{name} not drawn: {drawn:?}");
        }
    }
    // Whole: every file, read into memory as the local store is (with its index).
    let local = exaviz_datasets::open(path.to_str().unwrap()).unwrap();
    let remote = exaviz_remote::open(&url, &|_, _| {}).unwrap();
    assert!(remote.out_of_core.is_none() && local.out_of_core.is_none());
    assert_eq!(remote.trace.messages.send_time, local.trace.messages.send_time);
    same_pictures(&local, &remote, &Backend::Cpu);
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Pans and zooms: a window beside the last one fetched asks only for the time it uncovers, one
/// inside it for nothing, and every window's rows are the local store's, in its order.
#[test]
fn windows_beside_the_last_fetch_only_what_they_uncover_and_equal_the_local_rows() {
    let _wire = wire_to_myself();
    let dir = store("beside", "gen:fd4?ranks=256&messages=400000");
    let path = dir.join("s.exaviz");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let local = exaviz_store::open_with(&path, &|_, _| {}, 0).unwrap();
    let remote = exaviz_remote::client::open_with(&server.url("s.exaviz"), &|_, _| {}, 0).unwrap();
    let (l, r) = (local.out_of_core.as_ref().unwrap(), remote.out_of_core.as_ref().unwrap());
    let span = l.span;
    let at = |f: f64| span.0 + ((span.1 - span.0) as f64 * f) as u64;
    let mut wire = Vec::new();
    for (a, b) in [
        (0.40, 0.42),
        (0.41, 0.43),
        (0.39, 0.41),
        (0.395, 0.40),
        (0.38, 0.45),
        (0.7, 0.71),
        (0.69, 0.705),
        (0.0, 1.0),
        (0.4, 0.41),
        (0.0, 1.0),
        (0.4, 0.41),
    ] {
        let w = (at(a), at(b));
        let before = exaviz_remote::bytes_received();
        assert_eq!(r.rows.estimate(w) <= contract_budget(), l.rows.estimate(w) <= contract_budget());
        let (rm, ri) = r.rows.read(w).unwrap();
        wire.push(exaviz_remote::bytes_received() - before);
        let (lm, li) = l.rows.read(w).unwrap();
        assert!(
            same_messages(&rm, &lm) && same_intervals(&ri, &li),
            "window {a}-{b}: {} and {} rows, {} and {} locally",
            rm.send_time.len(),
            ri.start.len(),
            lm.send_time.len(),
            li.start.len()
        );
    }
    // A pan by half the window sends about half of what the first window did; a zoom in nothing.
    assert!(wire[1] * 10 < wire[0] * 7, "{wire:?}");
    assert_eq!(wire[3], 0, "{wire:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn same_messages(a: &exaviz_model::Messages, b: &exaviz_model::Messages) -> bool {
    (&a.source, &a.destination, &a.send_time, &a.recv_time, &a.bytes, &a.tag)
        == (&b.source, &b.destination, &b.send_time, &b.recv_time, &b.bytes, &b.tag)
}

fn same_intervals(a: &exaviz_model::Intervals, b: &exaviz_model::Intervals) -> bool {
    (&a.location, &a.start, &a.end, &a.kind, &a.depth) == (&b.location, &b.start, &b.end, &b.kind, &b.depth)
}

fn contract_budget() -> u64 {
    exaviz_views::contract::ROW_BUDGET
}

/// A window read after the server went away fails in one line naming the lost connection; the
/// pyramid's pictures still draw.
#[test]
fn a_lost_server_leaves_one_line_and_the_pyramid_drawn() {
    let _wire = wire_to_myself();
    let dir = store("lost", "gen:fd4?ranks=16&messages=20000");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let remote = exaviz_remote::client::open_with(&server.url("s.exaviz"), &|_, _| {}, 0).unwrap();
    drop(server);
    let ooc = remote.out_of_core.as_ref().unwrap();
    let e = ooc.rows.read(ooc.span).unwrap_err();
    assert!(e.contains("connection") && !e.contains('\n'), "{e}");
    let timeline = exaviz_views::REGISTRY.iter().find(|e| e.name == "timeline").unwrap();
    let view = timeline.parse::<&str>(&[]).unwrap().view;
    let short = Selection { window_s: Some((0.0, 1e-6)), ..Selection::default() };
    let e = render_view(view.as_ref(), &remote, &short, FRAME, &Backend::Cpu).err().unwrap().to_string();
    assert!(e.contains("connection") && !e.contains('\n'), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
