//! The exaviz store: a trace and its topology as a folder of Apache Parquet files, one per
//! table, that DuckDB, Polars, Spark and pandas read as they are.
//!
//! ```text
//! NAME.exaviz/
//!   exaviz-store.json    manifest: schema version, name, clock, table row counts, sort order
//!   locations.parquet    location u32, name utf8, node u32 (4294967295: unknown),
//!                        kind u32 (0 unknown, 1 CPU thread, 2 GPU stream, 3 process, 4 metric)
//!   regions.parquet      region u32, name utf8
//!   intervals.parquet    location u32, start u64, end u64, region u32, depth u32   (by start)
//!   messages.parquet     source u32, destination u32, send_time u64, recv_time u64,
//!                        bytes u32, tag u32                                       (by send_time)
//!   collective_ops.parquet  op u32, name utf8
//!   collectives.parquet  location u32, start u64, end u64, op u32, root u32, bytes u32 (by start)
//!   location_counters.parquet  location u32, time u64, value u32                 (by time)
//!   link_counters.parquet      link u32, time u64, value u32                      (by time)
//!   metric_names.parquet       metric u32, name utf8
//!   metric_units.parquet       metric u32, unit utf8, accumulated u32 (1: the values accumulate)
//!   metrics.parquet      location u32, time u64, metric u32, value f64            (by time)
//!   instant_categories.parquet category u32, name utf8
//!   instants.parquet     location u32 (4294967295: on no row), time u64, region u32, scope u32
//!                        (0 thread, 1 process, 2 global), category u32, args u32  (by time)
//!   nodes.parquet        node u32, group u32, d0 u32, d1 u32, ... (one per dimension)
//!   links.parquet        source u32, destination u32, dimension u32
//!   pyramid_messages.parquet  level u32, sender_block u32, receiver_block u32, bin u32,
//!                             count u64, bytes u64                  (non-zero cells)
//!   pyramid_states.parquet    level u32, block u32, state u32, bin u32, ticks u64
//!   pyramid_lines.parquet     block u32, bin u32, lines u64, gradient u64
//!   pyramid_locations.parquet location u32, state u32, bin u32, ticks u64
//!   pyramid_pairs.parquet     source u32, destination u32, bins u32, bin u32, count u64,
//!                             bytes u64             (non-zero cells; bins: the tiles' bins)
//!   training.json        a training run's model (devices, stages, operators), where it has one
//!   opgraph.json         an operator graph (an HLO module, an execution trace), where it has one
//! ```
//!
//! The pyramid tables hold the non-zero cells of [`exaviz_model::pyramid::Pyramid`], whose
//! shape follows from the span in the manifest.
//!
//! Times are ticks of the trace clock (`ticks_per_second` in the manifest). Event tables are
//! written in row groups of [`ROW_GROUP`] rows sorted by time, with min/max statistics per row
//! group, so a reader of a time window skips the row groups outside it; their integer columns are
//! delta-encoded without dictionaries (sorted times and ranks pack into a few bits each). Every
//! file carries
//! `exaviz.schema_version` in its key-value metadata.
//!
//! A store is written under a temporary name beside its final one and renamed when complete: an
//! interrupted or failed write leaves nothing under the final name.
//!
//! Beside the store, the index kept beside a large trace file ([`sidecar`]) is a store too; the
//! crate reads and writes the model ([`exaviz_model`]) and nothing of the GPU or the window.

use std::path::Path;

/// What a stored pyramid covers (the manifest records it, never the shape).
use exaviz_model::source::SourceError;

pub use exaviz_model::held_index::PyramidSpan;

mod pyramid;
mod read;
mod rows;
mod schema;
pub mod shared;
pub mod sidecar;
pub mod spill;
mod writer;

use schema::*;

pub use pyramid::*;
pub use read::*;
pub use rows::{rows_beside, windows_beside};
pub use writer::*;

/// The version of the layout above; a store of another version is refused with a hint.
pub const SCHEMA_VERSION: u32 = 3;
/// The manifest's file name, which marks a folder as a store.
pub const MANIFEST: &str = "exaviz-store.json";
/// A training run's model kept beside the tables (JSON).
pub const TRAINING: &str = "training.json";
/// An operator graph kept beside the tables (JSON).
pub const OPGRAPH: &str = "opgraph.json";
/// Rows per row group of the event tables.
pub const ROW_GROUP: usize = 1 << 20;
/// Largest column chunk a reader accepts (uncompressed): a writer of this layout never makes one
/// above 8 MiB (a row group of `u64`s).
const MAX_CHUNK_BYTES: i64 = 256 << 20;

