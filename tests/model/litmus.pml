/* SPDX-License-Identifier: MIT */
/*
 * Litmus tests of ra.pml, the memory model the other models use: it must
 * forbid what C11's release/acquire forbids and allow what it allows, or
 * the models prove nothing.  Run by tests/model/run.sh, one test per
 * -D flag; the assertion states the outcome that must be impossible, so
 * the "must fail" tests are those where C11 allows it:
 *   MP       message passing, release store / acquire load: the data is
 *            seen (must hold)
 *   MP_RLX   the same with a relaxed flag: stale data may be seen (must
 *            fail)
 *   SB       store buffering with release/acquire: both loads may read 0
 *            (must fail)
 *   CORR     read-read coherence: after reading the new value of a
 *            location, a thread never reads the old one again (must hold)
 *   RSEQ     a release sequence: a release store of the flag, then a
 *            relaxed fetch_add of it by another thread; an acquire load
 *            that reads the fetch_add's value sees the data written before
 *            the release store (must hold)
 *   RSEQ_RLX the same with a relaxed store of the flag: no release
 *            sequence, stale data may be seen (must fail)
 *   LB       load buffering with relaxed accesses: C11 allows both loads
 *            to read the other thread's later store; ra.pml does not (its
 *            stated limit, see ra.pml): the test holds, and run.sh says so
 */

#define NL 2
#define NT 3
#define H  3
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
#elif defined(RSEQ) || defined(RSEQ_RLX)
  ra_store(0, X, 1, 0);                   /* data */
#ifdef RSEQ
  ra_store(0, Y, 1, 1);                   /* flag, release: heads the sequence */
#else
  ra_store(0, Y, 1, 0);                   /* flag, relaxed */
#endif
#elif defined(SB)
  ra_store(0, X, 1, 1);
  ra_load(0, Y, 1, r1);
#elif defined(CORR)
  ra_store(0, X, 1, 0)
#elif defined(LB)
  ra_load(0, X, 0, r1);
  ra_store(0, Y, 1, 0)
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
#elif defined(RSEQ) || defined(RSEQ_RLX)
  ra_rmw_add(1, Y, 1, 0, 0, f);           /* relaxed fetch_add */
#elif defined(SB)
  ra_store(1, Y, 1, 1);
  ra_load(1, X, 1, r2)
#elif defined(CORR)
  ra_load(1, X, 0, r1);
  ra_load(1, X, 0, r2);
  assert(!(r1 == 1 && r2 == 0))
#elif defined(LB)
  ra_load(1, Y, 0, r2);
  ra_store(1, X, 1, 0)
#endif
}

proctype t2() {
  byte k, j, f;
#if defined(RSEQ) || defined(RSEQ_RLX)
  ra_load(2, Y, 1, f);                    /* acquire */
  if
  :: f == 2 -> ra_load(2, X, 0, r1); assert(r1 == 1)
  :: else -> skip
  fi
#endif
}

init {
  byte k, j;
  d_step { ra_init(X, 0); ra_init(Y, 0) }
  atomic { run t0(); run t1(); run t2() }
  (_nr_pr == 1);
#ifdef SB
  assert(!(r1 == 0 && r2 == 0))
#elif defined(LB)
  assert(!(r1 == 1 && r2 == 1))
#endif
}
