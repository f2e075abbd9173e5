"""exaviz in Python and Jupyter.

Open what the ``exaviz`` command opens (OTF2, Paraver, Perfetto protobuf, HPCToolkit databases,
Charm++ Projections, Chrome/Kineto/JAX JSON, XPlane, Nsight SQLite, TreeScope, Boxfish, exaviz
stores, ``gen:`` generators; ``exaviz.formats()`` lists them), draw any of its views inline, and
take the numbers and tables into pandas::

    import exaviz
    trace = exaviz.open("traces.otf2")
    trace.render("timeline", from_=0.0, to=0.5)      # shown inline in Jupyter
    trace.summary(start=0.1, end=0.2)["regions"]     # exaviz summary --json
    trace.table("messages").to_pandas()              # through pyarrow, no copy of the columns
    trace.sql("SELECT name, sum(duration_s) FROM intervals GROUP BY name").to_pandas()  # exaviz query

View options have the CLI's names (``exaviz render --view V --help``) with ``_`` for ``-``:
``True`` gives a flag, a tuple or list is joined with commas (``pair=(0, 3)`` is ``--pair 0,3``),
a trailing ``_`` is dropped (``from_=0.1`` is ``--from 0.1``), anything else is written as text;
the CLI's parser checks them and a wrong one raises ``ValueError`` with the CLI's message.
"""

from __future__ import annotations

import glob as _glob
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union


def _private_runtime_dir() -> None:
    """Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set in the environment."
    twice whenever a GPU is looked for where the variable is missing (headless machines, CI):
    give them a private folder, as the CLI does, before anything looks for a GPU."""
    import tempfile

    if os.environ.get("XDG_RUNTIME_DIR") or not hasattr(os, "getuid"):
        return
    folder = os.path.join(tempfile.gettempdir(), f"exaviz-runtime-{os.getuid()}")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
    except OSError:
        return
    os.environ["XDG_RUNTIME_DIR"] = folder


_private_runtime_dir()

from . import _exaviz  # noqa: E402
from ._exaviz import TraceError  # noqa: E402

__all__ = ["open", "query", "diff", "formats", "from_pandas", "from_arrow", "bundle", "aggregate", "views", "Trace", "Picture", "Table", "Diff", "TraceError"]


def formats() -> List[Dict[str, Any]]:
    """The formats ``exaviz.open`` reads, in the order it tries them: each format's name, title,
    the tools that write it, what to pass, what is read of it and the options it takes after
    ``?`` (``DIR?depth=3``), as ``exaviz --help`` and ``docs/formats.md`` list them."""
    keys = ("name", "title", "tools", "files", "reads", "options")
    return [dict(zip(keys, f)) for f in _exaviz.formats()]


def views() -> Dict[str, str]:
    """The views exaviz draws, each with one line about it."""
    return dict(_exaviz.views())


class _Progress:
    """A text progress line on stderr for reads that take over a second."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.began = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if time.monotonic() - self.began < 1.0 or total <= 0:
            return
        self.shown = True
        sys.stderr.write(f"\rloading {self.what}: {100.0 * done / total:5.1f}% of {total / 1e6:.1f} MB")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def open(input: str, progress: bool = True) -> "Trace":  # noqa: A001 - exaviz.open, as the CLI's INPUT
    """Reads ``input``: a file, a folder, ``A,B,...`` (files of one run) or ``gen:NAME?k=v``.

    What the reader repaired is printed as counted ``warning:`` lines (as the CLI prints them) and
    kept in ``Trace.warnings``. An input no trusted tool opens raises ``TraceError`` (a
    ``ValueError``) with one line naming it and the problem.
    """
    bar = _Progress(str(input)) if progress else None
    try:
        native = _exaviz.open(str(input), bar)
    finally:
        if bar is not None:
            bar.close()
    for w in native.warnings:
        sys.stderr.write(f"warning: {w}\n")
    return Trace(native)


def _run_name(input: str) -> str:
    """A run's name, as ``exaviz query`` names it: its file or folder name (a generator's text)."""
    if ":" in input and not os.path.exists(input):
        return input
    return os.path.basename(input.rstrip("/")) or input


def query(inputs: Union[str, Sequence[str]], sql: str) -> Table:
    """``exaviz query`` over one input, a pattern (``'runs/*/'``: every match a run) or a list
    of inputs, each row of every table naming its ``run``. A store is read in place; any other
    input is read into memory first. Returns a :class:`Table` (``.to_arrow()``,
    ``.to_pandas()``)."""
    if isinstance(inputs, str):
        if any(c in inputs for c in "*?[") and not os.path.exists(inputs) and not inputs.startswith("gen:"):
            folders = inputs.endswith("/")
            matches = sorted(p for p in _glob.glob(inputs.rstrip("/")) if not folders or os.path.isdir(p))
            if not matches:
                raise TraceError(f"{inputs}: the pattern matches nothing")
            inputs = matches
        else:
            inputs = [inputs]
    names = [_run_name(str(i)) for i in inputs]
    if len(set(names)) < len(names):
        names = [str(i) for i in inputs]
    return Table(_exaviz.query([(n, str(i)) for n, i in zip(names, inputs)], str(sql)), "answer")


def _words(options: Dict[str, Any]) -> List[str]:
    """View options as the CLI's words: ``pair=(0, 3)`` is ``--pair 0,3``, ``from_=0.1`` is ``--from 0.1``."""
    words: List[str] = []
    for key, value in options.items():
        name = "--" + key.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            words.append(name)
        elif isinstance(value, (tuple, list)):
            words += [name, ",".join(str(v) for v in value)]
        else:
            words += [name, str(value)]
    return words


