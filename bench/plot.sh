#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/plot.sh: PNG charts of a benchmark CSV (bench/csv.sh; written by
# bench/run.sh, static.sh and ws.sh, which call this with --plot DIR).
# Into DIR, each when the CSV has its figures, with a panel per run:
#   requests_per_s.png      requests/s by server and round
#   cpu_us_per_request.png  server CPU µs per request by server and round
#   latency.png             latency p50 and p99 by server (medians of rounds)
#   idle_memory.png         server RSS per idle connection by server
# It reshapes the CSV with awk into one table per panel and draws each
# chart with gnuplot (bench/plot.gp, grouped bars); it prints the paths of
# the charts it wrote, one a line.
#
#   bench/plot.sh [--caption TEXT] CSV DIR
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CAPTION=

usage() {
  sed -n '4,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

while (($# > 0)); do
  case $1 in
    --caption) (($# >= 2)) || { usage >&2; exit 2; }; CAPTION=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "plot.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
(($# == 2)) || { usage >&2; exit 2; }
CSV=$1
DIR=$2
[[ -r $CSV ]] || { echo "plot.sh: cannot read $CSV" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 ||
  { echo "plot.sh: no gnuplot (Debian: gnuplot-nox; scripts/deps.sh --bench)" >&2; exit 1; }
mkdir -p "$DIR"
TABLES=$(mktemp -d "${TMPDIR:-/tmp}/hroute-plot.XXXXXX")
trap 'rm -rf "$TABLES"' EXIT

# Writes the tables of chart $1, $TABLES/$1.N.dat, a panel per run with
# figures, and prints "NCOLS PANEL...| MIN MAX..." (the panels, then each
# one's lowest and highest value; nothing when no run has figures for the
# chart).  The kind of chart follows: "rounds COLUMN" (a bar per round),
# "latency" (p50 and p99, medians of the rounds) or "median COLUMN" (one
# bar, the median of the rounds).
tables() {
  local name=$1 kind=$2 column=${3:-}
  awk -F, -v prefix="$TABLES/$name" -v kind="$kind" -v want="$column" '
    function median(list,   n, v, i, j, t) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    {
      run = $col["run"]; server = $col["server"]; round = $col["round"] + 0
      if (kind == "latency") { a = $col["latency_p50_us"]; b = $col["latency_p99_us"] }
      else a = $col[want]
      if (a == "") next
      if (!(run in seen_run)) { seen_run[run] = 1; runs[++nruns] = run }
      k = run SUBSEP server
      if (!(k in seen)) { seen[k] = 1; servers[run] = servers[run] " " server }
      value[k, round] = a; all_a[k] = all_a[k] " " a; all_b[k] = all_b[k] " " b
      if (round > nrounds) nrounds = round
    }
    # Writes value v of a row to the table, keeping the lowest and highest.
    function cell(v) {
      printf " %s", v > file
      if (v == "NaN") return
      if (lo == "" || v + 0 < lo) lo = v + 0
      if (hi == "" || v + 0 > hi) hi = v + 0
    }
    END {
      if (nruns == 0) exit
      ncols = kind == "rounds" ? nrounds : kind == "latency" ? 2 : 1
      line = ncols
      for (r = 1; r <= nruns; r++) {
        file = prefix "." r ".dat"
        if (kind == "rounds") {
          printf "\"server\"" > file
          for (i = 1; i <= nrounds; i++) printf " \"round %d\"", i > file
          print "" > file
        } else if (kind == "latency") print "\"server\" \"p50\" \"p99\"" > file
        else print "\"server\" \"median\"" > file
        n = split(servers[runs[r]], s, " ")
        lo = hi = ""
        for (i = 1; i <= n; i++) {
          k = runs[r] SUBSEP s[i]
          printf "\"%s\"", s[i] > file
          if (kind == "rounds")
            for (j = 1; j <= nrounds; j++) cell((k, j) in value ? value[k, j] : "NaN")
          else if (kind == "latency") { cell(median(all_a[k])); cell(median(all_b[k])) }
          else cell(median(all_a[k]))
          print "" > file
        }
        close(file)
        line = line " " runs[r]
        range = range " " (lo < 0 ? lo : 0) " " hi
      }
      print line "|" range
    }' "$CSV"
}

# Draws chart $1 ($DIR/$1.png) from the tables of tables() with title $2
# and y label $3; $4 is 1 to print the values above the bars.
chart() {
  local name=$1 title=$2 ylabel=$3 labels=$4 spec ncols panels
  spec=$(tables "$name" "${@:5}")
  [[ -n $spec ]] || return 0
  read -r ncols panels <<<"${spec%%|*}"
  gnuplot -c "$BENCH_DIR/plot.gp" "$TABLES/$name" "$DIR/$name.png" "$title" "$CAPTION" \
    "$ylabel" "$ncols" "$labels" "$panels" "${spec#*|}" 2>"$TABLES/$name.log" || {
    echo "plot.sh: gnuplot failed on $name.png: $(tail -n 5 "$TABLES/$name.log")" >&2
    exit 1
  }
  echo "$DIR/$name.png"
}

chart requests_per_s "requests/s by server and round" "requests/s" 0 rounds requests_per_s
chart cpu_us_per_request "server CPU time per request by server and round" "CPU µs/request" 0 \
  rounds cpu_us_per_request
chart latency "latency by server: p50 and p99, medians of the rounds" "latency µs" 1 latency
chart idle_memory "server memory per idle connection (RSS growth / connections)" \
  "bytes/connection" 1 median bytes_per_connection
