#!/bin/sh
# Rows grouped by behaviour against rows by index, in one run, on the CPU path: the window's
# default gestures (zoom in five steps, pan, hover, click, reset) over a generated halo exchange
# of RANKS ranks held in memory, one of them (5/8 of the way down) three times as long in a
# region of its own. The difference between the two reports is what grouping costs a gesture
# (the features, the representatives, the distances and the bands' layout).
#
#   benches/rows.sh [RANKS] [MESSAGES] [SIZE]      e.g. benches/rows.sh 16384 400000 1200x900
#
# Needs target/release/exaviz (cargo build --release -p exaviz).
set -eu
ranks=${1:-16384}
messages=${2:-400000}
size=${3:-1200x900}
exe=${EXAVIZ:-target/release/exaviz}
input="gen:fd4?ranks=$ranks&messages=$messages&slow_rank=$((ranks * 5 / 8))"
for rows in behaviour index; do
    echo "== --rows $rows"
    "$exe" bench-interact "$input" --view timeline --backend cpu --size "$size" --runs 3 --rows "$rows"
done
