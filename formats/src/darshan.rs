//! Darshan logs (`.darshan`, darshan-runtime 3.x), their DXT traces read as darshan-util's
//! `darshan-dxt-parser` reads them: a header (the log's version, a magic number in the writer's
//! byte order, the compression, and where each region lies), then regions each compressed as
//! one or more zlib streams one after another (one per writing process): the job, the file
//! names by record id, and each module's records. A DXT record (modules DXT_POSIX and
//! DXT_MPIIO) is a file on a rank with its write segments, then its read segments: offset,
//! length, start and end in seconds since the job began (and, in newer logs, the thread).
//!
//! Each rank's I/O is a row per module (`rank R / POSIX`, `rank R / MPI-IO`), each segment an
//! interval named by the operation and the file (`write test.out`: the file's name, its whole
//! path where two files share one), its length a sample of the counters `write bytes` and
//! `read bytes` at its start, and where in the file it lies a sample of `write offset` and
//! `read offset` there. Regions compressed with bzip2 (Darshan's other codec) are read as
//! well. A log without DXT (Darshan's counters only) is refused in one line; so are Darshan 2
//! logs (darshan-convert writes them anew).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use exaviz_model::dataset::Dataset;
use exaviz_model::source::{Repairs, SourceError};

use crate::events::{EventKind, EventTable};

/// Darshan's magic number, in the byte order of the machine that wrote the log.
const MAGIC: u64 = 6_567_223;
/// The largest log read, and the most bytes its regions inflate to in all.
const MAX_BYTES: u64 = 1 << 31;
/// The modules holding DXT traces: their ids in the header and their rows' names.
const DXT: [(usize, &str); 2] = [(10, "POSIX"), (11, "MPI-IO")];
/// A DXT record before its segments: base record (id, rank), shared flag, host name (64 bytes),
/// write and read counts.
const RECORD: usize = 104;

/// Whether `head` (a file's first bytes) starts a Darshan 3 log.
pub fn looks_like(head: &[u8]) -> bool {
    let Some(magic) = head.get(8..16).and_then(|m| <[u8; 8]>::try_from(m).ok()) else { return false };
    head.starts_with(b"3.") && (u64::from_le_bytes(magic) == MAGIC || u64::from_be_bytes(magic) == MAGIC)
}

/// The log's bytes read in its writer's order.
struct Bytes<'a> {
    b: &'a [u8],
    big: bool,
}

impl Bytes<'_> {
    fn u64(&self, at: usize) -> Option<u64> {
        let a: [u8; 8] = self.b.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if self.big { u64::from_be_bytes(a) } else { u64::from_le_bytes(a) })
    }
    fn u32(&self, at: usize) -> Option<u32> {
        let a: [u8; 4] = self.b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) })
    }
    fn f64(&self, at: usize) -> Option<f64> {
        self.u64(at).map(f64::from_bits)
    }
}

/// What the header says: the version's minor number, the compression, and where the job, the
/// names and each module's records lie, with the modules' versions.
struct Header {
    minor: u32,
    compression: u8,
    job: (u64, u64),
    names: (u64, u64),
    modules: Vec<((u64, u64), u32)>,
}

fn header(input: &str, b: &Bytes) -> Result<Header, SourceError> {
    let bad = |m: &str| SourceError::invalid(input, m.to_string());
    let version: String = b.b.iter().take(8).take_while(|&&c| c != 0).map(|&c| c as char).collect();
    let (major, minor) = version.split_once('.').ok_or_else(|| bad("is not a Darshan log (no version)"))?;
    if major != "3" {
        return Err(bad(&format!(
            "is a Darshan {version} log: exaviz reads Darshan 3 logs (darshan-convert writes one from it)"
        )));
    }
    let minor: u32 = minor.parse().map_err(|_| bad(&format!("is not a Darshan log (version {version:?})")))?;
    if b.u64(8) != Some(MAGIC) {
        return Err(bad("is not a Darshan log (its magic number is wrong)"));
    }
    // The header grew from 16 modules to 64 at version 3.41 (and its partial flag to 64 bits).
    let (names_at, mods, job) = if minor >= 41 { (32, 64, 1328) } else { (24, 16, 360) };
    let map = |at: usize| Some((b.u64(at)?, b.u64(at + 8)?));
    let cut = || bad("is cut short in its header");
    let names = map(names_at).ok_or_else(cut)?;
    let mut modules = Vec::with_capacity(mods);
    for m in 0..mods {
        let at = names_at + 16 + 16 * m;
        let ver = b.u32(names_at + 16 + 16 * mods + 4 * m).ok_or_else(cut)?;
        modules.push((map(at).ok_or_else(cut)?, ver));
    }
    let job = (job as u64, names.0.saturating_sub(job as u64));
    Ok(Header { minor, compression: b.b[16], job, names, modules })
}

