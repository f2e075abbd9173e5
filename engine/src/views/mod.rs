//! Views: from a dataset to a [`crate::render::Scene`], running compute stages on the backend.

pub mod chord;
pub mod contract;
pub mod density;
pub mod embedding;
pub mod fattree;
pub mod group;
pub mod legend;
pub mod linked;
pub mod marey;
pub mod matrix;
pub mod mpi_linked;
pub mod options;
pub mod pairs;
pub mod parcoords;
pub mod plot;
pub mod ring;
pub mod select;
pub mod sendrecv;
pub mod themeriver;
pub mod timeline;
pub mod torus_views;
pub mod track;

pub use contract::{Frame, Pick, Prepared, REGISTRY, View};

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Stage(#[from] crate::stages::StageError),
}

/// Dark background shared by the views (viridis' bright end stands out on it).
pub const BACKGROUND: [f32; 3] = [0.067, 0.075, 0.094];
pub const TEXT: [f32; 4] = [0.92, 0.92, 0.95, 1.0];
pub const TEXT_DIM: [f32; 4] = [0.65, 0.66, 0.72, 1.0];

/// The dataset's torus, with at least one node; without one, the error starts with `who`
/// ("the ring view needs").
pub(crate) fn torus<'a>(
    dataset: &'a crate::model::Dataset,
    who: &str,
) -> Result<&'a crate::model::Topology, ViewError> {
    let topo = dataset
        .topology
        .as_ref()
        .ok_or_else(|| ViewError::Unsupported(format!("{who} a topology (a Boxfish file or gen:torus-sim)")))?;
    if topo.node_count() == 0 {
        return Err(ViewError::Unsupported("the topology has no nodes".into()));
    }
    Ok(topo)
}

/// A time slice `[from, to)` must not be empty.
pub(crate) fn check_slice(slice: Option<(u64, u64)>) -> Result<(), ViewError> {
    match slice.filter(|(from, to)| from >= to) {
        Some((from, to)) => {
            Err(ViewError::Unsupported(format!("time slice {from}:{to} is empty (the start must be below the end)")))
        }
        None => Ok(()),
    }
}

/// What the dataset's link counters count, for legends ("packets"; "traffic" when unnamed).
pub(crate) fn traffic_unit(dataset: &crate::model::Dataset) -> &str {
    if dataset.link_counter_unit.is_empty() { "traffic" } else { &dataset.link_counter_unit }
}
