/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 validation, after the table of well-formed byte sequences in
 * RFC 3629 §4 (and Unicode's Table 3-7): the second byte's range depends
 * on the first byte, the rest are 80..BF.  ASCII is skipped eight bytes at
 * a time.
 */
#include "util/utf8.h"

#include <stdint.h>
#include <string.h>

int hr__utf8_valid(const void *p, size_t n) {
  const unsigned char *s = p, *end;
  if (n == 0) return 1; /* p may be NULL */
  end = s + n;
  while (s < end) {
    unsigned char c = *s;
    size_t need, i;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c < 0x80) {
      uint64_t w;
      while ((size_t)(end - s) >= 8) {
        memcpy(&w, s, 8);
        if (w & 0x8080808080808080ULL) break;
        s += 8;
      }
      while (s < end && *s < 0x80) s++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;      /* no overlong 3-byte forms */
      else if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;      /* no overlong 4-byte forms */
      else if (c == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else {
      return 0; /* 80..C1 (continuation, overlong 2-byte), F5..FF */
    }
    if ((size_t)(end - s) <= need) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (i = 2; i <= need; i++)
      if ((s[i] & 0xC0) != 0x80) return 0;
    s += need + 1;
  }
  return 1;
}
