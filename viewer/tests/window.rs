//! The viewer under Xvfb on lavapipe: it opens a window, presents frames, and a screenshot of
//! the X screen shows the view (not a blank screen). Needs xvfb-run and ImageMagick's `import`
//! (the test command installs them); without them this test fails rather than skips.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn require(tool: &str) {
    let found =
        Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success());
    assert!(found, "{tool} is missing: apt-get install xvfb xauth imagemagick (the README's test command does)");
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
    require("xvfb-run");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    let dir = std::env::temp_dir().join(format!("exaviz-window-fallback-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // No Vulkan or GL adapter is visible with only DX12 allowed (as on a machine without a GPU).
    let script = format!(
        "WGPU_BACKEND=dx12 \"{exe}\" view 'gen:lulesh?iterations=3' --view chord --size 320x240 --frames 3\n\
         echo auto=$?\n\
         WGPU_BACKEND=dx12 \"{exe}\" view 'gen:lulesh?iterations=3' --view chord --backend gpu --frames 3\n\
         echo gpu=$?\n"
    );
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 640x480x24", "sh", "-c", &script])
        .env("XDG_RUNTIME_DIR", &dir)
        .output()
        .expect("xvfb-run starts");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("auto=0") && log.contains("gpu=1"), "{log}");
    let warnings: Vec<&str> = log.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains("drawing on the CPU path"), "{log}");
    assert!(log.contains("presented 3 frames") && log.contains("--backend cpu draws without one"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    std::fs::remove_dir_all(&dir).ok();
}

fn screenshot_shows_the_view(name: &str, args: &str) {
    require("xvfb-run");
    require("import");
    let dir = std::env::temp_dir().join(format!("exaviz-window-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shot = dir.join("shot.png");
    let exe = env!("CARGO_BIN_EXE_exaviz");
    // Inside Xvfb: a first run presents 40 frames and exits cleanly; a second keeps presenting
    // while a screenshot of the root window is taken, then is stopped.
    let script = format!(
        "set -e\n\
         \"{exe}\" view {args} --size 480x360 --frames 40\n\
         \"{exe}\" view {args} --size 480x360 --frames 100000000 2> {log} &\n\
         pid=$!\n\
         for i in $(seq 1 300); do grep -q 'viewer on' {log} 2>/dev/null && break; sleep 0.1; done\n\
         sleep 3\n\
         import -window root {shot}\n\
         kill $pid\n\
         cat {log} >&2\n",
        log = dir.join("viewer.log").display(),
        shot = shot.display(),
    );
    let start = Instant::now();
    let mut child = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 640x480x24", "sh", "-c", &script])
        .env("XDG_RUNTIME_DIR", &dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("xvfb-run starts");
    let stderr: Vec<String> = BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let log = stderr.join("\n");
    assert!(status.success(), "viewer run failed: {log}");
    assert!(start.elapsed() < Duration::from_secs(300));
    assert!(log.contains("presented 40 frames"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    // The screenshot: decode and check it shows more than a blank screen.
    let file = std::fs::File::open(&shot).expect("screenshot written");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = reader.output_color_type().0.samples();
    assert!(channels >= 3, "the screenshot is greyscale: the window looks blank");
    let mut colours: Vec<Vec<u8>> = buf[..info.buffer_size()].chunks(channels).map(|p| p[..3].to_vec()).collect();
    // The view's dark background fills much of the window.
    let background = colours.iter().filter(|p| p[0] == 17 && p[1] == 19 && p[2] == 24).count();
    assert!(background > 10_000, "background pixels: {background}");
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "only {} distinct colours: the window looks blank", colours.len());
    std::fs::remove_dir_all(&dir).ok();
}
