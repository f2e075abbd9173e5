//! A trace from an events table: enter, leave and instant events per (process, thread), as
//! pipit keeps a trace in a pandas DataFrame (`Timestamp (ns)`, `Event Type`, `Name`, `Process`,
//! `Thread`, `Attributes`) and as Python's `exaviz.from_pandas` hands it over, column by column.
//! Enters and leaves become intervals nested as the OTF2 reader nests them (a leave closes its
//! region's innermost open call and the calls entered after it; a leave of a region not open is
//! dropped; a region never left ends at its location's last event), each repair counted. Sends
//! and receives (instants with a peer) are matched in order per sender, receiver and tag, as MPI
//! matches them.

use exaviz_model::dataset::Dataset;
use exaviz_model::source::Repairs;
use exaviz_model::{LocationKind, Trace};

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Enter,
    Leave,
    /// A point event; a send or receive where it has a peer.
    Instant,
}

/// A point-to-point side of an instant event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    None,
    Send,
    Recv,
}

/// The events, one entry per row in every column.
#[derive(Clone, Debug, Default)]
pub struct EventTable {
    /// Ticks (`ticks_per_second` of them per second).
    pub time: Vec<u64>,
    pub kind: Vec<EventKind>,
    /// Index into `names`: the region entered or left, or the instant's name.
    pub name: Vec<u32>,
    pub names: Vec<String>,
    /// Index into `location_names`.
    pub location: Vec<u32>,
    pub location_names: Vec<String>,
    /// Instants: a send or a receive, the location at its other end, its tag and bytes.
    pub side: Vec<Side>,
    pub peer: Vec<u32>,
    pub tag: Vec<u32>,
    pub bytes: Vec<u64>,
    pub ticks_per_second: u64,
}

impl EventTable {
    /// Adds an enter, leave or plain instant (no peer) of `name` on `location` at `time`.
    pub(crate) fn push(&mut self, location: u32, time: u64, kind: EventKind, name: u32) {
        self.time.push(time);
        self.kind.push(kind);
        self.name.push(name);
        self.location.push(location);
        self.side.push(Side::None);
        self.peer.push(0);
        self.tag.push(0);
        self.bytes.push(0);
    }
}

/// The trace of `events`, named `input`; `Err` says in one line what is wrong with the table.
pub fn from_events(input: &str, e: &EventTable) -> Result<Dataset, String> {
    check(e)?;
    let mut repairs = Repairs::default();
    let t = trace_of(e, &mut repairs);
    let warnings = repairs.lines(input);
    let mut d = Dataset { name: input.to_string(), trace: t, warnings, ..Default::default() };
    exaviz_model::held_index::attach_index(&mut d);
    Ok(d)
}

