/* SPDX-License-Identifier: MIT */
/*
 * Per-loop contexts (HR_CONTEXT_LOOP) against their route's removal, in
 * the interleaving contexts.pml's RETIRED_FIRST needs, forced with test
 * points (util/testpoint.h): the writer is held just before it publishes
 * the table without the route, while the loop sweeps its contexts twice
 * and serves a request on the table still current.  The context must
 * survive (the route is still published) and serve that request; once
 * the table without the route is out, the next sweep destroys it, on the
 * loop's thread, and no second context is ever made.  And a request
 * matched before its route's removal whose body arrives after two sweeps:
 * the context must wait for it (the request is counted from its match, not
 * from its invocation), serve it, and no second one be made for the route
 * that is gone (contexts.pml's ONE_CONTEXT).  And other routes' changes:
 * a table that still has the route must not retire it (the writer's
 * bookkeeping the model abstracts away).
 *
 * ctest-labels: tsan
 * ctest-needs: testpoints
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "util/testpoint.h"

static struct {
  fx_t *fx;
  _Atomic int armed;        /* hold the next publication */
  _Atomic int sweeps;       /* the loop's periodic sweeps so far */
  _Atomic int created, destroyed;
  _Atomic int held_status;  /* the request served while the writer was held */
  _Atomic int destroyed_while_held;
  char held_body[64];
} g;

static int ctx_create(void *udata, uv_loop_t *loop, void **ctx) {
  int *id = malloc(sizeof *id);
  (void)udata;
  (void)loop;
  if (id == NULL) return -1;
  *id = atomic_fetch_add(&g.created, 1);
  *ctx = id;
  return 0;
}

static void ctx_destroy(void *udata, void *ctx) {
  (void)udata;
  atomic_fetch_add(&g.destroyed, 1);
  free(ctx);
}

/* "ctx <id>" of this loop's context. */
static void h_loop(hr_request_t *req, hr_response_t *res, void *ctx) {
  char b[32];
  int n = snprintf(b, sizeof b, "ctx %d", *(int *)ctx);
  (void)req;
  hr_response_send(res, 200, b, (size_t)n);
}

static void h_loop_plain(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "plain", 5);
}

