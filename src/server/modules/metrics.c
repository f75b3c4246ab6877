/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text exposition (format 0.0.4) of the server's counters
 * and of every route's: the counters are per worker and per loop, written
 * by their loop alone, and read here with relaxed loads; the route table
 * is read inside one read-side critical section.  Nothing here takes a
 * lock a serving thread waits for.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "router/route.h"
#include "server/modules/modules.h"
#include "util/utf8.h"

/* The text being rendered, in memory straight from the allocator (the
 * server's counting hr__mem_t has a single writer; this runs on any
 * thread). */
typedef struct mbuf_s {
  const hr_allocator_t *a;
  char *p;
  size_t len, cap;
  int oom;
} mbuf_t;

static int mb_room(mbuf_t *b, size_t n) {
  size_t cap;
  char *np;
  if (b->oom) return -1;
  if (b->len + n <= b->cap) return 0;
  cap = b->cap ? b->cap : 4096;
  while (cap < b->len + n) cap *= 2;
  if ((np = b->a->realloc(b->a->ctx, b->p, cap)) == NULL) {
    b->oom = 1;
    return -1;
  }
  b->p = np;
  b->cap = cap;
  return 0;
}

static void mb_put(mbuf_t *b, const char *p, size_t n) {
  if (mb_room(b, n) != 0) return;
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void mb_printf(mbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mb_printf(mbuf_t *b, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || mb_room(b, (size_t)n + 1) != 0) { /* + 1: vsnprintf's NUL */
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence at `p` (avail bytes, the first
 * from 0x80), or 0. */
static size_t utf8_at(const char *p, size_t avail) {
  size_t k;
  for (k = 2; k <= 4 && k <= avail; k++)
    if (hr__utf8_valid(p, k)) return k;
  return 0;
}

/* A label value: backslash, double quote and line feed escaped, and a
 * byte that is not part of well-formed UTF-8 (a pattern may hold one)
 * written %XX, which stands for the same byte in a pattern: the
 * exposition must be UTF-8, or Prometheus refuses the whole scrape. */
static void mb_label(mbuf_t *b, const char *name, hr_span_t v) {
  static const char hex[] = "0123456789ABCDEF";
  size_t i = 0, from = 0;
  mb_printf(b, "%s=\"", name);
  while (i < v.len) {
    unsigned char c = (unsigned char)v.ptr[i];
    char esc[3];
    size_t n = 2, u;
    if (c == '\\' || c == '"') {
      esc[0] = '\\';
      esc[1] = (char)c;
    } else if (c == '\n') {
      esc[0] = '\\';
      esc[1] = 'n';
    } else if (c >= 0x80 && (u = utf8_at(v.ptr + i, v.len - i)) == 0) {
      esc[0] = '%';
      esc[1] = hex[c >> 4];
      esc[2] = hex[c & 15];
      n = 3;
    } else {
      i += c >= 0x80 ? u : 1;
      continue;
    }
    mb_put(b, v.ptr + from, i - from);
    mb_put(b, esc, n);
    from = ++i;
  }
  mb_put(b, v.ptr + from, v.len - from);
  mb_put(b, "\"", 1);
}

static void family(mbuf_t *b, const char *name, const char *type, const char *help) {
  mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- the server ---------------------------------------------------------- */

typedef struct server_metric_s {
  const char *name, *help;
  size_t offset; /* of a uint64_t in hr_server_stats_t */
} server_metric_t;

#define SM(n, field, h) {"hroute_" n, h, offsetof(hr_server_stats_t, field)}
static const server_metric_t server_metrics[] = {
    SM("requests_total", requests, "Responses completed."),
    SM("connections_accepted_total", connections_accepted, "Connections accepted."),
    SM("connections_rejected_total", connections_rejected,
       "Connections closed at once: over max_connections."),
    SM("connections_active", connections_active, "Connections open now."),
    SM("client_aborts_total", client_aborts,
       "Requests whose client went away in the middle of the body (logged as 499)."),
    SM("bad_requests_total", bad_requests,
       "Requests the server itself answered 4xx (never 5xx), and connections "
       "closed for a client's protocol error."),
    SM("received_bytes_total", bytes_received, "HTTP bytes read from connections."),
    SM("sent_bytes_total", bytes_sent, "HTTP bytes written to connections."),
    SM("responses_abandoned_total", responses_abandoned,
       "Responses a handler still held when a shutdown deadline passed."),
    SM("accept_pauses_total", accept_pauses,
       "Times accepting paused because the process ran out of file descriptors."),
    SM("allocations_total", allocations, "Calls to the allocator's malloc and realloc."),
    SM("exchanges_in_use", exchanges_in_use, "Requests being read or answered."),
};

static void render_server(mbuf_t *b, const hr_server_t *s) {
  hr_server_stats_t st;
  size_t i;
  hr_server_stats(s, &st);
  for (i = 0; i < sizeof(server_metrics) / sizeof(server_metrics[0]); i++) {
    const server_metric_t *m = &server_metrics[i];
    uint64_t v;
    memcpy(&v, (const char *)&st + m->offset, sizeof(v));
    family(b, m->name, strstr(m->name, "_total") != NULL ? "counter" : "gauge", m->help);
    mb_printf(b, "%s %" PRIu64 "\n", m->name, v);
  }
  family(b, "hroute_draining", "gauge", "1 once hr_server_drain was called, else 0.");
  mb_printf(b, "hroute_draining %d\n", hr_server_draining(s));
}

/* ---- the routes ---------------------------------------------------------- */

typedef enum { PASS_REQUESTS, PASS_RESPONSES, PASS_DURATION } pass_t;

/* name{host="..",route="..",method=".." and `extra` (", le=..") } */
static void series(mbuf_t *b, const char *name, const hr__core_t *c, const char *extra) {
  mb_printf(b, "%s{", name);
  mb_label(b, "host", c->host);
  mb_put(b, ",", 1);
  mb_label(b, "route", c->pattern);
  mb_put(b, ",", 1);
  mb_label(b, "method", c->methods_text);
  mb_printf(b, "%s} ", extra);
}

/* The family a pass renders. */
static void pass_family(mbuf_t *b, pass_t pass) {
  switch (pass) {
  case PASS_REQUESTS:
    family(b, "hroute_route_requests_total", "counter",
           "Handler invocations of a route (middleware answers included).");
    break;
  case PASS_RESPONSES:
    family(b, "hroute_route_responses_total", "counter",
           "Responses of a route completed, by status class (none: lost before one).");
    break;
  case PASS_DURATION:
    family(b, "hroute_route_duration_seconds", "histogram",
           "The request's first byte to its response's completion.");
    break;
  }
}

static void on_core(void *ctx, unsigned pass, const hr__core_t *c) {
  static const char *const classes[6] = {"none", "1xx", "2xx", "3xx", "4xx", "5xx"};
  mbuf_t *b = ctx;
  hr_route_stats_t st;
  uint64_t cum = 0;
  char extra[48];
  size_t i;
  if (c == NULL) {
    pass_family(b, (pass_t)pass);
    return;
  }
  hr__core_stats(c, &st);
  switch ((pass_t)pass) {
  case PASS_REQUESTS:
    series(b, "hroute_route_requests_total", c, "");
    mb_printf(b, "%" PRIu64 "\n", st.requests);
    break;
  case PASS_RESPONSES:
    for (i = 0; i < 6; i++) {
      snprintf(extra, sizeof(extra), ",status=\"%s\"", classes[i]);
      series(b, "hroute_route_responses_total", c, extra);
      mb_printf(b, "%" PRIu64 "\n", st.responses[i]);
    }
    break;
  case PASS_DURATION:
    /* Bucket i counts latencies below 2^i microseconds (the last one,
     * the rest): cumulative, with le = 2^i µs in seconds. */
    for (i = 0; i + 1 < HR_LATENCY_BUCKETS; i++) {
      uint64_t us = (uint64_t)1 << i;
      cum += st.latency_us[i];
      snprintf(extra, sizeof(extra), ",le=\"%" PRIu64 ".%06" PRIu64 "\"", us / 1000000,
               us % 1000000);
      series(b, "hroute_route_duration_seconds_bucket", c, extra);
      mb_printf(b, "%" PRIu64 "\n", cum);
    }
    cum += st.latency_us[HR_LATENCY_BUCKETS - 1];
    series(b, "hroute_route_duration_seconds_bucket", c, ",le=\"+Inf\"");
    mb_printf(b, "%" PRIu64 "\n", cum);
    series(b, "hroute_route_duration_seconds_sum", c, "");
    mb_printf(b, "%" PRIu64 ".%06" PRIu64 "\n", st.latency_sum_us / 1000000,
              st.latency_sum_us % 1000000);
    series(b, "hroute_route_duration_seconds_count", c, "");
    mb_printf(b, "%" PRIu64 "\n", cum);
    break;
  }
}

static void render_routes(mbuf_t *b, hr_router_t *r) {
  /* The three passes walk one table: every family lists the same routes. */
  hr__router_each_core(r, PASS_DURATION + 1, on_core, b);
}

int hr_server_metrics(hr_server_t *s, void (*write)(void *ctx, const char *p, size_t n),
                      void *ctx) {
  mbuf_t b;
  if (s == NULL || write == NULL) return HR_EINVAL;
  memset(&b, 0, sizeof(b));
  b.a = s->mem.a;
  render_server(&b, s);
  render_routes(&b, s->router);
  if (!b.oom) write(ctx, b.p, b.len);
  b.a->free(b.a->ctx, b.p);
  return b.oom ? HR_ENOMEM : 0;
}

/* ---- the route ----------------------------------------------------------- */

static void to_response(void *ctx, const char *p, size_t n) {
  hr_response_t *res = ctx;
  static const hr_span_t type = HR_SPAN_LIT("text/plain; version=0.0.4; charset=utf-8");
  (void)hr_response_add_field(res, (hr_span_t)HR_SPAN_LIT("Content-Type"), type);
  (void)hr_response_add_field(res, (hr_span_t)HR_SPAN_LIT("Cache-Control"),
                              (hr_span_t)HR_SPAN_LIT("no-store"));
  (void)hr_response_send(res, 200, p, n);
}

static void on_metrics(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  if (hr_server_metrics(udata, to_response, res) != 0) (void)hr_response_send(res, 500, NULL, 0);
}

int hr_server_route_metrics(hr_server_t *s, const char *path) {
  if (s == NULL || path == NULL) return HR_EINVAL;
  return hr_router_add(s->router, "GET", path, on_metrics, s, NULL);
}

int hr_server_txn_metrics(hr_server_t *s, hr_txn_t *txn, const char *path) {
  if (s == NULL || txn == NULL || path == NULL) return HR_EINVAL;
  return hr_txn_add(txn, NULL, "GET", path, on_metrics, s, NULL);
}
