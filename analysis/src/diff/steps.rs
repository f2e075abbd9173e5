//! The steps of a run, so that two runs compare step on step and a change can be told from
//! step-to-step variation: Kineto's `ProfilerStep#N` regions where the trace has them, else the
//! step annotations the reader found (JAX's `StepTraceAnnotation`, [`Trace::step_regions`]),
//! each shared by every row of its process (threads and GPU streams); else the iterations of an
//! MPI program found by repetition (the region every location enters equally often, at least
//! three times, spread over the run); else none.

use std::collections::{BTreeSet, HashMap};

use exaviz_model::Trace;

use crate::critical_path::graph::process_name;

/// Where the steps come from and, per location, each step's start with its ordinal.
#[derive(Clone, Debug, Default)]
pub struct Steps {
    /// "ProfilerStep#N", "step annotations (REGIONS)", "iterations of REGION" or "none".
    pub source: String,
    /// Steps in the run (0 for none).
    pub count: usize,
    /// Per location, (start, ordinal) by start.
    starts: Vec<Vec<(u64, u32)>>,
    /// Per ordinal, the earliest start across locations.
    pub first_start: Vec<u64>,
    /// Where the last step ends, where steps after it were left out.
    end: Option<u64>,
}

impl Steps {
    /// The ordinal of the step location `loc` is in at tick `at`: the last that began at or
    /// before it there (`None` before the first, or without steps).
    pub fn step_of(&self, loc: u32, at: u64) -> Option<u32> {
        let s = self.starts.get(loc as usize)?;
        let k = s.partition_point(|&(start, _)| start <= at);
        (k > 0).then(|| s[k - 1].1).filter(|&o| o != u32::MAX)
    }

    /// Location `loc`'s span of step `k` (ticks): from its start there to the next step's
    /// start there (the last step to where the steps end, else `end`); where the steps are
    /// the whole run's, or the location has none of its own (a rank that never enters the
    /// region the iterations were found by), the run's span of the step. `None` where there is
    /// no step `k`.
    pub fn span_of(&self, loc: u32, k: u32, end: u64) -> Option<(u64, u64)> {
        if self.starts.get(loc as usize).is_none_or(Vec::is_empty) {
            let a = *self.first_start.get(k as usize)?;
            let b = self.first_start.get(k as usize + 1).copied().or(self.end).unwrap_or(end);
            return (a < b).then_some((a, b));
        }
        let s = self.starts.get(loc as usize)?;
        let i = s.iter().position(|x| x.1 == k)?;
        let b = s.get(i + 1).map(|x| x.0).or(self.end).unwrap_or(end);
        (s[i].0 < b).then_some((s[i].0, b))
    }

    /// Steps that are spans of the whole run beginning at `starts` (no location's own).
    pub fn slices(source: String, starts: Vec<u64>) -> Self {
        Self { source, count: starts.len(), starts: Vec::new(), first_start: starts, end: None }
    }

    /// Keeps steps `a..=b` only, renumbered from 0: time before and after them is in no step.
    pub fn keep(&mut self, a: u32, b: u32) {
        for s in &mut self.starts {
            // The next step's start ends the last kept one.
            let next = s.iter().find(|x| x.1 == b.saturating_add(1)).map(|x| (x.0, u32::MAX));
            s.retain(|x| (a..=b).contains(&x.1));
            for x in s.iter_mut() {
                x.1 -= a;
            }
            s.extend(next);
        }
        let (a, b) = (a as usize, (b as usize + 1).min(self.first_start.len()));
        // The last kept step ends where the next begins.
        let next = self.first_start.get(b).copied();
        self.first_start = self.first_start.get(a..b).map(<[u64]>::to_vec).unwrap_or_default();
        self.count = self.first_start.len();
        self.end = next;
    }

