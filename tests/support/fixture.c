/* SPDX-License-Identifier: MIT */
/* Loopback server fixture, shared handlers and response assertions
 * (fixture.h). */
#include "fixture.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* Seconds any single test may take before the watchdog kills the process. */
#define FX_TEST_SECONDS 90

fx_proto_t fx_proto(void) {
  static int proto = -1;
  if (proto < 0) {
    const char *v = getenv("HROUTE_TEST_PROTO");
    if (v == NULL || *v == '\0' || strcmp(v, "h1") == 0) {
      proto = FX_HTTP1;
    } else if (strcmp(v, "h2") == 0) {
      proto = FX_HTTP2;
    } else {
      fprintf(stderr, "HROUTE_TEST_PROTO=%s: want h1 or h2\n", v);
      exit(2);
    }
  }
  return (fx_proto_t)proto;
}

int fx_h2(void) { return fx_proto() == FX_HTTP2; }

const char *fx_version_text(void) { return fx_h2() ? "HTTP/2.0" : "HTTP/1.1"; }

int fx_version(void) { return fx_h2() ? 20 : 11; }

void fx_h1_only(const char *why) {
  if (!fx_h2()) return;
  print_message("skipped over HTTP/2: %s\n", why);
  skip();
}

/* The listener options of the run's protocol: fx->listen's (or the
 * defaults), h2 on over HTTP/2. */
static const hr_listen_options_t *listen_options(const fx_t *fx, hr_listen_options_t *lo) {
  if (!fx_h2()) return fx->listen;
  if (fx->listen != NULL)
    *lo = *fx->listen;
  else
    hr_listen_options_init(lo);
  lo->h2 = HR_H2_ON;
  return lo;
}

int fx_setup(void **state) {
  fx_t *fx = calloc(1, sizeof *fx);
  if (fx == NULL) return -1;
  watchdog(FX_TEST_SECONDS);
  if (hr_router_new(&fx->router, NULL) != 0) {
    free(fx);
    return -1;
  }
  hr_server_options_init(&fx->opts);
  ev_init(&fx->ready);
  ev_init(&fx->ran);
  ta_reset();
  *state = fx;
  return 0;
}

int fx_teardown(void **state) {
  fx_t *fx = *state;
  size_t i;
  if (fx == NULL) return 0;
  for (i = 0; i < fx->nconns; i++) rc_close(fx->conns[i]);
  fx->nconns = 0;
  rc_free_all_responses();
  if (fx->started) fx_stop(fx, 2000);
  if (fx->attached) fx_close_attached(fx, 2000);
  hr_server_free(fx->server);
  hr_router_free(fx->router);
  ev_destroy(&fx->ready);
  ev_destroy(&fx->ran);
  free(fx);
  *state = NULL;
  return 0;
}

int fx_try_start(fx_t *fx, unsigned nthreads) {
  hr_listen_options_t lo;
  const hr_listen_options_t *l = listen_options(fx, &lo);
  int rc = hr_server_new(&fx->server, fx->router, &fx->opts);
  if (rc != 0) return rc;
  rc = l != NULL ? hr_server_listen_ex(fx->server, "127.0.0.1", 0, l)
                 : hr_server_listen(fx->server, "127.0.0.1", 0);
  if (rc == 0) rc = hr_server_start(fx->server, nthreads);
  if (rc != 0) {
    hr_server_free(fx->server);
    fx->server = NULL;
    return rc;
  }
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
  return 0;
}

void fx_start(fx_t *fx, unsigned nthreads) {
  int rc = fx_try_start(fx, nthreads);
  if (rc != 0) fail_msg("server start: %s", hr_err_name(rc));
  assert_true(fx->port > 0);
}

int fx_stop(fx_t *fx, uint64_t deadline_ms) {
  int rc = 0;
  if (fx->started) {
    rc = hr_server_stop(fx->server, deadline_ms);
    fx->started = 0;
    hr_server_free(fx->server);
    fx->server = NULL;
  }
  return rc;
}

