/* SPDX-License-Identifier: MIT */
/*
 * A thread-safe counting allocator for hr_allocator_t: counts malloc/realloc
 * calls, live blocks, bytes in use and their peak, and can fail the Nth call
 * (or every call from the Nth on) to drive out-of-memory sweeps.
 */
#ifndef HR_TEST_COUNTALLOC_H
#define HR_TEST_COUNTALLOC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <hroute.h>

typedef struct ca_s {
  hr_allocator_t hook; /* pass &ca->hook as the options' allocator */
  pthread_mutex_t mu;
  uint64_t calls;  /* malloc + realloc calls, failed ones included */
  uint64_t frees;  /* free calls with a non-NULL pointer */
  uint64_t live;   /* blocks allocated and not yet freed */
  size_t bytes;    /* bytes in use */
  size_t peak;     /* highest `bytes` since init or ca_reset_peak */
  uint64_t fail_at;       /* 0: never fail; else fail call number fail_at */
  int fail_after;         /* 1: fail every call from fail_at on */
  uint64_t failed;        /* calls failed on purpose */
} ca_t;

void ca_init(ca_t *ca);
void ca_destroy(ca_t *ca);

/* Sets the failure point (1-based call number; 0 disables). */
void ca_fail_at(ca_t *ca, uint64_t n, int and_after);

/* Consistent snapshot of the counters. */
void ca_snapshot(ca_t *ca, ca_t *out);
uint64_t ca_calls(ca_t *ca);
uint64_t ca_live(ca_t *ca);
size_t ca_bytes(ca_t *ca);
size_t ca_peak(ca_t *ca);
/* Sets peak to the current bytes in use. */
void ca_reset_peak(ca_t *ca);

#endif