/// The trace of a checked table: its intervals nested per location and its messages matched,
/// what was repaired added to `repairs`. The readers of formats that record enters and leaves
/// (Paraver's events, Perfetto's slices, Projections' entry methods, HPCToolkit's samples) build
/// their intervals through it.
pub(crate) fn trace_of(e: &EventTable, repairs: &mut Repairs) -> Trace {
    let (n, locations) = (e.time.len(), e.location_names.len());
    let mut t = Trace { ticks_per_second: e.ticks_per_second.max(1), ..Default::default() };
    t.region_names = e.names.clone();
    t.locations.name = e.location_names.clone();
    t.locations.node = vec![u32::MAX; locations];
    t.locations.kind = vec![LocationKind::CpuThread; locations];
    // Each location's rows in time order, ties in the table's order.
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&k| (e.location[k as usize], e.time[k as usize]));
    let mut pending = crate::matching::Matcher::<(u32, u32, u32)>::new();
    let mut at = 0;
    while at < order.len() {
        let loc = e.location[order[at] as usize];
        let end = at + order[at..].partition_point(|&k| e.location[k as usize] == loc);
        let mut stack: Vec<(u32, u64)> = Vec::new();
        for &k in &order[at..end] {
            let k = k as usize;
            let (time, name) = (e.time[k], e.name[k]);
            match e.kind[k] {
                EventKind::Enter => stack.push((name, time)),
                EventKind::Leave => {
                    let Some(open) = stack.iter().rposition(|&(r, _)| r == name) else {
                        repairs.add("leaves of a region not entered dropped", || where_(e, k));
                        continue;
                    };
                    if open + 1 < stack.len() {
                        repairs.add("leaves out of nesting order (regions entered later closed with them)", || {
                            where_(e, k)
                        });
                    }
                    while stack.len() > open {
                        let (r, start) = stack.pop().expect("the stack holds the region");
                        interval(&mut t, loc, r, start, time, stack.len());
                    }
                }
                EventKind::Instant => {
                    let peer = e.peer[k];
                    match e.side[k] {
                        Side::None => {}
                        _ if peer as usize >= locations => {
                            repairs.add("sends and receives with a peer not in the table dropped", || where_(e, k));
                        }
                        Side::Send => pending.send(
                            &mut t.messages,
                            (loc, peer, e.tag[k]),
                            (loc, peer, e.tag[k]),
                            time,
                            e.bytes[k],
                        ),
                        Side::Recv => pending.recv(&mut t.messages, (peer, loc, e.tag[k]), time),
                    }
                }
            }
        }
        let last = e.time[order[end - 1] as usize];
        while let Some((r, start)) = stack.pop() {
            repairs.add("regions never left (closed at their location's last event)", || {
                format!("{} in {}", e.names[r as usize], e.location_names[loc as usize])
            });
            interval(&mut t, loc, r, start, last.max(start), stack.len());
        }
        at = end;
    }
    // Sends never received are left out, as the OTF2 reader leaves them out; both sides counted.
    pending.leave_out_unmatched(&mut t.messages, repairs, |(s, d, tag)| format!("location {s} to {d}, tag {tag}"));
    t
}

/// Every column as long as the times, and every location and name index in range.
fn check(e: &EventTable) -> Result<(), String> {
    let n = e.time.len();
    for (column, len) in [
        ("kind", e.kind.len()),
        ("name", e.name.len()),
        ("location", e.location.len()),
        ("side", e.side.len()),
        ("peer", e.peer.len()),
        ("tag", e.tag.len()),
        ("bytes", e.bytes.len()),
    ] {
        if len != n {
            return Err(format!("column {column} has {len} rows where the times have {n}"));
        }
    }
    let locations = e.location_names.len();
    if let Some(k) = e.location.iter().position(|&l| l as usize >= locations) {
        return Err(format!("row {k}: location {} of {locations}", e.location[k]));
    }
    if let Some(k) = e.name.iter().position(|&l| l as usize >= e.names.len()) {
        return Err(format!("row {k}: name {} of {}", e.name[k], e.names.len()));
    }
    Ok(())
}

fn where_(e: &EventTable, k: usize) -> String {
    format!("row {k}, {} in {}", e.names[e.name[k] as usize], e.location_names[e.location[k] as usize])
}

fn interval(t: &mut Trace, loc: u32, region: u32, start: u64, end: u64, depth: usize) {
    let i = &mut t.intervals;
    i.location.push(loc);
    i.start.push(start);
    i.end.push(end);
    i.kind.push(region);
    i.depth.push(depth as u32);
}

