/* SPDX-License-Identifier: MIT */
/*
 * The static handler (include/hroute/static.h): a request's name checked
 * and opened below the root, a directory's index or its redirect, a
 * precompressed sibling, the validators and preconditions, then the whole
 * file, one range, several as multipart/byteranges, or 416.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hroute/delegate.h"
#include "static/static.h"

void hr_static_options_init(hr_static_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->index = "index.html";
  o->symlinks = HR_STATIC_SYMLINKS_INSIDE;
  o->mime_types = "/etc/mime.types";
  o->default_type = "application/octet-stream";
  o->cache_entries = 1000;
  o->cache_valid_ms = 1000;
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
  if (out == NULL || root == NULL) return HR_EINVAL;
  *out = NULL;
  if (opts == NULL) {
    hr_static_options_init(&defaults);
    opts = &defaults;
  }
  if ((unsigned)opts->symlinks > HR_STATIC_SYMLINKS_ANY) return HR_EINVAL;
  fd = open(root, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0) return HR_EINVAL;
  if (fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    close(fd);
    return HR_EINVAL;
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

/* A file opened for a request: its descriptor, what fstat said, and the
 * Content-Encoding of a precompressed sibling ("" for the file itself). */
typedef struct file_s {
  hr__fent_t *ent; /* referenced: hr__fent_unref when done */
  int fd;
  uint64_t size;
  int64_t mtime;
  const char *encoding;
} file_t;

static void release_ent(hr_response_t *res, int fd, void *udata) {
  (void)res;
  (void)fd;
  hr__fent_unref(udata);
}

static void send_status(hr_response_t *res, int status) {
  const char *r = hr_status_reason(status);
  char body[64];
  int n = snprintf(body, sizeof body, "%s\n", r);
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain; charset=utf-8"));
  hr_response_send(res, status, body, (size_t)n);
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
      const char *name, *end;
      int q = 1000;
      while (p < e && (*p == ' ' || *p == '\t' || *p == ',')) p++;
      name = p;
      while (p < e && *p != ',' && *p != ';' && *p != ' ' && *p != '\t') p++;
      end = p;
      while (p < e && *p != ',') {
        /* ";q=0" (or 0.0, 0.00, 0.000) excludes; any other weight allows */
        if (*p == '=' && p > name && (p[-1] == 'q' || p[-1] == 'Q')) {
          const char *d = p + 1;
          q = d < e && *d == '0' ? 0 : 1000;
          for (d++; q == 0 && d < e && *d != ',' && *d != ';' && *d != ' '; d++)
            if (*d != '.' && *d != '0') q = 1;
        }
        p++;
      }
      if ((size_t)(end - name) == clen && strncasecmp(name, coding, clen) == 0) return q > 0;
      if (end - name == 1 && *name == '*') star = q > 0;
    }
  }
  return star == 1;
}

/* Opens `name` (arena, NUL-terminated) through the loop's cache, or its
 * precompressed sibling when one is allowed and exists.  Returns 0, or an
 * HTTP status. */
static int open_file(hr__fcache_t *fc, hr_request_t *req, char *name, size_t len, file_t *f,
                     int *is_dir) {
  static const char *const codings[2] = {"br", "gzip"};
  static const char *const suffix[2] = {".br", ".gz"};
  hr_static_t *st = fc->st;
  hr__fent_t *e = hr__fcache_get(fc, name, len);
  int i, status;
  *is_dir = 0;
  if (e == NULL) return 503;
  if (e->status != 0 || e->is_dir) {
    status = e->status;
    *is_dir = e->is_dir;
    hr__fent_unref(e);
    return status;
  }
  f->ent = e;
  f->fd = e->fd;
  f->size = e->size;
  f->mtime = e->mtime;
  f->encoding = "";
  if (!st->opts.precompressed) return 0;
  for (i = 0; i < 2; i++) {
    hr__fent_t *ce;
    if (!accepts(req, codings[i])) continue;
    memcpy(name + len, suffix[i], 4); /* NUL included */
    ce = hr__fcache_get(fc, name, len + 3);
    name[len] = '\0';
    if (ce == NULL) continue;
    if (ce->fd < 0) {
      hr__fent_unref(ce);
      continue;
    }
    hr__fent_unref(f->ent);
    f->ent = ce;
    f->fd = ce->fd;
    f->size = ce->size;
    f->mtime = ce->mtime;
    f->encoding = codings[i];
    return 0;
  }
  return 0;
}

/* The strong entity tag "<mtime>-<size>[-<coding>]" into buf (>= 64). */
static void make_etag(const file_t *f, char *buf, hr_etag_t *tag) {
  int n = snprintf(buf, 64, "%" PRIx64 "-%" PRIx64 "%s%s", (uint64_t)f->mtime, f->size,
                   f->encoding[0] ? "-" : "", f->encoding);
  tag->tag.ptr = buf;
  tag->tag.len = (size_t)n;
  tag->weak = 0;
}

