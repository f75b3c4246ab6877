/* SPDX-License-Identifier: MIT */
/*
 * TLS contexts and their publication (src/server/tlsctx.c), model (d);
 * run by tests/model/run.sh.
 *
 * Per TLS listener, the default SSL_CTX (conf->ctx) and the table of
 * per-name contexts (conf->names) are each an atomic pointer to an
 * immutable object.  A writer (hr__tlsconf_replace, hr__tlsconf_set_name)
 * builds the new object, takes conf->lock, publishes it with a release
 * exchange or store, takes the old one to retire, unlocks, and only then
 * reclaims it: inside a read-side section (urcu_bp_read_ongoing(): a
 * handler that calls hr_server_tls_update) it hands it to call_rcu, whose
 * thread frees it after a grace period; outside one it waits for a grace
 * period itself (synchronize_rcu) and frees it.  Freeing a context drops
 * the reference the listener held (SSL_CTX_free); a names table's free
 * drops the references it holds on its contexts.
 *
 * Readers: a handshake, in the connection's read-side section, loads
 * conf->ctx with acquire and takes its own reference (SSL_new); the
 * server-name callback, in a section, loads conf->names with acquire,
 * reads the table and moves the SSL to the named context (SSL_set_SSL_CTX:
 * its own reference).  The connection then uses both contexts and drops
 * its references when it ends (SSL_free).
 *
 * Threads: the application (replaces the default context, outside any
 * section), a loop serving a handshake, a loop whose handler, inside its
 * section, sets a context for the name (takes the lock: the case the old
 * code deadlocked on), and liburcu's call_rcu thread.
 *
 * Abstractions: a context or a table is "complete or not", one location
 * written before its publication (hr__tlsctx_build, the table's fill); the
 * objects there at the start share one complete location.  The name's new
 * context replaces the old one in a table of one entry, so the old
 * context goes with the old table.  Reference counts are OpenSSL's atomic
 * RMWs: one total order (a counter changed in one step); whether their
 * ordering lets the last SSL_CTX_free see every owner's use is OpenSSL's
 * contract, not modelled.  The ticket keys are published and reclaimed the
 * same way (rotate_if) and read only inside the section (on_ticket): the
 * names table without references; not modelled apart.  The lock is a
 * mutex with release/acquire.  Bounds: one replacement of each pointer,
 * one handshake.
 *
 * Properties (assertions; Spin also reports deadlocks as invalid end
 * states):
 *   T1 a handshake reads only complete contexts and tables (published
 *      after they were built);
 *   T2 a handshake never reads or takes a reference on a freed context or
 *      table, and no reference is dropped twice;
 *   T3 no deadlock: the handler that takes the lock from inside its
 *      section, the writer that waits for a grace period, and the call_rcu
 *      thread all finish;
 *   T4 at the end the replaced context and table are freed, with the old
 *      named context, and the new ones are not, each with the one
 *      reference the listener holds (no leak, no premature free).
 *
 * Mutations (spin -D...), each of which must violate a property:
 *   WAIT_UNDER_LOCK  the reclamation before the unlock: the code before
 *                    the fix, synchronize_rcu under conf->lock (T3: the
 *                    handler waits for the lock inside its section, the
 *                    writer holds it and waits for that section)
 *   NO_GRACE         the old object freed without a grace period (T2)
 *   RELAXED_PUBLISH  the exchange and the store relaxed, not release (T1)
 *   REF_OUTSIDE      a handshake takes its references after its section
 *                    ended (T2)
 *   SYNC_IN_SECTION  the handler's writer path waits for a grace period
 *                    itself instead of call_rcu (T3: it waits for its own
 *                    section)
 */

#define NL 6   /* locations, below */
#define NT 4   /* threads, below */
#define H  2
#include "ra.pml"
#include "rcu.pml"

#define APP   0   /* threads */
#define HS    1
#define HND   2
#define CRCU  3

#define CP    0   /* conf->ctx: D0 or D1 */
#define NP    1   /* conf->names: T0 or T1 */
#define INIT  2   /* D0, N0 and T0: complete from the start */
#define LD1   3   /* the new default context */
#define LN1   4   /* the name's new context */
#define LT1   5   /* the new names table */

#define D0 0      /* contexts */
#define D1 1
#define N0 2
#define N1 3
#define CTX_LOC(c) ((c) == D1 -> LD1 : ((c) == N1 -> LN1 : INIT))
#define TAB_LOC(i) ((i) == 1 -> LT1 : INIT)
#define NAMED(i)   ((i) == 1 -> N1 : N0)   /* table i's context */

#define GARBAGE  0
#define COMPLETE 1

#ifdef RELAXED_PUBLISH
#define REL 0
#else
#define REL 1
#endif

byte rc[4];        /* each context's reference count */
bool cfreed[4];    /* ghost: context freed */
bool tfreed[2];    /* ghost: names table freed */

/* conf->lock: a mutex; unlock releases the holder's view, lock acquires it. */
byte lock_holder;  /* 0 free, else thread + 1 */
byte lock_view[NL];

inline mutex_lock(t) {
  d_step {
    lock_holder == 0;
    lock_holder = t + 1;
    for (j : 0 .. NL - 1) {
      if
      :: lock_view[j] > view[t * NL + j] -> view[t * NL + j] = lock_view[j]
      :: else -> skip
      fi
    }
  }
}

inline mutex_unlock(t) {
  d_step {
    assert(lock_holder == t + 1);
    for (j : 0 .. NL - 1) { lock_view[j] = view[t * NL + j] }
    lock_holder = 0
  }
}

inline ctx_ref(c) {
  d_step { assert(!cfreed[c] && rc[c] > 0); rc[c]++ }   /* T2 */
}

