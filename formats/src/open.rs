//! How an input path opens: its options after `?`, the format that claims it (the first of
//! [`FORMATS`](crate::FORMATS)), and, for a folder that holds no run, the inputs below it to
//! pass instead.

use std::path::Path;

use exaviz_model::dataset::Dataset;
use exaviz_model::query::Query;
use exaviz_model::source::SourceError;

/// The first `limit` bytes of a file, decompressed where it is gzip (by its first bytes);
/// `None` where it cannot be opened or nothing could be read.
pub fn head_of(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    let mut magic = [0u8; 2];
    let mut f = std::io::BufReader::new(file);
    f.read_exact(&mut magic).ok()?;
    let rest = std::io::Cursor::new(magic).chain(f);
    let read = if magic == [0x1f, 0x8b] {
        flate2::read::MultiGzDecoder::new(rest).take(limit).read_to_end(&mut head)
    } else {
        rest.take(limit).read_to_end(&mut head)
    };
    (read.is_ok() || !head.is_empty()).then_some(head)
}

/// The dataset of `input`, without an index: a comma-separated list of one run's files, or a
/// file or folder opened by the first format of [`FORMATS`] that claims it.
pub fn read(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    let whole = Path::new(input);
    if input.contains(',') && !whole.exists() {
        let paths: Vec<std::path::PathBuf> = input.split(',').filter(|p| !p.is_empty()).map(Into::into).collect();
        return crate::dnn::open(input, &paths);
    }
    let (path, query) = with_query(input)?;
    if !path.exists() {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory (os error 2)");
        return Err(SourceError::Io { input: input.to_string(), source });
    }
    let probe = crate::Probe::new(input, path, query);
    let Some(format) = crate::detect(&probe) else {
        if let Err(source) = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut [0u8; 1])) {
            return Err(SourceError::Io { input: input.to_string(), source });
        }
        return Err(SourceError::invalid(
            input,
            format!("unrecognised format (exaviz reads: {}; or a gen: generator)", crate::titles()),
        ));
    };
    check_options(format, &probe)?;
    (format.open)(&probe, progress)
}

/// `PATH?key=value`: the path, and the options of the format at it.
pub fn with_query(input: &str) -> Result<(&Path, Option<Query>), SourceError> {
    let whole = Path::new(input);
    Ok(match input.rsplit_once('?') {
        Some((p, q)) if !whole.exists() && Path::new(p).exists() => (Path::new(p), Some(Query::parse(input, q)?)),
        _ => (whole, None),
    })
}

/// Whether the options given are the format's.
pub fn check_options(format: &crate::Format, probe: &crate::Probe) -> Result<(), SourceError> {
    if let Some(q) = &probe.query {
        let article = if format.title.starts_with(|c: char| c.is_uppercase()) { "a " } else { "" };
        let whose = format!("{article}{}", format.title);
        if format.options.is_empty() {
            return Err(q.invalid(format!("{whose} takes no options after '?'")));
        }
        q.only(format.options, &whose)?;
    }
    Ok(())
}

