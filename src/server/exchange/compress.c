/* SPDX-License-Identifier: MIT */
/*
 * Response compression (hr_compress_options_t, server.h): whether a
 * response is compressed and with which coding, the fields that say so,
 * and the body through the codec layer (src/codec/).  response.c calls
 * it at the head of every response that has a body of its own making
 * (not files), protocol-neutral: the bytes it hands the protocol are
 * already coded.
 */
#include <string.h>

#include "codec/codec.h"
#include "codec/zconf.h"
#include "server/exchange/compress.h"
#include "server/exchange/exchange_api.h"
#include "server/exchange/exchange.h"

/* ---- the response's fields ---------------------------------------------------------- */

/* The value of field `name` in "Name: value\r\n" lines; its line's start
 * in *line (may be NULL).  Returns 1 when found. */
static int field_in(hr_span_t lines, hr_span_t name, hr_span_t *value, const char **line) {
  const char *p = lines.ptr, *end = lines.ptr + lines.len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *colon;
    if (eol == NULL) eol = end;
    colon = memchr(p, ':', (size_t)(eol - p));
    if (colon != NULL && (size_t)(colon - p) == name.len &&
        hr_span_eq_nocase((hr_span_t){p, name.len}, name)) {
      const char *v = colon + 1, *ve = eol;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      value->ptr = v;
      value->len = (size_t)(ve - v);
      if (line != NULL) *line = p;
      return 1;
    }
    p = eol + 1;
  }
  return 0;
}

/* A field of the response as it will be sent: the handler's, else the
 * route's constant one (the handler's replaces it). */
static int res_field(const hr__exchange_t *ex, hr_span_t name, hr_span_t *value) {
  const hr_route_t *rt = ex->req.route;
  if (field_in((hr_span_t){ex->res.fields, ex->res.fields_len}, name, value, NULL)) return 1;
  return rt != NULL && !ex->internal_answer && field_in(rt->head, name, value, NULL);
}

int hr__compress_field(const hr__exchange_t *ex, hr_span_t name, hr_span_t *value) {
  return res_field(ex, name, value);
}

/* Whether the comma-separated `list` has `token` (case-insensitively). */
static int list_has(hr_span_t list, hr_span_t token) {
  const char *p = list.ptr, *end = list.ptr + list.len;
  while (p < end) {
    const char *e = memchr(p, ',', (size_t)(end - p)), *s = p, *t;
    if (e == NULL) e = end;
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    t = e;
    while (t > s && (t[-1] == ' ' || t[-1] == '\t')) t--;
    if (hr_span_eq_nocase((hr_span_t){s, (size_t)(t - s)}, token)) return 1;
    p = e + 1;
  }
  return 0;
}

/* Whether the Content-Type (`given`, or the response's field when its ptr
 * is NULL) names a compressible type. */
static int type_ok(const hr__zconf_t *z, const hr__exchange_t *ex, hr_span_t given) {
  hr_span_t ct = given, type, sub;
  const char *slash, *end;
  if (ct.ptr == NULL && !res_field(ex, HR_SPAN_LIT("Content-Type"), &ct)) return 0;
  end = memchr(ct.ptr, ';', ct.len);
  if (end == NULL) end = ct.ptr + ct.len;
  slash = memchr(ct.ptr, '/', (size_t)(end - ct.ptr));
  if (slash == NULL) return 0;
  type = (hr_span_t){ct.ptr, (size_t)(slash - ct.ptr)};
  sub = (hr_span_t){slash + 1, (size_t)(end - slash - 1)};
  while (sub.len && (sub.ptr[sub.len - 1] == ' ' || sub.ptr[sub.len - 1] == '\t')) sub.len--;
  return hr__zconf_type_ok(z, type, sub);
}

/* The settings that apply: the route's own, else its host table's
 * (hr_router_set_compress, from the table the request was matched in),
 * else the server's; NULL for none. */
static const hr__zconf_t *zconf_of(hr__exchange_t *ex) {
  const hr_request_t *req = &ex->req;
  if (req->route != NULL && req->route->core->zconf != NULL) return req->route->core->zconf;
  hr__exchange_view(ex);
  return ex->zconf != NULL ? ex->zconf : ex->w->server->zconf;
}

static int choose(hr__exchange_t *ex, int status, int64_t len, hr_span_t type, int *vary);

