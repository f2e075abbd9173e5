//! Every compute stage on lavapipe (or a real GPU) and on the CPU mirrors, compared: exact for
//! counts, integer bins and u64 sums; f32 sums within a relative 1e-6. One case is larger than a
//! single storage binding (128 MiB on lavapipe), so chunking is exercised for real.

use exaviz_compute as stages;
use exaviz_compute::cpu::CpuRunner;
use exaviz_compute::gpu_runner::GpuRunner;
use exaviz_compute::{DensityInput, Runner};
use exaviz_model::bins::{AxisKey, HeatmapInput};
use exaviz_tests::{Rng, gpu};

fn both(f: impl Fn(&mut dyn Runner)) {
    f(&mut CpuRunner::default());
    f(&mut GpuRunner::new(gpu()));
}

fn heatmap_case(n: usize, seed: u64, weighted: bool, max_binding: Option<u64>) {
    let mut rng = Rng(seed);
    let src: Vec<u32> = (0..n).map(|_| rng.below(70)).collect(); // some ids out of range (>= 64)
    let times: Vec<u64> = (0..n).map(|_| (1 << 33) + rng.next_u64() % 1_000_000_007).collect();
    let bytes: Vec<u32> =
        (0..n).map(|_| if rng.below(10) == 0 { u32::MAX - rng.below(5) } else { rng.below(1 << 20) }).collect();
    let t_min = *times.iter().min().unwrap();
    let t_max = *times.iter().max().unwrap();
    let input = HeatmapInput {
        x: AxisKey::time(&times, t_min, t_max, 37),
        y: AxisKey::Id { keys: &src, extent: 64 },
        weights: weighted.then_some(bytes.as_slice()),
    };
    let mut cpu = CpuRunner { max_binding_bytes: max_binding.unwrap_or(exaviz_compute::cpu::DEFAULT_MAX_BINDING) };
    let a = stages::bin_heatmap::run(&mut cpu, &input).unwrap();
    // Plain serial reference, independent of both runners.
    let mut counts = vec![0u32; 64 * 37];
    let mut sums = vec![0u64; 64 * 37];
    let AxisKey::Time { shift, width, .. } = input.x else { unreachable!() };
    for i in 0..n {
        if src[i] >= 64 {
            continue;
        }
        let x = (((times[i] - t_min) >> shift) / u64::from(width)) as usize;
        let c = src[i] as usize * 37 + x;
        counts[c] += 1;
        sums[c] += if weighted { u64::from(bytes[i]) } else { 1 };
    }
    assert_eq!(a.counts, counts, "cpu mirror vs serial reference");
    assert_eq!(a.sums, sums);
    let mut gpu_runner = GpuRunner::new(gpu());
    let b = if let Some(limit) = max_binding {
        // Force the GPU path to chunk like the CPU one by recording with the same limit.
        let rec = stages::bin_heatmap::record(&input, limit).unwrap();
        let out = gpu_runner.run(&rec).unwrap();
        stages::HeatmapGrid {
            cols: 37,
            rows: 64,
            counts: out[0].clone(),
            // Unweighted, only the counts come back: the sums are they.
            sums: match out.get(1) {
                Some(sums) => sums.chunks(2).map(|w| u64::from(w[0]) | u64::from(w[1]) << 32).collect(),
                None => out[0].iter().map(|&c| u64::from(c)).collect(),
            },
        }
    } else {
        stages::bin_heatmap::run(&mut gpu_runner, &input).unwrap()
    };
    assert_eq!(a, b, "gpu vs cpu");
}

#[test]
fn bin_heatmap_matches_on_small_and_medium_inputs() {
    heatmap_case(1, 1, true, None);
    heatmap_case(1000, 2, false, None);
    heatmap_case(300_000, 3, true, None);
}

#[test]
fn bin_heatmap_matches_when_chunked() {
    // 32 KiB bindings: 100,000 elements (8-byte time keys) become 25 chunks on both runners.
    heatmap_case(100_000, 4, true, Some(32 << 10));
    heatmap_case(100_000, 5, false, Some(32 << 10));
}

#[test]
fn bin_heatmap_id_by_id_grid() {
    let mut rng = Rng(9);
    let n = 50_000;
    let src: Vec<u32> = (0..n).map(|_| rng.below(100)).collect();
    let dst: Vec<u32> = (0..n).map(|_| rng.below(100)).collect();
    both(|r| {
        let g = stages::bin_heatmap::run(
            r,
            &HeatmapInput {
                x: AxisKey::Id { keys: &dst, extent: 100 },
                y: AxisKey::Id { keys: &src, extent: 100 },
                weights: None,
            },
        )
        .unwrap();
        assert_eq!(g.counts.iter().map(|&c| u64::from(c)).sum::<u64>(), n as u64, "{}", r.name());
        assert_eq!(g.counts.iter().map(|&c| u64::from(c)).collect::<Vec<_>>(), g.sums, "{}", r.name());
    });
}

/// Points binned by their coordinates (Canvas.points' mapping): the mirror, the plain path and
/// the GPU give the same grid, exactly, and a serial reference in f32 agrees; the bounds land in
/// the first and last bins, points outside them and NaN are dropped.
#[test]
fn bin_heatmap_points_by_coordinates() {
    let mut rng = Rng(11);
    let n = 400_000;
    // Mostly inside [-3.5, 1021.25] x [10, 610], a few outside; the bounds themselves included.
    let mut xs: Vec<f32> = (0..n).map(|_| rng.unit() * 1100.0 - 40.0).collect();
    let mut ys: Vec<f32> = (0..n).map(|_| 10.0 + rng.unit() * 600.0).collect();
    xs[..4].copy_from_slice(&[-3.5, 1021.25, f32::NAN, 5.0]);
    ys[..4].copy_from_slice(&[10.0, 610.0, 20.0, f32::NAN]);
    let (cols, rows) = (1000u32, 700u32);
    let input = HeatmapInput {
        x: AxisKey::scaled(&xs, -3.5, 1021.25, cols),
        y: AxisKey::scaled(&ys, 10.0, 610.0, rows),
        weights: None,
    };
    let AxisKey::Scaled { scale: sx, .. } = input.x else { unreachable!() };
    let AxisKey::Scaled { scale: sy, .. } = input.y else { unreachable!() };
    let key = |v: f32, lo: f32, s: f32, e: u32| {
        let f = (v - lo) * s;
        (f >= 0.0 && f <= e as f32).then(|| (f as u32).min(e - 1))
    };
    let mut counts = vec![0u32; (cols * rows) as usize];
    for i in 0..n {
        if let (Some(x), Some(y)) = (key(xs[i], -3.5, sx, cols), key(ys[i], 10.0, sy, rows)) {
            counts[(y * cols + x) as usize] += 1;
        }
    }
    assert!(counts[0] >= 1, "the lower bounds land in the first cell");
    assert!(counts[(rows * cols - 1) as usize] >= 1, "the upper bounds land in the last cell");
    let binned: u32 = counts.iter().sum();
    assert!(binned < n as u32 - 2 && binned > n as u32 * 9 / 10, "{binned}");
    let mut cpu = CpuRunner::default();
    let plain = stages::bin_heatmap::run(&mut cpu, &input).unwrap();
    assert_eq!(plain.counts, counts, "plain path vs serial reference");
    assert_eq!(plain.sums, counts.iter().map(|&c| u64::from(c)).collect::<Vec<_>>());
    assert_eq!(stages::bin_heatmap::run_recorded(&mut cpu, &input).unwrap(), plain, "mirror");
    assert_eq!(stages::bin_heatmap::run(&mut GpuRunner::new(gpu()), &input).unwrap(), plain, "gpu vs cpu");
}

fn density_input(n: usize, seed: u64, w: u32, h: u32) -> (Vec<[f32; 4]>, Vec<u32>) {
    let mut rng = Rng(seed);
    let segs = (0..n)
        .map(|_| {
            // Mostly inside, some crossing the border, a few far outside or degenerate.
            let f = |r: &mut Rng, ext: u32| r.unit() * ext as f32 * 1.4 - ext as f32 * 0.2;
            [f(&mut rng, w), f(&mut rng, h), f(&mut rng, w), f(&mut rng, h)]
        })
        .chain([[5.5, 5.5, 5.5, 5.5], [f32::NAN, 1.0, 3.0, 3.0], [-1e9, 2.0, 1e9, 2.0]])
        .collect();
    let weights = (0..n + 3).map(|_| rng.below(1 << 31)).collect();
    (segs, weights)
}

#[test]
fn line_density_matches() {
    for (n, w, h, seed) in [(10, 16, 16, 1), (20_000, 257, 129, 2)] {
        let (segs, weights) = density_input(n, seed, w, h);
        let input = DensityInput { segments: &segs, weights: Some(&weights), width: w, height: h };
        let a = stages::line_density::run(&mut CpuRunner::default(), &input).unwrap();
        let b = stages::line_density::run(&mut GpuRunner::new(gpu()), &input).unwrap();
        assert!(a.counts.iter().any(|&c| c > 0));
        assert_eq!(a, b, "line density {n} segments");
        // The degenerate segment at (5.5, 5.5) covers exactly pixel (5, 5).
        let unweighted = DensityInput { segments: &segs[n..n + 1], weights: None, width: w, height: h };
        let c = stages::line_density::run(&mut GpuRunner::new(gpu()), &unweighted).unwrap();
        assert_eq!(c.counts.iter().sum::<u32>(), 1);
        let all_unweighted = DensityInput { weights: None, ..input };
        let ua = stages::line_density::run(&mut CpuRunner::default(), &all_unweighted).unwrap();
        let ub = stages::line_density::run(&mut GpuRunner::new(gpu()), &all_unweighted).unwrap();
        assert_eq!(ua, ub);
        assert_eq!(ua.counts, a.counts, "weights change sums, not counts");
        assert_eq!(ua.sums, ua.counts.iter().map(|&c| u64::from(c)).collect::<Vec<_>>());
        assert_eq!(c.counts[(5 * w + 5) as usize], 1);
    }
}

/// Two weighted densities of the same segments: the CPU's one pass that walks each segment once
/// equals two weighted passes on the GPU, and two on the CPU, count for count and sum for sum;
/// segments inside, crossing the border, long, degenerate and far outside.
#[test]
fn two_weighted_densities_in_one_pass_match() {
    for (n, w, h, seed) in [(10, 16, 16, 3), (50_000, 700, 431, 4)] {
        let (segs, a) = density_input(n, seed, w, h);
        let b: Vec<u32> = a.iter().map(|&x| (x >> 3) ^ 0x5bd1_e995).collect();
        let one = stages::line_density::run_two(&mut CpuRunner::default(), &segs, [&a, &b], w, h).unwrap();
        let gpu = stages::line_density::run_two(&mut GpuRunner::new(gpu()), &segs, [&a, &b], w, h).unwrap();
        for (k, weights) in [&a, &b].into_iter().enumerate() {
            let input = DensityInput { segments: &segs, weights: Some(weights), width: w, height: h };
            let alone = stages::line_density::run(&mut CpuRunner::default(), &input).unwrap();
            assert!(alone.sums.iter().any(|&s| s > u64::from(u32::MAX)) || n < 100, "sums past 32 bits");
            assert_eq!(one[k], alone, "{n} segments, weights {k}: one pass against one run");
            assert_eq!(gpu[k], alone, "{n} segments, weights {k}: the GPU");
        }
    }
}

