//! Hand-built pairs of runs with known changes.

use super::*;

/// `ranks` ranks, `iterations` iterations of 100 ticks: "compute" for `work(rank, it)` ticks,
/// then "MPI_Waitall" to the iteration's end, and a 64-byte message to the next rank.
fn run(names: &[&str], iterations: u32, work: impl Fn(u32, u32) -> u64) -> Trace {
    let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
    t.region_names = vec!["compute".into(), "MPI_Waitall".into()];
    for n in names {
        t.locations.name.push((*n).into());
        t.locations.node.push(u32::MAX);
    }
    let ranks = names.len() as u32;
    let period =
        (0..ranks).flat_map(|r| (0..iterations).map(move |i| (r, i))).map(|(r, i)| work(r, i)).max().unwrap() + 10;
    for it in 0..iterations {
        let start = u64::from(it) * period;
        for r in 0..ranks {
            let w = work(r, it);
            for (kind, a, b) in [(0, start, start + w), (1, start + w, start + period)] {
                t.intervals.location.push(r);
                t.intervals.start.push(a);
                t.intervals.end.push(b);
                t.intervals.kind.push(kind);
                t.intervals.depth.push(0);
            }
            let m = &mut t.messages;
            m.source.push(r);
            m.destination.push((r + 1) % ranks);
            m.send_time.push(start + w);
            m.recv_time.push(start + w + 1);
            m.bytes.push(64);
            m.tag.push(0);
        }
    }
    t
}

fn whole(t: &Trace) -> (u64, u64) {
    let s = t.span().unwrap();
    (s.0, s.1 + 1)
}

/// Rank `slow`'s compute 1.5x in every iteration, with a little noise everywhere.
fn slowed(slow: Option<u32>) -> Trace {
    run(&["rank 0", "rank 1", "rank 2", "rank 3"], 6, |r, i| {
        let base = 50 + u64::from((r * 7 + i * 3) % 5);
        if Some(r) == slow { base * 3 / 2 } else { base }
    })
}

#[test]
fn the_same_run_twice_changes_nothing() {
    let a = slowed(None);
    let d = diff(&a, whole(&a), &a, whole(&a), &Options { top: 10, steps: None });
    assert!(d.top.is_empty(), "{:#?}", d.top);
    assert_eq!(d.matching.locations_by, "name");
    assert_eq!(d.matching.matched, 4);
    assert_eq!((d.matching.a_steps, d.matching.b_steps), (6, 6));
    assert_eq!(d.matching.a_steps_from, "iterations of compute");
    for x in d.regions.iter().chain(&d.pairs).chain(&d.locations) {
        assert_eq!(x.change_s, 0.0, "{x:?}");
        assert_ne!(x.stands_out, Some(true), "{x:?}");
    }
    assert_eq!(d.run.stands_out, Some(false));
    assert!(regressions(&d, 5.0).is_empty());
}

#[test]
fn a_slowed_rank_heads_the_changes_with_its_region() {
    let (a, b) = (slowed(None), slowed(Some(2)));
    let d = diff(&a, whole(&a), &b, whole(&b), &Options { top: 10, steps: None });
    // Its work changed and nobody else's did.
    assert_eq!(d.locations[0].name, "rank 2");
    assert!(d.locations[0].change_s > 0.0);
    assert!(d.locations[1..].iter().all(|x| x.change_s == 0.0), "{:#?}", d.locations);
    // Compute grew, on rank 2 alone, in every step, beyond the steps' variation.
    let compute = d.regions.iter().find(|x| x.name == "compute").unwrap();
    assert!(compute.change_s > 0.0 && compute.stands_out == Some(true), "{compute:#?}");
    assert_eq!(compute.locations.len(), 1);
    assert_eq!(compute.locations[0].name, "rank 2");
    assert_eq!(compute.steps.len(), WHERE);
    // The others wait longer: the period grew.
    let wait = d.regions.iter().find(|x| x.name == "MPI_Waitall").unwrap();
    assert!(wait.change_s > 0.0, "{wait:#?}");
    assert!(d.run.change_s > 0.0 && d.run.stands_out == Some(true), "{:#?}", d.run);
    // The first rows name it.
    assert!(
        d.top.iter().take(2).any(|x| x.name == "rank 2" || x.locations.first().is_some_and(|p| p.name == "rank 2"))
    );
    let r = regressions(&d, 10.0);
    assert!(r.iter().any(|x| x.starts_with("region compute")), "{r:?}");
    assert!(r.iter().any(|x| x.starts_with("the run")), "{r:?}");
    // Faster in B is no regression.
    let back = diff(&b, whole(&b), &a, whole(&a), &Options { top: 10, steps: None });
    assert!(regressions(&back, 10.0).is_empty(), "{:?}", regressions(&back, 10.0));
}

#[test]
fn runs_of_different_sizes_compare_per_location() {
    let a = run(&["rank 0", "rank 1"], 4, |_, _| 50);
    let b = run(&["rank 0", "rank 1", "rank 2", "rank 3"], 4, |_, _| 50);
    let d = diff(&a, whole(&a), &b, whole(&b), &Options { top: 10, steps: None });
    assert_eq!(d.matching.scale, 0.5);
    let compute = d.regions.iter().find(|x| x.name == "compute").unwrap();
    assert_eq!((compute.a.count, compute.b.count), (8, 16));
    assert!(compute.change_s.abs() < 1e-12, "{compute:#?}");
    assert_eq!(d.matching.matched, 2);
}

