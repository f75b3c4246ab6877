/* SPDX-License-Identifier: MIT */
/*
 * Typed values through the server: a typed response field written by a
 * handler makes no heap allocation in steady state, typed request fields
 * and conditional GET answer as RFC 9110 §13 says, and a path parameter
 * typed with a user type is parsed by that type's delegate, found through
 * the lookup cache at each request, so a delegate registered later takes
 * effect for later requests.
 */
/* ctest-labels: tsan */
/* ctest-protocols: h1 h2 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "countalloc.h"
#include "fixture.h"

/* ---- a user type: an RGB colour written as six hex digits ----------------- */

typedef struct rgb_s {
  unsigned r, g, b;
} rgb_t;

static int hexv(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static int rgb_parse(hr_span_t t, void *value, const hr_mem_t *mem, void *udata) {
  rgb_t *v = value;
  unsigned x[6];
  size_t i;
  (void)mem;
  (void)udata;
  if (t.len != 6) return HR_EPARSE;
  for (i = 0; i < 6; i++) {
    int h = hexv(t.ptr[i]);
    if (h < 0) return HR_EPARSE;
    x[i] = (unsigned)h;
  }
  v->r = x[0] * 16 + x[1];
  v->g = x[2] * 16 + x[3];
  v->b = x[4] * 16 + x[5];
  return 0;
}

static void h_colour(hr_request_t *req, hr_response_t *res, void *udata) {
  const rgb_t *c = hr_request_param_object(req, 0);
  char body[64];
  int n;
  (void)udata;
  n = snprintf(body, sizeof body, "%u,%u,%u", c->r, c->g, c->b);
  hr_response_send(res, 200, body, (size_t)n);
}

static void test_param_of_user_type(void **state) {
  fx_t *fx = *state;
  hr_type_id_t rgb = 0;
  hr_param_type_t types[1];
  hr_route_options_t o;
  hr_delegate_t d = {NULL, rgb_parse, NULL};
  rc_t *c;
  assert_int_equal(hr_type_register(fx->router, "rgb", sizeof(rgb_t), 0, NULL, 0,
                                    NULL, &rgb), 0);
  types[0] = HR_PARAM_OF_TYPE(rgb);
  hr_route_options_init(&o);
  o.param_types = types;
  o.nparam_types = 1;
  fx_route_opts(fx, "GET", "/colour/:c", h_colour, NULL, &o);
  fx_start(fx, 1);
  c = fx_connect(fx);
  /* No delegate yet: the parameter cannot convert, so the path names no
   * resource. */
  assert_int_equal(rc_send_str(c, "GET /colour/ff8000 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "Not Found\n", NULL);
  /* Registered while serving: the next request uses it. */
  assert_int_equal(hr_delegate_register(fx->router, rgb, &d), 0);
  assert_int_equal(rc_send_str(c, "GET /colour/ff8000 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "255,128,0", NULL);
  assert_int_equal(rc_send_str(c, "GET /colour/zz8000 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "Not Found\n", NULL);
  fx_drop(fx, c);
}

/* A type that is not registered, or has no value size, cannot type a
 * parameter. */
static void test_param_type_errors(void **state) {
  fx_t *fx = *state;
  hr_type_id_t sizeless = 0;
  hr_param_type_t types[1];
  hr_route_options_t o;
  assert_int_equal(hr_type_register(fx->router, "sizeless", 0, 0, NULL, 0, NULL,
                                    &sizeless), 0);
  hr_route_options_init(&o);
  o.param_types = types;
  o.nparam_types = 1;
  types[0] = HR_PARAM_OF_TYPE(sizeless);
  assert_int_equal(hr_router_add(fx->router, "GET", "/a/:x", h_colour, NULL, &o),
                   HR_EINVAL);
  types[0] = HR_PARAM_OF_TYPE(3000);
  assert_int_equal(hr_router_add(fx->router, "GET", "/a/:x", h_colour, NULL, &o),
                   HR_EINVAL);
}

/* ---- typed fields ------------------------------------------------------------ */

static void h_typed(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_etag_t tag = {HR_SPAN_LIT("v42"), 0};
  hr_date_t lm = {784111777}; /* Sun, 06 Nov 1994 08:49:37 GMT */
  hr_cache_control_t cc;
  int rc;
  (void)udata;
  rc = hr_response_not_modified(req, res, &tag, lm.seconds);
  if (rc != 0) return; /* 304 sent */
  memset(&cc, 0, sizeof cc);
  cc.max_age = 60;
  cc.s_maxage = cc.max_stale = cc.min_fresh = -1;
  if (hr_response_add_typed(res, HR_SPAN_LIT("ETag"), HR_TYPE_ETAG, &tag) != 0 ||
      hr_response_add_typed(res, HR_SPAN_LIT("Last-Modified"), HR_TYPE_DATE, &lm) != 0 ||
      hr_response_add_typed(res, HR_SPAN_LIT("Cache-Control"), HR_TYPE_CACHE_CONTROL,
                            &cc) != 0) {
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  hr_response_send(res, 200, "body", 4);
}

static void test_typed_fields_and_conditional_get(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  fx_route(fx, "GET", "/doc", h_typed, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /doc HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "body", &r);
  expect_field(&r, "ETag", "\"v42\"", 0);
  expect_field(&r, "Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT", 0);
  expect_field(&r, "Cache-Control", "max-age=60", 0);
  rc_response_free(&r);
  /* If-None-Match matches (weakly): 304 with the validators, no body. */
  assert_int_equal(rc_send_str(c, "GET /doc HTTP/1.1\r\nHost: a\r\n"
                                  "If-None-Match: \"x\", W/\"v42\"\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 304 Not Modified", "", &r);
  expect_field(&r, "ETag", "\"v42\"", 0);
  rc_response_free(&r);
  /* If-None-Match takes precedence: no match means 200 even with a later
   * If-Modified-Since. */
  assert_int_equal(rc_send_str(c, "GET /doc HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"x\"\r\n"
                                  "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "body", NULL);
  /* If-Modified-Since not older than Last-Modified: 304. */
  assert_int_equal(rc_send_str(c, "GET /doc HTTP/1.1\r\nHost: a\r\n"
                                  "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 304 Not Modified", "", NULL);
  /* Older: 200.  A malformed date is ignored (RFC 9110 §13.1.3): 200. */
  assert_int_equal(rc_send_str(c, "GET /doc HTTP/1.1\r\nHost: a\r\n"
                                  "If-Modified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "body", NULL);
  assert_int_equal(rc_send_str(c, "GET /doc HTTP/1.1\r\nHost: a\r\n"
                                  "If-Modified-Since: yesterday\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "body", NULL);
  fx_drop(fx, c);
}

/* The preconditions of RFC 9110 §13.2.2, in their order, through the
 * server: the resource's validators are ETag "v42" and Last-Modified
 * Sun, 06 Nov 1994 08:49:37 GMT (h_typed). */
static void test_preconditions_in_order(void **state) {
  static const struct {
    const char *method, *fields, *status;
  } cases[] = {
      /* 1. If-Match: strong comparison; "*" for an existing resource */
      {"PUT", "If-Match: \"v42\"\r\n", "HTTP/1.1 200 OK"},
      {"PUT", "If-Match: \"x\", \"v42\"\r\n", "HTTP/1.1 200 OK"},
      {"PUT", "If-Match: *\r\n", "HTTP/1.1 200 OK"},
      {"PUT", "If-Match: \"x\"\r\n", "HTTP/1.1 412 Precondition Failed"},
      {"PUT", "If-Match: W/\"v42\"\r\n", "HTTP/1.1 412 Precondition Failed"},
      {"GET", "If-Match: \"x\"\r\n", "HTTP/1.1 412 Precondition Failed"},
      /* If-Match decides: If-Unmodified-Since is then not looked at */
      {"PUT", "If-Match: \"v42\"\r\nIf-Unmodified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n",
       "HTTP/1.1 200 OK"},
      /* 2. If-Unmodified-Since */
      {"PUT", "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", "HTTP/1.1 200 OK"},
      {"PUT", "If-Unmodified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n",
       "HTTP/1.1 412 Precondition Failed"},
      {"PUT", "If-Unmodified-Since: not a date\r\n", "HTTP/1.1 200 OK"}, /* ignored */
      /* a failed 1 or 2 comes before 3 */
      {"GET", "If-Match: \"x\"\r\nIf-None-Match: \"v42\"\r\n",
       "HTTP/1.1 412 Precondition Failed"},
      /* 3. If-None-Match after a passing If-Match */
      {"GET", "If-Match: \"v42\"\r\nIf-None-Match: \"v42\"\r\n", "HTTP/1.1 304 Not Modified"},
      {"PUT", "If-None-Match: *\r\n", "HTTP/1.1 412 Precondition Failed"},
      /* Long lists are read whole: the 17th tag matches (once past a cap
       * of 16); without it, none does. */
      {"PUT",
       "If-Match: \"t0\", \"t1\", \"t2\", \"t3\", \"t4\", \"t5\", \"t6\", \"t7\", \"t8\", "
       "\"t9\", \"t10\", \"t11\", \"t12\", \"t13\", \"t14\", \"t15\", \"v42\"\r\n",
       "HTTP/1.1 200 OK"},
      {"PUT",
       "If-Match: \"t0\", \"t1\", \"t2\", \"t3\", \"t4\", \"t5\", \"t6\", \"t7\", \"t8\", "
       "\"t9\", \"t10\", \"t11\", \"t12\", \"t13\", \"t14\", \"t15\", \"t16\"\r\n",
       "HTTP/1.1 412 Precondition Failed"},
      /* An If-Match that cannot be read fails closed: no lost update. */
      {"PUT", "If-Match: \"x\", v42\r\n", "HTTP/1.1 412 Precondition Failed"},
      /* Tags split over two field lines are one list (RFC 9110 §5.3). */
      {"PUT", "If-Match: \"x\"\r\nIf-Match: \"v42\"\r\n", "HTTP/1.1 200 OK"},
  };
  fx_t *fx = *state;
  size_t i;
  fx_route(fx, "GET,PUT", "/doc", h_typed, NULL);
  fx_start(fx, 1);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char req[512];
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    snprintf(req, sizeof req, "%s /doc HTTP/1.1\r\nHost: a\r\n%sContent-Length: 0\r\n\r\n",
             cases[i].method, cases[i].fields);
    assert_int_equal(rc_send_str(c, req), 0);
    assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
    if (strcmp(r.status_line, cases[i].status) != 0)
      fail_msg("%s with %s: %s, want %s", cases[i].method, cases[i].fields, r.status_line,
               cases[i].status);
    rc_response_free(&r);
    fx_drop(fx, c);
  }
}

static ca_t ca; /* static: the fixture's teardown still uses it after a failure */

/* Allocations the server made for `n` requests of `req` answered "body". */
static uint64_t allocations_for(fx_t *fx, rc_t *c, const char *req, int n) {
  hr_server_stats_t before, after;
  int i;
  fx_stats(fx, &before);
  for (i = 0; i < n; i++) {
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 200 OK", "body", NULL);
  }
  fx_stats(fx, &after);
  return after.allocations - before.allocations;
}

/* Typed fields, written and read, cost no allocation of their own: 200
 * requests to a handler that writes three typed fields and reads a tag
 * list allocate what 200 requests to a plain handler do -- nothing over
 * HTTP/1.1; over HTTP/2, what nghttp2 allocates per stream (printed). */
static void test_typed_field_allocates_nothing(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  uint64_t plain, typed;
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  fx_route(fx, "GET", "/doc", h_typed, NULL);
  fx_route(fx, "GET", "/plain", ta_text, "body");
  fx_start(fx, 1);
  c = fx_connect(fx);
  /* warm-up (HTTP/2: nghttp2 keeps up to 100 closed streams per
   * connection, h2_max_concurrent_streams, before it reuses their
   * blocks) */
  allocations_for(fx, c, "GET /doc HTTP/1.1\r\nHost: a\r\n\r\n", 80);
  allocations_for(fx, c, "GET /plain HTTP/1.1\r\nHost: a\r\n\r\n", 80);
  plain = allocations_for(fx, c, "GET /plain HTTP/1.1\r\nHost: a\r\n\r\n", 200);
  /* The tag list goes into the request arena, whose blocks are reused. */
  typed = allocations_for(fx, c, "GET /doc HTTP/1.1\r\nHost: a\r\n"
                                 "If-None-Match: \"a\", \"b\", W/\"c\"\r\n\r\n", 200);
  /* Over HTTP/2 too: nghttp2's blocks and the streams' come back from the
   * loop's slab (hr__slab_t). */
  assert_int_equal(plain, 0);
  assert_int_equal(typed, plain);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  /* Free the server before the allocator it uses. */
  hr_server_free(fx->server);
  fx->server = NULL;
  assert_int_equal(ca_live(&ca), 0);
  ca_destroy(&ca);
}

/* Offers JSON, then HTML, as the client's Accept allows: 406 when it
 * allows neither. */
static void h_negotiate(hr_request_t *req, hr_response_t *res, void *udata) {
  static const char *const names[] = {"application/json", "text/html"};
  hr_media_type_t offers[2];
  hr_media_ranges_t accept;
  hr_router_t *router = udata;
  int rc, k;
  size_t i;
  for (i = 0; i < 2; i++)
    assert_int_equal(hr_value_parse(router, HR_TYPE_MEDIA_TYPE, hr_span_cstr(names[i]),
                                    &offers[i], NULL),
                     0);
  rc = hr_request_typed(req, HR_SPAN_LIT("Accept"), HR_TYPE_MEDIA_RANGES, &accept);
  if (rc == HR_ENOTFOUND) accept.n = 0;
  else if (rc != 0) {
    hr_response_send(res, 400, "bad Accept", 10);
    return;
  }
  k = hr_media_negotiate(&accept, offers, 2);
  if (k < 0) {
    hr_response_send(res, 406, "", 0);
    return;
  }
  hr_response_send(res, 200, names[k], strlen(names[k]));
}

static void negotiate_expect(fx_t *fx, const char *accept, const char *status,
                             const char *body) {
  char req[256];
  rc_t *c = fx_connect(fx);
  snprintf(req, sizeof req, "GET /n HTTP/1.1\r\nHost: a\r\nAccept: %s\r\n\r\n", accept);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, status, body, NULL);
  fx_drop(fx, c);
}

/* Media-range parameters as RFC 9110 §12.5.1 has them, through the server:
 * a parameter the offer does not name is no reason for 406. */
static void test_accept_parameters(void **state) {
  fx_t *fx = *state;
  fx_route(fx, "GET", "/n", h_negotiate, fx->router);
  fx_start(fx, 1);
  negotiate_expect(fx, "application/json; charset=utf-8", "HTTP/1.1 200 OK", "application/json");
  negotiate_expect(fx, "text/html;level=1", "HTTP/1.1 200 OK", "text/html");
  negotiate_expect(fx, "application/json;q=0.1, text/html", "HTTP/1.1 200 OK", "text/html");
  negotiate_expect(fx, "image/png", "HTTP/1.1 406 Not Acceptable", "");
  /* Java's HttpURLConnection default ("*" alone, q=.2) is read, not refused. */
  negotiate_expect(fx, "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", "HTTP/1.1 200 OK",
                   "text/html");
  negotiate_expect(fx, "image/gif, *; q=.2", "HTTP/1.1 200 OK", "application/json");
  negotiate_expect(fx, "application/json;q=0, text/*;q=0", "HTTP/1.1 406 Not Acceptable", "");
}

/* Answers "<cookies> <value of c<last>> <Accept ranges> <pick>": lists of
 * any length, from the request arena. */
static void h_many(hr_request_t *req, hr_response_t *res, void *udata) {
  static const hr_media_type_t offers[1] = {{HR_SPAN_INIT("text"), HR_SPAN_INIT("x17"), 0, NULL}};
  hr_cookies_t ck;
  hr_media_ranges_t mr;
  char name[16], body[128];
  hr_span_t v;
  int n;
  (void)udata;
  if (hr_request_typed(req, HR_SPAN_LIT("Cookie"), HR_TYPE_COOKIES, &ck) != 0 ||
      hr_request_typed(req, HR_SPAN_LIT("Accept"), HR_TYPE_MEDIA_RANGES, &mr) != 0) {
    hr_response_send(res, 400, "unreadable", 10);
    return;
  }
  snprintf(name, sizeof name, "c%zu", ck.n - 1);
  v = hr_cookies_get(&ck, hr_span_cstr(name));
  n = snprintf(body, sizeof body, "%zu %.*s %zu %d %zu", ck.n, (int)v.len, v.ptr, mr.n,
               hr_media_negotiate(&mr, offers, 1), ck.dropped);
  hr_response_send(res, 200, body, (size_t)n);
}

/* A browser's 40 cookies, over two Cookie lines, and an Accept with 18
 * ranges read whole through the server (no fixed item cap). */
static void test_long_lists(void **state) {
  fx_t *fx = *state;
  char req[4096];
  size_t len;
  int i;
  rc_t *c;
  fx_route(fx, "GET", "/many", h_many, NULL);
  fx_start(fx, 1);
  /* A PHP-style array cookie among them is left out (counted as dropped). */
  len = (size_t)snprintf(req, sizeof req, "GET /many HTTP/1.1\r\nHost: a\r\nCookie: cart[1]=x; ");
  for (i = 0; i < 40; i++)
    len += (size_t)snprintf(req + len, sizeof req - len, "%sc%d=v%d",
                            i == 0 ? "" : i == 20 ? "\r\nCookie: " : "; ", i, i);
  len += (size_t)snprintf(req + len, sizeof req - len, "\r\nAccept: ");
  for (i = 0; i < 18; i++)
    len += (size_t)snprintf(req + len, sizeof req - len, "%stext/x%d;q=0.%d",
                            i ? ", " : "", i, i % 10);
  len += (size_t)snprintf(req + len, sizeof req - len, "\r\n\r\n");
  assert_true(len < sizeof req);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, req), 0);
  /* text/x17 has q=0.7: the 18th range decides. */
  expect_response(c, "HTTP/1.1 200 OK", "40 v39 18 0 1", NULL);
  fx_drop(fx, c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_param_of_user_type, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_param_type_errors, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_fields_and_conditional_get, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_field_allocates_nothing, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_accept_parameters, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_preconditions_in_order, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_long_lists, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
