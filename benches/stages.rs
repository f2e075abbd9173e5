//! Criterion benches of the compute stages on both backends (CPU mirrors, and the GPU runner on
//! whatever adapter exists: lavapipe here, where GPU numbers check correctness, not speed), next
//! to a plain serial Rust loop as the reference peer. Throughput is in elements per second.
//!
//!     cargo bench -p exaviz-benches --bench stages

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use exaviz_benches::{messages, points, short_segments, timeline_lines};
use exaviz_compute as stages;
use exaviz_compute::GpuContext;
use exaviz_compute::cpu::CpuRunner;
use exaviz_compute::gpu_runner::GpuRunner;
use exaviz_compute::{DensityInput, Runner};
use exaviz_model::bins::{AxisKey, HeatmapInput};

fn runners(ctx: Option<&GpuContext>) -> Vec<(&'static str, Box<dyn Runner + '_>)> {
    let mut v: Vec<(&'static str, Box<dyn Runner>)> = vec![("cpu", Box::new(CpuRunner::default()))];
    if let Some(ctx) = ctx {
        v.push(("gpu", Box::new(GpuRunner::new(ctx))));
    }
    v
}

/// The same 20M points `benches/peer_compare.py points` gives Canvas.points: "serial" is the
/// loop a canvas runs (one thread, a key per point, a 32-bit count per cell).
fn bench_points(c: &mut Criterion, ctx: Option<&GpuContext>, n: usize) {
    let (xs, ys) = points(n, 1024);
    let mut g = c.benchmark_group("bin_points_1024x1024");
    g.throughput(Throughput::Elements(n as u64)).sample_size(10);
    g.bench_function(BenchmarkId::new("serial", n), |b| {
        b.iter(|| {
            let mut counts = vec![0u32; 1024 * 1024];
            for (&x, &y) in xs.iter().zip(&ys) {
                if (0.0..1024.0).contains(&x) && (0.0..1024.0).contains(&y) {
                    counts[y as usize * 1024 + x as usize] += 1;
                }
            }
            counts
        })
    });
    let input = HeatmapInput {
        x: AxisKey::scaled(&xs, 0.0, 1024.0, 1024),
        y: AxisKey::scaled(&ys, 0.0, 1024.0, 1024),
        weights: None,
    };
    for (name, mut r) in runners(ctx) {
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| stages::bin_heatmap::run(r.as_mut(), &input).unwrap())
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    let ctx = GpuContext::new().map_err(|e| eprintln!("no GPU adapter ({e}): GPU benches skipped")).ok();
    if let Some(ctx) = &ctx {
        eprintln!("GPU adapter: {}", ctx.describe());
    }

    // 20M messages (240 MB of columns): well beyond the caches, as a trace is.
    let n = 20_000_000;
    // Behind an Arc, so that "gpu_kept" can keep them on the device as a dataset's columns.
    let columns = std::sync::Arc::new(messages(n, 1024));
    let (src, dst, bytes) = (&columns.0, &columns.1, &columns.2);
    let mut g = c.benchmark_group("bin_heatmap_1024x1024");
    g.throughput(Throughput::Elements(n as u64)).sample_size(10);
    // The limit: one streaming read of the same three columns (a sum, on every core).
    g.bench_function(BenchmarkId::new("stream_read", n), |b| {
        use rayon::prelude::*;
        b.iter(|| {
            (&src[..], &dst[..], &bytes[..])
                .into_par_iter()
                .map(|(&s, &d, &w)| u64::from(s) + u64::from(d) + u64::from(w))
                .sum::<u64>()
        })
    });
    g.bench_function(BenchmarkId::new("serial", n), |b| {
        b.iter(|| {
            let mut counts = vec![0u32; 1024 * 1024];
            let mut sums = vec![0u64; 1024 * 1024];
            for i in 0..n {
                let c = (src[i] * 1024 + dst[i]) as usize;
                counts[c] += 1;
                sums[c] += u64::from(bytes[i]);
            }
            (counts, sums)
        })
    });
    let input = HeatmapInput {
        x: AxisKey::Id { keys: dst, extent: 1024 },
        y: AxisKey::Id { keys: src, extent: 1024 },
        weights: Some(bytes),
    };
    // "cpu": the plain path (partitioned scatter); "cpu_mirror": the WGSL mirror's recording.
    g.bench_function(BenchmarkId::new("cpu_mirror", n), |b| {
        b.iter(|| stages::bin_heatmap::run_recorded(&mut CpuRunner::default(), &input).unwrap())
    });
    for (name, mut r) in runners(ctx.as_ref()) {
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| stages::bin_heatmap::run(r.as_mut(), &input).unwrap())
        });
    }
    // "gpu_kept": the columns uploaded once and kept on the device, as a gesture re-binning a
    // dataset's columns finds them: each iteration uploads the parameters and reads the grid.
    if let Some(ctx) = ctx.as_ref() {
        let owner: stages::Owner = columns.clone();
        g.bench_function(BenchmarkId::new("gpu_kept", n), |b| {
            b.iter(|| stages::bin_heatmap::run_kept(&mut GpuRunner::new(ctx), &input, &owner).unwrap())
        });
    }
    g.finish();

    bench_points(c, ctx.as_ref(), n);

    let n = 1_000_000;
    let segs = short_segments(n, 1024);
    let mut g = c.benchmark_group("line_density_16px_1024x1024");
    g.throughput(Throughput::Elements(n as u64));
    let input = DensityInput { segments: &segs, weights: None, width: 1024, height: 1024 };
    for (name, mut r) in runners(ctx.as_ref()) {
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| stages::line_density::run(r.as_mut(), &input).unwrap())
        });
    }
    g.finish();

    straight_lines(c, ctx.as_ref());
    location_features(c, ctx.as_ref());

    let n = 8_000_000;
    let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut g = c.benchmark_group("reduce_u32");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("serial", n), |b| {
        b.iter(|| {
            let (mut lo, mut hi, mut sum) = (u32::MAX, 0u32, 0u64);
            for &v in &values {
                lo = lo.min(v);
                hi = hi.max(v);
                sum += u64::from(v);
            }
            (lo, hi, sum)
        })
    });
    for (name, mut r) in runners(ctx.as_ref()) {
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| stages::reduce::stats_u32(r.as_mut(), &values).unwrap())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("histogram_u32_256_bins");
    g.throughput(Throughput::Elements(n as u64));
    for (name, mut r) in runners(ctx.as_ref()) {
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| stages::reduce::histogram_u32(r.as_mut(), &values, 0, 1 << 24, 256).unwrap())
        });
    }
    g.finish();
}

