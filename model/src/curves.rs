//! Curves as polylines of any lengths: what a bundler gives, or what another tool's bundling
//! wrote (the edge CSV reader's curves), for comparing bundlings on the same edges.

/// Polylines of any lengths: edge `e`'s points are `points[starts[e]..starts[e + 1]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curves {
    pub points: Vec<[f32; 2]>,
    /// One more than the edges: the first point of each edge, then the end.
    pub starts: Vec<u32>,
}
