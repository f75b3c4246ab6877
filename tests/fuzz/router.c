/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the router: registration of arbitrary patterns and
 * hr_router_match() on arbitrary method, Host and target bytes.  Input:
 *
 *   byte 0        options: bit 0 HR_SLASH_REDIRECT, bit 1 HR_CLEAN_REJECT,
 *                 bit 2 case-insensitive, bit 3 fail the allocator from the
 *                 Nth call on, N = byte 1 (out-of-memory paths)
 *   byte 1        N (always consumed)
 *   routes part   lines up to the first empty line: "METHODS pattern", or
 *                 "@host" to send the following routes to that host's table
 *                 ("@" alone: back to the default table)
 *   requests part the remaining lines: "METHOD target [host]" (a line
 *                 without a space is a GET of the whole line)
 *
 * Registration may fail (fine).  Every match gets a heap buffer of exactly
 * 2 * target.len + 16 bytes (the documented sufficient size), and the
 * target is copied to an exact-size heap block, so ASan reports any write or
 * read outside them.  Checked: the call returns 0 (never HR_ENOSPC), the
 * status is one the router documents, every parameter value, the query and
 * the Location lie inside the target or the buffer (the path too, or it is
 * a static "/"), a 200
 * names a route or carries Allow, a redirect has a Location starting with
 * '/', and following a redirect never redirects to the same Location again.
 * A redirect never leads to a 400.  A reference matcher (below) checks
 * priorities and backtracking: a 404 only when no accepted pattern of the
 * selected host table matches the path, and a 200 with the route whose
 * segment kinds come first.  And for a 200, the pattern with the parameter
 * values put back must be the path decoded exactly once.
 * The router is freed after each input (LeakSanitizer checks the rest).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct failing_s {
  unsigned long calls;
  unsigned long fail_from; /* 0: never */
} failing_t;

static int should_fail(failing_t *f) {
  return f->fail_from != 0 && ++f->calls >= f->fail_from;
}

static void *f_malloc(void *ctx, size_t n) {
  return should_fail(ctx) ? NULL : malloc(n);
}

static void *f_realloc(void *ctx, void *p, size_t n) {
  return should_fail(ctx) ? NULL : realloc(p, n);
}

static void f_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

static void noop(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

static void dump_sink(void *ctx, const char *p, size_t n) {
  (void)p;
  *(size_t *)ctx += n;
}

/* A NUL-terminated heap copy of s[0..n) (embedded NULs cut it short). */
static char *cstr(const char *s, size_t n) {
  char *c = malloc(n + 1);
  if (c == NULL) abort();
  memcpy(c, s, n);
  c[n] = '\0';
  return c;
}

/* ---- reference matcher ----------------------------------------------------
 * The accepted routes' patterns per host, and a naive segment-by-segment
 * matcher: a pattern matches a path when every literal segment is equal
 * (ASCII case-insensitively with the option), every ":name" segment is
 * non-empty and a trailing "*name" has a non-empty rest.  Among the
 * patterns that match, the router must pick the one whose sequence of
 * segment kinds (literal < parameter < catch-all) is smallest: that is what
 * "per segment, a literal beats a parameter, which beats a catch-all, with
 * backtracking" means. */

typedef struct ref_s {
  char *host; /* lower-cased; "" for the default table */
  char *pattern;
} ref_t;

typedef struct refs_s {
  ref_t *v;
  size_t n, cap;
  int ci;
} refs_t;

static void refs_add(refs_t *rs, const char *host, const char *pattern) {
  size_t i, hl = strlen(host);
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? 2 * rs->cap : 16;
    rs->v = realloc(rs->v, rs->cap * sizeof(*rs->v));
    if (rs->v == NULL) abort();
  }
  rs->v[rs->n].host = malloc(hl + 1);
  rs->v[rs->n].pattern = strdup(pattern);
  if (rs->v[rs->n].host == NULL || rs->v[rs->n].pattern == NULL) abort();
  for (i = 0; i <= hl; i++) {
    char c = host[i];
    rs->v[rs->n].host[i] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
  }
  rs->n++;
}

static void refs_free(refs_t *rs) {
  size_t i;
  for (i = 0; i < rs->n; i++) {
    free(rs->v[i].host);
    free(rs->v[i].pattern);
  }
  free(rs->v);
}

/* The table a request selects (router.h: an absolute-form target's
 * authority, without userinfo, else the Host value; port ignored, ASCII
 * case-insensitive; unknown hosts and hosts without routes use the default
 * table). */
