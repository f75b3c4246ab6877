/* SPDX-License-Identifier: MIT */
/*
 * Timing helpers for the micro-benchmarks: a monotonic clock in
 * nanoseconds and the best and median of a set of per-pass results.
 */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* The smallest of `n` (>= 1) values. */
double bench_best(const double *v, size_t n);

/* The median of `n` (>= 1) values (the mean of the middle two for an even
 * count); `v` is not changed. */
double bench_median(const double *v, size_t n);

/* Shuffles `n` elements of `size` bytes with a fixed seed: every run uses
 * the same order, and consecutive operations do not touch neighbouring
 * entries. */
void bench_shuffle(void *base, size_t n, size_t size);

#endif /* BENCH_TIMING_H */
