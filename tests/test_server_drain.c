/* SPDX-License-Identifier: MIT */
/*
 * Draining (hr_server_drain) and the probe routes (hr_server_route_health,
 * and hr_server_txn_health with hr_server_txn_metrics in a transaction):
 * readiness flips to 503 at once, every connection (idle keep-alive ones,
 * fresh ones, requests under way) ends after its next response with
 * "Connection: close", connections accepted during the grace period get
 * one response each, what is idle when the grace period ends closes then,
 * every worker stops by itself and the callback runs once; hr_server_stop
 * / hr_server_close cut a grace period short.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "fixture.h"

static struct {
  hr_response_t *res;
  ev_t held, drained;
  int send_rc;
  int drain_rc, drain_again_rc, close_rc;
  int draining_seen; /* hr_server_draining inside the callback */
} st;

static void st_init(void) {
  memset(&st, 0, sizeof st);
  ev_init(&st.held);
  ev_init(&st.drained);
}

static void st_destroy(void) {
  ev_destroy(&st.held);
  ev_destroy(&st.drained);
}

static void h_hold(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  st.res = res;
  ev_signal(&st.held);
}

static void posted_send(hr_response_t *res, void *udata) {
  (void)udata;
  st.send_rc = hr_response_send(res, 200, "finished", 8);
}

static void on_drained(hr_server_t *server, void *udata) {
  (void)udata;
  st.draining_seen = hr_server_draining(server);
  ev_signal(&st.drained);
}

static void add_routes(fx_t *fx) {
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_route(fx, "GET", "/hold", h_hold, NULL);
}

/* Reads one response: status line and body as given, and told to close
 * (HTTP/1.1 "Connection: close", HTTP/2 a GOAWAY) when `closing`, not
 * otherwise. */
static void expect_answer(rc_t *c, const char *status_line, const char *body, int closing) {
  rc_response_t r;
  expect_response(c, status_line, body, &r);
  if (rc_told_to_close(c, &r) != closing)
    fail_msg("expected %s, got %s", closing ? "to be told to close" : "no close",
             rc_header(&r, "Connection") ? rc_header(&r, "Connection") : "none");
  rc_response_free(&r);
}

/* Connections that must end once the drain is over: over HTTP/1.1 after
 * their next response, at once; over HTTP/2 at the shutdown's final
 * GOAWAY (the drain's GOAWAY is a notice, RFC 9113 §6.8), checked by
 * expect_ended_later. */
static rc_t *later[8];
static size_t nlater;

static void expect_ends(rc_t *c) {
  if (!fx_h2()) {
    assert_int_equal(rc_drain_until_closed(c, NULL), 1);
    return;
  }
  assert_true(nlater < sizeof later / sizeof later[0]);
  later[nlater++] = c;
}

static void expect_ended_later(void) {
  size_t i;
  for (i = 0; i < nlater; i++) assert_int_equal(rc_drain_until_closed(later[i], NULL), 1);
  nlater = 0;
}

/* The probes and the metrics recorded in a transaction: nothing before its
 * commit, all of them after it; a conflict inside it leaves neither probe. */
