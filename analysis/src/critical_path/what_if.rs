//! What if: how much sooner the run (or a window of it) would end were some of its work faster,
//! projected by replaying the dependency graph (`exaviz critical-path --what-if`), as
//! Dimemas replays a trace and ByteDance's straggler analysis asks "had this rank not been
//! slow".
//!
//! What changes is given as a [`Who`]: the processes named so (`rank 5`, `rank 4-7`, any part
//! of a name), whose work in each step becomes their peers' median (where it was above it); or
//! the regions matching a pattern (`region:extra_work`, `region:ncclKernel_AllReduce*0.5`),
//! whose time is scaled by a factor or, without one, removed.
//!
//! The replay keeps the run's order and moves its times. Each location's time is work (its
//! pieces, scaled as asked; untraced time as it was) and waits: its waiting stretches, and the
//! untraced time before a binding edge arrived (a helper thread idle until its work was handed
//! over). A wait that ended by binding edges now ends when the last of them arrives, each
//! edge's source replayed to its send and the edge's own latency kept (a collective's or a
//! message's), plus the wait's tail after that arrival (the receive's own cost); a wait no
//! edge ended keeps its length. Waits are replayed in the order in which they ended, so that
//! every send they need is known. Replayed as it is, the run ends when it did: the projection
//! moves only by what changed. Work made slower (a factor above 1) is projected only through the
//! waits the run had: a wait it would have caused where the run had none is not found.

use std::collections::{BTreeMap, HashMap};

use exaviz_model::Trace;
use exaviz_model::training::Training;
use serde::Serialize;

use super::graph::{EdgeKind, Graph, Piece};
use super::path::Path;

/// What a what-if changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Who {
    /// The processes whose name holds `text` (case aside, a number in it not part of a longer
    /// one) or, with `range`, `text` followed by a number in the range: their work in each step
    /// becomes their peers' median, where it was above it.
    Processes { text: String, range: Option<(u64, u64)> },
    /// The regions whose name matches `pattern` (`*` any run of characters, `?` one; case
    /// aside): their time scaled by `factor` (0: removed).
    Region { pattern: String, factor: f64 },
}

/// A what-if as asked, with the text it was asked by.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    pub spec: String,
    pub who: Who,
}

/// Reads a what-if: `region:PATTERN`, `region:PATTERN*FACTOR`, or the processes to bring to
/// their peers (`rank 5`, `rank 4-7`, `ranks 4-7`, any part of a process's name).
pub fn parse(spec: &str) -> Result<Ask, String> {
    let s = spec.trim();
    if s.is_empty() {
        return Err("--what-if needs what to change: `rank 5`, `rank 4-7`, `region:NAME` or `region:NAME*0.5`".into());
    }
    let who = if let Some(rest) = s.strip_prefix("region:") {
        let (pattern, factor) = match rest.rsplit_once('*') {
            Some((p, f)) if !f.is_empty() && f.chars().all(|c| c.is_ascii_digit() || c == '.') => {
                let factor: f64 =
                    f.parse().map_err(|_| format!("--what-if {spec:?}: {f:?} is not a factor (as in *0.5)"))?;
                (p, factor)
            }
            _ => (rest, 0.0),
        };
        if pattern.is_empty() {
            return Err(format!("--what-if {spec:?}: no region named after `region:`"));
        }
        if !factor.is_finite() {
            return Err(format!("--what-if {spec:?}: the factor must be a finite number"));
        }
        Who::Region { pattern: pattern.to_string(), factor }
    } else {
        let lower = s.to_lowercase();
        let lower = match lower.strip_prefix("ranks ") {
            Some(r) => format!("rank {r}"),
            None => lower,
        };
        let range = lower.rsplit_once(|c: char| !c.is_ascii_digit() && c != '-').map_or(lower.as_str(), |x| x.1);
        match range.split_once('-').map(|(a, b)| (a.parse::<u64>(), b.parse::<u64>())) {
            Some((Ok(a), Ok(b))) if !range.starts_with('-') => {
                if a > b {
                    return Err(format!("--what-if {spec:?}: the range {a}-{b} is empty"));
                }
                Who::Processes { text: lower[..lower.len() - range.len()].to_string(), range: Some((a, b)) }
            }
            _ => Who::Processes { text: lower, range: None },
        }
    };
    Ok(Ask { spec: s.to_string(), who })
}

