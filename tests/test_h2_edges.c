/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 edge cases found by an adversarial review, each a deterministic
 * test on h2c (the transport changes nothing here; test_h2 covers TLS):
 * - a streaming route whose handler answers before the request body has
 *   ended still hears once that the body will not complete (the final
 *   body callback), as on HTTP/1.1;
 * - a streamed response without content (HEAD, 204) whose handler ends
 *   it later is not taken for a lost one: no abort callback, and the
 *   completing call answers 0;
 * - a request body that stalls times out on its stream even while the
 *   client keeps the connection busy with PINGs or another stream's bytes;
 * - a stream reset while its handler holds the response elsewhere: the
 *   completion (posted from another thread) answers HR_ECLOSED.
 *
 * ctest-labels: tsan
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h2fx.h"

static unsigned long long clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000u + (unsigned long long)ts.tv_nsec / 1000000u;
}

/* A response parked by a handler, for the test to complete from its own
 * thread (hr_response_post), and what that completion saw. */
static hr_response_t *parked_res;
static atomic_int parked, aborts, later_done, later_write_rc, later_end_rc;

static int is_set(void *arg) { return atomic_load((atomic_int *)arg) != 0; }

/* Submits a POST of `path` whose body the test sends with h2c_send_body. */
static int32_t submit_open_post(h2c_t *c, const char *path) {
  h2c_request_t r;
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = path;
  r.open = 1;
  return h2c_submit(c, &r);
}

/* ---- an early answer ends the body ---------------------------------------- */

static atomic_int early_finals, early_chunks, early_send_rc;

static void early_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  hr_response_t *res = udata;
  (void)req;
  (void)chunk;
  if (status == 0) {
    if (atomic_fetch_add(&early_chunks, 1) == 0)
      atomic_store(&early_send_rc, hr_response_send(res, 200, "early", 5));
    return;
  }
  atomic_fetch_add(&early_finals, 1);
}

static void h_early(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  if (hr_request_read_body(req, early_body, res) != 0) hr_response_send(res, 500, NULL, 0);
}

/* The handler answers at the first piece of the body; the client has not
 * ended it and sends a second piece.  The server ends the stream
 * (RST_STREAM NO_ERROR, RFC 9113 §8.1) and the body callback is never
 * called again (http.h, hr_body_cb): not for the second piece, not with a
 * final status, so a handler may free its state once it answered. */
static void test_early_answer_ends_the_body(void **state) {
  fx_t *fx = *state;
  hr_route_options_t ro;
  h2c_t *c;
  h2_stream_t *st;
  int32_t id;
  atomic_store(&early_finals, 0);
  atomic_store(&early_chunks, 0);
  atomic_store(&early_send_rc, -12345);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/early", h_early, NULL, &ro);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  id = submit_open_post(c, "/early");
  assert_int_equal(h2c_send_body(c, id, "0123456789", 10, 0), 0);
  assert_int_equal(h2c_send_body(c, id, "abcdefghij", 10, 0), 0);
  st = h2c_wait1(c, id);
  assert_non_null(st);
  assert_int_equal(st->status, 200);
  assert_int_equal(st->ended, 1);
  assert_string_equal(st->body, "early");
  assert_int_equal(st->rst_error, NGHTTP2_NO_ERROR);
  assert_int_equal(atomic_load(&early_send_rc), 0);
  /* A request after it is answered: the server has read everything the
   * client sent before, and closed the stream. */
  expect_h2(h2fx_request(c, "GET", "/nowhere"), 404, NULL);
  assert_int_equal(c->session_error, 0);
  assert_int_equal(atomic_load(&early_chunks), 1);
  assert_int_equal(atomic_load(&early_finals), 0);
}

/* ---- a streamed response without content, ended later ------------------- */

static void on_abort(hr_response_t *res, void *udata) {
  (void)res;
  (void)udata;
  atomic_fetch_add(&aborts, 1);
}

/* hr_response_start(status from udata), then the response waits for the
 * test to end it (write_later). */
