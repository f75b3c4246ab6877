/* SPDX-License-Identifier: MIT */
/*
 * Middleware (hr_router_use, hr_group_use) over loopback.  Every
 * before-middleware appends its name to a trace kept per loop thread (a
 * request's befores and its handler run back to back on one thread), the
 * handler appends "h" and answers with the trace, so the body shows what
 * ran and in which order; after-middleware append "name:status," to a log
 * the test reads.  Covered: order (router-level in registration order, then
 * the group's; afters reversed), prefix and host scoping, early answers
 * (synchronous and later), fields added by a before, status 0 for a lost
 * exchange, and middleware added while the server runs.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "held.h"

static __thread char trace[256];
static __thread size_t trace_len;

static void trace_add(const char *s) {
  int n = snprintf(trace + trace_len, sizeof trace - trace_len, "%s%s",
                   trace_len ? "," : "", s);
  if (n > 0) trace_len += (size_t)n;
  if (trace_len >= sizeof trace) trace_len = sizeof trace - 1;
}

/* Sends the trace (and starts a new one for the next request). */
static int trace_send(hr_response_t *res, int status) {
  int rc = hr_response_send(res, status, trace, trace_len);
  trace_len = 0;
  return rc;
}

static hr_next_t mw_b(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  trace_add(udata);
  return HR_NEXT;
}

static struct {
  pthread_mutex_t mu;
  char text[512];
  ev_t ev; /* once per after call */
} alog; /* mu initialised in main, ev per test */

static void mw_a(hr_request_t *req, int status, void *udata) {
  size_t n;
  (void)req;
  trace_len = 0; /* the exchange is over: the next request starts afresh */
  pthread_mutex_lock(&alog.mu);
  n = strlen(alog.text);
  snprintf(alog.text + n, sizeof alog.text - n, "%s:%d,", (const char *)udata, status);
  pthread_mutex_unlock(&alog.mu);
  ev_signal(&alog.ev);
}

static void h_trace(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  trace_add("h");
  trace_send(res, 200);
}

static void use(fx_t *fx, const char *host, const char *prefix, const char *name) {
  int rc = hr_router_use(fx->router, host, prefix, mw_b, mw_a, (void *)name);
  if (rc != 0) fail_msg("hr_router_use %s: %s", name, hr_err_name(rc));
}

static void alog_reset(void) {
  pthread_mutex_lock(&alog.mu);
  alog.text[0] = '\0';
  pthread_mutex_unlock(&alog.mu);
  ev_init(&alog.ev);
}

/* Waits for `n` more after calls (since the last check) and compares the
 * log, then clears it. */
static unsigned long alog_seen;
static void expect_afters(unsigned long n, const char *want) {
  alog_seen += n;
  if (!ev_wait(&alog.ev, alog_seen, RC_TIMEOUT_MS)) fail_msg("after-middleware: \"%s\" so far, want \"%s\"", alog.text, want);
  pthread_mutex_lock(&alog.mu);
  if (strcmp(alog.text, want) != 0) {
    char got[512];
    snprintf(got, sizeof got, "%s", alog.text);
    pthread_mutex_unlock(&alog.mu);
    fail_msg("after-middleware ran \"%s\", want \"%s\"", got, want);
  }
  alog.text[0] = '\0';
  pthread_mutex_unlock(&alog.mu);
}

static int mw_setup(void **state) {
  alog_reset();
  alog_seen = 0;
  held_init(&held_default);
  return fx_setup(state);
}

static int mw_teardown(void **state) {
  int rc;
  held_release(&held_default);
  rc = fx_teardown(state);
  ev_destroy(&alog.ev);
  held_destroy(&held_default);
  return rc;
}

/* GET `target` with Host `host`; expects 200 with body `trace`. */
static void expect_trace(rc_t *c, const char *host, const char *target, const char *want) {
  char req[256];
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", want, NULL);
}

