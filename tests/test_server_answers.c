/* SPDX-License-Identifier: MIT */
/*
 * The router's own answers made by the host (hr_answers_t): a JSON 404 and
 * 405 from handlers (the 405 one reading Allow), JSON bodies for the
 * server's 400/413/501 through error_body, another host table with its own,
 * and the defaults back once cleared.  And one answer, one table: a
 * middleware that publishes new answers and middleware in the middle of an
 * answer the router gives (a 404, a 413 after the route's head
 * middleware) does not change that answer, byte for byte, nor which
 * after-middleware hear of it; the next request sees the new version.
 * A 404 answered later, after its table was replaced and reclaimed, still
 * ends through that table's after-middleware (the exchange kept them).
 * An error_body hook that gives no body leaves the default text.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "held.h"

static void h_json_404(hr_request_t *req, hr_response_t *res, void *udata) {
  char body[256];
  hr_span_t p = hr_request_path(req);
  int n = snprintf(body, sizeof body, "{\"error\":\"no such path\",\"path\":\"%.*s\",\"by\":\"%s\"}",
                   (int)p.len, p.ptr, (const char *)udata);
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/json"));
  hr_response_send(res, 404, body, (size_t)n);
}

static void h_json_405(hr_request_t *req, hr_response_t *res, void *udata) {
  char body[256];
  hr_span_t a = hr_request_allow(req);
  int n = snprintf(body, sizeof body, "{\"error\":\"method\",\"allow\":\"%.*s\"}", (int)a.len, a.ptr);
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/json"));
  hr_response_send(res, 405, body, (size_t)n);
}

static size_t json_error(void *udata, int status, char *buf, size_t cap, const char **ct) {
  (void)udata;
  *ct = "application/json";
  return (size_t)snprintf(buf, cap, "{\"status\":%d}", status);
}

static void request(fx_t *fx, const char *req, const char *status_line, const char *body,
                    const char *ctype) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, status_line, body, &r);
  if (ctype != NULL) expect_field(&r, "Content-Type", ctype, 0);
  rc_response_free(&r);
  fx_drop(fx, c);
}

static void test_answers(void **state) {
  fx_t *fx = *state;
  hr_answers_t a, b;
  hr_group_t *g;
  hr_answers_init(&a);
  a.not_found = h_json_404;
  a.not_found_udata = "default";
  a.method_not_allowed = h_json_405;
  a.error_body = json_error;
  fx_route(fx, "GET", "/items/:id", ta_text, "item");
  fx_route(fx, "POST", "/elsewhere", ta_text, "x");
  assert_int_equal(hr_router_group(fx->router, "admin.test", NULL, &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/panel", ta_text, "panel", NULL), 0);
  assert_int_equal(hr_group_add(g, "POST", "/drop", ta_text, "drop", NULL), 0);
  assert_int_equal(hr_router_set_answers(fx->router, NULL, &a), 0);
  hr_answers_init(&b);
  b.not_found = h_json_404;
  b.not_found_udata = "admin";
  assert_int_equal(hr_router_set_answers(fx->router, "admin.test", &b), 0);
  assert_int_equal(hr_router_set_answers(fx->router, "bad host:1", &b), HR_EINVAL);
  fx->opts.max_body_bytes = 8;
  fx_start(fx, 1);
  request(fx, "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found",
          "{\"error\":\"no such path\",\"path\":\"/nope\",\"by\":\"default\"}", "application/json");
  request(fx, "POST /items/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
          "HTTP/1.1 405 Method Not Allowed", "{\"error\":\"method\",\"allow\":\"GET, HEAD, OPTIONS\"}",
          "application/json");
  request(fx, "BREW /items/1 HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 501 Not Implemented",
          "{\"status\":501}", "application/json");
  request(fx, "GET /a\\b HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 400 Bad Request",
          "{\"status\":400}", "application/json");
  request(fx, "POST /elsewhere HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n",
          "HTTP/1.1 413 Content Too Large", "{\"status\":413}", "application/json");
  /* The admin table has its own 404, and the defaults for the rest. */
  request(fx, "GET /nope HTTP/1.1\r\nHost: admin.test\r\n\r\n", "HTTP/1.1 404 Not Found",
          "{\"error\":\"no such path\",\"path\":\"/nope\",\"by\":\"admin\"}", NULL);
  request(fx, "BREW /panel HTTP/1.1\r\nHost: admin.test\r\n\r\n", "HTTP/1.1 501 Not Implemented",
          "Not Implemented\n", "text/plain");
  /* An absolute-form target's authority picks the table for the answers
   * that close the connection too: admin.test has no error_body. */
  request(fx, "POST http://admin.test/drop HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n",
          "HTTP/1.1 413 Content Too Large", "Content Too Large\n", "text/plain");
  /* A body over the limit to a path without the method: the router's
   * answer comes first (issue 24), from that table too. */
  request(fx, "POST http://admin.test/panel HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n",
          "HTTP/1.1 405 Method Not Allowed", "Method Not Allowed\n", "text/plain");
  /* Redirects keep their text. */
  request(fx, "GET /items/../items/1 HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 301 Moved Permanently",
          "Moved Permanently\n", "text/plain");
  /* Cleared: the defaults again. */
  assert_int_equal(hr_router_set_answers(fx->router, NULL, NULL), 0);
  request(fx, "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", "Not Found\n",
          "text/plain");
}