    /// Each step's length: from its earliest start to the next one's (the last to `end`).
    pub fn lengths(&self, end: u64) -> Vec<u64> {
        (0..self.first_start.len())
            .map(|k| {
                let next = self.first_start.get(k + 1).copied().or(self.end).unwrap_or(end);
                next.saturating_sub(self.first_start[k])
            })
            .collect()
    }
}

/// The steps of `t` within `window` (ticks).
pub fn find(t: &Trace, window: (u64, u64)) -> Steps {
    profiler_steps(t, window).or_else(|| annotated(t, window)).or_else(|| iterations(t, window)).unwrap_or_else(|| {
        Steps { source: "none".into(), starts: vec![Vec::new(); t.locations.name.len()], ..Steps::default() }
    })
}

fn finish(source: String, mut starts: Vec<Vec<(u64, u32)>>, count: usize) -> Steps {
    let mut first = vec![u64::MAX; count];
    for s in &mut starts {
        s.sort_unstable();
        for &(at, k) in s.iter() {
            first[k as usize] = first[k as usize].min(at);
        }
    }
    // A step no location began (cannot happen from the finders) would break the lengths.
    let first_start = first.into_iter().filter(|&f| f != u64::MAX).collect::<Vec<_>>();
    Steps { source, count: first_start.len(), starts, first_start, end: None }
}

fn profiler_steps(t: &Trace, window: (u64, u64)) -> Option<Steps> {
    let number: Vec<Option<u64>> =
        t.region_names.iter().map(|n| n.strip_prefix("ProfilerStep#").and_then(|k| k.trim().parse().ok())).collect();
    if number.iter().all(Option::is_none) {
        return None;
    }
    per_process(t, window, "ProfilerStep#N", |k| number.get(t.intervals.kind[k] as usize).copied().flatten())
}

/// The step annotations of [`Trace::step_regions`]: in each process, its annotations in the
/// order they begin are steps 0, 1, ...
fn annotated(t: &Trace, window: (u64, u64)) -> Option<Steps> {
    if t.step_regions.is_empty() {
        return None;
    }
    let i = &t.intervals;
    let marks: Vec<usize> = (0..i.start.len())
        .filter(|&k| t.step_regions.binary_search(&i.kind[k]).is_ok() && (window.0..window.1).contains(&i.start[k]))
        .collect();
    // Numbered in order of start per process (a process's threads may each repeat them).
    let mut by_process: HashMap<&str, Vec<u64>> = HashMap::new();
    for &k in &marks {
        let Some(name) = t.locations.name.get(i.location[k] as usize) else { continue };
        by_process.entry(process_name(name)).or_default().push(i.start[k]);
    }
    for starts in by_process.values_mut() {
        starts.sort_unstable();
        starts.dedup();
    }
    let number: HashMap<usize, u64> = marks
        .iter()
        .filter_map(|&k| {
            let starts = &by_process[process_name(t.locations.name.get(i.location[k] as usize)?)];
            Some((k, starts.partition_point(|&s| s < i.start[k]) as u64))
        })
        .collect();
    let names: Vec<&str> =
        t.step_regions.iter().filter_map(|&r| t.region_names.get(r as usize)).map(String::as_str).collect();
    let source = format!("step annotations ({})", names.join(", "));
    per_process(t, window, &source, |k| number.get(&k).copied())
}

