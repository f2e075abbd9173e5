//! TreeScope's data directory: `network.topo` (JSON: nodes and switches with their ports),
//! `YYYYmmdd-HHMMSS.count` (CSV: cumulative per-port counters, `node_id,port_idx,rcv_data,...`;
//! InfiniBand counts 4-byte words), `YYYYmmdd-HHMMSS.rtable` (CSV: forwarding tables, written
//! when they change) and a job log (`*.squeue`: squeue-like lines).
//!
//! The counter on port P of N is read as the traffic of the link leaving N through P. Counter
//! resets (a value below the last) count as no traffic in that interval.

use std::io::Write;
use std::path::{Path, PathBuf};

use exaviz_model::dataset::Dataset;
use exaviz_model::fattree::{End, FatTree, Job, Link, Node, Switch, Table};
use exaviz_model::source::SourceError;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Whether `path` is a TreeScope data directory (it holds a `network.topo`).
pub fn is_dir(path: &Path) -> bool {
    path.join("network.topo").is_file()
}

#[derive(Serialize, Deserialize)]
struct Topo {
    #[serde(default)]
    name: String,
    #[serde(default)]
    num_cores: u64,
    #[serde(default)]
    num_pods: u64,
    #[serde(default, rename = "num_L1L0")]
    num_l1l0: u64,
    #[serde(default, rename = "num_L1L2")]
    num_l1l2: u64,
    #[serde(default, rename = "num_L2L1")]
    num_l2l1: u64,
    #[serde(default, rename = "num_L2L3")]
    num_l2l3: u64,
    #[serde(default, rename = "num_L3L2")]
    num_l3l2: u64,
    nodes: Vec<Entry>,
    switches: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing)]
    desc: Option<String>,
    lid: u32,
    ports: Vec<PortEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lvl: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idx: Option<u32>,
    /// The director switch: its id as TreeScope's documentation writes it (`"ibcore2"`), or a
    /// bundle number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    core: Option<Core>,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum Core {
    Number(u32),
    Name(String),
}

#[derive(Clone, Serialize, Deserialize)]
struct PortEntry {
    num: u16,
    dest_node: String,
    dest_port: i64,
}

fn invalid(path: &Path, message: impl Into<String>) -> SourceError {
    SourceError::invalid(path.display().to_string(), message)
}

fn io(path: &Path, source: std::io::Error) -> SourceError {
    SourceError::Io { input: path.display().to_string(), source }
}

