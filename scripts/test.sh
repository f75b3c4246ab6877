#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds hroute and runs its tests: the command the README and CI use.
#
# Usage: scripts/test.sh [--quick]
#
# Stages, each in its own build tree under build/:
#   test   Debug, warnings as errors; every CTest test, the install test too
#   asan   AddressSanitizer (leaks included) and UBSan; every test
#   tsan   ThreadSanitizer; only the tests labelled `stress` or `tsan`
#   fuzz   clang + libFuzzer: every tests/fuzz target for a bounded run
#   mutate scripts/mutate.sh: every concurrency mutant of tests/mutants must
#          be caught by its test (each caught mutant counts as a pass)
#   h2spec scripts/h2spec.sh: HTTP/2 conformance of examples/hello, h2c and
#          TLS (each h2spec case counts); only when Go and its libraries can
#          be installed (scripts/deps.sh --h2spec) and h2spec's source is
#          beside the repository (../shared/conformance)
# --quick runs the first stage only. Missing Debian packages are installed
# first (scripts/deps.sh). Exits non-zero when any stage fails, and ends with
# one summary line counting the tests of all stages.
#
# Environment: HROUTE_JOBS (default 2) for build and ctest parallelism.

set -euo pipefail

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h|--help) sed -n '4,21s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${HROUTE_JOBS:-2}

"$root/scripts/deps.sh" --fuzz

total_passed=0
total_failed=0
total_skipped=0
failed_stages=()
summaries=()

# Sanitizer settings for the test runs. A suppressions file is used when the
# tests directory has one.
asan_options=detect_leaks=1:abort_on_error=1
ubsan_options=print_stacktrace=1:halt_on_error=1
tsan_options=halt_on_error=1:second_deadlock_stack=1
[[ -f tests/lsan.supp ]] && export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp"
[[ -f tests/ubsan.supp ]] && ubsan_options+=":suppressions=$root/tests/ubsan.supp"
[[ -f tests/tsan.supp ]] && tsan_options+=":suppressions=$root/tests/tsan.supp"

banner() {
  printf '\n==== %s ====\n' "$*"
}

