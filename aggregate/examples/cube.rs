//! The message cube of a store by DataFusion, embedded or on a Ballista cluster, timed, for
//! `benches/store_vs_duckdb.py`:
//!
//!     cargo run --release -p exaviz-aggregate --example cube -- STORE [RUNS] [--cluster df://HOST:50050|standalone]
//!
//! Prints one line `RESULT {"datafusion_s": [...], "cells": N, "equal": true|false}` (equal: the
//! cells match the store's own pyramid); an error is one line on stderr and exit status 1.

use std::time::Instant;

fn main() {
    let (mut store, mut runs, mut cluster) = (None, 1usize, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--cluster" {
            cluster = Some(args.next().unwrap_or_else(|| fail("--cluster needs df://HOST:PORT or standalone")));
        } else if store.is_none() {
            store = Some(a);
        } else {
            runs = a.parse().unwrap_or_else(|_| fail(&format!("RUNS '{a}' is not a whole number")));
        }
    }
    let store = store.unwrap_or_else(|| fail("usage: cube STORE [RUNS] [--cluster df://HOST:PORT|standalone]"));
    let runs = runs.max(1);
    let store = std::path::Path::new(&store);
    let mut times = Vec::new();
    let mut cells = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let result = match &cluster {
            Some(c) => exaviz_aggregate::message_cube_on_cluster(store, c, exaviz_aggregate::CLUSTER_TIMEOUT),
            None => exaviz_aggregate::message_cube(store),
        };
        cells = result.unwrap_or_else(|e| fail(&e.to_string()));
        times.push(t.elapsed().as_secs_f64());
    }
    let equal = exaviz_aggregate::native_cube(store).is_ok_and(|n| n == cells);
    let times: Vec<String> = times.iter().map(|t| format!("{t:.3}")).collect();
    println!("RESULT {{\"datafusion_s\": [{}], \"cells\": {}, \"equal\": {equal}}}", times.join(", "), cells.len());
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1)
}
