/* SPDX-License-Identifier: MIT */
/*
 * Value types, header delegates and the lookup cache.
 *
 * Publication: a type is written completely into its slot (its chunk is
 * published first, with a release store of the chunk pointer), then
 * `ntypes` is stored with release; a reader that loads `ntypes` with
 * acquire and finds the id below it sees the whole entry.  A delegate is
 * copied into its own allocation; `generation` is made odd (release: a
 * registration is under way), the copy is stored into its type's
 * `delegate` with release, and `generation` is made even again (release).
 *
 * The cache: each type holds one atomic word {generation, found-on id}.  A
 * reader loads `generation` (acquire).  Even: the word (acquire) tagged
 * with it is the answer (hit, or cached miss); otherwise the reader walks
 * the type graph (acquire loads of `delegate`) and stores the word (release)
 * tagged with the generation it loaded *before* walking.  If a registration
 * landed during the walk, that tag is already stale and the next lookup
 * walks again.  Odd: a registration is under way and what a walk finds may
 * still change, so the reader walks and caches nothing.
 *
 * Why each piece (tests/model/cache.pml checks them, with a mutation for
 * each): a single bump after publication let a reader walk, find the new
 * delegate before the bump, and then hit a miss another reader had cached
 * under the old generation (a revert); the odd bump before publication
 * makes a reader that sees the delegate also see a newer generation than
 * any such word.  Caching under the odd generation would let the same
 * revert through.  A relaxed word let a hit name a delegate whose pointer
 * this thread could still read as NULL; release/acquire on the word carry
 * the walker's view along.  Entries are per registered type only
 * (bounded); unknown ids are refused before the cache is touched.
 */
#include <string.h>

#include "delegate/builtin.h"
#include "delegate/registry.h"
#include "router/route.h"
#include "util/testpoint.h"

/* ---- counters -------------------------------------------------------------- */

/* Which counter shard this thread uses: handed out round-robin the first
 * time a thread counts (a thread id, not shared state). */
static _Atomic unsigned next_shard;
/* 0: not assigned yet; else index + 1.  initial-exec: no __tls_get_addr
 * call on each lookup when hroute is a shared library. */
static _Thread_local unsigned my_shard __attribute__((tls_model("initial-exec")));

static hr__dshard_t *shard(hr__registry_t *reg) {
  if (my_shard == 0)
    my_shard = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
                   HR__DSHARDS + 1;
  return &reg->shards[my_shard - 1];
}

