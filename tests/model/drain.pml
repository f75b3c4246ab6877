/* SPDX-License-Identifier: MIT */
/*
 * hr_server_drain against the end of the worker threads (src/server/
 * drain.c: hr_server_drain, hr__server_worker_ended, drain_done); run by
 * tests/model/run.sh.
 *
 * The drain's callback must run exactly once when hr_server_drain answers
 * 0, and never when it answers HR_ESTATE, also when hr_server_stop on
 * another thread ends the workers at the same time.  The drain checks that
 * some worker still runs (drain_left), arms itself (drain_go), wakes the
 * workers, then checks drain_left again and calls the callback itself when
 * every worker has ended; each worker, as its loop ends, decrements
 * drain_left and, if it was the last, calls the callback when the drain is
 * armed.  drain_called makes the call once.  The handshake is a
 * store-buffering pattern: it needs seq_cst on drain_go and drain_left
 * (release/acquire lets both sides read the old value).
 *
 * Abstractions: the workers end by themselves, at any moment (what
 * hr_server_stop or the drain's own grace period make them do); waking
 * them is left out (it only makes them end sooner); seq_cst accesses read
 * the latest store (all accesses to these two locations are seq_cst, so
 * they are in one total order).  Bounds: two workers.
 *
 * Property (assertion at the end): answered 0 -> exactly one call;
 * answered HR_ESTATE -> none.
 *
 * Mutations (spin -D...):
 *   NO_LATE_CHECK  the drain does not check drain_left after arming (the
 *                  code before this model: a drain whose workers had all
 *                  ended got no callback)
 *   NO_CLAIM       no drain_called: both sides may call
 *   ACQ_REL        the handshake with release/acquire instead of seq_cst
 */

#define NL 3   /* drain_go, drain_left, drain_called */
#define NT 3   /* the draining thread, two workers */
#define H  4
#include "ra.pml"

#define GO     0
#define LEFT   1
#define CALLED 2

byte calls;       /* ghost: callback calls */
byte answer = 9;  /* ghost: 0, or 1 for HR_ESTATE; 9 while running */

/* A seq_cst load: the latest store (acquire, for the view). */
inline sc_load(t, L, out) {
  d_step {
    out = hval[L * H + hlen[L] - 1];
    view[t * NL + L] = hlen[L] - 1;
    k = 0
  }
}

inline handshake_load(t, L, out) {
#ifdef ACQ_REL
  ra_load(t, L, 1, out)
#else
  sc_load(t, L, out)
#endif
}

inline done(t) {
#ifdef NO_CLAIM
  d_step { calls++ }
#else
  ra_rmw_add(t, CALLED, 1, 1, 1, old);
  if
  :: old == 0 -> d_step { calls++ }
  :: else -> skip
  fi
#endif
}

proctype drainer() {
  byte k, j, v, old;
  handshake_load(0, LEFT, v);
  if
  :: v == 0 -> answer = 1                 /* stopped: HR_ESTATE */
  :: else ->
    ra_store(0, GO, 1, 1);                /* armed (seq_cst store) */
#ifndef NO_LATE_CHECK
    handshake_load(0, LEFT, v);
    if
    :: v == 0 -> done(0)
    :: else -> skip
    fi;
#endif
    answer = 0
  fi
}

proctype worker(byte t) {
  byte k, j, v, old;
  ra_rmw_add(t, LEFT, 255, 1, 1, old);    /* drain_left - 1 (mod 256) */
  if
  :: old == 1 ->
    handshake_load(t, GO, v);
    if
    :: v -> done(t)
    :: else -> skip
    fi
  :: else -> skip
  fi
}

init {
  byte k, j;
  d_step {
    ra_init(GO, 0);
    ra_init(LEFT, 2);
    ra_init(CALLED, 0)
  }
  atomic {
    run drainer();
    run worker(1);
    run worker(2)
  }
  (_nr_pr == 1);
  assert(answer == 1 && calls == 0 || answer == 0 && calls == 1)
}