/* ---- order ------------------------------------------------------------------ */

static void test_order(void **state) {
  fx_t *fx = *state;
  hr_group_t *g;
  rc_t *c;
  assert_int_equal(hr_router_group(fx->router, NULL, "/api", &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/x", h_trace, NULL, NULL), 0);
  fx_route(fx, "GET", "/api/y", h_trace, NULL); /* same prefix, not the group */
  fx_route(fx, "GET", "/z", h_trace, NULL);
  use(fx, NULL, NULL, "A");
  assert_int_equal(hr_group_use(g, mw_b, mw_a, "G1"), 0);
  use(fx, NULL, "/api", "B");
  assert_int_equal(hr_group_use(g, mw_b, mw_a, "G2"), 0);
  use(fx, NULL, NULL, "C");
  fx_start(fx, 1);
  c = fx_connect(fx);
  /* router-level in registration order, then the group's; afters reversed */
  expect_trace(c, "a", "/api/x", "A,B,C,G1,G2,h");
  expect_afters(5, "G2:200,G1:200,C:200,B:200,A:200,");
  expect_trace(c, "a", "/api/y", "A,B,C,h");
  expect_afters(3, "C:200,B:200,A:200,");
  expect_trace(c, "a", "/z", "A,C,h");
  expect_afters(2, "C:200,A:200,");
  /* a before-only and an after-only registration */
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_b, NULL, "Bonly"), 0);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_a, "Aonly"), 0);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, NULL, "none"), HR_EINVAL);
  expect_trace(c, "a", "/z", "A,C,Bonly,h");
  expect_afters(3, "Aonly:200,C:200,A:200,");
  assert_int_equal(ta_calls(), 4);
}

/* ---- scoping ---------------------------------------------------------------- */

