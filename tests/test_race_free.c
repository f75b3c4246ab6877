/* SPDX-License-Identifier: MIT */
/*
 * A router or a TLS server freed from inside a read-side section (a
 * handler tearing down a router or a server of its own, an application
 * between hr_router_read_lock and hr_router_read_unlock).  Such a free
 * cannot wait for a grace period, and liburcu's rcu_barrier refuses to
 * run inside a section (it prints an error and returns at once), so what
 * was handed to call_rcu must not need the owner's memory when its
 * callback runs later: replaced route tables (their invokers and cores
 * free through the router's allocator), retired TLS contexts, names
 * tables and ticket keys.  The allocator here poisons every block it
 * frees, so a callback that reaches freed owner memory crashes in any
 * build (and ThreadSanitizer reports the use after free); at the end
 * every block must be back.
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hroute.h>
#include "util/rcu.h"

#include "fixture.h"
#include "router/route.h"
#include "sync.h"
#include "tlsfx.h"

/* ---- an allocator that poisons what it frees ----------------------------- */

#define HDR 16
static _Atomic long live;

static void *p_malloc(void *ctx, size_t size) {
  unsigned char *p = malloc(size + HDR);
  (void)ctx;
  if (p == NULL) return NULL;
  memcpy(p, &size, sizeof size);
  atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
  return p + HDR;
}

static void p_free(void *ctx, void *ptr) {
  unsigned char *p;
  size_t size;
  (void)ctx;
  if (ptr == NULL) return;
  p = (unsigned char *)ptr - HDR;
  memcpy(&size, p, sizeof size);
  memset(p, 0xa5, size + HDR); /* a pointer read from here is not one */
  atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
  free(p);
}

static void *p_realloc(void *ctx, void *ptr, size_t size) {
  unsigned char *n;
  size_t old;
  if (ptr == NULL) return p_malloc(ctx, size);
  memcpy(&old, (unsigned char *)ptr - HDR, sizeof old);
  n = p_malloc(ctx, size);
  if (n == NULL) return NULL;
  memcpy(n, ptr, old < size ? old : size);
  p_free(ctx, ptr);
  return n;
}

static const hr_allocator_t poison = {p_malloc, p_realloc, p_free, NULL};

static void h_ok(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "ok", 2);
}

/* ---- a router ------------------------------------------------------------ */

static void test_router_freed_inside_a_section(void **state) {
  hr_router_options_t o;
  hr_router_t *r;
  (void)state;
  atomic_store(&live, 0);
  hr_router_options_init(&o);
  o.allocator = &poison;
  watchdog_say(60, "a router freed inside a read-side section");
  hr_router_read_lock();
  assert_int_equal(hr_router_new(&r, &o), 0);
  /* Two publications: two replaced tables wait for a grace period, one
   * holding the invoker of /a that the current table holds too. */
  assert_int_equal(hr_router_add(r, "GET", "/a", h_ok, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/b", h_ok, NULL, NULL), 0);
  hr_router_free(r);
  hr_router_read_unlock();
  /* Outside the section: whatever was left to call_rcu runs now. */
  hr__rcu_barrier();
  watchdog(0);
  assert_int_equal(atomic_load(&live), 0);
}

/* Another thread's section hands replaced tables to call_rcu; the router
 * is freed, from outside any section, as soon as the last callback is
 * done with it: hr_router_free sees no hold left but its own and waits
 * for nothing, so the holds' acq_rel drops must order every callback's
 * use of the router's memory before the free (the test waits for that
 * moment with a relaxed load, which orders nothing). */
static hr_router_t *churned;

static void *churn_in_a_section(void *arg) {
  int i;
  (void)arg;
  hr_router_read_lock();
  for (i = 0; i < 20; i++) {
    if (hr_router_add(churned, "GET", "/churn", h_ok, NULL, NULL) != 0 ||
        hr_router_remove(churned, "GET", "/churn") != 0)
      break;
  }
  hr_router_read_unlock();
  return NULL;
}

static void test_router_freed_as_its_callbacks_end(void **state) {
  hr_router_options_t o;
  pthread_t t;
  (void)state;
  atomic_store(&live, 0);
  hr_router_options_init(&o);
  o.allocator = &poison;
  assert_int_equal(hr_router_new(&churned, &o), 0);
  assert_int_equal(hr_router_add(churned, "GET", "/a", h_ok, NULL, NULL), 0);
  watchdog_say(60, "a router freed as its callbacks end");
  assert_int_equal(pthread_create(&t, NULL, churn_in_a_section, NULL), 0);
  pthread_join(t, NULL);
  assert_true(atomic_load_explicit(&churned->holds, memory_order_relaxed) > 1);
  while (atomic_load_explicit(&churned->holds, memory_order_relaxed) != 1) sched_yield();
  hr_router_free(churned);
  hr__rcu_barrier();
  watchdog(0);
  assert_int_equal(atomic_load(&live), 0);
}

/* A handler's own router: made, changed, matched and freed inside the
 * handler, that is inside its connection's section, on a worker thread. */
static void h_own_router(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_router_options_t o;
  hr_router_t *r;
  hr_match_t m;
  char buf[256];
  int ok;
  (void)req;
  (void)udata;
  hr_router_options_init(&o);
  o.allocator = &poison;
  ok = hr_router_new(&r, &o) == 0;
  ok = ok && hr_router_add(r, "GET", "/a", h_ok, NULL, NULL) == 0;
  ok = ok && hr_router_add(r, "GET", "/b", h_ok, NULL, NULL) == 0;
  ok = ok && hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT("h"), HR_SPAN_LIT("/a"),
                             buf, sizeof buf, &m) == 0 && m.status == 200;
  if (r != NULL) hr_router_free(r);
  hr_response_send(res, ok ? 200 : 500, ok ? "freed" : "failed", ok ? 5 : 6);
}

static void test_router_freed_by_a_handler(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t resp;
  atomic_store(&live, 0);
  fx_route(fx, "GET", "/own", h_own_router, NULL);
  fx_start(fx, 1);
  watchdog_say(60, "a router freed by a handler");
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /own HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "freed", &resp);
  rc_response_free(&resp);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  hr__rcu_barrier();
  watchdog(0);
  assert_int_equal(atomic_load(&live), 0);
}

