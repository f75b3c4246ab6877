/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus exposition (hr_server_metrics, hr_server_route_metrics):
 * exact sample lines for the server's counters and a route's requests,
 * status classes and latency histogram after known traffic, label
 * escaping, host tables, and the byte counters.  (tests/metrics/ parses
 * the same text with python3-prometheus-client.)
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "util/utf8.h"

typedef struct text_s {
  char *p;
  size_t len;
  int calls;
} text_t;

static void collect(void *ctx, const char *p, size_t n) {
  text_t *t = ctx;
  t->p = realloc(t->p, t->len + n + 1);
  memcpy(t->p + t->len, p, n);
  t->len += n;
  t->p[t->len] = '\0';
  t->calls++;
}

/* The value of the sample line that starts with `series` followed by a
 * space; fails when there is none or more than one. */
static const char *value_of(const char *text, const char *series) {
  const char *at = text, *found = NULL;
  size_t n = strlen(series);
  while ((at = strstr(at, series)) != NULL) {
    if ((at == text || at[-1] == '\n') && at[n] == ' ') {
      if (found != NULL) fail_msg("two samples for %s", series);
      found = at + n + 1;
    }
    at += n;
  }
  if (found == NULL) fail_msg("no sample for %s", series);
  return found;
}

static void expect_sample(const char *text, const char *series, const char *value) {
  const char *v = value_of(text, series);
  size_t n = strlen(value);
  if (strncmp(v, value, n) != 0 || v[n] != '\n')
    fail_msg("%s: expected %s, got %.*s", series, value, (int)strcspn(v, "\n"), v);
}

static void h_status(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t code = hr_request_param(req, 0);
  (void)udata;
  (void)hr_response_send(res, atoi(code.ptr), "x", 1);
}

#define ROUTE "host=\"\",route=\"/s/:code\",method=\"GET,POST\""

