/* SPDX-License-Identifier: MIT */
/*
 * bench_router: lookup cost of hr_router_match() on a realistic route set,
 * without a server.  It loads a routes file whose lines are
 * "METHOD pattern  # path" (by default bench/github_routes.txt, found beside
 * this source file through __FILE__; or the file given as argument),
 * registers the routes through a counting allocator, checks that every path
 * reaches its own route and every miss answers 404, and then times tight
 * loops with clock_gettime(CLOCK_MONOTONIC): the whole set (every
 * method + path once per iteration, in a fixed shuffled order), one static
 * path, one one-parameter path and a list of misses.  Each case runs one
 * warm-up pass and then PASSES timed passes of enough iterations to last
 * about 20 ms each; the table gives the best and the median nanoseconds per
 * lookup, and allocations per lookup (router allocator calls during the
 * timed loops divided by the lookups: must be 0).  Results go into a
 * volatile sink so the loops cannot be optimised away.  Run it pinned, on
 * a Release build:
 *
 *   cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release
 *   cmake --build build/rel --target bench_router
 *   taskset -c 1 build/rel/bench_router bench/github_routes.txt
 *
 * With --passes N (first argument) it times nothing: after loading and
 * checking it looks the whole set up N times, in file order, and exits.
 * bench/router_instructions.sh runs that under callgrind with N and with 0
 * and divides the difference of the instruction counts by the lookups.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hroute.h>

#include "counter.h"
#include "timing.h"

#define PASSES 9
#define PASS_NS 20000000.0 /* target duration of one timed pass */
#define GOAL_NS 60.0

typedef struct lookup_s {
  hr_span_t method;
  hr_span_t path;
  size_t route; /* index of the route it must reach; (size_t)-1: a miss */
} lookup_t;

typedef struct result_s {
  double best, median;
  double allocs;
  size_t lookups; /* per pass */
} result_t;

static volatile uintptr_t sink;

/* ---- loading --------------------------------------------------------------- */

static void noop(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
      (buf = malloc((size_t)n + 1)) == NULL) {
    fclose(f);
    return NULL;
  }
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return NULL;
  }
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Next whitespace-separated word of `*p` (NUL-terminated in place), or
 * NULL at the end of the string. */
static char *word(char **p) {
  char *s = *p, *e;
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  if (*s == '\0') return NULL;
  for (e = s; *e != '\0' && *e != ' ' && *e != '\t' && *e != '\r'; e++)
    ;
  if (*e != '\0') *e++ = '\0';
  *p = e;
  return s;
}

/* Registers every "METHOD pattern  # path" line of `text` (modified in
 * place) and fills `lk` with one lookup per route.  Returns the count, or 0
 * after reporting an error. */
static size_t load_routes(hr_router_t *r, const char *file, char *text,
                          lookup_t **out) {
  size_t n = 0, cap = 0, lineno = 0;
  lookup_t *lk = NULL;
  char *line = text;
  while (line != NULL && *line != '\0') {
    char *nl = strchr(line, '\n'), *hash, *p, *method, *pattern, *path;
    hr_route_options_t ro;
    hr_route_error_t err;
    int rc;
    if (nl != NULL) *nl = '\0';
    lineno++;
    hash = strchr(line, '#');
    p = line;
    if (hash != NULL) *hash = '\0';
    method = word(&p);
    pattern = method ? word(&p) : NULL;
    path = NULL;
    if (hash != NULL) {
      p = hash + 1;
      path = word(&p);
    }
    line = nl ? nl + 1 : NULL;
    if (method == NULL) continue;
    if (pattern == NULL || path == NULL || path[0] != '/') {
      fprintf(stderr, "%s:%zu: expected \"METHOD pattern  # path\"\n", file, lineno);
      free(lk);
      return 0;
    }
    hr_route_options_init(&ro);
    ro.error = &err;
    rc = hr_router_add(r, method, pattern, noop, (void *)(uintptr_t)n, &ro);
    if (rc != 0) {
      fprintf(stderr, "%s:%zu: %s %s: %s: %s\n", file, lineno, method, pattern,
              hr_err_name(rc), err.reason ? err.reason : "");
      free(lk);
      return 0;
    }
    if (n == cap) {
      lookup_t *nl2 = realloc(lk, (cap = cap ? cap * 2 : 256) * sizeof(*lk));
      if (nl2 == NULL) {
        free(lk);
        return 0;
      }
      lk = nl2;
    }
    lk[n].method = hr_span_cstr(method);
    lk[n].path = hr_span_cstr(path);
    lk[n].route = n;
    n++;
  }
  *out = lk;
  return n;
}

