#!/usr/bin/env python3
"""exaviz's critical path against Holistic Trace Analysis's on the same single-rank Kineto
trace, in one run: HTA's `critical_path_analysis(rank, "ProfilerStep", instance)` on a folder
holding the file, and `exaviz critical-path FILE --json` over the same step's window. Prints
each one's time, the path's length, and its time per host thread or GPU stream, so that the
two paths can be compared row by row.

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
print("RESULT", json.dumps({"seconds": seconds, "ok": bool(ok), "length_s": float(df["duration"].sum()) / 1e6,
                            "by_row": by, "by_bound": {k: float(v) / 1e6 for k, v in df.groupby("bound_by")["duration"].sum().items()}}))
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
    t = time.perf_counter()
    out = subprocess.run([EXAVIZ, "critical-path", args.trace, "--json"], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t
    r = json.loads(out.stdout)
    print(f"HTA:    {hta['seconds']:.3f} s (its critical path alone), path {hta['length_s'] * 1e3:.3f} ms")
    for k, v in sorted(hta["by_row"].items(), key=lambda x: -x[1]):
        print(f"        {k:<40} {v * 1e3:9.3f} ms")
    print(f"        bound by: " + ", ".join(f"{k or '(none)'} {v * 1e3:.3f} ms" for k, v in hta["by_bound"].items()))
    print(f"exaviz: {seconds:.3f} s (the whole command), path {r['length_s'] * 1e3:.3f} ms, {r['jumps']} crossings")
    for s in r["shares"]["by_location"]:
        print(f"        {s['name']:<40} {s['seconds'] * 1e3:9.3f} ms")
    for s in r["shares"]["by_kind"]:
        print(f"        {s['name']:<40} {s['seconds'] * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
