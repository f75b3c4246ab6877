/* SPDX-License-Identifier: MIT */
/*
 * Counting allocator wrapper, per-loop block pool and the request arena
 * (see mem.h).
 */
#include "util/mem.h"

#include <stdlib.h>
#include <string.h>

static void *libc_malloc(void *ctx, size_t size) {
  (void)ctx;
  return malloc(size);
}

static void *libc_realloc(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  return realloc(ptr, size);
}

static void libc_free(void *ctx, void *ptr) {
  (void)ctx;
  free(ptr);
}

static const hr_allocator_t libc_allocator = {libc_malloc, libc_realloc,
                                              libc_free, NULL};

const hr_allocator_t *hr_allocator_default(void) { return &libc_allocator; }

void hr__mem_init(hr__mem_t *m, const hr_allocator_t *a) {
  m->a = a != NULL ? a : &libc_allocator;
  atomic_init(&m->allocs, 0);
  m->shared = 0;
}

static void count_one(hr__mem_t *m) {
  uint64_t n;
  if (m->shared) {
    atomic_fetch_add_explicit(&m->allocs, 1, memory_order_relaxed);
    return;
  }
  /* Single writer: relaxed load + store; readers only want a statistic. */
  n = atomic_load_explicit(&m->allocs, memory_order_relaxed);
  atomic_store_explicit(&m->allocs, n + 1, memory_order_relaxed);
}

void *hr__mem_alloc(hr__mem_t *m, size_t size) {
  count_one(m);
  return m->a->malloc(m->a->ctx, size == 0 ? 1 : size);
}

void *hr__mem_realloc(hr__mem_t *m, void *ptr, size_t size) {
  count_one(m);
  return m->a->realloc(m->a->ctx, ptr, size == 0 ? 1 : size);
}

void hr__mem_free(hr__mem_t *m, void *ptr) {
  if (ptr != NULL) m->a->free(m->a->ctx, ptr);
}

uint64_t hr__mem_count(const hr__mem_t *m) {
  return atomic_load_explicit(&m->allocs, memory_order_relaxed);
}

/* ---- pool ---------------------------------------------------------------- */

void hr__pool_init(hr__pool_t *p, hr__mem_t *mem, size_t block_size,
                   size_t max_free) {
  p->mem = mem;
  p->block_size = block_size < sizeof(void *) ? sizeof(void *) : block_size;
  p->max_free = max_free;
  p->nfree = 0;
  p->free_list = NULL;
  atomic_init(&p->in_use, 0);
}

/* Single writer: relaxed load + store; readers only want a statistic. */
static void in_use_add(hr__pool_t *p, int d) {
  uint64_t n = atomic_load_explicit(&p->in_use, memory_order_relaxed);
  atomic_store_explicit(&p->in_use, n + (uint64_t)(int64_t)d, memory_order_relaxed);
}

uint64_t hr__pool_in_use(const hr__pool_t *p) {
  return atomic_load_explicit(&p->in_use, memory_order_relaxed);
}

void *hr__pool_get(hr__pool_t *p) {
  void *b = p->free_list;
  if (b != NULL) {
    memcpy(&p->free_list, b, sizeof(void *));
    p->nfree--;
  } else {
    b = hr__mem_alloc(p->mem, p->block_size);
    if (b == NULL) return NULL;
  }
  in_use_add(p, 1);
  return b;
}

void hr__pool_put(hr__pool_t *p, void *block) {
  if (block == NULL) return;
  in_use_add(p, -1);
  if (p->nfree >= p->max_free) {
    hr__mem_free(p->mem, block);
    return;
  }
  memcpy(block, &p->free_list, sizeof(void *));
  p->free_list = block;
  p->nfree++;
}

void hr__pool_drain(hr__pool_t *p) {
  while (p->free_list != NULL) {
    void *b = p->free_list;
    memcpy(&p->free_list, b, sizeof(void *));
    hr__mem_free(p->mem, b);
  }
  p->nfree = 0;
}

/* ---- slab ---------------------------------------------------------------- */

/* The header before each block: its class, or HR__SLAB_CLASSES for a block
 * straight from the allocator; 16 bytes keep the block aligned as
 * malloc's. */
#define HR__SLAB_HDR 16u
#define HR__SLAB_MIN 64u

void hr__slab_init(hr__slab_t *s, hr__mem_t *mem, size_t max_free) {
  unsigned i;
  s->mem = mem;
  for (i = 0; i < HR__SLAB_CLASSES; i++)
    hr__pool_init(&s->pools[i], mem, HR__SLAB_HDR + (HR__SLAB_MIN << i), max_free);
}

static unsigned slab_class(size_t size) {
  unsigned i = 0;
  while (i < HR__SLAB_CLASSES && size > (HR__SLAB_MIN << i)) i++;
  return i;
}

