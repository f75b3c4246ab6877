/* SPDX-License-Identifier: MIT */
/*
 * What a route's invoker does around its handler, over loopback:
 *   - typed parameters (hr_param_type_t): exact conversions at the limits,
 *     404 for values that do not convert, hr_request_param_value on typed
 *     and untyped parameters, registration errors;
 *   - route counters (hr_router_route_stats): per status class, lost
 *     exchanges, latency buckets, summed over two loops; a replaced route
 *     starts from zero, a route that only got new middleware does not.
 * Handler contexts and requests in flight across a change of their route:
 * test_invoker_lifetime.c.
 *
 * ctest-labels: tsan
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "held.h"

static void send_get(rc_t *c, const char *target) {
  char req[256];
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", target);
  assert_int_equal(rc_send_str(c, req), 0);
}

/* ---- typed parameters ------------------------------------------------------ */

/* Echoes the converted value of parameter 0 as "<kind>=<value>". */
static void h_typed(hr_request_t *req, hr_response_t *res, void *udata) {
  const char *kind = udata;
  hr_value_t v;
  char b[96];
  int n = 0, i;
  if (hr_request_param_value(req, 0, &v) != 0) {
    hr_response_send(res, 500, "not typed", 9);
    return;
  }
  switch (kind[0]) {
    case 'i': n = snprintf(b, sizeof b, "i=%" PRId64, v.i64); break;
    case 'u': n = snprintf(b, sizeof b, "u=%" PRIu64, v.u64); break;
    case 'b': n = snprintf(b, sizeof b, "b=%d", v.boolean); break;
    default:
      n = snprintf(b, sizeof b, "id=");
      for (i = 0; i < 16; i++) n += snprintf(b + n, sizeof b - (size_t)n, "%02x", v.uuid[i]);
  }
  hr_response_send(res, 200, b, (size_t)n);
}

/* /mix/:a/:s/:b typed {INT64, STRING, BOOL}: every accessor's answer. */
static void h_mix(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_value_t a = {0}, b = {0}, x;
  hr_span_t s = hr_request_param(req, 1);
  char out[160];
  int ra = hr_request_param_value(req, 0, &a), rs = hr_request_param_value(req, 1, &x);
  int rb = hr_request_param_value(req, 2, &b), ro = hr_request_param_value(req, 3, &x);
  int n = snprintf(out, sizeof out, "%d:%" PRId64 "|%s:%.*s|%d:%d|%s", ra, a.i64,
                   hr_err_name(rs), (int)s.len, s.ptr, rb, b.boolean, hr_err_name(ro));
  (void)udata;
  hr_response_send(res, 200, out, (size_t)n);
}

static void typed_route(fx_t *fx, const char *pattern, hr_param_type_t t,
                        const char *kind) {
  hr_route_options_t o;
  hr_route_options_init(&o);
  o.param_types = &t; /* copied */
  o.nparam_types = 1;
  fx_route_opts(fx, "GET", pattern, h_typed, (void *)kind, &o);
}

typedef struct tcase_s {
  const char *target;
  const char *body; /* NULL: 404 */
} tcase_t;

