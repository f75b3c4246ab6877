/* SPDX-License-Identifier: MIT */
/*
 * Request ids (http.h hr_request_id; server.h request_id_field and
 * request_id_echo): the value a request brings in the id field when it is
 * well formed, else one generated here, made once per request and only
 * when something asks -- the handler, the response's echo, the access
 * log -- so a server that asks for none pays nothing per request.
 *
 * A generated id is "<prefix>-<worker>-<n>": 64 random bits drawn from
 * getrandom(2) when the server starts (no two servers, and no restart,
 * share them), the worker thread's index (no two workers share that), and
 * the worker's own count, which only its loop thread touches: no system
 * call, lock, atomic or allocation per request.  It lives in the request
 * (req.id_buf), so it is valid exactly as long as the request's other
 * spans, and an adopted id is one of those spans.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "server/exchange/exchange.h"
#include "util/text.h"

/* A worker index is below 256 (hr_server_start), three digits at most. */
_Static_assert(HR__RID_PREFIX_LEN + 1 + 3 + 1 + 20 <= HR__RID_GEN_MAX,
               "a generated id fits req.id_buf");
_Static_assert(HR__RID_PREFIX_LEN + 1 + 3 + 1 <=
                   sizeof(((hr__worker_t *)0)->rid_head),
               "an id's head fits the worker's room");

int hr__request_id_setup(hr_server_t *s, const char *name) {
  hr_span_t n;
  size_t i;
  s->rid_name_len = 0;
  if (name == NULL) return 0; /* ids off */
  n = hr_span_cstr(name);
  if (n.len > HR__RID_NAME_MAX || !hr__is_token(n) || hr__reserved_field(n))
    return HR_EINVAL;
  memcpy(s->rid_name, n.ptr, n.len);
  s->rid_name[n.len] = '\0';
  for (i = 0; i < n.len; i++) {
    char c = n.ptr[i];
    s->rid_lname[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  s->rid_name_len = n.len;
  return 0;
}

/* splitmix64's finaliser: every input bit reaches every output bit. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void hr__request_id_draw(hr_server_t *s) {
  static const char hex[] = "0123456789abcdef";
  uint64_t r = 0;
  ssize_t got;
  int i;
  do
    got = getrandom(&r, sizeof r, GRND_NONBLOCK);
  while (got < 0 && errno == EINTR);
  if (got != (ssize_t)sizeof r) {
    /* No entropy pool yet (early boot) or no getrandom: the clock, the
     * process and where the server lives, mixed.  Weaker, still unlike
     * another server's. */
    r = mix(uv_hrtime() ^ ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)s);
  }
  for (i = HR__RID_PREFIX_LEN - 1; i >= 0; i--, r >>= 4) s->rid_prefix[i] = hex[r & 15];
}

/* 1 when `v` may be adopted as an id: 1 to HR__RID_ADOPT_MAX bytes, each
 * visible ASCII (VCHAR without obs-text, RFC 5234 and RFC 9110 §5.5): no
 * space, control byte or byte from 0x80 reaches a log line or an echo. */
static int adoptable(hr_span_t v) {
  size_t i;
  if (v.len == 0 || v.len > HR__RID_ADOPT_MAX) return 0;
  for (i = 0; i < v.len; i++)
    if ((unsigned char)v.ptr[i] < 0x21 || (unsigned char)v.ptr[i] > 0x7e) return 0;
  return 1;
}

/* The id the request brings: one field line with an adoptable value, in a
 * header section received whole (one refused half-way may have lost its
 * fields, or hold a value cut short).  Empty otherwise, a repeated field
 * included (two ids name no one request). */
static hr_span_t incoming(const hr__exchange_t *ex) {
  const hr_server_t *s = ex->w->server;
  hr_span_t name = {s->rid_name, s->rid_name_len}, v, none = {NULL, 0};
  size_t cursor = 0;
  if (!ex->fields_whole) return none;
  if (hr_request_field(&ex->req, name, &cursor, &v) != 0 || !adoptable(v)) return none;
  if (hr_request_field(&ex->req, name, &cursor, NULL) == 0) return none;
  return v;
}

/* A new id into req.id_buf: the worker's head, rendered at its first id,
 * then its count. */
static hr_span_t generate(hr__exchange_t *ex) {
  hr__worker_t *w = ex->w;
  char *out = ex->req.id_buf;
  size_t n;
  if (w->rid_head_len == 0) {
    n = HR__RID_PREFIX_LEN;
    memcpy(w->rid_head, w->server->rid_prefix, n);
    w->rid_head[n++] = '-';
    n += hr__put_u64(w->rid_head + n, (uint64_t)(w->index % 1000));
    w->rid_head[n++] = '-';
    w->rid_head_len = (uint8_t)n;
  }
  n = w->rid_head_len;
  memcpy(out, w->rid_head, n);
  n += hr__put_u64(out + n, ++w->rid_count);
  return (hr_span_t){out, n};
}

hr_span_t hr__request_id(hr__exchange_t *ex) {
  hr_span_t none = {NULL, 0};
  if (ex->w->server->rid_name_len == 0) return none;
  if (ex->request_id.ptr == NULL) {
    ex->request_id = incoming(ex);
    if (ex->request_id.ptr == NULL) ex->request_id = generate(ex);
  }
  return ex->request_id;
}

hr_span_t hr_request_id(const hr_request_t *req) {
  hr_span_t none = {NULL, 0};
  if (req == NULL) return none;
  return hr__request_id(HR__EX_OF_REQ(req));
}

/* Whether the "name: value\r\n" lines of `lines` have one named `name`
 * (case-insensitively, RFC 9110 §5.1). */
static int lines_name(const char *lines, size_t len, hr_span_t name) {
  const char *p = lines, *end = lines + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *colon = memchr(p, ':', (size_t)((eol ? eol : end) - p));
    if (colon != NULL && hr_span_eq_nocase((hr_span_t){p, (size_t)(colon - p)}, name))
      return 1;
    if (eol == NULL) break;
    p = eol + 1;
  }
  return 0;
}

hr_span_t hr__request_id_echo(hr__exchange_t *ex, hr_span_t own) {
  const hr_server_t *s = ex->w->server;
  hr_span_t none = {NULL, 0};
  if (s->rid_name_len == 0 || !s->opts.request_id_echo) return none;
  if (own.len && lines_name(own.ptr, own.len, (hr_span_t){s->rid_name, s->rid_name_len}))
    return none; /* the response names its own */
  return hr__request_id(ex);
}

size_t hr__request_id_line(hr__exchange_t *ex, hr_span_t own, char *line) {
  const hr_server_t *s = ex->w->server;
  hr_span_t id = hr__request_id_echo(ex, own);
  size_t n = s->rid_name_len;
  if (id.len == 0) return 0;
  memcpy(line, s->rid_name, n);
  line[n++] = ':';
  line[n++] = ' ';
  memcpy(line + n, id.ptr, id.len);
  n += id.len;
  line[n++] = '\r';
  line[n++] = '\n';
  return n;
}
