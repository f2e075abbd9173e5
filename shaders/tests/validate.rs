//! Every shader of the workspace validates, and a broken one is refused.

#[test]
fn every_shader_of_compute_and_render_validates() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut seen = 0;
    for crate_dir in ["compute/src", "render/src"] {
        for path in exaviz_shaders::shaders_below(&root.join(crate_dir)) {
            let src = std::fs::read_to_string(&path).expect("readable");
            exaviz_shaders::validate(&path.display().to_string(), &src).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
        }
    }
    assert_eq!(seen, 13, "the eleven stages' kernels and the renderer's two shaders");
}

#[test]
fn a_broken_shader_is_rejected() {
    let e = exaviz_shaders::validate("broken.wgsl", "fn f() -> u32 { return 1.0; }").unwrap_err();
    assert!(e.contains("broken.wgsl"), "{e}");
}
