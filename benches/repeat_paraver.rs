//! Makes a large Paraver trace from a real one for `exaviz convert`'s scale benchmark: the body
//! of `IN.prv` written again and again, each copy's times shifted past the one before, until
//! the output holds at least `GB` gigabytes; the header's end time covers every copy, and
//! `IN.pcf` is copied beside it.
//!
//!     cargo run --release -p exaviz-benches --bin repeat-paraver -- IN.prv OUT.prv GB

use std::io::{BufWriter, Write};

/// The fields of each record type that are times (after the type, counted from 0).
fn time_fields(kind: u8) -> &'static [usize] {
    match kind {
        b'1' => &[4, 5],
        b'2' | b'4' => &[4],
        b'3' => &[4, 5, 10, 11],
        _ => &[],
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output, gb] = &args[..] else {
        eprintln!("usage: repeat-paraver IN.prv OUT.prv GB");
        std::process::exit(2);
    };
    let gb: f64 = gb.parse().expect("GB is a number");
    let text = std::fs::read_to_string(input).expect("the input trace");
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    // `#Paraver (DATE):END[_unit]:...`: the span of one copy.
    let after_date = header.find("):").expect("the header's date") + 2;
    let time_end = header[after_date..].find(':').expect("the header's time") + after_date;
    let time = &header[after_date..time_end];
    let (digits, unit) = time.split_at(time.find('_').unwrap_or(time.len()));
    let period: u64 = digits.parse::<u64>().expect("the header's end time") + 1;
    let mut communicators = Vec::new();
    let mut body = Vec::new();
    for l in lines {
        if l.starts_with(['c', 'C', 'i', 'I']) {
            communicators.push(l);
        } else if !l.is_empty() && !l.starts_with('#') {
            body.push(l);
        }
    }
    let body_bytes: usize = body.iter().map(|l| l.len() + 1).sum();
    let copies = ((gb * 1e9) / body_bytes as f64).ceil().max(1.0) as u64;
    let out = std::fs::File::create(output).expect("the output file");
    let mut w = BufWriter::with_capacity(1 << 22, out);
    writeln!(w, "{}{}{unit}{}", &header[..after_date], period * copies, &header[time_end..]).unwrap();
    for c in &communicators {
        writeln!(w, "{c}").unwrap();
    }
    // Each body line split at its time fields once; the copies written from the pieces.
    let split: Vec<(Vec<&str>, &[usize])> =
        body.iter().map(|l| (l.split(':').collect(), time_fields(l.as_bytes()[0]))).collect();
    let mut line = String::new();
    for k in 0..copies {
        let shift = k * period;
        for (fields, times) in &split {
            line.clear();
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    line.push(':');
                }
                // Field i of the line is field i - 1 after the type.
                match (i > 0 && times.contains(&(i - 1)), f.parse::<u64>()) {
                    (true, Ok(t)) => line.push_str(&(t + shift).to_string()),
                    _ => line.push_str(f),
                }
            }
            line.push('\n');
            w.write_all(line.as_bytes()).unwrap();
        }
    }
    w.flush().unwrap();
    let pcf = std::path::Path::new(input).with_extension("pcf");
    if pcf.exists() {
        std::fs::copy(&pcf, std::path::Path::new(output).with_extension("pcf")).expect("the .pcf copied");
    }
    eprintln!("{output}: {copies} copies of {body_bytes} bytes");
}
