/* SPDX-License-Identifier: MIT */
/*
 * Proof that ThreadSanitizer sees races that involve liburcu's call_rcu
 * thread (run by tests/tsan/call_rcu_edges.sh, in TSan builds only).
 *
 *   call_rcu_edges ok     a reader reads the object inside its read-side
 *                         section; the writer unpublishes it, writes to it
 *                         and hands it to call_rcu, whose callback reads and
 *                         frees it.  Must run clean: the grace period and the
 *                         queue are the edges util/rcu.h annotates.
 *   call_rcu_edges early  the same, but the reader reads once more after its
 *                         section has ended: the callback may free the object
 *                         first.  A deliberate bug that TSan must report
 *                         (with `race:liburcu-bp.so.8` in the suppressions it
 *                         was hidden, since the free's stack is liburcu's).
 *   call_rcu_edges later  the late read again, but the reader then runs
 *                         another read-side section, which began after the
 *                         object was handed over (so the grace period does
 *                         not wait for it), and the writer keeps the grace
 *                         period from ending until that section is over.
 *                         The late read is still a bug TSan must report:
 *                         a grace period orders only the sections that had
 *                         begun when it began, so an annotation that let
 *                         every unlock release one address for every
 *                         reclamation to acquire hid it.
 *   call_rcu_edges busy   the correct program, but while the reader's
 *                         section is still open the writer hands 2,000
 *                         other objects to call_rcu: the object's grace
 *                         period ends with the epochs far past its own.
 *                         Must run clean (with a ring of 512 edges the
 *                         reader's release fell out of every window and
 *                         TSan reported the free: a false alarm under heavy
 *                         route churn).
 *
 * The reader's late read and the writer's handing over are ordered in time
 * with relaxed flags only, so nothing but the annotated edges orders them.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/rcu.h"

typedef struct obj_s {
  hr__rcu_head_t rcu;
  int value;
  int written_before_handover;
} obj_t;

static _Atomic(obj_t *) published;
static _Atomic int loaded, handed_over, later_done, busy_done;
static int early, later, busy;
static int seen;

static void spin(_Atomic int *f) {
  while (!atomic_load_explicit(f, memory_order_relaxed)) sched_yield();
}

static void free_obj(struct rcu_head *h) {
  obj_t *o = caa_container_of(h, obj_t, rcu.head);
  HR__CB_BEGIN(h);
  if (o->written_before_handover != 1) abort();
  free(o);
  HR__CB_DONE();
}

static void *reader(void *arg) {
  obj_t *o;
  (void)arg;
  hr__rcu_read_lock();
  o = atomic_load_explicit(&published, memory_order_acquire);
  seen = o->value;
  atomic_store_explicit(&loaded, 1, memory_order_relaxed);
  if (busy) spin(&busy_done); /* the section stays open meanwhile */
  hr__rcu_read_unlock();
  if (early || later) {
    spin(&handed_over);
    seen += o->value; /* the bug: after the section ended */
  }
  if (later) {
    hr__rcu_read_lock(); /* begun after the handover: not waited for */
    hr__rcu_read_unlock();
    atomic_store_explicit(&later_done, 1, memory_order_relaxed);
  }
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t t;
  obj_t *o = calloc(1, sizeof(*o));
  int i;
  if (argc != 2 || (strcmp(argv[1], "ok") != 0 && strcmp(argv[1], "early") != 0 &&
                    strcmp(argv[1], "later") != 0 && strcmp(argv[1], "busy") != 0)) {
    fprintf(stderr, "usage: call_rcu_edges ok|early|later|busy\n");
    return 2;
  }
  early = strcmp(argv[1], "early") == 0;
  later = strcmp(argv[1], "later") == 0;
  busy = strcmp(argv[1], "busy") == 0;
  if (o == NULL) return 1;
  o->value = 7;
  atomic_store_explicit(&published, o, memory_order_release);
  if (pthread_create(&t, NULL, reader, NULL) != 0) return 1;
  spin(&loaded);
  atomic_store_explicit(&published, NULL, memory_order_release);
  o->written_before_handover = 1;
  /* later: this thread's own section keeps the grace period open until
   * the reader's second section has ended (that section began after the
   * handover; this one before). */
  if (later) hr__rcu_read_lock();
  hr__call_rcu(&o->rcu, free_obj);
  atomic_store_explicit(&handed_over, 1, memory_order_relaxed);
  for (i = 0; busy && i < 2000; i++) { /* others, each its own epoch */
    obj_t *other = calloc(1, sizeof(*other));
    if (other == NULL) return 1;
    other->written_before_handover = 1;
    hr__call_rcu(&other->rcu, free_obj);
  }
  atomic_store_explicit(&busy_done, 1, memory_order_relaxed);
  if (later) {
    spin(&later_done);
    hr__rcu_read_unlock();
  }
  pthread_join(t, NULL);
  hr__rcu_barrier();
  printf("seen %d\n", seen);
  return 0;
}
