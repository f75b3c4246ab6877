# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# bench/csv.sh: the benchmarks' measured rounds as CSV, one row per server,
# run and round, written by bench/run.sh, bench/static.sh and bench/ws.sh
# and read by bench/plot.sh.  Source it; it defines:
#   csv_open FILE        creates FILE (and its directory), writes the header
#                        row and sets CSV_FILE; fails if it cannot
#   csv_row NAME=VALUE...  appends one row to CSV_FILE: the named columns
#                        get their values, the others stay empty ("n/a" is
#                        written empty too); fails on an unknown column or a
#                        value with a comma, a quote or a line break
#   csv_rows             prints how many rows CSV_FILE has, header excluded
#
# The columns, in order:
#   run                   the measurement: keepalive, pipeline16,
#                         keepalive+churn, tls1.3, tls1.2-resume, idle,
#                         idle-tls (run.sh); h2-m10, h2-m1, h2c-m10,
#                         h2c-m1, idle-h2, idle-h2c (run.sh --h2: h2load
#                         -m N over TLS and h2c); static1k, static1m
#                         (static.sh); ws-echo64B, idle-ws (ws.sh)
#   server                hroute or a peer (nginx, h2o, floor, node-ws)
#   round                 1, 2, ... (the idle runs have one round)
#   requests_per_s        as the client counted them; for the tls runs one
#                         request per connection, so handshakes/s; for
#                         ws-echo, WebSocket messages echoed per second
#   latency_p50_us        latency percentiles, microseconds
#   latency_p99_us
#   cpu_us_per_request    server CPU time per request (per handshake), µs
#   allocs_per_request    server heap allocations per request (hroute only)
#   bytes_per_connection  server RSS per idle connection (the idle runs)
#   errors                socket errors and non-2xx responses; failed
#                         connections in the tls and idle runs
# A cell is empty when that run does not measure it.

CSV_COLUMNS=(run server round requests_per_s latency_p50_us latency_p99_us
  cpu_us_per_request allocs_per_request bytes_per_connection errors)
CSV_FILE=

csv_open() {
  if ! { mkdir -p "$(dirname "$1")" && (IFS=,; echo "${CSV_COLUMNS[*]}") >"$1"; }; then
    echo "${0##*/}: cannot write $1" >&2
    return 1
  fi
  CSV_FILE=$1
}

csv_row() {
  local -A cell=()
  local arg name row=() c
  for arg in "$@"; do
    name=${arg%%=*}
    [[ $arg == *=* && " ${CSV_COLUMNS[*]} " == *" $name "* ]] || {
      echo "${0##*/}: csv_row: no column '$name'" >&2
      return 1
    }
    [[ $arg != *[,\"$'\n']* ]] || {
      echo "${0##*/}: csv_row: '$arg' cannot go into a CSV cell as it is" >&2
      return 1
    }
    cell[$name]=${arg#*=}
  done
  for c in "${CSV_COLUMNS[@]}"; do
    if [[ ${cell[$c]:-} == n/a ]]; then row+=(''); else row+=("${cell[$c]:-}"); fi
  done
  (IFS=,; echo "${row[*]}") >>"$CSV_FILE"
}

csv_rows() { echo $(($(wc -l <"$CSV_FILE") - 1)); }
