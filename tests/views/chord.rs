//! `--view chord`: processes on a circle, pairs bundled along the rank hierarchy (Brendel et al., 2016), for every generated MPI case.

use super::{MPI_CASES, both, golden, open};

#[test]
fn chord_matches_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let picture = both("chord", &[], &d, (480, 360));
        assert!(picture.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("chord_{case}.png"), &picture);
    }
}

/// Past `DENSE_PAIRS` pairs the chord and sender/receiver diagrams draw their curves as a
/// density image (the line-density stage) instead of a stroke each: the same on both backends.
#[test]
fn many_pairs_are_drawn_as_a_density_on_both_backends() {
    use exaviz_views::pairs::{DENSE_PAIRS, pairs_in};
    let d = open("gen:fd4?ranks=2000&messages=200000");
    let (_, pairs) = pairs_in(&d, &exaviz_compute::Backend::Cpu, "chord", 8192, None).unwrap();
    assert!(pairs.len() > DENSE_PAIRS, "{} pairs: not past {DENSE_PAIRS}", pairs.len());
    for view in ["chord", "sendrecv"] {
        let picture = both(view, &[], &d, (560, 400));
        assert!(picture.distinct_colours() > 20, "{view}: the picture looks blank");
        golden(&format!("{view}_dense_fd4.png"), &picture);
    }
}

/// On a GPU the dense curves are drawn where their pieces are kept (the curve_density stage):
/// the plot is one raster composed on the device, within the GPU's tolerance of the CPU's
/// picture (above); a window within the first (its pairs among those drawn) sends the curves'
/// opacities alone, at most 64 KiB for 10,000 curves, and reads nothing back but the finished
/// picture.
#[test]
fn dense_curves_are_drawn_from_pieces_kept_on_the_device() {
    use exaviz_model::selection::Selection;
    use exaviz_views::contract::{Entry, Frame, prepare};
    let d = open("gen:fd4?ranks=2000&messages=200000");
    let ctx = exaviz_compute::GpuContext::new().expect("a GPU adapter (lavapipe)");
    let backend = exaviz_compute::Backend::Gpu(Box::new(ctx));
    let full = exaviz_views::trace::span(&d.trace).unwrap();
    let seconds = (full.1 - full.0) as f64 / d.trace.ticks_per_second.max(1) as f64;
    let (w, h) = (560u32, 400u32);
    for view in ["chord", "sendrecv"] {
        // A view each: a view keeps its curves for one backend.
        let built = Entry::find(view).unwrap().parse::<&str>(&[]).unwrap();
        let on_cpu = Entry::find(view).unwrap().parse::<&str>(&[]).unwrap();
        let mut moved = Vec::new();
        for window in [(0.2, 0.6), (0.25, 0.55), (0.3, 0.5)] {
            let sel = Selection { window_s: Some((window.0 * seconds, window.1 * seconds)), ..built.selection };
            let before = backend.traffic();
            let prepared = prepare(built.view.as_ref(), &d, &sel, Frame { width: w, height: h }, &backend).unwrap();
            let scene = prepared.draw(&d, &sel).into_owned();
            let on_device = scene
                .layers
                .iter()
                .filter(|l| {
                    matches!(l.raster.as_deref().map(|r| &r.data), Some(exaviz_render::RasterData::Device { .. }))
                })
                .count();
            assert_eq!(on_device, 1, "{view} {window:?}: the curves composed on the device");
            let cpu =
                prepare(on_cpu.view.as_ref(), &d, &sel, Frame { width: w, height: h }, &exaviz_compute::Backend::Cpu)
                    .unwrap()
                    .draw(&d, &sel)
                    .into_owned();
            let (a, b) = (
                exaviz_render::render_scene(&backend, &scene, exaviz_render::View::default()).unwrap(),
                exaviz_render::render_scene(&exaviz_compute::Backend::Cpu, &cpu, exaviz_render::View::default())
                    .unwrap(),
            );
            let after = backend.traffic();
            moved.push((after.0 - before.0, after.1 - before.1));
            let far = exaviz_tests::diff_fraction(
                &a.pixels,
                &b.pixels,
                exaviz_tests::ImageTolerance { channel: 3, fraction: 0.0 },
            );
            assert!(far < 0.002, "{view} {window:?}: {far} of the pixels differ from the CPU's by more than 3");
        }
        println!("{view}: moved {moved:?}");
        // The finished picture read back in rows of 256 bytes.
        let picture = u64::from(w.div_ceil(64) * 64 * h * 4);
        for &(up, down) in &moved[1..] {
            // The curves' opacities, 4 bytes a kept curve, and the parameters: no pieces, no
            // values.
            assert!(up <= 64 << 10, "{view}: {up} bytes up for another window");
            assert!(down <= picture + 4096, "{view}: {down} bytes read back");
        }
    }
}
