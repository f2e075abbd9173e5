//! Point-to-point messages matched as MPI matches them: per key (sender, receiver, tag, and the
//! communicator where the format has one), the n-th send with the n-th receive, whichever is
//! read first. Shared by the readers of event streams (OTF2, pipit's tables).

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use exaviz_model::Messages;
use exaviz_model::source::Repairs;

/// One side of a message waiting for the other.
enum Pending {
    /// A send: its row in the messages.
    Send(usize),
    /// A receive: its time.
    Recv(u64),
}

/// The sends and receives not yet matched, per key.
pub(crate) struct Matcher<K> {
    pending: HashMap<K, VecDeque<Pending>>,
}

impl<K: Copy + Eq + Hash + Ord> Matcher<K> {
    pub(crate) fn new() -> Self {
        Self { pending: HashMap::new() }
    }

    /// A send from `source` to `destination` with `tag` at `time`, matched under `key`: a row
    /// of `m`, its receive time from a waiting receive or set when one comes (`u64::MAX` until
    /// then).
    pub(crate) fn send(
        &mut self,
        m: &mut Messages,
        key: K,
        (source, destination, tag): (u32, u32, u32),
        time: u64,
        bytes: u64,
    ) {
        let queue = self.pending.entry(key).or_default();
        let recv = match queue.front() {
            Some(&Pending::Recv(t)) => {
                queue.pop_front();
                t
            }
            _ => {
                queue.push_back(Pending::Send(m.source.len()));
                u64::MAX
            }
        };
        m.source.push(source);
        m.destination.push(destination);
        m.send_time.push(time);
        m.recv_time.push(recv);
        m.bytes.push(u32::try_from(bytes).unwrap_or(u32::MAX));
        m.tag.push(tag);
    }

    /// A receive at `time` under `key`: the waiting send's receive time, or it waits.
    pub(crate) fn recv(&mut self, m: &mut Messages, key: K, time: u64) {
        let queue = self.pending.entry(key).or_default();
        match queue.front() {
            Some(&Pending::Send(i)) => {
                m.recv_time[i] = time;
                queue.pop_front();
            }
            _ => queue.push_back(Pending::Recv(time)),
        }
    }

    /// Sends without their receive (or the reverse), as a trace cut short or a process that did
    /// not finish writes them: the sends are left out of `m`, both counted as repairs, the
    /// first of each kind named by `at(key)`.
    pub(crate) fn leave_out_unmatched(&self, m: &mut Messages, repairs: &mut Repairs, at: impl Fn(K) -> String) {
        let mut drop = Vec::new();
        let mut keys: Vec<K> = self.pending.iter().filter(|(_, q)| !q.is_empty()).map(|(k, _)| *k).collect();
        keys.sort_unstable();
        for key in keys {
            for p in &self.pending[&key] {
                match p {
                    Pending::Send(i) => {
                        drop.push(*i);
                        repairs.add("sends without a matching receive left out", || at(key));
                    }
                    Pending::Recv(_) => repairs.add("receives without a matching send left out", || at(key)),
                }
            }
        }
        if drop.is_empty() {
            return;
        }
        drop.sort_unstable();
        let keep: Vec<u32> =
            (0..m.source.len() as u32).filter(|i| drop.binary_search(&(*i as usize)).is_err()).collect();
        m.permute(&keep);
    }
}
