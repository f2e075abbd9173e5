#!/usr/bin/env python3
"""`exaviz query` against DuckDB's read_parquet on the same files of an exaviz store, in one run.

    /tmp/peers-venv/bin/python benches/query_vs_duckdb.py STORE [--exaviz target/release/exaviz] [--runs 3]

Each query runs --runs times on each side; the median wall time is reported, and the answers are
checked equal (DuckDB reads the store's files with the store's own column names, so its SQL names
`source` where exaviz's view names `sender`, and joins the regions for names itself).
exaviz is timed as a user runs it: the whole command (process start, opening the store, planning,
the answer printed as JSON). DuckDB is timed in-process (a connection made, the query, the rows
fetched), with all cores. Prints a table and one line `RESULT {json}`.
"""

import argparse
import json
import os
import statistics
import subprocess
import time

QUERIES = [
    (
        "count of messages",
        "SELECT count(*) AS n FROM messages",
        "SELECT count(*) AS n FROM read_parquet('{S}/messages.parquet')",
    ),
    (
        "messages and bytes by sender, top 10",
        "SELECT sender, count(*) AS n, sum(bytes) AS b FROM messages GROUP BY sender ORDER BY b DESC, sender LIMIT 10",
        "SELECT source AS sender, count(*) AS n, sum(bytes) AS b FROM read_parquet('{S}/messages.parquet') "
        "GROUP BY source ORDER BY b DESC, sender LIMIT 10",
    ),
    (
        "time per region by name",
        "SELECT name, count(*) AS n, sum(duration) AS t FROM intervals GROUP BY name ORDER BY name",
        "SELECT r.name, count(*) AS n, sum(i.\"end\" - i.start) AS t FROM read_parquet('{S}/intervals.parquet') i "
        "JOIN read_parquet('{S}/regions.parquet') r ON i.region = r.region GROUP BY r.name ORDER BY r.name",
    ),
    (
        "bytes in one time window",
        "SELECT sum(bytes) AS b FROM messages WHERE send_time BETWEEN {T0} AND {T1}",
        "SELECT sum(bytes) AS b FROM read_parquet('{S}/messages.parquet') WHERE send_time BETWEEN {T0} AND {T1}",
    ),
]


def rows_of(records):
    return [tuple(int(v) if isinstance(v, (int, float)) and float(v).is_integer() else v for v in r) for r in records]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--exaviz", default="target/release/exaviz")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    import duckdb

    store = os.path.abspath(a.store)
    manifest = json.load(open(os.path.join(store, "exaviz-store.json")))
    rows = dict(manifest["rows"])
    t0, t1 = manifest["time_span"]
    # A window of a hundredth of the run, in its middle: row groups outside it are skipped.
    mid, width = (t0 + t1) // 2, max(1, (t1 - t0) // 100)
    fill = {"{S}": store, "{T0}": str(mid), "{T1}": str(mid + width)}

    def filled(q):
        for k, v in fill.items():
            q = q.replace(k, v)
        return q

    results = []
    print(f"{store}: {rows.get('messages', 0):,} messages, {rows.get('intervals', 0):,} intervals")
    print(f"{'query':<40} {'exaviz s':>9} {'DuckDB s':>9} {'ratio':>7}")
    for name, ours, theirs in QUERIES:
        ours, theirs = filled(ours), filled(theirs)
        times_e, times_d, answer_e, answer_d = [], [], None, None
        for _ in range(a.runs):
            t = time.perf_counter()
            out = subprocess.run([a.exaviz, "query", store, ours, "--json"], capture_output=True, check=True)
            times_e.append(time.perf_counter() - t)
            answer_e = rows_of([tuple(r.values()) for r in json.loads(out.stdout)])
            t = time.perf_counter()
            con = duckdb.connect()
            got = con.sql(theirs).fetchall()
            times_d.append(time.perf_counter() - t)
            con.close()
            answer_d = rows_of(got)
        same = answer_e == answer_d
        e, d = statistics.median(times_e), statistics.median(times_d)
        print(f"{name:<40} {e:>9.3f} {d:>9.3f} {d / e:>6.2f}x{'' if same else '  ANSWERS DIFFER'}")
        results.append({"query": name, "exaviz_s": times_e, "duckdb_s": times_d, "exaviz_median_s": e,
                        "duckdb_median_s": d, "duckdb_over_exaviz": d / e, "same_answer": same})
    print("RESULT " + json.dumps({"store": store, "rows": rows, "duckdb": duckdb.__version__, "queries": results}))


if __name__ == "__main__":
    main()