static void count(_Atomic uint64_t *c) {
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- types ----------------------------------------------------------------- */

const hr__dtype_t *hr__registry_type(hr__registry_t *reg, hr_type_id_t type) {
  /* Pairs with the release store of ntypes in add_type(). */
  uint32_t n = atomic_load_explicit(&reg->ntypes, memory_order_acquire);
  hr__dtype_t *chunk;
  if (type == 0 || type >= n) return NULL;
  /* The chunk was published before ntypes covered this id. */
  chunk = atomic_load_explicit(&reg->chunks[type / HR__TYPE_CHUNK], memory_order_relaxed);
  return &chunk[type % HR__TYPE_CHUNK];
}

/* Adds a type (lock held).  Returns 0 or an error code. */
static int add_type(hr__registry_t *reg, const char *name, size_t value_size,
                    hr_type_id_t parent, const hr_type_id_t *ifaces, size_t nifaces,
                    hr_to_text_cb to_text, hr_type_id_t *out) {
  uint32_t id = atomic_load_explicit(&reg->ntypes, memory_order_relaxed);
  size_t ci = id / HR__TYPE_CHUNK, nl = strlen(name), i;
  hr__dtype_t *chunk, *t;
  char *copy;
  if (nl == 0 || nifaces > HR_MAX_INTERFACES || (nifaces && ifaces == NULL))
    return HR_EINVAL;
  if (parent != 0 && parent >= id) return HR_EINVAL;
  for (i = 0; i < nifaces; i++)
    if (ifaces[i] == 0 || ifaces[i] >= id) return HR_EINVAL;
  if (id >= HR_MAX_TYPES) return HR_ETOOLARGE;
  chunk = atomic_load_explicit(&reg->chunks[ci], memory_order_relaxed);
  if (chunk == NULL) {
    chunk = hr__mem_alloc(reg->mem, HR__TYPE_CHUNK * sizeof(*chunk));
    if (chunk == NULL) return HR_ENOMEM;
    memset(chunk, 0, HR__TYPE_CHUNK * sizeof(*chunk));
    /* Pairs with the acquire load of ntypes by readers (the chunk is
     * visible before any id in it is). */
    atomic_store_explicit(&reg->chunks[ci], chunk, memory_order_release);
  }
  copy = hr__mem_alloc(reg->mem, nl + 1);
  if (copy == NULL) return HR_ENOMEM;
  memcpy(copy, name, nl + 1);
  t = &chunk[id % HR__TYPE_CHUNK];
  t->name.ptr = copy;
  t->name.len = nl;
  t->value_size = value_size;
  t->parent = parent;
  t->nifaces = (unsigned)nifaces;
  for (i = 0; i < nifaces; i++) t->ifaces[i] = ifaces[i];
  t->to_text = to_text;
  atomic_init(&t->delegate, NULL);
  atomic_init(&t->cache, 0);
  /* Pairs with the acquire load in hr__registry_type(): the entry is
   * complete before its id is valid. */
  atomic_store_explicit(&reg->ntypes, id + 1, memory_order_release);
  *out = id;
  return 0;
}

static int add_delegate(hr__registry_t *reg, hr_type_id_t type,
                        const hr_delegate_t *d) {
  hr__dtype_t *t = (hr__dtype_t *)hr__registry_type(reg, type);
  hr_delegate_t *copy;
  if (t == NULL || d == NULL || (d->format == NULL && d->parse == NULL))
    return HR_EINVAL;
  if (atomic_load_explicit(&t->delegate, memory_order_relaxed) != NULL)
    return HR_EEXIST;
  copy = hr__mem_alloc(reg->mem, sizeof(*copy));
  if (copy == NULL) return HR_ENOMEM;
  *copy = *d;
  /* Odd: under way.  Before the delegate: a reader that sees the delegate
   * (acquire) sees this too, so it never trusts a word tagged before.
   * Registrations are serialised (reg->lock), so parity tells. */
  atomic_fetch_add_explicit(&reg->generation, 1, memory_order_release);
  HR__TP(HR__TP_DELEGATE_ODD, reg);
  /* Pairs with the acquire loads in walk(). */
  atomic_store_explicit(&t->delegate, copy, memory_order_release);
  HR__TP(HR__TP_DELEGATE_STORED, reg);
  /* Even: in force.  A reader that sees it finds the delegate.  Pairs with
   * the acquire load of generation in hr__registry_lookup(). */
  atomic_fetch_add_explicit(&reg->generation, 1, memory_order_release);
  return 0;
}

/* ---- lookup ---------------------------------------------------------------- */

/* Depth-first: the type, its interfaces in declared order (each with
 * everything it reaches), then its parent.  Ids only point to smaller ids,
 * so there is no cycle and the path is at most HR_MAX_TYPES long; `seen`
 * keeps diamonds from being walked twice.  Frames on an explicit stack (no
 * recursion): 32 KiB of stack at most. */
static hr_type_id_t walk(hr__registry_t *reg, hr_type_id_t start) {
  struct frame {
    hr_type_id_t id;
    unsigned step; /* next child: interfaces 0..n-1, then the parent */
  } st[HR_MAX_TYPES];
  unsigned char seen[HR_MAX_TYPES / 8];
  size_t sp = 0;
  const hr__dtype_t *t = hr__registry_type(reg, start);
  /* Pairs with the release store in add_delegate(). */
  if (atomic_load_explicit(&t->delegate, memory_order_acquire) != NULL) return start;
  memset(seen, 0, sizeof(seen));
  seen[start / 8] |= (unsigned char)(1u << (start % 8));
  st[sp].id = start;
  st[sp++].step = 0;
  while (sp > 0) {
    struct frame *f = &st[sp - 1];
    hr_type_id_t c;
    t = hr__registry_type(reg, f->id);
    if (f->step < t->nifaces) {
      c = t->ifaces[f->step++];
    } else if (f->step == t->nifaces) {
      f->step++;
      c = t->parent;
      if (c == 0) continue;
    } else {
      sp--;
      continue;
    }
    if (seen[c / 8] & (1u << (c % 8))) continue;
    seen[c / 8] |= (unsigned char)(1u << (c % 8));
    t = hr__registry_type(reg, c);
    /* Pairs with the release store in add_delegate(). */
    if (atomic_load_explicit(&t->delegate, memory_order_acquire) != NULL) return c;
    st[sp].id = c;
    st[sp++].step = 0;
  }
  return 0;
}

int hr__registry_lookup(hr__registry_t *reg, hr_type_id_t type, hr_lookup_t *out) {
  hr__dtype_t *t = (hr__dtype_t *)hr__registry_type(reg, type);
  uint64_t word;
  uint32_t gen;
  hr_type_id_t from;
  out->delegate = NULL;
  out->from = 0;
  out->to_text = NULL;
  if (t == NULL) return HR_EINVAL; /* unknown ids are never cached */
  /* Pairs with the release increments in add_delegate(). */
  gen = atomic_load_explicit(&reg->generation, memory_order_acquire);
  HR__TP(HR__TP_LOOKUP_GEN, reg);
  /* Pairs with the release store below, by whichever reader walked: what
   * it saw of the delegate is visible here too. */
  word = (gen & 1) ? 0 : atomic_load_explicit(&t->cache, memory_order_acquire);
  if (word >> 32 == gen && (word & 0x80000000u)) {
    from = (hr_type_id_t)(word & 0x7fffffffu);
    count(from ? &shard(reg)->hits : &shard(reg)->misses);
  } else {
    from = walk(reg, type);
    HR__TP(HR__TP_LOOKUP_WALKED, reg);
    if (!(gen & 1))
      atomic_store_explicit(&t->cache, ((uint64_t)gen << 32) | 0x80000000u | from,
                            memory_order_release);
    count(&shard(reg)->walks);
  }
  if (from == 0) {
    out->to_text = t->to_text;
    return HR_ENODELEGATE;
  }
  out->from = from;
  /* Relaxed: this thread has either seen the pointer non-NULL itself, with
   * the walk's acquire load, or hit a word whose acquire load pairs with
   * the release store of the reader that walked and saw it; either way the
   * delegate's store happens before this load.  So it is the word's
   * ordering that makes a hit safe (and ThreadSanitizer checks it: with
   * an acquire load here, a relaxed word would go unseen). */
  out->delegate = atomic_load_explicit(&hr__registry_type(reg, from)->delegate,
                                       memory_order_relaxed);
  return 0;
}

/* ---- set-up ---------------------------------------------------------------- */

int hr__registry_init(hr__registry_t *reg, hr__mem_t *mem) {
  static const struct {
    const char *name;
    size_t size;
    const hr_delegate_t *d;
  } builtins[] = {
      {"int64", sizeof(int64_t), &hr__delegate_int64},
      {"uint64", sizeof(uint64_t), &hr__delegate_uint64},
      {"http-date", sizeof(hr_date_t), &hr__delegate_date},
      {"media-type", sizeof(hr_media_type_t), &hr__delegate_media_type},
      {"media-ranges", sizeof(hr_media_ranges_t), &hr__delegate_media_ranges},
      {"entity-tag", sizeof(hr_etag_t), &hr__delegate_etag},
      {"entity-tag-list", sizeof(hr_etag_list_t), &hr__delegate_etag_list},
      {"cache-control", sizeof(hr_cache_control_t), &hr__delegate_cache_control},
      {"set-cookie", sizeof(hr_set_cookie_t), &hr__delegate_set_cookie},
      {"cookies", sizeof(hr_cookies_t), &hr__delegate_cookies},
      {"link", sizeof(hr_links_t), &hr__delegate_link},
      {"forwarded", sizeof(hr_forwarded_t), &hr__delegate_forwarded},
  };
  size_t i;
  memset(reg, 0, sizeof(*reg));
  reg->mem = mem;
  atomic_init(&reg->ntypes, 1); /* id 0 is "none" */
  atomic_init(&reg->generation, 2); /* even: no registration under way */
  if (pthread_mutex_init(&reg->lock, NULL) != 0) return HR_ENOMEM;
  for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
    hr_type_id_t id;
    int rc = add_type(reg, builtins[i].name, builtins[i].size, 0, NULL, 0, NULL, &id);
    if (rc == 0) rc = add_delegate(reg, id, builtins[i].d);
    if (rc != 0) {
      hr__registry_free(reg);
      return rc;
    }
  }
  return 0;
}

