//! Root causes of waiting, after Scalasca's delay analysis (Böhme et al., 2010): each wait
//! state is charged to the delay that caused it.
//!
//! A wait state is a waiting stretch of a location that ended by a binding edge: from the
//! stretch's start to the send it waited for (the latest, where several arrived in it): a late
//! sender, a wait at an N-to-N collective for its last entry, a synchronisation waiting for a
//! kernel, a GPU stream idle until its host launched. Its cause is the edge's source. Since
//! each last waited, the waiter worked from `p_w` to the wait's start and the cause from `p_c`
//! to its send:
//! - the cause's excess work, (send − p_c) − (start − p_w), up to the wait's time, is a
//!   **direct** cost, charged to the cause's regions in that interval by how much longer the
//!   cause spent in each than the waiter did;
//! - the rest, the cause having started late because it waited itself (its previous wait ended
//!   at `p_c`), is a **propagated** cost, charged to the root causes of that earlier wait in
//!   their proportions.
//!
//! Waits are handled in the order of their sends, so that an earlier wait's causes are known
//! when a later one inherits them; each keeps its [`KEEP`] largest causes.

use rustc_hash::FxHashMap;

use exaviz_model::Trace;
use serde::Serialize;

use super::graph::{EdgeKind, Graph};

/// Causes kept per wait state.
const KEEP: usize = 8;

/// One wait state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct WaitState {
    pub location: u32,
    /// The waiting began; it lasted to `until`, the send it waited for.
    pub from: u64,
    pub until: u64,
    pub cause: u32,
    pub kind: EdgeKind,
}

/// The wait states of `g` in `window`: per waiting stretch, the binding edge sent last.
pub fn wait_states(g: &Graph, window: (u64, u64)) -> Vec<WaitState> {
    let mut out = Vec::new();
    for l in 0..g.offsets.len().saturating_sub(1) as u32 {
        let mut last: Option<(u64, WaitState)> = None;
        for e in g.into(l) {
            if e.arrived < window.0 || e.sent >= window.1 {
                continue;
            }
            let Some((a, b)) = g.lanes.stretch_at(l, e.arrived) else { continue };
            if e.sent <= a {
                continue;
            }
            let w = WaitState { location: l, from: a, until: e.sent, cause: e.src, kind: e.kind };
            match &mut last {
                Some((end, prev)) if *end == b => {
                    if w.until > prev.until {
                        *prev = w;
                    }
                }
                _ => {
                    out.extend(last.take().map(|x| x.1));
                    last = Some((b, w));
                }
            }
        }
        out.extend(last.map(|x| x.1));
    }
    out.sort_unstable_by_key(|w| (w.until, w.location, w.from));
    out
}

/// Costs charged to one region on one location, seconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CauseRow {
    pub location: String,
    pub region: String,
    /// Wait time it caused directly.
    pub direct_s: f64,
    /// Wait time it caused through others' waiting.
    pub propagated_s: f64,
    /// Wait states it caused, directly or not.
    pub waits: u64,
}

/// The root causes of the waiting of `t` through `g` in `window` (ticks) on the locations `rows`
/// (an area, as `exaviz summary` and the timeline's panel list them).
pub fn root_causes_in(t: &Trace, g: &Graph, window: (u64, u64), rows: std::ops::RangeInclusive<u32>) -> Vec<CauseRow> {
    let mut waits = wait_states(g, window);
    waits.retain(|w| rows.contains(&w.location));
    root_causes(t, g, &waits)
}

/// What a cost is charged to on its location: a region, or untraced time between the regions
/// around it (either may be none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Charged {
    Region(u32),
    Gap(Option<u32>, Option<u32>),
}

/// The name of untraced time between regions `before` and `after` (named as the trace names
/// them): "(no region)", with its neighbours where it has them.
fn gap_name(before: Option<&str>, after: Option<&str>) -> String {
    match (before, after) {
        (None, None) => "(no region)".into(),
        (Some(a), None) => format!("(no region, after {a})"),
        (None, Some(b)) => format!("(no region, before {b})"),
        (Some(a), Some(b)) => format!("(no region, after {a}, before {b})"),
    }
}

/// A wait's own share of the analysis, independent of every other wait: the cause's excess
/// work charged to its regions (shares adding to 1, in region order), its direct cost, and
/// where the cause's work began.
struct Own {
    direct: f64,
    excess: Vec<(Charged, f64)>,
    /// The location the excess is charged to: the cause, or the thread that handed it its
    /// work (see [`handed_over`]).
    charged: u32,
    busy_from: u64,
    /// The waiting stretch this wait ends: its location and end.
    ends: Option<(u32, u64)>,
}