static void test_health_routes_in_a_transaction(void **state) {
  fx_t *fx = *state;
  hr_txn_t *txn;
  rc_t *c;
  add_routes(fx);
  fx_start(fx, 1);
  assert_int_equal(hr_router_begin(fx->router, &txn), 0);
  assert_int_equal(hr_server_txn_health(fx->server, NULL, "/healthz", NULL), HR_EINVAL);
  assert_int_equal(hr_server_txn_health(fx->server, txn, NULL, NULL), HR_EINVAL);
  assert_int_equal(hr_server_txn_metrics(NULL, txn, "/metrics"), HR_EINVAL);
  assert_int_equal(hr_server_txn_health(fx->server, txn, "/healthz", "/readyz"), 0);
  assert_int_equal(hr_server_txn_health(fx->server, txn, "/live", "/readyz"), HR_EEXIST);
  assert_int_equal(hr_server_txn_metrics(fx->server, txn, "/metrics"), 0);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
  assert_int_equal(hr_txn_commit(txn, NULL), 0);
  assert_int_equal(rc_send_str(c, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "ok\n", 0);
  assert_int_equal(rc_send_str(c, "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "ready\n", 0);
  assert_int_equal(rc_send_str(c, "GET /live HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
  assert_int_equal(rc_send_str(c, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, NULL);
}

static void test_health_routes(void **state) {
  fx_t *fx = *state;
  hr_server_t *s = NULL;
  rc_t *c;
  rc_response_t r;
  add_routes(fx);
  fx_start(fx, 1);
  assert_int_equal(hr_server_route_health(fx->server, NULL, NULL), HR_EINVAL);
  assert_int_equal(hr_server_route_health(NULL, "/healthz", NULL), HR_EINVAL);
  assert_int_equal(hr_server_route_health(fx->server, "/healthz", "/readyz"), 0);
  /* Registered already: neither is added again, the first is kept. */
  assert_int_equal(hr_server_route_health(fx->server, "/live", "/readyz"), HR_EEXIST);
  assert_int_equal(hr_server_draining(fx->server), 0);
  assert_int_equal(hr_server_draining(NULL), 0);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "ok\n", &r);
  expect_field(&r, "Content-Type", "text/plain; charset=utf-8", 0);
  expect_field(&r, "Cache-Control", "no-store", 0);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "ready\n", 0);
  assert_int_equal(rc_send_str(c, "HEAD /readyz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  expect_field(&r, "Content-Length", "6", 0);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /live HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
  /* Not running: nothing to drain. */
  assert_int_equal(hr_server_new(&s, fx->router, NULL), 0);
  assert_int_equal(hr_server_drain(s, 0, 0, NULL, NULL), HR_ESTATE);
  assert_int_equal(hr_server_drain(NULL, 0, 0, NULL, NULL), HR_EINVAL);
  hr_server_free(s);
}

static void do_drain_long(fx_t *fx, void *arg) {
  (void)arg;
  st.drain_rc = hr_server_drain(fx->server, 60000, 5000, fx_on_shutdown, fx);
  st.drain_again_rc = hr_server_drain(fx->server, 0, 0, NULL, NULL);
}

static void do_close_now(fx_t *fx, void *arg) {
  (void)arg;
  st.close_rc = hr_server_close(fx->server, 1000, fx_on_shutdown, fx);
}

/* Attached (the drain has begun when the call returns), a long grace
 * period: what a drain does to each kind of connection, then
 * hr_server_close ends the grace period. */
static void test_drain_connections(void **state) {
  fx_t *fx = *state;
  rc_t *idle, *busy, *half, *late, *fresh;
  st_init();
  nlater = 0;
  add_routes(fx);
  fx_attach(fx);
  assert_int_equal(hr_server_route_health(fx->server, "/healthz", "/readyz"), 0);
  idle = fx_connect(fx);
  assert_int_equal(rc_send_str(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(idle, "HTTP/1.1 200 OK", "root", 0);
  busy = fx_connect(fx);
  assert_int_equal(rc_send_str(busy, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&st.held, 1, RC_TIMEOUT_MS));
  half = fx_connect(fx);
  /* Half a header section: HTTP/1.1's alone (the HTTP/2 client sends
   * nothing of it until it is whole). */
  assert_int_equal(rc_send_str(half, "GET / HTTP/1.1\r\nHost:"), 0);
  fresh = fx_connect(fx); /* connected, no request sent yet */
  expect_stat(fx, FX_EXCHANGES, fx_h2() ? 1 : 2); /* the half header section is being read */
  expect_stat(fx, FX_ACCEPTED, 4);

  fx_run_on_loop(fx, do_drain_long, NULL);
  assert_int_equal(st.drain_rc, 0);
  assert_int_equal(st.drain_again_rc, HR_ESTATE);
  assert_int_equal(hr_server_draining(fx->server), 1);
  /* The idle keep-alive connection is left open for the grace period (a
   * request may be on its way): its next response closes it. */
  assert_int_equal(rc_send_str(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(idle, "HTTP/1.1 200 OK", "root", 1);
  expect_ends(idle);
  /* So is one that has not had its first request yet. */
  assert_int_equal(rc_send_str(fresh, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(fresh, "HTTP/1.1 200 OK", "root", 1);
  expect_ends(fresh);
  /* The half-read request is answered, and its connection ends. */
  assert_int_equal(rc_send_str(half, " a\r\n\r\n"), 0);
  expect_answer(half, "HTTP/1.1 200 OK", "root", 1);
  expect_ends(half);
  /* New connections are still accepted: readiness says 503, liveness 200,
   * one response each over HTTP/1.1 (the pipelined second request is not
   * answered; over HTTP/2 the notice lets both streams be answered). */
  late = fx_connect(fx);
  assert_int_equal(rc_send_str(late, "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"
                                     "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_answer(late, "HTTP/1.1 503 Service Unavailable", "draining\n", 1);
  expect_ends(late);
  late = fx_connect(fx);
  assert_int_equal(rc_send_str(late, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(late, "HTTP/1.1 200 OK", "ok\n", 1);
  expect_ends(late);
  /* The held response goes out, with Connection: close. */
  assert_int_equal(hr_response_post(st.res, posted_send, NULL), 0);
  expect_answer(busy, "HTTP/1.1 200 OK", "finished", 1);
  expect_ends(busy);
  assert_int_equal(st.send_rc, 0);
  /* An idle connection at the end of the grace period is closed then. */
  late = fx_connect(fx);
  expect_stat(fx, FX_ACCEPTED, 7);
  fx_run_on_loop(fx, do_close_now, NULL);
  assert_int_equal(st.close_rc, 0);
  assert_int_equal(rc_expect_closed(late), 1);
  expect_ended_later();
  fx_join_attached(fx); /* one callback: hr_server_close's */
  st_destroy();
}

/* Worker threads, a long grace period: an idle connection is still open
 * and served; hr_server_stop cuts the grace period short, and the drain's
 * callback has run once the threads are joined. */
static void test_drain_threads_stop(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  st_init();
  add_routes(fx);
  fx_start(fx, 2);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "root", 0);
  assert_int_equal(hr_server_drain(fx->server, 60000, 5000, on_drained, NULL), 0);
  assert_int_equal(hr_server_draining(fx->server), 1);
  assert_int_equal(hr_server_drain(fx->server, 0, 0, NULL, NULL), HR_ESTATE);
  assert_int_equal(ev_count(&st.drained), 0);
  assert_int_equal(hr_server_stop(fx->server, 1000), 0);
  fx->started = 0;
  assert_int_equal(ev_count(&st.drained), 1);
  assert_int_equal(st.draining_seen, 1);
  assert_int_equal(rc_expect_closed(c), 1);
  hr_server_free(fx->server);
  fx->server = NULL;
  st_destroy();
}

/* Two workers, no grace period: each stops by itself; the callback runs
 * once, after the last; then nothing accepts and hr_server_stop joins at
 * once. */
static void test_drain_threads_end(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  int port;
  st_init();
  add_routes(fx);
  fx_start(fx, 2);
  port = fx->port;
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "root", 0);
  assert_int_equal(hr_server_drain(fx->server, 0, 1000, on_drained, NULL), 0);
  assert_true(ev_wait(&st.drained, 1, RC_TIMEOUT_MS));
  assert_int_equal(rc_expect_closed(c), 1);
  c = rc_connect(port);
  if (c != NULL) rc_close(c);
  assert_null(c);
  assert_int_equal(rc_connect_errno, ECONNREFUSED);
  assert_int_equal(hr_server_stop(fx->server, 1000), 0);
  fx->started = 0;
  assert_int_equal(ev_count(&st.drained), 1);
  hr_server_free(fx->server);
  fx->server = NULL;
  st_destroy();
}

/* Beginning a drain takes no memory of its own: when the allocator fails
 * while hr_server_drain tells the workers, no worker may be left serving
 * keep-alive connections as if nothing happened while the server says it
 * is draining (and a second call is refused).  Every worker drains, and
 * the callback runs once the grace period ends. */
static ca_t ca; /* static: the fixture's teardown still uses it after a failure */

static void test_drain_out_of_memory(void **state) {
  fx_t *fx = *state;
  int rc, i;
  st_init();
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  add_routes(fx);
  fx_start(fx, 2);
  /* The allocation after the next fails: with a post per worker, the
   * second worker's. */
  ca_fail_at(&ca, ca_calls(&ca) + 2, 0);
  rc = hr_server_drain(fx->server, 0, 1000, on_drained, NULL);
  ca_fail_at(&ca, 0, 0);
  if (rc != 0) {
    /* A failure must leave the server as it was: not draining, and a
     * drain can be asked again. */
    assert_int_equal(rc, HR_ENOMEM);
    assert_int_equal(hr_server_draining(fx->server), 0);
    assert_int_equal(hr_server_drain(fx->server, 0, 1000, on_drained, NULL), 0);
  }
  /* Either way every worker ends by itself. */
  assert_true(ev_wait(&st.drained, 1, RC_TIMEOUT_MS));
  for (i = 0; i < 2; i++) {
    rc_t *c = rc_connect(fx->port);
    if (c != NULL) rc_close(c);
    assert_null(c);
  }
  assert_int_equal(hr_server_stop(fx->server, 1000), 0);
  fx->started = 0;
  assert_int_equal(ev_count(&st.drained), 1);
  hr_server_free(fx->server);
  fx->server = NULL;
  st_destroy();
}

/* hr_server_drain on one thread while hr_server_stop runs on another:
 * whatever the interleaving, a drain that answered 0 has had its callback
 * run exactly once by the time both calls returned (also when every worker
 * had ended before the drain armed itself). */
typedef struct racer_s {
  hr_server_t *server;
  ev_t go;
  int rc;
} racer_t;

static void *drain_racer(void *arg) {
  racer_t *r = arg;
  ev_wait(&r->go, 1, RC_TIMEOUT_MS);
  r->rc = hr_server_drain(r->server, 0, 1000, on_drained, NULL);
  return NULL;
}

static void test_drain_races_stop(void **state) {
  fx_t *fx = *state;
  int round, drained = 0;
  add_routes(fx);
  for (round = 0; round < 40; round++) {
    racer_t r;
    pthread_t t;
    st_init();
    fx_start(fx, 2);
    r.server = fx->server;
    r.rc = -1;
    ev_init(&r.go);
    assert_int_equal(pthread_create(&t, NULL, drain_racer, &r), 0);
    ev_signal(&r.go);
    assert_int_equal(hr_server_stop(fx->server, 1000), 0);
    pthread_join(t, NULL);
    fx->started = 0;
    if (r.rc == 0) {
      drained++;
      assert_int_equal(ev_count(&st.drained), 1);
    } else {
      assert_int_equal(r.rc, HR_ESTATE);
      assert_int_equal(ev_count(&st.drained), 0);
    }
    hr_server_free(fx->server);
    fx->server = NULL;
    ev_destroy(&r.go);
    st_destroy();
  }
  print_message("drain won the race %d of 40 times\n", drained);
}

/* ---- attached ------------------------------------------------------------ */

static void do_drain(fx_t *fx, void *arg) {
  uint64_t grace = *(uint64_t *)arg;
  st.drain_rc = hr_server_drain(fx->server, grace, 1000, fx_on_shutdown, fx);
  st.drain_again_rc = hr_server_drain(fx->server, grace, 1000, fx_on_shutdown, fx);
}

static void do_close(fx_t *fx, void *arg) {
  (void)arg;
  st.close_rc = hr_server_close(fx->server, 1000, fx_on_shutdown, fx);
}

/* The grace period ends by itself: the shutdown callback runs and the
 * loop empties (fx_join_attached asserts one callback and a clean
 * uv_loop_close). */
static void test_drain_attached(void **state) {
  fx_t *fx = *state;
  uint64_t grace = 0;
  rc_t *c;
  st_init();
  add_routes(fx);
  fx_attach(fx);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "root", 0);
  /* Not from another thread. */
  assert_int_equal(hr_server_drain(fx->server, 0, 0, NULL, NULL), HR_ETHREAD);
  fx_run_on_loop(fx, do_drain, &grace);
  assert_int_equal(st.drain_rc, 0);
  assert_int_equal(st.drain_again_rc, HR_ESTATE);
  fx_join_attached(fx);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  st_destroy();
}

/* hr_server_close during the grace period ends it, and its callback is
 * the one that runs. */
static void test_drain_attached_close(void **state) {
  fx_t *fx = *state;
  uint64_t grace = 60000;
  rc_t *c;
  st_init();
  add_routes(fx);
  fx_attach(fx);
  fx_run_on_loop(fx, do_drain, &grace);
  assert_int_equal(st.drain_rc, 0);
  c = fx_connect(fx); /* still accepting */
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_answer(c, "HTTP/1.1 200 OK", "root", 1);
  fx_run_on_loop(fx, do_close, NULL);
  assert_int_equal(st.close_rc, 0);
  fx_join_attached(fx);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  st_destroy();
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_health_routes),
      T(test_health_routes_in_a_transaction),
      T(test_drain_connections),
      T(test_drain_threads_stop),
      T(test_drain_threads_end),
      T(test_drain_races_stop),
      T(test_drain_out_of_memory),
      T(test_drain_attached),
      T(test_drain_attached_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
