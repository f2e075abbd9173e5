#!/usr/bin/env python3
"""exaviz from Python against the exaviz CLI on the same work, in one run: open an input and
draw one view to a PNG file, each side in a fresh process (as a user runs either), the two
alternating; prints the medians and the ratio Python / CLI.

The Python side is `exaviz.open(INPUT)` then `trace.render(VIEW, size, backend).save(PNG)` in
`python -c`; the CLI side is `exaviz render INPUT --view VIEW --size WxH --backend B --out PNG`.
Both are wall-clock times of the whole process (start, read or generate, prepare, draw, PNG).

Set-up, from the repository root:
    cargo build --release -p exaviz
    python3 -m venv /tmp/exaviz-venv && /tmp/exaviz-venv/bin/pip install -q "maturin>=1.9,<2"
    /tmp/exaviz-venv/bin/maturin build --release -m python/Cargo.toml --out /tmp/wheels --interpreter /tmp/exaviz-venv/bin/python
    /tmp/exaviz-venv/bin/pip install --force-reinstall /tmp/wheels/exaviz-*.whl
Then:
    python3 benches/python_vs_cli.py --python /tmp/exaviz-venv/bin/python gen:fd4 --runs 5
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAVIZ = os.path.join(ROOT, "target", "release", "exaviz")


def timed(cmd, env=None):
    began = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - began


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", nargs="?", default="gen:fd4")
    ap.add_argument("--python", default=sys.executable, help="a Python with the exaviz wheel installed")
    ap.add_argument("--view", default="timeline")
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    out = tempfile.mkdtemp()
    cli = [EXAVIZ, "render", a.input, "--view", a.view, "--size", a.size, "--backend", a.backend,
           "--out", os.path.join(out, "cli.png")]
    code = (f"import exaviz; t = exaviz.open({a.input!r}, progress=False); "
            f"t.render({a.view!r}, size=({w}, {h}), backend={a.backend!r}).save({os.path.join(out, 'py.png')!r})")
    py = [a.python, "-c", code]
    times = {"cli": [], "python": []}
    for _ in range(a.runs):
        times["cli"].append(timed(cli))
        times["python"].append(timed(py))
    same = open(os.path.join(out, "cli.png"), "rb").read() == open(os.path.join(out, "py.png"), "rb").read()
    c, p = statistics.median(times["cli"]), statistics.median(times["python"])
    print(f"{a.input}, {a.view} view, {a.size}, {a.backend}: {a.runs} runs each, alternating")
    print(f"  CLI     median {c:.3f} s  (runs {', '.join(f'{t:.2f}' for t in times['cli'])})")
    print(f"  Python  median {p:.3f} s  (runs {', '.join(f'{t:.2f}' for t in times['python'])})")
    print(f"  Python / CLI: {p / c:.3f}; the PNGs are {'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
