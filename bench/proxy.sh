#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/proxy.sh: what the PROXY protocol header costs per connection.
# Two hello servers pinned to the server CPU, one plain and one with
# --proxy-from 127.0.0.0/8; bench/proxy_conns.c on the client CPU opens
# connections one after another (a request with Connection: close each,
# behind a v1 header for the second server).  Rounds alternate; it prints
# the median connections/s of each and the difference in microseconds per
# connection.  With --callgrind, instead: each server runs under valgrind's
# callgrind, once with no connection and once for --duration seconds of
# them, and it prints the server's instructions per connection ((Ir(run) -
# Ir(idle)) / connections), plain and with the header: a figure that does
# not depend on the machine's load.
#
#   bench/proxy.sh [--rounds N] [--duration S] [--no-build] [--callgrind]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build/release"
ROUNDS=5
DURATION=3
BUILD=1
CALLGRIND=0
while (($#)); do
  case $1 in
    --callgrind) CALLGRIND=1; shift ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '4,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "proxy.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
"$ROOT/scripts/deps.sh" --bench
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_build hello bench_proxy_conns
bench_workdir proxy-bench

# Instructions of one hello under callgrind: $1 port, $2 seconds of
# connections (0: none), $3 --header or "", then hello's own arguments.
# Prints "IR CONNS".
callgrind_run() {
  local port=$1 secs=$2 header=$3 out n=0 pid
  shift 3
  out="$TMP/cg.$port.$secs"
  taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$BUILD_DIR/hello" --host 127.0.0.1 --port "$port" "$@" 2>"$TMP/cg.err" &
  pid=$!
  wait_port "$port"
  if ((secs > 0)); then
    n=$(taskset -c 1 "$BUILD_DIR/bench_proxy_conns" "$port" "$secs" $header | sed -n 's/^conns //p')
  else
    # wait_port's own probe connection is in every run alike.
    :
  fi
  kill -INT "$pid"
  wait "$pid" || true
  echo "$(sed -n 's/^summary: //p' "$out") $n"
}

if ((CALLGRIND)); then
  command -v valgrind >/dev/null || { echo "proxy.sh: --callgrind needs valgrind" >&2; exit 2; }
  read -r p0 _ < <(callgrind_run 18221 0 "")
  read -r p1 pn < <(callgrind_run 18221 "$DURATION" "")
  read -r x0 _ < <(callgrind_run 18222 0 "" --proxy-from 127.0.0.0/8)
  read -r x1 xn < <(callgrind_run 18222 "$DURATION" --header --proxy-from 127.0.0.0/8)
  awk -v p0="$p0" -v p1="$p1" -v pn="$pn" -v x0="$x0" -v x1="$x1" -v xn="$xn" 'BEGIN {
    p = (p1 - p0) / pn; x = (x1 - x0) / xn
    printf "server instructions per connection (callgrind Ir): plain %.0f (%d connections), with a PROXY v1 header %.0f (%d)\n", p, pn, x, xn
    printf "cost of the header: %.0f instructions per connection (%.1f%%)\n", x - p, 100 * (x - p) / p }'
  exit 0
fi

taskset -c 0 "$BUILD_DIR/hello" --host 127.0.0.1 --port 18201 2>"$TMP/plain.err" &
PIDS+=($!)
taskset -c 0 "$BUILD_DIR/hello" --host 127.0.0.1 --port 18202 --proxy-from 127.0.0.0/8 \
  2>"$TMP/proxy.err" &
PIDS+=($!)
wait_port 18201
wait_port 18202

: >"$TMP/plain"
: >"$TMP/proxy"
for ((r = 1; r <= ROUNDS; r++)); do
  p=$(taskset -c 1 "$BUILD_DIR/bench_proxy_conns" 18201 "$DURATION" | sed -n 's/^conns_per_s //p')
  x=$(taskset -c 1 "$BUILD_DIR/bench_proxy_conns" 18202 "$DURATION" --header |
      sed -n 's/^conns_per_s //p')
  echo "round $r: plain $p conns/s, PROXY header $x conns/s" >&2
  echo "$p" >>"$TMP/plain"
  echo "$x" >>"$TMP/proxy"
done
p=$(median <"$TMP/plain")
x=$(median <"$TMP/proxy")
awk -v p="$p" -v x="$x" 'BEGIN {
  printf "connections/s (median of rounds): plain %.0f, with a PROXY v1 header %.0f (%.3fx)\n", p, x, x / p
  printf "cost of the header: %.2f us per connection\n", (1e6 / x) - (1e6 / p) }'
