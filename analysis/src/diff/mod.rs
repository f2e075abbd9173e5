//! What changed between two runs: their locations matched by name (by position where the names
//! differ), regions by name, collectives by operation, messages by pair of locations and steps
//! by ordinal; per region, collective, pair and location the counts, times and bytes of each
//! run, the change, and whether it stands out from the step-to-step variation of the runs (a 95%
//! confidence interval of the change of the mean step, Welch's); where each change lies (which
//! locations, which steps); the largest changes first. Runs of different sizes compare per
//! location: B's totals are scaled by A's locations over B's.

pub mod cube;
pub mod steps;
pub mod tally;

use std::collections::{HashMap, HashSet};

use exaviz_model::Trace;
use serde::Serialize;
use tally::{Run, Tally};

/// Student's t of a two-sided 95% interval for 1 to 30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Student's t of a two-sided 95% interval for `df` degrees of freedom (beyond 30, within 0.2%).
fn t95(df: f64) -> f64 {
    if df < 1.0 {
        T95[0]
    } else if df <= 30.0 {
        T95[df.floor() as usize - 1]
    } else {
        1.96 + 2.5 / df
    }
}
/// Locations and steps listed where a change lies.
const WHERE: usize = 3;

/// One side's numbers of a row (seconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Side {
    pub count: u64,
    pub total_s: f64,
    pub mean_s: f64,
    pub bytes: u64,
}

/// The change of the mean step: B's per-step mean less A's, with a 95% interval from the
/// variation of each run's steps (`None` where either run has fewer than two steps).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepChange {
    pub a_mean_s: f64,
    pub b_mean_s: f64,
    pub change_s: f64,
    pub low_s: f64,
    pub high_s: f64,
}

/// A location or a step where a change lies, and its part of it (seconds).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Part {
    pub name: String,
    pub change_s: f64,
}

/// A row of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// "run", "location", "waiting", "region", "path", "collective" or "pair".
    pub table: &'static str,
    pub name: String,
    pub a: Side,
    pub b: Side,
    /// B's total (scaled to A's locations) less A's, seconds; bytes for a pair.
    pub change_s: f64,
    /// The change over A's total (infinite for something new in B).
    pub relative: f64,
    pub step: Option<StepChange>,
    /// Whether the change lies outside the step-to-step variation (its interval excludes 0 and
    /// it is over 1% of the larger mean); `None` without steps in both runs.
    pub stands_out: Option<bool>,
    /// The locations and steps holding most of it, largest first.
    pub locations: Vec<Part>,
    /// How many locations changed the same way as the whole.
    pub spread: usize,
    pub steps: Vec<Part>,
}

/// What to compare.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Rows in [`Diff::top`] (every table is whole).
    pub top: usize,
    /// Only steps `first..=last` of each run (ordinals from 0, as [`steps`] finds them).
    pub steps: Option<(u32, u32)>,
}

impl Default for Options {
    fn default() -> Self {
        Self { top: 12, steps: None }
    }
}

/// How the two runs were matched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Matching {
    /// "rows", or "pyramids" for two stores compared from their pyramids without their rows
    /// (locations are then rank blocks, steps are time slices, counts are not known: 0).
    pub from: String,
    /// "name", "name, then content within each process", or "position".
    pub locations_by: String,
    pub matched: usize,
    pub a_locations: usize,
    pub b_locations: usize,
    /// A's active locations over B's, by which B's totals are multiplied.
    pub scale: f64,
    pub a_steps: usize,
    pub b_steps: usize,
    pub a_steps_from: String,
    pub b_steps_from: String,
}

/// Everything `exaviz diff` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diff {
    pub matching: Matching,
    /// The run's length and its mean step.
    pub run: Change,
    /// The largest changes of all tables (locations' work, regions, collectives, pairs' time),
    /// those that stand out from the variation (or cannot be told) first by size.
    pub top: Vec<Change>,
    /// Per matched location: its work (time outside waiting regions), largest change first.
    pub locations: Vec<Change>,
    /// Per matched location: its waiting, largest change first.
    pub waiting: Vec<Change>,
    pub regions: Vec<Change>,
    /// Per call path, where the runs' rows nest (regions within regions: a flame graph's
    /// frames), by inclusive time; empty where neither run nests.
    pub paths: Vec<Change>,
    pub collectives: Vec<Change>,
    /// Messages per pair of locations (by A's names): the change is in bytes.
    pub pairs: Vec<Change>,
}