/// How many hand-overs [`handed_over`] follows back.
const HANDOVERS: usize = 4;

/// Where the work of `loc` up to `to` (since `from`, its last wait's end) really was: a helper
/// thread idle until another thread of its process handed it work (gloo's or NCCL's runloop
/// for c10d's call, PyTorch's autograd thread for `backward()`) did nothing of its own, so
/// the time is the other thread's, up to its hand-over. Followed while the time is untraced
/// and an edge into it arrived in it; `(location, from, to)` as found, with the time there by
/// region ([`regions_of`]).
fn handed_over(g: &Graph, mut loc: u32, mut from: u64, mut to: u64) -> (u32, u64, u64, Regions) {
    let lanes = &g.lanes;
    for _ in 0..HANDOVERS {
        let regions = regions_of(lanes, loc, from, to);
        if !regions.is_empty() {
            return (loc, from, to, regions);
        }
        let into = g.into(loc);
        let upto = into.partition_point(|e| e.arrived <= to);
        let Some(e) = into[..upto].iter().rev().find(|e| e.arrived >= from && e.src != loc && e.sent <= e.arrived)
        else {
            return (loc, from, to, regions);
        };
        (loc, to) = (e.src, e.sent);
        from = lanes.busy_since(loc, to);
    }
    (loc, from, to, regions_of(lanes, loc, from, to))
}

/// Time per region, a few regions: a list, not a map.
type Regions = Vec<(Option<u32>, u64)>;

/// The time of `l` in `[a, b)` per innermost region that is not waiting, untraced time left
/// out.
fn regions_of(lanes: &super::graph::Lanes, l: u32, a: u64, b: u64) -> Regions {
    let mut m: Regions = Vec::new();
    lanes.each_region(l, (a, b), |r, dt| {
        // Untraced time (a gap on a host thread) is no region's: charged only where the
        // cause has nothing else.
        if r.is_some_and(|r| !lanes.waiting.get(r as usize).copied().unwrap_or(false)) {
            match m.iter_mut().find(|x| x.0 == r) {
                Some(x) => x.1 += dt,
                None => m.push((r, dt)),
            }
        }
    });
    m
}

fn own_part(g: &Graph, w: &WaitState) -> Own {
    let lanes = &g.lanes;
    let waited = w.until.saturating_sub(w.from) as f64;
    // The cause's work up to the send: back to its last waiting stretch (which, where the
    // send came from within one, is that stretch's start).
    let anchor = lanes.stretch_at(w.cause, w.until).map_or(w.until, |(a, _)| a.min(w.until));
    let p_c = lanes.busy_since(w.cause, anchor);
    let p_w = lanes.busy_since(w.location, w.from);
    let work_c = anchor.saturating_sub(p_c) as f64;
    let work_w = w.from.saturating_sub(p_w) as f64;
    let direct = (work_c - work_w).clamp(0.0, waited);
    // A helper thread's idle time is the time of the thread that handed it its work: the
    // cause's excess is charged there, compared with what the waiter's own hand-over did.
    let (charged, p_c, anchor, mine) = handed_over(g, w.cause, p_c, anchor);
    let (_, _, _, theirs) = handed_over(g, w.location, p_w, w.from);
    let of = |r: Option<u32>| theirs.iter().find(|x| x.0 == r).map_or(0, |x| x.1) as f64;
    // `regions_of` keeps traced regions only: every `r` below is `Some`.
    let region = |r: Option<u32>| r.map_or(Charged::Gap(None, None), Charged::Region);
    let mut excess: Vec<(Charged, f64)> =
        mine.iter().map(|&(r, dt)| (region(r), (dt as f64 - of(r)).max(0.0))).filter(|x| x.1 > 0.0).collect();
    if excess.is_empty() {
        excess = mine.iter().map(|&(r, dt)| (region(r), dt as f64)).filter(|x| x.1 > 0.0).collect();
    }
    if excess.is_empty() {
        // The cause's work was untraced: named by the regions around it.
        let (before, after) = lanes.regions_around(charged, p_c, anchor);
        excess.push((Charged::Gap(before, after), 1.0));
    }
    // In one order whatever the pieces', so that the sums are the same bits in every run.
    excess.sort_unstable_by_key(|a| a.0);
    let sum: f64 = excess.iter().map(|x| x.1).sum();
    for x in &mut excess {
        x.1 /= sum;
    }
    let ends = lanes.stretch_at(w.location, w.until.max(w.from)).map(|(_, end)| (w.location, end));
    Own { direct, excess, charged, busy_from: p_c, ends }
}

/// What a cost is charged to: a location and what on it.
type Key = (u32, Charged);

