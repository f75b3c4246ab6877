#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/run.sh: the bundled wrk benchmark.  Builds examples/hello.c in
# Release mode, serves GET /hello/:name from it on 127.0.0.1 with the server
# pinned to its own CPUs and wrk pinned to others, and measures two runs:
# plain persistent connections ("keepalive") and HTTP/1.1 pipelining of DEPTH
# requests per write ("pipelineDEPTH", bench/pipeline.lua).  For each run it
# reports requests/s, latency p50 and p99, server CPU time per request (from
# /proc/PID/stat) and, for hroute, heap allocations per request (from the
# server's GET /metrics counters, Prometheus text).  --compare takes a comma-separated
# list of peers that serve the same response on the same CPUs, measured in
# alternating rounds with hroute: nginx (one worker per server thread,
# bench/nginx.conf.in), h2o (libh2o's evloop, bench/peers/h2o_hello.c) and
# floor (an epoll server that counts request terminators and writes canned
# responses without parsing, bench/peers/floor.c: the physical floor) and
# uws (uWebSockets, bench/peers/uws_hello.cpp, built with g++ against the
# git directories given by --uws-git and --usockets-git, fetched copies of
# github:uNetworking/uWebSockets and uSockets that stay outside this tree;
# one thread).  The
# peers are built with -O2 and their packages installed when missing.  The
# report gives medians and, per peer, hroute's ratio to it for requests/s
# and CPU time per request.
# A third hroute run, "keepalive+churn", repeats the keep-alive run right
# after it against a second hello started with --churn N (a thread in it
# replaces routes N times per second, the served route among them) and
# prints its throughput relative to the plain keep-alive run (the median of
# the rounds' ratios).
# Last, the "idle" line: server memory per idle persistent connection.  A
# fresh server of each kind (hroute, and nginx and h2o when compared) is
# started, its VmRSS read, then bench/idle_client.c opens --idle-conns
# connections (5000) and makes one request on each, keeping them all open;
# once the RSS is steady it is read again, and (after - before) / connections
# is printed.  A connection that got no full response or was closed before
# the second reading is an error.  Everything it starts is stopped when it
# exits, also when interrupted.
#
# --tls does it all over HTTPS: run.sh makes a self-signed ECDSA P-256
# certificate (CN localhost, SAN DNS:localhost and IP:127.0.0.1) in its temp
# dir with the openssl CLI, starts hello with --tls-cert/--tls-key and, with
# --compare nginx, nginx with the same certificate (ssl_protocols TLSv1.2
# TLSv1.3, hroute's ECDHE+AEAD cipher list, session tickets on, one worker);
# wrk runs the keep-alive, churn and pipelined runs over https (TLS 1.3, one
# handshake per connection).  h2o and floor have no TLS here and are
# skipped.  Then come the handshake runs (bench/tls_handshakes.c, -O2):
# for each of --handshakes (TLS 1.3 full, 1.2 full, 1.3 resumed, 1.2
# resumed; resumed offers the session ticket of the connection before),
# --hs-clients processes pinned to --client-cpus make one connection, one
# full TLS handshake, one "Connection: close" request per connection for
# --duration; each prints handshakes/s, the server's CPU µs per handshake
# and how many handshakes did resume (SSL_session_reused), with the ratio
# hroute/nginx.  The idle line becomes "idle-tls": the same measurement over
# TLS connections (bench/idle_client --tls).
#
# Every measured round is also a row of a CSV file (bench/csv.sh has the
# columns), written as it is measured: one per server, run and round, the
# handshake runs ("tls1.3", ...) and the idle line (one round) included;
# bench/results/rounds.csv unless --csv FILE names another.  --plot DIR
# draws PNG charts of it into DIR after the runs (bench/plot.sh, gnuplot,
# installed when missing): requests/s and CPU µs per request by server and
# round, latency p50 and p99 by server, memory per idle connection by
# server.
#
# --h2 does it over HTTP/2 with h2load (nghttp2-client) instead of wrk
# (bench/h2.sh holds that half): for each transport of --h2-transports,
# "tls" (h2 by ALPN, the --tls certificate; runs h2-mN) and "h2c"
# (cleartext with prior knowledge, hello --h2c; runs h2c-mN), hello and the
# compared peers (nginx with "listen ... http2" and the same certificate,
# h2o_hello, which speaks both) are started, checked to answer over HTTP/2,
# warmed up and measured round by round in turn with `h2load -n
# --h2-requests -c --connections -m N` for each N of --h2-streams (200000
# requests, 10 and 1 streams by default), h2load pinned to --client-cpus.
# Same table, ratios hroute/peer and CSV; p50 and p99 from h2load's
# per-request log.  The idle lines become idle-h2 and idle-h2c
# (bench/idle_client --h2).  floor, the churn run and the handshake runs
# are HTTP/1.1 only and left out; --h2 excludes --tls.
#
#   bench/run.sh                                   # hroute alone, defaults
#   bench/run.sh --duration 3s --compare nginx,h2o,floor --rounds 3
#   bench/run.sh --tls --duration 3s --rounds 3 --compare nginx
#   bench/run.sh --h2 --compare nginx,h2o          # HTTP/2: h2 over TLS, h2c
#   bench/run.sh --duration 2s --rounds 3 --compare nginx --plot docs/img
#   bench/run.sh --static --compare nginx        # files: bench/static.sh
#   bench/run.sh --websocket                     # WebSocket: bench/ws.sh
set -euo pipefail

# --static is its own benchmark (files against nginx): bench/static.sh.
for arg in "$@"; do
  [[ $arg == --static ]] && exec "$(dirname "${BASH_SOURCE[0]}")/static.sh" "$@"
  [[ $arg == --websocket ]] && exec "$(dirname "${BASH_SOURCE[0]}")/ws.sh" "$@"
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR="$ROOT/bench"
BUILD_DIR="$ROOT/build/release"
PEER_DIR="$BUILD_DIR/bench-peers"
# shellcheck source=bench/csv.sh
. "$BENCH_DIR/csv.sh"
# shellcheck source=bench/h2.sh
. "$BENCH_DIR/h2.sh"

# ---- options and their defaults -------------------------------------------

DURATION=10s
CONNECTIONS=100
WRK_THREADS=1
SERVER_THREADS=1
URL_PATH=/hello/John
PORT=8080
SERVER_CPUS=      # default set after parsing: 0
CLIENT_CPUS=      # default set after parsing: 1 (0 on a one-core machine)
DEPTH=16
ROUNDS=3
COMPARE=none      # comma-separated peers: nginx, h2o, floor, uws (or none)
UWS_GIT=          # --uws-git: a git directory of uWebSockets (for uws)
USOCKETS_GIT=     # --usockets-git: a git directory of uSockets (for uws)
PEERS=()          # COMPARE as a list, in the given order
IDLE_CONNS=5000   # connections of the idle measurement; 0: none
BUILD=1
ONLY=             # hroute or a peer: benchmark one server only (script testing)
WARMUP=1s         # one unmeasured keep-alive run per server before round 1
CHURN=1000        # route replacements/s in the keepalive+churn run; 0: no such run
TLS=0             # --tls: everything over HTTPS, plus the handshake runs
HANDSHAKES=1.3,1.2,1.3-resume,1.2-resume # --handshakes: modes of the handshake runs
HS_MODES=()       # HANDSHAKES as a list (empty: none)
HS_CLIENTS=2      # --hs-clients: tls_handshakes processes
SCHEME=http       # https with --tls
CURL_TLS=()       # curl's arguments for the certificate, with --tls
IDLE_NAME=idle    # the idle line's name: idle-tls with --tls
CSV_PATH=$ROOT/bench/results/rounds.csv # --csv: one row per measured round
PLOT_DIR=         # --plot: draw the charts of CSV_PATH into this directory
H2=0              # --h2: over HTTP/2 with h2load (bench/h2.sh)
H2_REQUESTS=200000 # --h2-requests: requests per h2load run
H2_STREAMS=10,1   # --h2-streams: h2load -m values, one run each
H2_STREAM_LIST=() # H2_STREAMS as a list
H2_TRANSPORTS=tls,h2c # --h2-transports: h2 over TLS, cleartext h2c
H2_TRANSPORT_LIST=()  # H2_TRANSPORTS as a list
H2_RUN=           # the current transport's run prefix: h2 (TLS) or h2c
NO_HROUTE=0       # --h2 with a hello that speaks no HTTP/2: peers only

# ---- state shared with the cleanup trap -----------------------------------

TMP=
STOP_STATUS=0
HELLO_PID=
NGINX_PID=
H2O_PID=
FLOOR_PID=
UWS_PID=
WRK_PID=
IDLE_PID=         # bench/idle_client, during an idle measurement only
IDLE_FAILED=0     # an idle measurement failed: exit status 1 after the report
LAST_PORT=        # the last port handed out (next_port)
CHURN_PID=        # the hello started with --churn, during its run only
HS_PID=           # bench/tls_handshakes, during a handshake run only
HS_SECONDS=       # DURATION in seconds, for tls_handshakes

