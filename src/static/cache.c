/* SPDX-License-Identifier: MIT */
/*
 * The static handler's open-file cache, one per loop (the mount's routes
 * have a per-loop context): what opening a name gave (a file's descriptor,
 * size and mtime; a directory; or why not), so that a hot file costs no
 * open(2) or fstat(2) per request.  An entry is trusted for the option's
 * cache_valid_ms after its open, as nginx's open_file_cache_valid, then
 * opened again (a replaced file is seen within that time).  Misses are
 * cached too: a precompressed sibling that does not exist is not looked
 * for at every request.  Responses hold a reference on the entry whose fd
 * they send; an entry pushed out or replaced closes its fd when the last
 * one ends.  Opens run on libuv's thread pool (static.c), so a slow disk
 * or a cold directory never holds the loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "static/static.h"

static size_t hash(const char *p, size_t n) {
  size_t h = 1469598103934665603ull; /* FNV-1a */
  while (n--) h = (h ^ (unsigned char)*p++) * 1099511628211ull;
  return h;
}

static void lru_unlink(hr__fent_t *e) {
  e->lru_prev->lru_next = e->lru_next;
  e->lru_next->lru_prev = e->lru_prev;
}

static void lru_front(hr__fcache_t *c, hr__fent_t *e) {
  e->lru_next = c->lru.lru_next;
  e->lru_prev = &c->lru;
  c->lru.lru_next->lru_prev = e;
  c->lru.lru_next = e;
}

void hr__fent_unref(hr__fent_t *e) {
  if (--e->refs > 0) return;
  if (e->fd >= 0) close(e->fd);
  free(e->bytes);
  free(e->name);
  free(e);
}

/* Takes `e` out of the table (its references keep it alive). */
static void drop(hr__fcache_t *c, hr__fent_t *e) {
  hr__fent_t **pp = &c->buckets[hash(e->name, e->name_len) & (c->nbuckets - 1)];
  while (*pp != e) pp = &(*pp)->next;
  *pp = e->next;
  lru_unlink(e);
  e->cached = 0;
  c->n--;
  hr__fent_unref(e);
}

int hr__fcache_init(hr__fcache_t *c, hr_static_t *st, uv_loop_t *loop, size_t max) {
  struct rlimit rl;
  memset(c, 0, sizeof(*c));
  c->st = st;
  c->loop = loop;
  /* Descriptors are shared with the connections: a quarter at most. */
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      max > rl.rlim_cur / 4)
    max = (size_t)(rl.rlim_cur / 4);
  c->max = max;
  c->lru.lru_next = c->lru.lru_prev = &c->lru;
  if (hr__zcache_init(&c->z, st->opts.compress ? st->opts.compress_cache_bytes : 0) != 0)
    return HR_ENOMEM;
  if (c->max == 0) return 0;
  for (c->nbuckets = 16; c->nbuckets < c->max * 2; c->nbuckets *= 2) /* max <= 2^20 */
    ;
  c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
  if (c->buckets == NULL) {
    hr__zcache_free(&c->z);
    return HR_ENOMEM;
  }
  return 0;
}

void hr__fcache_free(hr__fcache_t *c) {
  while (c->lru.lru_next != &c->lru) drop(c, c->lru.lru_next);
  free(c->buckets);
  c->buckets = NULL;
  c->max = 0; /* what still runs on it (opens in flight) caches nothing */
  hr__zcache_free(&c->z);
}

void hr__fcache_job_done(hr__fcache_t *c) {
  c->pending--;
  /* The loop's cache was destroyed while this was in flight. */
  if (c->closing && c->pending == 0) {
    hr__fcache_free(c);
    free(c);
  }
}

static int status_of_errno(int err) {
  switch (err) {
    case -EACCES:
    case -EPERM:
      return 403;
    case -ENOENT:
    case -ENOTDIR:
    case -ELOOP:  /* a link the options do not follow */
    case -EXDEV:  /* one that leads out of the root */
    case -ENAMETOOLONG:
    case -EINVAL:
    case -ENXIO:  /* a socket */
    case -ENODEV: /* a device without a driver */
      return 404;
    case -EMFILE:
    case -ENFILE:
    case -ENOMEM:
      return 503; /* for now: not cached */
    default:
      return 500;
  }
}

