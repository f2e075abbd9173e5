//! What the torus views (ring, mds, radviz, parcoords, themeriver, linked) share: the dataset's
//! torus, node selection by coordinates ([`select`]), the ring's bundle groups ([`group`]), the
//! plane embeddings ([`embedding`]), and a node's tooltip.

pub mod embedding;
pub mod traffic;

use exaviz_compute::Backend;
use exaviz_model::Topology;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use traffic::{dim_letter, link_traffic_in, node_traffic};

use super::contract::Pick;
use super::legend::format_value;
use super::{ViewError, traffic_unit};

/// The selection parts every torus view with filters reads.
pub const FILTERS: Parts = Parts::NODE.or(Parts::DIMS).or(Parts::TIME_SLICE);

/// The dataset's torus, with at least one node; without one, the error starts with `who`
/// ("the ring view needs").
pub(crate) fn topology<'a>(dataset: &'a Dataset, who: &str) -> Result<&'a Topology, ViewError> {
    let topo = dataset
        .topology
        .as_ref()
        .ok_or_else(|| ViewError::Unsupported(format!("{who} a topology (a Boxfish file or gen:torus-sim)")))?;
    if topo.node_count() == 0 {
        return Err(ViewError::Unsupported("the topology has no nodes".into()));
    }
    Ok(topo)
}

/// The torus views' check: a topology with nodes.
pub(crate) fn check(d: &Dataset, view: &str) -> Result<(), ViewError> {
    topology(d, &format!("the {view} view needs")).map(|_| ())
}

/// Traffic per node over the selection's slice.
pub(crate) fn traffic_per_node(dataset: &Dataset, backend: &Backend, sel: &Selection) -> Result<Vec<u64>, ViewError> {
    let topo = topology(dataset, "this view needs")?;
    Ok(node_traffic(topo, &link_traffic_in(dataset, backend, sel.time_slice)?))
}

/// A node's tooltip: its coordinates and the traffic on its links (both directions), and a
/// click that picks it.
pub(crate) fn node_pick(dataset: &Dataset, traffic: &[u64], v: u32) -> Option<Pick> {
    let topo = dataset.topology.as_ref()?;
    let dims = topo.dims();
    let coords: Vec<String> =
        topo.coord(v as usize).iter().enumerate().map(|(d, c)| format!("{}={c}", dim_letter(d, dims))).collect();
    let on_links = traffic.get(v as usize).copied().unwrap_or(0);
    let unit = traffic_unit(dataset);
    let lines = vec![coords.join(" "), format!("{} {unit} on its links", format_value(on_links as f64))];
    Some(
        Pick::new(format!("node {v}"), lines)
            .with_click(Parts::NODE, Selection { node: Some(v), ..Default::default() }),
    )
}

/// Liang and Barsky's clipping of the segment `a`-`b` to the rectangle `[x0, y0, x1, y1]`: the
/// part inside, if any.
pub fn clip_segment(a: [f32; 2], b: [f32; 2], [x0, y0, x1, y1]: [f32; 4]) -> Option<([f32; 2], [f32; 2])> {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for (p, q) in [(-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    (t0 <= t1).then(|| ([a[0] + t0 * dx, a[1] + t0 * dy], [a[0] + t1 * dx, a[1] + t1 * dy]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_the_part_inside() {
        let r = [0.0, 0.0, 10.0, 10.0];
        assert_eq!(clip_segment([-5.0, 5.0], [15.0, 5.0], r), Some(([0.0, 5.0], [10.0, 5.0])));
        assert_eq!(clip_segment([2.0, 2.0], [3.0, 4.0], r), Some(([2.0, 2.0], [3.0, 4.0])));
        assert_eq!(clip_segment([-5.0, -1.0], [15.0, -1.0], r), None);
        assert_eq!(clip_segment([-5.0, 6.0], [6.0, 17.0], r), None, "passes the corner outside");
        assert_eq!(clip_segment([12.0, 0.0], [12.0, 0.0], r), None);
    }
}