usage() {
  cat <<EOF
usage: bench/run.sh [options]

Benchmarks examples/hello (GET /hello/:name) with wrk over 127.0.0.1.

  --duration D         length of each measured run, wrk syntax (default $DURATION)
  --connections N      open connections (default $CONNECTIONS)
  --threads N          wrk threads (default $WRK_THREADS)
  --server-threads N   hello worker threads / nginx workers / h2o and floor
                       processes (default $SERVER_THREADS)
  --path P             request path (default $URL_PATH)
  --port N             first port to try; a busy port is skipped (default $PORT)
  --server-cpus LIST   CPUs for the server, taskset syntax (default 0)
  --client-cpus LIST   CPUs for wrk (default 1; 0 on a one-core machine)
  --depth N            requests per write in the pipelined run (default $DEPTH)
  --rounds N           measured rounds per server and run; the table shows
                       medians (default $ROUNDS)
  --compare LIST       also benchmark these peers, comma-separated, each
                       alternating with hroute round by round (default $COMPARE):
                         nginx  nginx-light, one worker, access log off
                         h2o    libh2o evloop (bench/peers/h2o_hello.c)
                         floor  epoll, no parsing, canned responses
                                (bench/peers/floor.c)
                         uws    uWebSockets, one thread
                                (bench/peers/uws_hello.cpp; needs
                                --uws-git and --usockets-git)
                       and report hroute's ratio to each
  --only NAME          benchmark one server only: hroute or a peer (a peer
                       is added to --compare)
  --idle-conns N       idle keep-alive connections for the idle line, to
                       hroute and to nginx and h2o when compared; 0 skips
                       it (default $IDLE_CONNS; hello closes connections
                       beyond its max_connections, 10000)
  --churn N            route replacements per second in the keepalive+churn
                       run (hello --churn N); 0 skips that run (default $CHURN)
  --websocket          WebSocket echo and idle memory against node-ws instead
                       (bench/ws.sh, which takes its own options)
  --static             static files against nginx instead (bench/static.sh,
                       which takes its own options; see its --help)
  --tls                everything over HTTPS with a self-signed ECDSA P-256
                       certificate made for the run: hello --tls-cert/--tls-key,
                       nginx with the same certificate (TLS 1.2 and 1.3,
                       ECDHE+AEAD ciphers, session tickets on); wrk over
                       https; the handshake runs; the idle line over TLS
                       ("idle-tls").  h2o and floor are skipped (no TLS here)
  --handshakes LIST    with --tls: handshake runs, comma-separated, from
                       1.3 (TLS 1.3 full), 1.2 (TLS 1.2 full), 1.3-resume and
                       1.2-resume (session ticket of the connection before),
                       or none (default $HANDSHAKES)
  --hs-clients N       with --tls: bench/tls_handshakes processes, pinned to
                       --client-cpus, one connection at a time each
                       (default $HS_CLIENTS)
  --h2                 over HTTP/2 with h2load instead of wrk (bench/h2.sh):
                       h2 over TLS (self-signed ECDSA P-256, ALPN) and h2c
                       (hello --h2c, prior knowledge); nginx ("listen ...
                       http2") and h2o can be compared; the idle lines
                       idle-h2 and idle-h2c.  --duration, --depth, --churn,
                       --tls and the handshake runs do not apply
  --h2-requests N      with --h2: requests per h2load run, h2load -n
                       (default $H2_REQUESTS)
  --h2-streams LIST    with --h2: streams per connection, h2load -m, one run
                       each, comma-separated (default $H2_STREAMS)
  --h2-transports LIST with --h2: tls, h2c or both (default $H2_TRANSPORTS)
  --uws-git DIR        git directory of uWebSockets for --compare uws (for
                       example a mirror made by the library's fetch); its
                       HEAD's src/ is compiled, nothing is copied here
  --usockets-git DIR   the same for uSockets
  --csv FILE           write every measured round as a CSV row to FILE
                       (default bench/results/rounds.csv; columns: see
                       bench/csv.sh); its path is printed at the end
  --plot DIR           after the runs, draw PNG charts of the CSV into DIR
                       (bench/plot.sh; gnuplot-nox is installed if missing):
                       requests_per_s.png, cpu_us_per_request.png,
                       latency.png, idle_memory.png
  --no-build           use the existing build/release/hello and
                       build/release/bench-peers/*
  --help               show this text

Latency p50/p99: for keepalive, wrk's Latency Distribution; for the
pipelined run, per write (until all DEPTH responses of a write are in), from
the measured samples without wrk's coordinated-omission correction, which
wrk gets wrong for pipelining (see bench/pipeline.lua).

Ratios: hroute's median divided by the peer's, for req/s (above 1: hroute
is faster) and cpu_us/req (below 1: hroute spends less).  The idle line:
bytes of server RSS per connection, (RSS with N idle connections - RSS
before) / N, each server started afresh for it.

Handshake runs (--tls): a new TCP connection per request: TLS handshake
(SNI localhost, ALPN http/1.1, certificate verified), one GET with
"Connection: close", the whole response, close_notify both ways.  Per
server and mode: handshakes/s, server CPU µs per handshake (its CPU time
during the run / handshakes), server CPU use in % of one CPU (near 100:
the server is the bottleneck; well below: the clients are, and cpu_us/hs
is the figure to compare), how many handshakes resumed, and the growth of
the server's RSS over the run.  Medians over the rounds; the ratio line
gives hroute/nginx for both.
EOF
}

die() {
  echo "bench: $*" >&2
  exit 1
}

note() {
  echo "bench: $*" >&2
}

# Fails unless $2 is a whole number >= $3.
check_int() {
  if ! [[ $2 =~ ^[0-9]{1,9}$ ]] || ((10#$2 < $3)); then
    die "$1 must be a whole number >= $3 (got '$2')"
  fi
}

# True when directory $1 is there (made if need be) and writable.
writable_dir() {
  mkdir -p "$1" 2>/dev/null || return 1
  [[ -w $1 ]]
}

parse_args() {
  local opt value
  while (($# > 0)); do
    opt=$1
    value=
    case $opt in
      --help | -h) usage; exit 0 ;;
      --no-build) BUILD=0; shift; continue ;;
      --tls) TLS=1; shift; continue ;;
      --h2) H2=1; shift; continue ;;
      --*=*) value=${opt#*=}; opt=${opt%%=*}; shift ;;
      --duration | --connections | --threads | --server-threads | --path | --port | \
        --server-cpus | --client-cpus | --depth | --rounds | --compare | --only | --churn | \
        --idle-conns | --handshakes | --hs-clients | --csv | --plot | --h2-requests | \
        --h2-streams | --h2-transports | --uws-git | --usockets-git)
        (($# >= 2)) || { usage >&2; echo "bench: $opt needs a value" >&2; exit 2; }
        value=$2; shift 2 ;;
      *) usage >&2; echo "bench: unknown argument '$opt'" >&2; exit 2 ;;
    esac
    case $opt in
      --duration) DURATION=$value ;;
      --connections) CONNECTIONS=$value ;;
      --threads) WRK_THREADS=$value ;;
      --server-threads) SERVER_THREADS=$value ;;
      --path) URL_PATH=$value ;;
      --port) PORT=$value ;;
      --server-cpus) SERVER_CPUS=$value ;;
      --client-cpus) CLIENT_CPUS=$value ;;
      --depth) DEPTH=$value ;;
      --rounds) ROUNDS=$value ;;
      --compare) COMPARE=$value ;;
      --only) ONLY=$value ;;
      --churn) CHURN=$value ;;
      --idle-conns) IDLE_CONNS=$value ;;
      --handshakes) HANDSHAKES=$value ;;
      --hs-clients) HS_CLIENTS=$value ;;
      --csv) CSV_PATH=$value ;;
      --plot) PLOT_DIR=$value ;;
      --h2-requests) H2_REQUESTS=$value ;;
      --h2-streams) H2_STREAMS=$value ;;
      --h2-transports) H2_TRANSPORTS=$value ;;
      --uws-git) UWS_GIT=$value ;;
      --usockets-git) USOCKETS_GIT=$value ;;
      *) usage >&2; echo "bench: unknown option '$opt'" >&2; exit 2 ;;
    esac
  done

  [[ $DURATION =~ ^[0-9]+[smh]?$ ]] || die "--duration must look like 10s, 2m or 30 (got '$DURATION')"
  check_int --connections "$CONNECTIONS" 1
  check_int --threads "$WRK_THREADS" 1
  ((CONNECTIONS >= WRK_THREADS)) || die "--connections must be >= --threads"
  check_int --server-threads "$SERVER_THREADS" 1
  ((SERVER_THREADS <= 256)) || die "--server-threads must be <= 256"
  check_int --port "$PORT" 1
  ((PORT <= 65534)) || die "--port must be <= 65534"
  check_int --depth "$DEPTH" 1
  check_int --rounds "$ROUNDS" 1
  check_int --churn "$CHURN" 0
  ((10#$CHURN <= 100000)) || die "--churn must be <= 100000 (hello's limit)"
  CHURN=$((10#$CHURN))
  [[ $URL_PATH == /* && $URL_PATH != *[[:space:]]* ]] || die "--path must start with / and have no spaces"
  check_int --idle-conns "$IDLE_CONNS" 0
  IDLE_CONNS=$((10#$IDLE_CONNS))
  ((IDLE_CONNS <= 100000)) || die "--idle-conns must be <= 100000"
  check_int --hs-clients "$HS_CLIENTS" 1
  HS_CLIENTS=$((10#$HS_CLIENTS))
  ((HS_CLIENTS <= 64)) || die "--hs-clients must be <= 64"
  [[ -n $CSV_PATH && $CSV_PATH != */ ]] || die "--csv needs a file name"
  [[ ! -d $CSV_PATH ]] || die "--csv: $CSV_PATH is a directory"
  writable_dir "$(dirname "$CSV_PATH")" || die "--csv: cannot write into $(dirname "$CSV_PATH")"
  if [[ -n $PLOT_DIR ]]; then
    writable_dir "$PLOT_DIR" || die "--plot: cannot write into $PLOT_DIR"
  fi
  parse_handshakes
  parse_compare
  if ((H2)); then h2_parse_args; fi
  if ((TLS)); then
    SCHEME=https
    IDLE_NAME=idle-tls
    local p kept=()
    for p in "${PEERS[@]}"; do
      if [[ $p == nginx ]]; then kept+=("$p"); else note "--tls: $p has no TLS here: skipped"; fi
    done
    PEERS=("${kept[@]}")
  fi
  case $ONLY in
    '' | hroute) ;;
    nginx) in_peers "$ONLY" || PEERS+=("$ONLY") ;;
    h2o | floor | uws)
      ((TLS == 0)) || die "--tls: $ONLY has no TLS here (only nginx can be compared)"
      in_peers "$ONLY" || PEERS+=("$ONLY") ;;
    *) die "--only must be hroute, nginx, h2o, floor or uws" ;;
  esac

  if in_peers uws && ((SERVER_THREADS > 1)); then
    die "--compare uws: uws_hello runs one thread (--server-threads 1)"
  fi
  if [[ -z $SERVER_CPUS ]]; then SERVER_CPUS=0; fi
  if [[ -z $CLIENT_CPUS ]]; then
    if (($(nproc) > 1)); then CLIENT_CPUS=1; else CLIENT_CPUS=0; fi
  fi
  [[ $SERVER_CPUS =~ ^[0-9,-]+$ ]] || die "--server-cpus must be a CPU list such as 0 or 0-1"
  [[ $CLIENT_CPUS =~ ^[0-9,-]+$ ]] || die "--client-cpus must be a CPU list such as 1 or 2-3"
  taskset -c "$SERVER_CPUS" true 2>/dev/null || die "cannot pin to --server-cpus $SERVER_CPUS"
  taskset -c "$CLIENT_CPUS" true 2>/dev/null || die "cannot pin to --client-cpus $CLIENT_CPUS"
}

