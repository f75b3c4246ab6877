#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/ws.sh (also `bench/run.sh --websocket`): WebSocket echo, hroute
# (examples/chat.c's /echo) against its peers, each pinned to the server
# CPUs, the client (bench/ws_load.c) to others.  Peers (--compare, a
# comma-separated list, default node):
#   node  node-ws (bench/peers/ws_echo.cjs)
#   uws   uWebSockets (bench/peers/uws_echo.cpp, one thread), built with g++
#         against the git directories given by --uws-git and --usockets-git
#         (fetched copies; nothing of them is kept in this tree)
#   lws   libwebsockets 4.1 from Debian (bench/peers/lws_echo.c)
# Rounds alternate the servers; it prints the median messages/s of a
# 64-byte binary echo (CONNS connections, DEPTH messages in flight each),
# the server's CPU µs per message (from /proc/PID/stat over the run) and
# hroute's ratio to each peer.  Then memory: each server's VmRSS before and
# after N idle WebSocket connections (handshake done, nothing sent), per
# connection.  Each round is a row of a CSV file (bench/csv.sh): run
# ws-echo64B (requests_per_s: messages echoed per second,
# cpu_us_per_request: per message) and idle-ws (bytes_per_connection),
# bench/results/ws.csv or --csv FILE, charted into DIR with --plot DIR
# (bench/plot.sh).
#
#   bench/ws.sh                          # 3 rounds of 5 s, 5000 idle connections
#   bench/ws.sh --rounds 5 --duration 10 --idle 10000
#   bench/ws.sh --compare node,uws,lws --uws-git DIR --usockets-git DIR
#   bench/ws.sh --plot /tmp/charts

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
COMPARE=node
UWS_GIT=
USOCKETS_GIT=
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
  --compare LIST       peers, comma-separated: node, uws, lws (default $COMPARE)
  --uws-git DIR        git directory of uWebSockets (for uws)
  --usockets-git DIR   git directory of uSockets (for uws)
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
    --compare) COMPARE=$2; shift 2 ;;
    --uws-git) UWS_GIT=$2; shift 2 ;;
    --usockets-git) USOCKETS_GIT=$2; shift 2 ;;
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

IFS=, read -r -a PEERS <<<"$COMPARE"
for peer in "${PEERS[@]}"; do
  case $peer in
    node | uws | lws) ;;
    *) echo "ws.sh: unknown peer '$peer' (node, uws, lws)" >&2; exit 2 ;;
  esac
done

# Builds the uws and lws peers into $TMP.
build_peer() {
  local d=$TMP/uws f objs=()
  case $1 in
    lws)
      # shellcheck disable=SC2046 # word splitting wanted
      cc -O2 -Wall -Wextra -o "$TMP/lws_echo" "$ROOT/bench/peers/lws_echo.c" \
        $(pkg-config --cflags --libs libwebsockets) ;;
    uws)
      if [[ -z $UWS_GIT || -z $USOCKETS_GIT ]]; then
        echo "ws.sh: uws needs --uws-git DIR and --usockets-git DIR" >&2
        exit 2
      fi
      mkdir -p "$d/uws" "$d/us" "$d/obj"
      git --git-dir="$UWS_GIT" archive HEAD src | tar -x -C "$d/uws"
      git --git-dir="$USOCKETS_GIT" archive HEAD src | tar -x -C "$d/us"
      for f in bsd context loop socket udp eventing/epoll_kqueue crypto/openssl; do
        cc -O2 -DLIBUS_NO_SSL -I"$d/us/src" -c "$d/us/src/$f.c" -o "$d/obj/${f##*/}.o"
        objs+=("$d/obj/${f##*/}.o")
      done
      g++ -O2 -std=c++20 -DLIBUS_NO_SSL -DUWS_NO_ZLIB -I"$d/us/src" -I"$d/uws/src" \
        -o "$TMP/uws_echo" "$ROOT/bench/peers/uws_echo.cpp" "${objs[@]}" ;;
  esac
}

