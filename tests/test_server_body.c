/* SPDX-License-Identifier: MIT */
/*
 * Request message bodies (RFC 9112 §6): Content-Length and chunked,
 * buffered or streamed to a body callback, in pieces; Expect: 100-continue
 * (RFC 9110 §10.1.1) with 100 first or the final status without reading the
 * body; route and server body limits, with 413 sent while the client is
 * still uploading.  Responses are in test_server_response.c.
 *
 * ctest-labels: tsan
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* ---- handlers ----------------------------------------------------------- */

/* What handlers record for the test thread to check. */
static struct {
  ev_t ev;
  int rc[2];
  int in_read_body; /* set while inside hr_request_read_body */
  int cb_inside_call;
  size_t pieces;
  int body_error;
  int reply_rc;
} rec;

static void rec_reset(void) {
  memset(&rec, 0, sizeof rec);
  ev_init(&rec.ev);
}

/* Streaming body: collect the pieces, answer with the body on status 1. */
typedef struct sbody_s {
  hr_response_t *res;
  char *buf;
  size_t len;
} sbody_t;

static void on_body(hr_request_t *req, hr_span_t chunk, int status,
                    void *udata) {
  sbody_t *sb = udata;
  (void)req;
  if (rec.in_read_body) rec.cb_inside_call = 1;
  if (status == 0) {
    char *nb = realloc(sb->buf, sb->len + chunk.len + 1);
    memcpy(nb + sb->len, chunk.ptr, chunk.len);
    sb->buf = nb;
    sb->len += chunk.len;
    rec.pieces++;
    return;
  }
  if (status == 1) {
    rec.reply_rc = hr_response_send(sb->res, 200, sb->buf, sb->len);
  } else {
    rec.body_error = status;
    rec.reply_rc = hr_response_send(sb->res, 500, "x", 1);
  }
  free(sb->buf);
  free(sb);
  ev_signal(&rec.ev);
}

static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  sbody_t *sb = calloc(1, sizeof *sb);
  (void)udata;
  ta_count();
  sb->res = res;
  rec.in_read_body = 1;
  rec.rc[0] = hr_request_read_body(req, on_body, sb);
  rec.rc[1] = hr_request_read_body(req, on_body, sb); /* twice: HR_ESTATE */
  rec.in_read_body = 0;
}

/* Streaming route whose handler ignores the body. */
static void h_stream_ignore(hr_request_t *req, hr_response_t *res, void *u) {
  (void)req;
  (void)u;
  ta_count();
  hr_response_send(res, 200, "ignored", 7);
}

/* Streaming route whose handler decides later (from another thread, through
 * hr_response_post) whether it wants the body. */
static struct {
  hr_request_t *req;
  hr_response_t *res;
  ev_t held;
} later;

static void h_stream_later(hr_request_t *req, hr_response_t *res, void *u) {
  (void)u;
  ta_count();
  later.req = req;
  later.res = res;
  ev_signal(&later.held);
}

static void read_later(hr_response_t *res, void *udata) {
  sbody_t *sb = calloc(1, sizeof *sb);
  (void)udata;
  sb->res = res;
  rec.rc[0] = hr_request_read_body(later.req, on_body, sb);
}

/* ---- routes ------------------------------------------------------------- */

static fx_t *start(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  rec_reset();
  fx_route(fx, "POST", "/echo", ta_echo, NULL);
  fx_route(fx, "GET", "/", ta_text, "root");
  hr_route_options_init(&o);
  o.max_body_bytes = 10;
  fx_route_opts(fx, "POST", "/small", ta_echo, NULL, &o);
  hr_route_options_init(&o);
  o.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/stream", h_stream, NULL, &o);
  fx_route_opts(fx, "POST", "/stream-ignore", h_stream_ignore, NULL, &o);
  fx_route_opts(fx, "POST", "/stream-later", h_stream_later, NULL, &o);
  o.max_body_bytes = 10;
  fx_route_opts(fx, "POST", "/stream-small", h_stream, NULL, &o);
  fx_start(fx, 1);
  return fx;
}

#define POST_HDR(path) "POST " path " HTTP/1.1\r\nHost: a\r\n"

/* ---- request bodies ----------------------------------------------------- */