/* ---- timing ---------------------------------------------------------------- */

static char scratch[8192];

/* `iters` times every lookup; returns the elapsed nanoseconds. */
static double run_pass(hr_router_t *r, const lookup_t *lk, size_t n,
                       size_t iters) {
  hr_span_t host = {NULL, 0};
  uintptr_t acc = 0;
  double t0 = (double)bench_now_ns(), t1;
  size_t it, i;
  for (it = 0; it < iters; it++) {
    for (i = 0; i < n; i++) {
      hr_match_t m;
      hr_router_match(r, lk[i].method, host, lk[i].path, scratch,
                      sizeof scratch, &m);
      acc += (uintptr_t)m.status + m.nparams + (uintptr_t)m.route;
    }
  }
  t1 = (double)bench_now_ns();
  sink += acc;
  return t1 - t0;
}

static result_t measure(hr_router_t *r, bench_counter_t *ctr, const lookup_t *lk,
                        size_t n) {
  double ns[PASSES], one;
  size_t iters, p;
  unsigned long long before;
  result_t res;
  /* Warm-up, doubling the iterations until a pass lasts a tenth of the
   * target, which also sizes the timed passes. */
  for (iters = 1;; iters *= 2) {
    one = run_pass(r, lk, n, iters);
    if (one >= PASS_NS / 10) break;
  }
  iters = (size_t)((double)iters * PASS_NS / one) + 1;
  run_pass(r, lk, n, iters);
  before = bench_counter_calls(ctr);
  for (p = 0; p < PASSES; p++) ns[p] = run_pass(r, lk, n, iters) / (double)(iters * n);
  res.allocs = (double)(bench_counter_calls(ctr) - before) / ((double)iters * (double)n * PASSES);
  res.best = bench_best(ns, PASSES);
  res.median = bench_median(ns, PASSES);
  res.lookups = iters * n;
  return res;
}

/* ---- checks ---------------------------------------------------------------- */

static int check_lookups(hr_router_t *r, const lookup_t *lk, size_t n) {
  size_t i, bad = 0;
  for (i = 0; i < n; i++) {
    hr_match_t m;
    hr_span_t host = {NULL, 0};
    int rc = hr_router_match(r, lk[i].method, host, lk[i].path, scratch,
                             sizeof scratch, &m);
    int want = lk[i].route == (size_t)-1 ? 404 : 200;
    if (rc != 0 || m.status != want ||
        (want == 200 && (m.route == NULL ||
                         (size_t)(uintptr_t)hr_route_udata(m.route) != lk[i].route))) {
      fprintf(stderr, "check: %.*s %.*s: rc %d status %d (want %d)%s%.*s\n",
              (int)lk[i].method.len, lk[i].method.ptr, (int)lk[i].path.len,
              lk[i].path.ptr, rc, m.status, want, m.route ? ", route " : "",
              m.route ? (int)hr_route_pattern(m.route).len : 0,
              m.route ? hr_route_pattern(m.route).ptr : "");
      bad++;
    }
  }
  return bad == 0 ? 0 : -1;
}

static void row(const char *name, const result_t *r) {
  printf("%-40s %12zu %9.1f %9.1f %13.2f\n", name, r->lookups, r->best,
         r->median, r->allocs);
}

static const char *default_routes(void) {
  static char path[4096];
  const char *slash = strrchr(__FILE__, '/');
  if (slash == NULL) return "github_routes.txt";
  snprintf(path, sizeof path, "%.*s/github_routes.txt",
           (int)(slash - __FILE__), __FILE__);
  return path;
}