void *hr__slab_alloc(hr__slab_t *s, size_t size) {
  unsigned k = slab_class(size);
  unsigned char *b;
  if (k < HR__SLAB_CLASSES)
    b = hr__pool_get(&s->pools[k]);
  else
    b = size > SIZE_MAX - HR__SLAB_HDR ? NULL : hr__mem_alloc(s->mem, size + HR__SLAB_HDR);
  if (b == NULL) return NULL;
  b[0] = (unsigned char)k;
  return b + HR__SLAB_HDR;
}

void hr__slab_free(hr__slab_t *s, void *p) {
  unsigned char *b;
  if (p == NULL) return;
  b = (unsigned char *)p - HR__SLAB_HDR;
  if (b[0] < HR__SLAB_CLASSES)
    hr__pool_put(&s->pools[b[0]], b);
  else
    hr__mem_free(s->mem, b);
}

void *hr__slab_realloc(hr__slab_t *s, void *p, size_t size) {
  unsigned char *b, *n;
  size_t have;
  if (p == NULL) return hr__slab_alloc(s, size);
  b = (unsigned char *)p - HR__SLAB_HDR;
  if (b[0] >= HR__SLAB_CLASSES && slab_class(size) >= HR__SLAB_CLASSES) {
    if (size > SIZE_MAX - HR__SLAB_HDR) return NULL;
    n = hr__mem_realloc(s->mem, b, size + HR__SLAB_HDR);
    return n != NULL ? n + HR__SLAB_HDR : NULL;
  }
  if (b[0] < HR__SLAB_CLASSES && size <= (HR__SLAB_MIN << b[0])) return p;
  n = hr__slab_alloc(s, size);
  if (n == NULL) return NULL;
  /* A direct block's old size is not kept: it only shrinks into a class
   * here, so the new size bounds what is copied. */
  have = b[0] < HR__SLAB_CLASSES ? (HR__SLAB_MIN << b[0]) : size;
  memcpy(n, p, have < size ? have : size);
  hr__slab_free(s, p);
  return n;
}

void hr__slab_drain(hr__slab_t *s) {
  unsigned i;
  for (i = 0; i < HR__SLAB_CLASSES; i++) hr__pool_drain(&s->pools[i]);
}

/* ---- arena --------------------------------------------------------------- */

/* Block header; pooled blocks have the pool's size, oversized ones are
 * allocated exactly and flagged so reset frees them instead. */
struct hr__arena_block_s {
  hr__arena_block_t *prev;
  int pooled;
  /* 8-byte aligned payload follows */
};

#define HR__HDR ((sizeof(hr__arena_block_t) + 15u) & ~(size_t)15u)
#define HR__ALIGN(n) (((n) + 7u) & ~(size_t)7u)

void hr__arena_init(hr__arena_t *a, hr__pool_t *pool) {
  a->pool = pool;
  a->head = NULL;
  a->cur = NULL;
  a->end = NULL;
}

static int arena_new_block(hr__arena_t *a, size_t need) {
  hr__arena_block_t *b;
  size_t cap = a->pool->block_size - HR__HDR;
  if (need <= cap) {
    b = hr__pool_get(a->pool);
    if (b == NULL) return -1;
    b->pooled = 1;
  } else {
    if (need > SIZE_MAX - HR__HDR) return -1;
    b = hr__mem_alloc(a->pool->mem, HR__HDR + need);
    if (b == NULL) return -1;
    b->pooled = 0;
    cap = need;
  }
  b->prev = a->head;
  a->head = b;
  a->cur = (char *)b + HR__HDR;
  a->end = a->cur + cap;
  return 0;
}

void *hr__arena_alloc(hr__arena_t *a, size_t size) {
  char *p;
  if (size > SIZE_MAX - 8) return NULL;
  size = HR__ALIGN(size);
  if (a->cur == NULL || (size_t)(a->end - a->cur) < size) {
    if (arena_new_block(a, size) != 0) return NULL;
  }
  p = a->cur;
  a->cur += size;
  return p;
}

void *hr__arena_grow(hr__arena_t *a, void *ptr, size_t old, size_t size) {
  char *p = ptr;
  size_t old_al = HR__ALIGN(old);
  void *n;
  if (size <= old) return ptr;
  /* In place when `ptr` is the last allocation and the block has room. */
  if (p != NULL && p + old_al == a->cur &&
      (size_t)(a->end - p) >= HR__ALIGN(size)) {
    a->cur = p + HR__ALIGN(size);
    return ptr;
  }
  n = hr__arena_alloc(a, size);
  if (n != NULL && old > 0) memcpy(n, ptr, old);
  return n;
}

void hr__arena_reset(hr__arena_t *a) {
  hr__arena_block_t *b = a->head;
  while (b != NULL) {
    hr__arena_block_t *prev = b->prev;
    if (b->pooled)
      hr__pool_put(a->pool, b);
    else
      hr__mem_free(a->pool->mem, b);
    b = prev;
  }
  a->head = NULL;
  a->cur = NULL;
  a->end = NULL;
}