/* ---- one answer, one table ------------------------------------------------ */

static size_t body_v1(void *udata, int status, char *buf, size_t cap, const char **ct) {
  (void)udata;
  *ct = "text/v1";
  return (size_t)snprintf(buf, cap, "v1:%d", status);
}

static size_t body_v2(void *udata, int status, char *buf, size_t cap, const char **ct) {
  (void)udata;
  *ct = "text/v2";
  return (size_t)snprintf(buf, cap, "v2:%d", status);
}

/* The after-middleware calls, "udata:path;" each, in order.  Written on
 * the loop thread; read there too (h_log), or by the test once the server
 * has stopped. */
static struct {
  pthread_mutex_t mu;
  char log[1024];
  hr_router_t *router;
  int published;
} one;

static void one_after(hr_request_t *req, int status, void *udata) {
  hr_span_t p = hr_request_path(req);
  size_t n;
  (void)status;
  pthread_mutex_lock(&one.mu);
  n = strlen(one.log);
  snprintf(one.log + n, sizeof one.log - n, "%s:%.*s;", (const char *)udata, (int)p.len, p.ptr);
  pthread_mutex_unlock(&one.mu);
}

static hr_next_t one_before(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  hr_response_add_field(res, HR_SPAN_LIT("X-Mw"), hr_span_cstr(udata));
  return HR_NEXT;
}

/* Publishes version 2 once, from inside the request being answered: the
 * answers' error_body, and a second router-level middleware (so the
 * host's fallback changes too).  Writers may run on the loop thread. */
static void publish_v2(void) {
  hr_answers_t a;
  if (one.published++) return;
  hr_answers_init(&a);
  a.error_body = body_v2;
  if (hr_router_set_answers(one.router, NULL, &a) != 0 ||
      hr_router_use(one.router, NULL, NULL, one_before, one_after, "2") != 0)
    one.published = -100; /* the test sees it */
}

static hr_next_t v1_before(hr_request_t *req, hr_response_t *res, void *udata) {
  publish_v2();
  return one_before(req, res, udata);
}

static hr_next_t publish_head(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
  publish_v2();
  return HR_NEXT;
}

/* The after-middleware calls so far: every earlier request on this
 * connection has ended before this one runs. */
static void h_log(hr_request_t *req, hr_response_t *res, void *udata) {
  char copy[1024];
  (void)req;
  (void)udata;
  pthread_mutex_lock(&one.mu);
  memcpy(copy, one.log, sizeof copy);
  pthread_mutex_unlock(&one.mu);
  hr_response_send(res, 200, copy, strlen(copy));
}

