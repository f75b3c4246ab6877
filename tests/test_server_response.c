/* SPDX-License-Identifier: MIT */
/*
 * Responses: fixed-length and chunked streaming (RFC 9112 §6.1, §7.1),
 * close-delimited for HTTP/1.0, short and over-long bodies, HEAD, 204 and
 * 304 without a body (RFC 9110 §9.3.2, §15), response fields, borrowed
 * bodies, single writes far above the high-water mark, and a slow reader of
 * an 8 MiB chunked response written through the drain callback, with the
 * server's memory bounded while it waits.
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
  int rc[8];
  int released;
  const void *released_ptr;
} rec;

static void rec_reset(void) {
  memset(&rec, 0, sizeof rec);
  ev_init(&rec.ev);
}

static void h_fixed(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_start(res, 200, 10);
  rec.rc[1] = hr_response_add_field(res, HR_SPAN_LIT("X-Late"), HR_SPAN_LIT("1"));
  rec.rc[2] = hr_response_write(res, "0123", 4);
  rec.rc[3] = hr_response_write(res, "456789", 6);
  rec.rc[4] = hr_response_end(res);
  ev_signal(&rec.ev);
}

static void h_chunked(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_start(res, 200, HR_LENGTH_UNKNOWN);
  rec.rc[1] = hr_response_write(res, "abc", 3);
  rec.rc[2] = hr_response_write(res, "", 0); /* must not end the body */
  rec.rc[3] = hr_response_write(res, "defgh", 5);
  rec.rc[4] = hr_response_end(res);
  ev_signal(&rec.ev);
}

static void h_short(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_start(res, 200, 10);
  rec.rc[1] = hr_response_write(res, "0123", 4);
  rec.rc[2] = hr_response_end(res);
  ev_signal(&rec.ev);
}

static void h_over(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_start(res, 200, 3);
  rec.rc[1] = hr_response_write(res, "abcde", 5);
  rec.rc[2] = hr_response_write(res, "abc", 3);
  rec.rc[3] = hr_response_end(res);
  ev_signal(&rec.ev);
}

static void h_status(hr_request_t *req, hr_response_t *res, void *udata) {
  int code = (int)(intptr_t)udata;
  (void)req;
  ta_count();
  rec.rc[0] = hr_response_send(res, code, "x", 1); /* HR_EINVAL */
  rec.rc[1] = hr_response_send(res, code, NULL, 0);
  ev_signal(&rec.ev);
}

