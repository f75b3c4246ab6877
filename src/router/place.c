/* SPDX-License-Identifier: MIT */
/*
 * Routes by place: chained hashing over an entry array that only grows
 * (dropped entries stay, unlinked from nothing: a batch drops few), with
 * the bucket array doubled when entries pass it.  The hash is FNV-1a over
 * the host and, per pattern token, its kind and, for literal text, its
 * bytes: exactly what hr__patterns_equiv compares, so equivalent patterns
 * hash alike.
 */
#include <string.h>

#include "router/place.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n--) h = (h ^ *b++) * 1099511628211u;
  return h;
}

static uint64_t place_hash(const hr__core_t *c) {
  uint64_t h = fnv(14695981039346656037u, c->host.ptr, c->host.len);
  size_t i;
  h = fnv(h, "\0", 1);
  for (i = 0; i < c->ntoks; i++) {
    unsigned char kind = (unsigned char)c->toks[i].kind;
    h = fnv(h, &kind, 1);
    if (c->toks[i].kind == HR__TOK_STATIC) h = fnv(h, c->toks[i].text.ptr, c->toks[i].text.len);
  }
  return h;
}

void hr__places_init(hr__places_t *p, hr__mem_t *m) {
  memset(p, 0, sizeof(*p));
  p->m = m;
}

void hr__places_free(hr__places_t *p) {
  hr__mem_free(p->m, p->ents);
  hr__mem_free(p->m, p->heads);
  hr__places_init(p, p->m);
}

/* Doubles the buckets (at least 64) and relinks every entry. */
static int rehash(hr__places_t *p) {
  size_t n = p->nheads ? p->nheads * 2 : 64, i;
  uint32_t *heads = hr__mem_alloc(p->m, n * sizeof(*heads));
  if (heads == NULL) return HR_ENOMEM;
  memset(heads, 0xff, n * sizeof(*heads));
  for (i = 0; i < p->nents; i++) {
    size_t b = (size_t)(p->ents[i].hash & (n - 1));
    p->ents[i].next = heads[b];
    heads[b] = (uint32_t)i;
  }
  hr__mem_free(p->m, p->heads);
  p->heads = heads;
  p->nheads = n;
  return 0;
}

int hr__places_put(hr__places_t *p, const hr__core_t *core, size_t pos) {
  hr__place_t *e;
  size_t b;
  if (p->nents >= UINT32_MAX - 1) return HR_ENOMEM;
  if (p->nents == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 64;
    hr__place_t *ents = hr__mem_realloc(p->m, p->ents, cap * sizeof(*ents));
    if (ents == NULL) return HR_ENOMEM;
    p->ents = ents;
    p->cap = cap;
  }
  if (p->nents >= p->nheads && rehash(p) != 0) return HR_ENOMEM;
  e = &p->ents[p->nents];
  e->hash = place_hash(core);
  e->core = core;
  e->pos = pos;
  e->live = 1;
  b = (size_t)(e->hash & (p->nheads - 1));
  e->next = p->heads[b];
  p->heads[b] = (uint32_t)p->nents++;
  return 0;
}

hr__place_t *hr__places_find(hr__places_t *p, const hr__core_t *core, int same) {
  uint64_t h;
  uint32_t i;
  if (p->nheads == 0) return NULL;
  h = place_hash(core);
  for (i = p->heads[h & (p->nheads - 1)]; i != UINT32_MAX; i = p->ents[i].next) {
    hr__place_t *e = &p->ents[i];
    if (!e->live || e->hash != h || !hr_span_eq(e->core->host, core->host) ||
        !hr__patterns_equiv(e->core, core))
      continue;
    if (same ? hr__methods_equal(e->core, core) : hr__methods_overlap(e->core, core)) return e;
  }
  return NULL;
}

void hr__places_drop(hr__place_t *e) { e->live = 0; }
