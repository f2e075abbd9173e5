//! KDE edge bundling: GPU (lavapipe) against the CPU mirror, and what bundling must do.
//!
//! Tolerance: positions are f32 and a point that lands one density cell away on one backend
//! moves differently afterwards, so agreement is statistical: the mean distance between the two
//! backends' points must be below 1e-3 of the unit square and 99% of points within 1e-2.

use exaviz_compute as stages;
use exaviz_compute::cpu::CpuRunner;
use exaviz_compute::gpu_runner::GpuRunner;
use exaviz_compute::{BundleInput, BundleParams, Bundled, Runner};
use exaviz_tests::{Rng, gpu};

/// Random chords of a circle of 64 nodes inside the unit square, plus a degenerate edge.
fn ring_edges(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut r = Rng(seed);
    let node = |i: u32| {
        let a = std::f32::consts::TAU * i as f32 / 64.0;
        [0.5 + 0.45 * a.cos(), 0.5 + 0.45 * a.sin()]
    };
    (0..n)
        .map(|_| {
            let (a, b) = (node(r.below(64)), node(r.below(64)));
            [a[0], a[1], b[0], b[1]]
        })
        .chain([[0.3, 0.3, 0.3, 0.3]])
        .collect()
}

fn compare(a: &Bundled, b: &Bundled) {
    assert_eq!(a.points.len(), b.points.len());
    let mut d: Vec<f32> =
        a.points.iter().zip(&b.points).map(|(p, q)| ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt()).collect();
    let mean = d.iter().sum::<f32>() / d.len() as f32;
    d.sort_by(f32::total_cmp);
    let p99 = d[(d.len() * 99) / 100];
    assert!(mean < 1e-3, "mean distance {mean}");
    assert!(p99 < 1e-2, "99th percentile {p99}");
}

fn run(r: &mut dyn Runner, edges: &[[f32; 4]], weights: Option<&[u32]>, p: &BundleParams) -> Bundled {
    stages::kde_bundle::run(r, &BundleInput { edges, weights }, p).unwrap()
}

#[test]
fn gpu_and_cpu_bundles_agree() {
    let edges = ring_edges(3000, 1);
    let weights: Vec<u32> = (0..edges.len() as u32).map(|i| 1 + i % 7).collect();
    let p = BundleParams::default();
    let a = run(&mut CpuRunner::default(), &edges, Some(&weights), &p);
    let b = run(&mut GpuRunner::new(gpu()), &edges, Some(&weights), &p);
    compare(&a, &b);
}

#[test]
fn chunked_bundles_agree_with_unchunked() {
    let edges = ring_edges(1000, 2);
    let p = BundleParams { samples: 8, grid: 128, iterations: 5, ..Default::default() };
    let input = BundleInput { edges: &edges, weights: None };
    let whole = stages::kde_bundle::run_recorded(&mut CpuRunner::default(), &input, &p).unwrap();
    // 8 samples x 8 bytes = 64 bytes per edge: a 4 KiB binding holds 64 edges, so 16 chunks.
    let mut small = CpuRunner { max_binding_bytes: 128 * 128 * 8 };
    let rec = stages::kde_bundle::record(&input, &p, 4096);
    assert!(rec.is_err(), "the density grid alone exceeds 4 KiB");
    let chunked_cpu = stages::kde_bundle::run_recorded(&mut small, &input, &p).unwrap();
    assert_eq!(whole, chunked_cpu, "chunking must not change the CPU result");
    let chunked = {
        let rec = stages::kde_bundle::record(&BundleInput { edges: &edges, weights: None }, &p, 128 * 128 * 8).unwrap();
        let out = GpuRunner::new(gpu()).run(&rec).unwrap();
        let points =
            out.iter().flat_map(|w| w.chunks_exact(2).map(|c| [f32::from_bits(c[0]), f32::from_bits(c[1])])).collect();
        Bundled { samples: 8, points }
    };
    compare(&whole, &chunked);
}

/// The CPU runner bundles in plain memory (`cpu::kde_bundle_plain`), not by running the recording the
/// GPU runs; the two give the same floats, bit for bit: edge counts short of, equal to and past
/// a group of eight lanes, every sample count's ends, no iteration, 32- and 64-bit density sums,
/// and edges that are degenerate, NaN or outside the unit square.
#[test]
fn plain_cpu_bundling_equals_the_recording() {
    let mut cases = 0;
    for (n, samples, grid, iterations) in [
        (0, 16, 64, 3),
        (1, 16, 64, 3),
        (7, 3, 32, 4),
        (8, 2, 32, 2),
        (9, 32, 64, 5),
        (301, 16, 128, 10),
        (64, 5, 64, 0),
    ] {
        let mut edges = ring_edges(n, 7 + n as u64);
        edges.truncate(n);
        if n >= 9 {
            edges[2] = [0.5, 0.5, 0.5, 0.5];
            edges[3] = [f32::NAN, 0.2, 0.7, 0.7];
            edges[4] = [-0.3, 0.1, 1.4, 0.9];
        }
        let p = BundleParams { samples, grid, iterations, ..Default::default() };
        let light: Vec<u32> = (0..n as u32).map(|i| 1 + i % 5).collect();
        let heavy: Vec<u32> = (0..n as u32).map(|i| u32::MAX / 3 - i).collect();
        for weights in [None, Some(&light[..]), Some(&heavy[..])] {
            let input = BundleInput { edges: &edges, weights };
            let plain = stages::kde_bundle::run_each(&mut CpuRunner::default(), &input, &p).unwrap();
            let recorded = stages::kde_bundle::run_recorded(&mut CpuRunner::default(), &input, &p).unwrap();
            assert_eq!(plain.points.len(), n * samples as usize);
            let bits = |b: &Bundled| b.points.iter().flat_map(|q| q.map(f32::to_bits)).collect::<Vec<_>>();
            assert!(
                bits(&plain) == bits(&recorded),
                "{n} edges, {samples} samples, weights {:?}",
                weights.map(|w| w[0])
            );
            cases += 1;
        }
    }
    assert_eq!(cases, 21);
}

