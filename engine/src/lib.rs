//! exaviz engine: the columnar model, layouts, compute stages (each a WGSL kernel with a CPU
//! mirror) and the instanced renderer. It knows nothing of windows: the `exaviz` binary in
//! `viewer/` owns the CLI and winit.
//!
//! Data flows one way: source → [`model`] → [`layout`] → [`stages`] → [`render`] → target.

pub mod bundling;
pub mod dataset;
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
