//! Validates the renderer's WGSL with naga and lists it in `shaders.rs` (see `exaviz_shaders::embed`).

fn main() {
    exaviz_shaders::embed("src");
}
