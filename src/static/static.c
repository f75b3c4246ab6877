/* SPDX-License-Identifier: MIT */
/*
 * The static handler (include/hroute/static.h): its settings, the mount,
 * and a request's way to its file: the name checked, then opened below the
 * root through the loop's open-file cache (misses on the thread pool), a
 * directory's index or its redirect, a precompressed sibling; serve.c
 * sends the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hroute/delegate.h"
#include "static/static.h"
#include "util/detail.h"

void hr_static_options_init(hr_static_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->index = "index.html";
  o->symlinks = HR_STATIC_SYMLINKS_INSIDE;
  o->mime_types = "/etc/mime.types";
  o->default_type = "application/octet-stream";
  o->cache_entries = 1000;
  o->cache_valid_ms = 1000;
  o->compress = 1;
  o->compress_max_bytes = 8u << 20;
  o->compress_cache_bytes = 8u << 20;
}

static char *dup_or_null(const char *s, int *failed) {
  char *d;
  if (s == NULL) return NULL;
  d = strdup(s);
  if (d == NULL) *failed = 1;
  return d;
}

int hr_static_new(hr_static_t **out, const char *root, const hr_static_options_t *opts) {
  hr_static_options_t defaults;
  hr_static_t *st;
  int failed = 0, fd;
  struct stat sb;
  hr__detail_clear();
  if (out == NULL || root == NULL) return HR_EINVAL;
  *out = NULL;
  if (opts == NULL) {
    hr_static_options_init(&defaults);
    opts = &defaults;
  }
  if ((unsigned)opts->symlinks > HR_STATIC_SYMLINKS_ANY) return HR_EINVAL;
  if (opts->default_type != NULL && !hr__static_type_ok(opts->default_type)) return HR_EINVAL;
  if (opts->cache_control != NULL &&
      (!hr__static_type_ok(opts->cache_control) || strlen(opts->cache_control) > HR__TYPE_MAX))
    return HR_EINVAL;
  if (opts->cache_entries > HR__CACHE_MAX) return HR_EINVAL;
  fd = open(root, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0) return hr__detail_set(HR_EINVAL, "static root \"%s\": %s", root, hr_strerror(-errno));
  if (fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    close(fd);
    return hr__detail_set(HR_EINVAL, "static root \"%s\": not a directory", root);
  }
  st = calloc(1, sizeof(*st));
  if (st == NULL) {
    close(fd);
    return HR_ENOMEM;
  }
  st->rootfd = fd;
  st->opts = *opts;
  st->index = dup_or_null(opts->index, &failed);
  st->cache_control = dup_or_null(opts->cache_control, &failed);
  st->default_type = dup_or_null(opts->default_type ? opts->default_type
                                                    : "application/octet-stream",
                                 &failed);
  if (failed || hr__mimes_load(&st->mimes, opts->mime_types) != 0) {
    hr_static_free(st);
    return HR_ENOMEM;
  }
  st->opts.index = st->index;
  st->opts.cache_control = st->cache_control;
  st->opts.default_type = st->default_type;
  st->opts.mime_types = NULL; /* read already */
  *out = st;
  return 0;
}

void hr_static_free(hr_static_t *st) {
  if (st == NULL) return;
  if (st->rootfd >= 0) close(st->rootfd);
  hr__mimes_free(&st->mimes);
  free(st->index);
  free(st->cache_control);
  free(st->default_type);
  free(st);
}

const char *hr_static_type(const hr_static_t *st, hr_span_t name) {
  const char *t = hr__mimes_find(&st->mimes, name);
  return t != NULL ? t : st->default_type;
}

/* ---- one response ----------------------------------------------------------- */

/* The weight of one Accept-Encoding element's parameters [p, e): its
 * "q" parameter read as RFC 9110 §12.4.2 writes it (0 for a malformed
 * one: a coding is only chosen when the client clearly allows it), 1000
 * without one. */
static int weight(const char *p, const char *e) {
  while (p < e) {
    const char *name, *end;
    while (p < e && (*p == ';' || *p == ' ' || *p == '\t')) p++;
    name = p;
    while (p < e && *p != '=' && *p != ';' && *p != ' ' && *p != '\t') p++;
    end = p;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    if (end - name == 1 && (*name == 'q' || *name == 'Q') && p < e && *p == '=') {
      const char *v = p + 1, *ve;
      int q = 0, scale = 100;
      while (v < e && (*v == ' ' || *v == '\t')) v++;
      for (ve = v; ve < e && *ve != ';' && *ve != ' ' && *ve != '\t'; ve++)
        ;
      if (ve == v || (*v != '0' && *v != '1') || ve - v > 5) return 0;
      q = (*v - '0') * 1000;
      if (ve - v > 1) {
        const char *d;
        if (v[1] != '.') return 0;
        for (d = v + 2; d < ve; d++, scale /= 10) {
          if (*d < '0' || *d > '9') return 0;
          q += (*d - '0') * scale;
        }
      }
      return q > 1000 ? 0 : q;
    }
    while (p < e && *p != ';') p++;
  }
  return 1000;
}