void hr__registry_free(hr__registry_t *reg) {
  uint32_t n = atomic_load_explicit(&reg->ntypes, memory_order_relaxed), id;
  size_t c;
  for (id = 1; id < n; id++) {
    hr__dtype_t *t = (hr__dtype_t *)hr__registry_type(reg, id);
    hr__mem_free(reg->mem, (void *)t->name.ptr);
    hr__mem_free(reg->mem, (void *)atomic_load_explicit(&t->delegate, memory_order_relaxed));
  }
  for (c = 0; c < HR_MAX_TYPES / HR__TYPE_CHUNK; c++)
    hr__mem_free(reg->mem, atomic_load_explicit(&reg->chunks[c], memory_order_relaxed));
  pthread_mutex_destroy(&reg->lock);
}

/* ---- public API ------------------------------------------------------------ */

int hr_type_register(hr_router_t *r, const char *name, size_t value_size,
                     hr_type_id_t parent, const hr_type_id_t *ifaces,
                     size_t nifaces, hr_to_text_cb to_text, hr_type_id_t *out) {
  int rc;
  if (r == NULL || name == NULL || out == NULL) return HR_EINVAL;
  pthread_mutex_lock(&r->registry.lock);
  rc = add_type(&r->registry, name, value_size, parent, ifaces, nifaces, to_text, out);
  pthread_mutex_unlock(&r->registry.lock);
  return rc;
}

