#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/static.sh (also `bench/run.sh --static ...`): static files, hroute
# (examples/hello.c --static DIR) against nginx serving the same directory
# (bench/nginx_static.conf.in: sendfile, tcp_nopush, open_file_cache), both
# pinned to the same server CPUs, wrk pinned to others.  Rounds alternate
# hroute and nginx; for each file (1 KiB and 1 MiB of random bytes) it
# prints the median requests/s of each and the ratio hroute / nginx.
# Then memory: the server's VmRSS before and after --big-requests GET
# requests of a 100 MiB file over one persistent connection (curl, body to
# /dev/null), for hroute and for nginx, so that "flat" can be read off.
# Each round's requests/s is a row of a CSV file (runs static1k and
# static1m; bench/csv.sh), bench/results/static.csv or --csv FILE, charted
# into DIR with --plot DIR (bench/plot.sh).
#
#   bench/static.sh                        # 3 rounds of 3 s, 10000 big requests
#   bench/static.sh --rounds 5 --duration 5s --big-requests 1000
#   bench/static.sh --big-requests 0 --plot /tmp/charts
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build/release"
DURATION=3s
ROUNDS=3
CONNECTIONS=16
SERVER_CPUS=0
CLIENT_CPUS=1
BIG_REQUESTS=10000
BUILD=1
HROUTE_PORT=18181
NGINX_PORT=18182
CSV=$ROOT/bench/results/static.csv
PLOT_DIR=

usage() {
  cat <<USAGE
usage: bench/static.sh [options]
  --duration D         each wrk run, wrk syntax (default $DURATION)
  --rounds N           alternating rounds (default $ROUNDS)
  --connections N      wrk connections (default $CONNECTIONS)
  --server-cpus LIST   CPUs for the servers, taskset syntax (default $SERVER_CPUS)
  --client-cpus LIST   CPUs for wrk and curl (default $CLIENT_CPUS)
  --big-requests N     requests of the 100 MiB file for the memory line, 0: skip
                       (default $BIG_REQUESTS)
  --csv FILE           a CSV row per round and server (default
                       bench/results/static.csv; columns: bench/csv.sh)
  --plot DIR           PNG charts of the CSV into DIR (bench/plot.sh, gnuplot)
  --no-build           use the existing build/release/hello
USAGE
}

while (($#)); do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --server-cpus) SERVER_CPUS=$2; shift 2 ;;
    --client-cpus) CLIENT_CPUS=$2; shift 2 ;;
    --big-requests) BIG_REQUESTS=$2; shift 2 ;;
    --csv) CSV=$2; shift 2 ;;
    --plot) PLOT_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --static) shift ;; # from bench/run.sh --static
    --compare) [[ $2 == nginx ]] || { echo "static.sh: --static compares with nginx only" >&2; exit 2; }
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "static.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

tools=(wrk nginx curl taskset)
[[ -z $PLOT_DIR ]] || tools+=(gnuplot)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || "$ROOT/scripts/deps.sh" --bench
done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_build hello
# shellcheck source=bench/csv.sh
. "$ROOT/bench/csv.sh"
bench_workdir static-bench


DIR=$TMP/www
mkdir -p "$DIR" "$TMP/nginx"
head -c 1024 /dev/urandom >"$DIR/1k.bin"
head -c $((1 << 20)) /dev/urandom >"$DIR/1m.bin"
((BIG_REQUESTS == 0)) || head -c $((100 << 20)) /dev/urandom >"$DIR/100m.bin"

nginx_conf "$ROOT/bench/nginx_static.conf.in" "$TMP/nginx/nginx.conf" \
  "PORT=$NGINX_PORT" "ROOT=$DIR"


start_hroute() {
  taskset -c "$SERVER_CPUS" "$BUILD_DIR/hello" --host 127.0.0.1 --port "$HROUTE_PORT" \
    --static "$DIR" >"$TMP/hello.log" 2>&1 &
  HROUTE_PID=$!
  PIDS+=("$HROUTE_PID")
  wait_up "http://127.0.0.1:$HROUTE_PORT/static/1k.bin"
}

start_nginx() {
  taskset -c "$SERVER_CPUS" nginx -p "$TMP/nginx" -e "$TMP/nginx/error.log" \
    -c "$TMP/nginx/nginx.conf" 2>"$TMP/nginx/stderr.log" &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  wait_up "http://127.0.0.1:$NGINX_PORT/static/1k.bin"
}

rate() { # port file
  taskset -c "$CLIENT_CPUS" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" \
    "http://127.0.0.1:$1/static/$2" 2>&1 | awk '/Requests\/sec/ {print $2}'
}



start_hroute
start_nginx
declare -A R
csv_open "$CSV"
for ((round = 1; round <= ROUNDS; round++)); do
  for f in 1k.bin 1m.bin; do
    h=$(rate "$HROUTE_PORT" "$f")
    n=$(rate "$NGINX_PORT" "$f")
    R[h_$f]+=" $h"
    R[n_$f]+=" $n"
    csv_row run="static${f%.bin}" server=hroute round="$round" requests_per_s="$h"
    csv_row run="static${f%.bin}" server=nginx round="$round" requests_per_s="$n"
    echo "static: round $round/$ROUNDS  $f  hroute $h req/s  nginx $n req/s"
  done
done

echo
printf '%-8s %14s %14s %8s\n' file hroute_req/s nginx_req/s ratio
for f in 1k.bin 1m.bin; do
  h=$(median <<<"${R[h_$f]}")
  n=$(median <<<"${R[n_$f]}")
  printf '%-8s %14.0f %14.0f %7.2fx\n' "$f" "$h" "$n" "$(awk -v a="$h" -v b="$n" 'BEGIN {print a / b}')"
done

if ((BIG_REQUESTS > 0)); then
  echo
  for s in hroute nginx; do
    if [[ $s == hroute ]]; then pid=$HROUTE_PID port=$HROUTE_PORT; else pid=$NGINX_PID port=$NGINX_PORT; fi
    before=$(rss_kb "$pid")
    start=$SECONDS
    taskset -c "$CLIENT_CPUS" curl -s -o /dev/null "http://127.0.0.1:$port/static/100m.bin?[1-$BIG_REQUESTS]"
    after=$(rss_kb "$pid")
    echo "memory: $s  VmRSS ${before} KiB -> ${after} KiB over $BIG_REQUESTS requests of a 100 MiB file ($((SECONDS - start)) s)"
  done
fi

echo
if [[ -n $PLOT_DIR ]]; then
  echo "charts:"
  caption="static files: hroute $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'),"
  caption+=" nginx; $CONNECTIONS connections, $DURATION per run, $ROUNDS round(s)"
  bash "$ROOT/bench/plot.sh" --caption "$caption" "$CSV" "$PLOT_DIR" | sed 's/^/  /'
fi
echo "rounds: $CSV ($(csv_rows) rows)"
