//! The timeline's unit tests, over its rooms.

use std::sync::Arc;

use exaviz_compute as stages;
use exaviz_compute::Backend;
use exaviz_compute::DensityInput;
use exaviz_model::Intervals;
use exaviz_model::Trace;
use exaviz_model::dataset::Dataset;
use exaviz_render::Scene;

use super::{axis::*, density::*, index::*, options::*, pan::*, scene::*};
use crate::BACKGROUND;
use crate::plot::{Mix, Plot};
use crate::trace::pan_window;
use crate::trace::window_in;

/// The legend column stays inside the picture at small heights, in both mixes, with and
/// without messages: every glyph and swatch below the picture's top and above its bottom.
#[test]
fn the_legend_column_fits_small_pictures() {
    use exaviz_render::{FLAG_SCREEN, KIND_GLYPH};
    let legend: Vec<(usize, String)> = (0..7).map(|s| (s, format!("state {s}"))).collect();
    for height in [360u32, 400, 768] {
        for mix in [Mix::Alpha, Mix::Additive] {
            for counts in [vec![0u32; 16], (0..16).collect()] {
                let mut scene = Scene::new(1024, height, BACKGROUND);
                let p = Plot::inside(1024, height, margin(1024)).expect("a plot");
                legend_column(&mut scene, p, &legend, &MessageTone::new(&counts, 0.8).legend(), mix, true);
                let bottom = scene
                    .layers
                    .iter()
                    .flat_map(|l| &l.instances)
                    .filter(|i| i.kind & !FLAG_SCREEN == KIND_GLYPH || i.kind & !FLAG_SCREEN == 1)
                    .map(|i| i.b[1])
                    .fold(0.0f32, f32::max);
                assert!(bottom <= height as f32, "{height} px, {mix:?}: the legend reaches {bottom}");
            }
        }
    }
}

#[test]
fn rows_are_named_by_what_tells_their_names_apart() {
    use super::tracks::Tracks;
    let trace = |names: &[String]| {
        let mut t = Trace::default();
        t.locations.name = names.to_vec();
        t
    };
    let p = Plot { x0: 200, y0: 48, w: 600, h: 400 };
    let axis = |names: &[String]| {
        let t = trace(names);
        let mut rows = Tracks::new(&t, &vec![true; names.len()], true, None);
        rows.place(p.h, &[], &[]);
        track_axis(&t, &rows, p, 200.0)
    };
    let texts = |a: &RowAxis| a.ticks.iter().map(|t| t.1.clone()).collect::<Vec<_>>();
    let names: Vec<String> =
        ["node quartz10 / MPI Rank 0 / Master thread", "node quartz10 / MPI Rank 1 / Master thread"]
            .map(String::from)
            .to_vec();
    // One node of two ranks: the node is their process's header, the ranks its rows.
    let a = axis(&names);
    assert_eq!(texts(&a), ["Rank 0", "Rank 1"]);
    assert_eq!(a.headers.iter().map(|h| h.1.as_str()).collect::<Vec<_>>(), ["node quartz10"]);
    assert!(a.ticks[0].0 < a.ticks[1].0, "top to bottom");
    assert_eq!(a.outline.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>(), ["process", "location", "location"]);
    assert_eq!(a.outline[1].name, names[0]);
    // Thin rows: a few of them named, not numbered.
    let many: Vec<String> = (0..1000).map(|r| format!("rank {r}")).collect();
    let a = axis(&many);
    assert!(a.ticks.len() >= 4 && a.ticks.iter().all(|t| t.1.starts_with("rank ")), "{:?}", texts(&a));
    assert!(a.outline.len() <= p.h as usize && a.outline.iter().map(|r| r.count).sum::<usize>() == 1000);
    let long: Vec<String> = ["process 108800", "process 108801"].map(String::from).to_vec();
    assert_eq!(texts(&axis(&long)), ["process 108800", "process 108801"]);
    // A DDP run's processes: each named by its rank under a header, its threads by what
    // differs among them, with the rank where another rank's rows read the same.
    let mut ddp = Vec::new();
    for r in 0..8 {
        for thread in ["thread 17930 (python)", "thread 17990 (pt_gloo_runloop)", "thread 18001 (python)", "stream 7"] {
            ddp.push(format!("rank {r} python / {thread}"));
        }
    }
    let a = axis(&ddp);
    let headers: Vec<&str> = a.headers.iter().map(|h| h.1.as_str()).collect();
    assert_eq!(headers, (0..8).map(|r| format!("rank {r}")).collect::<Vec<_>>());
    let rows: Vec<String> = a.outline.iter().filter(|r| r.kind == "location").map(|r| r.label.clone()).collect();
    assert_eq!(&rows[..4], ["rank 0 thread 17930", "rank 0 pt_gloo_runloop", "rank 0 thread 18001", "rank 0 stream 7"]);
    // One process: its threads need not say it.
    let a = axis(&ddp[..4]);
    let rows: Vec<String> = a.outline.iter().filter(|r| r.kind == "location").map(|r| r.label.clone()).collect();
    assert_eq!(rows, ["thread 17930", "pt_gloo_runloop", "thread 18001", "stream 7"]);
}