/* Whether Accept-Encoding (every line of it) allows `coding`: named with q
 * above 0, or covered by "*" with q above 0 (RFC 9110 §12.5.3). */
static int accepts(const hr_request_t *req, const char *coding) {
  size_t cursor = 0, clen = strlen(coding);
  hr_span_t v;
  int star = -1;
  while (hr_request_field(req, HR_SPAN_LIT("Accept-Encoding"), &cursor, &v) == 0) {
    const char *p = v.ptr, *e = v.ptr + v.len;
    while (p < e) {
      const char *name, *end, *elem_end;
      int q;
      while (p < e && (*p == ' ' || *p == '\t' || *p == ',')) p++;
      name = p;
      while (p < e && *p != ',' && *p != ';' && *p != ' ' && *p != '\t') p++;
      end = p;
      for (elem_end = p; elem_end < e && *elem_end != ','; elem_end++)
        ;
      q = weight(p, elem_end);
      p = elem_end;
      if ((size_t)(end - name) == clen && strncasecmp(name, coding, clen) == 0) return q > 0;
      if (end - name == 1 && *name == '*') star = q > 0;
    }
  }
  return star == 1;
}

/* 301 to the request's path with `suffix` ("/") added, and its query. */
static void redirect_slash(hr_request_t *req, hr_response_t *res) {
  hr_span_t path = hr_request_path(req), query = hr_request_query(req);
  size_t n = path.len + 1 + (query.len ? query.len + 1 : 0);
  char *loc = hr_request_alloc(req, n);
  if (loc == NULL) {
    hr__static_status(res, 503);
    return;
  }
  memcpy(loc, path.ptr, path.len);
  loc[path.len] = '/';
  if (query.len) {
    loc[path.len + 1] = '?';
    memcpy(loc + path.len + 2, query.ptr, query.len);
  }
  hr_response_add_field(res, HR_SPAN_LIT("Location"), (hr_span_t){loc, n});
  hr__static_status(res, 301);
}

/* ---- the way from a name to a file ---------------------------------------- */

/*
 * A request's walk to its file, in the request's arena: the name, then
 * (a directory) its index, then (precompressed) a sibling.  Each step asks
 * the loop's cache; a name it does not hold is opened on libuv's thread
 * pool, and the walk goes on in the completion, so no open(2) or fstat(2)
 * runs on the loop.
 */
enum { WANT_NAME, WANT_INDEX, WANT_BR, WANT_GZ, SERVE };

typedef struct walk_s {
  uv_work_t work;       /* the open in flight */
  hr__fent_t *opening;  /* its entry */
  hr__fcache_t *fc;
  hr_request_t *req;
  hr_response_t *res;
  char *buf;            /* the current name, NUL-terminated, with room */
  size_t len;           /* the file's name length (without a suffix) */
  size_t dir_len;       /* a directory's name length, before its index */
  int slash, stage;
  hr__sfile_t f;
  char *list;           /* a listing made on the thread pool */
  size_t list_len;
  int list_status;
} walk_t;

static void advance(walk_t *w, hr__fent_t *given);

static void open_work(uv_work_t *req) {
  walk_t *w = req->data;
  hr_static_t *st = w->fc->st; /* read only: lives until hr_static_free */
  hr__fent_open(w->opening, st->rootfd, st->opts.symlinks);
}

static void open_done(uv_work_t *req, int status) {
  walk_t *w = req->data;
  hr__fcache_t *fc = w->fc;
  hr__fent_t *e = w->opening;
  w->opening = NULL;
  if (status != 0) e->status = 503; /* cancelled */
  hr__fcache_put(fc, e);
  advance(w, e);
  hr__fcache_job_done(fc);
}

static void list_work(uv_work_t *req) {
  walk_t *w = req->data;
  hr_static_t *st = w->fc->st;
  hr_span_t path = hr_request_path(w->req); /* read only, the request waits */
  char title[1024];
  snprintf(title, sizeof title, "%.*s", (int)path.len, path.ptr);
  w->buf[w->dir_len] = '\0';
  w->list_status = hr__static_listing(st->rootfd, w->buf, st->opts.symlinks, st->opts.dotfiles,
                                      title, &w->list, &w->list_len);
}

