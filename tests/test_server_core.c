/* SPDX-License-Identifier: MIT */
/*
 * The server core's contracts: an idle keep-alive connection holds no
 * exchange, read buffer, output queue or block; response calls from a
 * thread other than the loop's answer HR_ETHREAD and do nothing; a
 * shutdown finishes whatever handlers hold (abandoned responses answer
 * HR_ECLOSED, stay readable until hr_server_free, are counted and logged);
 * the warning at the deadline counts only responses still held; a
 * streaming handler whose body went over the limit has its response
 * completed by the server's 413, which the after-middleware sees; a
 * shutdown ends a connection whose last response is still being written
 * once it is out; out of file descriptors, a worker pauses accepting and
 * serves again once descriptors are free.
 *
 * ctest-labels: tsan
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fixture.h"

/* ---- idle connections hold nothing ----------------------------------------- */

static hr_server_t *stats_server;
static hr_server_stats_t seen;

/* Reads the statistics from inside a handler: on the one loop, every
 * earlier connection's processing has finished by then. */
static void h_stats(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_server_stats(stats_server, &seen);
  hr_response_send(res, 200, "ok", 2);
}

static void test_idle_connections_hold_nothing(void **state) {
  enum { N = 200 };
  fx_t *fx = *state;
  rc_t *c[N], *probe;
  size_t i;
  fx_route(fx, "GET", "/hello/:name", ta_text, "hi");
  fx_route(fx, "GET", "/stats", h_stats, NULL);
  fx->opts.keepalive_timeout_ms = 60000;
  fx_start(fx, 1);
  stats_server = fx->server;
  for (i = 0; i < N; i++) {
    c[i] = fx_connect(fx);
    assert_int_equal(rc_send_str(c[i], "GET /hello/x HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  }
  for (i = 0; i < N; i++) expect_response(c[i], "HTTP/1.1 200 OK", "hi", NULL);
  probe = fx_connect(fx);
  assert_int_equal(rc_send_str(probe, "GET /stats HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(probe, "HTTP/1.1 200 OK", "ok", NULL);
  assert_int_equal(seen.connections_active, N + 1);
  assert_int_equal(seen.requests, N);
  /* Only the probe's own request is under way. */
  assert_int_equal(seen.exchanges_in_use, 1);
  assert_int_equal(seen.read_buffers_in_use, 1);
  assert_int_equal(seen.output_queues_in_use, 0);
  assert_int_equal(seen.output_blocks_in_use, 0);
  assert_int_equal(seen.arena_blocks_in_use, 1); /* its field lines */
  /* And once the probe is answered too, nothing at all. */
  assert_int_equal(rc_send_str(probe, "GET /stats HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(probe, "HTTP/1.1 200 OK", "ok", NULL);
  assert_int_equal(seen.requests, N + 1);
  assert_int_equal(seen.exchanges_in_use, 1);
  assert_int_equal(seen.read_buffers_in_use, 1);
  assert_int_equal(seen.output_queues_in_use, 0);
  assert_int_equal(seen.output_blocks_in_use, 0);
  assert_int_equal(seen.arena_blocks_in_use, 1);
}

/* ---- calls from another thread ---------------------------------------------- */

static struct {
  hr_response_t *res;
  int rc_send, rc_field, rc_start, rc_drain, rc_post;
  ev_t done;
} xt;

static void posted_answer(hr_response_t *res, void *udata) {
  (void)udata;
  hr_response_send(res, 200, "posted", 6);
}

static void *foreign_main(void *arg) {
  hr_response_t *res = arg;
  xt.rc_field = hr_response_add_field(res, HR_SPAN_LIT("X-A"), HR_SPAN_LIT("b"));
  xt.rc_send = hr_response_send(res, 200, "wrong", 5);
  xt.rc_start = hr_response_start(res, 200, 3);
  xt.rc_drain = hr_response_on_drain(res, NULL, NULL);
  xt.rc_post = hr_response_post(res, posted_answer, NULL);
  ev_signal(&xt.done);
  return NULL;
}

static void h_foreign(hr_request_t *req, hr_response_t *res, void *udata) {
  pthread_t t;
  (void)req;
  (void)udata;
  xt.res = res;
  if (pthread_create(&t, NULL, foreign_main, res) == 0) pthread_detach(t);
}

static void test_calls_from_another_thread(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  memset(&xt, 0, sizeof xt);
  ev_init(&xt.done);
  fx_route(fx, "GET", "/foreign", h_foreign, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /foreign HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "posted", &r);
  expect_no_field(&r, "X-A"); /* the foreign add_field did nothing */
  rc_response_free(&r);
  assert_true(ev_wait(&xt.done, 1, RC_TIMEOUT_MS));
  assert_int_equal(xt.rc_field, HR_ETHREAD);
  assert_int_equal(xt.rc_send, HR_ETHREAD);
  assert_int_equal(xt.rc_start, HR_ETHREAD);
  assert_int_equal(xt.rc_drain, HR_ETHREAD);
  assert_int_equal(xt.rc_post, 0);
  ev_destroy(&xt.done);
}

/* ---- abandoned responses ---------------------------------------------------- */

static struct {
  hr_request_t *req;
  hr_response_t *res;
  int aborted;
  int complete_in_abort; /* the abort callback completes the response */
  int abort_rc;
  int field_rc; /* hr_response_add_field inside the abort callback */
  ev_t held;
  char log[512];
  int warnings;
  pthread_mutex_t lock;
} ab;

static void on_log(void *ctx, hr_log_level_t level, const char *msg) {
  (void)ctx;
  pthread_mutex_lock(&ab.lock);
  if (level == HR_LOG_WARN) {
    ab.warnings++;
    if (strstr(msg, "abandoned the response") != NULL)
      snprintf(ab.log, sizeof ab.log, "%s", msg);
  }
  pthread_mutex_unlock(&ab.lock);
}

static void on_abort_cb(hr_response_t *res, void *udata) {
  (void)udata;
  ab.aborted++;
  ab.field_rc = hr_response_add_field(res, HR_SPAN_LIT("A"), HR_SPAN_LIT("b"));
  if (ab.complete_in_abort) ab.abort_rc = hr_response_send(res, 200, "late", 4);
}

static void h_never(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  ab.req = req;
  ab.res = res;
  hr_response_on_abort(res, on_abort_cb, NULL);
  ev_signal(&ab.held);
}

static void ab_init(fx_t *fx, int complete_in_abort) {
  memset(&ab, 0, sizeof ab);
  ev_init(&ab.held);
  pthread_mutex_init(&ab.lock, NULL);
  ab.complete_in_abort = complete_in_abort;
  fx->opts.log = on_log;
  fx_route(fx, "GET", "/never/:id", h_never, NULL);
}

static void ab_destroy(void) {
  ev_destroy(&ab.held);
  pthread_mutex_destroy(&ab.lock);
}

static void test_stop_abandons_what_handlers_hold(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  hr_server_stats_t st;
  ab_init(fx, 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /never/42?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&ab.held, 1, RC_TIMEOUT_MS));
  /* Returns although the handler never answers. */
  assert_int_equal(hr_server_stop(fx->server, 50), 0);
  fx->started = 0;
  expect_closed(c);
  assert_int_equal(ab.aborted, 1);
  assert_int_equal(ab.field_rc, HR_ECLOSED); /* the connection was gone */
  hr_server_stats(fx->server, &st);
  assert_int_equal(st.responses_abandoned, 1);
  assert_int_equal(st.exchanges_in_use, 1); /* kept for the handler */
  /* The handler wakes up late: every call answers HR_ECLOSED, the request
   * is still readable. */
  assert_int_equal(hr_response_send(ab.res, 200, "x", 1), HR_ECLOSED);
  assert_int_equal(hr_response_add_field(ab.res, HR_SPAN_LIT("A"), HR_SPAN_LIT("b")),
                   HR_ECLOSED);
  assert_int_equal(hr_response_end(ab.res), HR_ECLOSED);
  assert_int_equal(hr_response_post(ab.res, posted_answer, NULL), HR_ECLOSED);
  assert_true(hr_span_eq(hr_request_path(ab.req), HR_SPAN_LIT("/never/42")));
  assert_true(hr_span_eq(hr_request_param(ab.req, 0), HR_SPAN_LIT("42")));
  assert_string_equal(ab.log,
                      "shutdown deadline passed: abandoned the response to GET "
                      "/never/42?x=1 (route /never/:id)");
  ab_destroy();
  /* fx_teardown frees the server, and with it the abandoned exchange. */
}

static struct {
  hr_server_stats_t st;
  int send_rc;
} att;

/* The shutdown callback: runs on the loop once the worker finished, with
 * the abandoned response still valid. */
static void on_attached_shutdown(hr_server_t *server, void *udata) {
  hr_server_stats(server, &att.st);
  att.send_rc = hr_response_send(ab.res, 200, "x", 1);
  fx_on_shutdown(server, udata);
}

static void do_close(fx_t *fx, void *arg) {
  (void)arg;
  fx->close_rc = hr_server_close(fx->server, 50, on_attached_shutdown, fx);
}

static void test_close_abandons_on_attached_loop(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  ab_init(fx, 0);
  memset(&att, 0, sizeof att);
  fx_attach(fx);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /never/7 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&ab.held, 1, RC_TIMEOUT_MS));
  fx_run_on_loop(fx, do_close, NULL);
  assert_int_equal(fx->close_rc, 0);
  /* The loop ends and closes cleanly (asserted inside); the server is
   * freed, and the abandoned exchange with it. */
  fx_join_attached(fx);
  expect_closed(c);
  assert_int_equal(att.st.responses_abandoned, 1);
  assert_int_equal(att.send_rc, HR_ECLOSED);
  ab_destroy();
}

static void test_deadline_warning_counts_only_held(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  hr_server_stats_t st;
  ab_init(fx, 1); /* the abort callback completes the response */
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /never/1 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&ab.held, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_server_stop(fx->server, 50), 0);
  fx->started = 0;
  expect_closed(c);
  assert_int_equal(ab.aborted, 1);
  assert_int_equal(ab.abort_rc, HR_ECLOSED);
  hr_server_stats(fx->server, &st);
  assert_int_equal(st.responses_abandoned, 0);
  assert_int_equal(st.exchanges_in_use, 0);
  assert_int_equal(ab.warnings, 0);
  ab_destroy();
}

/* ---- the server answers in a streaming handler's place ---------------------- */

static struct {
  int body_status;
  int send_rc;
  int after_status;
  ev_t body_end, after;
  hr_response_t *res;
} tl;

static void on_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  (void)req;
  (void)chunk;
  (void)udata;
  if (status == 0) return;
  tl.body_status = status;
  ev_signal(&tl.body_end);
}

static void h_upload(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  tl.res = res;
  hr_request_read_body(req, on_body, NULL);
  /* Answers nothing: it stops after HR_ETOOLARGE. */
}

static void mw_after(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)udata;
  tl.after_status = status;
  ev_signal(&tl.after);
}

static void posted_late_send(hr_response_t *res, void *udata) {
  (void)udata;
  tl.send_rc = hr_response_send(res, 200, "late", 4);
}

static void test_413_completes_a_streaming_response(void **state) {
  fx_t *fx = *state;
  hr_route_options_t ro;
  rc_t *c;
  memset(&tl, 0, sizeof tl);
  tl.send_rc = 1;
  ev_init(&tl.body_end);
  ev_init(&tl.after);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = 10;
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_after, NULL), 0);
  fx_route_opts(fx, "POST", "/up", h_upload, NULL, &ro);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "20\r\n0123456789abcdef0123456789abcdef\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, NULL);
  expect_closed(c);
  assert_true(ev_wait(&tl.body_end, 1, RC_TIMEOUT_MS));
  assert_int_equal(tl.body_status, HR_ETOOLARGE);
  /* A later send answers HR_ECLOSED and completes the exchange, whose
   * after-middleware sees the 413 that went out. */
  assert_int_equal(hr_response_post(tl.res, posted_late_send, NULL), 0);
  assert_true(ev_wait(&tl.after, 1, RC_TIMEOUT_MS));
  assert_int_equal(tl.after_status, 413);
  assert_int_equal(fx_stop(fx, 1000), 0);
  assert_int_equal(tl.send_rc, HR_ECLOSED);
  ev_destroy(&tl.body_end);
  ev_destroy(&tl.after);
}