/// The `strict` option of a run's folder (`RUN?strict=1`): refuse the run where a file does
/// not read.
pub(crate) fn strict_option(input: &str, query: Option<&Query>) -> Result<bool, SourceError> {
    match query.and_then(|q| q.get("strict")) {
        None | Some("0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        Some(other) => Err(SourceError::invalid(input, format!("option strict={other} is not 1 or 0"))),
    }
}

/// `RUN?rank=N`: the rank whose execution trace is drawn, where a run holds one per rank.
pub(crate) fn rank_option(input: &str, query: Option<&Query>) -> Result<Option<u32>, SourceError> {
    match query.and_then(|q| q.get("rank")) {
        None => Ok(None),
        Some(r) => r
            .parse()
            .map(Some)
            .map_err(|_| SourceError::invalid(input, format!("option rank={r} is not a rank (a whole number from 0)"))),
    }
}

/// A folder of one run's profiles (Kineto ranks, a JAX log folder, execution traces); where it
/// holds none, what it holds instead: HLO modules, or inputs in its folders.
pub(crate) fn profile_dir(
    input: &str,
    path: &Path,
    query: Option<&Query>,
    progress: &dyn Fn(u64, u64),
) -> Result<Dataset, SourceError> {
    let strict = strict_option(input, query)?;
    let rank = rank_option(input, query)?;
    match crate::dnn::open_dir(input, path, strict, rank, progress) {
        Ok(d) => return Ok(d),
        Err(e) if !e.to_string().contains("holds no trace files") => return Err(e),
        Err(_) => {}
    }
    let modules = crate::hlo::modules_in(path);
    if let Some(first) = modules.first() {
        let hint = format!(
            "holds {} XLA HLO module(s), not a trace: pass one of them, e.g. {}",
            modules.len(),
            first.display()
        );
        return Err(SourceError::invalid(input, hint));
    }
    // A folder holding one trace file (beside its notes, licence, Paraver's .pcf and .row)
    // opens it, as the file itself would, and says so.
    if let Some((file, title)) = only_trace_in(path).filter(|_| query.is_none()) {
        let mut d = read(&file.display().to_string(), progress)?;
        d.warnings.insert(0, format!("{input}: holds one trace, {} ({title}): opened it", file.display()));
        return Ok(d);
    }
    Err(SourceError::invalid(input, inputs_below(path)))
}

/// The one trace file directly in `dir` with its format's title, where it holds exactly one and
/// no other input below it.
fn only_trace_in(dir: &Path) -> Option<(std::path::PathBuf, &'static str)> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).collect();
    entries.sort();
    let mut found = None;
    for sub in &entries {
        if sub.is_file() {
            let text = sub.display().to_string();
            let probe = crate::Probe::new(&text, sub, None);
            if let Some(f) = crate::detect(&probe).filter(|f| f.name != "profiles") {
                if found.is_some() {
                    return None;
                }
                found = Some((sub.clone(), f.title));
            }
        } else if !sub.to_string_lossy().ends_with(exaviz_store::sidecar::SUFFIX) && folder_input(sub).is_some() {
            return None;
        }
    }
    found
}

/// What a folder without trace files holds that exaviz opens, each named with what it is:
/// files of another format in it; OTF2 archives, stores, TreeScope directories, HPCToolkit
/// databases, Projections runs and single-file traces one level down; else what it holds.
fn inputs_below(dir: &Path) -> String {
    let mut found: Vec<String> = Vec::new();
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    entries.sort();
    let (mut files, mut folders) = (Vec::new(), 0usize);
    for sub in &entries {
        let name = sub.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let what = if sub.is_file() {
            files.push(name.clone());
            file_input(sub)
        } else if name.ends_with(exaviz_store::sidecar::SUFFIX) {
            // The index kept beside a trace, not an input of its own.
            None
        } else {
            folders += 1;
            folder_input(sub)
        };
        found.extend(what);
    }
    /// Inputs named in full; the rest counted.
    const NAMED: usize = 6;
    if let Some(first) = found.first() {
        let pass = if found.len() == 1 {
            first.clone()
        } else {
            let more = found.len().saturating_sub(NAMED);
            let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            format!("one of {}{more}", found[..found.len().min(NAMED)].join(", "))
        };
        return format!(
            "holds no run of profiles, but {} input{} exaviz opens: pass {pass}",
            found.len(),
            if found.len() == 1 { "" } else { "s" }
        );
    }
    let shown: Vec<&str> = files.iter().take(4).map(String::as_str).collect();
    let files_part = match files.len() {
        0 => "no files".to_string(),
        n => format!(
            "{n} file{} ({}{})",
            if n == 1 { "" } else { "s" },
            shown.join(", "),
            if n > 4 { ", ..." } else { "" }
        ),
    };
    format!(
        "holds no trace files (.json, .json.gz, .pfw, .xplane.pb) nor any other input exaviz opens: it holds {files_part} and {folders} folder{}",
        if folders == 1 { "" } else { "s" }
    )
}

/// `file` as an input of its own (not a run's profile): its path and its format's name.
fn file_input(file: &Path) -> Option<String> {
    let text = file.display().to_string();
    let probe = crate::Probe::new(&text, file, None);
    crate::detect(&probe).filter(|f| f.name != "profiles").map(|f| format!("{} ({})", file.display(), f.title))
}

/// Most files of a folder one level down looked at for a trace file of its own.
const FILES_LOOKED_AT: usize = 64;

/// `sub`, a folder inside the folder given, as an input: the folder (or the archive's anchor,
/// or the one trace file it holds) and what it is.
fn folder_input(sub: &Path) -> Option<String> {
    if let Some(anchor) = crate::otf2::anchor_in(sub) {
        return Some(format!("{} (OTF2 archive)", anchor.display()));
    }
    let kind = if exaviz_store::is_store(sub) {
        "exaviz store"
    } else if crate::treescope::is_dir(sub) {
        "TreeScope data directory"
    } else if crate::hpctoolkit::is_database(sub) || crate::hpctoolkit_xml::is_xml_database(sub) {
        "HPCToolkit database"
    } else if crate::projections::sts_in(sub).is_some() {
        "Charm++ Projections logs"
    } else {
        // A trace in one file (Paraver, Perfetto, Nsight Systems, ...) in the folder. (Chrome
        // trace files below would have made the folder given a run of profiles.)
        let mut inside: Vec<_> = std::fs::read_dir(sub)
            .map(|r| r.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        inside.sort();
        return inside.iter().take(FILES_LOOKED_AT).find_map(|f| file_input(f));
    };
    Some(format!("{} ({kind})", sub.display()))
}
