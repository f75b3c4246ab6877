# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# shellcheck disable=SC2034 # sets variables of bench/run.sh
#
# bench/h2.sh: the HTTP/2 half of bench/run.sh (`bench/run.sh --h2`),
# sourced by it: the same servers, rounds, CPU accounting, CSV and report,
# with h2load (Debian's nghttp2-client) instead of wrk.  For each transport
# of --h2-transports -- "tls" (h2 by ALPN over TLS with run.sh's
# self-signed ECDSA P-256 certificate; runs named h2-mN) and "h2c"
# (cleartext, prior knowledge; runs named h2c-mN) -- it starts hello (with
# --h2c for h2c) and each compared peer (nginx with "listen ... http2",
# h2o_hello, which speaks both), checks that each answers GET --path over
# HTTP/2 with hello's body, warms each up, and measures, round by round in
# turn, `h2load -n --h2-requests -c --connections -m N` for each N of
# --h2-streams; then the transport's servers stop.  The latency
# percentiles come from h2load's per-request log (--log-file: the time to
# each response's end).  Last come the idle lines, idle-h2 and idle-h2c:
# fresh servers, bench/idle_client --h2 (with --tls for tls).
# Defines: h2_parse_args (after run.sh's parse_args), h2_use_transport,
# h2_runs (the measured rounds and idle lines of every transport),
# run_h2load and parse_h2load (measure calls them for modes h2mN),
# hello_h2_args.

