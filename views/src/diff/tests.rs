//! The diff view on a hand-built pair (its goldens, on both backends, are in tests/views/diff.rs).

use super::*;
use crate::contract::{Entry, render_view};

/// `ranks` ranks over `iterations` iterations: compute, then waiting, and a message to the
/// next rank whose size grows on rank `big` in B.
fn run(slow: Option<u32>, big: Option<u32>) -> Dataset {
    let mut t = exaviz_model::Trace { ticks_per_second: 1_000, ..Default::default() };
    t.region_names = vec!["compute".into(), "MPI_Waitall".into()];
    let ranks = 8u32;
    for r in 0..ranks {
        t.locations.name.push(format!("rank {r}"));
        t.locations.node.push(u32::MAX);
    }
    for it in 0..6u64 {
        let start = it * 200;
        for r in 0..ranks {
            let w = if Some(r) == slow { 150 } else { 100 } + u64::from(r % 3);
            for (kind, a, b) in [(0, start, start + w), (1, start + w, start + 200)] {
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
            m.recv_time.push(start + w + 5);
            m.bytes.push(if Some(r) == big { 4096 } else { 1024 });
            m.tag.push(0);
        }
    }
    Dataset { name: "run".into(), trace: t, ..Default::default() }
}

fn drawn(backend: &Backend) -> (exaviz_render::Image, Box<dyn Prepared>, Dataset) {
    let entry = Entry::find("diff").expect("registered");
    let built = entry.parse(&["--against", "B"]).expect("options");
    assert_eq!(built.view.against(), Some("B"));
    let a = run(None, None);
    built.view.compare_with(std::sync::Arc::new(Dataset { name: "B".into(), ..run(Some(5), Some(2)) }));
    let frame = Frame { width: 900, height: 500 };
    let image = render_view(built.view.as_ref(), &a, &built.selection, frame, backend).expect("drawn");
    let prepared = built.view.prepare(&a, &built.selection, frame, backend).expect("prepared");
    (image, prepared, a)
}

/// Red where B is larger: the slowed rank's bar and the grown pair's cell; the pick of each
/// names both runs' values.
#[test]
fn the_slowed_rank_and_the_grown_pair_are_red_and_picked() {
    let (cpu, prepared, a) = drawn(&Backend::Cpu);
    assert_eq!((cpu.width, cpu.height), (900, 500));
    let red = |img: &exaviz_render::Image| {
        (0..img.height)
            .flat_map(|y| (0..img.width).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = img.pixel(x, y);
                p[0] > 150 && p[2] < 110 && p[1] < 120
            })
            .count()
    };
    assert!(red(&cpu) > 2_000, "red bars and cells: {}", red(&cpu));
    let picks: Vec<Pick> = (0..500)
        .step_by(4)
        .flat_map(|y| (0..900).step_by(8).map(move |x| [x as f32, y as f32]))
        .filter_map(|at| prepared.pick(&a, at))
        .collect();
    let bar = picks.iter().find(|p| p.title == "location rank 5").expect("rank 5's bar");
    assert!(bar.lines.iter().any(|l| l.starts_with("change +")), "{bar:?}");
    let cell = picks.iter().find(|p| p.title == "rank 2 → rank 3").expect("the grown pair's cell");
    assert!(cell.lines.contains(&"B − A: +18432 bytes".to_string()), "{cell:?}");
}

#[test]
fn without_another_run_it_says_so() {
    let entry = Entry::find("diff").unwrap();
    let built = entry.parse::<&str>(&[]).unwrap();
    let e = built.view.check(&run(None, None)).unwrap_err().to_string();
    assert!(e.contains("--against"), "{e}");
}
