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
 * Registration may fail (fine).  Every match is first made without a buffer
 * and, on HR_ENOSPC, again with a heap buffer of exactly the m.need bytes
 * it asked for (which must then suffice), and the target is copied to an
 * exact-size heap block, so ASan reports any write or read outside them.
 * Checked: the status is one the router documents, every parameter value, the query and
 * the Location lie inside the target or the buffer (the path too, or it is
 * a static "/"), a 200
 * names a route or carries Allow, a redirect has a Location starting with
 * '/', and following a redirect never redirects to the same Location again.
 * A redirect never leads to a 400.  A reference matcher (below) checks
 * the rules of router.h: 501 exactly for a method that is not standard
 * (RFC 9110 §9's and PATCH never are 501) and that no accepted route
 * registers; a 404 only when no accepted pattern
 * of the selected host table matches the path; a 200 with the route whose
 * segment kinds come first among those that answer the method; otherwise a
 * 405 (or the router's OPTIONS) whose Allow is the union of the methods of
 * every pattern that matches the path.  Parameter names are the route's
 * own.  And for a 200, the pattern with the parameter values put back must
 * be the path decoded exactly once.
 * The router is freed after each input (LeakSanitizer checks the rest).
 *
 * With bit 4 of byte 0 the input is a differential of transactions
 * (router.h hr_router_begin) instead: a route line may start with '-'
 * (remove it) or '!' (add with replace), and every line goes to two
 * routers, one call at a time to the first and through one transaction to
 * the second.  Each line's result must be the same (the allocator does not
 * fail then), the commit must succeed unless the one-at-a-time router
 * refused a route for a reason only a whole table shows (HR_ETOOLARGE),
 * every request must match the same way (status, route, parameters) in
 * the first router's tree, changed a path at a time, as in the second's,
 * built whole, and once the first's is rebuilt whole too both trees must
 * dump byte for byte alike.  Bit 3 (failing
 * allocator) applies to the transaction's router only and is checked for
 * crashes and leaks alone.
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
  char *methods; /* as registered: "GET,POST" or "*" */
} ref_t;

typedef struct refs_s {
  ref_t *v;
  size_t n, cap;
  int ci;
} refs_t;

static void refs_add(refs_t *rs, const char *host, const char *pattern,
                     const char *methods) {
  size_t i, hl = strlen(host);
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? 2 * rs->cap : 16;
    rs->v = realloc(rs->v, rs->cap * sizeof(*rs->v));
    if (rs->v == NULL) abort();
  }
  rs->v[rs->n].host = malloc(hl + 1);
  rs->v[rs->n].pattern = strdup(pattern);
  rs->v[rs->n].methods = strdup(methods);
  if (rs->v[rs->n].host == NULL || rs->v[rs->n].pattern == NULL || rs->v[rs->n].methods == NULL)
    abort();
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
    free(rs->v[i].methods);
  }
  free(rs->v);
}

/* The table a request selects (router.h: an absolute-form target's
 * authority, without userinfo, else the Host value; port ignored, one
 * trailing dot ignored, ASCII case-insensitive; unknown hosts and hosts
 * without routes use the default table). */
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
    /* an absolute name's one trailing dot names the same host */
    if (n > 1 && host.ptr[n - 1] == '.') n--;
  }
  for (i = 0; i < rs->n; i++) {
    hr_span_t a = {host.ptr, n};
    if (rs->v[i].host[0] != '\0' && hr_span_eq_nocase(a, hr_span_cstr(rs->v[i].host)))
      return rs->v[i].host;
  }
  return "";
}

