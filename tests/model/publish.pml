/* SPDX-License-Identifier: MIT */
/*
 * Route table publication and reclamation (src/router/router.c), model (a)
 * of issue 15; run by tests/model/run.sh.
 *
 * A writer builds a table no reader can reach, fills it, publishes it with
 * one release store of the table pointer (publish()), and hands the old
 * table to call_rcu: after a grace period the old table is freed and drops
 * its reference on its invoker (hr__invoker_unref).  Readers run inside an
 * RCU read-side critical section (the server's processing step,
 * hr_router_match): they load the pointer with acquire, read the table and
 * the invoker it points at, and a request that outlives its section (an
 * asynchronous handler) takes a reference on its invoker before the
 * section ends (hr__invoker_ref in hr__conn_drop_exchange) and drops it
 * later; the last reference frees the invoker.
 *
 * Abstractions: a table is one location holding "complete or not" (the
 * whole frozen block and the invokers it names are written before the
 * pointer; one location stands for all of them), table i has invoker i,
 * the writer waits for the grace period itself (call_rcu runs the same
 * free on another thread after the same grace period), reference counts
 * are atomic read-modify-writes (acq_rel in the code: one total order),
 * and freed memory is a ghost flag checked at every access.  Bounds: two
 * publications, two readers: one makes a request that holds its invoker
 * past its section, the other two requests in two sections.
 *
 * Properties (assertions; Spin also reports deadlocks as invalid end
 * states):
 *   P1 no reader reads a table field that was not complete when the table
 *      was published (the Quarkus bug);
 *   P2 no reader touches a freed table or a freed invoker;
 *   P3 when everything has finished, every retired table and its invoker
 *      are freed, and the current table and its invoker are not (no leak,
 *      no premature free).
 *
 * Mutations (spin -D...), each of which must violate a property:
 *   QUARKUS        publish, then fill (P1)
 *   NO_GRACE       free the old table without waiting for a grace period (P2)
 *   RELAXED_LOAD   the reader's load of the pointer is relaxed, not acquire (P1)
 *   RELAXED_STORE  the writer's store of the pointer is relaxed, not release (P1)
 *   NO_REF         the request that outlives its section takes no reference (P2)
 */

#define NL 4   /* locations: the table pointer, then table 0..2 */
#define NT 3   /* threads: the writer, two readers */
#define H  3   /* writes per location at most */
#include "ra.pml"

#define TP      0
#define TABLE(i) (1 + (i))
#define GARBAGE 0
#define COMPLETE 1

#ifdef RELAXED_LOAD
#define ACQ 0
#else
#define ACQ 1
#endif
#ifdef RELAXED_STORE
#define REL 0
#else
#define REL 1
#endif

bool tfreed[3];  /* ghost: table i freed */
bool ifreed[3];  /* ghost: invoker i freed */
byte rc[3];      /* invoker i's reference count */

/* RCU (liburcu's guarantees, not its implementation): a grace period
 * waits for every read-side section that had begun when it began, and a
 * section that begins after a grace period began sees every write the
 * writer made before it (gp_view). */
bool in_cs[NT];
bool waiting[NT];
byte gp_view[NL];

inline rcu_read_lock(t) {
  d_step {
    in_cs[t] = 1;
    for (j : 0 .. NL - 1) {
      if
      :: gp_view[j] > view[t * NL + j] -> view[t * NL + j] = gp_view[j]
      :: else -> skip
      fi
    }
  }
}

inline rcu_read_unlock(t) {
  d_step { in_cs[t] = 0; waiting[t] = 0 }
}

inline synchronize_rcu(t) {
  d_step {
    for (j : 0 .. NT - 1) { waiting[j] = in_cs[j] }
    for (j : 0 .. NL - 1) { gp_view[j] = view[t * NL + j] }
  }
  (waiting[1] == 0 && waiting[2] == 0)
}

inline unref(i) {
  d_step {
    assert(rc[i] > 0);
    rc[i]--;
    if
    :: rc[i] == 0 -> ifreed[i] = 1
    :: else -> skip
    fi
  }
}

proctype writer() {
  byte k, j, i, old;
  for (i : 1 .. 2) {
    /* The new table and its invoker (one reference: the table's). */
    d_step { rc[i] = 1 }
#ifdef QUARKUS
    ra_store(0, TP, i, REL);
    ra_store(0, TABLE(i), COMPLETE, 0);
#else
    ra_store(0, TABLE(i), COMPLETE, 0);
    ra_store(0, TP, i, REL);
#endif
    old = i - 1;
#ifndef NO_GRACE
    synchronize_rcu(0);
#endif
    d_step { tfreed[old] = 1 }
    unref(old)
  }
}

proctype reader(byte t; bool hold; byte lookups) {
  byte k, j, p, v, n;
  for (n : 1 .. lookups) {
  rcu_read_lock(t);
  ra_load(t, TP, ACQ, p);
  assert(!tfreed[p]);                     /* P2 */
  ra_load(t, TABLE(p), 0, v);
  assert(v == COMPLETE);                  /* P1 */
  assert(!tfreed[p] && !ifreed[p]);       /* P2 */
#ifndef NO_REF
  if
  :: hold -> d_step { assert(!ifreed[p]); rc[p]++ }
  :: else -> skip
  fi;
#endif
  rcu_read_unlock(t);
  if
  :: hold ->
    /* The asynchronous handler, after the section: its invoker. */
    assert(!ifreed[p]);                   /* P2 */
    ra_load(t, TABLE(p), 0, v);
    assert(v == COMPLETE);
#ifndef NO_REF
    unref(p)
#endif
  :: else -> skip
  fi
  }
}

init {
  byte k, j;
  d_step {
    ra_init(TP, 0);
    ra_init(TABLE(0), COMPLETE);
    ra_init(TABLE(1), GARBAGE);
    ra_init(TABLE(2), GARBAGE);
    rc[0] = 1
  }
  atomic {
    run writer();
    run reader(1, 1, 1);
    run reader(2, 0, 2)
  }
  (_nr_pr == 1);
  /* P3 */
  assert(tfreed[0] && ifreed[0] && tfreed[1] && ifreed[1]);
  assert(!tfreed[2] && !ifreed[2] && rc[2] == 1)
}
