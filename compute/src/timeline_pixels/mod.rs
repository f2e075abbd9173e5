//! The timeline's plot pixels made where the trace's columns are kept: per pixel row the states
//! its locations are in over each pixel column's time (the innermost state, or the intervals of
//! one nesting level), the message lines of the window with their direction, the lines' counts
//! ranked, and every pixel composed into straight RGBA8, left on the device for the renderer
//! ([`crate::DeviceWords`]). Between two pictures only the window, the look and, where the rows
//! changed, the layout table move to the device: the columns are uploaded once, under their
//! owner. Shader: `timeline_pixels.wgsl` beside this file; CPU mirror: [`mirror`].
//!
//! The composed colours follow the CPU path of the timeline (its state coverage, tone and
//! mixing) in `f32` and fixed point: coverage in 2^-24 of a row's column, so a pixel may differ
//! from it by a unit or two of 255, and a line whose end falls on a pixel's edge may step
//! differently. Line counts above 65,536 in one pixel share the last rank.

pub mod mirror;

use std::sync::Arc;

use super::{BufId, Kernel, Owner, Recording, Runner, StageError, check_binding, chunks};
use crate::held::DeviceWords;
pub use mirror::{INNERMOST, NONE, Params, RANKED, SLOTS, SUMMARY_RUN};

/// Spans of states on locations: the innermost pieces, or intervals with their depth.
#[derive(Clone, Copy, Debug)]
pub struct SpanColumns<'a> {
    pub starts: &'a [u64],
    pub ends: &'a [u64],
    pub locations: &'a [u32],
    /// Region ids, coloured by the layout's slot per kind.
    pub kinds: &'a [u32],
    /// Nesting depths (intervals drawn in bands per level); `None` for innermost pieces.
    pub depths: Option<&'a [u32]>,
}

/// Messages: send and receive ticks (`u64::MAX`: never received), sender and receiver, size
/// and tag (read only where a filter asks for them).
#[derive(Clone, Copy, Debug)]
pub struct MessageColumns<'a> {
    pub send: &'a [u64],
    pub recv: &'a [u64],
    pub source: &'a [u32],
    pub destination: &'a [u32],
    pub bytes: &'a [u32],
    pub tags: &'a [u32],
}

/// Which messages are drawn: sizes and senders and receivers in ranges (both ends included), a
/// tag; the same as the model's `MessageFilter`, which this layer does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filter {
    pub bytes: (u32, u32),
    pub tag: Option<u32>,
    pub senders: (u32, u32),
    pub receivers: (u32, u32),
}

impl Default for Filter {
    fn default() -> Self {
        Self { bytes: (0, u32::MAX), tag: None, senders: (0, u32::MAX), receivers: (0, u32::MAX) }
    }
}

impl Filter {
    /// Whether it reads the sizes or tags.
    pub fn reads_sizes_or_tags(&self) -> bool {
        self.bytes != (0, u32::MAX) || self.tag.is_some()
    }
}

/// What the pixels are made from: columns that stay the same while `owner` lives (kept on a
/// GPU device under it) or, without an owner, uploaded for this run alone.
#[derive(Clone, Debug)]
pub struct Columns<'a> {
    pub pieces: SpanColumns<'a>,
    pub intervals: Option<SpanColumns<'a>>,
    pub messages: Option<MessageColumns<'a>>,
    pub owner: Option<Owner>,
}

/// What each pixel row shows and where each location's row is: the table the kernels read.
/// Equal layouts kept in one `Arc` are uploaded once (the table is its own owner).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub words: Arc<Vec<u32>>,
    pub kinds: u32,
    pub locations: u32,
    pub height: u32,
    pub runs: u32,
    /// Whether any run shows a nesting level (else the intervals are not walked).
    pub levels: bool,
}

/// One run of pixel rows showing the same: its locations and level ([`INNERMOST`] or a depth).
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub locations: Vec<u32>,
    pub level: u32,
}

