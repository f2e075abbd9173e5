//! Messages by pair of ranks, by send time within each pair: the messages and bytes each pair
//! sent in any time window, found by two binary searches per pair instead of a pass over every
//! message. The communication matrix and the pair views (chord, sender/receiver) of a trace held
//! in memory with an index count their window from it: a pan or zoom of the linked mpi view
//! then costs the pairs, not the messages. Exact: the same sums a pass over the rows makes.

use rayon::prelude::*;

use crate::Messages;

/// One pair's messages and bytes in a window ([`PairIndex::sums`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairSum {
    pub source: u32,
    pub destination: u32,
    pub messages: u64,
    pub bytes: u64,
}

/// A [`PairIndex`] and its trace's span (the start that trace's time windows count from).
pub type WithSpan = (PairIndex, Option<(u64, u64)>);

/// A trace's [`PairIndex`] and the trace's span (the start its time windows count from), built
/// when a second window is counted ([`Kept::get`]); `None` inside where the trace has none.
#[derive(Debug, Default)]
pub struct Kept {
    asked: std::sync::atomic::AtomicBool,
    built: std::sync::OnceLock<Option<WithSpan>>,
}

impl Kept {
    /// The index, built by `build` on the second call: the first window is counted from the
    /// rows (`None`), so a single picture (`exaviz render`) does not pay for an index it reads
    /// once.
    pub fn get(&self, build: impl FnOnce() -> Option<WithSpan>) -> Option<&WithSpan> {
        if self.built.get().is_none() && !self.asked.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        self.built.get_or_init(build).as_ref()
    }
}

/// A trace's messages grouped by (source, destination), each group by send time, with the
/// running sum of their bytes. Ids are kept as they are (a reader's ids past the trace's ranks
/// too), so each consumer maps them as its pass over the rows would.
#[derive(Debug, Default)]
pub struct PairIndex {
    source: Vec<u32>,
    destination: Vec<u32>,
    /// Pair `p`'s messages are `starts[p]..starts[p + 1]`.
    starts: Vec<usize>,
    /// Send times, ascending within each pair.
    times: Vec<u64>,
    /// `bytes[k]`: the bytes of messages `0..k` (one more entry than messages).
    bytes: Vec<u64>,
}

impl PairIndex {
    /// The index of `m`, whose ids are mostly below `ranks`: two stable counting passes (by
    /// destination, then by source) over the messages between ranks, the few with an id at or
    /// past `ranks` sorted by comparison after them; a pair's messages out of time order are then
    /// sorted by time. `None` for more than `u32::MAX` messages.
    pub fn of(m: &Messages, ranks: u32) -> Option<Self> {
        let n = m.source.len();
        if n > u32::MAX as usize {
            return None;
        }
        let inside = |i: usize| m.source[i] < ranks && m.destination[i] < ranks;
        let (between, mut past): (Vec<u32>, Vec<u32>) = (0..n as u32).partition(|&i| inside(i as usize));
        // A stable counting pass of `order` by `key` (every key below `ranks`).
        let pass = |order: &[u32], key: &[u32]| -> Vec<u32> {
            let mut at = vec![0usize; ranks as usize + 1];
            for &i in order {
                at[key[i as usize] as usize + 1] += 1;
            }
            for b in 0..ranks as usize {
                at[b + 1] += at[b];
            }
            let mut out = vec![0u32; order.len()];
            for &i in order {
                let b = key[i as usize] as usize;
                out[at[b]] = i;
                at[b] += 1;
            }
            out
        };
        let mut order = pass(&pass(&between, &m.destination), &m.source);
        past.sort_by_key(|&i| (m.source[i as usize], m.destination[i as usize]));
        order.extend(past);
        let keys: Vec<u64> = order
            .par_iter()
            .map(|&i| u64::from(m.source[i as usize]) << 32 | u64::from(m.destination[i as usize]))
            .collect();
        let mut index = PairIndex { starts: vec![0], ..Default::default() };
        for k in 0..n {
            if k + 1 == n || keys[k + 1] != keys[k] {
                index.source.push((keys[k] >> 32) as u32);
                index.destination.push(keys[k] as u32);
                index.starts.push(k + 1);
            }
        }
        drop(keys);
        let mut times: Vec<u64> = order.par_iter().map(|&i| m.send_time[i as usize]).collect();
        // Each pair by send time (stable: equal times keep the rows' order).
        let mut groups: Vec<(&mut [u32], &mut [u64])> = Vec::with_capacity(index.pairs());
        let (mut rest_order, mut rest_times) = (order.as_mut_slice(), times.as_mut_slice());
        for w in index.starts.windows(2) {
            let (o, o_tail) = rest_order.split_at_mut(w[1] - w[0]);
            let (t, t_tail) = rest_times.split_at_mut(w[1] - w[0]);
            groups.push((o, t));
            (rest_order, rest_times) = (o_tail, t_tail);
        }
        groups.par_iter_mut().for_each(|(o, t)| {
            if !t.windows(2).all(|w| w[0] <= w[1]) {
                let mut both: Vec<(u64, u32)> = t.iter().copied().zip(o.iter().copied()).collect();
                both.sort_by_key(|&(time, _)| time);
                for (k, (time, i)) in both.into_iter().enumerate() {
                    (t[k], o[k]) = (time, i);
                }
            }
        });
        index.bytes = Vec::with_capacity(n + 1);
        index.bytes.push(0);
        let mut sum = 0u64;
        for &i in &order {
            sum += u64::from(m.bytes[i as usize]);
            index.bytes.push(sum);
        }
        index.times = times;
        Some(index)
    }