/// B's location for each of A's, and how they were matched: by name; then, for the rest, within
/// each process (the name before ` / `) and kind, by what they hold (threads whose ids or names
/// differ from run to run: the pair with the most regions in common first); then, where fewer
/// than half were matched so, by position.
pub fn match_locations(a: &Trace, b: &Trace) -> (Vec<Option<u32>>, &'static str) {
    let by_name: HashMap<&str, u32> =
        b.locations.name.iter().enumerate().map(|(k, n)| (n.as_str(), k as u32)).collect();
    let mut to_b: Vec<Option<u32>> = a.locations.name.iter().map(|n| by_name.get(n.as_str()).copied()).collect();
    let named = to_b.iter().flatten().count();
    let (na, nb) = (a.locations.name.len(), b.locations.name.len());
    if named == na.min(nb) {
        return (to_b, "name");
    }
    let mut taken = vec![false; nb];
    for &k in to_b.iter().flatten() {
        taken[k as usize] = true;
    }
    // The rest, grouped by process and kind.
    let group = |t: &Trace, l: usize| {
        (crate::critical_path::graph::process_name(&t.locations.name[l]).to_string(), t.locations.kind_of(l))
    };
    let mut groups: HashMap<_, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for l in (0..na).filter(|&l| to_b[l].is_none()) {
        groups.entry(group(a, l)).or_default().0.push(l);
    }
    for l in (0..nb).filter(|&l| !taken[l]) {
        if let Some(g) = groups.get_mut(&group(b, l)) {
            g.1.push(l);
        }
    }
    let held = |t: &Trace, locs: &[usize]| -> HashMap<usize, HashMap<u32, u64>> {
        let want: HashSet<usize> = locs.iter().copied().collect();
        let mut out: HashMap<usize, HashMap<u32, u64>> = HashMap::new();
        for k in 0..t.intervals.start.len() {
            let l = t.intervals.location[k] as usize;
            if want.contains(&l) {
                *out.entry(l).or_default().entry(t.intervals.kind[k]).or_default() += 1;
            }
        }
        out
    };
    let wanted_a: Vec<usize> = groups.values().flat_map(|g| g.0.iter().copied()).collect();
    let wanted_b: Vec<usize> = groups.values().flat_map(|g| g.1.iter().copied()).collect();
    let (ha, hb) = (held(a, &wanted_a), held(b, &wanted_b));
    let empty = HashMap::new();
    let mut by_content = 0;
    let mut keys: Vec<_> = groups.keys().cloned().collect();
    keys.sort();
    for key in keys {
        let (la, lb) = &groups[&key];
        // Regions in common, by name: min of the counts.
        let mut pairs: Vec<(u64, usize, usize)> = Vec::new();
        for (ia, &x) in la.iter().enumerate() {
            let ca = ha.get(&x).unwrap_or(&empty);
            let names: HashMap<&str, u64> =
                ca.iter().map(|(&r, &c)| (a.region_names[r as usize].as_str(), c)).collect();
            for (ib, &y) in lb.iter().enumerate() {
                let cb = hb.get(&y).unwrap_or(&empty);
                let common: u64 = cb
                    .iter()
                    .map(|(&r, &c)| names.get(b.region_names[r as usize].as_str()).map_or(0, |&n| n.min(c)))
                    .sum();
                pairs.push((common, ia, ib));
            }
        }
        // The most in common first; ties in the order of the names.
        pairs.sort_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        let (mut used_a, mut used_b) = (vec![false; la.len()], vec![false; lb.len()]);
        for (_, ia, ib) in pairs {
            if !used_a[ia] && !used_b[ib] {
                used_a[ia] = true;
                used_b[ib] = true;
                to_b[la[ia]] = Some(lb[ib] as u32);
                taken[lb[ib]] = true;
                by_content += 1;
            }
        }
    }
    let matched = named + by_content;
    if 2 * matched >= na.min(nb) && matched > 0 {
        return (to_b, if by_content > 0 { "name, then content within each process" } else { "name" });
    }
    ((0..na).map(|k| (k < nb).then_some(k as u32)).collect(), "position")
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var)
}