impl Layout {
    /// The table of `slot_of_kind` (a colour slot per region id), each location's row centre
    /// (plot pixels), each pixel row's run (an index of `runs`, or [`NONE`]) and how far up
    /// its run the row's centre is (0 to 1), and the runs.
    ///
    /// Locations of the same centre and runs share a class (a band of a thousand ranks is one),
    /// so the table holds per location only its class, in 8 or 16 bits where the classes are
    /// few enough: about a byte a location where the rows are grouped, against 40 bytes a
    /// location each with its own centre and entries.
    pub fn new(slot_of_kind: &[u32], centres: &[f32], rows: &[(u32, f32)], runs: &[Run]) -> Self {
        let locations = centres.len();
        // Each location's entries, one run of one array (a location's entries in runs' order).
        let mut per_location = vec![0usize; locations + 1];
        for r in runs {
            for &l in r.locations.iter().filter(|&&l| (l as usize) < locations) {
                per_location[l as usize + 1] += 1;
            }
        }
        for l in 0..locations {
            per_location[l + 1] += per_location[l];
        }
        let mut entries = vec![[0u32; 4]; per_location[locations]];
        let mut next = per_location.clone();
        for (k, r) in runs.iter().enumerate() {
            // One location's row covering a whole column counts as one over the run's locations.
            let weight = (f64::from(mirror::ONE) / r.locations.len().max(1) as f64).round() as u32;
            for &l in r.locations.iter().filter(|&&l| (l as usize) < locations) {
                entries[next[l as usize]] = [k as u32, r.level, weight, 0];
                next[l as usize] += 1;
            }
        }
        let mut classes: std::collections::HashMap<(u32, &[[u32; 4]]), u32> = std::collections::HashMap::new();
        let mut first: Vec<(u32, &[[u32; 4]])> = Vec::new();
        let class_of: Vec<u32> = (0..locations)
            .map(|l| {
                let key = (centres[l].to_bits(), &entries[per_location[l]..per_location[l + 1]]);
                *classes.entry(key).or_insert_with(|| {
                    first.push(key);
                    first.len() as u32 - 1
                })
            })
            .collect();
        let bits: u32 = match first.len() {
            0..=256 => 8,
            257..=65_536 => 16,
            _ => 32,
        };
        let per = (32 / bits) as usize;
        let mut words = Vec::with_capacity(slot_of_kind.len() + 2 + locations / per + 3 * first.len() + 2 * rows.len());
        words.extend_from_slice(slot_of_kind);
        words.extend([bits, first.len() as u32]);
        words.extend(
            class_of.chunks(per).map(|c| c.iter().enumerate().fold(0u32, |w, (k, &v)| w | (v << (k as u32 * bits)))),
        );
        let mut at = 0u32;
        words.push(0);
        for (_, entries) in &first {
            at += entries.len() as u32;
            words.push(at);
        }
        words.extend(first.iter().map(|(centre, _)| *centre));
        for &(run, up) in rows {
            words.push(run);
            words.push(up.to_bits());
        }
        words.extend(first.iter().flat_map(|(_, entries)| entries.iter().flatten()));
        Self {
            words: Arc::new(words),
            kinds: slot_of_kind.len() as u32,
            locations: locations as u32,
            height: rows.len() as u32,
            runs: runs.len() as u32,
            levels: runs.iter().any(|r| r.level != INNERMOST),
        }
    }

    /// The table of pixel rows alone, each row's run and how far up it (the summary's rows
    /// flagged [`SUMMARY_RUN`]), for a picture whose runs are not of located rows.
    pub fn of_rows(rows: &[(u32, f32)], runs: u32) -> Self {
        // No kinds, no locations: 32 bits a location, no classes, the classes' first offset.
        let mut words = vec![32, 0, 0];
        words.extend(rows.iter().flat_map(|&(run, up)| [run, up.to_bits()]));
        Self { words: Arc::new(words), kinds: 0, locations: 0, height: rows.len() as u32, runs, levels: false }
    }
}

/// The picture asked for: the plot's size, the window `[t0, t1]` (ticks, `t0 < t1`) and how
/// states and lines are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub width: u32,
    pub height: u32,
    pub window: (u64, u64),
    /// States' shares stacked up a run's rows, rather than each pixel's dominant state.
    pub stacked: bool,
    /// The message lines' opacity (0 to 1; 0 draws none).
    pub opacity: f32,
    /// Lines added rather than drawn over each other.
    pub additive: bool,
    /// Which messages are drawn.
    pub filter: Filter,
}

