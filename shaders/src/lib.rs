//! Build-time support for the crates that hold WGSL (`exaviz-compute`'s stages, `exaviz-render`'s
//! renderer): their build scripts call [`embed`], which validates every `.wgsl` file below a
//! folder with naga, so that a broken shader fails the build with its file and naga's message
//! rather than at pipeline creation, and writes the list of them as Rust constants (one per
//! file, named by its stem, and `ALL`), as vello's shader crate lists its shaders. The crate
//! that includes the list defines the `Shader` type it names.

use std::path::{Path, PathBuf};

/// Validates WGSL source with naga; the error is naga's message, naming `name`.
pub fn validate(name: &str, source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string_with_path(source, name))?;
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default());
    validator.validate(&module).map_err(|e| e.emit_to_string_with_path(source, name))?;
    Ok(())
}

/// Every `.wgsl` file below `dir`, sorted by path.
pub fn shaders_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for p in entries.flatten().map(|e| e.path()) {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "wgsl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// For a build script: validates every shader below `dir` (relative to the crate's manifest)
/// and writes `$OUT_DIR/shaders.rs`, one `pub const NAME: Shader` per file (its stem in
/// capitals) and `pub const ALL: &[Shader]`. Panics, failing the build, on a shader naga
/// rejects or two shaders of one name.
pub fn embed(dir: &str) {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("run from a build script");
    let out = std::env::var_os("OUT_DIR").expect("run from a build script");
    let root = Path::new(&manifest).join(dir);
    println!("cargo:rerun-if-changed={}", root.display());
    let mut code = String::from("// Written by build.rs (exaviz_shaders::embed): one constant per WGSL file.\n");
    let mut names: Vec<String> = Vec::new();
    for path in shaders_below(&root) {
        println!("cargo:rerun-if-changed={}", path.display());
        let source = std::fs::read_to_string(&path).expect("a readable shader");
        if let Err(e) = validate(&path.display().to_string(), &source) {
            panic!("{e}");
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("a shader named in UTF-8").to_string();
        let ident = stem.to_uppercase();
        assert!(!names.contains(&ident), "two shaders named {stem}");
        code.push_str(&format!(
            "pub const {ident}: Shader = Shader {{ name: {stem:?}, source: include_str!({:?}) }};\n",
            path.display().to_string()
        ));
        names.push(ident);
    }
    code.push_str(&format!("/// Every embedded shader.\npub const ALL: &[Shader] = &[{}];\n", names.join(", ")));
    std::fs::write(Path::new(&out).join("shaders.rs"), code).expect("OUT_DIR is writable");
}
