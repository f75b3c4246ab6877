#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Long local fuzzing campaigns that keep what they learn: each libFuzzer
# target of tests/fuzz runs for a bounded time from its committed corpus
# (tests/fuzz/corpus/<target>/), then what it found is merged back into
# that corpus with libFuzzer's -merge=1: the new inputs that reach edges
# the corpus does not are added, and nothing already there changes.
#
# Usage: scripts/fuzz.sh [options] [target...] [-- libFuzzer flags...]
#   target          names as in tests/fuzz/<target>.c (default: all), run
#                   one after the other
#   --time SECONDS  per target (default 600)
#   --build DIR     the clang + HROUTE_FUZZ=ON build tree (default
#                   build/fuzz, the one scripts/test.sh uses); configured
#                   and built when needed
#   --work DIR      new inputs, logs and crash artifacts (default
#                   build/fuzz-work/<date-time>); outside the clone or
#                   under build/, never in the source tree
#   --no-merge      leave tests/fuzz/corpus untouched
#   --reminimise    rewrite each corpus as the minimised union of it and
#                   the new inputs: smaller, but files may be replaced
#   -h, --help      this text
# Flags after -- go to every libFuzzer run (e.g. -- -max_len=8192).
#
# Prints per target: executions, final coverage (libFuzzer's cov and ft),
# the corpus before and after the merge (files and bytes), and each crash,
# leak, timeout or out-of-memory artifact with its path.  Exits 1 when a
# target left an artifact or libFuzzer failed.  Environment: HROUTE_JOBS
# (default 2) for the build; ASAN_OPTIONS and UBSAN_OPTIONS as test.sh's.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=600
build=build/fuzz
work=
merge=add
targets=()
extra=()

