/* SPDX-License-Identifier: MIT */
/*
 * Typed values in requests and responses: a delegate writes a field value
 * straight into the response's field buffer, request fields are read as
 * typed values (list-valued types combine repeated lines, RFC 9110 §5.3),
 * and conditional GET/HEAD answers 304 (RFC 9110 §13).
 */
#include <string.h>

#include "util/text.h"
#include "delegate/builtin.h"
#include "server/exchange/exchange_api.h"



int hr_response_add_typed(hr_response_t *res, hr_span_t name, hr_type_id_t type,
                          const void *value) {
  hr_lookup_t l;
  size_t i, len = 0, head = name.len + 2;
  char *p = NULL;
  int rc, tries;
  if ((rc = hr__res_fields_open(res)) != 0) return rc;
  if (name.len == 0) return HR_EINVAL;
  for (i = 0; i < name.len; i++)
    if (!hr__is_tchar((unsigned char)name.ptr[i])) return HR_EINVAL;
  if (hr__reserved_field(name)) return HR_EINVAL;
  rc = hr__registry_lookup(hr__res_registry(res), type, &l);
  if (rc == HR_EINVAL) return rc;
  if (rc == 0 && l.delegate->format == NULL) return HR_ENODELEGATE;
  if (rc == HR_ENODELEGATE && l.to_text == NULL) return HR_ENODELEGATE;
  /* Format straight into the buffer: a guess first, then the exact size. */
  len = 64;
  for (tries = 0; tries < 2; tries++) {
    size_t cap;
    p = hr__res_field_room(res, head + len + 2, &cap);
    if (p == NULL) return HR_ENOMEM;
    memcpy(p, name.ptr, name.len);
    p[name.len] = ':';
    p[name.len + 1] = ' ';
    cap -= head + 2;
    rc = l.delegate != NULL
             ? l.delegate->format(value, p + head, cap, &len, l.delegate->udata)
             : l.to_text(value, p + head, cap, &len);
    if (rc != HR_ENOSPC) break;
  }
  if (rc != 0) return rc == HR_ENOSPC ? HR_EINVAL : rc;
  for (i = 0; i < len; i++) {
    char ch = p[head + i];
    if (ch == '\r' || ch == '\n' || ch == '\0') return HR_EINVAL; /* bad delegate */
  }
  p[head + len] = '\r';
  p[head + len + 1] = '\n';
  hr__res_field_commit(res, head + len + 2);
  return 0;
}

/* Types whose field lines may be combined into one comma list (RFC 9110
 * §5.3); Cookie lines are joined with "; " (RFC 6265 §5.4). */
static const char *list_separator(hr_type_id_t type) {
  switch (type) {
    case HR_TYPE_MEDIA_RANGES:
    case HR_TYPE_ETAG_LIST:
    case HR_TYPE_CACHE_CONTROL:
    case HR_TYPE_LINK:
    case HR_TYPE_FORWARDED:
      return ", ";
    case HR_TYPE_COOKIES:
      return "; ";
    default:
      return NULL;
  }
}

static void *request_alloc(void *ctx, size_t size) {
  return hr_request_alloc(ctx, size);
}

hr_mem_t hr_request_mem(hr_request_t *req) {
  hr_mem_t m;
  m.alloc = request_alloc;
  m.ctx = req;
  return m;
}

int hr_request_typed(const hr_request_t *req, hr_span_t name, hr_type_id_t type,
                     void *value) {
  hr_mem_t mem = hr_request_mem((hr_request_t *)req);
  hr_lookup_t l;
  size_t cursor = 0, lines = 0, total = 0, i;
  hr_span_t v, first = {NULL, 0};
  const char *sep;
  char *joined, *w;
  int rc = hr__registry_lookup(hr__req_registry(req), type, &l);
  if (rc != 0) return rc;
  if (l.delegate->parse == NULL) return HR_ENODELEGATE;
  while (hr_request_field(req, name, &cursor, &v) == 0) {
    if (lines++ == 0) first = v;
    total += v.len + 2;
  }
  if (lines == 0) return HR_ENOTFOUND;
  if (lines == 1) return l.delegate->parse(first, value, &mem, l.delegate->udata);
  sep = list_separator(type);
  if (sep == NULL) return HR_EPARSE; /* one value, several lines */
  /* Joined in the request's arena: lives as long as the request. */
  joined = hr_request_alloc((hr_request_t *)req, total);
  if (joined == NULL) return HR_ENOMEM;
  w = joined;
  cursor = 0;
  for (i = 0; hr_request_field(req, name, &cursor, &v) == 0; i++) {
    if (i) {
      memcpy(w, sep, 2);
      w += 2;
    }
    memcpy(w, v.ptr, v.len);
    w += v.len;
  }
  v.ptr = joined;
  v.len = (size_t)(w - joined);
  return l.delegate->parse(v, value, &mem, l.delegate->udata);
}


