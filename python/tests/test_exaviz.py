"""The Python package against the CLI: the same trace gives the same picture (byte for byte),
the same info and summary, and tables whose rows are the trace's. Run by scripts/python-test.sh
with EXAVIZ_BIN set to the CLI built from the same sources."""

import json
import os
import pathlib
import subprocess

import pytest

import exaviz

DATA = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data"
PING_PONG = DATA / "otf2-pingpong" / "ping-pong-otf2" / "traces.otf2"
HIP = DATA / "otf2-hip-mi300-metrics"
EXAVIZ = os.environ.get("EXAVIZ_BIN", "exaviz")


def need(path: pathlib.Path) -> pathlib.Path:
    if not path.exists():
        if os.environ.get("EXAVIZ_REQUIRE_DATA") == "1":
            pytest.fail(f"{path} is missing and EXAVIZ_REQUIRE_DATA=1")
        pytest.skip(f"{path} is absent (../shared/data not here)")
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EXAVIZ, *args], capture_output=True, check=True)


def test_the_wheel_is_abi3_and_lists_the_views():
    assert exaviz._exaviz.__file__.endswith((".abi3.so", ".pyd")), exaviz._exaviz.__file__
    views = exaviz.views()
    assert "timeline" in views and "matrix" in views and "marey" in views
    assert all(isinstance(v, str) and v for v in views.values())


def test_a_picture_equals_the_clis_png(tmp_path):
    trace = exaviz.open(str(need(PING_PONG)))
    picture = trace.render("timeline", size=(640, 360), backend="cpu", highlight="recv")
    out = tmp_path / "cli.png"
    cli("render", str(PING_PONG), "--view", "timeline", "--size", "640x360", "--backend", "cpu",
        "--highlight", "recv", "--out", str(out))
    assert picture.size == (640, 360)
    assert picture.png() == out.read_bytes()
    assert picture._repr_png_() == out.read_bytes()
    saved = tmp_path / "saved.png"
    picture.save(saved)
    assert saved.read_bytes() == out.read_bytes()
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left"
    pixels = picture.to_numpy()
    assert pixels.shape == (360, 640, 4) and pixels.dtype.name == "uint8"
    assert len({tuple(p) for p in pixels.reshape(-1, 4)[::97]}) > 3, "a picture, not a blank"


def test_a_pictures_scene_is_the_clis_scene_json(tmp_path):
    spec = "gen:fd4?ranks=2048&messages=200000&slow_rank=77"
    picture = exaviz.open(spec, progress=False).render("timeline", size=(1024, 768), backend="cpu", rows="behaviour")
    out, scene = tmp_path / "cli.png", tmp_path / "scene.json"
    cli("render", spec, "--view", "timeline", "--size", "1024x768", "--backend", "cpu", "--rows", "behaviour",
        "--out", str(out), "--scene-json", str(scene))
    assert picture.scene == json.loads(scene.read_text())
    rows = picture.scene["rows"]
    assert picture.scene["view"] == "timeline"
    assert any(r["apart"] and r["label"] == "rank 77" for r in rows), rows
    assert sum(r["count"] for r in rows if r["kind"] != "summary") == 2048


def test_info_and_summary_equal_the_clis():
    path = str(need(PING_PONG))
    trace = exaviz.open(path)
    assert trace.info() == json.loads(cli("info", path, "--json").stdout)
    want = json.loads(cli("summary", path, "--from", "0", "--to", "0.5", "--ranks", "0-1", "--json").stdout)
    assert trace.summary(start=0, end=0.5, ranks=(0, 1)) == want
    whole = trace.summary()
    assert whole["messages"] == trace.info()["messages"] > 0
    assert any(r["name"] == "MPI_Recv" for r in whole["regions"])


