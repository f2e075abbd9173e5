//! Layouts: a view maps entities to primitives. Orderings linearise N-D topologies.

pub mod blocks;
pub mod embed;
pub mod hierarchy;
pub mod metrics;
pub mod order;
pub mod routes;

pub use order::{Ordering, order_nodes};

/// A torus topology without links for the layout tests, coordinates row-major (last dimension
/// fastest).
#[cfg(test)]
pub(crate) fn test_torus(extents: &[u32]) -> exaviz_model::Topology {
    let n: u32 = extents.iter().product();
    let mut coords = Vec::new();
    for i in 0..n {
        let mut rest = i;
        let mut c = vec![0; extents.len()];
        for (d, &k) in extents.iter().enumerate().rev() {
            c[d] = rest % k;
            rest /= k;
        }
        coords.extend(c);
    }
    exaviz_model::Topology { extents: extents.to_vec(), coords, ..Default::default() }
}
