//! HPCToolkit's older databases (hpcprof before 2023): `experiment.xml` (the load modules,
//! procedures and calling context tree of the measured program) beside one `*.hpctrace` file per
//! thread or GPU stream, as hpctraceviewer reads them. A trace file is a 24-byte magic
//! (`HPCRUN-trace______01.01b`), 8 bytes of flags, then samples of 12 bytes, big-endian: the time
//! (in the units the XML's `TraceDB` gives, nanoseconds by default) and the call path's trace id,
//! the `it` of a context of the tree. A file's name (`PROGRAM-RANK-THREAD-HOST-PID-GEN`) names
//! its location: a thread numbered 500 or more is a GPU stream, as hpcrun numbers them. Each
//! sample's call path becomes the states of its location as in a newer database (see
//! [`crate::hpctoolkit`]). The XML is scanned tag by tag (no tree is built); every count is the
//! file's own length, so a damaged file gives a line, never a panic or an allocation sized from
//! a number in it.

use std::collections::HashMap;
use std::path::Path;

use exaviz_model::LocationKind;
use exaviz_model::dataset::Dataset;
use exaviz_model::query::Query;
use exaviz_model::source::{Repairs, SourceError};

use crate::hpctoolkit::{Ctx, Meta};

/// The largest `experiment.xml` read.
const MAX_XML: u64 = 1 << 30;
const MAGIC: &[u8] = b"HPCRUN-trace______01.01b";
const HEADER: u64 = 32;

/// Whether `dir` is an older HPCToolkit database: an `experiment.xml` of HPCToolkit beside
/// trace files.
pub fn is_xml_database(dir: &Path) -> bool {
    dir.is_dir()
        && crate::head_of(&dir.join("experiment.xml"), 256)
            .is_some_and(|h| String::from_utf8_lossy(&h).contains("<HPCToolkitExperiment"))
        && traces_in(dir).is_ok_and(|t| !t.is_empty())
}

fn traces_in(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut v: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "hpctrace"))
        .collect();
    v.sort();
    Ok(v)
}

/// `&lt;` and the other four entities of XML, as text.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// The value of attribute `name` in a tag's text (`i="3" n="main"`).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = tag;
    while let Some(k) = rest.find('=') {
        let key = rest[..k].rsplit(|c: char| c.is_whitespace()).next().unwrap_or("");
        let after = &rest[k + 1..];
        let quote = after.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        let end = after[1..].find(quote)? + 1;
        if key == name {
            return Some(&after[1..end]);
        }
        rest = &after[end + 1..];
    }
    None
}

/// The calling context tree of `experiment.xml`, keyed by each context's id (`i`), with the
/// trace ids (`it`) that name contexts in the trace files, and the trace times' ticks per second.
fn read_xml(xml: &str) -> Result<(Meta, HashMap<u32, u32>, u64), String> {
    let mut procedures: HashMap<u32, String> = HashMap::new();
    let mut modules: HashMap<u32, String> = HashMap::new();
    let mut contexts: HashMap<u32, Ctx> = HashMap::new();
    let mut traced: HashMap<u32, u32> = HashMap::new();
    let mut ticks = 1_000_000_000u64;
    // The open elements of the tree: their context ids (0 for an element that is none).
    let mut open: Vec<u32> = Vec::new();
    let mut in_tree = false;
    let mut at = 0;
    while let Some(k) = xml[at..].find('<') {
        let start = at + k + 1;
        let end = start + xml[start..].find('>').ok_or("experiment.xml ends inside a tag")?;
        at = end + 1;
        let tag = &xml[start..end];
        if let Some(closing) = tag.strip_prefix('/') {
            if closing.trim() == "SecCallPathProfileData" {
                in_tree = false;
            } else if in_tree {
                open.pop();
            }
            continue;
        }
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        let name = tag.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or("");
        let closed = tag.ends_with('/');
        let num = |a: &str| attr(tag, a).and_then(|v| v.parse::<u32>().ok());
        match name {
            "Procedure" => {
                if let (Some(i), Some(n)) = (num("i"), attr(tag, "n")) {
                    procedures.insert(i, unescape(n));
                }
            }
            "LoadModule" => {
                if let (Some(i), Some(n)) = (num("i"), attr(tag, "n")) {
                    modules.insert(i, unescape(n));
                }
            }
            "TraceDB" => {
                if let Some(u) = attr(tag, "u").and_then(|v| v.parse::<u64>().ok()).filter(|&u| u > 0) {
                    ticks = u;
                }
            }
            "SecCallPathProfileData" => {
                in_tree = true;
                open.clear();
            }
            _ if in_tree => {
                let parent = open.iter().rev().copied().find(|&c| c != 0).unwrap_or(0);
                let id = num("i").unwrap_or(0);
                if id != 0 && name != "M" {
                    // A procedure frame or an inlined one names a function; call sites, loops
                    // and statements are contexts on its path.
                    let function = match name {
                        "PF" | "Pr" | "A" => {
                            let proc = num("n").and_then(|n| procedures.get(&n).cloned());
                            let proc = proc
                                .or_else(|| attr(tag, "n").map(unescape))
                                .unwrap_or_else(|| "<unknown procedure>".into());
                            let module = num("lm").and_then(|m| modules.get(&m)).map(String::as_str);
                            let marked = crate::hpctoolkit::marks(&proc, module);
                            Some((proc, marked))
                        }
                        _ => None,
                    };
                    contexts.insert(id, Ctx { parent, function });
                    if let Some(it) = num("it") {
                        traced.insert(it, id);
                    }
                }
                if !closed {
                    open.push(if name == "M" { 0 } else { id });
                }
            }
            _ => {}
        }
    }
    if contexts.is_empty() {
        return Err("experiment.xml holds no calling context tree (SecCallPathProfileData)".into());
    }
    Ok((Meta { kinds: Vec::new(), contexts }, traced, ticks))
}