/// The change of the mean step of two per-step series (already in seconds and scaled), with
/// Welch's interval (unequal variances; Welch-Satterthwaite degrees of freedom).
fn step_change(a: &[f64], b: &[f64]) -> Option<StepChange> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((ma, va), (mb, vb)) = (mean_var(a), mean_var(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ea, eb) = (va / na, vb / nb);
    let se = (ea + eb).sqrt();
    let df =
        if ea + eb > 0.0 { (ea + eb).powi(2) / (ea * ea / (na - 1.0) + eb * eb / (nb - 1.0)) } else { na + nb - 2.0 };
    let t = t95(df);
    let d = mb - ma;
    Some(StepChange { a_mean_s: ma, b_mean_s: mb, change_s: d, low_s: d - t * se, high_s: d + t * se })
}

fn stands_out(s: &StepChange) -> bool {
    (s.low_s > 0.0 || s.high_s < 0.0) && s.change_s.abs() > 0.01 * s.a_mean_s.abs().max(s.b_mean_s.abs())
}

fn relative(a: f64, change: f64) -> f64 {
    if a > 0.0 {
        change / a
    } else if change == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Compares run `b` with run `a`, each over its window (ticks).
pub fn diff(a: &Trace, wa: (u64, u64), b: &Trace, wb: (u64, u64), o: &Options) -> Diff {
    let (ra, rb) = rayon::join(|| tally::tally(a, wa, o.steps), || tally::tally(b, wb, o.steps));
    compare(a, &ra, b, &rb, o.top, "rows")
}

/// Compares two runs tallied: `a` and `b` name their locations (and hold the rows matched by
/// content where names differ); `from` says what the tallies were made from.
fn compare(a: &Trace, ra: &Run, b: &Trace, rb: &Run, top: usize, from: &str) -> Diff {
    let (to_b, by) = match_locations(a, b);
    let to_a: HashMap<u32, u32> = to_b.iter().enumerate().filter_map(|(k, v)| v.map(|v| (v, k as u32))).collect();
    let scale = if rb.active > 0 { ra.active.max(1) as f64 / rb.active as f64 } else { 1.0 };
    let c = Compare { a, b, ra, rb, to_a: &to_a, scale };

    let run = c.run();
    let mut regions = c.tallies("region", &ra.regions, &rb.regions);
    let mut paths = c.tallies("path", &ra.paths, &rb.paths);
    let mut collectives = c.tallies("collective", &ra.collectives, &rb.collectives);
    let (mut locations, mut waiting) = c.locations(&to_b);
    let mut pairs = c.pairs();
    for v in [&mut regions, &mut paths, &mut collectives, &mut locations, &mut waiting, &mut pairs] {
        v.sort_by(|x, y| y.change_s.abs().total_cmp(&x.change_s.abs()).then_with(|| x.name.cmp(&y.name)));
    }
    // The top: what stands out (or cannot be told) before what lies within the noise, each by
    // size; pairs compare bytes, so they join only through the tables.
    let mut all: Vec<Change> =
        locations.iter().chain(&regions).chain(&collectives).filter(|x| x.change_s != 0.0).cloned().collect();
    all.sort_by(|x, y| {
        (x.stands_out == Some(false))
            .cmp(&(y.stands_out == Some(false)))
            .then_with(|| y.change_s.abs().total_cmp(&x.change_s.abs()))
    });
    all.truncate(top);
    Diff {
        matching: Matching {
            from: from.into(),
            locations_by: by.into(),
            matched: to_a.len(),
            a_locations: a.locations.name.len(),
            b_locations: b.locations.name.len(),
            scale,
            a_steps: ra.steps.count,
            b_steps: rb.steps.count,
            a_steps_from: ra.steps.source.clone(),
            b_steps_from: rb.steps.source.clone(),
        },
        run,
        top: all,
        locations,
        waiting,
        regions,
        paths,
        collectives,
        pairs,
    }
}

struct Compare<'a> {
    a: &'a Trace,
    b: &'a Trace,
    ra: &'a Run,
    rb: &'a Run,
    /// B's location → A's.
    to_a: &'a HashMap<u32, u32>,
    scale: f64,
}