static const tcase_t typed_cases[] = {
    {"/i/0", "i=0"},
    {"/i/42", "i=42"},
    {"/i/-9223372036854775808", "i=-9223372036854775808"},
    {"/i/9223372036854775807", "i=9223372036854775807"},
    {"/i/9223372036854775808", NULL},
    {"/i/-9223372036854775809", NULL},
    {"/i/99999999999999999999999", NULL},
    {"/i/+5", NULL},  /* canonical spellings only: one number, one URL */
    {"/i/-0", NULL},
    {"/i/007", NULL},
    {"/i/-07", NULL},
    {"/i/10", "i=10"},
    {"/i/%2D12", "i=-12"}, /* decoded before conversion */
    {"/i/1a", NULL},
    {"/i/-", NULL},
    {"/i/+", NULL},
    {"/i/+-1", NULL},
    {"/i/1.0", NULL},
    {"/i/%205", NULL},
    {"/i/", NULL}, /* empty: no such path */
    {"/u/0", "u=0"},
    {"/u/00", NULL},
    {"/u/01", NULL},
    {"/u/18446744073709551615", "u=18446744073709551615"},
    {"/u/18446744073709551616", NULL},
    {"/u/99999999999999999999", NULL},
    {"/u/-1", NULL},
    {"/u/+1", NULL},
    {"/u/1e3", NULL},
    {"/b/true", "b=1"},
    {"/b/false", "b=0"},
    {"/b/TRUE", NULL},
    {"/b/True", NULL},
    {"/b/1", NULL},
    {"/b/0", NULL},
    {"/b/tru", NULL},
    {"/b/truex", NULL},
    {"/id/123e4567-e89b-12d3-a456-426614174000", "id=123e4567e89b12d3a456426614174000"},
    {"/id/123E4567-E89B-12D3-A456-426614174000", "id=123e4567e89b12d3a456426614174000"},
    {"/id/123e4567-E89B-12d3-A456-426614174000", "id=123e4567e89b12d3a456426614174000"},
    {"/id/00000000-0000-0000-0000-000000000000", "id=00000000000000000000000000000000"},
    {"/id/FFFFFFFF-ffff-FFFF-ffff-FFFFFFFFFFFF", "id=ffffffffffffffffffffffffffffffff"},
    {"/id/123e4567-e89b-12d3-a456-42661417400", NULL},    /* 35 */
    {"/id/123e4567-e89b-12d3-a456-4266141740000", NULL},  /* 37 */
    {"/id/123e456-7e89b-12d3-a456-426614174000", NULL},   /* dash moved */
    {"/id/123e4567-e89b-12d3-a4564-26614174000", NULL},   /* dash moved */
    {"/id/123e4567e89b12d3a456426614174000", NULL},       /* no dashes */
    {"/id/123e4567-e89b-12d3-a456-42661417400g", NULL},   /* not hex */
    {"/id/123e4567--89b-12d3-a456-426614174000", NULL},
    {"/id/123e4567-e89b-12d3-a456_426614174000", NULL},
};

static void test_typed_parameters(void **state) {
  fx_t *fx = *state;
  size_t i;
  rc_t *c;
  typed_route(fx, "/i/:v", HR_PARAM_INT64, "i");
  typed_route(fx, "/u/:v", HR_PARAM_UINT64, "u");
  typed_route(fx, "/b/:v", HR_PARAM_BOOL, "b");
  typed_route(fx, "/id/:v", HR_PARAM_UUID, "d");
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (i = 0; i < sizeof typed_cases / sizeof typed_cases[0]; i++) {
    const tcase_t *tc = &typed_cases[i];
    rc_response_t r;
    send_get(c, tc->target);
    if (rc_read_response(c, &r, 0) != RC_OK) fail_msg("%s: no response", tc->target);
    if (tc->body == NULL ? r.status != 404
                         : r.status != 200 || strcmp(r.body, tc->body) != 0)
      fail_msg("%s: got %d \"%s\", want %s", tc->target, r.status, r.body,
               tc->body ? tc->body : "404");
    rc_response_free(&r);
  }
}

/* With lenient_integers, "+5", "-0" and leading zeros convert, as before
 * canonical spellings were required. */
static void test_typed_lenient(void **state) {
  fx_t *fx = *state;
  hr_param_type_t ti = HR_PARAM_INT64, tu = HR_PARAM_UINT64;
  hr_route_options_t o;
  rc_t *c;
  hr_route_options_init(&o);
  o.lenient_integers = 1;
  o.nparam_types = 1;
  o.param_types = &ti;
  fx_route_opts(fx, "GET", "/i/:v", h_typed, (void *)"i", &o);
  o.param_types = &tu;
  fx_route_opts(fx, "GET", "/u/:v", h_typed, (void *)"u", &o);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_get(c, "/i/000000000000000000001"); /* 21 digits, value 1 */
  expect_response(c, "HTTP/1.1 200 OK", "i=1", NULL);
  send_get(c, "/i/+5");
  expect_response(c, "HTTP/1.1 200 OK", "i=5", NULL);
  send_get(c, "/i/-0");
  expect_response(c, "HTTP/1.1 200 OK", "i=0", NULL);
  send_get(c, "/u/0000000000000000000018446744073709551615");
  expect_response(c, "HTTP/1.1 200 OK", "u=18446744073709551615", NULL);
  send_get(c, "/u/+1"); /* never a sign on unsigned */
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
}

