/* SPDX-License-Identifier: MIT */
/*
 * hr_server_stop joins the worker threads, and a worker may wait for a
 * grace period on its way out: here its per-loop context owns a router of
 * its own, which the context's destroy callback frees at the loop's end
 * (hr_router_free, outside any section there, waits for the router's
 * replaced tables' grace period).  A stop called inside a read-side
 * section (a handler of another server, an application between
 * hr_router_read_lock and unlock) would wait for that worker while the
 * worker's grace period waits for the caller's section: both forever.  It
 * must refuse (HR_ETHREAD) instead; the watchdog fails the old code.
 *
 * ctest-labels: tsan
 */
#include <stdatomic.h>
#include <string.h>

#include "fixture.h"

static _Atomic int destroyed;

static void h_ok(hr_request_t *req, hr_response_t *res, void *ctx) {
  (void)req;
  (void)ctx;
  hr_response_send(res, 200, "ok", 2);
}

/* A loop's own router, with a replaced table waiting for its grace
 * period. */
static int ctx_create(void *udata, uv_loop_t *loop, void **ctx) {
  hr_router_t *r;
  (void)udata;
  (void)loop;
  if (hr_router_new(&r, NULL) != 0) return -1;
  if (hr_router_add(r, "GET", "/a", h_ok, NULL, NULL) != 0 ||
      hr_router_add(r, "GET", "/b", h_ok, NULL, NULL) != 0) {
    hr_router_free(r);
    return -1;
  }
  *ctx = r;
  return 0;
}

static void ctx_destroy(void *udata, void *ctx) {
  (void)udata;
  hr_router_free(ctx); /* on the loop's thread, outside a section */
  atomic_fetch_add(&destroyed, 1);
}

static void test_stop_inside_a_section(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  atomic_store(&destroyed, 0);
  hr_route_options_init(&o);
  o.context_scope = HR_CONTEXT_LOOP;
  o.context_create = ctx_create;
  o.context_destroy = ctx_destroy;
  fx_route_opts(fx, "GET", "/loop", h_ok, NULL, &o);
  fx_start(fx, 1);
  watchdog_say(15, "hr_server_stop inside a read-side section");
  hr_router_read_lock();
  assert_int_equal(hr_server_stop(fx->server, 1000), HR_ETHREAD);
  hr_router_read_unlock();
  assert_int_equal(atomic_load(&destroyed), 0);
  assert_int_equal(fx_stop(fx, 1000), 0);
  watchdog(0);
  assert_int_equal(atomic_load(&destroyed), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_stop_inside_a_section, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