/// Whether `name` (lower case) holds `text` (lower case) with no digit glued to a number at
/// either end, or, with `range`, `text` followed by a number in the range.
fn names(name: &str, text: &str, range: Option<(u64, u64)>) -> bool {
    let b = name.as_bytes();
    let digit = |k: usize| b.get(k).is_some_and(u8::is_ascii_digit);
    name.match_indices(text).any(|(k, _)| {
        let end = k + text.len();
        if text.as_bytes().first().is_some_and(u8::is_ascii_digit) && k > 0 && digit(k - 1) {
            return false;
        }
        match range {
            None => !(text.as_bytes().last().is_some_and(u8::is_ascii_digit) && digit(end)),
            Some((lo, hi)) => {
                let n = b[end..].iter().take_while(|c| c.is_ascii_digit()).count();
                name[end..end + n].parse::<u64>().is_ok_and(|x| (lo..=hi).contains(&x))
            }
        }
    })
}

/// Whether `name` matches the glob `pattern` (`*`, `?`), case aside.
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) =
        (pattern.to_lowercase().chars().collect(), name.to_lowercase().chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0usize, 0usize, None, 0usize);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// One step's projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepWhatIf {
    pub step: String,
    /// The step's length as run (from the previous step's last end, or from its own first
    /// start for the first step, to its last end across processes), as projected, and what
    /// that saves: the steps' savings add up to what the last step's end moves.
    pub length_s: f64,
    pub projected_s: f64,
    pub saved_s: f64,
}

/// A what-if's projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    /// The what-if as asked, and what it selected (processes or regions, by name).
    pub who: String,
    pub selected: Vec<String>,
    /// The work it takes away (summed over every location), seconds.
    pub removed_s: f64,
    /// The critical path's length as run, as projected, and what that saves.
    pub length_s: f64,
    pub projected_s: f64,
    pub saved_s: f64,
    /// Per step (Kineto's `ProfilerStep#N`) where the trace has steps.
    pub steps: Vec<StepWhatIf>,
}

/// What ends a wait in the replay: `src` at `sent` (and, for a collective, `also` at its time:
/// the later of the two entries), then `latency` ticks (as run, or scaled as asked).
#[derive(Clone, Copy, Debug)]
struct Arrival {
    src: u32,
    sent: u64,
    latency: f64,
    also: Option<(u32, u64)>,
}

/// A wait of one location in the replay: from `a` to `b`, ended by the arrivals
/// `edges[from..to]` of the replay's list (none: a wait that keeps its length); its tail
/// after the last arrival (the receive's own cost) and its own time scaled by `factor`; the
/// location's pieces ending by `a` and by `b` (`k`), and the pieces' shift at each (`shift`).
#[derive(Clone, Copy, Debug)]
struct Wait {
    a: u64,
    b: u64,
    last_arrival: u64,
    edges: (usize, usize),
    factor: f64,
    k: (u32, u32),
    shift: (f64, f64),
}

/// Where the replay of a window begins, as the replay of the window before it left it: per
/// location, the tick its replay starts from and that tick replayed; and the replayed sends
/// whose edges arrive after that window's end. The replay of a whole run starts from none.
#[derive(Clone, Debug, Default)]
pub struct Carry {
    origin: Vec<(u64, f64)>,
    sends: HashMap<(u32, u64), f64>,
}

/// The run replayed with its work scaled.
struct Replay<'a> {
    g: &'a Graph,
    /// Per location, the tick its replay starts from and that tick replayed (0 and 0 for a
    /// whole run); a time before it is replayed as the carried send at that time, or as far
    /// before the origin's replayed tick as it was before the origin.
    origin: Vec<(u64, f64)>,
    sends: HashMap<(u32, u64), f64>,
    /// Per location, its pieces ending by the origin and their shift there.
    origin_shift: Vec<(u32, f64)>,
    /// Per location, per piece: the piece's (factor − 1) summed over the pieces before it
    /// times their lengths (the shift they make), and each piece's factor.
    shift: Vec<Vec<f64>>,
    factor: Vec<Vec<f64>>,
    /// The waits of every location, location by location (those of `l` from `first[l]` to
    /// `first[l + 1]`), and their ends apart (to search them).
    waits: Vec<Wait>,
    first: Vec<usize>,
    ends: Vec<u64>,
    edges: Vec<Arrival>,
    /// Per wait: its replayed end (NaN: not yet), and whether it is being replayed (a cycle of
    /// waits ending at the same tick).
    done: Vec<f64>,
    busy: Vec<bool>,
}

