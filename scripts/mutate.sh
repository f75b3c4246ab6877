#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Mutation check of hroute's concurrency code: every mutant in
# tests/mutants/*.patch is a bug a test of the C must catch. For each, the
# harness applies the patch to a copy of the tree, rebuilds the one test
# its header names in the build its header names (debug: Debug with
# assertions; asan: AddressSanitizer; tsan: ThreadSanitizer), runs it, and
# reverts the patch. A
# mutant is caught when the test fails (an assertion, a TSan report, a
# watchdog); one that survives, does not apply or does not build fails the
# run. The unmutated tests must pass first. Ends with "N of M caught".
#
# Usage: scripts/mutate.sh [--keep] [NAME...]   (NAME: tests/mutants/NAME.patch)
# Environment: HROUTE_JOBS (default 2).
#
# A patch starts with comment lines:
#   # what: the bug, in words
#   # build: debug | asan | tsan
#   # test: the ctest/target name that must catch it
#   # mirrors: the model mutation it is the C twin of (tests/model), or none
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${HROUTE_JOBS:-2}
keep=0
names=()
for arg in "$@"; do
  case $arg in
    --keep) keep=1 ;;
    -h|--help) sed -n '4,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "mutate.sh: unknown option $arg" >&2; exit 2 ;;
    *) names+=("$arg") ;;
  esac
done
if [[ ${#names[@]} -eq 0 ]]; then
  for p in "$root"/tests/mutants/*.patch; do names+=("$(basename "$p" .patch)"); done
fi

work=${HROUTE_MUTATE_DIR:-$root/build/mutate}
tree=$work/tree
mkdir -p "$work"
rm -rf "$tree"
mkdir -p "$tree"
# The working tree as it is (tracked and new files), not build output.
(cd "$root" && git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t "$tree")

field() { sed -n "s/^# $2: *//p" "$1" | head -n 1; }

tsan_options="halt_on_error=1:second_deadlock_stack=1:exitcode=66:suppressions=$tree/tests/tsan.supp"
# A mutant may leak what it frees too early or too late: use-after-free is
# what is looked for.
asan_options="detect_leaks=0:abort_on_error=1"
setarch_prefix=()

configure() {
  local kind=$1 dir=$work/$1 args=(-DCMAKE_BUILD_TYPE=Debug -DHROUTE_TESTPOINTS=ON
    -DHROUTE_BUILD_EXAMPLES=OFF -DHROUTE_BUILD_BENCH=OFF -DHROUTE_BUILD_TOOLS=OFF)
  [[ $kind == tsan ]] && args+=(-DHROUTE_SANITIZE=thread)
  [[ $kind == asan ]] && args+=(-DHROUTE_SANITIZE=address,undefined)
  cmake -S "$tree" -B "$dir" "${args[@]}" >"$work/$kind.configure.log" 2>&1
}

# run KIND TEST: runs the test binary; prints its exit code.
run_test() {
  local kind=$1 test=$2 log=$3 rc
  (cd "$work/$kind" &&
    TSAN_OPTIONS=$tsan_options ASAN_OPTIONS=$asan_options CMOCKA_MESSAGE_OUTPUT=STDOUT \
    timeout 300 "${setarch_prefix[@]}" "./$test") >"$log" 2>&1
  rc=$?
  echo "$rc"
}

declare -A kinds=() tests_of=()
for n in "${names[@]}"; do
  p=$root/tests/mutants/$n.patch
  [[ -f $p ]] || { echo "mutate.sh: no $p" >&2; exit 2; }
  k=$(field "$p" build) t=$(field "$p" test)
  [[ $k == debug || $k == asan || $k == tsan ]] ||
    { echo "mutate.sh: $n: build must be debug, asan or tsan" >&2; exit 2; }
  kinds[$k]=1
  tests_of[$k]+=" $t"
done

failed=0
start=$SECONDS
for k in "${!kinds[@]}"; do
  read -r -a ts <<<"$(tr ' ' '\n' <<<"${tests_of[$k]}" | sort -u | tr '\n' ' ')"
  echo "mutate: $k build, baseline: ${ts[*]}"
  configure "$k" || { echo "FAIL $k: configure (see $work/$k.configure.log)"; exit 1; }
  if ! cmake --build "$work/$k" -j "$jobs" --target "${ts[@]}" >"$work/$k.build.log" 2>&1; then
    echo "FAIL $k: build (see $work/$k.build.log)"; exit 1
  fi
  for t in "${ts[@]}"; do
    rc=$(run_test "$k" "$t" "$work/$k.$t.baseline.log")
    if [[ $k == tsan && $rc -ne 0 ]] && grep -q 'unexpected memory mapping' "$work/$k.$t.baseline.log"; then
      setarch_prefix=(setarch "$(uname -m)" -R)
      rc=$(run_test "$k" "$t" "$work/$k.$t.baseline.log")
    fi
    if [[ $rc -ne 0 ]]; then
      echo "FAIL baseline $k $t: exit $rc (see $work/$k.$t.baseline.log)"; exit 1
    fi
  done
done

caught=0
printf '%-24s %-6s %-22s %-28s %s\n' mutant build test mirrors result
for n in "${names[@]}"; do
  p=$root/tests/mutants/$n.patch
  k=$(field "$p" build) t=$(field "$p" test) m=$(field "$p" mirrors)
  log=$work/$k.$n.log
  if ! patch -s -p1 -d "$tree" --dry-run <"$p" >/dev/null 2>&1; then
    result="FAIL: the patch does not apply"
    failed=1
  else
    patch -s -p1 -d "$tree" <"$p"
    if ! cmake --build "$work/$k" -j "$jobs" --target "$t" >"$log.build" 2>&1; then
      result="FAIL: the mutant does not build (see $log.build)"
      failed=1
    else
      rc=$(run_test "$k" "$t" "$log")
      if [[ $rc -eq 0 ]]; then
        result="SURVIVED (see $log)"
        failed=1
      else
        how="test failed"
        grep -q 'ThreadSanitizer: data race' "$log" && how="TSan: data race"
        grep -q 'ThreadSanitizer: heap-use-after-free' "$log" && how="TSan: heap-use-after-free"
        grep -q 'AddressSanitizer: heap-use-after-free' "$log" && how="ASan: heap-use-after-free"
        grep -q 'AddressSanitizer: attempting double-free' "$log" && how="ASan: double free"
        grep -q 'Assertion .* failed' "$log" && how="assertion"
        grep -q '^watchdog:' "$log" && how="watchdog (deadlock)"
        [[ $rc -eq 124 ]] && how="timeout"
        result="caught ($how)"
        caught=$((caught + 1))
      fi
    fi
    patch -s -R -p1 -d "$tree" <"$p"
  fi
  printf '%-24s %-6s %-22s %-28s %s\n' "$n" "$k" "$t" "${m%% (*}" "$result"
done
((keep)) || rm -rf "$tree"
echo "mutate: $caught of ${#names[@]} caught in $((SECONDS - start)) s"
[[ $failed -eq 0 ]]
