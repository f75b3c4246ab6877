/* SPDX-License-Identifier: MIT */
/*
 * The per-router registry of value types and header delegates, and the
 * lock-free lookup cache (see registry.c for the memory-ordering contract).
 */
#ifndef HR_DELEGATE_REGISTRY_H
#define HR_DELEGATE_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>

#include "hroute/delegate.h"
#include "util/mem.h"

#define HR__TYPE_CHUNK 64

typedef struct hr__dtype_s {
  hr_span_t name;
  size_t value_size;
  hr_type_id_t parent;
  hr_type_id_t ifaces[HR_MAX_INTERFACES];
  unsigned nifaces;
  hr_to_text_cb to_text;
  /* The delegate registered on this type: stored once (release), never
   * changed afterwards. */
  _Atomic(const hr_delegate_t *) delegate;
  /* The cached lookup answer: (generation << 32) | 0x80000000 | found-on
   * type id (0: no delegate).  Stored (release) by any reader after a walk
   * under an even generation, loaded with acquire. */
  _Atomic uint64_t cache;
} hr__dtype_t;

/* Lookup counters, one cache line per shard so threads do not share one. */
typedef struct hr__dshard_s {
  _Atomic uint64_t walks, hits, misses;
  char pad[64 - 3 * sizeof(uint64_t)];
} hr__dshard_t;

#define HR__DSHARDS 16

typedef struct hr__registry_s {
  hr__mem_t *mem;
  pthread_mutex_t lock; /* serialises registrations */
  _Atomic(hr__dtype_t *) chunks[HR_MAX_TYPES / HR__TYPE_CHUNK];
  _Atomic uint32_t ntypes;     /* ids 1..ntypes-1 are complete */
  /* Odd while a delegate is being published (bumped before and after it);
   * even otherwise.  Tags the cache words. */
  _Atomic uint32_t generation;
  hr__dshard_t shards[HR__DSHARDS];
} hr__registry_t;

/* Sets up the registry with the built-in types and delegates.  Returns 0
 * or HR_ENOMEM. */
int hr__registry_init(hr__registry_t *reg, hr__mem_t *mem);
void hr__registry_free(hr__registry_t *reg);

/* The lookup itself (no locks, no allocation). */
int hr__registry_lookup(hr__registry_t *reg, hr_type_id_t type, hr_lookup_t *out);

/* The type's entry, or NULL for an unknown id. */
const hr__dtype_t *hr__registry_type(hr__registry_t *reg, hr_type_id_t type);

#endif /* HR_DELEGATE_REGISTRY_H */
