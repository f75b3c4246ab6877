/* SPDX-License-Identifier: MIT */
/*
 * Routes by place (writer side): a hash index from a route's place -- its
 * host and its pattern up to parameter names, where the route tree would
 * put it -- to the routes there, so that a batch of changes (batch.c)
 * finds a duplicate, the route a replace or a remove names, in constant
 * time instead of a walk over every route.  Entries point at route cores
 * (the caller keeps them alive) and carry the caller's position number.
 * Not thread-safe: one writer at a time.
 */
#ifndef HR_ROUTER_PLACE_H
#define HR_ROUTER_PLACE_H

#include <stdint.h>

#include "router/route.h"

typedef struct hr__place_s {
  uint64_t hash;
  const hr__core_t *core;
  size_t pos;    /* the caller's number for the route */
  uint32_t next; /* next entry of the bucket, or UINT32_MAX */
  int live;      /* 0 once dropped */
} hr__place_t;

typedef struct hr__places_s {
  hr__mem_t *m;
  hr__place_t *ents;
  size_t nents, cap;
  uint32_t *heads; /* bucket heads, nheads a power of two */
  size_t nheads;
} hr__places_t;

void hr__places_init(hr__places_t *p, hr__mem_t *m);
void hr__places_free(hr__places_t *p);
/* Indexes `core` with position `pos`.  Returns 0 or HR_ENOMEM. */
int hr__places_put(hr__places_t *p, const hr__core_t *core, size_t pos);
/* The live entry at `core`'s place whose methods are the same set as its
 * (same = 1), or share one with its (same = 0); NULL when there is none. */
hr__place_t *hr__places_find(hr__places_t *p, const hr__core_t *core, int same);
/* Drops an entry that hr__places_find returned. */
void hr__places_drop(hr__place_t *e);

#endif /* HR_ROUTER_PLACE_H */