static void get_loop(void) {
  rc_t *c = fx_connect(g.fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, "GET /loop HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  snprintf(g.held_body, sizeof g.held_body, "%.*s", (int)r.body_len, r.body);
  atomic_store(&g.held_status, r.status);
  rc_response_free(&r);
  fx_drop(g.fx, c);
}

static void wait_sweeps(int n);

static void hook(hr__tp_t tp, void *arg) {
  (void)arg;
  if (tp == HR__TP_CTX_SWEPT) atomic_fetch_add(&g.sweeps, 1);
  if (tp == HR__TP_PUBLISH_STORE && atomic_exchange(&g.armed, 0)) {
    /* On the writer's thread, with the table that has the route still
     * published: two sweeps (the second began after this point), then a
     * request on that table. */
    wait_sweeps(2);
    atomic_store(&g.destroyed_while_held, atomic_load(&g.destroyed));
    get_loop();
  }
}

/* `method` /loop with per-loop contexts, on one worker loop, whose start
 * made its context. */
static void start_loop_route(fx_t *fx, const char *method) {
  hr_route_options_t o;
  memset(&g, 0, sizeof g);
  g.fx = fx;
  hr_route_options_init(&o);
  o.context_scope = HR_CONTEXT_LOOP;
  o.context_create = ctx_create;
  o.context_destroy = ctx_destroy;
  fx_route_opts(fx, method, "/loop", h_loop, NULL, &o);
  hr__tp_set(hook);
  fx_start(fx, 1);
  assert_int_equal(atomic_load(&g.created), 1); /* made at the loop's start */
}

static void test_context_outlives_sweeps_until_unpublished(void **state) {
  fx_t *fx = *state;
  int i;
  start_loop_route(fx, "GET");
  watchdog_say(60, "a route removal held against the context sweep");
  atomic_store(&g.armed, 1);
  assert_int_equal(hr_router_remove(fx->router, "GET", "/loop"), 0);
  /* While the route was still published: its context lived through two
   * sweeps and served the request. */
  assert_int_equal(atomic_load(&g.destroyed_while_held), 0);
  assert_int_equal(atomic_load(&g.held_status), 200);
  assert_string_equal(g.held_body, "ctx 0");
  /* Unpublished now: the next sweeps destroy it (bounded wait). */
  for (i = 0; i < 500 && atomic_load(&g.destroyed) == 0; i++) sleep_ms(10);
  watchdog(0);
  assert_int_equal(atomic_load(&g.destroyed), 1);
  assert_int_equal(atomic_load(&g.created), 1);
}

static void wait_sweeps(int n) {
  int from = atomic_load(&g.sweeps);
  while (atomic_load(&g.sweeps) < from + n) sleep_ms(10); /* bounded by the watchdog */
}

static void test_context_waits_for_a_matched_request(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  int i;
  start_loop_route(fx, "POST");
  watchdog_say(60, "a matched request against its route's removal");
  c = fx_connect(fx);
  /* 100 Continue: the server matched the request (end of its header
   * section); the body is still to come. */
  assert_int_equal(rc_send_str(c, "POST /loop HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                  "Expect: 100-continue\r\n\r\n"),
                   0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.raw_len, strlen("HTTP/1.1 100 Continue\r\n\r\n"));
  assert_memory_equal(r.raw, "HTTP/1.1 100 Continue\r\n\r\n", r.raw_len);
  rc_response_free(&r);
  assert_int_equal(hr_router_remove(fx->router, "POST", "/loop"), 0);
  wait_sweeps(2); /* the second began after the removal */
  assert_int_equal(atomic_load(&g.destroyed), 0);
  assert_int_equal(rc_send_str(c, "body"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "ctx 0", &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  /* Its request over, the context goes at a next sweep. */
  for (i = 0; i < 500 && atomic_load(&g.destroyed) == 0; i++) sleep_ms(10);
  watchdog(0);
  assert_int_equal(atomic_load(&g.destroyed), 1);
  assert_int_equal(atomic_load(&g.created), 1);
}

/* Other routes' changes publish tables that still have /loop: a removal
 * and an addition (a path each), then a whole build (the first route of an
 * extension method, and a transaction).  The writer's bookkeeping
 * (writer_mark, for whole builds) must leave /loop's core unretired, so
 * its context lives through the sweeps after them and keeps serving. */
static void test_context_outlives_other_routes_changes(void **state) {
  fx_t *fx = *state;
  fx_route(fx, "GET", "/other", h_loop_plain, NULL);
  start_loop_route(fx, "GET");
  watchdog_say(60, "another route's removal against a context sweep");
  assert_int_equal(hr_router_remove(fx->router, "GET", "/other"), 0);
  assert_int_equal(hr_router_add(fx->router, "GET", "/new", h_loop_plain, NULL, NULL), 0);
  assert_int_equal(hr_router_add(fx->router, "PURGE", "/new", h_loop_plain, NULL, NULL), 0);
  {
    hr_txn_t *txn;
    assert_int_equal(hr_router_begin(fx->router, &txn), 0);
    assert_int_equal(hr_txn_remove(txn, NULL, "GET", "/new"), 0);
    assert_int_equal(hr_txn_commit(txn, NULL), 0);
  }
  wait_sweeps(2); /* the second began after every publication */
  assert_int_equal(atomic_load(&g.destroyed), 0);
  get_loop();
  watchdog(0);
  assert_int_equal(atomic_load(&g.held_status), 200);
  assert_string_equal(g.held_body, "ctx 0");
  assert_int_equal(atomic_load(&g.created), 1);
  assert_int_equal(atomic_load(&g.destroyed), 0);
}

static int teardown(void **state) {
  hr__tp_set(NULL);
  return fx_teardown(state);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_context_outlives_sweeps_until_unpublished, fx_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_context_waits_for_a_matched_request, fx_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_context_outlives_other_routes_changes, fx_setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
