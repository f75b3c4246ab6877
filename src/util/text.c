/* SPDX-License-Identifier: MIT */
/*
 * Shared text checks that are too long to be inline (see text.h): the
 * authority form used by the Host field and by absolute-form targets.
 */
#include "util/text.h"

int hr__authority_ok(hr_span_t a) {
  const char *s = a.ptr, *end = a.ptr + a.len;
  if (a.len == 0) return 0;
  if (*s == '[') {
    const char *e = memchr(s, ']', a.len);
    if (e == NULL || e == s + 1) return 0;
    for (s++; s < e; s++) {
      unsigned char c = (unsigned char)*s;
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
            (c >= 'A' && c <= 'F') || c == ':' || c == '.' || c == 'v' || c == 'V'))
        return 0;
    }
    s = e + 1;
  } else {
    /* reg-name bytes: path characters (hr__is_path_char) but '/', '@',
     * '*' and ':', as two masks, one test a byte. */
    static const uint64_t below64 = 0x2bff7bf200000000ull, below128 = 0x47fffffe87fffffeull;
    const char *h = s;
    for (; s < end && *s != ':'; s++) {
      unsigned char c = (unsigned char)*s;
      if (c >= 128 || !((c < 64 ? below64 >> c : below128 >> (c - 64)) & 1)) return 0;
    }
    if (s == h) return 0;
  }
  if (s == end) return 1;
  if (*s++ != ':') return 0;
  for (; s < end; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

size_t hr__put_u64(char *out, uint64_t v) {
  char tmp[20];
  size_t n = 0, i;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}
