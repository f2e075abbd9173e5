//! Every location assigned to its nearest representative, and each group's robust statistics:
//! the median distance to the representative, the median deviation from it, and the locations
//! that stand out beyond both ([`mirror::stands_out`]). On the host from the nearest
//! ([`assign_host`]); on a device from the distances left there ([`record`]: two 16-bit radix
//! passes per median over a histogram per group), so that only each location's group (four
//! bits), the statistics and the few that stand out come back. Both give the same.

use super::mirror::{self, GROUP_WORDS};
use crate::{BufId, DeviceWords, Kernel, Recording, StageError};

/// Most groups (a location's group is kept in four bits).
pub const MOST_GROUPS: u32 = 15;

/// One group's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    pub members: u32,
    /// The lower median of the members' distances to the representative.
    pub median: u32,
    /// The lower median of their distances' deviations from `median`.
    pub mad: u32,
}

/// What [`assign_host`] and a device's run give.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assigned {
    /// Per location, its group.
    pub group_of: Vec<u8>,
    pub stats: Vec<GroupStats>,
    /// The locations that stand out of their group, with their distance, by location.
    pub candidates: Vec<(u32, u32)>,
}

/// The lower median of `v` (sorted in place); 0 for none.
fn median(v: &mut [u32]) -> u32 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// [`Assigned`] from each location's nearest representative and distance; `least[g]` is the
/// least distance that may stand out of group `g` (its floor).
pub fn assign_host(nearest: &[(u32, u32)], least: &[u32]) -> Assigned {
    let groups = least.len();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); groups];
    for &(g, d) in nearest {
        if let Some(m) = members.get_mut(g as usize) {
            m.push(d);
        }
    }
    let stats: Vec<GroupStats> = members
        .iter_mut()
        .map(|d| {
            let m = median(d);
            let mut dev: Vec<u32> = d.iter().map(|&x| x.abs_diff(m)).collect();
            GroupStats { members: d.len() as u32, median: m, mad: median(&mut dev) }
        })
        .collect();
    let candidates = nearest
        .iter()
        .enumerate()
        .filter(|&(_, &(g, x))| {
            (g as usize) < groups && {
                let s = stats[g as usize];
                mirror::stands_out(x, s.median, s.mad, least[g as usize])
            }
        })
        .map(|(l, &(_, x))| (l as u32, x))
        .collect();
    let group_of = nearest.iter().map(|&(g, _)| g.min(15) as u8).collect();
    Assigned { group_of, stats, candidates }
}

/// The buffers a device's run of [`record`] leaves: the statistics and packed groups to
/// download, the candidates to keep (read with [`read`]).
pub struct Recorded {
    pub stats: BufId,
    pub packed: BufId,
    pub candidates: BufId,
}

fn params(n: u32, groups: u32, pass: u32, of_mad: u32) -> Vec<u32> {
    vec![n, n, 0, 0, 0, groups, 0, 0, 0, pass, of_mad, 0]
}

/// Records the groups and statistics of the `n` locations whose nearest representative and
/// distance are in `nearest` (pairs of words), of `least.len()` groups.
pub fn record(rec: &mut Recording<'_>, nearest: BufId, n: u32, least: &[u32]) -> Result<Recorded, StageError> {
    let groups = least.len() as u32;
    if groups == 0 || groups > MOST_GROUPS {
        return Err(StageError::Input(format!("{groups} groups: 1 to {MOST_GROUPS}")));
    }
    let hist = rec.alloc(u64::from(groups) << 16, "groups.histogram");
    let stats = rec.alloc(u64::from(groups * GROUP_WORDS), "groups.stats");
    let mut initial = vec![0u32; (groups * GROUP_WORDS) as usize];
    for (g, &l) in least.iter().enumerate() {
        initial[g * GROUP_WORDS as usize + 5] = l;
    }
    rec.upload(stats, initial);
    for of_mad in 0..2 {
        for pass in 0..2 {
            rec.clear(hist);
            rec.dispatch(
                Kernel::GroupHistogram,
                n,
                params(n, groups, pass, of_mad),
                vec![(4, nearest), (8, hist), (9, stats)],
            );
            rec.dispatch(
                Kernel::GroupSelect,
                groups * 256,
                params(n, groups, pass, of_mad),
                vec![(8, hist), (9, stats)],
            );
        }
    }
    let candidates = rec.alloc(1 + 2 * u64::from(n), "groups.candidates");
    rec.dispatch(Kernel::GroupDeviants, n, params(n, groups, 0, 0), vec![(4, nearest), (9, stats), (10, candidates)]);
    let packed = rec.alloc(u64::from(n.div_ceil(8)), "groups.packed");
    rec.dispatch(Kernel::PackGroups, n.div_ceil(8), params(n, groups, 0, 0), vec![(4, nearest), (11, packed)]);
    Ok(Recorded { stats, packed, candidates })
}

