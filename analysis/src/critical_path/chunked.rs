//! The analysis of a store too large to hold, chunk by chunk: the window is cut by time into
//! chunks of at most [`CHUNK_ROWS`] messages and intervals (by the store's statistics), read and
//! analysed one at a time from the last, so that the graph of a chunk is all that is held. The
//! critical path's walk goes on in the chunk before where it left one ([`path::Resume`]); wait
//! states are those whose cause sent within the chunk (each counted once); their root causes
//! and the stragglers are summed over the chunks (delays propagated across a chunk's start are
//! charged to the waiting that ended there, not carried on).

use std::collections::HashMap;

use exaviz_model::dataset::Dataset;

use super::path::{self, Resume, Segment, Share, Shares, Step};
use super::stragglers::{self, Straggler, Stragglers};
use super::what_if::{self, Ask, Carry, WhatIf, WindowReplay};
use super::{CauseRow, Graph, Report, causes};

/// Messages and intervals read at once.
pub const CHUNK_ROWS: u64 = 20_000_000;

/// The chunks of `window` (ticks) for `dataset`'s rows, in time order: halves of halves until
/// each holds at most `limit` rows by the store's estimate, or halving it reads no fewer (one
/// chunk where the rows are held).
pub fn chunks(dataset: &Dataset, window: (u64, u64), limit: u64) -> Vec<(u64, u64)> {
    let Some(ooc) = &dataset.out_of_core else { return vec![window] };
    let mut out = Vec::new();
    let mut todo = vec![(window, ooc.rows.estimate(window))];
    while let Some(((a, b), rows)) = todo.pop() {
        let mid = a + (b - a) / 2;
        let halves = [((a, mid), ooc.rows.estimate((a, mid))), ((mid, b), ooc.rows.estimate((mid, b)))];
        // The estimate counts whole row groups: a window within one is not cut further.
        if rows <= limit || b - a <= 1 || halves.iter().any(|h| h.1 >= rows) {
            out.push((a, b));
        } else {
            // The later half below on the stack: chunks come out in time order.
            todo.extend(halves.into_iter().rev());
        }
    }
    out
}

/// The chunks read at once: two where two or more threads work (each chunk then half the
/// rows, so that the rows held at once stay within [`CHUNK_ROWS`]), else one.
pub fn at_once() -> usize {
    if rayon::current_num_threads() >= 2 { 2 } else { 1 }
}

/// The chunks of `window` (ticks) for `dataset` as [`analyse_chunks`] reads them, [`at_once`]
/// at a time.
pub fn plan(dataset: &Dataset, window: (u64, u64)) -> Vec<(u64, u64)> {
    chunks(dataset, window, CHUNK_ROWS / at_once() as u64)
}

/// One chunk's rows and graph, with what its analysis finds that does not depend on the
/// walk of the chunks after it: its wait states, their root causes and its stragglers.
struct Part<'a> {
    chunk: (u64, u64),
    rows: std::borrow::Cow<'a, Dataset>,
    graph: Graph,
    wait_states: u64,
    waiting: u64,
    causes: Vec<CauseRow>,
    stragglers: Stragglers,
}

fn part(dataset: &Dataset, chunk: (u64, u64)) -> Result<Part<'_>, String> {
    let rows = dataset.window_rows_once(chunk)?;
    let (t, training) = (&rows.trace, rows.training.as_deref());
    let graph = Graph::with_training(t, training);
    let mut waits = causes::wait_states(&graph, chunk);
    waits.retain(|w| w.until >= chunk.0 && w.until < chunk.1);
    let causes = causes::root_causes(t, &graph, &waits);
    let stragglers = stragglers::stragglers(t, &graph, chunk, training);
    Ok(Part {
        chunk,
        wait_states: waits.len() as u64,
        waiting: waits.iter().map(|w| w.until - w.from).sum(),
        causes,
        stragglers,
        rows,
        graph,
    })
}

/// What the chunks found, summed as they come (the last first).
#[derive(Default)]
struct Sums {
    resume: Option<Resume>,
    done_walking: bool,
    paths: Vec<Vec<Segment>>,
    regions: Vec<Vec<Option<(String, u64)>>>,
    steps_of: Vec<Vec<String>>,
    shares: [HashMap<String, f64>; 3],
    causes: HashMap<(String, String), (f64, f64, u64)>,
    wait_states: u64,
    waiting: u64,
    steps: u32,
    rows: Vec<stragglers::StragglerRow>,
    named: HashMap<String, (u32, f64, HashMap<String, f64>)>,
}

