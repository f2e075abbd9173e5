//! The index of a trace file kept beside it: `INPUT.exaviz-index/`, a store that holds only the
//! pyramid summed when the file was first opened ([`exaviz_model::held_index::index`]), so that
//! opening the file again reads the index instead of summing it.
//!
//! The index records digests of the trace it was summed from (every message and interval as
//! read) and of its own cells, and the exaviz version and pyramid layout that summed it. An
//! index whose trace, cells or version differ from the file's, or that cannot be read, is named
//! in one warning line, summed again and replaced; a file that is not such an index is left
//! alone. It is written under a temporary name and renamed into place when complete.
//! `EXAVIZ_INDEX_CACHE=off` neither reads nor writes one.

use std::path::{Path, PathBuf};

use exaviz_model::dataset::Dataset;
use exaviz_model::held_index::{PyramidSpan, index_with, set_index};
use exaviz_model::pyramid::Pyramid;
use exaviz_model::source::SourceError;
use rayon::prelude::*;

use crate::{IndexOf, MANIFEST, StoreWriter};

/// What a kept index's folder name adds to its trace file's name.
pub const SUFFIX: &str = ".exaviz-index";
/// The environment variable that turns kept indexes off (`off`).
pub const SWITCH: &str = "EXAVIZ_INDEX_CACHE";
/// The pyramid layout: raised whenever summing changes what a cell holds, so that indexes
/// summed before are summed again.
const LAYOUT: u32 = 3;
/// An index is kept where the trace has at least this many rows (messages and intervals) per
/// cell of its pyramid that is not zero. Measured, release build: FD4 at 22M messages, 6.3 rows
/// per cell, reads its pyramid in about 0.35 s and sums it in 0.97 s; 64 training devices'
/// Kineto files, 4.0 rows per cell, 114 ms and 126 ms; 2,048 devices, 0.4 rows per cell, 0.9 s
/// and 0.5 s. Below 5 the gain would not repay the write.
const ROWS_PER_CELL: u64 = 5;

/// How [`attach`] came by a trace's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Came {
    /// Read from the index kept beside the input.
    Read,
    /// Summed, and kept beside the input.
    SummedAndKept,
    /// Summed, and not kept (none is kept for this input, or it could not be written).
    Summed,
    /// The trace needs no index.
    NoIndex,
}

/// Gives `d`, read from `input`, its index ([`set_index`]): read from the index kept
/// beside the input where it is the index of this very trace, else summed and kept there. What
/// went wrong with a kept index goes into `d.warnings` in one line.
pub fn attach(input: &str, d: &mut Dataset) -> Came {
    let Some(span) = PyramidSpan::of_index(d) else {
        set_index(d, None);
        return Came::NoIndex;
    };
    let Some(path) = path_for(input) else {
        set_index(d, Some(index_with(d, span, None)));
        return Came::Summed;
    };
    if path.exists() && !is_kept_index(&path) {
        d.warnings.push(format!("{}: is not an exaviz index; the index is not kept", path.display()));
        set_index(d, Some(index_with(d, span, None)));
        return Came::Summed;
    }
    let trace = hex(trace_digest(d));
    let kept = match read(&path, span, &trace) {
        Ok(p) => p,
        Err(e) => {
            d.warnings.push(format!("{e}; the index is summed again"));
            None
        }
    };
    let fresh = kept.is_none();
    set_index(d, Some(index_with(d, span, kept)));
    let index = d.index.as_ref().expect("just set");
    if !fresh {
        return Came::Read;
    }
    if index.messages + index.intervals < ROWS_PER_CELL * cells(&index.pyramid) {
        // Read back, it would take longer than summing it does: none is kept (and a stale one
        // goes).
        if path.exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
        return Came::Summed;
    }
    let of = IndexOf {
        input: input_name(input),
        summed_by: summed_by(),
        trace,
        pyramid: hex(pyramid_digest(&index.pyramid)),
    };
    match StoreWriter::write_index(&path, span, &index.pyramid, of) {
        Ok(()) => Came::SummedAndKept,
        Err(e) => {
            d.warnings.push(format!("{e}; the index is not kept ({SWITCH}=off keeps none)"));
            Came::Summed
        }
    }
}

