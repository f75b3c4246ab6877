/* SPDX-License-Identifier: MIT */
/*
 * Protocol upgrades (hr_response_upgrade, hr_stream_*) through the server:
 * the 101 head, an echo stream, bytes pipelined behind the request given
 * to the stream first and never parsed as HTTP, a request that asks for no
 * upgrade refused, pause and resume, the stream ended by its owner (FIN
 * after the queued bytes), by the peer, and by a graceful shutdown that
 * tells the owner; the after-middleware and the closed callback's status;
 * the owner's deadline and a write posted from another thread;
 * backpressure through the drain callback, a peer's FIN with output
 * queued, a request whose body is still to come refused.
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static struct {
  pthread_mutex_t mu;
  int closed_status, closed_calls, shutdown_calls, after_status;
  hr_stream_t *last;
} st = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, NULL};
static ev_t closed_ev;

/* "flood": 1 MiB in 64 KiB writes, going on from the drain callback. */
static size_t flood_left;
static char flood_chunk[65536];

static void flood(hr_stream_t *s) {
  while (flood_left > 0) {
    int rc = hr_stream_write(s, flood_chunk, sizeof flood_chunk);
    if (rc == HR_EAGAIN) return; /* the drain callback goes on */
    assert_int_equal(rc, 0);
    flood_left -= sizeof flood_chunk;
  }
  hr_stream_close(s);
}

static void on_drain(hr_stream_t *s, void *udata) {
  (void)udata;
  flood(s);
}

static void on_timeout(hr_stream_t *s, void *udata) {
  (void)udata;
  hr_stream_write(s, "fired", 5);
}

/* Runs on the loop thread, after the read callback that asked for it. */
static void on_posted(hr_stream_t *s, void *udata) {
  assert_ptr_equal(udata, &st);
  hr_stream_write(s, "posted", 6);
}

static void *post_from_thread(void *arg) {
  assert_int_equal(hr_stream_post(arg, on_posted, &st), 0);
  return NULL;
}

/* Echoes what it reads; "close" ends the stream; "pause" pauses it;
 * "flood" writes 1 MiB with backpressure; "big" 4 MiB at once. */
static void on_read(hr_stream_t *s, const char *data, size_t len, void *udata) {
  (void)udata;
  if (len == 5 && memcmp(data, "flood", 5) == 0) {
    memset(flood_chunk, 'f', sizeof flood_chunk);
    flood_left = 16 * sizeof flood_chunk;
    flood(s);
    return;
  }
  if (len == 3 && memcmp(data, "big", 3) == 0) {
    static char big[4 << 20];
    memset(big, 'b', sizeof big);
    assert_int_equal(hr_stream_write(s, big, sizeof big), 0);
    return;
  }
  if (len == 5 && memcmp(data, "close", 5) == 0) {
    hr_stream_write(s, "bye", 3);
    hr_stream_close(s);
    return;
  }
  if (len == 5 && memcmp(data, "timer", 5) == 0) {
    /* Armed twice: the second replaces the first, so one "fired". */
    assert_int_equal(hr_stream_set_timeout(s, 60000), 0);
    assert_int_equal(hr_stream_set_timeout(s, 1), 0);
    hr_stream_write(s, "armed", 5);
    return;
  }
  if (len == 4 && memcmp(data, "post", 4) == 0) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, post_from_thread, s), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    hr_stream_write(s, "asked", 5);
    return;
  }
  if (len == 5 && memcmp(data, "pause", 5) == 0) {
    hr_stream_pause(s, 1);
    hr_stream_write(s, "paused", 6);
    return;
  }
  hr_stream_write(s, data, len);
}

static void on_closed(hr_stream_t *s, int status, void *udata) {
  (void)s;
  (void)udata;
  pthread_mutex_lock(&st.mu);
  st.closed_status = status;
  st.closed_calls++;
  st.last = NULL;
  pthread_mutex_unlock(&st.mu);
  ev_signal(&closed_ev);
}