static const char *ref_host(const refs_t *rs, hr_span_t host, hr_span_t target) {
  size_t n, i;
  if (target.len > 1 && target.ptr[0] != '/') {
    const char *s = target.ptr, *end = s + target.len, *t, *a;
    for (t = s; t < end && *t != ':' && *t != '/' && *t != '?'; t++)
      ;
    if (t > s && end - t >= 3 && t[0] == ':' && t[1] == '/' && t[2] == '/') {
      hr_span_t auth;
      s = t + 3;
      for (t = s; t < end && *t != '/' && *t != '?' && *t != '#'; t++)
        ;
      auth.ptr = s;
      auth.len = (size_t)(t - s);
      a = memchr(auth.ptr, '@', auth.len);
      if (a != NULL) {
        auth.len -= (size_t)(a + 1 - auth.ptr);
        auth.ptr = a + 1;
      }
      if (auth.len) host = auth;
    }
  }
  n = host.len;
  if (host.len == 0) return "";
  if (host.ptr[0] == '[') {
    const char *e = memchr(host.ptr, ']', host.len);
    if (e != NULL) n = (size_t)(e - host.ptr) + 1;
  } else {
    const char *c = memchr(host.ptr, ':', host.len);
    if (c != NULL) n = (size_t)(c - host.ptr);
  }
  for (i = 0; i < rs->n; i++) {
    hr_span_t a = {host.ptr, n};
    if (rs->v[i].host[0] != '\0' && hr_span_eq_nocase(a, hr_span_cstr(rs->v[i].host)))
      return rs->v[i].host;
  }
  return "";
}

static int lit_eq(const char *a, size_t an, const char *b, size_t bn, int ci) {
  size_t i = 0, j = 0;
  /* a: pattern literal with "::" for ':'; b: path segment */
  while (i < an && j < bn) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[j];
    if (x == ':' && i + 1 < an && a[i + 1] == ':') i++;
    if (ci) {
      if (x >= 'A' && x <= 'Z') x |= 0x20;
      if (y >= 'A' && y <= 'Z') y |= 0x20;
    }
    if (x != y) return 0;
    i++;
    j++;
  }
  return i == an && j == bn;
}

/* Matches `pattern` against `path` (starts with '/'); fills the kinds
 * (0 literal, 1 parameter, 2 catch-all).  Returns 1 on a match. */
static int ref_match(const char *pattern, hr_span_t path, int ci,
                     unsigned char *kinds, size_t *nk) {
  const char *ps = pattern + 1, *pe = pattern + strlen(pattern);
  const char *s = path.ptr + 1, *se = path.ptr + path.len;
  size_t k = 0;
  if (path.len == 0 || path.ptr[0] != '/') return 0;
  for (;;) {
    const char *pseg_end = memchr(ps, '/', (size_t)(pe - ps));
    const char *sseg_end;
    size_t pl;
    if (pseg_end == NULL) pseg_end = pe;
    pl = (size_t)(pseg_end - ps);
    if (s > se) return 0; /* the path has no segment left */
    sseg_end = memchr(s, '/', (size_t)(se - s));
    if (sseg_end == NULL) sseg_end = se;
    if (pl > 0 && ps[0] == '*') {
      if (se - s <= 0) return 0;
      kinds[k++] = 2;
      *nk = k;
      return 1;
    }
    if (pl > 0 && ps[0] == ':' && !(pl >= 2 && ps[1] == ':')) {
      if (sseg_end == s) return 0;
      kinds[k++] = 1;
    } else {
      if (!lit_eq(ps, pl, s, (size_t)(sseg_end - s), ci)) return 0;
      kinds[k++] = 0;
    }
    if (pseg_end == pe) {
      *nk = k;
      return sseg_end == se;
    }
    ps = pseg_end + 1;
    s = sseg_end + 1;
  }
}