/// Where the index of `input` is kept: `INPUT.exaviz-index` beside a file or folder that exists;
/// `None` for a generator, a store (which keeps its own pyramid), a list of files, or with
/// [`SWITCH`] `off`.
pub fn path_for(input: &str) -> Option<PathBuf> {
    // Generators, and stores on a server (`grpc://`, `ssh://`: nothing is written beside them).
    if input.starts_with("gen:")
        || input.contains("://")
        || std::env::var(SWITCH).is_ok_and(|v| v.eq_ignore_ascii_case("off"))
    {
        return None;
    }
    let path = Path::new(input);
    if !path.exists() || crate::is_store(path) {
        return None;
    }
    let name = path.file_name()?;
    let mut kept = name.to_os_string();
    kept.push(SUFFIX);
    Some(path.with_file_name(kept))
}

/// The pyramid kept beside `input` for trace `d` ([`read`]); `Ok(None)` where none is.
pub fn kept(input: &str, d: &Dataset) -> Result<Option<Pyramid>, SourceError> {
    let (Some(span), Some(path)) = (PyramidSpan::of_index(d), path_for(input)) else { return Ok(None) };
    read(&path, span, &hex(trace_digest(d)))
}

/// Whether `path` holds a kept index, damaged or not: a store whose manifest says so, or a
/// folder of nothing but a manifest and pyramid tables.
fn is_kept_index(path: &Path) -> bool {
    if crate::manifest(path).is_ok_and(|m| m.index_of.is_some()) {
        return true;
    }
    let ours = [
        MANIFEST,
        "pyramid_messages.parquet",
        "pyramid_states.parquet",
        "pyramid_lines.parquet",
        "pyramid_locations.parquet",
        "pyramid_pairs.parquet",
    ];
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    let names: Vec<_> = entries.map(|e| e.map(|e| e.file_name())).collect();
    names.iter().any(|n| n.as_ref().is_ok_and(|n| n == MANIFEST))
        && names.iter().all(|n| n.as_ref().is_ok_and(|n| ours.iter().any(|o| n == *o)))
}

/// The pyramid kept at `path` where it is the index of the trace whose digest is `trace` over
/// `span`; `Ok(None)` where none is kept; an error naming the file where it is stale, damaged or
/// not an index.
pub fn read(path: &Path, span: PyramidSpan, trace: &str) -> Result<Option<Pyramid>, SourceError> {
    if !path.exists() {
        return Ok(None);
    }
    let manifest = path.join(MANIFEST);
    let m = crate::manifest(path)?;
    let Some(of) = &m.index_of else {
        return Err(SourceError::invalid(path.display().to_string(), "is a store, not a kept index"));
    };
    let stale = |why: &str| Err(SourceError::invalid(manifest.display().to_string(), why));
    if of.summed_by != summed_by() {
        return stale("an index summed by another exaviz version");
    }
    if of.trace != trace || m.pyramid != Some(span) {
        return stale("the index of another version of the trace (the file changed)");
    }
    let Some(p) = crate::pyramid(path)? else {
        return stale("holds no pyramid");
    };
    if hex(pyramid_digest(&p)) != of.pyramid {
        return Err(SourceError::invalid(
            path.display().to_string(),
            "cells differ from those summed (a damaged file)",
        ));
    }
    Ok(Some(p))
}

fn input_name(input: &str) -> String {
    Path::new(input).file_name().map_or_else(|| input.to_string(), |n| n.to_string_lossy().into_owned())
}

fn summed_by() -> String {
    format!("exaviz {} pyramid layout {LAYOUT}", env!("CARGO_PKG_VERSION"))
}

fn hex(x: u64) -> String {
    format!("{x:016x}")
}

fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

/// A digest of `v`'s values in order (not for security: it tells a changed file from the one
/// summed), over blocks in parallel, four lanes per block.
fn column<T: Copy + Into<u64> + Sync>(v: &[T]) -> u64 {
    let blocks: Vec<u64> = v
        .par_chunks(1 << 16)
        .map(|c| {
            let mut lanes = [1u64, 2, 3, 4];
            let mut quads = c.chunks_exact(4);
            for q in &mut quads {
                for (l, &x) in lanes.iter_mut().zip(q) {
                    *l = mix(*l, x.into());
                }
            }
            let h = lanes.iter().fold(c.len() as u64, |h, &l| mix(h, l));
            quads.remainder().iter().fold(h, |h, &x| mix(h, x.into()))
        })
        .collect();
    blocks.iter().fold(v.len() as u64, |h, &b| mix(h, b))
}

/// Digest of every message and interval of `d`'s trace and of its rank and state counts.
pub fn trace_digest(d: &Dataset) -> u64 {
    let (m, v) = (&d.trace.messages, &d.trace.intervals);
    let parts = [
        column(&m.source),
        column(&m.destination),
        column(&m.send_time),
        column(&m.recv_time),
        column(&m.bytes),
        column(&m.tag),
        column(&v.location),
        column(&v.start),
        column(&v.end),
        column(&v.kind),
        column(&v.depth),
        d.trace.locations.name.len() as u64,
        d.trace.region_names.len() as u64,
    ];
    parts.iter().fold(0, |h, &x| mix(h, x))
}

