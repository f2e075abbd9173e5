//! The rows of the enhanced Marey's graph and what each shows in a time window: a device's
//! operators, or a collapsed stage's operators as the min, mean and max of their devices'
//! start and end; then the visual aggregation of §5.2.3 (computation merged in the bins denser
//! than the mean, communication kept).

use exaviz_model::training::{Class, Training};

/// A row: a device, or a stage collapsed into one.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    Device(u32),
    Stage(u32),
}

/// One band on a row: an operator, a collapsed stage's operator, or merged computation.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Mean start and end (aligned ns); `lo`/`hi`: the earliest start and latest end.
    pub start: f64,
    pub end: f64,
    pub lo: f64,
    pub hi: f64,
    pub class: Class,
    /// Operator identity across devices (`u32::MAX` for merged bins).
    pub instance: u32,
    /// The paired send's or receive's instance, else `u32::MAX`.
    pub pair: u32,
    /// An operator index (the first device's for a stage), for tooltips.
    pub op: u32,
    /// Operators behind this band: devices of a collapsed stage, or merged operators.
    pub count: u32,
    /// Merged computation: the bin it fills.
    pub bin: Option<u32>,
}

/// The operators of `d` meeting `[w0, w1]` after its offset: first and end index.
fn visible(t: &Training, d: usize, off: i64, w0: f64, w1: f64, longest: u64) -> std::ops::Range<usize> {
    let r = t.ops_of(d);
    let s = &t.ops.start[r.clone()];
    let lo = s.partition_point(|&x| (x as f64 + off as f64) < w0 - longest as f64);
    let hi = s.partition_point(|&x| (x as f64 + off as f64) <= w1);
    r.start + lo..r.start + hi.max(lo)
}

/// The longest operator (ns), which bounds the search for those meeting a window.
pub fn longest(t: &Training) -> u64 {
    t.ops.start.iter().zip(&t.ops.end).map(|(a, b)| b - a).max().unwrap_or(0)
}

/// The bands of `row` meeting `[w0, w1]`; a stage's row leaves out the devices in `apart`
/// (sorted: those drawn on rows of their own).
pub fn items(t: &Training, row: &Row, offsets: &[i64], w: (f64, f64), longest: u64, apart: &[u32]) -> Vec<Item> {
    let pair_instance = |i: usize| {
        let p = t.ops.pair[i];
        if p == u32::MAX { u32::MAX } else { t.ops.instance[p as usize] }
    };
    let one = |i: usize, off: i64| {
        let (s, e) = (t.ops.start[i] as f64 + off as f64, t.ops.end[i] as f64 + off as f64);
        Item {
            start: s,
            end: e,
            lo: s,
            hi: e,
            class: t.ops.class(i),
            instance: t.ops.instance[i],
            pair: pair_instance(i),
            op: i as u32,
            count: 1,
            bin: None,
        }
    };
    match *row {
        Row::Device(d) => {
            let d = d as usize;
            visible(t, d, offsets[d], w.0, w.1, longest)
                .filter(|&i| t.ops.end[i] as f64 + offsets[d] as f64 >= w.0)
                .map(|i| one(i, offsets[d]))
                .collect()
        }
        Row::Stage(s) => {
            // Per instance: sums for the mean, min start, max end (dense arrays by instance).
            let n = t.instances as usize;
            let mut acc: Vec<Option<Item>> = vec![None; n];
            let mut used: Vec<u32> = Vec::new();
            for d in t.stage_devices().get(s as usize).cloned().unwrap_or(0..0) {
                if apart.binary_search(&(d as u32)).is_ok() {
                    continue;
                }
                for i in visible(t, d, offsets[d], w.0, w.1, longest) {
                    let it = one(i, offsets[d]);
                    if it.end < w.0 {
                        continue;
                    }
                    match &mut acc[it.instance as usize] {
                        Some(a) => {
                            a.start += it.start;
                            a.end += it.end;
                            a.lo = a.lo.min(it.lo);
                            a.hi = a.hi.max(it.hi);
                            a.count += 1;
                        }
                        slot @ None => {
                            used.push(it.instance);
                            *slot = Some(it);
                        }
                    }
                }
            }
            let mut out: Vec<Item> = used
                .into_iter()
                .filter_map(|k| acc[k as usize].take())
                .map(|mut a| {
                    a.start /= a.count as f64;
                    a.end /= a.count as f64;
                    a
                })
                .collect();
            out.sort_by(|a, b| a.start.total_cmp(&b.start));
            out
        }
    }
}

