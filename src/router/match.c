/* SPDX-License-Identifier: MIT */
/*
 * Matching a request against the published table (hr_router_match): one
 * scan of the target (the end of the path, escapes, bytes to refuse,
 * possible dot or empty segments), the host's table, decoding and
 * cleaning when needed, the 501 check, the walk (walk.h), and what the
 * router answers itself: 405 with the union Allow, OPTIONS, redirects.
 * The order is router.h's.
 */
#include <stdint.h>
#include <string.h>

#include "router/path.h"
#include "router/route.h"
#include "router/walk.h"
#include "util/text.h"

const hr__host_t *hr__pick_host(const hr__table_t *t, hr_span_t host) {
  size_t i, n = host.len;
  if (t->nhosts == 0 || host.len == 0) return &t->def;
  /* Drop the port: after ']' for IP literals, else after the last ':'. */
  if (host.ptr[0] == '[') {
    const char *e = memchr(host.ptr, ']', host.len);
    if (e != NULL) n = (size_t)(e - host.ptr) + 1;
  } else {
    const char *c = memchr(host.ptr, ':', host.len);
    if (c != NULL) n = (size_t)(c - host.ptr);
    /* an absolute name's trailing dot: the same host */
    if (n > 1 && host.ptr[n - 1] == '.') n--;
  }
  for (i = 0; i < t->nhosts; i++) {
    hr_span_t a = {host.ptr, n};
    if (hr_span_eq_nocase(a, t->hosts[i].name)) return &t->hosts[i];
  }
  return &t->def;
}

static int redirect_status(int method_id) {
  return method_id == HR__M_GET || method_id == HR__M_HEAD ? 301 : 308;
}

/* Location = path + ("?" query); `path` may already be in buf at `at`.
 * Bytes from 0x80 (raw UTF-8 a client sent) are percent-encoded: a
 * Location is a URI reference, ASCII only (RFC 9110 §10.2.2). */
static int put_location(hr_match_t *out, char *buf, size_t buflen, size_t at,
                        size_t path_len, hr_span_t query) {
  static const char hex[] = "0123456789ABCDEF";
  size_t plain = path_len + (query.len || query.ptr ? 1 + query.len : 0), high = 0, i;
  size_t need;
  char *w, *r;
  for (i = 0; i < path_len; i++) high += (unsigned char)buf[at + i] >= 0x80;
  for (i = 0; i < query.len; i++) high += (unsigned char)query.ptr[i] >= 0x80;
  need = plain + 2 * high;
  if (at + need > buflen) return HR_ENOSPC;
  if (query.ptr != NULL) {
    buf[at + path_len] = '?';
    memmove(buf + at + path_len + 1, query.ptr, query.len);
  }
  /* Encode from the end, in place: the writer never passes the reader. */
  for (r = buf + at + plain, w = buf + at + need; high > 0 && r > buf + at;) {
    unsigned char c = (unsigned char)*--r;
    if (c >= 0x80) {
      *--w = hex[c & 15];
      *--w = hex[c >> 4];
      *--w = '%';
      high--;
    } else {
      *--w = (char)c;
    }
  }
  out->location.ptr = buf + at;
  out->location.len = need;
  return 0;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
#define HR__HAVE_SCAN_SSSE3 1
#endif

/* Flags from scan(). */
#define SCAN_PCT 1u     /* the path has a '%' */
#define SCAN_UNCLEAN 2u /* a '/' is followed by '/', '.' or '%' */
#define SCAN_BAD 4u     /* the path has a byte that is not a path character */

#if defined(__SSE2__)
/* Lanes of v that hr__is_path_byte() refuses: controls, space, DEL and
 * " # < > [ \ ] ^ ` { | } (bytes from 0x80, raw UTF-8, pass).  '?' is left
 * to the caller (it ends the path). */
static inline __m128i path_bad(__m128i v) {
  const __m128i space = _mm_set1_epi8(0x20);
  __m128i bad = _mm_cmpeq_epi8(_mm_max_epu8(v, space), space); /* v <= 0x20 */
  bad = _mm_or_si128(bad, _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x21)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8(0x24))));
  bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
  bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('>')));
  bad = _mm_or_si128(bad, _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x5a)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8(0x5f))));
  bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
  /* 0x7b..0x7f but '~' */
  bad = _mm_or_si128(bad, _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('~')),
                                           _mm_cmpgt_epi8(v, _mm_set1_epi8(0x7a))));
  return bad;
}
#endif