# Sets HS_MODES from HANDSHAKES: known modes, each once, "none" alone.
parse_handshakes() {
  local list m seen=' '
  HS_MODES=()
  [[ $HANDSHAKES == none ]] && return 0
  IFS=, read -r -a list <<<"$HANDSHAKES"
  ((${#list[@]} > 0)) || die "--handshakes needs 1.3, 1.2, 1.3-resume, 1.2-resume or none"
  for m in "${list[@]}"; do
    case $m in
      1.3 | 1.2 | 1.3-resume | 1.2-resume) ;;
      *) die "--handshakes: unknown mode '$m' (1.3, 1.2, 1.3-resume, 1.2-resume or none)" ;;
    esac
    [[ $seen != *" $m "* ]] || die "--handshakes names $m twice"
    seen+="$m "
    HS_MODES+=("$m")
  done
}

# True when the handshake runs are measured.
want_handshakes() { ((TLS && ${#HS_MODES[@]} > 0)); }

# Sets PEERS from COMPARE: known names, each once, "none" alone.
parse_compare() {
  local list name
  PEERS=()
  [[ $COMPARE == none ]] && return 0
  IFS=, read -r -a list <<<"$COMPARE"
  ((${#list[@]} > 0)) || die "--compare needs nginx, h2o, floor, uws (comma-separated) or none"
  for name in "${list[@]}"; do
    case $name in
      nginx | h2o | floor | uws) ;;
      none) die "--compare none cannot be combined with peers" ;;
      *) die "--compare: unknown peer '$name' (nginx, h2o, floor, uws or none)" ;;
    esac
    if in_peers "$name"; then die "--compare names $name twice"; fi
    PEERS+=("$name")
  done
}

# True when $1 is in PEERS.
in_peers() {
  local p
  for p in "${PEERS[@]}"; do if [[ $p == "$1" ]]; then return 0; fi; done
  return 1
}

want_hroute() { ((NO_HROUTE == 0)) && [[ -z $ONLY || $ONLY == hroute ]]; }
# True when peer $1 is benchmarked (in PEERS, and not excluded by --only).
want_peer() { [[ -z $ONLY || $ONLY == "$1" ]] && in_peers "$1"; }
want_nginx() { want_peer nginx; }
# True when the idle line is measured (for hroute, nginx or h2o).
want_idle() { ((IDLE_CONNS > 0)) && { want_hroute || want_peer nginx || want_peer h2o; }; }
# The benchmarked peers, one per line, in --compare order.
peers() {
  local p
  for p in "${PEERS[@]}"; do if want_peer "$p"; then echo "$p"; fi; done
}

# ---- processes ------------------------------------------------------------

# Sends signal $2 to our child $1, waits up to $3 seconds for it to exit,
# then kills it.  Sets STOP_STATUS to the child's exit status ("killed" if it
# had to be killed).  No-op for an empty pid.  (Not meant for $(...): a
# subshell cannot wait for the script's children.)
stop_process() {
  local pid=$1 sig=$2 timeout=$3 i
  STOP_STATUS=0
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -s "$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -s KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      STOP_STATUS=killed
      return 0
    fi
  fi
  wait "$pid" 2>/dev/null || STOP_STATUS=$?
}

# The EXIT trap: stops whatever is still running and removes the temp dir.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  set +e # clean up as much as possible, whatever fails
  stop_process "$WRK_PID" INT 2
  stop_process "$IDLE_PID" TERM 2
  stop_process "$HS_PID" TERM 2
  stop_process "$HELLO_PID" TERM 7
  stop_process "$CHURN_PID" TERM 7
  stop_process "$NGINX_PID" TERM 5
  stop_process "$H2O_PID" TERM 2
  stop_process "$FLOOR_PID" TERM 2
  stop_process "$UWS_PID" TERM 2
  if [[ -n $TMP && -d $TMP ]]; then rm -rf "$TMP"; fi
  exit "$status"
}

# True when something listens on TCP port $1 of any local address.
port_in_use() {
  if command -v ss >/dev/null 2>&1; then
    [[ -n $(ss -Htln "sport = :$1" 2>/dev/null) ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

# Prints the first free port from $1 on, skipping $2 (an empty $2 skips none).
pick_port() {
  local port=$1 skip=${2:-}
  while [[ $port == "$skip" ]] || port_in_use "$port"; do
    port=$((port + 1))
    ((port <= 65535)) || die "no free port from $1 on"
  done
  echo "$port"
}

# Sets variable $1 to the first free port after the last one handed out
# (from --port on) for server $2, and notes when it had to skip busy ones.
next_port() {
  local want=$((LAST_PORT + 1)) port
  port=$(pick_port "$want")
  ((port == want)) || note "port $want is busy: $2 uses $port"
  LAST_PORT=$port
  printf -v "$1" '%s' "$port"
}

# Waits until URL $3 answers 2xx, for at most 10 s, while process $2 (named
# $1, log file $4) is alive.
wait_ready() {
  local name=$1 pid=$2 url=$3 log=$4 i
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$log" >&2 || true
      die "$name exited during start-up"
    fi
    if curl "${CURL_TLS[@]}" -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  tail -n 20 "$log" >&2 || true
  die "$name did not answer $url within 10 s"
}

# Checks that URL $2 of server $1 answers 200 with the expected body (for
# /hello/NAME paths: exactly "Hello, NAME"); keeps the body in $TMP/$1.body.
check_response() {
  local name=$1 url=$2 code
  code=$(curl "${CURL_TLS[@]}" -sS --max-time 5 -o "$TMP/$name.body" -w '%{http_code}' "$url") ||
    die "$name: request to $url failed"
  [[ $code == 200 ]] || die "$name: GET $URL_PATH answered $code, expected 200"
  if [[ $URL_PATH =~ ^/hello/([^/?#]+)$ ]]; then
    printf 'Hello, %s' "${BASH_REMATCH[1]}" >"$TMP/expected.body"
    cmp -s "$TMP/expected.body" "$TMP/$name.body" ||
      die "$name: GET $URL_PATH answered '$(head -c 200 "$TMP/$name.body")'," \
        "expected '$(cat "$TMP/expected.body")'"
  fi
}

# Prints the CPU time (utime + stime, in clock ticks) of process $1 and its
# direct children (nginx workers under a master).  Threads are included in a
# process's own figures.
cpu_ticks() {
  local pid=$1 pids p
  pids=$pid
  if ((SERVER_THREADS > 1)) && command -v ps >/dev/null 2>&1; then
    pids="$pid $(ps -o pid= --ppid "$pid" 2>/dev/null || true)"
  fi
  for p in $pids; do cat "/proc/$p/stat" 2>/dev/null || true; done |
    awk '{ sub(/^.*\) /, "")     # drop "pid (comm) ": comm may hold spaces
           total += $12 + $13 }  # utime, stime (fields 14 and 15 of stat)
         END { print total + 0 }'
}

# Prints "REQUESTS ALLOCATIONS" from the Prometheus metrics of the hello on
# port $1 (default: the main one): hroute_requests_total and
# hroute_allocations_total.
hello_counters() {
  curl "${CURL_TLS[@]}" -fsS --max-time 5 "$SCHEME://127.0.0.1:${1:-$HELLO_PORT}/metrics" |
    awk '$1 == "hroute_requests_total" { r = $2 }
         $1 == "hroute_allocations_total" { a = $2 }
         END { if (r == "" || a == "") exit 1; print r, a }' ||
    die "hello: cannot read GET /metrics"
}

# ---- servers --------------------------------------------------------------

ensure_deps() {
  local tools=(wrk curl taskset) t missing=()
  want_nginx && tools+=(nginx)
  want_hroute && ((BUILD)) && tools+=(cmake)
  if ((BUILD)) && { want_peer h2o || want_peer floor || want_idle || want_handshakes; }; then
    tools+=(cc)
  fi
  ((TLS || H2)) && tools+=(openssl)
  ((H2)) && tools+=(h2load)
  if [[ -x $ROOT/scripts/deps.sh ]] || [[ -f $ROOT/scripts/deps.sh ]]; then
    bash "$ROOT/scripts/deps.sh" --bench
  fi
  if want_peer h2o; then ensure_packages libh2o-evloop-dev; fi
  if [[ -n $PLOT_DIR ]]; then
    command -v gnuplot >/dev/null 2>&1 || ensure_packages gnuplot-nox
    tools+=(gnuplot)
  fi
  for t in "${tools[@]}"; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  ((${#missing[@]} == 0)) || die "missing tools: ${missing[*]} (run scripts/deps.sh --bench)"
}

# Installs those of the Debian packages $@ that are missing, with apt-get
# as root or through sudo (as scripts/deps.sh does).
ensure_packages() {
  local pkg missing=() as_root=()
  for pkg in "$@"; do
    [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true) == "install ok installed" ]] ||
      missing+=("$pkg")
  done
  ((${#missing[@]} > 0)) || return 0
  command -v apt-get >/dev/null 2>&1 || die "missing packages: ${missing[*]} (no apt-get here)"
  if (($(id -u) != 0)); then
    command -v sudo >/dev/null 2>&1 || die "missing packages: ${missing[*]}; install them as root"
    as_root=(sudo)
  fi
  note "installing ${missing[*]} ..."
  { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends "${missing[@]}"; } >"$TMP/apt.log" 2>&1 ||
    die "cannot install ${missing[*]}: $(tail -n 5 "$TMP/apt.log")"
}

# Builds uws_hello into $PEER_DIR: the HEAD of --usockets-git (its C
# sources, epoll, no TLS) and of --uws-git (headers, C++20, no zlib) are
# unpacked under $TMP and compiled with -O2, as uWebSockets' own Makefile
# does; nothing of them is kept.
build_uws() {
  local d=$TMP/uws f objs=()
  [[ -n $UWS_GIT && -n $USOCKETS_GIT ]] ||
    die "--compare uws needs --uws-git DIR and --usockets-git DIR (git directories of uWebSockets and uSockets)"
  command -v g++ >/dev/null 2>&1 || die "--compare uws needs g++"
  mkdir -p "$d/uws" "$d/us" "$d/obj"
  git --git-dir="$UWS_GIT" archive HEAD src | tar -x -C "$d/uws" ||
    die "cannot read uWebSockets from $UWS_GIT"
  git --git-dir="$USOCKETS_GIT" archive HEAD src | tar -x -C "$d/us" ||
    die "cannot read uSockets from $USOCKETS_GIT"
  for f in bsd context loop socket udp eventing/epoll_kqueue crypto/openssl; do
    "${CC:-cc}" -O2 -DLIBUS_NO_SSL -I"$d/us/src" -c "$d/us/src/$f.c" -o "$d/obj/${f##*/}.o" \
      >>"$TMP/build.uws_hello.log" 2>&1 || { tail -n 20 "$TMP/build.uws_hello.log" >&2; die "building uSockets failed"; }
    objs+=("$d/obj/${f##*/}.o")
  done
  "${CXX:-g++}" -O2 -std=c++20 -DLIBUS_NO_SSL -DUWS_NO_ZLIB -I"$d/us/src" -I"$d/uws/src" \
    -o "$PEER_DIR/uws_hello" "$BENCH_DIR/peers/uws_hello.cpp" "${objs[@]}" \
    >>"$TMP/build.uws_hello.log" 2>&1 || { tail -n 20 "$TMP/build.uws_hello.log" >&2; die "building bench/peers/uws_hello.cpp failed"; }
}

# Builds, with -O2, what the peers, the idle measurement and the handshake
# runs need into $PEER_DIR: floor, h2o_hello, idle_client, tls_handshakes
# (or, with --no-build, checks that they are there).
build_peers() {
  local name src flags targets=()
  want_peer floor && targets+=(floor)
  want_peer h2o && targets+=(h2o_hello)
  want_peer uws && targets+=(uws_hello)
  want_idle && targets+=(idle_client)
  want_handshakes && targets+=(tls_handshakes)
  ((${#targets[@]} > 0)) || return 0
  mkdir -p "$PEER_DIR"
  for name in "${targets[@]}"; do
    if ((BUILD)) && [[ $name == uws_hello ]]; then
      build_uws
    elif ((BUILD)); then
      src=$BENCH_DIR/peers/$name.c flags=()
      if [[ $name == idle_client || $name == tls_handshakes ]]; then
        src=$BENCH_DIR/$name.c
        # shellcheck disable=SC2207 # word splitting wanted
        flags=($(pkg-config --cflags --libs libssl libcrypto 2>/dev/null || echo -lssl -lcrypto))
      fi
      if [[ $name == idle_client ]]; then # its --h2
        # shellcheck disable=SC2207 # word splitting wanted
        flags+=($(pkg-config --cflags --libs libnghttp2 2>/dev/null || echo -lnghttp2))
      fi
      if [[ $name == h2o_hello ]]; then # its --tls calls OpenSSL too
        # shellcheck disable=SC2207 # word splitting wanted
        flags=($(pkg-config --cflags --libs libh2o-evloop libssl libcrypto 2>/dev/null ||
                 echo -lh2o-evloop -lssl -lcrypto))
      fi
      "${CC:-cc}" -O2 -Wall -Wextra -o "$PEER_DIR/$name" "$src" "${flags[@]}" \
        >"$TMP/build.$name.log" 2>&1 || {
        tail -n 20 "$TMP/build.$name.log" >&2
        die "building ${src#"$ROOT"/} failed"
      }
    fi
    [[ -x $PEER_DIR/$name ]] || die "no $PEER_DIR/$name (drop --no-build to build it)"
  done
}

build_hello() {
  local candidate
  if ((BUILD)); then
    note "building hello (Release) in ${BUILD_DIR#"$ROOT"/} ..."
    if ! { cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DHROUTE_BUILD_TESTS=OFF &&
      cmake --build "$BUILD_DIR" -j "${HROUTE_JOBS:-2}" --target hello; } >"$TMP/build.log" 2>&1; then
      tail -n 40 "$TMP/build.log" >&2
      die "build failed"
    fi
  fi
  for candidate in "$BUILD_DIR/hello" "$BUILD_DIR/examples/hello" "$BUILD_DIR/bin/hello"; do
    if [[ -x $candidate ]]; then
      HELLO=$candidate
      return 0
    fi
  done
  die "no hello executable under ${BUILD_DIR#"$ROOT"/} (drop --no-build to build it)"
}

# With --tls: hello's arguments for the certificate (prints nothing without).
hello_tls_args() {
  if ((TLS)); then echo --tls-cert "$TMP/tls/cert.pem" --tls-key "$TMP/tls/key.pem"; fi
}

# With --tls (or --h2), makes the self-signed ECDSA P-256 certificate that
# hello, nginx (and h2o with --h2) serve, $TMP/tls/cert.pem and key.pem (CN
# localhost, SAN localhost and 127.0.0.1), and points curl at it.
make_certificate() {
  ((TLS || H2)) || return 0
  mkdir -p "$TMP/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$TMP/tls/key.pem" -out "$TMP/tls/cert.pem" -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >"$TMP/tls/openssl.log" 2>&1 ||
    die "openssl could not make the certificate: $(tail -n 5 "$TMP/tls/openssl.log")"
  CURL_TLS=(--cacert "$TMP/tls/cert.pem")
}

# Starts hello, with the extra arguments $@ if any (and the certificate's
# with --tls, --h2c for --h2's cleartext runs).
start_hello() {
  next_port HELLO_PORT hello
  # shellcheck disable=SC2046 # no arguments or four words without spaces
  taskset -c "$SERVER_CPUS" "$HELLO" --host 127.0.0.1 --port "$HELLO_PORT" \
    --threads "$SERVER_THREADS" --stats $(hello_tls_args) $(hello_h2_args) $(hello_reuseport_args) "$@" \
    2>"$TMP/hello.log" &
  HELLO_PID=$!
  wait_ready hello "$HELLO_PID" "$SCHEME://127.0.0.1:$HELLO_PORT$URL_PATH" "$TMP/hello.log"
  check_response hroute "$SCHEME://127.0.0.1:$HELLO_PORT$URL_PATH"
}

# Stops hello with SIGTERM as a user would and checks it shuts down cleanly.
stop_hello() {
  stop_process "$HELLO_PID" TERM 7
  HELLO_PID=
  [[ $STOP_STATUS == 0 ]] ||
    note "warning: hello did not shut down cleanly on SIGTERM" \
      "(exit status: $STOP_STATUS); log: $(tail -n 5 "$TMP/hello.log" | tr '\n' ' ')"
}

# Starts a second hello, with --churn, for the keepalive+churn run of round
# $1.  It runs for that run only, so that its churn thread takes no CPU time
# from the other runs (it shares the server CPUs), and is warmed up as the
# main hello was.
start_churn_hello() {
  local round=$1
  CHURN_PORT=$(pick_port $((LAST_PORT + 1)))
  # shellcheck disable=SC2046 # no arguments or four words without spaces
  taskset -c "$SERVER_CPUS" "$HELLO" --host 127.0.0.1 --port "$CHURN_PORT" \
    --threads "$SERVER_THREADS" --stats --churn "$CHURN" $(hello_tls_args) $(hello_reuseport_args) \
    2>"$TMP/hello-churn.$round.log" &
  CHURN_PID=$!
  wait_ready "hello --churn" "$CHURN_PID" "$SCHEME://127.0.0.1:$CHURN_PORT$URL_PATH" \
    "$TMP/hello-churn.$round.log"
  check_response hroute+churn "$SCHEME://127.0.0.1:$CHURN_PORT$URL_PATH"
  run_wrk "$CHURN_PORT" "$WARMUP" keepalive "$TMP/warmup.churn.$round"
}

# Stops the hello of start_churn_hello (round $1), checks its shutdown and
# shows how many replacements it made (the line it prints when it stops).
stop_churn_hello() {
  local round=$1 log="$TMP/hello-churn.$1.log" line
  stop_process "$CHURN_PID" TERM 7
  CHURN_PID=
  [[ $STOP_STATUS == 0 ]] ||
    note "warning: hello --churn did not shut down cleanly on SIGTERM" \
      "(exit status: $STOP_STATUS); log: $(tail -n 5 "$log" | tr '\n' ' ')"
  line=$(grep -m1 '^hello: churn: ' "$log" || true)
  if [[ -z $line ]]; then
    note "warning: hello --churn did not report its route replacements"
  else
    note "round $round/$ROUNDS  ${line#hello: }"
  fi
}

# The keepalive+churn run of round $1.
measure_churn() {
  start_churn_hello "$1"
  measure hroute "$CHURN_PID" "$CHURN_PORT" keepalive "$1" keepalive+churn
  stop_churn_hello "$1"
}

# With several server threads, one SO_REUSEPORT socket each, as nginx's
# workers get with "listen ... reuseport" below (hello's default is one
# socket they share).
hello_reuseport_args() {
  if ((SERVER_THREADS > 1)); then echo --reuseport; fi
}

# Writes $TMP/nginx/nginx.conf from bench/nginx.conf.in.
write_nginx_conf() {
  local dir=$TMP/nginx master=off listen='' temp='' tls='' m conns
  mkdir -p "$dir"
  if ((SERVER_THREADS > 1)); then
    master=on
    listen=reuseport # one listening socket per worker, as hello --reuseport
  fi
  if ((TLS)); then
    # hello's TLS defaults (src/server/net/tlsctx.c): TLS 1.2 and 1.3, ECDHE
    # with AEAD ciphers (OpenSSL 3.0 has no "ECDHE+AEAD" alias: the list is
    # spelt out), tickets on.  Session cache: nginx's default (none).
    listen="ssl${listen:+ $listen}"
    tls+="        ssl_certificate $TMP/tls/cert.pem;"$'\n'
    tls+="        ssl_certificate_key $TMP/tls/key.pem;"$'\n'
    tls+="        ssl_protocols TLSv1.2 TLSv1.3;"$'\n'
    tls+="        ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    tls+="ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    tls+="ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;"$'\n'
    tls+="        ssl_session_tickets on;"$'\n'
  fi
  if ((H2)); then listen+="${listen:+ }http2"; fi # h2 by ALPN with ssl, else h2c
  # Keep nginx's temp directories in the temp dir too (only for the modules
  # this nginx was built with: naming another one is a config error).
  for m in client_body proxy fastcgi uwsgi scgi; do
    if [[ $m == client_body ]] || ! nginx -V 2>&1 | grep -q -- "--without-http_${m}_module"; then
      temp+="    ${m}_temp_path $dir/${m}_temp;"$'\n'
    fi
  done
  # Room for the idle measurement's connections besides wrk's.
  conns=$((IDLE_CONNS + CONNECTIONS + 100))
  ((conns >= 20000)) || conns=20000
  awk -v tmpdir="$dir" -v port="$NGINX_PORT" -v workers="$SERVER_THREADS" \
    -v master="$master" -v listen="$listen" -v temp="$temp" -v conns="$conns" -v tls="$tls" '
    $0 == "@TEMP_PATHS@" { printf "%s", temp; next }
    $0 == "@TLS@" { printf "%s", tls; next }
    { gsub(/@TMPDIR@/, tmpdir); gsub(/@PORT@/, port); gsub(/@WORKERS@/, workers)
      gsub(/@WORKER_CONNECTIONS@/, conns)
      gsub(/@MASTER_PROCESS@/, master); gsub(/@LISTEN_OPTIONS@/, listen)
      print }' "$BENCH_DIR/nginx.conf.in" >"$dir/nginx.conf"
}

start_nginx() {
  next_port NGINX_PORT nginx
  write_nginx_conf
  nginx -t -q -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" ||
    die "nginx rejected its configuration: $(tail -n 5 "$TMP/nginx/error.log" 2>/dev/null)"
  taskset -c "$SERVER_CPUS" nginx -p "$TMP/nginx" -e "$TMP/nginx/error.log" \
    -c "$TMP/nginx/nginx.conf" 2>"$TMP/nginx/stderr.log" &
  NGINX_PID=$!
  wait_ready nginx "$NGINX_PID" "$SCHEME://127.0.0.1:$NGINX_PORT$URL_PATH" "$TMP/nginx/stderr.log"
  check_response nginx "$SCHEME://127.0.0.1:$NGINX_PORT$URL_PATH"
}

start_h2o() {
  local tls=()
  ((TLS)) && tls=(--tls "$TMP/tls/cert.pem" "$TMP/tls/key.pem") # --h2 only
  next_port H2O_PORT h2o
  taskset -c "$SERVER_CPUS" "$PEER_DIR/h2o_hello" "${tls[@]}" "$H2O_PORT" "$SERVER_THREADS" \
    2>"$TMP/h2o.log" &
  H2O_PID=$!
  wait_ready h2o "$H2O_PID" "$SCHEME://127.0.0.1:$H2O_PORT$URL_PATH" "$TMP/h2o.log"
  check_response h2o "$SCHEME://127.0.0.1:$H2O_PORT$URL_PATH"
}

# The floor's canned response has hello's body for --path /hello/NAME (any
# request gets it).
start_floor() {
  local body="Hello, John"
  if [[ $URL_PATH =~ ^/hello/([^/?#]+)$ ]]; then body="Hello, ${BASH_REMATCH[1]}"; fi
  next_port FLOOR_PORT floor
  taskset -c "$SERVER_CPUS" "$PEER_DIR/floor" "$FLOOR_PORT" "$body" "$SERVER_THREADS" \
    2>"$TMP/floor.log" &
  FLOOR_PID=$!
  wait_ready floor "$FLOOR_PID" "$SCHEME://127.0.0.1:$FLOOR_PORT$URL_PATH" "$TMP/floor.log"
  check_response floor "$SCHEME://127.0.0.1:$FLOOR_PORT$URL_PATH"
}

# uWebSockets runs one App per thread: one process, whatever
# --server-threads says (reported in the header).
start_uws() {
  next_port UWS_PORT uws
  taskset -c "$SERVER_CPUS" "$PEER_DIR/uws_hello" "$UWS_PORT" 2>"$TMP/uws.log" &
  UWS_PID=$!
  wait_ready uws "$UWS_PID" "$SCHEME://127.0.0.1:$UWS_PORT$URL_PATH" "$TMP/uws.log"
  check_response uws "$SCHEME://127.0.0.1:$UWS_PORT$URL_PATH"
}

# Starts peer $1 (nginx, h2o, floor or uws).
start_peer() {
  case $1 in
    nginx) start_nginx ;;
    h2o) start_h2o ;;
    floor) start_floor ;;
    uws) start_uws ;;
  esac
}

# The process and port of peer $1, as "PID PORT".
peer_pid_port() {
  case $1 in
    nginx) echo "$NGINX_PID $NGINX_PORT" ;;
    h2o) echo "$H2O_PID $H2O_PORT" ;;
    floor) echo "$FLOOR_PID $FLOOR_PORT" ;;
    uws) echo "$UWS_PID $UWS_PORT" ;;
  esac
}

# Stops peer $1 (it must still be running: one that died is reported).
stop_peer() {
  local pid
  read -r pid _ < <(peer_pid_port "$1")
  kill -0 "$pid" 2>/dev/null || note "warning: $1 exited before it was stopped"
  case $1 in
    nginx) stop_process "$NGINX_PID" TERM 5; NGINX_PID= ;;
    h2o) stop_process "$H2O_PID" TERM 2; H2O_PID= ;;
    floor) stop_process "$FLOOR_PID" TERM 2; FLOOR_PID= ;;
    uws) stop_process "$UWS_PID" TERM 2; UWS_PID= ;;
  esac
}

# ---- idle connections -----------------------------------------------------

# Prints the VmRSS, in bytes, of process $1 and, with more than one server
# thread, of its direct children (nginx workers, h2o processes).
rss_bytes() {
  local pid=$1 pids p
  pids=$pid
  if ((SERVER_THREADS > 1)) && command -v ps >/dev/null 2>&1; then
    pids="$pid $(ps -o pid= --ppid "$pid" 2>/dev/null || true)"
  fi
  for p in $pids; do cat "/proc/$p/status" 2>/dev/null || true; done |
    awk '/^VmRSS:/ { kb += $2 } END { print kb * 1024 }'
}

# hello's arguments for the idle measurement: a keep-alive timeout far
# longer than the measurement when hello has an option for it.  Without one
# its default (5 s) has to outlast it; bench/idle_client checks that every
# connection is still open after the second reading.
hello_idle_args() {
  if "$HELLO" --help 2>/dev/null | grep -q -- '--keepalive-timeout'; then
    echo --keepalive-timeout 300000
  fi
}

# Measures server $1 (process $2, port $3, started afresh, idle): its RSS,
# then IDLE_CONNS idle persistent connections after one request each
# (bench/idle_client), its RSS once steady (two equal readings 200 ms apart,
# at most 2 s), and appends "LINE SERVER BYTES_PER_CONNECTION" to $TMP/idle
# (LINE: the idle line's name), or "LINE SERVER error" after noting what
# went wrong; and a row to the CSV (errors:
# the connections that were not open at the second reading).
measure_idle() {
  local server=$1 pid=$2 port=$3 before after prev i line to from
  local ok=0 failed=0 open=0 detail=
  before=$(rss_bytes "$pid")
  rm -f "$TMP/idle.in" "$TMP/idle.out"
  mkfifo "$TMP/idle.in" "$TMP/idle.out"
  local tls_arg=()
  ((TLS)) && tls_arg=(--tls)
  ((H2)) && tls_arg+=(--h2)
  taskset -c "$CLIENT_CPUS" "$PEER_DIR/idle_client" "${tls_arg[@]}" "$port" "$IDLE_CONNS" /hello/x \
    <"$TMP/idle.in" >"$TMP/idle.out" 2>"$TMP/idle.$server.log" &
  IDLE_PID=$!
  exec {to}>"$TMP/idle.in" {from}<"$TMP/idle.out"
  if IFS= read -r -t 300 line <&"$from" && [[ $line =~ ^ready\ ([0-9]+)\ ([0-9]+)(.*)$ ]]; then
    ok=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]} detail=${BASH_REMATCH[3]}
    prev=$(rss_bytes "$pid")
    for ((i = 0; i < 10; i++)); do
      sleep 0.2
      after=$(rss_bytes "$pid")
      [[ $after == "$prev" ]] && break
      prev=$after
    done
    ((i < 10)) || note "warning: $server: RSS still changing 2 s after the idle connections were made"
    echo check >&"$to"
    if IFS= read -r -t 60 line <&"$from" && [[ $line =~ ^open\ ([0-9]+)$ ]]; then
      open=${BASH_REMATCH[1]}
    fi
  else
    detail=" $(head -c 300 "$TMP/idle.$server.log" 2>/dev/null)"
  fi
  exec {to}>&- {from}<&-
  stop_process "$IDLE_PID" TERM 10
  IDLE_PID=
  kill -0 "$pid" 2>/dev/null || { note "error: $server died during the idle measurement"; ok=0; }

  if ((ok == IDLE_CONNS && open == IDLE_CONNS)); then
    echo "$IDLE_NAME $server $(((after - before) / IDLE_CONNS))" >>"$TMP/idle"
    csv_row run="$IDLE_NAME" server="$server" round=1 \
      bytes_per_connection=$(((after - before) / IDLE_CONNS)) errors=0
    note "$IDLE_NAME  $server: RSS $before -> $after bytes with $IDLE_CONNS idle connections:" \
      "$(((after - before) / IDLE_CONNS)) B each"
  else
    echo "$IDLE_NAME $server error" >>"$TMP/idle"
    csv_row run="$IDLE_NAME" server="$server" round=1 errors=$((IDLE_CONNS - open))
    IDLE_FAILED=1
    if ((ok < IDLE_CONNS)); then
      note "error: $server idle: $ok of $IDLE_CONNS connections got a full response" \
        "($failed failed${detail:+;$detail})"
    else
      note "error: $server idle: only $open of $IDLE_CONNS connections were still open" \
        "at the second RSS reading (closed by the server or sent more bytes)"
    fi
  fi
}

# The idle line's measurements: a fresh hello, nginx and h2o (as benchmarked)
# each started, measured and stopped in turn.
run_idle() {
  local p pid port
  if want_hroute; then
    # shellcheck disable=SC2046 # no arguments or two words
    start_hello $(hello_idle_args)
    measure_idle hroute "$HELLO_PID" "$HELLO_PORT"
    stop_hello
  fi
  for p in $(peers); do
    [[ $p == nginx || $p == h2o ]] || continue
    start_peer "$p"
    read -r pid port < <(peer_pid_port "$p")
    measure_idle "$p" "$pid" "$port"
    stop_peer "$p"
  done
}

# ---- one measured run -----------------------------------------------------

# Runs wrk against port $1 for duration $2 in mode $3 (keepalive or
# pipeline), output to file $4.  Runs in the background so that the traps
# fire at once when the script is interrupted.
run_wrk() {
  local port=$1 duration=$2 mode=$3 out=$4 status=0
  local args=(--latency -t "$WRK_THREADS" -c "$CONNECTIONS" -d "$duration")
  if [[ $mode == pipeline ]]; then
    args+=(-s "$BENCH_DIR/pipeline.lua" "$SCHEME://127.0.0.1:$port$URL_PATH" -- "$DEPTH" "$CONNECTIONS")
  else
    args+=("$SCHEME://127.0.0.1:$port$URL_PATH")
  fi
  taskset -c "$CLIENT_CPUS" wrk "${args[@]}" >"$out" 2>&1 &
  WRK_PID=$!
  wait "$WRK_PID" || status=$?
  WRK_PID=
  ((status == 0)) || die "wrk failed (status $status): $(tail -n 5 "$out")"
}

# Parses wrk --latency output (file $1) into
# "REQ_PER_S P50_MS P99_MS REQUESTS ERRORS"; ERRORS counts socket errors and
# non-2xx/3xx responses.  Percentiles come from wrk's Latency Distribution,
# or, for pipelined runs, from the "Raw write latency" line bench/pipeline.lua
# prints (wrk's own percentiles are wrong with pipelining: see that file).
parse_wrk() {
  awk '
    function ms(v) {  # wrk prints latencies as 512.00us, 1.20ms, 2.00s, 1.00m
      if (v ~ /us$/) return v / 1000
      if (v ~ /ms$/) return v + 0
      if (v ~ /s$/) return v * 1000
      if (v ~ /m$/) return v * 60000
      if (v ~ /h$/) return v * 3600000
      return -1
    }
    /Latency Distribution/ { in_dist = 1; next }
    in_dist && $1 == "50%" { p50 = ms($2) }
    in_dist && $1 == "99%" { p99 = ms($2); in_dist = 0 }
    /^Raw write latency:/ { raw50 = ms($7); raw99 = ms($11) }
    / requests in / { requests = $1 }
    /Socket errors:/ { gsub(/,/, ""); errors += $4 + $6 + $8 + $10 }
    /Non-2xx or 3xx responses:/ { errors += $NF }
    /^Requests\/sec:/ { rps = $2 }
    END {
      if (raw50 != "") { p50 = raw50; p99 = raw99 }
      if (rps == "" || p50 == "" || p99 == "") exit 1
      printf "%.0f %.3f %.3f %d %d\n", rps, p50, p99, requests, errors
    }' "$1"
}

# Measures server $1 ("hroute" or a peer, process $2, port $3) in mode $4
# for round $5 and appends one line to $TMP/results:
#   server run round req/s p50_ms p99_ms cpu_us_per_req allocs_per_req errors
# and a row to the CSV.  The run is named after the mode unless $6 names it.
measure() {
  local server=$1 pid=$2 port=$3 mode=$4 round=$5
  local run=keepalive out cpu0 cpu1 c0 c1 rps p50 p99 requests errors served allocs cpu_us summary
  if [[ $mode == pipeline ]]; then run="pipeline$DEPTH"; fi
  if [[ $mode == h2m* ]]; then run="$H2_RUN-m${mode#h2m}"; fi # --h2: h2load -m N
  run=${6:-$run}
  out="$TMP/wrk.$server.$run.$round"

  if [[ $server == hroute ]]; then c0=$(hello_counters "$port"); fi
  cpu0=$(cpu_ticks "$pid")
  if [[ $mode == h2m* ]]; then
    run_h2load "$port" "$H2_REQUESTS" "${mode#h2m}" "$out"
  else
    run_wrk "$port" "$DURATION" "$mode" "$out"
  fi
  cpu1=$(cpu_ticks "$pid")
  if [[ $server == hroute ]]; then c1=$(hello_counters "$port"); fi
  kill -0 "$pid" 2>/dev/null || die "$server died during the $run run"

  if [[ $mode == h2m* ]]; then
    read -r rps p50 p99 requests errors < <(parse_h2load "$out") ||
      die "$server: cannot parse h2load output: $(head -c 2000 "$out")"
  else
    read -r rps p50 p99 requests errors < <(parse_wrk "$out") ||
      die "cannot parse wrk output: $(cat "$out")"
  fi
  # Requests the server completed: its own counter where it has one (this
  # includes responses wrk had not read when it stopped), else wrk's count.
  served=$requests
  allocs=n/a
  if [[ $server == hroute ]]; then
    read -r served allocs < <(awk -v a="$c0" -v b="$c1" 'BEGIN {
      split(a, x, " "); split(b, y, " "); n = y[1] - x[1]
      if (n <= 0) { print 0, "n/a"; exit }
      printf "%d %.2f\n", n, (y[2] - x[2]) / n }')
  fi
  cpu_us=$(awk -v t="$((cpu1 - cpu0))" -v hz="$CLK_TCK" -v n="$served" \
    'BEGIN { if (n > 0) printf "%.2f", t * 1000000 / hz / n; else print "n/a" }')

  echo "$server $run $round $rps $p50 $p99 $cpu_us $allocs $errors" >>"$TMP/results"
  csv_row run="$run" server="$server" round="$round" requests_per_s="$rps" \
    latency_p50_us="$(awk -v ms="$p50" 'BEGIN { printf "%.0f", ms * 1000 }')" \
    latency_p99_us="$(awk -v ms="$p99" 'BEGIN { printf "%.0f", ms * 1000 }')" \
    cpu_us_per_request="$cpu_us" allocs_per_request="$allocs" errors="$errors"
  summary=$(printf '%-7s %-15s %8s req/s  p50 %sms  p99 %sms  cpu %sus/req  allocs/req %s' \
    "$server" "$run" "$rps" "$p50" "$p99" "$cpu_us" "$allocs")
  if ((errors > 0)); then summary+="  ERRORS $errors"; fi
  note "round $round/$ROUNDS  $summary"
}

# ---- handshake runs (--tls) -------------------------------------------------

# Prints DURATION (10s, 2m, 1h or 30) in seconds.
duration_seconds() {
  local n=${DURATION%[smh]}
  case $DURATION in
    *m) echo $((10#$n * 60)) ;;
    *h) echo $((10#$n * 3600)) ;;
    *) echo $((10#$n)) ;;
  esac
}

# Measures the handshake rate of server $1 (process $2, port $3) in mode
# $4 (1.3, 1.2, 1.3-resume, 1.2-resume) for round $5 with bench/tls_handshakes
# and appends one line to $TMP/handshakes:
#   server mode round hs/s cpu_us_per_hs server_cpu_% resumed completed failed
#   unclean rss_growth_bytes
# and a row to the CSV (run "tls$4"; a request per handshake).
measure_handshakes() {
  local server=$1 pid=$2 port=$3 mode=$4 round=$5 out status=0 line
  local cpu0 cpu1 rss0 rss1 ndone resumed failed unclean secs rate cpu_us util summary
  out="$TMP/hs.$server.$mode.$round"
  rss0=$(rss_bytes "$pid")
  cpu0=$(cpu_ticks "$pid")
  taskset -c "$CLIENT_CPUS" "$PEER_DIR/tls_handshakes" -n "$HS_CLIENTS" -c "$TMP/tls/cert.pem" \
    "$port" "$mode" "$HS_SECONDS" >"$out" 2>"$out.err" &
  HS_PID=$!
  wait "$HS_PID" || status=$?
  HS_PID=
  cpu1=$(cpu_ticks "$pid")
  rss1=$(rss_bytes "$pid")
  kill -0 "$pid" 2>/dev/null || die "$server died during the TLS $mode handshake run"
  line=$(cat "$out")
  [[ $line =~ ^handshakes\ ([0-9]+)\ resumed\ ([0-9]+)\ failed\ ([0-9]+)\ unclean\ ([0-9]+)\ seconds\ ([0-9.]+)\ rate\ ([0-9]+)$ ]] ||
    die "tls_handshakes failed (status $status): $(head -c 300 "$out.err") $line"
  ndone=${BASH_REMATCH[1]} resumed=${BASH_REMATCH[2]} failed=${BASH_REMATCH[3]}
  unclean=${BASH_REMATCH[4]} secs=${BASH_REMATCH[5]} rate=${BASH_REMATCH[6]}
  read -r cpu_us util < <(awk -v t="$((cpu1 - cpu0))" -v hz="$CLK_TCK" -v n="$ndone" -v s="$secs" \
    'BEGIN { printf "%s %.0f\n", (n > 0 ? sprintf("%.2f", t * 1000000 / hz / n) : "n/a"), t / hz / s * 100 }')
  echo "$server $mode $round $rate $cpu_us $util $resumed $ndone $failed $unclean $((rss1 - rss0))" \
    >>"$TMP/handshakes"
  csv_row run="tls$mode" server="$server" round="$round" requests_per_s="$rate" \
    cpu_us_per_request="$cpu_us" errors="$failed"
  summary=$(printf '%-7s tls%-13s %7s hs/s  cpu %sus/hs  server cpu %s%%  resumed %s/%s  rss %+d kB' \
    "$server" "$mode" "$rate" "$cpu_us" "$util" "$resumed" "$ndone" $(((rss1 - rss0) / 1024)))
  if ((failed > 0)); then summary+="  FAILED $failed ($(head -c 200 "$out.err"))"; fi
  if ((unclean > 0)); then summary+="  $unclean without close_notify"; fi
  note "round $round/$ROUNDS  $summary"
}

# The handshake table: medians per server and mode, then hroute/nginx.
report_handshakes() {
  [[ -s $TMP/handshakes ]] || return 0
  echo "handshakes: a new connection per request (TLS handshake, GET /hello/x, Connection: close);" \
    "$HS_CLIENTS client process(es) on cpus $CLIENT_CPUS, $DURATION per run, medians"
  awk -v modes="${HS_MODES[*]}" '
    function median(list,   n, v, i, j, t) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
          t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
      if (v[1] == "n/a") return "n/a"
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    {
      if (!($1 in seen)) { seen[$1] = 1; servers[++ns] = $1 }
      k = $1 " " $2
      rate[k] = rate[k] " " $4; cpu[k] = cpu[k] " " $5; util[k] = util[k] " " $6
      res[k] += $7; done[k] += $8; fail[k] += $9; unclean[k] += $10; rss[k] = rss[k] " " $11
    }
    END {
      nm = split(modes, mode, " ")
      printf "%-8s %-15s %9s %10s %10s %9s %11s\n", "server", "mode", "hs/s", "cpu_us/hs",
        "server_cpu", "resumed", "rss/run"
      for (s = 1; s <= ns; s++)
        for (m = 1; m <= nm; m++) {
          k = servers[s] " " mode[m]
          if (!(k in rate)) continue
          mr[k] = median(rate[k]); mc[k] = median(cpu[k])
          printf "%-8s %-15s %9.0f %10s %9.0f%% %8.1f%% %+8.0f kB\n", servers[s], "tls" mode[m], mr[k],
            mc[k] == "n/a" ? "n/a" : sprintf("%.1f", mc[k]), median(util[k]),
            (done[k] > 0 ? res[k] * 100 / done[k] : 0), median(rss[k]) / 1024
        }
      if (("nginx" in seen) && ("hroute" in seen)) {
        hdr = ""; r1 = ""; r2 = ""
        for (m = 1; m <= nm; m++) {
          h = "hroute " mode[m]; n = "nginx " mode[m]
          hdr = hdr sprintf(" %14s", "tls" mode[m])
          q1 = "-"; q2 = "-"
          if ((h in mr) && (n in mr) && mr[n] > 0) q1 = sprintf("%.2fx", mr[h] / mr[n])
          if ((h in mc) && (n in mc) && mc[h] != "n/a" && mc[n] != "n/a" && mc[n] > 0)
            q2 = sprintf("%.2fx", mc[h] / mc[n])
          r1 = r1 sprintf(" %14s", q1); r2 = r2 sprintf(" %14s", q2)
        }
        printf "%-24s%s\n%-24s%s\n%-24s%s\n", "ratio hroute/nginx", hdr, "hs/s", r1, "cpu_us/hs", r2
      }
      for (k in fail)
        if (fail[k] > 0)
          printf "warning: %s: %d failed connections over all rounds\n", k, fail[k]
      for (k in unclean)
        if (unclean[k] > 0)
          printf "warning: %s: %d responses ended without close_notify\n", k, unclean[k]
      for (k in res) {
        split(k, w, " ")
        if (w[2] ~ /resume/ && done[k] > 0 && res[k] < done[k] * 0.99)
          printf "warning: %s: only %d of %d handshakes resumed a session\n", k, res[k], done[k]
        if (w[2] !~ /resume/ && res[k] > 0)
          printf "warning: %s: %d full handshakes resumed a session\n", k, res[k]
      }
    }' "$TMP/handshakes"
  echo "(server_cpu: % of one CPU during the run; well below 100 the clients were the bottleneck" \
    "and cpu_us/hs is the figure to compare)"
}

# ---- report ---------------------------------------------------------------

# Prints the commit benchmarked: its short hash, "+changes" when the work
# tree differs from it.
commit_id() {
  local commit
  if commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); then
    git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || commit+="+changes"
  else
    commit="none (no commits)"
  fi
  echo "$commit"
}

# Prints the CPU model, if /proc/cpuinfo names it.
cpu_model() {
  awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true
}

header_line() {
  local commit cores model churn_note='' peer_note='' p v client=wrk per_run="$DURATION per run"
  if want_hroute && ((CHURN > 0)); then
    churn_note="; keepalive+churn: hello --churn $CHURN (route replacements/s)"
  fi
  for p in $(peers); do
    case $p in
      nginx) v=$(nginx -v 2>&1 | sed -n 's|^nginx version: nginx/||p') ;;
      h2o) v="libh2o-evloop $(dpkg-query -W -f='${Version}' libh2o-evloop-dev 2>/dev/null | sed 's/[+-].*//')" ;;
      floor) v="epoll, no parsing" ;;
      uws) v="uWebSockets $(git --git-dir="$UWS_GIT" log -1 --format=%h 2>/dev/null), uSockets $(git --git-dir="$USOCKETS_GIT" log -1 --format=%h 2>/dev/null), one thread" ;;
    esac
    peer_note+="${peer_note:+, }$p${v:+ ($v)}"
  done
  [[ -z $peer_note ]] || peer_note="; peers: $peer_note"
  if ((H2)); then
    client=h2load per_run="$H2_REQUESTS requests per run"
    peer_note+="; HTTP/2 ($H2_TRANSPORTS): h2 over TLS by ALPN, self-signed ECDSA P-256"
    peer_note+=" ($(openssl version 2>/dev/null | awk '{ print $1, $2 }')), h2c by prior knowledge;"
    peer_note+=" h2load -c $CONNECTIONS -m $H2_STREAMS"
  elif ((TLS)); then
    peer_note+="; HTTPS: self-signed ECDSA P-256, wrk over TLS ($(openssl version 2>/dev/null | awk '{ print $1, $2 }'))"
  fi
  commit=$(commit_id)
  cores=$(nproc)
  model=$(cpu_model)
  echo "hroute bench: commit $commit; $cores core(s)${model:+ ($model)};" \
    "server cpus $SERVER_CPUS ($SERVER_THREADS thread(s)), $client cpus $CLIENT_CPUS ($WRK_THREADS thread(s));" \
    "$CONNECTIONS connections; $per_run; $ROUNDS round(s), medians shown; GET $URL_PATH$churn_note$peer_note"
}

# Prints the table of medians per server and run, hroute's ratios to each
# peer, the churn line and the idle line.
report() {
  header_line
  awk -v pipe_run="pipeline$DEPTH" -v depth="$DEPTH" -v churn="$CHURN" -v peer_list="$(peers | tr '\n' ' ')" '
    function median(list,   n, v, i, j, t) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++)          # insertion sort: a few rounds only
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
          t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
      if (v[1] == "n/a") return "n/a"
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    function fmt(x) { return x == "n/a" ? x : sprintf("%.2f", x) }
    {
      if (!($1 in seen_server)) { seen_server[$1] = 1; servers[++nservers] = $1 }
      if (!($2 in seen_run)) { seen_run[$2] = 1; runs[++nruns] = $2 }
      key = $1 " " $2
      rps[key] = rps[key] " " $4; p50[key] = p50[key] " " $5; p99[key] = p99[key] " " $6
      round_rps[key, $3] = $4; if ($3 > nrounds) nrounds = $3
      cpu[key] = cpu[key] " " $7; al[key] = al[key] " " $8; err[key] += $9
    }
    END {
      printf "%-8s %-15s %10s %9s %9s %11s %11s\n",
        "server", "run", "req/s", "p50", "p99", "cpu_us/req", "allocs/req"
      for (s = 1; s <= nservers; s++)
        for (r = 1; r <= nruns; r++) {
          key = servers[s] " " runs[r]
          if (!(key in rps)) continue
          med[key] = median(rps[key])
          printf "%-8s %-15s %10.0f %7.2fms %7.2fms %11s %11s\n", servers[s], runs[r], med[key],
            median(p50[key]), median(p99[key]), fmt(median(cpu[key])), fmt(median(al[key]))
        }
      # Per peer: hroute median / peer median, for req/s and cpu_us/req.
      np = split(peer_list, peer, " ")
      nrows = 0
      for (r = 1; r <= nruns; r++) {
        if (runs[r] != "keepalive" && runs[r] != pipe_run && runs[r] !~ /^h2c?-m[0-9]+$/) continue
        for (what = 1; what <= 2; what++) {
          row = ""; any = 0
          for (i = 1; i <= np; i++) {
            h = "hroute " runs[r]; n = peer[i] " " runs[r]; q = "-"
            if ((h in med) && (n in med)) {
              a = what == 1 ? med[h] : median(cpu[h]); b = what == 1 ? med[n] : median(cpu[n])
              if (a != "n/a" && b != "n/a" && b > 0) {
                q = sprintf("%.2fx", a / b); any = 1
                ratio[runs[r], what, peer[i]] = a / b
              }
            }
            row = row sprintf(" %8s", q)
          }
          if (any) rows[++nrows] = sprintf("%-30s%s", runs[r] " " (what == 1 ? "req/s" : "cpu_us/req"), row)
        }
      }
      if (nrows > 0) {
        row = ""
        for (i = 1; i <= np; i++) row = row sprintf(" %8s", peer[i])
        printf "%-30s%s\n", "ratio hroute/peer", row
        for (i = 1; i <= nrows; i++) print rows[i]
        goals = ""
        if (("keepalive", 2, "h2o") in ratio)
          goals = sprintf("keepalive cpu_us/req hroute/h2o %.2fx (<= 0.85)", ratio["keepalive", 2, "h2o"])
        if ((pipe_run, 1, "floor") in ratio)
          goals = goals (goals == "" ? "" : ", ") \
            sprintf("%s req/s hroute/floor %.2fx (>= 0.70)", pipe_run, ratio[pipe_run, 1, "floor"])
        if (goals != "") print "goals: " goals
      }
      # Churn: the median over rounds of the per-round ratios (the two runs
      # were measured one after the other).
      h = "hroute keepalive"; c = "hroute keepalive+churn"; list = ""; each = ""
      for (i = 1; i <= nrounds; i++)
        if (((h, i) in round_rps) && ((c, i) in round_rps) && round_rps[h, i] > 0) {
          q = round_rps[c, i] / round_rps[h, i]
          list = list " " q; each = each (each == "" ? "" : " ") sprintf("%.2f", q)
        }
      if (list != "")
        printf "churn: throughput with %d route replacements/s relative to none: %.2fx " \
          "(goal >= 0.95; median of rounds: %s)\n", churn, median(list), each
      if (pipe_run in seen_run)
        printf "(%s latency: per write of %d requests, without wrk'"'"'s %s)\n",
          pipe_run, depth, "coordinated-omission correction"
      for (key in err)
        if (err[key] > 0)
          printf "warning: %s: %d socket errors or non-2xx responses over all rounds\n", key, err[key]
    }' "$TMP/results"
  report_handshakes
  if [[ -s $TMP/idle ]]; then
    # A line per idle line name, in the order measured.
    awk -v n="$IDLE_CONNS" '
      !($1 in line) { names[++nn] = $1 }
      { line[$1] = line[$1] (line[$1] == "" ? "" : ", ") $2 " " ($3 == "error" ? "ERROR" : $3 " B") }
      END {
        what["idle-tls"] = "TLS "; what["idle-h2"] = "HTTP/2 (TLS) "; what["idle-h2c"] = "HTTP/2 (h2c) "
        for (i = 1; i <= nn; i++)
          printf "%s: server RSS per idle %skeep-alive connection (%d connections, one request" \
            " each): %s\n", names[i], what[names[i]], n, line[names[i]]
      }' "$TMP/idle"
  fi
}

# With --plot: the charts of the CSV, into PLOT_DIR (bench/plot.sh), each
# captioned with what was measured how.
plot_charts() {
  local caption model https='' client=wrk per_run="$DURATION per run"
  model=$(cpu_model)
  if ((H2)); then
    https=" over HTTP/2 ($H2_TRANSPORTS)" client=h2load per_run="$H2_REQUESTS requests per run"
  elif ((TLS)); then
    https=" over HTTPS"
  fi
  caption="hroute $(commit_id); GET $URL_PATH$https, $CONNECTIONS connections,"
  caption+=" $per_run, $ROUNDS round(s)"$'\n'
  caption+="server cpus $SERVER_CPUS, $client cpus $CLIENT_CPUS; $(nproc) core(s)${model:+ ($model)}"
  echo "charts:"
  bash "$BENCH_DIR/plot.sh" --caption "$caption" "$CSV_PATH" "$PLOT_DIR" | sed 's/^/  /' ||
    die "drawing the charts failed"
}

# ---- main -----------------------------------------------------------------

# Runs `$1 SERVER PID PORT $2 $3` (measure or measure_handshakes: mode $2,
# round $3) for hroute, unless $4 is "peers", and each benchmarked peer in
# turn.
measure_servers() {
  local fn=$1 mode=$2 round=$3 which=${4:-all} peer pid port
  if [[ $which == all ]] && want_hroute; then "$fn" hroute "$HELLO_PID" "$HELLO_PORT" "$mode" "$round"; fi
  for peer in $(peers); do
    read -r pid port < <(peer_pid_port "$peer")
    "$fn" "$peer" "$pid" "$port" "$mode" "$round"
  done
}

# Stops hello and the peers of the measured rounds.
stop_servers() {
  local peer
  if want_hroute; then stop_hello; fi
  for peer in $(peers); do stop_peer "$peer"; done
}

# The HTTP/1.1 runs (--h2: h2_runs in bench/h2.sh): hello and the peers
# started and warmed up, the measured rounds, then the idle line.
wrk_runs() {
  local round mode peer pid port

  if want_hroute; then
    start_hello
    run_wrk "$HELLO_PORT" "$WARMUP" keepalive "$TMP/warmup.hroute"
  fi
  for peer in $(peers); do
    start_peer "$peer"
    read -r pid port < <(peer_pid_port "$peer")
    run_wrk "$port" "$WARMUP" keepalive "$TMP/warmup.$peer"
  done

  : >"$TMP/results"
  csv_open "$CSV_PATH" || exit 1
  for ((round = 1; round <= ROUNDS; round++)); do
    for mode in keepalive pipeline; do
      if want_hroute; then measure hroute "$HELLO_PID" "$HELLO_PORT" "$mode" "$round"; fi
      # Right after the plain keep-alive run, so that the two are compared
      # under the same conditions (the machine's speed drifts).
      if want_hroute && [[ $mode == keepalive ]] && ((CHURN > 0)); then measure_churn "$round"; fi
      measure_servers measure "$mode" "$round" peers
    done
    if want_handshakes; then
      for mode in "${HS_MODES[@]}"; do
        measure_servers measure_handshakes "$mode" "$round"
      done
    fi
  done

  stop_servers
  # Fresh servers, after the throughput runs, so that neither disturbs the
  # other.
  if want_idle; then run_idle; fi
}

main() {
  parse_args "$@"
  if [[ $SERVER_CPUS == "$CLIENT_CPUS" ]]; then
    if (($(nproc) == 1)); then
      note "one-core machine: server and wrk share CPU 0, so the numbers measure both together"
    else
      note "warning: server and wrk share CPUs $SERVER_CPUS"
    fi
  fi

  TMP=$(mktemp -d "${TMPDIR:-/tmp}/hroute-bench.XXXXXX")
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  ensure_deps
  make_certificate
  HS_SECONDS=$(duration_seconds)
  CLK_TCK=$(getconf CLK_TCK)
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true # room for many connections
  if want_idle && (($(ulimit -n) < IDLE_CONNS + CONNECTIONS + 200)); then
    ulimit -n $((IDLE_CONNS + CONNECTIONS + 200)) 2>/dev/null ||
      die "--idle-conns $IDLE_CONNS needs $((IDLE_CONNS + CONNECTIONS + 200)) open files; ulimit -n allows $(ulimit -n)"
  fi
  LAST_PORT=$((PORT - 1))

  if want_hroute; then build_hello; fi
  build_peers
  : >"$TMP/idle"
  if ((H2)); then h2_runs; else wrk_runs; fi
  echo
  report
  if [[ -n $PLOT_DIR ]]; then plot_charts; fi
  echo "rounds: $CSV_PATH ($(csv_rows) rows)"
  ((IDLE_FAILED == 0)) || die "the idle measurement failed (see above)"
}

main "$@"