static void test_prefix_scope(void **state) {
  fx_t *fx = *state;
  static const char *const paths[] = {"/api", "/api/x", "/api/x/y", "/api/:id/z",
                                      "/apix", "/ap", "/", "/other/api"};
  hr_group_t *g;
  rc_t *c;
  size_t i;
  for (i = 0; i < sizeof paths / sizeof paths[0]; i++)
    fx_route(fx, "GET", paths[i], h_trace, NULL);
  assert_int_equal(hr_router_group(fx->router, NULL, "/api/v1", &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/q", h_trace, NULL, NULL), 0);
  use(fx, NULL, "/api", "P");
  use(fx, NULL, "/", "R"); /* "/" covers everything, like "" */
  assert_int_equal(hr_router_use(fx->router, NULL, "/api/", mw_b, mw_a, "X"), HR_EINVAL);
  assert_int_equal(hr_router_use(fx->router, NULL, "api", mw_b, mw_a, "X"), HR_EINVAL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  expect_trace(c, "a", "/api", "P,R,h");
  expect_trace(c, "a", "/api/x", "P,R,h");
  expect_trace(c, "a", "/api/x/y", "P,R,h");
  expect_trace(c, "a", "/api/7/z", "P,R,h");
  expect_trace(c, "a", "/api/v1/q", "P,R,h");
  expect_trace(c, "a", "/apix", "R,h");
  expect_trace(c, "a", "/ap", "R,h");
  expect_trace(c, "a", "/", "R,h");
  expect_trace(c, "a", "/other/api", "R,h");
  expect_afters(14, "R:200,P:200,R:200,P:200,R:200,P:200,R:200,P:200,R:200,P:200,"
                    "R:200,R:200,R:200,R:200,");
}

static void test_host_scope(void **state) {
  fx_t *fx = *state;
  hr_group_t *g;
  rc_t *c;
  assert_int_equal(hr_router_group(fx->router, "a.example", NULL, &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/h", h_trace, NULL, NULL), 0);
  assert_int_equal(hr_group_add(g, "GET", "/k", h_trace, NULL, NULL), 0);
  fx_route(fx, "GET", "/h", h_trace, NULL);
  use(fx, "a.example", NULL, "H");
  use(fx, NULL, NULL, "ALL");
  use(fx, "A.Example", "/h", "U"); /* host names compare without case */
  use(fx, "b.example", NULL, "NONE"); /* b.example has no table of its own */
  use(fx, "a.example.", "/k", "D");   /* an absolute name: the same host */
  fx_start(fx, 1);
  c = fx_connect(fx);
  expect_trace(c, "a.example", "/h", "H,ALL,U,h");
  expect_trace(c, "A.EXAMPLE:8080", "/h", "H,ALL,U,h");
  expect_trace(c, "a.example", "/k", "H,ALL,D,h");
  expect_trace(c, "b.example", "/h", "ALL,h");
  expect_trace(c, "other", "/h", "ALL,h");
  expect_afters(11, "U:200,ALL:200,H:200,U:200,ALL:200,H:200,D:200,ALL:200,H:200,"
                    "ALL:200,ALL:200,");
}

/* ---- early answers ------------------------------------------------------------ */

/* Answers 401 itself for "?deny", and 403 later (held) for "?later". */
static hr_next_t mw_deny(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t q = hr_request_query(req);
  trace_add(udata);
  if (hr_span_eq(q, HR_SPAN_LIT("deny"))) {
    trace_send(res, 401);
    return HR_ANSWERED;
  }
  if (hr_span_eq(q, HR_SPAN_LIT("later"))) {
    trace_len = 0;
    held_take(&held_default, res);
    return HR_ANSWERED;
  }
  return HR_NEXT;
}

static void test_early_answer(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx_route(fx, "GET", "/p", h_trace, NULL);
  use(fx, NULL, NULL, "A");
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_deny, mw_a, "D"), 0);
  use(fx, NULL, NULL, "Z");
  fx_start(fx, 1);
  c = fx_connect(fx);
  expect_trace(c, "a", "/p", "A,D,Z,h");
  expect_afters(3, "Z:200,D:200,A:200,");
  assert_int_equal(rc_send_str(c, "GET /p?deny HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "A,D", NULL);
  /* no handler, no later before; every after sees the status sent */
  expect_afters(3, "Z:401,D:401,A:401,");
  assert_int_equal(rc_send_str(c, "GET /p?later HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(held_complete(&held_default, 1, 403, "later"), 0);
  expect_response(c, "HTTP/1.1 403 Forbidden", "later", NULL);
  expect_afters(3, "Z:403,D:403,A:403,");
  /* the connection goes on */
  expect_trace(c, "a", "/p", "A,D,Z,h");
  expect_afters(3, "Z:200,D:200,A:200,");
  assert_int_equal(ta_calls(), 2);
}

/* ---- fields, lost exchanges, changes while serving --------------------------- */

static hr_next_t mw_field(hr_request_t *req, hr_response_t *res, void *udata) {
  int rc = hr_response_add_field(res, HR_SPAN_LIT("X-Before"), HR_SPAN_LIT("b1"));
  (void)req;
  if (rc == 0)
    rc = hr_response_add_field(res, HR_SPAN_LIT("Content-Length"), HR_SPAN_LIT("1"));
  trace_add(rc == HR_EINVAL ? udata : "wrong rc");
  return HR_NEXT;
}

static void h_field(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_response_add_field(res, HR_SPAN_LIT("X-Handler"), HR_SPAN_LIT("h1"));
  h_trace(req, res, udata);
}

static void test_before_adds_field(void **state) {
  fx_t *fx = *state;
  hr_field_t f = {HR_SPAN_LIT("X-Route"), HR_SPAN_LIT("r1")};
  hr_route_options_t o;
  rc_response_t r;
  rc_t *c;
  hr_route_options_init(&o);
  o.fields = &f;
  o.nfields = 1;
  fx_route_opts(fx, "GET", "/f", h_field, NULL, &o);
  fx_route(fx, "GET", "/g", h_trace, NULL);
  assert_int_equal(hr_router_use(fx->router, NULL, "/f", mw_field, NULL, "F"), 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /f HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "F,h", &r);
  expect_field(&r, "X-Route", "r1", 0);
  expect_field(&r, "X-Before", "b1", 0);
  expect_field(&r, "X-Handler", "h1", 0);
  expect_field(&r, "Content-Length", "3", 0);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /g HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "h", &r);
  expect_no_field(&r, "X-Before");
  rc_response_free(&r);
}

static void test_after_lost_exchange(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx_route(fx, "GET", "/hold", held_handler, "held");
  fx_route(fx, "GET", "/p", h_trace, NULL);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_a, "A"), 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  fx_drop(fx, c);
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), HR_ECLOSED);
  expect_afters(1, "A:0,");
  c = fx_connect(fx);
  expect_trace(c, "a", "/p", "h");
  expect_afters(1, "A:200,");
}

static void test_added_while_serving(void **state) {
  fx_t *fx = *state;
  rc_t *c, *c2;
  fx_route(fx, "GET", "/p", h_trace, NULL);
  fx_route(fx, "GET", "/hold", held_handler, "held");
  fx_start(fx, 2);
  c = fx_connect(fx);
  c2 = fx_connect(fx);
  expect_trace(c, "a", "/p", "h");
  /* in flight while the middleware is added: it keeps its own chain */
  assert_int_equal(rc_send_str(c2, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  use(fx, NULL, NULL, "L");
  expect_trace(c, "a", "/p", "L,h"); /* same keep-alive connection */
  expect_afters(1, "L:200,");
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), 0);
  expect_response(c2, "HTTP/1.1 200 OK", "held", NULL);
  use(fx, NULL, "/p", "M");
  expect_trace(c2, "a", "/p", "L,M,h");
  /* the held exchange ran no after; these are the last request's */
  expect_afters(2, "M:200,L:200,");
}

/* A before-middleware that shows, as X-Trace, which before-middleware ran
 * ahead of it. */
static hr_next_t mw_expose(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("X-Trace"), (hr_span_t){trace, trace_len});
  return HR_NEXT;
}

/* Every answer passes the after-middleware: the server's own (404, 405,
 * the automatic OPTIONS, 501, 400) through the router-level middleware of
 * the request's host; a route's through its chain, also when the server
 * answered before the chain ran (a typed parameter that did not convert).
 * The router's own answers pass the router-level before-middleware first
 * (X-Trace); a request refused as malformed passes none. */
static void test_after_sees_every_answer(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  hr_param_type_t ti = HR_PARAM_INT64;
  rc_t *c;
  use(fx, NULL, NULL, "G");           /* every host, every path */
  use(fx, "api.test", NULL, "H");     /* one host */
  use(fx, NULL, "/items", "P");       /* a prefix: routes under it only */
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_expose, NULL, NULL), 0);
  hr_route_options_init(&o);
  o.param_types = &ti;
  o.nparam_types = 1;
  fx_route_opts(fx, "GET", "/items/:id", h_trace, NULL, &o);
  fx_route(fx, "PUT", "/elsewhere", h_trace, NULL);
  {
    hr_group_t *g;
    assert_int_equal(hr_router_group(fx->router, "api.test", NULL, &g), 0);
    assert_int_equal(hr_group_add(g, "GET", "/only", h_trace, NULL, NULL), 0);
  }
  static const struct {
    const char *request, *status_line, *body;
    unsigned long afters;
    const char *log, *xtrace;
  } cases[] = {
      {"GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", NULL, 1, "G:404,",
       "G"},
      /* typed parameter that does not convert: the route's after-chain */
      {"GET /items/nope HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", NULL, 2,
       "P:404,G:404,", "G"},
      {"PUT /items/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
       "HTTP/1.1 405 Method Not Allowed", NULL, 1, "G:405,", "G"},
      {"OPTIONS /items/1 HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK", NULL, 1, "G:200,",
       "G"},
      /* api.test has a table of its own: its 404 passes its middleware too */
      {"GET /nope HTTP/1.1\r\nHost: api.test\r\n\r\n", "HTTP/1.1 404 Not Found", NULL, 2,
       "H:404,G:404,", "G,H"},
      /* an absolute-form target's authority picks the table, not Host */
      {"GET http://api.test/nope HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", NULL, 2,
       "H:404,G:404,", "G,H"},
      {"BREW /items/1 HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 501 Not Implemented", NULL, 1,
       "G:501,", "G"},
      {"GET /items/7 HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK", "G,P,h", 2, "P:200,G:200,",
       "G,P"},
      /* a request the server refuses and closes on */
      {"GET /a\\b HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 400 Bad Request", NULL, 1, "G:400,",
       NULL},
  };
  size_t i;
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rc_response_t r;
    assert_int_equal(rc_send_str(c, cases[i].request), 0);
    expect_response(c, cases[i].status_line, cases[i].body, &r);
    if (cases[i].xtrace != NULL)
      expect_field(&r, "X-Trace", cases[i].xtrace, 0);
    else
      expect_no_field(&r, "X-Trace");
    rc_response_free(&r);
    expect_afters(cases[i].afters, cases[i].log);
  }
  fx_drop(fx, c);
}

