/* SPDX-License-Identifier: MIT */
/*
 * events: a clock as server-sent events (include/hroute/sse.h).  GET /clock
 * is a text/event-stream: every --interval-ms (1000) an event "tick" whose
 * data is the time (UTC, ISO 8601) and whose id counts up; a client that
 * reconnects with Last-Event-ID N goes on from N + 1, as EventSource does
 * by itself after a dropped connection.  Between events a comment line
 * keeps the connection seen as live (--heartbeat-ms, 15000).  GET / is a
 * page that shows the clock with EventSource.
 *
 *   events [--host ADDR] [--port N] [--interval-ms N] [--heartbeat-ms N]
 *   curl -N http://127.0.0.1:8083/clock
 *
 * One loop (hr_server_attach on libuv's default loop); each stream has its
 * own timer on it.  SIGINT and SIGTERM shut down gracefully: every stream
 * open is ended (its client sees a complete response, and an EventSource
 * reconnects, elsewhere), then the server closes.
 */
/* uv.h needs POSIX types (pthread_rwlock_t) that a strict -std=c11 hides;
 * ask for them unless the build already chose a feature set. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "hroute.h"

/* How long a shutdown waits before cutting the streams. */
#define SHUTDOWN_DEADLINE_MS 1000

typedef struct options_s {
  const char *host;
  int port;
  uint32_t interval_ms, heartbeat_ms;
} options_t;

/* ---- one stream --------------------------------------------------------------- */

typedef struct feed_s {
  hr_sse_t *sse;
  uv_timer_t timer;
  uint64_t next_id;
  struct feed_s *prev, *next; /* the open streams, for a graceful shutdown */
} feed_t;

static feed_t *feeds; /* the loop's thread only */

static void feed_freed(uv_handle_t *h) { free(h->data); }

/* Ends the stream (the last chunk: the client sees the response complete,
 * and an EventSource reconnects) and, once its timer is closed, frees it. */
static void feed_end(feed_t *c) {
  if (c->prev) c->prev->next = c->next;
  else feeds = c->next;
  if (c->next) c->next->prev = c->prev;
  hr_sse_end(c->sse);
  uv_close((uv_handle_t *)&c->timer, feed_freed);
}

static void tick(uv_timer_t *t) {
  feed_t *c = t->data;
  char now[32], id[24];
  time_t secs = time(NULL);
  struct tm tm;
  size_t n;
  gmtime_r(&secs, &tm);
  n = strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
  snprintf(id, sizeof id, "%" PRIu64, c->next_id);
  /* A client that is behind misses a tick (HR_EAGAIN): the next one tells
   * the time again.  One that left is handled by the close callback. */
  if (hr_sse_send(c->sse, "tick", id, now, n) == 0) c->next_id++;
}

static void on_close(hr_sse_t *sse, void *udata) {
  (void)sse;
  feed_end(udata);
}

static void h_clock(hr_request_t *req, hr_response_t *res, void *udata) {
  const options_t *o = udata;
  hr_sse_options_t so;
  feed_t *c = calloc(1, sizeof(*c));
  hr_span_t last;
  if (c == NULL) {
    hr_response_error(res, 503, NULL);
    return;
  }
  c->next_id = 1;
  if (hr_sse_last_event_id(req, &last) == 0 && last.len > 0 && last.len < 20) {
    char digits[24];
    char *end;
    unsigned long long n;
    memcpy(digits, last.ptr, last.len);
    digits[last.len] = '\0';
    n = strtoull(digits, &end, 10);
    if (*end == '\0') c->next_id = n + 1; /* go on after the last one seen */
  }
  hr_sse_options_init(&so);
  so.heartbeat_ms = o->heartbeat_ms;
  so.on_close = on_close;
  so.udata = c;
  if (hr_sse_start(req, res, &so, &c->sse) != 0) {
    free(c);
    hr_response_error(res, 503, NULL);
    return;
  }
  uv_timer_init(hr_request_loop(req), &c->timer);
  c->timer.data = c;
  uv_timer_start(&c->timer, tick, o->interval_ms, o->interval_ms);
  c->next = feeds;
  if (feeds) feeds->prev = c;
  feeds = c;
}

static const char page[] =
    "<!doctype html><meta charset=utf-8><title>clock</title>\n"
    "<p id=t>waiting for the first tick...</p>\n"
    "<script>new EventSource('/clock').addEventListener('tick', e =>\n"
    "  document.getElementById('t').textContent = e.lastEventId + ': ' + e.data);</script>\n";

static void h_page(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/html; charset=utf-8"));
  hr_response_send(res, 200, page, sizeof page - 1);
}

