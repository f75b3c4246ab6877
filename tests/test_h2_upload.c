/* SPDX-License-Identifier: MIT */
/*
 * Request bodies over HTTP/2 (h2c): a paused body keeps its stream's
 * flow-control window shut while the connection's stays open (RFC 9113
 * §5.2), so the other streams go on; the resume delivers what was held in
 * order; a body under the pace is answered 408 on its stream; and a client
 * that resets its stream in the middle of the body is a client abort
 * (499).  The HTTP/1.1 side is test_server_upload.c and
 * test_server_status.c.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h2fx.h"

static atomic_size_t got_bytes;
static atomic_int got_pieces, got_finals, paused_flag, posts_ran, order_ok;
static hr_response_t *_Atomic steered;

static void body_cb(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  hr_response_t *res = udata;
  char text[32];
  size_t i, at;
  if (status == 0) {
    at = atomic_fetch_add(&got_bytes, chunk.len);
    /* The body is bytes 0, 1, ..., 255, 0, 1, ...: in order or not. */
    for (i = 0; i < chunk.len; i++)
      if ((unsigned char)chunk.ptr[i] != (unsigned char)((at + i) & 0xff)) atomic_store(&order_ok, 0);
    if (atomic_fetch_add(&got_pieces, 1) == 0) {
      assert_int_equal(hr_request_body_pause(req), 0);
      atomic_store(&paused_flag, 1);
    }
    return;
  }
  atomic_fetch_add(&got_finals, 1);
  if (status == 1) {
    int n = snprintf(text, sizeof text, "%zu", atomic_load(&got_bytes));
    hr_response_send(res, 200, text, (size_t)n);
  }
}

static void h_up(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  atomic_store(&steered, res);
  if (hr_request_read_body(req, body_cb, res) != 0) hr_response_send(res, 500, NULL, 0);
}

static void on_post_noop(hr_response_t *res, void *udata) {
  (void)res;
  (void)udata;
  atomic_fetch_add(&posts_ran, 1);
}

static void on_post_resume(hr_response_t *res, void *udata) {
  (void)udata;
  assert_int_equal(hr_request_body_resume(hr_response_request(res)), 0);
  atomic_fetch_add(&posts_ran, 1);
}

static int is_set(void *arg) { return atomic_load((atomic_int *)arg) != 0; }

static int posts_at(void *arg) { return atomic_load(&posts_ran) >= *(int *)arg; }

/* Runs `cb` on the server's loop and runs the client until it ran. */
static void on_loop(h2c_t *c, hr_post_cb cb) {
  int want = atomic_load(&posts_ran) + 1;
  assert_int_equal(hr_response_post(atomic_load(&steered), cb, NULL), 0);
  assert_int_equal(h2c_run(c, posts_at, &want), 1);
}

/* A 256 KiB body whose handler pauses at its first piece: the server holds
 * at most the stream's window (65,535 bytes) and opens it no further, so
 * the client's window for the stream is spent; a second stream is served
 * meanwhile.  Resumed, the rest arrives in order. */
static void test_pause_shuts_the_stream_window(void **state) {
  fx_t *fx = *state;
  const size_t body = 256 * 1024;
  unsigned char *data = malloc(body);
  hr_route_options_t ro;
  h2c_request_t r;
  h2_stream_t *st;
  int32_t id;
  size_t i, at_pause;
  h2c_t *c;
  atomic_store(&got_bytes, 0);
  atomic_store(&got_pieces, 0);
  atomic_store(&got_finals, 0);
  atomic_store(&paused_flag, 0);
  atomic_store(&posts_ran, 0);
  atomic_store(&order_ok, 1);
  for (i = 0; i < body; i++) data[i] = (unsigned char)(i & 0xff);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = 1u << 20;
  fx_route_opts(fx, "POST", "/up", h_up, NULL, &ro);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/up";
  r.open = 1;
  id = h2c_submit(c, &r);
  assert_true(id > 0);
  assert_int_equal(h2c_send_body(c, id, data, body, 1), 0);
  assert_int_equal(h2c_run(c, is_set, &paused_flag), 1);
  at_pause = atomic_load(&got_bytes);
  /* Another stream is answered while the first is paused: the
   * connection's window was not held back with it. */
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  on_loop(c, on_post_noop);
  assert_int_equal(atomic_load(&got_bytes), at_pause);
  assert_int_equal(atomic_load(&got_pieces), 1);
  /* What the client may still send on the stream: nothing. */
  assert_int_equal(nghttp2_session_get_stream_remote_window_size(c->session, id), 0);
  on_loop(c, on_post_resume);
  st = h2c_wait1(c, id);
  assert_non_null(st);
  expect_h2(st, 200, "262144");
  assert_int_equal(atomic_load(&order_ok), 1);
  assert_int_equal(atomic_load(&got_finals), 1);
  free(data);
}