/// The composed plot, kept where it was made.
#[derive(Clone, Debug)]
pub struct Pixels {
    /// Straight RGBA8 per pixel, red in the low byte (0: nothing there), rows of `stride` words.
    pub rgba: DeviceWords,
    pub stride: u32,
    /// Message lines per pixel, row-major (for tooltips).
    pub counts: DeviceWords,
    /// The most lines through one pixel, and the pixels with lines.
    pub max_count: u32,
    pub pixels_with_lines: u32,
    /// The line counts at the quantiles 0, 1/2 and 1 of the pixels with lines (a count past
    /// [`RANKED`] at 0 or 1/2 is given as [`RANKED`]).
    pub quantiles: [u32; 3],
}

/// Words per row of the composed picture: rows start 256 bytes apart, as a copy from a buffer
/// into a texture needs.
pub fn stride(width: u32) -> u32 {
    width.div_ceil(64) * 64
}

/// Words of the coverage per run, column and slot, and of its whole-column differences.
fn coverage_words(layout: &Layout, width: u32) -> u64 {
    2 * u64::from(layout.runs.max(1)) * u64::from(width) * u64::from(SLOTS)
}

/// Bytes the device holds for one picture of `look` with `layout` (besides the columns).
pub fn picture_bytes(layout: &Layout, look: &Look) -> u64 {
    let pixels = u64::from(look.width) * u64::from(look.height);
    4 * (coverage_words(layout, look.width)
        + 3 * pixels
        + u64::from(stride(look.width)) * u64::from(look.height)
        + 2 * u64::from(RANKED + 1))
}

fn words64(v: &[u64]) -> &[u32] {
    bytemuck::cast_slice(v)
}

/// The recording of a picture of `look` from `parts` of the columns, each kept under its own
/// owner (a window's chunks of a store's rows: the innermost pieces of the parts together
/// cover each location's time once, as do their intervals and messages).
pub fn record<'a>(
    parts: &'a [Columns<'a>],
    layout: &'a Layout,
    layout_owner: &Owner,
    look: &Look,
    max_binding_bytes: u64,
) -> Result<Recording<'a>, StageError> {
    let (w, h) = (look.width, look.height);
    let pixels = u64::from(w) * u64::from(h);
    if pixels == 0 {
        return Err(StageError::Input("timeline pixels: the plot has no pixels".into()));
    }
    if look.window.1 <= look.window.0 {
        return Err(StageError::Input("timeline pixels: an empty window".into()));
    }
    if layout.height != h || layout.words.len() as u64 > max_binding_bytes / 4 {
        return Err(StageError::Input("timeline pixels: the layout is not of this plot".into()));
    }
    let acc_words = coverage_words(layout, w);
    check_binding("timeline coverage", acc_words * 4, max_binding_bytes)?;
    check_binding("timeline sums", pixels * 8, max_binding_bytes)?;
    let stride = stride(w);
    check_binding("timeline picture", u64::from(stride) * u64::from(h) * 4, max_binding_bytes)?;
    let base = base_params(layout, look);
    let params = |n: u32, spans: u32| bytemuck::cast_slice::<Params, u32>(&[Params { n, spans, ..base }]).to_vec();
    let mut rec = Recording::default();
    let table = rec.alloc(layout.words.len() as u64, "timeline.table");
    rec.upload_kept(table, &layout.words, layout_owner);
    let acc = rec.alloc(acc_words, "timeline.coverage");
    for columns in parts {
        let owner = columns.owner.as_ref();
        let spans =
            [Some((&columns.pieces, 0u32)), columns.intervals.as_ref().filter(|_| layout.levels).map(|s| (s, 1))];
        for (s, mode) in spans.into_iter().flatten() {
            record_spans(&mut rec, s, mode, owner, (table, acc), &params, max_binding_bytes)?;
        }
    }
    let runs = layout.runs * SLOTS;
    rec.dispatch(Kernel::StatePrefix, runs, params(runs, 0), vec![(7, acc)]);
    let counts = rec.alloc(pixels, "timeline.counts");
    let sums = rec.alloc(2 * pixels, "timeline.sums");
    for columns in parts {
        if let Some(m) = &columns.messages {
            let filtered = look.filter.reads_sizes_or_tags();
            let owner = columns.owner.as_ref();
            record_messages(&mut rec, (m, filtered), owner, [table, counts, sums], &params, max_binding_bytes)?;
        }
    }
    record_compose(&mut rec, [table, acc, counts, sums], &base);
    Ok(rec)
}