class Picture:
    """A picture drawn by exaviz: shown inline in Jupyter, saved as PNG, or read as pixels."""

    def __init__(self, native: "_exaviz.Picture") -> None:
        self._native = native

    @property
    def width(self) -> int:
        return self._native.width

    @property
    def height(self) -> int:
        return self._native.height

    @property
    def size(self) -> Tuple[int, int]:
        return (self.width, self.height)

    @property
    def scene(self) -> Dict[str, Any]:
        """What the picture shows, as ``exaviz render --scene-json`` writes it: ``view``,
        ``title``, ``rows`` (``label`` drawn, ``name`` whole, ``top``, ``height``, ``apart``,
        ``count``, ``kind``) and ``legend`` (``label``, ``name``)."""
        return json.loads(self._native.scene_json())

    def png(self) -> bytes:
        """The PNG file's bytes, as ``exaviz render`` writes them."""
        return self._native.png()

    def _repr_png_(self) -> bytes:
        return self._native.png()

    def save(self, path) -> None:
        """Writes the PNG to ``path`` (through a temporary name and a rename)."""
        self._native.save(str(path))

    def to_numpy(self):
        """The pixels as a ``(height, width, 4)`` array of ``uint8`` (RGBA); needs numpy."""
        import numpy

        return numpy.frombuffer(self._native.rgba(), dtype=numpy.uint8).reshape(self.height, self.width, 4)

    def __repr__(self) -> str:
        return f"<exaviz.Picture {self.width}x{self.height}>"


class Table:
    """A table of the trace, read by pyarrow, polars and DuckDB through ``__arrow_c_stream__``."""

    def __init__(self, native: "_exaviz.Table", name: str) -> None:
        self._native = native
        self.name = name

    def __arrow_c_stream__(self, requested_schema=None):
        return self._native.__arrow_c_stream__(requested_schema)

    def __len__(self) -> int:
        return len(self._native)

    @property
    def column_names(self) -> List[str]:
        return self._native.column_names

    def to_arrow(self):
        """A ``pyarrow.Table`` (needs pyarrow 14 or later)."""
        import pyarrow

        return pyarrow.table(self)

    def to_pandas(self):
        """A ``pandas.DataFrame`` through pyarrow."""
        return self.to_arrow().to_pandas()

    def __repr__(self) -> str:
        return f"<exaviz.Table {self.name}: {len(self)} rows, columns {', '.join(self.column_names)}>"


TABLES = ("locations", "intervals", "instants", "messages", "collectives", "counters")


