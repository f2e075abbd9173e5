//! A Chrome trace as exaviz's model for the MPI-style views: a lane per location, slices as
//! nested intervals, flows as messages.

use rustc_hash::FxHashMap as HashMap;

use super::*;

/// Each pid's process name (`process_name` names every thread of its pid).
pub fn process_names(t: &ChromeTrace) -> HashMap<&str, &str> {
    let mut out = HashMap::default();
    for l in t.lanes.iter().filter(|l| !l.process.is_empty()) {
        out.entry(l.pid.as_str()).or_insert(l.process.as_str());
    }
    out
}

/// The trace as the engine's model: one location per lane with slices (named "process /
/// thread", or by pid and tid), the slices as intervals nested by time (their names as
/// regions), flows as messages from one lane to another; times in nanoseconds from the first
/// slice.
pub fn dataset(t: &ChromeTrace, input: &str) -> exaviz_model::dataset::Dataset {
    dataset_at(t, input, t.slices.iter().map(|s| s.start_ns).min().unwrap_or(0))
}

/// The earliest time of a trace's slices, flows and counters: times counted from it are never
/// clamped.
pub fn earliest(t: &ChromeTrace) -> i64 {
    let slices = t.slices.iter().map(|s| s.start_ns);
    let flows = t.flows.iter().flat_map(|f| [f.from.ts_ns, f.to.ts_ns]);
    let instants = t.instants.iter().map(|i| i.mark.ts_ns);
    slices.chain(flows).chain(t.counters.iter().map(|c| c.ts_ns)).chain(instants).min().unwrap_or(0)
}

/// [`dataset`], its times counted from `t0` (earlier times are 0).
pub fn dataset_at(t: &ChromeTrace, input: &str, t0: i64) -> exaviz_model::dataset::Dataset {
    use exaviz_model::Trace;
    use exaviz_model::dataset::Dataset;
    let mut used: Vec<u32> = t.slices.iter().map(|s| s.lane).collect();
    used.sort_unstable();
    used.dedup();
    let loc_of: HashMap<u32, u32> = used.iter().enumerate().map(|(i, &l)| (l, i as u32)).collect();
    let at = |ns: i64| (ns - t0).max(0) as u64;
    let mut trace = Trace { ticks_per_second: 1_000_000_000, ..Default::default() };
    let process_of = process_names(t);
    // A process drawn on one row is named by itself; several rows add their threads' names.
    let mut rows_of: HashMap<&str, u32> = HashMap::default();
    for &l in &used {
        *rows_of.entry(t.lanes[l as usize].pid.as_str()).or_default() += 1;
    }
    for &l in &used {
        let lane = &t.lanes[l as usize];
        let process = match process_of.get(lane.pid.as_str()).copied().unwrap_or("") {
            "" => format!("process {}", lane.pid),
            named => named.to_string(),
        };
        let name = match (lane.thread.is_empty(), rows_of[lane.pid.as_str()]) {
            (false, _) => format!("{process} / {}", lane.thread),
            (true, 1) => process,
            (true, _) => format!("{process} / thread {}", lane.tid),
        };
        trace.locations.name.push(name);
        trace.locations.node.push(u32::MAX);
    }
    let all_instants = instants_on_rows(t, &used, &loc_of);
    let instants: Vec<(u32, &Mark)> = all_instants.iter().filter_map(|&(row, i)| Some((row?, &i.mark))).collect();
    // Regions: the slice names used, in order of first use; slices and instants nested by time
    // per row (an instant after the slices that begin with it, inside them).
    let mut region_of: HashMap<u32, u32> = HashMap::default();
    let n = t.slices.len();
    let mut order: Vec<usize> = (0..n + instants.len()).collect();
    let mut loc_of_lane = vec![u32::MAX; t.lanes.len()];
    for (&lane, &loc) in &loc_of {
        loc_of_lane[lane as usize] = loc;
    }
    // Row, start, duration, name and arguments of the k-th slice, then of the instants.
    let item = |k: usize| match t.slices.get(k) {
        Some(s) => (loc_of_lane[s.lane as usize], s.start_ns, s.dur_ns, s.name, s.args.as_deref()),
        None => {
            let (loc, m) = instants[k - n];
            (loc, m.ts_ns, 0, m.name, None)
        }
    };
    order.sort_unstable_by_key(|&k| {
        let (loc, start, dur, ..) = item(k);
        (loc, start, std::cmp::Reverse(dur), k)
    });
    let mut open: Vec<u64> = Vec::new();
    let mut last_loc = u32::MAX;
    for k in order {
        let (loc, start_ns, dur_ns, name, args) = item(k);
        if loc != last_loc {
            open.clear();
            last_loc = loc;
        }
        let (start, end) = (at(start_ns), at(start_ns.saturating_add(dur_ns)));
        // A slice ends before what begins at its end; an instant there is still inside it.
        while open.last().is_some_and(|&e| e < start || (e == start && dur_ns > 0)) {
            open.pop();
        }
        let next = trace.region_names.len() as u32;
        let kind = *region_of.entry(name).or_insert_with(|| {
            trace.region_names.push(t.names[name as usize].clone());
            next
        });
        // A step annotation (JAX's StepTraceAnnotation) carries its step's number.
        if args.and_then(|a| a.get("step_num")).is_some() && !trace.step_regions.contains(&kind) {
            trace.step_regions.push(kind);
        }
        trace.intervals.location.push(loc);
        trace.intervals.start.push(start);
        trace.intervals.end.push(end);
        trace.intervals.kind.push(kind);
        trace.intervals.depth.push(open.len() as u32);
        if dur_ns > 0 {
            open.push(end);
        }
    }
    trace.step_regions.sort_unstable();
    instants_table(t, &mut trace, &all_instants, &mut region_of, &at);
    for f in &t.flows {
        let (Some(&a), Some(&b)) = (loc_of.get(&f.from.lane), loc_of.get(&f.to.lane)) else { continue };
        let m = &mut trace.messages;
        m.source.push(a);
        m.destination.push(b);
        m.send_time.push(at(f.from.ts_ns));
        m.recv_time.push(at(f.to.ts_ns).max(at(f.from.ts_ns)));
        m.bytes.push(0);
        m.tag.push(0);
    }
    counters_on_rows(t, &mut trace, &used, &loc_of, &at);
    Dataset { name: input.to_string(), trace, ..Default::default() }
}