/// Reads the network file: nodes, switches and links, with what it says of levels, pods,
/// bundles (`core`) and order.
fn read_topo(path: &Path) -> Result<FatTree, SourceError> {
    let file = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let topo: Topo =
        serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| invalid(path, e.to_string()))?;
    let mut ids: FxHashMap<&str, End> = FxHashMap::default();
    for (i, e) in topo.nodes.iter().enumerate() {
        if ids.insert(&e.id, End::Node(i as u32)).is_some() {
            return Err(invalid(path, format!("duplicate id {}", e.id)));
        }
    }
    for (i, e) in topo.switches.iter().enumerate() {
        if ids.insert(&e.id, End::Switch(i as u32)).is_some() {
            return Err(invalid(path, format!("duplicate id {}", e.id)));
        }
    }
    let ns = topo.switches.len() as u32;
    // Director switches named by id are bundles in the order of their names.
    let mut core_names: Vec<&str> = topo
        .switches
        .iter()
        .filter_map(|e| match &e.core {
            Some(Core::Name(n)) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    core_names.sort_unstable();
    core_names.dedup();
    let core_of = |e: &Entry| match &e.core {
        Some(Core::Number(n)) => Some(*n),
        Some(Core::Name(n)) => core_names.binary_search(&n.as_str()).ok().map(|k| k as u32),
        None => None,
    };
    let mut links = Vec::new();
    for (e, end) in topo.nodes.iter().zip((0..).map(End::Node)).chain(topo.switches.iter().zip((0..).map(End::Switch)))
    {
        for p in &e.ports {
            if p.dest_node.is_empty() || p.dest_port < 0 {
                continue;
            }
            let to = *ids.get(p.dest_node.as_str()).ok_or_else(|| {
                invalid(path, format!("{} port {} points to unknown node {}", e.id, p.num, p.dest_node))
            })?;
            let to_port = u16::try_from(p.dest_port).map_err(|_| {
                invalid(path, format!("{} port {}: dest_port {} is not a port", e.id, p.num, p.dest_port))
            })?;
            links.push(Link { from: end, from_port: p.num, to, to_port });
        }
    }
    let name = |e: &Entry| e.name.clone().or_else(|| e.desc.clone()).unwrap_or_default();
    let nodes = topo.nodes.iter().map(|e| Node { guid: e.id.clone(), name: name(e), lid: e.lid }).collect();
    let mut switches = Vec::with_capacity(topo.switches.len());
    for e in &topo.switches {
        let bad = |what: &str, v: u32| invalid(path, format!("switch {}: {what} {v} is above the {ns} switches", e.id));
        if let Some(v) = e.lvl.filter(|&v| v > 3) {
            return Err(invalid(path, format!("switch {}: lvl {v} (a three-level fat tree has levels 1 to 3)", e.id)));
        }
        for (what, v) in [("pod", e.pod), ("idx", e.idx), ("core", core_of(e))] {
            if let Some(v) = v.filter(|&v| v >= ns) {
                return Err(bad(what, v));
            }
        }
        let level = e.lvl.unwrap_or(0);
        switches.push(Switch {
            guid: e.id.clone(),
            name: name(e),
            lid: e.lid,
            level,
            pod: e.pod.filter(|_| level != 3),
            bundle: core_of(e).filter(|_| level >= 2),
            idx: e.idx,
        });
    }
    FatTree::new(nodes, switches, links).map_err(|m| invalid(path, m))
}

/// `YYYYmmdd-HHMMSS` as seconds since 1970 (UTC).
pub fn parse_stamp(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 15 || b[8] != b'-' || !b.iter().enumerate().all(|(i, c)| i == 8 || c.is_ascii_digit()) {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(4..6)?, n(6..8)?, n(9..11)?, n(11..13)?, n(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se)
}

/// Days since 1970-01-01 of a date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since 1970 as `YYYYmmdd-HHMMSS` (UTC).
pub fn format_stamp(t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// The files `listing.txt` names, one per line (TreeScope reads only these), where it exists.
fn listing(dir: &Path) -> Result<Option<Vec<PathBuf>>, SourceError> {
    let path = dir.join("listing.txt");
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
    Ok(Some(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| dir.join(l)).collect()))
}

/// Files in `dir` named `YYYYmmdd-HHMMSS.EXT`, by time: those `listing.txt` names where it
/// exists (a listed file that is missing is an error), else all of them.
fn stamped(dir: &Path, ext: &str) -> Result<Vec<(i64, PathBuf)>, SourceError> {
    let mut out = Vec::new();
    let paths: Vec<PathBuf> = match listing(dir)? {
        Some(listed) => {
            if let Some(missing) = listed.iter().find(|p| !p.is_file()) {
                return Err(invalid(
                    &dir.join("listing.txt"),
                    format!("names {}, which is missing", missing.display()),
                ));
            }
            listed
        }
        None => std::fs::read_dir(dir)
            .map_err(|e| io(dir, e))?
            .map(|e| e.map(|e| e.path()).map_err(|e| io(dir, e)))
            .collect::<Result<_, _>>()?,
    };
    for p in paths {
        if p.extension().is_some_and(|x| x == ext)
            && let Some(t) = p.file_stem().and_then(|s| s.to_str()).and_then(parse_stamp)
        {
            out.push((t, p));
        }
    }
    out.sort();
    Ok(out)
}

/// The GUID → end map of the tree.
fn ends(tree: &FatTree) -> FxHashMap<String, End> {
    let nodes = tree.nodes.iter().enumerate().map(|(i, n)| (n.guid.clone(), End::Node(i as u32)));
    nodes.chain(tree.switches.iter().enumerate().map(|(i, s)| (s.guid.clone(), End::Switch(i as u32)))).collect()
}

/// One counter file: `rcv_data` per link (in 4-byte words), `None` where the file has no row.
fn read_counts(path: &Path, tree: &FatTree, ids: &FxHashMap<String, End>) -> Result<Vec<Option<u64>>, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim()).unwrap_or("");
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    if cols.len() < 3 || cols[..3] != ["node_id", "port_idx", "rcv_data"] {
        return Err(invalid(path, "line 1: the header must start with node_id,port_idx,rcv_data"));
    }
    let mut out = vec![None; tree.links.len()];
    for (i, line) in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = |m: String| invalid(path, format!("line {}: {m}", i + 1));
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != cols.len() {
            return Err(at(format!("{} columns, the header has {}", f.len(), cols.len())));
        }
        let end = *ids.get(f[0]).ok_or_else(|| at(format!("unknown node {}", f[0])))?;
        let port: u16 = f[1].parse().map_err(|_| at(format!("port_idx '{}' is not a port number", f[1])))?;
        let v: u64 = f[2].parse().map_err(|_| at(format!("rcv_data '{}' is not a whole number", f[2])))?;
        let l = tree.link_at(end, port).ok_or_else(|| at(format!("{} has no link on port {port}", f[0])))?;
        out[l as usize] = Some(v);
    }
    Ok(out)
}

/// Most entries (switches x nodes) of a forwarding table held in memory.
pub const MAX_TABLE: usize = 1 << 28;

