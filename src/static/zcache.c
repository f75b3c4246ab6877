/* SPDX-License-Identifier: MIT */
/*
 * The static handler's cache of files compressed on the fly, one per loop
 * beside its open-file cache: a file's compressed bytes (or the note that
 * it did not shrink) under its name, identity (the open-file entry's
 * version, from its inode and modification time, its change time and
 * size), coding and level, so that a changed file is a new key and is
 * never answered with the old bytes; at most `max` bytes of compressed
 * data (a note counts 64), the least recently used out first.  Responses
 * hold a reference on the entry they send; one pushed out is freed when
 * the last ends.  Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "static/static.h"

#define ZBUCKETS 1024 /* a power of two */
#define NOTE_COST 64  /* what a "did not shrink" entry counts */

static size_t key_hash(const hr__zkey_t *k) {
  const char *p = k->name;
  size_t n = k->name_len, h = 1469598103934665603ull; /* FNV-1a over the name */
  while (n--) h = (h ^ (unsigned char)*p++) * 1099511628211ull;
  h ^= (size_t)(k->version * 0x9E3779B97F4A7C15ull) ^ (size_t)k->change ^ (size_t)k->size ^
       (size_t)k->coding << 7 ^ (size_t)k->level << 11;
  return h & (ZBUCKETS - 1);
}

static int key_eq(const hr__zkey_t *a, const hr__zkey_t *b) {
  return a->version == b->version && a->change == b->change && a->size == b->size &&
         a->coding == b->coding && a->level == b->level && a->name_len == b->name_len &&
         memcmp(a->name, b->name, a->name_len) == 0;
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

hr__zent_t *hr__zent_new(const hr__zkey_t *k, unsigned char *bytes, size_t len) {
  hr__zent_t *e = malloc(sizeof(*e) + k->name_len + 1);
  char *name;
  if (e == NULL) return NULL;
  memset(e, 0, sizeof(*e));
  name = (char *)(e + 1);
  memcpy(name, k->name, k->name_len);
  name[k->name_len] = '\0';
  e->key = *k;
  e->key.name = name;
  e->bytes = bytes;
  e->len = len;
  e->plain = bytes == NULL;
  e->cost = bytes == NULL ? NOTE_COST : len;
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
  hr__zent_t **pp = &z->buckets[key_hash(&e->key)];
  while (*pp != e) pp = &(*pp)->next;
  *pp = e->next;
  lru_unlink(e);
  z->bytes -= e->cost;
  hr__zent_unref(e);
}

hr__zent_t *hr__zcache_find(hr__zcache_t *z, const hr__zkey_t *k) {
  hr__zent_t *e;
  if (z->buckets == NULL) return NULL;
  for (e = z->buckets[key_hash(k)]; e != NULL; e = e->next)
    if (key_eq(&e->key, k)) {
      lru_unlink(e);
      lru_front(z, e);
      e->refs++;
      return e;
    }
  return NULL;
}

void hr__zcache_put(hr__zcache_t *z, hr__zent_t *e) {
  hr__zent_t **b, *o;
  if (z->buckets == NULL || e->cost > z->max) return;
  b = &z->buckets[key_hash(&e->key)];
  for (o = *b; o != NULL; o = o->next) /* one entry per key */
    if (key_eq(&o->key, &e->key)) {
      drop(z, o);
      break;
    }
  while (z->bytes + e->cost > z->max && z->lru.lru_prev != &z->lru) drop(z, z->lru.lru_prev);
  e->refs++; /* the cache's */
  e->next = *b;
  *b = e;
  lru_front(z, e);
  z->bytes += e->cost;
}

void hr__zcache_free(hr__zcache_t *z) {
  while (z->buckets != NULL && z->lru.lru_prev != &z->lru) drop(z, z->lru.lru_prev);
  free(z->buckets);
  z->buckets = NULL;
}
