/* SPDX-License-Identifier: MIT */
/*
 * Persistent connections (RFC 9112 §9.3), HTTP/1.0, pipelining (also with
 * every possible split of the bytes across reads), routing through the
 * server (query ignored, 404, 405 with Allow, HEAD via GET), the Date
 * field, the request accessors, several workers and IPv6 loopback.
 *
 * Runs over HTTP/1.1 and over HTTP/2 (fixture.h); persistent connections,
 * HTTP/1.0 and pipelining are HTTP/1.1's alone (fx_h1_only says why).
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#define GET_ROOT "GET / HTTP/1.1\r\nHost: a\r\n\r\n"

/* A ta_info line with the run's version: "|11|" becomes "|20|" over
 * HTTP/2.  The result lives until the fourth call after. */
static const char *V(const char *info) {
  static char bufs[4][512];
  static unsigned k;
  char *b = bufs[k++ % 4];
  const char *at = strstr(info, "|11|");
  snprintf(b, sizeof bufs[0], "%s", info);
  if (at != NULL && fx_h2()) memcpy(b + (at - info), "|20|", 4);
  return b;
}

static void add_routes(fx_t *fx) {
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_route(fx, "GET,POST", "/echo", ta_info, NULL);
  fx_route(fx, "GET", "/users/:id", ta_info, NULL);
  fx_route(fx, "GET", "/files/*path", ta_info, NULL);
  fx_route(fx, "POST", "/only-post", ta_text, "posted");
  fx_route(fx, "PUT,DELETE", "/only-post", ta_text, "other");
}

static fx_t *start(void **state) {
  fx_t *fx = *state;
  add_routes(fx);
  fx_start(fx, 1);
  return fx;
}

static void test_keepalive_default(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  hr_server_stats_t st;
  int i;
  for (i = 0; i < 3; i++) {
    assert_int_equal(rc_send_str(c, GET_ROOT), 0);
    expect_response(c, "HTTP/1.1 200 OK", "root", &r);
    expect_field(&r, "Content-Length", "4", 0);
    expect_no_field(&r, "Transfer-Encoding");
    expect_date(&r);
    rc_response_free(&r);
  }
  assert_int_equal(ta_calls(), 3);
  expect_stat(fx, FX_REQUESTS, 3);
  fx_stats(fx, &st);
  assert_int_equal(st.connections_accepted, 1);
  assert_int_equal(st.connections_active, 1);
}

static void test_connection_close_http11(void **state) {
  static const char *const values[] = {"close", "Close", "foo, close",
                                       "keep-alive, CLOSE"};
  fx_t *fx;
  size_t i;
  fx_h1_only("Connection: close is HTTP/1.1 framing (HTTP/2 has no connection-specific fields)");
  fx = start(state);
  for (i = 0; i < sizeof values / sizeof values[0]; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    char req[256];
    snprintf(req, sizeof req,
             "GET / HTTP/1.1\r\nHost: a\r\nConnection: %s\r\n\r\n", values[i]);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 200 OK", "root", &r);
    expect_field(&r, "Connection", "close", 1);
    rc_response_free(&r);
    expect_closed(c);
  }
}

