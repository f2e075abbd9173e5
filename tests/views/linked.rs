//! `--view linked` (TorusVisND): the ring, node selector and time slicer in one picture with a
//! shared state; its gestures, read through the view contract as the window reads them
//! (`View::brush`, `zoom_drag`, `key`, `describe`), change the state as documented in
//! `linked::gesture`.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::Selection;
use exaviz_views::contract::{Built, Entry, Frame};
use exaviz_views::linked::panels;
use exaviz_views::parcoords::parcoords_axis_at;
use exaviz_views::ring::{RingOptions, ring_address_at, ring_bundles_in, ring_node_at};
use exaviz_views::themeriver::themeriver_tick_at;

use super::{both, cpu, differ, golden, open, refused};

const TORUS: &str = "gen:torus-sim?dims=4x4x4&steps=20&seed=3";
const FRAME: Frame = Frame { width: 800, height: 480 };

/// The linked view with default options, and a press-release applied to `sel` as the window
/// applies it: the selection after it, in the view's words.
struct Gestures {
    built: Built,
    sel: Selection,
}

impl Gestures {
    fn new() -> Self {
        Self { built: Entry::find("linked").unwrap().parse::<&str>(&[]).unwrap(), sel: Selection::default() }
    }

    fn act(&mut self, d: &Dataset, a: [f32; 2], b: [f32; 2]) -> String {
        if let Some(next) = self.built.view.brush(d, &self.sel, FRAME, a, b) {
            self.sel = next;
        }
        self.describe(d)
    }

    fn zoom(&mut self, a: [f32; 2], b: [f32; 2]) -> bool {
        let next = self.built.view.zoom_drag(&self.sel, FRAME, a, b);
        next.inspect(|&n| self.sel = n).is_some()
    }

    fn key(&mut self, d: &Dataset, key: &str) -> bool {
        let next = self.built.view.key(d, &self.sel, FRAME, key);
        next.inspect(|&n| self.sel = n).is_some()
    }

    fn describe(&self, d: &Dataset) -> String {
        self.built.view.describe(d, &self.sel).expect("the linked view describes its state")
    }
}

#[test]
fn linked_view_matches_golden() {
    let d = open(TORUS);
    let options = ["--node", "22", "--select", "Y=1", "--time-slice", "5:12"];
    let picture = both("linked", &options, &d, (800, 480));
    golden("linked_4x4x4_node22_y1_slice.png", &picture);
    assert!(differ(&cpu("linked", &[], &d, (800, 480)), &picture) > 0.05);
    let small = refused("linked", &options, &d, (700, 480));
    assert!(small.contains("too small for the linked view"), "{small}");
    let e = refused("linked", &["--node", "0", "--select", "Y=1", "--time-slice", "5:12"], &d, (800, 480));
    assert!(e.contains("node 0 [0, 0, 0] is outside the selection Y=1"), "{e}");
}

/// Clicks and brushes on the axes, the ring and the river, at points found with the panels' own
/// picking.
#[test]
fn gestures_link_the_panels() {
    let d = open(TORUS);
    let topo = d.topology.as_ref().unwrap();
    let [(_, rr), (_, pc), (_, rv)] = panels(FRAME.width, FRAME.height);
    let axis_point = |dim: usize, coord: u32| -> [f32; 2] {
        (pc[1]..pc[1] + pc[3])
            .flat_map(|y| (pc[0]..pc[0] + pc[2]).map(move |x| [x as f32, y as f32]))
            .find(|p| {
                parcoords_axis_at(topo, pc[2], pc[3], [p[0] - pc[0] as f32, p[1] - pc[1] as f32])
                    .is_some_and(|(d, c)| d == dim && c as u32 == coord && c.fract() > 0.3 && c.fract() < 0.7)
            })
            .expect("a point on the axis")
    };
    let ring_opts = RingOptions { width: rr[2], height: rr[3], ..RingOptions::default() };
    let node_point = |keep: &dyn Fn(u32) -> bool| -> ([f32; 2], u32) {
        (0..rr[3])
            .step_by(3)
            .flat_map(|y| (0..rr[2]).step_by(3).map(move |x| [x as f32, y as f32]))
            .find_map(|p| ring_node_at(topo, &ring_opts, p).filter(|&v| keep(v)).map(|v| (p, v)))
            .expect("a node on the ring")
    };
    let mut g = Gestures::new();
    let (y1, y2, y3) = (axis_point(1, 1), axis_point(1, 2), axis_point(1, 3));
    assert_eq!(g.act(&d, y2, y2), "selection Y=2 (16 nodes)");
    assert_eq!(g.act(&d, y2, y2), "nothing selected", "a second click frees the dimension");
    let brushed = g.act(&d, y1, [y1[0] + 30.0, y2[1]]);
    assert_eq!(brushed, "selection Y=1-2 (32 nodes)", "the brush follows the height only");
    let (p, v) = node_point(&|v| topo.coord(v as usize)[1] == 2);
    assert_eq!(g.act(&d, p, p), format!("selection Y=1-2 (32 nodes); node {v} {:?}", topo.coord(v as usize)));
    assert_eq!(g.act(&d, y3, y3), "selection Y=3 (16 nodes)", "a selection without the node drops it");
    let (q, u) = node_point(&|v| topo.coord(v as usize)[1] == 0);
    let node_u = format!("node {u} {:?}", topo.coord(u as usize));
    assert_eq!(g.act(&d, q, q), node_u, "a node outside ends the selection");
    assert_eq!(g.act(&d, q, q), "nothing selected", "picking the node again drops it");
    let centre = [rr[2] as f32 * 0.4, rr[3] as f32 * 0.5];
    assert_eq!(g.act(&d, q, q), node_u);
    assert_eq!(g.act(&d, centre, centre), "nothing selected", "a click off the ring drops the node");
    let ry = (rv[1] + rv[3] / 2) as f32;
    let (xa, xb) = ((rv[0] + rv[2] * 3 / 10) as f32, (rv[0] + rv[2] * 45 / 100) as f32);
    let tick = |x: f32| themeriver_tick_at(&d, rv[2], rv[3], [x - rv[0] as f32, ry - rv[1] as f32]).unwrap();
    let (ta, tb) = (tick(xa), tick(xb));
    assert!(ta < tb);
    assert_eq!(g.act(&d, [xb, ry], [xa, ry + 40.0]), format!("slice {ta} to {tb}"), "either direction, any height");
    assert_eq!(g.act(&d, [xa, ry], [xa, ry]), "nothing selected", "a click ends the slice");
    let before = g.sel;
    g.act(&d, [xa, ry], [xa + 1.0, ry]);
    assert_eq!(g.sel, before, "a short drag is a click, not a slice");
}

