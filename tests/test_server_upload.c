/* SPDX-License-Identifier: MIT */
/*
 * Request bodies a real service receives (HTTP/1.1): backpressure by
 * hr_request_body_pause / _resume, an early answer that ends the body,
 * buffered bodies sized by their declared length, a chunk too large for
 * the limit refused at its size line, and the body's pace (minimum rate,
 * overall deadline).  The HTTP/2 side is test_h2_upload.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/countalloc.h"
#include "support/fixture.h"

/* ---- a streaming handler the test steers ---------------------------------- */

static atomic_size_t got_bytes;     /* body bytes its callback received */
static atomic_int got_pieces, got_finals, got_final_status, paused_flag;
static atomic_int pause_at_first;   /* pause at the first piece */
static atomic_int answer_at_first;  /* answer 200 "early" at the first piece */
static hr_response_t *_Atomic steered; /* its response, for posts */

static void steer_reset(void) {
  atomic_store(&got_bytes, 0);
  atomic_store(&got_pieces, 0);
  atomic_store(&got_finals, 0);
  atomic_store(&got_final_status, 0);
  atomic_store(&paused_flag, 0);
  atomic_store(&pause_at_first, 0);
  atomic_store(&answer_at_first, 0);
  atomic_store(&steered, NULL);
}

static void steer_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  hr_response_t *res = udata;
  char text[32];
  if (status == 0) {
    int first = atomic_fetch_add(&got_pieces, 1) == 0;
    atomic_fetch_add(&got_bytes, chunk.len);
    if (first && atomic_load(&answer_at_first)) {
      assert_int_equal(hr_response_send(res, 200, "early", 5), 0);
      return;
    }
    if (first && atomic_load(&pause_at_first)) {
      assert_int_equal(hr_request_body_pause(req), 0);
      assert_int_equal(hr_request_body_pause(req), 0); /* twice: nothing more */
      atomic_store(&paused_flag, 1);
    }
    return;
  }
  atomic_store(&got_final_status, status);
  atomic_fetch_add(&got_finals, 1);
  if (status == 1) {
    int n = snprintf(text, sizeof text, "%zu", atomic_load(&got_bytes));
    hr_response_send(res, 200, text, (size_t)n);
  }
}

static void h_steer(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  /* Before the body callback is set, pausing is refused. */
  assert_int_equal(hr_request_body_pause(req), HR_ESTATE);
  atomic_store(&steered, res);
  if (hr_request_read_body(req, steer_body, res) != 0) hr_response_send(res, 500, NULL, 0);
}

static void route_steer(fx_t *fx, uint64_t limit) {
  hr_route_options_t ro;
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = limit;
  fx_route_opts(fx, "POST", "/up", h_steer, NULL, &ro);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
}

static void on_post_resume(hr_response_t *res, void *udata) {
  (void)udata;
  assert_int_equal(hr_request_body_resume(hr_response_request(res)), 0);
}

typedef struct sender_s {
  rc_t *c;
  const char *p;
  size_t n;
  int rc;
} sender_t;

static void *send_all(void *arg) {
  sender_t *s = arg;
  s->rc = rc_send(s->c, s->p, s->n);
  return NULL;
}

/* ---- backpressure ----------------------------------------------------------- */

/* The handler pauses at the body's first piece: the server stops reading
 * the connection, so of a 4 MiB body it holds at most the one read buffer
 * it had, while the rest waits in the kernel and the client.  Resumed, the
 * whole body arrives, in order, and the last call follows. */
