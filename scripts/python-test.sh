#!/usr/bin/env bash
# The Python package's tests: packs the abi3 wheel from the extension that scripts/test.sh built
# with every other crate (target/debug/lib_exaviz.so; scripts/wheel.py lays it out as maturin
# does), installs it into a virtual environment made here (target/python-venv), and runs pytest
# against the CLI built from the same sources. Called by scripts/test.sh after the Rust tests;
# `bash scripts/python-test.sh` alone builds what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

# The cargo target folder (CARGO_TARGET_DIR where set, as cargo has it).
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check pytest pyarrow pandas numpy adbc-driver-flightsql

# Alone, build the extension and the CLI as scripts/test.sh does (one feature set for both).
if [ -z "${EXAVIZ_FEATURES:-}" ]; then
  export PYO3_BUILD_EXTENSION_MODULE=1
  cargo build -q --workspace --all-targets --features exaviz/datafusion
fi
start=$(date +%s)
rm -rf "$target/wheels"
wheel=$("$venv/bin/python" scripts/wheel.py "$target/debug/lib_exaviz.so" "$target/wheels")
echo "python: wheel packed in $(( $(date +%s) - start )) s: $(basename "$wheel")"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"

# From outside the source folder, so that `import exaviz` finds the installed wheel.
tests="$PWD/python/tests"
cd "$target"
EXAVIZ_BIN="$target/debug/exaviz" "$venv/bin/python" -m pytest -q "$tests" "$@"