static void on_shutdown(hr_stream_t *s, void *udata) {
  (void)udata;
  pthread_mutex_lock(&st.mu);
  st.shutdown_calls++;
  pthread_mutex_unlock(&st.mu);
  hr_stream_write(s, "going", 5);
  hr_stream_close(s);
}

static const hr_stream_callbacks_t cbs = {
    .read = on_read, .closed = on_closed, .drain = on_drain, .shutdown = on_shutdown,
    .timeout = on_timeout};

static void h_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_stream_t *s;
  int rc;
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("X-Echo"), HR_SPAN_LIT("1"));
  rc = hr_response_upgrade(res, "echo", &cbs, NULL, &s);
  if (rc == HR_EINVAL) {
    hr_response_send(res, 400, "no upgrade asked", 16);
    return;
  }
  if (rc == HR_ESTATE) { /* the request's body is still to come */
    hr_response_send(res, 400, "body first", 10);
    return;
  }
  /* A greeting before the hand-over goes right after the 101. */
  assert_int_equal(hr_stream_write(s, "hi", 2), 0);
  pthread_mutex_lock(&st.mu);
  st.last = s;
  pthread_mutex_unlock(&st.mu);
}

static void mw_after(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)udata;
  pthread_mutex_lock(&st.mu);
  st.after_status = status;
  pthread_mutex_unlock(&st.mu);
}

static const char *const UPGRADE =
    "GET /echo HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: echo\r\n\r\n";

static void start(fx_t *fx) {
  memset(&st.closed_status, 0, sizeof(int) * 4);
  ev_init(&closed_ev);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_after, NULL), 0);
  fx_route(fx, "GET", "/echo", h_echo, NULL);
  fx_start(fx, 1);
}

static void test_echo_and_pipelined(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  char req[512];
  start(fx);
  c = fx_connect(fx);
  /* Bytes right behind the request, and an HTTP request among them: the
   * stream's, never parsed. */
  snprintf(req, sizeof req, "%sfirst GET / HTTP/1.1\r\nHost: a\r\n\r\n", UPGRADE);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  expect_field(&r, "Upgrade", "echo", 0);
  expect_field(&r, "Connection", "Upgrade", 0);
  expect_field(&r, "X-Echo", "1", 0);
  expect_no_field(&r, "Content-Length");
  rc_response_free(&r);
  expect_bytes(c, "hi");
  expect_bytes(c, "first GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  assert_int_equal(rc_send_str(c, "hello"), 0);
  expect_bytes(c, "hello");
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.after_status, 101);
  pthread_mutex_unlock(&st.mu);
  /* The owner ends it: the queued bytes, then FIN; closed(0). */
  assert_int_equal(rc_send_str(c, "close"), 0);
  expect_bytes(c, "bye");
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.closed_calls, 1);
  assert_int_equal(st.closed_status, 0);
  pthread_mutex_unlock(&st.mu);
  ev_destroy(&closed_ev);
}

/* The owner's deadline, and a write posted from another thread. */
static void test_timeout_and_post(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  start(fx);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, UPGRADE), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  rc_response_free(&r);
  expect_bytes(c, "hi");
  assert_int_equal(rc_send_str(c, "timer"), 0);
  expect_bytes(c, "armedfired");
  assert_int_equal(rc_send_str(c, "post"), 0);
  expect_bytes(c, "askedposted");
  assert_int_equal(rc_send_str(c, "close"), 0);
  expect_bytes(c, "bye");
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  ev_destroy(&closed_ev);
}

static void test_refused_and_peer_close(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start(fx);
  /* No Upgrade field, or none named in Connection: an ordinary answer. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /echo HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "no upgrade asked", NULL);
  assert_int_equal(rc_send_str(c, "GET /echo HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "no upgrade asked", NULL);
  assert_int_equal(rc_send_str(c, "GET /echo HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "no upgrade asked", NULL);
  fx_drop(fx, c);
  /* The peer closes: closed(UV_EOF). */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, UPGRADE), 0);
  {
    rc_response_t r;
    expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
    rc_response_free(&r);
  }
  expect_bytes(c, "hi");
  assert_int_equal(rc_send_str(c, "ping"), 0);
  expect_bytes(c, "ping");
  rc_shutdown_wr(c);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.closed_status, UV_EOF);
  pthread_mutex_unlock(&st.mu);
  fx_drop(fx, c);
  ev_destroy(&closed_ev);
}