static void h_fields(hr_request_t *req, hr_response_t *res, void *udata) {
  static const char *const reserved[] = {"Content-Length", "content-length",
                                         "Date", "Transfer-Encoding",
                                         "Connection"};
  size_t i;
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_add_field(res, HR_SPAN_LIT("X-A"), HR_SPAN_LIT("1"));
  rec.rc[1] = hr_response_add_field(res, HR_SPAN_LIT("X-A"), HR_SPAN_LIT("2"));
  rec.rc[2] = hr_response_add_field(res, HR_SPAN_LIT("Bad Name"), HR_SPAN_LIT("v"));
  rec.rc[3] = hr_response_add_field(res, HR_SPAN_LIT("X-B"), HR_SPAN_LIT("a\r\nX-Evil: 1"));
  rec.rc[4] = hr_response_add_field(res, HR_SPAN_LIT("X-B"), (hr_span_t){"a\0b", 3});
  rec.rc[5] = 0;
  for (i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (hr_response_add_field(res, hr_span_cstr(reserved[i]),
                              HR_SPAN_LIT("1")) != HR_EINVAL)
      rec.rc[5] = -1;
  rec.rc[6] = hr_response_send(res, 201, "made", 4);
  ev_signal(&rec.ev);
}

static const char borrowed_body[] = "borrowed bytes";

static void on_release(hr_response_t *res, const void *body, void *udata) {
  (void)res;
  (void)udata;
  rec.released++;
  rec.released_ptr = body;
  ev_signal(&rec.ev);
}

static void h_borrowed(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_send_borrowed(res, 200, borrowed_body,
                                        sizeof borrowed_body - 1, on_release,
                                        NULL);
  rec.rc[1] = rec.released; /* never inside the call */
}

#define HUGE_LEN (1u << 20)
static char huge_body[HUGE_LEN];

/* One write far above the high-water mark into an empty queue. */
static void h_huge_write(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  rec.rc[0] = hr_response_start(res, 200, HUGE_LEN);
  rec.rc[1] = hr_response_write(res, huge_body, HUGE_LEN);
  rec.rc[2] = hr_response_end(res);
  ev_signal(&rec.ev);
}

static void h_huge_send(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  hr_response_send(res, 200, huge_body, 300000);
}


/* ---- routes ------------------------------------------------------------- */

static fx_t *start(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  hr_field_t ct[] = {{HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain")}};
  rec_reset();
  fx_route(fx, "GET", "/", ta_text, "root");
  hr_route_options_init(&o);
  o.fields = ct;
  o.nfields = 1;
  fx_route_opts(fx, "GET", "/fixed", h_fixed, NULL, &o);
  fx_route(fx, "GET", "/chunked", h_chunked, NULL);
  fx_route(fx, "GET", "/short", h_short, NULL);
  fx_route(fx, "GET", "/over", h_over, NULL);
  fx_route(fx, "GET", "/204", h_status, (void *)(intptr_t)204);
  fx_route(fx, "GET", "/304", h_status, (void *)(intptr_t)304);
  fx_route(fx, "GET", "/fields", h_fields, NULL);
  fx_route(fx, "GET", "/borrowed", h_borrowed, NULL);
  fx_route(fx, "GET", "/huge-write", h_huge_write, NULL);
  fx_route(fx, "GET", "/huge-send", h_huge_send, NULL);
  fx_start(fx, 1);
  return fx;
}

/* ---- responses ---------------------------------------------------------- */

static void test_fixed_and_chunked_responses(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, "GET /fixed HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "0123456789", &r);
  expect_field(&r, "Content-Length", "10", 0);
  expect_field(&r, "Content-Type", "text/plain", 0);
  expect_no_field(&r, "Transfer-Encoding");
  expect_no_field(&r, "X-Late");
  expect_date(&r);
  rc_response_free(&r);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], HR_ESTATE);
  assert_int_equal(rec.rc[2], 0);
  assert_int_equal(rec.rc[3], 0);
  assert_int_equal(rec.rc[4], 0);

  assert_int_equal(rc_send_str(c, "GET /chunked HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abcdefgh", &r);
  assert_true(r.chunked);
  expect_field(&r, "Transfer-Encoding", "chunked", 0);
  expect_no_field(&r, "Content-Length");
  assert_true(r.raw_len > 5);
  assert_memory_equal(r.raw + r.raw_len - 5, "0\r\n\r\n", 5);
  rc_response_free(&r);
  assert_true(ev_wait(&rec.ev, 2, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], 0);
  assert_true(rec.rc[2] == 0 || rec.rc[2] == HR_EINVAL);
  assert_int_equal(rec.rc[3], 0);
  assert_int_equal(rec.rc[4], 0);

  /* HTTP/1.0 cannot take chunked: the body is delimited by closing */
  assert_int_equal(rc_send_str(c, "GET /chunked HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abcdefgh", &r);
  assert_true(r.until_close);
  expect_no_field(&r, "Transfer-Encoding");
  rc_response_free(&r);
}

static void test_bad_streaming_lengths(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  /* fewer bytes than declared: cannot be framed, the connection closes */
  assert_int_equal(rc_send_str(c, "GET /short HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  {
    int rc = rc_read_response(c, &r, 0);
    assert_true(rc == RC_TRUNC || rc_closed_without_response(c, rc));
  }
  rc_response_free(&r);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], 0);
  assert_int_equal(rec.rc[2], HR_EINVAL);
  /* writing past the declared length is refused, the rest is fine */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /over HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", NULL);
  assert_true(ev_wait(&rec.ev, 2, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[1], HR_EINVAL);
  assert_int_equal(rec.rc[2], 0);
  assert_int_equal(rec.rc[3], 0);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
}

/* HEAD, 204 and 304 carry no body: a response pipelined behind each parses
 * right after its header section. */
static void test_bodiless_responses(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, "HEAD /fixed HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "HEAD /chunked HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /204 HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /304 HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  expect_field(&r, "Content-Length", "10", 0);
  rc_response_free(&r);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  expect_no_field(&r, "Content-Length");
  rc_response_free(&r);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  expect_field(&r, "Content-Length", "4", 0);
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 204 No Content", "", &r);
  expect_no_field(&r, "Content-Length");
  expect_no_field(&r, "Transfer-Encoding");
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 304 Not Modified", "", &r);
  expect_no_field(&r, "Transfer-Encoding");
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  assert_true(ev_wait(&rec.ev, 4, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], HR_EINVAL); /* 304 with a body */
  assert_int_equal(rec.rc[1], 0);
}

static void test_response_fields(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, "GET /fields HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 201 Created", "made", &r);
  assert_int_equal(rc_header_count(&r, "X-A"), 2);
  {
    size_t i, seen = 0;
    for (i = 0; i < r.nheaders; i++)
      if (strcmp(r.headers[i].name, "X-A") == 0)
        assert_string_equal(r.headers[i].value, seen++ == 0 ? "1" : "2");
  }
  expect_no_field(&r, "X-B");
  expect_no_field(&r, "X-Evil");
  expect_field(&r, "Content-Length", "4", 0);
  rc_response_free(&r);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], 0);
  assert_int_equal(rec.rc[2], HR_EINVAL);
  assert_int_equal(rec.rc[3], HR_EINVAL);
  assert_int_equal(rec.rc[4], HR_EINVAL);
  assert_int_equal(rec.rc[5], 0);
  assert_int_equal(rec.rc[6], 0);
}