/// How deep waits replay others on demand (those ending at the same tick) before taking the
/// times as they were.
const DEPTH: u32 = 256;

/// The number of `pieces` ending by `t` and their shift before `t`: the sum of (factor − 1) ×
/// time in each before `t`, from the prefix sums `shift` and each piece's `factor`; `within`:
/// pieces known to end by `t` (those before it) and after it (from it on), where known.
fn shift_of(pieces: &[Piece], (shift, factor): (&[f64], &[f64]), t: u64, within: (usize, usize)) -> (usize, f64) {
    let (lo, hi) = within;
    let k = if lo <= hi && hi <= pieces.len() {
        lo + pieces[lo..hi].partition_point(|x| x.end <= t)
    } else {
        pieces.partition_point(|x| x.end <= t)
    };
    let mut s = shift[k];
    if let Some(x) = pieces.get(k).filter(|x| x.start < t) {
        s += (factor[k] - 1.0) * (t - x.start) as f64;
    }
    (k, s)
}

impl Replay<'_> {
    /// The pieces' shift of `l` before `t`, of the pieces `within` (as [`shift_of`]).
    fn shift_at(&self, l: usize, t: u64, within: (usize, usize)) -> f64 {
        shift_of(&self.g.lanes.pieces[l], (&self.shift[l], &self.factor[l]), t, within).1
    }

    /// Where the replay of `l` stands before wait `j`: the tick, that tick replayed, the
    /// pieces ending by it and their shift there.
    fn before(&mut self, l: u32, j: usize, depth: u32) -> (u64, f64, usize, f64) {
        let li = l as usize;
        if j > 0 {
            let w = self.waits[self.first[li] + j - 1];
            (w.b, self.end_of(l, j - 1, depth), w.k.1 as usize, w.shift.1)
        } else {
            let ((o, on), (k, s)) = (self.origin[li], self.origin_shift[li]);
            (o, on, k as usize, s)
        }
    }

    /// When the time `t` of location `l` comes in the replay.
    fn at(&mut self, l: u32, t: u64, depth: u32) -> f64 {
        let li = l as usize;
        let (o, on) = self.origin[li];
        if t <= o {
            return self.sends.get(&(l, t)).copied().unwrap_or(on - (o - t) as f64);
        }
        let (f0, f1) = (self.first[li], self.first[li + 1]);
        let j = self.ends[f0..f1].partition_point(|&b| b <= t);
        if let Some(w) = self.waits[f0..f1].get(j).copied().filter(|w| w.a <= t) {
            let (a, from) = self.at_start(l, j, depth);
            let into = a + (t - from) as f64 * w.factor;
            let end = self.done[f0 + j];
            return if end.is_nan() { into } else { into.min(end) };
        }
        let (base, base_new, lo, s) = self.before(l, j, depth);
        let hi = self.waits[f0..f1].get(j).map_or(usize::MAX, |w| w.k.0 as usize);
        let hi = hi.min(self.g.lanes.pieces[li].len());
        base_new + (t - base) as f64 + self.shift_at(li, t, (lo, hi)) - s
    }

    /// The replayed end of wait `j` of location `l`.
    fn end_of(&mut self, l: u32, j: usize, depth: u32) -> f64 {
        let li = l as usize;
        let x = self.first[li] + j;
        let known = self.done[x];
        if !known.is_nan() {
            return known;
        }
        let w = self.waits[x];
        if self.busy[x] || depth > DEPTH {
            // A cycle, or too deep: the wait ends as far after its start as it did.
            let (a, from) = self.at_start(l, j, depth);
            return a + (w.b - from) as f64;
        }
        self.busy[x] = true;
        let (a, from) = self.at_start(l, j, depth + 1);
        let end = if w.edges.0 == w.edges.1 {
            a + (w.b - from) as f64 * w.factor
        } else {
            let mut ready = f64::MIN;
            for k in w.edges.0..w.edges.1 {
                let e = self.edges[k];
                let mut sent = self.at(e.src, e.sent, depth + 1);
                if let Some((l2, t2)) = e.also {
                    sent = sent.max(self.at(l2, t2, depth + 1));
                }
                ready = ready.max(sent + e.latency);
            }
            // The tail after the last arrival, or after the origin where the wait began before
            // it (an arrival before the origin was replayed with the window before).
            let tail = w.b.saturating_sub(w.last_arrival.max(from));
            ready.max(a) + tail as f64 * w.factor
        };
        self.busy[x] = false;
        self.done[x] = end;
        end
    }

    /// The replayed start of wait `j` of location `l`, and the tick it starts from: its own
    /// start, or where the replay before it left off where that is later (the origin, within a
    /// wait that began before it).
    fn at_start(&mut self, l: u32, j: usize, depth: u32) -> (f64, u64) {
        let (base, base_new, _, s) = self.before(l, j, depth);
        let w = self.waits[self.first[l as usize] + j];
        let (a, sa) = if w.a >= base { (w.a, w.shift.0) } else { (base, s) };
        (base_new + (a - base) as f64 + sa - s, a)
    }
}

