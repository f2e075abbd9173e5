//! Writing a store: tables into a temporary folder in time-sorted row groups, renamed into
//! place when complete.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use exaviz_model::dataset::Dataset;
use exaviz_model::held_index::PyramidSpan;
use exaviz_model::pyramid::{Pyramid, PyramidBuilder};
use exaviz_model::source::SourceError;
use exaviz_model::{Collectives, Instants, Intervals, Messages, MetricSamples};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::{
    Col, IndexOf, MANIFEST, Manifest, OPGRAPH, ROW_GROUP, SCHEMA_VERSION, TRAINING, Table, collectives_table,
    counters_table, instants_table, intervals_table, invalid, io, is_store, links_table, locations_table,
    messages_table, metric_units_table, metrics_table, names_table, nodes_table, pyramid_lines_table,
    pyramid_locations_table, pyramid_messages_table, pyramid_pairs_table, pyramid_span, pyramid_states_table,
};

/// A table being written.
pub(super) struct OpenTable {
    pub(super) name: String,
    pub(super) writer: ArrowWriter<File>,
    pub(super) schema: SchemaRef,
    pub(super) rows: u64,
    pub(super) sorted: bool,
    /// The last time written (for the sort flag across batches).
    pub(super) last_time: Option<u64>,
}

/// Writes tables into a temporary folder and renames it into place when finished. Several
/// tables may be open at once (a generator streams messages, intervals and collectives side by
/// side).
pub struct StoreWriter {
    target: PathBuf,
    pub(super) temp: PathBuf,
    tables: Vec<OpenTable>,
    span: Option<(u64, u64)>,
    /// The pyramid, summed from the messages and intervals as they are written.
    pyramid: Option<(PyramidSpan, PyramidBuilder)>,
}

pub(super) fn properties(table: &str) -> WriterProperties {
    let b = WriterProperties::builder();
    // The event tables' integer columns: delta-encoded without dictionaries, with a page index
    // (each page's first row and bounds) from which a time window decodes only its pages.
    let event = matches!(table, "messages" | "intervals");
    let b = if event {
        b.set_dictionary_enabled(false).set_encoding(parquet::basic::Encoding::DELTA_BINARY_PACKED)
    } else {
        b
    };
    b.set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_statistics_enabled(if event { EnabledStatistics::Page } else { EnabledStatistics::Chunk })
        .set_key_value_metadata(Some(vec![
            KeyValue::new("exaviz.schema_version".to_string(), SCHEMA_VERSION.to_string()),
            KeyValue::new("exaviz.table".to_string(), table.to_string()),
        ]))
        .build()
}

