//! Sources for exaviz: any input opens here, whatever gives it: a file or folder of a format
//! ([`exaviz_formats`], told from its content), a store ([`exaviz_store`]) or a generator
//! (`gen:NAME?k=v&...`, [`exaviz_gen`]); with the index kept beside a large trace and the store
//! kept beside a run too large to hold. [`convert`] writes any input into a store.
//!
//! Every source yields an [`exaviz_model::dataset::Dataset`]. Errors name the input and what is
//! wrong in one line; counts read from files never size an allocation before they are checked.
//! This crate only chooses and joins; the reading, writing and generating are in the crates
//! below it, none of which depends on the GPU or the window.

pub mod kept_store;

use std::path::Path;

use exaviz_formats as formats;
use exaviz_model::dataset::Dataset;
use exaviz_model::source::SourceError;
use exaviz_store as store;

/// Opens an input: a `gen:` generator spec or a path to a supported file.
pub fn open(input: &str) -> Result<Dataset, SourceError> {
    open_with_progress(input, &|_, _| {})
}

/// [`open`], calling `progress(done, total)` in bytes while reading formats that can tell
/// (OTF2 event files). A trace held in memory with more rows than a picture reads at once gets
/// its index ([`exaviz_model::held_index::index`]), so that views draw wide windows from it: a
/// file's index is kept beside it and read when the file is opened again ([`store::sidecar`]).
pub fn open_with_progress(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    // A run of profiles too large to hold opens from the store kept beside it.
    if let Some(kept) = kept_store::open(input, progress) {
        return kept;
    }
    let mut dataset = read(input, progress)?;
    let _ = store::sidecar::attach(input, &mut dataset);
    Ok(dataset)
}

/// The dataset of `input`, without an index: a generator's, or what [`exaviz_formats::read`]
/// reads.
fn read(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    if input.starts_with("gen:") {
        return exaviz_gen::generate(input);
    }
    formats::read(input, progress)
}

/// What `exaviz info --json` prints of a dataset (Python's `Trace.info()` too): its summary, a
/// training run's devices and stages, the operator graph beside a profile.
pub fn info_json(d: &Dataset) -> serde_json::Value {
    let training = d.training.as_deref().map(|t| {
        let stages = t.devices.iter().map(|d| d.stage).max().map_or(0, |s| s + 1);
        serde_json::json!({"devices": t.devices.len(), "stages": stages, "stages_from": t.stages_from, "source": t.source})
    });
    let graph = d.opgraph.as_deref().map(|g| {
        serde_json::json!({"source": g.source, "name": g.name, "operators": g.nodes.len(), "data_edges": g.edges.len()})
    });
    let mut v = serde_json::to_value(d.summary()).unwrap_or_default();
    if let Some(object) = v.as_object_mut() {
        object.insert("training".into(), training.unwrap_or(serde_json::Value::Null));
        object.insert("graph".into(), graph.unwrap_or(serde_json::Value::Null));
    }
    v
}

