//! The viewer under Xvfb on lavapipe: it opens a window, presents frames, and a screenshot of
//! the X screen shows the view (not a blank screen). Needs xvfb-run and ImageMagick's `import`
//! (the test command installs them; the linked-selection test also needs xdotool); without them
//! these tests fail rather than skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn require(tools: &[&str]) {
    for tool in tools {
        let found =
            Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success());
        assert!(found, "{tool} is missing: apt-get install xvfb xauth imagemagick (the README's test command does)");
    }
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("exaviz-window-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Asserts that a screenshot's picture is the render it should show: the same size, fewer than
/// 1% of the pixels far apart (presentation may round colours).
fn assert_shows(shot: &[[u8; 3]], expected: &[[u8; 3]]) {
    assert_eq!(shot.len(), expected.len(), "screenshot size");
    let differ = far_pixels(shot, expected);
    assert!(differ * 100 < shot.len(), "{differ} of {} pixels differ from the headless render", shot.len());
}

#[test]
fn viewer_presents_frames_and_the_screenshot_is_not_blank() {
    screenshot_shows_the_view("ring", "'gen:torus-sim?dims=4x4x4&steps=20&seed=3'");
}

/// The MPI views are pictures copied into the surface; the timeline is recomputed on zoom.
#[test]
fn viewer_shows_the_timeline_and_sendrecv_pictures() {
    screenshot_shows_the_view("timeline", "'gen:wrf?iterations=3' --view timeline");
    screenshot_shows_the_view("sendrecv", "'gen:lulesh?iterations=3' --view sendrecv");
}

/// Without an adapter (or with `--backend cpu`) the viewer draws on the CPU path through
/// softbuffer: the same pictures, after one warning line where an adapter was wanted.
#[test]
fn viewer_draws_on_the_cpu_path_without_an_adapter() {
    screenshot_shows_the_view("timeline-cpu", "'gen:wrf?iterations=3' --view timeline --backend cpu");
    screenshot_shows_the_view("ring-cpu", "'gen:torus-sim?dims=4x4x4&steps=20&seed=3' --backend cpu");
    require(&["xvfb-run"]);
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let dir = scratch("fallback");
    // No Vulkan or GL adapter is visible with only DX12 allowed (as on a machine without a GPU).
    let script = format!(
        "WGPU_BACKEND=dx12 \"{exe}\" view 'gen:lulesh?iterations=3' --view chord --size 320x240 --frames 3\n\
         echo auto=$?\n\
         WGPU_BACKEND=dx12 \"{exe}\" view 'gen:lulesh?iterations=3' --view chord --backend gpu --frames 3\n\
         echo gpu=$?\n"
    );
    let (_, log) = in_xvfb("640x480", &dir, &script);
    assert!(log.contains("auto=0") && log.contains("gpu=1"), "{log}");
    let warnings: Vec<&str> = log.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains("drawing on the CPU path"), "{log}");
    assert!(log.contains("presented 3 frames") && log.contains("--backend cpu draws without one"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    std::fs::remove_dir_all(&dir).ok();
}

fn screenshot_shows_the_view(name: &str, args: &str) {
    screenshot_with(name, "", args);
}

/// The window keeps the timeline's pictures on its GPU device where its worker shares it (on a
/// GPU of its own; lavapipe asks for it with `EXAVIZ_WORKER_DEVICE=shared`), the timeline drawn
/// there from its rows (`EXAVIZ_GPU_ROWS=1`): each frame moves the picture and draws its
/// overlays on the device, the screenshot shows the view, and of the 40 frames' pictures
/// (480x360, 0.69 MB each) nothing is read back but the legend's numbers.
#[test]
fn the_window_presents_pictures_kept_on_its_device() {
    let env = "EXAVIZ_WORKER_DEVICE=shared EXAVIZ_GPU_ROWS=1";
    let log = screenshot_with("timeline-device", env, "'gen:wrf?iterations=3' --view timeline");
    let line = log.lines().find(|l| l.starts_with("the window's GPU device:")).unwrap_or_else(|| panic!("{log}"));
    let numbers: Vec<f64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(numbers.len(), 2, "{line}");
    assert!(numbers[1] < 0.01, "read back {} MB: {line}", numbers[1]);
    assert!(numbers[0] > 0.0, "{line}");
}

/// [`screenshot_shows_the_view`] with `env` (`NAME=VALUE ...`) set for the viewer; its log.
fn screenshot_with(name: &str, env: &str, args: &str) -> String {
    require(&["xvfb-run", "import"]);
    let dir = scratch(name);
    let shot = dir.join("shot.png");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    // Inside Xvfb: a first run presents 40 frames and exits cleanly; a second keeps presenting
    // while a screenshot of the root window is taken, then is stopped.
    let script = format!(
        "set -e\n\
         {env} \"{exe}\" view {args} --size 480x360 --frames 40\n\
         {env} \"{exe}\" view {args} --size 480x360 --frames 100000000 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 3\n\
         import -window root {shot}\n\
         kill $pid || {{ echo 'the viewer had exited:' >&2; cat {log} >&2; exit 1; }}\n\
         cat {log} >&2\n",
        log = dir.join("viewer.log").display(),
        shot = shot.display(),
    );
    let start = Instant::now();
    let (ok, log) = in_xvfb("800x480", &dir, &script);
    assert!(ok, "viewer run failed: {log}");
    assert!(start.elapsed() < Duration::from_secs(300));
    assert!(log.contains("presented 40 frames"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    // The screenshot: decode and check it shows more than a blank screen.
    let (buf, channels) = decode(&shot);
    assert!(channels >= 3, "the screenshot is greyscale: the window looks blank");
    let mut colours: Vec<Vec<u8>> = buf.chunks(channels).map(|p| p[..3].to_vec()).collect();
    // The view's dark background fills much of the window.
    let background = colours.iter().filter(|p| p[0] == 17 && p[1] == 19 && p[2] == 24).count();
    assert!(background > 10_000, "background pixels: {background}");
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "only {} distinct colours: the window looks blank", colours.len());
    std::fs::remove_dir_all(&dir).ok();
    log
}

/// Linked selection in the window (TorusVisND): under Xvfb, `xdotool` brushes a range on a
/// parallel-coordinates axis, picks a node on the ring, drags a time slice on the river, presses
/// `t` to track the node's message and drags with the right button to zoom the ring; the viewer
/// reports each new shared state, and its window then shows what `exaviz render --view linked`
/// draws for that state. `c` clears it. The points are found with the engine's own
/// picking functions, so the test follows the layout.
#[test]
fn linked_selection_follows_the_mouse_under_xvfb() {
    use exaviz_views::linked::panels;
    use exaviz_views::ring::{RingOptions, ring_node_at};
    use exaviz_views::themeriver::themeriver_tick_at;
    require(&["xvfb-run", "import", "xdotool"]);
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let (w, h) = (1000u32, 640u32);
    let d = exaviz_datasets::open(input).unwrap();
    let topo = d.topology.as_ref().unwrap();
    let [(_, ring), (_, pc), (_, river)] = panels(w, h);

    // A brush on axis Y from coordinate 1 to coordinate 2.
    let (axis_x, brush_a, brush_b) = axis_y_brush(topo, pc);

    // A node on the ring within the selection.
    let opts = RingOptions { width: ring[2], height: ring[3], ..Default::default() };
    let (pick, node) = (0..ring[3])
        .step_by(5)
        .flat_map(|y| (0..ring[2]).step_by(5).map(move |x| [x, y]))
        .find_map(|[x, y]| {
            let v = ring_node_at(topo, &opts, [x as f32, y as f32])?;
            (1..=2).contains(&topo.coord(v as usize)[1]).then_some(([x, y], v))
        })
        .expect("a node on the ring");

    // A slice from 30% to 60% across the river.
    let ry = river[1] + river[3] / 2;
    let (sa, sb) = (river[0] + river[2] * 3 / 10, river[0] + river[2] * 6 / 10);
    let tick = |x: u32| themeriver_tick_at(&d, river[2], river[3], [(x - river[0]) as f32, (ry - river[1]) as f32]);
    let (ta, tb) = (tick(sa).unwrap(), tick(sb).unwrap());
    assert!(ta < tb);

    // A zoom (right button) into the ring's upper left quarter.
    let (zx0, zy0, zx1, zy1) = (ring[2] / 5, ring[3] / 5, ring[2] / 2, ring[3] * 9 / 20);

    let dir = scratch("linked");
    let (log, shot, expected) = (dir.join("viewer.log"), dir.join("shot.png"), dir.join("expected.png"));
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let select = "Y=1-2 (32 nodes)";
    let coord = format!("{:?}", topo.coord(node as usize));
    let script = format!(
        "set -e\n\
         wait_for() {{ for i in $(seq 1 600); do [ $(grep -c '^linked:' {log}) -ge $1 ] && return 0; sleep 0.1; done; return 1; }}\n\
         \"{exe}\" view '{input}' --view linked --size {w}x{h} --frames 100000000 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 1\n\
         wid=$(xdotool search --name exaviz | head -1)\n\
         xdotool mousemove --window $wid {axis_x} {brush_a} mousedown 1 mousemove --window $wid {axis_x} {mid} mousemove --window $wid {axis_x} {brush_b} mouseup 1\n\
         wait_for 1\n\
         xdotool mousemove --window $wid {px} {py} click 1\n\
         wait_for 2\n\
         xdotool mousemove --window $wid {sa} {ry} mousedown 1 mousemove --window $wid {sm} {ry} mousemove --window $wid {sb} {ry} mouseup 1\n\
         wait_for 3\n\
         xdotool windowfocus $wid key t\n\
         wait_for 4\n\
         xdotool mousemove --window $wid {zx0} {zy0} mousedown 3 mousemove --window $wid {zxm} {zym} mousemove --window $wid {zx1} {zy1} mouseup 3\n\
         wait_for 5\n\
         xdotool mousemove --window $wid 1 1\n\
         sleep 4\n\
         import -window $wid {shot}\n\
         xdotool windowfocus $wid key c\n\
         wait_for 6\n\
         kill $pid\n\
         \"{exe}\" render '{input}' --view linked --size {w}x{h} --select Y=1-2 --node {node} --time-slice {ta}:{tb} \
           --track {node} --zoom {zx0},{zy0},{zx1},{zy1} -o {expected}\n\
         cat {log} >&2\n",
        log = log.display(),
        shot = shot.display(),
        expected = expected.display(),
        mid = (brush_a + brush_b) / 2,
        px = pick[0],
        py = pick[1],
        sm = (sa + sb) / 2,
        zxm = (zx0 + zx1) / 2,
        zym = (zy0 + zy1) / 2,
    );
    let (ok, text) = in_xvfb("1300x700", &dir, &script);
    assert!(ok, "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("linked: ")).collect();
    assert_eq!(
        lines,
        [
            format!("linked: selection {select}"),
            format!("linked: selection {select}; node {node} {coord}"),
            format!("linked: selection {select}; node {node} {coord}; slice {ta} to {tb}"),
            format!(
                "linked: selection {select}; node {node} {coord}; slice {ta} to {tb}; tracking node {node}'s message"
            ),
            format!(
                "linked: selection {select}; node {node} {coord}; slice {ta} to {tb}; tracking node {node}'s message; \
                 zoom {zx0},{zy0},{zx1},{zy1}"
            ),
            "linked: nothing selected".to_string(),
        ],
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
    // The window showed the linked state: the same picture as the headless render (up to
    // presentation), and not the unselected one. (The pointer rests in a corner, where there is
    // no tooltip.)
    let (shot, expected) = (picture(&shot, w), read_rgb(&expected));
    assert_shows(&shot, &expected);
    std::fs::remove_dir_all(&dir).ok();
}

/// A point on the node selector's axis Y (of panel `pc`) at coordinate 1.5 and one at 2.5: the
/// axis' column and the two heights.
fn axis_y_brush(topo: &exaviz_model::Topology, pc: [u32; 4]) -> (u32, u32, u32) {
    use exaviz_views::parcoords::parcoords_axis_at;
    let mut on_y = Vec::new();
    for x in pc[0]..pc[0] + pc[2] {
        for y in (pc[1]..pc[1] + pc[3]).step_by(2) {
            let q = [(x - pc[0]) as f32, (y - pc[1]) as f32];
            if let Some((1, c)) = parcoords_axis_at(topo, pc[2], pc[3], q) {
                on_y.push((x, y, c));
            }
        }
    }
    let axis_x = on_y.iter().map(|p| p.0).sum::<u32>() / on_y.len() as u32;
    let at = |lo: f32, hi: f32| on_y.iter().find(|p| p.0 == axis_x && p.2 > lo && p.2 < hi).map(|p| p.1).unwrap();
    (axis_x, at(1.3, 1.7), at(2.3, 2.7))
}

/// Shell functions for scripts that drive the panel, reading the viewer's log `log`
/// (`EXAVIZ_PANEL_LOG`): `at WHAT` clicks what the log places (`panel: WHAT at X Y`) once it
/// appears, `wait_log LINE` waits for a line starting so.
fn panel_helpers(log: &str) -> String {
    format!(
        "set -e\n\
         at() {{ for i in $(seq 1 300); do grep -q \"^panel: $1 at\" {log} 2>/dev/null && break; sleep 0.1; done; \
                 set -- $(grep \"^panel: $1 at\" {log} | tail -1 | sed 's/.* at //'); \
                 xdotool mousemove --window $wid $1 $2 click 1; }}\n\
         wait_log() {{ for i in $(seq 1 300); do grep -q \"^$1\" {log} && return 0; sleep 0.1; done; return 1; }}\n"
    )
}

/// Runs a shell script in a fresh Xvfb screen (WIDTHxHEIGHT, 24-bit): whether it succeeded, and
/// its standard output and error.
fn in_xvfb(screen: &str, runtime_dir: &Path, script: &str) -> (bool, String) {
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", &format!("-screen 0 {screen}x24"), "sh", "-c", script])
        .env("XDG_RUNTIME_DIR", runtime_dir)
        .output()
        .expect("xvfb-run starts");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The 8-bit samples of a PNG file and its channel count.
fn decode(path: &Path) -> (Vec<u8>, usize) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (buf, reader.output_color_type().0.samples())
}

/// The RGB pixels of a PNG file.
fn read_rgb(path: &Path) -> Vec<[u8; 3]> {
    let (buf, channels) = decode(path);
    buf.chunks(channels).map(|p| [p[0], p[1], p[2]]).collect()
}

/// How many pixels of two RGB pictures differ by more than 8 in some channel.
fn far_pixels(a: &[[u8; 3]], b: &[[u8; 3]]) -> usize {
    a.iter().zip(b).filter(|(p, q)| p.iter().zip(*q).any(|(x, y)| x.abs_diff(*y) > 8)).count()
}

/// The picture part (the left `width` columns) of a window screenshot: the panel is beside it.
fn picture(path: &Path, width: u32) -> Vec<[u8; 3]> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let full = png::Decoder::new(std::io::BufReader::new(file)).read_info().unwrap().info().width;
    assert!(full >= width, "the window ({full} pixels wide) is narrower than the picture ({width})");
    let rgb = read_rgb(path);
    rgb.chunks(full as usize).flat_map(|row| row[..width as usize].to_vec()).collect()
}

/// Exploring without blocking, with real X input: hovering a matrix cell shows a tooltip, a click
/// on it selects its pair (the log says so); on the timeline, a wheel step changes the screen at
/// once while the worker is still computing (slowed to 3 s a picture here), and the finished
/// picture then replaces the preview.
#[test]
fn hover_click_and_wheel_respond_while_the_worker_computes() {
    require(&["xvfb-run", "import", "xdotool"]);
    let dir = scratch("explore");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let shot = |k: &str| dir.join(format!("{k}.png")).display().to_string();
    let log = dir.join("viewer.log").display().to_string();
    let tlog = dir.join("timeline.log").display().to_string();
    // The matrix of 8 ranks at 640x480: cells are about 40 pixels; cell (sender 2, receiver 5).
    let p = exaviz_views::plot::Plot::inside(640, 480, [80, 56, 170, 52]).unwrap();
    let side = p.w.min(p.h) / 8;
    let (cx, cy) = (p.x0 + side * 5 + side / 2, p.y0 + side * 2 + side / 2);
    let script = format!(
        "set -e\n\
         \"{exe}\" view 'gen:lulesh?iterations=3' --view matrix --size 640x480 --frames 100000000 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 2\n\
         for i in $(seq 1 300); do wid=$(xdotool search --name exaviz | head -1); [ -n \"$wid\" ] && break; sleep 0.1; done\n\
         xdotool mousemove --window $wid 5 5\n\
         sleep 0.5\n\
         import -window $wid {before}\n\
         xdotool mousemove --window $wid {cx} {cy}\n\
         sleep 0.5\n\
         import -window $wid {hover}\n\
         xdotool click 1\n\
         for i in $(seq 1 100); do grep -q 'selected:' {log} && break; sleep 0.1; done\n\
         kill $pid\n\
         wait $pid || true\n\
         cd {dir}\n\
         EXAVIZ_WORKER_DELAY_MS=3000 \"{exe}\" view 'gen:wrf?iterations=3' --view timeline --size 640x480 --frames 100000000 2> {tlog} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {tlog} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 5\n\
         for i in $(seq 1 300); do wid=$(xdotool search --name exaviz | head -1); [ -n \"$wid\" ] && break; sleep 0.1; done\n\
         [ -n \"$wid\" ] || {{ echo 'no timeline window after 30 s:' >&2; cat {tlog} >&2; exit 1; }}\n\
         import -window $wid {t0}\n\
         xdotool mousemove --window $wid 300 240 click 4 click 4\n\
         sleep 0.7\n\
         import -window $wid {t1}\n\
         sleep 5\n\
         import -window $wid {t2}\n\
         xdotool windowfocus $wid key w\n\
         sleep 0.7\n\
         import -window $wid {t3}\n\
         xdotool windowfocus $wid key s\n\
         xdotool windowfocus $wid key ctrl+s\n\
         for i in $(seq 1 100); do grep -q 'saved exaviz-view' {tlog} && break; sleep 0.1; done\n\
         kill $pid\n\
         cat {log} {tlog} >&2\n",
        before = shot("before"),
        hover = shot("hover"),
        t0 = shot("t0"),
        t1 = shot("t1"),
        t2 = shot("t2"),
        t3 = shot("t3"),
        dir = dir.display(),
    );
    let (ok, text) = in_xvfb("1000x600", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(text.contains("selected: pair 2 -> 5"), "the click selects the cell's pair: {text}");
    // The tooltip: a box of its background colour appears beside the pointer.
    let (before, hover) = (picture(Path::new(&shot("before")), 640), picture(Path::new(&shot("hover")), 640));
    let tooltip = |img: &[[u8; 3]]| img.iter().filter(|p| **p == [23, 26, 33]).count();
    assert!(tooltip(&hover) > tooltip(&before) + 1000, "no tooltip: {} vs {}", tooltip(&hover), tooltip(&before));
    // The wheel: the screen changed within 0.7 s though each picture takes over 3 s, and the
    // finished picture then differs from the preview.
    let (t0, t1, t2) = (
        picture(Path::new(&shot("t0")), 640),
        picture(Path::new(&shot("t1")), 640),
        picture(Path::new(&shot("t2")), 640),
    );
    let differ = |a: &[[u8; 3]], b: &[[u8; 3]]| a.iter().zip(b).filter(|(x, y)| x != y).count();
    assert!(differ(&t0, &t1) > 5000, "the preview did not move: {} pixels changed", differ(&t0, &t1));
    assert!(differ(&t1, &t2) > 1000, "the finished picture did not replace the preview");
    // Perfetto's keys: W zooms at once (the preview), S zooms out and does not save; Ctrl+S saves.
    let t3 = picture(Path::new(&shot("t3")), 640);
    assert!(differ(&t2, &t3) > 5000, "w did not zoom: {} pixels changed", differ(&t2, &t3));
    assert_eq!(text.matches("saved exaviz-view").count(), 1, "ctrl+s saves once, s does not: {text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The linked MPI views in the window, with real X input: a click on a matrix cell selects that
/// pair and highlights its messages on the timeline above (white lines appear in the timeline's
/// plot), and a second click clears it again.
#[test]
fn a_matrix_click_highlights_the_pairs_messages_on_the_timeline() {
    use exaviz_views::mpi::panels;
    use exaviz_views::plot::Plot;
    require(&["xvfb-run", "import", "xdotool"]);
    let (w, h) = (900u32, 560u32);
    let [t, m, _] = panels(w, h);
    let p = Plot::inside(m[2], m[3], [80, 56, 170, 52]).unwrap();
    let side = p.w.min(p.h) / 16;
    // Cell of sender 3 (row), receiver 7 (column).
    let (cx, cy) = (m[0] + p.x0 + side * 7 + side / 2, m[1] + p.y0 + side * 3 + side / 2);
    let plot = exaviz_views::timeline::plot_rect(t[2], t[3]).unwrap();
    let dir = scratch("mpi");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let shot = |k: &str| dir.join(format!("{k}.png")).display().to_string();
    let log = dir.join("viewer.log").display().to_string();
    let script = format!(
        "set -e\n\
         \"{exe}\" view 'gen:wrf?iterations=3' --view mpi --size {w}x{h} --frames 100000000 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 3\n\
         wid=$(xdotool search --name exaviz | head -1)\n\
         xdotool mousemove --window $wid 1 1\n\
         sleep 0.5\n\
         import -window $wid {before}\n\
         xdotool mousemove --window $wid {cx} {cy} click 1\n\
         for i in $(seq 1 100); do grep -q 'selected: pair' {log} && break; sleep 0.1; done\n\
         xdotool mousemove --window $wid 1 1\n\
         sleep 3\n\
         import -window $wid {after}\n\
         xdotool mousemove --window $wid {cx} {cy} click 1\n\
         for i in $(seq 1 100); do grep -q 'selected: nothing' {log} && break; sleep 0.1; done\n\
         kill $pid\n\
         cat {log} >&2\n",
        before = shot("before"),
        after = shot("after"),
    );
    let (ok, text) = in_xvfb("1200x700", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(text.contains("selected: pair 3 -> 7"), "{text}");
    assert!(text.contains("selected: nothing"), "a second click clears the pair: {text}");
    let white_in_plot = |path: &str| {
        let img = picture(Path::new(path), w);
        (t[1] + plot.y0..t[1] + plot.y0 + plot.h)
            .flat_map(|y| (t[0] + plot.x0..t[0] + plot.x0 + plot.w).map(move |x| (x, y)))
            .filter(|&(x, y)| img[(y * w + x) as usize].iter().all(|&c| c >= 235))
            .count()
    };
    let (before, after) = (white_in_plot(&shot("before")), white_in_plot(&shot("after")));
    assert!(after > before + 20, "no highlighted messages on the timeline: {before} -> {after} white pixels");
    std::fs::remove_dir_all(&dir).ok();
}

/// The side panel with real X input: a click on a view's button in the panel switches the
/// window to that view (the log says so, and the picture then equals what `exaviz render` draws
/// for it), and an option chosen in the panel's list redraws the view with it. The buttons'
/// places come from the viewer's own log (`EXAVIZ_PANEL_LOG`), so the test follows egui's layout.
#[test]
fn the_panel_switches_views_and_options() {
    require(&["xvfb-run", "import", "xdotool"]);
    let (w, h) = (480u32, 360u32);
    let dir = scratch("panel");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let file = |k: &str| dir.join(k).display().to_string();
    let log = file("viewer.log");
    let script = format!(
        "{helpers}\
         EXAVIZ_PANEL_LOG=1 \"{exe}\" view 'gen:wrf?iterations=3' --view matrix --size {w}x{h} --frames 100000000 2> {log} &\n\
         pid=$!\n\
         wait_log 'panel: view timeline'\n\
         sleep 1\n\
         wid=$(xdotool search --name exaviz | head -1)\n\
         at 'option --value'\n\
         at 'value --value bytes'\n\
         wait_log 'option: --value bytes'\n\
         xdotool mousemove --window $wid {rest} {h2}\n\
         sleep 4\n\
         import -window $wid {bytes_shot}\n\
         at 'view timeline'\n\
         wait_log 'view: timeline'\n\
         xdotool mousemove --window $wid {rest} {h2}\n\
         sleep 4\n\
         import -window $wid {shot}\n\
         kill $pid\n\
         \"{exe}\" render 'gen:wrf?iterations=3' --view matrix --value bytes --size {w}x{h} -o {bytes_expected}\n\
         \"{exe}\" render 'gen:wrf?iterations=3' --view timeline --size {w}x{h} -o {expected}\n\
         cat {log} >&2\n",
        helpers = panel_helpers(&log),
        shot = file("shot.png"),
        expected = file("expected.png"),
        bytes_shot = file("bytes.png"),
        bytes_expected = file("bytes-expected.png"),
        rest = w + 240,
        h2 = h - 4,
    );
    let (ok, text) = in_xvfb("900x500", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(text.contains("option: --value bytes"), "the list in the panel sets the option: {text}");
    assert!(text.contains("view: timeline"), "the click on the panel's button switches the view: {text}");
    for (shot, expected) in [("bytes.png", "bytes-expected.png"), ("shot.png", "expected.png")] {
        let (shot, expected) = (picture(Path::new(&file(shot)), w), read_rgb(Path::new(&file(expected))));
        assert_shows(&shot, &expected);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// TreeScope's interactions in the window (TreeScope), with real X input: a drag on the time
/// chart sets the active range, a drag on the histogram the traffic range, a click on a job
/// row selects the job (the range follows its span), clicks on two switches query the routes
/// between them; the window then shows what `exaviz render --view fattree` draws for that state.
/// The points are found with the view's own picking, so the test follows the layout.
#[test]
fn fattree_brushes_jobs_and_routes_follow_the_mouse_under_xvfb() {
    use exaviz_views::contract::{Entry, Frame};
    use exaviz_views::fattree::Layout;
    require(&["xvfb-run", "import", "xdotool"]);
    let input = "gen:fattree?k=8&steps=40&placement=packed";
    let (w, h) = (1100u32, 700u32);
    let d = exaviz_datasets::open(input).unwrap();
    let tree = d.fattree.clone().unwrap();
    let frame = Frame { width: w, height: h };
    let l = Layout::new(&tree, frame);
    let built = Entry::find("fattree").unwrap().parse::<&str>(&[]).unwrap();
    let prepared = built.view.prepare(&d, &built.selection, frame, &exaviz_compute::Backend::Cpu).unwrap();
    let find = |want: &dyn Fn(&str) -> bool| -> ([u32; 2], String) {
        (0..h)
            .step_by(3)
            .flat_map(|y| (0..w).step_by(3).map(move |x| [x, y]))
            .find_map(|[x, y]| {
                let p = prepared.pick(&d, [x as f32 + 1.0, y as f32 + 1.0])?;
                want(&p.title).then_some(([x + 1, y + 1], p.title))
            })
            .expect("a point to pick")
    };
    let (job_at, job_title) = find(&|t| t.starts_with("job "));
    let job: u64 = job_title["job ".len()..].parse().unwrap();
    let (src_at, src_title) = find(&|t| t.starts_with("switch ") && t.contains("L1 pod 0"));
    let (dst_at, dst_title) = find(&|t| t.starts_with("switch ") && t.contains("L1 pod 3"));
    let number = |t: &str| t["switch ".len()..].split(':').next().unwrap().parse::<u32>().unwrap();
    let (src, dst) = (number(&src_title), number(&dst_title));
    let at = |r: [f32; 4], u: f32| ((r[0] + (r[2] - r[0]) * u) as u32, ((r[1] + r[3]) / 2.0) as u32);
    let ((ta, ty), (tb, _)) = (at(l.chart, 0.3), at(l.chart, 0.6));
    let ((ha, hy), (hb, _)) = (at(l.histogram, 0.05), at(l.histogram, 0.7));

    let dir = scratch("fattree");
    let (log, shot, expected) = (dir.join("viewer.log"), dir.join("shot.png"), dir.join("expected.png"));
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let script = format!(
        "set -e\n\
         wait_for() {{ for i in $(seq 1 600); do [ $(grep -c -E '^(selected|brushed):' {log}) -ge $1 ] && return 0; sleep 0.1; done; return 1; }}\n\
         \"{exe}\" view '{input}' --view fattree --size {w}x{h} --frames 100000000 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 1\n\
         wid=$(xdotool search --name exaviz | head -1)\n\
         xdotool mousemove --window $wid {ta} {ty} mousedown 1 mousemove --window $wid {tm} {ty} mousemove --window $wid {tb} {ty} mouseup 1\n\
         wait_for 1; sleep 1\n\
         xdotool mousemove --window $wid {ha} {hy} mousedown 1 mousemove --window $wid {hm} {hy} mousemove --window $wid {hb} {hy} mouseup 1\n\
         wait_for 2; sleep 1\n\
         xdotool mousemove --window $wid {jx} {jy} click 1\n\
         wait_for 3; sleep 1\n\
         xdotool mousemove --window $wid {sx} {sy} click 1\n\
         wait_for 4; sleep 1\n\
         xdotool mousemove --window $wid {dx} {dy} click 1\n\
         wait_for 5\n\
         xdotool mousemove --window $wid 1 1\n\
         sleep 4\n\
         import -window $wid {shot}\n\
         kill $pid\n\
         cat {log} >&2\n",
        log = log.display(),
        shot = shot.display(),
        tm = (ta + tb) / 2,
        hm = (ha + hb) / 2,
        jx = job_at[0],
        jy = job_at[1],
        sx = src_at[0],
        sy = src_at[1],
        dx = dst_at[0],
        dy = dst_at[1],
    );
    let (ok, text) = in_xvfb("1500x800", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("selected: ") || l.starts_with("brushed: ")).collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("brushed: time ") && !lines[0].contains("traffic"), "{text}");
    assert!(lines[1].contains("; traffic "), "{text}");
    assert!(lines[2].contains(&format!("jobs {job}")), "{text}");
    assert!(lines[3].ends_with(&format!("route from {src}")), "{text}");
    assert!(lines[4].ends_with(&format!("route {src} -> {dst}")), "{text}");
    // The final state, read back from the log, rendered headless.
    let last = lines[4].trim_start_matches("selected: ");
    let field = |key: &str| last.split("; ").find_map(|p| p.strip_prefix(key)).unwrap().to_string();
    let (time, traffic) = (field("time "), field("traffic "));
    let (a, b) = time.split_once(':').unwrap();
    let span = exaviz_views::fattree::jobs_span(&tree, &[job]).unwrap();
    assert_eq!((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()), span, "the job's span became the range");
    let out = Command::new(exe)
        .args(["render", input, "--view", "fattree", "--size", &format!("{w}x{h}"), "--time", &time, "--traffic"])
        .arg(&traffic)
        .args(["--job", &job.to_string(), "--route", &format!("{src},{dst}"), "-o"])
        .arg(&expected)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (shot, expected) = (picture(&shot, w), read_rgb(&expected));
    assert_shows(&shot, &expected);
    std::fs::remove_dir_all(&dir).ok();
}

/// A 2x2 powerwall as four windows of one process (`exaviz wall`), under Xvfb with real X
/// input: frames are presented to all four together and logged in order; each window shows its
/// rectangle of the canvas (the engine's render of that region); a drag on one tile pans all
/// four, which then show the panned canvas's regions.
#[test]
fn wall_windows_present_together_and_a_drag_on_one_tile_moves_all() {
    use exaviz_render::View;
    require(&["xvfb-run", "import", "xdotool"]);
    let dir = scratch("wall");
    let wall = dir.join("wall.toml");
    std::fs::write(&wall, "columns = 2\nrows = 2\ntile = [240, 160]\nmullion = [10, 8]\n").unwrap();
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let log = dir.join("wall.log");
    let shots = |tag: &str| {
        ["0,0", "1,0", "0,1", "1,1"]
            .iter()
            .map(|t| {
                format!(
                    "wid=$(xdotool search --name 'exaviz wall {t}' | head -1); import -window $wid {}\n",
                    dir.join(format!("{tag}_{t}.png")).display()
                )
            })
            .collect::<String>()
    };
    let script = format!(
        "set -e\n\
         \"{exe}\" wall --config {wall} '{input}' --backend cpu --frames 5\n\
         \"{exe}\" wall --config {wall} '{input}' --backend cpu 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'frame 1:' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 1\n\
         {before}\
         wid=$(xdotool search --name 'exaviz wall 1,1' | head -1)\n\
         xdotool mousemove --window $wid 150 100 mousedown 1 mousemove --window $wid 135 90 mousemove --window $wid 120 80 mouseup 1\n\
         for i in $(seq 1 300); do grep -q '^pan:' {log} && break; sleep 0.1; done\n\
         sleep 2\n\
         {after}\
         kill $pid\n\
         cat {log} >&2\n",
        wall = wall.display(),
        log = log.display(),
        before = shots("before"),
        after = shots("after"),
    );
    let (ok, text) = in_xvfb("800x600", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    // The first run: five frames, each presented on the four windows, in order.
    let frames: Vec<&str> = text.lines().filter(|l| l.starts_with("frame ")).collect();
    let expected: Vec<String> = (1..=5).map(|k| format!("frame {k}: 4 tiles presented")).collect();
    assert_eq!(frames[..5], expected[..], "{text}");
    assert!(text.contains("presented 5 frames on 4 windows"), "{text}");
    let pan = text.lines().find(|l| l.starts_with("pan: offset ")).expect("the drag panned");
    let (dx, dy) = pan["pan: offset ".len()..].split_once(',').unwrap();
    let offset = [dx.parse::<f32>().unwrap(), dy.parse::<f32>().unwrap()];
    assert_eq!(offset, [-30.0, -20.0], "{text}");
    // What each window must show: the engine's render of its region of the canvas.
    let origins = [("0,0", [0, 0]), ("1,0", [250, 0]), ("0,1", [0, 168]), ("1,1", [250, 168])];
    let mut checks = Vec::new();
    for (tag, view) in [("before", View::default()), ("after", View { scale: 1.0, offset })] {
        checks.extend(origins.iter().map(|&(t, o)| (tag, t, view, o)));
    }
    windows_show_their_regions(&dir, input, &checks);
    std::fs::remove_dir_all(&dir).ok();
}

/// A 2x2 powerwall over four tile processes and a master (`exaviz wall --serve` and `--join`),
/// under Xvfb with real X input: every tile presents every frame in order (the master releases
/// frame N when all four are ready); each window shows the engine's render of its region; a
/// drag on one tile moves all four; a tile that is killed is reported and the others go on; a
/// tile that joins again catches up with the panned state.
#[test]
fn wall_master_keeps_tile_processes_in_step_under_xvfb() {
    use exaviz_render::View;
    require(&["xvfb-run", "import", "xdotool"]);
    let dir = scratch("wallnet");
    let wall = dir.join("wall.toml");
    std::fs::write(&wall, "columns = 2\nrows = 2\ntile = [240, 160]\nmullion = [10, 8]\n").unwrap();
    let input = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let port = 40_000 + (std::process::id() % 20_000);
    let shot = |tag: &str, t: &str| {
        format!(
            "wid=$(xdotool search --name 'exaviz wall {t}' | head -1); import -window $wid {}\n",
            dir.join(format!("{tag}_{t}.png")).display()
        )
    };
    let all = |tag: &str| ["0,0", "1,0", "0,1", "1,1"].iter().map(|t| shot(tag, t)).collect::<String>();
    let d = dir.display();
    let script = format!(
        "set -e\n\
         trap 'kill $master $t1 $t2 $t3 $t4 $t5 2>/dev/null || true' EXIT\n\
         count() {{ grep -c \"$1\" {d}/master.log || true; }}\n\
         wait_for() {{ for i in $(seq 1 300); do [ $(count \"$1\") -ge $2 ] && return 0; sleep 0.1; done; return 1; }}\n\
         \"{exe}\" wall --config {wall} --serve 127.0.0.1:{port} > /dev/null 2> {d}/master.log &\n\
         master=$!\n\
         sleep 0.5\n\
         join() {{ \"{exe}\" wall --config {wall} '{input}' --backend cpu --join 127.0.0.1:{port} --tile $1 > /dev/null 2> {d}/$2.log & }}\n\
         join 0,0 tile_0,0; t1=$!\n\
         join 1,0 tile_1,0; t2=$!\n\
         join 0,1 tile_0,1; t3=$!\n\
         join 1,1 tile_1,1; t4=$!\n\
         wait_for '4 tiles presented' 20\n\
         sleep 1\n\
         {before}\
         wid=$(xdotool search --name 'exaviz wall 1,1' | head -1)\n\
         xdotool mousemove --window $wid 150 100 mousedown 1 mousemove --window $wid 135 90 mousemove --window $wid 120 80 mouseup 1\n\
         wait_for '^view: offset -30,-20' 1\n\
         sleep 1\n\
         {after}\
         kill $t1\n\
         wait_for 'dropped out' 1\n\
         wait_for '3 tiles presented' 5\n\
         join 0,0 tile_again; t5=$!\n\
         wait_for 'tile 0,0 joined' 2\n\
         n=$(count '4 tiles presented'); wait_for '4 tiles presented' $((n + 10))\n\
         sleep 1\n\
         {again}\
         cat {d}/master.log >&2\n",
        wall = wall.display(),
        before = all("before"),
        after = all("after"),
        again = shot("again", "0,0"),
    );
    let (ok, text) = in_xvfb("800x600", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let master = std::fs::read_to_string(dir.join("master.log")).unwrap();
    // Frames in order, all four tiles until one was killed, three then, four again after it
    // joined again.
    let frames: Vec<(u64, usize)> = master
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.strip_prefix("frame ")?.split_once(": ")?;
            Some((n.parse().ok()?, rest.split(' ').next()?.parse().ok()?))
        })
        .collect();
    assert!(frames.windows(2).all(|w| w[1].0 == w[0].0 + 1), "{master}");
    let tiles: Vec<usize> = frames.iter().map(|f| f.1).collect();
    let first_three = tiles.iter().position(|&n| n == 3).expect("a frame with three tiles");
    assert!(tiles[..first_three].iter().all(|&n| n == 4), "{master}");
    assert_eq!(tiles.last(), Some(&4), "{master}");
    assert!(master.contains("tile 0,0 dropped out"), "{master}");
    // Each tile presented the frames it was sent, in order, in step with the master.
    for t in ["1,0", "0,1", "1,1"] {
        let log = std::fs::read_to_string(dir.join(format!("tile_{t}.log"))).unwrap();
        let seen: Vec<u64> =
            log.lines().filter_map(|l| l.strip_prefix(&format!("tile {t} presented frame "))?.parse().ok()).collect();
        assert!(seen.len() >= 20 && seen.windows(2).all(|w| w[1] == w[0] + 1), "{t}: {log}");
    }
    let panned = View { scale: 1.0, offset: [-30.0, -20.0] };
    let origins = [("0,0", [0, 0]), ("1,0", [250, 0]), ("0,1", [0, 168]), ("1,1", [250, 168])];
    let mut checks: Vec<(&str, &str, View, [u32; 2])> = Vec::new();
    for (t, o) in origins {
        checks.push(("before", t, View::default(), o));
        checks.push(("after", t, panned, o));
    }
    checks.push(("again", "0,0", panned, [0, 0]));
    windows_show_their_regions(&dir, input, &checks);
    std::fs::remove_dir_all(&dir).ok();
}

/// Each screenshot `{tag}_{tile}.png` in `dir` shows the engine's render (CPU path) of the ring
/// of `input` on the 490x328 canvas, under its view, at its tile's origin (240x160 tiles).
fn windows_show_their_regions(dir: &Path, input: &str, checks: &[(&str, &str, exaviz_render::View, [u32; 2])]) {
    use exaviz_render::render_region;
    use exaviz_views::contract::{Entry, Frame, prepare};
    let d = exaviz_datasets::open(input).unwrap();
    let built = Entry::find("ring").unwrap().parse::<&str>(&[]).unwrap();
    let backend = exaviz_compute::Backend::Cpu;
    let p = prepare(built.view.as_ref(), &d, &built.selection, Frame { width: 490, height: 328 }, &backend).unwrap();
    let scene = p.draw(&d, &built.selection);
    for &(tag, t, view, origin) in checks {
        let want = render_region(&backend, &scene, view, origin, [240, 160]).unwrap();
        let shot = read_rgb(&dir.join(format!("{tag}_{t}.png")));
        assert_eq!(shot.len(), 240 * 160, "{tag} {t}: window size");
        let differ = shot
            .iter()
            .zip(want.pixels.chunks_exact(4))
            .filter(|(a, b)| a.iter().zip(b.iter()).any(|(x, y)| x.abs_diff(*y) > 8))
            .count();
        assert!(differ * 100 < shot.len(), "{tag} {t}: {differ} of {} pixels differ", shot.len());
    }
}

/// Runs `gestures` (shell lines using `$wid`, the window, `$log`, the viewer's standard error,
/// and `$dir`, a scratch folder) against `exaviz view` on a generated stencil timeline, 900 x 560,
/// under Xvfb with a `screen`; the log once the viewer is killed, and the scratch folder.
fn fd4_timeline_under_xvfb(name: &str, screen: &str, gestures: &str) -> (String, PathBuf) {
    require(&["xvfb-run", "xdotool"]);
    let dir = scratch(name);
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let script = format!(
        "set -e\n\
         dir={dir}\n\
         log=$dir/viewer.log\n\
         EXAVIZ_PANEL_LOG=1 \"{exe}\" view 'gen:fd4?iterations=3' --view timeline --size 900x560 --frames 100000000 2> $log &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' $log 2>/dev/null && break; sleep 0.1; done\n\
         sleep 3\n\
         wid=$(xdotool search --name exaviz | head -1)\n\
         {gestures}\n\
         kill $pid\n\
         cat $log >&2\n",
        dir = dir.display()
    );
    let (ok, text) = in_xvfb(screen, &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    (text, dir)
}

/// Searching the timeline with real X input: `/`, the text and Enter search region names, `n`
/// steps to the first match (the window moves and zooms to it), `N` from there wraps to the
/// last; the picture after the steps differs from the one before.
#[test]
fn a_timeline_search_steps_through_its_matches_under_xvfb() {
    require(&["import"]);
    let w = 900u32;
    let (text, dir) = fd4_timeline_under_xvfb(
        "search",
        "1200x700",
        "xdotool mousemove --window $wid 1 1\n\
         sleep 0.5\n\
         import -window $wid $dir/before.png\n\
         xdotool windowfocus $wid key slash W a i t Return\n\
         for i in $(seq 1 100); do grep -q 'search' $log && break; sleep 0.1; done\n\
         xdotool windowfocus $wid key n\n\
         for i in $(seq 1 100); do grep -q 'match 1 of' $log && break; sleep 0.1; done\n\
         sleep 3\n\
         import -window $wid $dir/after.png\n\
         xdotool windowfocus $wid key N\n\
         for i in $(seq 1 100); do grep -q 'match [0-9]* of [0-9]*: .* at' $log && grep -c 'match' $log | grep -q 2 && break; sleep 0.1; done",
    );
    let shot = |k: &str| dir.join(format!("{k}.png")).display().to_string();
    assert!(text.contains("search \u{201c}Wait\u{201d}"), "the typed search is selected: {text}");
    let matches: Vec<&str> = text.lines().filter(|l| l.contains(": match ")).collect();
    assert!(matches.len() >= 2, "n and N each step to a match: {text}");
    let total = matches[0].split(" of ").nth(1).and_then(|r| r.split(':').next()).expect("a count");
    assert!(matches[0].contains(&format!("match 1 of {total}")), "n goes to the first match: {text}");
    assert!(matches[1].contains(&format!("match {total} of {total}")), "N from the first wraps to the last: {text}");
    let (before, after) = (picture(Path::new(&shot("before")), w), picture(Path::new(&shot("after")), w));
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert!(changed > before.len() / 10, "the window did not move to the match: {changed} pixels changed");
    std::fs::remove_dir_all(&dir).ok();
}

/// The panel's search box with real X input: a click on the box, the text and Enter search
/// region names, and the box's next button steps to the first match, then the second.
#[test]
fn the_panels_search_box_steps_through_matches_under_xvfb() {
    let (text, dir) = fd4_timeline_under_xvfb(
        "search-box",
        "1200x700",
        "at() { for i in $(seq 1 300); do grep -q \"^panel: $1 at\" $log && break; sleep 0.1; done; \
                set -- $(grep \"^panel: $1 at\" $log | tail -1 | sed 's/.* at //'); \
                xdotool mousemove --window $wid $1 $2 click 1; }\n\
         at 'search box'\n\
         sleep 0.5\n\
         xdotool windowfocus $wid type Waitall\n\
         xdotool windowfocus $wid key Return\n\
         for i in $(seq 1 100); do grep -q 'Waitall' $log && break; sleep 0.1; done\n\
         sleep 0.5\n\
         at 'search next'\n\
         for i in $(seq 1 100); do grep -q 'match 1 of' $log && break; sleep 0.1; done\n\
         sleep 0.5\n\
         at 'search next'\n\
         for i in $(seq 1 100); do grep -q 'match 2 of' $log && break; sleep 0.1; done",
    );
    assert!(text.contains("panel: search box at"), "the timeline's panel has a search box: {text}");
    let matches: Vec<&str> = text.lines().filter(|l| l.starts_with("search \u{201c}Waitall\u{201d}: match")).collect();
    assert!(matches.len() >= 2, "the box's search and its next button step to matches: {text}");
    assert!(matches[0].contains("match 1 of") && matches[1].contains("match 2 of"), "{matches:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Perfetto's area selection with real X input: a right-button drag over the timeline selects
/// the time and rows under it, the panel fills with the area's statistics (logged as one line),
/// and a right click clears it.
#[test]
fn a_timeline_area_drag_fills_the_statistics_under_xvfb() {
    let (text, dir) = fd4_timeline_under_xvfb(
        "area",
        "1200x700",
        "xdotool mousemove --window $wid 150 100 mousedown 3\n\
         xdotool mousemove --window $wid 250 160\n\
         xdotool mousemove --window $wid 350 220 mouseup 3\n\
         for i in $(seq 1 200); do grep -q 'area statistics' $log && break; sleep 0.1; done\n\
         xdotool mousemove --window $wid 200 200 mousedown 3 mouseup 3\n\
         for i in $(seq 1 100); do grep -q 'selected: nothing' $log && break; sleep 0.1; done",
    );
    assert!(text.contains("selected: area of rows"), "the drag selects an area: {text}");
    let stats = text.lines().find(|l| l.starts_with("area statistics:")).unwrap_or_else(|| panic!("{text}"));
    // The area's time and rows, then the table's head and its busiest region.
    assert!(stats.contains(" rows | region"), "{stats}");
    assert!(stats.contains("compute") || stats.contains("MPI_"), "{stats}");
    assert!(text.contains("selected: nothing"), "a right click clears the area: {text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Following a message with real X input: a click on a message line selects it (and its pair),
/// `f` fits the window to it, `]` moves the window to its receiver's end and `[` to its
/// sender's.
#[test]
fn a_clicked_message_is_followed_to_its_ends_under_xvfb() {
    // The plot spans the trace's 300 s; its messages are sent 55 to 85 s in.
    let p = exaviz_views::timeline::plot_rect(900, 560).unwrap();
    let xs: Vec<String> = [70.0, 67.0, 73.0, 64.0, 76.0, 68.5, 71.5]
        .iter()
        .map(|s: &f64| format!("{:.0}", f64::from(p.x0) + f64::from(p.w) * s / 300.0))
        .collect();
    let (text, dir) = fd4_timeline_under_xvfb(
        "follow",
        "1300x700",
        &format!(
            "for x in {}; do\n\
           xdotool mousemove --window $wid $x 250 click 1\n\
           for i in $(seq 1 15); do grep -q 'selected: pair' $log && break; sleep 0.1; done\n\
           grep -q 'selected: pair' $log && break\n\
         done\n\
         for k in f bracketright bracketleft; do\n\
           n=$(grep -c '^window:' $log || true)\n\
           xdotool windowfocus $wid key $k\n\
           for i in $(seq 1 50); do [ $(grep -c '^window:' $log) -gt $n ] && break; sleep 0.1; done\n\
         done",
            xs.join(" ")
        ),
    );
    let selected = text.lines().find(|l| l.starts_with("selected: pair")).unwrap_or_else(|| panic!("{text}"));
    assert!(selected.contains("; message "), "the click follows the message: {selected}");
    let windows: Vec<(f64, f64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("window: "))
        .filter_map(|r| {
            let mut it = r.trim_end_matches(" s").split(" to ").map(|v| v.parse::<f64>().ok());
            Some((it.next()??, it.next()??))
        })
        .collect();
    assert_eq!(windows.len(), 3, "f, ] and [ each move the window: {text}");
    // f narrows the window to the message; ] and [ keep that width, centred on its receive and
    // on its send, which is earlier.
    let width = |w: (f64, f64)| w.1 - w.0;
    let centre = |w: (f64, f64)| (w.0 + w.1) / 2.0;
    assert!(width(windows[0]) < 30.0, "f fits the message: {windows:?}");
    assert!((width(windows[1]) - width(windows[0])).abs() < 1e-3, "{windows:?}");
    assert!((width(windows[2]) - width(windows[0])).abs() < 1e-3, "{windows:?}");
    assert!(centre(windows[2]) < centre(windows[1]), "[ goes to the earlier end: {windows:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Wei et al.'s linking (§5.3) in the window, with real X input, on a JAX run recorded here
/// (its profile and HLO dump in one folder): a click on the collective-permute `ppermute.13` in
/// the strategy view selects it and its time (the log says so); switched to the Marey view with
/// the panel's button, the window shows what `exaviz render --view marey --operator ppermute.13
/// --from A --to B` draws: the time around its first run, its band outlined on every device.
#[test]
fn a_click_in_the_strategy_view_outlines_the_operator_in_the_marey_view() {
    use exaviz_views::{Entry, Frame};
    require(&["xvfb-run", "import", "xdotool"]);
    let (w, h) = (960u32, 400u32);
    let run = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/jax-cpu-pipeline");
    let run = run.display().to_string();
    // Where the permute is, by the view's own picking.
    let d = exaviz_datasets::open(&run).expect("the run opens");
    let built = Entry::find("strategy").unwrap().parse::<&str>(&[]).unwrap();
    let prepared = built
        .view
        .prepare(&d, &built.selection, Frame { width: w, height: h }, &exaviz_compute::Backend::Cpu)
        .expect("prepare");
    let hits: Vec<(u32, u32)> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .filter(|&(x, y)| prepared.pick(&d, [x as f32, y as f32]).is_some_and(|p| p.title == "ppermute.13"))
        .collect();
    assert!(!hits.is_empty(), "the permute is drawn");
    let (cx, cy) = hits[hits.len() / 2];
    // The click also selects the permute's time: the Marey view's window around its first run.
    let t = d.training.as_ref().expect("a training run");
    let offsets = exaviz_analysis::training::offsets(t, exaviz_analysis::training::Align::Full);
    let (from, to) = exaviz_views::run::operator_window(t, &offsets, "ppermute.13").expect("the permute runs");
    let dir = scratch("link");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let file = |k: &str| dir.join(k).display().to_string();
    let log = file("viewer.log");
    let script = format!(
        "{helpers}\
         EXAVIZ_PANEL_LOG=1 \"{exe}\" view {run} --view strategy --size {w}x{h} --frames 100000000 2> {log} &\n\
         pid=$!\n\
         wait_log 'panel: view marey'\n\
         sleep 2\n\
         wid=$(xdotool search --name exaviz | head -1)\n\
         xdotool mousemove --window $wid {cx} {cy} click 1\n\
         wait_log 'selected: operator ppermute.13'\n\
         at 'view marey'\n\
         wait_log 'view: marey'\n\
         xdotool mousemove --window $wid {rest} {h2}\n\
         sleep 4\n\
         import -window $wid {shot}\n\
         kill $pid\n\
         \"{exe}\" render {run} --view marey --operator ppermute.13 --from {from} --to {to} --size {w}x{h} -o {expected}\n\
         \"{exe}\" render {run} --view marey --from {from} --to {to} --size {w}x{h} -o {plain}\n\
         cat {log} >&2\n",
        helpers = panel_helpers(&log),
        shot = file("shot.png"),
        expected = file("expected.png"),
        plain = file("plain.png"),
        rest = w + 240,
        h2 = h - 4,
    );
    let (ok, text) = in_xvfb("1300x500", &dir, &script);
    assert!(ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(text.contains("selected: operator ppermute.13"), "the click selects the permute: {text}");
    let shot = picture(Path::new(&file("shot.png")), w);
    let (expected, plain) = (read_rgb(Path::new(&file("expected.png"))), read_rgb(Path::new(&file("plain.png"))));
    let outline = far_pixels(&expected, &plain);
    assert!(outline > 100, "the outline shows in the render: {outline} pixels");
    let differ = far_pixels(&shot, &expected);
    assert!(differ * 4 < outline, "the window's Marey view differs from the outlined render in {differ} pixels");
    std::fs::remove_dir_all(&dir).ok();
}
