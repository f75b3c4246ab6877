/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 (RFC 9113) served over loopback, every test twice: on a plain
 * listener with prior knowledge (h2c) and on a TLS listener with ALPN "h2".
 * What a handler sees and what the client gets: GET, HEAD and POST with
 * bodies (buffered and streaming routes, a body sent in pieces, request
 * trailers), the router's own answers (404, 405 with Allow, 501), route
 * parameters, middleware on every answer, request fields (case-insensitive
 * lookup, cookie crumbs joined, RFC 9113 §8.2.3), :authority as the host
 * for host tables, a response larger than the client's window (opened 16
 * KiB at a time, never overrun), streamed responses, files, concurrent
 * streams on one connection, the access log's HTTP/2.0, GOAWAY when the
 * server drains and when it stops, and HTTP/1.1 beside HTTP/2 on the same
 * listener (h2c: by the first bytes; TLS: by ALPN).
 *
 * ctest-labels: tsan
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h2fx.h"

/* ---- handlers ----------------------------------------------------------- */

/* 200 with "x-test=<X-Test>|cookie=<Cookie>|n=<field lines>", fields looked
 * up by names spelled unlike the client sent them. */
static void h_fields(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t x = {"", 0}, cookie = {"", 0};
  char body[512];
  int n;
  (void)udata;
  hr_request_field(req, HR_SPAN_LIT("X-TEST"), NULL, &x);
  hr_request_field(req, HR_SPAN_LIT("Cookie"), NULL, &cookie);
  n = snprintf(body, sizeof body, "x-test=%.*s|cookie=%.*s|n=%zu", (int)x.len, x.ptr,
               (int)cookie.len, cookie.ptr, hr_request_field_count(req));
  hr_response_send(res, 200, body, (size_t)n);
}

/* A streaming route's body, gathered and echoed once complete. */
typedef struct gather_s {
  hr_response_t *res;
  size_t len, pieces;
  char buf[1 << 16];
} gather_t;

static void on_piece(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  gather_t *g = udata;
  (void)req;
  if (status == 0) {
    if (g->len + chunk.len <= sizeof g->buf) memcpy(g->buf + g->len, chunk.ptr, chunk.len);
    g->len += chunk.len;
    g->pieces++;
    return;
  }
  if (status == 1 && g->len <= sizeof g->buf)
    hr_response_send(g->res, 200, g->buf, g->len);
  else
    hr_response_send(g->res, 500, NULL, 0);
  free(g);
}

static void h_stream_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  gather_t *g = calloc(1, sizeof *g);
  (void)udata;
  if (g == NULL) {
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  g->res = res;
  if (hr_request_read_body(req, on_piece, g) != 0) {
    free(g);
    hr_response_send(res, 500, NULL, 0);
  }
}

/* 1 MiB (or the route's udata as a size) of a known pattern. */
#define BIG_LEN (1u << 20)
static char big[BIG_LEN];

static void fill_big(void) {
  size_t i;
  for (i = 0; i < BIG_LEN; i++) big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
}

static void h_big(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send_borrowed(res, 200, big, BIG_LEN, NULL, NULL);
}

/* A streamed response: "one," "two," "three" with the length unknown, or
 * declared when udata is non-NULL. */
static void h_streamed(hr_request_t *req, hr_response_t *res, void *udata) {
  static const char *const parts[] = {"one,", "two,", "three"};
  size_t i;
  (void)req;
  if (hr_response_start(res, 200, udata != NULL ? 13 : HR_LENGTH_UNKNOWN) != 0) return;
  for (i = 0; i < 3; i++) hr_response_write(res, parts[i], strlen(parts[i]));
  hr_response_end(res);
}

/* 4 MiB of `big` in 16 KiB writes, each after the drain callback once a
 * write answered HR_EAGAIN: a response that outruns its reader. */
typedef struct pump_s {
  size_t off;
} pump_t;

#define PUMP_LEN (4u << 20)