#[test]
fn innermost_states_hide_their_parents() {
    let t = Trace {
        intervals: Intervals {
            location: vec![0, 0, 0, 1],
            start: vec![0, 10, 12, 5],
            end: vec![100, 20, 15, 6],
            kind: vec![0, 1, 2, 1],
            depth: vec![0, 1, 2, 0],
        },
        ..Default::default()
    };
    let by = ByLocation::new(&t, 2);
    let mut seen = Vec::new();
    by.innermost(0, |a, b, k| seen.push((a, b, k)));
    assert_eq!(seen, vec![(0, 10, 0), (10, 12, 1), (12, 15, 2), (15, 20, 1), (20, 100, 0)]);
    seen.clear();
    by.innermost_in(0, (11, 16), |a, b, k| seen.push((a, b, k)));
    assert_eq!(seen, vec![(11, 12, 1), (12, 15, 2), (15, 16, 1)]);
    seen.clear();
    by.innermost(1, |a, b, k| seen.push((a, b, k)));
    assert_eq!(seen, vec![(5, 6, 1)]);
}

/// A trace's idle location is hidden; in the rows of one window of a larger trace it keeps
/// its track, as in the pyramid's pictures of the whole trace.
#[test]
fn a_window_of_a_larger_trace_keeps_every_track() {
    let mut t = Trace {
        intervals: Intervals {
            location: vec![0, 2],
            start: vec![0, 5],
            end: vec![10, 6],
            kind: vec![0, 0],
            depth: vec![0, 0],
        },
        ..Default::default()
    };
    t.locations.name = ["rank 0", "rank 1", "rank 2"].map(String::from).to_vec();
    let opts = TimelineOptions::default();
    let whole = TimelineIndex::new(&t).tracks(&t, &opts);
    assert_eq!((whole.count(), whole.hidden), (2, 1));
    t.span_of_whole = Some((0, 100));
    let window = TimelineIndex::new(&t).tracks(&t, &opts);
    assert_eq!((window.count(), window.hidden), (3, 0));
}

/// A trace's states take their colours by their time in it; the rows of one window of a
/// larger trace take them by the whole trace's, as its pyramid gives them, where it counts
/// every kind (else by the window's own).
#[test]
fn a_window_of_a_larger_trace_colours_its_states_as_the_whole_trace_does() {
    let mut t = Trace {
        intervals: Intervals {
            location: vec![0, 0],
            start: vec![0, 10],
            end: vec![10, 100],
            kind: vec![0, 1],
            depth: vec![0, 0],
        },
        ..Default::default()
    };
    t.locations.name = vec!["rank 0".into()];
    t.region_names = ["compute", "wait"].map(String::from).to_vec();
    let legend = |t: &Trace| TimelineIndex::new(t).legend.iter().map(|l| l.1.clone()).collect::<Vec<_>>();
    assert_eq!(legend(&t), ["wait", "compute"]);
    t.span_of_whole = Some((0, 1000));
    t.state_ticks_of_whole = Some(vec![900, 100]);
    assert_eq!(legend(&t), ["compute", "wait"]);
    t.state_ticks_of_whole = Some(vec![900]);
    assert_eq!(legend(&t), ["wait", "compute"], "a pyramid that lumps kinds together");
}

