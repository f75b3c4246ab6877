# SPDX-License-Identifier: MIT
#
# bench/lib.sh: what the side-by-side benchmark scripts (static.sh, ws.sh,
# proxy.sh, accept.sh) share.  Source it; it defines:
#   bench_build TARGET...  unless BUILD is 0, builds these targets of the
#                        Release tree $BUILD_DIR ($ROOT/build/release)
#   bench_workdir NAME   a temporary directory in $TMP, removed at exit, and
#                        the PIDS array of servers killed then
#   wait_port PORT       returns once 127.0.0.1:PORT accepts (5 s at most)
#   median               the median of the numbers on standard input (one
#                        per line or space-separated)
#   rss_kb PID           a process's VmRSS in KiB
#   wait_up URL          returns once URL answers 2xx (5 s at most)
#   nginx_conf IN OUT K=V...  renders nginx template IN into OUT: @K@ by
#                        V for each pair, @TMPDIR@ by $TMP/nginx and the
#                        line @TEMP_PATHS@ by the temp paths this nginx has

bench_build() {
  ((${BUILD:-1})) || return 0
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j "${HROUTE_JOBS:-2}" --target "$@" >/dev/null
}

bench_workdir() {
  TMP=$(mktemp -d "/tmp/hroute-$1.XXXXXX")
  PIDS=()
  trap bench_cleanup EXIT INT TERM
}

bench_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}

wait_port() {
  local i
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "${0##*/}: nothing listens on $1" >&2
  exit 1
}

median() {
  tr ' ' '\n' | grep . | sort -g |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

wait_up() {
  local i
  for ((i = 0; i < 100; i++)); do
    curl -fs -o /dev/null "$1" && return 0
    sleep 0.05
  done
  echo "${0##*/}: no answer from $1" >&2
  exit 1
}

nginx_conf() {
  local in=$1 out=$2 m temp='' subs=''
  shift 2
  mkdir -p "$TMP/nginx"
  for m in proxy fastcgi uwsgi scgi; do
    nginx -V 2>&1 | grep -q -- "--without-http_${m}_module" ||
      temp+="    ${m}_temp_path $TMP/nginx/${m}_temp;"$'\n'
  done
  for m in "TMPDIR=$TMP/nginx" "$@"; do subs+="${m%%=*}=${m#*=}"$'\n'; done
  awk -v temp="$temp" -v subs="$subs" '
    BEGIN { n = split(subs, kv, "\n"); for (i = 1; i < n; i++) { k = kv[i]; sub(/=.*/, "", k);
            v = kv[i]; sub(/^[^=]*=/, "", v); key[i] = "@" k "@"; val[i] = v } }
    $0 == "@TEMP_PATHS@" { printf "%s", temp; next }
    { for (i = 1; i < n; i++) gsub(key[i], val[i]); print }' "$in" >"$out"
}
