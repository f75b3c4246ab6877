/* SPDX-License-Identifier: MIT */
/*
 * The static handler's parts (include/hroute/static.h): content types by
 * extension (mime.c), names checked and opened below the root
 * (resolve.c), Range read against a size (range.c), the handler and its
 * mount (static.c).
 */
#ifndef HR_STATIC_STATIC_H
#define HR_STATIC_STATIC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "hroute/error.h"
#include "hroute/http.h"
#include "hroute/static.h"

/* ---- mime.c ------------------------------------------------------------- */

/* The longest Content-Type a static root gives (bytes). */
#define HR__TYPE_MAX 200

typedef struct hr__mime_s {
  const char *ext, *type; /* one allocation, ext first */
  size_t order;           /* built-in entries first */
} hr__mime_t;

typedef struct hr__mimes_s {
  hr__mime_t *v; /* sorted by extension (ASCII case aside), unique */
  size_t n, cap;
} hr__mimes_t;

/* The built-in table, then `path` (NULL or missing: none).  0 or
 * HR_ENOMEM. */
int hr__mimes_load(hr__mimes_t *t, const char *path);
void hr__mimes_free(hr__mimes_t *t);
/* The type for the extension of `name`'s last component, or NULL. */
const char *hr__mimes_find(const hr__mimes_t *t, hr_span_t name);

/* ---- resolve.c ---------------------------------------------------------- */

/* Whether `s` can be a field value of at most HR__TYPE_MAX bytes (VCHAR,
 * SP, HTAB: no CR, LF or NUL to split a header with). */
int hr__static_type_ok(const char *s);

enum {
  HR__NAME_OK = 0,
  HR__NAME_BAD = 400,   /* "..", ".", an empty component, NUL */
  HR__NAME_HIDDEN = 404 /* a dotfile, when they are not served */
};

/* Checks a decoded name below the root (no leading '/'; may end with '/'
 * for a directory).  Returns an HR__NAME_ value. */
int hr__static_check_name(hr_span_t name, int dotfiles);

/* Opens the NUL-terminated relative `name` ("" for the root itself),
 * checked by hr__static_check_name, below the directory `rootfd`,
 * following symbolic links as `mode` allows, non-blocking (a FIFO never
 * blocks the open).  Returns the fd, or a negated errno (ENOENT, ELOOP for
 * a link not allowed, EACCES...). */
int hr__static_open(int rootfd, const char *name, hr_static_symlinks_t mode);

/* ---- range.c ------------------------------------------------------------ */

#define HR__MAX_RANGES 16

typedef struct hr__range_s {
  uint64_t first, last; /* inclusive, last < size */
} hr__range_t;

/* Reads a Range field value for a representation of `size` bytes (RFC
 * 9110 §14.1.2): returns the number of satisfiable ranges stored in out
 * (1..HR__MAX_RANGES, in the order asked), 0 when the field is to be
 * ignored (malformed, another unit, more than HR__MAX_RANGES, ranges that
 * overlap, more bytes than the representation has), or -1 when none is
 * satisfiable (416). */
int hr__range_parse(hr_span_t value, uint64_t size, hr__range_t *out);

/* ---- cache.c ------------------------------------------------------------ */

/* What opening a name below the root gave: a regular file (fd >= 0), a
 * directory, or an error (an HTTP status). */
/* Largest file whose bytes the open-file cache keeps (hr__fent_t.bytes):
 * at most this much per cached entry (cache_entries of them per loop). */
#define HR__SMALL_FILE 4096

