/* SPDX-License-Identifier: MIT */
/*
 * The access log: one line per request, the server's own answers included
 * (404, 405, 400), in Common, Combined and JSON formats, with the bytes of
 * the body sent, and the request id last in Combined and JSON lines
 * (test_server_request_id has the rest of ids); escaping of hostile bytes.
 * The time and the duration vary, so lines are compared with them cut
 * out.  Over HTTP/2 the
 * version is "HTTP/2.0" and the malformed requests are HTTP/1.1's alone.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "held.h"

static struct {
  pthread_mutex_t mu;
  char lines[16][1024];
  int n;
  uint64_t durations_ok;
} logs = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0, 0};

static void sink(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  (void)ctx;
  pthread_mutex_lock(&logs.mu);
  if (logs.n < 16) snprintf(logs.lines[logs.n++], sizeof logs.lines[0], "%.*s", (int)len, line);
  if (e->duration_us < 60000000) logs.durations_ok++;
  pthread_mutex_unlock(&logs.mu);
}

/* Line i with "[...]" (CLF time) or the "time" and "duration_us" values of
 * JSON removed. */
static void line_without_time(int i, char *out, size_t cap) {
  const char *l;
  char *p;
  pthread_mutex_lock(&logs.mu);
  l = logs.lines[i];
  snprintf(out, cap, "%s", l);
  pthread_mutex_unlock(&logs.mu);
  if ((p = strchr(out, '[')) != NULL) {
    char *q = strchr(p, ']');
    if (q) memmove(p + 1, q, strlen(q) + 1);
  }
  if ((p = strstr(out, "\"time\":\"")) != NULL) {
    char *q = strchr(p + 8, '"');
    if (q) memmove(p + 8, q, strlen(q) + 1);
  }
  if ((p = strstr(out, "\"duration_us\":")) != NULL) {
    char *q = p + 14;
    while (*q >= '0' && *q <= '9') q++;
    memmove(p + 14, q, strlen(q) + 1);
  }
}

static void wait_lines(int n) {
  int i;
  for (i = 0; i < 5000; i++) {
    int got;
    pthread_mutex_lock(&logs.mu);
    got = logs.n;
    pthread_mutex_unlock(&logs.mu);
    if (got >= n) return;
    sleep_ms(1);
  }
  fail_msg("%d access-log lines, want %d", logs.n, n);
}

static void send_and_read(fx_t *fx, const char *req, int head) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, req), 0);
  assert_int_equal(rc_read_response(c, &r, head), RC_OK);
  rc_response_free(&r);
  fx_drop(fx, c);
}

static void start(fx_t *fx, hr_access_format_t f) {
  pthread_mutex_lock(&logs.mu);
  logs.n = 0;
  logs.durations_ok = 0;
  pthread_mutex_unlock(&logs.mu);
  fx->opts.access_log = sink;
  fx->opts.access_format = f;
  fx_route(fx, "GET", "/hello/:name", ta_text, "hello");
  fx_start(fx, 1);
}

/* Compares line i (without its time) with `want`, whose first "HTTP/1.1"
 * stands for the run's version. */
static void expect_line(int i, const char *want) {
  char got[1024], w[1024];
  const char *v = strstr(want, "HTTP/1.1");
  if (v != NULL)
    snprintf(w, sizeof w, "%.*s%s%s", (int)(v - want), want, fx_version_text(), v + 8);
  else
    snprintf(w, sizeof w, "%s", want);
  want = w;
  line_without_time(i, got, sizeof got);
  if (strcmp(got, want) != 0) fail_msg("line %d:\n  got  %s\n  want %s", i, got, want);
}

/* The requests of test_common and their lines (the version is the
 * run's); `h1`: why the case is HTTP/1.1's alone, or NULL. */
static const struct {
  const char *request;
  int head;
  const char *line;
  const char *h1;
} common_cases[] = {
    {"GET /hello/x HTTP/1.1\r\nHost: a\r\n\r\n", 0,
     "127.0.0.1 - - [] \"GET /hello/x HTTP/1.1\" 200 5", NULL},
    {"GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", 0,
     "127.0.0.1 - - [] \"GET /nowhere HTTP/1.1\" 404 10", NULL},
    {"DELETE /hello/x HTTP/1.1\r\nHost: a\r\n\r\n", 0,
     "127.0.0.1 - - [] \"DELETE /hello/x HTTP/1.1\" 405 19", NULL},
    {"BREW /hello/x HTTP/1.1\r\nHost: a\r\n\r\n", 0,
     "127.0.0.1 - - [] \"BREW /hello/x HTTP/1.1\" 501 16", NULL},
    {"HEAD /hello/x HTTP/1.0\r\n\r\n", 1, "127.0.0.1 - - [] \"HEAD /hello/x HTTP/1.0\" 200 0",
     "an HTTP/1.0 request"},
    {"GET /hello/caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 0,
     "127.0.0.1 - - [] \"GET /hello/caf\\xC3\\xA9 HTTP/1.1\" 200 5", NULL},
    /* Refused by the header-section scan before the request line is
     * parsed: no request line to report. */
    {"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 0, "127.0.0.1 - - [] \"-\" 400 12",
     "a control byte in the request line"},
    /* a request line cut short: as much as was read */
    {"GET /a b c\r\n\r\n", 0, "127.0.0.1 - - [] \"GET /a\" 400 12", "a malformed request line"},
    /* a bad field line: the request line was whole, it is logged whole,
     * version included */
    {"GET /b HTTP/1.0\r\nNo-Colon\r\n\r\n", 0, "127.0.0.1 - - [] \"GET /b HTTP/1.0\" 400 12",
     "a malformed field line"},
    /* A version the request line did not end after is none. */
    {"GET /c HTTP/1.10\r\nHost: a\r\n\r\n", 0, "127.0.0.1 - - [] \"GET /c\" 400 12",
     "a malformed HTTP version"},
    {"GET /d HTTP/1.1 x\r\nHost: a\r\n\r\n", 0, "127.0.0.1 - - [] \"GET /d\" 400 12",
     "a malformed request line"},
};