/// Per wait of `own` (in send order), the earlier wait that ended the waiting stretch its
/// cause's work began after (`u32::MAX`: none).
fn earlier_waits(own: &[Own]) -> Vec<u32> {
    use rayon::prelude::*;
    let mut ending: Vec<((u32, u64), u32)> =
        own.iter().enumerate().filter_map(|(k, o)| o.ends.map(|e| (e, k as u32))).collect();
    ending.par_sort_unstable();
    own.par_iter()
        .enumerate()
        .map(|(k, o)| {
            // The last to end it before wait `k`, as a map written in send order would hold.
            let i = ending.partition_point(|x| {
                x.0 < (o.charged, o.busy_from) || (x.0 == (o.charged, o.busy_from) && (x.1 as usize) < k)
            });
            ending[..i].last().filter(|x| x.0 == (o.charged, o.busy_from)).map_or(u32::MAX, |x| x.1)
        })
        .collect()
}

/// The root causes of the wait states `waits` (from [`wait_states`]), largest total first.
/// Each wait's own part (the cause's excess work) is found for all waits at once, in parallel;
/// what each inherited is then passed on in send order.
pub fn root_causes(t: &Trace, g: &Graph, waits: &[WaitState]) -> Vec<CauseRow> {
    use rayon::prelude::*;
    let own: Vec<Own> = waits.par_iter().map(|w| own_part(g, w)).collect();
    let earlier = earlier_waits(&own);
    // Per wait, its causes as shares adding to 1: `dist[at[k]..at[k + 1]]`.
    let mut dist: Vec<(Key, f64)> = Vec::with_capacity(waits.len() * 2);
    let mut at: Vec<usize> = Vec::with_capacity(waits.len() + 1);
    at.push(0);
    let mut totals: FxHashMap<Key, (f64, f64, u64)> = FxHashMap::default();
    let mut d: Vec<(Key, f64)> = Vec::new();
    for (k, (w, o)) in waits.iter().zip(&own).enumerate() {
        let waited = w.until.saturating_sub(w.from) as f64;
        // What the cause inherited: the causes of the wait that ended its last stretch.
        let before: &[(Key, f64)] = match earlier[k] {
            u32::MAX => &[],
            j => &dist[at[j as usize]..at[j as usize + 1]],
        };
        let inherited = if before.is_empty() { 0.0 } else { waited - o.direct };
        let own = waited - inherited;
        d.clear();
        let add = |d: &mut Vec<(Key, f64)>, key: Key, cost: f64| match d.iter_mut().find(|x| x.0 == key) {
            Some(x) => x.1 += cost,
            None => d.push((key, cost)),
        };
        for &(r, x) in &o.excess {
            let cost = own * x;
            add(&mut d, (o.charged, r), cost);
            let e = totals.entry((o.charged, r)).or_default();
            e.0 += cost;
            e.2 += 1;
        }
        for &(key, share) in before {
            let cost = inherited * share;
            add(&mut d, key, cost);
            let e = totals.entry(key).or_default();
            e.1 += cost;
            e.2 += 1;
        }
        d.retain(|x| x.1 > 0.0);
        d.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        d.truncate(KEEP);
        let s: f64 = d.iter().map(|x| x.1).sum();
        dist.extend(d.iter().map(|&(key, x)| (key, x / s.max(f64::MIN_POSITIVE))));
        at.push(dist.len());
    }
    let tps = t.ticks_per_second.max(1) as f64;
    let mut rows: Vec<CauseRow> = totals
        .into_iter()
        .map(|((l, r), (direct, propagated, waits))| CauseRow {
            location: t.locations.name.get(l as usize).cloned().unwrap_or_else(|| format!("location {l}")),
            region: {
                let name = |r: Option<u32>| r.and_then(|r| t.region_names.get(r as usize)).map(String::as_str);
                match r {
                    Charged::Region(r) => name(Some(r)).map_or_else(|| gap_name(None, None), str::to_string),
                    Charged::Gap(a, b) => gap_name(name(a), name(b)),
                }
            },
            direct_s: direct / tps,
            propagated_s: propagated / tps,
            waits,
        })
        .collect();
    sort_causes(&mut rows);
    rows
}

/// Root causes largest total (direct and propagated) first, then by row and region.
pub(crate) fn sort_causes(rows: &mut [CauseRow]) {
    rows.sort_by(|a, b| {
        (b.direct_s + b.propagated_s)
            .total_cmp(&(a.direct_s + a.propagated_s))
            .then_with(|| a.location.cmp(&b.location))
            .then_with(|| a.region.cmp(&b.region))
    });
}