static int hexv(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A pattern literal segment as the router stores it: "::" is ':', %XX the
 * byte, except %2F %3F %23 %25, which stay escapes in upper case (as a
 * matched path keeps them).  Returns the length written to out. */
static size_t lit_norm(const char *a, size_t an, char *out) {
  size_t i, n = 0;
  for (i = 0; i < an; i++) {
    if (a[i] == ':' && i + 1 < an && a[i + 1] == ':') {
      out[n++] = ':';
      i++;
    } else if (a[i] == '%' && i + 2 < an && hexv((unsigned char)a[i + 1]) >= 0 &&
               hexv((unsigned char)a[i + 2]) >= 0) {
      int v = hexv((unsigned char)a[i + 1]) * 16 + hexv((unsigned char)a[i + 2]);
      if (v == '/' || v == '?' || v == '#' || v == '%') {
        static const char hex[] = "0123456789ABCDEF";
        out[n++] = '%';
        out[n++] = hex[v >> 4];
        out[n++] = hex[v & 15];
      } else {
        out[n++] = (char)v;
      }
      i += 2;
    } else {
      out[n++] = a[i];
    }
  }
  return n;
}

static int lit_eq(const char *a, size_t an, const char *b, size_t bn, int ci) {
  char norm[1024];
  size_t i, nn;
  /* a: pattern literal; b: path segment (as matched) */
  if (an > sizeof norm) abort();
  nn = lit_norm(a, an, norm);
  if (nn != bn) return 0;
  for (i = 0; i < nn; i++) {
    unsigned char x = (unsigned char)norm[i], y = (unsigned char)b[i];
    if (ci) {
      if (x >= 'A' && x <= 'Z') x |= 0x20;
      if (y >= 'A' && y <= 'Z') y |= 0x20;
    }
    if (x != y) return 0;
  }
  return 1;
}

/* The kind of pattern segment [ps, ps + pl): 0 literal, 1 parameter
 * (":name", "{name}"), 2 catch-all ("*name", "{*name}", "{name...}"). */
static int go_rest(const char *ps, size_t pl) { /* "{name...}" */
  return pl >= 5 && ps[0] == '{' && ps[1] != '*' && memcmp(ps + pl - 4, "...}", 4) == 0;
}

static int seg_kind(const char *ps, size_t pl) {
  if (pl >= 2 && ps[0] == '{' && ps[pl - 1] == '}') return ps[1] == '*' || go_rest(ps, pl) ? 2 : 1;
  if (pl > 0 && ps[0] == '*') return 2;
  if (pl > 0 && ps[0] == ':' && !(pl >= 2 && ps[1] == ':')) return 1;
  return 0;
}

/* The name of a parameter segment. */
static hr_span_t seg_name(const char *ps, size_t pl) {
  hr_span_t n;
  if (ps[0] == '{') {
    n.ptr = ps + 1 + (ps[1] == '*');
    n.len = pl - 2 - (ps[1] == '*') - (go_rest(ps, pl) ? 3 : 0);
  } else {
    n.ptr = ps + 1;
    n.len = pl - 1;
  }
  return n;
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
    if (seg_kind(ps, pl) == 2) {
      if (se - s <= 0) return 0;
      kinds[k++] = 2;
      *nk = k;
      return 1;
    }
    if (seg_kind(ps, pl) == 1) {
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

/* Whether a route registered for `methods` answers `method`: "*" does,
 * and so does one listing it, or GET for HEAD. */
static int ref_accepts(const char *methods, hr_span_t method) {
  const char *s = methods;
  int get = 0;
  if (strcmp(methods, "*") == 0) return 1;
  while (*s) {
    const char *e = strchr(s, ',');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == method.len && memcmp(s, method.ptr, n) == 0) return 1;
    if (n == 3 && memcmp(s, "GET", 3) == 0) get = 1;
    s += n + (e != NULL);
  }
  return get && hr_span_eq(method, HR_SPAN_LIT("HEAD"));
}

/* Whether the router must not answer 501: the method is one of RFC 9110
 * §9's or PATCH (RFC 5789), or some accepted route (any host) answers it
 * by name or with "*". */
static int ref_known(const refs_t *rs, hr_span_t method) {
  static const char *const standard[] = {"GET",     "HEAD",  "POST",    "PUT",  "DELETE",
                                         "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  size_t i;
  for (i = 0; i < sizeof standard / sizeof standard[0]; i++)
    if (hr_span_eq(method, hr_span_cstr(standard[i]))) return 1;
  for (i = 0; i < rs->n; i++)
    if (ref_accepts(rs->v[i].methods, method)) return 1;
  return 0;
}

/* The methods a route names in Allow (its list, HEAD with GET, OPTIONS),
 * added to the set `names` (n of them, room for 256). */
static void ref_names(const char *methods, hr_span_t *names, size_t *n) {
  const char *s = methods;
  hr_span_t add[3] = {HR_SPAN_LIT("OPTIONS"), {NULL, 0}, {NULL, 0}};
  size_t i, k;
  if (strcmp(methods, "*") == 0) s = "";
  for (;;) {
    const char *e = *s ? strchr(s, ',') : NULL;
    size_t len = *s ? (e ? (size_t)(e - s) : strlen(s)) : 0;
    if (len) {
      add[1].ptr = s;
      add[1].len = len;
      add[2].len = 0;
      if (len == 3 && memcmp(s, "GET", 3) == 0) add[2] = HR_SPAN_LIT("HEAD");
    }
    for (k = 0; k < 3; k++) {
      if (add[k].len == 0) continue;
      for (i = 0; i < *n; i++)
        if (hr_span_eq(names[i], add[k])) break;
      if (i == *n && *n < 256) names[(*n)++] = add[k];
    }
    add[0].len = 0;
    add[1].len = 0;
    add[2].len = 0;
    if (!*s || e == NULL) break;
    s = e + 1;
  }
}

static int span_order(const void *a, const void *b) {
  const hr_span_t *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->ptr, y->ptr, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Checks that parameter i of m is named as in the route's pattern. */
static void ref_check_names(const hr_match_t *m) {
  hr_span_t pat = hr_route_pattern(m->route);
  const char *ps = pat.ptr + 1, *pe = pat.ptr + pat.len;
  size_t k = 0;
  while (ps <= pe) {
    const char *e = memchr(ps, '/', (size_t)(pe - ps));
    size_t pl;
    if (e == NULL) e = pe;
    pl = (size_t)(e - ps);
    if (seg_kind(ps, pl) != 0) {
      if (k >= m->nparams || !hr_span_eq(m->params[k].name, seg_name(ps, pl))) abort();
      k++;
    }
    ps = e + 1;
  }
  if (k != m->nparams) abort();
}

/* Checks a 200/404/405 answer for `path` (as matched) against the
 * reference. */
static void ref_check(const refs_t *rs, hr_span_t host, hr_span_t target, hr_span_t method,
                      hr_span_t path, const hr_match_t *m) {
  const char *h = ref_host(rs, host, target);
  unsigned char best[HR_MAX_SEGMENTS + 2], kinds[HR_MAX_SEGMENTS + 2];
  size_t nbest = 0, nk, i, nnames = 0, at = 0;
  hr_span_t names[256];
  char allow[4096];
  int found = 0, answered = 0;
  for (i = 0; i < rs->n; i++) {
    if (strcmp(rs->v[i].host, h) != 0) continue;
    if (!ref_match(rs->v[i].pattern, path, rs->ci, kinds, &nk)) continue;
    found = 1;
    ref_names(rs->v[i].methods, names, &nnames);
    if (!ref_accepts(rs->v[i].methods, method)) continue;
    if (!answered || kinds_cmp(kinds, nk, best, nbest) < 0) {
      memcpy(best, kinds, nk);
      nbest = nk;
    }
    answered = 1;
  }
  if (m->status == 404) {
    if (found) abort(); /* a registered pattern matches: not 404 */
    return;
  }
  if (!found) abort(); /* 200 or 405 for a path no pattern matches */
  if (answered) {
    hr_span_t pat;
    char *pc, *mc;
    size_t nparams = 0;
    if (m->status != 200 || m->route == NULL) abort(); /* a route answers */
    pat = hr_route_pattern(m->route);
    pc = cstr(pat.ptr, pat.len);
    mc = cstr(hr_route_methods(m->route).ptr, hr_route_methods(m->route).len);
    if (!ref_match(pc, path, rs->ci, kinds, &nk)) abort(); /* wrong route */
    if (kinds_cmp(kinds, nk, best, nbest) != 0) abort(); /* wrong priority */
    if (!ref_accepts(mc, method)) abort();               /* wrong method */
    for (i = 0; i < nk; i++) nparams += kinds[i] != 0;
    if (nparams != m->nparams) abort();
    ref_check_names(m);
    free(pc);
    free(mc);
    return;
  }
  /* No route answers: 405, or the router's own OPTIONS answer, with the
   * union of the methods of every route whose path matches. */
  if (m->route != NULL) abort();
  if (m->status != (hr_span_eq(method, HR_SPAN_LIT("OPTIONS")) ? 200 : 405)) abort();
  qsort(names, nnames, sizeof(names[0]), span_order);
  for (i = 0; i < nnames; i++) {
    if (at + names[i].len + 2 > sizeof allow) return; /* too long to check */
    if (i) {
      memcpy(allow + at, ", ", 2);
      at += 2;
    }
    memcpy(allow + at, names[i].ptr, names[i].len);
    at += names[i].len;
  }
  if (m->allow.len != at || memcmp(m->allow.ptr, allow, at) != 0) abort();
}

static int inside(hr_span_t s, const char *base, size_t len) {
  if (s.len == 0) return 1;
  if (base == NULL) return 0; /* no buffer was given */
  return s.ptr >= base && s.ptr <= base + len && s.len <= (size_t)(base + len - s.ptr);
}

static int inside_either(hr_span_t s, const char *t, size_t tlen,
                         const char *buf, size_t blen) {
  return inside(s, t, tlen) || inside(s, buf, blen);
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
  size_t n = 0, k = 0;
  const char *ps = pattern.ptr + 1, *pe = pattern.ptr + pattern.len;
  while (ps <= pe) {
    const char *e = memchr(ps, '/', (size_t)(pe - ps));
    size_t pl, i;
    if (e == NULL) e = pe;
    pl = (size_t)(e - ps);
    if (n + 1 > cap) return -1;
    out[n++] = '/';
    if (seg_kind(ps, pl) != 0) {
      hr_span_t v;
      if (k >= m->nparams || n + m->params[k].value.len > cap) return -1;
      v = m->params[k++].value;
      memcpy(out + n, v.ptr, v.len);
      n += v.len;
    } else {
      /* The literal decoded fully once, as the path is below. */
      for (i = 0; i < pl; i++) {
        if (n + 1 > cap) return -1;
        if (ps[i] == ':' && i + 1 < pl && ps[i + 1] == ':') {
          out[n++] = ':';
          i++;
        } else if (ps[i] == '%' && i + 2 < pl) {
          out[n++] = (char)(hexv((unsigned char)ps[i + 1]) * 16 + hexv((unsigned char)ps[i + 2]));
          i += 2;
        } else {
          out[n++] = ps[i];
        }
      }
    }
    ps = e + 1;
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
  size_t blen = 0;
  char *buf = NULL;
  hr_match_t m;
  hr_span_t target;
  size_t i;
  int rc;
  if (t == NULL) abort();
  memcpy(t, target_bytes, tlen);
  target.ptr = t;
  target.len = tlen;
  rc = hr_router_match(r, method, host, target, NULL, 0, &m);
  if (rc == HR_ENOSPC) {
    /* m.need, exactly, must suffice. */
    blen = m.need;
    buf = malloc(blen ? blen : 1);
    if (buf == NULL) abort();
    rc = hr_router_match(r, method, host, target, buf, blen, &m);
  }
  if (rc != 0) abort();
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
    case 501:
      if (m.route != NULL || m.allow.len != 0 || ref_known(rs, method)) abort();
      break;
    default:
      abort();
  }
  /* A method no route registers is 501 unless the target is bad. */
  if (m.status != 400 && m.status != 501 && !ref_known(rs, method)) abort();
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
    ref_check(rs, host, target, method, m.path, &m);
  if (m.status == 200 && m.route != NULL)
    check_values(target, &m, rs->ci);
  if (depth == 0 && (m.status == 301 || m.status == 308)) {
    /* Following the redirect must not answer with the same redirect. */
    char *loc = cstr(m.location.ptr, m.location.len);
    size_t llen = m.location.len;
    hr_match_t again;
    char *buf2 = malloc(m.need);
    if (buf2 == NULL) abort();
    /* A Location is ASCII (raw UTF-8 percent-encoded) */
    for (i = 0; i < llen; i++)
      if ((unsigned char)loc[i] >= 0x80) abort();
    rc = hr_router_match(r, method, host, hr_span_cstr(loc), NULL, 0, &again);
    if (rc == HR_ENOSPC) {
      free(buf2);
      buf2 = malloc(again.need);
      if (buf2 == NULL) abort();
      rc = hr_router_match(r, method, host, hr_span_cstr(loc), buf2, again.need, &again);
    }
    if (rc != 0) abort();
    if ((again.status == 301 || again.status == 308) &&
        hr_span_eq(again.location, hr_span_cstr(loc)))
      abort(); /* redirect loop */
    /* Every reason for 400 (malformed escape, %00, ".." above the root) is
     * in the original request already: a redirect never leads to one. */
    if (again.status == 400) abort();
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

/* ---- transactions against one call at a time ------------------------------ */

typedef struct {
  char *p;
  size_t n, cap;
} text_t;

static void text_sink(void *ctx, const char *p, size_t n) {
  text_t *t = ctx;
  if (t->n + n > t->cap) {
    size_t cap = (t->n + n) * 2;
    char *q = realloc(t->p, cap);
    if (q == NULL) abort();
    t->p = q;
    t->cap = cap;
  }
  memcpy(t->p + t->n, p, n);
  t->n += n;
}

/* One route line on both routers, their results compared when `compare`.
 * Returns 1 when the one-at-a-time router refused it with HR_ETOOLARGE (a
 * limit the transaction meets at its commit; from there on the two differ
 * by that route). */
static int txn_line(hr_router_t *a, hr_group_t *ga, hr_txn_t *t, hr_group_t *gt,
                    const char *line, size_t n, int compare) {
  char op = n > 0 && (line[0] == '-' || line[0] == '!') ? line[0] : 0;
  const char *l = op ? line + 1 : line, *sp;
  size_t ln = op ? n - 1 : n;
  char *methods, *pattern;
  hr_route_options_t ro;
  int ra, rt, big = 0;
  sp = memchr(l, ' ', ln);
  methods = sp ? cstr(l, (size_t)(sp - l)) : cstr("GET", 3);
  pattern = sp ? cstr(sp + 1, ln - (size_t)(sp - l) - 1) : cstr(l, ln);
  hr_route_options_init(&ro);
  ro.replace = op == '!';
  if (op == '-') {
    ra = ga ? hr_group_remove(ga, methods, pattern) : hr_router_remove(a, methods, pattern);
    rt = hr_txn_remove(t, gt, methods, pattern);
  } else {
    ra = ga ? hr_group_add(ga, methods, pattern, noop, NULL, &ro)
            : hr_router_add(a, methods, pattern, noop, NULL, &ro);
    rt = hr_txn_add(t, gt, methods, pattern, noop, NULL, &ro);
    big = ra == HR_ETOOLARGE;
  }
  if (compare && ra != rt && !(big && rt == 0)) abort();
  free(methods);
  free(pattern);
  return big;
}

static void same_match(hr_router_t *a, hr_router_t *b, const char *line, size_t n) {
  const char *sp = memchr(line, ' ', n);
  hr_span_t method = HR_SPAN_LIT("GET"), target = {line, n};
  static char ba[4096], bb[4096];
  hr_match_t ma, mb;
  size_t i;
  int ra, rb;
  if (sp != NULL) {
    method.ptr = line;
    method.len = (size_t)(sp - line);
    target.ptr = sp + 1;
    target.len = n - method.len - 1;
  }
  ra = hr_router_match(a, method, HR_SPAN_LIT(""), target, ba, sizeof ba, &ma);
  rb = hr_router_match(b, method, HR_SPAN_LIT(""), target, bb, sizeof bb, &mb);
  if (ra != rb || (ra == 0 && (ma.status != mb.status || ma.nparams != mb.nparams ||
                               (ma.route == NULL) != (mb.route == NULL))))
    abort();
  if (ra != 0 || ma.route == NULL) return;
  if (!hr_span_eq(hr_route_pattern(ma.route), hr_route_pattern(mb.route)) ||
      !hr_span_eq(hr_route_methods(ma.route), hr_route_methods(mb.route)))
    abort();
  for (i = 0; i < ma.nparams; i++)
    if (!hr_span_eq(ma.params[i].value, mb.params[i].value)) abort();
}

/* The transaction differential (bit 4 of byte 0). */
static void txn_differential(const hr_router_options_t *base, failing_t *fail, const char *p,
                             const char *end) {
  hr_router_options_t oa = *base, ot = *base;
  hr_allocator_t alloc = {f_malloc, f_realloc, f_free, fail};
  hr_router_t *a = NULL, *b = NULL;
  hr_group_t *ga = NULL, *gt = NULL;
  hr_txn_t *t = NULL;
  text_t da = {NULL, 0, 0}, db = {NULL, 0, 0};
  const char *line;
  size_t n;
  int failing = fail->fail_from != 0, big = 0, rc;
  oa.allocator = NULL;
  ot.allocator = &alloc;
  if (hr_router_new(&a, &oa) != 0) abort();
  if (hr_router_new(&b, &ot) != 0 || hr_router_begin(b, &t) != 0) {
    if (!failing) abort();
    hr_router_free(a);
    hr_router_free(b);
    return;
  }
  while (next_line(&p, end, &line, &n) && n > 0) {
    if (line[0] == '@') {
      char *h = cstr(line + 1, n - 1);
      int r1 = n == 1 ? -1 : hr_router_group(a, h, NULL, &ga);
      int r2 = n == 1 ? -1 : hr_router_group(b, h, NULL, &gt);
      if (r1 != 0) ga = NULL;
      if (r2 != 0) gt = NULL;
      if (!failing && r1 != r2) abort();
      free(h);
      continue;
    }
    big |= txn_line(a, ga, t, gt, line, n, !failing && !big);
  }
  rc = hr_txn_commit(t, NULL);
  if (!failing && rc != (big ? HR_ETOOLARGE : 0)) abort();
  fail->fail_from = 0;
  if (rc == 0 && !big) {
    /* a's tree was changed a path at a time, b's built whole: they must
     * answer alike; then, rebuilt whole too (a republication of the same
     * routes), a's must be b's node for node (a path's changes leave a
     * split that a removal made unneeded in place until a rebuild). */
    hr_router_stats_t sa, sb;
    while (!failing && next_line(&p, end, &line, &n)) same_match(a, b, line, n);
    hr_router_stats(a, &sa);
    hr_router_stats(b, &sb);
    if (!failing && sa.routes != sb.routes) abort();
    if (hr_router_set_answers(a, NULL, NULL) != 0) abort();
    if (hr_router_dump(a, text_sink, &da) != 0 || hr_router_dump(b, text_sink, &db) != 0)
      abort();
    if (!failing && (da.n != db.n || memcmp(da.p, db.p, da.n) != 0)) abort();
  }
  free(da.p);
  free(db.p);
  hr_router_free(a);
  hr_router_free(b);
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
  p = (const char *)data + 2;
  end = (const char *)data + size;
  if (data[0] & 16) {
    txn_differential(&opts, &fail, p, end);
    return 0;
  }
  opts.allocator = &alloc;
  if (hr_router_new(&r, &opts) != 0) return 0;

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
      if (rc == 0) refs_add(&refs, group ? group_host : "", pattern, methods);
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
