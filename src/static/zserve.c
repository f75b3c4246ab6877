/* SPDX-License-Identifier: MIT */
/*
 * A whole static file compressed on the fly (hr_static_options_t.compress)
 * when it has no precompressed sibling: the response's own settings choose
 * the coding and level (hr_response_coding: the route's, its host table's
 * or the server's, the client's Accept-Encoding, the file's type and
 * size); the loop's cache (zcache.c) answers a file it holds at once, and
 * any other is read and compressed on libuv's thread pool (hr_compress),
 * so neither a cold disk nor the compressor holds the loop, then cached
 * and sent (hr_response_send_coded: Content-Encoding, Vary, a weak ETag).
 * A file that does not shrink, or cannot be read whole, goes as it is.
 * Small files served from memory are left to hr_response_send, which
 * compresses them itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "static/static.h"

typedef struct zjob_s {
  uv_work_t work;
  hr__fcache_t *fc;
  hr_response_t *res;
  hr__sfile_t f;         /* holds the entry's reference, so its fd */
  char *name;            /* the file's name (the cache key) */
  int coding, level;
  unsigned char *out;    /* compressed on the pool, len bytes; NULL: not */
  size_t len;
} zjob_t;

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

/* Sends the cached entry `z`; takes its reference and f's. */
static void send_zent(hr_response_t *res, hr__zent_t *z, hr__sfile_t *f) {
  int rc = hr_response_send_coded(res, 200, (hr_coding_t)z->coding, z->bytes, z->len,
                                  release_zent, z);
  if (rc != 0) {
    hr__zent_unref(z);
    if (rc != HR_ECLOSED) hr__static_status(res, 500);
  }
  hr__fent_unref(f->ent);
}

/* The file as it is, after all; takes f's reference. */
static void send_plain(hr_response_t *res, hr__sfile_t *f, int vary) {
  int rc;
  if (vary) hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept-Encoding"));
  rc = hr_response_send_file(res, 200, f->fd, 0, f->size, release_ent, f->ent);
  if (rc != 0) {
    hr__fent_unref(f->ent);
    if (rc != HR_ECLOSED) hr__static_status(res, 500);
  }
}

/* On the pool: reads the whole file and compresses it. */
static void z_work(uv_work_t *req) {
  zjob_t *j = req->data;
  size_t size = (size_t)j->f.size, got = 0, cap = hr_compress_bound(j->coding, size);
  unsigned char *in = malloc(size), *out = cap ? malloc(cap) : NULL;
  while (in != NULL && out != NULL && got < size) {
    ssize_t r = pread(j->f.fd, in + got, size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break; /* an error, or shorter than it was: sent as it is */
    got += (size_t)r;
  }
  if (in != NULL && out != NULL && got == size) {
    j->len = hr_compress(j->coding, j->level, in, size, out, cap);
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
  zjob_t *j = req->data;
  hr__fcache_t *fc = j->fc;
  hr__zent_t *z = NULL;
  if (status == 0 && j->out != NULL &&
      (z = hr__zent_new(j->name, j->f.version, j->f.size, j->coding, j->level, j->out, j->len)) ==
          NULL)
    free(j->out);
  if (z != NULL) {
    hr__zcache_put(&fc->z, z); /* when it fits and the cache is still there */
    send_zent(j->res, z, &j->f);
  } else {
    send_plain(j->res, &j->f, !fc->st->opts.precompressed);
  }
  free(j);
  hr__fcache_job_done(fc);
}

int hr__static_serve_coded(hr__fcache_t *fc, hr_response_t *res, const char *name,
                           hr__sfile_t *f) {
  const hr_static_options_t *o = &fc->st->opts;
  hr_coding_t coding;
  hr__zent_t *z;
  zjob_t *j;
  size_t n;
  int level, could;
  if (!o->compress || f->encoding[0] != '\0' || f->size == 0 || f->size > o->compress_max_bytes)
    return 0;
  /* From memory: hr_response_send compresses it (and says Vary). */
  if (f->ent->bytes != NULL && f->fd == f->ent->fd) return 0;
  could = hr_response_coding(res, 200, f->size, &coding, &level);
  if (could <= 0) return 0;
  if (coding == HR_CODING_IDENTITY) {
    /* It could have been: caches must keep this answer apart. */
    if (!o->precompressed)
      hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept-Encoding"));
    return 0;
  }
  if ((z = hr__zcache_find(&fc->z, name, f->version, f->size, (int)coding, level)) != NULL) {
    send_zent(res, z, f);
    return 1;
  }
  n = strlen(name);
  if ((j = malloc(sizeof(*j) + n + 1)) == NULL) return 0; /* sent as it is */
  memset(j, 0, sizeof(*j));
  j->name = (char *)(j + 1);
  memcpy(j->name, name, n + 1);
  j->fc = fc;
  j->res = res;
  j->f = *f;
  j->coding = (int)coding;
  j->level = level;
  j->work.data = j;
  if (uv_queue_work(fc->loop, &j->work, z_work, z_done) != 0) {
    free(j);
    return 0;
  }
  fc->pending++;
  return 1;
}