/// One forwarding table: `<switch guid>,<dlid>:<port>,...` per line.
fn read_rtable(path: &Path, from: i64, tree: &FatTree, ids: &FxHashMap<String, End>) -> Result<Table, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let n = tree.nodes.len();
    if tree.switches.len().saturating_mul(n) > MAX_TABLE {
        return Err(invalid(
            path,
            format!(
                "a table of {} switches by {n} nodes is above the limit of {MAX_TABLE} entries",
                tree.switches.len()
            ),
        ));
    }
    let node_of_lid: FxHashMap<u32, u32> = tree.nodes.iter().enumerate().map(|(i, x)| (x.lid, i as u32)).collect();
    let switch_lids: rustc_hash::FxHashSet<u32> = tree.switches.iter().map(|s| s.lid).collect();
    let mut port = vec![0u16; tree.switches.len() * n];
    let mut lines = text.lines().enumerate();
    if !lines.next().is_some_and(|(_, l)| l.trim_start().starts_with("nodeid")) {
        return Err(invalid(path, "line 1: the header must start with nodeid"));
    }
    for (i, line) in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = |m: String| invalid(path, format!("line {}: {m}", i + 1));
        let mut f = line.split(',').map(str::trim);
        let guid = f.next().unwrap_or("");
        let Some(End::Switch(s)) = ids.get(guid).copied() else {
            return Err(at(format!("{guid} is not a switch of the network")));
        };
        for entry in f.filter(|e| !e.is_empty()) {
            let (lid, p) = entry.split_once(':').ok_or_else(|| at(format!("'{entry}' is not dlid:port")))?;
            let lid: u32 = lid.trim().parse().map_err(|_| at(format!("dlid '{lid}' is not a number")))?;
            let p: u16 = p.trim().parse().map_err(|_| at(format!("port '{p}' is not a number")))?;
            if let Some(&d) = node_of_lid.get(&lid) {
                if tree.link_at(End::Switch(s), p).is_none() {
                    return Err(at(format!("{guid} has no link on port {p}")));
                }
                port[s as usize * n + d as usize] = p;
            } else if !switch_lids.contains(&lid) {
                return Err(at(format!("dlid {lid} is no node's or switch's lid")));
            }
        }
    }
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Table { from, name, port })
}

/// `cab[101-103,110],ipa5` as host names.
pub fn expand_hosts(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = list;
    while !rest.is_empty() {
        let (item, tail) = match (rest.find('['), rest.find(',')) {
            (Some(b), c) if c.is_none_or(|c| b < c) => {
                let close = rest[b..].find(']').ok_or_else(|| format!("'{list}': '[' without ']'"))? + b;
                (&rest[..=close], rest[close + 1..].strip_prefix(',').unwrap_or(&rest[close + 1..]))
            }
            (_, Some(c)) => (&rest[..c], &rest[c + 1..]),
            _ => (rest, ""),
        };
        rest = tail;
        let Some(open) = item.find('[') else {
            out.push(item.to_string());
            continue;
        };
        let prefix = &item[..open];
        for range in item[open + 1..item.len() - 1].split(',') {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            let width = a.len();
            let (x, y): (u64, u64) = (
                a.parse().map_err(|_| format!("'{list}': '{a}' is not a number"))?,
                b.parse().map_err(|_| format!("'{list}': '{b}' is not a number"))?,
            );
            if y < x || y - x > 1_000_000 {
                return Err(format!("'{list}': range {range} is empty or too long"));
            }
            out.extend((x..=y).map(|v| format!("{prefix}{v:0width$}")));
        }
    }
    Ok(out)
}

/// `[D-]H:MM:SS`, `M:SS` as seconds.
fn parse_elapsed(s: &str) -> Option<i64> {
    let (days, hms) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<i64>().ok()?, r),
        None => (0, s),
    };
    let parts: Vec<i64> = hms.split(':').map(|p| p.parse::<i64>().ok().filter(|v| *v >= 0)).collect::<Option<_>>()?;
    let secs = match parts[..] {
        [h, m, s] => h * 3600 + m * 60 + s,
        [m, s] => m * 60 + s,
        [s] => s,
        _ => return None,
    };
    (0..100_000).contains(&days).then_some(days * 86_400 + secs)
}

