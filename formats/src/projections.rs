//! Charm++ Projections logs: `NAME.sts` (the run's processors, chares, entry methods, user events
//! and statistics) and one `NAME.PE.log` or `NAME.PE.log.gz` per processing element, read as
//! Projections' own reader reads them (`projections/analysis/StsReader.java`,
//! `GenericLogReader.java`, `ProjDefs.java`): one record a line, its type first, times in
//! microseconds.
//!
//! Each PE is a location (`PE N`). Entry methods run (`BEGIN_PROCESSING` 2 / `END_PROCESSING` 3)
//! are states named `Chare::entry` as Projections names them; idle time (14/15) is the state
//! `Idle`; packing and unpacking (16-19) and user bracketed events (98/99, 29) nest inside them.
//! A message is created on one PE (`CREATION` 1, `CREATION_BCAST` 20, `CREATION_MULTICAST` 21,
//! with the creating PE's event number) and processed on another: every `BEGIN_PROCESSING` that
//! names its creator's PE and event number is a message from the creation to the processing,
//! as Projections' timeline draws it. User statistics (32) and memory usage (27) are counters.
//! A line that does not parse is skipped and counted, as Projections skips it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use exaviz_model::LocationKind;
use exaviz_model::dataset::Dataset;
use exaviz_model::source::{Repairs, SourceError};

use super::{Interner, open_lines};
use crate::events::{EventKind, EventTable};

/// Most PEs an `.sts` may declare.
const MAX_PES: u64 = 1 << 20;

/// Whether `head` is the start of a Projections `.sts` file.
pub fn looks_like_sts(head: &[u8]) -> bool {
    head.starts_with(b"PROJECTIONS_ID")
        || (head.starts_with(b"VERSION ") && head.windows(10).any(|w| w == b"PROCESSORS"))
}

/// The one `.sts` file in `dir` that is a Projections summary, if there is exactly one.
pub fn sts_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sts") && p.is_file())
        .filter(|p| crate::head_of(p, 256).is_some_and(|h| looks_like_sts(&h)))
        .collect();
    found.sort();
    (found.len() == 1).then(|| found.remove(0))
}

#[derive(Default, Debug)]
struct Sts {
    pes: u64,
    chares: HashMap<u64, String>,
    /// Entry method id: its name and chare.
    entries: HashMap<u64, (String, u64)>,
    events: HashMap<i64, String>,
    stats: HashMap<i64, String>,
}

impl Sts {
    fn entry_name(&self, id: u64) -> String {
        match self.entries.get(&id) {
            Some((name, chare)) => match self.chares.get(chare) {
                Some(c) => format!("{c}::{name}"),
                None => name.clone(),
            },
            None => format!("entry {id}"),
        }
    }
}

/// A quoted name at the start of `s` and what follows it; an unquoted word where there is no
/// quote.
fn quoted(s: &str) -> (String, &str) {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('"')
        && let Some(end) = rest.find('"')
    {
        return (rest[..end].to_string(), &rest[end + 1..]);
    }
    match s.split_once(char::is_whitespace) {
        Some((w, rest)) => (w.to_string(), rest),
        None => (s.to_string(), ""),
    }
}

fn parse_sts(text: &str) -> Result<Sts, String> {
    let mut sts = Sts::default();
    let mut processors = None;
    for line in text.lines() {
        let (word, rest) = line.trim().split_once(char::is_whitespace).unwrap_or((line.trim(), ""));
        let num = |s: &str| s.trim().parse::<i64>().ok();
        match word {
            "PROCESSORS" => processors = rest.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()),
            "CHARE" => {
                let (id, rest) = rest.trim().split_once(char::is_whitespace).unwrap_or((rest, ""));
                if let Some(id) = num(id) {
                    sts.chares.insert(id as u64, quoted(rest).0);
                }
            }
            "ENTRY" => {
                // ENTRY CHARE id "name" chare msg
                let rest = rest.trim().strip_prefix("CHARE").unwrap_or(rest);
                let (id, rest) = rest.trim().split_once(char::is_whitespace).unwrap_or((rest, ""));
                let (name, rest) = quoted(rest);
                let chare = rest.split_whitespace().next().and_then(num);
                if let (Some(id), Some(chare)) = (num(id), chare) {
                    sts.entries.insert(id as u64, (name, chare as u64));
                }
            }
            "EVENT" | "STAT" => {
                let (id, name) = rest.trim().split_once(char::is_whitespace).unwrap_or((rest, ""));
                if let Some(id) = num(id) {
                    let table = if word == "EVENT" { &mut sts.events } else { &mut sts.stats };
                    table.insert(id, name.trim().to_string());
                }
            }
            _ => {}
        }
    }
    let pes = processors.ok_or("has no PROCESSORS line")?;
    if pes == 0 || pes > MAX_PES {
        return Err(format!("declares {pes} processors (1 to {MAX_PES} are read)"));
    }
    sts.pes = pes;
    Ok(sts)
}

/// A message received: processing PE, time, creating PE and its event number.
type Receipt = (u32, u64, u64, i64);