static void pump(hr_response_t *res, int status, void *udata) {
  pump_t *p = udata;
  while (status == 0 && p->off < PUMP_LEN) {
    int rc = hr_response_write(res, big + p->off % BIG_LEN, 16384);
    if (rc == HR_EAGAIN) return; /* again from the drain callback */
    if (rc != 0) break;
    p->off += 16384;
  }
  hr_response_end(res);
  free(p);
}

static void h_pump(hr_request_t *req, hr_response_t *res, void *udata) {
  pump_t *p = calloc(1, sizeof *p);
  (void)req;
  (void)udata;
  if (p == NULL || hr_response_start(res, 200, PUMP_LEN) != 0 ||
      hr_response_on_drain(res, pump, p) != 0) {
    free(p);
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  pump(res, 0, p);
}

/* The file named by udata, whole. */
static void h_file(hr_request_t *req, hr_response_t *res, void *udata) {
  int fd = open(udata, O_RDONLY);
  off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
  (void)req;
  if (fd < 0 || size < 0 ||
      hr_response_send_file(res, 200, fd, 0, (uint64_t)size, NULL, NULL) != 0) {
    if (fd >= 0) close(fd);
    hr_response_send(res, 500, NULL, 0);
  }
}

/* ---- tests -------------------------------------------------------------- */

static void routes(fx_t *fx) {
  hr_route_options_t ro;
  fx_route(fx, "GET,POST", "/info/:a/:b", ta_info, NULL);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  fx_route(fx, "POST,PUT", "/echo", ta_echo, NULL);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/stream", h_stream_echo, NULL, &ro);
}

/* GET, HEAD and a buffered POST; the handler sees version 20. */
static void test_methods(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  h2_stream_t *st;
  h2c_request_t r;
  int32_t id;
  routes(fx);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  expect_h2(h2fx_request(c, "GET", "/info/x/y?q=1"), 200, "GET|/info/x/y|q=1|20|2|x|y|");
  st = h2fx_request(c, "HEAD", "/hello");
  expect_h2(st, 200, "");
  expect_h2_field(st, "content-length", "5");
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/info/p/q";
  r.body = "a body";
  r.body_len = 6;
  id = h2c_submit(c, &r);
  expect_h2(h2c_wait1(c, id), 200, "POST|/info/p/q||20|2|p|q|a body");
  assert_int_equal(c->session_error, 0);
  assert_int_equal(c->invalid_frames, 0);
  assert_int_equal(ta_calls(), 3);
}

/* Bodies: buffered, streamed to the handler, sent by the client in pieces
 * with the handler already running, and followed by trailers. */
static void test_bodies(void **state) {
  fx_t *fx = *state;
  static const h2f_field_t trailers[] = {{"x-checksum", "abc"}};
  h2c_t *c;
  h2c_request_t r;
  int32_t id;
  char body[40000];
  size_t i;
  routes(fx);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  for (i = 0; i < sizeof body; i++) body[i] = (char)('0' + i % 10);

  memset(&r, 0, sizeof r);
  r.method = "PUT";
  r.path = "/echo";
  r.body = body;
  r.body_len = sizeof body;
  id = h2c_submit(c, &r);
  assert_true(h2c_wait1(c, id) != NULL);
  expect_h2(h2_seen_stream(&c->io.seen, id), 200, NULL);
  assert_int_equal(h2_seen_stream(&c->io.seen, id)->body_len, sizeof body);
  assert_memory_equal(h2_seen_stream(&c->io.seen, id)->body, body, sizeof body);

  r.path = "/stream";
  r.method = "POST";
  id = h2c_submit(c, &r);
  assert_true(h2c_wait1(c, id) != NULL);
  assert_int_equal(h2_seen_stream(&c->io.seen, id)->body_len, sizeof body);
  assert_memory_equal(h2_seen_stream(&c->io.seen, id)->body, body, sizeof body);

  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/stream";
  r.open = 1;
  id = h2c_submit(c, &r);
  assert_int_equal(h2c_send_body(c, id, "first,", 6, 0), 0);
  assert_int_equal(h2_loop_flush(&c->io), 0);
  assert_int_equal(h2c_send_body(c, id, "second", 6, 1), 0);
  expect_h2(h2c_wait1(c, id), 200, "first,second");

  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/echo";
  r.body = "with trailers";
  r.body_len = 13;
  r.trailers = trailers;
  r.ntrailers = 1;
  id = h2c_submit(c, &r);
  expect_h2(h2c_wait1(c, id), 200, "with trailers");
  assert_int_equal(c->session_error, 0);
}

/* The router's own answers: 404, 405 with Allow (a method some other route
 * has), 501 for a method no route has. */
static void test_answers(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  h2_stream_t *st;
  const char *allow;
  routes(fx);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  expect_h2(h2fx_request(c, "GET", "/nowhere"), 404, NULL);
  st = h2fx_request(c, "PUT", "/hello"); /* PUT: a method other routes have */
  expect_h2(st, 405, NULL);
  allow = h2_fields_get(&st->fields, "allow");
  assert_non_null(allow);
  assert_true(allow_equiv(allow, strlen(allow), "GET"));
  expect_h2(h2fx_request(c, "BREW", "/hello"), 501, NULL);
  assert_int_equal(ta_calls(), 0);
}

/* Parameters, percent-decoded. */
static void test_params(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  routes(fx);
  fx_route(fx, "GET", "/files/*rest", ta_info, NULL);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  expect_h2(h2fx_request(c, "GET", "/info/caf%C3%A9/a%20b"), 200,
            "GET|/info/caf%C3%A9/a%20b||20|2|caf\xc3\xa9|a b|");
  expect_h2(h2fx_request(c, "GET", "/files/x/y/z.txt"), 200, "GET|/files/x/y/z.txt||20|1|x/y/z.txt|");
}

/* Middleware: the before-middleware's field on a handler's answer and on
 * the router's own, the after-middleware once per answer with its status. */
static atomic_int after_calls, after_status_sum;

static hr_next_t mw_before(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("x-mw"), HR_SPAN_LIT("1"));
  return HR_NEXT;
}

