/* SPDX-License-Identifier: MIT */
/*
 * CORS (include/hroute/cors.h): the server's side of the Fetch standard's
 * CORS protocol as a before-middleware, on the public API only.  A policy
 * is made once and only read afterwards, from any loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hroute/cors.h"

struct hr_cors_s {
  hr_router_t *router;
  char **origins; /* exact origins, as given */
  size_t norigins;
  int any;        /* "*" */
  char **suffixes;
  size_t nsuffixes;
  hr_cors_origin_cb origin_cb;
  void *origin_udata;
  char *methods, *allow_headers, *expose_headers; /* NULL: see cors.h */
  int credentials;
  char max_age[24]; /* "" when not sent */
};

/* ---- lists ----------------------------------------------------------------- */

static int visible(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
  return 1;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

/* The next element of a comma-separated list at *p (RFC 9110 §5.6.1:
 * empty elements and whitespace around them skipped).  Returns 0 at the
 * end. */
static int next_elem(hr_span_t *list, hr_span_t *elem) {
  const char *p = list->ptr, *end = list->ptr + list->len;
  for (;;) {
    const char *s, *e;
    while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) p++;
    if (p == end) {
      list->ptr = p;
      list->len = 0;
      return 0;
    }
    s = p;
    while (p < end && *p != ',') p++;
    e = p;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
    list->ptr = p;
    list->len = (size_t)(end - p);
    elem->ptr = s;
    elem->len = (size_t)(e - s);
    return 1;
  }
}

/* Whether `item` is an element of the comma-separated `list`. */
static int in_list(hr_span_t list, hr_span_t item, int nocase) {
  hr_span_t e;
  while (next_elem(&list, &e))
    if (nocase ? hr_span_eq_nocase(e, item) : hr_span_eq(e, item)) return 1;
  return 0;
}

/* ---- the policy -------------------------------------------------------------- */

void hr_cors_options_init(hr_cors_options_t *o) {
  if (o == NULL) return;
  memset(o, 0, sizeof(*o));
  o->max_age = -1;
}

static char **dup_all(const char *const *v, size_t n, int *bad) {
  char **d;
  size_t i;
  if (n == 0) return NULL;
  if (v == NULL) {
    *bad = 1;
    return NULL;
  }
  if ((d = calloc(n, sizeof(*d))) == NULL) return NULL;
  for (i = 0; i < n; i++) {
    if (v[i] == NULL || v[i][0] == '\0' || !visible(v[i])) *bad = 1;
    else if ((d[i] = dup_str(v[i])) == NULL) break;
  }
  return d;
}

static void free_all(char **v, size_t n) {
  size_t i;
  if (v == NULL) return;
  for (i = 0; i < n; i++) free(v[i]);
  free(v);
}

void hr_cors_free(hr_cors_t *c) {
  if (c == NULL) return;
  free_all(c->origins, c->norigins);
  free_all(c->suffixes, c->nsuffixes);
  free(c->methods);
  free(c->allow_headers);
  free(c->expose_headers);
  free(c);
}

/* Copies an optional list; sets *bad for a control byte. */
static int opt_list(const char *s, char **out, int *bad) {
  *out = NULL;
  if (s == NULL) return 0;
  if (!visible(s)) {
    *bad = 1;
    return 0;
  }
  return (*out = dup_str(s)) == NULL ? HR_ENOMEM : 0;
}

