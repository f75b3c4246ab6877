/* SPDX-License-Identifier: MIT */
/*
 * Serving one regular file of a static root: the strong entity tag and
 * Last-Modified, the preconditions (hr_response_not_modified), Range and
 * If-Range, then the whole file, one range (206), several
 * (multipart/byteranges) or 416, with hr_response_send_file and
 * hr_response_write_file, each holding a reference on the file's cache
 * entry until its bytes are out.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hroute/delegate.h"
#include "static/static.h"

typedef hr__sfile_t file_t;

static void release_ent(hr_response_t *res, int fd, void *udata) {
  (void)res;
  (void)fd;
  hr__fent_unref(udata);
}

void hr__static_status(hr_response_t *res, int status) {
  const char *r = hr_status_reason(status);
  char body[64];
  int n;
  /* Refusals in the host's error format (its error_body hook), as the
   * server's own answers. */
  if (status >= 400) {
    /* Out of memory for its Content-Type: still complete the response
     * (a no-op when it was the send that failed). */
    if (hr_response_error(res, status, NULL) == HR_ENOMEM) hr_response_send(res, status, NULL, 0);
    return;
  }
  n = snprintf(body, sizeof body, "%s\n", r);
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain; charset=utf-8"));
  hr_response_send(res, status, body, (size_t)n);
}


/* The strong entity tag "<version>-<size>[-<coding>]" into buf (>= 64):
 * the version mixes the inode and the mtime to the nanosecond. */
