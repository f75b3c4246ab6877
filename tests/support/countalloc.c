/* SPDX-License-Identifier: MIT */
/* Counting, failure-injecting allocator for hr_allocator_t (countalloc.h).
 * Each block carries a 16-byte header with its size, so bytes in use can be
 * tracked through realloc and free; 16 keeps max_align_t alignment. */
#include "countalloc.h"

#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HDR 16

static int should_fail(ca_t *ca) {
  ca->calls++;
  if (ca->fail_at != 0 &&
      (ca->calls == ca->fail_at || (ca->fail_after && ca->calls > ca->fail_at))) {
    ca->failed++;
    /* CA_BACKTRACE=1 in the environment prints where the failure hit. */
    if (getenv("CA_BACKTRACE") != NULL) {
      void *frames[16];
      int n = backtrace(frames, 16);
      static const char hdr[] = "countalloc: failing this allocation:\n";
      if (write(2, hdr, sizeof hdr - 1) < 0) {
      }
      backtrace_symbols_fd(frames, n, 2);
    }
    return 1;
  }
  return 0;
}

static void grow(ca_t *ca, size_t add) {
  ca->bytes += add;
  if (ca->bytes > ca->peak) ca->peak = ca->bytes;
}

static void *ca_malloc(void *ctx, size_t size) {
  ca_t *ca = ctx;
  unsigned char *p;
  pthread_mutex_lock(&ca->mu);
  if (should_fail(ca)) {
    pthread_mutex_unlock(&ca->mu);
    return NULL;
  }
  p = malloc(size + HDR);
  if (p != NULL) {
    memcpy(p, &size, sizeof size);
    ca->live++;
    grow(ca, size);
  }
  pthread_mutex_unlock(&ca->mu);
  return p == NULL ? NULL : p + HDR;
}

static void ca_free(void *ctx, void *ptr) {
  ca_t *ca = ctx;
  unsigned char *p;
  size_t size;
  if (ptr == NULL) return;
  p = (unsigned char *)ptr - HDR;
  memcpy(&size, p, sizeof size);
  pthread_mutex_lock(&ca->mu);
  ca->frees++;
  ca->live--;
  ca->bytes -= size;
  pthread_mutex_unlock(&ca->mu);
  free(p);
}

static void *ca_realloc(void *ctx, void *ptr, size_t size) {
  ca_t *ca = ctx;
  unsigned char *p, *n;
  size_t old;
  if (ptr == NULL) return ca_malloc(ctx, size);
  p = (unsigned char *)ptr - HDR;
  memcpy(&old, p, sizeof old);
  pthread_mutex_lock(&ca->mu);
  if (should_fail(ca)) {
    pthread_mutex_unlock(&ca->mu);
    return NULL;
  }
  n = realloc(p, size + HDR);
  if (n != NULL) {
    memcpy(n, &size, sizeof size);
    ca->bytes -= old;
    grow(ca, size);
  }
  pthread_mutex_unlock(&ca->mu);
  return n == NULL ? NULL : n + HDR;
}

void ca_init(ca_t *ca) {
  memset(ca, 0, sizeof *ca);
  pthread_mutex_init(&ca->mu, NULL);
  ca->hook.malloc = ca_malloc;
  ca->hook.realloc = ca_realloc;
  ca->hook.free = ca_free;
  ca->hook.ctx = ca;
}

void ca_destroy(ca_t *ca) { pthread_mutex_destroy(&ca->mu); }

void ca_fail_at(ca_t *ca, uint64_t n, int and_after) {
  pthread_mutex_lock(&ca->mu);
  ca->fail_at = n;
  ca->fail_after = and_after;
  pthread_mutex_unlock(&ca->mu);
}

void ca_snapshot(ca_t *ca, ca_t *out) {
  pthread_mutex_lock(&ca->mu);
  out->calls = ca->calls;
  out->frees = ca->frees;
  out->live = ca->live;
  out->bytes = ca->bytes;
  out->peak = ca->peak;
  out->fail_at = ca->fail_at;
  out->fail_after = ca->fail_after;
  out->failed = ca->failed;
  pthread_mutex_unlock(&ca->mu);
}

uint64_t ca_calls(ca_t *ca) {
  uint64_t v;
  pthread_mutex_lock(&ca->mu);
  v = ca->calls;
  pthread_mutex_unlock(&ca->mu);
  return v;
}

uint64_t ca_live(ca_t *ca) {
  uint64_t v;
  pthread_mutex_lock(&ca->mu);
  v = ca->live;
  pthread_mutex_unlock(&ca->mu);
  return v;
}

size_t ca_bytes(ca_t *ca) {
  size_t v;
  pthread_mutex_lock(&ca->mu);
  v = ca->bytes;
  pthread_mutex_unlock(&ca->mu);
  return v;
}

size_t ca_peak(ca_t *ca) {
  size_t v;
  pthread_mutex_lock(&ca->mu);
  v = ca->peak;
  pthread_mutex_unlock(&ca->mu);
  return v;
}

void ca_reset_peak(ca_t *ca) {
  pthread_mutex_lock(&ca->mu);
  ca->peak = ca->bytes;
  pthread_mutex_unlock(&ca->mu);
}
