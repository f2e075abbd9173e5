#!/usr/bin/env bash
# exaviz's GPU path against its CPU path on one machine with a real GPU, same data, one run:
# binning points (Canvas.points' work), KDE edge bundling, and the timeline's gestures.
#
#     cargo build --release -p exaviz
#     benches/real_gpu.sh [target/release/exaviz] [WORK_DIR]
#
# Needs python3 (to write the same points and edges as benches/peer_compare.py) and a Vulkan
# driver for the GPU; prints the adapter, then one RESULT or table per measurement. In a headless
# NVIDIA container without a Vulkan loader, or whose GLX-based driver manifest fails to create an
# instance, put a libvulkan.so.1 on LD_LIBRARY_PATH and point VK_ICD_FILENAMES at a manifest
# naming the driver's EGL library (libEGL_nvidia.so.0); the adapter line then names the GPU.
# SIZES_22M=1 adds the timeline at 22M messages.
set -u
EXAVIZ=${1:-target/release/exaviz}
WORK=${2:-$(mktemp -d)}
mkdir -p "$WORK"
HERE=$(cd "$(dirname "$0")" && pwd)

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
echo "cpus: $(nproc)"
ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>/dev/null | tr '\n' ' '
echo

echo "== inputs"
HERE="$HERE" python3 -c "
import os, sys, time
sys.path.insert(0, os.environ['HERE'])
import peer_compare as p
t = time.time()
p.write_points('$WORK/points.csv', 20_000_000)
p.write_edges('$WORK/edges.csv', 100_000, 'structured')
print(f'written in {time.time() - t:.1f} s')
"

echo "== binning 20M points into 1024x1024"
for b in gpu cpu gpu cpu; do
  "$EXAVIZ" aggregate "$WORK/points.csv" --points --size 1024x1024 --backend "$b" --runs 5 --warmup 1 2>&1 | grep -E "RESULT|adapter|warning|error" | head -3
done
echo "-- gpu, the points' columns kept on the device between runs (--kept)"
"$EXAVIZ" aggregate "$WORK/points.csv" --points --size 1024x1024 --backend gpu --kept --runs 5 --warmup 1 2>&1 | grep -E "RESULT|warning|error" | head -3

echo "== KDE bundling, 100K structured edges, defaults"
for b in gpu cpu; do
  "$EXAVIZ" bundle "$WORK/edges.csv" --out "$WORK/curves.csv" --backend "$b" --runs 3 --warmup 1 2>&1 | grep -E "RESULT|warning|error" | head -3
done

echo "== timeline gestures, FD4 (2.2M messages) in memory"
# On a GPU of its own the timeline draws every window from the rows kept on the device (the
# timeline_pixels stage) and the pictures stay there; EXAVIZ_GPU_ROWS=0 draws wide windows from
# the index as the CPU path does, for comparison.
# On the GPU every compute pass is timed (timestamps), beside its speed of light.
timings() { [ "$1" = gpu ] && echo --timings; }
for b in gpu cpu; do
  echo "-- $b"
  "$EXAVIZ" bench-interact gen:fd4 --view timeline --backend "$b" --runs 2 $(timings "$b") 2>&1 | tail -22
done
echo "-- gpu, wide windows from the index (EXAVIZ_GPU_ROWS=0)"
EXAVIZ_GPU_ROWS=0 "$EXAVIZ" bench-interact gen:fd4 --view timeline --backend gpu --runs 2 2>&1 | tail -9
echo "== matrix gestures, FD4 (2.2M messages) in memory"
for b in gpu cpu; do
  echo "-- $b"
  "$EXAVIZ" bench-interact gen:fd4 --view matrix --backend "$b" --runs 2 $(timings "$b") 2>&1 | tail -14
done

if [ "${SIZES_22M:-0}" = 1 ]; then
  echo "== timeline gestures, FD4 at 22M messages in memory"
  for b in gpu cpu; do
    echo "-- $b"
    "$EXAVIZ" bench-interact 'gen:fd4?iterations=5240' --view timeline --backend "$b" --runs 1 2>&1 | tail -7
  done
fi

echo "== the linked mpi view and the chord diagram, FD4 in memory"
# The chord's dense curves drawn on the device from their kept pieces (curve_density); the mpi
# view's window restricts them, so each gesture sends every kept curve's opacity.
for v in mpi chord; do
  for b in gpu cpu; do
    echo "-- $v $b"
    "$EXAVIZ" bench-interact gen:fd4 --view "$v" --backend "$b" --runs 2 $(timings "$b") 2>&1 | tail -20
  done
done

echo "== timeline gestures, 16,384 ranks in memory grouped by behaviour, the summary track above"
# The ranks grouped on the device from the intervals kept there; the plot and its summary track
# composed there.
for b in gpu cpu; do
  echo "-- $b"
  "$EXAVIZ" bench-interact 'gen:fd4?ranks=16384&messages=400000&slow_rank=10007' --view timeline \
    --backend "$b" --runs 2 $(timings "$b") 2>&1 | tail -20
done

echo "== timeline gestures, a store of 1e8 messages (16,384 ranks) drawn from its pyramid"
# The store's pyramid (levels, lines, per-rank tiles) kept on the device, the overview composed
# there and the ranks grouped there; EXAVIZ_TIMELINE_ON_HOST=1 composes the overview on the CPU.
if "$EXAVIZ" convert 'gen:fd4?ranks=16384&messages=100000000&seed=1' "$WORK/p8.exaviz" 2>&1 | tail -1; then
  for b in gpu cpu; do
    echo "-- $b"
    "$EXAVIZ" bench-interact "$WORK/p8.exaviz" --view timeline --backend "$b" --runs 1 $(timings "$b") 2>&1 | tail -24
  done
  echo "-- gpu, the overview composed on the CPU (EXAVIZ_TIMELINE_ON_HOST=1)"
  EXAVIZ_TIMELINE_ON_HOST=1 "$EXAVIZ" bench-interact "$WORK/p8.exaviz" --view timeline --backend gpu --runs 1 2>&1 | tail -9
  # Windows read from disk (about 1M rows), drawn from the store's rows kept in chunks on the
  # device; the CPU path beside it.
  echo "-- windows read from disk, benches/interact-deep.txt"
  for b in gpu cpu; do
    echo "-- $b"
    "$EXAVIZ" bench-interact "$WORK/p8.exaviz" --view timeline --backend "$b" --runs 1 \
      --script "$HERE/interact-deep.txt" $(timings "$b") 2>&1 | tail -12
  done
  rm -rf "$WORK/p8.exaviz"
fi
