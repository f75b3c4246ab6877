/* SPDX-License-Identifier: MIT */
/*
 * Read-side critical sections and deferred reclamation, from liburcu's
 * bulletproof flavour (urcu-bp: any thread may read without registering).
 *
 * ThreadSanitizer cannot see liburcu's own synchronisation (inline assembly
 * atomics), so in TSan builds every read-side unlock releases, and every
 * reclamation callback acquires, one annotation address: that is the
 * happens-before edge a grace period provides (every reader that could see
 * the object has left its critical section before it is freed).
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
extern char hr__rcu_tsan_edge;
#define HR__GP_RELEASE() __tsan_release(&hr__rcu_tsan_edge)
#define HR__GP_ACQUIRE() __tsan_acquire(&hr__rcu_tsan_edge)
#else
#define HR__GP_RELEASE() ((void)0)
#define HR__GP_ACQUIRE() ((void)0)
#endif

static inline void hr__rcu_read_lock(void) { urcu_bp_read_lock(); }

static inline void hr__rcu_read_unlock(void) {
  HR__GP_RELEASE();
  urcu_bp_read_unlock();
}

#endif /* HR_UTIL_RCU_H */
