#!/usr/bin/env python3
"""Writes a run of N ranks' Kineto profiles from the real 8-rank DLRM files, for load and
convert benchmarks at scale.

Rank r is a copy of real rank r % 8 with its `distributedInfo` rank set to r and world size to
N; its events are repeated over STEPS training steps, each shifted in time by one step's span
(plus a millisecond), with the step annotation (`ProfilerStep#N`), correlation, external and
flow ids renumbered per step. Each file is written as Kineto writes it: one event per line.

    python3 benches/kineto_ranks.py --ranks 64 --steps 16 OUT_DIR       # ~0.8 GB
    python3 benches/kineto_ranks.py --ranks 1024 --steps 16 OUT_DIR     # ~13 GB
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "..", "shared", "data", "kineto-dlrm-8gpu")
STEP = re.compile(r"^ProfilerStep#(\d+)$")
IDS = ("correlation", "External id")


def body(events, steps):
    """The events of `steps` steps, one per line, as Kineto writes them."""
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(ts)
    t1 = max(e["ts"] + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, float)))
    span = (t1 - t0) + 1000
    lines = []
    for step in range(steps):
        for e in events:
            # Metadata once, at the start.
            if step > 0 and e.get("ph") == "M":
                continue
            e2 = e
            if step > 0:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)):
                    e2["ts"] = e2["ts"] + step * span
                if e2.get("ph") in ("s", "f", "t") and isinstance(e2.get("id"), int):
                    e2["id"] = e2["id"] + step * 10_000_000
                m = STEP.match(str(e2.get("name", "")))
                if m:
                    e2["name"] = f"ProfilerStep#{int(m.group(1)) + step}"
                if isinstance(e2.get("args"), dict) and any(i in e2["args"] for i in IDS):
                    e2["args"] = dict(e2["args"])
                    for i in IDS:
                        if isinstance(e2["args"].get(i), int):
                            e2["args"][i] += step * 10_000_000
            lines.append("  " + json.dumps(e2))
    return ",\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--real", default=REAL, help="the folder of real Kineto files (default: %(default)s)")
    ap.add_argument("out")
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.real) if f.endswith(".json"))
    if not files:
        sys.exit(f"{a.real}: no Kineto .json files")
    sources = [json.load(open(os.path.join(a.real, f))) for f in files]
    os.makedirs(a.out, exist_ok=True)
    bodies = {}
    total = 0
    for r in range(a.ranks):
        k = r % len(sources)
        src = sources[k]
        if k not in bodies:
            # Ranks copied from one real file share their events: written once, reused.
            bodies[k] = body(src["traceEvents"], a.steps)
        path = os.path.join(a.out, f"rank{r:05d}.pt.trace.json")
        tmp = path + ".part"
        with open(tmp, "w") as out:
            out.write("{\n")
            for key, v in src.items():
                if key == "traceEvents":
                    continue
                if key == "distributedInfo":
                    v = dict(v, rank=r, world_size=a.ranks)
                out.write(f'  "{key}": {json.dumps(v)},\n')
            out.write('  "traceEvents": [\n')
            out.write(bodies[k])
            out.write("\n  ]\n}\n")
        os.replace(tmp, path)
        total += os.path.getsize(path)
    print(f"{a.out}: {a.ranks} ranks x {a.steps} steps, {total / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
