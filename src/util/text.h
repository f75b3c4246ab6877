/* SPDX-License-Identifier: MIT */
/*
 * Small text helpers shared across modules: the token alphabet (RFC 9110
 * §5.6.2), iteration over comma-separated lists (§5.6.1), and the field
 * names only the server writes.
 */
#ifndef HR_UTIL_TEXT_H
#define HR_UTIL_TEXT_H

#include <stdint.h>
#include <string.h>

#include "hroute/common.h"

/* tchar: ALPHA / DIGIT / "!#$%&'*+-.^_`|~".  Bit c of the two words is set
 * for each (tests/test_text.c checks them against this list). */
static inline int hr__is_tchar(unsigned char c) {
  static const uint64_t below64 = 0x3ff6cfa00000000ull, below128 = 0x57ffffffc7fffffeull;
  if (c < 64) return (int)((below64 >> c) & 1);
  if (c < 128) return (int)((below128 >> (c - 64)) & 1);
  return 0;
}

/* 1 when `s` is a non-empty run of tchar (a token, RFC 9110 §5.6.2). */
static inline int hr__is_token(hr_span_t s) {
  size_t i;
  if (s.len == 0) return 0;
  for (i = 0; i < s.len; i++)
    if (!hr__is_tchar((unsigned char)s.ptr[i])) return 0;
  return 1;
}

/* `v` in decimal into `out` (20 bytes at least); returns the digits'
 * count.  No NUL is written. */
size_t hr__put_u64(char *out, uint64_t v);

/* The value of a hexadecimal digit (RFC 5234 HEXDIG, either case), or -1. */
static inline int hr__hex_value(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Takes the next element of a comma-separated list from *rest into *item,
 * without the optional whitespace around it (empty elements come out
 * empty).  Returns 0 when the list is exhausted. */
static inline int hr__list_next(hr_span_t *rest, hr_span_t *item) {
  const char *s = rest->ptr, *end = rest->ptr + rest->len, *e, *t;
  if (rest->len == 0 || s == NULL) return 0;
  e = memchr(s, ',', (size_t)(end - s));
  if (e == NULL) e = end;
  t = e;
  while (s < t && (*s == ' ' || *s == '\t')) s++;
  while (t > s && (t[-1] == ' ' || t[-1] == '\t')) t--;
  item->ptr = s;
  item->len = (size_t)(t - s);
  rest->ptr = e == end ? end : e + 1;
  rest->len = (size_t)(end - rest->ptr);
  return 1;
}

/* Bytes a URI path may hold as they are (RFC 3986 §3.3 pchar, plus '/'
 * and '%' for escapes): ALPHA DIGIT - . _ ~ (unreserved), ! $ & ' ( ) * + ,
 * ; = (sub-delims), ':', '@', '/' and '%'.  Bit c of the two words is set
 * for each (tests/test_text.c checks them against this list). */
static inline int hr__is_path_char(unsigned char c) {
  static const uint64_t below64 = 0x2ffffff200000000ull, below128 = 0x47fffffe87ffffffull;
  if (c < 64) return (int)((below64 >> c) & 1);
  if (c < 128) return (int)((below128 >> (c - 64)) & 1);
  return 0;
}

/* Bytes a request path may hold as they are: the path characters above,
 * and bytes from 0x80, which clients send unencoded for UTF-8 (nginx, h2o
 * and Node accept them); they match as their percent-encoded form does. */
static inline int hr__is_path_byte(unsigned char c) {
  return c >= 0x80 || hr__is_path_char(c);
}

/* Whether `a` is host [ ":" port ] (RFC 3986 §3.2.2, RFC 9110 §7.2): a
 * non-empty reg-name (unreserved, sub-delims but '*', escapes) or IPv4
 * address, or a bracketed IP literal, then optional digits.  No userinfo.
 * (text.c) */
int hr__authority_ok(hr_span_t a);

/* Fields whose values are the server's: Date, Content-Length,
 * Transfer-Encoding, Connection. */
static inline int hr__reserved_field(hr_span_t name) {
  return hr_span_eq_nocase(name, HR_SPAN_LIT("Date")) ||
         hr_span_eq_nocase(name, HR_SPAN_LIT("Content-Length")) ||
         hr_span_eq_nocase(name, HR_SPAN_LIT("Transfer-Encoding")) ||
         hr_span_eq_nocase(name, HR_SPAN_LIT("Connection"));
}

#endif /* HR_UTIL_TEXT_H */
