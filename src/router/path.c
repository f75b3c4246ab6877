/* SPDX-License-Identifier: MIT */
/*
 * Request paths for the router: splitting the target (RFC 9112 §3.2),
 * percent-decoding (RFC 3986 §2.1) with %2F %3F %23 kept opaque, detecting
 * and removing dot and empty segments (RFC 3986 §5.2.4), and decoding
 * parameter values after the match.
 */
#include <string.h>

#include "router/path.h"
#include "util/text.h"

int hr__target_split(hr_span_t target, hr_span_t *path, hr_span_t *query,
                     hr_span_t *authority) {
  const char *s = target.ptr, *end = target.ptr + target.len, *q;
  query->ptr = NULL;
  query->len = 0;
  authority->ptr = NULL;
  authority->len = 0;
  if (target.len == 0) return -1;
  if (target.len == 1 && s[0] == '*') { /* asterisk-form */
    *path = target;
    return 0;
  }
  if (s[0] != '/') {
    /* absolute-form: scheme "://" authority path-abempty [ "?" query ] */
    const char *t;
    for (t = s; t < end && *t != ':' && *t != '/' && *t != '?'; t++)
      ;
    if (t == s || end - t < 3 || t[0] != ':' || t[1] != '/' || t[2] != '/')
      return -1;
    {
      /* http and https only (RFC 9110 §4.2), any case */
      hr_span_t scheme = {s, (size_t)(t - s)};
      if (!hr_span_eq_nocase(scheme, HR_SPAN_LIT("http")) &&
          !hr_span_eq_nocase(scheme, HR_SPAN_LIT("https")))
        return -1;
    }
    s = t + 3;
    authority->ptr = s;
    while (s < end && *s != '/' && *s != '?' && *s != '#') s++;
    authority->len = (size_t)(s - authority->ptr);
    /* An empty host is invalid (§4.2.1), and so is userinfo (§4.2.4). */
    if (!hr__authority_ok(*authority)) return -1;
    if (s == end || *s != '/') {
      static const char root[] = "/";
      path->ptr = root;
      path->len = 1;
      if (s < end && *s == '?') {
        const char *h = memchr(s, '#', (size_t)(end - s));
        query->ptr = s + 1;
        query->len = (size_t)((h ? h : end) - s - 1);
      }
      return 0;
    }
  }
  {
    const char *h = memchr(s, '#', (size_t)(end - s));
    if (h != NULL) end = h;
  }
  q = memchr(s, '?', (size_t)(end - s));
  path->ptr = s;
  path->len = (size_t)((q ? q : end) - s);
  if (q != NULL) {
    query->ptr = q + 1;
    query->len = (size_t)(end - q - 1);
  }
  return 0;
}

/* Reads the escape at p[0..2] ("%XX"); returns the byte or -1. */
static int escape_at(const char *p, const char *end) {
  int h, l;
  if (end - p < 3) return -1;
  h = hr__hex_value((unsigned char)p[1]);
  l = hr__hex_value((unsigned char)p[2]);
  if (h < 0 || l < 0) return -1;
  return h * 16 + l;
}

int hr__path_decode(hr_span_t in, char *out, size_t *outlen) {
  const char *p = in.ptr, *end = in.ptr + in.len;
  char *w = out;
  while (p < end) {
    const char *pct = memchr(p, '%', (size_t)(end - p));
    int v;
    if (pct == NULL) {
      memcpy(w, p, (size_t)(end - p));
      w += end - p;
      break;
    }
    memcpy(w, p, (size_t)(pct - p));
    w += pct - p;
    v = escape_at(pct, end);
    if (v <= 0) return -1; /* malformed, or %00 */
    if (v == '/' || v == '?' || v == '#' || v == '%') {
      /* Opaque: stays inside its segment; and "%25" stays encoded so that
       * the parameter decoding after the match decodes it exactly once.
       * Its hex digits in upper case (RFC 3986 §6.2.2.1), as patterns
       * store them: "%2f" and "%2F" match alike. */
      static const char hex[] = "0123456789ABCDEF";
      *w++ = '%';
      *w++ = hex[v >> 4];
      *w++ = hex[v & 15];
    } else {
      *w++ = (char)v;
    }
    p = pct + 3;
  }
  *outlen = (size_t)(w - out);
  return 0;
}