static void test_typed_accessors(void **state) {
  fx_t *fx = *state;
  static const hr_param_type_t mix[] = {HR_PARAM_INT64, HR_PARAM_STRING, HR_PARAM_BOOL};
  hr_route_options_t o;
  char want[64];
  rc_t *c;
  hr_route_options_init(&o);
  o.param_types = mix;
  o.nparam_types = 3;
  fx_route_opts(fx, "GET", "/mix/:a/:s/:b", h_mix, NULL, &o);
  /* fewer types than parameters: the rest are strings */
  o.nparam_types = 1;
  fx_route_opts(fx, "GET", "/few/:a/:s/:b", h_mix, NULL, &o);
  fx_route(fx, "GET", "/none/:v", h_typed, "i");
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_get(c, "/mix/-3/x%2Fy/false");
  expect_response(c, "HTTP/1.1 200 OK", "0:-3|HR_EINVAL:x/y|0:0|HR_EINVAL", NULL);
  send_get(c, "/mix/3/s/no");
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
  send_get(c, "/few/7/s/maybe");
  snprintf(want, sizeof want, "0:7|HR_EINVAL:s|%d:0|HR_EINVAL", HR_EINVAL);
  expect_response(c, "HTTP/1.1 200 OK", want, NULL);
  send_get(c, "/few/x/s/true");
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
  send_get(c, "/none/5"); /* untyped: hr_request_param_value says HR_EINVAL */
  expect_response(c, "HTTP/1.1 500 Internal Server Error", "not typed", NULL);
}

static void test_typed_registration_errors(void **state) {
  fx_t *fx = *state;
  static const hr_param_type_t two[] = {HR_PARAM_INT64, HR_PARAM_BOOL};
  hr_param_type_t bad = (hr_param_type_t)99;
  hr_route_options_t o;
  hr_route_error_t err;
  hr_router_stats_t st;
  hr_route_options_init(&o);
  o.error = &err;
  o.param_types = two;
  o.nparam_types = 2;
  memset(&err, 0, sizeof err);
  assert_int_equal(hr_router_add(fx->router, "GET", "/x/:a", h_typed, "i", &o), HR_EINVAL);
  assert_int_equal(err.code, HR_EINVAL);
  assert_non_null(err.reason);
  assert_int_equal(hr_router_add(fx->router, "GET", "/x", h_typed, "i", &o), HR_EINVAL);
  o.nparam_types = 1;
  assert_int_equal(hr_router_add(fx->router, "GET", "/x", h_typed, "i", &o), HR_EINVAL);
  o.param_types = NULL;
  assert_int_equal(hr_router_add(fx->router, "GET", "/x/:a", h_typed, "i", &o), HR_EINVAL);
  o.param_types = &bad;
  assert_int_equal(hr_router_add(fx->router, "GET", "/x/:a", h_typed, "i", &o), HR_EINVAL);
  hr_router_stats(fx->router, &st);
  assert_int_equal(st.routes, 0); /* nothing was registered */
  o.param_types = two;
  o.nparam_types = 2;
  assert_int_equal(hr_router_add(fx->router, "GET", "/x/:a/:b", h_typed, "i", &o), 0);
}

/* ---- route counters -------------------------------------------------------- */

/* Answers the status given as the query ("?404"). */
static void h_status(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t q = hr_request_query(req);
  char num[8] = {0};
  (void)udata;
  memcpy(num, q.ptr, q.len < 7 ? q.len : 7);
  hr_response_send(res, atoi(num) ? atoi(num) : 200, "s", 1);
}

/* Polls (bounded) until the route counted `requests` handler runs and
 * `ended` exchanges (responses[0..5]): both are updated as the exchange
 * ends, which may be just after the client read the response. */
static void wait_stats(fx_t *fx, const char *pattern, uint64_t requests,
                       uint64_t ended, hr_route_stats_t *st) {
  unsigned long long end = now_ms() + RC_TIMEOUT_MS;
  for (;;) {
    uint64_t sum = 0;
    int i;
    assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", pattern, st), 0);
    for (i = 0; i < 6; i++) sum += st->responses[i];
    if (st->requests == requests && sum == ended) return;
    if (now_ms() > end)
      fail_msg("%s: %llu requests, %llu ended; want %llu, %llu", pattern,
               (unsigned long long)st->requests, (unsigned long long)sum,
               (unsigned long long)requests, (unsigned long long)ended);
    sleep_ms(2);
  }
}

static void mw_nop(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)status;
  (void)udata;
}

static uint64_t latency_sum(const hr_route_stats_t *st) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < HR_LATENCY_BUCKETS; i++) s += st->latency_us[i];
  return s;
}