/// Segments kept for several pairs of weights: each pass over them (the CPU's kept buckets,
/// the GPU's recordings of the segments left in) equals [`run_two`] of the segments whose
/// weights are not both zero, count for count and sum for sum, pass after pass with other
/// weights.
///
/// [`run_two`]: exaviz_compute::line_density::run_two
#[test]
fn kept_segments_weighed_again_equal_two_densities_of_those_inked() {
    let (w, h) = (700, 431);
    let (segs, a) = density_input(50_000, 5, w, h);
    let cpu_kept = stages::line_density::KeptSegments::new(true, segs.clone(), w, h);
    let gpu_kept = stages::line_density::KeptSegments::new(false, segs.clone(), w, h);
    let mut gpu_runner = GpuRunner::new(gpu());
    for pass in 0..3u32 {
        // Some segments weigh nothing in this pass, some one weight only.
        let a: Vec<u32> = a
            .iter()
            .enumerate()
            .map(|(i, &x)| if (i as u32 + pass).is_multiple_of(3) { 0 } else { x >> pass })
            .collect();
        let b: Vec<u32> =
            (0..segs.len() as u32).map(|i| if (i + pass).is_multiple_of(5) { 0 } else { i * 7 + pass }).collect();
        let inked: Vec<usize> = (0..segs.len()).filter(|&i| a[i] != 0 || b[i] != 0).collect();
        assert!(inked.len() < segs.len() && inked.len() > segs.len() / 2);
        let pick = |v: &[u32]| inked.iter().map(|&i| v[i]).collect::<Vec<u32>>();
        let s: Vec<[f32; 4]> = inked.iter().map(|&i| segs[i]).collect();
        let want = stages::line_density::run_two(&mut CpuRunner::default(), &s, [&pick(&a), &pick(&b)], w, h).unwrap();
        let cpu = stages::line_density::run_two_kept(&mut CpuRunner::default(), &cpu_kept, [&a, &b]).unwrap();
        let gpu = stages::line_density::run_two_kept(&mut gpu_runner, &gpu_kept, [&a, &b]).unwrap();
        assert!(want[0].counts.iter().any(|&c| c > 0));
        assert!(cpu == want, "pass {pass}: the CPU's kept buckets");
        assert!(gpu == want, "pass {pass}: the GPU");
    }
}

/// Many short segments on a wide image: the CPU runner's banded pass (not the per-invocation
/// walk) draws nearly all of them, and must still add exactly what the shader adds.
#[test]
fn line_density_short_segments_match() {
    let (w, h) = (1024, 600);
    let mut rng = Rng(9);
    let segs: Vec<[f32; 4]> = (0..200_000)
        .map(|_| {
            let (x, y) = (rng.unit() * 1100.0 - 40.0, rng.unit() * 680.0 - 40.0);
            [x, y, x + rng.unit() * 40.0 - 20.0, y + rng.unit() * 40.0 - 20.0]
        })
        .collect();
    let weights: Vec<u32> = (0..segs.len()).map(|_| rng.below(1 << 31)).collect();
    for weights in [None, Some(weights.as_slice())] {
        let input = DensityInput { segments: &segs, weights, width: w, height: h };
        let a = stages::line_density::run(&mut CpuRunner::default(), &input).unwrap();
        let b = stages::line_density::run(&mut GpuRunner::new(gpu()), &input).unwrap();
        assert!(a.counts.iter().map(|&c| u64::from(c)).sum::<u64>() > 2_000_000);
        assert_eq!(a, b, "weighted = {}", weights.is_some());
    }
}

/// Straight lines cut into pieces: the GPU's recorded pass per piece equals the CPU's one pass
/// that cuts, buckets and draws them all.
#[test]
fn straight_line_density_matches() {
    let (w, h) = (1024, 600);
    let mut rng = Rng(13);
    let lines: Vec<[f32; 4]> = (0..100_000)
        .map(|k| {
            let (x, y) = (rng.unit() * 1100.0 - 40.0, rng.unit() * 680.0 - 40.0);
            let reach = if k % 4 == 0 { 600.0 } else { 40.0 };
            [x, y, x + (rng.unit() - 0.5) * reach, y + (rng.unit() - 0.5) * reach]
        })
        .collect();
    let input = stages::line_density::StraightInput { lines: &lines, weights: &[0, 8, 16], width: w, height: h };
    let a = stages::line_density::straight(&mut CpuRunner::default(), &input).unwrap();
    let b = stages::line_density::straight(&mut GpuRunner::new(gpu()), &input).unwrap();
    assert!(a.counts.iter().map(|&c| u64::from(c)).sum::<u64>() > 3_000_000);
    assert_eq!(a, b);
}

#[test]
fn reductions_match() {
    let mut rng = Rng(5);
    let ints: Vec<u32> = (0..200_001).map(|_| rng.next_u64() as u32).collect();
    let floats: Vec<f32> =
        (0..200_001).map(|i| if i % 1000 == 7 { f32::NAN } else { rng.unit() * 2000.0 - 1000.0 }).collect();
    let a = stages::reduce::stats_u32(&mut CpuRunner::default(), &ints).unwrap();
    let b = stages::reduce::stats_u32(&mut GpuRunner::new(gpu()), &ints).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.sum, ints.iter().map(|&v| u64::from(v)).sum::<u64>());
    assert_eq!(a.min, ints.iter().copied().min());
    let fa = stages::reduce::stats_f32(&mut CpuRunner::default(), &floats).unwrap();
    let fb = stages::reduce::stats_f32(&mut GpuRunner::new(gpu()), &floats).unwrap();
    assert_eq!((fa.min, fa.max), (fb.min, fb.max));
    let exact: f64 = floats.iter().filter(|v| !v.is_nan()).map(|&v| f64::from(v)).sum();
    let scale = floats.iter().filter(|v| !v.is_nan()).map(|v| f64::from(v.abs())).sum::<f64>();
    assert!((fa.sum - fb.sum).abs() <= 1e-6 * scale, "{} vs {}", fa.sum, fb.sum);
    assert!((fa.sum - exact).abs() <= 1e-6 * scale);
    let ha = stages::reduce::histogram_u32(&mut CpuRunner::default(), &ints, 1 << 20, 1 << 26, 50).unwrap();
    let hb = stages::reduce::histogram_u32(&mut GpuRunner::new(gpu()), &ints, 1 << 20, 1 << 26, 50).unwrap();
    assert_eq!(ha, hb);
    // More bins than a workgroup keeps locally (1024): the kernel counts straight into memory.
    let wide_a = stages::reduce::histogram_u32(&mut CpuRunner::default(), &ints, 0, 1 << 20, 4096).unwrap();
    let wide_b = stages::reduce::histogram_u32(&mut GpuRunner::new(gpu()), &ints, 0, 1 << 20, 4096).unwrap();
    assert_eq!(wide_a, wide_b);
    assert_eq!(wide_a.counts.iter().map(|&c| c as usize).sum::<usize>(), ints.len());
    let fha = stages::reduce::histogram_f32(&mut CpuRunner::default(), &floats, -500.0, 900.0, 33).unwrap();
    let fhb = stages::reduce::histogram_f32(&mut GpuRunner::new(gpu()), &floats, -500.0, 900.0, 33).unwrap();
    assert_eq!(fha, fhb);
    assert!(fha.counts.iter().all(|&c| c > 0));
}

#[test]
fn reduction_larger_than_one_storage_binding() {
    let ctx = gpu();
    let limit = ctx.max_binding_bytes();
    // One column past the device's largest binding (lavapipe: 128 MiB = 33.5M u32).
    let n = (limit / 4 + 1_000_003) as usize;
    let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 4).collect();
    let mut gpu_runner = GpuRunner::new(ctx);
    let rec_chunks = stages::chunks(n, 4, gpu_runner.max_binding_bytes()).count();
    assert!(rec_chunks >= 2, "the case must need more than one binding");
    let a = stages::reduce::stats_u32(&mut CpuRunner { max_binding_bytes: limit }, &values).unwrap();
    let b = stages::reduce::stats_u32(&mut gpu_runner, &values).unwrap();
    assert_eq!(a, b);
    assert_eq!(b.sum, values.iter().map(|&v| u64::from(v)).sum::<u64>());
    let h = stages::reduce::histogram_u32(&mut gpu_runner, &values, 0, 1 << 24, 16).unwrap();
    assert_eq!(h.counts.iter().map(|&c| c as usize).sum::<usize>(), n);
}

/// Raster layers: value grids through every tone map, a colour grid with partial alpha, one in
/// screen pixels, under and over instances; the GPU (raster.wgsl) and the CPU mirror must pick
/// the same cell and colour for every pixel, panned and zoomed, whole and in tiles.
#[test]
fn raster_layers_agree_between_backends() {
    use exaviz_render::gpu::GpuRenderer;
    use exaviz_render::{Blend, ColorMap, Raster, Scene, Shade, ToneMap, View, cpu};
    let mut rng = Rng(7);
    let mut scene = Scene::new(240, 180, [0.05, 0.05, 0.08]);
    for (k, tone) in [ToneMap::Linear, ToneMap::Log, ToneMap::Equalize].into_iter().enumerate() {
        // Heavy-tailed values with holes (0 and NaN: nothing drawn).
        let values: Vec<f32> = (0..37 * 23)
            .map(|i| match i % 11 {
                0 => 0.0,
                1 => f32::NAN,
                _ => (rng.unit() * 12.0).exp(),
            })
            .collect();
        let x0 = 8.0 + k as f32 * 76.0;
        let shade = Shade { map: [ColorMap::Viridis, ColorMap::Cividis, ColorMap::RdBu][k], tone, opacity: 0.9 };
        scene.raster(Raster::values([x0, 10.0, x0 + 70.3, 99.7], 37, 23, values, shade));
    }
    scene.segment(Blend::Alpha, [0.0, 0.0], [240.0, 180.0], 2.0, [1.0, 1.0, 1.0, 0.7], false);
    let colours: Vec<[u8; 4]> =
        (0..50 * 20).map(|i| [(i * 7 % 256) as u8, (i % 50 * 5) as u8, 200, (i % 4 * 60 + 15) as u8]).collect();
    scene.raster(Raster::rgba([20.0, 110.0, 220.0, 170.0], 50, 20, colours.clone()));
    scene.raster(Raster::rgba([200.0, 5.0, 230.0, 35.0], 50, 20, colours).in_screen_pixels());
    let mut r = GpuRenderer::new(&gpu().device);
    for view in
        [View::default(), View { scale: 2.3, offset: [-60.0, -45.0] }, View { scale: 0.6, offset: [30.0, 20.0] }]
    {
        let on_cpu = cpu::render(&scene, view);
        let on_gpu = r.render_to_image(gpu(), &scene, view).expect("gpu render");
        assert!(on_cpu.distinct_colours() > 200, "the rasters look blank");
        // Cells are chosen with the same float arithmetic; only a pixel centre falling on a
        // cell edge within rounding may pick the neighbour: 0.5% of pixels at most.
        let strict = exaviz_tests::ImageTolerance { channel: 2, fraction: 0.005 };
        exaviz_tests::assert_images_close("raster gpu vs cpu", &on_gpu.pixels, &on_cpu.pixels, strict);
        let tiled = r.render_tiled(gpu(), &scene, view, 64).expect("tiles");
        assert_eq!(tiled, on_gpu, "raster tiles join without seams");
    }
}

