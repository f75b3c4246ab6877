#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Router lookups side by side: hroute's bench_router and the same measurement
# for find-my-way (bench/fmw_router.js, Node.js), on one routes file, pinned
# to one CPU, in alternating rounds so that both see the same machine load.
# Prints each round's medians, then the median over the rounds of each and
# their ratio.
#
# Usage: bench/router_compare.sh [--rounds N] [--cpu C] [--no-build] [ROUTES_FILE]
#   --rounds N   alternating rounds (default 3)
#   --cpu C      the CPU both run on, one after the other (default 1)
#   --no-build   use the existing build/release/bench_router
#   ROUTES_FILE  default bench/github_routes.txt
# Installs what is missing: the Debian build packages (scripts/deps.sh),
# nodejs and npm when there is no node, and find-my-way at a pinned version
# under build/fmw (from the npm registry).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=$ROOT/build/release
FMW_DIR=$ROOT/build/fmw
FMW_VERSION=9.10.2
rounds=3
cpu=1
build=1
routes=$ROOT/bench/github_routes.txt

die() { echo "router_compare: $*" >&2; exit 1; }

while (($#)); do
  case $1 in
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --cpu) cpu=${2:?--cpu needs a CPU number}; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '4,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) die "unknown option: $1 (try --help)" ;;
    *) routes=$1; shift ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds: not a positive number: $rounds"
[[ $cpu =~ ^[0-9]+$ ]] || die "--cpu: not a CPU number: $cpu"
[[ -r $routes ]] || die "cannot read $routes"

if ((build)); then
  bash "$ROOT/scripts/deps.sh"
  echo "building bench_router (Release) in ${BUILD_DIR#"$ROOT"/} ..." >&2
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  { cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DHROUTE_BUILD_BENCH=ON \
      -DHROUTE_BUILD_TESTS=OFF && cmake --build "$BUILD_DIR" -j2 --target bench_router; } \
    >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "build failed"; }
fi
[[ -x $BUILD_DIR/bench_router ]] || die "no $BUILD_DIR/bench_router (drop --no-build)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs and npm (Debian) ..." >&2
  apt_get=(apt-get)
  ((EUID == 0)) || apt_get=(sudo apt-get)
  "${apt_get[@]}" update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -q nodejs npm >/dev/null
fi
if [[ ! -f $FMW_DIR/node_modules/find-my-way/package.json ]] ||
  [[ $(node -p "require('$FMW_DIR/node_modules/find-my-way/package.json').version") != "$FMW_VERSION" ]]; then
  echo "installing find-my-way $FMW_VERSION in ${FMW_DIR#"$ROOT"/} ..." >&2
  mkdir -p "$FMW_DIR"
  (cd "$FMW_DIR" && npm install --no-audit --no-fund --silent --no-save "find-my-way@$FMW_VERSION") ||
    die "npm install find-my-way@$FMW_VERSION failed"
fi

# The "whole set" median of one run's table.
# bench_router: "... lookups best median allocs"; fmw_router.js: "... lookups best median".
median_of() { awk '/^whole set/ { print (NF == 8 ? $(NF - 1) : $NF) }'; }

hr=()
fmw=()
printf '%-6s %14s %14s\n' round "hroute ns" "find-my-way ns"
for ((i = 1; i <= rounds; i++)); do
  a=$(taskset -c "$cpu" "$BUILD_DIR/bench_router" "$routes" | median_of)
  b=$(NODE_PATH=$FMW_DIR/node_modules taskset -c "$cpu" node "$ROOT/bench/fmw_router.js" "$routes" |
    median_of)
  [[ -n $a && -n $b ]] || die "a benchmark printed no whole-set line"
  hr+=("$a")
  fmw+=("$b")
  printf '%-6s %14s %14s\n' "$i" "$a" "$b"
done
mid() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
a=$(mid "${hr[@]}")
b=$(mid "${fmw[@]}")
printf '%-6s %14s %14s\n' median "$a" "$b"
awk -v a="$a" -v b="$b" 'BEGIN { printf "find-my-way / hroute: %.1fx (ns per lookup over the whole set, medians)\n", b / a }'
