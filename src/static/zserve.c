/* SPDX-License-Identifier: MIT */
/*
 * A whole static file compressed on the fly (hr_static_options_t.compress)
 * when it has no precompressed sibling.  hr__static_plan asks the
 * response's own settings for the coding and level (hr_response_coding:
 * the route's, its host table's or the server's, the client's
 * Accept-Encoding, the file's type and size) before the preconditions, so
 * that a 304 carries the Vary and weak ETag the 200 would (RFC 9110
 * §15.4.5).  hr__static_serve_coded answers from the loop's cache
 * (zcache.c), or reads and compresses the file on libuv's thread pool
 * (hr_compress), so that neither a cold disk nor the compressor holds the
 * loop, then caches the result (or the note that it does not shrink) and
 * sends it (hr_response_send_coded: Content-Encoding, Vary, a weak ETag).
 *
 * What a client can make it cost is bounded: a loop has at most one
 * compression in flight; requests for the same key meanwhile wait for it
 * (one compression for a herd), others get the file as it is; a file that
 * did not shrink is noted and not compressed again; so a stop waits for
 * one compression per loop at most.  Small files served from memory are
 * left to hr_response_send, which compresses them itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "static/static.h"

/* A response waiting for the compression in flight. */
typedef struct zwait_s {
  struct zwait_s *next;
  hr_response_t *res;
  hr__sfile_t f; /* holds its entry's reference */
} zwait_t;

struct hr__zjob_s {
  uv_work_t work;
  hr__fcache_t *fc;
  hr__zkey_t key;        /* its name in the job's block */
  int fd;                /* the first waiter's, kept open by its entry */
  zwait_t *waiters;      /* the one that started it first */
  zwait_t **tail;
  unsigned char *out;    /* compressed on the pool, len bytes */
  size_t len;
  int read_whole;        /* the file was read to its size */
};

static void release_zent(hr_response_t *res, const void *body, void *udata) {
  (void)res;
  (void)body;
  hr__zent_unref(udata);
}

static void release_ent(hr_response_t *res, int fd, void *udata) {
  (void)res;
  (void)fd;
  hr__fent_unref(udata);
}

/* Sends the compressed entry `z`; takes its reference and f's. */
static void send_zent(hr_response_t *res, hr__zent_t *z, hr__sfile_t *f) {
  int rc = hr_response_send_coded(res, 200, (hr_coding_t)z->key.coding, z->bytes, z->len,
                                  release_zent, z);
  if (rc != 0) {
    hr__zent_unref(z);
    if (rc != HR_ECLOSED) hr__static_status(res, 500);
  }
  hr__fent_unref(f->ent);
}

/* The file as it is (Vary was added by the plan); takes f's reference. */
static void send_plain(hr_response_t *res, hr__sfile_t *f) {
  int rc = hr_response_send_file(res, 200, f->fd, 0, f->size, release_ent, f->ent);
  if (rc != 0) {
    hr__fent_unref(f->ent);
    if (rc != HR_ECLOSED) hr__static_status(res, 500);
  }
}

int hr__static_plan(hr__fcache_t *fc, hr_response_t *res, const hr__sfile_t *f, const char *type,
                    int *level) {
  const hr_static_options_t *o = &fc->st->opts;
  int small = f->ent->bytes != NULL && f->fd == f->ent->fd, could;
  hr_coding_t coding = HR_CODING_IDENTITY;
  *level = 0;
  if (f->encoding[0] != '\0' || f->size == 0) return 0; /* a sibling says its own Vary */
  /* From memory, hr_response_send compresses it whatever `compress` says. */
  if (!small && (!o->compress || f->size > o->compress_max_bytes)) return 0;
  could = hr_response_coding(res, 200, f->size, type, &coding, level);
  if (could <= 0) return 0;
  /* It could have been compressed: caches keep this answer apart. */
  if (!o->precompressed)
    hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept-Encoding"));
  return (int)coding;
}