/// A trace held in memory with an index ranks its states for the rows' pictures as the
/// index's pictures do, by every interval's time (a parent's included), not by the innermost
/// states' time, and keeps a track for every location as they do: the legend does not swap,
/// nor the tracks move, as a zoom moves from the index to the rows.
#[test]
fn a_trace_with_an_index_ranks_its_states_and_keeps_its_tracks_as_the_index_does() {
    let mut t = Trace::default();
    // Per pair, "outer" covers 1,000 ticks and "inner" 600 of them: "inner" leads by the
    // innermost states' time (600 against 400), "outer" by every interval's.
    let pairs = (exaviz_model::held_index::INDEX_ROWS / 2 + 1) as u32;
    for k in 0..pairs {
        let (l, at) = (k % 64, u64::from(k / 64) * 1000);
        t.intervals.push(l, at, at + 1000, 0, 0);
        t.intervals.push(l, at, at + 600, 1, 1);
    }
    // And a 65th location without any event.
    t.locations.name = (0..65).map(|l| format!("rank {l}")).collect();
    t.region_names = ["outer", "inner"].map(String::from).to_vec();
    let mut d = Dataset { name: "nested".into(), trace: t, ..Default::default() };
    let legend = |t: &Trace| TimelineIndex::new(t).legend.iter().map(|l| l.1.clone()).collect::<Vec<_>>();
    assert_eq!(legend(&d.trace), ["inner", "outer"], "no index: by the innermost states");
    let tracks = |d: &Dataset| {
        let index = crate::timeline::TimelineView::default().index(d);
        index.tracks(&d.trace, &TimelineOptions::default()).count()
    };
    assert_eq!(tracks(&d), 64, "no index: the idle location has no track");
    exaviz_model::held_index::attach_index(&mut d);
    assert!(d.index.is_some());
    assert_eq!(legend(&d.trace), ["outer", "inner"], "as the index's pictures");
    assert_eq!(tracks(&d), 65, "as the index's pictures, where every location is a row");
}

/// A small deterministic generator: `next(m)` is below `m`.
fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// Messages among 12 locations over 2^24 ticks, latencies up to 2^17 ticks (some far longer),
/// a few unreceived, from a small deterministic generator.
fn random_messages(seed: u64) -> Trace {
    let mut next = xorshift(seed);
    let mut m = exaviz_model::Messages::default();
    for _ in 0..20_000 {
        let send = next(1 << 24);
        let latency = if next(50) == 0 { next(1 << 23) } else { next(1 << 17) };
        m.source.push(next(12) as u32);
        m.destination.push(next(12) as u32);
        m.send_time.push(send);
        m.recv_time.push(if next(200) == 0 { u64::MAX } else { send + latency });
        m.bytes.push(8);
        m.tag.push(0);
    }
    let locations =
        exaviz_model::Locations { name: (0..12).map(|l| format!("rank {l}")).collect(), ..Default::default() };
    Trace { messages: m, locations, ticks_per_second: 1 << 20, ..Default::default() }
}

