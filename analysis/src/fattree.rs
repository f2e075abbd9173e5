//! The hot links of a fat tree over an active range, as TreeScope's case studies (Bhatia et
//! al., 2018) count them.

use exaviz_model::fattree::{End, FatTree};

/// Links whose bytes over `range` exceed `factor` times the mean over switch-to-switch links:
/// the hot links TreeScope's case studies count. Returns the threshold and the links, hottest
/// first.
pub fn hot_links(tree: &FatTree, range: (usize, usize), factor: f64) -> (f64, Vec<(u32, f64)>) {
    let sums = tree.sums(range);
    let inner = inner_links(tree);
    let mean = inner.iter().map(|&l| sums[l]).sum::<f64>() / inner.len().max(1) as f64;
    let threshold = mean * factor;
    (threshold, above(tree, &sums, threshold))
}

/// The switch-to-switch links above `threshold` bytes over `range`, hottest first.
pub fn hot_links_above(tree: &FatTree, range: (usize, usize), threshold: f64) -> Vec<(u32, f64)> {
    above(tree, &tree.sums(range), threshold)
}

fn inner_links(tree: &FatTree) -> Vec<usize> {
    (0..tree.links.len())
        .filter(|&l| matches!((tree.links[l].from, tree.links[l].to), (End::Switch(_), End::Switch(_))))
        .collect()
}

fn above(tree: &FatTree, sums: &[f64], threshold: f64) -> Vec<(u32, f64)> {
    let mut hot: Vec<(u32, f64)> =
        inner_links(tree).into_iter().filter(|&l| sums[l] > threshold).map(|l| (l as u32, sums[l])).collect();
    hot.sort_by(|a, b| b.1.total_cmp(&a.1));
    hot
}