/* ---- attached mode ------------------------------------------------------ */

static void fx_async_cb(uv_async_t *h) {
  fx_t *fx = h->data;
  fx_loop_fn fn = fx->fn;
  if (fn != NULL) {
    fx->fn = NULL;
    fn(fx, fx->fn_arg);
    ev_signal(&fx->ran);
  }
}

static void fx_loop_thread(void *arg) {
  fx_t *fx = arg;
  fx->attach_rc = hr_server_attach(fx->server, &fx->loop);
  if (fx->attach_rc == 0) fx->port = hr_server_port(fx->server, 0);
  ev_signal(&fx->ready);
  if (fx->attach_rc != 0) uv_close((uv_handle_t *)&fx->async, NULL);
  uv_run(&fx->loop, UV_RUN_DEFAULT);
}

void fx_attach(fx_t *fx) {
  hr_listen_options_t lo;
  const hr_listen_options_t *l = listen_options(fx, &lo);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(l != NULL ? hr_server_listen_ex(fx->server, "127.0.0.1", 0, l)
                             : hr_server_listen(fx->server, "127.0.0.1", 0),
                   0);
  assert_int_equal(uv_loop_init(&fx->loop), 0);
  assert_int_equal(uv_async_init(&fx->loop, &fx->async, fx_async_cb), 0);
  fx->async.data = fx;
  assert_int_equal(uv_thread_create(&fx->thread, fx_loop_thread, fx), 0);
  assert_true(ev_wait(&fx->ready, 1, RC_TIMEOUT_MS));
  fx->attached = 1;
  if (fx->attach_rc != 0) {
    uv_thread_join(&fx->thread);
    uv_loop_close(&fx->loop);
    fx->attached = 0;
    fail_msg("hr_server_attach: %s", hr_err_name(fx->attach_rc));
  }
  assert_true(fx->port > 0);
}

void fx_run_on_loop(fx_t *fx, fx_loop_fn fn, void *arg) {
  unsigned long before = ev_count(&fx->ran);
  fx->fn_arg = arg;
  fx->fn = fn; /* published to the loop thread by uv_async_send's barrier */
  assert_int_equal(uv_async_send(&fx->async), 0);
  assert_true(ev_wait(&fx->ran, before + 1, RC_TIMEOUT_MS));
}

void fx_on_shutdown(hr_server_t *server, void *udata) {
  fx_t *fx = udata;
  (void)server;
  fx->shutdown_called++;
  uv_close((uv_handle_t *)&fx->async, NULL);
}

static void fx_do_close(fx_t *fx, void *arg) {
  fx->close_rc = hr_server_close(fx->server, *(uint64_t *)arg,
                                 fx_on_shutdown, fx);
}

void fx_close_attached(fx_t *fx, uint64_t deadline_ms) {
  if (!fx->attached) return;
  fx->attached = 0;
  fx_run_on_loop(fx, fx_do_close, &deadline_ms);
  if (fx->close_rc != 0) {
    /* Leave the process in a sane state before failing. */
    fail_msg("hr_server_close: %s", hr_err_name(fx->close_rc));
  }
  fx->attached = 1;
  fx_join_attached(fx);
}

void fx_join_attached(fx_t *fx) {
  if (!fx->attached) return;
  fx->attached = 0;
  uv_thread_join(&fx->thread);
  assert_int_equal(fx->shutdown_called, 1);
  fx->loop_close_rc = uv_loop_close(&fx->loop);
  assert_int_equal(fx->loop_close_rc, 0);
  hr_server_free(fx->server);
  fx->server = NULL;
}

/* ---- connections, stats, routes ----------------------------------------- */

rc_t *fx_connect(fx_t *fx) {
  rc_t *c = fx_h2() ? rc_connect_h2(fx->port) : rc_connect(fx->port);
  if (c == NULL) fail_msg("connect: %s", strerror(rc_connect_errno));
  assert_true(fx->nconns < FX_MAX_CONNS);
  fx->conns[fx->nconns++] = c;
  return c;
}