static void test_request_bodies(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Content-Length: 5\r\n\r\nhello"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Content-Length: 0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "", NULL);
  /* chunked, with an extension, upper-case hex and a trailer field */
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Transfer-Encoding: chunked\r\n\r\n"
                                  "5;ext=1\r\nhello\r\nA\r\n world!!!!\r\n"
                                  "0\r\nX-Trailer: t\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "hello world!!!!", NULL);
  /* empty list elements around the coding are no coding (RFC 9110 §5.6.1) */
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Transfer-Encoding: , chunked\r\n\r\n"
                                  "3\r\nabc\r\n0\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", NULL);
  /* a body that arrives in pieces */
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Content-Length: 11\r\n\r\nhel"), 0);
  sleep_ms(20);
  assert_int_equal(rc_send_str(c, "lo wor"), 0);
  sleep_ms(20);
  assert_int_equal(rc_send_str(c, "ld"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello world", NULL);
  /* exactly at the route limit */
  assert_int_equal(rc_send_str(c, POST_HDR("/small") "Content-Length: 10\r\n\r\n0123456789"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "0123456789", NULL);
  assert_int_equal(ta_calls(), 6);
}

static void test_body_over_route_limit(void **state) {
  static const char *const reqs[] = {
      POST_HDR("/small") "Content-Length: 11\r\n\r\n01234567890",
      POST_HDR("/small") "Transfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n"
                         "5\r\n67890\r\n0\r\n\r\n",
      /* chunked, so the limit is only found while the body streams */
      POST_HDR("/stream-small") "Transfer-Encoding: chunked\r\n\r\n"
                                "6\r\n012345\r\n5\r\n67890\r\n0\r\n\r\n",
  };
  fx_t *fx = start(state);
  size_t i;
  for (i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    assert_int_equal(rc_send_str(c, reqs[i]), 0);
    expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, &r);
    expect_field(&r, "Connection", "close", 1);
    rc_response_free(&r);
    expect_closed(c);
  }
  /* the buffered route's handler never ran; the streaming one did (it runs
   * at the header section) and heard HR_ETOOLARGE */
  assert_int_equal(ta_calls(), 1);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.body_error, HR_ETOOLARGE);
}

/* The server limit applies to routes without their own. */
static void test_body_over_server_limit(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx->opts.max_body_bytes = 100;
  fx_route(fx, "POST", "/echo", ta_echo, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  {
    char req[512], body[101];
    memset(body, 'b', 100);
    body[100] = '\0';
    snprintf(req, sizeof req, POST_HDR("/echo") "Content-Length: 100\r\n\r\n%s", body);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_response(c, "HTTP/1.1 200 OK", body, NULL);
  }
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Content-Length: 101\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, NULL);
  expect_closed(c);
  assert_int_equal(ta_calls(), 1);
}

/* 413 arrives while the client is still uploading a large body: the client
 * sends 16 KiB pieces and stops as soon as the response is readable. */
static void test_413_while_uploading(void **state) {
  static const char *const heads[] = {
      POST_HDR("/echo") "Content-Length: 8388608\r\n\r\n",
      POST_HDR("/echo") "Transfer-Encoding: chunked\r\n\r\n",
  };
  fx_t *fx = *state;
  size_t k;
  fx->opts.max_body_bytes = 65536;
  fx_route(fx, "POST", "/echo", ta_echo, NULL);
  fx_start(fx, 1);
  for (k = 0; k < 2; k++) {
    rc_t *c = fx_connect(fx);
    char piece[16384 + 32];
    size_t sent = 0, plen;
    rc_response_t r;
    memset(piece, 'u', sizeof piece);
    if (k == 1) {
      memcpy(piece, "4000\r\n", 6); /* one 16 KiB chunk */
      memcpy(piece + 6 + 16384, "\r\n", 2);
      plen = 6 + 16384 + 2;
    } else {
      plen = 16384;
    }
    assert_int_equal(rc_send_str(c, heads[k]), 0);
    while (sent < 8388608 && rc_readable(c, 0) == 0) {
      if (rc_send(c, piece, plen) != 0) break;
      sent += 16384;
    }
    assert_true(sent < 8388608);
    expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, &r);
    rc_response_free(&r);
    assert_true(rc_drain_until_closed(c, NULL) == 1);
  }
  assert_int_equal(ta_calls(), 0);
}

