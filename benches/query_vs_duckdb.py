#!/usr/bin/env python3
"""`exaviz query` against DuckDB's read_parquet on the same files of an exaviz store, in one run.

    /tmp/peers-venv/bin/python benches/query_vs_duckdb.py STORE [--exaviz target/release/exaviz] [--runs 3] [--flight]

Each query runs --runs times on each side; the median wall time is reported, and the answers are
checked equal (DuckDB reads the store's files with the store's own column names, so its SQL names
`source` where exaviz's view names `sender`, and joins the regions for names itself).
exaviz is timed as a user runs it: the whole command (process start, opening the store, planning,
the answer printed as JSON). DuckDB is timed in-process (a connection made, the query, the rows
fetched), with all cores. With --flight, the same queries over Flight SQL too: `exaviz serve STORE`
started here, ADBC's Flight SQL driver (adbc-driver-flightsql) connected once, each query timed
from execute to the Arrow table fetched, its answer checked equal; the server's first statement
(its session made) is reported apart. Prints a table and one line `RESULT {json}`.
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
    ap.add_argument("--flight", action="store_true", help="also over Flight SQL from exaviz serve (ADBC)")
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
    server, cur, first_s = None, None, None
    if a.flight:
        import adbc_driver_flightsql.dbapi as flightsql

        server = subprocess.Popen([a.exaviz, "serve", store, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
        addr = next(w for w in server.stdout.readline().split() if w.startswith("127.0.0.1:"))
        conn = flightsql.connect(f"grpc://{addr}", autocommit=True)
        cur = conn.cursor()
        t = time.perf_counter()
        cur.execute("SELECT 1")
        cur.fetch_arrow_table()
        first_s = time.perf_counter() - t
        print(f"Flight SQL: the server's first statement (its session over the store made) {first_s:.3f} s")
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
        row = {"query": name, "exaviz_s": times_e, "duckdb_s": times_d, "exaviz_median_s": e,
               "duckdb_median_s": d, "duckdb_over_exaviz": d / e, "same_answer": same}
        flight_note = ""
        if cur is not None:
            times_f = []
            for _ in range(a.runs):
                t = time.perf_counter()
                cur.execute(ours)
                got = cur.fetch_arrow_table()
                times_f.append(time.perf_counter() - t)
            answer_f = rows_of([tuple(r.values()) for r in got.to_pylist()])
            f = statistics.median(times_f)
            row.update({"flight_s": times_f, "flight_median_s": f, "flight_over_local": f / e,
                        "flight_same_answer": answer_f == answer_e})
            same = same and answer_f == answer_e
            flight_note = f"  Flight SQL {f:.3f} s ({f / e:.2f}x local)"
        print(f"{name:<40} {e:>9.3f} {d:>9.3f} {d / e:>6.2f}x{flight_note}{'' if same else '  ANSWERS DIFFER'}")
        results.append(row)
    if server is not None:
        cur.close()
        conn.close()
        server.kill()
        server.wait()
    print("RESULT " + json.dumps({"store": store, "rows": rows, "duckdb": duckdb.__version__, "queries": results,
                                  "flight_first_statement_s": first_s}))


if __name__ == "__main__":
    main()
