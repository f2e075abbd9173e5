#!/usr/bin/env python3
"""The whole pyramid of a store summed three ways in one run: exaviz's native pass, the same
pyramid as DataFusion plans (embedded), and the same plans' SQL run by DuckDB over the same
Parquet files.

    /tmp/peers-venv/bin/python benches/pyramid_vs_duckdb.py STORE [--exaviz target/release/exaviz] [--runs 2]

The exaviz binary must be built with DataFusion (`cargo build --release -p exaviz --features
datafusion`). exaviz native: `exaviz pyramid STORE --dry-run` (every level of the message cube,
the state tiles and the lines). exaviz DataFusion: `exaviz pyramid STORE --engine datafusion
--dry-run` (the same pyramid, every level). DuckDB: the plans' SQL in DuckDB's dialect (`exaviz
pyramid STORE --engine datafusion --sql duckdb`: the span, then level 0 of the message cube, the
lines and the state tiles; the levels above are GROUP BYs of these few cells and left out), each
fetched as NumPy arrays, on all cores. DuckDB's cells are checked against the store's own pyramid
(level 0: rows and sums), so all three compute the same thing. Prints a table and one line
`RESULT {json}`.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def timed(cmd):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--exaviz", default="target/release/exaviz")
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    import duckdb

    store = os.path.abspath(a.store)
    plans = subprocess.run(
        [a.exaviz, "pyramid", store, "--engine", "datafusion", "--sql", "duckdb"], capture_output=True, text=True
    )
    if plans.returncode != 0:
        sys.exit(plans.stderr.strip())
    plans = json.loads(plans.stdout)
    con = duckdb.connect()
    for table in ["messages", "intervals", "pyramid_messages", "pyramid_states", "pyramid_lines"]:
        con.execute(f"create view {table} as select * from read_parquet('{os.path.join(store, table + '.parquet')}')")
    expect = {
        "messages": con.execute("select count(*), sum(count) from pyramid_messages where level = 0").fetchone(),
        "lines": con.execute("select count(*), sum(lines) from pyramid_lines").fetchone(),
        "states": con.execute("select count(*), sum(ticks) from pyramid_states where level = 0").fetchone(),
    }
    summed = {"messages": 3, "lines": 2, "states": 3}  # the column summed: messages, lines, ticks

    times = {"native": [], "datafusion": [], "duckdb": []}
    equal = True
    for _ in range(a.runs):
        times["native"].append(timed([a.exaviz, "pyramid", store, "--dry-run"]))
        times["datafusion"].append(timed([a.exaviz, "pyramid", store, "--engine", "datafusion", "--dry-run"]))
        t = time.perf_counter()
        got = {name: con.execute(sql).fetchnumpy() for name, sql in plans.items()}
        times["duckdb"].append(time.perf_counter() - t)
        for name, (rows, total) in expect.items():
            if name in got:
                cols = list(got[name].values())
                mine = (len(cols[0]), int(cols[summed[name]].astype("int64").sum()))
                if mine != (rows, int(total)):
                    equal = False
                    print(f"{name}: DuckDB {mine} != the store's pyramid {(rows, int(total))}", file=sys.stderr)

    best = {k: min(v) for k, v in times.items()}
    manifest = json.load(open(os.path.join(store, "exaviz-store.json")))
    rows = dict(manifest["rows"])
    print(f"{store}: {rows.get('messages', 0)} messages, {rows.get('intervals', 0)} intervals")
    print("| engine | best of runs | runs |")
    print("|---|---|---|")
    for k in ["native", "duckdb", "datafusion"]:
        print(f"| {k} | {best[k]:.2f} s | {', '.join(f'{t:.2f}' for t in times[k])} |")
    print(f"native / DuckDB {best['duckdb'] / best['native']:.2f}x, native / DataFusion {best['datafusion'] / best['native']:.2f}x; cells equal: {equal}")
    result = {k: [round(t, 3) for t in v] for k, v in times.items()}
    result["equal"] = equal
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