/// Per collapsed stage in `stages`, its devices that differ from the rest in window `w`
/// (aligned ns), most deviant first, at most `most` a stage: every device's time per operator
/// class in [`crate::rows::BINS`] bins of the window (the location features stage, on
/// `backend`), grouped as the timeline groups locations ([`crate::rows::group`]).
pub fn apart(
    t: &Training,
    offsets: &[i64],
    stages: &[u32],
    w: (f64, f64),
    most: usize,
    backend: &exaviz_compute::Backend,
) -> Result<Vec<(u32, Vec<u32>)>, exaviz_compute::StageError> {
    use exaviz_compute::location_features::{self, FeatureInput};
    if stages.is_empty() || w.1.partial_cmp(&w.0) != Some(std::cmp::Ordering::Greater) {
        return Ok(Vec::new());
    }
    let whole = t.stage_devices();
    let mut wanted = vec![false; t.devices.len()];
    for &s in stages {
        for d in whole.get(s as usize).cloned().unwrap_or(0..0) {
            wanted[d] = true;
        }
    }
    // Times on the aligned clock from just before the window, so that every one is a tick.
    let base = w.0.floor() as i64 - 1;
    let shift = |x: u64, d: u32| (x as i64).saturating_add(offsets[d as usize]).saturating_sub(base).max(0) as u64;
    let o = &t.ops;
    let start: Vec<u64> = o.start.iter().zip(&o.device).map(|(&x, &d)| shift(x, d)).collect();
    let end: Vec<u64> = o.end.iter().zip(&o.device).map(|(&x, &d)| shift(x, d)).collect();
    let slot: Vec<u32> =
        (0..o.len()).map(|i| if wanted[o.device[i] as usize] { u32::from(o.class[i]) } else { u32::MAX }).collect();
    let input = FeatureInput {
        location: &o.device,
        start: &start,
        end: &end,
        slot: &slot,
        locations: t.devices.len() as u32,
        window: (1, 1 + (w.1 - w.0).ceil() as u64),
        bins: crate::rows::BINS,
        slots: Class::ALL.len() as u32,
    };
    let f = crate::rows::timed(|| location_features::run(&mut *backend.runner(), &input))?;
    let mut out = Vec::new();
    for &s in stages {
        let shown: Vec<u32> = whole.get(s as usize).cloned().unwrap_or(0..0).map(|d| d as u32).collect();
        // Too few devices to tell a spread from a deviant.
        if shown.len() < 8 {
            continue;
        }
        let b = crate::rows::timed(|| crate::rows::group(&f, &shown, most, backend))?;
        if !b.deviants.is_empty() {
            out.push((s, b.deviants));
        }
    }
    Ok(out)
}

/// The paper's visual aggregation on one row: computation bands counted into `bins` bins of
/// `[w0, w1]` by their start; in every bin holding more than the mean count per bin, they are
/// replaced by one band over their extent; communication is kept as it is.
pub fn aggregate(items: Vec<Item>, w: (f64, f64), bins: u32) -> Vec<Item> {
    if bins == 0 || items.is_empty() {
        return items;
    }
    let width = (w.1 - w.0).max(1.0) / f64::from(bins);
    let bin_of = |x: f64| ((x - w.0) / width).floor().clamp(0.0, f64::from(bins - 1)) as usize;
    let mut count = vec![0u32; bins as usize];
    let mut computing = 0u32;
    for it in items.iter().filter(|i| i.class.is_compute()) {
        count[bin_of(it.start)] += 1;
        computing += 1;
    }
    let mean = f64::from(computing) / f64::from(bins);
    let dense: Vec<bool> = count.iter().map(|&c| c > 1 && f64::from(c) > mean).collect();
    let mut merged: Vec<Option<Item>> = vec![None; bins as usize];
    let mut class_votes = vec![[0u32; 3]; bins as usize];
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        let b = bin_of(it.start);
        if !(it.class.is_compute() && dense[b]) {
            out.push(it);
            continue;
        }
        class_votes[b][(it.class as usize).min(2)] += it.count;
        match &mut merged[b] {
            Some(m) => {
                m.start = m.start.min(it.start);
                m.end = m.end.max(it.end);
                m.lo = m.lo.min(it.lo);
                m.hi = m.hi.max(it.hi);
                m.count += it.count;
            }
            slot @ None => *slot = Some(Item { instance: u32::MAX, pair: u32::MAX, bin: Some(b as u32), ..it }),
        }
    }
    for (b, m) in merged.into_iter().enumerate() {
        if let Some(mut m) = m {
            let v = class_votes[b];
            let k = (0..3).max_by_key(|&k| v[k]).unwrap_or(0);
            m.class = Class::from_u8(k as u8);
            out.push(m);
        }
    }
    out.sort_by(|a, b| a.start.total_cmp(&b.start));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(start: f64, class: Class) -> Item {
        Item {
            start,
            end: start + 1.0,
            lo: start,
            hi: start + 1.0,
            class,
            instance: 0,
            pair: u32::MAX,
            op: 0,
            count: 1,
            bin: None,
        }
    }

    #[test]
    fn dense_computation_merges_and_communication_stays() {
        // Ten bins over 0..100: bin 0 holds six computations, bin 5 one, and a send in bin 0.
        let mut v: Vec<Item> = (0..6).map(|k| item(k as f64, Class::Forward)).collect();
        v.push(item(55.0, Class::Backward));
        v.push(item(3.5, Class::Send));
        let out = aggregate(v, (0.0, 100.0), 10);
        assert_eq!(out.len(), 3, "{out:?}");
        let m = out.iter().find(|i| i.bin == Some(0)).unwrap();
        assert_eq!((m.start, m.end, m.count, m.class), (0.0, 6.0, 6, Class::Forward));
        assert!(out.iter().any(|i| i.class == Class::Send));
        assert!(out.iter().any(|i| i.class == Class::Backward && i.bin.is_none()), "a sparse bin is kept");
        assert_eq!(aggregate(vec![item(1.0, Class::Forward)], (0.0, 100.0), 0).len(), 1);
    }
}
