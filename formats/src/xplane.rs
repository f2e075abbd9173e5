//! XPlane profiles (`*.xplane.pb`): the protobuf `XSpace` that JAX's profiler (and TensorFlow's,
//! xprof's, TensorBoard's profile plugin) writes, and the only file JAX writes unless asked for a
//! Chrome trace too. Read with prost; the message structs below hold only the fields used, with
//! the field numbers of `tsl/profiler/protobuf/xplane.proto` and XLA's `hlo.proto`.
//!
//! An `XSpace` holds planes (`/host:CPU`, `/device:GPU:0`, `/host:metadata`), a plane lines (a
//! thread, a stream, `XLA Ops`, `Steps`), a line events (metadata id, offset and duration in
//! picoseconds from the line's start in nanoseconds, stats). Event and stat names live in the
//! plane's metadata maps. The metadata plane's events carry each compiled module as an
//! `HloProto` (stat `Hlo Proto`), whose collective-permute instructions name their
//! `source_target_pairs`: the pipeline's sends and receives.
//!
//! The profile becomes the same [`ChromeTrace`] a Chrome trace gives (a lane per plane and line,
//! stats as arguments), so the training model reads both alike.

use std::collections::HashMap;
use std::path::Path;

use exaviz_model::source::SourceError;
use prost::Message;
use serde_json::{Map, Value};

use super::HloPairs;
use crate::chrome::{ChromeTrace, Lane, Slice};

#[derive(Clone, PartialEq, Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
    #[prost(string, tag = "11")]
    pub display_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(int64, tag = "2")]
    pub offset_ps: i64,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
    /// Set on aggregated events, which have no place on a timeline.
    #[prost(int64, optional, tag = "5")]
    pub num_occurrences: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(double, optional, tag = "2")]
    pub double_value: Option<f64>,
    #[prost(uint64, optional, tag = "3")]
    pub uint64_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int64_value: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub str_value: Option<String>,
    #[prost(bytes = "vec", optional, tag = "6")]
    pub bytes_value: Option<Vec<u8>>,
    /// A reference to a stat metadata whose name is the value.
    #[prost(uint64, optional, tag = "7")]
    pub ref_value: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
}

/// XLA's `HloProto`: the module (and its buffer assignment, not read).
#[derive(Clone, PartialEq, Message)]
pub struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(message, repeated, tag = "52")]
    pub source_target_pairs: Vec<SourceTarget>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SourceTarget {
    #[prost(int64, tag = "1")]
    pub source: i64,
    #[prost(int64, tag = "2")]
    pub target: i64,
}

/// Largest profile read (the whole file is decoded in memory).
const MAX_BYTES: u64 = 4 << 30;

/// Whether a path names an XPlane profile (protobuf has no magic bytes: by its name).
pub fn is_xplane(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".xplane.pb"))
}

/// Decodes an XSpace; `input` names it in errors.
pub fn decode(bytes: &[u8], input: &str) -> Result<XSpace, SourceError> {
    let space = XSpace::decode(bytes)
        .map_err(|e| SourceError::invalid(input, format!("is not an XPlane profile (XSpace): {e}")))?;
    if space.planes.is_empty() {
        return Err(SourceError::invalid(input, "an XSpace without planes (not a profile, or an empty one)"));
    }
    Ok(space)
}

