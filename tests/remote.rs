//! A store explored from `exaviz serve`: every view draws the same picture from the server as
//! from the local store, on both backends, out of core (the pyramid, then each window's rows
//! over the wire) and whole; a lost server leaves one line and the dataset usable.

use exaviz_compute::Backend;
use exaviz_model::dataset::{Cells, CellsAsk, Dataset};
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

/// Every view that draws `local` draws the same pixels from `remote` (opened afresh for each
/// view: a client holding a window's rows draws them rather than asking for its cells) over
/// the whole trace and over a short window, on `backend`; returns the views compared.
fn same_pictures(local: &Dataset, remote: &dyn Fn() -> Dataset, backend: &Backend) -> Vec<&'static str> {
    let span = local.out_of_core.as_ref().map_or_else(|| local.trace.span().unwrap_or((0, 1)), |o| o.span);
    let seconds = (span.1 - span.0) as f64 / local.trace.ticks_per_second.max(1) as f64;
    let short = Selection { window_s: Some((seconds * 0.4, seconds * 0.41)), ..Selection::default() };
    let mut drawn = Vec::new();
    for entry in exaviz_views::REGISTRY {
        let view = entry.parse::<&str>(&[]).unwrap().view;
        let remote = &remote();
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

/// A local store's rows that also draw a dense window's cells here, as `exaviz serve` does
/// beside its store: what a picture from a server is compared with.
#[derive(Debug)]
struct CellsHere {
    store: Dataset,
}

impl exaviz_model::dataset::WindowRows for CellsHere {
    fn estimate(&self, window: (u64, u64)) -> u64 {
        self.rows().estimate(window)
    }
    fn read(&self, window: (u64, u64)) -> Result<(exaviz_model::Messages, exaviz_model::Intervals), String> {
        self.rows().read(window)
    }
    fn cells(&self, ask: &CellsAsk) -> Option<Result<std::sync::Arc<Cells>, String>> {
        let n = self.rows().estimate(ask.window);
        if n <= ask.above || n > contract_budget() {
            return None;
        }
        let rows = || self.store.window_rows(ask.window);
        match exaviz_views::timeline::window_cells(&self.store, ask, rows) {
            Ok(cells) => cells.map(|c| Ok(std::sync::Arc::new(c))),
            Err(e) => Some(Err(e.to_string())),
        }
    }
}

impl CellsHere {
    fn rows(&self) -> &dyn exaviz_model::dataset::WindowRows {
        self.store.out_of_core.as_ref().unwrap().rows.as_ref()
    }

    /// `store` (opened out of core) drawing a dense window's cells itself.
    fn wrap(store: Dataset) -> Dataset {
        let mut d = store.clone();
        d.out_of_core.as_mut().unwrap().rows = std::sync::Arc::new(CellsHere { store });
        d
    }
}

#[test]
fn every_view_draws_the_same_picture_from_a_server_as_from_the_local_store() {
    let _wire = wire_to_myself();
    let dir = store("views", "gen:fd4?ranks=64&messages=300000");
    let path = dir.join("s.exaviz");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let url = server.url("s.exaviz");
    // Out of core: the pyramid from the head, each window's rows from the server (a window
    // denser than the picture as its cells, drawn here from the store's rows as there).
    let local = CellsHere::wrap(exaviz_store::open_with(&path, &|_, _| {}, 0).unwrap());
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
        let drawn = same_pictures(&local, &|| exaviz_remote::client::open_with(&url, &|_, _| {}, 0).unwrap(), &backend);
        for name in ["timeline", "matrix", "chord", "mpi", "sendrecv"] {
            assert!(drawn.contains(&name), "{name} not drawn: {drawn:?}");
        }
    }
    // Whole: every file, read into memory as the local store is (with its index).
    let local = exaviz_datasets::open(path.to_str().unwrap()).unwrap();
    let remote = exaviz_remote::open(&url, &|_, _| {}).unwrap();
    assert!(remote.out_of_core.is_none() && local.out_of_core.is_none());
    assert_eq!(remote.trace.messages.send_time, local.trace.messages.send_time);
    same_pictures(&local, &|| remote.clone(), &Backend::Cpu);
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

/// A window holding more rows than the picture has pixels travels as the picture's cells, in
/// one round trip and a fraction of the rows' bytes, and draws what the store draws from the
/// same cells; a sparser window brings its rows; a search (which needs the rows) too.
#[test]
fn a_dense_window_travels_as_its_cells() {
    let _wire = wire_to_myself();
    let dir = store("cells", "gen:fd4?ranks=4096&messages=600000&slow_rank=3000");
    let path = dir.join("s.exaviz");
    let server = spawn(Served::new(std::slice::from_ref(&dir), std::time::Duration::ZERO).unwrap()).unwrap();
    let local = CellsHere::wrap(exaviz_store::open_with(&path, &|_, _| {}, 0).unwrap());
    let remote = exaviz_remote::client::open_with(&server.url("s.exaviz"), &|_, _| {}, 0).unwrap();
    let timeline = exaviz_views::REGISTRY.iter().find(|e| e.name == "timeline").unwrap();
    let view = timeline.parse::<&str>(&[]).unwrap().view;
    let whole = Selection::default();
    let ask = view.cells_ask(&remote, &whole, FRAME).expect("the timeline draws cells");
    let ooc = local.out_of_core.as_ref().unwrap();
    let n = ooc.rows.estimate(ask.window);
    assert!(n > ask.above && n <= contract_budget(), "{n} rows for {} pixels", ask.above);
    // The cells, then the rows, of the whole trace.
    let before = exaviz_remote::bytes_received();
    let b = render_view(view.as_ref(), &remote, &whole, FRAME, &Backend::Cpu).unwrap();
    let cells_wire = exaviz_remote::bytes_received() - before;
    let a = render_view(view.as_ref(), &local, &whole, FRAME, &Backend::Cpu).unwrap();
    assert!(a.pixels == b.pixels, "the served cells draw another picture");
    let r = remote.out_of_core.as_ref().unwrap();
    let before = exaviz_remote::bytes_received();
    let (m, v) = r.rows.read(ask.window).unwrap();
    let rows_wire = exaviz_remote::bytes_received() - before;
    assert_eq!((m.send_time.len() + v.start.len()) as u64, n);
    assert!(cells_wire * 4 < rows_wire, "cells {cells_wire} bytes, rows {rows_wire}");
    // What the cells hold: every location grouped once, the slow rank apart, lines counted.
    let cells = r.rows.cells(&ask).unwrap().unwrap();
    let (groups, apart, opened) = cells.groups.clone().expect("4,096 ranks on fewer rows are grouped");
    assert_eq!(groups.iter().map(Vec::len).sum::<usize>() + apart.len() + opened.len(), 4096);
    assert!(apart.contains(&3000), "{apart:?}");
    assert!(cells.lines.iter().any(|&k| k > 0) && cells.slot.iter().any(|&s| s != exaviz_model::dataset::NO_SLOT));
    assert_eq!(cells.rows, n);
    let prepared = exaviz_views::contract::prepare(view.as_ref(), &remote, &whole, FRAME, &Backend::Cpu).unwrap();
    let scene = prepared.draw(&remote, &whole);
    assert!(scene.outline.title.contains("drawn where they lie"), "{}", scene.outline.title);
    // A pixel's tooltip reads its cell: its state, its lines, and what it was drawn from.
    let [x0, y0, w, h] = ask.plot;
    let at = [(x0 + w / 2) as f32, (y0 + h * 3 / 4) as f32];
    let pick = prepared.pick(&remote, at).expect("a pixel of the plot");
    assert!(pick.lines.iter().any(|l| l.starts_with("state: ") || l == "no state"), "{:?}", pick.lines);
    let drawn = format!("from the window's {} rows", exaviz_views::labels::thousands(n as usize));
    assert!(pick.lines.iter().any(|l| l.contains(&drawn)), "{:?}", pick.lines);
    let here = exaviz_views::contract::prepare(view.as_ref(), &local, &whole, FRAME, &Backend::Cpu).unwrap();
    assert_eq!(here.pick(&local, at).map(|p| p.lines), Some(pick.lines));
    let labels: Vec<&str> = scene.outline.rows.iter().map(|r| r.label.as_str()).collect();
    assert!(labels.iter().any(|l| l.contains("3000")), "the slow rank's row is labelled: {labels:?}");
    // A search needs the rows: none of it is drawn from cells.
    let search = Selection { search: Some(exaviz_model::selection::Search::new("MPI_Wait").unwrap()), ..whole };
    assert!(view.cells_ask(&remote, &search, FRAME).is_none());
    // Nor does a picture larger than a server draws cells for (a wall's canvas).
    let wall = Frame { width: 16_000, height: 4_000 };
    assert!(view.cells_ask(&remote, &whole, wall).is_none());
    // A short window holds fewer rows than pixels: its rows travel.
    let seconds = (r.span.1 - r.span.0) as f64 / remote.trace.ticks_per_second.max(1) as f64;
    let short = Selection { window_s: Some((seconds * 0.4, seconds * 0.405)), ..whole };
    let ask = view.cells_ask(&remote, &short, FRAME).unwrap();
    assert!(r.rows.cells(&ask).is_none() && ooc.rows.cells(&ask).is_none());
    let a = render_view(view.as_ref(), &local, &short, FRAME, &Backend::Cpu).unwrap();
    let b = render_view(view.as_ref(), &remote, &short, FRAME, &Backend::Cpu).unwrap();
    assert!(a.pixels == b.pixels);
    drop(server);
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