static int kinds_cmp(const unsigned char *a, size_t an, const unsigned char *b,
                     size_t bn) {
  size_t i;
  for (i = 0; i < an && i < bn; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return (an > bn) - (an < bn);
}

/* Checks a 200/404/405 answer for `path` (as matched) against the
 * reference. */
static void ref_check(const refs_t *rs, hr_span_t host, hr_span_t target,
                      hr_span_t path, const hr_match_t *m) {
  const char *h = ref_host(rs, host, target);
  unsigned char best[HR_MAX_SEGMENTS + 2], kinds[HR_MAX_SEGMENTS + 2];
  size_t nbest = 0, nk, i;
  int found = 0;
  for (i = 0; i < rs->n; i++) {
    if (strcmp(rs->v[i].host, h) != 0) continue;
    if (!ref_match(rs->v[i].pattern, path, rs->ci, kinds, &nk)) continue;
    if (!found || kinds_cmp(kinds, nk, best, nbest) < 0) {
      memcpy(best, kinds, nk);
      nbest = nk;
    }
    found = 1;
  }
  if (m->status == 404) {
    if (found) abort(); /* a registered pattern matches: not 404 */
    return;
  }
  if (!found) abort(); /* 200 or 405 for a path no pattern matches */
  if (m->route != NULL) {
    hr_span_t pat = hr_route_pattern(m->route);
    char *pc = cstr(pat.ptr, pat.len);
    size_t nparams = 0;
    if (!ref_match(pc, path, rs->ci, kinds, &nk)) abort(); /* wrong route */
    if (kinds_cmp(kinds, nk, best, nbest) != 0) abort(); /* wrong priority */
    for (i = 0; i < nk; i++) nparams += kinds[i] != 0;
    if (nparams != m->nparams) abort();
    free(pc);
  }
}

static int inside(hr_span_t s, const char *base, size_t len) {
  if (s.len == 0) return 1;
  return s.ptr >= base && s.ptr <= base + len && s.len <= (size_t)(base + len - s.ptr);
}

static int inside_either(hr_span_t s, const char *t, size_t tlen,
                         const char *buf, size_t blen) {
  return inside(s, t, tlen) || inside(s, buf, blen);
}

/* FUZZ_ROUTER_LENIENT=1 in the environment skips the two checks that the
 * open bugs trip (a redirect to a malformed escape; a decoded '%' decoded
 * again), so that a run can look for other problems meanwhile. */
static int lenient(void) {
  static int v = -1;
  if (v < 0) v = getenv("FUZZ_ROUTER_LENIENT") != NULL;
  return v;
}

/* The path of a request target as sent (RFC 9112 §3.2): up to '?' or '#';
 * for absolute-form, after the authority ("/" when empty).  Returns 0, or
 * -1 for "*" and anything else. */
static int raw_path(hr_span_t target, hr_span_t *path) {
  const char *s = target.ptr, *end = s + target.len, *t;
  if (target.len == 0 || (target.len == 1 && s[0] == '*')) return -1;
  if (s[0] != '/') {
    for (t = s; t < end && *t != ':' && *t != '/' && *t != '?'; t++)
      ;
    if (t == s || end - t < 3 || t[0] != ':' || t[1] != '/' || t[2] != '/')
      return -1;
    for (s = t + 3; s < end && *s != '/' && *s != '?' && *s != '#'; s++)
      ;
    if (s == end || *s != '/') {
      path->ptr = "/";
      path->len = 1;
      return 0;
    }
  }
  for (t = s; t < end && *t != '?' && *t != '#'; t++)
    ;
  path->ptr = s;
  path->len = (size_t)(t - s);
  return 0;
}

static int hexv(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes every %XX once (RFC 3986 §2.1).  Returns the length, or -1 for a
 * malformed escape or %00.  `out` needs in.len bytes. */
static long decode_once(hr_span_t in, char *out) {
  size_t i, n = 0;
  for (i = 0; i < in.len; i++) {
    if (in.ptr[i] == '%') {
      int h, l;
      if (in.len - i < 3 || (h = hexv((unsigned char)in.ptr[i + 1])) < 0 ||
          (l = hexv((unsigned char)in.ptr[i + 2])) < 0 || h * 16 + l == 0)
        return -1;
      out[n++] = (char)(h * 16 + l);
      i += 2;
    } else {
      out[n++] = in.ptr[i];
    }
  }
  return (long)n;
}

/* The pattern with its parameters replaced by the matched values (and
 * "::" by ':'), into `out` (room for `cap` bytes).  Returns the length or
 * -1. */
static long rebuild(hr_span_t pattern, const hr_match_t *m, char *out, size_t cap) {
  size_t i = 0, n = 0, k = 0;
  while (i < pattern.len) {
    char c = pattern.ptr[i];
    if (c == '/' && i + 1 < pattern.len &&
        (pattern.ptr[i + 1] == '*' ||
         (pattern.ptr[i + 1] == ':' && !(i + 2 < pattern.len && pattern.ptr[i + 2] == ':')))) {
      hr_span_t v;
      if (k >= m->nparams || n + 1 + m->params[k].value.len > cap) return -1;
      v = m->params[k++].value;
      out[n++] = '/';
      memcpy(out + n, v.ptr, v.len);
      n += v.len;
      for (i++; i < pattern.len && pattern.ptr[i] != '/'; i++)
        ;
      continue;
    }
    if (n + 1 > cap) return -1;
    out[n++] = c;
    i += c == ':' && i + 1 < pattern.len && pattern.ptr[i + 1] == ':' ? 2 : 1;
  }
  return k == m->nparams ? (long)n : -1;
}

/* A 200 with a route: the pattern with the values put back is the path
 * decoded exactly once (parameter values are decoded once, %2F to '/'; a
 * decoded '%' is data). */
static void check_values(hr_span_t target, const hr_match_t *m, int ci) {
  hr_span_t raw, pat = hr_route_pattern(m->route);
  char *d, *rb;
  long dn, rn;
  size_t cap, i;
  if (raw_path(target, &raw) != 0) abort(); /* a route for a non-path */
  cap = raw.len + 1;
  for (i = 0; i < m->nparams; i++) cap += m->params[i].value.len + 1;
  cap += pat.len;
  d = malloc(raw.len + 1);
  rb = malloc(cap);
  if (d == NULL || rb == NULL) abort();
  dn = decode_once(raw, d);
  if (dn < 0) abort(); /* 200 for a path that does not decode */
  rn = rebuild(pat, m, rb, cap);
  if (rn != dn) abort();
  if (ci ? !hr_span_eq_nocase((hr_span_t){rb, (size_t)rn}, (hr_span_t){d, (size_t)dn})
         : memcmp(rb, d, (size_t)dn) != 0)
    abort(); /* the values are not the path's */
  free(d);
  free(rb);
}

/* Matches one request; `depth` 0 also follows a redirect once. */
static void match_one(hr_router_t *r, const refs_t *rs, hr_span_t method,
                      hr_span_t host, const char *target_bytes, size_t tlen,
                      int depth) {
  char *t = malloc(tlen ? tlen : 1);
  size_t blen = 2 * tlen + 16;
  char *buf = malloc(blen);
  hr_match_t m;
  hr_span_t target;
  size_t i;
  int rc;
  if (t == NULL || buf == NULL) abort();
  memcpy(t, target_bytes, tlen);
  target.ptr = t;
  target.len = tlen;
  rc = hr_router_match(r, method, host, target, buf, blen, &m);
  if (rc != 0) abort(); /* 2 * len + 16 always suffices */
  switch (m.status) {
    case 200:
      if (m.route == NULL && m.allow.len == 0) abort();
      break;
    case 301:
    case 308:
      if (m.route != NULL || m.location.len == 0 || m.location.ptr[0] != '/')
        abort();
      if (!inside_either(m.location, t, tlen, buf, blen)) abort();
      break;
    case 405:
      if (m.route != NULL || m.allow.len == 0) abort();
      break;
    case 400:
    case 404:
      if (m.route != NULL) abort();
      break;
    default:
      abort();
  }
  if (m.nparams > HR_MAX_PARAMS) abort();
  if (m.route == NULL && m.nparams != 0) abort();
  for (i = 0; i < m.nparams; i++) {
    if (m.params[i].name.len == 0) abort();
    if (!inside_either(m.params[i].value, t, tlen, buf, blen)) abort();
  }
  /* The path may also be a static "/" (absolute-form without a path). */
  if ((!inside_either(m.path, t, tlen, buf, blen) &&
       !(m.path.len == 1 && m.path.ptr[0] == '/')) ||
      !inside_either(m.query, t, tlen, buf, blen))
    abort();
  /* Priorities against the reference (not for "*", whose path is not a
   * path). */
  if ((m.status == 200 || m.status == 404 || m.status == 405) &&
      !(m.path.len == 1 && m.path.ptr[0] == '*'))
    ref_check(rs, host, target, m.path, &m);
  if (m.status == 200 && m.route != NULL && !lenient())
    check_values(target, &m, rs->ci);
  if (depth == 0 && (m.status == 301 || m.status == 308)) {
    /* Following the redirect must not answer with the same redirect. */
    char *loc = cstr(m.location.ptr, m.location.len);
    size_t llen = m.location.len;
    hr_match_t again;
    char *buf2 = malloc(2 * llen + 16);
    if (buf2 == NULL) abort();
    rc = hr_router_match(r, method, host, hr_span_cstr(loc), buf2, 2 * llen + 16,
                         &again);
    if (rc != 0) abort();
    if ((again.status == 301 || again.status == 308) &&
        hr_span_eq(again.location, hr_span_cstr(loc)))
      abort(); /* redirect loop */
    /* Every reason for 400 (malformed escape, %00, ".." above the root) is
     * in the original request already: a redirect never leads to one. */
    if (again.status == 400 && !lenient()) abort();
    free(buf2);
    match_one(r, rs, method, host, loc, llen, 1);
    free(loc);
  }
  free(buf);
  free(t);
}

/* Next line of [*p, end) without its '\n'; returns 0 at the end. */
static int next_line(const char **p, const char *end, const char **s,
                     size_t *n) {
  const char *e;
  if (*p >= end) return 0;
  e = memchr(*p, '\n', (size_t)(end - *p));
  if (e == NULL) e = end;
  *s = *p;
  *n = (size_t)(e - *p);
  *p = e < end ? e + 1 : end;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *p, *end, *line;
  size_t n;
  failing_t fail = {0, 0};
  hr_allocator_t alloc = {f_malloc, f_realloc, f_free, &fail};
  hr_router_options_t opts;
  hr_router_t *r = NULL;
  hr_group_t *group = NULL;
  char *group_host = NULL;
  refs_t refs = {NULL, 0, 0, 0};
  hr_router_stats_t st;
  size_t dumped = 0;
  if (size < 2) return 0;
  hr_router_options_init(&opts);
  if (data[0] & 1) opts.trailing_slash = HR_SLASH_REDIRECT;
  if (data[0] & 2) opts.unclean_path = HR_CLEAN_REJECT;
  if (data[0] & 4) opts.case_insensitive = 1;
  refs.ci = opts.case_insensitive;
  if (data[0] & 8) fail.fail_from = (unsigned long)data[1] + 1;
  opts.allocator = &alloc;
  if (hr_router_new(&r, &opts) != 0) return 0;
  p = (const char *)data + 2;
  end = (const char *)data + size;

  /* Routes, up to the first empty line. */
  while (next_line(&p, end, &line, &n) && n > 0) {
    const char *sp = memchr(line, ' ', n);
    if (line[0] == '@') {
      char *h = cstr(line + 1, n - 1);
      free(group_host);
      group_host = NULL;
      if (n == 1 || hr_router_group(r, h, NULL, &group) != 0) {
        group = NULL;
        free(h);
      } else {
        group_host = h;
      }
    } else {
      char *methods = sp ? cstr(line, (size_t)(sp - line)) : cstr("GET", 3);
      char *pattern = sp ? cstr(sp + 1, n - (size_t)(sp - line) - 1) : cstr(line, n);
      hr_route_options_t ro;
      hr_route_error_t err;
      int rc;
      hr_route_options_init(&ro);
      memset(&err, 0, sizeof(err));
      ro.error = &err;
      rc = group ? hr_group_add(group, methods, pattern, noop, NULL, &ro)
                 : hr_router_add(r, methods, pattern, noop, NULL, &ro);
      if (rc != 0 && (err.code != rc || err.reason == NULL ||
                      (err.conflict_len != 0 && err.conflict[0] == '\0')))
        abort();
      if (rc == 0) refs_add(&refs, group ? group_host : "", pattern);
      free(methods);
      free(pattern);
    }
  }
  hr_router_stats(r, &st);
  if (hr_router_dump(r, dump_sink, &dumped) != 0 && fail.fail_from == 0) abort();
  /* Matching never allocates, so stop failing: every match must work. */
  fail.fail_from = 0;

  /* Requests. */
  while (next_line(&p, end, &line, &n)) {
    const char *sp = memchr(line, ' ', n), *sp2;
    hr_span_t method = HR_SPAN_LIT("GET"), host = {NULL, 0};
    const char *tgt = line;
    size_t tlen = n;
    if (sp != NULL) {
      method.ptr = line;
      method.len = (size_t)(sp - line);
      tgt = sp + 1;
      tlen = n - method.len - 1;
      sp2 = memchr(tgt, ' ', tlen);
      if (sp2 != NULL) {
        host.ptr = sp2 + 1;
        host.len = tlen - (size_t)(sp2 - tgt) - 1;
        tlen = (size_t)(sp2 - tgt);
      }
    }
    match_one(r, &refs, method, host, tgt, tlen, 0);
  }
  hr_router_free(r);
  refs_free(&refs);
  free(group_host);
  return 0;
}
