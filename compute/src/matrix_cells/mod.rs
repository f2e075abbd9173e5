//! The communication matrix's cells made where the messages are kept: the messages' send ticks,
//! senders, receivers and sizes (and tags, where a filter reads them) go to the device once, under their owner, and each rank's slot
//! on the matrix's sides while it stays the same; a window sends its ticks and its filter. The
//! kernels count every message sent in the window and kept by the filter into its cell with its bytes (exact 64-bit sums), find the
//! least and the largest non-zero value exactly, and colour every cell on the scale the host's
//! matrix takes from them (logarithmic past a ratio of 100, else linear from 0) through a table
//! of the colour map, as straight RGBA8 rows left on the device for the renderer
//! ([`crate::DeviceWords`]); the counts and sums stay there too, for a tooltip to read one
//! cell. Read back: five words (the window's messages, the largest and least values).
//! Shader: `matrix_cells.wgsl` beside this file; CPU mirror: [`mirror`].
//!
//! The scale is applied in `f32` (the host's in `f64`) and the colour map from a table of its
//! samples interpolated: a cell may differ from the host's by a unit or two of 255 a channel.

pub mod mirror;

use std::sync::Arc;

use super::{Kernel, Owner, Recording, Runner, StageError, check_binding, chunks};
use crate::held::DeviceWords;
pub use mirror::Params;

/// The messages binned: kept on a GPU device under `owner` while it lives (uploaded for this
/// run alone without one).
#[derive(Clone, Copy, Debug)]
pub struct Messages<'a> {
    pub send: &'a [u64],
    pub source: &'a [u32],
    pub destination: &'a [u32],
    pub bytes: &'a [u32],
    /// Read where the filter asks for a tag (a ninth storage binding).
    pub tags: &'a [u32],
    pub owner: Option<&'a Owner>,
}

/// The matrix asked for: `cells` a side, each rank's slot on both sides (past `cells`: not
/// drawn; its own owner, so that an equal table kept in one `Arc` goes up once), the window of
/// send ticks `[from, to)`, whether a cell's value is its bytes or its messages.
#[derive(Clone, Debug)]
pub struct Look<'a> {
    pub cells: u32,
    pub slot: &'a Arc<Vec<u32>>,
    pub window: (u64, u64),
    pub by_bytes: bool,
    /// The messages counted.
    pub filter: crate::timeline_pixels::Filter,
}

/// The matrix's cells, kept where they were made.
#[derive(Clone, Debug)]
pub struct Cells {
    /// Straight RGBA8 per cell (0: no message), rows of `stride` words.
    pub rgba: DeviceWords,
    pub stride: u32,
    /// Per cell its messages, and its bytes (low word, high word), row-major by sender.
    pub counts: DeviceWords,
    pub sums: DeviceWords,
    /// The messages sent in the window (their ranks drawn or not).
    pub messages: u64,
    /// The least and the largest non-zero value of a cell (bytes or messages); `None` where
    /// every cell is empty.
    pub range: Option<(u64, u64)>,
}

