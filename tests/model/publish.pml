/* SPDX-License-Identifier: MIT */
/*
 * Route table publication and reclamation, with the invokers' reference
 * counts (src/router/publish.c, freeze.c, tree.c, invoker.c), model (a) of issue 15;
 * run by tests/model/run.sh.
 *
 * A writer builds a table no reader can reach, fills it, takes the table's
 * reference on each invoker it holds (hr__invoker_ref: a relaxed
 * fetch_add), publishes it with one release store of the table pointer
 * (publish()), and after a grace period frees the old table, which drops
 * its references (hr__table_free: hr__invoker_unref, an acq_rel
 * fetch_sub; the one that takes the count to 0 frees the invoker).
 * Readers run inside an RCU read-side section (the server's processing
 * step, hr_router_match): they load the pointer with acquire and read the
 * table and the invoker it points at; a request that outlives its section
 * (an asynchronous handler) takes a reference before the section ends
 * (hr__invoker_ref in conn_process, hr__conn_drop_exchange), reads its
 * invoker later and drops the reference (hr__exchange_release).
 *
 * The writer makes two publications: table 1 shares invoker A with table
 * 0 (a route added elsewhere: the invoker is kept), table 2 has a new
 * invoker B (middleware changed: invokers recompiled).  So A is freed by
 * the last of table 0, table 1 and a request that holds it.
 *
 * Accesses before a free.  An access is not only "not freed yet" when it
 * runs (the ghost flags): C11 also requires it to happen before the free,
 * or the freeing thread's writes may race with it (the allocator reuses
 * the memory; a read may return the new contents).  Each reader, after
 * the accesses of one lookup, writes a ghost location of its own (ACC),
 * and the thread that frees an object must have each reader's write
 * after its last access to it in its view: it got there through a chain
 * of release/acquire (the reference count's acq_rel RMWs, a release
 * sequence) or a grace period.  This is what catches a relaxed unref:
 * ra.pml has no load buffering, so the read itself would never be seen to
 * return freed memory.
 *
 * Abstractions: a table's block (its trees and its fallback invokers,
 * which only the table references and requests use only inside a
 * section: hr__router_fallback is reloaded in a section of its own) is one
 * location written before the pointer; table 0 and invoker A, complete
 * from the start, share one; table 2 and the new invoker B another.  The
 * writer waits for the grace period itself (reclaim_list; call_rcu runs
 * the same free after the same grace period) and frees one table per
 * publication (the router frees them in batches: later, not differently).
 * Freed memory is a ghost flag checked at every access.  Bounds: two
 * publications, two readers: one makes a request that holds its invoker
 * past its section, the other two requests in two sections.
 *
 * Properties (assertions; Spin also reports deadlocks as invalid end
 * states):
 *   P1 no reader reads a table or an invoker that was not complete when
 *      the table was published (the Quarkus bug);
 *   P2 no reader touches a freed table or a freed invoker, and every
 *      access to one happens before its free (hb_free);
 *   P3 when everything has finished, every retired table and invoker A
 *      are freed, and the current table and its invoker B are not, with
 *      the one reference of table 2 left (no leak, no premature free).
 *
 * Mutations (spin -D...), each of which must violate a property:
 *   QUARKUS        publish, then fill (P1)
 *   NO_GRACE       free the old table without waiting for a grace period (P2)
 *   RELAXED_LOAD   the reader's load of the pointer is relaxed, not acquire (P1)
 *   RELAXED_STORE  the writer's store of the pointer is relaxed, not release (P1)
 *   NO_REF         the request that outlives its section takes no reference (P2)
 *   RELAXED_UNREF  hr__invoker_unref's fetch_sub relaxed, not acq_rel: the
 *                  thread that frees does not see the other owner's last
 *                  access (P2, hb_free)
 */

#define NL 8   /* locations, below */
#define NT 3   /* threads: the writer, two readers */
#define H  6   /* writes per location at most (invoker A's count: 6) */
#include "ra.pml"
#include "rcu.pml"

#define TP       0          /* the router's table pointer: 0, 1, 2 */
#define OLD      1          /* table 0 and invoker A */
#define T1       2          /* table 1's block */
#define T2       3          /* table 2's block and invoker B */
#define RC(a)    (4 + (a))  /* invoker a's reference count (A 0, B 1) */
#define ACC(t)   (5 + (t))  /* reader t's accesses (t 1, 2) */

#define TLOC(i)  ((i) == 0 -> OLD : ((i) == 1 -> T1 : T2))
#define INV(i)   ((i) == 2 -> 1 : 0)        /* table i's invoker */
#define ILOC(a)  ((a) == 0 -> OLD : T2)
#define OBJ_T(i) (i)                        /* ghost object ids */
#define OBJ_I(a) (3 + (a))