/// How many of `p`'s cells are not zero: what a kept index holds.
pub fn cells(p: &Pyramid) -> u64 {
    let nonzero = |v: &Vec<u64>| v.par_iter().filter(|&&x| x != 0).count() as u64;
    let levels: u64 = p.levels.iter().map(|l| nonzero(&l.counts) + nonzero(&l.ticks)).sum();
    levels
        + p.lines
            .as_ref()
            .map_or(0, |l| l.counts.par_iter().zip(&l.gradient).filter(|(c, g)| **c != 0 || **g != 0).count() as u64)
}

/// Digest of every cell of `p`.
pub fn pyramid_digest(p: &Pyramid) -> u64 {
    let mut h = 0;
    for l in &p.levels {
        for x in [column(&l.counts), column(&l.bytes), column(&l.ticks)] {
            h = mix(h, x);
        }
    }
    if let Some(lines) = &p.lines {
        h = mix(mix(h, column(&lines.counts)), column(&lines.gradient));
    }
    if let Some(tiles) = &p.locations {
        h = mix(h, column(&tiles.ticks));
    }
    if let Some(t) = &p.pairs {
        h = mix(h, u64::from(t.bins));
        for x in [column(&t.source), column(&t.destination), column(&t.bin), column(&t.count), column(&t.bytes)] {
            h = mix(h, x);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of just over the rows that get an index, and an input file beside which its
    /// index is kept (what the file holds is not read here).
    fn trace(name: &str) -> (PathBuf, String, Dataset) {
        trace_of(name, "gen:fd4?ranks=16&messages=1100000")
    }

    fn trace_of(name: &str, spec: &str) -> (PathBuf, String, Dataset) {
        let dir = crate::tests::temp(&format!("sidecar-{name}"));
        let input = dir.join("run.json");
        std::fs::write(&input, b"{}").unwrap();
        let d = exaviz_gen::generate(spec).unwrap();
        assert!(d.index.is_none() && PyramidSpan::of_index(&d).is_some());
        (dir, input.display().to_string(), d)
    }

    fn pyramid(d: &Dataset) -> &Pyramid {
        &d.index.as_ref().expect("an index").pyramid
    }

    #[test]
    fn a_kept_index_is_read_back_the_next_time_and_summed_again_when_the_trace_changed() {
        let (dir, input, d) = trace("kept");
        let mut first = d.clone();
        assert_eq!(attach(&input, &mut first), Came::SummedAndKept);
        assert!(first.warnings.is_empty(), "{:?}", first.warnings);
        let kept = path_for(&input).unwrap();
        assert_eq!(kept, dir.join("run.json.exaviz-index"));
        assert!(is_kept_index(&kept));
        // Nothing is left under a temporary name.
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.len(), 2, "{names:?}");

        let mut again = d.clone();
        assert_eq!(attach(&input, &mut again), Came::Read);
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(pyramid(&again), pyramid(&first));
        assert_eq!(again.trace.state_ticks_of_whole, first.trace.state_ticks_of_whole);

        // One message more bytes: the kept index is another trace's, named in one line.
        let mut changed = d.clone();
        changed.trace.messages.bytes[12_345] += 1;
        assert_eq!(attach(&input, &mut changed), Came::SummedAndKept);
        assert_eq!(changed.warnings.len(), 1, "{:?}", changed.warnings);
        let w = &changed.warnings[0];
        assert!(w.contains("run.json.exaviz-index") && w.contains("the file changed") && !w.contains('\n'), "{w}");
        let fresh = exaviz_model::held_index::index(&changed).unwrap();
        assert_eq!(pyramid(&changed), &*fresh.pyramid);
        assert_ne!(pyramid(&changed), pyramid(&first));
        // ... and the index kept now is the changed trace's.
        let mut changed_again = changed.clone();
        changed_again.warnings.clear();
        assert_eq!(attach(&input, &mut changed_again), Came::Read);

        // A folder's index lies beside it, written with a trailing slash or not; a generator
        // has none.
        let beside = |d: &Path| {
            let mut name = d.file_name().unwrap().to_os_string();
            name.push(SUFFIX);
            d.with_file_name(name)
        };
        assert_eq!(path_for(&format!("{}/", dir.display())), Some(beside(&dir)));
        assert_eq!(path_for(&dir.display().to_string()), Some(beside(&dir)));
        assert_eq!(path_for("gen:fd4"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Where reading an index back would take longer than summing it, none is kept, and one
    /// kept before goes.
    #[test]
    fn the_index_of_a_trace_of_few_rows_per_cell_is_not_kept() {
        let (dir, input, d) = trace_of("few", "gen:fd4?ranks=1024&messages=1100000");
        let mut first = d.clone();
        let rows = first.trace.messages.source.len() + first.trace.intervals.start.len();
        let kept = path_for(&input).unwrap();
        let (span, digest) = (PyramidSpan::of_index(&d).unwrap(), hex(trace_digest(&d)));
        let p = exaviz_model::held_index::index(&d).unwrap().pyramid;
        assert!((rows as u64) < ROWS_PER_CELL * cells(&p), "{rows} rows, {} cells", cells(&p));
        let of =
            IndexOf { input: "run.json".into(), summed_by: summed_by(), trace: digest.clone(), pyramid: "0".into() };
        StoreWriter::write_index(&kept, span, &p, of).unwrap();
        assert!(read(&kept, span, &digest).is_err(), "a pyramid digest of 0 read");
        assert_eq!(attach(&input, &mut first), Came::Summed);
        assert_eq!(first.warnings.len(), 1, "{:?}", first.warnings);
        assert!(!kept.exists());
        assert_eq!(pyramid(&first), &*p);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_there_that_is_no_kept_index_is_left_alone() {
        let (dir, input, d) = trace("foreign");
        let kept = path_for(&input).unwrap();
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join("notes.txt"), b"mine").unwrap();
        let mut d = d.clone();
        assert_eq!(attach(&input, &mut d), Came::Summed);
        assert!(d.index.is_some());
        assert_eq!(std::fs::read(kept.join("notes.txt")).unwrap(), b"mine");
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        assert!(d.warnings[0].contains("run.json.exaviz-index"), "{:?}", d.warnings);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every file of a kept index damaged byte by byte and cut short: reading it gives either
    /// the very pyramid kept or one line naming a file, never a panic and never other cells.
    #[test]
    fn a_damaged_kept_index_is_refused_in_one_line_or_read_whole() {
        let (dir, input, mut d) = trace("fuzz");
        assert_eq!(attach(&input, &mut d), Came::SummedAndKept);
        let (span, digest) = (PyramidSpan::of_index(&d).unwrap(), hex(trace_digest(&d)));
        let kept = path_for(&input).unwrap();
        let want = pyramid(&d).clone();
        assert_eq!(read(&kept, span, &digest).unwrap().as_ref(), Some(&want));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&kept).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert_eq!(files.len(), 6, "{files:?}");
        let (mut refused, mut read_whole) = (0, 0);
        for file in &files {
            let original = std::fs::read(file).unwrap();
            let n = original.len();
            let cases = crate::tests::mutations(&original, (n / 40).max(1), &[0, n / 3, n - 1]);
            for case in cases {
                std::fs::write(file, &case).unwrap();
                match read(&kept, span, &digest) {
                    Ok(Some(p)) => {
                        assert!(p == want, "{}: other cells read", file.display());
                        read_whole += 1;
                    }
                    Ok(None) => panic!("{}: a damaged index read as none", file.display()),
                    Err(e) => {
                        let line = e.to_string();
                        assert!(!line.contains('\n') && line.contains("exaviz-index"), "{line}");
                        refused += 1;
                    }
                }
            }
            std::fs::write(file, &original).unwrap();
        }
        assert!(refused > 100, "{refused} refused, {read_whole} read whole");
        // A damaged index is summed again and replaced, with one warning line: a byte of a table
        // changed, then the manifest cut short.
        type Damage = fn(&mut Vec<u8>);
        let damage: [(&str, Damage); 2] = [
            ("pyramid_states.parquet", |b| {
                let at = b.len() / 2;
                b[at] ^= 0x5a;
            }),
            (MANIFEST, |b| b.truncate(b.len() / 2)),
        ];
        for (name, damage) in damage {
            let file = kept.join(name);
            let mut bytes = std::fs::read(&file).unwrap();
            damage(&mut bytes);
            std::fs::write(&file, &bytes).unwrap();
            let mut again = d.clone();
            again.index = None;
            again.warnings.clear();
            assert_eq!(attach(&input, &mut again), Came::SummedAndKept, "{name}");
            assert_eq!(again.warnings.len(), 1, "{name}: {:?}", again.warnings);
            assert_eq!(pyramid(&again), &want);
            assert!(crate::manifest(&kept).unwrap().index_of.is_some());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