/// Counters (`C` events, Kineto's memory totals) on their lane's row, or the first row of
/// their process (a `C` event names no thread); a process without rows has nowhere to show
/// them.
fn counters_on_rows(
    t: &ChromeTrace,
    trace: &mut exaviz_model::Trace,
    used: &[u32],
    loc_of: &HashMap<u32, u32>,
    at: &dyn Fn(i64) -> u64,
) {
    let mut row_of_pid: HashMap<&str, u32> = HashMap::default();
    for &l in used {
        row_of_pid.entry(t.lanes[l as usize].pid.as_str()).or_insert(loc_of[&l]);
    }
    let mut metric_of: HashMap<u32, u32> = HashMap::default();
    for c in &t.counters {
        let on_process = || row_of_pid.get(t.lanes[c.lane as usize].pid.as_str());
        let Some(&loc) = loc_of.get(&c.lane).or_else(on_process) else { continue };
        let next = trace.metric_names.len() as u32;
        let metric = *metric_of.entry(c.name).or_insert_with(|| {
            trace.metric_names.push(t.names[c.name as usize].clone());
            trace.metric_units.push(t.counter_units.get(&c.name).cloned().unwrap_or_default());
            trace.metric_accumulated.push(false);
            next
        });
        let m = &mut trace.metrics;
        m.location.push(loc);
        m.time.push(at(c.ts_ns));
        m.metric.push(metric);
        m.value.push(c.value);
    }
}

/// Instants (Kineto's, NVTX marks), other than Kineto's memory samples (counters), with the
/// row they are drawn on: their lane's, or their process's first (a process-scoped one, or one
/// of a thread without slices); a global one, or one whose process has no row, on none.
fn instants_on_rows<'t>(
    t: &'t ChromeTrace,
    used: &[u32],
    loc_of: &HashMap<u32, u32>,
) -> Vec<(Option<u32>, &'t Instant)> {
    let mut first_of_pid: HashMap<&str, u32> = HashMap::default();
    for &l in used {
        first_of_pid.entry(t.lanes[l as usize].pid.as_str()).or_insert(loc_of[&l]);
    }
    t.instants
        .iter()
        .filter(|i| t.names[i.mark.name as usize] != "[memory]")
        .map(|i| {
            let m = &i.mark;
            let on_process = || first_of_pid.get(t.lanes[m.lane as usize].pid.as_str()).copied();
            let own = (i.scope != b'p').then(|| loc_of.get(&m.lane).copied()).flatten();
            let row = if i.scope == b'g' { None } else { own.or_else(on_process) };
            (row, i)
        })
        .collect()
}

/// Every instant into the model's table: its row (or none), time, name (a region, added where
/// no slice has it), scope, category and argument count.
fn instants_table(
    t: &ChromeTrace,
    trace: &mut exaviz_model::Trace,
    all: &[(Option<u32>, &Instant)],
    region_of: &mut HashMap<u32, u32>,
    at: &dyn Fn(i64) -> u64,
) {
    use exaviz_model::{InstantScope, NO_ROW};
    let mut category_of: HashMap<u32, u32> = HashMap::default();
    for &(row, i) in all {
        let next = trace.region_names.len() as u32;
        let name = *region_of.entry(i.mark.name).or_insert_with(|| {
            trace.region_names.push(t.names[i.mark.name as usize].clone());
            next
        });
        let next = trace.instant_categories.len() as u32;
        let category = *category_of.entry(i.cat).or_insert_with(|| {
            trace.instant_categories.push(t.names[i.cat as usize].clone());
            next
        });
        let scope = match i.scope {
            b'g' => InstantScope::Global,
            b'p' => InstantScope::Process,
            _ => InstantScope::Thread,
        };
        trace.instants.push(row.unwrap_or(NO_ROW), at(i.mark.ts_ns), name, scope, category, i.args);
    }
    trace.instants.sort_by_time();
}