#if defined(__SSE2__)
/* Whether the 16 bytes from s may be loaded although fewer belong to the
 * target: they do not cross into the next page, so the load cannot fault
 * (the bytes past the end are masked off).  Not under AddressSanitizer,
 * which would rightly report the over-read. */
#if defined(__SANITIZE_ADDRESS__)
#define SCAN_OVERREAD_OK(s) 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SCAN_OVERREAD_OK(s) 0
#endif
#endif
#ifndef SCAN_OVERREAD_OK
#define SCAN_OVERREAD_OK(s) (((uintptr_t)(s) & 4095u) <= 4096u - 16u)
#endif

/* The last block of a scan: v holds target bytes s[base .. base + 16), of
 * which the lanes in `live` are still to do (lane lo is the first of them;
 * prev_slash: the byte before lane lo is a '/').  Returns the path length. */
static inline size_t scan_last(__m128i v, unsigned live, unsigned lo, int prev_slash,
                               size_t base, size_t n, unsigned f, unsigned *flags) {
  const __m128i sl = _mm_set1_epi8('/'), pc = _mm_set1_epi8('%'),
                dt = _mm_set1_epi8('.'), qm = _mm_set1_epi8('?');
  unsigned ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl)) & live;
  unsigned mp = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, pc)) & live;
  unsigned md = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dt)) & live;
  unsigned mq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, qm)) & live;
  unsigned mb = (unsigned)_mm_movemask_epi8(path_bad(v));
  unsigned follow;
  if (mq) live &= (1u << __builtin_ctz(mq)) - 1;
  ms &= live;
  mp &= live;
  md &= live;
  follow = ms | mp | md;
  if (mp) f |= SCAN_PCT;
  if (mb & live) f |= SCAN_BAD;
  if ((ms & (follow >> 1)) || (prev_slash && ((follow >> lo) & 1))) f |= SCAN_UNCLEAN;
  *flags = f;
  return mq ? base + (size_t)__builtin_ctz(mq) : n;
}
#endif

/* One pass over an origin-form target: returns the length of the path (up
 * to '?') and sets *flags. */
static inline size_t scan(const char *s, size_t n, unsigned *flags) {
  size_t i = 0;
  unsigned f = 0;
  int prev_slash = 0;
#if defined(__SSE2__)
  if (n < 16) {
    /* A short target in one load when that cannot fault; else bytewise (a
     * padded copy would stall on store forwarding). */
    if (!SCAN_OVERREAD_OK(s)) goto scalar;
    return scan_last(_mm_loadu_si128((const __m128i *)(const void *)s),
                     (1u << n) - 1, 0, 0, 0, n, 0, flags);
  }
  const __m128i sl = _mm_set1_epi8('/'), pc = _mm_set1_epi8('%'),
                dt = _mm_set1_epi8('.'), qm = _mm_set1_epi8('?');
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    unsigned ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl));
    unsigned mp = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, pc));
    unsigned md = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dt));
    unsigned mq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, qm));
    unsigned mb = (unsigned)_mm_movemask_epi8(path_bad(v));
    unsigned keep = 0xFFFFu, follow;
    if (mq) keep = (1u << __builtin_ctz(mq)) - 1;
    ms &= keep;
    mp &= keep;
    md &= keep;
    follow = (ms | mp | md) & keep;
    if (mp) f |= SCAN_PCT;
    if (mb & keep) f |= SCAN_BAD;
    if ((ms & (follow >> 1)) || (prev_slash && (follow & 1))) f |= SCAN_UNCLEAN;
    if (mq) {
      *flags = f;
      return i + (size_t)__builtin_ctz(mq);
    }
    prev_slash = (ms >> 15) & 1;
  }
  if (i < n) {
    /* The tail: the last 16 bytes (n >= 16 here), overlapping what is
     * done. */
    unsigned lo = (unsigned)(i - (n - 16));
    return scan_last(_mm_loadu_si128((const __m128i *)(const void *)(s + n - 16)),
                     0xFFFFu & ~((1u << lo) - 1), lo, prev_slash, n - 16, n, f, flags);
  }
  *flags = f;
  return n;