void fx_use_allocator(fx_t *fx, const hr_allocator_t *a) {
  hr_router_options_t ro;
  hr_router_free(fx->router);
  hr_router_options_init(&ro);
  ro.allocator = a;
  assert_int_equal(hr_router_new(&fx->router, &ro), 0);
  fx->opts.allocator = a;
}

void fx_drop(fx_t *fx, rc_t *c) {
  size_t i;
  for (i = 0; i < fx->nconns; i++) {
    if (fx->conns[i] == c) {
      fx->conns[i] = fx->conns[--fx->nconns];
      break;
    }
  }
  rc_close(c);
}

void fx_stats(fx_t *fx, hr_server_stats_t *st) {
  memset(st, 0, sizeof *st);
  hr_server_stats(fx->server, st);
}

static uint64_t stat_of(const hr_server_stats_t *st, fx_stat_t which) {
  switch (which) {
    case FX_REQUESTS:
      return st->requests;
    case FX_ACCEPTED:
      return st->connections_accepted;
    case FX_ACTIVE:
      return st->connections_active;
    case FX_REJECTED:
      return st->connections_rejected;
    case FX_BAD_REQUESTS:
      return st->bad_requests;
    case FX_EXCHANGES:
      return st->exchanges_in_use;
  }
  return 0;
}

int fx_wait_stat(fx_t *fx, fx_stat_t which, uint64_t n, unsigned ms,
                 uint64_t *last) {
  unsigned long long end = now_ms() + ms;
  hr_server_stats_t st;
  uint64_t v;
  for (;;) {
    fx_stats(fx, &st);
    v = stat_of(&st, which);
    if (last != NULL) *last = v;
    if (v == n) return 1;
    if (now_ms() >= end) return 0;
    sleep_ms(2);
  }
}

int fx_wait_active(fx_t *fx, uint64_t n, unsigned ms) {
  return fx_wait_stat(fx, FX_ACTIVE, n, ms, NULL);
}

void expect_stat(fx_t *fx, fx_stat_t which, uint64_t n) {
  static const char *const names[] = {"requests", "connections_accepted",
                                      "connections_active",
                                      "connections_rejected", "bad_requests",
                                      "exchanges_in_use"};
  uint64_t last = 0;
  if (!fx_wait_stat(fx, which, n, RC_TIMEOUT_MS, &last))
    fail_msg("stats.%s is %llu, want %llu", names[which],
             (unsigned long long)last, (unsigned long long)n);
}

void fx_route_opts(fx_t *fx, const char *methods, const char *pattern,
                   hr_handler_cb cb, void *udata,
                   const hr_route_options_t *opts) {
  int rc = hr_router_add(fx->router, methods, pattern, cb, udata, opts);
  if (rc != 0)
    fail_msg("hr_router_add(%s, %s): %s", methods, pattern, hr_err_name(rc));
}

void fx_route(fx_t *fx, const char *methods, const char *pattern,
              hr_handler_cb cb, void *udata) {
  fx_route_opts(fx, methods, pattern, cb, udata, NULL);
}

/* ---- shared handlers ---------------------------------------------------- */

static ev_t ta_ev;
static pthread_once_t ta_once = PTHREAD_ONCE_INIT;
static unsigned long ta_base;

static void ta_init(void) { ev_init(&ta_ev); }

void ta_reset(void) {
  pthread_once(&ta_once, ta_init);
  ta_base = ev_count(&ta_ev);
}

void ta_count(void) {
  pthread_once(&ta_once, ta_init);
  ev_signal(&ta_ev);
}

unsigned long ta_calls(void) {
  pthread_once(&ta_once, ta_init);
  return ev_count(&ta_ev) - ta_base;
}

int ta_wait_calls(unsigned long n, unsigned ms) {
  pthread_once(&ta_once, ta_init);
  return ev_wait(&ta_ev, ta_base + n, ms);
}

