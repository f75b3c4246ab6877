/* SPDX-License-Identifier: MIT */
/*
 * Request locals: a before-middleware attaches a value under a key, the
 * handler and the after-middleware read it, the key's destructor runs once
 * per value when the exchange ends (and for a replaced value at once), and
 * keys are refused past HR_MAX_LOCALS or when another router gave them.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static hr_local_key_t k_user, k_trace;
static _Atomic int destroyed, after_saw;
static char user_store[4][32];

static void destroy_value(void *udata, void *value) {
  (void)value;
  assert_string_equal((const char *)udata, "user-key");
  atomic_fetch_add(&destroyed, 1);
}

/* Takes the user from X-User; a second set replaces the first value. */
static hr_next_t mw_auth(hr_request_t *req, hr_response_t *res, void *udata) {
  static int n;
  hr_span_t u;
  char *slot = user_store[n++ % 4];
  (void)res;
  (void)udata;
  if (hr_request_field(req, HR_SPAN_LIT("X-User"), NULL, &u) != 0) return HR_NEXT;
  assert_int_equal(hr_request_set_local(req, k_user, (void *)"first-value"), 0);
  snprintf(slot, 32, "%.*s", (int)u.len, u.ptr);
  assert_int_equal(hr_request_set_local(req, k_user, slot), 0); /* replaces: one destroy */
  assert_int_equal(hr_request_set_local(req, k_trace, (void *)"t-1"), 0);
  return HR_NEXT;
}

static void mw_after(hr_request_t *req, int status, void *udata) {
  (void)status;
  (void)udata;
  if (hr_request_local(req, k_user) != NULL) atomic_fetch_add(&after_saw, 1);
}

static void h_whoami(hr_request_t *req, hr_response_t *res, void *udata) {
  char body[96];
  const char *u = hr_request_local(req, k_user), *t = hr_request_local(req, k_trace);
  int n = snprintf(body, sizeof body, "user=%s trace=%s", u ? u : "-", t ? t : "-");
  (void)udata;
  /* A key this router did not give. */
  assert_int_equal(hr_request_set_local(req, HR_MAX_LOCALS - 1, body), HR_EINVAL);
  assert_null(hr_request_local(req, HR_MAX_LOCALS - 1));
  hr_response_send(res, 200, body, (size_t)n);
}

static void test_locals(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  hr_router_t *other;
  hr_local_key_t k;
  int i, rc;
  atomic_store(&destroyed, 0);
  atomic_store(&after_saw, 0);
  assert_int_equal(hr_router_local_key(fx->router, destroy_value, "user-key", &k_user), 0);
  assert_int_equal(hr_router_local_key(fx->router, NULL, NULL, &k_trace), 0);
  assert_int_not_equal(k_user, k_trace);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_auth, mw_after, NULL), 0);
  fx_route(fx, "GET", "/me", h_whoami, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /me HTTP/1.1\r\nHost: a\r\nX-User: ada\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "user=ada trace=t-1", NULL);
  /* Not set on this request: nothing leaks from the one before. */
  assert_int_equal(rc_send_str(c, "GET /me HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "user=- trace=-", NULL);
  assert_int_equal(rc_send_str(c, "GET /me HTTP/1.1\r\nHost: a\r\nX-User: bob\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "user=bob trace=t-1", NULL);
  fx_drop(fx, c);
  fx_stop(fx, 2000);
  /* Two requests set the user twice each: the first value replaced, then
   * the value at the end of the exchange. */
  assert_int_equal(atomic_load(&destroyed), 4);
  assert_int_equal(atomic_load(&after_saw), 2);
  /* Keys are the router's: past HR_MAX_LOCALS, HR_ETOOLARGE. */
  assert_int_equal(hr_router_new(&other, NULL), 0);
  for (i = 0, rc = 0; rc == 0; i++) rc = hr_router_local_key(other, NULL, NULL, &k);
  assert_int_equal(rc, HR_ETOOLARGE);
  assert_int_equal(i - 1, HR_MAX_LOCALS);
  hr_router_free(other);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_locals, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