#[test]
fn locations_named_otherwise_match_by_position() {
    let a = run(&["rank 0", "rank 1"], 3, |r, _| 40 + u64::from(r) * 10);
    let b = run(&["process 0", "process 1"], 3, |r, _| 40 + u64::from(r) * 20);
    let d = diff(&a, whole(&a), &b, whole(&b), &Options { top: 10, steps: None });
    assert_eq!(d.matching.locations_by, "position");
    assert_eq!(d.locations[0].name, "rank 1");
    assert_eq!(d.locations[0].locations[0].name, "process 1");
    // The pairs are named in A's terms.
    assert!(d.pairs.iter().all(|p| p.name.starts_with("rank ")), "{:#?}", d.pairs);
}

#[test]
fn profiler_steps_are_shared_by_their_process() {
    let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
    t.region_names = vec!["ProfilerStep#7".into(), "ProfilerStep#8".into(), "kernel".into()];
    t.locations.name = vec!["rank 0 / thread 1".into(), "rank 0 / stream 7".into()];
    t.locations.node = vec![u32::MAX; 2];
    for (loc, kind, a, b) in [(0, 0, 0, 100), (0, 1, 100, 200), (1, 2, 150, 160), (1, 2, 50, 60)] {
        t.intervals.location.push(loc);
        t.intervals.start.push(a);
        t.intervals.end.push(b);
        t.intervals.kind.push(kind);
        t.intervals.depth.push(0);
    }
    let s = steps::find(&t, (0, 1_000));
    assert_eq!(s.source, "ProfilerStep#N");
    assert_eq!(s.count, 2);
    assert_eq!(s.step_of(1, 55), Some(0));
    assert_eq!(s.step_of(1, 155), Some(1));
    assert_eq!(s.lengths(200), vec![100, 100]);
}

/// A step annotation (JAX's `StepTraceAnnotation`, marked by the reader in `step_regions`):
/// each of its intervals is a step, numbered in order per process and shared by the process's
/// rows; without the mark the region is only found by its repetition.
#[test]
fn step_annotations_are_steps_of_their_process() {
    let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
    t.region_names = vec!["train".into(), "kernel".into()];
    t.locations.name = vec!["host / thread 1".into(), "host / device 0".into()];
    t.locations.node = vec![u32::MAX; 2];
    for (loc, kind, a, b) in [(0, 0, 100, 200), (0, 0, 0, 100), (1, 1, 150, 160), (1, 1, 50, 60), (0, 0, 200, 330)] {
        t.intervals.location.push(loc);
        t.intervals.start.push(a);
        t.intervals.end.push(b);
        t.intervals.kind.push(kind);
        t.intervals.depth.push(0);
    }
    assert_eq!(steps::find(&t, (0, 1_000)).source, "iterations of train");
    t.step_regions = vec![0];
    let s = steps::find(&t, (0, 1_000));
    assert_eq!(s.source, "step annotations (train)");
    assert_eq!(s.count, 3);
    assert_eq!(s.step_of(1, 55), Some(0));
    assert_eq!(s.step_of(1, 155), Some(1));
    assert_eq!(s.lengths(330), vec![100, 100, 130]);
    // The annotation is the step: not a region of the comparison.
    let d = diff(&t, (0, 1_000), &t, (0, 1_000), &Options::default());
    assert!(d.regions.iter().all(|r| r.name != "train"), "{:?}", d.regions);
    assert_eq!(d.matching.a_steps, 3);
}

/// Rows within rows compare per call path too (a flame graph's frames): the path names the
/// enclosing regions outermost first, the profiler's step spans left out so that every step's
/// rows take one path; a trace whose rows do not nest has no paths.
#[test]
fn nested_rows_compare_per_call_path() {
    let nested = |inner: u64| {
        let mut t = Trace { ticks_per_second: 1_000, ..Default::default() };
        t.region_names = vec!["ProfilerStep#1".into(), "ProfilerStep#2".into(), "forward".into(), "matmul".into()];
        t.locations.name = vec!["rank 0 / thread 1".into()];
        t.locations.node = vec![u32::MAX];
        for (step, at) in [(0u32, 0u64), (1, 100)] {
            for (kind, a, b, depth) in
                [(step, at, at + 100, 0), (2, at + 10, at + 90, 1), (3, at + 20, at + 20 + inner, 2)]
            {
                t.intervals.location.push(0);
                t.intervals.start.push(a);
                t.intervals.end.push(b);
                t.intervals.kind.push(kind);
                t.intervals.depth.push(depth);
            }
        }
        t
    };
    let (a, b) = (nested(30), nested(60));
    let d = diff(&a, (0, 1_000), &b, (0, 1_000), &Options::default());
    let names: Vec<&str> = d.paths.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["forward > matmul", "forward"], "largest change first");
    let m = &d.paths[0];
    assert_eq!((m.table, m.a.count, m.b.count), ("path", 2, 2));
    assert!((m.change_s - 0.060).abs() < 1e-12, "{}", m.change_s);
    assert_eq!(d.paths[1].change_s, 0.0);
    assert!(diff(&slowed(None), (0, 10_000), &slowed(Some(1)), (0, 10_000), &Options::default()).paths.is_empty());
}