/* ---- main ----------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: events [--host ADDR] [--port N] [--interval-ms N] [--heartbeat-ms N]\n");
}

/* Returns 0 to run, 1 after --help, 2 on a bad option. */
static int parse_options(int argc, char **argv, options_t *o) {
  int i;
  o->host = "127.0.0.1";
  o->port = 8083;
  o->interval_ms = 1000;
  o->heartbeat_ms = 15000;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    char *end;
    long v;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 1;
    }
    if (i + 1 >= argc) goto bad;
    if (strcmp(a, "--host") == 0) {
      o->host = argv[++i];
      continue;
    }
    v = strtol(argv[++i], &end, 10);
    if (*end != '\0' || v < 0) goto bad;
    if (strcmp(a, "--port") == 0 && v <= 65535) o->port = (int)v;
    else if (strcmp(a, "--interval-ms") == 0 && v >= 1 && v <= 3600000) o->interval_ms = (uint32_t)v;
    else if (strcmp(a, "--heartbeat-ms") == 0 && v <= 3600000) o->heartbeat_ms = (uint32_t)v;
    else goto bad;
    continue;
  bad:
    fprintf(stderr, "events: bad or incomplete option '%s'\n", a);
    usage(stderr);
    return 2;
  }
  return 0;
}

typedef struct app_s {
  hr_server_t *server;
  uv_signal_t sigint, sigterm;
  int stopping;
} app_t;

static void on_closed(hr_server_t *server, void *udata) {
  (void)server;
  (void)udata;
  fprintf(stderr, "events: stopped\n");
}

static void on_signal(uv_signal_t *h, int signum) {
  app_t *app = h->data;
  int err;
  if (app->stopping) return;
  app->stopping = 1;
  fprintf(stderr, "events: %s, shutting down\n", signum == SIGINT ? "SIGINT" : "SIGTERM");
  /* The streams never end by themselves: end them, so that their clients
   * see complete responses rather than a cut at the deadline. */
  while (feeds != NULL) feed_end(feeds);
  err = hr_server_close(app->server, SHUTDOWN_DEADLINE_MS, on_closed, NULL);
  if (err != 0) fprintf(stderr, "events: hr_server_close: %s\n", hr_strerror(err));
  uv_close((uv_handle_t *)&app->sigint, NULL);
  uv_close((uv_handle_t *)&app->sigterm, NULL);
}

static int fail(const char *what, int err) {
  fprintf(stderr, "events: %s: %s\n", what, hr_error_detail(err));
  return 1;
}

int main(int argc, char **argv) {
  options_t opts;
  app_t app;
  hr_router_t *router = NULL;
  hr_server_t *server = NULL;
  hr_txn_t *txn = NULL;
  uv_loop_t *loop = uv_default_loop();
  int status = 1, err;

  switch (parse_options(argc, argv, &opts)) {
  case 0:
    break;
  case 1:
    return 0;
  default:
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  memset(&app, 0, sizeof app);
  /* The routes in one transaction: one table built, one publication. */
  if ((err = hr_router_new(&router, NULL)) != 0 || (err = hr_router_begin(router, &txn)) != 0) {
    status = fail("hr_router_new", err);
    goto out;
  }
  if ((err = hr_txn_add(txn, NULL, "GET", "/clock", h_clock, &opts, NULL)) != 0 ||
      (err = hr_txn_add(txn, NULL, "GET", "/", h_page, NULL, NULL)) != 0) {
    hr_txn_abort(txn);
    status = fail("hr_txn_add", err);
    goto out;
  }
  if ((err = hr_txn_commit(txn, NULL)) != 0) { /* it frees the transaction either way */
    status = fail("hr_txn_commit", err);
    goto out;
  }
  if ((err = hr_server_new(&server, router, NULL)) != 0) {
    status = fail("hr_server_new", err);
    goto out;
  }
  app.server = server;
  if ((err = hr_server_listen(server, opts.host, opts.port)) != 0) {
    status = fail("hr_server_listen", err);
    goto out;
  }
  uv_signal_init(loop, &app.sigint);
  uv_signal_init(loop, &app.sigterm);
  app.sigint.data = app.sigterm.data = &app;
  uv_signal_start(&app.sigint, on_signal, SIGINT);
  uv_signal_start(&app.sigterm, on_signal, SIGTERM);
  if ((err = hr_server_attach(server, loop)) != 0) {
    status = fail("hr_server_attach", err);
    uv_close((uv_handle_t *)&app.sigint, NULL);
    uv_close((uv_handle_t *)&app.sigterm, NULL);
    goto out;
  }
  fprintf(stderr, "events: listening on %s:%d\n", opts.host, hr_server_port(server, 0));
  uv_run(loop, UV_RUN_DEFAULT);
  status = 0;

out:
  uv_run(loop, UV_RUN_NOWAIT);
  hr_server_free(server);
  hr_router_free(router);
  if (uv_loop_close(loop) != 0) status = 1;
  return status;
}
