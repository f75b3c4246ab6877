#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/ws.sh (also `bench/run.sh --websocket`): WebSocket echo, hroute
# (examples/chat.c's /echo) against node-ws (bench/peers/ws_echo.cjs), each
# pinned to the server CPUs, the client (bench/ws_load.c) to others.
# Rounds alternate hroute and node; it prints the median messages/s of a
# 64-byte binary echo (CONNS connections, DEPTH messages in flight each)
# and the ratio.  Then memory: the server's VmRSS before and after N idle
# WebSocket connections (handshake done, nothing sent), per connection.
# Each round is a row of a CSV file (bench/csv.sh): run ws-echo64B
# (requests_per_s: messages echoed per second) and idle-ws
# (bytes_per_connection), bench/results/ws.csv or --csv FILE, charted into
# DIR with --plot DIR (bench/plot.sh).
#
#   bench/ws.sh                          # 3 rounds of 5 s, 5000 idle connections
#   bench/ws.sh --rounds 5 --duration 10 --idle 10000
#   bench/ws.sh --plot /tmp/charts
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build/release"
DURATION=5
ROUNDS=3
CONNS=32
DEPTH=16
SIZE=64
IDLE=5000
SERVER_CPUS=0
CLIENT_CPUS=1
BUILD=1
HROUTE_PORT=18191
NODE_PORT=18192
CSV=$ROOT/bench/results/ws.csv
PLOT_DIR=

usage() {
  cat <<USAGE
usage: bench/ws.sh [options]
  --duration S         seconds per echo run (default $DURATION)
  --rounds N           alternating rounds (default $ROUNDS)
  --connections N      client connections (default $CONNS)
  --depth N            messages in flight per connection (default $DEPTH)
  --size BYTES         message size (default $SIZE)
  --idle N             idle connections for the memory line, 0: skip (default $IDLE)
  --server-cpus LIST   CPUs for the servers, taskset syntax (default $SERVER_CPUS)
  --client-cpus LIST   CPUs for the client (default $CLIENT_CPUS)
  --csv FILE           a CSV row per round and server (default
                       bench/results/ws.csv; columns: bench/csv.sh)
  --plot DIR           PNG charts of the CSV into DIR (bench/plot.sh, gnuplot)
  --no-build           use the existing build/release programs
USAGE
}

while (($#)); do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --depth) DEPTH=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --idle) IDLE=$2; shift 2 ;;
    --server-cpus) SERVER_CPUS=$2; shift 2 ;;
    --client-cpus) CLIENT_CPUS=$2; shift 2 ;;
    --csv) CSV=$2; shift 2 ;;
    --plot) PLOT_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --websocket) shift ;; # from bench/run.sh --websocket
    -h|--help) usage; exit 0 ;;
    *) echo "ws.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

"$ROOT/scripts/deps.sh" --bench
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
ulimit -n "$(ulimit -Hn)"

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_build chat bench_ws_load
# shellcheck source=bench/csv.sh
. "$ROOT/bench/csv.sh"
bench_workdir ws-bench

LOAD="$BUILD_DIR/bench_ws_load"


taskset -c "$SERVER_CPUS" "$BUILD_DIR/chat" --port "$HROUTE_PORT" 2>"$TMP/chat.err" &
HROUTE_PID=$!
PIDS+=("$HROUTE_PID")
taskset -c "$SERVER_CPUS" node "$ROOT/bench/peers/ws_echo.cjs" "$NODE_PORT" >"$TMP/node.out" &
NODE_PID=$!
PIDS+=("$NODE_PID")
wait_port "$HROUTE_PORT"
wait_port "$NODE_PORT"


: >"$TMP/hroute.rates"
: >"$TMP/node.rates"
csv_open "$CSV"
for ((r = 1; r <= ROUNDS; r++)); do
  for who in hroute node; do
    port=$HROUTE_PORT
    [[ $who == node ]] && port=$NODE_PORT
    rate=$(taskset -c "$CLIENT_CPUS" "$LOAD" echo "$port" /echo "$CONNS" "$DEPTH" "$DURATION" "$SIZE" |
           sed -n 's/^msgs_per_s //p')
    echo "round $r $who $rate msgs/s" >&2
    echo "$rate" >>"$TMP/$who.rates"
    csv_row run="ws-echo${SIZE}B" server="${who/#node/node-ws}" round="$r" requests_per_s="$rate"
  done
done
h=$(median <"$TMP/hroute.rates")
n=$(median <"$TMP/node.rates")
printf '%-8s %-28s %12s\n' server run msgs/s
printf '%-8s %-28s %12.0f\n' hroute "echo ${SIZE}B x${CONNS}x${DEPTH}" "$h"
printf '%-8s %-28s %12.0f\n' node-ws "echo ${SIZE}B x${CONNS}x${DEPTH}" "$n"
awk -v h="$h" -v n="$n" 'BEGIN { printf "ratio hroute/node-ws: %.2fx (median of rounds)\n", h / n }'


if ((IDLE > 0)); then
  for who in hroute node; do
    port=$HROUTE_PORT pid=$HROUTE_PID
    [[ $who == node ]] && port=$NODE_PORT pid=$NODE_PID
    before=$(rss_kb "$pid")
    mkfifo "$TMP/idle.in.$who"
    taskset -c "$CLIENT_CPUS" "$LOAD" idle "$port" /echo "$IDLE" <"$TMP/idle.in.$who" >"$TMP/idle.out.$who" &
    client=$!
    exec {to}>"$TMP/idle.in.$who"
    for _ in $(seq 1 600); do
      grep -q '^ready' "$TMP/idle.out.$who" 2>/dev/null && break
      sleep 0.1
    done
    sleep 0.5
    after=$(rss_kb "$pid")
    echo >&"$to"
    for _ in $(seq 1 100); do
      grep -q '^open' "$TMP/idle.out.$who" && break
      sleep 0.1
    done
    open=$(sed -n 's/^open //p' "$TMP/idle.out.$who")
    exec {to}>&-
    wait "$client" || true
    awk -v w="$who" -v b="$before" -v a="$after" -v n="$IDLE" -v o="$open" 'BEGIN {
      printf "idle: %s RSS %d KiB -> %d KiB for %d WebSocket connections (%s still open): %.0f B each\n",
             w, b, a, n, o, (a - b) * 1024 / n }'
    csv_row run=idle-ws server="${who/#node/node-ws}" round=1 errors="$((IDLE - ${open:-0}))" \
      bytes_per_connection="$(awk -v b="$before" -v a="$after" -v n="$IDLE" 'BEGIN {
        printf "%.0f", (a - b) * 1024 / n }')"
  done
fi

echo
if [[ -n $PLOT_DIR ]]; then
  echo "charts:"
  caption="WebSocket echo: hroute $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'),"
  caption+=" node-ws; $CONNS connections x $DEPTH messages of $SIZE bytes in flight,"
  caption+=" $DURATION s per run, $ROUNDS round(s)"
  bash "$ROOT/bench/plot.sh" --caption "$caption" "$CSV" "$PLOT_DIR" | sed 's/^/  /'
fi
echo "rounds: $CSV ($(csv_rows) rows)"