scalar:
#endif
  for (; i < n; i++) {
    char c = s[i];
    if (c == '?') break;
    if (!hr__is_path_byte((unsigned char)c)) f |= SCAN_BAD;
    if (prev_slash && (c == '/' || c == '.' || c == '%')) f |= SCAN_UNCLEAN;
    if (c == '%') f |= SCAN_PCT;
    prev_slash = c == '/';
  }
  *flags = f;
  return i;
}

#if defined(HR__HAVE_SCAN_SSSE3)
#include <tmmintrin.h>

/* Whether this CPU has SSSE3 (every x86-64 since 2006 does; the baseline
 * the library is built for does not promise it).  Set once when the
 * library is loaded, before any thread can read it. */
static int scan_ssse3_ok;

__attribute__((constructor)) static void scan_detect(void) {
  __builtin_cpu_init();
  scan_ssse3_ok = __builtin_cpu_supports("ssse3") != 0;
}

/*
 * The common case of scan() in fewer instructions: a path of pchars and
 * slashes only.  Each byte is classified with two 16-entry lookups (low
 * and high nibble, PSHUFB) whose AND is non-zero exactly for the bytes
 * scan() looks at twice: '%', '.', '?' and the bytes path_bad() refuses.
 * Rows of the high nibble, one bit each: 0-1 all; 2 {0,2,3,5,E} (space " #
 * % .); 3 {C,E,F} (< > ?); 5 {B,C,D,E} ([ \ ] ^); 6 {0} (`); 7 {B,C,D,F}
 * ({ | } DEL); from 8 nothing (UTF-8 passes).  A path without such a byte
 * is unclean only through "//".  Anything else goes to scan().
 */
/* scan() out of line: scan_ssse3's way out, kept out of it so that it
 * stays a small leaf function. */
__attribute__((noinline)) static size_t scan_any(const char *s, size_t n, unsigned *flags) {
  return scan(s, n, flags);
}

__attribute__((target("ssse3"), noinline)) static size_t scan_ssse3(const char *s, size_t n,
                                                                     unsigned *flags) {
  const __m128i lo_lut = _mm_setr_epi8(19, 1, 3, 3, 1, 3, 1, 1, 1, 1, 1, 41, 45, 41, 15, 37);
  const __m128i hi_lut = _mm_setr_epi8(1, 1, 2, 4, 0, 8, 16, 32, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128i nib = _mm_set1_epi8(0x0f), sl = _mm_set1_epi8('/');
  unsigned unclean = 0, prev_slash = 0;
  size_t i = 0;
  for (;;) {
    __m128i v, c;
    unsigned live, special, ms;
    size_t base;
    if (n - i >= 16) {
      base = i;
      live = 0xFFFFu;
    } else if (i == n) {
      break;
    } else if (n >= 16) {
      base = n - 16; /* the last 16 bytes, overlapping what is done */
      live = 0xFFFFu & ~((1u << (i - base)) - 1);
    } else if (SCAN_OVERREAD_OK(s)) {
      base = 0;
      live = (1u << n) - 1;
    } else {
      return scan_any(s, n, flags);
    }
    v = _mm_loadu_si128((const __m128i *)(const void *)(s + base));
    c = _mm_and_si128(_mm_shuffle_epi8(lo_lut, _mm_and_si128(v, nib)),
                      _mm_shuffle_epi8(hi_lut, _mm_and_si128(_mm_srli_epi16(v, 4), nib)));
    special = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, _mm_setzero_si128())) & live;
    if (special) return scan_any(s, n, flags);
    ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl));
    /* "//": a slash whose byte before is one, within the live lanes (the
     * lanes before them are bytes of the path too, or prev_slash). */
    unclean |= ((ms << 1) | (base == i ? prev_slash : 0)) & ms & live;
    prev_slash = (ms >> 15) & 1;
    i = base + 16 > n ? n : base + 16;
  }
  *flags = unclean ? SCAN_UNCLEAN : 0;
  return n;
}
#endif

/* Whether a decoded parameter value holds a ".." segment ("..", "../x",
 * "x/..", "x/../y"): one that %2F escapes hid from remove_dot_segments.
 * Such a value would climb out of a directory a handler joins it to. */
static int has_dot_dot_segment(const char *p, size_t n) {
  size_t i = 0;
  while (i <= n) {
    const char *sl = memchr(p + i, '/', n - i);
    size_t e = sl ? (size_t)(sl - p) : n;
    if (e - i == 2 && p[i] == '.' && p[i + 1] == '.') return 1;
    i = e + 1;
  }
  return 0;
}