# Starts server $1 on port $2; its pid goes into PID_OF[$1].
declare -A PID_OF PORT_OF
start_server() {
  case $1 in
    hroute) taskset -c "$SERVER_CPUS" "$BUILD_DIR/chat" --port "$2" 2>"$TMP/chat.err" & ;;
    node) taskset -c "$SERVER_CPUS" node "$ROOT/bench/peers/ws_echo.cjs" "$2" >"$TMP/node.out" & ;;
    uws) taskset -c "$SERVER_CPUS" "$TMP/uws_echo" "$2" >"$TMP/uws.out" & ;;
    lws) taskset -c "$SERVER_CPUS" "$TMP/lws_echo" "$2" >"$TMP/lws.out" & ;;
  esac
  PID_OF[$1]=$!
  PORT_OF[$1]=$2
  PIDS+=("$!")
}

# CPU time of process $1 in clock ticks (utime + stime).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

SERVERS=(hroute "${PEERS[@]}")
port=$HROUTE_PORT
for who in "${SERVERS[@]}"; do
  [[ $who == uws || $who == lws ]] && build_peer "$who"
  start_server "$who" "$port"
  port=$((port + 1))
done
for who in "${SERVERS[@]}"; do wait_port "${PORT_OF[$who]}"; done
HZ=$(getconf CLK_TCK)

csv_name() { case $1 in node) echo node-ws ;; uws) echo uwebsockets ;; lws) echo libwebsockets ;; *) echo "$1" ;; esac; }

csv_open "$CSV"
for who in "${SERVERS[@]}"; do : >"$TMP/$who.rates"; : >"$TMP/$who.cpu"; done
for ((r = 1; r <= ROUNDS; r++)); do
  for who in "${SERVERS[@]}"; do
    t0=$(cpu_ticks "${PID_OF[$who]}")
    rate=$(taskset -c "$CLIENT_CPUS" "$LOAD" echo "${PORT_OF[$who]}" /echo "$CONNS" "$DEPTH" \
             "$DURATION" "$SIZE" | sed -n 's/^msgs_per_s //p')
    t1=$(cpu_ticks "${PID_OF[$who]}")
    cpu=$(awk -v t="$((t1 - t0))" -v hz="$HZ" -v r="$rate" -v d="$DURATION" \
            'BEGIN { printf "%.3f", (r > 0 ? t / hz * 1e6 / (r * d) : 0) }')
    echo "round $r $who $rate msgs/s, $cpu us CPU per message" >&2
    echo "$rate" >>"$TMP/$who.rates"
    echo "$cpu" >>"$TMP/$who.cpu"
    csv_row run="ws-echo${SIZE}B" server="$(csv_name "$who")" round="$r" requests_per_s="$rate" \
      cpu_us_per_request="$cpu"
  done
done
printf '%-14s %-28s %12s %12s\n' server run msgs/s cpu_us/msg
for who in "${SERVERS[@]}"; do
  printf '%-14s %-28s %12.0f %12.3f\n' "$(csv_name "$who")" "echo ${SIZE}B x${CONNS}x${DEPTH}" \
    "$(median <"$TMP/$who.rates")" "$(median <"$TMP/$who.cpu")"
done
for who in "${PEERS[@]}"; do
  awk -v h="$(median <"$TMP/hroute.rates")" -v n="$(median <"$TMP/$who.rates")" \
      -v hc="$(median <"$TMP/hroute.cpu")" -v nc="$(median <"$TMP/$who.cpu")" -v w="$(csv_name "$who")" \
      'BEGIN { printf "ratio hroute/%s: %.2fx msgs/s, %.2fx CPU per message (medians of rounds)\n",
               w, h / n, (nc > 0 ? hc / nc : 0) }'
done


if ((IDLE > 0)); then
  for who in "${SERVERS[@]}"; do
    port=${PORT_OF[$who]} pid=${PID_OF[$who]}
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
    csv_row run=idle-ws server="$(csv_name "$who")" round=1 errors="$((IDLE - ${open:-0}))" \
      bytes_per_connection="$(awk -v b="$before" -v a="$after" -v n="$IDLE" 'BEGIN {
        printf "%.0f", (a - b) * 1024 / n }')"
  done
fi

echo
if [[ -n $PLOT_DIR ]]; then
  echo "charts:"
  caption="WebSocket echo: hroute $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'),"
  caption+=" ${COMPARE//,/, }; $CONNS connections x $DEPTH messages of $SIZE bytes in flight,"
  caption+=" $DURATION s per run, $ROUNDS round(s)"
  bash "$ROOT/bench/plot.sh" --caption "$caption" "$CSV" "$PLOT_DIR" | sed 's/^/  /'
fi
echo "rounds: $CSV ($(csv_rows) rows)"
