/* SPDX-License-Identifier: MIT */
/*
 * Memory: every allocation goes through the allocator hook; after warm-up,
 * keep-alive requests allocate nothing (hr_server_stats and the hook's own
 * count agree on a zero delta); and out-of-memory sweeps that fail the Nth
 * allocation for every N — around hr_router_new + hr_router_add (HR_ENOMEM,
 * nothing changed, nothing leaked) and around a server serving one request
 * (it answers or closes, never crashes, and frees everything).
 *
 * ctest-labels: tsan
 */
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static void h_param(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t id = hr_request_param(req, 0);
  (void)udata;
  ta_count();
  hr_response_add_field(res, HR_SPAN_LIT("X-Id"), id);
  hr_response_send(res, 200, id.ptr, id.len);
}

static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  /* Fixed length: a write lost to HR_ENOMEM makes hr_response_end close the
   * connection, so the client can tell (with the chunked coding the API
   * has no way to fail a started response). */
  hr_response_start(res, 200, 10);
  hr_response_write(res, "part1", 5);
  hr_response_write(res, "part2", 5);
  hr_response_end(res);
}

static const char reqs[] =
    "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n"
    "GET /users/12345 HTTP/1.1\r\nHost: a\r\nUser-Agent: t\r\n\r\n"
    "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 26\r\n\r\n"
    "abcdefghijklmnopqrstuvwxyz"
    "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-Note: trailer fields are copied into the arena\r\n\r\n"
    "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n"
    "GET /missing HTTP/1.1\r\nHost: a\r\n\r\n";

static void one_round(rc_t *c, int pipelined) {
  if (pipelined) {
    assert_int_equal(rc_send(c, reqs, sizeof reqs - 1), 0);
  } else {
    assert_int_equal(rc_send_split(c, reqs, sizeof reqs - 1, 40, 0), 0);
  }
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "12345", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "abcdefghijklmnopqrstuvwxyz", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "abc", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "part1part2", NULL);
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
}

static void add_routes(fx_t *fx) {
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  fx_route(fx, "GET", "/users/:id", h_param, NULL);
  fx_route(fx, "POST", "/echo", ta_echo, NULL);
  fx_route(fx, "GET", "/stream", h_stream, NULL);
}

static void test_steady_state_allocates_nothing(void **state) {
  fx_t *fx = *state;
  ca_t ca;
  rc_t *c[3];
  hr_server_stats_t before, after;
  uint64_t ca_before;
  int i, k;
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  add_routes(fx);
  fx_start(fx, 1);
  for (k = 0; k < 3; k++) c[k] = fx_connect(fx);
  for (i = 0; i < 10; i++) /* warm-up */
    for (k = 0; k < 3; k++) one_round(c[k], i & 1);
  expect_stat(fx, FX_REQUESTS, 10 * 3 * 6);
  fx_stats(fx, &before);
  ca_before = ca_calls(&ca);
  for (i = 0; i < 50; i++)
    for (k = 0; k < 3; k++) one_round(c[k], i & 1);
  expect_stat(fx, FX_REQUESTS, 60 * 3 * 6);
  fx_stats(fx, &after);
  if (after.allocations != before.allocations || ca_calls(&ca) != ca_before)
    fail_msg("steady state allocated: stats %llu, hook %llu",
             (unsigned long long)(after.allocations - before.allocations),
             (unsigned long long)(ca_calls(&ca) - ca_before));
  /* The statistic counts the hook's malloc/realloc calls. */
  assert_int_equal(after.allocations, ca_calls(&ca));
  for (k = 0; k < 3; k++) fx_drop(fx, c[k]);
  fx_stop(fx, 1000);
  assert_int_equal(ca_live(&ca), 0);
  ca_destroy(&ca);
}

/* ---- out-of-memory sweeps ----------------------------------------------- */

