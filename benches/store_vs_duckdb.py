#!/usr/bin/env python3
"""The pyramid's message cube summed by exaviz against the same GROUP BY in DuckDB, over the same
Parquet file of an exaviz store, in one run.

    /tmp/peers-venv/bin/python benches/store_vs_duckdb.py STORE [--exaviz target/release/exaviz] [--runs 3]
        [--datafusion target/release/examples/cube]

exaviz: `exaviz pyramid STORE --dry-run`, its messages part (decode the messages, then count and
sum bytes per sender block, receiver block and time bin, and sum the timeline's line counts).
DuckDB: count(*) and sum(bytes) grouped by the same blocks and bins, on all cores. The cells are
checked against the store's own pyramid (level 0) so both sides compute the same thing. With
--datafusion, the same GROUP BY as a DataFusion plan (`cargo build --release -p exaviz-aggregate
--example cube`) runs beside them. Prints a table and one line `RESULT {json}`.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


def next_pow2(v):
    return 1 << max(0, (v - 1).bit_length())


def shape(span):
    """Shape::new of the engine: message blocks and message bin ticks of level 0."""
    t0, t1, ranks = span["t0"], span["t1"], span["ranks"]
    bin_ticks = max(1, -(-(t1 - t0 + 1) // 2048))
    bin_ticks = next_pow2(bin_ticks)
    block = next_pow2(max(1, -(-ranks // 256)))
    return t0, bin_ticks * (2048 // 128), block, ranks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--exaviz", default="target/release/exaviz")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--datafusion", help="the exaviz-aggregate crate's cube example binary")
    a = ap.parse_args()
    import duckdb

    manifest = json.load(open(os.path.join(a.store, "exaviz-store.json")))
    if not manifest.get("pyramid"):
        sys.exit(f"{a.store}: no pyramid; run exaviz pyramid {a.store} first")
    t0, bin_ticks, block, ranks = shape(manifest["pyramid"])
    messages = dict(manifest["rows"])["messages"]
    files = os.path.join(a.store, "messages.parquet")
    query = f"""
        select source // {block} as s, destination // {block} as r, (send_time - {t0}) // {bin_ticks} as bin,
               count(*) as n, sum(bytes) as b
        from read_parquet('{files}')
        where source < {ranks} and destination < {ranks} and send_time >= {t0}
        group by all"""
    con = duckdb.connect()
    ours, theirs, fusion = [], [], []
    for run in range(a.runs + 1):
        out = subprocess.run([a.exaviz, "pyramid", a.store, "--dry-run"], capture_output=True, text=True, check=True)
        m = re.search(r"messages in ([0-9.]+) s", out.stdout)
        if not m:
            sys.exit(f"unexpected exaviz output: {out.stdout!r}")
        start = time.perf_counter()
        con.execute(f"create or replace temp table cube as {query}")
        took = time.perf_counter() - start
        df = None
        if a.datafusion:
            out = subprocess.run([a.datafusion, a.store, "1"], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.split("RESULT ", 1)[1])
            if not r["equal"]:
                sys.exit("DataFusion's cells differ from the store's pyramid")
            df = r["datafusion_s"][0]
        if run > 0:  # the first run warms the page cache for all
            ours.append(float(m.group(1)))
            theirs.append(took)
            if df is not None:
                fusion.append(df)
    pyramid = os.path.join(a.store, "pyramid_messages.parquet")
    mismatched = con.execute(f"""
        select count(*) from cube full outer join
            (select sender_block as s, receiver_block as r, bin, count as n, bytes as b
             from read_parquet('{pyramid}') where level = 0) p
        using (s, r, bin)
        where cube.n is distinct from p.n or cube.b is distinct from p.b""").fetchone()[0]
    cells = con.execute("select count(*), sum(n) from cube").fetchone()
    o, t = statistics.median(ours), statistics.median(theirs)
    print(f"{messages} messages, {cells[0]} cells of {block} ranks by {bin_ticks} ticks; cells equal to the store's pyramid: {mismatched == 0}")
    print(f"exaviz pyramid (messages): {o:.2f} s ({messages / o / 1e6:.0f}M messages/s)")
    print(f"DuckDB GROUP BY:           {t:.2f} s ({messages / t / 1e6:.0f}M messages/s)")
    if fusion:
        f = statistics.median(fusion)
        print(f"DataFusion plan (embedded): {f:.2f} s ({messages / f / 1e6:.0f}M messages/s), cells equal")
    print(f"ratio: exaviz {t / o:.2f}x DuckDB's speed")
    print("RESULT " + json.dumps({"messages": messages, "cells": cells[0], "equal": mismatched == 0,
                                  "exaviz_s": ours, "duckdb_s": theirs, "datafusion_s": fusion, "ratio": t / o}))
    if mismatched:
        sys.exit(f"{mismatched} cells differ between DuckDB and the store's pyramid")


if __name__ == "__main__":
    main()
