//! What the training views (Marey, training, topology, strategy) share: a dataset's training
//! run, and an operator's window in the Marey graph.

use exaviz_model::dataset::Dataset;
use exaviz_model::training::Training;

use super::ViewError;

/// The dataset's training run, or the error that says what the view needs.
pub fn training(d: &Dataset) -> Result<&Training, ViewError> {
    d.training.as_deref().ok_or_else(|| {
        ViewError::Unsupported(
            "the view needs a training profile (Kineto, JAX or PerfFlowAspect Chrome traces, or gen:training)".into(),
        )
    })
}

/// The Marey view's time window (seconds from its start) around the first run of operator `name`
/// on every device, padded by twice its length on each side, with the devices' clock `offsets`
/// (`exaviz_analysis::training::offsets`; the view aligns fully by default): what a click on the operator in the
/// strategy view selects. `None` where no device runs it.
pub fn operator_window(t: &Training, offsets: &[i64], name: &str) -> Option<(f64, f64)> {
    let k = t.names.iter().position(|n| n == name)? as u32;
    let (mut origin, mut lo, mut hi) = (f64::MAX, f64::MAX, f64::MIN);
    for (d, &off) in offsets.iter().enumerate().take(t.devices.len()) {
        let r = t.ops_of(d);
        if let Some(first) = r.clone().next() {
            origin = origin.min(t.ops.start[first] as f64 + off as f64);
        }
        if let Some(i) = r.clone().find(|&i| t.ops.name[i] == k) {
            lo = lo.min(t.ops.start[i] as f64 + off as f64);
            hi = hi.max(t.ops.end[i] as f64 + off as f64);
        }
    }
    if lo > hi {
        return None;
    }
    let pad = ((hi - lo) * 2.0).max(1_000.0);
    Some((((lo - pad - origin).max(0.0)) / 1e9, (hi + pad - origin) / 1e9))
}
