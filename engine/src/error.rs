//! What goes wrong drawing a view: the input lacks what the view needs, or a compute stage failed.
//! Below the views and the selection, which both report it.

/// A view's error: one line saying what the input lacks, or the stage's error.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Stage(#[from] crate::stages::StageError),
}