/// What the what-if selects: per region its factor, per location the spans (with factors) in
/// which its work is scaled, the names of what it selected, and whether a selected process had
/// peers at work whose median to take.
struct Selection {
    region: Vec<f64>,
    spans: Vec<Vec<(u64, u64, f64)>>,
    selected: Vec<String>,
    measured: bool,
}

fn select(t: &Trace, g: &Graph, window: (u64, u64), training: Option<&Training>, ask: &Ask) -> Selection {
    let lanes = &g.lanes;
    let mut region = vec![1.0; t.region_names.len()];
    let mut spans: Vec<Vec<(u64, u64, f64)>> = vec![Vec::new(); t.locations.name.len()];
    let mut selected = Vec::new();
    let mut measured = false;
    match &ask.who {
        Who::Region { pattern, factor } => {
            for (r, name) in t.region_names.iter().enumerate() {
                if glob(pattern, name) {
                    region[r] = *factor;
                    selected.push(name.clone());
                }
            }
            measured = true;
        }
        Who::Processes { text, range } => {
            // A process of no work (a profiler's lane named after the rank) is not selected.
            let mut works = vec![false; lanes.processes.len()];
            for (l, &p) in lanes.process.iter().enumerate() {
                works[p as usize] |= lanes.pieces.get(l).is_some_and(|x| !x.is_empty());
            }
            let chosen: Vec<bool> =
                lanes.processes.iter().zip(&works).map(|(p, &w)| w && names(&p.to_lowercase(), text, *range)).collect();
            selected = lanes.processes.iter().zip(&chosen).filter(|x| *x.1).map(|x| x.0.clone()).collect();
            if !selected.is_empty() {
                let peers = super::stragglers::Peers::new(g, training);
                for step in super::stragglers::step_work_of(t, g, window, &peers) {
                    for m in step.measured.iter().filter(|m| chosen[m.process as usize]) {
                        measured = true;
                        let f = (m.median_work / m.work).min(1.0);
                        let Some(&(a, b)) = step.spans.get(&m.process) else { continue };
                        for &l in &peers.locs_of[m.process as usize] {
                            spans[l as usize].push((a, b, f));
                        }
                    }
                }
                for s in &mut spans {
                    s.sort_unstable_by_key(|x| (x.0, x.1));
                }
            }
        }
    }
    Selection { region, spans, selected, measured }
}

/// Why `ask` projects nothing, in one line, where it selected nothing (`selected`) or no peers
/// to take a median of (`measured`); `processes`: the run's processes, to name some.
fn refusal(ask: &Ask, selected: &[String], measured: bool, processes: &[String]) -> Option<String> {
    match (&ask.who, selected.is_empty(), measured) {
        (Who::Region { .. }, true, _) => Some(format!("--what-if {:?}: no region is named so", ask.spec)),
        (Who::Processes { .. }, true, _) => {
            let some: Vec<&str> = processes.iter().take(4).map(String::as_str).collect();
            Some(format!(
                "--what-if {:?}: no process is named so (processes are named like {})",
                ask.spec,
                some.join(", ")
            ))
        }
        (_, false, false) => Some(format!(
            "--what-if {:?}: {} has no peers at work in the same steps whose median to take",
            ask.spec,
            selected.join(", ")
        )),
        _ => None,
    }
}

