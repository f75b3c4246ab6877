/* SPDX-License-Identifier: MIT */
/*
 * bench_dispatch: the cost of one request from bytes to response -- parse,
 * match, invoke, write -- without sockets, and how much of it the compiled
 * route invoker saves.  Two routers with the same ~50 REST routes are served
 * in one process, each through a virtual connection (bench/support/
 * vserver.c: hr__vconn_feed processes the bytes at once and the sink counts
 * the response bytes), and `GET /users/42/posts/7` is sent again and again
 * on that persistent connection:
 *
 *   invoker   what hroute resolves at registration: 3 before- and 1
 *             after-middleware registered with hr_router_use (two of the
 *             befores and the after cover the route: they are flattened into
 *             its invoker), Content-Type and Cache-Control as route fields
 *             (pre-rendered), and a handler that reads its parameters by
 *             index;
 *   baseline  the same work resolved per request, as a framework without
 *             invokers does it: one global middleware walks a linked list of
 *             the 3+1 middleware records and checks each one's prefix against
 *             the request path (strncmp, at a segment boundary) before
 *             calling it, the handler looks its parameters up by name and adds
 *             the two constant fields with hr_response_add_field, their values
 *             formatted with snprintf each time.
 *
 * Both answer byte for byte the same except for the Date line (checked once
 * before timing).  After one warm-up pass each, the variants run PASSES
 * alternating timed passes of REQUESTS requests; the output gives ns per
 * request (best and median), the ratio baseline/invoker, and heap
 * allocations per request (the server's counter: must be 0).  Every pass
 * checks that each request produced its response and ran its middleware.
 *
 *   bench_dispatch [--passes N] [--requests N]
 *   bench_dispatch --count N --variant invoker|baseline
 *
 * The second form runs exactly N requests of one variant and nothing else
 * (no timing, no output on success), for instruction counts under callgrind:
 * bench/dispatch.sh.  Run timings pinned, on a Release build:
 *
 *   cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release
 *   cmake --build build/release -j2 --target bench_dispatch
 *   taskset -c 1 build/release/bench_dispatch
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "timing.h"
#include "vserver.h"

#define DEFAULT_PASSES 9
#define DEFAULT_REQUESTS 200000
#define MAX_PASSES 1000

static const char request[] =
    "GET /users/42/posts/7 HTTP/1.1\r\n"
    "Host: api.example.com\r\n"
    "Accept: application/json\r\n"
    "\r\n";
#define REQUEST_LEN (sizeof(request) - 1)
static const char expected_body[] = "{\"user\":\"42\",\"post\":\"7\"}";

/* ---- the route set ---------------------------------------------------------- */

typedef struct route_def_s {
  const char *methods;
  const char *pattern;
} route_def_t;

/* The measured route is MEASURED; the others are never requested but make
 * the tree realistic (siblings and parameters at most levels). */