/// Writes any input into a store at `target` (through a temporary folder, renamed at the end),
/// reporting `progress(done, total)`: scaled generators stream iteration by iteration without
/// holding the trace; other inputs are read, then written.
pub fn convert(input: &str, target: &Path, progress: &dyn Fn(u64, u64)) -> Result<store::Manifest, SourceError> {
    if input.starts_with("gen:") {
        let (g, q) = exaviz_gen::parse(input)?;
        // Only the scaled FD4 generator streams; the others are made in memory, then written.
        if q.all_in(&["seed", "collectives", "ranks", "messages", "slow_rank"])
            && let Some(scale) = exaviz_gen::scaled(g.name, &q)?
        {
            let span = store::PyramidSpan {
                t0: 0,
                t1: scale.end_ticks(),
                ranks: scale.ranks,
                states: scale.skeleton("").trace.region_names.len() as u32,
            };
            let mut w = store::StoreWriter::create(target)?.with_pyramid(span);
            w.begin_messages()?;
            w.begin_intervals()?;
            w.begin_collectives()?;
            let mut done = 0u64;
            scale.generate(|chunk| {
                w.messages(&chunk.messages)?;
                w.intervals(&chunk.intervals)?;
                w.collectives(&chunk.collectives)?;
                done += chunk.messages.source.len() as u64;
                progress(done, scale.messages);
                Ok::<(), SourceError>(())
            })?;
            return w.finish(&scale.skeleton(input));
        }
    }
    // A format that streams converts a row group at a time, whatever the trace's size.
    let (path, query) = formats::with_query(input)?;
    if path.exists() && !store::is_store(path) {
        let probe = formats::Probe::new(input, path, query);
        if let Some(format) = formats::detect(&probe)
            && let Some(stream) = format.stream
        {
            formats::check_options(format, &probe)?;
            return stream(&probe, target, progress);
        }
    }
    let dataset = if store::is_store(path) {
        let d = store::open_with(path, progress, store::MAX_IN_MEMORY_ROWS)?;
        if d.out_of_core.is_some() {
            return Err(SourceError::invalid(
                input,
                "is a store too large to rewrite in memory; copy its folder to duplicate it",
            ));
        }
        d
    } else {
        read(input, progress)?
    };
    store::write(&dataset, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_errors_name_the_problem() {
        let e = open("gen:torus-sim?dims=4x4&colour=red").unwrap_err().to_string();
        assert_eq!(
            e,
            "gen:torus-sim?dims=4x4&colour=red: unknown option 'colour' for gen:torus-sim (expected dims, steps, seed)"
        );
        assert!(open("gen:nope").unwrap_err().to_string().contains("unknown generator 'nope'"));
        assert!(open("gen:torus?dims=4xq").unwrap_err().to_string().contains("dims"));
        assert!(open("gen:torus-sim?dims=1024x1024x1024").unwrap_err().to_string().contains("limit"));
        assert!(open("gen:torus-sim?steps=ten").unwrap_err().to_string().contains("not a whole number"));
        let e = open("gen:pf3d?dims=4x4&grid=4x4").unwrap_err().to_string();
        assert_eq!(e, "gen:pf3d?dims=4x4&grid=4x4: grid '4x4' must be three extents like 16x32x32");
        let e = open("gen:pf3d?dims=4x4&grid=4x4x4").unwrap_err().to_string();
        assert!(e.contains("grid 4x4x4 has 64 cubes"), "{e}");
        assert!(open("gen:pf3d?threads=0").unwrap_err().to_string().contains("threads=0"));
    }

    /// A folder without a run of profiles opens the one trace file it holds, and says so; with
    /// more, it names them to pass; with none, it says what it holds.
    #[test]
    fn folders_without_profiles_say_what_they_hold() {
        let dir = std::env::temp_dir().join(format!("exaviz-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("notes.txt"), "nothing").unwrap();
        let e = open(dir.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("nor any other input exaviz opens: it holds 1 file (notes.txt) and 1 folder"), "{e}");
        let paraver = "#Paraver (01/01/24 at 00:00):10:0:1:1(1:0)\n1:1:1:1:1:0:10:1\n";
        std::fs::write(dir.join("run.prv"), paraver).unwrap();
        let d = open(dir.to_str().unwrap()).unwrap();
        assert_eq!(d.trace.intervals.start.len(), 1);
        assert!(
            d.warnings[0].contains("holds one trace") && d.warnings[0].contains("run.prv (Paraver trace): opened it")
        );
        std::fs::write(dir.join("other.prv"), paraver).unwrap();
        let e = open(dir.to_str().unwrap()).unwrap_err().to_string();
        assert!(
            e.contains("holds no run of profiles, but 2 inputs exaviz opens: pass one of")
                && e.contains("run.prv (Paraver trace)")
                && e.contains("other.prv (Paraver trace)"),
            "{e}"
        );
        // Options of a format that takes none, and unknown ones, are named.
        let e = open(&format!("{}?depth=2", dir.join("run.prv").display())).unwrap_err().to_string();
        assert!(e.contains("a Paraver trace takes no options after '?'"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_is_an_io_error_naming_it() {
        let e = open("/nonexistent/trace.yaml").unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/trace.yaml: "), "{e}");
    }

    /// A scaled generator streamed into a store holds what the in-memory path generates:
    /// the same counts, rows and byte sums.
    #[test]
    fn convert_streams_a_scaled_generator_into_a_store() {
        let dir = std::env::temp_dir().join(format!("exaviz-convert-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = "gen:fd4?ranks=3000&messages=1e5&collectives=3";
        let target = dir.join("t.exaviz");
        let seen = std::cell::Cell::new((0, 0));
        let m = convert(spec, &target, &|d, t| seen.set((d, t))).unwrap();
        assert_eq!(seen.get(), (100_000, 100_000));
        assert_eq!(m.rows("messages"), 100_000);
        assert!(m.sorted.iter().all(|s| s.1), "{:?}", m.sorted);
        let memory = open(spec).unwrap();
        let stored = open(target.to_str().unwrap()).unwrap();
        assert_eq!(memory.summary(), stored.summary());
        let (a, b) = (&memory.trace, &stored.trace);
        assert_eq!(a.messages.send_time, b.messages.send_time);
        assert_eq!(
            a.messages.bytes.iter().map(|&v| u64::from(v)).sum::<u64>(),
            b.messages.bytes.iter().map(|&v| u64::from(v)).sum::<u64>()
        );
        assert_eq!(a.intervals.start, b.intervals.start);
        assert_eq!(a.collectives.location.len(), b.collectives.location.len());
        assert_eq!(a.collectives.location.len(), 3000 * 3, "iterations 3, 6 and 9 of 9");
        // The pyramid summed while streaming holds every message and every interval's ticks.
        let p = store::pyramid(&target).unwrap().expect("a pyramid");
        let top = p.levels.last().unwrap();
        assert_eq!(top.counts.iter().sum::<u64>(), 100_000);
        let ticks: u64 = a.intervals.start.iter().zip(&a.intervals.end).map(|(s, e)| e - s).sum();
        assert_eq!(top.ticks.iter().sum::<u64>(), ticks);
        // Non-scaled inputs go through memory; errors name the input.
        convert("gen:lulesh?iterations=2", &dir.join("l.exaviz"), &|_, _| {}).unwrap();
        let e = convert("gen:fd4?ranks=1e9", &dir.join("x.exaviz"), &|_, _| {}).unwrap_err().to_string();
        assert!(e.starts_with("gen:fd4?ranks=1e9: option ranks=1000000000 is above the limit"), "{e}");
        let e = convert("gen:fd4?ranks=64&plant=1", &dir.join("x.exaviz"), &|_, _| {}).unwrap_err().to_string();
        assert!(e.contains("plant does not go with ranks and messages"), "{e}");
        let e = open("gen:fd4?ranks=65536&messages=1e9").unwrap_err().to_string();
        assert!(e.contains("above the in-memory limit") && e.contains("exaviz convert"), "{e}");
        assert!(!dir.join("x.exaviz").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
