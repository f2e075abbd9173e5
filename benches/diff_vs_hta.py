#!/usr/bin/env python3
"""exaviz diff against Holistic Trace Analysis's TraceDiff on the same pair of Kineto runs (two
folders of rank traces), in one run: HTA's `TraceDiff.compare_traces` over every rank and every
iteration it finds, and `exaviz diff A B --json --steps 0-(N-1)` over the same steps. Prints
each one's time (loading and comparing) and how far their per-operator tables agree: operators
both report, counts equal, and total durations equal up to two microseconds per event (HTA
shrinks each event of a nanosecond-resolution trace to the whole microseconds inside it,
floor(end) - ceil(start), "due to issue with events overlapping", pytorch/pytorch#122425;
exaviz keeps nanoseconds).

Set-up (../shared/peers/README.md):
    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install -q -r ../shared/peers/requirements-hta.txt
    cargo build --release -p exaviz
Then, from the repository root:
    python3 benches/diff_vs_hta.py tests/data/torch-gloo-pair/even tests/data/torch-gloo-pair/slow3
"""
import argparse, csv, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAVIZ = os.path.join(ROOT, "target", "release", "exaviz")

HTA = """
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
from hta.trace_diff import TraceDiff
a = TraceAnalysis(trace_dir=sys.argv[1]); b = TraceAnalysis(trace_dir=sys.argv[2])
t1 = time.perf_counter()
ra = sorted(int(x) for x in a.t.get_ranks()); rb = sorted(int(x) for x in b.t.get_ranks())
ia = sorted(int(x) for x in a.t.get_iterations()); ib = sorted(int(x) for x in b.t.get_iterations())
df = TraceDiff.compare_traces(a.t, b.t, control_rank=ra, test_rank=rb, control_iteration=ia, test_iteration=ib)
t2 = time.perf_counter()
df.to_csv(sys.argv[3])
print("RESULT", json.dumps({"load_s": t1 - t0, "diff_s": t2 - t1, "iterations": [len(ia), len(ib)]}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--python", default="/tmp/hta-venv/bin/python")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table = os.path.join(tmp, "hta.csv")
        out = subprocess.run([args.python, "-c", HTA, args.a, args.b, table], capture_output=True, text=True)
        line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
        if out.returncode != 0 or not line:
            sys.exit(f"HTA failed: {out.stderr[-2000:]}")
        hta = json.loads(line[0][7:])
        steps = min(hta["iterations"])
        t = time.perf_counter()
        ex = subprocess.run([EXAVIZ, "diff", args.a, args.b, "--json", "--steps", f"0-{steps - 1}"],
                            capture_output=True, text=True)
        exaviz_s = time.perf_counter() - t
        if ex.returncode != 0:
            sys.exit(f"exaviz failed: {ex.stderr}")
        d = json.loads(ex.stdout)
        h = {r["name"]: r for r in csv.DictReader(open(table))}
    e = {r["name"]: r for r in d["regions"]}
    # HTA lists the ProfilerStep#N markers as operators; exaviz compares them as the run's steps.
    h = {k: v for k, v in h.items() if not k.startswith("ProfilerStep#")}
    both = sorted(set(h) & set(e))
    counts = durations = 0
    differ = []
    for n in both:
        ca, cb = int(float(h[n]["Control_counts"])), int(float(h[n]["Test_counts"]))
        da, db = float(h[n]["Control_total_duration"]) * 1e-6, float(h[n]["Test_total_duration"]) * 1e-6
        if (ca, cb) == (e[n]["a"]["count"], e[n]["b"]["count"]):
            counts += 1
        else:
            differ.append(f"{n[:60]}: HTA {ca}, {cb}; exaviz {e[n]['a']['count']}, {e[n]['b']['count']}")
        ea, eb = e[n]["a"]["total_s"], e[n]["b"]["total_s"]
        if -1e-9 <= ea - da <= 2e-6 * ca + 1e-9 and -1e-9 <= eb - db <= 2e-6 * cb + 1e-9:
            durations += 1
    print(json.dumps({
        "hta": {"load_s": round(hta["load_s"], 3), "diff_s": round(hta["diff_s"], 3), "operators": len(h)},
        "exaviz": {"seconds": round(exaviz_s, 3), "regions": len(e), "steps": steps},
        "both_report": len(both),
        "only_hta": sorted(set(h) - set(e))[:10],
        "counts_equal": counts,
        "counts_differ": differ[:10],
        "durations_within_2us_per_event": durations,
    }, indent=1))


if __name__ == "__main__":
    main()
