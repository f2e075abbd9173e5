//! The store's pyramid: summed from its rows in one pass, written beside them, read back.

use std::path::Path;

use exaviz_model::dataset::Dataset;
use exaviz_model::held_index::PyramidSpan;
use exaviz_model::pyramid::{PAIR_BINS, PairTiles, Pyramid, PyramidBuilder};
use exaviz_model::source::SourceError;

use super::{
    Files, MANIFEST, Manifest, StoreWriter, invalid, io, manifest, manifest_in, pyramid_lines_table,
    pyramid_locations_table, pyramid_messages_table, pyramid_pairs_table, pyramid_states_table, read_table_in, rows,
    take_u32, take_u64,
};

/// The span of `dataset`'s pyramid: its messages' and intervals' times, ranks and states
/// (`None` without either).
pub fn pyramid_span(d: &Dataset) -> Option<PyramidSpan> {
    let t = &d.trace;
    let times = t.messages.send_time.iter().chain(&t.intervals.start).chain(&t.intervals.end);
    let (t0, t1) =
        times.fold(None, |acc: Option<(u64, u64)>, &v| Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v)))))?;
    let ranks = u32::try_from(t.locations.name.len()).ok().filter(|&r| r > 0)?;
    Some(PyramidSpan { t0, t1, ranks, states: t.region_names.len().clamp(1, 64) as u32 })
}

/// Sums the pyramid of `store` from its rows, streamed in batches (a store written without one,
/// or one to sum again), and adds it to the store ([`put_pyramid`]). Reports `progress(rows
/// done, rows)`.
pub fn add_pyramid(store: &Path, progress: &dyn Fn(u64, u64)) -> Result<(Manifest, PyramidTimes), SourceError> {
    let (span, p, times) = sum_pyramid(store, progress)?;
    Ok((put_pyramid(store, span, &p)?, times))
}

/// Adds pyramid `p` of span `span`, summed from `store`'s rows (natively, or by another engine),
/// to the store: its tables are written into a temporary folder inside the store, moved into
/// place, and the manifest is replaced last, so an interrupted run leaves the store as it was
/// or with a stale pyramid its reader refuses.
pub fn put_pyramid(store: &Path, span: PyramidSpan, p: &Pyramid) -> Result<Manifest, SourceError> {
    let path = store.join(MANIFEST);
    let mut m = manifest(store)?;
    if p.shape != span.shape() {
        return Err(invalid(&path, "a pyramid of another shape than its span's"));
    }
    let mut w = StoreWriter::create(&store.join(".pyramid"))?;
    w.write_pyramid(p)?;
    let written: Vec<(String, u64)> = w.close_tables()?.into_iter().map(|(name, n, _)| (name, n)).collect();
    for (name, _) in &written {
        let (from, to) = (w.temp.join(format!("{name}.parquet")), store.join(format!("{name}.parquet")));
        std::fs::rename(&from, &to).map_err(|e| io(&to, e))?;
    }
    // Every pyramid table of before goes (one it no longer writes would be of another shape).
    m.rows.retain(|(t, _)| !t.starts_with("pyramid_") && !written.iter().any(|(w, _)| w == t));
    m.rows.extend(written);
    m.pyramid = Some(span);
    let text = serde_json::to_string_pretty(&m).map_err(|e| invalid(&path, e.to_string()))?;
    let temp = w.temp.join(MANIFEST);
    std::fs::write(&temp, text).map_err(|e| io(&temp, e))?;
    std::fs::rename(&temp, &path).map_err(|e| io(&path, e))?;
    Ok(m)
}

/// Seconds spent by [`sum_pyramid`] reading and summing the messages, then the intervals.
#[derive(Clone, Copy, Debug, Default)]
pub struct PyramidTimes {
    pub messages_s: f64,
    pub intervals_s: f64,
    /// Of both, the seconds spent summing (the rest decodes the files). The messages are summed
    /// on several threads, each batch by the thread that decoded it: their share is the threads'
    /// summing time divided by the threads.
    pub summing_s: f64,
}

/// The pyramid of `store` summed from its rows, streamed in batches, without writing anything.
pub fn sum_pyramid(
    store: &Path,
    progress: &dyn Fn(u64, u64),
) -> Result<(PyramidSpan, Pyramid, PyramidTimes), SourceError> {
    let m = manifest(store)?;
    let path = store.join(MANIFEST);
    let ranks = u32::try_from(m.rows("locations"))
        .ok()
        .filter(|&r| r > 0)
        .ok_or_else(|| invalid(&path, "holds no processes (locations) to sum a pyramid over"))?;
    let regions = u32::try_from(m.rows("regions")).unwrap_or(u32::MAX);
    let rows = rows::StoreRows::new(store, (m.rows("messages"), m.rows("intervals")), ranks, regions)?;
    let (t0, t1) = rows.span().ok_or_else(|| invalid(&path, "holds no messages or intervals to sum"))?;
    let span = PyramidSpan { t0, t1, ranks, states: regions.clamp(1, 64) };
    let mut b = PyramidBuilder::new(span.shape());
    let started = std::time::Instant::now();
    let mut times = PyramidTimes::default();
    let (messages, total) = (m.rows("messages"), m.rows("messages") + m.rows("intervals"));
    times.summing_s = rows.sum_messages(&mut b, &|done| progress(done, total))?;
    times.messages_s = started.elapsed().as_secs_f64();
    rows.each_interval(&|done| progress(messages + done, total), &mut |i| {
        let t = std::time::Instant::now();
        b.add_intervals(&i);
        times.summing_s += t.elapsed().as_secs_f64();
    })?;
    let p = b.finish();
    times.intervals_s = started.elapsed().as_secs_f64() - times.messages_s;
    Ok((span, p, times))
}