/// A window panned by whole pixels draws only the lines through the columns it uncovers and
/// takes the rest from the last picture: the density equals a fresh picture's count for count
/// where the shift is exact (2^11 ticks a pixel), and nearly where a pan in seconds rounds
/// to ticks; windows of another width, or not panned by whole pixels, are drawn afresh.
#[test]
fn a_pan_draws_only_the_lines_it_uncovers_and_equals_a_fresh_picture() {
    let t = random_messages(5);
    let d = Dataset { name: "pan".into(), trace: t, ..Default::default() };
    let t = &d.trace;
    let index = TimelineIndex::new(t);
    let opts = TimelineOptions::default();
    let p = Plot { x0: 0, y0: 0, w: 512, h: 96 };
    let rows = placed(t, &index, &opts, p, None).rows;
    let key = trace_key(&d);
    let draw = |window: (u64, u64), kept: Option<&KeptLines>| {
        let kept = kept.map(|k| (k, key.clone()));
        message_density(t, &Backend::Cpu, p, window, &rows, &TimelineBundle::None, &index, kept, None).unwrap()
    };
    let kept = KeptLines::default();
    let span = 1u64 << 20;
    let start = 3u64 << 20;
    let (first, _) = draw((start, start + span), Some(&kept));
    assert_eq!(first, draw((start, start + span), None).0, "nothing kept yet: drawn afresh");
    // Whole pixels both ways, far and near, then the same window again.
    for px in [40i64, -40, 1, -300, 511, 0, -511] {
        let from = kept.window().unwrap().0;
        let at = (from as i64 + px * (span as i64 >> 9)) as u64;
        let window = (at, at + span);
        assert_eq!(pixel_shift((from, from + span), window, p.w), Some(px));
        let (panned, visible) = draw(window, Some(&kept));
        let (fresh, fresh_visible) = draw(window, None);
        assert_eq!(visible, fresh_visible);
        assert!(panned.counts.iter().any(|&c| c > 0));
        assert_eq!(panned, fresh, "a pan by {px} pixels");
    }
    // A pan in seconds (a window 1.3 s wide: 1,363,148.8 ticks, 2,662.4 ticks a pixel) rounds
    // to ticks: within a 64th of a pixel, a handful of line ends fall in the next pixel.
    let tps = t.ticks_per_second as f64;
    let mut window_s = (2.0, 3.3);
    draw(window_in((0, 1 << 24), tps, Some(window_s)).unwrap(), Some(&kept));
    for share in [0.125, -0.25, 40.0 / 512.0] {
        let before = kept.window().unwrap();
        window_s = pan_window(window_s, 16.0, share);
        let window = window_in((0, 1 << 24), tps, Some(window_s)).unwrap();
        let shift = pixel_shift(before, window, p.w).expect("a whole-pixel pan");
        assert_eq!(shift, (share * 512.0).round() as i64);
        let (panned, fresh) = (draw(window, Some(&kept)).0, draw(window, None).0);
        let off = panned.counts.iter().zip(&fresh.counts).filter(|(a, b)| a != b).count();
        let lit = fresh.counts.iter().filter(|&&c| c > 0).count();
        assert!(off * 200 <= lit, "{off} of {lit} lit pixels differ after a pan by {shift}");
        let total = |i: &stages::DensityImage| i.counts.iter().map(|&c| u64::from(c)).sum::<u64>();
        assert!(total(&panned).abs_diff(total(&fresh)) * 1000 <= total(&fresh));
    }
    // Not whole pixels, another width, or no shared column: drawn afresh.
    let from = kept.window().unwrap();
    assert_eq!(pixel_shift(from, (from.0 + 1331, from.1 + 1331), p.w), None, "half a pixel");
    assert_eq!(pixel_shift(from, (from.0, from.1 + 2662), p.w), None, "a wider window");
    let apart = (from.1 - from.0) as f64 * 1.5;
    assert_eq!(pixel_shift(from, (from.0 + apart as u64, from.1 + apart as u64), p.w), None, "no shared column");
}