# Adds a ctest log's counts to the totals. ctest ends with
# "NN% tests passed, F tests failed out of T"; tests it skipped are listed
# with "(Skipped)" and are not counted as passed here.
count_results() {
  local stage=$1 log=$2 line failed=0 total=0 skipped passed
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=${BASH_REMATCH[1]}
    total=${BASH_REMATCH[2]}
  fi
  skipped=$(grep -c -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
  passed=$((total - failed - skipped))
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
  summaries+=("$stage: $passed passed, $failed failed, $skipped skipped")
}

# stage NAME BUILD_DIR LABEL_REGEX [cmake args...]
# Configures and builds BUILD_DIR, then runs its tests (those whose label
# matches LABEL_REGEX, or all when it is empty). A configure or build
# failure counts as one failed test and ends the script; after a test
# failure the next stage still runs.
stage() {
  local name=$1 dir=$2 labels=$3 start=$SECONDS
  shift 3
  local ctest_args=(--output-on-failure -j "$jobs" --no-tests=error)
  local targets=()
  [[ -n $labels ]] && ctest_args+=(-L "$labels")

  banner "$name: configure ($dir)"
  if ! cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DHROUTE_WERROR=ON "$@"; then
    failed_stages+=("$name (configure)")
    total_failed=$((total_failed + 1))
    return 1
  fi

  if [[ -n $labels ]]; then
    # Build only the library and the tests that will run: a test's name is
    # its target's name.
    local -a tests=()
    local t
    mapfile -t tests < <(cd "$dir" && ctest -N -L "$labels" |
                         sed -n 's/^ *Test *#[0-9]*: *//p')
    # ...except <name>_h2, the HTTP/2 run of test <name> (ctest-protocols
    # in CMakeLists.txt): <name>'s target.
    targets=()
    for t in "${tests[@]}"; do
      [[ $t == *_h2 && " ${tests[*]} " == *" ${t%_h2} "* ]] || targets+=("$t")
    done
    if [[ ${#targets[@]} -eq 0 ]]; then
      echo "$name: no tests labelled $labels; stage skipped"
      summaries+=("$name: skipped (no tests labelled $labels)")
      return 0
    fi
    targets=(--target "${targets[@]}")
  fi

  banner "$name: build"
  if ! cmake --build "$dir" -j "$jobs" "${targets[@]}"; then
    failed_stages+=("$name (build)")
    total_failed=$((total_failed + 1))
    return 1
  fi

  banner "$name: ctest ${ctest_args[*]}"
  local log="$dir/ctest.log" rc=0
  (cd "$dir" && ctest "${ctest_args[@]}") 2>&1 | tee "$log" || rc=$?
  if [[ $rc -ne 0 && $name == tsan ]] && grep -q 'unexpected memory mapping' "$log"; then
    # gcc 12's TSan cannot place its shadow memory when the kernel
    # randomises mappings with more entropy than it expects (for example
    # vm.mmap_rnd_bits = 32); with address randomisation off it works.
    echo "tsan: 'unexpected memory mapping'; running again with ASLR off (setarch -R)"
    rc=0
    (cd "$dir" && setarch "$(uname -m)" -R ctest "${ctest_args[@]}") 2>&1 | tee "$log" || rc=$?
  fi
  count_results "$name" "$log"
  if [[ $rc -ne 0 ]]; then
    failed_stages+=("$name (tests)")
    # ctest failed without a failed test to show for it (it was killed, or
    # printed no result line): count the stage itself as one failure.
    [[ ${summaries[-1]} == *" 0 failed"* ]] && total_failed=$((total_failed + 1))
  fi
  echo "$name: $((SECONDS - start)) s"
}

# The mutation check: each mutant caught counts as a passed test, each one
# that survives (or does not apply or build) as a failed one.
mutate_stage() {
  local log=build/mutate.log rc=0 start=$SECONDS line caught=0 total=0
  banner "mutate: scripts/mutate.sh"
  mkdir -p build
  HROUTE_JOBS=$jobs scripts/mutate.sh 2>&1 | tee "$log" || rc=$?
  line=$(grep -E '^mutate: [0-9]+ of [0-9]+ caught' "$log" | tail -n 1 || true)
  if [[ $line =~ ([0-9]+)\ of\ ([0-9]+) ]]; then
    caught=${BASH_REMATCH[1]}
    total=${BASH_REMATCH[2]}
  fi
  total_passed=$((total_passed + caught))
  total_failed=$((total_failed + total - caught))
  summaries+=("mutate: $caught passed, $((total - caught)) failed, 0 skipped")
  if [[ $rc -ne 0 ]]; then
    failed_stages+=("mutate")
    [[ $caught -eq $total ]] && total_failed=$((total_failed + 1))
  fi
  echo "mutate: $((SECONDS - start)) s"
}

# HTTP/2 conformance: each h2spec case passed or failed counts as a test.
# Skipped when Go cannot be installed or h2spec's source is not there.
h2spec_stage() {
  local log=build/h2spec.log rc=0 start=$SECONDS line passed=0 failed=0 skipped=0
  banner "h2spec: scripts/h2spec.sh"
  local source_dir=${H2SPEC_SOURCE_DIR:-../shared/conformance}
  if [[ ! -f $source_dir/build_h2spec.sh && -z ${H2SPEC:-} ]]; then
    summaries+=("h2spec: skipped (no $source_dir/build_h2spec.sh)")
    return 0
  fi
  if ! scripts/deps.sh --h2spec; then
    summaries+=("h2spec: skipped (Go and its libraries cannot be installed)")
    return 0
  fi
  mkdir -p build
  HROUTE_JOBS=$jobs scripts/h2spec.sh 2>&1 | tee "$log" || rc=$?
  line=$(grep -E '^h2spec: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1 || true)
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
    passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]} skipped=${BASH_REMATCH[3]}
  fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
  summaries+=("h2spec: $passed passed, $failed failed, $skipped skipped")
  if [[ $rc -ne 0 ]]; then
    failed_stages+=("h2spec")
    # It failed without a failed case to show for it (a build failure).
    [[ $failed -eq 0 ]] && total_failed=$((total_failed + 1))
  fi
  echo "h2spec: $((SECONDS - start)) s"
}

finish() {
  banner "summary"
  local s
  for s in "${summaries[@]}"; do
    echo "  $s"
  done
  if [[ ${#failed_stages[@]} -ne 0 ]]; then
    echo "  failed: ${failed_stages[*]}"
  fi
  echo "  time: $SECONDS s"
  # A stage left out (no tool, no labelled tests) says so on the last line
  # too: its count is not among the passed.
  local stage_skips=''
  for s in "${summaries[@]}"; do
    [[ $s == *": skipped ("* ]] && stage_skips+="${stage_skips:+, }${s%%:*}"
  done
  echo "summary: $total_passed passed, $total_failed failed, $total_skipped skipped${stage_skips:+; stages skipped: $stage_skips}"
  [[ ${#failed_stages[@]} -eq 0 ]]
}

run_stages() {
  stage test build/test "" || return 0
  [[ $quick -eq 1 ]] && return 0

  ASAN_OPTIONS=$asan_options UBSAN_OPTIONS=$ubsan_options \
    stage asan build/asan "" -DHROUTE_SANITIZE=address,undefined -DHROUTE_BUILD_BENCH=OFF ||
    return 0

  TSAN_OPTIONS=$tsan_options \
    stage tsan build/tsan '^(stress|tsan)$' -DHROUTE_SANITIZE=thread \
      -DHROUTE_BUILD_EXAMPLES=ON -DHROUTE_BUILD_BENCH=OFF -DHROUTE_BUILD_TOOLS=OFF ||
    return 0

  # libFuzzer targets (clang only), each for HROUTE_FUZZ_RUNS inputs.
  if command -v clang >/dev/null 2>&1; then
    CC=clang ASAN_OPTIONS=$asan_options UBSAN_OPTIONS=$ubsan_options \
      stage fuzz build/fuzz '^fuzz$' -DHROUTE_FUZZ=ON -DHROUTE_WERROR=OFF \
        -DHROUTE_BUILD_EXAMPLES=OFF -DHROUTE_BUILD_BENCH=OFF -DHROUTE_BUILD_TOOLS=OFF ||
      return 0
  else
    summaries+=("fuzz: skipped (no clang)")
  fi

  mutate_stage
  h2spec_stage
}

run_stages
finish
