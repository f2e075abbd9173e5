//! The store kept beside a run of profiles too large to read into memory: `RUN.exaviz-store/`.
//! Opening such a run (`exaviz view RUN`, `exaviz info RUN`) converts it once, a file at a
//! time ([`exaviz_formats::run_stream`]), and opens the store, which views read by time window;
//! opening it again opens the store, as long as the run's files (names, sizes, modification
//! times) and the exaviz version are those it was converted from (`exaviz-kept.json` inside
//! it); else it is converted again. `EXAVIZ_INDEX_CACHE=off` (as for kept indexes) keeps none
//! and reads the run into memory.

use std::path::{Path, PathBuf};

use exaviz_model::dataset::Dataset;
use exaviz_model::source::SourceError;

/// What a kept store's folder name adds to its run's folder name.
pub const SUFFIX: &str = ".exaviz-store";
/// The file inside a kept store naming what it was converted from.
const KEPT: &str = "exaviz-kept.json";
/// The variable giving the size of a run (bytes of its trace files) above which it is kept as a
/// store; 2 GiB by default (a run read into memory takes about 0.7 times its JSON).
pub const ABOVE: &str = "EXAVIZ_STORE_ABOVE";
const DEFAULT_ABOVE: u64 = 2 << 30;

/// The run's files as a kept store records them: name, size, modification time.
fn fingerprint(files: &[PathBuf]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = files
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok();
            let modified = m
                .as_ref()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as u64);
            serde_json::json!([p.display().to_string(), m.map_or(0, |m| m.len()), modified])
        })
        .collect();
    serde_json::json!({"version": env!("CARGO_PKG_VERSION"), "files": rows})
}

/// The store kept for `input`, if it is a run's folder larger than the threshold: opened from
/// the kept store (converted first where there is none or it is stale), with `progress` in
/// bytes of the run. `None` where the run is read into memory.
pub fn open(input: &str, progress: &dyn Fn(u64, u64)) -> Option<Result<Dataset, SourceError>> {
    if std::env::var(exaviz_store::sidecar::SWITCH).is_ok_and(|v| v.eq_ignore_ascii_case("off")) {
        return None;
    }
    let above = std::env::var(ABOVE).ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_ABOVE);
    open_above(input, above, progress)
}

/// Whether a file can be made in `dir` (a run on a read-only file system is read into memory).
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".exaviz-probe-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// [`open`] with the threshold in bytes.
fn open_above(input: &str, above: u64, progress: &dyn Fn(u64, u64)) -> Option<Result<Dataset, SourceError>> {
    let dir = Path::new(input);
    if !dir.is_dir() || exaviz_store::is_store(dir) {
        return None;
    }
    let probe = exaviz_formats::Probe::new(input, dir, None);
    if exaviz_formats::detect(&probe).is_none_or(|f| f.name != "profiles") {
        return None;
    }
    let files = exaviz_formats::dnn::files_in(dir);
    let bytes: u64 = files.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum();
    if bytes <= above {
        return None;
    }
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let store = dir.with_file_name(format!("{name}{SUFFIX}"));
    let print = fingerprint(&files);
    let fresh = std::fs::read(store.join(KEPT))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|kept| kept == print);
    let mut warnings = Vec::new();
    if !fresh {
        let parent = store.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if (store.exists() && !exaviz_store::is_store(&store)) || !writable(parent) {
            return None;
        }
        if let Err(e) = exaviz_formats::run_stream::convert(input, dir, false, &store, progress) {
            return Some(Err(e));
        }
        let kept = store.join(KEPT);
        if let Err(e) = std::fs::write(&kept, print.to_string()) {
            warnings.push(format!("{}: {e}; the store is converted again next time", kept.display()));
        }
    }
    Some(exaviz_store::open(&store, &|_, _| {}).map(|mut d| {
        d.name = input.to_string();
        d.warnings.insert(
            0,
            format!(
                "{input}: {} MB of profiles, opened from the store kept beside it ({})",
                bytes / 1_000_000,
                store.display()
            ),
        );
        d.warnings.extend(warnings);
        d
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run above the threshold converts once into the store beside it and opens from it; the
    /// store is reused while the run's files are unchanged and converted again when one changes;
    /// a run below the threshold is read into memory.
    #[test]
    fn a_large_run_opens_from_the_store_kept_beside_it() {
        let Some(real) = exaviz_model::testing::shared_data("kineto-dlrm-8gpu") else { return };
        let dir = std::env::temp_dir().join(format!("exaviz-kept-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let run = dir.join("run");
        std::fs::create_dir_all(&run).unwrap();
        for f in exaviz_formats::dnn::files_in(&real) {
            std::fs::copy(&f, run.join(f.file_name().unwrap())).unwrap();
        }
        let input = run.to_str().unwrap();
        assert!(open_above(input, u64::MAX, &|_, _| {}).is_none(), "below the threshold: read into memory");
        let memory = crate::read(input, &|_, _| {}).unwrap();
        let d = open_above(input, 1, &|_, _| {}).unwrap().unwrap();
        let store = dir.join("run.exaviz-store");
        assert!(exaviz_store::is_store(&store) && store.join(KEPT).is_file());
        assert!(d.warnings[0].contains("opened from the store kept beside it"), "{:?}", d.warnings);
        assert_eq!(d.summary().intervals, memory.summary().intervals);
        assert_eq!(d.training.as_ref().unwrap().ops.len(), memory.training.as_ref().unwrap().ops.len());
        let written = std::fs::metadata(store.join(exaviz_store::MANIFEST)).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        open_above(input, 1, &|_, _| {}).unwrap().unwrap();
        let again = std::fs::metadata(store.join(exaviz_store::MANIFEST)).unwrap().modified().unwrap();
        assert_eq!(written, again, "unchanged files: the kept store is read, not written");
        // A rank's file cut short: converted again, without it.
        let first = exaviz_formats::dnn::files_in(&run).remove(0);
        let bytes = std::fs::read(&first).unwrap();
        std::fs::write(&first, &bytes[..bytes.len() / 2]).unwrap();
        let d = open_above(input, 1, &|_, _| {}).unwrap().unwrap();
        assert_eq!(d.training.as_ref().unwrap().devices.len(), 7);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
