//! Validates every WGSL file in `wgsl/` with naga at build time, so a broken shader fails the
//! build with the file name and naga's message rather than at pipeline creation.

use std::path::Path;

fn main() {
    let dir = Path::new("wgsl");
    println!("cargo:rerun-if-changed=wgsl");
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("shaders/wgsl exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    entries.sort();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let src = std::fs::read_to_string(&path).expect("readable shader");
        let module = match naga::front::wgsl::parse_str(&src) {
            Ok(m) => m,
            Err(e) => panic!("{}", e.emit_to_string_with_path(&src, &path.display().to_string())),
        };
        let mut validator =
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default());
        if let Err(e) = validator.validate(&module) {
            panic!("{}", e.emit_to_string_with_path(&src, &path.display().to_string()));
        }
    }
}
