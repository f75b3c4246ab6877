/* SPDX-License-Identifier: MIT */
/*
 * Handlers that answer later: from a uv_timer on the loop thread, from
 * another thread through hr_response_post, out of order under pipelining
 * (responses still leave in request order), and after the client went away
 * (abort callback; the completing call returns HR_ECLOSED).
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* ---- timer-based completion --------------------------------------------- */

typedef struct late_s {
  uv_timer_t timer;
  hr_response_t *res;
  char body[64];
  int *rc_out;
  ev_t *ev;
} late_t;

static int late_rc[16];
static ev_t late_ev;

static void late_closed(uv_handle_t *h) { free(h->data); }

static void late_fire(uv_timer_t *t) {
  late_t *l = t->data;
  int rc = hr_response_send(l->res, 200, l->body, strlen(l->body));
  if (l->rc_out) *l->rc_out = rc;
  t->data = l;
  uv_close((uv_handle_t *)t, late_closed);
  ev_signal(&late_ev);
}

/* Answers after `?ms` milliseconds (the query) with body "late <path>". */
static void h_late(hr_request_t *req, hr_response_t *res, void *udata) {
  late_t *l = calloc(1, sizeof *l);
  hr_span_t q = hr_request_query(req), p = hr_request_path(req);
  char num[16] = {0};
  (void)udata;
  ta_count();
  memcpy(num, q.ptr, q.len < 15 ? q.len : 15);
  l->res = res;
  memcpy(l->body, "late ", 5);
  memcpy(l->body + 5, p.ptr, p.len < 50 ? p.len : 50);
  l->rc_out = udata ? (int *)udata : NULL;
  uv_timer_init(hr_request_loop(req), &l->timer);
  l->timer.data = l;
  uv_timer_start(&l->timer, late_fire, (uint64_t)atoi(num), 0);
}

static fx_t *start(void **state) {
  fx_t *fx = *state;
  memset(late_rc, 0, sizeof late_rc);
  ev_init(&late_ev);
  fx_route(fx, "GET", "/late/:n", h_late, NULL);
  fx_route(fx, "GET", "/", ta_text, "now");
  return fx;
}

