//! The Chrome trace reader against serde_json's own ceiling on the same bytes: each file of a
//! run read into memory, then parsed three ways on one thread (serde_json skipping every value,
//! `IgnoredAny`; serde_json building a `Value` tree per file; exaviz's reader,
//! `chrome::parse_bytes`), best of `RUNS`, and the whole run opened by exaviz's parallel
//! reader. Prints MB/s of JSON for each.
//!
//!     cargo run --release -p exaviz-benches --bin json-ceiling -- RUN [RUNS]

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: json-ceiling RUN [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let paths = exaviz_formats::dnn::files_in(std::path::Path::new(dir));
    let files: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).expect("a readable file")).collect();
    let mb = files.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
    println!("{dir}: {} files, {mb:.0} MB of JSON (in memory)", files.len());
    let best = |f: &dyn Fn(&[u8])| {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                for b in &files {
                    f(b);
                }
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let rows = [
        (
            "serde_json, IgnoredAny (one thread)",
            best(&|b| {
                serde_json::from_slice::<serde::de::IgnoredAny>(b).expect("JSON");
            }),
        ),
        (
            "serde_json, Value tree (one thread)",
            best(&|b| {
                std::hint::black_box(serde_json::from_slice::<serde_json::Value>(b).expect("JSON"));
            }),
        ),
        (
            "exaviz chrome::parse_bytes (one thread)",
            best(&|b| {
                std::hint::black_box(exaviz_formats::chrome::parse_bytes(b, "bench").expect("a trace"));
            }),
        ),
    ];
    for (what, s) in rows {
        println!("{what:<44} {s:7.2} s {:7.0} MB/s", mb / s);
    }
    drop(files);
    let t = Instant::now();
    let (parts, _) = exaviz_formats::dnn::read_parts(&paths, true, &|_, _| {}).expect("the run");
    let s = t.elapsed().as_secs_f64();
    println!(
        "{:<44} {s:7.2} s {:7.0} MB/s ({} threads, from the files)",
        "exaviz read_parts (parallel)",
        mb / s,
        rayon::current_num_threads()
    );
    drop(parts);
}
