#!/bin/sh
# Rows grouped by behaviour against rows by index, in one run, on the CPU path: the window's
# default gestures (zoom in five steps, pan, hover, click, reset) over a generated halo exchange
# of RANKS ranks held in memory, one of them (5/8 of the way down) three times as long in a
# region of its own. The difference between the two reports is what grouping costs a gesture
# (the features, the representatives, the distances and the bands' layout).
#
#   benches/rows.sh [RANKS] [MESSAGES] [SIZE]      e.g. benches/rows.sh 16384 400000 1200x900
#   benches/rows.sh store [RANKS] [MESSAGES] [SIZE] e.g. benches/rows.sh store 65536 100000000 1200x900
#
# With `store` the trace is first converted to a store under $TMPDIR (kept for the next run,
# removed with the folder) and opened out of core, as `exaviz view STORE` does: its wide
# windows are drawn from the pyramid, grouped from its per-location tiles, and its narrow ones
# from their rows.
#
# Needs target/release/exaviz (cargo build --release -p exaviz).
set -eu
store=
if [ "${1:-}" = store ]; then
    store=1
    shift
fi
ranks=${1:-16384}
messages=${2:-400000}
size=${3:-1200x900}
exe=${EXAVIZ:-target/release/exaviz}
input="gen:fd4?ranks=$ranks&messages=$messages&slow_rank=$((ranks * 5 / 8))"
if [ -n "$store" ]; then
    path="${TMPDIR:-/tmp}/exaviz-rows-bench-$ranks-$messages.exaviz"
    [ -e "$path" ] || "$exe" convert "$input" "$path"
    input=$path
fi
for rows in behaviour index; do
    echo "== --rows $rows"
    "$exe" bench-interact "$input" --view timeline --backend cpu --size "$size" --runs 3 --rows "$rows"
done