class Trace:
    """A trace opened by :func:`open`."""

    def __init__(self, native: "_exaviz.Trace") -> None:
        self._native = native

    @property
    def input(self) -> str:
        return self._native.input

    @property
    def warnings(self) -> List[str]:
        """What the reader repaired, one counted line per kind."""
        return self._native.warnings

    def info(self) -> Dict[str, Any]:
        """What the input holds: ``exaviz info --json``."""
        return json.loads(self._native.info_json())

    def summary(
        self,
        start: Optional[float] = None,
        end: Optional[float] = None,
        ranks: Optional[Any] = None,
        top: int = 20,
    ) -> Dict[str, Any]:
        """The numbers of an area: ``exaviz summary --from START --to END --ranks A-B --json``.

        ``start`` and ``end`` are seconds since the trace's start; ``ranks`` is ``"A-B"``,
        ``(A, B)`` or ``A`` (rows of the timeline, from 0).
        """
        if isinstance(ranks, (tuple, list)):
            ranks = f"{ranks[0]}-{ranks[1]}"
        elif ranks is not None:
            ranks = str(ranks)
        return json.loads(self._native.summary_json(start, end, ranks, top))

    def critical_path(
        self,
        start: Optional[float] = None,
        end: Optional[float] = None,
        what_if: Union[str, Sequence[str], None] = None,
    ) -> Dict[str, Any]:
        """Why the run is slow: ``exaviz critical-path --from START --to END --json``.

        The critical path across ranks, threads and GPU streams (``segments``, and its time by
        kind, row and region in ``shares``), the root causes of the waiting (``root_causes``,
        direct and propagated costs) and the stragglers of each step (``stragglers``).
        ``what_if`` (one or several, as ``--what-if``: ``"rank 5"``, ``"region:extra_work"``,
        ``"region:nccl*0.5"``) adds ``what_if``: per projection ``who``, ``selected``,
        ``removed_s``, ``length_s``, ``projected_s``, ``saved_s`` and ``steps``.
        """
        asks = [what_if] if isinstance(what_if, str) else list(what_if or [])
        return json.loads(self._native.critical_path_json(start, end, asks))

    def render(
        self,
        view: str = "timeline",
        size: Tuple[int, int] = (1024, 768),
        backend: str = "auto",
        **options: Any,
    ) -> Picture:
        """Draws ``view`` at ``size`` (width, height) on ``backend`` (``auto``, ``gpu`` or ``cpu``).

        ``options`` are the view's options by the CLI's names (``exaviz render --view V --help``).
        """
        width, height = size
        return Picture(self._native.render(view, int(width), int(height), backend, _words(options)))

    def table(self, name: str) -> Table:
        """One of the trace's tables (``locations``, ``intervals``, ``instants``, ``messages``,
        ``collectives``, ``counters``): numeric columns share the trace's memory, times are ticks
        (``ticks_per_second`` in the schema's metadata)."""
        return Table(self._native.table(name), name)

    def tables(self) -> Dict[str, Table]:
        return {n: self.table(n) for n in TABLES}

    def sql(self, query: str) -> Table:
        """The answer to a read-only SQL query over the trace, as ``exaviz query`` answers it.

        Tables ``runs``, ``locations``, ``intervals``, ``instants``, ``messages``,
        ``collectives`` and ``counters``, with names (a region's, an operation's, a counter's and
        its unit) and times in ticks and in seconds (the columns ending in ``_s``); see
        ``exaviz query --help``. ``.to_arrow()``, ``.to_pandas()``, or any reader of Arrow
        streams (polars, DuckDB) takes the answer. An unknown table or column raises
        ``TraceError`` naming those there are.
        """
        return Table(self._native.sql(_run_name(self.input), str(query)), "answer")

    def __repr__(self) -> str:
        return f"<exaviz.Trace {self.input}>"



class Diff:
    """What changed from run A to run B (:func:`diff`): ``exaviz diff A B --json`` as a dict
    (``to_dict()``, and its ``run`` and ``matching``), and each table as an Arrow table."""

    def __init__(self, text: str, tables) -> None:
        self._dict = json.loads(text)
        self._tables = dict(tables)

    @property
    def run(self) -> Dict[str, Any]:
        """The run's length and mean step in A and B, the change and its 95% interval."""
        return self._dict["run"]

    @property
    def matching(self) -> Dict[str, Any]:
        """How rows and steps were matched, and the scale applied to B's totals."""
        return self._dict["matching"]

    def to_dict(self) -> Dict[str, Any]:
        """Everything, as ``exaviz diff --json`` prints it."""
        return self._dict

    def table(self, name: str) -> Table:
        """One table of changes (``top``, ``locations``, ``waiting``, ``regions``,
        ``collectives``, ``pairs``), one row per change, largest first."""
        if name not in self._tables:
            raise ValueError(f"no table '{name}' (expected one of {', '.join(self._tables)})")
        return Table(self._tables[name], name)

    def tables(self) -> Dict[str, Table]:
        return {n: self.table(n) for n in self._tables}

    def __repr__(self) -> str:
        r = self.run
        return f"<exaviz.Diff the run {r['a']['total_s']:.6g} s -> {r['b']['total_s']:.6g} s, {len(self._dict['top'])} top changes>"


