#!/usr/bin/env python3
"""exaviz against Datashader on the same files, in one run; prints a table of ratios.

Edge sets: 1,024 nodes on a circle; N edges with random endpoints, structured (70% stencil
neighbours, i +- 1 and i +- 32 on a 32x32 grid numbered along the circle, 20% to a root, node 0,
and 10% random), or communities (the circle's halves, four hubs each: 60% of edges to a hub of
the node's community, 25% within it, 15% to a hub of the other). Segment sets for aggregation: N segments 16 units long
with random positions and directions inside a 1024 x 1024 square. Point sets for binning: N
points, half uniform in the square and half in a Gaussian blob, counted per pixel of a
1024 x 1024 canvas (exaviz aggregate --points against Canvas.points).

Times are the compute only (file reading and writing excluded on both sides), medians of
--runs runs after one warm-up call on each side (Datashader's excludes numba's compilation;
exaviz's --warmup 1 excludes thread-pool start-up and first-touch page faults). exaviz is run
twice per case, once before the peer and once after it, and its median is taken over the runs
of both: its runs take milliseconds where the peer's take seconds, and this shared machine has
slow spells of seconds, so timing exaviz at one moment only would let one spell decide its
side of the ratio. Below 100K edges each of the two calls makes at least --min-runs runs.

For bundle, the peer's curves are measured by `exaviz bench --curves hammer=...` on the same
edges (ink ratio at 1024^2), exaviz's KDE bundling at its defaults is measured beside them, and
`exaviz bench --match-ink` finds the fastest KDE setting whose ink ratio is at most the peer's;
that setting is then timed like the defaults (`exaviz bundle --kernel --decay --iterations`), so
the table gives the ratio at defaults and at matched ink (equal bundling strength).

Set-up, once per machine:
    python3 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install -q -r ../shared/peers/requirements.txt
    cargo build --release -p exaviz
Then, from the repository root:
    python3 benches/peer_compare.py bundle --sizes 1000,10000,100000 --kinds structured,random,communities
    python3 benches/peer_compare.py aggregate --sizes 1000000,10000000
    python3 benches/peer_compare.py points --sizes 20000000 --backends cpu
"""
import argparse, json, math, os, random, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAVIZ = os.path.join(ROOT, "target", "release", "exaviz")
PEER = os.path.join(ROOT, "..", "shared", "peers", "datashader_peer.py")
PEER_PY = "/tmp/peers-venv/bin/python"


def node_xy(i, n=1024):
    a = 2 * math.pi * i / n
    return 512 + 500 * math.cos(a), 512 + 500 * math.sin(a)


def write_edges(path, n, kind, seed=1):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("x0,y0,x1,y1\n")
        for _ in range(n):
            a = rng.randrange(1024)
            if kind == "random":
                b = rng.randrange(1024)
            elif kind == "communities":
                # Two communities (the circle's halves), four hubs each: 60% of edges to a hub of
                # the node's community, 25% within it, 15% to a hub of the other.
                own, r = a // 512, rng.random()
                hub = lambda c: c * 512 + rng.randrange(4) * 128 + 64
                b = hub(own) if r < 0.6 else own * 512 + rng.randrange(512) if r < 0.85 else hub(1 - own)
            else:
                r = rng.random()
                if r < 0.7:
                    b = (a + rng.choice((1, -1, 32, -32))) % 1024
                elif r < 0.9:
                    b = 0
                else:
                    b = rng.randrange(1024)
            (x0, y0), (x1, y1) = node_xy(a), node_xy(b)
            f.write(f"{x0:.3f},{y0:.3f},{x1:.3f},{y1:.3f}\n")


def write_segments(path, n, seed=2):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("x0,y0,x1,y1\n")
        for _ in range(n):
            x, y, a = rng.random() * 1024, rng.random() * 1024, rng.random() * 2 * math.pi
            f.write(f"{x:.2f},{y:.2f},{x + 16 * math.cos(a):.2f},{y + 16 * math.sin(a):.2f}\n")


def write_points(path, n, seed=3):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("x,y\n")
        for i in range(n):
            if i % 2:
                x, y = rng.random() * 1024, rng.random() * 1024
            else:
                x, y = rng.gauss(400, 90) % 1024, rng.gauss(600, 60) % 1024
            f.write(f"{x:.3f},{y:.3f}\n")


def result(cmd, timeout):
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    wall = time.perf_counter() - t0
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            r["wall_s"] = round(wall, 3)
            return r
    return {"error": (p.stderr.strip().splitlines() or ["no RESULT line"])[-1]}


def pooled(a, b):
    """The results of exaviz's two calls as one: the median over both calls' runs."""
    if "runs_s" not in a or "runs_s" not in b:
        return a if "runs_s" not in a else b
    runs = sorted(a["runs_s"] + b["runs_s"])
    mid = len(runs) // 2
    median = runs[mid] if len(runs) % 2 else (runs[mid - 1] + runs[mid]) / 2
    return dict(a, runs_s=a["runs_s"] + b["runs_s"], median_s=round(median, 6), calls=2)


def fmt(r):
    return f"{r['median_s']:.4f}" if "median_s" in r else r.get("error", "?")