/// The ring's own gestures in the linked view: a drag inside the disc brushes bundles, a click
/// off the nodes ends the group; the right button zooms into a rectangle and a click zooms out;
/// T tracks the picked node's message; a click on an address ring selects a coordinate.
#[test]
fn ring_gestures_brush_zoom_track_and_select() {
    let d = open(TORUS);
    let topo = d.topology.as_ref().unwrap();
    let [(_, rr), _, _] = panels(FRAME.width, FRAME.height);
    let ring_opts = RingOptions { width: rr[2], height: rr[3], ..RingOptions::default() };
    let mut g = Gestures::new();
    let centre = [rr[2] as f32 * 0.4, rr[3] as f32 * 0.5];
    let (q, u) = (0..rr[3])
        .step_by(3)
        .flat_map(|y| (0..rr[2]).step_by(3).map(move |x| [x as f32, y as f32]))
        .find_map(|p| ring_node_at(topo, &ring_opts, p).map(|v| (p, v)))
        .expect("a node on the ring");

    let brushed = ring_bundles_in(&d, &Backend::Cpu, &ring_opts, [150.0, 150.0, 250.0, 300.0]);
    let brushed = brushed.unwrap().expect("chords cross the brush");
    assert_eq!(g.act(&d, [150.0, 150.0], [250.0, 300.0]), format!("bundles {}", brushed.describe()));
    assert_eq!(g.act(&d, centre, centre), "nothing selected", "a click off the nodes ends the group");
    assert!(g.zoom([100.0, 100.0], [300.0, 250.0]));
    assert_eq!(g.describe(&d), "zoom 100,100,300,250");
    // The ring's plot in its 440x480 panel is 290x416 pixels, so that zoom magnifies
    // min(290 / 200, 416 / 150) = 1.45 times; a second rectangle is taken back into the
    // unzoomed panel's pixels, 1.45 times smaller.
    assert!(g.zoom([100.0, 100.0], [300.0, 250.0]));
    let [x0, y0, x1, y1] = g.sel.zoom.unwrap();
    assert!(((x1 - x0) - 200.0 / 1.45).abs() < 0.01 && ((y1 - y0) - 150.0 / 1.45).abs() < 0.01, "{:?}", g.sel.zoom);
    assert!(g.zoom([200.0, 200.0], [200.0, 200.0]) && g.sel.zoom.is_none(), "a click zooms out");
    assert!(!g.zoom([600.0, 200.0], [700.0, 300.0]), "only the ring zooms");
    assert!(!g.key(&d, "t"), "nothing to track without a picked node");
    assert_eq!(g.act(&d, q, q), format!("node {u} {:?}", topo.coord(u as usize)));
    assert!(!g.key(&d, "x"), "keys the view does not read change nothing");
    assert!(g.key(&d, "t"));
    assert_eq!(g.describe(&d), format!("node {u} {:?}; tracking node {u}'s message", topo.coord(u as usize)));
    assert!(g.key(&d, "t") && g.sel.track.is_none());

    // A click on an address ring selects that ring's coordinate there, a second click frees it.
    let (mut ring_x, mut x_value) = (None, 0);
    'search: for y in (0..rr[3]).step_by(2) {
        for x in (0..rr[2]).step_by(2) {
            let p = [x as f32, y as f32];
            if let Some((0, v)) = ring_address_at(topo, &ring_opts, p) {
                (ring_x, x_value) = (Some(p), topo.coord(v as usize)[0]);
                break 'search;
            }
        }
    }
    let p = ring_x.expect("a point on address ring X");
    assert_eq!(g.act(&d, centre, centre), "nothing selected");
    assert_eq!(g.act(&d, p, p), format!("selection X={x_value} (16 nodes)"));
    assert_eq!(g.act(&d, p, p), "nothing selected");
}
