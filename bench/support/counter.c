/* SPDX-License-Identifier: MIT */
/* The counting allocator hook of bench/support/counter.h. */
#include "counter.h"

#include <stdlib.h>

static void *count_malloc(void *ctx, size_t n) {
  atomic_fetch_add_explicit(&((bench_counter_t *)ctx)->calls, 1, memory_order_relaxed);
  return malloc(n);
}

static void *count_realloc(void *ctx, void *p, size_t n) {
  atomic_fetch_add_explicit(&((bench_counter_t *)ctx)->calls, 1, memory_order_relaxed);
  return realloc(p, n);
}

static void count_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

void bench_counter_init(bench_counter_t *c) {
  c->hook.malloc = count_malloc;
  c->hook.realloc = count_realloc;
  c->hook.free = count_free;
  c->hook.ctx = c;
  atomic_init(&c->calls, 0);
}

unsigned long long bench_counter_calls(bench_counter_t *c) {
  return atomic_load_explicit(&c->calls, memory_order_relaxed);
}