/// [`Assigned`] from a run of [`record`]: the downloaded statistics and packed groups, and the
/// candidates read from where they were kept (their count first, then only them).
pub fn read(
    n: u32,
    groups: u32,
    stats: &[u32],
    packed: &[u32],
    candidates: &DeviceWords,
) -> Result<Assigned, StageError> {
    let bad = || StageError::Input("group statistics missing".into());
    if stats.len() < (groups * GROUP_WORDS) as usize || packed.len() < n.div_ceil(8) as usize {
        return Err(bad());
    }
    let stats: Vec<GroupStats> = stats
        .chunks(GROUP_WORDS as usize)
        .take(groups as usize)
        .map(|w| GroupStats { members: w[0], median: w[3], mad: w[4] })
        .collect();
    let group_of = (0..n as usize).map(|l| ((packed[l / 8] >> (4 * (l % 8))) & 15) as u8).collect();
    let count = candidates.read(0..1).map_err(StageError::from)?.first().copied().ok_or_else(bad)?;
    let count = count.min(n);
    let words =
        if count > 0 { candidates.read(1..1 + 2 * u64::from(count)).map_err(StageError::from)? } else { Vec::new() };
    let mut candidates: Vec<(u32, u32)> = words.chunks_exact(2).map(|w| (w[0], w[1])).collect();
    candidates.sort_unstable();
    Ok(Assigned { group_of, stats, candidates })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runner;
    use crate::cpu::CpuRunner;

    /// The recording (the mirrors' kernels) gives the host's groups, medians past 16 bits,
    /// deviations and candidates.
    #[test]
    fn the_recording_equals_the_host() {
        let mut seed = 5u64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as u32
        };
        let nearest: Vec<(u32, u32)> =
            (0..5000u32).map(|l| (l % 3, if l % 997 == 5 { 900_000 } else { 200_000 + next(30_000) })).collect();
        let least = [10u32, 10, 400_000];
        let host = assign_host(&nearest, &least);
        assert!(host.stats.iter().all(|s| s.median > 1 << 17 && s.mad > 1000), "{:?}", host.stats);
        assert_eq!(host.candidates.len(), 6, "{:?}", host.candidates);
        let mut rec = Recording::default();
        let buf = rec.alloc(2 * nearest.len() as u64, "nearest");
        let words: Vec<u32> = nearest.iter().flat_map(|&(g, d)| [g, d]).collect();
        rec.upload(buf, words);
        let r = record(&mut rec, buf, nearest.len() as u32, &least).unwrap();
        rec.download(r.stats);
        rec.download(r.packed);
        rec.keep(r.candidates);
        let out = CpuRunner::default().run_keeping(&rec).unwrap();
        let got = read(nearest.len() as u32, 3, &out.downloads[0], &out.downloads[1], &out.kept[0]).unwrap();
        assert_eq!(got.stats, host.stats);
        assert_eq!(got.candidates, host.candidates);
        assert_eq!(got.group_of, host.group_of);
    }
}