def test_critical_path_equals_the_cli():
    spec = "gen:wrf?plant=1&collectives=5&iterations=100"
    trace = exaviz.open(spec)
    got = trace.critical_path()
    assert got == json.loads(cli("critical-path", spec, "--json").stdout)
    assert got["stragglers"]["named"][0]["process"] in ("rank 4", "rank 5")
    assert trace.critical_path(start=10, end=20)["length_s"] <= 10.0 + 1e-9
    with pytest.raises(exaviz.TraceError):
        trace.critical_path(start=5, end=1)
    asked = trace.critical_path(what_if=["rank 4-5", "region:compute*0.5"])
    assert asked["what_if"] == json.loads(
        cli("critical-path", spec, "--json", "--what-if", "rank 4-5", "--what-if", "region:compute*0.5").stdout
    )["what_if"]
    assert asked["what_if"][1]["saved_s"] > 0
    with pytest.raises(exaviz.TraceError, match="no process is named so"):
        trace.critical_path(what_if="rank 99")


def test_diff_equals_the_cli_and_gives_arrow_tables():
    pa = pytest.importorskip("pyarrow")
    a, b = "gen:wrf?iterations=20&seed=5", "gen:wrf?iterations=20&seed=5&slow_rank=11"
    d = exaviz.diff(exaviz.open(a), b)
    assert d.to_dict() == json.loads(cli("diff", a, b, "--json").stdout)
    assert d.run["stands_out"] is True
    work = pa.table(d.table("locations"))
    assert work.column("name")[0].as_py() == "rank 11"
    assert abs(work.column("relative")[0].as_py() - 0.5) < 0.01
    regions = d.table("regions").to_pandas()
    compute = regions[regions["name"] == "compute"].iloc[0]
    assert compute["where"].startswith("rank 11 ") and bool(compute["stands_out"])
    assert set(d.tables()) == {"top", "locations", "waiting", "regions", "paths", "collectives", "pairs"}
    assert exaviz.diff(a, b, steps=(0, 4)).matching["a_steps"] == 5
    with pytest.raises(exaviz.TraceError):
        exaviz.diff(a, b, start=5, end=1)
    with pytest.raises(ValueError):
        d.table("nope")


def test_tables_are_the_traces_rows():
    pa = pytest.importorskip("pyarrow")
    trace = exaviz.open(str(need(PING_PONG)))
    info = trace.info()
    intervals = pa.table(trace.table("intervals"))
    assert intervals.num_rows == info["intervals"] > 0
    assert intervals.column_names == ["location", "start", "end", "region", "depth"]
    assert int(intervals.schema.metadata[b"ticks_per_second"]) == info["ticks_per_second"]
    regions = set(intervals.column("region").to_pylist())
    assert {"MPI_Send", "MPI_Recv"} <= regions, regions
    ends_after_starts = pa.compute.all(pa.compute.greater_equal(intervals["end"], intervals["start"]))
    assert ends_after_starts.as_py()
    messages = trace.table("messages").to_pandas()
    assert len(messages) == info["messages"]
    assert (messages["recv_time"] >= messages["send_time"]).all()
    locations = trace.table("locations").to_pandas()
    assert len(locations) == info["locations"]
    assert list(locations["kind"]) == ["CPU thread"] * len(locations)
    assert locations["name"].str.contains("MPI Rank").all(), list(locations["name"])
    summary = trace.summary()
    assert int(messages["bytes"].sum()) == summary["bytes"]
    # A table outlives its trace: its columns keep the trace's memory alive.
    table = trace.table("intervals")
    del trace
    assert pa.table(table).num_rows == info["intervals"]


def test_instants_are_a_table_with_their_scope():
    pa = pytest.importorskip("pyarrow")
    # Kineto's NCCL profile: its "Iteration Start" and "Record Window End" are global instants
    # on no row (their location null), beside the thread instants of its rows.
    trace = exaviz.open(str(need(DATA / "kineto" / "nccl_data.json.gz")))
    instants = pa.table(trace.table("instants"))
    assert instants.num_rows == trace.info()["instants"] > 0
    assert instants.column_names == ["location", "time", "name", "scope", "category", "args"]
    rows = instants.to_pylist()
    globals_ = sorted(r["name"] for r in rows if r["scope"] == "global")
    assert globals_ == ["Iteration Start: PyTorch Profiler", "Record Window End"], globals_
    assert all(r["location"] is None for r in rows if r["scope"] == "global")
    assert all(r["location"] is not None for r in rows if r["scope"] != "global")
    answer = trace.sql("SELECT count(*) AS n FROM instants WHERE scope = 'global'").to_arrow().to_pylist()
    assert answer == [{"n": 2}]


