/* SPDX-License-Identifier: MIT */
/*
 * The router's own readers (hr_router_route_stats, hr_router_stats,
 * hr_router_dump) against a writer that is inside a read-side section, as
 * a handler changing routes is: its replaced tables go to call_rcu, whose
 * grace period waits for the sections that had begun when the tables were
 * handed over, and for no later one.  The reader reads a table in one
 * section, then, once the writer has handed that table over, runs another
 * section of its own, which began after the handover; the writer's section
 * keeps the grace period open until it is over.  Only the first section
 * orders the reader's use of the old table before its free, so everything
 * the reader reads of it must be read inside that section: ThreadSanitizer
 * reports a read made after it, however late the free comes (and must not
 * count the later section as an edge: util/rcu.h's epochs).  And a
 * route's counters read on another thread while its loop makes the slot
 * that holds them.  The steps are ordered with relaxed flags only.
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <hroute.h>

#include "fixture.h"
#include "sync.h"
#include "util/rcu.h"

static void h_ok(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "ok", 2);
}

static struct {
  hr_router_t *r;
  int which; /* the reader of this round */
  _Atomic int read_once, handed_over, read_again;
  int rc[2];
  size_t routes[2];
} g;

static void count_bytes(void *ctx, const char *p, size_t n) {
  (void)p;
  *(size_t *)ctx += n;
}

/* One read by reader `which`, in a section of its own; the routes it saw. */
static int read_one(int which, size_t *routes) {
  hr_route_stats_t rs;
  hr_router_stats_t st;
  size_t n = 0;
  int rc = 0;
  *routes = 0;
  switch (which) {
    case 0:
      rc = hr_router_route_stats(g.r, NULL, "GET", "/s", &rs);
      *routes = rc == 0;
      break;
    case 1:
      hr_router_stats(g.r, &st);
      *routes = st.routes;
      break;
    default:
      rc = hr_router_dump(g.r, count_bytes, &n);
      *routes = n > 0;
      break;
  }
  return rc;
}

static void *reader(void *arg) {
  (void)arg;
  /* Its last section before the handover: nothing later orders it. */
  g.rc[0] = read_one(g.which, &g.routes[0]);
  atomic_store_explicit(&g.read_once, 1, memory_order_relaxed);
  spin_until(&g.handed_over, 1);
  g.rc[1] = read_one(g.which, &g.routes[1]); /* begun after the handover */
  atomic_store_explicit(&g.read_again, 1, memory_order_relaxed);
  return NULL;
}

static void round_of(int which) {
  pthread_t t;
  int i;
  atomic_store(&g.read_once, 0);
  atomic_store(&g.handed_over, 0);
  atomic_store(&g.read_again, 0);
  g.which = which;
  assert_int_equal(pthread_create(&t, NULL, reader, NULL), 0);
  spin_until(&g.read_once, 1);
  hr_router_read_lock();
  /* Enough publications for a batch of replaced tables, the one the
   * reader read first among them: from inside the section they go to
   * call_rcu. */
  for (i = 0; i < 20; i++) {
    assert_int_equal(hr_router_add(g.r, "GET", "/churn", h_ok, NULL, NULL), 0);
    assert_int_equal(hr_router_remove(g.r, "GET", "/churn"), 0);
  }
  atomic_store_explicit(&g.handed_over, 1, memory_order_relaxed);
  spin_until(&g.read_again, 1);
  hr_router_read_unlock();
  hr__rcu_barrier(); /* the callbacks have freed the old tables */
  pthread_join(t, NULL);
  assert_int_equal(g.rc[0], 0);
  assert_int_equal(g.rc[1], 0);
  assert_int_equal(g.routes[0], 1);
  assert_int_equal(g.routes[1], 1);
}

static void test_readers_against_a_writer_in_a_section(void **state) {
  (void)state;
  memset(&g, 0, sizeof g);
  assert_int_equal(hr_router_new(&g.r, NULL), 0);
  assert_int_equal(hr_router_add(g.r, "GET", "/s", h_ok, NULL, NULL), 0);
  watchdog_say(60, "the router's readers against a writer in a section");
  round_of(0); /* hr_router_route_stats */
  round_of(1); /* hr_router_stats */
  round_of(2); /* hr_router_dump */
  watchdog(0);
  hr_router_free(g.r);
}

/* ---- a route's counters while its loop makes its slot -------------------- */

/* The loop makes the route's slot for its loop (zeroed, then its pointer
 * stored) at the route's first request, before the handler runs; another
 * thread reads the route's counters as soon as the handler has run, ordered
 * with it by a relaxed flag only: the slot pointer's release/acquire must
 * order the zeroing before the reader's loads. */
static _Atomic int invoked;

static void h_count(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  atomic_store_explicit(&invoked, 1, memory_order_relaxed);
  hr_response_send(res, 200, "counted", 7);
}

static struct {
  hr_router_t *r;
  int rc;
  hr_route_stats_t st;
} sr;

static void *stats_reader(void *arg) {
  (void)arg;
  spin_until(&invoked, 1);
  sr.rc = hr_router_route_stats(sr.r, NULL, "GET", "/count", &sr.st);
  return NULL;
}

static void test_counters_while_the_loop_makes_its_slot(void **state) {
  fx_t *fx = *state;
  pthread_t t;
  rc_t *c;
  rc_response_t resp;
  atomic_store(&invoked, 0);
  memset(&sr, 0, sizeof sr);
  sr.r = fx->router;
  fx_route(fx, "GET", "/count", h_count, NULL);
  fx_start(fx, 1);
  watchdog_say(60, "route counters read while the loop makes its slot");
  assert_int_equal(pthread_create(&t, NULL, stats_reader, NULL), 0);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /count HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "counted", &resp);
  rc_response_free(&resp);
  fx_drop(fx, c);
  pthread_join(t, NULL);
  watchdog(0);
  assert_int_equal(sr.rc, 0);
  assert_true(sr.st.requests <= 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_readers_against_a_writer_in_a_section),
      cmocka_unit_test_setup_teardown(test_counters_while_the_loop_makes_its_slot, fx_setup,
                                      fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
