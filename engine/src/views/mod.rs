//! Views: from a dataset to a [`crate::render::Scene`], running compute stages on the backend.

pub mod chord;
pub mod density;
pub mod embedding;
pub mod legend;
pub mod matrix;
pub mod pairs;
pub mod parcoords;
pub mod plot;
pub mod ring;
pub mod select;
pub mod sendrecv;
pub mod themeriver;
pub mod timeline;

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