void ta_text(hr_request_t *req, hr_response_t *res, void *udata) {
  const char *s = udata;
  (void)req;
  ta_count();
  hr_response_send(res, 200, s, strlen(s));
}

void ta_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t b = hr_request_body(req);
  (void)udata;
  ta_count();
  hr_response_send(res, 200, b.ptr, b.len);
}

static size_t put(char *out, size_t cap, size_t at, const char *p, size_t n) {
  if (at < cap && n > 0) memcpy(out + at, p, at + n <= cap ? n : cap - at);
  return at + n;
}

size_t ta_format_info(hr_request_t *req, char *out, size_t cap) {
  hr_span_t s;
  char num[64];
  size_t at = 0, i, np;
  if (cap == 0) return 0;
  cap--; /* room for the NUL */
  s = hr_request_method(req);
  at = put(out, cap, at, s.ptr, s.len);
  at = put(out, cap, at, "|", 1);
  s = hr_request_path(req);
  at = put(out, cap, at, s.ptr, s.len);
  at = put(out, cap, at, "|", 1);
  s = hr_request_query(req);
  at = put(out, cap, at, s.ptr, s.len);
  np = hr_request_param_count(req);
  snprintf(num, sizeof num, "|%d|%zu", hr_request_version(req), np);
  at = put(out, cap, at, num, strlen(num));
  for (i = 0; i < np; i++) {
    s = hr_request_param(req, i);
    at = put(out, cap, at, "|", 1);
    at = put(out, cap, at, s.ptr, s.len);
  }
  at = put(out, cap, at, "|", 1);
  s = hr_request_body(req);
  at = put(out, cap, at, s.ptr, s.len);
  if (at > cap) at = cap;
  out[at] = '\0';
  return at;
}

void ta_info(hr_request_t *req, hr_response_t *res, void *udata) {
  char buf[8192];
  size_t n;
  (void)udata;
  ta_count();
  n = ta_format_info(req, buf, sizeof buf);
  hr_response_send(res, 200, buf, n);
}

/* ---- assertions --------------------------------------------------------- */

static void expect_common(rc_t *c, const char *status_line, const char *body,
                          rc_response_t *out, int head) {
  rc_response_t r;
  int rc = rc_read_response(c, &r, head);
  if (rc != RC_OK)
    fail_msg("reading response (expected \"%s\"): rc %d errno %d, got \"%s\"",
             status_line, rc, c->err, r.status_line ? r.status_line : "");
  assert_string_equal(r.status_line, status_line);
  if (body != NULL) {
    assert_int_equal(r.body_len, strlen(body));
    assert_memory_equal(r.body, body, r.body_len);
  }
  if (out != NULL)
    *out = r;
  else
    rc_response_free(&r);
}

void expect_response(rc_t *c, const char *status_line, const char *body,
                     rc_response_t *r) {
  expect_common(c, status_line, body, r, 0);
}

void expect_head_response(rc_t *c, const char *status_line,
                          rc_response_t *r) {
  expect_common(c, status_line, NULL, r, 1);
}

void expect_closed(rc_t *c) {
  int rc = rc_expect_closed(c);
  if (rc <= 0)
    fail_msg("expected the server to close the connection, got %s",
             rc == 0 ? "more bytes" : "nothing (still open)");
}

void expect_bytes(rc_t *c, const char *want) {
  size_t n = strlen(want), got = 0;
  char buf[4096];
  while (got < n) {
    size_t k, want_k = n - got < sizeof buf ? n - got : sizeof buf;
    if (c->off < c->len) { /* what the response reader buffered */
      k = c->len - c->off < want_k ? c->len - c->off : want_k;
      memcpy(buf, c->buf + c->off, k);
      c->off += k;
    } else {
      ssize_t r = recv(c->fd, buf, want_k, 0);
      if (r <= 0) fail_msg("stream ended after %zu of %zu bytes", got, n);
      k = (size_t)r;
    }
    assert_memory_equal(buf, want + got, k);
    got += k;
  }
}

