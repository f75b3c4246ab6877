/* SPDX-License-Identifier: MIT */
/*
 * Lifetimes around a route's invoker, over loopback on two loops:
 *   - a request in flight when its route is removed or replaced (its
 *     handler still running, or its body still arriving) completes with
 *     the old version (its constant fields, its udata) even after the old
 *     tables were reclaimed; the next request sees the new table; a
 *     router and server on a counting allocator end with nothing live;
 *   - per-loop handler contexts: made on each loop during hr_server_start,
 *     handed to the handler, destroyed on the same loop thread after the
 *     route is replaced and at shutdown, never while a request that
 *     received one is still in flight, and not because middleware was
 *     added; a create failure answers 503 and is retried;
 *   - per-request contexts: made and destroyed once per exchange, after
 *     the response completed, aborted exchanges included.
 * Runs under AddressSanitizer and ThreadSanitizer.
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-bp.h>

#include "util/rcu.h"

#include "fixture.h"
#include "held.h"

static void send_get(rc_t *c, const char *target) {
  char req[256];
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", target);
  assert_int_equal(rc_send_str(c, req), 0);
}

/* ---- requests in flight across removal and replacement ------------------ */

static ca_t ca;

/* A router and a server on the counting allocator, and a held route. */
static void start_counted(fx_t *fx, const char *version) {
  hr_field_t f = {HR_SPAN_LIT("X-Version"), {version, strlen(version)}};
  hr_route_options_t o;
  fx_use_allocator(fx, &ca.hook);
  hr_route_options_init(&o);
  o.fields = &f;
  o.nfields = 1;
  fx_route_opts(fx, "GET", "/slow", held_handler, (void *)version, &o);
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_start(fx, 2);
}

/* Changes the table a few more times and waits until every replaced table
 * was reclaimed: the held exchange can then only be kept alive by its own
 * reference on its invoker. */
static void churn_and_reclaim(fx_t *fx) {
  int i;
  for (i = 0; i < 4; i++) {
    fx_route(fx, "GET", "/churn", ta_text, "churn");
    assert_int_equal(hr_router_remove(fx->router, "GET", "/churn"), 0);
  }
  hr__rcu_barrier(); /* every queued call_rcu reclamation has run */
}

static void stop_counted(fx_t *fx) {
  assert_int_equal(fx_stop(fx, 2000), 0);
  hr_router_free(fx->router);
  fx->router = NULL;
  assert_int_equal(ca_live(&ca), 0); /* no leak */
}

static void expect_version(rc_t *c, const char *status, const char *body,
                           const char *version) {
  rc_response_t r;
  expect_response(c, status, body, &r);
  if (version != NULL)
    expect_field(&r, "X-Version", version, 0);
  else
    expect_no_field(&r, "X-Version");
  rc_response_free(&r);
}