hr_span_t hr_type_name(hr_router_t *r, hr_type_id_t type) {
  const hr__dtype_t *t = r ? hr__registry_type(&r->registry, type) : NULL;
  hr_span_t none = {NULL, 0};
  return t ? t->name : none;
}

int hr_delegate_register(hr_router_t *r, hr_type_id_t type, const hr_delegate_t *d) {
  int rc;
  if (r == NULL) return HR_EINVAL;
  pthread_mutex_lock(&r->registry.lock);
  rc = add_delegate(&r->registry, type, d);
  pthread_mutex_unlock(&r->registry.lock);
  return rc;
}

int hr_delegate_lookup(hr_router_t *r, hr_type_id_t type, hr_lookup_t *out) {
  if (r == NULL || out == NULL) return HR_EINVAL;
  return hr__registry_lookup(&r->registry, type, out);
}

int hr_value_format(hr_router_t *r, hr_type_id_t type, const void *value,
                    char *buf, size_t cap, size_t *len) {
  hr_lookup_t l;
  int rc;
  if (r == NULL || len == NULL || (buf == NULL && cap != 0)) return HR_EINVAL;
  rc = hr__registry_lookup(&r->registry, type, &l);
  if (rc == 0 && l.delegate->format != NULL)
    return l.delegate->format(value, buf, cap, len, l.delegate->udata);
  if (rc == HR_ENODELEGATE && l.to_text != NULL) return l.to_text(value, buf, cap, len);
  return rc == 0 ? HR_ENODELEGATE : rc;
}

int hr_value_parse(hr_router_t *r, hr_type_id_t type, hr_span_t text, void *value,
                   const hr_mem_t *mem) {
  hr_lookup_t l;
  int rc;
  if (r == NULL || value == NULL) return HR_EINVAL;
  rc = hr__registry_lookup(&r->registry, type, &l);
  if (rc != 0) return rc;
  if (l.delegate->parse == NULL) return HR_ENODELEGATE;
  return l.delegate->parse(text, value, mem, l.delegate->udata);
}

void hr_delegate_stats(hr_router_t *r, hr_delegate_stats_t *out) {
  size_t i;
  memset(out, 0, sizeof(*out));
  if (r == NULL) return;
  for (i = 0; i < HR__DSHARDS; i++) {
    out->walks += atomic_load_explicit(&r->registry.shards[i].walks, memory_order_relaxed);
    out->hits += atomic_load_explicit(&r->registry.shards[i].hits, memory_order_relaxed);
    out->misses += atomic_load_explicit(&r->registry.shards[i].misses, memory_order_relaxed);
  }
}
