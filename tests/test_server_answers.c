/* SPDX-License-Identifier: MIT */
/*
 * The router's own answers made by the host (hr_answers_t): a JSON 404 and
 * 405 from handlers (the 405 one reading Allow), JSON bodies for the
 * server's 400/413/501 through error_body, another host table with its own,
 * and the defaults back once cleared.
 *
 * ctest-labels: tsan
 */
#include <stdio.h>
#include <string.h>

#include "fixture.h"

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
  request(fx, "POST http://admin.test/panel HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n",
          "HTTP/1.1 413 Content Too Large", "Content Too Large\n", "text/plain");
  /* Redirects keep their text. */
  request(fx, "GET /items/../items/1 HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 301 Moved Permanently",
          "Moved Permanently\n", "text/plain");
  /* Cleared: the defaults again. */
  assert_int_equal(hr_router_set_answers(fx->router, NULL, NULL), 0);
  request(fx, "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", "Not Found\n",
          "text/plain");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_answers, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