/// The uniform of every kernel of a picture of `look` with `layout`.
pub(crate) fn base_params(layout: &Layout, look: &Look) -> Params {
    let (w, h) = (look.width, look.height);
    let stride = stride(w);
    let split = |t: u64| [t as u32, (t >> 32) as u32];
    Params {
        n: 0,
        width: w,
        height: h,
        locations: layout.locations,
        t0: split(look.window.0),
        t1: split(look.window.1),
        px_per_tick: (f64::from(w) / (look.window.1 - look.window.0) as f64) as f32,
        spans: 0,
        runs: layout.runs,
        stride,
        opacity: if look.opacity.is_finite() { look.opacity.clamp(0.0, 1.0) } else { 0.0 },
        additive: u32::from(look.additive),
        kinds: layout.kinds,
        stacked: u32::from(look.stacked),
        bytes: [look.filter.bytes.0, look.filter.bytes.1],
        tag: look.filter.tag.unwrap_or(0),
        has_tag: u32::from(look.filter.tag.is_some()),
        senders: [look.filter.senders.0, look.filter.senders.1],
        receivers: [look.filter.receivers.0, look.filter.receivers.1],
    }
}

/// The tail of a picture's recording: the line counts ranked and every pixel composed from the
/// coverage `acc`, the `counts` and `sums` and the layout `table`; keeps the picture and the
/// counts and downloads the statistics ([`pixels_of`] reads them).
pub(crate) fn record_compose(rec: &mut Recording<'_>, [table, acc, counts, sums]: [BufId; 4], base: &Params) {
    let params = |n: u32| bytemuck::cast_slice::<Params, u32>(&[Params { n, ..*base }]).to_vec();
    let hist = rec.alloc(u64::from(RANKED) + 1, "timeline.histogram");
    let stats = rec.alloc(5, "timeline.stats");
    let ranks = rec.alloc(u64::from(RANKED) + 1, "timeline.ranks");
    let n = base.width * base.height;
    rec.dispatch(Kernel::ToneHistogram, n, params(n), vec![(12, counts), (14, hist), (15, stats)]);
    rec.dispatch(Kernel::ToneRanks, 256, params(RANKED + 1), vec![(14, hist), (15, stats), (16, ranks)]);
    let out = rec.alloc(u64::from(base.stride) * u64::from(base.height), "timeline.picture");
    let bindings = vec![(6, table), (7, acc), (12, counts), (13, sums), (15, stats), (16, ranks), (17, out)];
    rec.dispatch(Kernel::TimelineCompose, n, params(n), bindings);
    rec.keep(out);
    rec.keep(counts);
    rec.download(stats);
}

/// The state spans' dispatches (`mode` 0: innermost pieces, 1: intervals by depth), in chunks
/// of one binding each.
fn record_spans<'a>(
    rec: &mut Recording<'a>,
    s: &SpanColumns<'a>,
    mode: u32,
    owner: Option<&Owner>,
    (table, acc): (BufId, BufId),
    params: &dyn Fn(u32, u32) -> Vec<u32>,
    max_binding_bytes: u64,
) -> Result<(), StageError> {
    let n = s.locations.len();
    if s.starts.len() != n || s.ends.len() != n || s.kinds.len() != n || s.depths.is_some_and(|d| d.len() != n) {
        return Err(StageError::Input("timeline pixels: span columns differ in length".into()));
    }
    if mode == 1 && s.depths.is_none() {
        return Err(StageError::Input("timeline pixels: intervals without their depths".into()));
    }
    if n == 0 {
        return Ok(());
    }
    let parts: Vec<_> = chunks(n, 8, max_binding_bytes).collect();
    let most = parts.first().map_or(1, |r| r.len() as u64);
    let (starts, ends) = (rec.alloc(2 * most, "timeline.starts"), rec.alloc(2 * most, "timeline.ends"));
    let (locs, kinds) = (rec.alloc(most, "timeline.locations"), rec.alloc(most, "timeline.kinds"));
    let depths = rec.alloc(if mode == 1 { most } else { 1 }, "timeline.depths");
    for r in parts {
        rec.upload_maybe_kept(starts, words64(&s.starts[r.clone()]), owner);
        rec.upload_maybe_kept(ends, words64(&s.ends[r.clone()]), owner);
        rec.upload_maybe_kept(locs, &s.locations[r.clone()], owner);
        rec.upload_maybe_kept(kinds, &s.kinds[r.clone()], owner);
        if let Some(d) = s.depths.filter(|_| mode == 1) {
            rec.upload_maybe_kept(depths, &d[r.clone()], owner);
        }
        let len = r.len() as u32;
        let bindings = vec![(1, starts), (2, ends), (3, locs), (4, kinds), (5, depths), (6, table), (7, acc)];
        rec.dispatch(Kernel::StateCover, len, params(len, mode), bindings);
    }
    Ok(())
}