int hr__path_escapes_ok(hr_span_t in) {
  const char *p = in.ptr, *end = in.ptr + in.len;
  while ((p = memchr(p, '%', (size_t)(end - p))) != NULL) {
    if (escape_at(p, end) <= 0) return 0;
    p += 3;
  }
  return 1;
}

int hr__param_decode(hr_span_t in, char *out, size_t *outlen) {
  const char *p = in.ptr, *end = in.ptr + in.len;
  char *w = out;
  while (p < end) {
    if (*p == '%') {
      int v = escape_at(p, end);
      if (v <= 0) return -1;
      *w++ = (char)v;
      p += 3;
    } else {
      *w++ = *p++;
    }
  }
  *outlen = (size_t)(w - out);
  return 0;
}

/* 0: ordinary segment, 1: ".", 2: ".." (also as %2e / %2E). */
static int dot_kind(const char *s, size_t n) {
  int dots = 0;
  size_t i = 0;
  while (i < n) {
    if (s[i] == '.') {
      i++;
    } else if (n - i >= 3 && s[i] == '%' && s[i + 1] == '2' &&
               (s[i + 2] == 'e' || s[i + 2] == 'E')) {
      i += 3;
    } else {
      return 0;
    }
    if (++dots > 2) return 0;
  }
  return dots;
}

int hr__path_is_clean(hr_span_t path) {
  const char *s = path.ptr + 1, *end = path.ptr + path.len;
  if (path.len == 0 || path.ptr[0] != '/') return 0;
  while (s <= end) {
    const char *e = memchr(s, '/', (size_t)(end - s));
    if (e == NULL) e = end;
    if (e == s && e != end) return 0;         /* "//" */
    if (dot_kind(s, (size_t)(e - s))) return 0; /* "." or ".." */
    s = e + 1;
  }
  return 1;
}

int hr__path_clean(hr_span_t path, char *out, size_t *outlen) {
  const char *s = path.ptr + 1, *end = path.ptr + path.len;
  char *w = out;
  int trailing = 0;
  *w++ = '/';
  while (s <= end) {
    const char *e = memchr(s, '/', (size_t)(end - s));
    size_t n;
    int k;
    if (e == NULL) e = end;
    n = (size_t)(e - s);
    k = n ? dot_kind(s, n) : 0;
    trailing = e == end && (n == 0 || k != 0);
    if (n == 0 || k == 1) {
      /* empty or ".": dropped */
    } else if (k == 2) {
      /* "..": drop the last output segment */
      if (w == out + 1) return -1; /* above the root */
      w--;                         /* the '/' after it */
      while (w > out + 1 && w[-1] != '/') w--;
    } else {
      memcpy(w, s, n);
      w += n;
      *w++ = '/';
    }
    s = e + 1;
  }
  /* Every kept segment was followed by '/': drop the last one unless the
   * path ended as a directory. */
  if (!trailing && w > out + 1) w--;
  *outlen = (size_t)(w - out);
  return 0;
}

static int escaped_slash(const char *p, const char *end) {
  return end - p >= 3 && p[0] == '%' && p[1] == '2' && (p[2] == 'F' || p[2] == 'f');
}

int hr__path_hides_dot_dot(hr_span_t path) {
  const char *p = path.ptr, *end = path.ptr + path.len;
  int after_escape = 0; /* the piece starts right after a %2F */
  for (;;) {
    const char *piece = p;
    int before_escape;
    while (p < end && *p != '/' && !escaped_slash(p, end)) p++;
    before_escape = p < end && *p == '%';
    if ((after_escape || before_escape) && dot_kind(piece, (size_t)(p - piece)) == 2) return 1;
    if (p == end) return 0;
    after_escape = before_escape;
    p += before_escape ? 3 : 1;
  }
}
