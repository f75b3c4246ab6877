#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Router lookups side by side: hroute's bench_router, the same measurement for
# find-my-way (bench/fmw_router.js, Node.js) and, when they are available,
# matchit (Rust) and httprouter (Go), on one routes file, pinned to one CPU,
# in alternating rounds so that all of them see the same machine load.
# Prints each round's medians, then the median over the rounds of each,
# hroute's ratio to each peer (the median of the per-round ratios; below 1
# hroute is faster) and, as before, find-my-way / hroute of the medians.
#
# Usage: bench/router_compare.sh [--rounds N] [--cpu C] [--no-build]
#                                [--matchit GIT_DIR] [ROUTES_FILE]
#   --rounds N         alternating rounds (default 3)
#   --cpu C            the CPU all of them run on, one after the other (default 1)
#   --no-build         use the existing build/release/bench_router
#   --matchit GIT_DIR  a git dir of matchit; its HEAD's src/ is compiled
#                      (default $MATCHIT_GIT_DIR, else
#                      /work/.mirror/ibraheemdev+matchit/repo if it exists)
#   ROUTES_FILE        "METHOD pattern  # path" lines (default bench/github_routes.txt)
#
# Installs what is missing: the Debian build packages (scripts/deps.sh),
# nodejs and npm when there is no node, and find-my-way at a pinned version
# under build/fmw (from the npm registry).
#
# matchit and httprouter run the harnesses in ../shared/bench/router_peers
# (matchit_bench.rs, httprouter_bench.go, read from there, not copied), built
# once into build/router_peers: matchit with ${RUSTC:-~/.cargo/bin/rustc} from
# `git archive HEAD src` of GIT_DIR, unpacked in a temporary directory that
# is removed on exit; httprouter with GOPATH=/usr/share/gocode
# GO111MODULE=off go build (Debian golang-go and
# golang-github-julienschmidt-httprouter-dev, not installed by this script).
# A peer whose tools or sources are missing is skipped with a note.  Both
# harnesses take a route list and a path list (each route's "# path"), look
# the paths up in file order with no method (httprouter: every route and
# every lookup is GET) and print the median of 9 passes.  So a file with
# methods other than GET is not fed to them, httprouter is not given a
# literal ':' ("::"), and a peer that rejects the route set (a conflict, a
# path reaching another route) is dropped with a note.  For matchit ":name"
# becomes "{name}", "*name" "{*name}", and '{' '}' are doubled.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=$ROOT/build/release
FMW_DIR=$ROOT/build/fmw
FMW_VERSION=9.10.2
PEER_SRC=$ROOT/../shared/bench/router_peers
PEER_BIN=$ROOT/build/router_peers
MATCHIT_DEFAULT=/work/.mirror/ibraheemdev+matchit/repo
GOPATH_DEB=/usr/share/gocode
RUSTC=${RUSTC:-$HOME/.cargo/bin/rustc}
rounds=3
cpu=1
build=1
routes=$ROOT/bench/github_routes.txt
matchit_git=${MATCHIT_GIT_DIR:-}

die() { echo "router_compare: $*" >&2; exit 1; }

while (($#)); do
  case $1 in
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --cpu) cpu=${2:?--cpu needs a CPU number}; shift 2 ;;
    --no-build) build=0; shift ;;
    --matchit) matchit_git=${2:?--matchit needs a git dir}; shift 2 ;;
    -h|--help) sed -n '4,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) die "unknown option: $1 (try --help)" ;;
    *) routes=$1; shift ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds: not a positive number: $rounds"
[[ $cpu =~ ^[0-9]+$ ]] || die "--cpu: not a CPU number: $cpu"
[[ -r $routes ]] || die "cannot read $routes"
if [[ -z $matchit_git && -d $MATCHIT_DEFAULT ]]; then matchit_git=$MATCHIT_DEFAULT; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/build.log

if ((build)); then
  bash "$ROOT/scripts/deps.sh"
  echo "building bench_router (Release) in ${BUILD_DIR#"$ROOT"/} ..." >&2
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

# ---- the peers: matchit and httprouter ------------------------------------
# skip[P] holds why peer P does not run (empty: it runs); bin[P] its binary.
peers=(matchit httprouter)
declare -A skip=() bin=()
note() { echo "note: $*"; }