/* If-Range (RFC 9110 §13.1.5): whether the Range applies.  An entity tag
 * must match strongly; a date, equal Last-Modified exactly. */
static int if_range_holds(hr_request_t *req, const hr_etag_t *tag, int64_t mtime) {
  hr_span_t v;
  hr_etag_t t;
  hr_date_t d;
  if (hr_request_field(req, HR_SPAN_LIT("If-Range"), NULL, &v) != 0) return 1;
  if (hr_request_typed(req, HR_SPAN_LIT("If-Range"), HR_TYPE_ETAG, &t) == 0)
    return !t.weak && hr_span_eq(t.tag, tag->tag);
  if (hr_request_typed(req, HR_SPAN_LIT("If-Range"), HR_TYPE_DATE, &d) == 0)
    return d.seconds == mtime;
  return 0; /* neither: do not send a part of something else */
}

/* The part head of range i: CRLF "--" boundary CRLF Content-Type CRLF
 * Content-Range CRLF CRLF (RFC 9110 §14.6). */
static int part_head(char *buf, size_t cap, const char *boundary, const char *type,
                     const hr__range_t *r, uint64_t size) {
  return snprintf(buf, cap,
                  "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: bytes %" PRIu64 "-%" PRIu64
                  "/%" PRIu64 "\r\n\r\n",
                  boundary, type, r->first, r->last, size);
}

static void send_ranges(hr_response_t *res, const file_t *f, const char *type,
                        const hr__range_t *rg, int n) {
  char boundary[40], head[512], ctype[80];
  uint64_t total = 0;
  int i, len;
  /* A boundary no file byte can break: the parts are delimited by their
   * lengths anyway, and a client that scans for it finds it only there
   * with overwhelming odds (64 bits of the tag and a counter). */
  static _Atomic uint64_t counter;
  uint64_t x = (uint64_t)f->mtime * 0x9E3779B97F4A7C15ull ^ f->size ^
               (counter += 0x632BE59BD9B4E019ull);
  snprintf(boundary, sizeof boundary, "hroute-%016" PRIx64, x);
  for (i = 0; i < n; i++) {
    len = part_head(head, sizeof head, boundary, type, &rg[i], f->size);
    total += (uint64_t)len + (rg[i].last - rg[i].first + 1);
  }
  total += strlen(boundary) + 8; /* CRLF "--" boundary "--" CRLF */
  snprintf(ctype, sizeof ctype, "multipart/byteranges; boundary=%s", boundary);
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), hr_span_cstr(ctype));
  if (hr_response_start(res, 206, (int64_t)total) == 0) {
    for (i = 0; i < n; i++) {
      len = part_head(head, sizeof head, boundary, type, &rg[i], f->size);
      if (hr_response_write(res, head, (size_t)len) != 0) break;
      f->ent->refs++; /* each range's, until it is sent */
      if (hr_response_write_file(res, f->fd, rg[i].first, rg[i].last - rg[i].first + 1,
                                 release_ent, f->ent) != 0) {
        f->ent->refs--;
        break;
      }
    }
    if (i == n) {
      len = snprintf(head, sizeof head, "\r\n--%s--\r\n", boundary);
      hr_response_write(res, head, (size_t)len);
    }
    hr_response_end(res); /* short of the length after an error: the connection ends */
  }
  hr__fent_unref(f->ent); /* this function's */
}