/// What the manifest records.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    pub schema_version: u32,
    pub name: String,
    pub ticks_per_second: u64,
    pub link_counter_unit: String,
    /// Extents of the topology's dimensions; `None`: the store has no topology.
    pub extents: Option<Vec<u32>>,
    /// Rows of each table, in the layout's order.
    pub rows: Vec<(String, u64)>,
    /// Whether each event table is sorted by its time column.
    pub sorted: Vec<(String, bool)>,
    /// First and last time stamp in ticks over every event table (`None`: no events).
    pub time_span: Option<(u64, u64)>,
    /// What the pyramid tables cover (`None`: the store has none).
    pub pyramid: Option<PyramidSpan>,
    /// Set where the store holds only the index of a trace file kept beside it
    /// ([`crate::sidecar`]): no rows, its pyramid and what it was summed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_of: Option<IndexOf>,
    /// Regions whose intervals each mark a training step
    /// ([`exaviz_model::Trace::step_regions`]); absent
    /// where none do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_regions: Vec<u32>,
}

/// What the pyramid of a trace file's kept index was summed from ([`crate::sidecar`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct IndexOf {
    /// The trace file's name.
    pub input: String,
    /// The exaviz version and pyramid layout that summed it.
    pub summed_by: String,
    /// Digest of the trace's messages and intervals as read (hexadecimal).
    pub trace: String,
    /// Digest of the pyramid's cells as summed (hexadecimal): a file changed since reads as
    /// another.
    pub pyramid: String,
}

impl Manifest {
    pub fn rows(&self, table: &str) -> u64 {
        self.rows.iter().find(|(t, _)| t == table).map_or(0, |r| r.1)
    }
}

pub(crate) fn io(path: &Path, source: std::io::Error) -> SourceError {
    SourceError::Io { input: path.display().to_string(), source }
}

pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> SourceError {
    SourceError::invalid(path.display().to_string(), message)
}