/// Region `(off, len)` of the log, inflated: its zlib streams one after another.
fn region(input: &str, b: &[u8], (off, len): (u64, u64), compression: u8, what: &str) -> Result<Vec<u8>, SourceError> {
    let bad = |m: String| SourceError::invalid(input, m);
    let end = off.checked_add(len).filter(|&e| e <= b.len() as u64);
    let Some(end) = end else {
        return Err(bad(format!("is cut short: its {what} lie beyond its end (byte {off} + {len})")));
    };
    let data = &b[off as usize..end as usize];
    match compression {
        2 => Ok(data.to_vec()),
        1 => {
            // bzip2 streams one after another, as zlib's are.
            let mut out = Vec::new();
            bzip2::read::MultiBzDecoder::new(data)
                .take(MAX_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| bad(format!("its {what} do not decompress ({e})")))?;
            if out.len() as u64 > MAX_BYTES {
                return Err(bad(format!("its {what} decompress beyond {} GiB", MAX_BYTES >> 30)));
            }
            Ok(out)
        }
        0 => {
            let mut out = Vec::new();
            let mut rest = data;
            while !rest.is_empty() {
                let mut z = flate2::bufread::ZlibDecoder::new(rest);
                let room = MAX_BYTES.saturating_sub(out.len() as u64) + 1;
                (&mut z)
                    .take(room)
                    .read_to_end(&mut out)
                    .map_err(|e| bad(format!("its {what} do not inflate ({e})")))?;
                if out.len() as u64 > MAX_BYTES {
                    return Err(bad(format!("its {what} inflate beyond {} GiB", MAX_BYTES >> 30)));
                }
                let used = z.total_in() as usize;
                if used == 0 {
                    return Err(bad(format!("its {what} do not inflate")));
                }
                rest = &rest[used.min(rest.len())..];
            }
            Ok(out)
        }
        c => Err(bad(format!("names a compression exaviz does not know ({c})"))),
    }
}

/// The file names by record id: an id, then the name ending in a NUL (in 3.00 logs, its length
/// before it).
fn names(r: &Bytes, minor: u32) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    let mut at = 0;
    while let Some(id) = r.u64(at) {
        at += 8;
        let name = if minor == 0 {
            let Some(n) = r.u32(at) else { break };
            at += 4;
            let Some(s) = r.b.get(at..at.saturating_add(n as usize)) else { break };
            at += n as usize;
            s
        } else {
            let Some(n) = r.b.get(at..).and_then(|s| s.iter().position(|&c| c == 0)) else { break };
            let s = &r.b[at..at + n];
            at += n + 1;
            s
        };
        out.insert(id, String::from_utf8_lossy(name).into_owned());
    }
    out
}

/// One DXT segment: write or read, on which rank, of which file, its length and its times.
struct Segment {
    rank: i64,
    file: u64,
    write: bool,
    offset: i64,
    length: i64,
    start: f64,
    end: f64,
}

/// The segments of a DXT module's records, each `stride` bytes; `None` where the records do not
/// fill the region exactly with that stride.
fn segments(r: &Bytes, stride: usize) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < r.b.len() {
        let (file, rank) = (r.u64(at)?, r.u64(at + 8)? as i64);
        let (writes, reads) = (r.u64(at + 88)?, r.u64(at + 96)?);
        at += RECORD;
        // The counts are checked against the bytes left before anything is read by them.
        let n = writes.checked_add(reads)?;
        let bytes = (n as usize).checked_mul(stride)?;
        if n > (r.b.len() / stride) as u64 || at.checked_add(bytes)? > r.b.len() {
            return None;
        }
        for k in 0..n as usize {
            let s = at + k * stride;
            out.push(Segment {
                rank,
                file,
                write: (k as u64) < writes,
                offset: r.u64(s)? as i64,
                length: r.u64(s + 8)? as i64,
                start: r.f64(s + 16)?,
                end: r.f64(s + 24)?,
            });
        }
        at += bytes;
    }
    Some(out)
}

