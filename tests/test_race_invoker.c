/* SPDX-License-Identifier: MIT */
/*
 * An invoker's last two references dropped on two threads: the thread
 * whose drop frees it must see everything the other did with it before
 * its drop (the acq_rel decrement; with a relaxed one, ThreadSanitizer
 * reports the other thread's last read racing with the free).  The two
 * drops are ordered in time by a relaxed flag, which adds no
 * happens-before edge of its own.
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <hroute.h>

#include "router/route.h"
#include "sync.h"
#include "util/rcu.h"

static void h_one(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "one", 3);
}

static struct {
  hr_route_t *inv;
  _Atomic int first_dropped;
  void *seen_handler;
} g;

static void *first_owner(void *arg) {
  (void)arg;
  g.seen_handler = (void *)g.inv->handler; /* its last use of the invoker */
  hr__invoker_unref(g.inv);
  atomic_store_explicit(&g.first_dropped, 1, memory_order_relaxed);
  return NULL;
}

static void *last_owner(void *arg) {
  (void)arg;
  spin_until(&g.first_dropped, 1);
  hr__invoker_unref(g.inv); /* the last reference: frees it */
  return NULL;
}

static void test_last_unref_sees_the_other_owners_use(void **state) {
  hr_router_t *r;
  hr_match_t m;
  char buf[256];
  pthread_t a, b;
  int i;
  (void)state;
  memset(&g, 0, sizeof g);
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/one", h_one, NULL, NULL), 0);
  hr_router_read_lock();
  assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT("h"),
                                   HR_SPAN_LIT("/one"), buf, sizeof buf, &m),
                   0);
  assert_int_equal(m.status, 200);
  g.inv = (hr_route_t *)m.route;
  hr__invoker_ref_reader(g.inv); /* the first owner's */
  hr__invoker_ref_reader(g.inv); /* the last owner's */
  hr_router_read_unlock();
  /* Remove the route and publish until the table that held it has been
   * reclaimed (replaced tables go to call_rcu in batches: wait for the
   * callbacks after each round): then the two owners hold the only
   * references. */
  assert_int_equal(hr_router_remove(r, "GET", "/one"), 0);
  for (i = 0; i < 100 && atomic_load(&g.inv->refs) != 2; i++) {
    assert_int_equal(hr_router_add(r, "GET", "/churn", h_one, NULL, NULL), 0);
    assert_int_equal(hr_router_remove(r, "GET", "/churn"), 0);
    hr__rcu_barrier();
  }
  assert_int_equal(atomic_load(&g.inv->refs), 2);
  watchdog_say(60, "two owners dropping an invoker");
  assert_int_equal(pthread_create(&a, NULL, first_owner, NULL), 0);
  assert_int_equal(pthread_create(&b, NULL, last_owner, NULL), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  watchdog(0);
  assert_ptr_equal(g.seen_handler, (void *)h_one);
  hr_router_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_last_unref_sees_the_other_owners_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