static void test_common(void **state) {
  fx_t *fx = *state;
  size_t i;
  int n = 0;
  start(fx, HR_ACCESS_COMMON);
  for (i = 0; i < sizeof common_cases / sizeof common_cases[0]; i++) {
    if (fx_h2() && common_cases[i].h1 != NULL) {
      print_message("skipped over HTTP/2: case %zu, %s\n", i, common_cases[i].h1);
      continue;
    }
    send_and_read(fx, common_cases[i].request, common_cases[i].head);
    n++;
  }
  wait_lines(n);
  for (i = 0, n = 0; i < sizeof common_cases / sizeof common_cases[0]; i++)
    if (!fx_h2() || common_cases[i].h1 == NULL) expect_line(n++, common_cases[i].line);
  assert_int_equal(logs.durations_ok, n);
}

static void test_combined_and_json(void **state) {
  fx_t *fx = *state;
  start(fx, HR_ACCESS_COMBINED);
  send_and_read(fx, "GET /hello/y HTTP/1.1\r\nHost: h.test\r\nReferer: http://r/\r\n"
                    "User-Agent: curl/8 \"x\"\r\nX-Request-Id: c-1\r\n\r\n", 0);
  send_and_read(fx, "GET /hello/z HTTP/1.1\r\nHost: h.test\r\nX-Request-Id: c\"2\"\r\n\r\n", 0);
  wait_lines(2);
  expect_line(0, "127.0.0.1 - - [] \"GET /hello/y HTTP/1.1\" 200 5 \"http://r/\" \"curl/8 \\x22x\\x22\""
                 " \"c-1\"");
  expect_line(1, "127.0.0.1 - - [] \"GET /hello/z HTTP/1.1\" 200 5 \"-\" \"-\" \"c\\x222\\x22\"");
}

static void test_json(void **state) {
  fx_t *fx = *state;
  start(fx, HR_ACCESS_JSON);
  send_and_read(fx, "GET /hello/j HTTP/1.1\r\nHost: h.test\r\nUser-Agent: a\"b\r\n"
                    "X-Request-Id: j\"1\\\r\n\r\n", 0);
  /* Valid UTF-8 goes as it is; a byte that is not part of it as U+FFFD,
   * so the line stays valid JSON. */
  send_and_read(fx, "GET /hello/caf\xc3\xa9\xff HTTP/1.1\r\nHost: h\r\nUser-Agent: \xc3\x28\r\n"
                    "X-Request-Id: j-2\r\n\r\n", 0);
  wait_lines(2);
  expect_line(1, "{\"time\":\"\",\"peer\":\"127.0.0.1\",\"method\":\"GET\",\"target\":\"/hello/caf\xc3\xa9\\ufffd\","
                 "\"version\":\"HTTP/1.1\",\"host\":\"h\",\"status\":200,\"bytes\":5,"
                 "\"duration_us\":,\"referer\":\"\",\"user_agent\":\"\\ufffd(\","
                 "\"request_id\":\"j-2\"}");
  expect_line(0, "{\"time\":\"\",\"peer\":\"127.0.0.1\",\"method\":\"GET\",\"target\":\"/hello/j\","
                 "\"version\":\"HTTP/1.1\",\"host\":\"h.test\",\"status\":200,\"bytes\":5,"
                 "\"duration_us\":,\"referer\":\"\",\"user_agent\":\"a\\\"b\","
                 "\"request_id\":\"j\\\"1\\\\\"}");
}

/* A stray CRLF after a request is no request (RFC 9112 §2.2): no line,
 * no 408; the keep-alive timeout closes the connection quietly. */
static void test_stray_crlf(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  size_t discarded = 1;
  fx_h1_only("a stray CRLF between HTTP/1.1 requests");
  fx->opts.keepalive_timeout_ms = 100;
  start(fx, HR_ACCESS_COMMON);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hello/x HTTP/1.1\r\nHost: a\r\n\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  assert_int_equal(rc_drain_until_closed(c, &discarded), 1);
  assert_int_equal(discarded, 0); /* nothing more was sent: no 408 */
  fx_drop(fx, c);
  fx_stop(fx, 2000);
  assert_int_equal(logs.n, 1);
}

/* An exchange that outlives its connection (the client resets while the
 * handler holds the response) is logged with the peer all the same. */
static void test_detached_peer(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  held_init(&held_default);
  fx_route(fx, "GET", "/hold", held_handler, "held");
  start(fx, HR_ACCESS_COMMON);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  rc_set_rst_on_close(c);
  fx_drop(fx, c); /* a reset */
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), HR_ECLOSED);
  wait_lines(1);
  expect_line(0, "127.0.0.1 - - [] \"GET /hold HTTP/1.1\" 0 0");
  held_destroy(&held_default);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_common, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_combined_and_json, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_json, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_stray_crlf, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_detached_peer, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