impl StoreWriter {
    /// Starts a store to be renamed to `target` when finished. An existing store there is
    /// replaced then; anything else there is refused now.
    pub fn create(target: &Path) -> Result<Self, SourceError> {
        if target.exists() && !is_store(target) {
            return Err(invalid(target, "exists and is not an exaviz store; choose another name"));
        }
        let name = target.file_name().ok_or_else(|| invalid(target, "is not a folder name"))?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = parent.join(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id()));
        if temp.exists() {
            std::fs::remove_dir_all(&temp).map_err(|e| io(&temp, e))?;
        }
        std::fs::create_dir_all(&temp).map_err(|e| io(&temp, e))?;
        Ok(Self { target: target.to_path_buf(), temp, tables: Vec::new(), span: None, pyramid: None })
    }

    /// A path inside the store's temporary folder for scratch files (gone with it, whether the
    /// store is finished or not).
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.temp.join(name)
    }

    /// Sums a pyramid over `span` from the messages and intervals written from now on.
    pub fn with_pyramid(mut self, span: PyramidSpan) -> Self {
        self.pyramid = Some((span, PyramidBuilder::new(span.shape())));
        self
    }

    pub(super) fn has(&self, table: &str) -> bool {
        self.tables.iter().any(|t| t.name == table)
    }

    pub(super) fn begin(&mut self, table: &Table) -> Result<(), SourceError> {
        let path = self.temp.join(table.file());
        if self.has(table.name) {
            return Err(invalid(&path, "table begun twice"));
        }
        let file = File::create(&path).map_err(|e| io(&path, e))?;
        let schema = table.schema();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(properties(table.name)))
            .map_err(|e| invalid(&path, e.to_string()))?;
        self.tables.push(OpenTable {
            name: table.name.to_string(),
            writer,
            schema,
            rows: 0,
            sorted: true,
            last_time: None,
        });
        Ok(())
    }

    /// Appends rows to table `name`; `time` is its time column, for the sort flag and span.
    pub(super) fn append(
        &mut self,
        name: &str,
        cols: &[Col<'_>],
        order: Option<&[u32]>,
        time: Option<&[u64]>,
    ) -> Result<(), SourceError> {
        let path = self.temp.join(format!("{name}.parquet"));
        let Some(t) = self.tables.iter_mut().find(|t| t.name == name) else {
            return Err(invalid(&path, "table written before it was begun"));
        };
        let n = order.map_or_else(|| cols.first().map_or(0, Col::len), <[u32]>::len);
        if let Some(times) = time {
            let each = |i: usize| times[order.map_or(i, |o| o[i] as usize)];
            if n > 0 {
                let (first, last) = (each(0), each(n - 1));
                t.sorted &= t.last_time.is_none_or(|l| l <= first) && (1..n).all(|i| each(i - 1) <= each(i));
                t.last_time = Some(last);
                let (lo, hi) = (0..n).map(each).fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
                self.span = Some(self.span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        for start in (0..n).step_by(ROW_GROUP) {
            let range = start..(start + ROW_GROUP).min(n);
            let arrays: Vec<ArrayRef> = cols.iter().map(|c| c.array(order, range.clone())).collect();
            let batch = RecordBatch::try_new(t.schema.clone(), arrays).map_err(|e| invalid(&path, e.to_string()))?;
            t.writer.write(&batch).map_err(|e| invalid(&path, e.to_string()))?;
        }
        t.rows += n as u64;
        Ok(())
    }

    /// Starts the messages table; then call [`Self::messages`] with batches in time order.
    pub fn begin_messages(&mut self) -> Result<(), SourceError> {
        self.begin(&messages_table())
    }

    /// Appends messages (to the table begun by [`Self::begin_messages`]), sorted by send time
    /// within the batch.
    pub fn messages(&mut self, m: &Messages) -> Result<(), SourceError> {
        if let Some((_, p)) = &mut self.pyramid {
            p.add_messages(m);
        }
        let order = time_order(&m.send_time);
        let cols = [
            Col::U32(&m.source),
            Col::U32(&m.destination),
            Col::U64(&m.send_time),
            Col::U64(&m.recv_time),
            Col::U32(&m.bytes),
            Col::U32(&m.tag),
        ];
        self.append("messages", &cols, order.as_deref(), Some(&m.send_time))?;
        self.widen(&m.recv_time);
        Ok(())
    }

    /// Widens the span to the end times `ends` (receive times: `u64::MAX` is never received).
    pub(super) fn widen(&mut self, ends: &[u64]) {
        if let Some(hi) = ends.iter().copied().filter(|&v| v != u64::MAX).max() {
            self.span = Some(self.span.map_or((hi, hi), |(a, b)| (a.min(hi), b.max(hi))));
        }
    }

    /// Starts the intervals table; then call [`Self::intervals`] with batches in time order.
    pub fn begin_intervals(&mut self) -> Result<(), SourceError> {
        self.begin(&intervals_table())
    }

    /// Appends intervals, sorted by start within the batch.
    pub fn intervals(&mut self, v: &Intervals) -> Result<(), SourceError> {
        if let Some((_, p)) = &mut self.pyramid {
            p.add_intervals(v);
        }
        let order = time_order(&v.start);
        let cols = [Col::U32(&v.location), Col::U64(&v.start), Col::U64(&v.end), Col::U32(&v.kind), Col::U32(&v.depth)];
        self.append("intervals", &cols, order.as_deref(), Some(&v.start))?;
        self.widen(&v.end);
        Ok(())
    }

    /// Starts the collectives table; then call [`Self::collectives`] with batches in time order.
    pub fn begin_collectives(&mut self) -> Result<(), SourceError> {
        self.begin(&collectives_table())
    }

    /// Appends collective rows, sorted by start within the batch.
    pub fn collectives(&mut self, c: &Collectives) -> Result<(), SourceError> {
        let order = time_order(&c.start);
        let cols = [
            Col::U32(&c.location),
            Col::U64(&c.start),
            Col::U64(&c.end),
            Col::U32(&c.op),
            Col::U32(&c.root),
            Col::U32(&c.bytes),
        ];
        self.append("collectives", &cols, order.as_deref(), Some(&c.start))
    }

    /// Starts the metrics table; then call [`Self::metrics`] with batches in time order.
    pub fn begin_metrics(&mut self) -> Result<(), SourceError> {
        self.begin(&metrics_table())
    }

    /// Appends metric samples, sorted by time within the batch.
    pub fn metrics(&mut self, m: &MetricSamples) -> Result<(), SourceError> {
        let order = time_order(&m.time);
        let cols = [Col::U32(&m.location), Col::U64(&m.time), Col::U32(&m.metric), Col::F64(&m.value)];
        self.append("metrics", &cols, order.as_deref(), Some(&m.time))
    }

    /// Writes the instants table, in time order.
    fn instants(&mut self, i: &Instants) -> Result<(), SourceError> {
        self.begin(&instants_table())?;
        let order = time_order(&i.time);
        let scope: Vec<u32> = i.scope.iter().map(|s| s.code()).collect();
        let cols = [
            Col::U32(&i.location),
            Col::U64(&i.time),
            Col::U32(&i.name),
            Col::U32(&scope),
            Col::U32(&i.category),
            Col::U32(&i.args),
        ];
        self.append("instants", &cols, order.as_deref(), Some(&i.time))
    }

    /// Writes every table of `d` but those already begun (messages, intervals and collectives
    /// may have been streamed), then the manifest, and renames the store into place.
    pub fn finish(mut self, d: &Dataset) -> Result<Manifest, SourceError> {
        let t = &d.trace;
        let ids = |n: usize| -> Vec<u32> { (0..n as u32).collect() };
        self.begin(&locations_table())?;
        let loc_ids = ids(t.locations.name.len());
        let kinds: Vec<u32> = (0..t.locations.name.len()).map(|i| t.locations.kind_of(i).code()).collect();
        let cols = [Col::U32(&loc_ids), Col::Str(&t.locations.name), Col::U32(&t.locations.node), Col::U32(&kinds)];
        self.append("locations", &cols, None, None)?;
        for (table, id, names) in [
            ("regions", "region", &t.region_names),
            ("collective_ops", "op", &t.collective_names),
            ("metric_names", "metric", &t.metric_names),
            ("instant_categories", "category", &t.instant_categories),
        ] {
            self.begin(&names_table(table, id))?;
            self.append(table, &[Col::U32(&ids(names.len())), Col::Str(names)], None, None)?;
        }
        let metrics = t.metric_names.len();
        let units: Vec<String> = (0..metrics).map(|k| t.metric_units.get(k).cloned().unwrap_or_default()).collect();
        let accumulated: Vec<u32> =
            (0..metrics).map(|k| u32::from(t.metric_accumulated.get(k).copied().unwrap_or(false))).collect();
        self.begin(&metric_units_table())?;
        let cols = [Col::U32(&ids(metrics)), Col::Str(&units), Col::U32(&accumulated)];
        self.append("metric_units", &cols, None, None)?;
        if !self.has("intervals") {
            self.begin_intervals()?;
            self.intervals(&t.intervals)?;
        }
        if !self.has("messages") {
            self.begin_messages()?;
            self.messages(&t.messages)?;
        }
        if !self.has("collectives") {
            self.begin_collectives()?;
            self.collectives(&t.collectives)?;
        }
        for (table, entity, c) in
            [("location_counters", "location", &t.location_counters), ("link_counters", "link", &t.link_counters)]
        {
            self.begin(&counters_table(table, entity))?;
            let order = time_order(&c.time);
            let cols = [Col::U32(&c.entity), Col::U64(&c.time), Col::U32(&c.value)];
            self.append(table, &cols, order.as_deref(), Some(&c.time))?;
        }
        if !self.has("metrics") {
            self.begin_metrics()?;
            self.metrics(&t.metrics)?;
        }
        self.instants(&t.instants)?;
        if let Some(topo) = &d.topology {
            let dims = topo.dims();
            let n = topo.node_count();
            let node_ids = ids(n);
            let per_dim: Vec<Vec<u32>> =
                (0..dims).map(|k| (0..n).map(|i| topo.coords[i * dims + k]).collect()).collect();
            let mut group = topo.group.clone();
            group.resize(n, u32::MAX);
            let mut cols = vec![Col::U32(&node_ids), Col::U32(&group)];
            cols.extend(per_dim.iter().map(|v| Col::U32(v)));
            self.begin(&nodes_table(dims))?;
            self.append("nodes", &cols, None, None)?;
            let l = &topo.links;
            self.begin(&links_table())?;
            self.append("links", &[Col::U32(&l.source), Col::U32(&l.destination), Col::U32(&l.dimension)], None, None)?;
        }
        let pyramid = self.pyramid.take().map(|(span, b)| (span, b.finish()));
        if let Some((_, p)) = &pyramid {
            self.write_pyramid(p)?;
        }
        let mut rows = Vec::new();
        let mut sorted = Vec::new();
        for (name, n, flag) in self.close_tables()? {
            if let Some(f) = flag {
                sorted.push((name.clone(), f));
            }
            rows.push((name, n));
        }
        let manifest = Manifest {
            format: "exaviz-store".into(),
            schema_version: SCHEMA_VERSION,
            name: d.name.clone(),
            ticks_per_second: t.ticks_per_second,
            link_counter_unit: d.link_counter_unit.clone(),
            extents: d.topology.as_ref().map(|t| t.extents.clone()),
            rows,
            sorted,
            time_span: self.span,
            pyramid: pyramid.map(|p| p.0),
            index_of: None,
            step_regions: t.step_regions.clone(),
        };
        self.models(d)?;
        let path = self.temp.join(MANIFEST);
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| invalid(&path, e.to_string()))?;
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        self.commit()?;
        Ok(manifest)
    }

    /// A training run's model and an operator graph beside the tables, as JSON (a number that is
    /// not finite, which JSON cannot hold, written as 0). A conversion that streams writes them
    /// before its tables and drops them; [`Self::finish`] writes those of its dataset.
    pub fn models(&self, d: &Dataset) -> Result<(), SourceError> {
        if let Some(t) = &d.training {
            let finite = t.ops.flops.iter().all(|f| f.is_finite());
            let fixed;
            let t = if finite {
                t.as_ref()
            } else {
                let mut c = t.as_ref().clone();
                c.ops.flops.iter_mut().filter(|f| !f.is_finite()).for_each(|f| *f = 0.0);
                fixed = c;
                &fixed
            };
            let path = self.temp.join(TRAINING);
            write_json(&path, t)?;
        }
        if let Some(g) = &d.opgraph {
            write_json(&self.temp.join(OPGRAPH), g.as_ref())?;
        }
        Ok(())
    }

    /// Writes a store at `target` holding only pyramid `p` of span `span`, the index of the trace
    /// file `of` names: under a temporary name, renamed into place when complete.
    pub fn write_index(target: &Path, span: PyramidSpan, p: &Pyramid, of: IndexOf) -> Result<(), SourceError> {
        if p.shape != span.shape() {
            return Err(invalid(target, "a pyramid of another shape than its span's"));
        }
        let mut w = Self::create(target)?;
        w.write_pyramid(p)?;
        let rows = w.close_tables()?.into_iter().map(|(name, n, _)| (name, n)).collect();
        let manifest = Manifest {
            format: "exaviz-store".into(),
            schema_version: SCHEMA_VERSION,
            name: format!("index of {}", of.input),
            ticks_per_second: 0,
            link_counter_unit: String::new(),
            extents: None,
            rows,
            sorted: Vec::new(),
            time_span: Some((span.t0, span.t1)),
            pyramid: Some(span),
            index_of: Some(of),
            step_regions: Vec::new(),
        };
        let path = w.temp.join(MANIFEST);
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| invalid(&path, e.to_string()))?;
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        w.commit()
    }

    /// Writes the pyramid's non-zero cells, level by level.
    pub(super) fn write_pyramid(&mut self, p: &Pyramid) -> Result<(), SourceError> {
        self.begin(&pyramid_messages_table())?;
        self.begin(&pyramid_states_table())?;
        let states = p.shape.states;
        for (k, lvl) in p.levels.iter().enumerate() {
            let mut c: [Vec<u32>; 4] = Default::default();
            let (mut count, mut bytes) = (Vec::new(), Vec::new());
            let (mb, bins) = (lvl.message_blocks, lvl.message_bins);
            for (cell, (&n, &b)) in lvl.counts.iter().zip(&lvl.bytes).enumerate() {
                if n > 0 {
                    let cell = cell as u32;
                    c[0].push(k as u32);
                    c[1].push(cell / bins / mb);
                    c[2].push(cell / bins % mb);
                    c[3].push(cell % bins);
                    count.push(n);
                    bytes.push(b);
                }
            }
            let cols = [
                Col::U32(&c[0]),
                Col::U32(&c[1]),
                Col::U32(&c[2]),
                Col::U32(&c[3]),
                Col::U64(&count),
                Col::U64(&bytes),
            ];
            self.append("pyramid_messages", &cols, None, None)?;
            let mut c: [Vec<u32>; 4] = Default::default();
            let mut ticks = Vec::new();
            let bins = lvl.state_bins;
            for (cell, &t) in lvl.ticks.iter().enumerate() {
                if t > 0 {
                    let cell = cell as u32;
                    c[0].push(k as u32);
                    c[1].push(cell / bins / states);
                    c[2].push(cell / bins % states);
                    c[3].push(cell % bins);
                    ticks.push(t);
                }
            }
            let cols = [Col::U32(&c[0]), Col::U32(&c[1]), Col::U32(&c[2]), Col::U32(&c[3]), Col::U64(&ticks)];
            self.append("pyramid_states", &cols, None, None)?;
        }
        if let Some(lines) = &p.lines {
            self.begin(&pyramid_lines_table())?;
            let (mut block, mut bin, mut count, mut gradient) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (cell, (&n, &g)) in lines.counts.iter().zip(&lines.gradient).enumerate() {
                if n > 0 {
                    block.push(cell as u32 % lines.blocks);
                    bin.push(cell as u32 / lines.blocks);
                    count.push(n);
                    gradient.push(g);
                }
            }
            let cols = [Col::U32(&block), Col::U32(&bin), Col::U64(&count), Col::U64(&gradient)];
            self.append("pyramid_lines", &cols, None, None)?;
        }
        if let Some(tiles) = &p.locations {
            self.begin(&pyramid_locations_table())?;
            let (bins, mut c) = (tiles.bins, <[Vec<u32>; 3]>::default());
            let mut ticks = Vec::new();
            for (cell, &t) in tiles.ticks.iter().enumerate() {
                if t > 0 {
                    let cell = cell as u32;
                    c[0].push(cell / bins / states);
                    c[1].push(cell / bins % states);
                    c[2].push(cell % bins);
                    ticks.push(t);
                }
            }
            let cols = [Col::U32(&c[0]), Col::U32(&c[1]), Col::U32(&c[2]), Col::U64(&ticks)];
            self.append("pyramid_locations", &cols, None, None)?;
        }
        if let Some(pairs) = &p.pairs {
            self.begin(&pyramid_pairs_table())?;
            let bins = vec![pairs.bins; pairs.len()];
            let cols = [
                Col::U32(&pairs.source),
                Col::U32(&pairs.destination),
                Col::U32(&bins),
                Col::U32(&pairs.bin),
                Col::U64(&pairs.count),
                Col::U64(&pairs.bytes),
            ];
            self.append("pyramid_pairs", &cols, None, None)?;
        }
        Ok(())
    }

    /// Closes every open table: (name, rows, whether sorted by time for the event tables).
    pub(super) fn close_tables(&mut self) -> Result<Vec<(String, u64, Option<bool>)>, SourceError> {
        let mut out = Vec::new();
        for table in std::mem::take(&mut self.tables) {
            let path = self.temp.join(format!("{}.parquet", table.name));
            table.writer.close().map_err(|e| invalid(&path, e.to_string()))?;
            let event = table.last_time.is_some() || EVENT_TABLES.contains(&table.name.as_str());
            out.push((table.name, table.rows, event.then_some(table.sorted)));
        }
        Ok(out)
    }

    /// Renames the finished folder into place (replacing an older store there).
    pub(super) fn commit(&mut self) -> Result<(), SourceError> {
        if self.target.exists() {
            let old = self.temp.with_extension("old");
            std::fs::rename(&self.target, &old).map_err(|e| io(&self.target, e))?;
            std::fs::rename(&self.temp, &self.target).map_err(|e| io(&self.target, e))?;
            std::fs::remove_dir_all(&old).map_err(|e| io(&old, e))?;
        } else {
            std::fs::rename(&self.temp, &self.target).map_err(|e| io(&self.target, e))?;
        }
        Ok(())
    }
}

/// Tables sorted by their time column.
pub(super) const EVENT_TABLES: [&str; 6] =
    ["intervals", "messages", "collectives", "location_counters", "link_counters", "metrics"];

impl Drop for StoreWriter {
    /// A store never finished (an error, a panic) leaves no partial folder behind.
    fn drop(&mut self) {
        if self.temp.exists() {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// `value` as JSON at `path`, written as it is serialised (a thousand ranks' training model is
/// hundreds of megabytes of text, never held whole).
fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), SourceError> {
    let file = File::create(path).map_err(|e| io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, value).map_err(|e| invalid(path, e.to_string()))?;
    std::io::Write::flush(&mut out).map_err(|e| io(path, e))
}

/// The permutation sorting `times` (stable), or `None` when they are sorted already.
pub(super) fn time_order(times: &[u64]) -> Option<Vec<u32>> {
    if times.windows(2).all(|w| w[0] <= w[1]) {
        return None;
    }
    let mut order: Vec<u32> = (0..times.len() as u32).collect();
    order.sort_by_key(|&i| times[i as usize]);
    Some(order)
}

/// Writes `dataset` as a store at `target` (through a temporary folder), with its pyramid.
pub fn write(dataset: &Dataset, target: &Path) -> Result<Manifest, SourceError> {
    let mut w = StoreWriter::create(target)?;
    if let Some(span) = pyramid_span(dataset) {
        w = w.with_pyramid(span);
    }
    w.finish(dataset)
}
