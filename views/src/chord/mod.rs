//! The `chord` view (Brendel et al. §III-C): processes on a circle, one edge per communicating pair
//! (both directions of a pair drawn as two edges), bundled hierarchically and mixed additively.
//!
//! The hierarchy is a balanced binary tree over the ranks in order (blocks of consecutive ranks,
//! as processes of one node or one sub-domain usually are): a leaf sits on the circle, an inner
//! node at the mean angle of its block and at a radius shrinking with its height. An edge's
//! control polygon climbs from its sender to just below the lowest common ancestor and down to
//! its receiver (Holten 2006); the `bspline` stage evaluates the curves on the backend, with
//! bundling strength β. Each curve is coloured from sender (pale cyan) to receiver (warm
//! yellow), its opacity growing with the pair's message count (log scale).

mod scene;

use crate::pairs::{Layout, PairView, SceneFn};

pub use scene::*;

/// The chord view.
pub type ChordView = PairView<Chord>;

/// The chord layout of the pairs.
pub struct Chord;

impl Layout for Chord {
    const NAME: &'static str = "chord";
    const ABOUT: &'static str =
        "MPI trace: processes on a circle, communicating pairs as hierarchically bundled curves.";

    const MOST: usize = scene::MAX_PROCESSES;
    const SCENE: SceneFn = chord_scene;
}
