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

void bench_shuffle(void *base, size_t n, size_t size) {
  unsigned long long x = 0x9E3779B97F4A7C15ull;
  unsigned char *b = base, tmp[256];
  size_t i;
  if (size > sizeof(tmp)) return; /* elements are ids and small records */
  for (i = n; i > 1; i--) {
    size_t j;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    j = (size_t)(x % i);
    memcpy(tmp, b + (i - 1) * size, size);
    memcpy(b + (i - 1) * size, b + j * size, size);
    memcpy(b + j * size, tmp, size);
  }
}
