//! The analyses of exaviz, one name each from the module to the command to the docs: the
//! numbers of an area ([`summary`]: time per region, messages per pair, late-sender waits),
//! why a run is slow ([`critical_path`]: the critical path, the root causes of waiting and the
//! stragglers), what changed between two runs ([`diff`]), the rules of a training run
//! ([`training`]) and the hot links of a fat tree ([`fattree`]).
//!
//! They read the model alone: no GPU, no window, no file format. Views draw what they find;
//! the CLI prints it; Python returns it.

pub mod critical_path;
pub mod diff;
pub mod fattree;
pub mod stats;
pub mod summary;
pub mod training;
pub mod window;