/// Reads an XPlane file.
pub fn read(path: &Path) -> Result<XSpace, SourceError> {
    let input = path.display().to_string();
    let len = std::fs::metadata(path).map_err(|source| SourceError::Io { input: input.clone(), source })?.len();
    if len > MAX_BYTES {
        return Err(SourceError::invalid(
            &input,
            format!("{len} bytes, above the {MAX_BYTES} an XPlane profile may have"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|source| SourceError::Io { input: input.clone(), source })?;
    decode(&bytes, &input)
}

/// A stat's value as JSON, as the Chrome trace JAX exports writes it (references by name).
fn stat_value(s: &XStat, names: &HashMap<i64, XStatMetadata>) -> Option<Value> {
    if let Some(v) = &s.str_value {
        return Some(Value::String(v.clone()));
    }
    if let Some(r) = s.ref_value {
        let name = i64::try_from(r).ok().and_then(|r| names.get(&r)).map(|m| m.name.clone());
        return name.map(Value::String);
    }
    if let Some(v) = s.int64_value {
        return Some(Value::from(v));
    }
    if let Some(v) = s.uint64_value {
        return Some(Value::from(v));
    }
    s.double_value.and_then(serde_json::Number::from_f64).map(Value::Number)
}

/// The profile as a Chrome trace: a process per plane (named by the plane), a thread per line,
/// an `X` slice per event (its display name, else its name) with its stats as arguments
/// (`hlo_op`, `hlo_module`, `device_ordinal`, ...). Aggregated events are left out.
pub fn to_chrome(space: &XSpace) -> ChromeTrace {
    let mut t = ChromeTrace { host: space.hostnames.first().cloned(), ..ChromeTrace::default() };
    let mut name_of: HashMap<String, u32> = HashMap::new();
    let mut intern = |t: &mut ChromeTrace, s: &str| -> u32 {
        if let Some(&k) = name_of.get(s) {
            return k;
        }
        let k = t.names.len() as u32;
        t.names.push(s.to_string());
        name_of.insert(s.to_string(), k);
        k
    };
    let empty = intern(&mut t, "");
    for (p, plane) in space.planes.iter().enumerate() {
        for line in &plane.lines {
            let lane = t.lanes.len() as u32;
            let thread = if line.display_name.is_empty() { &line.name } else { &line.display_name };
            t.lanes.push(Lane {
                pid: p.to_string(),
                tid: line.id.to_string(),
                process: plane.name.clone(),
                thread: thread.clone(),
                ..Default::default()
            });
            for e in &line.events {
                t.events += 1;
                if e.num_occurrences.is_some() {
                    continue;
                }
                let meta = plane.event_metadata.get(&e.metadata_id);
                let name = meta.map_or("", |m| if m.display_name.is_empty() { &m.name } else { &m.display_name });
                let mut args = Map::new();
                for s in meta.map(|m| m.stats.as_slice()).unwrap_or_default().iter().chain(&e.stats) {
                    let Some(key) = plane.stat_metadata.get(&s.metadata_id) else { continue };
                    if let Some(v) = stat_value(s, &plane.stat_metadata) {
                        args.insert(key.name.clone(), v);
                    }
                }
                let start_ns = line.timestamp_ns.saturating_add(e.offset_ps / 1000);
                let name = intern(&mut t, name);
                t.slices.push(Slice {
                    lane,
                    name,
                    cat: empty,
                    start_ns,
                    dur_ns: (e.duration_ps / 1000).max(0),
                    correlation: None,
                    args: (!args.is_empty()).then(|| Box::new(Value::Object(args))),
                });
            }
        }
    }
    t
}

/// The collective-permute pairs of the HLO modules the metadata plane carries (each event's
/// `Hlo Proto` stat), by module and instruction, as `source_target_pairs={{0,1},...}`.
pub fn hlo_pairs(space: &XSpace) -> HloPairs {
    let mut out = HloPairs::default();
    for plane in &space.planes {
        let Some((&hlo_stat, _)) = plane.stat_metadata.iter().find(|(_, m)| m.name == "Hlo Proto") else { continue };
        for meta in plane.event_metadata.values() {
            for s in meta.stats.iter().filter(|s| s.metadata_id == hlo_stat) {
                let Some(bytes) = &s.bytes_value else { continue };
                let Ok(proto) = HloProto::decode(bytes.as_slice()) else { continue };
                let Some(module) = proto.hlo_module else { continue };
                for c in &module.computations {
                    for i in c.instructions.iter().filter(|i| !i.source_target_pairs.is_empty()) {
                        let pairs: Vec<String> =
                            i.source_target_pairs.iter().map(|p| format!("{{{},{}}}", p.source, p.target)).collect();
                        let text = format!("source_target_pairs={{{}}}", pairs.join(","));
                        out.insert((module.name.clone(), i.name.clone()), text);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/jax-cpu-pipeline/plugins/profile/run/vm.xplane.pb")
    }

    /// The recorded JAX profile: the same slices as the Chrome trace JAX wrote beside it, and the
    /// pipeline's permute pairs from the HLO module in the metadata plane.
    #[test]
    fn the_jax_profile_reads_as_its_chrome_trace_and_gives_the_hlo_pairs() {
        let space = read(&fixture()).unwrap();
        let names: Vec<&str> = space.planes.iter().map(|p| p.name.as_str()).collect();
        assert!(names.contains(&"/host:CPU") && names.contains(&"/host:metadata"), "{names:?}");
        let t = to_chrome(&space);
        let json = crate::chrome::read(&fixture().with_file_name("vm.trace.json.gz")).unwrap();
        let ops = |t: &ChromeTrace| {
            let mut v: Vec<(String, i64)> = t
                .slices
                .iter()
                .filter(|s| s.args.as_deref().and_then(|a| a.get("hlo_op")).is_some())
                .map(|s| (t.names[s.name as usize].clone(), s.dur_ns))
                .collect();
            v.sort();
            v
        };
        let (a, b) = (ops(&t), ops(&json));
        assert_eq!(a.len(), b.len(), "the XLA ops of both");
        assert!(a.len() > 50);
        for ((na, da), (nb, db)) in a.iter().zip(&b) {
            assert_eq!(na, nb);
            assert!((da - db).abs() <= 1, "{na}: {da} vs {db} ns");
        }
        let pairs = hlo_pairs(&space);
        let permute = pairs.get(&("jit_stage".to_string(), "ppermute.12".to_string()));
        assert_eq!(permute.map(String::as_str), Some("source_target_pairs={{0,1},{1,2},{2,3}}"));
        assert_eq!(pairs.len(), 4, "{pairs:?}");
    }

    #[test]
    fn other_files_are_one_line() {
        let e = decode(b"{\"traceEvents\": []}", "x.xplane.pb").unwrap_err().to_string();
        assert!(e.starts_with("x.xplane.pb: is not an XPlane profile") && !e.contains('\n'), "{e}");
        assert!(decode(&[], "e.xplane.pb").unwrap_err().to_string().contains("without planes"));
    }

    /// The recorded profile with bytes flipped and cut short: a profile or one line, never a
    /// panic (prost checks every length against the bytes present).
    #[test]
    fn mutated_profiles_never_panic() {
        let bytes = std::fs::read(fixture()).unwrap();
        let (mut ok, mut failed) = (0, 0);
        for i in (0..bytes.len()).step_by(bytes.len() / 400) {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= x;
                let r = std::panic::catch_unwind(|| {
                    decode(&b, "m").map(|s| (to_chrome(&s).slices.len(), hlo_pairs(&s).len()))
                });
                match r {
                    Err(_) => panic!("byte {i} ^ {x:#x} panicked"),
                    Ok(Ok(_)) => ok += 1,
                    Ok(Err(e)) => {
                        assert!(!e.to_string().contains('\n'));
                        failed += 1;
                    }
                }
            }
        }
        for cut in [1, bytes.len() / 2, bytes.len() - 1] {
            assert!(std::panic::catch_unwind(|| decode(&bytes[..cut], "c").is_ok()).is_ok());
        }
        assert!(ok > 100 && failed > 10, "{ok} decoded, {failed} refused");
    }
}