/// A trace's intervals as sorted rows (location, start, end, region's name, depth), as the
/// readers' tests compare them.
#[cfg(test)]
pub(crate) fn interval_rows(t: &Trace) -> Vec<(u32, u64, u64, &str, u32)> {
    let i = &t.intervals;
    let mut rows: Vec<(u32, u64, u64, &str, u32)> = (0..i.start.len())
        .map(|k| (i.location[k], i.start[k], i.end[k], t.region_names[i.kind[k] as usize].as_str(), i.depth[k]))
        .collect();
    rows.sort_unstable();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank 0: main 0-100 holding send at 10 (to 1, tag 7, 64 bytes) inside MPI_Send 5-20;
    /// rank 1: main 0-100 holding MPI_Recv 8-30, the receive at 30; then a leave of a region
    /// never entered and a region never left.
    fn table() -> EventTable {
        use EventKind::*;
        let rows: [(u64, EventKind, u32, u32, Side, u32); 12] = [
            (0, Enter, 0, 0, Side::None, 0),
            (5, Enter, 1, 0, Side::None, 0),
            (10, Instant, 3, 0, Side::Send, 1),
            (20, Leave, 1, 0, Side::None, 0),
            (100, Leave, 0, 0, Side::None, 0),
            (0, Enter, 0, 1, Side::None, 0),
            (8, Enter, 2, 1, Side::None, 0),
            (30, Instant, 4, 1, Side::Recv, 0),
            (30, Leave, 2, 1, Side::None, 0),
            (40, Leave, 1, 1, Side::None, 0),
            (90, Enter, 2, 1, Side::None, 0),
            (100, Leave, 0, 1, Side::None, 0),
        ];
        let mut e = EventTable {
            names: ["main", "MPI_Send", "MPI_Recv", "MpiSend", "MpiRecv"].map(String::from).to_vec(),
            location_names: vec!["rank 0".into(), "rank 1".into()],
            ticks_per_second: 1000,
            ..Default::default()
        };
        for (time, kind, name, loc, side, peer) in rows {
            e.time.push(time);
            e.kind.push(kind);
            e.name.push(name);
            e.location.push(loc);
            e.side.push(side);
            e.peer.push(peer);
            e.tag.push(7);
            e.bytes.push(64);
        }
        e
    }

    #[test]
    fn enters_and_leaves_nest_and_sends_meet_their_receives() {
        let d = from_events("table", &table()).unwrap();
        let t = &d.trace;
        let rows = interval_rows(t);
        assert_eq!(
            rows,
            vec![
                (0, 0, 100, "main", 0),
                (0, 5, 20, "MPI_Send", 1),
                (1, 0, 100, "main", 0),
                (1, 8, 30, "MPI_Recv", 1),
                // Entered at 90 and closed with main, out of nesting order.
                (1, 90, 100, "MPI_Recv", 1),
            ]
        );
        let m = &t.messages;
        assert_eq!(
            (m.source.clone(), m.destination.clone(), m.send_time.clone(), m.recv_time.clone()),
            (vec![0], vec![1], vec![10], vec![30])
        );
        assert_eq!((m.bytes[0], m.tag[0]), (64, 7));
        let w = d.warnings.join("\n");
        assert!(w.contains("1 leaves of a region not entered dropped"), "{w}");
        assert!(w.contains("1 leaves out of nesting order"), "{w}");
    }

    #[test]
    fn a_table_with_bad_columns_is_refused_in_one_line() {
        let mut e = table();
        e.peer.pop();
        assert!(from_events("t", &e).unwrap_err().contains("column peer has 11 rows"));
        let mut e = table();
        e.location[3] = 9;
        assert!(from_events("t", &e).unwrap_err().contains("row 3: location 9 of 2"));
        let mut e = table();
        e.name[0] = 99;
        assert!(from_events("t", &e).unwrap_err().contains("row 0: name 99"));
        // A receive from a peer not in the table, and a send never received.
        let mut e = table();
        e.peer[7] = 5;
        let d = from_events("t", &e).unwrap();
        assert!(d.trace.messages.source.is_empty());
        let w = d.warnings.join("\n");
        assert!(w.contains("peer not in the table") && w.contains("sends without a matching receive"), "{w}");
    }

    /// Mutations of a valid table (values changed at random, rows cut short) give a trace or a
    /// one-line error, never a panic.
    #[test]
    fn mutated_tables_never_panic() {
        let mut rng = exaviz_model::rng::SplitMix64(7);
        for round in 0..2000 {
            let mut e = table();
            let k = rng.below(e.time.len() as u32) as usize;
            match round % 6 {
                0 => e.time[k] = rng.next_u64(),
                1 => e.location[k] = rng.below(4),
                2 => e.name[k] = rng.below(7),
                3 => e.peer[k] = rng.next_u64() as u32,
                4 => e.kind[k] = [EventKind::Enter, EventKind::Leave, EventKind::Instant][rng.below(3) as usize],
                _ => {
                    e.time.truncate(k);
                    e.kind.truncate(k);
                    e.name.truncate(k);
                    e.location.truncate(k);
                    e.side.truncate(k);
                    e.peer.truncate(k);
                    e.tag.truncate(k);
                    e.bytes.truncate(k);
                }
            }
            if let Err(m) = from_events("t", &e) {
                assert!(!m.contains('\n'), "{m}");
            }
        }
    }
}
