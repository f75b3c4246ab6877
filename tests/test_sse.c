/* SPDX-License-Identifier: MIT */
/*
 * Server-sent events (hroute/sse.h) over a real connection: the head
 * (text/event-stream, no-cache, X-Accel-Buffering), the exact bytes of
 * each framing (event, id, an id reset, data split at LF, CR LF and CR,
 * empty data, a comment, retry), an event bigger than the stack buffer,
 * Last-Event-ID read back, the arguments refused, the stream's end; a
 * client that reads nothing while the handler sends until HR_EAGAIN, then
 * reads: the drain callback resumes the stream and every event arrives
 * once, in order; a client that leaves: the close callback runs, sends
 * answer HR_ECLOSED, and hr_sse_end frees the stream (ASan: no leak).
 *
 * ctest-protocols: h1 h2
 * ctest-labels: tsan
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static struct {
  int bad_event, bad_id, bad_data, bad_comment, null_stream;
  char last_id[64];
  _Atomic int closed, close_send_rc, end_rc, eagain, sent, drains;
} g;

static void reset(void) { memset(&g, 0, sizeof g); }

/* ---- a stream sent whole ------------------------------------------------- */

static void h_framing(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_sse_options_t o;
  hr_sse_t *s, *again;
  hr_span_t last;
  char big[2000];
  (void)udata;
  hr_sse_options_init(&o);
  o.retry_ms = 2500;
  o.heartbeat_ms = 0;
  hr_response_add_field(res, HR_SPAN_LIT("X-Before"), HR_SPAN_LIT("1"));
  assert_int_equal(hr_sse_start(req, res, &o, &s), 0);
  assert_int_equal(hr_sse_start(req, res, &o, &again), HR_ESTATE); /* started already */
  assert_null(again);
  if (hr_sse_last_event_id(req, &last) == 0)
    snprintf(g.last_id, sizeof g.last_id, "%.*s", (int)last.len, last.ptr);
  g.bad_event = hr_sse_send(s, "a\nb", NULL, "x", 1);
  g.bad_id = hr_sse_send(s, NULL, "1\r", "x", 1);
  g.bad_data = hr_sse_send(s, NULL, NULL, NULL, 3);
  g.bad_comment = hr_sse_comment(s, "no\nline");
  g.null_stream = hr_sse_send(NULL, NULL, NULL, "x", 1);
  assert_int_equal(hr_sse_send(s, "tick", "1", "a", 1), 0);
  assert_int_equal(hr_sse_send(s, NULL, NULL, "l1\nl2\r\nl3\rl4", 12), 0);
  assert_int_equal(hr_sse_send(s, NULL, "", "x", 1), 0);
  assert_int_equal(hr_sse_send(s, NULL, NULL, NULL, 0), 0);
  assert_int_equal(hr_sse_send(s, NULL, NULL, "end\n", 4), 0);
  assert_int_equal(hr_sse_comment(s, "hi"), 0);
  assert_int_equal(hr_sse_comment(s, NULL), 0);
  assert_int_equal(hr_sse_retry(s, 7), 0);
  memset(big, 'z', sizeof big);
  assert_int_equal(hr_sse_send(s, "big", NULL, big, sizeof big), 0);
  assert_ptr_equal(hr_sse_response(s), res);
  assert_int_equal(hr_sse_end(s), 0);
}

static void test_framing(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  char want[4096];
  size_t n;
  reset();
  fx_route(fx, "GET", "/events", h_framing, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /events HTTP/1.1\r\nHost: a\r\nLast-Event-ID: 41\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.status, 200);
  expect_field(&r, "Content-Type", "text/event-stream", 0);
  expect_field(&r, "Cache-Control", "no-cache", 0);
  expect_field(&r, "X-Accel-Buffering", "no", 0);
  expect_field(&r, "X-Before", "1", 0);
  n = (size_t)snprintf(want, sizeof want,
                       "retry: 2500\n\n"
                       "event: tick\nid: 1\ndata: a\n\n"
                       "data: l1\ndata: l2\ndata: l3\ndata: l4\n\n"
                       "id: \ndata: x\n\n"
                       "data: \n\n"
                       "data: end\ndata: \n\n"
                       ": hi\n\n"
                       ":\n\n"
                       "retry: 7\n\n"
                       "event: big\ndata: ");
  memset(want + n, 'z', 2000);
  n += 2000;
  memcpy(want + n, "\n\n", 2);
  n += 2;
  assert_int_equal(r.body_len, n);
  assert_memory_equal(r.body, want, n);
  rc_response_free(&r);
  assert_string_equal(g.last_id, "41");
  assert_int_equal(g.bad_event, HR_EINVAL);
  assert_int_equal(g.bad_id, HR_EINVAL);
  assert_int_equal(g.bad_data, HR_EINVAL);
  assert_int_equal(g.bad_comment, HR_EINVAL);
  assert_int_equal(g.null_stream, HR_EINVAL);
  fx_drop(fx, c);
}

