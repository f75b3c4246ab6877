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
#include <stdio.h>
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
  int n = snprintf(body, sizeof body, "%s\n", r);
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain; charset=utf-8"));
  hr_response_send(res, status, body, (size_t)n);
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

void hr__static_serve(hr_static_t *st, hr_request_t *req, hr_response_t *res, const char *name,
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
    if (rc != HR_ECLOSED) hr__static_status(res, 500);
  }
}
