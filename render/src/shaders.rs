//! The renderer's WGSL, embedded: `render.wgsl` (instanced marks) and `raster.wgsl` (grids as one
//! textured quad), listed by `build.rs`, which validated each with naga first.

pub use exaviz_compute::shaders::Shader;

include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
