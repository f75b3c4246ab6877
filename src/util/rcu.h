/* SPDX-License-Identifier: MIT */
/*
 * Read-side critical sections and deferred reclamation, from liburcu's
 * bulletproof flavour (urcu-bp: any thread may read without registering).
 *
 * ThreadSanitizer cannot see liburcu's own synchronisation (inline assembly
 * atomics), so in TSan builds every read-side unlock releases, and every
 * reclamation callback acquires, one annotation address: that is the
 * happens-before edge a grace period provides (every reader that could see
 * the object has left its critical section before it is freed).  A second
 * address does the same for rcu_barrier: every reclamation callback
 * releases it when done (HR__CB_DONE) and hr__rcu_barrier acquires it, so
 * that what the owner frees after the barrier is ordered after the
 * callbacks that used it.
 */
#ifndef HR_UTIL_RCU_H
#define HR_UTIL_RCU_H

#include <urcu/urcu-bp.h>

#if defined(__SANITIZE_THREAD__)
#define HR__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HR__TSAN 1
#endif
#endif

#ifdef HR__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char hr__rcu_tsan_edge, hr__rcu_tsan_barrier_edge;
#define HR__GP_RELEASE() __tsan_release(&hr__rcu_tsan_edge)
#define HR__GP_ACQUIRE() __tsan_acquire(&hr__rcu_tsan_edge)
#define HR__CB_DONE() __tsan_release(&hr__rcu_tsan_barrier_edge)
#else
#define HR__GP_RELEASE() ((void)0)
#define HR__GP_ACQUIRE() ((void)0)
#define HR__CB_DONE() ((void)0)
#endif

static inline void hr__rcu_read_lock(void) { urcu_bp_read_lock(); }

static inline void hr__rcu_read_unlock(void) {
  HR__GP_RELEASE();
  urcu_bp_read_unlock();
}

/* Waits until every callback queued with urcu_bp_call_rcu so far has run
 * (each must end with HR__CB_DONE()). */
static inline void hr__rcu_barrier(void) {
  urcu_bp_barrier();
#ifdef HR__TSAN
  __tsan_acquire(&hr__rcu_tsan_barrier_edge);
#endif
}

#endif /* HR_UTIL_RCU_H */