/// Stroked paths (lyon's triangles, coverage by 16 samples per pixel): many translucent curves,
/// additive and alpha, some thinner than a pixel, panned and zoomed, whole and in tiles; the GPU
/// (render.wgsl) and the CPU mirror count the same samples, up to a sample falling on an edge
/// within float rounding.
#[test]
fn strokes_agree_between_backends() {
    use exaviz_render::gpu::GpuRenderer;
    use exaviz_render::{Blend, Scene, View, cpu};
    let mut rng = Rng(11);
    let mut scene = Scene::new(256, 192, [0.02, 0.02, 0.05]);
    for k in 0..300 {
        let (x0, y0) = (rng.unit() * 256.0, rng.unit() * 192.0);
        let (x2, y2) = (rng.unit() * 256.0, rng.unit() * 192.0);
        let (x1, y1) = (128.0 + (rng.unit() - 0.5) * 40.0, 96.0 + (rng.unit() - 0.5) * 40.0);
        let points: Vec<[f32; 2]> = (0..=16)
            .map(|i| {
                let (u, v) = (i as f32 / 16.0, 1.0 - i as f32 / 16.0);
                [v * v * x0 + 2.0 * u * v * x1 + u * u * x2, v * v * y0 + 2.0 * u * v * y1 + u * u * y2]
            })
            .collect();
        let blend = if k % 3 == 0 { Blend::Alpha } else { Blend::Additive };
        let width = [0.6, 1.0, 1.7, 3.2][k % 4];
        scene.stroke(blend, &points, width, |i| [i as f32 / 16.0, 0.8, 1.0 - i as f32 / 16.0, 0.25]);
    }
    let mut r = GpuRenderer::new(&gpu().device);
    for view in [View::default(), View { scale: 2.1, offset: [-90.0, -70.0] }] {
        let on_cpu = cpu::render(&scene, view);
        let on_gpu = r.render_to_image(gpu(), &scene, view).expect("gpu render");
        assert!(on_cpu.distinct_colours() > 500, "the strokes look blank");
        exaviz_tests::assert_images_close(
            "strokes gpu vs cpu",
            &on_gpu.pixels,
            &on_cpu.pixels,
            exaviz_tests::GPU_VS_CPU,
        );
        let strict = exaviz_tests::ImageTolerance { channel: 4, fraction: 0.01 };
        exaviz_tests::assert_images_close("strokes gpu vs cpu (4 levels)", &on_gpu.pixels, &on_cpu.pixels, strict);
        let tiled = r.render_tiled(gpu(), &scene, view, 64).expect("tiles");
        assert_eq!(tiled, on_gpu, "stroke tiles join without seams");
    }
}

/// A random layered graph for the force layout: operators in execution order, each computing
/// one with one to three operands among the 40 before it, a fifth of them parameters; initial
/// positions by data-flow depth, operands left of their users as the stage requires.
fn force_case(n: usize, seed: u64) -> (stages::force_layout::ForceGraph, stages::force_layout::ForceParams) {
    let mut rng = Rng(seed);
    let sub: Vec<bool> = (0..n).map(|i| i > 0 && rng.below(5) == 0).collect();
    let mut edges = Vec::new();
    let mut depth = vec![0i32; n];
    for i in 1..n {
        for _ in 0..1 + rng.below(3) {
            let a = i - 1 - rng.below(40.min(i as u32)) as usize;
            if !sub[i] {
                edges.push((a as u32, i as u32));
                if !sub[a] {
                    depth[i] = depth[i].max(depth[a] + 1);
                }
            }
        }
    }
    let mut slots = std::collections::HashMap::new();
    let positions: Vec<[i32; 2]> = (0..n)
        .map(|i| {
            let slot = slots.entry((depth[i], sub[i])).or_insert(0);
            *slot += 1;
            let y = if sub[i] { -512 * *slot } else { 256 * (*slot - 1) };
            [depth[i] * 256, y]
        })
        .collect();
    let seq: Vec<u32> = (0..n as u32).collect();
    let g = stages::force_layout::ForceGraph::build(positions, &seq, &sub, &edges);
    let p = stages::force_layout::ForceParams {
        iterations: 80,
        window: 8,
        pitch: 256,
        gap: 128,
        box_w: 180,
        box_h: 256,
        axis: 0,
        row: 512,
        max_move: 256,
    };
    (g, p)
}

/// The force layout's steps are integer arithmetic: the GPU and the CPU mirror give the same
/// positions, exactly, and every data edge between computing operators still runs left to right.
#[test]
fn force_layout_matches_exactly() {
    for (n, seed) in [(300, 1), (20_000, 2)] {
        let (g, p) = force_case(n, seed);
        let cpu = stages::force_layout::run(&mut CpuRunner::default(), &g, &p).unwrap();
        let gpu = stages::force_layout::run(&mut GpuRunner::new(gpu()), &g, &p).unwrap();
        assert_eq!(cpu.len(), n);
        assert!(cpu != g.positions, "the layout moved nothing");
        let differ = cpu.iter().zip(&gpu).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "{differ} of {n} positions differ between the CPU mirror and the GPU");
        for (i, node) in g.nodes.iter().enumerate() {
            if node.flags & stages::force_layout::SUBORDINATE == 0 {
                for k in 0..node.operands {
                    let a = g.adj[(node.first + k) as usize] as usize;
                    assert!(cpu[i][0] - cpu[a][0] >= p.gap, "operand {a} not left of {i}");
                }
            }
        }
    }
}

/// Rows grouped by behaviour: the per-location features of many random intervals (unsorted,
/// some beyond the window or of no listed location or slot) and every location's nearest
/// representative, on the GPU and on the CPU mirror (its recording and its plain path): exact.
#[test]
fn location_features_and_distances_match() {
    use stages::location_features::{self as lf, FeatureInput};
    let mut rng = Rng(81);
    let n = 60_000;
    let location: Vec<u32> = (0..n).map(|_| rng.below(530)).collect();
    let start: Vec<u64> = (0..n).map(|_| (1 << 34) + rng.next_u64() % 50_000_000).collect();
    let end: Vec<u64> = start.iter().map(|&a| a + 1 + u64::from(rng.below(3_000_000))).collect();
    let slot: Vec<u32> = (0..n).map(|_| rng.below(7)).collect();
    let input = FeatureInput {
        location: &location,
        start: &start,
        end: &end,
        slot: &slot,
        locations: 512,
        window: ((1 << 34) + 1_000_000, (1 << 34) + 45_000_000),
        bins: 32,
        slots: 6,
    };
    let plain = lf::run(&mut CpuRunner::default(), &input).unwrap();
    assert!(plain.values.iter().filter(|&&v| v > 0).count() > 20_000, "the features are filled");
    let reps: Vec<u32> = [3usize, 100, 377].iter().flat_map(|&l| plain.of(l).to_vec()).collect();
    let nearest = lf::nearest(&mut CpuRunner::default(), &plain, &reps).unwrap();
    both(|r| {
        assert!(lf::run_recorded(r, &input).unwrap() == plain, "features");
        assert_eq!(lf::nearest_recorded(r, &plain, &reps).unwrap(), nearest, "distances");
    });
    assert_eq!((nearest[100].0, nearest[100].1), (1, 0), "a representative is its own nearest");
    // Every location's group and the groups' statistics from the features left on the device:
    // the host's from the nearest; only the groups, statistics and candidates come back.
    let least = [50_000u32, 50_000, 50_000];
    let host = stages::location_features::groups::assign_host(&nearest, &least);
    assert!(host.stats.iter().all(|s| s.members > 0), "{:?}", host.stats);
    let spans = lf::spans(&input);
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let before = ctx.traffic.totals();
    let on_gpu = lf::assign(&mut GpuRunner::new(&ctx), &input, &spans, &reps, (&least, None)).unwrap();
    let down = ctx.traffic.totals().1 - before.1;
    assert_eq!(on_gpu.stats, host.stats);
    assert_eq!(on_gpu.candidates, host.candidates);
    assert!(on_gpu.group_of == host.group_of, "the groups");
    assert_eq!(down, 3 * 32 + 4 * 512u64.div_ceil(8) + 4 + 8 * host.candidates.len() as u64);
    assert!(lf::assign(&mut CpuRunner::default(), &input, &spans, &reps, (&least, None)).unwrap() == host);
    // From the intervals kept on the device (their ticks turned into quanta by the kernel): the
    // same; a second window uploads none of their words.
    let kinds: Vec<u32> = (0..n as u32).map(|k| k % 9).collect();
    // Regions 6 to 8 in no slot of the six.
    let slot_of_kind: Vec<u32> = (0..9).map(|k| if k < 6 { k } else { 40 }).collect();
    let owner: stages::Owner = std::sync::Arc::new(0u8);
    let iv = lf::KeptIntervals { location: &location, start: &start, end: &end, kind: &kinds, owner: &owner };
    let by_kind: Vec<u32> = kinds.iter().map(|&k| slot_of_kind[k as usize]).collect();
    for (k, window) in [input.window, ((1 << 34) + 7_000_000, (1 << 34) + 9_000_000)].into_iter().enumerate() {
        let input = lf::FeatureInput { slot: &by_kind, window, ..input };
        let plain = lf::run(&mut CpuRunner::default(), &input).unwrap();
        let reps: Vec<u32> = [3usize, 100, 377].iter().flat_map(|&l| plain.of(l).to_vec()).collect();
        let host = stages::location_features::groups::assign_host(
            &lf::nearest(&mut CpuRunner::default(), &plain, &reps).unwrap(),
            &least,
        );
        let before = ctx.traffic.totals().0;
        let kept = lf::assign_kept(&mut GpuRunner::new(&ctx), (&iv, &slot_of_kind), &input, &reps, (&least, None))
            .unwrap()
            .expect("quanta below 2^32 ticks");
        let up = ctx.traffic.totals().0 - before;
        assert_eq!(kept.stats, host.stats, "window {k}");
        assert_eq!(kept.candidates, host.candidates, "window {k}");
        assert!(kept.group_of == host.group_of, "window {k}");
        if k > 0 {
            assert!(up < 4 * 1024, "window {k}: {up} bytes up (the intervals are kept)");
        }
    }
    // A location's row summed on the host from its own spans equals the features'.
    let by = lf::ByLocation::new(512, &spans);
    for l in [0usize, 3, 100, 511] {
        let mut row = vec![0u32; 32 * 6];
        by.sum(&spans, l, (32, 6), &mut row);
        assert_eq!(row, plain.of(l), "location {l}");
    }
}