#define MEASURED "/users/:user/posts/:post"
static const route_def_t routes[] = {
    {"GET", "/"},
    {"GET", "/health"},
    {"GET", "/metrics"},
    {"GET", "/users"},
    {"POST", "/users"},
    {"GET", "/users/:user"},
    {"PUT", "/users/:user"},
    {"PATCH", "/users/:user"},
    {"DELETE", "/users/:user"},
    {"GET", "/users/:user/posts"},
    {"POST", "/users/:user/posts"},
    {"GET", MEASURED},
    {"PUT", MEASURED},
    {"DELETE", MEASURED},
    {"GET", "/users/:user/posts/:post/comments"},
    {"POST", "/users/:user/posts/:post/comments"},
    {"GET", "/users/:user/posts/:post/comments/:comment"},
    {"DELETE", "/users/:user/posts/:post/comments/:comment"},
    {"GET", "/users/:user/followers"},
    {"GET", "/users/:user/following"},
    {"PUT", "/users/:user/following/:other"},
    {"DELETE", "/users/:user/following/:other"},
    {"GET", "/users/:user/settings"},
    {"PATCH", "/users/:user/settings"},
    {"GET", "/posts"},
    {"GET", "/posts/:post"},
    {"GET", "/posts/:post/likes"},
    {"POST", "/posts/:post/likes"},
    {"GET", "/orgs"},
    {"POST", "/orgs"},
    {"GET", "/orgs/:org"},
    {"PATCH", "/orgs/:org"},
    {"GET", "/orgs/:org/members"},
    {"PUT", "/orgs/:org/members/:user"},
    {"DELETE", "/orgs/:org/members/:user"},
    {"GET", "/orgs/:org/repos"},
    {"POST", "/orgs/:org/repos"},
    {"GET", "/repos/:owner/:repo"},
    {"PATCH", "/repos/:owner/:repo"},
    {"DELETE", "/repos/:owner/:repo"},
    {"GET", "/repos/:owner/:repo/issues"},
    {"POST", "/repos/:owner/:repo/issues"},
    {"GET", "/repos/:owner/:repo/issues/:number"},
    {"PATCH", "/repos/:owner/:repo/issues/:number"},
    {"GET", "/search/users"},
    {"GET", "/search/posts"},
    {"GET", "/admin/stats"},
    {"POST", "/admin/reindex"},
    {"GET", "/admin/users/:user"},
    {"DELETE", "/admin/users/:user"},
    {"GET", "/static/*path"},
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static int is_measured(const route_def_t *r) {
  return strcmp(r->methods, "GET") == 0 && strcmp(r->pattern, MEASURED) == 0;
}

/* ---- middleware: the same callbacks in both variants ------------------------ */

/* One middleware registration: where it applies and what it counts. */
typedef struct mw_s {
  const char *prefix; /* "" covers every route */
  int after;          /* 0: a before-middleware, 1: an after-middleware */
  uint64_t calls;
  int last_status;
  struct mw_s *next;  /* baseline: the list the global middleware walks */
  size_t prefix_len;  /* baseline: strlen(prefix), kept as a framework would */
} mw_t;

/* A request id, authentication for /users, an audit log for /admin (does
 * not cover the measured route), metrics for /users. */
#define NMW 4
static const mw_t mw_template[NMW] = {
    {"", 0, 0, 0, NULL, 0},
    {"/users", 0, 0, 0, NULL, 0},
    {"/admin", 0, 0, 0, NULL, 0},
    {"/users", 1, 0, 0, NULL, 0},
};
/* Of those, the measured route runs this many befores and afters. */
#define MW_BEFORE_APPLY 2
#define MW_AFTER_APPLY 1

static hr_next_t mw_before(hr_request_t *req, hr_response_t *res, void *udata) {
  mw_t *mw = udata;
  (void)req;
  (void)res;
  mw->calls++;
  return HR_NEXT;
}

static void mw_after(hr_request_t *req, int status, void *udata) {
  mw_t *mw = udata;
  (void)req;
  mw->calls++;
  mw->last_status = status;
}

/* ---- handlers -------------------------------------------------------------- */

/* Appends `s` to the body; returns the new length or 0 when it is full. */
static size_t put(char *body, size_t cap, size_t len, const char *s, size_t n) {
  if (len == 0 || cap - len < n) return 0;
  memcpy(body + len, s, n);
  return len + n;
}

/* The measured route's answer, shared by both variants:
 * {"user":"<user>","post":"<post>"}. */
static void send_post(hr_response_t *res, hr_span_t user, hr_span_t post) {
  char body[256];
  size_t n = 1;
  body[0] = '{';
  n = put(body, sizeof(body), n, "\"user\":\"", 8);
  n = put(body, sizeof(body), n, user.ptr, user.len);
  n = put(body, sizeof(body), n, "\",\"post\":\"", 10);
  n = put(body, sizeof(body), n, post.ptr, post.len);
  n = put(body, sizeof(body), n, "\"}", 2);
  if (n == 0) {
    (void)hr_response_send(res, 500, NULL, 0);
    return;
  }
  (void)hr_response_send(res, 200, body, n);
}

static void send_other(hr_response_t *res) {
  (void)hr_response_send(res, 200, "{}", 2);
}

/* Invoker: parameters by position; the fields are in the route's head. */
static void inv_get_post(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  send_post(res, hr_request_param(req, 0), hr_request_param(req, 1));
}

static void inv_other(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  send_other(res);
}

/* Baseline: the constant fields as a framework keeps them, formatted per
 * request.  Reached through the route's udata, so the compiler cannot fold
 * the formatting away. */
typedef struct field_conf_s {
  const char *media_type;
  const char *charset;
  const char *cache_scope;
  int max_age;
} field_conf_t;

static int base_add_fields(hr_response_t *res, const field_conf_t *fc) {
  char v[64];
  int n = snprintf(v, sizeof(v), "%s; charset=%s", fc->media_type, fc->charset);
  if (n < 0 || (size_t)n >= sizeof(v) ||
      hr_response_add_field(res, HR_SPAN_LIT("Content-Type"),
                            (hr_span_t){v, (size_t)n}) != 0)
    return -1;
  n = snprintf(v, sizeof(v), "%s, max-age=%d", fc->cache_scope, fc->max_age);
  if (n < 0 || (size_t)n >= sizeof(v) ||
      hr_response_add_field(res, HR_SPAN_LIT("Cache-Control"),
                            (hr_span_t){v, (size_t)n}) != 0)
    return -1;
  return 0;
}

static void base_get_post(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t user, post;
  if (hr_request_param_by_name(req, HR_SPAN_LIT("user"), &user) != 0 ||
      hr_request_param_by_name(req, HR_SPAN_LIT("post"), &post) != 0 ||
      base_add_fields(res, udata) != 0) {
    (void)hr_response_send(res, 500, NULL, 0);
    return;
  }
  send_post(res, user, post);
}

static void base_other(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  if (base_add_fields(res, udata) != 0) {
    (void)hr_response_send(res, 500, NULL, 0);
    return;
  }
  send_other(res);
}

/* Baseline: the one global middleware.  Walks the records and checks each
 * prefix against the request path at a segment boundary, per request. */
static int path_covered(hr_span_t path, const mw_t *mw) {
  size_t n = mw->prefix_len;
  return path.len >= n && strncmp(path.ptr, mw->prefix, n) == 0 &&
         (path.len == n || n == 0 || path.ptr[n] == '/');
}

static hr_next_t base_before(hr_request_t *req, hr_response_t *res,
                             void *udata) {
  hr_span_t path = hr_request_path(req);
  mw_t *mw;
  for (mw = *(mw_t **)udata; mw != NULL; mw = mw->next)
    if (!mw->after && path_covered(path, mw) &&
        mw_before(req, res, mw) == HR_ANSWERED)
      return HR_ANSWERED;
  return HR_NEXT;
}

static void base_after(hr_request_t *req, int status, void *udata) {
  hr_span_t path = hr_request_path(req);
  mw_t *mw;
  for (mw = *(mw_t **)udata; mw != NULL; mw = mw->next)
    if (mw->after && path_covered(path, mw)) mw_after(req, status, mw);
}

/* ---- the two variants --------------------------------------------------------- */

typedef struct variant_s {
  const char *name;
  int baseline;
  hr_router_t *router;
  bench_vserver_t vs;
  int open;
  mw_t mw[NMW];
  mw_t *mw_list;          /* baseline: head of the records' list */
  field_conf_t fields;    /* baseline: the constant fields' configuration */
  size_t response_len;    /* bytes of one response */
  double ns[MAX_PASSES];  /* per timed pass */
  double allocs;          /* server allocations per request, all passes */
} variant_t;

static int fail(const char *what, int err) {
  fprintf(stderr, "bench_dispatch: %s: %s (%s)\n", what, hr_strerror(err),
          hr_err_name(err));
  return -1;
}

static int setup_invoker(variant_t *v) {
  const hr_field_t fields[] = {
      {HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/json; charset=utf-8")},
      {HR_SPAN_LIT("Cache-Control"), HR_SPAN_LIT("private, max-age=60")},
  };
  hr_route_options_t ro;
  size_t i;
  int err;
  for (i = 0; i < NMW; i++) {
    mw_t *mw = &v->mw[i];
    err = hr_router_use(v->router, NULL, mw->prefix, mw->after ? NULL : mw_before,
                        mw->after ? mw_after : NULL, mw);
    if (err != 0) return fail("hr_router_use", err);
  }
  hr_route_options_init(&ro);
  ro.fields = fields;
  ro.nfields = sizeof(fields) / sizeof(fields[0]);
  for (i = 0; i < NROUTES; i++) {
    err = hr_router_add(v->router, routes[i].methods, routes[i].pattern,
                        is_measured(&routes[i]) ? inv_get_post : inv_other, NULL,
                        &ro);
    if (err != 0) return fail(routes[i].pattern, err);
  }
  return 0;
}

static int setup_baseline(variant_t *v) {
  size_t i;
  int err;
  for (i = NMW; i-- > 0;) { /* the list in registration order */
    v->mw[i].prefix_len = strlen(v->mw[i].prefix);
    v->mw[i].next = v->mw_list;
    v->mw_list = &v->mw[i];
  }
  v->fields.media_type = "application/json";
  v->fields.charset = "utf-8";
  v->fields.cache_scope = "private";
  v->fields.max_age = 60;
  err = hr_router_use(v->router, NULL, NULL, base_before, base_after,
                      &v->mw_list);
  if (err != 0) return fail("hr_router_use", err);
  for (i = 0; i < NROUTES; i++) {
    err = hr_router_add(v->router, routes[i].methods, routes[i].pattern,
                        is_measured(&routes[i]) ? base_get_post : base_other,
                        &v->fields, NULL);
    if (err != 0) return fail(routes[i].pattern, err);
  }
  return 0;
}

static int variant_open(variant_t *v, uv_loop_t *loop) {
  int err;
  memcpy(v->mw, mw_template, sizeof(v->mw));
  if ((err = hr_router_new(&v->router, NULL)) != 0)
    return fail("hr_router_new", err);
  if ((v->baseline ? setup_baseline(v) : setup_invoker(v)) != 0) return -1;
  if ((err = bench_vserver_open(&v->vs, loop, v->router)) != 0)
    return fail("virtual server", err);
  v->open = 1;
  return 0;
}

static void variant_close(variant_t *v) {
  if (v->open) bench_vserver_close(&v->vs);
  v->open = 0;
  hr_router_free(v->router);
  v->router = NULL;
}

static uint64_t mw_calls(const variant_t *v) {
  uint64_t n = 0;
  size_t i;
  for (i = 0; i < NMW; i++) n += v->mw[i].calls;
  return n;
}

/* Runs `n` requests; returns 0, or -1 when one was not taken whole. */
static int run_requests(variant_t *v, uint64_t n) {
  uint64_t i;
  for (i = 0; i < n; i++)
    if (bench_vserver_feed(&v->vs, request, REQUEST_LEN) != REQUEST_LEN)
      return -1;
  return 0;
}

/* Runs `n` requests and checks that each produced its response and ran its
 * middleware.  Returns 0 or -1 (reported). */
static int run_checked(variant_t *v, uint64_t n) {
  uint64_t bytes0 = v->vs.out_bytes, calls0 = mw_calls(v), want_bytes;
  if (run_requests(v, n) != 0) {
    fprintf(stderr, "bench_dispatch: %s: the connection stopped taking requests\n",
            v->name);
    return -1;
  }
  want_bytes = n * v->response_len;
  if (v->vs.out_bytes - bytes0 != want_bytes ||
      mw_calls(v) - calls0 != n * (MW_BEFORE_APPLY + MW_AFTER_APPLY) ||
      (n > 0 && v->mw[3].last_status != 200)) {
    fprintf(stderr,
            "bench_dispatch: %s: %" PRIu64 " requests wrote %" PRIu64
            " bytes (want %" PRIu64 ") and made %" PRIu64
            " middleware calls (want %" PRIu64 ")\n",
            v->name, n, v->vs.out_bytes - bytes0, want_bytes,
            mw_calls(v) - calls0, n * (MW_BEFORE_APPLY + MW_AFTER_APPLY));
    return -1;
  }
  return 0;
}

/* ---- response checks ------------------------------------------------------------ */

/* Removes the "Date: ...\r\n" line of the head; returns the new length, or
 * 0 when there is no such line. */
static size_t drop_date(char *r, size_t n) {
  const char *end = memmem(r, n, "\r\n\r\n", 4);
  char *d = memmem(r, n, "\r\nDate: ", 8), *e;
  if (d == NULL || end == NULL || d > end) return 0;
  d += 2;
  e = memmem(d, n - (size_t)(d - r), "\r\n", 2);
  if (e == NULL) return 0;
  e += 2;
  memmove(d, e, n - (size_t)(e - r));
  return n - (size_t)(e - d);
}

static void show(const char *label, const char *r, size_t n) {
  fprintf(stderr, "---- %s (%zu bytes) ----\n%.*s\n", label, n, (int)n, r);
}

/* Sends one request and checks the answer: 200 with the expected body,
 * one Date line; keeps its length.  With `copy`, keeps the response there
 * (capacity 1024).  Returns 0 or -1. */
static int first_response(variant_t *v, char *copy, size_t *copy_len) {
  char buf[1024];
  size_t n, blen = sizeof(expected_body) - 1;
  if (bench_vserver_capture(&v->vs, request, REQUEST_LEN, buf, sizeof(buf), &n) != 0 ||
      n < 17 || memcmp(buf, "HTTP/1.1 200 OK\r\n", 17) != 0 || n < blen ||
      memcmp(buf + n - blen, expected_body, blen) != 0 ||
      memmem(buf, n, "\r\nDate: ", 8) == NULL) {
    fprintf(stderr, "bench_dispatch: %s: unexpected response\n", v->name);
    show(v->name, buf, n);
    return -1;
  }
  v->response_len = n;
  if (copy != NULL) {
    memcpy(copy, buf, n);
    *copy_len = n;
  }
  return 0;
}

/* Both variants answer the same bytes, apart from the Date line. */
static int compare_responses(variant_t *inv, variant_t *base) {
  char a[1024], b[1024];
  size_t na, nb, da, db;
  if (first_response(inv, a, &na) != 0 || first_response(base, b, &nb) != 0)
    return -1;
  da = drop_date(a, na);
  db = drop_date(b, nb);
  if (da == 0 || da != db || memcmp(a, b, da) != 0) {
    fprintf(stderr, "bench_dispatch: the variants answer differently "
                    "(Date lines removed):\n");
    show(inv->name, a, da);
    show(base->name, b, db);
    return -1;
  }
  return 0;
}

/* ---- command line and main --------------------------------------------------- */

typedef struct options_s {
  long passes;
  long requests;
  long count; /* -1: timing mode */
  int variant; /* count mode: 0 invoker, 1 baseline */
} options_t;

static void usage(FILE *out) {
  fprintf(out,
          "usage: bench_dispatch [--passes N] [--requests N]\n"
          "       bench_dispatch --count N --variant invoker|baseline\n"
          "\n"
          "  --passes N     timed passes per variant after one warm-up pass "
          "(default %d)\n"
          "  --requests N   requests per pass (default %d)\n"
          "  --count N      run exactly N requests of one variant and exit "
          "(for callgrind)\n"
          "  --variant V    invoker or baseline, with --count\n",
          DEFAULT_PASSES, DEFAULT_REQUESTS);
}

static int parse_long(const char *s, long min, long max, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max) return -1;
  *out = v;
  return 0;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_options(int argc, char **argv, options_t *o) {
  int i, have_variant = 0;
  o->passes = DEFAULT_PASSES;
  o->requests = DEFAULT_REQUESTS;
  o->count = -1;
  o->variant = 0;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 1;
    }
    if (val == NULL) goto bad;
    if (strcmp(a, "--passes") == 0) {
      if (parse_long(val, 1, MAX_PASSES, &o->passes) != 0) goto bad;
    } else if (strcmp(a, "--requests") == 0) {
      if (parse_long(val, 1, 1000000000L, &o->requests) != 0) goto bad;
    } else if (strcmp(a, "--count") == 0) {
      if (parse_long(val, 0, 1000000000L, &o->count) != 0) goto bad;
    } else if (strcmp(a, "--variant") == 0) {
      if (strcmp(val, "invoker") == 0)
        o->variant = 0;
      else if (strcmp(val, "baseline") == 0)
        o->variant = 1;
      else
        goto bad;
      have_variant = 1;
    } else {
      goto bad;
    }
    i++;
    continue;
  bad:
    fprintf(stderr, "bench_dispatch: bad or incomplete option '%s'\n", a);
    usage(stderr);
    return 2;
  }
  if ((o->count >= 0) != have_variant) {
    fprintf(stderr, "bench_dispatch: --count and --variant go together\n");
    usage(stderr);
    return 2;
  }
  return 0;
}

