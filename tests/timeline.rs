//! Timelines that stay readable at any density: on a generated FD4-like trace with planted
//! structure (`plant=1`: ranks 256-383 compute twice as long from 40% to 55% of the
//! iterations, so everyone else waits for them; ranks 640-767 send extra messages among
//! themselves from 70% to 80%), both plants show in the whole-trace overview at 10^5 and 10^7
//! messages, with the default options, on both backends. Collectives are drawn.

use exaviz_compute::Backend;
use exaviz_render::Image;
use exaviz_tests::{GPU_VS_CPU, assert_images_close, draw, gpu};
use exaviz_views::timeline::plot_rect;

/// The plot's pixels in the rows of `ranks` (of 1,024) and the share `x` of the time axis.
fn region(img: &Image, ranks: (u32, u32), x: (f32, f32)) -> Vec<[u8; 3]> {
    let p = plot_rect(img.width, img.height).unwrap();
    let (y0, y1) = (p.y0 + p.h * ranks.0 / 1024, p.y0 + p.h * ranks.1 / 1024);
    let (x0, x1) = (p.x0 + (p.w as f32 * x.0) as u32, p.x0 + (p.w as f32 * x.1) as u32);
    (y0 + 2..y1 - 2)
        .flat_map(|y| (x0..x1).map(move |x| (x, y)))
        .map(|(x, y)| {
            let k = ((y * img.width + x) * 4) as usize;
            [img.pixels[k], img.pixels[k + 1], img.pixels[k + 2]]
        })
        .collect()
}

/// Share of pixels that look like compute (orange: more red than blue).
fn compute_share(px: &[[u8; 3]]) -> f32 {
    px.iter().filter(|p| p[0] as i32 > p[2] as i32 + 20).count() as f32 / px.len() as f32
}

fn luma(p: [u8; 3]) -> f32 {
    0.3 * f32::from(p[0]) + 0.59 * f32::from(p[1]) + 0.11 * f32::from(p[2])
}

/// The slowed stretch spans 40% to 70% of a run 1.15 times the unslowed one (its iterations
/// take twice as long); the traffic phase 85% to 95% of the unslowed length.
const SLOW: (f32, f32) = (0.40 / 1.15 + 0.02, 0.70 / 1.15 - 0.02);
const BURST: (f32, f32) = (0.85 / 1.15 + 0.01, 0.95 / 1.15 - 0.01);

fn planted_structure_shows(iterations: u32, backend: &Backend) -> Image {
    let input = format!("gen:fd4?iterations={iterations}&plant=1&collectives=50");
    let d = exaviz_datasets::open(&input).unwrap();
    let messages = d.trace.messages.source.len();
    let img = draw("timeline", &[], &d, backend, (1024, 768)).unwrap();
    // The slow group computes while the others wait.
    let slow = compute_share(&region(&img, (264, 376), SLOW));
    let others = compute_share(&region(&img, (520, 632), SLOW));
    let before = compute_share(&region(&img, (264, 376), (0.05, 0.30)));
    assert!(slow > 0.6 && slow > others + 0.3, "{input} ({messages} messages): slow group {slow}, others {others}");
    assert!(before > 0.6, "{input}: before the stretch everyone computes most ({before})");
    // The extra traffic, seen one of two ways: where pixels hold a few iterations each (10^5),
    // many more of the burst's pixels are as bright as the brightest 5% of the same rows after
    // it or of other rows during it; where each holds many (10^7), the whole block is lighter.
    let burst = region(&img, (648, 760), BURST);
    let (after, beside) = (region(&img, (648, 760), (0.88, 0.98)), region(&img, (392, 504), BURST));
    let mean = |px: &[[u8; 3]]| px.iter().map(|p| luma(*p)).sum::<f32>() / px.len() as f32;
    let stands_out = |control: &[[u8; 3]]| {
        let mut l: Vec<f32> = control.iter().map(|p| luma(*p)).collect();
        l.sort_by(f32::total_cmp);
        let top = l[l.len() * 95 / 100];
        let bright = burst.iter().filter(|p| luma(**p) > top).count() as f32 / burst.len() as f32;
        (bright, mean(&burst) - mean(control))
    };
    for (what, control) in [("after it", &after), ("in other rows", &beside)] {
        let (bright, lighter) = stands_out(control);
        assert!(
            bright > 0.2 || lighter > 6.0,
            "{input}: the burst does not stand out from the rows {what}: {bright} of its pixels as bright as \
             the brightest 5%, {lighter} lighter on average"
        );
    }
    img
}