/* Steps 1 and 2 of RFC 9110 §13.2.2: whether If-Match (strong comparison,
 * §13.1.1) or, without it, If-Unmodified-Since (§13.1.4) fails.  Returns
 * 1 (412), 0, or a negative error; malformed fields are ignored. */
static int precondition_fails(hr_request_t *req, const hr_etag_t *etag, int64_t last_modified) {
  hr_etag_list_t im;
  hr_date_t ius;
  size_t i;
  int rc = hr_request_typed(req, HR_SPAN_LIT("If-Match"), HR_TYPE_ETAG_LIST, &im);
  if (rc == 0) {
    int match = im.any; /* "*": the resource exists (the handler says so) */
    for (i = 0; !match && etag != NULL && i < im.n; i++)
      match = hr__etag_match(&im.tags[i], etag, 0);
    return !match;
  }
  /* An If-Match that cannot be read fails closed: ignoring it would let a
   * write through that the client made conditional (a lost update). */
  if (rc == HR_EPARSE) return 1;
  if (rc != HR_ENOTFOUND) return rc;
  if (last_modified >= 0 &&
      hr_request_typed(req, HR_SPAN_LIT("If-Unmodified-Since"), HR_TYPE_DATE, &ius) == 0)
    return last_modified > ius.seconds;
  return 0;
}

int hr_response_not_modified(hr_request_t *req, hr_response_t *res,
                             const hr_etag_t *etag, int64_t last_modified) {
  hr_etag_list_t inm;
  hr_date_t ims;
  hr_span_t method = hr_request_method(req);
  int get_or_head = hr_span_eq(method, HR_SPAN_LIT("GET")) ||
                    hr_span_eq(method, HR_SPAN_LIT("HEAD"));
  int status = 0, rc;
  size_t i;
  rc = precondition_fails(req, etag, last_modified);
  if (rc < 0) return rc;
  if (rc == 1) {
    rc = hr_response_send(res, 412, NULL, 0);
    return rc == 0 ? 1 : rc;
  }
  rc = hr_request_typed(req, HR_SPAN_LIT("If-None-Match"), HR_TYPE_ETAG_LIST, &inm);
  if (rc == 0) {
    /* §13.1.2: If-None-Match takes precedence over If-Modified-Since; "*"
     * matches any current representation (the handler calls this for a
     * resource that exists). */
    int match = inm.any;
    for (i = 0; !match && etag != NULL && i < inm.n; i++)
      match = hr__etag_match(&inm.tags[i], etag, 1); /* weak (§13.1.2) */
    if (match) status = get_or_head ? 304 : 412;
  } else if (rc != HR_ENOTFOUND && rc != HR_EPARSE) {
    return rc;
  } else if (rc == HR_ENOTFOUND && get_or_head && last_modified >= 0 &&
             hr_request_typed(req, HR_SPAN_LIT("If-Modified-Since"), HR_TYPE_DATE,
                              &ims) == 0 &&
             last_modified <= ims.seconds) {
    status = 304; /* §13.1.3: not modified since */
  }
  if (status == 0) return 0;
  if (status == 304) {
    hr_date_t lm;
    lm.seconds = last_modified;
    /* §15.4.5: a 304 carries the validators the 200 would have. */
    if (etag != NULL &&
        (rc = hr_response_add_typed(res, HR_SPAN_LIT("ETag"), HR_TYPE_ETAG, etag)) != 0)
      return rc;
    if (last_modified >= 0 &&
        (rc = hr_response_add_typed(res, HR_SPAN_LIT("Last-Modified"), HR_TYPE_DATE,
                                    &lm)) != 0)
      return rc;
  }
  rc = hr_response_send(res, status, NULL, 0);
  return rc == 0 ? 1 : rc;
}