#[test]
fn endpoints_stay_and_identity_survives() {
    let edges = ring_edges(500, 3);
    let b = run(&mut GpuRunner::new(gpu()), &edges, None, &BundleParams::default());
    assert_eq!(b.len(), edges.len());
    for (i, e) in edges.iter().enumerate() {
        let pts = b.edge(i);
        assert_eq!(pts[0], [e[0], e[1]], "edge {i} start");
        assert_eq!(pts[pts.len() - 1], [e[2], e[3]], "edge {i} end");
        assert!(pts.iter().all(|p| p[0].is_finite() && p[1].is_finite()));
    }
}

#[test]
fn parallel_edges_are_pulled_together() {
    // Two groups of 50 parallel horizontal edges, 0.04 apart inside each group.
    let mut edges = Vec::new();
    for i in 0..50 {
        let y = 0.30 + 0.04 * (i % 2) as f32 + 0.0004 * i as f32;
        edges.push([0.1, y, 0.9, y]);
    }
    let p = BundleParams::default();
    for r in [&mut CpuRunner::default() as &mut dyn Runner, &mut GpuRunner::new(gpu())] {
        let b = run(r, &edges, None, &p);
        let mid: Vec<f32> = (0..edges.len()).map(|e| b.edge(e)[8][1]).collect();
        let spread = mid.iter().cloned().fold(f32::MIN, f32::max) - mid.iter().cloned().fold(f32::MAX, f32::min);
        assert!(spread < 0.02, "{}: mid-points still spread over {spread}", r.name());
    }
}

#[test]
fn invalid_parameters_are_refused() {
    let edges = ring_edges(10, 4);
    for p in [
        BundleParams { samples: 1, ..Default::default() },
        BundleParams { samples: 40, ..Default::default() },
        BundleParams { grid: 8, ..Default::default() },
        BundleParams { kernel: f32::NAN, ..Default::default() },
        BundleParams { step: 2.0, ..Default::default() },
    ] {
        let e = stages::kde_bundle::run(&mut CpuRunner::default(), &BundleInput { edges: &edges, weights: None }, &p);
        assert!(e.is_err(), "{p:?}");
    }
}

#[test]
fn gpu_and_cpu_bsplines_agree_and_keep_endpoints() {
    use exaviz_render::layout::hierarchy::quadtree_polygons;
    let edges = ring_edges(2000, 5);
    let polygons = quadtree_polygons(&edges, 8);
    // Polygons of every length the tree makes, straight ones included.
    let lens: std::collections::BTreeSet<u32> = polygons.offsets.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(lens.len() >= 4 && lens.contains(&2), "{lens:?}");
    for (samples, beta, degree) in [(16, 0.85, 3), (5, 1.0, 3), (32, 0.0, 3), (16, 0.85, 2), (9, 1.0, 1)] {
        let curve = stages::bspline::Curve { samples, beta, degree };
        let a = stages::bspline::run(&mut CpuRunner::default(), &polygons, curve).unwrap();
        let b = stages::bspline::run(&mut GpuRunner::new(gpu()), &polygons, curve).unwrap();
        assert_eq!(a.points.len(), edges.len() * samples as usize);
        // Tolerance: the same few float operations per point; 1e-5 of the unit square.
        let worst = a
            .points
            .iter()
            .zip(&b.points)
            .map(|(p, q)| (p[0] - q[0]).abs().max((p[1] - q[1]).abs()))
            .fold(0f32, f32::max);
        assert!(worst < 1e-5, "beta {beta}: worst difference {worst}");
        for (e, edge) in edges.iter().enumerate() {
            let c = a.edge(e);
            assert_eq!((c[0], c[c.len() - 1]), ([edge[0], edge[1]], [edge[2], edge[3]]), "edge {e}");
        }
        if beta == 0.0 {
            // Fully straightened: every point on the chord.
            for (e, edge) in edges.iter().enumerate() {
                for p in a.edge(e) {
                    let cross = (edge[2] - edge[0]) * (p[1] - edge[1]) - (edge[3] - edge[1]) * (p[0] - edge[0]);
                    assert!(cross.abs() < 1e-4, "edge {e}: {p:?} off the line");
                }
            }
        }
    }
}