int hr_cors_new(hr_cors_t **out, hr_router_t *router, const hr_cors_options_t *o) {
  hr_cors_t *c;
  int bad = 0, rc = 0;
  size_t i;
  if (out == NULL || router == NULL || o == NULL) return HR_EINVAL;
  *out = NULL;
  if (o->max_age < -1) return HR_EINVAL;
  if ((c = calloc(1, sizeof(*c))) == NULL) return HR_ENOMEM;
  c->router = router;
  c->origin_cb = o->origin_cb;
  c->origin_udata = o->origin_udata;
  c->credentials = o->credentials != 0;
  if (o->max_age >= 0) snprintf(c->max_age, sizeof c->max_age, "%ld", o->max_age);
  c->norigins = o->norigins;
  c->nsuffixes = o->nsuffixes;
  c->origins = dup_all(o->origins, o->norigins, &bad);
  c->suffixes = dup_all(o->https_suffixes, o->nsuffixes, &bad);
  if ((o->norigins && c->origins == NULL && !bad) || (o->nsuffixes && c->suffixes == NULL && !bad))
    rc = HR_ENOMEM;
  for (i = 0; !bad && rc == 0 && i < c->norigins; i++) {
    if (c->origins[i] == NULL) rc = HR_ENOMEM;
    else if (strcmp(c->origins[i], "*") == 0) c->any = 1;
  }
  for (i = 0; !bad && rc == 0 && i < c->nsuffixes; i++) {
    if (c->suffixes[i] == NULL) rc = HR_ENOMEM;
    else if (c->suffixes[i][0] != '.' || c->suffixes[i][1] == '\0') bad = 1;
  }
  /* "*" stands alone, and never with credentials (Fetch: the CORS check
   * fails on "*" for a request with credentials). */
  if (c->any && (c->norigins > 1 || c->credentials)) bad = 1;
  if (rc == 0) rc = opt_list(o->methods, &c->methods, &bad);
  if (rc == 0) rc = opt_list(o->allow_headers, &c->allow_headers, &bad);
  if (rc == 0) rc = opt_list(o->expose_headers, &c->expose_headers, &bad);
  if (rc == 0 && bad) rc = HR_EINVAL;
  if (rc != 0) {
    hr_cors_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* ---- the middleware ------------------------------------------------------------ */

/* Whether an https origin's host ends with one of the suffixes. */
static int suffix_ok(const hr_cors_t *c, hr_span_t origin) {
  static const char scheme[] = "https://";
  hr_span_t host;
  size_t i;
  if (origin.len <= sizeof scheme - 1 ||
      !hr_span_eq_nocase((hr_span_t){origin.ptr, sizeof scheme - 1}, hr_span_cstr(scheme)))
    return 0;
  host.ptr = origin.ptr + sizeof scheme - 1;
  host.len = origin.len - (sizeof scheme - 1);
  /* A serialized origin's host is a name here (letters, digits, '-',
   * '.'), then at most ":" and a port: anything else (a path, a query,
   * userinfo, a space) is not an origin, and is not matched. */
  for (i = 0; i < host.len && host.ptr[i] != ':'; i++) {
    char ch = host.ptr[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '-' || ch == '.'))
      return 0;
  }
  if (i < host.len) {
    size_t k;
    if (i + 1 == host.len) return 0;
    for (k = i + 1; k < host.len; k++)
      if (host.ptr[k] < '0' || host.ptr[k] > '9') return 0;
  }
  host.len = i;
  for (i = 0; i < c->nsuffixes; i++) {
    hr_span_t s = hr_span_cstr(c->suffixes[i]);
    if (host.len > s.len &&
        hr_span_eq_nocase((hr_span_t){host.ptr + host.len - s.len, s.len}, s))
      return 1;
  }
  return 0;
}

static int origin_ok(const hr_cors_t *c, hr_span_t origin) {
  size_t i;
  if (c->any) return 1;
  for (i = 0; i < c->norigins; i++)
    if (hr_span_eq_nocase(origin, hr_span_cstr(c->origins[i]))) return 1;
  if (suffix_ok(c, origin)) return 1;
  return c->origin_cb != NULL && c->origin_cb(origin, c->origin_udata);
}

static int safelisted_method(hr_span_t m) {
  return hr_span_eq(m, HR_SPAN_LIT("GET")) || hr_span_eq(m, HR_SPAN_LIT("HEAD")) ||
         hr_span_eq(m, HR_SPAN_LIT("POST"));
}

/* Whether the router answers `method` at the request's path (the policy
 * names no methods and the router did not answer the OPTIONS itself). */
static int route_answers(const hr_cors_t *c, hr_request_t *req, hr_span_t method) {
  char buf[2048];
  hr_span_t host = {NULL, 0};
  hr_match_t m;
  (void)hr_request_field(req, HR_SPAN_LIT("Host"), NULL, &host);
  if (hr_router_match(c->router, method, host, hr_request_target(req), buf, sizeof buf, &m) != 0)
    return 0;
  return m.status == 200 && m.route != NULL;
}

/* The Access-Control-Allow-Methods value for a preflight asking for
 * `method`, or an empty span when the method is not allowed. */
static hr_span_t methods_for(const hr_cors_t *c, hr_request_t *req, hr_span_t method) {
  hr_span_t none = {NULL, 0}, allow;
  if (c->methods != NULL) {
    hr_span_t list = hr_span_cstr(c->methods);
    return in_list(list, method, 0) || safelisted_method(method) ? list : none;
  }
  /* The router answers this OPTIONS itself: its Allow set is the path's. */
  allow = hr_request_allow(req);
  if (allow.len) return in_list(allow, method, 0) || safelisted_method(method) ? allow : none;
  return route_answers(c, req, method) ? method : none;
}

/* Whether every field the preflight asks for is allowed. */
static int headers_ok(const hr_cors_t *c, hr_span_t asked) {
  hr_span_t e;
  if (c->allow_headers == NULL) return 1;
  while (next_elem(&asked, &e))
    if (!in_list(hr_span_cstr(c->allow_headers), e, 1)) return 0;
  return 1;
}

static int add(hr_response_t *res, const char *name, hr_span_t value, int *rc) {
  if (*rc == 0) *rc = hr_response_add_field(res, hr_span_cstr(name), value);
  return *rc;
}

/* The fields every allowed origin gets. */
static void allow_origin(const hr_cors_t *c, hr_response_t *res, hr_span_t origin, int *rc) {
  add(res, "Access-Control-Allow-Origin", c->any ? HR_SPAN_LIT("*") : origin, rc);
  if (c->credentials) add(res, "Access-Control-Allow-Credentials", HR_SPAN_LIT("true"), rc);
}

/* A preflight: answered when everything it asks for is allowed. */
static int preflight(const hr_cors_t *c, hr_request_t *req, hr_response_t *res,
                     hr_span_t origin, int allowed, hr_span_t method, int *rc) {
  hr_span_t asked = {NULL, 0}, methods = {NULL, 0};
  add(res, "Vary",
      c->any ? HR_SPAN_LIT("Access-Control-Request-Method, Access-Control-Request-Headers")
             : HR_SPAN_LIT("Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
      rc);
  (void)hr_request_field(req, HR_SPAN_LIT("Access-Control-Request-Headers"), NULL, &asked);
  if (!allowed || method.len == 0 || (methods = methods_for(c, req, method)).len == 0 ||
      !headers_ok(c, asked))
    return 0; /* goes on: no Access-Control-Allow-Origin, the browser refuses */
  allow_origin(c, res, origin, rc);
  add(res, "Access-Control-Allow-Methods", methods, rc);
  if (asked.len)
    add(res, "Access-Control-Allow-Headers",
        c->allow_headers != NULL ? hr_span_cstr(c->allow_headers) : asked, rc);
  if (c->max_age[0]) add(res, "Access-Control-Max-Age", hr_span_cstr(c->max_age), rc);
  return 1;
}

hr_next_t hr_cors_before(hr_request_t *req, hr_response_t *res, void *udata) {
  const hr_cors_t *c = udata;
  hr_span_t origin = {NULL, 0}, method = {NULL, 0};
  int has_origin, is_preflight, allowed, rc = 0;
  if (c == NULL) return HR_NEXT;
  has_origin = hr_request_field(req, HR_SPAN_LIT("Origin"), NULL, &origin) == 0;
  allowed = has_origin && origin.len > 0 && origin_ok(c, origin);
  is_preflight = has_origin && hr_span_eq(hr_request_method(req), HR_SPAN_LIT("OPTIONS")) &&
                 hr_request_field(req, HR_SPAN_LIT("Access-Control-Request-Method"), NULL,
                                  &method) == 0;
  if (is_preflight) {
    if (preflight(c, req, res, origin, allowed, method, &rc) && rc == 0) {
      /* Whatever it returns, the response is complete (http.h). */
      (void)hr_response_send(res, 204, NULL, 0);
      return HR_ANSWERED;
    }
  } else {
    if (!c->any) add(res, "Vary", HR_SPAN_LIT("Origin"), &rc);
    if (allowed) {
      allow_origin(c, res, origin, &rc);
      if (c->expose_headers != NULL)
        add(res, "Access-Control-Expose-Headers", hr_span_cstr(c->expose_headers), &rc);
    }
  }
  if (rc != 0) {
    /* Out of memory for a field: the error answer, or, when even its
     * Content-Type does not fit, a bare 503 (which completes the
     * response in any case). */
    if (hr_response_error(res, 503, NULL) != 0) (void)hr_response_send(res, 503, NULL, 0);
    return HR_ANSWERED;
  }
  return HR_NEXT;
}
