/* SPDX-License-Identifier: MIT */
/*
 * Test points: named places in the concurrent code where a test may run
 * code of its own, on the thread that reaches the place, to force one
 * interleaving of threads without sleeping.  A test that wants "the reader
 * has loaded the generation but not walked yet, and the writer registers
 * now" installs a hook that, on the reader's thread at HR__TP_LOOKUP_GEN,
 * lets the writer go and waits for it to finish; the interleaving then
 * happens every run, not once in a thousand.
 *
 * Built in only when HROUTE_TESTPOINTS is defined (the CMake option of that
 * name, on by default in Debug builds, which the test stages use); in other
 * builds HR__TP() is nothing.  With no hook installed a point costs one
 * relaxed load and a branch.
 *
 * A hook that only spins on relaxed atomics adds no happens-before edge
 * between the threads it orders, so ThreadSanitizer still judges the
 * code's own synchronisation (tests/test_race_*.c rely on that).
 */
#ifndef HR_UTIL_TESTPOINT_H
#define HR_UTIL_TESTPOINT_H

typedef enum hr__tp_e {
  HR__TP_TLS_RETIRE_WAIT, /* a TLS writer is about to wait for a grace period */
  HR__TP_TLS_SNI_NAMES,   /* the server-name callback loaded the names table */
  HR__TP_TLS_NEW_SSL,     /* an accepted connection made its SSL */
  HR__TP_TLS_TICKET_EXPIRED, /* a handshake found the ticket keys expired, after its
                                section, before it rotates them */
  HR__TP_LOOKUP_GEN,      /* a delegate lookup loaded the generation */
  HR__TP_LOOKUP_WALKED,   /* a lookup walked, before it stores the cache word */
  HR__TP_DELEGATE_ODD,    /* a registration made the generation odd */
  HR__TP_DELEGATE_STORED, /* a registration stored the delegate, before the even bump */
  HR__TP_PUBLISH_STORE,   /* a route table is about to be published (router lock held) */
  HR__TP_CTX_SWEPT,       /* a loop's periodic sweep of per-loop contexts ended */
  HR__TP_DRAIN_CHECKED,   /* hr_server_drain saw a worker running, before it arms */
  HR__TP_DRAIN_ARMED,     /* hr_server_drain armed and woke, before its late check */
  HR__TP_COUNT
} hr__tp_t;

/* The hook: `tp` is the place, `arg` what the place names (the registry,
 * the server, the TLS configuration). */
typedef void (*hr__tp_fn)(hr__tp_t tp, void *arg);

#ifdef HROUTE_TESTPOINTS
#include <stdatomic.h>
extern _Atomic(hr__tp_fn) hr__tp_hook;
/* Installs `fn` (NULL: none) for every thread.  Install it before the
 * threads that reach the points start, or accept that a point reached
 * concurrently may miss it. */
static inline void hr__tp_set(hr__tp_fn fn) {
  atomic_store_explicit(&hr__tp_hook, fn, memory_order_relaxed);
}
#define HR__TP(tp, arg)                                                         \
  do {                                                                          \
    hr__tp_fn hr__tp_f = atomic_load_explicit(&hr__tp_hook, memory_order_relaxed); \
    if (hr__tp_f != NULL) hr__tp_f((tp), (arg));                                \
  } while (0)
#else
#define HR__TP(tp, arg) ((void)0)
#endif

#endif /* HR_UTIL_TESTPOINT_H */