/// A pan through the view's kept picture walks the states and draws the lines of the columns
/// it uncovers only, and takes the rest from the last picture: the picture equals a fresh
/// one pixel for pixel where the shift is exact (a window of 2^20 ticks over 512 columns),
/// innermost states and bands per nesting level alike, both ways, with regions nested or
/// overlapping without nesting.
#[test]
fn a_panned_picture_equals_a_fresh_one() {
    let mut t = random_messages(9);
    // Calls on every location over the messages' 2^24 ticks.
    for (l, seed) in (0..12u32).zip(31u64..) {
        // Odd locations: some regions overlap without nesting (a walk's stack then holds
        // regions that ended under ones still open).
        let calls = random_intervals(seed, l % 2 == 1).intervals;
        for k in (0..calls.start.len()).filter(|&k| calls.location[k] == 0) {
            let scale = 1 << 11;
            t.intervals.push(l, calls.start[k] * scale, calls.end[k] * scale, calls.kind[k], calls.depth[k]);
        }
    }
    t.region_names = (0..5).map(|k| format!("state {k}")).collect();
    let d = Dataset { name: "pan".into(), trace: t, ..Default::default() };
    let index = Arc::new(TimelineIndex::new(&d.trace));
    let tps = d.trace.ticks_per_second as f64;
    // The plot of a 854 x 500 picture: 512 columns wide, 2^11 ticks each at 0.5 s a window.
    let (width, height) = (854u32, 500u32);
    assert_eq!(plot_rect(width, height).map(|p| p.w), Some(512));
    for (innermost, rows) in [(true, 12), (false, 2)] {
        let mut t = d.trace.clone();
        t.locations.name.truncate(rows);
        let d = Dataset { trace: t, ..d.clone() };
        let index = if rows == 12 { index.clone() } else { Arc::new(TimelineIndex::new(&d.trace)) };
        let last = LastPicture::default();
        let picture_of = |window_s: (f64, f64), last: Option<&LastPicture>| {
            let opts = TimelineOptions { width, height, window_s: Some(window_s), innermost, ..Default::default() };
            let (scene, _) = timeline_scene(&d, &Backend::Cpu, &opts, &index, None, last).unwrap();
            exaviz_render::cpu::render(&scene, Default::default()).pixels
        };
        let picture = |from: f64, last: Option<&LastPicture>| picture_of((from, from + 0.5), last);
        let mut from = 3.0;
        assert_eq!(picture(from, Some(&last)), picture(from, None));
        for px in [40.0, -40.0, 1.0, -300.0, 100.0, 0.0] {
            from += px * 0.5 / 512.0;
            let kept = last.states.window().unwrap();
            let window = window_in(index.span().unwrap(), tps, Some((from, from + 0.5))).unwrap();
            assert_eq!(pixel_shift(kept, window, 512), Some(px as i64));
            assert!(picture(from, Some(&last)) == picture(from, None), "{px} pixels, innermost {innermost}");
        }
        assert_eq!((last.states.taken(), last.lines.taken()), (6, 6), "every pan took the kept columns");
        // States of several kinds and lines drawn: many colours in the picture.
        let mut colours: Vec<[u8; 4]> = bytemuck::cast_slice::<u8, [u8; 4]>(&picture(from, None)).to_vec();
        colours.sort_unstable();
        colours.dedup();
        assert!(colours.len() > 50, "{} colours", colours.len());
        // Pans in seconds of a window 0.37 s wide (1,515.5 ticks a pixel) round to ticks:
        // within a 64th of a pixel, a few pixels differ a little.
        let mut window_s = (5.0, 5.37);
        picture_of(window_s, Some(&last));
        for share in [0.125, -0.25, 40.0 / 512.0] {
            window_s = pan_window(window_s, 16.0, share);
            let (panned, fresh) = (picture_of(window_s, Some(&last)), picture_of(window_s, None));
            let off = panned
                .chunks(4)
                .zip(fresh.chunks(4))
                .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 2))
                .count();
            assert!(off * 500 <= panned.len() / 4, "{off} pixels differ after a pan by {share} of the window");
        }
        assert_eq!((last.states.taken(), last.lines.taken()), (9, 9));
    }
}