pub fn record<'a>(
    m: &Messages<'a>,
    look: &Look<'a>,
    table: &'a Arc<Vec<u32>>,
    max_binding_bytes: u64,
) -> Result<Recording<'a>, StageError> {
    let n = m.source.len();
    let tagged = look.filter.tag.is_some();
    if m.send.len() != n || m.destination.len() != n || m.bytes.len() != n || (tagged && m.tags.len() != n) {
        return Err(StageError::Input("matrix cells: message columns differ in length".into()));
    }
    let cells = u64::from(look.cells) * u64::from(look.cells);
    if cells == 0 || cells > u64::from(u32::MAX) {
        return Err(StageError::Input(format!("matrix cells: {} cells a side", look.cells)));
    }
    let points = table.len() / 4;
    if points < 2 || !table.len().is_multiple_of(4) {
        return Err(StageError::Input("matrix cells: a colour table of fewer than two points".into()));
    }
    check_binding("matrix sums", cells * 8, max_binding_bytes)?;
    let stride = crate::timeline_pixels::stride(look.cells);
    check_binding("matrix picture", u64::from(stride) * u64::from(look.cells) * 4, max_binding_bytes)?;
    let split = |t: u64| [t as u32, (t >> 32) as u32];
    let base = Params {
        n: 0,
        cells: look.cells,
        ranks: look.slot.len() as u32,
        by_bytes: u32::from(look.by_bytes),
        from: split(look.window.0),
        to: split(look.window.1),
        phase: 0,
        stride,
        table: points as u32,
        has_tag: u32::from(tagged),
        bytes: [look.filter.bytes.0, look.filter.bytes.1],
        senders: [look.filter.senders.0, look.filter.senders.1],
        receivers: [look.filter.receivers.0, look.filter.receivers.1],
        tag: look.filter.tag.unwrap_or(0),
        pad: 0,
    };
    let params = |n: u32, phase: u32| bytemuck::cast_slice::<Params, u32>(&[Params { n, phase, ..base }]).to_vec();
    let mut rec = Recording::default();
    let counts = rec.alloc(cells, "matrix.counts");
    let sums = rec.alloc(2 * cells, "matrix.sums");
    let stats = rec.alloc(5, "matrix.stats");
    rec.upload(stats, &[0, 0, 0, u32::MAX, u32::MAX]);
    let slot = rec.alloc(look.slot.len().max(1) as u64, "matrix.slot");
    let slot_owner: Owner = look.slot.clone();
    rec.upload_kept(slot, look.slot, &slot_owner);
    let parts: Vec<_> = chunks(n, 8, max_binding_bytes).collect();
    let most = parts.first().map_or(1, |r| r.len() as u64);
    let send = rec.alloc(2 * most, "matrix.send");
    let (src, dst, bytes) =
        (rec.alloc(most, "matrix.source"), rec.alloc(most, "matrix.destination"), rec.alloc(most, "matrix.bytes"));
    let tags = rec.alloc(if tagged { most } else { 1 }, "matrix.tags");
    for r in parts {
        rec.upload_maybe_kept(send, bytemuck::cast_slice(&m.send[r.clone()]), m.owner);
        rec.upload_maybe_kept(src, &m.source[r.clone()], m.owner);
        rec.upload_maybe_kept(dst, &m.destination[r.clone()], m.owner);
        rec.upload_maybe_kept(bytes, &m.bytes[r.clone()], m.owner);
        let len = r.len() as u32;
        let mut bindings =
            vec![(1, send), (2, src), (3, dst), (4, bytes), (5, slot), (6, counts), (7, sums), (8, stats)];
        let kernel = if tagged {
            rec.upload_maybe_kept(tags, &m.tags[r.clone()], m.owner);
            bindings.push((11, tags));
            Kernel::MatrixBinTagged
        } else {
            Kernel::MatrixBin
        };
        rec.dispatch(kernel, len, params(len, 0), bindings);
    }
    let all = cells as u32;
    for phase in [0, 1] {
        rec.dispatch(Kernel::MatrixRange, all, params(all, phase), vec![(6, counts), (7, sums), (8, stats)]);
    }
    let colours = rec.alloc(table.len() as u64, "matrix.table");
    let table_owner: Owner = table.clone();
    rec.upload_kept(colours, table, &table_owner);
    let out = rec.alloc(u64::from(stride) * u64::from(look.cells), "matrix.picture");
    let bindings = vec![(6, counts), (7, sums), (8, stats), (9, colours), (10, out)];
    rec.dispatch(Kernel::MatrixColour, all, params(all, 0), bindings);
    rec.keep(out);
    rec.keep(counts);
    rec.keep(sums);
    rec.download(stats);
    Ok(rec)
}

/// The matrix of `look` from the messages `m` (see the module's description); `table` a colour
/// table as [`crate::curve_density::table`] makes one.
pub fn run(
    runner: &mut dyn Runner,
    m: &Messages<'_>,
    look: &Look<'_>,
    table: &Arc<Vec<u32>>,
) -> Result<Cells, StageError> {
    let rec = record(m, look, table, runner.max_binding_bytes())?;
    let out = runner.run_keeping(&rec)?;
    let missing = || StageError::Input("matrix cells: outputs missing".into());
    let mut kept = out.kept.into_iter();
    let (rgba, counts, sums) =
        (kept.next().ok_or_else(missing)?, kept.next().ok_or_else(missing)?, kept.next().ok_or_else(missing)?);
    let stats = out.downloads.into_iter().next().ok_or_else(missing)?;
    let word = |k: usize| u64::from(stats.get(k).copied().unwrap_or(0));
    let (largest, least) = ((word(1) << 32) | word(2), (word(3) << 32) | word(4));
    Ok(Cells {
        rgba,
        stride: crate::timeline_pixels::stride(look.cells),
        counts,
        sums,
        messages: word(0),
        range: (largest > 0).then_some((least, largest)),
    })
}
