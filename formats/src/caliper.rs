//! Caliper's `.cali` files (LLNL's Caliper, the `recorder` service's text records), read as
//! `cali-query` reads them: `__rec=node` records build the context tree (each node an attribute
//! and a value under its parent; a node of attribute 8, `cali.attribute.name`, defines an
//! attribute whose id is the node's), and `__rec=ctx` records are snapshots: the nodes they
//! reference (with their ancestors) and immediate `attr=,data=` pairs. An event trace's
//! snapshots are taken at `event.begin#A`, `event.end#A` and `event.set#A` of an annotation
//! `A` (`cali.snapshot.event.begin` naming `A`): begins and ends nest as regions named
//! `A=value` on the row of their process (`mpi.rank`) and thread, a set ends the value before
//! and begins the new one. Times come from `time.offset` (µs since the start) where the
//! snapshots carry it; else (older traces carry only `time.inclusive.duration` on the events
//! that end a region) each region lasts as long as it says, begins when the event before it
//! happened, and a counted warning says that the times were placed so. Escapes (`\,`, `\=`,
//! `\\`) are read; a line that does not parse is counted and skipped.

use std::collections::HashMap;
use std::path::Path;

use exaviz_model::dataset::Dataset;
use exaviz_model::source::{Repairs, SourceError};

use crate::events::{EventKind, EventTable};

/// The largest `.cali` file read.
const MAX_BYTES: u64 = 1 << 30;

/// Whether `head` (a file's first bytes) starts a Caliper record stream.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(b"__rec=node") || head.starts_with(b"__rec=ctx") || head.starts_with(b"__rec=globals")
}

/// A record's fields: `key=value` pairs split at unescaped commas.
fn fields(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut key, mut cur, mut in_value, mut escaped) = (String::new(), String::new(), false, false);
    for c in line.chars() {
        match (escaped, c) {
            (true, _) => {
                cur.push(c);
                escaped = false;
            }
            (false, '\\') => escaped = true,
            (false, '=') if !in_value => {
                key = std::mem::take(&mut cur);
                in_value = true;
            }
            (false, ',') => {
                out.push((std::mem::take(&mut key), std::mem::take(&mut cur)));
                in_value = false;
            }
            _ => cur.push(c),
        }
    }
    out.push((key, cur));
    out
}

/// A context-tree node: its attribute, value and parent.
struct Node {
    attr: u64,
    data: String,
    parent: Option<u64>,
}

/// What one snapshot says: its (attribute, value) pairs, the tree's and the immediate ones.
fn entries(nodes: &HashMap<u64, Node>, refs: &[u64], immediate: &[(u64, String)]) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for &r in refs {
        let mut at = Some(r);
        // A parent chain is at most as long as the tree holds nodes.
        for _ in 0..=nodes.len() {
            let Some(n) = at.and_then(|a| nodes.get(&a)) else { break };
            out.push((n.attr, n.data.clone()));
            at = n.parent;
        }
    }
    out.extend(immediate.iter().cloned());
    out
}

/// The region `annotation=value`'s id, named in `names` when first met.
fn region_id(ids: &mut HashMap<String, u32>, names: &mut Vec<String>, annotation: &str, value: &str) -> u32 {
    let label = format!("{annotation}={value}");
    let next = names.len() as u32;
    *ids.entry(label.clone()).or_insert_with(|| {
        names.push(label);
        next
    })
}

/// The attribute names by id and the snapshots (their attribute and value pairs) of a
/// file's records.
#[allow(clippy::type_complexity, reason = "the two tables a file's records give")]
fn records(text: &str, repairs: &mut Repairs) -> (HashMap<u64, String>, Vec<Vec<(u64, String)>>) {
    let mut nodes: HashMap<u64, Node> = HashMap::new();
    // Attribute names by id (a node of attribute 8 defines one).
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut snapshots: Vec<Vec<(u64, String)>> = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let f = fields(line);
        let get = |key: &str| f.iter().find(|x| x.0 == key).map(|x| x.1.as_str());
        let num = |v: &str| v.parse::<u64>().ok();
        match get("__rec") {
            Some("node") => {
                let (Some(id), Some(attr)) = (get("id").and_then(num), get("attr").and_then(num)) else {
                    repairs.add("node records without an id or attribute skipped", || format!("line {}", k + 1));
                    continue;
                };
                let data = get("data").unwrap_or_default().to_string();
                if attr == 8 {
                    names.insert(id, data.clone());
                }
                nodes.insert(id, Node { attr, data, parent: get("parent").and_then(num) });
            }
            Some("ctx") => {
                let refs: Vec<u64> = get("ref").map(|r| r.split('=').filter_map(num).collect()).unwrap_or_default();
                // `attr=A=B,data=X=Y`: immediate values, pairwise.
                let attrs: Vec<u64> = get("attr").map(|r| r.split('=').filter_map(num).collect()).unwrap_or_default();
                let data: Vec<String> =
                    get("data").map(|r| r.split('=').map(String::from).collect()).unwrap_or_default();
                let immediate: Vec<(u64, String)> = attrs.into_iter().zip(data).collect();
                snapshots.push(entries(&nodes, &refs, &immediate));
            }
            Some("globals") | None if line.trim().is_empty() => {}
            Some("globals") => {}
            _ => repairs.add("lines that are no Caliper record skipped", || format!("line {}", k + 1)),
        }
    }
    (names, snapshots)
}