static void test_http10(void **state) {
  fx_t *fx;
  rc_t *c;
  rc_response_t r;
  fx_h1_only("HTTP/1.0 requests");
  fx = start(state);
  c = fx_connect(fx);
  /* HTTP/1.0 without keep-alive: one response, then close.  No Host
   * needed. */
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", &r);
  expect_field(&r, "Content-Length", "4", 0);
  rc_response_free(&r);
  expect_closed(c);

  /* With Connection: keep-alive the connection persists and says so. */
  c = fx_connect(fx);
  assert_int_equal(
      rc_send_str(c, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", &r);
  expect_field(&r, "Connection", "keep-alive", 1);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /echo HTTP/1.0\r\nHost: a\r\n"
                                  "Connection: Keep-Alive\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "GET|/echo||10|0|", NULL);
  /* ...until a request without it. */
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  expect_closed(c);

  /* "close" wins over keep-alive. */
  c = fx_connect(fx);
  assert_int_equal(
      rc_send_str(c, "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"),
      0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  expect_closed(c);
  assert_int_equal(ta_calls(), 5);
}

/* Three requests with different bodies in one batch. */
static const char batch[] =
    "POST /echo?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
    "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    "GET /users/7?q=3 HTTP/1.1\r\nHost: a\r\n\r\n";

static void expect_batch(rc_t *c) {
  expect_response(c, "HTTP/1.1 200 OK", "POST|/echo|x=1|11|0|hello", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "POST|/echo||11|0|abcde", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "GET|/users/7|q=3|11|1|7|", NULL);
}

static void test_pipelined_batch(void **state) {
  fx_t *fx;
  rc_t *c;
  int i;
  fx_h1_only("pipelining and the chunked coding are HTTP/1.1 framing");
  fx = start(state);
  c = fx_connect(fx);
  for (i = 0; i < 3; i++) {
    assert_int_equal(rc_send(c, batch, sizeof batch - 1), 0);
    expect_batch(c);
  }
  /* Still open and usable. */
  assert_int_equal(rc_send_str(c, GET_ROOT), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  assert_int_equal(ta_calls(), 10);
}

/* The batch split at every byte boundary i: bytes [0,i) and [i,n) arrive
 * as two sends (200 µs apart, so the server usually reads them apart; the
 * assertion does not depend on it). */
static void test_pipelined_split_every_boundary(void **state) {
  fx_t *fx;
  size_t n = sizeof batch - 1, i;
  fx_h1_only("pipelined HTTP/1.1 bytes split at every boundary");
  fx = start(state);
  for (i = 1; i < n; i++) {
    rc_t *c = fx_connect(fx);
    assert_int_equal(rc_send_split(c, batch, n, i, 200), 0);
    expect_batch(c);
    fx_drop(fx, c);
  }
  assert_int_equal(ta_calls(), 3 * (n - 1));
}

static void test_pipelined_bytewise(void **state) {
  fx_t *fx;
  rc_t *c;
  fx_h1_only("pipelined HTTP/1.1 bytes sent one at a time");
  fx = start(state);
  c = fx_connect(fx);
  assert_int_equal(rc_send_bytewise(c, batch, sizeof batch - 1, 0), 0);
  expect_batch(c);
}

/* A request with Connection: close in the middle of a pipeline: the
 * requests after it are never handled. */
static void test_pipelined_close_in_middle(void **state) {
  fx_t *fx;
  rc_t *c;
  rc_response_t r;
  fx_h1_only("Connection: close in the middle of an HTTP/1.1 pipeline");
  fx = start(state);
  c = fx_connect(fx);
  assert_int_equal(
      rc_send_str(c, GET_ROOT
                  "GET /echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                  "GET /users/1 HTTP/1.1\r\nHost: a\r\n\r\n"),
      0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "GET|/echo||11|0|", &r);
  expect_field(&r, "Connection", "close", 1);
  rc_response_free(&r);
  expect_closed(c);
  assert_int_equal(ta_calls(), 2);
}

static void test_routing_through_server(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(
      rc_send_str(c, "GET /users/42?x=1&y=%2F HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", V("GET|/users/42|x=1&y=%2F|11|1|42|"),
                  NULL);
  assert_int_equal(
      rc_send_str(c, "GET /files/a/b/c.txt?v=2 HTTP/1.1\r\nHost: a\r\n\r\n"),
      0);
  expect_response(c, "HTTP/1.1 200 OK", V("GET|/files/a/b/c.txt|v=2|11|1|a/b/c.txt|"),
                  NULL);
  /* absolute-form target: the path is taken without scheme and authority */
  assert_int_equal(rc_send_str(c, "GET http://a/users/9?z HTTP/1.1\r\n"
                                  "Host: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", V("GET|/users/9|z|11|1|9|"), NULL);
  /* an IP-literal authority (its brackets are no path bytes) */
  assert_int_equal(rc_send_str(c, "GET http://[::1]:8080/users/7 HTTP/1.1\r\n"
                                  "Host: [::1]:8080\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", V("GET|/users/7||11|1|7|"), NULL);

  /* 404, and the connection stays usable. */
  assert_int_equal(rc_send_str(c, "GET /nope?x HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, &r);
  expect_date(&r);
  rc_response_free(&r);
  /* 405 with Allow, sorted, no duplicates. */
  assert_int_equal(rc_send_str(c, "GET /only-post HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 405 Method Not Allowed", NULL, &r);
  assert_int_equal(rc_header_count(&r, "Allow"), 1);
  if (!allow_equiv(rc_header(&r, "Allow"), strlen(rc_header(&r, "Allow")),
                   "DELETE, POST, PUT"))
    fail_msg("Allow: %s", rc_header(&r, "Allow"));
  rc_response_free(&r);
  /* HEAD via the GET route: Content-Length of the GET body, no body. */
  assert_int_equal(rc_send_str(c, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n" GET_ROOT),
                   0);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  expect_field(&r, "Content-Length", "4", 0);
  assert_int_equal(r.raw_len, strstr(r.raw, "\r\n\r\n") + 4 - r.raw);
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  assert_int_equal(rc_send_str(c, "POST /only-post HTTP/1.1\r\nHost: a\r\n"
                                  "Content-Length: 0\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "posted", NULL);
  assert_int_equal(ta_calls(), 7);
}

/* ---- request accessors -------------------------------------------------- */

typedef struct seen_s {
  ev_t ev;
  char method[16], target[128], path[64], query[64];
  int version;
  size_t nfields;
  char field1_name[32], field1_value[64];
  int field_at_oob;
  char x_first[32], x_second[32];
  int x_third_rc;
  int missing_rc;
  char host[32];
  char param_by_name[32];
  int param_missing_rc;
  size_t nparams;
  size_t param_oob_len;
  char pattern[64];
  char peer[64];
  int peer_rc;
  int alloc_ok;
  int loop_ok;
} seen_t;

static seen_t seen;

static void copy_span(char *dst, size_t cap, hr_span_t s) {
  size_t n = s.len < cap - 1 ? s.len : cap - 1;
  memcpy(dst, s.ptr, n);
  dst[n] = '\0';
}

static void h_inspect(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t n, v;
  size_t cursor = 0;
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char *mem;
  (void)udata;
  ta_count();
  copy_span(seen.method, sizeof seen.method, hr_request_method(req));
  copy_span(seen.target, sizeof seen.target, hr_request_target(req));
  copy_span(seen.path, sizeof seen.path, hr_request_path(req));
  copy_span(seen.query, sizeof seen.query, hr_request_query(req));
  seen.version = hr_request_version(req);
  seen.nfields = hr_request_field_count(req);
  if (hr_request_field_at(req, 1, &n, &v) == 0) {
    copy_span(seen.field1_name, sizeof seen.field1_name, n);
    copy_span(seen.field1_value, sizeof seen.field1_value, v);
  }
  seen.field_at_oob = hr_request_field_at(req, seen.nfields, &n, &v);
  if (hr_request_field(req, HR_SPAN_LIT("x-rep"), &cursor, &v) == 0)
    copy_span(seen.x_first, sizeof seen.x_first, v);
  if (hr_request_field(req, HR_SPAN_LIT("X-REP"), &cursor, &v) == 0)
    copy_span(seen.x_second, sizeof seen.x_second, v);
  seen.x_third_rc = hr_request_field(req, HR_SPAN_LIT("x-rep"), &cursor, &v);
  seen.missing_rc = hr_request_field(req, HR_SPAN_LIT("nope"), NULL, &v);
  if (hr_request_field(req, HR_SPAN_LIT("host"), NULL, &v) == 0)
    copy_span(seen.host, sizeof seen.host, v);
  seen.nparams = hr_request_param_count(req);
  if (hr_request_param_by_name(req, HR_SPAN_LIT("id"), &v) == 0)
    copy_span(seen.param_by_name, sizeof seen.param_by_name, v);
  seen.param_missing_rc =
      hr_request_param_by_name(req, HR_SPAN_LIT("nope"), &v);
  seen.param_oob_len = hr_request_param(req, 5).len;
  if (hr_request_route(req) != NULL)
    copy_span(seen.pattern, sizeof seen.pattern,
              hr_route_pattern(hr_request_route(req)));
  seen.peer_rc = hr_request_peer(req, (struct sockaddr *)&ss, &len);
  if (seen.peer_rc == 0 && ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, seen.peer,
              sizeof seen.peer);
  mem = hr_request_alloc(req, 100);
  seen.alloc_ok = mem != NULL && ((uintptr_t)mem & 7) == 0;
  if (mem) memset(mem, 0x5A, 100);
  seen.loop_ok = hr_request_loop(req) != NULL;
  ev_signal(&seen.ev);
  hr_response_send(res, 200, "ok", 2);
}

static void test_request_accessors(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  memset(&seen, 0, sizeof seen);
  ev_init(&seen.ev);
  fx_route(fx, "GET", "/items/:id", h_inspect, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /items/abc?k=v&w HTTP/1.1\r\n"
                                  "Host:   example.org  \r\n"
                                  "X-Rep: one\r\n"
                                  "User-Agent: t\r\n"
                                  "x-rep:\t two \t\r\n"
                                  "\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "ok", NULL);
  assert_true(ev_wait(&seen.ev, 1, RC_TIMEOUT_MS));
  assert_string_equal(seen.method, "GET");
  assert_string_equal(seen.target, "/items/abc?k=v&w");
  assert_string_equal(seen.path, "/items/abc");
  assert_string_equal(seen.query, "k=v&w");
  assert_int_equal(seen.version, fx_version());
  if (!fx_h2()) {
    assert_int_equal(seen.nfields, 4);
    assert_string_equal(seen.field1_name, "X-Rep"); /* as sent */
    assert_string_equal(seen.field1_value, "one");
  } else {
    /* HTTP/2: Host went as :authority and comes back as a host field
     * after the others, and names arrive in lower case (RFC 9113 §8.2.1,
     * §8.3.1). */
    assert_int_equal(seen.nfields, 4);
    assert_string_equal(seen.field1_name, "user-agent");
    assert_string_equal(seen.field1_value, "t");
  }
  assert_int_equal(seen.field_at_oob, HR_EINVAL);
  assert_string_equal(seen.x_first, "one");
  assert_string_equal(seen.x_second, "two");
  assert_int_equal(seen.x_third_rc, HR_ENOTFOUND);
  assert_int_equal(seen.missing_rc, HR_ENOTFOUND);
  assert_string_equal(seen.host, "example.org");
  assert_int_equal(seen.nparams, 1);
  assert_string_equal(seen.param_by_name, "abc");
  assert_int_equal(seen.param_missing_rc, HR_ENOTFOUND);
  assert_int_equal(seen.param_oob_len, 0);
  assert_string_equal(seen.pattern, "/items/:id");
  assert_int_equal(seen.peer_rc, 0);
  assert_string_equal(seen.peer, "127.0.0.1");
  assert_true(seen.alloc_ok);
  assert_true(seen.loop_ok);
  ev_destroy(&seen.ev);
}

static void test_two_workers(void **state) {
  fx_t *fx = *state;
  rc_t *c[8];
  int i, round;
  add_routes(fx);
  fx_start(fx, 2);
  for (i = 0; i < 8; i++) c[i] = fx_connect(fx);
  for (round = 0; round < 3; round++) {
    for (i = 0; i < 8; i++) assert_int_equal(rc_send_str(c[i], GET_ROOT), 0);
    for (i = 0; i < 8; i++) expect_response(c[i], "HTTP/1.1 200 OK", "root", NULL);
  }
  assert_int_equal(ta_calls(), 24);
}

/* A route added while the server runs is served by the next request: the
 * new route table is published before hr_router_add returns. */
static void test_route_added_while_serving(void **state) {
  static const char *const paths[] = {"/new0", "/new1", "/new2", "/new3"};
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  size_t i;
  char req[128];
  for (i = 0; i < 4; i++) {
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", paths[i]);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
    fx_route(fx, "GET", paths[i], ta_text, (void *)paths[i]);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 200 OK", paths[i], NULL);
  }
  /* the earlier routes are all still there */
  assert_int_equal(rc_send_str(c, GET_ROOT), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
}

static int have_ipv6_loopback(void) {
  struct sockaddr_in6 sa;
  int fd = socket(AF_INET6, SOCK_STREAM, 0), ok;
  if (fd < 0) return 0;
  memset(&sa, 0, sizeof sa);
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
  close(fd);
  return ok;
}

static void test_ipv6_loopback(void **state) {
  fx_t *fx = *state;
  hr_listen_options_t lo;
  rc_t *c;
  if (!have_ipv6_loopback()) {
    skip();
    return;
  }
  add_routes(fx);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  hr_listen_options_init(&lo);
  if (fx_h2()) lo.h2 = HR_H2_ON;
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &lo), 0);
  assert_int_equal(hr_server_listen_ex(fx->server, "::1", 0, &lo), 0);
  assert_int_equal(hr_server_start(fx->server, 1), 0);
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
  assert_true(fx->port > 0);
  assert_true(hr_server_port(fx->server, 1) > 0);
  assert_int_equal(hr_server_port(fx->server, 2), 0);
  if (!fx_h2()) { /* the HTTP/2 client connects to 127.0.0.1 only */
    c = rc_connect_ex("::1", hr_server_port(fx->server, 1), 0);
    assert_non_null(c);
    assert_int_equal(rc_send_str(c, "GET /echo HTTP/1.1\r\nHost: [::1]\r\n\r\n"), 0);
    expect_response(c, "HTTP/1.1 200 OK", "GET|/echo||11|0|", NULL);
    rc_close(c);
  }
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, GET_ROOT), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_keepalive_default),
      T(test_connection_close_http11),
      T(test_http10),
      T(test_pipelined_batch),
      T(test_pipelined_split_every_boundary),
      T(test_pipelined_bytewise),
      T(test_pipelined_close_in_middle),
      T(test_routing_through_server),
      T(test_request_accessors),
      T(test_two_workers),
      T(test_route_added_while_serving),
      T(test_ipv6_loopback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