/// Opens a Darshan log's DXT traces.
pub fn open(input: &str, path: &Path, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let bytes = crate::read_all(input, path, MAX_BYTES)?;
    let big = bytes.get(8..16).is_some_and(|m| u64::from_be_bytes(m.try_into().unwrap_or([0; 8])) == MAGIC);
    let b = Bytes { b: &bytes, big };
    let h = header(input, &b)?;
    let mut repairs = Repairs::default();
    let names_bytes = region(input, &bytes, h.names, h.compression, "file names")?;
    let files = names(&Bytes { b: &names_bytes, big }, h.minor);
    let job = region(input, &bytes, h.job, h.compression, "job record")?;
    let job = Bytes { b: &job, big };
    // The job's processes (uid, start, end, then nprocs, in every 3.x job record but 3.41's,
    // which has nanoseconds after each time).
    let nprocs = job.u64(if h.minor >= 41 { 40 } else { 24 }).unwrap_or(0);
    let mut found = Vec::new();
    for (m, module) in DXT {
        let Some(&(map, version)) = h.modules.get(m) else { continue };
        if map.1 == 0 {
            continue;
        }
        let r = region(input, &bytes, map, h.compression, &format!("{module} DXT records"))?;
        let r = Bytes { b: &r, big };
        // Segments carry the thread after their times from DXT_POSIX 2 and DXT_MPIIO 3 on; logs
        // that say so without it exist, so the stride that fills the records exactly is taken.
        let newer = (m == 10 && version >= 2) || (m == 11 && version >= 3);
        let strides = if newer { [40, 32] } else { [32, 40] };
        let segs = strides.iter().find_map(|&s| segments(&r, s)).ok_or_else(|| {
            SourceError::invalid(input, format!("its {module} DXT records are damaged (they do not fill their region)"))
        })?;
        found.push((module, segs));
    }
    progress(bytes.len() as u64 / 2, bytes.len() as u64);
    if found.is_empty() {
        return Err(SourceError::invalid(
            input,
            "is a Darshan log without DXT traces (its counters only): exaviz draws DXT's I/O segments (DXT_ENABLE_IO_TRACE=1 when the job runs)",
        ));
    }
    let trace = build(input, &found, &files, nprocs, &mut repairs)?;
    progress(bytes.len() as u64, bytes.len() as u64);
    let warnings = repairs.lines(input);
    Ok(Dataset { name: input.to_string(), trace, warnings, ..Default::default() })
}

/// A file's name as its regions show it: its base name, or its whole path where two files share
/// one.
fn file_names(files: &HashMap<u64, String>, used: &[u64]) -> HashMap<u64, String> {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut count: HashMap<String, usize> = HashMap::new();
    for id in used {
        if let Some(p) = files.get(id) {
            *count.entry(base(p)).or_default() += 1;
        }
    }
    used.iter()
        .map(|&id| {
            let name = match files.get(&id) {
                Some(p) if count.get(&base(p)) == Some(&1) => base(p),
                Some(p) => p.clone(),
                None => format!("file {id:016x}"),
            };
            (id, name)
        })
        .collect()
}