/// The replay of `g` with the work `sel` selects scaled, from `carry` (none: from the run's
/// start); with the work it removed within `clip`, ticks.
fn replay<'a>(g: &'a Graph, sel: &Selection, carry: Option<Carry>, clip: (u64, u64)) -> (Replay<'a>, f64) {
    let lanes = &g.lanes;
    let n = lanes.pieces.len();
    let mut shift = Vec::with_capacity(n);
    let mut factor = Vec::with_capacity(n);
    let mut removed = 0.0;
    for l in 0..n {
        let spans = &sel.spans[l];
        let mut s = Vec::with_capacity(lanes.pieces[l].len() + 1);
        let mut f = Vec::with_capacity(lanes.pieces[l].len());
        let mut acc = 0.0;
        s.push(0.0);
        for p in &lanes.pieces[l] {
            let r = p.region as usize;
            let x = if lanes.waiting.get(r).copied().unwrap_or(false) {
                1.0
            } else {
                let k = spans.partition_point(|x| x.0 <= p.start);
                let by_span = spans[..k].last().filter(|x| p.start < x.1).map_or(1.0, |x| x.2);
                sel.region.get(r).copied().unwrap_or(1.0) * by_span
            };
            acc += (x - 1.0) * (p.end - p.start) as f64;
            removed += (1.0 - x) * p.end.min(clip.1).saturating_sub(p.start.max(clip.0)) as f64;
            s.push(acc);
            f.push(x);
        }
        shift.push(s);
        factor.push(f);
    }
    // A collective ends for its last entrant, too, only once every other participant entered:
    // per last entrant, (its entry, the other's location and entry, its exit).
    let mut last_in: Vec<Vec<(u64, u32, u64, u64)>> = vec![Vec::new(); n];
    for e in g.edges.iter().filter(|e| e.kind == EdgeKind::Collective && e.sent <= e.arrived) {
        let (Some(mine), Some(theirs)) =
            (lanes.piece_at(e.src, e.sent), lanes.piece_at(e.dst, e.arrived.saturating_sub(1)))
        else {
            continue;
        };
        if mine.end >= e.sent && theirs.start <= e.sent {
            last_in[e.src as usize].push((e.sent, e.dst, theirs.start, mine.end));
        }
    }
    let Carry { origin, sends } = carry.unwrap_or_default();
    let origin = if origin.len() == n { origin } else { vec![(0, 0.0); n] };
    let mut edges: Vec<Arrival> = Vec::new();
    let mut origin_shift = Vec::with_capacity(n);
    let waits: Vec<Vec<Wait>> = (0..n)
        .map(|l| {
            let mut ws = waits_of(g, l as u32, sel, &last_in[l], &mut edges);
            // Waits over before the origin were replayed with the window before.
            ws.retain(|w| w.b > origin[l].0);
            let (p, sf) = (&lanes.pieces[l], (shift[l].as_slice(), factor[l].as_slice()));
            let all = (0, p.len());
            let (k, s) = shift_of(p, sf, origin[l].0, all);
            origin_shift.push((k as u32, s));
            for w in &mut ws {
                let ((ka, sa), (kb, sb)) = (shift_of(p, sf, w.a, all), shift_of(p, sf, w.b, all));
                w.k = (ka as u32, kb as u32);
                w.shift = (sa, sb);
            }
            ws
        })
        .collect();
    let mut first = Vec::with_capacity(n + 1);
    first.push(0);
    for w in &waits {
        first.push(first.last().copied().unwrap_or(0) + w.len());
    }
    let waits: Vec<Wait> = waits.into_iter().flatten().collect();
    let ends = waits.iter().map(|w| w.b).collect();
    let (done, busy) = (vec![f64::NAN; waits.len()], vec![false; waits.len()]);
    (Replay { g, origin, sends, origin_shift, shift, factor, waits, first, ends, edges, done, busy }, removed)
}

/// Edges into a wait: (source, sent, arrived, the waiter's own entry for a collective).
type Arrivals = Vec<(u32, u64, u64, Option<u64>)>;

