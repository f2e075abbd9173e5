#!/usr/bin/env python3
"""exaviz's critical path against Holistic Trace Analysis's on the same single-rank Kineto
trace, in one run: HTA's `critical_path_analysis(rank, "ProfilerStep", instance)` on a folder
holding the file, and `exaviz critical-path FILE --json` over the same step's window. Prints
each one's time, the path's length, its time per host thread or GPU stream, and how much of
the time of HTA's operators and kernels on its path exaviz's path covers on the same row (the
operators both put on the path).

HTA 0.5.0's critical path fails under pandas 3 ("Cannot specify both 'axis' and
'index'/'columns'"); it runs with pandas below 2.2:
    python3 -m venv /tmp/hta2 && /tmp/hta2/bin/pip install -q HolisticTraceAnalysis==0.5.0 'pandas<2.2'
    cargo build --release -p exaviz
Then, from the repository root:
    python3 benches/critical_vs_hta.py ../shared/data/kineto-dlrm-8gpu/worker0_step_12.1694128201545.pt.trace.json
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAVIZ = os.path.join(ROOT, "target", "release", "exaviz")

HTA = """
import json, sys, time
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
t = time.perf_counter()
cp, ok = a.critical_path_analysis(rank=int(sys.argv[2]), annotation="ProfilerStep", instance_id=int(sys.argv[3]))
seconds = time.perf_counter() - t
df = cp.get_critical_path_breakdown()
rows = df.groupby(df["stream"].where(df["stream"] >= 0, -df["tid"]))["duration"].sum()
by = {(f"stream {int(k)}" if k >= 0 else f"thread {int(-k)}"): float(v) / 1e6 for k, v in rows.items()}
# The operators and kernels on the path, with their times (microseconds, as the file has them).
tr = a.t.get_trace(int(sys.argv[2]))
ops = df[df["type"] == "critical_path_operator"].dropna(subset=["index"])
events = [{"row": (f"stream {int(r.stream)}" if r.stream >= 0 else f"thread {int(r.tid)}"), "name": r.s_name,
           "ts": float(tr.loc[int(r.index), "ts"]), "dur": float(tr.loc[int(r.index), "dur"])} for r in ops.itertuples()]
steps = tr[tr["name"].isin([v for k, v in a.t.symbol_table.get_sym_id_map().items() if "ProfilerStep" in k])]
step = steps.iloc[int(sys.argv[3])]
print("RESULT", json.dumps({"seconds": seconds, "ok": bool(ok), "length_s": float(df["duration"].sum()) / 1e6,
                            "by_row": by, "by_bound": {k: float(v) / 1e6 for k, v in df.groupby("bound_by")["duration"].sum().items()},
                            "events": events, "step": [float(step["ts"]), float(step["ts"] + step["dur"])]}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="one rank's Kineto trace (.json)")
    ap.add_argument("--python", default="/tmp/hta2/bin/python", help="a Python with HTA and pandas < 2.2")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--instance", type=int, default=0, help="which ProfilerStep HTA walks")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(args.trace, d)
        out = subprocess.run([args.python, "-c", HTA, d, str(args.rank), str(args.instance)], capture_output=True, text=True)
        hta = next((json.loads(l[7:]) for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
        if hta is None:
            sys.exit(f"HTA failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.stdout}")
    # HTA's times and exaviz's both count from the file's first event; the same step's window.
    origin = 0.0
    window = [f"{(hta['step'][0] - origin) / 1e6:.9f}", f"{(hta['step'][1] - origin) / 1e6:.9f}"]
    t = time.perf_counter()
    out = subprocess.run([EXAVIZ, "critical-path", args.trace, "--json", "--from", window[0], "--to", window[1]],
                         capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t
    r = json.loads(out.stdout)
    # How much of HTA's operator time on the path exaviz's path covers on the same row.
    on = {}
    for s in r["segments"]:
        if s["what"] == "on":
            row = s["location"].split(" / ")[-1].split(" (")[0]
            on.setdefault(row, []).append((origin + s["from_s"] * 1e6, origin + s["to_s"] * 1e6))
    # HTA's operators nest (a node's parent is on the path too): the union of their spans per row.
    spans = {}
    for e in hta["events"]:
        spans.setdefault(e["row"], []).append((e["ts"], e["ts"] + e["dur"]))
    total = covered = 0.0
    by_row = {}
    for row, xs in spans.items():
        xs.sort()
        union = []
        for a, b in xs:
            if union and a <= union[-1][1]:
                union[-1][1] = max(union[-1][1], b)
            else:
                union.append([a, b])
        d = sum(b - a for a, b in union)
        c = sum(max(0.0, min(b, y) - max(a, x)) for a, b in union for x, y in on.get(row, []))
        total += d
        covered += c
        by_row[row] = (d, c)
    print(f"HTA:    {hta['seconds']:.3f} s (its critical path alone), path {hta['length_s'] * 1e3:.3f} ms")
    for k, v in sorted(hta["by_row"].items(), key=lambda x: -x[1]):
        print(f"        {k:<40} {v * 1e3:9.3f} ms")
    print(f"        bound by: " + ", ".join(f"{k or '(none)'} {v * 1e3:.3f} ms" for k, v in hta["by_bound"].items()))
    print(f"exaviz: {seconds:.3f} s (the whole command), path {r['length_s'] * 1e3:.3f} ms, {r['jumps']} crossings")
    for s in r["shares"]["by_location"]:
        print(f"        {s['name']:<40} {s['seconds'] * 1e3:9.3f} ms")
    for s in r["shares"]["by_kind"]:
        print(f"        {s['name']:<40} {s['seconds'] * 1e3:9.3f} ms")
    print(f"HTA's operators and kernels on its path span {total / 1e3:.3f} ms, of which exaviz's path covers "
          f"{covered / 1e3:.3f} ms ({covered / max(total, 1e-9):.1%}) on the same rows")
    for row, (d, c) in sorted(by_row.items(), key=lambda x: -x[1][0]):
        print(f"        {row:<40} {d / 1e3:9.3f} ms  covered {c / max(d, 1e-9):6.1%}")

if __name__ == "__main__":
    main()