/// Nested intervals (and, at `tangled`, some that overlap without nesting) on three
/// locations, from a small deterministic generator.
fn random_intervals(seed: u64, tangled: bool) -> Trace {
    let mut next = xorshift(seed);
    let mut iv = Intervals::default();
    for l in 0..3u32 {
        // Each location: a tree of calls, depth-first.
        let mut stack: Vec<(u64, u64)> = vec![(0, 10_000)];
        let mut at = 0u64;
        while let Some(&(_, end)) = stack.last() {
            if at >= end || (stack.len() > 1 && next(4) == 0) || stack.len() > 5 {
                stack.pop();
                at = at.max(end);
                continue;
            }
            let a = at + next(20);
            let b = (a + 1 + next(400)).min(end);
            let b = if tangled && next(7) == 0 { b + next(50) } else { b };
            if a >= b {
                at = end;
                continue;
            }
            iv.location.push(l);
            iv.start.push(a);
            iv.end.push(b);
            iv.kind.push(next(5) as u32);
            iv.depth.push(stack.len() as u32 - 1);
            stack.push((a, b.min(end)));
            at = a;
        }
    }
    let locations =
        exaviz_model::Locations { name: (0..3).map(|l| format!("rank {l}")).collect(), ..Default::default() };
    Trace { intervals: iv, locations, ..Default::default() }
}

#[test]
fn a_search_walks_the_same_matches_as_the_index() {
    for (seed, tangled) in [(7, false), (11, false), (13, true), (17, true)] {
        let mut t = random_intervals(seed, tangled);
        t.region_names = (0..5).map(|k| format!("k{k}")).collect();
        let by = ByLocation::new(&t, 3);
        let search = exaviz_model::selection::Search::new("K3").unwrap();
        let found = crate::search::Matches::new(&t, &search);
        assert!(found.total() > 10, "seed {seed}: {} matches", found.total());
        for l in 0..3 {
            for w in [(0, 10_000), (0, 37), (1_234, 1_300), (5_000, 9_999), (3_333, 3_333), (9_000, 20_000)] {
                let mut want = Vec::new();
                by.overlapping(l, w, |k| {
                    if t.intervals.kind[k] == 3 {
                        want.push(k);
                    }
                });
                let mut got = Vec::new();
                found.overlapping(&t, l, w, |k| got.push(k));
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want, "seed {seed} location {l} window {w:?}");
            }
        }
    }
}

#[test]
fn a_window_walk_equals_the_whole_walk_clipped() {
    for (seed, tangled) in [(7, false), (11, false), (13, true), (17, true)] {
        let t = random_intervals(seed, tangled);
        let by = ByLocation::new(&t, 3);
        for l in 0..3 {
            let mut whole = Vec::new();
            by.innermost_replayed(&t, l, |a, b, k| whole.push((a, b, k)));
            assert!(whole.len() > 20, "seed {seed} location {l}: {} spans", whole.len());
            for w in [(0, 10_000), (0, 37), (1_234, 1_300), (5_000, 9_999), (3_333, 3_333), (9_000, 20_000)] {
                let clipped: Vec<_> =
                    whole.iter().map(|&(a, b, k)| (a.max(w.0), b.min(w.1), k)).filter(|&(a, b, _)| a < b).collect();
                let mut seen = Vec::new();
                by.innermost_in(l, w, |a, b, k| seen.push((a.max(w.0), b.min(w.1), k)));
                seen.retain(|&(a, b, _)| a < b);
                assert_eq!(seen, clipped, "seed {seed} location {l} window {w:?}");
            }
            // The state under a time is the deepest latest interval holding it.
            let index = TimelineIndex::new(&t);
            let i = &t.intervals;
            for at in (0..10_000).step_by(97) {
                let scan = (0..i.start.len())
                    .filter(|&k| i.location[k] as usize == l && i.start[k] <= at && i.end[k] > at)
                    .max_by_key(|&k| (i.depth[k], i.start[k]))
                    .map(|k| (i.kind[k], i.start[k], i.end[k]));
                assert_eq!(index.state_at(&t, l, at, None), scan, "seed {seed} location {l} at {at}");
            }
        }
    }
}