/* Serves the regular file `f` (its fd is the response's from here on). */
static void serve_file(hr_static_t *st, hr_request_t *req, hr_response_t *res, const char *name,
                       file_t *f) {
  /* From here on f->ent's reference goes with the response, or is dropped
   * on every path that sends none. */
  char tagbuf[64], crange[96];
  hr__range_t rg[HR__MAX_RANGES];
  hr_etag_t tag;
  hr_date_t lm;
  hr_span_t range;
  const char *type = hr_static_type(st, hr_span_cstr(name));
  int n = 0, rc;
  make_etag(f, tagbuf, &tag);
  lm.seconds = f->mtime;
  if (st->opts.precompressed)
    hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept-Encoding"));
  if (st->cache_control != NULL)
    hr_response_add_field(res, HR_SPAN_LIT("Cache-Control"), hr_span_cstr(st->cache_control));
  /* §13.2.2: the preconditions first (304 and 412 carry no range). */
  rc = hr_response_not_modified(req, res, &tag, f->mtime);
  if (rc != 0) {
    hr__fent_unref(f->ent);
    if (rc < 0) send_status(res, 500);
    return;
  }
  hr_response_add_typed(res, HR_SPAN_LIT("ETag"), HR_TYPE_ETAG, &tag);
  hr_response_add_typed(res, HR_SPAN_LIT("Last-Modified"), HR_TYPE_DATE, &lm);
  hr_response_add_field(res, HR_SPAN_LIT("Accept-Ranges"), HR_SPAN_LIT("bytes"));
  if (f->encoding[0])
    hr_response_add_field(res, HR_SPAN_LIT("Content-Encoding"), hr_span_cstr(f->encoding));
  if (hr_request_field(req, HR_SPAN_LIT("Range"), NULL, &range) == 0 &&
      if_range_holds(req, &tag, f->mtime))
    n = hr__range_parse(range, f->size, rg);
  if (n < 0) {
    snprintf(crange, sizeof crange, "bytes */%" PRIu64, f->size);
    hr_response_add_field(res, HR_SPAN_LIT("Content-Range"), hr_span_cstr(crange));
    hr__fent_unref(f->ent);
    send_status(res, 416);
    return;
  }
  if (n > 1) {
    send_ranges(res, f, type, rg, n);
    return;
  }
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), hr_span_cstr(type));
  if (n == 1) {
    snprintf(crange, sizeof crange, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, rg[0].first,
             rg[0].last, f->size);
    hr_response_add_field(res, HR_SPAN_LIT("Content-Range"), hr_span_cstr(crange));
    rc = hr_response_send_file(res, 206, f->fd, rg[0].first, rg[0].last - rg[0].first + 1,
                               release_ent, f->ent);
  } else {
    rc = hr_response_send_file(res, 200, f->fd, 0, f->size, release_ent, f->ent);
  }
  if (rc != 0) {
    hr__fent_unref(f->ent);
    if (rc != HR_ECLOSED) send_status(res, 500);
  }
}

/* 301 to the request's path with `suffix` ("/") added, and its query. */
static void redirect_slash(hr_request_t *req, hr_response_t *res) {
  hr_span_t path = hr_request_path(req), query = hr_request_query(req);
  size_t n = path.len + 1 + (query.len ? query.len + 1 : 0);
  char *loc = hr_request_alloc(req, n);
  if (loc == NULL) {
    send_status(res, 503);
    return;
  }
  memcpy(loc, path.ptr, path.len);
  loc[path.len] = '/';
  if (query.len) {
    loc[path.len + 1] = '?';
    memcpy(loc + path.len + 2, query.ptr, query.len);
  }
  hr_response_add_field(res, HR_SPAN_LIT("Location"), (hr_span_t){loc, n});
  send_status(res, 301);
}

static void h_static(hr_request_t *req, hr_response_t *res, void *udata) {
  hr__fcache_t *fc = udata; /* this loop's */
  hr_static_t *st = fc->st;
  hr_span_t name = {"", 0}, path = hr_request_path(req);
  int slash = path.len > 0 && path.ptr[path.len - 1] == '/', status, is_dir;
  size_t len, room;
  char *buf;
  file_t f;
  hr_request_param_by_name(req, HR_SPAN_LIT("path"), &name);
  /* A directory is named with its trailing slash: check the name without. */
  len = name.len;
  if (len > 0 && name.ptr[len - 1] == '/') len--;
  status = hr__static_check_name((hr_span_t){name.ptr, len}, st->opts.dotfiles);
  if (status != HR__NAME_OK) {
    send_status(res, status);
    return;
  }
  /* NUL-terminated, with room for "/" index and a ".br" or ".gz". */
  room = len + 2 + (st->index ? strlen(st->index) : 0) + 4;
  buf = hr_request_alloc(req, room);
  if (buf == NULL) {
    send_status(res, 503);
    return;
  }
  memcpy(buf, name.ptr, len);
  buf[len] = '\0';
  status = open_file(fc, req, buf, len, &f, &is_dir);
  if (status == 0 && is_dir) {
    if (!slash) {
      redirect_slash(req, res);
      return;
    }
    if (st->index == NULL) {
      send_status(res, 403); /* no listing */
      return;
    }
    if (len > 0) buf[len++] = '/';
    strcpy(buf + len, st->index);
    len += strlen(st->index);
    status = open_file(fc, req, buf, len, &f, &is_dir);
    if (status == 404 || is_dir) status = 403; /* no index: no listing either */
  } else if (status == 0 && slash) {
    status = 404; /* "file.txt/" names no directory */
    hr__fent_unref(f.ent);
  }
  if (status != 0) {
    send_status(res, status);
    return;
  }
  serve_file(st, req, res, buf, &f);
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
  (void)udata;
  hr__fcache_free(ctx);
  free(ctx);
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