# Their inputs, read as bench_router and fmw_router.js read the routes file:
# "METHOD pattern" before a '#', the path is the first word after it, lines
# with no words before the '#' are comments.  Writes the GET-only check, the
# route lists in each peer's syntax and the path list.
awk -v dir="$work" '
  function seg_matchit(s) {
    if (s ~ /^:[^:]/) return "{" substr(s, 2) "}"
    if (s ~ /^\*/) return "{*" substr(s, 2) "}"
    gsub(/::/, ":", s); gsub(/[{]/, "{{", s); gsub(/[}]/, "}}", s)
    return s
  }
  {
    line = $0; h = index(line, "#")
    head = h ? substr(line, 1, h - 1) : line
    n = split(head, w, /[ \t\r]+/); k = 0
    for (i = 1; i <= n; i++) if (w[i] != "") v[++k] = w[i]
    if (k == 0) next
    split(h ? substr(line, h + 1) : "", t, /[ \t\r]+/)
    path = (t[1] != "") ? t[1] : t[2]
    if (k != 2 || substr(path, 1, 1) != "/") { bad = bad ? bad : NR; next }
    if (v[1] != "GET") other[v[1]] = 1
    if (index(v[2], "::")) colon = colon ? colon : NR
    m = ""; ns = split(v[2], s, "/")
    for (i = 1; i <= ns; i++) m = m (i > 1 ? "/" : "") seg_matchit(s[i])
    print v[2] > (dir "/httprouter.routes")
    print m > (dir "/matchit.routes")
    print path > (dir "/paths")
    count++
  }
  END {
    for (x in other) methods = methods (methods ? ", " : "") x
    printf "%s\n%s\n%s\n%d\n", bad, methods, colon, count > (dir "/facts")
  }' "$routes"
{ read -r bad; read -r methods; read -r colon; read -r count; } <"$work/facts"
file_skip=
if [[ -n $bad ]]; then
  file_skip="line $bad of ${routes#"$ROOT"/} is not \"METHOD pattern  # path\""
elif ((count == 0)); then
  file_skip="no routes in ${routes#"$ROOT"/}"
elif [[ -n $methods ]]; then
  file_skip="${routes#"$ROOT"/} has methods other than GET ($methods); the peer harnesses look paths up without a method"
fi

if [[ ! -d $PEER_SRC ]]; then
  for p in "${peers[@]}"; do skip[$p]="no $PEER_SRC (its bench programs)"; done
fi

# matchit: compiled from GIT_DIR's HEAD; the binary is named by that commit,
# so it is rebuilt only when missing.
if [[ -z ${skip[matchit]:-} ]]; then
  if [[ -z $matchit_git ]]; then
    skip[matchit]="no matchit git dir (--matchit GIT_DIR or MATCHIT_GIT_DIR)"
  elif ! rev=$(git --git-dir="$matchit_git" rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null); then
    skip[matchit]="$matchit_git is not a git dir with a HEAD commit"
  elif [[ ! -x $RUSTC ]]; then
    skip[matchit]="no rustc at $RUSTC (set RUSTC)"
  elif [[ ! -r $PEER_SRC/matchit_bench.rs ]]; then
    skip[matchit]="no $PEER_SRC/matchit_bench.rs"
  else
    bin[matchit]=$PEER_BIN/matchit_bench-${rev:0:12}
    if [[ ! -x ${bin[matchit]} ]]; then
      echo "building matchit ${rev:0:12} and matchit_bench.rs in ${PEER_BIN#"$ROOT"/} ..." >&2
      mkdir -p "$PEER_BIN" "$work/matchit"
      if ! { git --git-dir="$matchit_git" archive HEAD src | tar -x -C "$work/matchit" &&
        "$RUSTC" --edition 2021 -C opt-level=3 -C codegen-units=1 --crate-type rlib \
          --crate-name matchit "$work/matchit/src/lib.rs" -o "$work/libmatchit.rlib" &&
        "$RUSTC" --edition 2021 -C opt-level=3 -C codegen-units=1 \
          --extern matchit="$work/libmatchit.rlib" "$PEER_SRC/matchit_bench.rs" \
          -o "$work/matchit_bench"; } >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        skip[matchit]="its build failed (above)"
      else
        mv "$work/matchit_bench" "${bin[matchit]}"
      fi
    fi
  fi
fi

# httprouter: Debian's Go and Debian's httprouter sources, GOPATH mode.
if [[ -z ${skip[httprouter]:-} ]]; then
  if ! command -v go >/dev/null 2>&1; then
    skip[httprouter]="no go (Debian golang-go)"
  elif [[ ! -d $GOPATH_DEB/src/github.com/julienschmidt/httprouter ]]; then
    skip[httprouter]="no $GOPATH_DEB/src/github.com/julienschmidt/httprouter (Debian golang-github-julienschmidt-httprouter-dev)"
  elif [[ ! -r $PEER_SRC/httprouter_bench.go ]]; then
    skip[httprouter]="no $PEER_SRC/httprouter_bench.go"
  else
    bin[httprouter]=$PEER_BIN/httprouter_bench
    if [[ ! -x ${bin[httprouter]} ]]; then
      echo "building httprouter_bench.go in ${PEER_BIN#"$ROOT"/} ..." >&2
      mkdir -p "$PEER_BIN"
      if ! (cd "$work" && GOPATH=$GOPATH_DEB GO111MODULE=off \
        go build -o "$work/httprouter_bench" "$PEER_SRC/httprouter_bench.go") >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        skip[httprouter]="its build failed (above)"
      else
        mv "$work/httprouter_bench" "${bin[httprouter]}"
      fi
    fi
  fi