/// Rows in increasing order as a comparison sort gives them, dense over their range (the
/// bitmap) or sparse (the sort).
#[test]
fn distinct_rows_come_back_in_order() {
    let mut s = 11u64;
    let mut next = move || {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (s >> 33) as u32
    };
    for (range, keep) in [(100_000u32, 2u32), (100_000, 1000), (u32::MAX, 1), (70, 1)] {
        let mut rows: Vec<u32> = (0..20_000u32).map(|k| k * (range / 20_000).max(1) + 3).collect();
        rows.retain(|_| next() % keep == 0);
        rows.push(range - 1);
        rows.sort_unstable();
        rows.dedup();
        let want = rows.clone();
        // Shuffled.
        for i in (1..rows.len()).rev() {
            rows.swap(i, next() as usize % (i + 1));
        }
        sort_distinct(&mut rows);
        assert_eq!(rows, want, "range {range}, every {keep}th");
    }
    let mut none: Vec<u32> = Vec::new();
    sort_distinct(&mut none);
    assert!(none.is_empty());
}
#[test]
fn straight_lines_equal_one_weighted_pass_over_their_pieces() {
    let mut state = 11u64;
    let mut rng = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let p = Plot { x0: 0, y0: 0, w: 97, h: 61 };
    // Short and long lines, some leaving the plot, one of zero length.
    let mut lines: Vec<[f32; 4]> = (0..3000)
        .map(|k| {
            let (x, y) = (rng() * 120.0 - 10.0, rng() * 80.0 - 10.0);
            let reach = if k % 3 == 0 { 60.0 } else { 6.0 };
            [x, y, x + (rng() - 0.5) * reach, y + (rng() - 0.5) * reach]
        })
        .collect();
    lines.push([5.0, 5.0, 5.0, 5.0]);
    let split = straight_density(&Backend::Cpu, &lines, p).unwrap();
    let (segments, weights) = Polylines::straight(&lines, STRAIGHT_SAMPLES).pieces();
    let input = DensityInput { segments: &segments, weights: Some(&weights), width: p.w, height: p.h };
    let one = stages::line_density::run(Backend::Cpu.runner().as_mut(), &input).unwrap();
    assert!(one.counts.iter().any(|&c| c > 2));
    assert_eq!(split.counts, one.counts);
    assert_eq!(split.sums, one.sums);
}

/// Intervals grouped by location in (start, depth) order, whatever the input's order, as a
/// comparison sort of (location, start, depth) orders them; ids past the locations dropped.
#[test]
fn intervals_are_ordered_by_location_start_and_depth() {
    let mut s = 11u64;
    let mut next = move |m: u64| {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (s >> 33) % m
    };
    let n = 20_000;
    let intervals = Intervals {
        location: (0..n).map(|_| next(70) as u32).collect(),
        start: (0..n).map(|_| next(5_000)).collect(),
        end: vec![u64::MAX; n],
        kind: vec![0; n],
        depth: (0..n).map(|_| next(3) as u32).collect(),
    };
    let t = Trace { intervals, ..Trace::default() };
    let i = &t.intervals;
    let by = ByLocation::new(&t, 64);
    let key = |k: u32| (i.location[k as usize], i.start[k as usize], i.depth[k as usize]);
    let mut want: Vec<u32> = (0..n as u32).filter(|&k| i.location[k as usize] < 64).collect();
    want.sort_by_key(|&k| key(k));
    assert_eq!(by.order.iter().map(|&k| key(k)).collect::<Vec<_>>(), want.iter().map(|&k| key(k)).collect::<Vec<_>>());
    for l in 0..64 {
        assert!(by.rows(l).iter().all(|&k| i.location[k as usize] as usize == l), "location {l}");
    }
    assert!(by.rows(64).is_empty() && by.ranges.len() == 64);
}

