//! The critical path: the chain of work and waits that made the run (or a window of it) as long
//! as it is, found by a backward walk from its end. On a location the walk goes back in time
//! until the last binding edge that arrived there; it then jumps to that edge's source at its
//! send (the destination was waiting for it), and so on back to the window's start. Every edge
//! is taken once at most, so the walk ends.

use exaviz_model::Trace;
use serde::Serialize;

use super::graph::{EdgeKind, Graph};

/// What a stretch of the path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "value")]
pub enum Step {
    /// Time on a location.
    On,
    /// An edge from one location to another: a message in flight, a launch's latency, ...
    Edge(EdgeKind),
}

/// One stretch of the path, in ticks; for an edge `location` is its destination and `from_location`
/// its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub step: Step,
    pub location: u32,
    pub from_location: u32,
    pub from: u64,
    pub to: u64,
}

/// The path, first segment first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Path {
    pub segments: Vec<Segment>,
    /// The walk's window, ticks.
    pub window: (u64, u64),
}

impl Path {
    /// The ticks the path covers: from its first segment's start to its last one's end.
    pub fn length(&self) -> u64 {
        match (self.segments.first(), self.segments.last()) {
            (Some(a), Some(b)) => b.to.saturating_sub(a.from),
            _ => 0,
        }
    }
}

/// The critical path of `t` through `g` over `window` (ticks): from the location whose work
/// ends last in the window (among those busy at least 5% of their time there) back to the
/// window's start.
pub fn critical_path(t: &Trace, g: &Graph, window: (u64, u64)) -> Path {
    walk(t, g, window, None).0
}

/// Where a walk left its window at the start, to go on in the window before: on `location` at
/// `at`, after `leftover` (an edge still in flight at the window's start, to be continued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    pub location: u32,
    pub at: u64,
    pub leftover: Option<Segment>,
}

/// The walk of [`critical_path`] over `window`, from `resume` where given (the walk of the
/// window after this one left there) instead of from the last work's end; with where it left
/// this window in turn, where the path goes on before it.
pub fn walk(t: &Trace, g: &Graph, window: (u64, u64), resume: Option<Resume>) -> (Path, Option<Resume>) {
    let (from, to) = window;
    let n = t.locations.name.len() as u32;
    let mut out: Vec<Segment> = Vec::new();
    let (mut at, mut loc) = match resume {
        Some(r) => {
            if let Some(edge) = r.leftover {
                out.push(Segment { from: edge.from.max(from), ..edge });
                if edge.from < from {
                    let more = Segment { to: from, ..edge };
                    return (Path { segments: out, window }, Some(Resume { leftover: Some(more), ..r }));
                }
            }
            (r.at.min(to), r.location)
        }
        None => {
            // A thread that mostly sleeps (a watchdog polling now and then) may end last
            // without the run waiting for it: the path ends where work that fills at least 5%
            // of its row's time ends last, or where any work ends last where none does.
            let ends: Vec<(u64, u32)> =
                (0..n).filter_map(|l| g.lanes.last_end(l, to).filter(|&e| e > from).map(|e| (e, l))).collect();
            let busy = |&&(_, l): &&(u64, u32)| g.lanes.busy_share(l, window) >= 0.05;
            let Some(&(e, l)) = ends.iter().filter(busy).max().or_else(|| ends.iter().max()) else {
                return (Path { segments: Vec::new(), window }, None);
            };
            (e, l)
        }
    };
    let mut used = vec![false; g.edges.len()];
    let base = |l: u32| g.offsets[l as usize];
    let on = |loc: u32, a: u64, b: u64| Segment { step: Step::On, location: loc, from_location: loc, from: a, to: b };
    let mut exit = None;
    loop {
        let into = g.into(loc);
        // The latest unused edge into `loc` arriving by `at` and sent within the window.
        let upto = into.partition_point(|e| e.arrived <= at);
        let found = (0..upto).rev().find(|&k| !used[base(loc) + k] && into[k].sent <= into[k].arrived);
        let Some(k) = found.filter(|&k| into[k].arrived > from) else {
            let start = g.lanes.first_start(loc, from).unwrap_or(from).min(at);
            if at > start {
                out.push(on(loc, start, at));
            }
            // Busy at the window's start: the path goes on before it.
            if start <= from {
                exit = Some(Resume { location: loc, at: from, leftover: None });
            }
            break;
        };
        used[base(loc) + k] = true;
        let e = into[k];
        if at > e.arrived {
            out.push(on(loc, e.arrived, at));
        }
        let sent = e.sent.max(from);
        let edge = Segment { step: Step::Edge(e.kind), location: loc, from_location: e.src, from: sent, to: e.arrived };
        out.push(edge);
        loc = e.src;
        at = sent;
        if e.sent < from {
            let more = Segment { from: e.sent, to: from, ..edge };
            exit = Some(Resume { location: e.src, at: e.sent, leftover: Some(more) });
            break;
        }
        if at <= from {
            exit = Some(Resume { location: loc, at: from, leftover: None });
            break;
        }
    }
    out.reverse();
    (Path { segments: out, window }, exit)
}

/// One row of a breakdown of the path: a name, its time on the path and its share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Share {
    pub name: String,
    pub seconds: f64,
    pub share: f64,
}

/// The path's time by region, by location, and by what it was (work on a location kind, or an
/// edge kind), largest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Shares {
    pub by_region: Vec<Share>,
    pub by_location: Vec<Share>,
    pub by_kind: Vec<Share>,
}

/// Breaks `path` down.
pub fn shares(t: &Trace, g: &Graph, path: &Path) -> Shares {
    use std::collections::HashMap;
    let mut region: HashMap<String, u64> = HashMap::new();
    let mut location: HashMap<String, u64> = HashMap::new();
    let mut kind: HashMap<String, u64> = HashMap::new();
    let loc_name = |l: u32| t.locations.name.get(l as usize).cloned().unwrap_or_else(|| format!("location {l}"));
    for s in &path.segments {
        let ticks = s.to.saturating_sub(s.from);
        match s.step {
            Step::On => {
                *location.entry(loc_name(s.location)).or_default() += ticks;
                let what = match g.lanes.kind.get(s.location as usize).copied().unwrap_or_default() {
                    exaviz_model::LocationKind::Unknown => "work".to_string(),
                    k => format!("work on a {}", k.label()),
                };
                *kind.entry(what).or_default() += ticks;
                g.lanes.each_region(s.location, (s.from, s.to), |r, dt| {
                    let name = r.and_then(|r| t.region_names.get(r as usize)).map_or("(no region)", String::as_str);
                    *region.entry(name.to_string()).or_default() += dt;
                });
            }
            Step::Edge(e) => {
                *kind.entry(format!("{} in flight", e.label())).or_default() += ticks;
                *region.entry(format!("({} in flight)", e.label())).or_default() += ticks;
            }
        }
    }
    let total = path.length().max(1) as f64;
    let tps = t.ticks_per_second.max(1) as f64;
    let rows = |m: HashMap<String, u64>| {
        let mut v: Vec<Share> = m
            .into_iter()
            .map(|(name, ticks)| Share { name, seconds: ticks as f64 / tps, share: ticks as f64 / total })
            .collect();
        v.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then_with(|| a.name.cmp(&b.name)));
        v
    };
    Shares { by_region: rows(region), by_location: rows(location), by_kind: rows(kind) }
}