#[test]
fn planted_structure_shows_at_1e5_messages_on_both_backends() {
    let cpu = planted_structure_shows(24, &Backend::Cpu);
    let _ = gpu();
    let g = Backend::new(exaviz_compute::BackendChoice::Gpu).expect("a GPU adapter");
    let gpu_img = planted_structure_shows(24, &g);
    assert_images_close("planted timeline gpu vs cpu", &gpu_img.pixels, &cpu.pixels, GPU_VS_CPU);
}

#[test]
fn planted_structure_shows_at_1e7_messages() {
    let img = planted_structure_shows(2_330, &Backend::Cpu);
    assert!(img.width == 1024);
}

/// Stacked fractions: on a trace with thick rows (16 ranks) whose pixels each cover about three
/// iterations of 55-85% compute, each row shows compute stacked under waiting, where the
/// dominant mode shows compute all the way up.
#[test]
fn stacked_states_show_both_states_in_a_row() {
    let d = exaviz_datasets::open("gen:wrf").unwrap();
    let opts = ["--message-opacity", "0"];
    let dominant = draw("timeline", &opts, &d, &Backend::Cpu, (1024, 768)).unwrap();
    let stacked = draw("timeline", &[&opts[..], &["--states", "stacked"]].concat(), &d, &Backend::Cpu, (1024, 768));
    let stacked = stacked.unwrap();
    let p = plot_rect(1024, 768).unwrap();
    // Rank 5's row, across the whole time axis: one row of pixels near its bottom, one near its top.
    let row = |img: &Image, y: u32| region_rows(img, y, p.x0, p.x0 + p.w);
    let (top, bottom) = (p.y0 + 5 * p.h / 16 + 1, p.y0 + 6 * p.h / 16 - 3);
    let (dt, db) = (compute_share(&row(&dominant, top)), compute_share(&row(&dominant, bottom)));
    let (st, sb) = (compute_share(&row(&stacked, top)), compute_share(&row(&stacked, bottom)));
    assert!((dt - db).abs() < 0.05, "dominant: the same state down a row ({dt} vs {db})");
    assert!(sb > 0.9 && st < 0.1, "stacked: compute (70%) at the bottom, waiting at the top ({sb}, {st})");
}

fn region_rows(img: &Image, y: u32, x0: u32, x1: u32) -> Vec<[u8; 3]> {
    (x0..x1)
        .map(|x| {
            let k = ((y * img.width + x) * 4) as usize;
            [img.pixels[k], img.pixels[k + 1], img.pixels[k + 2]]
        })
        .collect()
}

/// Collectives: one join per operation (here per pixel column), each from the first to the
/// last participant's row, in the collectives' colour; none without collectives.
#[test]
fn collectives_are_joined_per_operation() {
    let pink =
        |img: &Image| img.pixels.chunks(4).filter(|p| p[0] > 200 && p[1] > 130 && p[1] < 190 && p[2] > 180).count();
    let opts = ["--message-opacity", "0"];
    let with = exaviz_datasets::open("gen:wrf?iterations=40&collectives=10").unwrap();
    let without = exaviz_datasets::open("gen:wrf?iterations=40").unwrap();
    let draw = |d| draw("timeline", &opts, d, &Backend::Cpu, (1024, 768)).unwrap();
    let (a, b) = (draw(&with), draw(&without));
    let p = plot_rect(1024, 768).unwrap();
    // Four operations: four columns with a full-height join.
    let columns = (p.x0..p.x0 + p.w)
        .filter(|&x| {
            let col: Vec<[u8; 3]> = (p.y0 + 4..p.y0 + p.h - 4)
                .map(|y| {
                    let k = ((y * 1024 + x) * 4) as usize;
                    [a.pixels[k], a.pixels[k + 1], a.pixels[k + 2]]
                })
                .collect();
            col.iter().filter(|q| q[0] > 200 && q[2] > 180).count() * 10 > col.len() * 9
        })
        .count();
    assert!((4..=8).contains(&columns), "{columns} columns joined (4 operations, a join may cover two)");
    assert!(pink(&a) > pink(&b) + 1000, "spans and joins drawn: {} vs {}", pink(&a), pink(&b));
}
