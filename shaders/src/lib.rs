//! WGSL sources of exaviz's compute stages and renderer.
//!
//! Every file is validated with naga by `build.rs` (the build fails on a broken shader) and again
//! by `tests/validate.rs`, which walks the folder. Release and debug builds embed the sources.

/// A shader file: its name (stem of `wgsl/<name>.wgsl`) and source.
#[derive(Clone, Copy, Debug)]
pub struct Shader {
    pub name: &'static str,
    pub source: &'static str,
}

macro_rules! shader {
    ($ident:ident, $name:literal) => {
        pub const $ident: Shader = Shader { name: $name, source: include_str!(concat!("../wgsl/", $name, ".wgsl")) };
    };
}

shader!(BIN_HEATMAP, "bin_heatmap");
shader!(BSPLINE, "bspline");
shader!(FORCE_LAYOUT, "force_layout");
shader!(LINE_DENSITY, "line_density");
shader!(KDE_BUNDLE, "kde_bundle");
shader!(REDUCE, "reduce");
shader!(RASTER, "raster");
shader!(RENDER, "render");

/// Every embedded shader.
pub const ALL: &[Shader] = &[BIN_HEATMAP, BSPLINE, FORCE_LAYOUT, LINE_DENSITY, KDE_BUNDLE, REDUCE, RASTER, RENDER];