static void test_timer_completion(void **state) {
  fx_t *fx = start(state);
  rc_t *c[4];
  int i;
  fx_start(fx, 1);
  for (i = 0; i < 4; i++) c[i] = fx_connect(fx);
  /* concurrent connections, each waiting on its own timer */
  assert_int_equal(rc_send_str(c[0], "GET /late/0?40 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_send_str(c[1], "GET /late/1?10 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_send_str(c[2], "GET /late/2?0 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_send_str(c[3], "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c[3], "HTTP/1.1 200 OK", "now", NULL);
  expect_response(c[2], "HTTP/1.1 200 OK", "late /late/2", NULL);
  expect_response(c[1], "HTTP/1.1 200 OK", "late /late/1", NULL);
  expect_response(c[0], "HTTP/1.1 200 OK", "late /late/0", NULL);
  /* and again on the same connections */
  for (i = 0; i < 3; i++)
    assert_int_equal(rc_send_str(c[i], "GET /late/9?5 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  for (i = 0; i < 3; i++)
    expect_response(c[i], "HTTP/1.1 200 OK", "late /late/9", NULL);
  assert_int_equal(ta_calls(), 7);
  ev_destroy(&late_ev);
}

/* Pipelined requests answered out of order leave in request order. */
static void test_pipelined_async_order(void **state) {
  fx_t *fx = start(state);
  rc_t *c;
  int round;
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (round = 0; round < 3; round++) {
    assert_int_equal(rc_send_str(c, "GET /late/a?60 HTTP/1.1\r\nHost: a\r\n\r\n"
                                    "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
                                    "GET /late/b?20 HTTP/1.1\r\nHost: a\r\n\r\n"
                                    "GET /late/c?0 HTTP/1.1\r\nHost: a\r\n\r\n"),
                     0);
    expect_response(c, "HTTP/1.1 200 OK", "late /late/a", NULL);
    expect_response(c, "HTTP/1.1 200 OK", "now", NULL);
    expect_response(c, "HTTP/1.1 200 OK", "late /late/b", NULL);
    expect_response(c, "HTTP/1.1 200 OK", "late /late/c", NULL);
  }
  assert_int_equal(ta_calls(), 12);
  ev_destroy(&late_ev);
}

/* ---- held responses, completed by the test thread ----------------------- */

static struct {
  hr_response_t *res;
  pthread_t loop_thread;
  pthread_t post_thread;
  int post_inside_call;
  int in_post;
  int post_rc;
  int send_rc;
  int aborted;
  int abort_only; /* the abort callback does not complete the response */
  int abort_send_rc;
  ev_t held, posted, abort_ev;
} hold;

static void h_hold(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  hold.res = res;
  hold.loop_thread = pthread_self();
  ev_signal(&hold.held);
}

static void posted_send(hr_response_t *res, void *udata) {
  (void)udata;
  if (hold.in_post) hold.post_inside_call = 1;
  hold.post_thread = pthread_self();
  hold.send_rc = hr_response_send(res, 200, "posted", 6);
  ev_signal(&hold.posted);
}

static void hold_init(void) {
  memset(&hold, 0, sizeof hold);
  ev_init(&hold.held);
  ev_init(&hold.posted);
  ev_init(&hold.abort_ev);
}

static void hold_destroy(void) {
  ev_destroy(&hold.held);
  ev_destroy(&hold.posted);
  ev_destroy(&hold.abort_ev);
}

/* A second request pipelined behind a held one waits for it. */
static void test_cross_thread_post(void **state) {
  fx_t *fx = start(state);
  rc_t *c;
  hold_init();
  fx_route(fx, "GET", "/hold", h_hold, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  assert_true(ev_wait(&hold.held, 1, RC_TIMEOUT_MS));
  /* the test thread is "another thread" */
  assert_int_equal(hr_response_post(hold.res, posted_send, NULL), 0);
  expect_response(c, "HTTP/1.1 200 OK", "posted", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "now", NULL);
  assert_true(ev_wait(&hold.posted, 1, RC_TIMEOUT_MS));
  assert_int_equal(hold.send_rc, 0);
  assert_true(pthread_equal(hold.post_thread, hold.loop_thread));
  assert_false(pthread_equal(hold.post_thread, pthread_self()));
  assert_int_equal(ta_calls(), 2);
  hold_destroy();
}

/* Many posts from a separate thread, racing the loop. */
typedef struct poster_s {
  hr_response_t *res;
  int rc;
} poster_t;

static void *poster_main(void *arg) {
  poster_t *p = arg;
  p->rc = hr_response_post(p->res, posted_send, NULL);
  return NULL;
}

static void test_post_from_own_thread(void **state) {
  fx_t *fx = start(state);
  rc_t *c;
  int i;
  hold_init();
  fx_route(fx, "GET", "/hold", h_hold, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (i = 0; i < 20; i++) {
    pthread_t t;
    poster_t p;
    assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    assert_true(ev_wait(&hold.held, (unsigned long)i + 1, RC_TIMEOUT_MS));
    p.res = hold.res;
    p.rc = -1;
    assert_int_equal(pthread_create(&t, NULL, poster_main, &p), 0);
    expect_response(c, "HTTP/1.1 200 OK", "posted", NULL);
    pthread_join(t, NULL);
    assert_int_equal(p.rc, 0);
  }
  hold_destroy();
}

/* hr_response_post from the loop thread itself runs the callback later,
 * never inside the call. */
static void h_post_self(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  hold.in_post = 1;
  hold.post_rc = hr_response_post(res, posted_send, NULL);
  hold.in_post = 0;
}

static void test_post_from_loop_thread(void **state) {
  fx_t *fx = start(state);
  rc_t *c;
  hold_init();
  fx_route(fx, "GET", "/self", h_post_self, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /self HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "posted", NULL);
  assert_true(ev_wait(&hold.posted, 1, RC_TIMEOUT_MS));
  assert_int_equal(hold.post_rc, 0);
  assert_int_equal(hold.post_inside_call, 0);
  hold_destroy();
}

/* ---- the client goes away ------------------------------------------------ */

static void on_abort(hr_response_t *res, void *udata) {
  (void)udata;
  hold.aborted++;
  if (!hold.abort_only)
    hold.abort_send_rc = hr_response_send(res, 200, "too late", 8);
  ev_signal(&hold.abort_ev);
}

static void h_hold_abortable(hr_request_t *req, hr_response_t *res, void *u) {
  hr_response_on_abort(res, on_abort, NULL);
  h_hold(req, res, u);
}

static void test_abort_on_disconnect(void **state) {
  fx_t *fx = start(state);
  rc_t *c;
  int rst;
  hold_init();
  fx_route(fx, "GET", "/hold", h_hold_abortable, NULL);
  fx_start(fx, 1);
  for (rst = 0; rst < 2; rst++) {
    c = fx_connect(fx);
    assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    assert_true(ev_wait(&hold.held, (unsigned long)rst + 1, RC_TIMEOUT_MS));
    if (rst) rc_set_rst_on_close(c);
    fx_drop(fx, c);
    assert_true(ev_wait(&hold.abort_ev, (unsigned long)rst + 1, RC_TIMEOUT_MS));
    assert_int_equal(hold.aborted, rst + 1);
    assert_int_equal(hold.abort_send_rc, HR_ECLOSED);
  }
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  hold_destroy();
}

/* The handler completes later, from another thread, after the abort was
 * reported: the send returns HR_ECLOSED and the connection is released. */
static void test_complete_after_disconnect(void **state) {
  fx_t *fx = start(state);
  rc_t *c;
  hold_init();
  hold.abort_only = 1;
  fx_route(fx, "GET", "/hold", h_hold_abortable, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&hold.held, 1, RC_TIMEOUT_MS));
  fx_drop(fx, c);
  assert_true(ev_wait(&hold.abort_ev, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_response_post(hold.res, posted_send, NULL), 0);
  assert_true(ev_wait(&hold.posted, 1, RC_TIMEOUT_MS));
  assert_int_equal(hold.send_rc, HR_ECLOSED);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  /* the server still serves */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "now", NULL);
  hold_destroy();
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_timer_completion),
      T(test_pipelined_async_order),
      T(test_cross_thread_post),
      T(test_post_from_own_thread),
      T(test_post_from_loop_thread),
      T(test_abort_on_disconnect),
      T(test_complete_after_disconnect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