/// The waits of location `l` for the replay, by start: its waiting stretches, and the idle
/// time before an edge's arrival; their arrivals appended to `edges`. `last_in`: the
/// collectives `l` entered last, (its entry, another participant and its entry, its exit).
fn waits_of(
    g: &Graph,
    l: u32,
    sel: &Selection,
    last_in: &[(u64, u32, u64, u64)],
    edges: &mut Vec<Arrival>,
) -> Vec<Wait> {
    let lanes = &g.lanes;
    // The wait's own factor: that of the waiting region it ends in, where asked.
    let own = |b: u64| {
        lanes
            .piece_at(l, b.saturating_sub(1))
            .filter(|p| lanes.waiting.get(p.region as usize).copied().unwrap_or(false))
            .map_or(1.0, |p| sel.region.get(p.region as usize).copied().unwrap_or(1.0))
    };
    // Waits by their start: the stretches, and the idle time before an edge's arrival.
    let mut by: BTreeMap<u64, (u64, Arrivals)> =
        lanes.stretches[l as usize].iter().map(|&(a, b)| (a, (b, Vec::new()))).collect();
    let pieces = &lanes.pieces[l as usize];
    for e in g.into(l).iter().filter(|e| e.sent <= e.arrived) {
        // An edge sent before the stretch it arrived in began (work handed to an idle thread,
        // which then waits in what it was handed) ended the idle time before the stretch.
        let arrived = match lanes.stretch_at(l, e.arrived) {
            Some((a, _)) if e.sent >= a => {
                let entry = (e.kind == EdgeKind::Collective)
                    .then(|| lanes.piece_at(l, e.arrived.saturating_sub(1)).map_or(a, |p| p.start.max(a)));
                if let Some(w) = by.get_mut(&a) {
                    w.1.push((e.src, e.sent, e.arrived, entry));
                }
                continue;
            }
            Some((a, _)) => a,
            None => e.arrived,
        };
        let k = pieces.partition_point(|x| x.start < arrived);
        let a = match k.checked_sub(1).map(|k| pieces[k]) {
            Some(p) if p.end > arrived => continue, // at work: the edge did not bind
            Some(p) => p.end,
            None => 0,
        };
        if by.get(&a).is_some_and(|w| w.0 > arrived) {
            continue; // a stretch of its own begins there
        }
        let w = by.entry(a).or_insert((arrived, Vec::new()));
        w.0 = w.0.max(arrived);
        w.1.push((e.src, e.sent.min(arrived), arrived, None));
    }
    let mut mine = Vec::with_capacity(by.len());
    for (a, (b, es)) in by {
        let from = edges.len();
        let f = own(b);
        let mut last_arrival = es.iter().map(|e| e.2).max();
        for (src, sent, arrived, entry) in es {
            // A collective's own time (the last entry to the exit) is the waiting region's,
            // from the later of the last entrant's entry and the waiter's own.
            let latency = (arrived - sent) as f64 * if entry.is_some() { f } else { 1.0 };
            edges.push(Arrival { src, sent, latency, also: entry.map(|x| (l, x)) });
        }
        for &(sent, other, entry, exit) in last_in.iter().filter(|x| a <= x.0 && x.3 <= b) {
            let latency = (exit - sent) as f64 * f;
            edges.push(Arrival { src: other, sent: entry, latency, also: Some((l, sent)) });
            last_arrival = Some(last_arrival.map_or(exit, |x| x.max(exit)));
        }
        let last_arrival = last_arrival.unwrap_or(b);
        let (k, shift) = ((0, 0), (0.0, 0.0));
        mine.push(Wait { a, b, last_arrival, edges: (from, edges.len()), factor: f, k, shift });
    }
    mine
}

/// Per step number: its first start and last end as run, and as replayed.
type StepSpans = BTreeMap<u64, (u64, u64, f64, f64)>;

/// What the replay of one window (a run held at once, or one chunk of a store read chunk by
/// chunk) gives to a what-if's projection.
pub struct WindowReplay {
    pub selected: Vec<String>,
    pub measured: bool,
    /// The work it took away within the window, ticks.
    pub removed: f64,
    /// The replayed times of the points asked for, in order.
    pub points: Vec<f64>,
    /// The replayed times of the ends of work of the window's busy rows (`ends` asked).
    pub end: Option<f64>,
    steps: StepSpans,
    /// Where the window after it begins its replay.
    pub carry: Carry,
}

