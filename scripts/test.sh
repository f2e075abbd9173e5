#!/usr/bin/env bash
# The one test command (README; .ci/run calls it). Installs what is missing on a Debian machine
# (lavapipe for the GPU tests, Xvfb, ImageMagick and xdotool for the viewer tests), then runs every test.
# GPU tests fail, never skip, without an adapter. With CI=true (or EXAVIZ_REQUIRE_DATA=1) the
# tests that read ../shared/data are mandatory too.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mesa-vulkan-drivers libvulkan1 xvfb xauth imagemagick xdotool libxkbcommon-x11-0 libx11-xcb1 libxcursor1 libxi6 otf2-tools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Vulkan loaders complain without a runtime dir; give them a private one.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true
if [ "${CI:-}" = "true" ]; then
  export EXAVIZ_REQUIRE_DATA=1
  # A CI run is a fresh clone: incremental caches would only take disk space, not time.
  export CARGO_INCREMENTAL=0
fi

# One compile of the whole workspace, one feature set, one profile. The CLI is built with
# DataFusion (`exaviz pyramid --engine datafusion`), whose crates the `aggregate` tests build
# anyway; the Python extension (a cdylib) is built in the same run, so its wheel needs no second
# compile under features of its own (scripts/python-test.sh packs it). Clippy's lints run inside
# that build rather than in a check build of their own: clippy-driver compiles the workspace's
# crates (RUSTC_WORKSPACE_WRAPPER, as `cargo clippy` sets it) with warnings denied, so every
# dependency is compiled once, not once checked and once built.
export EXAVIZ_FEATURES="exaviz/datafusion"
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings"
# pyo3 leaves libpython's symbols to the interpreter that loads the extension (as maturin has it).
export PYO3_BUILD_EXTENSION_MODULE=1
step() { echo "== $1: $(( $(date +%s) - started )) s since the start"; }
started=$(date +%s)
cargo fmt --all -- --check
step "lints and build of every crate and target"
cargo build --workspace --all-targets --features "$EXAVIZ_FEATURES" --quiet
step "tests"
log="$(mktemp)"
set +e
cargo test --workspace --features "$EXAVIZ_FEATURES" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The Python package (pytest against the CLI), unless the Rust tests were filtered.
if [ $# -eq 0 ]; then
  step "Python package"
  bash scripts/python-test.sh 2>&1 | tee -a "$log"
  py_status=${PIPESTATUS[0]}
  [ "$status" -ne 0 ] || status=$py_status
fi
set -e
# One closing line over every test binary (cargo prints one result line per binary).
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     /^(=+ )?[0-9]+ (passed|failed|skipped)/ {
       for (k = 1; k < NF; k++) { if ($(k+1) ~ /^passed/) q += $k; if ($(k+1) ~ /^failed/) qf += $k; if ($(k+1) ~ /^skipped/) qs += $k }
     }
     END { printf "tests: %d passed, %d failed, %d skipped (Rust); %d passed, %d failed, %d skipped (Python)\n", p, f, i, q, qf, qs }' "$log"
rm -f "$log"
echo "target folder: $(du -sh target 2>/dev/null | cut -f1)"
step "done"
exit "$status"