static void h_noop(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

static const struct {
  const char *methods, *pattern;
} sweep_routes[] = {
    {"GET", "/"},
    {"GET,POST", "/users/:id"},
    {"GET", "/users/:id/posts/:post"},
    {"PUT", "/files/*path"},
    {"*", "/any"},
    {"GET", "/a/b/c/d/e"},
};
#define N_SWEEP_ROUTES (sizeof sweep_routes / sizeof sweep_routes[0])

/* Runs one router build with the Nth allocation failing.  Returns 1 when
 * an allocation failed (the sweep goes on), 0 when none did. */
static int router_sweep_once(uint64_t n, int and_after) {
  ca_t ca;
  hr_router_options_t ro;
  hr_router_t *r = NULL;
  hr_route_options_t o;
  hr_field_t f[] = {{HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain")}};
  int rc, added[N_SWEEP_ROUTES] = {0}, failed;
  size_t i;
  ca_init(&ca);
  ca_fail_at(&ca, n, and_after);
  hr_router_options_init(&ro);
  ro.allocator = &ca.hook;
  hr_route_options_init(&o);
  o.fields = f;
  o.nfields = 1;
  rc = hr_router_new(&r, &ro);
  if (rc != 0) {
    if (rc != HR_ENOMEM) fail_msg("N=%llu: hr_router_new %s", (unsigned long long)n, hr_err_name(rc));
    assert_int_equal(ca_live(&ca), 0);
    ca_destroy(&ca);
    return 1;
  }
  for (i = 0; i < N_SWEEP_ROUTES; i++) {
    rc = hr_router_add(r, sweep_routes[i].methods, sweep_routes[i].pattern,
                       h_noop, NULL, &o);
    if (rc != 0 && rc != HR_ENOMEM)
      fail_msg("N=%llu: add %s: %s", (unsigned long long)n,
               sweep_routes[i].pattern, hr_err_name(rc));
    added[i] = rc == 0;
  }
  /* Whatever failed changed nothing: exactly the added routes match. */
  {
    static const char *const probe[N_SWEEP_ROUTES] = {
        "/", "/users/7", "/users/7/posts/8", "/files/x/y", "/any", "/a/b/c/d/e"};
    static const char *const meth[N_SWEEP_ROUTES] = {"GET", "POST", "GET",
                                                     "PUT", "GET", "GET"};
    for (i = 0; i < N_SWEEP_ROUTES; i++) {
      hr_match_t m;
      assert_int_equal(hr_router_match(r, hr_span_cstr(meth[i]),
                                       HR_SPAN_LIT(""), hr_span_cstr(probe[i]),
                                       NULL, 0, &m),
                       0);
      if ((m.status == 200) != added[i])
        fail_msg("N=%llu: %s %s status %d, added %d", (unsigned long long)n,
                 meth[i], probe[i], m.status, added[i]);
    }
  }
  hr_router_free(r);
  assert_int_equal(ca_live(&ca), 0);
  failed = ca.failed > 0;
  ca_destroy(&ca);
  return failed;
}

static void test_router_oom_sweep(void **state) {
  uint64_t n;
  int mode;
  (void)state;
  for (mode = 0; mode < 2; mode++) {
    for (n = 1; n < 5000; n++)
      if (!router_sweep_once(n, mode)) break;
    assert_true(n > 1 && n < 5000); /* the sweep reached a clean run */
    print_message("router sweep (%s): %llu allocation points\n",
                  mode ? "fail from N on" : "fail the Nth",
                  (unsigned long long)n - 1);
  }
}

static char sweep_body[200 * 1024];

/* One server lifetime with the Nth allocation failing: it may fail to
 * start (HR_ENOMEM), answer the request, answer 5xx, or close the
 * connection; it must not crash or leak. */
static int server_sweep_once(hr_router_t *router, uint64_t n, int and_after) {
  ca_t ca;
  hr_server_options_t o;
  hr_server_t *s = NULL;
  rc_t *c;
  rc_response_t r;
  int rc, failed;
  ca_init(&ca);
  ca_fail_at(&ca, n, and_after);
  hr_server_options_init(&o);
  o.allocator = &ca.hook;
  rc = hr_server_new(&s, router, &o);
  if (rc == 0) rc = hr_server_listen(s, "127.0.0.1", 0);
  if (rc == 0) rc = hr_server_start(s, 1);
  if (rc != 0) {
    if (rc != HR_ENOMEM)
      fail_msg("N=%llu: start: %s", (unsigned long long)n, hr_err_name(rc));
    hr_server_free(s);
    if (ca_live(&ca) != 0)
      fail_msg("N=%llu: %llu blocks leaked after a failed start",
               (unsigned long long)n, (unsigned long long)ca_live(&ca));
    ca_destroy(&ca);
    return 1;
  }
  c = rc_connect(hr_server_port(s, 0));
  if (c != NULL) {
    /* three requests: small, a 200 KiB body (grows buffers past any pool
     * block) and a streamed response */
    static const char *const want[3] = {"42", NULL, "part1part2"};
    char head[128];
    size_t i;
    snprintf(head, sizeof head,
             "GET /users/42 HTTP/1.1\r\nHost: a\r\n\r\n"
             "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
             sizeof sweep_body);
    rc_send_str(c, head);
    rc_send(c, sweep_body, sizeof sweep_body);
    rc_send_str(c, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n");
    for (i = 0; i < 3; i++) {
      rc = rc_read_response(c, &r, 0);
      if (rc != RC_OK) {
        if (!rc_closed_without_response(c, rc) && rc != RC_TRUNC)
          fail_msg("N=%llu: response %zu: read rc %d errno %d",
                   (unsigned long long)n, i, rc, c->err);
        rc_response_free(&r);
        break;
      }
      if (r.status != 200) {
        if (r.status != 500 && r.status != 503)
          fail_msg("N=%llu: status line \"%s\"", (unsigned long long)n,
                   r.status_line);
        rc_response_free(&r);
        break;
      }
      if (want[i] != NULL) {
        assert_string_equal(r.body, want[i]);
      } else {
        assert_int_equal(r.body_len, sizeof sweep_body);
        assert_memory_equal(r.body, sweep_body, sizeof sweep_body);
      }
      rc_response_free(&r);
    }
    rc_close(c);
  }
  assert_int_equal(hr_server_stop(s, 1000), 0);
  hr_server_free(s);
  if (ca_live(&ca) != 0)
    fail_msg("N=%llu: %llu blocks leaked", (unsigned long long)n,
             (unsigned long long)ca_live(&ca));
  failed = ca.failed > 0;
  ca_destroy(&ca);
  return failed;
}

static void test_server_oom_sweep(void **state) {
  fx_t *fx = *state;
  uint64_t n;
  int mode;
  size_t i;
  for (i = 0; i < sizeof sweep_body; i++) sweep_body[i] = (char)('a' + i % 26);
  add_routes(fx);
  for (mode = 0; mode < 2; mode++) {
    for (n = 1; n < 2000; n++) {
      watchdog(60); /* per iteration: the sweep as a whole may take longer */
      if (!server_sweep_once(fx->router, n, mode)) break;
    }
    assert_true(n > 1 && n < 2000);
    print_message("server sweep (%s): %llu allocation points\n",
                  mode ? "fail from N on" : "fail the Nth",
                  (unsigned long long)n - 1);
  }
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_steady_state_allocates_nothing),
      cmocka_unit_test(test_router_oom_sweep),
      T(test_server_oom_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
