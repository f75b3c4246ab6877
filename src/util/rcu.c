/* SPDX-License-Identifier: MIT */
/*
 * What ThreadSanitizer builds tell it of liburcu's grace periods (see
 * rcu.h): the epochs, the addresses sections release, and the end of a
 * grace period.  Nothing in other builds.
 */
#include "util/rcu.h"

#ifdef HR__TSAN
_Atomic unsigned long hr__rcu_tsan_epoch;
char hr__rcu_tsan_edges[HR__GP_RING], hr__rcu_tsan_barrier_edge;
_Thread_local unsigned long hr__rcu_tsan_section_epoch;
_Thread_local unsigned hr__rcu_tsan_depth;
/* What the grace periods that ended so far acquired: every section of an
 * epoch up to theirs, so that a reclamation also orders sections older
 * than its window (a loop idle since its last section while other grace
 * periods went by). */
static char gathered;

void hr__rcu_tsan_gp_end(unsigned long g) {
  unsigned long now = atomic_load_explicit(&hr__rcu_tsan_epoch, memory_order_relaxed);
  unsigned long lo = g + 1 >= HR__GP_WINDOW ? g + 1 - HR__GP_WINDOW : 0, e;
  /* Sections of the epochs after g (up to now) began after this grace
   * period did, and release into the ring too: leave out every address
   * they may share with an epoch of the window. */
  if (now >= HR__GP_RING && now - HR__GP_RING + 1 > lo) lo = now - HR__GP_RING + 1;
  for (e = lo; e <= g; e++) __tsan_acquire(&hr__rcu_tsan_edges[e % HR__GP_RING]);
  __tsan_acquire(&gathered);
  __tsan_release(&gathered);
}
#endif