/// What the PE logs read so far hold.
struct Run<'s> {
    sts: &'s Sts,
    events: EventTable,
    names: Interner,
    /// Creations by creating PE and event number: time and bytes.
    creations: HashMap<(u64, i64), (u64, u32)>,
    receipts: Vec<Receipt>,
    metrics: exaviz_model::Trace,
    metric_of: HashMap<i64, u32>,
    repairs: Repairs,
}

const BAD_LINE: &str = "log lines that do not parse skipped";

impl Run<'_> {
    /// One log line of PE `pe`; `Err` where it does not parse.
    fn record(&mut self, pe: u64, line: &str) -> Result<(), &'static str> {
        let loc = pe as u32;
        let f: Vec<i64> = line.split_whitespace().map_while(|w| w.parse::<i64>().ok()).collect();
        let Some(&kind) = f.first() else { return if line.trim().is_empty() { Ok(()) } else { Err(BAD_LINE) } };
        let at = |k: usize| f.get(k).copied().and_then(|t| u64::try_from(t).ok());
        let need = |n: usize| if f.len() >= n { Ok(()) } else { Err(BAD_LINE) };
        let enter_leave = |begin: i64| if kind == begin { EventKind::Enter } else { EventKind::Leave };
        let (time, event_kind, name) = match kind {
            1 | 20 | 21 => {
                need(7)?;
                let time = at(3).ok_or(BAD_LINE)?;
                let bytes = u32::try_from(f[6].max(0)).unwrap_or(u32::MAX);
                self.creations.entry((pe, f[4])).or_insert((time, bytes));
                return Ok(());
            }
            2 | 3 => {
                need(if kind == 2 { 7 } else { 4 })?;
                let time = at(3).ok_or(BAD_LINE)?;
                if kind == 2 {
                    self.receipts.push((loc, time, at(5).ok_or(BAD_LINE)?, f[4]));
                }
                (time, enter_leave(2), self.sts.entry_name(f[2].max(0) as u64))
            }
            14 | 15 => (at(1).ok_or(BAD_LINE)?, enter_leave(14), "Idle".to_string()),
            16 | 17 => (at(1).ok_or(BAD_LINE)?, enter_leave(16), "Pack".to_string()),
            18 | 19 => (at(1).ok_or(BAD_LINE)?, enter_leave(18), "Unpack".to_string()),
            98 | 99 => {
                need(3)?;
                (at(2).ok_or(BAD_LINE)?, enter_leave(98), self.user_event(f[1]))
            }
            29 => {
                need(4)?;
                let (a, b) = (at(1).ok_or(BAD_LINE)?, at(2).ok_or(BAD_LINE)?);
                if b < a {
                    return Err(BAD_LINE);
                }
                let id = self.names.id(&self.user_event(f[3]));
                self.events.push(loc, a, EventKind::Enter, id);
                self.events.push(loc, b, EventKind::Leave, id);
                return Ok(());
            }
            27 | 32 => return self.counter(loc, kind, line),
            // Computation, tracing, queues, interrupts, receipts, user events and notes:
            // nothing to draw as a state or a message.
            4..=13 | 26 | 28 | 100 => return Ok(()),
            _ => return Err("log lines of an unknown type skipped"),
        };
        let id = self.names.id(&name);
        self.events.push(loc, time, event_kind, id);
        Ok(())
    }

    fn user_event(&self, id: i64) -> String {
        self.sts.events.get(&id).cloned().unwrap_or_else(|| format!("user event {id}"))
    }

    /// Memory usage (27: bytes, then time) or a user statistic (32: time, user time, value, PE,
    /// statistic; the middle fields are decimals).
    fn counter(&mut self, loc: u32, kind: i64, line: &str) -> Result<(), &'static str> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let word = |k: usize| words.get(k).copied().unwrap_or("");
        let (time, value, id) = if kind == 27 {
            (word(2).parse::<u64>(), word(1).parse::<f64>(), -1)
        } else {
            (word(1).parse::<u64>(), word(3).parse::<f64>(), word(5).parse::<i64>().map_err(|_| BAD_LINE)?)
        };
        let (Ok(time), Ok(value)) = (time, value) else { return Err(BAD_LINE) };
        let t = &mut self.metrics;
        let next = t.metric_names.len() as u32;
        let metric = *self.metric_of.entry(id).or_insert_with(|| {
            let (name, unit) = if id == -1 {
                ("memory usage".to_string(), "bytes")
            } else {
                (self.sts.stats.get(&id).cloned().unwrap_or_else(|| format!("user statistic {id}")), "")
            };
            t.metric_names.push(name);
            t.metric_units.push(unit.into());
            t.metric_accumulated.push(false);
            next
        });
        let m = &mut t.metrics;
        m.location.push(loc);
        m.time.push(time);
        m.metric.push(metric);
        m.value.push(value);
        Ok(())
    }
}