def diff(
    a,
    b,
    start: Optional[float] = None,
    end: Optional[float] = None,
    steps: Optional[Tuple[int, int]] = None,
    top: int = 12,
) -> Diff:
    """What changed from run ``a`` to run ``b`` (each a :class:`Trace` or an input to open):
    ``exaviz diff A B --from START --to END --steps FIRST-LAST --json``.

    Per row (work and waiting), region, collective and pair of rows: counts, times and bytes of
    each run, the change, whether it stands out from the runs' step-to-step variation, and where
    it lies. Raises ``TraceError`` with the CLI's one line.
    """
    a = a if isinstance(a, Trace) else open(a)
    b = b if isinstance(b, Trace) else open(b)
    if steps is not None:
        steps = (int(steps[0]), int(steps[1]))
    text, tables = _exaviz.diff(a._native, b._native, start, end, steps, int(top))
    return Diff(text, tables)


#: The columns of pipit's events DataFrame that ``from_pandas`` needs (``Thread`` and
#: ``Attributes`` are read where present).
PIPIT_COLUMNS = ("Timestamp (ns)", "Event Type", "Name", "Process")
_KINDS = {"Enter": 0, "Leave": 1, "Instant": 2}
#: Instants that are one side of a message, and the attribute naming the other end.
_SIDES = {"MpiSend": (1, "receiver"), "MpiIsend": (1, "receiver"), "MpiRecv": (2, "sender"), "MpiIrecv": (2, "sender")}


def from_pandas(events, name: str = "DataFrame") -> Trace:
    """A trace from an events DataFrame in pipit's layout (``pipit.Trace.events``).

    Columns: ``Timestamp (ns)``; ``Event Type`` (``Enter``, ``Leave`` or ``Instant``); ``Name``
    (the region entered or left, or the instant's kind); ``Process`` and, where present,
    ``Thread`` (each pair is a row of the timeline); ``Attributes`` (a dict per row, where
    present). Instants named ``MpiSend``/``MpiIsend`` with ``receiver`` and
    ``MpiRecv``/``MpiIrecv`` with ``sender`` (the other end's process), ``msg_tag`` and
    ``msg_length`` are messages, matched in order per pair and tag as MPI matches them. Enters
    and leaves nest as the OTF2 reader nests them; what was repaired is printed as counted
    ``warning:`` lines. A missing column or an unknown event type raises ``ValueError`` naming it.
    """
    import numpy as np

    columns = list(getattr(events, "columns", []))
    for column in PIPIT_COLUMNS:
        if column not in columns:
            raise ValueError(f"{name}: the events DataFrame has no column {column!r} (pipit's layout needs {', '.join(PIPIT_COLUMNS)})")
    n = len(events)
    stamps = events["Timestamp (ns)"].to_numpy(dtype="float64")
    if n and not (np.isfinite(stamps).all() and stamps.min() >= 0):
        raise ValueError(f"{name}: column 'Timestamp (ns)' holds a negative or non-finite time")
    time = np.rint(stamps).astype(np.uint64)
    types = events["Event Type"].astype(str)
    unknown = sorted(set(types.unique()) - set(_KINDS))
    if unknown:
        raise ValueError(f"{name}: column 'Event Type' holds {unknown[0]!r} (expected Enter, Leave or Instant)")
    kind = types.map(_KINDS).to_numpy(dtype=np.uint8)
    names = events["Name"].astype(str)
    name_codes, name_list = _codes(names)
    process = events["Process"].to_numpy()
    thread = events["Thread"].to_numpy() if "Thread" in columns else np.zeros(n, dtype=np.int64)
    pairs = sorted({(p, t) for p, t in zip(process.tolist(), thread.tolist())})
    threads = {}
    for p, t in pairs:
        threads.setdefault(p, []).append(t)
    index = {pair: k for k, pair in enumerate(pairs)}
    location = np.fromiter((index[(p, t)] for p, t in zip(process.tolist(), thread.tolist())), dtype=np.uint32, count=n)
    location_names = [f"process {p}" if len(threads[p]) == 1 else f"process {p} / thread {t}" for p, t in pairs]
    # A message's other end is its process's first thread.
    first = {p: index[(p, ts[0])] for p, ts in threads.items()}
    side = np.zeros(n, dtype=np.uint8)
    peer = np.full(n, np.iinfo(np.uint32).max, dtype=np.uint32)
    tag = np.zeros(n, dtype=np.uint32)
    size = np.zeros(n, dtype=np.uint64)
    if "Attributes" in columns:
        attributes = events["Attributes"].tolist()
        kinds = kind.tolist()
        for k, row_name in enumerate(names.tolist()):
            what = _SIDES.get(row_name)
            a = attributes[k]
            if what is None or kinds[k] != 2 or not isinstance(a, dict):
                continue
            other = a.get(what[1])
            side[k] = what[0]
            peer[k] = first.get(other, np.iinfo(np.uint32).max)
            tag[k] = int(a.get("msg_tag", 0)) & 0xFFFFFFFF
            size[k] = max(int(a.get("msg_length", 0)), 0)
    native = _exaviz.from_events(
        name,
        time.tobytes(),
        kind.tobytes(),
        name_codes.astype(np.uint32).tobytes(),
        name_list,
        location.tobytes(),
        location_names,
        side.tobytes(),
        peer.tobytes(),
        tag.tobytes(),
        size.tobytes(),
        1_000_000_000,
    )
    for w in native.warnings:
        sys.stderr.write(f"warning: {w}\n")
    return Trace(native)


