/* SPDX-License-Identifier: MIT */
/*
 * The server answers as hr_router_match() does (and so as `hroute-routes
 * match`, which tests/routes/rules.out pins down): every request of
 * tests/routes/rules.in is sent over loopback to a server whose routes are
 * those of tests/routes/rules.routes, and its status, route, parameter
 * names and values, Allow and Location are compared with the router's
 * answer for the same request.  Raw UTF-8 targets, 405 and 404 for the
 * standard methods and 501 for unknown ones, the method taking part in
 * the match and per-route parameter names are all in that file; hello's
 * routes (examples/hello.c) check the first on one connection, with the
 * bad-request counter, which counts 4xx answers and not 501s.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* 200 with "pattern|name=value|..." of the route that answered. */
static void h_route(hr_request_t *req, hr_response_t *res, void *udata) {
  char body[1024];
  size_t at = 0, i;
  at += (size_t)snprintf(body, sizeof body, "%s", (const char *)udata);
  for (i = 0; i < hr_request_param_count(req) && at < sizeof body; i++) {
    hr_span_t n = hr_request_param_name(req, i), v = hr_request_param(req, i);
    at += (size_t)snprintf(body + at, sizeof body - at, "|%.*s=%.*s", (int)n.len, n.ptr,
                           (int)v.len, v.ptr);
  }
  hr_response_send(res, 200, body, at < sizeof body ? at : sizeof body - 1);
}

/* What the server must send for `m`, the router's answer. */
static void expected_body(const hr_match_t *m, char *out, size_t cap) {
  hr_span_t pat = hr_route_pattern(m->route);
  size_t at = (size_t)snprintf(out, cap, "%.*s", (int)pat.len, pat.ptr), i;
  for (i = 0; i < m->nparams; i++)
    at += (size_t)snprintf(out + at, cap - at, "|%.*s=%.*s", (int)m->params[i].name.len,
                           m->params[i].name.ptr, (int)m->params[i].value.len,
                           m->params[i].value.ptr);
}

static char *data_path(const char *name) {
  static char path[4096];
  const char *dir = getenv("HROUTE_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/routes/%s", dir ? dir : ".", name);
  return path;
}

static void register_routes(fx_t *fx, char **patterns, size_t *npatterns) {
  FILE *f = fopen(data_path("rules.routes"), "r");
  char line[512];
  assert_non_null(f);
  while (fgets(line, sizeof line, f) != NULL) {
    char methods[64], pattern[256];
    if (line[0] == '#' || sscanf(line, "%63s %255s", methods, pattern) != 2) continue;
    patterns[*npatterns] = strdup(pattern);
    /* Refused ones stay refused here too (rules.err lists them). */
    if (hr_router_add(fx->router, methods, pattern, h_route, patterns[*npatterns], NULL) == 0)
      (*npatterns)++;
    else
      free(patterns[*npatterns]);
  }
  fclose(f);
}

static int has_control_byte(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
  return 0;
}

static void check_one(fx_t *fx, const char *method, const char *target) {
  static char buf[4096];
  char req[1024], want[1024];
  hr_match_t m;
  rc_response_t r;
  rc_t *c;
  int n, rc, head = strcmp(method, "HEAD") == 0;
  assert_int_equal(hr_router_match(fx->router, hr_span_cstr(method), hr_span_cstr("a"),
                                   hr_span_cstr(target), buf, sizeof buf, &m),
                   0);
  c = fx_connect(fx);
  n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
               method, target);
  assert_true(n > 0 && (size_t)n < sizeof req); /* not cut short */
  assert_int_equal(rc_send_str(c, req), 0);
  rc = rc_read_response(c, &r, head);
  if (fx_h2() && has_control_byte(target)) {
    /* A control byte makes the :path malformed (RFC 9113 §8.2.1):
     * nghttp2 resets the stream where HTTP/1.1 answers 400. */
    assert_int_equal(m.status, 400);
    assert_int_equal(rc, RC_EOF);
    print_message("HTTP/2: %s with a control byte: stream reset, no 400\n", method);
    rc_response_free(&r);
    fx_drop(fx, c);
    return;
  }
  if (rc != RC_OK) fail_msg("%s %s: no response (rc %d)", method, target, rc);
  if (r.status != m.status) fail_msg("%s %s: server %d, router %d", method, target, r.status, m.status);
  if (m.route != NULL && !head) {
    expected_body(&m, want, sizeof want);
    if (strcmp(r.body, want) != 0)
      fail_msg("%s %s: body \"%s\", want \"%s\"", method, target, r.body, want);
  }
  if (m.allow.len > 0 || m.status == 405) {
    const char *a = rc_header(&r, "Allow");
    assert_non_null(a);
    if (strlen(a) != m.allow.len || memcmp(a, m.allow.ptr, m.allow.len) != 0)
      fail_msg("%s %s: Allow \"%s\", want \"%.*s\"", method, target, a, (int)m.allow.len,
               m.allow.ptr);
  }
  if (m.status == 301 || m.status == 308) {
    const char *l = rc_header(&r, "Location");
    assert_non_null(l);
    assert_int_equal(strlen(l), m.location.len);
    assert_memory_equal(l, m.location.ptr, m.location.len);
  }
  rc_response_free(&r);
  fx_drop(fx, c);
}

