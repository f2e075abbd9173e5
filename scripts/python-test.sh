#!/usr/bin/env bash
# The Python package's tests: builds the abi3 wheel with maturin (dev profile, sharing the
# workspace's target folder), installs it into a virtual environment made here
# (target/python-venv), and runs pytest against the CLI built from the same sources.
# Called by scripts/test.sh after the Rust tests; `bash scripts/python-test.sh` alone works too.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="$PWD/target/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9,<2" pytest pyarrow pandas numpy

# The CLI as scripts/test.sh built it (EXAVIZ_FEATURES), so that it is not built twice.
cargo build -q -p exaviz ${EXAVIZ_FEATURES:+--features "$EXAVIZ_FEATURES"}
start=$(date +%s)
rm -rf target/wheels
"$venv/bin/maturin" build -q --profile dev -m python/Cargo.toml --out target/wheels --interpreter "$venv/bin/python"
echo "python: wheel built in $(( $(date +%s) - start )) s: $(basename target/wheels/*.whl)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps target/wheels/*.whl

# From outside the source folder, so that `import exaviz` finds the installed wheel.
cd target
EXAVIZ_BIN="$PWD/debug/exaviz" "$venv/bin/python" -m pytest -q ../python/tests "$@"