static void test_stop_finishes_after_413(void **state) {
  fx_t *fx = *state;
  hr_route_options_t ro;
  hr_server_stats_t st;
  rc_t *c;
  memset(&tl, 0, sizeof tl);
  ev_init(&tl.body_end);
  ev_init(&tl.after);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = 10;
  fx_route_opts(fx, "POST", "/up", h_upload, NULL, &ro);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /up HTTP/1.1\r\nHost: a\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "b\r\n0123456789a\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, NULL);
  assert_true(ev_wait(&tl.body_end, 1, RC_TIMEOUT_MS));
  /* The handler never completes: the stop still returns at its deadline. */
  assert_int_equal(hr_server_stop(fx->server, 50), 0);
  fx->started = 0;
  hr_server_stats(fx->server, &st);
  assert_int_equal(st.responses_abandoned, 1);
  ev_destroy(&tl.body_end);
  ev_destroy(&tl.after);
}

/* ---- shutdown while the last response is still being written -------------- */

static void h_large(hr_request_t *req, hr_response_t *res, void *udata) {
  static char body[12 << 20];
  (void)req;
  (void)udata;
  memset(body, 'L', sizeof body);
  ta_count();
  hr_response_send_borrowed(res, 200, body, sizeof body, NULL, NULL);
}

