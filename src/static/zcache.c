/* SPDX-License-Identifier: MIT */
/*
 * The static handler's cache of files compressed on the fly, one per loop
 * beside its open-file cache: a file's compressed bytes under its name,
 * identity (the open-file entry's version, from its inode and modification
 * time, and its size), coding and level, so that a changed file is a new
 * key and is never answered with the old bytes; at most `max` bytes of
 * compressed data, the least recently used out first.  Responses hold a
 * reference on the entry they send; one pushed out is freed when the last
 * ends.  Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "static/static.h"

#define ZBUCKETS 1024 /* a power of two */

static size_t key_hash(const char *name, size_t n, uint64_t version, uint64_t size, int coding) {
  size_t h = 1469598103934665603ull; /* FNV-1a over the name, then the rest */
  while (n--) h = (h ^ (unsigned char)*name++) * 1099511628211ull;
  h ^= (size_t)(version * 0x9E3779B97F4A7C15ull) ^ (size_t)size ^ (size_t)coding << 7;
  return h & (ZBUCKETS - 1);
}

static void lru_unlink(hr__zent_t *e) {
  e->lru_prev->lru_next = e->lru_next;
  e->lru_next->lru_prev = e->lru_prev;
}

static void lru_front(hr__zcache_t *z, hr__zent_t *e) {
  e->lru_next = z->lru.lru_next;
  e->lru_prev = &z->lru;
  z->lru.lru_next->lru_prev = e;
  z->lru.lru_next = e;
}

int hr__zcache_init(hr__zcache_t *z, size_t max) {
  memset(z, 0, sizeof(*z));
  z->max = max;
  z->lru.lru_next = z->lru.lru_prev = &z->lru;
  if (max == 0) return 0;
  z->buckets = calloc(ZBUCKETS, sizeof(*z->buckets));
  return z->buckets != NULL ? 0 : HR_ENOMEM;
}

hr__zent_t *hr__zent_new(const char *name, uint64_t version, uint64_t size, int coding, int level,
                         unsigned char *bytes, size_t len) {
  size_t n = strlen(name);
  hr__zent_t *e = malloc(sizeof(*e) + n + 1);
  if (e == NULL) return NULL;
  memset(e, 0, sizeof(*e));
  e->name = (char *)(e + 1);
  memcpy(e->name, name, n + 1);
  e->name_len = n;
  e->version = version;
  e->size = size;
  e->coding = coding;
  e->level = level;
  e->bytes = bytes;
  e->len = len;
  e->refs = 1;
  return e;
}

void hr__zent_unref(hr__zent_t *e) {
  if (--e->refs > 0) return;
  free(e->bytes);
  free(e);
}

/* Takes `e` out of the table (its references keep it alive). */
static void drop(hr__zcache_t *z, hr__zent_t *e) {
  hr__zent_t **pp = &z->buckets[key_hash(e->name, e->name_len, e->version, e->size, e->coding)];
  while (*pp != e) pp = &(*pp)->next;
  *pp = e->next;
  lru_unlink(e);
  z->bytes -= e->len;
  hr__zent_unref(e);
}

hr__zent_t *hr__zcache_find(hr__zcache_t *z, const char *name, uint64_t version, uint64_t size,
                            int coding, int level) {
  size_t n = strlen(name);
  hr__zent_t *e;
  if (z->buckets == NULL) return NULL;
  for (e = z->buckets[key_hash(name, n, version, size, coding)]; e != NULL; e = e->next)
    if (e->version == version && e->size == size && e->coding == coding && e->level == level &&
        e->name_len == n && memcmp(e->name, name, n) == 0) {
      lru_unlink(e);
      lru_front(z, e);
      e->refs++;
      return e;
    }
  return NULL;
}

void hr__zcache_put(hr__zcache_t *z, hr__zent_t *e) {
  hr__zent_t **b;
  if (z->buckets == NULL || e->len > z->max) return;
  /* The same key met twice (two misses in flight): the older goes. */
  b = &z->buckets[key_hash(e->name, e->name_len, e->version, e->size, e->coding)];
  for (hr__zent_t *o = *b; o != NULL; o = o->next)
    if (o->version == e->version && o->size == e->size && o->coding == e->coding &&
        o->level == e->level && o->name_len == e->name_len &&
        memcmp(o->name, e->name, e->name_len) == 0) {
      drop(z, o);
      break;
    }
  while (z->bytes + e->len > z->max && z->lru.lru_prev != &z->lru) drop(z, z->lru.lru_prev);
  e->refs++; /* the cache's */
  e->next = *b;
  *b = e;
  lru_front(z, e);
  z->bytes += e->len;
}

void hr__zcache_free(hr__zcache_t *z) {
  while (z->buckets != NULL && z->lru.lru_prev != &z->lru) drop(z, z->lru.lru_prev);
  free(z->buckets);
  z->buckets = NULL;
}