static void test_remove_in_flight(void **state) {
  fx_t *fx = *state;
  rc_t *c1, *c2;
  start_counted(fx, "old");
  c1 = fx_connect(fx);
  c2 = fx_connect(fx);
  assert_int_equal(rc_send_str(c1, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_router_remove(fx->router, "GET", "/slow"), 0);
  assert_int_equal(hr_router_remove(fx->router, "GET", "/slow"), HR_ENOTFOUND);
  /* pipelined behind the held request, sent after the removal returned */
  assert_int_equal(rc_send_str(c1, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_send_str(c2, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_version(c2, "HTTP/1.1 404 Not Found", NULL, NULL);
  churn_and_reclaim(fx);
  /* completes with the old handler's data and the old route's fields */
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), 0);
  expect_version(c1, "HTTP/1.1 200 OK", "old", "old");
  expect_version(c1, "HTTP/1.1 404 Not Found", NULL, NULL);
  assert_int_equal(ev_count(&held_default.ev_held), 1);
  stop_counted(fx);
}

static void test_replace_in_flight(void **state) {
  fx_t *fx = *state;
  hr_field_t f = {HR_SPAN_LIT("X-Version"), HR_SPAN_INIT("new")};
  hr_route_options_t o;
  rc_t *c1, *c2;
  start_counted(fx, "old");
  c1 = fx_connect(fx);
  c2 = fx_connect(fx);
  assert_int_equal(rc_send_str(c1, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  hr_route_options_init(&o);
  o.fields = &f;
  o.nfields = 1;
  o.replace = 1;
  fx_route_opts(fx, "GET", "/slow", ta_text, "new", &o);
  assert_int_equal(rc_send_str(c2, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_version(c2, "HTTP/1.1 200 OK", "new", "new");
  assert_int_equal(rc_send_str(c1, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  churn_and_reclaim(fx);
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), 0);
  expect_version(c1, "HTTP/1.1 200 OK", "old", "old");
  expect_version(c1, "HTTP/1.1 200 OK", "new", "new");
  /* and a second replacement while nothing is in flight */
  f.value = HR_SPAN_LIT("newer");
  fx_route_opts(fx, "GET", "/slow", ta_text, "newer", &o);
  assert_int_equal(rc_send_str(c2, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_version(c2, "HTTP/1.1 200 OK", "newer", "newer");
  stop_counted(fx);
}

/* The client leaves while its request is held and the route is removed:
 * the late completion answers HR_ECLOSED and nothing leaks. */
static void test_remove_in_flight_client_gone(void **state) {
  fx_t *fx = *state;
  rc_t *c1;
  start_counted(fx, "old");
  c1 = fx_connect(fx);
  assert_int_equal(rc_send_str(c1, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_router_remove(fx->router, "GET", "/slow"), 0);
  fx_drop(fx, c1);
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  churn_and_reclaim(fx);
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), HR_ECLOSED);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  stop_counted(fx);
}

/* Matched (100 Continue sent), body not yet arrived: the route goes; the
 * body then completes the request with the old handler. */
static void test_remove_while_body_pending(void **state) {
  fx_t *fx = *state;
  hr_field_t f = {HR_SPAN_LIT("X-Version"), HR_SPAN_INIT("up")};
  hr_route_options_t o;
  rc_t *c1, *c2;
  start_counted(fx, "old");
  hr_route_options_init(&o);
  o.fields = &f;
  o.nfields = 1;
  fx_route_opts(fx, "POST", "/up", ta_echo, NULL, &o);
  /* Another POST route stays (POST /up is a 404 once removed either way:
   * POST is a standard method). */
  fx_route(fx, "POST", "/elsewhere", ta_echo, NULL);
  c1 = fx_connect(fx);
  c2 = fx_connect(fx);
  assert_int_equal(rc_send_str(c1, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n"
                                   "Expect: 100-continue\r\n\r\n"), 0);
  expect_response(c1, "HTTP/1.1 100 Continue", NULL, NULL);
  assert_int_equal(hr_router_remove(fx->router, "POST", "/up"), 0);
  churn_and_reclaim(fx);
  assert_int_equal(rc_send_str(c2, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n"
                                   "late"), 0);
  expect_version(c2, "HTTP/1.1 404 Not Found", NULL, NULL);
  assert_int_equal(rc_send_str(c1, "body"), 0);
  expect_version(c1, "HTTP/1.1 200 OK", "body", "up");
  assert_int_equal(rc_send_str(c1, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n"
                                   "next"), 0);
  expect_version(c1, "HTTP/1.1 404 Not Found", NULL, NULL);
  stop_counted(fx);
}

/* ---- handler contexts ------------------------------------------------------ */

typedef struct lctx_s {
  uv_loop_t *loop;
  uv_thread_t thread;
  int id;
  atomic_int inflight; /* requests holding this context */
  int destroyed;
} lctx_t;

static struct {
  pthread_mutex_t mu;
  lctx_t *made[32];
  int nmade;
  int bad;           /* wrong udata, wrong thread, destroyed in use... */
  char why[160];
  atomic_int fail_create;
  atomic_int park_next; /* the next h_lctx waits for `release` */
  ev_t created, destroyed, parked, release;
} lc;

static const char *const lc_tag = "route udata";

static void lc_init(void) {
  memset(&lc, 0, sizeof lc);
  pthread_mutex_init(&lc.mu, NULL);
  ev_init(&lc.created);
  ev_init(&lc.destroyed);
  ev_init(&lc.parked);
  ev_init(&lc.release);
}

static void lc_bad(const char *why) {
  if (lc.bad++ == 0) snprintf(lc.why, sizeof lc.why, "%s", why);
}

static void lc_done(void) {
  int i;
  for (i = 0; i < lc.nmade; i++) free(lc.made[i]);
  ev_destroy(&lc.created);
  ev_destroy(&lc.destroyed);
  ev_destroy(&lc.parked);
  ev_destroy(&lc.release);
  pthread_mutex_destroy(&lc.mu);
}

static int lc_create(void *udata, uv_loop_t *loop, void **ctx) {
  lctx_t *x = NULL;
  if (atomic_load(&lc.fail_create) || (x = calloc(1, sizeof *x)) == NULL) return -1;
  x->loop = loop;
  x->thread = uv_thread_self();
  pthread_mutex_lock(&lc.mu);
  if (udata != lc_tag) lc_bad("create: wrong udata");
  if (lc.nmade == (int)(sizeof lc.made / sizeof lc.made[0])) {
    lc_bad("too many contexts");
    pthread_mutex_unlock(&lc.mu);
    free(x);
    return -1;
  }
  x->id = lc.nmade;
  lc.made[lc.nmade++] = x;
  pthread_mutex_unlock(&lc.mu);
  *ctx = x;
  ev_signal(&lc.created);
  return 0;
}

static void lc_destroy(void *udata, void *ctx) {
  lctx_t *x = ctx;
  uv_thread_t self = uv_thread_self();
  pthread_mutex_lock(&lc.mu);
  if (udata != lc_tag) lc_bad("destroy: wrong udata");
  if (!uv_thread_equal(&x->thread, &self)) lc_bad("destroy: not on the loop's thread");
  if (x->destroyed++) lc_bad("destroyed twice");
  if (atomic_load(&x->inflight) != 0) lc_bad("destroyed while a request using it is in flight");
  pthread_mutex_unlock(&lc.mu);
  ev_signal(&lc.destroyed); /* the memory stays until lc_done */
}

/* Answers "ctx <id>" when `udata` is this loop's live context. */
static void h_lctx(hr_request_t *req, hr_response_t *res, void *udata) {
  lctx_t *x = udata;
  uv_thread_t self = uv_thread_self();
  char b[32];
  int n;
  pthread_mutex_lock(&lc.mu);
  n = x->loop == hr_request_loop(req) && uv_thread_equal(&x->thread, &self) &&
      !x->destroyed;
  pthread_mutex_unlock(&lc.mu);
  if (!n) {
    hr_response_send(res, 500, "bad ctx", 7);
    return;
  }
  if (atomic_exchange(&lc.park_next, 0)) {
    /* Holds this loop, so that the other one takes the next connection. */
    unsigned long k = ev_count(&lc.release);
    ev_signal(&lc.parked);
    if (!ev_wait(&lc.release, k + 1, 10000)) lc_bad("never released");
  }
  n = snprintf(b, sizeof b, "ctx %d", x->id);
  hr_response_send(res, 200, b, (size_t)n);
}

static void loop_route(fx_t *fx, const char *pattern, hr_handler_cb h, int replace) {
  hr_route_options_t o;
  hr_route_options_init(&o);
  o.context_scope = HR_CONTEXT_LOOP;
  o.context_create = lc_create;
  o.context_destroy = lc_destroy;
  o.replace = replace;
  fx_route_opts(fx, "GET", pattern, h, (void *)lc_tag, &o);
}

/* A request on each of the two loops, answered by contexts `a` and `b` in
 * some order: the first connection's request holds its loop (h_lctx
 * parks), so the second connection can only be taken by the other loop. */
static void reach_both(fx_t *fx, int a, int b) {
  rc_t *c1 = fx_connect(fx), *c2;
  rc_response_t r1, r2;
  unsigned long parked = ev_count(&lc.parked);
  int x, y;
  atomic_store(&lc.park_next, 1);
  send_get(c1, "/loop");
  assert_true(ev_wait(&lc.parked, parked + 1, 10000));
  c2 = fx_connect(fx);
  send_get(c2, "/loop");
  expect_response(c2, "HTTP/1.1 200 OK", NULL, &r2);
  ev_signal(&lc.release);
  expect_response(c1, "HTTP/1.1 200 OK", NULL, &r1);
  x = atoi(r1.body + 4);
  y = atoi(r2.body + 4);
  rc_response_free(&r1);
  rc_response_free(&r2);
  fx_drop(fx, c1);
  fx_drop(fx, c2);
  if (!((x == a && y == b) || (x == b && y == a)))
    fail_msg("answered by ctx %d and ctx %d, want %d and %d", x, y, a, b);
}

static void test_loop_context(void **state) {
  fx_t *fx = *state;
  loop_route(fx, "/loop", h_lctx, 0);
  fx_start(fx, 2);
  /* made during hr_server_start, on each loop, before any request */
  assert_int_equal(ev_count(&lc.created), 2);
  assert_ptr_not_equal(lc.made[0]->loop, lc.made[1]->loop);
  {
    uv_thread_t self = uv_thread_self();
    assert_false(uv_thread_equal(&lc.made[0]->thread, &lc.made[1]->thread));
    assert_false(uv_thread_equal(&lc.made[0]->thread, &self));
    assert_false(uv_thread_equal(&lc.made[1]->thread, &self));
  }
  reach_both(fx, 0, 1);
  /* replaced: the old contexts go on their loops, within about a second */
  loop_route(fx, "/loop", h_lctx, 1);
  assert_true(ev_wait(&lc.destroyed, 2, 5000));
  assert_int_equal(lc.made[0]->destroyed + lc.made[1]->destroyed, 2);
  /* the new version makes its own at each loop's first request */
  reach_both(fx, 2, 3);
  assert_int_equal(ev_count(&lc.created), 4);
  assert_int_equal(fx_stop(fx, 2000), 0);
  /* shutdown destroyed the rest, each on its loop's thread */
  assert_int_equal(ev_count(&lc.destroyed), 4);
  if (lc.bad) fail_msg("%s", lc.why);
}

static void test_loop_context_create_fails(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  atomic_store(&lc.fail_create, 1);
  loop_route(fx, "/loop", h_lctx, 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_get(c, "/loop");
  expect_response(c, "HTTP/1.1 503 Service Unavailable", NULL, NULL);
  atomic_store(&lc.fail_create, 0);
  send_get(c, "/loop"); /* tried again */
  expect_response(c, "HTTP/1.1 200 OK", "ctx 0", NULL);
  assert_int_equal(fx_stop(fx, 2000), 0);
  assert_int_equal(ev_count(&lc.created), 1);
  assert_int_equal(ev_count(&lc.destroyed), 1);
  if (lc.bad) fail_msg("%s", lc.why);
}

/* A request holds its loop context while the route is replaced. */
static void h_lctx_held(hr_request_t *req, hr_response_t *res, void *udata) {
  lctx_t *x = udata;
  (void)req;
  atomic_fetch_add(&x->inflight, 1);
  held_take(&held_default, res);
}

static void test_loop_context_outlives_request(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  loop_route(fx, "/held", h_lctx_held, 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_get(c, "/held");
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  loop_route(fx, "/held", h_lctx, 1);
  /* The sweep that destroys replaced contexts runs about every second:
   * give it two chances to (wrongly) destroy the one still in use (a
   * destroy seen here is reported by lc_destroy; no assertion while the
   * response is held, or the shutdown would wait for it). */
  ev_wait(&lc.destroyed, 1, 2500);
  atomic_fetch_sub(&lc.made[0]->inflight, 1); /* the handler is done with it */
  assert_int_equal(held_complete(&held_default, 1, 200, "done"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "done", NULL);
  assert_true(ev_wait(&lc.destroyed, 1, 5000)); /* and then it goes */
  assert_int_equal(fx_stop(fx, 2000), 0);
  if (lc.bad) fail_msg("%s", lc.why);
}

/* Per request: made before the handler, destroyed after the response
 * completed (the completion still uses it: ASan would see a use after
 * free), also when the client left. */
static void h_rctx(hr_request_t *req, hr_response_t *res, void *udata) {
  lctx_t *x = udata;
  char b[32];
  int n = snprintf(b, sizeof b, "req %d", x->id);
  if (hr_span_eq(hr_request_query(req), HR_SPAN_LIT("hold"))) {
    atomic_fetch_add(&x->inflight, 1);
    held_take(&held_default, res);
    return;
  }
  hr_response_send(res, 200, b, (size_t)n);
}

static void late_send(hr_response_t *res, void *udata) {
  lctx_t *x = udata;
  atomic_fetch_sub(&x->inflight, 1); /* reads the context: still alive */
  held_default.send_rc = hr_response_send(res, 200, "late", 4);
  ev_signal(&held_default.ev_done);
}

static void test_request_context(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  rc_t *c;
  int i;
  hr_route_options_init(&o);
  o.context_scope = HR_CONTEXT_REQUEST;
  o.context_create = lc_create;
  o.context_destroy = lc_destroy;
  fx_route_opts(fx, "GET", "/req", h_rctx, (void *)lc_tag, &o);
  fx_start(fx, 2);
  c = fx_connect(fx);
  for (i = 0; i < 3; i++) {
    char want[16];
    snprintf(want, sizeof want, "req %d", i);
    send_get(c, "/req");
    expect_response(c, "HTTP/1.1 200 OK", want, NULL);
    assert_true(ev_wait(&lc.destroyed, (unsigned long)i + 1, RC_TIMEOUT_MS));
  }
  /* three pipelined */
  assert_int_equal(rc_send_str(c, "GET /req HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /req HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /req HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "req 3", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "req 4", NULL);
  expect_response(c, "HTTP/1.1 200 OK", "req 5", NULL);
  assert_true(ev_wait(&lc.destroyed, 6, RC_TIMEOUT_MS));
  /* aborted: the client leaves, the handler completes later */
  send_get(c, "/req?hold");
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  fx_drop(fx, c);
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_response_post(held_default.res, late_send, lc.made[6]), 0);
  assert_true(ev_wait(&held_default.ev_done, 1, RC_TIMEOUT_MS));
  assert_int_equal(held_default.send_rc, HR_ECLOSED);
  assert_true(ev_wait(&lc.destroyed, 7, RC_TIMEOUT_MS));
  /* create fails: 503, no handler, nothing to destroy */
  atomic_store(&lc.fail_create, 1);
  c = fx_connect(fx);
  send_get(c, "/req");
  expect_response(c, "HTTP/1.1 503 Service Unavailable", NULL, NULL);
  atomic_store(&lc.fail_create, 0);
  send_get(c, "/req");
  expect_response(c, "HTTP/1.1 200 OK", "req 7", NULL);
  assert_int_equal(fx_stop(fx, 2000), 0);
  assert_int_equal(ev_count(&lc.created), 8);
  assert_int_equal(ev_count(&lc.destroyed), 8);
  if (lc.bad) fail_msg("%s", lc.why);
}

/* hr_router_use recompiles every invoker, but the route was neither
 * replaced nor removed: its per-loop context stays. */
static hr_next_t mw_nop(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
  return HR_NEXT;
}

static void test_loop_context_kept_by_middleware(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  loop_route(fx, "/loop", h_lctx, 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_get(c, "/loop");
  expect_response(c, "HTTP/1.1 200 OK", "ctx 0", NULL);
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, mw_nop, NULL, NULL), 0);
  send_get(c, "/loop");
  expect_response(c, "HTTP/1.1 200 OK", "ctx 0", NULL);
  assert_int_equal(fx_stop(fx, 2000), 0);
  assert_int_equal(ev_count(&lc.created), 1);
  assert_int_equal(ev_count(&lc.destroyed), 1);
  if (lc.bad) fail_msg("%s", lc.why);
}

/* Everything a test shares, made before it and freed after its fixture
 * (whose teardown may still destroy contexts or free through `ca`), also
 * when an assertion failed. */
static int lt_setup(void **state) {
  ca_init(&ca);
  lc_init();
  held_init(&held_default);
  return fx_setup(state);
}

static int lt_teardown(void **state) {
  int rc;
  held_release(&held_default);
  rc = fx_teardown(state);
  held_destroy(&held_default);
  lc_done();
  ca_destroy(&ca);
  return rc;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, lt_setup, lt_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_remove_in_flight),
      T(test_replace_in_flight),
      T(test_remove_in_flight_client_gone),
      T(test_remove_while_body_pending),
      T(test_loop_context),
      T(test_loop_context_create_fails),
      T(test_loop_context_outlives_request),
      T(test_loop_context_kept_by_middleware),
      T(test_request_context),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
