//! The fattree view's job table (T5, T6): jobs filtered by size, duration and overlap with the
//! active range, sorted, each row a click target; selected jobs carry their placement colour.

use exaviz_model::fattree::{FatTree, Job};
use exaviz_model::selection::Selection;
use exaviz_render::{Anchor, Scene};

use super::super::plot::{CATEGORICAL, fit};
use super::{FatTreeArgs, JobSort, Layout, TEXT, TEXT_DIM, clock, duration};

const ROW: f32 = 16.0;

/// The jobs the table lists, in its order.
pub fn listed<'a>(t: &'a FatTree, args: &FatTreeArgs, range: (usize, usize)) -> Vec<&'a Job> {
    let (from, to) =
        (t.times.get(range.0).copied().unwrap_or(i64::MIN), t.times.get(range.1).copied().unwrap_or(i64::MAX));
    let mut jobs: Vec<&Job> = t
        .jobs
        .iter()
        .filter(|j| j.nodes.len() as u64 >= u64::from(args.min_nodes))
        .filter(|j| (j.end - j.start).max(0) as u64 >= args.min_duration)
        .filter(|j| !args.overlap || (j.start < to && j.end > from))
        .collect();
    match args.sort {
        JobSort::Start => jobs.sort_by_key(|j| (j.start, j.id)),
        JobSort::Nodes => jobs.sort_by_key(|j| (std::cmp::Reverse(j.nodes.len()), j.id)),
        JobSort::Duration => jobs.sort_by_key(|j| (std::cmp::Reverse(j.end - j.start), j.id)),
        JobSort::Id => jobs.sort_by_key(|j| j.id),
    }
    jobs
}

/// Draws the table; returns each row's rectangle and job id.
pub fn job_table(
    scene: &mut Scene,
    t: &FatTree,
    l: &Layout,
    args: &FatTreeArgs,
    selection: &Selection,
    range: (usize, usize),
) -> Vec<([f32; 4], u64)> {
    let [x0, y0, x1, y1] = l.table;
    let jobs = listed(t, args, range);
    let selected: Vec<u64> = selection.jobs.map(|j| j.ids().to_vec()).unwrap_or_default();
    let title = format!("jobs ({} of {}) · click to select", jobs.len(), t.jobs.len());
    scene.text(&title, [x0, y0 + 12.0], 12.0, Anchor::Left, TEXT);
    let cols = [0.0, 62.0, 142.0, 182.0, 228.0];
    let y = y0 + 32.0;
    for (c, h) in cols.iter().zip(["job", "name", "nodes", "start", "time"]) {
        scene.text(h, [x0 + 14.0 + c, y], 11.0, Anchor::Left, TEXT_DIM);
    }
    let fits = (((y1 - y - 6.0) / ROW).floor().max(0.0)) as usize;
    let mut rows = Vec::new();
    for (i, j) in jobs.iter().take(fits).enumerate() {
        let top = y + 6.0 + i as f32 * ROW;
        let rect = [x0, top, x1, top + ROW];
        if let Some(k) = selected.iter().position(|&s| s == j.id) {
            let c = CATEGORICAL[k % CATEGORICAL.len()];
            scene.rect([x0, top + 1.0], [x1, top + ROW - 1.0], [c[0], c[1], c[2], 0.28], true);
            scene.rect([x0 + 2.0, top + 4.0], [x0 + 10.0, top + ROW - 4.0], [c[0], c[1], c[2], 1.0], true);
        }
        let cells = [
            j.id.to_string(),
            fit(&j.name, 76.0, 11.0),
            j.nodes.len().to_string(),
            clock(j.start),
            duration(j.end - j.start),
        ];
        for (c, text) in cols.iter().zip(cells) {
            scene.text(&text, [x0 + 14.0 + c, top + 12.0], 11.0, Anchor::Left, TEXT);
        }
        rows.push((rect, j.id));
    }
    if jobs.len() > fits {
        let more = format!("{} more (filter with --min-nodes, --min-duration, --overlap)", jobs.len() - fits);
        scene.text(&fit(&more, x1 - x0, 11.0), [x0, y1 - 2.0], 11.0, Anchor::Left, TEXT_DIM);
    }
    rows
}