int hr__compress_choose(hr__exchange_t *ex, int status, int64_t len, int *vary) {
  return choose(ex, status, len, (hr_span_t){NULL, 0}, vary);
}

static int choose(hr__exchange_t *ex, int status, int64_t len, hr_span_t type, int *vary) {
  const hr__zconf_t *z;
  const hr_request_t *req = &ex->req;
  hr_span_t v;
  int present;
  *vary = 0;
  if (req->route != NULL && req->route->core->no_compress) return 0;
  z = zconf_of(ex);
  if (z == NULL || z->n == 0) return 0;
  /* No content (RFC 9110 §15.3.5, §15.4.5), or a range of the identity
   * representation (§14: ranges of a compressed one would need a
   * representation of their own). */
  if (status < 200 || status == 204 || status == 206 || status == 304) return 0;
  if (hr_request_field(req, HR_SPAN_LIT("Range"), NULL, &v) == 0) return 0;
  if (res_field(ex, HR_SPAN_LIT("Content-Encoding"), &v)) return 0; /* coded already */
  if (res_field(ex, HR_SPAN_LIT("Cache-Control"), &v) && list_has(v, HR_SPAN_LIT("no-transform")))
    return 0; /* §5.7.2 of RFC 9111 */
  if (!type_ok(z, ex, type)) return 0;
  if (len >= 0 && (uint64_t)len < z->min_length) return 0;
  /* It could be compressed: whatever the answer, it varies with the
   * request's Accept-Encoding (RFC 9110 §12.5.5). */
  *vary = 1;
  {
    hr__accept_t a;
    size_t cursor = 0;
    hr__accept_init(&a);
    for (present = 0; hr_request_field(req, HR_SPAN_LIT("Accept-Encoding"), &cursor, &v) == 0;
         present = 1)
      hr__accept_add(&a, v);
    return present ? hr__accept_pick(&a, z->order, z->n) : 0;
  }
}

int hr_response_coding(hr_response_t *res, int status, uint64_t length, const char *media_type,
                       hr_coding_t *coding, int *level) {
  hr__exchange_t *ex;
  int err, vary, c;
  if (res == NULL || coding == NULL || level == NULL || status < 200 || status > 599)
    return HR_EINVAL;
  ex = HR__EX_OF_RES(res);
  if ((err = hr__exchange_check_thread(ex)) != 0) return err;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  c = choose(ex, status, length > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)length,
             media_type != NULL ? hr_span_cstr(media_type) : (hr_span_t){NULL, 0}, &vary);
  *coding = (hr_coding_t)c;
  *level = c > 0 ? zconf_of(ex)->level[c] : 0;
  return vary;
}

int hr__compress_accepted(hr__exchange_t *ex, int coding) {
  hr__accept_t a;
  hr_span_t v;
  size_t cursor = 0;
  int present = 0, w;
  hr__accept_init(&a);
  while (hr_request_field(&ex->req, HR_SPAN_LIT("Accept-Encoding"), &cursor, &v) == 0) {
    hr__accept_add(&a, v);
    present = 1;
  }
  /* No field: RFC 9110 §12.5.3 lets any coding through, but the server's
   * own compression answers identity then (many clients that send none
   * cannot decode), and so does this. */
  w = a.q[coding] >= 0 ? a.q[coding] : a.star;
  return present && w > 0;
}

/* Makes a strong ETag weak (W/): the coded bytes are not the identity
 * representation's (RFC 9110 §8.8.1).  The handler's in place; a route's
 * constant one by a handler field of the weak value, which replaces it. */
static int weaken_etag(hr__exchange_t *ex) {
  hr_response_t *res = &ex->res;
  const hr_route_t *rt = ex->req.route;
  hr_span_t v;
  size_t at, cap;
  if (!field_in((hr_span_t){res->fields, res->fields_len}, HR_SPAN_LIT("ETag"), &v, NULL)) {
    char weak[256];
    if (rt == NULL || ex->internal_answer || !field_in(rt->head, HR_SPAN_LIT("ETag"), &v, NULL) ||
        v.len == 0 || v.ptr[0] != '"' || v.len + 2 > sizeof weak)
      return 0;
    memcpy(weak, "W/", 2);
    memcpy(weak + 2, v.ptr, v.len);
    return hr_response_add_field(res, HR_SPAN_LIT("ETag"), (hr_span_t){weak, v.len + 2});
  }
  if (v.len == 0 || v.ptr[0] != '"') return 0;
  at = (size_t)(v.ptr - res->fields);
  /* The buffer may move: from here on, by offset. */
  if (hr__res_field_room(res, 2, &cap) == NULL) return HR_ENOMEM;
  memmove(res->fields + at + 2, res->fields + at, res->fields_len - at);
  memcpy(res->fields + at, "W/", 2);
  hr__res_field_commit(res, 2);
  return 0;
}

