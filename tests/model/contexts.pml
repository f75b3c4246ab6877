/* SPDX-License-Identifier: MIT */
/*
 * Per-loop contexts of routes (HR_CONTEXT_LOOP) against the removal of
 * their route (src/router/publish.c install() and change() or publish(), src/server/invoke.c), model
 * (e); run by tests/model/run.sh.
 *
 * A loop makes its context for a route at its start if the route is in
 * the current table (hr__worker_ctx_prepare) or at the first request that
 * needs it (hr__invoke: a slot without ctx_made), and counts the requests
 * of the loop using it (slot->inflight, loop only).  The writer removes
 * the route: it stores the new table without it (release), then the
 * route's core `retired` flag (release) (publish()).  About once a second
 * the loop sweeps (hr__worker_ctx_sweep): a context with no request in
 * flight whose core is retired (acquire load) is destroyed.
 *
 * A request is matched when its header section is complete (in one
 * processing step, which loads the table with acquire) and invoked then
 * (a streaming body) or in a later step, when the body is complete
 * (buffered); it holds the context from the invocation until the end of
 * the exchange, which may come later still (an asynchronous handler).  The
 * loop runs these steps and its sweeps in any order: they are callbacks of
 * one thread.
 *
 * Abstractions: one route with a per-loop context and one removal (table
 * 0 holds the route, table 1 does not); one loop (loops do not share
 * contexts: each runs the same steps on its own); two requests.  Which
 * cores a publication retires (writer_mark) is the writer's own
 * bookkeeping, not modelled: a core still in the new table is never
 * retired.  Sweeps are unbounded; the last one, after everything else has
 * ended, stands for "a while later" and reads the latest store of
 * `retired` (a store becomes visible within a finite time).
 *
 * Properties (assertions):
 *   C1 a loop destroys a route's context only once the route has left the
 *      current table (the latest store of the table pointer is table 1);
 *   C2 no request uses a destroyed context: the context a request got at
 *      its invocation is the one it has until its exchange ends;
 *   C3 no request of a loop is matched to the route on a table loaded
 *      after the loop destroyed the route's context (it would make a
 *      second context for a route that is gone);
 *   C4 at the end the context is destroyed (no context of a removed route
 *      is left).
 *
 * Mutations (spin -D...), each of which must violate a property:
 *   RETIRED_FIRST    `retired` stored before the new table (C1)
 *   RELAXED_RETIRED  the sweep's load of `retired` relaxed, not acquire (C3)
 *   NO_INFLIGHT      the sweep destroys a context requests still use (C2)
 *   COUNT_AT_INVOKE  a request counted in `inflight` only when invoked,
 *                    not from its match (C5)
 *
 * C5: one context per loop and route.  The code counted a request from
 * its invocation (COUNT_AT_INVOKE): a request matched before the removal
 * whose body completed after a sweep destroyed the context made a second
 * one at its invocation, which the next sweep destroyed.  This model found
 * it; the code now counts from the match (hr__invoke_hold_ctx).
 */

#define NL 2   /* the table pointer, the core's retired flag */
#define NT 2   /* the writer, the loop */
#define H  2
#include "ra.pml"

#define TP  0
#define RET 1

#define WRITER 0
#define LOOP   1

#ifdef RELAXED_RETIRED
#define RET_ACQ 0
#else
#define RET_ACQ 1
#endif

/* The loop's context for the route (loop only: plain). */
#define NONE      0
#define MADE      1
#define DESTROYED 2
byte ctx = NONE;
byte ctx_gen;      /* ghost: contexts made so far */
byte inflight;     /* slot->inflight */

/* Two requests: their phase, the context they got. */
#define IDLE     0
#define MATCHED  1   /* matched the route; invoked when its body is complete */
#define INVOKED  2   /* holds the context until the exchange ends */
#define ENDED    3
byte phase[2];
byte got[2];

proctype writer() {
  byte k, j;
#ifdef RETIRED_FIRST
  ra_store(WRITER, RET, 1, 1);
  ra_store(WRITER, TP, 1, 1)
#else
  ra_store(WRITER, TP, 1, 1);             /* the table without the route */
  ra_store(WRITER, RET, 1, 1)             /* its core retired */
#endif
}

/* hr__invoke for request i: the context, made if the slot has none. */
inline invoke(i) {
  d_step {
    if
    :: ctx != MADE -> ctx = MADE; ctx_gen++
    :: else -> skip
    fi;
    assert(ctx_gen == 1);                 /* C5 */
#ifdef COUNT_AT_INVOKE
    inflight++;
#endif
    got[i] = ctx_gen;
    phase[i] = INVOKED
  }
}

/* A processing step that completes request i's header section. */
inline match(i) {
  ra_load(LOOP, TP, 1, p);                /* acquire */
  if
  :: p == 0 ->
    assert(ctx != DESTROYED);             /* C3 */
#ifndef COUNT_AT_INVOKE
    inflight++;                           /* hr__invoke_hold_ctx */
#endif
    phase[i] = MATCHED;
    if
    :: invoke(i)                          /* a streaming body: now */
    :: skip                               /* buffered: when it is complete */
    fi
  :: else -> phase[i] = ENDED             /* no such route: 404 */
  fi
}

/* hr__worker_ctx_sweep; latest: the last one (see above). */
inline sweep(latest) {
#ifdef NO_INFLIGHT
  if
  :: ctx == MADE ->
#else
  if
  :: ctx == MADE && inflight == 0 ->
#endif
    if
    :: latest -> ra_load_latest(LOOP, RET, RET_ACQ, r)
    :: else -> ra_load(LOOP, RET, RET_ACQ, r)
    fi;
    if
    :: r == 1 ->
      assert(hval[TP * H + hlen[TP] - 1] == 1);   /* C1 */
      ctx = DESTROYED
    :: else -> skip
    fi
  :: else -> skip
  fi
}

proctype loop() {
  byte k, j, p, r;
  /* hr__worker_ctx_prepare */
  ra_load(LOOP, TP, 1, p);
  if
  :: p == 0 -> d_step { ctx = MADE; ctx_gen++ }
  :: else -> skip
  fi;
  do
  :: phase[0] == IDLE -> match(0)
  :: phase[1] == IDLE -> match(1)
  :: phase[0] == MATCHED -> invoke(0)
  :: phase[1] == MATCHED -> invoke(1)
  :: phase[0] == INVOKED ->
    d_step { assert(ctx == MADE && ctx_gen == got[0]); inflight--; phase[0] = ENDED }  /* C2 */
  :: phase[1] == INVOKED ->
    d_step { assert(ctx == MADE && ctx_gen == got[1]); inflight--; phase[1] = ENDED }  /* C2 */
  :: sweep(0)
  :: phase[0] == ENDED && phase[1] == ENDED -> break
  od;
  (_nr_pr == 2);                          /* the writer is done */
  sweep(1);
  assert(ctx != MADE)                     /* C4 */
}

init {
  byte k, j;
  d_step { ra_init(TP, 0); ra_init(RET, 0) }
  atomic {
    run loop();                           /* first: Spin removes processes last first */
    run writer()
  }
}
