/* SPDX-License-Identifier: MIT */
/*
 * A counting allocator hook for the micro-benchmarks: libc underneath, and
 * the number of malloc/realloc calls (thread-safe), to print allocations
 * per operation.
 */
#ifndef BENCH_COUNTER_H
#define BENCH_COUNTER_H

#include <stdatomic.h>

#include <hroute.h>

typedef struct bench_counter_s {
  hr_allocator_t hook; /* ctx points back at this counter */
  _Atomic unsigned long long calls;
} bench_counter_t;

void bench_counter_init(bench_counter_t *c);
unsigned long long bench_counter_calls(bench_counter_t *c);

#endif /* BENCH_COUNTER_H */
