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
 *     view recorded with that store into the thread's view.
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
byte hview[NL * H * NL];  /* the view a release write carries */
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

/* A read-modify-write reads the latest write (C11: RMWs read the last
 * value in modification order) and stores after it. */
inline ra_rmw_add(t, L, d, rel, acq, out) {
  d_step {
    assert(hlen[L] < H);
    out = hval[L * H + hlen[L] - 1];
    for (j : 0 .. NL - 1) {
      if
      :: acq && hview[(L * H + hlen[L] - 1) * NL + j] > view[t * NL + j] ->
        view[t * NL + j] = hview[(L * H + hlen[L] - 1) * NL + j]
      :: else -> skip
      fi
    }
    k = hlen[L];
    hval[L * H + k] = out + d;
    hlen[L]++;
    view[t * NL + L] = k;
    for (j : 0 .. NL - 1) {
      hview[(L * H + k) * NL + j] = (rel -> view[t * NL + j] : 0)
    }
    k = 0
  }
}

/* Thread t's view takes in the view `src` (another thread's, copied into
 * the array snap): what a full barrier or an RCU grace period gives. */
inline ra_join(t, snap) {
  d_step {
    for (j : 0 .. NL - 1) {
      if
      :: snap[j] > view[t * NL + j] -> view[t * NL + j] = snap[j]
      :: else -> skip
      fi
    }
  }
}