void expect_field(const rc_response_t *r, const char *name, const char *value,
                  int nocase) {
  const char *v = rc_header(r, name);
  if (v == NULL) fail_msg("field %s missing", name);
  assert_int_equal(rc_header_count(r, name), 1);
  if (nocase) {
    if (strcasecmp(v, value) != 0)
      fail_msg("field %s: \"%s\" != \"%s\"", name, v, value);
  } else {
    assert_string_equal(v, value);
  }
}

void expect_no_field(const rc_response_t *r, const char *name) {
  const char *v = rc_header(r, name);
  if (v != NULL) fail_msg("unexpected field %s: %s", name, v);
}

void expect_date(const rc_response_t *r) {
  const char *v = rc_header(r, "Date");
  struct tm tm;
  const char *end;
  time_t t, now = time(NULL);
  if (v == NULL) fail_msg("Date field missing");
  assert_int_equal(rc_header_count(r, "Date"), 1);
  /* IMF-fixdate, RFC 9110 §5.6.7: "Sun, 06 Nov 1994 08:49:37 GMT". */
  assert_int_equal(strlen(v), 29);
  memset(&tm, 0, sizeof tm);
  end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  assert_non_null(end);
  assert_int_equal(*end, '\0');
  t = timegm(&tm);
  assert_true(t > now - 60 && t < now + 60);
}

int allow_equiv(const char *allow, size_t len, const char *base) {
  char buf[512], out[512], prev[64] = "", *tok, *save = NULL;
  size_t at = 0;
  int has_get;
  if (len >= sizeof buf) return 0;
  memcpy(buf, allow, len);
  buf[len] = '\0';
  has_get = strstr(buf, "GET") != NULL;
  out[0] = '\0';
  for (tok = strtok_r(buf, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    if (prev[0] != '\0' && strcmp(prev, tok) >= 0) return 0;
    snprintf(prev, sizeof prev, "%s", tok);
    if (strcmp(tok, "OPTIONS") == 0 && strstr(base, "OPTIONS") == NULL) continue;
    if (strcmp(tok, "HEAD") == 0 && has_get && strstr(base, "HEAD") == NULL)
      continue;
    at += (size_t)snprintf(out + at, sizeof out - at, "%s%s", at ? ", " : "",
                           tok);
    if (at >= sizeof out) return 0;
  }
  /* the separator must be exactly ", " */
  if (len > 0 && (strstr(allow, ",") != NULL)) {
    size_t i;
    for (i = 0; i + 1 < len; i++)
      if (allow[i] == ',' && allow[i + 1] != ' ') return 0;
  }
  return strcmp(out, base) == 0;
}

const char *status_line_of(int code) {
  static __thread char buf[128];
  snprintf(buf, sizeof buf, "HTTP/1.1 %d %s", code, hr_status_reason(code));
  return buf;
}

int fx_flag_set(_Atomic int *flag) {
  int i;
  for (i = 0; i < RC_TIMEOUT_MS; i++) {
    if (atomic_load(flag)) return 1;
    sleep_ms(1);
  }
  return 0;
}

/* One fx_on_loop at a time: the callback to run, and how many ran. */
static hr_post_cb on_loop_cb;
static _Atomic int on_loop_ran;

static void on_loop_run(hr_response_t *res, void *udata) {
  (void)udata;
  if (on_loop_cb != NULL) on_loop_cb(res, NULL);
  atomic_fetch_add(&on_loop_ran, 1);
}

void fx_on_loop(hr_response_t *res, hr_post_cb cb) {
  int before = atomic_load(&on_loop_ran), i;
  on_loop_cb = cb; /* published to the loop by the post's queue */
  assert_int_equal(hr_response_post(res, on_loop_run, NULL), 0);
  for (i = 0; i < RC_TIMEOUT_MS && atomic_load(&on_loop_ran) == before; i++) sleep_ms(1);
  assert_int_equal(atomic_load(&on_loop_ran), before + 1);
}