/* Whether a query holds only bytes a request target may (RFC 9112 §3.2):
 * no controls, space or DEL, no '#' (a fragment is not sent).  Characters
 * outside the URI grammar such as '{' and '|' are let through, as the
 * server does, and so are bytes from 0x80 (raw UTF-8, as in the path). */
static int query_ok(hr_span_t q) {
  size_t i;
  for (i = 0; i < q.len; i++) {
    unsigned char c = (unsigned char)q.ptr[i];
    if (c <= 0x20 || c == 0x7f || c == '#') return 0;
  }
  return 1;
}

/* Whether the router knows `method`: one of RFC 9110 §9's methods (GET,
 * HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE) or PATCH (RFC 5789),
 * which a path without a route for it answers 405 (§15.5.6) and an unknown
 * path 404, or one that some route of the table (any host) registers.
 * Otherwise 501 (§15.6.2), whatever the path.  Methods are case-sensitive:
 * "get" is an extension method. */
static int method_known_slow(const hr__table_t *t, hr_span_t method, int mid) {
  size_t lo, hi;
  if (mid >= 0 || t->any_method) return 1; /* the HR__M_* ids are those nine */
  lo = 0;
  hi = t->n_ext_methods;
  while (lo < hi) { /* the list is sorted by bytes, then length */
    size_t mid2 = (lo + hi) / 2, n;
    hr_span_t e = t->ext_methods[mid2];
    int c;
    n = e.len < method.len ? e.len : method.len;
    c = memcmp(e.ptr, method.ptr, n);
    if (c == 0) c = (e.len > method.len) - (e.len < method.len);
    if (c == 0) return 1;
    if (c < 0)
      lo = mid2 + 1;
    else
      hi = mid2;
  }
  return 0;
}

static inline int method_known(const hr__table_t *t, hr_span_t method, int mid) {
  return mid >= 0 || method_known_slow(t, method, mid);
}

/* The path matched, but no route of any specificity answers the method:
 * 405 with Allow listing the methods of every route whose path matches,
 * or for OPTIONS the router's 200 with that Allow (RFC 9110 §9.3.7). */
static int no_method(const hr__table_t *t, const hr__host_t *h, hr__walk_t *w, int ci,
                     char *buf, size_t buflen, size_t used, hr_match_t *out) {
  out->status = w->method_id == HR__M_OPTIONS ? 200 : 405;
  if (w->misses == 1) {
    out->allow = w->first_miss->allow;
    return 0;
  }
  if (buflen - used < t->allow_max) return HR_ENOSPC;
  out->allow.ptr = buf + used;
  out->allow.len = hr__tree_allow(t, h->root, w, ci, buf + used);
  return 0;
}

/* No path matched: with HR_SLASH_REDIRECT, a redirect when the path with
 * its trailing slash added or removed has a route. */
static int slash_redirect(const hr__host_t *h, const hr__walk_t *w0, int ci,
                          hr_span_t path, hr_span_t mpath, hr_span_t query, char *buf,
                          size_t buflen, size_t used, hr_match_t *out) {
  /* Is the other variant routed?  Built after the decoded path. */
  int has_slash = mpath.ptr[mpath.len - 1] == '/';
  size_t alen = has_slash ? mpath.len - 1 : mpath.len + 1, np;
  hr_param_t scratch[HR_MAX_PARAMS];
  hr__walk_t w = *w0;
  if (has_slash && mpath.len == 1) return 0; /* "/" has no other variant */
  if (used + alen > buflen) return HR_ENOSPC;
  memcpy(buf + used, mpath.ptr, has_slash ? alen : mpath.len);
  if (!has_slash) buf[used + mpath.len] = '/';
  w.path = buf + used;
  w.len = alen;
  w.params = scratch;
  w.misses = 0;
  /* A route of any method there: the redirect is for the path. */
  if (hr__tree_find(h->root, &w, ci, &np) != NULL || w.misses > 0) {
    if (hr__path_hides_dot_dot(path)) { /* the redirect would lead to a 400 */
      out->status = 400;
      return 0;
    }
    /* Location from the path as sent (still encoded). */
    size_t plen = has_slash ? path.len - 1 : path.len + 1;
    if (used + plen > buflen) return HR_ENOSPC;
    memmove(buf + used, path.ptr, has_slash ? plen : path.len);
    if (!has_slash) buf[used + path.len] = '/';
    if (put_location(out, buf, buflen, used, plen, query) != 0) return HR_ENOSPC;
    out->status = redirect_status(w.method_id);
  }
  return 0;
}