/* --count N --variant V: exactly N requests (none to check the answer, so
 * that a run with N = 0 measures everything but the requests). */
static int count_mode(const options_t *o, uv_loop_t *loop) {
  variant_t *v = calloc(1, sizeof(*v));
  int rc = 1;
  if (v == NULL) return 1;
  v->baseline = o->variant;
  v->name = o->variant ? "baseline" : "invoker";
  if (variant_open(v, loop) == 0) {
    rc = 0;
    if (o->count > 0) {
      /* The first request's answer is checked from a copy of the sink's
       * output (no extra request). */
      if (first_response(v, NULL, NULL) != 0 ||
          run_checked(v, (uint64_t)o->count - 1) != 0)
        rc = 1;
    }
  }
  variant_close(v);
  free(v);
  return rc;
}

static void timed_pass(variant_t *v, long requests, size_t pass, int *failed) {
  hr_server_stats_t s0, s1;
  uint64_t t0, t1;
  hr_server_stats(v->vs.server, &s0);
  t0 = bench_now_ns();
  if (run_checked(v, (uint64_t)requests) != 0) *failed = 1;
  t1 = bench_now_ns();
  hr_server_stats(v->vs.server, &s1);
  v->ns[pass] = (double)(t1 - t0) / (double)requests;
  v->allocs += (double)(s1.allocations - s0.allocations);
}