static void h_sink(hr_request_t *req, hr_response_t *res, void *udata);

static void sink_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  (void)req;
  (void)chunk;
  if (status == 1) hr_response_send(udata, 200, "done", 4);
}

static void h_sink(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  if (hr_request_read_body(req, sink_body, res) != 0) hr_response_send(res, 500, NULL, 0);
}

/* Serves `path` (POST, streamed to `h`) beside GET /hello, connects, and
 * opens a POST to `path` with ten bytes of its body sent. */
static int32_t open_post(fx_t *fx, const char *path, hr_handler_cb h, h2c_t **out) {
  hr_route_options_t ro;
  h2c_request_t r;
  int32_t id;
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", path, h, NULL, &ro);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  h2fx_start(fx, 1);
  *out = h2fx_connect(fx, NULL);
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = path;
  r.open = 1;
  id = h2c_submit(*out, &r);
  assert_true(id > 0);
  assert_int_equal(h2c_send_body(*out, id, "0123456789", 10, 0), 0);
  return id;
}

/* A stream whose body stays under the pace (100 KB/s over 200 ms windows:
 * ten bytes and then nothing) is answered 408 on the stream; the
 * connection serves the next request. */
static void test_slow_stream_body_is_408(void **state) {
  fx_t *fx = *state;
  h2_stream_t *st;
  int32_t id;
  h2c_t *c;
  fx->opts.body_min_rate_bytes = 100000;
  fx->opts.body_rate_window_ms = 200;
  id = open_post(fx, "/sink", h_sink, &c);
  st = h2c_wait1(c, id);
  assert_non_null(st);
  assert_int_equal(st->status, 408);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
}

static atomic_int abort_piece, after_calls, after_status;

static void abort_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  (void)req;
  (void)chunk;
  if (status == 0) {
    atomic_store(&abort_piece, 1);
    return;
  }
  /* The client reset the stream: nothing was answered; the completing
   * call returns HR_ECLOSED. */
  if (hr_response_send(udata, 500, NULL, 0) != HR_ECLOSED) atomic_store(&after_status, -1);
}

static void h_abort(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  if (hr_request_read_body(req, abort_body, res) != 0) hr_response_send(res, 500, NULL, 0);
}

static void after_rec(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)udata;
  if (atomic_load(&after_status) != -1) atomic_store(&after_status, status);
  atomic_fetch_add(&after_calls, 1);
}

/* A client that resets its stream (RST_STREAM CANCEL) in the middle of the
 * body: a client abort (issue 24), HR_STATUS_CLIENT_CLOSED to the
 * after-middleware, counted in client_aborts and not in bad_requests;
 * the connection serves the next request. */
static void test_stream_reset_mid_body_is_499(void **state) {
  fx_t *fx = *state;
  hr_server_stats_t s;
  int32_t id;
  h2c_t *c;
  atomic_store(&abort_piece, 0);
  atomic_store(&after_calls, 0);
  atomic_store(&after_status, 0);
  assert_int_equal(hr_router_use(fx->router, NULL, "/up", NULL, after_rec, NULL), 0);
  id = open_post(fx, "/up", h_abort, &c);
  assert_int_equal(h2c_run(c, is_set, &abort_piece), 1);
  assert_int_equal(nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL),
                   0);
  assert_int_equal(h2c_run(c, is_set, &after_calls), 1);
  assert_int_equal(atomic_load(&after_status), HR_STATUS_CLIENT_CLOSED);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  fx_stats(fx, &s);
  assert_int_equal(s.client_aborts, 1);
  assert_int_equal(s.bad_requests, 0);
}

#define H2C(t) {#t, t, h2fx_setup_h2c, h2fx_teardown, NULL}

int main(void) {
  const struct CMUnitTest tests[] = {
      H2C(test_pause_shuts_the_stream_window),
      H2C(test_slow_stream_body_is_408),
      H2C(test_stream_reset_mid_body_is_499),
  };
  return cmocka_run_group_tests_name("h2_upload", tests, NULL, NULL);
}