static void list_done(uv_work_t *req, int status) {
  walk_t *w = req->data;
  hr__fcache_t *fc = w->fc;
  hr_static_t *st = fc->st;
  if (status != 0 && w->list_status == 0) w->list_status = 503;
  if (w->list_status != 0) {
    free(w->list);
    hr__static_status(w->res, w->list_status);
  } else {
    hr_response_add_field(w->res, HR_SPAN_LIT("Content-Type"),
                          HR_SPAN_LIT("text/html; charset=utf-8"));
    if (st->cache_control != NULL)
      hr_response_add_field(w->res, HR_SPAN_LIT("Cache-Control"), hr_span_cstr(st->cache_control));
    hr_response_send(w->res, 200, w->list, w->list_len);
    free(w->list);
  }
  w->list = NULL;
  hr__fcache_job_done(fc);
}

/* A directory without an index: its listing when the option allows,
 * else 403. */
static void no_index(walk_t *w) {
  int rc;
  if (!w->fc->st->opts.listing) {
    hr__static_status(w->res, 403);
    return;
  }
  w->list = NULL;
  w->list_status = 0;
  w->work.data = w;
  rc = uv_queue_work(w->fc->loop, &w->work, list_work, list_done);
  if (rc != 0) {
    hr__static_status(w->res, 503);
    return;
  }
  w->fc->pending++;
}

/* The entry for the current name: from the cache, or (returns NULL) an
 * open started on the thread pool that calls advance() again. */
static hr__fent_t *entry(walk_t *w, size_t len) {
  hr__fent_t *e = hr__fcache_find(w->fc, w->buf, len);
  int rc;
  if (e != NULL) return e;
  if ((w->opening = hr__fent_new(w->buf, len)) == NULL) {
    hr__static_status(w->res, 503);
    return NULL;
  }
  w->work.data = w;
  rc = uv_queue_work(w->fc->loop, &w->work, open_work, open_done);
  if (rc != 0) {
    /* No thread pool: open here, once. */
    hr__fent_open(w->opening, w->fc->st->rootfd, w->fc->st->opts.symlinks);
    e = w->opening;
    w->opening = NULL;
    hr__fcache_put(w->fc, e);
    return e;
  }
  w->fc->pending++;
  return NULL;
}

/* The name of the current step into w->buf; returns its length. */
static size_t step_name(walk_t *w) {
  static const char *const suffix[2] = {".br", ".gz"};
  w->buf[w->len] = '\0';
  if (w->stage == WANT_BR || w->stage == WANT_GZ) {
    memcpy(w->buf + w->len, suffix[w->stage - WANT_BR], 4); /* NUL included */
    return w->len + 3;
  }
  return w->len;
}

static void take(walk_t *w, hr__fent_t *e, const char *encoding) {
  if (w->f.ent != NULL) hr__fent_unref(w->f.ent);
  w->f.ent = e;
  w->f.fd = e->fd;
  w->f.size = e->size;
  w->f.mtime = e->mtime;
  w->f.version = e->version;
  w->f.encoding = encoding;
}

/* One answer with `status`; the walk is over. */
static void finish(walk_t *w, int status) {
  if (w->f.ent != NULL) hr__fent_unref(w->f.ent);
  w->f.ent = NULL;
  hr__static_status(w->res, status);
}

static void advance(walk_t *w, hr__fent_t *e) {
  static const char *const codings[2] = {"br", "gzip"};
  hr_static_t *st = w->fc->st;
  for (;;) {
    if (w->stage == SERVE) {
      w->buf[w->len] = '\0';
      hr__static_serve(w->fc, w->req, w->res, w->buf, &w->f);
      return;
    }
    if ((w->stage == WANT_BR || w->stage == WANT_GZ) &&
        !accepts(w->req, codings[w->stage - WANT_BR])) {
      w->stage++;
      continue;
    }
    if (e == NULL && (e = entry(w, step_name(w))) == NULL) return; /* later, or answered */
    switch (w->stage) {
      case WANT_NAME:
      case WANT_INDEX:
        if (e->is_dir && w->stage == WANT_NAME) {
          hr__fent_unref(e);
          if (!w->slash) {
            redirect_slash(w->req, w->res);
            return;
          }
          w->dir_len = w->len;
          if (st->index == NULL) {
            no_index(w);
            return;
          }
          if (w->len > 0) w->buf[w->len++] = '/';
          strcpy(w->buf + w->len, st->index);
          w->len += strlen(st->index);
          w->stage = WANT_INDEX;
          break;
        }
        if (e->status != 0 || e->is_dir) {
          int status = e->status == 0 || e->status == 404 ? 404 : e->status;
          hr__fent_unref(e);
          if (w->stage == WANT_INDEX && status == 404) {
            no_index(w); /* the listing, or 403 */
            return;
          }
          finish(w, status);
          return;
        }
        if (w->slash && w->stage == WANT_NAME) { /* "file.txt/" names no directory */
          hr__fent_unref(e);
          finish(w, 404);
          return;
        }
        take(w, e, "");
        w->stage = st->opts.precompressed ? WANT_BR : SERVE;
        break;
      default: /* a sibling */
        if (e->fd >= 0) {
          take(w, e, codings[w->stage - WANT_BR]);
          w->stage = SERVE;
        } else {
          hr__fent_unref(e);
          w->stage++;
        }
        break;
    }
    e = NULL;
  }
}

