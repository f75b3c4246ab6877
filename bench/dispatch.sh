#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/dispatch.sh: instructions per request of the in-process dispatch
# benchmark (bench/dispatch.c), counted by callgrind, for the compiled
# invoker and for the per-request baseline.  For each variant it runs
# `bench_dispatch --count N --variant V` and `--count 0` (setup and teardown
# only) under valgrind --tool=callgrind, and prints
# (Ir(N) - Ir(0)) / N and the ratio baseline/invoker.  Instruction counts do
# not depend on the machine's load, so they back up the timings of
# `bench_dispatch` without its noise.  Builds build/release first (Release),
# unless --no-build.
#
#   bench/dispatch.sh                 # 20000 requests per variant
#   bench/dispatch.sh --count 50000 --keep
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build/release"
COUNT=20000
BUILD=1
KEEP=0
TMP=

usage() {
  cat <<EOF
usage: bench/dispatch.sh [--count N] [--build-dir DIR] [--no-build] [--keep]

Counts instructions per request of bench_dispatch under callgrind.

  --count N        requests per counted run (default $COUNT)
  --build-dir DIR  the CMake build directory (default build/release)
  --no-build       use the existing DIR/bench_dispatch
  --keep           keep the callgrind output files (their directory is printed)
  --help           show this text
EOF
}

die() {
  echo "dispatch: $*" >&2
  exit 1
}

cleanup() {
  local status=$?
  if [[ -n $TMP && -d $TMP ]]; then
    if ((KEEP)); then echo "dispatch: callgrind files kept in $TMP" >&2; else rm -rf "$TMP"; fi
  fi
  exit "$status"
}

parse_args() {
  while (($# > 0)); do
    case $1 in
      --help | -h) usage; exit 0 ;;
      --no-build) BUILD=0; shift ;;
      --keep) KEEP=1; shift ;;
      --count | --build-dir)
        (($# >= 2)) || { usage >&2; die "$1 needs a value"; }
        case $1 in
          --count) COUNT=$2 ;;
          --build-dir) BUILD_DIR=$2 ;;
        esac
        shift 2 ;;
      --count=*) COUNT=${1#*=}; shift ;;
      --build-dir=*) BUILD_DIR=${1#*=}; shift ;;
      *) usage >&2; die "unknown argument '$1'" ;;
    esac
  done
  [[ $COUNT =~ ^[0-9]{1,9}$ ]] && ((10#$COUNT >= 1)) || die "--count must be a whole number >= 1 (got '$COUNT')"
  COUNT=$((10#$COUNT))
}

check_tools() {
  if ! command -v valgrind >/dev/null 2>&1; then
    die "valgrind not found: it counts the instructions.  Install it" \
      "(Debian: sudo apt-get install valgrind); scripts/deps.sh does not."
  fi
  valgrind --tool=callgrind --version >/dev/null 2>&1 ||
    die "valgrind is installed but its callgrind tool does not run"
  if ((BUILD)); then
    command -v cmake >/dev/null 2>&1 || die "cmake not found (or use --no-build)"
  fi
}

build() {
  echo "dispatch: building bench_dispatch (Release) in $BUILD_DIR ..." >&2
  if ! { cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$BUILD_DIR" -j2 --target bench_dispatch; } >"$TMP/build.log" 2>&1; then
    tail -n 40 "$TMP/build.log" >&2
    die "build failed"
  fi
}

# Prints the total instruction count (event Ir) of one callgrind run of
# bench_dispatch with arguments "$@".  Output file: $TMP/cg.<variant>.<count>.
instructions() {
  local variant=$1 count=$2 out="$TMP/cg.$1.$2" total
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$BENCH" --count "$count" --variant "$variant" >"$out.log" 2>&1; then
    tail -n 20 "$out.log" >&2
    die "bench_dispatch --count $count --variant $variant failed under callgrind"
  fi
  # "totals:" (or "summary:" in older callgrind) holds the run's Ir total.
  total=$(awk '$1 == "totals:" || $1 == "summary:" { print $2; exit }' "$out")
  [[ $total =~ ^[0-9]+$ ]] || die "no instruction total in $out"
  echo "$total"
}

main() {
  local v ir0 irn
  local -A ipr
  parse_args "$@"
  check_tools
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/hroute-dispatch.XXXXXX")
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if ((BUILD)); then build; fi
  BENCH="$BUILD_DIR/bench_dispatch"
  [[ -x $BENCH ]] || die "no $BENCH (drop --no-build to build it)"

  : >"$TMP/counts"
  for v in invoker baseline; do
    echo "dispatch: callgrind, $v: --count 0 and --count $COUNT ..." >&2
    ir0=$(instructions "$v" 0)
    irn=$(instructions "$v" "$COUNT")
    ((irn > ir0)) || die "$v: $irn instructions with $COUNT requests, $ir0 without"
    ipr[$v]=$(awk -v a="$irn" -v b="$ir0" -v n="$COUNT" 'BEGIN { printf "%.1f", (a - b) / n }')
    echo "$v $ir0 $irn" >>"$TMP/counts"
  done

  echo "dispatch: instructions per request, callgrind Ir: (run of $COUNT requests - run of 0) / $COUNT"
  printf '%-10s %14s %14s %12s\n' variant "Ir(0)" "Ir($COUNT)" "Ir/request"
  while read -r v ir0 irn; do
    printf '%-10s %14s %14s %12s\n' "$v" "$ir0" "$irn" "${ipr[$v]}"
  done <"$TMP/counts"
  awk -v b="${ipr[baseline]}" -v i="${ipr[invoker]}" \
    'BEGIN { printf "ratio baseline/invoker: %.3fx\n", b / i }'
}

main "$@"