/// The straight-line density of a timeline's message lines.
fn straight_lines(c: &mut Criterion, ctx: Option<&GpuContext>) {
    // The timeline's message lines: 1M straight lines between row centres of a 904 x 656 plot
    // (`timeline_lines`: most short, a tenth across the plot),
    // each cut into three pieces weighted 0, 8 and 16 from sender to receiver, drawn by the
    // straight-line path; beside it the same pieces as one weighted pass of segments (the
    // general path, which the straight one equals count for count) and the mirror's recording.
    let n = 1_000_000;
    let (w, h) = (904, 656);
    let lines = timeline_lines(n, w, h);
    let weights = [0u32, 8, 16];
    let straight = stages::line_density::StraightInput { lines: &lines, weights: &weights, width: w, height: h };
    let pieces: Vec<[f32; 4]> =
        lines.iter().flat_map(|l| (0..3).map(move |k| stages::line_density::piece(l, k, 3))).collect();
    let piece_weights: Vec<u32> = (0..n).flat_map(|_| weights).collect();
    let mut g = c.benchmark_group("line_density_straight_timeline_904x656");
    g.throughput(Throughput::Elements(n as u64));
    let general = DensityInput { segments: &pieces, weights: Some(&piece_weights), width: w, height: h };
    g.bench_function(BenchmarkId::new("cpu_weighted_pieces", n), |b| {
        b.iter(|| stages::line_density::run(&mut CpuRunner::default(), &general).unwrap())
    });
    g.bench_function(BenchmarkId::new("cpu_mirror", n), |b| {
        b.iter(|| stages::line_density::straight_recorded(&mut CpuRunner::default(), &straight).unwrap())
    });
    for (name, mut r) in runners(ctx) {
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| stages::line_density::straight(r.as_mut(), &straight).unwrap())
        });
    }
    g.finish();
}

/// Rows grouped by behaviour: the per-location features of 16,384 locations' 1.6M intervals
/// (100 each over a window, 32 time bins, 12 colour slots), and every location's nearest of 8
/// representatives; "serial" is the features summed by one plain loop.
fn location_features(c: &mut Criterion, ctx: Option<&GpuContext>) {
    use stages::location_features::{self as lf, FeatureInput};
    let (locations, each) = (16_384u32, 100u64);
    let n = locations as usize * each as usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |m: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % m
    };
    let (mut location, mut start, mut end, mut slot) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for l in 0..locations {
        let mut at = next(1_000);
        for _ in 0..each {
            let len = 1 + next(20_000);
            location.push(l);
            start.push(at);
            end.push(at + len);
            slot.push(next(12) as u32);
            at += len + next(2_000);
        }
    }
    let window = (0, *end.iter().max().unwrap_or(&1));
    let input = FeatureInput {
        location: &location,
        start: &start,
        end: &end,
        slot: &slot,
        locations,
        window,
        bins: 32,
        slots: 12,
    };
    let mut g = c.benchmark_group("location_features_16384x32x12");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("serial", n), |b| {
        b.iter(|| {
            let q = lf::quantum(window, 32);
            let bin = q * u64::from(lf::BIN_QUANTA);
            let mut out = vec![0u32; locations as usize * 32 * 12];
            for k in 0..n {
                let (a, e) = (start[k] / q * q, end[k] / q * q);
                let mut t = a;
                while t < e {
                    let b = (t / bin + 1) * bin;
                    let hi = b.min(e);
                    let at = (location[k] as usize * 32 + (t / bin) as usize) * 12 + slot[k] as usize;
                    out[at] += ((hi - t) / q) as u32;
                    t = hi;
                }
            }
            out
        })
    });
    for (name, mut r) in runners(ctx) {
        g.bench_function(BenchmarkId::new(name, n), |b| b.iter(|| lf::run(r.as_mut(), &input).unwrap()));
    }
    g.finish();
    let features = lf::run(&mut CpuRunner::default(), &input).unwrap();
    let reps: Vec<u32> = (0..8).flat_map(|k| features.of(k * 1_000).to_vec()).collect();
    let mut g = c.benchmark_group("location_distances_16384x8");
    g.throughput(Throughput::Elements(u64::from(locations)));
    for (name, mut r) in runners(ctx) {
        g.bench_function(BenchmarkId::new(name, locations), |b| {
            b.iter(|| lf::nearest(r.as_mut(), &features, &reps).unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