inline ctx_unref(c) {
  d_step {
    assert(!cfreed[c] && rc[c] > 0);                     /* T2 */
    rc[c]--;
    if
    :: rc[c] == 0 -> cfreed[c] = 1
    :: else -> skip
    fi
  }
}

/* A handshake reads context c (T1, T2). */
inline use_ctx(t, c) {
  assert(!cfreed[c]);                                    /* T2 */
  ra_load(t, CTX_LOC(c), 0, v);
  assert(v == COMPLETE)                                  /* T1 */
}

/* call_rcu: one pending callback, freeing names table `queued`.  The
 * queue hands the caller's view to the call_rcu thread. */
byte queued = 255;
byte queue_view[NL];


inline call_rcu_table(t, i) {
  d_step {
    for (j : 0 .. NL - 1) { queue_view[j] = view[t * NL + j] }
    queued = i
  }
}

/* Frees names table i and the references it holds. */
inline free_table(i) {
  d_step { assert(!tfreed[i]); tfreed[i] = 1 };
  ctx_unref(NAMED(i))
}

/* hr__tlsconf_replace, from the application (outside any section). */
proctype app() {
  byte k, j, old;
  ra_store(APP, LD1, COMPLETE, 0);        /* hr__tlsctx_build; one reference */
  mutex_lock(APP);
  ra_xchg(APP, CP, D1, REL, REL, old);    /* acq_rel exchange */
#ifndef WAIT_UNDER_LOCK
  mutex_unlock(APP);
#endif
  /* retire(): not in a read-side section, so wait here. */
#ifndef NO_GRACE
  synchronize_rcu(APP);
#endif
  ctx_unref(old);                         /* the listener's reference */
#ifdef WAIT_UNDER_LOCK
  mutex_unlock(APP)
#endif
}

/* A connection's handshake on a loop. */
proctype handshake() {
  byte k, j, p, q, c, v;
  /* hr__tlsconf_new_ssl */
  rcu_read_lock(HS);
  ra_load(HS, CP, 1, p);                  /* acquire */
  use_ctx(HS, p);
#ifndef REF_OUTSIDE
  ctx_ref(p);                             /* SSL_new */
#endif
  rcu_read_unlock(HS);
#ifdef REF_OUTSIDE
  ctx_ref(p);
#endif
  /* on_servername, in the handshake's processing step */
  rcu_read_lock(HS);
  ra_load(HS, NP, 1, q);                  /* acquire */
  assert(!tfreed[q]);                     /* T2 */
  ra_load(HS, TAB_LOC(q), 0, v);
  assert(v == COMPLETE);                  /* T1 */
  c = NAMED(q);
  use_ctx(HS, c);
#ifndef REF_OUTSIDE
  ctx_ref(c);                             /* SSL_set_SSL_CTX */
#endif
  rcu_read_unlock(HS);
#ifdef REF_OUTSIDE
  ctx_ref(c);
#endif
  /* The established connection uses both, then SSL_free. */
  use_ctx(HS, p);
  use_ctx(HS, c);
  ctx_unref(p);
  ctx_unref(c)
}

/* A handler, inside its processing step's section, calls
 * hr_server_tls_add_name: hr__tlsconf_set_name with the name's new
 * context. */
proctype handler() {
  byte k, j, old;
  rcu_read_lock(HND);
  ra_store(HND, LN1, COMPLETE, 0);        /* hr__tlsctx_build; one reference */
  mutex_lock(HND);
  ra_load(HND, NP, 0, old);               /* relaxed, under the lock */
  ra_store(HND, LT1, COMPLETE, 0);        /* the new table: the name -> N1 */
  ra_store(HND, NP, 1, REL);
#ifndef WAIT_UNDER_LOCK
  mutex_unlock(HND);
#endif
  /* retire(): inside a read-side section. */
#if defined(SYNC_IN_SECTION)
  synchronize_rcu(HND);
  free_table(old);
#elif defined(NO_GRACE)
  free_table(old);
#else
  call_rcu_table(HND, old);
#endif
#ifdef WAIT_UNDER_LOCK
  mutex_unlock(HND);
#endif
  rcu_read_unlock(HND)
}

/* liburcu's call_rcu thread: runs the callback after a grace period. */
proctype call_rcu_thread() {
  byte k, j;
end_idle:
  (queued != 255);
  d_step {
    for (j : 0 .. NL - 1) {
      if
      :: queue_view[j] > view[CRCU * NL + j] -> view[CRCU * NL + j] = queue_view[j]
      :: else -> skip
      fi
    }
  }
  synchronize_rcu(CRCU);
  free_table(queued)
}

init {
  byte k, j;
  d_step {
    ra_init(CP, D0);
    ra_init(NP, 0);
    ra_init(INIT, COMPLETE);
    ra_init(LD1, GARBAGE);
    ra_init(LN1, GARBAGE);
    ra_init(LT1, GARBAGE);
    rc[D0] = 1;                           /* the listener's */
    rc[D1] = 1;                           /* passed to hr__tlsconf_replace */
    rc[N0] = 1;                           /* table 0's */
    rc[N1] = 1                            /* passed to set_name, then table 1's */
  }
  atomic {
    run call_rcu_thread();                /* first: Spin removes processes last first */
    run app();
    run handshake();
    run handler()
  }
  /* Everything has run, but the call_rcu thread when nothing was queued
   * for it (it then waits for work). */
  (_nr_pr == 1 || _nr_pr == 2 && queued == 255);
  /* T4 */
  assert(cfreed[D0] && tfreed[0] && cfreed[N0]);
  assert(!cfreed[D1] && rc[D1] == 1 && !tfreed[1] && !cfreed[N1] && rc[N1] == 1)
}