/* A handler that frees its own server: the stop it needs is refused on
 * a worker thread (HR_ETHREAD), so the free must leave the running server
 * alone rather than free it under its workers. */
static fx_t *own_fx;

static void h_free_own_server(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_server_free(own_fx->server);
  hr_response_send(res, 200, "still here", 10);
}

static void test_server_freed_by_its_own_handler(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t resp;
  own_fx = fx;
  fx_route(fx, "GET", "/free", h_free_own_server, NULL);
  fx_start(fx, 1);
  watchdog_say(60, "a server freed by its own handler");
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /free HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "still here", &resp);
  rc_response_free(&resp);
  assert_int_equal(rc_send_str(c, "GET /free HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "still here", &resp);
  rc_response_free(&resp);
  fx_drop(fx, c);
  watchdog(0);
}

/* ---- a TLS server ---------------------------------------------------------- */

static tf_cert_t cert_a, cert_b;

static void test_tls_server_freed_inside_a_section(void **state) {
  hr_server_options_t so;
  hr_tls_options_t ta, tb;
  hr_router_t *r;
  hr_server_t *s;
  (void)state;
  atomic_store(&live, 0);
  tf_tls_options(&ta, &cert_a);
  tf_tls_options(&tb, &cert_b);
  assert_int_equal(hr_router_new(&r, NULL), 0);
  hr_server_options_init(&so);
  so.allocator = &poison;
  assert_int_equal(hr_server_new(&s, r, &so), 0);
  assert_int_equal(hr_server_listen_tls(s, "127.0.0.1", 0, &ta), 0);
  assert_int_equal(hr_server_tls_add_name(s, 0, "second.test", &tb), 0);
  watchdog_say(60, "a TLS server freed inside a read-side section");
  hr_router_read_lock();
  /* From inside the section each retirement goes to call_rcu: the old
   * default context, the old names table, the old ticket keys. */
  assert_int_equal(hr_server_tls_update(s, 0, &tb), 0);
  assert_int_equal(hr_server_tls_add_name(s, 0, "second.test", &ta), 0);
  assert_int_equal(hr_server_tls_rotate_tickets(s, 0), 0);
  hr_server_free(s);
  hr_router_read_unlock();
  hr__rcu_barrier();
  watchdog(0);
  assert_int_equal(atomic_load(&live), 0);
  hr_router_free(r);
}

static int group_setup(void **state) {
  (void)state;
  return tf_cert_pair(&cert_a, &cert_b);
}

static int group_teardown(void **state) {
  (void)state;
  tf_cert_pair_free(&cert_a, &cert_b);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_router_freed_inside_a_section),
      cmocka_unit_test(test_router_freed_as_its_callbacks_end),
      cmocka_unit_test_setup_teardown(test_router_freed_by_a_handler, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_server_freed_by_its_own_handler, fx_setup,
                                      fx_teardown),
      cmocka_unit_test(test_tls_server_freed_inside_a_section),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
