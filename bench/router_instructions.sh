#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/router_instructions.sh: instructions per lookup, hroute against
# matchit, counted by valgrind's callgrind: the noise-proof figure beside
# the times of bench/router_compare.sh (the machine has no hardware
# counters, and its time is shared).
#
# Route set: matchit's own 130 GitHub API routes
# (../shared/bench/router_peers/github130.routes, "GET pattern  # path").
# hroute: build/release/bench_router --passes N (hr_router_match with the
# method, GET, and an empty Host, as the timed runs); matchit:
# bench/peers/matchit_count.rs (Router::at on the path), compiled with
# ${RUSTC:-~/.cargo/bin/rustc} against `git archive HEAD src` of a matchit
# git dir, in a temporary directory.  Each program runs under callgrind
# twice, with N passes over the set and with 0: the difference of the two
# totals (event Ir), divided by N x 130, is what one lookup executes, loop
# included; loading, checking and start-up cancel out.
#
# Usage: bench/router_instructions.sh [--passes N] [--matchit GIT_DIR] [--no-build]
#   --passes N         passes over the set in the counted run (default 200)
#   --matchit GIT_DIR  a git dir of matchit (default $MATCHIT_GIT_DIR, else
#                      /work/.mirror/ibraheemdev+matchit/repo); without one
#                      only hroute is counted
#   --no-build         use the existing build/release/bench_router
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SET=$ROOT/../shared/bench/router_peers/github130.routes
RUSTC=${RUSTC:-$HOME/.cargo/bin/rustc}
PASSES=200
MATCHIT_GIT=${MATCHIT_GIT_DIR:-/work/.mirror/ibraheemdev+matchit/repo}
BUILD=1

die() { echo "router_instructions: $*" >&2; exit 1; }
while (($#)); do
  case $1 in
    --passes) PASSES=${2:?--passes needs a count}; shift 2 ;;
    --matchit) MATCHIT_GIT=${2:?--matchit needs a git dir}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '4,24s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $PASSES =~ ^[1-9][0-9]*$ ]] || die "--passes must be a positive count"
command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"
[[ -r $SET ]] || die "no $SET (the route set)"

if ((BUILD)); then
  "$ROOT/scripts/deps.sh" >/dev/null
  cmake -S "$ROOT" -B "$ROOT/build/release" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$ROOT/build/release" -j "$(nproc)" --target bench_router >/dev/null
fi
BR=$ROOT/build/release/bench_router
[[ -x $BR ]] || die "no $BR (run without --no-build)"

work=$(mktemp -d "${TMPDIR:-/tmp}/router_instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT
grep -v '^#' "$SET" > "$work/set.routes"
sed -n 's/^GET \([^ ]*\).*/\1/p' "$work/set.routes" |
  sed -E 's/:([A-Za-z0-9_]+)/{\1}/g; s/\*([A-Za-z0-9_]+)/{*\1}/g' > "$work/matchit.routes"
sed -n 's/.*# \(.*\)$/\1/p' "$work/set.routes" > "$work/paths.txt"
lookups=$(wc -l < "$work/paths.txt")

# Total instructions (Ir) of one callgrind run of "$@".
ir() {
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" >"$work/run.log" 2>&1 ||
    { tail -n 20 "$work/run.log" >&2; die "failed under callgrind: $*"; }
  awk '/^(totals|summary):/ {print $2; exit}' "$work/cg.out"
}
# Instructions per lookup from the totals of N passes and of 0.
per_lookup() {
  awk -v a="$1" -v b="$2" -v n="$((PASSES * lookups))" 'BEGIN {printf "%.1f", (a - b) / n}'
}

echo "router_instructions: $lookups routes and lookups, $PASSES passes; callgrind ..." >&2
h=$(per_lookup "$(ir "$BR" --passes "$PASSES" "$work/set.routes")" \
  "$(ir "$BR" --passes 0 "$work/set.routes")")
m=
if [[ -x $RUSTC && -n $(git --git-dir="$MATCHIT_GIT" rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null) ]]; then
  mkdir -p "$work/matchit"
  git --git-dir="$MATCHIT_GIT" archive HEAD src | tar -x -C "$work/matchit"
  "$RUSTC" --edition 2021 -C opt-level=3 -C codegen-units=1 --crate-type rlib \
    --crate-name matchit "$work/matchit/src/lib.rs" -o "$work/libmatchit.rlib"
  "$RUSTC" --edition 2021 -C opt-level=3 -C codegen-units=1 --extern matchit="$work/libmatchit.rlib" \
    "$ROOT/bench/peers/matchit_count.rs" -o "$work/matchit_count"
  m=$(per_lookup "$(ir "$work/matchit_count" "$work/matchit.routes" "$work/paths.txt" "$PASSES")" \
    "$(ir "$work/matchit_count" "$work/matchit.routes" "$work/paths.txt" 0)")
else
  echo "router_instructions: matchit skipped (no rustc at $RUSTC or no git dir $MATCHIT_GIT)" >&2
fi
echo "instructions per lookup (callgrind Ir, $lookups GitHub routes, $PASSES passes):"
printf '  hroute   %8s  (hr_router_match: method GET, path)\n' "$h"
if [[ -n $m ]]; then
  printf '  matchit  %8s  (Router::at: path)\n' "$m"
  awk -v h="$h" -v m="$m" 'BEGIN {printf "  hroute/matchit %.2f (goal <= 0.80)\n", h / m}'
fi