def _codes(values):
    """Each value's index into the list of distinct values (in order of first appearance)."""
    import pandas as pd

    codes, uniques = pd.factorize(values)
    return codes, [str(u) for u in uniques]


def bundle(edges, weights=None, backend: str = "auto", **params):
    """KDE edge bundling, as ``exaviz bundle`` bundles (its defaults: as strong as Datashader's
    ``hammer_bundle``, measured in BENCHMARKS.md), for edges you have.

    ``edges``: an ``(n, 4)`` array-like of x0, y0, x1, y1 (a NumPy array, or a DataFrame with
    those columns); ``weights``: one per edge, optional. ``params``: ``samples``, ``grid``,
    ``iterations``, ``kernel``, ``decay``, ``step``, ``smoothing`` (``exaviz bundle --help``).
    Returns an ``(n, samples, 2)`` float32 array: each edge's polyline in the edges' coordinates,
    from its first end to its second.
    """
    import numpy as np

    if hasattr(edges, "columns"):
        edges = edges[["x0", "y0", "x1", "y1"]].to_numpy()
    e = np.ascontiguousarray(np.asarray(edges, dtype=np.float32))
    if e.ndim != 2 or e.shape[1] != 4:
        raise ValueError(f"edges: expected an (n, 4) array of x0, y0, x1, y1, got shape {e.shape}")
    w = None if weights is None else np.ascontiguousarray(np.asarray(weights, dtype=np.float32)).tobytes()
    unknown = sorted(set(params) - {"samples", "grid", "iterations", "kernel", "decay", "step", "smoothing"})
    if unknown:
        raise TypeError(f"bundle() got an unexpected keyword argument {unknown[0]!r}")
    points, samples = _exaviz.bundle_edges(e.tobytes(), w, backend, **params)
    return np.frombuffer(points, dtype=np.float32).reshape(len(e), samples, 2)


def aggregate(x, y, size: Tuple[int, int] = (1024, 1024), x_range=None, y_range=None, backend: str = "auto"):
    """Points counted per pixel, as Datashader's ``Canvas(plot_width, plot_height, x_range,
    y_range).points(df, "x", "y", agg=count())`` counts them (the canvas over the points' bounds
    where no range is given; points outside it left out).

    Returns a ``(height, width)`` uint32 array, row 0 the lowest y (as Datashader's ``xarray``).
    """
    import numpy as np

    width, height = size
    xs = np.ascontiguousarray(np.asarray(x, dtype=np.float32)).ravel()
    ys = np.ascontiguousarray(np.asarray(y, dtype=np.float32)).ravel()
    counts = _exaviz.aggregate_points(
        xs.tobytes(), ys.tobytes(), int(width), int(height),
        None if x_range is None else (float(x_range[0]), float(x_range[1])),
        None if y_range is None else (float(y_range[0]), float(y_range[1])),
        backend,
    )
    return np.frombuffer(counts, dtype=np.uint32).reshape(int(height), int(width))


def from_arrow(table, name: str = "Arrow table") -> Trace:
    """A trace from an events table in pipit's layout (the columns ``from_pandas`` reads) held by
    Arrow: a ``pyarrow.Table``, or anything with ``__arrow_c_stream__`` (a polars DataFrame, a
    DuckDB result). Needs pyarrow."""
    import pyarrow

    return from_pandas(pyarrow.table(table).to_pandas(), name=name)
