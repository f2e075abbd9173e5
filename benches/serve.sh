#!/bin/sh
# exaviz bench-interact against `exaviz serve` on this machine with a simulated round trip:
# the local store first, then one client of the server, then four clients at once (each client's
# own report). Gestures: benches/interact-deep.txt (whole trace, a deep zoom read from the rows,
# pans, hovers, back out) unless a script is given.
#
#   benches/serve.sh STORE [RTT_MS] [SCRIPT]      e.g. benches/serve.sh /data/p8.exaviz 20
#
# Needs target/release/exaviz (cargo build --release -p exaviz).
set -eu
store=$1
rtt=${2:-20}
script=${3:-$(dirname "$0")/interact-deep.txt}
exe=${EXAVIZ:-target/release/exaviz}
out=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT

"$exe" serve "$store" --listen 127.0.0.1:0 --delay-ms "$rtt" --log > "$out/server" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q listening "$out/server" 2>/dev/null && break; sleep 0.1; done
addr=$(grep -o '127.0.0.1:[0-9]*' "$out/server")
url="grpc://$addr/$(basename "$store")"
bench() { "$exe" bench-interact "$1" --view timeline --backend cpu --script "$script" --runs 3; }

echo "== local store"
bench "$store"
echo "== one client of exaviz serve, ${rtt} ms simulated round trip"
bench "$url"
echo "== four clients at once"
pids=""
for k in 1 2 3 4; do bench "$url" > "$out/client$k" 2>&1 & pids="$pids $!"; done
wait $pids
for k in 1 2 3 4; do echo "-- client $k"; cat "$out/client$k"; done
echo "== the server's answers of rows (time to read and encode, without the round trip)"
grep "Rows.* ms$" "$out/server" | sed 's/.* in \([0-9.]*\) ms/\1/' | sort -n | awk '{a[NR]=$1} END {if (NR) print NR " answers: p50 " a[int((NR+1)/2)] " ms, p95 " a[int(NR*0.95+0.5)] " ms, max " a[NR] " ms"}'