fi

for p in "${peers[@]}"; do
  if [[ -z ${skip[$p]:-} && -n $file_skip ]]; then skip[$p]="not for this file: $file_skip"; fi
done
if [[ -z ${skip[httprouter]:-} && -n $colon ]]; then
  skip[httprouter]="not for this file: line $colon has a literal ':' (\"::\"), which httprouter reads as a parameter"
fi
for p in "${peers[@]}"; do
  if [[ -n ${skip[$p]:-} ]]; then note "$p skipped: ${skip[$p]}"; fi
done

# ---- the rounds -----------------------------------------------------------
# The "whole set" median of one run's table.
# bench_router: "... lookups best median allocs"; fmw_router.js: "... lookups best median".
median_of() { awk '/^whole set/ { print (NF == 8 ? $(NF - 1) : $NF) }'; }
# A peer harness: "<name> N routes: best X ns, median Y ns per lookup".
peer_median() { awk '/ per lookup$/ { print $(NF - 3) }'; }

# One run of peer $1 into ${got}; on a failure it is dropped with its reason.
run_peer() {
  local p=$1 out
  got=-
  [[ -z ${skip[$p]:-} ]] || return 0
  if out=$(RUST_BACKTRACE=0 taskset -c "$cpu" "${bin[$p]}" "$work/$p.routes" "$work/paths" 2>"$work/$p.err") &&
    got=$(peer_median <<<"$out") && [[ -n $got ]]; then
    return 0
  fi
  got=failed
  # its first line of error (a Rust panic: the line after "thread 'main' panicked at")
  out=$(awk 'NF { if (n++ || !/^thread /) { print; exit } }' "$work/$p.err" | cut -c1-200)
  skip[$p]="failed in round $i: ${out:-no median line}"
  failed_notes+=("$p dropped: ${skip[$p]}")
}

cols=(hroute matchit httprouter find-my-way)
declare -A runs=()
failed_notes=()
row() { printf '%-6s' "$1"; shift; printf ' %14s' "$@"; printf '\n'; }
row round "hroute ns" "matchit ns" "httprouter ns" "find-my-way ns"
for ((i = 1; i <= rounds; i++)); do
  a=$(taskset -c "$cpu" "$BUILD_DIR/bench_router" "$routes" | median_of) ||
    die "bench_router failed on $routes"
  [[ -n $a ]] || die "bench_router printed no whole-set line"
  run_peer matchit
  m=$got
  run_peer httprouter
  g=$got
  b=$(NODE_PATH=$FMW_DIR/node_modules taskset -c "$cpu" node "$ROOT/bench/fmw_router.js" "$routes" |
    median_of) || die "fmw_router.js failed on $routes"
  [[ -n $b ]] || die "fmw_router.js printed no whole-set line"
  runs[hroute]+=" $a"
  runs[matchit]+=" $m"
  runs[httprouter]+=" $g"
  runs[find-my-way]+=" $b"
  row "$i" "$a" "$m" "$g" "$b"
done

mid() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
med=()
# shellcheck disable=SC2086
for c in "${cols[@]}"; do
  if [[ -n ${skip[$c]:-} ]]; then med+=(-); else med+=("$(mid ${runs[$c]})"); fi
done
row median "${med[@]}"
for n in "${failed_notes[@]}"; do note "$n"; done

# hroute / peer: the median over the rounds of each round's ratio.
read -ra hr <<<"${runs[hroute]}"
for c in matchit httprouter find-my-way; do
  if [[ -n ${skip[$c]:-} ]]; then
    if [[ ${skip[$c]} == failed* ]]; then echo "ratio hroute/$c: - (failed)"; else echo "ratio hroute/$c: - (skipped)"; fi
    continue
  fi
  read -ra pv <<<"${runs[$c]}"
  rs=()
  for ((k = 0; k < ${#hr[@]}; k++)); do
    rs+=("$(awk -v a="${hr[k]}" -v b="${pv[k]}" 'BEGIN { printf "%.4f", a / b }')")
  done
  awk -v r="$(mid "${rs[@]}")" -v n="${#rs[@]}" -v c="$c" \
    'BEGIN { printf "ratio hroute/%s: %.2f (median over %d round%s of hroute ns / %s ns)\n", c, r, n, (n > 1 ? "s" : ""), c }'
done
a=${med[0]}
b=${med[3]}
awk -v a="$a" -v b="$b" 'BEGIN { printf "find-my-way / hroute: %.1fx (ns per lookup over the whole set, medians)\n", b / a }'