hr__fent_t *hr__fent_new(const char *name, size_t len) {
  hr__fent_t *e = calloc(1, sizeof(*e));
  if (e == NULL || (e->name = malloc(len + 1)) == NULL) {
    free(e);
    return NULL;
  }
  memcpy(e->name, name, len);
  e->name[len] = '\0';
  e->name_len = len;
  e->refs = 1;
  e->fd = -1;
  return e;
}

/* A small file's bytes are read now, on the thread pool, and kept with the
 * entry (the same open, so they are the bytes the size and tag describe,
 * unless the file is rewritten in place meanwhile: a read that comes up
 * short or long keeps nothing, and the file is sent from its descriptor). */
static void keep_bytes(hr__fent_t *e) {
  unsigned char *b;
  ssize_t n;
  if (e->size == 0 || e->size > HR__SMALL_FILE || (b = malloc((size_t)e->size + 1)) == NULL)
    return;
  do
    n = pread(e->fd, b, (size_t)e->size + 1, 0);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)e->size) {
    free(b);
    return;
  }
  e->bytes = b;
}

void hr__fent_open(hr__fent_t *e, int rootfd, hr_static_symlinks_t mode) {
  struct stat sb;
  int fd = hr__static_open(rootfd, e->name, mode);
  if (fd < 0) {
    e->status = status_of_errno(fd);
    return;
  }
  if (fstat(fd, &sb) != 0) {
    e->status = 500;
  } else if (S_ISDIR(sb.st_mode)) {
    e->is_dir = 1;
  } else if (!S_ISREG(sb.st_mode)) {
    e->status = 404; /* FIFOs, devices, sockets: never */
  } else {
    e->fd = fd;
    e->size = (uint64_t)sb.st_size;
    e->mtime = (int64_t)sb.st_mtime;
    /* A file replaced within the same second (rename over it, a new
     * inode) or rewritten in place (a new mtime to the nanosecond) gets
     * another tag, where nginx's "mtime-size" would repeat. */
    e->version = ((uint64_t)sb.st_ino * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec);
    /* The inode's change time: a rewrite in place whose mtime was set back
     * (cp -p, a build that fixes mtimes) still moves it. */
    e->change = (uint64_t)sb.st_ctim.tv_sec * 1000000000u + (uint64_t)sb.st_ctim.tv_nsec;
    keep_bytes(e);
    return;
  }
  close(fd);
}

static hr__fent_t **bucket_of(hr__fcache_t *c, const char *name, size_t len) {
  return &c->buckets[hash(name, len) & (c->nbuckets - 1)];
}

static hr__fent_t *lookup(hr__fcache_t *c, const char *name, size_t len) {
  hr__fent_t *e;
  for (e = *bucket_of(c, name, len); e != NULL; e = e->next)
    if (e->name_len == len && memcmp(e->name, name, len) == 0) return e;
  return NULL;
}

/* Closes entries that expired at the old end of the list (at most two
 * per call, so the work stays constant per request). */
static void sweep(hr__fcache_t *c, uint64_t now) {
  int i;
  for (i = 0; i < 2 && c->lru.lru_prev != &c->lru; i++) {
    hr__fent_t *e = c->lru.lru_prev;
    if (now - e->checked < c->st->opts.cache_valid_ms) break;
    drop(c, e);
  }
}

hr__fent_t *hr__fcache_find(hr__fcache_t *c, const char *name, size_t len) {
  uint64_t now = uv_now(c->loop);
  hr__fent_t *e;
  if (c->max == 0) return NULL;
  sweep(c, now);
  if ((e = lookup(c, name, len)) == NULL) return NULL;
  if (now - e->checked >= c->st->opts.cache_valid_ms) {
    drop(c, e); /* stale: to be opened again */
    return NULL;
  }
  lru_unlink(e);
  lru_front(c, e);
  e->refs++;
  return e;
}

void hr__fcache_put(hr__fcache_t *c, hr__fent_t *e) {
  hr__fent_t *old, **bucket;
  /* A passing condition (out of descriptors or memory) is not remembered. */
  if (c->max == 0 || c->closing || e->status == 503 || e->status == 500) return;
  if ((old = lookup(c, e->name, e->name_len)) != NULL) drop(c, old);
  if (c->n == c->max) drop(c, c->lru.lru_prev); /* the least recently used */
  e->checked = uv_now(c->loop);
  bucket = bucket_of(c, e->name, e->name_len);
  e->next = *bucket;
  *bucket = e;
  lru_front(c, e);
  e->cached = 1;
  e->refs++; /* the cache's */
  c->n++;
}