static void mw_after(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)udata;
  atomic_fetch_add(&after_status_sum, status);
  atomic_fetch_add(&after_calls, 1);
}

static int after_calls_are(void *arg) { return atomic_load(&after_calls) == *(int *)arg; }

static void test_middleware(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  int want = 3;
  atomic_store(&after_calls, 0);
  atomic_store(&after_status_sum, 0);
  routes(fx);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_before, mw_after, NULL), 0);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  expect_h2_field(h2fx_request(c, "GET", "/hello"), "x-mw", "1");
  expect_h2_field(h2fx_request(c, "GET", "/nowhere"), "x-mw", "1");
  expect_h2_field(h2fx_request(c, "PUT", "/hello"), "x-mw", "1");
  /* after-middleware runs once the response is queued: maybe just after
   * the client saw it */
  h2c_run(c, after_calls_are, &want);
  assert_int_equal(atomic_load(&after_calls), 3);
  assert_int_equal(atomic_load(&after_status_sum), 200 + 404 + 405);
}

/* Fields: looked up case-insensitively, two cookie fields joined into one
 * with "; " (RFC 9113 §8.2.3), and :authority as a host field (§8.3.1):
 * x-test, cookie, host. */
static void test_fields(void **state) {
  fx_t *fx = *state;
  static const h2f_field_t f[] = {{"x-test", "v1"}, {"cookie", "a=1"}, {"cookie", "b=2"}};
  h2c_t *c;
  h2c_request_t r;
  int32_t id;
  fx_route(fx, "GET", "/fields", h_fields, NULL);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  memset(&r, 0, sizeof r);
  r.path = "/fields";
  r.fields = f;
  r.nfields = 3;
  id = h2c_submit(c, &r);
  expect_h2(h2c_wait1(c, id), 200, "x-test=v1|cookie=a=1; b=2|n=3");
}

/* :authority is the host the host tables route by (port dropped, case
 * ignored); a request with none goes to the default table. */