#define GARBAGE  0
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
#ifdef RELAXED_UNREF
#define UNREF_RA 0
#else
#define UNREF_RA 1
#endif

bool tfreed[3];     /* ghost: table i freed */
bool ifreed[2];     /* ghost: invoker a freed */
byte last[NT * 5];  /* ghost: last[t*5+o], reader t's ACC write after its
                       last access to object o (0: none) */

/* Reader t has made its accesses to objects o1 and o2 (a ghost write
 * after them in its program). */
inline accessed(t, o1, o2) {
  ra_store(t, ACC(t), 1, 0);
  d_step {
    last[t * 5 + o1] = hlen[ACC(t)] - 1;
    last[t * 5 + o2] = hlen[ACC(t)] - 1
  }
}

/* Thread f frees object o: every reader's last access to it must be in
 * f's view, i.e. happen before the free. */
inline check_before_free(f, o) {
  d_step {
    hb_free = view[f * NL + ACC(1)] >= last[1 * 5 + o] &&
              view[f * NL + ACC(2)] >= last[2 * 5 + o]
  }
  assert(hb_free)                         /* P2 */
}

inline invoker_ref(t, a) {
  assert(!ifreed[a]);                     /* P2 */
  ra_rmw_add(t, RC(a), 1, 0, 0, old);     /* relaxed */
  assert(old > 0)
}

inline invoker_unref(t, a) {
  ra_rmw_add(t, RC(a), 255, UNREF_RA, UNREF_RA, old);  /* fetch_sub 1 */
  assert(old > 0);
  if
  :: old == 1 ->
    check_before_free(t, OBJ_I(a));
    assert(!ifreed[a]);
    ifreed[a] = 1
  :: else -> skip
  fi
}

/* The writer builds and publishes table i; its invoker a is new when
 * fresh (count 0 so far), else shared with the table before. */
inline publish(i, a) {
#ifdef QUARKUS
  ra_store(0, TP, i, REL);
  ra_store(0, TLOC(i), COMPLETE, 0);
#else
  ra_store(0, TLOC(i), COMPLETE, 0);      /* the block (and a new invoker) */
#endif
  ra_rmw_add(0, RC(a), 1, 0, 0, old);     /* the table's reference */
#ifndef QUARKUS
  ra_store(0, TP, i, REL);
#endif
}

/* The writer frees table i after a grace period (reclaim_list). */
inline retire(i) {
#ifndef NO_GRACE
  synchronize_rcu(0);
#endif
  check_before_free(0, OBJ_T(i));
  tfreed[i] = 1;
  invoker_unref(0, INV(i))
}

proctype writer() {
  byte k, j, old;
  bool hb_free;
  publish(1, 0);                          /* shares invoker A */
  retire(0);
  publish(2, 1);                          /* new invoker B */
  retire(1)
}

proctype reader(byte t; bool hold; byte lookups) {
  byte k, j, p, a, v, n, old;
  bool hb_free;
  for (n : 1 .. lookups) {
    rcu_read_lock(t);
    ra_load(t, TP, ACQ, p);
    assert(!tfreed[p]);                   /* P2 */
    ra_load(t, TLOC(p), 0, v);
    assert(v == COMPLETE);                /* P1 */
    a = INV(p);
    assert(!ifreed[a]);                   /* P2 */
    ra_load(t, ILOC(a), 0, v);
    assert(v == COMPLETE);                /* P1 */
#ifndef NO_REF
    if
    :: hold -> invoker_ref(t, a)
    :: else -> skip
    fi;
#endif
    accessed(t, OBJ_T(p), OBJ_I(a));
    rcu_read_unlock(t);
    if
    :: hold ->
      /* The asynchronous handler, after the section: its invoker. */
      assert(!ifreed[a]);                 /* P2 */
      ra_load(t, ILOC(a), 0, v);
      assert(v == COMPLETE);
      accessed(t, OBJ_I(a), OBJ_I(a));
#ifndef NO_REF
      invoker_unref(t, a)
#endif
    :: else -> skip
    fi
  }
}

init {
  byte k, j;
  d_step {
    ra_init(TP, 0);
    ra_init(OLD, COMPLETE);
    ra_init(T1, GARBAGE);
    ra_init(T2, GARBAGE);
    ra_init(RC(0), 1);                    /* table 0's reference on A */
    ra_init(RC(1), 0);                    /* B: not made yet */
    ra_init(ACC(1), 0);
    ra_init(ACC(2), 0)
  }
  atomic {
    run writer();
    run reader(1, 1, 1);
    run reader(2, 0, 2)
  }
  (_nr_pr == 1);
  /* P3 */
  assert(tfreed[0] && tfreed[1] && ifreed[0]);
  assert(!tfreed[2] && !ifreed[1] && hval[RC(1) * H + hlen[RC(1)] - 1] == 1)
}