fn build(
    input: &str,
    found: &[(&str, Vec<Segment>)],
    files: &HashMap<u64, String>,
    nprocs: u64,
    repairs: &mut Repairs,
) -> Result<exaviz_model::Trace, SourceError> {
    let mut used: Vec<u64> = found.iter().flat_map(|(_, s)| s.iter().map(|x| x.file)).collect();
    used.sort_unstable();
    used.dedup();
    let shown = file_names(files, &used);
    for id in &used {
        if !files.contains_key(id) {
            repairs.add("files without a name in the log named by their record id", || format!("{id:016x}"));
        }
    }
    // Rows by rank, then module in the header's order.
    let mut rows: Vec<(i64, usize)> =
        found.iter().enumerate().flat_map(|(m, (_, s))| s.iter().map(move |x| (x.rank, m))).collect();
    rows.sort_unstable();
    rows.dedup();
    let row_of: HashMap<(i64, usize), u32> = rows.iter().enumerate().map(|(k, &r)| (r, k as u32)).collect();
    let mut events = EventTable { ticks_per_second: 1_000_000_000, ..Default::default() };
    events.location_names = rows
        .iter()
        .map(|&(rank, m)| {
            let who = if rank < 0 { "shared".to_string() } else { format!("rank {rank}") };
            format!("{who} / {}", found[m].0)
        })
        .collect();
    let mut region_of: HashMap<(bool, u64), u32> = HashMap::new();
    let mut samples: Vec<(u32, u64, u32, f64)> = Vec::new();
    for (m, (_, segs)) in found.iter().enumerate() {
        for s in segs {
            if !(s.start.is_finite() && s.end.is_finite() && s.start >= 0.0 && s.end >= s.start && s.length >= 0) {
                repairs.add("segments with impossible times or lengths skipped", || {
                    format!("rank {} at {} s", s.rank, s.start)
                });
                continue;
            }
            if nprocs > 0 && s.rank >= nprocs as i64 {
                repairs.add("segments of ranks beyond the job's processes kept", || format!("rank {}", s.rank));
            }
            let row = row_of[&(s.rank, m)];
            let next = events.names.len() as u32;
            let region = *region_of.entry((s.write, s.file)).or_insert(next);
            if region == next {
                let op = if s.write { "write" } else { "read" };
                events.names.push(format!("{op} {}", shown[&s.file]));
            }
            let ns = |t: f64| (t * 1e9).round().min(u64::MAX as f64) as u64;
            events.push(row, ns(s.start), EventKind::Enter, region);
            events.push(row, ns(s.end), EventKind::Leave, region);
            samples.push((row, ns(s.start), u32::from(!s.write), s.length as f64));
            samples.push((row, ns(s.start), 2 + u32::from(!s.write), s.offset as f64));
        }
    }
    if events.time.is_empty() {
        return Err(SourceError::invalid(input, "is a Darshan log whose DXT traces hold no I/O segment"));
    }
    let mut t = crate::events::trace_of(&events, repairs);
    samples.sort_by_key(|x| (x.0, x.1));
    t.metric_names = vec!["write bytes".into(), "read bytes".into(), "write offset".into(), "read offset".into()];
    t.metric_units = vec!["B".into(); 4];
    t.metric_accumulated = vec![false; 4];
    for (l, time, metric, value) in samples {
        t.metrics.location.push(l);
        t.metrics.time.push(time);
        t.metrics.metric.push(metric);
        t.metrics.value.push(value);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian 3.21 log: a header of 16 modules, the job, the names and DXT_POSIX's
    /// records (version 2, segments of 32 bytes), each region its own zlib streams (the records
    /// as two, as two processes write them).
    fn log(minor_41: bool) -> Vec<u8> {
        log_with(minor_41, false)
    }

    fn log_with(minor_41: bool, bz: bool) -> Vec<u8> {
        use std::io::Write;
        let z = |b: &[u8]| {
            if bz {
                let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
                e.write_all(b).unwrap();
                return e.finish().unwrap();
            }
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(b).unwrap();
            e.finish().unwrap()
        };
        let mut job = Vec::new();
        for v in [1000i64, 1_600_000_000, 1_600_000_010, 2, 77] {
            job.extend(v.to_le_bytes());
        }
        job.resize(job.len() + 1024, 0);
        let mut names = Vec::new();
        for (id, n) in [(7u64, "/scratch/a/out.dat"), (9, "/scratch/b/out.dat"), (11, "/scratch/in.dat")] {
            names.extend(id.to_le_bytes());
            names.extend(n.as_bytes());
            names.push(0);
        }
        let record = |file: u64, rank: i64, segs: &[(i64, i64, f64, f64)], writes: i64| {
            let mut r = Vec::new();
            r.extend(file.to_le_bytes());
            r.extend(rank.to_le_bytes());
            r.extend(0i64.to_le_bytes());
            r.extend([0u8; 64]);
            r.extend(writes.to_le_bytes());
            r.extend((segs.len() as i64 - writes).to_le_bytes());
            for &(o, l, s, e) in segs {
                r.extend(o.to_le_bytes());
                r.extend(l.to_le_bytes());
                r.extend(s.to_le_bytes());
                r.extend(e.to_le_bytes());
            }
            r
        };
        let r0 = record(7, 0, &[(0, 4096, 0.5, 1.0), (4096, 4096, 1.5, 2.0), (0, 4096, 3.0, 3.25)], 2);
        let r1 = [record(9, 1, &[(0, 100, 0.25, 0.75)], 1), record(11, 1, &[(0, 8, 4.0, 4.5)], 0)].concat();
        let dxt = [z(&r0), z(&r1)].concat();
        let (head_len, names_at, mods) = if minor_41 { (1328, 32, 64) } else { (360, 24, 16) };
        let mut head = vec![0u8; head_len];
        head[..4].copy_from_slice(if minor_41 { b"3.41" } else { b"3.21" });
        head[8..16].copy_from_slice(&MAGIC.to_le_bytes());
        head[16] = u8::from(bz);
        let (job, names) = (z(&job), z(&names));
        let put = |h: &mut Vec<u8>, at: usize, off: usize, len: usize| {
            h[at..at + 8].copy_from_slice(&(off as u64).to_le_bytes());
            h[at + 8..at + 16].copy_from_slice(&(len as u64).to_le_bytes());
        };
        let names_off = head_len + job.len();
        put(&mut head, names_at, names_off, names.len());
        put(&mut head, names_at + 16 + 16 * 10, names_off + names.len(), dxt.len());
        head[names_at + 16 + 16 * mods + 40..][..4].copy_from_slice(&2u32.to_le_bytes());
        [head, job, names, dxt].concat()
    }

    fn opened(bytes: &[u8], name: &str) -> Result<Dataset, SourceError> {
        let dir = std::env::temp_dir().join(format!("exaviz-darshan-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.darshan");
        std::fs::write(&path, bytes).unwrap();
        let d = open("t.darshan", &path, &|_, _| {});
        std::fs::remove_dir_all(&dir).unwrap();
        d
    }

    /// Each rank's segments are intervals on its POSIX row named by operation and file (the
    /// whole path where two files share a name), their lengths counter samples, times in ns;
    /// the same from a 3.41 header and from bzip2 streams.
    #[test]
    fn dxt_segments_are_intervals_per_rank_and_file() {
        for (minor_41, bz) in [(false, false), (true, false), (false, true)] {
            let bytes = log_with(minor_41, bz);
            assert!(looks_like(&bytes));
            let d = opened(&bytes, &format!("log{minor_41}{bz}")).unwrap();
            let t = &d.trace;
            assert_eq!(t.locations.name, ["rank 0 / POSIX", "rank 1 / POSIX"]);
            let rows = crate::events::interval_rows(t);
            assert_eq!(
                rows,
                vec![
                    (0, 500_000_000, 1_000_000_000, "write /scratch/a/out.dat", 0),
                    (0, 1_500_000_000, 2_000_000_000, "write /scratch/a/out.dat", 0),
                    (0, 3_000_000_000, 3_250_000_000, "read /scratch/a/out.dat", 0),
                    (1, 250_000_000, 750_000_000, "write /scratch/b/out.dat", 0),
                    (1, 4_000_000_000, 4_500_000_000, "read in.dat", 0),
                ]
            );
            // Lengths (write bytes, read bytes) and offsets (write offset, read offset).
            let of = |metrics: [u32; 2]| -> (Vec<f64>, Vec<u32>) {
                let m = &t.metrics;
                (0..m.time.len()).filter(|&k| metrics.contains(&m.metric[k])).map(|k| (m.value[k], m.metric[k])).unzip()
            };
            assert_eq!(of([0, 1]), (vec![4096.0, 4096.0, 4096.0, 100.0, 8.0], vec![0, 0, 1, 0, 1]));
            assert_eq!(of([2, 3]), (vec![0.0, 4096.0, 0.0, 0.0, 0.0], vec![2, 2, 3, 2, 3]));
            assert_eq!(t.metric_names[2..], ["write offset", "read offset"]);
            assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        }
    }

    /// Every mutation of a log gives a trace or one line naming the file, never a panic.
    #[test]
    fn mutated_logs_give_a_trace_or_one_line() {
        let bytes = log(false);
        let results: Vec<_> = crate::fuzz::mutations(&bytes, 300, 11)
            .iter()
            .enumerate()
            .map(|(k, m)| opened(m, &format!("m{k}")))
            .collect();
        let (ok, refused) = crate::fuzz::tally("t.darshan", results);
        assert!(ok > 20 && refused > 100, "{ok} opened, {refused} refused");
        // Foreign and older logs: one line each.
        let mut old = bytes.clone();
        old[..4].copy_from_slice(b"2.06");
        let e = opened(&old, "old").unwrap_err().to_string();
        assert!(e.contains("Darshan 2.06 log"), "{e}");
        let mut odd = bytes;
        odd[16] = 7;
        let e = opened(&odd, "codec").unwrap_err().to_string();
        assert!(e.contains("compression exaviz does not know (7)"), "{e}");
    }
}
