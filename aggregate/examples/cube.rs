//! Times the message cube of a store by DataFusion's embedded engine, for `benches/store_vs_duckdb.py`:
//!
//!     cargo run --release -p exaviz-aggregate --example cube -- STORE [RUNS]
//!
//! Prints one line `RESULT {"datafusion_s": [...], "cells": N, "equal": true|false}` (equal: the
//! cells match the store's own pyramid).

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(store) = args.get(1) else {
        eprintln!("usage: cube STORE [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let store = std::path::Path::new(store);
    let mut times = Vec::new();
    let mut cells = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        cells = match exaviz_aggregate::message_cube(store) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        times.push(t.elapsed().as_secs_f64());
    }
    let equal = exaviz_aggregate::native_cube(store).is_ok_and(|n| n == cells);
    let times: Vec<String> = times.iter().map(|t| format!("{t:.3}")).collect();
    println!("RESULT {{\"datafusion_s\": [{}], \"cells\": {}, \"equal\": {equal}}}", times.join(", "), cells.len());
}