# Checks and normalises the --h2* options and what --h2 excludes.
h2_parse_args() {
  local list s t seen=' '
  ((TLS == 0)) || die "--h2 measures TLS itself (--h2-transports tls); drop --tls"
  check_int --h2-requests "$H2_REQUESTS" 1
  H2_REQUESTS=$((10#$H2_REQUESTS))
  ((H2_REQUESTS >= CONNECTIONS)) || die "--h2-requests must be >= --connections"
  IFS=, read -r -a list <<<"$H2_STREAMS"
  ((${#list[@]} > 0)) || die "--h2-streams needs a comma-separated list such as 10,1"
  H2_STREAM_LIST=()
  for s in "${list[@]}"; do
    check_int --h2-streams "$s" 1
    ((10#$s <= 1000)) || die "--h2-streams: at most 1000 streams per connection"
    H2_STREAM_LIST+=("$((10#$s))")
  done
  IFS=, read -r -a list <<<"$H2_TRANSPORTS"
  ((${#list[@]} > 0)) || die "--h2-transports needs tls, h2c or tls,h2c"
  H2_TRANSPORT_LIST=()
  for t in "${list[@]}"; do
    [[ $t == tls || $t == h2c ]] || die "--h2-transports: unknown transport '$t' (tls or h2c)"
    [[ $seen != *" $t "* ]] || die "--h2-transports names $t twice"
    seen+="$t "
    H2_TRANSPORT_LIST+=("$t")
  done
  local p kept=()
  for p in "${PEERS[@]}"; do
    if [[ $p == floor || $p == uws ]]; then
      note "--h2: $p speaks no HTTP/2 here: skipped"
    else
      kept+=("$p")
    fi
  done
  PEERS=("${kept[@]}")
  [[ $ONLY != floor && $ONLY != uws ]] || die "--h2: $ONLY speaks no HTTP/2 here"
  CHURN=0     # the churn run is a wrk run
  HS_MODES=() # and so are the handshake runs
}

# Switches the scheme, curl's arguments, hello's and nginx's listener and
# the idle line's name to transport $1 (tls or h2c).
h2_use_transport() {
  if [[ $1 == tls ]]; then
    TLS=1 SCHEME=https H2_RUN=h2 IDLE_NAME=idle-h2
    CURL_TLS=(--cacert "$TMP/tls/cert.pem" --http2)
  else
    TLS=0 SCHEME=http H2_RUN=h2c IDLE_NAME=idle-h2c
    CURL_TLS=(--http2-prior-knowledge)
  fi
}

# hello's argument for a cleartext HTTP/2 listener (nothing over TLS, where
# ALPN offers h2 by default, and nothing without --h2).
hello_h2_args() {
  if ((H2 && !TLS)); then echo --h2c; fi
}

# Fails unless server $1 on port $2 answered over HTTP/2 (curl's
# %{http_version} is 2).
h2_check_version() {
  local v
  v=$(curl "${CURL_TLS[@]}" -sS --max-time 5 -o /dev/null -w '%{http_version}' \
    "$SCHEME://127.0.0.1:$2$URL_PATH") || die "$1: request over $H2_RUN failed"
  [[ $v == 2 ]] || die "$1: answered HTTP/$v, not HTTP/2, over $H2_RUN"
}

# Runs h2load against port $1: $2 requests, $3 streams per connection,
# output to file $4 and its per-request log to $4.log.  In the background,
# as run_wrk, so that the traps fire at once; 10 s without a byte from the
# server ends a connection (-N), and the whole run has 300 s.
run_h2load() {
  local port=$1 requests=$2 streams=$3 out=$4 status=0
  taskset -c "$CLIENT_CPUS" timeout 300 h2load -n "$requests" -c "$CONNECTIONS" -m "$streams" \
    -t "$WRK_THREADS" -N 10s --log-file="$out.log" "$SCHEME://127.0.0.1:$port$URL_PATH" \
    >"$out" 2>&1 &
  WRK_PID=$!
  wait "$WRK_PID" || status=$?
  WRK_PID=
  ((status == 0)) || die "h2load failed (status $status): $(tail -n 5 "$out")"
}

# Parses h2load's output (file $1, its log $1.log) into
# "REQ_PER_S P50_MS P99_MS REQUESTS ERRORS", as parse_wrk does: REQUESTS
# succeeded; ERRORS are requests that failed, errored, timed out or were not
# done, and responses other than 2xx.  Fails unless h2load used HTTP/2
# (h2 over TLS, h2c in clear).
parse_h2load() {
  local proto want=h2 p50 p99
  ((TLS)) || want=h2c
  proto=$(sed -n 's/^Application protocol: //p' "$1")
  [[ $proto == "$want" ]] || { echo "protocol '${proto:-none}', not $want" >&2; return 1; }
  # The log: start time (µs since the epoch), status, time to the
  # response's end (µs); percentiles of the 2xx responses.
  read -r p50 p99 < <(awk '$2 ~ /^2/ { print $3 }' "$1.log" | sort -n |
    awk '{ v[NR] = $1 } END {
      if (NR == 0) { print "-1 -1"; exit }
      i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
      i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
      printf "%.3f %.3f\n", v[i50] / 1000, v[i99] / 1000 }')
  awk -v p50="$p50" -v p99="$p99" '
    /^finished in / { rps = $4 }
    /^requests: / { total = $2; done = $6; ok = $8; errors += $10 + $12 + $14 + (total - done) }
    /^status codes: / { errors += $5 + $7 + $9 }
    END {
      if (rps == "" || total == "" || p50 < 0) exit 1
      printf "%.0f %.3f %.3f %d %d\n", rps, p50, p99, ok, errors
    }' "$1"
}

# Starts hello and the peers for the current transport, checks that each
# speaks HTTP/2 there, and warms each up (a tenth of --h2-requests).
h2_start_servers() {
  local peer pid port warm=$((H2_REQUESTS / 10 > CONNECTIONS ? H2_REQUESTS / 10 : CONNECTIONS))
  if want_hroute; then
    start_hello
    h2_check_version hroute "$HELLO_PORT"
    run_h2load "$HELLO_PORT" "$warm" "${H2_STREAM_LIST[0]}" "$TMP/warmup.hroute.$H2_RUN"
  fi
  for peer in $(peers); do
    start_peer "$peer"
    read -r pid port < <(peer_pid_port "$peer")
    h2_check_version "$peer" "$port"
    run_h2load "$port" "$warm" "${H2_STREAM_LIST[0]}" "$TMP/warmup.$peer.$H2_RUN"
  done
}

# The measured rounds of every transport, then the idle lines.  hello needs
# --h2c (its HTTP/2 server side); without it hroute is left out, with a
# warning, and the peers are measured alone.
h2_runs() {
  local transport round streams
  if want_hroute && ! "$HELLO" --help 2>&1 | grep -q -- '--h2c'; then
    note "warning: this hello has no --h2c (no HTTP/2 serving yet): hroute left out"
    NO_HROUTE=1
  fi
  : >"$TMP/results"
  csv_open "$CSV_PATH" || exit 1
  for transport in "${H2_TRANSPORT_LIST[@]}"; do
    h2_use_transport "$transport"
    h2_start_servers
    for ((round = 1; round <= ROUNDS; round++)); do
      for streams in "${H2_STREAM_LIST[@]}"; do
        measure_servers measure "h2m$streams" "$round"
      done
    done
    stop_servers
  done
  if want_idle; then
    for transport in "${H2_TRANSPORT_LIST[@]}"; do
      h2_use_transport "$transport"
      run_idle
    done
  fi
}