/// The replay of `ask` on `t` through `g` over `window` (ticks), from `carry` (none: from the
/// run's start): the replayed times of `points` (location, tick) and, with `ends`, of the last
/// end of work among the window's busy rows.
pub fn replay_window(
    (t, g, training): (&Trace, &Graph, Option<&Training>),
    window: (u64, u64),
    ask: &Ask,
    carry: Option<Carry>,
    (points, ends): (&[(u32, u64)], bool),
) -> WindowReplay {
    let sel = select(t, g, window, training, ask);
    let (mut r, removed) = replay(g, &sel, carry, window);
    // Every wait in the order it ended, so that what each needs is replayed before it.
    let mut order: Vec<(u64, u32, u32)> = Vec::new();
    for (l, w) in r.first.windows(2).enumerate() {
        order.extend((w[0]..w[1]).map(|x| (r.ends[x], l as u32, (x - w[0]) as u32)));
    }
    order.sort_unstable();
    for (_, l, j) in order {
        r.end_of(l, j as usize, 0);
    }
    let end = ends.then(|| {
        // The run ends where the walk began: the last end of work among the busy rows.
        let n = t.locations.name.len() as u32;
        let ends: Vec<(u32, u64)> =
            (0..n).filter_map(|l| g.lanes.last_end(l, window.1).filter(|&e| e > window.0).map(|e| (l, e))).collect();
        let busy: Vec<(u32, u64)> =
            ends.iter().copied().filter(|&(l, _)| g.lanes.busy_share(l, window) >= 0.05).collect();
        let ends = if busy.is_empty() { ends } else { busy };
        ends.iter().map(|&(l, e)| r.at(l, e, 0)).fold(f64::MIN, f64::max)
    });
    let points = points.iter().map(|&(l, at)| r.at(l, at, 0)).collect();
    let steps = step_spans(t, &mut r, window);
    // The window after this one begins where this one ends; a send whose edge arrives there
    // is taken as replayed here.
    let n = r.first.len() - 1;
    let origin = (0..n as u32).map(|l| (window.1, r.at(l, window.1, 0))).collect();
    let mut sends = HashMap::new();
    for e in g.edges.iter().filter(|e| e.sent <= e.arrived && e.sent < window.1 && e.arrived >= window.1) {
        if (e.src as usize) < n {
            let at = r.at(e.src, e.sent, 0);
            sends.insert((e.src, e.sent), at);
        }
    }
    WindowReplay {
        selected: sel.selected,
        measured: sel.measured,
        removed,
        points,
        end,
        steps,
        carry: Carry { origin, sends },
    }
}

/// The projection of `ask` from the replays of the windows of a run (in time order, or one),
/// with `length` (ticks) the critical path's as run: from its replayed start (the point asked
/// of the window holding it) to the replayed end of work (of the last window); `Err` says in
/// one line what selects nothing.
pub fn projection(
    t: &Trace,
    processes: &[String],
    ask: &Ask,
    replays: &[WindowReplay],
    length: u64,
) -> Result<WhatIf, String> {
    let mut selected: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for s in replays.iter().flat_map(|r| &r.selected) {
        if seen.insert(s.as_str()) {
            selected.push(s.clone());
        }
    }
    let measured = replays.iter().any(|r| r.measured);
    if let Some(e) = refusal(ask, &selected, measured, processes) {
        return Err(e);
    }
    let tps = t.ticks_per_second.max(1) as f64;
    let start = replays.iter().find_map(|r| r.points.first().copied());
    let end = replays.last().and_then(|r| r.end);
    let (length, projected) = match (start, end) {
        (Some(a), Some(b)) => (length, (b - a).max(0.0)),
        _ => (0, 0.0),
    };
    let mut steps = StepSpans::new();
    for r in replays {
        for (&n, &(a, b, na, nb)) in &r.steps {
            let e = steps.entry(n).or_insert((a, b, na, nb));
            *e = (e.0.min(a), e.1.max(b), e.2.min(na), e.3.max(nb));
        }
    }
    Ok(WhatIf {
        who: ask.spec.clone(),
        selected,
        removed_s: replays.iter().map(|r| r.removed).sum::<f64>() / tps,
        length_s: length as f64 / tps,
        projected_s: projected / tps,
        saved_s: (length as f64 - projected) / tps,
        steps: project_steps(steps, tps),
    })
}

/// The projection of `ask` on `t` through `g` over `window` (ticks), with `path` its critical
/// path there; `Err` says in one line what selects nothing.
pub fn what_if(
    t: &Trace,
    g: &Graph,
    training: Option<&Training>,
    window: (u64, u64),
    path: &Path,
    ask: &Ask,
) -> Result<WhatIf, String> {
    let first = path.segments.first().map(|s| (s.location, s.from));
    let r = replay_window((t, g, training), window, ask, None, (first.as_slice(), first.is_some()));
    projection(t, &g.lanes.processes, ask, std::slice::from_ref(&r), path.length())
}