static int timing_mode(const options_t *o, uv_loop_t *loop) {
  variant_t *var = calloc(2, sizeof(*var));
  variant_t *inv = &var[0], *base = &var[1];
  int failed = 0;
  size_t p, k;
  if (var == NULL) return 1;
  inv->name = "invoker";
  base->name = "baseline";
  base->baseline = 1;
  if (variant_open(inv, loop) != 0 || variant_open(base, loop) != 0 ||
      compare_responses(inv, base) != 0)
    failed = 1;
  /* Warm-up: caches, branch predictors, pool blocks, per-loop slots. */
  for (k = 0; k < 2 && !failed; k++)
    if (run_checked(&var[k], (uint64_t)o->requests) != 0) failed = 1;
  /* Alternate the variants, and which goes first, pass by pass, so that a
   * drift in machine speed affects both alike. */
  for (p = 0; p < (size_t)o->passes && !failed; p++)
    for (k = 0; k < 2; k++) timed_pass(&var[(p + k) % 2], o->requests, p, &failed);

  if (!failed) {
    double ib = bench_best(inv->ns, (size_t)o->passes);
    double im = bench_median(inv->ns, (size_t)o->passes);
    double bb = bench_best(base->ns, (size_t)o->passes);
    double bm = bench_median(base->ns, (size_t)o->passes);
    double total = (double)o->passes * (double)o->requests;
    printf("bench_dispatch: GET /users/42/posts/7 on %zu routes, %d+%d middleware "
           "(%d+%d cover the route), 2 constant fields; response %zu bytes;\n"
           "%ld passes of %ld requests per variant after one warm-up pass\n",
           NROUTES, NMW - 1, 1, MW_BEFORE_APPLY, MW_AFTER_APPLY,
           inv->response_len, o->passes, o->requests);
    printf("%-10s %10s %10s %12s\n", "variant", "best ns", "median ns", "allocs/req");
    printf("%-10s %10.1f %10.1f %12.4f\n", inv->name, ib, im, inv->allocs / total);
    printf("%-10s %10.1f %10.1f %12.4f\n", base->name, bb, bm, base->allocs / total);
    printf("ratio baseline/invoker: %.3fx (median), %.3fx (best)\n", bm / im,
           bb / ib);
  }
  variant_close(base);
  variant_close(inv);
  free(var);
  return failed;
}

int main(int argc, char **argv) {
  options_t o;
  uv_loop_t loop;
  int rc;
  switch (parse_options(argc, argv, &o)) {
    case 0:
      break;
    case 1:
      return 0;
    default:
      return 2;
  }
  if ((rc = uv_loop_init(&loop)) != 0) {
    fprintf(stderr, "bench_dispatch: uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  rc = o.count >= 0 ? count_mode(&o, &loop) : timing_mode(&o, &loop);
  uv_run(&loop, UV_RUN_NOWAIT);
  if (uv_loop_close(&loop) != 0) {
    fprintf(stderr, "bench_dispatch: a handle was left open on the loop\n");
    rc = 1;
  }
  return rc;
}