/// The message tone's table of ranks equals the ranks searched for, present counts or not.
#[test]
fn message_ranks_from_the_table_equal_the_searched_ones() {
    let counts: Vec<u32> = (0..5_000u32).map(|k| if k % 3 == 0 { 0 } else { (k * 7919) % 97 + (k % 5) * 40 }).collect();
    let tone = MessageTone::new(&counts, 0.8);
    assert_eq!(tone.ranks.len(), *tone.sorted.last().unwrap() as usize + 1);
    for c in 0..=tone.sorted.last().unwrap() + 3 {
        assert_eq!(tone.rank(c).to_bits(), tone.searched_rank(c).to_bits(), "count {c}");
    }
    let high = MessageTone::new(&[1, RANKED + 5, 3], 0.8);
    assert!(high.ranks.is_empty());
    assert_eq!(high.rank(3), 0.5);
}

#[test]
fn rows_cover_the_plot_without_overlap() {
    let rows: Vec<_> = (0..3).map(|l| rows_of(l, 3, 30)).collect();
    assert_eq!(rows, vec![0..9, 10..19, 20..29]);
    assert_eq!(rows_of(999, 1000, 100), 99..100);
}

/// The summary track's shares equal, column by column, each location's states' time in the
/// column over the column's time, summed per colour slot and divided by the locations' count;
/// its pixels stack each column's states from the bottom, as tall as their shares.
#[test]
fn the_summary_counts_each_locations_states_per_column() {
    let mut next = xorshift(11);
    let mut iv = Intervals::default();
    let n = 37u32;
    for l in 0..n {
        let mut at = next(100);
        while at < 10_000 {
            let len = 1 + next(400);
            iv.location.push(l);
            iv.start.push(at);
            iv.end.push(at + len);
            iv.kind.push(next(3) as u32);
            iv.depth.push(0);
            at += len + next(200);
        }
    }
    let locations =
        exaviz_model::Locations { name: (0..n).map(|l| format!("rank {l}")).collect(), ..Default::default() };
    let mut t = Trace { intervals: iv, locations, ..Default::default() };
    t.region_names = (0..3).map(|k| format!("state {k}")).collect();
    let index = TimelineIndex::new(&t);
    let (w, window) = (64u32, (1_000u64, 9_000u64));
    let shown: Vec<usize> = (0..n as usize).collect();
    let shares = super::states::summary_shares(w, window, &shown, &index);
    let per_px = (window.1 - window.0) as f64 / f64::from(w);
    let i = &t.intervals;
    for (c, got) in shares.iter().enumerate() {
        let (a, b) = (window.0 as f64 + c as f64 * per_px, window.0 as f64 + (c + 1) as f64 * per_px);
        let mut want = [0f64; crate::plot::CATEGORICAL.len()];
        for k in 0..i.start.len() {
            let overlap = (i.end[k] as f64).min(b) - (i.start[k] as f64).max(a);
            if overlap > 0.0 {
                want[index.slot[i.kind[k] as usize]] += overlap / per_px / f64::from(n);
            }
        }
        for s in 0..want.len() {
            assert!((f64::from(got[s]) - want[s]).abs() < 1e-4, "column {c} slot {s}: {} against {}", got[s], want[s]);
        }
        assert!(got.iter().sum::<f32>() <= 1.0 + 1e-5, "column {c}: more than every location");
    }
    let h = 40u32;
    let pixels = super::states::summary_pixels(&shares, h);
    for (c, share) in shares.iter().enumerate() {
        let filled = (0..h).filter(|&r| pixels[(r * w) as usize + c].is_some()).count() as f32;
        let total: f32 = share.iter().sum();
        assert!((filled - total * h as f32).abs() <= 1.0, "column {c}: {filled} of {h} rows for a share of {total}");
        // The bottom row: the first state whose stack reaches its middle.
        let mut below = 0.0;
        if let Some(first) = (0..share.len()).find(|&s| {
            below += share[s];
            below > 0.5 / h as f32
        }) {
            let rgb = crate::plot::CATEGORICAL[first].map(|v| v * 0.72);
            let bottom = pixels[((h - 1) * w) as usize + c].expect("a state at the bottom");
            assert!((0..3).all(|k| (bottom[k] - rgb[k]).abs() < 1e-6), "column {c}");
        }
    }
}
