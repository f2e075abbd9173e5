#!/usr/bin/env python3
"""The hottest links of a fat tree's counters, by exaviz and by DuckDB, over the same TreeScope
data directory, in one run.

    exaviz gen 'gen:fattree?system=simulated&steps=1000' DIR
    /tmp/peers-venv/bin/python benches/fattree_vs_duckdb.py DIR [--exaviz target/release/exaviz] [--runs 3]

exaviz: `exaviz metrics DIR --json --top 20` (read the network, every counter file, the routing
tables and the job log; per-link deltas with resets clamped to 0; the 20 hottest
switch-to-switch links over all intervals). DuckDB: every `.count` file read with
`read_csv`, per (node_id, port_idx) the positive differences between consecutive samples (a
window `lag` ordered by file name) summed and multiplied by 4, the 20 largest; on all cores.
DuckDB's side keeps the switch-to-switch links
(the switches' ports wired to switches, from network.topo, read in the timed part) by a join.
The two lists must hold the same bytes (links of equal bytes may be cut in another
order), and the links in both the same bytes each. Prints a table and one line
`RESULT {json}`.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--exaviz", default="target/release/exaviz")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    import duckdb
    import pandas

    counts = os.path.join(a.dir, "*.count")
    query = f"""
        with s as (
            select node_id, port_idx, rcv_data,
                   lag(rcv_data) over (partition by node_id, port_idx order by filename) as prev
            from read_csv('{counts}', filename = true, header = true,
                          columns = {{'node_id': 'VARCHAR', 'port_idx': 'INTEGER', 'rcv_data': 'UBIGINT'}})
        )
        select s.node_id, s.port_idx, sum(greatest(rcv_data::HUGEINT - prev, 0)) * 4 as bytes
        from s join inner_ports i on s.node_id = i.node_id and s.port_idx = i.port_idx
        where prev is not null group by all order by bytes desc limit 20"""
    con = duckdb.connect()
    ex_times, db_times = [], []
    ex_out = db_rows = None
    for _ in range(a.runs):
        t = time.perf_counter()
        out = subprocess.run([a.exaviz, "metrics", a.dir, "--json", "--top", "20"], capture_output=True, check=True)
        ex_times.append(time.perf_counter() - t)
        ex_out = json.loads(out.stdout)
        t = time.perf_counter()
        topo = json.load(open(os.path.join(a.dir, "network.topo")))
        switches = {sw["id"] for sw in topo["switches"]}
        ports = [(sw["id"], p["num"]) for sw in topo["switches"] for p in sw["ports"] if p["dest_node"] in switches]
        frame = pandas.DataFrame(ports, columns=["node_id", "port_idx"]).astype({"port_idx": "int32"})
        con.register("inner_ports", frame)
        db_rows = con.execute(query).fetchall()
        db_times.append(time.perf_counter() - t)
    db = {(r[0], r[1]): float(r[2]) for r in db_rows}
    shared = 0
    for link in ex_out["hottest"]:
        key = (link["from"]["guid"], link["from_port"])
        if key in db:
            shared += 1
            rel = abs(db[key] - link["bytes"]) / max(link["bytes"], 1.0)
            if rel > 1e-9:
                sys.exit(f"link {key}: exaviz {link['bytes']} bytes, DuckDB {db[key]}")
    # Links of equal bytes may be cut in a different order: the 20 values must agree.
    ours = sorted((link["bytes"] for link in ex_out["hottest"]), reverse=True)
    theirs = sorted(db.values(), reverse=True)
    if len(ours) != len(theirs) or any(abs(x - y) > 1e-9 * max(x, 1.0) for x, y in zip(ours, theirs)):
        sys.exit(f"the 20 hottest links' bytes differ: exaviz {ours[:5]}..., DuckDB {theirs[:5]}...")
    ex, dbm = statistics.median(ex_times), statistics.median(db_times)
    files = len([f for f in os.listdir(a.dir) if f.endswith(".count")])
    size = sum(os.path.getsize(os.path.join(a.dir, f)) for f in os.listdir(a.dir))
    print(f"{a.dir}: {files} counter files, {size / 1e6:.0f} MB; median of {a.runs} runs")
    print(f"{'exaviz metrics (whole directory)':40} {ex:8.2f} s")
    print(f"{'DuckDB (counter files only)':40} {dbm:8.2f} s")
    print(f"{'ratio DuckDB / exaviz':40} {dbm / ex:8.2f}x   (the 20 hottest links' bytes equal; {shared} links in both lists)")
    print("RESULT " + json.dumps({"dir": a.dir, "files": files, "exaviz_s": ex, "duckdb_s": dbm, "ratio": dbm / ex}))


if __name__ == "__main__":
    main()