static void test_pause_holds_one_read_buffer(void **state) {
  fx_t *fx = *state;
  const size_t body = 4u << 20;
  char head[128];
  char *data = malloc(body);
  hr_server_stats_t st;
  size_t at_pause;
  sender_t s;
  pthread_t th;
  rc_t *c;
  steer_reset();
  atomic_store(&pause_at_first, 1);
  memset(data, 'x', body);
  route_steer(fx, 8u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  snprintf(head, sizeof head, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
           body);
  assert_int_equal(rc_send_str(c, head), 0);
  s.c = c, s.p = data, s.n = body, s.rc = -1;
  assert_int_equal(pthread_create(&th, NULL, send_all, &s), 0);
  assert_true(fx_flag_set(&paused_flag));
  at_pause = atomic_load(&got_bytes);
  /* Three more turns of the loop, each polling the socket the client keeps
   * full: a server still reading would take more now. */
  fx_on_loop(atomic_load(&steered), NULL);
  fx_on_loop(atomic_load(&steered), NULL);
  fx_on_loop(atomic_load(&steered), NULL);
  fx_stats(fx, &st);
  assert_int_equal(atomic_load(&got_bytes), at_pause);
  assert_int_equal(atomic_load(&got_pieces), 1);
  assert_int_equal(st.read_buffers_in_use, 1);
  assert_true(st.bytes_received <= strlen(head) + 32768);
  assert_true(st.bytes_received < body / 8);
  fx_on_loop(atomic_load(&steered), on_post_resume);
  pthread_join(th, NULL);
  assert_int_equal(s.rc, 0);
  expect_response(c, "HTTP/1.1 200 OK", "4194304", NULL);
  assert_int_equal(atomic_load(&got_finals), 1);
  assert_int_equal(atomic_load(&got_final_status), 1);
  /* The connection goes on. */
  assert_int_equal(rc_send_str(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  free(data);
}

/* ---- an early answer ends the body ---------------------------------------- */

/* Answered at the first piece with 100 KiB still announced: the body
 * callback hears nothing more (not even a last call), the server reads and
 * drops the rest, and the connection serves the next request. */
static void test_early_answer_discards_a_small_rest(void **state) {
  fx_t *fx = *state;
  const size_t body = 100 * 1024;
  char head[128];
  char *data = malloc(body);
  rc_t *c;
  steer_reset();
  atomic_store(&answer_at_first, 1);
  memset(data, 'y', body);
  route_steer(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  snprintf(head, sizeof head, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
           body);
  assert_int_equal(rc_send_str(c, head), 0);
  assert_int_equal(rc_send(c, data, 1000), 0);
  expect_response(c, "HTTP/1.1 200 OK", "early", NULL);
  assert_int_equal(rc_send(c, data + 1000, body - 1000), 0);
  assert_int_equal(rc_send_str(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "hello", NULL);
  assert_int_equal(atomic_load(&got_pieces), 1);
  assert_int_equal(atomic_load(&got_finals), 0);
  free(data);
}

/* Answered at the first piece with more than 256 KiB still announced: the
 * response, then the connection ends (no body callback after the answer). */
static void test_early_answer_ends_a_large_rest(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  steer_reset();
  atomic_store(&answer_at_first, 1);
  route_steer(fx, 8u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n"
                                  "\r\n0123456789"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "early", NULL);
  expect_closed(c);
  assert_int_equal(atomic_load(&got_pieces), 1);
  assert_int_equal(atomic_load(&got_finals), 0);
}

/* A chunked body answered early: its length is unknown, so the connection
 * ends after the response. */
static void test_early_answer_ends_a_chunked_body(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  steer_reset();
  atomic_store(&answer_at_first, 1);
  route_steer(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                  "\r\na\r\n0123456789\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "early", NULL);
  expect_closed(c);
  assert_int_equal(atomic_load(&got_finals), 0);
}

/* ---- bodies sized by what was declared --------------------------------------- */

static void h_len(hr_request_t *req, hr_response_t *res, void *udata) {
  char text[32];
  int n = snprintf(text, sizeof text, "%zu", hr_request_body(req).len);
  (void)udata;
  hr_response_send(res, 200, text, (size_t)n);
}

/* A buffered body of 200,000 bytes with its Content-Length takes one
 * allocation of its own, made once (nothing is copied as it arrives). */
static void test_declared_body_allocated_once(void **state) {
  fx_t *fx = *state;
  const size_t body = 200000;
  char head[128];
  char *data = malloc(body);
  hr_server_stats_t before, after;
  ca_t ca;
  rc_t *c;
  int i;
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  memset(data, 'z', body);
  fx_route(fx, "POST", "/len", h_len, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  snprintf(head, sizeof head, "POST /len HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
           body);
  for (i = 0; i < 3; i++) { /* warm the pools */
    assert_int_equal(rc_send_str(c, head), 0);
    assert_int_equal(rc_send(c, data, body), 0);
    expect_response(c, "HTTP/1.1 200 OK", "200000", NULL);
  }
  fx_stats(fx, &before);
  assert_int_equal(rc_send_str(c, head), 0);
  assert_int_equal(rc_send(c, data, body), 0);
  expect_response(c, "HTTP/1.1 200 OK", "200000", NULL);
  fx_stats(fx, &after);
  assert_int_equal(after.allocations - before.allocations, 1);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  ca_destroy(&ca);
  free(data);
}

/* A chunk whose size line alone takes the body past its limit is refused
 * at that line: 413 before any of its data was sent. */
static void test_chunk_over_limit_refused_at_its_size(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  steer_reset();
  route_steer(fx, 1000);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                  "\r\n100000\r\n"), 0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, NULL);
  expect_closed(c);
  assert_int_equal(atomic_load(&got_final_status), HR_ETOOLARGE);
}

/* ---- the body's pace ---------------------------------------------------------- */

/* A body that trickles (a byte every 20 ms) is under a pace of 100 KB/s
 * over 200 ms windows: 408 and close, although no gap is long. */
static void test_slow_body_under_the_pace_is_408(void **state) {
  fx_t *fx = *state;
  static const char body[64] = {0};
  rc_t *c;
  steer_reset();
  fx->opts.body_min_rate_bytes = 100000;
  fx->opts.body_rate_window_ms = 200;
  route_steer(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 64\r\n\r\n"),
                   0);
  (void)rc_send_bytewise(c, body, sizeof body, 20000);
  expect_response(c, "HTTP/1.1 408 Request Timeout", NULL, NULL);
  expect_closed(c);
  assert_int_equal(atomic_load(&got_final_status), HR_ECLOSED);
}

/* The same pace, met: a body sent at once passes. */
static void test_fast_body_meets_the_pace(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  steer_reset();
  fx->opts.body_min_rate_bytes = 100000;
  fx->opts.body_rate_window_ms = 200;
  route_steer(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"
                                  "0123456789"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "10", NULL);
}

/* An overall deadline of 300 ms: a body whose pieces come every 50 ms (no
 * gap, no pace set) still ends with 408 once it passed. */
static void test_body_deadline_is_408(void **state) {
  fx_t *fx = *state;
  static const char body[64] = {0};
  rc_t *c;
  steer_reset();
  fx->opts.body_min_rate_bytes = 0;
  fx->opts.body_deadline_ms = 300;
  route_steer(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 64\r\n\r\n"),
                   0);
  (void)rc_send_bytewise(c, body, sizeof body, 50000);
  expect_response(c, "HTTP/1.1 408 Request Timeout", NULL, NULL);
  expect_closed(c);
}

/* While the handler keeps its body paused, no body timeout runs against the
 * client: a pause longer than the gap timeout and the pace's window ends
 * in a complete body. */
static void test_paused_body_has_no_deadline(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  steer_reset();
  atomic_store(&pause_at_first, 1);
  fx->opts.body_timeout_ms = 100;
  fx->opts.body_min_rate_bytes = 100000;
  fx->opts.body_rate_window_ms = 100;
  route_steer(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n"
                                  "0123456789"), 0);
  assert_true(fx_flag_set(&paused_flag));
  usleep(400000); /* four gap timeouts: none may fire while paused */
  fx_on_loop(atomic_load(&steered), on_post_resume);
  assert_int_equal(rc_send_str(c, "abcdefghij"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "20", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pause_holds_one_read_buffer, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_early_answer_discards_a_small_rest, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_early_answer_ends_a_large_rest, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_early_answer_ends_a_chunked_body, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_declared_body_allocated_once, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_chunk_over_limit_refused_at_its_size, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_slow_body_under_the_pace_is_408, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_fast_body_meets_the_pace, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_body_deadline_is_408, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_paused_body_has_no_deadline, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