    /// How many pairs have messages.
    pub fn pairs(&self) -> usize {
        self.source.len()
    }

    /// Each pair's messages and bytes sent in ticks `from..to` (every message without a
    /// window), the pairs with none left out: those between ranks by (source, destination),
    /// then any with an id past the ranks.
    pub fn sums(&self, window: Option<(u64, u64)>) -> Vec<PairSum> {
        (0..self.pairs())
            .into_par_iter()
            .with_min_len(4096)
            .filter_map(|p| {
                let (s, e) = (self.starts[p], self.starts[p + 1]);
                let (lo, hi) = match window {
                    None => (s, e),
                    Some((from, to)) => {
                        let times = &self.times[s..e];
                        (s + times.partition_point(|&t| t < from), s + times.partition_point(|&t| t < to))
                    }
                };
                (hi > lo).then(|| PairSum {
                    source: self.source[p],
                    destination: self.destination[p],
                    messages: (hi - lo) as u64,
                    bytes: self.bytes[hi] - self.bytes[lo],
                })
            })
            .collect()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        (self.source.len() + self.destination.len()) * 4
            + self.starts.len() * 8
            + (self.times.len() + self.bytes.len()) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random messages over `ranks + 3` ids (some past the ranks), times out of order.
    fn messages(n: usize, ranks: u32) -> Messages {
        let mut s = 7u64;
        let mut next = move || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            s >> 20
        };
        let mut m = Messages::default();
        for _ in 0..n {
            let id = |r: u64| if r.is_multiple_of(50) { ranks + (r % 3) as u32 } else { (r % u64::from(ranks)) as u32 };
            m.source.push(id(next()));
            m.destination.push(id(next()));
            let t = next() % 10_000;
            m.send_time.push(t);
            m.recv_time.push(t + 5);
            m.bytes.push((next() % 100_000) as u32);
            m.tag.push(0);
        }
        m
    }

    /// Each pair's sums in a window equal a pass over the rows, for windows inside, across and
    /// outside the times, and without one; no pair is listed twice or empty.
    #[test]
    fn pair_sums_equal_a_pass_over_the_rows() {
        let ranks = 37;
        let m = messages(50_000, ranks);
        let index = PairIndex::of(&m, ranks).unwrap();
        for window in [None, Some((0, 10_000)), Some((2_500, 2_600)), Some((9_990, 20_000)), Some((30_000, 40_000))] {
            let mut rows = std::collections::BTreeMap::<(u32, u32), (u64, u64)>::new();
            for i in 0..m.source.len() {
                if window.is_none_or(|(a, b)| (a..b).contains(&m.send_time[i])) {
                    let e = rows.entry((m.source[i], m.destination[i])).or_default();
                    e.0 += 1;
                    e.1 += u64::from(m.bytes[i]);
                }
            }
            let mut sums: Vec<((u32, u32), (u64, u64))> =
                index.sums(window).iter().map(|p| ((p.source, p.destination), (p.messages, p.bytes))).collect();
            sums.sort_unstable();
            assert_eq!(sums, rows.into_iter().collect::<Vec<_>>(), "window {window:?}");
        }
    }
}
