//! A store explored from `exaviz serve`: every view draws the same picture from the server as
//! from the local store, on both backends, out of core (the pyramid, then each window's rows
//! over the wire) and whole; a lost server leaves one line and the dataset usable.

use exaviz_engine::Backend;
use exaviz_engine::dataset::Dataset;
use exaviz_engine::selection::Selection;
use exaviz_engine::views::Frame;
use exaviz_engine::views::contract::render_view;
use exaviz_remote::server::{Served, spawn};
use exaviz_tests::gpu;

const FRAME: Frame = Frame { width: 800, height: 600 };

/// A store of `input` in a folder of its own.
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
    for entry in exaviz_engine::views::REGISTRY {
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
    let dir = store("views", "gen:fd4?ranks=64&messages=300000");
    let path = dir.join("s.exaviz");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let url = server.url("s.exaviz");
    // Out of core: the pyramid from the head, each window's rows from the server.
    let local = exaviz_datasets::store::open_with(&path, &|_, _| {}, 0).unwrap();
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
    for backend in [Backend::Cpu, Backend::new(exaviz_engine::BackendChoice::Gpu).expect("a GPU adapter")] {
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

/// A window read after the server went away fails in one line naming the lost connection; the
/// pyramid's pictures still draw.
#[test]
fn a_lost_server_leaves_one_line_and_the_pyramid_drawn() {
    let dir = store("lost", "gen:fd4?ranks=16&messages=20000");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let remote = exaviz_remote::client::open_with(&server.url("s.exaviz"), &|_, _| {}, 0).unwrap();
    drop(server);
    let ooc = remote.out_of_core.as_ref().unwrap();
    let e = ooc.rows.read(ooc.span).unwrap_err();
    assert!(e.contains("connection") && !e.contains('\n'), "{e}");
    let timeline = exaviz_engine::views::REGISTRY.iter().find(|e| e.name == "timeline").unwrap();
    let view = timeline.parse::<&str>(&[]).unwrap().view;
    let short = Selection { window_s: Some((0.0, 1e-6)), ..Selection::default() };
    let e = render_view(view.as_ref(), &remote, &short, FRAME, &Backend::Cpu).err().unwrap().to_string();
    assert!(e.contains("connection") && !e.contains('\n'), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