static void test_authority_hosts(void **state) {
  fx_t *fx = *state;
  hr_group_t *g;
  h2c_t *c;
  h2c_request_t r;
  const char *const hosts[] = {"second.test", "SECOND.Test:8443", "other.test", NULL};
  const char *const want[] = {"second", "second", "default", "default"};
  size_t i;
  fx_route(fx, "GET", "/where", ta_text, "default");
  assert_int_equal(hr_router_group(fx->router, "second.test", NULL, &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/where", ta_text, "second", NULL), 0);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  for (i = 0; i < 4; i++) {
    int32_t id;
    memset(&r, 0, sizeof r);
    r.path = "/where";
    r.authority = hosts[i];
    id = h2c_submit(c, &r);
    expect_h2(h2c_wait1(c, id), 200, want[i]);
  }
}

/* A window that outlasts the body: the client announces a zero window and
 * opens 16 KiB at a time; the server never sends past what was opened, and
 * the 1 MiB body arrives whole. */
typedef struct upto_s {
  const h2_stream_t *st;
  size_t n;
} upto_t;

static int body_reached(void *arg) {
  const upto_t *u = arg;
  return u->st->body_len >= u->n || u->st->closed;
}

static void test_large_slow_window(void **state) {
  fx_t *fx = *state;
  h2c_options_t o;
  h2c_t *c;
  h2_stream_t *st;
  upto_t u;
  int32_t id;
  fill_big();
  fx_route(fx, "GET", "/big", h_big, NULL);
  h2fx_start(fx, 1);
  h2c_options_init(&o);
  o.initial_window = 0;
  o.manual_window = 1;
  c = h2fx_connect(fx, &o);
  id = h2c_get(c, "GET", "/big");
  st = h2_seen_stream(&c->io.seen, id);
  u.st = st;
  u.n = 0;
  while (u.n < BIG_LEN) {
    u.n += 16384;
    assert_int_equal(h2c_open_window(c, id, 16384), 0);
    if (!h2c_run(c, body_reached, &u)) fail_msg("stalled at %zu of %zu bytes", st->body_len, u.n);
    if (st->body_len > u.n) fail_msg("the server sent %zu bytes into a window of %zu", st->body_len, u.n);
  }
  assert_non_null(h2c_wait1(c, id));
  expect_h2(st, 200, NULL);
  assert_int_equal(st->body_len, BIG_LEN);
  assert_memory_equal(st->body, big, BIG_LEN);
}

/* hr_response_start / write / end, length unknown and declared. */
static void test_streamed_response(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  h2_stream_t *st;
  fx_route(fx, "GET", "/unknown", h_streamed, NULL);
  fx_route(fx, "GET", "/known", h_streamed, "13");
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  st = h2fx_request(c, "GET", "/unknown");
  expect_h2(st, 200, "one,two,three");
  assert_null(h2_fields_get(&st->fields, "transfer-encoding"));
  st = h2fx_request(c, "GET", "/known");
  expect_h2(st, 200, "one,two,three");
  expect_h2_field(st, "content-length", "13");
}

/* A streamed response larger than the high-water mark: the handler's
 * writes answer HR_EAGAIN and go on from the drain callback as the client
 * reads; 4 MiB arrive whole and in order. */
static void test_streamed_backpressure(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  h2_stream_t *st;
  size_t i;
  fill_big();
  fx_route(fx, "GET", "/pump", h_pump, NULL);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  st = h2fx_request(c, "GET", "/pump");
  expect_h2(st, 200, NULL);
  assert_int_equal(st->body_len, PUMP_LEN);
  for (i = 0; i < PUMP_LEN; i += 16384)
    if (memcmp(st->body + i, big + i % BIG_LEN, 16384) != 0) fail_msg("body differs at %zu", i);
}

/* hr_response_send_file: 300,000 bytes, whole. */
static void test_file(void **state) {
  fx_t *fx = *state;
  char path[] = "/tmp/hroute_h2_file_XXXXXX";
  int fd = mkstemp(path);
  h2c_t *c;
  h2_stream_t *st;
  size_t i;
  assert_true(fd >= 0);
  fill_big();
  for (i = 0; i < 300000; i += 4096) {
    size_t n = 300000 - i < 4096 ? 300000 - i : 4096;
    assert_int_equal(write(fd, big + i, n), (ssize_t)n);
  }
  close(fd);
  fx_route(fx, "GET", "/file", h_file, path);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  st = h2fx_request(c, "GET", "/file");
  unlink(path);
  expect_h2(st, 200, NULL);
  expect_h2_field(st, "content-length", "300000");
  assert_int_equal(st->body_len, 300000);
  assert_memory_equal(st->body, big, 300000);
}

/* 60 streams at once on one connection, on two workers' server: each gets
 * its own answer. */
static void test_concurrent_streams(void **state) {
  fx_t *fx = *state;
  int32_t ids[60];
  char path[64], want[96];
  h2c_t *c;
  size_t i;
  routes(fx);
  h2fx_start(fx, 2);
  c = h2fx_connect(fx, NULL);
  for (i = 0; i < 60; i++) {
    snprintf(path, sizeof path, "/info/%zu/%zu", i, i * i);
    ids[i] = h2c_get(c, "GET", path);
    assert_true(ids[i] > 0);
  }
  assert_int_equal(h2c_wait(c, ids, 60), 1);
  for (i = 0; i < 60; i++) {
    snprintf(want, sizeof want, "GET|/info/%zu/%zu||20|2|%zu|%zu|", i, i * i, i, i * i);
    expect_h2(h2_seen_stream(&c->io.seen, ids[i]), 200, want);
  }
  assert_int_equal(ta_calls(), 60);
}

/* The access log says HTTP/2.0. */
static struct {
  pthread_mutex_t mu;
  char line[512];
  int n;
} logged = {PTHREAD_MUTEX_INITIALIZER, "", 0};

static void log_sink(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  (void)ctx;
  (void)e;
  pthread_mutex_lock(&logged.mu);
  snprintf(logged.line, sizeof logged.line, "%.*s", (int)len, line);
  logged.n++;
  pthread_mutex_unlock(&logged.mu);
}

static int logged_once(void *arg) {
  int n;
  (void)arg;
  pthread_mutex_lock(&logged.mu);
  n = logged.n;
  pthread_mutex_unlock(&logged.mu);
  return n >= 1;
}

static void test_access_log(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  logged.n = 0;
  fx->opts.access_log = log_sink;
  routes(fx);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  h2c_run(c, logged_once, NULL);
  pthread_mutex_lock(&logged.mu);
  assert_int_equal(logged.n, 1);
  if (strstr(logged.line, "\"GET /hello HTTP/2.0\" 200 5") == NULL)
    fail_msg("access log line: %s", logged.line);
  pthread_mutex_unlock(&logged.mu);
}

/* The routes served, a client, and one GET /hello answered on stream 1. */
static h2c_t *serve_hello(fx_t *fx) {
  h2c_t *c;
  routes(fx);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  return c;
}

/* GET /hello on the hand-driven client's next stream: 200 "hello". */
static void raw_hello(h2r_t *r) {
  int32_t id = h2r_request(r, "GET", "/hello", 1, NULL, 0);
  assert_int_equal(h2r_flush(r), 0);
  assert_int_equal(h2r_wait_stream(r, id), 1);
  expect_h2(h2_seen_stream(&r->io.seen, id), 200, "hello");
}

/* Draining: GOAWAY(2^31-1, NO_ERROR) first (RFC 9113 §6.8), then, after the
 * grace period, the final GOAWAY naming the last stream processed, and the
 * connection ends.  The hand-driven client counts the frames as they come:
 * nghttp2's own client session stops reading after a GOAWAY once no stream
 * is open, so it never sees the final one. */
static void test_goaway_drain(void **state) {
  fx_t *fx = *state;
  h2r_t *r;
  routes(fx);
  h2fx_start(fx, 1);
  r = h2fx_raw(fx);
  raw_hello(r); /* stream 1 */
  raw_hello(r); /* stream 3 */
  assert_int_equal(hr_server_drain(fx->server, 300, 2000, NULL, NULL), 0);
  assert_int_equal(h2r_wait_goaway(r), 1);
  assert_int_equal(r->io.seen.frames[NGHTTP2_GOAWAY], 1);
  assert_int_equal(r->io.seen.goaway_last_id, 0x7fffffff);
  assert_int_equal(r->io.seen.goaway_error, NGHTTP2_NO_ERROR);
  assert_int_equal(h2r_wait_closed(r), 1);
  if (r->io.seen.frames[NGHTTP2_GOAWAY] != 2)
    fail_msg("%lu GOAWAY frames before the close, want 2 (the notice, then the final one "
             "naming stream 3); the last said %d",
             r->io.seen.frames[NGHTTP2_GOAWAY], r->io.seen.goaway_last_id);
  assert_int_equal(r->io.seen.goaway_last_id, 3);
  assert_int_equal(r->io.seen.goaway_error, NGHTTP2_NO_ERROR);
  assert_int_equal(r->decode_error, 0);
}

/* Stopping: GOAWAY naming the last stream processed, then the close. */
static void test_goaway_stop(void **state) {
  fx_t *fx = *state;
  h2c_t *c = serve_hello(fx);
  assert_int_equal(fx_stop(fx, 2000), 0);
  assert_int_equal(h2c_wait_closed(c), 1);
  assert_int_equal(c->io.seen.goaway, 1);
  assert_int_equal(c->io.seen.goaway_last_id, 1);
  assert_int_equal(c->io.seen.goaway_error, NGHTTP2_NO_ERROR);
}

/* HTTP/1.1 beside HTTP/2 on the same listener: on h2c a connection that
 * does not start with the preface, on TLS a client whose ALPN offers only
 * http/1.1 (the server selects it). */
static void test_http11_beside(void **state) {
  fx_t *fx = *state;
  static const char req[] = "GET /info/a/b HTTP/1.1\r\nHost: x\r\n\r\n";
  routes(fx);
  h2fx_start(fx, 1);
  if (!h2fx(fx)->tls) {
    rc_t *c = fx_connect(fx);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 200 OK", "GET|/info/a/b||11|2|a|b|", NULL);
    return;
  }
  {
    tf_conn_t t;
    const unsigned char *alpn;
    unsigned alpn_len;
    char buf[1024];
    assert_int_equal(tf_connect(&t, fx->port, &h2fx(fx)->cert, NULL, 0, "\x08http/1.1", 9, NULL), 0);
    SSL_get0_alpn_selected(t.ssl, &alpn, &alpn_len);
    assert_int_equal(alpn_len, 8);
    assert_memory_equal(alpn, "http/1.1", 8);
    assert_int_equal(tf_write(&t, req, sizeof req - 1), 0);
    assert_true(tf_read_response(&t, buf, sizeof buf) > 0);
    tf_close(&t);
    assert_memory_equal(buf, "HTTP/1.1 200 OK\r\n", 17);
    assert_non_null(strstr(buf, "\r\n\r\nGET|/info/a/b||11|2|a|b|"));
  }
}

#define BOTH(t)                                                   \
  {#t " (h2c)", t, h2fx_setup_h2c, h2fx_teardown, NULL},          \
  {                                                               \
    #t " (tls)", t, h2fx_setup_tls, h2fx_teardown, NULL           \
  }

int main(void) {
  const struct CMUnitTest tests[] = {
      BOTH(test_methods),          BOTH(test_bodies),
      BOTH(test_answers),          BOTH(test_params),
      BOTH(test_middleware),       BOTH(test_fields),
      BOTH(test_authority_hosts),  BOTH(test_large_slow_window),
      BOTH(test_streamed_response), BOTH(test_streamed_backpressure),
      BOTH(test_file),
      BOTH(test_concurrent_streams), BOTH(test_access_log),
      BOTH(test_goaway_drain),     BOTH(test_goaway_stop),
      BOTH(test_http11_beside),
  };
  return cmocka_run_group_tests_name("h2", tests, NULL, NULL);
}
