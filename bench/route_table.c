/* SPDX-License-Identifier: MIT */
/*
 * bench_route_table: what registering and changing routes costs as a table
 * grows, with the router alone (no server).  For each size of --sizes
 * (default 1000,10000,100000) and each route set it builds a fresh router
 * and registers that many routes in one transaction (hr_router_begin,
 * hr_txn_add for each, hr_txn_commit), timed with CLOCK_MONOTONIC, and
 * prints the time, the time per route and memory per route: the published
 * table's (hr_router_stats table_bytes) and all the router holds (bytes in
 * use through a counting allocator, replaced tables that wait for their
 * grace period included).  On that table --changes (default 1000) single
 * changes are timed one by one: replacing one route (hr_route_options_t
 * .replace with a new handler), adding a new route and removing it again,
 * each one hr_router_add or hr_router_remove; the lines give p50, p99 and
 * the maximum in microseconds (they stop early past --budget seconds, and
 * say how many ran).  Then one lookup per route (hr_router_match, a
 * shuffled order) gives the nanoseconds per lookup.  Last, the same routes
 * one hr_router_add at a time, stopped at --budget seconds (default 30):
 * the line gives how many went in and how long they took, so the growth of
 * that path shows without waiting hours; larger sizes skip it after the
 * first that ran out of budget.
 *
 * Route sets:
 *   generated  "GET /api/v1/res<N>/:id/items/{item}" for N = 0, 1, ...
 *   github     bench/github_routes.txt (130 routes), repeated under
 *              "/t<K>" prefixes (K = 0, 1, ...) until the size is reached
 *
 *   bench_route_table [--sizes 1000,10000,100000] [--budget S]
 *                     [--changes N] [--sets generated,github] [--github FILE]
 *
 * Run it pinned on a Release build, with nothing else running:
 *   taskset -c 1 build/release/bench_route_table
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "timing.h"

/* ---- a counting allocator: bytes in use -------------------------------------- */

typedef struct {
  size_t size;
  size_t pad; /* keeps the block 16-byte aligned */
} blk_t;

static size_t in_use;

static void *c_malloc(void *ctx, size_t n) {
  blk_t *b = malloc(sizeof(blk_t) + n);
  (void)ctx;
  if (b == NULL) return NULL;
  b->size = n;
  in_use += n;
  return b + 1;
}

static void c_free(void *ctx, void *p) {
  blk_t *b;
  (void)ctx;
  if (p == NULL) return;
  b = (blk_t *)p - 1;
  in_use -= b->size;
  free(b);
}

static void *c_realloc(void *ctx, void *p, size_t n) {
  blk_t *b, *nb;
  if (p == NULL) return c_malloc(ctx, n);
  b = (blk_t *)p - 1;
  nb = realloc(b, sizeof(blk_t) + n);
  if (nb == NULL) return NULL;
  in_use = in_use - nb->size + n;
  nb->size = n;
  return nb + 1;
}

static const hr_allocator_t counting = {c_malloc, c_realloc, c_free, NULL};

/* ---- route sets ------------------------------------------------------------------ */

typedef struct {
  char method[16];
  char pattern[160];
  char path[200]; /* a request path that reaches it */
} route_t;

typedef struct {
  const char *name;
  route_t *routes;
  size_t n;
} set_t;

static int gen_generated(set_t *s, size_t n) {
  size_t i;
  s->routes = calloc(n, sizeof(route_t));
  if (s->routes == NULL) return -1;
  for (i = 0; i < n; i++) {
    route_t *r = &s->routes[i];
    strcpy(r->method, "GET");
    snprintf(r->pattern, sizeof r->pattern, "/api/v1/res%zu/:id/items/{item}", i);
    snprintf(r->path, sizeof r->path, "/api/v1/res%zu/42/items/x%zu", i, i);
  }
  s->n = n;
  return 0;
}

/* Reads "METHOD pattern  # path" lines (bench/github_routes.txt). */
static size_t read_github(const char *file, route_t **out) {
  FILE *f = fopen(file, "r");
  char line[512];
  size_t n = 0, cap = 0;
  route_t *v = NULL;
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL) {
    route_t r;
    char *hash = strchr(line, '#'), *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (hash == NULL || hash == p || sscanf(line, "%15s %159s", r.method, r.pattern) != 2 ||
        sscanf(hash + 1, "%199s", r.path) != 1)
      continue;
    if (n == cap) {
      route_t *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*v));
      if (nv == NULL) break;
      v = nv;
    }
    v[n++] = r;
  }
  fclose(f);
  *out = v;
  return n;
}