/// Features summed from quantised per-location tiles, and every location's nearest
/// representative from them, agree exactly between the GPU kernel and the CPU: 64-bit sums
/// whose products pass 32 bits, windows wider and narrower than a tile bin; on the GPU the
/// tiles go up once, and a second window moves only its table and the representatives.
#[test]
fn tile_features_and_their_distances_match() {
    use stages::location_features::tiles::{self, TileInput, Tiles};
    let mut rng = Rng(93);
    let (locations, states, bins) = (700u32, 6u32, 48u32);
    let ticks: Vec<u64> =
        (0..locations * states * bins).map(|c| if c % 7 == 0 { 0 } else { rng.next_u64() % 90_000_000_000 }).collect();
    let tiles =
        std::sync::Arc::new(Tiles::quantise((locations, states, bins), (1 << 36, 90_000_000_000), &ticks).unwrap());
    let slot_of_state = [0u32, 1, 2, 2, 5, 40];
    let t0 = 1u64 << 36;
    // A context of its own: the shared one's counters move with the other tests.
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    for (k, window) in [
        (t0, t0 + 48 * 90_000_000_000),
        (t0 + 1_000_000_007, t0 + 1_000_900_000),
        (t0 + 5e11 as u64, t0 + 3.3e12 as u64),
    ]
    .into_iter()
    .enumerate()
    {
        let input = TileInput { tiles: &tiles, slot_of_state: &slot_of_state, slots: 6, window, bins: 32 };
        let plain = tiles::run(&mut CpuRunner::default(), &input).unwrap();
        assert!(plain.values.iter().filter(|&&v| v > 0).count() > 10_000, "the features are filled");
        let reps: Vec<u32> = [3usize, 100, 377].iter().flat_map(|&l| plain.of(l).to_vec()).collect();
        let nearest = stages::location_features::nearest(&mut CpuRunner::default(), &plain, &reps).unwrap();
        let before = ctx.traffic.totals();
        assert_eq!(
            tiles::nearest(&mut GpuRunner::new(&ctx), &input, &reps).unwrap(),
            nearest,
            "distances, window {window:?}"
        );
        let (up, down) = ctx.traffic.totals();
        let (up, down) = (up - before.0, down - before.1);
        if k == 0 {
            assert!(up >= 4 * ticks.len() as u64, "the tiles go up once: {up} bytes");
        } else {
            assert!(up < 8 * 1024, "window {k}: {up} bytes up (the tiles are kept)");
        }
        assert_eq!(down, 8 * u64::from(locations), "only the nearest come back");
        assert!(tiles::run(&mut GpuRunner::new(&ctx), &input).unwrap() == plain, "features, window {window:?}");
        assert_eq!(tiles::nearest(&mut CpuRunner::default(), &input, &reps).unwrap(), nearest);
    }
}

/// Every location's group and each group's median distance and deviation, found on the device
/// from the tile features' distances kept there, equal the host's from the nearest: the same
/// groups, statistics and locations standing out (planted ones among them), medians past 16
/// bits included; only the groups (four bits a location), the statistics and the candidates
/// come back.
#[test]
fn groups_and_their_statistics_match() {
    use stages::location_features::groups::{self, GroupStats};
    use stages::location_features::tiles::{self, TileInput, Tiles};
    let mut rng = Rng(44);
    let (locations, states, bins) = (3000u32, 4u32, 32u32);
    let mut ticks: Vec<u64> = Vec::with_capacity((locations * states * bins) as usize);
    for l in 0..locations {
        for s in 0..states {
            for _ in 0..bins {
                // Two behaviours, noise, and five locations far from both.
                let base = if (l % 3 == 0) == (s % 2 == 0) { 800_000 } else { 100_000 };
                let planted = if l % 601 == 7 && s == 3 { 900_000 } else { 0 };
                ticks.push(base + planted + u64::from(rng.below(400_000)));
            }
        }
    }
    let tiles = std::sync::Arc::new(Tiles::quantise((locations, states, bins), (0, 1_000_000), &ticks).unwrap());
    let input = TileInput { tiles: &tiles, slot_of_state: &[0, 1, 2, 3], slots: 4, window: (0, 32_000_000), bins: 32 };
    let plain = tiles::run(&mut CpuRunner::default(), &input).unwrap();
    let reps: Vec<u32> = [0usize, 1].iter().flat_map(|&l| plain.of(l).to_vec()).collect();
    let least = [1000u32, 1000];
    let nearest = stages::location_features::nearest(&mut CpuRunner::default(), &plain, &reps).unwrap();
    let host = groups::assign_host(&nearest, &least);
    assert!(host.stats.iter().all(|s| s.median > 1 << 16), "medians past 16 bits: {:?}", host.stats);
    let standing: Vec<u32> = host.candidates.iter().map(|c| c.0).collect();
    for l in (7..locations).step_by(601) {
        assert!(standing.contains(&l), "planted {l} stands out: {standing:?}");
    }
    assert_eq!(host.stats.iter().map(|s: &GroupStats| s.members).sum::<u32>(), locations);
    assert!(tiles::assign(&mut CpuRunner::default(), &input, &reps, (&least, None)).unwrap() == host, "the CPU runner");
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let before = ctx.traffic.totals();
    let on_gpu = tiles::assign(&mut GpuRunner::new(&ctx), &input, &reps, (&least, None)).unwrap();
    assert_eq!(on_gpu.stats, host.stats, "the device's statistics");
    assert_eq!(on_gpu.candidates, host.candidates, "the device's candidates");
    assert!(on_gpu.group_of == host.group_of, "the device's groups");
    let down = ctx.traffic.totals().1 - before.1;
    let want = 2 * 8 * 4 + 4 * u64::from(locations.div_ceil(8)) + 4 + 8 * host.candidates.len() as u64;
    assert_eq!(down, want, "the statistics, the groups, the candidates' count and the candidates");
    // Some locations left out (idle ones, not shown): out of every group on both backends.
    let shown: Vec<u32> = (0..locations).filter(|l| l % 5 != 2).collect();
    let host = tiles::assign(&mut CpuRunner::default(), &input, &reps, (&least, Some(&shown))).unwrap();
    let on_gpu = tiles::assign(&mut GpuRunner::new(&ctx), &input, &reps, (&least, Some(&shown))).unwrap();
    assert_eq!(host.stats.iter().map(|s| s.members).sum::<u32>(), shown.len() as u32);
    assert!(host.group_of.iter().skip(2).step_by(5).all(|&g| g == 15), "the hidden are in no group");
    assert_eq!(on_gpu.stats, host.stats);
    assert_eq!(on_gpu.candidates, host.candidates);
    assert!(on_gpu.group_of == host.group_of, "the groups with some hidden");
}

/// The overview's pixels from a pyramid: the GPU kernels and the CPU mirrors agree, line
/// counts exactly and colours within 2 of 255, for bands of ranks, single ranks, a rank drawn
/// from its own tiles and the summary track, each state mode and mix; a second window uploads
/// only its table and uniforms.
#[test]
fn pyramid_pixels_match() {
    use stages::location_features::tiles::Tiles;
    use stages::pyramid_pixels::{self as pp, BlockTicks, Grid, LineCells, OwnTiles, Rows, Run, Source};
    use stages::timeline_pixels::{self as tp, Look};
    let mut rng = Rng(17);
    let (ranks, states, t0) = (50u32, 3u32, 1000u64);
    let level_ticks: Vec<u64> = (0..13 * 3 * 64).map(|c| if c % 5 == 0 { 0 } else { rng.next_u64() % 400 }).collect();
    let totals: Vec<u64> = (0..3 * 128).map(|_| rng.next_u64() % 2_000).collect();
    let counts: Vec<u64> = (0..128 * 13).map(|c| if c % 3 == 0 { 0 } else { rng.next_u64() % 9 }).collect();
    let gradient: Vec<u64> = counts.iter().map(|&c| c * u64::from(rng.below(17))).collect();
    let tile_ticks: Vec<u64> = (0..ranks * states * 16).map(|_| rng.next_u64() % 400).collect();
    let tiles = std::sync::Arc::new(Tiles::quantise((ranks, states, 16), (t0, 400), &tile_ticks).unwrap());
    let owner: stages::Owner = std::sync::Arc::new(0u8);
    let tiles_owner: stages::Owner = tiles.clone();
    let src = Source {
        ranks,
        states,
        level: BlockTicks { block: 4, blocks: 13, grid: Grid { t0, bin_ticks: 100, bins: 64 }, ticks: &level_ticks },
        fine: Grid { t0, bin_ticks: 50, bins: 128 },
        totals: &totals,
        totals_owner: &owner,
        lines: LineCells { block: 4, blocks: 13, counts: &counts, gradient: &gradient },
        tiles: Some(OwnTiles {
            grid: Grid { t0, bin_ticks: 400, bins: 16 },
            unit: tiles.unit,
            words: &tiles.words,
            owner: &tiles_owner,
        }),
        owner: &owner,
    };
    let run = |lo, hi| Some(Run { lo, hi, own: false, summary: false });
    let mut of_row = vec![Some(Run { lo: 0, hi: ranks, own: false, summary: true }); 5];
    of_row.extend(std::iter::repeat_n(run(0, 20), 5));
    of_row.extend(std::iter::repeat_n(run(20, 50), 5));
    of_row.extend(std::iter::repeat_n(Some(Run { lo: 7, hi: 8, own: true, summary: false }), 5));
    of_row.push(None);
    of_row.extend((30..49).map(|r| run(r, r + 1)));
    let rows = Rows { of_row };
    let (w, h) = (97u32, 40u32);
    let slots = [0u32, 2, 7];
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    for (k, (window, stacked, additive)) in
        [((t0 + 123, t0 + 6000), false, false), ((t0 + 900, t0 + 1400), true, false), ((t0, t0 + 6400), false, true)]
            .into_iter()
            .enumerate()
    {
        let look = Look { width: w, height: h, window, stacked, opacity: 0.8, additive, filter: Default::default() };
        let cpu = pp::run(&mut CpuRunner::default(), &src, &rows, &look, &slots).unwrap();
        let before = ctx.traffic.totals();
        let gpu = pp::run(&mut GpuRunner::new(&ctx), &src, &rows, &look, &slots).unwrap();
        let up = ctx.traffic.totals().0 - before.0;
        if k > 0 {
            assert!(up < 4 * 1024, "window {k}: {up} bytes up (the pyramid is kept)");
        }
        let (a, b) = (cpu.counts.read_all().unwrap(), gpu.counts.read_all().unwrap());
        assert_eq!(a, b, "line counts, window {window:?}");
        assert!(a.iter().filter(|&&c| c > 0).count() > 300, "lines drawn: {}", a.iter().filter(|&&c| c > 0).count());
        assert!(a[..(5 * w) as usize].iter().all(|&c| c == 0), "the summary track draws no lines");
        assert_eq!(
            (cpu.max_count, cpu.pixels_with_lines, cpu.quantiles),
            (gpu.max_count, gpu.pixels_with_lines, gpu.quantiles)
        );
        let (a, b) = (cpu.rgba.read_all().unwrap(), gpu.rgba.read_all().unwrap());
        let stride = tp::stride(w) as usize;
        let mut worst = 0;
        for y in 0..h as usize {
            for x in 0..w as usize {
                let (p, q) = (a[y * stride + x].to_le_bytes(), b[y * stride + x].to_le_bytes());
                worst = worst.max(p.iter().zip(&q).map(|(u, v)| u.abs_diff(*v)).max().unwrap_or(0));
            }
        }
        assert!(worst <= 2, "colours differ by {worst} (window {window:?})");
        let drawn = |y: usize| (0..w as usize).filter(|&x| a[y * stride + x] != 0).count();
        assert!(drawn(0) > 0 && drawn(7) > w as usize / 2 && drawn(17) > 0 && drawn(25) > 0, "every kind of row drawn");
        assert!((0..w as usize).all(|x| a[20 * stride + x] == 0), "the gap row is empty");
        // The summary's top row is empty where the states' shares leave room.
        assert!((0..w as usize).any(|x| a[x] == 0) || k == 2, "the summary stacks its shares as they are");
    }
}