/* Parameter values still hold the opaque escapes: decoded now, into buf
 * after `used`.  A decoded value with a ".." segment is a 400. */
static int decode_params(hr_match_t *out, char *buf, size_t buflen, size_t used) {
  size_t i;
  for (i = 0; i < out->nparams; i++) {
    hr_span_t v = out->params[i].value;
    size_t n;
    if (memchr(v.ptr, '%', v.len) == NULL) continue;
    if (used + v.len > buflen) return HR_ENOSPC;
    if (hr__param_decode(v, buf + used, &n) != 0 || has_dot_dot_segment(buf + used, n)) {
      out->status = 400;
      out->route = NULL;
      out->nparams = 0;
      return 0;
    }
    out->params[i].value.ptr = buf + used;
    out->params[i].value.len = n;
    used += n;
  }
  return 0;
}

/* `t`: the table to match in, or NULL for the current one. */
static int match_impl(hr_router_t *r, const hr__table_t *t, hr_span_t method,
                      hr_span_t host, hr_span_t target, char *buf, size_t buflen,
                      hr_match_t *out) {
  const hr__host_t *h;
  const hr__leaf_t *leaf;
  hr__walk_t w;
  const hr_span_t *names;
  hr_span_t path, query, mpath, authority;
  size_t used = 0, i, nparams = 0;
  int mid, has_pct, ci, maybe_unclean;
  if (r == NULL || out == NULL || (buf == NULL && buflen != 0)) return HR_EINVAL;
  /* *out is filled after the target is read: stores before the scan (an
   * out-of-line call) would delay the start of the lookup's critical path,
   * measurably.  The early 400s fill it at bad_target. */
  if (target.len > 0 && target.ptr[0] == '/') {
    /* origin-form, the common case: one pass finds the end of the path and
     * whether it needs decoding or may need cleaning. */
    unsigned flags;
    size_t plen;
#if defined(HR__HAVE_SCAN_SSSE3)
    plen = scan_ssse3_ok ? scan_ssse3(target.ptr, target.len, &flags)
                         : scan(target.ptr, target.len, &flags);
#else
    plen = scan(target.ptr, target.len, &flags);
#endif
    path.ptr = target.ptr;
    path.len = plen;
    query.ptr = NULL;
    query.len = 0;
    if (plen < target.len) { /* target.ptr[plen] == '?' */
      query.ptr = target.ptr + plen + 1;
      query.len = target.len - plen - 1;
    }
    /* Bytes a path cannot hold (RFC 3986 §3.3; a '\\' would turn into '/'
     * in browsers), or a fragment: 400, as from the server. */
    if ((flags & SCAN_BAD) || !query_ok(query)) goto bad_target;
    has_pct = (flags & SCAN_PCT) != 0;
    maybe_unclean = (flags & SCAN_UNCLEAN) != 0;
  } else {
    hr_span_t p2, q2, a2;
    size_t n;
    if (hr__target_split(target, &p2, &q2, &a2) != 0) goto bad_target;
    path = p2;
    query = q2;
    authority = a2;
    for (n = 0; n < path.len; n++)
      if (!hr__is_path_byte((unsigned char)path.ptr[n])) goto bad_target;
    if (!query_ok(query) || memchr(target.ptr, '#', target.len) != NULL) goto bad_target;
    /* RFC 9112 §3.2.2: an absolute-form target's authority wins over Host. */
    if (authority.len) host = authority;
    has_pct = memchr(path.ptr, '%', path.len) != NULL;
    maybe_unclean = 1;
  }
  out->status = 400;
  out->route = NULL;
  out->nparams = 0;
  /* allow and location are adjacent (router.h): two vector stores. */
  memset(&out->allow, 0, offsetof(hr_match_t, path) - offsetof(hr_match_t, allow));
  out->path.ptr = path.ptr;
  out->path.len = path.len;
  out->query.ptr = query.ptr;
  out->query.len = query.len;
  /* GET first, without the call: it is most requests. */
  mid = method.len == 3 && method.ptr[0] == 'G' && method.ptr[1] == 'E' &&
                method.ptr[2] == 'T'
            ? HR__M_GET
            : hr__method_id(method);
  ci = r->opts.case_insensitive;
  if (t == NULL) t = hr__router_table(r);
  /* Decoded path, then a redirect's Location with every byte from 0x80
   * encoded (three bytes each) after it, or an Allow of several routes. */
  out->need = 4 * target.len + 16 + t->allow_max;
  h = hr__pick_host(t, host);
  if (path.len == 1 && path.ptr[0] == '*') {
    /* asterisk-form is for OPTIONS only (RFC 9112 §3.2.4): the whole host. */
    if (mid == HR__M_OPTIONS) {
      out->status = 200;
      out->allow = h->allow_all;
    }
    return 0;
  }
  /* Malformed escapes are refused before anything else, redirects included
   * (a redirect would only carry them to the clean path). */
  if (has_pct && !hr__path_escapes_ok(path)) return 0;
  if (maybe_unclean && !hr__path_is_clean(path)) {
    size_t n;
    if (r->opts.unclean_path == HR_CLEAN_REJECT) return 0;
    /* The path holds path characters only (checked above), so a Location
     * cannot turn into "//\\evil.example", a redirect off the site. */
    if (buflen < path.len + 1) return HR_ENOSPC;
    if (hr__path_clean(path, buf, &n) != 0) return 0; /* above the root */
    if (hr__path_hides_dot_dot((hr_span_t){buf, n})) return 0; /* it would lead to a 400 */
    if (!method_known(t, method, mid)) { /* no use redirecting it */
      out->status = 501;
      return 0;
    }
    if (put_location(out, buf, buflen, 0, n, query) != 0) return HR_ENOSPC;
    out->status = redirect_status(mid);
    return 0;
  }
  mpath = path;
  if (has_pct) {
    size_t n;
    if (buflen < path.len) return HR_ENOSPC;
    if (hr__path_decode(path, buf, &n) != 0) return 0;
    mpath.ptr = buf;
    mpath.len = n;
    used = n;
    out->path = mpath;
  }
  if (!method_known(t, method, mid)) {
    out->status = 501;
    return 0;
  }
  w.path = mpath.ptr;
  w.len = mpath.len;
  w.method_id = mid;
  w.method = method;
  w.params = out->params;
  w.first_miss = NULL;
  w.misses = 0;
  w.on_miss = NULL;
  leaf = hr__tree_find(h->root, &w, ci, &nparams);
  if (leaf == NULL) {
    if (w.misses > 0) return no_method(t, h, &w, ci, buf, buflen, used, out);
    out->status = 404;
    if (r->opts.trailing_slash == HR_SLASH_REDIRECT)
      return slash_redirect(h, &w, ci, path, mpath, query, buf, buflen, used, out);
    return 0;
  }
  /* The usual case inline: a standard method with its own route.  The
   * values are the walk's; the names are the route's own. */
  if (mid >= 0 && leaf->std[mid].route != NULL) {
    out->route = leaf->std[mid].route;
    names = leaf->std[mid].names;
  } else {
    out->route = hr__leaf_route(leaf, method, mid);
    names = hr__leaf_names(leaf, out->route);
  }
  out->status = 200;
  out->nparams = nparams;
  for (i = 0; i < nparams; i++) out->params[i].name = names[i];
  if (has_pct) return decode_params(out, buf, buflen, used);
  return 0;
bad_target: /* 400 before the path was known */
  out->status = 400;
  out->route = NULL;
  out->nparams = 0;
  out->allow.ptr = out->location.ptr = out->path.ptr = out->query.ptr = NULL;
  out->allow.len = out->location.len = out->path.len = out->query.len = 0;
  out->need = 0;
  return 0;
}

int hr_router_match(hr_router_t *r, hr_span_t method, hr_span_t host,
                    hr_span_t target, char *buf, size_t buflen,
                    hr_match_t *out) {
  /* No read-side section of its own: the result points into the table,
   * so the caller's section must cover the call and every use of the
   * result (router.h); one taken here would end before the caller reads
   * it. */
  return match_impl(r, NULL, method, host, target, buf, buflen, out);
}

int hr__router_match_in(hr_router_t *r, const hr__table_t *t, hr_span_t method,
                        hr_span_t host, hr_span_t target, char *buf, size_t buflen,
                        hr_match_t *out) {
  return match_impl(r, t, method, host, target, buf, buflen, out);
}