static void test_borrowed_body(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /borrowed HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", borrowed_body, NULL);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], 0);
  assert_int_equal(rec.released, 1);
  assert_ptr_equal(rec.released_ptr, borrowed_body);
}

/* A write into an empty queue is accepted whatever its size; responses
 * larger than the high-water mark keep pipelined answers in order. */
static void test_large_writes(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  size_t i;
  for (i = 0; i < HUGE_LEN; i++) huge_body[i] = (char)('A' + (i * 7) % 26);
  assert_int_equal(rc_send_str(c, "GET /huge-write HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.body_len, HUGE_LEN);
  assert_memory_equal(r.body, huge_body, HUGE_LEN);
  rc_response_free(&r);
  assert_true(ev_wait(&rec.ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(rec.rc[0], 0);
  assert_int_equal(rec.rc[1], 0);
  assert_int_equal(rec.rc[2], 0);
  assert_int_equal(rc_send_str(c, "GET /huge-send HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /huge-send HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  for (i = 0; i < 2; i++) {
    expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
    assert_int_equal(r.body_len, 300000);
    assert_memory_equal(r.body, huge_body, 300000);
    rc_response_free(&r);
    expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  }
}

/* ---- slow reader -------------------------------------------------------- */

#define BIG_TOTAL (8u << 20)
#define BIG_PIECE 7000u /* not a divisor of anything, so pieces straddle */
#define HIGH_WATER 65536u

static unsigned char pattern_byte(size_t i) {
  return (unsigned char)((i * 131u) ^ (i >> 13));
}

static struct {
  hr_response_t *res;
  size_t sent;
  int eagain, in_write, drain_inside_write, error, end_rc;
  ev_t done;
} big;

static void big_pump(void) {
  unsigned char piece[BIG_PIECE];
  while (big.sent < BIG_TOTAL) {
    size_t n = BIG_TOTAL - big.sent < BIG_PIECE ? BIG_TOTAL - big.sent : BIG_PIECE;
    size_t i;
    int rc;
    for (i = 0; i < n; i++) piece[i] = pattern_byte(big.sent + i);
    big.in_write = 1;
    rc = hr_response_write(big.res, piece, n);
    big.in_write = 0;
    if (rc == HR_EAGAIN) {
      big.eagain++;
      return; /* the drain callback continues */
    }
    if (rc != 0) {
      big.error = rc;
      big.end_rc = hr_response_end(big.res);
      ev_signal(&big.done);
      return;
    }
    big.sent += n;
  }
  big.end_rc = hr_response_end(big.res);
  ev_signal(&big.done);
}

static void big_drain(hr_response_t *res, int status, void *udata) {
  (void)res;
  (void)udata;
  if (big.in_write) big.drain_inside_write = 1;
  if (status != 0) {
    big.error = status;
    big.end_rc = hr_response_end(big.res);
    ev_signal(&big.done);
    return;
  }
  big_pump();
}

static void h_big(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  big.res = res;
  hr_response_on_drain(res, big_drain, NULL);
  if (hr_response_start(res, 200, HR_LENGTH_UNKNOWN) != 0) {
    big.error = -1;
    ev_signal(&big.done);
    return;
  }
  big_pump();
}

static void test_slow_reader_large_chunked(void **state) {
  fx_t *fx = *state;
  ca_t ca;
  rc_t *c;
  rc_response_t r;
  size_t baseline, peak, i, bad = BIG_TOTAL;
  memset(&big, 0, sizeof big);
  ev_init(&big.done);
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  fx->opts.write_high_water_bytes = HIGH_WATER;
  fx_route(fx, "GET", "/big", h_big, NULL);
  fx_start(fx, 1);
  baseline = ca_bytes(&ca);
  ca_reset_peak(&ca);

  /* A 16 KiB receive buffer keeps the kernel from absorbing the body. */
  c = rc_connect_ex("127.0.0.1", fx->port, 16384);
  assert_non_null(c);
  c->read_chunk = 16384;
  c->read_pause_us = 300; /* ~550 reads: a slow reader, ~0.2 s */
  assert_int_equal(rc_send_str(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_string_equal(r.status_line, "HTTP/1.1 200 OK");
  assert_true(r.chunked);
  assert_int_equal(r.body_len, BIG_TOTAL);
  for (i = 0; i < BIG_TOTAL; i++)
    if ((unsigned char)r.body[i] != pattern_byte(i)) {
      bad = i;
      break;
    }
  rc_response_free(&r);
  if (bad != BIG_TOTAL) fail_msg("body differs at byte %zu", bad);
  assert_true(ev_wait(&big.done, 1, RC_TIMEOUT_MS));
  assert_int_equal(big.error, 0);
  assert_int_equal(big.end_rc, 0);
  assert_int_equal(big.drain_inside_write, 0);
  assert_true(big.eagain > 0); /* the queue did fill: backpressure worked */
  peak = ca_peak(&ca);
  /* Bound: the output queue holds at most HIGH_WATER + one piece (a write
   * is refused once the queue is above the mark) plus chunk framing; the
   * connection adds its state, one read buffer (libuv suggests 64 KiB) and
   * its arena.  4 × HIGH_WATER (256 KiB) covers the queue with room for
   * copies in flight; 128 KiB covers the fixed per-connection part.  An
   * implementation that buffered the response would need 8 MiB. */
  print_message("slow reader: peak %zu bytes above baseline, %d HR_EAGAIN\n",
                peak - baseline, big.eagain);
  if (peak - baseline > 4 * HIGH_WATER + 128 * 1024)
    fail_msg("peak %zu bytes above baseline, bound %u", peak - baseline,
             4 * HIGH_WATER + 128 * 1024);
  rc_close(c);
  fx_stop(fx, 2000);
  assert_int_equal(ca_live(&ca), 0);
  ca_destroy(&ca);
  ev_destroy(&big.done);
}

/* A handler's Content-Type and Set-Cookie against the route's constant
 * Content-Type and X-Const. */
static void h_override(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("content-type"), HR_SPAN_LIT("text/csv"));
  hr_response_add_field(res, HR_SPAN_LIT("Set-Cookie"), HR_SPAN_LIT("a=1"));
  hr_response_add_field(res, HR_SPAN_LIT("Set-Cookie"), HR_SPAN_LIT("b=2"));
  hr_response_send(res, 200, "x,y", 3);
}

/* A handler's field replaces the route's constant field of that name (one
 * line goes out, the handler's); the route's other constant fields stay,
 * and the handler's repeated fields are all sent. */
static void test_handler_field_replaces_constant(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  hr_field_t cf[] = {{HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/json")},
                     {HR_SPAN_LIT("X-Const"), HR_SPAN_LIT("kept")}};
  rc_t *c;
  rc_response_t r;
  hr_route_options_init(&o);
  o.fields = cf;
  o.nfields = 2;
  fx_route_opts(fx, "GET", "/csv", h_override, NULL, &o);
  fx_route_opts(fx, "GET", "/plain", ta_text, "{}", &o);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /csv HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "x,y", &r);
  assert_int_equal(rc_header_count(&r, "Content-Type"), 1);
  expect_field(&r, "Content-Type", "text/csv", 1);
  expect_field(&r, "X-Const", "kept", 0);
  assert_int_equal(rc_header_count(&r, "Set-Cookie"), 2);
  rc_response_free(&r);
  /* Without a handler field of that name, the constant goes out. */
  assert_int_equal(rc_send_str(c, "GET /plain HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "{}", &r);
  assert_int_equal(rc_header_count(&r, "Content-Type"), 1);
  expect_field(&r, "Content-Type", "application/json", 1);
  rc_response_free(&r);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_fixed_and_chunked_responses),
      T(test_bad_streaming_lengths),
      T(test_bodiless_responses),
      T(test_response_fields),
      T(test_handler_field_replaces_constant),
      T(test_borrowed_body),
      T(test_large_writes),
      T(test_slow_reader_large_chunked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