static void test_route_counters(void **state) {
  fx_t *fx = *state;
  static const int statuses[] = {200, 201, 302, 404, 409, 500, 503, 200};
  hr_route_stats_t st;
  hr_group_t *g;
  rc_t *c[3];
  int i;
  fx_route(fx, "GET", "/c", ta_text, "c");
  fx_route(fx, "GET", "/s", h_status, NULL);
  fx_route(fx, "GET", "/held", held_handler, "held");
  fx_route(fx, "GET,POST", "/multi", ta_text, "m");
  assert_int_equal(hr_router_group(fx->router, "h.example", NULL, &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/h", ta_text, "h", NULL), 0);
  fx_start(fx, 2);
  for (i = 0; i < 3; i++) c[i] = fx_connect(fx);
  for (i = 0; i < 30; i++) {
    send_get(c[i % 3], "/c");
    expect_response(c[i % 3], "HTTP/1.1 200 OK", "c", NULL);
  }
  wait_stats(fx, "/c", 30, 30, &st);
  assert_int_equal(st.responses[2], 30);
  assert_int_equal(st.responses[0] + st.responses[1] + st.responses[3] +
                   st.responses[4] + st.responses[5], 0);
  assert_int_equal(latency_sum(&st), 30);
  /* statuses chosen by the handler, by class */
  for (i = 0; i < 8; i++) {
    char t[16];
    snprintf(t, sizeof t, "/s?%d", statuses[i]);
    send_get(c[0], t);
    expect_response(c[0], status_line_of(statuses[i]), "s", NULL);
  }
  wait_stats(fx, "/s", 8, 8, &st);
  assert_int_equal(st.responses[2], 3);
  assert_int_equal(st.responses[3], 1);
  assert_int_equal(st.responses[4], 2);
  assert_int_equal(st.responses[5], 2);
  assert_int_equal(st.responses[0] + st.responses[1], 0);
  assert_int_equal(latency_sum(&st), 8);
  /* an exchange lost before its response: responses[0], no latency */
  send_get(c[1], "/held");
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  fx_drop(fx, c[1]);
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), HR_ECLOSED);
  wait_stats(fx, "/held", 1, 1, &st);
  assert_int_equal(st.responses[0], 1);
  assert_int_equal(latency_sum(&st), 0);
  /* a replaced route starts from zero */
  fx_route_opts(fx, "GET", "/c", ta_text, "c2",
                &(hr_route_options_t){.replace = 1});
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", "/c", &st), 0);
  assert_int_equal(st.requests, 0);
  assert_int_equal(st.responses[2], 0);
  assert_int_equal(latency_sum(&st), 0);
  send_get(c[2], "/c");
  expect_response(c[2], "HTTP/1.1 200 OK", "c2", NULL);
  wait_stats(fx, "/c", 1, 1, &st);
  /* methods in any order; hosts; unknown routes */
  send_get(c[2], "/multi");
  expect_response(c[2], "HTTP/1.1 200 OK", "m", NULL);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "POST,GET", "/multi", &st), 0);
  assert_int_equal(hr_router_route_stats(fx->router, "h.example", "GET", "/h", &st), 0);
  assert_int_equal(hr_router_route_stats(fx->router, "H.Example", "GET", "/h", &st), 0);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", "/h", &st), HR_ENOTFOUND);
  assert_int_equal(hr_router_route_stats(fx->router, "x.example", "GET", "/c", &st), HR_ENOTFOUND);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", "/nope", &st), HR_ENOTFOUND);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "POST", "/c", &st), HR_ENOTFOUND);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", "/multi", &st), HR_ENOTFOUND);
  assert_int_equal(hr_router_remove(fx->router, "GET", "/s"), 0);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", "/s", &st), HR_ENOTFOUND);
}

/* hr_router_use recompiles every invoker, but no route was replaced or
 * removed: its counters go on. */
static void test_counters_kept_by_middleware(void **state) {
  fx_t *fx = *state;
  hr_route_stats_t st;
  rc_t *c;
  int i;
  fx_route(fx, "GET", "/c", ta_text, "c");
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (i = 0; i < 3; i++) {
    send_get(c, "/c");
    expect_response(c, "HTTP/1.1 200 OK", "c", NULL);
  }
  wait_stats(fx, "/c", 3, 3, &st);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_nop, NULL), 0);
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET", "/c", &st), 0);
  assert_int_equal(st.requests, 3);
  send_get(c, "/c");
  expect_response(c, "HTTP/1.1 200 OK", "c", NULL);
  wait_stats(fx, "/c", 4, 4, &st);
  assert_int_equal(st.responses[2], 4);
}

static int held_setup(void **state) {
  held_init(&held_default);
  return fx_setup(state);
}

static int held_teardown(void **state) {
  int rc;
  held_release(&held_default);
  rc = fx_teardown(state);
  held_destroy(&held_default);
  return rc;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, held_setup, held_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_typed_parameters),
      T(test_typed_lenient),
      T(test_typed_accessors),
      T(test_typed_registration_errors),
      T(test_route_counters),
      T(test_counters_kept_by_middleware),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