#[test]
fn quality_metrics_tell_bundlers_apart() {
    use exaviz_render::bundling;
    use exaviz_render::bundling::Bundler;
    // Few enough chords that the straight ones leave most of the disc empty at 512².
    let edges = ring_edges(400, 6);
    let mut cpu = CpuRunner::default();
    let straight = Bundler::Straight { samples: 16 }.run(&mut cpu, &edges, None).unwrap();
    let q = bundling::quality(&mut cpu, &edges, &straight, 512).unwrap();
    assert!((q.ink_ratio - 1.0).abs() < 0.02, "{q:?}");
    assert!((q.distortion_mean - 1.0).abs() < 1e-4 && q.endpoint_displacement_max == 0.0, "{q:?}");
    for bundler in [Bundler::Kde(BundleParams::default()), Bundler::Hierarchical { samples: 16, beta: 0.85, depth: 8 }]
    {
        let b = bundler.run(&mut cpu, &edges, None).unwrap();
        let q = bundling::quality(&mut cpu, &edges, &b, 512).unwrap();
        // Measured: kde 0.67, hierarchical 0.95 (a quadtree is a weak hierarchy for a circle).
        let most = if bundler.name() == "kde" { 0.8 } else { 0.98 };
        assert!(q.ink_ratio < most, "{}: bundling should save ink: {q:?}", bundler.name());
        assert!(q.distortion_mean > 1.0 && q.distortion_max < 10.0, "{}: {q:?}", bundler.name());
        assert_eq!(q.endpoint_displacement_max, 0.0, "{}", bundler.name());
        assert!(q.mean_displacement > 0.005, "{}: {q:?}", bundler.name());
    }
}

/// Identical edges are bundled once (`run` merges them); the result equals bundling every edge
/// as it is, bit for bit, on the CPU path, and each output curve still belongs to its own edge.
#[test]
fn merging_identical_edges_changes_nothing() {
    // Every edge from its lower endpoint (by bits) to its higher: repeats, but no reverses.
    let reversed = |e: &[f32; 4]| [e[2], e[3], e[0], e[1]];
    let bits = |e: &[f32; 4]| e.map(f32::to_bits);
    let edges: Vec<[f32; 4]> =
        ring_edges(2000, 5).iter().map(|e| if bits(&reversed(e)) < bits(e) { reversed(e) } else { *e }).collect();
    let mut seen = std::collections::HashSet::new();
    assert!(edges.iter().any(|e| !seen.insert(bits(e))), "the test needs repeated edges");
    assert!(!edges.iter().any(|e| bits(e) != bits(&reversed(e)) && seen.contains(&bits(&reversed(e)))));
    let weights: Vec<u32> = (0..edges.len() as u32).map(|i| 1 + i % 5).collect();
    let p = BundleParams { iterations: 6, ..Default::default() };
    for w in [None, Some(weights.as_slice())] {
        let input = BundleInput { edges: &edges, weights: w };
        let merged = stages::kde_bundle::run(&mut CpuRunner::default(), &input, &p).unwrap();
        let each = stages::kde_bundle::run_each(&mut CpuRunner::default(), &input, &p).unwrap();
        assert_eq!(merged, each);
        for (e, edge) in edges.iter().enumerate() {
            assert_eq!(merged.edge(e)[0], [edge[0], edge[1]]);
            assert_eq!(merged.edge(e)[15], [edge[2], edge[3]]);
        }
    }
}

/// An edge and its reverse are bundled once: `b -> a` gets `a -> b`'s curve backwards, bit for
/// bit, and the whole result stays within rounding of bundling every edge as it is.
#[test]
fn reversed_edges_share_one_curve() {
    let mut edges = ring_edges(2000, 5);
    let n = edges.len();
    let reversed: Vec<[f32; 4]> = edges.iter().take(300).map(|e| [e[2], e[3], e[0], e[1]]).collect();
    edges.extend(reversed);
    let p = BundleParams { iterations: 6, ..Default::default() };
    let input = BundleInput { edges: &edges, weights: None };
    let merged = stages::kde_bundle::run(&mut CpuRunner::default(), &input, &p).unwrap();
    let each = stages::kde_bundle::run_each(&mut CpuRunner::default(), &input, &p).unwrap();
    for k in (0..300).filter(|&k| edges[k][..2] != edges[k][2..]) {
        let (a, b) = (merged.edge(k), merged.edge(n + k));
        assert!(a.iter().eq(b.iter().rev()), "edge {k} and its reverse");
    }
    let mut worst = 0f32;
    for (m, e) in merged.points.iter().zip(&each.points) {
        worst = worst.max((m[0] - e[0]).abs().max((m[1] - e[1]).abs()));
    }
    eprintln!("largest difference from bundling each edge: {worst}");
    assert!(worst < 1e-4, "merged and unmerged differ by {worst}");
    for (e, edge) in edges.iter().enumerate() {
        assert_eq!(merged.edge(e)[0], [edge[0], edge[1]]);
        assert_eq!(merged.edge(e)[15], [edge[2], edge[3]]);
    }
}
