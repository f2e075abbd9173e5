#!/bin/sh
# What drawing apart costs the Marey graph and the matrix, in one run, on the CPU path: the
# window's default gestures (zoom in five steps, pan, hover, click, reset) with --rows behaviour
# against --rows index, over
#   marey:  gen:training?devices=N&straggler=R (R 5/8 of the way down): the collapsed stages'
#           devices grouped by their time per operator class in the window, the straggler and
#           its partner drawn apart;
#   matrix: gen:fd4?ranks=N&messages=M&heavy_pair=S-R held in memory: every rank's sent and
#           received totals in the window, the heavy pair's two ranks drawn apart.
# The difference between the two reports is what keeping the deviants costs a gesture.
#
#   benches/apart.sh marey [DEVICES] [SIZE]             e.g. benches/apart.sh marey 10000 1200x900
#   benches/apart.sh matrix [RANKS] [MESSAGES] [SIZE]   e.g. benches/apart.sh matrix 65536 1000000 1024x768
#   benches/apart.sh matrix-store [RANKS] [MESSAGES] [SIZE]
#           the same trace converted to a store under $TMPDIR (kept for the next run) and opened
#           out of core: drawn from its pyramid, the pair's ranks from its per-pair tiles
#
# Needs target/release/exaviz (cargo build --release -p exaviz).
set -eu
view=${1:-marey}
exe=${EXAVIZ:-target/release/exaviz}
case "$view" in
marey)
    devices=${2:-10000}
    size=${3:-1200x900}
    input="gen:training?devices=$devices&straggler=$((devices * 5 / 8))"
    ;;
matrix | matrix-store)
    ranks=${2:-65536}
    messages=${3:-1000000}
    size=${4:-1024x768}
    input="gen:fd4?ranks=$ranks&messages=$messages&heavy_pair=$((ranks / 50))-$((ranks * 5 / 8))"
    ;;
*)
    echo "benches/apart.sh: the view is marey, matrix or matrix-store, not $view" >&2
    exit 2
    ;;
esac
if [ "$view" = matrix-store ]; then
    view=matrix
    path="${TMPDIR:-/tmp}/exaviz-apart-bench-$ranks-$messages.exaviz"
    [ -e "$path" ] || "$exe" convert "$input" "$path"
    input=$path
fi
for rows in behaviour index; do
    echo "== --view $view --rows $rows"
    "$exe" bench-interact "$input" --view "$view" --backend cpu --size "$size" --runs 3 --rows "$rows"
done
