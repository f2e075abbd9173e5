//! The `sendrecv` view (Brendel et al. §V-B): the sender/receiver diagram. Processes are stacked
//! vertically twice, as senders on the left and as receivers on the right; one curve per
//! communicating pair runs from its sender to its receiver, routed over an 8x8 grid by YX
//! routing preferring diagonals (deterministic; distant pairs run diagonally the longest) and
//! drawn as a degree-2 B-spline on the `bspline` stage. Curves are coloured by sender (viridis
//! over the ranks, safe for colour-blind readers) and mixed additively by default.

mod scene;

use crate::pairs::{Layout, PairView, SceneFn};

pub use scene::*;

/// The sendrecv view.
pub type SendRecvView = PairView<SendRecv>;

/// The sendrecv layout of the pairs.
pub struct SendRecv;

impl Layout for SendRecv {
    const NAME: &'static str = "sendrecv";
    const ABOUT: &'static str =
        "MPI trace: senders on the left, receivers on the right, pairs routed over an 8x8 grid.";

    const MOST: usize = scene::MAX_PROCESSES;
    const SCENE: SceneFn = sendrecv_scene;
}
