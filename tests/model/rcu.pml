/* SPDX-License-Identifier: MIT */
/*
 * RCU for the models, by its guarantees rather than liburcu's
 * implementation (included after ra.pml, whose views it uses).
 *
 *   - A grace period waits for every read-side section that had begun
 *     when it began (synchronize_rcu returns, or a call_rcu callback runs,
 *     after they have all ended).
 *   - Everything a section did happens before what follows the end of a
 *     grace period that waited for it or began after it ended: the waiter
 *     joins the views those sections had at their unlock.
 *   - A section that begins after a grace period began sees what the
 *     waiter wrote before it began: the section joins the view the waiter
 *     had then.  (Taken for every such section: the models read it as
 *     "a section either precedes the end of the grace period or follows
 *     its start", deciding by when the section began.)
 *
 * Any thread may wait (several grace periods may run at once, each with
 * its own set of sections to wait for).  A thread that waits inside its
 * own section waits for itself: Spin reports that as an invalid end state.
 */

bool in_cs[NT];          /* thread t is inside a read-side section */
bool gp_wait[NT * NT];   /* gp_wait[g*NT+t]: g's grace period waits for t */
byte gp_left[NT];        /* sections g's grace period still waits for */
byte gp_view[NL];        /* join of the waiters' views at grace period starts */
byte cs_view[NL];        /* join of the views at every unlock so far */
byte gp_hb[NT * NL];     /* what the end of g's grace period gives g */

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
  d_step {
    in_cs[t] = 0;
    for (j : 0 .. NL - 1) {
      if
      :: view[t * NL + j] > cs_view[j] -> cs_view[j] = view[t * NL + j]
      :: else -> skip
      fi
    }
    for (k : 0 .. NT - 1) {
      if
      :: gp_wait[k * NT + t] ->
        gp_wait[k * NT + t] = 0;
        gp_left[k]--;
        for (j : 0 .. NL - 1) {
          if
          :: view[t * NL + j] > gp_hb[k * NL + j] -> gp_hb[k * NL + j] = view[t * NL + j]
          :: else -> skip
          fi
        }
      :: else -> skip
      fi
    }
    k = 0
  }
}

/* Thread t waits for a grace period. */
inline synchronize_rcu(t) {
  d_step {
    gp_left[t] = 0;
    for (j : 0 .. NT - 1) {
      gp_wait[t * NT + j] = in_cs[j];
      if
      :: in_cs[j] -> gp_left[t]++
      :: else -> skip
      fi
    }
    for (j : 0 .. NL - 1) {
      gp_hb[t * NL + j] = cs_view[j];
      if
      :: view[t * NL + j] > gp_view[j] -> gp_view[j] = view[t * NL + j]
      :: else -> skip
      fi
    }
  }
  (gp_left[t] == 0);
  d_step {
    for (j : 0 .. NL - 1) {
      if
      :: gp_hb[t * NL + j] > view[t * NL + j] -> view[t * NL + j] = gp_hb[t * NL + j]
      :: else -> skip
      fi
    }
  }
}
