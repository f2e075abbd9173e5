//! Layouts: a view maps entities to primitives. Orderings linearise N-D topologies.

pub mod blocks;
pub mod embed;
pub mod hierarchy;
pub mod metrics;
pub mod order;
pub mod routes;

pub use order::{Ordering, order_nodes};