/// Opens a Projections run from its `.sts` file (or its folder), reporting progress per PE log.
pub fn open(input: &str, sts_path: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let text = std::fs::read(sts_path).map_err(|source| SourceError::Io { input: input.into(), source })?;
    let sts = parse_sts(&String::from_utf8_lossy(&text))
        .map_err(|m| SourceError::invalid(input, format!("is not a Projections summary: {m}")))?;
    let name = sts_path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let base = name.strip_suffix(".sts").unwrap_or(name);
    let mut run = Run {
        sts: &sts,
        events: EventTable { ticks_per_second: 1_000_000, ..Default::default() },
        names: Interner::default(),
        creations: HashMap::new(),
        receipts: Vec::new(),
        metrics: Default::default(),
        metric_of: HashMap::new(),
        repairs: Repairs::default(),
    };
    let mut read_any = false;
    for pe in 0..sts.pes {
        progress(pe, sts.pes);
        let log = [format!("{base}.{pe}.log.gz"), format!("{base}.{pe}.log")]
            .into_iter()
            .map(|n| sts_path.with_file_name(n))
            .find(|p| p.is_file());
        let Some(log) = log else {
            run.repairs.add("PEs without a log file left empty", || format!("PE {pe}"));
            continue;
        };
        read_any = true;
        let file = log.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let mut lines = open_lines(input, &log)?;
        let mut line = String::new();
        let mut lineno = 0u64;
        while lines.next(input, &mut line)? {
            lineno += 1;
            if lineno == 1 && line.starts_with("PROJECTIONS-RECORD") {
                continue;
            }
            if let Err(what) = run.record(pe, &line) {
                run.repairs.add(what, || format!("{file} line {lineno}"));
            }
        }
    }
    if !read_any {
        return Err(SourceError::invalid(
            input,
            format!("has no PE logs beside it ({base}.0.log.gz to {base}.{}.log.gz)", sts.pes - 1),
        ));
    }
    progress(sts.pes, sts.pes);
    let Run { mut events, names, creations, mut receipts, metrics, mut repairs, .. } = run;
    events.names = names.names;
    events.location_names = (0..sts.pes).map(|pe| format!("PE {pe}")).collect();
    let mut t = crate::events::trace_of(&events, &mut repairs);
    // Messages: each processing whose creation is in the logs.
    receipts.sort_unstable();
    for (to, time, src, event) in receipts {
        if let Some(&(sent, bytes)) = creations.get(&(src, event))
            && src < sts.pes
            && sent <= time
        {
            t.messages.push((src as u32, to), (sent, time), bytes, 0);
        }
    }
    t.metric_names = metrics.metric_names;
    t.metric_units = metrics.metric_units;
    t.metric_accumulated = metrics.metric_accumulated;
    t.metrics = metrics.metrics;
    t.locations.kind = vec![LocationKind::CpuThread; sts.pes as usize];
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace: t, warnings, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sts_names_entries_by_their_chares() {
        let sts = parse_sts(
            "PROJECTIONS_ID \nVERSION 11.0\nPROCESSORS 2\nCHARE 45 \"Hello\" 1\nENTRY CHARE 151 \"Hello()\" 45 0\nENTRY CHARE 7 \"say hi\" 99 0\nEVENT 1 For Bracket Events\nSTAT 200 tracing user stat\nEND\n",
        )
        .unwrap();
        assert_eq!(sts.pes, 2);
        assert_eq!(sts.entry_name(151), "Hello::Hello()");
        assert_eq!(sts.entry_name(7), "say hi");
        assert_eq!(sts.events[&1], "For Bracket Events");
        assert_eq!(sts.stats[&200], "tracing user stat");
        assert!(parse_sts("VERSION 11.0\n").is_err());
        assert!(parse_sts("PROCESSORS 99999999999\n").is_err());
    }

    /// Every mutation of the real hello run's files (its `.sts` and a PE's log) gives a run or
    /// one line naming the input, never a panic.
    #[test]
    fn mutated_runs_give_a_run_or_one_line() {
        let Some(real) = exaviz_model::testing::shared_data("projections-charm/hello-1darray-projections") else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("exaviz-proj-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sts = std::fs::read(real.join("hello.sts")).unwrap();
        let mut log = Vec::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(std::fs::File::open(real.join("hello.0.log.gz")).unwrap())
            .read_to_end(&mut log)
            .unwrap();
        std::fs::copy(real.join("hello.1.log.gz"), dir.join("m.1.log.gz")).unwrap();
        let cases = crate::fuzz::mutations(&sts, 150, 3)
            .into_iter()
            .map(|s| (s, log.clone()))
            .chain(crate::fuzz::mutations(&log, 150, 4).into_iter().map(|l| (sts.clone(), l)));
        let (opened, refused) = crate::fuzz::tally(
            "m.sts",
            cases.map(|(s, l)| {
                std::fs::write(dir.join("m.sts"), &s).unwrap();
                std::fs::write(dir.join("m.0.log"), &l).unwrap();
                open("m.sts", &dir.join("m.sts"), &|_, _| {})
            }),
        );
        assert!(opened > 100 && refused > 0, "{opened} opened, {refused} refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