/* On the pool: reads the whole file and compresses it. */
static void z_work(uv_work_t *req) {
  struct hr__zjob_s *j = req->data;
  size_t size = (size_t)j->key.size, got = 0, cap = hr_compress_bound(j->key.coding, size);
  unsigned char *in = malloc(size), *out = cap ? malloc(cap) : NULL;
  while (in != NULL && out != NULL && got < size) {
    ssize_t r = pread(j->fd, in + got, size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break; /* an error, or shorter than it was: sent as it is */
    got += (size_t)r;
  }
  j->read_whole = in != NULL && out != NULL && got == size;
  if (j->read_whole) {
    atomic_fetch_add_explicit(&j->fc->st->compressions, 1, memory_order_relaxed);
    j->len = hr_compress(j->key.coding, j->key.level, in, size, out, cap);
    /* Only what pays is kept: the identity representation does better. */
    if (j->len > 0 && j->len < size) {
      unsigned char *fit = realloc(out, j->len);
      j->out = fit != NULL ? fit : out;
      out = NULL;
    }
  }
  free(in);
  free(out);
}

static void z_done(uv_work_t *req, int status) {
  struct hr__zjob_s *j = req->data;
  hr__fcache_t *fc = j->fc;
  hr__zent_t *z = NULL;
  zwait_t *w;
  if (fc->zjobs == j) fc->zjobs = NULL;
  if (status == 0 && j->out != NULL) {
    if ((z = hr__zent_new(&j->key, j->out, j->len)) == NULL) free(j->out);
  } else if (status == 0 && j->read_whole) {
    z = hr__zent_new(&j->key, NULL, 0); /* did not shrink: noted */
  }
  if (z != NULL) hr__zcache_put(&fc->z, z); /* when it fits and the cache is still there */
  while ((w = j->waiters) != NULL) {
    j->waiters = w->next;
    if (z != NULL && !z->plain) {
      z->refs++;
      send_zent(w->res, z, &w->f);
    } else {
      send_plain(w->res, &w->f);
    }
    free(w);
  }
  if (z != NULL) hr__zent_unref(z); /* the job's */
  free(j);
  hr__fcache_job_done(fc);
}

/* Adds a waiter to `j`; 0, or -1 when out of memory. */
static int wait_for(struct hr__zjob_s *j, hr_response_t *res, const hr__sfile_t *f) {
  zwait_t *w = malloc(sizeof(*w));
  if (w == NULL) return -1;
  w->next = NULL;
  w->res = res;
  w->f = *f;
  *j->tail = w;
  j->tail = &w->next;
  return 0;
}

void hr__static_serve_coded(hr__fcache_t *fc, hr_response_t *res, const char *name,
                            hr__sfile_t *f, int coding, int level) {
  hr__zkey_t k = {name, strlen(name), f->version, f->ent->change, f->size, coding, level};
  struct hr__zjob_s *j;
  hr__zent_t *z = hr__zcache_find(&fc->z, &k);
  if (z != NULL) {
    if (z->plain) {
      hr__zent_unref(z);
      send_plain(res, f);
    } else {
      send_zent(res, z, f);
    }
    return;
  }
  if ((j = fc->zjobs) != NULL) {
    /* The same file is being compressed: wait for it.  Another: this one
     * goes as it is rather than queue behind it. */
    if (j->key.name_len == k.name_len && memcmp(j->key.name, name, k.name_len) == 0 &&
        j->key.version == k.version && j->key.change == k.change && j->key.size == k.size &&
        j->key.coding == coding && j->key.level == level && wait_for(j, res, f) == 0)
      return;
    send_plain(res, f);
    return;
  }
  if ((j = malloc(sizeof(*j) + k.name_len + 1)) == NULL) {
    send_plain(res, f);
    return;
  }
  memset(j, 0, sizeof(*j));
  memcpy((char *)(j + 1), name, k.name_len + 1);
  j->key = k;
  j->key.name = (const char *)(j + 1);
  j->fc = fc;
  j->fd = f->fd;
  j->tail = &j->waiters;
  j->work.data = j;
  if (wait_for(j, res, f) != 0) {
    free(j);
    send_plain(res, f);
    return;
  }
  if (uv_queue_work(fc->loop, &j->work, z_work, z_done) != 0) {
    free(j->waiters);
    free(j);
    send_plain(res, f);
    return;
  }
  fc->zjobs = j;
  fc->pending++;
}
