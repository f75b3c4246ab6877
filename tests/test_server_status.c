/* SPDX-License-Identifier: MIT */
/*
 * The right status, in the right order (issue 24 §2), over HTTP/1.1 and
 * HTTP/2:
 *   - the route and its head middleware decide before the body limit: an
 *     unauthenticated 5 MB upload gets the middleware's 401, an upload to a
 *     GET-only path the router's 405, not the server's 413; the body is
 *     then dropped (the connection kept) or, past 256 KiB, the HTTP/1.1
 *     connection closed after the answer;
 *   - a client that goes away in the middle of a body is a client abort,
 *     HR_STATUS_CLIENT_CLOSED (499) to the after-middleware and the access
 *     log, counted in client_aborts and not in bad_requests, and nothing is
 *     answered (not a 400);
 *   - a path the router refuses (a dot segment behind %2F) is a 400 that
 *     keeps the connection;
 *   - a 204 or 304 carries none of the route's constant content fields
 *     (Content-Type), the others still.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

/* What the after-middleware and the access log saw, in order. */
static struct {
  pthread_mutex_t mu;
  char afters[256];
  char lines[256];
  int last_entry_status;
  ev_t ev_after, ev_line;
} seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
static unsigned long afters_seen, lines_seen;
static ev_t got_piece; /* a streaming body callback had a piece */

static void append(char *buf, size_t cap, int status) {
  size_t n = strlen(buf);
  snprintf(buf + n, cap - n, "%d,", status);
}

static void rec_after(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)udata;
  pthread_mutex_lock(&seen.mu);
  append(seen.afters, sizeof seen.afters, status);
  pthread_mutex_unlock(&seen.mu);
  ev_signal(&seen.ev_after);
}

static void rec_line(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  (void)ctx;
  (void)line;
  (void)len;
  pthread_mutex_lock(&seen.mu);
  append(seen.lines, sizeof seen.lines, e->status);
  seen.last_entry_status = e->status;
  pthread_mutex_unlock(&seen.mu);
  ev_signal(&seen.ev_line);
}

/* Waits for `n` more after-middleware calls and access-log lines and
 * compares what both saw ("401,413,"), then clears them. */
static void expect_seen(unsigned long n, const char *want) {
  afters_seen += n;
  lines_seen += n;
  if (!ev_wait(&seen.ev_after, afters_seen, RC_TIMEOUT_MS) ||
      !ev_wait(&seen.ev_line, lines_seen, RC_TIMEOUT_MS))
    fail_msg("after-middleware \"%s\", access log \"%s\", want \"%s\"", seen.afters,
             seen.lines, want);
  pthread_mutex_lock(&seen.mu);
  if (strcmp(seen.afters, want) != 0 || strcmp(seen.lines, want) != 0) {
    char a[256], l[256];
    snprintf(a, sizeof a, "%s", seen.afters);
    snprintf(l, sizeof l, "%s", seen.lines);
    pthread_mutex_unlock(&seen.mu);
    fail_msg("after-middleware \"%s\", access log \"%s\", want \"%s\"", a, l, want);
  }
  seen.afters[0] = seen.lines[0] = '\0';
  pthread_mutex_unlock(&seen.mu);
}

static int st_setup(void **state) {
  ev_init(&seen.ev_after);
  ev_init(&seen.ev_line);
  ev_init(&got_piece);
  afters_seen = lines_seen = 0;
  seen.afters[0] = seen.lines[0] = '\0';
  return fx_setup(state);
}

static int st_teardown(void **state) {
  int rc = fx_teardown(state);
  ev_destroy(&seen.ev_after);
  ev_destroy(&seen.ev_line);
  ev_destroy(&got_piece);
  return rc;
}

/* Every answer passes rec_after; every exchange, rec_line. */
static void watch(fx_t *fx) {
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, rec_after, NULL), 0);
  fx->opts.access_log = rec_line;
}

/* ---- authentication before size ------------------------------------------ */

static hr_next_t mw_key(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t k;
  (void)udata;
  if (hr_request_field(req, HR_SPAN_LIT("X-Key"), NULL, &k) == 0 &&
      hr_span_eq(k, HR_SPAN_LIT("s3cret")))
    return HR_NEXT;
  hr_response_send(res, 401, "no key", 6);
  return HR_ANSWERED;
}

/* Sends the head of a POST to `path` announcing `length` bytes, with
 * `extra` fields, and 4 KiB of its body. */
