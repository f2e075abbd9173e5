//! Hand-built runs with known answers.

use exaviz_model::{LocationKind, Trace};

use super::*;

/// A trace of `locations` (name, kind) with regions named as they are first used.
struct Build(Trace);

impl Build {
    fn new(locations: &[(&str, LocationKind)]) -> Self {
        let mut t = Trace { ticks_per_second: 1_000_000_000, ..Trace::default() };
        for &(n, k) in locations {
            t.locations.name.push(n.into());
            t.locations.node.push(u32::MAX);
            t.locations.kind.push(k);
        }
        Self(t)
    }

    fn region(&mut self, name: &str) -> u32 {
        let names = &mut self.0.region_names;
        names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.into());
            names.len() - 1
        }) as u32
    }

    fn at(mut self, loc: u32, name: &str, (a, b): (u64, u64), depth: u32) -> Self {
        let k = self.region(name);
        self.0.intervals.push(loc, a, b, k, depth);
        self
    }

    fn msg(mut self, (src, sent): (u32, u64), (dst, arrived): (u32, u64)) -> Self {
        self.0.messages.push((src, dst), (sent, arrived), 8, 0);
        self
    }
}

fn ranks(n: usize) -> Vec<(String, LocationKind)> {
    (0..n).map(|r| (format!("rank {r}"), LocationKind::Process)).collect()
}

fn build_ranks(n: usize) -> Build {
    let r = ranks(n);
    let v: Vec<(&str, LocationKind)> = r.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    Build::new(&v)
}

fn on(p: &Path) -> Vec<(Step, u32, u64, u64)> {
    p.segments.iter().map(|s| (s.step, s.location, s.from, s.to)).collect()
}

fn whole(t: &Trace) -> (u64, u64) {
    let s = t.span().unwrap();
    (s.0, s.1 + 1)
}

/// A chain of messages: each rank works, then sends to the next, which waited in its receive.
/// The path runs through the three ranks' work; rank 0's work is the root cause of both
/// waits: of rank 1's directly, of rank 2's mostly through rank 1's waiting.
#[test]
fn a_chain_of_messages() {
    let t = build_ranks(3)
        .at(0, "compute", (0, 100), 0)
        .at(1, "compute", (0, 10), 0)
        .at(1, "MPI_Recv", (10, 110), 0)
        .at(1, "compute", (110, 200), 0)
        .at(2, "compute", (0, 20), 0)
        .at(2, "MPI_Recv", (20, 210), 0)
        .at(2, "compute", (210, 300), 0)
        .msg((0, 100), (1, 110))
        .msg((1, 200), (2, 210))
        .0;
    let g = Graph::new(&t);
    assert_eq!(g.edges.len(), 2, "both messages bind: {:?}", g.edges);
    let p = path::critical_path(&t, &g, whole(&t));
    let m = Step::Edge(EdgeKind::Message);
    assert_eq!(
        on(&p),
        [(Step::On, 0, 0, 100), (m, 1, 100, 110), (Step::On, 1, 110, 200), (m, 2, 200, 210), (Step::On, 2, 210, 300)]
    );
    assert_eq!(p.length(), 300);
    let waits = causes::wait_states(&g, whole(&t));
    assert_eq!(waits.len(), 2);
    assert_eq!((waits[0].location, waits[0].from, waits[0].until, waits[0].cause), (1, 10, 100, 0));
    assert_eq!((waits[1].location, waits[1].from, waits[1].until, waits[1].cause), (2, 20, 200, 1));
    let rows = causes::root_causes(&t, &g, &waits);
    let ns = |s: f64| (s * 1e9).round() as u64;
    let top = &rows[0];
    assert_eq!((top.location.as_str(), top.region.as_str()), ("rank 0", "compute"), "{rows:?}");
    // Rank 1's wait (90) is rank 0's excess work; rank 2's (180) is rank 1's excess (90 - 20)
    // and, for the rest, rank 1 having waited for rank 0.
    assert_eq!((ns(top.direct_s), ns(top.propagated_s)), (90, 110), "{rows:?}");
    assert_eq!((rows[1].location.as_str(), ns(rows[1].direct_s), ns(rows[1].propagated_s)), ("rank 1", 70, 0));
    let report = analyse(&t, None, whole(&t), 0);
    assert_eq!(report.jumps, 2);
    assert_eq!(report.shares.by_region[0].name, "compute");
}