static void h_static(hr_request_t *req, hr_response_t *res, void *udata) {
  hr__fcache_t *fc = udata; /* this loop's */
  hr_static_t *st = fc->st;
  hr_span_t name = {"", 0}, path = hr_request_path(req);
  size_t len;
  int status;
  walk_t *w;
  hr_request_param_by_name(req, HR_SPAN_LIT("path"), &name);
  /* A directory is named with its trailing slash: check the name without. */
  len = name.len;
  if (len > 0 && name.ptr[len - 1] == '/') len--;
  status = hr__static_check_name((hr_span_t){name.ptr, len}, st->opts.dotfiles);
  if (status != HR__NAME_OK) {
    hr__static_status(res, status);
    return;
  }
  w = hr_request_alloc(req, sizeof(*w));
  /* NUL-terminated, with room for "/" index and a ".br" or ".gz". */
  if (w == NULL ||
      (w->buf = hr_request_alloc(req, len + 2 + (st->index ? strlen(st->index) : 0) + 4)) == NULL) {
    hr__static_status(res, 503);
    return;
  }
  memset(&w->f, 0, sizeof(w->f));
  w->opening = NULL;
  w->list = NULL;
  w->fc = fc;
  w->req = req;
  w->res = res;
  memcpy(w->buf, name.ptr, len);
  w->buf[len] = '\0';
  w->len = len;
  w->slash = path.len > 0 && path.ptr[path.len - 1] == '/';
  w->stage = WANT_NAME;
  advance(w, NULL);
}

static int cache_create(void *udata, uv_loop_t *loop, void **ctx) {
  hr_static_t *st = udata;
  hr__fcache_t *c = malloc(sizeof(*c));
  if (c == NULL) return -1;
  if (hr__fcache_init(c, st, loop, st->opts.cache_entries) != 0) {
    free(c);
    return -1;
  }
  *ctx = c;
  return 0;
}

static void cache_destroy(void *udata, void *ctx) {
  hr__fcache_t *c = ctx;
  (void)udata;
  if (c->pending > 0) { /* opens in flight: the last one frees it */
    hr__fcache_free(c);
    c->closing = 1;
    return;
  }
  hr__fcache_free(c);
  free(c);
}

static void h_bare_prefix(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  redirect_slash(req, res);
}

int hr_static_mount(hr_router_t *router, const char *host, const char *prefix,
                    hr_static_t *st) {
  char root[512], rest[520];
  hr_group_t *g = NULL;
  hr_route_options_t ro;
  int rc;
  if (router == NULL || st == NULL) return HR_EINVAL;
  if (prefix == NULL) prefix = "";
  if (strlen(prefix) > 500 || (prefix[0] != '\0' && (prefix[0] != '/' ||
                                                     prefix[strlen(prefix) - 1] == '/')))
    return HR_EPATTERN;
  if (host != NULL && (rc = hr_router_group(router, host, NULL, &g)) != 0) return rc;
  snprintf(root, sizeof root, "%s/", prefix);
  snprintf(rest, sizeof rest, "%s/{*path}", prefix);
  hr_route_options_init(&ro);
  ro.context_scope = HR_CONTEXT_LOOP; /* each loop its open-file cache */
  ro.context_create = cache_create;
  ro.context_destroy = cache_destroy;
#define ADD(pattern, handler)                                                     \
  (g != NULL ? hr_group_add(g, "GET,HEAD", (pattern), (handler), st, &ro)        \
             : hr_router_add(router, "GET,HEAD", (pattern), (handler), st, &ro))
  if ((rc = ADD(root, h_static)) != 0 || (rc = ADD(rest, h_static)) != 0) return rc;
  if (prefix[0] != '\0' && (rc = ADD(prefix, h_bare_prefix)) != 0) return rc;
#undef ADD
  return 0;
}