/* Head middleware: refuses an upload without X-Key before its body is
 * read; it sees no body yet. */
static hr_next_t mw_head_auth(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t k;
  (void)udata;
  assert_int_equal(hr_request_body(req).len, 0);
  if (hr_request_field(req, HR_SPAN_LIT("X-Key"), NULL, &k) == 0 &&
      hr_span_eq(k, HR_SPAN_LIT("s3cret")))
    return HR_NEXT;
  hr_response_send(res, 401, "no key", 6);
  return HR_ANSWERED;
}

/* Head middleware answers before the body: the handler never runs, the
 * body is not read (nor asked for with 100 Continue), the connection goes
 * on when the body can be skipped. */
static void test_head_middleware(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  assert_int_equal(hr_router_use_head(fx->router, NULL, "/up", mw_head_auth, NULL), 0);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_a, "A"), 0);
  fx_route(fx, "POST", "/up", ta_echo, NULL);
  fx_route(fx, "GET", "/free", ta_text, "free");
  fx_start(fx, 1);
  ta_reset();
  /* A 1 MiB upload announced, not one byte of it sent: answered at once. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "no key", NULL);
  fx_drop(fx, c); /* the exchange ends, waiting for a body, when the client goes */
  expect_afters(1, "A:401,");
  /* Waiting for 100 Continue: the final answer instead, then close. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n"
                                  "Expect: 100-continue\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "no key", NULL);
  /* HTTP/1.1 closes rather than read a body it did not ask for; HTTP/2
   * ends the stream alone. */
  if (!fx_h2()) expect_closed(c);
  expect_afters(1, "A:401,");
  /* A refused body that is sent is skipped: the next request is served. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
                                  "GET /free HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "no key", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "free", NULL);
  expect_afters(2, "A:401,A:200,");
  /* With the key: the body is read and the handler runs. */
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nX-Key: s3cret\r\n"
                                  "Content-Length: 5\r\n\r\nworld"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "world", NULL);
  expect_afters(1, "A:200,");
  fx_drop(fx, c);
  assert_int_equal(ta_calls(), 2); /* /free and the keyed upload: no refused one */
}