impl Compare<'_> {
    /// A location's name in A's terms (B's own where unmatched).
    fn name_b(&self, l: u32) -> String {
        match self.to_a.get(&l) {
            Some(&k) => self.a.locations.name[k as usize].clone(),
            None => self.b.locations.name.get(l as usize).cloned().unwrap_or_default(),
        }
    }

    fn run(&self) -> Change {
        let (ra, rb) = (self.ra, self.rb);
        let sa: Vec<f64> = ra.step_lengths.iter().map(|&x| self.ra.secs(x)).collect();
        let sb: Vec<f64> = rb.step_lengths.iter().map(|&x| self.rb.secs(x)).collect();
        let step = step_change(&sa, &sb);
        let (la, lb) = (self.ra.secs(ra.length), self.rb.secs(rb.length));
        let steps = self.step_parts(&sa, &sb);
        Change {
            table: "run",
            name: "the run".into(),
            a: Side { count: ra.steps.count as u64, total_s: la, mean_s: mean(&sa, la), bytes: 0 },
            b: Side { count: rb.steps.count as u64, total_s: lb, mean_s: mean(&sb, lb), bytes: 0 },
            change_s: lb - la,
            relative: relative(la, lb - la),
            stands_out: step.as_ref().map(stands_out),
            step,
            locations: Vec::new(),
            spread: 0,
            steps,
        }
    }

    /// The steps holding most of a change, by ordinal.
    fn step_parts(&self, sa: &[f64], sb: &[f64]) -> Vec<Part> {
        let mut parts: Vec<Part> = sa
            .iter()
            .zip(sb)
            .enumerate()
            .map(|(k, (a, b))| Part { name: format!("step {k}"), change_s: b - a })
            .filter(|p| p.change_s != 0.0)
            .collect();
        top_parts(&mut parts);
        parts
    }

    /// Rows for the tallies of regions or collectives, by name.
    fn tallies(&self, table: &'static str, a: &HashMap<String, Tally>, b: &HashMap<String, Tally>) -> Vec<Change> {
        let empty = Tally::default();
        let names: HashSet<&String> = a.keys().chain(b.keys()).collect();
        names
            .into_iter()
            .map(|name| {
                let (x, y) = (a.get(name).unwrap_or(&empty), b.get(name).unwrap_or(&empty));
                let (sa, sb) = (self.ra.side(x), self.rb.side(y));
                let change = sb.total_s * self.scale - sa.total_s;
                // Per step: zeros for steps without the row.
                let per = |v: &[u64], n: usize, secs: &dyn Fn(u64) -> f64, k: f64| -> Vec<f64> {
                    (0..n).map(|s| secs(v.get(s).copied().unwrap_or(0)) * k).collect()
                };
                let pa = per(&x.by_step, self.ra.steps.count, &|t| self.ra.secs(t), 1.0);
                let pb = per(&y.by_step, self.rb.steps.count, &|t| self.rb.secs(t), self.scale);
                let step = step_change(&pa, &pb);
                // Where: per location of A's naming.
                let mut by: HashMap<String, f64> = HashMap::new();
                for (&l, &v) in &x.by_location {
                    *by.entry(self.a.locations.name.get(l as usize).cloned().unwrap_or_default()).or_default() -=
                        self.ra.secs(v);
                }
                for (&l, &v) in &y.by_location {
                    *by.entry(self.name_b(l)).or_default() += self.rb.secs(v) * self.scale;
                }
                let mut locations: Vec<Part> = by
                    .into_iter()
                    .filter(|(_, v)| v.abs() > 1e-9 * change.abs() && v.signum() == change.signum())
                    .map(|(name, change_s)| Part { name, change_s })
                    .collect();
                let spread = locations.len();
                top_parts(&mut locations);
                Change {
                    table,
                    name: name.clone(),
                    relative: relative(sa.total_s, change),
                    a: sa,
                    b: sb,
                    change_s: change,
                    stands_out: step.as_ref().map(stands_out),
                    step,
                    locations,
                    spread,
                    steps: self.step_parts(&pa, &pb),
                }
            })
            .collect()
    }

    /// Per matched location: its work and its waiting.
    fn locations(&self, to_b: &[Option<u32>]) -> (Vec<Change>, Vec<Change>) {
        let (ra, rb) = (self.ra, self.rb);
        // A location's row: its totals, and its steps where both runs have them per location.
        let row = |table, l: usize, k: u32, va: u64, vb: u64, sa: Option<&Vec<u64>>, sb: Option<&Vec<u64>>| {
            let (x, y) = (self.ra.secs(va), self.rb.secs(vb));
            let pa: Vec<f64> = sa.map(|v| v.iter().map(|&t| self.ra.secs(t)).collect()).unwrap_or_default();
            let pb: Vec<f64> = sb.map(|v| v.iter().map(|&t| self.rb.secs(t)).collect()).unwrap_or_default();
            let step = step_change(&pa, &pb);
            let other = &self.b.locations.name[k as usize];
            // Named in B where B names it otherwise.
            let locations = if *other == self.a.locations.name[l] {
                Vec::new()
            } else {
                vec![Part { name: other.clone(), change_s: y - x }]
            };
            Change {
                table,
                name: self.a.locations.name[l].clone(),
                a: Side { count: ra.steps.count as u64, total_s: x, mean_s: mean(&pa, x), bytes: 0 },
                b: Side { count: rb.steps.count as u64, total_s: y, mean_s: mean(&pb, y), bytes: 0 },
                change_s: y - x,
                relative: relative(x, y - x),
                stands_out: step.as_ref().map(stands_out),
                step,
                spread: locations.len(),
                locations,
                steps: self.step_parts(&pa, &pb),
            }
        };
        let mut work = Vec::new();
        let mut wait = Vec::new();
        for (l, k) in to_b.iter().enumerate() {
            let Some(k) = *k else { continue };
            let (wa, wb) = (ra.work[l], rb.work[k as usize]);
            let (ta, tb) = (ra.wait[l], rb.wait[k as usize]);
            if wa + wb + ta + tb == 0 {
                continue;
            }
            let k_ = k as usize;
            work.push(row("location", l, k, wa, wb, ra.work_by_step.get(l), rb.work_by_step.get(k_)));
            wait.push(row("waiting", l, k, ta, tb, ra.wait_by_step.get(l), rb.wait_by_step.get(k_)));
        }
        (work, wait)
    }

    /// Per pair of locations (A's names): counts and bytes; the change is in bytes.
    fn pairs(&self) -> Vec<Change> {
        // Per pair: (count, bytes, mean latency) of A and of B.
        type Sides = [(u64, u64, f64); 2];
        let mut rows: HashMap<(String, String), Sides> = HashMap::new();
        let named_a = |l: u32| match self.ra.pair_names.get(l as usize) {
            Some(n) => n.clone(),
            None => self.a.locations.name[l as usize].clone(),
        };
        let named_b = |l: u32| match self.rb.pair_names.get(l as usize) {
            Some(n) => n.clone(),
            None => self.name_b(l),
        };
        for (&(s, d), p) in &self.ra.pairs {
            let key = (named_a(s), named_a(d));
            let e = rows.entry(key).or_default();
            e[0] = (p.count, p.bytes, self.ra.secs(p.latency) / p.received.max(1) as f64);
        }
        for (&(s, d), p) in &self.rb.pairs {
            let e = rows.entry((named_b(s), named_b(d))).or_default();
            e[1] = (p.count, p.bytes, self.rb.secs(p.latency) / p.received.max(1) as f64);
        }
        rows.into_iter()
            .map(|((s, d), [x, y])| {
                let change = y.1 as f64 * self.scale - x.1 as f64;
                Change {
                    table: "pair",
                    name: format!("{s} → {d}"),
                    a: Side { count: x.0, total_s: x.2 * x.0 as f64, mean_s: x.2, bytes: x.1 },
                    b: Side { count: y.0, total_s: y.2 * y.0 as f64, mean_s: y.2, bytes: y.1 },
                    change_s: change,
                    relative: relative(x.1 as f64, change),
                    step: None,
                    stands_out: None,
                    locations: Vec::new(),
                    spread: 0,
                    steps: Vec::new(),
                }
            })
            .collect()
    }
}

