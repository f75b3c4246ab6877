#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Runs tests/tsan/call_rcu_edges.c four ways under ThreadSanitizer with the
# project's suppressions: "ok" must run clean, "early" (a read after the
# read-side section, freed by the call_rcu thread) must be reported, and so
# must "later" (the same read, then a section the grace period did not wait
# for).
#
# Usage: call_rcu_edges.sh PROGRAM SUPPRESSIONS
set -uo pipefail
prog=$1 supp=$2
opts="halt_on_error=1:exitcode=66:suppressions=$supp"
run() { TSAN_OPTIONS=$opts "$prog" "$1" 2>&1; }
if [[ $(uname -m) == x86_64 ]] && ! run ok >/dev/null 2>&1 && run ok | grep -q 'unexpected memory mapping'; then
  run() { TSAN_OPTIONS=$opts setarch "$(uname -m)" -R "$prog" "$1" 2>&1; }
fi
out=$(run ok); rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL: the correct program was reported (exit $rc):"; echo "$out"; exit 1
fi
echo "ok: the correct use of call_rcu runs clean"
out=$(run busy); rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL: the correct program with 2,000 other reclamations in flight was reported (exit $rc):"
  echo "$out"; exit 1
fi
echo "ok: so does it with 2,000 other reclamations in flight"
out=$(run early); rc=$?
if [[ $rc -ne 66 ]] || ! grep -qE 'ThreadSanitizer: (data race|heap-use-after-free)' <<<"$out"; then
  echo "FAIL: the early free through call_rcu was not reported (exit $rc):"; echo "$out"; exit 1
fi
echo "ok: the early free through call_rcu was reported:"
grep -m1 -E 'ThreadSanitizer: (data race|heap-use-after-free)' <<<"$out"
out=$(run later); rc=$?
if [[ $rc -ne 66 ]] || ! grep -qE 'ThreadSanitizer: (data race|heap-use-after-free)' <<<"$out"; then
  echo "FAIL: the read after the section, followed by a section the grace period did not"
  echo "wait for, was not reported (exit $rc):"; echo "$out"; exit 1
fi
echo "ok: the read after the section was reported, a later section notwithstanding:"
grep -m1 -E 'ThreadSanitizer: (data race|heap-use-after-free)' <<<"$out"