/// Reads a store's pyramid (`Ok(None)` where it has none).
pub fn pyramid(store: &Path) -> Result<Option<Pyramid>, SourceError> {
    pyramid_in(&Files::Folder(store.to_path_buf()))
}

/// [`pyramid`] of the store whose files are `store`.
pub fn pyramid_in(store: &Files) -> Result<Option<Pyramid>, SourceError> {
    let m = manifest_in(store)?;
    let Some(span) = m.pyramid else { return Ok(None) };
    if span.ranks == 0 || span.t1 < span.t0 || span.states == 0 {
        return Err(invalid(&store.path(MANIFEST), "pyramid span is impossible: re-run exaviz convert"));
    }
    let empty = PyramidBuilder::new(span.shape()).finish();
    let (mut levels, mut lines, mut locations) = (empty.levels, empty.lines, empty.locations);
    let mut c = read_table_in(store, &pyramid_messages_table(), m.rows("pyramid_messages"))?;
    let (lv, s, r, bin, count, bytes) = (
        take_u32(&mut c, 0),
        take_u32(&mut c, 1),
        take_u32(&mut c, 2),
        take_u32(&mut c, 3),
        take_u64(&mut c, 4),
        take_u64(&mut c, 5),
    );
    let bad = |t: &str| {
        invalid(&store.path(&format!("{t}.parquet")), "a cell lies outside the pyramid: re-run exaviz convert")
    };
    for i in 0..lv.len() {
        let l = levels.get_mut(lv[i] as usize).ok_or_else(|| bad("pyramid_messages"))?;
        if s[i] >= l.message_blocks || r[i] >= l.message_blocks || bin[i] >= l.message_bins {
            return Err(bad("pyramid_messages"));
        }
        let cell = ((s[i] * l.message_blocks + r[i]) * l.message_bins + bin[i]) as usize;
        l.counts[cell] = count[i];
        l.bytes[cell] = bytes[i];
    }
    let mut c = read_table_in(store, &pyramid_states_table(), m.rows("pyramid_states"))?;
    let (lv, b, st, bin, ticks) =
        (take_u32(&mut c, 0), take_u32(&mut c, 1), take_u32(&mut c, 2), take_u32(&mut c, 3), take_u64(&mut c, 4));
    for i in 0..lv.len() {
        let l = levels.get_mut(lv[i] as usize).ok_or_else(|| bad("pyramid_states"))?;
        if b[i] >= l.blocks || st[i] >= span.states || bin[i] >= l.state_bins {
            return Err(bad("pyramid_states"));
        }
        l.ticks[((b[i] * span.states + st[i]) * l.state_bins + bin[i]) as usize] = ticks[i];
    }
    if m.rows.iter().any(|(t, _)| t == "pyramid_lines")
        && let Some(l) = &mut lines
    {
        let mut c = read_table_in(store, &pyramid_lines_table(), m.rows("pyramid_lines"))?;
        let (b, bin, n, g) = (take_u32(&mut c, 0), take_u32(&mut c, 1), take_u64(&mut c, 2), take_u64(&mut c, 3));
        for i in 0..b.len() {
            if b[i] >= l.blocks || bin[i] >= l.bins {
                return Err(bad("pyramid_lines"));
            }
            let cell = l.cell(bin[i], b[i]);
            l.counts[cell] = n[i];
            l.gradient[cell] = g[i];
        }
    } else {
        lines = None;
    }
    if m.rows.iter().any(|(t, _)| t == "pyramid_locations")
        && let Some(tiles) = &mut locations
    {
        let mut c = read_table_in(store, &pyramid_locations_table(), m.rows("pyramid_locations"))?;
        let (l, st, bin, ticks) = (take_u32(&mut c, 0), take_u32(&mut c, 1), take_u32(&mut c, 2), take_u64(&mut c, 3));
        for i in 0..l.len() {
            if l[i] >= span.ranks || st[i] >= span.states || bin[i] >= tiles.bins {
                return Err(bad("pyramid_locations"));
            }
            tiles.ticks[((l[i] * span.states + st[i]) * tiles.bins + bin[i]) as usize] = ticks[i];
        }
    } else {
        locations = None;
    }
    let pairs = if m.rows.iter().any(|(t, _)| t == "pyramid_pairs") {
        let mut c = read_table_in(store, &pyramid_pairs_table(), m.rows("pyramid_pairs"))?;
        let shape = span.shape();
        let (source, destination, bins, bin, count, bytes) = (
            take_u32(&mut c, 0),
            take_u32(&mut c, 1),
            take_u32(&mut c, 2),
            take_u32(&mut c, 3),
            take_u64(&mut c, 4),
            take_u64(&mut c, 5),
        );
        let n = bins.first().copied().unwrap_or(PAIR_BINS.min(shape.message_bins));
        if !n.is_power_of_two() || n > PAIR_BINS.min(shape.message_bins) || bins.iter().any(|&b| b != n) {
            return Err(bad("pyramid_pairs"));
        }
        // Sorted by pair and bin, each cell once, inside the ranks and bins.
        for i in 0..source.len() {
            let key = (source[i], destination[i], bin[i]);
            if source[i] >= span.ranks
                || destination[i] >= span.ranks
                || bin[i] >= n
                || (i > 0 && (source[i - 1], destination[i - 1], bin[i - 1]) >= key)
            {
                return Err(bad("pyramid_pairs"));
            }
        }
        let bin_ticks = shape.message_bin_ticks() * u64::from(shape.message_bins / n);
        Some(PairTiles { bins: n, bin_ticks, source, destination, bin, count, bytes })
    } else {
        None
    };
    Ok(Some(Pyramid { shape: span.shape(), levels, lines, locations, pairs }))
}
