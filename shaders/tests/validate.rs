//! Walks `shaders/wgsl` and validates each file with naga; also checks that every file on disk
//! is embedded (a shader added to the folder but not to `ALL` would never be tested elsewhere).

fn validate(name: &str, src: &str) {
    let module =
        naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}", e.emit_to_string_with_path(src, name)));
    let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default());
    if let Err(e) = v.validate(&module) {
        panic!("{}", e.emit_to_string_with_path(src, name));
    }
}

#[test]
fn every_shader_in_the_folder_validates_and_is_embedded() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("wgsl");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("wgsl folder") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            let src = std::fs::read_to_string(&path).expect("readable");
            validate(&path.display().to_string(), &src);
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("utf-8 name");
            assert!(
                exaviz_shaders::ALL.iter().any(|s| s.name == stem && s.source == src),
                "{stem}.wgsl is not embedded in exaviz_shaders::ALL"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, exaviz_shaders::ALL.len());
}

#[test]
fn a_broken_shader_is_rejected() {
    let result = std::panic::catch_unwind(|| validate("broken.wgsl", "fn f() -> u32 { return 1.0; }"));
    assert!(result.is_err());
}