/* ---- backpressure ---------------------------------------------------------- */

#define PAYLOAD 200
#define TOTAL 3000 /* 3000 events of ~220 bytes: far over the mark and the socket buffers */

static void send_more(hr_sse_t *s) {
  char data[PAYLOAD], id[16];
  int rc;
  memset(data, 'q', sizeof data);
  while (atomic_load(&g.sent) < TOTAL) {
    snprintf(id, sizeof id, "%d", atomic_load(&g.sent));
    rc = hr_sse_send(s, NULL, id, data, sizeof data);
    if (rc == HR_EAGAIN) {
      atomic_fetch_add(&g.eagain, 1);
      return; /* the drain callback goes on */
    }
    assert_int_equal(rc, 0);
    atomic_fetch_add(&g.sent, 1);
  }
  atomic_store(&g.end_rc, hr_sse_end(s));
}

static void on_drain(hr_sse_t *s, int status, void *udata) {
  (void)udata;
  atomic_fetch_add(&g.drains, 1);
  if (status != 0) {
    hr_sse_end(s);
    return;
  }
  send_more(s);
}

static void h_flood(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_sse_options_t o;
  hr_sse_t *s;
  (void)udata;
  hr_sse_options_init(&o);
  assert_int_equal(hr_sse_start(req, res, &o, &s), 0);
  assert_int_equal(hr_sse_on_drain(s, on_drain), 0);
  send_more(s);
}

static void test_backpressure(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  size_t i, at;
  char want[32];
  reset();
  fx->opts.write_high_water_bytes = 16 * 1024;
  fx_route(fx, "GET", "/flood", h_flood, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /flood HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  /* The response is read whole: while the client is not reading, the
   * handler meets HR_EAGAIN; each drain goes on. */
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_true(atomic_load(&g.eagain) >= 1);
  assert_int_equal(atomic_load(&g.drains), atomic_load(&g.eagain));
  assert_int_equal(atomic_load(&g.sent), TOTAL);
  assert_int_equal(atomic_load(&g.end_rc), 0);
  /* Every event once, in order, after the first comment. */
  assert_memory_equal(r.body, ":\n\n", 3);
  at = 3;
  for (i = 0; i < TOTAL; i++) {
    int n = snprintf(want, sizeof want, "id: %zu\ndata: ", i);
    assert_true(at + (size_t)n + PAYLOAD + 2 <= r.body_len);
    assert_memory_equal(r.body + at, want, (size_t)n);
    at += (size_t)n + PAYLOAD;
    assert_memory_equal(r.body + at, "\n\n", 2);
    at += 2;
  }
  assert_int_equal(at, r.body_len);
  rc_response_free(&r);
  fx_drop(fx, c);
}

/* ---- the client leaves ---------------------------------------------------- */

static hr_sse_t *held;

static void on_close(hr_sse_t *s, void *udata) {
  (void)udata;
  atomic_store(&g.close_send_rc, hr_sse_send(s, NULL, NULL, "late", 4));
  atomic_store(&g.end_rc, hr_sse_end(s));
  held = NULL;
  atomic_store(&g.closed, 1);
}

static void h_hold(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_sse_options_t o;
  (void)udata;
  hr_sse_options_init(&o);
  o.on_close = on_close;
  o.heartbeat_ms = 5; /* runs while the client is there; closed with the stream */
  assert_int_equal(hr_sse_start(req, res, &o, &held), 0);
  assert_int_equal(hr_sse_send(held, "hello", NULL, "x", 1), 0);
}

static void test_client_leaves(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  reset();
  fx_route(fx, "GET", "/hold", h_hold, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_readable(c, 5000), 1);
  fx_drop(fx, c); /* gone: the server sees the connection end */
  assert_true(fx_flag_set(&g.closed));
  assert_int_equal(atomic_load(&g.close_send_rc), HR_ECLOSED);
  assert_int_equal(atomic_load(&g.end_rc), HR_ECLOSED);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_framing),
      T(test_backpressure),
      T(test_client_leaves),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