static void one_setup(fx_t *fx) {
  hr_answers_t a;
  memset(&one, 0, sizeof one);
  pthread_mutex_init(&one.mu, NULL);
  one.router = fx->router;
  hr_answers_init(&a);
  a.error_body = body_v1;
  assert_int_equal(hr_router_set_answers(fx->router, NULL, &a), 0);
  fx_route(fx, "GET", "/log", h_log, NULL);
}

/* A 404: its fallback before-middleware publishes version 2 before the
 * router looks at its answers, and the after-middleware run when it ends. */
static void test_one_answer_one_table_404(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  one_setup(fx);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, v1_before, one_after, "1"), 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "v1:404", &r);
  expect_field(&r, "Content-Type", "text/v1", 0);
  expect_field(&r, "X-Mw", "1", 0);
  rc_response_free(&r);
  assert_int_equal(one.published, 1);
  /* The next answer is all version 2. */
  assert_int_equal(rc_send_str(c, "GET /gone HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "v2:404", &r);
  expect_field(&r, "Content-Type", "text/v2", 0);
  assert_int_equal(rc_header_count(&r, "X-Mw"), 2);
  rc_response_free(&r);
  /* Version 1's after-middleware alone heard of the first (after-chains
   * run innermost first). */
  assert_int_equal(rc_send_str(c, "GET /log HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "1:/nope;2:/gone;1:/gone;", NULL);
}

/* A 413 the server gives after the route's head middleware published
 * version 2: the error body is the matched table's. */
static void test_one_answer_one_table_413(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  hr_route_options_t o;
  one_setup(fx);
  assert_int_equal(hr_router_use_head(fx->router, NULL, "/up", publish_head, NULL), 0);
  hr_route_options_init(&o);
  o.max_body_bytes = 4;
  fx_route_opts(fx, "POST", "/up", ta_echo, NULL, &o);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "a\r\n0123456789\r\n0\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", "v1:413", &r);
  expect_field(&r, "Content-Type", "text/v1", 0);
  rc_response_free(&r);
  /* HTTP/1.1 closes rather than read a body it refused; HTTP/2 resets the
   * stream alone and the connection goes on. */
  if (!fx_h2()) assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
  assert_int_equal(one.published, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n"
                                  "012345678"),
                   0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", "v2:413", NULL);
}

/* A 404 whose not_found handler answers later: meanwhile the table is
 * replaced often enough for the old ones to be reclaimed; the answer's
 * after-middleware are still the ones of the table it was matched in. */
static void test_late_answer_keeps_its_table(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  hr_answers_t a;
  int i;
  one_setup(fx);
  held_init(&held_default);
  hr_answers_init(&a);
  a.not_found = held_handler;
  assert_int_equal(hr_router_set_answers(fx->router, NULL, &a), 0);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, one_after, "1"), 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  /* Version 2's middleware, then more than a batch of replaced tables
   * (router.c frees them 16 at a time after a grace period). */
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, one_after, "2"), 0);
  for (i = 0; i < 40; i++) assert_int_equal(hr_router_set_answers(fx->router, NULL, &a), 0);
  assert_int_equal(held_complete(&held_default, 1, 404, "late"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "late", NULL);
  assert_int_equal(rc_send_str(c, "GET /log HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "1:/slow;", NULL);
  assert_int_equal(fx_stop(fx, 2000), 0);
  held_destroy(&held_default);
}

/* error_body may give no body, and then need not set the type: the
 * default text (it read the unset type, NULL, and crashed). */
static size_t no_body(void *udata, int status, char *buf, size_t cap, const char **ct) {
  (void)udata;
  (void)status;
  (void)buf;
  (void)cap;
  (void)ct;
  return 0;
}

static void test_error_body_gives_none(void **state) {
  fx_t *fx = *state;
  hr_answers_t a;
  hr_answers_init(&a);
  a.error_body = no_body;
  fx_route(fx, "GET", "/items/:id", ta_text, "item");
  assert_int_equal(hr_router_set_answers(fx->router, NULL, &a), 0);
  fx_start(fx, 1);
  request(fx, "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found",
          "Not Found\n", "text/plain");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_answers, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_one_answer_one_table_404, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_one_answer_one_table_413, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_late_answer_keeps_its_table, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_error_body_gives_none, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
