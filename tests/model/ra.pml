/* SPDX-License-Identifier: MIT */
/*
 * Release/acquire memory for the models (included by each of them).
 *
 * C11's atomics are weaker than the interleaving Spin explores: a relaxed
 * load may return an older value than the latest store, and only an
 * acquire load that reads a release store makes what the storing thread
 * wrote before it visible.  This file models that "view" semantics of the
 * release/acquire fragment of C11 (as in Kang et al., "A Promising
 * Semantics for Relaxed-Memory Concurrency", restricted to rel/acq/rlx):
 *
 *   - every location keeps the history of the values stored to it (its
 *     modification order), at most H of them;
 *   - every thread has a view: for each location, the oldest write it may
 *     still read;
 *   - a store appends to the history and advances the storing thread's
 *     view of that location; a release store also records the storing
 *     thread's whole view with the write;
 *   - a load may read any write from the thread's view of the location on
 *     (Spin chooses, so every possibility is explored) and advances the
 *     view to it; an acquire load that reads a release store joins the
 *     view recorded with that store into the thread's view;
 *   - a read-modify-write reads the latest write and appends its own right
 *     after it; the view its write carries includes the view of the write
 *     it read, so a chain of RMWs continues a release store's message (a
 *     release sequence).
 *
 * What it does not model: load buffering.  A load reads a write that is
 * already in the history, so no load reads a store that comes later in
 * the program of a thread that read this thread's store (r1 = x; y = 1 ||
 * r2 = y; x = 1 with r1 == r2 == 1, which C11 allows for relaxed
 * accesses and ARM and POWER do): like RC11 (Lahav et al., "Repairing
 * Sequential Consistency in C/C++11"), the model keeps program order and
 * reads-from acyclic.  Where that could hide a bug, an access before a
 * free, the models do not rely on the value read: they check that the
 * freeing thread's view contains the access (happens-before), see
 * publish.pml; litmus.pml's LB states the limit.
 *
 * A plain (non-atomic) access to data published by a release store is
 * modelled as a relaxed one: if publication is right, only the complete
 * value can be read; if it is wrong, the model lets the older one through.
 *
 * The including model defines NL (locations), NT (threads), H (history
 * length) before including this file, and declares `byte k, j;` locals in
 * every process that uses the macros.
 */

byte hval[NL * H];        /* the value of write i of location L: hval[L*H+i] */
byte hlen[NL];            /* writes so far, per location */
byte hview[NL * H * NL];  /* the view a write carries (release, release sequence) */
byte view[NT * NL];       /* each thread's view */

/* Location L starts with value v (its write 0), visible to everyone. */
inline ra_init(L, v) {
  hval[L * H] = v;
  hlen[L] = 1
}

/* Thread t stores v to L; rel: 1 for a release store. */
inline ra_store(t, L, v, rel) {
  d_step {
    assert(hlen[L] < H);
    k = hlen[L];
    hval[L * H + k] = v;
    hlen[L]++;
    view[t * NL + L] = k;
    for (j : 0 .. NL - 1) {
      hview[(L * H + k) * NL + j] = (rel -> view[t * NL + j] : 0)
    }
    k = 0
  }
}

/* Thread t loads L into out; acq: 1 for an acquire load.  Any write from
 * the thread's view on may be read. */
inline ra_load(t, L, acq, out) {
  k = view[t * NL + L];
  do
  :: k + 1 < hlen[L] -> k++
  :: break
  od;
  skip; /* where the break lands: not inside the d_step */
  d_step {
    out = hval[L * H + k];
    view[t * NL + L] = k;
    for (j : 0 .. NL - 1) {
      if
      :: acq && hview[(L * H + k) * NL + j] > view[t * NL + j] ->
        view[t * NL + j] = hview[(L * H + k) * NL + j]
      :: else -> skip
      fi
    }
    k = 0
  }
}

/* A read-modify-write reads the latest write (C11: an RMW reads the last
 * value in modification order) and writes NEW (an expression that may use
 * `out`, the value read) right after it.  acq: the view of the write read
 * joins the thread's, as for an acquire load.  The new write's view is the
 * thread's (rel) or nothing (relaxed), joined with the view of the write
 * it read: a release sequence (C11 5.1.2.4), so an acquire load that reads
 * an RMW synchronises with the release store the RMWs before it continued. */
inline ra_rmw(t, L, NEW, rel, acq, out) {
  d_step {
    assert(hlen[L] < H);
    k = hlen[L] - 1;
    out = hval[L * H + k];
    for (j : 0 .. NL - 1) {
      if
      :: acq && hview[(L * H + k) * NL + j] > view[t * NL + j] ->
        view[t * NL + j] = hview[(L * H + k) * NL + j]
      :: else -> skip
      fi
    }
    hval[L * H + k + 1] = NEW;
    hlen[L]++;
    view[t * NL + L] = k + 1;
    for (j : 0 .. NL - 1) {
      hview[(L * H + k + 1) * NL + j] = (rel -> view[t * NL + j] : 0);
      if
      :: hview[(L * H + k) * NL + j] > hview[(L * H + k + 1) * NL + j] ->
        hview[(L * H + k + 1) * NL + j] = hview[(L * H + k) * NL + j]
      :: else -> skip
      fi
    }
    k = 0
  }
}

/* fetch_add(L, d); out: the value before. */
inline ra_rmw_add(t, L, d, rel, acq, out) {
  ra_rmw(t, L, out + d, rel, acq, out)
}

/* exchange(L, v); out: the value before. */
inline ra_xchg(t, L, v, rel, acq, out) {
  ra_rmw(t, L, v, rel, acq, out)
}

/* A load that reads the latest write: what a load made "later enough"
 * returns (C11 7.17.3: stores become visible to loads within a finite
 * time), for a step that stands for one of an unbounded series, as a loop
 * that checks once a second. */
inline ra_load_latest(t, L, acq, out) {
  d_step {
    k = hlen[L] - 1;
    out = hval[L * H + k];
    view[t * NL + L] = k;
    for (j : 0 .. NL - 1) {
      if
      :: acq && hview[(L * H + k) * NL + j] > view[t * NL + j] ->
        view[t * NL + j] = hview[(L * H + k) * NL + j]
      :: else -> skip
      fi
    }
    k = 0
  }
}