/// The job log: `JOBID PART NAME USER ST START TIME N NODELIST`, START as `MM/DD-HH:MM:SS` in
/// `year`.
fn read_jobs(path: &Path, year: i64, tree: &FatTree) -> Result<Vec<Job>, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let by_name: FxHashMap<&str, u32> =
        tree.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
    let mut jobs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("JOBID") || line.starts_with('#') {
            continue;
        }
        let at = |m: String| invalid(path, format!("line {}: {m}", i + 1));
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 9 {
            return Err(at(format!(
                "{} fields, a job line has 9 (JOBID PART NAME USER ST START TIME N NODELIST)",
                f.len()
            )));
        }
        let id: u64 = f[0].parse().map_err(|_| at(format!("job id '{}' is not a number", f[0])))?;
        let start = parse_start(f[5], year).ok_or_else(|| at(format!("start '{}' is not MM/DD-HH:MM:SS", f[5])))?;
        let secs = parse_elapsed(f[6]).ok_or_else(|| at(format!("time '{}' is not [D-]H:MM:SS", f[6])))?;
        let count: usize = f[7].parse().map_err(|_| at(format!("node count '{}' is not a number", f[7])))?;
        let hosts = expand_hosts(f[8]).map_err(at)?;
        if hosts.len() != count {
            return Err(at(format!("{} nodes listed, the line says {count}", hosts.len())));
        }
        let nodes = hosts
            .iter()
            .map(|h| by_name.get(h.as_str()).copied().ok_or_else(|| at(format!("node {h} is not in the network"))))
            .collect::<Result<Vec<u32>, _>>()?;
        jobs.push(Job {
            id,
            partition: f[1].into(),
            name: f[2].into(),
            user: f[3].into(),
            state: f[4].into(),
            start,
            end: start + secs,
            nodes,
        });
    }
    Ok(jobs)
}

/// TreeScope's job log `slurmqlog/sqlog.txt`, read as TreeScope reads it: lines of `JOBID PART
/// NAME USER ST START TIME N NODELIST` (START `MM/DD-HH:MM:SS` in `year`, TIME `H:MM:SS`,
/// NODELIST `cab[1-36,40]` or `cab7`); a line of another shape (a header, a pending job) is
/// skipped, nodes not in the network are left out of their job, and each is counted.
fn read_sqlog(
    path: &Path,
    year: i64,
    tree: &FatTree,
    repairs: &mut exaviz_model::source::Repairs,
) -> Result<Vec<Job>, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let by_name: FxHashMap<&str, u32> =
        tree.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
    let mut jobs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let parsed = (|| {
            let [id, part, name, user, st, start, time, n, list, ..] = f.as_slice() else { return None };
            let id: u64 = id.parse().ok()?;
            let start = parse_start(start, year)?;
            let secs = parse_elapsed(time)?;
            let n: usize = n.parse().ok()?;
            let hosts = expand_hosts(list).ok()?;
            Some((id, *part, *name, *user, *st, start, secs, n, hosts))
        })();
        let Some((id, part, name, user, st, start, secs, n, hosts)) = parsed else {
            if !line.trim().is_empty() && !line.trim_start().starts_with("JOBID") {
                repairs.add("job log lines of another shape skipped", || format!("{} line {}", path.display(), i + 1));
            }
            continue;
        };
        if hosts.len() != n {
            repairs.add("jobs whose node list and count differ (the list kept)", || {
                format!("{} line {}: {} listed, {n} said", path.display(), i + 1, hosts.len())
            });
        }
        let mut nodes = Vec::new();
        for h in &hosts {
            match by_name.get(h.as_str()) {
                Some(&k) => nodes.push(k),
                None => repairs
                    .add("job nodes not in the network left out", || format!("{} line {}: {h}", path.display(), i + 1)),
            }
        }
        jobs.push(Job {
            id,
            partition: part.into(),
            name: name.into(),
            user: user.into(),
            state: st.into(),
            start,
            end: start + secs,
            nodes,
        });
    }
    Ok(jobs)
}

fn parse_start(s: &str, year: i64) -> Option<i64> {
    let (date, time) = s.split_once('-')?;
    let (m, d) = date.split_once('/')?;
    let stamp = format!("{year:04}{:0>2}{:0>2}-{}", m, d, time.replace(':', ""));
    parse_stamp(&stamp)
}

/// Reads a TreeScope data directory. Job start times carry no year: `year`, or the year of the
/// first counter sample.
pub fn load(dir: &Path, year: Option<i64>) -> Result<FatTree, SourceError> {
    load_with_repairs(dir, year, &mut exaviz_model::source::Repairs::default())
}

/// [`load`], counting what was repaired (job log lines TreeScope skips too).
pub fn load_with_repairs(
    dir: &Path,
    year: Option<i64>,
    repairs: &mut exaviz_model::source::Repairs,
) -> Result<FatTree, SourceError> {
    let mut tree = read_topo(&dir.join("network.topo"))?;
    let ids = ends(&tree);
    let counts = stamped(dir, "count")?;
    let samples: Vec<Vec<Option<u64>>> =
        counts.par_iter().map(|(_, p)| read_counts(p, &tree, &ids)).collect::<Result<_, _>>()?;
    let nl = tree.links.len();
    let mut cum = vec![0.0f64; samples.len() * nl];
    let mut last: Vec<Option<u64>> = vec![None; nl];
    for (s, sample) in samples.iter().enumerate() {
        for l in 0..nl {
            let prev = if s > 0 { cum[(s - 1) * nl + l] } else { 0.0 };
            let delta = match (last[l], sample[l]) {
                (Some(a), Some(b)) => b.saturating_sub(a) as f64 * 4.0,
                _ => 0.0,
            };
            cum[s * nl + l] = prev + delta;
            if sample[l].is_some() {
                last[l] = sample[l];
            }
        }
    }
    tree.times = counts.iter().map(|(t, _)| *t).collect();
    tree.cum = cum;
    tree.tables =
        stamped(dir, "rtable")?.iter().map(|(t, p)| read_rtable(p, *t, &tree, &ids)).collect::<Result<_, _>>()?;
    let year =
        year.unwrap_or_else(|| tree.times.first().map_or(1970, |&t| format_stamp(t)[..4].parse().unwrap_or(1970)));
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "squeue"))
        .collect();
    logs.sort();
    for p in logs {
        tree.jobs.extend(read_jobs(&p, year, &tree)?);
    }
    // TreeScope's own job log.
    let sqlog = dir.join("slurmqlog").join("sqlog.txt");
    if sqlog.is_file() {
        let jobs = read_sqlog(&sqlog, year, &tree, repairs)?;
        tree.jobs.extend(jobs);
    }
    Ok(tree)
}