/* Refuses any request with X-Deny, routed or not. */
static hr_next_t mw_gate(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t v;
  (void)udata;
  if (hr_request_field(req, HR_SPAN_LIT("X-Deny"), NULL, &v) != 0) return HR_NEXT;
  hr_response_send(res, 401, "denied", 6);
  return HR_ANSWERED;
}

/* A router-level before-middleware answers in the router's place too: a
 * path no route has, a method the path lacks, and the custom not_found
 * handler never runs. */
static void test_before_answers_for_router(void **state) {
  fx_t *fx = *state;
  hr_answers_t an;
  rc_t *c;
  hr_answers_init(&an);
  an.not_found = ta_text;
  an.not_found_udata = "custom 404";
  assert_int_equal(hr_router_set_answers(fx->router, NULL, &an), 0);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_gate, mw_a, "A"), 0);
  fx_route(fx, "GET", "/x", ta_text, "x");
  fx_route(fx, "POST", "/y", ta_text, "y");
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /nowhere HTTP/1.1\r\nHost: a\r\nX-Deny: 1\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "denied", NULL);
  expect_afters(1, "A:401,");
  assert_int_equal(rc_send_str(c, "POST /x HTTP/1.1\r\nHost: a\r\nX-Deny: 1\r\n"
                                  "Content-Length: 2\r\n\r\nhi"), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "denied", NULL);
  expect_afters(1, "A:401,");
  /* Without X-Deny the router's answers: the custom 404, the 405. */
  assert_int_equal(rc_send_str(c, "GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "custom 404", NULL);
  expect_afters(1, "A:200,");
  assert_int_equal(rc_send_str(c, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 405 Method Not Allowed", NULL, NULL);
  expect_afters(1, "A:405,");
  fx_drop(fx, c);
}

/* ---- hr_request_outcome --------------------------------------------------------- */

static struct {
  hr_outcome_t o;
  int rc, status;
} seen; /* written by the after-middleware, read after alog.ev */

static void mw_outcome(hr_request_t *req, int status, void *udata) {
  (void)udata;
  pthread_mutex_lock(&alog.mu);
  seen.rc = hr_request_outcome(req, &seen.o);
  seen.status = status;
  pthread_mutex_unlock(&alog.mu);
  ev_signal(&alog.ev);
}

/* In the handler the response has not completed: HR_ESTATE, as its body. */
static void h_outcome(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_outcome_t o;
  (void)udata;
  if (hr_request_outcome(req, &o) == HR_ESTATE)
    hr_response_send(res, 200, "HR_ESTATE", 9);
  else
    hr_response_send(res, 500, NULL, 0);
}

static uint64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* After-middleware read what went out: the status, the body bytes exactly
 * as the client received them (none for HEAD), and a duration that fits
 * between the client's send and its reading the response, for the
 * handler's answers and the server's own. */
static void test_after_outcome(void **state) {
  static const struct {
    const char *request, *status_line;
    int head;
  } cases[] = {
      {"GET /o HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK", 0},
      {"HEAD /o HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK", 1},
      {"GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", 0},
      {"DELETE /o HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 405 Method Not Allowed", 0},
      {"BREW /o HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 501 Not Implemented", 0},
      {"GET /a\\b HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 400 Bad Request", 0},
  };
  fx_t *fx = *state;
  hr_outcome_t o;
  size_t i;
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_outcome, NULL), 0);
  fx_route(fx, "GET", "/o", h_outcome, NULL);
  assert_int_equal(hr_request_outcome(NULL, &o), HR_EINVAL);
  fx_start(fx, 1);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    uint64_t t0 = now_us(), elapsed;
    assert_int_equal(rc_send_str(c, cases[i].request), 0);
    if (cases[i].head)
      expect_head_response(c, cases[i].status_line, &r);
    else
      expect_response(c, cases[i].status_line, NULL, &r);
    elapsed = now_us() - t0;
    alog_seen++;
    assert_true(ev_wait(&alog.ev, alog_seen, RC_TIMEOUT_MS));
    pthread_mutex_lock(&alog.mu);
    assert_int_equal(seen.rc, 0);
    assert_int_equal(seen.o.status, r.status);
    assert_int_equal(seen.status, r.status);
    assert_int_equal(seen.o.bytes, r.body_len);
    assert_int_equal(seen.o.completed, 1);
    if (seen.o.duration_us > elapsed)
      fail_msg("%s: %llu us on the server, %llu us at the client", cases[i].request,
               (unsigned long long)seen.o.duration_us, (unsigned long long)elapsed);
    pthread_mutex_unlock(&alog.mu);
    if (i == 0) assert_string_equal(r.body, "HR_ESTATE");
    rc_response_free(&r);
    fx_drop(fx, c);
  }
}