def ratio(peer, ours):
    if "median_s" in peer and "median_s" in ours and ours["median_s"] > 0:
        return f"{peer['median_s'] / ours['median_s']:.1f}x"
    return "-"


def bench_rows(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout), None


def matched_ink(path, hammer, backend, runs, timeout):
    """The peer's curves measured by exaviz bench beside KDE at its defaults, then the fastest KDE
    setting with at most the peer's ink ratio, timed as `exaviz bundle` times the defaults."""
    if not os.path.exists(hammer):
        return {"error": "the peer wrote no curves"}
    rows, err = bench_rows([EXAVIZ, "bench", path, "--bundler", "kde", "--curves", f"hammer={hammer}",
                            "--backend", backend, "--runs", "1", "--json"], timeout)
    if err:
        return {"error": err}
    by = {r["method"]: r for r in rows}
    target = by["hammer"]["ink_ratio"]
    rows, err = bench_rows([EXAVIZ, "bench", path, "--bundler", "straight", "--match-ink", f"{target:.4f}",
                            "--backend", backend, "--runs", "1", "--json"], timeout)
    if err:
        return {"error": err}
    m = rows[-1]
    k = m["kde"]
    timed = result([EXAVIZ, "bundle", path, "--out", os.path.join(os.path.dirname(hammer), "m.csv"),
                    "--backend", backend, "--kernel", str(k["kernel"]), "--decay", str(k["decay"]),
                    "--iterations", str(k["iterations"]), "--runs", str(runs), "--warmup", "1"], timeout)
    return {"hammer_ink": target, "kde_ink": by["kde"]["ink_ratio"], "matched_ink": m["ink_ratio"],
            "matched": k, "reached": m.get("ink_target_reached"), "timed": timed,
            "hammer_measures": by["hammer"]["measures"], "kde_measures": by["kde"]["measures"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["bundle", "aggregate", "points"])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--kinds", default="structured,random")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--backends", default="cpu,gpu")
    ap.add_argument("--min-runs", type=int, default=15, help="exaviz's least runs per call below 100K edges")
    ap.add_argument("--peer-timeout", type=int, default=900)
    ap.add_argument("--json", help="also write every result to this file")
    a = ap.parse_args()
    for tool in (EXAVIZ, PEER_PY):
        if not os.path.exists(tool):
            sys.exit(f"missing {tool}: see the set-up in this script's help")
    sizes = [int(s) for s in a.sizes.split(",")]
    backends = a.backends.split(",")
    rows, everything = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(n, k) for n in sizes for k in a.kinds.split(",")] if a.what == "bundle" else [(n, "16px" if a.what == "aggregate" else "points") for n in sizes]
        for n, kind in cases:
            path = os.path.join(tmp, f"{a.what}_{kind}_{n}.csv")
            {"bundle": lambda: write_edges(path, n, kind), "aggregate": lambda: write_segments(path, n),
             "points": lambda: write_points(path, n)}[a.what]()
            our_runs = max(a.runs, a.min_runs) if n < 100_000 else a.runs

            def ours_now():
                out = {}
                for b in backends:
                    if a.what == "bundle":
                        cmd = [EXAVIZ, "bundle", path, "--out", os.path.join(tmp, "curves.csv"), "--backend", b]
                    else:
                        cmd = [EXAVIZ, "aggregate", path, "--size", "1024x1024", "--backend", b]
                        cmd += ["--points"] if a.what == "points" else []
                    out[b] = result(cmd + ["--runs", str(our_runs), "--warmup", "1"], a.peer_timeout)
                return out

            before = ours_now()
            # hammer_bundle takes minutes at 100K edges; the canvases take well under a second.
            peer_runs = a.runs if n < 100_000 or a.what != "bundle" else 1
            hammer = os.path.join(tmp, "hammer.csv")
            peer_cmd = [PEER_PY, PEER, a.what, path, "--runs", str(peer_runs)]
            peer = result(peer_cmd + (["--out", hammer] if a.what == "bundle" else []), a.peer_timeout)
            after = ours_now()
            ours = {b: pooled(before[b], after[b]) for b in backends}
            case = {"n": n, "kind": kind, "exaviz": ours, "datashader": peer}
            row = [str(n), kind, fmt(peer)] + [x for b in backends for x in (fmt(ours[b]), ratio(peer, ours[b]))]
            if a.what == "bundle":
                matched = matched_ink(path, hammer, backends[0], our_runs, a.peer_timeout)
                case["ink"] = matched
                m = matched.get("timed", {})
                row += [f"{matched.get('hammer_ink', float('nan')):.3f}", f"{matched.get('kde_ink', float('nan')):.3f}",
                        f"{matched.get('matched_ink', float('nan')):.3f}", fmt(m), ratio(peer, m)]
            everything.append(case)
            rows.append(row)
            print("  ".join(row), flush=True)
    head = ["n", "kind", "datashader_s"] + [x for b in backends for x in (f"exaviz_{b}_s", f"ratio_{b}")]
    if a.what == "bundle":
        head += ["hammer_ink", "exaviz_ink", "matched_ink", f"matched_{backends[0]}_s", "ratio_matched"]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