def test_sql_answers_as_the_cli_does():
    pa = pytest.importorskip("pyarrow")
    trace = exaviz.open(str(need(PING_PONG)))
    query = "SELECT name, count(*) AS calls, sum(duration) AS ticks FROM intervals GROUP BY name ORDER BY name"
    answer = trace.sql(query).to_arrow()
    cli_rows = json.loads(cli("query", str(PING_PONG), query, "--json").stdout)
    assert answer.to_pylist() == cli_rows
    assert sum(r["calls"] for r in cli_rows) == trace.info()["intervals"]
    # The run is named by the input's file name; polars and DuckDB read the same stream.
    runs = pa.table(trace.sql("SELECT run, ticks_per_second FROM runs")).to_pylist()
    assert runs == [{"run": "traces.otf2", "ticks_per_second": trace.info()["ticks_per_second"]}]
    with pytest.raises(exaviz.TraceError, match="no table 'slices'"):
        trace.sql("SELECT * FROM slices")


def test_query_over_many_runs(tmp_path):
    pa = pytest.importorskip("pyarrow")
    for run in ("a", "b"):
        cli("convert", "gen:fd4?iterations=2", str(tmp_path / f"{run}.exaviz"))
    messages = exaviz.open("gen:fd4?iterations=2").info()["messages"]
    answer = exaviz.query(str(tmp_path / "*.exaviz"), "SELECT run, count(*) AS n FROM messages GROUP BY run ORDER BY run")
    assert pa.table(answer).to_pylist() == [{"run": "a.exaviz", "n": messages}, {"run": "b.exaviz", "n": messages}]
    both = exaviz.query([str(tmp_path / "a.exaviz"), "gen:fd4?iterations=2"], "SELECT count(DISTINCT run) AS runs FROM messages")
    assert pa.table(both).to_pylist() == [{"runs": 2}]
    with pytest.raises(exaviz.TraceError, match="matches nothing"):
        exaviz.query(str(tmp_path / "*.nothing"), "SELECT 1")