/// Whether `path` is a folder holding a store manifest.
pub fn is_store(path: &Path) -> bool {
    path.join(MANIFEST).is_file()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use exaviz_model::dataset::Dataset;
    use exaviz_model::pyramid::PyramidBuilder;
    use exaviz_model::{Counters, Intervals, Messages};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::fs::File;
    use std::path::PathBuf;

    pub(crate) use exaviz_model::testing::mutations;

    pub(crate) fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("exaviz-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn same(a: &Dataset, b: &Dataset) {
        let (x, y) = (&a.trace, &b.trace);
        assert_eq!(a.summary(), b.summary());
        assert_eq!(x.locations.name, y.locations.name);
        assert_eq!(x.locations.node, y.locations.node);
        assert_eq!(x.region_names, y.region_names);
        assert_eq!(x.collective_names, y.collective_names);
        // Event tables come back sorted by time: compare them as sorted rows.
        let msgs = |m: &Messages| {
            let mut v: Vec<_> = (0..m.source.len())
                .map(|i| (m.send_time[i], m.source[i], m.destination[i], m.recv_time[i], m.bytes[i], m.tag[i]))
                .collect();
            v.sort_unstable();
            v
        };
        assert_eq!(msgs(&x.messages), msgs(&y.messages));
        let ivs = |v: &Intervals| {
            let mut r: Vec<_> =
                (0..v.start.len()).map(|i| (v.start[i], v.location[i], v.end[i], v.kind[i], v.depth[i])).collect();
            r.sort_unstable();
            r
        };
        assert_eq!(ivs(&x.intervals), ivs(&y.intervals));
        let ctr = |c: &Counters| {
            let mut r: Vec<_> = (0..c.time.len()).map(|i| (c.time[i], c.entity[i], c.value[i])).collect();
            r.sort_unstable();
            r
        };
        assert_eq!(ctr(&x.link_counters), ctr(&y.link_counters));
        assert_eq!(
            a.topology.as_ref().map(|t| (&t.extents, &t.coords, &t.group)),
            b.topology.as_ref().map(|t| (&t.extents, &t.coords, &t.group))
        );
        assert_eq!(
            a.topology.as_ref().map(|t| (&t.links.source, &t.links.destination, &t.links.dimension)),
            b.topology.as_ref().map(|t| (&t.links.source, &t.links.destination, &t.links.dimension))
        );
        assert_eq!(a.link_counter_unit, b.link_counter_unit);
    }

    #[test]
    fn generators_round_trip_through_a_store() {
        let dir = temp("round");
        for spec in [
            "gen:wrf?iterations=40&collectives=5&plant=1",
            "gen:torus-sim?dims=4x4x2&steps=5",
            "gen:pf3d?dims=2x2x2x2x2&threads=2",
        ] {
            let d = exaviz_datasets::open(spec).unwrap();
            let path = dir.join("s.exaviz");
            let m = write(&d, &path).unwrap();
            assert_eq!(m.rows("messages"), d.trace.messages.source.len() as u64);
            assert!(m.sorted.iter().all(|s| s.1), "{spec}: {:?}", m.sorted);
            let back = exaviz_datasets::open(path.to_str().unwrap()).unwrap();
            same(&d, &back);
        }
        // Nothing but the store is left in the folder (no temporary folder).
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("s.exaviz")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The stored pyramid equals one built from the dataset in memory, cell for cell.
    #[test]
    fn the_stored_pyramid_equals_the_one_built_in_memory() {
        let dir = temp("pyramid");
        let d = exaviz_datasets::open("gen:fd4?iterations=6&collectives=2").unwrap();
        let path = dir.join("s.exaviz");
        let m = write(&d, &path).unwrap();
        assert!(m.rows("pyramid_messages") > 0 && m.rows("pyramid_states") > 0);
        let span = pyramid_span(&d).unwrap();
        let mut b = PyramidBuilder::new(span.shape());
        b.add_messages(&d.trace.messages);
        b.add_intervals(&d.trace.intervals);
        let want = b.finish();
        assert_eq!(pyramid(&path).unwrap(), Some(want.clone()));
        let top = want.levels.last().unwrap();
        assert_eq!(top.counts.iter().sum::<u64>(), d.trace.messages.source.len() as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The event tables' integer columns are delta-encoded without dictionaries (chosen by
    /// measurement: smaller and faster to read, BENCHMARKS.md); the other tables keep the
    /// defaults (dictionaries for names).
    #[test]
    fn event_columns_are_delta_encoded() {
        use parquet::basic::Encoding;
        let dir = temp("encoding");
        let d = exaviz_datasets::open("gen:fd4?iterations=6&collectives=2").unwrap();
        let path = dir.join("s.exaviz");
        write(&d, &path).unwrap();
        let encodings = |table: &str| {
            let file = File::open(path.join(format!("{table}.parquet"))).unwrap();
            let b = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
            let rg = &b.metadata().row_groups()[0];
            rg.columns().iter().map(|c| c.encodings().collect::<Vec<Encoding>>()).collect::<Vec<_>>()
        };
        for table in ["messages", "intervals"] {
            for e in encodings(table) {
                assert!(e.contains(&Encoding::DELTA_BINARY_PACKED), "{table}: {e:?}");
                assert!(!e.contains(&Encoding::RLE_DICTIONARY), "{table}: {e:?}");
            }
        }
        assert!(encodings("regions").iter().any(|e| e.contains(&Encoding::RLE_DICTIONARY)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unsorted_events_are_written_sorted() {
        let dir = temp("sort");
        let mut d = exaviz_datasets::open("gen:lulesh?iterations=3").unwrap();
        d.trace.messages.send_time.reverse();
        let path = dir.join("s.exaviz");
        write(&d, &path).unwrap();
        let back = open(&path, &|_, _| {}).unwrap();
        assert!(back.trace.messages.send_time.windows(2).all(|w| w[0] <= w[1]));
        same(&d, &back);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_that_fails_leaves_nothing_under_the_final_name() {
        let dir = temp("fail");
        let path = dir.join("s.exaviz");
        {
            let mut w = StoreWriter::create(&path).unwrap();
            w.begin_messages().unwrap();
            w.messages(&exaviz_datasets::open("gen:lulesh?iterations=2").unwrap().trace.messages).unwrap();
            // dropped here, as by an error or Ctrl-C unwinding, before finish
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        // A folder that is not a store is never replaced.
        std::fs::create_dir_all(dir.join("photos")).unwrap();
        let e = write(&Dataset::default(), &dir.join("photos")).unwrap_err().to_string();
        assert!(e.ends_with("photos: exists and is not an exaviz store; choose another name"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_foreign_and_other_version_stores_are_refused_in_one_line() {
        let dir = temp("bad");
        let path = dir.join("s.exaviz");
        let d = exaviz_datasets::open("gen:wrf?iterations=10").unwrap();
        write(&d, &path).unwrap();
        let manifest_path = path.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest_path).unwrap();
        let err = |p: &Path| exaviz_datasets::open(p.to_str().unwrap()).unwrap_err().to_string();

        std::fs::write(&manifest_path, text.replace("\"schema_version\": 3", "\"schema_version\": 7")).unwrap();
        let e = err(&path);
        assert!(e.contains("schema version 7") && e.contains("re-run exaviz convert") && !e.contains('\n'), "{e}");

        let rows = d.trace.messages.source.len();
        std::fs::write(&manifest_path, text.replace(&format!("\"messages\",\n      {rows}"), "\"messages\",\n      5"))
            .unwrap();
        let e = err(&path);
        assert!(e.contains("messages.parquet") && e.contains("stale or truncated"), "{e}");

        std::fs::write(&manifest_path, &text).unwrap();
        // A foreign Parquet file in place of a table: the locations table's schema.
        std::fs::copy(path.join("locations.parquet"), path.join("messages.parquet")).unwrap();
        let e = err(&path);
        assert!(e.contains("messages.parquet") && !e.contains('\n'), "{e}");

        std::fs::write(path.join("messages.parquet"), b"PAR1 not really").unwrap();
        let e = err(&path);
        assert!(e.contains("messages.parquet: not a readable Parquet file"), "{e}");
        std::fs::write(&manifest_path, "{").unwrap();
        assert!(err(&path).contains("not an exaviz store manifest"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Flipping bytes anywhere in a table or the manifest, or truncating a table, gives a
    /// dataset or a one-line error naming the file: never a panic.
    #[test]
    fn mutated_stores_never_panic() {
        let dir = temp("fuzz");
        let path = dir.join("s.exaviz");
        let d = exaviz_datasets::open("gen:torus-sim?dims=2x2x2&steps=3").unwrap();
        write(&d, &path).unwrap();
        let mut errors = 0;
        for file in ["messages.parquet", "intervals.parquet", "links.parquet", "nodes.parquet", MANIFEST] {
            let f = path.join(file);
            let original = std::fs::read(&f).unwrap();
            let step = (original.len()
                / std::env::var("EXAVIZ_FUZZ_STEPS").ok().and_then(|v| v.parse().ok()).unwrap_or(150))
            .max(1);
            let cuts = [0, 4, original.len() / 2, original.len().saturating_sub(9), original.len() - 1];
            for b in mutations(&original, step, &cuts) {
                std::fs::write(&f, &b).unwrap();
                match exaviz_datasets::open(path.to_str().unwrap()) {
                    Err(e) => {
                        let e = e.to_string();
                        assert!(!e.contains('\n') && e.contains("s.exaviz"), "{e}");
                        errors += 1;
                    }
                    Ok(back) => assert_eq!(back.trace.locations.name.len(), d.trace.locations.name.len()),
                }
            }
            std::fs::write(&f, &original).unwrap();
        }
        assert!(errors > 200, "corruptions should mostly be caught ({errors})");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A training run's model and its operator graph kept as JSON beside the tables: read back
    /// equal; damaged (cut short, an index past its table, bytes flipped), one line naming the
    /// file, never a panic.
    #[test]
    fn kept_models_read_back_or_are_refused_in_one_line() {
        let dir = temp("models");
        let path = dir.join("t.exaviz");
        let d = exaviz_datasets::open("gen:training?devices=4&stages=2").unwrap();
        write(&d, &path).unwrap();
        let back = exaviz_datasets::open(path.to_str().unwrap()).unwrap();
        assert_eq!(back.training, d.training);
        let f = path.join(TRAINING);
        let original = std::fs::read_to_string(&f).unwrap();
        let damaged = [
            original[..original.len() / 2].to_string(),
            original.replacen("\"device\":[0", "\"device\":[99", 1),
            original.replacen("\"first\":[0", "\"first\":[7", 1),
        ];
        let mut cases: Vec<Vec<u8>> = damaged.iter().map(|t| t.as_bytes().to_vec()).collect();
        let bytes = original.as_bytes();
        cases.extend((0..bytes.len()).step_by((bytes.len() / 200).max(1)).map(|i| {
            let mut b = bytes.to_vec();
            b[i] ^= 0x24;
            b
        }));
        let mut refused = 0;
        for b in cases {
            std::fs::write(&f, &b).unwrap();
            if let Err(e) = exaviz_datasets::open(path.to_str().unwrap()) {
                let e = e.to_string();
                assert!(e.contains("training.json") && !e.contains('\n'), "{e}");
                refused += 1;
            }
        }
        assert!(refused >= 3, "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