/// The GPU runner keeps its buffers between runs: a second run of the same work creates none,
/// a reused buffer reads as zero-filled as a new one does, and the traffic counted is exactly
/// the words uploaded (data and uniforms) and downloaded.
#[test]
fn runs_reuse_their_buffers_and_count_what_they_move() {
    use stages::{Kernel, Recording};
    // A context of its own: the shared one's counters move with the other tests.
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let values: Vec<u32> = (1..=1000).collect();
    let stats = |ctx: &stages::GpuContext| {
        let mut rec = Recording::default();
        let col = rec.alloc(1000, "values");
        let acc = rec.alloc(4, "acc");
        rec.upload(acc, vec![u32::MAX, 0, 0, 0]);
        rec.upload(col, &values[..]);
        rec.dispatch(Kernel::ReduceU32, 1000, vec![1000, 0, 0, 0, 0, 0, 0, 0], vec![(1, col), (3, acc)]);
        rec.download(col);
        rec.download(acc);
        GpuRunner::new(ctx).run(&rec).unwrap()
    };
    let first = stats(&ctx);
    assert_eq!(first[0], values, "the column read back");
    assert_eq!(&first[1][..4], &[1, 1000, 500_500, 0], "min, max, sum");
    let (created, _) = ctx.kept_buffers();
    let (up, down) = ctx.traffic.totals();
    assert_eq!(up, 1000 * 4 + 4 * 4 + 8 * 4, "the column, the accumulator and the uniform's eight words");
    assert_eq!(down, 1000 * 4 + 4 * 4, "the column and the accumulator");
    assert_eq!(stats(&ctx), first, "the same answer from kept buffers");
    let (again, reused) = ctx.kept_buffers();
    assert_eq!(again, created, "the second run created no buffer");
    assert!(reused >= 4, "two storage, one uniform and read-back buffers reused: {reused}");
    assert_eq!(ctx.traffic.totals(), (2 * up, 2 * down), "each run moves the same");
    // A buffer that held the column, taken again: zero-filled.
    let mut rec = Recording::default();
    let fresh = rec.alloc(1000, "fresh");
    rec.download(fresh);
    let zeros = GpuRunner::new(&ctx).run(&rec).unwrap();
    assert_eq!(ctx.kept_buffers().0, created, "taken from the kept ones");
    assert!(zeros[0].iter().all(|&w| w == 0), "a reused buffer reads as zero-filled");
}

/// Columns binned with their owner are kept on the device: binning them again with another
/// time window uploads only the dispatch's parameters, the grids equal the CPU's, and the
/// kept words go once nothing else holds their owner.
#[test]
fn kept_columns_are_uploaded_once_and_binned_again_in_place() {
    struct Columns {
        times: Vec<u64>,
        ranks: Vec<u32>,
        bytes: Vec<u32>,
    }
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let mut rng = Rng(11);
    let n = 200_000;
    let columns = std::sync::Arc::new(Columns {
        times: (0..n).map(|_| rng.next_u64() % 1_000_000).collect(),
        ranks: (0..n).map(|_| rng.below(70)).collect(),
        bytes: (0..n).map(|_| rng.below(1 << 20)).collect(),
    });
    let owner: stages::Owner = columns.clone();
    let column_bytes = (n * (8 + 4 + 4)) as u64;
    let mut uploaded = Vec::new();
    for (lo, hi, bins) in [(0, 999_999, 300), (250_000, 500_000, 120), (0, 999_999, 300)] {
        let input = HeatmapInput {
            x: AxisKey::time(&columns.times, lo, hi, bins),
            y: AxisKey::Id { keys: &columns.ranks, extent: 64 },
            weights: Some(&columns.bytes),
        };
        let before = ctx.traffic.totals().0;
        let grid = stages::bin_heatmap::run_kept(&mut GpuRunner::new(&ctx), &input, &owner).unwrap();
        uploaded.push(ctx.traffic.totals().0 - before);
        assert_eq!(grid, exaviz_model::bins::bin(&input), "window {lo}..{hi}");
    }
    // One dispatch of 16 parameter words each time; the columns only the first time.
    assert_eq!(uploaded, [column_bytes + 64, 64, 64]);
    assert_eq!(ctx.resident_columns(), (column_bytes, 6, 3), "bytes kept, hits, misses");
    // Once only the device holds the owner, its words go at the next upload of kept words.
    drop(owner);
    drop(columns);
    let other: std::sync::Arc<Vec<u32>> = std::sync::Arc::new(vec![3; 1000]);
    let owner: stages::Owner = other.clone();
    let input = HeatmapInput {
        x: AxisKey::Id { keys: &other, extent: 8 },
        y: AxisKey::Id { keys: &other, extent: 8 },
        weights: None,
    };
    let grid = stages::bin_heatmap::run_kept(&mut GpuRunner::new(&ctx), &input, &owner).unwrap();
    assert_eq!(grid.counts[3 * 8 + 3], 1000);
    assert_eq!(ctx.resident_columns().0, 4000, "only the new owner's words kept");
}

/// A small trace's columns for the timeline's pixels: `locations` rows of nested states (an
/// outer state each, inner ones at depth 1 and 2), and messages between them, some beyond the
/// window, one never received.
struct TimelineCase {
    starts: Vec<u64>,
    ends: Vec<u64>,
    locations: Vec<u32>,
    kinds: Vec<u32>,
    depths: Vec<u32>,
    send: Vec<u64>,
    recv: Vec<u64>,
    source: Vec<u32>,
    destination: Vec<u32>,
    bytes: Vec<u32>,
    tags: Vec<u32>,
}

fn timeline_case(locations: u32, seed: u64) -> TimelineCase {
    let mut rng = Rng(seed);
    let base = 3u64 << 32;
    let mut c = TimelineCase {
        starts: Vec::new(),
        ends: Vec::new(),
        locations: Vec::new(),
        kinds: Vec::new(),
        depths: Vec::new(),
        send: Vec::new(),
        recv: Vec::new(),
        source: Vec::new(),
        destination: Vec::new(),
        bytes: Vec::new(),
        tags: Vec::new(),
    };
    let push = |c: &mut TimelineCase, l: u32, a: u64, b: u64, k: u32, d: u32| {
        c.starts.push(a);
        c.ends.push(b);
        c.locations.push(l);
        c.kinds.push(k);
        c.depths.push(d);
    };
    for l in 0..locations {
        push(&mut c, l, base, base + 1_000_000, 0, 0);
        let mut t = base + rng.below(5000) as u64;
        while t < base + 990_000 {
            let len = 1 + rng.below(40_000) as u64;
            push(&mut c, l, t, t + len, 1 + rng.below(9), 1);
            if len > 100 && rng.below(2) == 0 {
                let a = t + rng.below((len / 2) as u32) as u64;
                push(&mut c, l, a, a + 1 + rng.below((len / 4) as u32) as u64, 1 + rng.below(9), 2);
            }
            t += len + rng.below(3000) as u64;
        }
    }
    for k in 0..3000u32 {
        let a = base - 50_000 + rng.below(1_100_000) as u64;
        c.send.push(a);
        c.recv.push(if k == 17 { u64::MAX } else { a + rng.below(60_000) as u64 });
        c.source.push(rng.below(locations));
        c.destination.push(rng.below(locations + 1));
        c.bytes.push(1 << rng.below(20));
        c.tags.push(rng.below(4));
    }
    c
}

/// The innermost pieces ([`innermost_pieces`]) as the timeline's kernels read them.
fn piece_columns(p: &Pieces) -> stages::timeline_pixels::SpanColumns<'_> {
    stages::timeline_pixels::SpanColumns { starts: &p.0, ends: &p.1, locations: &p.2, kinds: &p.3, depths: None }
}

/// A location's innermost pieces: starts, ends, locations and region ids.
type Pieces = (Vec<u64>, Vec<u64>, Vec<u32>, Vec<u32>);

/// The case's intervals, with their depths, as the timeline's kernels read them.
fn interval_columns(c: &TimelineCase) -> stages::timeline_pixels::SpanColumns<'_> {
    stages::timeline_pixels::SpanColumns {
        starts: &c.starts,
        ends: &c.ends,
        locations: &c.locations,
        kinds: &c.kinds,
        depths: Some(&c.depths),
    }
}

/// The case's messages as the timeline's kernels read them.
fn message_columns(c: &TimelineCase) -> stages::timeline_pixels::MessageColumns<'_> {
    stages::timeline_pixels::MessageColumns {
        send: &c.send,
        recv: &c.recv,
        source: &c.source,
        destination: &c.destination,
        bytes: &c.bytes,
        tags: &c.tags,
    }
}

/// The innermost pieces of the case's locations: each nested state hides its parent.
fn innermost_pieces(c: &TimelineCase) -> Pieces {
    let mut out = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let n = c.locations.iter().max().map_or(0, |&l| l + 1);
    for l in 0..n {
        let mut rows: Vec<usize> = (0..c.starts.len()).filter(|&k| c.locations[k] == l).collect();
        rows.sort_by_key(|&k| (c.starts[k], c.depths[k]));
        // Elementary pieces between every boundary, each given the deepest state covering it.
        let mut cuts: Vec<u64> = rows.iter().flat_map(|&k| [c.starts[k], c.ends[k]]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let top = rows.iter().filter(|&&k| c.starts[k] <= w[0] && c.ends[k] >= w[1]).max_by_key(|&&k| c.depths[k]);
            if let Some(&k) = top {
                out.0.push(w[0]);
                out.1.push(w[1]);
                out.2.push(l);
                out.3.push(c.kinds[k]);
            }
        }
    }
    out
}