static void send_upload(rc_t *c, const char *path, const char *extra, unsigned long length) {
  static char piece[4096];
  char head[256];
  memset(piece, 'x', sizeof piece);
  snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: a\r\n%sContent-Length: %lu\r\n\r\n",
           path, extra, length);
  assert_int_equal(rc_send_str(c, head), 0);
  assert_int_equal(rc_send(c, piece, sizeof piece), 0);
}

/* HTTP/1.1 ends a connection with more than 256 KiB of body left to skip,
 * and says so; HTTP/2 resets the stream alone. */
static void expect_ends(rc_t *c, const rc_response_t *r) {
  if (fx_h2()) return;
  expect_field(r, "Connection", "close", 0);
  expect_closed(c);
}

static void test_auth_before_size(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  rc_t *c;
  char body[2000];
  watch(fx);
  assert_int_equal(hr_router_use_head(fx->router, NULL, "/up", mw_key, NULL), 0);
  fx_route(fx, "POST", "/up", ta_echo, NULL);
  fx_route(fx, "GET", "/free", ta_text, "free");
  fx->opts.max_body_bytes = 1000;
  fx_start(fx, 1);
  /* 5 MB without the key: the head middleware's 401, not 413. */
  c = fx_connect(fx);
  send_upload(c, "/up", "", 5000000);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "no key", &r);
  expect_ends(c, &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  expect_seen(1, "401,");
  /* With the key, the limit speaks. */
  c = fx_connect(fx);
  send_upload(c, "/up", "X-Key: s3cret\r\n", 5000000);
  expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, &r);
  expect_ends(c, &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  expect_seen(1, "413,");
  /* 5 MB to a GET-only path: the router's 405, not 413. */
  c = fx_connect(fx);
  send_upload(c, "/free", "", 5000000);
  expect_response(c, "HTTP/1.1 405 Method Not Allowed", "Method Not Allowed\n", &r);
  expect_field(&r, "Allow", "GET, HEAD, OPTIONS", 0);
  expect_ends(c, &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  expect_seen(1, "405,");
  /* Over the limit but within what is skipped: 405, the body dropped, and
   * the connection goes on. */
  c = fx_connect(fx);
  memset(body, 'y', sizeof body);
  assert_int_equal(rc_send_str(c, "POST /free HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n"),
                   0);
  assert_int_equal(rc_send(c, body, sizeof body), 0);
  assert_int_equal(rc_send_str(c, "GET /free HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 405 Method Not Allowed", "Method Not Allowed\n", &r);
  expect_no_field(&r, "Connection");
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", "free", NULL);
  fx_drop(fx, c);
  expect_seen(2, "405,200,");
}

/* A head middleware that answers later: it keeps the response for the
 * test thread, which posts the answer. */
static _Atomic(hr_response_t *) later_res;
static ev_t later_called;

static hr_next_t mw_later(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  atomic_store(&later_res, res);
  ev_signal(&later_called);
  return HR_ANSWERED;
}

static void answer_401(hr_response_t *res, void *udata) {
  (void)udata;
  hr_response_send(res, 401, "later", 5);
}

/* The head middleware answers from a post, after the body's first 4 KiB
 * (over the 1000-byte limit) came: the body waits, unread, for its answer,
 * which is the 401, not a 413. */
static void test_auth_later_before_size(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  rc_t *c;
  watch(fx);
  ev_init(&later_called);
  assert_int_equal(hr_router_use_head(fx->router, NULL, "/up", mw_later, NULL), 0);
  fx_route(fx, "POST", "/up", ta_echo, NULL);
  fx->opts.max_body_bytes = 1000;
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_upload(c, "/up", "", 5000000);
  assert_true(ev_wait(&later_called, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_response_post(atomic_load(&later_res), answer_401, NULL), 0);
  expect_response(c, "HTTP/1.1 401 Unauthorized", "later", &r);
  expect_ends(c, &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  expect_seen(1, "401,");
  ev_destroy(&later_called);
}

/* ---- a client that went away ------------------------------------------------ */

static void on_piece(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  hr_response_t *res = udata;
  (void)req;
  (void)chunk;
  if (status == 0) {
    ev_signal(&got_piece);
    return;
  }
  /* The client left: the server answered nothing, the response is over
   * (the completing call returns HR_ECLOSED and releases it). */
  assert_int_equal(status, HR_ECLOSED);
  hr_response_send(res, 500, NULL, 0);
}

static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  hr_request_read_body(req, on_piece, res);
}

/* The client sends the head of a POST to `path` and 10 of its 100 body
 * bytes, then goes: with a FIN (`rst` 0) or a reset.  Before it goes, the
 * server had `pieces` body pieces in all (a streaming route), or (0) the
 * request's exchange exists (a buffered route; a FIN is read after the
 * bytes before it). */
static void leave_mid_body(fx_t *fx, const char *path, int rst, unsigned long pieces) {
  rc_t *c = fx_connect(fx);
  char req[128];
  snprintf(req, sizeof req, "POST %s HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123456789",
           path);
  assert_int_equal(rc_send_str(c, req), 0);
  if (pieces > 0)
    assert_true(ev_wait(&got_piece, pieces, RC_TIMEOUT_MS));
  else
    expect_stat(fx, FX_EXCHANGES, 1);
  if (rst) rc_set_rst_on_close(c);
  fx_drop(fx, c);
}

static void test_client_abort(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  hr_server_stats_t st;
  watch(fx);
  hr_route_options_init(&o);
  o.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/x", h_stream, NULL, &o);
  fx_start(fx, 1);
  assert_int_equal(HR_STATUS_CLIENT_CLOSED, 499);
  leave_mid_body(fx, "/x", 0, 1); /* FIN */
  expect_seen(1, "499,");
  leave_mid_body(fx, "/x", 1, 2); /* reset */
  expect_seen(1, "499,");
  fx_stats(fx, &st);
  assert_int_equal(st.client_aborts, 2);
  assert_int_equal(st.bad_requests, 0);
  assert_int_equal(st.requests, 0); /* no response completed */
}

/* A buffered route: the handler never ran; a FIN in the middle of the body
 * is a client abort all the same. */
static void test_client_abort_buffered(void **state) {
  fx_t *fx = *state;
  hr_server_stats_t st;
  watch(fx);
  fx_route(fx, "POST", "/x", ta_echo, NULL);
  fx_start(fx, 1);
  leave_mid_body(fx, "/x", 0, 0);
  expect_seen(1, "499,");
  fx_stats(fx, &st);
  assert_int_equal(st.client_aborts, 1);
  assert_int_equal(st.bad_requests, 0);
  assert_int_equal(ta_calls(), 0);
}

/* ---- a refused path keeps the connection ------------------------------------- */

static void test_refused_path_keeps_connection(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  rc_t *c;
  watch(fx);
  fx_route(fx, "GET", "/{*path}", ta_text, "file");
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /..%2fsecret.txt HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /public.txt HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "Bad Request\n", &r);
  assert_false(rc_told_to_close(c, &r));
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", "file", NULL);
  fx_drop(fx, c);
  expect_seen(2, "400,200,");
  expect_stat(fx, FX_BAD_REQUESTS, 1);
}

/* ---- no content fields on 204 and 304 ----------------------------------------- */

static void h_code(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t v = hr_request_param(req, 0);
  (void)udata;
  if (hr_span_eq(v, HR_SPAN_LIT("204")))
    hr_response_send(res, 204, NULL, 0);
  else if (hr_span_eq(v, HR_SPAN_LIT("304")))
    hr_response_send(res, 304, NULL, 0);
  else
    hr_response_send(res, 200, "{}", 2);
}

static void test_no_content_fields_on_204_304(void **state) {
#define S(x) {x, sizeof x - 1}
  static const hr_field_t fields[] = {
      {S("Content-Type"), S("application/json")},
      {S("X-Kind"), S("k")},
      {S("Content-Language"), S("en")},
  };
#undef S
  fx_t *fx = *state;
  hr_route_options_t o;
  rc_response_t r;
  rc_t *c;
  hr_route_options_init(&o);
  o.fields = fields;
  o.nfields = 3;
  fx_route_opts(fx, "GET", "/n/:code", h_code, NULL, &o);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /n/204 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 204 No Content", "", &r);
  expect_no_field(&r, "Content-Type");
  expect_no_field(&r, "Content-Language");
  expect_field(&r, "X-Kind", "k", 0);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /n/304 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 304 Not Modified", "", &r);
  expect_no_field(&r, "Content-Type");
  expect_no_field(&r, "Content-Language");
  expect_field(&r, "X-Kind", "k", 0);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /n/200 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "{}", &r);
  expect_field(&r, "Content-Type", "application/json", 0);
  expect_field(&r, "Content-Language", "en", 0);
  expect_field(&r, "X-Kind", "k", 0);
  rc_response_free(&r);
  fx_drop(fx, c);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, st_setup, st_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_auth_before_size),
      T(test_auth_later_before_size),
      T(test_client_abort),
      T(test_client_abort_buffered),
      T(test_refused_path_keeps_connection),
      T(test_no_content_fields_on_204_304),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