usage() { sed -n '4,30s/^# \{0,1\}//p' "$0"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --time)
      [[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -gt 0 ]] ||
        { echo "fuzz.sh: --time needs a number of seconds" >&2; exit 2; }
      seconds=$2; shift 2 ;;
    --build) [[ $# -ge 2 ]] || { echo "fuzz.sh: --build needs a directory" >&2; exit 2; }
      build=$2; shift 2 ;;
    --work) [[ $# -ge 2 ]] || { echo "fuzz.sh: --work needs a directory" >&2; exit 2; }
      work=$2; shift 2 ;;
    --no-merge) merge=none; shift ;;
    --reminimise) merge=reminimise; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "fuzz.sh: unknown option: $1 (try --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

all=()
for src in tests/fuzz/*.c; do
  all+=("$(basename "$src" .c)")
done
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=("${all[@]}")
fi
for t in "${targets[@]}"; do
  if [[ ! -f tests/fuzz/$t.c ]]; then
    echo "fuzz.sh: no target $t (there are: ${all[*]})" >&2
    exit 2
  fi
done

work=${work:-build/fuzz-work/$(date +%Y%m%d-%H%M%S)}
work=$(realpath -m "$work")
build=$(realpath -m "$build")
# Inside the clone only under a build directory (ignored by git).
case $work/ in
  "$root"/build/*|"$root"/build-*/*|"$root"/cmake-build-*/*) ;;
  "$root"/*)
    echo "fuzz.sh: the work directory must be outside the source tree or under build/: $work" >&2
    exit 2 ;;
esac
mkdir -p "$work"

# The build, as scripts/test.sh's fuzz stage configures it.
"$root/scripts/deps.sh" --fuzz
if [[ ! -f $build/CMakeCache.txt ]]; then
  CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DHROUTE_FUZZ=ON \
    -DHROUTE_WERROR=OFF -DHROUTE_BUILD_EXAMPLES=OFF -DHROUTE_BUILD_BENCH=OFF \
    -DHROUTE_BUILD_TOOLS=OFF
fi
cmake --build "$build" -j "${HROUTE_JOBS:-2}" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
[[ -f tests/lsan.supp ]] && export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp}

# "files/bytes" of a corpus directory.
corpus_size() {
  local n=0 bytes=0 f
  for f in "$1"/*; do
    [[ -f $f ]] || continue
    n=$((n + 1))
    bytes=$((bytes + $(stat -c %s "$f")))
  done
  echo "$n files/$bytes bytes"
}

# Makes corpus $1 hold the files of the merged directory $2.  libFuzzer
# names what it writes by the content's SHA-1; a file already in the corpus
# keeps its own name (hand-written seeds stay readable) and only the rest
# changes.
replace_corpus() {
  local corpus=$1 merged=$2 f sum
  local -A want=()
  for f in "$merged"/*; do
    [[ -f $f ]] && want[$(basename "$f")]=1
  done
  for f in "$corpus"/*; do
    [[ -f $f ]] || continue
    sum=$(sha1sum <"$f" | cut -d' ' -f1)
    if [[ ${want[$sum]:-} == 1 ]]; then
      want[$sum]=kept
    else
      rm -f "$f" # not needed, or a second copy
    fi
  done
  for sum in "${!want[@]}"; do
    [[ ${want[$sum]} == 1 ]] && cp "$merged/$sum" "$corpus/$sum"
  done
  return 0
}

summary=()
failed=0
for t in "${targets[@]}"; do
  bin=$build/fuzz_$t
  corpus=$root/tests/fuzz/corpus/$t
  dir=$work/$t
  mkdir -p "$corpus" "$dir/new" "$dir/artifacts"
  before=$(corpus_size "$corpus")
  printf '\n==== %s: %s s, from %s (%s) ====\n' "$t" "$seconds" "tests/fuzz/corpus/$t" "$before"

  # New inputs go to the first directory; the committed one is only read.
  rc=0
  (cd "$dir" && "$bin" -max_total_time="$seconds" -print_final_stats=1 \
     -artifact_prefix="$dir/artifacts/" "${extra[@]}" "$dir/new" "$corpus") \
    >"$dir/fuzz.log" 2>&1 || rc=$?
  tail -n 5 "$dir/fuzz.log"

  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -n 1)
  [[ -n $execs ]] || execs=$(grep -oE '^#[0-9]+' "$dir/fuzz.log" | tail -n 1 | tr -d '#' || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$dir/fuzz.log" | tail -n 1 || true)

  # Edges only (-use_counters=0): hit-count features would keep several
  # times the files, and a run from the corpus finds them again within
  # seconds.
  after=$before
  merge_rc=0
  if [[ $merge == add ]]; then
    # Into the corpus itself: libFuzzer adds the new inputs it needs.
    (cd "$dir" && "$bin" -merge=1 -use_counters=0 -artifact_prefix="$dir/artifacts/" \
       "${extra[@]}" "$corpus" "$dir/new") >"$dir/merge.log" 2>&1 || merge_rc=$?
  elif [[ $merge == reminimise ]]; then
    # A minimised union of the corpus and the new inputs, then put in the
    # corpus's place.
    rm -rf "$dir/merged"
    mkdir "$dir/merged"
    if (cd "$dir" && "$bin" -merge=1 -use_counters=0 -artifact_prefix="$dir/artifacts/" \
          "${extra[@]}" "$dir/merged" "$corpus" "$dir/new") >"$dir/merge.log" 2>&1; then
      replace_corpus "$corpus" "$dir/merged"
    else
      merge_rc=$?
    fi
  fi
  if [[ $merge_rc -ne 0 ]]; then
    echo "$t: merge failed (see $dir/merge.log)"
    failed=1
  fi
  after=$(corpus_size "$corpus")

  artifacts=()
  for f in "$dir/artifacts"/{crash,leak,timeout,oom}-*; do
    [[ -f $f ]] && artifacts+=("$f")
  done
  [[ ${#artifacts[@]} -gt 0 || $rc -ne 0 ]] && failed=1
  line="$t: ${execs:-?} execs, ${cov:-cov: ?}, corpus $before -> $after, ${#artifacts[@]} artifacts"
  [[ $rc -ne 0 && ${#artifacts[@]} -eq 0 ]] && line+=" (libFuzzer exited $rc; see $dir/fuzz.log)"
  summary+=("$line")
  for f in "${artifacts[@]}"; do
    summary+=("    $f")
  done
done

printf '\n==== summary (work: %s) ====\n' "$work"
for s in "${summary[@]}"; do
  echo "  $s"
done
exit "$failed"
