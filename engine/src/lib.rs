//! exaviz engine: the columnar model, layouts, compute stages (each a WGSL kernel with a CPU
//! mirror), the views and the instanced renderer. It knows nothing of windows: the `exaviz`
//! binary in `viewer/` parses the command line, dispatches its commands and owns winit. Each
//! view declares its own options here (a clap `Args` beside its `Class`), so the command line,
//! the window's panel and Python read one declaration.
//!
//! Data flows one way: source ([`dataset`]) → [`model`] → view ([`views`]: [`layout`] and
//! [`stages`] in `prepare`, a scene in `draw`) → [`render`] → target.

pub mod bundling;
pub mod dataset;
pub mod diff;
pub mod error;
pub mod fattree;
pub mod gpu;
pub mod held_index;
pub mod layout;
pub mod model;
pub mod opgraph;
pub mod pair_index;
pub mod pyramid;
pub mod render;
pub mod selection;
pub mod stages;
pub mod summary;
pub mod training;
pub mod views;
pub mod wall;
pub mod whyslow;

pub use gpu::{Backend, BackendChoice, GpuContext, GpuError};
pub use wgpu;
