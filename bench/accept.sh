#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/accept.sh: what one listening socket shared by the worker threads
# costs against one SO_REUSEPORT socket per worker, for new connections.
# Two hello servers with --threads 2, both pinned to the server CPU, one
# with the default shared socket and one with --reuseport; `--clients`
# bench/proxy_conns processes on the client CPU each open connections one
# after another (one request with Connection: close each).  Rounds
# alternate; it prints the median connections/s of each and their ratio.
#
#   bench/accept.sh [--rounds N] [--duration S] [--clients N] [--no-build]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build/release"
ROUNDS=5
DURATION=3
CLIENTS=2
BUILD=1
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '4,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "accept.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
"$ROOT/scripts/deps.sh" --bench
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_build hello bench_proxy_conns
bench_workdir accept-bench

taskset -c 0 "$BUILD_DIR/hello" --host 127.0.0.1 --port 18211 --threads 2 2>"$TMP/shared.err" &
PIDS+=($!)
taskset -c 0 "$BUILD_DIR/hello" --host 127.0.0.1 --port 18212 --threads 2 --reuseport \
  2>"$TMP/reuseport.err" &
PIDS+=($!)
wait_port 18211
wait_port 18212

# Connections/s of $CLIENTS clients at once against port $1.
rate() {
  local i pids=()
  for ((i = 0; i < CLIENTS; i++)); do
    taskset -c 1 "$BUILD_DIR/bench_proxy_conns" "$1" "$DURATION" >"$TMP/c$i" &
    pids+=($!)
  done
  wait "${pids[@]}"
  cat "$TMP"/c* | sed -n 's/^conns_per_s //p' | awk '{ s += $1 } END { printf "%.0f\n", s }'
  rm -f "$TMP"/c*
}

: >"$TMP/shared"
: >"$TMP/reuseport"
for ((r = 1; r <= ROUNDS; r++)); do
  s=$(rate 18211)
  p=$(rate 18212)
  echo "round $r: shared socket $s conns/s, SO_REUSEPORT $p conns/s" >&2
  echo "$s" >>"$TMP/shared"
  echo "$p" >>"$TMP/reuseport"
done
s=$(median <"$TMP/shared")
p=$(median <"$TMP/reuseport")
awk -v s="$s" -v p="$p" 'BEGIN {
  printf "connections/s (median of rounds), 2 threads: shared socket %.0f, SO_REUSEPORT %.0f (shared/reuseport %.3fx)\n", s, p, s / p }'