static void h_start_park(hr_request_t *req, hr_response_t *res, void *udata) {
  int status = (int)(intptr_t)udata;
  (void)req;
  hr_response_on_abort(res, on_abort, NULL);
  if (hr_response_start(res, status, status == 204 ? 0 : HR_LENGTH_UNKNOWN) != 0) {
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  parked_res = res;
  atomic_store(&parked, 1);
}

static void write_later(hr_response_t *res, void *udata) {
  (void)udata;
  atomic_store(&later_write_rc, hr_response_write(res, "abc", 3));
  atomic_store(&later_end_rc, hr_response_end(res));
  atomic_store(&later_done, 1);
}

/* `method` `path` parks its response; the test ends it from its own thread
 * once the handler returned: the client gets `status` and `body`, and the
 * handler's calls answer `write_rc` and 0, without an abort. */
static void check_park_then_end(fx_t *fx, const char *method, const char *path,
                                 int status, const char *body, int write_rc) {
  h2c_t *c;
  h2_stream_t *st;
  int32_t id;
  atomic_store(&parked, 0);
  atomic_store(&aborts, 0);
  atomic_store(&later_done, 0);
  atomic_store(&later_write_rc, -12345);
  atomic_store(&later_end_rc, -12345);
  c = h2fx_connect(fx, NULL);
  id = h2c_get(c, method, path);
  assert_true(id > 0);
  if (!h2c_run(c, is_set, &parked)) fail_msg("%s %s: the handler did not run", method, path);
  assert_int_equal(hr_response_post(parked_res, write_later, NULL), 0);
  st = h2c_wait1(c, id);
  assert_non_null(st);
  if (!h2c_run(c, is_set, &later_done)) fail_msg("%s %s: the post did not run", method, path);
  expect_h2(st, status, body);
  if (atomic_load(&aborts) != 0 || atomic_load(&later_end_rc) != 0)
    fail_msg("%s %s: a complete response was taken for a lost one: %d abort calls, "
             "hr_response_write %d, hr_response_end %d",
             method, path, atomic_load(&aborts), atomic_load(&later_write_rc),
             atomic_load(&later_end_rc));
  assert_int_equal(atomic_load(&later_write_rc), write_rc);
  h2fx_drop(fx, c);
}

static void test_bodiless_stream_ended_later(void **state) {
  fx_t *fx = *state;
  fx_route(fx, "GET,HEAD", "/later", h_start_park, (void *)(intptr_t)200);
  fx_route(fx, "GET", "/none", h_start_park, (void *)(intptr_t)204);
  h2fx_start(fx, 1);
  /* GET: the body goes out when written (the control case) */
  check_park_then_end(fx, "GET", "/later", 200, "abc", 0);
  /* HEAD: the writes are counted, not sent (as on HTTP/1.1) */
  check_park_then_end(fx, "HEAD", "/later", 200, "", 0);
  /* 204: no content; a write is refused as too long (length 0) */
  check_park_then_end(fx, "GET", "/none", 204, "", HR_EINVAL);
}

/* ---- a stalled request body on a busy connection ------------------------ */

typedef struct pinger_s {
  h2c_t *c;
  const h2_stream_t *st;
  unsigned long long start, last, cap;
  int32_t other;    /* a second stream whose body trickles, or 0 */
  unsigned pings;
} pinger_t;

/* Done when the stream closed or the cap passed; meanwhile a PING (and a
 * byte of the other stream's body) every 100 ms. */
static int ping_until_closed(void *arg) {
  pinger_t *p = arg;
  unsigned long long t = clock_ms();
  if (p->st->closed || t - p->start >= p->cap) return 1;
  if (t - p->last >= 100) {
    p->last = t;
    p->pings++;
    nghttp2_submit_ping(p->c->session, NGHTTP2_FLAG_NONE, NULL);
    if (p->other != 0) h2c_send_body(p->c, p->other, "z", 1, 0);
  }
  return 0;
}

static void stalled_body(fx_t *fx, int trickle_other) {
  h2c_t *c;
  h2_stream_t *st;
  pinger_t p;
  int32_t id;
  c = h2fx_connect(fx, NULL);
  id = submit_open_post(c, "/upload");
  assert_int_equal(h2c_send_body(c, id, "0123456789", 10, 0), 0);
  memset(&p, 0, sizeof p);
  if (trickle_other) {
    p.other = submit_open_post(c, "/upload");
    assert_true(p.other > 0);
  }
  assert_int_equal(h2_loop_flush(&c->io), 0);
  st = h2_seen_stream(&c->io.seen, id);
  if (st == NULL) st = h2_seen_stream_make(&c->io.seen, id);
  p.c = c;
  p.st = st;
  p.start = p.last = clock_ms();
  p.cap = 3000; /* ten body timeouts */
  assert_int_equal(h2c_run(c, ping_until_closed, &p), 1);
  if (!st->closed)
    fail_msg("a body stalled for %llu ms (body timeout 300 ms) is still open: the "
             "connection's %u PINGs%s kept it alive",
             clock_ms() - p.start, p.pings, trickle_other ? " and another stream's bytes" : "");
  /* 408, then the rest of the request is not wanted (RST_STREAM NO_ERROR) */
  assert_int_equal(st->status, 408);
  assert_int_equal(st->ended, 1);
  assert_int_equal(st->rst_error, NGHTTP2_NO_ERROR);
  assert_int_equal(c->session_error, 0);
  h2fx_drop(fx, c);
}

static void test_stalled_body_on_busy_connection(void **state) {
  fx_t *fx = *state;
  fx->opts.body_timeout_ms = 300;
  fx_route(fx, "POST", "/upload", ta_echo, NULL);
  h2fx_start(fx, 1);
  stalled_body(fx, 0);
  stalled_body(fx, 1);
}

/* ---- a stream reset under a handler that answers from another thread ---- */

static void h_park_any(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  parked_res = res;
  atomic_store(&parked, 1);
}

static void send_later(hr_response_t *res, void *udata) {
  (void)udata;
  atomic_store(&later_end_rc, hr_response_send(res, 200, "late", 4));
  atomic_store(&later_done, 1);
}

static void test_reset_then_post(void **state) {
  fx_t *fx = *state;
  h2c_t *c;
  int32_t id;
  fx_route(fx, "GET", "/park", h_park_any, NULL);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  atomic_store(&parked, 0);
  atomic_store(&later_done, 0);
  atomic_store(&later_end_rc, -12345);
  id = h2c_get(c, "GET", "/park");
  assert_int_equal(h2c_run(c, is_set, &parked), 1);
  assert_int_equal(nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL),
                   0);
  assert_non_null(h2c_wait1(c, id));
  /* the server has read the reset once it answers a later request */
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  assert_int_equal(hr_response_post(parked_res, send_later, NULL), 0);
  assert_int_equal(h2c_run(c, is_set, &later_done), 1);
  assert_int_equal(atomic_load(&later_end_rc), HR_ECLOSED);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
}

#define H2C(t) {#t, t, h2fx_setup_h2c, h2fx_teardown, NULL}

int main(void) {
  const struct CMUnitTest tests[] = {
      H2C(test_early_answer_ends_the_body),
      H2C(test_bodiless_stream_ended_later),
      H2C(test_stalled_body_on_busy_connection),
      H2C(test_reset_then_post),
  };
  return cmocka_run_group_tests_name("h2_edges", tests, NULL, NULL);
}
