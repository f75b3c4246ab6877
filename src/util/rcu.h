/* SPDX-License-Identifier: MIT */
/*
 * Read-side critical sections and deferred reclamation, from liburcu's
 * bulletproof flavour (urcu-bp: any thread may read without registering).
 *
 * ThreadSanitizer cannot see liburcu's own synchronisation (liburcu is not
 * instrumented, and its queues use inline-assembly atomics), so in TSan
 * builds hroute tells it of the three edges it relies on:
 *   - the grace period: every read-side unlock releases, and every
 *     reclamation (a call_rcu callback, or the code after
 *     synchronize_rcu) acquires, one annotation address: every reader that
 *     could see the object has left its critical section before it is
 *     freed;
 *   - call_rcu's queue: hr__call_rcu releases the rcu_head's address and
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
#define HR__CB_BEGIN(head) (__tsan_acquire(head), __tsan_acquire(&hr__rcu_tsan_edge))
#else
#define HR__GP_RELEASE() ((void)0)
#define HR__GP_ACQUIRE() ((void)0)
#define HR__CB_DONE() ((void)0)
#define HR__CB_BEGIN(head) ((void)(head))
#endif

static inline void hr__rcu_read_lock(void) { urcu_bp_read_lock(); }

static inline void hr__rcu_read_unlock(void) {
  HR__GP_RELEASE();
  urcu_bp_read_unlock();
}

/* Hands `head` to call_rcu: `fn` runs on liburcu's call_rcu thread after
 * a grace period, and must begin with HR__CB_BEGIN(head) and end with
 * HR__CB_DONE(). */
static inline void hr__call_rcu(struct rcu_head *head, void (*fn)(struct rcu_head *)) {
#ifdef HR__TSAN
  __tsan_release(head);
#endif
  urcu_bp_call_rcu(head, fn);
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