static void resume_last(fx_t *fx, void *arg) {
  (void)fx;
  (void)arg;
  pthread_mutex_lock(&st.mu);
  if (st.last != NULL) hr_stream_pause(st.last, 0);
  pthread_mutex_unlock(&st.mu);
}

static void begin_close(fx_t *fx, void *arg) {
  (void)arg;
  fx->close_rc = hr_server_close(fx->server, 5000, fx_on_shutdown, fx);
}

/* Paused, the stream leaves the peer's bytes where they are; resumed, it
 * gets them in order.  Then a graceful shutdown tells the owner, which
 * says goodbye and closes. */
static void test_pause_and_shutdown(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  memset(&st.closed_status, 0, sizeof(int) * 4);
  ev_init(&closed_ev);
  fx_route(fx, "GET", "/echo", h_echo, NULL);
  fx_attach(fx); /* the test runs calls on the loop's thread */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, UPGRADE), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  rc_response_free(&r);
  expect_bytes(c, "hi");
  assert_int_equal(rc_send_str(c, "pause"), 0);
  expect_bytes(c, "paused");
  assert_int_equal(rc_send_str(c, "later"), 0);
  fx_run_on_loop(fx, resume_last, NULL);
  expect_bytes(c, "later");
  /* The shutdown: the owner's goodbye, then FIN; the server lingers until
   * the peer closes too. */
  fx_run_on_loop(fx, begin_close, NULL);
  expect_bytes(c, "going");
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  rc_shutdown_wr(c);
  fx_join_attached(fx);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.shutdown_calls, 1);
  assert_int_equal(st.closed_status, 0);
  pthread_mutex_unlock(&st.mu);
  fx_drop(fx, c);
  ev_destroy(&closed_ev);
}

/* Reads until EOF; returns the count of bytes equal to `ch`. */
static size_t read_all(rc_t *c, char ch, size_t *total) {
  char buf[65536];
  size_t same = 0, n = 0;
  ssize_t r;
  while ((r = recv(c->fd, buf, sizeof buf, 0)) > 0) {
    ssize_t i;
    for (i = 0; i < r; i++) same += buf[i] == ch;
    n += (size_t)r;
  }
  *total = n;
  return same;
}

/* Backpressure: 1 MiB through HR_EAGAIN and the drain callback (even when
 * a write goes out at once), then FIN.  A peer's FIN while 4 MiB are
 * queued: they still go out before the close.  A request whose body is
 * still to come (Expect: 100-continue on a streaming route) is refused. */
static void test_backpressure_and_half_close(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  size_t total, same;
  start(fx);
  c = rc_connect_ex("127.0.0.1", fx->port, 8192);
  assert_int_equal(rc_send_str(c, UPGRADE), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  rc_response_free(&r);
  expect_bytes(c, "hi");
  assert_int_equal(rc_send_str(c, "flood"), 0);
  same = read_all(c, 'f', &total);
  assert_int_equal(total, 16 * 65536);
  assert_int_equal(same, total);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.closed_status, 0);
  pthread_mutex_unlock(&st.mu);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, UPGRADE), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  rc_response_free(&r);
  expect_bytes(c, "hi");
  assert_int_equal(rc_send_str(c, "big"), 0);
  rc_shutdown_wr(c);
  same = read_all(c, 'b', &total);
  assert_int_equal(total, 4 << 20);
  assert_int_equal(same, total);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 2, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.closed_status, UV_EOF);
  pthread_mutex_unlock(&st.mu);
  ev_destroy(&closed_ev);
}

static void test_body_first(void **state) {
  fx_t *fx = *state;
  hr_route_options_t ro;
  rc_t *c;
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/up", h_echo, NULL, &ro);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: echo\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "body first", NULL);
  fx_drop(fx, c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_echo_and_pipelined, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_timeout_and_post, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_refused_and_peer_close, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_pause_and_shutdown, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_backpressure_and_half_close, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_body_first, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
