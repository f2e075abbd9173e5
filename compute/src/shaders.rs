//! The WGSL kernels of the stages, embedded: one constant per `NAME.wgsl` below `src/`, listed
//! by `build.rs`, which validated each with naga first.

/// A shader file: its name (the stem of `NAME.wgsl`) and source.
#[derive(Clone, Copy, Debug)]
pub struct Shader {
    pub name: &'static str,
    pub source: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

#[cfg(test)]
mod tests {
    /// A kernel per stage, each named as its stage's folder.
    #[test]
    fn every_stage_has_its_kernel() {
        let names: Vec<&str> = super::ALL.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "bin_heatmap",
                "bspline",
                "curve_density",
                "force_layout",
                "kde_bundle",
                "line_density",
                "location_features",
                "matrix_cells",
                "pyramid_pixels",
                "reduce",
                "timeline_pixels"
            ]
        );
    }
}
