//! One file per command, each with its options (`Args`) and `run`; what several share is one
//! floor down (`common`, `text`, `edges`, `holds`, `layout_metrics`), never in another command.

pub mod aggregate;
pub mod bench;
pub mod bench_interact;
pub mod bench_layout;
pub mod bundle;
pub mod convert;
pub mod critical_path;
pub mod diff;
pub mod r#gen;
pub mod info;
pub mod metrics;
pub mod pyramid;
pub mod query;
pub mod render;
pub mod serve;
pub mod summary;
pub mod view;
pub mod wall;