typedef struct hr__fent_s {
  struct hr__fent_s *next;             /* hash chain */
  struct hr__fent_s *lru_prev, *lru_next;
  char *name;
  size_t name_len;
  uint64_t checked;  /* loop time (ms) of the open */
  int fd;            /* -1 unless a regular file */
  int status;        /* 0, or 403/404/500 */
  int is_dir;
  uint64_t size;
  int64_t mtime;     /* seconds */
  uint64_t version;  /* inode and mtime in nanoseconds, mixed: for the ETag */
  uint64_t change;   /* ctime in nanoseconds (zcache.c's key) */
  /* A small file's bytes (size <= HR__SMALL_FILE), read at the open: sent
   * from memory with the head in one write, where sendfile would cost a
   * system call or four more per response; NULL otherwise. */
  unsigned char *bytes;
  unsigned refs;     /* the cache's (while cached) and each response's */
  unsigned cached : 1;
} hr__fent_t;

/* One loop's open-file cache: at most `max` entries, each trusted for
 * `valid_ms` after its open (nginx's open_file_cache_valid), then opened
 * again; least recently used first out.  Loop thread only. */
/* The most entries a loop's cache may be given. */
#define HR__CACHE_MAX ((size_t)1 << 20)

/* ---- zcache.c ----------------------------------------------------------- */

/* What a compressed file is kept under: the file's name, its identity
 * (the open-file entry's version, from its inode and mtime, its change
 * time and size), the coding and level. */
typedef struct hr__zkey_s {
  const char *name;
  size_t name_len;
  uint64_t version, change, size;
  int coding, level;
} hr__zkey_t;

/* A file compressed on the fly, or found not to shrink (`plain`: the file
 * goes as it is, and is not compressed again for this key). */
typedef struct hr__zent_s {
  struct hr__zent_s *next; /* hash chain */
  struct hr__zent_s *lru_prev, *lru_next;
  hr__zkey_t key;          /* its name in the same block */
  unsigned char *bytes;    /* malloc'd, len of them; NULL when plain */
  size_t len;
  size_t cost;             /* what it counts against the cache's max */
  unsigned refs;           /* the cache's (while cached) and each response's */
  unsigned plain : 1;
} hr__zent_t;

/* One loop's cache of compressed files: at most `max` bytes of them (0:
 * none kept).  Loop thread only. */
typedef struct hr__zcache_s {
  hr__zent_t **buckets;    /* NULL when max is 0 */
  size_t bytes, max;
  hr__zent_t lru;          /* sentinel: lru.lru_next is the most recent */
} hr__zcache_t;

int hr__zcache_init(hr__zcache_t *z, size_t max);
void hr__zcache_free(hr__zcache_t *z);
/* The entry for `k` with a reference for the caller, or NULL. */
hr__zent_t *hr__zcache_find(hr__zcache_t *z, const hr__zkey_t *k);
/* Keeps `e` (when it fits); the caller keeps its reference. */
void hr__zcache_put(hr__zcache_t *z, hr__zent_t *e);
/* A new entry for `k` (one reference) owning `bytes` (NULL: plain); NULL
 * when out of memory (bytes are the caller's then). */
hr__zent_t *hr__zent_new(const hr__zkey_t *k, unsigned char *bytes, size_t len);
void hr__zent_unref(hr__zent_t *e);

struct hr__zjob_s; /* zserve.c: a compression in flight */

typedef struct hr__fcache_s {
  hr_static_t *st;
  hr__zcache_t z;   /* files compressed on the fly (zserve.c) */
  struct hr__zjob_s *zjobs; /* compressions in flight, at most one */
  uv_loop_t *loop;
  hr__fent_t **buckets;
  size_t nbuckets, n, max;
  hr__fent_t lru;   /* sentinel: lru.lru_next is the most recent */
  unsigned pending; /* opens on the thread pool */
  int closing;      /* destroyed while opens were pending: the last frees it */
} hr__fcache_t;

int hr__fcache_init(hr__fcache_t *c, hr_static_t *st, uv_loop_t *loop, size_t max);
void hr__fcache_free(hr__fcache_t *c);
/* A fresh cached entry for NUL-terminated `name` (len bytes), with a
 * reference for the caller (hr__fent_unref), or NULL. */
