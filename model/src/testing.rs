//! What the tests of the crates above share: mutations of a file's bytes for the loaders'
//! mutation-fuzz tests (every reader is fed these and must answer each with one line or a
//! dataset, never a panic or an allocation sized from a damaged count), and the real traces of
//! `../shared/data` that the tests read in place.

/// Copies of `original` with 3 values flipped at every `step`-th byte, and cut to `cuts`.
pub fn mutations(original: &[u8], step: usize, cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for i in (0..original.len()).step_by(step.max(1)) {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = original.to_vec();
            b[i] ^= x;
            cases.push(b);
        }
    }
    cases.extend(cuts.iter().map(|&cut| original[..cut].to_vec()));
    cases
}

/// A real trace of `../shared/data` (beside the repository), where it is; where it is not, the
/// test says so and skips, unless `EXAVIZ_REQUIRE_DATA=1` (as CI sets it) makes it mandatory.
pub fn shared_data(rel: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data").join(rel);
    if p.exists() {
        Some(p)
    } else {
        let required = std::env::var("EXAVIZ_REQUIRE_DATA").is_ok_and(|v| v == "1");
        assert!(!required, "{} is missing; EXAVIZ_REQUIRE_DATA=1 makes ../shared/data mandatory", p.display());
        eprintln!("skipped: {} is absent", p.display());
        None
    }
}