/* Whether some Vary line, the handler's or the route's (both are sent,
 * hr__field_adds), names Accept-Encoding or "*". */
static int varies_by_coding(const hr__exchange_t *ex) {
  const hr_route_t *rt = ex->req.route;
  hr_span_t blocks[2] = {{ex->res.fields, ex->res.fields_len}, {NULL, 0}}, v;
  size_t i;
  if (rt != NULL && !ex->internal_answer) blocks[1] = rt->head;
  for (i = 0; i < 2; i++) {
    hr_span_t rest = blocks[i];
    const char *line;
    while (rest.len && field_in(rest, HR_SPAN_LIT("Vary"), &v, &line)) {
      const char *next = v.ptr + v.len;
      if (list_has(v, HR_SPAN_LIT("Accept-Encoding")) || list_has(v, HR_SPAN_LIT("*"))) return 1;
      rest.len -= (size_t)(next - rest.ptr);
      rest.ptr = next;
    }
  }
  return 0;
}

int hr__compress_fields(hr__exchange_t *ex, int coding, int vary) {
  hr_response_t *res = &ex->res;
  int rc = 0;
  if (vary && !varies_by_coding(ex))
    rc = hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept-Encoding"));
  if (rc == 0 && coding > 0)
    rc = hr_response_add_field(res, HR_SPAN_LIT("Content-Encoding"), hr__coding_name(coding));
  if (rc == 0 && coding > 0) rc = weaken_etag(ex);
  return rc;
}

/* ---- bodies ------------------------------------------------------------------------------ */

static hr__codecs_t *codecs(hr__exchange_t *ex) {
  hr__worker_t *w = ex->w;
  if (w->codecs == NULL) w->codecs = hr__codecs_new(&w->mem);
  return w->codecs;
}

int hr__compress_whole(hr__exchange_t *ex, int coding, const void *body, size_t len,
                       const void **out, size_t *out_len) {
  const hr__zconf_t *z = zconf_of(ex);
  hr__codecs_t *cs = codecs(ex);
  size_t bound = hr__compress_bound(coding, len), n;
  char *buf;
  if (cs == NULL || (buf = hr__arena_alloc(&ex->arena, bound)) == NULL) return 0;
  n = hr__compress(cs, coding, z->level[coding], body, len, buf, bound);
  /* Not smaller: the identity representation does better. */
  if (n == 0 || n >= len) return 0;
  *out = buf;
  *out_len = n;
  return coding;
}

int hr__compress_stream_open(hr__exchange_t *ex, int coding) {
  const hr__zconf_t *z = zconf_of(ex);
  int level = z->level[coding];
  /* Streams flush at every write: a quick level keeps a stream live, and
   * Brotli above quality 3 holds far more memory for little gain on
   * flushed pieces (codec.c). */
  if (coding == HR_CODING_GZIP && level > 9) level = 9;
  if (coding == HR_CODING_BR && level > 3) level = 3;
  if ((ex->zs = hr__zstream_new(&ex->w->mem, coding, level)) == NULL) return 0;
  return coding;
}

int hr__compress_stream_write(hr__exchange_t *ex, const void *data, size_t len, int last) {
  hr__worker_t *w = ex->w;
  size_t n = hr__zstream_write(ex->zs, data, len, last, &w->zbuf, &w->zcap);
  if (n == (size_t)-1) return HR_ENOMEM;
  ex->coded_bytes += n;
  /* The protocol copies: the loop's buffer serves the next write. */
  return n > 0 ? ex->proto->data(ex, w->zbuf, n) : 0;
}

void hr__compress_release(hr__exchange_t *ex) {
  if (ex->zs != NULL) hr__zstream_free(ex->zs);
  ex->zs = NULL;
}
