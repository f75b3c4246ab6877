#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Model checks of hroute's concurrency protocols (tests/model/*.pml, see
# docs/concurrency.md), after litmus tests of the memory model they share
# (ra.pml): spin generates a verifier for each model, as it is
# and with each of its mutations (spin -DNAME), cc builds it, and it
# searches the whole state space (safety: assertions and invalid end
# states, that is deadlocks).  The model itself must show no error; every
# mutation, a bug the model must catch, must show one.  Prints one line per
# run, and fails when a model has an error, a mutation has none, or a search
# was cut short (depth limit).
#
# Usage: tests/model/run.sh [--keep]   (needs spin and cc)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
keep=0
[[ ${1:-} == --keep ]] && keep=1
command -v spin >/dev/null || { echo "run.sh: spin not found (scripts/deps.sh installs it)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hroute-model.XXXXXX")
((keep)) || trap 'rm -rf "$work"' EXIT

# model: the mutations it must catch, each as NAME=the assertion it must
# violate (the property of the model's header comment), or NAME=deadlock
# for one that must end in an invalid end state.
declare -A mutations=(
  [publish]="QUARKUS=v==1 NO_GRACE=hb_free RELAXED_LOAD=v==1 RELAXED_STORE=v==1 NO_REF=hb_free
             RELAXED_UNREF=hb_free"
  [persist]="FIRST_DEATH=hb_free NO_GRACE=hb_free RELAXED_STORE=v==1 RELAXED_LOAD=v==1"
  [cache]="NO_GENERATION=done GEN_FIRST=done SINGLE_BUMP=seen ODD_CACHED=seen RELAXED_GEN=done
           RELAXED_PTR=v==1 RELAXED_WORD=p!=0"
  [drain]="NO_LATE_CHECK=answer NO_CLAIM=answer ACQ_REL=answer"
  [tls]="WAIT_UNDER_LOCK=deadlock NO_GRACE=freed RELAXED_PUBLISH=v==1 REF_OUTSIDE=cfreed
         SYNC_IN_SECTION=deadlock"
  [contexts]="RETIRED_FIRST=ctx!=2 RELAXED_RETIRED=ctx!=2 NO_INFLIGHT=ctx_gen==got COUNT_AT_INVOKE=ctx_gen==1"
)

failed=0
# Runs one search; prints its line.  $1 model, $2 mutation or "" (the model
# as it is), $3 what the mutation must show: the text of the assertion it
# violates, "deadlock" (an invalid end state), or "hold" (no error) and
# "limit" (no error, though C11 allows the outcome: a limit of ra.pml).
check() {
  local model=$1 mut=$2 want=${3:-} dir out errors states verdict violated note
  dir="$work/$model${mut:+-$mut}"
  mkdir -p "$dir"
  cp "$here"/*.pml "$dir/"
  (cd "$dir" && spin ${mut:+-D$mut} -a "$model.pml" >spin.log 2>&1) ||
    { echo "FAIL $model ${mut:-(model)}: spin: $(tail -n 3 "$dir/spin.log")"; failed=1; return; }
  # -O2 pays for itself only on the models' full searches; mutations stop
  # at their first error and litmus tests are tiny: compile those fast.
  (cd "$dir" && cc "$([[ -z $mut ]] && echo -O2 || echo -O0)" -DSAFETY -w -o pan pan.c) ||
    { echo "FAIL $model ${mut:-(model)}: cc pan.c"; failed=1; return; }
  out=$(cd "$dir" && ./pan -m1000000 2>&1 || true)
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | tail -n 1)
  states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' <<<"$out" | tail -n 1)
  if grep -q "max search depth too small" <<<"$out"; then
    echo "FAIL $model ${mut:-(model)}: search cut short at the depth limit"
    failed=1
    return
  fi
  if [[ -z $mut || $want == hold || $want == limit ]]; then
    if [[ $errors == 0 ]]; then verdict=ok; else verdict=FAIL; failed=1; fi
    note=""
    [[ $want == limit ]] && note="; C11 allows the outcome, ra.pml does not (its stated limit)"
    echo "$verdict $model${mut:+ -D$mut}: errors $errors, $states states (full search)$note"
  else
    if [[ $want == deadlock ]]; then
      violated=$(grep -m1 -oE 'invalid end state.*' <<<"$out" || true)
    else
      violated=$(grep -m1 -oE 'assertion violated.*' <<<"$out" || true)
    fi
    if [[ ${errors:-0} -ge 1 && -n $violated && ( $want == deadlock || $violated == *"$want"* ) ]]; then
      verdict=ok
    else
      verdict=FAIL
      failed=1
    fi
    echo "$verdict $model -D$mut: ${violated:-no assertion violated} (want $want), $states states"
  fi
  [[ $verdict == ok ]] || sed -n '1,40p' <<<"$out"
}

# First the memory model itself (litmus.pml): what C11's release/acquire
# forbids must hold in it, what it allows must be found, but for load
# buffering, which ra.pml does not model (LB=limit: the line says so).
for m in MP=hold CORR=hold MP_RLX=r1==1 SB=r1==0 RSEQ=hold RSEQ_RLX=r1==1 LB=limit; do
  check litmus "${m%%=*}" "${m#*=}"
done
for model in publish persist cache drain tls contexts; do
  check "$model" ""
  for m in ${mutations[$model]}; do
    check "$model" "${m%%=*}" "${m#*=}"
  done
done
((keep)) && echo "work directory: $work"
exit "$failed"
