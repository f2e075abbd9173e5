//! What goes wrong drawing a view: the input lacks what the view needs, the selection does not
//! fit the dataset, or a compute stage failed.

/// A view's error: one line saying what the input lacks, or the stage's error.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Selection(#[from] exaviz_model::selection::Invalid),
    #[error(transparent)]
    Stage(#[from] exaviz_compute::StageError),
}