/// The message lines' dispatches, in chunks of one binding each.
fn record_messages<'a>(
    rec: &mut Recording<'a>,
    (m, filtered): (&MessageColumns<'a>, bool),
    owner: Option<&Owner>,
    [table, counts, sums]: [BufId; 3],
    params: &dyn Fn(u32, u32) -> Vec<u32>,
    max_binding_bytes: u64,
) -> Result<(), StageError> {
    let n = m.source.len();
    let sized = m.bytes.len() == n && m.tags.len() == n;
    if m.send.len() != n || m.recv.len() != n || m.destination.len() != n || (filtered && !sized) {
        return Err(StageError::Input("timeline pixels: message columns differ in length".into()));
    }
    if n == 0 {
        return Ok(());
    }
    let parts: Vec<_> = chunks(n, 8, max_binding_bytes).collect();
    let most = parts.first().map_or(1, |r| r.len() as u64);
    let (send, recv) = (rec.alloc(2 * most, "timeline.send"), rec.alloc(2 * most, "timeline.recv"));
    let (src, dst) = (rec.alloc(most, "timeline.source"), rec.alloc(most, "timeline.destination"));
    let (sizes, tags) = match filtered {
        true => (rec.alloc(most, "timeline.sizes"), rec.alloc(most, "timeline.tags")),
        false => (src, dst),
    };
    for r in parts {
        rec.upload_maybe_kept(send, words64(&m.send[r.clone()]), owner);
        rec.upload_maybe_kept(recv, words64(&m.recv[r.clone()]), owner);
        rec.upload_maybe_kept(src, &m.source[r.clone()], owner);
        rec.upload_maybe_kept(dst, &m.destination[r.clone()], owner);
        let len = r.len() as u32;
        let mut bindings = vec![(6, table), (8, send), (9, recv), (10, src), (11, dst), (12, counts), (13, sums)];
        let kernel = if filtered {
            rec.upload_maybe_kept(sizes, &m.bytes[r.clone()], owner);
            rec.upload_maybe_kept(tags, &m.tags[r.clone()], owner);
            bindings.extend([(18, sizes), (19, tags)]);
            Kernel::MessageLinesFiltered
        } else {
            Kernel::MessageLines
        };
        rec.dispatch(kernel, len, params(len, 0), bindings);
    }
    Ok(())
}

/// The composed plot of `look` (see the module's description).
pub fn run(runner: &mut dyn Runner, columns: &Columns<'_>, layout: &Layout, look: &Look) -> Result<Pixels, StageError> {
    run_parts(runner, std::slice::from_ref(columns), layout, look)
}

/// [`run`] over the columns in `parts`, each kept under its own owner ([`record`]).
pub fn run_parts(
    runner: &mut dyn Runner,
    parts: &[Columns<'_>],
    layout: &Layout,
    look: &Look,
) -> Result<Pixels, StageError> {
    let layout_owner: Owner = layout.words.clone();
    let rec = record(parts, layout, &layout_owner, look, runner.max_binding_bytes())?;
    pixels_of(runner.run_keeping(&rec)?, look.width)
}

/// The picture of a run of [`record_compose`]'s recording.
pub(crate) fn pixels_of(out: super::Outputs, width: u32) -> Result<Pixels, StageError> {
    let missing = || StageError::Input("timeline pixels: outputs missing".into());
    let mut kept = out.kept.into_iter();
    let (rgba, counts) = (kept.next().ok_or_else(missing)?, kept.next().ok_or_else(missing)?);
    let stats = out.downloads.into_iter().next().ok_or_else(missing)?;
    Ok(Pixels {
        rgba,
        stride: stride(width),
        counts,
        max_count: stats.first().copied().unwrap_or(0),
        pixels_with_lines: stats.get(1).copied().unwrap_or(0),
        quantiles: [2, 3, 4].map(|k| stats.get(k).copied().unwrap_or(0)),
    })
}
