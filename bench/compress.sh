#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/compress.sh: response compression, hroute against nginx's gzip.
# Two bodies made for the run (the same bytes for both servers): a 10 KB
# JSON list and a 100 KB HTML page.  hroute serves them from memory
# (examples/hello.c --bodies DIR, hr_response_send) with --compress
# gzip:LEVEL; nginx serves the same files with "gzip on" at the same
# gzip_comp_level (bench/nginx_gzip.conf.in: open-file cache, one worker);
# both compress every response.  For each gzip level (1 and 6) and body,
# rounds alternate the two servers under wrk (Accept-Encoding: gzip), both
# pinned to the same server CPUs, wrk to others; printed: the median
# requests/s of each, their ratio (goal: hroute at least 1.5x nginx), the
# server CPU time per request (utime + stime of the process over the run),
# and the compressed size.  Then hroute alone with br (level 4) and zstd
# (level 3), which nginx 1.22 does not have here.  Last, where the time
# goes: the CPU per request the goal allows hroute (nginx's over 1.5),
# what of it hroute's compressor alone takes (bench_codec, bench/codec.c,
# which times nginx's zlib too) and the kernel, and what that leaves.
#
#   bench/compress.sh                      # 3 rounds of 3 s
#   bench/compress.sh --rounds 5 --duration 5s
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build/release"
DURATION=3s
ROUNDS=3
CONNECTIONS=16
SERVER_CPUS=0
CLIENT_CPUS=1
BUILD=1
PORT=18191 # hroute gzip 1, gzip 6, br, zstd; nginx gzip 1, gzip 6: PORT..PORT+5

usage() {
  cat <<USAGE
usage: bench/compress.sh [options]
  --duration D         each wrk run, wrk syntax (default $DURATION)
  --rounds N           alternating rounds (default $ROUNDS)
  --connections N      wrk connections (default $CONNECTIONS)
  --server-cpus LIST   CPUs for the servers, taskset syntax (default $SERVER_CPUS)
  --client-cpus LIST   CPUs for wrk (default $CLIENT_CPUS)
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
    --no-build) BUILD=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compress.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

for tool in wrk nginx curl taskset python3; do
  command -v "$tool" >/dev/null || "$ROOT/scripts/deps.sh" --bench
done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_build hello bench_codec
bench_workdir compress-bench

# The bodies: deterministic (seeded), realistic enough to compress as real
# ones do (words repeat, numbers do not).
DIR=$TMP/bodies
mkdir -p "$DIR" "$TMP/nginx"
python3 - "$DIR" <<'PY'
import json, random, sys
random.seed(7)
words = ("alpha beta gamma delta route invoker table server request response "
         "field value header body stream").split()
items = []
while True:
    i = len(items)
    item = {"id": i, "name": " ".join(random.choice(words) for _ in range(3)),
            "price": round(random.random() * 100, 2), "tags": random.sample(words, 3),
            "active": i % 3 == 0}
    if len(json.dumps(items + [item])) > 10240:
        break
    items.append(item)
open(sys.argv[1] + "/10k.json", "w").write(json.dumps(items))
html = ["<!doctype html><html><head><meta charset=utf-8><title>report</title></head>"
        "<body><h1>Report</h1><table>\n"]
i = 0
while sum(map(len, html)) < 100 * 1024 - 200:
    html.append('<tr class="row"><td>%d</td><td>%s</td><td><a href="/items/%d">%s</a></td>'
                '<td>%.2f</td></tr>\n' % (i, " ".join(random.choice(words) for _ in range(4)),
                                          i, random.choice(words), random.random() * 1000))
    i += 1
html.append("</table></body></html>\n")
open(sys.argv[1] + "/100k.html", "w").write("".join(html))
PY

nginx_conf "$ROOT/bench/nginx_gzip.conf.in" "$TMP/nginx/nginx.conf" \
  "PORT1=$((PORT + 4))" "PORT6=$((PORT + 5))" "ROOT=$DIR"


declare -A PID
start_hello() { # name port coding:level
  taskset -c "$SERVER_CPUS" "$BUILD_DIR/hello" --host 127.0.0.1 --port "$2" --bodies "$DIR" \
    --compress "$3" >"$TMP/hello-$1.log" 2>&1 &
  PID[$1]=$!
  PIDS+=("$!")
  wait_up "http://127.0.0.1:$2/bodies/10k.json"
}
start_hello h1 "$PORT" gzip:1
start_hello h6 "$((PORT + 1))" gzip:6
start_hello hbr "$((PORT + 2))" br:4
start_hello hzstd "$((PORT + 3))" zstd:3
taskset -c "$SERVER_CPUS" nginx -p "$TMP/nginx" -e "$TMP/nginx/error.log" \
  -c "$TMP/nginx/nginx.conf" 2>"$TMP/nginx/stderr.log" &
PID[nginx]=$!
PIDS+=("$!")
wait_up "http://127.0.0.1:$((PORT + 4))/bodies/10k.json"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sys_ticks() { awk '{print $15}' "/proc/$1/stat"; }

# One wrk run: prints "req/s cpu_us_per_request sys_us_per_request" (all
# the server's CPU, and the kernel's part of it).
run() { # pid port body coding
  local before after sbefore safter out reqs rps
  before=$(cpu_ticks "$1"); sbefore=$(sys_ticks "$1")
  out=$(taskset -c "$CLIENT_CPUS" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -H "Accept-Encoding: $4" \
    "http://127.0.0.1:$2/bodies/$3" 2>&1)
  after=$(cpu_ticks "$1"); safter=$(sys_ticks "$1")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  awk -v r="$rps" -v n="$reqs" -v t=$((after - before)) -v st=$((safter - sbefore)) \
    -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%s %.1f %.1f\n", r, (n > 0 ? t * 1e6 / hz / n : 0), (n > 0 ? st * 1e6 / hz / n : 0)}'
}