impl Sums {
    /// Walks the path through `p` (where it has not left the window) and adds what `p` found.
    fn add(&mut self, p: Part<'_>) {
        let (t, g) = (&p.rows.trace, &p.graph);
        if !self.done_walking {
            let (path, exit) = path::walk(t, g, p.chunk, self.resume.take());
            let s = path::shares(t, g, &path);
            for (acc, rows) in self.shares.iter_mut().zip([&s.by_region, &s.by_location, &s.by_kind]) {
                for r in rows {
                    *acc.entry(r.name.clone()).or_default() += r.seconds;
                }
            }
            self.regions.push(super::segment_regions(t, g, &path.segments));
            self.steps_of.push(super::segment_steps(t, g, p.chunk, &path.segments));
            self.paths.push(path.segments);
            self.done_walking = exit.is_none();
            self.resume = exit;
        }
        self.wait_states += p.wait_states;
        self.waiting += p.waiting;
        for c in p.causes {
            let e = self.causes.entry((c.location, c.region)).or_default();
            e.0 += c.direct_s;
            e.1 += c.propagated_s;
            e.2 += c.waits;
        }
        self.steps += p.stragglers.steps;
        self.rows.extend(p.stragglers.rows);
        for x in p.stragglers.named {
            let e = self.named.entry(x.process).or_default();
            e.0 += x.steps;
            e.1 += x.excess_s;
            for r in x.regions {
                *e.2.entry(r.region).or_default() += r.excess_s;
            }
        }
    }
}

/// Everything [`super::analyse`] reports, summed over `chunks` of `dataset` (as [`plan`] cuts
/// them), from the last, [`at_once`] at a time; `progress(done, of)` after each.
pub fn analyse_chunks(
    dataset: &Dataset,
    chunks: &[(u64, u64)],
    start: u64,
    progress: &dyn Fn(usize, usize),
) -> Result<Report, String> {
    Ok(analyse_chunks_walked(dataset, chunks, start, progress)?.0)
}

/// A report, with where its critical path begins (location, tick) and its length, ticks.
pub type Walked = (Report, Option<(u32, u64)>, u64);

/// [`analyse_chunks`], with where the critical path begins and its length.
pub fn analyse_chunks_walked(
    dataset: &Dataset,
    chunks: &[(u64, u64)],
    start: u64,
    progress: &dyn Fn(usize, usize),
) -> Result<Walked, String> {
    let t0 = &dataset.trace;
    let tps = t0.ticks_per_second.max(1) as f64;
    let secs = |ticks: u64| ticks.saturating_sub(start) as f64 / tps;
    let mut sums = Sums::default();
    let last_first: Vec<(u64, u64)> = chunks.iter().rev().copied().collect();
    let mut done = 0;
    for group in last_first.chunks(at_once()) {
        let parts: Vec<Part<'_>> = match group {
            [a, b] => {
                let (a, b) = rayon::join(|| part(dataset, *a), || part(dataset, *b));
                vec![a?, b?]
            }
            _ => group.iter().map(|&c| part(dataset, c)).collect::<Result<_, _>>()?,
        };
        for p in parts {
            sums.add(p);
            done += 1;
            progress(done, chunks.len());
        }
    }
    let segments: Vec<Segment> = sums.paths.into_iter().rev().flatten().collect();
    let regions: Vec<Option<(String, u64)>> = sums.regions.into_iter().rev().flatten().collect();
    let steps_of: Vec<String> = sums.steps_of.into_iter().rev().flatten().collect();
    let length = match (segments.first(), segments.last()) {
        (Some(a), Some(b)) => b.to.saturating_sub(a.from),
        _ => 0,
    };
    let length_s = length as f64 / tps;
    let table = |m: HashMap<String, f64>| {
        let mut v: Vec<Share> = m
            .into_iter()
            .map(|(name, seconds)| Share { name, seconds, share: seconds / length_s.max(1e-300) })
            .collect();
        v.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then_with(|| a.name.cmp(&b.name)));
        v
    };
    let [by_region, by_location, by_kind] = sums.shares;
    let window = (chunks.first().map_or(0, |c| c.0), chunks.last().map_or(0, |c| c.1));
    let first = segments.first().map(|s| (s.location, s.from));
    let report = Report {
        from_s: secs(window.0),
        to_s: secs(window.1),
        length_s,
        jumps: segments.iter().filter(|s| matches!(s.step, Step::Edge(_))).count() as u64,
        shares: Shares { by_region: table(by_region), by_location: table(by_location), by_kind: table(by_kind) },
        segments: super::segment_rows(t0, &segments, (&regions, &steps_of), start),
        wait_states: sums.wait_states,
        waiting_s: sums.waiting as f64 / tps,
        root_causes: cause_rows(sums.causes),
        stragglers: Stragglers { steps: sums.steps, rows: sums.rows, named: named_of(sums.named, sums.steps) },
        what_if: Vec::new(),
    };
    Ok((report, first, length))
}