/* A streamed body: 10 bytes in two writes, or (udata "hold") 7 bytes and
 * then held open. */
static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  if (udata != NULL) {
    hr_response_start(res, 200, HR_LENGTH_UNKNOWN);
    hr_response_write(res, "partial", 7);
    held_take(&held_default, res);
    return;
  }
  hr_response_start(res, 200, 10);
  hr_response_write(res, "01234", 5);
  hr_response_write(res, "56789", 5);
  hr_response_end(res);
}

static int end_rc;
static ev_t end_ev;
static void end_stream(hr_response_t *res, void *udata) {
  (void)udata;
  end_rc = hr_response_end(res);
  ev_signal(&held_default.ev_done); /* completed: held_release leaves it */
  ev_signal(&end_ev); /* after the store: the test thread reads it then */
}

/* Streamed responses: HEAD counts no body bytes whatever the handler
 * wrote; a stream the client cuts off reports its status line and the
 * bytes queued so far, as not completed (the after-callback's status: 0). */
static void test_outcome_streams(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  rc_t *c;
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_outcome, NULL), 0);
  fx_route(fx, "GET", "/s", h_stream, NULL);
  fx_route(fx, "GET", "/cut", h_stream, "hold");
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /s HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "0123456789", NULL);
  alog_seen++;
  assert_true(ev_wait(&alog.ev, alog_seen, RC_TIMEOUT_MS));
  assert_int_equal(seen.o.bytes, 10);
  assert_int_equal(seen.o.completed, 1);
  assert_int_equal(rc_send_str(c, "HEAD /s HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  rc_response_free(&r);
  alog_seen++;
  assert_true(ev_wait(&alog.ev, alog_seen, RC_TIMEOUT_MS));
  assert_int_equal(seen.o.status, 200);
  assert_int_equal(seen.o.bytes, 0);
  assert_int_equal(seen.o.completed, 1);
  assert_int_equal(rc_send_str(c, "GET /cut HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  fx_drop(fx, c);
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  /* The handler ends its stream late: HR_ECLOSED, and the exchange ends. */
  ev_init(&end_ev);
  assert_int_equal(hr_response_post(held_default.res, end_stream, NULL), 0);
  assert_true(ev_wait(&end_ev, 1, RC_TIMEOUT_MS));
  ev_destroy(&end_ev);
  assert_int_equal(end_rc, HR_ECLOSED);
  alog_seen++;
  assert_true(ev_wait(&alog.ev, alog_seen, RC_TIMEOUT_MS));
  pthread_mutex_lock(&alog.mu);
  assert_int_equal(seen.rc, 0);
  assert_int_equal(seen.status, 0);
  assert_int_equal(seen.o.status, 200);
  assert_int_equal(seen.o.bytes, 7);
  assert_int_equal(seen.o.completed, 0);
  pthread_mutex_unlock(&alog.mu);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, mw_setup, mw_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_order),
      T(test_prefix_scope),
      T(test_host_scope),
      T(test_early_answer),
      T(test_before_adds_field),
      T(test_after_lost_exchange),
      T(test_added_while_serving),
      T(test_after_sees_every_answer),
      T(test_head_middleware),
      T(test_after_outcome),
      T(test_before_answers_for_router),
      T(test_outcome_streams),
  };
  pthread_mutex_init(&alog.mu, NULL);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