hr__fent_t *hr__fcache_find(hr__fcache_t *c, const char *name, size_t len);
/* Puts the opened `e` in the cache (replacing an entry of the same name;
 * nothing while closing or without a cache).  The caller keeps its
 * reference. */
void hr__fcache_put(hr__fcache_t *c, hr__fent_t *e);
/* A new entry for `name` (one reference), not opened yet; NULL when out of
 * memory. */
hr__fent_t *hr__fent_new(const char *name, size_t len);
/* Opens and classifies e->name below `rootfd`: any thread (the thread
 * pool), touching nothing but `e`. */
void hr__fent_open(hr__fent_t *e, int rootfd, hr_static_symlinks_t mode);
void hr__fent_unref(hr__fent_t *e);
/* A job of `c`'s on the thread pool (an open, a listing, a compression)
 * ended: one less pending; frees `c` when it was destroyed meanwhile and
 * this was its last job. */
void hr__fcache_job_done(hr__fcache_t *c);

/* ---- listing.c ---------------------------------------------------------- */

/* The HTML listing of the directory `name` (NUL-terminated, "" for the
 * root) into a malloc'd *out of *len bytes, titled with `title` (the
 * request's path, NUL-terminated).  Any thread (the thread pool).  Returns
 * 0, 404 (not a directory to read) or 503 (out of memory). */
int hr__static_listing(int rootfd, const char *name, hr_static_symlinks_t mode, int dotfiles,
                       const char *title, char **out, size_t *len);

/* ---- serve.c ------------------------------------------------------------ */

/* A file opened for a request: its cache entry (referenced), descriptor,
 * size, mtime, and the Content-Encoding of a precompressed sibling (""
 * for the file itself). */
typedef struct hr__sfile_s {
  hr__fent_t *ent;
  int fd;
  uint64_t size;
  int64_t mtime;
  uint64_t version;
  const char *encoding;
} hr__sfile_t;

/* A short answer with `status`: 4xx and 5xx through hr_response_error
 * (the host's error_body hook, else the reason phrase as text/plain);
 * others (301) the reason phrase as text. */
void hr__static_status(hr_response_t *res, int status);
/* Serves the regular file `f` named `name` (for its type): validators,
 * preconditions, ranges, the body.  Takes f->ent's reference. */
void hr__static_serve(hr__fcache_t *fc, hr_request_t *req, hr_response_t *res, const char *name,
                      hr__sfile_t *f);

/* ---- zserve.c ----------------------------------------------------------- */

/* Whether the whole file `f` of `type` would go compressed (the options,
 * no precompressed sibling, its size, the response's settings and the
 * client's Accept-Encoding: hr_response_coding): stores the coding (none:
 * HR_CODING_IDENTITY) and level, and adds Vary: Accept-Encoding when the
 * answer could have been compressed, so that a 304 says what the 200
 * would (RFC 9110 §15.4.5).  Returns the coding. */
int hr__static_plan(hr__fcache_t *fc, hr_response_t *res, const hr__sfile_t *f, const char *type,
                    int *level);
/* Sends the whole file `f` compressed with `coding` at `level` (from
 * hr__static_plan): from the loop's cache, or read and compressed on the
 * thread pool (joining a compression of the same key in flight); as it is
 * when it does not shrink or another compression is in flight.  Takes
 * f->ent's reference. */
void hr__static_serve_coded(hr__fcache_t *fc, hr_response_t *res, const char *name,
                            hr__sfile_t *f, int coding, int level);

/* ---- static.c ----------------------------------------------------------- */

struct hr_static_s {
  int rootfd;
  /* Files compressed on the thread pool so far (zserve.c), all loops: a
   * statistic the tests read. */
  _Atomic uint64_t compressions;
  hr_static_options_t opts;
  char *index;         /* copies of the option strings */
  char *cache_control;
  char *default_type;
  hr__mimes_t mimes;
};

#endif /* HR_STATIC_STATIC_H */