static void test_expect_100_continue(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  /* buffered route: 100 first, then the body is read */
  assert_int_equal(rc_send_str(c, POST_HDR("/echo") "Content-Length: 5\r\n"
                                  "Expect: 100-continue\r\n\r\n"),
                   0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.raw_len, strlen("HTTP/1.1 100 Continue\r\n\r\n"));
  assert_memory_equal(r.raw, "HTTP/1.1 100 Continue\r\n\r\n", r.raw_len);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "hello"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  /* streaming route */
  assert_int_equal(rc_send_str(c, POST_HDR("/stream") "Content-Length: 3\r\n"
                                  "Expect: 100-continue\r\n\r\n"),
                   0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_memory_equal(r.raw, "HTTP/1.1 100 Continue\r\n\r\n", r.raw_len);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "abc"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", NULL);
  /* no body at all: no 100 needed, answered directly */
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n"
                                  "Expect: 100-continue\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  assert_int_equal(ta_calls(), 3);
}

/* The client holds its body back until 100 Continue, which waits for the
 * handler to ask for the body: however long the handler takes, that is
 * not a stalled body (no 408). */
static void test_expect_waits_for_the_handler(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  ev_init(&later.held);
  fx->opts.body_timeout_ms = 150;
  fx = start(state);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, POST_HDR("/stream-later") "Content-Length: 5\r\n"
                                  "Expect: 100-continue\r\n\r\n"),
                   0);
  assert_true(ev_wait(&later.held, 1, RC_TIMEOUT_MS));
  /* Four body timeouts pass with nothing on the wire. */
  assert_int_equal(rc_readable(c, 600), 0);
  assert_int_equal(hr_response_post(later.res, read_later, NULL), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_memory_equal(r.raw, "HTTP/1.1 100 Continue\r\n\r\n", r.raw_len);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "hello"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  assert_int_equal(rec.rc[0], 0);
  ev_destroy(&later.held);
}

/* The final status instead of 100, without reading the body, then close. */
static void test_expect_final_status(void **state) {
  static const struct {
    const char *req;
    const char *status;
  } t[] = {
      {POST_HDR("/small") "Content-Length: 100\r\nExpect: 100-continue\r\n\r\n",
       "HTTP/1.1 413 Content Too Large"},
      {POST_HDR("/nope") "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n",
       "HTTP/1.1 404 Not Found"},
  };
  fx_t *fx = start(state);
  size_t i;
  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    assert_int_equal(rc_send_str(c, t[i].req), 0);
    expect_response(c, t[i].status, NULL, &r);
    rc_response_free(&r);
    expect_closed(c);
  }
  assert_int_equal(ta_calls(), 0);
}

static void test_streamed_request_body(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, POST_HDR("/stream") "Content-Length: 12\r\n\r\nfirst-"), 0);
  sleep_ms(20); /* a slow client: the rest comes later */
  assert_int_equal(rc_send_str(c, "second"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "first-second", NULL);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], HR_ESTATE);
  assert_int_equal(rec.cb_inside_call, 0);
  assert_true(rec.pieces >= 1);
  assert_int_equal(rec.reply_rc, 0);
  /* chunked, and pipelined behind a streaming request whose handler
   * ignores the body */
  assert_int_equal(
      rc_send_str(c, POST_HDR("/stream") "Transfer-Encoding: chunked\r\n\r\n"
                                         "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
                     POST_HDR("/stream-ignore") "Content-Length: 5\r\n\r\nhello"
                     "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
      0);
  expect_response(c, "HTTP/1.1 200 OK", "abcdefg", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "ignored", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  /* streaming route with no body: callback gets the end at once */
  assert_int_equal(rc_send_str(c, POST_HDR("/stream") "Content-Length: 0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "", NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_request_bodies),
      T(test_body_over_route_limit),
      T(test_body_over_server_limit),
      T(test_413_while_uploading),
      T(test_expect_100_continue),
      T(test_expect_waits_for_the_handler),
      T(test_expect_final_status),
      T(test_streamed_request_body),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
