/* SPDX-License-Identifier: MIT */
/*
 * Litmus tests of ra.pml, the memory model the other models use: it must
 * forbid what C11's release/acquire forbids and allow what it allows, or
 * the models prove nothing.  Run by tests/model/run.sh, one test per
 * -D flag; the assertion states the outcome that must be impossible, so
 * the "must fail" tests are those where C11 allows it:
 *   MP      message passing, release store / acquire load: the data is
 *           seen (must hold)
 *   MP_RLX  the same with a relaxed flag: stale data may be seen (must fail)
 *   SB      store buffering with release/acquire: both loads may read 0
 *           (must fail)
 *   CORR    read-read coherence: after reading the new value of a
 *           location, a thread never reads the old one again (must hold)
 */

#define NL 2
#define NT 2
#define H  2
#include "ra.pml"

#define X 0
#define Y 1

byte r1 = 9, r2 = 9;

proctype t0() {
  byte k, j;
#if defined(MP) || defined(MP_RLX)
  ra_store(0, X, 1, 0);                   /* data */
#ifdef MP
  ra_store(0, Y, 1, 1);                   /* flag, release */
#else
  ra_store(0, Y, 1, 0);                   /* flag, relaxed */
#endif
#elif defined(SB)
  ra_store(0, X, 1, 1);
  ra_load(0, Y, 1, r1);
#elif defined(CORR)
  ra_store(0, X, 1, 0)
#endif
}

proctype t1() {
  byte k, j, f;
#if defined(MP) || defined(MP_RLX)
  ra_load(1, Y, 1, f);
  if
  :: f == 1 -> ra_load(1, X, 0, r1); assert(r1 == 1)
  :: else -> skip
  fi
#elif defined(SB)
  ra_store(1, Y, 1, 1);
  ra_load(1, X, 1, r2)
#elif defined(CORR)
  ra_load(1, X, 0, r1);
  ra_load(1, X, 0, r2);
  assert(!(r1 == 1 && r2 == 0))
#endif
}

init {
  byte k, j;
  d_step { ra_init(X, 0); ra_init(Y, 0) }
  atomic { run t0(); run t1() }
  (_nr_pr == 1);
#ifdef SB
  assert(!(r1 == 0 && r2 == 0))
#endif
}