def test_a_served_store_opens_as_the_cli_opens_it(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    cli("convert", "gen:fd4?iterations=2", str(served / "s.exaviz"))
    server = subprocess.Popen([EXAVIZ, "serve", str(served), "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        addr = next(w for w in line.split() if w.startswith("127.0.0.1:"))
        remote = exaviz.open(f"grpc://{addr}/s.exaviz", progress=False)
        local = exaviz.open(str(served / "s.exaviz"), progress=False)
        assert remote.info()["messages"] == local.info()["messages"] > 0
        assert remote.summary()["bytes"] == local.summary()["bytes"]
        with pytest.raises(exaviz.TraceError, match="not below a folder this server serves"):
            exaviz.open(f"grpc://{addr}/../s.exaviz", progress=False)
    finally:
        server.kill()
        server.wait()


def serving(folder: pathlib.Path):
    """exaviz serve of `folder` on a free port: the process and its address."""
    server = subprocess.Popen([EXAVIZ, "serve", str(folder), "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    return server, next(w for w in line.split() if w.startswith("127.0.0.1:"))


def test_any_flight_client_reads_the_served_stores(tmp_path):
    """pyarrow.flight lists and reads the tables of every served store as plain rows; ADBC's
    Flight SQL driver runs SQL and reads the catalog, each store a schema of its own."""
    import pyarrow as pa
    import pyarrow.flight as flight
    import adbc_driver_flightsql.dbapi as flightsql

    served = tmp_path / "served"
    (served / "runs").mkdir(parents=True)
    cli("convert", "gen:fd4?iterations=2", str(served / "runs" / "a.exaviz"))
    cli("convert", "gen:fd4?iterations=3", str(served / "runs" / "b.exaviz"))
    messages = {n: exaviz.open(str(served / "runs" / n), progress=False).info()["messages"] for n in ("a.exaviz", "b.exaviz")}
    server, addr = serving(served)
    try:
        client = flight.connect(f"grpc://{addr}")
        infos = list(client.list_flights())
        paths = [tuple(p.decode() for p in i.descriptor.path) for i in infos]
        tables = ["runs", "locations", "intervals", "instants", "messages", "collectives", "counters"]
        assert paths == [(f"runs/{n}", t) for n in ("a.exaviz", "b.exaviz") for t in tables]
        descriptor = flight.FlightDescriptor.for_path("runs/b.exaviz", "messages")
        info = client.get_flight_info(descriptor)
        assert {"run", "sender", "receiver", "send_time", "send_s", "bytes", "tag"} <= set(info.schema.names)
        assert client.get_schema(descriptor).schema == info.schema
        rows = client.do_get(info.endpoints[0].ticket).read_all()
        assert rows.num_rows == messages["b.exaviz"] and set(rows.column("run").to_pylist()) == {"runs/b.exaviz"}
        # SQL text as a command, plain table names over every store; errors in one line.
        by_run = "SELECT run, count(*) AS n FROM messages GROUP BY run ORDER BY run"
        info = client.get_flight_info(flight.FlightDescriptor.for_command(by_run))
        assert client.do_get(info.endpoints[0].ticket).read_all().to_pylist() == [
            {"run": f"runs/{n}", "n": m} for n, m in messages.items()
        ]
        with pytest.raises(pa.ArrowInvalid, match="no table 'slices'"):
            client.get_flight_info(flight.FlightDescriptor.for_command("SELECT * FROM slices"))
        # The viewer's own protocol beside it.
        assert exaviz.open(f"grpc://{addr}/runs/a.exaviz", progress=False).info()["messages"] == messages["a.exaviz"]

        top = (
            'SELECT sender, count(*) AS n, sum(bytes) AS total FROM "runs/a.exaviz".messages '
            "GROUP BY sender ORDER BY total DESC, sender LIMIT 10"
        )
        local = pa.table(exaviz.query(str(served / "runs" / "a.exaviz"), top.replace('"runs/a.exaviz".', "")))
        with flightsql.connect(f"grpc://{addr}", autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(top)
            assert cur.fetch_arrow_table().to_pylist() == local.to_pylist() and local.num_rows == 10
            cur.execute("SELECT count(*) FROM intervals WHERE run = 'runs/a.exaviz'")
            assert cur.fetchone()[0] == exaviz.open(str(served / "runs" / "a.exaviz"), progress=False).info()["intervals"]
            objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
            assert [c["catalog_name"] for c in objects] == ["exaviz"]
            schemas = {s["db_schema_name"]: [t["table_name"] for t in s["db_schema_tables"]] for s in objects[0]["catalog_db_schemas"]}
            assert set(schemas) == {"public", "runs/a.exaviz", "runs/b.exaviz"} and "messages" in schemas["runs/a.exaviz"]
            schema = conn.adbc_get_table_schema("intervals", db_schema_filter="runs/b.exaviz")
            assert {"name", "start", "duration_s"} <= set(schema.names)
            with pytest.raises(Exception, match="read-only"):
                cur.execute("CREATE TABLE x AS SELECT 1")
    finally:
        server.kill()
        server.wait()


def test_counters_of_a_hip_trace():
    pa = pytest.importorskip("pyarrow")
    trace = exaviz.open(str(need(HIP)))
    counters = pa.table(trace.table("counters"))
    assert counters.num_rows == trace.info()["metric_samples"] > 0
    names = set(counters.column("counter").to_pylist())
    assert len(names) == len(trace.info()["counters"]), names


def test_a_generator_and_its_views():
    trace = exaviz.open("gen:lulesh?iterations=3", progress=False)
    for view in ("timeline", "matrix", "chord"):
        p = trace.render(view, size=(320, 240), backend="cpu")
        assert p.size == (320, 240)


def test_wrong_options_raise_value_error_with_the_clis_message():
    trace = exaviz.open("gen:lulesh?iterations=2", progress=False)
    with pytest.raises(ValueError, match="invalid value 'nope' for '--mix"):
        trace.render("timeline", backend="cpu", mix="nope")
    with pytest.raises(ValueError, match="unexpected argument '--bogus'"):
        trace.render("timeline", backend="cpu", bogus=1)
    with pytest.raises(ValueError, match="unknown view 'nothing'"):
        trace.render("nothing")
    with pytest.raises(ValueError, match="unknown backend"):
        trace.render("timeline", backend="fast")
    with pytest.raises(ValueError, match="no table 'rows'"):
        trace.table("rows")
    with pytest.raises(exaviz.TraceError, match="--ranks 9-12"):
        trace.summary(ranks="9-12")


def test_bad_inputs_raise_one_line_naming_them(tmp_path):
    with pytest.raises(exaviz.TraceError) as e:
        exaviz.open(str(tmp_path / "missing.otf2"))
    assert "missing.otf2" in str(e.value) and "\n" not in str(e.value)
    junk = tmp_path / "junk.json"
    junk.write_bytes(b'{"traceEvents": [ {"ph": "X", "ts": ')
    with pytest.raises(ValueError) as e:
        exaviz.open(str(junk))
    assert "junk.json" in str(e.value) and "\n" not in str(e.value)


def test_the_readmes_python_lines_run(tmp_path, monkeypatch):
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "exaviz.open(" in block and ".render(" in block
    monkeypatch.chdir(tmp_path)
    code = block.replace("scorep-run/traces.otf2", str(need(PING_PONG)))
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert (tmp_path / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert scope["picture"].size == (1200, 600)
    assert any(r["name"] == "MPI_Recv" for r in scope["regions"])
    assert len(scope["messages"]) == scope["trace"].info()["messages"]


def test_the_example_notebook_runs(tmp_path, monkeypatch):
    """Every code cell of examples/exaviz.ipynb, in order, in one namespace (as a kernel runs it)."""
    need(PING_PONG)
    notebook = pathlib.Path(__file__).resolve().parents[2] / "examples" / "exaviz.ipynb"
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    monkeypatch.setenv("EXAVIZ_DATA", str(DATA))
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    results = []
    for k, cell in enumerate(cells):
        lines = "".join(cell["source"]).rstrip().splitlines()
        # The last line's value is the cell's output, as Jupyter shows it.
        body, last = "\n".join(lines[:-1]), lines[-1]
        exec(compile(body, f"cell {k}", "exec"), scope)
        results.append(eval(compile(last, f"cell {k}", "eval"), scope))
    pictures = [r for r in results if isinstance(r, exaviz.Picture)]
    assert len(pictures) == 3 and all(p._repr_png_()[:4] == b"\x89PNG" for p in pictures)
    assert results[0]["messages"] > 0
    assert len(results[-1]) > 0, "messages per pair"


def pipit_events(otf2: pathlib.Path, ticks_per_second: int):
    """The events DataFrame pipit's OTF2 reader makes of `otf2`, built from otf2-print's lines
    (not from exaviz): Timestamp (ns), Event Type, Name, Thread, Process, Attributes."""
    import re

    pd = pytest.importorskip("pandas")
    out = subprocess.run(["otf2-print", str(otf2)], capture_output=True, text=True, check=True).stdout
    classes = {"MPI_SEND": "MpiSend", "MPI_ISEND": "MpiIsend", "MPI_RECV": "MpiRecv", "MPI_IRECV": "MpiIrecv"}
    rows = []
    for line in out.splitlines():
        m = re.match(r"^([A-Z_]+)\s+(\d+)\s+(\d+)\s+(.*)$", line)
        if not m:
            continue
        event, location, time, rest = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        ns = time * 1_000_000_000 / ticks_per_second
        if event in ("ENTER", "LEAVE"):
            region = re.match(r'Region: "(.*)" <\d+>', rest).group(1)
            kind = "Enter" if event == "ENTER" else "Leave"
            rows.append((ns, kind, region, 0, location, None if kind == "Leave" else {"region": region}))
        elif event in classes:
            fields = dict(re.findall(r"(Receiver|Sender|Tag|Length): (\d+)", rest))
            a = {"msg_tag": int(fields["Tag"]), "msg_length": int(fields["Length"])}
            a["receiver" if "Receiver" in fields else "sender"] = int(fields.get("Receiver", fields.get("Sender")))
            rows.append((ns, "Instant", classes[event], 0, location, a))
        else:
            rows.append((ns, "Instant", event.title().replace("_", ""), 0, location, {}))
    columns = ["Timestamp (ns)", "Event Type", "Name", "Thread", "Process", "Attributes"]
    return pd.DataFrame(rows, columns=columns)


def test_a_pipit_dataframe_gives_the_trace_of_its_otf2_file():
    path = need(PING_PONG)
    trace = exaviz.open(str(path))
    tps = trace.info()["ticks_per_second"]
    events = pipit_events(path, tps)
    assert set(events["Event Type"]) == {"Enter", "Leave", "Instant"}
    mine = exaviz.from_pandas(events, name="ping-pong events")
    assert mine.info()["messages"] == trace.info()["messages"] > 0
    assert mine.info()["intervals"] == trace.info()["intervals"] > 0
    # The same regions, calls and times (nanoseconds here, the file's ticks there).
    want = {r["name"]: r for r in trace.summary(top=1000)["regions"]}
    got = {r["name"]: r for r in mine.summary(top=1000)["regions"]}
    assert got.keys() == want.keys()
    for name, r in got.items():
        assert r["count"] == want[name]["count"], name
        for key in ("total_s", "self_s", "max_s"):
            assert r[key] == pytest.approx(want[name][key], rel=1e-6, abs=1e-8), (name, key)
    # The same messages, from the same ends, at the same times since the first event.
    def messages(t, per_ns):
        m = t.table("messages").to_pandas()
        i = t.table("intervals").to_pandas()
        t0 = min(int(i["start"].min()), int(m["send_time"].min()))
        return sorted(zip(m["source"], m["destination"], ((m["send_time"] - t0) * per_ns).round(), ((m["recv_time"] - t0) * per_ns).round(), m["bytes"], m["tag"]))
    got, want = messages(mine, 1.0), messages(trace, 1e9 / tps)
    assert [g[:2] + g[4:] for g in got] == [w[:2] + w[4:] for w in want]
    # Times within a nanosecond (the DataFrame's are rounded to nanoseconds).
    assert all(abs(g[k] - w[k]) <= 1.0 for g, w in zip(got, want) for k in (2, 3)), (got, want)
    picture = mine.render("timeline", size=(640, 360), backend="cpu")
    assert len({tuple(p) for p in picture.to_numpy().reshape(-1, 4)[::53]}) > 3


def test_a_dataframe_missing_a_column_names_it():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"Timestamp (ns)": [0.0, 5.0], "Event Type": ["Enter", "Leave"], "Name": ["main", "main"]})
    with pytest.raises(ValueError, match="no column 'Process'"):
        exaviz.from_pandas(frame)
    frame["Process"] = [0, 0]
    trace = exaviz.from_pandas(frame)
    assert trace.info()["intervals"] == 1
    frame["Event Type"] = ["Enter", "Exit"]
    with pytest.raises(ValueError, match="'Exit'"):
        exaviz.from_pandas(frame)
    frame["Event Type"] = ["Enter", "Leave"]
    frame["Timestamp (ns)"] = [0.0, float("nan")]
    with pytest.raises(ValueError, match="Timestamp"):
        exaviz.from_pandas(frame)


def test_bundle_equals_the_clis_curves(tmp_path):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(3)
    # Two bands of nearly parallel edges, and a few at random.
    a = np.column_stack([rng.normal(0, 0.02, 40), rng.normal(0, 0.02, 40), rng.normal(10, 0.02, 40), rng.normal(0, 0.02, 40) + 3])
    b = rng.uniform(0, 10, (10, 4))
    edges = np.vstack([a, b]).astype(np.float32)
    curves = exaviz.bundle(edges, backend="cpu", samples=12)
    assert curves.shape == (50, 12, 2) and curves.dtype == np.float32
    # The polylines run from each edge's first end to its second.
    assert np.allclose(curves[:, 0], edges[:, :2], atol=1e-3) and np.allclose(curves[:, -1], edges[:, 2:], atol=1e-3)
    csv = tmp_path / "edges.csv"
    csv.write_text("x0,y0,x1,y1\n" + "".join(f"{e[0]!r},{e[1]!r},{e[2]!r},{e[3]!r}\n" for e in edges.tolist()))
    out = tmp_path / "curves.csv"
    cli("bundle", str(csv), "--out", str(out), "--backend", "cpu", "--samples", "12")
    rows = np.loadtxt(out, delimiter=",", skiprows=1)
    assert np.allclose(rows[:, 1:].reshape(50, 12, 2), curves, atol=1e-4)
    with pytest.raises(ValueError, match=r"\(n, 4\)"):
        exaviz.bundle(edges[:, :3])
    with pytest.raises(TypeError, match="'strength'"):
        exaviz.bundle(edges, strength=2)
    with pytest.raises(ValueError, match="invalid bundling parameters"):
        exaviz.bundle(edges, backend="cpu", samples=1)


def test_aggregate_counts_points_per_pixel_as_canvas_points_does():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(5)
    w, h = 64, 48
    # Points at pixel centres (no rounding at the edges of bins), some twice, some outside.
    cx, cy = rng.integers(0, w, 5000), rng.integers(0, h, 5000)
    x, y = (cx + 0.5) / w * 8.0 - 4.0, (cy + 0.5) / h * 6.0
    x = np.concatenate([x, [100.0, np.nan]])
    y = np.concatenate([y, [1.0, 1.0]])
    counts = exaviz.aggregate(x, y, size=(w, h), x_range=(-4, 4), y_range=(0, 6), backend="cpu")
    want = np.zeros((h, w), dtype=np.uint32)
    np.add.at(want, (cy, cx), 1)
    assert counts.shape == (h, w) and (counts == want).all()
    # Over the points' own bounds, every point lands in a pixel; the largest in the last.
    counts = exaviz.aggregate(x[:5000], y[:5000], size=(w, h), backend="cpu")
    assert counts.sum() == 5000


def test_an_interrupt_stops_waiting_for_a_read_that_cannot_finish(tmp_path):
    """A read of a named pipe whose writer holds it open but writes nothing never finishes by
    itself: an interrupt (Ctrl-C, a kernel's interrupt) stops the wait, whatever the speed of
    the machine."""
    import _thread
    import signal
    import threading

    # A shell starts a command put in the background with SIGINT ignored, and Python keeps it
    # so, where `interrupt_main` does nothing: the test sets Python's own handler for its time.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    held = []
    # Opening the write end waits for the reader; then it stays open and silent.
    writer = threading.Thread(target=lambda: held.append(open(fifo, "wb")), daemon=True)
    writer.start()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            exaviz.open(str(fifo), progress=False)
    finally:
        timer.cancel()
        writer.join(5)
        for f in held:
            f.close()
        signal.signal(signal.SIGINT, before)
    # The package still works after it.
    assert exaviz.open("gen:lulesh?iterations=2", progress=False).info()["messages"] > 0


def events_of(trace):
    """The events DataFrame (pipit's layout) of an exaviz trace: each location's intervals as
    enters and leaves in nesting order, each message as an MpiSend and an MpiRecv instant."""
    pd = pytest.importorskip("pandas")
    tps = trace.info()["ticks_per_second"]
    intervals = trace.table("intervals").to_pandas()
    messages = trace.table("messages").to_pandas()
    t0 = min(int(intervals["start"].min()), int(messages["send_time"].min()))
    ns = lambda ticks: (int(ticks) - t0) * 1e9 / tps
    rows = []
    for location, own in intervals.sort_values(["location", "start", "depth"], kind="stable").groupby("location"):
        open_ = []
        for r in own.itertuples():
            while open_ and open_[-1].end <= r.start:
                done = open_.pop()
                rows.append((ns(done.end), "Leave", done.region, 0, location, None))
            rows.append((ns(r.start), "Enter", r.region, 0, location, {}))
            open_.append(r)
        while open_:
            done = open_.pop()
            rows.append((ns(done.end), "Leave", done.region, 0, location, None))
    for m in messages.itertuples():
        rows.append((ns(m.send_time), "Instant", "MpiSend", 0, m.source, {"receiver": m.destination, "msg_tag": m.tag, "msg_length": m.bytes}))
        rows.append((ns(m.recv_time), "Instant", "MpiRecv", 0, m.destination, {"sender": m.source, "msg_tag": m.tag, "msg_length": m.bytes}))
    return pd.DataFrame(rows, columns=["Timestamp (ns)", "Event Type", "Name", "Thread", "Process", "Attributes"])


@pytest.mark.parametrize("through", ["pandas", "arrow"])
def test_a_dataframe_round_trip_keeps_the_trace(through):
    pa = pytest.importorskip("pyarrow")
    trace = exaviz.open(str(need(PING_PONG)))
    events = events_of(trace)
    if through == "pandas":
        back = exaviz.from_pandas(events)
    else:
        back = exaviz.from_arrow(pa.Table.from_pandas(events, preserve_index=False))
    assert back.warnings == []
    want = {r["name"]: r for r in trace.summary(top=1000)["regions"]}
    got = {r["name"]: r for r in back.summary(top=1000)["regions"]}
    assert got.keys() == want.keys()
    for name, r in got.items():
        assert r["count"] == want[name]["count"], name
        assert r["self_s"] == pytest.approx(want[name]["self_s"], rel=1e-6, abs=1e-8), name
    a, b = back.summary(), trace.summary()
    assert (a["messages"], a["bytes"]) == (b["messages"], b["bytes"])
    assert [(p["source"], p["destination"], p["count"]) for p in a["pairs"]] == [(p["source"], p["destination"], p["count"]) for p in b["pairs"]]


def test_the_formats_come_from_the_table_the_cli_lists():
    formats = exaviz.formats()
    names = [f["name"] for f in formats]
    for name in ["otf2", "paraver", "perfetto", "hpctoolkit", "projections", "chrome", "store"]:
        assert name in names, names
    hpctoolkit = next(f for f in formats if f["name"] == "hpctoolkit")
    assert hpctoolkit["options"] == ["depth"] and "HPCToolkit" in hpctoolkit["tools"]
    top = subprocess.run([EXAVIZ, "--help"], capture_output=True, text=True, check=True).stdout
    for f in formats:
        assert f["title"] in top, f["title"]


def test_a_headless_picture_prints_no_error(tmp_path):
    """Without XDG_RUNTIME_DIR (a headless machine), a picture drawn from Python prints nothing
    on stderr (Mesa's drivers complain about the variable unless given a folder)."""
    import sys

    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    code = "import exaviz; exaviz.open('gen:lulesh?iterations=2', progress=False).render('timeline', size=(480, 240))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "XDG_RUNTIME_DIR" not in run.stderr, run.stderr