/// Writes `tree` as a TreeScope data directory at `dir`, through a temporary folder renamed at
/// the end (an older directory there is replaced).
pub fn write(tree: &FatTree, dir: &Path, name: &str) -> Result<(), SourceError> {
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "fattree".into());
    let tmp = parent.join(format!(".{base}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
    let result = write_into(tree, &tmp, name);
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if dir.exists() {
        let old = parent.join(format!(".{base}.old-{}", std::process::id()));
        std::fs::rename(dir, &old).map_err(|e| io(dir, e))?;
        std::fs::rename(&tmp, dir).map_err(|e| io(dir, e))?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(&tmp, dir).map_err(|e| io(dir, e))?;
    }
    Ok(())
}

/// The network file's contents for `tree`.
fn topo_of(tree: &FatTree, name: &str) -> Topo {
    let mut ports: Vec<Vec<PortEntry>> = vec![Vec::new(); tree.nodes.len() + tree.switches.len()];
    let slot = |e: End| match e {
        End::Node(n) => n as usize,
        End::Switch(s) => tree.nodes.len() + s as usize,
    };
    for l in &tree.links {
        ports[slot(l.from)].push(PortEntry {
            num: l.from_port,
            dest_node: tree.guid_of(l.to).to_string(),
            dest_port: i64::from(l.to_port),
        });
    }
    ports.iter_mut().for_each(|v| v.sort_by_key(|p| p.num));
    let mut ports = ports.into_iter();
    let count_ports = |lvl: u8, to: u8| {
        let s = tree.switches.iter().position(|s| s.level == lvl).unwrap_or(0) as u32;
        let level = |e: End| if let End::Switch(w) = e { tree.switches[w as usize].level } else { 0 };
        tree.links.iter().filter(|l| l.from == End::Switch(s) && level(l.to) == to).count() as u64
    };
    Topo {
        name: name.into(),
        num_cores: tree.nodes.len() as u64,
        num_pods: u64::from(tree.pods),
        num_l1l0: count_ports(1, 0),
        num_l1l2: count_ports(1, 2),
        num_l2l1: count_ports(2, 1),
        num_l2l3: count_ports(2, 3),
        num_l3l2: count_ports(3, 2),
        nodes: tree
            .nodes
            .iter()
            .map(|n| Entry {
                id: n.guid.clone(),
                name: Some(n.name.clone()),
                desc: None,
                lid: n.lid,
                ports: ports.next().unwrap_or_default(),
                lvl: None,
                pod: None,
                idx: None,
                core: None,
            })
            .collect(),
        switches: tree
            .switches
            .iter()
            .map(|s| Entry {
                id: s.guid.clone(),
                name: Some(s.name.clone()),
                desc: None,
                lid: s.lid,
                ports: ports.next().unwrap_or_default(),
                lvl: Some(s.level),
                pod: s.pod,
                idx: s.idx,
                core: s.bundle.map(Core::Number),
            })
            .collect(),
    }
}

fn write_into(tree: &FatTree, dir: &Path, name: &str) -> Result<(), SourceError> {
    let create = |p: PathBuf| -> Result<(std::io::BufWriter<std::fs::File>, PathBuf), SourceError> {
        let f = std::fs::File::create(&p).map_err(|e| io(&p, e))?;
        Ok((std::io::BufWriter::new(f), p))
    };
    let topo = topo_of(tree, name);
    let (mut w, p) = create(dir.join("network.topo"))?;
    serde_json::to_writer_pretty(&mut w, &topo).map_err(|e| invalid(&p, e.to_string()))?;
    w.flush().map_err(|e| io(&p, e))?;
    // Counters, in 4-byte words, at each sample.
    let nl = tree.links.len();
    tree.times.par_iter().enumerate().try_for_each(|(s, &t)| {
        let (mut w, p) = create(dir.join(format!("{}.count", format_stamp(t))))?;
        let mut text = String::with_capacity(nl * 48 + 32);
        text.push_str("node_id,port_idx,rcv_data\n");
        for (l, link) in tree.links.iter().enumerate() {
            let words = (tree.cum[s * nl + l] / 4.0).round() as u64;
            text.push_str(&format!("{},{},{words}\n", tree.guid_of(link.from), link.from_port));
        }
        w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| io(&p, e))
    })?;
    for t in &tree.tables {
        let (mut w, p) = create(dir.join(format!("{}.rtable", format_stamp(t.from))))?;
        let n = tree.nodes.len();
        let mut text = String::from("nodeid, lid:portnum, ...\n");
        for (s, sw) in tree.switches.iter().enumerate() {
            text.push_str(&sw.guid);
            for (d, node) in tree.nodes.iter().enumerate() {
                let port = t.port[s * n + d];
                if port != 0 {
                    text.push_str(&format!(",{}:{port}", node.lid));
                }
            }
            text.push('\n');
        }
        w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| io(&p, e))?;
    }
    let (mut w, p) = create(dir.join("jobs.squeue"))?;
    let mut text = String::from("JOBID PARTITION NAME USER ST START TIME NODES NODELIST\n");
    for j in &tree.jobs {
        let start = format_stamp(j.start);
        let secs = (j.end - j.start).max(0);
        let hosts: Vec<&str> = j.nodes.iter().map(|&n| tree.nodes[n as usize].name.as_str()).collect();
        text.push_str(&format!(
            "{} {} {} {} {} {}/{}-{}:{}:{} {}:{:02}:{:02} {} {}\n",
            j.id,
            j.partition,
            j.name,
            j.user,
            j.state,
            &start[4..6],
            &start[6..8],
            &start[9..11],
            &start[11..13],
            &start[13..15],
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            j.nodes.len(),
            compress_hosts(&hosts),
        ));
    }
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| io(&p, e))
}