size_of() { # port body coding
  curl -s -H "Accept-Encoding: $3" "http://127.0.0.1:$1/bodies/$2" | wc -c
}

declare -A R C S
for ((round = 1; round <= ROUNDS; round++)); do
  for level in 1 6; do
    for body in 10k.json 100k.html; do
      hp=$([[ $level == 1 ]] && echo "$PORT" || echo $((PORT + 1)))
      np=$([[ $level == 1 ]] && echo $((PORT + 4)) || echo $((PORT + 5)))
      read -r h hc hs <<<"$(run "${PID[h$level]}" "$hp" "$body" gzip)"
      read -r n nc _ <<<"$(run "${PID[nginx]}" "$np" "$body" gzip)"
      R[h$level$body]+=" $h"; C[h$level$body]+=" $hc"; S[h$level$body]+=" $hs"
      R[n$level$body]+=" $n"; C[n$level$body]+=" $nc"
      echo "compress: round $round/$ROUNDS  gzip $level  $body  hroute $h req/s ($hc us/req)  nginx $n req/s ($nc us/req)"
    done
  done
  for c in br zstd; do
    for body in 10k.json 100k.html; do
      p=$([[ $c == br ]] && echo $((PORT + 2)) || echo $((PORT + 3)))
      read -r h hc _ <<<"$(run "${PID[h$c]}" "$p" "$body" "$c")"
      R[h$c$body]+=" $h"; C[h$c$body]+=" $hc"
      echo "compress: round $round/$ROUNDS  $c  $body  hroute $h req/s ($hc us/req)"
    done
  done
done

echo
printf '%-10s %-10s %12s %12s %7s %10s %10s %10s %10s\n' coding body hroute_rps nginx_rps ratio \
  h_us/req n_us/req h_bytes n_bytes
for level in 1 6; do
  for body in 10k.json 100k.html; do
    hp=$([[ $level == 1 ]] && echo "$PORT" || echo $((PORT + 1)))
    np=$([[ $level == 1 ]] && echo $((PORT + 4)) || echo $((PORT + 5)))
    h=$(median <<<"${R[h$level$body]}"); n=$(median <<<"${R[n$level$body]}")
    printf '%-10s %-10s %12.0f %12.0f %6.2fx %10.1f %10.1f %10s %10s\n' "gzip $level" "$body" "$h" "$n" \
      "$(awk -v a="$h" -v b="$n" 'BEGIN {print a / b}')" \
      "$(median <<<"${C[h$level$body]}")" "$(median <<<"${C[n$level$body]}")" \
      "$(size_of "$hp" "$body" gzip)" "$(size_of "$np" "$body" gzip)"
  done
done
for c in br zstd; do
  for body in 10k.json 100k.html; do
    p=$([[ $c == br ]] && echo $((PORT + 2)) || echo $((PORT + 3)))
    printf '%-10s %-10s %12.0f %12s %7s %10.1f %10s %10s %10s\n' "$([[ $c == br ]] && echo 'br 4' || echo 'zstd 3')" \
      "$body" "$(median <<<"${R[h$c$body]}")" - - "$(median <<<"${C[h$c$body]}")" - \
      "$(size_of "$p" "$body" "$c")" -
  done
done
echo "bodies: 10k.json $(wc -c <"$DIR/10k.json") bytes, 100k.html $(wc -c <"$DIR/100k.html") bytes;" \
  "$CONNECTIONS connections, $DURATION per run, $ROUNDS round(s), medians; goal: hroute >= 1.5x nginx at each gzip level"

# Where a request's time goes, against what the goal allows: nginx's CPU
# per request over 1.5 is hroute's budget; the compressor alone takes
# h_codec of it (bench/codec.c: hroute's whole-body gzip, and zlib as nginx
# sets it up, pinned as the servers were, warm caches: in the server it
# costs more), the kernel h_sys (the system time of hroute's process per
# request: the request read, the response sent); what is left is all
# hroute's own code may spend for the goal to be reachable.
echo
echo "the budget of the goal (nginx's CPU per request / 1.5), microseconds per request:"
codec=$(taskset -c "$SERVER_CPUS" "$BUILD_DIR/bench_codec" --levels 1,6 "$DIR/10k.json" "$DIR/100k.html")
printf '%-10s %-10s %8s %8s %8s %8s %8s\n' coding body budget h_codec h_sys left n_codec
for level in 1 6; do
  for body in 10k.json 100k.html; do
    line=$(grep "^codec gzip $level  $body " <<<"$codec")
    hz=$(awk '{print $6}' <<<"$line"); nz=$(awk '{print $11}' <<<"$line")
    budget=$(awk -v n="$(median <<<"${C[n$level$body]}")" 'BEGIN {print n / 1.5}')
    hs=$(median <<<"${S[h$level$body]}")
    printf '%-10s %-10s %8.1f %8.1f %8.1f %8.1f %8.1f\n' "gzip $level" "$body" "$budget" "$hz" "$hs" \
      "$(awk -v a="$budget" -v b="$hz" -v c="$hs" 'BEGIN {print a - b - c}')" "$nz"
  done
done