/// A collective waits for its last rank: the path runs through the slow rank's work to the
/// collective's end, the others' waits are charged to it.
#[test]
fn a_collective_waits_on_its_last_rank() {
    let t = build_ranks(3)
        .at(0, "compute", (0, 50), 0)
        .at(1, "compute", (0, 80), 0)
        .at(2, "compute", (0, 200), 0)
        .at(0, "MPI_Allreduce", (50, 210), 0)
        .at(1, "MPI_Allreduce", (80, 210), 0)
        .at(2, "MPI_Allreduce", (200, 210), 0)
        .at(0, "compute", (210, 270), 0)
        .at(1, "compute", (210, 260), 0)
        .at(2, "compute", (210, 260), 0)
        .0;
    let g = Graph::new(&t);
    let c = Step::Edge(EdgeKind::Collective);
    assert_eq!(g.edges.len(), 2, "{:?}", g.edges);
    let p = path::critical_path(&t, &g, whole(&t));
    assert_eq!(on(&p), [(Step::On, 2, 0, 200), (c, 0, 200, 210), (Step::On, 0, 210, 270)]);
    let rows = causes::root_causes(&t, &g, &causes::wait_states(&g, whole(&t)));
    assert_eq!((rows[0].location.as_str(), rows[0].region.as_str()), ("rank 2", "compute"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!((rows[0].direct_s * 1e9 - 270.0).abs() < 1e-6, "150 + 120: {rows:?}");
}

/// Rooted collectives follow their root where the trace gives it: a broadcast's ranks wait for
/// the root to enter, never for a late non-root, and a reduce's root alone waits for the last
/// to enter; without a root every rank waits for the last, as for an all-reduce.
#[test]
fn rooted_collectives_wait_for_their_root_or_at_it() {
    // Rank `late` enters last, at 200; the others at 50 and 80; everyone leaves at 210.
    let run = |op: &str, late: u32, root: Option<u32>| {
        let entries = |r: u32| {
            if r == late {
                200
            } else if r == (late + 1) % 3 {
                50
            } else {
                80
            }
        };
        let mut b = build_ranks(3);
        for r in 0..3 {
            b = b.at(r, "compute", (0, entries(r)), 0).at(r, op, (entries(r), 210), 0);
        }
        let mut t = b.0;
        if let Some(root) = root {
            t.collective_names.push(op.into());
            for r in 0..3 {
                let c = &mut t.collectives;
                c.location.push(r);
                c.start.push(entries(r));
                c.end.push(210);
                c.op.push(0);
                c.root.push(root);
                c.bytes.push(8);
            }
        }
        let mut edges: Vec<(u32, u32)> = Graph::new(&t).edges.iter().map(|e| (e.src, e.dst)).collect();
        edges.sort_unstable();
        edges
    };
    // A broadcast whose root (0) enters first: no one waits for the late rank 2.
    assert_eq!(run("MPI_Bcast", 2, Some(0)), []);
    // A broadcast whose root enters last: the others wait for it.
    assert_eq!(run("MPI_Bcast", 0, Some(0)), [(0, 1), (0, 2)]);
    // A reduce: only its root (0) waits for the last rank.
    assert_eq!(run("MPI_Reduce", 2, Some(0)), [(2, 0)]);
    // Without the root, everyone waits for the last.
    assert_eq!(run("MPI_Bcast", 2, None), [(2, 0), (2, 1)]);
}

/// A kernel waits on a late launch: the stream idled until its host launched it, so the path
/// goes from the kernel back through the launch to the host's work; a kernel queued behind
/// another does not wait on its launch.
#[test]
fn a_kernel_waits_on_a_late_launch() {
    let t =
        Build::new(&[("rank 0 / thread 1", LocationKind::CpuThread), ("rank 0 / stream 7", LocationKind::GpuStream)])
            .at(0, "aten::mm", (0, 100), 0)
            .at(0, "cudaLaunchKernel", (100, 105), 0)
            .at(0, "cudaLaunchKernel", (106, 108), 0)
            .at(1, "gemm", (0, 20), 0)
            .at(1, "gemm", (110, 200), 0)
            .at(1, "gemm", (200, 260), 0)
            .msg((0, 102), (1, 110))
            .msg((0, 107), (1, 200))
            .0;
    let g = Graph::new(&t);
    assert_eq!(g.edges.len(), 1, "the queued kernel's launch does not bind: {:?}", g.edges);
    let p = path::critical_path(&t, &g, whole(&t));
    assert_eq!(on(&p), [(Step::On, 0, 0, 102), (Step::Edge(EdgeKind::Launch), 1, 102, 110), (Step::On, 1, 110, 260)]);
    let rows = causes::root_causes(&t, &g, &causes::wait_states(&g, whole(&t)));
    assert_eq!((rows[0].location.as_str(), rows[0].region.as_str()), ("rank 0 / thread 1", "aten::mm"), "{rows:?}");
}

/// A host waits in a synchronisation for the kernel that ends last within it, on a stream of
/// its own process only.
#[test]
fn a_synchronisation_waits_for_its_kernel() {
    let t = Build::new(&[
        ("rank 0 / thread 1", LocationKind::CpuThread),
        ("rank 0 / stream 7", LocationKind::GpuStream),
        ("rank 1 / stream 7", LocationKind::GpuStream),
    ])
    .at(0, "aten::mm", (0, 50), 0)
    .at(0, "cudaStreamSynchronize", (50, 200), 0)
    .at(0, "aten::add", (200, 230), 0)
    .at(1, "gemm", (10, 195), 0)
    .at(2, "gemm", (10, 199), 0)
    .0;
    let g = Graph::new(&t);
    assert_eq!(g.edges, [Edge { kind: EdgeKind::Sync, src: 1, sent: 195, dst: 0, arrived: 200 }]);
    let p = path::critical_path(&t, &g, whole(&t));
    assert_eq!(on(&p), [(Step::On, 1, 10, 195), (Step::Edge(EdgeKind::Sync), 0, 195, 200), (Step::On, 0, 200, 230)]);
}

/// A pipeline's bubble: the second stage waits for the first's forward pass, the first for the
/// second's backward pass; the path alternates between them and the bubbles are charged to
/// the passes that caused them.
#[test]
fn a_pipeline_bubble() {
    let t = build_ranks(2)
        .at(0, "forward", (0, 100), 0)
        .at(0, "send", (100, 101), 0)
        .at(0, "recv", (101, 310), 0)
        .at(0, "backward", (310, 400), 0)
        .at(1, "recv", (0, 110), 0)
        .at(1, "forward", (110, 200), 0)
        .at(1, "backward", (200, 300), 0)
        .at(1, "send", (300, 301), 0)
        .msg((0, 101), (1, 110))
        .msg((1, 301), (0, 310))
        .0;
    let g = Graph::new(&t);
    let p = path::critical_path(&t, &g, whole(&t));
    let locs: Vec<u32> = p.segments.iter().filter(|s| s.step == Step::On).map(|s| s.location).collect();
    assert_eq!(locs, [0, 1, 0]);
    assert_eq!(p.length(), 400);
    let rows = causes::root_causes(&t, &g, &causes::wait_states(&g, whole(&t)));
    let names: Vec<(&str, &str)> = rows.iter().map(|r| (r.location.as_str(), r.region.as_str())).collect();
    assert!(names.contains(&("rank 0", "forward")), "{names:?}");
    assert!(names.contains(&("rank 1", "backward")), "{names:?}");
}

/// One rank of five computes longer: it is named, and the others are only said to wait longer
/// where they do; a rank within the noise is not.
#[test]
fn one_slow_rank_is_named_and_no_other() {
    let mut b = build_ranks(5);
    for (r, work) in [(0u32, 100u64), (1, 102), (2, 98), (3, 160), (4, 101)] {
        b = b.at(r, "compute", (0, work), 0).at(r, "MPI_Barrier", (work, 170), 0);
    }
    let t = b.0;
    let g = Graph::new(&t);
    let s = stragglers::stragglers(&t, &g, whole(&t), None);
    let named: Vec<&str> = s.named.iter().map(|x| x.process.as_str()).collect();
    assert_eq!(named, ["rank 3"]);
    assert!(s.rows.iter().all(|r| r.process == "rank 3" || r.verdict == "waits longer"), "{:?}", s.rows);
    let rows = causes::root_causes(&t, &g, &causes::wait_states(&g, whole(&t)));
    assert_eq!(rows[0].location, "rank 3");
}

/// Regions name collectives across libraries; c10d's and NCCL's host calls only queue work.
#[test]
fn collectives_are_named_across_libraries() {
    use graph::collective_key;
    assert_eq!(collective_key("MPI_Allreduce"), Some("allreduce"));
    assert_eq!(collective_key("gloo:all_reduce"), Some("allreduce"));
    assert_eq!(collective_key("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"), Some("allreduce"));
    assert_eq!(collective_key("ncclDevKernel_SendRecv(ncclDevComm*)"), Some("sendrecv"));
    assert_eq!(collective_key("MPI_Reduce"), Some("reduce"));
    assert_eq!(collective_key("c10d::allreduce_"), None);
    assert_eq!(collective_key("nccl:all_to_all"), None);
    assert_eq!(collective_key("aten::mm"), None);
}

/// c10d's call hands its all-reduce to gloo's thread, and the caller goes on only once that
/// is done: the path runs from the call through the library's span and back.
#[test]
fn work_handed_to_a_library_thread_and_back() {
    let t =
        Build::new(&[("rank 0 / thread 1", LocationKind::CpuThread), ("rank 0 / thread 2", LocationKind::CpuThread)])
            .at(0, "aten::mm", (0, 10), 0)
            .at(0, "c10d::allreduce_", (10, 12), 0)
            .at(0, "aten::add", (55, 80), 0)
            .at(1, "gloo:all_reduce", (15, 50), 0)
            .0;
    let g = Graph::new(&t);
    let s = EdgeKind::Sync;
    assert_eq!(
        g.edges,
        [
            Edge { kind: s, src: 1, sent: 50, dst: 0, arrived: 55 },
            Edge { kind: s, src: 0, sent: 10, dst: 1, arrived: 15 },
        ]
    );
    let p = path::critical_path(&t, &g, whole(&t));
    let locs: Vec<u32> = p.segments.iter().filter(|s| s.step == Step::On).map(|s| s.location).collect();
    assert_eq!(locs, [0, 1, 0]);
    // A caller that went on long after the span ended did not wait for it.
    let late =
        Build::new(&[("rank 0 / thread 1", LocationKind::CpuThread), ("rank 0 / thread 2", LocationKind::CpuThread)])
            .at(0, "c10d::allreduce_", (10, 12), 0)
            .at(0, "aten::add", (5_000_000, 5_000_010), 0)
            .at(1, "gloo:all_reduce", (15, 50), 0)
            .0;
    assert_eq!(Graph::new(&late).edges.len(), 1);
}

/// PyTorch's autograd thread runs the backward pass while the thread that called `backward()`
/// is blocked inside its annotation: the path runs from the caller's last work into the pass on
/// the autograd thread and back to the caller where its call returns. An idle thread that
/// returns long after the pass did not wait for it; a thread busy through the pass did not.
#[test]
fn a_backward_pass_on_the_autograd_thread_is_on_the_path() {
    let threads = [
        ("rank 0 / thread 1", LocationKind::CpuThread),
        ("rank 0 / thread 2", LocationKind::CpuThread),
        ("rank 0 / thread 3", LocationKind::CpuThread),
    ];
    let ev = "autograd::engine::evaluate_function: AddmmBackward0";
    let t = Build::new(&threads)
        .at(0, "aten::mm", (0, 10), 0)
        .at(0, "## backward ##", (10, 100), 0)
        .at(0, "aten::ones_like", (12, 20), 1)
        .at(0, "aten::add", (105, 120), 0)
        .at(1, ev, (30, 60), 0)
        .at(1, ev, (62, 95), 0)
        // A loader thread busy through the pass, and going on right after it.
        .at(2, "aten::copy_", (25, 60), 0)
        .at(2, "aten::copy_", (61, 96), 0)
        .at(2, "aten::copy_", (97, 99), 0)
        .0;
    let g = Graph::new(&t);
    let s = EdgeKind::Sync;
    assert_eq!(
        g.edges,
        [
            Edge { kind: s, src: 1, sent: 95, dst: 0, arrived: 100 },
            Edge { kind: s, src: 0, sent: 20, dst: 1, arrived: 30 },
        ]
    );
    let p = path::critical_path(&t, &g, whole(&t));
    let locs: Vec<(u32, u64, u64)> =
        p.segments.iter().filter(|s| s.step == Step::On).map(|s| (s.location, s.from, s.to)).collect();
    assert_eq!(locs, [(0, 0, 20), (1, 30, 95), (0, 100, 120)]);
    // Without an enclosing call: the caller idle through the pass, going on soon after.
    let idle =
        Build::new(&threads).at(0, "aten::mm", (0, 10), 0).at(0, "aten::add", (97, 120), 0).at(1, ev, (30, 95), 0).0;
    assert_eq!(Graph::new(&idle).edges.len(), 2);
    let late = Build::new(&threads)
        .at(0, "aten::mm", (0, 10), 0)
        .at(0, "aten::add", (5_000_000, 5_000_010), 0)
        .at(1, ev, (30, 95), 0)
        .0;
    assert!(Graph::new(&late).edges.is_empty());
}

/// A late receiver: rank 0 blocks in its send until rank 1, still computing, begins to
/// receive. Rank 1's computation is the cause of rank 0's wait, and on the path.
#[test]
fn a_late_receiver_is_the_cause_of_its_senders_wait() {
    let t = build_ranks(2)
        .at(0, "compute", (0, 10), 0)
        .at(0, "MPI_Send", (10, 100), 0)
        .at(0, "compute", (100, 110), 0)
        .at(1, "compute", (0, 90), 0)
        .at(1, "MPI_Recv", (90, 98), 0)
        .msg((0, 12), (1, 97))
        .0;
    let g = Graph::new(&t);
    assert!(
        g.edges.contains(&Edge { kind: EdgeKind::Message, src: 1, sent: 90, dst: 0, arrived: 100 }),
        "{:?}",
        g.edges
    );
    let waits = causes::wait_states(&g, whole(&t));
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!((waits[0].location, waits[0].cause, waits[0].from, waits[0].until), (0, 1, 10, 90));
    let c = causes::root_causes(&t, &g, &waits);
    assert_eq!((c[0].location.as_str(), c[0].region.as_str()), ("rank 1", "compute"));
    let p = path::critical_path(&t, &g, whole(&t));
    let locs: Vec<u32> = p.segments.iter().filter(|s| s.step == Step::On).map(|s| s.location).collect();
    assert_eq!(locs, [1, 0], "rank 1's computation, then rank 0's after its send returned: {:?}", on(&p));
}

/// A cause whose work before its send was untraced (only MPI calls recorded around it) is named
/// by the regions around that time, not "(no region)" alone.
#[test]
fn an_untraced_cause_is_named_by_the_regions_around_it() {
    let t = build_ranks(2)
        .at(0, "compute", (0, 10), 0)
        .at(0, "MPI_Recv", (10, 100), 0)
        .at(1, "MPI_Init", (0, 5), 0)
        .at(1, "MPI_Send", (90, 98), 0)
        .msg((1, 90), (0, 100))
        .0;
    let g = Graph::new(&t);
    let waits = causes::wait_states(&g, whole(&t));
    assert_eq!(waits.len(), 1, "{waits:?}");
    let c = causes::root_causes(&t, &g, &waits);
    assert_eq!(
        (c[0].location.as_str(), c[0].region.as_str()),
        ("rank 1", "(no region, after MPI_Init, before MPI_Send)"),
        "{c:?}"
    );
}

/// A helper thread idle until its process's main thread handed it a collective (c10d's call
/// → gloo's span) did nothing of its own: the wait it caused is charged to the main thread's
/// work before the hand-over, compared with what the waiter's main thread did before its own.
#[test]
fn a_helper_threads_idle_time_is_charged_to_the_thread_that_handed_it_work() {
    let names = ["rank 0 / main", "rank 0 / gloo", "rank 1 / main", "rank 1 / gloo"];
    let locs: Vec<(&str, LocationKind)> = names.iter().map(|&n| (n, LocationKind::CpuThread)).collect();
    let t = Build::new(&locs)
        .at(0, "forward", (0, 100), 0)
        .at(0, "c10d::allreduce_", (100, 101), 0)
        .at(1, "gloo:all_reduce", (101, 200), 0)
        .at(2, "extra_work", (0, 50), 0)
        .at(2, "forward", (50, 150), 0)
        .at(2, "c10d::allreduce_", (150, 151), 0)
        .at(3, "gloo:all_reduce", (151, 200), 0)
        .0;
    let g = Graph::new(&t);
    let waits = causes::wait_states(&g, whole(&t));
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!((waits[0].location, waits[0].cause, waits[0].from, waits[0].until), (1, 3, 101, 151));
    let c = causes::root_causes(&t, &g, &waits);
    assert_eq!((c[0].location.as_str(), c[0].region.as_str()), ("rank 1 / main", "extra_work"), "{c:?}");
    assert!((c[0].direct_s + c[0].propagated_s - 50e-9).abs() < 1e-15, "the whole wait: {c:?}");
}

/// The what-if of a chain of messages, replayed by hand: each rank's computation at half its
/// time moves every receive's end to the message's arrival from the earlier send (the latency
/// kept), and the path from 300 to 160 ticks; a factor of 1 changes nothing at all.
#[test]
fn a_chain_of_messages_replayed_with_its_work_halved() {
    let t = build_ranks(3)
        .at(0, "compute", (0, 100), 0)
        .at(1, "compute", (0, 10), 0)
        .at(1, "MPI_Recv", (10, 110), 0)
        .at(1, "compute", (110, 200), 0)
        .at(2, "compute", (0, 20), 0)
        .at(2, "MPI_Recv", (20, 210), 0)
        .at(2, "compute", (210, 300), 0)
        .msg((0, 100), (1, 110))
        .msg((1, 200), (2, 210))
        .0;
    let g = Graph::new(&t);
    let window = whole(&t);
    let p = path::critical_path(&t, &g, window);
    assert_eq!(p.length(), 300);
    let ask = |s: &str| what_if::what_if(&t, &g, None, window, &p, &what_if::parse(s).unwrap()).unwrap();
    let same = ask("region:compute*1");
    assert_eq!((same.projected_s, same.saved_s, same.removed_s), (300e-9, 0.0, 0.0));
    // Rank 0 computes to 50, its message arrives at 60; rank 1 (its first 5 ticks halved too)
    // computes 45 to 105, its message arrives at 115; rank 2 computes 45 more: 160.
    let half = ask("region:compute*0.5");
    assert!((half.projected_s - 160e-9).abs() < 1e-15, "{half:?}");
    assert!((half.saved_s - 140e-9).abs() < 1e-15, "{half:?}");
    assert!((half.removed_s - 155e-9).abs() < 1e-15, "half of 310 ticks of computation: {half:?}");
    // Rank 2 computes 110 against its peers' median of 100: its 20 + 90 ticks become 100 in
    // all, and only the 90 after its receive are on the path.
    let r2 = ask("rank 2");
    assert_eq!(r2.selected, ["rank 2"]);
    assert!((r2.saved_s - 90.0 * (10.0 / 110.0) * 1e-9).abs() < 1e-15, "{r2:?}");
    assert!(what_if::what_if(&t, &g, None, window, &p, &what_if::parse("rank 7").unwrap()).is_err());
    assert!(what_if::what_if(&t, &g, None, window, &p, &what_if::parse("region:nothing*").unwrap()).is_err());
}

/// A collective ends once its last participant is in, then takes its own time (from the last
/// entry to the exits), on every participant, the one that entered last included.
#[test]
fn a_collective_replayed_ends_after_its_new_last_entry() {
    let t = build_ranks(2)
        .at(0, "compute", (0, 100), 0)
        .at(0, "MPI_Allreduce", (100, 210), 0)
        .at(0, "compute", (210, 250), 0)
        .at(1, "compute", (0, 200), 0)
        .at(1, "MPI_Allreduce", (200, 210), 0)
        .at(1, "compute", (210, 250), 0)
        .0;
    let g = Graph::new(&t);
    let window = whole(&t);
    let p = path::critical_path(&t, &g, window);
    assert_eq!(p.length(), 250);
    // Every computation at a quarter: rank 0 enters at 25, rank 1 at 50; both leave 10 ticks
    // after rank 1's entry, at 60, and end at 70.
    let ask = what_if::parse("region:compute*0.25").unwrap();
    let w = what_if::what_if(&t, &g, None, window, &p, &ask).unwrap();
    assert!((w.projected_s - 70e-9).abs() < 1e-15, "{w:?}");
    let ask = what_if::parse("rank 1").unwrap();
    let w = what_if::what_if(&t, &g, None, window, &p, &ask).unwrap();
    // Rank 1 works 240 against rank 0's 140 (the lower median): its work at 140/240 makes its
    // first computation 116.7 ticks, later than rank 0's entry at 100: it is still the last in,
    // and the collective ends 10 ticks after it; its last computation takes 23.3 ticks, rank
    // 0's 40.
    let f: f64 = 140.0 / 240.0;
    let rank1_end = 200.0 * f + 10.0 + 40.0 * f;
    let rank0_end = 200.0 * f + 10.0 + 40.0;
    assert!((w.projected_s - rank1_end.max(rank0_end) * 1e-9).abs() < 1e-15, "{w:?}");
}