/// Host names as a hostlist: `cab[1-3,7]` for names sharing a prefix and ending in numbers.
fn compress_hosts(hosts: &[&str]) -> String {
    let split = |h: &str| {
        let digits = h.len() - h.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (p, n) = h.split_at(h.len() - digits);
        (p.to_string(), n.parse::<u64>().ok().filter(|_| !n.starts_with('0') || n == "0"))
    };
    let mut groups: Vec<(String, Vec<u64>)> = Vec::new();
    let mut plain = Vec::new();
    for h in hosts {
        match split(h) {
            (p, Some(n)) => match groups.iter_mut().find(|g| g.0 == p) {
                Some(g) => g.1.push(n),
                None => groups.push((p, vec![n])),
            },
            _ => plain.push(h.to_string()),
        }
    }
    let mut parts = plain;
    for (p, mut v) in groups {
        v.sort_unstable();
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            ranges.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
            i = j + 1;
        }
        parts.push(format!("{p}[{}]", ranges.join(",")));
    }
    parts.join(",")
}

/// A TreeScope directory (`DIR` or `DIR?year=2017`, the job log's year) as a dataset, with what
/// was repaired as warnings.
pub fn fattree_dir(p: &crate::Probe) -> Result<Dataset, SourceError> {
    let year = match &p.query {
        Some(q) => q
            .get("year")
            .map(|v| {
                let y = v.parse::<i64>().ok().filter(|y| (1970..=9999).contains(y));
                y.ok_or_else(|| q.invalid(format!("year={v} is not a year from 1970 to 9999")))
            })
            .transpose()?,
        None => None,
    };
    let mut repairs = exaviz_model::source::Repairs::default();
    let tree = load_with_repairs(p.path, year, &mut repairs)?;
    let mut d = Dataset::of_fattree(p.input, tree);
    d.warnings = repairs.lines(p.input);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_gen::fattree::{Placement, Routing, Shape, Sim, default_jobs, simulate};

    pub(crate) fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("exaviz-fattree-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn small() -> FatTree {
        let shape = Shape::k_ary(4);
        let jobs = default_jobs(shape, 6, false);
        simulate(&Sim {
            shape,
            steps: 6,
            interval: 60,
            placement: Placement::Packed,
            routing: vec![Routing::DModK, Routing::Hashed],
            seed: 1,
            jobs,
        })
        .unwrap()
    }

    #[test]
    fn stamps_and_host_lists_read_as_treescope_writes_them() {
        assert_eq!(parse_stamp("20180902-085612"), Some(1_535_878_572));
        assert_eq!(format_stamp(1_535_878_572), "20180902-085612");
        assert_eq!(parse_stamp("20181302-085612"), None);
        assert_eq!(expand_hosts("cab[101-103,110]").unwrap(), ["cab101", "cab102", "cab103", "cab110"]);
        assert_eq!(expand_hosts("cab[01-02],ipa5").unwrap(), ["cab01", "cab02", "ipa5"]);
        assert!(expand_hosts("cab[1-").is_err());
        assert!(expand_hosts("cab[5-1]").is_err());
        assert_eq!(compress_hosts(&["cab1", "cab2", "cab3", "cab7"]), "cab[1-3,7]");
        assert_eq!(parse_elapsed("1:30:00"), Some(5400));
        assert_eq!(parse_elapsed("2-00:00:01"), Some(172_801));
    }

    /// The directory as TreeScope's `docs/FileFormats.md` defines it: `core` the director
    /// switch's id (a string), an unconnected port as `"dest_node": "", "dest_port": -1`, the job
    /// log at `slurmqlog/sqlog.txt` in the shape TreeScope's job module parses, `listing.txt`
    /// naming the counter and routing files.
    #[test]
    fn treescope_documented_directory_loads_with_its_jobs() {
        let t = small();
        let dir = temp("documented").join("run");
        write(&t, &dir, "machine_name").unwrap();
        let text = std::fs::read_to_string(dir.join("network.topo")).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for s in v["switches"].as_array_mut().unwrap() {
            let o = s.as_object_mut().unwrap();
            if let Some(c) = o.get("core").and_then(serde_json::Value::as_u64) {
                o.insert("core".into(), format!("ibcore{c}").into());
            }
            let ports = o["ports"].as_array_mut().unwrap();
            let next = ports.len() + 1;
            ports.push(serde_json::json!({"num": next, "dest_node": "", "dest_port": -1}));
        }
        std::fs::write(dir.join("network.topo"), v.to_string()).unwrap();
        // The job log moves to TreeScope's place and shape (a header; H:MM:SS times).
        let squeue = std::fs::read_to_string(dir.join("jobs.squeue")).unwrap();
        std::fs::remove_file(dir.join("jobs.squeue")).unwrap();
        std::fs::create_dir_all(dir.join("slurmqlog")).unwrap();
        let mut log =
            String::from("  JOBID PARTITION     NAME     USER ST          START       TIME  NODES NODELIST\n");
        for line in squeue.lines().filter(|l| !l.starts_with("JOBID") && !l.trim().is_empty()) {
            log.push_str(&format!("  {line}\n"));
        }
        log.push_str("  991 pdebug   pending  alice PD  N/A   0:00  4 (Resources)\n");
        std::fs::write(dir.join("slurmqlog/sqlog.txt"), log).unwrap();
        // listing.txt names every file but the last counter sample.
        let mut counts: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".count") || n.ends_with(".rtable"))
            .collect();
        counts.sort();
        let last = counts.iter().rposition(|n| n.ends_with(".count")).unwrap();
        counts.remove(last);
        std::fs::write(dir.join("listing.txt"), counts.join("\n")).unwrap();
        let mut repairs = exaviz_model::source::Repairs::default();
        let back = load_with_repairs(&dir, None, &mut repairs).unwrap();
        assert_eq!(back.jobs.len(), t.jobs.len(), "the jobs of slurmqlog/sqlog.txt");
        assert_eq!(back.jobs, t.jobs);
        assert_eq!(
            back.switches.iter().map(|s| s.bundle).collect::<Vec<_>>(),
            t.switches.iter().map(|s| s.bundle).collect::<Vec<_>>(),
            "cores by name are the same bundles"
        );
        assert_eq!(back.links.len(), t.links.len(), "unconnected ports are no links");
        assert_eq!(back.times.len(), t.times.len() - 1, "only the files listing.txt names");
        assert_eq!(repairs.count("job log lines of another shape skipped"), 1, "the pending job");
        std::fs::write(dir.join("listing.txt"), "20990101-000000.count\n").unwrap();
        let e = load(&dir, None).unwrap_err().to_string();
        assert!(e.contains("listing.txt") && e.contains("which is missing"), "{e}");
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_written_directory_reads_back_the_same() {
        let t = small();
        let dir = temp("roundtrip").join("run");
        write(&t, &dir, "k4").unwrap();
        let back = load(&dir, None).unwrap();
        assert_eq!(back.nodes, t.nodes);
        assert_eq!(back.switches, t.switches);
        assert_eq!((back.pods, back.bundles, back.links.len()), (t.pods, t.bundles, t.links.len()));
        assert_eq!(back.times, t.times);
        assert_eq!(back.jobs, t.jobs);
        let earlier = load(&dir, Some(2017)).unwrap();
        assert_eq!(earlier.jobs[0].start, t.jobs[0].start - 365 * 86_400, "the job log's year is an option");
        assert_eq!(back.tables.len(), 2);
        assert_eq!(back.tables[1].port, t.tables[1].port);
        let nl = t.links.len();
        for (l, link) in t.links.iter().enumerate() {
            let k = back.link_at(link.from, link.from_port).expect("the same wiring") as usize;
            for s in 0..t.times.len() {
                let (a, b) = (back.cum[s * nl + k], t.cum[s * nl + l]);
                assert!((a - b).abs() <= 4.0, "whole 4-byte words: {a} vs {b}");
            }
        }
        // A raw dump without levels, pods or order derives them from connectivity.
        let text = std::fs::read_to_string(dir.join("network.topo")).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for s in v["switches"].as_array_mut().unwrap() {
            let o = s.as_object_mut().unwrap();
            for k in ["lvl", "pod", "idx", "core"] {
                o.remove(k);
            }
            let name = o.remove("name").unwrap();
            o.insert("desc".into(), name);
        }
        std::fs::write(dir.join("network.topo"), v.to_string()).unwrap();
        let raw = load(&dir, None).unwrap();
        assert_eq!(raw.switches, t.switches);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn bad_files_are_one_line_naming_file_line_and_problem() {
        let t = small();
        let dir = temp("bad").join("run");
        write(&t, &dir, "k4").unwrap();
        let topo = std::fs::read_to_string(dir.join("network.topo")).unwrap();
        let count = std::fs::read_to_string(dir.join(format!("{}.count", format_stamp(t.times[1])))).unwrap();
        let jobs = std::fs::read_to_string(dir.join("jobs.squeue")).unwrap();
        let check = |file: &str, text: String, want: &str| {
            let path = dir.join(file);
            let keep = std::fs::read(&path).unwrap();
            std::fs::write(&path, text).unwrap();
            let e = load(&dir, None).unwrap_err().to_string();
            std::fs::write(&path, keep).unwrap();
            assert!(e.contains(file) && e.contains(want) && !e.contains('\n'), "{e}");
        };
        let first = &t.nodes[0].guid;
        check("network.topo", topo.replacen("\"lid\"", "\"lad\"", 1), "missing field `lid`");
        check(
            "network.topo",
            topo.replacen(&format!("\"dest_node\": \"{first}\""), "\"dest_node\": \"nobody\"", 1),
            "unknown node nobody",
        );
        check("network.topo", topo.replacen(&t.nodes[1].guid, first, 1), "duplicate id");
        let cf = format!("{}.count", format_stamp(t.times[1]));
        check(&cf, count.replacen(",1,", ",99,", 1), "line 2");
        check(&cf, count.replacen(",1,", ",1,7,", 1), "4 columns, the header has 3");
        check(&cf, format!("{count}ff:ff,1,5\n"), "unknown node ff:ff");
        let rt = format!("{}.rtable", format_stamp(t.tables[0].from));
        let rtable = std::fs::read_to_string(dir.join(&rt)).unwrap();
        check(&rt, format!("{rtable}{},99999:1\n", t.switches[0].guid), "dlid 99999 is no node's or switch's lid");
        check(&rt, format!("{rtable}{},1-3\n", t.switches[0].guid), "'1-3' is not dlid:port");
        check(&rt, format!("{rtable}{},1:1\n", t.nodes[0].guid), "is not a switch");
        check(&rt, format!("{rtable}{},1:77\n", t.switches[0].guid), "no link on port 77");
        check("jobs.squeue", format!("{jobs}12 pbatch x y R 13/40-99:00:00 1:00 1 cab1\n"), "is not MM/DD");
        check("jobs.squeue", format!("{jobs}12 pbatch x y R 09/02-08:00:00 1:00 2 cab1\n"), "1 nodes listed");
        check("jobs.squeue", format!("{jobs}12 pbatch x y R 09/02-08:00:00 1:00 1 zz9\n"), "node zz9");
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    /// Every file of a directory, flipped byte by byte and cut short: an error or a tree,
    /// never a panic.
    #[test]
    fn mutated_files_never_panic() {
        let t = small();
        let dir = temp("fuzz").join("run");
        write(&t, &dir, "k4").unwrap();
        // The network, the job log, and the first counter file and routing table.
        let stamp = format_stamp(t.times[0]);
        let files: Vec<PathBuf> =
            ["network.topo", "jobs.squeue", &format!("{stamp}.count"), &format!("{stamp}.rtable")]
                .iter()
                .map(|f| dir.join(f))
                .collect();
        assert!(files.iter().all(|f| f.is_file()));
        let mut cases = 0;
        for f in files {
            let original = std::fs::read(&f).unwrap();
            let step = (original.len() / 150).max(1);
            let cuts = [0, original.len() / 3, original.len() / 2, original.len().saturating_sub(1)];
            for m in exaviz_model::testing::mutations(&original, step, &cuts) {
                std::fs::write(&f, &m).unwrap();
                let r = std::panic::catch_unwind(|| load(&dir, None).map(|_| ()));
                assert!(r.is_ok(), "{} panicked", f.display());
                if let Ok(Err(e)) = r {
                    assert!(!e.to_string().contains('\n'));
                }
                cases += 1;
            }
            std::fs::write(&f, original).unwrap();
        }
        assert!(cases > 1000, "{cases}");
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