static void test_server_answers_as_the_router(void **state) {
  fx_t *fx = *state;
  char *patterns[64];
  size_t npatterns = 0, i, checked = 0;
  FILE *f;
  char line[1024];
  register_routes(fx, patterns, &npatterns);
  assert_int_equal(npatterns, 18); /* rules.routes: 25 routes, 7 refused */
  fx_start(fx, 1);
  f = fopen(data_path("rules.in"), "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f) != NULL) {
    char *sp = strchr(line, ' '), *nl = strchr(line, '\n');
    if (line[0] == '#' || sp == NULL) continue;
    if (nl != NULL) *nl = '\0';
    *sp = '\0';
    check_one(fx, line, sp + 1);
    checked++;
  }
  fclose(f);
  assert_int_equal(checked, 47);
  fx_stop(fx, 2000);
  for (i = 0; i < npatterns; i++) free(patterns[i]);
}

/* Publishes 16 new tables (routes GET /<c>0 .. /<c>15), so that the
 * current one is freed with its batch (router.c, HR__RETIRE_BATCH). */
static void replace_table_16_times(fx_t *fx, char c) {
  static char paths[2][16][8];
  int i, k = c == 'y' ? 0 : 1;
  for (i = 0; i < 16; i++) {
    snprintf(paths[k][i], sizeof paths[k][i], "/%c%d", c, i);
    assert_int_equal(hr_router_add(fx->router, "GET", paths[k][i], h_route, paths[k][i], NULL), 0);
  }
}

/* The Allow value of the router's OPTIONS answer (and of a 405) stays
 * right when the route table it came from is replaced while the body is
 * still on its way: the answer waits for the body, read after the
 * read-side section that matched, and the table is freed in between. */
/* Sends a request's header section, replaces the table it was matched in
 * (freed with its batch) and then sends its 5-byte body: the answer must
 * be `status` with the Allow the old table gave. */
static void allow_after_replacement(fx_t *fx, rc_t *c, const char *method, int status,
                                    char tag) {
  char head[128];
  rc_response_t r;
  snprintf(head, sizeof head, "%s /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n",
           method);
  expect_stat(fx, FX_EXCHANGES, 0);
  assert_int_equal(rc_send_str(c, head), 0);
  /* The header section is in (an exchange waits for its body); replaced
   * tables are freed in batches of 16 once no reader can hold them. */
  expect_stat(fx, FX_EXCHANGES, 1);
  replace_table_16_times(fx, tag);
  assert_int_equal(rc_send_str(c, "abcde"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.status, status);
  expect_field(&r, "Allow", "GET, HEAD, OPTIONS", 1);
  rc_response_free(&r);
}

static void test_allow_outlives_its_table(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx_route(fx, "GET", "/x", h_route, "/x");
  fx_route(fx, "PUT", "/elsewhere", h_route, "/elsewhere");
  fx_start(fx, 1);
  c = fx_connect(fx);
  allow_after_replacement(fx, c, "OPTIONS", 200, 'y'); /* the router's own answer */
  allow_after_replacement(fx, c, "PUT", 405, 'z');
  fx_drop(fx, c);
}

/* Parameter names are the route's own, alive as long as the request holds
 * its route: a buffered handler that runs after the table it was matched
 * in is freed still reads them. */
static void test_param_names_outlive_the_table(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx_route(fx, "POST", "/n/:id", h_route, "/n/:id");
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /n/7 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"), 0);
  expect_stat(fx, FX_EXCHANGES, 1);
  replace_table_16_times(fx, 'y');
  assert_int_equal(rc_send_str(c, "abc"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "/n/:id|id=7", NULL);
  fx_drop(fx, c);
}

/* Issue 24: with hello's route (GET /hello/:name), every standard method
 * (RFC 9110 §9, PATCH of RFC 5789) is 405 with Allow on its path and 404
 * elsewhere, where it used to be 501 when no route registered it; "get"
 * and FOO stay 501.  All on one connection (none ends it), and
 * bad_requests counts the 4xx answers only. */
static void test_standard_methods_405(void **state) {
  static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "TRACE"};
  fx_t *fx = *state;
  char req[128];
  rc_response_t r;
  rc_t *c;
  size_t i;
  fx_route(fx, "GET", "/hello/:name", h_route, "/hello/:name");
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (i = 0; i < sizeof methods / sizeof methods[0]; i++) {
    snprintf(req, sizeof req, "%s /hello/John HTTP/1.1\r\nHost: a\r\n\r\n", methods[i]);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 405 Method Not Allowed", "Method Not Allowed\n", &r);
    expect_field(&r, "Allow", "GET, HEAD, OPTIONS", 0);
    rc_response_free(&r);
    snprintf(req, sizeof req, "%s /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", methods[i]);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 404 Not Found", "Not Found\n", &r);
    expect_no_field(&r, "Allow");
    rc_response_free(&r);
  }
  assert_int_equal(rc_send_str(c, "get /hello/John HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 501 Not Implemented", "Not Implemented\n", NULL);
  assert_int_equal(rc_send_str(c, "FOO /nowhere HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 501 Not Implemented", "Not Implemented\n", NULL);
  assert_int_equal(rc_send_str(c, "GET /hello/John HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "/hello/:name|name=John", NULL);
  expect_stat(fx, FX_BAD_REQUESTS, 10); /* five 405s, five 404s, no 501 */
  fx_drop(fx, c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_server_answers_as_the_router, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_allow_outlives_its_table, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_param_names_outlive_the_table, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_standard_methods_405, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
