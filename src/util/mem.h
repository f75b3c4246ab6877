/* SPDX-License-Identifier: MIT */
/*
 * Internal memory helpers: an allocator wrapper that counts calls (the
 * server's "allocations" statistic), a fixed-size block pool (read buffers
 * and arena blocks are recycled per loop, so a persistent connection in
 * steady state allocates nothing), and the per-request arena.
 */
#ifndef HR_UTIL_MEM_H
#define HR_UTIL_MEM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hroute/common.h"

/* An allocator plus a call counter, read by any thread with a relaxed load:
 * a statistic, nothing is ordered by it.  A worker's counter has one writer
 * (relaxed load + store, no RMW on the request path); a `shared` one (the
 * router's, used by every thread that registers or reads routes) is
 * incremented with fetch_add. */
typedef struct hr__mem_s {
  const hr_allocator_t *a;
  _Atomic uint64_t allocs;
  int shared;
} hr__mem_t;

void hr__mem_init(hr__mem_t *m, const hr_allocator_t *a);
void *hr__mem_alloc(hr__mem_t *m, size_t size);
void *hr__mem_realloc(hr__mem_t *m, void *ptr, size_t size);
void hr__mem_free(hr__mem_t *m, void *ptr);
uint64_t hr__mem_count(const hr__mem_t *m);

/* A free list of equally sized blocks, owned by one loop thread.  Keeps at
 * most `max_free` blocks; the rest go back to the allocator.  `in_use`
 * counts blocks handed out and not yet put back: one writer (the owning
 * thread, relaxed load + store), read by any thread as a statistic. */
typedef struct hr__pool_s {
  hr__mem_t *mem;
  size_t block_size;
  size_t max_free;
  size_t nfree;
  void *free_list;
  _Atomic uint64_t in_use;
} hr__pool_t;

/* Blocks of `p` handed out and not yet put back (any thread, relaxed). */
uint64_t hr__pool_in_use(const hr__pool_t *p);

void hr__pool_init(hr__pool_t *p, hr__mem_t *mem, size_t block_size,
                   size_t max_free);
void *hr__pool_get(hr__pool_t *p);
void hr__pool_put(hr__pool_t *p, void *block);
void hr__pool_drain(hr__pool_t *p);

/* Blocks of any size from size-classed pools (64, 128, 256 and 512
 * bytes), each with a 16-byte header naming its class; larger ones go
 * straight to the allocator with the same header.  For a loop's many small
 * allocations of a few sizes (nghttp2's streams, frames and header
 * entries, a stream's records): in steady state they come back from the
 * free lists, so a request allocates nothing.  One thread. */
#define HR__SLAB_CLASSES 4
typedef struct hr__slab_s {
  hr__mem_t *mem;
  hr__pool_t pools[HR__SLAB_CLASSES];
} hr__slab_t;

/* Each class keeps at most `max_free` free blocks. */
void hr__slab_init(hr__slab_t *s, hr__mem_t *mem, size_t max_free);
/* NULL when out of memory. */
void *hr__slab_alloc(hr__slab_t *s, size_t size);
/* As realloc(3): p NULL allocates; NULL when out of memory (p stays). */
void *hr__slab_realloc(hr__slab_t *s, void *p, size_t size);
void hr__slab_free(hr__slab_t *s, void *p);  /* NULL: no-op */
void hr__slab_drain(hr__slab_t *s);          /* the free lists, to the allocator */

/* Bump allocator over pool blocks; oversized requests get their own heap
 * block.  Reset releases everything in one step and returns the blocks to the
 * pool. */
typedef struct hr__arena_block_s hr__arena_block_t;
typedef struct hr__arena_s {
  hr__pool_t *pool;
  hr__arena_block_t *head; /* current block, chain of earlier ones behind */
  char *cur;
  char *end;
} hr__arena_t;

void hr__arena_init(hr__arena_t *a, hr__pool_t *pool);
void *hr__arena_alloc(hr__arena_t *a, size_t size);
/* Grows the most recent allocation `ptr` (of `old` bytes) to `size` bytes,
 * moving it when needed.  Returns the new pointer or NULL. */
void *hr__arena_grow(hr__arena_t *a, void *ptr, size_t old, size_t size);
void hr__arena_reset(hr__arena_t *a);

#endif /* HR_UTIL_MEM_H */