/// A trace file's location: its name and kind, from `PROGRAM-RANK-THREAD-HOST-PID-GEN`.
fn location_of(file: &str) -> (String, LocationKind, (u64, u64)) {
    let stem = file.strip_suffix(".hpctrace").unwrap_or(file);
    let parts: Vec<&str> = stem.rsplitn(5, '-').collect();
    // From the end: generation, pid, host, thread, and the program with its rank.
    let thread = parts.get(3).and_then(|t| t.parse::<u64>().ok());
    let rank = parts.get(4).and_then(|p| p.rsplit('-').next()).and_then(|r| r.parse::<u64>().ok());
    match (rank, thread) {
        (Some(r), Some(t)) if t >= 500 => (format!("rank {r} / GPU stream {t}"), LocationKind::GpuStream, (r, t)),
        (Some(r), Some(t)) => (format!("rank {r} / thread {t}"), LocationKind::CpuThread, (r, t)),
        _ => (stem.to_string(), LocationKind::CpuThread, (u64::MAX, 0)),
    }
}

/// Opens an older HPCToolkit database folder (`DIR` or `DIR?depth=N`).
pub fn open(
    input: &str,
    dir: &Path,
    query: Option<&Query>,
    progress: &dyn Fn(u64, u64),
) -> Result<Dataset, SourceError> {
    let depth = crate::hpctoolkit::depth_of(query)?;
    let bad = |m: String| SourceError::invalid(input, m);
    let io = |source| SourceError::Io { input: input.into(), source };
    let xml_path = dir.join("experiment.xml");
    if std::fs::metadata(&xml_path).map_err(io)?.len() > MAX_XML {
        return Err(bad(format!("experiment.xml is larger than {} MB", MAX_XML >> 20)));
    }
    let xml = String::from_utf8_lossy(&std::fs::read(&xml_path).map_err(io)?).into_owned();
    let (meta, traced, ticks) = read_xml(&xml).map_err(bad)?;
    drop(xml);
    let mut files: Vec<(String, LocationKind, (u64, u64), std::path::PathBuf)> = traces_in(dir)
        .map_err(io)?
        .into_iter()
        .map(|p| {
            let (name, kind, key) = location_of(&p.file_name().unwrap_or_default().to_string_lossy());
            (name, kind, key, p)
        })
        .collect();
    files.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
    let mut repairs = Repairs::default();
    // Every file's samples, read first: the trace's first and last time are every file's.
    let mut lines: Vec<Vec<(u64, u32)>> = Vec::with_capacity(files.len());
    let total = files.len() as u64;
    for (k, f) in files.iter().enumerate() {
        let b = std::fs::read(&f.3).map_err(io)?;
        let name = f.3.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if b.len() < HEADER as usize || &b[..MAGIC.len()] != MAGIC {
            return Err(bad(format!("{name} is not an hpcrun trace (no HPCRUN-trace______01.01b header)")));
        }
        let body = &b[HEADER as usize..];
        if body.len() % 12 != 0 {
            repairs.add("trace files cut inside a sample (the last sample dropped)", || name.clone());
        }
        let samples = body
            .chunks_exact(12)
            .map(|c| {
                let time = u64::from_be_bytes(c[..8].try_into().expect("eight bytes"));
                let it = u32::from_be_bytes(c[8..].try_into().expect("four bytes"));
                // A trace id the tree does not list: not running.
                (time, traced.get(&it).copied().unwrap_or(if it == 0 { 0 } else { u32::MAX }))
            })
            .collect();
        lines.push(samples);
        progress(k as u64 + 1, total);
    }
    let t_min = lines.iter().filter_map(|l| l.first().map(|s| s.0)).min().unwrap_or(0);
    let t_max = lines.iter().filter_map(|l| l.last().map(|s| s.0)).max().unwrap_or(t_min);
    let mut states = crate::hpctoolkit::States::new(&meta, depth);
    for (loc, samples) in lines.into_iter().enumerate() {
        states.samples(loc as u32, samples.into_iter().map(Ok), (t_min, t_max), &mut repairs).map_err(bad)?;
    }
    let names: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    let mut t = states.finish(names, &mut repairs);
    t.ticks_per_second = ticks;
    t.locations.kind = files.iter().map(|f| f.1).collect();
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace: t, warnings, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database in a folder of its own: `experiment.xml` and trace files.
    fn folder(name: &str, xml: &[u8], traces: &[(&str, Vec<u8>)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("exaviz-hpcxml-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("experiment.xml"), xml).unwrap();
        for (file, bytes) in traces {
            std::fs::write(dir.join(file), bytes).unwrap();
        }
        dir
    }

    fn trace(samples: &[(u64, u32)]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend([0; 8]);
        for &(t, c) in samples {
            b.extend(t.to_be_bytes());
            b.extend(c.to_be_bytes());
        }
        b
    }

    const XML: &str = r#"<?xml version="1.0"?>
<HPCToolkitExperiment version="2.2">
<SecCallPathProfile i="0" n="app"><SecHeader>
  <TraceDBTable><TraceDB i="0" u="1000000000" db-glob="*.hpctrace" db-header-sz="32"/></TraceDBTable>
  <LoadModuleTable><LoadModule i="1" n="/bin/app"/><LoadModule i="2" n="/lib/libc.so.6"/></LoadModuleTable>
  <ProcedureTable><Procedure i="10" n="main"/><Procedure i="11" n="solve"/><Procedure i="12" n="memcpy"/>
  <Procedure i="13" n="&lt;gpu kernel&gt;"/></ProcedureTable>
</SecHeader>
<SecCallPathProfileData>
<PF i="2" n="10" lm="1"><M n="1" v="2"/>
  <C i="3"><PF i="4" n="11" lm="1"><S i="5" it="7"/>
    <C i="6"><PF i="7" n="12" lm="2"><S i="8" it="9"/></PF></C></PF></C>
  <S i="9" it="5"/>
</PF>
<PF i="20" n="13"><S i="21" it="30"/></PF>
</SecCallPathProfileData></SecCallPathProfile></HPCToolkitExperiment>
"#;

    /// Samples become nested states down to the deepest user function (a library call under it
    /// is cut, as in a newer database); thread 500 is a GPU stream; trace ids map to the tree.
    #[test]
    fn samples_become_states_of_their_call_paths() {
        let cpu = trace(&[(1000, 5), (1100, 7), (1300, 9), (1400, 5), (1500, 0)]);
        let gpu = trace(&[(1200, 30), (1250, 0)]);
        let dir = folder(
            "states",
            XML.as_bytes(),
            &[("app-000003-000-h-1-0.hpctrace", cpu), ("app-000003-500-h-1-0.hpctrace", gpu)],
        );
        assert!(is_xml_database(&dir));
        let d = open("db", &dir, None, &|_, _| {}).unwrap();
        let t = &d.trace;
        assert_eq!(t.locations.name, vec!["rank 3 / thread 0", "rank 3 / GPU stream 500"]);
        let rows = crate::events::interval_rows(t);
        let want = [(0, 0, 500, "main", 0), (0, 100, 400, "solve", 1), (1, 200, 250, "<gpu kernel>", 0)];
        for w in want {
            assert!(rows.contains(&w), "{w:?} not in {rows:?}");
        }
        assert!(!rows.iter().any(|r| r.3 == "memcpy"), "a library call under the user function is cut: {rows:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every mutation of the XML and of a trace file (bytes flipped, cut short) gives a trace
    /// or one line naming the folder, never a panic.
    #[test]
    fn mutated_databases_give_a_trace_or_one_line() {
        let cpu = trace(&[(1000, 5), (1100, 7), (1300, 9), (1400, 5), (1500, 0)]);
        let mut results = Vec::new();
        for (k, m) in crate::fuzz::mutations(XML.as_bytes(), 200, 3).into_iter().enumerate() {
            let dir = folder(&format!("x{k}"), &m, &[("app-000000-000-h-1-0.hpctrace", cpu.clone())]);
            results.push(open("db", &dir, None, &|_, _| {}));
            std::fs::remove_dir_all(&dir).unwrap();
        }
        for (k, m) in crate::fuzz::mutations(&cpu, 100, 4).into_iter().enumerate() {
            let dir = folder(&format!("t{k}"), XML.as_bytes(), &[("app-000000-000-h-1-0.hpctrace", m)]);
            results.push(open("db", &dir, None, &|_, _| {}));
            std::fs::remove_dir_all(&dir).unwrap();
        }
        let (opened, refused) = crate::fuzz::tally("db", results);
        assert!(opened > 50 && refused > 0, "{opened} opened, {refused} refused");
    }
}