static void do_close_long(fx_t *fx, void *arg) {
  (void)arg;
  fx->close_rc = hr_server_close(fx->server, 30000, fx_on_shutdown, fx);
}

static void test_close_while_output_in_flight(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  size_t got = 0;
  fx->opts.keepalive_timeout_ms = 60000;
  fx->opts.write_timeout_ms = 60000;
  fx_route(fx, "GET", "/large", h_large, NULL);
  fx_attach(fx);
  c = rc_connect_ex("127.0.0.1", fx->port, 65536);
  assert_non_null(c);
  assert_int_equal(rc_send_str(c, "GET /large HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ta_wait_calls(1, RC_TIMEOUT_MS));
  /* The response is complete but most of it waits to be written (the
   * client reads nothing yet): the shutdown begins now, on the loop. */
  fx_run_on_loop(fx, do_close_long, NULL);
  assert_int_equal(fx->close_rc, 0);
  /* The rest arrives, then the end: not after the 60 s keep-alive wait. */
  assert_int_equal(rc_drain_until_closed(c, &got), 1);
  assert_true(got > (size_t)(12 << 20));
  rc_close(c);
  fx_join_attached(fx);
}

/* ---- out of file descriptors ------------------------------------------------ */

static void test_out_of_descriptors_pauses_accepting(void **state) {
  fx_t *fx = *state;
  struct rlimit old, low;
  int fill[64], nfill = 0, probe, i, ok = 0;
  rc_t *c;
  hr_server_stats_t st;
  fx_route(fx, "GET", "/", ta_text, "served");
  fx_start(fx, 2);
  /* Lower the soft limit just above what is open, fill what is left but
   * one, and connect with that one: the server cannot accept. */
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  probe = dup(0);
  assert_true(probe >= 0);
  close(probe);
  low = old;
  low.rlim_cur = (rlim_t)probe + 16;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (;;) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    assert_true(nfill < 64);
    fill[nfill++] = fd;
  }
  close(fill[--nfill]);
  c = rc_connect(fx->port);
  /* The worker that got it paused (it accepts one and drops it, to tell
   * the client): wait for the statistic, bounded. */
  for (i = 0; i < 500; i++) {
    hr_server_stats(fx->server, &st);
    if (st.accept_pauses >= 1) break;
    sleep_ms(10);
  }
  for (i = 0; i < nfill; i++) close(fill[i]);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
  assert_true(st.accept_pauses >= 1);
  if (c != NULL) rc_close(c);
  /* Descriptors are free again: the next connections are served. */
  for (i = 0; i < 4; i++) {
    rc_t *d = fx_connect(fx);
    if (rc_send_str(d, "GET / HTTP/1.1\r\nHost: a\r\n\r\n") == 0) {
      rc_response_t r;
      if (rc_read_response(d, &r, 0) == 0) ok++;
    }
  }
  assert_int_equal(ok, 4);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_idle_connections_hold_nothing),
      T(test_calls_from_another_thread),
      T(test_stop_abandons_what_handlers_hold),
      T(test_close_abandons_on_attached_loop),
      T(test_deadline_warning_counts_only_held),
      T(test_413_completes_a_streaming_response),
      T(test_stop_finishes_after_413),
      T(test_close_while_output_in_flight),
      T(test_out_of_descriptors_pauses_accepting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
