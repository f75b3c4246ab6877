/* SPDX-License-Identifier: MIT */
/*
 * Read-side critical sections and deferred reclamation, from liburcu's
 * bulletproof flavour (urcu-bp: any thread may read without registering).
 *
 * ThreadSanitizer cannot see liburcu's own synchronisation (liburcu is not
 * instrumented, and its queues use inline-assembly atomics), so in TSan
 * builds hroute tells it of the three edges it relies on:
 *   - the grace period: a reclamation (a call_rcu callback, or the code
 *     after hr__synchronize_rcu) acquires what every read-side section
 *     that had begun when the grace period began released at its unlock,
 *     and nothing of the sections that began later, which the grace
 *     period does not wait for.  Each grace period takes an epoch (a
 *     counter bumped where it begins: before urcu's synchronize_rcu, or
 *     where call_rcu is called); a section is tagged with the epoch
 *     current at its outermost lock and releases the address of that
 *     epoch; a reclamation of epoch g acquires the addresses of the epochs
 *     up to g (util/rcu.c).  One address released by every unlock and
 *     acquired by every reclamation, as this was at first, also ordered
 *     a read made after a reader's section before the free whenever the
 *     reader ran any later section first, a section the grace period did
 *     not wait for (tests/tsan/call_rcu_edges.c, "later");
 *   - call_rcu's queue: hr__call_rcu releases the rcu head's address and
 *     the callback acquires it (HR__CB_BEGIN), so what the thread did
 *     before handing the object over happens before the callback;
 *   - rcu_barrier: every callback releases a second address when done
 *     (HR__CB_DONE) and hr__rcu_barrier acquires it, so what the owner
 *     frees after the barrier is ordered after the callbacks that used it.
 * With these, tests/tsan.supp needs no suppression of races inside
 * liburcu's frames (which hid every race on the call_rcu thread);
 * tests/tsan/call_rcu_edges.c proves a too-early free through call_rcu is
 * reported.
 */
#ifndef HR_UTIL_RCU_H
#define HR_UTIL_RCU_H

#include <stdatomic.h>
#include <urcu/urcu-bp.h>

#if defined(__SANITIZE_THREAD__)
#define HR__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HR__TSAN 1
#endif
#endif

/* What hr__call_rcu takes: liburcu's head, and in TSan builds the epoch
 * of the grace period the callback waits for. */
typedef struct hr__rcu_head_s {
  struct rcu_head head; /* first: a callback gets its address */
#ifdef HR__TSAN
  unsigned long tsan_epoch;
#endif
} hr__rcu_head_t;

#ifdef HR__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* The epochs a reclamation acquires one by one: the HR__GP_WINDOW up to
 * its own; earlier ones through what the grace periods that ended before
 * it gathered (util/rcu.c).  Sections release into a ring of addresses
 * far larger than the window: a reclamation whose grace period ends when
 * the epochs have run more than the ring past its own can no longer tell
 * its sections' addresses from later ones' and acquires none of them, so
 * a ring of twice the window (512) made TSan report frees that were
 * correct under heavy route churn (thousands of tables a second,
 * tests/tsan/call_rcu_edges.c "busy"); 2^16 takes 64 KiB, in TSan builds
 * only. */
#define HR__GP_WINDOW 256
#define HR__GP_RING ((unsigned long)1 << 16)
extern _Atomic unsigned long hr__rcu_tsan_epoch;
extern char hr__rcu_tsan_edges[HR__GP_RING], hr__rcu_tsan_barrier_edge;
extern _Thread_local unsigned long hr__rcu_tsan_section_epoch;
extern _Thread_local unsigned hr__rcu_tsan_depth;
/* A grace period of epoch `g` has ended: acquire what it orders. */
void hr__rcu_tsan_gp_end(unsigned long g);
/* A grace period begins: its epoch.  Relaxed: a tag, nothing ordered by it
 * (a section that loads the epoch before the bump is one the grace period
 * waits for, since the bump comes before it begins). */
static inline unsigned long hr__rcu_tsan_gp_begin(void) {
  return atomic_fetch_add_explicit(&hr__rcu_tsan_epoch, 1, memory_order_relaxed);
}
#define HR__CB_DONE() __tsan_release(&hr__rcu_tsan_barrier_edge)
#define HR__CB_BEGIN(h)                                                      \
  (__tsan_acquire(h),                                                        \
   hr__rcu_tsan_gp_end(caa_container_of((h), hr__rcu_head_t, head)->tsan_epoch))
#else
#define HR__CB_DONE() ((void)0)
#define HR__CB_BEGIN(h) ((void)(h))
#endif

static inline void hr__rcu_read_lock(void) {
#ifdef HR__TSAN
  /* The epoch before the lock: a grace period that bumps it after this
   * load begins after it, and waits for this section. */
  if (hr__rcu_tsan_depth++ == 0)
    hr__rcu_tsan_section_epoch =
        atomic_load_explicit(&hr__rcu_tsan_epoch, memory_order_relaxed);
#endif
  urcu_bp_read_lock();
}

static inline void hr__rcu_read_unlock(void) {
#ifdef HR__TSAN
  __tsan_release(&hr__rcu_tsan_edges[hr__rcu_tsan_section_epoch % HR__GP_RING]);
  hr__rcu_tsan_depth--;
#endif
  urcu_bp_read_unlock();
}

/* Waits for a grace period (never inside a section: it would wait for
 * itself); what follows is ordered after every section that had begun. */
static inline void hr__synchronize_rcu(void) {
#ifdef HR__TSAN
  unsigned long g = hr__rcu_tsan_gp_begin();
  urcu_bp_synchronize_rcu();
  hr__rcu_tsan_gp_end(g);
#else
  urcu_bp_synchronize_rcu();
#endif
}

/* Hands `h` to call_rcu: `fn` runs on liburcu's call_rcu thread after a
 * grace period, gets &h->head, and must begin with HR__CB_BEGIN(head) and
 * end with HR__CB_DONE(). */
static inline void hr__call_rcu(hr__rcu_head_t *h, void (*fn)(struct rcu_head *)) {
#ifdef HR__TSAN
  /* The grace period begins after the enqueue: its epoch now.  Stored
   * before the release below, which the callback's acquire pairs with. */
  h->tsan_epoch = hr__rcu_tsan_gp_begin();
  __tsan_release(&h->head);
#endif
  urcu_bp_call_rcu(&h->head, fn);
}

/* Waits until every callback queued with urcu_bp_call_rcu so far has run
 * (each must end with HR__CB_DONE()).  Not inside a section: liburcu's
 * barrier returns at once there. */
static inline void hr__rcu_barrier(void) {
  urcu_bp_barrier();
#ifdef HR__TSAN
  __tsan_acquire(&hr__rcu_tsan_barrier_edge);
#endif
}

#endif /* HR_UTIL_RCU_H */