/// The layout of [`timeline_pixels_match`]'s plot, 90 rows: rows 0-29 locations 0-2, 10 rows
/// each; 30-59 a band of locations 3-10 on one run (row 45 without one); 60-89 location 11 in
/// three levels of 10 rows; location 12 does not exist.
fn timeline_layout() -> stages::timeline_pixels::Layout {
    use stages::timeline_pixels::{INNERMOST, Layout, NONE, Run};
    // Rows 0-29: locations 0-2, 10 rows each; 30-59: a band of locations 3-10 on one run;
    // 60-89: location 11 in three levels of 10 rows; location 12 does not exist.
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for l in 0..3u32 {
        runs.push(Run { locations: vec![l], level: INNERMOST });
        rows.extend((0..10).map(|r| (l, 1.0 - (r as f32 + 0.5) / 10.0)));
    }
    runs.push(Run { locations: (3..11).collect(), level: INNERMOST });
    rows.extend((0..30).map(|r| (3, 1.0 - (r as f32 + 0.5) / 30.0)));
    for d in 0..3u32 {
        runs.push(Run { locations: vec![11], level: d });
        rows.extend((0..10).map(|r| (4 + d, 1.0 - (r as f32 + 0.5) / 10.0)));
    }
    rows[45].0 = NONE;
    let centres: Vec<f32> = (0..12u32).map(|l| if l < 3 { l as f32 * 10.0 + 5.0 } else { 45.0 + l as f32 }).collect();
    let slots: Vec<u32> = (0..10).map(|k| k % 8).collect();
    Layout::new(&slots, &centres, &rows, &runs)
}

/// The timeline's pixels composed by the GPU kernels and by their CPU mirrors: line counts and
/// the legend's statistics exactly equal, colours within 2 of 255 a channel (coverage is summed
/// in f32 and fixed point, in another order). Rows show one location, a band of several, and
/// the nesting levels of one location; both state modes and both mixes.
#[test]
fn timeline_pixels_match() {
    use stages::timeline_pixels::{self as tp, Columns, Look};
    let case = timeline_case(12, 5);
    let pieces = innermost_pieces(&case);
    let (w, h) = (203u32, 90u32);
    let layout = timeline_layout();
    let columns = Columns {
        pieces: piece_columns(&pieces),
        intervals: Some(interval_columns(&case)),
        messages: Some(message_columns(&case)),
        owner: None,
    };
    let base = 3u64 << 32;
    for (window, stacked, additive) in [
        ((base, base + 1_000_000), false, false),
        ((base + 200_000, base + 260_000), true, false),
        ((base + 1, base + 999_999), false, true),
    ] {
        let look = Look { width: w, height: h, window, stacked, opacity: 0.8, additive, filter: Default::default() };
        let cpu = tp::run(&mut CpuRunner::default(), &columns, &layout, &look).unwrap();
        let gpu = tp::run(&mut GpuRunner::new(gpu()), &columns, &layout, &look).unwrap();
        assert!(gpu.rgba.on_device() && !cpu.rgba.on_device());
        let (a, b) = (cpu.counts.read_all().unwrap(), gpu.counts.read_all().unwrap());
        assert_eq!(a, b, "line counts, window {window:?}");
        assert!(a.iter().filter(|&&c| c > 0).count() > 500, "lines drawn");
        assert_eq!(
            (cpu.max_count, cpu.pixels_with_lines, cpu.quantiles),
            (gpu.max_count, gpu.pixels_with_lines, gpu.quantiles)
        );
        let mut sorted: Vec<u32> = a.iter().copied().filter(|&c| c > 0).collect();
        sorted.sort_unstable();
        let q = |f: f32| sorted[((sorted.len() - 1) as f32 * f).round() as usize];
        assert_eq!(cpu.quantiles, [q(0.0), q(0.5), q(1.0)], "the quantiles of the pixels with lines");
        let (a, b) = (cpu.rgba.read_all().unwrap(), gpu.rgba.read_all().unwrap());
        assert_eq!(a.len(), (tp::stride(w) * h) as usize);
        let mut worst = 0;
        for y in 0..h as usize {
            for x in 0..w as usize {
                let k = y * tp::stride(w) as usize + x;
                let (p, q) = (a[k].to_le_bytes(), b[k].to_le_bytes());
                worst = worst.max(p.iter().zip(&q).map(|(u, v)| u.abs_diff(*v)).max().unwrap_or(0));
            }
        }
        assert!(worst <= 2, "colours differ by {worst} (window {window:?})");
        let states = a.iter().filter(|&&v| v != 0).count();
        assert!(states > (w * h) as usize / 2, "most pixels drawn: {states}");
        // The row without a run and no line through it is empty.
        assert!((0..w as usize).any(|x| a[45 * tp::stride(w) as usize + x] == 0));
    }
}

/// A chunk of a case's time as the timeline keeps a store's rows: its innermost pieces clipped
/// to it, the rows begun in it and those begun before it that overlap it.
struct TimeChunk {
    pieces: Pieces,
    own: TimelineCase,
    carried: TimelineCase,
}

/// The chunks `[cuts[k], cuts[k + 1])` of `case` and its innermost `pieces`.
fn chunks_of_time(case: &TimelineCase, pieces: &Pieces, cuts: &[u64]) -> Vec<std::sync::Arc<TimeChunk>> {
    let pick = |keep: &dyn Fn(usize, bool) -> bool| -> TimelineCase {
        let rows = |n: usize, message: bool| (0..n).filter(move |&k| keep(k, message));
        let i: Vec<usize> = rows(case.starts.len(), false).collect();
        let m: Vec<usize> = rows(case.send.len(), true).collect();
        TimelineCase {
            starts: i.iter().map(|&k| case.starts[k]).collect(),
            ends: i.iter().map(|&k| case.ends[k]).collect(),
            locations: i.iter().map(|&k| case.locations[k]).collect(),
            kinds: i.iter().map(|&k| case.kinds[k]).collect(),
            depths: i.iter().map(|&k| case.depths[k]).collect(),
            send: m.iter().map(|&k| case.send[k]).collect(),
            recv: m.iter().map(|&k| case.recv[k]).collect(),
            source: m.iter().map(|&k| case.source[k]).collect(),
            destination: m.iter().map(|&k| case.destination[k]).collect(),
            bytes: m.iter().map(|&k| case.bytes[k]).collect(),
            tags: m.iter().map(|&k| case.tags[k]).collect(),
        }
    };
    cuts.windows(2)
        .map(|c| {
            let (c0, c1) = (c[0], c[1]);
            let first = |k: usize, message: bool| if message { case.send[k] } else { case.starts[k] };
            let last = |k: usize, message: bool| if message { case.recv[k] } else { case.ends[k] };
            let own = pick(&|k, m| (c0..c1).contains(&first(k, m)));
            let carried = pick(&|k, m| first(k, m) < c0 && last(k, m) >= c0);
            let mut p: Pieces = Default::default();
            for k in 0..pieces.0.len() {
                let (a, b) = (pieces.0[k].max(c0), pieces.1[k].min(c1));
                if a < b {
                    p.0.push(a);
                    p.1.push(b);
                    p.2.push(pieces.2[k]);
                    p.3.push(pieces.3[k]);
                }
            }
            std::sync::Arc::new(TimeChunk { pieces: p, own, carried })
        })
        .collect()
}

/// A window drawn from chunks of time, each kept under its own owner (a store's rows as the
/// timeline keeps them around a window read from disk): each chunk's innermost pieces clipped
/// to its time, its intervals and messages begun in it, and the first chunk's begun before it.
/// The picture equals the one drawn from the columns whole (line counts exactly, colours within
/// 2 of 255), on the GPU and in the mirror; drawn again, the GPU sends only the parameters.
#[test]
fn timeline_pixels_drawn_from_chunks_of_time_equal_the_columns_whole() {
    use stages::timeline_pixels::{self as tp, Columns, Look, SpanColumns};
    let case = timeline_case(12, 5);
    let pieces = innermost_pieces(&case);
    let layout = timeline_layout();
    let base = 3u64 << 32;
    let whole = Columns {
        pieces: piece_columns(&pieces),
        intervals: Some(interval_columns(&case)),
        messages: Some(message_columns(&case)),
        owner: None,
    };
    // Chunks [c0, c1): the window begins inside the first, the last reaches past every row.
    let chunks = chunks_of_time(&case, &pieces, &[base + 150_000, base + 400_000, base + 700_000, u64::MAX]);
    assert!(
        chunks[0].carried.starts.len() > 5 && chunks[0].carried.send.len() > 5,
        "rows begun before the window's first chunk"
    );
    let none = SpanColumns { starts: &[], ends: &[], locations: &[], kinds: &[], depths: None };
    let mut parts = Vec::new();
    for (k, c) in chunks.iter().enumerate() {
        let owner: stages::Owner = c.clone();
        parts.push(Columns {
            pieces: piece_columns(&c.pieces),
            intervals: Some(interval_columns(&c.own)),
            messages: Some(message_columns(&c.own)),
            owner: Some(owner.clone()),
        });
        if k == 0 {
            parts.push(Columns {
                pieces: none,
                intervals: Some(interval_columns(&c.carried)),
                messages: Some(message_columns(&c.carried)),
                owner: Some(owner),
            });
        }
    }
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let mut firsts = Vec::new();
    for (window, stacked) in [((base + 200_000, base + 900_000), false), ((base + 390_000, base + 720_000), true)] {
        let look =
            Look { width: 203, height: 90, window, stacked, opacity: 0.8, additive: false, filter: Default::default() };
        let reference = tp::run(&mut CpuRunner::default(), &whole, &layout, &look).unwrap();
        let (want, colours) = (reference.counts.read_all().unwrap(), reference.rgba.read_all().unwrap());
        assert!(want.iter().filter(|&&c| c > 0).count() > 300, "lines drawn");
        let cpu = tp::run_parts(&mut CpuRunner::default(), &parts, &layout, &look).unwrap();
        let before = ctx.traffic.totals();
        let gpu = tp::run_parts(&mut GpuRunner::new(&ctx), &parts, &layout, &look).unwrap();
        let first = ctx.traffic.totals().0 - before.0;
        for (name, px) in [("mirror", &cpu), ("gpu", &gpu)] {
            assert_eq!(px.counts.read_all().unwrap(), want, "{name}: line counts, window {window:?}");
            assert_eq!(px.max_count, reference.max_count);
            let got = px.rgba.read_all().unwrap();
            let worst = got
                .iter()
                .zip(&colours)
                .map(|(a, b)| {
                    a.to_le_bytes().iter().zip(b.to_le_bytes()).map(|(u, v)| u.abs_diff(v)).max().unwrap_or(0)
                })
                .max()
                .unwrap_or(0);
            assert!(worst <= 2, "{name}: colours differ by {worst} (window {window:?})");
        }
        // Drawn again, every chunk's columns are found on the device: the parameters alone go up.
        let before = ctx.traffic.totals();
        tp::run_parts(&mut GpuRunner::new(&ctx), &parts, &layout, &look).unwrap();
        let again = ctx.traffic.totals().0 - before.0;
        assert!(again < 4096, "{again} bytes up again, {first} at first");
        firsts.push(first);
    }
    // The chunks' columns went up with the first window's picture, not with the second's.
    assert!(firsts[0] > 50_000 && firsts[1] < 4096, "{firsts:?}");
}

