"""Packs the Python package's abi3 wheel from the extension cargo already built.

The tests' wheel: `scripts/test.sh` builds every crate of the workspace in one cargo run (one
feature set, one profile), the Python extension (`python/`, a cdylib) among them, so that the
extension is not compiled a second time under its own features as a `maturin build` would. This
script puts that library and `python/exaviz/*.py` into a wheel laid out as maturin lays it out
(`exaviz/_exaviz.abi3.so`, the `.dist-info` with METADATA, WHEEL and RECORD), which pip installs
as it installs maturin's. Users build release wheels with maturin (README).

    python3 scripts/wheel.py target/debug/lib_exaviz.so target/wheels
"""

import base64
import hashlib
import pathlib
import re
import sys
import sysconfig
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def version():
    text = (ROOT / "Cargo.toml").read_text()
    block = text.split("[workspace.package]", 1)[1]
    return re.search(r'^version\s*=\s*"([^"]+)"', block, re.M).group(1)


def metadata(ver):
    import tomllib

    project = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {ver}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
        f"License: {project['license']['text']}",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {r} ; extra == '{extra}'" for r in reqs]
    return "\n".join(lines) + "\n"


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(library, out_dir):
    ver = version()
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"cp39-abi3-{platform}"
    dist = f"exaviz-{ver}.dist-info"
    files = {f"exaviz/{p.name}": p.read_bytes() for p in sorted((ROOT / "python" / "exaviz").glob("*.py"))}
    files["exaviz/_exaviz.abi3.so"] = pathlib.Path(library).read_bytes()
    files[f"{dist}/METADATA"] = metadata(ver).encode()
    files[f"{dist}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: exaviz scripts/wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    ).encode()
    record = [f"{name},{digest(data)},{len(data)}" for name, data in files.items()]
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"exaviz-{ver}-{tag}.whl"
    tmp = wheel.with_suffix(".whl.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    tmp.replace(wheel)
    print(wheel)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: wheel.py LIBRARY OUT_DIR")
    main(sys.argv[1], sys.argv[2])
