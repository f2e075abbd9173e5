#!/usr/bin/env python3
"""exaviz against Holistic Trace Analysis on the same folder of Kineto profiles, in one run:
opening it (`exaviz info RUN`, HTA's `TraceAnalysis(trace_dir=RUN)`) and, for exaviz,
converting it into a store (`exaviz convert RUN STORE`). Prints wall times, peak memory and the
rate in MB of JSON per second, and the ratio.

Peak memory is the largest resident set of the process and its children (`ru_maxrss` of the
waited-for children): for HTA, whose loader parses files in a pool of worker processes, that
is its largest process, not the sum of its workers.

Set-up, once per machine:
    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install -q -r ../shared/peers/requirements-hta.txt
    cargo build --release -p exaviz
    python3 benches/kineto_ranks.py --ranks 64 --steps 16 /tmp/k64        # 851 MB
Then, from the repository root:
    python3 benches/profiles_vs_hta.py /tmp/k64
    python3 benches/profiles_vs_hta.py /tmp/k1024 --no-peer --no-open     # convert only
"""
import argparse, json, os, resource, shutil, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAVIZ = os.path.join(ROOT, "target", "release", "exaviz")
HTA_PY = "/tmp/hta-venv/bin/python"

HTA_LOAD = """
import sys, time
from hta.trace_analysis import TraceAnalysis
t = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[1])
print('RESULT', time.perf_counter() - t, len(a.t.traces))
"""


def run(cmd):
    """Runs `cmd` in a fresh process; its wall time and peak resident set (MB)."""
    # A helper process per measurement, so that ru_maxrss of its children is this command's.
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "w = time.perf_counter() - t\n"
        "m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(repr((w, m, p.returncode, p.stdout[-2000:], p.stderr[-2000:])))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True)
    wall, mb, rc, stdout, stderr = eval(out.stdout)
    if rc != 0:
        sys.exit(f"{' '.join(cmd)} failed ({rc}): {stderr}")
    return wall, mb, stdout


def size_mb(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--no-peer", action="store_true", help="exaviz only")
    ap.add_argument("--no-open", action="store_true", help="convert only (a run too large to hold)")
    a = ap.parse_args()
    mb = size_mb(a.run)
    print(f"{a.run}: {len(os.listdir(a.run))} files, {mb:.0f} MB of JSON")
    rows = []
    if not a.no_open:
        w, m, _ = run([EXAVIZ, "info", a.run])
        rows.append(("exaviz info", w, m))
    store = a.run.rstrip("/") + ".exaviz-bench-store"
    shutil.rmtree(store, ignore_errors=True)
    w, m, _ = run([EXAVIZ, "convert", a.run, store])
    rows.append(("exaviz convert", w, m))
    shutil.rmtree(store, ignore_errors=True)
    if not a.no_peer:
        w, m, out = run([HTA_PY, "-c", HTA_LOAD, a.run])
        rows.append(("HTA TraceAnalysis load", w, m))
    print(f"{'what':<24} {'wall s':>8} {'MB/s':>8} {'peak MB':>8} {'x file':>7}")
    for name, w, m in rows:
        print(f"{name:<24} {w:8.2f} {mb / w:8.0f} {m:8.0f} {m / mb:7.2f}")
    hta = [r for r in rows if r[0].startswith("HTA")]
    if hta:
        for name, w, _ in rows:
            if name.startswith("exaviz"):
                print(f"{name}: {hta[0][1] / w:.1f}x faster than HTA's load")
    print("RESULT " + json.dumps({"run": a.run, "mb": mb, "rows": rows}))


if __name__ == "__main__":
    main()