/// The layout table holds a class a location (its centre and runs shared): 16,384 locations in
/// a few bands and a row apart, with the summary's run over them all, in a byte a location; one
/// row each of 300 locations in 16 bits; and drawn from a table of 16-bit classes, the GPU and
/// the mirror agree as with a table of 8-bit ones.
#[test]
fn a_timeline_layout_holds_a_class_a_location() {
    use stages::timeline_pixels::{self as tp, Columns, INNERMOST, Layout, Look, Run, SUMMARY_RUN};
    let n = 16_384u32;
    let bands = [(0..5_000u32), (5_000..10_006), (10_008..n)];
    let mut runs: Vec<Run> = bands.iter().map(|b| Run { locations: b.clone().collect(), level: INNERMOST }).collect();
    runs.push(Run { locations: vec![10_006, 10_007], level: INNERMOST });
    runs.push(Run { locations: (0..n).collect(), level: INNERMOST });
    let centre = |l: u32| match l {
        0..5_000 => 100.5,
        5_000..10_006 => 300.5,
        10_006..10_008 => 450.0,
        _ => 600.5,
    };
    let centres: Vec<f32> = (0..n).map(centre).collect();
    let mut rows: Vec<(u32, f32)> = (0..40).map(|r| (4 | SUMMARY_RUN, 1.0 - (r as f32 + 0.5) / 40.0)).collect();
    rows.extend((40..700u32).map(|r| ((r - 40) / 220, 0.5)));
    let grouped = Layout::new(&[0, 1, 2], &centres, &rows, &runs);
    let bytes = grouped.words.len() * 4;
    assert!(bytes < 16_384 + 8_192, "{bytes} bytes of table for 16,384 locations in bands");
    assert_eq!(grouped.words[3], 8, "a byte a location");
    assert_eq!(grouped.words[4], 4, "four classes: three bands and the pair apart");
    // One row each: 300 classes, 16 bits a location.
    let case = timeline_case(300, 9);
    let pieces = innermost_pieces(&case);
    let runs: Vec<Run> = (0..300).map(|l| Run { locations: vec![l], level: INNERMOST }).collect();
    let centres: Vec<f32> = (0..300).map(|l| l as f32 + 0.5).collect();
    let rows: Vec<(u32, f32)> = (0..300).map(|r| (r, 0.5)).collect();
    let own = Layout::new(&(0..10).map(|k| k % 8).collect::<Vec<_>>(), &centres, &rows, &runs);
    assert_eq!(own.words[10], 16, "16 bits a location");
    assert_eq!(own.words[11], 300);
    let columns = Columns {
        pieces: piece_columns(&pieces),
        intervals: None,
        messages: Some(message_columns(&case)),
        owner: None,
    };
    let base = 3u64 << 32;
    let look = Look {
        width: 160,
        height: 300,
        window: (base, base + 1_000_000),
        stacked: false,
        opacity: 0.8,
        additive: false,
        filter: Default::default(),
    };
    let cpu = tp::run(&mut CpuRunner::default(), &columns, &own, &look).unwrap();
    let gpu = tp::run(&mut GpuRunner::new(gpu()), &columns, &own, &look).unwrap();
    let (a, b) = (cpu.counts.read_all().unwrap(), gpu.counts.read_all().unwrap());
    assert_eq!(a, b, "line counts");
    let stride = tp::stride(look.width) as usize;
    let (a, b) = (cpu.rgba.read_all().unwrap(), gpu.rgba.read_all().unwrap());
    let worst = (0..300 * stride).map(|k| {
        let (p, q) = (a[k].to_le_bytes(), b[k].to_le_bytes());
        p.iter().zip(&q).map(|(u, v)| u.abs_diff(*v)).max().unwrap_or(0)
    });
    assert!(worst.max().unwrap_or(0) <= 2);
    // Every location's row is drawn: its states cover its own pixel row.
    let empty = (0..300).filter(|&r| (0..160).all(|x| a[r * stride + x] == 0)).count();
    assert_eq!(empty, 0, "rows without their location's states");
}

/// Curves drawn as a density from their kept pieces, on the GPU and by the CPU mirror: 600
/// curves of 23 pieces each (some outside the picture, some not drawn), both mixes, colours
/// within 2 of 255 a channel (logarithms and exponentials differ in their last bits); a curve
/// not drawn lays no ink; the pieces and the curves' values go up once, a second window sends
/// the curves' opacities and the parameters alone, and nothing comes back.
#[test]
fn curve_density_matches() {
    use stages::curve_density::{self as cd, Kept, Look};
    let mut rng = Rng(31);
    let (w, h) = (320u32, 240u32);
    let (curves, per) = (600usize, 23usize);
    let mut segments = Vec::new();
    let mut pieces = Vec::new();
    for c in 0..curves {
        let mut at = [rng.unit() * 360.0 - 20.0, rng.unit() * 280.0 - 20.0];
        for k in 0..per {
            let next = [at[0] + rng.unit() * 30.0 - 15.0, at[1] + rng.unit() * 30.0 - 15.0];
            let ends = [at[0].floor() + 0.5, at[1].floor() + 0.5, next[0].floor() + 0.5, next[1].floor() + 0.5];
            let pixels = (ends[2] - ends[0]).abs().max((ends[3] - ends[1]).abs()) as u32 + 1;
            let length = (next[0] - at[0]).hypot(next[1] - at[1]);
            segments.push(ends);
            pieces.push([c as u32, length.to_bits(), pixels, (k as f32 + 0.5).to_bits()]);
            at = next;
        }
    }
    // In two parts, as a view keeps the curves each window added.
    let (owner, other): (stages::Owner, stages::Owner) = (std::sync::Arc::new(1u8), std::sync::Arc::new(2u8));
    let cut = 250 * per;
    let kept = [
        Kept { segments: &segments[..cut], pieces: &pieces[..cut], owner: &owner },
        Kept { segments: &segments[cut..], pieces: &pieces[cut..], owner: &other },
    ];
    let table = cd::table(256, |t| [t, 1.0 - t, 0.5 + 0.5 * t]);
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let alphas = |seed: u64| -> Vec<f32> {
        let mut rng = Rng(seed);
        (0..curves).map(|c| if c % 7 == 3 { 0.0 } else { rng.unit() * 0.8 }).collect()
    };
    let values: std::sync::Arc<Vec<u32>> = std::sync::Arc::new((0..2 * curves).map(|_| rng.unit().to_bits()).collect());
    let mut moved = Vec::new();
    for (window, additive) in [(1u64, false), (2, true), (3, false)] {
        let alphas = alphas(window);
        let curves = cd::Curves { alphas: &alphas, values: &values };
        let look = Look { width: w, height: h, additive, last: (per - 1) as f32, background: [0.05, 0.06, 0.08] };
        let cpu = cd::run(&mut CpuRunner::default(), &kept, curves, &table, &look).unwrap();
        let before = ctx.traffic.totals();
        let gpu = cd::run(&mut GpuRunner::new(&ctx), &kept, curves, &table, &look).unwrap();
        let after = ctx.traffic.totals();
        moved.push((after.0 - before.0, after.1 - before.1));
        assert!(gpu.rgba.on_device() && !cpu.rgba.on_device());
        let (a, b) = (cpu.rgba.read_all().unwrap(), gpu.rgba.read_all().unwrap());
        let stride = cpu.stride as usize;
        let mut worst = 0;
        let mut inked = 0;
        for y in 0..h as usize {
            for x in 0..w as usize {
                let (p, q) = (a[y * stride + x].to_le_bytes(), b[y * stride + x].to_le_bytes());
                worst = worst.max(p.iter().zip(&q).map(|(u, v)| u.abs_diff(*v)).max().unwrap_or(0));
                inked += usize::from(p[3] != 0);
            }
        }
        println!("window {window}: worst {worst}, {inked} inked");
        assert!(worst <= 2, "colours differ by {worst} (window {window})");
        assert!(inked > 10_000, "{inked} pixels inked");
    }
    // Nothing drawn: no ink anywhere.
    let none = vec![0.0f32; curves];
    let none = cd::Curves { alphas: &none, values: &values };
    let look = Look { width: w, height: h, additive: false, last: (per - 1) as f32, background: [0.0; 3] };
    let blank = cd::run(&mut GpuRunner::new(&ctx), &kept, none, &table, &look).unwrap();
    assert!(blank.rgba.read_all().unwrap().iter().all(|&p| p == 0));
    let pieces_bytes = (segments.len() * 32) as u64;
    assert!(moved[0].0 > pieces_bytes, "the pieces went up first: {moved:?}");
    for &(up, down) in &moved[1..] {
        assert!(up < (curves * 4) as u64 + 2048, "{up} bytes up for another window");
        assert_eq!(down, 0, "nothing read back");
    }
}

/// A message filter applied by the kernels equals drawing the messages it keeps alone, on the
/// GPU and on the CPU mirror: the same counts and colours.
#[test]
fn timeline_pixels_filtered_equal_the_kept_messages_alone() {
    use stages::timeline_pixels::{self as tp, Columns, Look};
    let case = timeline_case(12, 5);
    let pieces = innermost_pieces(&case);
    let (w, h) = (203u32, 90u32);
    let layout = timeline_layout();
    let columns = Columns {
        pieces: piece_columns(&pieces),
        intervals: None,
        messages: Some(message_columns(&case)),
        owner: None,
    };
    let base = 3u64 << 32;
    let filter = tp::Filter { bytes: (1 << 4, 1 << 14), tag: Some(2), senders: (2, 9), receivers: (0, 11) };
    let kept: Vec<usize> = (0..case.send.len())
        .filter(|&i| {
            let (b, t, s, d) = (case.bytes[i], case.tags[i], case.source[i], case.destination[i]);
            (16..=1 << 14).contains(&b) && t == 2 && (2..=9).contains(&s) && d <= 11
        })
        .collect();
    assert!(kept.len() > 50 && kept.len() < case.send.len() / 4, "{} kept", kept.len());
    let pick = |v: &[u64]| kept.iter().map(|&i| v[i]).collect::<Vec<u64>>();
    let pick32 = |v: &[u32]| kept.iter().map(|&i| v[i]).collect::<Vec<u32>>();
    let (send, recv) = (pick(&case.send), pick(&case.recv));
    let (source, destination, bytes, tags) =
        (pick32(&case.source), pick32(&case.destination), pick32(&case.bytes), pick32(&case.tags));
    let subset = Columns {
        messages: Some(tp::MessageColumns {
            send: &send,
            recv: &recv,
            source: &source,
            destination: &destination,
            bytes: &bytes,
            tags: &tags,
        }),
        ..columns.clone()
    };
    let look = Look {
        width: w,
        height: h,
        window: (base, base + 1_000_000),
        stacked: false,
        opacity: 0.8,
        additive: false,
        filter,
    };
    let plain = Look { filter: Default::default(), ..look };
    for runner in [&mut CpuRunner::default() as &mut dyn Runner, &mut GpuRunner::new(gpu())] {
        let filtered = tp::run(runner, &columns, &layout, &look).unwrap();
        let reference = tp::run(runner, &subset, &layout, &plain).unwrap();
        assert_eq!(filtered.counts.read_all().unwrap(), reference.counts.read_all().unwrap(), "{}", runner.name());
        assert_eq!(filtered.rgba.read_all().unwrap(), reference.rgba.read_all().unwrap(), "{}", runner.name());
    }
}

