/* SPDX-License-Identifier: MIT */
/*
 * A request's query and urlencoded form body through the server: decoded
 * pairs in order, repeated keys, lookups by key with a cursor, the raw
 * query still there, and the errors (a bad escape, too many pairs, a body
 * of another type).
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <stdio.h>
#include <string.h>

#include "fixture.h"

/* 200 with "n=<count>|k=v|...", or "err=<HR_...>" from the first failing
 * call; udata: "query" or "form". */
static void h_pairs(hr_request_t *req, hr_response_t *res, void *udata) {
  int form = strcmp((const char *)udata, "form") == 0;
  char body[2048];
  size_t n = 0, i, at;
  int rc = form ? hr_request_form_count(req, &n) : hr_request_query_count(req, &n);
  if (rc != 0) {
    at = (size_t)snprintf(body, sizeof body, "err=%s", hr_err_name(rc));
    hr_response_send(res, 200, body, at);
    return;
  }
  at = (size_t)snprintf(body, sizeof body, "n=%zu", n);
  for (i = 0; i < n && at < sizeof body; i++) {
    hr_span_t k, v;
    rc = form ? hr_request_form_pair(req, i, &k, &v) : hr_request_query_pair(req, i, &k, &v);
    assert_int_equal(rc, 0);
    at += (size_t)snprintf(body + at, sizeof body - at, "|%.*s=%.*s", (int)k.len, k.ptr,
                           (int)v.len, v.ptr);
  }
  hr_response_send(res, 200, body, at < sizeof body ? at : sizeof body - 1);
}

/* 200 with every value of "tag", then the first "q", then the raw query. */
static void h_get(hr_request_t *req, hr_response_t *res, void *udata) {
  char body[512];
  size_t at = 0, cursor = 0;
  hr_span_t v, raw = hr_request_query(req);
  (void)udata;
  while (hr_request_query_get(req, HR_SPAN_LIT("tag"), &cursor, &v) == 0)
    at += (size_t)snprintf(body + at, sizeof body - at, "tag=%.*s;", (int)v.len, v.ptr);
  if (hr_request_query_get(req, HR_SPAN_LIT("q"), NULL, &v) == 0)
    at += (size_t)snprintf(body + at, sizeof body - at, "q=%.*s;", (int)v.len, v.ptr);
  assert_int_equal(hr_request_query_get(req, HR_SPAN_LIT("missing"), NULL, &v), HR_ENOTFOUND);
  at += (size_t)snprintf(body + at, sizeof body - at, "raw=%.*s", (int)raw.len, raw.ptr);
  hr_response_send(res, 200, body, at);
}

static void get_expect(fx_t *fx, const char *target, const char *want) {
  char req[512];
  rc_t *c = fx_connect(fx);
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", target);
  assert_true(n > 0 && (size_t)n < sizeof req); /* not cut short */
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", want, NULL);
  fx_drop(fx, c);
}

static void post_expect(fx_t *fx, const char *ctype, const char *body, const char *want) {
  char req[2048];
  rc_t *c = fx_connect(fx);
  snprintf(req, sizeof req, "POST /form HTTP/1.1\r\nHost: a\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
           ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "", strlen(body),
           body);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", want, NULL);
  fx_drop(fx, c);
}

static void test_query(void **state) {
  fx_t *fx = *state;
  char many[8192];
  size_t i, at;
  fx->opts.max_form_pairs = 50;
  fx_route(fx, "GET", "/q", h_pairs, "query");
  fx_route(fx, "GET", "/get", h_get, NULL);
  fx_start(fx, 1);
  get_expect(fx, "/q", "n=0");
  get_expect(fx, "/q?a=1&b=&c&a=2", "n=4|a=1|b=|c=|a=2");
  get_expect(fx, "/q?q=caf%C3%A9+au+lait&k%2B=%26", "n=2|q=café au lait|k+=&");
  get_expect(fx, "/q?x=caf\xc3\xa9", "n=1|x=café"); /* raw UTF-8 in the query */
  get_expect(fx, "/q?a=1&b=%zz", "err=HR_EPARSE");
  get_expect(fx, "/get?tag=x&q=first&tag=y&q=second&tag=z",
             "tag=x;tag=y;tag=z;q=first;raw=tag=x&q=first&tag=y&q=second&tag=z");
  /* 50 pairs are fine, 51 are too many. */
  for (i = 0, at = 0; i < 51; i++) at += (size_t)snprintf(many + at, sizeof many - at, "%s%zu=1", i ? "&" : "/q?", i);
  get_expect(fx, many, "err=HR_ETOOLARGE");
  many[strlen(many) - strlen("&50=1")] = '\0';
  {
    char want[1024];
    size_t w = (size_t)snprintf(want, sizeof want, "n=50");
    for (i = 0; i < 50; i++) w += (size_t)snprintf(want + w, sizeof want - w, "|%zu=1", i);
    get_expect(fx, many, want);
  }
}

/* A streaming route has no buffered form: HR_EINVAL, before and after it
 * reads the body. */
static void form_then_stream(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  hr_response_t *res = udata;
  size_t n;
  (void)chunk;
  if (status == 1) {
    assert_int_equal(hr_request_form_count(req, &n), HR_EINVAL);
    hr_response_send(res, 200, "streamed", 8);
  }
}

static void h_stream_form(hr_request_t *req, hr_response_t *res, void *udata) {
  size_t n;
  (void)udata;
  assert_int_equal(hr_request_form_count(req, &n), HR_EINVAL);
  assert_int_equal(hr_request_read_body(req, form_then_stream, res), 0);
}

static void test_form_body(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  fx_route(fx, "POST", "/form", h_pairs, "form");
  hr_route_options_init(&o);
  o.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/stream", h_stream_form, NULL, &o);
  fx_start(fx, 1);
  {
    rc_t *c = fx_connect(fx);
    assert_int_equal(rc_send_str(c, "POST /stream HTTP/1.1\r\nHost: a\r\nContent-Type: "
                                    "application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1"),
                     0);
    expect_response(c, "HTTP/1.1 200 OK", "streamed", NULL);
    fx_drop(fx, c);
  }
  post_expect(fx, "application/x-www-form-urlencoded", "name=Ada+Lovelace&lang=fr&lang=en",
              "n=3|name=Ada Lovelace|lang=fr|lang=en");
  post_expect(fx, "Application/X-WWW-Form-Urlencoded; charset=UTF-8", "a=%C3%A9", "n=1|a=é");
  post_expect(fx, "application/x-www-form-urlencoded", "", "n=0");
  post_expect(fx, "application/x-www-form-urlencoded", "a=%", "err=HR_EPARSE");
  post_expect(fx, "application/json", "{\"a\":1}", "err=HR_EINVAL");
  post_expect(fx, NULL, "a=1", "err=HR_EINVAL");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_query, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_form_body, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