/// Steps numbered by `number` (of an interval; `None`: no step's), shared by every row of the
/// process where they begin: per process, each number's earliest start in the window.
fn per_process(t: &Trace, window: (u64, u64), source: &str, number: impl Fn(usize) -> Option<u64>) -> Option<Steps> {
    let i = &t.intervals;
    // Per process, each step number's earliest start in the window.
    let mut process: HashMap<&str, u32> = HashMap::new();
    let loc_process: Vec<u32> = t
        .locations
        .name
        .iter()
        .map(|n| {
            let next = process.len() as u32;
            *process.entry(process_name(n)).or_insert(next)
        })
        .collect();
    let mut at: HashMap<(u32, u64), u64> = HashMap::new();
    let mut numbers = BTreeSet::new();
    for k in 0..i.start.len() {
        let Some(n) = number(k) else { continue };
        if i.start[k] < window.0 || i.start[k] >= window.1 {
            continue;
        }
        let Some(&p) = loc_process.get(i.location[k] as usize) else { continue };
        numbers.insert(n);
        let e = at.entry((p, n)).or_insert(u64::MAX);
        *e = (*e).min(i.start[k]);
    }
    if numbers.is_empty() {
        return None;
    }
    let ordinal: HashMap<u64, u32> = numbers.iter().enumerate().map(|(k, &n)| (n, k as u32)).collect();
    let starts = loc_process
        .iter()
        .map(|&p| numbers.iter().filter_map(|n| at.get(&(p, *n)).map(|&s| (s, ordinal[n]))).collect())
        .collect();
    Some(finish(source.into(), starts, numbers.len()))
}

/// An iteration marker: the region (by name) entered equally often on every location that
/// enters it, at least 3 and at most 100,000 times, on at least half of the locations, its
/// entries spread over at least half of the window; of those, the fewest entries (the outermost
/// loop), then the first entered.
fn iterations(t: &Trace, window: (u64, u64)) -> Option<Steps> {
    let i = &t.intervals;
    let n = t.locations.name.len();
    if n == 0 {
        return None;
    }
    // Regions by name (a name may have several ids).
    let mut id_of: HashMap<&str, u32> = HashMap::new();
    let name_id: Vec<u32> = t
        .region_names
        .iter()
        .map(|r| {
            let next = id_of.len() as u32;
            *id_of.entry(r.as_str()).or_insert(next)
        })
        .collect();
    let names = id_of.len();
    // Per (name, location): entries, first and last start.
    let mut count = vec![0u32; names * n];
    let mut first = vec![u64::MAX; names];
    let mut last = vec![0u64; names];
    for k in 0..i.start.len() {
        let (Some(&r), l) = (name_id.get(i.kind[k] as usize), i.location[k] as usize) else { continue };
        if l >= n || i.start[k] < window.0 || i.start[k] >= window.1 {
            continue;
        }
        count[r as usize * n + l] += 1;
        first[r as usize] = first[r as usize].min(i.start[k]);
        last[r as usize] = last[r as usize].max(i.start[k]);
    }
    let span = window.1.saturating_sub(window.0).min(t.span().map_or(u64::MAX, |s| s.1 - s.0));
    let mut best: Option<(u32, u64, u32)> = None;
    for r in 0..names {
        let row = &count[r * n..(r + 1) * n];
        let mut held = row.iter().filter(|&&c| c > 0);
        let Some(&c) = held.next() else { continue };
        if !(3..=100_000).contains(&c) || held.any(|&x| x != c) {
            continue;
        }
        let locations = row.iter().filter(|&&x| x > 0).count();
        let spread = last[r].saturating_sub(first[r]) as f64;
        if 2 * locations < n || spread < 0.5 * span as f64 * f64::from(c - 1) / f64::from(c) {
            continue;
        }
        let key = (c, first[r], r as u32);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    let (c, _, r) = best?;
    let name = id_of.iter().find(|&(_, &v)| v == r).map(|(k, _)| (*k).to_string())?;
    let mut starts: Vec<Vec<(u64, u32)>> = vec![Vec::new(); n];
    for k in 0..i.start.len() {
        if name_id.get(i.kind[k] as usize) != Some(&r) || i.start[k] < window.0 || i.start[k] >= window.1 {
            continue;
        }
        if let Some(s) = starts.get_mut(i.location[k] as usize) {
            s.push((i.start[k], 0));
        }
    }
    for s in &mut starts {
        s.sort_unstable();
        for (k, x) in s.iter_mut().enumerate() {
            x.1 = k as u32;
        }
    }
    Some(finish(format!("iterations of {name}"), starts, c as usize))
}
