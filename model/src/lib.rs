//! The columnar model of exaviz: struct-of-arrays traces and topologies ([`Trace`],
//! [`Topology`]), what a source yields ([`dataset::Dataset`]: a trace held in memory or one kept
//! on disk and read by window), the multi-resolution aggregates views draw wide windows from
//! ([`pyramid`], counted by [`bins`]), what users select ([`selection`]), and the models of
//! a fat-tree network ([`fattree`]), a parallel DNN training run ([`training`]) and an
//! operator graph ([`opgraph`]); with the contract every source keeps ([`source`]: the one-line
//! error, counted repairs, `?key=value` options).
//!
//! The bottom layer: it depends on no other crate of exaviz, and on nothing of the GPU, the
//! window or the file formats (no wgpu, winit, egui, lyon, parquet). Readers, the store and
//! generators fill it; analyses read it; views draw it.

pub mod bins;
pub mod curves;
pub mod dataset;
pub mod fattree;
pub mod held_index;
pub mod opgraph;
pub mod pair_index;
pub mod pyramid;
pub mod query;
pub mod rng;
pub mod selection;
pub mod source;
pub mod testing;
pub mod torus;
mod trace;
pub mod training;
pub mod units;

pub use trace::*;