static int gen_github(set_t *s, size_t n, const route_t *base, size_t nbase) {
  size_t i;
  if (nbase == 0) return -1;
  s->routes = calloc(n, sizeof(route_t));
  if (s->routes == NULL) return -1;
  for (i = 0; i < n; i++) {
    route_t *r = &s->routes[i];
    const route_t *b = &base[i % nbase];
    size_t k = i / nbase;
    strcpy(r->method, b->method);
    snprintf(r->pattern, sizeof r->pattern, "/t%zu%.130s", k, b->pattern);
    snprintf(r->path, sizeof r->path, "/t%zu%.170s", k, b->path);
  }
  s->n = n;
  return 0;
}

/* ---- measuring --------------------------------------------------------------------- */

static void h_a(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}
static void h_b(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p) {
  size_t i;
  if (n == 0) return 0;
  i = (size_t)(p * (double)(n - 1) + 0.5);
  return v[i];
}

/* Registers s->routes one at a time; returns how many went in before the
 * budget ran out (or all), with the seconds spent in *secs. */
static size_t register_all(hr_router_t *r, const set_t *s, double budget, double *secs) {
  uint64_t t0 = bench_now_ns();
  size_t i;
  for (i = 0; i < s->n; i++) {
    int rc = hr_router_add(r, s->routes[i].method, s->routes[i].pattern, h_a, NULL, NULL);
    if (rc != 0) {
      fprintf(stderr, "bench_route_table: %s %s: %s\n", s->routes[i].method,
              s->routes[i].pattern, hr_strerror(rc));
      exit(1);
    }
    if ((i & 63) == 63 && (double)(bench_now_ns() - t0) / 1e9 > budget) {
      i++;
      break;
    }
  }
  *secs = (double)(bench_now_ns() - t0) / 1e9;
  return i;
}

/* Registers s->routes in one transaction; seconds in *secs. */
static void register_txn(hr_router_t *r, const set_t *s, double *secs) {
  uint64_t t0 = bench_now_ns();
  hr_route_error_t err;
  hr_txn_t *t;
  size_t i;
  int rc = hr_router_begin(r, &t);
  for (i = 0; rc == 0 && i < s->n; i++)
    rc = hr_txn_add(t, NULL, s->routes[i].method, s->routes[i].pattern, h_a, NULL, NULL);
  if (rc == 0) rc = hr_txn_commit(t, &err);
  if (rc != 0) {
    fprintf(stderr, "bench_route_table: transaction: %s\n", hr_strerror(rc));
    exit(1);
  }
  *secs = (double)(bench_now_ns() - t0) / 1e9;
}

/* Single changes on a table of n routes: replace, add, remove. */
static void changes(hr_router_t *r, const set_t *s, size_t n, size_t count, double budget) {
  const char *what[3] = {"replace", "add", "remove"};
  double *lat[3];
  size_t done[3] = {0, 0, 0}, k, i;
  uint64_t t0 = bench_now_ns();
  for (k = 0; k < 3; k++) lat[k] = malloc(count * sizeof(double));
  for (i = 0; i < count; i++) {
    const route_t *rt = &s->routes[(i * 7919) % n];
    hr_route_options_t ro;
    char pattern[200];
    uint64_t a, b, c, d;
    hr_route_options_init(&ro);
    ro.replace = 1;
    snprintf(pattern, sizeof pattern, "/new%zu/:id", i);
    a = bench_now_ns();
    if (hr_router_add(r, rt->method, rt->pattern, (i & 1) ? h_a : h_b, NULL, &ro) != 0) exit(1);
    b = bench_now_ns();
    if (hr_router_add(r, "GET", pattern, h_a, NULL, NULL) != 0) exit(1);
    c = bench_now_ns();
    if (hr_router_remove(r, "GET", pattern) != 0) exit(1);
    d = bench_now_ns();
    lat[0][done[0]++] = (double)(b - a) / 1e3;
    lat[1][done[1]++] = (double)(c - b) / 1e3;
    lat[2][done[2]++] = (double)(d - c) / 1e3;
    if ((double)(d - t0) / 1e9 > budget) break;
  }
  for (k = 0; k < 3; k++) {
    qsort(lat[k], done[k], sizeof(double), cmp_double);
    printf("  %-8s %zu routes: %zu changes%s  p50 %.1f us  p99 %.1f us  max %.1f us\n", what[k],
           n, done[k], done[k] < count ? " (budget reached)" : "", pct(lat[k], done[k], 0.50),
           pct(lat[k], done[k], 0.99), done[k] ? lat[k][done[k] - 1] : 0.0);
    free(lat[k]);
  }
}

