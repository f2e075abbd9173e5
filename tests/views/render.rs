//! The renderer under every view: primitives and blend modes on both backends, tiles that join
//! without seams, a powerwall's tiles equal to crops of its canvas.

use exaviz_compute::Backend;
use exaviz_render::{View, render_scene};
use exaviz_tests::{GPU_VS_CPU, assert_images_close, gpu};
use exaviz_views::ring::{RingOptions, ring_scene};

use super::{golden, gpu_backend, open};

#[test]
fn tiled_gpu_render_equals_one_piece_and_cpu_tiles() {
    let d = open("gen:torus-sim?dims=4x4x4&steps=20&seed=3");
    let opts = RingOptions { width: 256, height: 192, ..Default::default() };
    let scene = ring_scene(&d, &Backend::Cpu, &opts).unwrap();
    let mut r = exaviz_render::gpu::GpuRenderer::new(&gpu().device);
    let whole = r.render_tiled(gpu(), &scene, View::default(), 4096).unwrap();
    let tiled = r.render_tiled(gpu(), &scene, View::default(), 100).unwrap();
    assert_eq!(whole, tiled, "tiles must join without seams");
    // The CPU renderer's regions join the same way.
    let cpu = exaviz_render::cpu::render(&scene, View::default());
    let part = exaviz_render::cpu::render_region(&scene, View::default(), [100, 50], [60, 40]);
    for y in 0..40 {
        for x in 0..60 {
            assert_eq!(part.pixel(x, y), cpu.pixel(100 + x, 50 + y));
        }
    }
}

/// Every primitive and both blend modes, on both renderers.
fn primitives_scene() -> exaviz_render::Scene {
    use exaviz_render::{Anchor, Blend, ColorMap, Scene};
    let mut s = Scene::new(200, 150, [0.05, 0.05, 0.08]);
    for i in 0..24 {
        let t = i as f32 / 23.0;
        s.segment(
            Blend::Additive,
            [10.0, 20.0 + i as f32 * 4.0],
            [190.0, 120.0 - i as f32 * 3.0],
            0.5 + t * 3.0,
            [0.1, 0.8, 0.2, 0.4],
            false,
        );
        s.segment(
            Blend::Additive,
            [10.0, 130.0 - i as f32 * 4.0],
            [190.0, 30.0 + i as f32 * 3.0],
            1.0,
            [0.8, 0.1, 0.1, 0.4],
            false,
        );
    }
    for i in 0..10 {
        let c = ColorMap::RdBu.sample(i as f32 / 9.0);
        s.rect([10.0 + i as f32 * 12.0, 132.0], [20.5 + i as f32 * 12.0, 145.0], c, true);
        s.disc(
            [150.0 + (i % 5) as f32 * 9.0, 128.0 + (i / 5) as f32 * 9.0],
            1.0 + i as f32 * 0.4,
            [1.0, 1.0, 1.0, 0.8],
            false,
        );
    }
    s.text("exaviz 0123 ·", [100.0, 14.0], 12.0, Anchor::Centre, [1.0, 1.0, 0.9, 1.0]);
    s
}

#[test]
fn renderer_primitives_agree_between_backends() {
    let scene = primitives_scene();
    for view in [View::default(), View { scale: 1.7, offset: [-40.0, -20.0] }] {
        let cpu = render_scene(&Backend::Cpu, &scene, view).unwrap();
        let gpu = render_scene(&gpu_backend(), &scene, view).unwrap();
        assert!(cpu.distinct_colours() > 50);
        assert_images_close("primitives gpu vs cpu", &gpu.pixels, &cpu.pixels, GPU_VS_CPU);
    }
    golden("primitives.png", &render_scene(&Backend::Cpu, &scene, View::default()).unwrap());
}

/// A powerwall's tiles (`exaviz render --wall`) are the whole virtual canvas's render cropped by
/// the tiles' rectangles, pixel for pixel, on both backends.
#[test]
fn wall_tiles_equal_crops_of_the_whole_canvas_on_both_backends() {
    use exaviz_render::render_region;
    use exaviz_render::wall::{Wall, WallSpec};
    let wall =
        Wall::new(WallSpec { columns: 3, rows: 2, tile: [150, 110], mullion: Some([12, 9]), ..Default::default() })
            .unwrap();
    let [w, h] = wall.canvas();
    let d = open("gen:torus-sim?dims=4x4x4&steps=20&seed=3");
    let scene = ring_scene(&d, &Backend::Cpu, &RingOptions { width: w, height: h, ..Default::default() }).unwrap();
    for backend in [Backend::Cpu, gpu_backend()] {
        let whole = render_scene(&backend, &scene, View::default()).unwrap();
        for r in 0..wall.rows {
            for c in 0..wall.columns {
                let [x0, y0] = wall.origin(c, r);
                let tile = render_region(&backend, &scene, View::default(), [x0, y0], wall.tile).unwrap();
                assert_eq!((tile.width, tile.height), (150, 110));
                for y in 0..110 {
                    for x in 0..150 {
                        assert_eq!(
                            tile.pixel(x, y),
                            whole.pixel(x0 + x, y0 + y),
                            "{backend:?} tile {c},{r} at {x},{y}"
                        );
                    }
                }
            }
        }
    }
}

/// A raster made on the host is kept on the device by its cells: drawn again, moved by the
/// view, none of its cells go up again, and the picture equals the CPU renderer's; a cell
/// changed, the cells go up again and the picture shows the change.
#[test]
fn a_host_rasters_cells_are_uploaded_once_while_they_stay_the_same() {
    use exaviz_render::{Raster, Scene, View};
    let ctx = exaviz_compute::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let mut r = exaviz_render::gpu::GpuRenderer::new(&ctx.device);
    let (w, h) = (300u32, 200u32);
    let cells: Vec<[u8; 4]> = (0..w * h).map(|k| [(k % 251) as u8, (k / 7 % 253) as u8, 90, 255]).collect();
    let scene_of = |cells: Vec<[u8; 4]>| {
        let mut s = Scene::new(w, h, [0.0, 0.0, 0.0]);
        s.raster(Raster::rgba([0.0, 0.0, w as f32, h as f32], w, h, cells));
        s
    };
    let bytes = u64::from(w * h * 4);
    let scene = scene_of(cells.clone());
    let up = || ctx.traffic.totals().0;
    let before = up();
    let first = r.render_to_image(&ctx, &scene, View::default()).unwrap();
    assert!(up() - before >= bytes, "the cells went up with the first picture");
    let moved = View { scale: 2.0, offset: [-40.0, -30.0] };
    let before = up();
    let again = r.render_to_image(&ctx, &scene, moved).unwrap();
    assert!(up() - before < 4096, "{} bytes up to draw the same cells moved", up() - before);
    assert_eq!(again, exaviz_render::cpu::render(&scene, moved), "the kept cells drawn as the CPU draws them");
    // The same cells in another scene: still kept.
    let before = up();
    assert_eq!(r.render_to_image(&ctx, &scene_of(cells.clone()), View::default()).unwrap(), first);
    assert!(up() - before < 4096);
    // One cell changed: uploaded again, and drawn.
    let mut changed = cells;
    changed[(h as usize / 2) * w as usize + 10] = [255, 255, 255, 255];
    let before = up();
    let other = r.render_to_image(&ctx, &scene_of(changed), View::default()).unwrap();
    assert!(up() - before >= bytes, "changed cells go up");
    assert_eq!(other.pixel(10, h / 2), [255, 255, 255, 255]);
    assert_ne!(other, first);
}