static void test_route_samples(void **state) {
  fx_t *fx = *state;
  text_t t = {NULL, 0, 0};
  rc_t *c;
  int i;
  hr_route_stats_t st;
  char series[160];
  uint64_t cum = 0;
  fx_route(fx, "GET,POST", "/s/:code", h_status, NULL);
  fx_start(fx, 2);
  assert_int_equal(hr_server_route_metrics(fx->server, NULL), HR_EINVAL);
  assert_int_equal(hr_server_metrics(fx->server, NULL, NULL), HR_EINVAL);
  assert_int_equal(hr_server_route_metrics(fx->server, "/metrics"), 0);
  c = fx_connect(fx);
  for (i = 0; i < 3; i++) {
    assert_int_equal(rc_send_str(c, "GET /s/200 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    expect_response(c, "HTTP/1.1 200 OK", "x", NULL);
  }
  assert_int_equal(rc_send_str(c, "POST /s/404 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 404 Not Found", "x", NULL);
  assert_int_equal(rc_send_str(c, "GET /s/503 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 503 Service Unavailable", "x", NULL);
  expect_stat(fx, FX_REQUESTS, 5);

  assert_int_equal(hr_server_metrics(fx->server, collect, &t), 0);
  assert_int_equal(t.calls, 1);
  assert_non_null(strstr(t.p, "# TYPE hroute_requests_total counter\n"));
  assert_non_null(strstr(t.p, "# TYPE hroute_route_duration_seconds histogram\n"));
  expect_sample(t.p, "hroute_requests_total", "5");
  expect_sample(t.p, "hroute_connections_accepted_total", "1");
  expect_sample(t.p, "hroute_connections_active", "1");
  expect_sample(t.p, "hroute_bad_requests_total", "0");
  expect_sample(t.p, "hroute_client_aborts_total", "0");
  expect_sample(t.p, "hroute_draining", "0");
  expect_sample(t.p, "hroute_route_requests_total{" ROUTE "}", "5");
  expect_sample(t.p, "hroute_route_responses_total{" ROUTE ",status=\"2xx\"}", "3");
  expect_sample(t.p, "hroute_route_responses_total{" ROUTE ",status=\"4xx\"}", "1");
  expect_sample(t.p, "hroute_route_responses_total{" ROUTE ",status=\"5xx\"}", "1");
  expect_sample(t.p, "hroute_route_responses_total{" ROUTE ",status=\"none\"}", "0");
  expect_sample(t.p, "hroute_route_duration_seconds_count{" ROUTE "}", "5");
  expect_sample(t.p, "hroute_route_duration_seconds_bucket{" ROUTE ",le=\"+Inf\"}", "5");
  /* The /metrics route is listed, with nothing served yet. */
  expect_sample(t.p,
                "hroute_route_requests_total{host=\"\",route=\"/metrics\",method=\"GET\"}", "0");
  /* The buckets are the route's counters, cumulated. */
  assert_int_equal(hr_router_route_stats(fx->router, NULL, "GET,POST", "/s/:code", &st), 0);
  for (i = 0; i + 1 < HR_LATENCY_BUCKETS; i++) {
    uint64_t us = (uint64_t)1 << i;
    char want[24];
    cum += st.latency_us[i];
    snprintf(series, sizeof series,
             "hroute_route_duration_seconds_bucket{" ROUTE ",le=\"%llu.%06llu\"}",
             (unsigned long long)(us / 1000000), (unsigned long long)(us % 1000000));
    snprintf(want, sizeof want, "%llu", (unsigned long long)cum);
    expect_sample(t.p, series, want);
  }
  assert_int_equal(cum + st.latency_us[HR_LATENCY_BUCKETS - 1], 5);
  {
    char want[48];
    snprintf(want, sizeof want, "%llu.%06llu", (unsigned long long)(st.latency_sum_us / 1000000),
             (unsigned long long)(st.latency_sum_us % 1000000));
    expect_sample(t.p, "hroute_route_duration_seconds_sum{" ROUTE "}", want);
  }
  free(t.p);

  /* Over HTTP: the same text, with its media type. */
  {
    rc_response_t r;
    assert_int_equal(rc_send_str(c, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
    expect_field(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8", 0);
    expect_sample(r.body, "hroute_route_requests_total{" ROUTE "}", "5");
    expect_sample(r.body,
                  "hroute_route_requests_total{host=\"\",route=\"/metrics\",method=\"GET\"}", "1");
    rc_response_free(&r);
  }
}

static void test_labels_and_bytes(void **state) {
  fx_t *fx = *state;
  text_t t = {NULL, 0, 0};
  hr_group_t *g;
  rc_t *c;
  hr_server_stats_t st;
  int i;
  static const char req[] = "GET /q/%22/x%5C HTTP/1.1\r\nHost: API.example\r\n\r\n";
  char want[32];
  /* A pattern with a quote and a backslash (escaped in the label), on a
   * host table. */
  assert_int_equal(hr_router_group(fx->router, "api.example", "/q", &g), 0);
  assert_int_equal(hr_group_add(g, "*", "/%22/x%5C", ta_text, "q", NULL), 0);
  assert_int_equal(hr_router_add(fx->router, "GET", "/e/\"/\\", ta_text, "e", NULL), 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", "q", NULL);
  expect_stat(fx, FX_REQUESTS, 1);
  assert_int_equal(hr_server_metrics(fx->server, collect, &t), 0);
  expect_sample(t.p,
                "hroute_route_requests_total{host=\"api.example\",route=\"/q/%22/x%5C\","
                "method=\"*\"}",
                "1");
  expect_sample(t.p,
                "hroute_route_requests_total{host=\"\",route=\"/e/\\\"/\\\\\",method=\"GET\"}",
                "0");
  /* Sent bytes are counted as the write returns, which may be just after
   * the client read them; received ones as they are read, and over HTTP/2
   * the client's session may have sent a frame of its own (a SETTINGS
   * acknowledgement) after its request. */
  for (i = 0; i < RC_TIMEOUT_MS; i++) {
    hr_server_stats(fx->server, &st);
    if (st.bytes_sent > 0 && st.bytes_received == c->sent) break;
    usleep(1000);
  }
  if (!fx_h2()) assert_int_equal(c->sent, sizeof(req) - 1);
  assert_int_equal(st.bytes_received, c->sent);
  assert_true(st.bytes_sent > 0);
  free(t.p);
  memset(&t, 0, sizeof t);
  assert_int_equal(hr_server_metrics(fx->server, collect, &t), 0);
  snprintf(want, sizeof want, "%llu", (unsigned long long)st.bytes_received);
  expect_sample(t.p, "hroute_received_bytes_total", want);
  free(t.p);
}

/* A pattern may hold raw bytes from 0x80 that are not UTF-8 (router.h:
 * "bytes from 0x80 as they are"), but the exposition must be UTF-8
 * (Prometheus refuses a label value that is not, and with it the whole
 * scrape): such a byte is written as the escape that means the same byte
 * in a pattern, %XX; well-formed UTF-8 stays as it is. */
static void test_label_not_utf8(void **state) {
  fx_t *fx = *state;
  text_t t = {NULL, 0, 0};
  assert_int_equal(hr_router_add(fx->router, "GET", "/caf\xe9", ta_text, "latin1", NULL), 0);
  assert_int_equal(hr_router_add(fx->router, "GET", "/ok/\xc3\xa9", ta_text, "utf8", NULL), 0);
  fx_start(fx, 1);
  assert_int_equal(hr_server_metrics(fx->server, collect, &t), 0);
  assert_true(hr__utf8_valid(t.p, t.len));
  expect_sample(t.p, "hroute_route_requests_total{host=\"\",route=\"/caf%E9\",method=\"GET\"}",
                "0");
  expect_sample(t.p,
                "hroute_route_requests_total{host=\"\",route=\"/ok/\xc3\xa9\",method=\"GET\"}",
                "0");
  free(t.p);
}

/* An allocator that, once armed, adds a route to `router` from inside the
 * first reallocation on the arming thread that grows a block past 4 KiB:
 * a route published while hr_server_metrics renders. */
static struct {
  hr_allocator_t hook;
  hr_router_t *router;
  pthread_t thread;
  int armed, added;
} late;

static void *late_malloc(void *ctx, size_t n) {
  (void)ctx;
  return malloc(n);
}

static void *late_realloc(void *ctx, void *p, size_t n) {
  (void)ctx;
  if (late.armed && n > 4096 && pthread_equal(pthread_self(), late.thread)) {
    late.armed = 0;
    late.added = hr_router_add(late.router, "GET", "/zz/late", ta_text, "late", NULL) == 0;
  }
  return realloc(p, n);
}

static void late_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

/* Occurrences of `needle` in `text`. */
static int count_of(const char *text, const char *needle) {
  int n = 0;
  while ((text = strstr(text, needle)) != NULL) {
    n++;
    text += strlen(needle);
  }
  return n;
}

/* A route published while the text is rendered is in every family or in
 * none: the three families are read from one route table, so that each
 * lists the same routes. */
static void test_one_table(void **state) {
  fx_t *fx = *state;
  text_t t = {NULL, 0, 0};
  char pat[32];
  int i, n;
  late.hook.malloc = late_malloc;
  late.hook.realloc = late_realloc;
  late.hook.free = late_free;
  late.hook.ctx = NULL;
  late.router = fx->router;
  late.thread = pthread_self();
  fx->opts.allocator = &late.hook;
  /* Enough routes that the requests family alone crosses 4 KiB. */
  for (i = 0; i < 80; i++) {
    snprintf(pat, sizeof pat, "/m/%d", i);
    fx_route(fx, "GET", pat, ta_text, "m");
  }
  fx_start(fx, 1);
  late.armed = 1;
  assert_int_equal(hr_server_metrics(fx->server, collect, &t), 0);
  late.armed = 0;
  assert_true(late.added);
  /* requests 1, responses 6, duration 23 + 1 buckets, _sum, _count */
  n = count_of(t.p, "route=\"/zz/late\"");
  if (n != 0 && n != 1 + 6 + 24 + 2) fail_msg("/zz/late in %d samples", n);
  free(t.p);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_route_samples),
      T(test_labels_and_bytes),
      T(test_label_not_utf8),
      T(test_one_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