fn mean(v: &[f64], whole: f64) -> f64 {
    if v.is_empty() { whole } else { v.iter().sum::<f64>() / v.len() as f64 }
}

fn top_parts(parts: &mut Vec<Part>) {
    parts.sort_by(|x, y| y.change_s.abs().total_cmp(&x.change_s.abs()).then_with(|| x.name.cmp(&y.name)));
    parts.truncate(WHERE);
}

/// What `exaviz diff` and Python's `exaviz.diff` ask for: run `b` against run `a`, each over
/// seconds `from_s` to `to_s` since its own start (default: all of it), their rows read from the
/// store for the window where they are on disk; two stores over their whole runs compare from
/// their pyramids ([`cube`]). `Err` says in one line what is wrong and with which run.
pub fn diff_asked(
    a: &exaviz_model::dataset::Dataset,
    b: &exaviz_model::dataset::Dataset,
    from_s: Option<f64>,
    to_s: Option<f64>,
    o: &Options,
) -> Result<Diff, String> {
    // Two stores over their whole runs: from their pyramids, without reading a row.
    if let (Some(x), Some(y), None, None, None) = (&a.out_of_core, &b.out_of_core, from_s, to_s, o.steps) {
        let ((na, ra), (nb, rb)) = (cube::run_of(a, x.span), cube::run_of(b, y.span));
        return Ok(compare(&na, &ra, &nb, &rb, o.top, "pyramids"));
    }
    type Rows<'d> = (std::borrow::Cow<'d, exaviz_model::dataset::Dataset>, (u64, u64));
    fn side<'d>(
        d: &'d exaviz_model::dataset::Dataset,
        which: &str,
        from_s: Option<f64>,
        to_s: Option<f64>,
    ) -> Result<Rows<'d>, String> {
        let (from, to, _) = crate::window::window_asked(d, from_s, to_s).map_err(|e| format!("{which}: {e}"))?;
        let rows = d.window_rows((from, to)).map_err(|e| format!("{which}: {e}"))?;
        Ok((rows, (from, to)))
    }
    let ((ra, wa), (rb, wb)) = (side(a, "run A", from_s, to_s)?, side(b, "run B", from_s, to_s)?);
    Ok(diff(&ra.trace, wa, &rb.trace, wb, o))
}

/// The regressions of `d` beyond `percent`: the run, or a region or collective that grew by more
/// than `percent` of A's and by over 1% of A's run times its locations, without lying within the
/// step-to-step variation; one line each.
pub fn regressions(d: &Diff, percent: f64) -> Vec<String> {
    let limit = percent / 100.0;
    let floor = 0.01 * d.run.a.total_s * d.matching.a_locations.max(1) as f64;
    let mut out = Vec::new();
    if d.run.relative > limit && d.run.stands_out != Some(false) {
        out.push(format!("the run: {:+.1}% ({:+.6} s)", 100.0 * d.run.relative, d.run.change_s));
    }
    for x in d.regions.iter().chain(&d.collectives) {
        if x.relative > limit && x.change_s > floor && x.stands_out != Some(false) {
            out.push(format!("{} {}: {:+.1}% ({:+.6} s)", x.table, x.name, 100.0 * x.relative, x.change_s));
        }
    }
    out
}

#[cfg(test)]
mod tests;
