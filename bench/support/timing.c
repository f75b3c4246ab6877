/* SPDX-License-Identifier: MIT */
/*
 * Timing helpers for the micro-benchmarks (see timing.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double bench_best(const double *v, size_t n) {
  double best = v[0];
  size_t i;
  for (i = 1; i < n; i++)
    if (v[i] < best) best = v[i];
  return best;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(const double *v, size_t n) {
  double small[64], *s = small, m;
  if (n > sizeof(small) / sizeof(small[0])) {
    s = malloc(n * sizeof(*s));
    if (s == NULL) return v[0];
  }
  memcpy(s, v, n * sizeof(*s));
  qsort(s, n, sizeof(*s), cmp_double);
  m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  if (s != small) free(s);
  return m;
}