/// The projections `asks` over `chunks` of `dataset` (as [`plan`] cuts them), replayed from the
/// first chunk to the last, each carrying where the replay of every location stands at its end
/// to the next (a send before a chunk, whose edge arrives in it, as replayed in its own);
/// `first`: where the critical path begins (location, tick), `length` its length in ticks;
/// `progress(done, of)` after each chunk. Each chunk is read while the one before is replayed.
pub fn what_if_chunks(
    dataset: &Dataset,
    chunks: &[(u64, u64)],
    (first, length): (Option<(u32, u64)>, u64),
    asks: &[Ask],
    progress: &dyn Fn(usize, usize),
) -> Result<Vec<WhatIf>, String> {
    let built = |c: (u64, u64)| -> Result<(std::borrow::Cow<'_, Dataset>, Graph), String> {
        let rows = dataset.window_rows_once(c)?;
        let g = Graph::with_training(&rows.trace, rows.training.as_deref());
        Ok((rows, g))
    };
    let mut replays: Vec<Vec<WindowReplay>> = asks.iter().map(|_| Vec::new()).collect();
    let mut carry: Vec<Option<Carry>> = vec![None; asks.len()];
    let mut next = chunks.first().map(|&c| built(c)).transpose()?;
    let mut processes = Vec::new();
    for (k, &chunk) in chunks.iter().enumerate() {
        let Some((rows, g)) = next.take() else { break };
        let last = k + 1 == chunks.len();
        let points: Vec<(u32, u64)> =
            first.filter(|&(_, at)| (chunk.0 <= at && at < chunk.1) || (last && at == chunk.1)).into_iter().collect();
        let replay = |(a, c): (&Ask, Option<Carry>)| {
            let training = rows.training.as_deref();
            what_if::replay_window((&rows.trace, &g, training), chunk, a, c, (&points, last))
        };
        let (done, after) = rayon::join(
            || asks.iter().zip(carry.iter_mut().map(Option::take)).map(replay).collect::<Vec<_>>(),
            || chunks.get(k + 1).map(|&c| built(c)).transpose(),
        );
        next = after?;
        if last {
            processes.clone_from(&g.lanes.processes);
        }
        for (j, mut r) in done.into_iter().enumerate() {
            carry[j] = Some(std::mem::take(&mut r.carry));
            replays[j].push(r);
        }
        progress(k + 1, chunks.len());
    }
    asks.iter().zip(replays).map(|(a, rs)| what_if::projection(&dataset.trace, &processes, a, &rs, length)).collect()
}

/// The root causes summed over the chunks, largest total first.
fn cause_rows(sums: HashMap<(String, String), (f64, f64, u64)>) -> Vec<CauseRow> {
    let mut rows: Vec<CauseRow> = sums
        .into_iter()
        .map(|((location, region), (direct_s, propagated_s, waits))| CauseRow {
            location,
            region,
            direct_s,
            propagated_s,
            waits,
        })
        .collect();
    causes::sort_causes(&mut rows);
    rows
}

/// The processes that stood out in more than half of `steps`, most excess first.
fn named_of(named: HashMap<String, (u32, f64, HashMap<String, f64>)>, steps: u32) -> Vec<Straggler> {
    let mut v: Vec<Straggler> = named
        .into_iter()
        .filter(|(_, (n, _, _))| 2 * n > steps)
        .map(|(process, (n, excess_s, regions))| Straggler {
            process,
            steps: n,
            of_steps: steps,
            excess_s,
            regions: stragglers::top_regions(regions),
        })
        .collect();
    v.sort_by(|a, b| b.excess_s.total_cmp(&a.excess_s).then_with(|| a.process.cmp(&b.process)));
    v
}