int main(int argc, char **argv) {
  static const char *const misses[] = {
      "/nope",
      "/repos/octocat",
      "/repos/octocat/Hello-World/unknown",
      "/repos/octocat/Hello-World/issues/1347/comments/extra",
      "/users/mona/unknown/x",
      "/orgs/github/teams/justice-league/nothing",
      "/gists/aa5a315d61ae9438b18d/comments/1266/extra",
      "/user/starred/octocat",
      "/search",
      "/zzz/yyy/xxx",
  };
  enum { NMISS = sizeof misses / sizeof misses[0] };
  const char *file;
  long passes = -1; /* --passes N: untimed lookups only */
  bench_counter_t ctr;
  hr_router_options_t ro;
  hr_router_t *r = NULL;
  hr_router_stats_t st;
  lookup_t *lk = NULL, miss[NMISS], one_static, one_param;
  result_t all, rs = {0, 0, 0, 0}, rp = {0, 0, 0, 0}, rm;
  char *text, label[64];
  size_t n, i;
  int rc;
  if (argc >= 3 && strcmp(argv[1], "--passes") == 0) {
    char *end;
    passes = strtol(argv[2], &end, 10);
    if (*end != '\0' || passes < 0) passes = -2;
    argc -= 2;
    argv += 2;
  }
  if (passes == -2 || argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    fprintf(stderr, "usage: bench_router [--passes N] [ROUTES_FILE]  (default %s)\n",
            default_routes());
    return 2;
  }
  file = argc > 1 ? argv[1] : default_routes();
  text = read_file(file);
  if (text == NULL) {
    perror(file);
    return 2;
  }
  bench_counter_init(&ctr);
  hr_router_options_init(&ro);
  ro.allocator = &ctr.hook;
  if ((rc = hr_router_new(&r, &ro)) != 0) {
    fprintf(stderr, "hr_router_new: %s\n", hr_strerror(rc));
    return 1;
  }
  n = load_routes(r, file, text, &lk);
  if (n == 0) return 1;
  for (i = 0; i < NMISS; i++) {
    miss[i].method = HR_SPAN_LIT("GET");
    miss[i].path = hr_span_cstr(misses[i]);
    miss[i].route = (size_t)-1;
  }
  /* The static and one-parameter cases are timed when the route set has
   * them (the GitHub set does). */
  one_static.method = HR_SPAN_LIT("GET");
  one_static.path = HR_SPAN_LIT("/search/repositories");
  one_static.route = (size_t)-1;
  one_param.method = HR_SPAN_LIT("GET");
  one_param.path = HR_SPAN_LIT("/users/mona");
  one_param.route = (size_t)-1;
  for (i = 0; i < n; i++) {
    if (hr_span_eq(lk[i].path, one_static.path) && hr_span_eq(lk[i].method, one_static.method))
      one_static.route = lk[i].route;
    if (hr_span_eq(lk[i].path, one_param.path) && hr_span_eq(lk[i].method, one_param.method))
      one_param.route = lk[i].route;
  }
  if (check_lookups(r, lk, n) != 0 || check_lookups(r, miss, NMISS) != 0) {
    fprintf(stderr, "bench_router: the route set does not answer as expected\n");
    return 1;
  }
  if (passes >= 0) {
    /* Timed, but only the lookups differ between N and 0 passes. */
    (void)run_pass(r, lk, n, (size_t)passes);
    hr_router_free(r);
    free(lk);
    free(text);
    return 0;
  }
  bench_shuffle(lk, n, sizeof lk[0]);
  hr_router_stats(r, &st);

  all = measure(r, &ctr, lk, n);
  if (one_static.route != (size_t)-1) rs = measure(r, &ctr, &one_static, 1);
  if (one_param.route != (size_t)-1) rp = measure(r, &ctr, &one_param, 1);
  rm = measure(r, &ctr, miss, NMISS);

  printf("hroute %s bench_router: %s\n", hr_version_string(), file);
  printf("%zu routes, %zu nodes, %zu table bytes; %d timed passes per case "
         "after a warm-up\n\n",
         st.routes, st.nodes, st.table_bytes, PASSES);
  printf("%-40s %12s %9s %9s %13s\n", "case", "lookups/pass", "best ns",
         "median ns", "allocs/lookup");
  snprintf(label, sizeof label, "whole set (%zu method+path)", n);
  row(label, &all);
  if (one_static.route != (size_t)-1) row("static  GET /search/repositories", &rs);
  if (one_param.route != (size_t)-1) row("1 param GET /users/mona", &rp);
  snprintf(label, sizeof label, "misses (%d paths, 404)", NMISS);
  row(label, &rm);
  printf("\ngoal: <= %.0f ns/lookup over the whole set (median): %s\n", GOAL_NS,
         all.median <= GOAL_NS ? "met" : "MISSED");

  hr_router_free(r);
  free(lk);
  free(text);
  return 0;
}