/// The timeline's columns kept on the device under their owner and an unchanged layout: a
/// second window uploads only its dispatches' parameters, and the picture and line counts stay
/// on the device until read.
#[test]
fn timeline_pixels_keep_their_columns_on_the_device() {
    use stages::timeline_pixels::{self as tp, Columns, INNERMOST, Layout, Look, Run};
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let case = std::sync::Arc::new(timeline_case(6, 9));
    let pieces = innermost_pieces(&case);
    let owner: stages::Owner = case.clone();
    let runs: Vec<Run> = (0..6).map(|l| Run { locations: vec![l], level: INNERMOST }).collect();
    let rows: Vec<(u32, f32)> = (0..60).map(|r| (r / 10, 0.5)).collect();
    let centres: Vec<f32> = (0..6).map(|l| l as f32 * 10.0 + 5.0).collect();
    let layout = Layout::new(&[0, 1, 2, 3, 4, 5, 6, 7, 7, 7], &centres, &rows, &runs);
    let columns = Columns {
        pieces: piece_columns(&pieces),
        intervals: None,
        messages: Some(message_columns(&case)),
        owner: Some(owner),
    };
    let base = 3u64 << 32;
    let mut moved = Vec::new();
    for window in [(base, base + 1_000_000), (base + 100_000, base + 300_000), (base + 5, base + 900_000)] {
        let look = Look {
            width: 160,
            height: 60,
            window,
            stacked: false,
            opacity: 0.8,
            additive: false,
            filter: Default::default(),
        };
        let before = ctx.traffic.totals();
        let px = tp::run(&mut GpuRunner::new(&ctx), &columns, &layout, &look).unwrap();
        let after = ctx.traffic.totals();
        moved.push((after.0 - before.0, after.1 - before.1));
        assert!(px.rgba.on_device() && px.counts.on_device());
    }
    // Uploaded at first: the pieces (8 + 8 + 4 + 4 bytes each), the messages (24 bytes each),
    // the layout table; after, six dispatches of 24 words of parameters each.
    let columns_bytes = (pieces.0.len() * 24 + case.send.len() * 24 + layout.words.len() * 4) as u64;
    assert_eq!(moved[0].0, columns_bytes + 6 * 96);
    assert_eq!(moved[1].0, 6 * 96);
    assert_eq!(moved[2].0, 6 * 96);
    // Read back: the five words of the legend's statistics only.
    assert!(moved.iter().all(|m| m.1 == 20), "{moved:?}");
}

/// `--timings`: every compute pass timed on the device from timestamps, by kernel, with the
/// bytes its bindings hold; nothing timed until asked, and the results unchanged.
#[test]
fn compute_passes_are_timed_by_kernel_when_asked() {
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let mut rng = Rng(5);
    let n = 100_000;
    let times: Vec<u64> = (0..n).map(|_| rng.next_u64() % 1_000_000).collect();
    let ranks: Vec<u32> = (0..n).map(|_| rng.below(64)).collect();
    let input = HeatmapInput {
        x: AxisKey::time(&times, 0, 999_999, 256),
        y: AxisKey::Id { keys: &ranks, extent: 64 },
        weights: None,
    };
    let bin = |ctx: &stages::GpuContext| stages::bin_heatmap::run(&mut GpuRunner::new(ctx), &input).unwrap();
    let untimed = bin(&ctx);
    assert!(ctx.pass_timings().is_empty(), "nothing is timed unless asked");
    assert!(ctx.time_passes(), "{} writes timestamps", ctx.describe());
    for _ in 0..3 {
        assert_eq!(bin(&ctx), untimed);
    }
    let timings = ctx.pass_timings();
    let passes: u64 = timings.iter().map(|t| t.passes).sum();
    assert!(timings.iter().all(|t| t.kernel == "bin_heatmap"), "{timings:?}");
    // The same dispatches each time: a multiple of 3 passes, each binding the points' keys.
    assert!(passes >= 3 && passes.is_multiple_of(3), "{timings:?}");
    assert!(timings[0].bytes >= passes * (n as u64) * 4, "{timings:?}");
    assert!(timings[0].device_ns > 0, "{timings:?}");
    // More passes than one query set holds are read in turns.
    let many = stages::BundleParams { iterations: 70, ..Default::default() };
    let edges: Vec<[f32; 4]> = (0..64).map(|k| [k as f32, 0.0, 0.5 * k as f32, 100.0]).collect();
    let bundled = stages::kde_bundle::run_recorded(
        &mut GpuRunner::new(&ctx),
        &stages::BundleInput { edges: &edges, weights: None },
        &many,
    );
    bundled.unwrap();
    let kernels: Vec<&str> = ctx.pass_timings().iter().map(|t| t.kernel).collect();
    for k in ["kde_blur_x", "kde_advect"] {
        assert!(kernels.contains(&k), "{kernels:?}");
    }
    let blur = ctx.pass_timings().into_iter().find(|t| t.kernel == "kde_blur_x").unwrap();
    assert_eq!(blur.passes, 70, "one blur a pass a iteration");
}

/// The matrix's cells binned, ranged and coloured by the GPU kernels and by their mirrors from
/// messages kept on the device: counts, 64-bit byte sums and the window's statistics exactly
/// equal (and equal to a plain count), colours within 2 of 255 (within 1 measured), by bytes
/// (a logarithmic scale), by messages (linear) and by messages of a tag, sizes, senders and
/// receivers. A second window of the same messages sends its parameters alone.
#[test]
fn matrix_cells_match() {
    use stages::matrix_cells::{self as mc, Look, Messages};
    let mut rng = Rng(41);
    let (n, ranks, cells) = (60_000usize, 300u32, 37u32);
    let send: Vec<u64> = (0..n).map(|_| (5u64 << 32) + u64::from(rng.below(1_000_000))).collect();
    let source: Vec<u32> = (0..n).map(|_| rng.below(ranks + 3)).collect();
    let destination: Vec<u32> = (0..n).map(|_| rng.below(ranks)).collect();
    let bytes: Vec<u32> =
        (0..n).map(|_| if rng.below(50) == 0 { u32::MAX - rng.below(9) } else { 1 << rng.below(20) }).collect();
    // Ranks in blocks of nine, rank 17 not drawn.
    let slot: std::sync::Arc<Vec<u32>> =
        std::sync::Arc::new((0..ranks).map(|r| if r == 17 { u32::MAX } else { (r / 9).min(cells - 1) }).collect());
    let table = stages::curve_density::table(256, |t| [t, 1.0 - t, 0.5 * t]);
    let owner: stages::Owner = std::sync::Arc::new(0u8);
    let tags: Vec<u32> = (0..n).map(|_| rng.below(4)).collect();
    let m = Messages {
        send: &send,
        source: &source,
        destination: &destination,
        bytes: &bytes,
        tags: &tags,
        owner: Some(&owner),
    };
    let ctx = stages::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let base = 5u64 << 32;
    // Three windows: by bytes, by messages, and by messages of tag 2, 64 B to 64 KB, from ranks
    // 20-250 to ranks 0-199.
    let filtered =
        stages::timeline_pixels::Filter { bytes: (64, 65_536), tag: Some(2), senders: (20, 250), receivers: (0, 199) };
    let windows = [
        ((base + 100_000, base + 700_000), true, Default::default()),
        ((base + 150_000, base + 650_000), false, Default::default()),
        ((base + 150_000, base + 650_000), false, filtered),
    ];
    for (k, (window, by_bytes, filter)) in windows.into_iter().enumerate() {
        let look = Look { cells, slot: &slot, window, by_bytes, filter };
        let kept = |i: usize| {
            let within = |v: u32, r: (u32, u32)| r.0 <= v && v <= r.1;
            within(bytes[i], filter.bytes)
                && filter.tag.is_none_or(|t| tags[i] == t)
                && within(source[i], filter.senders)
                && within(destination[i], filter.receivers)
        };
        let cpu = mc::run(&mut CpuRunner::default(), &m, &look, &table).unwrap();
        let before = ctx.traffic.totals();
        let gpu = mc::run(&mut GpuRunner::new(&ctx), &m, &look, &table).unwrap();
        let up = ctx.traffic.totals().0 - before.0;
        assert!(gpu.rgba.on_device() && gpu.counts.on_device());
        // A plain count of the same.
        let mut counts = vec![0u32; (cells * cells) as usize];
        let mut sums = vec![0u64; counts.len()];
        let mut messages = 0;
        for i in (0..n).filter(|&i| (window.0..window.1).contains(&send[i]) && kept(i)) {
            messages += 1;
            let (Some(&r), Some(&c)) = (slot.get(source[i] as usize), slot.get(destination[i] as usize)) else {
                continue;
            };
            if r < cells && c < cells {
                counts[(r * cells + c) as usize] += 1;
                sums[(r * cells + c) as usize] += u64::from(bytes[i]);
            }
        }
        let values: Vec<u64> = if by_bytes { sums.clone() } else { counts.iter().map(|&c| u64::from(c)).collect() };
        let range = (values.iter().copied().filter(|&v| v > 0).min().unwrap(), *values.iter().max().unwrap());
        let words: Vec<u32> = sums.iter().flat_map(|&s| [s as u32, (s >> 32) as u32]).collect();
        for (name, c) in [("mirror", &cpu), ("gpu", &gpu)] {
            assert_eq!(c.counts.read_all().unwrap(), counts, "{name}: counts");
            assert_eq!(c.sums.read_all().unwrap(), words, "{name}: byte sums");
            assert_eq!((c.messages, c.range), (messages, Some(range)), "{name}: statistics");
        }
        if k < 2 {
            assert_eq!(by_bytes, range.1 > 100 * range.0, "the scale tested: logarithmic by bytes, linear by messages");
        } else {
            assert!(messages > 1000 && messages < 20_000, "the filter keeps some: {messages}");
        }
        let (a, b) = (cpu.rgba.read_all().unwrap(), gpu.rgba.read_all().unwrap());
        let stride = cpu.stride as usize;
        let mut worst = 0;
        for r in 0..cells as usize {
            for c in 0..cells as usize {
                let (p, q) = (a[r * stride + c].to_le_bytes(), b[r * stride + c].to_le_bytes());
                worst = worst.max(p.iter().zip(&q).map(|(u, v)| u.abs_diff(*v)).max().unwrap_or(0));
                assert_eq!(p[3] == 0, values[r * cells as usize + c] == 0, "an empty cell is transparent");
            }
        }
        assert!(worst <= 2, "colours differ by {worst}");
        if k == 1 {
            // The messages, the slots and the table were kept: the window's parameters, the
            // statistics' first words.
            assert!(up < 1024, "{up} bytes up for a second window");
        }
        if k == 2 {
            // The tags went up with the first filter by tag.
            assert!(up >= n as u64 * 4 && up < n as u64 * 4 + 1024, "{up} bytes up for a filter by tag");
        }
    }
}