/* One lookup per route in a shuffled order: ns per lookup. */
static void lookups(hr_router_t *r, const set_t *s, size_t n) {
  size_t *order = malloc(n * sizeof(size_t)), i, miss = 0;
  static char buf[1024];
  uint64_t t0;
  double ns;
  for (i = 0; i < n; i++) order[i] = i;
  bench_shuffle(order, n, sizeof(size_t));
  t0 = bench_now_ns();
  for (i = 0; i < n; i++) {
    const route_t *rt = &s->routes[order[i]];
    hr_match_t m;
    if (hr_router_match(r, hr_span_cstr(rt->method), hr_span_cstr(""), hr_span_cstr(rt->path),
                        buf, sizeof buf, &m) != 0 ||
        m.status != 200)
      miss++;
  }
  ns = (double)(bench_now_ns() - t0) / (double)n;
  printf("  lookup   %zu routes: %.0f ns per lookup (%zu lookups, %zu not 200)\n", n, ns, n, miss);
  free(order);
}

/* ---- main ------------------------------------------------------------------------- */

static size_t parse_list(const char *s, size_t *out, size_t max) {
  size_t n = 0;
  while (*s != '\0' && n < max) {
    char *end;
    out[n++] = strtoul(s, &end, 10);
    s = *end == ',' ? end + 1 : end;
    if (end == s && *end != ',') break;
  }
  return n;
}

int main(int argc, char **argv) {
  size_t sizes[8] = {1000, 10000, 100000}, nsizes = 3, count = 1000, nbase, k, i;
  double budget = 30;
  const char *sets = "generated,github";
  char github[512];
  route_t *base = NULL;
  const char *src = __FILE__, *slash = strrchr(src, '/');
  snprintf(github, sizeof github, "%.*sgithub_routes.txt",
           slash ? (int)(slash - src + 1) : 0, src);
  for (i = 1; i + 1 < (size_t)argc; i += 2) {
    if (strcmp(argv[i], "--sizes") == 0) nsizes = parse_list(argv[i + 1], sizes, 8);
    else if (strcmp(argv[i], "--budget") == 0) budget = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--changes") == 0) count = strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--sets") == 0) sets = argv[i + 1];
    else if (strcmp(argv[i], "--github") == 0) snprintf(github, sizeof github, "%s", argv[i + 1]);
    else {
      fprintf(stderr, "usage: %s [--sizes LIST] [--budget S] [--changes N] [--sets LIST] "
                      "[--github FILE]\n", argv[0]);
      return 2;
    }
  }
  nbase = read_github(github, &base);
  printf("bench_route_table: budget %.0f s per size for one add at a time\n", budget);
  for (k = 0; k < 2; k++) {
    const char *name = k == 0 ? "generated" : "github";
    int one_by_one_done = 0;
    if (strstr(sets, name) == NULL) continue;
    if (k == 1 && nbase == 0) {
      printf("%s: %s not readable, skipped\n", name, github);
      continue;
    }
    for (i = 0; i < nsizes; i++) {
      set_t s = {name, NULL, 0};
      hr_router_options_t o;
      hr_router_t *r;
      hr_router_stats_t st;
      double secs;
      size_t in;
      int over;
      if ((k == 0 ? gen_generated(&s, sizes[i]) : gen_github(&s, sizes[i], base, nbase)) != 0)
        return 1;
      hr_router_options_init(&o);
      o.allocator = &counting;
      /* One transaction: begin, every add, commit. */
      in_use = 0;
      if (hr_router_new(&r, &o) != 0) return 1;
      register_txn(r, &s, &secs);
      hr_router_stats(r, &st);
      printf("%-9s %7zu routes: one transaction %.3f s, %.2f us per route; %.0f B per route in "
             "the table, %.0f B in all\n", name, s.n, secs, secs * 1e6 / (double)s.n,
             (double)st.table_bytes / (double)s.n, (double)in_use / (double)s.n);
      changes(r, &s, s.n, count, budget);
      lookups(r, &s, s.n);
      hr_router_free(r);
      if (one_by_one_done) {
        free(s.routes);
        continue;
      }
      /* One hr_router_add per route, within the budget. */
      in_use = 0;
      if (hr_router_new(&r, &o) != 0) return 1;
      in = register_all(r, &s, budget, &secs);
      over = in < s.n;
      hr_router_stats(r, &st);
      printf("%-9s %7zu routes: one add at a time %s%zu in %.3f s, %.1f us per route\n", name,
             s.n, over ? "over budget: " : "", in, secs, secs * 1e6 / (double)in);
      hr_router_free(r);
      free(s.routes);
      if (over) one_by_one_done = 1; /* larger sizes would only take longer */
    }
  }
  free(base);
  return 0;
}