static void make_etag(const file_t *f, char *buf, hr_etag_t *tag) {
  int n = snprintf(buf, 64, "%" PRIx64 "-%" PRIx64 "%s%s", f->version, f->size,
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
 * Content-Range CRLF CRLF (RFC 9110 §14.6), into buf (at least
 * part_head_max bytes); returns its length. */
static size_t part_head_max(const char *type) { return strlen(type) + 160; }

static size_t part_head(char *buf, size_t cap, const char *boundary, const char *type,
                        const hr__range_t *r, uint64_t size) {
  int n = snprintf(buf, cap,
                   "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: bytes %" PRIu64 "-%" PRIu64
                   "/%" PRIu64 "\r\n\r\n",
                   boundary, type, r->first, r->last, size);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* A multipart/byteranges body being written, in the request's arena: it
 * goes on from the drain callback when the queue is full. */
typedef struct parts_s {
  file_t f;
  const char *type;
  const hr__range_t *rg;
  int n, i;
  int closing_written;
  char boundary[40];
  char *head; /* part_head_max(type) bytes */
} parts_t;

static void parts_write(hr_response_t *res, parts_t *p);

static void parts_drain(hr_response_t *res, int status, void *udata) {
  parts_t *p = udata;
  if (status != 0) { /* the connection is gone */
    hr_response_end(res);
    hr__fent_unref(p->f.ent);
    return;
  }
  parts_write(res, p);
}

/* Writes parts from p->i on; waits for the drain callback on HR_EAGAIN. */
static void parts_write(hr_response_t *res, parts_t *p) {
  size_t cap = part_head_max(p->type), len;
  int rc = 0;
  while (p->i < p->n) {
    const hr__range_t *r = &p->rg[p->i];
    len = part_head(p->head, cap, p->boundary, p->type, r, p->f.size);
    if ((rc = hr_response_write(res, p->head, len)) != 0) break;
    p->f.ent->refs++; /* each range's, until it is sent */
    if ((rc = hr_response_write_file(res, p->f.fd, r->first, r->last - r->first + 1, release_ent,
                                     p->f.ent)) != 0) {
      p->f.ent->refs--;
      break;
    }
    p->i++;
  }
  if (rc == 0 && !p->closing_written) {
    len = (size_t)snprintf(p->head, cap, "\r\n--%s--\r\n", p->boundary);
    rc = hr_response_write(res, p->head, len);
    if (rc == 0) p->closing_written = 1;
  }
  if (rc == HR_EAGAIN && hr_response_on_drain(res, parts_drain, p) == 0) return;
  /* Done, or failed (short of the length: the connection ends). */
  hr_response_end(res);
  hr__fent_unref(p->f.ent); /* the writer's */
}

static void send_ranges(hr_request_t *req, hr_response_t *res, const file_t *f, const char *type,
                        const hr__range_t *rg, int n) {
  char ctype[80];
  uint64_t total = 0;
  parts_t *p = hr_request_alloc(req, sizeof(*p));
  hr__range_t *copy = hr_request_alloc(req, (size_t)n * sizeof(*rg));
  size_t cap = part_head_max(type);
  int i;
  /* A boundary no file byte can break: the parts are delimited by their
   * lengths anyway, and a client that scans for it finds it only there
   * with overwhelming odds (64 bits of the tag and a counter). */
  static _Atomic uint64_t counter;
  uint64_t x = (uint64_t)f->mtime * 0x9E3779B97F4A7C15ull ^ f->size ^
               atomic_fetch_add_explicit(&counter, 0x632BE59BD9B4E019ull, memory_order_relaxed);
  if (p == NULL || copy == NULL || (p->head = hr_request_alloc(req, cap)) == NULL) {
    hr__fent_unref(f->ent);
    hr__static_status(res, 503);
    return;
  }
  memcpy(copy, rg, (size_t)n * sizeof(*rg));
  p->f = *f;
  p->type = type;
  p->rg = copy;
  p->n = n;
  p->i = 0;
  p->closing_written = 0;
  snprintf(p->boundary, sizeof p->boundary, "hroute-%016" PRIx64, x);
  for (i = 0; i < n; i++)
    total += part_head(p->head, cap, p->boundary, type, &rg[i], f->size) +
             (rg[i].last - rg[i].first + 1);
  total += strlen(p->boundary) + 8; /* CRLF "--" boundary "--" CRLF */
  snprintf(ctype, sizeof ctype, "multipart/byteranges; boundary=%s", p->boundary);
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), hr_span_cstr(ctype));
  if (hr_response_start(res, 206, (int64_t)total) != 0) {
    hr__fent_unref(f->ent);
    hr__static_status(res, 500);
    return;
  }
  parts_write(res, p);
}

void hr__static_serve(hr__fcache_t *fc, hr_request_t *req, hr_response_t *res, const char *name,
                      file_t *f) {
  hr_static_t *st = fc->st;
  /* From here on f->ent's reference goes with the response, or is dropped
   * on every path that sends none. */
  char tagbuf[64], crange[96];
  hr__range_t rg[HR__MAX_RANGES];
  hr_etag_t tag;
  hr_date_t lm;
  hr_span_t range;
  const char *type = hr_static_type(st, hr_span_cstr(name));
  int n = 0, rc, level, coding;
  make_etag(f, tagbuf, &tag);
  /* Whether the 200 would go compressed, decided before the preconditions:
   * a 304 says the Vary and (weak) ETag that 200 would. */
  coding = hr__static_plan(fc, res, f, type, &level);
  if (coding > 0) tag.weak = 1;
  lm.seconds = f->mtime;
  if (st->opts.precompressed)
    hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept-Encoding"));
  if (st->cache_control != NULL)
    hr_response_add_field(res, HR_SPAN_LIT("Cache-Control"), hr_span_cstr(st->cache_control));
  /* §13.2.2: the preconditions first (304 and 412 carry no range). */
  rc = hr_response_not_modified(req, res, &tag, f->mtime);
  if (rc != 0) {
    hr__fent_unref(f->ent);
    if (rc < 0) hr__static_status(res, 500);
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
    hr__static_status(res, 416);
    return;
  }
  if (n > 1) {
    send_ranges(req, res, f, type, rg, n);
    return;
  }
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), hr_span_cstr(type));
  if (n == 1) {
    snprintf(crange, sizeof crange, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, rg[0].first,
             rg[0].last, f->size);
    hr_response_add_field(res, HR_SPAN_LIT("Content-Range"), hr_span_cstr(crange));
    rc = hr_response_send_file(res, 206, f->fd, rg[0].first, rg[0].last - rg[0].first + 1,
                               release_ent, f->ent);
  } else if (f->ent->bytes != NULL && f->fd == f->ent->fd) {
    /* A small file from memory: copied behind the head, one write (and
     * compressed there when the settings say so). */
    rc = hr_response_send(res, 200, f->ent->bytes, (size_t)f->size);
    if (rc == 0) hr__fent_unref(f->ent);
  } else if (coding > 0) {
    /* Compressed on the fly: the response and the reference are its. */
    hr__static_serve_coded(fc, res, name, f, coding, level);
    return;
  } else {
    rc = hr_response_send_file(res, 200, f->fd, 0, f->size, release_ent, f->ent);
  }
  if (rc != 0) {
    hr__fent_unref(f->ent);
    if (rc != HR_ECLOSED) hr__static_status(res, 500);
  }
}
