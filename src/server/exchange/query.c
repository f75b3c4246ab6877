/* SPDX-License-Identifier: MIT */
/*
 * A request's query and urlencoded form body as decoded pairs (http.h):
 * parsed on first use into the request arena, with keys and values that
 * need no decoding left pointing into the target or the body.
 */
#include <string.h>

#include "hroute/form.h"
#include "server/exchange/exchange.h"

/* Parsed pairs, or the error that every later call answers. */
typedef struct hr__form_s {
  int err;
  size_t n;
  hr_form_pair_t pairs[];
} hr__form_t;

/* A decoded copy in the arena, or the span itself when there is nothing
 * to decode.  Returns 0, HR_EPARSE or HR_ENOMEM. */
static int decoded(hr__arena_t *a, hr_span_t raw, hr_span_t *out) {
  char *d;
  if (raw.len == 0 ||
      (memchr(raw.ptr, '%', raw.len) == NULL && memchr(raw.ptr, '+', raw.len) == NULL)) {
    *out = raw;
    return 0;
  }
  d = hr__arena_alloc(a, raw.len);
  if (d == NULL) return HR_ENOMEM;
  out->ptr = d;
  return hr_form_decode(raw, d, &out->len);
}

static hr__form_t *parse(hr__exchange_t *ex, hr_span_t in) {
  static hr__form_t no_memory = {HR_ENOMEM, 0};
  size_t max = ex->w->server->opts.max_form_pairs, n = 0;
  hr_span_t rest = in;
  hr_form_pair_t raw;
  hr__form_t *f;
  while (hr_form_next(&rest, &raw) && n <= max) n++;
  f = hr__arena_alloc(&ex->arena, sizeof(*f) + (n > max ? 0 : n) * sizeof(f->pairs[0]));
  if (f == NULL) return &no_memory;
  f->err = 0;
  f->n = 0;
  if (n > max) {
    f->err = HR_ETOOLARGE;
    return f;
  }
  for (rest = in; f->err == 0 && hr_form_next(&rest, &raw); f->n++) {
    f->err = decoded(&ex->arena, raw.key, &f->pairs[f->n].key);
    if (f->err == 0) f->err = decoded(&ex->arena, raw.value, &f->pairs[f->n].value);
  }
  if (f->err != 0) f->n = 0;
  return f;
}

/* Whether the body is urlencoded: the media type of Content-Type,
 * case-insensitively, parameters aside (RFC 9110 §8.3.1). */
static int urlencoded(const hr_request_t *req) {
  static const char want[] = "application/x-www-form-urlencoded";
  hr_span_t ct;
  size_t n;
  if (hr_request_field(req, HR_SPAN_LIT("Content-Type"), NULL, &ct) != 0) return 0;
  for (n = 0; n < ct.len && ct.ptr[n] != ';' && ct.ptr[n] != ' ' && ct.ptr[n] != '\t'; n++)
    ;
  return hr_span_eq_nocase((hr_span_t){ct.ptr, n}, HR_SPAN_LIT(want));
}

static const hr__form_t *query_form(hr_request_t *req) {
  if (req->query_form == NULL) req->query_form = parse(HR__EX_OF_REQ(req), req->query);
  return req->query_form;
}

/* NULL when the request has no buffered urlencoded body. */
static const hr__form_t *body_form(hr_request_t *req) {
  if (req->body_form == NULL) {
    if (req->route == NULL || req->route->body_mode == HR_BODY_STREAM || !urlencoded(req))
      return NULL;
    req->body_form = parse(HR__EX_OF_REQ(req), hr_request_body(req));
  }
  return req->body_form;
}

static int pair_at(const hr__form_t *f, size_t index, hr_span_t *key, hr_span_t *value) {
  if (f->err != 0) return f->err;
  if (index >= f->n) return HR_ENOTFOUND;
  if (key != NULL) *key = f->pairs[index].key;
  if (value != NULL) *value = f->pairs[index].value;
  return 0;
}

static int get(const hr__form_t *f, hr_span_t key, size_t *cursor, hr_span_t *value) {
  size_t i = cursor != NULL ? *cursor : 0;
  if (f->err != 0) return f->err;
  for (; i < f->n; i++)
    if (hr_span_eq(f->pairs[i].key, key)) {
      if (value != NULL) *value = f->pairs[i].value;
      if (cursor != NULL) *cursor = i + 1;
      return 0;
    }
  if (cursor != NULL) *cursor = f->n;
  return HR_ENOTFOUND;
}

static int count(const hr__form_t *f, size_t *n) {
  if (n != NULL) *n = f->err == 0 ? f->n : 0;
  return f->err;
}

int hr_request_query_count(hr_request_t *req, size_t *n) {
  if (req == NULL) return HR_EINVAL;
  return count(query_form(req), n);
}

int hr_request_query_pair(hr_request_t *req, size_t index, hr_span_t *key, hr_span_t *value) {
  if (req == NULL) return HR_EINVAL;
  return pair_at(query_form(req), index, key, value);
}

int hr_request_query_get(hr_request_t *req, hr_span_t key, size_t *cursor, hr_span_t *value) {
  if (req == NULL) return HR_EINVAL;
  return get(query_form(req), key, cursor, value);
}

int hr_request_form_count(hr_request_t *req, size_t *n) {
  const hr__form_t *f = req != NULL ? body_form(req) : NULL;
  if (f == NULL) return HR_EINVAL;
  return count(f, n);
}

int hr_request_form_pair(hr_request_t *req, size_t index, hr_span_t *key, hr_span_t *value) {
  const hr__form_t *f = req != NULL ? body_form(req) : NULL;
  if (f == NULL) return HR_EINVAL;
  return pair_at(f, index, key, value);
}

int hr_request_form_get(hr_request_t *req, hr_span_t key, size_t *cursor, hr_span_t *value) {
  const hr__form_t *f = req != NULL ? body_form(req) : NULL;
  if (f == NULL) return HR_EINVAL;
  return get(f, key, cursor, value);
}