/// The projection of process `p` (of `g.lanes.processes`) working as its peers' median in
/// each step, over `window` with `path` its critical path there; `None` where it has no peers
/// to take the median of, or is named by no process alone.
pub fn process_at_peers(
    t: &Trace,
    g: &Graph,
    training: Option<&Training>,
    window: (u64, u64),
    path: &Path,
    p: u32,
) -> Option<WhatIf> {
    let name = g.lanes.processes.get(p as usize)?;
    let ask = Ask { spec: name.clone(), who: Who::Processes { text: name.to_lowercase(), range: None } };
    what_if(t, g, training, window, path, &ask).ok().filter(|w| w.selected.len() == 1)
}

/// Each step's first start and last end over every location that ran it within `window`, as
/// run and as replayed.
fn step_spans(t: &Trace, r: &mut Replay, window: (u64, u64)) -> StepSpans {
    let i = &t.intervals;
    let step_of: HashMap<u32, u64> = t
        .region_names
        .iter()
        .enumerate()
        .filter_map(|(k, n)| super::stragglers::step_number(n).map(|x| (k as u32, x)))
        .collect();
    let mut by = StepSpans::new();
    if step_of.is_empty() {
        return by;
    }
    for k in 0..i.start.len() {
        let Some(&n) = step_of.get(&i.kind[k]) else { continue };
        let (a, b) = (i.start[k].max(window.0), i.end[k].min(window.1));
        if b <= a || i.location[k] as usize + 1 >= r.first.len() {
            continue;
        }
        let (na, nb) = (r.at(i.location[k], a, 0), r.at(i.location[k], b, 0));
        let e = by.entry(n).or_insert((a, b, na, nb));
        *e = (e.0.min(a), e.1.max(b), e.2.min(na), e.3.max(nb));
    }
    by
}

/// Each step's length as run and as replayed, from the previous step's last end (its own first
/// start for the first).
fn project_steps(by: StepSpans, tps: f64) -> Vec<StepWhatIf> {
    let mut out = Vec::with_capacity(by.len());
    let mut before: Option<(u64, f64)> = None;
    for (n, (a, b, na, nb)) in by {
        let (from, from_new) = before.unwrap_or((a, na));
        let length = (b - from) as f64;
        let projected = (nb - from_new).max(0.0);
        out.push(StepWhatIf {
            step: format!("ProfilerStep#{n}"),
            length_s: length / tps,
            projected_s: projected / tps,
            saved_s: (length - projected) / tps,
        });
        before = Some((b, nb));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_ifs_read_as_asked() {
        let w = |s: &str| parse(s).unwrap().who;
        assert_eq!(w("rank 5"), Who::Processes { text: "rank 5".into(), range: None });
        assert_eq!(w("Ranks 4-7"), Who::Processes { text: "rank ".into(), range: Some((4, 7)) });
        assert_eq!(w("region:extra_work"), Who::Region { pattern: "extra_work".into(), factor: 0.0 });
        assert_eq!(w("region:nccl*0.5"), Who::Region { pattern: "nccl".into(), factor: 0.5 });
        assert_eq!(
            w("region:ncclKernel_AllReduce*"),
            Who::Region { pattern: "ncclKernel_AllReduce*".into(), factor: 0.0 }
        );
        assert!(parse("").is_err());
        assert!(parse("region:").is_err());
        assert!(parse("rank 7-4").is_err());
    }

    #[test]
    fn a_rank_is_named_by_its_whole_number() {
        assert!(names("rank 5 python", "rank 5", None));
        assert!(!names("rank 50 python", "rank 5", None));
        assert!(names("mpi rank 10007", "rank 10007", None));
        assert!(names("rank 6 python", "rank ", Some((4, 7))));
        assert!(!names("rank 8 python", "rank ", Some((4, 7))));
        assert!(!names("rank 16 python", "rank ", Some((1, 7))));
        assert!(glob("ncclKernel_*", "ncclKernel_AllReduce_RING"));
        assert!(glob("extra?work", "extra_work"));
        assert!(!glob("extra", "extra_work"));
    }
}