/// Opens a Caliper `.cali` file.
pub fn open(input: &str, path: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let bytes = crate::read_all(input, path, MAX_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut repairs = Repairs::default();
    let (names, snapshots) = records(&text, &mut repairs);
    progress(bytes.len() as u64 / 2, bytes.len() as u64);
    let by_name: HashMap<&str, u64> = names.iter().map(|(&id, n)| (n.as_str(), id)).collect();
    let id_of = |name: &str| by_name.get(name).copied();
    let (begin, end, set) =
        (id_of("cali.snapshot.event.begin"), id_of("cali.snapshot.event.end"), id_of("cali.snapshot.event.set"));
    if begin.is_none() && end.is_none() && set.is_none() {
        return Err(SourceError::invalid(
            input,
            "is a Caliper file without event snapshots (a profile, not an event trace): exaviz draws Caliper's event traces",
        ));
    }
    let (offset, duration) = (id_of("time.offset"), id_of("time.inclusive.duration"));
    let (rank, thread) = (id_of("mpi.rank"), id_of("thread.id"));
    let value = |s: &[(u64, String)], a: Option<u64>| a.and_then(|a| s.iter().find(|x| x.0 == a)).map(|x| x.1.clone());
    let mut events = EventTable { ticks_per_second: 1_000_000, ..Default::default() };
    let mut rows: HashMap<(String, String), u32> = HashMap::new();
    let mut region_of: HashMap<String, u32> = HashMap::new();
    // Per row: its clock (µs) and each annotation's stack of (value, begin).
    let mut clocks: Vec<u64> = Vec::new();
    let mut stacks: Vec<HashMap<u64, Vec<(String, u64)>>> = Vec::new();
    for s in &snapshots {
        let kind = [(begin, 0u8), (end, 1), (set, 2)]
            .into_iter()
            .find_map(|(a, k)| value(s, a).and_then(|v| v.parse::<u64>().ok()).map(|annotation| (k, annotation)));
        let Some((kind, annotation)) = kind else { continue };
        let key = (value(s, rank).unwrap_or_default(), value(s, thread).unwrap_or_default());
        let next = rows.len() as u32;
        let row = *rows.entry(key).or_insert(next);
        if row as usize == clocks.len() {
            clocks.push(0);
            stacks.push(HashMap::new());
        }
        let r = row as usize;
        let stamp = value(s, offset).and_then(|v| v.parse::<f64>().ok()).map(|us| us.max(0.0) as u64);
        let lasted = value(s, duration).and_then(|v| v.parse::<f64>().ok()).map(|us| us.max(0.0) as u64);
        let name = names.get(&annotation).cloned().unwrap_or_else(|| format!("attribute {annotation}"));
        // The value an event names: `event.begin#A` / `event.set#A` / `event.end#A`.
        let tag = ["event.begin#", "event.end#", "event.set#"][usize::from(kind)];
        let given = value(s, id_of(&format!("{tag}{name}")));
        let stack = stacks[r].entry(annotation).or_default();
        let mut now = stamp.unwrap_or(clocks[r]).max(clocks[r]);
        // An end or a set closes the annotation's innermost value (a set of an annotation
        // without one only begins its value).
        let closed = if kind == 0 { None } else { stack.pop() };
        if kind == 1 && closed.is_none() {
            repairs.add("ends of a region not begun skipped", || name.clone());
            continue;
        }
        if let Some((v, started)) = closed {
            if stamp.is_none() {
                if let Some(d) = lasted {
                    now = now.max(started.saturating_add(d));
                }
                repairs.add(
                    "regions whose times were placed from their durations (the trace records no time stamps)",
                    || "each region begins when the event before it on its row happened".into(),
                );
            }
            let id = region_id(&mut region_of, &mut events.names, &name, &v);
            events.push(row, now, EventKind::Leave, id);
        }
        if kind != 1 {
            let v = given.unwrap_or_default();
            let id = region_id(&mut region_of, &mut events.names, &name, &v);
            stacks[r].entry(annotation).or_default().push((v, now));
            events.push(row, now, EventKind::Enter, id);
        }
        clocks[r] = now;
    }
    // Regions still open close at their row's last event.
    let mut order: Vec<(&(String, String), &u32)> = rows.iter().collect();
    order.sort_by_key(|x| *x.1);
    events.location_names = order
        .iter()
        .map(|((rank, thread), _)| match (rank.is_empty(), thread.is_empty()) {
            (true, true) => "process".to_string(),
            (false, true) => format!("rank {rank}"),
            (true, false) => format!("thread {thread}"),
            (false, false) => format!("rank {rank} / thread {thread}"),
        })
        .collect();
    if events.time.is_empty() {
        return Err(SourceError::invalid(input, "is a Caliper event trace without any region begun or ended"));
    }
    let trace = crate::events::trace_of(&events, &mut repairs);
    progress(bytes.len() as u64, bytes.len() as u64);
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace, warnings, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of a small event trace: attribute nodes, then snapshots of `main` begun,
    /// `work` begun and ended inside it, and `main` ended, stamped with `time.offset` (µs) where
    /// `offsets` is set, else carrying the ended regions' durations only.
    fn cali(offsets: bool) -> String {
        let mut s = String::from(
            "__rec=node,id=8,attr=8,data=cali.attribute.name\n\
             __rec=node,id=17,attr=8,data=cali.snapshot.event.begin\n\
             __rec=node,id=19,attr=8,data=cali.snapshot.event.end\n\
             __rec=node,id=34,attr=8,data=time.offset\n\
             __rec=node,id=37,attr=8,data=time.inclusive.duration\n\
             __rec=node,id=38,attr=8,data=main\n\
             __rec=node,id=39,attr=8,data=event.begin#main\n\
             __rec=node,id=41,attr=8,data=event.end#main\n\
             __rec=node,id=50,attr=8,data=work\n\
             __rec=node,id=51,attr=8,data=event.begin#work\n\
             __rec=node,id=52,attr=8,data=event.end#work\n\
             __rec=node,id=60,attr=17,data=38\n\
             __rec=node,id=61,attr=39,data=run,parent=60\n\
             __rec=node,id=62,attr=17,data=50\n\
             __rec=node,id=63,attr=51,data=step\\,1,parent=62\n\
             __rec=node,id=64,attr=19,data=50\n\
             __rec=node,id=65,attr=52,data=step\\,1,parent=64\n\
             __rec=node,id=66,attr=19,data=38\n\
             __rec=node,id=67,attr=41,data=run,parent=66\n",
        );
        let stamps = [("61", 10, None), ("63", 20, None), ("65", 50, Some(30)), ("67", 90, Some(80))];
        for (r, at, lasted) in stamps {
            match (offsets, lasted) {
                (true, _) => s += &format!("__rec=ctx,ref={r},attr=34,data={at}\n"),
                (false, Some(d)) => s += &format!("__rec=ctx,ref={r},attr=37,data={d}\n"),
                (false, None) => s += &format!("__rec=ctx,ref={r}\n"),
            }
        }
        s
    }

    fn opened(text: &str, name: &str) -> Result<Dataset, SourceError> {
        let dir = std::env::temp_dir().join(format!("exaviz-cali-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.cali");
        std::fs::write(&path, text).unwrap();
        let d = open("t.cali", &path, &|_, _| {});
        std::fs::remove_dir_all(&dir).unwrap();
        d
    }

    /// Begun and ended annotations nest as regions named `A=value` (an escaped comma kept),
    /// timed by `time.offset`; without it, placed from their durations and said so.
    #[test]
    fn begins_and_ends_nest_as_regions() {
        assert!(looks_like(cali(true).as_bytes()));
        let d = opened(&cali(true), "stamped").unwrap();
        let rows = crate::events::interval_rows(&d.trace);
        // Microseconds since Caliper's start, as stamped.
        assert_eq!(rows, vec![(0, 10, 90, "main=run", 0), (0, 20, 50, "work=step,1", 1)]);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        let d = opened(&cali(false), "placed").unwrap();
        let rows = crate::events::interval_rows(&d.trace);
        // `work` begins when `main` did (the event before it), lasts its 30 µs; `main` its 80.
        assert_eq!(rows, vec![(0, 0, 30, "work=step,1", 1), (0, 0, 80, "main=run", 0)]);
        assert!(d.warnings.iter().any(|w| w.contains("2 regions whose times were placed")), "{:?}", d.warnings);
    }

    /// Every mutation of a trace gives one or one line naming the file, never a panic.
    #[test]
    fn mutated_traces_give_a_trace_or_one_line() {
        let text = cali(false);
        let results: Vec<_> = crate::fuzz::mutations(text.as_bytes(), 300, 9)
            .iter()
            .enumerate()
            .map(|(k, m)| opened(&String::from_utf8_lossy(m), &format!("m{k}")))
            .collect();
        let (ok, refused) = crate::fuzz::tally("t.cali", results);
        assert!(ok > 100 && refused > 0, "{ok} opened, {refused} refused");
    }
}
